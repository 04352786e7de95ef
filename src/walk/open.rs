//! Every rule for opening what the walk reads: directories and files are
//! opened relative to their parent's fd, never through a symlink (unless
//! `-L`), never blocking on a FIFO, and checked against what was stat-ed.
//!
//! - Directories get `O_NOATIME` only where it is permitted (the owner, or
//!   root), and one open retries without it if it is refused anyway
//!   ([`openat_noatime`], the only place that retry is written). Files,
//!   opened only for FIEMAP, which reads no data, never ask for it.
//! - A directory that was replaced since it was stat-ed is never read in its
//!   place ([`check_dir`]): that is a [`DirError::Replaced`], reported.
//! - As root, in a directory others can change, a file is opened through an
//!   `O_PATH` check ([`guarded`], [`open_regular`]), so that a FIFO or
//!   device swapped in is never opened (docs/SECURITY.md).

use std::ffi::CStr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use rustix::fs::{self as rfs, CWD, Mode, OFlags, Statx, StatxFlags};
use rustix::io::Errno;

use crate::figures::Kind;

/// The statx fields sdu reads. `UID` lets it decide whether `O_NOATIME`
/// is permitted without a failing open; `MNT_ID` is what `-x` compares (a
/// Btrfs subvolume has its own `st_dev` but is not a mount point).
pub(super) const MASK: StatxFlags = StatxFlags::TYPE
    .union(StatxFlags::MNT_ID)
    .union(StatxFlags::MODE)
    .union(StatxFlags::NLINK)
    .union(StatxFlags::UID)
    .union(StatxFlags::INO)
    .union(StatxFlags::SIZE)
    .union(StatxFlags::BLOCKS)
    .union(StatxFlags::ATIME)
    .union(StatxFlags::MTIME)
    .union(StatxFlags::CTIME)
    .union(StatxFlags::BTIME);

/// The device number of a statx result.
pub(super) fn dev_of(st: &Statx) -> u64 {
    rfs::makedev(st.stx_dev_major, st.stx_dev_minor)
}

/// The mount a statx result lies on, as `-x` compares it: its mount id
/// where the kernel fills one in (`STATX_MNT_ID`, Linux 5.8), else its
/// device number, as du compares `st_dev` (then a Btrfs subvolume counts
/// as another file system).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mount {
    Id(u64),
    Dev(u64),
}

/// The [`Mount`] of `st`.
pub(super) fn mount_of(st: &Statx) -> Mount {
    if StatxFlags::from_bits_retain(st.stx_mask).contains(StatxFlags::MNT_ID) {
        Mount::Id(st.stx_mnt_id)
    } else {
        Mount::Dev(dev_of(st))
    }
}

/// Why a directory could not be opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum DirError {
    /// It (or a directory on the way to it) is gone, or is no directory
    /// any more: removed since its parent listed it, which du skips quietly
    /// (a root given on the command line is reported with the error).
    Gone(Errno),
    /// A different directory now has its name: replaced since it was
    /// stat-ed. Reported, so that its contents are never silently missing.
    Replaced,
    /// Any other failure (permission denied...).
    Errno(Errno),
}

impl From<Errno> for DirError {
    fn from(e: Errno) -> Self {
        match e {
            Errno::NOENT | Errno::NOTDIR | Errno::LOOP => DirError::Gone(e),
            e => DirError::Errno(e),
        }
    }
}

/// The flags to open a directory with. `owner` is the directory's uid when
/// known: `O_NOATIME` is allowed to the owner and to root (CAP_FOWNER), and
/// asking for it otherwise costs a failed open.
pub(super) fn dir_flags(euid: u32, owner: Option<u32>, follow_links: bool) -> OFlags {
    let mut f = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    if !follow_links {
        f |= OFlags::NOFOLLOW;
    }
    if euid == 0 || owner == Some(euid) {
        f |= OFlags::NOATIME;
    }
    f
}

/// The flags to open a regular file for its extents: read-only, no
/// controlling terminal, never through a symlink unless it was stat-ed
/// through one (`follow`). No `O_NOATIME`: opening a file and FIEMAP read
/// no data and do not touch its atime, and asking for it would cost a
/// failed open and a retry on every file the caller does not own.
pub(super) fn file_flags(follow: bool) -> OFlags {
    let mut flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY;
    if !follow {
        flags |= OFlags::NOFOLLOW;
    }
    flags
}

