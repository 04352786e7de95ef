//! The walk and the sweep of the shared extents it indexed: what the
//! roll-up takes.

use std::time::Instant;

use super::coverage;
use crate::error::{Diagnostic, Error};
use crate::figures::Bound;
use crate::messages::Messages;
use crate::walk::{self, Counters, WalkOptions};
use crate::{extents, probe, records, tree};

/// The records of a walk and its swept extents, before the roll-up.
pub(crate) struct Walked {
    pub(crate) nodes: records::Nodes,
    pub(crate) links: Vec<records::Link>,
    pub(crate) files: records::Files,
    /// Copies of files, sorted by the file they copy.
    pub(crate) copies: records::Copies,
    pub(crate) sweep: extents::Sweep,
    pub(crate) registry: probe::Registry,
    pub(crate) counters: Counters,
    pub(crate) moved: Vec<records::NodeId>,
    pub(crate) idents: Option<records::Idents>,
    pub(crate) read_errors: Vec<records::ReadError>,
    /// What the scan could verify.
    pub(crate) exact: records::Exactness,
    /// Bytes on disk no file references (as root on Btrfs).
    pub(crate) unreachable: tree::unreachable::Found,
    pub(crate) indexed: usize,
    pub(crate) t_walk: std::time::Duration,
    pub(crate) t_sweep: std::time::Duration,
    /// Some PATH lies inside another, as the walk found them.
    pub(crate) overlap: bool,
    /// The Btrfs subvolume roots met ([`WalkOptions::subvolumes`]).
    pub(crate) subvols: walk::subvols::Subvols,
    /// The extent maps kept for `--export` ([`WalkOptions::keep_mappings`]).
    pub(crate) mappings: records::mappings::MapBuf,
}

/// Walks `opts.roots` (by du's rules when `rules.du`) and sweeps the
/// shared extents; returns them with the walk's threads, for the roll-up.
///
/// The stages after the walk run on one of its threads
/// ([`rayon::ThreadPool::install`]), where they allocate in the memory the
/// walk freed: the C library gives each thread an arena of its own and
/// does not lend one thread's free memory to another; on the main thread
/// the roll-up grew the main arena while the walk's arenas held megabytes
/// free (docs/decisions.md, "Memory").
pub(crate) fn walk_and_sweep(
    opts: &WalkOptions,
    rules: tree::Rules,
    msgs: &Messages,
) -> Result<(Walked, rayon::ThreadPool), Error> {
    let t0 = Instant::now();
    let (walk, threads) = walk::walk(opts, rules.du, msgs)?;
    let t_walk = t0.elapsed();
    let w = threads.install(|| sweep(walk, t_walk, opts, msgs))?;
    // What the walk and the sweep kept and the roll-up does not take (the
    // inline records, the index of shared ranges, the extents' refs) is
    // freed by now, most of it in the walk threads' arenas, which glibc
    // keeps resident: given back before the roll-up makes its slots (at
    // 40 snapshots, 20 MB; docs/scale.md, "Snapshots").
    sdu_sys::mem::trim();
    Ok((w, threads))
}

/// Sweeps the shared extents `walk` indexed (in `t_walk`), and finds what
/// the scan could verify.
fn sweep(
    walk: walk::Walk,
    t_walk: std::time::Duration,
    opts: &WalkOptions,
    msgs: &Messages,
) -> Result<Walked, Error> {
    let walk::Walk {
        nodes,
        links,
        mut files,
        copies,
        extents,
        registry,
        mut counters,
        moved,
        idents,
        read_errors,
        bounds,
        partial_marks,
        unreachable,
        inode_marks,
        unreachable_inodes,
        partial_spaces,
        roots,
        overlap,
        left,
        subvols,
        mut since,
    } = walk;
    if let Some(e) = extents.spill_error() {
        return Err(e.into());
    }
    let coverage_walk = coverage::WalkCoverage {
        paths: &opts.roots,
        roots: &roots,
        follow: opts.follow_links || opts.follow_args,
        left: &left,
    };
    let coverage = coverage::Coverage::of_namespaces(coverage_walk, &registry);
    let t1 = Instant::now();
    let indexed = extents.ranges();
    let partly = extents.partly_referenced();
    counters.partial_extents = partly.extents;
    counters.unreachable_bytes = partly.bytes;
    let spaces = Spaces::of(&registry, partial_spaces);
    let verified = verify_outside(
        (&coverage, &coverage_walk, &registry),
        &spaces,
        &extents,
        (&mut files, &copies),
        (&mut counters, msgs),
    );
    let touching = touching_ranges(&spaces, &extents);
    let (mut sweep, spilled) = extents.into_sweep(|space| registry.granularity(space))?;
    counters.index_runs = spilled.runs;
    counters.index_spilled = spilled.bytes;
    let unreachable = tree::unreachable::Found {
        own: unreachable,
        shared: partly
            .shared
            .into_iter()
            .map(|u| (u.files, u.bytes))
            .collect(),
        inodes: unreachable_inodes,
    };
    let (units, mismatched) = units_of(&touching, &spaces, &sweep);
    let proven_fs = proven_filesystems(&spaces, &sweep, (&coverage, &roots), &mismatched);
    count_proven_units(&mut sweep, &spaces, &proven_fs);
    let runs = runs(&touching, &units, (&spaces, &proven_fs, &sweep));
    let marks = coverage::WalkMarks {
        nodes: bounds,
        partial: partial_marks,
        inodes: inode_marks,
    };
    let mut exact = exactness(
        (&coverage, &registry),
        &spaces,
        (&sweep, &files, &copies),
        marks,
        (&verified, &proven_fs),
        runs,
    );
    if let Some(saved) = opts.since.as_deref() {
        super::since::mark(&mut exact, (&since, saved), (&spaces.fs, &links), msgs);
    }
    let mappings = std::mem::take(&mut since.mappings);
    Ok(Walked {
        nodes,
        links,
        files,
        copies,
        sweep,
        registry,
        counters,
        moved,
        idents,
        read_errors,
        exact,
        unreachable,
        indexed,
        t_walk,
        t_sweep: t1.elapsed(),
        overlap,
        subvols,
        mappings,
    })
}

