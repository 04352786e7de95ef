//! The harness's own reference, checked where the property test found it
//! short: built, scanned, deleted and measured as `mod.rs` does, with the
//! bound `mod.rs` takes for what deleting frees.

use std::fs;
use std::process::Command;

use std::os::unix::fs::MetadataExt;

use super::build::Build;
use super::{BLK, Fig, inline_bytes, inline_extent, usage, verdict};
use crate::util::*;

/// A compressed inline file grown by `fallocate` from offset 0: Btrfs
/// keeps its inline extent at offset 0 and preallocates the rest, so the
/// file is larger than a block yet holds inline data in metadata. Its
/// `st_blocks` (and sdu's figure) count that sector, which deleting frees
/// from metadata, not from Data Used: the harness's bound for what
/// deleting frees takes it as inline bytes. (Found by the property test,
/// seed 2651.)
#[test]
fn btrfs_compressed_inline_file_grown_by_fallocate() {
    let Some(fs) = Mounted::new(FsKind::Btrfs, "compress=zstd:3") else {
        return;
    };
    let mnt = fs.path().to_owned();
    fs::create_dir(mnt.join("d")).unwrap();
    let text = "a line of text\n".repeat(200);
    fs::write(mnt.join("d/f"), &text.as_bytes()[..2559]).unwrap();
    sync_fs(&mnt);
    run(Command::new("fallocate")
        .args(["-o", "0", "-l", "40960"])
        .arg(mnt.join("d/f")))
    .assert_ok();
    fs.remount();
    let f = mnt.join("d/f");
    let inline = inline_extent(&f, &fs::symlink_metadata(&f).unwrap()) as i64;
    let figs = |root: bool| {
        let out = sdu_in(&mnt, root, &["--json", "-s", "d"]);
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        Fig::of(&doc["entries"][0])
    };
    let (root, user) = (figs(true), figs(false));
    let before = usage(&fs);
    fs::remove_file(&f).unwrap();
    let data = (before.0 - usage(&fs).0) as i64;
    let t = format!(
        "d as root {root:?}, without root {user:?}; deleting d/f frees {data} of data, \
         its inline extent {inline}"
    );
    assert_eq!(data, 9 * BLK as i64, "not as built: {t}");
    let freed = (data, data + inline);
    assert_eq!(verdict(true, &root, freed), None, "as root: {t}");
    assert_eq!(verdict(false, &user, freed), None, "without root: {t}");
}

