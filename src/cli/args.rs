//! The flags, as clap parses and validates them: nothing here decides what
//! they mean (that is [`super::resolve`]).
//!
//! The figures are spelled once, in [`Figure::ALL`] and [`Figure::name`]:
//! `--sort` and `--du` accept those names, and `--help`, the man page and
//! the completions list them from there.

use std::ffi::OsString;

use clap::builder::PossibleValue;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{ArgAction, CommandFactory, FromArgMatches, Parser, ValueEnum, ValueHint};
use sdu::figures::Figure;

use super::arg_id::ArgId;
pub(crate) use super::browse_flags::{BrowseFlags, ColorWhen};
use super::getopt::{self, GivenOption, Scan};
use super::help::after_help;
use super::status::ExitStatus;
use super::usage::UsageError;

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
    args_override_self = true,
    max_term_width = 100,
    after_help = after_help()
)]
pub(crate) struct Cli {
    /// Files or directories to measure [default: .]
    #[arg(value_name = "PATH", value_hint = ValueHint::AnyPath)]
    pub(crate) paths: Vec<OsString>,

    /// Display only a total for each argument (same as -d 0)
    #[arg(short, long, help_heading = "Which entries to print")]
    pub(crate) summarize: bool,

    /// Print the total for a directory only if it is N or fewer levels below the argument
    #[arg(
        short = 'd',
        long,
        value_name = "N",
        action = ArgAction::Append,
        help_heading = "Which entries to print"
    )]
    pub(crate) max_depth: Vec<String>,

    /// Write counts for all files, not just directories
    #[arg(short, long, help_heading = "Which entries to print")]
    pub(crate) all: bool,

    /// Keep only the N largest entries (by the --sort figure, else Total);
    /// listed largest first unless --sort says otherwise
    #[arg(short = 'n', long, value_name = "N")]
    #[arg(help_heading = "Which entries to print")]
    pub(crate) top: Option<usize>,

    /// Hide entries smaller than SIZE (by the --sort figure, else Total),
    /// e.g. 100M, 1G; hidden entries still count in their parents
    #[arg(long, value_name = "SIZE", help_heading = "Which entries to print")]
    pub(crate) min_size: Option<String>,

    /// Plan, among the PATHs, a set whose deletion frees at least SIZE
    /// (e.g. 50G), with as few entries as possible; prints what each adds
    /// and what they free together, counting shared data once. PATHs inside
    /// another PATH given are the candidates, seen in its scan (sdu
    /// --to-free 50G /mnt /mnt/snaps/*: what the live data shares stays).
    /// Deletes nothing
    #[arg(
        long,
        value_name = "SIZE",
        conflicts_with_all = [ArgId::Du, ArgId::Tree],
        help_heading = "Which entries to print"
    )]
    pub(crate) to_free: Option<String>,

    /// With --to-free: take the candidates oldest first, as snapshots are
    /// pruned, until they free SIZE together. The age: a Btrfs subvolume
    /// root's creation time (otime), else the modification time
    #[arg(long, requires = ArgId::ToFree, conflicts_with_all = [ArgId::NewestFirst, ArgId::Import])]
    #[arg(help_heading = "Which entries to print")]
    pub(crate) oldest_first: bool,

    /// With --to-free: take the candidates newest first (see --oldest-first)
    #[arg(long, requires = ArgId::ToFree, conflicts_with = ArgId::Import)]
    #[arg(help_heading = "Which entries to print")]
    pub(crate) newest_first: bool,

    /// List the Btrfs subvolumes of the scan by origin, each snapshot oldest first: created, Total,
    /// Exclusive, what deleting it frees alone and with every older snapshot of its origin; --sort,
    /// --top, --min-size choose among an origin's snapshots by Frees alone (reclaimable, the
    /// default), total, exclusive or path (name). With --to-free: which snapshots free SIZE
    #[arg(long, conflicts_with_all = [ArgId::Du, ArgId::Tree, ArgId::Export, ArgId::Import, ArgId::Compare, ArgId::Interactive])]
    #[arg(help_heading = "Which entries to print")]
    pub(crate) snapshots: bool,

    /// For the filesystem holding each PATH (default .), a table whose rows add up to df's Used
    #[arg(long, conflicts_with_all = [ArgId::Du, ArgId::Tree, ArgId::Export, ArgId::Import, ArgId::Compare, ArgId::Interactive, ArgId::Snapshots, ArgId::ToFree], help_heading = "Which entries to print")]
    pub(crate) df: bool,

    /// Exclude entries smaller than SIZE if positive, or entries greater
    /// than SIZE if negative (by the --du figure, else Total; as du's)
    #[arg(short = 't', long, value_name = "SIZE", action = ArgAction::Append, help_heading = "Which entries to print")]
    pub(crate) threshold: Vec<String>,

    /// List files alone (every non-directory, as -a finds them), no
    /// directory: --sort, --top and --min-size then pick among files
    #[arg(
        long,
        conflicts_with_all = [ArgId::Tree, ArgId::Interactive, ArgId::ToFree, ArgId::Summarize],
        help_heading = "Which entries to print"
    )]
    pub(crate) files_only: bool,

    /// List only entries whose newest modification (or --time=WORD's time)
    /// is older than WHEN: a DURATION ago (30d, 12h, 2w, 1y; s, m, h, d, w,
    /// y) or a DATE (2024-07-14, 2024-07-14 17:31, in TZ's zone). A
    /// directory's time is the newest of anything in it
    #[arg(
        long,
        value_name = "WHEN",
        conflicts_with_all = [ArgId::Import, ArgId::ToFree, ArgId::Interactive],
        help_heading = "Which entries to print"
    )]
    pub(crate) older_than: Option<String>,

    /// For directories do not include the size of subdirectories
    #[arg(short = 'S', long, help_heading = "What to count")]
    pub(crate) separate_dirs: bool,

    /// Skip directories on different file systems
    #[arg(short = 'x', long, help_heading = "What to count")]
    pub(crate) one_file_system: bool,

    /// Dereference all symbolic links
    #[arg(short = 'L', long, help_heading = "What to count")]
    dereference: bool,

    /// Dereference only symlinks that are listed on the command line
    #[arg(short = 'D', long, help_heading = "What to count")]
    dereference_args: bool,

    /// Equivalent to --dereference-args (-D)
    #[arg(short = 'H', help_heading = "What to count")]
    dereference_args_h: bool,

    /// Don't follow any symbolic links (the default; the last of -L, -P, -H
    /// and -D wins)
    #[arg(short = 'P', long, help_heading = "What to count")]
    no_dereference: bool,

    /// Count sizes many times if hard linked
    #[arg(short = 'l', long, help_heading = "What to count")]
    pub(crate) count_links: bool,

    /// Exclude entries that match PATTERN (a shell glob, matched as du does)
    #[arg(long, value_name = "PATTERN", action = ArgAction::Append, help_heading = "What to count")]
    pub(crate) exclude: Vec<OsString>,

    /// Exclude entries that match any pattern in FILE (one per line)
    #[arg(short = 'X', long, value_name = "FILE", action = ArgAction::Append, value_hint = ValueHint::FilePath, help_heading = "What to count")]
    pub(crate) exclude_from: Vec<OsString>,

    /// Exclude directories holding a cache directory tag: a regular file
    /// named CACHEDIR.TAG that starts with Signature:
    /// 8a477f597d28d172789f06886806bc55 (as ncdu's --exclude-caches and GNU
    /// tar's --exclude-caches-all; a PATH given is measured all the same)
    #[arg(long, help_heading = "What to count")]
    pub(crate) exclude_caches: bool,

    /// Exclude directories on Linux's kernel filesystems (proc, sysfs,
    /// cgroup, cgroup2, debugfs, tracefs, securityfs, pstore, bpf,
    /// selinuxfs, binfmt_misc, devpts), by their statfs type, as ncdu
    /// does; a PATH given is measured all the same
    #[arg(long, help_heading = "What to count")]
    pub(crate) exclude_kernfs: bool,

    /// Measure the NUL-terminated file names listed in file F (- for
    /// standard input) instead of PATHs
    #[arg(long, value_name = "F", value_hint = ValueHint::FilePath, help_heading = "What to count")]
    pub(crate) files0_from: Option<OsString>,

    /// List inode usage instead of block usage (--du: the inodes figure;
    /// the table: an Inodes column)
    #[arg(long, help_heading = "What to count")]
    pub(crate) inodes: bool,

    /// Print apparent sizes rather than disk usage (the Apparent column,
    /// --sort total and --du total then mean the apparent size)
    #[arg(short = 'A', long, help_heading = "Sizes")]
    pub(crate) apparent_size: bool,

    /// Equivalent to --apparent-size --block-size=1
    #[arg(short = 'b', long, help_heading = "Sizes")]
    pub(crate) bytes: bool,

    // The unit flags below are read through `units`, which keeps their
    // order; their own fields only give clap something to parse into.
    /// Like --block-size=1K
    #[arg(short = 'k', help_heading = "Sizes")]
    kibibytes: bool,

    /// Like --block-size=1M
    #[arg(short = 'm', help_heading = "Sizes")]
    mebibytes: bool,

    /// Scale sizes by SIZE before printing them (e.g. 1, 4K, 1MiB, MB)
    #[arg(short = 'B', long, value_name = "SIZE", action = ArgAction::Append, help_heading = "Sizes")]
    block_size: Vec<String>,

    /// Print sizes in human readable format, powers of 1024 (the default,
    /// except with --du or a block size in the environment)
    #[arg(short = 'h', long, help_heading = "Sizes")]
    human_readable: bool,

    /// Like -h, but use powers of 1000
    #[arg(long, help_heading = "Sizes")]
    si: bool,

    /// List the entries by FIGURE, largest first (or by path), instead of
    /// du's order; the tree view sorts siblings
    #[arg(long, value_name = "FIGURE", value_parser = sort_parser(), help_heading = "Output")]
    pub(crate) sort: Option<SortBy>,

    /// List in the opposite order: smallest first (--sort FIGURE, or
    /// --top), paths from last to first (--sort name), du's order read
    /// backwards without either; the tree view reverses each directory's
    /// entries
    #[arg(long, help_heading = "Output")]
    pub(crate) reverse: bool,

    /// Print an indented tree with a bar per entry, largest first
    #[arg(long, conflicts_with_all = [ArgId::Json, ArgId::Du, ArgId::Null], help_heading = "Output")]
    pub(crate) tree: bool,

    /// Print only FIGURE in du's own format, SIZE<TAB>PATH, with du's units
    /// (1K blocks unless -h, -B, ... or the environment say otherwise)
    #[arg(
        long,
        value_name = "FIGURE",
        value_parser = figure_parser(),
        conflicts_with = ArgId::Json,
        help_heading = "Output"
    )]
    pub(crate) du: Option<Figure>,

    /// Show the time of the last modification of any file in the entry (or,
    /// with WORD, atime, access, use, ctime or status)
    #[arg(
        long,
        value_name = "WORD",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "mtime",
        help_heading = "Output"
    )]
    pub(crate) time: Option<String>,

    /// Show times using STYLE: full-iso, long-iso (the default), iso, or
    /// +FORMAT (as date's); the TIME_STYLE variable when not given
    #[arg(
        long,
        value_name = "STYLE",
        value_parser = time_style_parser(),
        hide_possible_values = true,
        help_heading = "Output"
    )]
    pub(crate) time_style: Option<String>,

    /// Browse the tree full-screen after the scan: the four figures of every
    /// entry, sorted as asked; mark entries (Space) to see what deleting
    /// all of them frees, shared data counted once; d deletes them after
    /// you type yes, never following a symlink or leaving the filesystem
    /// (? lists the keys)
    #[arg(
        short = 'i',
        long,
        conflicts_with_all = [ArgId::Json, ArgId::Du, ArgId::Tree, ArgId::ToFree, ArgId::Null],
        help_heading = "Output"
    )]
    pub(crate) interactive: bool,

    /// Print one JSON document (all sizes in bytes)
    #[arg(long, help_heading = "Output")]
    pub(crate) json: bool,

    /// `--html FILE` and `--html-area`.
    #[command(flatten)]
    pub(crate) page: page::PageArgs,

    /// Produce a grand total
    #[arg(short = 'c', long, help_heading = "Output")]
    pub(crate) total: bool,

    /// End each output line with NUL, not newline (no header)
    #[arg(short = '0', long, help_heading = "Output")]
    pub(crate) null: bool,

    /// Do not print the header line
    #[arg(long, help_heading = "Output")]
    pub(crate) no_header: bool,

    /// Colour the tree view: auto (when stdout is a terminal and NO_COLOR
    /// is unset or empty), always, or never (ncdu's dark and dark-bg are
    /// auto, off is never)
    #[arg(
        long,
        value_name = "WHEN",
        value_enum,
        default_value_t = ColorWhen::Auto,
        help_heading = "Output"
    )]
    pub(crate) color: ColorWhen,

    /// Worker threads [default: the number of CPUs, or 8 when the tree is
    /// not in memory (cold cache): threads that wait on the disk; 4 on
    /// XFS, where more wait on each other's inode reads, and as root on
    /// Btrfs, where one search reads many inodes]
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024), help_heading = "Scan")]
    pub(crate) threads: Option<u32>,

    /// Do not show progress on stderr (shown only when stderr is a
    /// terminal and the scan takes a moment)
    #[arg(long, help_heading = "Scan")]
    pub(crate) no_progress: bool,

    /// Read every file's extents with FIEMAP, even where sdu could read
    /// Btrfs's extent items directly (as root, with CAP_SYS_ADMIN)
    #[arg(long, help_heading = "Scan")]
    pub(crate) fiemap: bool,

    /// Btrfs without root: map every copy of a file that is unchanged
    /// across snapshots with its own FIEMAP, instead of once (slower; exact
    /// even after a deduplication that ran on one copy after the snapshot)
    #[arg(long, help_heading = "Scan")]
    pub(crate) map_each_copy: bool,

    /// Memory for the index of shared extents (16 bytes a mapping): past
    /// SIZE (e.g. 2G) it spills sorted runs to a temporary file in TMPDIR,
    /// else /tmp [default: half the available memory]
    #[arg(long, value_name = "SIZE", help_heading = "Scan")]
    pub(crate) index_memory: Option<String>,

    /// Print counts and timings of the scan on stderr (files mapped with
    /// FIEMAP, files skipped and why, shared extents indexed)
    #[arg(long, help_heading = "Scan")]
    pub(crate) stats: bool,

    /// --export and --export-format.
    #[command(flatten)]
    pub(crate) saving: export::Saving,

    /// Read a scan saved with --export (or ncdu -o) from FILE (- for
    /// standard input) instead of scanning; every report and --to-free
    /// work on it. PATHs are then --to-free candidates, by their paths in
    /// the saved scan
    #[arg(
        long,
        value_name = "FILE",
        value_hint = ValueHint::FilePath,
        conflicts_with_all = [ArgId::OneFileSystem, ArgId::Dereference, ArgId::DereferenceArgs, ArgId::DereferenceArgsH, ArgId::CountLinks, ArgId::Exclude, ArgId::ExcludeFrom, ArgId::ExcludeCaches, ArgId::ExcludeKernfs, ArgId::Files0From],
        help_heading = "Saved scans"
    )]
    pub(crate) import: Option<OsString>,

    /// Compare with the saved scan OLD (--export's, or ncdu -o's): for
    /// every entry the change of each figure since OLD, and whether it is
    /// new, gone, or its sharing changed (Exclusive moved by more or less
    /// than Total: a snapshot deleted leaves its data to its origin, whose
    /// Exclusive grows while Total does not); largest growth of Total
    /// first (--sort, --top, -d, -a, -s apply). Entries match by name from each root, so a scan of the tree
    /// mounted elsewhere compares. The new scan is PATHs, or --import FILE
    #[arg(
        long,
        value_name = "OLD",
        value_hint = ValueHint::FilePath,
        conflicts_with_all = [ArgId::Export, ArgId::ToFree, ArgId::Du, ArgId::Tree, ArgId::Threshold, ArgId::FilesOnly, ArgId::OlderThan, ArgId::Time],
        help_heading = "Saved scans"
    )]
    pub(crate) compare: Option<OsString>,

    #[command(flatten)]
    pub(crate) browse: BrowseFlags,

    /// Print the man page or a shell completion script, and exit
    #[arg(long, value_name = "KIND", value_enum, help_heading = "Other")]
    pub(crate) generate: Option<Generate>,

    /// Print help
    #[arg(long, action = ArgAction::HelpShort, help_heading = "Other")]
    help: Option<bool>,

    /// Print version
    #[arg(short = 'V', long, action = ArgAction::Version, help_heading = "Other")]
    version: Option<bool>,

    /// The unit flags given, in command-line order.
    #[arg(skip)]
    pub(crate) units: Vec<UnitFlag>,

    /// How symlinks are followed: the last of -L, -P, -H and -D.
    #[arg(skip)]
    pub(crate) deref: Deref,

    /// Every option as given, in order, spelled as given (`-t`, or
    /// `--threshold` for any abbreviation of it), for messages that name
    /// the option.
    #[arg(skip)]
    pub(crate) given: Vec<GivenOption>,

    /// sdu was run under the name `du`.
    #[arg(skip)]
    pub(crate) invoked_as_du: bool,
}

