//! An open file's extents, read, and what mapping a file gave, credited
//! to its node: what every way of mapping a file (at once, handed to the
//! holder of its allocation group's turn, or from a copy) ends with.

use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::Statx;
use rustix::io::Errno;
use sdu_sys::fiemap::{self, Extent};

use super::ctx::{Ctx, Local};
use super::fdcache::DirFs;
use super::later::{Later, Who};
use super::open::OpenedStat;
use crate::error::Diagnostic;
use crate::extents::ag::AgTable;
use crate::extents::unchanged::KeyCache;
use crate::extents::{ExtentSource, FileExtents, Pending};
use crate::figures::{Bound, Kind, Stats};
use crate::probe::{Skip, magic};
use crate::records::mappings::{MapExtent, MapKey};
use crate::records::{FileRec, Link, NodeId};

/// Records what mapping gave (`None`: not asked, `--du total`) and returns
/// what goes into the node's own figures.
/// `kind` and `dev` are the inode's, as `st` gives them.
#[inline(always)]
pub(super) fn credit(
    ctx: &Ctx<'_>,
    (st, kind, dev): (&Statx, Kind, u64),
    who: Who,
    mapped: Option<Mapped>,
    local: &mut Local,
) -> Stats {
    let mut ino = st.stx_ino;
    let mut stats = match &mapped {
        Some(Mapped::Extents {
            view,
            shared,
            on_disk,
            ..
        }) => Stats::of_inode(Kind::File, view.0, view.1)
            .with_shared_extents(*shared)
            .with_exclusive_on_disk(*on_disk),
        _ => Stats::of_inode(kind, st.stx_size, st.stx_blocks),
    };
    stats.time = ctx.inode_time(st);
    let unreachable = match mapped.as_ref() {
        Some(&Mapped::Extents { unreachable, .. }) => unreachable,
        _ => 0,
    };
    // (the reasons, read as referenced)
    let mark = match &mapped {
        // FIEMAP on Btrfs shows the referenced part of each extent. An
        // extent not flagged shared has this file's references alone: its
        // bytes beyond them, if any, nothing references, and they go with
        // the file (at least); compressed ones count uncompressed, above
        // what they take (at most). The shared extents are marked by their
        // units after the sweep: where one is credited (its space's bound),
        // and on the files of one that is not
        // (`crate::scan::coverage::mark_unfreed_units`).
        Some(Mapped::Extents {
            whole: false,
            shared,
            view,
            encoded,
            ..
        }) if view.1 > 0 => {
            let own = view.1.saturating_mul(512) > *shared;
            let b = match (own, *encoded) {
                (false, false) => Bound::EXACT,
                (true, false) => Bound::AT_LEAST,
                (false, true) => Bound::AT_MOST,
                (true, true) => Bound::AT_LEAST.with(Bound::AT_MOST),
            };
            (!b.is_exact()).then_some((b, true))
        }
        // Not mapped, its blocks counted as its own: it may share them
        // (at most); where its filesystem frees whole extents, or is not
        // known, an extent it references in part frees more (at least).
        Some(Mapped::Unverified | Mapped::Skipped(Skip::Unverified)) if stats.total > 0 => {
            let registry = &ctx.map.registry;
            let by_block = registry.fs_index(dev).is_some_and(|i| {
                registry.filesystems().get(i as usize).is_some_and(|f| {
                    !f.unverified && f.granularity == crate::probe::Granularity::Block
                })
            });
            let b = if by_block {
                Bound::AT_MOST
            } else {
                Bound::AT_MOST.with(Bound::AT_LEAST)
            };
            Some((b, false))
        }
        _ => None,
    };
    match mapped {
        None | Some(Mapped::Extents { id: None, .. }) | Some(Mapped::Gone) => {}
        Some(Mapped::Extents {
            id: Some((id, file_ino)),
            ..
        }) => {
            ino = file_ino;
            local.files.push(FileRec {
                id,
                node: who.node,
                ns: who.ns,
                dev,
                ino,
                // Under -l a multiply-linked file's other links are not
                // tracked: a record with no links seen, whose units are
                // never freed (marked below).
                linked: who.once || st.stx_nlink > 1,
            });
        }
        Some(Mapped::Skipped(skip)) => local.skip(skip, stats.total),
        Some(Mapped::Unverified) => local.unverified(stats.total),
        Some(Mapped::Handed) => unreachable!("a handed file is credited by its mapper"),
    }
    // An inode counted once through its links is credited where its links
    // meet, after the walk: its marks go by inode, not by the link that
    // happened to be mapped.
    match (who.once, mark) {
        (_, None) => {}
        (false, Some((b, true))) => local.partial_bound(who.node, b),
        (false, Some((b, false))) => local.bound(who.node, b),
        (true, Some((b, partial))) => local.inode_marks.push(((who.ns, dev, ino), b, partial)),
    }
    if unreachable > 0 {
        if who.once {
            local
                .unreachable_inodes
                .push(((who.ns, dev, ino), unreachable));
        } else {
            local.unreachable.push((who.node, unreachable));
        }
    }
    if !who.once && st.stx_nlink > 1 {
        // -l counts every link; whether all of them lie under a directory
        // is not tracked then, so none is claimed to be reclaimable, and
        // the figure is a floor: deleting may free the file.
        stats.reclaimable = 0;
        if stats.exclusive > 0 || stats.total > 0 {
            local.bound(who.node, Bound::AT_LEAST);
        }
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
        self.count_left(super::LeftOut::NotMapped);
        self.counters.unverified_files += 1;
        self.counters.unverified_bytes += bytes;
    }
}

