//! `FS_IOC_FIEMAP`: the extent map of an open file.
//!
//! [`Fiemap`] is a reusable request buffer, a `#[repr(C)]` mirror of
//! `struct fiemap` followed by its extents (sizes pinned at compile time,
//! the opcode by a test), handed to the kernel through rustix's `ioctl`;
//! each extent comes back as an [`Extent`]. [`close`] gives a mapped
//! file's descriptor up with the `close` system call itself.
//!
//! # References
//!  - [`Documentation/filesystems/fiemap.rst`](https://docs.kernel.org/filesystems/fiemap.html)
//!  - `include/uapi/linux/fiemap.h`

use std::io;
use std::os::fd::{BorrowedFd, IntoRawFd, OwnedFd};

use rustix::ioctl::{Opcode, Updater, ioctl, opcode};

/// Closes a file once its extents are read, with the `close` system call
/// itself. Dropping an [`OwnedFd`] calls libc's `close`, a cancellation
/// point that updates the thread's cancellation state twice around the
/// call (two atomic operations): once per mapped file, in user time. As
/// with that drop, an error is ignored: Linux releases the descriptor
/// whatever `close` returns.
pub fn close(fd: OwnedFd) {
    // SAFETY: `into_raw_fd` gives up ownership of the descriptor, so it is
    // closed exactly once, here, and nothing else refers to it.
    unsafe { rustix::io::close(fd.into_raw_fd()) }
}

/// `struct fiemap` without its flexible array of extents: the request and
/// reply header of `FS_IOC_FIEMAP`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FiemapHeader {
    /// Logical offset (inclusive) at which to start mapping (in).
    pub fm_start: u64,
    /// Logical length of the mapping wanted (in).
    pub fm_length: u64,
    /// `FIEMAP_FLAG_*` for the request (in/out).
    pub fm_flags: u32,
    /// Number of extents that were mapped (out).
    pub fm_mapped_extents: u32,
    /// Size of the extent array that follows (in); 0 only counts.
    pub fm_extent_count: u32,
    /// Reserved, must be zero.
    pub fm_reserved: u32,
}

/// `struct fiemap_extent`: one mapped extent as the kernel reports it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FiemapExtent {
    /// Logical offset in bytes of the extent's start in the file.
    pub fe_logical: u64,
    /// Physical offset in bytes of the extent's start on the device.
    pub fe_physical: u64,
    /// Length in bytes.
    pub fe_length: u64,
    /// Reserved.
    pub fe_reserved64: [u64; 2],
    /// `FIEMAP_EXTENT_*` flags.
    pub fe_flags: u32,
    /// Reserved.
    pub fe_reserved: [u32; 3],
}

const _: () = assert!(size_of::<FiemapHeader>() == 32);
const _: () = assert!(std::mem::offset_of!(FiemapHeader, fm_flags) == 16);
const _: () = assert!(std::mem::offset_of!(FiemapHeader, fm_extent_count) == 24);
const _: () = assert!(size_of::<FiemapExtent>() == 56);
const _: () = assert!(std::mem::offset_of!(FiemapExtent, fe_length) == 16);
const _: () = assert!(std::mem::offset_of!(FiemapExtent, fe_flags) == 40);

/// `FIEMAP_MAX_OFFSET`: "to the end of the file" as a request length.
pub const FIEMAP_MAX_OFFSET: u64 = u64::MAX;

/// Last extent of the file.
pub const FIEMAP_EXTENT_LAST: u32 = 0x0000_0001;
/// Data location unknown: `fe_physical` is meaningless.
pub const FIEMAP_EXTENT_UNKNOWN: u32 = 0x0000_0002;
/// Delayed allocation, location still pending; also sets `UNKNOWN`.
pub const FIEMAP_EXTENT_DELALLOC: u32 = 0x0000_0004;
/// Data is encoded (e.g. compressed on Btrfs): cannot be read with the fs
/// unmounted, and `fe_length` is the logical length, not the on-disk one.
pub const FIEMAP_EXTENT_ENCODED: u32 = 0x0000_0008;
/// Data is encrypted by the filesystem; also sets `NO_BYPASS`.
pub const FIEMAP_EXTENT_DATA_ENCRYPTED: u32 = 0x0000_0080;
/// Extent offsets may not be block aligned.
pub const FIEMAP_EXTENT_NOT_ALIGNED: u32 = 0x0000_0100;
/// Data mixed with metadata (inline extent); also sets `NOT_ALIGNED`.
pub const FIEMAP_EXTENT_DATA_INLINE: u32 = 0x0000_0200;
/// Multiple files in one block (tail packing); also sets `NOT_ALIGNED`.
pub const FIEMAP_EXTENT_DATA_TAIL: u32 = 0x0000_0400;
/// Space allocated but not written (reads as zeros).
pub const FIEMAP_EXTENT_UNWRITTEN: u32 = 0x0000_0800;
/// The filesystem has no native extents; the result was merged from blocks.
pub const FIEMAP_EXTENT_MERGED: u32 = 0x0000_1000;
/// Space shared with other files (or, on Btrfs, other references).
pub const FIEMAP_EXTENT_SHARED: u32 = 0x0000_2000;

