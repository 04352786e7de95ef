//! The walk and the sweep of the shared extents it indexed: what the
//! roll-up takes.

use std::time::Instant;

use super::coverage;
use crate::error::{Diagnostic, Error};
use crate::messages::Messages;
use crate::walk::{self, Counters, WalkOptions};
use crate::{extents, probe, records, tree};

/// The records of a walk and its swept extents, before the roll-up.
pub(crate) struct Walked {
    pub(crate) nodes: records::Nodes,
    pub(crate) links: Vec<records::Link>,
    pub(crate) files: Vec<records::FileRec>,
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
}

/// Walks `opts.roots` (by du's rules when `rules.du`) and sweeps the
/// shared extents; returns them with the walk's threads, for the roll-up.
///
/// The stages after the walk run on one of its threads
/// ([`rayon::ThreadPool::install`]), where they allocate in the memory the
/// walk freed: the C library gives each thread an arena of its own and
/// does not lend one thread's free memory to another. On the main thread,
/// the roll-up grew the main arena while the walk's arenas held megabytes
/// free (the browser, cold on a Btrfs /usr copy as root: 19.2–19.7 MB
/// peak; 18.5–18.7 on a walk thread).
pub(crate) fn walk_and_sweep(
    opts: &WalkOptions,
    rules: tree::Rules,
    msgs: &Messages,
) -> Result<(Walked, rayon::ThreadPool), Error> {
    let t0 = Instant::now();
    let (walk, threads) = walk::walk(opts, rules.du, msgs)?;
    let t_walk = t0.elapsed();
    let w = threads.install(|| sweep(walk, t_walk, opts, msgs))?;
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
        files,
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
    // As root, where the scan does not cover a filesystem: who else holds
    // its shared data ([`extents::outside`]). Not where files were read as
    // referenced (their ranges are not whole extents).
    let space_fs = registry.space_filesystems();
    let space_ns = registry.space_namespaces();
    // The filesystems where files were read as referenced.
    let mut partial_fs: Vec<u32> = partial_spaces
        .iter()
        .map(|p| space_fs[p.0 as usize])
        .collect();
    partial_fs.sort_unstable();
    partial_fs.dedup();
    let covered = coverage.covers_spaces(&registry);
    let want: Vec<bool> = (space_fs.iter().zip(covered))
        .map(|(&fs, covered)| !covered && !partial_fs.contains(&fs))
        .collect();
    let mut files = files;
    let verified = if want.iter().any(|&w| w) && extents::can_search_trees() {
        let fds = coverage::open_filesystems(&coverage_walk, &registry);
        let mut verified = vec![false; space_fs.len()];
        for (ns, node) in walk::namespaces(&roots) {
            let v = verify_namespace(
                (ns, node),
                &extents,
                &registry,
                (&mut files, &copies),
                (&fds, &want),
                &coverage_walk,
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
    } else {
        Vec::new()
    };
    // Without root on Btrfs, the proof below needs every shared extent to
    // be one unit: two indexed ranges that touch may be parts of one
    // extent that different files hold (FIEMAP cannot tell).
    let touching: Vec<u32> = partial_fs
        .iter()
        .copied()
        .filter(|&fs| {
            space_fs
                .iter()
                .enumerate()
                .filter(|s| *s.1 == fs)
                .any(|(space, _)| {
                    let mut r = extents.ranges_in(space as u32);
                    r.sort_unstable();
                    r.windows(2)
                        .any(|w| w[0].0.saturating_add(w[0].1) == w[1].0)
                })
        })
        .collect();
    let (sweep, spilled) = extents.into_sweep(|space| registry.granularity(space))?;
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
    // Without root on Btrfs: the shared bytes (each once) and the rest of
    // the files' extents make what the roots of namespace `ns` saw on disk
    // (a root counted apart saw its files again, in spaces of its own;
    // inline data, in spaces of its own too, is metadata: not in Data Used).
    let in_ns = |space: u32, fs: u32, ns: u32| {
        space_fs.get(space as usize) == Some(&fs)
            && space_ns
                .get(space as usize)
                .map(|&s| extents::inline::root_ns(s))
                == Some(ns)
    };
    let inline = |s: u32| extents::inline::is_inline_ns(space_ns[s as usize]);
    let seen = |fs: u32, ns: u32| -> u64 {
        let rest = (partial_spaces.iter())
            .filter(|p| in_ns(p.0, fs, ns))
            .fold(0u64, |a, p| a.saturating_add(p.1));
        sweep
            .fs_units()
            .filter(|(space, _)| in_ns(*space, fs, ns) && !inline(*space))
            .flat_map(|(_, units)| units.map(|u| sweep.unit(u).segments))
            .flat_map(|segs| segs.map(|s| sweep.segment(s).bytes))
            .fold(rest, u64::saturating_add)
    };
    // Whether the roots of some namespace that covers `fs` saw all its
    // Data Used: a fact of the filesystem, which every root shares.
    let proven = |fs: u32| {
        (walk::namespaces(&roots).iter()).any(|&(ns, _)| {
            coverage.covers_in(fs, ns) && coverage.proves_whole_extents(fs, seen(fs, ns))
        })
    };
    // Asked once per filesystem: the proof reads its usage.
    let proven_fs: Vec<u32> = (partial_fs.iter().copied())
        .filter(|&fs| !touching.contains(&fs) && proven(fs))
        .collect();
    // Proven, each unit of a space read as referenced is one whole extent.
    let mut sweep = sweep;
    for (space, &fs) in space_fs.iter().enumerate() {
        let read = partial_spaces.iter().any(|p| p.0 == space as u32);
        if read && !inline(space as u32) && proven_fs.contains(&fs) {
            sweep.count_units_as_extents(space as u32);
        }
    }
    let mut marks = coverage::WalkMarks {
        nodes: bounds,
        partial: partial_marks,
        inodes: inode_marks,
    };
    let read_as_referenced: Vec<bool> = (0..space_fs.len() as u32)
        .map(|space| partial_spaces.iter().any(|p| p.0 == space))
        .collect();
    coverage::mark_unfreed_units(&sweep, (&files, &copies), &read_as_referenced, &mut marks);
    let exact = coverage.exactness(&registry, marks, (&partial_fs, &verified), |fs| {
        proven_fs.contains(&fs)
    });
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
    })
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
    (files, copies): (&mut Vec<records::FileRec>, &records::Copies),
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
    let scanned = coverage::whole_subvolumes(w, registry, ns);
    // Another namespace's files are not this one's: blanked (inode 0).
    let apart: Option<Vec<records::FileRec>> = (files.iter().any(|f| f.ns != ns)).then(|| {
        (files.iter())
            .map(|f| {
                if f.ns == ns {
                    *f
                } else {
                    records::FileRec::default()
                }
            })
            .collect()
    });
    let mine = apart.as_deref().unwrap_or(files);
    let (v, outside) =
        extents::outside::verify(extents, registry, (mine, copies), fds, &want, &scanned);
    if let Some(mut f) = outside {
        f.node = node;
        // One more record, not a doubling of a vector of millions.
        files.reserve_exact((f.id as usize + 1).saturating_sub(files.len()));
        files.resize(f.id as usize + 1, records::FileRec::default());
        files[f.id as usize] = f;
    }
    v
}
