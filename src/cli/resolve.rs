//! From parsed flags and the process's surroundings to a [`Config`].
//!
//! [`resolve`] is pure: whatever it would read from the process (variables,
//! terminals, the CPU count) comes in an [`Env`], so that every rule about
//! defaults and precedence can be tested here without running sdu.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::sync::Arc;

use sdu::figures::{Figure, TimeField, Timestamp};
use sdu::timefmt::{self, TimeFormat};
use sdu::units::{
    Unit, env_block_size, parse_block_size, parse_count, parse_size, parse_threshold,
};
use sdu::{Config, Excludes, Format, Progress, ReportOptions, SortKey, WalkOptions, quote};

use super::arg_id::ArgId;
use super::args::{Cli, ColorWhen, Deref, SortBy, UnitFlag, export::ExportFormat};
use super::du_options;
use super::usage::UsageError;

/// Looks up an environment variable by name: `None` when it is unset.
pub(crate) type Lookup = Box<dyn Fn(&str) -> Option<OsString>>;

/// Reads a whole file (`Some(path)`) or standard input (`None`): `--exclude-from`.
pub(crate) type Read = Box<dyn Fn(Option<&OsStr>) -> io::Result<Vec<u8>>>;

/// Opens a file (`Some(path)`) or standard input (`None`) for `--files0-from`.
pub(crate) type Open = Box<dyn Fn(Option<&OsStr>) -> io::Result<Box<dyn io::Read>>>;

/// What [`resolve`] may know of the process it runs in.
pub(crate) struct Env {
    pub(crate) vars: Lookup,
    pub(crate) read: Read,
    pub(crate) open: Open,
    pub(crate) stdout_terminal: bool,
    /// The width of the terminal on stdout, when it is one.
    pub(crate) stdout_columns: Option<u16>,
    pub(crate) stderr_terminal: bool,
    /// The default number of worker threads.
    pub(crate) cpus: usize,
    /// The time now, in seconds since the epoch (`--older-than DURATION`).
    pub(crate) now: i64,
}

impl Env {
    /// The environment of this process.
    pub(crate) fn of_process() -> Env {
        use std::io::{IsTerminal, Read as _};
        Env {
            vars: Box::new(|name| std::env::var_os(name)),
            read: Box::new(|path| match path {
                Some(p) => std::fs::read(p),
                None => {
                    let mut v = Vec::new();
                    io::stdin().lock().read_to_end(&mut v)?;
                    Ok(v)
                }
            }),
            open: Box::new(|path| -> io::Result<Box<dyn io::Read>> {
                match path {
                    Some(p) => Ok(Box::new(std::fs::File::open(p)?)),
                    None => Ok(Box::new(io::stdin())),
                }
            }),
            stdout_terminal: std::io::stdout().is_terminal(),
            stdout_columns: rustix::termios::tcgetwinsize(std::io::stdout())
                .ok()
                .filter(|w| w.ws_col > 0)
                .map(|w| w.ws_col),
            stderr_terminal: std::io::stderr().is_terminal(),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            now: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64),
        }
    }

    /// The variable `name`, if set (even to the empty string).
    pub(crate) fn var(&self, name: &str) -> Option<OsString> {
        (self.vars)(name)
    }

    /// Whether `name` is set to something other than the empty string.
    fn non_empty(&self, name: &str) -> bool {
        self.var(name).is_some_and(|v| !v.is_empty())
    }
}

/// A message printed before the run, which goes on.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Note {
    /// du's `warning: ...`: the exit status stays 0.
    Warning(String),
    /// A PATH skipped (`invalid zero-length file name`): the exit status
    /// becomes 1.
    Error(String),
}

/// What the command line asks for.
#[derive(Debug)]
pub(crate) struct Resolved {
    pub(crate) config: Config,
    /// `--html FILE`: where the page goes (`-`: standard output).
    pub(crate) html: Option<OsString>,
    /// What to say before the run, in order.
    pub(crate) notes: Vec<Note>,
}

/// The 1K block, du's default unit.
const KIB: Unit = Unit::Blocks {
    size: 1024,
    suffix: None,
};

/// How option `id` was spelled the last time it was given (`-t`,
/// `--threshold`), for du's messages about its value.
fn spelled<'a>(cli: &'a Cli, id: ArgId, value: &str) -> &'a str {
    cli.given
        .iter()
        .rev()
        .find(|g| g.id == id && g.value.as_deref() == Some(OsStr::new(value)))
        .map_or("", |g| g.spelled.as_str())
}

