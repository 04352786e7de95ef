//! Filesystems made for a test: XFS, Btrfs and ext4 loopbacks (`LoopFs`),
//! the scratch filesystem of the big trees (`Scratch`), a tmpfs; settling
//! and flushing them so that `st_blocks` holds still between two runs.

use std::fs::{self, File};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rustix::fs::{Mode, OFlags};

use super::process::{in_ci, is_root, run, unavailable};
use super::search::search_matches_fiemap;
use super::trees::TestDir;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsKind {
    Xfs,
    Btrfs,
    /// A fresh ext4, for big trees (see `Scratch`).
    Ext4,
}

impl FsKind {
    /// Its name for `mount -t`.
    pub fn fstype(self) -> &'static str {
        match self {
            FsKind::Xfs => "xfs",
            FsKind::Btrfs => "btrfs",
            FsKind::Ext4 => "ext4",
        }
    }
}

/// Where the big trees (200,000 files, 5,000 levels, 10,000-file trees)
/// are built: a fresh ext4 loopback when root, else a plain temp dir.
///
/// Why not the machine's own filesystem: there, creating and removing
/// hundreds of thousands of inodes took 80+ s of kernel CPU per 200,000
/// files (ext4's `recently_deleted` scan of the inode bitmap, after
/// earlier tests and other users removed trees), against 7 s on a fresh
/// ext4; and throwing away an image beats `rm -rf` of the tree. The
/// machine's own filesystem is still covered by the standard-tree tests.
pub enum Scratch {
    Loop(LoopFs),
    Dir(TestDir),
}

impl Scratch {
    pub fn new() -> Scratch {
        match LoopFs::try_make(FsKind::Ext4, None, &[]) {
            Ok(l) => Scratch::Loop(l),
            Err(e) if in_ci() => panic!("cannot make the scratch ext4 (CI=true): {e}"),
            Err(e) => {
                let _ = writeln!(
                    std::io::stderr(),
                    "note: big trees go to a plain temp dir (slower): {e}"
                );
                Scratch::Dir(TestDir::new())
            }
        }
    }

    pub fn path(&self) -> &Path {
        match self {
            Scratch::Loop(l) => l.path(),
            Scratch::Dir(d) => d.path(),
        }
    }

    /// `self/name`, created as a directory.
    pub fn mkdir(&self, name: &str) -> PathBuf {
        let p = self.path().join(name);
        fs::create_dir(&p).unwrap();
        p
    }
}

/// A filesystem in a sparse image file, attached to a loop device and
/// mounted. Drop unmounts (lazily if it must) and detaches the device.
pub struct LoopFs {
    kind: FsKind,
    dev: String,
    mnt: PathBuf,
    // Holds the image (and the default mount dir); dropped after `drop`.
    _tmp: TestDir,
}

impl LoopFs {
    /// Makes and mounts a fresh filesystem on a temp mount directory.
    pub fn new(kind: FsKind) -> Option<LoopFs> {
        LoopFs::make(kind, None, &[])
    }

    /// Same, with `mkfs` options after the harness's own: for XFS, `-m
    /// rmapbt=1` (the reverse-mapping btree, which GETFSMAP needs) or `-m
    /// rmapbt=0`.
    pub fn with_mkfs(kind: FsKind, mkfs: &[&str]) -> Option<LoopFs> {
        LoopFs::make(kind, None, mkfs)
    }

    /// Same, mounted on `mnt` (an existing empty directory, e.g. inside a
    /// tree under test). The LoopFs must be dropped before `mnt`'s tree is
    /// removed: declare it after the tree's TestDir.
    pub fn new_at(kind: FsKind, mnt: &Path) -> Option<LoopFs> {
        LoopFs::make(kind, Some(mnt), &[])
    }

    pub fn path(&self) -> &Path {
        &self.mnt
    }

    /// The image file the loop device reads.
    pub fn image(&self) -> PathBuf {
        self._tmp.path().join("fs.img")
    }

    /// The loop device it is mounted from.
    pub fn device(&self) -> &str {
        &self.dev
    }

