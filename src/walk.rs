//! The parallel walk: every directory read through its own fd, every entry
//! stat-ed relative to it.
//!
//! Each directory is a rayon task. It opens the directory with
//! `openat(parent_fd, name)`, reads it with getdents64 into a per-thread
//! buffer and stats each entry with `statx(dirfd, name, AT_SYMLINK_NOFOLLOW |
//! AT_STATX_DONT_SYNC)`; no syscall takes a full path, so depth and PATH_MAX
//! do not matter. Subdirectories become new tasks.
//!
//! **File descriptors are bounded.** A directory's fd is kept (cached) only
//! while some of its subdirectories have not opened yet, and only while the
//! cache is under a budget derived from `RLIMIT_NOFILE`. A subdirectory whose
//! parent fd was not cached reopens the parent chain from the nearest cached
//! ancestor (or the root path), one `openat` per level, and checks that each
//! reopened directory is the one it stat-ed. So the walk works under
//! `ulimit -n 32` and never runs out of fds on deep or wide trees.
//!
//! **Wide directories are split.** After the first [`INLINE_ENTRIES`]
//! entries of a directory, names are copied into batches that other threads
//! stat in parallel.
//!
//! **Nothing recurses.** Tasks live on rayon's queues, not on the stack, and
//! the chain of parent handles is dropped iteratively, so a 5,000-level tree
//! cannot overflow a stack.
//!
//! The walk produces one [`NodeRec`] per directory (and per file with `-a`),
//! with the figures of the directory's own inode plus those of its
//! singly-linked non-directory entries, and one [`Link`] per link of every
//! multiply-linked inode, which [`crate::tree`] credits once per directory.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::ffi::{CStr, CString};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use rustix::fs::{self as rfs, AtFlags, CWD, Mode, OFlags, RawDir, Statx, StatxFlags};
use rustix::io::Errno;

use dashmap::DashSet;

use crate::extents::SharedIndex;
use crate::fiemap::Fiemap;
use crate::figures::{Kind, Stats};
use crate::glob::Excludes;
use crate::messages::{Messages, strerror};
use crate::probe::{self, FsInfo, Registry, Skip};
use crate::quote::quote;

/// Entries of one directory stat-ed by the task that reads it; past this,
/// names go to batches that other threads can take. Small enough that a
/// 10k-entry directory is shared between threads, large enough that the
/// copy and the task never show up for ordinary directories.
const INLINE_ENTRIES: usize = 1024;

/// Names per batch of a wide directory.
const BATCH_ENTRIES: usize = 2048;

/// Per-thread getdents64 buffer. 64 KiB holds about 2,000 typical entries,
/// so a directory of ordinary size is read in one or two syscalls.
const GETDENTS_BUF: usize = 64 * 1024;

/// The id of the virtual node above all roots (it carries the `-c` total).
pub const TOP: u32 = 0;

/// No parent.
pub const NONE: u32 = u32::MAX;

/// The statx fields sdu reads. `UID` lets it decide whether `O_NOATIME`
/// is permitted without a failing open; `MNT_ID` is what `-x` compares (a
/// Btrfs subvolume has its own `st_dev` but is not a mount point).
const MASK: StatxFlags = StatxFlags::TYPE
    .union(StatxFlags::MNT_ID)
    .union(StatxFlags::MODE)
    .union(StatxFlags::NLINK)
    .union(StatxFlags::UID)
    .union(StatxFlags::INO)
    .union(StatxFlags::SIZE)
    .union(StatxFlags::BLOCKS);

/// How to walk.
#[derive(Clone, Debug, Default)]
pub struct WalkOptions {
    /// The paths to walk, as given (bytes).
    pub roots: Vec<Vec<u8>>,
    /// Worker threads (at least 1).
    pub threads: usize,
    /// `-L`: follow symlinks.
    pub follow_links: bool,
    /// `-x`: skip entries on other filesystems than their root.
    pub one_file_system: bool,
    /// `-l`: count every link of a multiply-linked inode.
    pub count_links: bool,
    /// `-a`: keep a node for every non-directory entry too.
    pub all: bool,
    /// `--exclude` patterns.
    pub excludes: Excludes,
    /// Where to publish progress while walking (for a progress display).
    pub progress: Option<Arc<Progress>>,
    /// Map no extents: only `total` and `apparent` are wanted (`--du
    /// total`), so exclusive is reported equal to total and nothing shared.
    pub skip_extents: bool,
}

/// Progress of a walk, published for a display on another thread.
///
/// Updated once per directory (an atomic add) and, every
/// [`PROGRESS_PATH_EVERY`] directories, the path of the directory being
/// read (a `try_lock`, skipped when the display holds the lock), so that
/// publishing costs nothing measurable.
#[derive(Debug, Default)]
pub struct Progress {
    /// Entries stat-ed so far.
    pub entries: AtomicU64,
    /// A directory recently read, as printed.
    pub current: Mutex<Vec<u8>>,
}

/// How often (in directories) the walker publishes the current path.
pub const PROGRESS_PATH_EVERY: u32 = 64;

/// One node of the walked tree: a directory, a root, or (with `-a`) a file.
#[derive(Clone, Debug, Default)]
pub struct NodeRec {
    pub id: u32,
    pub parent: u32,
    pub depth: u32,
    pub kind: Kind,
    /// A `-a` file entry: shown, but its figures are already in its parent.
    pub leaf: bool,
    /// The entry's name; for a root, the path as given.
    pub name: Box<[u8]>,
    /// The node's own inode plus its singly-linked non-directory entries.
    pub own: Stats,
}

/// One link of an inode that must be counted once per directory.
#[derive(Clone, Copy, Debug)]
pub struct Link {
    pub dev: u64,
    pub ino: u64,
    pub nlink: u32,
    /// The node the link lies in (the directory, or the inode's own node
    /// for a root or a directory).
    pub node: u32,
    pub stats: Stats,
}

