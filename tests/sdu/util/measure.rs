//! Delete and measure: loopback filesystems mounted with options and
//! their used space as the filesystem counts it (`Mounted`), the tree
//! builder of known sharing (`Tree`), and the checks that deleting a
//! directory frees nothing outside `st_blocks`. `reclaim`'s module comment
//! says why each measurement is exact; `reclaim` and `exact` use them.

use std::collections::{BTreeSet, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::loopfs::{FsKind, LoopFs, sync_fs, umount_retrying};
use super::process::run;

/// A harness loopback filesystem (which fails under `CI=true` when it
/// cannot be made) mounted again with `opts`. Dropping the `LoopFs`
/// unmounts and detaches it as usual.
pub struct Mounted {
    lfs: LoopFs,
    kind: FsKind,
    dev: String,
    opts: &'static str,
}

impl Mounted {
    pub fn new(kind: FsKind, opts: &'static str) -> Option<Mounted> {
        Mounted::with_mkfs(kind, &[], opts)
    }

    /// Same, made with `mkfs` options after the harness's own (as
    /// [`LoopFs::with_mkfs`]).
    pub fn with_mkfs(kind: FsKind, mkfs: &[&str], opts: &'static str) -> Option<Mounted> {
        let lfs = LoopFs::with_mkfs(kind, mkfs)?;
        let out = run(Command::new("findmnt")
            .args(["-n", "-v", "-o", "SOURCE", "--mountpoint"])
            .arg(lfs.path()));
        out.assert_ok();
        let dev = out.stdout_str().trim().to_owned();
        let m = Mounted {
            lfs,
            kind,
            dev,
            opts,
        };
        m.remount();
        Some(m)
    }

    pub fn path(&self) -> &Path {
        self.lfs.path()
    }

    /// Unmounts (retrying while briefly busy) and mounts with `opts`;
    /// checks that the kernel took every option.
    pub fn remount(&self) {
        let mnt = self.path();
        umount_retrying(mnt);
        run(Command::new("mount")
            .args(["-t", self.kind.fstype(), "-o", self.opts, &self.dev])
            .arg(mnt))
        .assert_ok();
        let out = run(Command::new("findmnt")
            .args(["-n", "-o", "OPTIONS", "--mountpoint"])
            .arg(mnt));
        out.assert_ok();
        let have: Vec<&str> = out.stdout_str().trim().split(',').collect();
        for o in self.opts.split(',') {
            assert!(have.contains(&o), "mounted without {o}: {have:?}");
        }
    }

    /// Unmounts, runs `f` on the image file (to save or restore the whole
    /// filesystem), and mounts again with `opts`.
    pub fn unmounted<R>(&self, f: impl FnOnce(&Path) -> R) -> R {
        umount_retrying(self.path());
        let r = f(&self.lfs.image());
        run(Command::new("mount")
            .args(["-t", self.kind.fstype(), "-o", self.opts, &self.dev])
            .arg(self.path()))
        .assert_ok();
        r
    }

    /// Used bytes as the filesystem counts them, after a flush: statvfs on
    /// XFS, Data Used on Btrfs (see `reclaim`'s module comment).
    pub fn used(&self) -> u64 {
        used_at(self.kind, self.path())
    }

    /// `used` once everything deferred has been done: after an unmount,
    /// read until two readings 25 ms apart agree (1 s at most).
    pub fn settled_used(&self) -> u64 {
        self.remount();
        let mut last = self.used();
        for _ in 0..40 {
            std::thread::sleep(Duration::from_millis(25));
            let now = self.used();
            if now == last {
                return now;
            }
            last = now;
        }
        panic!(
            "the used space of {} was still moving after 1 s (last {last})",
            self.path().display()
        );
    }

    /// What `delete` frees: `settled_used` before it, less after.
    pub fn freed_by(&self, delete: impl FnOnce()) -> u64 {
        let before = self.settled_used();
        delete();
        let after = self.settled_used();
        before
            .checked_sub(after)
            .unwrap_or_else(|| panic!("the used space grew: {before} -> {after}"))
    }
}

pub fn btrfs(args: &[&str], path: &Path) {
    run(Command::new("btrfs").args(args).arg(path)).assert_ok();
}

/// The `Used` of the one Data line of `btrfs filesystem usage -b MNT`:
/// `Data,single: Size:75497472, Used:307200 (0.41%)`. A filesystem with
/// mixed block groups (`Data+Metadata`) or two data profiles is refused:
/// its figure would not be data alone.
pub fn btrfs_data_used(mnt: &Path) -> u64 {
    let out = run(Command::new("btrfs")
        .args(["filesystem", "usage", "-b"])
        .arg(mnt));
    out.assert_ok();
    let text = out.stdout_str();
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("Data,")).collect();
    assert!(
        lines.len() == 1 && !text.contains("Data+Metadata"),
        "expected one Data line, no mixed block groups:\n{text}"
    );
    let used = lines[0]
        .split_once("Used:")
        .map(|(_, r)| r.trim_start())
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok());
    used.unwrap_or_else(|| panic!("no Used:N in {:?}", lines[0]))
}

