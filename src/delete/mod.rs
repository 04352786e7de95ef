//! Deleting what was scanned: the browser's `d`.
//!
//! Everything is relative to directory fds, as rm's `--one-file-system`
//! would do it and stricter:
//! - the path to an entry is opened one name at a time with `O_NOFOLLOW`
//!   (only the root, as the user gave it, is resolved by the kernel), so a
//!   symlink put in place of a directory since the scan ends the deletion
//!   instead of being followed;
//! - a symlink is unlinked, never followed;
//! - a directory is emptied through its own fd (`unlinkat`), and only while
//!   it lies on the filesystem of the entry being deleted: a mount point
//!   inside it stops the deletion;
//! - a Btrfs subvolume or snapshot (the root directory of a subvolume of
//!   the same filesystem) is deleted as a subvolume,
//!   `BTRFS_IOC_SNAP_DESTROY_V2`;
//! - the first error stops everything and is reported by path; what was
//!   deleted before it stays deleted.
//!
//! [`delete`] also measures what the filesystems report as freed: `statvfs`
//! before and after (after `syncfs`, read again until it holds still, and
//! on Btrfs until the cleaner has dropped the deleted subvolumes when the
//! kernel says how many are left).

mod ioctl;

use std::ffi::{CStr, CString};
use std::fmt;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

use rustix::fs::{AtFlags, CWD, Dir, FileType, Mode, OFlags, StatxFlags};
use rustix::io::Errno;

use crate::probe::ioctl::{fs_type, fs_uuid, magic};
use crate::walk::join;

/// One entry to delete, as the scan saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Its root as given on the command line.
    pub root: Vec<u8>,
    /// The names from the root down to the entry (empty: the root itself).
    pub names: Vec<Vec<u8>>,
    /// The scan saw a directory.
    pub dir: bool,
}

impl Target {
    /// Its path: the root, then its names.
    pub fn path(&self) -> Vec<u8> {
        let mut p = self.root.clone();
        for n in &self.names {
            join(&mut p, n);
        }
        p
    }
}

/// Why the deletion stopped.
#[derive(Debug)]
pub enum Problem {
    /// A call failed.
    Io(io::Error),
    /// The root is `.`, `..` or `/`.
    Refused,
    /// Not what the scan saw any more.
    Changed {
        /// What it is now ("a file", "a symbolic link"...).
        now: &'static str,
    },
    /// A directory of another filesystem (a mount point).
    OtherFilesystem,
    /// A subvolume that this caller may not delete.
    SubvolumeNotPermitted,
    /// A subvolume holding other subvolumes.
    SubvolumeNotEmpty,
}

/// The path deletion stopped at, and why.
#[derive(Debug)]
pub struct Failure {
    /// The entry's path (its root as given, then names).
    pub path: Vec<u8>,
    /// What went wrong.
    pub problem: Problem,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = crate::quote(&self.path);
        match &self.problem {
            Problem::Io(e) => write!(f, "cannot remove {p}: {}", crate::error::io_text(e)),
            Problem::Refused => write!(f, "refusing to remove {p}"),
            Problem::Changed { now } => {
                write!(
                    f,
                    "{p} changed since the scan (it is now {now}): not removed"
                )
            }
            Problem::OtherFilesystem => write!(
                f,
                "{p} is on another filesystem (a mount point): sdu does not delete across filesystems"
            ),
            Problem::SubvolumeNotPermitted => write!(
                f,
                "cannot delete subvolume {p}: it needs CAP_SYS_ADMIN, or the filesystem mounted with user_subvol_rm_allowed"
            ),
            Problem::SubvolumeNotEmpty => write!(
                f,
                "cannot delete subvolume {p}: it holds other subvolumes (delete them first)"
            ),
        }
    }
}

/// What [`delete`] did.
#[derive(Debug, Default)]
pub struct Deleted {
    /// Targets deleted whole.
    pub targets: usize,
    /// Subvolumes deleted (targets or inside them).
    pub subvolumes: usize,
    /// Non-directories unlinked and directories removed.
    pub entries: u64,
    /// The error that stopped it.
    pub failed: Option<Failure>,
    /// Σ over the filesystems touched of the growth of `f_bfree ×
    /// f_frsize` from before to after.
    pub reported: i128,
    /// Whether `reported` is final: false when a deleted subvolume may
    /// still be being cleaned in the background (the kernel does not say),
    /// or the figure kept moving (other writers) for 3 s.
    pub settled: bool,
}

/// One filesystem touched: an fd on it and its free bytes before.
struct Fs {
    key: (u32, [u8; 16], u64),
    fd: OwnedFd,
    free_before: u128,
}

