//! The same sharing figures every way they are computed: at 1, 2 and 8
//! threads, over several runs, and down the walk's lean path and its
//! general path, as root and as `nobody`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::btrfs::build_btrfs_tree;
use super::model::{Model, build_xfs_tree};
use super::{BLK, assert_deterministic, assert_invariants, clone_range, cp_reflink, fresh_bytes};
use crate::args;
use crate::util::*;

/// Many directories whose files are clones and partial clones of each
/// other's, for the determinism tests: enough shared extents, in enough
/// directories, for threads to interleave.
fn fanout_tree(root: &Path) {
    fs::create_dir_all(root).unwrap();
    let dirs = 24;
    for d in 0..dirs {
        let p = root.join(format!("d{d:02}"));
        fs::create_dir(&p).unwrap();
        for k in 0..6 {
            fs::write(
                p.join(format!("f{k}")),
                fresh_bytes(4 * BLK as usize + k * 1000),
            )
            .unwrap();
        }
    }
    for d in 0..dirs {
        let p = root.join(format!("d{d:02}"));
        let q = root.join(format!("d{:02}", (d * 7 + 3) % dirs));
        cp_reflink(&q.join("f0"), &p.join("c0"));
        clone_range(&q.join("f1"), BLK, &p.join("c1"), 0, 2 * BLK);
        clone_range(&p.join("f2"), 0, &p.join("f3"), 2 * BLK, BLK);
        cp_reflink(&p.join("c0"), &p.join("cc0"));
    }
}

/// The kind's tree of known sharing (the XFS tree of `model`, the Btrfs
/// tree of `btrfs`) on a fresh loopback, not yet settled: the filesystem
/// and the tree's root.
fn sharing_tree(kind: FsKind) -> Option<(LoopFs, PathBuf)> {
    let fs = LoopFs::new(kind)?;
    let root = fs.path().join("tree");
    match kind {
        FsKind::Xfs => build_xfs_tree(&mut Model::new(fs.path())),
        FsKind::Btrfs => {
            fs::create_dir(&root).unwrap();
            build_btrfs_tree(&root);
        }
        FsKind::Ext4 => unreachable!("ext4 cannot share"),
    }
    Some((fs, root))
}

/// The kind's tree of known sharing, with `fanout_tree` in it: the same
/// bytes at every thread count and in every run, some data shared, and
/// the invariants hold.
fn sharing_figures_deterministic(kind: FsKind) {
    let Some((fs, root)) = sharing_tree(kind) else {
        return;
    };
    fanout_tree(&root.join("fan"));
    fs.settle();
    let r = assert_deterministic(&root);
    assert!(r.entries.last().unwrap().shared > 0);
    if kind == FsKind::Btrfs {
        // As root the compressed extents of z count at their size on disk,
        // where these invariants of logical lengths need not hold.
        assert_invariants(&sdu_json_compressed(&args!["-a", "--fiemap", &root]));
    } else {
        assert_invariants(&r);
    }
}

#[test]
fn xfs_sharing_figures_deterministic() {
    sharing_figures_deterministic(FsKind::Xfs);
}

#[test]
fn btrfs_sharing_figures_deterministic() {
    sharing_figures_deterministic(FsKind::Btrfs);
}

/// `sdu --json --stats ARGS` (as `nobody` if asked): the document's bytes
/// and the stats on stderr.
fn sdu_json_bytes_stats(args: &[std::ffi::OsString], nobody: bool) -> (Vec<u8>, String) {
    let mut c = if nobody {
        let mut c = Command::new("setpriv");
        c.args(nobody_args()).arg(sdu_bin());
        c
    } else {
        Command::new(sdu_bin())
    };
    c.args(["--json", "--stats"]).args(args);
    let out = run_with_timeout(&mut c, 300);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(crate::json::parse(&out.stdout).error_count, 0, "{out:?}");
    (out.stdout, out.stderr)
}

/// The walk's lean path (a singly linked regular file, opened first, whose
/// FIEMAP needs no turn and can find no copy) gives what its general path
/// gives: an `--exclude` that matches nothing keeps every path and so sends
/// every file down the general path. The same document, byte for byte, and
/// the same FIEMAPs; the lean path did take files, the other run none.
fn assert_lean_path_is_the_general_path(root: &Path, flags: &[&str], nobody: bool) {
    let mut lean_args: Vec<std::ffi::OsString> = flags.iter().map(Into::into).collect();
    lean_args.push(root.into());
    let mut general_args = lean_args.clone();
    general_args.insert(0, "--exclude=no such name, anywhere".into());
    let (lean, lean_stats) = sdu_json_bytes_stats(&lean_args, nobody);
    let (general, general_stats) = sdu_json_bytes_stats(&general_args, nobody);
    assert!(
        stat_value(&lean_stats, "files on the lean path") > 0,
        "{lean_stats}"
    );
    assert_eq!(
        stat_value(&general_stats, "files on the lean path"),
        0,
        "{general_stats}"
    );
    for key in [
        "files mapped (FIEMAP)",
        "FIEMAP calls",
        "shared extents indexed",
    ] {
        assert_eq!(
            stat_value(&lean_stats, key),
            stat_value(&general_stats, key),
            "{key}:\n{lean_stats}\n{general_stats}"
        );
    }
    assert!(
        lean == general,
        "the lean path's document differs from the general path's:\n{}\n{}",
        String::from_utf8_lossy(&lean),
        String::from_utf8_lossy(&general)
    );
}

