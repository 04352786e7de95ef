//! What deleting a *set* of entries frees: the exact reclaimable of their
//! union, for marking in a browser and for the `--to-free` planner.
//!
//! Deleting two snapshots that share data frees more than the sum of what
//! each frees alone (the data they share with each other), and a marked
//! directory inside another marked one counts once. So the figure is
//! computed from the scan's references, not added up: an inode is freed
//! when all its links lie inside the union, a shared unit when every file
//! referencing it is freed, exactly as [`super::Tree`] credits reclaimable
//! to one directory (`docs/figures.md`, "Reclaimable").
//!
//! A query is linear in the scan: O(nodes + links + unit references)
//! (its time: docs/decisions.md, "Small choices").

use crate::extents::Sweep;
use crate::figures::{self, Bound};
use crate::probe::Granularity;
use crate::records::{Copies, Files, Link, NodeId, Nodes};

/// For each file with shared extents: the nodes of its links and of its
/// copies ([`crate::records::CopyRec`]), and whether the scan saw all of
/// them. A file credited to one node (the common case) costs 4 bytes
/// here, its node; a file counted through its links has an entry besides.
/// Its copies are read where the scan keeps them, by directory
/// ([`Copies`]). It keeps nothing else of the file records, so that the
/// roll-up can drop them (16 bytes a file) before it credits the sweep.
pub(super) struct FileLinks<'a> {
    /// By file id: the node of the link that was mapped.
    nodes: Vec<NodeId>,
    copies: &'a Copies,
    /// By file id: the files with an entry.
    entries: Vec<LinkSpan>,
    pool: Vec<NodeId>,
}

/// A file's links: `pool[start..end]`.
struct LinkSpan {
    id: u32,
    start: u32,
    end: u32,
    /// Whether every link was seen.
    seen: bool,
    /// The inode.
    inode: crate::records::Inode,
}

impl<'a> FileLinks<'a> {
    /// `links` sorted by inode.
    pub(crate) fn new(files: &Files, copies: &'a Copies, links: &[Link]) -> FileLinks<'a> {
        let mut entries = Vec::new();
        let mut pool = Vec::new();
        let at = |i: usize| u32::try_from(i).expect("fewer than 4 billion links");
        for (id, f) in files.iter().enumerate().filter(|(_, f)| f.linked) {
            let a = pool.len();
            let lo = links.partition_point(|l| l.inode() < f.inode());
            let hi = links.partition_point(|l| l.inode() <= f.inode());
            pool.extend(links[lo..hi].iter().map(|l| l.node));
            let seen = hi > lo && figures::all_links_seen(hi - lo, links[lo].nlink);
            if pool.len() == a {
                pool.push(f.node);
            }
            entries.push(LinkSpan {
                id: at(id),
                start: at(a),
                end: at(pool.len()),
                seen,
                inode: f.inode(),
            });
        }
        FileLinks {
            nodes: (0..files.len()).map(|f| files.node(f)).collect(),
            copies,
            entries,
            pool,
        }
    }

    /// How many files there are (copies not counted).
    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    fn entry(&self, f: u32) -> Option<&LinkSpan> {
        let i = self.entries.partition_point(|e| e.id < f);
        self.entries.get(i).filter(|e| e.id == f)
    }

    /// The nodes of file `f`'s links, its copies left out.
    fn own(&self, f: u32) -> &[NodeId] {
        match self.entry(f) {
            Some(e) => &self.pool[e.start as usize..e.end as usize],
            None => std::slice::from_ref(&self.nodes[f as usize]),
        }
    }

    /// How many nodes [`FileLinks::nodes`] gives for file `f`.
    pub(crate) fn node_count(&self, f: u32) -> usize {
        self.own(f).len() + self.copies.count(f) as usize
    }

    /// The nodes of file `f`'s links and copies.
    pub(crate) fn nodes(&self, f: u32) -> impl Iterator<Item = NodeId> + Clone + '_ {
        let own = self.own(f);
        let copies = (!self.copies.is_empty()).then(|| self.copies.of(f));
        own.iter()
            .copied()
            .chain(copies.into_iter().flatten().map(|c| c.0))
    }

