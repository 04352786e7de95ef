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
//!   fourth field) is `/`, entered as a PATH or as a mount inside one
//!   that the walk did not leave out (`-x`, `--exclude-kernfs`), nor one
//!   it lies on;
//! - no mount inside the scan hides one of its directories (what lies under
//!   a mount point on the filesystem below is not seen);
//! - the walk left out nothing that may hold data ([`Left::uncovers`]: an
//!   exclusion, a cache directory, an entry that could not be read,
//!   anywhere: none is covered). What the walk left out is one record,
//!   [`Left`], made where it skipped, never read from the options.
//!
//! A PATH inside another PATH is walked in a namespace of its own and
//! counted apart: each namespace is covered, and as root verified, as if
//! its roots were scanned alone ([`Coverage::of_namespaces`],
//! [`crate::walk::Left::whole_subvolumes`]).
//!
//! What this cannot see: a Btrfs subvolume deleted but not yet cleaned up
//! still holds its data until the cleaner drops it, and it lies in no
//! directory. `docs/figures.md`, "Exact or a bound", says what follows.

use std::ffi::OsStr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

use rustix::fs::{self as rfs, AtFlags, CWD, OFlags, StatxAttributes, StatxFlags};
use sdu_sys::mountinfo::Mount;

use crate::figures::Bound;
use crate::probe::{Registry, magic};
use crate::records::{Exactness, Inode, NodeId};
use crate::walk::{Left, RootSeen};

/// `BTRFS_FS_TREE_OBJECTID`: the top-level subvolume.
const BTRFS_TOP_LEVEL: u64 = 5;
/// `BTRFS_FIRST_FREE_OBJECTID`: the root directory of every subvolume.
const BTRFS_ROOT_DIR: u64 = 256;

/// The filesystems (by registry index) a scan covers whole.
#[derive(Clone, Debug, Default)]
pub(crate) struct Coverage {
    covered: Vec<bool>,
    /// Per covered filesystem, its root as the scan reached it.
    roots: Vec<Option<Reached>>,
    /// When some PATH lies inside another: per root namespace, the
    /// filesystems its roots cover (`covered` is then their union). A
    /// root counted apart sees only its own namespace's files, so another
    /// root covering the filesystem proves nothing of its units.
    by_ns: Vec<(u32, Vec<bool>)>,
}

/// How the scan reached a covered filesystem's root.
#[derive(Clone, Debug)]
enum Reached {
    /// As a PATH: the fd the walk opened it by.
    Path(Arc<OwnedFd>),
    /// As a mount inside a PATH: its mount point.
    Mount(Vec<u8>),
}

/// What the walk did that bears on coverage.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WalkCoverage<'a> {
    /// The PATHs walked, as given.
    pub(crate) paths: &'a [Vec<u8>],
    /// What the walk saw of each of them, in the same order.
    pub(crate) roots: &'a [Option<RootSeen>],
    /// `-L` or `-H`: a PATH given as a symlink was followed.
    pub(crate) follow: bool,
    /// What the walk left out: the one record of it.
    pub(crate) left: &'a Left,
}

impl Coverage {
    /// Whether filesystem `fs` (registry index) is covered.
    pub(crate) fn covers(&self, fs: u32) -> bool {
        self.covered.get(fs as usize).copied().unwrap_or(false)
    }

    /// Whether filesystem `fs` is covered as the roots of namespace `ns`
    /// see it.
    pub(crate) fn covers_in(&self, fs: u32, ns: u32) -> bool {
        if self.by_ns.is_empty() {
            return self.covers(fs);
        }
        (self.by_ns.iter().find(|c| c.0 == ns))
            .is_some_and(|c| c.1.get(fs as usize).copied().unwrap_or(false))
    }

    /// Per extent space of `registry`: whether it is covered, as the roots
    /// of its namespace see it.
    pub(crate) fn covers_spaces(&self, registry: &Registry) -> Vec<bool> {
        let ns = registry.space_namespaces();
        (registry.space_filesystems().into_iter().zip(ns))
            .map(|(fs, ns)| self.covers_in(fs, crate::extents::inline::root_ns(ns)))
            .collect()
    }

