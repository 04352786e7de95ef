//! Deleting from `sdu -i`, on a real terminal (tmux), on loopback XFS and
//! Btrfs: the marked entries go after `yes` is typed (and not before), the
//! filesystem frees what the browser said deleting them frees (measured by
//! the test itself: statvfs on XFS, Data Used of `btrfs filesystem usage`
//! on Btrfs), the browser shows that and a new scan, and a Btrfs snapshot
//! goes as a subvolume.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::browse::{assert_terminal_restored, names, press, pressed, start};
use crate::reclaim::{BTRFS_OPTS, XFS_OPTS};
use crate::tmux::Tmux;
use crate::util::*;

const K: usize = 1024;

/// The number after `label` on the screen.
fn figure(screen: &str, label: &str) -> u64 {
    screen
        .lines()
        .find_map(|l| l.split(label).nth(1))
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no {label:?} on the screen:\n{screen}"))
}

/// Sorts by name and marks the rows named `marks`; returns the screen
/// once the footer counts them.
pub(crate) fn mark(tmux: &Tmux, marks: &[&str]) -> String {
    let s = press(tmux, "n", "sort: name");
    // The sort keeps the cursor on its entry: back to the first row.
    tmux.keys(&["Home"]);
    let rows = names(&s);
    let mut at = 0;
    for m in marks {
        let want = rows
            .iter()
            .position(|r| r.trim_end_matches('/') == *m)
            .unwrap_or_else(|| panic!("no row {m}:\n{s}"));
        while at < want {
            tmux.keys(&["Down"]);
            at += 1;
        }
        tmux.keys(&["Space"]);
        at = (at + 1).min(rows.len() - 1);
    }
    let n = marks.len();
    tmux.wait_for("the marks", |s| s.contains(&format!(" {n} marked ")))
}

/// Marks the rows named `marks` (sorted by name first), asks to delete,
/// types a wrong word (the prompt closes, nothing goes), asks again, then
/// types `yes`; returns what the footer
/// said the marks free and the screen after the deletion. `bound` is the
/// footer's and the confirmation's word before the figure: `""` where it
/// is exact (a whole filesystem scanned, or as root where the filesystem
/// could say who else holds the shared data), `"up to "` where data it
/// counts may be held outside the scan, `"at least "` on Btrfs without
/// root, `"about "` for both.
fn mark_and_delete(tmux: &Tmux, marks: &[&str], dir: &Path, bound: &str) -> (u64, String) {
    let s = mark(tmux, marks);
    let frees = figure(&s, &format!("deleting them frees {bound}"));
    let s = press(tmux, "d", "Type yes");
    assert!(s.contains(&format!("frees {bound}{frees}")), "{s}");
    for m in marks {
        assert!(s.contains(&format!("│   ./{m}")), "{m} not listed:\n{s}");
    }
    tmux.keys(&["-l", "no"]);
    tmux.keys(&["Enter"]);
    let s = tmux.wait_for("the refusal", |s| s.contains("only yes deletes."));
    assert!(!s.contains("Type yes"), "the prompt stayed open:\n{s}");
    for m in marks {
        assert!(dir.join(m).exists(), "{m} went without a yes");
    }
    tmux.keys(&["Escape"]);
    tmux.wait_for("the notice closed", |s| !s.contains("only yes deletes."));
    press(tmux, "d", "Type yes");
    tmux.keys(&["-l", "yes"]);
    tmux.keys(&["Enter"]);
    let s = tmux.wait_for("what the deletion did", |s| {
        s.contains("The filesystem reports: ")
    });
    (frees, s)
}

/// Closes the notice of what the deletion did, returns the screen of the
/// new scan under it, quits with `status` and leaves the mount.
fn close_and_quit(tmux: &Tmux, status: u32) -> String {
    tmux.keys(&["Escape"]);
    let s = tmux.wait_for("the new scan", |s| !s.contains("The filesystem reports"));
    tmux.keys(&["q"]);
    assert_terminal_restored(tmux, status);
    tmux.keys(&["cd /", "Enter"]);
    s
}

