//! "May this file share extents?": the one place that decides which files
//! get their extents read, and the registry of filesystems it decides from.
//!
//! The decision is made once per filesystem (statfs `f_type`, plus the
//! reflink feature bit on XFS) and then per file (regular, with blocks, an
//! inode not mapped already). The kernel has no per-file "may share" bit yet
//! (one has been proposed as a statx attribute); when it comes, it slots
//! into `may_share`.
//!
//! A probe that fails never turns into a quiet "cannot share": a filesystem
//! whose type or identity cannot be read is marked `FsInfo::unverified`
//! (its files are counted as exclusive, and their bytes reported as
//! unverified), and the failure is warned about once per filesystem.

use std::collections::HashMap;
use std::io;
use std::os::fd::BorrowedFd;
use std::sync::Mutex;

use crate::figures::Kind;
pub(crate) use sdu_sys::fs::magic;

/// How a filesystem frees shared data, which decides what a reclaim unit
/// is (see `docs/figures.md`, "Reclaimable").
///
/// Public for the browser's unit tests (`src/browse/app/tests.rs`), which
/// build a tree by hand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Granularity {
    /// Sharing is exact per block and a block is freed when its last mapping
    /// goes (XFS, OCFS2): a unit is one segment.
    Block,
    /// A whole on-disk extent is flagged shared, and freed only when its last
    /// reference goes, even if each file maps only part of it (Btrfs): a unit
    /// is a maximal run of *overlapping* ranges.
    ///
    /// Ranges that merely touch (one ends where the next starts) are separate
    /// units: two adjacent Btrfs extents are freed independently. FIEMAP
    /// cannot tell them from two halves of one on-disk extent referenced
    /// by different files, and in that case (a file that still holds the
    /// other half keeps the whole extent allocated) `reclaimable` can
    /// overstate what a deletion frees; joining touching ranges would
    /// instead understate it for the common case of adjacent extents.
    Extent,
}

/// `BTRFS_EMPTY_SUBVOL_DIR_OBJECTID`: the inode of the empty directory a
/// snapshot holds in place of a subvolume nested in its origin.
const BTRFS_EMPTY_SUBVOL_DIR: u64 = 2;

/// What sdu knows about one filesystem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FsInfo {
    /// Index in the registry.
    pub(crate) index: u32,
    /// statfs `f_type` (0 when it could not be read).
    pub(crate) magic: u32,
    /// Can two files on it share physical blocks?
    pub(crate) can_share: bool,
    /// How it frees shared data.
    pub(crate) granularity: Granularity,
    /// Whether it could share data is unknown: the probe failed. Its files
    /// are not mapped, and their bytes count as unverified exclusive bytes.
    pub(crate) unverified: bool,
}

impl FsInfo {
    /// A short name for messages and `--stats`.
    pub(crate) fn name(&self) -> &'static str {
        match self.magic {
            magic::BTRFS => "btrfs",
            magic::XFS => "xfs",
            magic::OCFS2 => "ocfs2",
            magic::BCACHEFS => "bcachefs",
            magic::EXT4 => "ext2/3/4",
            magic::TMPFS => "tmpfs",
            magic::NFS => "nfs",
            magic::CIFS | magic::SMB2 => "cifs/smb",
            0 if self.unverified => "unknown",
            _ => "other",
        }
    }
}

/// Why a file's extents were not read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Skip {
    /// Not a regular file: only regular files have data extents.
    NotRegular,
    /// No allocated blocks (empty, or all inline in the inode).
    NoBlocks,
    /// Its filesystem cannot share blocks (ext4, tmpfs, XFS without
    /// reflink...) or reports no usable physical addresses (CIFS, NFS).
    FsCannotShare,
    /// Another link of the same inode was mapped already.
    SeenInode,
    /// Its filesystem could not be probed ([`FsInfo::unverified`]): counted
    /// as exclusive, and its bytes as unverified.
    Unverified,
}

impl Skip {
    /// All reasons, in the order `--stats` prints them.
    pub(crate) const ALL: [Skip; 5] = [
        Skip::NotRegular,
        Skip::NoBlocks,
        Skip::FsCannotShare,
        Skip::SeenInode,
        Skip::Unverified,
    ];

