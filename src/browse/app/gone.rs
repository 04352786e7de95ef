//! `--compare OLD` in the browser: the entries of the directory shown that
//! the old scan had and this one does not ([`sdu::Comparison::gone_in`]),
//! listed after its rows, marked, with their figures in the old scan. Only
//! the entries gone from the directory itself are listed (a gone
//! directory's own entries went with it), filtered and ordered as the
//! rows are. They are not on disk: they cannot be opened, marked or
//! deleted, and the browser says so when asked.

use sdu::figures::{Bound, Figure, Kind, Stats};
use sdu::{Comparison, NodeId};

use super::settings::contains;
use super::{App, RowKey, Settings, Sort};

/// An entry gone from the directory shown since the old scan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GoneRow {
    /// Its name in the old scan.
    pub(crate) name: Vec<u8>,
    pub(crate) kind: Kind,
    /// Its figures in the old scan.
    pub(crate) old: Stats,
    /// The bound on its old Reclaimable.
    pub(crate) bound: Bound,
}

/// The entries gone from `dir` that `set` shows, in the order of `sort`
/// (`first`: the first column's figure, which the change is of).
pub(crate) fn rows(
    cmp: &Comparison,
    dir: NodeId,
    set: &Settings,
    sort: Sort,
    first: Figure,
) -> Vec<GoneRow> {
    let filter = set.filter.as_deref().map(str::as_bytes);
    let mut v: Vec<GoneRow> = cmp
        .gone_in(dir)
        .filter_map(|(name, kind, change)| {
            let (old, bound) = change.old?;
            Some(GoneRow {
                name: name.to_vec(),
                kind,
                old,
                bound,
            })
        })
        .filter(|g| set.files || g.kind == Kind::Dir)
        .filter(|g| set.dotfiles || !g.name.starts_with(b"."))
        .filter(|g| filter.is_none_or(|f| contains(&g.name, f)))
        .collect();
    let by_name = |a: &GoneRow, b: &GoneRow| a.name.cmp(&b.name);
    let items = |g: &GoneRow| (g.old.files + g.old.dirs).saturating_sub(1);
    match sort.key {
        RowKey::Name => v.sort_by(by_name),
        // The change of a gone entry is its old figure, negative: the
        // smallest loss is the largest growth.
        RowKey::Change => {
            v.sort_by(|a, b| first.of(&a.old).cmp(&first.of(&b.old)).then(by_name(a, b)))
        }
        RowKey::Figure(f) => v.sort_by(|a, b| f.of(&b.old).cmp(&f.of(&a.old)).then(by_name(a, b))),
        RowKey::Count => v.sort_by(|a, b| items(b).cmp(&items(a)).then(by_name(a, b))),
        RowKey::Time => v.sort_by(|a, b| b.old.time.cmp(&a.old.time).then(by_name(a, b))),
    }
    if sort.reverse {
        v.reverse();
    }
    v
}

impl<'t> App<'t> {
    /// `--compare`: the rows of the entries gone from the directory shown
    /// since the old scan, in order; after [`App::rows`].
    pub(crate) fn gone(&self) -> &[GoneRow] {
        &self.gone
    }

    /// `--compare OLD`: the scan compared with the old one, its gone
    /// entries listed.
    pub(crate) fn set_compare(&mut self, c: Option<&'t sdu::Comparison>) {
        self.compare = c;
        self.reload();
    }

    /// The gone entry under the cursor, if the cursor is on one.
    pub(crate) fn current_gone(&self) -> Option<&GoneRow> {
        self.cursor
            .checked_sub(self.rows.len())
            .and_then(|i| self.gone.get(i))
    }

    /// Whether the cursor is on a gone entry: then says why the key does
    /// nothing (`what`: "it cannot be opened").
    pub(super) fn refuse_gone(&mut self, what: &str) -> bool {
        let Some(g) = self.current_gone() else {
            return false;
        };
        let name = sdu::quote(&g.name);
        self.notice = Some(vec![
            format!("{name} is gone since the old scan: {what}."),
            "Its row shows its figures in the old scan.".into(),
        ]);
        true
    }
}
