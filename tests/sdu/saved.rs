//! Saved scans: `--export` then `--import` gives the live scan's reports
//! byte for byte (XFS with reflinks and hardlinks, odd names; Btrfs
//! snapshots), and the same `--to-free` plans; `ncdu -f` browses the
//! export; ncdu's own export imports; truncated and corrupt files are
//! rejected with exit 2.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Command;

use crate::args;
use crate::tmux::{PROMPT, Tmux, last_line};
use crate::util::*;

const K: usize = 1024;

/// `sdu ARGS` run in `dir`.
pub(crate) fn sdu_in(dir: &Path, args: &[&OsStr]) -> Output {
    run_with_timeout(Command::new(sdu_bin()).current_dir(dir).args(args), 300)
}

pub(crate) fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

/// Exports `roots` (in `dir`) to `file` with `extra` flags.
pub(crate) fn export(dir: &Path, file: &Path, extra: &[&str], roots: &[&OsStr]) {
    let mut a: Vec<&OsStr> = extra.iter().map(|s| os(s)).collect();
    a.push(os("--export"));
    a.push(file.as_os_str());
    a.extend_from_slice(roots);
    let o = sdu_in(dir, &a);
    o.assert_ok();
    assert!(o.stdout.is_empty(), "--export prints no report: {o:?}");
}

/// Asserts that `sdu FLAGS ROOTS` and `sdu FLAGS --import FILE` print the
/// same bytes, for every set of flags.
pub(crate) fn assert_same_reports(
    dir: &Path,
    file: &Path,
    roots: &[&OsStr],
    flag_sets: &[&[&str]],
) {
    for flags in flag_sets {
        let mut live: Vec<&OsStr> = flags.iter().map(|s| os(s)).collect();
        let mut saved = live.clone();
        live.extend_from_slice(roots);
        saved.push(os("--import"));
        saved.push(file.as_os_str());
        let a = sdu_in(dir, &live);
        a.assert_ok();
        let b = sdu_in(dir, &saved);
        b.assert_ok();
        assert!(!a.stdout.is_empty());
        assert_eq!(
            String::from_utf8_lossy(&a.stdout),
            String::from_utf8_lossy(&b.stdout),
            "sdu {flags:?}: the live scan and the imported one differ"
        );
        assert_eq!(a.stdout, b.stdout, "sdu {flags:?}: bytes differ");
    }
}

pub(crate) const FLAG_SETS: &[&[&str]] = &[
    &["--json"],
    &["--json", "-a"],
    &["--json", "-a", "-S"],
    &["--json", "-c", "-a", "--inodes"],
    &["-a"],
    &["-B1", "-a", "-c"],
    &["-s"],
    &["-d", "1"],
    &["--du", "total", "-a"],
    &["--du", "reclaimable"],
    &["--du", "shared", "-a", "-S"],
    &["--tree", "-a", "--color", "never"],
    &["--sort", "reclaimable", "--top", "4", "-a"],
    &["--sort", "name", "--min-size", "100K", "-a"],
    &["-b", "-a"],
];

/// The XFS tree: whole-file and partial clones, hardlinks within and
/// across directories, a name that is not UTF-8, one with a newline, a
/// symlink and a FIFO.
pub(crate) fn xfs_tree() -> Option<LoopFs> {
    let fs = LoopFs::new(FsKind::Xfs)?;
    let w = fs.path().join("w");
    for d in ["a", "b", "c", "c/deep/er"] {
        std::fs::create_dir_all(w.join(d)).unwrap();
    }
    write_file(&w.join("a/orig"), 1024 * K);
    run(Command::new("cp")
        .args(["--reflink=always"])
        .arg(w.join("a/orig"))
        .arg(w.join("b/copy")))
    .assert_ok();
    write_file(&w.join("c/partial"), 512 * K);
    let clone = format!("reflink {} 512k 256k 256k", w.join("a/orig").display());
    run(Command::new("xfs_io")
        .args(["-c", &clone])
        .arg(w.join("c/partial")))
    .assert_ok();
    write_file(&w.join("own"), 300 * K);
    std::fs::hard_link(w.join("own"), w.join("c/deep/er/hard")).unwrap();
    write_file(&w.join("c/twice"), 40 * K);
    std::fs::hard_link(w.join("c/twice"), w.join("c/twice2")).unwrap();
    write_file(&w.join(OsStr::from_bytes(b"bad\xffname")), 5000);
    write_file(&w.join("new\nline"), 7000);
    std::os::unix::fs::symlink("own", w.join("sym")).unwrap();
    run(Command::new("mkfifo").arg(w.join("fifo"))).assert_ok();
    sync_fs(fs.path());
    Some(fs)
}