/// A file whose FIEMAP found extents flagged shared: `id` is what the
/// extent index knows it by.
#[derive(Clone, Copy, Debug, Default)]
pub struct FileRec {
    pub id: u32,
    /// The node of the link that was mapped (its directory, or its own node
    /// with `-a`).
    pub node: u32,
    pub dev: u64,
    pub ino: u64,
    /// Credited through the link table: its links are the [`Link`]s with
    /// the same `(dev, ino)`.
    pub linked: bool,
}

/// What the walk counted, for `--stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Entries stat-ed (roots included).
    pub entries: u64,
    /// Files mapped with FIEMAP, and the ioctl calls that took.
    pub fiemap_files: u64,
    pub fiemap_calls: u64,
    /// Files not mapped, by [`Skip::index`].
    pub skipped: [u64; Skip::ALL.len()],
    /// Files that may share but could not be mapped (open or FIEMAP
    /// failed), and their allocated bytes, counted as exclusive.
    pub unverified_files: u64,
    pub unverified_bytes: u64,
}

impl Counters {
    fn add(&mut self, o: &Counters) {
        self.entries += o.entries;
        self.fiemap_files += o.fiemap_files;
        self.fiemap_calls += o.fiemap_calls;
        for (a, b) in self.skipped.iter_mut().zip(o.skipped) {
            *a += b;
        }
        self.unverified_files += o.unverified_files;
        self.unverified_bytes += o.unverified_bytes;
    }
}

/// What a walk found.
#[derive(Debug, Default)]
pub struct Walk {
    /// Indexed by id; `nodes[TOP]` is the virtual top node.
    pub nodes: Vec<NodeRec>,
    pub links: Vec<Link>,
    /// Indexed by file id.
    pub files: Vec<FileRec>,
    /// Shared extents of every mapped file.
    pub index: SharedIndex,
    /// The filesystems met, by index.
    pub filesystems: Vec<FsInfo>,
    /// Root ids, in the order given (roots that could not be read are absent).
    pub roots: Vec<u32>,
    pub counters: Counters,
}

/// Records produced by tasks on one thread.
#[derive(Default)]
struct Shard {
    nodes: Vec<NodeRec>,
    partial: Vec<(u32, Stats)>,
    links: Vec<Link>,
    files: Vec<FileRec>,
    counters: Counters,
}

struct Ctx<'a> {
    opts: &'a WalkOptions,
    msgs: &'a Messages,
    next_id: AtomicU32,
    shards: Vec<Mutex<Shard>>,
    cache: FdCache,
    euid: u32,
    registry: Registry,
    index: SharedIndex,
    /// Multiply-linked inodes already claimed for FIEMAP.
    mapped: DashSet<(u64, u64)>,
    next_file: AtomicU32,
}

/// A directory being walked: what its children need to open themselves and
/// to name themselves in messages.
struct DirHandle {
    /// This handle, for the fd cache's queue.
    me: Weak<DirHandle>,
    parent: Option<Arc<DirHandle>>,
    /// Entry name; for a root, the path as given.
    name: CString,
    id: u32,
    depth: u32,
    dev: u64,
    ino: u64,
    /// The mount of the root, for `-x`.
    root_mnt: u64,
    /// The root's namespace (see [`namespaces`]).
    ns: u32,
    /// Open files in it only after an `O_PATH` check (see [`guarded`]).
    guard: bool,
    /// Its filesystem when known from the parent (same `st_dev`); `None`
    /// means probe it once opened.
    fs: Option<FsInfo>,
    /// The path as printed, kept only when `--exclude` needs it.
    path: Option<Box<[u8]>>,
    fd: Mutex<Option<Arc<OwnedFd>>>,
    /// 1 for the listing + batches in flight + subdirectories not yet
    /// opened. The fd cache is released when it drops to 0.
    pending: AtomicUsize,
}

impl Drop for DirHandle {
    /// Drops the parent chain iteratively: a recursive drop of a
    /// 5,000-level chain would overflow a worker's stack.
    fn drop(&mut self) {
        let mut next = self.parent.take();
        while let Some(p) = next {
            match Arc::try_unwrap(p) {
                Ok(mut h) => next = h.parent.take(),
                Err(_) => break,
            }
        }
    }
}

thread_local! {
    static DENTS: RefCell<Vec<MaybeUninit<u8>>> = const { RefCell::new(Vec::new()) };
}

/// Walks `opts.roots` and returns the tree's records.
pub fn walk(opts: &WalkOptions, msgs: &Messages) -> Result<Walk, crate::Error> {
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(65536);
    // Each thread may hold a listing fd, two transient fds of a
    // parent-chain reopen and a file fd; stdio and the process need a few
    // more. The rest caches directory fds. With fewer than MIN_CACHED in the
    // cache, deep trees degrade to reopening long chains, so under a tight
    // `ulimit -n` use fewer threads rather than a smaller cache.
    const PER_THREAD: u64 = 4;
    const FIXED: u64 = 6;
    const MIN_CACHED: u64 = 16;
    let fit = (soft.saturating_sub(FIXED + MIN_CACHED) / PER_THREAD).max(1) as usize;
    let threads = opts.threads.clamp(1, fit);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("sdu-walk-{i}"))
        .build()
        .map_err(|e| crate::Error::Threads(std::io::Error::other(e)))?;
    let max_cached = soft
        .saturating_sub(FIXED + PER_THREAD * threads as u64)
        .clamp(1, 4096) as usize;
    let ctx = Ctx {
        opts,
        msgs,
        next_id: AtomicU32::new(1),
        shards: (0..threads).map(|_| Mutex::new(Shard::default())).collect(),
        cache: FdCache::new(max_cached),
        euid: rustix::process::geteuid().as_raw(),
        registry: Registry::default(),
        index: SharedIndex::new(),
        mapped: DashSet::new(),
        next_file: AtomicU32::new(0),
    };
    let mut roots = Vec::new();
    let spaces = namespaces(&opts.roots);
    pool.scope(|s| {
        for (root, &ns) in opts.roots.iter().zip(&spaces) {
            if let Some(id) = start_root(&ctx, s, root, ns) {
                roots.push(id);
            }
        }
    });
    Ok(assemble(ctx, roots))
}

