//! Which other subvolumes hold data a subvolume holds: the first data
//! extents of its tree, each asked who references it
//! ([`super::holders`], `BTRFS_IOC_LOGICAL_INO_V2`). Two subvolumes share
//! a data extent only if one descends from the other, or both from a
//! third, through snapshots: so the holders of a snapshot's extents name
//! its lineage even once the subvolume it was taken of is gone (a deleted
//! intermediate's root item does not outlive the cleaner).
//!
//! Both calls need `CAP_SYS_ADMIN`.

use std::io;
use std::os::fd::BorrowedFd;

use super::backref::holders;
use super::items::{FileExtent, FileExtentType};
use super::search::{key_type, search};

/// The first inode number of a subvolume's files.
const FIRST_FREE: u64 = 256;

/// For each of the first `most` distinct data extents of subvolume `tree`
/// (its `EXTENT_DATA` items in key order, holes and inline data skipped),
/// the other subvolumes that reference it, sorted, each once. `fd`: any
/// file of the filesystem.
///
/// # Errors
/// The tree search's and `LOGICAL_INO`'s: `EPERM` without
/// `CAP_SYS_ADMIN`, `ENOENT` for a tree that does not exist.
pub fn sharing(fd: BorrowedFd<'_>, tree: u64, most: usize) -> io::Result<Vec<Vec<u64>>> {
    let mut extents: Vec<u64> = Vec::new();
    search(
        fd,
        tree,
        (FIRST_FREE, key_type::EXTENT_DATA, 0),
        (u64::MAX, key_type::EXTENT_DATA, u64::MAX),
        64,
        |it| {
            if it.kind == key_type::EXTENT_DATA {
                if let Some(e) = FileExtent::parse(it.transid, it.offset, it.data) {
                    let data = e.kind != FileExtentType::Inline && e.disk_bytenr != 0;
                    if data && !extents.contains(&e.disk_bytenr) {
                        extents.push(e.disk_bytenr);
                    }
                }
            }
            extents.len() < most
        },
    )?;
    let mut all = Vec::with_capacity(extents.len());
    for bytenr in extents {
        let mut roots: Vec<u64> = holders(fd, bytenr)?
            .list
            .into_iter()
            .map(|(root, _)| root)
            .filter(|&r| r != tree)
            .collect();
        roots.dedup();
        all.push(roots);
    }
    Ok(all)
}
