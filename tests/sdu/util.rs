//! Test harness: running sdu and du, temp trees, loopback filesystems, and
//! the entry-by-entry comparison of sdu's figures with du's.

use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::{Seek, SeekFrom, Write as _};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rustix::fs::{CWD, Mode, OFlags};

use crate::json::{self, Entry, Kind, Report};

/// Builds a `Vec<OsString>` from a mix of `&str`, `&Path`, `PathBuf`, ...
#[macro_export]
macro_rules! args {
    ($($a:expr),* $(,)?) => {
        vec![$(::std::ffi::OsStr::new(&$a).to_owned()),*] as Vec<::std::ffi::OsString>
    };
}

pub fn sdu_bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_sdu"))
}

/// What a finished process left behind.
pub struct Output {
    pub stdout: Vec<u8>,
    pub stderr: String,
    /// None when killed by a signal.
    pub code: Option<i32>,
    pub cmdline: String,
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.stdout.len().min(3000);
        write!(
            f,
            "`{}`: exit {:?}\nstderr:\n{}\nstdout ({} bytes, start):\n{}",
            self.cmdline,
            self.code,
            self.stderr,
            self.stdout.len(),
            String::from_utf8_lossy(&self.stdout[..n])
        )
    }
}

impl Output {
    pub fn stdout_str(&self) -> &str {
        std::str::from_utf8(&self.stdout).expect("stdout is not UTF-8")
    }

    /// Panics with the whole story unless exit 0 and an empty stderr.
    pub fn assert_ok(&self) -> &Self {
        assert!(
            self.code == Some(0) && self.stderr.is_empty(),
            "`{}` failed: exit {:?}\nstderr:\n{}\nstdout (start):\n{}",
            self.cmdline,
            self.code,
            self.stderr,
            String::from_utf8_lossy(&self.stdout[..self.stdout.len().min(2000)])
        );
        self
    }
}

pub fn run(cmd: &mut Command) -> Output {
    let cmdline = format!("{cmd:?}");
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmdline}: {e}"));
    Output {
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code(),
        cmdline,
    }
}

/// `run`, but a process still running after `secs` is killed and the test
/// fails (for cases where a bug would hang, such as a symlink cycle).
pub fn run_with_timeout(cmd: &mut Command, secs: u64) -> Output {
    let cmdline = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmdline}: {e}"));
    // Drain the pipes in threads so that a chatty child cannot block.
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut so, &mut v).map(|_| v)
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut se, &mut v).map(|_| v)
    });
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed().as_secs() >= secs {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`{cmdline}` still running after {secs} s: killed");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Output {
        stdout: t_out.join().unwrap().unwrap(),
        stderr: String::from_utf8_lossy(&t_err.join().unwrap().unwrap()).into_owned(),
        code: status.code(),
        cmdline,
    }
}

/// Runs sdu; a run longer than 5 minutes (a hang, say on a FIFO) fails.
pub fn sdu(args: &[OsString]) -> Output {
    run_with_timeout(Command::new(sdu_bin()).args(args), 300)
}

/// `sdu ARGS`, which must succeed silently; returns stdout.
pub fn sdu_ok(args: &[OsString]) -> Vec<u8> {
    let out = sdu(args);
    out.assert_ok();
    out.stdout
}

/// `sdu --json ARGS`, which must succeed silently, parsed strictly.
pub fn sdu_json(args: &[OsString]) -> Report {
    sdu_json_raw(args).1
}

/// `sdu --json ARGS`, which must succeed silently: the bytes and the
/// strictly parsed document.
pub fn sdu_json_raw(args: &[OsString]) -> (Vec<u8>, Report) {
    let mut a = args!["--json"];
    a.extend_from_slice(args);
    let out = sdu_ok(&a);
    let r = json::parse(&out);
    check_header_fields(&r);
    assert_eq!(r.errors, 0, "errors in a run that exited 0 silently");
    (out, r)
}

/// `sdu --json ARGS`, which must succeed with nothing on stderr but the
/// note on compressed data counted uncompressed (its bytes are the
/// document's `compressed_logical`).
pub fn sdu_json_compressed(args: &[OsString]) -> Report {
    sdu_json_raw_compressed(args).1
}

/// [`sdu_json_compressed`], with the document's bytes.
pub fn sdu_json_raw_compressed(args: &[OsString]) -> (Vec<u8>, Report) {
    let mut a = args!["--json"];
    a.extend_from_slice(args);
    let out = sdu(&a);
    assert_eq!(out.code, Some(0), "{out:?}");
    let r = json::parse(&out.stdout);
    check_header_fields(&r);
    if r.compressed_logical == 0 {
        assert_eq!(out.stderr, "", "{out:?}");
    } else {
        let note = format!("sdu: {} bytes of compressed data in ", r.compressed_logical);
        assert!(
            out.stderr.starts_with(&note) && out.stderr.lines().count() == 1,
            "{out:?}"
        );
    }
    (out.stdout, r)
}

