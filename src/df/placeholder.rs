//! PLACEHOLDER, not shipped: stand-ins, with the signatures of the parts
//! that write them, for the rows of `src/df/under_mounts.rs` and
//! `src/df/outside.rs` (mounts and subvolumes), `src/df/open_deleted.rs`
//! (files deleted but open), `src/df/space.rs` and
//! `src/df/deleted_subvolumes.rs` (df's Used, metadata, deleted
//! subvolumes). Each says it did not see what it stands for, so that the
//! table marks its row rather than show a made-up 0. The merge replaces
//! this file with those modules.

// The stand-ins carry every field of the real types, read or not.
#![allow(dead_code)]

pub(crate) mod under_mounts {
    use std::os::fd::{BorrowedFd, OwnedFd};
    use std::sync::Arc;

    use sdu_sys::mountinfo::Mount;

    /// A directory of this filesystem that another mount covers.
    pub(crate) struct Covered {
        /// The mount point, as /proc/self/mountinfo gives it.
        pub(crate) point: Vec<u8>,
        /// What covers it: fs type and source.
        pub(crate) by: Vec<u8>,
        /// The covering mount shows this very directory (a bind mount of
        /// it on itself).
        pub(crate) itself: bool,
        /// The covered directory, beneath a view of the filesystem without
        /// submounts (root only).
        pub(crate) fd: Option<Arc<OwnedFd>>,
    }

    /// The directories of a mount covered by others.
    pub(crate) struct UnderMounts {
        pub(crate) covered: Vec<Covered>,
        pub(crate) seen: bool,
    }

    /// The mounts lying on `mount`, listed; nothing beneath them opened.
    pub(crate) fn under_mounts(
        _fd: BorrowedFd<'_>,
        mount: &Mount,
        mounts: &[Mount],
    ) -> UnderMounts {
        let covered = mounts
            .iter()
            .filter(|m| m.parent == mount.id && m.id != mount.id)
            .map(|m| {
                let mut by = m.fs_type.clone();
                by.push(b' ');
                by.extend_from_slice(&m.source);
                Covered {
                    point: m.point.clone(),
                    by,
                    itself: false,
                    fd: None,
                }
            })
            .collect();
        UnderMounts {
            covered,
            seen: false,
        }
    }
}

pub(crate) mod outside {
    use std::os::fd::{BorrowedFd, OwnedFd};
    use std::sync::Arc;

    use sdu_sys::mountinfo::Mount;

    /// The subvolumes a walk of the mount does not reach.
    pub(crate) struct OutsideSubvols {
        pub(crate) roots: Vec<(Vec<u8>, Arc<OwnedFd>)>,
        pub(crate) mounted_at: Vec<Option<Vec<u8>>>,
        pub(crate) missed: Option<usize>,
        pub(crate) holding: Vec<Vec<u8>>,
    }

    /// Lists nothing: as if they could not be listed.
    pub(crate) fn outside_subvolumes(
        _fd: BorrowedFd<'_>,
        _mount: &Mount,
        _mounts: &[Mount],
    ) -> OutsideSubvols {
        OutsideSubvols {
            roots: Vec::new(),
            mounted_at: Vec::new(),
            missed: None,
            holding: Vec::new(),
        }
    }
}

pub(crate) mod open_deleted {
    use std::os::fd::BorrowedFd;

    /// A file deleted but open.
    pub(crate) struct OpenFile {
        pub(crate) pid: u32,
        pub(crate) comm: Vec<u8>,
        pub(crate) fd: Option<u32>,
        pub(crate) name: Vec<u8>,
        pub(crate) ino: u64,
        pub(crate) bytes: u64,
        pub(crate) holders: u32,
        pub(crate) shared: Option<bool>,
    }

    /// The files deleted but held open.
    pub(crate) struct DeletedOpen {
        pub(crate) files: Vec<OpenFile>,
        pub(crate) bytes: u64,
        pub(crate) unreadable: u32,
        pub(crate) hidden: bool,
    }

    impl DeletedOpen {
        /// Whether `bytes` may fall short.
        pub(crate) fn at_least(&self) -> bool {
            self.unreadable > 0 || self.hidden
        }
    }

    /// Reads nothing: as if no process could be read.
    pub(crate) fn deleted_open(_fs: BorrowedFd<'_>) -> DeletedOpen {
        DeletedOpen {
            files: Vec::new(),
            bytes: 0,
            unreadable: 0,
            hidden: true,
        }
    }
}

pub(crate) mod space {
    use std::io;
    use std::os::fd::BorrowedFd;

    /// A part of the metadata.
    pub(crate) struct Part {
        pub(crate) name: &'static str,
        pub(crate) bytes: u64,
    }

    /// How the metadata figure was found.
    pub(crate) enum How {
        Exact,
        Estimate,
    }

    /// df's Used and Size, and the part of Used that is not file data.
    pub(crate) struct Space {
        pub(crate) used: u64,
        pub(crate) size: u64,
        pub(crate) data_used: Option<u64>,
        pub(crate) metadata: u64,
        pub(crate) how: How,
        pub(crate) parts: Vec<Part>,
    }

    /// Used and Size from statvfs; on Btrfs the metadata taken as Used
    /// less the data block groups' used bytes, elsewhere 0: estimates.
    pub(crate) fn space(fd: BorrowedFd<'_>) -> io::Result<Space> {
        let st = rustix::fs::fstatvfs(fd)?;
        let used = st.f_blocks.saturating_sub(st.f_bfree) * st.f_frsize;
        let data_used = sdu_sys::btrfs::data_used(fd).ok().flatten();
        let (metadata, how) = match data_used {
            Some(d) => (used.saturating_sub(d), How::Estimate),
            None => (0, How::Estimate),
        };
        Ok(Space {
            used,
            size: st.f_blocks * st.f_frsize,
            data_used,
            metadata,
            how,
            parts: Vec::new(),
        })
    }
}

pub(crate) mod deleted_subvolumes {
    use std::os::fd::BorrowedFd;

    /// A subvolume deleted, not yet cleaned.
    pub(crate) struct DeletedSubvol {
        pub(crate) id: u64,
        pub(crate) bytes: u64,
    }

    /// The subvolumes deleted, not yet cleaned.
    pub(crate) struct DeletedSubvols {
        pub(crate) subvols: Vec<DeletedSubvol>,
        pub(crate) bytes: u64,
        pub(crate) seen: bool,
        pub(crate) waiting: Option<u32>,
        pub(crate) exact: bool,
    }

    /// Reads nothing: as if without `CAP_SYS_ADMIN`.
    pub(crate) fn deleted_subvolumes(_fd: BorrowedFd<'_>) -> DeletedSubvols {
        DeletedSubvols {
            subvols: Vec::new(),
            bytes: 0,
            seen: false,
            waiting: None,
            exact: false,
        }
    }
}
