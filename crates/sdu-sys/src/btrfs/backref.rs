//! `BTRFS_IOC_LOGICAL_INO_V2` with `BTRFS_LOGICAL_INO_ARGS_IGNORE_OFFSET`:
//! every subvolume and inode that references a data extent, found by the
//! kernel's backref walk (what `btrfs inspect-internal logical-resolve -o`
//! prints). The extent tree's refs alone cannot tell that: a snapshot that
//! shares the leaf holding a file's extent item references the extent
//! without a ref of its own; the walk goes up through the shared tree
//! blocks to every root that reaches the leaf. Needs `CAP_SYS_ADMIN`.
//!
//! The kernel finds the extent by its item in the extent tree: an extent
//! written since the last commit is not there yet (`ENOENT`, even after
//! `fsync`): commit first ([`super::commit`]). A deleted
//! subvolume whose tree the cleaner has not dropped yet may still be
//! listed.
//!
//! The argument is a `#[repr(C)]` mirror of the kernel UAPI struct, its
//! size and offsets pinned at compile time, the opcode by a test. The
//! result (`struct btrfs_data_container`, the kernel's memory copied out,
//! so in the CPU's byte order) is parsed from bytes by offset.
//!
//! # References
//!  - `include/uapi/linux/btrfs.h`: `btrfs_ioctl_logical_ino_args`,
//!    `btrfs_data_container`, `BTRFS_IOC_LOGICAL_INO_V2`
//!  - `fs/btrfs/ioctl.c` (`btrfs_ioctl_logical_to_ino`: V2's size capped
//!    at 16 MiB, reserved words and unknown flags refused),
//!    `fs/btrfs/backref.c` (`iterate_inodes_from_logical`,
//!    `build_ino_list`: one (inode, offset, root) triple a reference)

use std::cell::RefCell;
use std::io;
use std::os::fd::BorrowedFd;

use rustix::ioctl::{Opcode, Updater, ioctl, opcode};

/// `struct btrfs_ioctl_logical_ino_args`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct LogicalInoArgs {
    /// In: an address inside the data extent (its start, for
    /// `IGNORE_OFFSET`, as the header asks).
    logical: u64,
    /// In: the bytes of the result buffer (the kernel copies that many).
    size: u64,
    /// Must be 0.
    reserved: [u64; 3],
    /// In, V2 only: `BTRFS_LOGICAL_INO_ARGS_*`.
    flags: u64,
    /// In: the address of the result buffer (`struct btrfs_data_container`).
    inodes: u64,
}

const _: () = assert!(size_of::<LogicalInoArgs>() == 56);
const _: () = assert!(std::mem::offset_of!(LogicalInoArgs, size) == 8);
const _: () = assert!(std::mem::offset_of!(LogicalInoArgs, flags) == 40);
const _: () = assert!(std::mem::offset_of!(LogicalInoArgs, inodes) == 48);

/// `BTRFS_LOGICAL_INO_ARGS_IGNORE_OFFSET`: every reference to the extent,
/// not only those whose range holds `logical`.
const IGNORE_OFFSET: u64 = 1;

/// `_IOWR(0x94, 59, struct btrfs_ioctl_logical_ino_args)`.
pub const BTRFS_IOC_LOGICAL_INO_V2: Opcode = opcode::read_write::<LogicalInoArgs>(0x94, 59);

/// The bytes of `struct btrfs_data_container` before its values:
/// `bytes_left`, `bytes_missing`, `elem_cnt`, `elem_missed`, each a `__u32`.
const CONTAINER_HEADER: usize = 16;

/// The result buffer asked for first: one page, 170 references. The
/// kernel allocates and zeroes the size asked for and copies all of it
/// back, whatever it found, so a small first buffer costs least
/// (docs/decisions.md, "Btrfs: the holders of an extent").
const FIRST_SIZE: usize = 4 << 10;
/// The most V2 takes (`SZ_16M`): about 700,000 references.
const MAX_SIZE: usize = 16 << 20;

