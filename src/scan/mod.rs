//! A scan: the rolled-up tree a run reports on, walked and swept
//! (`walked`, which `coverage` tells which filesystems it covers whole)
//! or read from a saved scan (`crate::saved::import`). Either way the
//! tree is rolled up in one place, [`roll_up`]. `--export` saves a walked
//! scan ([`export`]).

mod coverage;
pub(crate) mod since;
mod walked;

use std::borrow::Cow;
use std::io::Write;
use std::time::{Duration, Instant};

use crate::error::{Diagnostic, Error};
use crate::extents::Sweep;
use crate::figures::TimeField;
use crate::messages::Messages;
use crate::outfile::OutputFile;
use crate::probe::Granularity;
use crate::records::{self, Link};
use crate::walk::{Counters, WalkOptions};
use crate::{saved, stats, tree};

/// Where a run's tree comes from ([`crate::Config::source`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source<'a> {
    /// A walk of the roots.
    Walk,
    /// `--import FILE`: a saved scan.
    Import {
        /// The file (`-`: standard input).
        file: &'a [u8],
    },
}

/// How a scan gets its tree ([`crate::scan_to_tree`]).
#[derive(Clone, Debug)]
pub struct Scanning {
    /// What to walk, and how. On `--import` only `all` counts: it keeps
    /// the saved scan's files as entries of their own.
    pub walk: WalkOptions,
    /// The roll-up's rules.
    pub rules: tree::Rules,
    /// Keep what any set of entries frees ([`tree::Sets`]).
    pub sets: bool,
}

/// A rolled-up tree, walked or read from a saved scan.
#[derive(Debug)]
pub struct Scanned {
    /// The entries and their figures.
    pub tree: tree::Tree,
    /// What any set of them frees, when asked for.
    pub sets: Option<tree::Sets>,
    /// Every entry's identity, when the walk kept them
    /// ([`WalkOptions::identities`]).
    pub idents: Option<records::Idents>,
    /// The roots as the report names them (a saved scan's own).
    pub(crate) roots: Vec<Vec<u8>>,
    /// The errors a saved scan had met when it was saved (0 for a walk).
    pub(crate) saved_errors: u64,
    /// Whether the figures know what is shared: false for a saved scan
    /// sdu did not write (ncdu's own), where Exclusive is Total.
    pub(crate) sharing: bool,
    /// The directories not read in full, sorted by node: by the walk, or
    /// as the saved scan recorded them.
    pub read_errors: Vec<records::ReadError>,
    /// What the walk counted (nothing for a saved scan).
    pub counters: Counters,
    /// What `--stats` prints beyond the counters.
    pub(crate) sizes: stats::Sizes,
    /// The Btrfs subvolume roots the walk met, as it read them through
    /// their fds ([`WalkOptions::subvolumes`]; none for a saved scan).
    pub(crate) subvols: crate::walk::subvols::Subvols,
}

/// Walks `source` (or, for `--import`, reads it, the `--time` field
/// `time` recorded in it) and rolls the tree up as `how` says. Per-entry
/// failures go to `msgs`.
///
/// # Errors
/// [`Error::Threads`] when the walk cannot start its threads,
/// [`Error::TooManyEntries`] past 4 billion entries, [`Error::SavedScan`]
/// when a saved scan cannot be used.
pub(crate) fn scan(
    source: Source<'_>,
    time: Option<TimeField>,
    how: &Scanning,
    msgs: &Messages,
) -> Result<Scanned, Error> {
    if let Source::Import { file } = source {
        let bad = |what: String| Error::SavedScan {
            file: file.to_vec(),
            what,
        };
        let s = read_saved(how, file, time, &bad)?;
        if !s.sharing {
            msgs.report(Diagnostic::NotBySdu {
                file: file.to_vec(),
            });
        }
        return Ok(s);
    }
    let r = walk_and_roll_up(how, false, msgs)?;
    let w = r.walked;
    let sizes = stats::Sizes::walked(
        &r.tree,
        &r.shared,
        w.indexed,
        &w.registry,
        stats::Times {
            walk: w.t_walk,
            sweep: w.t_sweep,
            tree: r.t_tree,
        },
    );
    Ok(Scanned {
        tree: r.tree,
        sets: r.sets,
        idents: w.idents,
        read_errors: w.read_errors,
        roots: how.walk.roots.clone(),
        saved_errors: 0,
        sharing: true,
        counters: w.counters,
        sizes,
        subvols: w.subvols,
    })
}

