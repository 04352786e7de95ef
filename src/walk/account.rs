//! What one non-directory entry adds to its directory: its figures, its
//! extents when it may share, and a link record when it must be counted
//! once per directory.

use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use rustix::fs::{CWD, Statx};
use rustix::io::Errno;
use sdu_sys::fiemap::FIEMAP_EXTENT_DATA_INLINE;

use super::ctx::{Ctx, Local, dev_of};
use super::fdcache::{DirFs, DirHandle};
use super::later::{Later, Waiting, Who};
use super::mapped::{Kept, Mapped, ToRead, credit, read_open, replayed};
use super::open::{self, DirError, OpenFile, OpenedStat};
use super::reused;
use crate::error::{Diagnostic, strerror};
use crate::extents::ag::{AgTable, Handed};
use crate::extents::unchanged::{self, Claim, CopyKey, CopyLookup};
use crate::extents::{ExtentSource, Pending, SearchFile, Searched};
use crate::figures::{Kind, Stats};
use crate::probe::{self, Skip, magic};
use crate::records::{CopyRec, NodeId, dev32};

/// A non-directory entry as the walk found it.
pub(super) struct FoundFile<'a> {
    /// Its directory (or the working directory, for a root given by path).
    pub(crate) dirfd: BorrowedFd<'a>,
    pub(crate) name: &'a CStr,
    /// What statx said of it.
    pub(crate) st: &'a Statx,
    /// Its device and kind, as `st` gives them (worked out once per entry).
    pub(crate) dev: u64,
    pub(crate) kind: Kind,
    /// Its filesystem, when known from its directory (same `st_dev`).
    pub(crate) fs: Option<&'a DirFs>,
    /// The node it is credited to: its directory, or its own with `-a`.
    pub(crate) node: NodeId,
    /// Its position in its directory's getdents order when `node` is that
    /// directory; `None` when `node` is its own.
    pub(crate) entry: Option<u32>,
    /// Its root's namespace.
    pub(crate) ns: u32,
    /// Open it only through the `O_PATH` check ([`open::guarded`]).
    pub(crate) guard: bool,
    /// It was stat-ed through a symlink (`-L`, or a root under `-H`): open
    /// it the same way, and check that the inode opened is the one stat-ed.
    pub(crate) follow: bool,
    /// Its path as printed, for messages.
    pub(crate) path: &'a dyn Fn() -> Vec<u8>,
    /// The directory it was listed in, and its position in getdents
    /// order: then its FIEMAP may be handed to the thread that holds its
    /// allocation group's turn ([`Accounted::Handed`]).
    pub(crate) dir: Option<(&'a Arc<DirHandle>, u32)>,
    /// `dirfd` is not its directory's but its subvolume's (a directory the
    /// Btrfs tree listed without opening it): it is opened from its
    /// directory, reopened through [`FoundFile::dir`].
    pub(crate) lazy: bool,
}

/// Whether the walk opened a file before stat-ing it
/// ([`open::open_listed_file`]).
pub(super) enum Pre {
    /// Not opened: it is opened by name if it may share.
    No,
    /// Open, and [`FoundFile::st`] is the `statx` of this very fd.
    Open(OwnedFd),
    /// The open failed (permission denied...), and [`FoundFile::st`] is a
    /// `statx` by name: if the file may share, that failure is reported as
    /// any failed open is, and the open is not tried again.
    Failed(Errno),
}

/// What accounting a non-directory entry gave.
pub(super) enum Accounted {
    /// What goes into its node's own figures.
    Now(Stats),
    /// Handed to the thread that holds its allocation group's turn (XFS,
    /// [`crate::extents::ag`]), which maps it and credits it to its
    /// directory: the task goes on with its other entries instead of
    /// sleeping on the turn.
    Handed,
}

/// Files that may wait for the holder of one allocation group's turn (each
/// holds an fd), where the `RLIMIT_NOFILE` leaves room. A thread holds at
/// most one turn, so at most this many per thread.
pub(super) const MAX_LATER: usize = 32;

