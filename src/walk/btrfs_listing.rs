//! As root on Btrfs: a directory listed from its subvolume's tree, and its
//! entries' figures read there too, instead of `getdents` and a `statx`
//! per entry ([`crate::extents::btrfs_tree`]).
//!
//! A directory listed from the tree is not opened: the tree is searched
//! through an fd of its subvolume the walk keeps ([`subvol_fd`]), and the
//! directory is opened only when an entry needs it (a `statx` by name, a
//! file the refs cannot decide, opened for FIEMAP), through its parent
//! chain. Its `statx` is the one the tree gave it in its parent's listing,
//! and the template every entry's is made from (device, mount, block
//! size), with the fields the inode item holds put in. What the tree
//! cannot stand in for goes through `statx` as in any walk, entry by
//! entry:
//! - an entry naming another subvolume (its device, its tree);
//! - a mount point inside the roots (the tree sees the directory under
//!   it), known from `/proc/self/mountinfo` when the walk starts;
//! - an entry whose inode item is missing, or does not parse, or whose type
//!   disagrees with the directory's.
//!
//! Entries are accounted in the directory's index order, the order
//! `getdents` lists them in on Btrfs. A directory of more than
//! [`INLINE_ENTRIES`] entries is split into batches other threads take
//! (the walk's `dir` module, which asks this one).

use std::ffi::CStr;
use std::ops::Range;
use std::os::fd::OwnedFd;
use std::sync::Arc;

use rustix::fs::{self as rfs, AtFlags, Statx, StatxAttributes};
use sdu_sys::btrfs::InodeItems;

use super::ctx::{Ctx, Local, MASK, TreeWalk, WalkOptions, WalkSetup};
use super::indir::{InDir, Listed};
use crate::extents::Extents;
pub(super) use crate::extents::btrfs_tree::TreeInode;
use crate::extents::btrfs_tree::{self, DirEntry, Want, file_type};
use crate::path::join;
use crate::probe::magic;

/// Entries of one directory accounted by the task that lists it; past
/// this, batches of [`BATCH_ENTRIES`] go to other threads. Without a
/// syscall per entry, an entry costs far less than in the `statx` walk.
pub(super) const INLINE_ENTRIES: usize = 4096;
/// Entries per batch of a wide directory.
pub(super) const BATCH_ENTRIES: usize = 8192;

/// The most subvolumes whose fd the walk keeps (a quarter of the fd limit,
/// and no more than this): their directories need no open of their own.
/// Past them, a subvolume's directories are each opened, stat-ed and
/// closed through their parent chain: with 16 kept, a scan of 100
/// snapshots as root made 275,000 of each (strace), a tenth of its time.
pub(super) const SUBVOL_FDS: usize = 4096;

/// The fd the walk keeps of subvolume `dev`, if any.
pub(super) fn subvol_fd(ctx: &Ctx<'_>, dev: u64) -> Option<Arc<OwnedFd>> {
    if !ctx.tree.on {
        return None;
    }
    let kept = ctx.tree.subvols.lock().unwrap_or_else(|e| e.into_inner());
    kept.get(&dev).map(Arc::clone)
}

/// Keeps `fd`, directory `dir`'s, as its subvolume's, if the tree lists it
/// and the walk keeps none yet (and fewer than [`super::ctx::Fds::max_subvols`]).
pub(super) fn keep_subvol_fd(ctx: &Ctx<'_>, dir: &InDir<'_>, fd: &Arc<OwnedFd>) {
    if !ctx.tree.on || !dir.search || dir.fs.info.magic != magic::BTRFS {
        return;
    }
    let mut kept = ctx.tree.subvols.lock().unwrap_or_else(|e| e.into_inner());
    if kept.len() < ctx.fds.max_subvols {
        kept.entry(dir.h.dev).or_insert_with(|| Arc::clone(fd));
    }
}

