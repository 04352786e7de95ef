//! `--compare OLD`'s report: for every entry, the change of each figure
//! since the old scan, and whether it is new, gone, or its sharing
//! changed ([`Change::sharing_changed`]).
//!
//! The rows are the new scan's entries (`-d`, `-s`, `-a` choose them as
//! in the report) and the old entries that are gone. They are listed by
//! the growth of the rank figure ([`ReportOptions::rank`]: `--sort`'s,
//! else Total), largest first, ties by path; `--sort name` by path;
//! `--top N` keeps the N first; `--min-size` hides the entries whose
//! figures all moved by less ([`moved`]: a reflink copy made elsewhere
//! moves an entry's Exclusive and Shared, not its Total, and that row is
//! the news); `--reverse` reverses. The text table prints each
//! change signed (`+5.0M`, `-30M`, `0`) in the report's unit, then a
//! `Note` column (`new`, `gone`, `sharing`) and the path, and after the
//! table a line for each note and mark that appears in it. The JSON
//! document is in `changes_json`.

use std::cmp::Ordering;
use std::convert::Infallible;
use std::io::{self, Write};

use super::options::{ReportOptions, SortKey};
use crate::compare::{Change, Comparison};
use crate::figures::{Bound, Figure, Kind};
use crate::records::NodeId;
use crate::tree::Tree;

/// `ChangeRow::parent` of a row listed at the top: a root, new or gone (and a
/// row whose parent is not listed).
const NO_PARENT: u32 = u32::MAX;

/// Where a row's entry is.
#[derive(Clone, Copy, Debug)]
enum RowSource {
    /// A node of the new tree.
    New(NodeId),
    /// An index into [`Comparison::gone`].
    Gone(u32),
}

/// One entry of the comparison. It keeps its node, not its path: a path is
/// built when printed ([`ChangeRows::path_into`]).
#[derive(Clone, Debug)]
pub(super) struct ChangeRow {
    source: RowSource,
    /// The row of the directory it is in, in the tree that the new entries
    /// and the gone ones make together.
    parent: u32,
    pub(super) depth: u32,
    pub(super) kind: Kind,
    pub(super) change: Change,
}

/// The rows, collected: the new scan's entries in du order, then the gone
/// ones. A chain of `n` directories takes memory in `n`, not in the `n²`
/// bytes of its paths; ties by path are broken by each row's rank in path
/// order ([`ChangeRows::path_order`]), computed once from the names.
#[derive(Debug)]
pub(super) struct ChangeRows<'a> {
    tree: &'a Tree,
    cmp: &'a Comparison,
    rows: Vec<ChangeRow>,
}

