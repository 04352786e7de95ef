//! What one non-directory entry adds to its directory: its figures, its
//! extents when it may share, and a link record when it must be counted
//! once per directory.

use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use rustix::fs::Statx;
use rustix::io::Errno;

use super::ag::{AgTable, Handed};
use super::ctx::{Ctx, Local, dev_of};
use super::fdcache::{DirFs, DirHandle};
use super::later::{Later, Who};
use super::open::{self, Now, OpenFile};
use crate::error::{Diagnostic, strerror};
use crate::extents::inline::InlineRec;
use crate::extents::{Pending, Searched, Source};
use crate::figures::{Kind, Stats};
use crate::probe::{self, Skip, ioctl, magic};
use crate::records::{FileRec, Link, NodeRec};

/// A non-directory entry as the walk found it.
pub(super) struct FileAt<'a> {
    /// Its directory (or the working directory, for a root given by path).
    pub dirfd: BorrowedFd<'a>,
    pub name: &'a CStr,
    /// What statx said of it.
    pub st: &'a Statx,
    /// Its filesystem, when known from its directory (same `st_dev`).
    pub fs: Option<DirFs>,
    /// The node it is credited to: its directory, or its own with `-a`.
    pub node: u32,
    /// Its position in its directory's getdents order when `node` is that
    /// directory; `None` when `node` is its own.
    pub entry: Option<u32>,
    /// Its root's namespace.
    pub ns: u32,
    /// Open it only through the `O_PATH` check ([`open::guarded`]).
    pub guard: bool,
    /// It was stat-ed through a symlink (`-L`, or a root under `-H`): open
    /// it the same way, and check that the inode opened is the one stat-ed.
    pub follow: bool,
    /// Its path as printed, for messages.
    pub path: &'a dyn Fn() -> Vec<u8>,
    /// The directory it was listed in, and its position in getdents
    /// order: then its FIEMAP may be handed to the thread that holds its
    /// allocation group's turn ([`Accounted::Handed`]).
    pub dir: Option<(&'a Arc<DirHandle>, u32)>,
}

/// Whether the walk opened a file before stat-ing it
/// ([`open::open_listed_file`]).
pub(super) enum Pre {
    /// Not opened: it is opened by name if it may share.
    No,
    /// Open, and [`FileAt::st`] is the `statx` of this very fd.
    Open(OwnedFd),
    /// The open failed (permission denied...), and [`FileAt::st`] is a
    /// `statx` by name: if the file may share, that failure is reported as
    /// any failed open is, and the open is not tried again.
    Failed(Errno),
}