#[test]
fn export_then_import_gives_the_live_reports_on_xfs() {
    let Some(fs) = xfs_tree() else { return };
    let dir = fs.path();
    let file = dir.join("scan.json");
    export(dir, &file, &[], &[os("w")]);
    assert_same_reports(dir, &file, &[os("w")], FLAG_SETS);
    // Several roots, one a file, one inside another: a top of their own.
    let roots = [os("w/a"), os("w/c"), os("w/own"), os("w")];
    let many = dir.join("many.json");
    export(dir, &many, &[], &roots);
    let sdus: Vec<&[&str]> = FLAG_SETS
        .iter()
        .copied()
        .filter(|f| !f.contains(&"--du"))
        .collect();
    assert_same_reports(dir, &many, &roots, &sdus);
    // du's counting of overlapping roots needs a walk by du's rules.
    let du = dir.join("du.json");
    export(dir, &du, &["--du", "total"], &roots);
    assert_same_reports(
        dir,
        &du,
        &roots,
        &[&["--du", "total", "-a", "-c"], &["--du", "inodes", "-c"]],
    );
    let o = sdu_in(
        dir,
        &[os("--du"), os("total"), os("--import"), many.as_os_str()],
    );
    assert_eq!(o.code, Some(2), "{o:?}");
    assert!(o.stderr.contains("overlap"), "{o:?}");
}

#[test]
fn export_to_stdout_imports_from_stdin_and_keeps_times() {
    let Some(fs) = xfs_tree() else { return };
    let dir = fs.path();
    let o = sdu_in(dir, &[os("--time"), os("--export"), os("-"), os("w")]);
    o.assert_ok();
    let file = dir.join("t.json");
    std::fs::write(&file, &o.stdout).unwrap();
    let live = sdu_in(dir, &[os("--time"), os("-a"), os("w")]);
    let back = run_with_timeout(
        Command::new("sh").current_dir(dir).arg("-c").arg(format!(
            "{} --time -a --import - < t.json",
            sdu_bin().display()
        )),
        60,
    );
    back.assert_ok();
    assert_eq!(live.stdout, back.stdout);
    // A time that was not recorded is refused.
    let o = sdu_in(dir, &[os("--time=atime"), os("--import"), file.as_os_str()]);
    assert_eq!(o.code, Some(2), "{o:?}");
}

#[test]
fn import_plans_as_the_live_scan() {
    let Some(fs) = xfs_tree() else { return };
    let dir = fs.path();
    let file = dir.join("scan.json");
    export(dir, &file, &[], &[os("w")]);
    for (size, cands) in [
        ("1M", &["w/a", "w/b", "w/c"][..]),
        ("300K", &["w/own", "w/c", "w/b/copy"][..]),
        ("1200K", &["w/b", "w/a", "w/c/partial", "w/c/deep"][..]),
    ] {
        for json in [false, true] {
            let mut live = vec![os("-a"), os("--to-free"), os(size), os("w")];
            let mut saved = vec![os("--to-free"), os(size), os("--import"), file.as_os_str()];
            if json {
                live.push(os("--json"));
                saved.push(os("--json"));
            }
            live.extend(cands.iter().map(|c| os(c)));
            saved.extend(cands.iter().map(|c| os(c)));
            let a = sdu_in(dir, &live);
            let b = sdu_in(dir, &saved);
            a.assert_ok();
            b.assert_ok();
            assert_eq!(a.stdout_str(), b.stdout_str(), "{size} {cands:?}");
        }
    }
    // Unreachable: exit 3, as live.
    let o = sdu_in(
        dir,
        &[
            os("--to-free"),
            os("10G"),
            os("--import"),
            file.as_os_str(),
            os("w/a"),
        ],
    );
    assert_eq!(o.code, Some(3), "{o:?}");
    assert!(o.stderr.contains("cannot free"), "{o:?}");
    // A candidate not in the scan is named, and nothing is planned.
    let o = sdu_in(
        dir,
        &[
            os("--to-free"),
            os("10G"),
            os("--import"),
            file.as_os_str(),
            os("w/a"),
            os("w/nope"),
        ],
    );
    assert_eq!(o.code, Some(2), "{o:?}");
    assert!(o.stdout.is_empty(), "{o:?}");
    assert_eq!(
        o.stderr, "sdu: --to-free: 'w/nope' is not an entry of the saved scan\n",
        "{o:?}"
    );
    // Overlapping candidates are refused, as live.
    let o = sdu_in(
        dir,
        &[
            os("--to-free"),
            os("1K"),
            os("--import"),
            file.as_os_str(),
            os("w/c"),
            os("w/c/partial"),
        ],
    );
    assert_eq!(o.code, Some(2), "{o:?}");
    assert!(o.stdout.is_empty(), "{o:?}");
}