/// How the walk lists directories: from the tree when it may, as root
/// (the tree search, `extents`), without `-L`, du's rules or `--fiemap`,
/// with extents wanted. Keeps the mount points inside the roots
/// (`mounts`, [`mounts_inside`]) then.
pub(super) fn prepare(
    run: &WalkSetup<'_>,
    extents: &Extents,
    mounts: Option<Vec<Vec<u8>>>,
) -> TreeWalk {
    let o = run.opts;
    let on = extents.search_allowed() && options_allow(o, run.du_rules) && !run.hash_all;
    TreeWalk {
        on,
        mounts: if on {
            mounts.unwrap_or_default()
        } else {
            Vec::new()
        },
        ..TreeWalk::default()
    }
}

/// Whether the options let the walk read the trees: symlinks not
/// followed, not by du's rules, extents wanted.
fn options_allow(o: &WalkOptions, du_rules: bool) -> bool {
    !o.follow_links && !du_rules && !o.skip_extents
}

/// Whether the walk will likely read the roots from their Btrfs trees,
/// asked before the walk starts: as root, every root on Btrfs, the options
/// allowing it. Only the thread count of a cold walk depends on it.
pub(super) fn likely(o: &WalkOptions, du_rules: bool, roots: &super::roots::Roots) -> bool {
    !o.fiemap_only
        && options_allow(o, du_rules)
        && crate::extents::source::can_search_trees()
        && super::cold::all_on(roots, magic::BTRFS)
}

/// The template `statx` of directory `dir` (its own: `known`, when the
/// tree gave it, else a `statx` of its fd) and what the tree holds of it,
/// when the tree can list it (as root, on Btrfs, its inode item a
/// directory's, every item parsed); `None` when `getdents` must.
pub(super) fn listing(
    ctx: &Ctx<'_>,
    dir: &InDir<'_>,
    known: Option<&Statx>,
    local: &mut Local,
) -> Option<(Statx, Arc<TreeInode>)> {
    if !ctx.tree.on || !dir.search || dir.fs.info.magic != magic::BTRFS {
        return None;
    }
    if !ctx.map.extents.tree_ready(dir.fd, dir.fs.info.index) {
        return None;
    }
    let h = dir.h;
    let flags = AtFlags::EMPTY_PATH | AtFlags::STATX_DONT_SYNC;
    let template = match known {
        Some(st) => *st,
        None => rfs::statx(dir.fd, c"", flags, MASK).ok()?,
    };
    if template.stx_ino != h.ino || super::ctx::dev_of(&template) != h.dev {
        return None;
    }
    let me = match ctx.tree.inodes.take(h.dev, h.ino) {
        Some(me) => me,
        None => {
            let leaf = ctx.map.extents.node_size(dir.fs.info.index);
            let lineage = || ctx.map.extents.lineage(dir.fd, dir.fs.info.index);
            if let Ok((_, calls)) = ctx.tree.inodes.read(
                (dir.fd, leaf),
                (dir.fs.info.index, h.dev),
                &[h.ino],
                &lineage,
            ) {
                local.counters.search_calls += u64::from(calls);
            }
            ctx.tree.inodes.take(h.dev, h.ino)?
        }
    };
    (!me.broken && me.item.mode & 0o170000 == 0o040000).then_some((template, me))
}

/// The runs of inode numbers that hold the entries of part of a directory
/// not read ahead yet, each read when the walk first needs one of its
/// inodes: entries come in index order, mostly that of their inode
/// numbers, so a directory's first subdirectories are handed to other
/// threads before its last runs are read.
pub(super) struct Ahead {
    /// The inodes wanted, sorted.
    want: Vec<u64>,
    /// (first, last, read).
    runs: Vec<(u64, u64, bool)>,
    /// The files of one link each run read, by inode number, for this
    /// task to take ([`btrfs_tree::TreeCache::read_range`]).
    mine: Vec<Vec<(u64, Option<TreeInode>)>>,
}

