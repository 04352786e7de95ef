//! `FS_IOC_GETFSMAP` on XFS: every owner of the blocks of a physical range,
//! or of the whole device summed by owner ([`summary`]).
//!
//! XFS frees a block when its last owner lets it go. With the
//! reverse-mapping btree (`mkfs.xfs -m rmapbt=1`) and `CAP_SYS_ADMIN`,
//! `GETFSMAP` lists, for a range of the data device, each reverse mapping
//! (inode number, file offset, length) over it: whether data shared by the
//! files of a scan is also held by a file outside it.
//!
//! Addresses: FIEMAP's `fe_physical` on XFS is
//! `XFS_FSB_TO_DADDR(block) << 9`, a byte offset on the data device, and
//! `fmr_physical` is the same daddr in bytes (`BBTOB`): a FIEMAP range is
//! passed to [`owners`] as it is. The device is named by
//! `new_encode_dev` of the data device, which is the filesystem's
//! `st_dev` ([`data_device`]); the log and realtime devices are never
//! asked about (a realtime file's FIEMAP addresses lie on the realtime
//! device and mean nothing here).
//!
//! Without rmapbt, or without `CAP_SYS_ADMIN` (in the initial user
//! namespace), the ioctl does not fail: the kernel answers from the
//! free-space btree, allocated space owned by `FMR_OWN_UNKNOWN`. [`owners`]
//! turns that answer into an error a caller can tell apart
//! ([`io::ErrorKind::PermissionDenied`] or [`io::ErrorKind::Unsupported`]).
//!
//! The request is a `#[repr(C)]` mirror of `struct fsmap_head` followed
//! by its `struct fsmap` records (sizes and offsets pinned at compile
//! time, the opcode by a test), handed to the kernel through rustix's
//! `ioctl`.
//!
//! # References
//!  - `include/uapi/linux/fsmap.h`
//!  - `fs/xfs/xfs_fsmap.c` (`xfs_getfsmap`, `xfs_getfsmap_is_valid_device`,
//!    `__xfs_getfsmap_datadev`), `fs/xfs/libxfs/xfs_fs.h`
//!  - xfsprogs `io/fsmap.c` (`xfs_io -c fsmap`)

use std::io;
use std::os::fd::BorrowedFd;

use rustix::ioctl::{Opcode, Updater, ioctl, opcode};

use crate::xfs::{XFS_FSOP_GEOM_FLAGS_RMAPBT, geometry_flags};

/// `struct fsmap`: a key of the query, or one reverse mapping of the reply.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct FsmapRec {
    /// Device, as `new_encode_dev` (`FMH_OF_DEV_T` in the reply).
    fmr_device: u32,
    /// `FMR_OF_*`.
    fmr_flags: u32,
    /// Device offset of the mapping, bytes.
    fmr_physical: u64,
    /// Inode number, or a special owner (`FMR_OF_SPECIAL_OWNER`).
    fmr_owner: u64,
    /// File offset of the mapping, bytes.
    fmr_offset: u64,
    /// Length, bytes.
    fmr_length: u64,
    /// Must be zero.
    fmr_reserved: [u64; 3],
}

/// `struct fsmap_head` without its flexible array of records.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct FsmapHead {
    /// Control flags (none defined): zero.
    fmh_iflags: u32,
    /// Output flags (`FMH_OF_DEV_T`).
    fmh_oflags: u32,
    /// Records the array that follows holds (in).
    fmh_count: u32,
    /// Records filled in (out).
    fmh_entries: u32,
    /// Must be zero.
    fmh_reserved: [u64; 6],
    /// The low and the high key of the query.
    fmh_keys: [FsmapRec; 2],
}

const _: () = assert!(size_of::<FsmapRec>() == 64);
const _: () = assert!(std::mem::offset_of!(FsmapRec, fmr_physical) == 8);
const _: () = assert!(std::mem::offset_of!(FsmapRec, fmr_owner) == 16);
const _: () = assert!(std::mem::offset_of!(FsmapRec, fmr_offset) == 24);
const _: () = assert!(std::mem::offset_of!(FsmapRec, fmr_length) == 32);
const _: () = assert!(size_of::<FsmapHead>() == 192);
const _: () = assert!(std::mem::offset_of!(FsmapHead, fmh_keys) == 64);

