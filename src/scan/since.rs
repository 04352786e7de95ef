//! `--since`: what the extent maps reused from a saved scan leave
//! uncertain, and what the filesystem proves of them.
//!
//! A file unchanged since the saved scan (its ctime, size and blocks) may
//! still have another map: a dedupe moves its extents without touching its
//! times, and a reflink copy made or deleted since changes what its
//! extents share, in both directions. What the figures read of a map is
//! its shared extents (indexed) and their bytes (the rest is its own):
//! where the filesystem's own records give the same shared ranges, a fresh
//! FIEMAP would give what was reused.
//!
//! - As root on XFS with the reverse-mapping btree, before the walk
//!   ([`prove`]): the data device's reverse mappings (`GETFSMAP`, one
//!   pass) give every inode's data extents, and a block two of them hold
//!   is shared. A saved map whose shared ranges are those is proven and
//!   reused as a fact; one whose are not is stale, and its file is mapped
//!   again. The check sees the filesystem as the walk starts, as a FIEMAP
//!   sees it as the walk reaches the file.
//! - Anywhere else nothing proves a map (the Data Used proof of Btrfs
//!   without root holds as well when the copy that shared an extent of an
//!   unchanged file was deleted since, its saved map still calling that
//!   extent shared): after the walk ([`mark`]) every unit of a filesystem
//!   where some unproven map was reused, and the node of each such file,
//!   is marked either way.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use crate::records::mappings::Checked;

use sdu_sys::fiemap::FIEMAP_EXTENT_SHARED;
use sdu_sys::fsmap;

use crate::error::Diagnostic;
use crate::figures::Bound;
use crate::messages::Messages;
use crate::probe::magic;
use crate::records::Exactness;
use crate::records::mappings::Mappings;
use crate::walk::since::Since;

/// The proof reads every mapping of the filesystem: it is made where the
/// saved files are at least 1/`PROOF_SHARE` of its inodes in use.
const PROOF_SHARE: u64 = 16;

/// As root, on each XFS filesystem with rmapbt among `fds` (one per PATH
/// that is a directory): which of the maps `saved` keeps of its files are
/// proven, and which stale ([`Checked`]), on up to `threads` threads; the
/// walk counts those it meets.
pub(crate) fn prove(saved: &mut Mappings, fds: &[OwnedFd], threads: usize) {
    if !crate::extents::can_search_trees() {
        return;
    }
    let mut done = Vec::new();
    for fd in fds {
        let fd = fd.as_fd();
        let Ok(st) = rustix::fs::fstat(fd) else {
            continue;
        };
        let xfs = sdu_sys::fs::fs_type(fd).ok() == Some(magic::XFS);
        if !xfs || done.contains(&st.st_dev) {
            continue;
        }
        done.push(st.st_dev);
        let files = saved.on_device(st.st_dev);
        if files.is_empty() {
            continue;
        }
        // The pass reads the whole filesystem's mappings, at least one an
        // inode: worth it only where the saved files are a good part of
        // them. Elsewhere they are mapped again, as without SCAN.
        let inodes =
            rustix::fs::fstatvfs(fd).map_or(u64::MAX, |v| v.f_files.saturating_sub(v.f_ffree));
        let found = if (files.len() as u64).saturating_mul(PROOF_SHARE) < inodes {
            vec![Checked::Remap; files.len()]
        } else {
            match xfs_proven(fd, (st.st_dev, threads), saved, &files) {
                Some(found) => found,
                None => continue,
            }
        };
        for (i, c) in files.zip(found) {
            saved.set_checked(i, c);
        }
    }
}