impl Cli {
    /// du's mode: run as `du`, or `--du FIGURE` given. du's counting
    /// rules, texts and exit statuses go with it.
    pub(crate) fn du_mode(&self) -> bool {
        self.invoked_as_du || self.du.is_some()
    }
}

/// Which symlinks to follow (du's -P, -H/-D, -L).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Deref {
    /// `-P`, the default: none.
    #[default]
    None,
    /// `-H`, `-D`, `--dereference-args`: those named on the command line.
    Args,
    /// `-L`: all.
    All,
}

/// What `--sort` orders by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SortBy {
    Figure(Figure),
    Name,
}

/// One of the flags that choose how sizes are printed. Like du, sdu lets
/// the last one win, so [`Cli::units`] keeps them in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum UnitFlag {
    /// `-h`, `--human-readable`.
    Human,
    /// `--si`.
    Si,
    /// `-k`.
    Kibibytes,
    /// `-m`.
    Mebibytes,
    /// `-b`, `--bytes` (its `--apparent-size` half is [`Cli::bytes`]).
    Bytes,
    /// `-B`, `--block-size` SIZE, not yet parsed, and the option as
    /// spelled (`-B`, `--block-size`).
    BlockSize { spelled: String, size: String },
}

/// What `--generate` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Generate {
    Man,
    Bash,
    Zsh,
    Fish,
    Elvish,
    Powershell,
}

