//! The parallel walk: every directory read through its own fd, every entry
//! stat-ed relative to it, every file that may share mapped on the way.
//!
//! Each directory is a rayon task. It opens the directory with
//! `openat(parent_fd, name)`, reads it with getdents64 into a per-thread
//! buffer and stats each entry with `statx(dirfd, name, AT_SYMLINK_NOFOLLOW |
//! AT_STATX_DONT_SYNC)`; no syscall takes a full path, so depth and PATH_MAX
//! do not matter. Subdirectories become new tasks. Wide directories are
//! split into batches that other threads stat. Nothing recurses: tasks live
//! on rayon's queues, not on the stack.
//!
//! The walk produces the [records](crate::records): one [`NodeRec`](crate::records::NodeRec) per
//! directory (and per file with `-a`), with the figures of the directory's
//! own inode plus those of its singly-linked non-directory entries, and one
//! [`Link`] per link of every multiply-linked inode, which the roll-up
//! credits once per directory.
//!
//! - `ctx`: the options, counters and state every task shares;
//! - `dir`: reading one directory, stat-ing its entries;
//! - `entry`: one entry from its listing to its `statx`;
//! - `account`: what one non-directory entry adds (and its extents);
//! - `plain`: the same for the common regular file, without the layers
//!   the other cases need;
//! - `mapped`: an open file's extents read, and what mapping it gave
//!   credited to its node;
//! - `later`: a file handed to the thread that holds its XFS allocation
//!   group's turn (the extents stage's `ag` module schedules the turns);
//! - `open`: every rule for opening directories and files;
//! - `fdcache`: the directory handles and the bounded fd cache;
//! - `indir`: a directory being read, as its entries see it, the format its
//!   entries are batched in, the batched tree search after getdents;
//! - `btrfs_listing`: as root on Btrfs, a directory listed, and its
//!   entries stat-ed, from the subvolume's tree instead of getdents and
//!   statx;
//! - `root_file`: a PATH that is not a directory, accounted for at once;
//! - `subvols`: with [`WalkOptions::subvolumes`], each Btrfs subvolume
//!   root's identity, read through the fd the walk opened it by;
//! - `top_level`: `--snapshots` as root, the subvolumes of the PATHs'
//!   origins outside them, reached through the Btrfs top level.

mod account;
mod btrfs_listing;
mod budget;
mod cold;
pub(crate) mod counters;
pub(crate) mod ctx;
mod dir;
mod entry;
mod fdcache;
mod indir;
mod later;
mod left;
mod mapped;
#[cfg(test)]
mod mem_tests;
mod open;
mod partial;
mod plain;
mod reused;
mod root_file;
mod root_trees;
mod roots;
pub(crate) mod since;
pub(crate) use roots::resolve_dir;
pub(crate) mod subvols;
pub(crate) mod top_level;

use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use dashmap::DashSet;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use crate::error::{Diagnostic, Error};
use crate::extents::{Extents, inline_held::Holders};
use crate::figures::{Bound, Kind};
use crate::messages::Messages;
use crate::probe::Registry;
use crate::records::{Files, IdentSink, Idents, Inode, Link, NodeId, NodeSink, Nodes, ReadError};
pub(crate) use counters::Counters;
pub(crate) use ctx::WalkOptions;
use ctx::{Ctx, Local, Shard, dev_of, gather};
use fdcache::{DirHandle, DirName, FdCache};
pub(crate) use left::{Left, LeftOut};
pub(crate) use roots::namespaces;

