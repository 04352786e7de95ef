//! As root on Btrfs the subvolume's tree stands in for getdents and statx
//! (src/walk/btrfs_listing.rs): checked against GNU du run before sdu (so
//! before anything is synced: data not yet written back has no extent
//! items, and inode items wait in memory), against `--fiemap` (the statx
//! walk) with every timestamp, and across a mount point, which the tree
//! cannot see.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use crate::args;
use crate::json;
use crate::util::*;

/// `du -sB1 [-x] PATH` (`apparent`: with --apparent-size).
fn du_s(path: &Path, flags: &[&str]) -> u64 {
    let out = run(Command::new("du").args(["-s", "-B1"]).args(flags).arg(path));
    assert_eq!(out.code, Some(0), "{out:?}");
    out.stdout_str()
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("du said {out:?}"))
}

/// The root entry of `sdu --json -s --stats FLAGS PATH`, and the entries
/// its `--stats` says were read from the tree.
fn sdu_root(path: &Path, flags: &[&str]) -> (crate::json::Entry, u64) {
    let out = run(Command::new(sdu_bin())
        .args(["--json", "-s", "--stats"])
        .args(flags)
        .arg(path));
    assert_eq!(out.code, Some(0), "{out:?}");
    let r = crate::json::parse(&out.stdout);
    let tree = stat_value(&out.stderr, "entries read from the tree (Btrfs, root)");
    (r.entries.last().unwrap().clone(), tree)
}

/// A Btrfs filesystem, as root (the tree walk's condition).
fn btrfs_as_root() -> Option<LoopFs> {
    if !is_root() {
        return unavailable("the tree walk needs root");
    }
    LoopFs::new(FsKind::Btrfs)
}

/// A Btrfs tree as root, scanned before anything is synced: the standard
/// tree (hardlinks within and across directories, symlinks, a FIFO,
/// sparse files), inline files, a preallocated file, nested subvolumes
/// (one snapshotted), a file just written; beside it a directory of 9,000 entries (listed in
/// batches). sdu's Total and apparent size are du's, taken just before it;
/// then every entry matches du, and every timestamp the statx walk's.
#[test]
fn tree_walk_counts_what_du_counts_before_any_sync() {
    let Some(fs) = btrfs_as_root() else {
        return;
    };
    let d = fs.path().join("t");
    fs::create_dir(&d).unwrap();
    // A snapshot whose origin then rewrites a file of a subdirectory: the
    // snapshot's copy has one ref, its own, in a leaf as old as the
    // snapshot, which the refs cannot decide; it is opened for FIEMAP from
    // `s2/dir`, a directory the tree listed without opening it.
    crate::btrfs::subvolume(&d.join("v2"));
    fs::create_dir(d.join("v2/dir")).unwrap();
    for i in 0..3 {
        write_file(&d.join(format!("v2/dir/f{i}")), 40_000 + i * 4096);
    }
    crate::btrfs::ro_snapshot(&d.join("v2"), &d.join("s2"));
    write_file(&d.join("v2/dir/f0"), 50_000);
    // Everything from here on is written and not synced.
    standard_tree(&d);
    let small = d.join("small");
    fs::create_dir(&small).unwrap();
    for i in 0..300 {
        fs::write(small.join(format!("s{i}")), vec![b'x'; 100 + i * 5]).unwrap();
    }
    let pre = fs::File::create(d.join("prealloc")).unwrap();
    rustix::fs::fallocate(&pre, rustix::fs::FallocateFlags::empty(), 0, 3 << 20).unwrap();
    // Beside it (du on each of its entries would take long): the drop of
    // `fs` compares every entry with the statx walk's.
    let wide = fs.path().join("wide");
    fs::create_dir(&wide).unwrap();
    wide_dir(&wide, 9_000);
    crate::btrfs::subvolume(&d.join("sub"));
    write_file(&d.join("sub/inner"), 200_000);
    fs::create_dir(d.join("sub/deeper")).unwrap();
    write_file(&d.join("sub/deeper/f"), 70_000);
    write_file(&d.join("late"), 123_456);
    // A subvolume below a directory the tree lists without opening it
    // (found with a statx from that directory, opened then), and a snapshot
    // of `sub` outside the scan.
    fs::create_dir(d.join("a/nested")).unwrap();
    crate::btrfs::subvolume(&d.join("a/nested/vol"));
    write_file(&d.join("a/nested/vol/f"), 30_000);
    crate::btrfs::ro_snapshot(&d.join("sub"), &fs.path().join("snap"));

    let du_before = |p: &Path| (du_s(p, &[]), du_s(p, &["--apparent-size"]));
    let before = [du_before(&d), du_before(&wide)];
    for (p, (total, apparent), least) in [(&d, before[0], 320), (&wide, before[1], 9_000)] {
        let (root, tree) = sdu_root(p, &[]);
        assert_eq!(
            (root.total, root.apparent),
            (total, apparent),
            "sdu's Total and apparent size of {}, before anything was synced, are not du's (taken just before)",
            p.display()
        );
        // Every entry but the roots of the walk and of the nested subvolume.
        assert!(
            tree >= least,
            "{tree} entries of {} read from the tree",
            p.display()
        );
    }

    let out = run(Command::new(sdu_bin()).args(["-s", "--stats"]).arg(&d));
    let undecided = stat_value(&out.stderr, "tree search undecided, mapped with FIEMAP");
    assert!(undecided >= 1, "{out:?}");
    assert_matches_du(&d, &[]);
    assert_matches_du(&d, &["-l"]);
    for field in ["mtime", "atime", "ctime"] {
        let time = format!("--time={field}");
        let flags = args!["-a", time, "--time-style=full-iso", &d];
        let searched = sdu_ok(&flags);
        let mut slow = flags.clone();
        slow.insert(0, "--fiemap".into());
        // What this compares is the timestamps, and every figure beside
        // them: FIEMAP reads a Btrfs file's extents as it references them,
        // so its Reclaimable may be marked a bound (at least) where the
        // search's is not. The marks and their legend are left out; the
        // figures are compared, every one.
        assert_eq!(
            without_marks(&searched),
            without_marks(&sdu_ok(&slow)),
            "{field}: the tree's timestamps are not statx's"
        );
    }
}

