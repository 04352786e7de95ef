//! The `sdu` binary: flags in, a [`sdu::Config`] out, exit status back.
//!
//! Exit status: 0 when everything was read, 1 when some entries could not
//! be read (each named on stderr), 2 on a usage or fatal error.

use std::ffi::OsString;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::os::unix::ffi::OsStringExt;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::parser::ValueSource;
use clap::{ArgAction, CommandFactory, FromArgMatches, Parser, ValueEnum};
use clap_complete::Shell;
use clap_mangen::Man;
use clap_mangen::roff::{Roff, bold, roman};
use sdu::figures::Figure as Fig;
use sdu::glob::Excludes;
use sdu::progress::{self, Display};
use sdu::report::{Format, SortKey};
use sdu::units::{Unit, parse_block_size, parse_size};
use sdu::{Config, Messages, Progress, ReportOptions, WalkOptions};

/// The three examples that end `--help` (and the man page shows them too).
const EXAMPLES: &[(&str, &str)] = &[
    (
        "sdu -d 1 /srv",
        "Total, exclusive, shared and reclaimable space of /srv and each directory in it",
    ),
    (
        "sdu --sort reclaimable -n 20 -d 3 /srv",
        "The 20 directories (3 levels deep) whose deletion would free the most",
    ),
    (
        "sdu --du exclusive -s *",
        "du's own output format with one figure: a drop-in for `du -s *` in scripts",
    ),
];

/// The end of `--help`: the figures in brief, then the examples.
fn after_help() -> String {
    let mut s = String::from(
        "Figures (man sdu explains them):\n  \
         Total        allocated bytes, what du prints (Apparent with --apparent-size)\n  \
         Exclusive    data that belongs to one file alone\n  \
         Shared       shared data that files under the entry reference, counted once\n  \
         Reclaimable  what deleting the entry would free\n\n\
         Examples:\n",
    );
    for (cmd, what) in EXAMPLES {
        s.push_str(&format!("  {cmd}\n      {what}\n"));
    }
    s
}

/// Summarize disk usage, counting shared (reflinked, snapshotted,
/// deduplicated) data once.
///
/// For every directory, sdu prints four figures: Total (what du prints),
/// Exclusive (data that belongs to one file alone), Shared (data that is
/// shared, counted once) and Reclaimable (what deleting the directory would
/// free). It needs no root, and works on any filesystem; only XFS (with
/// reflink), Btrfs, OCFS2 and bcachefs can share data.
#[derive(Parser, Debug)]
#[command(
    name = "sdu",
    version,
    disable_help_flag = true,
    disable_version_flag = true,
    max_term_width = 100,
    after_help = after_help()
)]
struct Cli {
    /// Files or directories to measure [default: .]
    #[arg(value_name = "PATH")]
    paths: Vec<OsString>,

    /// Display only a total for each argument (same as -d 0)
    #[arg(short, long, help_heading = "Which entries to print")]
    summarize: bool,