thread_local! {
    /// One result buffer per thread, [`FIRST_SIZE`] between two calls.
    static BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Who holds a data extent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Holders {
    /// Every (subvolume id, inode number) referencing it, at any offset,
    /// deduplicated and sorted.
    pub list: Vec<(u64, u64)>,
    /// The kernel's buffer was too small even at the largest size: the
    /// list is incomplete.
    pub truncated: bool,
}

/// What one result buffer holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Container {
    /// The (inode, offset, root) triples copied.
    triples: Vec<(u64, u64, u64)>,
    /// `elem_missed`: the values (three a reference) that did not fit.
    missed: u32,
    /// `bytes_missing`: the bytes they would have needed.
    bytes_missing: u32,
}

impl Container {
    /// The buffer size that would have held every reference.
    fn needed(&self) -> usize {
        CONTAINER_HEADER + 24 * self.triples.len() + 8 * self.missed as usize
    }
}

/// The `__u32` at `at` in `b`, in the machine's byte order.
fn ne_u32(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().unwrap())
}

/// The `__u64` at `at` in `b`, in the machine's byte order.
fn ne_u64(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().unwrap())
}

/// Parses a `struct btrfs_data_container` the kernel filled: `elem_cnt`
/// values, three a reference. A count that is not a multiple of three, or
/// runs past the buffer, is `InvalidData`.
fn parse(b: &[u8]) -> io::Result<Container> {
    if b.len() < CONTAINER_HEADER {
        return Err(bad("a data container shorter than its header"));
    }
    let cnt = ne_u32(b, 8) as usize;
    if cnt % 3 != 0 || CONTAINER_HEADER + 8 * cnt > b.len() {
        return Err(bad("a data container's count does not fit it"));
    }
    let triples = (0..cnt / 3)
        .map(|i| {
            let at = CONTAINER_HEADER + 24 * i;
            (ne_u64(b, at), ne_u64(b, at + 8), ne_u64(b, at + 16))
        })
        .collect();
    Ok(Container {
        triples,
        missed: ne_u32(b, 12),
        bytes_missing: ne_u32(b, 4),
    })
}

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// One `BTRFS_IOC_LOGICAL_INO_V2` call into `buf` (all of it).
fn call(fd: BorrowedFd<'_>, logical: u64, buf: &mut [u8]) -> io::Result<()> {
    let mut args = LogicalInoArgs {
        logical,
        size: buf.len() as u64,
        reserved: [0; 3],
        flags: IGNORE_OFFSET,
        inodes: buf.as_mut_ptr() as u64,
    };
    // SAFETY: BTRFS_IOC_LOGICAL_INO_V2 reads one 56-byte `struct
    // btrfs_ioctl_logical_ino_args` (mirrored, size and offsets pinned
    // above) and writes `min(size, 16 MiB)` bytes at `inodes`; `args` is
    // initialised and borrowed for the call, and `inodes` points at `buf`,
    // `size` bytes, initialised and exclusively borrowed for the call.
    unsafe {
        ioctl(
            fd,
            Updater::<{ BTRFS_IOC_LOGICAL_INO_V2 }, LogicalInoArgs>::new(&mut args),
        )?
    };
    Ok(())
}

