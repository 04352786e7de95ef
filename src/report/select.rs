//! Which entries to report, and in which order: du order, the
//! `--sort`/`--top`/`--min-size` selection, and the hierarchy the tree view
//! draws.
//!
//! Every format prints "the entries, in some order", so the choosing lives
//! here once, apart from the printers, and never changes a figure: an entry
//! that is not printed still counts in its parent's figures, which were
//! rolled up before. In du order ([`entries`] without a selection) the
//! entries stream straight from [`Tree::visit`]; anything else collects
//! them first into [`Rows`] (post-order with depths, each row's parent
//! rebuilt from the depths), because sorting and `--top` need them all.

use std::cell::OnceCell;
use std::cmp::Ordering;
use std::convert::Infallible;

use super::options::{ReportOptions, SortKey};
use crate::figures::{Bound, Figure, Kind, Stats};
use crate::records::NodeId;
use crate::tree::{ReportEntry, Tree};

/// Calls `f` on every entry to report, in the order to report them: du
/// order, streamed from [`Tree::visit`], or the [`list`] of the collected
/// rows when `--sort`, `--top` or `--min-size` was given.
pub(crate) fn entries<E>(
    tree: &Tree,
    opts: &ReportOptions,
    mut f: impl FnMut(&ReportEntry<'_>) -> Result<(), E>,
) -> Result<(), E> {
    if !opts.selects() {
        return tree.visit(opts.max_depth, f);
    }
    let rows = Rows::collect(tree, opts.max_depth);
    let mut path = Vec::new();
    for i in list(&rows, opts) {
        rows.path_into(i, &mut path);
        f(&rows.entry(i, &path))?;
    }
    Ok(())
}

/// `Row::parent` of a root.
pub(crate) const NO_PARENT: u32 = u32::MAX;

/// The entries to report, collected in du order.
///
/// A row keeps its node, not its path: a path is built when it is needed
/// ([`Rows::path_into`]), from the names in the tree, so that the rows of
/// a chain of `n` directories take memory in `n`, not in the `n²` bytes of
/// their paths. Ties by path are broken by each row's rank in path order
/// ([`Rows::path_order`]), computed once from the names.
#[derive(Debug)]
pub(crate) struct Rows<'t> {
    tree: &'t Tree,
    rows: Vec<Row>,
    /// Each row's rank when the rows are sorted by path; `None` inside
    /// when roots overlap as strings (`a` and `a/b`), and paths are then
    /// compared as built.
    ranks: OnceCell<Option<Vec<u32>>>,
}

/// One collected entry.
#[derive(Clone, Debug)]
pub(crate) struct Row {
    /// The node in the [`Tree`].
    pub(crate) id: NodeId,
    pub(crate) depth: u32,
    pub(crate) kind: Kind,
    pub(crate) figures: Stats,
    /// Whether its Reclaimable is exact, or a bound.
    pub(crate) bound: Bound,
    /// Bytes on disk under it that no file references.
    pub(crate) unreachable: u64,
    /// Index of the parent row, or [`NO_PARENT`] for a root (and for a row
    /// whose parent was not reported: below a stop, see [`Tree::visit`]).
    pub(crate) parent: u32,
}

