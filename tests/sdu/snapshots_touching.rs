//! `sdu --snapshots .` at the top of a loopback Btrfs, without
//! CAP_SYS_ADMIN and as `nobody`, where every extent is referenced whole
//! (files written whole and deleted, snapshots between): the Data Used
//! proof holds, and each figure is exact, or, where a unit it counts
//! touches one on disk that the same deletion does not free, marked at
//! most (FIEMAP cannot tell two extents laid end to end from one extent
//! whose parts different files hold). Each figure against what deleting
//! the snapshots frees (Data Used after `btrfs subvolume sync`), each case
//! on a filesystem of its own.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::btrfs::{ro_snapshot, subvolume};
use crate::util::*;

/// `live` with 4 read-only snapshots `snaps/1`..`snaps/4`, its files
/// written whole and deleted between them. With `pads`, a file of a
/// subvolume never snapshotted is written after each (1 MiB: Btrfs lays
/// small files elsewhere), so that no two shared extents lie end to end.
fn build(d: &Path, pads: bool) {
    subvolume(&d.join("live"));
    subvolume(&d.join("pad"));
    std::fs::create_dir(d.join("snaps")).unwrap();
    let t = Tree {
        root: &d.join("live"),
    };
    let pad = Tree {
        root: &d.join("pad"),
    };
    let mut n = 0;
    let mut write = |rel: &str, len: u64| {
        t.write(rel, len);
        if pads {
            n += 1;
            pad.write(&n.to_string(), 1 << 20);
        }
    };
    let snap = |n: u32| ro_snapshot(&d.join("live"), &d.join(format!("snaps/{n}")));
    write("a", 4 << 20);
    write("b", 2 << 20);
    write("c", 1 << 20);
    snap(1);
    write("d", 3 << 20);
    std::fs::remove_file(t.p("a")).unwrap();
    snap(2);
    std::fs::remove_file(t.p("b")).unwrap();
    write("f", 2 << 20);
    snap(3);
    std::fs::remove_file(t.p("f")).unwrap();
    write("e", 2 << 20);
    snap(4);
}

/// `sdu --snapshots --json .` in `d`: as root, without CAP_SYS_ADMIN, or
/// as `nobody`; the rows and the origins.
fn scan(d: &Path, who: &str) -> (Vec<Value>, Vec<Value>) {
    let args = ["--snapshots", "--json", "."];
    let out = match who {
        "root" => sdu_in(d, true, &args),
        "nocap" => sdu_in(d, false, &args),
        _ => run_with_timeout(
            Command::new("setpriv")
                .args(nobody_args())
                .arg(sdu_bin())
                .args(args)
                .current_dir(d),
            300,
        ),
    };
    assert_eq!(out.code, Some(0), "{out:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = doc["snapshots"].as_array().unwrap().clone();
    (rows, doc["origins"].as_array().unwrap().clone())
}

/// The bound of `field` of row `r`: "exact", "at_most", ...
fn bound<'a>(r: &'a Value, field: &str) -> &'a str {
    r[format!("{field}_bound")].as_str().unwrap_or("exact")
}

/// Every case: a snapshot alone, and each oldest-first range.
const CASES: [(&str, &str, &[&str]); 5] = [
    ("./snaps/1", "frees_alone", &["snaps/1"]),
    ("./snaps/3", "frees_alone", &["snaps/3"]),
    ("./snaps/2", "frees_with_older", &["snaps/1", "snaps/2"]),
    (
        "./snaps/3",
        "frees_with_older",
        &["snaps/1", "snaps/2", "snaps/3"],
    ),
    (
        "./snaps/4",
        "frees_with_older",
        &["snaps/1", "snaps/2", "snaps/3", "snaps/4"],
    ),
];

/// Each case on a fresh filesystem: as root exact and what deleting
/// frees; without root the same figure, exact where `exact_without_root`
/// says so, else exact or at most; never another mark. How many figures
/// were marked at most.
fn cases(pads: bool, exact_without_root: impl Fn(&str, &str) -> bool) -> usize {
    let mut at_most = 0;
    for (path, field, rels) in CASES {
        let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
            return at_most;
        };
        let d = fs.path();
        build(d, pads);
        let (root, _) = scan(d, "root");
        let others = [scan(d, "nocap"), scan(d, "nobody")];
        let want = freed_by_deleting_subvolumes(d, rels);
        let r = row(&root, path);
        assert_eq!((r[field].as_u64(), bound(r, field)), (Some(want), "exact"));
        for (rows, origins) in &others {
            let r = row(rows, path);
            let (got, b) = (r[field].as_u64().unwrap(), bound(r, field));
            let t = format!("{path} {field}: {got} {b}, deleting frees {want}: {r}");
            assert_eq!(got, want, "{t}");
            if exact_without_root(path, field) {
                assert_eq!(b, "exact", "{t}");
            } else {
                assert!(b == "exact" || b == "at_most", "{t}");
                at_most += usize::from(b == "at_most");
            }
            // The top-level subvolume's row and every row alone: exact.
            for r in rows {
                assert_eq!(bound(r, "frees_alone"), "exact", "{r}");
            }
            assert!(origins.iter().all(|o| o["frees_all_bound"] != "at_least"));
        }
    }
    at_most
}

/// With no two shared extents end to end, every figure is exact without
/// root.
#[test]
fn whole_extents_apart_are_exact_without_root() {
    assert_eq!(cases(true, |_, _| true), 0);
}

