//! `--to-free SIZE`: the plan of what to delete, on Btrfs snapshots that
//! share data in pairs and all three together, checked against
//! `sdu -s -c` on the chosen set (the `-c` total is credited by the roll-up;
//! the plan's union by a separate query) and against the filesystem itself.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::util::*;

const K: u64 = 1024;

/// Snapshot `vol` as `snaps/NAME`, after a sync.
fn snap(mnt: &Path, name: &str) {
    sync_fs(mnt);
    run(Command::new("btrfs")
        .args(["subvolume", "snapshot"])
        .arg(mnt.join("vol"))
        .arg(mnt.join(format!("snaps/{name}"))))
    .assert_ok();
}

/// `vol` with f1 300 K, f2 200 K, f3 100 K; `snaps/s1`; f1 rewritten;
/// `snaps/s2`; f2 rewritten.
fn origin_and_two_snapshots(mnt: &Path) {
    let p = |s: &str| mnt.join(s);
    btrfs(&["subvolume", "create"], &p("vol"));
    std::fs::create_dir(p("snaps")).unwrap();
    write_file(&p("vol/f1"), 300 * K as usize);
    write_file(&p("vol/f2"), 200 * K as usize);
    write_file(&p("vol/f3"), 100 * K as usize);
    snap(mnt, "s1");
    write_file(&p("vol/f1"), 300 * K as usize);
    snap(mnt, "s2");
    write_file(&p("vol/f2"), 200 * K as usize);
}

/// Three snapshots, then the origin deleted, so that the scan of the
/// snapshots sees every reference:
///
/// | data          | held by     |
/// |---------------|-------------|
/// | old f1, 300 K | s1          |
/// | new f1, 300 K | s2, s3      |
/// | old f2, 200 K | s1, s2      |
/// | new f2, 200 K | s3          |
/// | f3, 100 K     | s1, s2, s3  |
fn snapshots() -> Option<LoopFs> {
    let fs = LoopFs::new(FsKind::Btrfs)?;
    let p = |s: &str| fs.path().join(s);
    origin_and_two_snapshots(fs.path());
    snap(fs.path(), "s3");
    // Until the cleaner has dropped the origin's references, FIEMAP still
    // flags the data only a snapshot holds now as shared.
    btrfs(&["subvolume", "delete", "-C"], &p("vol"));
    btrfs(&["subvolume", "sync"], fs.path());
    sync_fs(fs.path());
    Some(fs)
}

fn plan(dir: &Path, extra: &[&str]) -> (Output, Option<Value>) {
    let out = run(Command::new(sdu_bin())
        .current_dir(dir)
        .args(["--json", "--to-free"])
        .args(extra)
        .args(["snaps/s1", "snaps/s2", "snaps/s3"]));
    let doc = serde_json::from_slice(&out.stdout).ok();
    (out, doc)
}

/// The `-c` total's reclaimable of `sdu -s -c PATHS`.
fn total_reclaimable(dir: &Path, paths: &[&str]) -> u64 {
    let out = run(Command::new(sdu_bin())
        .current_dir(dir)
        .args(["--json", "-s", "-c"])
        .args(paths));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("json");
    doc["total"]["reclaimable"].as_u64().expect("total")
}