/// The figure called `name`.
fn figure_named(name: &str) -> Option<Figure> {
    Figure::ALL.into_iter().find(|f| f.name() == name)
}

/// `--du FIGURE`: a figure by its [`Figure::name`].
fn figure_parser() -> impl TypedValueParser<Value = Figure> {
    PossibleValuesParser::new(Figure::ALL.map(Figure::name))
        .map(|s| figure_named(&s).expect("clap accepts only the figures' names"))
}

/// `--sort FIGURE`: a figure by its name, or `name`.
fn sort_parser() -> impl TypedValueParser<Value = SortBy> {
    let names = Figure::ALL.map(Figure::name).into_iter().chain(["name"]);
    PossibleValuesParser::new(names).map(|s| match figure_named(&s) {
        Some(f) => SortBy::Figure(f),
        None => SortBy::Name,
    })
}

/// `--time-style STYLE`: any text (du checks it when it is used), with
/// du's styles as the values the completions offer.
fn time_style_parser() -> impl TypedValueParser<Value = String> {
    #[derive(Clone)]
    struct Styles;
    impl TypedValueParser for Styles {
        type Value = String;
        fn parse_ref(
            &self,
            cmd: &clap::Command,
            arg: Option<&clap::Arg>,
            value: &std::ffi::OsStr,
        ) -> Result<String, clap::Error> {
            clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
        }
        fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
            let styles = ["full-iso", "long-iso", "iso", "+FORMAT"];
            Some(Box::new(styles.into_iter().map(PossibleValue::new)))
        }
    }
    Styles
}