/// Laid end to end, as a filesystem writes them (`b` and `c` here): a
/// snapshot alone is exact; a range whose deletion frees one extent and
/// not the next (`b` and not `c`, from `snaps/2` on), at most, and equal.
#[test]
fn whole_extents_end_to_end_are_exact_or_at_most() {
    let at_most = cases(false, |_, field| field == "frees_alone");
    assert!(at_most > 0 || !is_root());
}

/// One extent whose halves different files hold (`y` and `z`, partial
/// clones of `x`, which is deleted): every byte is referenced, so the proof
/// holds, and the halves are two units end to end. Deleting `snaps/1`
/// and `snaps/2` frees `y`'s half alone as the sweep counts it, and
/// nothing on disk (`live/z` keeps the extent): the figure is marked at
/// most, not called exact. A snapshot alone frees nothing: exact.
#[test]
fn one_extent_in_halves_is_at_most() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    subvolume(&d.join("live"));
    std::fs::create_dir(d.join("snaps")).unwrap();
    let t = Tree {
        root: &d.join("live"),
    };
    t.write("x", 2 << 20);
    t.clone_range("x", 0, "y", 0, 1 << 20);
    t.clone_range("x", 1 << 20, "z", 0, 1 << 20);
    std::fs::remove_file(t.p("x")).unwrap();
    for f in ["y", "z"] {
        chmod(&t.p(f), 0o644);
    }
    ro_snapshot(&d.join("live"), &d.join("snaps/1"));
    ro_snapshot(&d.join("live"), &d.join("snaps/2"));
    std::fs::remove_file(t.p("y")).unwrap();
    let (rows, _) = scan(d, "nobody");
    let want = freed_by_deleting_subvolumes(d, &["snaps/1", "snaps/2"]);
    assert_eq!(want, 0);
    let r = row(&rows, "./snaps/2");
    assert_eq!(r["frees_with_older"], 1 << 20, "{r}");
    assert_eq!(bound(r, "frees_with_older"), "at_most", "{r}");
    let r = row(&rows, "./snaps/1");
    assert_eq!(
        (r["frees_alone"].as_u64(), bound(r, "frees_alone")),
        (Some(0), "exact")
    );
}

/// Where an extent is referenced in part (a rewrite in place, then the
/// snapshot holding the rest deleted), Data Used is above what FIEMAP
/// shows and the proof fails: the figure stays marked, at least, below
/// what deleting frees (`b`'s extent whole, 2 MiB, and its new half).
#[test]
fn an_extent_referenced_in_part_stays_at_least() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    subvolume(&d.join("live"));
    std::fs::create_dir(d.join("snaps")).unwrap();
    let t = Tree {
        root: &d.join("live"),
    };
    t.write("keep", 1 << 20);
    t.write("b", 2 << 20);
    ro_snapshot(&d.join("live"), &d.join("snaps/1"));
    t.overwrite("b", 1 << 20, 1 << 20);
    ro_snapshot(&d.join("live"), &d.join("snaps/2"));
    std::fs::remove_file(t.p("b")).unwrap();
    run(Command::new("btrfs")
        .args(["subvolume", "delete", "-C"])
        .arg(d.join("snaps/1")))
    .assert_ok();
    btrfs(&["subvolume", "sync"], d);
    let (rows, _) = scan(d, "nobody");
    let want = freed_by_deleting_subvolumes(d, &["snaps/2"]);
    assert_eq!(want, 3 << 20);
    let r = row(&rows, "./snaps/2");
    assert_eq!(r["frees_alone"], 2 << 20, "{r}");
    assert_eq!(bound(r, "frees_alone"), "at_least", "{r}");
}

/// A file written in two parts whose extents lie end to end, both shared
/// (`d1/F` and its reflink copy `d1/H`): FIEMAP gives them as one range.
/// `d2/G` clones the second. The proof holds (every byte is referenced)
/// and the sweep makes one unit of the three ranges: deleting `d1` frees
/// the first extent, which that unit cannot tell, so `d1` is marked at
/// least (or, were the extents apart, exact); the whole filesystem, which
/// frees the unit whole, is exact.
#[test]
fn extents_fiemap_gives_as_one_are_at_least_in_part() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    let t = Tree { root: d };
    t.write("d1/F", 1 << 20);
    t.overwrite("d1/F", 1 << 20, 1 << 20);
    t.clone("d1/F", "d1/H");
    t.clone_range("d1/F", 1 << 20, "d2/G", 0, 1 << 20);
    for f in ["d1/F", "d1/H", "d2/G"] {
        chmod(&t.p(f), 0o644);
    }
    let before = btrfs_used(d).0;
    let out = run_with_timeout(
        Command::new("setpriv")
            .args(nobody_args())
            .arg(sdu_bin())
            .args(["--json", "."])
            .current_dir(d),
        300,
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let entries = doc["entries"].as_array().unwrap();
    let entry = |p: &str| entries.iter().find(|e| e["path"] == p).unwrap().clone();
    let (top, d1) = (entry("."), entry("./d1"));
    assert_eq!(top["reclaimable"].as_u64(), Some(before), "{top}");
    assert_eq!(top["reclaimable_exact"], true, "{top}");
    std::fs::remove_dir_all(d.join("d1")).unwrap();
    let want = before - btrfs_used(d).0;
    assert_eq!(want, 1 << 20);
    let got = (d1["reclaimable"].as_u64(), d1["reclaimable_bound"].as_str());
    assert!(
        got == (Some(0), Some("at_least")) || got == (Some(want), None),
        "{d1}, deleting it frees {want}"
    );
}