/// Flags under which `fe_physical` is no usable disk address.
///
/// Such extents are never counted as shared, whatever else they carry.
/// `DATA_TAIL` is here too: a packed tail block is "shared" with unrelated
/// files, which is not the sharing sdu reports.
const NO_PHYSICAL: u32 = FIEMAP_EXTENT_UNKNOWN
    | FIEMAP_EXTENT_DELALLOC
    | FIEMAP_EXTENT_DATA_INLINE
    | FIEMAP_EXTENT_DATA_TAIL;

/// `ioctl(fd, FS_IOC_FIEMAP, &fiemap)`—get the extent map of a file;
/// `_IOWR('f', 11, struct fiemap)`.
pub const FS_IOC_FIEMAP: Opcode = opcode::read_write::<FiemapHeader>(b'f', 11);

/// One extent of a file, as FIEMAP reported it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Extent {
    /// Byte offset of the extent in the file.
    pub logical: u64,
    /// Byte offset of the extent on the device (meaningless unless
    /// [`has_physical`](Self::has_physical)).
    pub physical: u64,
    /// Length in bytes (on Btrfs, for an `ENCODED` extent, the logical
    /// length: compressed extents then overlap physically).
    pub length: u64,
    /// `FIEMAP_EXTENT_*` flags.
    pub flags: u32,
}

impl Extent {
    /// Whether `physical` is a usable disk address.
    ///
    /// False for unknown, delayed-allocation, inline and tail-packed extents.
    #[inline]
    pub fn has_physical(&self) -> bool {
        self.flags & NO_PHYSICAL == 0
    }

    /// Whether the kernel flags the extent as shared and it has a usable
    /// physical address.
    #[inline]
    pub fn is_shared(&self) -> bool {
        self.flags & FIEMAP_EXTENT_SHARED != 0 && self.has_physical()
    }

    /// Whether this is the file's last extent.
    #[inline]
    pub fn is_last(&self) -> bool {
        self.flags & FIEMAP_EXTENT_LAST != 0
    }
}

impl From<&FiemapExtent> for Extent {
    fn from(e: &FiemapExtent) -> Self {
        Self {
            logical: e.fe_logical,
            physical: e.fe_physical,
            length: e.fe_length,
            flags: e.fe_flags,
        }
    }
}

/// Extents fetched per `FS_IOC_FIEMAP` call.
///
/// 256 × 56 B = 14 KiB per thread: almost every file fits in one call (the
/// common file has 1–4 extents), and a heavily fragmented one costs one call
/// per 256 extents, which the kernel's own per-extent work dwarfs.
pub const FIEMAP_BATCH: usize = 256;

/// The ioctl argument: a header followed, contiguously, by the extent array.
#[repr(C)]
struct FiemapBuf {
    header: FiemapHeader,
    extents: [FiemapExtent; FIEMAP_BATCH],
}

const _: () = assert!(size_of::<FiemapBuf>() == 32 + 56 * FIEMAP_BATCH);

/// A reusable FIEMAP request buffer: create one per thread and map many files
/// with it.
///
/// It owns a fixed [`FIEMAP_BATCH`]-extent buffer on the heap, allocated once.
pub struct Fiemap {
    buf: Box<FiemapBuf>,
}

impl Default for Fiemap {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Fiemap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fiemap")
            .field("batch", &FIEMAP_BATCH)
            .finish()
    }
}

impl Fiemap {
    /// Allocates the buffer.
    pub fn new() -> Self {
        Self {
            buf: Box::new(FiemapBuf {
                header: FiemapHeader::default(),
                extents: [FiemapExtent::default(); FIEMAP_BATCH],
            }),
        }
    }

