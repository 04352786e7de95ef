//! The geometry of an XFS filesystem (`XFS_IOC_FSGEOMETRY`, v4 as a
//! fallback): its block and allocation group sizes and whether it has
//! reflink and the reverse-mapping btree. Unprivileged. And what its
//! `statfs` figures are made of: the log, the free counts
//! (`XFS_IOC_FSCOUNTS`), the reserve pool (`XFS_IOC_GET_RESBLKS`, root).
//!
//! The output is a `#[repr(C)]` mirror of `struct xfs_fsop_geom` (sizes
//! and offsets pinned at compile time, the opcodes by a test).
//!
//! # References
//!  - xfsprogs `include/xfs/xfs_fs.h`, `fs/xfs/libxfs/xfs_fs.h`

use std::io;
use std::os::fd::BorrowedFd;

use rustix::ioctl::{Opcode, Updater, ioctl, opcode};

use crate::fs::{fs_type, magic};

/// `XFS_FSOP_GEOM_FLAGS_FINOBT`: the free inode btree.
pub const XFS_FSOP_GEOM_FLAGS_FINOBT: u32 = 1 << 17;
/// `XFS_FSOP_GEOM_FLAGS_RMAPBT`: the reverse-mapping btree, which lets
/// `FS_IOC_GETFSMAP` name the owners of data blocks.
pub const XFS_FSOP_GEOM_FLAGS_RMAPBT: u32 = 1 << 19;
/// `XFS_FSOP_GEOM_FLAGS_REFLINK`: files can share blocks.
pub const XFS_FSOP_GEOM_FLAGS_REFLINK: u32 = 1 << 20;

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
pub const XFS_IOC_FSGEOMETRY: Opcode = opcode::read::<XfsFsopGeom>(b'X', 126);
/// `_IOR('X', 124, struct xfs_fsop_geom_v4)`.
pub const XFS_IOC_FSGEOMETRY_V4: Opcode = opcode::read::<XfsFsopGeomV4>(b'X', 124);

/// Whether `fd` lies on an XFS filesystem with reflink (shared blocks)
/// enabled; `Ok(false)` on any other filesystem.
///
/// Uses `XFS_IOC_FSGEOMETRY`, which needs no privilege, falling back to the
/// v4 ioctl on kernels that lack the v5 one (`ENOTTY`/`EINVAL`). Checks
/// `statfs` first so that no XFS opcode reaches another driver.
pub fn reflink_enabled(fd: BorrowedFd<'_>) -> io::Result<bool> {
    Ok(geometry(fd)?.is_some_and(|g| g.reflink))
}

/// What sdu reads of an XFS filesystem's geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Filesystem block size, bytes.
    pub blocksize: u32,
    /// Blocks per allocation group (the last one may be shorter).
    pub agblocks: u32,
    /// Allocation groups.
    pub agcount: u32,
    /// Inode size, bytes.
    pub inodesize: u32,
    /// `XFS_FSOP_GEOM_FLAGS_REFLINK`.
    pub reflink: bool,
}

impl Geometry {
    /// The allocation group of FIEMAP's `fe_physical` (bytes): XFS maps a
    /// block to the disk address `(agno × agblocks + agbno) × blocksize`.
    pub fn ag_of_physical(&self, physical: u64) -> u32 {
        let ag_bytes = u64::from(self.agblocks) * u64::from(self.blocksize);
        match physical.checked_div(ag_bytes) {
            Some(ag) => ag.min(u64::from(self.agcount.saturating_sub(1))) as u32,
            None => 0,
        }
    }