#[test]
fn import_of_btrfs_snapshots_gives_the_live_reports_and_plans() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let dir = fs.path();
    let btrfs = |args: &[&str]| {
        run(Command::new("btrfs").args(args).current_dir(dir)).assert_ok();
    };
    btrfs(&["subvolume", "create", "vol"]);
    std::fs::create_dir(dir.join("snaps")).unwrap();
    write_file(&dir.join("vol/f1"), 300 * K);
    write_file(&dir.join("vol/f2"), 200 * K);
    sync_fs(dir);
    btrfs(&["subvolume", "snapshot", "vol", "snaps/s1"]);
    write_file(&dir.join("vol/f1"), 300 * K);
    sync_fs(dir);
    btrfs(&["subvolume", "snapshot", "vol", "snaps/s2"]);
    write_file(&dir.join("vol/f2"), 100 * K);
    sync_fs(dir);
    let file = dir.join("..").join("btrfs.json");
    let file = file.as_path();
    export(dir, file, &[], &[os(".")]);
    assert_same_reports(dir, file, &[os(".")], FLAG_SETS);
    let cands = ["./snaps/s1", "./snaps/s2"];
    let mut live = vec![os("-a"), os("--to-free"), os("100K"), os(".")];
    let mut saved = vec![
        os("--to-free"),
        os("100K"),
        os("--import"),
        file.as_os_str(),
    ];
    live.extend(cands.iter().map(|c| os(c)));
    saved.extend(cands.iter().map(|c| os(c)));
    let (a, b) = (sdu_in(dir, &live), sdu_in(dir, &saved));
    a.assert_ok();
    b.assert_ok();
    assert_eq!(a.stdout_str(), b.stdout_str());
}

#[test]
fn a_deep_tree_round_trips() {
    let d = TestDir::new();
    let root = d.mkdir("r");
    deep_tree(&root, 1500);
    let file = d.path().join("deep.json");
    export(d.path(), &file, &[], &[os("r")]);
    assert_same_reports(d.path(), &file, &[os("r")], &[&["--json", "-a"], &["-s"]]);
}

/// ncdu, or a skip (a failure in CI).
fn ncdu() -> Option<()> {
    if run(Command::new("ncdu").arg("-v")).code != Some(0) {
        return unavailable("ncdu is not installed");
    }
    Some(())
}

