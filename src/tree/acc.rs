//! The rolled-up figures while the roll-up computes them (a slot for
//! every node but the leaves, and for a leaf something is credited to),
//! their renumbering into ranks, the child lists, and the lowest common
//! ancestor of two nodes.

use super::ranks::Ranks;
use crate::figures::Stats;
use crate::records::{NodeId, Nodes, StatsTable};

/// A node's rolled-up figures are its own (a leaf credited nothing), while
/// they are computed.
pub(super) const OWN: u32 = u32::MAX;

/// The rolled-up figures while they are computed: a slot for every node
/// but the `-a` leaves, and one for a leaf when something is credited to
/// it.
///
/// Made narrow: each slot holds only the shared bytes credited to it
/// (8 bytes, not a whole [`Stats`]'s 72), while the sweep is credited;
/// [`Acc::widen`] then gives each slot its node's own figures, rolled up,
/// once the sweep is given back, so that the two are never held together.
pub(super) struct Acc {
    /// By node: its slot, or [`OWN`].
    pub(crate) slot: Vec<u32>,
    /// By slot, once widened: the figures.
    pub(crate) full: Vec<Stats>,
    /// By slot, until widened: the shared bytes credited.
    shared: Vec<u64>,
    /// Whether [`Acc::widen`] was called.
    wide: bool,
    /// The leaves given a slot, in the order their slots were made (after
    /// those of the nodes that are not leaves, in id order).
    leaves: Vec<NodeId>,
    /// Reclaimable bytes credited at a slot's node and, after the roll-up,
    /// at every ancestor.
    pub(crate) at: Vec<u64>,
    /// By node, once a leaf without a slot is credited shared bytes: the
    /// bytes, 4 bytes a node rather than a slot's 72 (the caller credits a
    /// leaf once per segment): with `-a` on snapshots or reflinked copies
    /// every file is a leaf credited its shared bytes and nothing else. A
    /// leaf credited 4 GiB or more is given a slot instead.
    pub(crate) light: Vec<u32>,
}

impl Acc {
    /// A narrow slot for every node but the leaves, in id order.
    pub(crate) fn new(nodes: &Nodes) -> Acc {
        let mut slot = Vec::with_capacity(nodes.len());
        let mut dirs = 0;
        for i in nodes.ids() {
            if nodes.leaf(i) {
                slot.push(OWN);
            } else {
                slot.push(dirs);
                dirs += 1;
            }
        }
        Acc {
            slot,
            full: Vec::new(),
            shared: vec![0; dirs as usize],
            wide: false,
            leaves: Vec::new(),
            at: Vec::new(),
            light: Vec::new(),
        }
    }

    /// The slots made.
    pub(crate) fn slots(&self) -> usize {
        if self.wide {
            self.full.len()
        } else {
            self.shared.len()
        }
    }

    /// Gives every slot its node's own figures, those of the nodes that
    /// are not leaves rolled up (a parent is always created before its
    /// children, so its id is smaller: one pass from the highest id; a
    /// leaf's figures are already in its parent's own), plus the shared
    /// bytes credited to it.
    pub(crate) fn widen(&mut self, nodes: &Nodes) {
        assert!(!self.wide, "widened twice");
        let dirs = self.slots() - self.leaves.len();
        let mut full = Vec::with_capacity(self.slots());
        full.extend(
            nodes
                .ids()
                .filter(|&i| !nodes.leaf(i))
                .map(|i| nodes.own(i)),
        );
        debug_assert_eq!(full.len(), dirs);
        full.extend(self.leaves.iter().map(|&i| nodes.own(i)));
        for id in nodes.ids().skip(1).rev() {
            let p = nodes.parent(id);
            if !nodes.leaf(id) && !p.is_none() {
                let f = full[self.slot[id.index()] as usize];
                full[self.slot[p.index()] as usize] += f;
            }
        }
        for (f, s) in full.iter_mut().zip(std::mem::take(&mut self.shared)) {
            f.shared = f.shared.saturating_add(s);
        }
        self.leaves = Vec::new();
        self.full = full;
        self.wide = true;
    }

