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

use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use crate::records::mappings::{Checked, MapExtent, MapKey};

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
/// proven, and which stale ([`Checked`]); the walk counts those it meets.
pub(crate) fn prove(saved: &mut Mappings, fds: &[OwnedFd]) {
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
        if (files.len() as u64).saturating_mul(PROOF_SHARE) < inodes {
            let remap: Vec<usize> = files.iter().map(|f| f.0).collect();
            for i in remap {
                saved.set_checked(i, Checked::Remap);
            }
            continue;
        }
        let Some(found) = xfs_proven(fd, st.st_dev, &files) else {
            continue;
        };
        let found: Vec<(usize, bool)> = (files.iter().map(|f| f.0)).zip(found).collect();
        for (i, ok) in found {
            let c = if ok { Checked::Proven } else { Checked::Stale };
            saved.set_checked(i, c);
        }
    }
}

/// Gives `walk` the maps `m` of `--since`, proven where the filesystem's
/// records can (as root on XFS with rmapbt: [`prove`]), on
/// the fds of its PATHs, which the walk then takes instead of their names.
pub(crate) fn prove_for(mut m: Mappings, walk: &mut crate::walk::WalkOptions) {
    if !m.is_empty() && crate::extents::can_search_trees() {
        let follow = walk.follow_links || walk.follow_args;
        if walk.path_fds.is_empty() {
            walk.path_fds = (walk.roots.iter())
                .map(|p| crate::walk::resolve_dir(p, follow).map(std::sync::Arc::new))
                .collect();
        }
        let flags = rustix::fs::OFlags::RDONLY
            | rustix::fs::OFlags::DIRECTORY
            | rustix::fs::OFlags::CLOEXEC;
        let fds: Vec<std::os::fd::OwnedFd> = (walk.path_fds.iter().flatten())
            .filter_map(|fd| rustix::fs::openat(fd, c".", flags, rustix::fs::Mode::empty()).ok())
            .collect();
        prove(&mut m, &fds);
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

/// On the XFS filesystem of `fd` (device `dev`): whether each of `files`
/// (index, inode, saved map) has the shared ranges saved, from the data
/// device's reverse mappings. `None` when they cannot be read (no rmapbt,
/// an error).
fn xfs_proven(
    fd: BorrowedFd<'_>,
    dev: u64,
    files: &[(usize, MapKey, &[MapExtent])],
) -> Option<Vec<bool>> {
    if !fsmap::has_rmapbt(fd).ok()? {
        return None;
    }
    let device = fsmap::data_device(dev);
    let wanted: HashMap<u64, usize> = (files.iter().enumerate())
        .map(|(i, f)| (f.1.ino, i))
        .collect();
    // Every inode's data, as boundaries (address, +1 or -1): where two or
    // more overlap is shared. The reused files' own extents, kept apart.
    let mut edges: Vec<(u64, i32)> = Vec::new();
    let mut own: Vec<Vec<(u64, u64)>> = vec![Vec::new(); files.len()];
    let mut map = fsmap::Fsmap::default();
    map.for_each(fd, device, (0, u64::MAX), |o| {
        if !o.is_file_data() || o.length == 0 {
            return;
        }
        let end = o.physical.saturating_add(o.length);
        edges.push((o.physical, 1));
        edges.push((end, -1));
        if let Some(&i) = wanted.get(&o.owner) {
            own[i].push((o.physical, end));
        }
    })
    .ok()?;
    edges.sort_unstable();
    let mut shared = Ranges::new();
    let (mut depth, mut from) = (0i32, 0u64);
    for (at, d) in edges {
        let before = depth;
        depth += d;
        if before < 2 && depth >= 2 {
            from = at;
        } else if before >= 2 && depth < 2 {
            push(&mut shared, from, at);
        }
    }
    let proven = files.iter().zip(own).map(|(&(_, _, extents), mine)| {
        let kept = normal(
            (extents.iter())
                .filter(|e| e.flags & FIEMAP_EXTENT_SHARED != 0)
                .map(|e| (e.physical, e.physical.saturating_add(e.length)))
                .collect(),
        );
        kept == shared_part(&normal(mine), &shared)
    });
    Some(proven.collect())
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
}
