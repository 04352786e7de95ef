//! From parsed flags and the process's surroundings to a [`Config`].
//!
//! [`resolve`] is pure: whatever it would read from the process (variables,
//! terminals, the CPU count) comes in an [`Env`], so that every rule about
//! defaults and precedence can be tested here without running sdu.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::sync::Arc;

use sdu::figures::Figure;
use sdu::glob::Excludes;
use sdu::report::{Format, SortKey};
use sdu::timefmt::{self, TimeFormat};
use sdu::units::{
    Unit, env_block_size, parse_block_size, parse_count, parse_size, parse_threshold,
};
use sdu::{Config, Progress, ReportOptions, WalkOptions, quote};

use super::arg_id::ArgId;
use super::args::{Cli, ColorWhen, Deref, SortBy, UnitFlag};
use super::du;
use super::usage::UsageError;

/// Looks up an environment variable by name: `None` when it is unset.
pub type Lookup = Box<dyn Fn(&str) -> Option<OsString>>;

/// Reads a whole file (`Some(path)`) or standard input (`None`), for
/// `--files0-from` and `--exclude-from`.
pub type Read = Box<dyn Fn(Option<&OsStr>) -> io::Result<Vec<u8>>>;

/// What [`resolve`] may know of the process it runs in.
pub struct Env {
    pub vars: Lookup,
    pub read: Read,
    pub stdout_terminal: bool,
    pub stderr_terminal: bool,
    /// The default number of worker threads.
    pub cpus: usize,
}

impl Env {
    /// The environment of this process.
    pub fn of_process() -> Env {
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
            stdout_terminal: std::io::stdout().is_terminal(),
            stderr_terminal: std::io::stderr().is_terminal(),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }

    /// The variable `name`, if set (even to the empty string).
    pub fn var(&self, name: &str) -> Option<OsString> {
        (self.vars)(name)
    }

    /// Whether `name` is set to something other than the empty string.
    fn non_empty(&self, name: &str) -> bool {
        self.var(name).is_some_and(|v| !v.is_empty())
    }
}

/// A message printed before the run, which goes on.
#[derive(Debug, PartialEq, Eq)]
pub enum Note {
    /// du's `warning: ...`: the exit status stays 0.
    Warning(String),
    /// A PATH skipped (`invalid zero-length file name`): the exit status
    /// becomes 1.
    Error(String),
}

