//! Deleting what was scanned: the browser's `d`.
//!
//! Nothing is resolved again by path: every level is identified.
//! - The scan recorded each entry's device, inode number and mount
//!   ([`Ident`]). The path to an entry is opened one name at a time from
//!   its root (`O_DIRECTORY | O_NOFOLLOW` below the root), and each level,
//!   the root included, must be the inode the scan saw there, in the mount
//!   it saw: a root swapped for a symlink, a directory renamed over
//!   another, a mount made on the way since the scan, each stops the
//!   deletion before anything under that level is removed.
//! - The entry itself is checked the same way before it goes; a symlink is
//!   unlinked, never followed.
//! - A directory is emptied through its own fd (`unlinkat`). Before it is
//!   entered, `/proc/self/mountinfo` is read: a mount point anywhere
//!   inside (a bind mount of the same filesystem too), at any depth,
//!   refuses the deletion before anything is removed. While emptying,
//!   every directory entered is checked by its mount id (`STATX_MNT_ID`)
//!   against the entry's mount, so a mount made meanwhile stops it before
//!   it is entered.
//! - A Btrfs subvolume or snapshot (the root directory of a subvolume of
//!   the same filesystem, in the same mount) is deleted as a subvolume:
//!   moved into a directory of the caller's own where nobody else can
//!   rename it, checked again there, and destroyed there by the id read
//!   from its fd (`BTRFS_IOC_SNAP_DESTROY_V2`, `BTRFS_SUBVOL_SPEC_BY_ID`).
//! - Depth is unbounded, fds are bounded and memory is linear in depth:
//!   past a few dozen levels the shallowest directories are closed, and
//!   reopened on the way back up through `..` and checked by (device,
//!   inode); each level keeps its name, not its path.
//! - The first error stops everything and is reported by path; what was
//!   deleted before it stays deleted. So does a stop asked for (Ctrl-C),
//!   between two entries.
//!
//! [`delete`] also measures what the filesystems report as freed: `statvfs`
//! before and after (after one `syncfs`, read again until it holds still, and
//! on Btrfs until the cleaner has dropped the deleted subvolumes when the
//! kernel says how many are left).

mod empty;
mod problem;
mod subvolume;

pub(crate) use problem::{Failure, Problem};

use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags, Statx, StatxFlags};
use rustix::io::Errno;
use sdu_sys::btrfs;
use sdu_sys::fs::{self, fs_type, magic};

use crate::path::join;
use crate::records::Ident;

/// One entry to delete, as the scan saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Its root as given on the command line.
    pub root: Vec<u8>,
    /// The names from the root down to the entry (empty: the root itself).
    pub names: Vec<Vec<u8>>,
    /// The scan saw a directory.
    pub dir: bool,
    /// What the scan saw at the root and at each name below it, in order:
    /// `names.len() + 1` of them, the entry's own last.
    pub idents: Vec<Ident>,
    /// For a directory: the device and inode of every entry the scan saw
    /// below it, sorted. What emptying it meets beyond these was added
    /// since the scan, and is counted apart ([`Deleted::unscanned`]).
    pub inside: Vec<(u64, u64)>,
}

impl Target {
    /// Its path: the root, then its names.
    pub(crate) fn path(&self) -> Vec<u8> {
        self.path_to(self.names.len())
    }

    /// The path of the level `depth` names below the root.
    fn path_to(&self, depth: usize) -> Vec<u8> {
        let mut p = self.root.clone();
        for n in &self.names[..depth] {
            join(&mut p, n);
        }
        p
    }
}

/// What [`delete`] did.
#[derive(Debug, Default)]
pub struct Deleted {
    /// Targets done: deleted whole, or already gone.
    pub targets: usize,
    /// Of those, the targets already gone when their turn came: not found
    /// where the scan saw them (deleted or renamed since), nothing removed.
    pub gone: usize,
    /// Entries removed that the scan had not seen below their target
    /// (added since).
    pub unscanned: u64,
    /// Their allocated bytes (`st_blocks`).
    pub unscanned_bytes: u64,
    /// Subvolumes deleted (targets or inside them).
    pub subvolumes: usize,
    /// Non-directories unlinked and directories removed.
    pub entries: u64,
    /// The error that stopped it (or the stop asked for).
    pub failed: Option<Failure>,
    /// It was stopped on request (`Problem::Interrupted`).
    pub interrupted: bool,
    /// A subvolume not deleted was left where it had been moved to be
    /// deleted (`Problem::LeftAside`): the tree changed, though nothing
    /// may have been removed.
    pub left_aside: bool,
    /// Σ over the filesystems touched of the growth of `f_bfree ×
    /// f_frsize` from before to after.
    pub reported: i128,
    /// Whether `reported` is final: false when a deleted subvolume may
    /// still be being cleaned in the background (the kernel does not say),
    /// or the figure kept moving (other writers) for 3 s.
    pub settled: bool,
    /// When the one filesystem touched is XFS: the bytes of one of its
    /// inode chunks (64 inodes of its inode size). XFS frees a chunk when
    /// its last inode goes, which no file's `st_blocks` counts: deleting
    /// many entries frees up to that much more a chunk they emptied.
    pub inode_chunk: Option<u64>,
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
    match fs::uuid(fd) {
        Ok(u) => Ok((t, u, 0)),
        Err(_) => Ok((t, [0; 16], rustix::fs::fstatvfs(fd)?.f_fsid)),
    }
}