    fn make(kind: FsKind, mnt: Option<&Path>, extra: &[&str]) -> Option<LoopFs> {
        LoopFs::try_make(kind, mnt, extra).map_or_else(|e| unavailable(&e), Some)
    }

    fn try_make(kind: FsKind, mnt: Option<&Path>, extra: &[&str]) -> Result<LoopFs, String> {
        let name = format!("{kind:?}");
        if !is_root() {
            return Err(format!("a {name} loopback filesystem needs root"));
        }
        let tmp = TestDir::new();
        let img = tmp.path().join("fs.img");
        // 512 MiB: XFS wants at least 300 MiB; sparse, so it costs only
        // what is written.
        let f = File::create(&img).unwrap();
        f.set_len(512 << 20).unwrap();
        drop(f);
        let mnt = match mnt {
            Some(m) => m.to_owned(),
            None => tmp.mkdir("mnt"),
        };
        let sh = |cmd: &mut Command| -> Result<String, String> {
            match cmd.stdin(Stdio::null()).output() {
                Ok(o) if o.status.success() => {
                    Ok(String::from_utf8_lossy(&o.stdout).trim().to_owned())
                }
                Ok(o) => Err(format!(
                    "{cmd:?}: {}: {}",
                    o.status,
                    String::from_utf8_lossy(&o.stderr).trim()
                )),
                Err(e) => Err(format!("{cmd:?}: {e}")),
            }
        };
        let mut mkfs = match kind {
            FsKind::Xfs => Command::new("mkfs.xfs"),
            FsKind::Btrfs => Command::new("mkfs.btrfs"),
            FsKind::Ext4 => Command::new("mkfs.ext4"),
        };
        match kind {
            // With the reverse-mapping btree (mkfs's default from xfsprogs
            // 6.x on; Debian 12's is without): as root sdu verifies what a
            // partial scan credits. A test that wants it off says so.
            FsKind::Xfs if extra.iter().any(|a| a.contains("rmapbt")) => {
                mkfs.args(["-q", "-f", "-m", "reflink=1"])
            }
            FsKind::Xfs => mkfs.args(["-q", "-f", "-m", "reflink=1,rmapbt=1"]),
            FsKind::Btrfs => mkfs.args(["-q", "-f"]),
            // Room for the 200,000-entry directory (the default would give
            // 32,768 inodes); no discard of the image at mkfs.
            FsKind::Ext4 => mkfs.args(["-q", "-F", "-N", "300000", "-E", "nodiscard"]),
        };
        sh(mkfs.args(extra).arg(&img)).map_err(|e| format!("cannot make {name}: {e}"))?;
        let dev = sh(Command::new("losetup").args(["--find", "--show"]).arg(&img))
            .map_err(|e| format!("cannot attach a loop device: {e}"))?;
        if let Err(e) = sh(Command::new("mount")
            .args(["-t", kind.fstype(), &dev])
            .arg(&mnt))
        {
            let _ = Command::new("losetup").args(["-d", &dev]).status();
            return Err(format!("cannot mount {name}: {e}"));
        }
        Ok(LoopFs {
            kind,
            dev,
            mnt,
            _tmp: tmp,
        })
    }

    /// Unmounts and mounts again, so that delayed allocation and XFS's
    /// speculative preallocation are settled and `st_blocks` cannot change
    /// between the sdu run and the du runs being compared.
    pub fn settle(&self) {
        umount_retrying(&self.mnt);
        run(Command::new("mount")
            .args(["-t", self.kind.fstype(), &self.dev])
            .arg(&self.mnt))
        .assert_ok();
    }