    /// Maps the whole file open at `fd`, calling `f` for each extent in
    /// logical order, and returns the number of ioctl calls made.
    ///
    /// Starts at offset 0 and loops, each call starting where the previous
    /// call's last extent ended, until an extent carries
    /// `FIEMAP_EXTENT_LAST` or a call maps no extent. Never sets
    /// `FIEMAP_FLAG_SYNC`: dirty data comes back as `DELALLOC`/`UNKNOWN`
    /// (see [`Extent::has_physical`]).
    ///
    /// Guards against misbehaving filesystems: an extent that ends at or
    /// before the requested start (already reported) is skipped; a call that
    /// would not advance, or an extent end past `u64::MAX`, ends the map with
    /// an `InvalidData` error (the extents already passed to `f` stand). A
    /// continuation call refused with `EFBIG` (start beyond the filesystem's
    /// maximum file size) ends the map normally.
    ///
    /// # Errors
    /// The ioctl's error: `EOPNOTSUPP`/`ENOTTY` where the filesystem has no
    /// FIEMAP (NFS, FUSE without it), `EBADF`, `EINTR`…
    pub fn for_each(&mut self, fd: BorrowedFd<'_>, mut f: impl FnMut(&Extent)) -> io::Result<u32> {
        let mut start = 0u64;
        let mut calls = 0u32;
        loop {
            self.buf.header = FiemapHeader {
                fm_start: start,
                fm_length: FIEMAP_MAX_OFFSET - start,
                fm_flags: 0,
                fm_mapped_extents: 0,
                fm_extent_count: FIEMAP_BATCH as u32,
                fm_reserved: 0,
            };
            // SAFETY: FS_IOC_FIEMAP takes a `struct fiemap` followed by
            // `fm_extent_count` `struct fiemap_extent`s; `FiemapBuf` is
            // exactly that layout (repr(C), sizes pinned above) with
            // FIEMAP_BATCH extents, and the kernel writes at most
            // `fm_extent_count` of them. The buffer is exclusively borrowed
            // for the duration of the call.
            let res = unsafe {
                ioctl(
                    fd,
                    Updater::<{ FS_IOC_FIEMAP }, FiemapBuf>::new(&mut self.buf),
                )
            };
            match res {
                Ok(()) => {}
                Err(rustix::io::Errno::FBIG) if calls > 0 => return Ok(calls),
                Err(e) => return Err(e.into()),
            }
            calls += 1;
            let n = (self.buf.header.fm_mapped_extents as usize).min(FIEMAP_BATCH);
            if n == 0 {
                return Ok(calls);
            }
            let mut next = start;
            for raw in &self.buf.extents[..n] {
                let e = Extent::from(raw);
                let Some(end) = e.logical.checked_add(e.length) else {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "FIEMAP extent ends past u64::MAX",
                    ));
                };
                // On a continuation call, an extent ending at or before the
                // requested start was already reported.
                if calls > 1 && end <= start {
                    continue;
                }
                f(&e);
                if e.is_last() {
                    return Ok(calls);
                }
                next = next.max(end);
            }
            if next <= start {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "FIEMAP made no progress",
                ));
            }
            if next == FIEMAP_MAX_OFFSET {
                return Ok(calls);
            }
            start = next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // `Opcode` is `u32` with rustix's linux_raw backend but `c_ulong` or
    // `c_int` with its libc one: the casts are needed off x86-64 linux_raw.
    #[allow(clippy::unnecessary_cast)]
    #[test]
    fn opcode_matches_the_kernel_header() {
        // <linux/fs.h> (linux-libc-dev).
        assert_eq!(FS_IOC_FIEMAP as u32, 0xc020_660b);
    }

    #[test]
    fn flags_without_physical_are_never_shared() {
        for flags in [
            FIEMAP_EXTENT_UNKNOWN,
            FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_UNKNOWN,
            FIEMAP_EXTENT_DATA_INLINE | FIEMAP_EXTENT_NOT_ALIGNED,
            FIEMAP_EXTENT_DATA_TAIL,
        ] {
            let e = Extent {
                flags: flags | FIEMAP_EXTENT_SHARED,
                ..Extent::default()
            };
            assert!(!e.has_physical() && !e.is_shared(), "{flags:#x}");
        }
        let e = Extent {
            flags: FIEMAP_EXTENT_SHARED | FIEMAP_EXTENT_ENCODED | FIEMAP_EXTENT_LAST,
            ..Extent::default()
        };
        assert!(e.has_physical() && e.is_shared() && e.is_last());
    }
}