impl<'t> Rows<'t> {
    /// Collects the entries `tree.visit(max_depth, ..)` reports.
    pub(crate) fn collect(tree: &'t Tree, max_depth: Option<u32>) -> Rows<'t> {
        let mut rows: Vec<Row> = Vec::new();
        // pending[d]: rows at depth d whose parent has not been visited yet
        // (post-order visits children first).
        let mut pending: Vec<Vec<u32>> = Vec::new();
        let _ = tree.visit::<Infallible>(max_depth, |e| {
            let i = rows.len() as u32;
            let d = e.depth as usize;
            if pending.len() < d + 2 {
                pending.resize_with(d + 2, Vec::new);
            }
            for &c in &pending[d + 1] {
                rows[c as usize].parent = i;
            }
            pending[d + 1].clear();
            pending[d].push(i);
            rows.push(Row {
                id: e.id,
                depth: e.depth,
                kind: e.kind,
                figures: *e.figures,
                bound: e.bound,
                unreachable: e.unreachable,
                parent: NO_PARENT,
            });
            Ok(())
        });
        Rows {
            tree,
            rows,
            ranks: OnceCell::new(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    pub(crate) fn row(&self, i: u32) -> &Row {
        &self.rows[i as usize]
    }

    /// Sets `out` to the path of row `i` as printed in the list: its
    /// root as given, then the names down to it, joined as
    /// [`Tree::visit`] joins them. Costs the depth of the row, as printing
    /// the path does.
    pub(crate) fn path_into(&self, i: u32, out: &mut Vec<u8>) {
        let r = &self.rows[i as usize];
        let t = self.tree;
        // The names from the row up to its root, walked twice (to count the
        // bytes, then to write them from the end) so that nothing but `out`
        // is allocated.
        let mut len = 0;
        let mut id = r.id;
        for _ in 0..r.depth {
            let name = t.name(id);
            len += name.len() + 1;
            id = t.parent(id).expect("a node below a root has a parent");
        }
        let root = t.name(id);
        len += root.len();
        // A root given with a trailing `/` takes no other before its child.
        let root_slash = r.depth > 0 && root.last() == Some(&b'/');
        if root_slash {
            len -= 1;
        }
        out.clear();
        out.resize(len, 0);
        let mut end = len;
        let mut id = r.id;
        for k in 0..r.depth {
            let name = t.name(id);
            out[end - name.len()..end].copy_from_slice(name);
            end -= name.len();
            if k + 1 < r.depth || !root_slash {
                end -= 1;
                out[end] = b'/';
            }
            id = t.parent(id).expect("a node below a root has a parent");
        }
        out[..end].copy_from_slice(root);
    }

    /// The path of row `i`, built ([`Rows::path_into`]).
    pub(crate) fn path(&self, i: u32) -> Vec<u8> {
        let mut p = Vec::new();
        self.path_into(i, &mut p);
        p
    }

    /// The last component of the path (the whole path for a root).
    pub(crate) fn name(&self, i: u32) -> &'t [u8] {
        self.tree.name(self.rows[i as usize].id)
    }

    /// Row `i` as the printers see entries, `path` its path.
    pub(crate) fn entry<'a>(&'a self, i: u32, path: &'a [u8]) -> ReportEntry<'a> {
        let r = &self.rows[i as usize];
        ReportEntry {
            id: r.id,
            path,
            depth: r.depth,
            kind: r.kind,
            figures: &r.figures,
            bound: r.bound,
            unreachable: r.unreachable,
        }
    }

    /// Rows `a` and `b` by their paths, as byte strings.
    fn by_path(&self, a: u32, b: u32) -> Ordering {
        match self.ranks.get_or_init(|| self.path_order()) {
            Some(rank) => rank[a as usize].cmp(&rank[b as usize]),
            None => self.path(a).cmp(&self.path(b)),
        }
    }

    /// Each row's rank in the order of the paths as byte strings
    /// ([`path_ranks`]).
    fn path_order(&self) -> Option<Vec<u32>> {
        path_ranks(
            self.rows.len(),
            |i| self.rows[i as usize].parent,
            |i| self.name(i),
            |i| self.path(i),
        )
    }

    /// Largest `c` first, ties by path.
    fn by_size(&self, c: Figure, a: u32, b: u32) -> Ordering {
        c.of(&self.row(b).figures)
            .cmp(&c.of(&self.row(a).figures))
            .then_with(|| self.by_path(a, b))
    }

    /// The rows `--min-size` and `--top` keep, largest rank first when
    /// `--top` sorted them, else in du order.
    ///
    /// Every figure of a directory is at least that of any entry below it,
    /// and a parent's path is a prefix of its children's, so under the
    /// order "largest first, ties by path" a parent always comes before its
    /// children. The N first entries of that order (`--top N`) and the
    /// entries above a size (`--min-size`) therefore always include the
    /// parents of the entries they include: the tree view stays connected.
    fn kept(&self, opts: &ReportOptions) -> Vec<u32> {
        let rank = opts.rank();
        let mut v: Vec<u32> = (0..self.len() as u32)
            .filter(|&i| {
                let r = self.row(i);
                opts.shown(rank.of(&r.figures)) && opts.passes(r.kind, &r.figures)
            })
            .collect();
        if let Some(n) = opts.top {
            if n < v.len() {
                if n > 0 {
                    v.select_nth_unstable_by(n - 1, |&a, &b| self.by_size(rank, a, b));
                }
                v.truncate(n);
            }
            v.sort_unstable_by(|&a, &b| self.by_size(rank, a, b));
        }
        v
    }
}

/// The rows of the list view (text, JSON, `--du`), in the order to print.
///
/// `--min-size` drops entries whose rank figure ([`ReportOptions::rank`])
/// is smaller; `--top N` keeps the N largest by it. The rest are printed
/// by `--sort`, or, without it, in du order when only `--min-size` was
/// given and largest first when `--top` was.
pub(crate) fn list(rows: &Rows, opts: &ReportOptions) -> Vec<u32> {
    let mut v = rows.kept(opts);
    match opts.sort {
        Some(SortKey::Name) => v.sort_unstable_by(|&a, &b| rows.by_path(a, b)),
        Some(SortKey::Size(c)) if opts.top.is_none() => {
            v.sort_unstable_by(|&a, &b| rows.by_size(c, a, b));
        }
        // --top already sorted them by the rank, which is the --sort figure.
        _ => {}
    }
    if opts.reverse {
        v.reverse();
    }
    v
}

/// The tree view's hierarchy: the kept rows (and, should the figures not
/// be monotonic, their ancestors), each row's children in display order.
#[derive(Debug)]
pub(crate) struct Hierarchy {
    /// The roots kept, in the order given.
    pub(crate) roots: Vec<u32>,
    /// `children[i]`: the kept children of row `i`, in display order.
    pub(crate) children: Vec<Vec<u32>>,
}

/// Builds the tree view's hierarchy. Siblings are ordered by `--sort`
/// (largest first, ties by name; by name with `--sort name`), and without
/// `--sort` by the rank figure, as dust and ncdu do.
pub(crate) fn hierarchy(rows: &Rows, opts: &ReportOptions) -> Hierarchy {
    let mut keep = vec![false; rows.len()];
    for i in rows.kept(opts) {
        let mut j = i;
        while j != NO_PARENT && !keep[j as usize] {
            keep[j as usize] = true;
            j = rows.row(j).parent;
        }
    }
    let mut roots = Vec::new();
    let mut children = vec![Vec::new(); rows.len()];
    for i in 0..rows.len() as u32 {
        if keep[i as usize] {
            match rows.row(i).parent {
                NO_PARENT => roots.push(i),
                p => children[p as usize].push(i),
            }
        }
    }
    let key = opts.sort.unwrap_or(SortKey::Size(opts.rank()));
    for kids in &mut children {
        match key {
            SortKey::Name => kids.sort_unstable_by(|&a, &b| rows.name(a).cmp(rows.name(b))),
            SortKey::Size(c) => kids.sort_unstable_by(|&a, &b| {
                c.of(&rows.row(b).figures)
                    .cmp(&c.of(&rows.row(a).figures))
                    .then_with(|| rows.name(a).cmp(rows.name(b)))
            }),
        }
        if opts.reverse {
            kids.reverse();
        }
    }
    Hierarchy { roots, children }
}

/// Each of `n` rows' rank in the order of their paths as byte strings
/// (`parent` gives a row's parent row or [`NO_PARENT`], `name` its name,
/// `path` a top row's whole path), computed from the names without building
/// a path below the tops; `None` when some root's path
/// and `/` begin another root's path (then the other root's rows fall
/// among the first root's descendants).
///
/// A directory's descendants' paths all begin with its path and `/`,
/// which begins no other path among its siblings' (a name holds no `/`,
/// and siblings' names differ): they sort together, as one block keyed
/// by the directory's name and `/`. So the rows of a directory are put
/// in order by sorting, among its children, each child's name (the
/// child) and each child's name and `/` (the block of its
/// descendants, ordered the same way in turn). `a`, `a-b`, `a/c`:
/// `-` sorts before `/`, so `a-b` comes between `a` and its block.
pub(super) fn path_ranks<'a>(
    n: usize,
    parent: impl Fn(u32) -> u32,
    name: impl Fn(u32) -> &'a [u8],
    path: impl Fn(u32) -> Vec<u8>,
) -> Option<Vec<u32>> {
    // The children of each row, as ranges of `kids`.
    let mut start = vec![0u32; n + 1];
    for p in (0..n as u32).map(&parent) {
        if p != NO_PARENT {
            start[p as usize + 1] += 1;
        }
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut kids = vec![0u32; start[n] as usize];
    let mut tops = Vec::new();
    for i in 0..n as u32 {
        match parent(i) {
            NO_PARENT => tops.push(i),
            p => {
                kids[fill[p as usize] as usize] = i;
                fill[p as usize] += 1;
            }
        }
    }
    let has_kids = |i: u32| start[i as usize + 1] > start[i as usize];
    // An item: a row (`false`) or the block of its descendants
    // (`true`), keyed by its name, and `/` for a block.
    type RowOrBlock = (u32, bool);
    let key_cmp = |a: (&[u8], bool), b: (&[u8], bool)| {
        let slash = |s: bool| if s { &b"/"[..] } else { &b""[..] };
        a.0.iter()
            .chain(slash(a.1))
            .cmp(b.0.iter().chain(slash(b.1)))
    };
    // The tops are keyed by their whole paths (a root's is its name);
    // a block's `/` is not added after a path that ends with one.
    let top_paths: Vec<Vec<u8>> = tops.iter().map(|&t| path(t)).collect();
    let top_key = |k: usize, block: bool| {
        let p = &top_paths[k][..];
        (p, block && p.last() != Some(&b'/'))
    };
    let mut top_items: Vec<(usize, bool)> = Vec::with_capacity(2 * tops.len());
    for (k, &t) in tops.iter().enumerate() {
        top_items.push((k, false));
        if has_kids(t) {
            top_items.push((k, true));
        }
    }
    top_items.sort_unstable_by(|&(a, ab), &(b, bb)| key_cmp(top_key(a, ab), top_key(b, bb)));
    // A block must sort as one: no other top may begin with its key.
    for w in top_items.windows(2) {
        let ((a, true), (b, bb)) = (w[0], w[1]) else {
            continue;
        };
        let (ak, aslash) = top_key(a, true);
        let (bk, bslash) = top_key(b, bb);
        let mut bytes = bk.iter().chain(if bslash { &b"/"[..] } else { &b""[..] });
        let begins = ak
            .iter()
            .chain(if aslash { &b"/"[..] } else { &b""[..] })
            .all(|c| bytes.next() == Some(c));
        if begins {
            return None;
        }
    }
    let mut rank = vec![0u32; n];
    let mut next = 0u32;
    let items: Vec<RowOrBlock> = top_items.iter().map(|&(k, b)| (tops[k], b)).collect();
    // The item lists of the blocks being ranked, and the next item of
    // each: at most one list per level of the tree.
    let mut stack: Vec<(Vec<RowOrBlock>, usize)> = vec![(items, 0)];
    while let Some((items, at)) = stack.last_mut() {
        let Some(&(i, block)) = items.get(*at) else {
            stack.pop();
            continue;
        };
        *at += 1;
        if !block {
            rank[i as usize] = next;
            next += 1;
            continue;
        }
        let mut inner: Vec<RowOrBlock> = Vec::new();
        for &c in &kids[start[i as usize] as usize..start[i as usize + 1] as usize] {
            inner.push((c, false));
            if has_kids(c) {
                inner.push((c, true));
            }
        }
        inner.sort_unstable_by(|&(a, ab), &(b, bb)| key_cmp((name(a), ab), (name(b), bb)));
        stack.push((inner, 0));
    }
    Some(rank)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::extents::Sweep;
    use crate::probe::Granularity;
    use crate::records::NodeRec;

    /// Roots as given, each with the same directories below it: names
    /// that sort around `/` (`-` and `.` before it, `b` after it), and a
    /// chain.
    fn tree(roots: &[&str]) -> Tree {
        let mut nodes = vec![NodeRec {
            id: NodeId::new(0),
            parent: NodeId::NONE,
            kind: Kind::Dir,
            ..NodeRec::default()
        }];
        let mut add = |parent: usize, depth: u32, name: &str| {
            let id = nodes.len();
            nodes.push(NodeRec {
                order: 0,
                id: NodeId::new(id),
                parent: NodeId::new(parent),
                depth,
                kind: Kind::Dir,
                leaf: false,
                name: name.as_bytes().into(),
                own: Stats::default(),
            });
            id
        };
        for r in roots {
            let r = add(0, 0, r);
            for n in ["a", "a-b", "a.c", "ab", "a b"] {
                let d = add(r, 1, n);
                for m in ["x", "x-", "x0"] {
                    add(d, 2, m);
                }
            }
            let mut d = add(r, 1, "z");
            for k in 0..50 {
                d = add(d, k + 2, if k % 2 == 0 { "c" } else { "c-" });
            }
        }
        Tree::build(nodes, vec![], &[], &Sweep::default(), |_| {
            Granularity::Block
        })
    }

    /// The paths built are those [`Tree::visit`] gives, and every two rows
    /// compare by path as their paths do, the ranks used or not.
    #[test]
    fn paths_built_and_path_order_agree_with_the_paths() {
        for roots in [
            &["r"][..],
            &["r/"],
            &["/"],
            &["r", "q", "r-"],
            &["r", "r/a"],
            &["r/", "r/a"],
            &["r", "r"],
        ] {
            let t = tree(roots);
            let mut want = Vec::new();
            let _ = t.visit::<Infallible>(None, |e| {
                want.push(e.path.to_vec());
                Ok(())
            });
            let rows = Rows::collect(&t, None);
            assert_eq!(rows.len(), want.len());
            for (i, w) in want.iter().enumerate() {
                assert_eq!(&rows.path(i as u32), w, "{roots:?}");
            }
            let nested = rows.path_order().is_none();
            assert_eq!(
                nested,
                roots.len() > 1 && roots[1].starts_with(roots[0]),
                "{roots:?}"
            );
            let n = rows.len() as u32;
            for a in 0..n {
                for b in 0..n {
                    let (pa, pb) = (&want[a as usize], &want[b as usize]);
                    if pa != pb {
                        assert_eq!(rows.by_path(a, b), pa.cmp(pb), "{roots:?}: {pa:?} {pb:?}");
                    }
                }
            }
        }
    }
}
