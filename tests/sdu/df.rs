//! `sdu --df`: each row against a cause planted with a known size on a
//! fresh loopback filesystem, checked against the filesystem itself (Data
//! Used of `btrfs filesystem usage -b` after a sync, statvfs, `du`), the
//! rows adding up to df's Used, and the run without `CAP_SYS_ADMIN`: each
//! row equal to root's or marked.
//!
//! Tolerances: none where the figure and the reference are both in whole
//! extents of one filesystem (Btrfs's Data Used moves by the extents'
//! sizes on disk, which the tree search reads; `du` and sdu's Total read
//! the same `st_blocks`). The rows' sum is Used by definition, to the
//! byte.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::args;
use crate::btrfs::{ro_snapshot, subvolume};
use crate::util::*;

/// `sdu --df --json ARGS` in `d`, as root or without `CAP_SYS_ADMIN`:
/// the filesystems' tables.
pub(crate) fn df_json(d: &Path, root: bool, args: &[&str]) -> Vec<Value> {
    let mut a = vec!["--df", "--json"];
    a.extend_from_slice(args);
    let out = sdu_in(d, root, &a);
    assert_eq!(out.code, Some(0), "{out:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["filesystems"].as_array().unwrap().clone()
}

/// The row `name` of table `t`.
pub(crate) fn row<'a>(t: &'a Value, name: &str) -> &'a Value {
    (t["rows"].as_array().unwrap().iter())
        .find(|r| r["row"] == name)
        .unwrap_or_else(|| panic!("no row {name} in {t}"))
}

/// The bytes of row `name`.
pub(crate) fn bytes(t: &Value, name: &str) -> i64 {
    row(t, name)["bytes"].as_i64().unwrap()
}

/// Every table's rows are the nine, in order, and add up to its Used; an
/// exact row says "exact" or "none", a row that is not says how.
pub(crate) fn check_sum(t: &Value) {
    let rows = t["rows"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["row"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "files",
            "outside_subvolumes",
            "unreachable",
            "deleted_open",
            "under_mounts",
            "deleted_subvolumes",
            "metadata",
            "compression",
            "unexplained"
        ]
    );
    let sum: i64 = rows.iter().map(|r| r["bytes"].as_i64().unwrap()).sum();
    assert_eq!(
        sum,
        t["used"].as_i64().unwrap(),
        "rows do not add up to Used: {t}"
    );
    for r in rows {
        let how = r["how"].as_str().unwrap();
        assert_eq!(r["exact"] == true, how == "exact" || how == "none", "{r}");
        if r["exact"] == false {
            assert!(!r["why"].as_str().unwrap().is_empty(), "{r}");
        }
    }
}

/// df's Used of the filesystem at `d`, after a sync: statvfs.
fn df_used(d: &Path) -> u64 {
    sync_fs(d);
    let s = rustix::fs::statvfs(d).unwrap();
    (s.f_blocks - s.f_bfree) * s.f_frsize
}

/// `du -sxB1` of `p`.
fn du_sx(p: &Path) -> u64 {
    let out = run(Command::new("du").args(["-sxB1"]).arg(p));
    out.assert_ok();
    let text = out.stdout_str();
    text.split_whitespace().next().unwrap().parse().unwrap()
}

