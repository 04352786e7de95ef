//! The browser's table of the Btrfs snapshots (`p`), on a real terminal
//! (tmux) and a loopback Btrfs: marking two snapshots there gives their
//! union, what `sdu --snapshots --json` says deleting the oldest two frees
//! (and, as root, what deleting them frees of Data Used); back in the tree
//! the marks are on those subvolumes; off Btrfs the table is one line.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::browse::{assert_terminal_restored, pressed, start_for};
use crate::btrfs::{ro_snapshot, subvolume};
use crate::tmux::Tmux;
use crate::util::*;

/// `live` with three read-only snapshots `snaps/1`..`snaps/3` taken as it
/// changes; `snaps/1` and `snaps/2` share data neither `live` nor
/// `snaps/3` holds.
fn build(d: &Path) {
    subvolume(&d.join("live"));
    std::fs::create_dir(d.join("snaps")).unwrap();
    let t = Tree {
        root: &d.join("live"),
    };
    let snap = |n: u32| ro_snapshot(&d.join("live"), &d.join(format!("snaps/{n}")));
    t.write("a", 4 << 20);
    t.write("b", 2 << 20);
    snap(1);
    t.write("c", 1 << 20);
    snap(2);
    std::fs::remove_file(t.p("b")).unwrap();
    t.write("d", 3 << 20);
    snap(3);
    std::fs::remove_file(t.p("d")).unwrap();
}

/// The rows of the table on `screen`: each line with a creation date,
/// top to bottom.
fn table_rows(screen: &str) -> Vec<&str> {
    screen
        .lines()
        .filter(|l| l.get(2..4).is_some_and(|y| y == "20"))
        .collect()
}

#[test]
fn marking_two_snapshots_in_the_table_frees_what_with_older_says() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let Some(tmux) = Tmux::shell("browse-snaps") else {
        return;
    };
    let d = fs.path();
    build(d);
    let out = sdu_in(d, true, &["--snapshots", "--json", "."]);
    out.assert_ok();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = |p: &str| {
        doc["snapshots"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["path"] == p)
            .unwrap_or_else(|| panic!("no {p}: {doc}"))
            .clone()
    };
    let two = &row("./snaps/2");
    assert_eq!(two["frees_exact"], true, "{two}");
    let oldest_two = two["frees_with_older"].as_u64().unwrap();
    assert!(
        oldest_two
            > row("./snaps/1")["frees_alone"].as_u64().unwrap()
                + two["frees_alone"].as_u64().unwrap(),
        "{doc}"
    );

    start_for(&tmux, d, "-B1 .", "sort: total");
    let s = pressed(&tmux, "p", "Btrfs snapshots");
    assert!(s.contains("Frees with older"), "{s}");
    let rows = table_rows(&s);
    let at = rows
        .iter()
        .position(|l| l.ends_with("./snaps/1"))
        .unwrap_or_else(|| panic!("no ./snaps/1 row:\n{s}"));
    assert!(rows[at + 1].ends_with("./snaps/2"), "{s}");
    for _ in 0..at {
        tmux.keys(&["Down"]);
    }
    tmux.keys(&["Space"]);
    tmux.wait_for("one mark", |s| s.contains(" 1 marked "));
    let s = pressed(&tmux, "Space", " 2 marked ");
    let marked: Vec<&str> = table_rows(&s)
        .into_iter()
        .filter(|l| l.starts_with("* "))
        .collect();
    assert_eq!(marked.len(), 2, "{s}");
    assert!(
        marked[0].ends_with("./snaps/1") && marked[1].ends_with("./snaps/2"),
        "{s}"
    );
    let frees: u64 = s
        .lines()
        .find_map(|l| l.split("deleting them frees ").nth(1))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no figure:\n{s}"));
    assert_eq!(frees, oldest_two, "{s}");

    // Back in the tree, the marks stay; Enter on snaps/3 goes to it, beside
    // the two marked.
    let s = pressed(&tmux, "Escape", "sort: total");
    assert!(s.contains(" 2 marked "), "{s}");
    pressed(&tmux, "p", "Btrfs snapshots");
    tmux.keys(&["End"]);
    let s = pressed(&tmux, "Enter", "./snaps ");
    let mark = |name: &str| {
        s.lines()
            .find(|l| l.trim_end().ends_with(name))
            .unwrap_or_else(|| panic!("no {name}:\n{s}"))
            .starts_with('*')
    };
    assert!(mark("1/") && mark("2/") && !mark("3/"), "{s}");
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);

    // What deleting them frees of Data Used, as root: the same.
    let before = btrfs_used(d).0;
    run(Command::new("btrfs")
        .args(["subvolume", "delete", "-C"])
        .arg(d.join("snaps/1"))
        .arg(d.join("snaps/2")))
    .assert_ok();
    btrfs(&["subvolume", "sync"], d);
    assert_eq!(before - btrfs_used(d).0, frees);
}

/// Off Btrfs the table is the one line the report prints.
#[test]
fn off_btrfs_the_table_says_so() {
    let Some(tmux) = Tmux::shell("browse-snaps-xfs") else {
        return;
    };
    let t = TestDir::new();
    std::fs::create_dir(t.path().join("root")).unwrap();
    write_file(&t.path().join("root/f"), 4096);
    start_for(&tmux, t.path(), "root", "sort: total");
    let s = pressed(&tmux, "p", "no snapshots: root is not on Btrfs");
    assert!(!s.contains("Frees with older"), "{s}");
    let s = pressed(&tmux, "p", "sort: total");
    assert!(!s.contains("no snapshots"), "{s}");
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
}
