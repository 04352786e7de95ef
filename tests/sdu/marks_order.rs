//! Marks never depend on the walk's order or thread count: XFS with
//! reflinked files and Btrfs with snapshots of inline files, both with
//! hardlinks across directories, mounted side by side under one directory
//! and scanned as root, give the same `--json -a` document, byte for
//! byte, at every thread count (the threads meet the filesystems, and an
//! inode's links, in an order their scheduling decides, run to run). And
//! a Btrfs met below a mount point has its trees asked as a PATH's: its
//! entries, figures and marks, are those of a scan of it alone; so are
//! snapshots bind-mounted beside XFS, whose origin is outside the scan.

use std::path::Path;
use std::process::Command;

use crate::util::*;

/// Thread counts, each more than once: `-j1` walks in one order; more
/// threads meet the filesystems in an order their scheduling decides.
const THREADS: &[&str] = &[
    "-j1", "-j2", "-j4", "-j8", "-j4", "-j8", "-j2", "-j4", "-j8", "-j1",
];

/// `sdu --json -a JOBS .` in `dir`, as root.
fn json(dir: &Path, jobs: &str) -> Vec<u8> {
    let o = run_with_timeout(
        Command::new(sdu_bin())
            .current_dir(dir)
            .args([jobs, "--json", "-a", "."]),
        300,
    );
    o.assert_ok();
    o.stdout
}

/// The lines of `a` and `b` that differ, up to 10.
fn differences(a: &[u8], b: &[u8]) -> String {
    let (a, b) = (String::from_utf8_lossy(a), String::from_utf8_lossy(b));
    let (a, b): (Vec<_>, Vec<_>) = (a.lines().collect(), b.lines().collect());
    let mut out = format!("{} and {} lines\n", a.len(), b.len());
    for (x, y) in a.iter().zip(&b).filter(|(x, y)| x != y).take(10) {
        out += &format!("{x}\n{y}\n---\n");
    }
    out
}

/// Hardlinks of some small files of each of `dirs` directories `d{n}` of
/// `root`: in the next directory (a link outside the directory), in the
/// same one, and in a subdirectory of the one after.
fn hardlinks(root: &Path, dirs: usize) {
    for d in 0..dirs {
        let sub = root.join(format!("d{d}/sub"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..8 {
            let from = root.join(format!("d{d}/s{f:03}"));
            let next = root.join(format!("d{}/link{f}", (d + 1) % dirs));
            std::fs::hard_link(&from, next).unwrap();
            let far = root.join(format!("d{}/sub/far{d}-{f}", (d + 2) % dirs));
            if f % 2 == 0 {
                std::fs::create_dir_all(far.parent().unwrap()).ok();
                std::fs::hard_link(&from, far).unwrap();
            }
        }
        std::fs::hard_link(
            root.join(format!("d{d}/s020")),
            root.join(format!("d{d}/same")),
        )
        .unwrap();
    }
}

/// The entries of the `--json -a` document `doc` at `top` or under it,
/// each without its path's `top` and its depth: (path below `top`, the
/// rest of its line).
fn entries(doc: &[u8], top: &str) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(doc);
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix(&format!("{{\"path\":\"{top}")) else {
            continue;
        };
        let Some((below, rest)) = rest.split_once('"') else {
            continue;
        };
        if !(below.is_empty() || below.starts_with('/')) {
            continue;
        }
        let rest = rest.split_once(",\"depth\":").map_or(rest, |r| r.1);
        let rest = rest.split_once(',').map_or(rest, |r| r.1);
        let rest = rest.trim_end_matches(',');
        out.push((below.to_string(), rest.to_string()));
    }
    out
}