/// What mapping one file gave.
pub(super) enum Mapped {
    /// Its size and blocks (its figures), from the opened inode, and the
    /// bytes of its shared extents; `id` is its file id and inode number
    /// when some extent is shared.
    Extents {
        view: (u64, u64),
        shared: u64,
        id: Option<(u32, u64)>,
        /// Compressed data not shared: its logical and on-disk bytes (0, 0
        /// but from the tree search).
        on_disk: (u64, u64),
        /// Its extents were seen whole: not on Btrfs, or read from the tree
        /// (root), or inline. FIEMAP on Btrfs shows only the referenced
        /// part of an extent ([`crate::figures::Bound::AT_LEAST`]).
        whole: bool,
        /// As root on Btrfs: the bytes on disk of its extents (those no
        /// other file references) that nothing references.
        unreachable: u64,
        /// Some of its extents not flagged shared are compressed and were
        /// read by FIEMAP, which gives their uncompressed length: its
        /// exclusive bytes count them above their size on disk.
        encoded: bool,
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
    /// by another thread: handed to it ([`Accounted::Handed`](super::account::Accounted::Handed)).
    Handed,
}

/// An open file whose extents are to be read, and what they are read for.
pub(super) struct ToRead<'a> {
    pub(super) fd: OwnedFd,
    /// What the open fd says of the file now.
    pub(super) now: OpenedStat,
    pub(super) fs: &'a DirFs,
    /// The items the tree search read but could not decide, given
    /// FIEMAP's shared flags.
    pub(super) pending: Option<Box<Pending>>,
    /// `Some(inline too)`: also return the extents FIEMAP gives, for the
    /// file's other copies ([`crate::extents::unchanged`]), if the map goes
    /// through without an error.
    pub(super) keep: Option<bool>,
    /// What the walk stat-ed.
    pub(super) st: &'a Statx,
    pub(super) who: Who,
    /// Its path as printed, for messages.
    pub(super) path: &'a dyn Fn() -> Vec<u8>,
}

