//! Which filesystems a scan covers whole: every reference to their data
//! lies in the scan, so that a unit whose references all lie under a
//! directory is freed with it, a fact and not a bound.
//!
//! Sharing is seen only between files the scan reads. A snapshot, a
//! reflink copy or a hard link outside the scan holds data as surely as
//! one inside, and the scan cannot see it. A filesystem is covered when:
//!
//! - the scan enters it at its root: on Btrfs the root directory of the
//!   top-level subvolume (id 5, inode 256), under which every subvolume
//!   lies; elsewhere a mount of it whose root (`/proc/self/mountinfo`'s
//!   fourth field) is `/`, entered as a PATH or, without `-x`, as a mount
//!   inside one;
//! - no mount inside the scan hides one of its directories (what lies under
//!   a mount point on the filesystem below is not seen);
//! - nothing was excluded (`--exclude`, `-X`), and every entry could be
//!   read (an error anywhere in the walk: none is covered).
//!
//! What this cannot see: a Btrfs subvolume deleted but not yet cleaned up
//! still holds its data until the cleaner drops it, and it lies in no
//! directory. `docs/design.md`, "Exact or a bound", says what follows.

use std::ffi::OsStr;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

use rustix::fs::{self as rfs, AtFlags, CWD, OFlags, StatxAttributes, StatxFlags};

use crate::figures::Bound;
use crate::probe::{Registry, ioctl, magic};
use crate::records::NodeId;
use crate::tree::Exactness;
use crate::tree::bounds::Inode;

/// `BTRFS_FS_TREE_OBJECTID`: the top-level subvolume.
const BTRFS_TOP_LEVEL: u64 = 5;
/// `BTRFS_FIRST_FREE_OBJECTID`: the root directory of every subvolume.
const BTRFS_ROOT_DIR: u64 = 256;

/// The filesystems (by registry index) a scan covers whole.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Coverage {
    covered: Vec<bool>,
    /// Per covered filesystem, its root as the scan reached it.
    roots: Vec<Option<Vec<u8>>>,
}

/// What the walk did that bears on coverage.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Walked<'a> {
    /// The PATHs walked, as given.
    pub(crate) roots: &'a [Vec<u8>],
    /// `-x`: mounts inside the roots were not entered.
    pub(crate) one_file_system: bool,
    /// Something was excluded.
    pub(crate) excluded: bool,
    /// Some entry could not be read.
    pub(crate) errors: bool,
}

impl Coverage {
    /// Whether filesystem `fs` (registry index) is covered.
    pub(crate) fn covers(&self, fs: u32) -> bool {
        self.covered.get(fs as usize).copied().unwrap_or(false)
    }

    /// The coverage of a walk whose filesystems are in `registry`.
    pub(crate) fn of_walk(w: Walked<'_>, registry: &Registry) -> Coverage {
        let n = registry.filesystems().len();
        let mut covered = vec![false; n];
        let mut roots = vec![None; n];
        if w.excluded || w.errors {
            return Coverage { covered, roots };
        }
        let mounts = mounts();
        let mut hidden = vec![false; n];
        for root in w.roots {
            let Ok(canon) = std::fs::canonicalize(OsStr::from_bytes(root)) else {
                continue;
            };
            let canon = canon.into_os_string().into_vec();
            let inside: Vec<&Mount> = mounts
                .iter()
                .filter(|m| strictly_inside(&m.point, &canon))
                .collect();
            let mut entries = vec![canon.as_slice()];
            if !w.one_file_system {
                entries.extend(inside.iter().map(|m| m.point.as_slice()));
            }
            for e in entries {
                if let Some(fs) = root_of(e, &mounts, registry) {
                    covered[fs as usize] = true;
                    roots[fs as usize] = Some(e.to_vec());
                }
            }
            // What lies under a mount point on the filesystem below it.
            for m in inside {
                let parent = Path::new(OsStr::from_bytes(&m.point)).parent();
                if let Some(fs) = parent.and_then(|p| fs_of(p.as_os_str().as_bytes(), registry)) {
                    hidden[fs as usize] = true;
                }
            }
        }
        for (c, h) in covered.iter_mut().zip(hidden) {
            *c &= !h;
        }
        Coverage { covered, roots }
    }

