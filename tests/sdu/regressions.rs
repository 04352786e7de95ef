//! Regressions found while restructuring, each named after what it guards.

use std::fs;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::*;

/// A directory replaced between the statx that counted it and the open
/// that reads it is reported ("replaced during the scan", exit 1), never
/// read in its place and never skipped quietly. strace holds the open of
/// `victim` for two seconds while the test swaps another directory in.
#[test]
fn directory_replaced_between_stat_and_open_is_reported() {
    if Command::new("strace").arg("-V").output().is_err() {
        return unavailable("strace is not installed").unwrap_or(());
    }
    let t = TestDir::new();
    let root = t.mkdir("root");
    fs::create_dir_all(root.join("victim/inside")).unwrap();
    fs::write(root.join("victim/inside/f"), vec![1u8; 100_000]).unwrap();
    let trace = t.path().join("trace");
    let child = Command::new("strace")
        .current_dir(t.path())
        .args(["-f", "-qq", "-o"])
        .arg(&trace)
        .args(["-P", "victim", "-e", "trace=openat"])
        .args(["-e", "inject=openat:delay_enter=2000000"])
        .arg(sdu_bin())
        .args(["-j1", "--json", "root"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Swap only once sdu is held in the open of the directory it stat-ed.
    let start = Instant::now();
    while !fs::read_to_string(&trace)
        .is_ok_and(|s| s.contains("openat(") && s.contains("\"victim\""))
    {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "sdu never opened victim"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    fs::rename(root.join("victim"), root.join("victim.old")).unwrap();
    fs::create_dir(root.join("victim")).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(
        stderr.contains("sdu: cannot read directory 'root/victim': replaced during the scan"),
        "stderr: {stderr}"
    );
    // Nothing of the new directory, nor of the old one's contents, was
    // counted under the old one's name.
    let report = crate::json::parse(&out.stdout);
    let listed = paths(&report);
    assert!(
        listed
            .iter()
            .all(|p| !p.to_string_lossy().contains("inside")),
        "{listed:?}"
    );
}

/// A thread pool that cannot start (RLIMIT_NPROC reached) ends with a
/// message and exit 2, not SIGABRT.
#[test]
fn thread_pool_that_cannot_start_is_a_message_and_exit_2() {
    if !is_root() {
        return unavailable("needs root to run as nobody with a process limit").unwrap_or(());
    }
    let t = TestDir::new();
    let out = run(Command::new("setpriv")
        .args(nobody_args())
        .args(["prlimit", "--nproc=1"])
        .arg(sdu_bin())
        .arg("-s")
        .arg(t.path()));
    assert_eq!(out.code, Some(2), "{out:?}");
    assert_eq!(
        out.stderr.trim_end(),
        "sdu: cannot start worker threads: Resource temporarily unavailable"
    );
}

/// Under `-L`, a reflinked file reached through a symlink is mapped like
/// any other: it used to be opened with `O_NOFOLLOW`, fail with ELOOP, and
/// be counted as exclusive without a word.
#[test]
fn file_behind_a_symlink_is_mapped_under_dereference() {
    let Some(fs) = LoopFs::new(FsKind::Xfs) else {
        return;
    };
    let root = fs.path().join("t");
    fs::create_dir_all(root.join("d")).unwrap();
    write_file(&root.join("orig"), 256 * 1024);
    let src = fs::File::open(root.join("orig")).unwrap();
    let dst = fs::File::create(root.join("d/clone")).unwrap();
    rustix::fs::ioctl_ficlone(&dst, &src).unwrap();
    drop((src, dst));
    std::os::unix::fs::symlink("d/clone", root.join("link")).unwrap();
    sync_fs(fs.path());
    let plain = sdu_json(&crate::args!["-a", &root]);
    let deref = sdu_json(&crate::args!["-a", "-L", &root]);
    let shared = |r: &crate::json::Report, name: &str| {
        r.entries
            .iter()
            .find(|e| e.path == root.join(name).as_os_str())
            .map(|e| (e.total, e.shared))
            .unwrap_or_else(|| panic!("no {name} in {:?}", paths(r)))
    };
    assert_eq!(shared(&plain, "d/clone"), (256 * 1024, 256 * 1024));
    // Through the symlink: the same inode, the same shared extents.
    assert_eq!(shared(&deref, "link"), (256 * 1024, 256 * 1024));
    let top = |r: &crate::json::Report| r.entries.last().map(|e| (e.shared, e.exclusive));
    assert_eq!(top(&deref), top(&plain));
}