    /// [`LoopFs::settle`], with the image's pages dropped from the page
    /// cache in between (`dd iflag=nocache count=0`: clean pages only, this
    /// file only): nothing of the filesystem is in memory after, and the
    /// first reads go to the disk under the image.
    pub fn cold(&self) {
        umount_retrying(&self.mnt);
        let img = self._tmp.path().join("fs.img");
        // What the unmount wrote back is dirty in the image's page cache
        // until it reaches the disk, and dd's `nocache` drops only clean
        // pages (coreutils' manual): written out first, or on a loaded
        // machine the tree is still in memory after the remount.
        run(Command::new("sync").arg(&img)).assert_ok();
        run(Command::new("dd")
            .arg(format!("if={}", img.display()))
            .args(["iflag=nocache", "count=0", "status=none"]))
        .assert_ok();
        run(Command::new("mount")
            .args(["-t", self.kind.fstype(), &self.dev])
            .arg(&self.mnt))
        .assert_ok();
    }
}

/// Unmounts `mnt`, retrying for up to 5 s: a just-used mount can be
/// briefly busy (a child of a concurrent test still closing, btrfs's
/// background work).
pub fn umount_retrying(mnt: &Path) {
    let mut tries = 0;
    loop {
        let out = run(Command::new("umount").arg(mnt));
        if out.code == Some(0) {
            break;
        }
        tries += 1;
        assert!(
            tries < 50,
            "umount {} keeps failing: {out:?}",
            mnt.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

impl Drop for LoopFs {
    fn drop(&mut self) {
        // Every Btrfs tree the suite builds, as its test leaves it: root's
        // tree search gives what FIEMAP gives (checked before unmounting,
        // failed after).
        let searched = (self.kind == FsKind::Btrfs && !std::thread::panicking())
            .then(|| search_matches_fiemap(&self.mnt));
        let ok = |c: &mut Command| {
            c.stdin(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        if !ok(Command::new("umount").arg(&self.mnt)) {
            let _ = writeln!(
                std::io::stderr(),
                "warning: umount {} failed, unmounting lazily",
                self.mnt.display()
            );
            ok(Command::new("umount").arg("-l").arg(&self.mnt));
        }
        // After a lazy unmount the device may still be busy: -d then sets
        // autoclear and the kernel detaches it when the last user goes.
        if !ok(Command::new("losetup").args(["-d", &self.dev])) {
            let _ = writeln!(std::io::stderr(), "warning: losetup -d {} failed", self.dev);
        }
        if let Some(Err(e)) = searched {
            panic!("{e}");
        }
    }
}

/// A tmpfs mounted for a test; unmounted on drop.
pub struct Tmpfs(pub PathBuf);

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// A mount point, unmounted on drop (lazily: a failed test may leave a
/// process in it).
pub struct Bind(pub PathBuf);

impl Bind {
    /// `from` bind-mounted on `on`.
    pub fn new(from: &Path, on: &Path) -> Bind {
        run(Command::new("mount").arg("--bind").arg(from).arg(on)).assert_ok();
        Bind(on.to_path_buf())
    }

    /// [`Bind::new`], or `None` (a loud skip, a failure under CI=true)
    /// when this is not root or the mount fails.
    pub fn or_skip(from: &Path, on: &Path) -> Option<Bind> {
        if !is_root() {
            return unavailable("bind mounts need root");
        }
        let o = run(Command::new("mount").arg("--bind").arg(from).arg(on));
        if o.code != Some(0) {
            return unavailable(&format!("mount --bind failed: {o:?}"));
        }
        Some(Bind(on.to_path_buf()))
    }
}

impl Drop for Bind {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Flushes the filesystem holding `path`: delayed allocation would
/// otherwise let `st_blocks` move between two measurements.
pub fn sync_fs(path: &Path) {
    let fd = rustix::fs::open(path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()).unwrap();
    rustix::fs::syncfs(&fd).unwrap();
}

/// Trims the blocks XFS preallocated past the end of files just written
/// on the filesystem of `path` (`xfs_spaceman -c 'prealloc -s'`). They
/// are the file's, in its `st_blocks`, its FIEMAP and the reverse map,
/// until trimmed at close or minutes later under load: a test that
/// plants data of a known size trims them first.
pub fn trim_xfs_prealloc(path: &Path) {
    let trim = std::process::Command::new("xfs_spaceman")
        .args(["-c", "prealloc -s"])
        .arg(path)
        .status()
        .unwrap();
    assert!(trim.success());
}
