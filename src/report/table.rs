//! The text table (`Total  Exclusive  Shared  Reclaimable  Path`) and du's
//! own `SIZE<TAB>PATH` lines (`--du FIGURE`), plus the column widths,
//! heading and size cells that the tree view draws with too.
//!
//! Both formats are one line per entry, streamed in the order
//! [`select::entries`] gives, so they share one home; the cell helpers are
//! here rather than in the tree view because the table is what they
//! describe, and the tree view must line up with it column for column. The
//! widths are known before the first row is written because every figure of
//! a root bounds those of the entries below it. The path is the last cell,
//! so no width depends on it: the table prints it raw, or quoted as ls
//! shows it when stdout is a terminal ([`ReportOptions::quote_names`]);
//! du's lines always print it raw, as du does.

use std::collections::HashSet;
use std::io::{self, Write};

use super::options::ReportOptions;
use super::select;
use crate::figures::{Bound, Figure, Stats};
use crate::records::{NodeId, ReadError};
use crate::timefmt::TimeFormat;
use crate::tree::Tree;

/// The heading of the column of ncdu's marks ([`Unread`]), printed before
/// the path when the scan did not read some directory in full.
pub(super) const FLAG: &str = "Flag";

/// The directories the scan did not read in full, marked as ncdu and the
/// browser mark them: `!` on a directory that could not be read (nothing
/// of it is counted), `.` on one read in part (an entry in it could not
/// be read, its listing broke off, or such a directory lies below it: its
/// figures are those of what was read). Without the mark `0 0 0 0
/// ./scratch` would read as an empty directory, and only stderr would say
/// otherwise.
#[derive(Debug, Default)]
pub(super) struct Unread<'a> {
    /// Sorted by node.
    errors: &'a [ReadError],
    /// Every directory with an error somewhere below it.
    above: HashSet<NodeId>,
    /// The marks printed so far: `!`, `.`.
    shown: [bool; 2],
}

impl<'a> Unread<'a> {
    /// The marks of `errors` (sorted by node) in `tree`.
    pub(super) fn new(tree: &Tree, errors: &'a [ReadError]) -> Unread<'a> {
        let above = tree.above_errors(errors);
        Unread {
            errors,
            above,
            shown: [false; 2],
        }
    }

    /// Whether the table has the column: some directory was not read in
    /// full.
    pub(super) fn column(&self) -> bool {
        !self.errors.is_empty()
    }

    /// `!`, `.` or a space: the mark of node `id` (`None`: the `-c`
    /// total, never marked), recorded for the legend.
    pub(super) fn mark(&mut self, id: Option<NodeId>) -> char {
        let Some(id) = id else { return ' ' };
        let start = self.errors.partition_point(|e| e.node < id);
        let mark = match self.errors.get(start) {
            Some(e) if e.node == id && e.whole => '!',
            Some(e) if e.node == id => '.',
            _ if self.above.contains(&id) => '.',
            _ => ' ',
        };
        match mark {
            '!' => self.shown[0] = true,
            '.' => self.shown[1] = true,
            _ => {}
        }
        mark
    }

    /// Appends the mark of `id` in its column, and the two spaces after
    /// it; nothing when the table has no such column.
    pub(super) fn cell(&mut self, line: &mut Vec<u8>, id: Option<NodeId>) {
        if self.column() {
            let m = self.mark(id);
            line.extend_from_slice(format!("{m:>w$}  ", w = FLAG.len()).as_bytes());
        }
    }

    /// Appends the column's heading and its two spaces, when it has one.
    pub(super) fn heading(&self, line: &mut Vec<u8>) {
        if self.column() {
            line.extend_from_slice(FLAG.as_bytes());
            line.extend_from_slice(b"  ");
        }
    }

    /// The columns the flag column takes.
    pub(super) fn width(&self) -> usize {
        if self.column() { FLAG.len() + 2 } else { 0 }
    }

    /// After the table (with a heading): what each mark printed means.
    pub(super) fn legend(&self, out: &mut dyn Write, opts: &ReportOptions) -> io::Result<()> {
        if !opts.header || opts.null {
            return Ok(());
        }
        if self.shown[0] {
            writeln!(
                out,
                "! could not be read: nothing in it is counted (stderr says why)"
            )?;
        }
        if self.shown[1] {
            writeln!(
                out,
                ". read in part: an entry in it or below it could not be read (named on \
                 stderr); its figures count what was read"
            )?;
        }
        Ok(())
    }
}

/// The width of each size column, and whether the Reclaimable column
/// carries marks (then wide enough for a mark before the widest figure).
#[derive(Clone, Debug)]
pub(super) struct Widths {
    cols: Vec<usize>,
    marks: bool,
}

/// The marks printed so far, one bit per direction ([`Bound::mark`]): at
/// most, at least, both. What the legend explains.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Shown(u8);

impl Shown {
    /// Records that a figure with the reasons `b` was printed.
    pub(crate) fn add(&mut self, b: Bound) {
        self.0 |= (1 << b.bits()) & !1;
    }