/// Reads the extents of an open file (`file`), and what it kept of them
/// ([`ToRead::keep`]). `table`: its filesystem's allocation groups (XFS),
/// to predict the next file's group from this one's.
#[inline(always)]
pub(super) fn read_open(
    ctx: &Ctx<'_>,
    file: ToRead<'_>,
    table: Option<&AgTable<Later>>,
    local: &mut Local,
) -> (Mapped, Option<Kept>) {
    let ToRead {
        fd,
        now,
        fs,
        pending,
        keep,
        st,
        who,
        path,
    } = file;
    // The name may now point at another inode: every figure comes from the
    // one that is open, so that figures and extents agree.
    let view = Stats::of_inode(Kind::File, now.size, now.blocks);
    if ctx.map.registry.fiemap_unsupported(fs.info.index) {
        return (Mapped::Skipped(Skip::FsCannotShare), None);
    }
    let mut kept = keep.map(|_| Vec::new());
    let got = match &pending {
        // Its items, read by the tree search, with FIEMAP's shared flags.
        Some(p) => ctx.map.extents.read_btrfs_flags(fd.as_fd(), p, fs.space),
        None if keep.is_some() => {
            ctx.map
                .extents
                .read_fiemap_keeping(fd.as_fd(), fs.space, kept.as_mut().zip(keep))
        }
        None => ctx
            .map
            .extents
            .read(ExtentSource::for_fs(&fs.info, false), fd.as_fd(), fs.space),
    };
    local.ag.learn(table, got.first_shared);
    let once = who.once;
    match counted(ctx, fs, &got, view.total, path, local) {
        // Read by FIEMAP alone: its map is what a saved scan keeps.
        ExtentsRead::Whole if pending.is_none() => {
            let key = MapKey {
                dev: fs.map_dev,
                ino: now.ino,
                ctime: now.ctime,
                size: now.size,
                blocks: now.blocks,
            };
            keep_map(ctx, (key, fs), path, local);
        }
        ExtentsRead::Whole => {}
        ExtentsRead::Failed => kept = None,
        ExtentsRead::NoFiemap => return (Mapped::Skipped(Skip::FsCannotShare), None),
    }
    if got.inline && fs.info.magic == magic::BTRFS {
        // Inline data a snapshot may share: decided after the walk. The
        // birth time is the walk's: only for the inode it stat-ed.
        let same =
            (now.ino, now.ctime) == (st.stx_ino, (st.stx_ctime.tv_sec, st.stx_ctime.tv_nsec));
        let at = (who.node, who.ns);
        ctx.inline_bound(local, st, at, once, fs.space);
        if same && ctx.run.keep_inline {
            let bytes = view.total.saturating_sub(got.shared_bytes);
            ctx.record_inline(
                local,
                st,
                at,
                (bytes, got.file),
                once,
                (fs.info.index, None),
            );
        }
    }
    fiemap::close(fd);
    let whole = pending.is_some() || got.inline || fs.info.magic != magic::BTRFS;
    if !whole {
        let data = view.total.saturating_sub(got.shared_bytes);
        local.partial_view(fs.space, data, got.encoded > 0);
    }
    let mapped = Mapped::Extents {
        view: (now.size, now.blocks),
        shared: got.shared_bytes,
        id: got.file.map(|id| (id, now.ino)),
        on_disk: got.on_disk,
        whole,
        unreachable: got.unreachable,
        encoded: got.encoded_own > 0,
    };
    (mapped, kept.map(Vec::into_boxed_slice))
}

/// After FIEMAP read the whole map of file `key` (`path`, for messages), on
/// `fs`: keeps it for `--export`, and with `--verify` names it if the map
/// `--since` saved of it in the same state differs.
pub(super) fn keep_map(
    ctx: &Ctx<'_>,
    (key, fs): (MapKey, &DirFs),
    path: &dyn Fn() -> Vec<u8>,
    local: &mut Local,
) {
    let opts = &ctx.run.opts;
    // On Btrfs a file's copies in snapshots are mapped once for all: no
    // map is kept, none reused ([`super::reused`]).
    if (!opts.keep_mappings && !opts.verify_since) || fs.copies.is_some() {
        return;
    }
    let extents = ctx.map.extents.take_saved();
    if opts.verify_since
        && let Some(saved) = opts.since.as_deref()
        && let Some(old) = saved.unchanged(&key)
    {
        if same_map(old, &extents) {
            local.counters.mappings_verified += 1;
        } else {
            local.counters.mappings_stale += 1;
            ctx.run
                .msgs
                .report(Diagnostic::StaleMapping { path: path() });
        }
    }
    if opts.keep_mappings {
        local.since.mappings.push(key, &extents);
    }
}

/// Whether two maps give the same figures: the same extents, in order.
fn same_map(a: &[MapExtent], b: &[MapExtent]) -> bool {
    a == b
}

