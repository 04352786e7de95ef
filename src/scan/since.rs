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
//! - As root on XFS with the reverse-mapping btree: the data device's
//!   reverse mappings (`GETFSMAP`, one pass) give every inode's data
//!   extents, and a block held by two of them is shared: each reused file
//!   whose shared ranges are those saved is proven.
//! - Anywhere else nothing proves a map (the Data Used proof of Btrfs
//!   without root holds as well when the copy that shared an extent of an
//!   unchanged file was deleted since, its saved map still calling that
//!   extent shared).
//!
//! Every unit of a filesystem where some reused map was not proven, and
//! the node of each such file, is marked either way.

use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use sdu_sys::fiemap::FIEMAP_EXTENT_SHARED;
use sdu_sys::fsmap;

use crate::error::Diagnostic;
use crate::figures::Bound;
use crate::messages::Messages;
use crate::probe::{Registry, magic};
use crate::records::Exactness;
use crate::records::mappings::Mappings;
use crate::walk::since::{MarkAt, Reused, Since};

/// What the filesystems proved of the reused maps.
#[derive(Debug, Default)]
pub(crate) struct Proof {
    /// Files whose reused map was proven, and those not.
    pub(crate) proven: u64,
    pub(crate) unproven: u64,
}

/// Proves what it can of the maps `since` reused from `saved`, with `fds`
/// (an fd on each filesystem the scan entered as a PATH), and marks in
/// `exact` what the others feed; `space_fs`: each extent space's
/// filesystem.
pub(super) fn mark(
    exact: &mut Exactness,
    (since, saved): (&Since, &Mappings),
    (registry, space_fs): (&Registry, &[u32]),
    fds: &[(u32, OwnedFd)],
    msgs: &Messages,
) -> Proof {
    let mut proof = Proof::default();
    if since.files.is_empty() {
        return proof;
    }
    let root = crate::extents::can_search_trees();
    let infos = registry.filesystems();
    // The reused files by filesystem.
    let mut by_fs: HashMap<u32, Vec<&Reused>> = HashMap::new();
    for f in &since.files {
        by_fs.entry(f.fs).or_default().push(f);
    }
    let mut unproven_fs = Vec::new();
    let (mut files, mut bytes, mut stale) = (0u64, 0u64, 0u64);
    for (fs, reused) in by_fs {
        let xfs = infos
            .get(fs as usize)
            .is_some_and(|i| i.magic == magic::XFS);
        let fd = fds.iter().find(|f| f.0 == fs).map(|f| f.1.as_fd());
        let proven = match fd {
            Some(fd) if xfs && root => xfs_proven(fd, &reused, saved),
            _ => None,
        };
        let checked = proven.is_some();
        let proven = proven.unwrap_or_else(|| vec![false; reused.len()]);
        for (f, ok) in reused.iter().zip(proven) {
            if ok {
                proof.proven += 1;
                continue;
            }
            stale += u64::from(checked);
            proof.unproven += 1;
            files += 1;
            bytes += f.bytes;
            match f.at {
                MarkAt::Node(n) => exact.nodes.push((n, Bound::UNKNOWN)),
                MarkAt::Inode(i) => exact.inodes.push((i, Bound::UNKNOWN)),
            }
            if !unproven_fs.contains(&fs) {
                unproven_fs.push(fs);
            }
        }
    }
    if unproven_fs.is_empty() {
        return proof;
    }
    for (space, fs) in space_fs.iter().enumerate() {
        if !unproven_fs.contains(fs) {
            continue;
        }
        if exact.spaces.len() <= space {
            exact.spaces.resize(space + 1, exact.other);
        }
        exact.spaces[space] = exact.spaces[space].with(Bound::UNKNOWN);
    }
    crate::records::merge_bounds(&mut exact.nodes);
    exact.inodes.sort_unstable_by_key(|m| m.0);
    exact.inodes.dedup_by(|b, a| {
        let same = a.0 == b.0;
        if same {
            a.1 = a.1.with(b.1);
        }
        same
    });
    msgs.report(Diagnostic::MappingsReused {
        scan: saved.scan.clone(),
        files,
        bytes,
        stale,
    });
    proof
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

/// On the XFS filesystem of `fd`: whether each of `reused` has the shared
/// ranges `saved` keeps of it, from the data device's reverse mappings.
/// `None` when they cannot be read (no rmapbt, not root, an error).
fn xfs_proven(fd: BorrowedFd<'_>, reused: &[&Reused], saved: &Mappings) -> Option<Vec<bool>> {
    if !fsmap::has_rmapbt(fd).ok()? {
        return None;
    }
    let device = fsmap::data_device(rustix::fs::fstat(fd).ok()?.st_dev);
    let wanted: HashMap<u64, usize> = (reused.iter().enumerate())
        .map(|(i, f)| (f.ino, i))
        .collect();
    // Every inode's data, as boundaries (address, +1 or -1): where two or
    // more overlap is shared. The reused files' own extents, kept apart.
    let mut edges: Vec<(u64, i32)> = Vec::new();
    let mut own: Vec<Vec<(u64, u64)>> = vec![Vec::new(); reused.len()];
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
    let proven = reused.iter().zip(own).map(|(f, mine)| {
        let Some((_, extents)) = saved.get(f.dev, f.ino) else {
            return false;
        };
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
