//! The directories being walked, and the bounded cache of their fds.
//!
//! A directory's fd is kept (cached) only while some of its subdirectories
//! have not opened yet, and only while the cache is under a budget derived
//! from `RLIMIT_NOFILE`. A subdirectory whose parent fd was not cached
//! reopens the parent chain from the nearest cached ancestor (or the root
//! path), one `openat` per level, checking that each reopened directory is
//! the one it stat-ed. So the walk works under `ulimit -n 32` and never runs
//! out of fds on deep or wide trees.

use std::collections::VecDeque;
use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use dashmap::DashMap;
use rustix::fs::{AtFlags, CWD, OFlags, StatxFlags};

use super::open::{DirError, open_dir};
use crate::path::join;
use crate::probe::{FsInfo, Subvol};
use crate::records::NodeId;

/// A directory's filesystem and the extent space its files' extents are
/// keyed in.
#[derive(Clone, Copy, Debug)]
pub(super) struct DirFs {
    pub(crate) info: FsInfo,
    pub(crate) space: u32,
    /// Btrfs, mapped with FIEMAP: the subvolume's UUIDs, by which a file
    /// unchanged across snapshots is mapped once
    /// ([`crate::extents::unchanged`]); `None` elsewhere, or with
    /// `--map-each-copy`.
    pub(crate) copies: Option<Subvol>,
    /// Btrfs: the subvolume is a snapshot of another, whose files' copies
    /// in other snapshots the tree search records as copies
    /// ([`crate::extents::unchanged::Indexed`]).
    pub(crate) snapshot: bool,
    /// The device its files' saved maps are kept under
    /// ([`super::since::map_dev`]).
    pub(crate) map_dev: u64,
}

/// A directory being walked: what its children need to open themselves and
/// to name themselves in messages.
pub(super) struct DirHandle {
    /// This handle, for the fd cache's queue.
    pub(crate) me: Weak<DirHandle>,
    pub(crate) parent: Option<Arc<DirHandle>>,
    /// Entry name; for a root, the path as given.
    pub(crate) name: DirName,
    pub(crate) id: NodeId,
    pub(crate) depth: u32,
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    /// The mount of the root, for `-x`.
    pub(crate) root_mnt: super::open::Mount,
    /// The root's namespace (see `namespaces` in the walk).
    pub(crate) ns: u32,
    /// Open files in it only after an `O_PATH` check (see
    /// [`super::open::guarded`]).
    pub(crate) guard: bool,
    /// It is the root of a mount (a bind mount can make a directory its
    /// own descendant without the filesystem being corrupt).
    pub(crate) mount_root: bool,
    /// Symlinks followed on the way from the root to it (`-L`).
    pub(crate) symlinks: u32,
    /// Its position in its parent's getdents order (a root: among the
    /// roots).
    pub(crate) order: u32,
    /// Under du's rules: where to record that it was moved during the scan.
    pub(crate) watch: Option<Arc<MoveWatch>>,
    /// Its filesystem when known from the parent (same `st_dev`); `None`
    /// means probe it once opened.
    pub(crate) fs: Option<DirFs>,
    /// The length of the path as printed ([`DirHandle::path`]), saturated.
    pub(crate) path_len: u32,
    pub(crate) fd: Mutex<Option<Arc<OwnedFd>>>,
    /// 1 for the listing + batches in flight + subdirectories not yet
    /// opened. The fd cache is released when it drops to 0.
    pub(crate) pending: AtomicUsize,
    /// A root: the `O_PATH` fd its PATH was resolved by, before the walk
    /// (`super::roots`), which every open of it reopens, never its name.
    /// `None` below the roots, and past the first PATHs.
    pub(crate) resolved: Option<Arc<OwnedFd>>,
    /// The directories whose handles are alive, this one among them from
    /// [`Active::enter`] until its handle drops.
    pub(crate) active: Arc<Active>,
}

