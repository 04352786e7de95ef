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
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rustix::fs::{self as rfs, AtFlags, RawDir, StatxAttributes};
use rustix::io::Errno;

use super::account::{self, FileAt};
use super::ctx::{Ctx, Local, MASK, PROGRESS_PATH_EVERY, dev_of};
use super::fdcache::{DirFs, DirHandle, join};
use super::open::{self, DirError};
use crate::error::Diagnostic;
use crate::figures::{Kind, Stats};
use crate::probe::Skip;
use crate::records::{Link, NO_NODE, NodeRec, TOP};

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

/// A directory being read, as its entries see it.
struct InDir<'a> {
    h: &'a Arc<DirHandle>,
    fd: BorrowedFd<'a>,
    fs: DirFs,
}

/// Reads one directory: stats its entries, spawns its subdirectories.
/// `own` is the directory inode's figures, `uid` its owner.
pub(super) fn walk_dir<'s>(
    ctx: &'s Ctx<'s>,
    s: &rayon::Scope<'s>,
    h: Arc<DirHandle>,
    own: Stats,
    uid: u32,
) {
    let mut local = Local::default();
    let rec = NodeRec {
        id: h.id,
        parent: match &h.parent {
            Some(p) => p.id,
            None if h.ns == 0 => TOP,
            None => NO_NODE,
        },
        depth: h.depth,
        kind: Kind::Dir,
        leaf: false,
        order: h.order,
        name: h.name.as_bytes().into(),
        own: Stats::default(),
    };
    if ctx.hash_all {
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
    let follow_root = ctx.opts.follow_links || ctx.opts.follow_args;
    let follow = ctx.opts.follow_links || (h.parent.is_none() && follow_root);
    let flags = open::dir_flags(ctx.euid, Some(uid), follow);
    let opened = match &h.parent {
        Some(p) => {
            let chain = open::dir_flags(ctx.euid, None, follow_root);
            let r = p
                .fd(&ctx.cache, chain)
                .and_then(|pfd| open::open_dir(pfd.as_fd(), &h.name, flags, h.dev, h.ino));
            p.release(&ctx.cache);
            r
        }
        None => open::open_dir(rustix::fs::CWD, &h.name, flags, h.dev, h.ino),
    };
    let fd = match opened {
        Ok(fd) => Arc::new(fd),
        // Removed since its parent listed it: du skips it quietly.
        Err(DirError::Gone(_)) if h.parent.is_some() => {
            h.release(&ctx.cache);
            return finish(ctx, rec, local);
        }
        Err(e) => {
            let path = h.path(None);
            ctx.msgs.report(match e {
                DirError::Gone(errno) | DirError::Errno(errno) => {
                    Diagnostic::CannotReadDir { path, errno }
                }
                DirError::Replaced => Diagnostic::ReplacedDir { path },
            });
            h.release(&ctx.cache);
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
        None => ctx.filesystem(h.dev, fd.as_fd(), h.ns, &|| h.path(None)),
    };
    let dir = InDir {
        h: &h,
        fd: fd.as_fd(),
        fs,
    };
    list(ctx, s, &dir, &fd, &mut local);
    drop(fd);
    h.release(&ctx.cache);
    finish(ctx, rec, local);
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
                    ctx.msgs.report(Diagnostic::CannotReadDir {
                        path: dir.h.path(None),
                        errno,
                    });
                    break;
                }
            };
            let name = ent.file_name();
            let link = ent.file_type() == rustix::fs::FileType::Symlink;
            let b = name.to_bytes();
            if b == b"." || b == b".." {
                continue;
            }
            let idx = seen;
            seen = seen.saturating_add(1);
            if idx < INLINE_ENTRIES {
                entry(ctx, s, dir, name, link, idx, local);
            } else {
                if batched == 0 {
                    first = idx;
                }
                // One byte of type, then the name: -L counts symlinks.
                batch.push(u8::from(link));
                batch.extend_from_slice(name.to_bytes_with_nul());
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
    });
}

