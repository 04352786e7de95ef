use super::*;

use std::fs;
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt as _;
use std::process::Command;

use crate::extents::test_files::{LoopBtrfs, noise, sh, write_synced};

/// On a loopback Btrfs, as root: a directory read in one range keeps
/// every inode the range covers under the bound, and past it only the
/// files asked for; a subdirectory asked for is left for its own read,
/// which finds its entries; and every inode kept is counted out again
/// when taken.
#[test]
fn past_the_bound_a_range_keeps_the_files_asked_for_on_btrfs() {
    let Some(fs) = LoopBtrfs::new(1) else {
        return;
    };
    let d = fs.mnt.join("d");
    fs::create_dir(&d).unwrap();
    for i in 0..6 {
        write_synced(&d.join(format!("f{i}")), &noise(8192, i + 1));
    }
    fs::create_dir(d.join("sub")).unwrap();
    for name in ["x", "y"] {
        write_synced(&d.join("sub").join(name), &noise(8192, 9));
    }
    sh(Command::new("btrfs")
        .args(["filesystem", "sync"])
        .arg(&fs.mnt))
    .unwrap();
    let ino = |name: &str| fs::symlink_metadata(d.join(name)).unwrap().ino();
    let (f0, f3, sub) = (ino("f0"), ino("f3"), ino("sub"));
    let dev = fs::metadata(&fs.mnt).unwrap().dev();
    let root = fs::File::open(&fs.mnt).unwrap();
    let leaf = sdu_sys::btrfs::nodesize(root.as_fd()).unwrap();
    let (lo, hi) = (fs::metadata(&d).unwrap().ino(), ino("sub/y"));
    let mut want = vec![f0, sub];
    want.sort_unstable();

    let read = |cache: &TreeCache, mine: Option<&mut Vec<_>>| {
        let range = (lo, hi);
        let (bytenrs, _) = cache
            .read_range(
                (root.as_fd(), leaf),
                (0, dev),
                range,
                Want::Entries(&want),
                mine,
                &|| None,
            )
            .unwrap();
        bytenrs
    };

    // Under the bound: every inode of the range.
    let open = TreeCache::default();
    read(&open, None);
    assert!(
        [f0, f3, sub, ino("sub/x")]
            .iter()
            .all(|&i| open.has(dev, i))
    );

    // With the task's own list: the file asked for goes there, not to
    // the map; the subdirectory and the rest wait in the map.
    let shared = TreeCache::default();
    let mut mine = Vec::new();
    read(&shared, Some(&mut mine));
    assert_eq!(mine.iter().map(|m| m.0).collect::<Vec<_>>(), [f0]);
    assert_eq!(mine[0].1.as_ref().map(|t| t.item.size), Some(8192));
    assert!(!shared.has(dev, f0), "a file asked for in the map");
    assert!(shared.has(dev, sub) && shared.has(dev, f3));

    // Past it (a bound of nothing): the file asked for, and no more.
    let tight = TreeCache {
        bound: 0,
        ..TreeCache::default()
    };
    let bytenrs = read(&tight, None);
    assert!(tight.has(dev, f0));
    assert!(!tight.has(dev, f3), "not asked for");
    assert!(
        !tight.has(dev, sub),
        "a subdirectory waits for its own read"
    );
    assert_eq!(
        bytenrs.len(),
        1,
        "refs read for what is kept only: {bytenrs:?}"
    );
    let t = tight.take(dev, f0).unwrap();
    assert_eq!(t.item.size, 8192);
    assert_eq!(t.extents.len(), 1);
    // The subdirectory's own read keeps it, with its entries.
    tight
        .read((root.as_fd(), leaf), (0, dev), &[sub], &|| None)
        .unwrap();
    let s = tight.take(dev, sub).unwrap();
    let mut names: Vec<&[u8]> = s.entries().iter().map(|e| s.name(e)).collect();
    names.sort_unstable();
    assert_eq!(names, [&b"x\0"[..], b"y\0"]);
    assert_eq!(
        tight.held.load(Ordering::Relaxed),
        0,
        "all taken, none counted"
    );
}

/// On a loopback Btrfs, as root: a range whose items fill the search's
/// buffer (files with 12,000-byte xattrs, five to a 64 KiB buffer) is
/// read whole when the search knows the node size and ends a call that
/// left room for any item; a file alone takes one call, not two.
#[test]
fn a_search_that_knows_the_node_size_still_reads_a_full_buffer() {
    let Some(fs) = LoopBtrfs::new(1) else {
        return;
    };
    let d = fs.mnt.join("d");
    fs::create_dir(&d).unwrap();
    let big = noise(12_000, 7);
    for i in 0..41 {
        let p = d.join(format!("f{i}"));
        write_synced(&p, &noise(8192, i + 1));
        rustix::fs::setxattr(&p, c"user.big", &big, rustix::fs::XattrFlags::empty()).unwrap();
    }
    sh(Command::new("btrfs")
        .args(["filesystem", "sync"])
        .arg(&fs.mnt))
    .unwrap();
    let mut inos: Vec<u64> = (0..41)
        .map(|i| fs::metadata(d.join(format!("f{i}"))).unwrap().ino())
        .collect();
    inos.sort_unstable();
    let dev = fs::metadata(&fs.mnt).unwrap().dev();
    let root = fs::File::open(&fs.mnt).unwrap();
    let leaf = sdu_sys::btrfs::nodesize(root.as_fd()).unwrap();
    assert!(leaf >= 4096, "{leaf}");
    let read = |leaf: u32, inos: &[u64]| {
        let cache = TreeCache::default();
        let (lo, hi) = (inos[0], inos[inos.len() - 1]);
        let (_, calls) = cache
            .read_range(
                (root.as_fd(), leaf),
                (0, dev),
                (lo, hi),
                Want::Now(inos),
                None,
                &|| None,
            )
            .unwrap();
        let got: Vec<_> = inos
            .iter()
            .map(|&i| cache.take(dev, i).map(|t| (t.item.size, t.extents.len())))
            .collect();
        (got, calls)
    };
    let (known, calls_known) = read(leaf, &inos);
    let (unknown, calls_unknown) = read(0, &inos);
    assert!(known.iter().all(|g| *g == Some((8192, 1))), "{known:?}");
    assert_eq!(known, unknown);
    assert!(calls_known >= 8, "five files a call: {calls_known}");
    assert!(
        calls_known <= calls_unknown,
        "{calls_known} {calls_unknown}"
    );
    let (one, calls_one) = read(leaf, &inos[..1]);
    assert_eq!(one, vec![Some((8192, 1))]);
    assert_eq!((calls_one, read(0, &inos[..1]).1), (1, 2));
}

