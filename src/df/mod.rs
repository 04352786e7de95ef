//! `sdu --df`: for the filesystem holding each PATH, a table whose rows add
//! up to df's Used (`docs/df.md` explains each row and what to do about
//! it).
//!
//! The filesystem is found through the fd a PATH was resolved by: its
//! mount (`stx_mnt_id` in `/proc/self/mountinfo`), whose root is reached
//! by climbing `..` from the PATH until `statx` says `MOUNT_ROOT`. That
//! root is scanned with `-x` (no other mount entered; Btrfs subvolumes
//! below it are walked, as they are not mounts), with extra roots handed
//! to the walk as fds, and then keeping what sets of entries free
//! ([`crate::Scanning`]'s `sets`): the subvolumes the mount does not reach
//! (`outside_subvolumes`) and the directories other mounts cover
//! (`under_mounts`). Each byte the scan saw then lands in one row:
//!
//! - `files`: the mount root's Exclusive + Shared (shared data once); as
//!   root on Btrfs, less its unreachable bytes (their own row), plus what
//!   compression saved (so that it counts data at its uncompressed size,
//!   as du does), less the file data held inline (in the metadata, which
//!   the `metadata` row counts);
//! - `under_mounts`: what deleting every covered directory frees;
//! - `outside_subvolumes`: what deleting the outside subvolumes and the
//!   covered directories frees, less `under_mounts`: what they hold that
//!   the mount's files do not;
//! - `unreachable`: the bookend bytes under the mount root (as root on
//!   Btrfs), with the files they are credited to;
//! - `compression`: minus the bytes compression saved (as root on Btrfs).
//!
//! The other rows come from their own modules: `deleted_open`,
//! `deleted_subvolumes`, `metadata` and df's Used. `unexplained` is Used
//! less every other row, with the direction in which it may be wrong when
//! some row is not exact (`rows::unexplained`).

mod deleted_subvolumes;
mod open_deleted;
mod outside;
mod rows;
mod space;
mod under_mounts;

pub(crate) use crate::extents::stored::Stored;

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use rustix::fs::{self as rfs, AtFlags, CWD, Mode, OFlags, StatxAttributes, StatxFlags};
use sdu_sys::mountinfo::Mount;

use crate::extents::stored::StoredSums;
use crate::figures::Bound;
use crate::messages::Messages;
use crate::probe::magic;
use crate::records::NodeId;
use crate::scan::Scanned;
use crate::walk::WalkOptions;
use outside::{OutsideSubvols, outside_subvolumes};
use space::space;
use under_mounts::{UnderMounts, under_mounts};

/// How far a row's bytes are the filesystem's truth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum How {
    /// Measured.
    Exact,
    /// A bound: the truth may be less (`at_most`) or more (`at_least`).
    Bound(Bound),
    /// Neither measured nor bounded.
    Estimate,
    /// Not seen without root: the bytes say 0, the truth may be more.
    NotSeen,
    /// No such thing on this filesystem: 0, exact.
    NoSuch,
}

impl How {
    /// Whether the bytes are the truth.
    pub(crate) fn is_exact(self) -> bool {
        matches!(self, How::Exact | How::NoSuch)
    }

    /// The word the table and `--json` give it.
    pub(crate) fn word(self) -> &'static str {
        match self {
            How::Exact => "exact",
            How::Bound(b) => match (b.at_most(), b.at_least()) {
                (true, false) => "at most",
                (false, true) => "at least",
                _ => "about",
            },
            How::Estimate => "estimate",
            How::NotSeen => "not seen",
            How::NoSuch => "none",
        }
    }

    /// The direction in which `unexplained` may be wrong when this row is
    /// subtracted from Used: the other way from the row's.
    fn subtracted(self) -> Bound {
        match self {
            How::Exact | How::NoSuch => Bound::EXACT,
            How::Bound(b) => b.reversed(),
            How::Estimate => Bound::UNKNOWN,
            // The truth is 0 or more: what is left is that much less.
            How::NotSeen => Bound::AT_MOST,
        }
    }
}

/// Something a row holds: a file, a subvolume, a process, a mount point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Item {
    /// Its name or path.
    pub(crate) name: Vec<u8>,
    /// Its bytes in the row.
    pub(crate) bytes: u64,
    /// What else to say of it (where it is mounted, what covers it).
    pub(crate) note: String,
}

/// One row of the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Row {
    /// Its name: `files`, `outside_subvolumes`, … (`docs/df.md`).
    pub(crate) row: &'static str,
    /// Its bytes (negative for `compression`: the bytes saved).
    pub(crate) bytes: i64,
    /// Whether that is exact.
    pub(crate) how: How,
    /// Why it is not exact, or what root would add; empty when exact.
    pub(crate) why: String,
    /// What it holds, largest first.
    pub(crate) items: Vec<Item>,
}

