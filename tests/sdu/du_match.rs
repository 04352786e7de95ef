//! sdu's figures against `du -s` run on each entry alone, on the machine's
//! own filesystem (a plain tempdir) and on XFS and Btrfs loopbacks.

use std::path::{Path, PathBuf};

use crate::args;
use crate::json::Kind;
use crate::util::*;

/// Everything the standard tree must satisfy on one filesystem, once
/// built and settled: every entry's total, apparent and files+dirs equal
/// du's, with and without `-l`, and there are as many entries as an
/// independent walk finds.
fn check_standard_tree_built(root: &Path) {
    let all = assert_matches_du(root, &[]);
    assert_eq!(
        all.entries.len(),
        expected_walk(root, true).len(),
        "number of -a entries"
    );
    let linked = assert_matches_du(root, &["-l"]);
    let r = all.entries.last().unwrap();
    let l = linked.entries.last().unwrap();
    // The tree has 6 extra links (hl_pair2, three_2, three_3, and three more
    // of shared.bin): -l must count them at the root.
    assert!(
        l.total > r.total && l.files == r.files + 6,
        "-l does not count every link at the root: {l:?} vs {r:?}"
    );
}

#[test]
fn standard_tree_matches_du_on_tmpdir() {
    let t = TestDir::new();
    let root = t.mkdir("tree");
    standard_tree(&root);
    sync_fs(&root);
    check_standard_tree_built(&root);
}

/// The standard tree with reflinked copies, on a fresh `kind` loopback,
/// settled: [`check_standard_tree_built`]. Returns the filesystem and the
/// tree's root, for what a kind checks beyond (None: skipped).
fn standard_tree_matches_du_on(kind: FsKind) -> Option<(LoopFs, PathBuf)> {
    let fs = LoopFs::new(kind)?;
    let root = fs.path().join("tree");
    std::fs::create_dir(&root).unwrap();
    standard_tree(&root);
    reflink_clones(&root);
    fs.settle();
    check_standard_tree_built(&root);
    Some((fs, root))
}

#[test]
fn standard_tree_matches_du_on_xfs() {
    standard_tree_matches_du_on(FsKind::Xfs);
}

#[test]
fn standard_tree_matches_du_on_btrfs() {
    let Some((fs, root)) = standard_tree_matches_du_on(FsKind::Btrfs) else {
        return;
    };
    // A subvolume has its own st_dev and its own inode numbers: figures
    // still equal du's, and hardlinks are told apart per (dev, ino).
    let sv = root.join("a/subvol");
    run(std::process::Command::new("btrfs")
        .args(["subvolume", "create"])
        .arg(&sv))
    .assert_ok();
    standard_tree(&sv);
    fs.settle();
    assert_matches_du(&root, &[]);
    assert_matches_du(&root, &["-l"]);
}

/// docs/filesystems.md ("-x and subvolumes"): "`-x` stops at mount points; a Btrfs subvolume is not a mount
/// point". So `-x` goes into a subvolume (du -x does not: it compares
/// st_dev, which a subvolume has of its own).
#[test]
fn one_file_system_enters_btrfs_subvolume() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let root = fs.path().join("tree");
    std::fs::create_dir(&root).unwrap();
    plain_tree(&root);
    run(std::process::Command::new("btrfs")
        .args(["subvolume", "create"])
        .arg(root.join("a/subvol")))
    .assert_ok();
    plain_tree(&root.join("a/subvol"));
    fs.settle();
    let all = assert_matches_du(&root, &[]);
    let x = sdu_json(&args!["-a", "-x", root]);
    let (s, d) = (sorted(paths(&x)), sorted(paths(&all)));
    assert!(
        s == d,
        "`sdu -x` does not enter a Btrfs subvolume:\n{}",
        labelled_diff(("-x", &s), ("no -x", &d))
    );
    assert_eq!(x, all, "-x changes figures inside one Btrfs filesystem");
}

/// Reflinked copies (whole-file clones) on a filesystem that shares data:
/// du counts each copy in full, and so must `total` (sharing is reported
/// beside it, never subtracted from it).
fn reflink_clones(root: &Path) {
    for (from, to) in [
        ("x/big.bin", "x/big.clone"),
        ("x/big.bin", "a/b/big.clone"),
        ("a/medium.bin", "y/medium.clone"),
    ] {
        run(std::process::Command::new("cp")
            .arg("--reflink=always")
            .arg(root.join(from))
            .arg(root.join(to)))
        .assert_ok();
    }
}