/// Every (subvolume id, inode number) holding the data extent at `bytenr`
/// (its `disk_bytenr`: any address inside it works, its start is what
/// the kernel's header asks for), at any offset. `fd`: any file of the
/// filesystem. The buffer starts at 4 KiB and grows to what the kernel
/// says it lacked, up to 16 MiB; past that the list is `truncated`.
///
/// # Errors
/// The ioctl's: `EPERM` without `CAP_SYS_ADMIN`, `ENOTTY` off Btrfs or
/// before Linux 4.15, `ENOENT` when no data extent lies at `bytenr` (or
/// not yet: see the module's docs); `InvalidData` for a result that does
/// not parse.
pub fn holders(fd: BorrowedFd<'_>, bytenr: u64) -> io::Result<Holders> {
    BUF.with(|cell| {
        let mut buf = cell.borrow_mut();
        let mut size = FIRST_SIZE;
        let got = loop {
            buf.clear();
            buf.resize(size, 0);
            call(fd, bytenr, &mut buf)?;
            let c = parse(&buf)?;
            if c.missed == 0 && c.bytes_missing == 0 {
                break (c, false);
            }
            if size >= MAX_SIZE {
                break (c, true);
            }
            size = c.needed().next_power_of_two().clamp(size * 2, MAX_SIZE);
        };
        // A grown buffer is given back: most extents need far less.
        if buf.len() > FIRST_SIZE {
            buf.truncate(FIRST_SIZE);
            buf.shrink_to_fit();
        }
        let (c, truncated) = got;
        let mut list: Vec<(u64, u64)> = c
            .triples
            .iter()
            .map(|&(ino, _, root)| (root, ino))
            .collect();
        list.sort_unstable();
        list.dedup();
        Ok(Holders { list, truncated })
    })
}

/// Whether [`holders`] can be asked here: the ioctl exists (Btrfs, Linux
/// ≥ 4.15) and the caller may use it (`CAP_SYS_ADMIN`). Asks for the
/// holders of address 0, where no data extent lies: `ENOENT` is a yes.
pub fn available(fd: BorrowedFd<'_>) -> bool {
    let mut small = [0u8; CONTAINER_HEADER + 24];
    match call(fd, 0, &mut small) {
        Ok(()) => true,
        Err(e) => e.raw_os_error() == Some(rustix::io::Errno::NOENT.raw_os_error()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::unnecessary_cast)]
    #[test]
    fn opcode_matches_the_kernel_header() {
        // _IOWR(0x94, 59, 56 bytes): direction read|write (3) << 30 =
        // 0xc000_0000, size 56 = 0x38 << 16 = 0x0038_0000, type 0x94 << 8
        // = 0x9400, number 59 = 0x3b.
        assert_eq!(BTRFS_IOC_LOGICAL_INO_V2 as u32, 0xc038_943b);
    }

    /// A data container as the kernel fills it: its header, then the
    /// values, in the machine's byte order, in a buffer of `size` bytes.
    fn container(size: usize, missing: u32, missed: u32, vals: &[u64]) -> Vec<u8> {
        let mut b = Vec::with_capacity(size);
        let used = (CONTAINER_HEADER + 8 * vals.len()) as u32;
        let left = (size as u32).saturating_sub(used);
        for v in [left, missing, vals.len() as u32, missed] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        for v in vals {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        b.resize(size, 0);
        b
    }

    #[test]
    fn data_containers_parse() {
        // Two references: (inode 257, offset 0, root 256), (258, 4096, 5).
        let b = container(4096, 0, 0, &[257, 0, 256, 258, 4096, 5]);
        let c = parse(&b).unwrap();
        assert_eq!(c.triples, vec![(257, 0, 256), (258, 4096, 5)]);
        assert_eq!((c.missed, c.bytes_missing), (0, 0));
        assert_eq!(c.needed(), 16 + 48);
        // Full: one copied, two missed (six values, 48 bytes, less the 8
        // bytes that were left when the first one did not fit).
        let b = container(16 + 32, 40, 6, &[257, 0, 256]);
        let c = parse(&b).unwrap();
        assert_eq!(c.triples, vec![(257, 0, 256)]);
        assert_eq!((c.missed, c.bytes_missing), (6, 40));
        assert_eq!(c.needed(), 16 + 3 * 24);
        // Empty.
        assert_eq!(
            parse(&container(64, 0, 0, &[])).unwrap(),
            Container::default()
        );
        // A count not in triples, one past the buffer, a buffer shorter
        // than the header.
        let mut b = container(4096, 0, 0, &[1, 2, 3]);
        b[8..12].copy_from_slice(&2u32.to_ne_bytes());
        assert!(parse(&b).is_err());
        b[8..12].copy_from_slice(&600u32.to_ne_bytes());
        assert!(parse(&b).is_err());
        assert!(parse(&b[..12]).is_err());
    }
}
