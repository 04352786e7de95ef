//! sdu: a disk usage tool that understands shared data.
//!
//! For every directory sdu computes du's figure (Total) and three more:
//! Exclusive (data that belongs to one file alone), Shared (shared data,
//! counted once) and Reclaimable (what deleting it would free).
//! `docs/design.md` defines each figure and the filesystem facts behind it.
//!
//! The library does the work; the binary only turns flags into a
//! [`Config`]. Data flows one way, one module per stage:
//!
//! [`walk`] (parallel, fd-relative statx) → [`probe`] (may this file share?)
//! → [`extents`] (which physical data each file references: read, indexed,
//! swept) → [`tree`] (roll-up per directory, the rules of [`figures`]) →
//! [`report`] (text, du, JSON, tree).
//!
//! [`run`] does all of it. The stages are public for the tests, the fuzz
//! targets and for tools built on sdu.

#![deny(missing_docs)]

mod error;
pub mod extents;
pub mod figures;
pub mod glob;
mod messages;
mod plan;
pub mod probe;
mod quote;
pub mod records;
pub mod report;
pub mod timefmt;
pub mod tree;
pub mod units;
pub mod walk;

use std::fmt::Write as _;
use std::io::Write;
use std::time::Instant;

pub use error::{Diagnostic, Error};
pub use messages::Messages;
pub use quote::{quote, quotef};
pub use report::ReportOptions;
pub use walk::{Counters, Progress, WalkOptions};

/// Everything a run needs, resolved from the command line.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// What to walk, and how.
    pub walk: WalkOptions,
    /// What to print, and how.
    pub report: ReportOptions,
    /// Which of du's rules the figures follow (`--du` mode, `-S`).
    pub rules: tree::Rules,
    /// Print `--stats` on the messages after the report.
    pub stats: bool,
    /// `--to-free SIZE`: instead of the report, plan which of the roots
    /// (the candidates) to delete to free at least SIZE bytes. Deletes
    /// nothing.
    pub to_free: Option<u64>,
}

/// What a run ended with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Entries that could not be read (each was reported on the messages).
    pub errors: u64,
    /// What the walk counted.
    pub counters: Counters,
}

/// A finished scan: the rolled-up tree, and what the walk did.
#[derive(Debug)]
pub struct Scan {
    /// The entries and their figures.
    pub tree: tree::Tree,
    /// What the walk counted.
    pub counters: Counters,
    /// The filesystems met, by index.
    pub filesystems: Vec<probe::FsInfo>,
    /// What `--stats` reports beyond the counters.
    stats: ScanStats,
}

/// Sizes and timings of a scan, for `--stats`.
#[derive(Clone, Copy, Debug, Default)]
struct ScanStats {
    dirs: usize,
    files_shared: usize,
    indexed: usize,
    segments: usize,
    units: usize,
    walk: std::time::Duration,
    sweep: std::time::Duration,
    tree: std::time::Duration,
}

/// Walks `opts.roots`, sweeps the shared extents and rolls the tree up by
/// `rules`. Per-entry failures go to `msgs`.
///
/// # Errors
/// [`Error::Threads`] when the walk cannot start its threads.
pub fn scan(opts: &WalkOptions, rules: tree::Rules, msgs: &Messages) -> Result<Scan, Error> {
    let t0 = Instant::now();
    let walk::Walk {
        nodes,
        links,
        files,
        extents,
        registry,
        counters,
        moved,
    } = walk::walk(
        &WalkOptions {
            du_rules: rules.du,
            ..opts.clone()
        },
        msgs,
    )?;
    let t_walk = t0.elapsed();
    let t1 = Instant::now();
    let indexed = extents.ranges();
    let sweep = extents.into_sweep(|space| registry.granularity(space));
    let t_sweep = t1.elapsed();
    let t2 = Instant::now();
    let dirs = nodes.len().saturating_sub(1);
    let granularity = |space| registry.granularity(space);
    let files_shared = files.len();
    let mut tree = tree::Tree::build_with(nodes, links, &files, &sweep, granularity, rules);
    tree.stop_after(&moved);
    let stats = ScanStats {
        dirs,
        files_shared,
        indexed,
        segments: sweep.segment_count(),
        units: sweep.unit_count(),
        walk: t_walk,
        sweep: t_sweep,
        tree: t2.elapsed(),
    };
    Ok(Scan {
        tree,
        counters,
        filesystems: registry.filesystems(),
        stats,
    })
}

