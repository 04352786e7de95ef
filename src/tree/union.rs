//! What deleting a *set* of entries frees: the exact reclaimable of their
//! union, for marking in a browser and for the `--to-free` planner.
//!
//! Deleting two snapshots that share data frees more than the sum of what
//! each frees alone (the data they share with each other), and a marked
//! directory inside another marked one counts once. So the figure is
//! computed from the scan's references, not added up: an inode is freed
//! when all its links lie inside the union, a shared unit when every file
//! referencing it is freed, exactly as [`super::Tree`] credits reclaimable
//! to one directory (`docs/design.md`, "Reclaimable").
//!
//! A query is linear in the scan: O(nodes + links + unit references), a
//! few milliseconds for half a million entries.

use crate::extents::Sweep;
use crate::figures::{self, Bound};
use crate::probe::Granularity;
use crate::records::{FileRec, Link, NodeId, Nodes};

/// For each file with shared extents: the nodes of its links and whether
/// the scan saw all of them.
pub(super) struct FileLinks {
    /// `pool[ranges[f].0..ranges[f].1]`: the nodes of file `f`'s links.
    pub(crate) ranges: Vec<(usize, usize)>,
    pub(crate) pool: Vec<NodeId>,
    /// Whether every link of file `f` was seen (else deleting what the scan
    /// saw never frees it).
    pub(crate) all_seen: Vec<bool>,
    /// The inode of file `f` when it is counted through its links.
    pub(crate) inodes: Vec<Option<super::bounds::Inode>>,
}

impl FileLinks {
    /// `links` sorted by inode.
    pub(crate) fn new(files: &[FileRec], links: &[Link]) -> FileLinks {
        let mut ranges = Vec::with_capacity(files.len());
        let mut pool = Vec::new();
        let mut all_seen = Vec::with_capacity(files.len());
        let mut inodes = Vec::with_capacity(files.len());
        for f in files {
            inodes.push(f.linked.then(|| f.inode()));
            let a = pool.len();
            let mut seen = true;
            if f.linked {
                let lo = links.partition_point(|l| l.inode() < f.inode());
                let hi = links.partition_point(|l| l.inode() <= f.inode());
                pool.extend(links[lo..hi].iter().map(|l| l.node));
                seen = hi > lo && figures::all_links_seen(hi - lo, links[lo].nlink);
            }
            if pool.len() == a {
                pool.push(f.node);
            }
            ranges.push((a, pool.len()));
            all_seen.push(seen);
        }
        FileLinks {
            ranges,
            pool,
            all_seen,
            inodes,
        }
    }

    /// The nodes of file `f`'s links.
    pub(crate) fn nodes(&self, f: u32) -> &[NodeId] {
        let (a, b) = self.ranges[f as usize];
        &self.pool[a..b]
    }
}

/// What the scan keeps to answer "what does deleting these free?", beside
/// the tree's nodes (their parents, leaves and own reclaimable bytes).
#[derive(Debug, Default)]
pub(crate) struct Reclaim {
    /// Multiply-linked inodes whose links were all seen: their exclusive
    /// bytes, and their links' nodes in `inode_nodes`.
    inodes: Vec<(u64, usize, usize)>,
    /// Per entry of `inodes`, the walk's mark on it (empty: none has one).
    inode_bounds: Vec<Bound>,
    /// Per file, the walk's mark on its inode when it is counted through
    /// its links (empty: none has one).
    file_bounds: Vec<Bound>,
    inode_nodes: Vec<NodeId>,
    /// Files with shared extents whose links were all seen: their links'
    /// nodes; `None` for a file never freed (a link outside the scan).
    files: Vec<Option<(usize, usize)>>,
    file_nodes: Vec<NodeId>,
    /// Units that can be freed inside the scan: their bytes and files.
    units: Vec<(u64, usize, usize)>,
    unit_files: Vec<u32>,
    /// Per unit in `units`, whether it frees what it counts (empty: all
    /// do).
    unit_bounds: Vec<Bound>,
    /// The nodes whose own figures are bounds, sorted by id.
    node_bounds: Vec<(NodeId, Bound)>,
}

