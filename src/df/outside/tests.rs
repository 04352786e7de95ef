//! The subvolumes outside a Btrfs mount, on a loopback Btrfs: mounted
//! with `subvol=sub`, a snapshot of it in the top level, a subvolume
//! mounted elsewhere with one nested in it, one in a plain directory of
//! the top level, one in `sub` mounted at its own place, one in `sub`
//! beneath a tmpfs; as root and without `CAP_SYS_ADMIN`.

use std::fs;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Command;

use rustix::fs::{Mode, OFlags};

use super::*;
use crate::df::under_mounts::tests::{Mounted, as_nobody, mount_at, open_dir};
use crate::df::under_mounts::under_mounts;
use crate::extents::test_files::{LoopBtrfs, sh, unavailable};

fn btrfs(args: &[&str], p: &Path) {
    sh(Command::new("btrfs").args(args).arg(p)).unwrap();
}

/// Whether the file `rel` lies beneath the directory open at `dir`.
fn holds(dir: &OwnedFd, rel: &str) -> bool {
    rustix::fs::openat(dir, rel, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()).is_ok()
}

#[test]
fn the_subvolumes_a_walk_of_the_mount_misses_are_given_once_each() {
    let Some(fs) = LoopBtrfs::new(1) else {
        return;
    };
    let top = &fs.mnt;
    let sv = |rel: &str| btrfs(&["subvolume", "create"], &top.join(rel));
    sv("sub");
    sv("sub/nested");
    sv("sub/own");
    fs::create_dir(top.join("sub/hidden")).unwrap();
    fs::create_dir(top.join("sub/nested/dd")).unwrap();
    sv("sub/hidden/hsv");
    sv("other");
    sv("other/inner");
    fs::create_dir(top.join("dir")).unwrap();
    sv("dir/deep");
    for (rel, body) in [
        ("sub/nested/n", "n"),
        ("sub/nested/dd/under", "u"),
        ("sub/own/o", "o"),
        ("sub/hidden/hsv/h", "h"),
        ("other/inner/i", "i"),
        ("dir/deep/d", "d"),
        ("loose", "in the top level"),
    ] {
        fs::write(top.join(rel), body).unwrap();
    }
    sh(Command::new("btrfs")
        .args(["subvolume", "snapshot", "-r"])
        .arg(top.join("sub"))
        .arg(top.join("snap")))
    .unwrap();

    let tmp = tempfile::tempdir().unwrap();
    // Open to nobody, who reaches the mounts by their points.
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let (m1, m2) = (tmp.path().join("m1"), tmp.path().join("m2"));
    fs::create_dir(&m1).unwrap();
    fs::create_dir(&m2).unwrap();
    let mut m = Mounted(Vec::new());
    let made = m
        .mount(&["-t", "btrfs", "-o", "subvol=sub", &fs.dev], &m1)
        .and_then(|()| m.mount(&["-t", "btrfs", "-o", "subvol=other", &fs.dev], &m2))
        .and_then(|()| {
            m.mount(
                &["-t", "btrfs", "-o", "subvol=sub/own", &fs.dev],
                &m1.join("own"),
            )
        })
        .and_then(|()| m.mount(&["-t", "tmpfs", "sdu-over"], &m1.join("hidden")))
        .and_then(|()| m.mount(&["-t", "tmpfs", "sdu-in-nested"], &m1.join("nested/dd")));
    if let Err(e) = made {
        unavailable(&e);
        return;
    }
    let mounts = sdu_sys::mountinfo::read().unwrap();
    let mount = mount_at(&m1);
    let root = open_dir(&m1);

    let out = outside_subvolumes(root.as_fd(), &mount, &mounts);
    let names: Vec<String> = (out.roots.iter())
        .map(|(n, _)| String::from_utf8_lossy(n).into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "<FS_TREE>/dir/deep",
            "<FS_TREE>/other",
            "<FS_TREE>/snap",
            "<FS_TREE>/sub/own"
        ]
    );
    let at = |p: &Path| Some(p.as_os_str().as_encoded_bytes().to_vec());
    assert_eq!(out.mounted_at, [None, at(&m2), None, at(&m1.join("own"))]);
    assert_eq!(out.missed, Some(0));
    assert_eq!(out.holding, [b"<FS_TREE>".to_vec()]);
    // Each its subvolume's root, holding what was planted: the nested one
    // as part of the one it lies in; the snapshot, what `sub` held.
    let fds: Vec<&OwnedFd> = out.roots.iter().map(|(_, fd)| &**fd).collect();
    assert!(holds(fds[0], "d"));
    assert!(holds(fds[1], "inner/i"));
    assert!(
        holds(fds[2], "own") && !holds(fds[2], "own/o"),
        "a snapshot stops at subvolumes"
    );
    assert!(holds(fds[3], "o"));
    // The subvolume beneath the tmpfs is the covered directory's to walk;
    // a directory covered in a subvolume nested in the mount's is opened
    // across the subvolume's root (no mount there).
    let u = under_mounts(root.as_fd(), &mount, &mounts);
    let covered: Vec<&[u8]> = u.covered.iter().map(|c| &c.point[..]).collect();
    let point = |rel: &str| m1.join(rel).as_os_str().as_encoded_bytes().to_vec();
    assert_eq!(covered, [point("hidden"), point("nested/dd")]);
    assert!(holds(u.covered[0].fd.as_ref().unwrap(), "hsv/h"));
    assert!(holds(u.covered[1].fd.as_ref().unwrap(), "under"));

    // From the top level's own mount, nothing lies outside.
    let top_mount = mount_at(top);
    let top_root = open_dir(top);
    let all = outside_subvolumes(top_root.as_fd(), &top_mount, &mounts);
    assert!(all.roots.is_empty() && all.holding.is_empty(), "{all:?}");
    assert_eq!(all.missed, Some(0));

    // Without CAP_SYS_ADMIN: the subvolumes mounted, at their mount
    // points; the others not listed, not guessed. From the top level,
    // nothing to miss.
    let user = as_nobody(|| outside_subvolumes(root.as_fd(), &mount, &mounts));
    let names: Vec<String> = (user.roots.iter())
        .map(|(n, _)| String::from_utf8_lossy(n).into_owned())
        .collect();
    assert_eq!(names, ["<FS_TREE>/other", "<FS_TREE>/sub/own"]);
    assert_eq!(user.mounted_at, [at(&m2), at(&m1.join("own"))]);
    assert!(user.missed.is_none(), "{user:?}");
    assert!(holds(&user.roots[0].1, "inner/i") && holds(&user.roots[1].1, "o"));
    let user = as_nobody(|| outside_subvolumes(top_root.as_fd(), &top_mount, &mounts));
    assert!(user.roots.is_empty() && user.missed == Some(0), "{user:?}");
}

#[test]
fn off_btrfs_nothing_lies_outside() {
    let root = open_dir(Path::new("/proc"));
    let mounts = sdu_sys::mountinfo::read().unwrap();
    let mount = mount_at(Path::new("/proc"));
    let out = outside_subvolumes(root.as_fd(), &mount, &mounts);
    assert!(out.roots.is_empty() && out.missed == Some(0), "{out:?}");
}