/// Why the command line ends the run before anything is read.
#[derive(Debug)]
pub(crate) enum Stop {
    /// clap has its say, with status 0: `--help` or `--version`.
    Clap(clap::Error),
    /// A usage error, in one style in both modes, du's: `PROGRAM: what`,
    /// then `Try 'PROGRAM --help' for more information.` getopt's words
    /// for what getopt refuses (`unrecognized option '--foo'`, `invalid
    /// option -- 'z'`), clap's for a value it refuses. du's status (1)
    /// under the name `du` or with `--du` (`du`), else sdu's (2).
    Usage {
        /// The messages.
        error: UsageError,
        /// du's texts and status.
        du: bool,
    },
}

impl Stop {
    /// Prints what stops the run (clap's text as clap prints it, a usage
    /// error after `program:`) and gives the status to end with.
    pub(crate) fn report(self, program: &str) -> ExitStatus {
        match self {
            Stop::Clap(e) => {
                let _ = e.print();
                if e.use_stderr() {
                    ExitStatus::Fatal
                } else {
                    ExitStatus::Success
                }
            }
            Stop::Usage { error, du } => error.report(program, du),
        }
    }
}

/// Reads the command line (the program name first): getopt reads it once,
/// clap parses what getopt hands back. `du`: run under the name du, whose
/// abbreviations of long options are resolved among du's first.
///
/// # Errors
/// [`Stop`]: help, the version, or a usage error, each in the words of
/// the mode asked for (du's when run as du or with `--du`, else clap's).
pub(crate) fn parse_from<I, T>(args: I, du: bool) -> Result<Cli, Stop>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let cmd = Cli::command();
    let scan = getopt::scan(&cmd, &args, du);
    // `--du FIGURE` asks for du's texts too, even when its value is missing.
    let du_texts =
        du || scan.given.iter().any(|g| g.id == ArgId::Du) || scan.lacking == Some(ArgId::Du);
    if !scan.errors.is_empty() && du_texts {
        return Err(Stop::Usage {
            error: UsageError {
                lines: scan.errors,
                try_help: true,
            },
            du: true,
        });
    }
    let refused = |errors: Vec<String>| Stop::Usage {
        error: UsageError {
            lines: errors,
            try_help: true,
        },
        du: false,
    };
    let stop = |e| clap_stop(e, du_texts);
    let matches = match cmd.try_get_matches_from(&scan.args) {
        Ok(m) => m,
        // What getopt refused, in getopt's words rather than clap's; but
        // `--help` before it still helps, as clap sees it first.
        Err(e) if e.use_stderr() && !scan.errors.is_empty() => return Err(refused(scan.errors)),
        Err(e) => return Err(stop(e)),
    };
    if !scan.errors.is_empty() {
        // clap took the refused argument: getopt's words, then.
        return Err(refused(scan.errors));
    }
    let mut cli = Cli::from_arg_matches(&matches).map_err(stop)?;
    cli.units = unit_flags(&scan);
    cli.deref = deref(&scan.given);
    cli.given = scan.given;
    cli.invoked_as_du = du;
    Ok(cli)
}

