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
//! ([`sdu_sys::btrfs::inode_items`]); a file the batch did not find
//! (gone, or its `d_ino` is not its inode) is searched on its own.

use std::io;
use std::os::fd::BorrowedFd;

use sdu_sys::btrfs::{
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
/// The search's ([`sdu_sys::btrfs::search()`]).
pub(crate) fn inodes_items(
    dirfd: BorrowedFd<'_>,
    inos: &[u64],
    avoid: &[u64],
    leaf: u32,
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
            leaf,
            0,
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
/// without duplicates), as [`sdu_sys::btrfs::extent_refs`] reads each,
/// in a search of the extent tree per run of extents less than
/// [`EXTENT_GAP`] apart (files written together lie together), a run of
/// one as [`one_extent_refs`] reads it. `fd`: any file of the filesystem.
/// Also the calls made.
///
/// # Errors
/// The search's.
pub(crate) fn extents_refs(
    fd: BorrowedFd<'_>,
    bytenrs: &[u64],
    leaf: u32,
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
        if lo == hi {
            let (refs, c) = one_extent_refs(fd, lo, leaf)?;
            calls += c;
            got.extend(refs.map(|r| (lo, r)));
            continue;
        }
        calls += search_wide(
            fd,
            EXTENT_TREE_OBJECTID,
            (lo, key_type::EXTENT_ITEM, 0),
            (hi, key_type::SHARED_DATA_REF, u64::MAX),
            4096,
            true,
            leaf,
            0,
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

/// The extent item at `bytenr` and its refs, as [`extents_refs`] reads a
/// run of one (`None`: no extent item there), and the calls made. The
/// kernel reads a leaf to its end for a search that has not found as many
/// items as it asked for: for a run of one, the rest of an extent tree
/// leaf (some 200 extent items in 16 KiB) read for one item. So the
/// extent item is asked for alone, and its keyed refs only if its inline
/// refs do not count all its references.
fn one_extent_refs(
    fd: BorrowedFd<'_>,
    bytenr: u64,
    leaf: u32,
) -> io::Result<(Option<ExtentRefs>, u32)> {
    let (mut refs, mut item) = (ExtentRefs::default(), false);
    let max = (bytenr, key_type::SHARED_DATA_REF, u64::MAX);
    let mut calls = search_wide(
        fd,
        EXTENT_TREE_OBJECTID,
        (bytenr, key_type::EXTENT_ITEM, 0),
        max,
        1,
        false,
        leaf,
        0,
        |it| {
            if it.objectid == bytenr && it.kind == key_type::EXTENT_ITEM {
                item = true;
                refs.add(it.kind, it.offset, it.data);
            }
            false
        },
    )?;
    if !item {
        return Ok((None, calls));
    }
    if !refs.found || refs.unknown || refs.counted() != refs.refs {
        let keyed = (bytenr, key_type::EXTENT_ITEM + 1, 0);
        calls += search_wide(
            fd,
            EXTENT_TREE_OBJECTID,
            keyed,
            max,
            4096,
            false,
            leaf,
            0,
            |it| {
                refs.add(it.kind, it.offset, it.data);
                true
            },
        )?;
    }
    Ok((Some(refs), calls))
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::fs;
    use std::os::fd::{AsFd, OwnedFd};
    use std::path::Path;

    use crate::extents::test_files::{LoopBtrfs, clone_file, noise, write_synced};
    use sdu_sys::btrfs::extent_refs;
    use sdu_sys::fiemap::Fiemap;

    fn open(p: &Path) -> OwnedFd {
        OwnedFd::from(fs::File::open(p).unwrap())
    }

    fn first_extent(p: &Path) -> u64 {
        let mut out = None;
        Fiemap::new()
            .for_each(open(p).as_fd(), |e| {
                out = out.or(Some(e.physical));
            })
            .unwrap();
        out.unwrap()
    }

    /// As root on a loopback Btrfs: an extent read alone (a run of one)
    /// gives the refs that the search of that extent gives, keyed refs
    /// included, and so does a run of two: one extent of a file cloned
    /// into 40 others (more refs than its extent item holds inline), one
    /// of a file alone (its one ref inline), and an address where no
    /// extent starts.
    #[test]
    fn a_run_of_one_extent_reads_its_keyed_refs_too() {
        let Some(fs) = LoopBtrfs::new(1) else {
            return;
        };
        let m = fs.mnt.as_path();
        write_synced(&m.join("shared"), &noise(64 << 10, 1));
        for i in 0..40 {
            clone_file(&m.join("shared"), &m.join(format!("c{i}")));
        }
        write_synced(&m.join("alone"), &noise(64 << 10, 2));
        sdu_sys::btrfs::commit(open(m).as_fd()).unwrap();
        let (shared, alone) = (
            first_extent(&m.join("shared")),
            first_extent(&m.join("alone")),
        );
        let fd = open(m);
        let (one, _) = extents_refs(fd.as_fd(), &[shared], 0).unwrap();
        let want = extent_refs(fd.as_fd(), shared).unwrap();
        assert_eq!(want.refs, 41);
        assert!(want.counted() == 41 && want.list.len() == 41, "{want:?}");
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].1, want);
        let (one, _) = extents_refs(fd.as_fd(), &[alone], 0).unwrap();
        assert_eq!(one[0].1, extent_refs(fd.as_fd(), alone).unwrap());
        assert_eq!(one[0].1.refs, 1);
        // Both in one run of two (a gap past EXTENT_GAP splits them: then
        // two runs of one); the same refs either way.
        let mut both = [shared, alone];
        both.sort_unstable();
        let (two, _) = extents_refs(fd.as_fd(), &both, 0).unwrap();
        assert_eq!(two.len(), 2);
        for (b, r) in &two {
            assert_eq!(*r, extent_refs(fd.as_fd(), *b).unwrap());
        }
        let (none, _) = extents_refs(fd.as_fd(), &[shared + 4096], 0).unwrap();
        assert!(none.is_empty(), "{none:?}");
    }

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
