//! `--to-free SIZE --oldest-first` and `--newest-first`: the plan takes
//! the candidates in order of age (a Btrfs subvolume's creation time, else
//! the modification time) and stops as soon as they free SIZE together;
//! its total is checked against deleting the snapshots it takes and
//! measuring Data Used.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::util::*;

const K: u64 = 1024;

/// The snapshots, in the order they are taken: their names sort in
/// another order, and their roots' modification times in the reverse one,
/// so that only their creation times give the order.
const TAKEN: [&str; 5] = ["e", "c", "a", "d", "b"];

/// `vol` with f0..f4 of 256 K each; before snapshot k of [`TAKEN`] is
/// taken, nothing changes, after it f_k is written anew. So the first
/// version of f_k is held by the first k+1 snapshots alone: the oldest
/// frees 256 K alone, each older-first step 256 K more, and the newest
/// frees nothing until the oldest goes too.
fn origin_and_five_snapshots() -> Option<LoopFs> {
    let fs = LoopFs::new(FsKind::Btrfs)?;
    let d = fs.path();
    btrfs(&["subvolume", "create"], &d.join("vol"));
    std::fs::create_dir(d.join("snaps")).unwrap();
    let t = Tree {
        root: &d.join("vol"),
    };
    for k in 0..5 {
        t.write(&format!("f{k}"), 256 * K);
    }
    for (k, name) in TAKEN.iter().enumerate() {
        sync_fs(d);
        run(Command::new("btrfs")
            .args(["subvolume", "snapshot"])
            .arg(d.join("vol"))
            .arg(d.join(format!("snaps/{name}"))))
        .assert_ok();
        std::fs::remove_file(d.join(format!("vol/f{k}"))).unwrap();
        t.write(&format!("f{k}"), 256 * K);
    }
    // The newest snapshot's root the oldest by modification time.
    for (k, name) in TAKEN.iter().enumerate() {
        run(Command::new("touch")
            .args(["-m", "-d", &format!("2001-01-0{} 00:00", 5 - k)])
            .arg(d.join(format!("snaps/{name}"))))
        .assert_ok();
    }
    sync_fs(d);
    Some(fs)
}

/// `sdu --json --to-free SIZE ORDER . snaps/a … snaps/e` in `dir`: the
/// snapshots as candidates, in the scan of the whole filesystem, so that
/// what `vol` shares with them stays.
fn plan(dir: &Path, size: &str, order: &str) -> Value {
    let out = run(Command::new(sdu_bin())
        .current_dir(dir)
        .args(["--json", "--to-free", size, order, "."])
        .args(["snaps/a", "snaps/b", "snaps/c", "snaps/d", "snaps/e"]));
    assert_eq!(out.code, Some(0), "{out:?}");
    serde_json::from_slice(&out.stdout).expect("a JSON plan")
}