/// The state of one deletion.
struct Deletion<'a> {
    out: Deleted,
    filesystems: Vec<Fs>,
    /// Set by another thread to stop between two entries.
    stop: &'a AtomicBool,
    /// Directories held open at once while emptying one (the fd budget).
    max_open: usize,
    /// Called with the path of each entry removed: the tests' way to
    /// change the tree at a chosen point of a deletion.
    #[cfg(test)]
    after: &'a dyn Fn(&[u8]),
}

/// Deletes `targets` in order, skipping none, stopping at the first error
/// or when `stop` is set. A target inside another one must not be given
/// (the browser drops it: its ancestor covers it).
pub fn delete(targets: &[Target], stop: &AtomicBool) -> Deleted {
    // Directories held open while emptying: a quarter of the soft limit,
    // 2 to 64 (the browser holds a few fds of its own besides).
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(1024);
    let mut run = Deletion {
        out: Deleted::default(),
        filesystems: Vec::new(),
        stop,
        max_open: (soft / 4).clamp(2, 64) as usize,
        #[cfg(test)]
        after: &|_| {},
    };
    run.all(targets);
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

/// What identifies an inode and its mount.
const ID_MASK: StatxFlags = StatxFlags::TYPE
    .union(StatxFlags::INO)
    .union(StatxFlags::MNT_ID);

fn ident_of(st: &Statx) -> Ident {
    Ident {
        dev: rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor),
        ino: st.stx_ino,
        // A kernel without STATX_MNT_ID leaves it 0, in the scan too.
        mnt: st.stx_mnt_id,
    }
}

/// The `statx` of the open `fd`.
fn statx_fd(fd: BorrowedFd<'_>) -> Result<Statx, Errno> {
    rustix::fs::statx(fd, c"", AtFlags::EMPTY_PATH, ID_MASK)
}

fn what(ft: FileType) -> &'static str {
    match ft {
        FileType::Directory => "a directory",
        FileType::Symlink => "a symbolic link",
        FileType::RegularFile => "a file",
        _ => "a special file",
    }
}

/// The mount points strictly inside the directory open at `fd` (printed
/// as `path`, then the names below it), from `/proc/self/mountinfo`, at
/// any depth: none when either cannot be read (the mount ids checked while
/// emptying still stop at every mount).
fn mounts_inside(fd: BorrowedFd<'_>, path: &[u8]) -> Vec<Vec<u8>> {
    let Some(abs) = abs_path(fd) else {
        return Vec::new();
    };
    let Ok(mounts) = sdu_sys::mountinfo::read() else {
        return Vec::new();
    };
    let prefix = if abs == b"/" { Vec::new() } else { abs };
    let mut out = Vec::new();
    for p in mounts.into_iter().map(|m| m.point) {
        let Some(rel) = p
            .strip_prefix(prefix.as_slice())
            .and_then(|r| r.strip_prefix(b"/"))
            .filter(|r| !r.is_empty())
        else {
            continue;
        };
        let mut shown = path.to_vec();
        for name in rel.split(|&b| b == b'/') {
            join(&mut shown, name);
        }
        out.push(shown);
    }
    out.sort();
    out
}