/// Walks, rolls up and reports. Per-entry failures go to `msgs` and are
/// counted in the outcome.
///
/// # Errors
/// [`Error::Threads`] when the walk cannot start its threads,
/// [`Error::Write`] when the report cannot be written,
/// [`Error::Overlap`] when `--to-free` candidates overlap.
pub fn run(cfg: &Config, out: &mut dyn Write, msgs: &Messages) -> Result<Outcome, Error> {
    // --to-free: scan the paths that lie inside no other, plan among the
    // candidates.
    let split = match cfg.to_free {
        Some(_) => Some(plan::split(&cfg.walk.roots, msgs)?),
        None => None,
    };
    let walk_opts = WalkOptions {
        roots: split
            .as_ref()
            .map_or_else(|| cfg.walk.roots.clone(), |s| s.scan.clone()),
        ..cfg.walk.clone()
    };
    let rules = tree::Rules {
        keep_sets: cfg.rules.keep_sets || cfg.to_free.is_some(),
        ..cfg.rules
    };
    let Scan {
        tree,
        counters,
        filesystems,
        stats,
    } = scan(&walk_opts, rules, msgs)?;
    let errors = msgs.errors();
    let t3 = Instant::now();
    match (cfg.to_free, &split) {
        (Some(target), Some(split)) => {
            let candidates = plan::nodes(&tree, split);
            let ids: Vec<u32> = candidates.iter().map(|c| c.0).collect();
            let plan = tree.plan(&ids, target).expect("sets kept");
            if plan.reached {
                report::plan::write(out, &plan, target, &candidates, &cfg.report)?;
            } else {
                msgs.report(Diagnostic::CannotFree {
                    target,
                    all: plan.all,
                    candidates: ids.len(),
                });
            }
        }
        _ => report::write(out, &tree, &cfg.walk.roots, errors, &cfg.report)?,
    }
    out.flush()?;
    let t_report = t3.elapsed();
    if counters.unverified_files > 0 {
        msgs.report(Diagnostic::Unverified {
            files: counters.unverified_files,
            bytes: counters.unverified_bytes,
        });
    }
    if cfg.stats {
        msgs.raw(&stats_text(&counters, &filesystems, &stats, t_report));
    }
    Ok(Outcome {
        errors: msgs.errors(),
        counters,
    })
}

/// The `--stats` text.
fn stats_text(
    counters: &Counters,
    filesystems: &[probe::FsInfo],
    st: &ScanStats,
    t_report: std::time::Duration,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "sdu stats:");
    let _ = writeln!(s, "  entries stat-ed        {}", counters.entries);
    let _ = writeln!(s, "  nodes (dirs, -a files) {}", st.dirs);
    for fs in filesystems {
        let _ = writeln!(
            s,
            "  filesystem {}           {}{}",
            fs.index,
            fs.name(),
            if fs.unverified {
                " (could not be probed)"
            } else if fs.can_share {
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
    let _ = writeln!(s, "  files with shared data {}", st.files_shared);
    let _ = writeln!(s, "  shared extents indexed {}", st.indexed);
    let _ = writeln!(s, "  segments / units       {} / {}", st.segments, st.units);
    let _ = writeln!(
        s,
        "  time: walk {:.3}s, sweep {:.3}s, roll-up {:.3}s, report {:.3}s",
        st.walk.as_secs_f64(),
        st.sweep.as_secs_f64(),
        st.tree.as_secs_f64(),
        t_report.as_secs_f64()
    );
    s
}
