//! `--df` on Btrfs, as root: the subvolumes of the filesystem that a walk
//! of the mount does not reach, reached through the top level and walked
//! as extra roots, each named `<FS_TREE>/path/in/top/level`.
//!
//! A walk of the mount with `-x` meets the subvolumes under its root
//! ([`Subvolumes::under`]) but those beneath the mounts on it. The walks
//! of the directories those mounts cover ([`super::under_mounts`](mod@super::under_mounts)) meet
//! the subvolumes beneath them, except where the mount is a subvolume
//! mounted at its own place (`subvol=` the directory it covers): that
//! one is outside, named here with where it is mounted. Every other live
//! subvolume is outside, but for those holding the mount's root (the top
//! level, at least, when a subvolume is mounted): walked, they would walk
//! the mount again, so they are not, and the files they hold outside
//! their subvolumes are not seen. A subvolume inside one given is walked
//! as part of it.
//!
//! Each is opened beneath a read-only, detached mount of the top level
//! ([`crate::walk::top_level::reach`], as `--snapshots` reaches the
//! snapshots outside its PATHs). Without `CAP_SYS_ADMIN` the root tree
//! cannot be read: the subvolumes mounted in this mount namespace outside
//! the mount (their mountinfo `root` neither under the mount's nor above
//! it), or at their own place on it, are opened at their mount points
//! instead, and how many others lie outside cannot be told.

use std::collections::HashSet;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use rustix::fs as rfs;
use sdu_sys::btrfs::Subvolumes;
use sdu_sys::mountinfo::Mount;

use super::under_mounts::{Cover, beneath, children, copy_of, subvolume_root, within};
use crate::probe::magic;
use crate::walk::top_level::{in_top_level, reach, subvolid, top_level};

/// The id of the top level (`BTRFS_FS_TREE_OBJECTID`).
const FS_TREE: u64 = 5;

/// The subvolumes of a Btrfs filesystem a walk of one of its mounts does
/// not reach.
#[derive(Debug, Default)]
pub(crate) struct OutsideSubvols {
    /// Each reached, outermost first by path: its name (`<FS_TREE>/…`)
    /// and its root directory, open beneath the top level (as
    /// `walk::top_level::Outside` holds them).
    pub(crate) roots: Vec<(Vec<u8>, Arc<OwnedFd>)>,
    /// By position in `roots`: where it is mounted in this mount
    /// namespace, if it is (the first such mount point).
    pub(crate) mounted_at: Vec<Option<Vec<u8>>>,
    /// How many could not be reached (gone since the root tree was read,
    /// or no device to mount the top level from); `None`: without
    /// `CAP_SYS_ADMIN`, they cannot be listed (`roots` then holds the
    /// mounted ones alone: a part).
    pub(crate) missed: Option<usize>,
    /// The subvolumes holding the mount's root that are not walked (it
    /// would be walked again): their names (`<FS_TREE>`,
    /// `<FS_TREE>/path`); what they hold outside the mount and outside
    /// their subvolumes is not seen.
    pub(crate) holding: Vec<Vec<u8>>,
}

/// Every subvolume of the Btrfs filesystem of `fd` (the mount's root,
/// opened for reading) that a walk of `mount` with `-x` and of the
/// directories its submounts cover does not reach. Off Btrfs: none.
pub(crate) fn outside_subvolumes(
    fd: BorrowedFd<'_>,
    mount: &Mount,
    mounts: &[Mount],
) -> OutsideSubvols {
    let mut out = OutsideSubvols {
        missed: Some(0),
        ..OutsideSubvols::default()
    };
    if sdu_sys::fs::fs_type(fd).ok() != Some(magic::BTRFS) {
        return out;
    }
    let Ok(model) = Subvolumes::read(fd) else {
        // Without root the root tree cannot be read: the subvolumes
        // mounted outside the mount, or at their own place on it, are
        // reached at their mount points; whether any other lies outside
        // can be told only from the top level's root, under which every
        // subvolume lies.
        for (name, dir, point) in mounted(mount, mounts) {
            out.roots.push((name, dir));
            out.mounted_at.push(Some(point));
        }
        if !in_top_level(fd) {
            out.missed = None;
        }
        return out;
    };
    // Each live subvolume's path in the top level (`Err`: not linked to
    // it, deleted or being made).
    let paths: Vec<(u64, std::io::Result<Vec<u8>>)> = model
        .all()
        .iter()
        .filter(|s| s.alive())
        .map(|s| (s.id, model.path_in_top_level(fd, s.id)))
        .collect();
    let Some((reached, holders)) = reached(fd, mount, mounts, &model, &paths) else {
        out.missed = Some(paths.len().saturating_sub(1));
        return out;
    };
    let mut found: Vec<(u64, &[u8])> = Vec::new();
    for (id, p) in paths.iter().filter(|(id, _)| !reached.contains(id)) {
        match p {
            Ok(p) if holders.contains(id) => out.holding.push(name(p)),
            Ok(p) => found.push((*id, p)),
            Err(_) => *out.missed.get_or_insert(0) += 1,
        }
    }
    out.holding.sort();
    found.sort_by(|a, b| a.1.cmp(b.1));
    let mut kept: Vec<(u64, &[u8])> = Vec::new();
    for (id, p) in found {
        if !kept.iter().any(|(_, k)| within(p, k)) {
            kept.push((id, p));
        }
    }
    let top = top_level(&mount.source);
    for (id, path) in kept {
        match top.as_ref().and_then(|t| reach(t.as_fd(), id, path)) {
            Some(root) => {
                out.roots.push(root);
                out.mounted_at.push(mounted_at(mount, mounts, id, path));
            }
            None => *out.missed.get_or_insert(0) += 1,
        }
    }
    out
}