/// What accounting a non-directory entry gave.
pub(super) enum Accounted {
    /// What goes into its node's own figures.
    Now(Stats),
    /// Handed to the thread that holds its allocation group's turn (XFS,
    /// see the walk's `ag` module), which maps it and credits it to its
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
pub(super) fn nondir(ctx: &Ctx<'_>, f: &FileAt<'_>, pre: Pre, local: &mut Local) -> Accounted {
    let st = f.st;
    let dev = dev_of(st);
    let kind = Kind::from_mode(u32::from(st.stx_mode));
    let once = ctx.counts_once(st.stx_nlink);
    let who = Who {
        node: f.node,
        entry: f.entry,
        ns: f.ns,
        once,
    };
    let claim = || !once || ctx.mapped.insert((f.ns, dev, st.stx_ino));
    // The filesystem is known from the directory unless the file lies on
    // another device (a bind-mounted file; a symlink followed with -L): then
    // it is probed on the opened file.
    let verdict = match f.fs {
        Some(fs) => probe::may_share(&fs.info, kind, st.stx_blocks, claim),
        None if kind == Kind::File && st.stx_blocks > 0 => Ok(()),
        None if kind == Kind::File => Err(Skip::FsCannotShare),
        None => Err(Skip::NotRegular),
    };
    let mapped = match verdict {
        Err(skip) => Some(Mapped::Skipped(skip)),
        Ok(()) if ctx.opts.skip_extents => None,
        Ok(()) => match map_file(ctx, f, pre, once, local) {
            Mapped::Handed => return Accounted::Handed,
            m => Some(m),
        },
    };
    Accounted::Now(credit(ctx, st, who, mapped, local))
}

/// Maps a file handed over by another thread ([`Accounted::Handed`]) and
/// credits it to its directory; the caller holds its group's turn on
/// `table`.
fn map_handed(ctx: &Ctx<'_>, table: &AgTable, l: Later, local: &mut Local) {
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
    let mapped = read_open(ctx, fd, now, fs, None, &st, who, &path, Some(table), local);
    let own = credit(ctx, &st, who, Some(mapped), local);
    // As the walk credits an entry of the directory it reads: its own
    // figures go to the directory, a leaf (-a) has its node besides.
    local.partial.push((dir.id, own));
    if let Some((id, kind)) = leaf {
        local.nodes.push(NodeRec {
            id,
            parent: dir.id,
            depth: dir.depth + 1,
            kind,
            leaf: true,
            order: idx,
            name: name.to_bytes().into(),
            own,
        });
    }
}

/// Records what mapping gave (`None`: not asked, `--du total`) and returns
/// what goes into the node's own figures.
fn credit(ctx: &Ctx<'_>, st: &Statx, who: Who, mapped: Option<Mapped>, local: &mut Local) -> Stats {
    let dev = dev_of(st);
    let mut stats = ctx.inode_stats(st);
    let mut ino = st.stx_ino;
    match mapped {
        None => {}
        Some(Mapped::Extents {
            view,
            shared,
            id,
            on_disk,
        }) => {
            stats = Stats {
                time: stats.time,
                ..view
                    .with_shared_extents(shared)
                    .with_exclusive_on_disk(on_disk)
            };
            if let Some((id, file_ino)) = id {
                ino = file_ino;
                local.files.push(FileRec {
                    id,
                    node: who.node,
                    ns: who.ns,
                    dev,
                    ino,
                    linked: who.once,
                });
            }
        }
        Some(Mapped::Skipped(skip)) => local.skip(skip, stats.total),
        Some(Mapped::Unverified) => local.unverified(stats.total),
        Some(Mapped::Gone) => {}
        Some(Mapped::Handed) => unreachable!("a handed file is credited by its mapper"),
    }
    if !who.once && st.stx_nlink > 1 {
        // -l counts every link; whether all of them lie under a directory
        // is not tracked then, so none is claimed to be reclaimable.
        stats.reclaimable = 0;
    }
    if who.once {
        local.links.push(Link {
            ns: who.ns,
            dev,
            ino,
            nlink: st.stx_nlink,
            node: who.node,
            entry: who.entry,
            stats,
        });
        Stats::default()
    } else {
        stats
    }
}

impl Local {
    /// A file whose extents were not read, and why.
    fn skip(&mut self, why: Skip, bytes: u64) {
        self.counters.skipped[why.index()] += 1;
        if why == Skip::Unverified {
            self.unverified(bytes);
        }
    }

