//! What every task of one walk shares, by concern ([`Ctx`]): the options
//! ([`WalkSetup`]), where the records go ([`Records`]: the nodes and their
//! identities by id, the rest in per-thread shards), the directory fds
//! ([`Fds`]), the extents stage's state ([`Mapping`]) and the Btrfs tree's
//! listing ([`TreeWalk`]); and what one task gathers before it hands it
//! over ([`Local`]).

use std::cell::Cell;
use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use crossbeam_utils::CachePadded;
use dashmap::DashSet;
use rustix::fs::Statx;
use sdu_sys::btrfs::InodeItems;

use super::counters::{Counters, Progress};
use super::fdcache::{Active, FdCache, MoveWatch};
use super::later::Later;
pub(super) use super::open::{MASK, dev_of};
use super::partial::merge_partial;
use crate::extents::Extents;
use crate::extents::ag::{AgHint, AgSched};
use crate::extents::btrfs_tree::TreeCache;
use crate::extents::inline::{InlineRec, Keys};
use crate::extents::unchanged::KeyCache;
use crate::figures::{Bound, Kind, Stats, TimeField, Timestamp};
use crate::glob::Excludes;
use crate::messages::Messages;
use crate::probe::Registry;
use crate::records::Inode;
use crate::records::{
    CopyRec, CopySets, FileRec, FileShard, Held, Ident, IdentSink, Link, MAX_NODES, NodeId,
    NodeRec, NodeSink, ReadError,
};

/// How to walk.
#[derive(Clone, Debug, Default)]
pub struct WalkOptions {
    /// The paths to walk, as given (bytes).
    pub roots: Vec<Vec<u8>>,
    /// Worker threads (at least 1).
    pub threads: usize,
    /// Without `-j`: the threads to use instead of `threads` when the
    /// roots' first directories are not in memory (a timed look at them
    /// before the walk): then
    /// the threads wait on the device more than they run, and more of them
    /// keep more requests in flight. The thread count never changes a
    /// figure.
    pub cold_threads: Option<usize>,
    /// A cold walk that reads Btrfs trees takes a thread per CPU, not 4
    /// (`walk::cold::SEARCH_THREADS`): the browser's, where what each
    /// thread holds adds to every entry kept (docs/scale.md, the
    /// browser).
    pub cold_search_per_cpu: bool,
    /// `-L`: follow symlinks.
    pub follow_links: bool,
    /// `-H`, `-D`, `--dereference-args`: follow the symlinks given as
    /// roots (only those).
    pub follow_args: bool,
    /// `-x`: skip entries on other filesystems than their root.
    pub one_file_system: bool,
    /// `-l`: count every link of a multiply-linked inode.
    pub count_links: bool,
    /// `-a`: keep a node for every non-directory entry too.
    pub all: bool,
    /// `--time`: record the newest of this timestamp for every entry.
    pub time: Option<TimeField>,
    /// `--exclude` patterns.
    pub excludes: Excludes,
    /// `--exclude-caches`: skip the directories holding a valid
    /// `CACHEDIR.TAG` (not the roots).
    pub exclude_caches: bool,
    /// `--exclude-kernfs`: skip the directories on Linux's kernel
    /// filesystems (not the roots).
    pub exclude_kernfs: bool,
    /// Where to publish progress while walking (for a progress display).
    pub progress: Option<Arc<Progress>>,
    /// Map no extents: only `total` and `apparent` are wanted (`--du
    /// total`), so exclusive is reported equal to total and nothing shared.
    pub skip_extents: bool,
    /// `--fiemap`: read every file's extents with FIEMAP, never with the
    /// Btrfs tree search (root's fast path).
    pub fiemap_only: bool,
    /// `--map-each-copy`: on Btrfs without the tree search, map every copy
    /// of a file unchanged across snapshots with its own FIEMAP, instead of
    /// crediting it with the extents of the copy mapped first
    /// (`extents::unchanged`).
    pub map_each_copy: bool,
    /// Keep every node's [`Ident`] (`super::Walk::idents`): the browser
    /// checks what it deletes against them.
    pub identities: bool,
    /// Read each Btrfs subvolume root's identity through its fd (`--snapshots`, the browser).
    pub subvolumes: bool,
    /// By position in `roots`: a directory taken as that root, its name only naming it.
    pub root_fds: Vec<Option<Arc<OwnedFd>>>,
    /// By position in `roots`: the PATH already resolved, once, as the
    /// walk resolves it (`walk::resolve_dir`), by a caller that
    /// asked something of it first (`--snapshots` as root, which subvolumes
    /// lie under it); the walk takes this fd instead of the name.
    pub path_fds: Vec<Option<Arc<OwnedFd>>>,
    /// `--index-memory`: the bytes of mappings the index of shared extents
    /// holds in memory before it spills sorted runs to a temporary file
    /// (`None`: half the memory available).
    pub index_memory: Option<u64>,
    /// Where that file goes: `TMPDIR` (`None`: `/tmp`).
    pub tmpdir: Option<std::path::PathBuf>,
    /// Without `all`: a file holding an extent it references in part (a
    /// bookend, as the Btrfs tree search reads its items) has a node of
    /// its own all the same, so that the bytes no file references are
    /// credited to it (`--df`'s `unreachable` row), not to its directory.
    pub bookend_files: bool,
    /// `--df`: where to sum how the files read with the Btrfs tree search
    /// are stored (compression, inline data). Public for the binary's
    /// `..Default::default()`; only the library sets it.
    #[allow(private_interfaces)]
    pub stored: Option<Arc<crate::extents::stored::StoredSums>>,
    /// `--export`: keep the extent map of each file FIEMAP reads, for a
    /// later `--since`.
    pub keep_mappings: bool,
    /// `--since SCAN`: the maps SCAN saved; an unchanged file reuses its
    /// own. Public for the binary's `..Default::default()`; only the
    /// library sets it.
    #[allow(private_interfaces)]
    pub since: Option<Arc<crate::records::mappings::Mappings>>,
    /// `--verify` with `--since`: map every file all the same, and name
    /// each whose saved map was stale.
    pub verify_since: bool,
}