/// Opens `name`, which getdents listed as a regular file, before it is
/// stat-ed: the file is then stat-ed through this fd
/// (`statx(fd, "", AT_EMPTY_PATH)`), which saves a path lookup and the
/// `fstat` that checks the opened inode. Non-blocking and without a
/// controlling terminal, as [`open_regular`] opens unguarded names: a FIFO
/// swapped in since getdents cannot block it, and whatever was opened is
/// closed unread unless the `statx` on it shows a regular file. Only for
/// directories that need no `O_PATH` check ([`guarded`]).
pub(super) fn open_listed_file(dirfd: BorrowedFd<'_>, name: &CStr) -> Result<OwnedFd, Errno> {
    rfs::openat(
        dirfd,
        name,
        file_flags(false) | OFlags::NONBLOCK,
        Mode::empty(),
    )
}

/// `openat(dirfd, name, flags)`, retried once without `O_NOATIME` when that
/// is refused (EPERM: the caller turned out not to own the inode).
fn openat_noatime(dirfd: BorrowedFd<'_>, name: &CStr, flags: OFlags) -> Result<OwnedFd, Errno> {
    match rfs::openat(dirfd, name, flags, Mode::empty()) {
        Err(Errno::PERM) if flags.contains(OFlags::NOATIME) => {
            rfs::openat(dirfd, name, flags - OFlags::NOATIME, Mode::empty())
        }
        r => r,
    }
}

/// Opens directory `name` relative to `dirfd` and checks that it is the
/// directory `(dev, ino)` that was stat-ed.
pub(super) fn open_dir(
    dirfd: BorrowedFd<'_>,
    name: &CStr,
    flags: OFlags,
    dev: u64,
    ino: u64,
) -> Result<OwnedFd, DirError> {
    let fd = openat_noatime(dirfd, name, flags)?;
    check_dir(&fd, dev, ino)?;
    Ok(fd)
}

/// Is the open directory `fd` the one `(dev, ino)` that was stat-ed?
pub(super) fn check_dir(fd: &OwnedFd, dev: u64, ino: u64) -> Result<(), DirError> {
    let st = rfs::fstat(fd)?;
    if same_inode(&st, dev, ino) {
        Ok(())
    } else {
        Err(DirError::Replaced)
    }
}

/// Does `st` describe inode `(dev, ino)`?
fn same_inode(st: &rfs::Stat, dev: u64, ino: u64) -> bool {
    st.st_ino == ino && st.st_dev == dev
}

/// Must files in this directory be opened through an `O_PATH` check?
///
/// Only root needs it (see [`open_regular`]), and only where someone else
/// can change the directory's entries, that is swap a FIFO in between the
/// statx and the open: a directory owned by another user, or writable by
/// group or others (POSIX ACLs granting write show in the group bits).
/// Root-owned `0755` trees, like /usr, need no check.
pub(super) fn guarded(euid: u32, dir: &Statx) -> bool {
    euid == 0 && (dir.stx_uid != 0 || u32::from(dir.stx_mode) & 0o022 != 0)
}

/// What the opened inode says of itself: the figures of a mapped file come
/// from here, never from an earlier stat by name.
#[derive(Clone, Copy, Debug)]
pub(super) struct OpenedStat {
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    pub(crate) size: u64,
    pub(crate) blocks: u64,
    pub(crate) ctime: (i64, u32),
}

impl OpenedStat {
    fn of_stat(st: &rfs::Stat) -> OpenedStat {
        OpenedStat {
            dev: st.st_dev,
            ino: st.st_ino,
            size: st.st_size as u64,
            blocks: st.st_blocks as u64,
            ctime: (st.st_ctime, st.st_ctime_nsec as u32),
        }
    }

    /// From a `statx` made on the open fd itself; `dev` is its device.
    pub(super) fn of_statx(st: &Statx, dev: u64) -> OpenedStat {
        OpenedStat {
            dev,
            ino: st.stx_ino,
            size: st.stx_size,
            blocks: st.stx_blocks,
            ctime: (st.stx_ctime.tv_sec, st.stx_ctime.tv_nsec),
        }
    }
}

/// An open regular file and its current figures.
pub(super) type OpenFile = (OwnedFd, OpenedStat);

