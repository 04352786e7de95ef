//! What one non-directory entry adds to its directory: its figures, its
//! extents when it may share, and a link record when it must be counted
//! once per directory.

use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::Statx;
use rustix::io::Errno;

use super::ctx::{Ctx, Local, dev_of};
use super::fdcache::DirFs;
use super::later::{Later, Who};
use super::open::{self, Now, OpenFile};
use crate::error::{Diagnostic, strerror};
use crate::extents::copies::{self, CopyKey};
use crate::extents::fiemap::Extent;
use crate::extents::inline::InlineRec;
use crate::extents::{Pending, Searched, Source};
use crate::figures::{Kind, Stats};
use crate::probe::{self, Skip, ioctl, magic};
use crate::records::{FileRec, Link};

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
    /// Its FIEMAP may be put off while its allocation group is busy
    /// ([`Accounted::Later`]): the caller finishes it with [`later`].
    pub defer: bool,
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
    /// Its FIEMAP waits for its allocation group's turn (XFS, see the walk's
    /// `ag` module): the task finishes it with [`later`] once its other
    /// entries are done, instead of sleeping on the lock now.
    Later(Box<Later>),
}

/// Files one task may put off at once (each holds an fd), where the
/// `RLIMIT_NOFILE` leaves room.
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
    if kind == Kind::Symlink && !ctx.opts.skip_extents && st.stx_blocks > 0 {
        if let Some(fs) = f.fs.filter(|fs| fs.info.magic == magic::BTRFS) {
            // Its target is inline data, which a snapshot shares: decided
            // after the walk, as for inline files.
            local.inline.push(InlineRec {
                node: f.node,
                ns: f.ns,
                dev,
                ino: st.stx_ino,
                generation: 0,
                ctime: (st.stx_ctime.tv_sec, st.stx_ctime.tv_nsec),
                btime: (st.stx_btime.tv_sec, st.stx_btime.tv_nsec),
                size: st.stx_size,
                symlink: true,
                bytes: st.stx_blocks.saturating_mul(512),
                linked: once,
                file: None,
                fs: fs.info.index,
            });
        }
    }
    let mapped = match verdict {
        Err(skip) => Some(Mapped::Skipped(skip)),
        Ok(()) if ctx.opts.skip_extents => None,
        Ok(()) => match map_file(ctx, f, pre, once, local) {
            Mapped::Busy(fd, now, fs, ag) => {
                return Accounted::Later(Box::new(Later {
                    fd,
                    now,
                    fs,
                    ag,
                    who,
                    st: *st,
                    name: f.name.to_owned(),
                }));
            }
            m => Some(m),
        },
    };
    Accounted::Now(credit(ctx, st, who, mapped, local))
}