impl Ahead {
    /// The runs of the entries `range` of directory `me`.
    pub(super) fn plan(
        ctx: &Ctx<'_>,
        dir: &InDir<'_>,
        me: &TreeInode,
        range: Range<usize>,
    ) -> Ahead {
        let mut want: Vec<u64> = me.entries()[range]
            .iter()
            .filter(|e| !e.subvol && !ctx.tree.inodes.has(dir.h.dev, e.child))
            .map(|e| e.child)
            .collect();
        want.sort_unstable();
        want.dedup();
        let runs: Vec<_> = btrfs_tree::runs(&want)
            .into_iter()
            .map(|(a, b)| (a, b, false))
            .collect();
        let mine = runs.iter().map(|_| Vec::new()).collect();
        Ahead { want, runs, mine }
    }

    /// File `ino` of one link, read by one of the runs, taken out.
    fn take(&mut self, ino: u64) -> Option<TreeInode> {
        let i = self.runs.partition_point(|r| r.1 < ino);
        let mine = self.mine.get_mut(i)?;
        let j = mine.binary_search_by_key(&ino, |m| m.0).ok()?;
        mine[j].1.take()
    }

    /// Reads the run that holds inode `ino`, and the refs of its data
    /// extents, unless it was read.
    pub(super) fn ensure(&mut self, ctx: &Ctx<'_>, dir: &InDir<'_>, ino: u64, local: &mut Local) {
        let i = self.runs.partition_point(|r| r.1 < ino);
        let Some(run) = self.runs.get_mut(i).filter(|r| r.0 <= ino && !r.2) else {
            return;
        };
        run.2 = true;
        if let Ok((bytenrs, calls)) = ctx.tree.inodes.read_range(
            (dir.fd, ctx.map.extents.node_size(dir.fs.info.index)),
            (dir.fs.info.index, dir.h.dev),
            (run.0, run.1),
            Want::Entries(&self.want),
            Some(&mut self.mine[i]),
            &|| ctx.map.extents.lineage(dir.fd, dir.fs.info.index),
        ) {
            local.counters.search_calls += u64::from(calls);
            let calls = ctx
                .map
                .extents
                .prefetch_refs(dir.fd, dir.fs.info.index, bytenrs);
            local.counters.search_calls += u64::from(calls);
        }
    }
}

/// What `statx` would say of entry `e` (named `name`) of a directory
/// listed from the tree, from its inode item; `None` where the tree cannot
/// stand in (another subvolume, a mount point: one of `mounts`, the names
/// of those in the directory; an inode item missing,
/// broken or of another type). A file of one link comes from the runs
/// `ahead` read for this task, anything else from the cache. A regular
/// file's extent items go to `local.pre` for the walk to take.
pub(super) fn known(
    ctx: &Ctx<'_>,
    dir: &InDir<'_>,
    template: &Statx,
    e: &DirEntry,
    name: &CStr,
    (mounts, ahead): (&[Vec<u8>], &mut Ahead),
    local: &mut Local,
) -> Option<Statx> {
    let h = dir.h;
    if e.subvol || mounts.iter().any(|m| m == name.to_bytes()) {
        if !e.subvol && e.file_type == file_type::DIR {
            under_mount(ctx, h.dev, e.child);
        }
        return None;
    }
    // A subdirectory's entries are its own task's to take; a file with more
    // links may be met again.
    let dir_entry = e.file_type == file_type::DIR;
    let child = match ahead.take(e.child).filter(|_| !dir_entry) {
        Some(t) => Got::Mine(t),
        None => Got::Cache(
            ctx.tree
                .inodes
                .take_if(h.dev, e.child, |c| !dir_entry && c.item.nlink <= 1)?,
        ),
    };
    let t = child.inode();
    if t.broken || !same_type(e.file_type, t.item.mode) {
        return None;
    }
    let sector = u64::from(template.stx_blksize).max(512);
    let st = statx_of(template, e.child, t, sector);
    local.pre.clear();
    if e.file_type == file_type::SYMLINK {
        // Its target is inline data: `--df` sums it (the walk maps no
        // symlink).
        let at = (dir.fd, dir.fs.info.index, h.dev);
        ctx.map.extents.store_items(at, e.child, &t.extents);
    } else if e.file_type == file_type::REG_FILE {
        // Taken out: its extents move to the walk, uncopied.
        let extents = match child {
            Got::Mine(t) => t.extents.into_vec(),
            Got::Cache(c) => match Arc::try_unwrap(c) {
                Ok(t) => t.extents.into_vec(),
                Err(shared) => shared.extents.to_vec(),
            },
        };
        local.pre.push((
            e.child,
            InodeItems {
                found: true,
                extents,
                calls: 0,
            },
        ));
    }
    local.counters.tree_entries += 1;
    Some(st)
}

