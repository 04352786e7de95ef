//! The report: what `sdu` prints once the tree is rolled up, in one of five
//! formats (the text table, du's `SIZE<TAB>PATH`, the JSON document, the tree
//! view, the HTML page), written to any `io::Write`.
//!
//! Each format has a module of its own and this one only dispatches on
//! [`Format`]: which entries to print, and in which order, is decided once
//! for all formats in `select`, and the types the binary fills in
//! ([`ReportOptions`] and its parts) live in the leaf module `options`, so
//! that no module imports one that imports it back, this one included
//! (`select` uses `options`; `table` and `json` use `options` and
//! `select`; `treeview` uses those and `table`; `html` uses `options`,
//! `select` and `squarify`, the layout; only this module uses the
//! printers, and none uses this module). By default the entries stream out
//! in du order as the tree is visited; `--sort`, `--top`, `--min-size` and
//! `--tree` collect them first. `--compare`'s report (`write_compare`)
//! has printers of its own (`changes`, `changes_json`), which collect the
//! entries of both scans.

mod changes;
mod changes_json;
pub(crate) mod df;
mod html;
pub(crate) mod json;
pub(crate) mod options;
mod select;
pub(crate) mod snapshots;
mod squarify;
mod table;
pub(crate) mod to_free;
mod treeview;

use std::io::{self, Write};

use crate::compare::Comparison;
use crate::figures::Bound;
use crate::tree::Tree;

pub(crate) use options::{Format, ReportOptions};

/// The entries that could not be read, for the JSON document.
pub(crate) struct Errors<'a> {
    /// How many (a saved scan's among them).
    pub(crate) count: u64,
    /// Those this run reported: each path and the message printed.
    pub(crate) list: &'a [(Vec<u8>, String)],
    /// The directories not read in full, sorted by node (the table and
    /// `--tree` mark them).
    pub(crate) unread: &'a [crate::records::ReadError],
}

/// Writes the report of `tree` in the chosen format. `roots` are the paths
/// given (the JSON document lists them), `errors` the entries that could
/// not be read and `compressed` the logical bytes of compressed extents
/// counted uncompressed (the JSON document says both).
///
/// Returns the reasons of the bounds printed where the format has no room
/// to mark them (`--du reclaimable`: du's lines), for the caller to say on
/// stderr; exact for every other format, which marks its own.
pub(crate) fn write(
    out: &mut dyn Write,
    tree: &Tree,
    roots: &[Vec<u8>],
    errors: &Errors<'_>,
    compressed: u64,
    opts: &ReportOptions,
) -> io::Result<Bound> {
    match opts.format {
        Format::Text => table::text(out, tree, errors.unread, opts),
        Format::Du(figure) => return Ok(table::du(out, tree, figure, opts)?.reasons()),
        Format::Json => json::write(out, tree, roots, errors, compressed, opts),
        Format::Tree => treeview::write(out, tree, errors.unread, opts),
        Format::Html => html::write(out, tree, opts, &roots.join(&b' '), None),
    }?;
    Ok(Bound::EXACT)
}

/// Writes `--compare`'s report of `cmp`: the JSON document with `--json`,
/// the page coloured by growth with `--html`, else the text table. `new` is the new scan's tree and roots, `errors`
/// its entries that could not be read, `old_file` the old scan as given.
pub(crate) fn write_compare(
    out: &mut dyn Write,
    new: (&Tree, &[Vec<u8>]),
    cmp: &Comparison,
    old_file: &[u8],
    errors: &Errors<'_>,
    opts: &ReportOptions,
) -> io::Result<()> {
    match opts.format {
        Format::Json => changes_json::write(out, new, cmp, old_file, errors, opts),
        Format::Html => {
            let old = |id| changes::old_total(cmp, id);
            html::write(out, new.0, opts, &new.1.join(&b' '), Some(&old))
        }
        _ => changes::text(out, new.0, cmp, opts),
    }
}
