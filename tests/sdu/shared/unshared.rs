//! Filesystems that cannot share: everything exclusive, nothing mapped.

use std::path::Path;
use std::process::Command;

use super::{assert_invariants, sdu_json_stats};
use crate::args;
use crate::json::Entry;
use crate::util::*;

/// Everything exclusive, nothing mapped, on a filesystem without sharing.
fn assert_nothing_shared(root: &Path) {
    let (report, stats) = sdu_json_stats(&args!["-a", root]);
    let top = report.entries.last().unwrap();
    assert!(top.files > 5 && top.total > 0, "{top:?}");
    assert_eq!(stat_value(&stats, "files mapped (FIEMAP)"), 0, "{stats}");
    assert_eq!(stat_value(&stats, "FIEMAP calls"), 0, "{stats}");
    let bad: Vec<&Entry> = report
        .entries
        .iter()
        .filter(|e| e.exclusive != e.total || e.shared != 0)
        .collect();
    assert!(bad.is_empty(), "shared data where none can be: {bad:#?}");
    assert_invariants(&report);
}

/// Filesystem magic numbers of the ones that can share (statfs f_type).
fn may_share(path: &Path) -> bool {
    let st = rustix::fs::statfs(path).unwrap();
    const XFS: i64 = 0x5846_5342;
    const BTRFS: i64 = 0x9123_683e;
    const OCFS2: i64 = 0x7461_636f;
    const BCACHEFS: i64 = 0xca45_1a4e;
    [XFS, BTRFS, OCFS2, BCACHEFS].contains(&(st.f_type as i64))
}

#[test]
fn nothing_shared_on_tmpdir_filesystem() {
    let t = TestDir::new();
    if may_share(t.path()) {
        unavailable::<()>("the temp dir's filesystem may share: not the ext4 case");
        return;
    }
    let root = t.mkdir("tree");
    standard_tree(&root);
    sync_fs(&root);
    assert_nothing_shared(&root);
}

#[test]
fn nothing_shared_on_tmpfs() {
    let t = TestDir::new();
    let mnt = t.mkdir("mnt");
    if !is_root() {
        unavailable::<()>("mounting a tmpfs needs root");
        return;
    }
    run(Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64m", "sdu-test"])
        .arg(&mnt))
    .assert_ok();
    let _m = Tmpfs(mnt.clone());
    standard_tree(&mnt);
    assert_nothing_shared(&mnt);
}