/// On XFS (4 allocation groups, 512-byte inodes): `orig/` (300 + 200
/// KiB), `copy/` (its reflinked copy) and `keep/` (100 KiB). Deleting orig
/// and copy frees all their data, which neither frees alone.
#[test]
fn deleting_marked_entries_on_xfs_frees_what_was_shown() {
    let Some(fs) = Mounted::new(FsKind::Xfs, XFS_OPTS) else {
        return;
    };
    let Some(tmux) = Tmux::shell("delete-xfs") else {
        return;
    };
    // One directory in each allocation group first, made to stay: no inode
    // chunk loses its last inode (32 KiB that no st_blocks holds; see
    // tests/sdu/reclaim.rs).
    for pin in ["p0", "p1", "p2", "p3"] {
        fs::create_dir(fs.path().join(pin)).unwrap();
    }
    let root = fs.path().join("root");
    fs::create_dir_all(root.join("orig")).unwrap();
    fs::create_dir_all(root.join("keep")).unwrap();
    write_file(&root.join("orig/a"), 300 * K);
    write_file(&root.join("orig/b"), 200 * K);
    write_file(&root.join("keep/c"), 100 * K);
    run(Command::new("cp")
        .args(["-a", "--reflink=always"])
        .arg(root.join("orig"))
        .arg(root.join("copy")))
    .assert_ok();
    fs.remount();
    let before = fs.settled_used();
    start(&tmux, &root, "-B1 .");
    // `root` is not the whole filesystem, but the test's XFS has the
    // reverse-mapping btree: as root sdu asks it who else holds the
    // reflinked data orig and copy share (nobody), so the figure is exact,
    // which the measure below checks.
    let (frees, s) = mark_and_delete(&tmux, &["copy", "orig"], &root, "");
    assert!(frees >= (500 * K) as u64, "{s}");
    assert!(s.contains("Deleted 2 of 2 entries."), "{s}");
    assert_eq!(figure(&s, "sdu predicted: frees "), frees, "{s}");
    let reported = figure(&s, "The filesystem reports: ");
    assert!(!root.join("orig").exists() && !root.join("copy").exists());
    // The new scan: only keep is left.
    let s = close_and_quit(&tmux, 0);
    assert_eq!(names(&s), ["keep/"], "{s}");
    drop(tmux);
    let after = fs.settled_used();
    assert_eq!(before - after, frees, "freed, as statvfs says");
    assert_eq!(reported, frees, "statfs as the browser read it");
}

/// On Btrfs: two snapshots of a subvolume that is gone (f2, 200 KiB, in
/// both; the old f1, 300 KiB, only in s1; the new one only in s2).
/// Deleting both, as subvolumes, frees 800 KiB of data.
#[test]
fn deleting_two_snapshots_on_btrfs_frees_what_was_shown() {
    let Some(fs) = Mounted::new(FsKind::Btrfs, BTRFS_OPTS) else {
        return;
    };
    let Some(tmux) = Tmux::shell("delete-btrfs") else {
        return;
    };
    let p = |s: &str| fs.path().join(s);
    let btrfs = |args: &[&str]| {
        run(Command::new("btrfs").args(args)).assert_ok();
    };
    let path = |s: &str| p(s).to_str().unwrap().to_owned();
    btrfs(&["subvolume", "create", &path("vol")]);
    fs::create_dir(p("snaps")).unwrap();
    write_file(&p("vol/f1"), 300 * K);
    write_file(&p("vol/f2"), 200 * K);
    sync_fs(fs.path());
    btrfs(&["subvolume", "snapshot", &path("vol"), &path("snaps/s1")]);
    write_file(&p("vol/f1"), 300 * K);
    sync_fs(fs.path());
    btrfs(&["subvolume", "snapshot", &path("vol"), &path("snaps/s2")]);
    btrfs(&["subvolume", "delete", "-C", &path("vol")]);
    btrfs(&["subvolume", "sync", &path("")]);
    let before = fs.settled_used();
    start(&tmux, &p("snaps"), "-B1 .");
    // snaps/ is not the whole filesystem, but as root sdu asks Btrfs who
    // else holds what the snapshots share (nobody: the origin is gone), so
    // the figure is exact.
    let (frees, s) = mark_and_delete(&tmux, &["s1", "s2"], &p("snaps"), "");
    assert_eq!(frees, (800 * K) as u64, "{s}");
    assert!(
        s.contains("Deleted 2 of 2 entries, 2 as Btrfs subvolumes."),
        "{s}"
    );
    let reported = figure(&s, "The filesystem reports: ");
    let s = close_and_quit(&tmux, 0);
    assert!(
        s.contains("(empty directory)") && names(&s).is_empty(),
        "{s}"
    );
    drop(tmux);
    let out = run(Command::new("btrfs")
        .args(["subvolume", "list"])
        .arg(fs.path()));
    out.assert_ok();
    assert_eq!(out.stdout_str().trim(), "", "subvolumes left");
    btrfs(&["subvolume", "sync", &path("")]);
    let after = fs.settled_used();
    assert_eq!(before - after, frees, "Data Used freed");
    // statfs counts the snapshots' metadata too: a few 16 KiB tree blocks,
    // twice (DUP).
    assert!(
        (frees..=frees + (128 * K) as u64).contains(&reported),
        "statfs as the browser read it: {reported}, data {frees}"
    );
}

