//! `sdu --df`'s rows of what a walk of the mount misses, on a loopback
//! Btrfs mounted with `subvol=sub`: a read-only snapshot of `sub` in the
//! top level holding 5 MiB `sub` no longer does, a subvolume `other`
//! mounted elsewhere (2 MiB) with one nested in it (1 MiB), a subvolume
//! of `sub` mounted at its own place (4 MiB), 3 MiB in a directory of
//! `sub` that a tmpfs then covers, and 1 MiB in one bound on itself. Each row against its
//! planted size and, together, against Btrfs's Data Used after a sync;
//! without `CAP_SYS_ADMIN`, marked.
//!
//! Tolerance: none. The files are incompressible and written whole, so
//! each takes its size in whole sectors, and Data Used moves by exactly
//! the extents' sizes.

use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::process::Command;

use crate::df::{bytes, check_sum, df_json, row};
use crate::util::*;

const MIB: i64 = 1 << 20;

#[test]
fn btrfs_outside_subvolumes_and_under_mounts_equal_what_was_planted() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let top = fs.path();
    let t = Tree { root: top };
    for sv in ["sub", "other", "other/inner", "sub/own"] {
        btrfs(&["subvolume", "create"], &top.join(sv));
    }
    t.write("sub/five", 5 << 20);
    t.write("other/two", 2 << 20);
    t.write("other/inner/one", 1 << 20);
    t.write("sub/own/four", 4 << 20);
    run(Command::new("btrfs")
        .args(["subvolume", "snapshot", "-r"])
        .arg(top.join("sub"))
        .arg(top.join("snap")))
    .assert_ok();
    fs::remove_file(top.join("sub/five")).unwrap();
    t.dir("sub/d");
    t.write("sub/d/three", 3 << 20);
    t.dir("sub/b");
    t.write("sub/b/one", 1 << 20);
    btrfs(&["filesystem", "sync"], top);
    let data_used = btrfs_data_used(top) as i64;
    assert_eq!(data_used, 16 * MIB, "what was planted is Data Used");

    let tmp = tempfile::tempdir().unwrap();
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let (m1, m2) = (tmp.path().join("m1"), tmp.path().join("m2"));
    fs::create_dir(&m1).unwrap();
    fs::create_dir(&m2).unwrap();
    let mount = |opts: &str, at: &std::path::Path| {
        run(Command::new("mount")
            .args(["-t", "btrfs", "-o", opts, fs.device()])
            .arg(at))
        .assert_ok();
        Tmpfs(at.to_path_buf())
    };
    let _m1 = mount("subvol=sub", &m1);
    let _m2 = mount("subvol=other", &m2);
    let _own = mount("subvol=sub/own", &m1.join("own"));
    let bound = m1.join("b");
    run(Command::new("mount").arg("--bind").arg(&bound).arg(&bound)).assert_ok();
    let _bound = Tmpfs(bound.clone());
    let covered = m1.join("d");
    run(Command::new("mount")
        .args(["-t", "tmpfs", "sdu-cover"])
        .arg(&covered))
    .assert_ok();
    let _cover = Tmpfs(covered.clone());

    let tb = &df_json(&m1, true, &["."])[0];
    check_sum(tb);
    for r in ["files", "under_mounts"] {
        assert_eq!(row(tb, r)["how"], "exact", "{}", row(tb, r));
    }
    // The top level holds the mounted subvolume: it is not walked (that
    // would walk the mount again), so what lies in it besides its
    // subvolumes is not seen, and the row says so.
    let outside = row(tb, "outside_subvolumes");
    assert_eq!(outside["how"], "at least", "{outside}");
    assert!(
        outside["why"].as_str().unwrap().contains("<FS_TREE>"),
        "{outside}"
    );
    // What lies beneath the tmpfs and in the directory bound on itself
    // (not in the mount's walk), and nothing else: the subvolume mounted
    // at its own place is outside.
    assert_eq!(bytes(tb, "under_mounts"), 4 * MIB, "{tb}");
    let items = row(tb, "under_mounts")["items"].as_array().unwrap();
    let got: Vec<(&str, i64)> = (items.iter())
        .map(|i| (i["name"].as_str().unwrap(), i["bytes"].as_i64().unwrap()))
        .collect();
    assert_eq!(
        got,
        [
            (covered.to_str().unwrap(), 3 * MIB),
            (bound.to_str().unwrap(), MIB)
        ]
    );
    // The snapshot's 5 MiB, own's 4 and other's 3, the nested one walked
    // as part of other, not apart.
    assert_eq!(bytes(tb, "outside_subvolumes"), 12 * MIB, "{tb}");
    let items = row(tb, "outside_subvolumes")["items"].as_array().unwrap();
    let got: Vec<(&str, i64, &str)> = items
        .iter()
        .map(|i| {
            let name = i["name"].as_str().unwrap();
            (
                name,
                i["bytes"].as_i64().unwrap(),
                i["note"].as_str().unwrap(),
            )
        })
        .collect();
    let at = format!("mounted at {}", m2.display());
    let own_at = format!("mounted at {}", m1.join("own").display());
    assert_eq!(
        got,
        [
            ("<FS_TREE>/snap", 5 * MIB, ""),
            ("<FS_TREE>/sub/own", 4 * MIB, own_at.as_str()),
            ("<FS_TREE>/other", 3 * MIB, at.as_str())
        ]
    );
    // The walk of `sub` stops at the tmpfs: nothing of its own is left.
    assert_eq!(bytes(tb, "files"), 0, "{tb}");
    let data = [
        "files",
        "outside_subvolumes",
        "under_mounts",
        "unreachable",
        "compression",
    ]
    .iter()
    .map(|r| bytes(tb, r))
    .sum::<i64>();
    assert_eq!(data, data_used, "the data rows are Data Used: {tb}");

    // Without CAP_SYS_ADMIN: the covered point listed, nothing beneath it
    // seen; the subvolumes outside not all listed: both marked.
    let tn = &df_json(&m1, false, &["."])[0];
    check_sum(tn);
    let under = row(tn, "under_mounts");
    assert_eq!(under["how"], "not seen", "{under}");
    let mut points: Vec<&str> = (under["items"].as_array().unwrap().iter())
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    points.sort_unstable();
    assert_eq!(points, [bound.to_str().unwrap(), covered.to_str().unwrap()]);
    // The subvolumes mounted are seen at their mount points, and the row
    // says it may hold more.
    let outside = row(tn, "outside_subvolumes");
    assert_eq!(outside["how"], "at least", "{outside}");
    let items = outside["items"].as_array().unwrap();
    let got: Vec<(&str, &str)> = (items.iter())
        .map(|i| (i["name"].as_str().unwrap(), i["note"].as_str().unwrap()))
        .collect();
    assert_eq!(
        got,
        [
            ("<FS_TREE>/sub/own", own_at.as_str()),
            ("<FS_TREE>/other", at.as_str())
        ]
    );
    assert!(bytes(tn, "outside_subvolumes") >= 7 * MIB, "{outside}");

    // The filesystem itself: deleting the snapshot frees what its item
    // said, and what lay beneath the tmpfs, taken out, frees its item.
    let freed = freed_by_deleting_subvolumes(top, &["snap"]) as i64;
    assert_eq!(freed, 5 * MIB, "deleting <FS_TREE>/snap freed {freed}");
    run(Command::new("umount").arg(&covered)).assert_ok();
    let before = btrfs_data_used(top) as i64;
    fs::remove_file(covered.join("three")).unwrap();
    btrfs(&["filesystem", "sync"], top);
    let freed = before - btrfs_data_used(top) as i64;
    assert_eq!(freed, 3 * MIB, "the file under the tmpfs freed {freed}");
}