    /// Whether Btrfs filesystem `fs`, covered, holds no extent referenced
    /// in part, though its files were read as referenced (FIEMAP, without
    /// root): the bytes on disk the scan saw (`seen`: each inode's extents
    /// not flagged shared, and the shared ones once) are the filesystem's
    /// Data Used (`BTRFS_IOC_SPACE_INFO`). An extent referenced in part
    /// holds bytes nobody references, which the scan cannot see: then they
    /// differ. So do they for data written during the scan, or compressed
    /// (FIEMAP gives its logical size): not proven either way.
    pub(crate) fn proves_whole_extents(&self, fs: u32, seen: u64) -> bool {
        let Some(Some(root)) = self.roots.get(fs as usize).filter(|_| self.covers(fs)) else {
            return false;
        };
        let Ok(c) = std::ffi::CString::new(root.as_slice()) else {
            return false;
        };
        let Ok(fd) = rfs::open(
            &c,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            rfs::Mode::empty(),
        ) else {
            return false;
        };
        matches!(ioctl::btrfs_data_used(fd.as_fd()), Ok(Some(used)) if used == seen)
    }
}

impl Coverage {
    /// What the roll-up needs to tell exact figures from bounds: a unit in
    /// an extent space of a filesystem the scan does not cover, and that
    /// root did not `verified`, may be held from outside it
    /// ([`Bound::AT_MOST`]); the walk's `marks` stand, but those of files
    /// read as referenced on Btrfs filesystems `partial` only unless every
    /// one of those filesystems is `proven` to hold no extent referenced in
    /// part.
    pub(crate) fn exactness(
        &self,
        registry: &Registry,
        marks: WalkMarks,
        (partial, verified): (&[u32], &[bool]),
        proven: impl Fn(u32) -> bool,
    ) -> Exactness {
        let WalkMarks {
            mut nodes,
            partial: partial_marks,
            inodes: inode_marks,
        } = marks;
        let space_fs = registry.space_filesystems();
        let spaces = space_fs
            .iter()
            .copied()
            .enumerate()
            .map(|(space, fs)| {
                if self.covers(fs) || verified.get(space).copied().unwrap_or(false) {
                    Bound::EXACT
                } else {
                    Bound::AT_MOST
                }
            })
            .collect();
        let keep_partial = partial.is_empty() || !partial.iter().all(|&fs| proven(fs));
        if keep_partial {
            nodes.extend(partial_marks);
            crate::records::merge_bounds(&mut nodes);
        }
        // Sorted by inode: each inode's marks joined.
        let mut inodes: Vec<(Inode, Bound)> = Vec::new();
        for (i, b, from_partial) in inode_marks {
            if from_partial && !keep_partial {
                continue;
            }
            match inodes.last_mut() {
                Some(last) if last.0 == i => last.1 = last.1.with(b),
                _ => inodes.push((i, b)),
            }
        }
        Exactness {
            spaces,
            other: Bound::AT_MOST,
            nodes,
            inodes,
        }
    }
}

/// The Btrfs subvolumes (by id) the scan holds whole: every subvolume it
/// met, entered at its root directory (a PATH inside a subvolume holds
/// only part of it), when nothing was excluded and every entry was read.
pub(crate) fn whole_subvolumes(
    w: &Walked<'_>,
    registry: &Registry,
) -> std::collections::HashSet<u64> {
    if w.excluded || w.errors {
        return Default::default();
    }
    let subvols = registry.subvolumes();
    let mut held: std::collections::HashSet<u64> = subvols.iter().map(|s| s.1.id).collect();
    for root in w.roots {
        let Ok(c) = std::ffi::CString::new(root.as_slice()) else {
            continue;
        };
        let Ok(st) = rfs::statx(CWD, &c, AtFlags::empty(), StatxFlags::BASIC_STATS) else {
            continue;
        };
        let dev = rfs::makedev(st.stx_dev_major, st.stx_dev_minor);
        if st.stx_ino != BTRFS_ROOT_DIR {
            if let Some(s) = subvols.iter().find(|s| s.0 == dev) {
                held.remove(&s.1.id);
            }
        }
    }
    held
}

/// The walk's marks: on nodes, on nodes for files read as referenced on
/// Btrfs, and on inodes counted through their links (with whether they
/// come from extents read as referenced).
#[derive(Debug, Default)]
pub(crate) struct WalkMarks {
    pub(crate) nodes: Vec<(NodeId, Bound)>,
    pub(crate) partial: Vec<(NodeId, Bound)>,
    pub(crate) inodes: Vec<(Inode, Bound, bool)>,
}

