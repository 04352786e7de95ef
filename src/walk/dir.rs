//! Reading one directory: open it relative to its parent, list it with
//! getdents64, stat each entry relative to it, and hand subdirectories to
//! new tasks.
//!
//! After the first [`INLINE_ENTRIES`] entries of a directory, names are
//! copied into batches that other threads stat in parallel, so that one huge
//! directory is shared between threads.

use std::cell::RefCell;
use std::ffi::CStr;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rustix::fs::{self as rfs, OFlags, RawDir, StatxAttributes};
use rustix::io::Errno;

use super::account::{self, Accounted, FoundFile, Pre};
use super::btrfs_listing;
use super::ctx::{Ctx, Local, dev_of};
use super::entry::{
    ListedEntry, Stated, excluded, in_cycle, left_beside, not_stated, path_kept, stat_entry,
    symlinks_to,
};
use super::fdcache::{DirHandle, DirName};
use super::indir::{InDir, Listed, batch_entries, prefetch, push_entry};
use super::left::LeftOut;
use super::open::{self, DirError};
use super::{plain, subvols};
use crate::error::Diagnostic;
use crate::figures::{Kind, Stats};
use crate::probe::Skip;
use crate::records::{Link, NodeId, NodeRec};

/// Entries of one directory stat-ed by the task that reads it; past this,
/// names go to batches that other threads can take. Small enough that a
/// 10k-entry directory is shared between threads, large enough that the
/// copy and the task never show up for ordinary directories.
const INLINE_ENTRIES: u32 = 1024;

/// Names per batch of a wide directory.
const BATCH_ENTRIES: usize = 2048;

/// Per-thread getdents64 buffer. 64 KiB holds about 2,000 typical entries,
/// so a directory of ordinary size is read in one or two syscalls.
const GETDENTS_BUF: usize = 64 * 1024;

thread_local! {
    static DENTS: RefCell<Vec<MaybeUninit<u8>>> = const { RefCell::new(Vec::new()) };
}