fn free_bytes(fd: BorrowedFd<'_>) -> io::Result<u128> {
    let s = rustix::fs::fstatvfs(fd)?;
    Ok(u128::from(s.f_bfree) * u128::from(s.f_frsize))
}

/// What identifies a filesystem across its subvolumes: its type and UUID
/// where it publishes one, else `f_fsid`.
fn fs_key(fd: BorrowedFd<'_>) -> io::Result<(u32, [u8; 16], u64)> {
    let t = fs_type(fd)?;
    match fs_uuid(fd) {
        Ok(u) => Ok((t, u, 0)),
        Err(_) => Ok((t, [0; 16], rustix::fs::fstatvfs(fd)?.f_fsid)),
    }
}

/// The state of one deletion.
struct Run {
    out: Deleted,
    filesystems: Vec<Fs>,
}

/// Deletes `targets` in order, skipping none, stopping at the first error.
/// A target inside another one must not be given (the browser drops it:
/// its ancestor covers it).
pub fn delete(targets: &[Target]) -> Deleted {
    let mut run = Run {
        out: Deleted::default(),
        filesystems: Vec::new(),
    };
    for t in targets {
        match run.target(t) {
            Ok(()) => run.out.targets += 1,
            Err(f) => {
                run.out.failed = Some(f);
                break;
            }
        }
    }
    run.measure();
    run.out
}

fn cstr(b: &[u8]) -> io::Result<CString> {
    CString::new(b).map_err(|_| io::Error::from(Errno::INVAL))
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

fn what(ft: FileType) -> &'static str {
    match ft {
        FileType::Directory => "a directory",
        FileType::Symlink => "a symbolic link",
        FileType::RegularFile => "a file",
        _ => "a special file",
    }
}

