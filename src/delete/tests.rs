use std::fs;
use std::os::unix::fs::symlink;

use super::*;

/// What a scan records now at `root` and each name below it (a level
/// that does not exist gets a made-up identity, which never matches).
fn idents(root: &std::path::Path, names: &[&str]) -> Vec<Ident> {
    let mut p = root.to_path_buf();
    let mut out = Vec::new();
    for i in 0..=names.len() {
        if i > 0 {
            p.push(names[i - 1]);
        }
        let c = CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        let flags = if i == 0 {
            AtFlags::empty()
        } else {
            AtFlags::SYMLINK_NOFOLLOW
        };
        out.push(
            rustix::fs::statx(CWD, &c, flags, ID_MASK)
                .map(|st| ident_of(&st))
                .unwrap_or(Ident {
                    dev: 0,
                    ino: u64::MAX,
                    mnt: 0,
                }),
        );
    }
    out
}

fn target(root: &std::path::Path, names: &[&str], dir: bool) -> Target {
    let mut at = root.to_path_buf();
    at.extend(names);
    Target {
        root: root.as_os_str().as_encoded_bytes().to_vec(),
        names: names.iter().map(|n| n.as_bytes().to_vec()).collect(),
        dir,
        idents: idents(root, names),
        inside: if dir { inside(&at) } else { Vec::new() },
    }
}

/// The device and inode of everything below `dir` now, sorted: what a
/// scan of it records.
fn inside(dir: &std::path::Path) -> Vec<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let m = fs::symlink_metadata(e.path()).unwrap();
            out.push((m.dev(), m.ino()));
            if m.is_dir() {
                stack.push(e.path());
            }
        }
    }
    out.sort_unstable();
    out
}

/// Deletes with no stop asked for, holding at most `max_open`
/// directories open, and measures nothing (`statvfs` waits for the
/// filesystem to hold still: seconds on a busy one).
fn delete_with(targets: &[Target], max_open: usize) -> Deleted {
    delete_hooked(targets, max_open, &|_| {})
}

/// [`delete_with`], calling `after` with each path removed.
fn delete_hooked(targets: &[Target], max_open: usize, after: &dyn Fn(&[u8])) -> Deleted {
    let mut run = Deletion {
        out: Deleted::default(),
        filesystems: Vec::new(),
        stop: &AtomicBool::new(false),
        max_open,
        after,
    };
    run.all(targets);
    run.out
}

fn delete(targets: &[Target]) -> Deleted {
    delete_with(targets, 64)
}

#[test]
fn deletes_a_tree_and_never_follows_a_symlink() {
    let t = tempfile::tempdir().unwrap();
    let outside = t.path().join("outside");
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("keep"), b"x").unwrap();
    let root = t.path().join("root");
    fs::create_dir_all(root.join("a/b/c")).unwrap();
    fs::write(root.join("a/b/c/f"), b"data").unwrap();
    fs::write(root.join("a/g"), b"data").unwrap();
    symlink(&outside, root.join("a/b/link")).unwrap();
    let d = delete(&[target(&root, &["a"], true)]);
    assert!(d.failed.is_none(), "{:?}", d.failed);
    assert_eq!((d.targets, d.entries), (1, 6));
    assert!(!root.join("a").exists());
    assert!(outside.join("keep").exists());
}

#[test]
fn a_symlink_in_place_of_a_directory_stops_it() {
    let t = tempfile::tempdir().unwrap();
    let outside = t.path().join("outside");
    fs::create_dir_all(outside.join("d")).unwrap();
    fs::write(outside.join("d/keep"), b"x").unwrap();
    let root = t.path().join("root");
    fs::create_dir(&root).unwrap();
    // The scan saw root/sub/d as a directory; sub is now a symlink.
    symlink(&outside, root.join("sub")).unwrap();
    let d = delete(&[target(&root, &["sub", "d"], true)]);
    let f = d.failed.expect("stopped");
    assert!(matches!(f.problem, Problem::Io(_)), "{f}");
    assert!(outside.join("d/keep").exists());
    // A directory now a file, and the other way round.
    fs::write(root.join("was-dir"), b"x").unwrap();
    let d = delete(&[target(&root, &["was-dir"], true)]);
    let f = d.failed.expect("stopped");
    assert!(f.to_string().contains("changed since the scan"), "{f}");
    assert!(root.join("was-dir").exists());
}