/// What a walk found.
#[derive(Debug, Default)]
pub(crate) struct Walk {
    /// Indexed by id; node [`NodeId::TOP`] is the virtual top node.
    pub(crate) nodes: Nodes,
    /// One per link of an inode counted once per directory.
    pub(crate) links: Vec<Link>,
    /// Indexed by file id.
    pub(crate) files: Files,
    /// Copies of files ([`crate::records::CopyRec`]), sorted by the file
    /// they copy.
    pub(crate) copies: crate::records::Copies,
    /// The shared extents of every mapped file, indexed, to be swept.
    pub(crate) extents: Extents,
    /// The filesystems met, and the filesystem of each extent space (the
    /// keys the extent index compares addresses under).
    pub(crate) registry: Registry,
    /// What the walk counted.
    pub(crate) counters: Counters,
    /// Directories moved while they were read (du's rules only): du stops
    /// each root there.
    pub(crate) moved: Vec<NodeId>,
    /// Every node's identity, with [`WalkOptions::identities`].
    pub(crate) idents: Option<Idents>,
    /// The directories not read in full, sorted by node.
    pub(crate) read_errors: Vec<ReadError>,
    /// Nodes whose own Reclaimable is a bound, and why: sorted by node,
    /// each once.
    pub(crate) bounds: Vec<(NodeId, Bound)>,
    /// Nodes of files whose extents were read as referenced on Btrfs
    /// (FIEMAP), and what that leaves uncertain, sorted by node, each once.
    pub(crate) partial_marks: Vec<(NodeId, Bound)>,
    /// As root on Btrfs: bytes on disk that no file references, in the
    /// extents a file alone references, by the node it is credited to.
    pub(crate) unreachable: Vec<(NodeId, u64)>,
    /// Marks of inodes counted once through their links, and whether they
    /// come from extents read as referenced; sorted by inode.
    pub(crate) inode_marks: Vec<(Inode, Bound, bool)>,
    /// Unreachable bytes of such inodes.
    pub(crate) unreachable_inodes: Vec<(Inode, u64)>,
    /// Extent spaces of Btrfs filesystems where some file's extents were
    /// read as referenced (FIEMAP), not whole, with the bytes of those
    /// files' extents not flagged shared (each inode once), by space: a
    /// root counted apart is seen apart.
    pub(crate) partial_spaces: Vec<(u32, u64)>,
    /// What the walk saw of each PATH, by its position on the command line:
    /// `None` for one it could not stat (reported) or excluded.
    pub(crate) roots: Vec<Option<RootSeen>>,
    /// Some PATH lies inside another (or repeats one): each was walked in a
    /// namespace of its own ([`roots::Roots::namespaces`]).
    pub(crate) overlap: bool,
    /// What the walk left out ([`left`]).
    pub(crate) left: Left,
    /// The maps kept for `--export` and those `--since` reused.
    pub(crate) since: since::Since,
    /// The Btrfs subvolume roots met, with [`WalkOptions::subvolumes`].
    pub(crate) subvols: subvols::Subvols,
}

/// What the walk saw of one PATH. The stages after the walk ask about a
/// PATH through this, never by its name again: as root, the name may be
/// another user's to change (docs/SECURITY.md).
#[derive(Clone, Debug)]
pub(crate) struct RootSeen {
    /// Its namespace ([`roots::Roots::namespaces`]) and node.
    pub(crate) ns: u32,
    pub(crate) node: NodeId,
    /// The device of the inode stat-ed.
    pub(crate) dev: u64,
    /// Its inode number.
    pub(crate) ino: u64,
    /// Whether it was a directory.
    pub(crate) dir: bool,
    /// A directory: the fd the walk opened it by, checked against the
    /// inode stat-ed. A regular file: the fd it was opened by for its
    /// extents, through the one its PATH was resolved by. `None` for
    /// anything else, for a directory that could not be opened (reported),
    /// for a file where /proc is not mounted, or once [`KEPT_ROOT_FDS`] are
    /// kept.
    pub(crate) fd: Option<Arc<OwnedFd>>,
}

/// How many PATHs keep the fd the walk opened them by, for the stages
/// after the walk: taken from the fd cache's budget.
pub(crate) const KEPT_ROOT_FDS: usize = 64;

