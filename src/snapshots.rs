//! `--snapshots`: the Btrfs subvolumes met in a scan, grouped by origin,
//! and what deleting each snapshot frees, alone and with every older
//! snapshot of the same origin ([`crate::tree::Sets::frees`]).
//!
//! A subvolume root is a directory with inode 256 on Btrfs; its identity
//! (uuid, parent uuid, creation time, read-only flag) is read with the
//! unprivileged ioctls of `sdu_sys::btrfs`. A snapshot's origin is the
//! subvolume of the scan whose uuid is its parent uuid, followed up
//! through snapshots of snapshots; an origin outside the scan (or deleted)
//! groups its snapshots by that parent uuid alone.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;

use rustix::fs::{Mode, OFlags};

use crate::figures::{Bound, Stats, Timestamp};
use crate::records::NodeId;
use crate::tree::union::Frees;
use crate::tree::{Sets, Tree};

/// The inode number of every Btrfs subvolume's root directory.
const SUBVOL_ROOT_INO: u64 = 256;
/// `BTRFS_SUBVOL_RDONLY`.
const RDONLY: u64 = 1 << 1;

/// One subvolume root met in the scan.
#[derive(Clone, Debug)]
pub(crate) struct Subvolume {
    /// Its node.
    pub(crate) node: NodeId,
    /// Its path, from the PATH given.
    pub(crate) path: Vec<u8>,
    /// Its uuid.
    pub(crate) uuid: [u8; 16],
    /// The uuid of the subvolume it is a snapshot of (zero: none).
    pub(crate) parent: [u8; 16],
    /// Its creation time (`otime`).
    pub(crate) created: Timestamp,
    /// Whether it is read-only.
    pub(crate) read_only: bool,
    /// Its figures in the scan.
    pub(crate) figures: Stats,
    /// What deleting it alone frees.
    pub(crate) alone: Frees,
    /// What deleting it with every older snapshot of its origin frees
    /// (the origin itself: what it frees alone).
    pub(crate) with_older: Frees,
    /// What snapper or timeshift recorded of it, when it is one of theirs.
    pub(crate) layout: Option<crate::snapshot_layouts::Layout>,
}

/// The subvolumes of one origin: the origin (when in the scan), then its
/// snapshots oldest first.
#[derive(Clone, Debug)]
pub(crate) struct Group {
    /// The origin, when the scan met it.
    pub(crate) origin: Option<Subvolume>,
    /// The origin's uuid.
    pub(crate) uuid: [u8; 16],
    /// Its snapshots, oldest first.
    pub(crate) snapshots: Vec<Subvolume>,
    /// What deleting every snapshot frees.
    pub(crate) all: Frees,
}

/// The subvolume roots of `tree`, grouped by origin, with their figures.
/// Whether any root of the scan is on Btrfs is the second value.
pub(crate) fn groups(tree: &Tree, sets: &Sets) -> (Vec<Group>, bool) {
    let mut found = Vec::new();
    let mut btrfs = false;
    for &r in tree.roots() {
        let path = tree.name(r).to_vec();
        visit(tree, sets, r, path, &mut found, &mut btrfs);
    }
    // The origin of each: up through the parents the scan met.
    let origin_of = |s: &Subvolume| {
        let mut u = s.parent;
        let mut steps = 0;
        while let Some(p) = found.iter().find(|o: &&Subvolume| o.uuid == u) {
            if p.parent == [0; 16] || steps > found.len() {
                break;
            }
            u = p.parent;
            steps += 1;
        }
        u
    };
    let mut groups: Vec<Group> = Vec::new();
    for s in &found {
        let key = if s.parent == [0; 16] {
            s.uuid
        } else {
            origin_of(s)
        };
        let i = match groups.iter().position(|g| g.uuid == key) {
            Some(i) => i,
            None => {
                groups.push(Group {
                    origin: None,
                    uuid: key,
                    snapshots: Vec::new(),
                    all: Frees {
                        bytes: 0,
                        bound: Bound::EXACT,
                    },
                });
                groups.len() - 1
            }
        };
        if s.uuid == key {
            groups[i].origin = Some(s.clone());
        } else {
            groups[i].snapshots.push(s.clone());
        }
    }
    for g in &mut groups {
        g.snapshots
            .sort_by(|a, b| (a.created, &a.path).cmp(&(b.created, &b.path)));
        let mut ids = Vec::new();
        for s in &mut g.snapshots {
            ids.push(s.node);
            s.with_older = sets.frees(tree, &ids);
        }
        g.all = sets.frees(tree, &ids);
    }
    (groups, btrfs)
}

/// Looks for subvolume roots at `id` (at `path`) and below.
fn visit(
    tree: &Tree,
    sets: &Sets,
    id: NodeId,
    path: Vec<u8>,
    found: &mut Vec<Subvolume>,
    btrfs: &mut bool,
) {
    let figures = tree.figures(id);
    if figures.dirs == 0 {
        return;
    }
    if let Some(s) = subvolume(tree, sets, id, &path, btrfs) {
        found.push(s);
    }
    for &c in tree.children(id) {
        let mut p = path.clone();
        if !p.ends_with(b"/") {
            p.push(b'/');
        }
        p.extend_from_slice(tree.name(c));
        visit(tree, sets, c, p, found, btrfs);
    }
}

/// The subvolume rooted at `path`, if it is one.
fn subvolume(
    tree: &Tree,
    sets: &Sets,
    id: NodeId,
    path: &[u8],
    btrfs: &mut bool,
) -> Option<Subvolume> {
    let p = std::path::Path::new(OsStr::from_bytes(path));
    let md = std::fs::symlink_metadata(p).ok()?;
    let root = tree.depth(id) == 0;
    // Only a root, or a directory with a subvolume root's inode number,
    // is opened.
    if !md.is_dir() || (!root && md.ino() != SUBVOL_ROOT_INO) {
        return None;
    }
    // Opened without following a symlink below a root (one put in place
    // of the directory since the scan is not followed), and asked again
    // through the fd: what is read is the directory opened.
    let mut flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    if !root {
        flags |= OFlags::NOFOLLOW;
    }
    let fd = rustix::fs::open(p, flags, Mode::empty()).ok()?;
    let dir = std::fs::File::from(fd);
    let ino = rustix::fs::fstat(&dir).ok()?.st_ino;
    use std::os::fd::AsFd;
    let on_btrfs = sdu_sys::fs::fs_type(dir.as_fd()).is_ok_and(|m| m == sdu_sys::fs::magic::BTRFS);
    *btrfs |= on_btrfs;
    if !on_btrfs || ino != SUBVOL_ROOT_INO {
        return None;
    }
    let info = sdu_sys::btrfs::subvol(dir.as_fd()).ok()?;
    let flags = sdu_sys::btrfs::subvol_flags(dir.as_fd()).unwrap_or(0);
    let alone = sets.frees(tree, &[id]);
    Some(Subvolume {
        node: id,
        path: path.to_vec(),
        uuid: info.ids.0,
        parent: info.ids.1,
        created: Timestamp {
            secs: info.created.0,
            nanos: info.created.1,
        },
        read_only: flags & RDONLY != 0,
        figures: tree.figures(id),
        alone,
        with_older: alone,
        layout: crate::snapshot_layouts::describe(p),
    })
}
