//! The filesystem ioctls the probe needs: XFS reflink support and the
//! filesystem's identity (UUID).
//!
//! Like `crate::extents::fiemap`, one of the seven ioctl modules that may
//! use `unsafe`, only to hand `#[repr(C)]` mirrors of kernel UAPI structs (sizes
//! pinned at compile time, opcodes pinned by a test) to rustix's [`ioctl`].
//! Every call here is unprivileged.
//!
//! # References
//!  - `include/uapi/linux/fs.h`, `include/uapi/linux/btrfs.h`, xfsprogs
//!    `include/xfs/xfs_fs.h`

#![allow(unsafe_code)]

use std::io;
use std::os::fd::BorrowedFd;

use rustix::ioctl::{Opcode, Updater, ioctl, opcode};

/// `XFS_FSOP_GEOM_FLAGS_RMAPBT`: the reverse-mapping btree, which lets
/// `FS_IOC_GETFSMAP` name the owners of data blocks.
pub(crate) const XFS_FSOP_GEOM_FLAGS_RMAPBT: u32 = 1 << 19;
/// `XFS_FSOP_GEOM_FLAGS_REFLINK`: files can share blocks.
pub(crate) const XFS_FSOP_GEOM_FLAGS_REFLINK: u32 = 1 << 20;

/// statfs `f_type` magic numbers (linux/magic.h and the filesystems' own
/// headers).
pub(crate) mod magic {
    /// `BTRFS_SUPER_MAGIC`.
    pub(crate) const BTRFS: u32 = 0x9123_683e;
    /// `XFS_SUPER_MAGIC`.
    pub(crate) const XFS: u32 = 0x5846_5342;
    /// `OCFS2_SUPER_MAGIC`.
    pub(crate) const OCFS2: u32 = 0x7461_636f;
    /// `BCACHEFS_SUPER_MAGIC`.
    pub(crate) const BCACHEFS: u32 = 0xca45_1a4e;
    /// `EXT4_SUPER_MAGIC` (also ext2 and ext3).
    pub(crate) const EXT4: u32 = 0xef53;
    /// `TMPFS_MAGIC`.
    pub(crate) const TMPFS: u32 = 0x0102_1994;
    /// `NFS_SUPER_MAGIC`.
    pub(crate) const NFS: u32 = 0x6969;
    /// `CIFS_SUPER_MAGIC`.
    pub(crate) const CIFS: u32 = 0xff53_4d42;
    /// `SMB2_SUPER_MAGIC`.
    pub(crate) const SMB2: u32 = 0xfe53_4d42;
}

/// `struct xfs_fsop_geom_v4`: output of `XFS_IOC_FSGEOMETRY_V4`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct XfsFsopGeomV4 {
    blocksize: u32,
    rtextsize: u32,
    agblocks: u32,
    agcount: u32,
    logblocks: u32,
    sectsize: u32,
    inodesize: u32,
    imaxpct: u32,
    datablocks: u64,
    rtblocks: u64,
    rtextents: u64,
    logstart: u64,
    uuid: [u8; 16],
    sunit: u32,
    swidth: u32,
    version: i32,
    flags: u32,
    logsectsize: u32,
    rtsectsize: u32,
    dirblocksize: u32,
    logsunit: u32,
}

/// `struct xfs_fsop_geom` (v5): output of `XFS_IOC_FSGEOMETRY`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct XfsFsopGeom {
    v4: XfsFsopGeomV4,
    sick: u32,
    checked: u32,
    reserved: [u64; 17],
}

const _: () = assert!(size_of::<XfsFsopGeomV4>() == 112);
const _: () = assert!(size_of::<XfsFsopGeom>() == 256);
const _: () = assert!(std::mem::offset_of!(XfsFsopGeomV4, agblocks) == 8);
const _: () = assert!(std::mem::offset_of!(XfsFsopGeomV4, agcount) == 12);
const _: () = assert!(std::mem::offset_of!(XfsFsopGeomV4, inodesize) == 24);
const _: () = assert!(std::mem::offset_of!(XfsFsopGeomV4, flags) == 92);

