//! What deleting each prefix of a list of entries frees, in one pass
//! ([`Reclaim::frees_prefixes`]): `--snapshots`' "frees with older", where
//! a pass for each prefix made the table cost a pass over the scan's sets
//! per snapshot.
//!
//! The prefixes grow, so each thing that can be freed (a node's own bytes,
//! an inode, a file, a unit) is freed from some prefix on: the first that
//! holds every node it needs. A node is inside prefix `k` when one of the
//! first `k` entries is it or above it; so each node gets the first such
//! `k` ([`OUT`] for none), a list of nodes the largest of theirs, and each
//! figure is added from there on. A bound that holds only while something
//! is not freed yet (a unit freed in part of its run, a split unit's
//! segment freed before the unit) holds over a range of prefixes. The
//! sums are kept as differences and added up once: [`Reclaim::frees`]'
//! answer for every prefix, bound included.

use super::{FileNodes, Frees, Reclaim, span};
use crate::figures::Bound;
use crate::records::{Copies, NodeId, Nodes};

/// In no prefix.
const OUT: u32 = u32::MAX;

/// The figures of prefixes `1..=n`, as differences: what starts at a
/// prefix, less what stops there.
struct Series {
    bytes: Vec<i128>,
    at_most: Vec<i64>,
    at_least: Vec<i64>,
}

impl Series {
    fn new(n: usize) -> Series {
        Series {
            bytes: vec![0; n + 2],
            at_most: vec![0; n + 2],
            at_least: vec![0; n + 2],
        }
    }

    /// The prefixes `from..to` as indices (`None`: none of them).
    fn range(&self, from: u32, to: u32) -> Option<(usize, usize)> {
        let last = self.bytes.len() - 2;
        let (a, b) = (from as usize, (to as usize).min(last + 1));
        (from != OUT && a < b && a <= last).then_some((a, b))
    }

    /// `bytes` freed by the prefixes `from..to` (`to` [`OUT`]: on to the
    /// last).
    fn add(&mut self, from: u32, to: u32, bytes: u64) {
        if let Some((a, b)) = self.range(from, to) {
            self.bytes[a] += i128::from(bytes);
            self.bytes[b] -= i128::from(bytes);
        }
    }

    /// Bound `bound` on the prefixes `from..to`.
    fn bound(&mut self, from: u32, to: u32, bound: Bound) {
        if let Some((a, b)) = self.range(from, to) {
            for (on, d) in [
                (bound.at_most(), &mut self.at_most),
                (bound.at_least(), &mut self.at_least),
            ] {
                if on {
                    d[a] += 1;
                    d[b] -= 1;
                }
            }
        }
    }

    fn frees(self) -> Vec<Frees> {
        let n = self.bytes.len() - 2;
        let (mut bytes, mut most, mut least) = (0i128, 0i64, 0i64);
        (1..=n)
            .map(|k| {
                bytes += self.bytes[k];
                most += self.at_most[k];
                least += self.at_least[k];
                let mut bound = Bound::EXACT;
                if most > 0 {
                    bound = bound.with(Bound::AT_MOST);
                }
                if least > 0 {
                    bound = bound.with(Bound::AT_LEAST);
                }
                Frees {
                    bytes: u64::try_from(bytes.max(0)).unwrap_or(u64::MAX),
                    bound,
                }
            })
            .collect()
    }
}

impl Reclaim {
    /// What deleting `marked[..k]` frees, for each `k` from 1 to its
    /// length: [`Reclaim::frees`] of each prefix, in one pass.
    pub(crate) fn frees_prefixes(
        &self,
        (nodes, copies): (&Nodes, &Copies),
        marked: &[NodeId],
    ) -> Vec<Frees> {
        let n = nodes.len();
        // The first prefix each node is inside; parents have smaller ids
        // than their children.
        let mut first = vec![OUT; n];
        for (i, &m) in marked.iter().enumerate() {
            if let Some(f) = first.get_mut(m.index()) {
                *f = (*f).min(u32::try_from(i + 1).unwrap_or(OUT));
            }
        }
        for id in nodes.ids().skip(1) {
            let p = nodes.parent(id);
            if !p.is_none() && first[p.index()] < first[id.index()] {
                first[id.index()] = first[p.index()];
            }
        }
        let from = |xs: &[NodeId]| xs.iter().map(|&x| first[x.index()]).fold(1, u32::max);
        let mut s = Series::new(marked.len());
        for &(id, b) in &self.node_bounds {
            s.bound(first.get(id.index()).copied().unwrap_or(OUT), OUT, b);
        }
        // A -a leaf's own figures are also its directory's: counted there
        // once the directory is inside too.
        for id in nodes.ids() {
            let p = nodes.parent(id);
            let until = match nodes.leaf(id) && !p.is_none() {
                true => first[p.index()],
                false => OUT,
            };
            s.add(first[id.index()], until, nodes.own_reclaimable(id));
        }
        for (k, &(bytes, a, b)) in self.inodes.iter().enumerate() {
            let t = from(&self.inode_nodes[span((a, b))]);
            s.add(t, OUT, bytes);
            if let Some(&m) = self.inode_bounds.get(k) {
                s.bound(t, OUT, m);
            }
        }
        // A file is freed when its links and its copies all are.
        let sets_from = copies.sets_held_from(|x| first[x.index()]);
        let file_from: Vec<u32> = self.per_file(copies, |links, sets| {
            let own = match links {
                FileNodes::Never => OUT,
                FileNodes::One(n) => first[n.index()],
                FileNodes::Several(ns) => from(ns),
            };
            (sets.iter()).fold(own, |t, &x| t.max(sets_from[x as usize]))
        });
        let files_from =
            |fs: &[u32]| (fs.iter()).fold(1, |t: u32, &f| t.max(file_from[f as usize]));
        let unit_from: Vec<u32> = (self.units.iter())
            .map(|&(_, a, b)| files_from(&self.unit_files[span((a, b))]))
            .collect();
        // A run of touching units is freed whole from the prefix that frees
        // its last unit, never if one is held outside.
        let mut run_from: Vec<u32> = (self.runs_held.iter())
            .map(|&h| if h { OUT } else { 1 })
            .collect();
        for (&run, &u) in self.unit_runs.iter().zip(&unit_from) {
            if let Some(r) = run_from.get_mut(run as usize) {
                *r = (*r).max(u);
            }
        }
        for (i, &(bytes, a, b)) in self.units.iter().enumerate() {
            let t = unit_from[i];
            s.add(t, OUT, bytes);
            if let Some(&r) = (self.unit_runs.get(i)).and_then(|&k| run_from.get(k as usize)) {
                s.bound(t, r, Bound::AT_MOST);
            }
            if let Some(&m) = self.unit_bounds.get(i) {
                s.bound(t, OUT, m);
            }
            for &f in &self.unit_files[span((a, b))] {
                if let Some(&m) = self.file_bounds.get(f as usize) {
                    s.bound(t, OUT, m);
                }
            }
        }
        // A unit that may be several extents, with a segment whose files
        // are all freed before it is.
        for &(u, a, b) in &self.split {
            s.bound(
                files_from(&self.split_files[a..b]),
                unit_from[u],
                Bound::AT_LEAST,
            );
        }
        s.frees()
    }
}
