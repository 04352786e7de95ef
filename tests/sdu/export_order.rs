//! A saved scan of an unchanged tree is the same file, byte for byte,
//! whatever the walk's thread count and order: in every format
//! (`--export-format json`, `json-zstd` decompressed and as written,
//! `binary`), with hardlinks in many directories (some with links outside
//! the directory), on the test directory's filesystem and on XFS with
//! reflinked files (so that `files`, `segments` and the `mappings` kept
//! for `--since` are written), on Btrfs snapshots whose unchanged files
//! are mapped once and credited to their copies, with `-l` and `-L` too. `SOURCE_DATE_EPOCH`
//! sets the timestamp (a bad value is refused before the scan), and the
//! exports still import as the live scan.

use std::path::Path;
use std::process::Command;

use crate::saved::{assert_same_reports, os};
use crate::util::*;

/// The timestamp the exports are made with.
const EPOCH: &str = "1700000000";

/// Thread counts, each run twice: `-j1` walks in one order; more threads
/// meet entries in an order their scheduling decides, run to run.
const THREADS: &[&str] = &["-j1", "-j4", "-j2", "-j8", "-j1", "-j3", "-j4", "-j8"];

/// `sdu -jN EXTRA --export - ROOT` in `dir`, with a fixed timestamp; as
/// [`sdu_in`] runs it (`root` false: without `CAP_SYS_ADMIN`).
fn export_with(dir: &Path, (threads, root): (&str, bool), extra: &[&str], path: &str) -> Vec<u8> {
    let mut args = vec![threads];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--export", "-", path]);
    let o = sdu_in_env(dir, root, &args);
    o.assert_ok();
    assert!(!o.stdout.is_empty(), "{o:?}");
    o.stdout
}

/// [`sdu_in`] with `SOURCE_DATE_EPOCH` set to [`EPOCH`].
fn sdu_in_env(dir: &Path, root: bool, args: &[&str]) -> Output {
    let mut c = sdu_command(root);
    c.current_dir(dir)
        .env("SOURCE_DATE_EPOCH", EPOCH)
        .args(args);
    run_with_timeout(&mut c, 300)
}

/// The first place where `a` and `b` differ, with what each has there.
fn first_difference(a: &[u8], b: &[u8]) -> String {
    let at = a
        .iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let from = at.saturating_sub(120);
    let show = |v: &[u8]| String::from_utf8_lossy(&v[from..(at + 120).min(v.len())]).into_owned();
    format!(
        "byte {at} of {} and {}:\n{}\n---\n{}",
        a.len(),
        b.len(),
        show(a),
        show(b)
    )
}

/// Exports `root` in every format with each thread count, `before` run
/// between two (to change the walk's timing: a cold cache); asserts that
/// each format's exports are the same bytes. The JSON export, for the
/// caller to look into.
fn assert_same_exports(dir: &Path, root: &str, extra: &[&str], before: &dyn Fn()) -> Vec<u8> {
    assert_same_exports_as(dir, (root, true), extra, before)
}

/// [`assert_same_exports`], as root or (`caps` false) without
/// `CAP_SYS_ADMIN`.
fn assert_same_exports_as(
    dir: &Path,
    (root, caps): (&str, bool),
    extra: &[&str],
    before: &dyn Fn(),
) -> Vec<u8> {
    let mut json = Vec::new();
    for format in ["json", "json-zstd", "binary"] {
        let mut args = vec!["--export-format", format];
        args.extend_from_slice(extra);
        // (thread count, bytes as written, bytes read: zstd's decompressed).
        let mut first: Option<(&str, Vec<u8>, Vec<u8>)> = None;
        for (i, &j) in THREADS.iter().enumerate() {
            if i % 3 == 2 {
                before();
            }
            let out = export_with(dir, (j, caps), &args, root);
            let read = match format {
                "json-zstd" => zstd::decode_all(&out[..]).unwrap(),
                _ => out.clone(),
            };
            let Some((j0, f, r)) = &first else {
                first = Some((j, out, read));
                continue;
            };
            // What was read first, where a difference can be read.
            assert!(
                *r == read,
                "{extra:?} --export-format {format}: {j0} and {j} (run {i}) differ at {}",
                first_difference(r, &read)
            );
            assert!(
                *f == out,
                "{extra:?} {format}: {j0} and {j} (run {i}) differ"
            );
        }
        if format == "json" {
            json = first.expect("exported").2;
        }
    }
    let head = format!("\"timestamp\":{EPOCH},");
    assert!(
        json.windows(head.len()).any(|w| w == head.as_bytes()),
        "the timestamp is SOURCE_DATE_EPOCH's"
    );
    json
}