#[test]
fn stops_at_the_first_error() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    fs::create_dir(&root).unwrap();
    for n in ["one", "two", "three"] {
        fs::write(root.join(n), b"x").unwrap();
    }
    let two = target(&root, &["two"], false);
    // Replaced by a directory since the scan.
    fs::remove_file(root.join("two")).unwrap();
    fs::create_dir(root.join("two")).unwrap();
    let d = delete(&[
        target(&root, &["one"], false),
        two,
        target(&root, &["three"], false),
    ]);
    assert_eq!(d.targets, 1);
    let f = d.failed.expect("stopped");
    assert!(f.path.ends_with(b"root/two"), "{f}");
    assert!(root.join("three").exists());
}

#[test]
fn an_entry_already_gone_counts_as_done_and_the_others_go_on() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    fs::create_dir_all(root.join("dir/sub")).unwrap();
    for n in ["one", "two", "three", "dir/sub/f"] {
        fs::write(root.join(n), b"x").unwrap();
    }
    let targets = [
        target(&root, &["one"], false),
        target(&root, &["two"], false),
        target(&root, &["dir", "sub"], true),
        target(&root, &["three"], false),
    ];
    // Since the scan: "two" deleted, and "dir" with "sub" in it.
    fs::remove_file(root.join("two")).unwrap();
    fs::remove_dir_all(root.join("dir")).unwrap();
    let d = delete(&targets);
    assert!(d.failed.is_none(), "{:?}", d.failed);
    assert_eq!((d.targets, d.gone, d.entries), (4, 2, 2));
    assert!(!root.join("one").exists() && !root.join("three").exists());
}

#[test]
fn entries_added_after_the_scan_are_counted_apart() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    fs::create_dir_all(root.join("d/old")).unwrap();
    fs::write(root.join("d/old/f"), b"x").unwrap();
    let d_target = target(&root, &["d"], true);
    // Since the scan: a file of 64 KiB, and a directory with a file in it.
    fs::write(root.join("d/old/new"), vec![7u8; 65536]).unwrap();
    fs::create_dir(root.join("d/newdir")).unwrap();
    fs::write(root.join("d/newdir/g"), vec![7u8; 8192]).unwrap();
    let blocks = |p: &str| {
        use std::os::unix::fs::MetadataExt;
        fs::symlink_metadata(root.join(p)).unwrap().blocks() * 512
    };
    let bytes = blocks("d/old/new") + blocks("d/newdir") + blocks("d/newdir/g");
    let d = delete(&[d_target]);
    assert!(d.failed.is_none(), "{:?}", d.failed);
    assert_eq!((d.targets, d.gone, d.entries), (1, 0, 6));
    assert_eq!((d.unscanned, d.unscanned_bytes), (3, bytes));
    assert!(bytes >= 65536 + 8192);
    assert!(!root.join("d").exists());
}

#[test]
fn refuses_dot_and_slash() {
    for r in [".", "..", "/", "a/.", "a/..//"] {
        let t = Target {
            root: r.as_bytes().to_vec(),
            names: Vec::new(),
            dir: true,
            idents: vec![Ident::default()],
            inside: Vec::new(),
        };
        let d = delete(&[t]);
        assert!(
            matches!(
                d.failed,
                Some(Failure {
                    problem: Problem::Refused,
                    ..
                })
            ),
            "{r}: {:?}",
            d.failed
        );
    }
}

/// A victim directory outside the tree, with a file in it.
fn victim(t: &tempfile::TempDir) -> std::path::PathBuf {
    let v = t.path().join("victim");
    fs::create_dir_all(v.join("data/deep")).unwrap();
    fs::write(v.join("data/deep/keep"), b"precious").unwrap();
    fs::write(v.join("keep"), b"precious").unwrap();
    v
}

fn victim_intact(v: &std::path::Path) {
    assert_eq!(fs::read(v.join("keep")).unwrap(), b"precious");
    assert_eq!(fs::read(v.join("data/deep/keep")).unwrap(), b"precious");
}