/// The walk's extent spaces, as the steps after it read them.
struct Spaces {
    /// Each space's filesystem (registry index).
    fs: Vec<u32>,
    /// Each space's namespace.
    ns: Vec<u32>,
    /// The spaces where files were read as referenced, with the bytes of
    /// their extents not flagged shared ([`walk::Walk::partial_spaces`]).
    partial: Vec<(u32, u64)>,
    /// The filesystems where files were read as referenced, sorted, each
    /// once.
    partial_fs: Vec<u32>,
}

impl Spaces {
    /// The spaces of `registry`, `partial` those read as referenced.
    fn of(registry: &probe::Registry, partial: Vec<(u32, u64)>) -> Spaces {
        let fs = registry.space_filesystems();
        let ns = registry.space_namespaces();
        let mut partial_fs: Vec<u32> = partial.iter().map(|p| fs[p.0 as usize]).collect();
        partial_fs.sort_unstable();
        partial_fs.dedup();
        Spaces {
            fs,
            ns,
            partial,
            partial_fs,
        }
    }

    /// Whether files of `space` were read as referenced.
    fn read_as_referenced(&self, space: u32) -> bool {
        self.partial.iter().any(|p| p.0 == space)
    }

    /// Whether `space` is of filesystem `fs` and of the roots of namespace
    /// `ns` (a root counted apart saw its files again, in spaces of its
    /// own).
    fn in_ns(&self, space: u32, fs: u32, ns: u32) -> bool {
        self.fs.get(space as usize) == Some(&fs)
            && (self.ns.get(space as usize)).map(|&s| extents::inline::root_ns(s)) == Some(ns)
    }

    /// Whether `space` holds inline data (metadata: not in Data Used).
    fn inline(&self, space: u32) -> bool {
        extents::inline::is_inline_ns(self.ns[space as usize])
    }
}

/// As root, where the scan does not cover a filesystem: who else holds
/// its shared data ([`extents::outside`]), each root namespace apart; by
/// space, whether it was verified. Not where files were read as
/// referenced (their ranges are not whole extents).
fn verify_outside(
    (coverage, coverage_walk, registry): (
        &coverage::Coverage,
        &coverage::WalkCoverage<'_>,
        &probe::Registry,
    ),
    spaces: &Spaces,
    extents: &extents::Extents,
    (files, copies): (&mut records::Files, &records::Copies),
    (counters, msgs): (&mut Counters, &Messages),
) -> Vec<bool> {
    let covered = coverage.covers_spaces(registry);
    let want: Vec<bool> = (spaces.fs.iter().zip(covered))
        .map(|(&fs, covered)| !covered && !spaces.partial_fs.contains(&fs))
        .collect();
    if !(want.iter().any(|&w| w) && extents::can_search_trees()) {
        return Vec::new();
    }
    let fds = coverage::open_filesystems(coverage_walk, registry);
    let mut verified = vec![false; spaces.fs.len()];
    for (ns, node) in walk::namespaces(coverage_walk.roots) {
        let v = verify_namespace(
            (ns, node),
            extents,
            registry,
            (files, copies),
            (&fds, &want),
            coverage_walk,
        );
        for (all, ok) in verified.iter_mut().zip(&v.spaces) {
            *all |= ok;
        }
        counters.outside_asked += v.asked;
        counters.outside_settled += v.settled;
        counters.outside_found += v.outside;
        for &fs in &v.no_rmapbt {
            msgs.report(Diagnostic::NoRmapbt {
                fs: registry.fs_name(fs),
            });
        }
    }
    verified
}