/// `_IOWR('X', 59, struct fsmap_head)`.
pub const FS_IOC_GETFSMAP: Opcode = opcode::read_write::<FsmapHead>(b'X', 59);

/// `FMR_OF_ATTR_FORK`: the owner's extended attributes.
pub const FMR_OF_ATTR_FORK: u32 = 0x2;
/// `FMR_OF_EXTENT_MAP`: the owner's extent-map (bmbt) blocks.
pub const FMR_OF_EXTENT_MAP: u32 = 0x4;
/// `FMR_OF_SHARED`: the blocks have another owner too.
pub const FMR_OF_SHARED: u32 = 0x8;
/// `FMR_OF_SPECIAL_OWNER`: `owner` is no inode but an `FMR_OWN_*`.
pub const FMR_OF_SPECIAL_OWNER: u32 = 0x10;
/// `FMR_OF_LAST`: the last record of the query.
const FMR_OF_LAST: u32 = 0x20;

/// `FMR_OWN_FREE`: free space.
pub const FMR_OWN_FREE: u64 = 1;
/// `FMR_OWN_UNKNOWN`: allocated, owner unknown (the answer without rmapbt
/// or without `CAP_SYS_ADMIN`).
pub const FMR_OWN_UNKNOWN: u64 = 2;

/// Records asked for by a range's first call. `xfs_ioc_getfsmap`
/// allocates and zeroes room for as many as are asked for (up to 2,048),
/// on every call, and most ranges have a few owners (docs/decisions.md,
/// "XFS GETFSMAP").
pub const FSMAP_FIRST: u32 = 16;

/// Records asked for by each further call, and the buffer's room: 1024 ×
/// 64 B + 192 B, 64.2 KiB. A further call searches again from the block
/// of the previous call's last record and passes over every record before
/// it, so few large calls beat many small ones (docs/decisions.md, "XFS
/// GETFSMAP").
pub const FSMAP_BATCH: usize = 1024;

/// The ioctl argument: the head, then, contiguously, its records.
#[repr(C)]
struct FsmapBuf {
    head: FsmapHead,
    recs: [FsmapRec; FSMAP_BATCH],
}

const _: () = assert!(size_of::<FsmapBuf>() == 192 + 64 * FSMAP_BATCH);

/// One reverse mapping over the range asked about, whole (not clipped to
/// the range): `physical` may lie before its start and `physical + length`
/// past its end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Owner {
    /// Device offset, bytes (FIEMAP's `fe_physical` on XFS).
    pub physical: u64,
    /// Length, bytes.
    pub length: u64,
    /// Inode number, or with [`FMR_OF_SPECIAL_OWNER`] an `FMR_OWN_*`
    /// (free space, metadata).
    pub owner: u64,
    /// Offset in the owner's file, bytes (meaningless for a special one).
    pub offset: u64,
    /// `FMR_OF_*`.
    pub flags: u32,
}

impl Owner {
    /// Whether the owner is a file's data: an inode, neither its extended
    /// attributes nor its extent map.
    pub fn is_file_data(&self) -> bool {
        self.flags & (FMR_OF_SPECIAL_OWNER | FMR_OF_ATTR_FORK | FMR_OF_EXTENT_MAP) == 0
    }

    fn from_rec(r: &FsmapRec) -> Self {
        Owner {
            physical: r.fmr_physical,
            length: r.fmr_length,
            owner: r.fmr_owner,
            offset: r.fmr_offset,
            flags: r.fmr_flags,
        }
    }
}

/// The `fmr_device` of the data device of the XFS filesystem whose
/// `st_dev` is `st_dev`: the kernel's `new_encode_dev` (minor's low byte,
/// major in bits 8–19, the rest of the minor above), which is what it
/// compares keys with and writes in records.
pub fn data_device(st_dev: u64) -> u32 {
    let (major, minor) = (rustix::fs::major(st_dev), rustix::fs::minor(st_dev));
    (minor & 0xff) | (major << 8) | ((minor & !0xff) << 12)
}