    /// Whether a mark was printed for a bound of exactly the reasons `b`.
    pub(crate) fn has(self, b: Bound) -> bool {
        !b.is_exact() && self.0 & (1 << b.bits()) != 0
    }

    /// The reasons of every mark printed.
    pub(crate) fn reasons(self) -> Bound {
        [Bound::AT_MOST, Bound::AT_LEAST, Bound::UNKNOWN]
            .into_iter()
            .filter(|&b| self.has(b))
            .fold(Bound::EXACT, Bound::with)
    }
}

/// What each mark means, in the order the legend gives them: the
/// direction and why a figure can err that way.
pub(crate) const MEANINGS: [(Bound, &str); 3] = [
    (
        Bound::AT_MOST,
        "Reclaimable at most: data it counts may also be held outside the scan \
         (a snapshot, a copy, an excluded entry), is compressed and counted \
         uncompressed, or on Btrfs lies end to end with data not freed with it \
         (root tells them apart); deleting may free less",
    ),
    (
        Bound::AT_LEAST,
        "Reclaimable at least: an entry under it could not be read (named on \
         stderr), or Btrfs extents referenced only in part, or that FIEMAP gives \
         as one, are seen only as root; deleting may free more",
    ),
    (
        Bound::UNKNOWN,
        "Reclaimable either way: reasons of both kinds hold under it, or nothing \
         is known of it (a saved scan sdu did not write); deleting may free less \
         or more",
    ),
];

impl Widths {
    /// The columns the size cells take, each with its two spaces.
    pub(super) fn total(&self) -> usize {
        self.cols.iter().map(|w| w + 2).sum()
    }
}

/// The text table: an optional heading, then one row per entry and, with
/// `-c`, a `total` row.
pub(super) fn text(
    out: &mut dyn Write,
    tree: &Tree,
    unread: &[ReadError],
    opts: &ReportOptions,
) -> io::Result<()> {
    let widths = column_widths(tree, opts);
    let mut flags = Unread::new(tree, unread);
    let time_width = time_width(tree, opts);
    let end = if opts.null { b'\0' } else { b'\n' };
    let mut line = Vec::with_capacity(256);
    // The heading goes out with the first row: none when no row follows
    // (every PATH missing), as du prints nothing then.
    let mut headed = !opts.header || opts.null;
    let mut cell = String::new();
    let mut shown = Shown::default();
    let row = |id: Option<NodeId>, path: &[u8], s: &Stats, b: Bound| -> io::Result<()> {
        if !headed {
            headed = true;
            line.clear();
            header(&mut line, opts, &widths)?;
            if opts.time.is_some() {
                pad_right(&mut line, "Time", time_width);
            }
            flags.heading(&mut line);
            line.extend_from_slice(b"Path\n");
            out.write_all(&line)?;
        }
        shown.add(b);
        line.clear();
        sizes(&mut line, &mut cell, (s, b), opts, &widths)?;
        if let Some(t) = &opts.time {
            cell.clear();
            time_cell(t, s, &mut cell);
            pad_right(&mut line, &cell, time_width);
        }
        flags.cell(&mut line, id);
        opts.push_name(&mut line, path);
        line.push(end);
        out.write_all(&line)
    };
    each_row(tree, opts, row)?;
    legend(out, shown, opts, &widths)?;
    flags.legend(out, opts)
}

/// After a table whose Reclaimable column carries marks (and has a
/// heading): what each mark printed means, one line each, none for a mark
/// not printed.
pub(super) fn legend(
    out: &mut dyn Write,
    shown: Shown,
    opts: &ReportOptions,
    widths: &Widths,
) -> io::Result<()> {
    if !widths.marks || !opts.header || opts.null {
        return Ok(());
    }
    for (b, meaning) in MEANINGS {
        if shown.has(b) {
            writeln!(out, "{} {meaning}", b.mark(opts.ascii_marks))?;
        }
    }
    Ok(())
}

/// `--du FIGURE`: du's `SIZE<TAB>PATH` lines, and du's `SIZE<TAB>total`.
/// du's format has no room for a mark: the bounds among the figures
/// printed (of `--du reclaimable`) come back, for the caller to say.
pub(super) fn du(
    out: &mut dyn Write,
    tree: &Tree,
    figure: Figure,
    opts: &ReportOptions,
) -> io::Result<Shown> {
    let end = if opts.null { b'\0' } else { b'\n' };
    let mut line = Vec::with_capacity(256);
    let mut cell = String::new();
    let mut shown = Shown::default();
    let row = |_: Option<NodeId>, path: &[u8], s: &Stats, b: Bound| -> io::Result<()> {
        if figure == Figure::Reclaimable {
            shown.add(b);
        }
        line.clear();
        cell.clear();
        opts.unit_of(figure).format(figure.of(s), &mut cell);
        if let Some(t) = &opts.time {
            cell.push('\t');
            time_cell(t, s, &mut cell);
        }
        line.extend_from_slice(cell.as_bytes());
        line.push(b'\t');
        line.extend_from_slice(path);
        line.push(end);
        out.write_all(&line)
    };
    each_row(tree, opts, row)?;
    Ok(shown)
}

/// Calls `row` with the node, path and figures of every entry to report,
/// in order, then of the `-c` total (no node): what the table and du's
/// lines share.
fn each_row(
    tree: &Tree,
    opts: &ReportOptions,
    mut row: impl FnMut(Option<NodeId>, &[u8], &Stats, Bound) -> io::Result<()>,
) -> io::Result<()> {
    select::entries(tree, opts, |e| row(Some(e.id), e.path, e.figures, e.bound))?;
    if opts.grand_total {
        row(None, b"total", tree.grand_total(), tree.grand_bound())?;
    }
    Ok(())
}

/// `--time`'s cell: the newest time of the entry (the epoch when the walk
/// recorded none).
fn time_cell(t: &TimeFormat, s: &Stats, cell: &mut String) {
    t.write(s.time.unwrap_or_default(), cell);
}

/// Appends `text`, then spaces up to `width` characters, then the two
/// spaces between columns. By hand rather than with `{:<width$}`, which
/// panics past 65,535: a `--time-style=+FORMAT` may be wider than that.
fn pad_right(line: &mut Vec<u8>, text: &str, width: usize) {
    line.extend_from_slice(text.as_bytes());
    let pad = width.saturating_sub(text.chars().count()) + 2;
    line.resize(line.len() + pad, b' ');
}

/// The width of the time column: the widest of the roots' times and the
/// heading (every style but some `+FORMAT`s has one width).
fn time_width(tree: &Tree, opts: &ReportOptions) -> usize {
    let Some(t) = &opts.time else { return 0 };
    let mut cell = String::new();
    let mut w = "Time".len();
    for &r in tree.roots() {
        cell.clear();
        time_cell(t, &tree.figures(r), &mut cell);
        w = w.max(cell.chars().count());
    }
    // Out-of-range times met here are met again on their rows.
    let _ = t.take_out_of_range();
    w
}

/// The width of each size column.
pub(super) fn column_widths(tree: &Tree, opts: &ReportOptions) -> Widths {
    // Every figure of a directory is at least that of any entry below it,
    // so the roots (and the grand total) bound the column widths and the
    // table can be streamed. The widths do not depend on --no-header or on
    // -0, so that those only drop or change what they say they do.
    let mut maxes = vec![0u64; opts.columns.len()];
    let mut bound = |s: &Stats| {
        for (m, c) in maxes.iter_mut().zip(&opts.columns) {
            *m = (*m).max(c.of(s));
        }
    };
    for &r in tree.roots() {
        bound(&tree.figures(r));
    }
    if opts.grand_total {
        bound(tree.grand_total());
    }
    // A mark is shown where a figure is a bound; the column has room for
    // it only then: one character, two in ASCII (`<=`).
    let marks = opts.columns.contains(&Figure::Reclaimable) && !tree.any_bound().is_exact();
    let mark_width = if opts.ascii_marks { 2 } else { 1 };
    let cols = opts
        .columns
        .iter()
        .zip(&maxes)
        .map(|(c, &m)| {
            let extra = if marks && *c == Figure::Reclaimable {
                mark_width
            } else {
                0
            };
            (opts.unit_of(*c).width(m) + extra).max(c.header().len())
        })
        .collect();
    Widths { cols, marks }
}

/// Appends the column headings, each followed by two spaces.
pub(super) fn header(line: &mut Vec<u8>, opts: &ReportOptions, widths: &Widths) -> io::Result<()> {
    for (c, &w) in opts.columns.iter().zip(&widths.cols) {
        write!(line, "{:>w$}  ", c.header())?;
    }
    Ok(())
}

/// Appends the size cells of `s`, each followed by two spaces.
pub(super) fn sizes(
    line: &mut Vec<u8>,
    cell: &mut String,
    (s, bound): (&Stats, Bound),
    opts: &ReportOptions,
    widths: &Widths,
) -> io::Result<()> {
    for (c, &w) in opts.columns.iter().zip(&widths.cols) {
        cell.clear();
        if widths.marks && *c == Figure::Reclaimable {
            cell.push_str(bound.mark(opts.ascii_marks));
        }
        opts.unit_of(*c).format(c.of(s), cell);
        write!(line, "{cell:>w$}  ")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Shown;
    use crate::figures::Bound;

    #[test]
    fn shown_keeps_each_mark_apart() {
        let mut s = Shown::default();
        s.add(Bound::EXACT);
        assert_eq!(s, Shown::default());
        s.add(Bound::AT_MOST);
        s.add(Bound::UNKNOWN);
        assert!(s.has(Bound::AT_MOST) && s.has(Bound::UNKNOWN));
        assert!(!s.has(Bound::AT_LEAST) && !s.has(Bound::EXACT));
        assert_eq!(s.reasons(), Bound::UNKNOWN);
    }
}