/// How many rows the records' `name` array has in the JSON export `json`.
fn rows(json: &[u8], name: &str) -> usize {
    let text = String::from_utf8_lossy(json);
    let key = format!("\"{name}\":[");
    let start = text
        .rfind(&key)
        .unwrap_or_else(|| panic!("no {name} in the export"))
        + key.len();
    let body = &text[start..];
    let end = body.find("],\n\"").or_else(|| body.find("]}")).unwrap();
    body[..end].matches('\n').count()
}

/// `dirs` directories of files, each hardlinking files of the next two
/// (links outside the directory), one inode with all its links in one
/// directory, and links in subdirectories.
fn linked_tree(root: &Path, dirs: usize) {
    medium_tree(root, dirs, 30);
    link_across(root, dirs, 12);
    for d in 0..dirs {
        let dir = root.join(format!("dir{d:03}"));
        let sub = dir.join("sub");
        std::fs::create_dir(&sub).unwrap();
        for k in 12..16 {
            let next = root.join(format!("dir{:03}/file{k:05}", (d + 2) % dirs));
            std::fs::hard_link(&next, sub.join(format!("far{k}"))).unwrap();
        }
        std::fs::hard_link(dir.join("file00020"), dir.join("same-dir")).unwrap();
        std::fs::hard_link(dir.join("file00020"), sub.join("below")).unwrap();
    }
}

#[test]
fn exports_of_a_linked_tree_are_the_same_bytes_whatever_the_threads() {
    let d = TestDir::new();
    let root = d.mkdir("r");
    linked_tree(&root, 24);
    let json = assert_same_exports(d.path(), "r", &[], &|| {});
    assert!(rows(&json, "links") > 24 * 20, "the links are written");
    // -L counts every inode through its links; -l counts every link.
    assert_same_exports(d.path(), "r", &["-L"], &|| {});
    assert_same_exports(d.path(), "r", &["-l"], &|| {});
    // Read back, the same figures as the live scan.
    let file = d.path().join("scan.json");
    std::fs::write(&file, &json).unwrap();
    assert_same_reports(
        d.path(),
        &file,
        &[os("r")],
        &[
            &["--json", "-a"],
            &["--du", "total", "-a"],
            &["-a", "-S", "-c"],
        ],
    );
}

#[test]
fn exports_of_reflinked_and_hardlinked_files_on_xfs_are_the_same_bytes() {
    let Some(fs) = LoopFs::new(FsKind::Xfs) else {
        return;
    };
    let root = fs.path().join("w");
    std::fs::create_dir(&root).unwrap();
    linked_tree(&root, 12);
    let reflink = |from: &Path, to: &Path| {
        run(Command::new("cp").arg("--reflink=always").arg(from).arg(to)).assert_ok();
    };
    for d in 0..12 {
        let dir = root.join(format!("dir{d:03}"));
        let big = dir.join("big");
        write_file(&big, 96 * 1024 + d * 4096);
        // A clone in the next directory; a hardlink of the original two
        // directories on: the inode mapped is whichever link a thread
        // meets first.
        reflink(&big, &root.join(format!("dir{:03}/clone", (d + 1) % 12)));
        std::fs::hard_link(&big, root.join(format!("dir{:03}/big-link", (d + 2) % 12))).unwrap();
        // A hardlinked file cloned: its links carry what mapping gave.
        reflink(&dir.join("file00003"), &dir.join("sub/clone3"));
        let part = format!("reflink {} 16k 0 32k", big.display());
        run(Command::new("xfs_io")
            .args(["-f", "-c", &part])
            .arg(dir.join("part")))
        .assert_ok();
    }
    sync_fs(fs.path());
    let json = assert_same_exports(fs.path(), "w", &[], &|| fs.cold());
    assert!(rows(&json, "files") >= 24, "the shared files are written");
    assert!(
        rows(&json, "segments") >= 12,
        "the shared segments are written"
    );
    let maps = b"\"mappings\":\"";
    assert!(
        json.windows(maps.len()).any(|w| w == maps),
        "maps for --since"
    );
    assert_same_exports(fs.path(), "w", &["-l"], &|| {});
    let file = fs.path().join("scan.json");
    std::fs::write(&file, &json).unwrap();
    assert_same_reports(
        fs.path(),
        &file,
        &[os("w")],
        &[
            &["--json", "-a"],
            &["--du", "reclaimable", "-a"],
            &["--json", "-a", "-S"],
        ],
    );
}

