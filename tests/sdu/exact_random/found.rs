//! Causes the property test found, each as a test of its own: built,
//! scanned, deleted and measured as `mod.rs` does.

use std::fs;
use std::process::Command;

use super::{BLK, Fig, sdu_as_nobody, usage, verdict};
use crate::util::*;

/// A file whose extent is cloned into itself (FICLONERANGE within one
/// file) and held by nothing else, in a scan of the whole filesystem:
/// FIEMAP flags the extent shared, and the scan sees one file map it
/// twice. Deleting the file frees the extent; without root the figure is
/// that or marked. (Found by the property test, seed 2.)
#[test]
fn btrfs_file_cloned_into_itself_whole_filesystem() {
    let Some(fs) = Mounted::new(FsKind::Btrfs, "max_inline=0") else {
        return;
    };
    let mnt = fs.path().to_owned();
    let t = Tree { root: &mnt };
    t.write("d/f", 37 * BLK);
    t.write("d/g", 16 * BLK);
    t.clone_range("d/f", 6 * BLK, "d/f", 37 * BLK, 7 * BLK);
    fs.remount();
    let args = ["--json", "-a", "."];
    let figs = |root: bool| {
        let out = sdu_in(&mnt, root, &args);
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let entries = doc["entries"].as_array().unwrap().clone();
        ["./d/f", "./d"].map(|p| {
            Fig::of(
                entries
                    .iter()
                    .find(|e| e["path"] == p)
                    .unwrap_or_else(|| panic!("no {p}: {out:?}")),
            )
        })
    };
    let (root, user) = (figs(true), figs(false));
    let before = usage(&fs);
    fs::remove_file(mnt.join("d/f")).unwrap();
    let f = (before.0 - usage(&fs).0) as i64;
    fs::remove_file(mnt.join("d/g")).unwrap();
    let d = (before.0 - usage(&fs).0) as i64;
    let t = format!("root {root:?}\nwithout root {user:?}\nfreed: d/f {f}, d {d}");
    assert_eq!(
        (f, d),
        (37 * BLK as i64, 53 * BLK as i64),
        "not as built: {t}"
    );
    for (fig, freed) in root.iter().zip([f, d]) {
        assert_eq!(verdict(true, fig, (freed, freed)), None, "as root: {t}");
    }
    for (fig, freed) in user.iter().zip([f, d]) {
        assert_eq!(
            verdict(false, fig, (freed, freed)),
            None,
            "without root: {t}"
        );
    }
}

/// A symlink in a snapshot, unchanged since its origin was snapshotted,
/// given as PATH: its target is inline data the origin still holds
/// (filesystems.md, "Btrfs metadata": an inline file's bytes count only when
/// no subvolume outside holds the same inode unchanged), so deleting it
/// frees nothing, as for a small inline file beside it. (Found by the
/// property test, seed 93.)
#[test]
fn btrfs_symlink_in_a_snapshot_as_path() {
    let Some(fs) = Mounted::new(FsKind::Btrfs, "space_cache=v2") else {
        return;
    };
    let mnt = fs.path().to_owned();
    crate::btrfs::subvolume(&mnt.join("v"));
    std::os::unix::fs::symlink("/some/target", mnt.join("v/l")).unwrap();
    fs::write(mnt.join("v/small"), fresh_bytes(700)).unwrap();
    sync_fs(&mnt);
    std::thread::sleep(std::time::Duration::from_millis(200));
    run(Command::new("btrfs")
        .args(["subvolume", "snapshot"])
        .arg(mnt.join("v"))
        .arg(mnt.join("s")))
    .assert_ok();
    fs.remount();
    let fig = |root: bool, path: &str| {
        let out = sdu_in(&mnt, root, &["--json", "-s", path]);
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        Fig::of(&doc["entries"][0])
    };
    let figs: Vec<(&str, Fig, Fig)> = ["s/l", "s/small"]
        .into_iter()
        .map(|p| (p, fig(true, p), fig(false, p)))
        .collect();
    let before = usage(&fs);
    for p in ["s/l", "s/small"] {
        fs::remove_file(mnt.join(p)).unwrap();
    }
    let freed = before.0 as i64 - usage(&fs).0 as i64;
    let t = format!("{figs:?}, data freed by deleting both {freed}");
    assert_eq!(freed, 0, "not as built: {t}");
    for (_, root, user) in &figs {
        assert_eq!(verdict(true, root, (0, 0)), None, "as root: {t}");
        assert_eq!(verdict(false, user, (0, 0)), None, "without root: {t}");
    }
}

