//! sdu: a disk usage tool that understands shared data.
//!
//! For every directory sdu computes du's figure (Total) and three more:
//! Exclusive (data that belongs to one file alone), Shared (shared data,
//! counted once) and Reclaimable (what deleting it would free).
//! `docs/figures.md` defines each figure and `docs/filesystems.md` the
//! filesystem facts behind it. The stages, one module each, data flowing
//! one way (`docs/architecture.md` has a section on each):
//!
//! - walk (`#walk`): the parallel, fd-relative statx walk of the roots;
//! - probe (`#probe`): per filesystem, whether its files may share data;
//! - extents (`#extents`, `#index-and-sweep`): which physical data each
//!   file references, read, indexed and swept;
//! - scan (`#the-scan`): the walk and the sweep, or a saved scan read,
//!   rolled up into one tree;
//! - tree (`#tree`): the roll-up per directory, by the rules of the
//!   figures;
//! - report (`#report`): the text table, du's lines, JSON, the tree view,
//!   the HTML page.
//!
//! The binary turns flags into a [`Config`] for [`run`], which does a
//! whole run, and holds the full-screen browser (`sdu -i`), which calls
//! [`scan_to_tree`] and [`delete`](fn@delete). The names below are what the binary
//! and tools built on sdu use, and nothing else: the rest of each module
//! is the crate's own (its unit tests, the fuzz and model tests of
//! `src/tree/` among them, reach it). The few hooks the browser's unit
//! tests and tests/sdu need besides are behind the `testing` feature,
//! which `cargo test` turns on.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

// The stages and their vocabulary. Four are public whole: `figures`, the
// figures' types, and `units`, `timefmt` and `path`, the binary's helpers
// for sizes, times and paths.
mod compare;
mod delete;
mod df;
mod error;
mod extents;
pub mod figures;
mod glob;
mod messages;
mod outfile;
pub mod path;
mod plan;
mod probe;
mod quote;
mod records;
mod report;
mod saved;
mod scan;
mod snapshot_layouts;
mod snapshots;
mod stats;
pub mod timefmt;
mod tree;
pub mod units;
mod walk;

use std::io::Write;
use std::time::{Duration, Instant};

use scan::Source;

// Running a scan: what to walk and report (with `Config`, `run` and
// `scan_to_tree` below), its messages and its errors.
pub use error::Diagnostic;
pub use error::Error;
pub use error::Refusal;
pub use messages::Messages;
pub use scan::Scanned;
pub use scan::Scanning;
pub use walk::counters::Counters;
pub use walk::counters::Progress;
pub use walk::ctx::WalkOptions;

// The tree; its figures are the module `figures` above.
pub use tree::Rules;
pub use tree::Tree;
pub use tree::union::Frees;
pub use tree::union::Sets;

// Records: the nodes' ids and the entries' identities.
pub use records::NodeId;
pub use records::ReadError;
pub use records::idents::Ident;
pub use records::idents::Idents;

// Reports, and the file a report or saved scan is written to.
pub use outfile::OutputFile;
pub use report::options::Format;
pub use report::options::ReportOptions;
pub use report::options::SortKey;

// Saved scans compared (`--compare`).
pub use compare::Comparison;
pub use compare::compare;
pub use compare::read_old;

// Deleting entries the scan saw (the browser's `d`).
pub use delete::Deleted;
pub use delete::Target;
pub use delete::delete;

// Names quoted as du and the shell quote them, and `--exclude`'s
// patterns.
pub use glob::Excludes;
pub use quote::quote;
pub use quote::quote_locale;
pub use quote::quotef;
pub use quote::shell_escape;
pub use quote::utf8_locale_with;