    /// Print the total for a directory only if it is N or fewer levels below the argument
    #[arg(
        short = 'd',
        long,
        value_name = "N",
        help_heading = "Which entries to print"
    )]
    max_depth: Option<u32>,

    /// Write counts for all files, not just directories
    #[arg(short, long, help_heading = "Which entries to print")]
    all: bool,

    /// Keep only the N largest entries (by the --sort figure, else Total);
    /// listed largest first unless --sort says otherwise
    #[arg(
        short = 'n',
        long,
        value_name = "N",
        help_heading = "Which entries to print"
    )]
    top: Option<usize>,

    /// Hide entries smaller than SIZE (by the --sort figure, else Total),
    /// e.g. 100M, 1G; hidden entries still count in their parents
    #[arg(long, value_name = "SIZE", help_heading = "Which entries to print")]
    min_size: Option<String>,

    /// Skip directories on different file systems
    #[arg(short = 'x', long, help_heading = "What to count")]
    one_file_system: bool,

    /// Dereference all symbolic links
    #[arg(short = 'L', long, help_heading = "What to count")]
    dereference: bool,

    /// Count sizes many times if hard linked
    #[arg(short = 'l', long, help_heading = "What to count")]
    count_links: bool,

    /// Exclude entries that match PATTERN (a shell glob, matched as du does)
    #[arg(long, value_name = "PATTERN", action = ArgAction::Append, help_heading = "What to count")]
    exclude: Vec<OsString>,

    /// Print apparent sizes rather than disk usage (the Apparent column,
    /// --sort total and --du total then mean the apparent size)
    #[arg(long, help_heading = "Sizes")]
    apparent_size: bool,

    /// Equivalent to --apparent-size --block-size=1
    #[arg(short = 'b', long, help_heading = "Sizes")]
    bytes: bool,

    /// Like --block-size=1K
    #[arg(short = 'k', help_heading = "Sizes")]
    kibibytes: bool,

    /// Like --block-size=1M
    #[arg(short = 'm', help_heading = "Sizes")]
    mebibytes: bool,

    /// Scale sizes by SIZE before printing them (e.g. 1, 4K, 1MiB, MB)
    #[arg(short = 'B', long, value_name = "SIZE", help_heading = "Sizes")]
    block_size: Option<String>,

    /// Print sizes in human readable format, powers of 1024 (the default,
    /// except with --du)
    #[arg(short = 'h', long, help_heading = "Sizes")]
    human_readable: bool,

    /// Like -h, but use powers of 1000
    #[arg(long, help_heading = "Sizes")]
    si: bool,

    /// List the entries by FIGURE, largest first (or by path), instead of
    /// du's order; the tree view sorts siblings
    #[arg(long, value_name = "FIGURE", value_enum, help_heading = "Output")]
    sort: Option<SortBy>,

    /// Print an indented tree with a bar per entry, largest first
    #[arg(long, conflicts_with_all = ["json", "du", "null"], help_heading = "Output")]
    tree: bool,

    /// Print only FIGURE in du's own format, SIZE<TAB>PATH, with du's units
    /// (1K blocks unless -h, -B, ... say otherwise)
    #[arg(
        long,
        value_name = "FIGURE",
        value_enum,
        conflicts_with = "json",
        help_heading = "Output"
    )]
    du: Option<Figure>,

    /// Print one JSON document (all sizes in bytes)
    #[arg(long, help_heading = "Output")]
    json: bool,

    /// Produce a grand total
    #[arg(short = 'c', long, help_heading = "Output")]
    total: bool,

    /// End each output line with NUL, not newline (no header)
    #[arg(short = '0', long, help_heading = "Output")]
    null: bool,

    /// Do not print the header line
    #[arg(long, help_heading = "Output")]
    no_header: bool,

    /// Worker threads [default: the number of CPUs]
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024), help_heading = "Scan")]
    threads: Option<u32>,

    /// Do not show progress on stderr (shown only when stderr is a
    /// terminal and the scan takes a moment)
    #[arg(long, help_heading = "Scan")]
    no_progress: bool,

    /// Print counts and timings of the scan on stderr (files mapped with
    /// FIEMAP, files skipped and why, shared extents indexed)
    #[arg(long, help_heading = "Scan")]
    stats: bool,

    /// Print the man page or a shell completion script, and exit
    #[arg(long, value_name = "KIND", value_enum, help_heading = "Other")]
    generate: Option<Generate>,

    /// Print help
    #[arg(long, action = ArgAction::HelpShort, help_heading = "Other")]
    help: Option<bool>,

    /// Print version
    #[arg(short = 'V', long, action = ArgAction::Version, help_heading = "Other")]
    version: Option<bool>,
}

/// A figure for `--du` (and, with `name`, `--sort`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Figure {
    Total,
    Exclusive,
    Shared,
    Reclaimable,
    Apparent,
}

impl Figure {
    /// The column it names; `total` is the apparent size under
    /// `--apparent-size`, as du's single figure is.
    fn column(self, apparent: bool) -> Fig {
        match self {
            Figure::Total if apparent => Fig::Apparent,
            Figure::Total => Fig::Total,
            Figure::Exclusive => Fig::Exclusive,
            Figure::Shared => Fig::Shared,
            Figure::Reclaimable => Fig::Reclaimable,
            Figure::Apparent => Fig::Apparent,
        }
    }
}

/// What `--sort` orders by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum SortBy {
    Total,
    Exclusive,
    Shared,
    Reclaimable,
    Apparent,
    Name,
}