/// What deleting a set of entries frees.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Frees {
    /// The bytes.
    pub bytes: u64,
    /// Whether that is exact, or a bound.
    pub bound: Bound,
}

impl Reclaim {
    /// Keeps what the queries need from the scan's records. `links` sorted
    /// by inode.
    pub(super) fn new(
        links: &[Link],
        files: &FileLinks,
        sweep: &Sweep,
        granularity: impl Fn(u32) -> Granularity,
        exact: &super::Exactness,
    ) -> Reclaim {
        let mut r = Reclaim {
            node_bounds: exact.nodes.clone(),
            ..Reclaim::default()
        };
        let mut unit_bounds = Vec::new();
        let mut inode_bounds = Vec::new();
        for group in links.chunk_by(|a, b| a.inode() == b.inode()) {
            if figures::all_links_seen(group.len(), group[0].nlink) {
                let stats = figures::linked_inode(group.iter().map(|l| &l.stats));
                let a = r.inode_nodes.len();
                r.inode_nodes.extend(group.iter().map(|l| l.node));
                r.inodes.push((stats.exclusive, a, r.inode_nodes.len()));
                inode_bounds.push(exact.inode(group[0].inode()).unwrap_or_default());
            }
        }
        for f in 0..files.ranges.len() as u32 {
            r.files.push(files.all_seen[f as usize].then(|| {
                let a = r.file_nodes.len();
                r.file_nodes.extend(files.nodes(f));
                (a, r.file_nodes.len())
            }));
        }
        for (fs, range) in sweep.fs_units() {
            let per_extent = granularity(fs) == Granularity::Extent;
            for i in range {
                let u = sweep.unit(i);
                if figures::unit_freeable(u.mappings, u.ranges, u.files.len(), per_extent) {
                    let a = r.unit_files.len();
                    r.unit_files.extend(u.files);
                    r.units.push((u.bytes, a, r.unit_files.len()));
                    unit_bounds.push(exact.space(fs));
                }
            }
        }
        if unit_bounds.iter().any(|b| !b.is_exact()) {
            r.unit_bounds = unit_bounds;
        }
        if inode_bounds.iter().any(|b| !b.is_exact()) {
            r.inode_bounds = inode_bounds;
        }
        if !exact.inodes.is_empty() {
            r.file_bounds = files
                .inodes
                .iter()
                .map(|i| i.and_then(|i| exact.inode(i)).unwrap_or_default())
                .collect();
        }
        r
    }