    /// Whether every link of file `f` was seen (else deleting what the scan
    /// saw never frees it). Copies always are.
    pub(crate) fn all_seen(&self, f: u32) -> bool {
        self.entry(f).is_none_or(|e| e.seen)
    }

    /// The inode of file `f` when it is counted through its links.
    pub(crate) fn inode(&self, f: u32) -> Option<crate::records::Inode> {
        self.entry(f).map(|e| e.inode)
    }

    /// Whether deleting what the scan saw of a unit that `files` map can
    /// free it ([`figures::unit_freeable`]), each copy of a file counted as
    /// the file of its own that it stands for: one more file, mapping what
    /// the file maps.
    pub(crate) fn unit_freeable(
        &self,
        (mappings, ranges, files): (u32, u32, &[u32]),
        per_extent: bool,
    ) -> bool {
        let copies: u32 = if self.copies.is_empty() {
            0
        } else {
            files
                .iter()
                .map(|&f| self.copies.count(f))
                .fold(0, u32::saturating_add)
        };
        figures::unit_freeable(
            mappings.saturating_add(copies),
            ranges,
            files.len() + copies as usize,
            per_extent,
        )
    }
}

/// What any set of entries of one [`super::Tree`] frees, kept beside it when
/// asked for ([`crate::Scanning`]'s `sets`): the units and the references
/// that decide it. Asked about another tree, it answers nonsense.
#[derive(Debug)]
pub struct Sets {
    reclaim: Reclaim,
    /// The scan's copies of files, which `reclaim` reads by set
    /// ([`Sets::with_copies`]; none for a scan read from a file, whose
    /// copies are file records).
    copies: Copies,
}

impl Sets {
    /// The sets `reclaim` decides, without copies until
    /// [`Sets::with_copies`].
    pub(super) fn new(reclaim: Reclaim) -> Sets {
        Sets {
            reclaim,
            copies: Copies::default(),
        }
    }

    /// What deleting every entry in `ids` of `tree` (each with everything
    /// below it) would free, counted once.
    pub fn frees(&self, tree: &super::Tree, ids: &[NodeId]) -> Frees {
        self.reclaim.frees((&tree.nodes, &self.copies), ids)
    }

    /// What deleting `ids[..k]` of `tree` frees, for each `k` from 1 to
    /// `ids.len()`, in one pass ([`Reclaim::frees_prefixes`]).
    pub(crate) fn frees_prefixes(&self, tree: &super::Tree, ids: &[NodeId]) -> Vec<Frees> {
        self.reclaim
            .frees_prefixes((&tree.nodes, &self.copies), ids)
    }

    /// These sets with the copies they were built from
    /// ([`super::Build::copies`]), moved in: the roll-up lends them, and the
    /// walk gives them once it is done.
    pub(crate) fn with_copies(self, copies: Copies) -> Sets {
        Sets { copies, ..self }
    }

    /// A `--to-free` plan among `candidates` of `tree` (see
    /// [`Reclaim::plan`]).
    pub(crate) fn plan(&self, tree: &super::Tree, candidates: &[NodeId], target: u64) -> Plan {
        self.reclaim
            .plan((&tree.nodes, &self.copies), candidates, target)
    }

    /// A `--to-free` plan that takes `candidates` in their order (see
    /// [`Reclaim::plan_in_order`]).
    pub(crate) fn plan_in_order(
        &self,
        tree: &super::Tree,
        candidates: &[NodeId],
        target: u64,
    ) -> Plan {
        self.reclaim
            .plan_in_order((&tree.nodes, &self.copies), candidates, target)
    }

    /// The heap bytes held.
    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        self.reclaim.heap_bytes()
    }
}