/// The absolute path of the directory open at `fd`, as
/// `/proc/self/mountinfo` prints mount points (which it does at any
/// length). `/proc/self/fd` says it up to a page; past that, the path is
/// built going up through `..` to the deepest ancestor it can say, each
/// level's name found in its parent by device and inode (a mount root by
/// its mount point, which `statx` of the name crosses into). `None` when
/// a level is not found, or `..` leads nowhere new.
fn abs_path(fd: BorrowedFd<'_>) -> Option<Vec<u8>> {
    use std::os::unix::ffi::OsStringExt;
    let link = |fd: BorrowedFd<'_>| std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()));
    // The names from `fd` up, deepest first.
    let mut names: Vec<CString> = Vec::new();
    let mut up: Option<OwnedFd> = None;
    loop {
        let here = up.as_ref().map_or(fd, AsFd::as_fd);
        match link(here) {
            Ok(p) => {
                let mut abs = p.into_os_string().into_vec();
                for n in names.iter().rev() {
                    join(&mut abs, n.to_bytes());
                }
                return Some(abs);
            }
            Err(e) if e.raw_os_error() == Some(Errno::NAMETOOLONG.raw_os_error()) => {}
            Err(_) => return None,
        }
        let me = ident_of(&statx_fd(here).ok()?);
        let parent = rustix::fs::openat(here, c"..", DIR_FLAGS, Mode::empty()).ok()?;
        let crossed = ident_of(&statx_fd(parent.as_fd()).ok()?);
        if crossed == me {
            return None;
        }
        let mut dir = rustix::fs::Dir::read_from(&parent).ok()?;
        let mut found = None;
        while let Some(entry) = dir.read() {
            let entry = entry.ok()?;
            let name = entry.file_name();
            if name == c"." || name == c".." {
                continue;
            }
            // In the same mount, the entry's inode number is the one; a
            // mount root is listed with the inode it covers: any
            // directory may be it.
            let may = if crossed.mnt == me.mnt {
                entry.ino() == me.ino
            } else {
                matches!(entry.file_type(), FileType::Directory | FileType::Unknown)
            };
            if may
                && rustix::fs::statx(&parent, name, AtFlags::SYMLINK_NOFOLLOW, ID_MASK)
                    .is_ok_and(|st| ident_of(&st) == me)
            {
                found = Some(name.to_owned());
                break;
            }
        }
        names.push(found?);
        up = Some(parent);
    }
}

