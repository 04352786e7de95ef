//! XFS: every figure against the block model, and files of one
//! allocation group mapped by whichever thread holds its turn.

use std::collections::HashSet;
use std::fs;
use std::path::Path;
use std::process::Command;

use super::model::{Rule, model_mismatches, xfs_tree};
use super::{BLK, assert_deterministic, assert_invariants, sdu_json_stats, table};
use crate::args;
use crate::json::Kind;
use crate::util::*;

/// Every directory's total, exclusive, shared and reclaimable equal the
/// block model's to the byte (and total equals du's). `tree` is not the
/// whole filesystem: as root, with the reverse-mapping btree, sdu asks XFS
/// who else holds the shared blocks (outside/ext_copy, outside/three_b)
/// and Reclaimable is the exact one, marked exact; without CAP_SYS_ADMIN it
/// cannot ask, and Reclaimable is the bound the model gives when files
/// outside the scan are unseen, marked a bound where it is more.
#[test]
fn xfs_sharing_figures_match_block_model() {
    let Some((fs, m)) = xfs_tree() else {
        return;
    };
    m.verify_against_fs();
    let root = fs.path().join("tree");
    let (report, stats) = sdu_json_stats(&args![root]);
    let want = m.expected("tree");
    let rmapbt = run(Command::new("xfs_info").arg(fs.path()));
    rmapbt.assert_ok();
    assert!(rmapbt.stdout_str().contains("rmapbt=1"), "{rmapbt:?}");
    let rule = if is_root() { Rule::Exact } else { Rule::Bound };
    let t = model_mismatches(fs.path(), &report, &want, rule);
    assert!(t.is_empty(), "sdu against the block model ({rule:?}): {t}");
    // The two rules differ here: tree/e's units are held from outside.
    let e = Path::new("tree/e");
    assert_ne!(want[e].0.reclaimable, want[e].1, "{:?}", want[e]);
    if is_root() {
        crate::btrfs::assert_setpriv_drops_sys_admin();
        let out = run(sdu_command(false).args(["--json"]).arg(&root));
        assert_eq!(out.code, Some(0), "{out:?}");
        let nobody = crate::json::parse(&out.stdout);
        let t = model_mismatches(fs.path(), &nobody, &want, Rule::Bound);
        assert!(
            t.is_empty(),
            "without CAP_SYS_ADMIN, against the bound model: {t}"
        );
    }
    Du::new(&[]).assert_figures(&report, |e| e.kind == Kind::Dir);
    assert_invariants(&report);
    // Each regular file with blocks is mapped once, hardlinks or not.
    let mapped = m
        .inodes
        .iter()
        .filter(|i| i.links.iter().any(|l| l.starts_with("tree")))
        .filter(|i| i.blocks.iter().any(Option::is_some))
        .count() as u64;
    assert_eq!(
        stat_value(&stats, "files mapped (FIEMAP)"),
        mapped,
        "{stats}"
    );
    assert!(stat_value(&stats, "shared extents indexed") > 0, "{stats}");
}