/// The subvolumes a walk of `mount` (root at `fd`) and of the directories
/// its submounts cover reaches, and those holding its root that it does
/// not; `paths`: every live subvolume's path in the top level. `None`
/// when what lies beneath a subvolume mounted at its own place cannot be
/// told, or the mount's own subvolume has no path.
fn reached(
    fd: BorrowedFd<'_>,
    mount: &Mount,
    mounts: &[Mount],
    model: &Subvolumes,
    paths: &[(u64, std::io::Result<Vec<u8>>)],
) -> Option<(HashSet<u64>, HashSet<u64>)> {
    // Under the root, at any depth, mounts or not: the walks of the
    // covered directories meet those beneath a mount on the mount.
    let mut reached: HashSet<u64> = model.under(fd).ok()?.into_iter().collect();
    // But a subvolume mounted at its own place is walked from the top
    // level, with those in it.
    let own: Vec<_> = (children(mount, mounts).into_iter())
        .filter(|c| c.cover == Cover::Subvolume)
        .collect();
    if !own.is_empty() {
        let copy = copy_of(fd, mount)?;
        for c in &own {
            let dir = beneath(copy.as_fd(), &c.rel)?;
            for id in model.under(dir.as_fd()).ok()? {
                reached.remove(&id);
            }
        }
    }
    // The subvolume of the mount's root, unless that is its root
    // directory, and those it lies in.
    let me = sdu_sys::btrfs::subvol(fd).ok()?.id;
    let mut holders = HashSet::from([FS_TREE]);
    if rfs::fstat(fd).ok()?.st_ino != 256 {
        holders.insert(me);
    }
    let mine = paths.iter().find(|(id, _)| *id == me)?.1.as_ref().ok()?;
    for (id, p) in paths {
        if p.as_ref().is_ok_and(|p| within(mine, p)) {
            holders.insert(*id);
        }
    }
    holders.retain(|h| !reached.contains(h));
    Some((reached, holders))
}

/// `<FS_TREE>` and the path in the top level.
fn name(path: &[u8]) -> Vec<u8> {
    let mut n = b"<FS_TREE>".to_vec();
    if !path.is_empty() {
        n.push(b'/');
        n.extend_from_slice(path);
    }
    n
}

/// Where subvolume `id` (at `path` in the top level) of `mount`'s
/// filesystem is mounted: a mount of it whole first, else of a directory
/// in it.
fn mounted_at(mount: &Mount, mounts: &[Mount], id: u64, path: &[u8]) -> Option<Vec<u8>> {
    let mut whole = b"/".to_vec();
    whole.extend_from_slice(path);
    let of = |m: &&Mount| m.dev == mount.dev && subvolid(&m.super_options) == Some(id);
    let mine: Vec<&Mount> = mounts.iter().filter(of).collect();
    mine.iter()
        .find(|m| m.root == whole)
        .or(mine.first())
        .map(|m| m.point.clone())
}

/// Without root: the subvolumes of `mount`'s filesystem mounted in this
/// namespace that a walk of it misses (mounted at their own place on it,
/// or whose root lies neither under its root nor above it), outermost
/// first, each opened at its mount point (checked to be that mount's
/// root): its name, its root directory, and the point.
fn mounted(mount: &Mount, mounts: &[Mount]) -> Vec<(Vec<u8>, Arc<OwnedFd>, Vec<u8>)> {
    let own: Vec<u64> = (children(mount, mounts).into_iter())
        .filter(|c| c.cover == Cover::Subvolume)
        .map(|c| c.by.id)
        .collect();
    let apart = |m: &Mount| {
        m.root != mount.root && !holds(&m.root, &mount.root) && !holds(&mount.root, &m.root)
    };
    let mut found: Vec<&Mount> = (mounts.iter())
        .filter(|m| m.dev == mount.dev && subvolume_root(m))
        .filter(|m| own.contains(&m.id) || apart(m))
        .collect();
    found.sort_by(|a, b| (&a.root, a.id).cmp(&(&b.root, b.id)));
    let mut out: Vec<(Vec<u8>, Arc<OwnedFd>, Vec<u8>)> = Vec::new();
    let mut kept: Vec<&[u8]> = Vec::new();
    for m in found {
        if kept.iter().any(|k| m.root == *k || holds(k, &m.root)) {
            continue;
        }
        if let Some(dir) = root_of(m) {
            kept.push(&m.root);
            out.push((name(&m.root[1..]), Arc::new(dir), m.point.clone()));
        }
    }
    out
}

/// Whether absolute path `dir` holds absolute path `p` strictly below it.
fn holds(dir: &[u8], p: &[u8]) -> bool {
    if dir == b"/" {
        return p.len() > 1;
    }
    within(p, dir)
}

/// The root directory of mount `m`, opened at its mount point for
/// reading; `None` unless what is opened there is that mount's root.
fn root_of(m: &Mount) -> Option<OwnedFd> {
    use rustix::fs::{AtFlags, Mode, OFlags, StatxAttributes, StatxFlags};
    let path = std::ffi::CString::new(m.point.clone()).ok()?;
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    let dir = rfs::open(path.as_c_str(), flags, Mode::empty()).ok()?;
    let st = rfs::statx(&dir, c"", AtFlags::EMPTY_PATH, StatxFlags::MNT_ID).ok()?;
    let root = st.stx_attributes_mask.contains(StatxAttributes::MOUNT_ROOT)
        && st.stx_attributes.contains(StatxAttributes::MOUNT_ROOT);
    (st.stx_mnt_id == m.id && root).then_some(dir)
}

#[cfg(test)]
mod tests;
