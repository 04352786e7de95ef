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

pub mod delete;
mod error;
pub mod extents;
pub mod figures;
pub mod glob;
mod messages;
pub mod path;
mod plan;
pub mod probe;
mod quote;
pub mod records;
pub mod report;
pub mod saved;
pub mod timefmt;
pub mod tree;
pub mod units;
pub mod walk;

use std::fmt::Write as _;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
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
    /// `--export FILE` (`-`: standard output): write the scan as a saved
    /// scan instead of the report.
    pub export: Option<Vec<u8>>,
    /// `--import FILE` (`-`: standard input): read a saved scan instead of
    /// scanning; the roots are those saved, and `walk.roots` are the
    /// `--to-free` candidates, named by their paths in it.
    pub import: Option<Vec<u8>>,
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
    /// Every entry's identity, by node id, when
    /// [`WalkOptions::identities`] asked for them.
    pub idents: Option<records::Idents>,
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
    let w = walk_and_sweep(opts, rules, msgs)?;
    let t2 = Instant::now();
    let dirs = w.nodes.len().saturating_sub(1);
    let granularity = |space| w.registry.granularity(space);
    let files_shared = w.files.len();
    let mut tree = tree::Tree::build_with(w.nodes, w.links, &w.files, &w.sweep, granularity, rules);
    tree.stop_after(&w.moved);
    let stats = ScanStats {
        dirs,
        files_shared,
        indexed: w.indexed,
        segments: w.sweep.segment_count(),
        units: w.sweep.unit_count(),
        walk: w.t_walk,
        sweep: w.t_sweep,
        tree: t2.elapsed(),
    };
    Ok(Scan {
        tree,
        counters: w.counters,
        filesystems: w.registry.filesystems(),
        idents: w.idents,
        stats,
    })
}

/// The records of a walk and its swept extents, before the roll-up.
struct Walked {
    nodes: records::Nodes,
    links: Vec<records::Link>,
    files: Vec<records::FileRec>,
    sweep: extents::Sweep,
    registry: probe::Registry,
    counters: Counters,
    moved: Vec<u32>,
    idents: Option<records::Idents>,
    indexed: usize,
    t_walk: std::time::Duration,
    t_sweep: std::time::Duration,
}