/// What the walk saw of the PATHs so far, and how many fds it keeps;
/// with [`WalkOptions::subvolumes`], the subvolume roots met (one per
/// device entered: rare, as the PATHs are).
#[derive(Debug, Default)]
struct RootsSeen {
    seen: Vec<Option<RootSeen>>,
    kept: usize,
    subvols: subvols::Subvols,
}

/// Records what was stat-ed of root `order`.
fn seen_root(ctx: &Ctx<'_>, order: u32, seen: RootSeen) {
    let mut roots = ctx.records.roots.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(slot) = roots.seen.get_mut(order as usize) {
        *slot = Some(seen);
    }
}

/// Keeps `fd`, the directory of root `order` opened and checked, for the
/// stages after the walk (at most [`KEPT_ROOT_FDS`] of them).
fn keep_root_fd(ctx: &Ctx<'_>, order: u32, fd: &Arc<OwnedFd>) {
    let mut roots = ctx.records.roots.lock().unwrap_or_else(|e| e.into_inner());
    if roots.kept >= KEPT_ROOT_FDS {
        return;
    }
    if let Some(Some(r)) = roots.seen.get_mut(order as usize) {
        r.fd = Some(fd.clone());
        roots.kept += 1;
    }
}

/// Walks `opts.roots` (by du's rules when `du_rules`) and returns the
/// tree's records and the indexed shared extents, with the walk's threads
/// for the stages after it to run on (`crate::scan::walked::walk_and_sweep`
/// says why).
///
/// # Errors
/// [`crate::Error::Threads`] when the worker threads cannot be started.
/// Entries that cannot be read are reported on `msgs` and counted there.
pub(crate) fn walk(
    opts: &WalkOptions,
    du_rules: bool,
    msgs: &Messages,
) -> Result<(Walk, rayon::ThreadPool), Error> {
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(65536);
    // Each PATH resolved by its name once: everything below asks the fds.
    let look = cold::CacheLook::start(); // resolving the PATHs is part of the look
    let follow = opts.follow_links || opts.follow_args;
    let mut roots = roots::Roots::open(&opts.roots, (&opts.root_fds, &opts.path_fds), follow);
    // The root trees asked about before the walk, each read once.
    let trees = root_trees::RootTrees::default();
    let budget::Budget {
        threads,
        cold,
        lineage,
        max_later,
        max_subvols,
        max_cached,
    } = budget::Budget::new(opts, du_rules, (&roots, &trees), look, soft);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("sdu-walk-{i}"))
        .build()
        .map_err(|e| Error::Threads(std::io::Error::other(e)))?;
    let mut spaces = roots.namespaces();
    // du counts an inode once per run: roots that overlap share one
    // namespace, and every inode is then deduplicated through the link
    // table, in du's order.
    let overlap = spaces.iter().any(|&ns| ns != 0);
    if du_rules {
        spaces.fill(0);
    }
    // Read once: the inline records and the tree's listing both ask.
    let mounts = btrfs_listing::mounts_inside(&opts.roots, &roots);
    let mounts_inside = mounts.as_ref().map(|m| m.1);
    let mounts = mounts.map(|m| m.0);
    let run = ctx::WalkSetup {
        opts,
        msgs,
        euid: rustix::process::geteuid().as_raw(),
        du_rules,
        hash_all: opts.follow_links || (du_rules && overlap),
        keep_inline: inline_wanted(opts, (&roots, &trees), mounts.as_deref()),
    };
    // As root on Btrfs, the tree search (`--fiemap` forbids it).
    let extents =
        Extents::with_search(!opts.fiemap_only && crate::extents::source::can_search_trees())
            .spilling(opts.index_memory, opts.tmpdir.clone())
            .storing(opts.stored.clone())
            .saving(opts.keep_mappings || opts.verify_since);
    let ctx = Ctx {
        tree: btrfs_listing::prepare(&run, &extents, mounts),
        run: CachePadded::new(run),
        records: ctx::Records {
            next_id: CachePadded::new(AtomicU32::new(1)),
            too_many: AtomicBool::new(false),
            shards: (0..threads)
                .map(|_| CachePadded::new(Mutex::new(Shard::default())))
                .collect(),
            watch: du_rules.then(|| {
                Arc::new(fdcache::MoveWatch {
                    follow: opts.follow_links || opts.follow_args,
                    ..fdcache::MoveWatch::default()
                })
            }),
            nodes: NodeSink::default(),
            idents: IdentSink::default(),
            read_errors: Mutex::new(Vec::new()),
            left_mounts: Mutex::new(Vec::new()),
            mounts_inside,
            empty_under_mounts: Mutex::new(Vec::new()),
            roots: Mutex::new(RootsSeen {
                seen: opts.roots.iter().map(|_| None).collect(),
                ..RootsSeen::default()
            }),
            reach: roots::Reach::new(&roots, &spaces),
        },
        fds: ctx::Fds {
            cache: FdCache::new(max_cached),
            active: Arc::default(),
            max_later,
            max_subvols,
        },
        map: ctx::Mapping {
            registry: Registry::default(),
            extents,
            claimed: DashSet::new(),
            ags: crate::extents::ag::AgSched::default(),
            inline_keys: Default::default(),
            copy_sets: Default::default(),
        },
    };
    walk_roots(&ctx, &pool, &mut roots, &mut spaces);
    if ctx.records.too_many.load(Ordering::Relaxed) {
        return Err(Error::TooManyEntries);
    }
    let moved = moves(&ctx, msgs);
    // On the walk's threads: the inline records are sorted in parallel.
    let mut walk = pool.install(|| assemble(ctx));
    walk.counters.threads = threads as u64;
    walk.counters.cold = cold;
    walk.counters.cold_lineage = lineage;
    walk.moved = moved;
    walk.overlap = overlap && (du_rules || spaces.iter().any(|&ns| ns != 0));
    Ok((walk, pool))
}