/// Reads the saved scan `file` (`-`: standard input) and rolls it up as
/// `how` says (its rules, and `walk.all`: keep its files). `time`: the
/// `--time` field the report shows, which the scan must have recorded.
///
/// # Errors
/// `bad(what)` where the file cannot be read, is not a saved scan, is
/// truncated or inconsistent, lacks the time asked for, or was walked by
/// other rules than `how`'s where that matters.
pub(crate) fn read_saved(
    how: &Scanning,
    file: &[u8],
    time: Option<TimeField>,
    bad: &dyn Fn(String) -> Error,
) -> Result<Scanned, Error> {
    let l = saved::import::load(file, time, how.rules.du, how.walk.all, bad)?;
    let t1 = Instant::now();
    let saved::Saved {
        nodes,
        links,
        files,
        sweep,
        spaces,
        stops,
        errors,
        read_errors,
        ..
    } = l.saved;
    let granularity = |fs: u32| {
        spaces
            .iter()
            .find(|x| x.0 == fs)
            .map_or(Granularity::Block, |x| x.1)
    };
    let (n_files, n_links) = (files.len(), links.len());
    let (tree, sets) = roll_up(
        nodes,
        links,
        Cow::Owned(files),
        Cow::Borrowed(&sweep),
        granularity,
        how.build(&stops, &l.exact, &l.unreachable, records::Copies::NONE),
    );
    let sizes = stats::Sizes::Read {
        file: file.to_vec(),
        nodes: tree.len().saturating_sub(1),
        links: n_links,
        files: n_files,
        segments: sweep.segment_count(),
        units: sweep.unit_count(),
        read: l.t_read,
        tree: t1.elapsed(),
    };
    Ok(Scanned {
        tree,
        sets,
        idents: None,
        read_errors,
        roots: l.roots,
        saved_errors: errors,
        sharing: l.sharing,
        counters: Counters::default(),
        sizes,
        subvols: Default::default(),
    })
}

/// The one roll-up of a scan's tree, walked or read.
fn roll_up(
    nodes: impl Into<records::Nodes>,
    links: Vec<Link>,
    files: Cow<'_, records::Files>,
    sweep: Cow<'_, Sweep>,
    granularity: impl Fn(u32) -> Granularity,
    how: tree::Build<'_>,
) -> (tree::Tree, Option<tree::Sets>) {
    tree::Tree::roll_up(nodes, links, files, sweep, granularity, how)
}

/// A walk rolled up.
struct Rolled {
    /// What the walk and the sweep left: its nodes taken by the roll-up,
    /// and its links too unless they were kept.
    walked: walked::Walked,
    /// The tree.
    tree: tree::Tree,
    /// What any set of entries frees, when asked for.
    sets: Option<tree::Sets>,
    /// What the walk found shared, counted before the roll-up.
    shared: stats::Shared,
    /// How long the roll-up took.
    t_tree: Duration,
}

/// Walks and sweeps as `how` says and rolls the tree up on the walk's
/// threads. `keep_links`: leave the walk's links in it (a saved scan
/// writes them) and roll up a copy.
fn walk_and_roll_up(how: &Scanning, keep_links: bool, msgs: &Messages) -> Result<Rolled, Error> {
    let (mut w, threads) = walked::walk_and_sweep(&how.walk, how.rules, msgs)?;
    let t2 = Instant::now();
    let nodes = std::mem::take(&mut w.nodes);
    let links = if keep_links {
        w.links.clone()
    } else {
        std::mem::take(&mut w.links)
    };
    let shared = stats::Shared::of(&w.files, &w.copies, &w.sweep);
    // A saved scan writes the files and the sweep after the roll-up;
    // otherwise it takes them, and drops them before its peak.
    let (files, sweep) = if keep_links {
        (Cow::Borrowed(&w.files), Cow::Borrowed(&w.sweep))
    } else {
        (
            Cow::Owned(std::mem::take(&mut w.files)),
            Cow::Owned(std::mem::take(&mut w.sweep)),
        )
    };
    let granularity = |space| w.registry.granularity(space);
    let (tree, sets) = threads.install(|| {
        roll_up(
            nodes,
            links,
            files,
            sweep,
            granularity,
            how.build(&w.moved, &w.exact, &w.unreachable, &w.copies),
        )
    });
    drop(threads);
    // The sets read the copies the roll-up borrowed: moved in.
    let sets = sets.map(|s| s.with_copies(std::mem::take(&mut w.copies)));
    Ok(Rolled {
        t_tree: t2.elapsed(),
        walked: w,
        tree,
        sets,
        shared,
    })
}

