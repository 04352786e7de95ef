//! `holders` (LOGICAL_INO_V2) on a loopback Btrfs (root), checked
//! against `btrfs inspect-internal logical-resolve`.

mod common;

use std::collections::BTreeSet;
use std::fs;
use std::io::{self, Write as _};
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use common::{LoopBtrfs, noise, sh, write_synced};
use sdu_sys::btrfs::{self as btrfs_search, available, holders};
use sdu_sys::fiemap::Fiemap;

fn btrfs(args: &[&str], path: &Path) -> String {
    sh(Command::new("btrfs").args(args).arg(path)).unwrap()
}

fn open(p: &Path) -> fs::File {
    fs::File::open(p).unwrap()
}

/// The start of each data extent of `p` (FIEMAP's physical address,
/// which on Btrfs is the logical address of the data).
fn extents_of(p: &Path) -> Vec<u64> {
    let mut out = Vec::new();
    Fiemap::new()
        .for_each(open(p).as_fd(), |e| {
            assert!(e.has_physical(), "{}: {e:?}", p.display());
            out.push(e.physical);
        })
        .unwrap();
    out
}

/// What `btrfs inspect-internal logical-resolve -P -o -s 16777216`
/// says of `addr`: its `inode N offset O root R` lines, as (root,
/// inode), deduplicated and sorted.
fn logical_resolve(mnt: &Path, addr: u64) -> Vec<(u64, u64)> {
    let args = ["inspect-internal", "logical-resolve", "-P", "-o", "-s"];
    let out = sh(Command::new("btrfs")
        .args(args)
        .arg((16u32 << 20).to_string())
        .arg(addr.to_string())
        .arg(mnt))
    .unwrap();
    let set: BTreeSet<(u64, u64)> = out
        .lines()
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            assert!(
                w.len() == 6 && w[0] == "inode" && w[2] == "offset" && w[4] == "root",
                "{l}"
            );
            (w[5].parse().unwrap(), w[1].parse().unwrap())
        })
        .collect();
    set.into_iter().collect()
}

fn id(p: &Path) -> u64 {
    btrfs_search::subvol_id(open(p).as_fd()).unwrap()
}

#[test]
fn holders_are_every_subvolume_and_inode_through_shared_blocks() {
    let Some(fs) = LoopBtrfs::new(1) else {
        return;
    };
    let m = fs.mnt.as_path();
    let top = open(m);
    assert!(available(top.as_fd()));
    let vol = m.join("vol");
    btrfs(&["subvolume", "create"], &vol);
    write_synced(&vol.join("f"), &noise(4 << 20, 1));
    // Compressed: its extents are addressed as any other.
    let z = vol.join("z");
    fs::File::create(&z).unwrap();
    sh(Command::new("btrfs")
        .args(["property", "set"])
        .arg(&z)
        .args(["compression", "zstd"]))
    .unwrap();
    write_synced(&z, &b"compressible ".repeat(40_000));
    let sub = vol.join("sub");
    btrfs(&["subvolume", "create"], &sub);
    write_synced(&sub.join("h"), &noise(1 << 20, 2));
    // One extent referenced by 3,000 files: more than the first buffer
    // holds.
    let many = m.join("many");
    fs::create_dir(&many).unwrap();
    write_synced(&many.join("src"), &noise(4096, 3));
    let src = open(&many.join("src"));
    for i in 0..2999 {
        let dst = fs::File::create(many.join(i.to_string())).unwrap();
        rustix::fs::ioctl_ficlone(&dst, &src).unwrap();
    }
    btrfs_search::commit(top.as_fd()).unwrap();
    fs::create_dir(m.join("snaps")).unwrap();
    for s in ["s1", "s2"] {
        sh(Command::new("btrfs")
            .args(["subvolume", "snapshot", "-r"])
            .arg(&vol)
            .arg(m.join("snaps").join(s)))
        .unwrap();
    }
    // A reflink copy made after the snapshots: the subvolume's alone.
    sh(Command::new("cp")
        .arg("--reflink=always")
        .arg(vol.join("f"))
        .arg(vol.join("g")))
    .unwrap();
    btrfs_search::commit(top.as_fd()).unwrap();

    let (v, s1, s2, sv) = (
        id(&vol),
        id(&m.join("snaps/s1")),
        id(&m.join("snaps/s2")),
        id(&sub),
    );
    let ino = |p: &str| fs::metadata(vol.join(p)).unwrap().ino();
    let (f, g) = (ino("f"), ino("g"));
    let mut want = vec![(v, f), (s1, f), (s2, f), (v, g)];
    want.sort_unstable();
    let fx = extents_of(&vol.join("f"));
    assert!(!fx.is_empty());
    // FIEMAP's addresses are the extent items' disk_bytenr.
    let items = btrfs_search::inode_items(open(&vol).as_fd(), f, 4 << 20, 4 << 20, 1).unwrap();
    let starts: Vec<u64> = items.extents.iter().map(|e| e.disk_bytenr).collect();
    assert_eq!(starts, fx);
    for &a in &fx {
        let h = holders(top.as_fd(), a).unwrap();
        assert!(!h.truncated);
        assert_eq!(h.list, want, "extent at {a}");
        assert_eq!(logical_resolve(m, a), want, "extent at {a}");
        // Any address inside the extent gives the same.
        assert_eq!(holders(top.as_fd(), a + 4096).unwrap().list, want);
    }
    let z = ino("z");
    let zx = extents_of(&vol.join("z"));
    assert!(zx.len() > 1, "{zx:?}");
    for a in zx {
        let h = holders(top.as_fd(), a).unwrap();
        assert_eq!(h.list, vec![(v, z), (s1, z), (s2, z)], "extent at {a}");
    }
    // The nested subvolume is no snapshot's: its file alone.
    for a in extents_of(&sub.join("h")) {
        let h = holders(top.as_fd(), a).unwrap();
        assert_eq!(
            h.list,
            vec![(sv, fs::metadata(sub.join("h")).unwrap().ino())]
        );
    }
    // 3,000 holders: the buffer grew (4 KiB holds 170).
    let [a] = extents_of(&many.join("src"))[..] else {
        panic!("many/src is not one extent");
    };
    let h = holders(top.as_fd(), a).unwrap();
    assert!(!h.truncated);
    assert_eq!(h.list.len(), 3000);
    assert_eq!(h.list, logical_resolve(m, a));
    // No data extent at 0.
    let e = holders(top.as_fd(), 0).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::NotFound, "{e}");

    // A deleted snapshot, once the cleaner has dropped it, holds
    // nothing.
    btrfs(&["subvolume", "delete"], &m.join("snaps/s1"));
    // Until then it may still be listed. The cleaner wakes at a
    // filesystem sync.
    btrfs(&["filesystem", "sync"], m);
    btrfs(&["subvolume", "sync"], m);
    btrfs_search::commit(top.as_fd()).unwrap();
    let after = holders(top.as_fd(), fx[0]).unwrap().list;
    want.retain(|&(r, _)| r != s1);
    assert_eq!(after, want);
    assert_eq!(logical_resolve(m, fx[0]), want);
}