/// Accounts for a non-directory inode: maps its extents if it may share,
/// and records a link if it must be counted once per directory.
pub(super) fn nondir(ctx: &Ctx<'_>, f: &FoundFile<'_>, pre: Pre, local: &mut Local) -> Accounted {
    let (st, dev, kind) = (f.st, f.dev, f.kind);
    let once = ctx.counts_once(st.stx_nlink);
    let who = Who {
        node: f.node,
        entry: f.entry,
        ns: f.ns,
        once,
    };
    let claim = || !once || ctx.map.claimed.insert((f.ns, dev, st.stx_ino));
    // The filesystem is known from the directory unless the file lies on
    // another device (a bind-mounted file; a symlink followed with -L): then
    // it is probed on the opened file.
    let verdict = match f.fs {
        Some(fs) => probe::may_share(&fs.info, kind, st.stx_blocks, claim),
        None if kind == Kind::File && st.stx_blocks > 0 => Ok(()),
        None if kind == Kind::File => Err(Skip::FsCannotShare),
        None => Err(Skip::NotRegular),
    };
    if kind == Kind::Symlink && !ctx.run.opts.skip_extents && st.stx_blocks > 0 {
        if let Some(fs) = f.fs.filter(|fs| fs.info.magic == magic::BTRFS) {
            // Its target is inline data, which a snapshot shares: decided
            // after the walk, as for inline files.
            let (bytes, at) = (st.stx_blocks.saturating_mul(512), (f.node, f.ns));
            ctx.inline_bound(local, st, at, once, fs.space);
            if ctx.run.keep_inline {
                ctx.record_inline(local, st, at, (bytes, None), once, (fs.info.index, None));
            }
        }
    }
    let mapped = match verdict {
        Err(skip) => Some(Mapped::Skipped(skip)),
        Ok(()) if ctx.run.opts.skip_extents => None,
        Ok(()) => match map_file(ctx, f, pre, once, local) {
            Mapped::Handed => return Accounted::Handed,
            m => Some(m),
        },
    };
    Accounted::Now(credit(ctx, (st, kind, dev), who, mapped, local))
}

/// Maps a file handed over by another thread ([`Accounted::Handed`]) and
/// credits it to its directory; the caller holds its group's turn on
/// `table`.
fn map_handed(ctx: &Ctx<'_>, table: &AgTable<Later>, l: Later, local: &mut Local) {
    let Later {
        fd,
        now,
        fs,
        who,
        st,
        dir,
        leaf,
        idx,
        name,
    } = l;
    let path = || dir.path(Some(name.to_bytes()));
    let file = ToRead {
        fd,
        now,
        fs: &fs,
        pending: None,
        keep: None,
        st: &st,
        who,
        path: &path,
    };
    let (mapped, _) = read_open(ctx, file, Some(table), local);
    let kind = Kind::from_mode(u32::from(st.stx_mode));
    let own = credit(ctx, (&st, kind, dev_of(&st)), who, Some(mapped), local);
    // As the walk credits an entry of the directory it reads: its own
    // figures go to the directory, a leaf (-a) has its node besides.
    match local.partial.last_mut() {
        Some((d, s)) if *d == dir.id => *s += own,
        _ => local.partial.push((dir.id, own)),
    }
    if let Some(leaf) = leaf {
        ctx.leaf(local, &dir, leaf, idx, &name, own);
    }
}