/// The directories whose handles are alive, by `(dev, ino)`, each with
/// the number of its live handles (a directory met twice, through two
/// roots or a bind mount, has two).
///
/// A handle keeps its parent alive, so every ancestor of a directory being
/// walked is in the set: a subdirectory that is not in it is no ancestor,
/// and [`DirHandle::cycle_with`] climbs the parent chain only for one that
/// is. Without it, each subdirectory climbed its whole chain, and a chain
/// of `n` directories cost `n²/2` steps.
#[derive(Debug, Default)]
pub(super) struct Active(DashMap<(u64, u64), u32>);

impl Active {
    /// A handle of directory `(dev, ino)` is made.
    pub(crate) fn enter(&self, dev: u64, ino: u64) {
        *self.0.entry((dev, ino)).or_insert(0) += 1;
    }

    /// A handle of directory `(dev, ino)` dropped.
    fn leave(&self, dev: u64, ino: u64) {
        if let dashmap::Entry::Occupied(mut e) = self.0.entry((dev, ino)) {
            *e.get_mut() -= 1;
            if *e.get() == 0 {
                e.remove();
            }
        }
    }

    /// Whether some handle of directory `(dev, ino)` is alive.
    fn holds(&self, dev: u64, ino: u64) -> bool {
        self.0.contains_key(&(dev, ino))
    }
}

/// A directory's name, held in its handle itself when short (nearly every
/// one is): a handle is made for every directory, and a name allocated on
/// its own was a `malloc` and a `free` (often on another thread) for each.
/// Written here because no crate holds a C string inline; the bytes are
/// checked again when read, so nothing `unsafe` is needed.
pub(super) enum DirName {
    /// Up to [`DirName::INLINE`] bytes and their NUL.
    Inline {
        len: u8,
        buf: [u8; DirName::INLINE + 1],
    },
    Heap(CString),
}

impl DirName {
    /// The longest name held inline.
    pub(crate) const INLINE: usize = 38;

    pub(crate) fn new(name: &CStr) -> DirName {
        let b = name.to_bytes_with_nul();
        if b.len() <= Self::INLINE + 1 {
            let mut buf = [0; Self::INLINE + 1];
            buf[..b.len()].copy_from_slice(b);
            DirName::Inline {
                len: (b.len() - 1) as u8,
                buf,
            }
        } else {
            DirName::Heap(name.to_owned())
        }
    }

    pub(crate) fn as_c_str(&self) -> &CStr {
        match self {
            DirName::Inline { len, buf } => CStr::from_bytes_with_nul(&buf[..=usize::from(*len)])
                .expect("a name copied from a C string has no NUL inside"),
            DirName::Heap(c) => c,
        }
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self {
            DirName::Inline { len, buf } => &buf[..usize::from(*len)],
            DirName::Heap(c) => c.as_bytes(),
        }
    }
}

/// Directories moved during the scan, found as their subtrees complete.
///
/// du returns from a directory to its parent through `..` once it has
/// read the directory's whole subtree, and fails there if the directory
/// was moved meanwhile ("fts_read failed"), which ends that root's
/// traversal. sdu holds directory fds and never notices a move by itself;
/// under du's rules it checks each directory's path once its subtree is
/// done (when its handle drops): gone, or another inode, is a move.
#[derive(Debug, Default)]
pub(super) struct MoveWatch {
    /// Paths are resolved through symlinks (`-L`, and roots under `-H`).
    pub(crate) follow: bool,
    /// (node, path as found) of each directory moved.
    pub(crate) moved: Mutex<Vec<(NodeId, Vec<u8>)>>,
}

impl DirHandle {
    /// This root directory, opened with `flags` through the fd its PATH
    /// was resolved by ([`super::roots::dir_at`]), checked against the
    /// inode the walk stat-ed.
    pub(super) fn open_root(&self, flags: OFlags) -> Result<OwnedFd, DirError> {
        super::roots::dir_at(
            self.resolved.as_deref(),
            self.name.as_c_str(),
            flags,
            self.dev,
            self.ino,
        )
    }

