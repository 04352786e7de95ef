//! The flags, as clap parses and validates them: nothing here decides what
//! they mean (that is [`super::resolve`]).
//!
//! The figures are spelled once, in [`Figure::ALL`] and [`Figure::name`]:
//! `--sort` and `--du` accept those names, and `--help`, the man page and
//! the completions list them from there.

use std::ffi::OsString;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::parser::ValueSource;
use clap::{ArgAction, ArgMatches, CommandFactory, FromArgMatches, Parser, ValueEnum};
use sdu::figures::Figure;

use super::help::after_help;

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
pub struct Cli {
    /// Files or directories to measure [default: .]
    #[arg(value_name = "PATH")]
    pub paths: Vec<OsString>,

    /// Display only a total for each argument (same as -d 0)
    #[arg(short, long, help_heading = "Which entries to print")]
    pub summarize: bool,

    /// Print the total for a directory only if it is N or fewer levels below the argument
    #[arg(
        short = 'd',
        long,
        value_name = "N",
        help_heading = "Which entries to print"
    )]
    pub max_depth: Option<u32>,

    /// Write counts for all files, not just directories
    #[arg(short, long, help_heading = "Which entries to print")]
    pub all: bool,

    /// Keep only the N largest entries (by the --sort figure, else Total);
    /// listed largest first unless --sort says otherwise
    #[arg(
        short = 'n',
        long,
        value_name = "N",
        help_heading = "Which entries to print"
    )]
    pub top: Option<usize>,

    /// Hide entries smaller than SIZE (by the --sort figure, else Total),
    /// e.g. 100M, 1G; hidden entries still count in their parents
    #[arg(long, value_name = "SIZE", help_heading = "Which entries to print")]
    pub min_size: Option<String>,

    /// Plan, among the PATHs, a set whose deletion frees at least SIZE
    /// (e.g. 50G), with as few entries as possible; prints what each adds
    /// and what they free together, counting shared data once. PATHs inside
    /// another PATH given are the candidates, seen in its scan (sdu
    /// --to-free 50G /mnt /mnt/snaps/*: what the live data shares stays).
    /// Deletes nothing
    #[arg(
        long,
        value_name = "SIZE",
        conflicts_with_all = ["du", "tree"],
        help_heading = "Which entries to print"
    )]
    pub to_free: Option<String>,

    /// Skip directories on different file systems
    #[arg(short = 'x', long, help_heading = "What to count")]
    pub one_file_system: bool,

    /// Dereference all symbolic links
    #[arg(short = 'L', long, help_heading = "What to count")]
    pub dereference: bool,

    /// Count sizes many times if hard linked
    #[arg(short = 'l', long, help_heading = "What to count")]
    pub count_links: bool,

    /// Exclude entries that match PATTERN (a shell glob, matched as du does)
    #[arg(long, value_name = "PATTERN", action = ArgAction::Append, help_heading = "What to count")]
    pub exclude: Vec<OsString>,

    /// Print apparent sizes rather than disk usage (the Apparent column,
    /// --sort total and --du total then mean the apparent size)
    #[arg(long, help_heading = "Sizes")]
    pub apparent_size: bool,

    /// Equivalent to --apparent-size --block-size=1
    #[arg(short = 'b', long, help_heading = "Sizes")]
    pub bytes: bool,

    // The unit flags below are read through `units`, which keeps their
    // order; their own fields only give clap something to parse into.
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
    /// except with --du or a block size in the environment)
    #[arg(short = 'h', long, help_heading = "Sizes")]
    human_readable: bool,

    /// Like -h, but use powers of 1000
    #[arg(long, help_heading = "Sizes")]
    si: bool,

    /// List the entries by FIGURE, largest first (or by path), instead of
    /// du's order; the tree view sorts siblings
    #[arg(long, value_name = "FIGURE", value_parser = sort_parser(), help_heading = "Output")]
    pub sort: Option<SortBy>,

    /// Print an indented tree with a bar per entry, largest first
    #[arg(long, conflicts_with_all = ["json", "du", "null"], help_heading = "Output")]
    pub tree: bool,

    /// Print only FIGURE in du's own format, SIZE<TAB>PATH, with du's units
    /// (1K blocks unless -h, -B, ... or the environment say otherwise)
    #[arg(
        long,
        value_name = "FIGURE",
        value_parser = figure_parser(),
        conflicts_with = "json",
        help_heading = "Output"
    )]
    pub du: Option<Figure>,

    /// Print one JSON document (all sizes in bytes)
    #[arg(long, help_heading = "Output")]
    pub json: bool,

    /// Produce a grand total
    #[arg(short = 'c', long, help_heading = "Output")]
    pub total: bool,

    /// End each output line with NUL, not newline (no header)
    #[arg(short = '0', long, help_heading = "Output")]
    pub null: bool,

    /// Do not print the header line
    #[arg(long, help_heading = "Output")]
    pub no_header: bool,

    /// Colour the tree view: auto (when stdout is a terminal and NO_COLOR
    /// is unset or empty), always, or never
    #[arg(
        long,
        value_name = "WHEN",
        value_enum,
        default_value_t = ColorWhen::Auto,
        help_heading = "Output"
    )]
    pub color: ColorWhen,

    /// Worker threads [default: the number of CPUs]
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024), help_heading = "Scan")]
    pub threads: Option<u32>,

    /// Do not show progress on stderr (shown only when stderr is a
    /// terminal and the scan takes a moment)
    #[arg(long, help_heading = "Scan")]
    pub no_progress: bool,

    /// Print counts and timings of the scan on stderr (files mapped with
    /// FIEMAP, files skipped and why, shared extents indexed)
    #[arg(long, help_heading = "Scan")]
    pub stats: bool,

    /// Print the man page or a shell completion script, and exit
    #[arg(long, value_name = "KIND", value_enum, help_heading = "Other")]
    pub generate: Option<Generate>,

    /// Print help
    #[arg(long, action = ArgAction::HelpShort, help_heading = "Other")]
    help: Option<bool>,

    /// Print version
    #[arg(short = 'V', long, action = ArgAction::Version, help_heading = "Other")]
    version: Option<bool>,

    /// The unit flags given, in command-line order.
    #[arg(skip)]
    pub units: Vec<UnitFlag>,
}

