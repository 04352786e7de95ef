//! Golden `--json` documents: a fixed tree on a loopback XFS, scanned from
//! its mount point with relative roots, must give byte for byte the
//! documents in `tests/golden/`.
//!
//! The other JSON tests parse the document, so they cannot see a change of
//! layout (key order, spacing, one entry a line, escaping, base64) that
//! still parses; these can. A change of layout that is meant is a change
//! of the golden files, written on purpose with
//!
//! ```text
//! SDU_GOLDEN_FROM=/path/to/an/sdu CI=true cargo test --test sdu golden
//! ```
//!
//! which runs that binary instead of this one and writes its output to
//! `tests/golden/` (the test then fails, so that a regeneration is never
//! mistaken for a pass). Everything in the output is fixed by the tree: XFS
//! is mounted with `allocsize=4k` (no speculative preallocation), every file
//! is written in one go, the filesystem is synced before the scan, and no
//! path in the output leads outside the mount.

use std::ffi::OsString;
use std::fs::{self, File};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::args;
use crate::json;
use crate::util::{FsKind, LoopFs, check_header_fields, run, sdu_bin, sync_fs, write_file};

/// Regenerate the golden files with this binary instead of checking them.
const REGENERATE: &str = "SDU_GOLDEN_FROM";

/// A fresh XFS with reflinks, mounted with `allocsize=4k`.
fn xfs() -> Option<LoopFs> {
    let fs = LoopFs::new(FsKind::Xfs)?;
    let mnt = fs.path();
    // The harness mounts without options, and XFS ignores allocsize on a
    // remount: mount the same device again.
    let findmnt = |what: &str| {
        let out = run(Command::new("findmnt").args(["-n", "-o", what]).arg(mnt));
        out.assert_ok();
        out.stdout_str().trim().to_owned()
    };
    let dev = findmnt("SOURCE");
    run(Command::new("umount").arg(mnt)).assert_ok();
    run(Command::new("mount")
        .args(["-t", "xfs", "-o", "allocsize=4k", &dev])
        .arg(mnt))
    .assert_ok();
    let opts = findmnt("OPTIONS");
    assert!(
        opts.split(',').any(|o| o == "allocsize=4k"),
        "allocsize=4k not in effect: {opts}"
    );
    Some(fs)
}

/// The tree under `root/tree`:
///
/// ```text
/// tree/
///   top                   1 byte
///   a/  orig              40,000 bytes
///       clone             FICLONE of a/orig
///       quote"d \ é       100 bytes
///   b/  clone2            cp --reflink=always of a/orig
///       own               12,345 bytes
///       new<LF>line       5,000 bytes
///       name<FF><FE>      3,000 bytes, not UTF-8
///   c/  hl                hardlink of b/own
///       to_orig           symlink to ../a/orig
///       empty/
/// ```
fn make_tree(root: &Path) {
    let t = root.join("tree");
    let p = |s: &str| t.join(s);
    for d in ["a", "b", "c/empty"] {
        fs::create_dir_all(p(d)).unwrap();
    }
    write_file(&p("top"), 1);
    write_file(&p("a/orig"), 40_000);
    let src = File::open(p("a/orig")).unwrap();
    let dst = File::create_new(p("a/clone")).unwrap();
    rustix::fs::ioctl_ficlone(&dst, &src).expect("FICLONE a/orig -> a/clone");
    write_file(&p("a/quote\"d \\ é"), 100);
    let out = run(Command::new("cp")
        .arg("--reflink=always")
        .arg(p("a/orig"))
        .arg(p("b/clone2")));
    out.assert_ok();
    write_file(&p("b/own"), 12_345);
    write_file(&p("b/new\nline"), 5_000);
    let mut odd = p("b/name").into_os_string().into_vec();
    odd.extend_from_slice(b"\xff\xfe");
    write_file(&PathBuf::from(OsString::from_vec(odd)), 3_000);
    fs::hard_link(p("b/own"), p("c/hl")).unwrap();
    symlink("../a/orig", p("c/to_orig")).unwrap();
    sync_fs(root);
}

/// Each golden file and the arguments (after `--json`, run from the mount
/// point) that print it.
const CASES: [(&str, &[&str]); 4] = [
    ("json-a-c.json", &["-a", "-c", "tree"]),
    (
        "json-d1-sort-reclaimable-top3.json",
        &["-d", "1", "--sort", "reclaimable", "--top", "3", "tree"],
    ),
    ("json-two-roots.json", &["tree/a", "tree/b"]),
    (
        "json-a-c-three-roots.json",
        &["-a", "-c", "tree/c", "tree/b", "tree/a"],
    ),
];

fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// Where `got` and `want` first differ, line by line.
fn first_difference(got: &[u8], want: &[u8]) -> String {
    let (g, w) = (String::from_utf8_lossy(got), String::from_utf8_lossy(want));
    let mut gl = g.split_inclusive('\n');
    let mut wl = w.split_inclusive('\n');
    for n in 1.. {
        match (gl.next(), wl.next()) {
            (Some(a), Some(b)) if a == b => continue,
            (a, b) => return format!("line {n}:\n   got {a:?}\n  want {b:?}"),
        }
    }
    unreachable!()
}

#[test]
fn json_documents_match_the_golden_files() {
    let Some(xfs) = xfs() else { return };
    make_tree(xfs.path());
    let regenerate = std::env::var_os(REGENERATE);
    let bin = regenerate
        .as_deref()
        .map_or_else(|| sdu_bin().to_owned(), PathBuf::from);
    let mut failures = Vec::new();
    for (name, extra) in CASES {
        let mut a = args!["--json", "--no-progress"];
        a.extend(extra.iter().map(OsString::from));
        let out = run(Command::new(&bin).args(&a).current_dir(xfs.path()));
        out.assert_ok();
        let path = golden(name);
        if regenerate.is_some() {
            fs::write(&path, &out.stdout).unwrap();
            failures.push(format!("{name}: written by {}", bin.display()));
            continue;
        }
        let want = fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // A golden file that is not a valid document would prove nothing.
        check_header_fields(&json::parse(&want));
        if out.stdout != want {
            failures.push(format!(
                "`sdu {}` differs from {name}, {}",
                extra.join(" "),
                first_difference(&out.stdout, &want)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