/// A text table (with its header) as words, line by line, without what
/// tells a bound from an exact Reclaimable: the mark before the figure, and
/// the legend under the table (the column's width, one more with marks,
/// goes with the spaces). Every figure, time and name is kept.
fn without_marks(text: &[u8]) -> Vec<Vec<String>> {
    let text = String::from_utf8_lossy(text);
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .expect("a header")
        .split_whitespace()
        .map(String::from)
        .collect();
    let col = header
        .iter()
        .position(|h| h == "Reclaimable")
        .unwrap_or_else(|| panic!("no Reclaimable column: {header:?}"));
    let marks = ["\u{2264}", "\u{2265}", "~", "<=", ">="];
    let legend = |l: &str| {
        marks
            .iter()
            .any(|m| l.starts_with(&format!("{m} Reclaimable ")))
    };
    let mut rows = vec![header];
    for l in lines.filter(|l| !legend(l)) {
        let mut words: Vec<String> = l.split_whitespace().map(String::from).collect();
        if let Some(w) = words.get_mut(col) {
            if let Some(figure) = marks.iter().find_map(|m| w.strip_prefix(m)) {
                *w = figure.to_owned();
            }
        }
        rows.push(words);
    }
    rows
}

/// A tmpfs mounted on a directory inside a Btrfs scan (its name has a
/// space, which mountinfo escapes): the tree shows the directory under
/// the mount, with files du cannot see; sdu counts what is mounted there,
/// as du does, and with -x stops there, as du -x does.
#[test]
fn a_mount_point_inside_the_scan_is_seen_as_du_sees_it() {
    let Some(fs) = btrfs_as_root() else {
        return;
    };
    let d = fs.path().join("t");
    let m = d.join("a/mount point");
    fs::create_dir_all(&m).unwrap();
    for i in 0..3 {
        write_file(&m.join(format!("hidden{i}")), 100_000);
    }
    write_file(&d.join("a/seen"), 40_000);
    let out = run(Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=4m", "tmpfs"])
        .arg(&m));
    if out.code != Some(0) {
        unavailable::<()>(&format!("cannot mount a tmpfs: {out:?}"));
        return;
    }
    let _mounted = Tmpfs(m.clone());
    write_file(&m.join("on tmpfs"), 50_000);
    // The root as given, and with a trailing slash (paths are compared as
    // printed).
    let slashed = std::path::PathBuf::from(format!("{}/", d.display()));
    for (r, flags) in [(&d, &[][..]), (&d, &["-x"][..]), (&slashed, &[][..])] {
        let (root, tree) = sdu_root(r, flags);
        assert_eq!(
            root.total,
            du_s(r, flags),
            "sdu {flags:?} {} is not du {flags:?}",
            r.display()
        );
        assert!(tree > 0, "the tree was not read");
    }

    let (root, _) = sdu_root(&d, &[]);
    assert!(
        root.total < 300_000,
        "the files under the mount were counted: {root:?}"
    );
}

