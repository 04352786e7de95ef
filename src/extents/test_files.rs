//! What the unit tests of the Btrfs modules need of their loopback
//! filesystems: a Btrfs made and mounted as root ([`LoopBtrfs`]), and
//! files written on it: data that does not compress, written and synced so
//! that it has addresses, and reflink copies.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `n` bytes that do not compress (xorshift from `seed`).
pub(crate) fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Writes `data` to `path` and syncs it: allocated, so FIEMAP and the
/// extent tree have addresses for it.
pub(crate) fn write_synced(path: &Path, data: &[u8]) {
    let mut f = File::create(path).unwrap();
    f.write_all(data).unwrap();
    f.sync_all().unwrap();
}

/// `dst` becomes a reflink copy of `src` (FICLONE).
pub(crate) fn clone_file(src: &Path, dst: &Path) {
    let s = File::open(src).unwrap();
    let d = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(dst)
        .unwrap();
    rustix::fs::ioctl_ficlone(&d, &s).unwrap();
}

/// A test that cannot run here: fails under `CI=true`, else says so.
pub(crate) fn unavailable(why: &str) {
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "cannot set up the test (CI=true, so this fails): {why}"
    );
    let _ = writeln!(
        std::io::stderr(),
        "\n********** SKIPPED: {why} (set CI=true to make this a failure) **********"
    );
}

/// Runs `cmd`: its stdout, or what went wrong.
pub(crate) fn sh(cmd: &mut Command) -> Result<String, String> {
    match cmd.stdin(Stdio::null()).output() {
        Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).into_owned()),
        Ok(o) => Err(format!(
            "{cmd:?}: {}: {}",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!("{cmd:?}: {e}")),
    }
}

/// A Btrfs in a sparse image, on a loop device, mounted; undone on drop.
pub(crate) struct LoopBtrfs {
    pub(crate) dev: String,
    pub(crate) mnt: PathBuf,
    _tmp: tempfile::TempDir,
}

impl LoopBtrfs {
    pub(crate) fn new(gib: u64) -> Option<LoopBtrfs> {
        if !rustix::process::geteuid().is_root() {
            unavailable("a loopback Btrfs needs root");
            return None;
        }
        let tmp = tempfile::tempdir().unwrap();
        let img = tmp.path().join("fs.img");
        fs::File::create(&img).unwrap().set_len(gib << 30).unwrap();
        let mnt = tmp.path().join("mnt");
        fs::create_dir(&mnt).unwrap();
        let made = sh(Command::new("mkfs.btrfs").args(["-q", "-f"]).arg(&img))
            .and_then(|_| sh(Command::new("losetup").args(["--find", "--show"]).arg(&img)))
            .map(|d| d.trim().to_string());
        let dev = match made {
            Ok(d) => d,
            Err(e) => {
                unavailable(&e);
                return None;
            }
        };
        if let Err(e) = sh(Command::new("mount").args(["-t", "btrfs", &dev]).arg(&mnt)) {
            let _ = Command::new("losetup").args(["-d", &dev]).status();
            unavailable(&e);
            return None;
        }
        Some(LoopBtrfs {
            dev,
            mnt,
            _tmp: tmp,
        })
    }
}

impl Drop for LoopBtrfs {
    fn drop(&mut self) {
        let quiet = |c: &mut Command| {
            c.stdin(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        let mut tries = 0;
        while !quiet(Command::new("umount").arg(&self.mnt)) && tries < 50 {
            tries += 1;
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        if tries == 50 {
            quiet(Command::new("umount").arg("-l").arg(&self.mnt));
        }
        quiet(Command::new("losetup").args(["-d", &self.dev]));
    }
}