/// What one task (a directory, a batch of its names, a file root) gathers
/// before handing it to its thread's shard in one lock.
#[derive(Default)]
pub(super) struct Local {
    /// The figures the task adds to its directory's own node.
    pub(super) acc: Stats,
    /// The `-a` nodes, each named by its range of `names`: at most
    /// [`LOCAL_NODES`], handed to the store as they reach it.
    nodes: Vec<NodeRec<(u32, u32)>>,
    names: Vec<u8>,
    pub(super) links: Vec<Link>,
    pub(super) files: Vec<FileRec>,
    /// Files that are copies of a file mapped before ([`CopyRec`]).
    pub(super) copies: Vec<CopyRec>,
    pub(super) counters: Counters,
    /// The last regular file this task opened before stat-ing it was
    /// empty: stat the next one first (see the walk's `dir` module).
    pub(super) stat_first: bool,
    /// The allocation group its next FIEMAP is predicted to need (XFS).
    pub(super) ag: AgHint<Later>,
    /// Figures for directories other than the task's own: files other
    /// threads handed to this one while it held an allocation group's turn.
    pub(super) partial: Vec<(NodeId, Stats)>,
    /// Files put off while another thread mapped a copy of them
    /// ([`super::account::end_task`]).
    pub(super) waiting: Vec<super::later::Waiting>,
    /// As root on Btrfs: the items of the task's regular files, read
    /// together before they are stat-ed, by inode number (sorted).
    pub(super) pre: Vec<(u64, InodeItems)>,
    /// Btrfs files with inline data ([`crate::extents::inline`]), handed
    /// to the shard with the rest.
    inline: Vec<InlineRec>,
    /// The device of the last of them and its index ([`InlineRec::of`]).
    inline_dev: Option<(u32, u32)>,
    /// With [`WalkOptions::identities`]: the nodes' identities, at most
    /// [`LOCAL_NODES`].
    idents: Vec<(NodeId, Ident)>,
    /// Nodes whose own Reclaimable is a bound, and why.
    pub(super) bounds: Vec<(NodeId, Bound)>,
    /// Nodes of files whose extents were read as referenced on Btrfs
    /// (FIEMAP): bounds unless the filesystem is proven to hold none but
    /// whole extents.
    pub(super) partial_marks: Vec<(NodeId, Bound)>,
    /// As root on Btrfs: bytes on disk no file references, in the extents
    /// of a file credited to a node.
    pub(super) unreachable: Vec<(NodeId, u64)>,
    /// Marks of inodes counted once through their links (by inode), and
    /// whether they come from extents read as referenced.
    pub(super) inode_marks: Vec<(Inode, Bound, bool)>,
    /// [`Local::unreachable`] of such inodes.
    pub(super) unreachable_inodes: Vec<(Inode, u64)>,
    /// Btrfs filesystems (registry index) where files' extents were read
    /// as referenced, not whole, and the bytes of those files' extents that
    /// are not flagged shared.
    pub(super) partial_spaces: Vec<(u32, u64)>,
    /// Maps kept and reused ([`super::since`]).
    pub(super) since: super::since::Since,
}

