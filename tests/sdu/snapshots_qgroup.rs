//! `sdu --snapshots` beside Btrfs quota groups (docs/snapshots.md,
//! "sdu, qgroups and simple quotas").
//!
//! A qgroup's `excl` is what only that subvolume references: its data
//! extents and its tree blocks. `frees_alone` is data alone, so for every
//! subvolume the two differ by exactly the tree blocks of its file tree
//! that no other subvolume's tree holds, a whole number of nodesize
//! blocks. The test reads those blocks from the unmounted image
//! (`btrfs inspect-internal dump-tree -t ID`: every node and leaf a tree
//! reaches) and asserts that difference to the byte; then it deletes the
//! snapshot that alone holds data and checks that Data Used drops by its
//! `frees_alone`.
//!
//! Simple quotas (kernel 6.7 on) charge an extent to the subvolume that
//! wrote it for as long as the extent lives, whoever else holds it: a
//! snapshot's squota usage is not what deleting it frees. The second test
//! shows it on a snapshot whose data its origin no longer holds.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::btrfs::{ro_snapshot, subvolume};
use crate::util::*;

/// The rows of `sdu --snapshots --json .` run in `d`, by path.
fn rows(d: &Path) -> HashMap<String, Value> {
    let out = sdu_in(d, true, &["--snapshots", "--json", "."]);
    out.assert_ok();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = doc["snapshots"].as_array().unwrap();
    rows.iter()
        .map(|r| (r["path"].as_str().unwrap().to_owned(), r.clone()))
        .collect()
}

/// The subvolume id of `p` (`btrfs inspect-internal rootid`).
fn rootid(p: &Path) -> u64 {
    let out = run(Command::new("btrfs")
        .args(["inspect-internal", "rootid"])
        .arg(p));
    out.assert_ok();
    out.stdout_str().trim().parse().unwrap()
}

/// `btrfs qgroup show --raw --sync`: each level-0 qgroup's id and its
/// (rfer, excl).
fn qgroups(d: &Path) -> BTreeMap<u64, (u64, u64)> {
    let out = run(Command::new("btrfs")
        .args(["qgroup", "show", "--raw", "--sync"])
        .arg(d));
    out.assert_ok();
    let mut m = BTreeMap::new();
    for line in out.stdout_str().lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        let Some(id) = w.first().and_then(|q| q.strip_prefix("0/")) else {
            continue;
        };
        let n = |i: usize| w[i].parse::<u64>().unwrap();
        m.insert(id.parse().unwrap(), (n(1), n(2)));
    }
    m
}

/// The addresses of every node and leaf the tree `id` reaches, as
/// `btrfs inspect-internal dump-tree -t ID IMAGE` prints them
/// (`node 31490048 level 1 items 14 ...`, `leaf 31064064 items 208 ...`).
fn tree_blocks(img: &Path, id: u64) -> HashSet<u64> {
    let out = run(Command::new("btrfs")
        .args(["inspect-internal", "dump-tree", "-t", &id.to_string()])
        .arg(img));
    out.assert_ok();
    let mut blocks = HashSet::new();
    for line in out.stdout_str().lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.len() > 2 && matches!(w[0], "node" | "leaf") && matches!(w[2], "level" | "items") {
            blocks.insert(w[1].parse().unwrap());
        }
    }
    assert!(!blocks.is_empty(), "no blocks in tree {id}");
    blocks
}

/// The nodesize of the filesystem of `img`.
fn nodesize(img: &Path) -> u64 {
    let out = run(Command::new("btrfs")
        .args(["inspect-internal", "dump-super"])
        .arg(img));
    out.assert_ok();
    let line = out.stdout_str().lines().find(|l| l.starts_with("nodesize"));
    line.and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .expect("a nodesize in dump-super")
}

/// Touches `meta/f{i}` for each i in `range`: the leaves holding those
/// inodes are copied on write in the subvolume of `t`.
fn touch(t: &Tree, range: impl Iterator<Item = u32>) {
    for i in range {
        std::fs::File::options()
            .append(true)
            .open(t.p(&format!("meta/f{i}")))
            .unwrap()
            .set_modified(std::time::SystemTime::now())
            .unwrap();
    }
}

/// `live` with quotas on and three read-only snapshots. `snaps/2` alone
/// holds the 2 MiB of `f` and the leaves holding `meta/f0..f99` as they
/// were between the first and third snapshot (600 empty files spread the
/// tree over a dozen leaves).
fn build(d: &Path) {
    btrfs(&["quota", "enable"], d);
    subvolume(&d.join("live"));
    std::fs::create_dir(d.join("snaps")).unwrap();
    let t = Tree {
        root: &d.join("live"),
    };
    for i in 0..600 {
        std::fs::File::create(t.p(&format!("meta/f{i}"))).unwrap();
    }
    t.write("a", 4 << 20);
    t.write("b", 2 << 20);
    sync_fs(d);
    let snap = |n: u32| ro_snapshot(&d.join("live"), &d.join(format!("snaps/{n}")));
    snap(1);
    t.write("f", 2 << 20);
    touch(&t, (0..100).step_by(7));
    sync_fs(d);
    snap(2);
    std::fs::remove_file(t.p("f")).unwrap();
    touch(&t, (0..100).step_by(7));
    t.overwrite("a", 1 << 20, 1 << 20);
    sync_fs(d);
    snap(3);
    btrfs(&["quota", "rescan", "-w"], d);
}