/// Whether the items of inode `ino` its directory's listing read from the
/// Btrfs tree ([`Local::pre`]) reference some extent in part, leaving
/// bytes of it unreferenced ([`crate::extents::btrfs_items::HeldExtent::unreferenced`]).
pub(super) fn holds_bookend(local: &Local, ino: u64) -> bool {
    let Ok(i) = local.pre.binary_search_by_key(&ino, |p| p.0) else {
        return false;
    };
    let mut any = false;
    crate::extents::btrfs_items::held(&local.pre[i].1.extents, |h| {
        any |= h.unreferenced() > 0;
    });
    any
}

/// An entry's inode as [`known`] took it: from its task's runs, or from
/// the cache the threads share.
enum Got {
    Mine(TreeInode),
    Cache(Arc<TreeInode>),
}

impl Got {
    fn inode(&self) -> &TreeInode {
        match self {
            Got::Mine(t) => t,
            Got::Cache(c) => c,
        }
    }
}

/// The entry's name, as the directory holds it.
pub(super) fn name_of<'a>(me: &'a TreeInode, e: &DirEntry) -> &'a CStr {
    CStr::from_bytes_with_nul(me.name(e)).unwrap_or(c"")
}

/// What `getdents` would list the entry as.
pub(super) fn listed(e: &DirEntry) -> Listed {
    match e.file_type {
        file_type::REG_FILE => Listed::Regular,
        file_type::SYMLINK => Listed::Symlink,
        _ => Listed::Other,
    }
}

/// The names of the mount points directly in directory `dir`, once per
/// task: none, and no path built, when no mount lies inside the roots.
pub(super) fn mounts_in(ctx: &Ctx<'_>, dir: &InDir<'_>) -> Vec<Vec<u8>> {
    if ctx.tree.mounts.is_empty() {
        return Vec::new();
    }
    // An entry's path is its directory's joined with its name (`join`).
    let mut base = dir.h.path(None);
    join(&mut base, b"");
    ctx.tree
        .mounts
        .iter()
        .filter_map(|m| m.strip_prefix(base.as_slice()))
        .filter(|name| !name.is_empty() && !name.contains(&b'/'))
        .map(<[u8]>::to_vec)
        .collect()
}

/// The directory of subvolume `dev` that a mount point inside the roots
/// covers, inode `ino`, as the tree holds it: when it is empty (its inode
/// item's size is 0, a Btrfs directory's size counting its entries'
/// names), the mount hides nothing of the subvolume, and it is recorded so
/// ([`super::left::Left::hidden`]). Taken out of the cache: the walk goes
/// into the mount, never to it.
fn under_mount(ctx: &Ctx<'_>, dev: u64, ino: u64) {
    let Some(t) = ctx.tree.inodes.take(dev, ino) else {
        return;
    };
    if !t.broken && t.item.size == 0 && same_type(file_type::DIR, t.item.mode) {
        (ctx.records.empty_under_mounts.lock())
            .unwrap_or_else(|e| e.into_inner())
            .push((dev, ino));
    }
}

