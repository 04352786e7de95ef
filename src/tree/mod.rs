//! The roll-up: per-directory figures from the walk's records, and the
//! deterministic order in which they are reported.
//!
//! Every inode is counted once in every directory that holds at least one of
//! its links, which is what `du -s DIR` run on that directory alone prints.
//! Singly-linked inodes are summed bottom-up. A multiply-linked inode is
//! credited by climbing from each of its links' directories to the top,
//! stopping at a directory already credited for that inode, so that it
//! lands once on the union of its links' ancestor chains. Both are sums of the
//! same terms whatever the walk order: the figures never depend on the threads.
//!
//! Two of du's rules change that when asked ([`Rules`]): in `--du` mode an
//! inode counts once per run, at its first link in du's traversal (`du_order`),
//! and `-S` keeps subdirectories out of a directory's figures.

mod acc;
pub(crate) mod bounds;
#[cfg(test)]
mod by_hand;
mod du_order;
mod ranks;
mod segments;
#[cfg(feature = "testing")]
mod testing;
pub(crate) mod union;
pub(crate) mod unreachable;
mod unread;

use crate::records::Exactness;
use acc::{Acc, OWN, children, parent_or_top};
use bounds::Marks;
use ranks::Ranks;
use union::FileLinks;
pub(crate) use union::Sets;
pub(crate) use union::{Plan, Reclaim};

use crate::extents::Sweep;
use crate::figures::{self, Bound, Kind, Stats};
use crate::probe::Granularity;
use crate::records::{Copies, Files, Link, NodeId, NodeRec, Nodes, StatsTable};
use rayon::prelude::*;
use std::borrow::Cow;

/// Which of du's rules the roll-up follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rules {
    /// du's own counting (`--du`, sdu run as du): an inode counts once per
    /// run, at the first of its links du's traversal meets, and what du
    /// skips (a directory met again) is not listed; siblings are listed in
    /// du's order (getdents), not by name.
    pub du: bool,
    /// `-S`: a directory's figures leave its subdirectories out (the `-c`
    /// total still counts everything). Applies to the additive figures
    /// (apparent, total, exclusive, inodes, time); shared and reclaimable
    /// stay those of the whole subtree.
    pub separate_dirs: bool,
    /// Put siblings in order (by name, or du's) only under the nodes less
    /// than this deep: the report's `--max-depth` (`-s`: 0), below which
    /// nothing is listed. Deeper, a node's children are in no set order,
    /// and [`Tree::children`] refuses them. `None`: everywhere. A report of
    /// one line need not sort every directory (docs/decisions.md, "Small
    /// choices").
    pub sorted_depth: Option<u32>,
}

/// The walked tree with its rolled-up figures.
///
/// The nodes are kept in columns (`Nodes`). A directory's rolled-up
/// figures are a [`Stats`] of their own; a `-a` file leaf that nothing was
/// credited to has its own figures as its rolled-up ones, so it keeps
/// none twice.
#[derive(Debug)]
pub struct Tree {
    nodes: Nodes,
    /// Nodes du's rules skip, with everything below them (empty: none).
    hidden: Vec<bool>,
    /// Nodes after which du's traversal of their root stops (a directory
    /// moved while it was read).
    stops: Vec<NodeId>,
    /// The nodes with rolled-up figures in `rolled` (every node but the
    /// leaves credited nothing), by their rank.
    ranks: Ranks,
    rolled: StatsTable,
    /// The figures of [`NodeId::TOP`], for [`Tree::grand_total`].
    grand: Stats,
    /// Children of each node with a rank, as ranges into `child_ids`
    /// indexed by the rank (a node without one has no children).
    child_start: Vec<u32>,
    child_ids: Vec<NodeId>,
    /// [`Rules::sorted_depth`].
    sorted_depth: Option<u32>,
    /// Per node, whether its Reclaimable is exact or a bound (empty: every
    /// figure is exact).
    bounds: Vec<Bound>,
    /// Bytes on disk that no file references, where not zero.
    unreachable: unreachable::Unreachable,
}

/// How a tree is rolled up beyond its records: du's rules, where du's
/// listing stops (`Tree::build_with`), and whether to keep the sets.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Build<'a> {
    pub(crate) rules: Rules,
    pub(crate) stops: &'a [NodeId],
    pub(crate) sets: bool,
    pub(crate) exact: &'a Exactness,
    /// What the walk found of bytes no file references.
    pub(crate) unreachable: &'a unreachable::Found,
    /// The copies of files ([`crate::records::CopyRec`]), by directory.
    pub(crate) copies: &'a Copies,
}