// Test hooks: what the browser's unit tests and tests/sdu reach that no
// tool needs, with `Tree::by_hand` (src/tree/testing.rs). `cargo test`
// turns the feature on (the package is its own dev-dependency, with it);
// `cargo build` leaves it off.
#[cfg(feature = "testing")]
pub use extents::unchanged::settled;
#[cfg(feature = "testing")]
pub use records::Link;
#[cfg(feature = "testing")]
pub use records::NodeRec;

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
    /// `--oldest-first` (`Some(true)`) or `--newest-first` (`Some(false)`):
    /// the plan takes the candidates in order of age and stops as soon as
    /// they free `to_free`; `None`, the largest first.
    pub by_age: Option<bool>,
    /// `--export FILE` (`-`: standard output): write the scan as a saved
    /// scan instead of the report.
    pub export: Option<Vec<u8>>,
    /// `--export-format binary`: write ncdu 2's binary export (`ncdu
    /// -O`) instead of its JSON.
    pub export_binary: bool,
    /// `--export-format json-zstd`: compress the JSON with zstd (`ncdu
    /// -c`; the binary export is always compressed).
    pub export_zstd: bool,
    /// `--import FILE` (`-`: standard input): read a saved scan instead of
    /// scanning; the roots are those saved, and `walk.roots` are the
    /// `--to-free` candidates, named by their paths in it.
    pub import: Option<Vec<u8>>,
    /// `--compare OLD` (`-`: standard input): report what changed since
    /// the saved scan OLD instead of the figures ([`compare`](fn@compare)).
    pub compare: Option<Vec<u8>>,
    /// `--snapshots`: list the Btrfs subvolumes of the scan by origin, with
    /// what deleting each snapshot frees, instead of the report.
    pub snapshots: bool,
    /// `--df`: for the filesystem of each PATH, a table whose rows add up
    /// to df's Used, instead of the report.
    pub df: bool,
    /// `--since SCAN`: files unchanged since the saved scan SCAN reuse the
    /// extent maps it kept instead of being mapped again.
    pub since: Option<Vec<u8>>,
    /// `--verify` (with `--since`): map every file all the same, and name
    /// each whose saved map was stale.
    pub verify: bool,
}

/// What a run ended with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Entries that could not be read (each was reported on the messages).
    pub errors: u64,
    /// What the walk counted.
    pub counters: Counters,
    /// `--to-free`: the candidates together cannot free the bytes asked
    /// for (the plan was printed with `reached` false, or said on the
    /// messages).
    pub unreached: bool,
}

/// What a run does with its tree ([`Config::mode`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode<'a> {
    /// The report: the table, du's lines, JSON or the tree.
    Report,
    /// `--to-free SIZE`: the plan among the candidates.
    Plan {
        /// The bytes to free.
        target: u64,
    },
    /// `--export FILE`: the scan saved, no report.
    Export {
        /// The file (`-`: standard output).
        file: &'a [u8],
    },
}

impl Config {
    /// What the run does (`--export` and `--to-free` exclude each other).
    pub(crate) fn mode(&self) -> Mode<'_> {
        match (&self.export, self.to_free) {
            (Some(file), _) => Mode::Export { file },
            (None, Some(target)) => Mode::Plan { target },
            (None, None) => Mode::Report,
        }
    }

    /// Where the tree comes from.
    pub(crate) fn source(&self) -> Source<'_> {
        match &self.import {
            Some(file) => Source::Import { file },
            None => Source::Walk,
        }
    }
}

/// Walks (or, with `--import`, reads) and rolls the tree up as `how`
/// says, with the maps of `--since` (read here when `how` has none: each
/// scan of the browser). Per-entry failures go to `msgs`.
///
/// # Errors
/// [`Error::Threads`] when the walk cannot start its threads,
/// [`Error::TooManyEntries`] past 4 billion entries, [`Error::SavedScan`]
/// when a saved scan cannot be used.
pub fn scan_to_tree(cfg: &Config, how: &Scanning, msgs: &Messages) -> Result<Scanned, Error> {
    let loaded;
    let how = match (&cfg.since, &how.walk.since) {
        (Some(file), None) => {
            let mut walk = WalkOptions {
                verify_since: cfg.verify,
                ..how.walk.clone()
            };
            let m = since_maps(file, msgs)?;
            scan::since::prove_for(m, &mut walk);
            loaded = Scanning {
                walk,
                ..how.clone()
            };
            &loaded
        }
        _ => how,
    };
    scan::scan(cfg.source(), cfg.walk.time, how, msgs)
}

