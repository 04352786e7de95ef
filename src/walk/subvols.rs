//! With [`super::WalkOptions::subvolumes`]: the identity of every Btrfs
//! subvolume root the walk opens, read through the fd the walk opened it
//! by, so that what `--snapshots` reports of a subvolume is what the walk
//! read there, never what a name leads to afterwards.
//!
//! A subvolume root is a directory with inode 256 on Btrfs
//! ([`SUBVOL_ROOT_INO`]). Through its fd: its uuid, parent uuid, id and
//! creation time (`BTRFS_IOC_GET_SUBVOL_INFO`) and its read-only flag
//! (`BTRFS_IOC_SUBVOL_GETFLAGS`), both unprivileged. What snapper or
//! timeshift recorded of it is read in its parent directory, through the
//! fd the walk opened the root from
//! ([`crate::snapshot_layouts::describe_in`]); a PATH that is itself a
//! subvolume root has its record read by path, as the PATH is resolved.
//! The plain walk asks nothing of this: without the option, no directory
//! is asked more than before.

use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::ctx::Ctx;
use super::fdcache::{DirFs, DirHandle};
use crate::probe::magic;
use crate::records::NodeId;
use crate::snapshot_layouts::Layout;

/// The inode number of every Btrfs subvolume's root directory.
pub(crate) const SUBVOL_ROOT_INO: u64 = 256;

/// One subvolume root the walk opened, as read through its fd.
#[derive(Clone, Debug)]
pub(crate) struct SubvolRoot {
    /// Its node.
    pub(crate) node: NodeId,
    /// Its device (`st_dev`: one per subvolume).
    pub(crate) dev: u64,
    /// Its subvolume id.
    pub(crate) id: u64,
    /// Its uuid.
    pub(crate) uuid: [u8; 16],
    /// The uuid of the subvolume it is a snapshot of (zero: none).
    pub(crate) parent: [u8; 16],
    /// Its creation time (`otime`): seconds, nanoseconds.
    pub(crate) created: (i64, u32),
    /// Whether it is read-only.
    pub(crate) read_only: bool,
    /// What snapper or timeshift recorded of it.
    pub(crate) layout: Option<Layout>,
}

/// The subvolume roots of a walk, sorted by node.
#[derive(Clone, Debug, Default)]
pub(crate) struct Subvols {
    /// Every subvolume root met, sorted by node.
    pub(crate) roots: Vec<SubvolRoot>,
    /// Whether the walk met Btrfs at all.
    pub(crate) btrfs: bool,
}

/// Whether directory `h` is asked for a subvolume identity: the walk was
/// told to, and its inode number is a subvolume root's. (Whether it is on
/// Btrfs is known once it is open.)
pub(super) fn wanted(ctx: &Ctx<'_>, h: &DirHandle) -> bool {
    ctx.run.opts.subvolumes && h.ino == SUBVOL_ROOT_INO
}

/// What snapper or timeshift recorded of the directory `h`, read in its
/// parent, open at `parent`; `None` when `h` is not named as one of their
/// snapshots is ([`wanted`] first).
pub(super) fn layout_in(h: &DirHandle, parent: BorrowedFd<'_>) -> Option<Layout> {
    let name = h.name.as_bytes();
    if name != b"snapshot" && name.first() != Some(&b'@') {
        return None;
    }
    let path = h.path(None);
    crate::snapshot_layouts::describe_in(parent, Path::new(std::ffi::OsStr::from_bytes(&path)))
}

/// Records directory `h`, open at `fd` on filesystem `fs`, when it is a
/// subvolume root ([`wanted`]); `layout`: what [`layout_in`] read, for a
/// directory below a PATH. Notes that the walk met Btrfs.
pub(super) fn met(
    ctx: &Ctx<'_>,
    h: &DirHandle,
    fd: BorrowedFd<'_>,
    fs: &DirFs,
    layout: Option<Layout>,
) {
    if fs.info.magic != magic::BTRFS {
        return;
    }
    let mut found = ctx
        .records
        .subvols
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    found.btrfs = true;
    if !wanted(ctx, h) {
        return;
    }
    drop(found);
    let Ok(info) = sdu_sys::btrfs::subvol(fd) else {
        return;
    };
    let flags = sdu_sys::btrfs::subvol_flags(fd).unwrap_or(0);
    let layout = match &h.parent {
        Some(_) => layout,
        // A PATH: resolved by its name, as every PATH is.
        None => {
            let path = h.path(None);
            crate::snapshot_layouts::describe(Path::new(std::ffi::OsStr::from_bytes(&path)))
        }
    };
    let root = SubvolRoot {
        node: h.id,
        dev: h.dev,
        id: info.id,
        uuid: info.ids.0,
        parent: info.ids.1,
        created: info.created,
        read_only: flags & sdu_sys::btrfs::SUBVOL_RDONLY != 0,
        layout,
    };
    let mut found = ctx
        .records
        .subvols
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    found.roots.push(root);
}
