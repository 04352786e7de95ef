//! What the scan could verify: which extent spaces, nodes and inodes carry
//! a bound ([`Bound`]) on their Reclaimable. The walk and the coverage
//! check write it; the roll-up (`src/tree/bounds.rs`) reads it.

use super::NodeId;
use crate::figures::Bound;

/// What tells an exact Reclaimable from a bound: what the scan could
/// verify of each extent space, and the nodes whose own figures it could
/// not.
#[derive(Clone, Debug, Default)]
pub(crate) struct Exactness {
    /// Per extent space: whether a unit there frees what it counts.
    pub(crate) spaces: Vec<Bound>,
    /// A space past the end of `spaces`.
    pub(crate) other: Bound,
    /// Nodes whose own figures may differ from what deleting frees (a file
    /// whose extents could not be read; Btrfs data read without root), by
    /// id, sorted, each once.
    pub(crate) nodes: Vec<(NodeId, Bound)>,
    /// The same for inodes counted once through their links (a hardlinked
    /// file): by inode (`Link::inode`), sorted, each once. Its mark goes
    /// where its figures go: the lowest common ancestor of its links.
    pub(crate) inodes: Vec<(Inode, Bound)>,
    /// Units (by sweep index, sorted) of a Btrfs filesystem read as
    /// referenced and proven to hold no byte nobody references, that touch
    /// another unit on disk: each with its run of touching units (the
    /// run's first unit). FIEMAP cannot tell two extents laid end to end
    /// from one extent whose parts different files hold, so a unit freed
    /// without the rest of its run may free less than it counts.
    pub(crate) runs: Vec<(u32, u32)>,
    /// Units (by sweep index, sorted) of such a filesystem made of more
    /// than one segment: FIEMAP gives a file's extents laid end to end as
    /// one range, so such a unit may be several extents, and deleting some
    /// of its files, not all, may free some of them.
    pub(crate) split: Vec<u32>,
    /// The extent spaces holding some unit of `runs` or `split`, sorted,
    /// with the reasons those add.
    pub(crate) unit_spaces: Vec<(u32, Bound)>,
}

/// An inode as the links know it: namespace, device, number.
pub(crate) type Inode = (u32, u64, u64);

impl Exactness {
    /// Whether a unit in extent space `space` frees what it counts.
    pub(crate) fn space(&self, space: u32) -> Bound {
        self.spaces
            .get(space as usize)
            .copied()
            .unwrap_or(self.other)
    }

    /// Whether anything at all is a bound.
    pub(crate) fn any(&self) -> bool {
        !self.other.is_exact()
            || self.spaces.iter().any(|b| !b.is_exact())
            || !self.nodes.is_empty()
            || !self.inodes.is_empty()
            || !self.runs.is_empty()
            || !self.split.is_empty()
    }

    /// Whether unit `i` may be several extents.
    pub(crate) fn split(&self, i: usize) -> bool {
        u32::try_from(i).is_ok_and(|i| self.split.binary_search(&i).is_ok())
    }

    /// The run of touching units unit `i` belongs to, if any.
    pub(crate) fn run(&self, i: usize) -> Option<u32> {
        let i = u32::try_from(i).ok()?;
        (self.runs.binary_search_by_key(&i, |r| r.0).ok()).map(|k| self.runs[k].1)
    }

    /// What a saved scan keeps of space `space`, which holds no runs nor
    /// split units: its bound, and the reasons those of its units add.
    pub(crate) fn saved_space(&self, space: u32) -> Bound {
        let b = self.space(space);
        match self.unit_spaces.binary_search_by_key(&space, |s| s.0) {
            Ok(k) => b.with(self.unit_spaces[k].1),
            Err(_) => b,
        }
    }

    /// The walk's mark on inode `i`, if any.
    pub(crate) fn inode(&self, i: Inode) -> Option<Bound> {
        self.inodes
            .binary_search_by_key(&i, |m| m.0)
            .ok()
            .map(|k| self.inodes[k].1)
    }
}