/// Reads one directory: stats its entries, spawns its subdirectories.
/// `own` is the directory inode's figures, `uid` its owner; `template`,
/// when the Btrfs tree stat-ed it, what it gave ([`super::btrfs_listing`]).
pub(super) fn walk_dir<'s>(
    ctx: &'s Ctx<'s>,
    s: &rayon::Scope<'s>,
    h: Arc<DirHandle>,
    own: Stats,
    uid: u32,
    template: Option<Box<rfs::Statx>>,
) {
    if ctx.records.too_many.load(Ordering::Relaxed) || ctx.map.extents.spill_failed() {
        // The walk has failed: nothing more is read.
        return;
    }
    let mut local = Local::default();
    let rec = NodeRec {
        id: h.id,
        parent: match &h.parent {
            Some(p) => p.id,
            None if h.ns == 0 => NodeId::TOP,
            None => NodeId::NONE,
        },
        depth: h.depth,
        kind: Kind::Dir,
        leaf: false,
        order: h.order,
        // Its name is copied from the handle when the node is stored.
        name: Box::default(),
        own: Stats::default(),
    };
    if ctx.run.hash_all {
        // Under -L (or du's rules with overlapping roots) one directory can
        // be reached by several paths: count its own inode through the
        // link table, like a hardlinked file.
        local.links.push(Link {
            ns: h.ns,
            dev: h.dev,
            ino: h.ino,
            nlink: 1,
            node: h.id,
            entry: None,
            stats: own,
        });
    } else {
        local.acc = own;
    }

    // A root given as a symlink is followed under -H as under -L; the
    // chain of a reopen may start at such a root. Every open is checked
    // against the (dev, ino) stat-ed, so following cannot read another
    // directory in its place.
    let follow_root = ctx.run.opts.follow_links || ctx.run.opts.follow_args;
    // Stat-ed from the Btrfs tree, in a subvolume the walk holds an fd of:
    // listed from the tree through that fd, without an open of its own.
    // (Boxed and borrowed: a `Statx` is 256 bytes, not to be copied into
    // every task.)
    let template = template.as_deref();
    if let (Some(_), Some(fs), Some(sfd)) = (template, h.fs, btrfs_listing::subvol_fd(ctx, h.dev)) {
        if let Some(p) = &h.parent {
            p.release(&ctx.fds.cache);
        }
        progress(ctx, &h);
        own_bytes_on(&fs, ctx, &mut local);
        let mut dir = InDir::new(ctx, &h, &sfd, fs);
        (dir.lazy, dir.shared) = (true, None);
        if !list_tree(ctx, s, &dir, &sfd, template, &mut local) {
            // The tree cannot list it after all: getdents does.
            let chain = open::dir_flags(ctx.run.euid, None, follow_root);
            match h.fd(&ctx.fds.cache, chain) {
                Ok(fd) => list(ctx, s, &InDir::new(ctx, &h, &fd, fs), &fd, &mut local),
                Err(e) => report_dir_error(ctx, &h, e, &mut local),
            }
        }
        h.release(&ctx.fds.cache);
        return finish(ctx, &h, rec, &mut local);
    }
    let follow = ctx.run.opts.follow_links || (h.parent.is_none() && follow_root);
    let flags = open::dir_flags(ctx.run.euid, Some(uid), follow);
    let mut layout = None; // a subvolume root's record, read in its parent
    let opened = match &h.parent {
        Some(p) => {
            let chain = open::dir_flags(ctx.run.euid, None, follow_root);
            let r = p.fd(&ctx.fds.cache, chain).and_then(|pfd| {
                layout = subvols::layout_in(ctx, &h, pfd.as_fd());
                open::open_dir(pfd.as_fd(), h.name.as_c_str(), flags, h.dev, h.ino)
            });
            p.release(&ctx.fds.cache);
            r
        }
        None => h.open_root(flags),
    };
    let fd = match opened {
        Ok(fd) => {
            let fd = Arc::new(fd);
            if h.parent.is_none() {
                super::keep_root_fd(ctx, h.order, &fd);
            }
            fd
        }
        // Removed since its parent listed it: du skips it quietly.
        Err(DirError::Gone(_)) if h.parent.is_some() => {
            h.release(&ctx.fds.cache);
            return finish(ctx, &h, rec, &mut local);
        }
        Err(e) => {
            if on_btrfs_unread(ctx, &h, follow) {
                own_bytes_off(ctx, &mut local);
            }
            report_dir_error(ctx, &h, e, &mut local);
            h.release(&ctx.fds.cache);
            return finish(ctx, &h, rec, &mut local);
        }
    };
    progress(ctx, &h);
    let fs = match h.fs {
        Some(fs) => fs,
        None => subvols::filesystem(ctx, &h, fd.as_fd(), layout),
    };
    own_bytes_on(&fs, ctx, &mut local);
    let dir = InDir::new(ctx, &h, &fd, fs);
    if template.is_none() {
        // Its subdirectories may be listed through its fd.
        btrfs_listing::keep_subvol_fd(ctx, &dir, &fd);
    }
    // As root on Btrfs, the tree lists it; else (or if the tree cannot)
    // getdents does.
    if !list_tree(ctx, s, &dir, &fd, template, &mut local) {
        list(ctx, s, &dir, &fd, &mut local);
    }
    drop(fd);
    h.release(&ctx.fds.cache);
    finish(ctx, &h, rec, &mut local);
}

/// Lists the directory with getdents64: the first entries are stat-ed
/// here, the rest handed out in batches.
fn list<'s>(
    ctx: &'s Ctx<'s>,
    s: &rayon::Scope<'s>,
    dir: &InDir<'_>,
    fd: &Arc<OwnedFd>,
    local: &mut Local,
) {
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
        let mut raw = RawDir::new(dir.fd, buf.as_mut_slice());
        // Where the files' items are read together, the first entries wait
        // until the directory is listed (or they are many).
        // They are kept as a batch is ([`batch_entries`]), in one buffer.
        let mut held: Vec<u8> = Vec::new();
        let mut seen = 0u32;
        let mut batch: Vec<u8> = Vec::new();
        let mut batched = 0usize;
        // The getdents index of the batch's first name.
        let mut first = 0u32;
        while let Some(ent) = raw.next() {
            let ent = match ent {
                Ok(ent) => ent,
                // Removed while being read (getdents64 on a deleted
                // directory): as quiet as a directory that vanished before.
                Err(Errno::NOENT) => break,
                Err(errno) => {
                    ctx.left_out(local, LeftOut::Unreadable, dir.h.id, None);
                    ctx.read_error(
                        dir.h.id,
                        seen == 0,
                        format!("cannot read directory: {}", crate::error::strerror(errno)),
                    );
                    ctx.run.msgs.report(Diagnostic::CannotReadDir {
                        path: dir.h.path(None),
                        errno,
                    });
                    break;
                }
            };
            let name = ent.file_name();
            let listed = Listed::of(ent.file_type());
            let b = name.to_bytes();
            if b == b"." || b == b".." {
                continue;
            }
            let idx = seen;
            seen = seen.saturating_add(1);
            if idx < INLINE_ENTRIES && dir.search {
                push_entry(&mut held, listed, ent.ino(), name);
            } else if idx < INLINE_ENTRIES {
                entry_as(ctx, s, dir, ListedEntry::listed(name, listed, idx), local);
            } else {
                if batched == 0 {
                    first = idx;
                }
                push_entry(&mut batch, listed, ent.ino(), name);
                batched += 1;
                if batched == BATCH_ENTRIES {
                    spawn_batch(ctx, s, dir, fd, first, std::mem::take(&mut batch));
                    batched = 0;
                }
            }
        }
        if batched > 0 {
            spawn_batch(ctx, s, dir, fd, first, batch);
        }
        if !held.is_empty() {
            prefetch(
                ctx,
                dir,
                batch_entries(&held).map(|(l, ino, _)| (l, ino)),
                local,
            );
            for (idx, (listed, _, name)) in batch_entries(&held).enumerate() {
                let e = ListedEntry::listed(name, listed, idx as u32);
                entry_as(ctx, s, dir, e, local);
            }
        }
    });
}