/// clap's error as a usage error in du's style: its first line (without
/// `error: `); in sdu's own mode also its indented lines (the possible
/// values, a tip), which du has no word for. clap's usage line and its
/// pointer to `--help` give way to `Try 'sdu --help'`. Help and the
/// version stay clap's.
fn clap_stop(e: clap::Error, du_texts: bool) -> Stop {
    if !e.use_stderr() {
        return Stop::Clap(e);
    }
    let text = e.to_string();
    let mut lines = text.lines();
    let mut line = lines
        .next()
        .unwrap_or("")
        .trim_start_matches("error: ")
        .to_owned();
    if !du_texts {
        for more in lines.take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more")) {
            if more.starts_with("  ") {
                line.push('\n');
                line.push_str(more);
            }
        }
    }
    Stop::Usage {
        error: UsageError::usage(line),
        du: du_texts,
    }
}

/// How symlinks are followed: the last of -L, -P, -H and -D given.
fn deref(given: &[GivenOption]) -> Deref {
    given
        .iter()
        .rev()
        .find_map(|g| match g.id {
            ArgId::Dereference => Some(Deref::All),
            ArgId::DereferenceArgs | ArgId::DereferenceArgsH => Some(Deref::Args),
            ArgId::NoDereference => Some(Deref::None),
            _ => None,
        })
        .unwrap_or_default()
}

/// The unit flags of the command line in the order they were given.
fn unit_flags(scan: &Scan) -> Vec<UnitFlag> {
    scan.given
        .iter()
        .filter_map(|g| {
            Some(match g.id {
                ArgId::HumanReadable => UnitFlag::Human,
                ArgId::Si => UnitFlag::Si,
                ArgId::Kibibytes => UnitFlag::Kibibytes,
                ArgId::Mebibytes => UnitFlag::Mebibytes,
                ArgId::Bytes => UnitFlag::Bytes,
                ArgId::BlockSize => UnitFlag::BlockSize {
                    spelled: g.spelled.clone(),
                    size: g.value.as_ref()?.to_string_lossy().into_owned(),
                },
                _ => return None,
            })
        })
        .collect()
}

pub(crate) mod export;
pub(crate) mod page;

#[cfg(test)]
mod tests;