/// Btrfs mounted with `compress=zstd`: 6 MiB of random data, an 8 MiB
/// file whose middle 2 MiB are then rewritten in place (the bookend: the
/// first extent stays whole, 2 MiB of it unreferenced), 30 MiB of one
/// repeated line (compressed), each measured in Data Used as it is
/// planted.
#[test]
fn btrfs_rows_equal_what_was_planted() {
    let Some(m) = Mounted::new(FsKind::Btrfs, "compress=zstd:3") else {
        return;
    };
    let d = m.path();
    let t = Tree { root: d };
    t.write("plain", 6 << 20);
    t.write("bookend", 8 << 20);
    btrfs(&["filesystem", "sync"], d);
    let before = btrfs_data_used(d);
    t.overwrite("bookend", 2 << 20, 2 << 20);
    btrfs(&["filesystem", "sync"], d);
    let bookend = btrfs_data_used(d) - before;
    assert_eq!(
        bookend,
        2 << 20,
        "the rewrite did not leave 2 MiB unreferenced"
    );
    let line = b"the same line, again and again\n";
    let text: Vec<u8> = line.iter().copied().cycle().take(30 << 20).collect();
    let before = btrfs_data_used(d);
    std::fs::write(d.join("compressed"), &text).unwrap();
    btrfs(&["filesystem", "sync"], d);
    let on_disk = btrfs_data_used(d) - before;
    assert!(
        on_disk < 4 << 20,
        "30 MiB of one line took {on_disk} on disk"
    );
    let saved = (30u64 << 20) - on_disk;

    // Small files stored inline (in the metadata), in a subvolume below
    // the mount and its snapshot, one of them changed since: inline data
    // is no file data of Data Used.
    subvolume(&d.join("vol"));
    for i in 0..40 {
        std::fs::write(
            d.join(format!("vol/small{i}")),
            vec![b'a' + (i % 26) as u8; 1500],
        )
        .unwrap();
    }
    // Symlinks: their targets are inline data too (the walk maps no
    // symlink, but reads its items with its directory's listing).
    for i in 0..5 {
        let target = format!("{}{i}", "t".repeat(100));
        std::os::unix::fs::symlink(target, d.join(format!("vol/link{i}"))).unwrap();
    }
    ro_snapshot(&d.join("vol"), &d.join("vol-snap"));
    std::fs::write(d.join("vol/small0"), vec![b'z'; 1800]).unwrap();
    btrfs(&["filesystem", "sync"], d);

    let tables = df_json(d, true, &["."]);
    assert_eq!(tables.len(), 1);
    let tb = &tables[0];
    check_sum(tb);
    assert_eq!(tb["used"].as_u64().unwrap(), df_used(d));
    for r in ["files", "unreachable", "compression"] {
        assert_eq!(row(tb, r)["how"], "exact", "{}", row(tb, r));
    }
    assert_eq!(bytes(tb, "unreachable"), bookend as i64);
    let holders = row(tb, "unreachable")["items"].as_array().unwrap();
    assert!(
        holders[0]["name"].as_str().unwrap().ends_with("/bookend"),
        "{holders:?}"
    );
    assert_eq!(bytes(tb, "compression"), -(saved as i64));
    // The files at du's size: what st_blocks says of the three, each
    // uncompressed, the bookend's file its 8 MiB.
    let du: u64 = ["plain", "bookend", "compressed"]
        .iter()
        .map(|f| du_sx(&d.join(f)))
        .sum();
    assert_eq!(du, (6 + 8 + 30) << 20);
    assert_eq!(bytes(tb, "files"), du as i64);
    // The inline files, each a sector in st_blocks: the 40 of `vol`, its
    // 5 symlinks, and the one of the snapshot that `vol` no longer shares.
    let inline = &row(tb, "files")["items"][0];
    assert_eq!(inline["bytes"], 46 * 4096, "{inline}");
    // Data Used is files + unreachable + compression, each byte once.
    assert_eq!(
        bytes(tb, "files") + bytes(tb, "unreachable") + bytes(tb, "compression"),
        btrfs_data_used(d) as i64
    );
    let used = tb["used"].as_i64().unwrap();
    let rest = bytes(tb, "unexplained");
    assert!(
        rest.abs() <= used / 100 + (1 << 20),
        "unexplained {rest}: {tb}"
    );

    // Without CAP_SYS_ADMIN, and as nobody: each row root's, or marked.
    let out = run(Command::new("setpriv")
        .args(nobody_args())
        .arg(sdu_bin())
        .args(["--df", "--json", "."])
        .current_dir(d));
    assert_eq!(out.code, Some(0), "{out:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    for tn in [&df_json(d, false, &["."])[0], &doc["filesystems"][0]] {
        check_sum(tn);
        for r in tn["rows"].as_array().unwrap() {
            let name = r["row"].as_str().unwrap();
            if r["exact"] == true {
                assert_eq!(r["bytes"], row(tb, name)["bytes"], "{name}: {r}");
            }
        }
        for r in ["unreachable", "compression"] {
            assert_eq!(row(tn, r)["how"], "not seen", "{}", row(tn, r));
        }
        assert_ne!(row(tn, "files")["how"], "exact");
        assert_ne!(row(tn, "unexplained")["how"], "exact");
    }
}

/// ext4 and XFS (with and without rmapbt): the files row is du -sx's
/// figure, the rows no such filesystem has are 0 and "none", and they
/// add up to Used.
fn files_on(kind: FsKind, mkfs: &[&str]) {
    let Some(fs) = LoopFs::with_mkfs(kind, mkfs) else {
        return;
    };
    let d = fs.path();
    let t = Tree { root: d };
    t.dir("a");
    t.write("a/seven", 7 << 20);
    t.write("one", 1 << 20);
    sync_fs(d);
    let tables = df_json(d, true, &["a", "."]);
    assert_eq!(tables.len(), 1, "two PATHs on one filesystem: one table");
    let tb = &tables[0];
    check_sum(tb);
    assert_eq!(tb["used"].as_u64().unwrap(), df_used(d));
    assert_eq!(tb["du_sx"].as_u64().unwrap(), du_sx(d));
    assert_eq!(row(tb, "files")["how"], "exact");
    assert_eq!(bytes(tb, "files") as u64, du_sx(d));
    assert!(bytes(tb, "files") >= 8 << 20);
    for r in [
        "outside_subvolumes",
        "unreachable",
        "deleted_subvolumes",
        "compression",
    ] {
        assert_eq!(row(tb, r)["how"], "none", "{}", row(tb, r));
        assert_eq!(bytes(tb, r), 0);
    }
    let tn = &df_json(d, false, &["."])[0];
    check_sum(tn);
    assert_eq!(row(tn, "files")["bytes"], row(tb, "files")["bytes"]);
}