    /// The slot of node `id`, made when it has none.
    pub(crate) fn slot_of(&mut self, nodes: &Nodes, id: NodeId) -> usize {
        let i = id.index();
        if self.slot[i] == OWN {
            let n = self.slots();
            assert!(n < OWN as usize, "more than 4 billion entries");
            self.slot[i] = n as u32;
            if self.wide {
                if self.full.len() == self.full.capacity() {
                    // An eighth more at a time, not twice as much: these
                    // slots are the few leaves something is credited to.
                    self.full.reserve_exact(self.full.len() / 8 + 64);
                }
                self.full.push(nodes.own(id));
            } else {
                self.shared.push(0);
                self.leaves.push(id);
            }
        }
        self.slot[i] as usize
    }

    /// By node, its slot; by slot, until widened, the shared bytes
    /// credited: to credit them without making slots.
    pub(crate) fn narrow(&mut self) -> (&[u32], &mut [u64]) {
        assert!(!self.wide, "credited narrow after widening");
        (&self.slot, &mut self.shared)
    }

    /// Credits `bytes` as shared at slot `s`.
    pub(crate) fn credit_shared(&mut self, s: usize, bytes: u64) {
        let x = if self.wide {
            &mut self.full[s].shared
        } else {
            &mut self.shared[s]
        };
        *x = x.saturating_add(bytes);
    }

    /// Credits `bytes` as shared to leaf `id`, which has no slot.
    pub(crate) fn credit_light(&mut self, nodes: &Nodes, id: NodeId, bytes: u64) {
        if self.light.is_empty() {
            self.light = vec![0; nodes.len()];
        }
        let l = &mut self.light[id.index()];
        let sum = u32::try_from(bytes).ok().and_then(|b| l.checked_add(b));
        match sum {
            Some(sum) => *l = sum,
            None => {
                let s = self.slot_of(nodes, id);
                self.credit_shared(s, bytes);
            }
        }
    }

    /// The nodes with a slot or a light credit renumbered in id order, as
    /// ranks, and their figures in that order.
    pub(crate) fn ranked(self, nodes: &Nodes) -> (Ranks, StatsTable) {
        let Acc {
            slot,
            mut full,
            light,
            ..
        } = self;
        let light_of = |i: usize| light.get(i).map_or(0, |&l| u64::from(l));
        // A leaf's figures with its light credit, when it has no slot.
        let lit = |i: usize| {
            let mut s = nodes.own(NodeId::new(i));
            s.shared = s.shared.saturating_add(light_of(i));
            s
        };
        let ranked = |i: usize| slot[i] != OWN || light_of(i) > 0;
        let mut dest = vec![0u32; full.len()];
        let mut wide = full.iter().filter(|s| !StatsTable::fits(s)).count();
        let mut r = 0;
        for (i, &s) in slot.iter().enumerate() {
            if s != OWN {
                dest[s as usize] = r;
                full[s as usize].shared = full[s as usize].shared.saturating_add(light_of(i));
                r += 1;
            } else if light_of(i) > 0 {
                wide += usize::from(!StatsTable::fits(&lit(i)));
                r += 1;
            }
        }
        let ranks = Ranks::new(slot.len(), ranked);
        let mut table = StatsTable::filled(r as usize, wide);
        // The light credits from the last node back, given up an eighth at
        // a time as the table takes them (4 and 16 bytes a node).
        let mut light = light;
        let mut kept = light.len();
        for (i, &s) in slot.iter().enumerate().rev() {
            let l = light.get(i).map_or(0, |&l| u64::from(l));
            if s != OWN || l > 0 {
                r -= 1;
            }
            if s == OWN && l > 0 {
                let mut f = nodes.own(NodeId::new(i));
                f.shared = f.shared.saturating_add(l);
                table.set(r as usize, &f);
            }
            if i < light.len() && kept - i > kept / 8 {
                light.truncate(i);
                light.shrink_to_fit();
                kept = i;
            }
        }
        // From the last slot back, the figures given up an eighth at a time
        // as the table takes them: both are as large as the directories
        // (and, with -a, the files credited something), and are not held
        // whole together.
        let mut kept = full.len();
        while let Some(s) = full.pop() {
            table.set(dest[full.len()] as usize, &s);
            if kept - full.len() > kept / 8 {
                full.shrink_to_fit();
                kept = full.len();
            }
        }
        table.shrink_to_fit();
        (ranks, table)
    }