/// One entry as the reports see it.
#[derive(Debug)]
pub(crate) struct ReportEntry<'a> {
    /// Its node id.
    pub(crate) id: NodeId,
    /// The path as printed: the root as given, `/`, the names.
    pub(crate) path: &'a [u8],
    /// Levels below its root.
    pub(crate) depth: u32,
    /// Directory, regular file, symlink or other.
    pub(crate) kind: Kind,
    /// Its rolled-up figures.
    pub(crate) figures: &'a Stats,
    /// Whether its Reclaimable is exact, or a bound.
    pub(crate) bound: Bound,
    /// Bytes on disk under it that no file references.
    pub(crate) unreachable: u64,
}

/// A node as the walk recorded it, its name borrowed from the tree.
pub(crate) type Record<'a> = NodeRec<&'a [u8]>;

impl Tree {
    /// `Tree::build_with`, and what any set of its entries frees
    /// ([`Sets`]: the browser's marks, `--to-free`'s plan).
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn build_with_sets(
        nodes: impl Into<Nodes>,
        links: Vec<Link>,
        files: &[crate::records::FileRec],
        sweep: &Sweep,
        granularity: impl Fn(u32) -> Granularity,
        rules: Rules,
        stops: &[NodeId],
    ) -> (Tree, Sets) {
        let how = Build {
            rules,
            stops,
            sets: true,
            exact: &Exactness::default(),
            unreachable: &unreachable::Found::default(),
            copies: Copies::NONE,
        };
        let (files, sweep) = (Cow::Owned(files.to_vec().into()), Cow::Borrowed(sweep));
        let (tree, sets) = Self::roll_up(nodes, links, files, sweep, granularity, how);
        (tree, sets.expect("kept when asked for"))
    }

    /// The roll-up as `how` says, with the sets when it asks for them.
    /// `files` and `sweep`, owned, go once taken (the files into
    /// [`FileLinks`], the sweep into the sets), before the later peaks.
    pub(crate) fn roll_up(
        nodes: impl Into<Nodes>,
        mut links: Vec<Link>,
        files: Cow<'_, Files>,
        sweep: Cow<'_, Sweep>,
        granularity: impl Fn(u32) -> Granularity,
        how: Build<'_>,
    ) -> (Tree, Option<Sets>) {
        let Build {
            rules,
            stops,
            sets,
            exact,
            unreachable: found,
            copies,
        } = how;
        let mut nodes: Nodes = nodes.into();
        nodes.shrink_to_fit();
        links.sort_unstable_by_key(|l| (l.inode(), l.node));
        // Each file's nodes, and the file records given back before the
        // slots are made (a large block each: both are never held whole
        // together).
        let file_links = FileLinks::new(&files, copies, &links);
        drop(files);
        let mut acc = Acc::new(&nodes);
        let mut c = Crediting {
            nodes: &nodes,
            stamp: vec![0; acc.slots()],
            generation: 0,
            marks: Marks::new(exact, nodes.len()),
        };
        // The sweep first, into narrow slots; given back before the slots
        // are widened.
        c.credit_sweep(&mut acc, &file_links, &sweep, &granularity);
        let reclaim = sets.then(|| Reclaim::new(&links, &file_links, &sweep, &granularity, exact));
        drop(sweep);
        acc.widen(&nodes);
        let counted = rules.du.then(|| du_order::counted(&nodes, &links));
        let separate = rules
            .separate_dirs
            .then(|| c.separate(&acc, &links, counted.as_ref()));
        c.credit_links(&mut acc, &links, counted.as_ref().map(|c| &c.links[..]));
        let bounds = c.marks.roll_up(&nodes);
        drop(c);
        let unreachable =
            unreachable::Unreachable::credit(&nodes, found, &links, |f| file_links.nodes(f));
        drop(file_links);
        drop(links);
        // Reclaimable bytes credited at a lowest common ancestor belong to
        // every ancestor too. Leaves are included: their credits are theirs
        // alone.
        if !acc.at.is_empty() {
            acc.at.resize(acc.full.len(), 0);
            for id in nodes.ids().skip(1).rev() {
                let (p, s) = (nodes.parent(id), acc.slot[id.index()]);
                if !p.is_none() && s != OWN && acc.at[s as usize] > 0 {
                    let a = acc.at[s as usize];
                    let ps = acc.slot[p.index()] as usize;
                    acc.at[ps] = acc.at[ps].saturating_add(a);
                }
            }
            for (f, r) in acc.full.iter_mut().zip(std::mem::take(&mut acc.at)) {
                f.reclaimable = f.reclaimable.saturating_add(r);
            }
        }
        if let Some(sep) = separate {
            // The -c total keeps everything. Slots below `sep.len()` are
            // the nodes that are not leaves, in id order.
            for (id, &s) in nodes.ids().zip(&acc.slot).skip(1) {
                if !nodes.leaf(id) {
                    let f = &mut acc.full[s as usize];
                    *f = Stats {
                        shared: f.shared,
                        reclaimable: f.reclaimable,
                        ..sep[s as usize]
                    };
                }
            }
        }
        let hidden = counted.map(|c| c.hidden).unwrap_or_default();
        // Every parent has a slot (a leaf never has children; if one had,
        // it gets one here).
        for i in nodes.ids().skip(1) {
            acc.slot_of(&nodes, parent_or_top(&nodes, i));
        }
        let (ranks, rolled) = acc.ranked(&nodes);
        let top = ranks.get(NodeId::TOP.index());
        let grand = rolled.get(top.expect("the top has figures") as usize);
        let (child_start, child_ids) =
            children(&nodes, &ranks, rolled.len(), rules.du, rules.sorted_depth);
        let mut stops = stops.to_vec();
        stops.sort_unstable();
        let tree = Tree {
            nodes,
            stops,
            hidden,
            ranks,
            rolled,
            grand,
            child_start,
            child_ids,
            sorted_depth: rules.sorted_depth,
            bounds,
            unreachable,
        };
        (tree, reclaim.map(Sets::new))
    }