/// Walks `opts.roots` (by du's rules when `rules.du`) and sweeps the
/// shared extents.
fn walk_and_sweep(
    opts: &WalkOptions,
    rules: tree::Rules,
    msgs: &Messages,
) -> Result<Walked, Error> {
    let t0 = Instant::now();
    let walk::Walk {
        nodes,
        links,
        files,
        extents,
        registry,
        counters,
        moved,
        idents,
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
    Ok(Walked {
        nodes,
        links,
        files,
        sweep,
        registry,
        counters,
        moved,
        idents,
        indexed,
        t_walk,
        t_sweep: t1.elapsed(),
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
    if let Some(file) = &cfg.import {
        return run_import(cfg, file, out, msgs);
    }
    if let Some(file) = &cfg.export {
        return run_export(cfg, file, out, msgs);
    }
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
        // A candidate inside a scanned path may be a file: keep files.
        all: cfg.walk.all
            || split
                .as_ref()
                .is_some_and(|s| s.candidates.iter().any(|c| !c.2.is_empty())),
        ..cfg.walk.clone()
    };
    // The report lists nothing deeper than its --max-depth: children
    // below it need no order.
    let rules = tree::Rules {
        keep_sets: cfg.rules.keep_sets || cfg.to_free.is_some(),
        sorted_depth: cfg.report.max_depth,
        ..cfg.rules
    };
    let Scan {
        tree,
        counters,
        filesystems,
        stats,
        ..
    } = scan(&walk_opts, rules, msgs)?;
    let errors = msgs.errors();
    let t3 = Instant::now();
    let candidates = split.as_ref().map(|split| plan::nodes(&tree, split, msgs));
    report_or_plan(
        cfg,
        out,
        msgs,
        &tree,
        &cfg.walk.roots,
        candidates.as_deref(),
        (errors, counters.compressed_bytes),
    )?;
    let t_report = t3.elapsed();
    closing_notes(&counters, msgs);
    if cfg.stats {
        msgs.raw(&stats_text(&counters, &filesystems, &stats, t_report));
    }
    Ok(Outcome {
        errors: msgs.errors(),
        counters,
    })
}

/// The report of `tree`, or with `--to-free` the plan among `candidates`
/// (their nodes, and the paths to print for them), and the flush. `notes`
/// are the errors and the compressed bytes counted uncompressed, for the
/// JSON document.
fn report_or_plan(
    cfg: &Config,
    out: &mut dyn Write,
    msgs: &Messages,
    tree: &tree::Tree,
    roots: &[Vec<u8>],
    candidates: Option<&[(u32, Vec<u8>)]>,
    notes: (u64, u64),
) -> Result<(), Error> {
    match (cfg.to_free, candidates) {
        (Some(target), Some(candidates)) => {
            let ids: Vec<u32> = candidates.iter().map(|c| c.0).collect();
            let plan = tree.plan(&ids, target).expect("sets kept");
            if plan.reached {
                report::plan::write(out, &plan, target, candidates, &cfg.report)?;
            } else {
                msgs.report(Diagnostic::CannotFree {
                    target,
                    all: plan.all,
                    candidates: ids.len(),
                });
            }
        }
        _ => report::write(out, tree, roots, notes.0, notes.1, &cfg.report)?,
    }
    out.flush()?;
    Ok(())
}

/// `--export FILE`: walks as `-a` does (every file gets a node, so that
/// ncdu lists them) and maps every file that may share, rolls the tree up
/// by `cfg.rules` for the figures the file shows, and writes it. No report.
fn run_export(
    cfg: &Config,
    file: &[u8],
    out: &mut dyn Write,
    msgs: &Messages,
) -> Result<Outcome, Error> {
    let walk = WalkOptions {
        all: true,
        skip_extents: false,
        ..cfg.walk.clone()
    };
    let rules = tree::Rules {
        keep_sets: false,
        ..cfg.rules
    };
    let w = walk_and_sweep(&walk, rules, msgs)?;
    let t2 = Instant::now();
    let granularity = |space| w.registry.granularity(space);
    let mut tree = tree::Tree::build_with(
        w.nodes,
        w.links.clone(),
        &w.files,
        &w.sweep,
        granularity,
        rules,
    );
    tree.stop_after(&w.moved);
    let x = saved::Export {
        tree: &tree,
        links: &w.links,
        files: &w.files,
        sweep: &w.sweep,
        granularity: &granularity,
        rules,
        walk: &walk,
        errors: msgs.errors(),
        overlap: walk::namespaces(&walk.roots).iter().any(|&ns| ns != 0),
    };
    let failed = |e: std::io::Error| Error::SavedScan {
        file: file.to_vec(),
        what: format!("write error: {}", error::io_text(&e)),
    };
    if file == b"-" {
        let mut buf = std::io::BufWriter::with_capacity(1 << 16, &mut *out);
        saved::write(&mut buf, &x)?;
    } else {
        let f = std::fs::File::create(std::ffi::OsStr::from_bytes(file)).map_err(failed)?;
        let mut buf = std::io::BufWriter::with_capacity(1 << 16, f);
        saved::write(&mut buf, &x).map_err(failed)?;
        buf.into_inner()
            .map_err(|e| failed(e.into_error()))?
            .sync_all()
            .map_err(failed)?;
    }
    let t_report = t2.elapsed();
    closing_notes(&w.counters, msgs);
    if cfg.stats {
        let st = ScanStats {
            dirs: tree.len().saturating_sub(1),
            files_shared: w.files.len(),
            indexed: w.indexed,
            segments: w.sweep.segment_count(),
            units: w.sweep.unit_count(),
            walk: w.t_walk,
            sweep: w.t_sweep,
            tree: std::time::Duration::ZERO,
        };
        msgs.raw(&stats_text(
            &w.counters,
            &w.registry.filesystems(),
            &st,
            t_report,
        ));
    }
    Ok(Outcome {
        errors: msgs.errors(),
        counters: w.counters,
    })
}

/// A saved scan read in and rolled up: what [`import`] gives.
#[derive(Debug)]
pub struct Imported {
    /// The entries and their figures.
    pub tree: tree::Tree,
    /// The errors the scan had met (its error entries) when it was saved.
    pub errors: u64,
    roots: Vec<Vec<u8>>,
    n_links: usize,
    n_files: usize,
    segments: usize,
    units: usize,
    t_read: std::time::Duration,
    t_tree: std::time::Duration,
}

/// `--import FILE`: reads the saved scan `file` (`-`: standard input) and
/// rolls it up by `cfg.rules` (folding its files into their directories
/// without `-a` or `--to-free`).
///
/// # Errors
/// [`Error::SavedScan`] when the file cannot be read, is not a whole saved
/// scan, or was saved with other rules than `cfg` asks for.
pub fn import(cfg: &Config, file: &[u8], msgs: &Messages) -> Result<Imported, Error> {
    let bad = |what: String| Error::SavedScan {
        file: file.to_vec(),
        what,
    };
    let t0 = Instant::now();
    let read = if file == b"-" {
        saved::read(std::io::stdin().lock())
    } else {
        let f = std::fs::File::open(std::ffi::OsStr::from_bytes(file))
            .map_err(|e| bad(error::io_text(&e)))?;
        saved::read(std::io::BufReader::with_capacity(1 << 16, f))
    };
    let mut s = read.map_err(|e| bad(e.to_string()))?;
    if let Some(t) = cfg.walk.time
        && s.time != Some(t)
    {
        return Err(bad(
            "--time: the scan did not record that time (export with the same --time)".into(),
        ));
    }
    if s.overlap && s.du != cfg.rules.du {
        return Err(bad(format!(
            "its PATHs overlap, and were walked {} du's counting: export again {} --du",
            if s.du { "with" } else { "without" },
            if cfg.rules.du { "with" } else { "without" }
        )));
    }
    if !s.by_sdu {
        msgs.report(Diagnostic::NotBySdu {
            file: file.to_vec(),
        });
    }
    // --to-free keeps the files: any entry may be a candidate.
    if !cfg.walk.all && cfg.to_free.is_none() {
        s.fold_leaves();
    }
    let roots = s.roots();
    let t_read = t0.elapsed();
    let rules = tree::Rules {
        keep_sets: cfg.rules.keep_sets || cfg.to_free.is_some(),
        ..cfg.rules
    };
    let t1 = Instant::now();
    let saved::Saved {
        nodes,
        links,
        files,
        sweep,
        spaces,
        stops,
        errors,
        ..
    } = s;
    let granularity = |fs: u32| {
        spaces
            .iter()
            .find(|x| x.0 == fs)
            .map_or(probe::Granularity::Block, |x| x.1)
    };
    let (n_files, n_links) = (files.len(), links.len());
    let mut tree = tree::Tree::build_with(nodes, links, &files, &sweep, granularity, rules);
    tree.stop_after(&stops);
    Ok(Imported {
        tree,
        errors,
        roots,
        n_links,
        n_files,
        segments: sweep.segment_count(),
        units: sweep.unit_count(),
        t_read,
        t_tree: t1.elapsed(),
    })
}

/// `--import FILE`: reports or plans on the saved scan as a scan would.
/// `cfg.walk.roots` are `--to-free`'s candidates, by their paths in the
/// saved scan.
fn run_import(
    cfg: &Config,
    file: &[u8],
    out: &mut dyn Write,
    msgs: &Messages,
) -> Result<Outcome, Error> {
    let im = import(cfg, file, msgs)?;
    let tree = &im.tree;
    let t2 = Instant::now();
    let candidates = match cfg.to_free {
        Some(_) => Some(plan::saved_nodes(tree, &cfg.walk.roots, msgs)?),
        None => None,
    };
    let errors = im.errors.saturating_add(msgs.errors());
    report_or_plan(
        cfg,
        out,
        msgs,
        tree,
        &im.roots,
        candidates.as_deref(),
        (errors, 0),
    )?;
    if cfg.stats {
        msgs.raw(&format!(
            "sdu stats:\n  saved scan             {}\n  nodes (dirs, -a files) {}\n  links / files with shared data {} / {}\n  segments / units       {} / {}\n  time: read {:.3}s, roll-up {:.3}s, report {:.3}s\n",
            String::from_utf8_lossy(file),
            tree.len().saturating_sub(1),
            im.n_links,
            im.n_files,
            im.segments,
            im.units,
            im.t_read.as_secs_f64(),
            im.t_tree.as_secs_f64(),
            t2.elapsed().as_secs_f64()
        ));
    }
    Ok(Outcome {
        errors: im.errors.saturating_add(msgs.errors()),
        counters: Counters::default(),
    })
}

/// The warnings that close a scan: files whose sharing could not be
/// verified, and compressed data counted at its uncompressed size.
fn closing_notes(counters: &Counters, msgs: &Messages) {
    if counters.unverified_files > 0 {
        msgs.report(Diagnostic::Unverified {
            files: counters.unverified_files,
            bytes: counters.unverified_bytes,
        });
    }
    if counters.compressed_files > 0 {
        msgs.report(Diagnostic::Compressed {
            files: counters.compressed_files,
            bytes: counters.compressed_bytes,
        });
    }
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
    let _ = writeln!(s, "  files on the lean path {}", counters.plain_files);
    let _ = writeln!(
        s,
        "  FIEMAPs put off (allocation group busy) {}",
        counters.fiemap_put_off
    );
    let _ = writeln!(
        s,
        "  files credited with a snapshot copy's extents {}",
        counters.copies_reused
    );
    let _ = writeln!(
        s,
        "  inline files recorded for snapshots {}",
        counters.inline_recorded
    );
    let _ = writeln!(
        s,
        "  files read by tree search (Btrfs, root) {}",
        counters.search_files
    );
    let _ = writeln!(s, "  tree searches          {}", counters.search_calls);
    let _ = writeln!(
        s,
        "  entries read from the tree (Btrfs, root) {}",
        counters.tree_entries
    );
    let _ = writeln!(
        s,
        "  tree search undecided, mapped with FIEMAP {}",
        counters.search_undecided
    );
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
    let _ = writeln!(
        s,
        "  compressed, counted uncompressed       {} ({} bytes)",
        counters.compressed_files, counters.compressed_bytes
    );
    let _ = writeln!(
        s,
        "  compressed, counted on disk            {} ({} bytes on disk)",
        counters.on_disk_files, counters.on_disk_bytes
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