/// Post-order, siblings sorted bytewise, depth, type and `dirs` as an
/// independent walk computes them, for both `-a` and the default.
#[test]
fn entries_follow_du_order_with_types_depths_and_dirs() {
    let t = TestDir::new();
    let root = t.mkdir("tree");
    standard_tree(&root);
    for all in [true, false] {
        let mut a = if all { args!["-a"] } else { args![] };
        a.push(root.clone().into());
        let r = sdu_json(&a);
        assert_eq!(r.roots, vec![root.clone().into_os_string()], "roots");
        assert_eq!(r.total, None, "total without -c");
        let got: Vec<_> = r
            .entries
            .iter()
            .map(|e| {
                let dirs = if e.kind == Kind::Dir { e.dirs } else { 0 };
                (e.path.clone(), e.kind, e.depth, dirs)
            })
            .collect();
        let want = expected_walk(&root, all);
        if got != want {
            let mut msg = format!("entries differ from du order (-a: {all}):\n");
            for i in 0..got.len().max(want.len()) {
                msg += &format!(
                    "{:3} sdu {:<60} want {}\n",
                    i,
                    got.get(i).map_or("-".into(), |g| format!("{g:?}")),
                    want.get(i).map_or("-".into(), |w| format!("{w:?}"))
                );
            }
            panic!("{msg}");
        }
        for e in &r.entries {
            match e.kind {
                Kind::Dir => assert!(e.dirs >= 1, "{e:?}"),
                _ => assert!(e.dirs == 0 && e.files == 1, "{e:?}"),
            }
        }
    }
}

/// A file, a symlink and a directory given as roots: each is depth 0, of
/// its own type, with du's figures.
#[test]
fn file_and_symlink_roots_match_du() {
    let t = TestDir::new();
    let root = t.mkdir("tree");
    standard_tree(&root);
    for (rel, kind) in [
        ("top.bin", Kind::File),
        ("links/to_dir", Kind::Symlink),
        ("links/dangling", Kind::Symlink),
        ("a/b/sparse_tail", Kind::File),
        ("empty_dir", Kind::Dir),
    ] {
        let p = root.join(rel);
        let r = sdu_json(&args![p]);
        assert_eq!(r.entries.len(), 1, "{rel}: {:?}", r.entries);
        assert_eq!((r.entries[0].kind, r.entries[0].depth), (kind, 0), "{rel}");
        Du::default().assert_figures(&r, |_| true);
    }
}

/// Several roots: each root's figures are du's for that root alone, even
/// when a hardlink crosses two roots (where plain `du A B` would give the
/// inode to A only).
#[test]
fn several_roots_each_match_du_alone() {
    let t = TestDir::new();
    let root = t.mkdir("tree");
    standard_tree(&root);
    let (a, x) = (root.join("a"), root.join("x"));
    let r = sdu_json(&args![x, a]);
    assert_eq!(r.roots, vec![x.clone().into_os_string(), a.clone().into()]);
    // Roots in the order given, each after its own entries.
    let roots: Vec<_> = r.entries.iter().filter(|e| e.depth == 0).collect();
    assert_eq!(roots.len(), 2);
    assert_eq!(roots[0].path, x.as_os_str());
    assert_eq!(roots[1].path, a.as_os_str());
    assert_eq!(r.entries.last().unwrap().path, a.as_os_str());
    Du::default().assert_figures(&r, |_| true);
}

/// docs/figures.md, "The figures": an inode counts once in every directory holding one of its
/// links, not only in the first one the walk meets (plain `du ROOT` gives
/// it to whichever subdirectory it reads first), and `-l` counts each link.
#[test]
fn hardlink_counts_once_in_every_directory_holding_a_link() {
    let t = TestDir::new();
    let root = t.mkdir("tree");
    let (d1, d2) = (root.join("d1"), root.join("d2"));
    std::fs::create_dir(&d1).unwrap();
    std::fs::create_dir(&d2).unwrap();
    write_file(&d1.join("f"), 100_000);
    std::fs::hard_link(d1.join("f"), d2.join("g")).unwrap();
    std::fs::hard_link(d1.join("f"), d2.join("h")).unwrap();
    let size = |p: &Path| std::fs::symlink_metadata(p).unwrap().len();
    let (s_root, s1, s2) = (size(&root), size(&d1), size(&d2));
    let fig = |r: &crate::json::Report, p: &Path| {
        let e = r.entries.iter().find(|e| e.path == p.as_os_str()).unwrap();
        (e.apparent, e.files, e.dirs)
    };
    let r = sdu_json(&args![root]);
    assert_eq!(fig(&r, &d1), (s1 + 100_000, 1, 1), "d1");
    assert_eq!(
        fig(&r, &d2),
        (s2 + 100_000, 1, 1),
        "d2 (two links, one inode)"
    );
    assert_eq!(fig(&r, &root), (s_root + s1 + s2 + 100_000, 1, 3), "root");
    let l = sdu_json(&args!["-l", root]);
    assert_eq!(fig(&l, &d1), (s1 + 100_000, 1, 1), "-l d1");
    assert_eq!(fig(&l, &d2), (s2 + 200_000, 2, 1), "-l d2");
    assert_eq!(
        fig(&l, &root),
        (s_root + s1 + s2 + 300_000, 3, 3),
        "-l root"
    );
}
