//! The index of shared extents past `--index-memory`: spilled to a
//! temporary file in sorted runs and merged back, it gives the figures it
//! gives in memory, byte for byte, at any thread count; a spill that
//! cannot be written fails the run with a message, and nothing is printed.

use std::fs;
use std::path::Path;
use std::process::Command;

use super::btrfs::build_btrfs_tree;
use super::model::{Model, build_xfs_tree};
use super::{BLK, clone_file, fresh_bytes};
use crate::util::*;

/// A small backup repository in `dir`: a full of `blocks` fresh blocks and
/// `copies` copies of it, each made of the full's blocks in a shuffled
/// order (FICLONERANGE, a block a call: on XFS no two blocks merge into
/// one extent), as `scripts/bench-repo` builds one.
fn repository(dir: &Path, blocks: u64, copies: u64) {
    fs::create_dir_all(dir).unwrap();
    let full = dir.join("full-0");
    fs::write(&full, fresh_bytes((blocks * BLK) as usize)).unwrap();
    for c in 1..=copies {
        let mut cmd = Command::new("xfs_io");
        cmd.arg("-f");
        for b in 0..blocks {
            // A permutation of the blocks: 37 is prime to any `blocks`
            // used here (powers of two).
            let from = (b * 37 + c * 11) % blocks;
            cmd.arg("-c").arg(format!(
                "reflink {} {} {} {BLK}",
                full.display(),
                from * BLK,
                b * BLK
            ));
        }
        run(cmd.arg(dir.join(format!("full-{c}")))).assert_ok();
    }
}

/// `sdu --json --stats ARGS ROOT` with the environment `env`: the output.
fn sdu_env(env: &[(&str, &Path)], args: &[&str], root: &Path) -> Output {
    let mut c = Command::new(sdu_bin());
    for (k, v) in env {
        c.env(k, v);
    }
    run_with_timeout(c.args(["--json", "--stats"]).args(args).arg(root), 300)
}

/// The document and the runs spilled, of a run that must succeed.
fn document(args: &[&str], root: &Path) -> (Vec<u8>, u64) {
    let out = sdu_env(&[], args, root);
    assert_eq!(out.code, Some(0), "{out:?}");
    let runs = stat_value(&out.stderr, "index runs spilled to a temporary file");
    (out.stdout, runs)
}

/// The XFS tree of known sharing (partial clones, clones of clones,
/// files shared with others outside the scan, which root asks XFS about
/// and indexes after the walk) and a repository of 3 × 512 blocks cloned
/// one by one: with every arena spilled at 256 mappings and the runs
/// merged two at a time (`--index-memory 1`), the same document as in
/// memory, at 1 and 4 threads.
#[test]
fn spilled_figures_are_the_figures() {
    let Some(fs) = LoopFs::new(FsKind::Xfs) else {
        return;
    };
    build_xfs_tree(&mut Model::new(fs.path()));
    let root = fs.path().join("tree");
    repository(&root.join("repo"), 512, 3);
    fs.settle();
    let (want, runs) = document(&["-a", "-j1"], &root);
    assert_eq!(runs, 0, "the default budget holds this tree");
    let doc = crate::json::parse(&want);
    assert!(doc.entries.last().unwrap().shared > 0);
    for j in ["-j1", "-j4"] {
        let (got, runs) = document(&["-a", j, "--index-memory", "1"], &root);
        // 1,536 mappings and more, in runs of at most 256, and their
        // merges.
        assert!(runs > 8, "{j}: {runs} runs");
        assert!(
            got == want,
            "{j}, spilled: the document differs:\n{}\n{}",
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want)
        );
        let (got, _) = document(&["-a", j], &root);
        assert!(got == want, "{j}: the document differs from -j1's");
    }
}