impl<'a> ChangeRows<'a> {
    /// The entries of `tree` down to `opts.max_depth`, each with its old
    /// side, and the gone entries as deep.
    pub(super) fn collect(
        tree: &'a Tree,
        cmp: &'a Comparison,
        opts: &ReportOptions,
    ) -> ChangeRows<'a> {
        let mut rows = Vec::new();
        // The row of each new node listed, and of each old node gone.
        let mut new_row = vec![NO_PARENT; tree.len()];
        let mut gone_row = vec![NO_PARENT; cmp.old_tree().len()];
        let _ = tree.visit::<Infallible>(opts.max_depth, |e| {
            new_row[e.id.index()] = rows.len() as u32;
            rows.push(ChangeRow {
                source: RowSource::New(e.id),
                parent: NO_PARENT,
                depth: e.depth,
                kind: e.kind,
                change: cmp.change(tree, e.id),
            });
            Ok(())
        });
        // Post-order: a parent's row comes after its children's.
        for r in &mut rows {
            let RowSource::New(id) = r.source else {
                unreachable!("only new rows so far")
            };
            if let Some(p) = tree.parent(id).filter(|&p| p != NodeId::TOP) {
                r.parent = new_row[p.index()];
            }
        }
        // Pre-order: a gone directory's row comes before what was in it.
        for (k, g) in cmp.gone().iter().enumerate() {
            if opts.max_depth.is_none_or(|m| g.depth <= m) {
                let parent = match cmp.gone_parent(g) {
                    Ok(NodeId::TOP) => NO_PARENT,
                    Ok(n) => new_row[n.index()],
                    Err(x) => gone_row[x.index()],
                };
                gone_row[g.old.index()] = rows.len() as u32;
                rows.push(ChangeRow {
                    source: RowSource::Gone(k as u32),
                    parent,
                    depth: g.depth,
                    kind: cmp.gone_kind(g),
                    change: cmp.gone_change(g),
                });
            }
        }
        ChangeRows { tree, cmp, rows }
    }

    pub(super) fn row(&self, i: usize) -> &ChangeRow {
        &self.rows[i]
    }

    /// Sets `out` to the path of row `i` as the report prints it. Costs its
    /// depth, as printing it does.
    pub(super) fn path_into(&self, i: usize, out: &mut Vec<u8>) {
        match self.rows[i].source {
            RowSource::New(id) => new_path(self.tree, id, out),
            RowSource::Gone(k) => self
                .cmp
                .gone_path(self.tree, &self.cmp.gone()[k as usize], out),
        }
    }

    /// The path of row `i`, built ([`ChangeRows::path_into`]).
    pub(super) fn path(&self, i: usize) -> Vec<u8> {
        let mut p = Vec::new();
        self.path_into(i, &mut p);
        p
    }

    /// The last component of row `i`'s path.
    fn name(&self, i: usize) -> &[u8] {
        match self.rows[i].source {
            RowSource::New(id) => self.tree.name(id),
            RowSource::Gone(k) => self.cmp.old_tree().name(self.cmp.gone()[k as usize].old),
        }
    }

    /// The rows to print, in order (the module's comment says which).
    pub(super) fn list(&self, opts: &ReportOptions) -> Vec<usize> {
        let rank = opts.rank();
        let sharing = self.cmp.sharing();
        let mut v: Vec<usize> = (0..self.rows.len())
            .filter(|&i| {
                let d = moved(&self.rows[i].change, rank, sharing);
                opts.min_size.is_none_or(|m| d >= u128::from(m))
            })
            .collect();
        let order = self.path_order();
        let by_path = |a: &usize, b: &usize| match &order {
            Some(o) => o[*a].cmp(&o[*b]),
            None => self.path(*a).cmp(&self.path(*b)),
        };
        match opts.sort {
            Some(SortKey::Name) => v.sort_unstable_by(by_path),
            _ => v.sort_unstable_by(|a, b| {
                let (x, y) = (self.rows[*a].change, self.rows[*b].change);
                y.delta(rank)
                    .cmp(&x.delta(rank))
                    .then_with(|| by_path(a, b))
            }),
        }
        if let Some(n) = opts.top {
            v.truncate(n);
        }
        if opts.reverse {
            v.reverse();
        }
        v
    }

    /// Each row's rank in the order of the paths as byte strings
    /// ([`super::select::path_ranks`]); `None` when a top row's path and `/`
    /// begin another top row's path, and paths are then compared as built.
    fn path_order(&self) -> Option<Vec<u32>> {
        super::select::path_ranks(
            self.rows.len(),
            |i| self.rows[i as usize].parent,
            |i| self.name(i as usize),
            |i| self.path(i as usize),
        )
    }
}

/// What `--min-size` weighs of a change: the largest move of the rank
/// figure and of Total, Exclusive, Shared and Reclaimable (of Total alone
/// when a scan does not know what is shared: the others are not compared
/// then); of the count alone when the rank is `--inodes`, a count and no
/// size.
pub(super) fn moved(c: &Change, rank: Figure, sharing: bool) -> u128 {
    let bytes: &[Figure] = match (rank, sharing) {
        (Figure::Inodes, _) => &[],
        (_, true) => &[
            Figure::Total,
            Figure::Exclusive,
            Figure::Shared,
            Figure::Reclaimable,
        ],
        (_, false) => &[Figure::Total],
    };
    bytes
        .iter()
        .chain([&rank])
        .map(|&f| c.delta(f).unsigned_abs())
        .max()
        .unwrap_or(0)
}

/// Builds the paths of rows printed one after another, keeping the part of
/// the last path that the next one shares: printed from the root down, the
/// rows of a chain each add one name. Holds one path and the rows along it.
pub(super) struct Paths {
    /// The path last built.
    buf: Vec<u8>,
    /// The rows along `buf`, from the top down, each with the length of
    /// its path.
    stack: Vec<(u32, usize)>,
    /// By row: its place in `stack` plus one, or 0.
    at: Vec<u32>,
    /// The rows to add below what is kept.
    climb: Vec<u32>,
}

