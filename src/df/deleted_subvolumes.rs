//! Btrfs subvolumes deleted but not yet cleaned, and the data the
//! cleaner frees when it drops them.
//!
//! Deleting a subvolume unlinks it at once and leaves its tree to the
//! cleaner thread, which drops it in the background (and not at all on a
//! read-only mount): until then its data stays in df's Used though no
//! path reaches it. The root tree lists each such subvolume as an orphan
//! item (`sdu_sys::btrfs::dead_roots`); its data is every data extent
//! whose references all lie in dead roots (`sdu_sys::btrfs::dead_data`,
//! from the extent tree: a dead root's own tree cannot be searched).
//! Needs root (the tree search); without it nothing is seen.

use std::os::fd::BorrowedFd;

use sdu_sys::btrfs;
use sdu_sys::fs::{fs_type, magic};

/// One deleted subvolume and the data its drop frees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DeletedSubvol {
    /// Its id.
    pub(crate) id: u64,
    /// The bytes on disk of the data extents freed when it is dropped
    /// that no other dead root holds with a lower id (each extent counted
    /// under one subvolume).
    pub(crate) bytes: u64,
}

/// The deleted subvolumes of a filesystem.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct DeletedSubvols {
    /// Each, by id.
    pub(crate) subvols: Vec<DeletedSubvol>,
    /// What dropping them all frees of data: each extent once.
    pub(crate) bytes: u64,
    /// They could be read: false without `CAP_SYS_ADMIN` (or when the
    /// tree search failed), when `subvols` and `bytes` are empty.
    pub(crate) seen: bool,
    /// When not seen: how many deleted subvolumes wait for the cleaner,
    /// which anyone may ask (`BTRFS_IOC_SUBVOL_SYNC_WAIT`'s count of the
    /// cleaner's list, Linux ≥ 6.8); their bytes need root. `None` when
    /// that fails, and on a read-only mount, where the kernel does not
    /// list the orphan roots (the count would say 0 whatever there is).
    pub(crate) waiting: Option<u32>,
    /// `bytes` is exact; false when the holders of some extents reached
    /// through shared leaves could not be listed (those are left out, so
    /// `bytes` is at least what is freed). A drop the cleaner has begun
    /// leaves it exact: the extents it freed are gone from the extent
    /// tree, and `bytes` is what is left to free.
    pub(crate) exact: bool,
}

/// The subvolumes deleted but not yet cleaned on the filesystem of `fd`,
/// and the data their drop frees. Off Btrfs: none, seen and exact (there
/// is no such thing).
pub(crate) fn deleted_subvolumes(fd: BorrowedFd<'_>) -> DeletedSubvols {
    let none = DeletedSubvols {
        seen: true,
        exact: true,
        ..DeletedSubvols::default()
    };
    match fs_type(fd) {
        Ok(magic::BTRFS) => {}
        Ok(_) => return none,
        Err(_) => return DeletedSubvols::default(),
    }
    let Ok(dead) = btrfs::dead_roots(fd) else {
        let read_only = rustix::fs::fstatvfs(fd).map_or(true, |st| {
            st.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY)
        });
        return DeletedSubvols {
            waiting: if read_only {
                None
            } else {
                btrfs::dead_subvolumes(fd).ok()
            },
            ..DeletedSubvols::default()
        };
    };
    if dead.is_empty() {
        return none;
    }
    let ids: Vec<u64> = dead.iter().map(|d| d.id).collect();
    let Ok(data) = btrfs::dead_data(fd, &ids) else {
        return DeletedSubvols::default();
    };
    DeletedSubvols {
        subvols: ids
            .iter()
            .map(|&id| DeletedSubvol {
                id,
                bytes: data
                    .per_root
                    .iter()
                    .find(|(r, _)| *r == id)
                    .map_or(0, |&(_, b)| b),
            })
            .collect(),
        bytes: data.bytes,
        seen: true,
        waiting: None,
        exact: data.unresolved == 0,
    }
}

#[cfg(test)]
mod tests {
    use std::fs::File;
    use std::os::fd::AsFd;

    use super::*;
    use crate::df::space::tests::{Loop, as_nobody, sh};

    /// A subvolume of 8 MiB deleted and the filesystem mounted read-only
    /// at once (the cleaner does not run there): found, with its 8 MiB;
    /// nothing seen without root; nothing at all off Btrfs.
    #[test]
    fn a_subvolume_deleted_on_a_read_only_mount() {
        let Some(l) = Loop::new("btrfs", &["mkfs.btrfs", "-q", "-f"]) else {
            return;
        };
        let sv = l.path("sv");
        sh(&["btrfs", "subvolume", "create", sv.to_str().unwrap()]);
        l.write("sv/f", 8 << 20);
        let id = btrfs::subvol_id(File::open(&sv).unwrap().as_fd()).unwrap();
        sh(&["btrfs", "subvolume", "delete", sv.to_str().unwrap()]);
        l.umount();
        l.mount("ro");
        let f = File::open(&l.mnt).unwrap();
        let got = deleted_subvolumes(f.as_fd());
        assert_eq!(
            got,
            DeletedSubvols {
                subvols: vec![DeletedSubvol { id, bytes: 8 << 20 }],
                bytes: 8 << 20,
                seen: true,
                waiting: None,
                exact: true,
            }
        );
        // Without root: not seen; on a read-only mount not counted either
        // (the kernel's count of the cleaner's list says 0 there).
        let user = as_nobody(|| deleted_subvolumes(f.as_fd()));
        assert_eq!(
            (user.seen, user.bytes, user.subvols, user.waiting),
            (false, 0, vec![], None)
        );
        // Read-write, the cleaner done: none wait.
        drop(f);
        l.umount();
        l.mount("rw");
        let mnt = l.mnt.to_str().unwrap();
        sh(&["btrfs", "filesystem", "sync", mnt]);
        sh(&["btrfs", "subvolume", "sync", mnt]);
        let f = File::open(&l.mnt).unwrap();
        assert_eq!(deleted_subvolumes(f.as_fd()).subvols, vec![]);
        let user = as_nobody(|| deleted_subvolumes(f.as_fd()));
        let count = btrfs::dead_subvolumes(f.as_fd()).ok();
        assert_eq!((user.seen, user.waiting), (false, count));
        assert!(count.is_none_or(|n| n == 0));
        let tmp = File::open(std::env::temp_dir()).unwrap();
        if fs_type(tmp.as_fd()).unwrap() != magic::BTRFS {
            let none = deleted_subvolumes(tmp.as_fd());
            assert!(none.seen && none.exact && none.bytes == 0);
        }
    }
}
