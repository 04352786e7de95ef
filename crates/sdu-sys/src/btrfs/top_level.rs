//! As root: the top level of a Btrfs filesystem (subvolume 5, where
//! subvolumes not mounted anywhere lie) reached without mounting it
//! anywhere. The new mount API makes a mount of it that is only an fd: no
//! mount point, nothing another process sees, gone when the last fd of it
//! is closed. Paths below it are resolved beneath that fd, never through
//! a symlink.
//!
//! # References
//!  - `fsopen(2)`, `fsconfig(2)`, `fsmount(2)` (Linux ≥ 5.2); Btrfs's
//!    `subvolid` mount option
//!  - `openat2(2)` (Linux ≥ 5.6): `RESOLVE_BENEATH`, `RESOLVE_NO_SYMLINKS`,
//!    `RESOLVE_NO_MAGICLINKS`, `RESOLVE_NO_XDEV`

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::mount::{
    FsMountFlags, FsOpenFlags, MountAttrFlags, fsconfig_create, fsconfig_set_flag,
    fsconfig_set_string, fsmount, fsopen,
};

pub use crate::mount::open_beneath;

/// The top level (`subvolid=5`) of the Btrfs filesystem on device
/// `source` (a device file, as `/proc/self/mountinfo` names the source of
/// a mount of it), mounted read-only, `nosuid`, `nodev`, `noexec`, and
/// detached: the fd of its root directory is the whole mount. A
/// filesystem already mounted is shared, not mounted twice, and its
/// superblock is asked for read-only (`ro`): without that flag Btrfs makes
/// a superblock mounted read-only writable again for the new mount, and
/// its cleaner then drops the subvolumes deleted before, on a filesystem
/// its owner mounted read-only.
///
/// # Errors
/// `EPERM` without `CAP_SYS_ADMIN`; `ENOSYS` before Linux 5.2; the
/// filesystem's own (`ENOENT`, `EINVAL`) for a source it cannot mount.
pub fn mount_top_level(source: &[u8]) -> io::Result<OwnedFd> {
    let fs = fsopen("btrfs", FsOpenFlags::FSOPEN_CLOEXEC)?;
    fsconfig_set_string(&fs, "source", source)?;
    fsconfig_set_string(&fs, "subvolid", "5")?;
    fsconfig_set_flag(&fs, "ro")?;
    fsconfig_create(&fs)?;
    let attrs = MountAttrFlags::MOUNT_ATTR_RDONLY
        | MountAttrFlags::MOUNT_ATTR_NOSUID
        | MountAttrFlags::MOUNT_ATTR_NODEV
        | MountAttrFlags::MOUNT_ATTR_NOEXEC;
    Ok(fsmount(&fs, FsMountFlags::FSMOUNT_CLOEXEC, attrs)?)
}

/// The parent of the directory open at `dir`, opened `O_PATH` with
/// `openat2` on the same mount only (`..` of a mount's root is refused,
/// never followed out of it).
///
/// # Errors
/// `openat2`'s: `EXDEV` at the root of the mount.
pub fn open_parent(dir: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    let how = ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS | ResolveFlags::NO_XDEV;
    Ok(rustix::fs::openat2(dir, "..", flags, Mode::empty(), how)?)
}