/// Opens `name` in `dirfd` for reading only if it is a regular file now,
/// with its current `fstat`; `Ok(None)` when it is gone or is something
/// else.
///
/// As root in a directory others can change (`guard`, see [`guarded`]),
/// the name is first opened with `O_PATH`, which opens nothing (no FIFO
/// writer is released, no device driver is called), and checked with
/// `fstat`; only a regular file is then opened for reading, through
/// `/proc/self/fd`, which reopens that very inode. That costs more per
/// file (docs/decisions.md, "Opening a file as root in a directory others
/// can change"), so an unprivileged run, which cannot have device nodes
/// planted for it (creating one needs CAP_MKNOD), opens the name directly
/// with `O_NONBLOCK` (a FIFO swapped in since the statx can neither block
/// it nor be read) and checks the type after. Where /proc is not mounted,
/// root does the same.
pub(super) fn open_regular(
    dirfd: BorrowedFd<'_>,
    name: &CStr,
    flags: OFlags,
    guard: bool,
) -> Result<Option<OpenFile>, Errno> {
    let gone = |e: Errno| match e {
        Errno::NOENT | Errno::LOOP | Errno::NXIO | Errno::NOTDIR => Ok(None),
        e => Err(e),
    };
    if !guard {
        return open_checked(dirfd, name, flags).or_else(gone);
    }
    let path_flags = OFlags::PATH | OFlags::CLOEXEC | (flags & OFlags::NOFOLLOW);
    let pfd = match rfs::openat(dirfd, name, path_flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(e) => return gone(e),
    };
    let st = match rfs::fstat(&pfd) {
        Ok(st) => st,
        Err(e) => return gone(e),
    };
    if Kind::from_mode(st.st_mode) != Kind::File {
        return Ok(None);
    }
    let mut buf = [0u8; 16];
    let n = fd_name(&mut buf, pfd.as_raw_fd());
    // The magic link must be followed (it is the inode checked above), so
    // no O_NOFOLLOW here.
    let opened = PROC_FD.with(|dir| match dir.get_or_init(|| proc_fd_dir().ok()) {
        Some(d) => rfs::openat(d.as_fd(), n, flags - OFlags::NOFOLLOW, Mode::empty()),
        None => Err(Errno::NOENT),
    });
    match opened {
        Ok(fd) => Ok(Some((fd, OpenedStat::of_stat(&st)))),
        // No /proc: open the name itself, non-blocking, and check again.
        Err(Errno::NOENT) => open_checked(dirfd, name, flags).or_else(gone),
        Err(e) => Err(e),
    }
}

/// Opens for its extents the regular file open at `pathfd` (an `O_PATH`
/// fd, stat-ed as a regular file): that very inode, through
/// `/proc/self/fd`, non-blocking and without a controlling terminal.
/// `Err` without /proc.
pub(super) fn reopen_file(pathfd: &OwnedFd) -> Result<OwnedFd, Errno> {
    let mut buf = [0u8; 16];
    let n = fd_name(&mut buf, pathfd.as_raw_fd());
    // The magic link must be followed: no O_NOFOLLOW.
    let flags = file_flags(true) | OFlags::NONBLOCK;
    PROC_FD.with(|dir| match dir.get_or_init(|| proc_fd_dir().ok()) {
        Some(d) => rfs::openat(d.as_fd(), n, flags, Mode::empty()),
        None => Err(Errno::NOENT),
    })
}

/// Opens for reading, with `flags`, the directory `(dev, ino)` open at
/// `pathfd` (an `O_PATH` fd), and checks it: that very inode, through
/// `/proc/self/fd`, which asks for read permission on it, as an open by its
/// name does (`.` relative to it would ask for search permission too).
/// Without /proc, `.` relative to it.
pub(super) fn reopen_dir(
    pathfd: BorrowedFd<'_>,
    flags: OFlags,
    dev: u64,
    ino: u64,
) -> Result<OwnedFd, DirError> {
    let mut buf = [0u8; 16];
    let n = fd_name(&mut buf, pathfd.as_raw_fd());
    // The magic link must be followed: no O_NOFOLLOW.
    let opened = PROC_FD.with(|dir| {
        dir.get_or_init(|| proc_fd_dir().ok())
            .as_ref()
            .map(|d| openat_noatime(d.as_fd(), n, flags - OFlags::NOFOLLOW))
    });
    let fd = match opened {
        Some(r) => r?,
        None => openat_noatime(pathfd, c".", flags)?,
    };
    check_dir(&fd, dev, ino)?;
    Ok(fd)
}