/// The values of the flags, each checked: what resolving reads from the
/// flags and the files they name, and where it can fail.
struct Checked {
    max_depth: Option<u32>,
    excludes: Vec<Vec<u8>>,
    unit: Option<Unit>,
    threshold: Option<i64>,
    time: Option<(TimeField, TimeFormat)>,
    min_size: Option<u64>,
    older_than: Option<Timestamp>,
    to_free: Option<u64>,
    index_memory: Option<u64>,
    roots: Vec<Vec<u8>>,
}

/// Resolves the flags into a [`Config`]. When progress is to be shown,
/// `walk.progress` holds the counters for the display to read.
///
/// # Errors
/// The first usage error, in the order du finds them (every bad
/// `--max-depth` and unreadable `--exclude-from` file together).
pub(crate) fn resolve(mut cli: Cli, env: &Env) -> Result<Resolved, UsageError> {
    let du_mode = cli.du_mode();
    if cli.invoked_as_du && cli.du.is_none() && !cli.json && !cli.tree {
        cli.du = Some(Figure::Total);
    }
    let (max_depth, excludes) = depth_and_excludes(&cli, env)?;
    let unit = unit(&cli)?;
    let threshold = threshold(&cli)?;
    let time = time(&cli, env)?;
    check_summarize(&cli, max_depth, du_mode)?;
    let mut notes = warnings(&cli, max_depth, du_mode);
    let min_size = cli.min_size.as_deref().map(parse_size).transpose()?;
    let to_free = cli.to_free.as_deref().map(parse_size).transpose()?;
    let index_memory = cli.index_memory.as_deref().map(parse_size).transpose()?;
    let older_than = cli
        .older_than
        .as_deref()
        .map(|w| older_than(w, env))
        .transpose()?;
    let roots = roots(&mut cli, env, du_mode, &mut notes)?;
    if cli.compare.as_deref() == Some(OsStr::new("-"))
        && cli.import.as_deref() == Some(OsStr::new("-"))
    {
        return Err(UsageError::usage(
            "--compare - and --import - cannot both read standard input",
        ));
    }
    if to_free.is_some() {
        refuse_skipped_names(&notes)?;
    }
    let checked = Checked {
        max_depth,
        excludes,
        unit,
        threshold,
        time,
        min_size,
        older_than,
        to_free,
        index_memory,
        roots,
    };
    let html = cli.page.html.clone();
    let config = config(cli, env, du_mode, checked);
    Ok(Resolved {
        config,
        html,
        notes,
    })
}

/// `--max-depth` and the patterns to exclude. du reports every bad depth
/// and every file it cannot read, then fails.
fn depth_and_excludes(cli: &Cli, env: &Env) -> Result<(Option<u32>, Vec<Vec<u8>>), UsageError> {
    let mut errors = Vec::new();
    let max_depth = max_depth(cli, &mut errors);
    let excludes = excludes(cli, env, &mut errors);
    if !errors.is_empty() {
        return Err(UsageError {
            lines: errors,
            try_help: true,
        });
    }
    Ok((max_depth, excludes))
}

/// `--max-depth`, the last one given; each bad one adds to `errors`.
fn max_depth(cli: &Cli, errors: &mut Vec<String>) -> Option<u32> {
    let mut max_depth = None;
    for d in &cli.max_depth {
        match parse_count(d).ok().and_then(|v| u32::try_from(v).ok()) {
            Some(v) => max_depth = Some(v),
            None => errors.push(format!(
                "invalid maximum depth {}",
                sdu::quote_locale(d.as_bytes())
            )),
        }
    }
    max_depth
}

/// The patterns of `--exclude` and of the `--exclude-from` files; each
/// file that cannot be read adds to `errors`.
fn excludes(cli: &Cli, env: &Env, errors: &mut Vec<String>) -> Vec<Vec<u8>> {
    let mut excludes: Vec<Vec<u8>> = cli
        .exclude
        .iter()
        .cloned()
        .map(OsStringExt::into_vec)
        .collect();
    for file in &cli.exclude_from {
        match (env.read)(Some(file)) {
            Ok(data) => excludes.extend(du_options::exclude_patterns(&data)),
            Err(e) => errors.push(format!(
                "{}: {}",
                du_options::quotef(file.as_bytes()),
                du_options::strerror(&e)
            )),
        }
    }
    excludes
}