/// Stats a root and walks it if it is a directory.
/// The namespace of each root: 0 for the roots that lie inside no other
/// root, a namespace of its own for each one that does (or repeats one).
///
/// Every root's figures are what sdu would print for it alone. A root
/// inside another is walked again, and its inodes, links and extents are
/// kept apart (keyed by namespace) so that the two walks never meet in the
/// crediting; its node is a top of its own, outside the `-c` total, which
/// counts every inode once, as du's does.
fn namespaces(roots: &[Vec<u8>]) -> Vec<u32> {
    use std::os::unix::ffi::OsStrExt;
    let canon: Vec<Option<std::path::PathBuf>> = roots
        .iter()
        .map(|r| std::fs::canonicalize(std::ffi::OsStr::from_bytes(r)).ok())
        .collect();
    (0..roots.len())
        .map(|i| {
            let Some(me) = &canon[i] else { return 0 };
            let nested = canon.iter().enumerate().any(|(j, other)| {
                other
                    .as_ref()
                    .is_some_and(|o| j != i && me.starts_with(o) && (me != o || j < i))
            });
            if nested { i as u32 + 1 } else { 0 }
        })
        .collect()
}

/// The key of an inode in the link table and the extent index: the device
/// with the root's namespace in the 16 bits that a Linux `dev_t` (12-bit
/// major, 20-bit minor, spread over 44 bits by `makedev`) never uses.
fn inode_dev(dev: u64, ns: u32) -> u64 {
    dev | (u64::from(ns) << 48)
}

/// The filesystem key of the extent index: the registry index in the low
/// 16 bits, the namespace above. See [`fs_of_key`].
fn fs_key(fs: &FsInfo, ns: u32) -> u32 {
    (fs.index & 0xffff) | (ns << 16)
}

/// The registry index of an extent-index filesystem key.
pub fn fs_of_key(key: u32) -> u32 {
    key & 0xffff
}

/// Must files in this directory be opened through an `O_PATH` check?
///
/// Only root needs it (see [`open_regular`]), and only where someone else
/// can change the directory's entries, that is swap a FIFO in between the
/// statx and the open: a directory owned by another user, or writable by
/// group or others (POSIX ACLs granting write show in the group bits).
/// Root-owned `0755` trees, like /usr, need no check.
fn guarded(euid: u32, dir: &Statx) -> bool {
    euid == 0 && (dir.stx_uid != 0 || u32::from(dir.stx_mode) & 0o022 != 0)
}

fn start_root<'s>(ctx: &'s Ctx<'s>, s: &rayon::Scope<'s>, root: &[u8], ns: u32) -> Option<u32> {
    if ctx.opts.excludes.matches(root) {
        return None;
    }
    let Ok(cpath) = CString::new(root) else {
        ctx.msgs.error(format_args!(
            "cannot access {}: Invalid argument",
            quote(root)
        ));
        return None;
    };
    let flags = if ctx.opts.follow_links {
        AtFlags::STATX_DONT_SYNC
    } else {
        AtFlags::SYMLINK_NOFOLLOW | AtFlags::STATX_DONT_SYNC
    };
    let st = match rfs::statx(CWD, &cpath, flags, MASK) {
        Ok(st) => st,
        Err(e) => {
            ctx.msgs.error(format_args!(
                "cannot access {}: {}",
                quote(root),
                strerror(e)
            ));
            return None;
        }
    };
    let id = ctx.new_id();
    let kind = Kind::from_mode(u32::from(st.stx_mode));
    let stats = Stats::of_inode(kind, st.stx_size, st.stx_blocks);
    let dev = dev_of(&st);
    if kind != Kind::Dir {
        let mut local = Local::default();
        local.counters.entries += 1;
        // A file given by path: its directory was not stat-ed, so check.
        let at = At {
            ns,
            guard: ctx.euid == 0,
        };
        let own = nondir(ctx, CWD, &cpath, &st, None, id, at, &mut local, &|| {
            root.to_vec()
        });
        let rec = NodeRec {
            id,
            parent: if ns == 0 { TOP } else { NONE },
            depth: 0,
            kind,
            leaf: false,
            name: root.into(),
            own,
        };
        local.nodes.push(rec);
        let mut shard = ctx.shard();
        shard.nodes.append(&mut local.nodes);
        shard.links.append(&mut local.links);
        shard.files.append(&mut local.files);
        shard.counters.add(&local.counters);
        return Some(id);
    }
    let handle = Arc::new_cyclic(|me| DirHandle {
        me: me.clone(),
        parent: None,
        name: cpath,
        id,
        depth: 0,
        dev,
        ino: st.stx_ino,
        root_mnt: st.stx_mnt_id,
        ns,
        guard: guarded(ctx.euid, &st),
        fs: None,
        path: (!ctx.opts.excludes.is_empty()).then(|| root.into()),
        fd: Mutex::new(None),
        pending: AtomicUsize::new(1),
    });
    s.spawn(move |s| walk_dir(ctx, s, handle, stats, st.stx_uid));
    Some(id)
}