/// Walks every root of `roots` on `pool`: those of namespace 0 first,
/// then each root inside another, in namespace 0 when no walk of it
/// reached the root ([`roots::Reach`]); `spaces` then says so.
fn walk_roots<'s>(
    ctx: &'s Ctx<'s>,
    pool: &rayon::ThreadPool,
    roots: &mut roots::Roots,
    spaces: &mut [u32],
) {
    let opts = ctx.run.opts;
    let inner = roots.inner_in_turn(spaces);
    let mut resolved: Vec<_> = roots.0.drain(..).map(Some).collect();
    let take = |r: &mut Option<_>| r.take().expect("each root is walked once");
    pool.scope(|s| {
        for (i, r) in resolved
            .iter_mut()
            .enumerate()
            .filter(|(i, _)| spaces[*i] == 0)
        {
            start_root(ctx, s, (&opts.roots[i], take(r)), 0, i as u32);
        }
    });
    for i in inner {
        if !ctx.records.reach.reached(i) {
            spaces[i] = 0;
        }
        let r = take(&mut resolved[i]);
        pool.scope(|s| start_root(ctx, s, (&opts.roots[i], r), spaces[i], i as u32));
    }
}

/// The directories found moved during the walk (du's rules), each
/// reported on `msgs`, in order. Every handle has dropped: the moves
/// found are all in.
fn moves(ctx: &Ctx<'_>, msgs: &Messages) -> Vec<NodeId> {
    let mut moved = match &ctx.records.watch {
        Some(w) => std::mem::take(&mut *w.moved.lock().unwrap_or_else(|e| e.into_inner())),
        None => Vec::new(),
    };
    moved.sort_unstable();
    for (_, path) in &moved {
        msgs.report(Diagnostic::DirMoved { path: path.clone() });
    }
    moved.into_iter().map(|(id, _)| id).collect()
}

