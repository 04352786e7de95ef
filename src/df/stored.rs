//! How the data of the subvolumes a `--df` scan walks is stored, as root on
//! Btrfs (the tree search): what compression saves, each compressed
//! extent once (its uncompressed size less its size on disk), and the
//! file data held inline, in the metadata.

use std::collections::HashSet;
use std::io;
use std::os::fd::BorrowedFd;

use sdu_sys::btrfs::FileExtentType;

/// What the file extent items of some subvolumes say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Stored {
    /// Σ over the compressed extents (each once) of their uncompressed
    /// size less their size on disk.
    pub(crate) saved: u64,
    /// How many compressed extents.
    pub(crate) compressed: u64,
    /// What `st_blocks` counts of the inline extents' data, each once:
    /// their `ram_bytes` rounded up to the sector (Btrfs gives an inline
    /// file that many bytes). The copies of one in the subvolumes of a
    /// snapshot family have the same inode number, size and data
    /// generation (the item is copied whole when a leaf is), and are
    /// counted once, as the scan counts them
    /// (`docs/filesystems.md`, "Inline extents and snapshots").
    pub(crate) inline: u64,
    /// How many inline extents.
    pub(crate) inline_items: u64,
}

/// Reads the file extent items of every subvolume in `trees` through `fd`
/// (any directory of the filesystem), whose sector is `sector` bytes.
///
/// # Errors
/// The tree search's (`EPERM` without `CAP_SYS_ADMIN`).
pub(crate) fn stored(fd: BorrowedFd<'_>, trees: &[u64], sector: u64) -> io::Result<Stored> {
    let mut seen: HashSet<u64> = HashSet::new();
    let mut inline: HashSet<(u64, u64, u64)> = HashSet::new();
    let mut s = Stored::default();
    for &tree in trees {
        sdu_sys::btrfs::data_items(fd, tree, |item| {
            let e = &item.extent;
            match e.kind {
                FileExtentType::Inline
                    if inline.insert((item.ino, item.ram_bytes, item.generation)) =>
                {
                    s.inline += item.ram_bytes.next_multiple_of(sector.max(1));
                    s.inline_items += 1;
                }
                FileExtentType::Regular
                    if e.compression != 0 && e.disk_bytenr != 0 && seen.insert(e.disk_bytenr) =>
                {
                    s.saved += item.ram_bytes.saturating_sub(e.disk_num_bytes);
                    s.compressed += 1;
                }
                _ => {}
            }
        })?;
    }
    Ok(s)
}
