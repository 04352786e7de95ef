//! `deleted_open` (src/df/open_deleted.rs, the `--df` row `deleted_open`):
//! a child process holds a deleted 5 MiB file on a fresh loopback ext4,
//! XFS or Btrfs; the function finds it with the child's pid, command, fd
//! and the file's `st_blocks × 512` taken before the unlink, and nothing
//! else on that filesystem. The independent check: the filesystem's used
//! space (statvfs; Btrfs's Data Used after `btrfs filesystem sync`) drops
//! by those bytes, within one block, when the child is killed. Each child
//! is killed and reaped by a guard, a failing test too.
//!
//! The module is compiled here from its source: it uses std, rustix and
//! sdu-sys only, and the library's facade has no room for a test hook.

#[path = "../../src/df/open_deleted.rs"]
#[allow(dead_code)]
mod open_deleted;

use std::fs::{self, File};
use std::io::{BufRead as _, BufReader, Write as _};
use std::os::fd::AsFd as _;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use open_deleted::{DeletedOpen, deleted_open};

use crate::util::*;

const SIZE: u64 = 5 << 20;

/// A child holding a deleted file: killed and reaped when dropped.
struct Holder(Child);

impl Holder {
    fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Kills the child and waits for it: its fds are closed once `wait`
    /// returns.
    fn end(mut self) {
        self.0.kill().unwrap();
        self.0.wait().unwrap();
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `sleep` (as `nobody` when `nobody`) with `file` open on its stdin, fd
/// 0; once it runs `sleep`, `file` is removed.
fn hold(file: &Path, nobody: bool) -> Holder {
    let mut c = if nobody {
        let mut c = Command::new("setpriv");
        c.args(nobody_args()).arg("sleep");
        c
    } else {
        Command::new("sleep")
    };
    let h = Holder(
        c.arg("600")
            .stdin(File::open(file).unwrap())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for_comm(h.pid(), "sleep");
    fs::remove_file(file).unwrap();
    h
}

/// A python3 child that maps `file` whole and closes its fd, then the
/// file is removed: a mapping holds it, no fd.
fn hold_by_mapping(file: &Path) -> Option<Holder> {
    const MAP: &str = "import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
fd = os.open(sys.argv[1], os.O_RDONLY)
a = libc.mmap(None, os.fstat(fd).st_size, 1, 1, fd, 0)
assert a not in (None, ctypes.c_void_p(-1).value), ctypes.get_errno()
os.close(fd)
print('mapped', flush=True)
time.sleep(600)
";
    let child = Command::new("python3")
        .args(["-c", MAP])
        .arg(file)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        return unavailable("python3 (a child that maps a file) cannot be run");
    };
    let out = child.stdout.take().unwrap();
    let h = Holder(child);
    let mut line = String::new();
    BufReader::new(out).read_line(&mut line).unwrap();
    assert_eq!(
        line.trim(),
        "mapped",
        "the python3 child did not map the file"
    );
    fs::remove_file(file).unwrap();
    Some(h)
}

fn wait_for_comm(pid: u32, want: &str) {
    let t = Instant::now();
    loop {
        let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim_end() == want {
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "pid {pid} never became {want}: {comm:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A file of `len` fresh (incompressible) bytes, flushed: its
/// `st_blocks × 512`. Allocated whole first (`fallocate`) and written in
/// place: a write past the end leaves XFS's speculative preallocation
/// beyond it (13 MiB allocated for 5 MiB, seen), trimmed later in the
/// background.
fn planted(path: &Path, len: u64) -> u64 {
    let mut f = File::create(path).unwrap();
    rustix::fs::fallocate(&f, rustix::fs::FallocateFlags::empty(), 0, len).unwrap();
    f.write_all(&fresh_bytes(len)).unwrap();
    f.sync_all().unwrap();
    drop(f);
    sync_fs(path.parent().unwrap());
    let b = fs::metadata(path).unwrap().blocks() * 512;
    assert!(
        b >= len && b <= len + 4096,
        "{}: {b} bytes allocated for {len}",
        path.display()
    );
    b
}

/// Used space once it has dropped by `bytes` (a block short allowed):
/// the last inode's close frees it in the background on XFS (inodegc)
/// and Btrfs (delayed iput, then a commit). 10 s at most.
fn used_after_drop(kind: FsKind, mnt: &Path, before: u64, bytes: u64) -> u64 {
    let t = Instant::now();
    loop {
        let now = used_at(kind, mnt);
        if before.saturating_sub(now) + 4096 >= bytes || t.elapsed() > Duration::from_secs(10) {
            return now;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The processes (kernel threads aside) whose `fd` directory or `maps`
/// this process may not read, counted with std alone. As root, on most
/// systems none; a sandbox's supervisor may refuse even root its `maps`.
fn unreadable() -> u32 {
    let denied =
        |r: std::io::Result<()>| r.is_err_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied);
    let mut n = 0;
    for e in fs::read_dir("/proc").unwrap().flatten() {
        let p = e.path();
        if !e.file_name().as_bytes().iter().all(u8::is_ascii_digit) {
            continue;
        }
        let kthread = fs::read_to_string(p.join("stat")).is_ok_and(|s| {
            let flags = s
                .rsplit_once(')')
                .and_then(|(_, r)| r.split_whitespace().nth(6));
            flags
                .and_then(|f| f.parse::<u64>().ok())
                .is_some_and(|f| f & 0x0020_0000 != 0)
        });
        if !kthread
            && (denied(fs::read_dir(p.join("fd")).map(drop))
                || denied(fs::read(p.join("maps")).map(drop)))
        {
            n += 1;
        }
    }
    n
}

fn of(mnt: &Path) -> DeletedOpen {
    deleted_open(File::open(mnt).unwrap().as_fd())
}

/// The holder `h` of `path` (`bytes` allocated) is the one file found on
/// `mnt`, by fd 0, exact; killing it frees `bytes` within a block.
fn check_one(kind: FsKind, mnt: &Path, path: &Path, bytes: u64, h: Holder) {
    let d = of(mnt);
    assert_eq!(d.files.len(), 1, "{d:#?}");
    let f = &d.files[0];
    assert_eq!(f.pid, h.pid());
    assert_eq!(f.comm, b"sleep");
    assert_eq!(f.fd, Some(0));
    assert_eq!(f.name, path.as_os_str().as_bytes());
    assert_eq!(f.bytes, bytes);
    assert_eq!(f.holders, 0);
    assert_eq!(f.shared, Some(false));
    assert_eq!(d.bytes, bytes);
    assert_eq!(
        (d.unreadable, d.hidden),
        (unreadable(), false),
        "as root, unreadable only where std cannot read either"
    );
    let before = used_at(kind, mnt);
    h.end();
    let after = used_after_drop(kind, mnt, before, bytes);
    let freed = before.saturating_sub(after);
    assert!(
        freed.abs_diff(bytes) <= 4096,
        "{kind:?}: ending the holder freed {freed} bytes, deleted_open said {bytes}"
    );
    let d = of(mnt);
    assert_eq!(
        (d.files.len(), d.bytes),
        (0, 0),
        "nothing is held any more: {d:#?}"
    );
}

/// A 5 MiB file held and deleted; beside it what must not count: a file
/// removed under one name but linked under another (its link reads
/// `(deleted)` too), and a 1 MiB memfd of this process.
fn held_file_is_found_and_freed(kind: FsKind) {
    let Some(lfs) = LoopFs::new(kind) else {
        return;
    };
    let mnt = lfs.path();
    let path = mnt.join("held");
    let bytes = planted(&path, SIZE);
    let linked = mnt.join("linked");
    planted(&linked, 1 << 20);
    fs::hard_link(&linked, mnt.join("other name")).unwrap();
    let _linked = hold(&linked, false);
    let mut memfd =
        File::from(rustix::fs::memfd_create("df_open", rustix::fs::MemfdFlags::CLOEXEC).unwrap());
    memfd.write_all(&fresh_bytes(1 << 20)).unwrap();
    let h = hold(&path, false);
    check_one(kind, mnt, &path, bytes, h);
    drop(memfd);
}

#[test]
fn held_file_is_found_and_freed_ext4() {
    held_file_is_found_and_freed(FsKind::Ext4);
}

#[test]
fn held_file_is_found_and_freed_xfs() {
    held_file_is_found_and_freed(FsKind::Xfs);
}

#[test]
fn held_file_is_found_and_freed_btrfs() {
    held_file_is_found_and_freed(FsKind::Btrfs);
}

/// Btrfs: a file in a subvolume (an `st_dev` of its own) counts for the
/// filesystem; one held on another Btrfs filesystem does not.
#[test]
fn btrfs_subvolume_counts_another_filesystem_not() {
    let (Some(lfs), Some(other)) = (LoopFs::new(FsKind::Btrfs), LoopFs::new(FsKind::Btrfs)) else {
        return;
    };
    let mnt = lfs.path();
    run(Command::new("btrfs")
        .args(["subvolume", "create"])
        .arg(mnt.join("sub")))
    .assert_ok();
    let path = mnt.join("sub/held");
    let bytes = planted(&path, SIZE);
    assert_ne!(
        fs::metadata(&path).unwrap().dev(),
        fs::metadata(mnt).unwrap().dev(),
        "a subvolume has an st_dev of its own"
    );
    let elsewhere = other.path().join("elsewhere");
    let other_bytes = planted(&elsewhere, 3 << 20);
    let _other = hold(&elsewhere, false);
    let h = hold(&path, false);
    let o = of(other.path());
    assert_eq!((o.files.len(), o.bytes), (1, other_bytes), "{o:#?}");
    check_one(FsKind::Btrfs, mnt, &path, bytes, h);
}

/// A file whose data a reflink shares: `shared` says so, and ending its
/// holder frees nothing of it (the copy still holds the data).
fn reflinked_is_shared(kind: FsKind) {
    let Some(lfs) = LoopFs::new(kind) else {
        return;
    };
    let mnt = lfs.path();
    let path = mnt.join("held");
    let bytes = planted(&path, SIZE);
    run(Command::new("cp")
        .arg("--reflink=always")
        .arg(&path)
        .arg(mnt.join("copy")))
    .assert_ok();
    sync_fs(mnt);
    let h = hold(&path, false);
    let d = of(mnt);
    assert_eq!(d.files.len(), 1, "{d:#?}");
    assert_eq!((d.files[0].bytes, d.files[0].shared), (bytes, Some(true)));
    let before = used_at(kind, mnt);
    h.end();
    std::thread::sleep(Duration::from_millis(500));
    let after = used_at(kind, mnt);
    assert!(
        before.abs_diff(after) < SIZE / 2,
        "{kind:?}: a shared file's end freed {} of {bytes}",
        before.saturating_sub(after)
    );
}

#[test]
fn reflinked_is_shared_btrfs() {
    reflinked_is_shared(FsKind::Btrfs);
}

#[test]
fn reflinked_is_shared_xfs() {
    reflinked_is_shared(FsKind::Xfs);
}

/// A file mapped with no fd left counts (as root, through
/// `/proc/PID/map_files`), and frees when its mapping goes; a second process holding it by an fd makes one
/// file with one other holder, shown by the fd.
fn mapped_file_without_fd_is_found_and_freed(kind: FsKind) {
    let Some(lfs) = LoopFs::new(kind) else {
        return;
    };
    let mnt = lfs.path();
    let dir = if kind == FsKind::Btrfs {
        run(Command::new("btrfs")
            .args(["subvolume", "create"])
            .arg(mnt.join("sub")))
        .assert_ok();
        mnt.join("sub")
    } else {
        mnt.to_path_buf()
    };
    let path = dir.join("mapped");
    let bytes = planted(&path, SIZE);
    let Some(m) = hold_by_mapping(&path) else {
        return;
    };
    let d = of(mnt);
    assert_eq!(d.files.len(), 1, "{d:#?}");
    let f = &d.files[0];
    assert_eq!((f.pid, f.fd, f.bytes, f.holders), (m.pid(), None, bytes, 0));
    assert_eq!(f.name, path.as_os_str().as_bytes());
    assert_eq!(d.unreadable, unreadable());

    // The same file held by fd too, by a process the mapping's holder
    // never knew: one file, two holders.
    let both = dir.join("both");
    let both_bytes = planted(&both, 2 << 20);
    let fd_holder = Holder(
        Command::new("sleep")
            .arg("600")
            .stdin(File::open(&both).unwrap())
            .spawn()
            .unwrap(),
    );
    wait_for_comm(fd_holder.pid(), "sleep");
    let m2 = hold_by_mapping(&both).unwrap();
    let d = of(mnt);
    assert_eq!(d.files.len(), 2, "{d:#?}");
    let f = d.files.iter().find(|f| f.bytes == both_bytes).unwrap();
    assert_eq!((f.pid, f.fd, f.holders), (fd_holder.pid(), Some(0), 1));
    assert_eq!(d.bytes, bytes + both_bytes);

    let before = used_at(kind, mnt);
    m.end();
    let after = used_after_drop(kind, mnt, before, bytes);
    assert!(before.saturating_sub(after).abs_diff(bytes) <= 4096);
    m2.end();
    fd_holder.end();
}

#[test]
fn mapped_file_without_fd_is_found_and_freed_ext4() {
    mapped_file_without_fd_is_found_and_freed(FsKind::Ext4);
}

/// On Btrfs in a subvolume: `/proc/PID/maps` names the superblock's
/// device, the file's `st_dev` is the subvolume's.
#[test]
fn mapped_file_without_fd_is_found_and_freed_btrfs() {
    mapped_file_without_fd_is_found_and_freed(FsKind::Btrfs);
}

/// As `nobody` (this thread alone drops to it: credentials are per thread
/// on Linux): a root holder's fds cannot be read and count in
/// `unreadable`; a holder of nobody's own is found, exact.
#[test]
fn as_nobody_root_holders_are_unreadable() {
    let Some(lfs) = LoopFs::new(FsKind::Ext4) else {
        return;
    };
    let mnt = lfs.path();
    let roots = mnt.join("root's");
    planted(&roots, SIZE);
    let mine = mnt.join("nobody's");
    let mine_bytes = planted(&mine, 2 << 20);
    fs::set_permissions(&mine, fs::Permissions::from_mode(0o644)).unwrap();
    let _root_holder = hold(&roots, false);
    let nobody_holder = hold(&mine, true);
    let fs_fd = File::open(mnt).unwrap();
    let d = as_nobody(|| deleted_open(fs_fd.as_fd()));
    assert!(d.unreadable > 0, "{d:#?}");
    assert!(d.at_least());
    assert_eq!(d.files.len(), 1, "{d:#?}");
    let f = &d.files[0];
    assert_eq!(
        (f.pid, f.fd, f.bytes),
        (nobody_holder.pid(), Some(0), mine_bytes)
    );
    assert_eq!(d.bytes, mine_bytes);
    // As root both are found.
    let d = of(mnt);
    assert_eq!(d.files.len(), 2, "{d:#?}");
    assert_eq!(d.unreadable, unreadable());

    // A procfs that hides what nobody may not trace: root's holder is
    // not even listed, and `hidden` says so.
    let dir = TestDir::new();
    let hiding = dir.path().join("proc");
    fs::create_dir(&hiding).unwrap();
    run(Command::new("mount")
        .args(["-t", "proc", "-o", "hidepid=invisible", "proc"])
        .arg(&hiding))
    .assert_ok();
    let _mounted = Unmount(hiding.clone());
    let at = std::ffi::CString::new(hiding.as_os_str().as_bytes()).unwrap();
    let d = as_nobody(|| open_deleted::deleted_open_in(&at, fs_fd.as_fd()));
    assert!(d.hidden && d.at_least(), "{d:#?}");
    assert_eq!(
        d.files.iter().map(|f| f.pid).collect::<Vec<_>>(),
        [nobody_holder.pid()]
    );
    // Root sees through it.
    let d = open_deleted::deleted_open_in(&at, fs_fd.as_fd());
    assert_eq!((d.files.len(), d.hidden), (2, false), "{d:#?}");
}

/// Unmounts a mount of the test's when dropped.
struct Unmount(std::path::PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        umount_retrying(&self.0);
    }
}

/// `f` run on a thread of its own that drops to `nobody` (credentials are
/// per thread on Linux: the test's other threads stay root).
fn as_nobody<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            use rustix::process::{Gid, Uid};
            let (u, g) = (Uid::from_raw(65534), Gid::from_raw(65534));
            rustix::thread::set_thread_groups(&[]).unwrap();
            rustix::thread::set_thread_res_gid(g, g, g).unwrap();
            rustix::thread::set_thread_res_uid(u, u, u).unwrap();
            f()
        })
        .join()
        .unwrap()
    });
    // A thread's uid change made the process not dumpable; put it back
    // (its /proc files owned by its user again).
    rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::Dumpable).unwrap();
    r
}