/// Walks (or reads), rolls up and reports, plans (`--to-free`) or saves
/// (`--export`), as `cfg` says. Per-entry failures go to `msgs` and are
/// counted in the outcome.
///
/// # Errors
/// [`Error::Threads`] when the walk cannot start its threads,
/// [`Error::Write`] when the report cannot be written,
/// [`Error::Candidate`] when `--to-free` refuses a candidate,
/// [`Error::SavedScan`] when a saved scan cannot be read or written.
pub fn run(cfg: &Config, out: &mut dyn Write, msgs: &Messages) -> Result<Outcome, Error> {
    let prepared;
    let cfg = match with_since(cfg, msgs)? {
        Some(c) => {
            prepared = c;
            &prepared
        }
        None => cfg,
    };
    if let Some(old) = &cfg.compare {
        return compare_run(cfg, old, out, msgs);
    }
    if cfg.snapshots {
        return snapshots_run(cfg, out, msgs);
    }
    if cfg.df {
        return df_run(cfg, out, msgs);
    }
    let target = match cfg.mode() {
        Mode::Export { file } => return export(cfg, file, out, msgs),
        Mode::Plan { target } => Some(target),
        Mode::Report => None,
    };
    // --to-free on a walk: scan the paths that lie inside no other, plan
    // among the candidates. On a saved scan the PATHs name the candidates.
    let split = match (target, cfg.source()) {
        (Some(_), Source::Walk) => Some(plan::split(&cfg.walk.roots)?),
        _ => None,
    };
    let how = Scanning {
        walk: WalkOptions {
            roots: split
                .as_ref()
                .map_or_else(|| cfg.walk.roots.clone(), |s| s.scan.clone()),
            // A candidate may be a file: keep files.
            all: cfg.walk.all
                || match (&split, cfg.source()) {
                    (Some(s), _) => s.candidates.iter().any(|c| !c.names.is_empty()),
                    (None, Source::Import { .. }) => target.is_some(),
                    (None, Source::Walk) => false,
                },
            // Each candidate is checked to be the entry it was resolved to.
            identities: cfg.walk.identities || split.is_some(),
            ..cfg.walk.clone()
        },
        // The report lists nothing deeper than its --max-depth: children
        // below it need no order. A saved scan is ordered whole.
        rules: tree::Rules {
            sorted_depth: match cfg.source() {
                Source::Walk => cfg.report.max_depth,
                Source::Import { .. } => cfg.rules.sorted_depth,
            },
            ..cfg.rules
        },
        sets: target.is_some(),
    };
    let s = scan_to_tree(cfg, &how, msgs)?;
    let errors = s.saved_errors.saturating_add(msgs.errors());
    let t3 = Instant::now();
    let mut unreached = false;
    match (target, &s.sets) {
        (Some(target), Some(sets)) => {
            let candidates = match &split {
                Some(split) => plan::nodes(&s.tree, s.idents.as_ref(), split)?,
                None => plan::saved_nodes(&s.tree, &cfg.walk.roots)?,
            };
            let mut candidates = candidates;
            if let Some(oldest) = cfg.by_age {
                plan::by_age(&mut candidates, oldest);
            }
            unreached = !plan_and_write(cfg, (&s.tree, sets), &candidates, target, (out, msgs))?;
        }
        _ => {
            let roots = match cfg.source() {
                Source::Walk => &cfg.walk.roots,
                Source::Import { .. } => &s.roots,
            };
            let compressed = match cfg.source() {
                Source::Walk => s.counters.compressed_bytes,
                Source::Import { .. } => 0,
            };
            let list = msgs.entry_errors();
            let errors = report::Errors {
                count: errors,
                list: &list,
                unread: &s.read_errors,
            };
            let unmarked = report::write(out, &s.tree, roots, &errors, compressed, &cfg.report)?;
            if !unmarked.is_exact() {
                out.flush()?;
                msgs.report(Diagnostic::DuBounds { bound: unmarked });
            }
        }
    }
    out.flush()?;
    let t_report = t3.elapsed();
    if let Source::Walk = cfg.source() {
        stats::closing_notes(&s.counters, msgs);
    }
    print_stats(cfg, &s, t_report, msgs);
    Ok(Outcome {
        errors: s.saved_errors.saturating_add(msgs.errors()),
        counters: s.counters,
        unreached,
    })
}