/// Gives `walk` the maps `m` of `--since`, proven where the filesystem's
/// records can (as root on XFS with rmapbt: [`prove`]). The proof opens
/// each PATH (as the walk resolves it) only to find its filesystem: what
/// it proves is bound to the device it read and to each saved file's
/// inode there, not to the name, so a PATH replaced before the walk
/// proves nothing of the files the walk then meets on another device. The
/// walk resolves its own PATHs (`--df` and `--to-free` give it others).
pub(crate) fn prove_for(mut m: Mappings, walk: &mut crate::walk::WalkOptions) {
    if !m.is_empty() && crate::extents::can_search_trees() {
        let follow = walk.follow_links || walk.follow_args;
        let flags = rustix::fs::OFlags::RDONLY
            | rustix::fs::OFlags::DIRECTORY
            | rustix::fs::OFlags::CLOEXEC;
        let fds: Vec<std::os::fd::OwnedFd> = (walk.roots.iter())
            .filter_map(|p| crate::walk::resolve_dir(p, follow))
            .filter_map(|fd| rustix::fs::openat(&fd, c".", flags, rustix::fs::Mode::empty()).ok())
            .collect();
        prove(&mut m, &fds, walk.threads);
    }
    walk.since = Some(std::sync::Arc::new(m));
}

/// Marks in `exact` the units of each filesystem where `since` reused a
/// map from `saved` that nothing proved (their nodes the walk marked), and
/// every node of `links` of such an inode; `space_fs`: each extent space's
/// filesystem.
pub(super) fn mark(
    exact: &mut Exactness,
    (since, saved): (&Since, &Mappings),
    (space_fs, links): (&[u32], &[crate::records::Link]),
    msgs: &Messages,
) {
    if since.filesystems.is_empty() {
        return;
    }
    if !since.inodes.is_empty() {
        for l in links {
            if since.inodes.binary_search(&l.inode()).is_ok() {
                exact.nodes.push((l.node, Bound::UNKNOWN));
            }
        }
        crate::records::merge_bounds(&mut exact.nodes);
    }
    for (space, fs) in space_fs.iter().enumerate() {
        if since.filesystems.binary_search(fs).is_err() {
            continue;
        }
        if exact.spaces.len() <= space {
            exact.spaces.resize(space + 1, exact.other);
        }
        exact.spaces[space] = exact.spaces[space].with(Bound::UNKNOWN);
    }
    msgs.report(Diagnostic::MappingsReused {
        scan: saved.scan.clone(),
        files: since.unproven.0,
        bytes: since.unproven.1,
    });
}

/// Half-open byte ranges, sorted, disjoint, none touching the next.
type Ranges = Vec<(u64, u64)>;

/// What one part of the pass keeps: the shared ranges, and the saved
/// files' own mappings (file, start, end).
type Part = (Ranges, Vec<(u32, u64, u64)>);

/// Appends `[s, e)` to `r`, whose ranges end at or before `s`.
fn push(r: &mut Ranges, s: u64, e: u64) {
    if s >= e {
        return;
    }
    match r.last_mut() {
        Some(last) if last.1 >= s => last.1 = last.1.max(e),
        _ => r.push((s, e)),
    }
}

/// Ranges in any order, made [`Ranges`].
fn normal(mut v: Vec<(u64, u64)>) -> Ranges {
    v.sort_unstable();
    let mut r = Ranges::new();
    for (s, e) in v {
        push(&mut r, s, e);
    }
    r
}