/// Whether the XFS filesystem holding `fd` has the reverse-mapping btree;
/// `Ok(false)` on any other filesystem. Unprivileged
/// (`XFS_IOC_FSGEOMETRY`, v4 as a fallback).
pub fn has_rmapbt(fd: BorrowedFd<'_>) -> io::Result<bool> {
    Ok(geometry_flags(fd)?.is_some_and(|f| f & XFS_FSOP_GEOM_FLAGS_RMAPBT != 0))
}

/// A reusable GETFSMAP buffer: one per thread, for many queries.
pub struct Fsmap {
    buf: Box<FsmapBuf>,
}

impl Default for Fsmap {
    fn default() -> Self {
        Fsmap {
            buf: Box::new(FsmapBuf {
                head: FsmapHead::default(),
                recs: [FsmapRec::default(); FSMAP_BATCH],
            }),
        }
    }
}

impl std::fmt::Debug for Fsmap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fsmap")
            .field("batch", &FSMAP_BATCH)
            .finish()
    }
}

impl Fsmap {
    /// [`owners`] with this buffer.
    ///
    /// # Errors
    /// As [`owners`].
    pub fn owners(
        &mut self,
        fd: BorrowedFd<'_>,
        device: u32,
        start: u64,
        len: u64,
        out: &mut Vec<Owner>,
    ) -> io::Result<u32> {
        let (calls, unknown) = self.each(fd, device, start, len, |o| out.push(o))?;
        if unknown {
            return Err(unnamed(fd));
        }
        Ok(calls)
    }

    /// Passes each reverse mapping over `[start, start + len)` to `f`, in
    /// the order [`Self::owners`] lists them (by address, then owner and
    /// offset), without keeping them; returns the ioctl calls made.
    ///
    /// # Errors
    /// As [`owners`].
    pub fn for_each(
        &mut self,
        fd: BorrowedFd<'_>,
        device: u32,
        (start, len): (u64, u64),
        f: impl FnMut(Owner),
    ) -> io::Result<u32> {
        let (calls, unknown) = self.each(fd, device, start, len, f)?;
        if unknown {
            return Err(unnamed(fd));
        }
        Ok(calls)
    }

    /// Passes each reverse mapping over `[start, start + len)` to `f`, as
    /// [`Self::owners`] lists them; returns the ioctl calls made and
    /// whether some allocated blocks had no owner named.
    fn each(
        &mut self,
        fd: BorrowedFd<'_>,
        device: u32,
        start: u64,
        len: u64,
        mut f: impl FnMut(Owner),
    ) -> io::Result<(u32, bool)> {
        let Some(last) = len.checked_sub(1).and_then(|l| start.checked_add(l)) else {
            return Ok((0, false));
        };
        let h = &mut self.buf.head;
        *h = FsmapHead {
            fmh_count: FSMAP_FIRST,
            ..FsmapHead::default()
        };
        h.fmh_keys[0] = FsmapRec {
            fmr_device: device,
            fmr_physical: start,
            ..FsmapRec::default()
        };
        // The high key: the range's last byte, every owner and offset at
        // it. Its flags stay 0: with `FMR_OF_SPECIAL_OWNER` set (xfs_io
        // sets every flag), some kernels' `xfs_fsmap_owner_to_rmap` reads
        // owner u64::MAX as owner 0 and leaves out mappings that start in
        // the last block.
        h.fmh_keys[1] = FsmapRec {
            fmr_device: device,
            fmr_physical: last,
            fmr_owner: u64::MAX,
            fmr_offset: u64::MAX,
            ..FsmapRec::default()
        };
        let mut calls = 0u32;
        let mut unknown = false;
        loop {
            // SAFETY: FS_IOC_GETFSMAP reads a `struct fsmap_head` and
            // writes at most `fmh_count` `struct fsmap`s after it;
            // `FsmapBuf` is exactly that layout (repr(C), sizes pinned
            // above) with room for FSMAP_BATCH records, and `fmh_count` is
            // FSMAP_FIRST or FSMAP_BATCH. The buffer is exclusively
            // borrowed for the call.
            unsafe {
                ioctl(
                    fd,
                    Updater::<{ FS_IOC_GETFSMAP }, FsmapBuf>::new(&mut self.buf),
                )?
            };
            calls += 1;
            let asked = self.buf.head.fmh_count as usize;
            let n = (self.buf.head.fmh_entries as usize).min(asked);
            let recs = &self.buf.recs[..n];
            for r in recs {
                unknown |=
                    r.fmr_flags & FMR_OF_SPECIAL_OWNER != 0 && r.fmr_owner == FMR_OWN_UNKNOWN;
                f(Owner::from_rec(r));
            }
            match recs.last() {
                Some(r) if r.fmr_flags & FMR_OF_LAST == 0 && n == asked => {
                    // Go on after the last record, as `fsmap_advance` does:
                    // the kernel resumes past it (for file data, at the
                    // next owner or offset of the same blocks).
                    self.buf.head.fmh_keys[0] = *r;
                    self.buf.head.fmh_count = FSMAP_BATCH as u32;
                }
                _ => break,
            }
        }
        Ok((calls, unknown))
    }