impl<'a> Ctx<'a> {
    fn new_id(&self) -> u32 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        assert!(id < NONE - 1, "more than 4 billion entries");
        id
    }

    fn shard(&self) -> std::sync::MutexGuard<'_, Shard> {
        let i = rayon::current_thread_index().unwrap_or(0) % self.shards.len();
        self.shards[i].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Must this inode be credited through the link table (once per
    /// directory) rather than added where it is found?
    fn counts_once(&self, nlink: u32) -> bool {
        !self.opts.count_links && (nlink > 1 || self.opts.follow_links)
    }

    fn dir_flags(&self, uid: u32) -> OFlags {
        let mut f = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        if !self.opts.follow_links {
            f |= OFlags::NOFOLLOW;
        }
        // O_NOATIME is allowed to the owner and to root (CAP_FOWNER); asking
        // for it otherwise costs a failed open.
        if self.euid == 0 || self.euid == uid {
            f |= OFlags::NOATIME;
        }
        f
    }
}

fn dev_of(st: &Statx) -> u64 {
    rfs::makedev(st.stx_dev_major, st.stx_dev_minor)
}

/// Opens `name` relative to `dirfd`, retrying without `O_NOATIME` if that
/// is refused.
fn open_dir_at(dirfd: BorrowedFd<'_>, name: &CStr, flags: OFlags) -> Result<OwnedFd, Errno> {
    match rfs::openat(dirfd, name, flags, Mode::empty()) {
        Err(Errno::PERM) if flags.contains(OFlags::NOATIME) => {
            rfs::openat(dirfd, name, flags - OFlags::NOATIME, Mode::empty())
        }
        r => r,
    }
}

impl DirHandle {
    /// The path of this directory (and of `child` in it) as sdu prints it.
    fn path(&self, child: Option<&[u8]>) -> Vec<u8> {
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

    /// One subdirectory opened (or failed to): release the fd cache when
    /// nothing needs it any more.
    fn release(&self, ctx: &Ctx<'_>) {
        if self.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            let fd = self.fd.lock().unwrap_or_else(|e| e.into_inner()).take();
            if fd.is_some() {
                ctx.cache.released();
            }
        }
    }

    /// An fd for this directory: the cached one, or one reopened through
    /// the parent chain.
    fn fd(&self, ctx: &Ctx<'_>) -> Result<Arc<OwnedFd>, Errno> {
        if let Some(fd) = self.fd.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            return Ok(fd.clone());
        }
        // Slow path: find the nearest ancestor with a cached fd and open
        // down from it, one level at a time.
        let mut chain: Vec<&DirHandle> = vec![self];
        let mut base: Option<Arc<OwnedFd>> = None;
        let mut cur = self.parent.as_deref();
        while let Some(h) = cur {
            if let Some(fd) = h.fd.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
                base = Some(fd.clone());
                break;
            }
            chain.push(h);
            cur = h.parent.as_deref();
        }
        for h in chain.iter().rev() {
            let flags = ctx.dir_flags(NONE);
            let fd = match &base {
                Some(b) => open_dir_at(b.as_fd(), &h.name, flags)?,
                None => open_dir_at(CWD, &h.name, flags)?,
            };
            // The tree may have changed since the walk stat-ed this
            // directory: never read another directory in its place.
            let st = rfs::fstat(&fd)?;
            if st.st_ino != h.ino || st.st_dev != h.dev {
                return Err(Errno::STALE);
            }
            let fd = Arc::new(fd);
            // Cache the reopened chain: the next sibling that needs one of
            // these directories finds it, so unwinding a deep tree under a
            // small budget costs O(depth² / budget) opens, not O(depth²).
            ctx.cache.insert(h, &fd);
            base = Some(fd);
        }
        Ok(base.expect("chain is never empty"))
    }
}

/// The budget of cached directory fds, evicting the least recently cached.
///
/// The walk is depth-first on each thread, so the directories that will
/// need their fd soonest are the ones cached last; the oldest entries are
/// shallow directories whose remaining subdirectories will reopen them
/// through a short chain. (Keeping the oldest instead makes a deep tree
/// reopen ever longer chains.)
struct FdCache {
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
    fn new(max: usize) -> Self {
        FdCache {
            max,
            inner: Mutex::new(CacheInner {
                queue: VecDeque::new(),
                count: 0,
            }),
        }
    }