/// `--threshold`, the last one given; each is checked, as du does.
fn threshold(cli: &Cli) -> Result<Option<i64>, UsageError> {
    let mut threshold = None;
    for t in &cli.threshold {
        let option = spelled(cli, ArgId::Threshold, t);
        let v = parse_threshold(t).map_err(|e| UsageError::fatal(e.message(option, t)))?;
        if v == 0 && t.starts_with('-') {
            return Err(UsageError::fatal("invalid --threshold argument '-0'"));
        }
        threshold = Some(v);
    }
    Ok(threshold)
}

/// `--time[=WORD]`: the time shown, and how it is printed (`--time-style`,
/// else `TIME_STYLE`, in the zone `TZ` names).
fn time(cli: &Cli, env: &Env) -> Result<Option<(TimeField, TimeFormat)>, UsageError> {
    let Some(word) = cli.time.as_deref() else {
        return Ok(None);
    };
    let field = du_options::time_field(word)?;
    let style = env.var("TIME_STYLE");
    let style = style.as_ref().and_then(|s| s.to_str());
    let format = du_options::time_format(cli.time_style.as_deref(), style)?;
    let tz = env.var("TZ");
    let zone = timefmt::zone(tz.as_ref().map(|t| t.to_string_lossy()).as_deref());
    Ok(Some((field, TimeFormat::new(&format, zone))))
}

/// `--older-than WHEN`: a DURATION before now (a number and one of s, m,
/// h, d, w, y: a year is 365 days) or a DATE, `YYYY-MM-DD[ HH:MM[:SS]]`
/// in the zone `TZ` names.
fn older_than(when: &str, env: &Env) -> Result<Timestamp, UsageError> {
    let invalid = || UsageError::usage(format!("invalid --older-than '{when}'"));
    let w = when.trim();
    let digits = w.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 && digits + 1 == w.len() {
        let n: i64 = w[..digits].parse().map_err(|_| invalid())?;
        let unit = match w.as_bytes()[digits] {
            b's' => 1,
            b'm' => 60,
            b'h' => 3600,
            b'd' => 86_400,
            b'w' => 7 * 86_400,
            b'y' => 365 * 86_400,
            _ => return Err(invalid()),
        };
        let secs = n.checked_mul(unit).ok_or_else(invalid)?;
        return Ok(Timestamp {
            secs: env.now.saturating_sub(secs),
            nanos: 0,
        });
    }
    let civil = match w.parse::<jiff::civil::DateTime>() {
        Ok(t) => t,
        Err(_) => w
            .parse::<jiff::civil::Date>()
            .map_err(|_| invalid())?
            .to_datetime(jiff::civil::Time::midnight()),
    };
    let tz = env.var("TZ");
    let zone = timefmt::zone(tz.as_ref().map(|t| t.to_string_lossy()).as_deref());
    let at = civil.to_zoned(zone).map_err(|_| invalid())?.timestamp();
    Ok(Timestamp {
        secs: at.as_second(),
        nanos: 0,
    })
}

/// `-s` with `-a`, or with a `--max-depth` above 0: an error, in du's
/// words in du's mode.
fn check_summarize(cli: &Cli, max_depth: Option<u32>, du_mode: bool) -> Result<(), UsageError> {
    if cli.summarize && cli.all {
        return Err(UsageError::usage(
            "cannot both summarize and show all entries",
        ));
    }
    if let Some(d) = max_depth.filter(|&d| cli.summarize && d > 0) {
        return Err(UsageError::usage(if du_mode {
            format!("warning: summarizing conflicts with --max-depth={d}")
        } else {
            format!("summarizing (-s) conflicts with --max-depth={d}")
        }));
    }
    Ok(())
}

/// du's warnings about flags that do nothing together (in du's mode).
fn warnings(cli: &Cli, max_depth: Option<u32>, du_mode: bool) -> Vec<Note> {
    let mut notes = Vec::new();
    if cli.summarize && max_depth == Some(0) && du_mode {
        notes.push(Note::Warning(
            "warning: summarizing is the same as using --max-depth=0".into(),
        ));
    }
    if cli.inodes && (cli.apparent_size || cli.bytes) && du_mode {
        notes.push(Note::Warning(
            "warning: options --apparent-size and -b are ineffective with --inodes".into(),
        ));
    }
    notes
}