    /// [`summary`] with this buffer.
    ///
    /// # Errors
    /// As [`summary`].
    pub fn summary(&mut self, fd: BorrowedFd<'_>, device: u32) -> io::Result<Summary> {
        let mut sum = Summary::default();
        // The end of the file data seen so far: records come by address,
        // so a shared range's second owner adds only what lies past it.
        let mut data_end = 0u64;
        let (_, unknown) = self.each(fd, device, 0, u64::MAX, |o| {
            let end = o.physical.saturating_add(o.length);
            if o.flags & FMR_OF_SPECIAL_OWNER != 0 {
                match sum.special.iter_mut().find(|(w, _)| *w == o.owner) {
                    Some((_, b)) => *b += o.length,
                    None => sum.special.push((o.owner, o.length)),
                }
            } else if o.flags & FMR_OF_EXTENT_MAP != 0 {
                sum.extent_maps += o.length;
            } else if o.flags & FMR_OF_ATTR_FORK != 0 {
                sum.xattrs += o.length;
            } else {
                sum.data += end.saturating_sub(o.physical.max(data_end));
                data_end = data_end.max(end);
            }
        })?;
        if unknown {
            return Err(unnamed(fd));
        }
        sum.special.sort_unstable();
        Ok(sum)
    }
}

/// `XFS_FMR_OWN_FS`: static filesystem metadata (superblocks, AG headers).
pub const XFS_FMR_OWN_FS: u64 = (b'X' as u64) << 32 | 1;
/// `XFS_FMR_OWN_LOG`: the internal log.
pub const XFS_FMR_OWN_LOG: u64 = (b'X' as u64) << 32 | 2;
/// `XFS_FMR_OWN_AG`: per-AG metadata (free-space and reverse-mapping
/// btrees, the AG free list).
pub const XFS_FMR_OWN_AG: u64 = (b'X' as u64) << 32 | 3;
/// `XFS_FMR_OWN_INOBT`: inode btrees.
pub const XFS_FMR_OWN_INOBT: u64 = (b'X' as u64) << 32 | 4;
/// `XFS_FMR_OWN_INODES`: inode chunks.
pub const XFS_FMR_OWN_INODES: u64 = (b'X' as u64) << 32 | 5;
/// `XFS_FMR_OWN_REFC`: the refcount btree.
pub const XFS_FMR_OWN_REFC: u64 = (b'X' as u64) << 32 | 6;
/// `XFS_FMR_OWN_COW`: copy-on-write staging extents.
pub const XFS_FMR_OWN_COW: u64 = (b'X' as u64) << 32 | 7;
/// `XFS_FMR_OWN_DEFECTIVE`: bad blocks.
pub const XFS_FMR_OWN_DEFECTIVE: u64 = (b'X' as u64) << 32 | 8;

/// The whole data device of an XFS filesystem by owner, in bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Each special owner (`FMR_OWN_FREE`, `XFS_FMR_OWN_*`) and its bytes,
    /// by owner.
    pub special: Vec<(u64, u64)>,
    /// Files' extent-map (bmbt) blocks.
    pub extent_maps: u64,
    /// Files' extended-attribute blocks.
    pub xattrs: u64,
    /// Files' data, each block once however many files share it.
    pub data: u64,
}

