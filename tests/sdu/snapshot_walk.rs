//! `sdu --snapshots` reads what it says of each subvolume through the fds
//! of the walk: no name below the PATH is resolved again after the walk
//! listed it (checked with strace); origins are followed through deleted
//! intermediates.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::btrfs::{ro_snapshot, subvolume};
use crate::util::*;

/// `vol` with two read-only snapshots `snaps/1`, `snaps/2`, and a snapper
/// snapshot `vol/.snapshots/7/snapshot` with its `info.xml`.
fn build(d: &Path) {
    subvolume(&d.join("vol"));
    let t = Tree {
        root: &d.join("vol"),
    };
    t.write("a", 2 << 20);
    std::fs::create_dir(d.join("snaps")).unwrap();
    ro_snapshot(&d.join("vol"), &d.join("snaps/1"));
    t.write("b", 1 << 20);
    ro_snapshot(&d.join("vol"), &d.join("snaps/2"));
    std::fs::create_dir_all(d.join("vol/.snapshots/7")).unwrap();
    ro_snapshot(&d.join("vol"), &d.join("vol/.snapshots/7/snapshot"));
    std::fs::write(
        d.join("vol/.snapshots/7/info.xml"),
        "<?xml version=\"1.0\"?>\n<snapshot>\n  <type>single</type>\n  <num>7</num>\n  \
         <date>2024-03-05 07:08:09</date>\n  <description>seven</description>\n</snapshot>\n",
    )
    .unwrap();
}

/// The calls of `trace` (strace's `-e trace=%file` output) that resolve a
/// name below the PATH `.` of a run in `d` from the working directory or
/// by an absolute path, not relative to a directory fd the walk opened.
fn by_name_below(trace: &str, d: &Path) -> Vec<String> {
    let d = d.to_str().unwrap();
    let mut found = Vec::new();
    for line in trace.lines() {
        // `PID  call(ARGS) = RESULT`
        let Some(open) = line.find('(') else {
            continue;
        };
        let call = line[..open].rsplit(' ').next().unwrap_or("");
        // A filesystem's name and its mount options, no paths.
        if matches!(call, "fsopen" | "fsconfig") {
            continue;
        }
        let args = &line[open + 1..];
        let Some(q) = args.find('"') else {
            continue;
        };
        let path = &args[q + 1..];
        let path = &path[..path.find('"').unwrap_or(path.len())];
        let before = &args[..q];
        // A call relative to a directory fd (`openat(5, "name", …)`):
        // the walk's.
        let at_fd = call.ends_with("at") || call.ends_with("at2") || call == "statx";
        if at_fd && !before.contains("AT_FDCWD") {
            continue;
        }
        let below = if path.starts_with('/') {
            path.starts_with(d) && path.len() > d.len()
        } else {
            !matches!(path, "" | "." | "./")
        };
        if below {
            found.push(line.to_owned());
        }
    }
    found
}

/// No name below the PATH is looked up or opened by name (from the
/// working directory or as an absolute path) during `sdu --snapshots`:
/// the walk opens every directory relative to its parent's fd, and the
/// subvolume identities and snapper's record are read through those fds.
/// The check fails on a run that stats or opens a subvolume by its path.
#[test]
fn identities_read_through_the_walks_fds() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    build(d);
    for root in [true, false] {
        let trace = std::env::temp_dir().join(format!("sdu-trace-{}-{root}", std::process::id()));
        let mut c = Command::new("strace");
        c.args(["-f", "-qq", "-e", "trace=%file", "-o"])
            .arg(&trace)
            .arg(sdu_bin())
            .args(["--snapshots", "--json", "."])
            .current_dir(d);
        if !root {
            c = {
                let mut s = Command::new("setpriv");
                s.args(WITHOUT_SYS_ADMIN)
                    .arg("strace")
                    .args(c.get_args())
                    .current_dir(d);
                s
            };
        }
        let out = run(&mut c);
        out.assert_ok();
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let rows = doc["snapshots"].as_array().unwrap();
        let snapper = &row(rows, "./vol/.snapshots/7/snapshot")["layout"];
        assert_eq!(snapper["number"], 7, "{rows:?}");
        assert_eq!(row(rows, "./snaps/2")["origin"], "./vol");
        let text = std::fs::read_to_string(&trace).unwrap();
        std::fs::remove_file(&trace).unwrap();
        let bad = by_name_below(&text, d);
        assert!(bad.is_empty(), "resolved by name:\n{}", bad.join("\n"));
        // The PATH itself is resolved by its name once: what is asked of
        // it before the walk (the subvolumes under it) and the walk take
        // one fd.
        let path_lookups: Vec<&str> = (text.lines())
            .filter(|l| l.contains("(AT_FDCWD, \".\""))
            .collect();
        assert_eq!(path_lookups.len(), 1, "{path_lookups:#?}");
        // The check sees a lookup by name when there is one.
        assert!(!by_name_below("1 statx(AT_FDCWD, \"./snaps/1\", …) = 0", d).is_empty());
        assert!(by_name_below("1 openat(5, \"snaps\", O_RDONLY) = 6", d).is_empty());
    }
    let rows = snapshot_rows(d, true);
    assert_eq!(row(&rows, "./snaps/1")["read_only"], true);
    assert_eq!(row(&rows, "./vol")["read_only"], false);
}