/// Two inline files made apart after a snapshot, one in the snapshot and
/// one in its origin, within one tick of the clock: Btrfs gives both the
/// same inode number (each subvolume goes on from the numbers the snapshot
/// copied) and the same birth and change times, so they look like one
/// version held in both. Neither holds the other: deleting the origin's
/// frees its inline extent from metadata, which sdu counts as root. The
/// harness's bound takes it as inline bytes because that version was not
/// there when either subvolume was made. (Found by the property test, seed
/// 3744: `s15/d4/r17` and `s16/r18`.)
#[test]
fn btrfs_equal_inline_versions_made_apart_in_a_snapshot_and_its_origin() {
    let Some(fs) = Mounted::new(FsKind::Btrfs, "space_cache=v2") else {
        return;
    };
    let mnt = fs.path().to_owned();
    let mut b = Build::new(&mnt, 0, false);
    crate::util::btrfs(&["subvolume", "create"], &mnt.join("v"));
    fs::write(mnt.join("v/a"), [7u8; 806]).unwrap();
    run(Command::new("btrfs")
        .args(["subvolume", "snapshot"])
        .arg(mnt.join("v"))
        .arg(mnt.join("s")))
    .assert_ok();
    b.subvols.push("v".into());
    b.subvols.push("s".into());
    b.edges.push(("v".into(), "s".into()));
    // Past the clock tick that made the snapshot (change times come from
    // the coarse clock).
    std::thread::sleep(std::time::Duration::from_millis(50));
    let same = |x: &fs::Metadata, y: &fs::Metadata| {
        (x.ino(), x.created().ok(), x.ctime(), x.ctime_nsec())
            == (y.ino(), y.created().ok(), y.ctime(), y.ctime_nsec())
    };
    let made = (0..50).find_map(|i| {
        let (x, y) = (format!("v/x{i}"), format!("s/y{i}"));
        fs::write(mnt.join(&x), [9u8; 806]).unwrap();
        fs::write(mnt.join(&y), [9u8; 806]).unwrap();
        let md = |p: &str| fs::symlink_metadata(mnt.join(p)).unwrap();
        same(&md(&x), &md(&y)).then_some(x)
    });
    let x = made.expect("no two files made in one tick of the clock");
    fs.remount();
    let f = mnt.join(&x);
    let inline = inline_bytes(&b, std::slice::from_ref(&x), &b.walk().1) as i64;
    let figs = |root: bool| {
        let out = sdu_in(&mnt, root, &["--json", "-s", &x]);
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        Fig::of(&doc["entries"][0])
    };
    let (root, user) = (figs(true), figs(false));
    let before = usage(&fs);
    fs::remove_file(&f).unwrap();
    let data = (before.0 - usage(&fs).0) as i64;
    let t = format!(
        "{x} as root {root:?}, without root {user:?}; deleting it frees {data} of data, \
         the harness's inline bytes {inline}"
    );
    assert_eq!(data, 0, "not as built: {t}");
    assert_eq!(inline, BLK as i64, "{t}");
    let freed = (data, data + inline);
    assert_eq!(verdict(true, &root, freed), None, "as root: {t}");
    assert_eq!(verdict(false, &user, freed), None, "without root: {t}");
}

/// A file cloned into itself (its one extent referenced in whole and
/// again in part), beside a snapshot made before it: the tree search sees
/// that nobody else holds the extent and gives the file all of it, exact;
/// FIEMAP sees the block mapped twice, cannot tell who else holds it, and
/// marks the file at least what it counts. The harness's check of the tree
/// search against FIEMAP takes that mark as right where it points toward
/// root's figure. Root's figure is what deleting the file frees. (Found by
/// the property test, seeds 4211 and 4355.)
#[test]
fn btrfs_file_cloned_into_itself_beside_a_snapshot() {
    let Some(fs) = Mounted::new(FsKind::Btrfs, "max_inline=0") else {
        return;
    };
    let mnt = fs.path().to_owned();
    crate::util::btrfs(&["subvolume", "create"], &mnt.join("v"));
    write_file(&mnt.join("v/a"), 8192);
    run(Command::new("btrfs")
        .args(["subvolume", "snapshot", "-r"])
        .arg(mnt.join("v"))
        .arg(mnt.join("s")))
    .assert_ok();
    let f = mnt.join("v/r");
    write_file(&f, 32768);
    sync_fs(&mnt);
    let reflink = format!("reflink {} 24576 40960 8192", f.display());
    run(Command::new("xfs_io").args(["-c", &reflink]).arg(&f)).assert_ok();
    fs.remount();
    assert_eq!(cloned_into_itself(&mnt), vec![f.clone()], "not as built");
    let checked = search_matches_fiemap(&mnt);
    let figs = |root: bool, extra: &[&str]| {
        let mut a = vec!["--json", "-s"];
        a.extend(extra);
        a.push("v/r");
        let out = sdu_in(&mnt, root, &a);
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        Fig::of(&doc["entries"][0])
    };
    let (root, fiemap) = (figs(true, &[]), figs(true, &["--fiemap"]));
    let before = usage(&fs);
    fs::remove_file(&f).unwrap();
    let data = (before.0 - usage(&fs).0) as i64;
    let t = format!("v/r as root {root:?}, with --fiemap {fiemap:?}; deleting it frees {data}");
    assert_eq!(data, 32768, "not as built: {t}");
    assert_eq!(verdict(true, &root, (data, data)), None, "as root: {t}");
    assert_eq!(
        verdict(false, &fiemap, (data, data)),
        None,
        "with --fiemap: {t}"
    );
    checked.unwrap();
}