impl Paths {
    pub(super) fn new(rows: &ChangeRows<'_>) -> Paths {
        Paths {
            buf: Vec::new(),
            stack: Vec::new(),
            at: vec![0; rows.rows.len()],
            climb: Vec::new(),
        }
    }

    /// The path of row `i` of `rows` as the report prints it.
    pub(super) fn of(&mut self, rows: &ChangeRows<'_>, i: usize) -> &[u8] {
        self.climb.clear();
        let mut j = i as u32;
        let keep = loop {
            if self.at[j as usize] != 0 {
                break self.at[j as usize] as usize;
            }
            self.climb.push(j);
            match rows.rows[j as usize].parent {
                NO_PARENT => break 0,
                p => j = p,
            }
        };
        for &(r, _) in &self.stack[keep..] {
            self.at[r as usize] = 0;
        }
        self.stack.truncate(keep);
        self.buf
            .truncate(self.stack.last().map_or(0, |&(_, len)| len));
        while let Some(r) = self.climb.pop() {
            if self.stack.is_empty() {
                // A top row: its whole path.
                rows.path_into(r as usize, &mut self.buf);
            } else {
                // No second `/` after a root that ends in one.
                if self.buf.last() != Some(&b'/') {
                    self.buf.push(b'/');
                }
                self.buf.extend_from_slice(rows.name(r as usize));
            }
            self.stack.push((r, self.buf.len()));
            self.at[r as usize] = self.stack.len() as u32;
        }
        &self.buf
    }
}

/// Sets `out` to the path of node `id` of `t` as the report prints it: its
/// root as given, then the names down to it (no second `/` after a root
/// that ends in one).
fn new_path(t: &Tree, id: NodeId, out: &mut Vec<u8>) {
    let mut names = vec![t.name(id)];
    let mut n = id;
    while let Some(p) = t.parent(n).filter(|&p| p != NodeId::TOP) {
        names.push(t.name(p));
        n = p;
    }
    out.clear();
    for (k, name) in names.iter().rev().enumerate() {
        if k > 0 && out.last() != Some(&b'/') {
            out.push(b'/');
        }
        out.extend_from_slice(name);
    }
}

/// The columns compared: the report's, or, when a scan does not know what
/// is shared, Total and the apparent size (in the report's order of them).
pub(super) fn columns(opts: &ReportOptions, sharing: bool) -> Vec<Figure> {
    if sharing {
        return opts.columns.clone();
    }
    let mut c = match opts.columns.first() {
        Some(Figure::Apparent) => vec![Figure::Apparent, Figure::Total],
        _ => vec![Figure::Total, Figure::Apparent],
    };
    if opts.columns.contains(&Figure::Inodes) {
        c.push(Figure::Inodes);
    }
    c
}

/// What the Note column says of an entry.
fn note(c: &Change) -> &'static str {
    match (c.old, c.new) {
        (None, _) => "new",
        (_, None) => "gone",
        _ if c.sharing_changed() => "sharing",
        _ => "",
    }
}

/// A change as the table prints it: `0`, or signed, in `opts`'s unit.
fn signed(opts: &ReportOptions, figure: Figure, d: i128, out: &mut String) {
    out.clear();
    match d.cmp(&0) {
        Ordering::Equal => out.push('0'),
        o => {
            out.push(if o == Ordering::Less { '-' } else { '+' });
            let m = u64::try_from(d.unsigned_abs()).unwrap_or(u64::MAX);
            opts.unit_of(figure).format(m, out);
        }
    }
}