/// `--du total` prints only du's figure, so it maps no extents (the fast
/// path that replaces du in scripts), and still prints du's total; the
/// sharing figures with `--du shared` do map them.
#[test]
fn du_total_maps_no_extents() {
    let Some((fs, _m)) = xfs_tree() else {
        return;
    };
    let root = fs.path().join("tree");
    let out = sdu(&args!["--stats", "--du", "total", "-s", "-B1", &root]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(
        stat_value(&out.stderr, "files mapped (FIEMAP)"),
        0,
        "{}",
        out.stderr
    );
    let du = run(Command::new("du").args(["-s", "-B1"]).arg(&root));
    assert_eq!(out.stdout, du.stdout, "--du total against du");
    let shared = sdu(&args!["--stats", "--du", "shared", "-s", "-B1", &root]);
    assert!(
        stat_value(&shared.stderr, "files mapped (FIEMAP)") > 0,
        "{}",
        shared.stderr
    );
}

/// With `-a`, each file's own total, exclusive and shared are the model's
/// (reclaimable too for a file with one link: its exclusive bytes plus
/// the units only it references).
#[test]
fn xfs_file_figures_match_block_model() {
    let Some((fs, m)) = xfs_tree() else {
        return;
    };
    let report = sdu_json(&args!["-a", fs.path().join("tree")]);
    let rc_all = m.refcounts(|_| true);
    let mut rows = Vec::new();
    let mut files = 0;
    for e in report.entries.iter().filter(|e| e.kind == Kind::File) {
        let rel = Path::new(&e.path).strip_prefix(fs.path()).unwrap();
        let Some(&k) = m.by_link.get(rel) else {
            // The empty files of wide/, which the model leaves out.
            assert!(rel.starts_with("tree/wide") && e.total == 0, "{e:?}");
            continue;
        };
        let ino = &m.inodes[k];
        files += 1;
        let alloc = ino.blocks.iter().flatten().count() as u64 * BLK;
        let sh: Vec<u64> = ino
            .blocks
            .iter()
            .flatten()
            .copied()
            .filter(|id| rc_all[id] >= 2)
            .collect();
        let distinct: HashSet<u64> = sh.iter().copied().collect();
        let exclusive = alloc - sh.len() as u64 * BLK;
        // Units referenced by this inode alone (a clone within the file).
        let own_units = distinct
            .iter()
            .filter(|id| sh.iter().filter(|x| x == id).count() as u64 == rc_all[id])
            .count() as u64;
        let mut checks = vec![
            ("total", e.total, alloc),
            ("exclusive", e.exclusive, exclusive),
            ("shared", e.shared, distinct.len() as u64 * BLK),
        ];
        if ino.links.len() == 1 {
            checks.push(("reclaimable", e.reclaimable, exclusive + own_units * BLK));
        }
        for (fig, s, w) in checks {
            if s != w {
                rows.push((rel.display().to_string(), fig, s, w));
            }
        }
    }
    assert!(files >= 20, "only {files} file entries");
    let t = table("model", &rows);
    assert!(t.is_empty(), "sdu -a against the block model: {t}");
    assert_invariants(&report);
}

/// Reflinked copies whose shared data all lies in one XFS allocation group:
/// the files whose FIEMAP sdu puts off while another thread maps that
/// group (the walk's `ag` module) give the figures of a walk that puts off
/// nothing, at every thread count, and those figures are exact: every data
/// block is shared, so `shared` is the source's data once.
#[test]
fn xfs_reflinks_in_one_allocation_group_deterministic_and_exact() {
    let Some(fs) = LoopFs::new(FsKind::Xfs) else {
        return;
    };
    let root = fs.path().join("ag");
    let src = root.join("src");
    fs::create_dir_all(&src).unwrap();
    let (files, extents) = (8u64, 16u64);
    for f in 0..files {
        // A written block, then a hole: one extent per block.
        let data: Vec<(u64, usize)> = (0..extents).map(|e| (e * 2 * BLK, BLK as usize)).collect();
        write_sparse(&src.join(format!("f{f}")), extents * 2 * BLK, &data);
    }
    sync_fs(&src);
    for c in 0..30 {
        run(Command::new("cp")
            .args(["-r", "--reflink=always"])
            .arg(&src)
            .arg(root.join(format!("c{c}"))))
        .assert_ok();
    }
    fs.settle();
    let r = assert_deterministic(&root);
    assert_invariants(&r);
    let top = r.entries.last().unwrap();
    assert_eq!(top.shared, files * extents * BLK, "{top:?}");
    // Every data block of every file is shared; what else a file holds
    // (XFS counts an extent-map block in st_blocks) is its own.
    for e in r.entries.iter().filter(|e| e.kind == Kind::File) {
        assert_eq!(e.shared, extents * BLK, "{e:?}");
        assert_eq!(e.exclusive, e.total - extents * BLK, "{e:?}");
    }
    // Nothing outside the tree references the data: deleting it frees all.
    assert_eq!(top.reclaimable, top.exclusive + top.shared, "{top:?}");
}

/// Files whose allocation group is busy are handed to the thread that holds
/// its turn, which maps them and credits them to their own directories
/// (under `-a`, to their own nodes; hardlinks through the link table):
/// the figures are those of `-j1`, which hands nothing, and the hand-over
/// did happen.
#[test]
fn xfs_files_handed_to_the_turn_holder_are_credited_to_their_directories() {
    let Some(fs) = LoopFs::new(FsKind::Xfs) else {
        return;
    };
    let root = fs.path().join("hand");
    let src = root.join("src");
    fs::create_dir_all(&src).unwrap();
    let (files, extents) = (24u64, 8u64);
    for f in 0..files {
        let data: Vec<(u64, usize)> = (0..extents).map(|e| (e * 2 * BLK, BLK as usize)).collect();
        write_sparse(&src.join(format!("f{f}")), extents * 2 * BLK, &data);
    }
    // A hardlink inside a directory, and one across two directories.
    fs::hard_link(src.join("f0"), src.join("f0-link")).unwrap();
    sync_fs(&src);
    let copies = 40;
    for c in 0..copies {
        run(Command::new("cp")
            .args(["-r", "--reflink=always"])
            .arg(&src)
            .arg(root.join(format!("c{c}"))))
        .assert_ok();
    }
    fs::hard_link(root.join("c0/f1"), root.join("c1/f1-link")).unwrap();
    fs.settle();
    let (first, _) = sdu_json_stats(&args!["-j1", &root]);
    assert_eq!(first.entries.last().unwrap().shared, files * extents * BLK);
    let mut handed = 0u64;
    for run in 0..5 {
        let (r, stats) = sdu_json_stats(&args!["-j8", &root]);
        assert_eq!(r.entries, first.entries, "-j8 run {run} differs from -j1");
        handed += stats
            .lines()
            .find_map(|l| {
                l.trim()
                    .strip_prefix("FIEMAPs put off (allocation group busy)")
            })
            .map(|n| n.trim().parse::<u64>().unwrap())
            .unwrap_or_else(|| panic!("no put-off count in {stats}"));
    }
    assert!(handed > 0, "no file was handed over in 5 runs at -j8");
    let r = assert_deterministic(&root);
    assert_invariants(&r);
    let top = r.entries.last().unwrap();
    assert_eq!(top.shared, files * extents * BLK, "{top:?}");
    assert_eq!(top.reclaimable, top.exclusive + top.shared, "{top:?}");
}