impl Summary {
    /// The bytes of special owner `owner`.
    pub fn special(&self, owner: u64) -> u64 {
        self.special
            .iter()
            .find(|(w, _)| *w == owner)
            .map_or(0, |&(_, b)| b)
    }
}

/// Every block of the data device of the XFS filesystem holding `fd` by
/// owner ([`Summary`]): `GETFSMAP` over the whole device, its records
/// summed as they come (none kept). `device`: the data device's
/// [`data_device`].
///
/// # Errors
/// As [`owners`]: `PermissionDenied` without `CAP_SYS_ADMIN`,
/// `Unsupported` without rmapbt, and the ioctl's.
pub fn summary(fd: BorrowedFd<'_>, device: u32) -> io::Result<Summary> {
    Fsmap::default().summary(fd, device)
}

/// Every reverse mapping overlapping the bytes `[start, start + len)` of
/// the data device of the XFS filesystem holding `fd`, whole (not clipped
/// to the range), in the kernel's order (by physical address, then owner,
/// then offset), appended to `out`; returns the number of ioctl calls
/// made. `device` is the data device's [`data_device`]; `start` and `len`
/// as FIEMAP gives them. Free space in the range comes as records of the
/// special owner [`FMR_OWN_FREE`]; metadata as other special owners.
///
/// Pages through the records as `xfs_io -c fsmap` does: each further call
/// has the previous call's last record for its low key, until one comes
/// flagged `FMR_OF_LAST` or the buffer is not filled.
///
/// # Errors
/// - [`io::ErrorKind::PermissionDenied`]: the filesystem has rmapbt but the
///   kernel named no owner: the caller lacks `CAP_SYS_ADMIN` (in the
///   initial user namespace). The ioctl itself succeeds then.
/// - [`io::ErrorKind::Unsupported`]: the filesystem has no rmapbt, so no
///   owner of data can be named.
/// - The ioctl's own: `EINVAL` for a device that is none of the
///   filesystem's, `ENOTTY`/`EOPNOTSUPP` on a filesystem without
///   GETFSMAP, `EINTR`, `ENOMEM`…
///
/// In the first two cases the records the kernel gave are in `out`.
pub fn owners(
    fd: BorrowedFd<'_>,
    device: u32,
    start: u64,
    len: u64,
    out: &mut Vec<Owner>,
) -> io::Result<u32> {
    Fsmap::default().owners(fd, device, start, len, out)
}

/// The error for an answer whose allocated blocks have no owner named.
fn unnamed(fd: BorrowedFd<'_>) -> io::Error {
    match has_rmapbt(fd) {
        Ok(true) => io::Error::new(
            io::ErrorKind::PermissionDenied,
            "GETFSMAP names the owners of data only with CAP_SYS_ADMIN",
        ),
        Ok(false) => io::Error::new(
            io::ErrorKind::Unsupported,
            "no reverse-mapping btree (mkfs.xfs -m rmapbt=1): GETFSMAP cannot name the owners of data",
        ),
        Err(e) => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // `Opcode` is `u32` with rustix's linux_raw backend but `c_ulong` or
    // `c_int` with its libc one.
    #[allow(clippy::unnecessary_cast)]
    #[test]
    fn opcode_and_device_encoding_match_the_kernel() {
        // _IOWR('X', 59, struct fsmap_head): <linux/fsmap.h> (linux-libc-dev).
        assert_eq!(FS_IOC_GETFSMAP as u32, 0xc0c0_583b);
        // new_encode_dev (include/linux/kdev_t.h): `(minor & 0xff) | (major
        // << 8) | ((minor & ~0xff) << 12)`. loop1 (7:1) is 0x701, as `stat -c
        // %d` prints it; nvme0n1p… (259:0x1234) 0x34 | 0x1_0300 | 0x120_0000.
        assert_eq!(data_device(rustix::fs::makedev(7, 1)), 0x701);
        assert_eq!(data_device(rustix::fs::makedev(259, 0x1234)), 0x0121_0334);
    }
}
