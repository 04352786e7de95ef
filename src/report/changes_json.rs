//! `--compare OLD --json`: the comparison as one JSON document, its
//! schema spelt as serde types ([`ChangesDocument`], [`ChangesEntry`],
//! [`Side`], [`Delta`]). For every entry both sides, old and new, and the
//! change; the entries in the order of the text table (`changes`'s
//! comment), one a line.
//!
//! ```text
//! {"compare_schema":1,"version":"0.1.0","old":{"file":"old.json","roots":["/mnt/a"],"error_count":0},
//! "roots":["a"],"sharing":true,"entries":[
//! {"path":"a/x","type":"dir","depth":1,"status":"both","sharing_changed":true,"old":{..},"new":{..},"change":{..}},
//! {"path":"a/y","type":"file","depth":1,"status":"gone","sharing_changed":false,"old":{..},"new":null,"change":{..}}
//! ],"errors":[],"error_count":0}
//! ```

use std::borrow::Cow;
use std::io::{self, Write};

use serde::Serialize;

use super::changes::{ChangeRows, Paths};
use super::json::{BoundWord, EntryType, Path, ReportedError, write_document};
use super::options::ReportOptions;
use crate::compare::{Change, Comparison};
use crate::figures::{Bound, Figure, Stats};
use crate::tree::Tree;

/// The version of this document's layout; bumped when a key changes
/// meaning or goes away (a reader should ignore keys it does not know).
const SCHEMA: u32 = 1;

/// The whole document, keys in this order.
#[derive(Serialize)]
struct ChangesDocument<'a> {
    /// `compare_schema`: [`SCHEMA`]. Another key than the report's
    /// `schema`, so that no reader takes one document for the other.
    compare_schema: u32,
    /// `version`: the version of sdu that wrote it.
    version: &'static str,
    /// `old`: the old scan.
    old: Old<'a>,
    /// `roots`: the new scan's roots, as its report names them.
    roots: Vec<Path<'a>>,
    /// `sharing`: whether both scans know what is shared. `false` when
    /// one is a saved scan sdu did not write (`ncdu -o`): then the sides
    /// and changes hold only `apparent`, `total`, `files` and `dirs`.
    sharing: bool,
    /// `entries`: the new scan's entries and the gone ones, in the
    /// table's order.
    entries: ChangesEntries<'a>,
    /// `total`: with `-c`, all roots together, as an entry without path,
    /// type and depth.
    #[serde(skip_serializing_if = "Option::is_none")]
    total: Option<Pair>,
    /// `errors`, `error_count`: the new scan's, as in the report's
    /// document.
    errors: Vec<ReportedError<'a>>,
    error_count: u64,
}

/// `old`: the file compared with.
#[derive(Serialize)]
struct Old<'a> {
    /// `file`: as given to `--compare`.
    file: Path<'a>,
    /// `roots`: its roots, as its report names them.
    roots: Vec<Path<'a>>,
    /// `error_count`: the entries its scan could not read.
    error_count: u64,
}

/// `entries`: each entry's path is built as it is written, so that no
/// more than one is held.
struct ChangesEntries<'a> {
    rows: ChangeRows<'a>,
    order: Vec<usize>,
    sharing: bool,
}

impl Serialize for ChangesEntries<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(Some(self.order.len()))?;
        let mut paths = Paths::new(&self.rows);
        for &i in &self.order {
            let r = self.rows.row(i);
            seq.serialize_element(&ChangesEntry {
                path: Path(Cow::Borrowed(paths.of(&self.rows, i))),
                kind: r.kind.into(),
                depth: r.depth,
                status: match (r.change.old, r.change.new) {
                    (None, _) => "new",
                    (_, None) => "gone",
                    _ => "both",
                },
                pair: Pair::of(&r.change, self.sharing),
            })?;
        }
        seq.end()
    }
}

/// One entry of `entries`.
#[derive(Serialize)]
struct ChangesEntry<'a> {
    /// `path`: as the new scan's report prints it (a gone entry's spelt
    /// from the new root, or from its old root when that is gone); a
    /// string, or `{"bytes": "<base64>"}` when not UTF-8.
    path: Path<'a>,
    /// `type`: `dir`, `file`, `symlink`, `other` (a gone entry's old one).
    #[serde(rename = "type")]
    kind: EntryType,
    /// `depth`: levels below its root.
    depth: u32,
    /// `status`: `"new"` (not in the old scan), `"gone"` (only in the old
    /// scan) or `"both"`.
    status: &'static str,
    #[serde(flatten)]
    pair: Pair,
}

