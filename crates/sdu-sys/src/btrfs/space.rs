//! `BTRFS_IOC_SPACE_INFO`: every kind of block group of a Btrfs
//! filesystem (data, metadata, system, in each profile), the bytes
//! allocated to it and used in it, and the global block reserve.
//! Unprivileged.
//!
//! What `df` shows as Used on Btrfs is the kernel's `btrfs_statfs`: the
//! bytes used on disk in every kind of block group (each kind's used
//! bytes × its profile's copies: DUP metadata is written twice), divided
//! by the data profile's copies, plus the global block reserve. With
//! single data and DUP metadata: data used + 2 × metadata used + 2 ×
//! system used + the global reserve ([`Slot::disk_used`], [`statfs_used`]).
//!
//! The argument is a `#[repr(C)]` mirror of `struct btrfs_ioctl_space_args`
//! followed by its `struct btrfs_ioctl_space_info`s (sizes and offsets
//! pinned at compile time, the opcode by a test).
//!
//! # References
//!  - `include/uapi/linux/btrfs.h` (`btrfs_ioctl_space_args`,
//!    `BTRFS_SPACE_INFO_GLOBAL_RSV`), `include/uapi/linux/btrfs_tree.h`
//!    (`BTRFS_BLOCK_GROUP_*`)
//!  - `fs/btrfs/ioctl.c` (`btrfs_ioctl_space_info`: per kind and profile,
//!    Σ block group length and used; the global reserve's size and
//!    size − reserved), `fs/btrfs/super.c` (`btrfs_statfs`),
//!    `fs/btrfs/volumes.c` (`btrfs_raid_array`: each profile's `ncopies`)

use std::io;
use std::os::fd::BorrowedFd;

use rustix::ioctl::{Opcode, Updater, ioctl, opcode};

/// `BTRFS_BLOCK_GROUP_DATA`: file data.
pub const BLOCK_GROUP_DATA: u64 = 1;
/// `BTRFS_BLOCK_GROUP_SYSTEM`: the chunk tree.
pub const BLOCK_GROUP_SYSTEM: u64 = 1 << 1;
/// `BTRFS_BLOCK_GROUP_METADATA`: the other trees (and inline data).
pub const BLOCK_GROUP_METADATA: u64 = 1 << 2;
/// `BTRFS_BLOCK_GROUP_RAID0`.
pub const BLOCK_GROUP_RAID0: u64 = 1 << 3;
/// `BTRFS_BLOCK_GROUP_RAID1`.
pub const BLOCK_GROUP_RAID1: u64 = 1 << 4;
/// `BTRFS_BLOCK_GROUP_DUP`.
pub const BLOCK_GROUP_DUP: u64 = 1 << 5;
/// `BTRFS_BLOCK_GROUP_RAID10`.
pub const BLOCK_GROUP_RAID10: u64 = 1 << 6;
/// `BTRFS_BLOCK_GROUP_RAID5`.
pub const BLOCK_GROUP_RAID5: u64 = 1 << 7;
/// `BTRFS_BLOCK_GROUP_RAID6`.
pub const BLOCK_GROUP_RAID6: u64 = 1 << 8;
/// `BTRFS_BLOCK_GROUP_RAID1C3`.
pub const BLOCK_GROUP_RAID1C3: u64 = 1 << 9;
/// `BTRFS_BLOCK_GROUP_RAID1C4`.
pub const BLOCK_GROUP_RAID1C4: u64 = 1 << 10;
/// `BTRFS_SPACE_INFO_GLOBAL_RSV`: the pseudo-kind of the global block
/// reserve (total: its size; used: size − reserved).
pub const SPACE_INFO_GLOBAL_RSV: u64 = 1 << 49;

/// One kind of block group in one profile, or the global reserve.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Slot {
    /// `BTRFS_BLOCK_GROUP_*` (kind and profile) or
    /// [`SPACE_INFO_GLOBAL_RSV`].
    pub flags: u64,
    /// Bytes allocated to block groups of this kind (logical: each byte
    /// once whatever the profile); the reserve's size.
    pub total: u64,
    /// Bytes used in them (logical); for the reserve, size − reserved.
    pub used: u64,
}

impl Slot {
    /// The copies its profile writes of each byte (`ncopies`): 2 for DUP,
    /// RAID1 and RAID10, 3 and 4 for RAID1C3/C4, else 1 (RAID5/6's parity
    /// is not counted, as the kernel does not).
    pub fn copies(&self) -> u64 {
        copies(self.flags)
    }

    /// Whether this is the global reserve's pseudo-slot.
    pub fn is_global_reserve(&self) -> bool {
        self.flags & SPACE_INFO_GLOBAL_RSV != 0
    }

    /// The bytes used on the devices: `used × copies` (the kernel's
    /// `disk_used`); 0 for the global reserve.
    pub fn disk_used(&self) -> u64 {
        if self.is_global_reserve() {
            0
        } else {
            self.used.saturating_mul(self.copies())
        }
    }
}