fn steps(doc: &Value) -> Vec<(String, u64, u64)> {
    doc["chosen"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let p = s["path"].as_str().unwrap();
            (
                p.trim_start_matches("snaps/").to_string(),
                s["adds"].as_u64().unwrap(),
                s["frees"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Deletes `snaps/NAME` for each name, then measures: the drop in Data
/// Used.
fn freed_by_deleting(d: &Path, names: &[String]) -> u64 {
    let (before, _) = btrfs_used(d);
    for n in names {
        run(Command::new("btrfs")
            .args(["subvolume", "delete", "-C"])
            .arg(d.join(format!("snaps/{n}"))))
        .assert_ok();
    }
    btrfs(&["subvolume", "sync"], d);
    let (after, _) = btrfs_used(d);
    before.saturating_sub(after)
}

#[test]
fn oldest_first_takes_the_oldest_snapshots_and_frees_what_deleting_them_frees() {
    let Some(fs) = origin_and_five_snapshots() else {
        return;
    };
    let d = fs.path();
    let doc = plan(d, "600K", "--oldest-first");
    assert_eq!(doc["order"], "oldest_first");
    assert_eq!(
        steps(&doc),
        [
            ("e".into(), 256 * K, 256 * K),
            ("c".into(), 256 * K, 512 * K),
            ("a".into(), 256 * K, 768 * K),
        ]
    );
    assert_eq!(doc["frees"], 768 * K);
    assert_eq!(doc["reached"], true);
    assert_eq!(doc["reclaimable_exact"], true);
    let chosen = doc["chosen"].as_array().unwrap();
    assert!(chosen.iter().all(|s| s["created_from"] == "otime"), "{doc}");
    let created: Vec<i64> = chosen
        .iter()
        .map(|s| s["created"].as_i64().unwrap())
        .collect();
    assert!(created.is_sorted(), "{created:?}");
    // Largest first, 600K is the same three here; 256K is the oldest alone
    // either way, and 1 byte too.
    let one = plan(d, "1", "--oldest-first");
    assert_eq!(steps(&one), [("e".into(), 256 * K, 256 * K)]);
    // The table shows the order: a Created column.
    let out = run(Command::new(sdu_bin()).current_dir(d).args([
        "--to-free",
        "600K",
        "--oldest-first",
        "-k",
        ".",
        "snaps/b",
        "snaps/a",
        "snaps/c",
        "snaps/d",
        "snaps/e",
    ]));
    assert_eq!(out.code, Some(0), "{out:?}");
    let lines: Vec<&str> = out.stdout_str().lines().collect();
    assert!(lines[0].starts_with("Adds  Frees  Created"), "{lines:?}");
    let paths: Vec<&str> = lines
        .iter()
        .map(|l| l.rsplit("  ").next().unwrap())
        .collect();
    assert_eq!(
        paths,
        ["Path", "snaps/e", "snaps/c", "snaps/a", "total"],
        "{lines:?}"
    );
    assert!(lines[4].starts_with(" 768    768"), "{lines:?}");
    // Delete and measure.
    let names: Vec<String> = steps(&doc).into_iter().map(|s| s.0).collect();
    assert_eq!(freed_by_deleting(d, &names), 768 * K);
}

#[test]
fn newest_first_takes_the_newest_snapshots_and_frees_what_deleting_them_frees() {
    let Some(fs) = origin_and_five_snapshots() else {
        return;
    };
    let d = fs.path();
    // The newest four free nothing while the oldest holds their data.
    let doc = plan(d, "256K", "--newest-first");
    assert_eq!(doc["order"], "newest_first");
    assert_eq!(
        steps(&doc),
        [
            ("b".into(), 0, 0),
            ("d".into(), 0, 0),
            ("a".into(), 0, 0),
            ("c".into(), 0, 0),
            ("e".into(), 1280 * K, 1280 * K),
        ]
    );
    assert_eq!(doc["frees"], 1280 * K);
    assert_eq!(doc["all"], 1280 * K);
    let names: Vec<String> = steps(&doc).into_iter().map(|s| s.0).collect();
    assert_eq!(freed_by_deleting(d, &names), 1280 * K);
}

/// `sdu --snapshots --to-free SIZE ORDER .`: the candidates are the
/// snapshots the scan of the whole filesystem meets, not named one by one.
#[test]
fn snapshots_to_free_plans_among_every_snapshot_of_the_scan() {
    let Some(fs) = origin_and_five_snapshots() else {
        return;
    };
    let d = fs.path();
    let snapshots_plan = |size: &str, order: Option<&str>| {
        let out = run(Command::new(sdu_bin())
            .current_dir(d)
            .args(["--json", "--snapshots", "--to-free", size])
            .args(order)
            .arg("."));
        assert_eq!(out.code, Some(0), "{out:?}");
        let doc: Value = serde_json::from_slice(&out.stdout).expect("a JSON plan");
        doc
    };
    let doc = snapshots_plan("600K", Some("--oldest-first"));
    assert_eq!(doc["order"], "oldest_first");
    assert_eq!(
        steps(&doc),
        [
            ("./snaps/e".into(), 256 * K, 256 * K),
            ("./snaps/c".into(), 256 * K, 512 * K),
            ("./snaps/a".into(), 256 * K, 768 * K),
        ],
        "{doc}"
    );
    assert_eq!(doc["reclaimable_exact"], true);
    // `vol` is an origin, never a candidate: all five snapshots together
    // free 1280K, and asking for more is refused.
    let newest = snapshots_plan("1280K", Some("--newest-first"));
    assert_eq!(newest["frees"], 1280 * K, "{newest}");
    assert_eq!(steps(&newest).len(), 5, "{newest}");
    let out = run(Command::new(sdu_bin()).current_dir(d).args([
        "--snapshots",
        "--to-free",
        "1281K",
        "--oldest-first",
        ".",
    ]));
    assert_eq!(out.code, Some(3), "{out:?}");
    assert!(
        out.stderr.contains("all 5 candidate(s) together free"),
        "{out:?}"
    );
    // Largest first without an order: each snapshot alone frees 256K at
    // most (the oldest), so the plan still reaches 600K.
    let largest = snapshots_plan("600K", None);
    assert!(largest["frees"].as_u64().unwrap() >= 600 * K, "{largest}");
    // Delete and measure the oldest-first plan.
    let names: Vec<String> = steps(&doc)
        .into_iter()
        .map(|s| s.0.trim_start_matches("./snaps/").to_string())
        .collect();
    assert_eq!(freed_by_deleting(d, &names), 768 * K);
}

#[test]
fn by_age_a_plain_directory_goes_by_its_modification_time() {
    let t = TestDir::new();
    for (name, day) in [("x", 3), ("y", 1), ("z", 2)] {
        let dir = t.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("f"), vec![1u8; 64 * 1024]).unwrap();
        run(Command::new("touch")
            .args(["-m", "-d", &format!("2001-01-0{day} 00:00")])
            .arg(&dir))
        .assert_ok();
    }
    let out = run(Command::new(sdu_bin()).current_dir(t.path()).args([
        "--json",
        "--to-free",
        "100K",
        "--newest-first",
        "x",
        "y",
        "z",
    ]));
    assert_eq!(out.code, Some(0), "{out:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let chosen = doc["chosen"].as_array().unwrap();
    let paths: Vec<&str> = chosen.iter().map(|s| s["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["x", "z"]);
    assert!(chosen.iter().all(|s| s["created_from"] == "mtime"), "{doc}");
    // Largest first says which order it followed, and no age.
    let out = run(Command::new(sdu_bin()).current_dir(t.path()).args([
        "--json",
        "--to-free",
        "100K",
        "x",
        "y",
        "z",
    ]));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["order"], "largest");
    assert!(doc["chosen"][0].get("created").is_none(), "{doc}");
}

/// Usage errors, with the status of one in sdu's mode (2; `--to-free`
/// has no du mode) and nothing on standard output.
#[test]
fn by_age_refusals_are_usage_errors() {
    let t = TestDir::new();
    for (args, says) in [
        (
            &["--to-free", "1", "--oldest-first", "--newest-first", "."][..],
            "the argument '--oldest-first' cannot be used with '--newest-first'",
        ),
        (
            &["--oldest-first", "."],
            "the following required arguments were not provided:\n  --to-free <SIZE>",
        ),
        (
            &["--newest-first", "."],
            "the following required arguments were not provided:\n  --to-free <SIZE>",
        ),
    ] {
        let out = run(Command::new(sdu_bin()).current_dir(t.path()).args(args));
        assert_eq!(out.code, Some(2), "{args:?}: {out:?}");
        assert!(out.stderr.contains(says), "{args:?}: {out:?}");
        assert!(out.stdout.is_empty(), "{args:?}: {out:?}");
        assert!(out.stderr.contains("Try 'sdu --help'"), "{args:?}: {out:?}");
    }
}
