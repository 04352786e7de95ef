//! The seam through which the walk asks "what are this file's extents?",
//! and the stage state that collects the answers.
//!
//! The walk opens a file (by its own rules, `crate::walk`'s open module) and
//! hands the fd to [`Extents::read`] with the [`ExtentSource`] chosen for its
//! filesystem. Every source reports the same thing: the file's shared
//! physical ranges, indexed under the file's id, and their byte count.
//! FIEMAP works everywhere; on Btrfs, with `CAP_SYS_ADMIN`,
//! [`Extents::read_btrfs`] reads the file's extent items with the tree
//! search instead, on its directory's fd and without opening it: the same
//! shared flags, or [`Searched::Undecided`] when only FIEMAP can tell (see
//! [`super::btrfs_refs`]), but every extent at its size on disk, which
//! FIEMAP does not show (an extent referenced in part or compressed is
//! whole on disk: [`super::btrfs_items`]). An enum rather than a trait
//! object: the call is made once per file on the hot path, and the set of
//! sources is closed.

use std::cell::RefCell;
use std::os::fd::BorrowedFd;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use super::Fast;
use super::btrfs_items::{self, Partly, Parts};
use super::file::FileExtents;
use super::index::{SharedIndex, Spilled};
use super::spill::{self, SpillError};
use super::stored::StoredSums;
use super::sweep::Sweep;
use super::unchanged::{Indexed, MappedCopies};
use crate::probe::{FsInfo, Granularity};

/// Where a file's extents come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ExtentSource {
    /// `FS_IOC_FIEMAP` on the open file: unprivileged, any filesystem.
    Fiemap,
    /// `BTRFS_IOC_TREE_SEARCH_V2` on the directory's fd: Btrfs, with
    /// `CAP_SYS_ADMIN` ([`Extents::read_btrfs`]).
    BtrfsSearch,
}

impl ExtentSource {
    /// The source for files on `fs`, when the tree search is `allowed`
    /// (`CAP_SYS_ADMIN`, no `--fiemap`).
    pub(crate) fn for_fs(fs: &FsInfo, allowed: bool) -> ExtentSource {
        if allowed && fs.magic == crate::probe::magic::BTRFS {
            ExtentSource::BtrfsSearch
        } else {
            ExtentSource::Fiemap
        }
    }
}

pub(crate) use super::can_search_trees;

/// The items of a file the tree search read but could not decide.
#[derive(Debug)]
pub(crate) struct Pending {
    items: bs::InodeItems,
    calls: u32,
}

/// What [`Extents::read_btrfs`] gave.
#[derive(Debug)]
pub(crate) enum Searched {
    /// The file's extents, at their size on disk.
    Read(FileExtents),
    /// The tree search cannot decide whether some extent of the file is
    /// shared: map it with FIEMAP, with [`Extents::read_btrfs_flags`] and
    /// the items read when there are some. Nothing was indexed.
    Undecided(Option<Box<Pending>>),
    /// The tree search cannot be used on this filesystem (refused, or its
    /// transaction could not be committed): map with FIEMAP.
    Unavailable,
}

thread_local! {
    /// One FIEMAP buffer per thread, allocated on first use.
    static FIEMAP: RefCell<Option<Fiemap>> = const { RefCell::new(None) };
    /// [`Extents::saving`]: what a saved map keeps of this thread's last map.
    static SAVED: RefCell<Vec<MapExtent>> = const { RefCell::new(Vec::new()) };
}

/// The extents stage during a walk: the index of shared ranges and the
/// file ids it knows files by.
#[derive(Debug, Default)]
pub(crate) struct Extents {
    index: SharedIndex,
    next_file: AtomicU32,
    /// The Btrfs tree search may be used.
    search: bool,
    /// The process may search Btrfs trees ([`can_search_trees`]), whether
    /// or not the walk does (`--fiemap`).
    trees: bool,
    btrfs: BtrfsState,
    copies: MappedCopies,
    indexed: Indexed,
    /// The tree search: the extents files reference in part.
    parts: Parts,
    /// The tree search: how the files of some subvolumes are stored
    /// (`--df`), summed from the items read.
    stored: Option<Arc<StoredSums>>,
    /// FIEMAP keeps each file's map ([`Self::take_saved`]).
    saving: bool,
}