/// Whether the type the directory lists (`BTRFS_FT_*`) is the inode's.
fn same_type(ft: u8, mode: u32) -> bool {
    let fmt = mode & 0o170000;
    match ft {
        file_type::REG_FILE => fmt == 0o100000,
        file_type::DIR => fmt == 0o040000,
        file_type::SYMLINK => fmt == 0o120000,
        3 => fmt == 0o020000, // BTRFS_FT_CHRDEV
        4 => fmt == 0o060000, // BTRFS_FT_BLKDEV
        5 => fmt == 0o010000, // BTRFS_FT_FIFO
        6 => fmt == 0o140000, // BTRFS_FT_SOCK
        _ => false,
    }
}

/// What `statx` says of inode `ino`, from its inode item: Btrfs's
/// `st_blocks` is its bytes rounded up to the sector size (and, before a
/// sync, its delayed allocation: none, once synced).
fn statx_of(template: &Statx, ino: u64, t: &TreeInode, sector: u64) -> Statx {
    let it = &t.item;
    let mut st = *template;
    st.stx_ino = ino;
    st.stx_mode = it.mode as u16;
    st.stx_nlink = it.nlink;
    st.stx_uid = it.uid;
    st.stx_gid = it.gid;
    st.stx_size = it.size;
    st.stx_blocks = it.nbytes.div_ceil(sector).saturating_mul(sector) / 512;
    st.stx_attributes = StatxAttributes::empty();
    st.stx_rdev_major = (it.rdev >> 20) as u32;
    st.stx_rdev_minor = (it.rdev & 0xf_ffff) as u32;
    let times = [
        &mut st.stx_atime,
        &mut st.stx_ctime,
        &mut st.stx_mtime,
        &mut st.stx_btime,
    ];
    for ((ts, sec), nsec) in times.into_iter().zip(it.secs).zip(it.nsecs) {
        ts.tv_sec = sec;
        ts.tv_nsec = nsec;
    }
    st
}

/// The mount points that lie inside the roots, as the walk prints their
/// paths (the root as given, then the names under it), and how many of
/// them lie on a Btrfs (the filesystem of the mount each is made on);
/// `None` without `/proc/self/mountinfo`. Where a root lies is where the fd
/// its PATH was resolved by lies ([`super::roots`]), never its name
/// resolved again.
pub(super) fn mounts_inside(
    given: &[Vec<u8>],
    roots: &super::roots::Roots,
) -> Option<(Vec<Vec<u8>>, usize)> {
    let all = sdu_sys::mountinfo::read().ok()?;
    let btrfs: std::collections::HashMap<u64, bool> = (all.iter())
        .map(|m| (m.id, m.fs_type == b"btrfs"))
        .collect();
    let mut out: Vec<(Vec<u8>, bool)> = Vec::new();
    for (i, root) in given.iter().enumerate() {
        // A root that cannot be resolved cannot be walked either.
        let Some(canon) = roots.get(i).and_then(|r| r.place.as_deref()) else {
            continue;
        };
        for m in &all {
            let p = &m.point;
            let rel = if canon == b"/" {
                p.strip_prefix(b"/")
            } else {
                p.strip_prefix(canon).and_then(|r| r.strip_prefix(b"/"))
            };
            if let Some(rel) = rel.filter(|r| !r.is_empty()) {
                let mut printed = root.clone();
                for name in rel.split(|&b| b == b'/') {
                    join(&mut printed, name);
                }
                let on_btrfs = m.parent != m.id && btrfs.get(&m.parent) == Some(&true);
                out.push((printed, on_btrfs));
            }
        }
    }
    out.sort_unstable();
    // Mounts stacked on one point: one point, on a Btrfs if the lowest is.
    out.dedup_by(|b, a| {
        let same = a.0 == b.0;
        a.1 |= same && b.1;
        same
    });
    let on_btrfs = out.iter().filter(|m| m.1).count();
    Some((out.into_iter().map(|m| m.0).collect(), on_btrfs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_types_agree_with_modes() {
        assert!(same_type(file_type::REG_FILE, 0o100644));
        assert!(same_type(file_type::DIR, 0o040755));
        assert!(!same_type(file_type::DIR, 0o100644));
        assert!(same_type(file_type::SYMLINK, 0o120777));
        assert!(!same_type(0, 0o100644));
    }
}