/// Maps a file put off by [`nondir`] and accounts for it; the caller holds
/// its group's turn. `path` names it in messages.
pub(super) fn later(
    ctx: &Ctx<'_>,
    l: Later,
    path: &dyn Fn() -> Vec<u8>,
    local: &mut Local,
) -> Stats {
    let Later {
        fd,
        now,
        fs,
        ag,
        who,
        st,
        name: _,
    } = l;
    let _ = ag;
    let (mapped, _) = read_open(ctx, fd, now, fs, None, None, None, &st, who, path, local);
    credit(ctx, &st, who, Some(mapped), local)
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
        Some(Mapped::Busy(..)) => unreachable!("a busy file is put off, not credited"),
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
    /// by another thread: put off ([`Accounted::Later`]).
    Busy(OwnedFd, Now, DirFs, u32),
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
    // Btrfs: a copy of this inode, unchanged, mapped before in a related
    // snapshot gives its extents without an open or a FIEMAP.
    let copy = match (f.fs, pending.is_none() && !f.follow) {
        (
            Some(DirFs {
                copies: Some(ids),
                space,
                ..
            }),
            true,
        ) => {
            let key = copy_key(space, f.st);
            if let Some(m) = ctx.extents.copies().find(&key, ids) {
                return reuse(ctx, f, space, &m, once, local);
            }
            Some((key, ids))
        }
        _ => None,
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
    // XFS: the turn of the allocation group this file's shared data is
    // predicted in (see the walk's `ag` module). Busy: put the file off if
    // the task may, else wait.
    let table = (fs.info.magic == magic::XFS)
        .then(|| local.ag.table(&ctx.ags, fs.info.index, fd.as_fd()))
        .flatten();
    let turn = match (&table, local.ag.predicted()) {
        (Some(t), Some(ag)) => match t.try_turn(ag) {
            Some(turn) => Some(turn),
            None if f.defer && ctx.max_later > 0 => {
                local.counters.fiemap_put_off += 1;
                return Mapped::Busy(fd, now, fs, ag);
            }
            None => Some(t.turn(ag)),
        },
        _ => None,
    };
    let who = Who {
        node: f.node,
        entry: f.entry,
        ns: f.ns,
        once,
    };
    // The copy is remembered only if the inode opened is the one stat-ed.
    let copy = copy.filter(|(key, _)| {
        (now.ino, now.size, now.blocks, now.ctime) == (key.ino, key.size, key.blocks, key.ctime)
    });
    let copy_of = copy.map(|c| c.1);
    let (mapped, kept) = read_open(
        ctx,
        fd,
        now,
        fs,
        turn,
        pending,
        // Inline data is kept for the copies in a snapshot only.
        copy_of.map(|ids| ids.1 != [0; 16]),
        f.st,
        who,
        f.path,
        local,
    );
    let kept = kept.filter(|k| copy_of.is_some_and(|ids| copies::worth_keeping(&k.0, ids)));
    if let (Some((key, subvol)), Some((extents, generation))) = (copy, kept) {
        ctx.extents.copies().remember(
            key,
            copies::Mapped {
                subvol,
                extents,
                generation,
            },
        );
    }
    mapped
}

/// What identifies the inode `st` across snapshots, in extent space
/// `space` ([`copies`]).
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
/// ([`copies`]): what FIEMAP on it would have given.
fn reuse(
    ctx: &Ctx<'_>,
    f: &FileAt<'_>,
    space: u32,
    m: &copies::Mapped,
    once: bool,
    local: &mut Local,
) -> Mapped {
    let st = f.st;
    let got = ctx.extents.replay(&m.extents, space);
    local.counters.copies_reused += 1;
    let view = Stats::of_inode(Kind::File, st.stx_size, st.stx_blocks);
    if got.encoded > 0 {
        local.counters.compressed_files += 1;
        local.counters.compressed_bytes += got.encoded;
    }
    if let (true, Some(generation), Some(fs)) = (got.inline, m.generation, f.fs) {
        local.inline.push(InlineRec {
            node: f.node,
            ns: f.ns,
            dev: dev_of(st),
            ino: st.stx_ino,
            generation,
            ctime: (st.stx_ctime.tv_sec, st.stx_ctime.tv_nsec),
            btime: (st.stx_btime.tv_sec, st.stx_btime.tv_nsec),
            size: st.stx_size,
            symlink: false,
            bytes: view.total.saturating_sub(got.shared_bytes),
            linked: once,
            file: got.file,
            fs: fs.info.index,
        });
    }
    Mapped::Extents {
        view,
        shared: got.shared_bytes,
        id: got.file.map(|id| (id, st.stx_ino)),
        on_disk: got.on_disk,
    }
}

/// Reads the extents of an open file, holding `turn` (its allocation
/// group's, if any) for the FIEMAP only; `pending`: the items the tree
/// search read but could not decide, given FIEMAP's shared flags. With
/// `keep` (`Some(inline too)`), also returns the extents FIEMAP gave and
/// the inode generation (read for inline data), for the file's other
/// copies ([`copies`]), if the map went through without an error.
#[allow(clippy::too_many_arguments)]
fn read_open(
    ctx: &Ctx<'_>,
    fd: OwnedFd,
    now: Now,
    fs: DirFs,
    turn: Option<std::sync::MutexGuard<'_, ()>>,
    pending: Option<Box<Pending>>,
    keep: Option<bool>,
    st: &Statx,
    who: Who,
    path: &dyn Fn() -> Vec<u8>,
    local: &mut Local,
) -> (Mapped, Option<Kept>) {
    // The name may now point at another inode: every figure comes from the
    // one that is open, so that figures and extents agree.
    let view = Stats::of_inode(Kind::File, now.size, now.blocks);
    if ctx.registry.fiemap_unsupported(fs.info.index) {
        return (Mapped::Skipped(Skip::FsCannotShare), None);
    }
    let mut kept = keep.map(|_| Vec::new());
    let got = match &pending {
        // Its items, read by the tree search, with FIEMAP's shared flags.
        Some(p) => ctx.extents.read_btrfs_flags(fd.as_fd(), p, fs.space),
        None if keep.is_some() => {
            ctx.extents
                .read_fiemap_keeping(fd.as_fd(), fs.space, kept.as_mut().zip(keep))
        }
        None => ctx
            .extents
            .read(Source::for_fs(&fs.info, false), fd.as_fd(), fs.space),
    };
    drop(turn);
    local.ag.learn(got.first_shared);
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
            return (Mapped::Skipped(Skip::FsCannotShare), None);
        }
        kept = None;
        // Extents indexed before the failure stand, and are taken out of
        // the file's exclusive bytes, so figures stay consistent.
        ctx.msgs.report(Diagnostic::CannotReadExtents {
            path: path(),
            reason: e.to_string(),
        });
        local.unverified(view.total.saturating_sub(got.shared_bytes));
    }
    let mut generation = None;
    if got.inline && fs.info.magic == magic::BTRFS {
        // Inline data a snapshot may share: decided after the walk.
        generation = ioctl::file_generation(fd.as_fd()).ok();
        if generation.is_none() {
            // Without it the inline unit cannot be keyed: not a copy.
            kept = None;
        }
        // The birth time is the walk's: only for the inode it stat-ed.
        let same =
            (now.ino, now.ctime) == (st.stx_ino, (st.stx_ctime.tv_sec, st.stx_ctime.tv_nsec));
        if let (Some(generation), true) = (generation, same) {
            local.inline.push(InlineRec {
                node: who.node,
                ns: who.ns,
                dev: dev_of(st),
                ino: now.ino,
                generation,
                ctime: now.ctime,
                btime: (st.stx_btime.tv_sec, st.stx_btime.tv_nsec),
                size: now.size,
                symlink: false,
                bytes: view.total.saturating_sub(got.shared_bytes),
                linked: once,
                file: got.file,
                fs: fs.info.index,
            });
        }
    }
    let mapped = Mapped::Extents {
        view,
        shared: got.shared_bytes,
        id: got.file.map(|id| (id, now.ino)),
        on_disk: got.on_disk,
    };
    (mapped, kept.map(|k| (k.into_boxed_slice(), generation)))
}

/// What a file's FIEMAP gave, kept for its other copies: its extents and
/// its inode generation, if read.
type Kept = (Box<[Extent]>, Option<u32>);

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
        local.take_pre(st.stx_ino),
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
            btime: (st.stx_btime.tv_sec, st.stx_btime.tv_nsec),
            size: st.stx_size,
            symlink: false,
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