#[test]
fn runs_cut_at_gaps() {
    assert_eq!(runs(&[]), vec![]);
    assert_eq!(runs(&[5, 6, 69, 200]), vec![(5, 69), (200, 200)]);
    let many: Vec<u64> = (10..10 + 2 * RUN_MAX as u64 + 1).collect();
    let r = RUN_MAX as u64;
    assert_eq!(
        runs(&many),
        vec![(10, 9 + r), (10 + r, 9 + 2 * r), (10 + 2 * r, 10 + 2 * r)]
    );
}

#[test]
fn past_the_bound_only_the_files_a_task_takes_are_kept() {
    let of = |mode: u32, nlink: u32| InodeItem {
        mode,
        nlink,
        ..InodeItem::default()
    };
    let (file, linked, dir) = (of(0o100644, 1), of(0o100644, 2), of(0o040755, 2));
    let entries = Want::Entries(&[3, 5, 8]);
    assert!(entries.keeps(5, &file));
    assert!(!entries.keeps(4, &file), "not asked for");
    assert!(!entries.keeps(5, &linked), "met again elsewhere, maybe");
    assert!(!entries.keeps(8, &dir), "its own task reads it");
    let now = Want::Now(&[8]);
    assert!(now.keeps(8, &dir));
    assert!(!now.keeps(5, &file));
}

#[test]
fn inode_and_dir_items_parse() {
    let mut d = vec![0u8; INODE_ITEM_LEN];
    d[0..8].copy_from_slice(&7u64.to_le_bytes());
    d[16..24].copy_from_slice(&900u64.to_le_bytes());
    d[24..32].copy_from_slice(&4096u64.to_le_bytes());
    d[40..44].copy_from_slice(&2u32.to_le_bytes());
    d[52..56].copy_from_slice(&0o100644u32.to_le_bytes());
    // atime, ctime, mtime, otime: seconds, then nanoseconds.
    for (i, at) in [112, 124, 136, 148].into_iter().enumerate() {
        d[at..at + 8].copy_from_slice(&(1_700_000_000 + i as u64).to_le_bytes());
        d[at + 8..at + 12].copy_from_slice(&(120 + i as u32).to_le_bytes());
    }
    let it = InodeItem::parse(&d).unwrap();
    assert_eq!((it.size, it.nbytes, it.nlink), (900, 4096, 2));
    assert_eq!(it.mode, 0o100644);
    assert_eq!(
        it.secs,
        [1_700_000_000, 1_700_000_001, 1_700_000_002, 1_700_000_003]
    );
    assert_eq!(it.nsecs, [120, 121, 122, 123]);
    assert!(InodeItem::parse(&d[..159]).is_none());

    let mut e = vec![0u8; DIR_ITEM_LEN];
    e[0..8].copy_from_slice(&300u64.to_le_bytes());
    e[8] = 1;
    e[27..29].copy_from_slice(&3u16.to_le_bytes());
    e[29] = file_type::REG_FILE;
    e.extend_from_slice(b"abc");
    let mut b = Building::default();
    b.add_entry(&e);
    e[8] = key_type::ROOT_ITEM as u8;
    b.add_entry(&e);
    let t = b.built();
    assert!(!t.broken);
    assert_eq!(t.entries().len(), 2);
    assert_eq!((t.entries()[0].child, t.entries()[0].subvol), (300, false));
    assert!(t.entries()[1].subvol);
    assert_eq!(t.name(&t.entries()[1]), b"abc\0");
    // A name longer than the item is broken, and so is a name with a
    // slash.
    e[27..29].copy_from_slice(&9u16.to_le_bytes());
    b.add_entry(&e);
    assert!(b.built().broken);
    b.start(301, InodeItem::parse(&d));
    assert!(!b.broken && b.entries.is_empty() && b.names.is_empty());
    e[27..29].copy_from_slice(&3u16.to_le_bytes());
    e[30..33].copy_from_slice(b"a/b");
    b.add_entry(&e);
    assert!(b.built().broken);
    // 255 bytes is a name; 256 is not (`BTRFS_NAME_LEN`).
    for (len, broken) in [(255u16, false), (256, true)] {
        b.start(302, InodeItem::parse(&d));
        e.truncate(DIR_ITEM_LEN);
        e[27..29].copy_from_slice(&len.to_le_bytes());
        e.resize(DIR_ITEM_LEN + usize::from(len), b'n');
        b.add_entry(&e);
        let t = b.built();
        assert_eq!(t.broken, broken, "{len}");
        if !broken {
            assert_eq!(t.name(&t.entries()[0]).len(), 256);
        }
    }
}
