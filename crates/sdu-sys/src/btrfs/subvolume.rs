//! The Btrfs ioctls that delete a subvolume: reading and clearing a subvolume's
//! read-only flag through its fd, deleting a subvolume by id, waking
//! the cleaner, and counting the deleted subvolumes it has yet to drop.
//!
//! Each argument is a `#[repr(C)]` mirror of its kernel UAPI struct
//! (sizes and offsets pinned at compile time, opcodes by a test), handed
//! to the kernel through rustix's [`ioctl`].
//!
//! # References
//!  - `include/uapi/linux/btrfs.h`: `btrfs_ioctl_vol_args_v2`,
//!    `BTRFS_SUBVOL_SPEC_BY_ID`, `btrfs_ioctl_subvol_wait`
//!  - `fs/btrfs/ioctl.c`: `btrfs_ioctl_snap_destroy` (who may delete; by
//!    id, the parent found with `btrfs_get_parent` and the name read from
//!    the subvolume's root ref, then looked up in that parent),
//!    `btrfs_ioctl_subvol_sync` (Linux ≥ 6.8), `BTRFS_IOC_SYNC` (wakes the
//!    cleaner kthread)

use std::io;
use std::os::fd::BorrowedFd;

use rustix::ioctl::{NoArg, Opcode, Setter, Updater, ioctl, opcode};

/// `BTRFS_SUBVOL_NAME_MAX`.
const SUBVOL_NAME_MAX: usize = 4039;
/// `BTRFS_FIRST_FREE_OBJECTID`: the inode number of a subvolume's root
/// directory.
pub const FIRST_FREE_OBJECTID: u64 = 256;

/// `struct btrfs_ioctl_vol_args_v2` with the unions spelled as their
/// largest members: `unused[4]` and `name`.
#[repr(C)]
#[derive(Clone, Copy)]
struct VolArgsV2 {
    fd: i64,
    transid: u64,
    flags: u64,
    unused: [u64; 4],
    name: [u8; SUBVOL_NAME_MAX + 1],
}

/// `struct btrfs_ioctl_subvol_wait`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct SubvolWait {
    subvolid: u64,
    mode: u32,
    count: u32,
}

const _: () = assert!(size_of::<VolArgsV2>() == 4096);
const _: () = assert!(std::mem::offset_of!(VolArgsV2, name) == 56);
const _: () = assert!(size_of::<SubvolWait>() == 16);
const _: () = assert!(std::mem::offset_of!(SubvolWait, mode) == 8);

/// `_IOW(0x94, 63, struct btrfs_ioctl_vol_args_v2)` (Linux ≥ 5.7).
pub const BTRFS_IOC_SNAP_DESTROY_V2: Opcode = opcode::write::<VolArgsV2>(0x94, 63);
/// `_IOW(0x94, 65, struct btrfs_ioctl_subvol_wait)` (Linux ≥ 6.8).
pub const BTRFS_IOC_SUBVOL_SYNC_WAIT: Opcode = opcode::write::<SubvolWait>(0x94, 65);

/// `_IO(0x94, 8)`.
pub const BTRFS_IOC_SYNC: Opcode = opcode::none(0x94, 8);

/// `_IOR(0x94, 25, __u64)`.
pub const BTRFS_IOC_SUBVOL_GETFLAGS: Opcode = opcode::read::<u64>(0x94, 25);
/// `_IOW(0x94, 26, __u64)`.
pub const BTRFS_IOC_SUBVOL_SETFLAGS: Opcode = opcode::write::<u64>(0x94, 26);

/// `BTRFS_SUBVOL_RDONLY`.
pub const SUBVOL_RDONLY: u64 = 1 << 1;

/// `BTRFS_SUBVOL_SYNC_COUNT`.
const SYNC_COUNT: u32 = 2;

/// `BTRFS_SUBVOL_SPEC_BY_ID`: the subvolume is given by its id, in the
/// union that otherwise holds the name.
const SUBVOL_SPEC_BY_ID: u64 = 1 << 4;

/// Deletes the subvolume whose id is `id` (`BTRFS_IOC_SNAP_DESTROY_V2`
/// with `BTRFS_SUBVOL_SPEC_BY_ID`, Linux ≥ 5.7), called on `dir`, a
/// directory of the same filesystem. The kernel finds the directory that
/// holds the subvolume's root from the id, then looks its name up there:
/// the caller sees to it that nobody else can rename entries in that
/// directory. It checks the permission: without CAP_SYS_ADMIN only where
/// the filesystem is mounted `user_subvol_rm_allowed` (`EPERM`
/// otherwise). A kernel without deletion by id answers `ENOTTY` or
/// `EOPNOTSUPP`; nothing is deleted by name instead.
pub fn snap_destroy_by_id(dir: BorrowedFd<'_>, id: u64) -> io::Result<()> {
    if id < FIRST_FREE_OBJECTID {
        return Err(io::Error::from_raw_os_error(libc_einval()));
    }
    let mut v2 = VolArgsV2 {
        fd: 0,
        transid: 0,
        flags: SUBVOL_SPEC_BY_ID,
        unused: [0; 4],
        name: [0; SUBVOL_NAME_MAX + 1],
    };
    // `subvolid` shares its place with the first bytes of `name`.
    v2.name[..8].copy_from_slice(&id.to_ne_bytes());
    // SAFETY: BTRFS_IOC_SNAP_DESTROY_V2 reads one 4096-byte `struct
    // btrfs_ioctl_vol_args_v2` (layout mirrored, size and offset pinned
    // above); with BTRFS_SUBVOL_SPEC_BY_ID it reads the `__u64 subvolid`
    // at the offset of `name`, which `v2` holds.
    unsafe {
        ioctl(
            dir,
            Setter::<{ BTRFS_IOC_SNAP_DESTROY_V2 }, VolArgsV2>::new(v2),
        )
    }
    .map_err(io::Error::from)
}