/// What `--generate` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Generate {
    Man,
    Bash,
    Zsh,
    Fish,
    Elvish,
    Powershell,
}

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    if let Some(kind) = cli.generate {
        return generate(kind);
    }
    let show_progress = !cli.no_progress && io::stderr().is_terminal();
    let mut cfg = match config(cli, &matches) {
        Ok(c) => c,
        Err(msg) => {
            eprintln!("sdu: {msg}\nTry 'sdu --help' for more information.");
            return ExitCode::from(2);
        }
    };
    let display = show_progress.then(|| {
        let p = Arc::new(Progress::default());
        cfg.walk.progress = Some(Arc::clone(&p));
        Display::start(p, progress_delay())
    });
    let msgs = match &display {
        Some(d) => Messages::new(Box::new(d.sink())),
        None => Messages::default(),
    };
    let stdout = io::stdout();
    let mut out = ClearsProgress {
        display,
        inner: BufWriter::with_capacity(64 * 1024, stdout.lock()),
    };
    let result = sdu::run(&cfg, &mut out, &msgs);
    out.finish_progress();
    match result {
        Ok(o) => ExitCode::from(u8::from(o.errors > 0)),
        // `sdu | head` closing the pipe is not an error.
        Err(sdu::Error::Write(e)) if e.kind() == io::ErrorKind::BrokenPipe => {
            ExitCode::from(u8::from(msgs.errors() > 0))
        }
        Err(e) => {
            // Drop what is still buffered rather than try to write it again.
            let _ = out.inner.into_parts();
            eprintln!("sdu: {e}");
            ExitCode::from(2)
        }
    }
}

/// How long a scan runs before progress appears. `SDU_PROGRESS_DELAY_MS`
/// overrides it, so that tests can see the line on short scans.
fn progress_delay() -> Duration {
    std::env::var("SDU_PROGRESS_DELAY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(progress::DEFAULT_DELAY, Duration::from_millis)
}

/// The report's writer: the progress line is cleared before the first
/// byte of the report goes out (stdout and stderr are often one terminal).
struct ClearsProgress<W: Write> {
    display: Option<Display>,
    inner: W,
}

impl<W: Write> ClearsProgress<W> {
    fn finish_progress(&mut self) {
        if let Some(mut d) = self.display.take() {
            d.finish();
        }
    }
}

impl<W: Write> Write for ClearsProgress<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.finish_progress();
        self.inner.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.finish_progress();
        self.inner.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.finish_progress();
        self.inner.flush()
    }
}

/// `--generate KIND`: the man page or a completion script on stdout.
fn generate(kind: Generate) -> ExitCode {
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    let shell = match kind {
        Generate::Man => None,
        Generate::Bash => Some(Shell::Bash),
        Generate::Zsh => Some(Shell::Zsh),
        Generate::Fish => Some(Shell::Fish),
        Generate::Elvish => Some(Shell::Elvish),
        Generate::Powershell => Some(Shell::PowerShell),
    };
    match shell {
        Some(sh) => clap_complete::generate(sh, &mut cmd, "sdu", &mut buf),
        None => man_page(cmd, &mut buf).expect("writing to a Vec"),
    }
    match io::stdout().lock().write_all(&buf) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sdu: write error: {e}");
            ExitCode::from(2)
        }
    }
}

/// The man page: clap's sections (name, synopsis, description, options)
/// and what `--help` has no room for.
fn man_page(cmd: clap::Command, out: &mut dyn Write) -> io::Result<()> {
    let man = Man::new(cmd);
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    man.render_options_section(out)?;
    let mut r = Roff::new();
    for (title, paragraphs) in MAN_SECTIONS {
        r.control("SH", [*title]);
        for (i, p) in paragraphs.iter().enumerate() {
            match p.split_once(" :: ") {
                // A tagged paragraph: the tag in bold, then the text.
                Some((tag, text)) => {
                    r.control("TP", []);
                    r.text([bold(tag)]);
                    r.text([roman(text)]);
                }
                None => {
                    if i > 0 {
                        r.control("PP", []);
                    }
                    r.text([roman(*p)]);
                }
            }
        }
    }
    r.control("SH", ["EXAMPLES"]);
    for (cmd, what) in EXAMPLES {
        r.control("TP", []);
        r.text([bold(*cmd)]);
        r.text([roman(*what)]);
    }
    r.to_writer(out)?;
    man.render_version_section(out)
}

