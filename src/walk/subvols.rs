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

use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

use sdu_sys::btrfs::{Subvol, Subvolumes};

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
    /// The subvolume it descends from, for grouping: its parent uuid, or
    /// as root the nearest subvolume alive it descends from (zero: none).
    pub(crate) origin: [u8; 16],
    /// How [`SubvolRoot::origin`] was found.
    pub(crate) origin_by: OriginBy,
}

/// How the subvolume a snapshot descends from was found ([`origin`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OriginBy {
    /// Its parent uuid alone (without `CAP_SYS_ADMIN`, or where nothing
    /// else told): a snapshot of a deleted subvolume, or of one outside
    /// the scan, is grouped by that uuid.
    ParentUuid,
    /// As root, through the root tree: its parent, or, past parents
    /// deleted whose root items last, the nearest subvolume alive.
    RootTree,
    /// As root, past a deleted parent whose root item is gone: the one
    /// subvolume, snapshot of none, that the subvolumes sharing its data
    /// descend from.
    SharedData,
}

impl OriginBy {
    /// Its name in `--json`.
    pub(crate) fn word(self) -> &'static str {
        match self {
            OriginBy::ParentUuid => "parent_uuid",
            OriginBy::RootTree => "root_tree",
            OriginBy::SharedData => "shared_data",
        }
    }
}

/// The subvolume roots of a walk, sorted by node.
#[derive(Clone, Debug, Default)]
pub(crate) struct Subvols {
    /// Every subvolume root met, sorted by node.
    pub(crate) roots: Vec<SubvolRoot>,
    /// Whether the walk met Btrfs at all.
    pub(crate) btrfs: bool,
    /// As root: each filesystem's subvolumes, read once, by the
    /// filesystem's registry index (`None`: they could not be read).
    models: Vec<(u32, Option<Arc<Subvolumes>>)>,
}

impl Subvols {
    /// The walk is over: the roots sorted by node, the root trees read for
    /// their origins let go.
    pub(super) fn finish(&mut self) {
        self.roots.sort_unstable_by_key(|r| r.node);
        self.models = Vec::new();
    }
}

/// What snapper or timeshift recorded of directory `h`, read in its
/// parent, open at `parent`, when the walk asks for subvolumes and `h`
/// has a subvolume root's inode number and a name their snapshots have.
pub(super) fn layout_in(ctx: &Ctx<'_>, h: &DirHandle, parent: BorrowedFd<'_>) -> Option<Layout> {
    if !ctx.run.opts.subvolumes || h.ino != SUBVOL_ROOT_INO {
        return None;
    }
    let name = h.name.as_bytes();
    if name != b"snapshot" && name.first() != Some(&b'@') {
        return None;
    }
    let path = h.path(None);
    crate::snapshot_layouts::describe_in(parent, Path::new(std::ffi::OsStr::from_bytes(&path)))
}

/// The filesystem of directory `h`, on a device its parent is not on (or
/// a root), open at `fd` ([`Ctx::filesystem`]); with
/// [`super::WalkOptions::subvolumes`], `h` recorded when it is a
/// subvolume root ([`met`]; `layout`: what [`layout_in`] read).
pub(super) fn filesystem(
    ctx: &Ctx<'_>,
    h: &DirHandle,
    fd: BorrowedFd<'_>,
    layout: Option<Layout>,
) -> DirFs {
    let fs = ctx.filesystem(h.dev, fd, h.ns, &|| h.path(None));
    if ctx.run.opts.subvolumes {
        met(ctx, h, fd, &fs, layout);
    }
    fs
}

/// The subvolume table, under the lock of what the walk saw of the PATHs.
fn table<'c>(ctx: &'c Ctx<'_>) -> std::sync::MutexGuard<'c, super::RootsSeen> {
    ctx.records.roots.lock().unwrap_or_else(|e| e.into_inner())
}

