//! The seam through which the walk asks "what are this file's extents?",
//! and the stage state that collects the answers.
//!
//! The walk opens a file (by its own rules, `crate::walk`'s open module) and
//! hands the fd to [`Extents::read`] with the [`Source`] chosen for its
//! filesystem. Every source reports the same thing: the file's shared
//! physical ranges, indexed under the file's id, and their byte count. FIEMAP
//! is the only source today; a Btrfs tree-search source (root, no open per
//! file) or an XFS GETFSMAP sweep add a variant here and nothing in the walk
//! or the tree changes. An enum rather than a trait object: the call is made
//! once per file on the hot path, and the set of sources is closed.

use std::cell::RefCell;
use std::io;
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicU32, Ordering};

use super::fiemap::{FIEMAP_EXTENT_DATA_INLINE, FIEMAP_EXTENT_ENCODED, Fiemap};
use super::index::SharedIndex;
use super::sweep::Sweep;
use crate::probe::{FsInfo, Granularity};

/// Where a file's extents come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `FS_IOC_FIEMAP` on the open file: unprivileged, any filesystem.
    Fiemap,
}

impl Source {
    /// The source for files on `fs`.
    pub fn for_fs(_fs: &FsInfo) -> Source {
        Source::Fiemap
    }
}

/// What reading one file's extents gave.
#[derive(Debug, Default)]
pub struct FileExtents {
    /// Σ of the lengths of its extents that are shared (as indexed).
    pub shared_bytes: u64,
    /// Its file id in the index, when some extent was shared.
    pub file: Option<u32>,
    /// The ioctl calls made.
    pub calls: u32,
    /// The error that ended the map early, if any: the extents indexed
    /// before it stand.
    pub error: Option<io::Error>,
    /// Some of its data is inline (in the metadata, no disk address).
    pub inline: bool,
    /// Σ of the lengths of its encoded (on Btrfs: compressed) extents, as
    /// counted: their logical length when FIEMAP read them, which is more
    /// than they take on disk.
    pub encoded: u64,
}

thread_local! {
    /// One FIEMAP buffer per thread, allocated on first use.
    static FIEMAP: RefCell<Option<Fiemap>> = const { RefCell::new(None) };
}

/// The extents stage during a walk: the index of shared ranges and the
/// file ids it knows files by.
#[derive(Debug, Default)]
pub struct Extents {
    index: SharedIndex,
    next_file: AtomicU32,
}

impl Extents {
    /// An empty stage.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads the extents of the file open at `fd` from `source`, indexing
    /// its shared ones in extent space `space`.
    pub fn read(&self, source: Source, fd: BorrowedFd<'_>, space: u32) -> FileExtents {
        match source {
            Source::Fiemap => self.read_fiemap(fd, space),
        }
    }

    fn read_fiemap(&self, fd: BorrowedFd<'_>, space: u32) -> FileExtents {
        let mut got = FileExtents::default();
        let res = FIEMAP.with(|cell| {
            let mut slot = cell.borrow_mut();
            let fm = slot.get_or_insert_with(Fiemap::new);
            fm.for_each(fd, |e| {
                if e.flags & FIEMAP_EXTENT_DATA_INLINE != 0 {
                    got.inline = true;
                } else if e.flags & FIEMAP_EXTENT_ENCODED != 0 && e.has_physical() {
                    got.encoded = got.encoded.saturating_add(e.length);
                }
                if e.is_shared() && e.length > 0 {
                    let id = *got
                        .file
                        .get_or_insert_with(|| self.next_file.fetch_add(1, Ordering::Relaxed));
                    self.index.insert(space, e.physical, e.length, id);
                    got.shared_bytes = got.shared_bytes.saturating_add(e.length);
                }
            })
        });
        match res {
            Ok(calls) => got.calls = calls,
            Err(e) => {
                got.calls = 1;
                got.error = Some(e);
            }
        }
        got
    }

    /// A new file id, for a file whose shared data was found after the
    /// walk (see [`super::inline`]).
    pub fn new_file(&self) -> u32 {
        self.next_file.fetch_add(1, Ordering::Relaxed)
    }

    /// Indexes one more shared range for `file` (see [`super::inline`]).
    pub fn insert(&self, space: u32, physical: u64, length: u64, file: u32) {
        self.index.insert(space, physical, length, file);
    }

    /// The number of file ids handed out.
    pub fn files(&self) -> usize {
        self.next_file.load(Ordering::Relaxed) as usize
    }

    /// The number of distinct shared ranges indexed.
    pub fn ranges(&self) -> usize {
        self.index.len()
    }

    /// Ends the stage: sweeps the index; `granularity(space)` tells how the
    /// filesystem of each extent space frees shared data.
    pub fn into_sweep(self, granularity: impl Fn(u32) -> Granularity) -> Sweep {
        self.index.into_units(granularity)
    }
}