/// The [`Config`] of the flags, their values checked.
fn config(cli: Cli, env: &Env, du_mode: bool, c: Checked) -> Config {
    let total = total_means(&cli, du_mode);
    let (time, time_format) = c.time.unzip();
    let report = ReportOptions {
        format: format(&cli, total),
        max_depth: if cli.summarize { Some(0) } else { c.max_depth },
        unit: c
            .unit
            .or_else(|| env_unit(env))
            .unwrap_or_else(|| default_unit(cli.du.is_some(), env)),
        columns: columns(total, cli.inodes && !du_mode),
        header: !cli.no_header && !cli.null,
        null: cli.null,
        grand_total: cli.total,
        sort: cli.sort.map(|s| match s {
            SortBy::Name => SortKey::Name,
            SortBy::Figure(f) => SortKey::Size(as_meant(f, total)),
        }),
        top: cli.top,
        min_size: c.min_size,
        threshold: c.threshold,
        reverse: cli.reverse,
        files_only: cli.files_only,
        older_than: c.older_than,
        time: time_format,
        color: color(cli.color, env),
        width: env.stdout_columns.map(usize::from),
        quote_names: env.stdout_terminal,
        ascii_marks: !sdu::utf8_locale_with(&env.vars),
        html_area: cli.page.area(),
    };
    Config {
        // --older-than goes by the --time field, else by mtime.
        walk: WalkOptions {
            index_memory: c.index_memory,
            ..walk_options(
                &cli,
                env,
                c.roots,
                time.or(c.older_than.map(|_| TimeField::Modification)),
                c.excludes,
            )
        },
        report,
        // du's counting rules go with du's mode (its format, or the name).
        rules: sdu::Rules {
            du: du_mode,
            separate_dirs: cli.separate_dirs,
            sorted_depth: None,
        },
        stats: cli.stats,
        to_free: c.to_free,
        // --oldest-first wins: the flags exclude each other.
        by_age: (cli.oldest_first.then_some(true)).or(cli.newest_first.then_some(false)),
        export: cli.saving.export.map(OsStringExt::into_vec),
        export_binary: cli.saving.export_format == ExportFormat::Binary,
        export_zstd: cli.saving.export_format == ExportFormat::JsonZstd,
        import: cli.import.map(OsStringExt::into_vec),
        compare: cli.compare.map(OsStringExt::into_vec),
        snapshots: cli.snapshots,
        df: cli.df,
        since: cli.saving.since.map(OsStringExt::into_vec),
        verify: cli.saving.verify,
    }
}

/// What the scan reads, and how.
fn walk_options(
    cli: &Cli,
    env: &Env,
    roots: Vec<Vec<u8>>,
    time: Option<TimeField>,
    excludes: Vec<Vec<u8>>,
) -> WalkOptions {
    WalkOptions {
        roots,
        threads: cli.threads.map_or(env.cpus, |t| t as usize),
        // A cold walk waits on the device: more threads than CPUs keep
        // requests in flight (docs/decisions.md, "Threads of a cold walk";
        // the walk takes fewer on XFS and for Btrfs trees).
        // Installed as du, sdu is du: it opens nothing before the walk
        // (a test can watch the directories opened, as coreutils' does).
        cold_threads: (cli.threads.is_none() && !cli.invoked_as_du)
            .then(|| env.cpus.max(COLD_THREADS)),
        cold_search_per_cpu: false,
        follow_links: cli.deref == Deref::All,
        follow_args: cli.deref == Deref::Args,
        time,
        one_file_system: cli.one_file_system,
        count_links: cli.count_links,
        all: cli.all || cli.files_only || cli.page.html.is_some(), // the page draws files too
        excludes: Excludes::new(excludes),
        exclude_caches: cli.exclude_caches,
        exclude_kernfs: cli.exclude_kernfs,
        progress: (!cli.no_progress && env.stderr_terminal).then(|| Arc::new(Progress::default())),
        skip_extents: skip_extents(cli),
        fiemap_only: cli.fiemap,
        map_each_copy: cli.map_each_copy,
        tmpdir: env
            .var("TMPDIR")
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from),
        // No identities, the index's memory decided by the walk.
        ..WalkOptions::default()
    }
}