/// Reads a file's extents: by the tree search (Btrfs, root) without
/// opening it, else opened relative to its directory (unless the walk
/// already did).
fn map_file(ctx: &Ctx<'_>, f: &FoundFile<'_>, pre: Pre, once: bool, local: &mut Local) -> Mapped {
    let pending = match map_by_search(ctx, f, local) {
        // An fd the walk opened is closed unused.
        Ok(m) => return m,
        Err(pending) => pending,
    };
    // `--since`: unchanged since the saved scan, its saved map.
    let file = (
        f.st,
        f.dev,
        f.fs.filter(|_| !f.follow && f.kind == Kind::File),
    );
    if pending.is_none()
        && matches!(pre, Pre::No)
        && let Some(m) = reused::reuse(ctx, file, (f.node, f.ns), once, local)
    {
        return m;
    }
    // Btrfs: a copy of this inode, unchanged, mapped before in a related
    // snapshot gives its extents without an open or a FIEMAP.
    let ctime = (f.st.stx_ctime.tv_sec, f.st.stx_ctime.tv_nsec);
    let copy = match (f.fs, pending.is_none() && !f.follow) {
        (
            Some(&DirFs {
                copies: Some(sv),
                space,
                ..
            }),
            true,
        ) if unchanged::settled(&sv, ctime) => {
            let ids = sv.ids;
            let copies = ctx.map.extents.copies();
            // A file of a snapshot has copies elsewhere; one of a subvolume
            // that is none may have one remembered, and claims its key once
            // a snapshot is met. Until some copy is (a tree without
            // snapshots), no key is made.
            let snapshot = ids.1 != [0; 16];
            let claim = if snapshot || !copies.is_empty() {
                match copies.find_or_claim(copy_key(space, f.st), ids) {
                    CopyLookup::Found(m) => return reuse(ctx, f, space, &m, once, local),
                    CopyLookup::Claimed(c) => Some(c),
                    // Another thread maps a copy now: the file waits for
                    // the end of its task, when that copy is mapped.
                    CopyLookup::Busy if put_off(ctx, f, once, local) => return Mapped::Handed,
                    CopyLookup::Busy | CopyLookup::Missed => None,
                }
            } else {
                None
            };
            Some((space, ids, claim))
        }
        _ => None,
    };
    let flags = open::file_flags(f.follow);
    let opened = match pre {
        Pre::Open(fd) => Ok(Some((fd, OpenedStat::of_statx(f.st, f.dev)))),
        Pre::Failed(e) => Err(e),
        Pre::No if f.lazy => match f.dir.map(|(h, _)| {
            h.fd(
                &ctx.fds.cache,
                open::dir_flags(ctx.run.euid, None, ctx.run.opts.follow_args),
            )
        }) {
            Some(Ok(dirfd)) => open::open_regular(dirfd.as_fd(), f.name, flags, f.guard),
            Some(Err(DirError::Gone(e) | DirError::Errno(e))) => Err(e),
            Some(Err(DirError::Replaced)) | None => Err(Errno::STALE),
        },
        Pre::No => open::open_regular(f.dirfd, f.name, flags, f.guard),
    };
    let (fd, now): OpenFile = match opened {
        // Through a symlink, the name may now lead elsewhere: only the
        // inode that was stat-ed is mapped.
        Ok(Some(opened)) if f.follow && (opened.1.ino != f.st.stx_ino || opened.1.dev != f.dev) => {
            return Mapped::Gone;
        }
        Ok(Some(opened)) => opened,
        // Gone, or no longer a regular file: counted as the walk saw it.
        Ok(None) => return Mapped::Gone,
        Err(e) => {
            ctx.run.msgs.report(Diagnostic::CannotReadExtents {
                path: (f.path)(),
                reason: strerror(e),
            });
            return Mapped::Unverified;
        }
    };
    let probed;
    let fs = match f.fs {
        Some(fs) => fs,
        None => {
            probed = ctx.filesystem(now.dev, fd.as_fd(), f.ns, f.path);
            let key = (f.ns, f.dev, f.st.stx_ino);
            let claim = || !once || ctx.map.claimed.insert(key);
            if let Err(skip) = probe::may_share(&probed.info, Kind::File, f.st.stx_blocks, claim) {
                return Mapped::Skipped(skip);
            }
            &probed
        }
    };
    let who = Who {
        node: f.node,
        entry: f.entry,
        ns: f.ns,
        once,
    };
    // The copy is remembered only if the inode opened is the one stat-ed.
    let st = f.st;
    let copy = copy.filter(|_| {
        (now.ino, now.size, now.blocks, now.ctime)
            == (st.stx_ino, st.stx_size, st.stx_blocks, ctime)
    });
    // Inline data is kept for the copies in a snapshot, or where a
    // snapshot was met and the key claimed.
    let keep = copy.as_ref().map(|c| c.1.1 != [0; 16] || c.2.is_some());
    // XFS: the table of its allocation groups, moved out of the task's
    // cache while the file is mapped (no reference count per file).
    if local.ag.holds_other_than(fs.info.index) {
        end_turn(ctx, local);
    }
    let table = local.ag.take_for(&ctx.map.ags, &fs.info, fd.as_fd());
    let file = ToRead {
        fd,
        now,
        fs,
        pending,
        keep,
        st,
        who,
        path: f.path,
    };
    let (mapped, kept) = map_in_turn(ctx, f, file, table.as_deref(), local);
    local.ag.put(table);
    if let Some((space, subvol, claim)) = copy {
        let file = match mapped {
            Mapped::Extents {
                id: Some((id, _)), ..
            } if !once => Some(id),
            _ => None,
        };
        keep_copy(ctx, (space, st), subvol, kept, file, claim);
    }
    mapped
}

