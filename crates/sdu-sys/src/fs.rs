//! What any filesystem tells of itself: its `statfs` type and the UUID
//! it publishes (`FS_IOC_GETFSUUID`, with Btrfs's `fsid` as a fallback).
//! Unprivileged.
//!
//! # References
//!  - `include/uapi/linux/fs.h`, `include/uapi/linux/magic.h`

use std::io;
use std::os::fd::BorrowedFd;

use rustix::ioctl::{Opcode, Updater, ioctl, opcode};

/// statfs `f_type` magic numbers (linux/magic.h and the filesystems' own
/// headers).
pub mod magic {
    /// `BTRFS_SUPER_MAGIC`.
    pub const BTRFS: u32 = 0x9123_683e;
    /// `XFS_SUPER_MAGIC`.
    pub const XFS: u32 = 0x5846_5342;
    /// `OCFS2_SUPER_MAGIC`.
    pub const OCFS2: u32 = 0x7461_636f;
    /// `BCACHEFS_SUPER_MAGIC`.
    pub const BCACHEFS: u32 = 0xca45_1a4e;
    /// `EXT4_SUPER_MAGIC` (also ext2 and ext3).
    pub const EXT4: u32 = 0xef53;
    /// `TMPFS_MAGIC`.
    pub const TMPFS: u32 = 0x0102_1994;
    /// `NFS_SUPER_MAGIC`.
    pub const NFS: u32 = 0x6969;
    /// `CIFS_SUPER_MAGIC`.
    pub const CIFS: u32 = 0xff53_4d42;
    /// `SMB2_SUPER_MAGIC`.
    pub const SMB2: u32 = 0xfe53_4d42;
}

/// The `statfs` `f_type` of the filesystem holding `fd`.
pub fn fs_type(fd: BorrowedFd<'_>) -> io::Result<u32> {
    let st = rustix::fs::fstatfs(fd)?;
    // f_type is a signed long holding a 32-bit magic: keep its low 32 bits.
    Ok(st.f_type as u32)
}

/// `struct fsuuid2`: output of `FS_IOC_GETFSUUID`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct FsUuid2 {
    len: u8,
    uuid: [u8; 16],
}

const _: () = assert!(size_of::<FsUuid2>() == 17);

/// `_IOR(0x15, 0, struct fsuuid2)` (Linux ≥ 6.10).
pub const FS_IOC_GETFSUUID: Opcode = opcode::read::<FsUuid2>(0x15, 0);

/// The identity of the filesystem holding `fd`: its UUID, zero-padded to 16
/// bytes.
///
/// Subvolumes and snapshots of one Btrfs filesystem share one physical
/// address space but not one `st_dev`: this is the key to use for extents.
/// Tries `FS_IOC_GETFSUUID` (Linux ≥ 6.10, filesystems that publish a UUID:
/// ext4, XFS, tmpfs…), then, on Btrfs, `BTRFS_IOC_FS_INFO` (its `fsid`). Both
/// are unprivileged.
///
/// # Errors
/// The `FS_IOC_GETFSUUID` error (typically `ENOTTY`) when the filesystem
/// publishes no UUID, or an `InvalidData` error if it reports an empty one.
pub fn uuid(fd: BorrowedFd<'_>) -> io::Result<[u8; 16]> {
    let err = match vfs_uuid(fd) {
        Ok(u) => return Ok(u),
        Err(e) => e,
    };
    if fs_type(fd)? == magic::BTRFS {
        return crate::btrfs::fsid(fd);
    }
    Err(err)
}

/// `ioctl(fd, FS_IOC_GETFSUUID)`—the UUID the filesystem publishes (the one
/// blkid shows), zero-padded to 16 bytes.
pub fn vfs_uuid(fd: BorrowedFd<'_>) -> io::Result<[u8; 16]> {
    let mut u = FsUuid2::default();
    // SAFETY: FS_IOC_GETFSUUID writes one 17-byte `struct fsuuid2` (layout
    // mirrored, size pinned above); `u` is exclusively borrowed and
    // initialised.
    unsafe { ioctl(fd, Updater::<{ FS_IOC_GETFSUUID }, FsUuid2>::new(&mut u))? };
    let len = usize::from(u.len);
    if len == 0 || len > u.uuid.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "FS_IOC_GETFSUUID returned an invalid length",
        ));
    }
    let mut out = [0; 16];
    out[..len].copy_from_slice(&u.uuid[..len]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::unnecessary_cast)]
    #[test]
    fn opcode_matches_the_kernel_header() {
        // Linux 6.10's <linux/fs.h>.
        assert_eq!(FS_IOC_GETFSUUID as u32, 0x8011_1500);
    }
}