/// The flags of the subvolume whose root directory is open at `fd`
/// (`BTRFS_IOC_SUBVOL_GETFLAGS`; [`SUBVOL_RDONLY`] is the one there is).
pub fn subvol_flags(fd: BorrowedFd<'_>) -> io::Result<u64> {
    let mut flags = 0u64;
    // SAFETY: BTRFS_IOC_SUBVOL_GETFLAGS writes one `__u64` into `flags`,
    // exclusively borrowed for the call.
    unsafe {
        ioctl(
            fd,
            Updater::<{ BTRFS_IOC_SUBVOL_GETFLAGS }, u64>::new(&mut flags),
        )?
    };
    Ok(flags)
}

/// Sets the flags of the subvolume whose root directory is open at `fd`
/// (`BTRFS_IOC_SUBVOL_SETFLAGS`): it acts on that subvolume, found from
/// the fd, never by a name. The owner of the subvolume's root or
/// CAP_FOWNER may; the kernel refuses a read-only subvolume made writable
/// during a send (`EPERM`).
pub fn set_subvol_flags(fd: BorrowedFd<'_>, flags: u64) -> io::Result<()> {
    // SAFETY: BTRFS_IOC_SUBVOL_SETFLAGS reads one `__u64`, which the
    // setter holds.
    unsafe { ioctl(fd, Setter::<{ BTRFS_IOC_SUBVOL_SETFLAGS }, u64>::new(flags)) }
        .map_err(io::Error::from)
}

/// The number of deleted subvolumes the cleaner has yet to drop
/// (`BTRFS_IOC_SUBVOL_SYNC_WAIT`, mode `BTRFS_SUBVOL_SYNC_COUNT`, which
/// does not wait). Linux ≥ 6.8; the error otherwise.
pub fn dead_subvolumes(fd: BorrowedFd<'_>) -> io::Result<u32> {
    let mut args = SubvolWait {
        subvolid: 0,
        mode: SYNC_COUNT,
        count: 0,
    };
    // SAFETY: BTRFS_IOC_SUBVOL_SYNC_WAIT reads one 16-byte `struct
    // btrfs_ioctl_subvol_wait` (layout mirrored, size pinned above) and in
    // this mode writes it back with `count` set; `args` is initialised and
    // exclusively borrowed. (The opcode says "write" only: the kernel
    // copies the struct back all the same.)
    unsafe {
        ioctl(
            fd,
            Updater::<{ BTRFS_IOC_SUBVOL_SYNC_WAIT }, SubvolWait>::new(&mut args),
        )?
    };
    Ok(args.count)
}

/// `BTRFS_IOC_SYNC`: commits the transaction and wakes the cleaner, which
/// drops deleted subvolumes (a plain `syncfs` does not wake it: it would
/// wait for the next periodic commit). Unprivileged.
pub fn sync_and_clean(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: BTRFS_IOC_SYNC takes no argument.
    unsafe { ioctl(fd, NoArg::<{ BTRFS_IOC_SYNC }>::new()) }.map_err(io::Error::from)
}

fn libc_einval() -> i32 {
    rustix::io::Errno::INVAL.raw_os_error()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The opcodes as `<linux/btrfs.h>` spells them (the `_IOW`/`_IOWR`
    /// arithmetic done by hand: direction, size, type 0x94, number).
    #[test]
    fn opcodes_match_the_headers() {
        let w = |size: u32, nr: u32| (1u32 << 30) | (size << 16) | (0x94 << 8) | nr;
        assert_eq!(BTRFS_IOC_SNAP_DESTROY_V2, w(4096, 63));
        assert_eq!(BTRFS_IOC_SUBVOL_SYNC_WAIT, w(16, 65));
        assert_eq!(BTRFS_IOC_SUBVOL_SETFLAGS, w(8, 26));
        assert_eq!(
            BTRFS_IOC_SUBVOL_GETFLAGS,
            (2u32 << 30) | (8 << 16) | (0x94 << 8) | 25
        );
        assert_eq!(BTRFS_IOC_SYNC, (0x94 << 8) | 8);
    }
}