/// Without CAP_SYS_ADMIN (dropped from the bounding set) and without
/// `user_subvol_rm_allowed`, a snapshot cannot be deleted: `d` on the
/// marks holding it says so by path before asking, and deletes nothing
/// (the other entry marked stays too). The snapshot is left as it was: at
/// its name, read-only.
#[test]
fn a_subvolume_without_the_privilege_is_refused_clearly() {
    let Some(fs) = Mounted::new(FsKind::Btrfs, BTRFS_OPTS) else {
        return;
    };
    let Some(tmux) = Tmux::shell("delete-eperm") else {
        return;
    };
    let p = |s: &str| fs.path().join(s);
    run(Command::new("btrfs")
        .args(["subvolume", "create"])
        .arg(p("vol")))
    .assert_ok();
    write_file(&p("vol/f"), 100 * K);
    fs::create_dir(p("snaps")).unwrap();
    run(Command::new("btrfs")
        .args(["subvolume", "snapshot", "-r"])
        .arg(p("vol"))
        .arg(p("snaps/s1")))
    .assert_ok();
    write_file(&p("snaps/t"), 10 * K);
    tmux.keys(&[
        &format!(
            "cd '{}' && setpriv --bounding-set -sys_admin '{}' -i -B1 .",
            p("snaps").display(),
            sdu_bin().display()
        ),
        "Enter",
    ]);
    tmux.wait_for("the browser", |s| s.contains("Reclaimable"));
    // Without CAP_SYS_ADMIN, the extents are read by FIEMAP, as
    // referenced: t's may be held only in part, and deleting may free
    // more. s1 shares all its data with vol, outside the scan: each of its
    // extents is seen once, so none counts, and deleting may free more
    // only (another part of an extent may be held inside). "At least".
    let s = mark(&tmux, &["s1", "t"]);
    assert!(s.contains("deleting them frees at least "), "{s}");
    let s = pressed(&tmux, "d", "can't delete here");
    assert!(!s.contains("Type yes"), "{s}");
    let flat = s.replace('\n', " ");
    assert!(flat.contains("Not deleting the 2 marked entries"), "{s}");
    assert!(
        flat.contains("a Btrfs subvolume, and deleting one needs CAP_SYS_ADMIN"),
        "{s}"
    );
    assert!(p("snaps/s1/f").exists() && p("snaps/t").exists());
    let ro = run(Command::new("btrfs")
        .args(["property", "get", "-ts"])
        .arg(p("snaps/s1"))
        .arg("ro"));
    assert_eq!(ro.stdout_str().trim(), "ro=true", "{ro:?}");
    let left: Vec<_> = fs::read_dir(p("snaps"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
    tmux.keys(&["Escape"]);
    tmux.wait_for("the notice closed", |s| !s.contains("can't delete here"));
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
    tmux.keys(&["cd /", "Enter"]);
}

/// A filesystem mounted inside a marked directory: `d` refuses before
/// asking, and names it; nothing on it is touched (tests/sdu/browse_delete.rs
/// has the mount made after the prompt, refused when the deletion runs).
#[test]
fn a_mount_point_inside_stops_the_deletion() {
    if !is_root() && unavailable::<()>("mounting a tmpfs needs root").is_none() {
        return;
    }
    let Some(tmux) = Tmux::shell("delete-mount") else {
        return;
    };
    let t = TestDir::new();
    let root = t.path().join("root");
    fs::create_dir_all(root.join("d/inner")).unwrap();
    write_file(&root.join("d/a"), 4 * K);
    run(Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "none"])
        .arg(root.join("d/inner")))
    .assert_ok();
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _u = Unmount(root.join("d/inner"));
    write_file(&root.join("d/inner/kept"), 4 * K);
    start(&tmux, &root, "-B1 .");
    mark(&tmux, &["d"]);
    let s = pressed(&tmux, "d", "can't delete here");
    assert!(!s.contains("Type yes"), "{s}");
    assert!(s.contains("'./d/inner' inside it is a mount point"), "{s}");
    // Refused before anything was removed.
    assert!(root.join("d/a").exists());
    assert!(root.join("d/inner/kept").exists());
    tmux.keys(&["Escape"]);
    tmux.wait_for("the notice closed", |s| !s.contains("can't delete here"));
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
}