/// Records directory `h`, open at `fd` on filesystem `fs`, when it is a
/// subvolume root (inode [`SUBVOL_ROOT_INO`] on Btrfs); notes that the
/// walk met Btrfs.
fn met(ctx: &Ctx<'_>, h: &DirHandle, fd: BorrowedFd<'_>, fs: &DirFs, layout: Option<Layout>) {
    if fs.info.magic != magic::BTRFS {
        return;
    }
    table(ctx).subvols.btrfs = true;
    if h.ino != SUBVOL_ROOT_INO {
        return;
    }
    let Ok(info) = sdu_sys::btrfs::subvol(fd) else {
        return;
    };
    let flags = sdu_sys::btrfs::subvol_flags(fd).unwrap_or(0);
    let (origin, origin_by) = origin(ctx, fd, fs.info.index, &info);
    let given = (ctx.run.opts.root_fds.get(h.order as usize)).is_some_and(Option::is_some);
    let layout = match &h.parent {
        Some(_) => layout,
        // A root reached through the top level: its record is read in its
        // parent there, on that mount.
        None if given => {
            let path = h.path(None);
            let parent = sdu_sys::btrfs::open_parent(fd).ok();
            parent.and_then(|p| {
                let path = Path::new(std::ffi::OsStr::from_bytes(&path));
                crate::snapshot_layouts::describe_in(p.as_fd(), path)
            })
        }
        // A PATH: resolved by its name, as every PATH is.
        None => {
            let path = h.path(None);
            crate::snapshot_layouts::describe(Path::new(std::ffi::OsStr::from_bytes(&path)))
        }
    };
    let root = SubvolRoot {
        node: h.id,
        uuid: info.ids.0,
        parent: info.ids.1,
        created: info.created,
        read_only: flags & sdu_sys::btrfs::SUBVOL_RDONLY != 0,
        layout,
        origin,
        origin_by,
    };
    table(ctx).subvols.roots.push(root);
}

/// The data extents of a snapshot asked who else holds them, when its
/// parent is gone ([`origin`]).
const SHARED_EXTENTS: usize = 16;

/// The subvolume the one open at `fd` (on filesystem `fs`, `info`)
/// descends from, and how that was found ([`OriginBy`]). As root: its
/// parent when alive; past deleted parents whose root items last, the
/// nearest alive; past one whose root item is gone, the first ancestor
/// of the subvolumes that share its data, when they all have the same
/// one. Otherwise its parent uuid.
fn origin(ctx: &Ctx<'_>, fd: BorrowedFd<'_>, fs: u32, info: &Subvol) -> ([u8; 16], OriginBy) {
    let parent = info.ids.1;
    let Some(model) = model(ctx, fd, fs) else {
        return (parent, OriginBy::ParentUuid);
    };
    match model.alive_parent(parent) {
        Ok(u) => (u, OriginBy::RootTree),
        Err(_) => match by_shared_data(&model, fd, info.id) {
            Some(u) => (u, OriginBy::SharedData),
            None => (parent, OriginBy::ParentUuid),
        },
    }
}

/// The one first ancestor ([`Subvolumes::first_ancestor`]) of the
/// subvolumes alive that hold some of the first data extents of
/// subvolume `id`; `None` when they have none or several, or cannot be
/// asked.
fn by_shared_data(model: &Subvolumes, fd: BorrowedFd<'_>, id: u64) -> Option<[u8; 16]> {
    let sharing = sdu_sys::btrfs::sharing(fd, id, SHARED_EXTENTS).ok()?;
    let mut firsts: Vec<[u8; 16]> = Vec::new();
    for holder in sharing.iter().flatten() {
        if let Some(f) = model
            .first_ancestor(*holder)
            .filter(|_| model.alive(*holder))
        {
            if !firsts.contains(&f) {
                firsts.push(f);
            }
        }
    }
    (firsts.len() == 1).then(|| firsts[0])
}

/// As root, the subvolumes of filesystem `fs` (read through `fd` the
/// first time it is asked about); `None` without `CAP_SYS_ADMIN`.
fn model(ctx: &Ctx<'_>, fd: BorrowedFd<'_>, fs: u32) -> Option<Arc<Subvolumes>> {
    let known = |s: &Subvols| s.models.iter().find(|m| m.0 == fs).map(|m| m.1.clone());
    if let Some(m) = known(&table(ctx).subvols) {
        return m;
    }
    // Read outside the lock: a search of the root tree.
    let read = Subvolumes::read(fd).ok().map(Arc::new);
    let mut t = table(ctx);
    if let Some(m) = known(&t.subvols) {
        return m;
    }
    t.subvols.models.push((fs, read.clone()));
    read
}