    /// Caches `fd` in `h`, evicting the oldest cached fd if full.
    fn insert(&self, h: &DirHandle, fd: &Arc<OwnedFd>) {
        let mut c = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if c.count >= self.max {
            let mut evicted = false;
            while let Some(w) = c.queue.pop_front() {
                if let Some(old) = w.upgrade() {
                    if old
                        .fd
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .take()
                        .is_some()
                    {
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
        let prev =
            h.fd.lock()
                .unwrap_or_else(|e| e.into_inner())
                .replace(fd.clone());
        if prev.is_some() {
            // Another thread cached this directory meanwhile: one slot.
            c.count -= 1;
        }
        c.queue.push_back(h.me.clone());
        if c.queue.len() > 4 * self.max + 64 {
            // Drop entries released since: they keep the handle's memory.
            c.queue.retain(|w| {
                w.upgrade()
                    .is_some_and(|h| h.fd.lock().unwrap_or_else(|e| e.into_inner()).is_some())
            });
        }
    }

    /// A handle gave its cached fd back.
    fn released(&self) {
        let mut c = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        c.count = c.count.saturating_sub(1);
    }
}

/// Appends `name` to a printed path the way fts does: one `/` between, none
/// added after a trailing `/`.
fn join(path: &mut Vec<u8>, name: &[u8]) {
    if !path.is_empty() && path.last() != Some(&b'/') {
        path.push(b'/');
    }
    path.extend_from_slice(name);
}

/// What a task gathers before handing it to its thread's shard.
#[derive(Default)]
struct Local {
    acc: Stats,
    nodes: Vec<NodeRec>,
    links: Vec<Link>,
    files: Vec<FileRec>,
    counters: Counters,
}

/// Reads one directory: stats its entries, spawns its subdirectories.
fn walk_dir<'s>(ctx: &'s Ctx<'s>, s: &rayon::Scope<'s>, h: Arc<DirHandle>, own: Stats, uid: u32) {
    let mut local = Local::default();
    let rec = NodeRec {
        id: h.id,
        parent: match &h.parent {
            Some(p) => p.id,
            None if h.ns == 0 => TOP,
            None => NONE,
        },
        depth: h.depth,
        kind: Kind::Dir,
        leaf: false,
        name: h.name.as_bytes().into(),
        own: Stats::default(),
    };
    if ctx.opts.follow_links {
        // Under -L one directory can be reached by several paths: count its
        // own inode once per directory, like a hardlinked file.
        local.links.push(Link {
            dev: inode_dev(h.dev, h.ns),
            ino: h.ino,
            nlink: 1,
            node: h.id,
            stats: own,
        });
    } else {
        local.acc = own;
    }

    let opened = match &h.parent {
        Some(p) => {
            let r = p
                .fd(ctx)
                .and_then(|pfd| open_dir_at(pfd.as_fd(), &h.name, ctx.dir_flags(uid)));
            p.release(ctx);
            r
        }
        None => open_dir_at(CWD, &h.name, ctx.dir_flags(uid)),
    };
    // A directory opened by name may have been replaced since it was
    // stat-ed: read it only if it is the one whose size was counted.
    let opened = opened.and_then(|fd| match rfs::fstat(&fd) {
        Ok(st) if st.st_ino == h.ino && st.st_dev == h.dev => Ok(fd),
        Ok(_) => Err(Errno::NOENT),
        Err(e) => Err(e),
    });
    let fd = match opened {
        Ok(fd) => Arc::new(fd),
        Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) if h.parent.is_some() => {
            // Removed or replaced since its parent listed it: du skips it
            // quietly.
            h.release(ctx);
            return finish(ctx, rec, local);
        }
        Err(e) => {
            ctx.msgs.error(format_args!(
                "cannot read directory {}: {}",
                quote(&h.path(None)),
                strerror(e)
            ));
            h.release(ctx);
            return finish(ctx, rec, local);
        }
    };
    ctx.cache.insert(&h, &fd);
    if let Some(p) = &ctx.opts.progress {
        if h.id % PROGRESS_PATH_EVERY == 0 {
            if let Ok(mut cur) = p.current.try_lock() {
                *cur = h.path(None);
            }
        }
    }
    let fs = match h.fs {
        Some(fs) => fs,
        None => ctx.registry.lookup(h.dev, fd.as_fd()),
    };

    DENTS.with(|buf| {
        let mut owned;
        let mut borrowed = buf.try_borrow_mut();
        let buf: &mut Vec<MaybeUninit<u8>> = match borrowed.as_deref_mut() {
            Ok(b) => b,
            Err(_) => {
                owned = Vec::new();
                &mut owned
            }
        };
        if buf.len() < GETDENTS_BUF {
            buf.resize(GETDENTS_BUF, MaybeUninit::uninit());
        }
        let mut dir = RawDir::new(fd.as_fd(), buf.as_mut_slice());
        let mut seen = 0usize;
        let mut batch: Vec<u8> = Vec::new();
        let mut batched = 0usize;
        while let Some(ent) = dir.next() {
            let ent = match ent {
                Ok(ent) => ent,
                // Removed while being read (getdents64 on a deleted
                // directory): as quiet as a directory that vanished before.
                Err(Errno::NOENT) => break,
                Err(e) => {
                    ctx.msgs.error(format_args!(
                        "cannot read directory {}: {}",
                        quote(&h.path(None)),
                        strerror(e)
                    ));
                    break;
                }
            };
            let name = ent.file_name();
            let b = name.to_bytes();
            if b == b"." || b == b".." {
                continue;
            }
            seen += 1;
            if seen <= INLINE_ENTRIES {
                entry(ctx, s, &h, fd.as_fd(), &fs, name, &mut local);
            } else {
                batch.extend_from_slice(name.to_bytes_with_nul());
                batched += 1;
                if batched == BATCH_ENTRIES {
                    spawn_batch(ctx, s, &h, &fd, fs, std::mem::take(&mut batch));
                    batched = 0;
                }
            }
        }
        if batched > 0 {
            spawn_batch(ctx, s, &h, &fd, fs, batch);
        }
    });
    drop(fd);
    h.release(ctx);
    finish(ctx, rec, local);
}

/// Hands a task's records to its thread's shard.
fn finish(ctx: &Ctx<'_>, mut rec: NodeRec, mut local: Local) {
    rec.own = local.acc;
    if let Some(p) = &ctx.opts.progress {
        p.entries
            .fetch_add(local.counters.entries, Ordering::Relaxed);
    }
    let mut shard = ctx.shard();
    shard.nodes.push(rec);
    shard.nodes.append(&mut local.nodes);
    shard.links.append(&mut local.links);
    shard.files.append(&mut local.files);
    shard.counters.add(&local.counters);
}

/// Stats a batch of names of a wide directory on whichever thread takes it.
fn spawn_batch<'s>(
    ctx: &'s Ctx<'s>,
    s: &rayon::Scope<'s>,
    h: &Arc<DirHandle>,
    fd: &Arc<OwnedFd>,
    fs: FsInfo,
    names: Vec<u8>,
) {
    h.pending.fetch_add(1, Ordering::AcqRel);
    let h = h.clone();
    let fd = fd.clone();
    s.spawn(move |s| {
        let mut local = Local::default();
        let mut rest = names.as_slice();
        while let Ok(name) = CStr::from_bytes_until_nul(rest) {
            rest = &rest[name.to_bytes_with_nul().len()..];
            entry(ctx, s, &h, fd.as_fd(), &fs, name, &mut local);
        }
        drop(fd);
        if let Some(p) = &ctx.opts.progress {
            p.entries
                .fetch_add(local.counters.entries, Ordering::Relaxed);
        }
        let mut shard = ctx.shard();
        shard.partial.push((h.id, local.acc));
        shard.nodes.append(&mut local.nodes);
        shard.links.append(&mut local.links);
        shard.files.append(&mut local.files);
        shard.counters.add(&local.counters);
        drop(shard);
        h.release(ctx);
    });
}

/// Stats one entry of directory `h` and accounts for it.
#[allow(clippy::too_many_arguments)]
fn entry<'s>(
    ctx: &'s Ctx<'s>,
    s: &rayon::Scope<'s>,
    h: &Arc<DirHandle>,
    dirfd: BorrowedFd<'_>,
    fs: &FsInfo,
    name: &CStr,
    local: &mut Local,
) {
    let opts = ctx.opts;
    let mut path = None;
    if let Some(dir_path) = &h.path {
        let mut p = dir_path.to_vec();
        join(&mut p, name.to_bytes());
        if opts.excludes.matches(&p) {
            return;
        }
        path = Some(p.into_boxed_slice());
    }
    let nofollow = AtFlags::SYMLINK_NOFOLLOW | AtFlags::STATX_DONT_SYNC;
    let follow = if opts.follow_links {
        AtFlags::STATX_DONT_SYNC
    } else {
        nofollow
    };
    let st = match rfs::statx(dirfd, name, follow, MASK) {
        Ok(st) => st,
        Err(Errno::NOENT) => {
            // Under -L, a dangling symlink is an error, as in du -L;
            // otherwise the entry was deleted since the directory was read,
            // and du skips it quietly.
            if opts.follow_links && rfs::statx(dirfd, name, nofollow, MASK).is_ok() {
                ctx.msgs.error(format_args!(
                    "cannot access {}: {}",
                    quote(&h.path(Some(name.to_bytes()))),
                    strerror(Errno::NOENT)
                ));
            }
            return;
        }
        Err(e) => {
            ctx.msgs.error(format_args!(
                "cannot access {}: {}",
                quote(&h.path(Some(name.to_bytes()))),
                strerror(e)
            ));
            return;
        }
    };
    local.counters.entries += 1;
    if opts.one_file_system && st.stx_mnt_id != h.root_mnt {
        return;
    }
    let dev = dev_of(&st);
    let kind = Kind::from_mode(u32::from(st.stx_mode));
    if kind == Kind::Dir {
        local.counters.skipped[Skip::NotRegular.index()] += 1;
        if opts.follow_links && is_ancestor(h, dev, st.stx_ino) {
            ctx.msgs.warn(format_args!(
                "{}: directory cycle (a symlink to an ancestor), not followed",
                quote(&h.path(Some(name.to_bytes())))
            ));
            return;
        }
        let stats = Stats::of_inode(kind, st.stx_size, st.stx_blocks);
        let child = Arc::new_cyclic(|me| DirHandle {
            me: me.clone(),
            parent: Some(h.clone()),
            name: name.to_owned(),
            id: ctx.new_id(),
            depth: h.depth + 1,
            dev,
            ino: st.stx_ino,
            root_mnt: h.root_mnt,
            ns: h.ns,
            guard: guarded(ctx.euid, &st),
            fs: (dev == h.dev).then_some(*fs),
            path,
            fd: Mutex::new(None),
            pending: AtomicUsize::new(1),
        });
        h.pending.fetch_add(1, Ordering::AcqRel);
        let uid = st.stx_uid;
        s.spawn(move |s| walk_dir(ctx, s, child, stats, uid));
        return;
    }
    // With -a the file has a node of its own, and its links and extents
    // are credited from there.
    let leaf = opts.all.then(|| ctx.new_id());
    let node = leaf.unwrap_or(h.id);
    let fs = (dev == h.dev).then_some(*fs);
    let at = At {
        ns: h.ns,
        guard: h.guard,
    };
    let own = nondir(ctx, dirfd, name, &st, fs, node, at, local, &|| {
        h.path(Some(name.to_bytes()))
    });
    match leaf {
        Some(id) => {
            // The leaf is not rolled up: its parent holds its own part too.
            local.acc += own;
            local.nodes.push(NodeRec {
                id,
                parent: h.id,
                depth: h.depth + 1,
                kind,
                leaf: true,
                name: name.to_bytes().into(),
                own,
            });
        }
        None => local.acc += own,
    }
}