    /// Credits `bytes` as reclaimable at node `id`.
    pub(crate) fn reclaim_at(&mut self, nodes: &Nodes, id: NodeId, bytes: u64) {
        let s = self.slot_of(nodes, id);
        if self.at.len() <= s {
            self.at.resize(self.slots(), 0);
        }
        self.at[s] = self.at[s].saturating_add(bytes);
    }
}

/// Node `id`'s parent as the child lists see it: a root nested in another
/// root is a top of its own (parent [`NodeId::NONE`]) but is listed among
/// the roots, in the order given.
pub(super) fn parent_or_top(nodes: &Nodes, id: NodeId) -> NodeId {
    match nodes.parent(id) {
        NodeId::NONE => NodeId::TOP,
        p => p,
    }
}

/// The lowest common ancestor of two nodes ([`NodeId::TOP`] for nodes
/// under different tops).
///
/// A parent's id is below its children's (the walk and saved scans number
/// them so) and the top's is 0, so the larger of two ids is never an
/// ancestor of the other: climbing from it stays at or below their lowest
/// common ancestor, one parent a step, with no depth to count first. A
/// parent whose id is not below its child's (a corrupt record) or none (a
/// root nested in another, a top of its own) counts as the top, so that
/// the climb always ends.
pub(super) fn lca(nodes: &Nodes, mut a: NodeId, mut b: NodeId) -> NodeId {
    let up = |x: NodeId| match nodes.parent(x) {
        p if p < x => p,
        _ => NodeId::TOP,
    };
    while a != b {
        if a > b {
            a = up(a);
        } else {
            b = up(b);
        }
    }
    a
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
) -> (Vec<u32>, Vec<NodeId>) {
    let rank = |id: NodeId| ranks.get(id.index()).expect("every parent has a rank") as usize;
    // Counts at `r + 2`, prefix sums, then placing at `start[r + 1]`
    // leaves `start[r]..start[r + 1]` as rank `r`'s range, ids ascending.
    let mut start = vec![0u32; m + 2];
    for i in nodes.ids().skip(1) {
        start[rank(parent_or_top(nodes, i)) + 2] += 1;
    }
    for r in 0..=m {
        start[r + 1] += start[r];
    }
    let mut ids = vec![NodeId::TOP; start[m + 1] as usize];
    for i in nodes.ids().skip(1) {
        let r = rank(parent_or_top(nodes, i)) + 1;
        ids[start[r] as usize] = i;
        start[r] += 1;
    }
    start.pop();
    // Every node's depth, as `Nodes::depth` gives it, in one pass (parents
    // have smaller ids) rather than a climb per directory, which on a deep
    // tree costs the depth each time.
    let depths: Vec<u32> = match sorted_depth {
        None => Vec::new(),
        Some(_) => {
            let mut d = vec![0u32; nodes.len()];
            for i in nodes.ids() {
                let p = nodes.parent(i);
                if p != NodeId::TOP && !p.is_none() && p < i {
                    d[i.index()] = d[p.index()] + 1;
                }
            }
            d
        }
    };
    // The roots (children of TOP, rank 0) in the order given: a root
    // inside another may be walked after the roots that follow it.
    let (a, b) = (start[0] as usize, start[1] as usize);
    ids[a..b].sort_by_key(|&x| nodes.order(x));
    for r in 1..m {
        let (a, b) = (start[r] as usize, start[r + 1] as usize);
        // Siblings share a depth, one more than their parent's.
        let listed = || sorted_depth.is_none_or(|d| depths[ids[a].index()] <= d);
        if b - a > 1 && listed() {
            if du_order {
                ids[a..b].sort_unstable_by_key(|&x| nodes.order(x));
            } else {
                ids[a..b].sort_unstable_by(|&x, &y| nodes.name(x).cmp(nodes.name(y)));
            }
        }
    }
    (start, ids)
}
