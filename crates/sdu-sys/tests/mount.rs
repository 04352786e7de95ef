//! A mount copied without its submounts (`clone_mount`), and paths opened
//! beneath a directory on no other mount (`open_beneath`), on tmpfs
//! mounts made as root.

mod common;

use std::fs;
use std::io;
use std::os::fd::AsFd;
use std::process::Command;

use common::{sh, unavailable};
use rustix::fs::{Mode, OFlags};
use sdu_sys::mount::{clone_mount, open_beneath};

#[test]
fn a_copy_without_submounts_shows_what_a_mount_covers() {
    if !rustix::process::geteuid().is_root() {
        unavailable("mounting a tmpfs needs root");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    fs::create_dir(&base).unwrap();
    if let Err(e) = sh(Command::new("mount")
        .args(["-t", "tmpfs", "sdu-sys-base"])
        .arg(&base))
    {
        unavailable(&e);
        return;
    }
    fs::create_dir(base.join("d")).unwrap();
    fs::write(base.join("d/f"), b"beneath").unwrap();
    let covered = sh(Command::new("mount")
        .args(["-t", "tmpfs", "sdu-sys-cover"])
        .arg(base.join("d")));
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let root = rustix::fs::open(&base, flags, Mode::empty()).unwrap();
    let result = covered.map(|_| {
        // Through the mount: `d` is another mount's, refused.
        let through = open_beneath(root.as_fd(), b"d").map(|_| ());
        // Through the copy: `d` is the directory beneath, with its file.
        let copy = clone_mount(root.as_fd()).unwrap();
        let d = open_beneath(copy.as_fd(), b"d").unwrap();
        let f = rustix::fs::openat(&d, "f", OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty());
        let mut body = Vec::new();
        io::Read::read_to_end(&mut fs::File::from(f.unwrap()), &mut body).unwrap();
        // Never above the copy.
        let above = open_beneath(copy.as_fd(), b"..").map(|_| ());
        (through, body, above)
    });
    let _ = sh(Command::new("umount").arg("-l").arg(base.join("d")));
    let _ = sh(Command::new("umount").arg("-l").arg(&base));
    let (through, body, above) = result.unwrap();
    assert_eq!(through.unwrap_err().raw_os_error(), Some(exdev()));
    assert_eq!(body, b"beneath");
    assert_eq!(above.unwrap_err().raw_os_error(), Some(exdev()));
}

/// `EXDEV`.
fn exdev() -> i32 {
    rustix::io::Errno::XDEV.raw_os_error()
}

#[test]
fn without_cap_sys_admin_a_mount_is_not_copied() {
    let root = rustix::fs::open("/", OFlags::PATH | OFlags::CLOEXEC, Mode::empty()).unwrap();
    let got = std::thread::scope(|s| {
        s.spawn(|| {
            let nobody = rustix::process::Uid::from_raw(65534);
            if rustix::thread::set_thread_res_uid(nobody, nobody, nobody).is_err() {
                return None;
            }
            Some(clone_mount(root.as_fd()).map(|_| ()))
        })
        .join()
        .unwrap()
    });
    match got {
        Some(r) => assert_eq!(r.unwrap_err().kind(), io::ErrorKind::PermissionDenied),
        None => unavailable("a thread cannot become nobody here (not root)"),
    }
}