/// `sdu -i --import FILE` browses the saved scan (not the current
/// directory), and refuses to delete from it.
#[test]
fn a_saved_scan_browses_and_does_not_delete() {
    let Some(tmux) = Tmux::shell("delete-import") else {
        return;
    };
    let t = TestDir::new();
    let root = t.path().join("saved-root");
    fs::create_dir_all(root.join("only-in-the-scan")).unwrap();
    write_file(&root.join("only-in-the-scan/f"), 8 * K);
    let file = t.path().join("scan.json");
    run(Command::new(sdu_bin())
        .arg("--export")
        .arg(&file)
        .arg(&root))
    .assert_ok();
    fs::remove_dir_all(&root).unwrap();
    let elsewhere = t.mkdir("elsewhere");
    start(
        &tmux,
        &elsewhere,
        &format!("-B1 --import '{}'", file.display()),
    );
    let s = tmux.wait_for("the saved entries", |s| s.contains("only-in-the-scan/"));
    assert_eq!(names(&s), ["only-in-the-scan/"], "{s}");
    press(&tmux, "d", "it cannot delete");
    tmux.keys(&["Escape"]);
    tmux.wait_for("the notice gone", |s| !s.contains("it cannot delete"));
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
}

/// Snapshots made under `snaps/`, of a subvolume `vol` with a 200 KiB file
/// that was then rewritten: each snapshot holds 200 KiB of its own.
fn two_snapshots(fs: &Mounted) {
    let p = |s: &str| fs.path().join(s);
    run(Command::new("btrfs")
        .args(["subvolume", "create"])
        .arg(p("vol")))
    .assert_ok();
    fs::create_dir(p("snaps")).unwrap();
    for s in ["s1", "s2"] {
        write_file(&p("vol/f"), 200 * K);
        sync_fs(fs.path());
        run(Command::new("btrfs")
            .args(["subvolume", "snapshot"])
            .arg(p("vol"))
            .arg(p(&format!("snaps/{s}"))))
        .assert_ok();
    }
    write_file(&p("vol/f"), 200 * K);
    sync_fs(fs.path());
}

/// A directory holding snapshots: they go as subvolumes, then the
/// directory; the filesystem frees their data.
#[test]
fn a_directory_of_snapshots_goes_with_its_subvolumes() {
    let Some(fs) = Mounted::new(FsKind::Btrfs, BTRFS_OPTS) else {
        return;
    };
    let Some(tmux) = Tmux::shell("delete-nested") else {
        return;
    };
    two_snapshots(&fs);
    let before = fs.settled_used();
    start(&tmux, fs.path(), "-B1 .");
    // The whole filesystem, as root: the figure is exact.
    let (frees, s) = mark_and_delete(&tmux, &["snaps"], fs.path(), "");
    assert_eq!(frees, (400 * K) as u64, "{s}");
    assert!(
        s.contains("Deleted 1 of 1 entry, 2 as Btrfs subvolumes."),
        "{s}"
    );
    assert!(!fs.path().join("snaps").exists());
    close_and_quit(&tmux, 0);
    drop(tmux);
    run(Command::new("btrfs")
        .args(["subvolume", "sync"])
        .arg(fs.path()))
    .assert_ok();
    assert_eq!(before - fs.settled_used(), frees, "Data Used freed");
}

