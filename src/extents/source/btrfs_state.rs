//! What the tree search learns of each Btrfs filesystem and subvolume
//! once, and keeps for the scan.

use std::os::fd::BorrowedFd;
use std::sync::Arc;

use dashmap::DashMap;
use sdu_sys::btrfs as bs;

use super::{Extents, Fast};
use crate::extents::btrfs_refs::{self, FileAt, Verdict};

/// A subvolume, as the tree search decides what it shares.
#[derive(Clone, Copy, Debug)]
pub(super) struct Subvol {
    /// Its id.
    pub(super) root: u64,
    /// Its root item's `last_snapshot`.
    pub(super) last_snapshot: u64,
    /// The address of its root node.
    pub(super) root_node: u64,
    /// Its leaves older than this are shared with the snapshot `kept_by`.
    pub(super) kept_until: u64,
    pub(super) kept_by: u64,
}

/// What the tree search learns once and keeps.
#[derive(Debug, Default)]
pub(super) struct BtrfsState {
    /// Per filesystem (registry index): its transaction committed and the
    /// search permitted (true), or not (false).
    fs: DashMap<u32, bool, Fast>,
    /// Per filesystem ready for the search: its node size.
    leaf: DashMap<u32, u32, Fast>,
    /// Per device (a subvolume): its id, `last_snapshot`, root node and
    /// the transaction before which its leaves are shared with a snapshot
    /// ([`btrfs_refs::kept_until`]).
    subvols: DashMap<u64, Option<Subvol>, Fast>,
    /// Per filesystem, subvolume and leaf: whether the leaf is shared.
    leaves: DashMap<(u32, u64, u64), Verdict, Fast>,
    /// Per filesystem and subvolume id: alive (`None`: unknown).
    alive: DashMap<(u32, u64), Option<bool>, Fast>,
    /// Per filesystem and extent address: the extent's refs, as read once.
    pub(super) refs: DashMap<(u32, u64), Arc<bs::ExtentRefs>, Fast>,
    /// Per filesystem and extent address: a snapshot that holds it through
    /// a leaf it shares with the subvolume its one ref names
    /// ([`Verdict::HeldBy`]).
    pub(super) held_by: DashMap<(u32, u64), u64, Fast>,
}

impl Extents {
    /// Whether the tree search may be used, and can on filesystem `fs`
    /// (open at `dirfd`): the first caller syncs it and commits (below).
    pub(crate) fn tree_ready(&self, dirfd: BorrowedFd<'_>, fs: u32) -> bool {
        self.search && self.fs_ready(dirfd, fs)
    }

    /// Whether the tree search can be used on filesystem `fs`: the first
    /// caller syncs it and commits its running transaction (so that the extent tree
    /// holds every reference made before the scan: until a commit, new
    /// references wait as delayed refs, which the search cannot see) and
    /// tries one search; both are remembered.
    pub(super) fn fs_ready(&self, dirfd: BorrowedFd<'_>, fs: u32) -> bool {
        if let Some(ready) = self.btrfs.fs.get(&fs) {
            return *ready;
        }
        // The first caller commits, holding the entry; the others wait.
        *self.btrfs.fs.entry(fs).or_insert_with(|| {
            // Data not yet written back has no extent items (and inode
            // items wait in memory until a commit): written out first, as
            // `sync -f` does, so that the tree holds what `statx` says.
            if let Ok(n) = sdu_sys::btrfs::nodesize(dirfd) {
                self.btrfs.leaf.insert(fs, n);
            }
            rustix::fs::syncfs(dirfd).is_ok()
                && bs::commit(dirfd).is_ok()
                && bs::subvol_id(dirfd)
                    .and_then(|id| btrfs_refs::root_info(dirfd, id))
                    .is_ok_and(|r| r.is_some())
        })
    }

    /// The node size of filesystem `fs`, once it is ready for the search
    /// (0 if unknown: every search then ends on a call that finds nothing).
    pub(crate) fn node_size(&self, fs: u32) -> u32 {
        self.btrfs.leaf.get(&fs).map_or(0, |n| *n)
    }

    /// The subvolume of device `dev` (open at `dirfd`).
    pub(super) fn subvol(&self, dirfd: BorrowedFd<'_>, dev: u64) -> Option<Subvol> {
        if let Some(v) = self.btrfs.subvols.get(&dev) {
            return *v;
        }
        let v = bs::subvol_id(dirfd).ok().and_then(|id| {
            let r = btrfs_refs::root_info(dirfd, id).ok().flatten()?;
            // Unknown: no leaf taken for shared on that ground.
            let (kept_until, kept_by) = btrfs_refs::kept_until(dirfd, id).unwrap_or((0, 0));
            Some(Subvol {
                root: id,
                last_snapshot: r.last_snapshot,
                root_node: r.bytenr,
                kept_until,
                kept_by,
            })
        });
        self.btrfs.subvols.insert(dev, v);
        v
    }

    /// Whether the leaf at `p` is shared, for a file `at` of a subvolume
    /// whose root node is at `root_node` ([`btrfs_refs::up_from`]).
    pub(super) fn leaf(
        &self,
        fd: BorrowedFd<'_>,
        fs: u32,
        p: u64,
        at: FileAt,
        root_node: u64,
    ) -> Verdict {
        if let Some(v) = self.btrfs.leaves.get(&(fs, at.root, p)) {
            return *v;
        }
        let v = btrfs_refs::up_from(p, at, root_node, |b| btrfs_refs::block_refs(fd, b).ok());
        self.btrfs.leaves.insert((fs, at.root, p), v);
        v
    }

    /// Whether subvolume `tree` of filesystem `fs` exists and is not
    /// deleted (`None`: the root tree could not be read).
    pub(super) fn alive(&self, fd: BorrowedFd<'_>, fs: u32, tree: u64) -> Option<bool> {
        if let Some(v) = self.btrfs.alive.get(&(fs, tree)) {
            return *v;
        }
        let v = match btrfs_refs::root_info(fd, tree) {
            Ok(Some(r)) => Some(r.refs > 0),
            Ok(None) => Some(false),
            Err(_) => None,
        };
        self.btrfs.alive.insert((fs, tree), v);
        v
    }
}