    /// The coverage of a walk, each root namespace apart when some PATH
    /// lies inside another ([`Coverage::of_walk`] for each).
    pub(crate) fn of_namespaces(w: WalkCoverage<'_>, registry: &Registry) -> Coverage {
        let mut all: Vec<u32> = w.roots.iter().flatten().map(|r| r.ns).collect();
        all.sort_unstable();
        all.dedup();
        if all.iter().all(|&ns| ns == 0) {
            return Coverage::of_walk(w, registry);
        }
        let mut whole = Coverage::default();
        for ns in all {
            let roots: Vec<Option<RootSeen>> = (w.roots.iter())
                .map(|r| r.clone().filter(|r| r.ns == ns))
                .collect();
            let c = Coverage::of_walk(WalkCoverage { roots: &roots, ..w }, registry);
            whole.covered.resize(c.covered.len(), false);
            whole.roots.resize(c.roots.len(), None);
            for (fs, (&covered, root)) in c.covered.iter().zip(&c.roots).enumerate() {
                if covered && !whole.covered[fs] {
                    whole.covered[fs] = true;
                    whole.roots[fs] = root.clone();
                }
            }
            whole.by_ns.push((ns, c.covered));
        }
        whole
    }

    /// The coverage of a walk whose filesystems are in `registry`.
    ///
    /// Each PATH is asked about through the fd the walk opened it by, and
    /// where it lies through that fd's path (`/proc/self/fd`), never by the
    /// name given, which another user may have changed since. A directory
    /// PATH the walk kept no fd of, or whose path cannot be told, covers
    /// nothing, and neither does the scan.
    pub(crate) fn of_walk(w: WalkCoverage<'_>, registry: &Registry) -> Coverage {
        let n = registry.filesystems().len();
        let none = Coverage {
            covered: vec![false; n],
            roots: vec![None; n],
            by_ns: Vec::new(),
        };
        if w.left.uncovers() {
            return none;
        }
        let Coverage {
            mut covered,
            mut roots,
            ..
        } = none.clone();
        let mounts = mounts();
        let mut hidden = vec![false; n];
        // A file holds no mount and is no filesystem's root.
        for seen in w.roots.iter().flatten().filter(|r| r.dir) {
            let Some(fd) = &seen.fd else { return none };
            let Some(canon) = path_of(fd.as_fd()) else {
                return none;
            };
            let inside: Vec<&Mount> = mounts
                .iter()
                .filter(|m| strictly_inside(&m.point, &canon))
                .collect();
            if let Some(fs) = root_of_fd(fd.as_fd(), &canon, &mounts, registry) {
                covered[fs as usize] = true;
                roots[fs as usize] = Some(Reached::Path(fd.clone()));
            }
            for m in inside.iter().filter(|m| entered(m, &mounts, w.left)) {
                if let Some(fs) = root_of(&m.point, &mounts, registry) {
                    covered[fs as usize] = true;
                    roots[fs as usize] = Some(Reached::Mount(m.point.clone()));
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
        Coverage {
            covered,
            roots,
            by_ns: Vec::new(),
        }
    }

    /// Whether Btrfs filesystem `fs`, covered, holds no extent referenced
    /// in part, though its files were read as referenced (FIEMAP, without
    /// root): the bytes on disk the scan saw (`seen`: each inode's extents
    /// not flagged shared, and the shared ones once) are the filesystem's
    /// Data Used (`BTRFS_IOC_SPACE_INFO`). An extent referenced in part
    /// holds bytes nobody references, which the scan cannot see: then they
    /// differ. So may they for data written during the scan: not proven
    /// either way. Compressed data read by FIEMAP, which gives its logical
    /// size, leaves `seen` unknown (`u64::MAX`): counted above its size on
    /// disk, it can make up for bytes nobody references, so nothing is
    /// proven where a file has some.
    pub(crate) fn proves_whole_extents(&self, fs: u32, seen: u64) -> bool {
        if seen == u64::MAX {
            return false;
        }
        let Some(Some(root)) = self.roots.get(fs as usize).filter(|_| self.covers(fs)) else {
            return false;
        };
        let used = match root {
            Reached::Path(fd) => sdu_sys::btrfs::data_used(fd.as_fd()),
            Reached::Mount(point) => {
                let Some(fd) = open_mount_point(point) else {
                    return false;
                };
                sdu_sys::btrfs::data_used(fd.as_fd())
            }
        };
        matches!(used, Ok(Some(used)) if used == seen)
    }
}

impl Coverage {
    /// What the roll-up needs to tell exact figures from bounds: a unit in
    /// an extent space of a filesystem the scan does not cover, and that
    /// root did not `verified`, may be held from outside it
    /// ([`Bound::AT_MOST`]); one of a Btrfs filesystem whose files were
    /// read as referenced (`partial`) may be part of an extent whose other
    /// parts nothing references ([`Bound::AT_LEAST`]) or other files hold
    /// apart from it ([`Bound::AT_MOST`]), unless that filesystem is
    /// `proven` to hold no extent referenced in part. The walk's `marks`
    /// stand, but those of files read as referenced only unless every
    /// `partial` filesystem is proven.
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
        // Each asked once: the proof reads the filesystem's usage.
        let unproven: Vec<u32> = partial.iter().copied().filter(|&fs| !proven(fs)).collect();
        let spaces = (self.covers_spaces(registry).into_iter().enumerate())
            .map(|(space, covered)| {
                if space_fs.get(space).is_some_and(|fs| unproven.contains(fs)) {
                    Bound::AT_LEAST.with(Bound::AT_MOST)
                } else if covered || verified.get(space).copied().unwrap_or(false) {
                    Bound::EXACT
                } else {
                    Bound::AT_MOST
                }
            })
            .collect();
        let keep_partial = partial.is_empty() || !unproven.is_empty();
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
            ..Exactness::default()
        }
    }
}

/// Without root on Btrfs (`partial`: by extent space, its files read as
/// referenced): the files mapping a unit the sweep cannot free, marked at
/// least. FIEMAP flags an extent shared as soon as two references hold
/// it, and shows each only its part: a unit seen once in the scan (or
/// only as overlapping ranges of one file) is held by another reference
/// outside the scan, or by one inside it to another part of the same
/// extent (the same file's, or another file's, that does not overlap it),
/// which deleting both frees. Not a unit of a compressed extent seen once:
/// every reference to one gives its start, so the unit holds all those the
/// scan saw, and the other is outside it. A unit that can be freed is
/// marked where it is credited (its space's bound). A unit `in_run`
/// (touching another on disk, where the Data Used proof holds) keeps its
/// mark through the proof: the unit it touches may be the rest of its
/// extent, which deleting both frees.
pub(crate) fn mark_unfreed_units(
    sweep: &crate::extents::Sweep,
    (files, copies): (&crate::records::Files, &crate::records::Copies),
    (partial, in_run): (&[bool], &dyn Fn(usize) -> bool),
    marks: &mut WalkMarks,
) {
    let before = marks.inodes.len();
    let nodes_before = marks.nodes.len();
    for (space, range, encoded) in sweep.fs_units_encoded() {
        if !partial.get(space as usize).copied().unwrap_or(false) {
            continue;
        }
        for i in range {
            let u = sweep.unit(i);
            // A copy stands for a file of its own mapping what its file maps.
            let n_copies = u
                .files
                .iter()
                .map(|&f| copies.count(f))
                .fold(0, u32::saturating_add);
            let freeable = crate::figures::unit_freeable(
                u.mappings.saturating_add(n_copies),
                u.ranges,
                u.files.len() + n_copies as usize,
                true,
            );
            if freeable || (i >= encoded && u.mappings.saturating_add(n_copies) <= 1) {
                continue;
            }
            let run = in_run(i);
            let to = |marks: &mut WalkMarks, node| {
                let m = (node, Bound::AT_LEAST);
                if run {
                    marks.nodes.push(m)
                } else {
                    marks.partial.push(m)
                }
            };
            for &f in u.files {
                let Some(r) = files.get(f as usize) else {
                    continue;
                };
                if r.linked {
                    marks.inodes.push((r.inode(), Bound::AT_LEAST, !run));
                } else {
                    to(marks, r.node);
                }
                for (node, _) in copies.of(f) {
                    to(marks, node);
                }
            }
        }
    }
    if marks.inodes.len() > before {
        marks.inodes.sort_by_key(|m| m.0);
    }
    if marks.nodes.len() > nodes_before {
        crate::records::merge_bounds(&mut marks.nodes);
    }
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

/// An open fd on each filesystem (registry index) a PATH of the walk lies
/// on, for the ioctls that ask a filesystem about itself.
///
/// A directory, or a regular file, is asked through the fd the walk
/// opened it by. A regular file the walk kept no fd of is found again by
/// its name only as an `O_PATH` fd, which opens nothing (no FIFO waits for
/// a writer, no device is opened), kept only if it is the inode the walk
/// stat-ed and still a regular file, and only then opened, through
/// `/proc/self/fd`. Anything else, or a file replaced
/// since, gives no fd: its filesystem is then not asked, and its figures
/// stay bounds.
pub(crate) fn open_filesystems(w: &WalkCoverage<'_>, registry: &Registry) -> Vec<(u32, OwnedFd)> {
    let mut out: Vec<(u32, OwnedFd)> = Vec::new();
    for (path, seen) in w.paths.iter().zip(w.roots) {
        let Some(seen) = seen else { continue };
        let Some(fs) = registry.fs_index(seen.dev) else {
            continue;
        };
        if out.iter().any(|o| o.0 == fs) {
            continue;
        }
        let fd = match &seen.fd {
            Some(fd) => rustix::io::fcntl_dupfd_cloexec(fd, 0).ok(),
            None if !seen.dir => reopen_file(path, seen, w.follow),
            None => None,
        };
        if let Some(fd) = fd {
            out.push((fs, fd));
        }
    }
    out
}

/// The regular file the walk stat-ed as PATH `path`, opened read-only
/// through an `O_PATH` fd checked against it (see [`open_filesystems`]).
fn reopen_file(path: &[u8], seen: &RootSeen, follow: bool) -> Option<OwnedFd> {
    let c = std::ffi::CString::new(path).ok()?;
    let mut flags = OFlags::PATH | OFlags::CLOEXEC;
    if !follow {
        flags |= OFlags::NOFOLLOW;
    }
    let pinned = rfs::open(&c, flags, rfs::Mode::empty()).ok()?;
    let st = rfs::fstat(&pinned).ok()?;
    let regular = rfs::FileType::from_raw_mode(st.st_mode) == rfs::FileType::RegularFile;
    if !regular || st.st_dev != seen.dev || st.st_ino != seen.ino {
        return None;
    }
    rfs::open(
        format!("/proc/self/fd/{}", pinned.as_raw_fd()),
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK,
        rfs::Mode::empty(),
    )
    .ok()
}

/// Where the open directory `fd` lies now (`/proc/self/fd`): `None` when
/// that cannot be told (no /proc, or the directory was removed).
fn path_of(fd: BorrowedFd<'_>) -> Option<Vec<u8>> {
    let link = rfs::readlink(format!("/proc/self/fd/{}", fd.as_raw_fd()), Vec::new()).ok()?;
    let path = link.into_bytes();
    (path.starts_with(b"/") && !path.ends_with(b" (deleted)")).then_some(path)
}

/// A mount point, opened as a directory, not through a symlink at its end.
fn open_mount_point(point: &[u8]) -> Option<OwnedFd> {
    let c = std::ffi::CString::new(point).ok()?;
    rfs::open(
        &c,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        rfs::Mode::empty(),
    )
    .ok()
}

/// Whether the walk may have entered mount `m`: no mount at its mount
/// point, nor at that of a mount it lies on, was left out
/// ([`Left::not_entered`]: `-x`, `--exclude-kernfs`). By mount point, not
/// by id alone: a mount over another hides it, and what is opened at
/// that point is the mount on top, which the walk met.
fn entered(m: &Mount, mounts: &[Mount], left: &Left) -> bool {
    let mut at = Some(m);
    // Each mount once at most: a malformed table cannot loop.
    for _ in 0..=mounts.len() {
        let Some(c) = at else { return true };
        if mounts
            .iter()
            .any(|o| o.point == c.point && left.not_entered(o.id))
        {
            return false;
        }
        at = mounts.iter().find(|p| p.id == c.parent && p.id != c.id);
    }
    true
}

/// The mounts of this process's namespace; none when mountinfo cannot be
/// read (then no mount is known to be a filesystem's root).
fn mounts() -> Vec<Mount> {
    sdu_sys::mountinfo::read().unwrap_or_default()
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
    let st = rfs::statx(CWD, &c, AtFlags::SYMLINK_NOFOLLOW, StatxFlags::BASIC_STATS).ok()?;
    registry.fs_index(rfs::makedev(st.stx_dev_major, st.stx_dev_minor))
}

/// The registry index of the filesystem whose root the mount point
/// `point` (resolved) is, if it is one and the walk met that filesystem.
fn root_of(point: &[u8], mounts: &[Mount], registry: &Registry) -> Option<u32> {
    let fd = open_mount_point(point)?;
    root_of_fd(fd.as_fd(), point, mounts, registry)
}

/// The registry index of the filesystem whose root the open directory
/// `fd`, at `path` (resolved), is, if it is one and the walk met that
/// filesystem.
fn root_of_fd(
    fd: BorrowedFd<'_>,
    path: &[u8],
    mounts: &[Mount],
    registry: &Registry,
) -> Option<u32> {
    let st = rfs::statx(
        fd,
        c"",
        AtFlags::EMPTY_PATH,
        StatxFlags::BASIC_STATS | StatxFlags::MNT_ID,
    )
    .ok()?;
    let dev = rfs::makedev(st.stx_dev_major, st.stx_dev_minor);
    let fs = registry.fs_index(dev)?;
    let info = registry.filesystems().get(fs as usize).copied()?;
    let is_root = if info.magic == magic::BTRFS {
        // The top-level subvolume's root directory, whatever is mounted.
        st.stx_ino == BTRFS_ROOT_DIR
            && sdu_sys::btrfs::subvol(fd).is_ok_and(|s| s.id == BTRFS_TOP_LEVEL)
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

    /// A mount left out, one under it, one over it at the same point, and
    /// one elsewhere: only the last may have been entered.
    #[test]
    fn a_mount_left_out_hides_those_under_and_over_it() {
        let m = |id, parent, point: &str| Mount {
            id,
            parent,
            root: b"/".to_vec(),
            point: point.as_bytes().to_vec(),
            ..Mount::default()
        };
        let mounts = [
            m(1, 0, "/"),
            m(2, 1, "/s"),
            m(3, 2, "/s/k"),
            m(4, 1, "/s"),
            m(5, 1, "/o"),
        ];
        let left = Left {
            mounts: vec![2],
            ..Left::default()
        };
        let entered: Vec<u64> = mounts
            .iter()
            .filter(|x| entered(x, &mounts, &left))
            .map(|x| x.id)
            .collect();
        assert_eq!(entered, [1, 5]);
    }

    #[test]
    fn mountinfo_parses() {
        let m = mounts();
        assert!(m.iter().any(|m| m.point == b"/"), "{m:?}");
    }
}
