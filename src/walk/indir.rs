//! A directory being read, as its entries see it, and what its listing
//! says an entry is: shared by the `getdents` walk ([`super::dir`]) and the
//! Btrfs tree's ([`super::btrfs_listing`]); the byte format its entries
//! are held and batched in; the batched tree search of its files after
//! getdents (as root on Btrfs, where the tree does not list it).

use std::cell::Cell;
use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use super::ctx::{Ctx, Local};
use super::fdcache::{DirFs, DirHandle};
use crate::error::Diagnostic;
use crate::extents::ExtentSource;
use crate::probe::magic;

/// A directory being read, as its entries see it.
pub(super) struct InDir<'a> {
    pub(super) h: &'a Arc<DirHandle>,
    pub(super) fd: BorrowedFd<'a>,
    /// The same fd, for the cache: it goes there with the first
    /// subdirectory found ([`InDir::cache_fd`]), which opens itself from
    /// it. A directory without subdirectories never takes the cache's
    /// lock. `None` where `fd` is not the directory's own ([`Self::lazy`]).
    pub(super) shared: Option<&'a Arc<OwnedFd>>,
    cached: Cell<bool>,
    pub(super) fs: DirFs,
    /// Its entries listed as regular files are opened first and stat-ed
    /// through the fd ([`open_listed_file`](super::open::open_listed_file)): they are on a
    /// filesystem that can share, extents are wanted, no symlink is
    /// followed, no `O_PATH` check is needed ([`guarded`](super::open::guarded)), and the
    /// tree search (Btrfs, as root) does not read them without an open.
    pub(super) open_first: bool,
    /// Its regular files opened first go down the lean path
    /// ([`super::plain`]) when they can: no `-a` (each file its own node),
    /// no `--exclude` (each entry's path is matched), its fd its own.
    pub(super) plain: bool,
    /// As root on Btrfs: its regular files' items are read together with
    /// the tree search before they are stat-ed ([`prefetch`]).
    pub(super) search: bool,
    /// Listed from the Btrfs tree without an open of its own: `fd` is its
    /// subvolume's, good for the tree search only; whatever needs the
    /// directory itself (a `statx` or an open by name) opens it first
    /// ([`DirHandle::fd`]).
    pub(super) lazy: bool,
}

impl InDir<'_> {
    pub(super) fn new<'a>(
        ctx: &Ctx<'_>,
        h: &'a Arc<DirHandle>,
        fd: &'a Arc<OwnedFd>,
        fs: DirFs,
    ) -> InDir<'a> {
        let open_first = !ctx.run.opts.follow_links
            && !ctx.run.opts.skip_extents
            // `--since`: a file unchanged is stat-ed and never opened.
            && ctx.run.opts.since.is_none()
            && !h.guard
            && fs.info.can_share
            && !fs.info.unverified
            && !ctx.map.registry.fiemap_unsupported(fs.info.index)
            // As root on Btrfs the tree search reads files without an open.
            && ExtentSource::for_fs(&fs.info, ctx.map.extents.search_allowed()) != ExtentSource::BtrfsSearch
            // In a Btrfs snapshot most files are copies mapped once, which
            // need no open ([`crate::extents::unchanged`]).
            && fs.copies.is_none_or(|sv| sv.ids.1 == [0; 16]);
        let search = !ctx.run.opts.follow_links
            && !ctx.run.opts.skip_extents
            && fs.info.can_share
            && ExtentSource::for_fs(&fs.info, ctx.map.extents.search_allowed())
                == ExtentSource::BtrfsSearch;
        InDir {
            h,
            fd: fd.as_fd(),
            shared: Some(fd),
            cached: Cell::new(false),
            fs,
            open_first,
            plain: open_first && !ctx.run.opts.all && ctx.run.opts.excludes.is_empty(),
            search,
            lazy: false,
        }
    }

    /// Caches the directory's fd for its subdirectories to open
    /// themselves from, once per task (the cache keeps one slot per
    /// directory however many tasks of it insert).
    pub(super) fn cache_fd(&self, ctx: &Ctx<'_>) {
        if let Some(fd) = self.shared {
            if !self.cached.replace(true) {
                ctx.fds.cache.insert(self.h, fd);
            }
        }
    }
}

/// What getdents64 said an entry is (`d_type`), as the batches carry it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Listed {
    Other = 0,
    Symlink = 1,
    Regular = 2,
}