/// A snapshot of a snapshot: `A`, `B` a snapshot of `A` written to, `C`
/// a read-only snapshot of `B`, `D` one of `A`. While `B` lives, `C` is
/// grouped under `A` through it; once `B` is deleted (and dropped by the
/// cleaner, its root item gone), as root `C` is still grouped under `A`,
/// through the data it shares; without root, by its parent uuid alone,
/// which the row and the table say.
#[test]
fn origin_through_a_deleted_intermediate() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    subvolume(&d.join("A"));
    Tree { root: &d.join("A") }.write("a", 3 << 20);
    run(Command::new("btrfs")
        .args(["subvolume", "snapshot"])
        .arg(d.join("A"))
        .arg(d.join("B")))
    .assert_ok();
    Tree { root: &d.join("B") }.write("b", 1 << 20);
    ro_snapshot(&d.join("B"), &d.join("C"));
    ro_snapshot(&d.join("A"), &d.join("D"));
    let rows_alive = snapshot_rows(d, true);
    assert_eq!(row(&rows_alive, "./C")["origin"], "./A", "{rows_alive:?}");
    assert_eq!(row(&rows_alive, "./C")["origin_by"], "root_tree");
    run(Command::new("btrfs")
        .args(["subvolume", "delete", "-C"])
        .arg(d.join("B")))
    .assert_ok();
    btrfs(&["subvolume", "sync"], d);
    btrfs(&["filesystem", "sync"], d);
    let as_root = snapshot_rows(d, true);
    let c = row(&as_root, "./C");
    assert_eq!(c["origin"], "./A", "{as_root:?}");
    assert_eq!(c["origin_by"], "shared_data");
    assert_eq!(row(&as_root, "./D")["origin_by"], "root_tree");
    assert!(row(&as_root, "./A")["origin_by"].is_null());
    // Oldest first in A's group: C and D both.
    let paths: Vec<&str> = as_root
        .iter()
        .map(|r| r["path"].as_str().unwrap())
        .collect();
    let at = |p: &str| paths.iter().position(|q| *q == p).unwrap();
    assert_eq!(at("./A") + 1, at("./C"), "{paths:?}");
    assert_eq!(at("./C") + 1, at("./D"), "{paths:?}");
    let as_user = snapshot_rows(d, false);
    let c = row(&as_user, "./C");
    assert!(c["origin"].is_null(), "{as_user:?}");
    assert_eq!(c["origin_by"], "parent_uuid");
    let table = sdu_in(d, false, &["--snapshots", "."]);
    table.assert_ok();
    assert!(
        table.stdout_str().contains("(grouped by parent uuid only)"),
        "{}",
        table.stdout_str()
    );
}

