//! `--snapshots` as root: the subvolumes of the origins under the PATHs
//! that a walk of the PATHs would not reach (in the top level, not
//! mounted, or mounted outside the PATHs), reached through the
//! filesystem's top level and walked as extra roots, each named
//! `<FS_TREE>/path/in/top/level` as btrfs-progs writes it.
//!
//! Before the walk, for each PATH on Btrfs: the subvolumes its walk meets
//! (its own when it is one's root, those whose root lies under it, and
//! those of the Btrfs mounts of the same filesystem under it, unless
//! `-x`), from the root tree ([`Subvolumes::under`]); their origins (the
//! first ancestor of each, [`Subvolumes::first_ancestor`]); and every
//! snapshot alive of those origins that none of the PATHs holds (an
//! origin outside the PATHs is not walked for its snapshots). Each
//! is opened beneath a read-only, detached mount of the top level
//! ([`sdu_sys::btrfs::mount_top_level`]: an fd, no mount point) with
//! `openat2` through no symlink ([`sdu_sys::btrfs::open_beneath`]), at
//! the path its `ROOT_REF`s give, and handed to the walk as an fd
//! ([`super::WalkOptions::root_fds`]); one lying inside another so found
//! is walked as part of it. A PATH is asked about through the fd the walk
//! then takes it by ([`super::WalkOptions::path_fds`]), never by its name
//! again.
//!
//! Without `CAP_SYS_ADMIN` the root tree cannot be read: how many
//! subvolumes lie outside the PATHs cannot be told.

use std::collections::HashSet;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use rustix::fs::{self as rfs, Mode, OFlags};
use sdu_sys::btrfs::Subvolumes;

use super::WalkOptions;
use crate::probe::magic;

/// The id of the top level (`BTRFS_FS_TREE_OBJECTID`).
const FS_TREE: u64 = 5;

/// What reaching the subvolumes outside the PATHs gave.
#[derive(Debug, Default)]
pub(crate) struct Outside {
    /// Each subvolume reached: its name (`<FS_TREE>/…`) and its directory,
    /// open beneath the top level.
    pub(crate) roots: Vec<(Vec<u8>, Arc<OwnedFd>)>,
    /// Subvolumes of those origins that could not be reached (`None`:
    /// without `CAP_SYS_ADMIN`, on Btrfs, where they cannot be listed).
    pub(crate) missed: Option<usize>,
}

/// One filesystem of the PATHs: its subvolumes, an fd of it, the device
/// it is mounted from, and the subvolumes the PATHs hold.
struct Fs {
    /// The device of its mounts, as mountinfo gives it (one per Btrfs
    /// filesystem; its subvolumes' `st_dev` differ).
    dev: (u32, u32),
    model: Subvolumes,
    fd: OwnedFd,
    source: Option<Vec<u8>>,
    held: HashSet<u64>,
}

/// The subvolumes of the origins under `opts.roots` that their walk
/// would not reach, reached through the top level (as root).
pub(crate) fn outside(opts: &WalkOptions) -> Outside {
    let mounts = sdu_sys::mountinfo::read().unwrap_or_default();
    let mut all: Vec<Fs> = Vec::new();
    let mut out = Outside {
        missed: Some(0),
        ..Outside::default()
    };
    // Each PATH as the walk takes it (`path_fds`), opened again through
    // its fd, never its name: its ioctls need more than `O_PATH`.
    for pathfd in opts.path_fds.iter().flatten() {
        let Some(fd) = reopen(pathfd.as_fd()) else {
            continue;
        };
        if sdu_sys::fs::fs_type(fd.as_fd()).ok() != Some(magic::BTRFS) {
            continue;
        }
        let Some(mount) = mount_of(fd.as_fd(), &mounts) else {
            continue;
        };
        let i = match all.iter().position(|f| f.dev == mount.dev) {
            Some(i) => i,
            None => {
                let Ok(model) = Subvolumes::read(fd.as_fd()) else {
                    // Without root: nothing outside the PATHs can be listed.
                    if !in_top_level(fd.as_fd()) {
                        out.missed = None;
                    }
                    continue;
                };
                let Ok(own) = rustix::io::fcntl_dupfd_cloexec(&fd, 0) else {
                    continue;
                };
                all.push(Fs {
                    dev: mount.dev,
                    model,
                    fd: own,
                    source: mount.source.starts_with(b"/").then(|| mount.source.clone()),
                    held: HashSet::new(),
                });
                all.len() - 1
            }
        };
        held_by(&mut all[i], fd.as_fd(), &mounts, opts.one_file_system);
    }
    for fs in &all {
        let missing = missing(fs);
        if missing.is_empty() {
            continue;
        }
        let top = fs.source.as_deref().and_then(top_level);
        for (id, path) in &missing {
            match top.as_ref().and_then(|t| reach(t.as_fd(), *id, path)) {
                Some(root) => out.roots.push(root),
                None => {
                    if let Some(m) = &mut out.missed {
                        *m += 1;
                    }
                }
            }
        }
    }
    out
}

/// The top level of the Btrfs filesystem on device `source` (as
/// mountinfo names it), mounted read-only and detached; `None` without
/// `CAP_SYS_ADMIN`, or for a source that is not a device file.
pub(crate) fn top_level(source: &[u8]) -> Option<OwnedFd> {
    source
        .starts_with(b"/")
        .then(|| sdu_sys::btrfs::mount_top_level(source).ok())
        .flatten()
}

