//! "May this file share extents?": the one place that decides which files
//! get a FIEMAP call, and the registry of filesystems it decides from.
//!
//! The decision is made once per filesystem (statfs `f_type`, plus the
//! reflink feature bit on XFS) and then per file (regular, with blocks, an
//! inode not mapped already). The kernel has no per-file "may share" bit yet
//! (one has been proposed as a statx attribute); when it comes, it slots
//! into [`may_share`].

use std::collections::HashMap;
use std::os::fd::BorrowedFd;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::extents::Granularity;
use crate::fiemap;
use crate::figures::Kind;

/// statfs magic numbers (linux/magic.h and the filesystems' own headers).
pub mod magic {
    pub const BTRFS: u32 = 0x9123_683e;
    pub const XFS: u32 = 0x5846_5342;
    pub const OCFS2: u32 = 0x7461_636f;
    pub const BCACHEFS: u32 = 0xca45_1a4e;
    pub const EXT4: u32 = 0xef53;
    pub const TMPFS: u32 = 0x0102_1994;
    pub const NFS: u32 = 0x6969;
    pub const CIFS: u32 = 0xff53_4d42;
    pub const SMB2: u32 = 0xfe53_4d42;
}

/// What sdu knows about one filesystem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FsInfo {
    /// Index in the registry: the extent index keys physical addresses by it.
    pub index: u32,
    /// statfs `f_type`.
    pub magic: u32,
    /// Can two files on it share physical blocks?
    pub can_share: bool,
    /// How it frees shared data.
    pub granularity: Granularity,
}

impl FsInfo {
    /// A filesystem not probed (no fd on it was at hand): shares nothing.
    pub const UNKNOWN: FsInfo = FsInfo {
        index: u32::MAX,
        magic: 0,
        can_share: false,
        granularity: Granularity::Block,
    };

    /// A short name for messages and `--stats`.
    pub fn name(&self) -> &'static str {
        match self.magic {
            magic::BTRFS => "btrfs",
            magic::XFS => "xfs",
            magic::OCFS2 => "ocfs2",
            magic::BCACHEFS => "bcachefs",
            magic::EXT4 => "ext2/3/4",
            magic::TMPFS => "tmpfs",
            magic::NFS => "nfs",
            magic::CIFS | magic::SMB2 => "cifs/smb",
            _ => "other",
        }
    }
}

/// Why a file got no FIEMAP call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skip {
    /// Not a regular file: only regular files have data extents.
    NotRegular,
    /// No allocated blocks (empty, or all inline in the inode).
    NoBlocks,
    /// Its filesystem cannot share blocks (ext4, tmpfs, XFS without
    /// reflink...) or reports no usable physical addresses (CIFS, NFS).
    FsCannotShare,
    /// Another link of the same inode was mapped already.
    SeenInode,
}

impl Skip {
    /// All reasons, in the order `--stats` prints them.
    pub const ALL: [Skip; 4] = [
        Skip::NotRegular,
        Skip::NoBlocks,
        Skip::FsCannotShare,
        Skip::SeenInode,
    ];

    /// Position in [`Skip::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// What `--stats` calls it.
    pub fn describe(self) -> &'static str {
        match self {
            Skip::NotRegular => "not a regular file",
            Skip::NoBlocks => "no allocated blocks",
            Skip::FsCannotShare => "filesystem cannot share",
            Skip::SeenInode => "inode already mapped (hardlink)",
        }
    }
}

/// Decides whether a file may share extents and so needs FIEMAP.
///
/// `first_link` is asked last, and only when everything else allows a
/// FIEMAP: it claims the inode (false when another link of it has been or
/// is being mapped). This is the single place to consult a future per-file
/// statx "may share" attribute.
pub fn may_share(
    fs: &FsInfo,
    kind: Kind,
    blocks: u64,
    first_link: impl FnOnce() -> bool,
) -> Result<(), Skip> {
    if kind != Kind::File {
        Err(Skip::NotRegular)
    } else if !fs.can_share {
        Err(Skip::FsCannotShare)
    } else if blocks == 0 {
        Err(Skip::NoBlocks)
    } else if !first_link() {
        Err(Skip::SeenInode)
    } else {
        Ok(())
    }
}

/// The filesystems met during a walk, by device number.
///
/// Btrfs subvolumes and snapshots have their own `st_dev` but one physical
/// address space, so devices map to filesystems by UUID; elsewhere the
/// identity is UUID and device together (cloned images share UUIDs).
#[derive(Debug, Default)]
pub struct Registry {
    inner: Mutex<RegistryInner>,
    /// Set per filesystem index when FIEMAP turned out to be unsupported.
    no_fiemap: Mutex<Vec<bool>>,
    warned_no_fiemap: AtomicBool,
}