#[test]
fn a_root_swapped_for_a_symlink_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let v = victim(&t);
    let root = t.path().join("proj");
    fs::create_dir_all(root.join("data")).unwrap();
    fs::write(root.join("data/f"), b"x").unwrap();
    let marked = target(&root, &["data"], true);
    // Between the scan and `yes`: proj moved away, a symlink in its place.
    fs::rename(&root, t.path().join("proj.old")).unwrap();
    symlink(&v, &root).unwrap();
    let d = delete(&[marked]);
    let f = d.failed.expect("refused");
    assert!(
        matches!(&f.problem, Problem::Replaced { at, .. } if at.ends_with(b"proj")),
        "{f}"
    );
    assert!(f.to_string().contains("is not what sdu scanned"), "{f}");
    assert_eq!(d.entries, 0);
    victim_intact(&v);
    assert!(t.path().join("proj.old/data/f").exists());
}

#[test]
fn a_directory_renamed_over_another_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    fs::create_dir_all(root.join("a/b")).unwrap();
    fs::create_dir_all(root.join("other/b")).unwrap();
    fs::write(root.join("other/b/keep"), b"x").unwrap();
    let marked = target(&root, &["a", "b"], true);
    // `a` replaced by another directory holding a `b` of its own.
    fs::rename(root.join("a"), root.join("a.old")).unwrap();
    fs::rename(root.join("other"), root.join("a")).unwrap();
    let d = delete(&[marked]);
    let f = d.failed.expect("refused");
    assert!(
        matches!(&f.problem, Problem::Replaced { at, .. } if at.ends_with(b"root/a")),
        "{f}"
    );
    assert!(root.join("a/b/keep").exists());
    // A file replaced by another file of the same name (the old one kept,
    // so that its inode number cannot be handed to the new one).
    fs::write(root.join("f"), b"old").unwrap();
    let marked = target(&root, &["f"], false);
    fs::rename(root.join("f"), root.join("f.old")).unwrap();
    fs::write(root.join("g"), b"new").unwrap();
    fs::rename(root.join("g"), root.join("f")).unwrap();
    let d = delete(&[marked]);
    assert!(
        matches!(
            d.failed.as_ref().map(|f| &f.problem),
            Some(Problem::Replaced { .. })
        ),
        "{:?}",
        d.failed
    );
    assert!(root.join("f").exists());
}

#[test]
fn no_identity_no_deletion() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    fs::create_dir_all(root.join("a")).unwrap();
    let mut marked = target(&root, &["a"], true);
    marked.idents.pop();
    let d = delete(&[marked]);
    assert!(matches!(
        d.failed.map(|f| f.problem),
        Some(Problem::Unidentified)
    ));
    assert!(root.join("a").exists());
}

#[test]
fn a_stop_asked_for_stops_between_two_entries() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    fs::create_dir_all(root.join("a")).unwrap();
    for i in 0..10 {
        fs::write(root.join(format!("a/{i}")), b"x").unwrap();
    }
    let d = super::delete(&[target(&root, &["a"], true)], &AtomicBool::new(true));
    assert!(d.interrupted);
    assert!(matches!(
        d.failed.as_ref().map(|f| &f.problem),
        Some(Problem::Interrupted)
    ));
    assert_eq!(d.entries, 0);
    assert_eq!(fs::read_dir(root.join("a")).unwrap().count(), 10);
    // Files marked one by one: none goes either.
    let files: Vec<Target> = (0..10)
        .map(|i| target(&root, &["a", &i.to_string()], false))
        .collect();
    let d = super::delete(&files, &AtomicBool::new(true));
    assert!(d.interrupted && d.entries == 0 && d.targets == 0);
    assert_eq!(fs::read_dir(root.join("a")).unwrap().count(), 10);
}

#[test]
fn a_directory_closed_for_the_budget_and_moved_away_is_not_followed() {
    // top/a/b/c/f, two directories open: while c is emptied, top and a
    // are closed. Right after f goes, b (with c in it) is moved into
    // `outside`, which holds a file of its own. Climbing back from b
    // through `..` reaches `outside`, not a: its identity stops the
    // deletion, and `outside` keeps its file.
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    fs::create_dir_all(root.join("top/a/b/c")).unwrap();
    fs::write(root.join("top/a/b/c/f"), b"x").unwrap();
    let outside = t.path().join("outside");
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("keep"), b"precious").unwrap();
    let marked = target(&root, &["top"], true);
    let moved = std::cell::Cell::new(false);
    let after = |p: &[u8]| {
        if p.ends_with(b"top/a/b/c/f") && !moved.replace(true) {
            fs::rename(root.join("top/a/b"), outside.join("b")).unwrap();
        }
    };
    let d = delete_hooked(&[marked], 2, &after);
    assert!(moved.get());
    let f = d.failed.expect("stopped");
    assert!(
        matches!(&f.problem, Problem::Replaced { at, .. } if at.ends_with(b"top/a")),
        "{f}"
    );
    assert_eq!(fs::read(outside.join("keep")).unwrap(), b"precious");
}