    /// The allocation group an inode number lies in: an XFS inode number
    /// is `agno << (agblklog + inopblog) | agino`.
    pub fn ag_of_inode(&self, ino: u64) -> u32 {
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
pub fn geometry(fd: BorrowedFd<'_>) -> io::Result<Option<Geometry>> {
    Ok(xfs_fsop_geom(fd)?.map(|g| Geometry {
        blocksize: g.blocksize,
        agblocks: g.agblocks,
        agcount: g.agcount,
        inodesize: g.inodesize,
        reflink: g.flags & XFS_FSOP_GEOM_FLAGS_REFLINK != 0,
    }))
}

/// The `XFS_FSOP_GEOM_FLAGS_*` of the XFS filesystem holding `fd`;
/// `Ok(None)` on any other filesystem. Unprivileged, as
/// [`geometry`].
pub fn geometry_flags(fd: BorrowedFd<'_>) -> io::Result<Option<u32>> {
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

/// The sizes of an XFS filesystem behind its `statfs` figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Filesystem block size, bytes.
    pub blocksize: u32,
    /// Blocks of the data device (`sb_dblocks`).
    pub datablocks: u64,
    /// Blocks of the log.
    pub logblocks: u32,
    /// The log lies in the data device (`logstart` ≠ 0): `statfs` leaves
    /// its blocks out of `f_blocks`.
    pub internal_log: bool,
    /// The allocation group holding an internal log.
    pub log_ag: Option<u32>,
    /// Allocation groups, and blocks in each (the last may be shorter).
    pub agcount: u32,
    /// Blocks per allocation group.
    pub agblocks: u32,
    /// Inode size, bytes.
    pub inodesize: u32,
    /// `XFS_FSOP_GEOM_FLAGS_*`.
    pub flags: u32,
}

/// The [`Layout`] of the XFS filesystem holding `fd`; `Ok(None)` on any
/// other filesystem. Unprivileged.
pub fn layout(fd: BorrowedFd<'_>) -> io::Result<Option<Layout>> {
    Ok(xfs_fsop_geom(fd)?.map(|g| Layout {
        blocksize: g.blocksize,
        datablocks: g.datablocks,
        logblocks: g.logblocks,
        internal_log: g.logstart != 0,
        // A block number is `agno << agblklog | agbno`, agblklog the
        // log2 of agblocks rounded up.
        log_ag: (g.logstart != 0).then(|| {
            let agblklog = u64::BITS - u64::from(g.agblocks.max(1) - 1).leading_zeros();
            (g.logstart >> agblklog.min(63)) as u32
        }),
        agcount: g.agcount,
        agblocks: g.agblocks,
        inodesize: g.inodesize,
        flags: g.flags,
    }))
}

/// `struct xfs_fsop_counts`: output of `XFS_IOC_FSCOUNTS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Free data blocks, less what `statfs` also holds back.
    pub freedata: u64,
    /// Free realtime extents.
    pub freertx: u64,
    /// Free inodes in allocated inode chunks.
    pub freeino: u64,
    /// Allocated inodes: every inode of every inode chunk.
    pub allocino: u64,
}

const _: () = assert!(size_of::<Counts>() == 32);

/// `struct xfs_fsop_resblks`: output of `XFS_IOC_GET_RESBLKS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResBlks {
    /// The reserve pool's size, blocks.
    pub resblks: u64,
    /// Its blocks not handed out: held out of the free count.
    pub resblks_avail: u64,
}

const _: () = assert!(size_of::<ResBlks>() == 16);

/// `_IOR('X', 113, struct xfs_fsop_counts)`.
pub const XFS_IOC_FSCOUNTS: Opcode = opcode::read::<Counts>(b'X', 113);
/// `_IOR('X', 115, struct xfs_fsop_resblks)`.
pub const XFS_IOC_GET_RESBLKS: Opcode = opcode::read::<ResBlks>(b'X', 115);

/// `ioctl(fd, XFS_IOC_FSCOUNTS)` on the XFS filesystem holding `fd`:
/// its free blocks and allocated inodes. Unprivileged; `Ok(None)` off XFS.
pub fn counts(fd: BorrowedFd<'_>) -> io::Result<Option<Counts>> {
    if fs_type(fd)? != magic::XFS {
        return Ok(None);
    }
    let mut c = Counts::default();
    // SAFETY: XFS_IOC_FSCOUNTS writes one 32-byte `struct xfs_fsop_counts`
    // (layout mirrored, size pinned above); `c` is initialised and
    // exclusively borrowed.
    unsafe { ioctl(fd, Updater::<{ XFS_IOC_FSCOUNTS }, Counts>::new(&mut c))? };
    Ok(Some(c))
}

/// `ioctl(fd, XFS_IOC_GET_RESBLKS)` on the XFS filesystem holding `fd`:
/// the reserve pool (by default 5 % of the blocks, at most 8,192), which
/// `statfs` counts as used. Needs `CAP_SYS_ADMIN`; `Ok(None)` off XFS.
pub fn resblks(fd: BorrowedFd<'_>) -> io::Result<Option<ResBlks>> {
    if fs_type(fd)? != magic::XFS {
        return Ok(None);
    }
    let mut r = ResBlks::default();
    // SAFETY: XFS_IOC_GET_RESBLKS writes one 16-byte `struct
    // xfs_fsop_resblks` (layout mirrored, size pinned above); `r` is
    // initialised and exclusively borrowed.
    unsafe { ioctl(fd, Updater::<{ XFS_IOC_GET_RESBLKS }, ResBlks>::new(&mut r))? };
    Ok(Some(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::unnecessary_cast)]
    #[test]
    fn opcodes_match_the_kernel_headers() {
        // <xfs/xfs_fs.h> (xfslibs-dev).
        assert_eq!(XFS_IOC_FSGEOMETRY as u32, 0x8100_587e);
        assert_eq!(XFS_IOC_FSGEOMETRY_V4 as u32, 0x8070_587c);
        assert_eq!(XFS_IOC_FSCOUNTS as u32, 0x8020_5871);
        assert_eq!(XFS_IOC_GET_RESBLKS as u32, 0x8010_5873);
    }
}
