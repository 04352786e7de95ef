//! `sdu --df --json`'s rows from src/df/space.rs and
//! src/df/deleted_subvolumes.rs (`metadata`, `deleted_subvolumes`, `used`)
//! against the filesystem, as root and without `CAP_SYS_ADMIN`:
//!
//! - Btrfs: `metadata` is Used less `btrfs filesystem usage -b`'s Data
//!   Used, to the byte, exact, as root and not; a subvolume of 8 MiB
//!   deleted on a read-only mount is the `deleted_subvolumes` row, exact,
//!   which Data Used loses once the cleaner has run; without root that row
//!   is not seen.
//! - XFS with rmapbt: `metadata` is Used less the planted file (its clone
//!   shares its blocks), exact as root; without root an estimate within
//!   1 % of Used.
//! - ext4: `metadata` 0, an estimate; `unexplained` under 1 MiB.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::btrfs::subvolume;
use crate::util::*;

const MIB: i64 = 1 << 20;

/// The one table of `sdu --df --json .` run in `d`.
fn table(d: &Path, root: bool) -> Value {
    let out = sdu_in(d, root, &["--df", "--json", "."]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let fss = doc["filesystems"].as_array().unwrap();
    assert_eq!(fss.len(), 1);
    let t = fss[0].clone();
    let sum: i64 = (t["rows"].as_array().unwrap().iter())
        .map(|r| r["bytes"].as_i64().unwrap())
        .sum();
    assert_eq!(sum, t["used"].as_i64().unwrap(), "{t}");
    t
}

/// Row `name` of `t`: its bytes and whether it is exact.
fn row(t: &Value, name: &str) -> (i64, bool) {
    let r = (t["rows"].as_array().unwrap().iter())
        .find(|r| r["row"] == name)
        .unwrap_or_else(|| panic!("no {name} in {t}"));
    (r["bytes"].as_i64().unwrap(), r["exact"] == true)
}

#[test]
fn btrfs_metadata_and_a_deleted_subvolume() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    let t = Tree { root: d };
    t.write("a", 8 << 20);
    subvolume(&d.join("sv"));
    t.write("sv/f", 8 << 20);
    // Committed (syncfs: `btrfs filesystem sync` would wake the cleaner,
    // which could then drop the subvolume before the unmount), deleted,
    // then at once read-only: the cleaner does not run there.
    sync_fs(d);
    run(Command::new("btrfs")
        .args(["subvolume", "delete"])
        .arg(d.join("sv")))
    .assert_ok();
    umount_retrying(d);
    run(Command::new("mount")
        .args(["-t", "btrfs", "-o", "ro", fs.device()])
        .arg(d))
    .assert_ok();
    let data = btrfs_data_used(d) as i64;
    let tb = table(d, true);
    // The scan reaches the top level through a mount of its own: the
    // superblock stays read-only (made writable, its cleaner would drop
    // the deleted subvolume under the scan), and Data Used with it.
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let line = (info.lines())
        .find(|l| l.split(' ').nth(4) == Some(d.to_str().unwrap()))
        .unwrap();
    let sb = line.rsplit(' ').next().unwrap();
    assert!(sb.split(',').any(|o| o == "ro"), "{line}");
    assert_eq!(btrfs_data_used(d) as i64, data);
    let used = tb["used"].as_i64().unwrap();
    assert_eq!(row(&tb, "metadata"), (used - data, true), "{tb}");
    assert_eq!(row(&tb, "deleted_subvolumes"), (8 * MIB, true), "{tb}");
    assert!(row(&tb, "unexplained").0.abs() <= used / 100 + MIB, "{tb}");
    let tn = table(d, false);
    assert_eq!(row(&tn, "metadata"), row(&tb, "metadata"));
    assert_eq!(row(&tn, "deleted_subvolumes"), (0, false), "{tn}");
    // The cleaner frees what the row said.
    umount_retrying(d);
    run(Command::new("mount")
        .args(["-t", "btrfs", fs.device()])
        .arg(d))
    .assert_ok();
    btrfs(&["filesystem", "sync"], d);
    btrfs(&["subvolume", "sync"], d);
    let (after, _) = btrfs_used(d);
    assert_eq!(data - after as i64, 8 * MIB);
    assert_eq!(row(&table(d, true), "deleted_subvolumes"), (0, true));
}

#[test]
fn xfs_rmapbt_metadata_measured_as_root() {
    let Some(fs) = LoopFs::with_mkfs(FsKind::Xfs, &["-m", "rmapbt=1"]) else {
        return;
    };
    let d = fs.path();
    let t = Tree { root: d };
    t.write("a", 8 << 20);
    t.clone("a", "a2");
    trim_xfs_prealloc(d);
    sync_fs(d);
    let tb = table(d, true);
    let used = tb["used"].as_i64().unwrap();
    assert_eq!(row(&tb, "metadata"), (used - 8 * MIB, true), "{tb}");
    assert!(row(&tb, "unexplained").0.abs() <= used / 100 + MIB, "{tb}");
    let tn = table(d, false);
    let (meta, exact) = row(&tn, "metadata");
    assert!(!exact, "{tn}");
    assert!((meta - (used - 8 * MIB)).abs() <= used / 100, "{tn}");
}

#[test]
fn ext4_metadata_is_an_estimate_of_nothing() {
    let Some(fs) = LoopFs::new(FsKind::Ext4) else {
        return;
    };
    let d = fs.path();
    Tree { root: d }.write("a", 8 << 20);
    sync_fs(d);
    let tb = table(d, true);
    assert_eq!(row(&tb, "metadata"), (0, false), "{tb}");
    assert!(row(&tb, "unexplained").0.abs() < MIB, "{tb}");
}