/// `--compare OLD`: reads the saved scan OLD while it walks (or reads
/// `--import`'s file), and reports what changed. A bad OLD fails the
/// run, with nothing printed on stdout.
fn compare_run(
    cfg: &Config,
    old_file: &[u8],
    out: &mut dyn Write,
    msgs: &Messages,
) -> Result<Outcome, Error> {
    let walked = matches!(cfg.source(), Source::Walk);
    let how = Scanning {
        walk: cfg.walk.clone(),
        rules: tree::Rules {
            sorted_depth: if walked { cfg.report.max_depth } else { None },
            ..cfg.rules
        },
        sets: false,
    };
    // OLD is read while the PATHs are walked.
    let (old, s) = std::thread::scope(|sc| {
        let reading = sc.spawn(|| compare::read_old(old_file, &how));
        let s = scan_to_tree(cfg, &how, msgs);
        let old = reading
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (old, s)
    });
    let (old, s) = (old?, s?);
    if !old.sharing || !s.sharing {
        let file = match (&cfg.import, old.sharing) {
            (Some(f), true) => f.clone(),
            _ => old_file.to_vec(),
        };
        msgs.report(Diagnostic::CompareWithoutSharing { file });
    }
    let cmp = compare::compare(&s, old, cfg.report.max_depth);
    compare::say_pairing(&cmp, &s.tree, msgs);
    let t3 = Instant::now();
    let list = msgs.entry_errors();
    let errors = report::Errors {
        count: s.saved_errors.saturating_add(msgs.errors()),
        list: &list,
        unread: &s.read_errors,
    };
    let roots = if walked { &cfg.walk.roots } else { &s.roots };
    report::write_compare(out, (&s.tree, roots), &cmp, old_file, &errors, &cfg.report)?;
    out.flush()?;
    if walked {
        stats::closing_notes(&s.counters, msgs);
    }
    print_stats(cfg, &s, t3.elapsed(), msgs);
    Ok(Outcome {
        errors: s.saved_errors.saturating_add(msgs.errors()),
        counters: s.counters,
        unreached: false,
    })
}

/// `--snapshots --to-free SIZE`: plans among the snapshots the scan met
/// (every subvolume with a parent, not the origins), by their creation
/// times with `--oldest-first` or `--newest-first`, else the largest
/// first, as `--to-free` plans among the PATHs given.
fn snapshots_plan(
    cfg: &Config,
    (tree, sets): (&tree::Tree, &tree::Sets),
    groups: &[snapshots::Group],
    target: u64,
    out: &mut dyn Write,
    msgs: &Messages,
) -> Result<bool, Error> {
    let mut candidates: Vec<plan::Candidate> = (groups.iter())
        .flat_map(|g| &g.snapshots)
        .map(|s| plan::Candidate {
            node: s.node,
            path: s.path.clone(),
            created: Some(plan::Age {
                at: s.created,
                otime: true,
            }),
        })
        .collect();
    // Oldest first, then by path: the order of the table, whatever the
    // walk's.
    candidates.sort_by(|a, b| {
        (a.created.map(|c| c.at), &a.path).cmp(&(b.created.map(|c| c.at), &b.path))
    });
    if cfg.by_age == Some(false) {
        candidates.reverse();
    }
    plan_and_write(cfg, (tree, sets), &candidates, target, (out, msgs))
}

/// The `--to-free` plan among `candidates` (in their order with
/// `--oldest-first` or `--newest-first`, else the largest first), written
/// as `cfg` asks; a SIZE they cannot free together said on `msgs`, and
/// with `--json` the plan printed all the same (`"reached": false`).
/// Whether the plan reaches SIZE.
fn plan_and_write(
    cfg: &Config,
    (tree, sets): (&tree::Tree, &tree::Sets),
    candidates: &[plan::Candidate],
    target: u64,
    (out, msgs): (&mut dyn Write, &Messages),
) -> Result<bool, Error> {
    let ids: Vec<records::NodeId> = candidates.iter().map(|c| c.node).collect();
    let plan = match cfg.by_age {
        Some(_) => sets.plan_in_order(tree, &ids, target),
        None => sets.plan(tree, &ids, target),
    };
    if !plan.reached {
        msgs.report(Diagnostic::CannotFree {
            target,
            all: plan.all.bytes,
            candidates: ids.len(),
        });
    }
    if plan.reached || cfg.report.format == report::Format::Json {
        report::to_free::write(out, &plan, (target, cfg.by_age), candidates, &cfg.report)?;
    }
    Ok(plan.reached)
}

