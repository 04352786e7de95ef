//! `sdu --snapshots --json` read back, and what deleting subvolumes frees:
//! the helpers of the snapshot tests.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use super::{btrfs, btrfs_used, run, sdu_in};

/// The rows of `sdu --snapshots --json .` run in `d`, as root or without
/// CAP_SYS_ADMIN.
pub fn snapshot_rows(d: &Path, root: bool) -> Vec<Value> {
    let out = sdu_in(d, root, &["--snapshots", "--json", "."]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["snapshots"].as_array().unwrap().clone()
}

/// The row of `path` among `rows`.
pub fn row<'a>(rows: &'a [Value], path: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["path"] == path)
        .unwrap_or_else(|| panic!("no {path} in {rows:?}"))
}

/// What deleting the subvolumes `rels` of `d` together frees of Data Used
/// (`btrfs subvolume delete -C`, `subvolume sync`, `filesystem sync`).
pub fn freed_by_deleting_subvolumes(d: &Path, rels: &[&str]) -> u64 {
    let before = btrfs_used(d).0;
    let mut c = Command::new("btrfs");
    c.args(["subvolume", "delete", "-C"]);
    for r in rels {
        c.arg(d.join(r));
    }
    run(&mut c).assert_ok();
    btrfs(&["subvolume", "sync"], d);
    before.saturating_sub(btrfs_used(d).0)
}
