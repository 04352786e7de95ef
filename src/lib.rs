//! sdu: a disk usage tool that understands shared data.
//!
//! The library does the work; the binary only parses flags. Data flows one
//! way: [`walk`] (parallel, fd-relative statx) → [`tree`] (roll-up per
//! directory) → [`report`] (text or JSON).
//! Files that may share extents are mapped with FIEMAP during the walk
//! ([`probe`] decides which, [`fiemap`] maps them) and their shared extents
//! indexed and swept ([`extents`]) before the roll-up credits them. See DESIGN.md in the shared docs
//! for what every figure means and what it is checked against.

mod error;
pub mod extents;
pub mod fiemap;
pub mod figures;
pub mod glob;
pub mod messages;
pub mod probe;
pub mod progress;
pub mod quote;
pub mod report;
pub mod tree;
pub mod units;
pub mod walk;

use std::fmt::Write as _;
use std::io::Write;
use std::time::Instant;

use extents::Granularity;
use walk::{Counters, Walk};

pub use error::Error;
pub use messages::Messages;
pub use report::ReportOptions;
pub use walk::{Progress, WalkOptions};

/// Everything a run needs, resolved from the command line.
#[derive(Clone, Debug, Default)]
pub struct Config {
    pub walk: WalkOptions,
    pub report: ReportOptions,
    /// Print `--stats` on the messages after the report.
    pub stats: bool,
}

/// What a run ended with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Entries that could not be read (each was reported on the messages).
    pub errors: u64,
    pub counters: Counters,
}

/// Walks, rolls up and reports. Per-entry failures go to `msgs` and are
/// counted in the outcome; only a failure to write the report is an `Err`.
pub fn run(cfg: &Config, out: &mut dyn Write, msgs: &Messages) -> Result<Outcome, Error> {
    let t0 = Instant::now();
    let walked = walk::walk(&cfg.walk, msgs)?;
    let t_walk = t0.elapsed();
    let Walk {
        nodes,
        links,
        files,
        index,
        filesystems,
        roots: _,
        counters,
    } = walked;
    let granularity = |key: u32| {
        let fs = walk::fs_of_key(key);
        filesystems
            .iter()
            .find(|f| f.index == fs)
            .map_or(Granularity::Block, |f| f.granularity)
    };
    let t1 = Instant::now();
    let indexed = index.len();
    let sweep = index.into_units(granularity);
    let t_sweep = t1.elapsed();
    let t2 = Instant::now();
    let dirs = nodes.len().saturating_sub(1);
    let tree = tree::Tree::build(nodes, links, &files, &sweep, granularity);
    let t_tree = t2.elapsed();
    let (segments, units) = (sweep.segment_count(), sweep.unit_count());
    drop(sweep);
    let errors = msgs.errors();
    let t3 = Instant::now();
    report::write(out, &tree, &cfg.walk.roots, errors, &cfg.report)?;
    out.flush()?;
    let t_report = t3.elapsed();
    if counters.unverified_files > 0 {
        msgs.warn(format_args!(
            "{} file(s), {} bytes, could not be mapped and were counted as exclusive",
            counters.unverified_files, counters.unverified_bytes
        ));
    }
    if cfg.stats {
        let mut s = String::new();
        let _ = writeln!(s, "sdu stats:");
        let _ = writeln!(s, "  entries stat-ed        {}", counters.entries);
        let _ = writeln!(s, "  nodes (dirs, -a files) {dirs}");
        for fs in &filesystems {
            let _ = writeln!(
                s,
                "  filesystem {}           {}{}",
                fs.index,
                fs.name(),
                if fs.can_share {
                    " (may share)"
                } else {
                    " (cannot share)"
                }
            );
        }
        let _ = writeln!(s, "  files mapped (FIEMAP)  {}", counters.fiemap_files);
        let _ = writeln!(s, "  FIEMAP calls           {}", counters.fiemap_calls);
        for skip in probe::Skip::ALL {
            let _ = writeln!(
                s,
                "  not mapped: {:<34} {}",
                skip.describe(),
                counters.skipped[skip.index()]
            );
        }
        let _ = writeln!(
            s,
            "  not mapped: could not be read          {} ({} bytes counted as exclusive)",
            counters.unverified_files, counters.unverified_bytes
        );
        let _ = writeln!(s, "  files with shared data {}", files.len());
        let _ = writeln!(s, "  shared extents indexed {indexed}");
        let _ = writeln!(s, "  segments / units       {segments} / {units}");
        let _ = writeln!(
            s,
            "  time: walk {:.3}s, sweep {:.3}s, roll-up {:.3}s, report {:.3}s",
            t_walk.as_secs_f64(),
            t_sweep.as_secs_f64(),
            t_tree.as_secs_f64(),
            t_report.as_secs_f64()
        );
        msgs.raw(&s);
    }
    Ok(Outcome { errors, counters })
}