thread_local! {
    /// A task's emptied `inline` vector, for the thread's next task: on
    /// Btrfs most directories have such files, and a vector grown from
    /// empty in each task cost more than a lock per file did
    /// (docs/decisions.md, "User CPU against the floor").
    static SPARE_INLINE: Cell<Vec<InlineRec>> = const { Cell::new(Vec::new()) };
}

/// The largest `inline` vector kept for the next task.
const SPARE_INLINE_MAX: usize = 4096;

/// The nodes and identities a task holds before it hands them to the
/// store: a few kilobytes. A wide directory's batch holding all of its
/// own would make each vector an allocation of hundreds of kilobytes,
/// which glibc maps on its own and unmaps when the task ends, and each such
/// unmap raises the size under which it keeps freed memory in its arenas
/// rather than give it back.
const LOCAL_NODES: usize = 256;

impl Local {
    /// Keeps node `r`, named `name` (`r.name` is ignored).
    pub(super) fn push_node<N>(&mut self, r: NodeRec<N>, name: &[u8]) {
        let start = self.names.len() as u32;
        self.names.extend_from_slice(name);
        self.nodes.push(NodeRec {
            id: r.id,
            parent: r.parent,
            depth: r.depth,
            kind: r.kind,
            leaf: r.leaf,
            order: r.order,
            name: (start, self.names.len() as u32),
            own: r.own,
        });
    }

    /// Node `node`'s own Reclaimable is a bound, for reason `b`.
    pub(super) fn bound(&mut self, node: NodeId, b: Bound) {
        // A directory's files come one after another: one record for them.
        if self.bounds.last() != Some(&(node, b)) {
            self.bounds.push((node, b));
        }
    }

    /// [`Local::bound`], for a file whose extents were read as referenced.
    pub(super) fn partial_bound(&mut self, node: NodeId, b: Bound) {
        if self.partial_marks.last() != Some(&(node, b)) {
            self.partial_marks.push((node, b));
        }
    }

    /// A file of extent space `space` (Btrfs) had its extents read as
    /// referenced; `bytes` of them are not flagged shared. `encoded`: some
    /// of its extents are compressed, which FIEMAP gives at their logical
    /// length, not their size on disk: the space's bytes on disk are then
    /// not known, and the sum saturates, which no Data Used equals (the
    /// proof, `walked.rs`, fails there).
    pub(super) fn partial_view(&mut self, space: u32, bytes: u64, encoded: bool) {
        let bytes = if encoded { u64::MAX } else { bytes };
        match self.partial_spaces.iter_mut().find(|p| p.0 == space) {
            Some(p) => p.1 = p.1.saturating_add(bytes),
            None => self.partial_spaces.push((space, bytes)),
        }
    }

    /// Records a Btrfs file with inline data, for the shard.
    pub(super) fn push_inline(&mut self, rec: InlineRec) {
        if self.inline.capacity() == 0 {
            self.inline = SPARE_INLINE.take();
        }
        self.inline.push(rec);
    }

    /// The items read together for inode `ino`, once.
    pub(super) fn take_pre(&mut self, ino: u64) -> Option<InodeItems> {
        let i = self.pre.binary_search_by_key(&ino, |p| p.0).ok()?;
        let items = std::mem::take(&mut self.pre[i].1);
        items.found.then_some(items)
    }
}

/// Inline records per chunk of a shard: 3 MiB.
const INLINE_CHUNK: usize = 1 << crate::extents::inline::CHUNK_BITS;

