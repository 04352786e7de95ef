//! `--since` and its SCAN: what it refuses, the saved scan's formats
//! (ncdu's, json-zstd), a filesystem with no maps (ext4), XFS without the
//! reverse mappings, a saved scan made by `--since` itself.

use std::fs;
use std::path::Path;
use std::process::Command;

use super::*;
use crate::args;
use crate::util::*;

/// `sdu ARGS` in `dir`: (exit status, stderr, stdout empty).
fn sdu_in_dir(dir: &Path, args: &[&str]) -> (Option<i32>, String, bool) {
    let out = run(Command::new(sdu_bin()).current_dir(dir).args(args));
    (out.code, out.stderr, out.stdout.is_empty())
}

/// A SCAN `--since` cannot read is an error of the saved scan, as
/// `--import`'s are (exit 2, nothing on stdout); one that keeps no maps (an
/// ncdu export) is a warning and every file is mapped; `--verify` alone is
/// a usage error.
#[test]
fn since_refuses_what_it_cannot_read() {
    let d = TestDir::new();
    let dir = d.path();
    let t = Tree { root: dir };
    t.write("d/f", 10_000);
    let missing = sdu_in_dir(dir, &["--since", "nope", "d"]);
    assert_eq!(
        missing,
        (
            Some(2),
            "sdu: nope: --since: No such file or directory\n".into(),
            true
        )
    );
    // The exit status of --import's error on the same file.
    assert_eq!(sdu_in_dir(dir, &["--import", "nope"]).0, Some(2));
    assert_eq!(
        sdu_in_dir(dir, &["--since", "d", "d"]),
        (Some(2), "sdu: d: --since: Is a directory\n".into(), true)
    );
    sdu_in_dir(
        dir,
        &["--export-format", "binary", "--export", "b.bin", "d"],
    );
    let (code, err, empty) = sdu_in_dir(dir, &["--since", "b.bin", "d"]);
    assert_eq!((code, empty), (Some(2), true), "{err}");
    assert!(
        err.starts_with("sdu: b.bin: --since: ")
            && err.contains("binary")
            && err.lines().count() == 1,
        "{err}"
    );
    // ncdu's own export: a warning, and the full scan's figures.
    fs::write(
        dir.join("n.json"),
        "[1,2,{\"progname\":\"ncdu\",\"progver\":\"2.3\",\"timestamp\":1},\n[{\"name\":\"/x\"}]]\n",
    )
    .unwrap();
    let want = sdu_ok(&args!["-a", "--json", dir.join("d")]);
    let out = sdu(&args![
        "-a",
        "--json",
        "--since",
        dir.join("n.json"),
        dir.join("d")
    ]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stdout, want, "with an ncdu SCAN: not the full scan");
    assert!(
        out.stderr.contains("keeps no extent maps") && out.stderr.lines().count() == 1,
        "{out:?}"
    );
    let (code, err, empty) = sdu_in_dir(dir, &["--verify", "d"]);
    assert_eq!((code, empty), (Some(2), true), "{err}");
    assert!(err.contains("--since"), "{err}");
}

/// A saved scan whose maps are damaged is refused, never read as maps:
/// the value cut short, not base64, the file cut in the middle of it.
#[test]
fn xfs_damaged_maps_are_refused() {
    let Some(fs) = make_fs(FsKind::Xfs) else {
        return;
    };
    let mnt = fs.path();
    let t = Tree { root: mnt };
    t.write("s/a", 3 * BLK);
    t.clone("s/a", "s/b");
    export(mnt, true);
    let text = fs::read_to_string(mnt.join(SAVED)).unwrap();
    let key = "\"mappings\":\"";
    let at = text.find(key).expect("no mappings in the export") + key.len();
    let end = at + text[at..].find('"').unwrap();
    assert!(end - at > 8, "{text}");
    let cases = [
        // Whole groups of 4 kept: base64, but the postcard cut short.
        (
            "cut",
            format!("{}{}", &text[..at + (end - at) / 8 * 4], &text[end..]),
            "corrupt",
        ),
        (
            "b64",
            format!("{}@@@@{}", &text[..at], &text[at..]),
            "base64",
        ),
        ("half", text[..(at + end) / 2].to_owned(), ""),
    ];
    for (name, body, what) in cases {
        let f = format!("nb/{name}.json");
        fs::write(mnt.join(&f), body).unwrap();
        let out = sdu_as(mnt, true, &["--since", &f, "s"]);
        assert_eq!(
            (out.code, out.stdout.len()),
            (Some(2), 0),
            "{name}: {out:?}"
        );
        assert!(
            out.stderr.starts_with(&format!("sdu: {f}: --since: "))
                && out.stderr.contains(what)
                && out.stderr.lines().count() == 1,
            "{name}: {out:?}"
        );
    }
}
