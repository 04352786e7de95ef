//! What a browser keeps over a new scan (after `d`, `r` or `b`): the
//! directory shown, the sort, the settings, the entry under the cursor
//! and the marks, each by its names, found again in the new tree where it
//! still is.
//!
//! A mark is kept only on the entry that was marked: the name found again
//! must be the same device, inode and mount in the new scan as in the
//! one it was marked in ([`sdu::Ident`]). Anyone who can rename
//! in a directory can put another entry under a marked name between the
//! two scans; that entry is not marked, and the browser says so.
//!
//! The cursor keeps its place by name (as in ncdu), but the same check
//! is made of the entry it lands on: when that is another entry than the
//! one it was on, the browser says so, and so does the confirmation of a
//! `d` that would delete it ([`App::replaced`]), so that `r` then `d`
//! never reads as it did before the new scan.

use sdu::figures::{Figure, Kind};
use sdu::{Ident, NodeId, Sets, Tree};

use super::{App, Settings, Sort};

/// What a new [`App`] takes over from the one before a rescan.
#[derive(Clone, Debug)]
pub(crate) struct Carry {
    /// The directory shown: its root's name and the names below it (`None`:
    /// the list of roots).
    dir: Option<(Vec<u8>, Vec<Vec<u8>>)>,
    sort: Sort,
    first: Figure,
    settings: Settings,
    /// The name of the entry under the cursor, and what the scan saw
    /// there.
    cursor: Option<(Vec<u8>, Option<Ident>)>,
    /// The marked entries: each one's root name, the names below it, and
    /// what the scan saw there (none: it recorded nothing).
    pub(crate) marks: Vec<Mark>,
}

/// A marked entry: its root's name, the names below it, and what the scan
/// it was marked in saw there.
pub(crate) type Mark = ((Vec<u8>, Vec<Vec<u8>>), Option<Ident>);

/// `names` (a root's name first) split into the root and the rest.
fn split(mut names: Vec<Vec<u8>>) -> (Vec<u8>, Vec<Vec<u8>>) {
    let root = names.remove(0);
    (root, names)
}

impl<'t> App<'t> {
    /// A browser of `tree` (a new scan) in the directory, sort and settings
    /// of the one `carry` was taken from (in the nearest directory above
    /// when that one is gone), with the cursor on the same name and the
    /// marks that are still there.
    ///
    /// `ident` is what the new scan saw at an entry. A mark whose name is
    /// now another entry (another device, inode or mount, or one either
    /// scan recorded nothing of) is dropped, and a notice says which. The
    /// cursor stays on its name even so; the notice says when that is
    /// another entry now, and the entry is [`App::replaced`].
    pub(crate) fn resume(
        tree: &'t Tree,
        sets: &'t Sets,
        first: Figure,
        carry: Carry,
        ident: impl Fn(NodeId) -> Option<Ident>,
    ) -> App<'t> {
        let mut app = App::new(tree, sets, first, carry.sort);
        app.first = carry.first;
        app.settings = carry.settings;
        let find = |(root, names): &(Vec<u8>, Vec<Vec<u8>>)| {
            let r = *tree
                .roots()
                .iter()
                .find(|&&r| !tree.is_hidden(r) && tree.name(r) == &root[..])?;
            tree.find(r, names)
        };
        if let Some((root, names)) = carry.dir {
            let found = (0..=names.len()).rev().find_map(|n| {
                find(&(root.clone(), names[..n].to_vec())).filter(|&id| tree.kind(id) == Kind::Dir)
            });
            if let Some(id) = found {
                app.dir = id;
            }
        }
        app.load(None);
        // The same entry: the same device, inode and mount, both known.
        let same = |then: &Option<Ident>, id: NodeId| then.is_some() && *then == ident(id);
        let mut moved = None;
        if let Some((name, then)) = carry.cursor
            && let Some(i) = app.rows.iter().position(|&r| tree.name(r) == &name[..])
        {
            app.cursor = i;
            let id = app.rows[i];
            if !same(&then, id) {
                moved = Some(id);
            }
        }
        let mut marks: Vec<NodeId> = Vec::new();
        let mut dropped: Vec<NodeId> = Vec::new();
        for (names, then) in &carry.marks {
            let Some(id) = find(names) else {
                // Gone: nothing to mark, nothing to say.
                continue;
            };
            if same(then, id) {
                marks.push(id);
            } else {
                dropped.push(id);
            }
        }
        marks.sort_unstable();
        marks.dedup();
        if !marks.is_empty() {
            app.marks.ids = marks;
            app.update_marks();
        }
        if !dropped.is_empty() || moved.is_some() {
            app.notice = Some(app.replaced_notice(&dropped, moved));
        }
        app.replaced = dropped.into_iter().chain(moved).collect();
        app.replaced.sort_unstable();
        app.replaced.dedup();
        app
    }

    /// The notice for the marks dropped because their names are now the
    /// entries `ids` (the first few by path), and for the cursor on a name
    /// that is now the entry `moved`.
    fn replaced_notice(&self, ids: &[NodeId], moved: Option<NodeId>) -> Vec<String> {
        const SHOWN: usize = 5;
        let n = ids.len();
        let mut v = Vec::new();
        if n > 1 {
            v.push(format!(
                "{n} marks dropped: their names are other entries now."
            ));
        }
        for &id in &ids[..n.min(SHOWN)] {
            let path = sdu::quote(&self.path(id));
            v.push(if n == 1 {
                format!("1 mark dropped: {path} is no longer the entry you marked.")
            } else {
                format!("Mark dropped: {path} is no longer the entry you marked.")
            });
        }
        if n > SHOWN {
            v.push(format!("…and {} more.", n - SHOWN));
        }
        if let Some(id) = moved {
            v.push(format!(
                "{} is no longer the entry the cursor was on (same name, another entry).",
                sdu::quote(&self.path(id))
            ));
        }
        v.push("(any key closes this)".into());
        v
    }

    /// What [`App::resume`] needs to carry on in a new scan; `ident` is
    /// what this scan saw at an entry.
    pub(crate) fn carry(&self, ident: impl Fn(NodeId) -> Option<Ident>) -> Carry {
        Carry {
            dir: (self.dir != NodeId::TOP).then(|| split(self.names(self.dir))),
            sort: self.sort,
            first: self.first,
            settings: self.settings.clone(),
            cursor: self
                .current()
                .map(|id| (self.tree.name(id).to_vec(), ident(id))),
            marks: self
                .marks
                .ids
                .iter()
                .map(|&id| (split(self.names(id)), ident(id)))
                .collect(),
        }
    }
}