/// What `--sort` orders by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortBy {
    Figure(Figure),
    Name,
}

/// One of the flags that choose how sizes are printed. Like du, sdu lets
/// the last one win, so [`Cli::units`] keeps them in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnitFlag {
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
    /// `-B`, `--block-size`, not yet parsed.
    BlockSize(String),
}

/// When `--color` colours.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorWhen {
    Auto,
    Always,
    Never,
}

/// What `--generate` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Generate {
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

/// Parses the process's arguments; a usage error, `--help` or `--version`
/// exits here, as clap does.
pub fn parse() -> Cli {
    parse_from(std::env::args_os()).unwrap_or_else(|e| e.exit())
}

/// Parses `args` (the program name first).
pub fn parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let matches = Cli::command().try_get_matches_from(args)?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    cli.units = unit_flags(&cli, &matches);
    Ok(cli)
}

/// The unit flags of `m` in the order they were given.
fn unit_flags(cli: &Cli, m: &ArgMatches) -> Vec<UnitFlag> {
    let mut given: Vec<(usize, UnitFlag)> = Vec::new();
    let mut add = |id: &str, flag: UnitFlag| {
        if m.value_source(id) == Some(ValueSource::CommandLine) {
            if let Some(i) = m.indices_of(id).and_then(Iterator::max) {
                given.push((i, flag));
            }
        }
    };
    add("human_readable", UnitFlag::Human);
    add("si", UnitFlag::Si);
    add("kibibytes", UnitFlag::Kibibytes);
    add("mebibytes", UnitFlag::Mebibytes);
    add("bytes", UnitFlag::Bytes);
    if let Some(b) = &cli.block_size {
        add("block_size", UnitFlag::BlockSize(b.clone()));
    }
    given.sort_by_key(|&(i, _)| i);
    given.into_iter().map(|(_, f)| f).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_flags_keep_their_order() {
        let cli = parse_from(["sdu", "-k", "--si", "-B", "4K", "-h", "x"]).unwrap();
        assert_eq!(
            cli.units,
            [
                UnitFlag::Kibibytes,
                UnitFlag::Si,
                UnitFlag::BlockSize("4K".into()),
                UnitFlag::Human
            ]
        );
        let cli = parse_from(["sdu", "--block-size=M", "-mb"]).unwrap();
        assert_eq!(
            cli.units,
            [
                UnitFlag::BlockSize("M".into()),
                UnitFlag::Mebibytes,
                UnitFlag::Bytes
            ]
        );
        assert!(parse_from(["sdu"]).unwrap().units.is_empty());
    }

    #[test]
    fn figures_by_name() {
        for f in Figure::ALL {
            let cli = parse_from(["sdu", "--du", f.name(), "--sort", f.name()]).unwrap();
            assert_eq!((cli.du, cli.sort), (Some(f), Some(SortBy::Figure(f))));
        }
        let cli = parse_from(["sdu", "--sort", "name"]).unwrap();
        assert_eq!(cli.sort, Some(SortBy::Name));
        assert!(parse_from(["sdu", "--du", "name"]).is_err());
        assert!(parse_from(["sdu", "--sort", "Total"]).is_err());
    }
}