/// An open fd on each filesystem (registry index) a PATH of `roots` lies
/// on, for the ioctls that ask a filesystem about itself.
pub(crate) fn open_filesystems(roots: &[Vec<u8>], registry: &Registry) -> Vec<(u32, OwnedFd)> {
    let mut out: Vec<(u32, OwnedFd)> = Vec::new();
    for root in roots {
        let Ok(c) = std::ffi::CString::new(root.as_slice()) else {
            continue;
        };
        let Ok(fd) = rfs::open(
            &c,
            OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY,
            rfs::Mode::empty(),
        ) else {
            continue;
        };
        let Ok(st) = rfs::fstat(&fd) else { continue };
        if let Some(fs) = registry.fs_index(st.st_dev) {
            if !out.iter().any(|o| o.0 == fs) {
                out.push((fs, fd));
            }
        }
    }
    out
}

/// One line of `/proc/self/mountinfo`: the mount's id, its root within its
/// filesystem and its mount point.
#[derive(Debug)]
struct Mount {
    id: u64,
    root: Vec<u8>,
    point: Vec<u8>,
}

/// The mounts of this process's namespace; none when mountinfo cannot be
/// read (then no mount is known to be a filesystem's root).
fn mounts() -> Vec<Mount> {
    let Ok(info) = std::fs::read("/proc/self/mountinfo") else {
        return Vec::new();
    };
    info.split(|&b| b == b'\n')
        .filter_map(|l| {
            let mut f = l.split(|&b| b == b' ');
            let id = std::str::from_utf8(f.next()?).ok()?.parse().ok()?;
            let root = crate::walk::unescape_mountinfo(f.nth(2)?);
            let point = crate::walk::unescape_mountinfo(f.next()?);
            Some(Mount { id, root, point })
        })
        .collect()
}

/// Whether `p` lies strictly inside the directory `dir` (absolute paths,
/// resolved).
fn strictly_inside(p: &[u8], dir: &[u8]) -> bool {
    let rest = if dir == b"/" {
        p.strip_prefix(b"/")
    } else {
        p.strip_prefix(dir).and_then(|r| r.strip_prefix(b"/"))
    };
    rest.is_some_and(|r| !r.is_empty())
}

/// The registry index of the filesystem of `path`, if the walk met it.
fn fs_of(path: &[u8], registry: &Registry) -> Option<u32> {
    let c = std::ffi::CString::new(path).ok()?;
    let st = rfs::statx(CWD, &c, AtFlags::empty(), StatxFlags::BASIC_STATS).ok()?;
    registry.fs_index(rfs::makedev(st.stx_dev_major, st.stx_dev_minor))
}

/// The registry index of the filesystem whose root `path` (resolved) is,
/// if it is one and the walk met that filesystem.
fn root_of(path: &[u8], mounts: &[Mount], registry: &Registry) -> Option<u32> {
    let c = std::ffi::CString::new(path).ok()?;
    let st = rfs::statx(
        CWD,
        &c,
        AtFlags::empty(),
        StatxFlags::BASIC_STATS | StatxFlags::MNT_ID,
    )
    .ok()?;
    let dev = rfs::makedev(st.stx_dev_major, st.stx_dev_minor);
    let fs = registry.fs_index(dev)?;
    let info = registry.filesystems().get(fs as usize).copied()?;
    let is_root = if info.magic == magic::BTRFS {
        // The top-level subvolume's root directory, whatever is mounted.
        let fd = rfs::open(
            &c,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            rfs::Mode::empty(),
        )
        .ok()?;
        st.stx_ino == BTRFS_ROOT_DIR
            && ioctl::btrfs_subvol(fd.as_fd()).is_ok_and(|s| s.id == BTRFS_TOP_LEVEL)
    } else {
        let mount_root = st.stx_attributes_mask.contains(StatxAttributes::MOUNT_ROOT)
            && st.stx_attributes.contains(StatxAttributes::MOUNT_ROOT);
        mount_root
            && mounts
                .iter()
                .any(|m| m.id == st.stx_mnt_id && m.root == b"/" && m.point == path)
    };
    is_root.then_some(fs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inside_is_strict() {
        assert!(strictly_inside(b"/mnt/a", b"/mnt"));
        assert!(strictly_inside(b"/mnt", b"/"));
        assert!(!strictly_inside(b"/mnt", b"/mnt"));
        assert!(!strictly_inside(b"/mntx", b"/mnt"));
        assert!(!strictly_inside(b"/", b"/"));
    }

    #[test]
    fn mountinfo_parses() {
        let m = mounts();
        assert!(m.iter().any(|m| m.point == b"/"), "{m:?}");
    }
}