/// Maps an open file (`file`, entry `f`), in the turn of the allocation
/// group its shared data is predicted in (XFS, [`crate::extents::ag`]). If
/// another thread holds that turn, the file is handed to it when the task
/// may ([`FoundFile::dir`]) and not too many are handed already; otherwise
/// the task waits for the turn. A task keeps the turn it got until it ends
/// ([`end_turn`]) or maps in another group, and maps the files handed to
/// it after each of its own.
fn map_in_turn(
    ctx: &Ctx<'_>,
    f: &FoundFile<'_>,
    mut file: ToRead<'_>,
    table: Option<&AgTable<Later>>,
    local: &mut Local,
) -> (Mapped, Option<Kept>) {
    let (Some(t), Some(ag)) = (table, local.ag.predicted()) else {
        let m = read_open(ctx, file, table, local);
        // A task that holds a turn and maps a file predicted nowhere still
        // maps what was handed to it, so the others need not wait.
        if let (Some(t), Some(held)) = (table, local.ag.holding) {
            map_all(ctx, t, t.take_handed(held), local);
        }
        return m;
    };
    if local.ag.holding == Some(ag) {
        let m = read_open(ctx, file, table, local);
        map_all(ctx, t, t.take_handed(ag), local);
        return m;
    }
    if let Some(old) = local.ag.holding.take() {
        release(ctx, t, old, local);
    }
    match f.dir {
        _ if t.try_turn(ag) => {}
        // Busy: hand the file to the holder of the turn.
        Some((dir, idx)) if ctx.fds.max_later > 0 => {
            let leaf = f.entry.is_none().then_some((f.node, f.kind));
            let l = Box::new(Later {
                fd: file.fd,
                now: file.now,
                fs: *file.fs,
                who: file.who,
                st: *f.st,
                dir: dir.clone(),
                leaf,
                idx,
                name: f.name.to_owned(),
            });
            match t.hand(ag, l, ctx.fds.max_later) {
                Handed::Given => {
                    local.counters.fiemap_put_off += 1;
                    return (Mapped::Handed, None);
                }
                // Nobody holds it any more: the file is back, in the turn.
                Handed::Holder(l) => (file.fd, file.now) = (l.fd, l.now),
            }
        }
        // Busy, and the file cannot be handed: wait.
        _ => t.turn(ag),
    }
    local.ag.holding = Some(ag);
    let m = read_open(ctx, file, table, local);
    map_all(ctx, t, t.take_handed(ag), local);
    m
}

/// Maps the files handed to the caller, which holds their group's turn.
fn map_all(ctx: &Ctx<'_>, t: &AgTable<Later>, handed: Vec<Later>, local: &mut Local) {
    for l in handed {
        map_handed(ctx, t, l, local);
    }
}

/// Lets group `ag`'s turn on `t` go, once the files handed to its holder
/// are mapped.
fn release(ctx: &Ctx<'_>, t: &AgTable<Later>, ag: u32, local: &mut Local) {
    loop {
        let handed = t.release(ag);
        if handed.is_empty() {
            return;
        }
        map_all(ctx, t, handed, local);
    }
}

/// Ends the turn the task holds, if any: every task calls it before it
/// hands its records over (a turn held past its task would leave the
/// files handed to it unmapped, and its group closed to the others).
pub(super) fn end_turn(ctx: &Ctx<'_>, local: &mut Local) {
    let Some(ag) = local.ag.holding.take() else {
        return;
    };
    let table = local.ag.take_cached();
    if let Some(t) = table.as_deref() {
        release(ctx, t, ag, local);
    }
    local.ag.put(table);
}

/// Files a task holds put off ([`put_off`]); past it, the older half is
/// accounted for at once. Their copies are mapped by then: the thread that
/// claimed one maps it in microseconds, and the task has since stat-ed
/// the newer half. About 400 bytes each.
const WAITING_MAX: usize = 64;

/// Puts off a file whose copy another thread is mapping, to the end of its
/// task ([`revisit`]); false when it cannot be: it is not listed in a
/// directory the task can reopen.
fn put_off(ctx: &Ctx<'_>, f: &FoundFile<'_>, once: bool, local: &mut Local) -> bool {
    let (Some((dir, idx)), Some(fs), false) = (f.dir, f.fs, f.lazy) else {
        return false;
    };
    local.waiting.push(Waiting {
        fs: *fs,
        who: Who {
            node: f.node,
            entry: f.entry,
            ns: f.ns,
            once,
        },
        st: *f.st,
        dev: f.dev,
        kind: f.kind,
        dir: dir.clone(),
        idx,
        name: f.name.to_owned(),
        guard: f.guard,
    });
    local.counters.copies_waited += 1;
    if local.waiting.len() >= WAITING_MAX {
        revisit(ctx, local, WAITING_MAX / 2);
    }
    true
}