/// Accounts for a non-directory inode found at `node`: maps its extents if
/// it may share, and records a link if it must be counted once per
/// directory. Returns what goes into `node`'s own figures.
#[allow(clippy::too_many_arguments)]
fn nondir(
    ctx: &Ctx<'_>,
    dirfd: BorrowedFd<'_>,
    name: &CStr,
    st: &Statx,
    fs: Option<FsInfo>,
    node: u32,
    at: At,
    local: &mut Local,
    path: &dyn Fn() -> Vec<u8>,
) -> Stats {
    let ns = at.ns;
    let dev = inode_dev(dev_of(st), ns);
    let kind = Kind::from_mode(u32::from(st.stx_mode));
    let once = ctx.counts_once(st.stx_nlink);
    let mut stats = Stats::of_inode(kind, st.stx_size, st.stx_blocks);
    let mut ino = st.stx_ino;
    // The filesystem is known from the directory unless the file lies on
    // another device (a bind-mounted file; a symlink followed with -L).
    let decide = |fs: &FsInfo| {
        probe::may_share(fs, kind, st.stx_blocks, || {
            !once || ctx.mapped.insert((dev, st.stx_ino))
        })
    };
    let verdict = match fs {
        Some(fs) => decide(&fs).map(|()| Some(fs)),
        // Probed on the opened file below.
        None if kind == Kind::File && st.stx_blocks > 0 => Ok(None),
        None => decide(&FsInfo::UNKNOWN).map(|()| None),
    };
    match verdict {
        Err(skip) => local.counters.skipped[skip.index()] += 1,
        Ok(_) if ctx.opts.skip_extents => {}
        Ok(fs) => match map_file(ctx, dirfd, name, st, fs, at, local, path, &decide) {
            Mapped::Extents {
                view,
                shared_bytes,
                id,
            } => {
                stats = view.with_shared_extents(shared_bytes);
                if let Some((id, file_ino)) = id {
                    ino = file_ino;
                    local.files.push(FileRec {
                        id,
                        node,
                        dev,
                        ino,
                        linked: once,
                    });
                }
            }
            Mapped::Skipped(skip) => local.counters.skipped[skip.index()] += 1,
            Mapped::Unverified => {
                local.counters.unverified_files += 1;
                local.counters.unverified_bytes += stats.total;
            }
            Mapped::Gone => {}
        },
    }
    if !once && st.stx_nlink > 1 {
        // -l counts every link; whether all of them lie under a directory
        // is not tracked then, so none is claimed to be reclaimable.
        stats.reclaimable = 0;
    }
    if once {
        local.links.push(Link {
            dev,
            ino,
            nlink: st.stx_nlink,
            node,
            stats,
        });
        Stats::default()
    } else {
        stats
    }
}

