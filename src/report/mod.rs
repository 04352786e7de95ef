//! Printers: the text table, du's format, the JSON document and (in
//! [`treeview`]) the tree view, written to any `io::Write`.
//!
//! By default entries stream out in du order as the tree is visited. With
//! `--sort`, `--top`, `--min-size` or `--tree` they are collected first
//! ([`select`]) and printed in the selected order.

use std::io::{self, Write};

pub mod select;
pub mod treeview;

use crate::figures::{Figure, Stats};
use crate::tree::{Entry, Tree};
use crate::units::Unit;
use select::Rows;

/// The JSON schema version; bumped when a key changes meaning or goes away.
pub const SCHEMA: u32 = 1;

/// Output format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    #[default]
    Text,
    Json,
    /// du's own format, `SIZE<TAB>PATH`, for one figure (`--du FIGURE`):
    /// no header, no padding, du's units.
    Du(Figure),
    /// `--tree`: an indented tree with a bar per entry.
    Tree,
}

/// What `--sort` orders by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortKey {
    /// A figure, largest first; ties by path.
    Size(Figure),
    /// The path, in byte order.
    Name,
}

/// How to report.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    pub format: Format,
    /// Print entries down to this depth (`-d`; `-s` is 0).
    pub max_depth: Option<u32>,
    pub unit: Unit,
    /// Size columns of the text table, in order.
    pub columns: Vec<Figure>,
    /// Print the header line (text).
    pub header: bool,
    /// End rows with NUL instead of newline (`-0`).
    pub null: bool,
    /// Add a `total` row / key for all roots together (`-c`).
    pub grand_total: bool,
    /// `--sort`: list the entries in this order instead of du's.
    pub sort: Option<SortKey>,
    /// `--top N`: keep only the N largest entries (by [`Self::rank`]).
    pub top: Option<usize>,
    /// `--min-size`: hide entries whose [`Self::rank`] figure is smaller.
    pub min_size: Option<u64>,
    /// Colour the tree view (stdout is a terminal, `NO_COLOR` unset).
    pub color: bool,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            format: Format::Text,
            max_depth: None,
            unit: Unit::HumanIec,
            columns: vec![
                Figure::Total,
                Figure::Exclusive,
                Figure::Shared,
                Figure::Reclaimable,
            ],
            header: true,
            null: false,
            grand_total: false,
            sort: None,
            top: None,
            min_size: None,
            color: false,
        }
    }
}

impl ReportOptions {
    /// The figure that `--top`, `--min-size` and the tree's bars go by: the
    /// `--sort` figure, else the `--du` figure, else the first column
    /// (total, or apparent with `--apparent-size`).
    pub fn rank(&self) -> Figure {
        match (self.sort, self.format) {
            (Some(SortKey::Size(c)), _) => c,
            (_, Format::Du(c)) => c,
            _ => self.columns.first().copied().unwrap_or(Figure::Total),
        }
    }

    /// Whether the entries must be collected before printing (anything but
    /// du order, all of it).
    fn selects(&self) -> bool {
        self.sort.is_some() || self.top.is_some() || self.min_size.is_some()
    }
}

/// Writes the report of `tree` in the chosen format.
pub fn write(
    out: &mut dyn Write,
    tree: &Tree,
    roots: &[Vec<u8>],
    errors: u64,
    opts: &ReportOptions,
) -> io::Result<()> {
    match opts.format {
        Format::Tree => {
            let rows = Rows::collect(tree, opts.max_depth);
            treeview::write(out, tree, &rows, opts)
        }
        Format::Text => text(out, tree, opts),
        Format::Json => json(out, tree, roots, errors, opts),
        Format::Du(c) => du(out, tree, c, opts),
    }
}

/// Calls `f` on every entry to report, in the order to report them: du
/// order, or the `--sort`/`--top`/`--min-size` selection.
fn entries(
    tree: &Tree,
    opts: &ReportOptions,
    mut f: impl FnMut(&Entry<'_>) -> io::Result<()>,
) -> io::Result<()> {
    if !opts.selects() {
        return tree.visit(opts.max_depth, f);
    }
    let rows = Rows::collect(tree, opts.max_depth);
    for i in select::list(&rows, opts) {
        f(&rows.entry(i))?;
    }
    Ok(())
}

fn text(out: &mut dyn Write, tree: &Tree, opts: &ReportOptions) -> io::Result<()> {
    let widths = column_widths(tree, opts);
    let end = if opts.null { b'\0' } else { b'\n' };
    let mut line = Vec::with_capacity(256);
    if opts.header && !opts.null {
        header(&mut line, opts, &widths)?;
        line.extend_from_slice(b"Path\n");
        out.write_all(&line)?;
    }
    let mut cell = String::new();
    let mut row = |path: &[u8], s: &Stats| -> io::Result<()> {
        line.clear();
        sizes(&mut line, &mut cell, s, opts, &widths)?;
        line.extend_from_slice(path);
        line.push(end);
        out.write_all(&line)
    };
    entries(tree, opts, |e| row(e.path, e.figures))?;
    if opts.grand_total {
        row(b"total", tree.grand_total())?;
    }
    Ok(())
}

/// The width of each size column.
pub(crate) fn column_widths(tree: &Tree, opts: &ReportOptions) -> Vec<usize> {
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
        bound(tree.figures(r));
    }
    if opts.grand_total {
        bound(tree.grand_total());
    }
    opts.columns
        .iter()
        .zip(&maxes)
        .map(|(c, &m)| opts.unit.width(m).max(c.header().len()))
        .collect()
}