fn chosen(doc: &Value) -> Vec<(String, u64)> {
    doc["chosen"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["path"].as_str().unwrap().to_string(),
                s["adds"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn plan_reaches_the_size_with_few_entries_and_frees_what_sdu_c_says() {
    let Some(fs) = snapshots() else {
        return;
    };
    let d = fs.path();
    // 450 K: s1 alone frees 300 K; with s2 (which frees nothing alone) the
    // old f2 they share is freed too.
    let (out, doc) = plan(d, &["450K"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let doc = doc.expect("a JSON plan");
    assert_eq!(
        chosen(&doc),
        [("snaps/s1".into(), 300 * K), ("snaps/s2".into(), 200 * K)]
    );
    assert_eq!(doc["frees"], 500 * K);
    assert_eq!(doc["reached"], true);
    assert_eq!(doc["all"], 1100 * K);
    // `sdu -s -c` on every candidate credits the same union by the roll-up.
    assert_eq!(
        total_reclaimable(d, &["snaps/s1", "snaps/s2", "snaps/s3"]),
        doc["all"]
    );
    // All three are needed for 1000 K; f3 only goes with the last.
    let (_, doc3) = plan(d, &["1000K"]);
    let doc3 = doc3.expect("a JSON plan");
    assert_eq!(chosen(&doc3).len(), 3);
    assert_eq!(doc3["frees"], 1100 * K);
    // The same plan whatever the thread count.
    for j in ["-j1", "-j2", "-j7"] {
        let (_, again) = plan(d, &["450K", j]);
        assert_eq!(
            again.map(|v| chosen(&v)),
            Some(chosen(&plan(d, &["450K"]).1.unwrap()))
        );
    }
    // The table: what each adds, what they free together, and the total.
    let out = run(Command::new(sdu_bin()).current_dir(d).args([
        "--to-free",
        "450K",
        "-B1",
        "snaps/s1",
        "snaps/s2",
        "snaps/s3",
    ]));
    assert_eq!(
        out.stdout_str(),
        "  Adds   Frees  Path\n307200  307200  snaps/s1\n204800  512000  snaps/s2\n512000  512000  total\n",
        "{out:?}"
    );
    // And the filesystem agrees: deleting the plan frees what it said (f3
    // stays, held by s3).
    let settle = || {
        run(Command::new("btrfs").args(["filesystem", "sync"]).arg(d)).assert_ok();
        btrfs_data_used(d)
    };
    let before = settle();
    for s in ["snaps/s1", "snaps/s2"] {
        btrfs(&["subvolume", "delete", "-C"], &d.join(s));
    }
    btrfs(&["subvolume", "sync"], d);
    let after = settle();
    assert_eq!(before - after, doc["frees"].as_u64().unwrap());
}

/// A SIZE the candidates cannot free: exit 3 (not 1, which says an entry
/// could not be read), how close they all come on stderr, and with
/// `--json` the plan all the same, `"reached": false`.
#[test]
fn unreachable_size_says_how_close_all_candidates_come_and_exits_3() {
    let Some(fs) = snapshots() else {
        return;
    };
    let msg = "sdu: cannot free 2.0M (2097152 bytes): all 3 candidate(s) together free 1.1M (1126400 bytes)\n";
    let (out, doc) = plan(fs.path(), &["2M"]);
    assert_eq!(out.code, Some(3), "{out:?}");
    assert_eq!(out.stderr, msg);
    let doc = doc.expect("a JSON plan on stdout");
    assert_eq!(doc["reached"], false, "{doc}");
    assert_eq!(
        (&doc["target"], &doc["frees"]),
        (&(2048 * K).into(), &(1100 * K).into())
    );
    assert_eq!(doc["frees"], doc["all"], "{doc}");
    assert_eq!(chosen(&doc).len(), 3, "{doc}");
    // The table: nothing on stdout, the same message and status.
    let out = run(Command::new(sdu_bin()).current_dir(fs.path()).args([
        "--to-free",
        "2M",
        "snaps/s1",
        "snaps/s2",
        "snaps/s3",
    ]));
    assert_eq!(out.code, Some(3), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    assert_eq!(out.stderr, msg);
}

/// Exit 3 on any filesystem, and stdout never empty with `--json`: the
/// plan frees what GNU du counts under the candidates (nothing in them is
/// shared), short of SIZE. A reachable SIZE exits 0.
#[test]
fn unreachable_size_exits_3_with_the_json_plan() {
    let t = small_tree();
    let args = [
        "--no-progress",
        "--json",
        "-B1",
        "--to-free",
        "10G",
        "w/c",
        "w/x",
    ];
    let out = run(Command::new(sdu_bin()).current_dir(t.path()).args(args));
    assert_eq!(out.code, Some(3), "{out:?}");
    assert!(out.stderr.starts_with("sdu: cannot free 10G "), "{out:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("a JSON plan");
    assert_eq!(doc["reached"], false, "{doc}");
    assert_eq!(doc["target"], 10u64 << 30, "{doc}");
    let du = run(Command::new("du")
        .current_dir(t.path())
        .args(["-s", "-c", "-B1", "w/c", "w/x"]));
    let held: u64 = du
        .stdout_str()
        .lines()
        .last()
        .and_then(|l| l.split('\t').next())
        .and_then(|n| n.parse().ok())
        .expect("du's total");
    assert_eq!(
        (doc["frees"].as_u64(), doc["all"].as_u64()),
        (Some(held), Some(held))
    );
    assert!(held > 150_000, "{doc}");
    let out = run(Command::new(sdu_bin()).current_dir(t.path()).args([
        "--no-progress",
        "--to-free",
        "1",
        "w/c",
        "w/x",
    ]));
    assert_eq!(out.code, Some(0), "{out:?}");
}

/// `sdu ARGS` in `dir`, as a table and with `--json`: refused, exit 2,
/// nothing on stdout, `stderr` the whole of stderr. A plan without the
/// candidate would read as the plan.
fn assert_refused(dir: &Path, args: &[&str], stderr: &str) {
    for json in [&[][..], &["--json"]] {
        let out = run(Command::new(sdu_bin())
            .current_dir(dir)
            .arg("--no-progress")
            .args(json)
            .args(args));
        assert_eq!(out.code, Some(2), "{out:?}");
        assert!(out.stdout.is_empty(), "{out:?}");
        assert_eq!(out.stderr, stderr, "{out:?}");
    }
}

/// `w/c/part` 100 000 bytes, `w/x` 50 000, `a/b/c`.
fn small_tree() -> TestDir {
    let t = TestDir::new();
    let w = t.mkdir("w");
    std::fs::create_dir(w.join("c")).unwrap();
    write_file(&w.join("c/part"), 100_000);
    write_file(&w.join("x"), 50_000);
    std::fs::create_dir_all(t.path().join("a/b/c")).unwrap();
    t
}

#[test]
fn overlapping_candidates_are_refused() {
    let t = small_tree();
    // `a` is the context of the candidates below it; one of them holds the
    // other.
    assert_refused(
        t.path(),
        &["--to-free", "1", "a", "a/b", "a/b/c"],
        "sdu: --to-free: 'a/b/c' lies inside another candidate; give candidates that do not overlap\n",
    );
}

/// A candidate or a PATH that cannot be accessed is refused before
/// anything is scanned (the walk's own "cannot access" is not printed).
/// Without it, `sdu --to-free 1M . ./nonexist` would plan among `.` alone:
/// delete everything.
#[test]
fn a_missing_candidate_or_path_is_refused_before_the_scan() {
    let t = small_tree();
    let d = t.path();
    let missing =
        |p: &str| format!("sdu: --to-free: cannot access '{p}': No such file or directory\n");
    assert_refused(
        d,
        &["--to-free", "1M", ".", "./nonexist"],
        &missing("./nonexist"),
    );
    // A candidate among candidates, a context PATH, one below a missing
    // directory.
    assert_refused(
        d,
        &["--to-free", "1", "w", "nonexist"],
        &missing("nonexist"),
    );
    assert_refused(
        d,
        &["--to-free", "1", "nonexist", "w/c"],
        &missing("nonexist"),
    );
    assert_refused(d, &["--to-free", "1", "w", "w/no/c"], &missing("w/no/c"));
    // A name --files0-from skips.
    let out = run(Command::new("sh").current_dir(d).arg("-c").arg(format!(
        "printf 'w\\0\\0a\\0' | '{}' --no-progress --to-free 1 --files0-from -",
        sdu_bin().display()
    )));
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    assert_eq!(
        out.stderr,
        "sdu: --to-free: -:2: invalid zero-length file name\nTry 'sdu --help' for more information.\n",
        "{out:?}"
    );
}

/// A file can be a candidate inside a scanned path, without `-a` (it used
/// to be left out silently).
#[test]
fn file_candidates_count() {
    let t = small_tree();
    let out = run(Command::new(sdu_bin()).current_dir(t.path()).args([
        "--json",
        "--to-free",
        "1",
        "w",
        "w/c/part",
    ]));
    assert_eq!(out.code, Some(0), "{out:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(chosen(&doc)[0].0, "w/c/part");
}

/// A symlink given as a candidate is the link, which is what deleting it
/// removes, not its target: `w/to_c` frees nothing, though `w/c` behind it
/// holds 100 kB. With a trailing `/` it names the directory behind it, as
/// for `rm`.
#[test]
fn a_symlink_candidate_is_the_link() {
    let t = small_tree();
    std::os::unix::fs::symlink("c", t.path().join("w/to_c")).unwrap();
    let plan = |c: &str| {
        run(Command::new(sdu_bin()).current_dir(t.path()).args([
            "--json",
            "--to-free",
            "1",
            "w",
            c,
        ]))
    };
    let out = plan("w/to_c");
    assert_eq!(out.code, Some(3), "the link frees nothing: {out:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("the plan");
    assert_eq!((&doc["reached"], &doc["frees"]), (&false.into(), &0.into()));
    assert!(out.stderr.contains("together free 0"), "{out:?}");
    let out = plan("w/to_c/");
    assert_eq!(out.code, Some(0), "{out:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(chosen(&doc)[0].0, "w/to_c/");
    assert!(doc["frees"].as_u64().unwrap() >= 100_000, "{doc}");
}

/// A candidate that the scan does not hold (here excluded), or that a
/// saved scan does not hold, is refused: the plan would be made without it.
#[test]
fn a_candidate_not_in_the_scan_is_refused() {
    let t = small_tree();
    let d = t.path();
    assert_refused(
        d,
        &["--to-free", "1", "--exclude", "x", "w", "w/x", "w/c"],
        "sdu: --to-free: 'w/x' is not in the scan (excluded, on another filesystem, or unreadable)\n",
    );
    run(Command::new(sdu_bin()).current_dir(d).args([
        "--export",
        "scan.json",
        "--exclude",
        "x",
        "w",
    ]))
    .assert_ok();
    let import = ["--to-free", "1", "--import", "scan.json"];
    assert_refused(
        d,
        &[&import[..], &["w/c", "w/x"]].concat(),
        "sdu: --to-free: 'w/x' is not an entry of the saved scan\n",
    );
    // Outside the saved scan's PATHs.
    assert_refused(
        d,
        &[&import[..], &["a", "w/c"]].concat(),
        "sdu: --to-free: 'a' is not an entry of the saved scan\n",
    );
}

/// A candidate (or a PATH) given twice, however it is spelt, is refused,
/// and said to be given twice.
#[test]
fn a_candidate_given_twice_is_refused() {
    let t = small_tree();
    let d = t.path();
    let twice = |p: &str, first: &str| {
        if p == first {
            format!("sdu: --to-free: '{p}' is given twice\n")
        } else {
            format!("sdu: --to-free: '{p}' is given twice (also as '{first}')\n")
        }
    };
    for (args, p, first) in [
        (&["a", "a"][..], "a", "a"),
        (&["a", "./a"], "./a", "a"),
        (&["a", "a/"], "a/", "a"),
        (&["w", "a", "w/."], "w/.", "w"),
        // With a context PATH.
        (&[".", "a", "a"], "a", "a"),
        (&[".", "a/b", "./a/b"], "./a/b", "a/b"),
        (&[".", "a/b", "a/b/"], "a/b/", "a/b"),
        (&[".", ".", "a"], ".", "."),
    ] {
        assert_refused(d, &[&["--to-free", "1"], args].concat(), &twice(p, first));
    }
    run(Command::new(sdu_bin())
        .current_dir(d)
        .args(["--export", "scan.json", "w"]))
    .assert_ok();
    for (args, p, first) in [
        (&["w/c", "w/c"][..], "w/c", "w/c"),
        (&["w/c", "w/x", "w//c/"], "w//c/", "w/c"),
    ] {
        let args = [&["--to-free", "1", "--import", "scan.json"], args].concat();
        assert_refused(d, &args, &twice(p, first));
    }
}

/// Two snapshots of a live subvolume that is kept: what they share with it
/// is not theirs to free. Given the mount as context (`.` before the
/// candidates), the plan sees the live subvolume's references and is
/// exact; given the snapshots alone, as root it is exact too (Btrfs says
/// who else holds their data), and without CAP_SYS_ADMIN the upper bound
/// the docs describe. Deleting the plan frees what it said.
#[test]
fn candidates_inside_a_scanned_path_see_its_references() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    let p = |s: &str| d.join(s);
    // old f1: s1; new f1: s2 + vol; old f2: s1 + s2; new f2: vol; f3: all.
    origin_and_two_snapshots(d);
    sync_fs(d);
    // As root, or (`root` false) without CAP_SYS_ADMIN.
    let plan_as = |root: bool, args: &[&str]| {
        let out = run(sdu_command(root)
            .current_dir(d)
            .args(["--json", "--to-free"])
            .args(args));
        (out.code, serde_json::from_slice::<Value>(&out.stdout).ok())
    };
    let run_plan = |args: &[&str]| plan_as(true, args);
    let (code, doc) = run_plan(&["450K", ".", "snaps/s1", "snaps/s2"]);
    let doc = doc.expect("a plan");
    assert_eq!(code, Some(0));
    assert_eq!(doc["all"], 500 * K);
    assert_eq!(doc["reclaimable_exact"], true, "{doc}");
    assert_eq!(
        chosen(&doc),
        [("snaps/s1".into(), 300 * K), ("snaps/s2".into(), 200 * K)]
    );
    // Alone, as root: sdu asks Btrfs who else holds what the snapshots
    // share, finds f3's third reference in vol, and the plan is exact.
    let (_, alone) = run_plan(&["450K", "snaps/s1", "snaps/s2"]);
    let alone = alone.expect("a plan");
    assert_eq!(alone["all"], 500 * K, "{alone}");
    assert_eq!(alone["reclaimable_exact"], true, "{alone}");
    // Without CAP_SYS_ADMIN nothing can be asked: the snapshots seem to
    // free f3 too (its third reference, in vol, is not scanned), the upper
    // bound the docs describe, and the plan says it is one.
    crate::btrfs::assert_setpriv_drops_sys_admin();
    let (_, nobody) = plan_as(false, &["450K", "snaps/s1", "snaps/s2"]);
    let nobody = nobody.expect("a plan");
    assert_eq!(nobody["all"], 600 * K, "{nobody}");
    assert_eq!(nobody["reclaimable_exact"], false, "{nobody}");
    let (code, unreached) = run_plan(&["550K", ".", "snaps/s1", "snaps/s2"]);
    assert_eq!(code, Some(3));
    assert_eq!(unreached.expect("a plan")["reached"], false);
    // The filesystem agrees with the plan made in context.
    let settle = || {
        run(Command::new("btrfs").args(["filesystem", "sync"]).arg(d)).assert_ok();
        btrfs_data_used(d)
    };
    let before = settle();
    for s in ["snaps/s1", "snaps/s2"] {
        btrfs(&["subvolume", "delete", "-C"], &p(s));
    }
    btrfs(&["subvolume", "sync"], d);
    assert_eq!(before - settle(), 500 * K);
}
