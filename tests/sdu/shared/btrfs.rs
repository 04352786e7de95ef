//! Btrfs: a tree of reflinks, partial clones, a snapshot and compressed
//! and inline data, against `btrfs filesystem du`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{assert_invariants, clone_range, cp_reflink, fresh_bytes, table};
use crate::args;
use crate::json::{Entry, Kind};
use crate::util::*;

/// `btrfs filesystem du --raw -s DIR`: (Total, Exclusive, Set shared).
pub(crate) fn btrfs_du(dir: &Path) -> (u64, u64, u64) {
    let out = run(Command::new("btrfs")
        .args(["filesystem", "du", "--raw", "-s"])
        .arg(dir));
    out.assert_ok();
    let line = out
        .stdout_str()
        .lines()
        .last()
        .unwrap_or_else(|| panic!("{out:?}"));
    let n: Vec<u64> = line
        .split_whitespace()
        .take(3)
        .map(|s| s.parse().unwrap_or_else(|_| panic!("{out:?}")))
        .collect();
    (n[0], n[1], n[2])
}

fn btrfs(args: &[&str], path: &Path) {
    run(Command::new("btrfs").args(args).arg(path)).assert_ok();
}

fn btrfs_snapshot(from: &Path, to: &Path) {
    run(Command::new("btrfs")
        .args(["subvolume", "snapshot"])
        .arg(from)
        .arg(to))
    .assert_ok();
}

/// ```text
/// tree/
///   r/ orig (256 KiB)  copy (cp --reflink)  small (100 bytes, inline)
///   p/ part (64 KiB of orig at 64 KiB, a new file)  mixed (own data + 32 KiB of orig)
///      q/ copy2 (cp --reflink of r/copy)
///   snaps/ vol (subvolume: f1 200 KiB, d/f2 40 KiB, d/f2c clone of f2)
///          snap (snapshot of vol)
///   z/ (compression zstd) comp (300 KB compressible)  cpart (64 KiB of comp)
///      ccopy (cp --reflink of comp)
///   solo/ alone (100 KiB, nothing shared)
/// ```
pub(super) fn build_btrfs_tree(root: &Path) {
    let p = |s: &str| root.join(s);
    for d in ["r", "p/q", "snaps", "z", "solo"] {
        fs::create_dir_all(p(d)).unwrap();
    }
    fs::write(p("r/orig"), fresh_bytes(256 << 10)).unwrap();
    cp_reflink(&p("r/orig"), &p("r/copy"));
    fs::write(p("r/small"), fresh_bytes(100)).unwrap();
    clone_range(&p("r/orig"), 64 << 10, &p("p/part"), 0, 64 << 10);
    fs::write(p("p/mixed"), fresh_bytes(96 << 10)).unwrap();
    clone_range(&p("r/orig"), 160 << 10, &p("p/mixed"), 32 << 10, 32 << 10);
    cp_reflink(&p("r/copy"), &p("p/q/copy2"));
    btrfs(&["subvolume", "create"], &p("snaps/vol"));
    fs::create_dir(p("snaps/vol/d")).unwrap();
    fs::write(p("snaps/vol/f1"), fresh_bytes(200 << 10)).unwrap();
    fs::write(p("snaps/vol/d/f2"), fresh_bytes(40 << 10)).unwrap();
    cp_reflink(&p("snaps/vol/d/f2"), &p("snaps/vol/d/f2c"));
    sync_fs(root);
    btrfs_snapshot(&p("snaps/vol"), &p("snaps/snap"));
    run(Command::new("btrfs")
        .args(["property", "set"])
        .arg(p("z"))
        .args(["compression", "zstd"]))
    .assert_ok();
    let text: Vec<u8> = (0..300_000u32)
        .map(|i| b"sdu shares "[(i % 11) as usize])
        .collect();
    fs::write(p("z/comp"), text).unwrap();
    sync_fs(root);
    clone_range(&p("z/comp"), 128 << 10, &p("z/cpart"), 0, 64 << 10);
    cp_reflink(&p("z/comp"), &p("z/ccopy"));
    fs::write(p("solo/alone"), fresh_bytes(100 << 10)).unwrap();
}