// ---------------------------------------------------------------------------
// Tree building

/// `n` bytes nobody else writes (a fresh xorshift stream per call), so no
/// `Used:` of the `Data,` and `Metadata,` lines of `btrfs filesystem usage
/// -b`, after a `btrfs filesystem sync`.
pub fn btrfs_used(mnt: &Path) -> (u64, u64) {
    btrfs(&["filesystem", "sync"], mnt);
    let out = run(Command::new("btrfs")
        .args(["filesystem", "usage", "-b"])
        .arg(mnt));
    let text = out.stdout_str().to_string();
    let field = |prefix: &str| -> u64 {
        let line = text
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix} line:\n{text}"));
        line.split_once("Used:")
            .and_then(|(_, r)| r.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no Used in {line}"))
    };
    (field("Data,"), field("Metadata,"))
}

/// What `delete` frees of the Data Used of the Btrfs filesystem at `mnt`
/// ([`btrfs_used`], each reading after a `btrfs filesystem sync`).
pub fn data_freed_by(mnt: &Path, delete: impl FnOnce()) -> u64 {
    let before = btrfs_used(mnt).0;
    delete();
    let after = btrfs_used(mnt).0;
    before
        .checked_sub(after)
        .unwrap_or_else(|| panic!("Data Used grew: {before} -> {after}"))
}

/// Deletes subvolume `rel` of `d` and waits until the cleaner has dropped
/// it; the drops in Data and Metadata Used.
pub fn freed_by_deleting_subvolume(d: &Path, rel: &str) -> (u64, u64) {
    let (data0, meta0) = btrfs_used(d);
    run(Command::new("btrfs")
        .args(["subvolume", "delete", "-C"])
        .arg(d.join(rel)))
    .assert_ok();
    btrfs(&["subvolume", "sync"], d);
    let (data1, meta1) = btrfs_used(d);
    (data0.saturating_sub(data1), meta0.saturating_sub(meta1))
}

/// filesystem can compress or dedupe them.
pub fn fresh_bytes(n: u64) -> Vec<u8> {
    static SEED: AtomicU64 = AtomicU64::new(1);
    let mut x = SEED
        .fetch_add(1, Ordering::Relaxed)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        | 1;
    let mut v = Vec::with_capacity(n as usize + 8);
    while (v.len() as u64) < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(n as usize);
    v
}

/// Builds a tree under `root`; every path is relative to it, and parent
/// directories are made as needed. Offsets and lengths are in bytes.
pub struct Tree<'a> {
    pub root: &'a Path,
}

impl Tree<'_> {
    pub fn p(&self, rel: &str) -> PathBuf {
        let p = self.root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        p
    }

    pub fn dir(&self, rel: &str) {
        fs::create_dir_all(self.root.join(rel)).unwrap();
    }

    /// A new file of `len` fresh bytes, written at once and fsynced, so
    /// that it is one extent on disk now (a later overwrite or partial
    /// clone then meets that extent, not pages still in the cache).
    pub fn write(&self, rel: &str, len: u64) {
        let p = self.p(rel);
        let mut f = File::create_new(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        f.write_all(&fresh_bytes(len)).unwrap();
        f.sync_all().unwrap();
    }

    /// Writes `len` fresh bytes at `off` of an existing file and fsyncs:
    /// where the blocks were shared, copy-on-write gives this file new
    /// ones.
    pub fn overwrite(&self, rel: &str, off: u64, len: u64) {
        let f = OpenOptions::new().write(true).open(self.p(rel)).unwrap();
        f.write_all_at(&fresh_bytes(len), off).unwrap();
        f.sync_all().unwrap();
    }

    /// A sparse file `len` bytes long with fresh data at `(offset, len)`.
    pub fn sparse(&self, rel: &str, len: u64, data: &[(u64, u64)]) {
        File::create_new(self.p(rel)).unwrap().set_len(len).unwrap();
        for &(off, n) in data {
            self.overwrite(rel, off, n);
        }
    }

    /// FICLONE: `dst`, a new file, maps exactly the data of `src`.
    pub fn clone(&self, src: &str, dst: &str) {
        let s = File::open(self.p(src)).unwrap();
        let d = File::create_new(self.p(dst)).unwrap_or_else(|e| panic!("{dst}: {e}"));
        rustix::fs::ioctl_ficlone(&d, &s).unwrap_or_else(|e| panic!("FICLONE {src} -> {dst}: {e}"));
    }

    /// FICLONERANGE through `xfs_io -c "reflink SRC SOFF DOFF LEN" DST`
    /// (`dst` created when new; rustix has no wrapper, and `unsafe` is
    /// denied, tests included).
    pub fn clone_range(&self, src: &str, soff: u64, dst: &str, doff: u64, len: u64) {
        let (s, d) = (self.p(src), self.p(dst));
        run(Command::new("xfs_io")
            .arg("-f")
            .arg("-c")
            .arg(format!("reflink {} {soff} {doff} {len}", s.display()))
            .arg(d))
        .assert_ok();
    }

    pub fn link(&self, existing: &str, new: &str) {
        fs::hard_link(self.p(existing), self.p(new)).unwrap();
    }

    /// Asserts what a Btrfs case relies on: `rel` is one extent on disk.
    pub fn assert_one_extent(&self, rel: &str) {
        let out = run(Command::new("filefrag").arg(self.p(rel)));
        out.assert_ok();
        assert!(
            out.stdout_str().trim_end().ends_with(": 1 extent found"),
            "{rel} is not one extent, which this case is built on: {}",
            out.stdout_str()
        );
    }
}

