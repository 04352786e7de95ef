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

use std::cmp::Ordering;
use std::convert::Infallible;

use super::options::{ReportOptions, SortKey};
use crate::figures::{Bound, Figure, Kind, Stats};
use crate::records::NodeId;
use crate::tree::{Entry, Tree};

/// Calls `f` on every entry to report, in the order to report them: du
/// order, streamed from [`Tree::visit`], or the [`list`] of the collected
/// rows when `--sort`, `--top` or `--min-size` was given.
pub(crate) fn entries<E>(
    tree: &Tree,
    opts: &ReportOptions,
    mut f: impl FnMut(&Entry<'_>) -> Result<(), E>,
) -> Result<(), E> {
    if !opts.selects() {
        return tree.visit(opts.max_depth, f);
    }
    let rows = Rows::collect(tree, opts.max_depth);
    for i in list(&rows, opts) {
        f(&rows.entry(i))?;
    }
    Ok(())
}

/// `Row::parent` of a root.
pub(crate) const NO_PARENT: u32 = u32::MAX;

/// The entries to report, collected in du order.
#[derive(Debug, Default)]
pub(crate) struct Rows {
    /// Every path, one after the other.
    arena: Vec<u8>,
    rows: Vec<Row>,
}

/// One collected entry.
#[derive(Clone, Debug)]
pub(crate) struct Row {
    /// The node in the [`Tree`].
    pub(crate) id: NodeId,
    /// The path is `arena[start..end]`, its last component `arena[name..end]`
    /// (the whole path for a root).
    start: usize,
    name: usize,
    end: usize,
    pub(crate) depth: u32,
    pub(crate) kind: Kind,
    pub(crate) figures: Stats,
    /// Whether its Reclaimable is exact, or a bound.
    pub(crate) bound: Bound,
    /// Bytes on disk under it that no file references.
    pub(crate) unreachable: u64,
    /// Index of the parent row, or [`NO_PARENT`] for a root.
    pub(crate) parent: u32,
}

impl Rows {
    /// Collects the entries `tree.visit(max_depth, ..)` reports.
    pub(crate) fn collect(tree: &Tree, max_depth: Option<u32>) -> Rows {
        let mut r = Rows::default();
        // pending[d]: rows at depth d whose parent has not been visited yet
        // (post-order visits children first).
        let mut pending: Vec<Vec<u32>> = Vec::new();
        let _ = tree.visit::<Infallible>(max_depth, |e| {
            let i = r.rows.len() as u32;
            let d = e.depth as usize;
            if pending.len() < d + 2 {
                pending.resize_with(d + 2, Vec::new);
            }
            for &c in &pending[d + 1] {
                r.rows[c as usize].parent = i;
            }
            pending[d + 1].clear();
            pending[d].push(i);
            let start = r.arena.len();
            r.arena.extend_from_slice(e.path);
            let name = if e.depth == 0 {
                start
            } else {
                start + e.path.iter().rposition(|&b| b == b'/').map_or(0, |p| p + 1)
            };
            r.rows.push(Row {
                id: e.id,
                start,
                name,
                end: r.arena.len(),
                depth: e.depth,
                kind: e.kind,
                figures: *e.figures,
                bound: e.bound,
                unreachable: e.unreachable,
                parent: NO_PARENT,
            });
            Ok(())
        });
        r
    }

    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    pub(crate) fn row(&self, i: u32) -> &Row {
        &self.rows[i as usize]
    }

    /// The path as printed in the list.
    pub(crate) fn path(&self, i: u32) -> &[u8] {
        let r = &self.rows[i as usize];
        &self.arena[r.start..r.end]
    }

    /// The last component of the path (the whole path for a root).
    pub(crate) fn name(&self, i: u32) -> &[u8] {
        let r = &self.rows[i as usize];
        &self.arena[r.name..r.end]
    }

    /// Row `i` as the printers see entries.
    pub(crate) fn entry(&self, i: u32) -> Entry<'_> {
        let r = &self.rows[i as usize];
        Entry {
            id: r.id,
            path: self.path(i),
            depth: r.depth,
            kind: r.kind,
            figures: &r.figures,
            bound: r.bound,
            unreachable: r.unreachable,
        }
    }

    /// Largest `c` first, ties by path.
    fn by_size(&self, c: Figure, a: u32, b: u32) -> Ordering {
        c.of(&self.row(b).figures)
            .cmp(&c.of(&self.row(a).figures))
            .then_with(|| self.path(a).cmp(self.path(b)))
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
        Some(SortKey::Name) => v.sort_unstable_by(|&a, &b| rows.path(a).cmp(rows.path(b))),
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
