//! GETFSMAP's layouts, and its owners on loop-mounted XFS images (root),
//! checked against `xfs_io -c 'fsmap -d -m'`.

mod common;

use common::{clone_file, noise, write_synced};
use sdu_sys::fiemap::{Extent, Fiemap};
use sdu_sys::fsmap::*;
use std::collections::BTreeSet;
use std::fs::File;
use std::io;
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Whether the loopback tests must run (CI) or may be skipped.
fn must_run() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

fn run(cmd: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .map_err(|e| format!("{cmd}: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        Ok(text)
    } else {
        Err(format!(
            "{cmd} {args:?}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// A loop-mounted XFS image, unmounted (and deleted) on drop.
struct Xfs {
    _dir: tempfile::TempDir,
    mnt: PathBuf,
}

impl Xfs {
    /// A 320 MiB XFS made with `mkfs.xfs -m <meta>`, or `None` (skipped,
    /// said on fd 2) where it cannot be made outside CI.
    fn new(meta: &str) -> Option<Self> {
        match Self::make(meta) {
            Ok(m) => Some(m),
            Err(why) => {
                assert!(!must_run(), "loopback test cannot run under CI=true: {why}");
                let _ = writeln!(
                    std::io::stderr(),
                    "!!!!!!!! SKIPPED loopback filesystem test: {why} !!!!!!!!"
                );
                None
            }
        }
    }

    fn make(meta: &str) -> Result<Self, String> {
        if !rustix::process::geteuid().is_root() {
            return Err("not root".into());
        }
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let img = dir.path().join("fs.img");
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).map_err(|e| e.to_string())?;
        File::create(&img)
            .and_then(|f| f.set_len(320 << 20))
            .map_err(|e| e.to_string())?;
        let img = img.to_str().unwrap();
        run("mkfs.xfs", &["-q", "-f", "-m", meta, img])?;
        run("mount", &["-o", "loop", img, mnt.to_str().unwrap()])?;
        Ok(Xfs { _dir: dir, mnt })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.mnt.join(name)
    }

    fn device(&self) -> u32 {
        data_device(std::fs::metadata(&self.mnt).unwrap().dev())
    }

    fn root(&self) -> File {
        File::open(&self.mnt).unwrap()
    }
}

impl Drop for Xfs {
    fn drop(&mut self) {
        if let Err(e) = run("umount", &[self.mnt.to_str().unwrap()]) {
            eprintln!("cleanup failed: {e}");
        }
    }
}

/// Writes `len` bytes that do not compress and syncs them (allocated, so
/// FIEMAP has addresses).
fn write_data(path: &Path, len: usize, seed: u64) {
    write_synced(path, &noise(len, seed));
}

fn extents(path: &Path) -> Vec<Extent> {
    let mut v = Vec::new();
    let f = File::open(path).unwrap();
    Fiemap::new().for_each(f.as_fd(), |e| v.push(*e)).unwrap();
    v
}

fn ino(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().ino()
}

/// `(physical, length, owner, special)` of each record, sorted.
fn keyed(v: &[Owner]) -> Vec<(u64, u64, u64, bool)> {
    let mut k: Vec<_> = v
        .iter()
        .map(|o| {
            let special = o.flags & FMR_OF_SPECIAL_OWNER != 0;
            (o.physical, o.length, o.owner, special)
        })
        .collect();
    k.sort_unstable();
    k
}

/// The independent reference: `xfs_io -c 'fsmap -d -m FIRST LAST'` over
/// the 512-byte sectors holding `[start, start + len)`, parsed from its
/// CSV (`EXT,MAJOR,MINOR,PSTART,PEND,OWNER,OSTART,OEND,LENGTH`, sectors;
/// an owner is `inode_<ino>_<fork>` or `special_<type>:<code>`).
fn xfs_io_fsmap(mnt: &Path, start: u64, len: u64) -> Vec<(u64, u64, u64, bool)> {
    let range = format!("fsmap -d -m {} {}", start / 512, (start + len - 1) / 512);
    let out = run("xfs_io", &["-c", &range, mnt.to_str().unwrap()]).unwrap();
    let mut k: Vec<_> = out
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let (ps, pe): (u64, u64) = (f[3].parse().unwrap(), f[4].parse().unwrap());
            let (owner, special) = if let Some(i) = f[5].strip_prefix("inode_") {
                (i.split('_').next().unwrap().parse().unwrap(), false)
            } else {
                let (t, c) = f[5]
                    .strip_prefix("special_")
                    .unwrap()
                    .split_once(':')
                    .unwrap();
                let (t, c): (u64, u64) = (t.parse().unwrap(), c.parse().unwrap());
                ((t << 32) | c, true)
            };
            (ps * 512, (pe + 1 - ps) * 512, owner, special)
        })
        .collect();
    k.sort_unstable();
    k
}

/// The inodes whose data mappings in `v` hold byte `p` of the device.
fn data_owners_at(v: &[Owner], p: u64) -> BTreeSet<u64> {
    v.iter()
        .filter(|o| o.is_file_data() && o.physical <= p && p < o.physical + o.length)
        .map(|o| o.owner)
        .collect()
}

#[test]
fn owners_of_a_fiemap_range_are_every_clone_block_by_block() {
    let Some(m) = Xfs::new("rmapbt=1,reflink=1") else {
        return;
    };
    let (a, b, c, d) = (m.path("a"), m.path("b"), m.path("c"), m.path("d"));
    write_data(&a, 1 << 20, 0x9e37_79b9_7f4a_7c15);
    for to in [&b, &c] {
        let out = Command::new("cp")
            .args([
                "--reflink=always",
                a.to_str().unwrap(),
                to.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }
    // d: the middle 256 KiB of a, cloned with FICLONERANGE.
    let (mid, mid_len) = (384u64 << 10, 256u64 << 10);
    let cmd = format!("reflink {} {mid} 0 {mid_len}", a.display());
    run("xfs_io", &["-f", "-c", &cmd, d.to_str().unwrap()]).unwrap();
    rustix::fs::sync();

    let root = m.root();
    let fd = root.as_fd();
    assert!(has_rmapbt(fd).unwrap());
    let dev = m.device();
    let (ia, ib, ic, id) = (ino(&a), ino(&b), ino(&c), ino(&d));
    let ext = extents(&a);
    assert!(
        !ext.is_empty() && ext.iter().all(Extent::is_shared),
        "{ext:?}"
    );
    let mut fm = Fsmap::default();
    for e in &ext {
        let mut got = Vec::new();
        let calls = fm.owners(fd, dev, e.physical, e.length, &mut got).unwrap();
        assert_eq!(calls, 1);
        eprintln!("a's extent {e:?}: {got:#?}");
        // FIEMAP's address finds a itself, at the same file offset.
        assert!(
            got.iter()
                .any(|o| o.owner == ia && o.physical == e.physical && o.offset == e.logical)
        );
        // Per block: a, b and c everywhere; d too in a's middle.
        for blk in (0..e.length).step_by(4096) {
            let logical = e.logical + blk;
            let mut want = BTreeSet::from([ia, ib, ic]);
            if (mid..mid + mid_len).contains(&logical) {
                want.insert(id);
            }
            assert_eq!(data_owners_at(&got, e.physical + blk), want, "at {logical}");
        }
        assert!(
            got.iter()
                .filter(|o| o.is_file_data())
                .all(|o| o.flags & FMR_OF_SHARED != 0)
        );
        assert_eq!(keyed(&got), xfs_io_fsmap(&m.mnt, e.physical, e.length));

        // One block: the mappings that hold it, whole, and those only;
        // d's mapping found by the range's first and by its last block.
        for at in [mid, mid + mid_len - 4096, 0] {
            let p = e.physical + at - e.logical;
            let mut one = Vec::new();
            owners(fd, dev, p, 4096, &mut one).unwrap();
            let ids: BTreeSet<u64> = one.iter().map(|o| o.owner).collect();
            let mut want = BTreeSet::from([ia, ib, ic]);
            if at != 0 {
                want.insert(id);
            }
            assert_eq!(ids, want, "block at {at}");
            assert_eq!(keyed(&one), xfs_io_fsmap(&m.mnt, p, 4096));
            let d_rec = one.iter().find(|o| o.owner == id);
            assert_eq!(
                d_rec.map(|o| (o.physical, o.length, o.offset)),
                (at != 0).then_some((e.physical + mid - e.logical, mid_len, 0))
            );
        }
    }

    // Metadata and free space: special owners, not inodes. The second
    // allocation group (80 MiB each here) is free past its headers.
    let mut head = Vec::new();
    owners(fd, dev, 0, 4096, &mut head).unwrap();
    assert!(!head.is_empty() && head.iter().all(|o| !o.is_file_data()));
    let mut free = Vec::new();
    owners(fd, dev, 100 << 20, 4096, &mut free).unwrap();
    assert!(
        free.len() == 1
            && free[0].owner == FMR_OWN_FREE
            && free[0].flags & FMR_OF_SPECIAL_OWNER != 0,
        "{free:?}"
    );
    // A device that is not the filesystem's: EINVAL.
    let e = owners(fd, dev ^ 0x0f0f_0000, 0, 4096, &mut Vec::new()).unwrap_err();
    assert_eq!(
        e.raw_os_error(),
        Some(rustix::io::Errno::INVAL.raw_os_error()),
        "{e}"
    );
    // An empty range asks nothing.
    assert_eq!(owners(fd, dev, 4096, 0, &mut Vec::new()).unwrap(), 0);
}

#[test]
fn without_cap_sys_admin_owners_is_permission_denied() {
    let Some(m) = Xfs::new("rmapbt=1,reflink=1") else {
        return;
    };
    let a = m.path("a");
    write_data(&a, 64 << 10, 7);
    let e = extents(&a)[0];
    let dev = m.device();
    let root = m.root();
    let mut got = Vec::new();
    owners(root.as_fd(), dev, e.physical, e.length, &mut got).unwrap();
    assert_eq!(data_owners_at(&got, e.physical), BTreeSet::from([ino(&a)]));
    // Capabilities are per thread: drop CAP_SYS_ADMIN from this one's
    // effective set only.
    std::thread::scope(|s| {
        s.spawn(|| {
            use rustix::thread::{CapabilitySet, capabilities, set_capabilities};
            let mut caps = capabilities(None).unwrap();
            caps.effective -= CapabilitySet::SYS_ADMIN;
            set_capabilities(None, caps).unwrap();
            let fd = root.as_fd();
            // The geometry is unprivileged.
            assert!(has_rmapbt(fd).unwrap());
            let mut got = Vec::new();
            let err = owners(fd, dev, e.physical, e.length, &mut got).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::PermissionDenied, "{err}");
            assert_eq!(err.raw_os_error(), None);
            // What the kernel said: allocated, owner unknown.
            assert!(
                got.iter()
                    .all(|o| o.flags & FMR_OF_SPECIAL_OWNER != 0 && o.owner == FMR_OWN_UNKNOWN)
            );
        })
        .join()
        .unwrap();
    });
}

#[test]
fn without_rmapbt_owners_is_unsupported() {
    let Some(m) = Xfs::new("rmapbt=0,reflink=1") else {
        return;
    };
    let a = m.path("a");
    write_data(&a, 64 << 10, 11);
    let root = m.root();
    let fd = root.as_fd();
    assert!(!has_rmapbt(fd).unwrap());
    let e = extents(&a)[0];
    let err = owners(fd, m.device(), e.physical, e.length, &mut Vec::new()).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::Unsupported, "{err}");
    // Not XFS: no rmapbt, and no error.
    let here = File::open(env!("CARGO_MANIFEST_DIR")).unwrap();
    if sdu_sys::fs::fs_type(here.as_fd()).unwrap() != sdu_sys::fs::magic::XFS {
        assert!(!has_rmapbt(here.as_fd()).unwrap());
    }
}

/// The cost: `owners` over every shared range of 2,000 reflinked files
/// (1,000 files and a clone of each), then over one range with 2,000
/// owners (a file and 1,999 clones), which pages.
#[test]
fn owners_cost_over_a_tree_of_reflinks() {
    let Some(m) = Xfs::new("rmapbt=1,reflink=1") else {
        return;
    };
    let dir = m.path("t");
    std::fs::create_dir(&dir).unwrap();
    for i in 0..1000u64 {
        let src = dir.join(format!("{i}"));
        write_data(&src, 16 << 10, i + 1);
        clone_file(&src, &dir.join(format!("{i}.c")));
    }
    let many = m.path("many");
    std::fs::create_dir(&many).unwrap();
    let one = many.join("0");
    write_data(&one, 16 << 10, 99);
    for i in 1..2000 {
        clone_file(&one, &many.join(format!("{i}")));
    }
    rustix::fs::sync();

    let root = m.root();
    let fd = root.as_fd();
    let dev = m.device();
    let mut ranges = Vec::new();
    let files: Vec<File> = (0..1000)
        .map(|i| File::open(dir.join(format!("{i}"))).unwrap())
        .collect();
    // For scale: FIEMAP of the same files, opened beforehand.
    let (mut fiemap, t) = (Fiemap::new(), Instant::now());
    for f in &files {
        let i = f.metadata().unwrap().ino();
        let add = |e: &Extent| ranges.push((e.physical, e.length, i));
        fiemap.for_each(f.as_fd(), add).unwrap();
    }
    let us = t.elapsed().as_secs_f64() * 1e6;
    eprintln!("FIEMAP: {:.1} µs a file", us / files.len() as f64);
    let mut fm = Fsmap::default();
    let mut got = Vec::new();
    let (mut calls, t) = (0u32, Instant::now());
    for &(p, l, _) in &ranges {
        calls += fm.owners(fd, dev, p, l, &mut got).unwrap();
    }
    let us = t.elapsed().as_secs_f64() * 1e6;
    eprintln!(
        "owners: {} ranges of 2 owners, {calls} calls, {:.1} µs a range",
        ranges.len(),
        us / ranges.len() as f64
    );
    assert_eq!(calls as usize, ranges.len());
    assert_eq!(
        got.iter().filter(|o| o.is_file_data()).count(),
        2 * ranges.len()
    );
    for &(p, _, i) in &ranges {
        assert!(got.iter().any(|o| o.owner == i && o.physical == p));
    }

    let e = extents(&one)[0];
    let mut got = Vec::new();
    let t = Instant::now();
    let calls = fm.owners(fd, dev, e.physical, e.length, &mut got).unwrap();
    let us = t.elapsed().as_secs_f64() * 1e6;
    eprintln!("owners: one range of 2,000 owners, {calls} calls, {us:.0} µs");
    let inodes: BTreeSet<u64> = got.iter().map(|o| o.owner).collect();
    assert_eq!(inodes.len(), 2000);
    assert_eq!(got.len(), 2000, "no record twice across the calls");
    let first = FSMAP_FIRST as usize;
    assert_eq!(calls as usize, 1 + (2000 - first).div_ceil(FSMAP_BATCH));
}