/// Records produced by tasks on one thread.
#[derive(Default)]
pub(super) struct Shard {
    /// In chunks of [`INLINE_CHUNK`]: pushing never moves the records pushed
    /// before, as one vector does at each doubling (megabytes on a Btrfs
    /// scan, and most of it is never read: see
    /// [`crate::extents::inline::Table::devs`]).
    pub(super) inline: Vec<Vec<InlineRec>>,
    /// Figures a batch adds to a directory whose node another task pushed.
    pub(super) partial: Vec<(NodeId, Stats)>,
    pub(super) links: Vec<Link>,
    /// Its tasks' file records, packed.
    pub(super) files: FileShard,
    /// The copies of its tasks, by directory ([`Held`]).
    pub(super) copies: Vec<Held>,
    pub(super) counters: Counters,
    /// Nodes whose own Reclaimable is a bound ([`Local::bounds`]).
    pub(super) bounds: Vec<(NodeId, Bound)>,
    /// [`Local::partial_marks`].
    pub(super) partial_marks: Vec<(NodeId, Bound)>,
    /// [`Local::unreachable`].
    pub(super) unreachable: Vec<(NodeId, u64)>,
    /// [`Local::inode_marks`].
    pub(super) inode_marks: Vec<(Inode, Bound, bool)>,
    /// [`Local::unreachable_inodes`].
    pub(super) unreachable_inodes: Vec<(Inode, u64)>,
    pub(super) partial_spaces: Vec<(u32, u64)>,
    pub(super) since: super::since::Since,
}

/// Appends a shard's records to the others': the first shard's are taken
/// as they are, not copied.
pub(super) fn gather<T>(all: &mut Vec<T>, mut shard: Vec<T>) {
    if all.is_empty() {
        std::mem::swap(all, &mut shard);
    } else {
        all.append(&mut shard);
    }
}

impl Shard {
    /// Takes a task's inline records (leaving its vector empty).
    fn add_inline(&mut self, recs: &mut Vec<InlineRec>) {
        let mut from = &recs[..];
        while !from.is_empty() {
            let chunk = match self.inline.last_mut() {
                Some(chunk) if chunk.len() < chunk.capacity() => chunk,
                _ => {
                    self.inline.push(Vec::with_capacity(INLINE_CHUNK));
                    self.inline.last_mut().expect("a chunk pushed")
                }
            };
            let (now, rest) = from.split_at(from.len().min(chunk.capacity() - chunk.len()));
            chunk.extend_from_slice(now);
            from = rest;
        }
        recs.clear();
    }
}

/// The next node id from `next`; past [`MAX_NODES`], sets `too_many` and
/// gives the last id again (the walk is thrown away: nothing reads it).
#[inline]
pub(super) fn take_id(next: &AtomicU32, too_many: &AtomicBool) -> NodeId {
    let id = next.fetch_add(1, Ordering::Relaxed);
    if id < MAX_NODES && id != 0 {
        return NodeId::new(id as usize);
    }
    // Past the limit (or wrapped round to 0 after it).
    too_many.store(true, Ordering::Relaxed);
    NodeId::new(MAX_NODES as usize - 1)
}

/// The state every task of one walk shares, by concern.
///
/// What every thread writes often (the next id, a shard's lock, the fd
/// cache's lock, the kept subvolumes' lock) is kept off the cache lines of
/// what every file reads ([`WalkSetup`]).
pub(super) struct Ctx<'a> {
    /// The options, and what the walk decided from them before it started.
    /// Read for every file: on cache lines of its own, which no lock every
    /// thread takes shares.
    pub(super) run: CachePadded<WalkSetup<'a>>,
    /// The records being gathered, and the ids they are gathered under.
    pub(super) records: Records,
    /// Directory fds, and the shares of the fd limit.
    pub(super) fds: Fds,
    /// The extents stage's state: the filesystems met, the extents, the
    /// linked inodes claimed, the XFS allocation-group turns.
    pub(super) map: Mapping,
    /// As root on Btrfs: directories listed from the tree.
    pub(super) tree: TreeWalk,
}

/// What every task reads and none writes: the options, and the flags the
/// walk set from them when it started.
pub(super) struct WalkSetup<'a> {
    pub(super) opts: &'a WalkOptions,
    pub(super) msgs: &'a Messages,
    pub(super) euid: u32,
    /// du's rules where they differ from sdu's own (`--du`, sdu run as
    /// du: [`crate::tree::Rules::du`]): overlapping roots share one count,
    /// and du's messages (no warning for a symlink cycle under `-L`).
    pub(super) du_rules: bool,
    /// Every inode goes through the link table, not only multiply-linked
    /// ones: under `-L`, or under du's rules when roots overlap (then one
    /// directory or file can be met more than once).
    pub(super) hash_all: bool,
    /// Btrfs files with inline data are recorded: the walk may meet two
    /// subvolumes of one filesystem ([`super::inline_wanted`]).
    pub(super) keep_inline: bool,
}