/// PATHs given on the command line are roots: deleting every one leaves
/// nothing to browse, and sdu says what it did on stderr as it exits.
#[test]
fn deleting_every_root_ends_the_browser_with_what_it_did() {
    let Some(fs) = Mounted::new(FsKind::Btrfs, BTRFS_OPTS) else {
        return;
    };
    let Some(tmux) = Tmux::shell("delete-roots") else {
        return;
    };
    two_snapshots(&fs);
    start(&tmux, &fs.path().join("snaps"), "-B1 s1 s2");
    tmux.keys(&["Space"]);
    tmux.keys(&["Space"]);
    tmux.wait_for("the marks", |s| s.contains(" 2 marked "));
    press(&tmux, "d", "Type yes");
    tmux.keys(&["-l", "yes"]);
    tmux.keys(&["Enter"]);
    let s = tmux.wait_for("the report on exit", |s| {
        s.contains("Nothing of what was scanned is left.")
    });
    assert!(
        s.contains("sdu: Deleted 2 of 2 entries, 2 as Btrfs subvolumes."),
        "{s}"
    );
    assert!(s.contains("sdu: The filesystem reports: "), "{s}");
    assert_terminal_restored(&tmux, 0);
    assert!(!fs.path().join("snaps/s1").exists() && !fs.path().join("snaps/s2").exists());
    tmux.keys(&["cd /", "Enter"]);
}

/// The tree changed between the scan and the `yes`: a marked entry was
/// deleted by someone else (it counts as done, and the others go on), and
/// a file was added inside another (it goes with its directory, and the
/// result says so, which explains the figure the filesystem reports).
#[test]
fn deleting_after_the_tree_changed_says_what_was_not_in_the_scan() {
    let Some(fs) = Mounted::new(FsKind::Xfs, XFS_OPTS) else {
        return;
    };
    let Some(tmux) = Tmux::shell("delete-changed") else {
        return;
    };
    for pin in ["p0", "p1", "p2", "p3"] {
        fs::create_dir(fs.path().join(pin)).unwrap();
    }
    let root = fs.path().join("root");
    for d in ["a", "c", "keep"] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    write_file(&root.join("a/f"), 300 * K);
    write_file(&root.join("c/f"), 200 * K);
    write_file(&root.join("keep/f"), 100 * K);
    fs.remount();
    start(&tmux, &root, "-B1 .");
    let s = mark(&tmux, &["a", "c"]);
    let frees = figure(&s, "deleting them frees ");
    press(&tmux, "d", "Type yes");
    // Since the scan: a is gone, c has 5 MiB more.
    fs::remove_dir_all(root.join("a")).unwrap();
    write_file(&root.join("c/new"), 5 * 1024 * K);
    tmux.keys(&["-l", "yes"]);
    tmux.keys(&["Enter"]);
    let s = tmux.wait_for("what the deletion did", |s| {
        s.contains("The filesystem reports: ")
    });
    assert!(
        s.contains("Deleted 2 of 2 entries (1 already gone: not where the scan saw it)."),
        "{s}"
    );
    assert!(
        s.contains("Also deleted: 1 entry, 5242880, not in the scan (added since)."),
        "{s}"
    );
    // statfs before and after the deletion: c's data and the new file,
    // give or take the metadata blocks XFS frees with them (its free-space
    // btrees; the tree was not remounted after the change).
    let reported = figure(&s, "The filesystem reports: ");
    let expected = frees - (300 * K) as u64 + (5 * 1024 * K) as u64;
    assert!(
        (expected..expected + (64 * K) as u64).contains(&reported),
        "{reported} freed, {expected} expected:\n{s}"
    );
    assert!(!root.join("c").exists() && root.join("keep/f").exists());
    let s = close_and_quit(&tmux, 0);
    assert_eq!(names(&s), ["keep/"], "{s}");
}
