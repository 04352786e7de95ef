//! `sdu --df`: for the filesystem holding each PATH, a table whose rows add
//! up to df's Used (`docs/df.md` explains each row and what to do about
//! it).
//!
//! The filesystem is found through the fd a PATH was resolved by: its
//! mount (`stx_mnt_id` in `/proc/self/mountinfo`), whose root is reached
//! by climbing `..` from the PATH until `statx` says `MOUNT_ROOT`. That
//! root is scanned with `-x` (no other mount entered; Btrfs subvolumes
//! below it are walked, as they are not mounts), keeping what sets of
//! entries free ([`crate::Scanning`]'s `sets`), with extra roots handed to
//! the walk as fds: the subvolumes the mount does not reach
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
//! some row is not exact ([`unexplained`]).

mod placeholder;
mod stored;

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use rustix::fs::{self as rfs, AtFlags, CWD, Mode, OFlags, StatxAttributes, StatxFlags};
use sdu_sys::mountinfo::Mount;

use crate::figures::Bound;
use crate::messages::Messages;
use crate::probe::magic;
use crate::records::NodeId;
use crate::scan::Scanned;
use crate::walk::WalkOptions;
use placeholder::deleted_subvolumes::deleted_subvolumes;
use placeholder::open_deleted::deleted_open;
use placeholder::outside::{OutsideSubvols, outside_subvolumes};
use placeholder::space::{self, space};
use placeholder::under_mounts::{UnderMounts, under_mounts};

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
    let under = under_mounts(&fs.mount, &fs.mounts);
    let outside = if fs.btrfs {
        outside_subvolumes(fs.root.as_fd(), &fs.mount, &fs.mounts)
    } else {
        OutsideSubvols {
            roots: Vec::new(),
            mounted_at: Vec::new(),
            missed: Some(0),
        }
    };
    let mut walk = WalkOptions {
        roots: vec![fs.mount.point.clone()],
        root_fds: vec![Some(fs.root.clone())],
        one_file_system: true,
        // Files are nodes of their own: the unreachable bytes are credited
        // to the file holding them.
        all: true,
        subvolumes: false,
        identities: false,
        ..base.clone()
    };
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
    let extra = Extra {
        under,
        outside,
        under_names,
    };
    (walk, extra)
}

/// The root of `tree` named `name`.
fn root_named(s: &Scanned, name: &[u8]) -> Option<NodeId> {
    (s.tree.roots().iter().copied()).find(|&r| s.tree.name(r) == name)
}