impl Deletion<'_> {
    /// Deletes `targets` in order, up to the first failure.
    fn all(&mut self, targets: &[Target]) {
        for t in targets {
            match self.target(t) {
                Ok(removed) => {
                    self.out.targets += 1;
                    self.out.gone += usize::from(!removed);
                }
                Err(f) => {
                    self.out.interrupted = matches!(f.problem, Problem::Interrupted);
                    self.out.left_aside = matches!(f.problem, Problem::LeftAside { .. });
                    self.out.failed = Some(f);
                    break;
                }
            }
        }
    }

    /// Deletes one target: `Ok(false)` when it is already gone (a name on
    /// the way to it, or its own, is not found).
    fn target(&mut self, t: &Target) -> Result<bool, Failure> {
        let path = t.path();
        let fail = |problem| Failure {
            path: path.clone(),
            problem,
        };
        let io_fail = |e: io::Error| Failure {
            path: path.clone(),
            problem: Problem::Io(e),
        };
        if t.idents.len() != t.names.len() + 1 {
            return Err(fail(Problem::Unidentified));
        }
        let check = |fd: BorrowedFd<'_>, depth: usize| -> Result<Ident, Failure> {
            let now = ident_of(&statx_fd(fd).map_err(|e| io_fail(e.into()))?);
            let then = t.idents[depth];
            if now != then {
                return Err(fail(Problem::Replaced {
                    at: t.path_to(depth),
                    now,
                    then,
                }));
            }
            Ok(now)
        };
        // The directory holding the entry, and the entry's name in it.
        let (parent, name) = match t.names.split_last() {
            Some((name, above)) => {
                // The root as given (the kernel resolves it, as the scan's
                // statx did), then each name below it: every level must be
                // what the scan saw.
                let mut fd = match rustix::fs::openat(
                    CWD,
                    cstr(&t.root).map_err(io_fail)?.as_c_str(),
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                    Mode::empty(),
                ) {
                    Ok(fd) => fd,
                    Err(Errno::NOENT) => return Ok(false),
                    Err(e) => return Err(io_fail(e.into())),
                };
                check(fd.as_fd(), 0)?;
                for (i, n) in above.iter().enumerate() {
                    fd = match rustix::fs::openat(
                        &fd,
                        cstr(n).map_err(io_fail)?.as_c_str(),
                        DIR_FLAGS,
                        Mode::empty(),
                    ) {
                        Ok(fd) => fd,
                        Err(Errno::NOENT) => return Ok(false),
                        Err(e) => return Err(io_fail(e.into())),
                    };
                    check(fd.as_fd(), i + 1)?;
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
                // The root's own identity is checked below, by its name.
                let fd = match rustix::fs::openat(
                    CWD,
                    cstr(dir).map_err(io_fail)?.as_c_str(),
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                    Mode::empty(),
                ) {
                    Ok(fd) => fd,
                    Err(Errno::NOENT) => return Ok(false),
                    Err(e) => return Err(io_fail(e.into())),
                };
                (fd, base.to_vec())
            }
        };
        let depth = t.names.len();
        self.note_fs(parent.as_fd()).map_err(io_fail)?;
        let name = cstr(&name).map_err(io_fail)?;
        let st =
            match rustix::fs::statx(&parent, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW, ID_MASK) {
                Ok(st) => st,
                Err(Errno::NOENT) => return Ok(false),
                Err(e) => return Err(io_fail(e.into())),
            };
        let ft = FileType::from_raw_mode(st.stx_mode.into());
        if (ft == FileType::Directory) != t.dir {
            return Err(fail(Problem::Changed { now: what(ft) }));
        }
        let want = t.idents[depth];
        if ident_of(&st) != want {
            return Err(fail(Problem::Replaced {
                at: path.clone(),
                now: ident_of(&st),
                then: want,
            }));
        }
        if self.stop.load(Ordering::Relaxed) {
            return Err(fail(Problem::Interrupted));
        }
        if !t.dir {
            rustix::fs::unlinkat(&parent, name.as_c_str(), AtFlags::empty())
                .map_err(|e| io_fail(e.into()))?;
            self.out.entries += 1;
            return Ok(true);
        }
        let up = ident_of(&statx_fd(parent.as_fd()).map_err(|e| io_fail(e.into()))?);
        if up.mnt != want.mnt {
            return Err(fail(Problem::Mount { at: path.clone() }));
        }
        let fd = rustix::fs::openat(&parent, name.as_c_str(), DIR_FLAGS, Mode::empty())
            .map_err(|e| io_fail(e.into()))?;
        // The name may have been swapped since the statx: the one opened
        // is checked again.
        check(fd.as_fd(), depth)?;
        if let Some(at) = mounts_inside(fd.as_fd(), &path).into_iter().next() {
            return Err(fail(Problem::Mount { at }));
        }
        if want.dev != up.dev {
            return self
                .subvolume(parent.as_fd(), &fd, name.as_c_str(), &path)
                .map(|()| true);
        }
        self.empty_and_remove(parent.as_fd(), fd, want, &name, &path, &t.inside)
            .map(|()| true)
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

    /// Flushes the filesystems touched once and adds up what they report
    /// as freed, read again until the figure holds still: Btrfs drops
    /// deleted subvolumes in the background (the cleaner, woken by the
    /// flush), XFS frees unlinked inodes' blocks in the background too
    /// (deferred inactivation, which `statfs` hurries along).
    fn measure(&mut self) {
        let is_btrfs = |fs: &Fs| fs.key.0 == magic::BTRFS;
        let fss = &self.filesystems;
        let sync = || {
            for fs in fss {
                if is_btrfs(fs) {
                    let _ = btrfs::sync_and_clean(fs.fd.as_fd());
                } else {
                    let _ = rustix::fs::syncfs(&fs.fd);
                }
            }
        };
        let read = || -> i128 {
            fss.iter()
                .map(|fs| {
                    let after = free_bytes(fs.fd.as_fd()).unwrap_or(fs.free_before);
                    after as i128 - fs.free_before as i128
                })
                .sum()
        };
        // Deleted subvolumes not dropped yet: None when the kernel does not
        // say (Linux < 6.8).
        let pending = || -> Option<u32> {
            fss.iter()
                .filter(|fs| is_btrfs(fs))
                .map(|fs| btrfs::dead_subvolumes(fs.fd.as_fd()))
                .try_fold(0u32, |n, c| c.ok().map(|c| n.saturating_add(c)))
        };
        let (reported, settled) = settle(sync, read, pending, self.out.subvolumes > 0);
        self.out.reported = reported;
        self.out.settled = settled;
        self.out.inode_chunk = match &self.filesystems[..] {
            [one] if one.key.0 == magic::XFS => sdu_sys::xfs::geometry(one.fd.as_fd())
                .ok()
                .flatten()
                .map(|g| 64 * u64::from(g.inodesize)),
            _ => None,
        };
    }
}

/// Flushes (`sync`), then reads the freed figure (`read`) every 50 ms
/// until it holds still: 300 ms, or 1 s while `pending` does not say the
/// cleaner is done with the deleted subvolumes. Gives up after 3 s (10 s
/// while it is not). Returns the last figure and whether it is final.
///
/// It flushes again before every read only while deleted subvolumes are
/// being dropped (`subvolumes`): the cleaner frees their extents in
/// transactions of its own, which `statfs` shows only once committed.
fn settle(
    mut sync: impl FnMut(),
    mut read: impl FnMut() -> i128,
    mut pending: impl FnMut() -> Option<u32>,
    subvolumes: bool,
) -> (i128, bool) {
    sync();
    let t0 = Instant::now();
    let mut reported = read();
    let mut still = Instant::now();
    let settled = loop {
        let known_clean = !subvolumes || pending() == Some(0);
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
        if subvolumes {
            sync();
        }
        let now = read();
        if now != reported {
            reported = now;
            still = Instant::now();
        }
    };
    (reported, settled)
}

#[cfg(test)]
mod tests;