/// The table of one filesystem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Table {
    /// The mount point scanned.
    pub(crate) mount: Vec<u8>,
    /// What it is mounted from.
    pub(crate) source: Vec<u8>,
    /// Its filesystem type.
    pub(crate) fs_type: Vec<u8>,
    /// df's Size and Used.
    pub(crate) size: u64,
    pub(crate) used: u64,
    /// `du -sx` of the mount point: its Total.
    pub(crate) du: u64,
    /// The PATHs given on this filesystem.
    pub(crate) paths: Vec<Vec<u8>>,
    /// The rows, in the order of `docs/df.md`; they add up to `used`.
    pub(crate) rows: Vec<Row>,
}

/// A filesystem some PATH lies on, by the mount the first such PATH lies
/// on.
pub(crate) struct Filesystem {
    /// The PATHs on it, as given.
    pub(crate) paths: Vec<Vec<u8>>,
    mount: Mount,
    mounts: Vec<Mount>,
    /// The mount's root, open for reading.
    root: Arc<OwnedFd>,
    btrfs: bool,
}

/// The filesystems of `paths`, each once, in the order of the first PATH
/// on each. A PATH that cannot be resolved is said on `msgs`.
pub(crate) fn filesystems(paths: &[Vec<u8>], msgs: &Messages) -> Vec<Filesystem> {
    let mounts = sdu_sys::mountinfo::read().unwrap_or_default();
    let mut found: Vec<Filesystem> = Vec::new();
    for p in paths {
        let root = match mount_root(p) {
            Ok(r) => r,
            Err(errno) => {
                msgs.report(crate::Diagnostic::CannotAccess {
                    path: p.clone(),
                    errno,
                });
                continue;
            }
        };
        let id = rfs::statx(&root, c"", AtFlags::EMPTY_PATH, StatxFlags::MNT_ID)
            .map(|st| st.stx_mnt_id)
            .ok();
        let Some(mount) = mounts.iter().find(|m| Some(m.id) == id) else {
            msgs.report(crate::Diagnostic::CannotAccess {
                path: p.clone(),
                errno: rustix::io::Errno::NOENT,
            });
            continue;
        };
        if let Some(fs) = found.iter_mut().find(|f| f.mount.dev == mount.dev) {
            fs.paths.push(p.clone());
            continue;
        }
        let btrfs = sdu_sys::fs::fs_type(root.as_fd()).ok() == Some(magic::BTRFS);
        found.push(Filesystem {
            paths: vec![p.clone()],
            mount: mount.clone(),
            mounts: mounts.clone(),
            root: Arc::new(root),
            btrfs,
        });
    }
    found
}

/// The root of the mount `path` lies on, open for reading: `path` opened
/// once (through symlinks, as df follows them), then `..` climbed until
/// `statx` says the directory is its mount's root.
fn mount_root(path: &[u8]) -> Result<OwnedFd, rustix::io::Errno> {
    let c = std::ffi::CString::new(path).map_err(|_| rustix::io::Errno::INVAL)?;
    let fd = rfs::openat(CWD, &c, OFlags::PATH | OFlags::CLOEXEC, Mode::empty())?;
    let mut dir = fd;
    let st = rfs::statx(&dir, c"", AtFlags::EMPTY_PATH, StatxFlags::TYPE)?;
    if u32::from(st.stx_mode) & 0o170000 != 0o040000 {
        // A file: the directory holding it, by the name given less its
        // last component.
        let parent = match path.iter().rposition(|&b| b == b'/') {
            Some(0) => b"/".to_vec(),
            Some(i) => path[..i].to_vec(),
            None => b".".to_vec(),
        };
        let c = std::ffi::CString::new(parent).map_err(|_| rustix::io::Errno::INVAL)?;
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        dir = rfs::openat(CWD, &c, flags, Mode::empty())?;
    }
    for _ in 0..4096 {
        let st = rfs::statx(&dir, c"", AtFlags::EMPTY_PATH, StatxFlags::BASIC_STATS)?;
        let known = st.stx_attributes_mask.contains(StatxAttributes::MOUNT_ROOT);
        if !known || st.stx_attributes.contains(StatxAttributes::MOUNT_ROOT) {
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
            return rfs::openat(&dir, c".", flags, Mode::empty());
        }
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        dir = rfs::openat(&dir, c"..", flags, Mode::empty())?;
    }
    Err(rustix::io::Errno::LOOP)
}

/// What the scan of a filesystem walks besides its mount's root.
pub(crate) struct Extra {
    under: UnderMounts,
    outside: OutsideSubvols,
    /// The root names given to the covered directories walked, in order.
    under_names: Vec<Vec<u8>>,
    /// On Btrfs: what the walk sums of how the data of the subvolumes the
    /// mount reaches is stored; an error where it cannot (without root,
    /// or with `--fiemap`: no tree search).
    stored: Option<std::io::Result<Arc<StoredSums>>>,
}

/// The name a covered directory is walked by: `<UNDER>` and its mount
/// point.
fn under_name(point: &[u8]) -> Vec<u8> {
    let mut n = b"<UNDER>".to_vec();
    n.extend_from_slice(point);
    n
}