/// The table of `fs` from its scan `s` (made of [`walk_of`]'s options),
/// which met `errors` entries it could not read.
pub(crate) fn table(fs: &Filesystem, extra: &Extra, s: &Scanned, errors: u64) -> Table {
    let fd = fs.root.as_fd();
    let space = space(fd);
    let (used, size) = space.as_ref().map_or((0, 0), |sp| (sp.used, sp.size));
    let main = root_named(s, &fs.mount.point);
    let du = main.map_or(0, |r| s.tree.figures(r).total);
    let stored = if fs.btrfs {
        let sector = rfs::fstatvfs(fd).map_or(4096, |st| st.f_bsize);
        Some(trees_under(fd).and_then(|t| stored::stored(fd, &t, sector)))
    } else {
        None
    };
    let mut rows = Vec::new();
    rows.push(files_row(fs, s, main, stored.as_ref(), errors));
    let (under_row, outside_row) = reached_rows(fs, extra, s);
    rows.push(outside_row);
    rows.push(unreachable_row(fs, s, main, stored.as_ref()));
    rows.push(deleted_open_row(fd));
    rows.push(under_row);
    rows.push(deleted_subvolumes_row(fs));
    rows.push(metadata_row(space.as_ref().ok()));
    rows.push(compression_row(stored.as_ref()));
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

/// A row of `bytes` measured.
fn exact(row: &'static str, bytes: u64) -> Row {
    Row {
        row,
        bytes: i64::try_from(bytes).unwrap_or(i64::MAX),
        how: How::Exact,
        why: String::new(),
        items: Vec::new(),
    }
}

/// A row of something this filesystem cannot have.
fn no_such(row: &'static str, why: &str) -> Row {
    Row {
        how: How::NoSuch,
        why: why.into(),
        ..exact(row, 0)
    }
}

/// A row not seen without root: `why` says what root would add.
fn not_seen(row: &'static str, why: String) -> Row {
    Row {
        how: How::NotSeen,
        why,
        ..exact(row, 0)
    }
}

/// `files`: the mount root's Exclusive + Shared; as root on Btrfs, less
/// its unreachable bytes, plus what compression saved, less the inline
/// data.
fn files_row(
    fs: &Filesystem,
    s: &Scanned,
    main: Option<NodeId>,
    stored: Option<&std::io::Result<stored::Stored>>,
    errors: u64,
) -> Row {
    let Some(r) = main else {
        return Row {
            how: How::Bound(Bound::AT_LEAST),
            why: "the mount's root could not be read".into(),
            ..exact("files", 0)
        };
    };
    let f = s.tree.figures(r);
    let seen = f.exclusive.saturating_add(f.shared);
    let mut row = match stored {
        Some(Ok(st)) => {
            // The top level's root directory has a node's bytes of its
            // own (mkfs gives it nodesize), which no data extent holds.
            let dir = rfs::fstat(fs.root.as_fd()).map_or(0, |st| st.st_blocks as u64 * 512);
            let bytes = seen
                .saturating_sub(s.tree.unreachable(r))
                .saturating_add(st.saved)
                .saturating_sub(st.inline)
                .saturating_sub(dir);
            let mut row = exact("files", bytes);
            if st.inline > 0 {
                row.items.push(Item {
                    name: b"(inline data: in the metadata row)".to_vec(),
                    bytes: st.inline,
                    note: format!("{} inline files, not counted here", st.inline_items),
                });
            }
            row
        }
        Some(Err(_)) => Row {
            how: How::Bound(Bound::UNKNOWN),
            why: "without root on Btrfs: compressed data counted at up to its uncompressed \
                  size, extents referenced in part as referenced, inline data counted here \
                  and in metadata"
                .into(),
            ..exact("files", seen)
        },
        None => exact("files", seen),
    };
    if fs.btrfs && stored.is_some_and(Result::is_err) {
        row.how = How::Bound(Bound::UNKNOWN);
    }
    if errors > 0 {
        let b = match row.how {
            How::Bound(b) => b.with(Bound::AT_LEAST),
            _ => Bound::AT_LEAST,
        };
        row.how = How::Bound(b);
        if !row.why.is_empty() {
            row.why.push_str("; ");
        }
        row.why
            .push_str(&format!("{errors} entries could not be read"));
    }
    row
}

/// `under_mounts` and `outside_subvolumes`, from what deleting the covered
/// directories, and those with the outside subvolumes, frees.
fn reached_rows(fs: &Filesystem, extra: &Extra, s: &Scanned) -> (Row, Row) {
    let under_ids: Vec<NodeId> = (extra.under_names.iter())
        .filter_map(|n| root_named(s, n))
        .collect();
    let outside_ids: Vec<NodeId> = (extra.outside.roots.iter())
        .filter_map(|(n, _)| root_named(s, n))
        .collect();
    let frees = |ids: &[NodeId]| match &s.sets {
        Some(sets) if !ids.is_empty() => sets.frees(&s.tree, ids),
        _ => crate::tree::union::Frees::default(),
    };
    let under_frees = frees(&under_ids);
    let covered = &extra.under.covered;
    let under = if covered.is_empty() {
        exact("under_mounts", 0)
    } else if !extra.under.seen {
        Row {
            items: (covered.iter())
                .map(|c| Item {
                    name: c.point.clone(),
                    bytes: 0,
                    note: format!("covered by {}", String::from_utf8_lossy(&c.by)),
                })
                .collect(),
            ..not_seen(
                "under_mounts",
                format!(
                    "{} director{} covered by mounts; as root sdu looks beneath them",
                    covered.len(),
                    if covered.len() == 1 { "y" } else { "ies" }
                ),
            )
        }
    } else {
        let mut items: Vec<Item> = (covered.iter())
            .map(|c| Item {
                name: c.point.clone(),
                bytes: root_named(s, &under_name(&c.point)).map_or(0, |r| frees(&[r]).bytes),
                note: format!("covered by {}", String::from_utf8_lossy(&c.by)),
            })
            .collect();
        items.sort_by(|a, b| b.bytes.cmp(&a.bytes));
        let mut row = bounded("under_mounts", under_frees.bytes, under_frees.bound);
        row.items = items;
        let unopened = covered.iter().filter(|c| c.fd.is_none()).count();
        if unopened > 0 {
            row.how = How::Bound(under_frees.bound.with(Bound::AT_LEAST));
            row.why = format!("{unopened} covered directories could not be opened");
        }
        row
    };
    let outside = if !fs.btrfs {
        no_such("outside_subvolumes", "no subvolumes on this filesystem")
    } else {
        match extra.outside.missed {
            None => not_seen(
                "outside_subvolumes",
                "without CAP_SYS_ADMIN the subvolumes outside the mount cannot be listed; \
                 as root sdu reaches them through the top level"
                    .into(),
            ),
            Some(missed) => {
                let mut all = outside_ids.clone();
                all.extend_from_slice(&under_ids);
                let both = frees(&all);
                let bytes = both.bytes.saturating_sub(under_frees.bytes);
                let bound = both.bound.with(under_frees.bound.reversed());
                let mut row = bounded("outside_subvolumes", bytes, bound);
                let mut items: Vec<Item> = (extra.outside.roots.iter().enumerate())
                    .map(|(i, (name, _))| Item {
                        name: name.clone(),
                        bytes: root_named(s, name).map_or(0, |r| frees(&[r]).bytes),
                        note: match extra.outside.mounted_at.get(i) {
                            Some(Some(at)) => {
                                format!("mounted at {}", String::from_utf8_lossy(at))
                            }
                            _ => String::new(),
                        },
                    })
                    .collect();
                items.sort_by(|a, b| b.bytes.cmp(&a.bytes));
                row.items = items;
                if missed > 0 {
                    row.how = How::Bound(bound.with(Bound::AT_LEAST));
                    row.why = format!("{missed} subvolumes outside the mount could not be reached");
                }
                row
            }
        }
    };
    (under, outside)
}

/// A row of `bytes` exact or bounded as `bound` says.
fn bounded(row: &'static str, bytes: u64, bound: Bound) -> Row {
    let mut r = exact(row, bytes);
    if !bound.is_exact() {
        r.how = How::Bound(bound);
        r.why = "what deleting them frees is a bound (docs/figures.md)".into();
    }
    r
}

/// `unreachable`: the bookend bytes under the mount root, as root on
/// Btrfs, with the entries they are credited to.
fn unreachable_row(
    fs: &Filesystem,
    s: &Scanned,
    main: Option<NodeId>,
    stored: Option<&std::io::Result<stored::Stored>>,
) -> Row {
    if !fs.btrfs {
        return no_such("unreachable", "extents are freed block by block here");
    }
    let (Some(Ok(_)), Some(r)) = (stored, main) else {
        return not_seen(
            "unreachable",
            "bookends are read from the subvolume trees, as root".into(),
        );
    };
    let tree = &s.tree;
    let mut items: Vec<Item> = tree
        .unreachable_credits()
        .iter()
        .filter(|&&(n, _)| root_of(s, n) == Some(r))
        .map(|&(n, bytes)| Item {
            name: path_of(s, n),
            bytes,
            note: String::new(),
        })
        .collect();
    items.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)));
    let mut row = exact("unreachable", tree.unreachable(r));
    row.items = items;
    row
}