#[derive(Debug, Default)]
struct RegistryInner {
    by_dev: HashMap<u64, FsInfo>,
    by_identity: HashMap<(u32, [u8; 16], u64), u32>,
    all: Vec<FsInfo>,
}

impl Registry {
    /// The filesystem of `dev`, probing it through `fd` (any fd on it) the
    /// first time.
    pub fn lookup(&self, dev: u64, fd: BorrowedFd<'_>) -> FsInfo {
        if let Some(fs) = self.lock().by_dev.get(&dev) {
            return *fs;
        }
        // Probe outside the lock: ioctls can be slow on network filesystems.
        let magic = rustix::fs::fstatfs(fd).map_or(0, |s| s.f_type as u32);
        let (can_share, granularity) = match magic {
            magic::BTRFS | magic::BCACHEFS => (true, Granularity::Extent),
            magic::XFS => (
                fiemap::xfs_reflink_enabled(fd).unwrap_or(false),
                Granularity::Block,
            ),
            magic::OCFS2 => (true, Granularity::Block),
            _ => (false, Granularity::Block),
        };
        let uuid = if can_share {
            fiemap::fs_uuid(fd).ok()
        } else {
            None
        };
        // Btrfs: one address space for all subvolumes, whatever st_dev says.
        let identity = match (magic, uuid) {
            (magic::BTRFS, Some(u)) => (magic, u, 0),
            (_, Some(u)) => (magic, u, dev),
            (_, None) => (magic, [0; 16], dev),
        };
        let mut inner = self.lock();
        if let Some(fs) = inner.by_dev.get(&dev) {
            return *fs;
        }
        let next = inner.all.len() as u32;
        let index = *inner.by_identity.entry(identity).or_insert(next);
        let fs = FsInfo {
            index,
            magic,
            can_share,
            granularity,
        };
        if index == next {
            inner.all.push(fs);
            self.no_fiemap
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(false);
        }
        inner.by_dev.insert(dev, fs);
        fs
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RegistryInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The unit granularity of filesystem `index`.
    pub fn granularity(&self, index: u32) -> Granularity {
        self.lock()
            .all
            .get(index as usize)
            .map_or(Granularity::Block, |f| f.granularity)
    }

    /// All filesystems, by index.
    pub fn filesystems(&self) -> Vec<FsInfo> {
        self.lock().all.clone()
    }

    /// Has FIEMAP failed as unsupported on filesystem `index`?
    pub fn fiemap_unsupported(&self, index: u32) -> bool {
        self.no_fiemap
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(index as usize)
            .copied()
            .unwrap_or(false)
    }

    /// Records that FIEMAP is unsupported on filesystem `index`; returns
    /// true the first time for the whole walk (to warn once).
    pub fn set_fiemap_unsupported(&self, index: u32) -> bool {
        if let Some(f) = self
            .no_fiemap
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(index as usize)
        {
            *f = true;
        }
        !self.warned_no_fiemap.swap(true, Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fs(can_share: bool) -> FsInfo {
        FsInfo {
            index: 0,
            magic: magic::XFS,
            can_share,
            granularity: Granularity::Block,
        }
    }

    #[test]
    fn decision_order_and_reasons() {
        let yes = || true;
        assert_eq!(may_share(&fs(true), Kind::File, 8, yes), Ok(()));
        assert_eq!(
            may_share(&fs(true), Kind::Dir, 8, yes),
            Err(Skip::NotRegular)
        );
        assert_eq!(
            may_share(&fs(true), Kind::Symlink, 8, yes),
            Err(Skip::NotRegular)
        );
        assert_eq!(
            may_share(&fs(false), Kind::File, 8, yes),
            Err(Skip::FsCannotShare)
        );
        assert_eq!(
            may_share(&fs(true), Kind::File, 0, yes),
            Err(Skip::NoBlocks)
        );
        assert_eq!(
            may_share(&fs(true), Kind::File, 8, || false),
            Err(Skip::SeenInode)
        );
        // The inode is claimed only when everything else allows a FIEMAP.
        let claimed = std::cell::Cell::new(false);
        let _ = may_share(&fs(true), Kind::File, 0, || {
            claimed.set(true);
            true
        });
        assert!(!claimed.get());
        for (i, s) in Skip::ALL.iter().enumerate() {
            assert_eq!(s.index(), i);
        }
    }

    #[test]
    fn ext4_or_tmpfs_cannot_share() {
        let dir = std::env::temp_dir();
        let f = std::fs::File::open(&dir).unwrap();
        let st = rustix::fs::fstat(&f).unwrap();
        let reg = Registry::default();
        let info = reg.lookup(st.st_dev, std::os::fd::AsFd::as_fd(&f));
        if matches!(info.magic, magic::EXT4 | magic::TMPFS) {
            assert!(!info.can_share);
        }
        // The same device maps to the same filesystem.
        assert_eq!(reg.lookup(st.st_dev, std::os::fd::AsFd::as_fd(&f)), info);
    }
}