/// The walk of `fs`: its mount's root with `-x`, then the subvolumes the
/// mount does not reach and the directories other mounts cover (those
/// reached: as root), each given as an fd; `base` gives the rest.
pub(crate) fn walk_of(fs: &Filesystem, base: &WalkOptions) -> (WalkOptions, Extra) {
    let under = under_mounts(fs.root.as_fd(), &fs.mount, &fs.mounts);
    let outside = if fs.btrfs {
        outside_subvolumes(fs.root.as_fd(), &fs.mount, &fs.mounts)
    } else {
        OutsideSubvols {
            roots: Vec::new(),
            mounted_at: Vec::new(),
            missed: Some(0),
            holding: Vec::new(),
        }
    };
    // The mount's root is a PATH resolved (`path_fds`), not a root given
    // by fd alone: the walk then knows where it lies, and which of its
    // directories other mounts cover (`-x` stops there, the Btrfs tree
    // search included).
    let mut walk = WalkOptions {
        roots: vec![fs.mount.point.clone()],
        root_fds: vec![None],
        one_file_system: true,
        // A file holding bookends is a node of its own: the unreachable
        // bytes are credited to it. Every file a node (`-a`) would cost
        // half as much memory again.
        bookend_files: true,
        subvolumes: false,
        identities: false,
        ..base.clone()
    };
    let stored = stored_of(fs, base.fiemap_only);
    walk.stored = stored.as_ref().and_then(|s| s.as_ref().ok()).cloned();
    for (name, fd) in &outside.roots {
        walk.roots.push(name.clone());
        walk.root_fds.push(Some(fd.clone()));
    }
    let mut under_names = Vec::new();
    for c in &under.covered {
        if let Some(fd) = &c.fd {
            let name = under_name(&c.point);
            walk.roots.push(name.clone());
            walk.root_fds.push(Some(fd.clone()));
            under_names.push(name);
        }
    }
    walk.path_fds = walk.roots.iter().map(|_| None).collect();
    walk.path_fds[0] = rfs::openat(
        &*fs.root,
        c".",
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()
    .map(Arc::new);
    let extra = Extra {
        under,
        outside,
        under_names,
        stored,
    };
    (walk, extra)
}

/// The root of `tree` named `name`.
fn root_named(s: &Scanned, name: &[u8]) -> Option<NodeId> {
    (s.tree.roots().iter().copied()).find(|&r| s.tree.name(r) == name)
}

/// The sums of how the data of the subvolumes a `-x` walk of `fs`'s
/// mount meets is stored, on Btrfs (`None` elsewhere), for the walk to
/// gather from the items it reads with the tree search; an error without
/// root (the subvolumes are found with the tree search) or with
/// `fiemap_only` (the walk does not search the trees).
fn stored_of(fs: &Filesystem, fiemap_only: bool) -> Option<std::io::Result<Arc<StoredSums>>> {
    let fd = fs.root.as_fd();
    fs.btrfs.then(|| {
        if fiemap_only {
            return Err(std::io::ErrorKind::Unsupported.into());
        }
        let sector = rfs::fstatvfs(fd).map_or(4096, |st| st.f_bsize);
        trees_under(fd).map(|t| Arc::new(StoredSums::new(t, sector)))
    })
}

/// The table of `fs` from its scan `s` (made of [`walk_of`]'s options),
/// which met `errors` entries it could not read.
pub(crate) fn table(fs: &Filesystem, extra: &Extra, s: &Scanned, errors: u64) -> Table {
    let fd = fs.root.as_fd();
    let stored = extra.stored.as_ref().map(|r| match r {
        Ok(sums) => Ok(sums.sums()),
        Err(e) => Err(std::io::Error::from(e.kind())),
    });
    let stored = stored.as_ref();
    let space = space(fd);
    let (used, size) = space.as_ref().map_or((0, 0), |sp| (sp.used, sp.size));
    let main = root_named(s, &fs.mount.point);
    let du = main.map_or(0, |r| s.tree.figures(r).total);
    use rows::{
        compression_row, deleted_open_row, deleted_subvolumes_row, files_row, metadata_row,
        reached_rows, unexplained, unreachable_row,
    };
    let mut rows = Vec::new();
    rows.push(files_row(fs, s, main, stored, errors));
    let (under_row, outside_row) = reached_rows(fs, extra, s);
    rows.push(outside_row);
    rows.push(unreachable_row(fs, s, main, stored));
    rows.push(deleted_open_row(fd));
    rows.push(under_row);
    rows.push(deleted_subvolumes_row(fs));
    rows.push(metadata_row(space.as_ref().ok()));
    rows.push(compression_row(stored));
    rows.push(unexplained(used, &rows, errors));
    Table {
        mount: fs.mount.point.clone(),
        source: fs.mount.source.clone(),
        fs_type: fs.mount.fs_type.clone(),
        size,
        used,
        du,
        paths: fs.paths.clone(),
        rows,
    }
}

/// The subvolumes a `-x` walk of the mount root open at `fd` meets: its
/// own and those below it (as root).
fn trees_under(fd: BorrowedFd<'_>) -> std::io::Result<Vec<u64>> {
    let model = sdu_sys::btrfs::Subvolumes::read(fd)?;
    let mut ids = model.under(fd)?;
    ids.push(sdu_sys::btrfs::subvol(fd)?.id);
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}