/// A Btrfs subvolume `vol` of small files (inline: 600 bytes) and a few
/// larger ones, and three read-only snapshots, with a few files rewritten
/// between them.
fn btrfs_tree(mnt: &Path) {
    btrfs(&["subvolume", "create"], &mnt.join("vol"));
    for d in 0..6 {
        let dir = mnt.join(format!("vol/d{d}"));
        std::fs::create_dir(&dir).unwrap();
        for f in 0..60 {
            write_file(&dir.join(format!("s{f:03}")), 600 + f);
        }
        write_file(&dir.join("big"), 40 * 1024 + d * 4096);
    }
    hardlinks(&mnt.join("vol"), 6);
    std::fs::create_dir(mnt.join("snaps")).unwrap();
    sync_fs(mnt);
    for s in 0..3 {
        std::thread::sleep(std::time::Duration::from_millis(200));
        crate::btrfs::ro_snapshot(&mnt.join("vol"), &mnt.join(format!("snaps/s{s}")));
        for f in 0..5 {
            let name = format!("vol/d{s}/s{f:03}");
            std::fs::write(mnt.join(name), vec![b'a' + s as u8; 700]).unwrap();
        }
        write_file(&mnt.join(format!("vol/d{s}/big")), 48 * 1024);
        sync_fs(mnt);
    }
}

/// An XFS tree of small files and reflinked copies of larger ones.
fn xfs_tree(mnt: &Path) {
    for d in 0..6 {
        let dir = mnt.join(format!("d{d}"));
        std::fs::create_dir(&dir).unwrap();
        for f in 0..40 {
            write_file(&dir.join(format!("s{f:03}")), 600 + f);
        }
        write_file(&dir.join("big"), 64 * 1024 + d * 4096);
    }
    hardlinks(mnt, 6);
    for d in 0..6 {
        let from = mnt.join(format!("d{d}/big"));
        let to = mnt.join(format!("d{}/clone", (d + 1) % 6));
        run(Command::new("cp")
            .arg("--reflink=always")
            .arg(&from)
            .arg(&to))
        .assert_ok();
    }
    sync_fs(mnt);
}

#[test]
fn marks_on_xfs_beside_btrfs_snapshots_are_the_same_whatever_the_threads() {
    let d = TestDir::new();
    let x = d.mkdir("x");
    let b = d.mkdir("b");
    let Some(xfs) = LoopFs::new_at(FsKind::Xfs, &x) else {
        return;
    };
    let Some(bfs) = LoopFs::new_at(FsKind::Btrfs, &b) else {
        return;
    };
    xfs_tree(xfs.path());
    btrfs_tree(bfs.path());
    let first = json(d.path(), THREADS[0]);
    let text = String::from_utf8_lossy(&first);
    assert!(
        text.lines().count() > 6 * 41 + 4 * 6 * 61,
        "every entry listed: {text}"
    );
    let at_most = |v: &[u8]| {
        String::from_utf8_lossy(v)
            .matches("\"reclaimable_exact\":false")
            .count()
    };
    for (i, &j) in THREADS.iter().enumerate().skip(1) {
        let next = json(d.path(), j);
        assert!(
            next == first,
            "{} and {j} (run {i}) differ ({} and {} at most): {}",
            THREADS[0],
            at_most(&first),
            at_most(&next),
            differences(&first, &next)
        );
    }
    // As root every tree that could hold an inline file is read, the
    // Btrfs below a mount point as a PATH on it: the entries under `b`
    // are those of a scan of `b` itself, marks and all.
    let below = entries(&first, "./b");
    let scan_b = run_with_timeout(
        Command::new(sdu_bin())
            .current_dir(d.path())
            .args(["-j4", "--json", "-a", "b"]),
        300,
    );
    scan_b.assert_ok();
    let alone_b = entries(&scan_b.stdout, "b");
    assert!(below.len() > 4 * 6 * 61, "{}", below.len());
    let differ: Vec<_> = (below.iter().zip(&alone_b))
        .filter(|(x, y)| x != y)
        .take(5)
        .collect();
    assert!(
        below.len() == alone_b.len() && differ.is_empty(),
        "{} and {} entries: {differ:#?}",
        below.len(),
        alone_b.len()
    );
    // None is marked: no subvolume outside the scan holds any of them.
    assert_eq!(at_most(&scan_b.stdout), 0, "{}", scan_b.stdout_str());
    // Exact, as deleting says: s0 alone holds the first state of d0 (its
    // big file's data and five inline files), s2 nothing.
    let claim = |path: &str| {
        let line = String::from_utf8_lossy(&first)
            .lines()
            .find(|l| l.starts_with(&format!("{{\"path\":\"{path}\",")))
            .unwrap_or_else(|| panic!("no {path}"))
            .to_string();
        assert!(line.contains("\"reclaimable_exact\":true"), "{line}");
        let n = line.split("\"reclaimable\":").nth(1).unwrap();
        n.split(',').next().unwrap().parse::<u64>().unwrap()
    };
    let (s0, s2) = (claim("./b/snaps/s0"), claim("./b/snaps/s2"));
    let (data, meta) = freed_by_deleting_subvolume(bfs.path(), "snaps/s0");
    assert!(
        data > 0 && data <= s0 && s0 <= data + meta + 64 * 1024,
        "s0 reclaimable {s0}, deleting it freed data {data} + metadata {meta}"
    );
    let (data, meta) = freed_by_deleting_subvolume(bfs.path(), "snaps/s2");
    assert!(
        data <= s2 && s2 <= data + meta + 64 * 1024,
        "s2 reclaimable {s2}, deleting it freed data {data} + metadata {meta}"
    );
    drop(bfs);
    drop(xfs);
}