impl Run {
    /// Deletes one target.
    fn target(&mut self, t: &Target) -> Result<(), Failure> {
        let path = t.path();
        let fail = |problem| Failure {
            path: path.clone(),
            problem,
        };
        let io_fail = |e: io::Error| Failure {
            path: path.clone(),
            problem: Problem::Io(e),
        };
        // The directory holding the entry, and the entry's name in it.
        let (parent, name) = match t.names.split_last() {
            Some((name, above)) => {
                let mut fd = rustix::fs::openat(
                    CWD,
                    cstr(&t.root).map_err(io_fail)?.as_c_str(),
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .map_err(|e| io_fail(e.into()))?;
                for n in above {
                    fd = rustix::fs::openat(
                        &fd,
                        cstr(n).map_err(io_fail)?.as_c_str(),
                        DIR_FLAGS,
                        Mode::empty(),
                    )
                    .map_err(|e| io_fail(e.into()))?;
                }
                (fd, name.clone())
            }
            None => {
                let mut r: &[u8] = &t.root;
                while r.len() > 1 && r.ends_with(b"/") {
                    r = &r[..r.len() - 1];
                }
                let (dir, base) = match r.iter().rposition(|&c| c == b'/') {
                    Some(i) => (if i == 0 { &b"/"[..] } else { &r[..i] }, &r[i + 1..]),
                    None => (&b"."[..], r),
                };
                if base.is_empty() || base == b"." || base == b".." {
                    return Err(fail(Problem::Refused));
                }
                let fd = rustix::fs::openat(
                    CWD,
                    cstr(dir).map_err(io_fail)?.as_c_str(),
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .map_err(|e| io_fail(e.into()))?;
                (fd, base.to_vec())
            }
        };
        self.note_fs(parent.as_fd()).map_err(io_fail)?;
        let name = cstr(&name).map_err(io_fail)?;
        let st = rustix::fs::statx(
            &parent,
            name.as_c_str(),
            AtFlags::SYMLINK_NOFOLLOW,
            StatxFlags::TYPE | StatxFlags::INO,
        )
        .map_err(|e| io_fail(e.into()))?;
        let ft = FileType::from_raw_mode(st.stx_mode.into());
        if (ft == FileType::Directory) != t.dir {
            return Err(fail(Problem::Changed { now: what(ft) }));
        }
        if !t.dir {
            rustix::fs::unlinkat(&parent, name.as_c_str(), AtFlags::empty())
                .map_err(|e| io_fail(e.into()))?;
            self.out.entries += 1;
            return Ok(());
        }
        let pdev = rustix::fs::fstat(&parent)
            .map_err(|e| io_fail(e.into()))?
            .st_dev;
        self.directory(parent.as_fd(), pdev, &name, &path)
    }

    /// Remembers the filesystem of `fd` and its free bytes, once.
    fn note_fs(&mut self, fd: BorrowedFd<'_>) -> io::Result<()> {
        let key = fs_key(fd)?;
        if self.filesystems.iter().any(|f| f.key == key) {
            return Ok(());
        }
        let free_before = free_bytes(fd)?;
        self.filesystems.push(Fs {
            key,
            fd: fd.try_clone_to_owned()?,
            free_before,
        });
        Ok(())
    }

    /// Deletes the directory `name` in `parent` (on device `pdev`): as a
    /// subvolume when it is the root of one on the same Btrfs filesystem,
    /// else by emptying it on its own filesystem and removing it.
    fn directory(
        &mut self,
        parent: BorrowedFd<'_>,
        pdev: u64,
        name: &CStr,
        path: &[u8],
    ) -> Result<(), Failure> {
        let io_fail = |e: io::Error| Failure {
            path: path.to_vec(),
            problem: Problem::Io(e),
        };
        let fd = rustix::fs::openat(parent, name, DIR_FLAGS, Mode::empty())
            .map_err(|e| io_fail(e.into()))?;
        let st = rustix::fs::fstat(&fd).map_err(|e| io_fail(e.into()))?;
        if st.st_dev != pdev {
            return self.subvolume(parent, &fd, name, path);
        }
        self.empty_and_remove(parent, fd, st.st_dev, name, path)
    }

    /// `fd` (named `name` in `parent`) lies on another device than its
    /// parent: delete it as a Btrfs subvolume if it is one of the same
    /// filesystem, else stop.
    fn subvolume(
        &mut self,
        parent: BorrowedFd<'_>,
        fd: &OwnedFd,
        name: &CStr,
        path: &[u8],
    ) -> Result<(), Failure> {
        let fail = |problem| Failure {
            path: path.to_vec(),
            problem,
        };
        let st = rustix::fs::fstat(fd).map_err(|e| fail(Problem::Io(e.into())))?;
        let is_btrfs = |f: BorrowedFd<'_>| fs_type(f).is_ok_and(|t| t == magic::BTRFS);
        let same_fs = is_btrfs(parent)
            && is_btrfs(fd.as_fd())
            && st.st_ino == ioctl::FIRST_FREE_OBJECTID
            && matches!((fs_uuid(parent), fs_uuid(fd.as_fd())), (Ok(a), Ok(b)) if a == b);
        if !same_fs {
            return Err(fail(Problem::OtherFilesystem));
        }
        match ioctl::snap_destroy(parent, name.to_bytes()) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(Errno::PERM.raw_os_error()) => {
                return Err(fail(Problem::SubvolumeNotPermitted));
            }
            Err(e) if e.raw_os_error() == Some(Errno::NOTEMPTY.raw_os_error()) => {
                return Err(fail(Problem::SubvolumeNotEmpty));
            }
            Err(e) => return Err(fail(Problem::Io(e))),
        }
        self.out.subvolumes += 1;
        self.out.entries += 1;
        Ok(())
    }

    /// Empties the directory open at `fd` (device `dev`, named `name` in
    /// `parent`) depth first, one fd per level, then removes it.
    fn empty_and_remove(
        &mut self,
        parent: BorrowedFd<'_>,
        fd: OwnedFd,
        dev: u64,
        name: &CStr,
        path: &[u8],
    ) -> Result<(), Failure> {
        struct Frame {
            dir: Dir,
            name: CString,
            path: Vec<u8>,
            /// Readings of the directory so far (a directory that is not
            /// empty after a full reading is read again, twice at most).
            passes: u32,
        }
        let open = |fd: OwnedFd, name: CString, path: Vec<u8>, passes| {
            Dir::new(fd)
                .map(|dir| Frame {
                    dir,
                    name,
                    path: path.clone(),
                    passes,
                })
                .map_err(|e| Failure {
                    path,
                    problem: Problem::Io(e.into()),
                })
        };
        let mut stack = vec![open(fd, name.to_owned(), path.to_vec(), 0)?];
        while let Some(top) = stack.last_mut() {
            let Some(entry) = top.dir.read() else {
                // Read to the end: remove it from its parent.
                let f = stack.pop().expect("a frame");
                let fail = |e: Errno| Failure {
                    path: f.path.clone(),
                    problem: Problem::Io(e.into()),
                };
                let up = match stack.last() {
                    Some(p) => p.dir.fd().map_err(fail)?,
                    None => parent,
                };
                match rustix::fs::unlinkat(up, f.name.as_c_str(), AtFlags::REMOVEDIR) {
                    Ok(()) => self.out.entries += 1,
                    Err(Errno::NOTEMPTY) if f.passes < 2 => {
                        // Entries made while it was read: read it again.
                        let fd =
                            rustix::fs::openat(up, f.name.as_c_str(), DIR_FLAGS, Mode::empty())
                                .map_err(fail)?;
                        stack.push(open(fd, f.name, f.path, f.passes + 1)?);
                    }
                    Err(e) => return Err(fail(e)),
                }
                continue;
            };
            let fail_here = |e: Errno, p: &[u8]| Failure {
                path: p.to_vec(),
                problem: Problem::Io(e.into()),
            };
            let entry = entry.map_err(|e| fail_here(e, &top.path))?;
            let ename = entry.file_name();
            if ename == c"." || ename == c".." {
                continue;
            }
            let ename = ename.to_owned();
            let mut epath = top.path.clone();
            join(&mut epath, ename.to_bytes());
            let here = top.dir.fd().map_err(|e| fail_here(e, &top.path))?;
            let mut is_dir = matches!(entry.file_type(), FileType::Directory | FileType::Unknown);
            if !is_dir {
                match rustix::fs::unlinkat(here, ename.as_c_str(), AtFlags::empty()) {
                    Ok(()) => {
                        self.out.entries += 1;
                        continue;
                    }
                    // It is a directory now.
                    Err(Errno::ISDIR) => is_dir = true,
                    Err(e) => return Err(fail_here(e, &epath)),
                }
            }
            debug_assert!(is_dir);
            let sub = match rustix::fs::openat(here, ename.as_c_str(), DIR_FLAGS, Mode::empty()) {
                Ok(fd) => fd,
                // Not a directory after all (DT_UNKNOWN, or replaced): unlink.
                Err(Errno::NOTDIR | Errno::LOOP) => {
                    rustix::fs::unlinkat(here, ename.as_c_str(), AtFlags::empty())
                        .map_err(|e| fail_here(e, &epath))?;
                    self.out.entries += 1;
                    continue;
                }
                Err(e) => return Err(fail_here(e, &epath)),
            };
            let sdev = rustix::fs::fstat(&sub)
                .map_err(|e| fail_here(e, &epath))?
                .st_dev;
            if sdev != dev {
                self.subvolume(here, &sub, ename.as_c_str(), &epath)?;
                continue;
            }
            stack.push(open(sub, ename, epath, 0)?);
        }
        Ok(())
    }

    /// Flushes the filesystems touched and adds up what they report as
    /// freed, read again until the figure holds still: Btrfs drops deleted
    /// subvolumes in the background (the cleaner, woken here), XFS frees
    /// unlinked inodes' blocks in the background too (deferred
    /// inactivation, which `statfs` hurries along).
    fn measure(&mut self) {
        let btrfs = |fs: &Fs| fs.key.0 == magic::BTRFS;
        let read = |fss: &[Fs]| -> i128 {
            fss.iter()
                .map(|fs| {
                    if btrfs(fs) {
                        let _ = ioctl::sync_and_clean(fs.fd.as_fd());
                    } else {
                        let _ = rustix::fs::syncfs(&fs.fd);
                    }
                    let after = free_bytes(fs.fd.as_fd()).unwrap_or(fs.free_before);
                    after as i128 - fs.free_before as i128
                })
                .sum()
        };
        // Deleted subvolumes not dropped yet: None when the kernel does not
        // say (Linux < 6.8).
        let pending = |fss: &[Fs]| -> Option<u32> {
            fss.iter()
                .filter(|fs| btrfs(fs))
                .map(|fs| ioctl::dead_subvolumes(fs.fd.as_fd()))
                .try_fold(0u32, |n, c| c.ok().map(|c| n.saturating_add(c)))
        };
        let subvolumes = self.out.subvolumes > 0;
        let t0 = Instant::now();
        let mut reported = read(&self.filesystems);
        let mut still = Instant::now();
        let settled = loop {
            let known_clean = !subvolumes || pending(&self.filesystems) == Some(0);
            let quiet = still.elapsed()
                >= if known_clean {
                    Duration::from_millis(300)
                } else {
                    Duration::from_secs(1)
                };
            if quiet {
                break known_clean;
            }
            // A busy filesystem never holds still: give up after 3 s (10 s
            // while the cleaner has subvolumes to drop).
            let limit = if known_clean { 3 } else { 10 };
            if t0.elapsed() > Duration::from_secs(limit) {
                break false;
            }
            std::thread::sleep(Duration::from_millis(50));
            let now = read(&self.filesystems);
            if now != reported {
                reported = now;
                still = Instant::now();
            }
        };
        self.out.reported = reported;
        self.out.settled = settled;
    }
}

#[cfg(test)]
mod tests;