/// `depth` nested directories `d` under `top`, made one level at a time
/// (the whole path is longer than PATH_MAX), with a file at each level.
fn deep(top: &std::path::Path, depth: usize) {
    fs::create_dir(top).unwrap();
    let mut fd = rustix::fs::open(top, OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty()).unwrap();
    for _ in 0..depth {
        rustix::fs::mkdirat(&fd, "d", Mode::from_raw_mode(0o755)).unwrap();
        let f = rustix::fs::openat(
            &fd,
            "f",
            OFlags::CREATE | OFlags::WRONLY,
            Mode::from_raw_mode(0o644),
        )
        .unwrap();
        drop(f);
        fd = rustix::fs::openat(&fd, "d", OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty())
            .unwrap();
    }
}

#[test]
fn any_depth_with_three_directories_open() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    fs::create_dir(&root).unwrap();
    deep(&root.join("top"), 1000);
    let d = delete_with(&[target(&root, &["top"], true)], 3);
    assert!(d.failed.is_none(), "{:?}", d.failed);
    assert_eq!(d.entries, 1 + 1000 * 2);
    assert!(!root.join("top").exists());
}

/// The absolute path of a directory 3,000 levels down (6,000 bytes),
/// which `/proc/self/fd` cannot print: built by going up through `..`,
/// and the same as the path it was made at. It is what the mount
/// pre-check compares with `/proc/self/mountinfo`.
#[test]
fn the_absolute_path_of_a_directory_past_path_max_is_found() {
    let t = tempfile::tempdir().unwrap();
    let top = t.path().join("top");
    deep(&top, 3_000);
    let mut fd = rustix::fs::open(&top, DIR_FLAGS, Mode::empty()).unwrap();
    for _ in 0..3_000 {
        fd = rustix::fs::openat(&fd, "d", DIR_FLAGS, Mode::empty()).unwrap();
    }
    let t0 = Instant::now();
    let abs = abs_path(fd.as_fd()).expect("a path");
    let took = t0.elapsed();
    let mut want = std::fs::canonicalize(&top)
        .unwrap()
        .into_os_string()
        .into_encoded_bytes();
    want.extend(b"/d".repeat(3_000));
    assert!(abs == want, "{} bytes, want {}", abs.len(), want.len());
    // A few syscalls a level: far inside the bound, even in a debug build.
    eprintln!("3,000 levels climbed in {took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    // Removed here, not by the TempDir's recursive removal, which
    // overflows the stack at 20,000 levels.
    let all = Target {
        root: t.path().as_os_str().as_encoded_bytes().to_vec(),
        names: vec![b"top".to_vec()],
        dir: true,
        idents: idents(t.path(), &["top"]),
        inside: Vec::new(),
    };
    let d = delete_with(&[all], 64);
    assert!(d.failed.is_none(), "{:?}", d.failed);
}

/// Whether mounting is possible here; under `CI=true` it must be.
fn can_mount() -> bool {
    let root = rustix::process::geteuid().is_root();
    assert!(
        root || std::env::var("CI").as_deref() != Ok("true"),
        "the mount races need root (CI=true, so this fails)"
    );
    if !root {
        eprintln!("\n********** SKIPPED: the mount races need root **********");
    }
    root
}

/// A bind mount made while a directory is being emptied, on directories
/// of it not entered yet: each is met by its mount id and not entered.
#[test]
fn a_mount_made_during_the_deletion_is_not_entered() {
    if !can_mount() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let v = victim(&t);
    let root = t.path().join("root");
    let top = root.join("top");
    for i in 0..5 {
        fs::create_dir_all(top.join(format!("m{i}"))).unwrap();
    }
    for i in 0..50 {
        fs::write(top.join(format!("f{i}")), b"x").unwrap();
    }
    let marked = target(&root, &["top"], true);
    let mounted = std::cell::RefCell::new(Vec::new());
    let after = |_: &[u8]| {
        if mounted.borrow().is_empty() {
            for i in 0..5 {
                let at = top.join(format!("m{i}"));
                if at.exists() && rustix::mount::mount_bind(&v, &at).is_ok() {
                    mounted.borrow_mut().push(at);
                }
            }
        }
    };
    let d = delete_hooked(&[marked], 64, &after);
    for at in mounted.borrow().iter() {
        let _ = rustix::mount::unmount(at, rustix::mount::UnmountFlags::DETACH);
    }
    assert!(!mounted.borrow().is_empty());
    let f = d.failed.expect("stopped");
    assert!(matches!(f.problem, Problem::MountMet { .. }), "{f}");
    victim_intact(&v);
}

/// A mutator that, throughout each deletion, swaps a directory of the
/// marked tree for a symlink to the victim and back, renames directories
/// over each other, and bind-mounts the victim inside the tree and
/// unmounts it. Whatever the deletion does (finish, or stop at a check),
/// the victim is intact in every run.
#[test]
fn races_with_swaps_and_mounts_never_reach_the_victim() {
    use std::sync::Arc;
    use std::thread;
    let mounts = can_mount();
    let t = tempfile::tempdir().unwrap();
    let v = victim(&t);
    let (mut done, mut refused) = (0, 0);
    for run in 0..40 {
        let root = t.path().join(format!("root{run}"));
        let top = root.join("top");
        for d in ["x/y", "m", "z/y"] {
            fs::create_dir_all(top.join(d)).unwrap();
        }
        for i in 0..150 {
            fs::write(top.join(format!("x/y/f{i}")), b"x").unwrap();
            fs::write(top.join(format!("z/y/f{i}")), b"x").unwrap();
            fs::write(top.join(format!("f{i}")), b"x").unwrap();
        }
        let marked = target(&root, &["top"], true);
        let stop = Arc::new(AtomicBool::new(false));
        let mutator = {
            let (stop, top, v) = (Arc::clone(&stop), top.clone(), v.clone());
            thread::spawn(move || {
                let mut n = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    match n % 3 {
                        0 if fs::rename(top.join("x"), top.join("x.away")).is_ok() => {
                            let _ = symlink(&v, top.join("x"));
                            thread::yield_now();
                            let _ = fs::remove_file(top.join("x"));
                            let _ = fs::rename(top.join("x.away"), top.join("x"));
                        }
                        1 => {
                            let _ = fs::rename(top.join("z"), top.join("x.tmp"));
                            let _ = fs::rename(top.join("x.tmp"), top.join("z"));
                        }
                        _ if mounts => {
                            for at in [top.join("m"), top.join("z/y")] {
                                if rustix::mount::mount_bind(&v, &at).is_ok() {
                                    thread::yield_now();
                                    let _ = rustix::mount::unmount(
                                        &at,
                                        rustix::mount::UnmountFlags::DETACH,
                                    );
                                }
                            }
                        }
                        _ => {}
                    }
                }
            })
        };
        // Few directories open, so that climbing reopens through `..`.
        let d = delete_with(&[marked], 2);
        stop.store(true, Ordering::Relaxed);
        mutator.join().unwrap();
        if d.failed.is_none() {
            done += 1;
        } else {
            refused += 1;
        }
        victim_intact(&v);
        // Leave nothing mounted, whatever happened.
        for at in [top.join("m"), top.join("z/y")] {
            let _ = rustix::mount::unmount(&at, rustix::mount::UnmountFlags::DETACH);
        }
    }
    eprintln!("40 runs under a mutator: {done} deleted whole, {refused} stopped");
}

/// The filesystems are flushed once (a Btrfs sync commits a transaction),
/// not on every read while the freed figure settles; on every read only
/// while the cleaner drops deleted subvolumes.
#[test]
fn settle_syncs_once_unless_subvolumes_are_dropped() {
    let mut syncs = 0;
    let (reported, settled) = settle(|| syncs += 1, || 7, || None, false);
    assert_eq!((reported, settled), (7, true));
    assert_eq!(syncs, 1);

    let mut syncs = 0;
    let mut reads = 0;
    let read = || {
        reads += 1;
        7
    };
    let (_, settled) = settle(|| syncs += 1, read, || Some(0), true);
    assert!(settled);
    assert_eq!(syncs, reads);
}