mod btrfs_read;
mod btrfs_state;
use btrfs_state::{BtrfsState, Subvol};
use sdu_sys::btrfs::{self as bs, FileExtentType};
use sdu_sys::fiemap::{
    Extent, FIEMAP_EXTENT_DATA_INLINE, FIEMAP_EXTENT_ENCODED, FIEMAP_EXTENT_SHARED, Fiemap,
};

use crate::records::mappings::MapExtent;

/// The flags of the extents a saved map keeps: those [`FileExtents::count`]
/// and the index read. Any other extent adds only its blocks.
const SAVED_FLAGS: u32 = FIEMAP_EXTENT_SHARED | FIEMAP_EXTENT_ENCODED | FIEMAP_EXTENT_DATA_INLINE;

impl Extents {
    /// An empty stage.
    #[cfg(test)]
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// An empty stage that may use the Btrfs tree search.
    pub(crate) fn with_search(search: bool) -> Self {
        Self {
            search,
            trees: can_search_trees(),
            ..Self::default()
        }
    }

    /// The stage summing how the files it reads with the tree search are
    /// stored into `stored`, if any.
    pub(crate) fn storing(self, stored: Option<Arc<StoredSums>>) -> Self {
        Self { stored, ..self }
    }

    /// Adds the items of a file that is not mapped (a symlink, whose
    /// target is inline data), inode `ino` of subvolume `dev` of Btrfs
    /// filesystem `fs`, read by a directory's listing from the tree
    /// (through `dirfd`, a directory of that subvolume), to the sums of
    /// [`Self::storing`].
    pub(crate) fn store_items(
        &self,
        (dirfd, fs, dev): (BorrowedFd<'_>, u32, u64),
        ino: u64,
        items: &[bs::FileExtent],
    ) {
        if let Some(st) = &self.stored
            && let Some(sv) = self.subvol(dirfd, fs, dev)
        {
            st.add(sv.root, ino, items);
        }
    }

    /// The stage with an index that holds up to `budget` bytes of mappings
    /// in memory (default: [`spill::default_budget`]), and spills past it
    /// to a temporary file in `dir` (default: `/tmp`).
    pub(crate) fn spilling(self, budget: Option<u64>, dir: Option<PathBuf>) -> Self {
        let budget = budget.unwrap_or_else(spill::default_budget);
        let dir = dir.unwrap_or_else(|| PathBuf::from("/tmp"));
        Self {
            index: SharedIndex::with_budget(budget, dir),
            ..self
        }
    }

    /// The stage keeping each map FIEMAP reads (`--export`, `--verify`).
    pub(crate) fn saving(self, saving: bool) -> Self {
        Self { saving, ..self }
    }

    /// The extents of the last file this thread mapped with FIEMAP that a
    /// saved map keeps, taken (nothing unless [`Self::saving`]).
    pub(crate) fn take_saved(&self) -> Vec<MapExtent> {
        if !self.saving {
            return Vec::new();
        }
        SAVED.with(|s| std::mem::take(&mut *s.borrow_mut()))
    }

    /// Whether the Btrfs tree search may be used.
    pub(crate) fn search_allowed(&self) -> bool {
        self.search
    }

    /// Whether the process may search Btrfs trees, as root does after the
    /// walk even with `--fiemap`.
    pub(crate) fn trees_readable(&self) -> bool {
        self.trees
    }

    /// Reads the extents of the file open at `fd` from `source`, indexing
    /// its shared ones in extent space `space`.
    #[inline]
    pub(crate) fn read(&self, source: ExtentSource, fd: BorrowedFd<'_>, space: u32) -> FileExtents {
        match source {
            // The tree search reads by directory and inode
            // ([`Self::read_btrfs`]); given an open file, FIEMAP.
            ExtentSource::Fiemap | ExtentSource::BtrfsSearch => self.read_fiemap(fd, space),
        }
    }

    #[inline]
    fn read_fiemap(&self, fd: BorrowedFd<'_>, space: u32) -> FileExtents {
        self.read_fiemap_keeping(fd, space, None)
    }

    /// Reads the extents of the file open at `fd` with FIEMAP, as
    /// [`Self::read`] does, and keeps them in `keep.0` (as FIEMAP gave
    /// them) for the file's other copies ([`super::unchanged`]), unless it
    /// can have none: an extent with an address is not shared, or (unless
    /// `keep.1`) some data is inline; then `keep.0` is left empty, and
    /// nothing is allocated for a file that is no copy.
    #[inline(always)]
    pub(crate) fn read_fiemap_keeping(
        &self,
        fd: BorrowedFd<'_>,
        space: u32,
        mut keep: Option<(&mut Vec<Extent>, bool)>,
    ) -> FileExtents {
        let mut got = FileExtents::default();
        let mut none = false;
        let mut saved = self
            .saving
            .then(|| SAVED.with(|s| std::mem::take(&mut *s.borrow_mut())));
        if let Some(s) = saved.as_mut() {
            s.clear();
        }
        let res = FIEMAP.with(|cell| {
            let mut slot = cell.borrow_mut();
            let fm = slot.get_or_insert_with(Fiemap::new);
            fm.for_each(fd, |e| {
                if let Some(s) = saved.as_mut()
                    && e.flags & SAVED_FLAGS != 0
                {
                    s.push(MapExtent {
                        physical: e.physical,
                        length: e.length,
                        flags: e.flags,
                    });
                }
                if let Some((k, inline_ok)) = keep.as_mut() {
                    let inline = e.flags & FIEMAP_EXTENT_DATA_INLINE != 0;
                    none |= (e.has_physical() && !e.is_shared()) || (inline && !*inline_ok);
                    if !none {
                        k.push(*e);
                    }
                }
                self.take(e, space, &mut got);
            })
        });
        if let (true, Some((k, _))) = (none, keep) {
            k.clear();
        }
        if let Some(s) = saved {
            SAVED.with(|c| *c.borrow_mut() = s);
        }
        match res {
            Ok(calls) => got.calls = calls,
            Err(e) => {
                got.calls = 1;
                got.error = Some(e);
            }
        }
        got
    }

    /// Credits a file with its map saved by an earlier scan (`--since`),
    /// as if FIEMAP had given it: no open, no ioctl; its shared extents
    /// are indexed for an id of its own.
    pub(crate) fn replay_saved(&self, extents: &[MapExtent], space: u32) -> FileExtents {
        let mut got = FileExtents::default();
        for m in extents {
            let e = Extent {
                logical: 0,
                physical: m.physical,
                length: m.length,
                flags: m.flags,
            };
            self.take(&e, space, &mut got);
        }
        got
    }

    /// Credits a file with the extents another copy of it gave
    /// ([`super::unchanged`]), as if FIEMAP had given them: no ioctl is made.
    /// `index`: its shared ones are indexed in `space` for an id of its
    /// own; else it is a copy ([`crate::records::CopyRec`]): no id.
    pub(crate) fn replay(&self, extents: &[Extent], space: u32, index: bool) -> FileExtents {
        let mut got = FileExtents::default();
        for e in extents {
            if index {
                self.take(e, space, &mut got);
            } else {
                got.count(e);
            }
        }
        got
    }

    /// What one extent FIEMAP gave adds to a file, and indexes: an encoded
    /// one (compressed, on Btrfs) from [`super::sweep::ENCODED`] up, where
    /// the sweep ends its range at the next extent's start (FIEMAP gives
    /// the length of its data, not its size on disk).
    fn take(&self, e: &Extent, space: u32, got: &mut FileExtents) {
        got.count(e);
        if e.is_shared() && e.length > 0 {
            let id = self.file_id(got, e.physical);
            let at = if e.flags & FIEMAP_EXTENT_ENCODED != 0 && e.physical < super::sweep::ENCODED {
                e.physical | super::sweep::ENCODED
            } else {
                e.physical
            };
            self.index.insert(space, at, e.length, id);
        }
    }

    /// The copies of Btrfs files mapped so far ([`super::unchanged`]).
    pub(crate) fn copies(&self) -> &MappedCopies {
        &self.copies
    }

    /// A new file id, for a file whose shared data was found after the
    /// walk (see [`super::inline`]).
    pub(crate) fn new_file(&self) -> u32 {
        self.next_file.fetch_add(1, Ordering::Relaxed)
    }

    /// Indexes one more shared range for `file` (see [`super::inline`]).
    pub(crate) fn insert(&self, space: u32, physical: u64, length: u64, file: u32) {
        self.index.insert(space, physical, length, file);
    }

    /// The number of file ids handed out.
    pub(crate) fn files(&self) -> usize {
        self.next_file.load(Ordering::Relaxed) as usize
    }

    /// The refs of the data extent at `bytenr` on filesystem `fs`, if the
    /// tree search read them.
    pub(crate) fn cached_refs(&self, fs: u32, bytenr: u64) -> Option<bs::ExtentRefs> {
        self.btrfs.refs.get(&(fs, bytenr)).map(|r| r.unpack())
    }

    /// A snapshot that holds the extent at `bytenr` of filesystem `fs`, as
    /// the same inode as the file whose one ref it is
    /// ([`Verdict::HeldBy`](super::btrfs_refs::Verdict::HeldBy)).
    pub(crate) fn held_by(&self, fs: u32, bytenr: u64) -> Option<u64> {
        self.btrfs.held_by.get(&(fs, bytenr)).map(|r| *r)
    }

    /// The distinct shared ranges indexed in extent space `space`.
    pub(crate) fn ranges_in(&self, space: u32) -> Vec<(u64, u64)> {
        self.index.ranges_in(space)
    }

    /// The number of distinct shared ranges indexed.
    pub(crate) fn ranges(&self) -> usize {
        self.index.len()
    }

    /// Whether the index failed to spill to its temporary file or to read
    /// it back: nothing it gives is whole, and [`Self::into_sweep`] fails.
    pub(crate) fn spill_failed(&self) -> bool {
        self.index.failed()
    }

    /// Why the index failed to spill or to read back, taken.
    pub(crate) fn spill_error(&self) -> Option<SpillError> {
        self.index.take_error()
    }

    /// Ends the stage: sweeps the index; `granularity(space)` tells how the
    /// filesystem of each extent space frees shared data. Also what the
    /// index wrote to its temporary file.
    ///
    /// # Errors
    /// When the index could not spill, or read back what it spilled.
    pub(crate) fn into_sweep(
        self,
        granularity: impl Fn(u32) -> Granularity,
    ) -> Result<(Sweep, Spilled), SpillError> {
        self.index.try_into_units(granularity)
    }
}

impl Extents {
    /// The extents of the file open at `fd`, whose items the tree search
    /// read (`pending`) but could not decide: FIEMAP's shared flags (the
    /// kernel's own check), applied to the items, so that extents still
    /// count at their size on disk.
    pub(crate) fn read_btrfs_flags(
        &self,
        fd: BorrowedFd<'_>,
        pending: &Pending,
        space: u32,
    ) -> FileExtents {
        let mut got = FileExtents {
            calls: pending.calls,
            ..FileExtents::default()
        };
        let mut mapped: Vec<(u64, u64, bool)> = Vec::new();
        let res = FIEMAP.with(|cell| {
            let mut slot = cell.borrow_mut();
            let fm = slot.get_or_insert_with(Fiemap::new);
            fm.for_each(fd, |e| {
                if e.has_physical() {
                    mapped.push((e.logical, e.logical.saturating_add(e.length), e.is_shared()));
                }
            })
        });
        match res {
            Ok(calls) => got.calls += calls,
            Err(e) => {
                got.calls += 1;
                got.error = Some(e);
                return got;
            }
        }
        // An item takes the flag of the FIEMAP extent its start lies in
        // (one that FIEMAP does not map, say not yet written, is not
        // shared); an extent is shared if any of its items is.
        let mut verdicts: Vec<(u64, bool)> = Vec::new();
        for e in &pending.items.extents {
            if e.kind == FileExtentType::Inline || e.disk_bytenr == 0 {
                continue;
            }
            let shared = mapped
                .iter()
                .any(|m| m.0 <= e.file_offset && e.file_offset < m.1 && m.2);
            match verdicts.iter_mut().find(|v| v.0 == e.disk_bytenr) {
                Some(v) => v.1 |= shared,
                None => verdicts.push((e.disk_bytenr, shared)),
            }
        }
        self.index_items(&pending.items, &verdicts, (space, true), &mut got);
        got
    }