/// What a file credited with extents replayed (a snapshot copy's, a
/// saved map) adds, as FIEMAP's would have: `st` its `statx`, on its
/// directory's filesystem `fs` (if known), credited to `node` of namespace
/// `ns` (`once`: through the link table); `key`: where its copies keep
/// their inline key's id, when a copy's map is replayed.
pub(super) fn replayed(
    ctx: &Ctx<'_>,
    got: &FileExtents,
    (st, fs): (&Statx, Option<&DirFs>),
    (node, ns, once): (NodeId, u32, bool),
    (local, key): (&mut Local, Option<&KeyCache>),
) -> Mapped {
    let view = Stats::of_inode(Kind::File, st.stx_size, st.stx_blocks);
    if got.encoded > 0 {
        local.counters.compressed_files += 1;
        local.counters.compressed_bytes += got.encoded;
    }
    let btrfs = fs.filter(|fs| fs.info.magic == magic::BTRFS);
    if let (true, Some(fs)) = (got.inline, btrfs) {
        let (bytes, at) = (view.total.saturating_sub(got.shared_bytes), (node, ns));
        ctx.inline_bound(local, st, at, once, fs.space);
        if ctx.run.keep_inline {
            ctx.record_inline(local, st, at, (bytes, got.file), once, (fs.info.index, key));
        }
    }
    // Extents FIEMAP gave: on Btrfs, as referenced.
    if let (false, Some(fs)) = (got.inline, btrfs) {
        let data = view.total.saturating_sub(got.shared_bytes);
        local.partial_view(fs.space, data, got.encoded > 0);
    }
    Mapped::Extents {
        view: (st.stx_size, st.stx_blocks),
        shared: got.shared_bytes,
        id: got.file.map(|id| (id, st.stx_ino)),
        on_disk: got.on_disk,
        whole: got.inline || btrfs.is_none(),
        unreachable: got.unreachable,
        encoded: got.encoded_own > 0,
    }
}

/// How a file's extents were read ([`counted`]).
pub(super) enum ExtentsRead {
    /// To the end.
    Whole,
    /// An error ended the map (reported); the extents indexed before it
    /// stand.
    Failed,
    /// Its filesystem has no FIEMAP after all (reported once per
    /// filesystem): the file is not mapped.
    NoFiemap,
}

/// Counts what reading a file's extents took (`total`: its allocated
/// bytes) and reports the error that ended it, if any: the bookkeeping
/// every FIEMAP of the walk ends with ([`read_open`], and the lean path of
/// the walk's `plain` module).
#[inline(always)]
pub(super) fn counted(
    ctx: &Ctx<'_>,
    fs: &DirFs,
    got: &FileExtents,
    total: u64,
    path: &dyn Fn() -> Vec<u8>,
    local: &mut Local,
) -> ExtentsRead {
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
    match &got.error {
        None => ExtentsRead::Whole,
        Some(e) => failed(
            ctx,
            fs,
            e,
            total.saturating_sub(got.shared_bytes),
            path,
            local,
        ),
    }
}

/// A FIEMAP that ended in error `e`; `unshared`: the file's bytes not in
/// the shared extents indexed before it.
#[cold]
#[inline(never)]
fn failed(
    ctx: &Ctx<'_>,
    fs: &DirFs,
    e: &std::io::Error,
    unshared: u64,
    path: &dyn Fn() -> Vec<u8>,
    local: &mut Local,
) -> ExtentsRead {
    let errno = e.raw_os_error();
    if errno == Some(Errno::OPNOTSUPP.raw_os_error()) || errno == Some(Errno::NOTTY.raw_os_error())
    {
        if ctx.map.registry.set_fiemap_unsupported(fs.info.index) {
            ctx.run.msgs.report(Diagnostic::NoFiemap {
                path: path(),
                fs: fs.info.name(),
            });
        }
        return ExtentsRead::NoFiemap;
    }
    // Extents indexed before the failure stand, and are taken out of the
    // file's exclusive bytes, so figures stay consistent.
    ctx.run.msgs.report(Diagnostic::CannotReadExtents {
        path: path(),
        reason: e.to_string(),
    });
    local.unverified(unshared);
    ExtentsRead::Failed
}

/// What a file's FIEMAP gave, kept for its other copies: its extents.
pub(super) type Kept = Box<[Extent]>;