/// The records being gathered.
pub(super) struct Records {
    /// Written for every directory, by every thread: on a cache line of
    /// its own, not on one of the fields every file reads.
    pub(super) next_id: CachePadded<AtomicU32>,
    /// More entries than node ids: the walk stops and fails
    /// ([`crate::Error::TooManyEntries`]).
    pub(super) too_many: AtomicBool,
    /// One per thread, each on lines of its own: a shard's lock is taken by
    /// its thread alone during the walk.
    pub(super) shards: Vec<CachePadded<Mutex<Shard>>>,
    /// The nodes, each at its id, kept compact from the start: with `-a`
    /// they are most of the scan.
    pub(super) nodes: NodeSink,
    /// With [`WalkOptions::identities`]: the nodes' identities, by id.
    pub(super) idents: IdentSink,
    /// Under du's rules: directories moved during the scan.
    pub(super) watch: Option<Arc<MoveWatch>>,
    /// Directories not read in full (rare: a lock is enough).
    pub(super) read_errors: Mutex<Vec<ReadError>>,
    /// The mounts not entered ([`super::left::Left::mounts`]): rare.
    pub(super) left_mounts: Mutex<Vec<u64>>,
    /// How many mount points inside the roots lie on a Btrfs (`None`: not
    /// known), and the directories under them the tree showed empty
    /// (subvolume device, inode): [`super::left::Left::hidden`].
    pub(super) mounts_inside: Option<usize>,
    pub(super) empty_under_mounts: Mutex<Vec<(u64, u64)>>,
    /// What the walk saw of each PATH, by its position on the command line.
    pub(super) roots: Mutex<super::RootsSeen>,
    /// Which roots inside another namespace 0 reached.
    pub(super) reach: super::roots::Reach,
}

/// The directory fds the walk keeps, and how many more files the fd limit
/// lets it hold.
pub(super) struct Fds {
    pub(super) cache: FdCache,
    /// The directories whose handles are alive ([`Active`]).
    pub(super) active: Arc<Active>,
    /// Files that may wait for the holder of one allocation group's turn.
    pub(super) max_later: usize,
    /// Btrfs subvolumes whose fd the walk may keep ([`TreeWalk::subvols`]).
    pub(super) max_subvols: usize,
}

/// What mapping files' extents shares.
pub(super) struct Mapping {
    pub(super) registry: Registry,
    pub(super) extents: Extents,
    /// Multiply-linked inodes already claimed for FIEMAP.
    pub(super) claimed: DashSet<(u32, u64, u64)>,
    /// FIEMAP turns by XFS allocation group.
    pub(super) ags: AgSched<Later>,
    /// The keys of the inline records, each once
    /// ([`crate::extents::inline::Keys`]).
    pub(super) inline_keys: Keys,
    /// The sets of files copied, each once ([`crate::records::CopySets`]).
    pub(super) copy_sets: CopySets,
}

/// As root on Btrfs, directories are listed from the tree
/// ([`super::btrfs_listing`]).
#[derive(Default)]
pub(super) struct TreeWalk {
    /// The walk lists directories from the tree.
    pub(super) on: bool,
    /// The inodes read from the tree ahead of the walk.
    pub(super) inodes: TreeCache,
    /// The mount points inside the roots, as their paths are printed: the
    /// tree cannot see what is mounted there.
    pub(super) mounts: Vec<Vec<u8>>,
    /// An fd of each Btrfs subvolume the tree lists (by device), at most
    /// [`Fds::max_subvols`]: the fd its directories read from the tree
    /// search through, without an open of their own.
    pub(super) subvols: Mutex<HashMap<u64, Arc<OwnedFd>>>,
}

