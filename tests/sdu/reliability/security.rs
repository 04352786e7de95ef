//! Security: a FIFO or device swapped in is never opened or blocked on,
//! no atime, mtime or ctime changes, no symlink is followed without `-L`.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rustix::fs::{CWD, FileType, Mode};

use super::{clone_file, env_u64, sdu_as_nobody, sdu_checked, xfs};
use crate::args;
use crate::json::Kind;
use crate::util::*;

/// A FIFO and a character device swapped in, in a tight loop, for a
/// regular file with blocks (so that sdu opens the name for FIEMAP): no
/// run blocks, and each ends with a valid report.
#[test]
fn fifo_or_device_swapped_in_never_blocks() {
    let Some(l) = xfs() else { return };
    let dir = l.path().join("swap");
    fs::create_dir(&dir).unwrap();
    write_file(&dir.join("keep"), 10_000);
    rustix::fs::mkfifoat(CWD, dir.join("fifo"), Mode::from_raw_mode(0o644)).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let mutator = {
        let (dir, stop) = (dir.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                let tmp = dir.join(".tmp");
                let _ = fs::remove_file(&tmp);
                let made = match i % 3 {
                    0 => fs::write(&tmp, vec![1u8; 8192]),
                    1 => rustix::fs::mkfifoat(CWD, &tmp, Mode::from_raw_mode(0o644))
                        .map_err(Into::into),
                    // /dev/null's numbers: harmless if it were opened.
                    _ => rustix::fs::mknodat(
                        CWD,
                        &tmp,
                        FileType::CharacterDevice,
                        Mode::from_raw_mode(0o644),
                        rustix::fs::makedev(1, 3),
                    )
                    .map_err(Into::into),
                };
                if made.is_ok() {
                    let _ = fs::rename(&tmp, dir.join("x"));
                }
            }
        })
    };
    let iters = env_u64("SDU_SWAP_ITERS", 150);
    for _ in 0..iters {
        sdu_checked(&args!["-a", &dir], 10);
    }
    stop.store(true, Ordering::Relaxed);
    mutator.join().unwrap();
    // As nobody too (no O_NOATIME on root's files).
    if is_root() {
        let out = sdu_as_nobody(&args!["--json", "-a", &dir], 10);
        assert!(matches!(out.code, Some(0 | 1)), "{out:?}");
    }
}

/// Every path under `root` (itself included).
fn all_paths(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(p) = stack.pop() {
        if fs::symlink_metadata(&p).unwrap().is_dir() {
            for e in fs::read_dir(&p).unwrap() {
                stack.push(e.unwrap().path());
            }
        }
        out.push(p);
    }
    out
}

/// Access, modification and change times of `paths` (stat only: reading
/// a directory here would itself update its atime).
fn times(paths: &[PathBuf]) -> BTreeMap<PathBuf, (i64, i64, i64, i64, i64, i64)> {
    paths
        .iter()
        .map(|p| {
            let md = fs::symlink_metadata(p).unwrap();
            let t = (
                md.atime(),
                md.atime_nsec(),
                md.mtime(),
                md.mtime_nsec(),
                md.ctime(),
                md.ctime_nsec(),
            );
            (p.clone(), t)
        })
        .collect()
}

/// On a filesystem mounted `strictatime` (every read would update atime),
/// runs as root and as the owner leave every atime, mtime and ctime as
/// they were: directories and mapped files are opened O_NOATIME, and
/// nothing is written.
#[test]
fn atime_mtime_ctime_unchanged_under_strictatime() {
    if !is_root() {
        unavailable::<()>("remounting needs root");
        return;
    }
    let Some(l) = xfs() else { return };
    run(Command::new("mount")
        .args(["-o", "remount,strictatime"])
        .arg(l.path()))
    .assert_ok();
    let root = l.path().join("at");
    fs::create_dir(&root).unwrap();
    plain_tree(&root);
    clone_file(&root.join("a/b/z"), &root.join("a/clone")).unwrap();
    symlink("a", root.join("link")).unwrap();
    rustix::fs::mkfifoat(CWD, root.join("fifo"), Mode::from_raw_mode(0o644)).unwrap();
    // Owned by nobody, so that nobody may use O_NOATIME too.
    run(Command::new("chown")
        .args(["-R", "-h", "65534:65534"])
        .arg(&root))
    .assert_ok();
    sync_fs(l.path());
    // Set every atime well in the past, so that strictatime would update.
    let all = all_paths(&root);
    run(Command::new("touch")
        .args(["-h", "-a", "-d", "2001-01-01"])
        .args(&all))
    .assert_ok();
    let before = times(&all);
    let (_, stderr) = sdu_checked(&args!["-a", &root], 30);
    assert!(stderr.is_empty(), "{stderr}");
    let out = sdu_as_nobody(&args!["--json", "-a", &root], 30);
    assert_eq!(out.code, Some(0), "{out:?}");
    let after = times(&all);
    let changed: Vec<String> = before
        .iter()
        .filter(|(p, t)| after.get(*p) != Some(t))
        .map(|(p, t)| format!("{}: {t:?} -> {:?}", p.display(), after.get(p)))
        .collect();
    assert!(
        changed.is_empty(),
        "times changed by sdu:\n{}",
        changed.join("\n")
    );
    // The check can fail: here, reading a directory updates its atime.
    fs::read_dir(&root).unwrap().for_each(drop);
    assert_ne!(
        times(&all)[&root].0,
        before[&root].0,
        "strictatime not in effect"
    );
}