/// Opens `name` directly, non-blocking, and keeps it only if it is a
/// regular file.
fn open_checked(
    dirfd: BorrowedFd<'_>,
    name: &CStr,
    flags: OFlags,
) -> Result<Option<OpenFile>, Errno> {
    let fd = rfs::openat(dirfd, name, flags | OFlags::NONBLOCK, Mode::empty())?;
    let st = rfs::fstat(&fd)?;
    if Kind::from_mode(st.st_mode) != Kind::File {
        return Ok(None);
    }
    Ok(Some((fd, OpenedStat::of_stat(&st))))
}

thread_local! {
    /// `/proc/self/fd`, opened once per thread (`None` without /proc).
    static PROC_FD: std::cell::OnceCell<Option<OwnedFd>> = const { std::cell::OnceCell::new() };
}

fn proc_fd_dir() -> Result<OwnedFd, Errno> {
    rfs::openat(
        CWD,
        c"/proc/self/fd",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// The decimal name of `fd` as a C string in `buf`, without allocating.
fn fd_name(buf: &mut [u8; 16], fd: i32) -> &CStr {
    let mut digits = [0u8; 12];
    let mut n = fd.unsigned_abs();
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..len {
        buf[i] = digits[len - 1 - i];
    }
    buf[len] = 0;
    CStr::from_bytes_until_nul(&buf[..]).expect("NUL-terminated")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mount_without_mnt_id_is_the_device() {
        let mut st = rfs::statx(CWD, c"/", rfs::AtFlags::empty(), MASK).unwrap();
        let other = |st: &Statx| {
            let mut o = *st;
            o.stx_dev_minor = o.stx_dev_minor.wrapping_add(1);
            o.stx_mnt_id = o.stx_mnt_id.wrapping_add(1);
            o
        };
        st.stx_mask |= StatxFlags::MNT_ID.bits();
        assert_eq!(mount_of(&st), Mount::Id(st.stx_mnt_id));
        assert_ne!(mount_of(&st), mount_of(&other(&st)));
        // A kernel without STATX_MNT_ID leaves the mount id 0 everywhere:
        // the device number still tells the mounts apart.
        st.stx_mask &= !StatxFlags::MNT_ID.bits();
        st.stx_mnt_id = 0;
        let mut o = other(&st);
        o.stx_mnt_id = 0;
        assert_ne!(mount_of(&st), mount_of(&o));
        assert_eq!(mount_of(&st), Mount::Dev(dev_of(&st)));
    }

    #[test]
    fn fd_names() {
        let mut b = [0u8; 16];
        assert_eq!(fd_name(&mut b, 0), c"0");
        assert_eq!(fd_name(&mut b, 1234), c"1234");
        assert_eq!(fd_name(&mut b, i32::MAX), c"2147483647");
    }

    #[test]
    fn noatime_only_where_permitted() {
        assert!(dir_flags(0, None, false).contains(OFlags::NOATIME));
        assert!(dir_flags(1000, Some(1000), false).contains(OFlags::NOATIME));
        assert!(!dir_flags(1000, Some(1001), false).contains(OFlags::NOATIME));
        assert!(!dir_flags(1000, None, false).contains(OFlags::NOATIME));
        assert!(dir_flags(1000, None, false).contains(OFlags::NOFOLLOW));
        assert!(!dir_flags(1000, None, true).contains(OFlags::NOFOLLOW));
        // Files: never O_NOATIME (an open reads no data); never through a
        // symlink unless stat-ed through one.
        assert!(!file_flags(false).contains(OFlags::NOATIME));
        assert!(file_flags(false).contains(OFlags::NOFOLLOW | OFlags::NOCTTY));
        assert!(!file_flags(true).contains(OFlags::NOFOLLOW));
    }

    /// Regression: a replaced directory was skipped quietly when opened by
    /// name and reported as ESTALE when reopened through the fd cache. Both
    /// now go through `check_dir`: a different inode is `Replaced`.
    #[test]
    fn replaced_directory_is_reported_not_gone() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a");
        std::fs::create_dir(&a).unwrap();
        let st = rfs::stat(&a).unwrap();
        let parent =
            rfs::open(d.path(), OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap();
        let flags = dir_flags(1, None, false);
        let open = || open_dir(parent.as_fd(), c"a", flags, st.st_dev, st.st_ino);
        assert!(open().is_ok());
        std::fs::rename(&a, d.path().join("old")).unwrap();
        assert_eq!(open().err(), Some(DirError::Gone(Errno::NOENT)));
        std::fs::create_dir(&a).unwrap();
        assert_eq!(open().err(), Some(DirError::Replaced));
    }
}