impl Ctx<'_> {
    pub(super) fn new_id(&self) -> NodeId {
        take_id(&self.records.next_id, &self.records.too_many)
    }

    /// Records a Btrfs file with inline data (or a symlink, whose target
    /// is inline), credited to `at` (node, namespace), with the bytes it
    /// counts as its own and its file id (`(bytes, file)`), for the matching
    /// of snapshot copies after the walk.
    pub(super) fn record_inline(
        &self,
        local: &mut Local,
        st: &Statx,
        at: (NodeId, u32),
        (bytes, file): (u64, Option<u32>),
        linked: bool,
        (fs, cache): (u32, Option<&KeyCache>),
    ) {
        let keys = (fs, &self.map.inline_keys, &mut local.inline_dev);
        // A device number past 32 bits (which Linux does not make) is not
        // recorded: the file's inline data counts as its own.
        let fresh = local.inline.is_empty();
        for rec in InlineRec::of(st, at, (bytes, linked, file), keys, (fresh, cache))
            .into_iter()
            .flatten()
        {
            local.push_inline(rec);
        }
    }

    /// Without root, marks "at most" the node `at` of a Btrfs inline file
    /// or symlink stat-ed as `st` (`once`: counted through its links, by
    /// inode): a snapshot outside the scan may hold its data, which only
    /// root can ask (`inline_held`). A partial mark, withdrawn where the
    /// scan covers the filesystem, whose proof it takes part in (`space`:
    /// the file's extent space).
    pub(super) fn inline_bound(
        &self,
        local: &mut Local,
        st: &Statx,
        at: (NodeId, u32),
        once: bool,
        space: u32,
    ) {
        if self.map.extents.trees_readable() {
            return;
        }
        local.partial_view(space, 0, false);
        match once {
            true => local
                .inode_marks
                .push(((at.1, dev_of(st), st.stx_ino), Bound::AT_MOST, true)),
            false => local.partial_bound(at.0, Bound::AT_MOST),
        }
    }

    /// Records that directory `node` was not read in full (`whole`: not
    /// at all), and why, for the browser's marks and its entry info.
    pub(super) fn read_error(&self, node: NodeId, whole: bool, what: String) {
        self.records
            .read_errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(ReadError { node, whole, what });
    }

    /// Records node `id`'s identity from its `statx`, when the walk keeps
    /// them ([`WalkOptions::identities`]).
    #[inline]
    pub(super) fn ident(&self, local: &mut Local, id: NodeId, st: &Statx) {
        if self.run.opts.identities {
            local.idents.push((
                id,
                Ident {
                    dev: dev_of(st),
                    ino: st.stx_ino,
                    mnt: st.stx_mnt_id,
                },
            ));
            if local.idents.len() >= LOCAL_NODES {
                self.records.idents.put(&local.idents);
                local.idents.clear();
            }
        }
    }

    /// Keeps the `-a` node of entry `name` of directory `h` (`id`, `kind`),
    /// at getdents position `idx`, with its own figures.
    pub(super) fn leaf(
        &self,
        local: &mut Local,
        h: &super::fdcache::DirHandle,
        (id, kind): (NodeId, Kind),
        idx: u32,
        name: &std::ffi::CStr,
        own: Stats,
    ) {
        let r = NodeRec {
            id,
            parent: h.id,
            depth: h.depth + 1,
            kind,
            leaf: true,
            order: idx,
            name: (),
            own,
        };
        local.push_node(r, name.to_bytes());
        if local.nodes.len() >= LOCAL_NODES {
            self.put_nodes(local);
        }
    }

    /// Hands `local`'s nodes to the store.
    fn put_nodes(&self, local: &mut Local) {
        let names = &local.names;
        self.records.nodes.put(&local.nodes, |r| {
            &names[r.name.0 as usize..r.name.1 as usize]
        });
        local.nodes.clear();
        local.names.clear();
    }

    /// Hands a task's records to its thread's shard, in one lock. `partial`
    /// is the directory whose figures `local.acc` adds to, when its node is
    /// pushed by another task (a batch of a wide directory). `dir` is the
    /// task's directory node, with its name (stored without a copy of its
    /// own).
    pub(super) fn flush(
        &self,
        mut local: Local,
        partial: Option<NodeId>,
        dir: Option<(&NodeRec, &[u8])>,
    ) {
        self.flush_from(&mut local, partial, dir);
    }

    /// [`Self::flush`] from a task's records in place (a [`Local`] is
    /// hundreds of bytes, not moved per directory); the caller drops them.
    pub(super) fn flush_from(
        &self,
        local: &mut Local,
        partial: Option<NodeId>,
        dir: Option<(&NodeRec, &[u8])>,
    ) {
        debug_assert!(local.ag.holding.is_none(), "a task ended holding a turn");
        debug_assert!(local.waiting.is_empty(), "a task ended with files put off");
        if let Some(p) = &self.run.opts.progress {
            p.entries
                .fetch_add(local.counters.entries, Ordering::Relaxed);
            let bytes = (local.partial.iter()).fold(local.acc.total, |b, (_, s)| b + s.total);
            p.bytes.fetch_add(bytes, Ordering::Relaxed);
        }
        self.put_nodes(local);
        if let Some((r, name)) = dir {
            self.records.nodes.put_named(r, name);
        }
        self.records.idents.put(&local.idents);
        local.idents.clear();
        let shards = &self.records.shards;
        let i = rayon::current_thread_index().unwrap_or(0) % shards.len();
        let mut shard = shards[i].lock().unwrap_or_else(|e| e.into_inner());
        if let Some(dir) = partial {
            shard.partial.push((dir, local.acc));
        }
        merge_partial(&mut shard.partial, local.partial.len());
        shard.partial.append(&mut local.partial);
        shard.links.append(&mut local.links);
        shard.files.append(&mut local.files);
        if !local.copies.is_empty() {
            self.map
                .copy_sets
                .hold(&mut local.copies, &mut shard.copies);
            local.copies.clear();
        }
        shard.bounds.append(&mut local.bounds);
        shard.partial_marks.append(&mut local.partial_marks);
        shard.unreachable.append(&mut local.unreachable);
        shard.inode_marks.append(&mut local.inode_marks);
        shard.since.append(&mut local.since);
        shard
            .unreachable_inodes
            .append(&mut local.unreachable_inodes);
        for (fs, bytes) in local.partial_spaces.drain(..) {
            match shard.partial_spaces.iter_mut().find(|p| p.0 == fs) {
                Some(p) => p.1 = p.1.saturating_add(bytes),
                None => shard.partial_spaces.push((fs, bytes)),
            }
        }
        shard.counters.add(&local.counters);
        if !local.inline.is_empty() {
            shard.add_inline(&mut local.inline);
        }
        drop(shard);
        if (1..=SPARE_INLINE_MAX).contains(&local.inline.capacity()) {
            SPARE_INLINE.set(std::mem::take(&mut local.inline));
        }
    }

    /// The figures of the inode `st` describes, with its `--time`
    /// timestamp when asked for.
    pub(super) fn inode_stats(&self, st: &Statx) -> Stats {
        let kind = Kind::from_mode(u32::from(st.stx_mode));
        let mut s = Stats::of_inode(kind, st.stx_size, st.stx_blocks);
        s.time = self.inode_time(st);
        s
    }

    /// The `--time` timestamp of the inode `st` describes, when asked for.
    pub(super) fn inode_time(&self, st: &Statx) -> Option<Timestamp> {
        self.run.opts.time.map(|field| {
            let t = match field {
                TimeField::Modification => st.stx_mtime,
                TimeField::Access => st.stx_atime,
                TimeField::Status => st.stx_ctime,
            };
            Timestamp {
                secs: t.tv_sec,
                nanos: t.tv_nsec,
            }
        })
    }

    /// Must this inode be credited through the link table (once per
    /// directory) rather than added where it is found?
    pub(super) fn counts_once(&self, nlink: u32) -> bool {
        !self.run.opts.count_links && (nlink > 1 || self.run.hash_all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_past_the_limit_fail_the_walk_and_never_wrap_silently() {
        let next = AtomicU32::new(MAX_NODES - 2);
        let too_many = AtomicBool::new(false);
        let id = |i: u32| NodeId::new(i as usize);
        assert_eq!(take_id(&next, &too_many), id(MAX_NODES - 2));
        assert_eq!(take_id(&next, &too_many), id(MAX_NODES - 1));
        assert!(!too_many.load(Ordering::Relaxed));
        // MAX_NODES, u32::MAX, then 0 and 1 after the counter wraps: each
        // one sets the flag.
        for _ in 0..4 {
            take_id(&next, &too_many);
            assert!(too_many.load(Ordering::Relaxed));
        }
        let e = crate::Error::TooManyEntries.to_string();
        assert_eq!(
            e,
            "more than 4294967293 entries: past what sdu can count (node ids are 32 bits)"
        );
    }
}
