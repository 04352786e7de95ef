//! Mounts seen from beneath: a mount's tree copied without the mounts on
//! it, detached (only an fd: no mount point, nothing another process
//! sees, gone when the last fd of it is closed), and paths opened beneath
//! a directory, never above it, through no symlink, on no other mount.
//!
//! # References
//!  - `open_tree(2)` (Linux ≥ 5.2): `OPEN_TREE_CLONE` without
//!    `AT_RECURSIVE` copies the one mount, none of its submounts
//!  - `openat2(2)` (Linux ≥ 5.6): `RESOLVE_BENEATH`, `RESOLVE_NO_SYMLINKS`,
//!    `RESOLVE_NO_MAGICLINKS`, `RESOLVE_NO_XDEV`

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::mount::{OpenTreeFlags, open_tree};

/// A detached copy of the mount `dir` lies on, from `dir` down, without
/// the mounts on it: beneath it, a directory another mount covers is the
/// directory itself, with what it holds. Read-write as the mount is;
/// callers only read.
///
/// # Errors
/// `EPERM` without `CAP_SYS_ADMIN`; `ENOSYS` before Linux 5.2; `EINVAL`
/// for a mount that cannot be copied (one of another mount namespace).
pub fn clone_mount(dir: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    let flags = OpenTreeFlags::OPEN_TREE_CLONE
        | OpenTreeFlags::OPEN_TREE_CLOEXEC
        | OpenTreeFlags::AT_EMPTY_PATH
        | OpenTreeFlags::AT_NO_AUTOMOUNT;
    Ok(open_tree(dir, c"", flags)?)
}

/// The directory `path` (relative, `/`-separated) beneath `dir`, opened
/// for reading (its ioctls need more than `O_PATH`) with `openat2`: never
/// above `dir`, through no symlink and no magic link, on no other mount.
///
/// # Errors
/// `openat2`'s: `ELOOP` for a symlink on the way, `EXDEV` for a way
/// that leaves `dir` or its mount, `ENOTDIR`, `ENOENT`.
pub fn open_beneath(dir: BorrowedFd<'_>, path: &[u8]) -> io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    let how = ResolveFlags::BENEATH
        | ResolveFlags::NO_SYMLINKS
        | ResolveFlags::NO_MAGICLINKS
        | ResolveFlags::NO_XDEV;
    Ok(rustix::fs::openat2(dir, path, flags, Mode::empty(), how)?)
}