/// What the figure `total` means: under `--apparent-size` (or `-b`) the
/// apparent size, as du's single figure is; under `--inodes` in du's mode,
/// du's figure, the inode count; else the disk usage.
fn total_means(cli: &Cli, du_mode: bool) -> Figure {
    if cli.inodes && du_mode {
        Figure::Inodes
    } else if cli.apparent_size || cli.bytes {
        Figure::Apparent
    } else {
        Figure::Total
    }
}

/// Figure `f` as the flags mean it: `total` is what [`total_means`] says.
fn as_meant(f: Figure, total: Figure) -> Figure {
    if f == Figure::Total { total } else { f }
}

/// The report's format: `--html`, `--json`, else `--du`'s, else `--tree`,
/// else the table.
fn format(cli: &Cli, total: Figure) -> Format {
    if cli.page.html.is_some() {
        return Format::Html;
    }
    match (cli.json, cli.du, cli.tree) {
        (true, _, _) => Format::Json,
        (false, Some(f), _) => Format::Du(as_meant(f, total)),
        (false, None, true) => Format::Tree,
        (false, None, false) => Format::Text,
    }
}

/// The table's columns: the four figures, then the inode count when
/// asked for (`inodes`).
fn columns(total: Figure, inodes: bool) -> Vec<Figure> {
    let mut columns = vec![
        total,
        Figure::Exclusive,
        Figure::Shared,
        Figure::Reclaimable,
    ];
    if inodes {
        columns.push(Figure::Inodes);
    }
    columns
}

/// Whether the scan maps no extents: `--du total` (or apparent) replaces du
/// in scripts, so when no sharing figure is printed or sorted on, none is
/// computed.
fn skip_extents(cli: &Cli) -> bool {
    let plain = |f: Figure| matches!(f, Figure::Total | Figure::Apparent | Figure::Inodes);
    !cli.json
        && cli.du.is_some_and(plain)
        && cli.sort.is_none_or(|s| match s {
            SortBy::Name => true,
            SortBy::Figure(f) => plain(f),
        })
}

/// Whether the tree view is coloured. The NO_COLOR convention: a flag
/// asking for colour beats the variable.
fn color(when: ColorWhen, env: &Env) -> bool {
    match when {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => env.stdout_terminal && !env.non_empty("NO_COLOR"),
    }
}

/// The paths to walk: with `--import`, the `--to-free` candidates among
/// the saved scan's paths; else the PATHs, `.` when there are none, or
/// the names `--files0-from` reads.
fn roots(
    cli: &mut Cli,
    env: &Env,
    du_mode: bool,
    notes: &mut Vec<Note>,
) -> Result<Vec<Vec<u8>>, UsageError> {
    let paths = std::mem::take(&mut cli.paths);
    if cli.import.is_some() {
        return candidates(paths, cli.to_free.is_some());
    }
    let roots = match cli.files0_from.take() {
        Some(from) => files0_names(&from, &paths, env, notes),
        None => operands(paths, du_mode, notes),
    }?;
    Ok(roots
        .into_iter()
        .map(super::du_options::trim_slashes)
        .collect())
}

/// `--to-free`: a name skipped (a zero-length one, in du's mode or from
/// `--files0-from`) refuses the command rather than leave the name out of
/// the plan, as a candidate that cannot be accessed does (`sdu::run`): a
/// plan made without it would read as the plan.
fn refuse_skipped_names(notes: &[Note]) -> Result<(), UsageError> {
    match notes.iter().find_map(|n| match n {
        Note::Error(m) => Some(m),
        Note::Warning(_) => None,
    }) {
        Some(m) => Err(UsageError::fatal(format!("--to-free: {m}"))),
        None => Ok(()),
    }
}

/// An imported scan has its roots: PATHs name `--to-free`'s candidates
/// (`to_free`), and only them.
fn candidates(paths: Vec<OsString>, to_free: bool) -> Result<Vec<Vec<u8>>, UsageError> {
    if !to_free && !paths.is_empty() {
        return Err(UsageError::usage(
            "--import reads its paths from the saved scan: give PATHs only as --to-free candidates",
        ));
    }
    if to_free && paths.is_empty() {
        return Err(UsageError::usage("--to-free needs candidate PATHs"));
    }
    Ok(paths.into_iter().map(OsStringExt::into_vec).collect())
}