/// Without root on Btrfs, per data space read as referenced: its indexed
/// ranges merged where they overlap, in order of address (what the sweep
/// makes one unit each of), and whether each ends where the next starts.
/// FIEMAP cannot tell two extents laid end to end from one extent whose
/// parts different files hold: such units are a run ([`runs`]).
fn touching_ranges(spaces: &Spaces, extents: &extents::Extents) -> Vec<(u32, Vec<bool>)> {
    (0..spaces.fs.len() as u32)
        .filter(|&space| spaces.read_as_referenced(space) && !spaces.inline(space))
        .map(|space| {
            let mut r = extents.ranges_in(space);
            r.sort_unstable();
            let mut touches: Vec<bool> = Vec::new();
            let mut end: Option<u64> = None;
            for (start, len) in r {
                match end {
                    Some(e) if start < e => {}
                    Some(e) => {
                        touches.push(start == e);
                    }
                    None => {}
                }
                let stop = start.saturating_add(len);
                end = Some(end.map_or(stop, |e| e.max(stop)));
            }
            if end.is_some() {
                touches.push(false);
            }
            (space, touches)
        })
        .collect()
}

/// The units of each space of `touching` (sweep indices), or the
/// filesystems where they are not the merged ranges one for one (then
/// nothing is proven there).
fn units_of(
    touching: &[(u32, Vec<bool>)],
    spaces: &Spaces,
    sweep: &extents::Sweep,
) -> (Vec<(u32, std::ops::Range<usize>)>, Vec<u32>) {
    let mut units = Vec::new();
    let mut mismatched = Vec::new();
    for (space, touches) in touching {
        let mut of = sweep.fs_units().filter(|(s, _)| s == space).map(|s| s.1);
        match (of.next(), of.next()) {
            (Some(r), None) if r.len() == touches.len() => units.push((*space, r)),
            (None, None) if touches.is_empty() => {}
            _ => mismatched.push(spaces.fs[*space as usize]),
        }
    }
    (units, mismatched)
}

/// The runs of touching units (`Exactness::runs`: each unit with its
/// run's first unit) and the units of more than one segment
/// (`Exactness::split`) of the spaces of `proven_fs`, and those spaces.
fn runs(
    touching: &[(u32, Vec<bool>)],
    units: &[(u32, std::ops::Range<usize>)],
    (spaces, proven_fs, sweep): (&Spaces, &[u32], &extents::Sweep),
) -> Runs {
    let mut runs = Vec::new();
    let mut split = Vec::new();
    let mut unit_spaces = Vec::new();
    for (space, touches) in touching {
        let Some((_, of)) = units.iter().find(|u| u.0 == *space) else {
            continue;
        };
        if !proven_fs.contains(&spaces.fs[*space as usize]) {
            continue;
        }
        let before = (runs.len(), split.len());
        split.extend(
            (of.clone())
                .filter(|&i| sweep.unit(i).segments.len() > 1)
                .map(|i| i as u32),
        );
        let mut first: Option<u32> = None;
        for (k, i) in of.clone().enumerate() {
            let touched = k > 0 && touches[k - 1];
            let id = if touched { first } else { None };
            let i = i as u32;
            if touched || touches[k] {
                let id = id.unwrap_or(i);
                first = Some(id);
                runs.push((i, id));
            } else {
                first = None;
            }
        }
        let mut b = Bound::EXACT;
        if runs.len() > before.0 {
            b = b.with(Bound::AT_MOST);
        }
        if split.len() > before.1 {
            b = b.with(Bound::AT_LEAST);
        }
        if !b.is_exact() {
            unit_spaces.push((*space, b));
        }
    }
    runs.sort_unstable();
    split.sort_unstable();
    unit_spaces.sort_unstable_by_key(|s| s.0);
    (runs, split, unit_spaces)
}

/// What [`runs`] finds: `Exactness::runs`, `split` and `unit_spaces`.
type Runs = (Vec<(u32, u32)>, Vec<u32>, Vec<(u32, Bound)>);