/// As root on Btrfs: lists the directory from its subvolume's tree and
/// accounts for its entries with the figures the tree holds
/// ([`super::btrfs_listing`]); false (nothing done) when the tree cannot
/// list it. Past the first [`btrfs_listing::INLINE_ENTRIES`], entries go
/// to batches other threads take.
fn list_tree<'s>(
    ctx: &'s Ctx<'s>,
    s: &rayon::Scope<'s>,
    dir: &InDir<'_>,
    fd: &Arc<OwnedFd>,
    template: Option<&rfs::Statx>,
    local: &mut Local,
) -> bool {
    let Some((template, me)) = btrfs_listing::listing(ctx, dir, template, local) else {
        return false;
    };
    let n = me.entries().len();
    let mut start = btrfs_listing::INLINE_ENTRIES.min(n);
    while start < n {
        let end = (start + btrfs_listing::BATCH_ENTRIES).min(n);
        dir.h.pending.fetch_add(1, Ordering::AcqRel);
        let (h, fd, fs, me) = (dir.h.clone(), fd.clone(), dir.fs, Arc::clone(&me));
        let lazy = dir.lazy;
        s.spawn(move |s| {
            let mut local = Local::default();
            let mut dir = InDir::new(ctx, &h, &fd, fs);
            if lazy {
                (dir.lazy, dir.shared) = (true, None);
            }
            tree_entries(ctx, s, &dir, &template, &me, start..end, &mut local);
            account::end_task(ctx, &mut local);
            ctx.flush(local, Some(h.id), None);
            drop(fd);
            h.release(&ctx.fds.cache);
        });
        start = end;
    }
    tree_entries(
        ctx,
        s,
        dir,
        &template,
        &me,
        0..btrfs_listing::INLINE_ENTRIES.min(n),
        local,
    );
    true
}

/// Accounts for the entries `range` of a directory listed from the tree
/// (`me`), each with the `statx` its items make, or a `statx` of its own
/// where they cannot stand in ([`btrfs_listing::known`]).
fn tree_entries<'s>(
    ctx: &'s Ctx<'s>,
    s: &rayon::Scope<'s>,
    dir: &InDir<'_>,
    template: &rfs::Statx,
    me: &btrfs_listing::TreeInode,
    range: std::ops::Range<usize>,
    local: &mut Local,
) {
    let mut ahead = btrfs_listing::Ahead::plan(ctx, dir, me, range.clone());
    let mounts = btrfs_listing::mounts_in(ctx, dir);
    // The directory's own fd, when it was not opened and an entry needs a
    // `statx` by name.
    let mut own: Option<Arc<OwnedFd>> = None;
    for (i, e) in me.entries()[range.clone()].iter().enumerate() {
        let idx = (range.start + i) as u32;
        let (name, listed) = (btrfs_listing::name_of(me, e), btrfs_listing::listed(e));
        if !e.subvol {
            ahead.ensure(ctx, dir, e.child, local);
        }
        let st = btrfs_listing::known(ctx, dir, template, e, name, (&mounts, &mut ahead), local);
        if st.is_some() || !dir.lazy {
            let entry = ListedEntry {
                known: st.as_ref(),
                ..ListedEntry::listed(name, listed, idx)
            };
            entry_as(ctx, s, dir, entry, local);
            continue;
        }
        if own.is_none() {
            let chain = open::dir_flags(ctx.run.euid, None, ctx.run.opts.follow_args);
            match dir.h.fd(&ctx.fds.cache, chain) {
                Ok(fd) => own = Some(fd),
                Err(e) => {
                    // Reported once; its entries that need it are left out.
                    report_dir_error(ctx, dir.h, e, local);
                    break;
                }
            }
        }
        if let Some(fd) = &own {
            let real = InDir::new(ctx, dir.h, fd, dir.fs);
            entry_as(ctx, s, &real, ListedEntry::listed(name, listed, idx), local);
        }
    }
    local.pre.clear();
}