// ---------------------------------------------------------------------------
// What deleting a directory may free besides st_blocks

/// Returns the bytes of the directories under `d` (itself included), and
/// checks that deleting `d` frees nothing outside st_blocks: no inode
/// chunk loses its last inode, and `d`'s parent has no blocks that losing
/// an entry could free (`reclaim`'s module comment).
pub fn xfs_preconditions(mnt: &Path, d: &Path) -> u64 {
    fn walk(p: &Path, out: &mut Vec<(PathBuf, u64)>) {
        let md = fs::symlink_metadata(p).unwrap();
        out.push((p.to_owned(), md.ino()));
        if md.is_dir() {
            for e in fs::read_dir(p).unwrap() {
                walk(&e.unwrap().path(), out);
            }
        }
    }
    let mut all = Vec::new();
    walk(mnt, &mut all);
    // 512-byte inodes, 8 to a block, in chunks of 64 aligned to 64: an
    // inode's chunk is its number over 64.
    let chunk = |ino: u64| ino >> 6;
    let staying: HashSet<u64> = all
        .iter()
        .filter(|(p, _)| !p.starts_with(d))
        .map(|(_, i)| chunk(*i))
        .collect();
    let going: BTreeSet<u64> = all
        .iter()
        .filter(|(p, _)| p.starts_with(d))
        .map(|(_, i)| chunk(*i))
        .collect();
    let emptied: Vec<u64> = going.into_iter().filter(|c| !staying.contains(c)).collect();
    assert!(
        emptied.is_empty(),
        "deleting {} would free the whole inode chunk(s) {emptied:?} (32 KiB each, in no \
         st_blocks): the tree needs an inode that stays in each",
        d.display()
    );
    let parent = fs::symlink_metadata(d.parent().unwrap()).unwrap();
    assert_eq!(
        parent.blocks(),
        0,
        "the parent of {} has blocks that removing an entry could free",
        d.display()
    );
    let mut dirs = Vec::new();
    walk(d, &mut dirs);
    dirs.iter()
        .map(|(p, _)| fs::symlink_metadata(p).unwrap())
        .filter(|m| m.is_dir())
        .map(|m| m.blocks() * 512)
        .sum()
}

/// Checks that sdu's figures of `d` can only be data: no directory under
/// it has blocks of its own.
pub fn btrfs_preconditions(d: &Path) {
    fn walk(p: &Path, bad: &mut Vec<PathBuf>) {
        let md = fs::symlink_metadata(p).unwrap();
        if md.is_dir() {
            if md.blocks() != 0 {
                bad.push(p.to_owned());
            }
            for e in fs::read_dir(p).unwrap() {
                walk(&e.unwrap().path(), bad);
            }
        }
    }
    let mut bad = Vec::new();
    walk(d, &mut bad);
    assert!(
        bad.is_empty(),
        "directories with blocks (in sdu's figures, not in Data Used): {bad:?}"
    );
}

/// Used bytes of the `kind` filesystem mounted at `mnt`, after a flush:
/// statvfs, or Data Used on Btrfs (see `reclaim`'s module comment).
pub fn used_at(kind: FsKind, mnt: &Path) -> u64 {
    match kind {
        FsKind::Btrfs => {
            btrfs(&["filesystem", "sync"], mnt);
            btrfs_data_used(mnt)
        }
        _ => {
            sync_fs(mnt);
            let s = rustix::fs::statvfs(mnt).unwrap();
            (s.f_blocks - s.f_bfree) * s.f_frsize
        }
    }
}