impl Scanning {
    /// How to roll up: these rules and sets, with du's listing stopping
    /// after `stops`.
    fn build<'a>(
        &self,
        stops: &'a [records::NodeId],
        exact: &'a records::Exactness,
        unreachable: &'a tree::unreachable::Found,
        copies: &'a records::Copies,
    ) -> tree::Build<'a> {
        tree::Build {
            rules: self.rules,
            stops,
            sets: self.sets,
            exact,
            unreachable,
            copies,
        }
    }
}

/// `--export FILE`: walks `walk` as `-a` does (every file gets a node, so
/// that ncdu lists them) and maps every file that may share, rolls the
/// tree up by `rules` for the figures the file shows, and writes it. No
/// report; `--stats` (`with_stats`) on `msgs`. What the walk counted.
///
/// # Errors
/// [`Error::Threads`] when the walk cannot start its threads,
/// [`Error::SavedScan`] when FILE cannot be written, [`Error::Write`]
/// when standard output cannot.
pub(crate) fn export(
    walk: &WalkOptions,
    rules: tree::Rules,
    with_stats: bool,
    (file, format): (&[u8], saved::Format),
    out: &mut dyn Write,
    msgs: &Messages,
) -> Result<Counters, Error> {
    let failed = |e: std::io::Error| OutputFile::write_error(file, &e);
    // The file is created before the scan: a path that cannot be written
    // fails at once, not after a scan of minutes. It replaces FILE only
    // once complete ([`OutputFile`]).
    let timestamp = saved::timestamp().map_err(|what| Error::SavedScan {
        file: file.to_vec(),
        what,
    })?;
    let created = match file {
        b"-" => None,
        _ => Some(OutputFile::create(file)?),
    };
    let how = Scanning {
        walk: WalkOptions {
            all: true,
            skip_extents: false,
            ..walk.clone()
        },
        rules,
        sets: false,
    };
    let Rolled {
        walked: mut w,
        tree,
        t_tree,
        shared,
        ..
    } = walk_and_roll_up(&how, true, msgs)?;
    // The saved scan writes the records whole, each with its id.
    let files = std::mem::take(&mut w.files).into_recs();
    let granularity = |space| w.registry.granularity(space);
    let x = saved::Export {
        tree: &tree,
        links: &w.links,
        files: &files,
        copies: &w.copies,
        sweep: &w.sweep,
        granularity: &granularity,
        rules,
        exact: &w.exact,
        walk: saved::WalkRecord {
            follow_links: how.walk.follow_links,
            follow_args: how.walk.follow_args,
            one_file_system: how.walk.one_file_system,
            count_links: how.walk.count_links,
            excludes: !how.walk.excludes.is_empty(),
            time: how.walk.time,
        },
        errors: msgs.errors(),
        read_errors: &w.read_errors,
        overlap: w.overlap,
        mappings: &w.mappings,
        timestamp,
    };
    let t3 = Instant::now();
    if let Some(f) = created {
        let mut buf = std::io::BufWriter::with_capacity(1 << 16, f);
        saved::write_as(&mut buf, &x, format).map_err(failed)?;
        buf.into_inner()
            .map_err(|e| failed(e.into_error()))?
            .commit()?;
    } else {
        let mut buf = std::io::BufWriter::with_capacity(1 << 16, &mut *out);
        saved::write_as(&mut buf, &x, format)?;
    }
    let t_report = t3.elapsed();
    stats::closing_notes(&w.counters, msgs);
    if with_stats {
        let sizes = stats::Sizes::walked(
            &tree,
            &shared,
            w.indexed,
            &w.registry,
            stats::Times {
                walk: w.t_walk,
                sweep: w.t_sweep,
                tree: t_tree,
            },
        );
        msgs.raw(&stats::text(
            &w.counters,
            &sizes,
            t_report,
            tree.any_bound(),
        ));
    }
    Ok(w.counters)
}