/// Accounts for the first `n` files the task put off ([`put_off`]): from
/// the copy another thread mapped meanwhile, or on their own if it kept
/// none. They are all of the task's own directory, and go into its figures.
fn revisit(ctx: &Ctx<'_>, local: &mut Local, n: usize) {
    let mut waiting = std::mem::take(&mut local.waiting);
    for w in waiting.drain(..n.min(waiting.len())) {
        let path = || w.dir.path(Some(w.name.to_bytes()));
        let at = |dirfd| FoundFile {
            dirfd,
            name: &w.name,
            st: &w.st,
            dev: w.dev,
            kind: w.kind,
            fs: Some(&w.fs),
            node: w.who.node,
            entry: w.who.entry,
            ns: w.who.ns,
            guard: w.guard,
            follow: false,
            path: &path,
            // Not put off again.
            dir: None,
            lazy: false,
        };
        let found = w.fs.copies.and_then(|sv| {
            let key = copy_key(w.fs.space, &w.st);
            ctx.map.extents.copies().find(&key, sv.ids)
        });
        let flags = open::dir_flags(ctx.run.euid, None, ctx.run.opts.follow_args);
        let mapped = match found {
            // Found: nothing is opened (`reuse` reads no fd), and the
            // directory is not reopened for it.
            Some(m) => reuse(ctx, &at(CWD), w.fs.space, &m, w.who.once, local),
            None => match w.dir.fd(&ctx.fds.cache, flags) {
                Ok(dirfd) => map_file(ctx, &at(dirfd.as_fd()), Pre::No, w.who.once, local),
                Err(DirError::Gone(_) | DirError::Replaced) => Mapped::Gone,
                Err(DirError::Errno(e)) => {
                    ctx.run.msgs.report(Diagnostic::CannotReadExtents {
                        path: path(),
                        reason: strerror(e),
                    });
                    Mapped::Unverified
                }
            },
        };
        let own = credit(ctx, (&w.st, w.kind, w.dev), w.who, Some(mapped), local);
        // As the walk credits an entry of the directory it reads.
        local.acc += own;
        if w.who.entry.is_none() {
            let leaf = (w.who.node, w.kind);
            ctx.leaf(local, &w.dir, leaf, w.idx, &w.name, own);
        }
    }
    local.waiting = waiting;
}

/// Ends what a task shares with other threads, before it hands its records
/// over: the files it put off ([`revisit`]), then the allocation group's
/// turn it holds ([`end_turn`]).
pub(super) fn end_task(ctx: &Ctx<'_>, local: &mut Local) {
    revisit(ctx, local, usize::MAX);
    end_turn(ctx, local);
}

/// Remembers what FIEMAP gave (`kept`) the inode `st` of subvolume
/// `subvol`, in extent space `space`, for its copies in related snapshots,
/// if it may have any ([`unchanged::worth_keeping`]); `file`: its file id, if
/// it was credited to one node (not through links); `claim`: the key, if
/// this thread claimed it ([`unchanged::MappedCopies::find_or_claim`]).
pub(super) fn keep_copy(
    ctx: &Ctx<'_>,
    (space, st): (u32, &Statx),
    subvol: unchanged::SubvolIds,
    kept: Option<Kept>,
    file: Option<u32>,
    claim: Option<Claim<'_>>,
) {
    let inline_ok = subvol.1 != [0; 16] || claim.is_some();
    if let Some(extents) = kept.filter(|k| unchanged::worth_keeping(k, inline_ok)) {
        let inline = extents
            .iter()
            .any(|e| e.flags & FIEMAP_EXTENT_DATA_INLINE != 0);
        let file = file.filter(|_| !inline);
        let m = unchanged::CopyMap {
            subvol,
            extents,
            file,
            inline_key: Default::default(),
        };
        match claim {
            Some(c) => c.keep(m),
            None => ctx.map.extents.copies().remember(copy_key(space, st), m),
        }
    }
}

