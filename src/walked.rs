//! The walk and the sweep of the shared extents it indexed: what the
//! roll-up takes.

use std::time::Instant;

use crate::error::{Diagnostic, Error};
use crate::messages::Messages;
use crate::walk::{self, Counters, WalkOptions};
use crate::{coverage, extents, probe, records, tree};

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
    pub(crate) exact: tree::Exactness,
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
        partial_fs,
        roots,
        overlap,
        left,
    } = walk;
    if let Some(e) = extents.spill_error() {
        return Err(e.into());
    }
    let coverage_walk = coverage::Walked {
        paths: &opts.roots,
        roots: &roots,
        follow: opts.follow_links || opts.follow_args,
        left: &left,
    };
    let coverage = coverage::Coverage::of_walk(coverage_walk, &registry);
    let t1 = Instant::now();
    let indexed = extents.ranges();
    let partly = extents.partly_referenced();
    counters.partial_extents = partly.extents;
    counters.unreachable_bytes = partly.bytes;
    // As root, where the scan does not cover a filesystem: who else holds
    // its shared data ([`extents::outside`]). Not where files were read as
    // referenced (their ranges are not whole extents).
    let space_fs = registry.space_filesystems();
    let want: Vec<bool> = space_fs
        .iter()
        .map(|&fs| !coverage.covers(fs) && !partial_fs.iter().any(|p| p.0 == fs))
        .collect();
    let mut files = files;
    let verified = if want.iter().any(|&w| w) && extents::can_search_trees() {
        let fds = coverage::open_filesystems(&coverage_walk, &registry);
        let scanned = coverage::whole_subvolumes(&coverage_walk, &registry);
        let (v, outside) = extents::outside::verify(
            &extents,
            &registry,
            (&files, &copies),
            &fds,
            &want,
            &scanned,
        );
        if let Some(f) = outside {
            // One more record, not a doubling of a vector of millions.
            files.reserve_exact((f.id as usize + 1).saturating_sub(files.len()));
            files.resize(f.id as usize + 1, records::FileRec::default());
            files[f.id as usize] = f;
        }
        counters.outside_asked = v.asked;
        counters.outside_settled = v.settled;
        counters.outside_found = v.outside;
        for &fs in &v.no_rmapbt {
            msgs.report(Diagnostic::NoRmapbt {
                fs: registry.fs_name(fs),
            });
        }
        v.spaces
    } else {
        Vec::new()
    };
    // Without root on Btrfs, the proof below needs every shared extent to
    // be one unit: two indexed ranges that touch may be parts of one
    // extent that different files hold (FIEMAP cannot tell).
    let touching: Vec<u32> = partial_fs
        .iter()
        .map(|p| p.0)
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
    // the files' extents make what the scan saw on disk.
    let seen = |fs: u32| -> u64 {
        let rest = partial_fs.iter().find(|p| p.0 == fs).map_or(0, |p| p.1);
        sweep
            .fs_units()
            .filter(|(space, _)| space_fs.get(*space as usize) == Some(&fs))
            .flat_map(|(_, units)| units.map(|u| sweep.unit(u).segments))
            .flat_map(|segs| segs.map(|s| sweep.segment(s).bytes))
            .fold(rest, u64::saturating_add)
    };
    let partial: Vec<u32> = partial_fs.iter().map(|p| p.0).collect();
    let exact = coverage.exactness(
        &registry,
        coverage::WalkMarks {
            nodes: bounds,
            partial: partial_marks,
            inodes: inode_marks,
        },
        (&partial, &verified),
        |fs| !touching.contains(&fs) && coverage.proves_whole_extents(fs, seen(fs)),
    );
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