/// The filesystems read as referenced, none in `mismatched`, whose Data
/// Used the roots of some namespace that covers them saw all of: there
/// each unit is one whole extent. Each asked once: the proof reads its
/// usage.
fn proven_filesystems(
    spaces: &Spaces,
    sweep: &extents::Sweep,
    (coverage, roots): (&coverage::Coverage, &[Option<walk::RootSeen>]),
    mismatched: &[u32],
) -> Vec<u32> {
    // Without root on Btrfs: the shared bytes (each once) and the rest of
    // the files' extents make what the roots of namespace `ns` saw on disk
    // (inline data, in spaces of its own, is metadata: not in Data Used).
    let seen = |fs: u32, ns: u32| -> u64 {
        let rest = (spaces.partial.iter())
            .filter(|p| spaces.in_ns(p.0, fs, ns))
            .fold(0u64, |a, p| a.saturating_add(p.1));
        sweep
            .fs_units()
            .filter(|(space, _)| spaces.in_ns(*space, fs, ns) && !spaces.inline(*space))
            .flat_map(|(_, units)| units.map(|u| sweep.unit(u).segments))
            .flat_map(|segs| segs.map(|s| sweep.segment(s).bytes))
            .fold(rest, u64::saturating_add)
    };
    // Whether the roots of some namespace that covers `fs` saw all its
    // Data Used: a fact of the filesystem, which every root shares.
    let proven = |fs: u32| {
        (walk::namespaces(roots).iter()).any(|&(ns, _)| {
            coverage.covers_in(fs, ns) && coverage.proves_whole_extents(fs, seen(fs, ns))
        })
    };
    (spaces.partial_fs.iter().copied())
        .filter(|&fs| !mismatched.contains(&fs) && proven(fs))
        .collect()
}

/// Proven (`proven_fs`), each unit of a space read as referenced is one
/// whole extent.
fn count_proven_units(sweep: &mut extents::Sweep, spaces: &Spaces, proven_fs: &[u32]) {
    for (space, &fs) in spaces.fs.iter().enumerate() {
        let read = spaces.read_as_referenced(space as u32);
        if read && !spaces.inline(space as u32) && proven_fs.contains(&fs) {
            sweep.count_units_as_extents(space as u32);
        }
    }
}

/// What the scan could verify: the walk's `marks`, the units no deletion
/// of the scan's files frees, and each filesystem's coverage, outside
/// check (`verified`) and proof (`proven_fs`).
fn exactness(
    (coverage, registry): (&coverage::Coverage, &probe::Registry),
    spaces: &Spaces,
    (sweep, files, copies): (&extents::Sweep, &records::Files, &records::Copies),
    mut marks: coverage::WalkMarks,
    (verified, proven_fs): (&[bool], &[u32]),
    (runs, split, unit_spaces): Runs,
) -> records::Exactness {
    let read_as_referenced: Vec<bool> = (0..spaces.fs.len() as u32)
        .map(|space| spaces.read_as_referenced(space))
        .collect();
    let in_run = |i: usize| (runs.binary_search_by_key(&(i as u32), |r| r.0)).is_ok();
    coverage::mark_unfreed_units(
        sweep,
        (files, copies),
        (&read_as_referenced, &in_run),
        &mut marks,
    );
    let mut exact = coverage.exactness(registry, marks, (&spaces.partial_fs, verified), |fs| {
        proven_fs.contains(&fs)
    });
    exact.runs = runs;
    exact.split = split;
    exact.unit_spaces = unit_spaces;
    exact
}

/// As root: who outside the roots of namespace `ns` holds the shared data
/// of its extent spaces in `want` ([`extents::outside`]). A root inside
/// another is verified apart, as if scanned alone: only its own files, and
/// the subvolumes its own walk holds whole, are inside it. What lies
/// outside is one more file, credited to `node` (see [`walk::namespaces`]).
fn verify_namespace(
    (ns, node): (u32, records::NodeId),
    extents: &extents::Extents,
    registry: &probe::Registry,
    (files, copies): (&mut records::Files, &records::Copies),
    (fds, want): (&[(u32, std::os::fd::OwnedFd)], &[bool]),
    w: &coverage::WalkCoverage<'_>,
) -> extents::outside::Verified {
    let space_ns = registry.space_namespaces();
    let want: Vec<bool> = (want.iter().zip(&space_ns))
        .map(|(&w, &s)| w && extents::inline::root_ns(s) == ns)
        .collect();
    if !want.contains(&true) {
        return extents::outside::Verified::default();
    }
    let scanned = w.left.whole_subvolumes(w.roots, registry, ns);
    // Another namespace's files are not this one's: blanked (inode 0).
    let apart: Option<records::Files> = (files.iter().any(|f| f.ns != ns)).then(|| {
        let mine = (files.iter())
            .map(|f| {
                if f.ns == ns {
                    f
                } else {
                    records::FileRec::default()
                }
            })
            .collect();
        records::Files::from_recs(mine)
    });
    let mine = apart.as_ref().unwrap_or(files);
    let (v, outside) =
        extents::outside::verify(extents, registry, (mine, copies), fds, &want, &scanned);
    if let Some(mut f) = outside {
        f.node = node;
        files.set(f);
    }
    v
}