    /// Indexes the shared extents of a file from its items and the
    /// verdicts of its data extents, each at its size on disk: a shared
    /// extent as its whole range on disk, once per reference of the file
    /// ([`btrfs_items::HeldExtent::refs`]); the extents it does not share that
    /// are compressed or that it references in part in
    /// [`FileExtents::on_disk`]. Also what no item references of those it
    /// references in part: its own in [`FileExtents::unreachable`], the
    /// shared ones noted for [`Self::partly_referenced`].
    /// `index`: false for a copy ([`super::unchanged::Indexed`]): no id.
    pub(super) fn index_items(
        &self,
        items: &bs::InodeItems,
        verdicts: &[(u64, bool)],
        (space, index): (u32, bool),
        got: &mut FileExtents,
    ) {
        got.inline |= items
            .extents
            .iter()
            .any(|e| e.kind == FileExtentType::Inline);
        btrfs_items::held(&items.extents, |h| {
            let shared = verdicts
                .iter()
                .find(|v| v.0 == h.bytenr)
                .is_some_and(|v| v.1);
            let unreferenced = h.unreferenced();
            if shared {
                // Any reference keeps all of it allocated: the unit is the
                // extent, and it is freed where all its files lie.
                got.shared_bytes = got.shared_bytes.saturating_add(h.logical);
                if index {
                    let id = self.file_id(got, h.bytenr);
                    for _ in 0..h.refs {
                        self.index.insert(space, h.bytenr, h.disk_bytes, id);
                    }
                    if unreferenced > 0 {
                        self.parts.shared(space, h, id);
                    }
                }
            } else if h.encoded || unreferenced > 0 {
                got.on_disk.0 = got.on_disk.0.saturating_add(h.logical);
                got.on_disk.1 = got.on_disk.1.saturating_add(h.disk_bytes);
                if unreferenced > 0 {
                    got.unreachable = got.unreachable.saturating_add(unreferenced);
                    self.parts.own(unreferenced);
                }
            }
            if h.encoded {
                got.compressed_disk = got.compressed_disk.saturating_add(h.disk_bytes);
            }
        });
    }

    /// After the walk: the extents some file references in part, and the
    /// bytes of them that no file in the scan references. Call it before
    /// [`Self::into_sweep`].
    pub(crate) fn partly_referenced(&self) -> Partly {
        self.parts
            .resolve(|space, start, length| self.index.count(space, start, length))
    }

    /// The file id of `got`, handed out with its first shared extent (at
    /// `physical`, remembered as [`FileExtents::first_shared`]).
    fn file_id(&self, got: &mut FileExtents, physical: u64) -> u32 {
        *got.file.get_or_insert_with(|| {
            got.first_shared = Some(physical);
            self.next_file.fetch_add(1, Ordering::Relaxed)
        })
    }
}