/// Walks a root, resolved before the walk ([`roots`]), if it is a
/// directory; a file root is accounted for at once. Neither is resolved by
/// its name again here.
fn start_root<'s>(
    ctx: &'s Ctx<'s>,
    s: &rayon::Scope<'s>,
    (root, resolved): (&[u8], Result<roots::RootPath, rustix::io::Errno>),
    ns: u32,
    order: u32,
) {
    if ctx.run.opts.excludes.matches(root) {
        return;
    }
    let follow = ctx.run.opts.follow_links || ctx.run.opts.follow_args;
    let taken = resolved.and_then(|mut r| {
        let fd = r.take_fd(follow)?;
        Ok((r, fd))
    });
    let (resolved, pathfd) = match taken {
        Ok(r) => r,
        Err(errno) => {
            ctx.run.msgs.report(Diagnostic::CannotAccess {
                path: root.to_vec(),
                errno,
            });
            return;
        }
    };
    let st = resolved.st;
    let given = resolved.given;
    let cpath = resolved.path;
    if ns == 0 {
        ctx.records.reach.met(resolved.dev, st.stx_ino);
    }
    let id = ctx.new_id();
    let kind = Kind::from_mode(u32::from(st.stx_mode));
    let stats = ctx.inode_stats(&st);
    let dev = dev_of(&st);
    seen_root(
        ctx,
        order,
        RootSeen {
            ns,
            node: id,
            dev,
            ino: st.stx_ino,
            dir: kind == Kind::Dir,
            fd: None,
        },
    );
    if kind != Kind::Dir {
        let file = (root, cpath.as_c_str());
        root_file::account(
            ctx,
            file,
            (&st, resolved.magic),
            pathfd,
            (ns, order, id),
            follow,
        );
        return;
    }
    ctx.fds.active.enter(dev, st.stx_ino);
    let handle = Arc::new_cyclic(|me| DirHandle {
        me: me.clone(),
        parent: None,
        name: DirName::Heap(cpath),
        id,
        depth: 0,
        dev,
        ino: st.stx_ino,
        root_mnt: open::mount_of(&st),
        ns,
        guard: open::guarded(ctx.run.euid, &st),
        mount_root: false,
        symlinks: 0,
        order,
        watch: ctx.records.watch.clone(),
        fs: None,
        path_len: u32::try_from(root.len()).unwrap_or(u32::MAX),
        fd: Mutex::new(None),
        pending: AtomicUsize::new(1),
        // Held for the first PATHs only ([`roots::HELD`]): past them, a
        // root is opened by its name, checked against the inode stat-ed.
        resolved: (order < roots::HELD as u32 || given).then(|| Arc::new(pathfd.0)),
        active: ctx.fds.active.clone(),
    });
    if ctx.run.opts.identities {
        let mut local = Local::default();
        ctx.ident(&mut local, id, &st);
        ctx.flush(local, None, None);
    }
    s.spawn(move |s| dir::walk_dir(ctx, s, handle, stats, st.stx_uid, None));
}

/// Whether the walk records the Btrfs files with inline data
/// ([`crate::extents::inline`]). Such data is shared only by two
/// subvolumes of one filesystem, and most scans meet one: then nothing is
/// recorded (records written and thrown away cost: docs/decisions.md,
/// "User CPU against the floor"), but as root where snapshots may hold
/// them outside the scan (`inline_held`).
/// A walk meets one subvolume when every root lies on one device, no root
/// directory's subvolume holds another (`BTRFS_IOC_GET_SUBVOL_ROOTREF`,
/// unprivileged: anywhere in it, so also outside the roots), no mount point
/// lies inside the roots and no symlink is followed (`-L`). Anything that
/// cannot be told (a root that cannot be opened, no `/proc/self/mountinfo`,
/// a kernel without the ioctl, another filesystem) records them. A subvolume
/// or mount made inside the roots during the walk is not looked for.
fn inline_wanted(
    opts: &WalkOptions,
    (roots, trees): (&roots::Roots, &root_trees::RootTrees),
    mounts: Option<&[Vec<u8>]>,
) -> bool {
    if opts.skip_extents {
        return false;
    }
    if opts.follow_links || mounts.is_none_or(|m| !m.is_empty()) {
        return true;
    }
    let (mut devs, search) = (Vec::new(), crate::extents::can_search_trees());
    for i in 0..roots.0.len() {
        let Some(r) = roots.get(i).filter(|_| !search || roots.is_dir(i)) else {
            return true;
        };
        // A directory is asked about its subvolume through an fd of its
        // own, opened through the fd its PATH was resolved by; anything
        // else only has a device.
        if roots.is_dir(i) {
            let flags = open::dir_flags(u32::MAX, None, opts.follow_args);
            match r.open_dir(flags) {
                Ok(fd) if subvolumes_may_share(fd.as_fd(), r.dev, search, trees) => return true,
                Err(_) => return true,
                Ok(_) => {}
            }
        }
        devs.push(r.dev);
    }
    devs.sort_unstable();
    devs.dedup();
    devs.len() > 1
}

