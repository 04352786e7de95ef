//! `--compare OLD`'s report: for every entry, the change of each figure
//! since the old scan, and whether it is new, gone, or its sharing
//! changed ([`Change::sharing_changed`]).
//!
//! The rows are the new scan's entries (`-d`, `-s`, `-a` choose them as
//! in the report) and the old entries that are gone. They are listed by
//! the growth of the rank figure ([`ReportOptions::rank`]: `--sort`'s,
//! else Total), largest first, ties by path; `--sort name` by path;
//! `--top N` keeps the N first; `--min-size` hides the entries whose rank
//! figure moved by less; `--reverse` reverses. The text table prints each
//! change signed (`+5.0M`, `-30M`, `0`) in the report's unit, then a
//! `Note` column (`new`, `gone`, `sharing`) and the path, and after the
//! table a line for each note and mark that appears in it. The JSON
//! document is in `compare_json`.

use std::cmp::Ordering;
use std::convert::Infallible;
use std::io::{self, Write};

use super::options::{ReportOptions, SortKey};
use crate::compare::{Change, Comparison};
use crate::figures::{Figure, Kind};
use crate::tree::Tree;

/// The mark after a change of Reclaimable that is not exact.
const MARK: char = '*';

/// One entry of the comparison.
#[derive(Clone, Debug)]
pub(super) struct Row {
    /// The path is `Rows::arena[start..end]`.
    start: usize,
    end: usize,
    pub(super) depth: u32,
    pub(super) kind: Kind,
    pub(super) change: Change,
}

/// The rows, collected: the new scan's entries in du order, then the gone
/// ones.
#[derive(Debug, Default)]
pub(super) struct Rows {
    arena: Vec<u8>,
    rows: Vec<Row>,
}

impl Rows {
    /// The entries of `tree` down to `opts.max_depth`, each with its old
    /// side, and the gone entries as deep.
    pub(super) fn collect(tree: &Tree, cmp: &Comparison, opts: &ReportOptions) -> Rows {
        let mut r = Rows::default();
        let _ = tree.visit::<Infallible>(opts.max_depth, |e| {
            r.push(e.path, e.depth, e.kind, cmp.change(tree, e.id));
            Ok(())
        });
        for g in cmp.gone() {
            if opts.max_depth.is_none_or(|m| g.depth <= m) {
                r.push(&g.path, g.depth, cmp.gone_kind(g), cmp.gone_change(g));
            }
        }
        r
    }

    fn push(&mut self, path: &[u8], depth: u32, kind: Kind, change: Change) {
        let start = self.arena.len();
        self.arena.extend_from_slice(path);
        self.rows.push(Row {
            start,
            end: self.arena.len(),
            depth,
            kind,
            change,
        });
    }

    pub(super) fn row(&self, i: usize) -> &Row {
        &self.rows[i]
    }

    pub(super) fn path(&self, i: usize) -> &[u8] {
        let r = &self.rows[i];
        &self.arena[r.start..r.end]
    }

    /// The rows to print, in order (the module's comment says which).
    pub(super) fn list(&self, opts: &ReportOptions) -> Vec<usize> {
        let rank = opts.rank();
        let mut v: Vec<usize> = (0..self.rows.len())
            .filter(|&i| {
                let d = self.rows[i].change.delta(rank).unsigned_abs();
                opts.min_size.is_none_or(|m| d >= u128::from(m))
            })
            .collect();
        let by_path = |a: &usize, b: &usize| self.path(*a).cmp(self.path(*b));
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
    let rows = Rows::collect(tree, cmp, opts);
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
    let widths: Vec<usize> = cols
        .iter()
        .map(|&f| {
            let extra = usize::from(marks && f == Figure::Reclaimable);
            let widest = all.iter().fold(0, |w, c| {
                signed(opts, f, c.delta(f), &mut cell);
                w.max(cell.chars().count())
            });
            widest.max(f.header().len()) + extra
        })
        .collect();
    let notes = all.iter().any(|c| !note(c).is_empty());
    let note_w = "sharing".len();
    let end = if opts.null { b'\0' } else { b'\n' };
    let mut line = Vec::with_capacity(256);
    if opts.header && !opts.null {
        for (f, &w) in cols.iter().zip(&widths) {
            if marks && *f == Figure::Reclaimable {
                write!(line, "{:>w$}   ", f.header(), w = w - 1)?;
            } else {
                write!(line, "{:>w$}  ", f.header())?;
            }
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
            signed(opts, *f, c.delta(*f), &mut cell);
            if marks && *f == Figure::Reclaimable {
                cell.push(if c.reclaimable_exact() { ' ' } else { MARK });
            }
            write!(line, "{cell:>w$}  ")?;
        }
        if notes {
            write!(line, "{:<note_w$}  ", note(c))?;
        }
        opts.push_name(&mut line, path);
        line.push(end);
        out.write_all(&line)
    };
    for &i in &order {
        row(rows.path(i), &rows.row(i).change)?;
    }
    if let Some(t) = &total {
        row(b"total", t)?;
    }
    if opts.header && !opts.null {
        legend(out, &all, marks)?;
    }
    Ok(())
}

/// After the table: what each note and mark that appears in it means.
fn legend(out: &mut dyn Write, all: &[Change], marks: bool) -> io::Result<()> {
    if all.iter().any(Change::sharing_changed) {
        writeln!(
            out,
            "sharing: Exclusive moved by more or less than Total: data in it became shared or \
             stopped being shared (a snapshot or copy deleted or made, a shared file rewritten); \
             where Total did not move, all of Exclusive's change is such data"
        )?;
    }
    if marks {
        let b = all
            .iter()
            .filter(|c| !c.reclaimable_exact())
            .fold(crate::figures::Bound::EXACT, |a, c| a.with(c.bound()));
        let why = match (b.at_most(), b.at_least()) {
            (true, false) => "at most (data may also be held outside the scan)",
            (false, true) => "at least (Btrfs extents referenced in part are seen only as root)",
            _ => "a bound",
        };
        writeln!(
            out,
            "{MARK} Reclaimable is {why} in the old scan or the new: its change is not exact"
        )?;
    }
    Ok(())
}

/// The old Total of every entry of `tree` the report lists, by its path
/// as printed, for the page's growth colouring (`--html --compare`).
pub(super) fn old_totals(
    tree: &Tree,
    cmp: &Comparison,
    opts: &ReportOptions,
) -> std::collections::HashMap<Vec<u8>, u64> {
    let mut m = std::collections::HashMap::new();
    let _ = tree.visit::<Infallible>(opts.max_depth, |e| {
        if let Some(x) = cmp.old_of(e.id) {
            m.insert(e.path.to_vec(), cmp.old_tree().figures(x).total);
        }
        Ok(())
    });
    m
}