    /// The figures of the virtual top node: all roots together, each inode
    /// counted once (the `-c` total).
    pub(crate) fn grand_total(&self) -> &Stats {
        &self.grand
    }

    /// The entry reached from `root` through the directory entries
    /// `names`, if the scan has it.
    pub fn find(&self, root: NodeId, names: &[Vec<u8>]) -> Option<NodeId> {
        let mut id = root;
        for name in names {
            id = *self
                .children_of(id)
                .iter()
                .find(|&&c| self.nodes.name(c) == &name[..])?;
        }
        Some(id)
    }

    /// The stops the tree was built with, sorted.
    pub(crate) fn stops(&self) -> &[NodeId] {
        &self.stops
    }

    /// The name of node `id`: for a root, the path as given.
    pub fn name(&self, id: NodeId) -> &[u8] {
        self.nodes.name(id)
    }

    /// The walk's record of node `id` (its own figures, its position in
    /// its directory, whether it is a `-a` leaf): what a saved scan keeps.
    /// `depth` is its depth, which a caller walking the tree knows:
    /// finding it here would climb to the root, a cost in the depth.
    pub(crate) fn record(&self, id: NodeId, depth: u32) -> Record<'_> {
        let n = &self.nodes;
        Record {
            id,
            parent: n.parent(id),
            depth,
            kind: n.kind(id),
            leaf: n.leaf(id),
            order: n.order(id),
            name: n.name(id),
            own: n.own(id),
        }
    }

    /// The own figures of node `id`, as the walk recorded them.
    pub(crate) fn own(&self, id: NodeId) -> Stats {
        self.nodes.own(id)
    }

    /// The figures of node `id`.
    pub fn figures(&self, id: NodeId) -> Stats {
        match self.ranks.get(id.index()) {
            None => self.nodes.own(id),
            Some(s) => self.rolled.get(s as usize),
        }
    }

    /// The root ids in the order given.
    pub fn roots(&self) -> &[NodeId] {
        self.children_of(NodeId::TOP)
    }

    /// The children of node `id` (its entries: subdirectories, and files
    /// with `-a`), siblings by name (in du's order under du's rules).
    /// [`NodeId::TOP`]'s children are the roots. Hidden nodes are included: see
    /// [`Tree::is_hidden`].
    ///
    /// # Panics
    /// For a node as deep as [`Rules::sorted_depth`] or deeper, whose
    /// children were not put in order.
    pub fn children(&self, id: NodeId) -> &[NodeId] {
        assert!(
            id == NodeId::TOP || self.sorted_depth.is_none_or(|d| self.depth(id) < d),
            "the children of node {id} were not sorted (Rules::sorted_depth)"
        );
        self.children_of(id)
    }

    /// The parent of node `id` (`None` for [`NodeId::TOP`] and for a root
    /// inside another root).
    pub fn parent(&self, id: NodeId) -> Option<NodeId> {
        self.nodes.parent(id).some()
    }

    /// What node `id` is.
    pub fn kind(&self, id: NodeId) -> Kind {
        self.nodes.kind(id)
    }

    /// Levels below its root (a root is at depth 0).
    pub(crate) fn depth(&self, id: NodeId) -> u32 {
        self.nodes.depth(id)
    }

    /// Whether du's rules skip node `id` (a directory met again): it is
    /// never listed.
    pub fn is_hidden(&self, id: NodeId) -> bool {
        assert!(id.index() < self.nodes.len(), "no node {id}");
        self.hidden.get(id.index()).copied().unwrap_or(false)
    }

    /// The number of nodes, [`NodeId::TOP`] included: ids are `0..len()`.
    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    /// The heap bytes the tree holds (the nodes, the figures, the child
    /// lists), for `--stats` and the tests.
    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        self.nodes.heap_bytes()
            + self.hidden.capacity()
            + self.ranks.heap_bytes()
            + self.rolled.heap_bytes()
            + self.child_start.capacity() * 4
            + self.child_ids.capacity() * size_of::<NodeId>()
    }

    fn children_of(&self, id: NodeId) -> &[NodeId] {
        let Some(s) = self.ranks.get(id.index()) else {
            return &[];
        };
        let a = self.child_start[s as usize] as usize;
        let b = self.child_start[s as usize + 1] as usize;
        &self.child_ids[a..b]
    }

    /// Visits entries in du order: post-order, siblings by name, roots in
    /// the order given. Entries deeper than `max_depth` are skipped (`-a`
    /// file leaves are recorded only with `-a`, so they are visited then).
    pub(crate) fn visit<E>(
        &self,
        max_depth: Option<u32>,
        mut f: impl FnMut(&ReportEntry<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut path: Vec<u8> = Vec::new();
        for &root in self.roots() {
            if self.is_hidden(root) {
                continue;
            }
            path.clear();
            // (node, next child index, path length before this node's name);
            // a node's depth is its index in the stack.
            let mut stack: Vec<(NodeId, usize, usize)> = Vec::new();
            path.extend_from_slice(self.name(root));
            stack.push((root, 0, 0));
            while !stack.is_empty() {
                let depth = (stack.len() - 1) as u32;
                let top = stack.last_mut().expect("non-empty");
                let (id, next, _) = *top;
                let kids = self.children_of(id);
                let descend = max_depth.is_none_or(|d| depth < d);
                if descend && next < kids.len() {
                    top.1 += 1;
                    let child = kids[next];
                    if self.is_hidden(child) {
                        continue;
                    }
                    let before = path.len();
                    if path.last() != Some(&b'/') {
                        path.push(b'/');
                    }
                    path.extend_from_slice(self.name(child));
                    stack.push((child, 0, before));
                    continue;
                }
                let (id, _, before) = stack.pop().expect("non-empty");
                let figures = self.figures(id);
                f(&ReportEntry {
                    id,
                    path: &path,
                    depth: stack.len() as u32,
                    kind: self.kind(id),
                    figures: &figures,
                    bound: self.bound(id),
                    unreachable: self.unreachable(id),
                })?;
                path.truncate(before);
                if self.stops.binary_search(&id).is_ok() {
                    break;
                }
            }
        }
        Ok(())
    }
}