impl Listed {
    pub(super) fn of(t: rustix::fs::FileType) -> Listed {
        match t {
            rustix::fs::FileType::Symlink => Listed::Symlink,
            rustix::fs::FileType::RegularFile => Listed::Regular,
            _ => Listed::Other,
        }
    }

    pub(super) fn from_byte(b: u8) -> Listed {
        match b {
            1 => Listed::Symlink,
            2 => Listed::Regular,
            _ => Listed::Other,
        }
    }
}

/// As root on Btrfs: reads the items of a task's regular files together
/// ([`crate::extents::btrfs_batch`]), from what getdents listed (type and
/// inode number), for the task's files to take as they are accounted.
pub(super) fn prefetch(
    ctx: &Ctx<'_>,
    dir: &InDir<'_>,
    listed: impl Iterator<Item = (Listed, u64)>,
    local: &mut Local,
) {
    let (mut inos, mut avoid) = (Vec::new(), Vec::new());
    for (l, ino) in listed {
        match l {
            Listed::Regular => inos.push(ino),
            // Directories (and devices, FIFOs) whose items a range would
            // read for nothing.
            Listed::Other => avoid.push(ino),
            Listed::Symlink => {}
        }
    }
    inos.sort_unstable();
    inos.dedup();
    avoid.sort_unstable();
    if let Some((pre, calls)) =
        ctx.map
            .extents
            .prefetch_btrfs(dir.fd, dir.fs.info.index, &inos, &avoid)
    {
        local.pre = pre;
        local.counters.search_calls += u64::from(calls);
    }
}

/// Appends an entry to a batch: one byte of type, the inode number, then
/// the name (-L counts symlinks, regular files may be opened before they
/// are stat-ed, or their items read together).
pub(super) fn push_entry(batch: &mut Vec<u8>, listed: Listed, ino: u64, name: &CStr) {
    batch.push(listed as u8);
    batch.extend_from_slice(&ino.to_le_bytes());
    batch.extend_from_slice(name.to_bytes_with_nul());
}

/// The entries of a batch (the walk's `spawn_batch`): type, inode number, name.
pub(super) fn batch_entries(mut rest: &[u8]) -> impl Iterator<Item = (Listed, u64, &CStr)> {
    std::iter::from_fn(move || {
        let (&listed, tail) = rest.split_first()?;
        let (ino, tail) = tail.split_first_chunk::<8>()?;
        let name = CStr::from_bytes_until_nul(tail).ok()?;
        rest = &tail[name.to_bytes_with_nul().len()..];
        Some((Listed::from_byte(listed), u64::from_le_bytes(*ino), name))
    })
}

impl Ctx<'_> {
    /// The filesystem of `dev`, probed through `fd` the first time, with
    /// the extent space of namespace `ns`. A failed probe is warned about
    /// once per filesystem, naming `path`.
    pub(super) fn filesystem(
        &self,
        dev: u64,
        fd: BorrowedFd<'_>,
        ns: u32,
        path: &dyn Fn() -> Vec<u8>,
    ) -> DirFs {
        let (info, warning) = self.map.registry.lookup(dev, fd);
        self.map.registry.entered(dev, ns);
        if let Some(what) = warning {
            self.run
                .msgs
                .report(Diagnostic::Probe { path: path(), what });
        }
        if info.magic == magic::BTRFS && self.run.keep_inline && self.map.extents.trees_readable() {
            self.map.inline_keys.keep_fd(info.index, dev, fd);
        }
        let btrfs = (info.magic == magic::BTRFS)
            .then(|| self.map.registry.subvolume(dev))
            .flatten();
        let subvol = btrfs
            .filter(|_| !self.run.opts.map_each_copy)
            .filter(|sv| sv.ids.0 != [0; 16]);
        let copies = subvol.filter(|_| {
            !self.run.opts.skip_extents
                && ExtentSource::for_fs(&info, self.map.extents.search_allowed())
                    == ExtentSource::Fiemap
        });
        DirFs {
            info,
            space: self.map.registry.space(info.index, ns),
            copies,
            snapshot: subvol.is_some_and(|sv| sv.ids.1 != [0; 16]),
            map_dev: super::since::map_dev(btrfs.as_ref(), dev),
        }
    }
}