/// The root node `id` lies under.
fn root_of(s: &Scanned, id: NodeId) -> Option<NodeId> {
    let mut at = id;
    while s.tree.depth(at) > 0 {
        at = s.tree.parent(at)?;
    }
    Some(at)
}

/// The path of node `id`, from its root's name.
fn path_of(s: &Scanned, id: NodeId) -> Vec<u8> {
    let mut names = Vec::new();
    let mut at = id;
    loop {
        names.push(s.tree.name(at));
        match s.tree.parent(at) {
            Some(p) if s.tree.depth(at) > 0 => at = p,
            _ => break,
        }
    }
    let mut path = Vec::new();
    for n in names.iter().rev() {
        if !path.is_empty() && !path.ends_with(b"/") {
            path.push(b'/');
        }
        path.extend_from_slice(n);
    }
    path
}

/// `deleted_open`: the files deleted but held open.
fn deleted_open_row(fd: BorrowedFd<'_>) -> Row {
    let d = deleted_open(fd);
    let mut row = exact("deleted_open", d.bytes);
    row.items = (d.files.iter())
        .map(|f| Item {
            name: f.name.clone(),
            bytes: f.bytes,
            note: format!(
                "pid {} ({}) fd {}{}{}",
                f.pid,
                String::from_utf8_lossy(&f.comm),
                f.fd,
                if f.holders > 0 {
                    format!(", {} more holders", f.holders)
                } else {
                    String::new()
                },
                if f.shared == Some(true) {
                    ", shares data (a reflink)"
                } else {
                    ""
                },
            ),
        })
        .collect();
    if d.unreadable > 0 {
        row.how = How::Bound(Bound::AT_LEAST);
        row.why = format!(
            "{} processes could not be read; as root sdu reads every process",
            d.unreadable
        );
    }
    row
}