/// `_IOR('X', 126, struct xfs_fsop_geom)`.
pub(crate) const XFS_IOC_FSGEOMETRY: Opcode = opcode::read::<XfsFsopGeom>(b'X', 126);
/// `_IOR('X', 124, struct xfs_fsop_geom_v4)`.
pub(crate) const XFS_IOC_FSGEOMETRY_V4: Opcode = opcode::read::<XfsFsopGeomV4>(b'X', 124);

/// The `statfs` `f_type` of the filesystem holding `fd`.
pub(crate) fn fs_type(fd: BorrowedFd<'_>) -> io::Result<u32> {
    let st = rustix::fs::fstatfs(fd)?;
    // f_type is a signed long holding a 32-bit magic: keep its low 32 bits.
    Ok(st.f_type as u32)
}

/// Whether `fd` lies on an XFS filesystem with reflink (shared blocks)
/// enabled; `Ok(false)` on any other filesystem.
///
/// Uses `XFS_IOC_FSGEOMETRY`, which needs no privilege, falling back to the
/// v4 ioctl on kernels that lack the v5 one (`ENOTTY`/`EINVAL`). Checks
/// `statfs` first so that no XFS opcode reaches another driver.
pub(crate) fn xfs_reflink_enabled(fd: BorrowedFd<'_>) -> io::Result<bool> {
    Ok(xfs_geometry(fd)?.is_some_and(|g| g.reflink))
}

/// What sdu reads of an XFS filesystem's geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct XfsGeometry {
    /// Filesystem block size, bytes.
    pub(crate) blocksize: u32,
    /// Blocks per allocation group (the last one may be shorter).
    pub(crate) agblocks: u32,
    /// Allocation groups.
    pub(crate) agcount: u32,
    /// Inode size, bytes.
    pub(crate) inodesize: u32,
    /// `XFS_FSOP_GEOM_FLAGS_REFLINK`.
    pub(crate) reflink: bool,
}

impl XfsGeometry {
    /// The allocation group of FIEMAP's `fe_physical` (bytes): XFS maps a
    /// block to the disk address `(agno × agblocks + agbno) × blocksize`.
    pub(crate) fn ag_of_physical(&self, physical: u64) -> u32 {
        let ag_bytes = u64::from(self.agblocks) * u64::from(self.blocksize);
        match physical.checked_div(ag_bytes) {
            Some(ag) => ag.min(u64::from(self.agcount.saturating_sub(1))) as u32,
            None => 0,
        }
    }

    /// The allocation group an inode number lies in: an XFS inode number
    /// is `agno << (agblklog + inopblog) | agino`.
    #[cfg(test)]
    pub(crate) fn ag_of_inode(&self, ino: u64) -> u32 {
        let log2_ceil = |x: u32| {
            if x <= 1 {
                0
            } else {
                32 - (x - 1).leading_zeros()
            }
        };
        let agblklog = log2_ceil(self.agblocks);
        let inopblog = log2_ceil(self.blocksize / self.inodesize.max(1));
        let shift = agblklog + inopblog;
        let ag = if shift >= 64 { 0 } else { ino >> shift };
        ag.min(u64::from(self.agcount.saturating_sub(1))) as u32
    }
}

/// The geometry of the XFS filesystem holding `fd`; `Ok(None)` on any other
/// filesystem. Unprivileged (`XFS_IOC_FSGEOMETRY`, v4 as a fallback).
pub(crate) fn xfs_geometry(fd: BorrowedFd<'_>) -> io::Result<Option<XfsGeometry>> {
    Ok(xfs_fsop_geom(fd)?.map(|g| XfsGeometry {
        blocksize: g.blocksize,
        agblocks: g.agblocks,
        agcount: g.agcount,
        inodesize: g.inodesize,
        reflink: g.flags & XFS_FSOP_GEOM_FLAGS_REFLINK != 0,
    }))
}

/// The `XFS_FSOP_GEOM_FLAGS_*` of the XFS filesystem holding `fd`;
/// `Ok(None)` on any other filesystem. Unprivileged, as
/// [`xfs_geometry`].
pub(crate) fn xfs_geometry_flags(fd: BorrowedFd<'_>) -> io::Result<Option<u32>> {
    Ok(xfs_fsop_geom(fd)?.map(|g| g.flags))
}

