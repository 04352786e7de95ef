//! What a Btrfs filesystem and its subvolumes tell of themselves, to
//! anyone: the filesystem's `fsid` and node size (`BTRFS_IOC_FS_INFO`),
//! the bytes its data block groups use (`BTRFS_IOC_SPACE_INFO`, read by
//! [`super::space`]), a
//! subvolume's identity (`BTRFS_IOC_GET_SUBVOL_INFO`) and whether other
//! subvolumes lie in it (`BTRFS_IOC_GET_SUBVOL_ROOTREF`). Unprivileged.
//!
//! Each argument is a `#[repr(C)]` mirror of its `include/uapi/linux/btrfs.h`
//! struct, sizes and offsets pinned at compile time, opcodes by a test.

use std::io;
use std::os::fd::BorrowedFd;

use rustix::ioctl::{Opcode, Updater, ioctl, opcode};

/// A Btrfs subvolume, as [`subvol`] reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Subvol {
    /// Its id (the tree's objectid; 5 for the top-level subvolume).
    pub id: u64,
    /// Its UUID and the UUID of the subvolume it is a snapshot of (zero
    /// when it is none).
    pub ids: ([u8; 16], [u8; 16]),
    /// Its creation time (`otime`), seconds and nanoseconds: for a
    /// snapshot, when its files were frozen.
    pub created: (i64, u32),
}

/// `struct btrfs_ioctl_fs_info_args`: in/out argument of `BTRFS_IOC_FS_INFO`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct BtrfsFsInfoArgs {
    max_id: u64,
    num_devices: u64,
    fsid: [u8; 16],
    nodesize: u32,
    sectorsize: u32,
    clone_alignment: u32,
    csum_type: u16,
    csum_size: u16,
    /// In/out: requests extra fields; zero asks for none.
    flags: u64,
    generation: u64,
    metadata_uuid: [u8; 16],
    reserved: [u8; 944],
}

const _: () = assert!(size_of::<BtrfsFsInfoArgs>() == 1024);
const _: () = assert!(std::mem::offset_of!(BtrfsFsInfoArgs, fsid) == 16);
const _: () = assert!(std::mem::offset_of!(BtrfsFsInfoArgs, nodesize) == 32);
const _: () = assert!(std::mem::offset_of!(BtrfsFsInfoArgs, flags) == 48);

/// `_IOR(0x94, 31, struct btrfs_ioctl_fs_info_args)`.
pub const BTRFS_IOC_FS_INFO: Opcode = opcode::read::<BtrfsFsInfoArgs>(0x94, 31);

/// `ioctl(fd, BTRFS_IOC_FS_INFO)`—the `fsid` of the Btrfs filesystem.
pub fn fsid(fd: BorrowedFd<'_>) -> io::Result<[u8; 16]> {
    Ok(fs_info(fd)?.fsid)
}

/// `ioctl(fd, BTRFS_IOC_FS_INFO)`—the node size of the Btrfs filesystem,
/// in bytes: no item of its trees is larger.
pub fn nodesize(fd: BorrowedFd<'_>) -> io::Result<u32> {
    Ok(fs_info(fd)?.nodesize)
}

fn fs_info(fd: BorrowedFd<'_>) -> io::Result<BtrfsFsInfoArgs> {
    let mut args = BtrfsFsInfoArgs {
        max_id: 0,
        num_devices: 0,
        fsid: [0; 16],
        nodesize: 0,
        sectorsize: 0,
        clone_alignment: 0,
        csum_type: 0,
        csum_size: 0,
        flags: 0,
        generation: 0,
        metadata_uuid: [0; 16],
        reserved: [0; 944],
    };
    // SAFETY: BTRFS_IOC_FS_INFO reads (for `flags`) and writes one 1024-byte
    // `struct btrfs_ioctl_fs_info_args` (layout mirrored, size pinned above);
    // `args` is zeroed (no extra fields requested) and exclusively borrowed.
    unsafe {
        ioctl(
            fd,
            Updater::<{ BTRFS_IOC_FS_INFO }, BtrfsFsInfoArgs>::new(&mut args),
        )?
    };
    Ok(args)
}

/// `struct btrfs_ioctl_timespec`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct BtrfsTimespec {
    sec: u64,
    nsec: u32,
}

/// `struct btrfs_ioctl_get_subvol_info_args`: output of
/// `BTRFS_IOC_GET_SUBVOL_INFO`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct BtrfsSubvolInfo {
    treeid: u64,
    name: [u8; 256],
    parent_id: u64,
    dirid: u64,
    generation: u64,
    flags: u64,
    uuid: [u8; 16],
    parent_uuid: [u8; 16],
    received_uuid: [u8; 16],
    ctransid: u64,
    otransid: u64,
    stransid: u64,
    rtransid: u64,
    ctime: BtrfsTimespec,
    otime: BtrfsTimespec,
    stime: BtrfsTimespec,
    rtime: BtrfsTimespec,
    reserved: [u64; 8],
}

const _: () = assert!(size_of::<BtrfsTimespec>() == 16);
const _: () = assert!(size_of::<BtrfsSubvolInfo>() == 504);
const _: () = assert!(std::mem::offset_of!(BtrfsSubvolInfo, uuid) == 296);
const _: () = assert!(std::mem::offset_of!(BtrfsSubvolInfo, parent_uuid) == 312);
const _: () = assert!(std::mem::offset_of!(BtrfsSubvolInfo, otime) == 392);

