//! As root on Btrfs: the items of a directory's files in a few tree
//! searches, instead of one (or two) per file.
//!
//! A subvolume's tree keys every item by inode number first, so the items
//! of inodes `a..=b` are one range of keys: one search from `(a,
//! INODE_ITEM, 0)` to `(b, EXTENT_DATA, max)` returns the inode item and the
//! extent items of each (and their refs and xattrs, which are skipped).
//! Files created together have neighbouring numbers (a copy, an unpacked
//! archive, an installed package), so a directory's regular files fall into
//! few runs. The inode numbers come from `getdents` (`d_ino`) before any
//! file is stat-ed; runs are cut where two numbers lie more than [`GAP`]
//! apart, and at the directory's own subdirectories, whose entries would
//! come along, so that a search never reads much beyond what it wants.
//! Each item read is then what the per-file search reads
//! ([`super::btrfs_search::inode_items`]); a file the batch did not find
//! (gone, or its `d_ino` is not its inode) is searched on its own.

use std::io;
use std::os::fd::BorrowedFd;

use super::btrfs_search::{
    EXTENT_TREE_OBJECTID, ExtentRefs, FileExtent, InodeItems, key_type, search_wide,
};

/// The widest gap between two inode numbers searched as one range: the
/// inodes between belong to other directories, and their items are read
/// for nothing.
pub(crate) const GAP: u64 = 8;

/// The widest gap, in bytes, between two data extents whose refs are read
/// in one search of the extent tree: the extents between are other
/// files', each about 100 bytes of items read for nothing.
pub(crate) const EXTENT_GAP: u64 = 256 << 10;

/// The runs of `inos` (sorted, without duplicates) to search as ranges:
/// cut where two lie more than [`GAP`] apart, or where an inode of `avoid`
/// (sorted) lies between them.
pub(crate) fn runs(inos: &[u64], avoid: &[u64]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for &i in inos {
        match out.last_mut() {
            Some(r)
                if i - r.1 <= GAP && {
                    // The first subdirectory above the run's end, if any.
                    let k = avoid.partition_point(|&a| a <= r.1);
                    avoid.get(k).is_none_or(|&a| a > i)
                } =>
            {
                r.1 = i;
            }
            _ => out.push((i, i)),
        }
    }
    out
}

/// The items of the inodes `inos` (sorted, without duplicates) in the
/// subvolume of `dirfd`, searched by [`runs`]: for each inode whose inode
/// item was found, its extent items in file order
/// (`calls` 0: the calls made are returned once, with the list). An inode
/// with an item that does not parse is left out (its own search reports
/// it).
///
/// # Errors
/// The search's ([`super::btrfs_search::search`]).
pub(crate) fn inodes_items(
    dirfd: BorrowedFd<'_>,
    inos: &[u64],
    avoid: &[u64],
) -> io::Result<(Vec<(u64, InodeItems)>, u32)> {
    let mut got: Vec<(u64, InodeItems)> = Vec::with_capacity(inos.len());
    let mut broken: Vec<u64> = Vec::new();
    let mut calls = 0u32;
    for (lo, hi) in runs(inos, avoid) {
        calls += search_wide(
            dirfd,
            0,
            (lo, key_type::INODE_ITEM, 0),
            (hi, key_type::EXTENT_DATA, u64::MAX),
            4096,
            true,
            |it| {
                match it.kind {
                    key_type::INODE_ITEM if inos.binary_search(&it.objectid).is_ok() => {
                        got.push((
                            it.objectid,
                            InodeItems {
                                found: true,
                                ..InodeItems::default()
                            },
                        ));
                    }
                    key_type::EXTENT_DATA => match got.last_mut() {
                        Some((ino, items)) if *ino == it.objectid => {
                            match FileExtent::parse(it.transid, it.offset, it.data) {
                                Some(e) => items.extents.push(e),
                                None => broken.push(it.objectid),
                            }
                        }
                        _ => {}
                    },
                    _ => {}
                }
                true
            },
        )?;
    }
    if !broken.is_empty() {
        got.retain(|(ino, _)| !broken.contains(ino));
    }
    Ok((got, calls))
}

/// The extent items and refs of the data extents at `bytenrs` (sorted,
/// without duplicates), as [`super::btrfs_search::extent_refs`] reads each,
/// in a search of the extent tree per run of extents less than
/// [`EXTENT_GAP`] apart (files written together lie together). `fd`: any
/// file of the filesystem. Also the calls made.
///
/// # Errors
/// The search's.
pub(crate) fn extents_refs(
    fd: BorrowedFd<'_>,
    bytenrs: &[u64],
) -> io::Result<(Vec<(u64, ExtentRefs)>, u32)> {
    let mut got: Vec<(u64, ExtentRefs)> = Vec::with_capacity(bytenrs.len());
    let mut calls = 0u32;
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for &b in bytenrs {
        match runs.last_mut() {
            Some(r) if b - r.1 <= EXTENT_GAP => r.1 = b,
            _ => runs.push((b, b)),
        }
    }
    for (lo, hi) in runs {
        calls += search_wide(
            fd,
            EXTENT_TREE_OBJECTID,
            (lo, key_type::EXTENT_ITEM, 0),
            (hi, key_type::SHARED_DATA_REF, u64::MAX),
            4096,
            true,
            |it| {
                // Only the keys the search of one extent reads (a block
                // group item can share its first extent's objectid).
                if !(key_type::EXTENT_ITEM..=key_type::SHARED_DATA_REF).contains(&it.kind) {
                    return true;
                }
                if it.kind == key_type::EXTENT_ITEM && bytenrs.binary_search(&it.objectid).is_ok() {
                    got.push((it.objectid, ExtentRefs::default()));
                }
                if let Some((b, refs)) = got.last_mut() {
                    if *b == it.objectid {
                        refs.add(it.kind, it.offset, it.data);
                    }
                }
                true
            },
        )?;
    }
    Ok((got, calls))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_cut_at_gaps_and_subdirectories() {
        assert_eq!(runs(&[], &[]), vec![]);
        assert_eq!(runs(&[5], &[]), vec![(5, 5)]);
        assert_eq!(runs(&[5, 6, 7, 15, 16], &[]), vec![(5, 16)]);
        assert_eq!(runs(&[5, 6, 7, 16, 17], &[]), vec![(5, 7), (16, 17)]);
        // A subdirectory between two files cuts the run; one outside does
        // not.
        assert_eq!(runs(&[5, 6, 9, 10], &[8]), vec![(5, 6), (9, 10)]);
        assert_eq!(runs(&[5, 6, 9, 10], &[2, 11, 40]), vec![(5, 10)]);
    }
}