/// What the command line asks for.
#[derive(Debug)]
pub struct Resolved {
    pub config: Config,
    /// What to say before the run, in order.
    pub notes: Vec<Note>,
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

/// Resolves the flags into a [`Config`]. When progress is to be shown,
/// `walk.progress` holds the counters for the display to read.
pub fn resolve(mut cli: Cli, env: &Env) -> Result<Resolved, UsageError> {
    let du_mode = cli.du_mode();
    if cli.invoked_as_du && cli.du.is_none() && !cli.json && !cli.tree {
        cli.du = Some(Figure::Total);
    }
    let mut notes = Vec::new();
    // du reports every bad --max-depth, then fails.
    let mut depth_errors = Vec::new();
    let mut max_depth = None;
    for d in &cli.max_depth {
        match parse_count(d).ok().and_then(|v| u32::try_from(v).ok()) {
            Some(v) => max_depth = Some(v),
            None => depth_errors.push(format!("invalid maximum depth {}", quote(d.as_bytes()))),
        }
    }
    let mut excludes: Vec<Vec<u8>> = cli
        .exclude
        .iter()
        .cloned()
        .map(OsStringExt::into_vec)
        .collect();
    for file in &cli.exclude_from {
        match (env.read)(Some(file)) {
            Ok(data) => excludes.extend(du::exclude_patterns(&data)),
            Err(e) => depth_errors.push(format!(
                "{}: {}",
                du::quotef(file.as_bytes()),
                du::strerror(&e)
            )),
        }
    }
    if !depth_errors.is_empty() {
        return Err(UsageError {
            lines: depth_errors,
            try_help: true,
        });
    }
    let unit = unit(&cli)?;
    let mut threshold = None;
    for t in &cli.threshold {
        let option = spelled(&cli, ArgId::Threshold, t);
        let v = parse_threshold(t).map_err(|e| UsageError::fatal(e.message(option, t)))?;
        if v == 0 && t.starts_with('-') {
            return Err(UsageError::fatal("invalid --threshold argument '-0'"));
        }
        threshold = Some(v);
    }
    let time = cli.time.as_deref().map(du::time_field).transpose()?;
    let time_format = match time {
        Some(_) => {
            let style = env.var("TIME_STYLE");
            let style = style.as_ref().and_then(|s| s.to_str());
            let format = du::time_format(cli.time_style.as_deref(), style)?;
            let tz = env.var("TZ");
            let zone = timefmt::zone(tz.as_ref().map(|t| t.to_string_lossy()).as_deref());
            Some(TimeFormat::new(&format, zone))
        }
        None => None,
    };
    if cli.summarize && cli.all {
        return Err(UsageError::usage(
            "cannot both summarize and show all entries",
        ));
    }
    if cli.summarize && max_depth == Some(0) && du_mode {
        notes.push(Note::Warning(
            "warning: summarizing is the same as using --max-depth=0".into(),
        ));
    }
    if let Some(d) = max_depth.filter(|&d| cli.summarize && d > 0) {
        return Err(UsageError::usage(if du_mode {
            format!("warning: summarizing conflicts with --max-depth={d}")
        } else {
            format!("summarizing (-s) conflicts with --max-depth={d}")
        }));
    }
    let apparent = cli.apparent_size || cli.bytes;
    if cli.inodes && apparent && du_mode {
        notes.push(Note::Warning(
            "warning: options --apparent-size and -b are ineffective with --inodes".into(),
        ));
    }
    // `total` is the apparent size under `--apparent-size`, as du's single
    // figure is; under `--inodes` du's figure is the inode count.
    let inodes = cli.inodes;
    let figure = |f: Figure| match f {
        Figure::Total if inodes && du_mode => Figure::Inodes,
        Figure::Total if apparent => Figure::Apparent,
        f => f,
    };
    let min_size = cli.min_size.as_deref().map(parse_size).transpose()?;
    let to_free = cli.to_free.as_deref().map(parse_size).transpose()?;
    let sort = cli.sort.map(|s| match s {
        SortBy::Name => SortKey::Name,
        SortBy::Figure(f) => SortKey::Size(figure(f)),
    });
    // The NO_COLOR convention: a flag asking for colour beats the variable.
    let color = match cli.color {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => env.stdout_terminal && !env.non_empty("NO_COLOR"),
    };
    // An imported scan has its roots: PATHs name --to-free's candidates.
    let roots = match &cli.import {
        Some(_) if cli.to_free.is_none() && !cli.paths.is_empty() => {
            return Err(UsageError::usage(
                "--import reads its paths from the saved scan: give PATHs only as --to-free candidates",
            ));
        }
        Some(_) if cli.to_free.is_some() && cli.paths.is_empty() => {
            return Err(UsageError::usage("--to-free needs candidate PATHs"));
        }
        Some(_) => std::mem::take(&mut cli.paths)
            .into_iter()
            .map(OsStringExt::into_vec)
            .collect(),
        None => roots(&mut cli, env, du_mode, &mut notes)?,
    };
    let threads = cli.threads.map_or(env.cpus, |t| t as usize);
    // `--du total` (or apparent) replaces du in scripts: when no sharing
    // figure is printed or sorted on, map no extents.
    let plain = |f: Figure| matches!(f, Figure::Total | Figure::Apparent | Figure::Inodes);
    let skip_extents = !cli.json
        && cli.du.is_some_and(plain)
        && cli.sort.is_none_or(|s| match s {
            SortBy::Name => true,
            SortBy::Figure(f) => plain(f),
        });
    let progress = (!cli.no_progress && env.stderr_terminal).then(|| Arc::new(Progress::default()));
    let mut columns = vec![
        figure(Figure::Total),
        Figure::Exclusive,
        Figure::Shared,
        Figure::Reclaimable,
    ];
    if cli.inodes && !du_mode {
        columns.push(Figure::Inodes);
    }
    let config = Config {
        walk: WalkOptions {
            roots,
            threads,
            follow_links: cli.deref == Deref::All,
            follow_args: cli.deref == Deref::Args,
            du_rules: du_mode,
            time,
            one_file_system: cli.one_file_system,
            count_links: cli.count_links,
            all: cli.all,
            excludes: Excludes::new(excludes),
            progress,
            skip_extents,
            fiemap_only: cli.fiemap,
            map_each_copy: cli.map_each_copy,
            identities: false,
        },
        report: ReportOptions {
            format: match (cli.json, cli.du, cli.tree) {
                (true, _, _) => Format::Json,
                (false, Some(f), _) => Format::Du(figure(f)),
                (false, None, true) => Format::Tree,
                (false, None, false) => Format::Text,
            },
            max_depth: if cli.summarize { Some(0) } else { max_depth },
            unit: unit
                .or_else(|| env_unit(env))
                .unwrap_or_else(|| default_unit(cli.du.is_some(), env)),
            columns,
            header: !cli.no_header && !cli.null,
            null: cli.null,
            grand_total: cli.total,
            sort,
            top: cli.top,
            min_size,
            threshold,
            time: time_format,
            color,
            quote_names: env.stdout_terminal,
        },
        // du's counting rules go with du's mode (its format, or the name).
        rules: sdu::tree::Rules {
            du: du_mode,
            separate_dirs: cli.separate_dirs,
            keep_sets: false,
            sorted_depth: None,
        },
        stats: cli.stats,
        to_free,
        export: cli.export.map(OsStringExt::into_vec),
        import: cli.import.map(OsStringExt::into_vec),
    };
    Ok(Resolved { config, notes })
}

/// The paths to walk: the PATHs, `.` when there are none, or the names
/// `--files0-from` reads. In du's mode a zero-length name is skipped with
/// an error, as du does; in sdu's it is a usage error.
fn roots(
    cli: &mut Cli,
    env: &Env,
    du_mode: bool,
    notes: &mut Vec<Note>,
) -> Result<Vec<Vec<u8>>, UsageError> {
    let paths = std::mem::take(&mut cli.paths);
    let Some(from) = cli.files0_from.take() else {
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
        return Ok(roots);
    };
    if let Some(p) = paths.first() {
        return Err(UsageError::usage(format!(
            "extra operand {}\nfile operands cannot be combined with --files0-from",
            quote(p.as_bytes())
        )));
    }
    let stdin = from.as_bytes() == b"-";
    let data = (env.read)((!stdin).then_some(from.as_os_str())).map_err(|e| {
        // du opens the file, then reads it: a directory opens and fails
        // to read.
        if e.raw_os_error() == Some(rustix::io::Errno::ISDIR.raw_os_error()) {
            UsageError::fatal(format!(
                "{}: read error: {}",
                du::quotef(from.as_bytes()),
                du::strerror(&e)
            ))
        } else {
            UsageError::fatal(format!(
                "cannot open {} for reading: {}",
                quote(from.as_bytes()),
                du::strerror(&e)
            ))
        }
    })?;
    let read = du::files0(&from, &data);
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