    /// Is this directory still at the path it was found at? `None` when
    /// that cannot be told (a path too long, a loop, no permission).
    fn still_there(&self, follow: bool) -> Option<bool> {
        // The kernel refuses a path of PATH_MAX bytes or more: not built,
        // so that checking each directory of a deep chain costs no more
        // than PATH_MAX bytes, not its depth.
        if self.path_len as usize >= PATH_MAX {
            return None;
        }
        let c = std::ffi::CString::new(self.path(None)).ok()?;
        let flags = if follow {
            AtFlags::STATX_DONT_SYNC
        } else {
            AtFlags::SYMLINK_NOFOLLOW | AtFlags::STATX_DONT_SYNC
        };
        match rustix::fs::statx(CWD, &c, flags, StatxFlags::INO) {
            Ok(st) => Some(
                st.stx_ino == self.ino
                    && rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor) == self.dev,
            ),
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => Some(false),
            Err(_) => None,
        }
    }

    /// Under du's rules, when its subtree is done: was it moved away from
    /// its parent? (Its path no longer leads to it while its parent's still
    /// leads to the parent: below a moved directory, nothing else is.)
    fn check_moved(&self, watch: &MoveWatch) {
        let f = watch.follow;
        let moved = self.still_there(f) == Some(false)
            && self
                .parent
                .as_ref()
                .is_some_and(|p| p.still_there(f) == Some(true));
        if moved {
            let path = self.path(None);
            watch
                .moved
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((self.id, path));
        }
    }
}

impl Drop for DirHandle {
    /// Drops the parent chain iteratively: a recursive drop of a
    /// 5,000-level chain would overflow a worker's stack. Under du's rules,
    /// first checks that the directory was not moved (its subtree is done).
    fn drop(&mut self) {
        if let (Some(w), Some(_)) = (&self.watch, &self.parent) {
            self.check_moved(w);
        }
        self.active.leave(self.dev, self.ino);
        let mut next = self.parent.take();
        while let Some(p) = next {
            match Arc::try_unwrap(p) {
                Ok(mut h) => {
                    // Its parent goes before its own drop runs: check now.
                    if let (Some(w), Some(_)) = (&h.watch, &h.parent) {
                        h.check_moved(w);
                    }
                    next = h.parent.take();
                }
                Err(_) => break,
            }
        }
    }
}

impl DirHandle {
    /// The length of [`DirHandle::path`] of subdirectory `name` of this
    /// one, saturated.
    pub(crate) fn child_path_len(&self, name: &[u8]) -> u32 {
        // Only a root's name (a path as given) can end with `/`.
        let sep = u32::from(self.name.as_bytes().last() != Some(&b'/'));
        let name = u32::try_from(name.len()).unwrap_or(u32::MAX);
        self.path_len.saturating_add(sep).saturating_add(name)
    }

    /// The path of this directory (and of `child` in it) as sdu prints it.
    pub(crate) fn path(&self, child: Option<&[u8]>) -> Vec<u8> {
        let mut names: Vec<&[u8]> = Vec::new();
        if let Some(c) = child {
            names.push(c);
        }
        let mut cur = Some(self);
        while let Some(h) = cur {
            names.push(h.name.as_bytes());
            cur = h.parent.as_deref();
        }
        let mut out = Vec::new();
        for n in names.iter().rev() {
            join(&mut out, n);
        }
        out
    }

    /// Is `(dev, ino)` this directory or one of its ancestors? If so,
    /// whether a mount root lies on the cycle (below the ancestor it
    /// matches, down to this directory), as du asks before it calls a cycle
    /// corruption.
    /// `climbed` counts the directories climbed through.
    pub(crate) fn cycle_with(&self, dev: u64, ino: u64, climbed: &mut u64) -> Option<bool> {
        if !self.active.holds(dev, ino) {
            return None;
        }
        let mut mount = false;
        let mut cur = Some(self);
        while let Some(d) = cur {
            *climbed += 1;
            if d.dev == dev && d.ino == ino {
                return Some(mount);
            }
            mount |= d.mount_root;
            cur = d.parent.as_deref();
        }
        None
    }