/// `deleted_subvolumes`: Btrfs subvolumes deleted, not yet cleaned.
fn deleted_subvolumes_row(fs: &Filesystem) -> Row {
    if !fs.btrfs {
        return no_such("deleted_subvolumes", "no subvolumes on this filesystem");
    }
    let d = deleted_subvolumes(fs.root.as_fd());
    if !d.seen {
        return not_seen(
            "deleted_subvolumes",
            "the root tree's orphans are read as root".into(),
        );
    }
    let mut row = exact("deleted_subvolumes", d.bytes);
    row.items = (d.subvols.iter())
        .map(|v| Item {
            name: format!("subvolume {}", v.id).into_bytes(),
            bytes: v.bytes,
            note: String::new(),
        })
        .collect();
    row
}

/// `metadata`: the part of Used that is not file data.
fn metadata_row(sp: Option<&space::Space>) -> Row {
    let Some(sp) = sp else {
        return not_seen("metadata", "statvfs failed".into());
    };
    let mut row = exact("metadata", sp.metadata);
    match sp.how {
        space::How::Exact => {}
        space::How::Estimate => {
            row.how = How::Estimate;
            row.why = "estimated".into();
        }
        space::How::NotSeen => {
            row.how = How::NotSeen;
            row.why = "not measured here".into();
        }
    }
    row.items = (sp.parts.iter())
        .map(|p| Item {
            name: p.name.as_bytes().to_vec(),
            bytes: p.bytes,
            note: String::new(),
        })
        .collect();
    row
}

/// `compression`: minus the bytes compression saved, as root on Btrfs.
fn compression_row(stored: Option<&std::io::Result<stored::Stored>>) -> Row {
    match stored {
        None => no_such("compression", "no compression on this filesystem"),
        Some(Err(_)) => not_seen(
            "compression",
            "the size on disk of compressed extents is read from the subvolume trees, as root"
                .into(),
        ),
        Some(Ok(st)) => Row {
            bytes: -i64::try_from(st.saved).unwrap_or(i64::MAX),
            why: String::new(),
            items: if st.compressed > 0 {
                vec![Item {
                    name: b"(saved)".to_vec(),
                    bytes: st.saved,
                    note: format!("{} compressed extents", st.compressed),
                }]
            } else {
                Vec::new()
            },
            ..exact("compression", 0)
        },
    }
}

/// `unexplained`: Used less every other row, exact when they all are;
/// else which way it may be wrong, and which rows make it so.
fn unexplained(used: u64, rows: &[Row], errors: u64) -> Row {
    let sum: i128 = rows.iter().map(|r| i128::from(r.bytes)).sum();
    let rest = i128::from(used) - sum;
    let mut bound = Bound::EXACT;
    let mut why = Vec::new();
    for r in rows {
        let b = r.how.subtracted();
        if !b.is_exact() {
            bound = bound.with(b);
            why.push(format!("{} {}", r.row, r.how.word()));
        }
    }
    if errors > 0 {
        why.push(format!("{errors} entries unread"));
    }
    Row {
        row: "unexplained",
        bytes: i64::try_from(rest).unwrap_or(if rest < 0 { i64::MIN } else { i64::MAX }),
        how: if bound.is_exact() {
            How::Exact
        } else {
            How::Bound(bound)
        },
        why: why.join(", "),
        items: Vec::new(),
    }
}