/// Whether a walk of the directory open at `fd` may meet Btrfs files
/// that two subvolumes hold: its subvolume holds another (or that cannot
/// be told), or as root (`search`), its filesystem has snapshots, which
/// may hold its files outside the scan (or that cannot be told; the
/// snapshot families are those of [`sdu_sys::btrfs::Subvolumes`]).
fn subvolumes_may_share(
    fd: BorrowedFd<'_>,
    dev: u64,
    search: bool,
    trees: &root_trees::RootTrees,
) -> bool {
    sdu_sys::btrfs::has_nested_subvol(fd).unwrap_or(true)
        || (search
            && sdu_sys::fs::fs_type(fd).is_ok_and(|m| m == sdu_sys::fs::magic::BTRFS)
            && trees.of(dev, fd).is_none_or(|s| s.any_family()))
}

/// The walk's records: the nodes and identities as the walk left them
/// (by id), the shards' other records gathered.
fn assemble(ctx: Ctx<'_>) -> Walk {
    let identities = ctx.run.opts.identities;
    let Ctx {
        records,
        fds,
        map,
        tree,
        ..
    } = ctx;
    // What the tree search read and kept goes first.
    let tree_unchanged = tree.inodes.unchanged();
    drop(tree);
    let ctx::Mapping {
        registry,
        extents,
        claimed,
        inline_keys,
        copy_sets,
        ..
    } = map;
    // The walk is over: its directory handles (the fd cache holds them, and
    // each holds its parent) and the claims on linked inodes go before the
    // shards' records are gathered.
    drop(fds);
    drop(claimed);
    // The inline records' keys by id: a table, smaller than the map.
    let inline_keys = inline_keys.table();
    let ctx::Records {
        next_id,
        shards,
        nodes,
        idents,
        read_errors,
        roots,
        left_mounts,
        mounts_inside,
        empty_under_mounts,
        ..
    } = records;
    let RootsSeen {
        seen: roots,
        mut subvols,
        ..
    } = roots.into_inner().unwrap_or_else(|e| e.into_inner());
    subvols.finish();
    let mut read_errors = read_errors.into_inner().unwrap_or_else(|e| e.into_inner());
    // One per directory: the whole failure first, then by message.
    read_errors
        .sort_unstable_by(|a, b| (a.node, !a.whole, &a.what).cmp(&(b.node, !b.whole, &b.what)));
    let n = next_id.load(Ordering::Relaxed) as usize;
    let mut links = Vec::new();
    let mut bounds = Vec::new();
    let mut partial_marks = Vec::new();
    let mut unreachable = Vec::new();
    let mut inode_marks = Vec::new();
    let mut unreachable_inodes = Vec::new();
    let mut partial_spaces: Vec<(u32, u64)> = Vec::new();
    let mut files = Vec::new();
    let mut copies = Vec::new();
    let mut counters = Counters {
        tree_unchanged,
        ..Counters::default()
    };
    let mut inline = Vec::new();
    let mut since = since::Since::default();
    // The nodes and identities are where the walk put them, by id.
    let mut nodes = nodes.into_nodes(n);
    let idents = identities.then(|| idents.into_idents(n));
    for shard in shards {
        let shard = CachePadded::into_inner(shard)
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        gather(&mut links, shard.links);
        // A directory's figures from files mapped on other threads, added
        // to its node as each shard comes: not gathered, so that none of
        // them (88 bytes a directory and thread) is held beside the file
        // records below.
        for (id, stats) in shard.partial {
            let mut own = nodes.own(id);
            own += stats;
            nodes.set_own(id, &own);
        }
        gather(&mut bounds, shard.bounds);
        gather(&mut partial_marks, shard.partial_marks);
        gather(&mut unreachable, shard.unreachable);
        gather(&mut inode_marks, shard.inode_marks);
        gather(&mut unreachable_inodes, shard.unreachable_inodes);
        partial_spaces.extend(shard.partial_spaces);
        files.push(shard.files);
        gather(&mut copies, shard.copies);
        counters.add(&shard.counters);
        counters.inline_recorded += (shard.inline.iter().flatten())
            .filter(|r| !r.is_mark())
            .count() as u64;
        inline.extend(shard.inline);
        let mut s = shard.since;
        since.append(&mut s);
    }
    since.finish();
    let mut files = crate::records::Files::by_id(files, extents.files());
    nodes.set_parent(NodeId::TOP, NodeId::NONE);
    // Inline data that snapshots share, in the scan or (as root) outside it.
    let inline_devs = inline_keys.devs();
    // The PATHs' filesystems first, then those met below them.
    let fds = (roots.iter().flatten().map(|r| (r.dev, r.fd.as_deref()))).chain(inline_keys.fds());
    let under = (mounts_inside, empty_under_mounts);
    let left = Left::take(counters.left_out, left_mounts, under);
    let whole = || left.whole_by_namespace(&roots, &registry);
    let holders =
        Holders::as_root(&extents, &registry, &inline_devs, fds).map(|h| h.with_whole(whole()));
    if inline_devs.len() > 1 || holders.is_some() {
        // The matching takes the records whole, and gives them back.
        let mut recs = std::mem::take(&mut files).into_recs();
        let shared = crate::extents::inline::share(
            (std::mem::take(&mut inline), &inline_keys),
            (&inline_devs, holders.as_ref(), &namespaces(&roots)),
            &registry,
            &extents,
            &mut nodes,
            &mut links,
            (&mut recs, (&copy_sets, &mut copies)),
        );
        files = crate::records::Files::from_recs(recs);
        counters.search_calls += holders.as_ref().map_or(0, Holders::searches);
        bounds.extend(shared.unknown.into_iter().map(|n| (n, Bound::AT_MOST)));
        let inodes = shared.unknown_inodes.into_iter();
        inode_marks.extend(inodes.map(|i| (i, Bound::AT_MOST, false)));
    }
    drop(inline);
    drop(inline_keys);
    let copies = crate::records::Copies::new(copies, copy_sets);
    crate::records::merge_bounds(&mut bounds);
    crate::records::merge_bounds(&mut partial_marks);
    partial_spaces.sort_unstable();
    partial_spaces.dedup_by(|b, a| {
        let same = a.0 == b.0;
        if same {
            a.1 = a.1.saturating_add(b.1);
        }
        same
    });
    inode_marks.sort_unstable_by_key(|m: &(Inode, Bound, bool)| m.0);
    Walk {
        read_errors,
        inode_marks,
        unreachable_inodes,
        bounds,
        partial_marks,
        unreachable,
        partial_spaces,
        idents,
        nodes,
        links,
        files,
        copies,
        extents,
        registry,
        counters,
        moved: Vec::new(),
        roots,
        overlap: false,
        left,
        subvols,
        since,
    }
}