    /// Position in [`Skip::ALL`].
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// What `--stats` calls it.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Skip::NotRegular => "not a regular file",
            Skip::NoBlocks => "no allocated blocks",
            Skip::FsCannotShare => "filesystem cannot share",
            Skip::SeenInode => "inode already mapped (hardlink)",
            Skip::Unverified => "filesystem could not be probed",
        }
    }
}

/// Decides whether a file may share extents and so needs its extents read.
///
/// `first_link` is asked last, and only when everything else allows it: it
/// claims the inode (false when another link of it has been or is being
/// mapped). This is the single place to consult a future per-file statx
/// "may share" attribute.
pub(crate) fn may_share(
    fs: &FsInfo,
    kind: Kind,
    blocks: u64,
    first_link: impl FnOnce() -> bool,
) -> Result<(), Skip> {
    if kind != Kind::File {
        Err(Skip::NotRegular)
    } else if fs.unverified {
        // A file without blocks has nothing to verify.
        Err(if blocks == 0 {
            Skip::NoBlocks
        } else {
            Skip::Unverified
        })
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

/// What the probing syscalls said about one filesystem, before the
/// registry turns it into an [`FsInfo`]. Kept apart so that the rules for
/// failed probes are tested without a failing filesystem.
#[derive(Debug)]
pub(crate) struct Probe {
    /// statfs `f_type`.
    pub(crate) magic: io::Result<u32>,
    /// XFS only: is reflink enabled? (`None` elsewhere.)
    pub(crate) reflink: Option<io::Result<bool>>,
    /// The filesystem UUID, asked only where data can be shared.
    pub(crate) uuid: Option<io::Result<[u8; 16]>>,
    /// Btrfs only: the subvolume's UUID, the UUID of the subvolume it is a
    /// snapshot of, and when it was made.
    pub(crate) subvol: Option<io::Result<Subvol>>,
    /// Btrfs only: the fd is the empty directory a snapshot holds where
    /// the subvolume it was taken of held another (inode 2,
    /// `BTRFS_EMPTY_SUBVOL_DIR_OBJECTID`): no ioctl of a subvolume works
    /// there, and nothing lies in it.
    pub(crate) placeholder: bool,
}

/// A Btrfs subvolume, as the walk tells copies of one inode apart.
pub(crate) use sdu_sys::btrfs::Subvol;

impl Probe {
    /// Probes the filesystem holding `fd`.
    pub(crate) fn of(fd: BorrowedFd<'_>) -> Probe {
        let magic = sdu_sys::fs::fs_type(fd);
        let reflink = match magic {
            Ok(magic::XFS) => Some(sdu_sys::xfs::reflink_enabled(fd)),
            _ => None,
        };
        let may_share = match magic {
            Ok(magic::BTRFS | magic::BCACHEFS | magic::OCFS2) => true,
            Ok(magic::XFS) => !matches!(reflink, Some(Ok(false))),
            _ => false,
        };
        let uuid = may_share.then(|| sdu_sys::fs::uuid(fd));
        let subvol = matches!(magic, Ok(magic::BTRFS)).then(|| sdu_sys::btrfs::subvol(fd));
        let placeholder = matches!(magic, Ok(magic::BTRFS))
            && rustix::fs::fstat(fd).is_ok_and(|st| st.st_ino == BTRFS_EMPTY_SUBVOL_DIR);
        Probe {
            magic,
            reflink,
            uuid,
            subvol,
            placeholder,
        }
    }
}

/// The filesystems met during a walk, by device number.
///
/// Btrfs subvolumes and snapshots have their own `st_dev` but one physical
/// address space, so devices map to filesystems by UUID; elsewhere the
/// identity is UUID and device together (cloned images share UUIDs).
#[derive(Debug, Default)]
pub(crate) struct Registry {
    inner: Mutex<RegistryInner>,
    /// Some filesystem turned out to have no FIEMAP: until one does,
    /// [`Registry::fiemap_unsupported`], asked before every FIEMAP, takes
    /// no lock.
    any_no_fiemap: std::sync::atomic::AtomicBool,
}

#[derive(Debug, Default)]
struct RegistryInner {
    by_dev: HashMap<u64, FsInfo>,
    by_identity: HashMap<(u32, [u8; 16], u64), u32>,
    all: Vec<FsInfo>,
    /// Per filesystem index: FIEMAP turned out to be unsupported there.
    no_fiemap: Vec<bool>,
    /// Extent spaces: `(filesystem index, namespace)` → a dense key.
    spaces: HashMap<(u32, u32), u32>,
    /// The filesystem index of each extent space.
    space_fs: Vec<u32>,
    /// The namespace of each extent space.
    space_ns: Vec<u32>,
    /// Btrfs subvolumes, by device: their UUID and their origin's.
    subvols: HashMap<u64, Subvol>,
    /// The devices each root namespace entered.
    entered: std::collections::HashSet<(u64, u32)>,
}

impl Registry {
    /// The filesystem of `dev`, probing it through `fd` (any fd on it) the
    /// first time. The second value is a warning to print, once per
    /// filesystem, when a probe failed.
    pub(crate) fn lookup(&self, dev: u64, fd: BorrowedFd<'_>) -> (FsInfo, Option<String>) {
        if let Some(fs) = self.lock().by_dev.get(&dev) {
            return (*fs, None);
        }
        // Probe outside the lock: ioctls can be slow on network filesystems.
        let probe = Probe::of(fd);
        self.insert(dev, probe)
    }

    /// Registers `dev` with what its probe found; see [`Registry::lookup`].
    pub(crate) fn insert(&self, dev: u64, probe: Probe) -> (FsInfo, Option<String>) {
        let mut warning = None;
        let magic = match probe.magic {
            Ok(m) => m,
            Err(e) => {
                warning = Some(format!(
                    "cannot tell the filesystem type ({e}): sharing cannot be verified there"
                ));
                0
            }
        };
        let (mut can_share, granularity) = match magic {
            magic::BTRFS | magic::BCACHEFS => (true, Granularity::Extent),
            magic::OCFS2 => (true, Granularity::Block),
            magic::XFS => match probe.reflink {
                Some(Ok(r)) => (r, Granularity::Block),
                // Unknown: read the extents anyway. FIEMAP flags nothing as
                // shared where reflink is off, so no figure can be wrong.
                Some(Err(e)) => {
                    warning = Some(format!(
                        "cannot tell whether XFS reflink is enabled ({e}): reading extents anyway"
                    ));
                    (true, Granularity::Block)
                }
                None => (false, Granularity::Block),
            },
            _ => (false, Granularity::Block),
        };
        let mut unverified = magic == 0;
        let uuid = match probe.uuid {
            Some(Ok(u)) => Some(u),
            // The empty stand-in for a subvolume inside a snapshot: nothing
            // in it to verify.
            Some(Err(_)) if magic == magic::BTRFS && probe.placeholder => {
                can_share = false;
                None
            }
            // Without its UUID, a Btrfs subvolume's extents cannot be keyed
            // with those of its snapshots: nothing on it can be verified.
            Some(Err(e)) if magic == magic::BTRFS => {
                warning = Some(format!(
                    "cannot read the Btrfs filesystem identity ({e}): sharing cannot be verified there"
                ));
                can_share = false;
                unverified = true;
                None
            }
            // Elsewhere the device is part of the identity anyway.
            _ => None,
        };
        // Btrfs: one address space for all subvolumes, whatever st_dev says.
        let identity = match (magic, uuid) {
            (magic::BTRFS, Some(u)) => (magic, u, 0),
            (_, Some(u)) => (magic, u, dev),
            (_, None) => (magic, [0; 16], dev),
        };
        let mut inner = self.lock();
        if let Some(fs) = inner.by_dev.get(&dev) {
            return (*fs, None);
        }
        if let Some(Ok(ids)) = probe.subvol {
            inner.subvols.insert(dev, ids);
        }
        let next = inner.all.len() as u32;
        let index = *inner.by_identity.entry(identity).or_insert(next);
        let fs = FsInfo {
            index,
            magic,
            can_share,
            granularity,
            unverified,
        };
        if index == next {
            inner.all.push(fs);
            inner.no_fiemap.push(false);
        } else {
            // Another device of a filesystem already probed: warned then.
            warning = None;
        }
        inner.by_dev.insert(dev, fs);
        (fs, warning)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RegistryInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The registry index of the filesystem of `dev`, if the walk met it.
    pub(crate) fn fs_index(&self, dev: u64) -> Option<u32> {
        self.lock().by_dev.get(&dev).map(|f| f.index)
    }

    /// The namespace of each extent space, by space.
    pub(crate) fn space_namespaces(&self) -> Vec<u32> {
        self.lock().space_ns.clone()
    }

    /// The filesystem index of each extent space, by space.
    pub(crate) fn space_filesystems(&self) -> Vec<u32> {
        self.lock().space_fs.clone()
    }

    /// The short name of filesystem `fs` (registry index).
    pub(crate) fn fs_name(&self, fs: u32) -> &'static str {
        self.lock().all.get(fs as usize).map_or("?", FsInfo::name)
    }

    /// All filesystems, by index.
    pub(crate) fn filesystems(&self) -> Vec<FsInfo> {
        self.lock().all.clone()
    }

    /// Has FIEMAP failed as unsupported on filesystem `index`?
    pub(crate) fn fiemap_unsupported(&self, index: u32) -> bool {
        if !self
            .any_no_fiemap
            .load(std::sync::atomic::Ordering::Acquire)
        {
            return false;
        }
        self.lock()
            .no_fiemap
            .get(index as usize)
            .copied()
            .unwrap_or(false)
    }

    /// Records that FIEMAP is unsupported on filesystem `index`; returns
    /// true the first time for that filesystem (to warn once per
    /// filesystem).
    pub(crate) fn set_fiemap_unsupported(&self, index: u32) -> bool {
        let mut inner = self.lock();
        self.any_no_fiemap
            .store(true, std::sync::atomic::Ordering::Release);
        match inner.no_fiemap.get_mut(index as usize) {
            Some(f) => !std::mem::replace(f, true),
            None => false,
        }
    }

    /// The extent space of filesystem `index` as seen from namespace `ns`:
    /// a dense key under which the extent index compares physical
    /// addresses. Two spaces never alias, however many filesystems and
    /// nested roots a scan has.
    pub(crate) fn space(&self, index: u32, ns: u32) -> u32 {
        let mut inner = self.lock();
        let next = inner.space_fs.len() as u32;
        let key = *inner.spaces.entry((index, ns)).or_insert(next);
        if key == next {
            inner.space_fs.push(index);
            inner.space_ns.push(ns);
        }
        key
    }

    /// The Btrfs subvolumes met, by device.
    pub(crate) fn subvolumes(&self) -> Vec<(u64, Subvol)> {
        self.lock().subvols.iter().map(|(&d, &s)| (d, s)).collect()
    }

    /// Records that the walk of namespace `ns` entered device `dev`.
    pub(crate) fn entered(&self, dev: u64, ns: u32) {
        self.lock().entered.insert((dev, ns));
    }

    /// The Btrfs subvolumes the walk of namespace `ns` entered, by device.
    pub(crate) fn subvolumes_in(&self, ns: u32) -> Vec<(u64, Subvol)> {
        let inner = self.lock();
        (inner.subvols.iter())
            .filter(|(d, _)| inner.entered.contains(&(**d, ns)))
            .map(|(&d, &s)| (d, s))
            .collect()
    }

    /// The Btrfs subvolume of device `dev`; `None` when unknown.
    pub(crate) fn subvolume(&self, dev: u64) -> Option<Subvol> {
        self.lock().subvols.get(&dev).copied()
    }

    /// The granularity of the filesystem of extent space `space`.
    pub(crate) fn granularity(&self, space: u32) -> Granularity {
        let inner = self.lock();
        inner
            .space_fs
            .get(space as usize)
            .and_then(|&fs| inner.all.get(fs as usize))
            .map_or(Granularity::Block, |f| f.granularity)
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
            unverified: false,
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
        let unverified = FsInfo {
            unverified: true,
            can_share: false,
            ..fs(false)
        };
        assert_eq!(
            may_share(&unverified, Kind::File, 8, yes),
            Err(Skip::Unverified)
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
        let (info, warning) = reg.lookup(st.st_dev, std::os::fd::AsFd::as_fd(&f));
        assert_eq!(warning, None);
        if matches!(info.magic, magic::EXT4 | magic::TMPFS) {
            assert!(!info.can_share && !info.unverified);
        }
        // The same device maps to the same filesystem.
        assert_eq!(
            reg.lookup(st.st_dev, std::os::fd::AsFd::as_fd(&f)),
            (info, None)
        );
    }

    fn fail() -> io::Error {
        io::Error::from_raw_os_error(5)
    }

    /// Regression: a failed statfs became "type 0, cannot share" with no
    /// word, so shared data was counted as exclusive silently.
    #[test]
    fn failed_statfs_is_unverified_and_warned_once() {
        let reg = Registry::default();
        let probe = || Probe {
            magic: Err(fail()),
            reflink: None,
            uuid: None,
            subvol: None,
            placeholder: false,
        };
        let (info, warning) = reg.insert(1, probe());
        assert!(info.unverified && !info.can_share);
        assert!(warning.unwrap().contains("cannot tell the filesystem type"));
        assert_eq!(
            may_share(&info, Kind::File, 8, || true),
            Err(Skip::Unverified)
        );
        // The same device again: no second warning.
        assert_eq!(reg.insert(1, probe()), (info, None));
        // Another failing filesystem is warned about too.
        assert!(reg.insert(2, probe()).1.is_some());
    }

    /// Regression: a failed XFS_IOC_FSGEOMETRY became "no reflink".
    #[test]
    fn failed_xfs_geometry_still_reads_extents() {
        let reg = Registry::default();
        let (info, warning) = reg.insert(
            1,
            Probe {
                magic: Ok(magic::XFS),
                reflink: Some(Err(fail())),
                uuid: Some(Ok([7; 16])),
                subvol: None,
                placeholder: false,
            },
        );
        assert!(info.can_share && !info.unverified);
        assert!(warning.unwrap().contains("reflink"));
        assert_eq!(may_share(&info, Kind::File, 8, || true), Ok(()));
    }

    /// Regression: a failed filesystem identity keyed a Btrfs subvolume's
    /// extents apart from its snapshots', with no word.
    #[test]
    fn failed_btrfs_identity_is_unverified() {
        let reg = Registry::default();
        let (info, warning) = reg.insert(
            1,
            Probe {
                magic: Ok(magic::BTRFS),
                reflink: None,
                uuid: Some(Err(fail())),
                subvol: None,
                placeholder: false,
            },
        );
        assert!(info.unverified && !info.can_share);
        assert!(warning.unwrap().contains("identity"));
        // Subvolumes with a readable identity join one filesystem, warned
        // about by nobody.
        let ok = |dev| {
            reg.insert(
                dev,
                Probe {
                    magic: Ok(magic::BTRFS),
                    reflink: None,
                    uuid: Some(Ok([9; 16])),
                    subvol: None,
                    placeholder: false,
                },
            )
        };
        let (a, wa) = ok(2);
        let (b, wb) = ok(3);
        assert_eq!((a.index, wa, wb), (b.index, None, None));
    }

    /// Regression: the "no FIEMAP" warning was global, so a second
    /// filesystem without FIEMAP was never warned about.
    #[test]
    fn no_fiemap_is_warned_once_per_filesystem() {
        let reg = Registry::default();
        let nfs = |dev| {
            reg.insert(
                dev,
                Probe {
                    magic: Ok(magic::NFS + dev as u32),
                    reflink: None,
                    uuid: None,
                    subvol: None,
                    placeholder: false,
                },
            )
            .0
        };
        let (a, b) = (nfs(1), nfs(2));
        assert_ne!(a.index, b.index);
        assert!(reg.set_fiemap_unsupported(a.index));
        assert!(!reg.set_fiemap_unsupported(a.index));
        assert!(reg.set_fiemap_unsupported(b.index));
        assert!(reg.fiemap_unsupported(a.index) && reg.fiemap_unsupported(b.index));
    }

    /// Regression: extent keys packed `index & 0xffff | ns << 16` and
    /// aliased past 65,536 filesystems or namespaces.
    #[test]
    fn extent_spaces_never_alias() {
        let reg = Registry::default();
        let a = reg.space(0, 1);
        let b = reg.space(0x1_0000, 0);
        let c = reg.space(0, 0x1_0001);
        assert!(a != b && b != c && a != c);
        assert_eq!(reg.space(0, 1), a);
    }
}