/// Publishes the directory's path as the current one, now and then.
fn progress(ctx: &Ctx<'_>, h: &DirHandle) {
    if let Some(p) = &ctx.run.opts.progress {
        if h.id.as_u32() % super::counters::PROGRESS_PATH_EVERY == 0 {
            if let Ok(mut cur) = p.current.try_lock() {
                *cur = h.path(None);
            }
        }
    }
}

/// Reports a directory that could not be opened, and records it left out.
fn report_dir_error(ctx: &Ctx<'_>, h: &DirHandle, e: DirError, local: &mut Local) {
    ctx.left_out(local, LeftOut::Unreadable, h.id, None);
    let path = h.path(None);
    ctx.read_error(
        h.id,
        true,
        match e {
            DirError::Gone(errno) | DirError::Errno(errno) => {
                format!("cannot read directory: {}", crate::error::strerror(errno))
            }
            DirError::Replaced => "cannot read directory: replaced during the scan".into(),
        },
    );
    ctx.run.msgs.report(match e {
        DirError::Gone(errno) | DirError::Errno(errno) => Diagnostic::CannotReadDir { path, errno },
        DirError::Replaced => Diagnostic::ReplacedDir { path },
    });
}

/// Hands a directory task's records to its thread's shard (`local` by
/// reference: it is hundreds of bytes, not moved per directory).
/// A directory's own bytes on Btrfs (its `nbytes`: 16 KiB for the
/// top-level root directory mkfs makes, copied into every snapshot of
/// subvolume 5) are metadata, no data anywhere: in its Total and
/// Exclusive, as du counts them, never in its Reclaimable (docs/filesystems.md,
/// "Btrfs metadata"). Taken from its own figures, before any child's.
fn own_bytes_on(fs: &super::fdcache::DirFs, ctx: &Ctx<'_>, local: &mut Local) {
    if fs.info.magic == crate::probe::magic::BTRFS {
        own_bytes_off(ctx, local);
    }
}

/// Takes the directory's own bytes out of its Reclaimable: from its link
/// under -L (the roll-up then frees none of them,
/// `crate::figures::links_free`), else from its own figures.
fn own_bytes_off(ctx: &Ctx<'_>, local: &mut Local) {
    match local.links.last_mut() {
        Some(own) if ctx.run.hash_all => own.stats.reclaimable = 0,
        _ => local.acc.reclaimable = 0,
    }
}

/// Whether a directory that could not be opened for reading lies on
/// Btrfs, where its own bytes are no data ([`own_bytes_on`]): its parent's
/// filesystem when on its device, else `fstatfs` on an `O_PATH` open (which
/// needs no read permission), checked to be the directory stat-ed. One the
/// caller cannot reach even so is taken as not on Btrfs.
fn on_btrfs_unread(ctx: &Ctx<'_>, h: &DirHandle, follow: bool) -> bool {
    if let Some(fs) = h.fs {
        return fs.info.magic == crate::probe::magic::BTRFS;
    }
    let flags = open::dir_flags(ctx.run.euid, None, follow) | OFlags::PATH;
    let opened = match &h.parent {
        Some(p) => {
            let follow_root = ctx.run.opts.follow_links || ctx.run.opts.follow_args;
            let chain = open::dir_flags(ctx.run.euid, None, follow_root);
            let r = p.fd(&ctx.fds.cache, chain).and_then(|pfd| {
                open::open_dir(pfd.as_fd(), h.name.as_c_str(), flags, h.dev, h.ino)
            });
            p.release(&ctx.fds.cache);
            r
        }
        None => h.open_root(flags),
    };
    opened
        .ok()
        .and_then(|fd| rfs::fstatfs(&fd).ok())
        .is_some_and(|s| s.f_type as u32 == crate::probe::magic::BTRFS)
}