    /// A file that may share but whose sharing could not be verified:
    /// counted as exclusive, and its bytes reported.
    fn unverified(&mut self, bytes: u64) {
        self.counters.unverified_files += 1;
        self.counters.unverified_bytes += bytes;
    }
}

/// What mapping one file gave.
enum Mapped {
    /// Its figures, from the opened inode, and the bytes of its shared
    /// extents; `id` is its file id and inode number when some extent is
    /// shared.
    Extents {
        view: Stats,
        shared: u64,
        id: Option<(u32, u64)>,
        /// Compressed data not shared: its logical and on-disk bytes (0, 0
        /// but from the tree search).
        on_disk: (u64, u64),
    },
    /// Not mapped after all (its filesystem, known only once opened, cannot
    /// share; or it was replaced by something that cannot).
    Skipped(Skip),
    /// Could not be mapped; reported, and counted as exclusive.
    Unverified,
    /// Gone or replaced by a non-file since it was stat-ed: counted with
    /// what the walk saw, as exclusive.
    Gone,
    /// Open and ready, but its predicted allocation group is being mapped
    /// by another thread: handed to it ([`Accounted::Handed`]).
    Handed,
}

/// Reads a file's extents: by the tree search (Btrfs, root) without
/// opening it, else opened relative to its directory (unless the walk
/// already did).
fn map_file(ctx: &Ctx<'_>, f: &FileAt<'_>, pre: Pre, once: bool, local: &mut Local) -> Mapped {
    let pending = match map_by_search(ctx, f, local) {
        // An fd the walk opened is closed unused.
        Ok(m) => return m,
        Err(pending) => pending,
    };
    let flags = open::file_flags(f.follow);
    let opened = match pre {
        Pre::Open(fd) => Ok(Some((fd, Now::of_statx(f.st)))),
        Pre::Failed(e) => Err(e),
        Pre::No => open::open_regular(f.dirfd, f.name, flags, f.guard),
    };
    let (fd, now): OpenFile = match opened {
        // Through a symlink, the name may now lead elsewhere: only the
        // inode that was stat-ed is mapped.
        Ok(Some(opened))
            if f.follow && (opened.1.ino != f.st.stx_ino || opened.1.dev != dev_of(f.st)) =>
        {
            return Mapped::Gone;
        }
        Ok(Some(opened)) => opened,
        // Gone, or no longer a regular file: counted as the walk saw it.
        Ok(None) => return Mapped::Gone,
        Err(e) => {
            ctx.msgs.report(Diagnostic::CannotReadExtents {
                path: (f.path)(),
                reason: strerror(e),
            });
            return Mapped::Unverified;
        }
    };
    let fs = match f.fs {
        Some(fs) => fs,
        None => {
            let fs = ctx.filesystem(now.dev, fd.as_fd(), f.ns, f.path);
            let key = (f.ns, dev_of(f.st), f.st.stx_ino);
            let claim = || !once || ctx.mapped.insert(key);
            if let Err(skip) = probe::may_share(&fs.info, Kind::File, f.st.stx_blocks, claim) {
                return Mapped::Skipped(skip);
            }
            fs
        }
    };
    let who = Who {
        node: f.node,
        entry: f.entry,
        ns: f.ns,
        once,
    };
    // XFS: the table of its allocation groups, moved out of the task's
    // cache while the file is mapped (no reference count per file).
    if local.ag.holds_other_than(fs.info.index) {
        end_turn(ctx, local);
    }
    let table = (fs.info.magic == magic::XFS)
        .then(|| local.ag.take(&ctx.ags, fs.info.index, fd.as_fd()))
        .flatten();
    let m = map_in_turn(ctx, f, fd, now, fs, pending, who, table.as_deref(), local);
    local.ag.put(table);
    m
}

/// Maps an open file, in the turn of the allocation group its shared data
/// is predicted in (XFS, see the walk's `ag` module). If another thread
/// holds that turn, the file is handed to it when the task may
/// ([`FileAt::dir`]) and not too many are handed already; otherwise the
/// task waits for the turn. A task keeps the turn it got until it ends
/// ([`end_turn`]) or maps in another group, and maps the files handed to
/// it after each of its own.
#[allow(clippy::too_many_arguments)]
fn map_in_turn(
    ctx: &Ctx<'_>,
    f: &FileAt<'_>,
    fd: OwnedFd,
    now: Now,
    fs: DirFs,
    pending: Option<Box<Pending>>,
    who: Who,
    table: Option<&AgTable>,
    local: &mut Local,
) -> Mapped {
    let (Some(t), Some(ag)) = (table, local.ag.predicted()) else {
        let m = read_open(ctx, fd, now, fs, pending, f.st, who, f.path, table, local);
        // A task that holds a turn and maps a file predicted nowhere still
        // maps what was handed to it, so the others need not wait.
        if let (Some(t), Some(held)) = (table, local.ag.holding) {
            map_all(ctx, t, t.take_handed(held), local);
        }
        return m;
    };
    if local.ag.holding == Some(ag) {
        let m = read_open(ctx, fd, now, fs, pending, f.st, who, f.path, table, local);
        map_all(ctx, t, t.take_handed(ag), local);
        return m;
    }
    if let Some(old) = local.ag.holding.take() {
        release(ctx, t, old, local);
    }
    let (fd, now) = match f.dir {
        _ if t.try_turn(ag) => (fd, now),
        // Busy: hand the file to the holder of the turn.
        Some((dir, idx)) if ctx.max_later > 0 => {
            let leaf = f
                .entry
                .is_none()
                .then(|| (f.node, Kind::from_mode(u32::from(f.st.stx_mode))));
            let l = Box::new(Later {
                fd,
                now,
                fs,
                who,
                st: *f.st,
                dir: dir.clone(),
                leaf,
                idx,
                name: f.name.to_owned(),
            });
            match t.hand(ag, l, ctx.max_later) {
                Handed::Given => {
                    local.counters.fiemap_put_off += 1;
                    return Mapped::Handed;
                }
                Handed::Holder(l) => (l.fd, l.now),
            }
        }
        // Busy, and the file cannot be handed: wait.
        _ => {
            t.turn(ag);
            (fd, now)
        }
    };
    local.ag.holding = Some(ag);
    let m = read_open(ctx, fd, now, fs, pending, f.st, who, f.path, table, local);
    map_all(ctx, t, t.take_handed(ag), local);
    m
}

/// Maps the files handed to the caller, which holds their group's turn.
fn map_all(ctx: &Ctx<'_>, t: &AgTable, handed: Vec<Later>, local: &mut Local) {
    for l in handed {
        map_handed(ctx, t, l, local);
    }
}

/// Lets group `ag`'s turn on `t` go, once the files handed to its holder
/// are mapped.
fn release(ctx: &Ctx<'_>, t: &AgTable, ag: u32, local: &mut Local) {
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

/// Reads the extents of an open file; `pending`: the items the tree
/// search read but could not decide, given FIEMAP's shared flags;
/// `table`: its filesystem's allocation groups (XFS), to predict the next
/// file's group from this one's.
#[allow(clippy::too_many_arguments)]
fn read_open(
    ctx: &Ctx<'_>,
    fd: OwnedFd,
    now: Now,
    fs: DirFs,
    pending: Option<Box<Pending>>,
    st: &Statx,
    who: Who,
    path: &dyn Fn() -> Vec<u8>,
    table: Option<&AgTable>,
    local: &mut Local,
) -> Mapped {
    // The name may now point at another inode: every figure comes from the
    // one that is open, so that figures and extents agree.
    let view = Stats::of_inode(Kind::File, now.size, now.blocks);
    if ctx.registry.fiemap_unsupported(fs.info.index) {
        return Mapped::Skipped(Skip::FsCannotShare);
    }
    let got = match &pending {
        // Its items, read by the tree search, with FIEMAP's shared flags.
        Some(p) => ctx.extents.read_btrfs_flags(fd.as_fd(), p, fs.space),
        None => ctx
            .extents
            .read(Source::for_fs(&fs.info, false), fd.as_fd(), fs.space),
    };
    local.ag.learn(table, got.first_shared);
    let once = who.once;
    if got.compressed_disk > 0 {
        local.counters.on_disk_files += 1;
        local.counters.on_disk_bytes += got.compressed_disk;
    }
    local.counters.fiemap_files += 1;
    local.counters.fiemap_calls += u64::from(got.calls);
    if got.encoded > 0 {
        local.counters.compressed_files += 1;
        local.counters.compressed_bytes += got.encoded;
    }
    if let Some(e) = got.error {
        let errno = e.raw_os_error();
        if errno == Some(Errno::OPNOTSUPP.raw_os_error())
            || errno == Some(Errno::NOTTY.raw_os_error())
        {
            if ctx.registry.set_fiemap_unsupported(fs.info.index) {
                ctx.msgs.report(Diagnostic::NoFiemap {
                    path: path(),
                    fs: fs.info.name(),
                });
            }
            return Mapped::Skipped(Skip::FsCannotShare);
        }
        // Extents indexed before the failure stand, and are taken out of
        // the file's exclusive bytes, so figures stay consistent.
        ctx.msgs.report(Diagnostic::CannotReadExtents {
            path: path(),
            reason: e.to_string(),
        });
        local.unverified(view.total.saturating_sub(got.shared_bytes));
    }
    if got.inline && fs.info.magic == magic::BTRFS {
        // Inline data a snapshot may share: decided after the walk.
        if let Ok(generation) = ioctl::file_generation(fd.as_fd()) {
            local.inline.push(InlineRec {
                node: who.node,
                ns: who.ns,
                dev: dev_of(st),
                ino: now.ino,
                generation,
                ctime: now.ctime,
                size: now.size,
                bytes: view.total.saturating_sub(got.shared_bytes),
                linked: once,
                file: got.file,
                fs: fs.info.index,
            });
        }
    }
    Mapped::Extents {
        view,
        shared: got.shared_bytes,
        id: got.file.map(|id| (id, now.ino)),
        on_disk: got.on_disk,
    }
}

/// As root on Btrfs: reads the extents of a file with the tree search on
/// its directory's fd, without opening it; `Err` when FIEMAP must (the
/// search cannot be used, or cannot decide for this file: then with the
/// items it read, if any).
fn map_by_search(
    ctx: &Ctx<'_>,
    f: &FileAt<'_>,
    local: &mut Local,
) -> Result<Mapped, Option<Box<Pending>>> {
    let Some(fs) = f.fs else {
        return Err(None);
    };
    if f.follow || Source::for_fs(&fs.info, ctx.extents.search_allowed()) != Source::BtrfsSearch {
        return Err(None);
    }
    let st = f.st;
    let got = match ctx.extents.read_btrfs(
        f.dirfd,
        st.stx_ino,
        (st.stx_blocks.saturating_mul(512), st.stx_size, st.stx_nlink),
        dev_of(st),
        fs.info.index,
        fs.space,
    ) {
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
    if got.inline {
        local.inline.push(InlineRec {
            node: f.node,
            ns: f.ns,
            dev: dev_of(st),
            ino: st.stx_ino,
            generation: got.generation.unwrap_or_default(),
            ctime: (st.stx_ctime.tv_sec, st.stx_ctime.tv_nsec),
            size: st.stx_size,
            bytes: view.total.saturating_sub(got.shared_bytes),
            linked: ctx.counts_once(st.stx_nlink),
            file: got.file,
            fs: fs.info.index,
        });
    }
    if got.compressed_disk > 0 {
        local.counters.on_disk_files += 1;
        local.counters.on_disk_bytes += got.compressed_disk;
    }
    Ok(Mapped::Extents {
        view,
        shared: got.shared_bytes,
        id: got.file.map(|id| (id, st.stx_ino)),
        on_disk: got.on_disk,
    })
}