/// What identifies the inode `st` across snapshots, in extent space
/// `space` ([`unchanged`]).
fn copy_key(space: u32, st: &Statx) -> CopyKey {
    CopyKey {
        space,
        ino: st.stx_ino,
        size: st.stx_size,
        blocks: st.stx_blocks,
        btime: (st.stx_btime.tv_sec, st.stx_btime.tv_nsec),
        ctime: (st.stx_ctime.tv_sec, st.stx_ctime.tv_nsec),
    }
}

/// Credits a file with the extents of a copy of it mapped before
/// ([`unchanged`]): what FIEMAP on it would have given.
fn reuse(
    ctx: &Ctx<'_>,
    f: &FoundFile<'_>,
    space: u32,
    m: &unchanged::CopyMap,
    once: bool,
    local: &mut Local,
) -> Mapped {
    let st = f.st;
    // Credited to its node, a copy of a file that is too: a copy record
    // ([`CopyRec`]) stands for its file record and mappings.
    let copy_of = m
        .file
        .filter(|_| !once)
        .zip(dev32(f.dev))
        .map(|(of, dev)| CopyRec {
            of,
            node: f.node,
            dev,
        });
    let got = ctx.map.extents.replay(&m.extents, space, copy_of.is_none());
    if let Some(c) = copy_of {
        local.copies.push(c);
    }
    local.counters.copies_reused += 1;
    let at = (f.node, f.ns, once);
    replayed(ctx, &got, (st, f.fs), at, (local, Some(&m.inline_key)))
}

/// As root on Btrfs: reads the extents of a file with the tree search on
/// its directory's fd, without opening it; `Err` when FIEMAP must (the
/// search cannot be used, or cannot decide for this file: then with the
/// items it read, if any).
fn map_by_search(
    ctx: &Ctx<'_>,
    f: &FoundFile<'_>,
    local: &mut Local,
) -> Result<Mapped, Option<Box<Pending>>> {
    let Some(fs) = f.fs else {
        return Err(None);
    };
    if f.follow
        || ExtentSource::for_fs(&fs.info, ctx.map.extents.search_allowed())
            != ExtentSource::BtrfsSearch
    {
        return Err(None);
    }
    let st = f.st;
    let linked = ctx.counts_once(st.stx_nlink);
    // A copy record needs the device in 32 bits; a file counted through
    // its links is never one, nor stands for one.
    let packed = dev32(dev_of(st)).filter(|_| !linked);
    let copy = packed.is_some();
    let file = SearchFile {
        ino: st.stx_ino,
        dev: dev_of(st),
        allocated: st.stx_blocks.saturating_mul(512),
        size: st.stx_size,
        nlink: st.stx_nlink,
        fs: fs.info.index,
        space: fs.space,
        copy: (copy, copy && fs.snapshot),
    };
    let got = match ctx
        .map
        .extents
        .read_btrfs(f.dirfd, &file, local.take_pre(st.stx_ino))
    {
        Searched::Read(got) => got,
        Searched::Undecided(pending) => {
            local.counters.search_undecided += 1;
            return Err(pending);
        }
        Searched::Unavailable => return Err(None),
    };
    local.counters.search_files += 1;
    local.counters.search_calls += u64::from(got.calls);
    let view = Stats::of_inode(Kind::File, st.stx_size, st.stx_blocks);
    if let (Some(of), Some(dev)) = (got.copy_of, packed) {
        local.copies.push(CopyRec {
            of,
            node: f.node,
            dev,
        });
    }
    if got.inline {
        let (bytes, at) = (view.total.saturating_sub(got.shared_bytes), (f.node, f.ns));
        ctx.inline_bound(local, st, at, linked, fs.space);
        if ctx.run.keep_inline {
            ctx.record_inline(
                local,
                st,
                at,
                (bytes, got.file),
                linked,
                (fs.info.index, None),
            );
        }
    }
    if got.compressed_disk > 0 {
        local.counters.on_disk_files += 1;
        local.counters.on_disk_bytes += got.compressed_disk;
    }
    Ok(Mapped::Extents {
        view: (st.stx_size, st.stx_blocks),
        shared: got.shared_bytes,
        id: got.file.map(|id| (id, st.stx_ino)),
        on_disk: got.on_disk,
        whole: true,
        unreachable: got.unreachable,
        encoded: got.encoded_own > 0,
    })
}
