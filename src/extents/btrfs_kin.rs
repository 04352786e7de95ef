//! Whether a walk may meet Btrfs files that two subvolumes hold, asked
//! before it starts: the snapshot families are those of
//! [`super::subvolumes`].

use std::os::fd::BorrowedFd;

use super::subvolumes::Subvolumes;

/// Whether a walk of the directory open at `fd` may meet Btrfs files
/// that two subvolumes hold: its subvolume holds another (or that cannot
/// be told), or as root (`search`), its filesystem has snapshots, which
/// may hold its files outside the scan (or that cannot be told).
pub(crate) fn may_share(fd: BorrowedFd<'_>, search: bool) -> bool {
    sdu_sys::btrfs::has_nested_subvol(fd).unwrap_or(true)
        || (search
            && sdu_sys::fs::fs_type(fd).is_ok_and(|m| m == crate::probe::magic::BTRFS)
            && Subvolumes::read(fd).map_or(true, |s| s.any_family()))
}