/// `sdu --df --json`'s `deleted_open` row on ext4: the held file's bytes,
/// the holder's pid, command and fd in its item; exact unless some
/// process could not be read (then "at least", with why); 0 once the
/// holder is gone.
#[test]
fn df_json_row() {
    let Some(lfs) = LoopFs::new(FsKind::Ext4) else {
        return;
    };
    let mnt = lfs.path();
    let path = mnt.join("held");
    let bytes = planted(&path, SIZE);
    let h = hold(&path, false);
    let row = |mnt: &Path| {
        let out = sdu_in(mnt, true, &["--df", "--json"]);
        assert_eq!(out.code, Some(0), "{out:?}");
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let t = &doc["filesystems"][0];
        (t["rows"].as_array().unwrap().iter())
            .find(|r| r["row"] == "deleted_open")
            .unwrap()
            .clone()
    };
    let r = row(mnt);
    let unread = unreadable();
    assert_eq!(r["bytes"].as_u64(), Some(bytes), "{r}");
    assert_eq!(r["exact"], unread == 0, "{r}");
    if unread > 0 {
        assert_eq!(r["how"], "at least", "{r}");
        assert!(
            r["why"].as_str().unwrap().contains("could not be read"),
            "{r}"
        );
    }
    let items = r["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{r}");
    assert_eq!(items[0]["name"], path.to_str().unwrap());
    assert_eq!(items[0]["bytes"].as_u64(), Some(bytes));
    let note = items[0]["note"].as_str().unwrap();
    assert!(
        note.starts_with(&format!("pid {} (sleep) fd 0", h.pid())),
        "{note}"
    );
    h.end();
    let r = row(mnt);
    assert_eq!(r["bytes"].as_u64(), Some(0), "{r}");
}
