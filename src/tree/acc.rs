//! The rolled-up figures while the roll-up computes them (a slot for
//! every node but the leaves, and for a leaf something is credited to),
//! their renumbering into ranks, and the child lists.

use super::ranks::Ranks;
use crate::figures::Stats;
use crate::records::{NO_NODE, Nodes, StatsTable, TOP};

/// A node's rolled-up figures are its own (a leaf credited nothing), while
/// they are computed.
pub(super) const OWN: u32 = u32::MAX;

/// The rolled-up figures while they are computed: a slot for every node
/// but the `-a` leaves, and one for a leaf when something is credited to
/// it.
pub(super) struct Acc {
    pub(crate) slot: Vec<u32>,
    pub(crate) full: Vec<Stats>,
    /// Reclaimable bytes credited at a slot's node and, after the roll-up,
    /// at every ancestor.
    pub(crate) at: Vec<u64>,
}

impl Acc {
    /// Every node but the leaves, with its own figures, slots in id order.
    pub(crate) fn new(nodes: &Nodes) -> Acc {
        let n = nodes.len();
        let dirs = (0..n).filter(|&i| !nodes.leaf(i)).count();
        let mut acc = Acc {
            slot: Vec::with_capacity(n),
            full: Vec::with_capacity(dirs),
            at: Vec::new(),
        };
        for i in 0..n {
            if nodes.leaf(i) {
                acc.slot.push(OWN);
            } else {
                acc.slot.push(acc.full.len() as u32);
                acc.full.push(nodes.own(i));
            }
        }
        acc
    }

    /// The slot of node `i`, made when it has none.
    pub(crate) fn slot_of(&mut self, nodes: &Nodes, i: usize) -> usize {
        if self.slot[i] == OWN {
            assert!(
                self.full.len() < OWN as usize,
                "more than 4 billion entries"
            );
            self.slot[i] = self.full.len() as u32;
            self.full.push(nodes.own(i));
        }
        self.slot[i] as usize
    }

    /// The slots renumbered in id order, as ranks, and the figures in that
    /// order.
    pub(crate) fn ranked(self) -> (Ranks, StatsTable) {
        let Acc { slot, mut full, .. } = self;
        let mut dest = vec![0u32; full.len()];
        let mut r = 0;
        for &s in &slot {
            if s != OWN {
                dest[s as usize] = r;
                r += 1;
            }
        }
        let ranks = Ranks::new(slot.len(), |i| slot[i] != OWN);
        drop(slot);
        // Each figure to its rank, in place, cycle by cycle.
        for s in 0..full.len() {
            while dest[s] as usize != s {
                let d = dest[s] as usize;
                full.swap(s, d);
                dest.swap(s, d);
            }
        }
        let mut table = StatsTable::default();
        for s in &full {
            table.push(s);
        }
        table.shrink_to_fit();
        (ranks, table)
    }

    /// Credits `bytes` as reclaimable at node `i`.
    pub(crate) fn reclaim_at(&mut self, nodes: &Nodes, i: usize, bytes: u64) {
        let s = self.slot_of(nodes, i);
        if self.at.len() < self.full.len() {
            self.at.resize(self.full.len(), 0);
        }
        self.at[s] = self.at[s].saturating_add(bytes);
    }
}

/// Node `i`'s parent as the child lists see it: a root nested in another
/// root is a top of its own (parent NO_NODE) but is listed among the
/// roots, in the order given.
pub(super) fn parent_or_top(nodes: &Nodes, i: usize) -> u32 {
    match nodes.parent(i) {
        NO_NODE => TOP,
        p => p,
    }
}

/// Builds the child lists, indexed by rank (`m` ranks): siblings sorted by
/// name (`du_order`: in du's order, getdents) under the nodes less than
/// `sorted_depth` deep (all when `None`), the roots in the order given.
pub(super) fn children(
    nodes: &Nodes,
    ranks: &Ranks,
    m: usize,
    du_order: bool,
    sorted_depth: Option<u32>,
) -> (Vec<u32>, Vec<u32>) {
    let n = nodes.len();
    let rank = |i: usize| ranks.get(i).expect("every parent has a rank") as usize;
    // Counts at `r + 2`, prefix sums, then placing at `start[r + 1]`
    // leaves `start[r]..start[r + 1]` as rank `r`'s range, ids ascending.
    let mut start = vec![0u32; m + 2];
    for i in 1..n {
        start[rank(parent_or_top(nodes, i) as usize) + 2] += 1;
    }
    for r in 0..=m {
        start[r + 1] += start[r];
    }
    let mut ids = vec![0u32; start[m + 1] as usize];
    for i in 1..n {
        let r = rank(parent_or_top(nodes, i) as usize) + 1;
        ids[start[r] as usize] = i as u32;
        start[r] += 1;
    }
    start.pop();
    // The roots (children of TOP, rank 0) stay in the order given.
    for r in 1..m {
        let (a, b) = (start[r] as usize, start[r + 1] as usize);
        // Siblings share a depth, one more than their parent's.
        let listed = || sorted_depth.is_none_or(|d| nodes.depth(ids[a] as usize) <= d);
        if b - a > 1 && listed() {
            if du_order {
                ids[a..b].sort_unstable_by_key(|&x| nodes.order(x as usize));
            } else {
                ids[a..b]
                    .sort_unstable_by(|&x, &y| nodes.name(x as usize).cmp(nodes.name(y as usize)));
            }
        }
    }
    (start, ids)
}
