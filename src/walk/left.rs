//! What the walk left out of the scan: one record ([`Left`]) of every
//! entry it did not read in full, by the way it was left out
//! ([`LeftOut`]), which coverage (`crate::scan::coverage`) and the walk's marks
//! read, and nothing else (no option) stands for.
//!
//! Each decision to skip an entry returns a [`LeftOut`]; its one caller
//! records it ([`Ctx::left_out`]). What follows from each way is a match
//! on it with no catch-all ([`LeftOut::effect`], [`LeftOut::mark`]): a
//! new way does not compile until both are decided, and `--stats` prints
//! its count, which `tests/sdu/leftout.rs` holds a case for each of.

use std::collections::HashSet;
use std::sync::Mutex;

use super::RootSeen;
use super::counters::WAYS_LEFT_OUT;
use super::ctx::{Ctx, Local};
use crate::figures::Bound;
use crate::probe::Registry;
use crate::records::NodeId;

/// `BTRFS_FIRST_FREE_OBJECTID`: the root directory of every subvolume.
const BTRFS_ROOT_DIR: u64 = 256;

/// A way the walk leaves an entry out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LeftOut {
    /// `--exclude`, `-X`: a pattern matched its path.
    Pattern,
    /// `--exclude-caches`: a directory holding a valid `CACHEDIR.TAG`.
    CacheTag,
    /// `--exclude-kernfs`: the root of a kernel filesystem's mount.
    Kernfs,
    /// `-x`: the root of another mount.
    Mount,
    /// A directory that could not be opened, or listed in full.
    Unreadable,
    /// An entry that could not be stat-ed (or, under `-L`, reached
    /// through too many symlinks).
    NotStated,
    /// A file stat-ed but whose extents could not be read.
    NotMapped,
}

/// What leaving an entry out does to what the scan covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Data the entry holds may be shared with what the scan read, and
    /// was not seen: no filesystem is covered.
    Uncovers,
    /// A mount not entered: its filesystem is not reached there (nor any
    /// mount under it); what lies under its mount point on the filesystem
    /// below is hidden by it (`coverage`, "hides").
    NotEntered,
}

impl LeftOut {
    /// Every way, in the order `--stats` prints them.
    pub(crate) const ALL: [LeftOut; WAYS_LEFT_OUT] = [
        LeftOut::Pattern,
        LeftOut::CacheTag,
        LeftOut::Kernfs,
        LeftOut::Mount,
        LeftOut::Unreadable,
        LeftOut::NotStated,
        LeftOut::NotMapped,
    ];

    /// Position in [`LeftOut::ALL`].
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// What `--stats` calls it.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            LeftOut::Pattern => "excluded by a pattern",
            LeftOut::CacheTag => "cache directory (CACHEDIR.TAG)",
            LeftOut::Kernfs => "kernel filesystem",
            LeftOut::Mount => "mount not entered (-x)",
            LeftOut::Unreadable => "directory not read in full",
            LeftOut::NotStated => "entry not stat-ed",
            LeftOut::NotMapped => "file whose extents were not read",
        }
    }

    /// What it does to coverage.
    pub(crate) fn effect(self) -> Effect {
        match self {
            LeftOut::Pattern
            | LeftOut::CacheTag
            | LeftOut::Unreadable
            | LeftOut::NotStated
            | LeftOut::NotMapped => Effect::Uncovers,
            LeftOut::Kernfs | LeftOut::Mount => Effect::NotEntered,
        }
    }

    /// The mark it puts on the directory it was left out of (and so on
    /// every directory above), beside what coverage makes of it.
    ///
    /// What the user left out (a pattern, a cache, a mount, a kernel
    /// filesystem) is not part of the scan's figures, as in du: no mark.
    /// An entry that could not be read holds what its directory's figures
    /// do not count, and deleting the directory frees it too: at least.
    /// A file not mapped is marked where its figures are (`mapped`): they
    /// count its blocks as its own, and it may share them.
    pub(crate) fn mark(self) -> Bound {
        match self {
            LeftOut::Pattern | LeftOut::CacheTag | LeftOut::Kernfs | LeftOut::Mount => Bound::EXACT,
            LeftOut::Unreadable | LeftOut::NotStated => Bound::AT_LEAST,
            LeftOut::NotMapped => Bound::EXACT,
        }
    }
}

/// What the walk left out, by way, and the mounts it did not enter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Left {
    /// Entries left out, by [`LeftOut::index`].
    pub(crate) counts: [u64; WAYS_LEFT_OUT],
    /// The ids (`stx_mnt_id`) of the mounts not entered, sorted, each once.
    pub(crate) mounts: Vec<u64>,
    /// A mount point inside the roots lies on a Btrfs over something the
    /// walk did not see to be an empty directory (or the mount points could
    /// not be told): what lies under it, in a subvolume, was not seen.
    pub(crate) hidden: bool,
}