/// Ubuntu's and timeshift's layout: `@` mounted (with `subvol=@`) at
/// `MNT`, its snapshots in the top level, not mounted: `@snapshots/1`,
/// `@snapshots/2` and timeshift's `timeshift-btrfs/snapshots/DATE/@`. As
/// root `sdu --snapshots MNT` reaches them through the top level and
/// lists them as `<FS_TREE>/…`, with timeshift's record, and their figures
/// are what deleting them frees of Data Used; without root one line on
/// stderr says that such subvolumes cannot be listed.
#[test]
fn snapshots_in_the_top_level_not_mounted() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let top = fs.path();
    subvolume(&top.join("@"));
    let t = Tree {
        root: &top.join("@"),
    };
    t.write("a", 3 << 20);
    subvolume(&top.join("@snapshots"));
    ro_snapshot(&top.join("@"), &top.join("@snapshots/1"));
    t.write("b", 2 << 20);
    ro_snapshot(&top.join("@"), &top.join("@snapshots/2"));
    t.write("c", 1 << 20);
    let ts = top.join("timeshift-btrfs/snapshots/2024-03-06_10-00-00");
    std::fs::create_dir_all(&ts).unwrap();
    ro_snapshot(&top.join("@"), &ts.join("@"));
    std::fs::write(
        ts.join("info.json"),
        r#"{"created":"1709719200","tags":"D","comments":"weekly"}"#,
    )
    .unwrap();
    std::fs::remove_file(t.p("a")).unwrap();
    std::fs::remove_file(t.p("b")).unwrap();
    let mnt = TestDir::new();
    run(Command::new("mount")
        .args(["-o", "subvol=@"])
        .arg(fs.device())
        .arg(mnt.path()))
    .assert_ok();
    let as_root = snapshot_rows(mnt.path(), true);
    let as_user = sdu_in(mnt.path(), false, &["--snapshots", "--json", "."]);
    // The top level is mounted detached (an fd, never moved onto a mount
    // point), and nothing below a root is looked up by name.
    let trace = std::env::temp_dir().join(format!("sdu-trace-top-{}", std::process::id()));
    run(Command::new("strace")
        .args([
            "-f",
            "-qq",
            "-e",
            "trace=%file,fsopen,fsmount,move_mount",
            "-o",
        ])
        .arg(&trace)
        .arg(sdu_bin())
        .args(["--snapshots", "."])
        .current_dir(mnt.path()))
    .assert_ok();
    let text = std::fs::read_to_string(&trace).unwrap();
    std::fs::remove_file(&trace).unwrap();
    umount_retrying(mnt.path());
    assert!(text.contains("fsmount("), "{text}");
    assert!(!text.contains("move_mount("), "{text}");
    assert!(text.contains("openat2("), "{text}");
    let bad = by_name_below(&text, mnt.path());
    assert!(bad.is_empty(), "resolved by name:\n{}", bad.join("\n"));
    assert_eq!(as_user.code, Some(0), "{as_user:?}");
    assert!(
        as_user.stderr.contains("cannot be listed"),
        "{}",
        as_user.stderr
    );
    let paths: Vec<&str> = as_root
        .iter()
        .map(|r| r["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            ".",
            "<FS_TREE>/@snapshots/1",
            "<FS_TREE>/@snapshots/2",
            "<FS_TREE>/timeshift-btrfs/snapshots/2024-03-06_10-00-00/@"
        ],
        "{as_root:?}"
    );
    let timeshift = row(
        &as_root,
        "<FS_TREE>/timeshift-btrfs/snapshots/2024-03-06_10-00-00/@",
    );
    assert_eq!(timeshift["layout"]["tool"], "timeshift", "{timeshift}");
    assert_eq!(timeshift["origin"], ".");
    for r in &as_root {
        assert_eq!(r["frees_exact"], true, "{r}");
    }
    // Deleting every snapshot frees "with older" of the newest; the
    // oldest alone, its "alone" (a, held by all three, then b by two).
    let newest = timeshift["frees_with_older"].as_u64().unwrap();
    let oldest = row(&as_root, "<FS_TREE>/@snapshots/1")["frees_alone"]
        .as_u64()
        .unwrap();
    assert_eq!(oldest, 0, "{as_root:?}");
    // The snapshots' directory alone: the other snapshot of `@` is
    // reached, `@` itself (no snapshot) is not walked for them.
    let only = snapshot_rows(&top.join("@snapshots"), true);
    let paths: Vec<&str> = only.iter().map(|r| r["path"].as_str().unwrap()).collect();
    assert_eq!(
        paths,
        [
            ".",
            "./1",
            "./2",
            "<FS_TREE>/timeshift-btrfs/snapshots/2024-03-06_10-00-00/@"
        ],
        "{only:?}"
    );
    let freed = {
        let before = btrfs_used(top).0;
        let mut c = Command::new("btrfs");
        c.args(["subvolume", "delete", "-C"])
            .arg(top.join("@snapshots/1"))
            .arg(top.join("@snapshots/2"))
            .arg(ts.join("@"));
        run(&mut c).assert_ok();
        btrfs(&["subvolume", "sync"], top);
        before.saturating_sub(btrfs_used(top).0)
    };
    assert_eq!(newest, freed, "{as_root:?}");
    assert_eq!(freed, 5 << 20);
}