/// What the scan keeps to answer "what does deleting these free?", beside
/// the tree's nodes (their parents, leaves and own reclaimable bytes).
#[derive(Debug, Default)]
pub(crate) struct Reclaim {
    /// Multiply-linked inodes whose links were all seen: their exclusive
    /// bytes, and their links' nodes in `inode_nodes`.
    inodes: Vec<(u64, u32, u32)>,
    /// Per entry of `inodes`, the walk's mark on it (empty: none has one).
    inode_bounds: Vec<Bound>,
    /// Per file, the walk's mark on its inode when it is counted through
    /// its links (empty: none has one).
    file_bounds: Vec<Bound>,
    inode_nodes: Vec<NodeId>,
    /// Per file with shared extents, when all its links were seen: its
    /// node when it has one (the common case), else [`SEVERAL`], its
    /// links' nodes then in `file_nodes`, from the next span of `several`;
    /// [`NEVER`] for a file never freed (a link outside the scan). 4 bytes
    /// a file: `--snapshots` and the browser keep one for every file of
    /// every snapshot or reflinked copy, where a span for each took 12.
    /// The nodes of its copies are read from the scan's [`Copies`], by
    /// set ([`Reclaim::frees`]), not kept here at 4 bytes a copy
    /// (docs/scale.md, "Snapshots").
    files: Vec<NodeId>,
    /// The spans in `file_nodes` of the files with several nodes, in file
    /// order.
    several: Vec<(u32, u32)>,
    file_nodes: Vec<NodeId>,
    /// Units that can be freed inside the scan: their bytes and files.
    units: Vec<(u64, u32, u32)>,
    unit_files: Vec<u32>,
    /// Per unit in `units`, whether it frees what it counts (empty: all
    /// do).
    unit_bounds: Vec<Bound>,
    /// Per unit in `units`, its run of units touching on disk
    /// (`Exactness::runs`), numbered from 0; `u32::MAX` for none (empty:
    /// no unit is in one).
    unit_runs: Vec<u32>,
    /// Per run: whether some unit of it is never freed in the scan.
    runs_held: Vec<bool>,
    /// The segments of units in `units` that may be several extents
    /// (`Exactness::split`): the unit, and its files in `split_files`.
    split: Vec<(usize, usize, usize)>,
    split_files: Vec<u32>,
    /// The nodes whose own figures are bounds, sorted by id.
    node_bounds: Vec<(NodeId, Bound)>,
}

/// [`Reclaim::files`]'s entry of a file never freed.
const NEVER: NodeId = NodeId::NONE;

/// [`Reclaim::files`]'s entry of a file with several nodes: the one
/// number below [`NodeId::NONE`] that no node has.
const SEVERAL: NodeId = NodeId::from_u32(u32::MAX - 1);

/// The nodes a file's links lie in, as [`Reclaim::files`] keeps them.
enum FileNodes<'a> {
    /// A link outside the scan: never freed.
    Never,
    One(NodeId),
    Several(&'a [NodeId]),
}

