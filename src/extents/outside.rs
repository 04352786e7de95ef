//! As root: the references to the scan's shared data that lie outside the
//! scan, asked of the filesystem itself, so that Reclaimable is exact for
//! any PATH and not only for a whole filesystem (`docs/design.md`, "Exact
//! or a bound").
//!
//! A unit whose every reference the scan saw lies under a directory is
//! credited there. That is the truth only if nothing outside the scan
//! references it too: a snapshot of the subvolume the files came from, a
//! reflink copy elsewhere, an excluded entry. The filesystem knows every
//! owner:
//!
//! - Btrfs: `BTRFS_IOC_LOGICAL_INO_V2` ([`super::btrfs_backref`]) walks
//!   the extent's back references up to every subvolume and inode that
//!   holds it, through tree blocks that snapshots share;
//! - XFS with the reverse-mapping btree: `FS_IOC_GETFSMAP`
//!   ([`super::fsmap`]) names the owner of every block of a range.
//!
//! Each owner that is not a file of the scan becomes one more reference to
//! the range, from a file the scan never frees ([`Outside::file`]): the
//! sweep then keeps the unit out of every Reclaimable, as it keeps out a
//! unit one of whose files has a link outside. A space whose every range
//! was asked is verified: its units free what they count.
//!
//! Both need `CAP_SYS_ADMIN`. Without it, without rmapbt, or when a query
//! fails, the space stays unverified and its figures are bounds.

use std::collections::HashSet;
use std::os::fd::{AsFd, OwnedFd};

use rayon::prelude::*;

use super::{Extents, btrfs_backref, fsmap};
use crate::probe::{Registry, magic};
use crate::records::{FileRec, NodeId};

/// What verifying the spaces did.
#[derive(Debug, Default)]
pub(crate) struct Verified {
    /// Per extent space: every reference to its ranges from outside the
    /// scan was found (and indexed).
    pub(crate) spaces: Vec<bool>,
    /// Ranges asked about, and owners found outside the scan.
    pub(crate) asked: u64,
    pub(crate) outside: u64,
    /// XFS filesystems (registry index) the scan could not verify for
    /// want of the reverse-mapping btree.
    pub(crate) no_rmapbt: Vec<u32>,
}

/// The file that stands for everything outside the scan: it has a link
/// nobody saw, so nothing it maps is ever freed.
pub(crate) fn outside_file(id: u32) -> FileRec {
    FileRec {
        id,
        node: NodeId::TOP,
        ns: u32::MAX,
        dev: u64::MAX,
        ino: u64::MAX,
        linked: true,
    }
}

/// Asks the filesystems of the spaces `want` (by extent space) who else
/// holds the ranges indexed there, and indexes what lies outside the scan
/// as references of one more file, returned with what was verified.
/// `files` are the scan's files with shared extents; `fds` an open fd on
/// each filesystem (registry index).
pub(crate) fn verify(
    extents: &Extents,
    registry: &Registry,
    files: &[FileRec],
    fds: &[(u32, OwnedFd)],
    want: &[bool],
) -> (Verified, Option<FileRec>) {
    let space_fs = registry.space_filesystems();
    let filesystems = registry.filesystems();
    let mut v = Verified {
        spaces: vec![false; space_fs.len()],
        ..Verified::default()
    };
    let mut outside: Option<u32> = None;
    for (space, &fs) in space_fs.iter().enumerate() {
        if !want.get(space).copied().unwrap_or(false) {
            continue;
        }
        let Some(fd) = fds.iter().find(|f| f.0 == fs).map(|f| f.1.as_fd()) else {
            continue;
        };
        let Some(info) = filesystems.get(fs as usize) else {
            continue;
        };
        let ranges = extents.ranges_in(space as u32);
        if ranges.is_empty() {
            // Nothing shared there: nothing to verify.
            v.spaces[space] = true;
            continue;
        }
        let found = match info.magic {
            magic::BTRFS => btrfs_outside(fd, registry, files, &ranges),
            magic::XFS => match fsmap::has_rmapbt(fd) {
                Ok(true) => xfs_outside(fd, files, &ranges),
                _ => {
                    if !v.no_rmapbt.contains(&fs) {
                        v.no_rmapbt.push(fs);
                    }
                    None
                }
            },
            _ => None,
        };
        let Some(found) = found else { continue };
        v.asked += ranges.len() as u64;
        v.outside += found.len() as u64;
        if !found.is_empty() {
            let id = *outside.get_or_insert_with(|| extents.new_file());
            for (physical, length) in found {
                extents.insert(space as u32, physical, length, id);
            }
        }
        v.spaces[space] = true;
    }
    (v, outside.map(outside_file))
}

/// Btrfs: the ranges of `ranges` (each one extent, or part of one) that a
/// subvolume and inode the scan did not see holds; `None` if some extent
/// could not be asked about.
fn btrfs_outside(
    fd: std::os::fd::BorrowedFd<'_>,
    registry: &Registry,
    files: &[FileRec],
    ranges: &[(u64, u64)],
) -> Option<Vec<(u64, u64)>> {
    // The scan's files, by (subvolume id, inode).
    let seen: HashSet<(u64, u64)> = files
        .iter()
        .filter_map(|f| Some((registry.subvolume(f.dev)?.id, f.ino)))
        .collect();
    let found: Vec<Option<bool>> = ranges
        .par_iter()
        .map(|&(physical, _)| {
            let h = btrfs_backref::holders(fd, physical).ok()?;
            if h.truncated {
                return None;
            }
            Some(h.list.iter().any(|k| !seen.contains(k)))
        })
        .collect();
    let mut out = Vec::new();
    for (r, f) in ranges.iter().zip(found) {
        if f? {
            out.push(*r);
        }
    }
    Some(out)
}

/// XFS: the parts of `ranges` whose blocks an inode the scan did not see
/// also owns; `None` if some range could not be asked about, or holds
/// something other than file data.
fn xfs_outside(
    fd: std::os::fd::BorrowedFd<'_>,
    files: &[FileRec],
    ranges: &[(u64, u64)],
) -> Option<Vec<(u64, u64)>> {
    let seen: HashSet<(u64, u64)> = files.iter().map(|f| (f.dev, f.ino)).collect();
    let dev = rustix::fs::fstat(fd).ok()?.st_dev;
    let device = fsmap::data_device(dev);
    let found: Vec<Option<Vec<(u64, u64)>>> = ranges
        .par_iter()
        .map_init(fsmap::Fsmap::default, |map, &(start, len)| {
            let mut owners = Vec::new();
            map.owners(fd, device, start, len, &mut owners).ok()?;
            let end = start.saturating_add(len);
            let mut out = Vec::new();
            for o in &owners {
                let (a, b) = (
                    o.physical.max(start),
                    o.physical.saturating_add(o.length).min(end),
                );
                if a >= b {
                    continue;
                }
                if !o.is_file_data() {
                    return None;
                }
                if !seen.contains(&(dev, o.owner)) {
                    out.push((a, b - a));
                }
            }
            Some(out)
        })
        .collect();
    let mut out = Vec::new();
    for f in found {
        out.extend(f?);
    }
    Some(out)
}