#[test]
fn ncdu_browses_the_export() {
    let Some(fs) = xfs_tree() else { return };
    if ncdu().is_none() {
        return;
    }
    let Some(t) = Tmux::shell("ncdu-browses") else {
        return;
    };
    let dir = fs.path();
    let file = dir.join("scan.json");
    export(dir, &file, &[], &[os("w")]);
    t.keys(&[&format!("ncdu -f {}", file.display()), "Enter"]);
    let names = [
        "[imported]",
        "--- w ",
        "/a",
        "/b",
        "/c",
        "own",
        "sym",
        "bad",
    ];
    // ncdu draws its rows one after another: a screen caught as "own"
    // appears can lack the rows below it (seen under load).
    let s = t.wait_for("ncdu's listing", |s| names.iter().all(|n| s.contains(n)));
    for name in names {
        assert!(s.contains(name), "{name} missing from ncdu's screen:\n{s}");
    }
    // Into c (third by size), where the hardlink is marked H.
    t.keys(&["Down", "Down", "Enter"]);
    let s = t.wait_for("c's listing", |s| s.contains("--- w/c "));
    assert!(s.contains("partial") && s.contains("/deep"), "{s}");
    t.keys(&["q"]);
    t.wait_for("the prompt after ncdu", |s| last_line(s) == PROMPT);
    // Several roots sit in a directory of their own.
    let many = dir.join("many.json");
    export(dir, &many, &[], &[os("w/a"), os("w/c")]);
    t.keys(&[&format!("clear; ncdu -f {}", many.display()), "Enter"]);
    let s = t.wait_for("ncdu's listing", |s| s.contains("w/c"));
    assert!(s.contains("(2 paths)") && s.contains("w/a"), "{s}");
    t.keys(&["q"]);
    t.wait_for("the prompt after ncdu", |s| last_line(s) == PROMPT);
}