/// On the XFS filesystem of `fd` (device `dev`): whether each of the
/// files `range` of `saved` has the shared ranges saved, from the data
/// device's reverse mappings, in one pass that keeps only the shared
/// ranges and the saved files' own mappings, its allocation groups split
/// among up to `threads` threads. `None` when they cannot be read (no
/// rmapbt, an error).
fn xfs_proven(
    fd: BorrowedFd<'_>,
    (dev, threads): (u64, usize),
    saved: &Mappings,
    range: &std::ops::Range<usize>,
) -> Option<Vec<Checked>> {
    if !fsmap::has_rmapbt(fd).ok()? {
        return None;
    }
    let device = fsmap::data_device(dev);
    // No mapping crosses an allocation group: each part's is its own.
    let parts = group_parts(sdu_sys::xfs::geometry(fd).ok().flatten(), threads);
    let read = |part: (u64, u64)| -> Option<Part> {
        // The mappings come by address: a block is shared where one
        // starts before the furthest end of those before it.
        let mut shared = Ranges::new();
        let mut furthest = 0u64;
        let mut own: Vec<(u32, u64, u64)> = Vec::new();
        let mut map = fsmap::Fsmap::default();
        map.for_each(fd, device, part, |o| {
            if !o.is_file_data() || o.length == 0 {
                return;
            }
            let end = o.physical.saturating_add(o.length);
            push(&mut shared, o.physical, end.min(furthest));
            furthest = furthest.max(end);
            if let Some(i) = saved.index_in(range, o.owner) {
                own.push(((i - range.start) as u32, o.physical, end));
            }
        })
        .ok()?;
        Some((shared, own))
    };
    let found: Vec<Option<Part>> = std::thread::scope(|s| {
        let rest: Vec<_> = (parts[1..].iter())
            .map(|&p| s.spawn(move || read(p)))
            .collect();
        let first = read(parts[0]);
        std::iter::once(first)
            .chain(rest.into_iter().map(|h| h.join().ok().flatten()))
            .collect()
    });
    let (mut shared, mut own) = (Ranges::new(), Vec::new());
    for part in found {
        let (s, o) = part?;
        shared.extend(s);
        own.extend(o);
    }
    own.sort_unstable();
    let mut out = Vec::with_capacity(range.len());
    let mut rest = &own[..];
    for (k, i) in range.clone().enumerate() {
        let n = rest.iter().take_while(|r| r.0 as usize == k).count();
        let (mine, after) = rest.split_at(n);
        rest = after;
        let kept = normal(
            (saved.extents_at(i).iter())
                .filter(|e| e.flags & FIEMAP_EXTENT_SHARED != 0)
                .map(|e| (e.physical, e.physical.saturating_add(e.length)))
                .collect(),
        );
        let now = shared_part(&normal(mine.iter().map(|r| (r.1, r.2)).collect()), &shared);
        out.push(if kept == now {
            Checked::Proven
        } else {
            Checked::Stale
        });
    }
    Some(out)
}

/// The data device's byte ranges `(start, length)` for up to `threads`
/// parts, each of whole allocation groups (in order, the last to the
/// end); one part for all when the geometry is unknown.
fn group_parts(geo: Option<sdu_sys::xfs::Geometry>, threads: usize) -> Vec<(u64, u64)> {
    let whole = vec![(0, u64::MAX)];
    let Some(g) = geo.filter(|g| g.agcount > 0 && g.agblocks > 0 && g.blocksize > 0) else {
        return whole;
    };
    let n = threads.clamp(1, g.agcount as usize) as u64;
    let group = u64::from(g.agblocks) * u64::from(g.blocksize);
    let at = |i: u64| i * u64::from(g.agcount) / n * group;
    (0..n)
        .map(|i| {
            let start = at(i);
            let end = if i + 1 == n { u64::MAX } else { at(i + 1) };
            (start, end - start)
        })
        .collect()
}

/// The part of `mine` that lies in `shared`.
fn shared_part(mine: &Ranges, shared: &Ranges) -> Ranges {
    let mut out = Ranges::new();
    for &(s, e) in mine {
        let k = shared.partition_point(|r| r.1 <= s);
        for &(rs, re) in &shared[k..] {
            if rs >= e {
                break;
            }
            push(&mut out, s.max(rs), e.min(re));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_part_of_a_files_ranges() {
        let shared = vec![(10, 20), (30, 40)];
        assert_eq!(
            shared_part(&vec![(0, 15), (18, 35)], &shared),
            vec![(10, 15), (18, 20), (30, 35)]
        );
        assert_eq!(shared_part(&vec![(40, 50)], &shared), vec![]);
        assert_eq!(
            normal(vec![(5, 9), (0, 5), (20, 30)]),
            vec![(0, 9), (20, 30)]
        );
    }

    /// The allocation groups split among the threads, whole, in order,
    /// the last part to the end; one part where the geometry is unknown.
    #[test]
    fn the_groups_split_among_the_threads() {
        let g = sdu_sys::xfs::Geometry {
            blocksize: 4096,
            agblocks: 1000,
            agcount: 5,
            inodesize: 512,
            reflink: true,
        };
        let group = 4_096_000;
        assert_eq!(
            group_parts(Some(g), 2),
            [(0, 2 * group), (2 * group, u64::MAX - 2 * group)]
        );
        assert_eq!(group_parts(Some(g), 1), [(0, u64::MAX)]);
        assert_eq!(group_parts(Some(g), 64).len(), 5);
        assert_eq!(group_parts(None, 4), [(0, u64::MAX)]);
    }
}