/// `_IOR(0x94, 60, struct btrfs_ioctl_get_subvol_info_args)` (Linux ≥ 4.18).
pub const BTRFS_IOC_GET_SUBVOL_INFO: Opcode = opcode::read::<BtrfsSubvolInfo>(0x94, 60);

/// `ioctl(fd, BTRFS_IOC_GET_SUBVOL_INFO)`—the UUID of the Btrfs subvolume
/// holding `fd`, the UUID of the subvolume it is a snapshot of (zero when
/// it is none) and its creation time. Unprivileged.
pub fn subvol(fd: BorrowedFd<'_>) -> io::Result<Subvol> {
    let mut args = BtrfsSubvolInfo {
        treeid: 0,
        name: [0; 256],
        parent_id: 0,
        dirid: 0,
        generation: 0,
        flags: 0,
        uuid: [0; 16],
        parent_uuid: [0; 16],
        received_uuid: [0; 16],
        ctransid: 0,
        otransid: 0,
        stransid: 0,
        rtransid: 0,
        ctime: BtrfsTimespec::default(),
        otime: BtrfsTimespec::default(),
        stime: BtrfsTimespec::default(),
        rtime: BtrfsTimespec::default(),
        reserved: [0; 8],
    };
    // SAFETY: BTRFS_IOC_GET_SUBVOL_INFO writes one 504-byte `struct
    // btrfs_ioctl_get_subvol_info_args` (layout mirrored, size pinned
    // above); `args` is initialised and exclusively borrowed.
    unsafe {
        ioctl(
            fd,
            Updater::<{ BTRFS_IOC_GET_SUBVOL_INFO }, BtrfsSubvolInfo>::new(&mut args),
        )?
    };
    Ok(Subvol {
        id: args.treeid,
        ids: (args.uuid, args.parent_uuid),
        created: (
            i64::try_from(args.otime.sec).unwrap_or(i64::MAX),
            args.otime.nsec,
        ),
    })
}

/// `struct btrfs_ioctl_get_subvol_rootref_args`: in and out of
/// `BTRFS_IOC_GET_SUBVOL_ROOTREF`, the subvolumes whose root lies in a
/// subvolume (its `ROOT_REF` items), 255 at a time.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct BtrfsRootrefArgs {
    min_treeid: u64,
    /// `(treeid, dirid)` of each.
    rootref: [[u64; 2]; 255],
    num_items: u8,
    align: [u8; 7],
}

const _: () = assert!(size_of::<BtrfsRootrefArgs>() == 4096);
const _: () = assert!(std::mem::offset_of!(BtrfsRootrefArgs, num_items) == 4088);

/// `_IOWR(0x94, 61, struct btrfs_ioctl_get_subvol_rootref_args)` (Linux ≥
/// 4.18).
pub const BTRFS_IOC_GET_SUBVOL_ROOTREF: Opcode = opcode::read_write::<BtrfsRootrefArgs>(0x94, 61);

/// `ioctl(fd, BTRFS_IOC_GET_SUBVOL_ROOTREF)`: does some subvolume lie in
/// the Btrfs subvolume holding `fd` (anywhere in it, not only under `fd`)?
/// Unprivileged; `EOVERFLOW` means more than 255 do.
pub fn has_nested_subvol(fd: BorrowedFd<'_>) -> io::Result<bool> {
    let mut args = BtrfsRootrefArgs {
        min_treeid: 0,
        rootref: [[0; 2]; 255],
        num_items: 0,
        align: [0; 7],
    };
    // SAFETY: BTRFS_IOC_GET_SUBVOL_ROOTREF reads and writes one 4096-byte
    // `struct btrfs_ioctl_get_subvol_rootref_args` (layout mirrored, size
    // and offset pinned above); `args` is initialised and exclusively
    // borrowed.
    let res = unsafe {
        ioctl(
            fd,
            Updater::<{ BTRFS_IOC_GET_SUBVOL_ROOTREF }, BtrfsRootrefArgs>::new(&mut args),
        )
    };
    match res {
        Ok(()) => Ok(args.num_items > 0),
        Err(rustix::io::Errno::OVERFLOW) => Ok(true),
        Err(e) => Err(e.into()),
    }
}

/// `ioctl(fd, BTRFS_IOC_SPACE_INFO)`: the bytes used in the data block
/// groups of the Btrfs filesystem holding `fd` (what `btrfs filesystem df`
/// shows as Data used: each byte once, whatever the profile); `None` when
/// data and metadata share block groups (`mixed-bg`), where data alone is
/// not told apart. Unprivileged. Every kind of block group:
/// [`super::space::space_info`].
pub fn data_used(fd: BorrowedFd<'_>) -> io::Result<Option<u64>> {
    use super::space::{BLOCK_GROUP_DATA, BLOCK_GROUP_METADATA, space_info};
    let mut used = 0u64;
    for s in space_info(fd)? {
        if s.flags & BLOCK_GROUP_DATA != 0 {
            if s.flags & BLOCK_GROUP_METADATA != 0 {
                return Ok(None);
            }
            used = used.saturating_add(s.used);
        }
    }
    Ok(Some(used))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::unnecessary_cast)]
    #[test]
    fn opcodes_match_the_kernel_headers() {
        // <linux/btrfs.h> (linux-libc-dev).
        assert_eq!(BTRFS_IOC_FS_INFO as u32, 0x8400_941f);
        assert_eq!(BTRFS_IOC_GET_SUBVOL_INFO as u32, 0x81f8_943c);
        assert_eq!(BTRFS_IOC_GET_SUBVOL_ROOTREF as u32, 0xd000_943d);
    }
}
