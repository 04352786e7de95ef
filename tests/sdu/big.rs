//! Trees that stress the walk: deeper than PATH_MAX, 200,000 entries in one
//! directory, and a low limit on open files. Each builds its tree once.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use crate::args;
use crate::json::{self, Kind};
use crate::util::*;

const DEEP_LEVELS: usize = 5_000;
const WIDE_ENTRIES: usize = 200_000;

/// Regression guard for a walk that opens full paths (ENAMETOOLONG past
/// 4096 bytes) or keeps one fd per level (EMFILE under `ulimit -n 64`).
#[test]
fn deep_tree_past_path_max_matches_du_and_survives_64_fds() {
    let t = Scratch::new();
    let root = t.mkdir("deep");
    deep_tree(&root, DEEP_LEVELS);
    let (raw, r) = sdu_json_raw(&args![root]);

    assert_eq!(r.entries.len(), DEEP_LEVELS + 1, "one entry per directory");
    let deepest = &r.entries[0];
    let mut want = root.clone().into_os_string().into_vec();
    for _ in 0..DEEP_LEVELS {
        want.extend_from_slice(b"/d");
    }
    assert_eq!(deepest.depth, DEEP_LEVELS as u64);
    assert!(
        deepest.path == OsString::from_vec(want),
        "deepest path is wrong (length {})",
        deepest.path.len()
    );
    let top = r.entries.last().unwrap();
    assert_eq!((top.depth, top.kind), (0, Kind::Dir));
    assert_eq!(top.dirs, DEEP_LEVELS as u64 + 1, "dirs at the root");
    assert_eq!(
        top.files,
        (DEEP_LEVELS / 500) as u64 + 1,
        "files at the root"
    );
    for (i, e) in r.entries.iter().rev().enumerate() {
        assert_eq!(e.depth, i as u64, "entry {i} from the end: {:?}", e.path);
        assert_eq!(e.dirs, DEEP_LEVELS as u64 + 1 - i as u64);
    }
    // du takes paths, so compare only where they fit in PATH_MAX.
    Du::default().assert_figures(&r, |e| [0, 1, 10, 100, 1000, 1500].contains(&e.depth));

    let low = sdu_with_fd_limit(64, &args!["--json", root]);
    low.assert_ok();
    assert!(
        low.stdout == raw,
        "JSON under `ulimit -n 64` differs from the JSON without it"
    );
}

#[test]
fn wide_dir_of_200k_entries_matches_du() {
    let t = Scratch::new();
    let root = t.mkdir("wide");
    wide_dir(&root, WIDE_ENTRIES);
    let r = sdu_json(&args![root]);
    assert_eq!(r.entries.len(), 1, "only the root without -a");
    let e = &r.entries[0];
    assert_eq!((e.files, e.dirs), (WIDE_ENTRIES as u64, 1));
    Du::default().assert_figures(&r, |_| true);

    let rows = sdu_ok(&args!["-a", "-0", root]);
    assert_eq!(
        rows.iter().filter(|&&b| b == 0).count(),
        WIDE_ENTRIES + 1,
        "rows of `sdu -a -0` on {WIDE_ENTRIES} files"
    );
    assert!(!rows.contains(&b'\n'), "-0 output contains a newline");

    let one = sdu_ok(&args!["--json", "-j1", root]);
    let many = sdu_ok(&args!["--json", "-j8", root]);
    assert_eq!(one, many, "-j1 and -j8 disagree");
    assert_eq!(json::parse(&one), r);
}

/// The same JSON under `ulimit -n 64` as without, on the standard tree and
/// on a tree of 100 directories, more than 64 fds if a walk kept every
/// directory open.
#[test]
fn low_fd_limit_gives_same_json() {
    let t = TestDir::new();
    let std_root = t.mkdir("std");
    standard_tree(&std_root);
    let med = t.mkdir("medium");
    medium_tree(&med, 100, 20);
    for root in [&std_root, &med] {
        let (raw, _) = sdu_json_raw(&args!["-a", root]);
        let low = sdu_with_fd_limit(64, &args!["--json", "-a", root]);
        low.assert_ok();
        assert!(
            low.stdout == raw,
            "{}: JSON under `ulimit -n 64` differs",
            root.display()
        );
        for j in ["-j1", "-j2", "-j8"] {
            let o = sdu_with_fd_limit(64, &args!["--json", "-a", j, root]);
            o.assert_ok();
            assert!(
                o.stdout == raw,
                "{}: {j} under ulimit -n 64",
                root.display()
            );
        }
    }
}
