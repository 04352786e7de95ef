//! Every file extent item of one subvolume, read from its tree with the
//! tree search (`CAP_SYS_ADMIN`), with the extent's uncompressed size
//! (`ram_bytes`), which [`FileExtent`] leaves out: what a compressed
//! extent saves is `ram_bytes - disk_num_bytes`, and an inline extent's
//! `ram_bytes` is the file data its item holds in the metadata.
//!
//! # References
//!  - `include/uapi/linux/btrfs_tree.h` (`struct btrfs_file_extent_item`:
//!    `generation` 0, `ram_bytes` 8, then the fields [`FileExtent::parse`]
//!    reads)

use std::io;
use std::os::fd::BorrowedFd;

use super::items::FileExtent;
use super::search::{key_type, search_wide, u64_at};

/// One file extent item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataItem {
    /// The file's inode number.
    pub ino: u64,
    /// The item.
    pub extent: FileExtent,
    /// The extent's size uncompressed (`btrfs_file_extent_item.ram_bytes`):
    /// for an inline extent, the file data it holds.
    pub ram_bytes: u64,
    /// The transaction that wrote the extent's data
    /// (`btrfs_file_extent_item.generation`): kept when a snapshot's
    /// leaf is copied.
    pub generation: u64,
}

/// The first inode number of a subvolume's files (`BTRFS_FIRST_FREE_OBJECTID`).
const FIRST_FREE: u64 = 256;
/// The last (`BTRFS_LAST_FREE_OBJECTID`).
const LAST_FREE: u64 = (-256i64) as u64;

/// Calls `f` on every file extent item of subvolume `tree` (0: the one of
/// `fd`), in key order (an extent referenced by several items comes once
/// per item); returns the ioctl calls made.
///
/// # Errors
/// The tree search's: `EPERM` without `CAP_SYS_ADMIN`, `ENOTTY` off
/// Btrfs, `ENOENT` for a tree that does not exist.
pub fn data_items(fd: BorrowedFd<'_>, tree: u64, mut f: impl FnMut(&DataItem)) -> io::Result<u32> {
    search_wide(
        fd,
        tree,
        (FIRST_FREE, 0, 0),
        (LAST_FREE, u32::from(u8::MAX), u64::MAX),
        4096,
        true,
        0,
        0,
        |item| {
            if item.kind == key_type::EXTENT_DATA
                && let Some(extent) = FileExtent::parse(item.transid, item.offset, item.data)
            {
                f(&DataItem {
                    ino: item.objectid,
                    extent,
                    ram_bytes: u64_at(item.data, 8),
                    generation: u64_at(item.data, 0),
                });
            }
            true
        },
    )
}