/// The fixed fields of every document.
pub fn check_header_fields(r: &Report) {
    assert_eq!(r.schema, 1, "schema");
    assert_eq!(r.version, env!("CARGO_PKG_VERSION"), "version");
}

/// `sdu ARGS` under `ulimit -n LIMIT`.
pub fn sdu_with_fd_limit(limit: u32, args: &[OsString]) -> Output {
    run(Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -n {limit} && exec \"$0\" \"$@\""))
        .arg(sdu_bin())
        .args(args))
}

/// Whether loud failure is wanted instead of a skip (CI sets `CI=true`).
pub fn in_ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// A tmpfs mounted for a test; unmounted on drop.
pub struct Tmpfs(pub PathBuf);

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// A test that cannot run here: fails in CI, else says so loudly and
/// returns None. Written to fd 2 directly, bypassing the test harness's
/// capture, so that a skip is seen even when the test passes.
pub fn unavailable<T>(why: &str) -> Option<T> {
    if in_ci() {
        panic!("cannot set up the test (CI=true, so this fails): {why}");
    }
    let _ = writeln!(
        std::io::stderr(),
        "\n********** SKIPPED: {why} (set CI=true to make this a failure) **********"
    );
    None
}

pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// A temporary directory removed with `rm -rf --one-file-system`, which,
/// unlike `std::fs::remove_dir_all`, copes with trees deeper than
/// PATH_MAX and never descends into a mount left behind by a failed test.
pub struct TestDir {
    path: PathBuf,
}