    /// The heap bytes held.
    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        self.inodes.capacity() * size_of::<(u64, usize, usize)>()
            + self.units.capacity() * size_of::<(u64, usize, usize)>()
            + self.files.capacity() * size_of::<Option<(usize, usize)>>()
            + (self.inode_nodes.capacity() + self.file_nodes.capacity()) * size_of::<NodeId>()
            + self.unit_files.capacity() * 4
            + self.unit_bounds.capacity()
            + self.node_bounds.capacity() * size_of::<(NodeId, Bound)>()
    }

    /// The bytes deleting every node in `marked` (with everything below
    /// each) would free: the reclaimable of their union. `nodes` are the
    /// tree's.
    pub(crate) fn frees(&self, nodes: &Nodes, marked: &[NodeId]) -> Frees {
        let n = nodes.len();
        let mut inside = vec![false; n];
        for &m in marked {
            if m.index() < n {
                inside[m.index()] = true;
            }
        }
        // Parents have smaller ids than their children.
        for id in nodes.ids().skip(1) {
            let p = nodes.parent(id);
            if !p.is_none() && inside[p.index()] {
                inside[id.index()] = true;
            }
        }
        let all_inside = |nodes: &[NodeId]| nodes.iter().all(|&x| inside[x.index()]);
        let mut total = 0u64;
        let mut bound = Bound::EXACT;
        for &(id, b) in &self.node_bounds {
            if inside.get(id.index()).copied().unwrap_or(false) {
                bound = bound.with(b);
            }
        }
        for id in nodes.ids() {
            // A -a leaf's own figures are also its directory's: count them
            // there when the directory is inside too.
            if inside[id.index()] {
                let counted_above = nodes.leaf(id) && {
                    let p = nodes.parent(id);
                    !p.is_none() && inside[p.index()]
                };
                if !counted_above {
                    total = total.saturating_add(nodes.own_reclaimable(id));
                }
            }
        }
        for (k, &(bytes, a, b)) in self.inodes.iter().enumerate() {
            if all_inside(&self.inode_nodes[a..b]) {
                total = total.saturating_add(bytes);
                if let Some(&m) = self.inode_bounds.get(k) {
                    bound = bound.with(m);
                }
            }
        }
        let freed: Vec<bool> = self
            .files
            .iter()
            .map(|f| f.is_some_and(|(a, b)| all_inside(&self.file_nodes[a..b])))
            .collect();
        for (i, &(bytes, a, b)) in self.units.iter().enumerate() {
            if self.unit_files[a..b].iter().all(|&f| freed[f as usize]) {
                total = total.saturating_add(bytes);
                if let Some(&b) = self.unit_bounds.get(i) {
                    bound = bound.with(b);
                }
                for &f in &self.unit_files[a..b] {
                    if let Some(&m) = self.file_bounds.get(f as usize) {
                        bound = bound.with(m);
                    }
                }
            }
        }
        Frees {
            bytes: total,
            bound,
        }
    }

    /// Chooses among `candidates` a set whose deletion frees at least
    /// `target` bytes, with as few entries as it finds: greedy by exact
    /// marginal gain (ties to the earlier candidate), then, where no single
    /// candidate adds anything but all of them together would reach the
    /// target (data shared by three or more), the rest in order, and a last
    /// pass that drops every chosen entry the target does not need.
    pub(crate) fn plan(&self, nodes: &Nodes, candidates: &[NodeId], target: u64) -> Plan {
        let bytes = |ids: &[NodeId]| self.frees(nodes, ids).bytes;
        let mut chosen: Vec<NodeId> = Vec::new();
        let mut freed = 0u64;
        let mut left: Vec<NodeId> = candidates.to_vec();
        while freed < target && !left.is_empty() {
            let mut best: Option<(usize, u64)> = None;
            for (i, &c) in left.iter().enumerate() {
                chosen.push(c);
                let f = bytes(&chosen);
                chosen.pop();
                if f > freed && best.is_none_or(|(_, b)| f > b) {
                    best = Some((i, f));
                }
            }
            match best {
                Some((i, f)) => {
                    chosen.push(left.remove(i));
                    freed = f;
                }
                None => {
                    // Stuck: nothing adds alone. Take the rest if together
                    // they reach the target, and let the pruning below
                    // keep only what is needed.
                    let mut all = chosen.clone();
                    all.extend(&left);
                    let f = bytes(&all);
                    if f > freed {
                        chosen = all;
                        freed = f;
                        left.clear();
                    }
                    break;
                }
            }
        }
        if freed >= target {
            // Drop what the target does not need, latest first.
            let mut i = chosen.len();
            while i > 0 {
                i -= 1;
                let mut without = chosen.clone();
                without.remove(i);
                let f = bytes(&without);
                if f >= target && !without.is_empty() {
                    chosen = without;
                    freed = f;
                }
            }
        }
        // What each adds, in the order chosen.
        let mut steps = Vec::with_capacity(chosen.len());
        let mut so_far = 0;
        for k in 0..chosen.len() {
            let f = bytes(&chosen[..=k]);
            steps.push((chosen[k], f.saturating_sub(so_far)));
            so_far = f;
        }
        Plan {
            steps,
            frees: freed,
            bound: self.frees(nodes, &chosen).bound,
            reached: freed >= target,
            all: self.frees(nodes, candidates),
        }
    }
}

/// A `--to-free` plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The chosen nodes, in the order chosen, with what each adds to those
    /// before it.
    pub(crate) steps: Vec<(NodeId, u64)>,
    /// What deleting all of them frees.
    pub(crate) frees: u64,
    /// Whether `frees` is exact, or a bound.
    pub(crate) bound: Bound,
    /// Whether that reaches the target.
    pub(crate) reached: bool,
    /// What deleting every candidate would free.
    pub(crate) all: Frees,
}