/// Appends the column headings, each followed by two spaces.
pub(crate) fn header(line: &mut Vec<u8>, opts: &ReportOptions, widths: &[usize]) -> io::Result<()> {
    for (c, w) in opts.columns.iter().zip(widths) {
        write!(line, "{:>w$}  ", c.header())?;
    }
    Ok(())
}

/// Appends the size cells of `s`, each followed by two spaces.
pub(crate) fn sizes(
    line: &mut Vec<u8>,
    cell: &mut String,
    s: &Stats,
    opts: &ReportOptions,
    widths: &[usize],
) -> io::Result<()> {
    for (c, w) in opts.columns.iter().zip(widths) {
        cell.clear();
        opts.unit.format(c.of(s), cell);
        write!(line, "{cell:>w$}  ")?;
    }
    Ok(())
}

/// `--du FIGURE`: du's `SIZE<TAB>PATH` lines, and du's `SIZE<TAB>total`.
fn du(out: &mut dyn Write, tree: &Tree, figure: Figure, opts: &ReportOptions) -> io::Result<()> {
    let end = if opts.null { b'\0' } else { b'\n' };
    let mut line = Vec::with_capacity(256);
    let mut cell = String::new();
    let mut row = |path: &[u8], s: &Stats| -> io::Result<()> {
        line.clear();
        cell.clear();
        opts.unit.format(figure.of(s), &mut cell);
        line.extend_from_slice(cell.as_bytes());
        line.push(b'\t');
        line.extend_from_slice(path);
        line.push(end);
        out.write_all(&line)
    };
    entries(tree, opts, |e| row(e.path, e.figures))?;
    if opts.grand_total {
        row(b"total", tree.grand_total())?;
    }
    Ok(())
}

fn json(
    out: &mut dyn Write,
    tree: &Tree,
    roots: &[Vec<u8>],
    errors: u64,
    opts: &ReportOptions,
) -> io::Result<()> {
    write!(
        out,
        "{{\"schema\":{SCHEMA},\"version\":\"{}\",\"roots\":[",
        env!("CARGO_PKG_VERSION")
    )?;
    for (i, r) in roots.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        json_path(out, r)?;
    }
    out.write_all(b"],\"entries\":[")?;
    let mut first = true;
    entries(tree, opts, |e: &Entry<'_>| {
        if !first {
            out.write_all(b",\n")?;
        } else {
            out.write_all(b"\n")?;
        }
        first = false;
        out.write_all(b"{\"path\":")?;
        json_path(out, e.path)?;
        write!(
            out,
            ",\"type\":\"{}\",\"depth\":{},",
            e.kind.as_str(),
            e.depth
        )?;
        json_figures(out, e.figures)?;
        out.write_all(b"}")
    })?;
    out.write_all(b"\n]")?;
    if opts.grand_total {
        out.write_all(b",\"total\":{")?;
        json_figures(out, tree.grand_total())?;
        out.write_all(b"}")?;
    }
    writeln!(out, ",\"errors\":{errors}}}")
}

fn json_figures(out: &mut dyn Write, s: &Stats) -> io::Result<()> {
    write!(
        out,
        "\"apparent\":{},\"total\":{},\"exclusive\":{},\"shared\":{},\"reclaimable\":{},\"files\":{},\"dirs\":{}",
        s.apparent, s.total, s.exclusive, s.shared, s.reclaimable, s.files, s.dirs
    )
}

/// A path as a JSON string when it is UTF-8, else `{"bytes": "<base64>"}`,
/// so that every name round-trips exactly.
fn json_path(out: &mut dyn Write, p: &[u8]) -> io::Result<()> {
    match std::str::from_utf8(p) {
        // Keep the io::ErrorKind (BrokenPipe above all) of a failed write.
        Ok(s) => serde_json::to_writer(&mut *out, s).map_err(|e| match e.io_error_kind() {
            Some(kind) => io::Error::from(kind),
            None => io::Error::other(e),
        }),
        Err(_) => write!(out, "{{\"bytes\":\"{}\"}}", base64(p)),
    }
}

/// Standard base64 with padding (RFC 4648 §4).
pub fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                s.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::base64;

    #[test]
    fn base64_rfc4648_vectors() {
        for (i, o) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(i.as_bytes()), o);
        }
    }
}