#[test]
fn ncdus_own_export_imports_with_nothing_shared() {
    let Some(fs) = xfs_tree() else { return };
    if ncdu().is_none() {
        return;
    }
    let dir = fs.path();
    let file = dir.join("ncdu.json");
    let o = run(Command::new("ncdu")
        .current_dir(dir)
        .arg("-o")
        .arg(&file)
        .arg("w"));
    assert!(o.code == Some(0) && file.exists(), "{o:?}");
    let o = sdu_in(
        dir,
        &[os("--json"), os("-s"), os("--import"), file.as_os_str()],
    );
    assert_eq!(o.code, Some(0), "{o:?}");
    assert_eq!(
        o.stderr.matches("not written by sdu").count(),
        1,
        "said once: {o:?}"
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let e = &v["entries"][0];
    let live = sdu_json(&args!["-s", fs.path().join("w")]);
    assert_eq!(e["total"], live.entries[0].total, "{v}");
    assert!(live.entries[0].shared > 0);
    assert_eq!(e["exclusive"], e["total"]);
    assert_eq!(e["shared"], 0);
    assert_eq!(e["path"], fs.path().join("w").to_str().unwrap());
}

#[test]
fn truncated_and_corrupt_files_are_rejected() {
    let d = TestDir::new();
    let root = d.mkdir("r");
    std::fs::create_dir(root.join("sub")).unwrap();
    write_file(&root.join("sub/f"), 10_000);
    write_file(&root.join("g"), 3000);
    std::fs::hard_link(root.join("g"), root.join("sub/g2")).unwrap();
    let good = d.path().join("good.json");
    export(d.path(), &good, &[], &[os("r")]);
    let text = std::fs::read(&good).unwrap();
    let bad = d.path().join("bad.json");
    let rejected = |data: &[u8], what: &str| {
        std::fs::write(&bad, data).unwrap();
        let o = sdu_in(d.path(), &[os("--json"), os("--import"), bad.as_os_str()]);
        assert_eq!(o.code, Some(2), "{what}: {o:?}");
        assert!(o.stdout.is_empty(), "{what}: nothing printed: {o:?}");
        assert!(o.stderr.starts_with("sdu: "), "{what}: {o:?}");
        assert!(o.stderr.contains(bad.to_str().unwrap()), "{what}: {o:?}");
        o.stderr
    };
    // Cut anywhere: never read as a smaller tree.
    for n in (0..text.len() - 1).step_by(7).chain([text.len() - 2]) {
        let e = rejected(&text[..n], &format!("cut at {n}"));
        assert!(
            n == 0 || e.contains("line ") && e.contains("column "),
            "cut at {n}: {e}"
        );
    }
    let s = String::from_utf8(text.clone()).unwrap();
    let edits: &[(&str, &str, &str)] = &[
        ("[1,2,", "[2,2,", "major format version 2"),
        ("\"format\":2", "\"format\":9", "newer sdu"),
        // Format 2: a node's bound bits, and a space's, are 0 to 3.
        (
            "\"sdu\":{\"apparent\"",
            "\"sdu\":{\"bound\":4,\"apparent\"",
            "unknown bound",
        ),
        (
            "\"spaces\":[",
            "\"spaces\":[[0,\"block\",0,7]",
            "unknown bound",
        ),
        ("\"asize\":", "\"asize\":-", "expected a number"),
        ("\"name\":\"sub\"", "\"nam\":\"sub\"", "without a name"),
        (
            "\"records\"",
            "\"recorts\"",
            "records after the tree are missing",
        ),
        ("\"links\":[\n[", "\"links\":[\n[77", "not in the tree"),
        ("}]\n", "}]]\n", "after the end"),
        ("\"spaces\":[", "\"spaces\":[[0,\"block\",5]", "units"),
    ];
    for (from, to, says) in edits {
        assert!(s.contains(from), "{from} not in the export:\n{s}");
        let e = rejected(s.replacen(from, to, 1).as_bytes(), from);
        assert!(e.contains(says), "{from} -> {to}: {e}");
    }
    // The node count announced must be the tree's.
    let n = s.split("\"nodes\":").nth(1).unwrap();
    let n: String = n.chars().take_while(char::is_ascii_digit).collect();
    let e = rejected(
        s.replacen(&format!("\"nodes\":{n}"), "\"nodes\":3", 1)
            .as_bytes(),
        "node count",
    );
    assert!(e.contains("announces"), "{e}");
    rejected(b"{}", "not an array");
    let e = rejected(b"", "empty");
    assert_eq!(
        e,
        format!(
            "sdu: {}: the file is empty, not a saved scan\n",
            bad.display()
        )
    );
    let e = rejected(b" \n", "white space");
    assert!(e.ends_with(": the file holds only white space, not a saved scan\n"));
    rejected(b"[1,2,{},{\"name\":\"f\"}]", "a file for a tree");
    // Format 1 said nothing of bounds: it reads, every Reclaimable a bound.
    std::fs::write(&bad, s.replacen("\"format\":2", "\"format\":1", 1)).unwrap();
    let o = sdu_in(
        d.path(),
        &[os("--json"), os("-a"), os("--import"), bad.as_os_str()],
    );
    assert_eq!(o.code, Some(0), "format 1: {o:?}");
    let old = crate::json::parse(&o.stdout);
    let now = sdu_json(&args!["-a", "--import", &good]);
    assert!(old.entries.iter().all(|e| !e.reclaimable_exact), "{old:?}");
    let figures = |r: &crate::json::Report| {
        r.entries
            .iter()
            .map(|e| (e.path.clone(), e.total, e.exclusive, e.reclaimable))
            .collect::<Vec<_>>()
    };
    assert_eq!(figures(&old), figures(&now), "the same figures");
    let o = sdu_in(d.path(), &[os("--import"), os("no-such-file")]);
    assert_eq!(o.code, Some(2), "{o:?}");
    assert!(o.stderr.contains("No such file or directory"), "{o:?}");
    // PATHs are candidates only.
    let o = sdu_in(d.path(), &[os("--import"), good.as_os_str(), os("r")]);
    assert_eq!(o.code, Some(2), "{o:?}");
}

#[test]
fn a_directory_to_import_is_called_a_directory() {
    let d = TestDir::new();
    d.mkdir("dir");
    let o = sdu_in(d.path(), &[os("--import"), os("dir")]);
    assert_eq!(o.code, Some(2), "{o:?}");
    assert_eq!(o.stderr, "sdu: dir: is a directory, not a saved scan\n");
    assert!(o.stdout.is_empty(), "{o:?}");
    // Standard input a directory (`run` would give it /dev/null).
    let o = Command::new(sdu_bin())
        .args(["--import", "-"])
        .stdin(std::fs::File::open(d.path()).unwrap())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert_eq!(o.stderr, b"sdu: -: is a directory, not a saved scan\n");
}

#[test]
fn an_export_file_that_cannot_be_created_fails_before_the_scan() {
    let d = TestDir::new();
    // Scanned first, the missing PATH would be named before the failure.
    let o = sdu_in(
        d.path(),
        &[os("--export"), os("no-dir/scan.json"), os("no-such-path")],
    );
    assert_eq!(o.code, Some(2), "{o:?}");
    assert_eq!(
        o.stderr,
        "sdu: no-dir/scan.json: cannot create: No such file or directory\n"
    );
    assert!(o.stdout.is_empty(), "{o:?}");
}