/// The Btrfs tree of known sharing (a snapshot, reflinks, compressed
/// extents, an extent referenced in part, whose references root counts in
/// the index), a repository of 2 × 256 blocks cloned one by one (a
/// mapping a block through FIEMAP; one range for the tree search, which
/// reads the full's extent whole) and 400 files of 8 KiB cloned whole (a
/// range each): spilled, the same document, with the tree search as root
/// and with FIEMAP.
#[test]
fn spilled_figures_are_the_figures_on_btrfs() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let root = fs.path().join("tree");
    fs::create_dir(&root).unwrap();
    build_btrfs_tree(&root);
    repository(&root.join("repo"), 256, 2);
    let small = root.join("small");
    fs::create_dir(&small).unwrap();
    for i in 0..400 {
        let f = small.join(format!("f{i}"));
        fs::write(&f, fresh_bytes(8192)).unwrap();
        clone_file(&f, &small.join(format!("c{i}")));
    }
    fs.settle();
    // As root the tree search counts the references of the extent
    // referenced in part through the spilled index.
    let out = sdu_env(&[], &["-s", "--index-memory", "1"], &root);
    assert!(
        stat_value(&out.stderr, "extents referenced in part, kept whole") > 0,
        "{out:?}"
    );
    for how in [&["-a"][..], &["-a", "--fiemap"]] {
        let (want, runs) = document(&[how, &["-j1"]].concat(), &root);
        assert_eq!(runs, 0);
        for j in ["-j1", "-j4"] {
            let (got, runs) = document(&[how, &[j, "--index-memory", "1"]].concat(), &root);
            assert!(runs > 0, "{how:?} {j}");
            assert!(
                got == want,
                "{how:?} {j}, spilled: the document differs:\n{}\n{}",
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&want)
            );
        }
    }
}

/// The repository, settled, and a spill that cannot be written: the run
/// fails at once, with the directory and the reason on stderr, exit
/// status 2 (sdu's fatal error) and nothing on stdout. Without a spill
/// (the default budget), `TMPDIR` is never used.
#[test]
fn a_spill_that_cannot_be_written_fails_the_run() {
    let Some(fs) = LoopFs::new(FsKind::Xfs) else {
        return;
    };
    let repo = fs.path().join("repo");
    repository(&repo, 256, 2);
    fs.settle();
    let t = TestDir::new();
    let gone = t.path().join("gone");
    let fails = |env: &[(&str, &Path)], args: &[&str], why: &str, dir: &Path| {
        let out = sdu_env(env, &[args, &["--index-memory", "1"]].concat(), &repo);
        assert_eq!(out.code, Some(2), "{out:?}");
        assert!(out.stdout.is_empty(), "{out:?}");
        assert_eq!(
            out.stderr,
            format!(
                "sdu: cannot spill the shared-extent index to a temporary file in '{}': {why} \
                 (it spills past --index-memory; TMPDIR names the directory)\n",
                dir.display()
            ),
            "{out:?}"
        );
    };
    fails(
        &[("TMPDIR", &gone)],
        &[],
        "No such file or directory",
        &gone,
    );
    let out = sdu_env(&[("TMPDIR", &gone)], &[], &repo);
    assert_eq!(out.code, Some(0), "{out:?}");
    if !is_root() {
        unavailable::<()>("a directory nobody can write, and a full tmpfs, need root");
        return;
    }
    // A directory its user cannot write.
    let shut = t.mkdir("shut");
    run(Command::new("chmod").args(["-R", "a+rX"]).arg(&repo)).assert_ok();
    run(Command::new("chmod").arg("755").arg(&shut)).assert_ok();
    let mut c = Command::new("setpriv");
    c.args(nobody_args())
        .arg(sdu_bin())
        .args(["-s", "--index-memory", "1"])
        .arg(&repo)
        .env("TMPDIR", &shut);
    let out = run_with_timeout(&mut c, 300);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr
            .contains(&format!("in '{}': Permission denied", shut.display())),
        "{out:?}"
    );
    // A directory with no room: the first run fills the tmpfs.
    let full = t.mkdir("full");
    run(Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=4k", "sdu-test"])
        .arg(&full))
    .assert_ok();
    let _m = Tmpfs(full.clone());
    fails(
        &[("TMPDIR", &full)],
        &["-j2"],
        "No space left on device",
        &full,
    );
}