/// The cost of [`holders`]: one call per data extent of 2,000 files
/// of 16 KiB in a subvolume with 10 read-only snapshots (every tenth
/// file's inode changed between two snapshots, so that the subvolume's
/// leaves are copies and the snapshots' shared), the filesystem's
/// caches warm, then cold (unmounted and mounted again); beside it the
/// cost of reading the same extents' refs ([`btrfs_search::extent_refs`]).
/// `cargo test --lib holders_cost -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement: prints calls per second"]
fn holders_cost() {
    let Some(fs) = LoopBtrfs::new(2) else {
        return;
    };
    let m = fs.mnt.as_path();
    let vol = m.join("vol");
    btrfs(&["subvolume", "create"], &vol);
    let mut files = Vec::new();
    for d in 0..20 {
        let dir = vol.join(format!("d{d}"));
        fs::create_dir(&dir).unwrap();
        for i in 0..100 {
            let p = dir.join(format!("f{i}"));
            fs::write(&p, noise(16 << 10, (d * 100 + i) as u64)).unwrap();
            files.push(p);
        }
    }
    btrfs_search::commit(open(m).as_fd()).unwrap();
    fs::create_dir(m.join("snaps")).unwrap();
    for s in 0..10 {
        sh(Command::new("btrfs")
            .args(["subvolume", "snapshot", "-r"])
            .arg(&vol)
            .arg(m.join(format!("snaps/s{s}"))))
        .unwrap();
        for p in files.iter().skip(s).step_by(10) {
            let mode = fs::metadata(p).unwrap().mode();
            fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(mode ^ 0o1))
                .unwrap();
        }
    }
    btrfs_search::commit(open(m).as_fd()).unwrap();
    let mut extents: Vec<u64> = files.iter().flat_map(|p| extents_of(p)).collect();
    extents.sort_unstable();
    extents.dedup();
    assert_eq!(extents.len(), files.len());
    let measure = |what: &str| {
        let top = open(m);
        let t = Instant::now();
        let mut n = 0usize;
        for &a in &extents {
            let h = holders(top.as_fd(), a).unwrap();
            assert!(!h.truncated && h.list.len() == 11, "{a}: {h:?}");
            n += h.list.len();
        }
        let dt = t.elapsed().as_secs_f64();
        let t = Instant::now();
        for &a in &extents {
            assert!(btrfs_search::extent_refs(top.as_fd(), a).unwrap().found);
        }
        let refs = t.elapsed().as_secs_f64();
        let _ = writeln!(
            std::io::stderr(),
            "holders, {what}: {} extents, {n} holders in {dt:.3} s: {:.0} calls/s, \
             {:.1} µs an extent (extent_refs: {:.1} µs)",
            extents.len(),
            extents.len() as f64 / dt,
            dt * 1e6 / extents.len() as f64,
            refs * 1e6 / extents.len() as f64,
        );
    };
    measure("warm");
    sh(Command::new("umount").arg(m)).unwrap();
    sh(Command::new("mount").args(["-t", "btrfs", &fs.dev]).arg(m)).unwrap();
    measure("cold");
    measure("warm");
}
