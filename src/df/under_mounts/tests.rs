//! The covered directories of a mount, as root on real mounts (a tmpfs
//! holding a 3 MiB file, covered by other tmpfs mounts), and without
//! `CAP_SYS_ADMIN` (a thread that has become nobody); the choice of the
//! mounts that cover a mount, on mountinfo lines.

use std::fs;
use std::io::Read as _;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Command;

use rustix::fs::{Mode, OFlags};
use sdu_sys::mountinfo::Mount;

use super::*;
use crate::extents::test_files::{noise, sh, unavailable};

/// Mounts made by a test, taken away (lazily) in reverse order on drop.
pub(in crate::df) struct Mounted(pub(in crate::df) Vec<PathBuf>);

impl Mounted {
    /// `mount ARGS… POINT`, remembered; `Err` with what went wrong.
    pub(in crate::df) fn mount(&mut self, args: &[&str], point: &Path) -> Result<(), String> {
        sh(Command::new("mount").args(args).arg(point))?;
        self.0.push(point.to_path_buf());
        Ok(())
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        for p in self.0.iter().rev() {
            let _ = sh(Command::new("umount").arg("-l").arg(p));
        }
    }
}

/// The mount whose point is `p`, the last one there (the visible one).
pub(in crate::df) fn mount_at(p: &Path) -> Mount {
    use std::os::unix::ffi::OsStrExt;
    let all = sdu_sys::mountinfo::read().unwrap();
    all.into_iter()
        .rev()
        .find(|m| m.point == p.as_os_str().as_bytes())
        .unwrap_or_else(|| panic!("no mount at {}", p.display()))
}

/// The directory `p`, opened for reading.
pub(in crate::df) fn open_dir(p: &Path) -> OwnedFd {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    rustix::fs::open(p, flags, Mode::empty()).unwrap()
}

/// `f()` on a thread of its own whose user is nobody (65534): no
/// capability, as sdu run by a user. Only that thread changes.
pub(in crate::df) fn as_nobody<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            let nobody = rustix::process::Uid::from_raw(65534);
            rustix::thread::set_thread_res_uid(nobody, nobody, nobody).unwrap();
            f()
        })
        .join()
        .unwrap()
    })
}

/// The file `name` in the directory open at `dir`, read whole.
fn read_in(dir: &OwnedFd, name: &str) -> Vec<u8> {
    let f = rustix::fs::openat(dir, name, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty());
    let mut data = Vec::new();
    fs::File::from(f.unwrap()).read_to_end(&mut data).unwrap();
    data
}