/// The state of the crediting passes.
struct Crediting<'a> {
    nodes: &'a Nodes,
    /// `stamp[slot]` = the last generation credited to the node of `slot`
    /// (a node climbed through gets a slot: it is credited).
    stamp: Vec<u32>,
    generation: u32,
    /// The reasons of the bounds credited at each node.
    marks: Marks<'a>,
}

impl Crediting<'_> {
    /// Starts crediting a new item (an inode, a segment).
    fn next_generation(&mut self) {
        self.generation += 1;
        if self.generation == u32::MAX {
            self.stamp.fill(0);
            self.generation = 1;
        }
    }

    /// Climbs from `node` to the top, calling `f` on every node not yet
    /// credited in this generation: over several starting nodes, that is
    /// once per node of the union of their ancestor chains.
    fn climb(&mut self, acc: &mut Acc, mut node: NodeId, mut f: impl FnMut(&mut Acc, usize)) {
        while !node.is_none() {
            let s = acc.slot_of(self.nodes, node);
            if self.stamp.len() <= s {
                self.stamp.resize(acc.slots(), 0);
            }
            if self.stamp[s] == self.generation {
                break;
            }
            self.stamp[s] = self.generation;
            f(acc, s);
            node = self.nodes.parent(node);
        }
    }

    /// `-S`: each node's figures without its subdirectories: its own, plus
    /// each inode linked in it once (under du's rules, only where it is
    /// counted). Indexed by the slots of the nodes that are not leaves (a
    /// leaf's are never used).
    fn separate(
        &mut self,
        acc: &Acc,
        links: &[Link],
        counted: Option<&du_order::Counted>,
    ) -> Vec<Stats> {
        let nodes = self.nodes;
        let mut sep: Vec<Stats> = nodes
            .ids()
            .filter(|&i| !nodes.leaf(i))
            .map(|i| nodes.own(i))
            .collect();
        let mut start = 0;
        for group in links.chunk_by(|a, b| a.inode() == b.inode()) {
            let range = start..start + group.len();
            start += group.len();
            let stats = figures::linked_inode(group.iter().map(|l| &l.stats));
            self.next_generation();
            for (i, l) in range.zip(group) {
                if counted.is_some_and(|c| !c.links[i]) {
                    continue;
                }
                // A -a leaf's link belongs to its directory too (the
                // directory's own figures leave multiply-linked files out).
                let dir = if nodes.leaf(l.node) {
                    Some(nodes.parent(l.node))
                } else {
                    None
                };
                for n in std::iter::once(l.node).chain(dir) {
                    // Nodes that are not leaves have their slots already.
                    if nodes.leaf(n) {
                        continue;
                    }
                    let s = acc.slot[n.index()] as usize;
                    if self.stamp[s] != self.generation {
                        self.stamp[s] = self.generation;
                        sep[s] += stats;
                    }
                }
            }
        }
        sep
    }

    /// Credits each multiply-linked inode once to every directory on the
    /// union of its links' ancestor chains (under du's rules, `counted`:
    /// only on its counted link's chain), and its exclusive bytes as
    /// reclaimable where all its links lie. `links` is sorted by inode.
    fn credit_links(&mut self, acc: &mut Acc, links: &[Link], counted: Option<&[bool]>) {
        let nodes = self.nodes;
        let mut start = 0;
        for group in links.chunk_by(|a, b| a.inode() == b.inode()) {
            let range = start..start + group.len();
            start += group.len();
            let stats = figures::linked_inode(group.iter().map(|l| &l.stats));
            self.next_generation();
            for (i, l) in range.zip(group) {
                if counted.is_none_or(|c| c[i]) {
                    self.climb(acc, l.node, |a, s| a.full[s] += stats);
                }
            }
            let lca = group
                .iter()
                .map(|l| l.node)
                .reduce(|a, b| acc::lca(self.nodes, a, b));
            if let Some(lca) = lca {
                self.marks.inode(lca, group[0].inode());
                if figures::all_links_seen(group.len(), group[0].nlink)
                    && figures::links_free(group.iter().map(|l| &l.stats))
                {
                    acc.reclaim_at(nodes, lca, stats.exclusive);
                }
            }
        }
    }

    /// Credits the sweep: each segment's bytes as shared once to every
    /// directory above a link of a file mapping it; each unit's bytes as
    /// reclaimable at the lowest common ancestor of all those links, when
    /// every such file has all its links there and the unit is not shared
    /// with something outside the scan.
    fn credit_sweep(
        &mut self,
        acc: &mut Acc,
        files: &FileLinks,
        sweep: &Sweep,
        granularity: impl Fn(u32) -> Granularity,
    ) {
        if files.len() == 0 {
            return;
        }
        let nodes = self.nodes;
        // The lowest common ancestor of each file's links, when all its
        // links were seen.
        // 4 bytes a file: NONE where not all were seen.
        let contained: Vec<NodeId> = (0..files.len() as u32)
            .into_par_iter()
            .map(|f| {
                files
                    .all_seen(f)
                    .then(|| files.nodes(f).reduce(|x, y| acc::lca(nodes, x, y)))
                    .flatten()
                    .unwrap_or(NodeId::NONE)
            })
            .collect();
        segments::credit(
            nodes,
            acc,
            files,
            sweep,
            (&mut self.stamp, &mut self.generation),
        );
        segments::credit_leaves(nodes, acc, files, sweep);
        for (fs, range) in sweep.fs_units() {
            let per_extent = granularity(fs) == Granularity::Extent;
            for i in range {
                let u = sweep.unit(i);
                if !files.unit_freeable((u.mappings, u.ranges, u.files), per_extent) {
                    continue;
                }
                let mut lca = None;
                for &f in u.files {
                    match (contained[f as usize].some(), lca) {
                        (None, _) => {
                            lca = None;
                            break;
                        }
                        (Some(x), None) => lca = Some(x),
                        (Some(x), Some(y)) => lca = Some(acc::lca(self.nodes, x, y)),
                    }
                }
                if let Some(at) = lca {
                    acc.reclaim_at(nodes, at, u.bytes);
                }
                self.marks.unit((lca, fs, i), (nodes, sweep, &contained));
            }
        }
    }
}

#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod model_tests;

#[cfg(test)]
mod tests;