/// The kind's tree of known sharing, settled, then with `fanout_tree` in
/// it and readable by `nobody` (so that both paths map every file): the
/// lean path's figures are the general path's at `-j1` and `-j2`, with
/// FIEMAP as root and without privileges.
fn lean_path_figures_equal_the_general_path(kind: FsKind) {
    let Some((fs, root)) = sharing_tree(kind) else {
        return;
    };
    fs.settle();
    fanout_tree(&root.join("fan"));
    run(Command::new("chmod").args(["-R", "a+rX"]).arg(&root)).assert_ok();
    fs.settle();
    // As root, Btrfs reads the tree search unless told to use FIEMAP.
    let fiemap: &[&str] = if kind == FsKind::Btrfs {
        &["--fiemap"]
    } else {
        &[]
    };
    for j in ["-j1", "-j2"] {
        assert_lean_path_is_the_general_path(&root, &[fiemap, &[j]].concat(), false);
        assert_lean_path_is_the_general_path(&root, &[j], true);
    }
}

/// On the XFS tree of known sharing: the lean path's figures are the
/// general path's (and the block model's, checked in `xfs` on the lean
/// path).
#[test]
fn xfs_lean_path_figures_equal_the_general_path() {
    lean_path_figures_equal_the_general_path(FsKind::Xfs);
}

/// On the Btrfs tree (a subvolume and its snapshot, reflinks, compressed
/// and inline data). The origin subvolume's files go down the lean path
/// while no copy is kept; the snapshot's never do.
#[test]
fn btrfs_lean_path_figures_equal_the_general_path() {
    lean_path_figures_equal_the_general_path(FsKind::Btrfs);
}

/// A tree not in memory (its filesystem just mounted) is walked with more
/// threads than CPUs, which keep the device busy, and gives the bytes one
/// thread gives; walked again, warm, with as many threads as CPUs. On XFS
/// the cold walk takes 4 (more wait on each other's inode reads).
#[test]
fn a_cold_tree_takes_more_threads_and_gives_the_same_figures() {
    cold_tree_threads(FsKind::Xfs, &[(&[], "", 4, false)]);
}

/// As root on Btrfs the walk reads the trees, a search for many inodes:
/// a cold walk of a tree without snapshots takes 4 threads (or one per
/// CPU, if more), and gives the bytes one thread gives; of a tree that
/// holds a subvolume and its snapshot, read by difference, one per CPU.
/// Without CAP_SYS_ADMIN, or with `--fiemap`, it takes 8, as on a
/// filesystem other than XFS.
#[test]
fn a_cold_btrfs_tree_read_from_its_trees_takes_fewer_threads() {
    let root = is_root();
    let (plain, lineage) = if root { (4, 1) } else { (8, 8) };
    cold_tree_threads(
        FsKind::Btrfs,
        &[
            (&[], "fan", plain, false),
            (&[], "", lineage, root),
            (&["--fiemap"], "", 8, false),
        ],
    );
}

/// The cold and warm walks of a tree on `kind` (or of its directory
/// named, if one is) against `-j1`'s, with each of `cases`' flags: the
/// cold one takes the threads given (at least one per CPU), and says so,
/// or that the tree's snapshots are read by difference.
fn cold_tree_threads(kind: FsKind, cases: &[(&[&str], &str, u64, bool)]) {
    let Some((fs, root)) = sharing_tree(kind) else {
        return;
    };
    fanout_tree(&root.join("fan"));
    fs.settle();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    for &(flags, dir, cold_threads, lineage) in cases {
        // `flags`, then `-j1` or not, then `-a DIR`.
        let args = |j1: bool| {
            let mut a: Vec<std::ffi::OsString> = flags.iter().map(Into::into).collect();
            a.extend(j1.then(|| "-j1".into()));
            a.extend(args!["-a", &root.join(dir)]);
            a
        };
        let one = sdu_json_bytes_stats(&args(true), false).0;
        // The look before the walk is timed, and a small tree on a fast
        // device may be read in a few requests (a virtual disk the host
        // caches answers in tens of microseconds, and three cold walks in
        // a row can all be judged warm): of ten cold walks, one at least
        // must be judged cold; each gives `-j1`'s bytes.
        let mut looks = Vec::new();
        let stats = loop {
            fs.cold();
            let (cold, stats) = sdu_json_bytes_stats(&args(false), false);
            assert_eq!(
                cold, one,
                "{flags:?} {dir}: a cold walk's document differs from -j1's"
            );
            if stats.contains("(the tree was not in memory") {
                break stats;
            }
            looks.push(stats);
            assert!(
                looks.len() < 10,
                "{flags:?} {dir}: never judged cold: {looks:#?}"
            );
        };
        assert_eq!(
            stats.contains("its snapshots are read by difference"),
            lineage,
            "{flags:?} {dir} {stats}"
        );
        assert_eq!(
            stat_value(&stats, "threads"),
            cold_threads.max(cpus),
            "{flags:?} {dir} {stats}"
        );
        // Warm now. The look is timed: a loaded machine may stall one, so
        // one of three runs must see the tree in memory; every one gives
        // the bytes.
        let mut threads = Vec::new();
        for _ in 0..3 {
            let (warm, stats) = sdu_json_bytes_stats(&args(false), false);
            assert_eq!(warm, one);
            threads.push(stat_value(&stats, "threads"));
        }
        assert!(threads.contains(&cpus), "{flags:?} {dir} {threads:?}");
    }
}
