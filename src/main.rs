//! The `sdu` binary: flags in, a [`sdu::Config`] out, exit status back.
//!
//! Exit status: 0 when everything was read, 1 when some entries could not
//! be read (each named on stderr), 2 on a usage or fatal error.

use std::ffi::OsString;
use std::io::{self, BufWriter};
use std::os::unix::ffi::OsStringExt;
use std::process::ExitCode;

use clap::parser::ValueSource;
use clap::{ArgAction, CommandFactory, FromArgMatches, Parser};
use sdu::glob::Excludes;
use sdu::report::{Column, Format};
use sdu::units::{Unit, parse_block_size};
use sdu::{Config, Messages, ReportOptions, WalkOptions};

/// Summarize disk usage, counting shared (reflinked, snapshotted,
/// deduplicated) data once.
#[derive(Parser, Debug)]
#[command(name = "sdu", version, disable_help_flag = true, max_term_width = 100)]
struct Cli {
    /// Files or directories to measure [default: .]
    #[arg(value_name = "PATH")]
    paths: Vec<OsString>,

    /// Display only a total for each argument (same as -d 0)
    #[arg(short, long)]
    summarize: bool,

    /// Print the total for a directory only if it is N or fewer levels below the argument
    #[arg(short = 'd', long, value_name = "N")]
    max_depth: Option<u32>,

    /// Write counts for all files, not just directories
    #[arg(short, long)]
    all: bool,

    /// Skip directories on different file systems
    #[arg(short = 'x', long)]
    one_file_system: bool,

    /// Dereference all symbolic links
    #[arg(short = 'L', long)]
    dereference: bool,

    /// Count sizes many times if hard linked
    #[arg(short = 'l', long)]
    count_links: bool,

    /// Print apparent sizes rather than disk usage
    #[arg(long)]
    apparent_size: bool,

    /// Equivalent to --apparent-size --block-size=1
    #[arg(short = 'b', long)]
    bytes: bool,

    /// Like --block-size=1K
    #[arg(short = 'k')]
    kibibytes: bool,

    /// Like --block-size=1M
    #[arg(short = 'm')]
    mebibytes: bool,

    /// Scale sizes by SIZE before printing them (e.g. 1, 4K, 1MiB, MB)
    #[arg(short = 'B', long, value_name = "SIZE")]
    block_size: Option<String>,

    /// Print sizes in human readable format, powers of 1024 (the default)
    #[arg(short = 'h', long)]
    human_readable: bool,

    /// Like -h, but use powers of 1000
    #[arg(long)]
    si: bool,

    /// Produce a grand total
    #[arg(short = 'c', long)]
    total: bool,

    /// Exclude entries that match PATTERN (a shell glob, matched as du does)
    #[arg(long, value_name = "PATTERN", action = ArgAction::Append)]
    exclude: Vec<OsString>,

    /// End each output line with NUL, not newline (no header)
    #[arg(short = '0', long)]
    null: bool,

    /// Do not print the header line
    #[arg(long)]
    no_header: bool,

    /// Print one JSON document (all sizes in bytes)
    #[arg(long)]
    json: bool,

    /// Worker threads [default: the number of CPUs]
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    threads: Option<u32>,

    /// Print counts and timings of the scan on stderr (files mapped with
    /// FIEMAP, files skipped and why, shared extents indexed)
    #[arg(long)]
    stats: bool,

    /// Print help
    #[arg(long, action = ArgAction::Help)]
    help: Option<bool>,
}

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    let cfg = match config(cli, &matches) {
        Ok(c) => c,
        Err(msg) => {
            eprintln!("sdu: {msg}\nTry 'sdu --help' for more information.");
            return ExitCode::from(2);
        }
    };
    let msgs = Messages::default();
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(64 * 1024, stdout.lock());
    match sdu::run(&cfg, &mut out, &msgs) {
        Ok(o) => ExitCode::from(u8::from(o.errors > 0)),
        // `sdu | head` closing the pipe is not an error.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
            ExitCode::from(u8::from(msgs.errors() > 0))
        }
        Err(e) => {
            let _ = out.into_parts();
            eprintln!("sdu: write error: {e}");
            ExitCode::from(2)
        }
    }
}

/// Resolves the flags into a [`Config`]; the error is a usage message.
fn config(cli: Cli, m: &clap::ArgMatches) -> Result<Config, String> {
    if cli.summarize && cli.all {
        return Err("cannot both summarize and show all entries".into());
    }
    if cli.summarize && cli.max_depth.is_some_and(|d| d > 0) {
        return Err(format!(
            "warning: summarizing conflicts with --max-depth={}",
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
    let apparent = cli.apparent_size || cli.bytes;
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
        },
        report: ReportOptions {
            format: if cli.json { Format::Json } else { Format::Text },
            max_depth: if cli.summarize {
                Some(0)
            } else {
                cli.max_depth
            },
            unit: unit.1,
            columns: vec![
                if apparent {
                    Column::Apparent
                } else {
                    Column::Total
                },
                Column::Exclusive,
                Column::Shared,
                Column::Reclaimable,
            ],
            header: !cli.no_header && !cli.null,
            null: cli.null,
            grand_total: cli.total,
        },
        stats: cli.stats,
    })
}