/// An entry's old side, new side and change.
#[derive(Serialize)]
struct Pair {
    /// `sharing_changed`: in both scans, and Exclusive moved by more or
    /// less than Total (the text's `sharing` note).
    sharing_changed: bool,
    /// `old`: its figures in the old scan; `null` when new.
    old: Option<Side>,
    /// `new`: its figures in the new scan; `null` when gone.
    new: Option<Side>,
    /// `change`: new minus old, figure by figure (a missing side counts 0).
    change: Delta,
}

/// One side: the figures in bytes (and counts), as in the report.
#[derive(Serialize)]
struct Side {
    apparent: u64,
    total: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    exclusive: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    shared: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reclaimable: Option<u64>,
    files: u64,
    dirs: u64,
    /// `reclaimable_exact`: as in the report: `false` when that side's
    /// Reclaimable is a bound (then so is the change).
    #[serde(skip_serializing_if = "Option::is_none")]
    reclaimable_exact: Option<bool>,
    /// `reclaimable_bound`: as in the report: the direction of that
    /// side's bound (`at_most`, `at_least`, `unknown`), absent when exact.
    #[serde(skip_serializing_if = "Option::is_none")]
    reclaimable_bound: Option<BoundWord>,
}

/// The change of each figure: signed integers.
#[derive(Serialize)]
struct Delta {
    apparent: i128,
    total: i128,
    #[serde(skip_serializing_if = "Option::is_none")]
    exclusive: Option<i128>,
    #[serde(skip_serializing_if = "Option::is_none")]
    shared: Option<i128>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reclaimable: Option<i128>,
    files: i128,
    dirs: i128,
}

impl Side {
    fn of((s, b): (Stats, Bound), sharing: bool) -> Side {
        let sh = |v: u64| sharing.then_some(v);
        Side {
            apparent: s.apparent,
            total: s.total,
            exclusive: sh(s.exclusive),
            shared: sh(s.shared),
            reclaimable: sh(s.reclaimable),
            files: s.files,
            dirs: s.dirs,
            reclaimable_exact: sharing.then_some(b.is_exact()),
            reclaimable_bound: BoundWord::of(b).filter(|_| sharing),
        }
    }
}

impl Pair {
    fn of(c: &Change, sharing: bool) -> Pair {
        let d = |f: Figure| c.delta(f);
        let sh = |f: Figure| sharing.then(|| c.delta(f));
        let count = |f: fn(&Stats) -> u64| {
            let of = |s: &Option<(Stats, Bound)>| s.map_or(0, |(s, _)| i128::from(f(&s)));
            of(&c.new) - of(&c.old)
        };
        Pair {
            sharing_changed: sharing && c.sharing_changed(),
            old: c.old.map(|s| Side::of(s, sharing)),
            new: c.new.map(|s| Side::of(s, sharing)),
            change: Delta {
                apparent: d(Figure::Apparent),
                total: d(Figure::Total),
                exclusive: sh(Figure::Exclusive),
                shared: sh(Figure::Shared),
                reclaimable: sh(Figure::Reclaimable),
                files: count(|s| s.files),
                dirs: count(|s| s.dirs),
            },
        }
    }
}

/// Writes the document of `cmp` (the new scan's `tree` and `roots`; its
/// errors `errors`; the old scan given as `old_file`).
pub(super) fn write(
    out: &mut dyn Write,
    (tree, roots): (&Tree, &[Vec<u8>]),
    cmp: &Comparison,
    old_file: &[u8],
    errors: &super::Errors<'_>,
    opts: &ReportOptions,
) -> io::Result<()> {
    let rows = ChangeRows::collect(tree, cmp, opts);
    let sharing = cmp.sharing();
    let path = |p: &'_ [u8]| Path(Cow::Owned(p.to_vec()));
    let entries = ChangesEntries {
        order: rows.list(opts),
        rows,
        sharing,
    };
    let doc = ChangesDocument {
        compare_schema: SCHEMA,
        version: env!("CARGO_PKG_VERSION"),
        old: Old {
            file: path(old_file),
            roots: cmp.old_roots().iter().map(|r| path(r)).collect(),
            error_count: cmp.old_errors(),
        },
        roots: roots.iter().map(|r| path(r)).collect(),
        sharing,
        entries,
        total: opts
            .grand_total
            .then(|| Pair::of(&cmp.total_change(tree), sharing)),
        errors: errors
            .list
            .iter()
            .map(|(p, e)| ReportedError {
                path: path(p),
                error: Cow::Borrowed(e),
            })
            .collect(),
        error_count: errors.count,
    };
    write_document(out, &doc)
}
