//! `--df`: the directories of a filesystem that other mounts cover, and
//! (as root) what lies beneath them.
//!
//! The mounts on a mount are those whose parent (in
//! `/proc/self/mountinfo`) is it: each covers the directory of the mount
//! at its mount point. A mount stacked on one of them covers that mount,
//! not this filesystem, and a mount on a directory of another mount of
//! the same filesystem (a bind mount, another Btrfs subvolume mounted)
//! hides nothing this mount's walk misses: that directory is seen through
//! this mount, or through the subvolumes outside it
//! ([`super::outside`]). A covered directory cannot be deleted while the
//! mount on it lives: removed from another mount namespace, the mounts on
//! it here are taken away with it (measured: a tmpfs on a directory
//! `rmdir`-ed from another namespace is gone from mountinfo at once; a
//! directory renamed from there carries its mount, which mountinfo then
//! lists at its new place).
//!
//! As root, the mount is copied without its submounts
//! ([`sdu_sys::mount::clone_mount`]: `open_tree(OPEN_TREE_CLONE)`, a
//! detached mount, nothing another process sees) and each covered
//! directory opened beneath the copy ([`sdu_sys::mount::open_beneath`]:
//! never above it, through no symlink, on no other mount), to be walked
//! as an extra root. Without `CAP_SYS_ADMIN` the points are listed and
//! nothing beneath them is seen.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use rustix::fs::{self as rfs, AtFlags, StatxAttributes, StatxFlags};
use sdu_sys::mountinfo::Mount;

/// A directory of this filesystem that another mount covers.
#[derive(Debug)]
pub(crate) struct Covered {
    /// The mount point, as `/proc/self/mountinfo` gives it.
    pub(crate) point: Vec<u8>,
    /// What covers it: the covering mount's filesystem type and source,
    /// e.g. `tmpfs tmpfs`.
    pub(crate) by: Vec<u8>,
    /// The covering mount shows this very directory (a bind mount of it
    /// on itself): what lies beneath it is what the mount shows, hidden
    /// from nobody, though a walk of this mount does not enter it.
    pub(crate) itself: bool,
    /// The covered directory, open beneath a copy of this mount without
    /// its submounts (as root); `None` without `CAP_SYS_ADMIN`
    /// ([`UnderMounts::seen`] is then false) or, as root, when it could
    /// not be opened there.
    pub(crate) fd: Option<Arc<OwnedFd>>,
}

/// The directories of a mount that other mounts cover.
#[derive(Debug, Default)]
pub(crate) struct UnderMounts {
    /// By mount point; one inside another covered directory is left out
    /// (the walk of that one holds it).
    pub(crate) covered: Vec<Covered>,
    /// Whether the mount could be copied without its submounts (as root):
    /// what lies beneath the points was opened.
    pub(crate) seen: bool,
}

/// How a mount on this mount covers its directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cover {
    /// It shows another directory, or another filesystem.
    Hides,
    /// It shows this very directory (a bind mount of it on itself).
    Itself,
    /// It shows this very directory, the root of a Btrfs subvolume (the
    /// subvolume mounted at its own place): walked as a subvolume outside
    /// the mount, where it is named, not as a covered directory.
    Subvolume,
}

/// A mount on a directory of this mount.
#[derive(Debug)]
pub(super) struct Child<'m> {
    /// The covered directory's path below the mount's root (relative,
    /// never empty).
    pub(super) rel: Vec<u8>,
    pub(super) by: &'m Mount,
    pub(super) cover: Cover,
}

/// The mounts on directories of `mount`, by path; one inside the
/// directory of another is left out.
pub(super) fn children<'m>(mount: &Mount, mounts: &'m [Mount]) -> Vec<Child<'m>> {
    let mut found: Vec<Child<'m>> = mounts
        .iter()
        .filter(|m| m.parent == mount.id && m.id != mount.id)
        .filter_map(|m| {
            let rel = below(&mount.point, &m.point)?;
            let cover = cover(mount, m, &rel);
            Some(Child { rel, by: m, cover })
        })
        .collect();
    found.sort_by(|a, b| a.rel.cmp(&b.rel));
    let mut kept: Vec<Child<'m>> = Vec::new();
    for c in found {
        let inside = kept
            .iter()
            .any(|k| within(&c.rel, &k.rel) || c.rel == k.rel);
        if !inside {
            kept.push(c);
        }
    }
    kept
}