impl Left {
    /// The record of a walk that counted `counts` and did not enter the
    /// `mounts`; `under`: how many mount points inside its roots lie on a
    /// Btrfs (`None`: not known), and the directories under them (subvolume
    /// device, inode) that the tree showed empty. A mount point over
    /// anything else hides it ([`Left::hidden`]).
    pub(super) fn take(
        counts: [u64; WAYS_LEFT_OUT],
        mounts: Mutex<Vec<u64>>,
        (inside, empty): (Option<usize>, Mutex<Vec<(u64, u64)>>),
    ) -> Left {
        let mut mounts = mounts.into_inner().unwrap_or_else(|e| e.into_inner());
        mounts.sort_unstable();
        mounts.dedup();
        let mut empty = empty.into_inner().unwrap_or_else(|e| e.into_inner());
        empty.sort_unstable();
        empty.dedup();
        let hidden = inside.is_none_or(|n| empty.len() < n);
        Left {
            counts,
            mounts,
            hidden,
        }
    }

    /// Whether anything left out uncovers the scan ([`Effect::Uncovers`]).
    pub(crate) fn uncovers(&self) -> bool {
        LeftOut::ALL
            .iter()
            .any(|w| w.effect() == Effect::Uncovers && self.counts[w.index()] > 0)
    }

    /// Whether the mount `id` was left out, not entered.
    pub(crate) fn not_entered(&self, id: u64) -> bool {
        self.mounts.binary_search(&id).is_ok()
    }

    /// The Btrfs subvolumes (by filesystem, a registry index, and id: two
    /// filesystems number theirs alike) the roots of namespace `ns` hold whole:
    /// every subvolume their walk met, entered at its root directory (a
    /// PATH inside a subvolume holds only part of it), when nothing was
    /// excluded and every entry was read. A root inside another root counts
    /// apart, in a namespace of its own: what the outer root holds is not
    /// its own. `roots`: what the walk saw of each PATH. None when a mount
    /// point inside the roots may hide something ([`Left::hidden`]): the
    /// directory it is mounted on may hold files of a subvolume that the
    /// walk never saw.
    pub(crate) fn whole_subvolumes(
        &self,
        roots: &[Option<RootSeen>],
        registry: &Registry,
        ns: u32,
    ) -> HashSet<(u32, u64)> {
        if self.uncovers() || self.hidden {
            return HashSet::new();
        }
        let subvols: Vec<(u32, u64, u64)> = (registry.subvolumes_in(ns).into_iter())
            .filter_map(|(dev, s)| Some((registry.fs_index(dev)?, s.id, dev)))
            .collect();
        let mut held: HashSet<(u32, u64)> = subvols.iter().map(|s| (s.0, s.1)).collect();
        // The inodes the walk stat-ed, not what the names lead to now.
        for seen in roots.iter().flatten().filter(|r| r.ns == ns) {
            if !seen.dir || seen.ino != BTRFS_ROOT_DIR {
                if let Some(s) = subvols.iter().find(|s| s.2 == seen.dev) {
                    held.remove(&(s.0, s.1));
                }
            }
        }
        held
    }

    /// [`Left::whole_subvolumes`] for each root namespace of the walk.
    pub(crate) fn whole_by_namespace(
        &self,
        roots: &[Option<RootSeen>],
        registry: &Registry,
    ) -> Vec<(u32, HashSet<(u32, u64)>)> {
        (super::namespaces(roots).into_iter())
            .map(|(ns, _)| (ns, self.whole_subvolumes(roots, registry, ns)))
            .collect()
    }
}

impl Local {
    /// Counts an entry left out `why`.
    pub(super) fn count_left(&mut self, why: LeftOut) {
        self.counters.left_out[why.index()] += 1;
    }
}

impl Ctx<'_> {
    /// Records that an entry was left out `why`, from the directory of
    /// node `at`; `mnt`: its mount id, when it was stat-ed.
    pub(super) fn left_out(&self, local: &mut Local, why: LeftOut, at: NodeId, mnt: Option<u64>) {
        local.count_left(why);
        let b = why.mark();
        if !b.is_exact() {
            local.bound(at, b);
        }
        if let (Effect::NotEntered, Some(id)) = (why.effect(), mnt) {
            self.records
                .left_mounts
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_way_is_in_all_once_at_its_index() {
        for (i, w) in LeftOut::ALL.iter().enumerate() {
            assert_eq!(w.index(), i, "{w:?}");
        }
    }

    /// Every way either uncovers the scan or is a mount not entered, and
    /// only a way that is neither chosen nor seen by coverage elsewhere
    /// leaves the figures unmarked.
    #[test]
    fn every_way_reaches_coverage() {
        for w in LeftOut::ALL {
            let mut left = Left::default();
            left.counts[w.index()] = 1;
            match w.effect() {
                Effect::Uncovers => assert!(left.uncovers(), "{w:?}"),
                Effect::NotEntered => {
                    assert!(!left.uncovers(), "{w:?}");
                    left.mounts.push(7);
                    assert!(left.not_entered(7), "{w:?}");
                }
            }
        }
    }
}