    fn slot(&self) -> MutexGuard<'_, Option<Arc<OwnedFd>>> {
        self.fd.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One subdirectory opened (or failed to): release the cached fd when
    /// nothing needs it any more.
    pub(crate) fn release(&self, cache: &FdCache) {
        if self.pending.fetch_sub(1, Ordering::AcqRel) == 1 && self.slot().take().is_some() {
            cache.released();
        }
    }

    /// An fd for this directory: the cached one, or one reopened through
    /// the parent chain with `flags`.
    pub(crate) fn fd(&self, cache: &FdCache, flags: OFlags) -> Result<Arc<OwnedFd>, DirError> {
        if let Some(fd) = self.slot().as_ref() {
            return Ok(fd.clone());
        }
        // Slow path: find the nearest ancestor with a cached fd and open
        // down from it, one level at a time.
        let mut chain: Vec<&DirHandle> = vec![self];
        let mut base: Option<Arc<OwnedFd>> = None;
        let mut cur = self.parent.as_deref();
        while let Some(h) = cur {
            if let Some(fd) = h.slot().as_ref() {
                base = Some(fd.clone());
                break;
            }
            chain.push(h);
            cur = h.parent.as_deref();
        }
        for h in chain.iter().rev() {
            // The tree may have changed since the walk stat-ed this
            // directory: never read another directory in its place.
            let fd = match &base {
                Some(b) => open_dir(b.as_fd(), h.name.as_c_str(), flags, h.dev, h.ino)?,
                None => h.open_root(flags)?,
            };
            let fd = Arc::new(fd);
            // Cache the reopened chain: the next sibling that needs one of
            // these directories finds it, so unwinding a deep tree under a
            // small budget costs O(depth² / budget) opens, not O(depth²).
            cache.insert(h, &fd);
            base = Some(fd);
        }
        Ok(base.expect("chain is never empty"))
    }
}

/// Linux's `PATH_MAX`: the bytes of a path the kernel takes, its NUL
/// included.
const PATH_MAX: usize = 4096;

/// The budget of cached directory fds, evicting the least recently cached.
///
/// The walk is depth-first on each thread, so the directories that will
/// need their fd soonest are the ones cached last; the oldest entries are
/// shallow directories whose remaining subdirectories will reopen them
/// through a short chain. (Keeping the oldest instead makes a deep tree
/// reopen ever longer chains.)
pub(super) struct FdCache {
    max: usize,
    inner: Mutex<CacheInner>,
}

struct CacheInner {
    /// Handles in the order they were cached; entries whose fd was since
    /// released are skipped and pruned.
    queue: VecDeque<Weak<DirHandle>>,
    /// Handles that hold an fd now.
    count: usize,
}

impl FdCache {
    /// A cache of at most `max` directory fds.
    pub(crate) fn new(max: usize) -> Self {
        FdCache {
            max,
            inner: Mutex::new(CacheInner {
                queue: VecDeque::new(),
                count: 0,
            }),
        }
    }

    /// Caches `fd` in `h`, evicting the oldest cached fd if full.
    pub(crate) fn insert(&self, h: &DirHandle, fd: &Arc<OwnedFd>) {
        let mut c = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if c.count >= self.max {
            let mut evicted = false;
            while let Some(w) = c.queue.pop_front() {
                if let Some(old) = w.upgrade() {
                    if old.slot().take().is_some() {
                        evicted = true;
                        break;
                    }
                }
            }
            if !evicted {
                return;
            }
        } else {
            c.count += 1;
        }
        if h.slot().replace(fd.clone()).is_some() {
            // Another thread cached this directory meanwhile: one slot.
            c.count -= 1;
        }
        c.queue.push_back(h.me.clone());
        if c.queue.len() > 2 * c.count + 64 {
            // Drop entries released since: a `Weak` keeps the handle's
            // memory, so they would keep every directory's handle until
            // the walk ends. Pruning when the queue is twice the cached
            // fds is amortized O(1) per insert.
            c.queue
                .retain(|w| w.upgrade().is_some_and(|h| h.slot().is_some()));
        }
    }

    /// A handle gave its cached fd back.
    fn released(&self) {
        let mut c = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        c.count = c.count.saturating_sub(1);
    }
}