pub(super) fn finish(ctx: &Ctx<'_>, h: &DirHandle, mut rec: NodeRec, local: &mut Local) {
    account::end_task(ctx, local);
    rec.own = local.acc;
    ctx.flush_from(local, None, Some((&rec, h.name.as_bytes())));
}

/// Stats a batch of names of a wide directory on whichever thread takes it;
/// `first` is the getdents index of its first name.
fn spawn_batch<'s>(
    ctx: &'s Ctx<'s>,
    s: &rayon::Scope<'s>,
    dir: &InDir<'_>,
    fd: &Arc<OwnedFd>,
    first: u32,
    names: Vec<u8>,
) {
    dir.h.pending.fetch_add(1, Ordering::AcqRel);
    let h = dir.h.clone();
    let fd = fd.clone();
    let fs = dir.fs;
    s.spawn(move |s| {
        let mut local = Local::default();
        let dir = InDir::new(ctx, &h, &fd, fs);
        if dir.search {
            prefetch(
                ctx,
                &dir,
                batch_entries(&names).map(|(l, ino, _)| (l, ino)),
                &mut local,
            );
        }
        let mut idx = first;
        for (listed, _, name) in batch_entries(&names) {
            entry_as(
                ctx,
                s,
                &dir,
                ListedEntry::listed(name, listed, idx),
                &mut local,
            );
            idx = idx.saturating_add(1);
        }
        account::end_task(ctx, &mut local);
        ctx.flush_from(&mut local, Some(h.id), None);
        drop(fd);
        h.release(&ctx.fds.cache);
    });
}

/// Stats one entry of a directory and accounts for it: a subdirectory
/// becomes a task, anything else is accounted at once.
pub(super) fn entry_as<'s>(
    ctx: &'s Ctx<'s>,
    s: &rayon::Scope<'s>,
    dir: &InDir<'_>,
    e: ListedEntry<'_>,
    local: &mut Local,
) {
    let h = dir.h;
    // Every entry left out is recorded here, whatever the way
    // ([`super::left`]).
    let symlinks = match symlinks_to(ctx, h, e) {
        Ok(n) => n,
        Err(why) => return ctx.left_out(local, why, h.id, None),
    };
    let path = path_kept(ctx, h, e.name);
    if let Some(why) = excluded(ctx, path.as_deref()) {
        return ctx.left_out(local, why, h.id, None);
    }
    let open_first = e.listed == Listed::Regular && dir.open_first;
    let mut pre = Pre::No;
    let stat = stat_entry(ctx, dir, e, open_first && !local.stat_first, &mut pre);
    // Borrowed: a `Statx` is 256 bytes, not to be copied per entry.
    let st = match &stat {
        Ok(st) => st,
        &Err(errno) => {
            if let Some(why) = not_stated(ctx, dir, e.name, errno) {
                ctx.left_out(local, why, h.id, None);
            }
            return;
        }
    };
    local.counters.entries += 1;
    let kind = Kind::from_mode(u32::from(st.stx_mode));
    if open_first {
        // An empty file is never mapped, so opening it was wasted: the next
        // regular file of this task is stat-ed first, until one with blocks
        // turns up (a directory of a million empty files costs one open).
        local.stat_first = kind == Kind::File && st.stx_blocks == 0;
    }
    let x = Stated {
        e,
        st,
        kind,
        dev: dev_of(st),
    };
    if let Some(why) = left_beside(ctx, dir, x) {
        return ctx.left_out(local, why, h.id, Some(st.stx_mnt_id));
    }
    if h.ns == 0 {
        ctx.records.reach.met(x.dev, st.stx_ino);
    }
    if kind == Kind::Dir {
        return subdir(ctx, s, dir, x, symlinks, local);
    }
    // Opened first and fit for the lean path: accounted there, unless it
    // gives the file back for the general path.
    let pre = match pre {
        Pre::Open(fd) if lean_path(ctx, dir, x) => match plain::file(ctx, dir, x, fd, local) {
            Ok(own) => {
                local.counters.plain_files += 1;
                return credit(ctx, h, None, e.idx, e.name, own, local);
            }
            Err(fd) => Pre::Open(fd),
        },
        pre => pre,
    };
    nondir(ctx, dir, x, pre, local);
}