/// The PATHs, `.` when there are none. In du's mode a zero-length name is
/// skipped with an error, as du does; in sdu's it is a usage error.
fn operands(
    paths: Vec<OsString>,
    du_mode: bool,
    notes: &mut Vec<Note>,
) -> Result<Vec<Vec<u8>>, UsageError> {
    if paths.is_empty() {
        return Ok(vec![b".".to_vec()]);
    }
    let mut roots = Vec::new();
    for p in paths {
        if !p.is_empty() {
            roots.push(p.into_vec());
        } else if du_mode {
            notes.push(Note::Error("invalid zero-length file name".into()));
        } else {
            return Err(UsageError::usage("invalid zero-length file name"));
        }
    }
    Ok(roots)
}

/// The names `--files0-from` `from` lists (no PATHs may come with it); a
/// bad name is skipped with an error, as du does.
fn files0_names(
    from: &OsStr,
    paths: &[OsString],
    env: &Env,
    notes: &mut Vec<Note>,
) -> Result<Vec<Vec<u8>>, UsageError> {
    if let Some(p) = paths.first() {
        return Err(UsageError::usage(format!(
            "extra operand {}\nfile operands cannot be combined with --files0-from",
            sdu::quote_locale(p.as_bytes())
        )));
    }
    let stdin = from.as_bytes() == b"-";
    let input = (env.open)((!stdin).then_some(from)).map_err(|e| {
        UsageError::fatal(format!(
            "cannot open {} for reading: {}",
            quote(from.as_bytes()),
            du_options::strerror(&e)
        ))
    })?;
    let read =
        du_options::files0(from, &mut io::BufReader::new(input)).map_err(|lines| UsageError {
            lines,
            try_help: false,
        })?;
    notes.extend(read.errors.into_iter().map(Note::Error));
    Ok(read.names)
}

/// The unit the flags ask for, if any: as in du, the last unit flag wins.
/// A bad `-B` is an error even when a later flag overrides it.
fn unit(cli: &Cli) -> Result<Option<Unit>, UsageError> {
    let mut unit = None;
    for flag in &cli.units {
        unit = Some(match flag {
            UnitFlag::Human => Unit::HumanIec,
            UnitFlag::Si => Unit::HumanSi,
            UnitFlag::Kibibytes => KIB,
            UnitFlag::Mebibytes => Unit::Blocks {
                size: 1 << 20,
                suffix: None,
            },
            UnitFlag::Bytes => Unit::Blocks {
                size: 1,
                suffix: None,
            },
            UnitFlag::BlockSize { spelled, size } => {
                parse_block_size(size).map_err(|e| UsageError::fatal(e.message(spelled, size)))?
            }
        });
    }
    Ok(unit)
}

/// Threads without `-j` when the tree is not in memory (at least as many
/// as CPUs): requests in flight while threads wait on the device. More
/// took no less time and more memory: a thread holds what it is walking
/// (docs/decisions.md, "Threads of a cold walk").
const COLD_THREADS: usize = 8;

/// The block-size variables, in the order du reads them (gnulib's
/// `human_options`: DU_BLOCK_SIZE, then `humblock`'s fallbacks).
const BLOCK_SIZE_VARS: [&str; 3] = ["DU_BLOCK_SIZE", "BLOCK_SIZE", "BLOCKSIZE"];

/// The unit the environment asks for, as GNU du reads it: the first of
/// [`BLOCK_SIZE_VARS`] that is set counts, even when it is empty, and an
/// invalid value is ignored without a word (du calls `human_options` and
/// drops its error), leaving the default.
///
/// It is read in the table's mode as in `--du`'s, as a unit flag given
/// before all the others would be: du's rule, and the variables name the
/// user's unit for every size-printing tool, not du's format alone.
fn env_unit(env: &Env) -> Option<Unit> {
    let spec = BLOCK_SIZE_VARS.into_iter().find_map(|v| env.var(v))?;
    env_block_size(spec.to_str()?)
}

/// The unit when neither a flag nor the environment names one: du's 1K
/// blocks with `--du` (512-byte blocks under POSIXLY_CORRECT, as du's),
/// human-readable sizes in sdu's own table, where POSIXLY_CORRECT has no
/// say since no standard covers it.
fn default_unit(du_format: bool, env: &Env) -> Unit {
    match (du_format, env.var("POSIXLY_CORRECT").is_some()) {
        (false, _) => Unit::HumanIec,
        (true, false) => KIB,
        (true, true) => Unit::Blocks {
            size: 512,
            suffix: None,
        },
    }
}

#[cfg(test)]
mod tests;