/// Where a file was found: its root's namespace, and whether it must be
/// opened through the `O_PATH` check.
#[derive(Clone, Copy, Debug)]
struct At {
    ns: u32,
    guard: bool,
}

/// What mapping one file gave.
enum Mapped {
    /// Its figures, from the opened inode, and its shared extents; `id` is
    /// its file id and inode number when some extent is shared.
    Extents {
        view: Stats,
        shared_bytes: u64,
        id: Option<(u32, u64)>,
    },
    /// Not mapped after all (its filesystem, known only once opened, cannot
    /// share; or it was replaced by something that cannot).
    Skipped(Skip),
    /// Could not be mapped; reported, and counted as exclusive.
    Unverified,
    /// Gone or replaced by a non-file since it was stat-ed: counted with
    /// what the walk saw, as exclusive.
    Gone,
}

thread_local! {
    static FIEMAP: RefCell<Option<Fiemap>> = const { RefCell::new(None) };
}

/// Opens `name` in `dirfd` for reading only if it is a regular file now,
/// with its current `fstat`; `Ok(None)` when it is gone or is something
/// else.
///
/// As root in a directory others can change (`guard`, see [`guarded`]),
/// the name is first opened with `O_PATH`, which opens
/// nothing (no FIFO writer is released, no device driver is called), and
/// checked with `fstat`; only a regular file is then opened for reading,
/// through `/proc/self/fd`, which reopens that very inode. That costs
/// about 3 µs more per file here (measured: 92k files on XFS, 0.50 s →
/// 0.79 s), so an unprivileged run, which cannot have device nodes planted
/// for it (creating one needs CAP_MKNOD), opens the name directly with
/// `O_NONBLOCK` (a FIFO swapped in since the statx can neither block it
/// nor be read) and checks the type after. Where /proc is not mounted,
/// root does the same.
fn open_regular(
    dirfd: BorrowedFd<'_>,
    name: &CStr,
    flags: OFlags,
    guard: bool,
) -> Result<Option<(OwnedFd, rfs::Stat)>, Errno> {
    let gone = |e: Errno| match e {
        Errno::NOENT | Errno::LOOP | Errno::NXIO | Errno::NOTDIR => Ok(None),
        e => Err(e),
    };
    if !guard {
        return open_checked(dirfd, name, flags).or_else(gone);
    }
    let pfd = match rfs::openat(
        dirfd,
        name,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(e) => return gone(e),
    };
    let st = match rfs::fstat(&pfd) {
        Ok(st) => st,
        Err(e) => return gone(e),
    };
    if Kind::from_mode(st.st_mode) != Kind::File {
        return Ok(None);
    }
    let mut buf = [0u8; 16];
    let n = fd_name(&mut buf, std::os::fd::AsRawFd::as_raw_fd(&pfd));
    // The magic link must be followed (it is the inode checked above), so
    // no O_NOFOLLOW here.
    let reopen = |flags: OFlags| {
        PROC_FD.with(|dir| match dir.get_or_init(|| proc_fd_dir().ok()) {
            Some(d) => rfs::openat(d, n, flags - OFlags::NOFOLLOW, Mode::empty()),
            None => Err(Errno::NOENT),
        })
    };
    let opened = match reopen(flags) {
        Err(Errno::PERM) if flags.contains(OFlags::NOATIME) => reopen(flags - OFlags::NOATIME),
        r => r,
    };
    match opened {
        Ok(fd) => Ok(Some((fd, st))),
        // No /proc: open the name itself, non-blocking, and check again.
        Err(Errno::NOENT) => open_checked(dirfd, name, flags).or_else(gone),
        Err(e) => Err(e),
    }
}

/// Opens `name` directly, non-blocking, and keeps it only if it is a
/// regular file.
fn open_checked(
    dirfd: BorrowedFd<'_>,
    name: &CStr,
    flags: OFlags,
) -> Result<Option<(OwnedFd, rfs::Stat)>, Errno> {
    let direct = |flags: OFlags| rfs::openat(dirfd, name, flags | OFlags::NONBLOCK, Mode::empty());
    let fd = match direct(flags) {
        Err(Errno::PERM) if flags.contains(OFlags::NOATIME) => direct(flags - OFlags::NOATIME)?,
        r => r?,
    };
    let st = rfs::fstat(&fd)?;
    if Kind::from_mode(st.st_mode) != Kind::File {
        return Ok(None);
    }
    Ok(Some((fd, st)))
}

thread_local! {
    /// `/proc/self/fd`, opened once per thread (`None` without /proc).
    static PROC_FD: std::cell::OnceCell<Option<OwnedFd>> = const { std::cell::OnceCell::new() };
}

