//! What the tree search learns of each Btrfs filesystem and subvolume
//! once, and keeps for the scan.

use std::cell::Cell;
use std::os::fd::BorrowedFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use dashmap::DashMap;
use sdu_sys::btrfs::{self as bs, Lineage, Subvolumes};

use super::{Extents, Fast};
use crate::extents::btrfs_refs::{self, FileAt, PackedRefs, Verdict};

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

/// A number no other [`BtrfsState`] of the process has: what a thread's
/// last answers ([`LAST`]) are tied to, so that a later scan (the
/// browser's rescan, a test's next) never takes another's.
#[derive(Debug)]
struct StateId(u64);

impl Default for StateId {
    fn default() -> StateId {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        StateId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// A thread's last answers, by its state: the filesystem found ready,
/// and the subvolume of the last device asked. Both are fixed once known,
/// and nearly every file asks the one before it asked: answered here,
/// without the shared maps, whose locks both threads would write.
#[derive(Clone, Copy)]
struct Last {
    state: u64,
    ready: Option<u32>,
    subvol: Option<(u64, Option<Subvol>)>,
}

thread_local! {
    static LAST: Cell<Last> = const {
        Cell::new(Last {
            state: 0,
            ready: None,
            subvol: None,
        })
    };
}

/// This thread's last answers for `state` (none if it last asked another).
fn last(state: &StateId) -> Last {
    let l = LAST.get();
    match l.state == state.0 {
        true => l,
        false => Last {
            state: state.0,
            ready: None,
            subvol: None,
        },
    }
}

/// What the tree search learns once and keeps.
#[derive(Debug, Default)]
pub(super) struct BtrfsState {
    id: StateId,
    /// Per filesystem (registry index): its transaction committed and the
    /// search permitted (true), or not (false).
    fs: DashMap<u32, bool, Fast>,
    /// Per filesystem ready for the search: its node size.
    leaf: DashMap<u32, u32, Fast>,
    /// Per filesystem: its root tree, read once (`None`: it could not be).
    subvolumes: DashMap<u32, Option<Arc<Subvolumes>>, Fast>,
    /// Per device (a subvolume): its id, `last_snapshot`, root node and
    /// the transaction before which its leaves are shared with a snapshot
    /// ([`Subvolumes::kept_until`]).
    subvols: DashMap<u64, Option<Subvol>, Fast>,
    /// Per filesystem, subvolume and leaf: whether the leaf is shared.
    leaves: DashMap<(u32, u64, u64), Verdict, Fast>,
    /// Per filesystem and extent address: the extent's refs, as read once.
    pub(super) refs: DashMap<(u32, u64), PackedRefs, Fast>,
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
        let mut l = last(&self.btrfs.id);
        if l.ready == Some(fs) {
            return true;
        }
        let ready = self.fs_ready_shared(dirfd, fs);
        if ready {
            l.ready = Some(fs);
            LAST.set(l);
        }
        ready
    }

    /// [`Self::fs_ready`] from the map all threads share.
    fn fs_ready_shared(&self, dirfd: BorrowedFd<'_>, fs: u32) -> bool {
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
                && bs::subvol_id(dirfd).is_ok_and(|id| {
                    self.subvolumes(dirfd, fs)
                        .is_some_and(|s| s.get(id).is_some())
                })
        })
    }

    /// The subvolumes of filesystem `fs` (open at `fd`), its root tree read
    /// by the first caller (after [`Self::fs_ready`]'s commit, when the
    /// scan searches it); `None` if it cannot be read (not root).
    pub(crate) fn subvolumes(&self, fd: BorrowedFd<'_>, fs: u32) -> Option<Arc<Subvolumes>> {
        if let Some(s) = self.btrfs.subvolumes.get(&fs) {
            return s.value().clone();
        }
        // The first caller reads, holding the entry; the others wait.
        (self.btrfs.subvolumes.entry(fs))
            .or_insert_with(|| Subvolumes::read(fd).ok().map(Arc::new))
            .value()
            .clone()
    }

    /// The lineage of the subvolume open at `fd`, on filesystem `fs`
    /// ([`Subvolumes::lineage`]).
    pub(crate) fn lineage(&self, fd: BorrowedFd<'_>, fs: u32) -> Option<Lineage> {
        let id = bs::subvol_id(fd).ok()?;
        self.subvolumes(fd, fs)?.lineage(id)
    }

    /// The node size of filesystem `fs`, once it is ready for the search
    /// (0 if unknown: every search then ends on a call that finds nothing).
    pub(crate) fn node_size(&self, fs: u32) -> u32 {
        self.btrfs.leaf.get(&fs).map_or(0, |n| *n)
    }

    /// The subvolume of device `dev` (open at `dirfd`, on filesystem `fs`).
    pub(super) fn subvol(&self, dirfd: BorrowedFd<'_>, fs: u32, dev: u64) -> Option<Subvol> {
        let mut l = last(&self.btrfs.id);
        if let Some((d, v)) = l.subvol
            && d == dev
        {
            return v;
        }
        let v = self.subvol_shared(dirfd, fs, dev);
        l.subvol = Some((dev, v));
        LAST.set(l);
        v
    }

    /// [`Self::subvol`] from the map all threads share.
    fn subvol_shared(&self, dirfd: BorrowedFd<'_>, fs: u32, dev: u64) -> Option<Subvol> {
        if let Some(v) = self.btrfs.subvols.get(&dev) {
            return *v;
        }
        let v = bs::subvol_id(dirfd).ok().and_then(|id| {
            let subvolumes = self.subvolumes(dirfd, fs)?;
            let r = subvolumes.get(id)?;
            let (kept_until, kept_by) = subvolumes.kept_until(id);
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
        Some(self.subvolumes(fd, fs)?.alive(tree))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_threads_last_answers_are_its_states_alone() {
        let (a, b) = (StateId::default(), StateId::default());
        assert_ne!(a.0, b.0);
        let sv = Subvol {
            root: 256,
            last_snapshot: 7,
            root_node: 4096,
            kept_until: 0,
            kept_by: 0,
        };
        LAST.set(Last {
            ready: Some(3),
            subvol: Some((42, Some(sv))),
            ..last(&a)
        });
        let got = last(&a);
        assert_eq!(got.ready, Some(3));
        assert!(matches!(got.subvol, Some((42, Some(s))) if s.root == 256));
        // Another state (a later scan) finds nothing of the first's.
        let other = last(&b);
        assert_eq!((other.state, other.ready), (b.0, None));
        assert!(other.subvol.is_none());
    }
}