/// The other way a symlink given as PATH reaches no filesystem probe:
/// as `nobody`, in a directory it may search but not list (`0711`), so
/// that the directory holding the link cannot be opened either. Its target
/// may be inline data a snapshot shares, which only root can ask: the
/// figure is a bound, at most.
#[test]
fn btrfs_symlink_as_path_in_a_directory_nobody_cannot_list() {
    let Some(fs) = Mounted::new(FsKind::Btrfs, "space_cache=v2") else {
        return;
    };
    let mnt = fs.path().to_owned();
    chmod(mnt.parent().unwrap(), 0o755);
    crate::btrfs::subvolume(&mnt.join("v"));
    fs::create_dir(mnt.join("v/d")).unwrap();
    std::os::unix::fs::symlink("/some/target", mnt.join("v/d/l")).unwrap();
    chmod(&mnt.join("v/d"), 0o711);
    sync_fs(&mnt);
    std::thread::sleep(std::time::Duration::from_millis(200));
    run(Command::new("btrfs")
        .args(["subvolume", "snapshot"])
        .arg(mnt.join("v"))
        .arg(mnt.join("s")))
    .assert_ok();
    fs.remount();
    let out = sdu_as_nobody(&mnt, &["--json".into(), "-s".into(), "s/d/l".into()]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let fig = Fig::of(&doc["entries"][0]);
    let before = usage(&fs);
    fs::remove_file(mnt.join("s/d/l")).unwrap();
    let freed = before.0 as i64 - usage(&fs).0 as i64;
    let t = format!("s/d/l as nobody: {fig:?}; deleting it frees {freed}");
    assert_eq!(freed, 0, "not as built: {t}");
    assert_eq!(verdict(false, &fig, (0, 0)), None, "{t}");
}

/// `sdu -s -c --exclude d v/d/e v`: the PATH `v/d/e` lies in a part of
/// `v` the exclusion leaves out, and is measured all the same; the `-c`
/// total must hold both, as deleting both frees both. (Found by the
/// property test, seed 751; 914, 1419 and 1535 with `--exclude-caches`.)
#[test]
fn btrfs_total_of_a_path_inside_an_excluded_part_of_another() {
    let Some(fs) = Mounted::new(FsKind::Btrfs, "max_inline=0") else {
        return;
    };
    let mnt = fs.path().to_owned();
    let t = Tree { root: &mnt };
    t.write("v/d/e/a", 4 * BLK);
    t.write("v/b", 2 * BLK);
    fs.remount();
    let out = sdu_in(
        &mnt,
        true,
        &["--json", "-s", "-c", "--exclude", "d", "v/d/e", "v"],
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = [&doc["entries"][0], &doc["entries"][1], &doc["total"]].map(Fig::of);
    let before = usage(&fs);
    let mut freed = Vec::new();
    for f in ["v/d/e/a", "v/b"] {
        fs::remove_file(mnt.join(f)).unwrap();
        freed.push((before.0 - usage(&fs).0) as i64);
    }
    let want = [freed[0], freed[1] - freed[0], freed[1]];
    let t = format!("v/d/e, v, total: {rows:?}; deleting them frees {want:?}");
    assert_eq!(want, [16384, 8192, 24576], "not as built: {t}");
    for (fig, freed) in rows.iter().zip(want) {
        assert_eq!(verdict(true, fig, (freed, freed)), None, "as root: {t}");
    }
}

/// The other ways a directory's own bytes on Btrfs reach Reclaimable
/// without the directory being read as one: a snapshot of subvolume 5
/// (16 KiB of its own, copied from the top-level root directory) given as
/// PATH where `nobody` cannot list it, and under `-L`, where directories
/// are counted through their links by inode, as root and as `nobody`.
/// Deleting the snapshot frees no data: each figure is 0, or a bound
/// holding 0 (`-L` reads extents with FIEMAP, as root too: a bound).
#[test]
fn btrfs_own_bytes_of_a_snapshot_of_subvolume_5_unread_or_under_l() {
    let Some(fs) = Mounted::new(FsKind::Btrfs, "max_inline=0") else {
        return;
    };
    let mnt = fs.path().to_owned();
    chmod(mnt.parent().unwrap(), 0o755);
    Tree { root: &mnt }.write("big", 16 * BLK);
    fs::create_dir(mnt.join("d")).unwrap();
    run(Command::new("btrfs")
        .args(["subvolume", "snapshot"])
        .arg(&mnt)
        .arg(mnt.join("d/s")))
    .assert_ok();
    fs.remount();
    let fig = |out: &Output| {
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        Fig::of(&doc["entries"][0])
    };
    let root_l = fig(&sdu_in(&mnt, true, &["--json", "-L", "-s", "d"]));
    chmod(&mnt.join("d/s"), 0o700);
    let nobody = |args: &[&str]| {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        fig(&sdu_as_nobody(&mnt, &args))
    };
    let figs = [
        ("d/s as nobody", nobody(&["--json", "-s", "d/s"])),
        ("-L d as nobody", nobody(&["--json", "-L", "-s", "d"])),
    ];
    let before = usage(&fs);
    crate::util::btrfs(&["subvolume", "delete", "-C"], &mnt.join("d/s"));
    crate::util::btrfs(&["subvolume", "sync"], &mnt);
    let freed = before.0 as i64 - usage(&fs).0 as i64;
    let t = format!("-L d as root: {root_l:?}; {figs:?}; deleting d/s frees {freed}");
    assert_eq!(freed, 0, "not as built: {t}");
    // Under -L even root reads extents with FIEMAP (filesystems.md, "Why it syncs"), so its
    // figure may be a bound: in the right direction.
    assert_eq!(verdict(false, &root_l, (0, 0)), None, "{t}");
    for (_, f) in &figs {
        assert_eq!(verdict(false, f, (0, 0)), None, "{t}");
    }
}

/// As `nobody`, `sdu -s d` where `d/s` is a snapshot of subvolume 5 that
/// `nobody` cannot list: the figure is marked at least (something was
/// left out), yet it holds the directory's own 16 KiB, which deleting the
/// snapshot does not free; a figure above what deleting frees must say
/// at most. (Found by the property test, seed 1014.)
#[test]
fn btrfs_unreadable_snapshot_of_subvolume_5_as_nobody() {
    let Some(fs) = Mounted::new(FsKind::Btrfs, "max_inline=0") else {
        return;
    };
    let mnt = fs.path().to_owned();
    chmod(mnt.parent().unwrap(), 0o755);
    Tree { root: &mnt }.write("big", 16 * BLK);
    fs::create_dir(mnt.join("d")).unwrap();
    run(Command::new("btrfs")
        .args(["subvolume", "snapshot"])
        .arg(&mnt)
        .arg(mnt.join("d/s")))
    .assert_ok();
    chmod(&mnt.join("d/s"), 0o700);
    fs.remount();
    let out = sdu_as_nobody(&mnt, &["--json".into(), "-s".into(), "d".into()]);
    assert_eq!(out.code, Some(1), "{out:?}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let fig = Fig::of(&doc["entries"][0]);
    let before = usage(&fs);
    crate::util::btrfs(&["subvolume", "delete", "-C"], &mnt.join("d/s"));
    crate::util::btrfs(&["subvolume", "sync"], &mnt);
    let freed = before.0 as i64 - usage(&fs).0 as i64;
    let t = format!("d as nobody: {fig:?}; deleting d/s frees {freed}");
    assert_eq!(freed, 0, "not as built: {t}");
    assert_eq!(verdict(false, &fig, (0, 0)), None, "{t}");
}