/// Subvolume `id`, whose root lies at `path` in the top level open at
/// `top`: its root directory opened beneath `top`, named
/// `<FS_TREE>/path`; `None` when what lies there is not that subvolume's
/// root (moved, deleted, or a symlink on the way).
pub(crate) fn reach(top: BorrowedFd<'_>, id: u64, path: &[u8]) -> Option<(Vec<u8>, Arc<OwnedFd>)> {
    let d = sdu_sys::btrfs::open_beneath(top, path).ok()?;
    let root = sdu_sys::btrfs::subvol(d.as_fd()).is_ok_and(|s| s.id == id)
        && rfs::fstat(&d).is_ok_and(|st| st.st_ino == 256);
    if !root {
        return None;
    }
    let mut name = b"<FS_TREE>/".to_vec();
    name.extend_from_slice(path);
    Some((name, Arc::new(d)))
}

/// The snapshots alive of the origins of `fs.held` that `fs.held` does
/// not hold, with their paths in the top level; one lying inside another
/// of them is left to that one's walk.
fn missing(fs: &Fs) -> Vec<(u64, Vec<u8>)> {
    let m = &fs.model;
    let origins: HashSet<[u8; 16]> = fs
        .held
        .iter()
        .filter_map(|&id| m.first_ancestor(id))
        .collect();
    let mut found: Vec<(u64, Vec<u8>)> = m
        .all()
        .iter()
        .filter(|s| s.id != FS_TREE && s.alive() && !fs.held.contains(&s.id))
        // Snapshots only: an origin outside the PATHs is not walked for
        // them (what its snapshots free is exact as root without it).
        .filter(|s| s.v2.is_some_and(|v| v.parent_uuid != [0; 16]))
        .filter(|s| m.first_ancestor(s.id).is_some_and(|o| origins.contains(&o)))
        .filter_map(|s| Some((s.id, m.path_in_top_level(fs.fd.as_fd(), s.id).ok()?)))
        .collect();
    found.sort_by(|a, b| a.1.cmp(&b.1));
    let mut kept: Vec<(u64, Vec<u8>)> = Vec::new();
    for (id, p) in found {
        let inside = kept.iter().any(|(_, k)| {
            p.strip_prefix(&k[..])
                .is_some_and(|r| r.first() == Some(&b'/'))
        });
        if !inside {
            kept.push((id, p));
        }
    }
    kept
}

/// Adds to `fs.held` the subvolumes a walk of the directory open at `fd`
/// meets: under it, and (unless `one_fs`) under the Btrfs mounts of the
/// same filesystem below it.
fn held_by(fs: &mut Fs, fd: BorrowedFd<'_>, mounts: &[sdu_sys::mountinfo::Mount], one_fs: bool) {
    if let Ok(under) = fs.model.under(fd) {
        fs.held.extend(under);
    }
    if one_fs {
        return;
    }
    let Some(place) = place_of(fd) else {
        return;
    };
    for m in mounts {
        let below = if place == b"/" {
            m.point.len() > 1
        } else {
            m.point
                .strip_prefix(&place[..])
                .is_some_and(|r| r.first() == Some(&b'/'))
        };
        if !below {
            continue;
        }
        let Some(id) = subvolid(&m.super_options).filter(|_| m.dev == fs.dev) else {
            continue;
        };
        fs.held.extend(fs.model.nested_in(id));
    }
}

/// The `subvolid=` of a Btrfs mount's options.
pub(crate) fn subvolid(options: &[u8]) -> Option<u64> {
    options
        .split(|&b| b == b',')
        .find_map(|o| o.strip_prefix(b"subvolid="))
        .and_then(|v| std::str::from_utf8(v).ok()?.parse().ok())
}

/// The mount `fd` lies on.
fn mount_of<'m>(
    fd: BorrowedFd<'_>,
    mounts: &'m [sdu_sys::mountinfo::Mount],
) -> Option<&'m sdu_sys::mountinfo::Mount> {
    let st = rfs::statx(fd, c"", rfs::AtFlags::EMPTY_PATH, rfs::StatxFlags::MNT_ID).ok()?;
    mounts.iter().find(|m| m.id == st.stx_mnt_id)
}

/// Whether the directory open at `fd` is the root of the top level, under
/// which every subvolume lies.
pub(crate) fn in_top_level(fd: BorrowedFd<'_>) -> bool {
    sdu_sys::btrfs::subvol(fd).is_ok_and(|s| s.id == FS_TREE)
        && rfs::fstat(fd).is_ok_and(|st| st.st_ino == 256)
}

/// The directory open at `fd` (`O_PATH`), opened for reading.
fn reopen(fd: BorrowedFd<'_>) -> Option<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    rfs::openat(fd, c".", flags, Mode::empty()).ok()
}

/// Where the directory open at `fd` lies, as `/proc/self/fd` names it.
fn place_of(fd: BorrowedFd<'_>) -> Option<Vec<u8>> {
    use std::os::unix::ffi::OsStringExt;
    let link = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok()?;
    let p = link.into_os_string().into_vec();
    p.starts_with(b"/").then_some(p)
}