/// `point` relative to `base`, both absolute; `None` when it does not
/// lie strictly below it.
fn below(base: &[u8], point: &[u8]) -> Option<Vec<u8>> {
    let rest = if base == b"/" {
        point.strip_prefix(b"/")?
    } else {
        point.strip_prefix(base)?.strip_prefix(b"/")?
    };
    (!rest.is_empty()).then(|| rest.to_vec())
}

/// Whether relative path `p` lies strictly below relative path `dir`.
pub(super) fn within(p: &[u8], dir: &[u8]) -> bool {
    p.strip_prefix(dir)
        .is_some_and(|r| r.first() == Some(&b'/'))
}

/// How `by`, mounted at `rel` below `mount`'s root, covers it.
fn cover(mount: &Mount, by: &Mount, rel: &[u8]) -> Cover {
    let mut path = mount.root.clone();
    if !path.ends_with(b"/") {
        path.push(b'/');
    }
    path.extend_from_slice(rel);
    if by.dev != mount.dev || by.root != path {
        return Cover::Hides;
    }
    if subvolume_root(by) {
        Cover::Subvolume
    } else {
        Cover::Itself
    }
}

/// Whether `m` is a Btrfs mount of a subvolume's root directory (its
/// `subvol=` option, the path of the subvolume its root lies in, is its
/// root).
pub(super) fn subvolume_root(m: &Mount) -> bool {
    let subvol = (m.super_options.split(|&b| b == b',')).find_map(|o| o.strip_prefix(b"subvol="));
    m.fs_type == b"btrfs" && subvol == Some(&m.root[..])
}

/// The directories of `mount` that other mounts cover; `fd`: its root
/// directory (any fd open on it). As root, each opened beneath a copy of
/// the mount without its submounts.
pub(crate) fn under_mounts(fd: BorrowedFd<'_>, mount: &Mount, mounts: &[Mount]) -> UnderMounts {
    let kids = children(mount, mounts);
    let copy = copy_of(fd, mount);
    let covered = kids
        .iter()
        .filter(|c| c.cover != Cover::Subvolume)
        .map(|c| {
            let mut by = c.by.fs_type.clone();
            by.push(b' ');
            by.extend_from_slice(&c.by.source);
            Covered {
                point: c.by.point.clone(),
                by,
                itself: c.cover == Cover::Itself,
                fd: copy.as_ref().and_then(|t| beneath(t.as_fd(), &c.rel)),
            }
        })
        .collect();
    UnderMounts {
        covered,
        seen: copy.is_some(),
    }
}

/// A copy of `mount`, without its submounts, whose root is `fd`'s
/// directory; `None` without `CAP_SYS_ADMIN`, or when `fd` is not the
/// root of `mount`.
pub(super) fn copy_of(fd: BorrowedFd<'_>, mount: &Mount) -> Option<OwnedFd> {
    let st = rfs::statx(fd, c"", AtFlags::EMPTY_PATH, StatxFlags::MNT_ID).ok()?;
    let root = st.stx_attributes_mask.contains(StatxAttributes::MOUNT_ROOT)
        && st.stx_attributes.contains(StatxAttributes::MOUNT_ROOT);
    if st.stx_mnt_id != mount.id || !root {
        return None;
    }
    sdu_sys::mount::clone_mount(fd).ok()
}

/// The directory at `rel` beneath the copy `top`.
pub(super) fn beneath(top: BorrowedFd<'_>, rel: &[u8]) -> Option<Arc<OwnedFd>> {
    sdu_sys::mount::open_beneath(top, rel).ok().map(Arc::new)
}

#[cfg(test)]
pub(super) mod tests;