/// The snapshots directory of a Btrfs bind-mounted beside an XFS, its
/// origin subvolume outside the scan: as root the origin's tree is asked
/// whether it holds each inline file, as for a PATH on the Btrfs, whatever
/// the threads.
#[test]
fn snapshots_bind_mounted_beside_xfs_are_asked_as_a_path() {
    let d = TestDir::new();
    let x = d.mkdir("x");
    let s = d.mkdir("s");
    let Some(xfs) = LoopFs::new_at(FsKind::Xfs, &x) else {
        return;
    };
    let Some(bfs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    xfs_tree(xfs.path());
    btrfs_tree(bfs.path());
    let bind = Bind::new(&bfs.path().join("snaps"), &s);
    let first = json(d.path(), "-j1");
    for j in ["-j4", "-j8", "-j2", "-j8"] {
        let next = json(d.path(), j);
        assert!(
            next == first,
            "-j1 and {j} differ: {}",
            differences(&first, &next)
        );
    }
    let below = entries(&first, "./s");
    let path = run_with_timeout(
        Command::new(sdu_bin())
            .current_dir(bfs.path())
            .args(["-j4", "--json", "-a", "snaps"]),
        300,
    );
    path.assert_ok();
    let direct = entries(&path.stdout, "snaps");
    assert!(below.len() > 3 * 6 * 61, "{}", below.len());
    // Below the mount point: the same figures and marks. At it, the data
    // extents the snapshots share with their origin are not asked about
    // (only a PATH's filesystem is: docs/limits.md), so its Reclaimable
    // is a bound, marked, above the exact one.
    let (top, top_direct) = (&below.last().unwrap().1, &direct.last().unwrap().1);
    let reclaimable = |e: &str| -> u64 {
        let n = e.split("\"reclaimable\":").nth(1).unwrap();
        n.split(',').next().unwrap().parse().unwrap()
    };
    assert!(
        top_direct.contains("\"reclaimable_exact\":true")
            && (top == top_direct
                || top.contains("\"reclaimable_bound\":\"at_most\"")
                    && reclaimable(top) >= reclaimable(top_direct)),
        "./s {top}\nsnaps {top_direct}"
    );
    let rest = below.len().saturating_sub(1);
    let differ: Vec<_> = (below[..rest].iter().zip(&direct))
        .filter(|(x, y)| x != y)
        .take(5)
        .collect();
    assert!(
        below.len() == direct.len() && differ.is_empty(),
        "{} and {} entries: {differ:#?}",
        below.len(),
        direct.len()
    );
    let marked = below[..rest].iter();
    let marked = marked.filter(|e| e.1.contains("\"reclaimable_exact\":false"));
    assert_eq!(marked.count(), 0, "{}", path.stdout_str());
    drop(bind);
}