/// The text table of `cmp` (the new scan's `tree`).
pub(super) fn text(
    out: &mut dyn Write,
    tree: &Tree,
    cmp: &Comparison,
    opts: &ReportOptions,
) -> io::Result<()> {
    let rows = ChangeRows::collect(tree, cmp, opts);
    let order = rows.list(opts);
    let cols = columns(opts, cmp.sharing());
    let total = opts.grand_total.then(|| cmp.total_change(tree));
    let all: Vec<Change> = order
        .iter()
        .map(|&i| rows.row(i).change)
        .chain(total)
        .collect();
    if all.is_empty() {
        return Ok(());
    }
    let marks = cols.contains(&Figure::Reclaimable) && all.iter().any(|c| !c.reclaimable_exact());
    let mut cell = String::new();
    // A change of Reclaimable is marked by its direction, before it.
    let cell_of = |f: Figure, c: &Change, cell: &mut String| {
        signed(opts, f, c.delta(f), cell);
        if marks && f == Figure::Reclaimable {
            cell.insert_str(0, c.bound().mark(opts.ascii_marks));
        }
    };
    let widths: Vec<usize> = cols
        .iter()
        .map(|&f| {
            let widest = all.iter().fold(0, |w, c| {
                cell_of(f, c, &mut cell);
                w.max(cell.chars().count())
            });
            widest.max(f.header().len())
        })
        .collect();
    let notes = all.iter().any(|c| !note(c).is_empty());
    let note_w = "sharing".len();
    let end = if opts.null { b'\0' } else { b'\n' };
    let mut line = Vec::with_capacity(256);
    if opts.header && !opts.null {
        for (f, &w) in cols.iter().zip(&widths) {
            write!(line, "{:>w$}  ", f.header())?;
        }
        if notes {
            write!(line, "{:<note_w$}  ", "Note")?;
        }
        line.extend_from_slice(b"Path\n");
        out.write_all(&line)?;
    }
    let mut row = |path: &[u8], c: &Change| -> io::Result<()> {
        line.clear();
        for (f, &w) in cols.iter().zip(&widths) {
            cell_of(*f, c, &mut cell);
            write!(line, "{cell:>w$}  ")?;
        }
        if notes {
            write!(line, "{:<note_w$}  ", note(c))?;
        }
        opts.push_name(&mut line, path);
        line.push(end);
        out.write_all(&line)
    };
    let mut paths = Paths::new(&rows);
    for &i in &order {
        row(paths.of(&rows, i), &rows.row(i).change)?;
    }
    if let Some(t) = &total {
        row(b"total", t)?;
    }
    if opts.header && !opts.null {
        legend(out, &all, marks, opts.ascii_marks)?;
    }
    Ok(())
}

/// After the table: what each note and mark that appears in it means.
fn legend(out: &mut dyn Write, all: &[Change], marks: bool, ascii: bool) -> io::Result<()> {
    if all.iter().any(Change::sharing_changed) {
        writeln!(
            out,
            "sharing: Exclusive moved by more or less than Total: data in it became shared or \
             stopped being shared (a snapshot or copy deleted or made, a shared file rewritten); \
             where Total did not move, all of Exclusive's change is such data"
        )?;
    }
    if marks {
        let mut shown = super::table::Shown::default();
        for c in all {
            shown.add(c.bound());
        }
        for (b, why) in [
            (
                Bound::AT_MOST,
                "is at most this: the new figure is at most, or the old at least, \
                 what deleting frees",
            ),
            (
                Bound::AT_LEAST,
                "is at least this: the new figure is at least, or the old at most, \
                 what deleting frees",
            ),
            (
                Bound::UNKNOWN,
                "may be more or less than this: its figures are bounds both ways",
            ),
        ] {
            if shown.has(b) {
                writeln!(out, "{} the change of Reclaimable {why}", b.mark(ascii))?;
            }
        }
    }
    Ok(())
}

/// The old Total of node `id` of `tree` when the old scan had it, for the
/// page's growth colouring (`--html --compare`).
pub(super) fn old_total(cmp: &Comparison, id: NodeId) -> Option<u64> {
    cmp.old_of(id).map(|x| cmp.old_tree().figures(x).total)
}

#[cfg(test)]
mod tests {
    use super::moved;
    use crate::compare::Change;
    use crate::figures::{Bound, Figure, Stats};

    fn side(total: u64, exclusive: u64) -> Option<(Stats, Bound)> {
        let s = Stats {
            total,
            exclusive,
            shared: total - exclusive,
            reclaimable: exclusive,
            ..Stats::default()
        };
        Some((s, Bound::EXACT))
    }

    /// A reflink copy made elsewhere: Total stays, Exclusive and Shared
    /// move by the copy; --min-size weighs that move, unless the scans do
    /// not know what is shared.
    #[test]
    fn min_size_weighs_the_largest_move_of_any_figure() {
        let copied = Change {
            old: side(300, 300),
            new: side(300, 100),
        };
        assert_eq!(copied.delta(Figure::Total), 0);
        assert_eq!(moved(&copied, Figure::Total, true), 200);
        assert_eq!(moved(&copied, Figure::Total, false), 0);
        let grew = Change {
            old: side(100, 50),
            new: side(130, 80),
        };
        assert_eq!(moved(&grew, Figure::Exclusive, true), 30);
        assert_eq!(moved(&grew, Figure::Inodes, true), 0);
    }
}