/// Hands a directory task's records to its thread's shard.
fn finish(ctx: &Ctx<'_>, mut rec: NodeRec, mut local: Local) {
    rec.own = local.acc;
    local.nodes.push(rec);
    ctx.flush(local, None);
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
        let dir = InDir {
            h: &h,
            fd: fd.as_fd(),
            fs,
        };
        let mut rest = names.as_slice();
        let mut idx = first;
        while let Some((&link, tail)) = rest.split_first() {
            let Ok(name) = CStr::from_bytes_until_nul(tail) else {
                break;
            };
            rest = &tail[name.to_bytes_with_nul().len()..];
            entry(ctx, s, &dir, name, link == 1, idx, &mut local);
            idx = idx.saturating_add(1);
        }
        ctx.flush(local, Some(h.id));
        drop(fd);
        h.release(&ctx.cache);
    });
}

/// The most symlinks one path resolution may follow (the kernel's
/// `MAXSYMLINKS`). du resolves every entry by its path from the root, so
/// under `-L` an entry reached through more symlinks than that is an error
/// for du ("Too many levels of symbolic links"); sdu, which opens one level
/// at a time, counts them to say the same.
const MAX_SYMLINKS: u32 = 40;

/// Stats one entry of a directory and accounts for it: a subdirectory
/// becomes a task, anything else is accounted at once. `link`: the
/// directory listed it as a symlink; `idx`: its position in getdents order.
fn entry<'s>(
    ctx: &'s Ctx<'s>,
    s: &rayon::Scope<'s>,
    dir: &InDir<'_>,
    name: &CStr,
    link: bool,
    idx: u32,
    local: &mut Local,
) {
    let (opts, h) = (ctx.opts, dir.h);
    let symlinks = h.symlinks + u32::from(link && opts.follow_links);
    if symlinks > MAX_SYMLINKS {
        ctx.msgs.report(Diagnostic::CannotAccess {
            path: h.path(Some(name.to_bytes())),
            errno: Errno::LOOP,
        });
        return;
    }
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
    let st = match rfs::statx(dir.fd, name, follow, MASK) {
        Ok(st) => st,
        Err(Errno::NOENT) => {
            // Under -L, a dangling symlink is an error, as in du -L;
            // otherwise the entry was deleted since the directory was read,
            // and du skips it quietly.
            if opts.follow_links && rfs::statx(dir.fd, name, nofollow, MASK).is_ok() {
                ctx.msgs.report(Diagnostic::CannotAccess {
                    path: h.path(Some(name.to_bytes())),
                    errno: Errno::NOENT,
                });
            }
            return;
        }
        Err(errno) => {
            ctx.msgs.report(Diagnostic::CannotAccess {
                path: h.path(Some(name.to_bytes())),
                errno,
            });
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
        let mount_root = st.stx_attributes_mask.contains(StatxAttributes::MOUNT_ROOT)
            && st.stx_attributes.contains(StatxAttributes::MOUNT_ROOT);
        if let Some(mount_in_cycle) = h.cycle_with(dev, st.stx_ino) {
            // Never entered: the directory is one of its own ancestors.
            let path = h.path(Some(name.to_bytes()));
            if opts.follow_links {
                // A symlink to an ancestor: du -L passes over it silently.
                if !opts.du_rules {
                    ctx.msgs.report(Diagnostic::DirectoryCycle { path });
                }
            } else if !(mount_root || mount_in_cycle) {
                // No bind mount explains it: the filesystem is corrupt.
                ctx.msgs.report(Diagnostic::CircularDirectory { path });
            }
            return;
        }
        let stats = ctx.inode_stats(&st);
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
            guard: open::guarded(ctx.euid, &st),
            mount_root,
            symlinks,
            order: idx,
            watch: h.watch.clone(),
            fs: (dev == h.dev).then_some(dir.fs),
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
    let file = FileAt {
        dirfd: dir.fd,
        name,
        st: &st,
        fs: (dev == h.dev).then_some(dir.fs),
        node: leaf.unwrap_or(h.id),
        entry: leaf.is_none().then_some(idx),
        ns: h.ns,
        guard: h.guard,
        follow: opts.follow_links,
        path: &|| h.path(Some(name.to_bytes())),
    };
    let own = account::nondir(ctx, &file, local);
    // A leaf is not rolled up: its parent holds its own part too.
    local.acc += own;
    if let Some(id) = leaf {
        local.nodes.push(NodeRec {
            id,
            parent: h.id,
            depth: h.depth + 1,
            kind,
            leaf: true,
            order: idx,
            name: name.to_bytes().into(),
            own,
        });
    }
}