/// A deep tree and 270 subvolumes, each with directories the tree lists
/// without opening, two snapshotted with files the refs cannot decide:
/// under `ulimit -n 32` (no subvolume fd kept, a small fd cache), 1024 (an
/// fd kept of 256 of them: the others' directories opened) and 4096 (of
/// every one), on one thread and on four, the document of the statx walk
/// (`--fiemap`).
#[test]
fn the_tree_walk_is_the_same_under_a_tight_fd_limit() {
    let Some(fs) = btrfs_as_root() else {
        return;
    };
    let d = fs.path().join("t");
    fs::create_dir(&d).unwrap();
    fs::create_dir(d.join("deep")).unwrap();
    deep_tree(&d.join("deep"), 200);
    for i in 0..270 {
        let v = d.join(format!("v{i}"));
        crate::btrfs::subvolume(&v);
        fs::create_dir_all(v.join("a/b")).unwrap();
        write_file(&v.join("a/b/f"), 10_000 + i * 4096);
        fs::write(v.join("a/small"), vec![b'y'; 500 + i]).unwrap();
    }
    // Snapshots whose origins then rewrite a file: their copies are
    // undecided by the refs, opened for FIEMAP from a directory the tree
    // listed without opening it (or, without subvolume fds, opened).
    for i in 0..2 {
        crate::btrfs::ro_snapshot(&d.join(format!("v{i}")), &d.join(format!("s{i}")));
        write_file(&d.join(format!("v{i}/a/b/f")), 20_000);
    }
    // The statx walk with FIEMAP, whose figures the tree walk must match.
    // FIEMAP reads a Btrfs file's extents as it references them, so it
    // marks its Reclaimables bounds (at least) where the tree walk, reading
    // them whole, need not: `reclaimable_exact` is left out of that
    // comparison, and compared instead between the tree walks, which must
    // give the same document byte for byte whatever the limit.
    let want = sdu_ok(&args!["--fiemap", "--json", "-a", &d]);
    let mut first: Option<Vec<u8>> = None;
    let limits = [
        (32, "-j1"),
        (32, "-j4"),
        (1024, "-j1"),
        (1024, "-j4"),
        (4096, "-j4"),
    ];
    for (limit, j) in limits {
        let out = sdu_with_fd_limit(limit, &args!["--json", "-a", j, "--stats", &d]);
        assert_eq!(out.code, Some(0), "{out:?}");
        let (got, statx) = (json::parse(&out.stdout), json::parse(&want));
        assert_eq!(
            got.figures_only(),
            statx.figures_only(),
            "ulimit -n {limit} {j}"
        );
        assert_bound_where_root_differs(&got, &statx, "the statx walk");
        let first = first.get_or_insert_with(|| out.stdout.clone());
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(first),
            "ulimit -n {limit} {j}: not the tree walk of ulimit -n 32 -j1"
        );
        let tree = stat_value(&out.stderr, "entries read from the tree (Btrfs, root)");
        assert!(
            tree > 1000,
            "ulimit -n {limit} {j}: {tree} entries read from the tree"
        );
    }
}