/// The copies a profile (`BTRFS_BLOCK_GROUP_*` flags) writes of each byte.
pub fn copies(flags: u64) -> u64 {
    if flags & BLOCK_GROUP_RAID1C4 != 0 {
        4
    } else if flags & BLOCK_GROUP_RAID1C3 != 0 {
        3
    } else if flags & (BLOCK_GROUP_RAID1 | BLOCK_GROUP_DUP | BLOCK_GROUP_RAID10) != 0 {
        2
    } else {
        1
    }
}

/// `btrfs_statfs`'s Used, in bytes, from the slots: Σ disk used ÷ the
/// data profile's copies (that of the last data slot, as the kernel takes
/// the last profile holding block groups), rounded down to `block`, plus
/// the global reserve's size rounded down to `block` (each term is
/// shifted to blocks on its own). `None` without a data slot.
///
/// It equals `(f_blocks − f_bfree) × f_frsize` of the same moment, but
/// where the kernel's own numbers part from the ioctl's: read-only block
/// groups (a balance or scrub running), a write between the two reads, a
/// free-space count clamped at 0 (`f_bfree` never goes below 0), and a
/// `mixed-bg` filesystem (one slot is data and metadata: the same sum,
/// which the kernel calls not byte-accurate).
pub fn statfs_used(slots: &[Slot], block: u64) -> Option<u64> {
    let factor = slots
        .iter()
        .rev()
        .find(|s| s.flags & BLOCK_GROUP_DATA != 0 && !s.is_global_reserve())
        .map(Slot::copies)?;
    let block = block.max(1);
    let disk: u64 = slots.iter().map(Slot::disk_used).sum();
    let reserve: u64 = slots
        .iter()
        .filter(|s| s.is_global_reserve())
        .map(|s| s.total)
        .sum();
    Some((disk / factor) / block * block + reserve / block * block)
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
const _: () = assert!(std::mem::offset_of!(BtrfsSpaceInfo, used_bytes) == 16);
const _: () = assert!(std::mem::offset_of!(BtrfsSpaceBuf, spaces) == 16);

/// `_IOWR(0x94, 20, struct btrfs_ioctl_space_args)`.
pub const BTRFS_IOC_SPACE_INFO: Opcode = opcode::read_write::<BtrfsSpaceArgs>(0x94, 20);

/// `ioctl(fd, BTRFS_IOC_SPACE_INFO)`: every kind of block group of the
/// Btrfs filesystem holding `fd`, per profile, and the global reserve
/// (its pseudo-slot, flagged [`SPACE_INFO_GLOBAL_RSV`]), in the kernel's
/// order. Unprivileged.
///
/// # Errors
/// The ioctl's (`ENOTTY` off Btrfs), or `Other` if the kernel has more
/// kinds than the buffer holds.
pub fn space_info(fd: BorrowedFd<'_>) -> io::Result<Vec<Slot>> {
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
    if buf.args.total_spaces > SPACE_SLOTS as u64 {
        return Err(io::Error::other("more kinds of block groups than expected"));
    }
    Ok(buf.spaces[..buf.args.total_spaces as usize]
        .iter()
        .map(|s| Slot {
            flags: s.flags,
            total: s.total_bytes,
            used: s.used_bytes,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::unnecessary_cast)]
    #[test]
    fn opcode_matches_the_kernel_headers() {
        // <linux/btrfs.h> (linux-libc-dev).
        assert_eq!(BTRFS_IOC_SPACE_INFO as u32, 0xc010_9414);
    }

    #[test]
    fn statfs_used_as_the_kernel_sums_it() {
        let slot = |flags, used| Slot {
            flags,
            total: 1 << 30,
            used,
        };
        // Single data, DUP metadata and system, a 3.5 MiB reserve.
        let slots = [
            slot(BLOCK_GROUP_DATA, 8 << 20),
            slot(BLOCK_GROUP_SYSTEM | BLOCK_GROUP_DUP, 16384),
            slot(BLOCK_GROUP_METADATA | BLOCK_GROUP_DUP, 147_456),
            Slot {
                flags: SPACE_INFO_GLOBAL_RSV,
                total: 3_670_016,
                used: 0,
            },
        ];
        assert_eq!(slots[2].disk_used(), 294_912);
        assert_eq!(slots[3].disk_used(), 0);
        assert_eq!(
            statfs_used(&slots, 4096),
            Some((8 << 20) + 32768 + 294_912 + 3_670_016)
        );
        // RAID1 data: everything divided by 2, the reserve not.
        let mut r1 = slots;
        r1[0].flags |= BLOCK_GROUP_RAID1;
        assert_eq!(
            statfs_used(&r1, 4096),
            Some(((8 << 20) * 2 + 32768 + 294_912) / 2 + 3_670_016)
        );
        assert_eq!(statfs_used(&slots[1..], 4096), None);
        assert_eq!(copies(BLOCK_GROUP_METADATA | BLOCK_GROUP_RAID1C3), 3);
        assert_eq!(copies(BLOCK_GROUP_DATA | BLOCK_GROUP_RAID6), 1);
    }
}