#[test]
fn ext4_files_row_is_du() {
    files_on(FsKind::Ext4, &[]);
}

#[test]
fn xfs_files_row_is_du() {
    files_on(FsKind::Xfs, &["-m", "rmapbt=0"]);
}

#[test]
fn xfs_rmapbt_files_row_is_du() {
    files_on(FsKind::Xfs, &["-m", "rmapbt=1"]);
}

/// A tmpfs mounted over a directory holding 3 MiB: its mount point is
/// listed under `under_mounts`; seen (as root, beneath a view without the
/// submounts) the row is those 3 MiB and the directory's own blocks, else
/// marked not seen. The files row
/// does not count them (on Btrfs as root, where the walk reads the
/// directories from the subvolume's tree, too).
fn under_a_mount(kind: FsKind) {
    let Some(fs) = LoopFs::new(kind) else {
        return;
    };
    let d = fs.path();
    let t = Tree { root: d };
    t.dir("hidden");
    t.write("hidden/three", 3 << 20);
    sync_fs(d);
    let point = d.join("hidden");
    // The covered directory's own blocks lie under the mount too (ext4:
    // one 4 KiB block; Btrfs: none, its entries live in the tree).
    let dir_blocks = std::fs::metadata(&point).unwrap().blocks() * 512;
    run(Command::new("mount")
        .args(["-t", "tmpfs", "tmpfs"])
        .arg(&point))
    .assert_ok();
    let _tmpfs = Tmpfs(point.clone());
    let tb = &df_json(d, true, &["."])[0];
    check_sum(tb);
    let r = row(tb, "under_mounts");
    let items = r["items"].as_array().unwrap();
    assert!(
        items.iter().any(|i| i["name"] == point.to_str().unwrap()),
        "{r}"
    );
    match r["how"].as_str().unwrap() {
        "not seen" => assert_eq!(r["bytes"], 0),
        _ => assert_eq!(r["bytes"], (3 << 20) + dir_blocks, "{r}"),
    }
    // The files row does not see under the tmpfs: du -sx's figure (on
    // Btrfs less the top level's root directory, whose bytes are no
    // file's data).
    let root_dir = match kind {
        FsKind::Btrfs => std::fs::metadata(d).unwrap().blocks() * 512,
        _ => 0,
    };
    assert_eq!(bytes(tb, "files") as u64, du_sx(d) - root_dir);
    assert_eq!(tb["du_sx"].as_u64().unwrap(), du_sx(d));
}

#[test]
fn ext4_a_directory_under_a_mount_is_listed() {
    under_a_mount(FsKind::Ext4);
}

#[test]
fn btrfs_a_directory_under_a_mount_is_listed() {
    under_a_mount(FsKind::Btrfs);
}

/// PATHs on two filesystems give two tables, in the order of the PATHs;
/// a PATH that does not exist is said on stderr (exit 1) and the others
/// are still reported.
#[test]
fn a_table_per_filesystem_and_errors_as_du() {
    let Some(a) = LoopFs::new(FsKind::Ext4) else {
        return;
    };
    let Some(b) = LoopFs::new(FsKind::Ext4) else {
        return;
    };
    let missing = a.path().join("missing");
    let out = sdu(&args![
        "--df",
        "--json",
        b.path(),
        &missing,
        a.path().join("lost+found"),
    ]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains("cannot access") && out.stderr.contains("missing"),
        "{out:?}"
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mounts: Vec<&str> = (doc["filesystems"].as_array().unwrap().iter())
        .map(|t| t["mount"].as_str().unwrap())
        .collect();
    assert_eq!(
        mounts,
        [b.path().to_str().unwrap(), a.path().to_str().unwrap()]
    );
    // The text: a header line per filesystem, with df's Used.
    let out = sdu(&args!["--df", "-B1", a.path()]);
    out.assert_ok();
    let text = out.stdout_str();
    let used = df_used(a.path());
    assert!(
        text.lines()
            .next()
            .unwrap()
            .contains(&format!("Used {used}")),
        "{text}"
    );
    assert!(text.lines().any(|l| l.starts_with("unexplained")), "{text}");
    // --stats: the counts of each filesystem's scan, a block each.
    let out = sdu(&args!["--df", "--stats", a.path(), b.path()]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stderr.matches("sdu stats:").count(), 2, "{out:?}");
    assert!(out.stderr.contains("entries stat-ed"), "{out:?}");
}