fn proc_fd_dir() -> Result<OwnedFd, Errno> {
    rfs::openat(
        CWD,
        c"/proc/self/fd",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// The decimal name of `fd` as a C string in `buf`, without allocating.
fn fd_name(buf: &mut [u8; 16], fd: i32) -> &CStr {
    let mut digits = [0u8; 12];
    let mut n = fd.unsigned_abs();
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..len {
        buf[i] = digits[len - 1 - i];
    }
    buf[len] = 0;
    CStr::from_bytes_until_nul(&buf[..]).expect("NUL-terminated")
}

/// Opens a file relative to its directory and maps its extents.
#[allow(clippy::too_many_arguments)]
fn map_file(
    ctx: &Ctx<'_>,
    dirfd: BorrowedFd<'_>,
    name: &CStr,
    st: &Statx,
    fs: Option<FsInfo>,
    at: At,
    local: &mut Local,
    path: &dyn Fn() -> Vec<u8>,
    decide: &dyn Fn(&FsInfo) -> Result<(), Skip>,
) -> Mapped {
    let ns = at.ns;
    let mut flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NOCTTY;
    if ctx.euid == 0 || ctx.euid == st.stx_uid {
        flags |= OFlags::NOATIME;
    }
    let (fd, now) = match open_regular(dirfd, name, flags, at.guard) {
        Ok(Some(opened)) => opened,
        // Gone, or no longer a regular file: counted as the walk saw it.
        Ok(None) => return Mapped::Gone,
        Err(e) => {
            ctx.msgs.error(format_args!(
                "cannot read extents of {}: {} (counted as exclusive)",
                quote(&path()),
                strerror(e)
            ));
            return Mapped::Unverified;
        }
    };
    // The name may now point at another inode: every figure comes from the
    // one that is open, so that figures and extents agree.
    let kind = Kind::File;
    let view = Stats::of_inode(kind, now.st_size as u64, now.st_blocks as u64);
    let fs = match fs {
        Some(fs) => fs,
        None => {
            let fs = ctx.registry.lookup(now.st_dev, fd.as_fd());
            if let Err(skip) = decide(&fs) {
                return Mapped::Skipped(skip);
            }
            fs
        }
    };
    if ctx.registry.fiemap_unsupported(fs.index) {
        return Mapped::Skipped(Skip::FsCannotShare);
    }
    let mut shared_bytes = 0u64;
    let mut id = None;
    let res = FIEMAP.with(|cell| {
        let mut slot = cell.borrow_mut();
        let fm = slot.get_or_insert_with(Fiemap::new);
        fm.for_each(fd.as_fd(), |e| {
            if e.has_physical() && e.is_shared() && e.length > 0 {
                let id = *id.get_or_insert_with(|| ctx.next_file.fetch_add(1, Ordering::Relaxed));
                ctx.index.insert(fs_key(&fs, ns), e.physical, e.length, id);
                shared_bytes = shared_bytes.saturating_add(e.length);
            }
        })
    });
    local.counters.fiemap_files += 1;
    match res {
        Ok(calls) => local.counters.fiemap_calls += u64::from(calls),
        Err(e) => {
            local.counters.fiemap_calls += 1;
            let errno = e.raw_os_error();
            if errno == Some(Errno::OPNOTSUPP.raw_os_error())
                || errno == Some(Errno::NOTTY.raw_os_error())
            {
                if ctx.registry.set_fiemap_unsupported(fs.index) {
                    ctx.msgs.warn(format_args!(
                        "{}: the filesystem ({}) does not support FIEMAP; its files count as exclusive",
                        quote(&path()),
                        fs.name()
                    ));
                }
                return Mapped::Skipped(Skip::FsCannotShare);
            }
            // Extents indexed before the failure stand, and are taken out
            // of the file's exclusive bytes below, so figures stay
            // consistent.
            ctx.msgs.error(format_args!(
                "cannot read extents of {}: {} (counted as exclusive)",
                quote(&path()),
                e
            ));
            local.counters.unverified_files += 1;
            local.counters.unverified_bytes += view.total.saturating_sub(shared_bytes);
        }
    }
    Mapped::Extents {
        view,
        shared_bytes,
        id: id.map(|id| (id, now.st_ino)),
    }
}

/// Is (dev, ino) `h` or one of its ancestors? Used under `-L` only.
fn is_ancestor(h: &DirHandle, dev: u64, ino: u64) -> bool {
    let mut cur = Some(h);
    while let Some(d) = cur {
        if d.dev == dev && d.ino == ino {
            return true;
        }
        cur = d.parent.as_deref();
    }
    false
}

/// Gathers the shards into a tree indexed by id.
fn assemble(ctx: Ctx<'_>, roots: Vec<u32>) -> Walk {
    let n = ctx.next_id.load(Ordering::Relaxed) as usize;
    let mut nodes: Vec<NodeRec> = vec![NodeRec::default(); n];
    nodes[TOP as usize].parent = NONE;
    let mut links = Vec::new();
    let mut partial = Vec::new();
    let mut files = vec![FileRec::default(); ctx.next_file.load(Ordering::Relaxed) as usize];
    let mut counters = Counters::default();
    for shard in ctx.shards {
        let shard = shard.into_inner().unwrap_or_else(|e| e.into_inner());
        for rec in shard.nodes {
            let id = rec.id as usize;
            nodes[id] = rec;
        }
        links.extend(shard.links);
        partial.extend(shard.partial);
        for f in shard.files {
            let id = f.id as usize;
            files[id] = f;
        }
        counters.add(&shard.counters);
    }
    for (id, stats) in partial {
        nodes[id as usize].own += stats;
    }
    Walk {
        nodes,
        links,
        files,
        index: ctx.index,
        filesystems: ctx.registry.filesystems(),
        roots,
        counters,
    }
}