impl TestDir {
    pub fn new() -> TestDir {
        let t = tempfile::Builder::new()
            .prefix("sdu-test-")
            .tempdir()
            .expect("tempdir");
        TestDir { path: t.keep() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `self/name`, created as a directory.
    pub fn mkdir(&self, name: &str) -> PathBuf {
        let p = self.path.join(name);
        fs::create_dir(&p).unwrap();
        p
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let st = Command::new("rm")
            .arg("-rf")
            .arg("--one-file-system")
            .arg(&self.path)
            .status();
        if !matches!(st, Ok(s) if s.success()) {
            let _ = writeln!(
                std::io::stderr(),
                "warning: could not remove {}",
                self.path.display()
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Loopback filesystems

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsKind {
    Xfs,
    Btrfs,
    /// A fresh ext4, for big trees (see `Scratch`).
    Ext4,
}

impl FsKind {
    fn fstype(self) -> &'static str {
        match self {
            FsKind::Xfs => "xfs",
            FsKind::Btrfs => "btrfs",
            FsKind::Ext4 => "ext4",
        }
    }
}

/// Where the big trees (200,000 files, 5,000 levels, 10,000-file trees)
/// are built: a fresh ext4 loopback when root, else a plain temp dir.
///
/// Why not the machine's own filesystem: there, creating and removing
/// hundreds of thousands of inodes took 80+ s of kernel CPU per 200,000
/// files (ext4's `recently_deleted` scan of the inode bitmap, after
/// earlier tests and other users removed trees), against 7 s on a fresh
/// ext4; and throwing away an image beats `rm -rf` of the tree. The
/// machine's own filesystem is still covered by the standard-tree tests.
pub enum Scratch {
    Loop(LoopFs),
    Dir(TestDir),
}

impl Scratch {
    pub fn new() -> Scratch {
        match LoopFs::try_make(FsKind::Ext4, None) {
            Ok(l) => Scratch::Loop(l),
            Err(e) if in_ci() => panic!("cannot make the scratch ext4 (CI=true): {e}"),
            Err(e) => {
                let _ = writeln!(
                    std::io::stderr(),
                    "note: big trees go to a plain temp dir (slower): {e}"
                );
                Scratch::Dir(TestDir::new())
            }
        }
    }

    pub fn path(&self) -> &Path {
        match self {
            Scratch::Loop(l) => l.path(),
            Scratch::Dir(d) => d.path(),
        }
    }

    /// `self/name`, created as a directory.
    pub fn mkdir(&self, name: &str) -> PathBuf {
        let p = self.path().join(name);
        fs::create_dir(&p).unwrap();
        p
    }
}

/// A filesystem in a sparse image file, attached to a loop device and
/// mounted. Drop unmounts (lazily if it must) and detaches the device.
pub struct LoopFs {
    kind: FsKind,
    dev: String,
    mnt: PathBuf,
    // Holds the image (and the default mount dir); dropped after `drop`.
    _tmp: TestDir,
}

impl LoopFs {
    /// Makes and mounts a fresh filesystem on a temp mount directory.
    pub fn new(kind: FsKind) -> Option<LoopFs> {
        LoopFs::make(kind, None)
    }

    /// Same, mounted on `mnt` (an existing empty directory, e.g. inside a
    /// tree under test). The LoopFs must be dropped before `mnt`'s tree is
    /// removed: declare it after the tree's TestDir.
    pub fn new_at(kind: FsKind, mnt: &Path) -> Option<LoopFs> {
        LoopFs::make(kind, Some(mnt))
    }

    pub fn path(&self) -> &Path {
        &self.mnt
    }

    /// The loop device it is mounted from.
    pub fn device(&self) -> &str {
        &self.dev
    }

    fn make(kind: FsKind, mnt: Option<&Path>) -> Option<LoopFs> {
        LoopFs::try_make(kind, mnt).map_or_else(|e| unavailable(&e), Some)
    }

    fn try_make(kind: FsKind, mnt: Option<&Path>) -> Result<LoopFs, String> {
        let name = format!("{kind:?}");
        if !is_root() {
            return Err(format!("a {name} loopback filesystem needs root"));
        }
        let tmp = TestDir::new();
        let img = tmp.path().join("fs.img");
        // 512 MiB: XFS wants at least 300 MiB; sparse, so it costs only
        // what is written.
        let f = File::create(&img).unwrap();
        f.set_len(512 << 20).unwrap();
        drop(f);
        let mnt = match mnt {
            Some(m) => m.to_owned(),
            None => tmp.mkdir("mnt"),
        };
        let sh = |cmd: &mut Command| -> Result<String, String> {
            match cmd.stdin(Stdio::null()).output() {
                Ok(o) if o.status.success() => {
                    Ok(String::from_utf8_lossy(&o.stdout).trim().to_owned())
                }
                Ok(o) => Err(format!(
                    "{cmd:?}: {}: {}",
                    o.status,
                    String::from_utf8_lossy(&o.stderr).trim()
                )),
                Err(e) => Err(format!("{cmd:?}: {e}")),
            }
        };
        let mut mkfs = match kind {
            FsKind::Xfs => Command::new("mkfs.xfs"),
            FsKind::Btrfs => Command::new("mkfs.btrfs"),
            FsKind::Ext4 => Command::new("mkfs.ext4"),
        };
        match kind {
            FsKind::Xfs => mkfs.args(["-q", "-f", "-m", "reflink=1"]),
            FsKind::Btrfs => mkfs.args(["-q", "-f"]),
            // Room for the 200,000-entry directory (the default would give
            // 32,768 inodes); no discard of the image at mkfs.
            FsKind::Ext4 => mkfs.args(["-q", "-F", "-N", "300000", "-E", "nodiscard"]),
        };
        sh(mkfs.arg(&img)).map_err(|e| format!("cannot make {name}: {e}"))?;
        let dev = sh(Command::new("losetup").args(["--find", "--show"]).arg(&img))
            .map_err(|e| format!("cannot attach a loop device: {e}"))?;
        if let Err(e) = sh(Command::new("mount")
            .args(["-t", kind.fstype(), &dev])
            .arg(&mnt))
        {
            let _ = Command::new("losetup").args(["-d", &dev]).status();
            return Err(format!("cannot mount {name}: {e}"));
        }
        Ok(LoopFs {
            kind,
            dev,
            mnt,
            _tmp: tmp,
        })
    }

    /// Unmounts and mounts again, so that delayed allocation and XFS's
    /// speculative preallocation are settled and `st_blocks` cannot change
    /// between the sdu run and the du runs being compared.
    pub fn settle(&self) {
        let fstype = self.kind.fstype();
        // A just-used mount can be briefly busy (a child of a concurrent
        // test still closing, btrfs's background work): retry a while.
        let mut tries = 0;
        loop {
            let out = run(Command::new("umount").arg(&self.mnt));
            if out.code == Some(0) {
                break;
            }
            tries += 1;
            assert!(
                tries < 50,
                "umount {} keeps failing: {out:?}",
                self.mnt.display()
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        run(Command::new("mount")
            .args(["-t", fstype, &self.dev])
            .arg(&self.mnt))
        .assert_ok();
    }
}

impl Drop for LoopFs {
    fn drop(&mut self) {
        // Every Btrfs tree the suite builds, as its test leaves it: root's
        // tree search gives what FIEMAP gives (checked before unmounting,
        // failed after).
        let searched = (self.kind == FsKind::Btrfs && !std::thread::panicking())
            .then(|| search_matches_fiemap(&self.mnt));
        let ok = |c: &mut Command| {
            c.stdin(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        if !ok(Command::new("umount").arg(&self.mnt)) {
            let _ = writeln!(
                std::io::stderr(),
                "warning: umount {} failed, unmounting lazily",
                self.mnt.display()
            );
            ok(Command::new("umount").arg("-l").arg(&self.mnt));
        }
        // After a lazy unmount the device may still be busy: -d then sets
        // autoclear and the kernel detaches it when the last user goes.
        if !ok(Command::new("losetup").args(["-d", &self.dev])) {
            let _ = writeln!(std::io::stderr(), "warning: losetup -d {} failed", self.dev);
        }
        if let Some(Err(e)) = searched {
            panic!("{e}");
        }
    }
}

/// `sdu --json -a -x PATH` gives the same document, messages and exit
/// status with the Btrfs tree search (as root, the default), with
/// `--fiemap`, and with `--fiemap --map-each-copy -j1`, and the search was
/// used. Where some data is compressed
/// (which the search counts at its size on disk), the same entries with
/// the same total, apparent size and counts.
pub fn assert_search_matches_fiemap(path: &Path) {
    if let Err(e) = search_matches_fiemap(path) {
        panic!("{e}");
    }
}

/// [`assert_search_matches_fiemap`], as a result.
pub fn search_matches_fiemap(path: &Path) -> Result<(), String> {
    let go = |extra: &[&str]| {
        let out = sdu(&{
            let mut a = args!["--json", "-a", "-x", "--stats"];
            a.extend(extra.iter().map(OsString::from));
            a.push(path.into());
            a
        });
        let (mut msgs, mut stats) = (Vec::new(), String::new());
        let mut in_stats = false;
        for l in out.stderr.lines() {
            in_stats |= l == "sdu stats:";
            if in_stats {
                stats.push_str(l);
                stats.push('\n');
            } else {
                msgs.push(l.to_string());
            }
        }
        msgs.sort();
        (out, msgs, stats)
    };
    let (fast, fast_msgs, stats) = go(&[]);
    let (slow, slow_msgs, _) = go(&["--fiemap"]);
    // Without root, a file unchanged across snapshots is mapped once and
    // its other copies credited with its extents: the same figures as
    // mapping every copy, on one thread.
    let (each, each_msgs, _) = go(&["--fiemap", "--map-each-copy", "-j1"]);
    if !(each.stdout == slow.stdout && each.code == slow.code && each_msgs == slow_msgs) {
        return Err(format!(
            "FIEMAP once per unchanged inode and FIEMAP on every copy differ on {}:\n{slow:?}\n{each:?}",
            path.display()
        ));
    }
    // Compressed data: the tree search counts it at its size on disk, FIEMAP
    // at its logical length: only what does not depend on it must agree.
    let compressed = slow.code == Some(0) && json::parse(&slow.stdout).compressed_logical > 0;
    if compressed {
        let plain = |o: &Output| -> Vec<(OsString, u64, u64, u64, u64)> {
            json::parse(&o.stdout)
                .entries
                .into_iter()
                .map(|e| (e.path, e.apparent, e.total, e.files, e.dirs))
                .collect()
        };
        if plain(&fast) != plain(&slow) || fast.code != slow.code {
            return Err(format!(
                "tree search and FIEMAP differ on {} (compressed) in total, apparent, files or dirs:\n{fast:?}\n{slow:?}",
                path.display()
            ));
        }
    } else if !(fast.stdout == slow.stdout && fast.code == slow.code && fast_msgs == slow_msgs) {
        return Err(format!(
            "tree search and FIEMAP differ on {}:\n{fast:?}\n{slow:?}",
            path.display()
        ));
    }
    // As root the tree stands in for getdents and statx: every entry below
    // the root came from it, unless it is another subvolume's root.
    let listed = stat_value(&stats, "entries read from the tree (Btrfs, root)");
    let below = json::parse(&fast.stdout).entries.len().saturating_sub(1) as u64;
    if fast.code == Some(0) && below > 0 && listed == 0 {
        return Err(format!(
            "the tree did not list {} ({below} entries below it):\n{stats}",
            path.display()
        ));
    }
    let searched = stat_value(&stats, "files read by tree search (Btrfs, root)");
    let mapped = stat_value(&stats, "files mapped (FIEMAP)");
    let undecided = stat_value(&stats, "tree search undecided, mapped with FIEMAP");
    // Every file mapped went to the tree search first (FIEMAP only for
    // those it could not decide).
    if mapped != undecided {
        return Err(format!(
            "the tree search was not used on {} ({searched} files read by it):\n{stats}",
            path.display()
        ));
    }
    Ok(())
}

/// A value of `--stats` (`  files mapped (FIEMAP)  12` → 12).
pub fn stat_value(stderr: &str, key: &str) -> u64 {
    let line = stderr
        .lines()
        .find(|l| l.trim_start().starts_with(key))
        .unwrap_or_else(|| panic!("no {key:?} line in --stats:\n{stderr}"));
    let rest = &line.trim_start()[key.len()..];
    rest.split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad --stats line {line:?}"))
}

/// Flushes the filesystem holding `path`: delayed allocation would
/// otherwise let `st_blocks` move between two measurements.
pub fn sync_fs(path: &Path) {
    let fd = rustix::fs::open(path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()).unwrap();
    rustix::fs::syncfs(&fd).unwrap();
}

// ---------------------------------------------------------------------------
// Tree builders

/// Writes `len` bytes of incompressible, non-repeating data (so no
/// filesystem can compress or dedupe it behind our back).
pub fn write_file(path: &Path, len: usize) {
    let mut f = File::create(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15 ^ len as u64 ^ path.as_os_str().len() as u64;
    let mut buf = Vec::with_capacity(len);
    while buf.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        buf.extend_from_slice(&x.to_le_bytes());
    }
    buf.truncate(len);
    f.write_all(&buf).unwrap();
}

/// A sparse file: `len` bytes long with `data` bytes written at each offset.
pub fn write_sparse(path: &Path, len: u64, data: &[(u64, usize)]) {
    let mut f = File::create(path).unwrap();
    f.set_len(len).unwrap();
    for &(off, n) in data {
        f.seek(SeekFrom::Start(off)).unwrap();
        f.write_all(&vec![0xa5; n]).unwrap();
    }
}

/// The standard tree, made inside the existing directory `root`:
/// nested dirs, files of many sizes, empty files and dirs, sparse files,
/// hardlinks within one directory, across directories (one in a sibling
/// subtree, one at the root), symlinks (to a file, to a dir, dangling),
/// names with spaces, and `.log` files for `--exclude`.
///
/// ```text
/// root/
///   top.bin  app.log  hl_root (=x/shared.bin)  empty_file
///   a/  small.txt  medium.bin  empty  hl_pair1  hl_pair2 (same inode)  pipe (FIFO)
///       b/  sparse_hole  sparse_tail  sparse_head  debug.log
///           c/  deep.bin  hl_cross (=x/shared.bin)
///   x/  shared.bin  big.bin  three_1 three_2 three_3 (one inode, 3 links)
///   y/inner/  hl_sib (=x/shared.bin)
///   with space/  file with space.txt  sub dir/ f
///   empty_dir/
///   old.log/  inside
///   links/  to_file -> ../a/small.txt  to_dir -> ../a  dangling -> nowhere
/// ```
pub fn standard_tree(root: &Path) {
    let p = |s: &str| root.join(s);
    for d in [
        "a/b/c",
        "x",
        "y/inner",
        "with space/sub dir",
        "empty_dir",
        "old.log",
        "links",
    ] {
        fs::create_dir_all(p(d)).unwrap();
    }
    write_file(&p("top.bin"), 123_457);
    write_file(&p("app.log"), 9_000);
    fs::write(p("empty_file"), b"").unwrap();
    write_file(&p("a/small.txt"), 100);
    write_file(&p("a/medium.bin"), 100_001);
    fs::write(p("a/empty"), b"").unwrap();
    write_file(&p("a/hl_pair1"), 20_000);
    fs::hard_link(p("a/hl_pair1"), p("a/hl_pair2")).unwrap();
    write_sparse(&p("a/b/sparse_hole"), 10 << 20, &[]);
    write_sparse(&p("a/b/sparse_tail"), (5 << 20) + 4096, &[(5 << 20, 4096)]);
    write_sparse(&p("a/b/sparse_head"), 1 << 20, &[(0, 8192)]);
    write_file(&p("a/b/debug.log"), 3_000);
    write_file(&p("a/b/c/deep.bin"), 50_000);
    write_file(&p("x/shared.bin"), 30_000);
    fs::hard_link(p("x/shared.bin"), p("a/b/c/hl_cross")).unwrap();
    fs::hard_link(p("x/shared.bin"), p("y/inner/hl_sib")).unwrap();
    fs::hard_link(p("x/shared.bin"), p("hl_root")).unwrap();
    write_file(&p("x/big.bin"), (1 << 20) + 1);
    write_file(&p("x/three_1"), 7_000);
    fs::hard_link(p("x/three_1"), p("x/three_2")).unwrap();
    fs::hard_link(p("x/three_1"), p("x/three_3")).unwrap();
    write_file(&p("with space/file with space.txt"), 5_555);
    write_file(&p("with space/sub dir/f"), 2_048);
    write_file(&p("old.log/inside"), 40_000);
    symlink("../a/small.txt", p("links/to_file")).unwrap();
    symlink("../a", p("links/to_dir")).unwrap();
    symlink("nowhere", p("links/dangling")).unwrap();
    // Type "other"; and opening it (for FIEMAP, say) would block forever.
    rustix::fs::mkfifoat(CWD, p("a/pipe"), Mode::from_raw_mode(0o644)).unwrap();
}

/// A tree without hardlinks or symlinks, where du's choice of which link
/// to print cannot matter.
pub fn plain_tree(root: &Path) {
    for d in ["a/b/c", "a/d", "e", "f g/h"] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    for (f, n) in [
        ("x", 10),
        ("a/y", 5_000),
        ("a/b/z", 70_000),
        ("a/b/c/w", 1),
        ("a/d/v", 0),
        ("f g/h/u", 12_345),
    ] {
        write_file(&root.join(f), n);
    }
}

fn dir_fd(path: &Path) -> rustix::fd::OwnedFd {
    rustix::fs::openat(
        CWD,
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .unwrap()
}

/// Creates `name` relative to `dir` and writes `len` bytes to it.
fn create_at(dir: &rustix::fd::OwnedFd, name: &str, len: usize) {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .unwrap_or_else(|e| panic!("create {name}: {e}"));
    if len > 0 {
        File::from(fd).write_all(&vec![0x5a; len]).unwrap();
    }
}

/// `levels` nested directories named `d` under `root` (so the deepest path
/// is about 2 × levels bytes, past PATH_MAX for 5,000), with a 10 KB file
/// `f` every 500 levels. Built relative to directory fds, one level at a
/// time, since full paths stop working past PATH_MAX.
pub fn deep_tree(root: &Path, levels: usize) {
    let mut fd = dir_fd(root);
    for i in 0..levels {
        if i % 500 == 0 {
            create_at(&fd, "f", 10_000);
        }
        rustix::fs::mkdirat(&fd, "d", Mode::from_raw_mode(0o755)).unwrap();
        fd = rustix::fs::openat(
            &fd,
            "d",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
    }
    create_at(&fd, "bottom", 4_000);
}

/// `n` empty files `f000000`... in the existing directory `dir`, plus a
/// few with data, created relative to the directory fd.
pub fn wide_dir(dir: &Path, n: usize) {
    let fd = dir_fd(dir);
    for i in 0..n {
        let len = if i % 20_000 == 0 { 30_000 } else { 0 };
        create_at(&fd, &format!("f{i:06}"), len);
    }
}

/// `dirs` directories of `per_dir` small files: output large enough to
/// overflow a pipe buffer many times over with `-a`.
pub fn medium_tree(root: &Path, dirs: usize, per_dir: usize) {
    for d in 0..dirs {
        let p = root.join(format!("dir{d:03}"));
        fs::create_dir(&p).unwrap();
        let fd = dir_fd(&p);
        for f in 0..per_dir {
            create_at(&fd, &format!("file{f:05}"), (f * 37) % 3000);
        }
    }
}

/// Hardlinks `dir{d}/file{k}` as `dir{d+1}/link{k}` (wrapping around) for
/// `k < n`: every directory of a `medium_tree` shares inodes with the next.
pub fn link_across(root: &Path, dirs: usize, n: usize) {
    for d in 0..dirs {
        for k in 0..n {
            fs::hard_link(
                root.join(format!("dir{d:03}/file{k:05}")),
                root.join(format!("dir{:03}/link{k:05}", (d + 1) % dirs)),
            )
            .unwrap();
        }
    }
}

pub fn chmod(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

/// What sdu must list for `root` (`all` = with `-a`), by an independent
/// walk: du order (post-order, siblings by name bytewise), with each
/// entry's type, depth and number of directories (itself included). Does
/// not follow symlinks.
pub fn expected_walk(root: &Path, all: bool) -> Vec<(OsString, Kind, u64, u64)> {
    fn walk(p: &Path, depth: u64, all: bool, out: &mut Vec<(OsString, Kind, u64, u64)>) -> u64 {
        let md = fs::symlink_metadata(p).unwrap();
        let ft = md.file_type();
        if !ft.is_dir() {
            let kind = if ft.is_file() {
                Kind::File
            } else if ft.is_symlink() {
                Kind::Symlink
            } else {
                Kind::Other
            };
            if all || depth == 0 {
                out.push((p.as_os_str().to_owned(), kind, depth, 0));
            }
            return 0;
        }
        let mut names: Vec<OsString> = fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        let mut dirs = 1;
        for n in names {
            dirs += walk(&join(p.as_os_str(), &n), depth + 1, all, out);
        }
        out.push((p.as_os_str().to_owned(), Kind::Dir, depth, dirs));
        dirs
    }
    let mut out = Vec::new();
    walk(root, 0, all, &mut out);
    out
}

/// `parent/name` as du spells it: one slash, even when the root was given
/// with a trailing slash.
pub fn join(parent: &OsStr, name: &OsStr) -> PathBuf {
    let mut b = parent.as_bytes().to_vec();
    if b.last() != Some(&b'/') {
        b.push(b'/');
    }
    b.extend_from_slice(name.as_bytes());
    PathBuf::from(OsString::from_vec(b))
}

// ---------------------------------------------------------------------------
// du

/// How du is run: extra flags common to sdu and du (`-l`, `-x`, `-L`,
/// `--exclude=...`), and optionally as the unprivileged user `nobody`.
#[derive(Clone, Default)]
pub struct Du {
    pub flags: Vec<String>,
    pub nobody: bool,
}

/// One line of du output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuLine {
    pub size: String,
    pub path: OsString,
}

impl Du {
    pub fn new(flags: &[&str]) -> Du {
        Du {
            flags: flags.iter().map(|s| s.to_string()).collect(),
            nobody: false,
        }
    }

    pub fn nobody(mut self) -> Du {
        self.nobody = true;
        self
    }

    fn command(&self) -> Command {
        let mut c = if self.nobody {
            let mut c = Command::new("setpriv");
            c.args(nobody_args()).arg("du");
            c
        } else {
            Command::new("du")
        };
        c.args(&self.flags).env("LC_ALL", "C");
        c
    }

    /// `du -0 FLAGS EXTRA PATHS`: its lines, whatever the exit status
    /// (du exits 1 when a directory is unreadable but still prints).
    pub fn lines(&self, extra: &[&str], paths: &[&OsStr]) -> (Vec<DuLine>, Output) {
        let out = run(self.command().arg("-0").args(extra).args(paths));
        assert!(
            out.code == Some(0) || (out.code == Some(1) && !out.stdout.is_empty()),
            "`{}` failed: {:?} {}",
            out.cmdline,
            out.code,
            out.stderr
        );
        let lines = out
            .stdout
            .split(|&b| b == 0)
            .filter(|l| !l.is_empty())
            .map(|l| {
                let tab = l
                    .iter()
                    .position(|&b| b == b'\t')
                    .expect("du line has a tab");
                DuLine {
                    size: String::from_utf8(l[..tab].to_vec()).unwrap(),
                    path: OsString::from_vec(l[tab + 1..].to_vec()),
                }
            })
            .collect();
        (lines, out)
    }

    /// `du -s FLAGS EXTRA PATH`, the one size it prints.
    pub fn size(&self, extra: &[&str], path: &OsStr) -> String {
        let mut a = vec!["-s"];
        a.extend_from_slice(extra);
        let (l, out) = self.lines(&a, &[path]);
        assert_eq!(l.len(), 1, "`{}` printed {l:?}", out.cmdline);
        l.into_iter().next().unwrap().size
    }

    pub fn bytes(&self, extra: &[&str], path: &OsStr) -> u64 {
        let s = self.size(extra, path);
        s.parse()
            .unwrap_or_else(|_| panic!("du printed {s:?} for {}", path.to_string_lossy()))
    }

    /// The set of paths `du FLAGS EXTRA ROOTS` prints.
    pub fn paths(&self, extra: &[&str], roots: &[&OsStr]) -> Vec<OsString> {
        let mut v: Vec<OsString> = self
            .lines(extra, roots)
            .0
            .into_iter()
            .map(|l| l.path)
            .collect();
        v.sort();
        v
    }

    /// Compares `total`, `apparent` and `files + dirs` of every entry
    /// `keep` selects with `du -s -B1 [--apparent-size | --inodes] PATH`
    /// run on that path alone. Returns a readable table of the
    /// differences (empty when all agree).
    pub fn mismatches(&self, report: &Report, keep: impl Fn(&Entry) -> bool) -> String {
        let mut rows = Vec::new();
        let mut checked = 0;
        for e in report.entries.iter().filter(|e| keep(e)) {
            checked += 1;
            let p = e.path.as_os_str();
            let du_total = self.bytes(&["-B1"], p);
            let du_apparent = self.bytes(&["-B1", "--apparent-size"], p);
            let du_inodes = self.bytes(&["--inodes"], p);
            for (fig, s, d) in [
                ("total", e.total, du_total),
                ("apparent", e.apparent, du_apparent),
                ("files+dirs", e.files + e.dirs, du_inodes),
            ] {
                if s != d {
                    rows.push((e.path.to_string_lossy().into_owned(), fig, s, d));
                }
            }
        }
        assert!(checked > 0, "no entry selected for the du comparison");
        if rows.is_empty() {
            return String::new();
        }
        let w = rows.iter().map(|r| r.0.len()).max().unwrap().max(4);
        let mut t = format!(
            "sdu disagrees with `du -s {}` on {} figures of {checked} entries{}:\n{:w$}  {:>10}  {:>12}  {:>12}  {:>12}\n",
            self.flags.join(" "),
            rows.len(),
            if self.nobody { " (as nobody)" } else { "" },
            "path",
            "figure",
            "sdu",
            "du",
            "sdu-du"
        );
        for (p, fig, s, d) in rows {
            let _ = writeln!(
                t,
                "{p:w$}  {fig:>10}  {s:>12}  {d:>12}  {:>12}",
                s as i128 - d as i128
            );
        }
        t
    }

    pub fn assert_figures(&self, report: &Report, keep: impl Fn(&Entry) -> bool) {
        let t = self.mismatches(report, keep);
        assert!(t.is_empty(), "{t}");
    }
}

/// setpriv arguments that drop to `nobody`.
pub fn nobody_args() -> [&'static str; 3] {
    ["--reuid=65534", "--regid=65534", "--clear-groups"]
}

/// Checks every entry of `sdu --json -a FLAGS ROOT` (files too) against
/// `du -s FLAGS` on that entry alone, and that the run without `-a` lists
/// exactly the directories (and roots) of the `-a` run with the same
/// figures. Returns the `-a` report.
pub fn assert_matches_du(root: &Path, flags: &[&str]) -> Report {
    let mut a: Vec<OsString> = args!["-a"];
    a.extend(flags.iter().map(OsString::from));
    a.push(root.into());
    let all = sdu_json(&a);
    a.remove(0);
    let dirs = sdu_json(&a);
    Du::new(flags).assert_figures(&all, |_| true);
    let want: Vec<&Entry> = all
        .entries
        .iter()
        .filter(|e| e.kind == Kind::Dir || e.depth == 0)
        .collect();
    let got: Vec<&Entry> = dirs.entries.iter().collect();
    assert_eq!(
        got, want,
        "`sdu {flags:?}` without -a is not the directories of the -a run"
    );
    all
}

// ---------------------------------------------------------------------------
// Text output

/// A parsed text table: the header's column names (size columns, then
/// `Path`) and the rows.
#[derive(Debug)]
pub struct Table {
    pub header: Option<Vec<String>>,
    pub rows: Vec<Row>,
}

#[derive(Debug)]
pub struct Row {
    pub sizes: Vec<String>,
    pub path: OsString,
    /// Byte offset where the path starts (for the alignment check).
    pub path_col: usize,
}

impl Table {
    /// Index of the size column that du's single figure corresponds to.
    pub fn main_column(&self) -> usize {
        let h = self.header.as_ref().expect("no header");
        ["Total", "Apparent", "Size"]
            .iter()
            .find_map(|n| h.iter().position(|c| c == n))
            .unwrap_or(0)
    }
}

/// Parses sdu's text output. `ncols` = number of size columns (from a
/// header, when `header` is false); `term` = row terminator.
pub fn parse_text(out: &[u8], header: bool, ncols: Option<usize>, term: u8) -> Table {
    let mut lines: Vec<&[u8]> = out.split(|&b| b == term).collect();
    assert_eq!(
        lines.pop(),
        Some(&b""[..]),
        "output does not end with the row terminator {term:#x}: {:?}",
        String::from_utf8_lossy(out)
    );
    let mut hdr = None;
    let mut ncols = ncols;
    if header {
        assert!(!lines.is_empty(), "no header line");
        let h: Vec<String> = String::from_utf8(lines.remove(0).to_vec())
            .expect("header is UTF-8")
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        assert_eq!(
            h.last().map(String::as_str),
            Some("Path"),
            "header {h:?} does not end with Path"
        );
        ncols = Some(h.len() - 1);
        hdr = Some(h);
    }
    let ncols = ncols.expect("number of size columns");
    let rows = lines.into_iter().map(|l| parse_row(l, ncols)).collect();
    Table { header: hdr, rows }
}

fn parse_row(l: &[u8], ncols: usize) -> Row {
    let bad = |why: &str| -> ! { panic!("row {:?}: {why}", String::from_utf8_lossy(l)) };
    let mut i = 0;
    let mut sizes = Vec::new();
    for c in 0..ncols {
        let start = i;
        while i < l.len() && l[i] == b' ' {
            i += 1;
        }
        if c > 0 && i - start < 2 {
            bad("size columns not separated by two spaces");
        }
        let s = i;
        while i < l.len() && l[i] != b' ' {
            i += 1;
        }
        if s == i {
            bad("missing size");
        }
        sizes.push(String::from_utf8(l[s..i].to_vec()).unwrap());
    }
    if !l[i..].starts_with(b"  ") {
        bad("sizes and path not separated by two spaces");
    }
    Row {
        sizes,
        path: OsString::from_vec(l[i + 2..].to_vec()),
        path_col: i + 2,
    }
}

/// Paths of a report, in order.
pub fn paths(r: &Report) -> Vec<OsString> {
    r.entries.iter().map(|e| e.path.clone()).collect()
}

pub fn sorted(mut v: Vec<OsString>) -> Vec<OsString> {
    v.sort();
    v
}

/// A readable diff of two sorted path sets (sdu's, du's).
pub fn set_diff(sdu: &[OsString], du: &[OsString]) -> String {
    labelled_diff(("sdu", sdu), ("du", du))
}

/// A readable diff of two sorted path sets with their names.
pub fn labelled_diff(a: (&str, &[OsString]), b: (&str, &[OsString])) -> String {
    let w = a.0.len().max(b.0.len());
    let mut t = String::new();
    for (this, that) in [(a, b), (b, a)] {
        for p in this.1.iter().filter(|p| !that.1.contains(p)) {
            let _ = writeln!(t, "  only {:w$}: {}", this.0, p.to_string_lossy());
        }
    }
    t
}