/// A symlink to /etc inside the tree is not followed without -L (it is a
/// symlink entry of its own size), and is with -L.
#[test]
fn symlink_to_etc_is_not_followed_without_l() {
    let t = TestDir::new();
    let root = t.mkdir("etc-link");
    write_file(&root.join("f"), 1000);
    symlink("/etc", root.join("etc")).unwrap();
    let r = sdu_json(&args!["-a", &root]);
    let link = root.join("etc");
    assert!(
        !r.entries
            .iter()
            .any(|e| Path::new(&e.path).starts_with(&link) && e.path != link),
        "followed the symlink: {:?}",
        paths(&r)
    );
    let e = r.entries.iter().find(|e| e.path == link).unwrap();
    assert_eq!(e.kind, Kind::Symlink);
    assert!(e.total <= 4096, "{e:?}");
    // With -L it is followed (so the check above can fail).
    let (rl, _) = sdu_checked(&args!["-L", &root], 60);
    assert!(
        rl.entries
            .iter()
            .any(|e| e.path == link && e.kind == Kind::Dir),
        "-L did not follow the symlink to /etc"
    );
}

/// Regular files with blocks on reflink XFS (so that sdu opens them for
/// FIEMAP) swapped, by rename in a tight loop, for a FIFO: a writer blocked
/// opening that FIFO is released only if someone opens it for reading. sdu
/// must never do so: it opens only regular files, and the kernel offers a
/// way to check before opening (`O_PATH`, `fstat`, reopen through
/// `/proc/self/fd`).
#[test]
fn fifo_swapped_in_for_a_file_is_never_opened() {
    let Some(l) = xfs() else { return };
    let dir = l.path().join("flip");
    let aux = l.path().join("aux");
    fs::create_dir(&dir).unwrap();
    fs::create_dir(&aux).unwrap();
    // The attack needs a directory someone other than root can change
    // (sdu trusts root-owned directories that only root can write to, like
    // /usr, and opens files there directly): make it world-writable and
    // sticky, like /tmp.
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o1777)).unwrap();
    const NAMES: usize = 8;
    let done = Arc::new(AtomicBool::new(false));
    let opened = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    for k in 0..NAMES {
        let fifo = aux.join(format!("fifo{k}"));
        rustix::fs::mkfifoat(CWD, &fifo, Mode::from_raw_mode(0o644)).unwrap();
        // The writer: each time its open returns, a reader opened the FIFO.
        let (done2, opened2, fifo2) = (done.clone(), opened.clone(), fifo.clone());
        threads.push(std::thread::spawn(move || {
            while !done2.load(Ordering::Relaxed) {
                if fs::OpenOptions::new().write(true).open(&fifo2).is_ok()
                    && !done2.load(Ordering::Relaxed)
                {
                    opened2.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    // One mutator (the machine has few cores): each x{k} is in turn a
    // regular file, the FIFO, a file...
    {
        let (done2, dir2, aux2) = (done.clone(), dir.clone(), aux.clone());
        threads.push(std::thread::spawn(move || {
            let mut i = 0usize;
            while !done2.load(Ordering::Relaxed) {
                i += 1;
                let k = i % NAMES;
                let (x, t) = (dir2.join(format!("x{k}")), dir2.join(".t"));
                let _ = fs::remove_file(&t);
                let made = if (i / NAMES) % 2 == 0 {
                    fs::hard_link(aux2.join(format!("fifo{k}")), &t)
                } else {
                    fs::write(&t, vec![5u8; 8192])
                };
                if made.is_ok() {
                    let _ = fs::rename(&t, &x);
                }
            }
        }));
    }
    let iters = env_u64("SDU_FIFO_ITERS", 200);
    for _ in 0..iters {
        sdu_checked(&args!["-a", &dir], 10);
    }
    done.store(true, Ordering::Relaxed);
    let n = opened.load(Ordering::Relaxed);
    // Release the writers still blocked in open.
    for k in 0..NAMES {
        let _ = rustix::fs::open(
            aux.join(format!("fifo{k}")),
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NONBLOCK,
            Mode::empty(),
        );
    }
    for t in threads {
        t.join().unwrap();
    }
    eprintln!("fifo swap: {iters} runs, the FIFO was opened {n} times");
    assert_eq!(
        n, 0,
        "sdu opened a FIFO swapped in for a regular file {n} times in {iters} runs"
    );
}