/// Makes subdirectory `x` a task of its own, unless it is one of its own
/// ancestors. `symlinks`: those followed from the root to it.
#[inline(always)]
fn subdir<'s>(
    ctx: &'s Ctx<'s>,
    s: &rayon::Scope<'s>,
    dir: &InDir<'_>,
    x: Stated<'_>,
    symlinks: u32,
    local: &mut Local,
) {
    let (h, st) = (dir.h, x.st);
    local.counters.skipped[Skip::NotRegular.index()] += 1;
    let mount_root = st.stx_attributes_mask.contains(StatxAttributes::MOUNT_ROOT)
        && st.stx_attributes.contains(StatxAttributes::MOUNT_ROOT);
    if in_cycle(ctx, h, x, mount_root, &mut local.counters.ancestors_climbed) {
        return;
    }
    let stats = ctx.inode_stats(st);
    h.active.enter(x.dev, st.stx_ino);
    let child = Arc::new_cyclic(|me| DirHandle {
        me: me.clone(),
        parent: Some(h.clone()),
        name: DirName::new(x.e.name),
        id: ctx.new_id(),
        depth: h.depth + 1,
        dev: x.dev,
        ino: st.stx_ino,
        root_mnt: h.root_mnt,
        ns: h.ns,
        guard: open::guarded(ctx.run.euid, st),
        mount_root,
        symlinks,
        order: x.e.idx,
        watch: h.watch.clone(),
        fs: (x.dev == h.dev).then_some(dir.fs),
        resolved: None,
        path_len: h.child_path_len(x.e.name.to_bytes()),
        fd: Mutex::new(None),
        pending: AtomicUsize::new(1),
        active: h.active.clone(),
    });
    ctx.ident(local, child.id, st);
    h.pending.fetch_add(1, Ordering::AcqRel);
    dir.cache_fd(ctx);
    let uid = st.stx_uid;
    // Read from the tree: its own `statx` is the template of its
    // entries' (the same device and mount).
    let template = x.e.known.map(|st| Box::new(*st));
    s.spawn(move |s| walk_dir(ctx, s, child, stats, uid, template));
}

/// Whether file `x`, opened first, goes down the lean path ([`plain`]): a
/// regular file, singly linked, on its directory's filesystem, in a
/// directory whose files may ([`InDir::plain`]). The lean path may still
/// give it back, when its FIEMAP needs what the general path decides.
#[inline(always)]
fn lean_path(ctx: &Ctx<'_>, dir: &InDir<'_>, x: Stated<'_>) -> bool {
    dir.plain && x.kind == Kind::File && x.dev == dir.h.dev && !ctx.counts_once(x.st.stx_nlink)
}

/// Accounts for non-directory entry `x` down the general path
/// ([`account::nondir`]). With `-a` it has a node of its own, and its
/// links and extents are credited from there.
#[inline(always)]
fn nondir(ctx: &Ctx<'_>, dir: &InDir<'_>, x: Stated<'_>, pre: Pre, local: &mut Local) {
    let (h, ListedEntry { name, idx, .. }) = (dir.h, x.e);
    let own_node = ctx.run.opts.all
        || (ctx.run.opts.bookend_files && btrfs_listing::holds_bookend(local, x.st.stx_ino));
    let leaf = own_node.then(|| ctx.new_id());
    if let Some(id) = leaf {
        ctx.ident(local, id, x.st);
    }
    let file = FoundFile {
        dirfd: dir.fd,
        name,
        st: x.st,
        dev: x.dev,
        kind: x.kind,
        fs: (x.dev == h.dev).then_some(&dir.fs),
        node: leaf.unwrap_or(h.id),
        entry: leaf.is_none().then_some(idx),
        ns: h.ns,
        guard: h.guard,
        follow: ctx.run.opts.follow_links,
        path: &|| h.path(Some(name.to_bytes())),
        dir: Some((h, idx)),
        lazy: dir.lazy,
    };
    match account::nondir(ctx, &file, pre, local) {
        Accounted::Now(own) => {
            let leaf = leaf.map(|id| (id, x.kind));
            credit(ctx, h, leaf, idx, name, own, local);
        }
        // The thread that maps it credits it.
        Accounted::Handed => {}
    }
}

/// Adds a non-directory entry's figures to its directory, and gives it its
/// own node under `-a` (`leaf`).
#[inline(always)]
fn credit(
    ctx: &Ctx<'_>,
    h: &DirHandle,
    leaf: Option<(NodeId, Kind)>,
    idx: u32,
    name: &CStr,
    own: Stats,
    local: &mut Local,
) {
    // A leaf is not rolled up: its parent holds its own part too.
    local.acc += own;
    if let Some(leaf) = leaf {
        ctx.leaf(local, h, leaf, idx, name, own);
    }
}