/// Snapshots of one subvolume with every kind of change between them, and
/// a writable snapshot changed after it was made: the tree walk reads the
/// inodes whose leaves no change touched once for the whole lineage, and
/// every entry, figure and timestamp is still the statx walk's
/// (`--fiemap`), on one thread and on four.
#[test]
fn snapshots_read_by_difference_are_read_as_they_are() {
    let Some(fs) = btrfs_as_root() else {
        return;
    };
    let d = fs.path().join("t");
    fs::create_dir(&d).unwrap();
    let v = d.join("v");
    crate::btrfs::subvolume(&v);
    fs::create_dir_all(v.join("a/b")).unwrap();
    fs::create_dir_all(v.join("gone/deeper")).unwrap();
    for i in 0..6 {
        write_file(&v.join(format!("a/f{i}")), 20_000 + i * 4096);
        fs::write(v.join(format!("a/b/small{i}")), vec![b's'; 300 + i]).unwrap();
        write_file(&v.join(format!("gone/deeper/g{i}")), 9_000);
    }
    let many = v.join("many");
    fs::create_dir(&many).unwrap();
    for i in 0..400 {
        fs::write(many.join(format!("m{i:03}")), vec![b'm'; 100 + i]).unwrap();
    }
    // Never changed: read from the tree by one of the five members (s1,
    // s2, s3, v, w), taken from the image by the others.
    let stable = v.join("stable");
    fs::create_dir(&stable).unwrap();
    for i in 0..600 {
        fs::write(stable.join(format!("k{i:03}")), vec![b'k'; 200 + i]).unwrap();
    }
    fs::hard_link(v.join("a/f0"), v.join("a/b/f0-link")).unwrap();
    std::os::unix::fs::symlink("f1", v.join("a/link")).unwrap();
    let set_xattr = |p: &Path, value: &[u8]| {
        rustix::fs::setxattr(p, "user.sdu", value, rustix::fs::XattrFlags::empty()).unwrap();
    };
    set_xattr(&v.join("a/f2"), b"first");
    // Written in a transaction before the snapshot's: leaves of that one
    // are read again in every member (the snapshot's dentry may change
    // the origin in it).
    run(Command::new("btrfs").args(["filesystem", "sync"]).arg(&v)).assert_ok();
    crate::btrfs::ro_snapshot(&v, &d.join("s1"));

    // Every kind of change, then another snapshot.
    write_file(&v.join("a/f1"), 90_000);
    fs::OpenOptions::new()
        .write(true)
        .open(v.join("a/f3"))
        .unwrap()
        .set_len(0)
        .unwrap();
    fs::remove_file(v.join("a/f4")).unwrap();
    fs::rename(v.join("a/f5"), v.join("a/b/f5-moved")).unwrap();
    fs::rename(v.join("a/b/small0"), v.join("a/b/small0-renamed")).unwrap();
    fs::write(v.join("a/b/small1"), vec![b't'; 301]).unwrap();
    fs::hard_link(v.join("a/f2"), v.join("a/f2-link")).unwrap();
    set_xattr(&v.join("a/f2"), b"second, longer");
    fs::set_permissions(v.join("a/b/small2"), fs::Permissions::from_mode(0o600)).unwrap();
    fs::remove_dir_all(v.join("gone")).unwrap();
    fs::create_dir(v.join("new")).unwrap();
    write_file(&v.join("new/n"), 33_000);
    crate::btrfs::ro_snapshot(&v, &d.join("s2"));

    for i in (0..400).step_by(2) {
        fs::remove_file(many.join(format!("m{i:03}"))).unwrap();
    }
    fs::write(many.join("m001"), vec![b'n'; 3_000]).unwrap();
    crate::btrfs::ro_snapshot(&v, &d.join("s3"));
    // A writable snapshot of the newest, changed after it was made.
    run(Command::new("btrfs")
        .args(["subvolume", "snapshot"])
        .arg(&v)
        .arg(d.join("w")))
    .assert_ok();
    write_file(&d.join("w/a/f0"), 70_000);
    fs::remove_file(d.join("w/many/m003")).unwrap();
    write_file(&v.join("a/f0"), 44_000);

    let out = run(Command::new(sdu_bin()).args(["-s", "--stats"]).arg(&d));
    assert_eq!(out.code, Some(0), "{out:?}");
    let unchanged = stat_value(
        &out.stderr,
        "inodes read as their snapshots' lineage holds them",
    );
    assert!(
        unchanged >= 2 * 600,
        "{unchanged} inodes read by difference: {out:?}"
    );
    for field in ["mtime", "ctime"] {
        let time = format!("--time={field}");
        let flags = args!["-a", time, "--time-style=full-iso", &d];
        let mut slow = flags.clone();
        slow.insert(0, "--fiemap".into());
        let want = without_marks(&sdu_ok(&slow));
        for j in ["-j1", "-j4"] {
            let mut fast = flags.clone();
            fast.insert(0, j.into());
            let got = without_marks(&sdu_ok(&fast));
            let differ: Vec<_> = got
                .iter()
                .zip(&want)
                .filter(|(g, w)| g != w)
                .take(4)
                .collect();
            assert!(
                differ.is_empty() && got.len() == want.len(),
                "{field} {j}: the lineage's inodes are not the statx walk's \
                 ({} rows against {}): {differ:?}",
                got.len(),
                want.len()
            );
        }
    }
    let json = |j: &str| sdu_ok(&args!["--json", "-a", j, &d]);
    assert_eq!(
        String::from_utf8_lossy(&json("-j1")),
        String::from_utf8_lossy(&json("-j4")),
        "the document depends on the thread count"
    );
}