/// `--stats`: scan `s`'s counts and times on `msgs` (`t`: its report's).
fn print_stats(cfg: &Config, s: &Scanned, t: Duration, msgs: &Messages) {
    if cfg.stats {
        let any_bound = s.tree.any_bound();
        msgs.raw(&stats::text(&s.counters, &s.sizes, t, any_bound));
    }
}

/// `--snapshots`: scans the PATHs with what sets of entries free kept,
/// and lists their subvolumes by origin ([`snapshots::groups`]).
fn snapshots_run(cfg: &Config, out: &mut dyn Write, msgs: &Messages) -> Result<Outcome, Error> {
    let walk = match cfg.source() {
        Source::Walk => snapshot_walk(&cfg.walk, msgs),
        Source::Import { .. } => cfg.walk.clone(),
    };
    let how = Scanning {
        walk,
        rules: cfg.rules,
        sets: true,
    };
    let s = scan_to_tree(cfg, &how, msgs)?;
    let t3 = Instant::now();
    let (groups, btrfs) = subvolume_groups(&s);
    let roots = match cfg.source() {
        Source::Walk => &cfg.walk.roots,
        Source::Import { .. } => &s.roots,
    };
    let mut unreached = false;
    match (cfg.mode(), &s.sets) {
        (Mode::Plan { target }, Some(sets)) => {
            unreached = !snapshots_plan(cfg, (&s.tree, sets), &groups, target, out, msgs)?;
        }
        _ => report::snapshots::write(out, &groups, btrfs, roots, &cfg.report)?,
    }
    out.flush()?;
    if let Source::Walk = cfg.source() {
        stats::closing_notes(&s.counters, msgs);
    }
    print_stats(cfg, &s, t3.elapsed(), msgs);
    Ok(Outcome {
        errors: s.saved_errors.saturating_add(msgs.errors()),
        counters: s.counters,
        unreached,
    })
}

/// `--df`: for each filesystem of the PATHs, scans its mount (and what
/// the mount does not reach, [`df::walk_of`]) with what sets of entries
/// free kept when there is such, and writes the table whose rows add up to df's Used.
fn df_run(cfg: &Config, out: &mut dyn Write, msgs: &Messages) -> Result<Outcome, Error> {
    let mut tables = Vec::new();
    let mut counters = Counters::default();
    for fs in df::filesystems(&cfg.walk.roots, msgs) {
        let (walk, extra) = df::walk_of(&fs, &cfg.walk);
        // What sets of entries free is asked only of the extra roots (the
        // outside subvolumes, the covered directories): kept only when
        // there are some.
        let sets = walk.roots.len() > 1;
        let how = Scanning {
            walk,
            rules: tree::Rules {
                du: false,
                sorted_depth: Some(0),
                ..cfg.rules
            },
            sets,
        };
        let before = msgs.errors();
        let s = scan::scan(Source::Walk, cfg.walk.time, &how, msgs)?;
        let errors = msgs.errors().saturating_sub(before);
        let t3 = Instant::now();
        tables.push(df::table(&fs, &extra, &s, errors));
        stats::closing_notes(&s.counters, msgs);
        // Each filesystem's scan is its own: one block of counts for each.
        print_stats(cfg, &s, t3.elapsed(), msgs);
        counters = s.counters;
    }
    report::df::write(out, &tables, &cfg.report)?;
    out.flush()?;
    Ok(Outcome {
        errors: msgs.errors(),
        counters,
        unreached: false,
    })
}

/// The walk `--snapshots` makes of what `walk` says: every Btrfs
/// subvolume root's identity read through the walk's fds, and, as root,
/// the subvolumes of the same origins outside the PATHs (in the top level,
/// not mounted) added as roots named `<FS_TREE>/path`, reached through
/// the top level. What could not be reached is said on `msgs`, in one
/// line.
pub(crate) fn snapshot_walk(walk: &WalkOptions, msgs: &Messages) -> WalkOptions {
    let mut walk = WalkOptions {
        subvolumes: true,
        ..walk.clone()
    };
    // Each PATH resolved once: the question of what lies under it and the
    // walk take the same fd.
    let follow = walk.follow_links || walk.follow_args;
    walk.path_fds = (walk.roots.iter())
        .map(|p| walk::resolve_dir(p, follow).map(std::sync::Arc::new))
        .collect();
    let outside = walk::top_level::outside(&walk);
    walk.root_fds = walk.roots.iter().map(|_| None).collect();
    for (name, fd) in outside.roots {
        walk.roots.push(name);
        walk.root_fds.push(Some(fd));
        walk.path_fds.push(None);
    }
    if outside.missed != Some(0) {
        msgs.report(Diagnostic::SnapshotsNotReached {
            subvolumes: outside.missed,
        });
    }
    walk
}