/// The man page's own sections: (title, paragraphs); a paragraph
/// `TAG :: TEXT` is a tagged one.
const MAN_SECTIONS: &[(&str, &[&str])] = &[
    (
        "FIGURES",
        &[
            "Every inode is counted once in every directory that holds at least one of its links, \
             as du -s run on that directory alone would count it, so a figure never depends on the \
             order of the scan.",
            "Total :: Allocated bytes (st_blocks x 512), directories included: what du prints. \
             With --apparent-size the Apparent column (the sum of st_size) takes its place.",
            "Exclusive :: The bytes of data that belong to one file alone: Total less the bytes \
             of the extents that the filesystem flags as shared (FIEMAP_EXTENT_SHARED). Inline \
             and not yet allocated (delayed) data count as exclusive.",
            "Shared :: The size of the shared data that some file under the entry references, \
             counted once however many files, clones or snapshots reference it. \
             Exclusive + Shared is the space the entry's data really occupies; \
             Total - Exclusive - Shared is what sharing saves inside it.",
            "Reclaimable :: What deleting the entry would free, as far as the scan can see: the \
             exclusive bytes of the inodes whose links all lie under it, plus the shared data \
             whose references seen in the scan all lie under it. Shared data referenced only once \
             in the scan is shared with something outside it and is never reclaimable. The figure \
             is exact when the scan covers every file that references the data (a whole XFS \
             filesystem, a Btrfs filesystem with its snapshots under the scanned root), and an \
             upper bound otherwise.",
        ],
    ),
    (
        "SORTING AND SELECTING",
        &[
            "By default entries are listed in du's order: every directory after its contents, \
             siblings by name. With --sort the list is flat and ordered by the figure, largest \
             first, ties by path (like du | sort -rh), or by path with --sort name.",
            "--top N keeps the N largest entries by the --sort figure (Total, or Apparent with \
             --apparent-size, when there is no --sort or with --sort name) and, without --sort, \
             lists them largest first. --min-size SIZE hides the entries whose figure is \
             smaller. Both apply to the entries -s, -d and -a select, in text, JSON, --du and \
             --tree alike, and the -c total is always printed. A hidden entry still counts in its \
             parent's figures.",
            "--tree prints each directory above its contents, siblings largest first (by name \
             with --sort name), with a bar and a percentage of the figure relative to the root. \
             Since a directory's figures are never smaller than those of anything under it, the \
             entries --top and --min-size keep always include their parents.",
        ],
    ),
    (
        "FILESYSTEMS",
        &[
            "Data can be shared on XFS (with reflink, the default since xfsprogs 5.1), Btrfs \
             (reflinks, snapshots, deduplication), OCFS2 and bcachefs; sdu asks the kernel for \
             each file's extents there (the FIEMAP ioctl) and indexes the shared ones. On ext4, \
             tmpfs, NFS, CIFS/SMB and every other filesystem nothing can be shared (or FIEMAP is \
             missing or meaningless): sdu does not map files there, and their data is all \
             exclusive.",
            "Btrfs subvolumes and snapshots are not mount points: -x does not stop at them, and \
             data shared between them is found.",
        ],
    ),
    (
        "PERMISSIONS",
        &[
            "Nothing needs root. sdu reads directories and stats entries as du does, and maps \
             the extents of the files it can open for reading. An entry that cannot be read is \
             reported and counted (exit status 1); a file that can be stat-ed but not opened is \
             counted as exclusive, with a warning.",
        ],
    ),
    (
        "EXIT STATUS",
        &[
            "0 :: Everything was read.",
            "1 :: Some entries could not be read (each is named on stderr); the figures of the \
             rest are printed.",
            "2 :: A usage error or a fatal error (for example, the report could not be written).",
        ],
    ),
    (
        "ENVIRONMENT",
        &[
            "NO_COLOR :: When set and not empty, the tree view is never coloured (it is coloured \
           only when standard output is a terminal anyway).",
        ],
    ),
];

