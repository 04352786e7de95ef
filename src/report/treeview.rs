//! `--tree`: the entries as an indented tree, parents above their children
//! (like `tree` and dust), each with a bar and a percentage of the rank
//! figure ([`ReportOptions::rank`]) relative to the entry's root.
//!
//! It is the one format that is not a list in du order or sorted: it needs
//! every entry collected ([`Rows`]) and arranged into the
//! [`select::hierarchy`] before its first line, so it owns only the drawing
//! (branches, bars, colour) and takes which entries and which order from
//! `select` and its size columns from `table`, so that its columns are the
//! text table's. Colour (ANSI) only when [`ReportOptions::color`] is set:
//! the binary sets it when stdout is a terminal and `NO_COLOR` is unset or
//! empty. Names are always quoted as ls shows them on a terminal
//! ([`crate::quote::shell_escape`]), in a pipe too, where the table prints
//! them raw: the tree is a drawing for people (`sdu --tree | less -R`),
//! not a list for scripts, and a newline or an escape sequence in a name
//! would break its lines or recolour the terminal.
//!
//! ```text
//! Total  Exclusive  Shared  Reclaimable  Total % of root            Path
//!  172K       172K       0         172K  ████████████████████ 100%  plain
//!  120K       120K       0         120K  █████████████▉░░░░░░  70%  ├── a
//! ```

use std::io::{self, Write};

use unicode_width::UnicodeWidthStr;

use super::options::ReportOptions;
use super::select::{self, NO_PARENT, Rows};
use super::table;
use crate::figures::Kind;
use crate::records::ReadError;
use crate::tree::Tree;

/// Cells of the bar when the width is not known (stdout is no terminal):
/// 20 cells of eighths resolve 0.625%.
const BAR_CELLS: u64 = 20;
/// The fewest cells the bar has on a terminal, however narrow: room for
/// the heading `Total % of root` over the bar and its percentage.
const MIN_CELLS: u64 = 10;
/// After the bar: a space and `100%`.
const PERCENT: usize = 5;
/// Partial cells, by eighths.
const EIGHTHS: [&str; 8] = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"];

const BAR_COLOR: &str = "\x1b[36m";
const DIM: &str = "\x1b[2m";
const DIR_COLOR: &str = "\x1b[1;34m";
const RESET: &str = "\x1b[0m";

/// The cells of the bar: on a terminal of `width` columns, what is left
/// once the size columns (`sizes` wide) and the widest branch and name
/// (`path`) have their room, at least [`MIN_CELLS`] (a line then wraps);
/// [`BAR_CELLS`] when the width is not known.
fn bar_cells(width: Option<usize>, sizes: usize, path: usize) -> u64 {
    match width {
        // `  ` before the path; the last column left free, so that a full
        // line does not wrap on terminals that wrap at once.
        Some(w) => (w.saturating_sub(sizes + PERCENT + 2 + path + 1) as u64).max(MIN_CELLS),
        None => BAR_CELLS,
    }
}

/// The columns the widest branch and name of the tree `h` take.
fn path_column(rows: &Rows, h: &select::Hierarchy) -> usize {
    let mut widest = 0;
    let mut name = Vec::new();
    let mut stack: Vec<(u32, usize)> = h.roots.iter().map(|&r| (r, 0)).collect();
    while let Some((i, depth)) = stack.pop() {
        name.clear();
        crate::quote::shell_escape(rows.name(i), &mut name);
        let w = UnicodeWidthStr::width(String::from_utf8_lossy(&name).as_ref());
        widest = widest.max(4 * depth + w);
        stack.extend(h.children[i as usize].iter().map(|&c| (c, depth + 1)));
    }
    widest
}

