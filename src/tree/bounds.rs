//! Exact or a bound (`docs/figures.md`, "Exact or a bound"): the reasons
//! carried by each node's Reclaimable, from what the scan could verify
//! ([`Exactness`]), and how they roll up.
//!
//! A node's Reclaimable is a bound when a unit credited at it, or at a node
//! below it, lies in an extent space the scan could not verify, or when a
//! node at or below it was marked by the walk (a file whose extents could
//! not be read; Btrfs data read without root). The reasons are bits
//! ([`Bound`]), joined on the way up as the figures are summed.

use super::Tree;
use crate::figures::Bound;
use crate::records::{Exactness, Inode, NodeId, Nodes};

/// The reasons of the bounds credited at each node during the roll-up,
/// before they are rolled up themselves.
pub(super) struct Marks<'a> {
    /// What the scan could verify.
    exact: &'a Exactness,
    /// Per node, its reasons (empty when everything is exact: then no
    /// credit can make a bound).
    bounds: Vec<Bound>,
    /// The units of runs touching on disk (`Exactness::runs`) credited:
    /// each run and the node it was credited at.
    in_runs: Vec<(u32, NodeId)>,
    /// Where the files of a segment of a unit that may be several extents
    /// (`Exactness::split`) lie, all their links, and where the unit is
    /// credited (`NodeId::NONE`: nowhere).
    split: Vec<(NodeId, NodeId)>,
}

impl<'a> Marks<'a> {
    /// The marks of `len` nodes before crediting: those the walk made.
    pub(super) fn new(exact: &'a Exactness, len: usize) -> Marks<'a> {
        let mut m = Marks {
            exact,
            bounds: Vec::new(),
            in_runs: Vec::new(),
            split: Vec::new(),
        };
        if exact.any() {
            m.bounds = vec![Bound::EXACT; len];
            for &(id, b) in &exact.nodes {
                m.mark(id, b);
            }
        }
        m
    }

    /// Adds the walk's mark of the inode `i`, whose links' lowest common
    /// ancestor is `at`, if it has one.
    pub(super) fn inode(&mut self, at: NodeId, i: Inode) {
        if let Some(b) = self.exact.inode(i) {
            self.mark(at, b);
        }
    }

    /// Adds the reasons `b` to node `at`.
    fn mark(&mut self, at: NodeId, b: Bound) {
        if let Some(x) = self.bounds.get_mut(at.index()) {
            *x = x.with(b);
        }
    }

    /// Unit `i` of extent space `fs`, credited as reclaimable at `at` (or
    /// nowhere), whose files' links have their lowest common ancestors at
    /// `contained` (`NodeId::NONE`: some link outside the scan). That
    /// figure is a bound when the space could not be verified, at most when
    /// the unit touches another on disk (`Exactness::runs`); where the unit
    /// may be several extents (`Exactness::split`), every figure that holds
    /// every file of one of its segments and not the unit is at least.
    pub(super) fn unit(
        &mut self,
        (at, fs, i): (Option<NodeId>, u32, usize),
        (nodes, sweep, contained): (&Nodes, &crate::extents::Sweep, &[NodeId]),
    ) {
        if let Some(at) = at {
            let b = self.exact.space(fs);
            if !b.is_exact() {
                self.mark(at, b);
            }
            if let Some(run) = self.exact.run(i) {
                self.in_runs.push((run, at));
            }
        }
        if !self.exact.split(i) {
            return;
        }
        let to = at.unwrap_or(NodeId::NONE);
        for s in sweep.unit(i).segments {
            let lca = (sweep.segment(s).files.iter()).try_fold(NodeId::NONE, |a, &f| {
                let n = contained.get(f as usize).copied().unwrap_or(NodeId::NONE);
                match (n.is_none(), a.is_none()) {
                    (true, _) => None,
                    (false, true) => Some(n),
                    (false, false) => Some(super::acc::lca(nodes, a, n)),
                }
            });
            if let Some(from) = lca.filter(|&n| !n.is_none() && n != to) {
                self.split.push((from, to));
            }
        }
    }

    /// "At least" on each node from `from` up to, not including, `to`, for
    /// each pair of `split`. Applied after the roll-up, which would carry it
    /// above `to`, where the unit is freed whole.
    fn mark_split(&mut self, nodes: &Nodes, bounds: &mut [Bound]) {
        for (from, to) in std::mem::take(&mut self.split) {
            let mut n = from;
            while !n.is_none() && n != to {
                if let Some(x) = bounds.get_mut(n.index()) {
                    *x = x.with(Bound::AT_LEAST);
                }
                n = nodes.parent(n);
            }
        }
    }

    /// A unit of a run touching on disk frees at most what it counts
    /// unless every unit of its run is freed with it: "at most" on each
    /// node from where it is credited up to, not including, the lowest
    /// common ancestor of where its run's units are (to the top when some
    /// unit of it is credited nowhere). Applied after the roll-up, which
    /// would carry it above that ancestor, where the run is freed whole.
    fn mark_runs(&mut self, nodes: &Nodes, bounds: &mut [Bound]) {
        let mut in_runs = std::mem::take(&mut self.in_runs);
        in_runs.sort_unstable_by_key(|r| (r.0, r.1));
        let runs = &self.exact.runs;
        for group in in_runs.chunk_by(|a, b| a.0 == b.0) {
            let run = group[0].0;
            let first = runs.partition_point(|r| r.0 < run);
            let size = runs[first..].iter().take_while(|r| r.1 == run).count();
            let whole = (group.len() == size)
                .then(|| (group.iter().map(|g| g.1)).reduce(|a, b| super::acc::lca(nodes, a, b)))
                .flatten();
            for &(_, at) in group {
                let mut n = at;
                while !n.is_none() && Some(n) != whole {
                    if let Some(x) = bounds.get_mut(n.index()) {
                        *x = x.with(Bound::AT_MOST);
                    }
                    n = nodes.parent(n);
                }
            }
        }
    }

    /// A figure holds what is credited below it: so do its reasons. Each
    /// node's reasons join its parent's (a parent's id is smaller than its
    /// children's, so one pass from the highest id suffices). Empty when
    /// none is left a bound.
    pub(super) fn roll_up(&mut self, nodes: &Nodes) -> Vec<Bound> {
        let mut bounds = std::mem::take(&mut self.bounds);
        if bounds.is_empty() {
            return bounds;
        }
        for id in nodes.ids().skip(1).rev() {
            let p = nodes.parent(id);
            if !p.is_none() {
                bounds[p.index()] = bounds[p.index()].with(bounds[id.index()]);
            }
        }
        self.mark_runs(nodes, &mut bounds);
        self.mark_split(nodes, &mut bounds);
        if bounds.iter().all(|b| b.is_exact()) {
            bounds = Vec::new();
        }
        bounds
    }
}

impl Tree {
    /// Whether the Reclaimable of node `id` is exact, or a bound.
    pub fn bound(&self, id: NodeId) -> Bound {
        self.bounds.get(id.index()).copied().unwrap_or_default()
    }

    /// Whether the `-c` total's Reclaimable is exact, or a bound: the
    /// top's. A root counted apart lies inside another root, whose files
    /// the total holds; what was credited to it apart is not the total's.
    pub fn grand_bound(&self) -> Bound {
        self.bound(NodeId::TOP)
    }

    /// The reasons of every bound in the tree (exact: none).
    pub(crate) fn any_bound(&self) -> Bound {
        self.bounds.iter().fold(Bound::EXACT, |a, &b| a.with(b))
    }
}