#[test]
fn a_source_date_epoch_that_is_no_number_is_refused_before_the_scan() {
    let d = TestDir::new();
    d.mkdir("r");
    for bad in ["soon", "-5", "1e9"] {
        let o = run(Command::new(sdu_bin())
            .current_dir(d.path())
            .env("SOURCE_DATE_EPOCH", bad)
            .args(["--export", "scan.json", "r"]));
        assert_eq!(o.code, Some(2), "{o:?}");
        assert!(
            o.stderr.contains("SOURCE_DATE_EPOCH") && o.stderr.contains(bad),
            "{o:?}"
        );
        assert!(!d.path().join("scan.json").exists(), "nothing written");
    }
    // Empty is unset: the time now.
    let o = run(Command::new(sdu_bin())
        .current_dir(d.path())
        .env("SOURCE_DATE_EPOCH", "")
        .args(["--export", "-", "r"]));
    o.assert_ok();
    assert!(o.stdout.starts_with(b"[1,2,{"), "{o:?}");
    assert!(
        !o.stdout_str().contains(&format!("\"timestamp\":{EPOCH},")),
        "{o:?}"
    );
}

#[test]
fn exports_of_btrfs_snapshots_with_copies_are_the_same_bytes() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let dir = fs.path();
    btrfs(&["subvolume", "create"], &dir.join("vol"));
    std::fs::create_dir(dir.join("snaps")).unwrap();
    linked_tree(&dir.join("vol"), 8);
    for d in 0..8 {
        write_file(
            &dir.join(format!("vol/dir{d:03}/big")),
            64 * 1024 + d * 4096,
        );
    }
    sync_fs(dir);
    for s in 0..3 {
        let vol = dir.join("vol");
        let snap = dir.join(format!("snaps/s{s}"));
        btrfs(
            &["subvolume", "snapshot", "-r", vol.to_str().unwrap()],
            &snap,
        );
        write_file(&dir.join(format!("vol/dir{s:03}/big")), 72 * 1024);
        sync_fs(dir);
    }
    // Without CAP_SYS_ADMIN a file unchanged across snapshots is mapped
    // once and its other copies credited with its extents: which one is
    // mapped is the walk's choice.
    let o = sdu_in_env(dir, false, &["--stats", "-s", "."]);
    assert_eq!(o.code, Some(0), "{o:?}");
    let line = o
        .stderr
        .lines()
        .find(|l| l.trim_start().starts_with("files with shared data"))
        .unwrap_or_else(|| panic!("{o:?}"));
    let copies: u64 = line
        .split('(')
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(copies > 8 * 20, "copies recorded: {line}");
    let json = assert_same_exports_as(dir, (".", false), &[], &|| {});
    assert!(
        rows(&json, "files") > 8 * 40,
        "the copies are written as files"
    );
    assert_same_exports(dir, ".", &[], &|| {});
    let file = dir.join("..").join("btrfs.json");
    std::fs::write(&file, &json).unwrap();
    // Read back, the same figures and marks as the live scan, but the
    // top's mark: without CAP_SYS_ADMIN the live scan of a whole Btrfs
    // proves its Reclaimable by the filesystem's Data Used, which an
    // import cannot (it says "at most" there).
    let top_mark = |out: &Output| -> Vec<String> {
        out.stdout_str()
            .lines()
            .map(|l| match l.starts_with("{\"path\":\".\",") {
                true => l
                    .split(",\"reclaimable_exact\"")
                    .next()
                    .unwrap()
                    .to_string(),
                false => l.to_string(),
            })
            .collect()
    };
    for flags in [
        &["--json", "-a"][..],
        &["--du", "shared", "-a"],
        &["--du", "reclaimable", "-a"],
    ] {
        let mut live = flags.to_vec();
        live.push(".");
        let a = sdu_in_env(dir, false, &live);
        let mut saved = flags.to_vec();
        saved.extend_from_slice(&["--import", file.to_str().unwrap()]);
        let b = sdu_in_env(dir, false, &saved);
        assert_eq!(a.code, Some(0), "{a:?}");
        assert_eq!(b.code, Some(0), "{b:?}");
        let (a, b) = (top_mark(&a), top_mark(&b));
        assert!(
            a.len() > 100 && a.len() == b.len(),
            "{flags:?}: {} and {} lines",
            a.len(),
            b.len()
        );
        let differ: Vec<_> = a.iter().zip(&b).filter(|(x, y)| x != y).collect();
        assert!(
            differ.is_empty(),
            "{flags:?}: live and imported differ: {differ:#?}"
        );
    }
}