#[test]
fn qgroup_excl_is_frees_alone_and_the_tree_blocks_only_it_holds() {
    let Some(fs) = Mounted::new(FsKind::Btrfs, "space_cache=v2") else {
        return;
    };
    let d = fs.path().to_owned();
    build(&d);
    let rows = rows(&d);
    let subvols = ["./live", "./snaps/1", "./snaps/2", "./snaps/3"];
    let ids: Vec<u64> = subvols.iter().map(|p| rootid(&d.join(p))).collect();
    let q = qgroups(&d);
    let (node, blocks) = fs.unmounted(|img| {
        let b: Vec<HashSet<u64>> = ids.iter().map(|&id| tree_blocks(img, id)).collect();
        (nodesize(img), b)
    });
    let mut table = String::new();
    let mut wrong = Vec::new();
    for (i, path) in subvols.iter().enumerate() {
        let r = &rows[*path];
        assert_eq!(r["frees_exact"], true, "{r}");
        let alone = r["frees_alone"].as_u64().unwrap();
        let only: usize = blocks[i]
            .iter()
            .filter(|b| (blocks.iter().enumerate()).all(|(j, o)| j == i || !o.contains(b)))
            .count();
        let excl = q[&ids[i]].1;
        let line = format!(
            "{path}: qgroup excl {excl}, frees_alone {alone}, {only} of {} tree blocks its own\n",
            blocks[i].len()
        );
        table.push_str(&line);
        if excl != alone + only as u64 * node {
            wrong.push(line);
        }
    }
    println!("nodesize {node}\n{table}");
    assert!(
        wrong.is_empty(),
        "excl is not frees_alone + its own tree blocks:\n{table}"
    );
    // As built: snaps/2 holds f and more than its root block alone.
    let r2 = &rows["./snaps/2"];
    assert_eq!(r2["frees_alone"], 2 << 20, "{table}");
    assert!(q[&ids[2]].1 > (2 << 20) + node, "{table}");
    let (data, _) = freed_by_deleting_subvolume(&d, "snaps/2");
    assert_eq!(data, 2 << 20, "deleting snaps/2 freed {data}:\n{table}");
}

/// `BTRFS_IOC_QUOTA_CTL` with `BTRFS_QUOTA_CTL_ENABLE_SIMPLE_QUOTA`
/// (btrfs-progs before 6.7 has no `quota enable --simple`; the tests have
/// no `unsafe`, so python3's `fcntl.ioctl` makes the call).
fn enable_simple_quota(d: &Path) -> Result<(), String> {
    const CALL: &str = "import fcntl, os, struct, sys\n\
        fd = os.open(sys.argv[1], os.O_RDONLY)\n\
        fcntl.ioctl(fd, (3 << 30) | (16 << 16) | (0x94 << 8) | 40, struct.pack('QQ', 4, 0))\n";
    let out = run(Command::new("python3").args(["-c", CALL]).arg(d));
    if out.code == Some(0) {
        Ok(())
    } else {
        Err(out.stderr)
    }
}

/// Simple quotas charge `a` to `live`, which wrote it, though only
/// `snaps/1` holds it once `live` deletes it: the snapshot's usage is its
/// root block, what deleting it frees is `a`, which sdu says; deleting it
/// takes `a` off `live`'s usage.
#[test]
fn simple_quota_charges_the_subvolume_that_wrote_the_data() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    if let Err(e) = enable_simple_quota(d) {
        // Kernels before 6.7 have no simple quotas.
        let _ = unavailable::<()>(&format!("no simple quotas here: {e}"));
        return;
    }
    subvolume(&d.join("live"));
    std::fs::create_dir(d.join("snaps")).unwrap();
    let t = Tree {
        root: &d.join("live"),
    };
    t.write("a", 4 << 20);
    t.write("b", 2 << 20);
    sync_fs(d);
    ro_snapshot(&d.join("live"), &d.join("snaps/1"));
    std::fs::remove_file(t.p("a")).unwrap();
    t.write("c", 1 << 20);
    sync_fs(d);
    let rows = rows(d);
    let alone = rows["./snaps/1"]["frees_alone"].as_u64().unwrap();
    let (live, snap) = (rootid(&d.join("live")), rootid(&d.join("snaps/1")));
    let q = qgroups(d);
    let said = format!("squota {q:?}, live {live}, snaps/1 {snap}, frees_alone {alone}");
    println!("{said}");
    assert_eq!(alone, 4 << 20, "{said}");
    // The snapshot is charged its root block only; live everything it
    // wrote, a included.
    assert!(q[&snap].1 < 1 << 20, "{said}");
    assert!(q[&live].1 >= 7 << 20, "{said}");
    let (data, _) = freed_by_deleting_subvolume(d, "snaps/1");
    assert_eq!(data, alone, "{said}");
    let after = qgroups(d);
    assert_eq!(
        q[&live].1 - after[&live].1,
        4 << 20,
        "{said}; after {after:?}"
    );
}