fn btrfs_tree() -> Option<(LoopFs, PathBuf)> {
    let fs = LoopFs::new(FsKind::Btrfs)?;
    let root = fs.path().join("tree");
    fs::create_dir(&root).unwrap();
    build_btrfs_tree(&root);
    fs.settle();
    Some((fs, root))
}

/// Every directory's `shared` equals `btrfs filesystem du`'s "Set shared",
/// its `exclusive` btrfs's "Exclusive" plus the inline data btrfs leaves
/// out (of its Total too: sdu counts it, as du does), its `total` du's;
/// the snapshot shares with its origin, counted once in their parent; and
/// `reclaimable` is what deleting the directory frees in this tree.
#[test]
fn btrfs_shared_matches_btrfs_filesystem_du() {
    let Some((_fs, root)) = btrfs_tree() else {
        return;
    };
    // FIEMAP's lengths, as btrfs fi du's (root's tree search counts the
    // compressed extents of z at their size on disk: tests/sdu/btrfs.rs).
    let report = sdu_json_compressed(&args!["--fiemap", root]);
    // Where compressed data is shared, FIEMAP's ranges are ended at the
    // next extent's start (docs/filesystems.md, "Compressed extents as units"):
    // `shared` lies between the size on disk (the tree search's) and the
    // union of the logical ranges (btrfs fi du's).
    let on_disk = sdu_json_compressed(&args![root]);
    let on_disk_shared =
        |e: &Entry| (on_disk.entries.iter().find(|o| o.path == e.path)).map_or(0, |o| o.shared);
    let rel = |e: &Entry| -> String {
        let p = Path::new(&e.path);
        p.strip_prefix(root.parent().unwrap())
            .unwrap()
            .display()
            .to_string()
    };
    // Where deleting the directory frees all its shared data too: nothing
    // outside it references that data. Elsewhere (r, p, p/q reference
    // one extent of r/orig; vol and snap each other's) it frees only its
    // exclusive bytes.
    let frees_shared = ["tree", "tree/snaps", "tree/z"];
    let mut rows = Vec::new();
    for e in report.entries.iter().filter(|e| e.kind == Kind::Dir) {
        let (b_total, b_excl, b_shared) = btrfs_du(Path::new(&e.path));
        let inline = e.total.saturating_sub(b_total);
        let reclaim = if frees_shared.contains(&rel(e).as_str()) {
            e.exclusive + e.shared
        } else {
            e.exclusive
        };
        let compressed = ["tree", "tree/z"].contains(&rel(e).as_str());
        for (fig, s, w) in [
            ("shared", e.shared, b_shared),
            ("exclusive", e.exclusive, b_excl + inline),
            ("reclaimable", e.reclaimable, reclaim),
        ] {
            let between = fig == "shared" && compressed && on_disk_shared(e) <= s && s <= w;
            if s != w && !between {
                rows.push((rel(e), fig, s, w));
            }
        }
    }
    let t = table("want", &rows);
    assert!(
        t.is_empty(),
        "sdu against `btrfs filesystem du` (want: Set shared; Exclusive + \
         inline; exclusive [+ shared]): {t}"
    );
    Du::new(&[]).assert_figures(&report, |e| e.kind == Kind::Dir);
    assert_invariants(&report);

    let get = |rel: &str| -> &Entry {
        let p = root.join(rel);
        report
            .entries
            .iter()
            .find(|e| Path::new(&e.path) == p)
            .unwrap_or_else(|| panic!("no entry {}", p.display()))
    };
    let (vol, snap, snaps) = (get("snaps/vol"), get("snaps/snap"), get("snaps"));
    assert!(
        vol.shared > 0 && snap.shared == vol.shared && snaps.shared == vol.shared,
        "a snapshot shares all its data with its origin, counted once in the parent: \
         vol {vol:?}\nsnap {snap:?}\nsnaps {snaps:?}"
    );
    let (r, z, solo) = (get("r"), get("z"), get("solo"));
    // r/small (100 bytes) is inline: exclusive for sdu, unseen by btrfs.
    assert_eq!(r.exclusive, 4096, "r: {r:?}");
    assert!(z.shared > 0 && z.exclusive == 0, "z: {z:?}");
    assert!(
        solo.shared == 0 && solo.exclusive == solo.total && solo.reclaimable == solo.total,
        "solo: {solo:?}"
    );
}