#[test]
fn covered_directories_are_listed_and_as_root_opened_beneath_the_mount() {
    if !rustix::process::geteuid().is_root() {
        unavailable("mounting a tmpfs needs root");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    fs::create_dir(&base).unwrap();
    let mut m = Mounted(Vec::new());
    if let Err(e) = m.mount(&["-t", "tmpfs", "sdu-base"], &base) {
        unavailable(&e);
        return;
    }
    // d: a 3 MiB file, then a tmpfs over d and another stacked on that.
    // g/h covered, then g: only g is listed. s: bound on itself.
    // plain: not covered.
    let three = noise(3 << 20, 46);
    for d in ["d", "g/h", "s", "plain"] {
        fs::create_dir_all(base.join(d)).unwrap();
    }
    fs::write(base.join("d/f"), &three).unwrap();
    fs::write(base.join("g/h/in_h"), b"h").unwrap();
    fs::write(base.join("s/in_s"), b"s").unwrap();
    let s = base.join("s");
    let s = s.to_str().unwrap();
    let made = m
        .mount(&["-t", "tmpfs", "sdu-cover"], &base.join("d"))
        .and_then(|()| m.mount(&["-t", "tmpfs", "sdu-stacked"], &base.join("d")))
        .and_then(|()| m.mount(&["-t", "tmpfs", "sdu-h"], &base.join("g/h")))
        .and_then(|()| m.mount(&["-t", "tmpfs", "sdu-g"], &base.join("g")))
        .and_then(|()| m.mount(&["--bind", s], Path::new(s)));
    if let Err(e) = made {
        unavailable(&e);
        return;
    }
    assert!(!base.join("d/f").exists(), "d is covered");
    let mount = mount_at(&base);
    let mounts = sdu_sys::mountinfo::read().unwrap();
    let root = open_dir(&base);

    let u = under_mounts(root.as_fd(), &mount, &mounts);
    assert!(u.seen);
    let points: Vec<(String, String, bool)> = (u.covered.iter())
        .map(|c| {
            let p = String::from_utf8_lossy(&c.point);
            let rel = p.strip_prefix(base.to_str().unwrap()).unwrap().to_string();
            (rel, String::from_utf8_lossy(&c.by).into_owned(), c.itself)
        })
        .collect();
    assert_eq!(
        points,
        [
            ("/d".into(), "tmpfs sdu-cover".into(), false),
            ("/g".into(), "tmpfs sdu-g".into(), false),
            ("/s".into(), "tmpfs sdu-base".into(), true),
        ]
    );
    let fds: Vec<&OwnedFd> = u
        .covered
        .iter()
        .map(|c| &**c.fd.as_ref().unwrap())
        .collect();
    assert_eq!(read_in(fds[0], "f"), three, "the file beneath d");
    assert_eq!(read_in(fds[1], "h/in_h"), b"h", "g holds h's covered file");
    assert_eq!(read_in(fds[2], "in_s"), b"s");
    // The fds lie on a mount of their own, not the system's.
    let mnt = |fd: &OwnedFd| {
        let flags = rustix::fs::StatxFlags::MNT_ID;
        let st = rustix::fs::statx(fd, c"", rustix::fs::AtFlags::EMPTY_PATH, flags).unwrap();
        st.stx_mnt_id
    };
    assert!(mounts.iter().all(|m| m.id != mnt(fds[0])));

    // Without CAP_SYS_ADMIN: the same points, nothing opened.
    let u = as_nobody(|| under_mounts(root.as_fd(), &mount, &mounts));
    assert!(!u.seen);
    assert_eq!(u.covered.len(), 3);
    assert!(u.covered.iter().all(|c| c.fd.is_none()));
}

/// A mountinfo line's mount.
fn line(s: &str) -> Mount {
    Mount::parse(s.as_bytes()).unwrap()
}

#[test]
fn the_mounts_on_a_mount_are_its_children_outermost_first() {
    let mounts = [
        line("30 1 0:40 /sub /mnt rw - btrfs /dev/loop0 rw,subvolid=256,subvol=/sub"),
        // On /mnt: hides a, b (stacked on by 33), and c.
        line("31 30 0:41 / /mnt/a rw - tmpfs t1 rw"),
        line("32 30 0:42 / /mnt/b rw - tmpfs t2 rw"),
        line("33 32 0:43 / /mnt/b rw - tmpfs t3 rw"),
        // A bind mount of /sub/c on itself, and of /sub/x on /mnt/e.
        line("34 30 0:40 /sub/c /mnt/c rw - btrfs /dev/loop0 rw,subvolid=256,subvol=/sub"),
        line("35 30 0:40 /sub/x /mnt/e rw - btrfs /dev/loop0 rw,subvolid=256,subvol=/sub"),
        // Subvolume /sub/v mounted at its own place, and a mount inside it
        // made before it.
        line("36 30 0:40 /sub/v /mnt/v rw - btrfs /dev/loop0 rw,subvolid=258,subvol=/sub/v"),
        line("37 30 0:44 / /mnt/a/in rw - tmpfs t4 rw"),
        // Elsewhere: on the tmpfs, and beside /mnt.
        line("38 31 0:45 / /mnt/a/x rw - tmpfs t5 rw"),
        line("39 1 0:46 / /mnt2 rw - tmpfs t6 rw"),
    ];
    let kids = children(&mounts[0], &mounts);
    let got: Vec<(&[u8], u64, Cover)> = kids
        .iter()
        .map(|c| (&c.rel[..], c.by.id, c.cover))
        .collect();
    assert_eq!(
        got,
        [
            (&b"a"[..], 31, Cover::Hides),
            (b"b", 32, Cover::Hides),
            (b"c", 34, Cover::Itself),
            (b"e", 35, Cover::Hides),
            (b"v", 36, Cover::Subvolume),
        ]
    );
    // At the root of the namespace.
    let root = line("1 1 8:1 / / rw - ext4 /dev/sda1 rw");
    let mounts = [root.clone(), line("2 1 0:5 / /tmp rw - tmpfs tmpfs rw")];
    let kids = children(&root, &mounts);
    assert_eq!(kids.len(), 1);
    assert_eq!(kids[0].rel, b"tmp");
}
