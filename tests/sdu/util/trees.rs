//! Test trees: the temp directory they live in, the builders (the
//! standard tree, plain, deep, wide, medium), file writers, and an
//! independent walk of what sdu must list.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io::{Seek, SeekFrom, Write as _};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;

use rustix::fs::{CWD, Mode, OFlags};

use crate::json::Kind;

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