/// Resolves the flags into a [`Config`]; the error is a usage message.
fn config(cli: Cli, m: &clap::ArgMatches) -> Result<Config, String> {
    if cli.summarize && cli.all {
        return Err("cannot both summarize and show all entries".into());
    }
    if cli.summarize && cli.max_depth.is_some_and(|d| d > 0) {
        return Err(format!(
            "summarizing (-s) conflicts with --max-depth={}",
            cli.max_depth.unwrap_or(0)
        ));
    }
    // As in du, the last of the unit flags wins; -b also implies
    // --apparent-size, whatever comes after it.
    let last = |id: &str| {
        (m.value_source(id) == Some(ValueSource::CommandLine))
            .then(|| m.indices_of(id).and_then(|i| i.max()))
            .flatten()
    };
    let mut unit = (None, Unit::HumanIec);
    let mut pick = |id: &str, u: Unit| {
        if let Some(i) = last(id) {
            if unit.0.is_none_or(|j| i > j) {
                unit = (Some(i), u);
            }
        }
    };
    let kib = Unit::Blocks {
        size: 1024,
        suffix: None,
    };
    pick("human_readable", Unit::HumanIec);
    pick("si", Unit::HumanSi);
    pick("kibibytes", kib);
    pick(
        "mebibytes",
        Unit::Blocks {
            size: 1 << 20,
            suffix: None,
        },
    );
    pick(
        "bytes",
        Unit::Blocks {
            size: 1,
            suffix: None,
        },
    );
    if let Some(b) = &cli.block_size {
        pick("block_size", parse_block_size(b)?);
    }
    // du's default unit is the 1K block; sdu's own table is human-readable.
    if unit.0.is_none() && cli.du.is_some() {
        unit.1 = kib;
    }
    let apparent = cli.apparent_size || cli.bytes;
    let min_size = cli.min_size.as_deref().map(parse_size).transpose()?;
    let sort = cli.sort.map(|s| match s {
        SortBy::Name => SortKey::Name,
        SortBy::Total => SortKey::Size(Figure::Total.column(apparent)),
        SortBy::Exclusive => SortKey::Size(Fig::Exclusive),
        SortBy::Shared => SortKey::Size(Fig::Shared),
        SortBy::Reclaimable => SortKey::Size(Fig::Reclaimable),
        SortBy::Apparent => SortKey::Size(Fig::Apparent),
    });
    let color =
        io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let roots: Vec<Vec<u8>> = if cli.paths.is_empty() {
        vec![b".".to_vec()]
    } else {
        cli.paths.into_iter().map(OsStringExt::into_vec).collect()
    };
    if roots.iter().any(|r| r.is_empty()) {
        return Err("invalid zero-length file name".into());
    }
    let threads = cli
        .threads
        .map(|t| t as usize)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    Ok(Config {
        walk: WalkOptions {
            roots,
            threads,
            follow_links: cli.dereference,
            one_file_system: cli.one_file_system,
            count_links: cli.count_links,
            all: cli.all,
            excludes: Excludes::new(cli.exclude.into_iter().map(OsStringExt::into_vec)),
            progress: None,
            // `--du total` (or apparent) replaces du in scripts: when no
            // sharing figure is printed or sorted on, map no extents.
            skip_extents: !cli.json
                && matches!(cli.du, Some(Figure::Total | Figure::Apparent))
                && matches!(
                    cli.sort,
                    None | Some(SortBy::Total | SortBy::Apparent | SortBy::Name)
                ),
        },
        report: ReportOptions {
            format: match (cli.json, cli.du, cli.tree) {
                (true, _, _) => Format::Json,
                (false, Some(f), _) => Format::Du(f.column(apparent)),
                (false, None, true) => Format::Tree,
                (false, None, false) => Format::Text,
            },
            max_depth: if cli.summarize {
                Some(0)
            } else {
                cli.max_depth
            },
            unit: unit.1,
            columns: vec![
                if apparent { Fig::Apparent } else { Fig::Total },
                Fig::Exclusive,
                Fig::Shared,
                Fig::Reclaimable,
            ],
            header: !cli.no_header && !cli.null,
            null: cli.null,
            grand_total: cli.total,
            sort,
            top: cli.top,
            min_size,
            color,
        },
        stats: cli.stats,
    })
}