/// `XFS_IOC_FSGEOMETRY` (v4 as a fallback) on the XFS filesystem holding
/// `fd`: the fields both versions have; `Ok(None)` on any other filesystem.
fn xfs_fsop_geom(fd: BorrowedFd<'_>) -> io::Result<Option<XfsFsopGeomV4>> {
    if fs_type(fd)? != magic::XFS {
        return Ok(None);
    }
    let mut geom = XfsFsopGeom::default();
    // SAFETY: XFS_IOC_FSGEOMETRY writes one `struct xfs_fsop_geom` (256
    // bytes, layout mirrored and size pinned above) to the pointer; `geom` is
    // exclusively borrowed and fully initialised.
    let v5 = unsafe {
        ioctl(
            fd,
            Updater::<{ XFS_IOC_FSGEOMETRY }, XfsFsopGeom>::new(&mut geom),
        )
    };
    let g = match v5 {
        Ok(()) => geom.v4,
        Err(rustix::io::Errno::NOTTY | rustix::io::Errno::INVAL) => {
            let mut v4 = XfsFsopGeomV4::default();
            // SAFETY: as above, for the 112-byte `struct xfs_fsop_geom_v4`.
            unsafe {
                ioctl(
                    fd,
                    Updater::<{ XFS_IOC_FSGEOMETRY_V4 }, XfsFsopGeomV4>::new(&mut v4),
                )?;
            }
            v4
        }
        Err(e) => return Err(e.into()),
    };
    Ok(Some(g))
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
pub(crate) const FS_IOC_GETFSUUID: Opcode = opcode::read::<FsUuid2>(0x15, 0);

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

/// `_IOR(0x94, 31, struct btrfs_ioctl_fs_info_args)`.
pub(crate) const BTRFS_IOC_FS_INFO: Opcode = opcode::read::<BtrfsFsInfoArgs>(0x94, 31);

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
pub(crate) fn fs_uuid(fd: BorrowedFd<'_>) -> io::Result<[u8; 16]> {
    let err = match vfs_uuid(fd) {
        Ok(u) => return Ok(u),
        Err(e) => e,
    };
    if fs_type(fd)? == magic::BTRFS {
        return btrfs_fsid(fd);
    }
    Err(err)
}

/// `ioctl(fd, FS_IOC_GETFSUUID)`—the UUID the filesystem publishes (the one
/// blkid shows), zero-padded to 16 bytes.
pub(crate) fn vfs_uuid(fd: BorrowedFd<'_>) -> io::Result<[u8; 16]> {
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

/// `ioctl(fd, BTRFS_IOC_FS_INFO)`—the `fsid` of the Btrfs filesystem.
pub(crate) fn btrfs_fsid(fd: BorrowedFd<'_>) -> io::Result<[u8; 16]> {
    Ok(btrfs_fs_info(fd)?.fsid)
}

/// `ioctl(fd, BTRFS_IOC_FS_INFO)`—the node size of the Btrfs filesystem,
/// in bytes: no item of its trees is larger.
pub(crate) fn btrfs_nodesize(fd: BorrowedFd<'_>) -> io::Result<u32> {
    Ok(btrfs_fs_info(fd)?.nodesize)
}

fn btrfs_fs_info(fd: BorrowedFd<'_>) -> io::Result<BtrfsFsInfoArgs> {
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

/// `_IOR(0x94, 60, struct btrfs_ioctl_get_subvol_info_args)` (Linux ≥ 4.18).
pub(crate) const BTRFS_IOC_GET_SUBVOL_INFO: Opcode = opcode::read::<BtrfsSubvolInfo>(0x94, 60);

/// `ioctl(fd, BTRFS_IOC_GET_SUBVOL_INFO)`—the UUID of the Btrfs subvolume
/// holding `fd`, the UUID of the subvolume it is a snapshot of (zero when
/// it is none) and its creation time. Unprivileged.
///
/// Public for `tests/sdu/inline.rs`, which reads a real snapshot's
/// subvolume for [`crate::extents::copies::settled`].
pub fn btrfs_subvol(fd: BorrowedFd<'_>) -> io::Result<super::Subvol> {
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
    Ok(super::Subvol {
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
pub(crate) const BTRFS_IOC_GET_SUBVOL_ROOTREF: Opcode =
    opcode::read_write::<BtrfsRootrefArgs>(0x94, 61);

/// `ioctl(fd, BTRFS_IOC_GET_SUBVOL_ROOTREF)`: does some subvolume lie in
/// the Btrfs subvolume holding `fd` (anywhere in it, not only under `fd`)?
/// Unprivileged; `EOVERFLOW` means more than 255 do.
pub(crate) fn btrfs_has_nested_subvol(fd: BorrowedFd<'_>) -> io::Result<bool> {
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

/// `struct btrfs_ioctl_space_args` without its flexible array: how many
/// `struct btrfs_ioctl_space_info` follow (in: room for; out: given), and
/// how many there are.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct BtrfsSpaceArgs {
    space_slots: u64,
    total_spaces: u64,
}

/// `struct btrfs_ioctl_space_info`: one kind of block group (its `flags`)
/// and the bytes allocated to it and used in it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct BtrfsSpaceInfo {
    flags: u64,
    total_bytes: u64,
    used_bytes: u64,
}

/// The most kinds asked for: data, metadata and system in two profiles
/// each (during a conversion), and the global reserve, fit many times.
const SPACE_SLOTS: usize = 32;

/// The ioctl argument: the header, then room for [`SPACE_SLOTS`] kinds.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct BtrfsSpaceBuf {
    args: BtrfsSpaceArgs,
    spaces: [BtrfsSpaceInfo; SPACE_SLOTS],
}

const _: () = assert!(size_of::<BtrfsSpaceArgs>() == 16);
const _: () = assert!(size_of::<BtrfsSpaceInfo>() == 24);
const _: () = assert!(std::mem::offset_of!(BtrfsSpaceBuf, spaces) == 16);

/// `_IOWR(0x94, 20, struct btrfs_ioctl_space_args)`.
pub(crate) const BTRFS_IOC_SPACE_INFO: Opcode = opcode::read_write::<BtrfsSpaceArgs>(0x94, 20);

/// `BTRFS_BLOCK_GROUP_DATA`, `BTRFS_BLOCK_GROUP_METADATA`.
const BLOCK_GROUP_DATA: u64 = 1;
const BLOCK_GROUP_METADATA: u64 = 1 << 2;

/// `ioctl(fd, BTRFS_IOC_SPACE_INFO)`: the bytes used in the data block
/// groups of the Btrfs filesystem holding `fd` (what `btrfs filesystem df`
/// shows as Data used: each byte once, whatever the profile); `None` when
/// data and metadata share block groups (`mixed-bg`), where data alone is
/// not told apart. Unprivileged.
pub(crate) fn btrfs_data_used(fd: BorrowedFd<'_>) -> io::Result<Option<u64>> {
    let mut buf = BtrfsSpaceBuf {
        args: BtrfsSpaceArgs {
            space_slots: SPACE_SLOTS as u64,
            total_spaces: 0,
        },
        spaces: [BtrfsSpaceInfo::default(); SPACE_SLOTS],
    };
    // SAFETY: BTRFS_IOC_SPACE_INFO reads `space_slots` and writes the header
    // and at most that many 24-byte `struct btrfs_ioctl_space_info` after
    // it (layouts mirrored, sizes pinned above); `buf` holds that many, is
    // initialised and exclusively borrowed. The opcode's size is the
    // header's, as the kernel's is; the buffer is larger, never smaller.
    unsafe {
        ioctl(
            fd,
            Updater::<{ BTRFS_IOC_SPACE_INFO }, BtrfsSpaceBuf>::new(&mut buf),
        )?
    };
    let given = (buf.args.total_spaces as usize).min(SPACE_SLOTS);
    if buf.args.total_spaces as usize > SPACE_SLOTS {
        return Err(io::Error::other("more kinds of block groups than expected"));
    }
    let mut used = 0u64;
    for s in &buf.spaces[..given] {
        if s.flags & BLOCK_GROUP_DATA != 0 {
            if s.flags & BLOCK_GROUP_METADATA != 0 {
                return Ok(None);
            }
            used = used.saturating_add(s.used_bytes);
        }
    }
    Ok(Some(used))
}
