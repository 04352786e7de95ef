//! The same sharing figures every way they are computed: at 1, 2 and 8
//! threads, over several runs, and down the walk's lean path and its
//! general path, as root and as `nobody`.

use std::fs;
use std::path::Path;
use std::process::Command;

use super::btrfs::{btrfs_tree, build_btrfs_tree};
use super::model::{Model, build_xfs_tree, xfs_tree};
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

#[test]
fn xfs_sharing_figures_deterministic() {
    let Some(fs) = LoopFs::new(FsKind::Xfs) else {
        return;
    };
    let mut m = Model::new(fs.path());
    build_xfs_tree(&mut m);
    fanout_tree(&fs.path().join("tree/fan"));
    fs.settle();
    let r = assert_deterministic(&fs.path().join("tree"));
    assert_invariants(&r);
    assert!(r.entries.last().unwrap().shared > 0);
}

#[test]
fn btrfs_sharing_figures_deterministic() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let root = fs.path().join("tree");
    fs::create_dir(&root).unwrap();
    build_btrfs_tree(&root);
    fanout_tree(&root.join("fan"));
    fs.settle();
    let r = assert_deterministic(&root);
    assert!(r.entries.last().unwrap().shared > 0);
    // As root the compressed extents of z count at their size on disk,
    // where these invariants of logical lengths need not hold.
    assert_invariants(&sdu_json_compressed(&args!["-a", "--fiemap", &root]));
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
    assert_eq!(crate::json::parse(&out.stdout).errors, 0, "{out:?}");
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

/// On the XFS tree of known sharing: the lean path's figures are the
/// general path's (and the block model's, checked above on the lean path).
#[test]
fn xfs_lean_path_figures_equal_the_general_path() {
    let Some((fs, _m)) = xfs_tree() else {
        return;
    };
    let root = fs.path().join("tree");
    fanout_tree(&root.join("fan"));
    // Readable by nobody, so that both paths map every file.
    run(Command::new("chmod").args(["-R", "a+rX"]).arg(&root)).assert_ok();
    fs.settle();
    for j in ["-j1", "-j2"] {
        assert_lean_path_is_the_general_path(&root, &[j], false);
        assert_lean_path_is_the_general_path(&root, &[j], true);
    }
}

/// On the Btrfs tree (a subvolume and its snapshot, reflinks, compressed
/// and inline data): the lean path's figures are the general path's, with
/// FIEMAP as root and without privileges. The origin subvolume's files go
/// down the lean path while no copy is kept; the snapshot's never do.
#[test]
fn btrfs_lean_path_figures_equal_the_general_path() {
    let Some((fs, root)) = btrfs_tree() else {
        return;
    };
    fanout_tree(&root.join("fan"));
    run(Command::new("chmod").args(["-R", "a+rX"]).arg(&root)).assert_ok();
    fs.settle();
    for j in ["-j1", "-j2"] {
        assert_lean_path_is_the_general_path(&root, &["--fiemap", j], false);
        assert_lean_path_is_the_general_path(&root, &[j], true);
    }
}