/// Writes the tree view of `tree`.
pub(super) fn write(
    out: &mut dyn Write,
    tree: &Tree,
    unread: &[ReadError],
    opts: &ReportOptions,
) -> io::Result<()> {
    let rank = opts.rank();
    let widths = table::column_widths(tree, opts);
    let mut flags = table::Unread::new(tree, unread);
    let rows = Rows::collect(tree, opts.max_depth);
    let h = select::hierarchy(&rows, opts);
    let cells = bar_cells(
        opts.width,
        widths.total() + flags.width(),
        opts.width.map_or(0, |_| path_column(&rows, &h)),
    );
    let bar_column = cells as usize + PERCENT;
    let mut line: Vec<u8> = Vec::with_capacity(256);
    let mut cell = String::new();
    // No heading when no row follows (every PATH missing), as du.
    if opts.header && (!h.roots.is_empty() || opts.grand_total) {
        table::header(&mut line, opts, &widths)?;
        let title = format!("{} % of root", rank.header());
        write!(line, "{title:<bar_column$}  ")?;
        flags.heading(&mut line);
        line.extend_from_slice(b"Path\n");
        out.write_all(&line)?;
    }
    // The tree-drawing prefix of the current row's children.
    let mut prefix: Vec<u8> = Vec::new();
    // The reasons of the marks printed, for the legend.
    let mut shown = table::Shown::default();
    // (row, last among its siblings, prefix length before it)
    let mut stack: Vec<(u32, bool, usize)> = Vec::new();
    for &root in &h.roots {
        let whole = rank.of(&rows.row(root).figures);
        prefix.clear();
        stack.push((root, true, 0));
        while let Some((i, last, plen)) = stack.pop() {
            prefix.truncate(plen);
            let r = rows.row(i);
            line.clear();
            shown.add(r.bound);
            table::sizes(&mut line, &mut cell, (&r.figures, r.bound), opts, &widths)?;
            bar(&mut line, (rank.of(&r.figures), whole), cells, opts.color);
            line.extend_from_slice(b"  ");
            flags.cell(&mut line, Some(r.id));
            let is_root = r.parent == NO_PARENT;
            if !is_root {
                paint(&mut line, opts.color, DIM, |l| {
                    l.extend_from_slice(&prefix);
                    l.extend_from_slice(if last { "└── " } else { "├── " }.as_bytes());
                });
                prefix.extend_from_slice(if last { "    " } else { "│   " }.as_bytes());
            }
            let color = opts.color && r.kind == Kind::Dir;
            // Always quoted: the tree is a drawing, one line per entry.
            paint(&mut line, color, DIR_COLOR, |l| {
                crate::quote::shell_escape(rows.name(i), l);
            });
            line.push(b'\n');
            out.write_all(&line)?;
            let kids = &h.children[i as usize];
            let n = kids.len();
            for (k, &c) in kids.iter().enumerate().rev() {
                stack.push((c, k + 1 == n, prefix.len()));
            }
        }
    }
    if opts.grand_total {
        line.clear();
        let total = (tree.grand_total(), tree.grand_bound());
        shown.add(total.1);
        table::sizes(&mut line, &mut cell, total, opts, &widths)?;
        line.extend_from_slice(format!("{:bar_column$}  ", "").as_bytes());
        flags.cell(&mut line, None);
        line.extend_from_slice(b"total\n");
        out.write_all(&line)?;
    }
    table::legend(out, shown, opts, &widths)?;
    flags.legend(out, opts)
}

/// Appends what `f` writes, in `color` when `on`.
fn paint(line: &mut Vec<u8>, on: bool, color: &str, f: impl FnOnce(&mut Vec<u8>)) {
    if on {
        line.extend_from_slice(color.as_bytes());
    }
    f(line);
    if on {
        line.extend_from_slice(RESET.as_bytes());
    }
}

/// Appends the bar of `value` out of `whole`, `cells` wide, and its
/// percentage.
fn bar(line: &mut Vec<u8>, (value, whole): (u64, u64), cells: u64, color: bool) {
    let (eighths, percent) = if whole == 0 {
        (0, 0)
    } else {
        let frac = |scale: u128| {
            ((u128::from(value) * scale + u128::from(whole) / 2) / u128::from(whole)) as u64
        };
        (frac(u128::from(cells * 8)), frac(100))
    };
    let eighths = eighths.min(cells * 8);
    let full = eighths / 8;
    let part = EIGHTHS[(eighths % 8) as usize];
    let used = full + u64::from(!part.is_empty());
    paint(line, color, BAR_COLOR, |l| {
        for _ in 0..full {
            l.extend_from_slice("█".as_bytes());
        }
        l.extend_from_slice(part.as_bytes());
    });
    paint(line, color, DIM, |l| {
        for _ in used..cells {
            l.extend_from_slice("░".as_bytes());
        }
    });
    line.extend_from_slice(format!(" {percent:>3}%").as_bytes());
}

#[cfg(test)]
mod tests {
    use super::{BAR_CELLS, MIN_CELLS, bar, bar_cells};

    fn b(value: u64, whole: u64) -> String {
        let mut v = Vec::new();
        bar(&mut v, (value, whole), BAR_CELLS, false);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn the_bar_takes_what_the_terminal_leaves() {
        // Not a terminal: the default.
        assert_eq!(bar_cells(None, 40, 30), BAR_CELLS);
        // 120 columns: 40 of sizes, `  `, the bar, ` 100%`, `  `, a path
        // of 30, one column free.
        assert_eq!(bar_cells(Some(120), 40, 30), 120 - 40 - 5 - 2 - 30 - 1);
        assert_eq!(bar_cells(Some(60), 40, 30), MIN_CELLS);
        let mut v = Vec::new();
        bar(&mut v, (1, 4), 40, false);
        let s = String::from_utf8(v).unwrap();
        assert_eq!(s, format!("{}{}  25%", "█".repeat(10), "░".repeat(30)));
    }

    #[test]
    fn bars() {
        assert_eq!(b(0, 0), "░░░░░░░░░░░░░░░░░░░░   0%");
        assert_eq!(b(10, 10), "████████████████████ 100%");
        assert_eq!(b(1, 2), "██████████░░░░░░░░░░  50%");
        assert_eq!(b(1, 160), "▏░░░░░░░░░░░░░░░░░░░   1%");
        assert_eq!(b(7, 160), "▉░░░░░░░░░░░░░░░░░░░   4%");
        assert_eq!(b(u64::MAX, u64::MAX), b(1, 1));
    }
}