/// `cfg` with the maps of `--since SCAN` read, and kept for `--export`:
/// `None` when it needs neither. As root, `--compare OLD` reuses those of
/// OLD's maps that XFS's reverse mappings prove (the Btrfs tree search
/// maps without them), and maps every other file.
fn with_since(cfg: &Config, msgs: &Messages) -> Result<Option<Config>, Error> {
    let old = (cfg.compare.as_deref())
        .filter(|o| *o != b"-" && cfg.since.is_none() && cfg.import.is_none())
        .filter(|_| crate::extents::can_search_trees());
    if cfg.since.is_none() && cfg.export.is_none() && old.is_none() {
        return Ok(None);
    }
    let mut c = cfg.clone();
    c.walk.keep_mappings = cfg.export.is_some();
    c.walk.verify_since = cfg.verify;
    if let Some(file) = &cfg.since {
        scan::since::prove_for(since_maps(file, msgs)?, &mut c.walk);
    } else if let Some(Ok(Some(mut m))) = old.map(saved::since::read) {
        // OLD's own errors are --compare's to report.
        m.proven_only = true;
        scan::since::prove_for(m, &mut c.walk);
    }
    Ok(Some(c))
}

/// The maps of the saved scan `file` (`--since`): none, said on `msgs`,
/// when it keeps none.
fn since_maps(file: &[u8], msgs: &Messages) -> Result<crate::records::mappings::Mappings, Error> {
    let m = saved::since::read(file).map_err(|what| Error::SavedScan {
        file: file.to_vec(),
        what: format!("--since: {what}"),
    })?;
    Ok(m.unwrap_or_else(|| {
        msgs.report(Diagnostic::NoSavedMaps {
            scan: file.to_vec(),
        });
        let mut m = crate::records::mappings::Mappings::default();
        m.scan = file.to_vec();
        m
    }))
}

/// The subvolumes of scan `s` by origin, and whether any of its roots is
/// on Btrfs ([`snapshots::groups`]): none when it kept no sets.
fn subvolume_groups(s: &Scanned) -> (Vec<snapshots::Group>, bool) {
    match &s.sets {
        Some(sets) => snapshots::groups(&s.tree, sets, &s.subvols),
        None => (Vec::new(), false),
    }
}

/// The `--snapshots` table of scan `s` (kept with its sets), as the
/// browser shows it (`sdu -i`, `p`): its lines without their ends, each
/// subvolume's row with its node (the header and each origin's footer
/// without one); or the one line saying that no root is on Btrfs. `opts`
/// gives the units, the marks and the time format; the rows are in the
/// table's order.
pub fn snapshot_table(s: &Scanned, opts: &ReportOptions) -> Vec<(Option<NodeId>, Vec<u8>)> {
    let (groups, btrfs) = subvolume_groups(s);
    if !btrfs {
        let tree = &s.tree;
        let roots: Vec<Vec<u8>> = tree
            .roots()
            .iter()
            .map(|&r| tree.name(r).to_vec())
            .collect();
        return vec![(None, report::snapshots::not_btrfs(&roots))];
    }
    report::snapshots::lines(&groups, opts)
}

/// `--export FILE`: the scan saved ([`scan::export`]), no report.
fn export(
    cfg: &Config,
    file: &[u8],
    out: &mut dyn Write,
    msgs: &Messages,
) -> Result<Outcome, Error> {
    let format = match (cfg.export_binary, cfg.export_zstd) {
        (true, _) => saved::Format::Binary,
        (false, true) => saved::Format::JsonZstd,
        (false, false) => saved::Format::Json,
    };
    let counters = scan::export(&cfg.walk, cfg.rules, cfg.stats, (file, format), out, msgs)?;
    Ok(Outcome {
        errors: msgs.errors(),
        counters,
        unreached: false,
    })
}