impl Reclaim {
    /// `f(links, sets)` for each file, in file order: the nodes of its
    /// links and the copy sets of `copies` it is in (none: no copies).
    fn per_file<T>(
        &self,
        copies: &Copies,
        mut f: impl FnMut(FileNodes<'_>, &[u32]) -> T,
    ) -> Vec<T> {
        let mut several = self.several.iter();
        let mut copied = copies.file_sets().peekable();
        (self.files.iter().enumerate())
            .map(|(i, &n)| {
                let links = match n {
                    NEVER => FileNodes::Never,
                    SEVERAL => {
                        let &s = several
                            .next()
                            .expect("a span for each file with several nodes");
                        FileNodes::Several(&self.file_nodes[span(s)])
                    }
                    n => FileNodes::One(n),
                };
                let i = i as u32;
                while copied.next_if(|c| c.0 < i).is_some() {}
                let sets = copied.next_if(|c| c.0 == i).map_or(&[][..], |(_, s)| s);
                f(links, sets)
            })
            .collect()
    }
}

/// The span `(a, b)` of one of [`Reclaim`]'s lists, as a range.
fn span((a, b): (u32, u32)) -> std::ops::Range<usize> {
    a as usize..b as usize
}

/// `n`, an offset into one of [`Reclaim`]'s lists of nodes or files.
fn offset(n: usize) -> u32 {
    u32::try_from(n).expect("fewer than 4 billion links and copies")
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
            if figures::all_links_seen(group.len(), group[0].nlink)
                && figures::links_free(group.iter().map(|l| &l.stats))
            {
                let stats = figures::linked_inode(group.iter().map(|l| &l.stats));
                let a = offset(r.inode_nodes.len());
                r.inode_nodes.extend(group.iter().map(|l| l.node));
                r.inodes
                    .push((stats.exclusive, a, offset(r.inode_nodes.len())));
                inode_bounds.push(exact.inode(group[0].inode()).unwrap_or_default());
            }
        }
        r.files.reserve_exact(files.len());
        for f in 0..files.len() as u32 {
            r.files.push(match files.own(f) {
                _ if !files.all_seen(f) => NEVER,
                &[n] => n,
                own => {
                    let a = offset(r.file_nodes.len());
                    r.file_nodes.extend_from_slice(own);
                    r.several.push((a, offset(r.file_nodes.len())));
                    SEVERAL
                }
            });
        }
        // Each run of touching units, numbered in order of its first unit.
        let mut run_ids: Vec<u32> = exact.runs.iter().map(|r| r.1).collect();
        run_ids.dedup();
        r.runs_held = vec![false; run_ids.len()];
        let mut unit_runs = Vec::new();
        for (fs, range) in sweep.fs_units() {
            let per_extent = granularity(fs) == Granularity::Extent;
            for i in range {
                let u = sweep.unit(i);
                let run = (exact.run(i)).and_then(|id| run_ids.binary_search(&id).ok());
                if files.unit_freeable((u.mappings, u.ranges, u.files), per_extent) {
                    let a = offset(r.unit_files.len());
                    r.unit_files.extend(u.files);
                    r.units.push((u.bytes, a, offset(r.unit_files.len())));
                    unit_bounds.push(exact.space(fs));
                    unit_runs.push(run.map_or(u32::MAX, |k| k as u32));
                    if exact.split(i) {
                        for s in u.segments.clone() {
                            let a = r.split_files.len();
                            r.split_files.extend(sweep.segment(s).files);
                            let b = r.split_files.len();
                            r.split.push((r.units.len() - 1, a, b));
                        }
                    }
                } else if let Some(k) = run {
                    r.runs_held[k] = true;
                }
            }
        }
        if !run_ids.is_empty() {
            r.unit_runs = unit_runs;
        }
        if unit_bounds.iter().any(|b| !b.is_exact()) {
            r.unit_bounds = unit_bounds;
        }
        if inode_bounds.iter().any(|b| !b.is_exact()) {
            r.inode_bounds = inode_bounds;
        }
        if !exact.inodes.is_empty() {
            r.file_bounds = (0..files.len() as u32)
                .map(|f| {
                    files
                        .inode(f)
                        .and_then(|i| exact.inode(i))
                        .unwrap_or_default()
                })
                .collect();
        }
        r
    }

    /// The heap bytes held.
    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        self.inodes.capacity() * size_of::<(u64, u32, u32)>()
            + self.units.capacity() * size_of::<(u64, u32, u32)>()
            + self.files.capacity() * size_of::<NodeId>()
            + self.several.capacity() * size_of::<(u32, u32)>()
            + (self.inode_nodes.capacity() + self.file_nodes.capacity()) * size_of::<NodeId>()
            + self.unit_files.capacity() * 4
            + self.unit_bounds.capacity()
            + self.unit_runs.capacity() * 4
            + self.runs_held.capacity()
            + self.split.capacity() * size_of::<(usize, usize, usize)>()
            + self.split_files.capacity() * 4
            + self.node_bounds.capacity() * size_of::<(NodeId, Bound)>()
    }

    /// The bytes deleting every node in `marked` (with everything below
    /// each) would free: the reclaimable of their union. `nodes` are the
    /// tree's, `copies` the scan's that this was built with.
    pub(crate) fn frees(&self, (nodes, copies): (&Nodes, &Copies), marked: &[NodeId]) -> Frees {
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
            if all_inside(&self.inode_nodes[span((a, b))]) {
                total = total.saturating_add(bytes);
                if let Some(&m) = self.inode_bounds.get(k) {
                    bound = bound.with(m);
                }
            }
        }
        // A file is freed when its links and its copies all are: the copies
        // by set, each set judged once.
        let sets_inside = copies.sets_held_within(|n| inside[n.index()]);
        let freed: Vec<bool> = self.per_file(copies, |links, sets| {
            let own = match links {
                FileNodes::Never => false,
                FileNodes::One(n) => inside[n.index()],
                FileNodes::Several(ns) => all_inside(ns),
            };
            own && sets.iter().all(|&s| sets_inside[s as usize])
        });
        let unit_freed: Vec<bool> = (self.units.iter())
            .map(|&(_, a, b)| {
                self.unit_files[span((a, b))]
                    .iter()
                    .all(|&f| freed[f as usize])
            })
            .collect();
        // A run of touching units may be one extent whose parts different
        // files hold: freed whole, it frees what its units count; in part,
        // at most that.
        let mut run_whole = self.runs_held.iter().map(|&h| !h).collect::<Vec<bool>>();
        for (&run, &f) in self.unit_runs.iter().zip(&unit_freed) {
            if let Some(w) = run_whole.get_mut(run as usize) {
                *w &= f;
            }
        }
        for (i, &(bytes, a, b)) in self.units.iter().enumerate() {
            if unit_freed[i] {
                total = total.saturating_add(bytes);
                let run = self
                    .unit_runs
                    .get(i)
                    .and_then(|&k| run_whole.get(k as usize));
                if run == Some(&false) {
                    bound = bound.with(Bound::AT_MOST);
                }
                if let Some(&b) = self.unit_bounds.get(i) {
                    bound = bound.with(b);
                }
                for &f in &self.unit_files[span((a, b))] {
                    if let Some(&m) = self.file_bounds.get(f as usize) {
                        bound = bound.with(m);
                    }
                }
            }
        }
        // A unit that may be several extents, not freed, with a segment
        // whose files all are: the extent under that segment may be.
        for &(u, a, b) in &self.split {
            if !unit_freed[u] && self.split_files[a..b].iter().all(|&f| freed[f as usize]) {
                bound = bound.with(Bound::AT_LEAST);
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
    pub(crate) fn plan(
        &self,
        (nodes, copies): (&Nodes, &Copies),
        candidates: &[NodeId],
        target: u64,
    ) -> Plan {
        let bytes = |ids: &[NodeId]| self.frees((nodes, copies), ids).bytes;
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
            bound: self.frees((nodes, copies), &chosen).bound,
            reached: freed >= target,
            all: self.frees((nodes, copies), candidates),
        }
    }
}

impl Reclaim {
    /// `--oldest-first` and `--newest-first`: takes `candidates` in the
    /// order given, and stops as soon as what deleting those taken frees
    /// together reaches `target`. A candidate that adds nothing is taken
    /// all the same: it is next in the order.
    pub(crate) fn plan_in_order(
        &self,
        (nodes, copies): (&Nodes, &Copies),
        candidates: &[NodeId],
        target: u64,
    ) -> Plan {
        let mut steps = Vec::new();
        let mut freed = 0u64;
        for k in 0..candidates.len() {
            if freed >= target && k > 0 {
                break;
            }
            let f = self.frees((nodes, copies), &candidates[..=k]).bytes;
            steps.push((candidates[k], f.saturating_sub(freed)));
            freed = f;
        }
        let chosen: Vec<NodeId> = steps.iter().map(|&(id, _)| id).collect();
        Plan {
            steps,
            frees: freed,
            bound: self.frees((nodes, copies), &chosen).bound,
            reached: freed >= target,
            all: self.frees((nodes, copies), candidates),
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

mod prefixes;
