//! Permissions: what `nobody` cannot read is reported by path.

use std::fs;

use super::{clone_file, invariant_violations, sdu_as_nobody, xfs};
use crate::args;
use crate::json;
use crate::util::*;

/// As `nobody`: a directory without read permission, one without execute
/// permission and a reflinked file that can be stat-ed but not opened are
/// each reported by path, the exit status is 1, and the summary counts the
/// bytes that could not be mapped.
#[test]
fn unreadable_entries_are_reported_by_path_as_nobody() {
    if !is_root() {
        unavailable::<()>("switching to nobody needs root");
        return;
    }
    let Some(l) = xfs() else { return };
    let root = l.path().join("perm");
    for d in ["noread", "noexec", "ok"] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    write_file(&root.join("noread/f"), 5000);
    write_file(&root.join("noexec/f"), 5000);
    write_file(&root.join("ok/src"), 65536);
    clone_file(&root.join("ok/src"), &root.join("ok/secret")).unwrap();
    chmod(&root.join("ok/secret"), 0o000);
    chmod(&root.join("noread"), 0o311);
    chmod(&root.join("noexec"), 0o644);
    chmod(&root, 0o755);
    sync_fs(l.path());

    let out = sdu_as_nobody(&args!["--json", &root], 60);
    assert_eq!(out.code, Some(1), "{out:?}");
    let r = json::parse(&out.stdout);
    let q = |p: &str| format!("'{}'", root.join(p).display());
    let lines: Vec<&str> = out.stderr.lines().collect();
    let has = |path: &str, what: &str| {
        lines
            .iter()
            .any(|l| l.contains(&q(path)) && l.contains(what))
    };
    assert!(has("noread", "Permission denied"), "{out:?}");
    assert!(has("noexec/f", "Permission denied"), "{out:?}");
    assert!(has("ok/secret", "Permission denied"), "{out:?}");
    assert!(
        lines.contains(
            &"sdu: 1 file(s), 65536 bytes, could not be mapped and were counted as exclusive"
        ),
        "no summary of the unmapped bytes: {out:?}"
    );
    assert_eq!(r.error_count, 3, "{out:?}");
    // The readable clone is still mapped; the unreadable one counts as
    // exclusive, so the directory's shared bytes are its source's only.
    let ok = r
        .entries
        .iter()
        .find(|e| e.path == root.join("ok"))
        .unwrap();
    assert_eq!(ok.shared, 65536, "{ok:?}");
    assert!(invariant_violations(&r).is_empty(), "{r:?}");
}
