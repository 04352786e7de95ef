//! What mapping one file gives ([`FileExtents`]), and what the tree
//! search needs to know of a file ([`SearchFile`]).

use std::io;

use sdu_sys::fiemap::{Extent, FIEMAP_EXTENT_DATA_INLINE, FIEMAP_EXTENT_ENCODED};

/// What reading one file's extents gave.
#[derive(Debug, Default)]
pub(crate) struct FileExtents {
    /// Σ of the lengths of its extents that are shared (as indexed).
    pub(crate) shared_bytes: u64,
    /// Its file id in the index, when some extent was shared.
    pub(crate) file: Option<u32>,
    /// The file it is a copy of ([`crate::records::CopyRec`]), if so.
    pub(crate) copy_of: Option<u32>,
    /// The ioctl calls made.
    pub(crate) calls: u32,
    /// The error that ended the map early, if any: the extents indexed
    /// before it stand.
    pub(crate) error: Option<io::Error>,
    /// Some of its data is inline (in the metadata, no disk address).
    pub(crate) inline: bool,
    /// The physical address of its first shared extent.
    pub(crate) first_shared: Option<u64>,
    /// Σ of the lengths of its encoded (on Btrfs: compressed) extents, as
    /// counted: their logical length when FIEMAP read them, which is more
    /// than they take on disk.
    pub(crate) encoded: u64,
    /// Of those, the ones not flagged shared: counted in its exclusive
    /// bytes, above what they take on disk.
    pub(crate) encoded_own: u64,
    /// The tree search counts extents at their size on disk: of those not
    /// shared that are compressed or that the file references in part,
    /// their logical bytes (in `st_blocks`) and their bytes on disk (each
    /// extent once). (0, 0) from FIEMAP.
    pub(crate) on_disk: (u64, u64),
    /// The tree search: of the uncompressed extents the file alone
    /// references, the bytes on disk that none of its items references
    /// (what rewriting the file, or `btrfs filesystem defragment`, would
    /// give back). Part of `on_disk.1`. 0 from FIEMAP.
    pub(crate) unreachable: u64,
    /// The tree search: the bytes on disk of all its compressed extents.
    pub(crate) compressed_disk: u64,
}

impl FileExtents {
    /// What one extent FIEMAP gave adds to a file, but its index entry.
    pub(super) fn count(&mut self, e: &Extent) {
        if e.flags & FIEMAP_EXTENT_DATA_INLINE != 0 {
            self.inline = true;
        } else if e.flags & FIEMAP_EXTENT_ENCODED != 0 && e.has_physical() {
            self.encoded = self.encoded.saturating_add(e.length);
            if !e.is_shared() {
                self.encoded_own = self.encoded_own.saturating_add(e.length);
            }
        }
        if e.is_shared() && e.length > 0 {
            self.shared_bytes = self.shared_bytes.saturating_add(e.length);
        }
    }
}

/// A regular file on Btrfs for [`super::Extents::read_btrfs`]: what `statx` said
/// of it, and the keys its extents go under.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SearchFile {
    /// Its inode number.
    pub(crate) ino: u64,
    /// Its device (its subvolume).
    pub(crate) dev: u64,
    /// Its allocated bytes (`st_blocks × 512`).
    pub(crate) allocated: u64,
    /// Its size.
    pub(crate) size: u64,
    /// Its links.
    pub(crate) nlink: u32,
    /// Its filesystem (registry index).
    pub(crate) fs: u32,
    /// The extent space its shared extents are indexed in.
    pub(crate) space: u32,
    /// Whether it may be a copy of a file indexed before, and whether it
    /// is kept for its own copies ([`super::unchanged::Indexed`]).
    pub(crate) copy: (bool, bool),
}
