//! What a browser keeps over a new scan (after `d`, `r` or `b`): the
//! directory shown, the sort, the settings, the entry under the cursor
//! and the marks, each by its names, found again in the new tree where it
//! still is.

use sdu::figures::{Figure, Kind};
use sdu::records::NodeId;
use sdu::tree::{Sets, Tree};

use super::{App, Settings, Sort};

/// What a new [`App`] takes over from the one before a rescan.
#[derive(Clone, Debug)]
pub struct Carry {
    /// The directory shown: its root's name and the names below it (`None`:
    /// the list of roots).
    dir: Option<(Vec<u8>, Vec<Vec<u8>>)>,
    sort: Sort,
    first: Figure,
    settings: Settings,
    /// The name of the entry under the cursor.
    cursor: Option<Vec<u8>>,
    /// The marked entries: each one's root name and the names below it.
    pub marks: Vec<(Vec<u8>, Vec<Vec<u8>>)>,
}

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
    pub fn resume(tree: &'t Tree, sets: &'t Sets, first: Figure, carry: Carry) -> App<'t> {
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
        if let Some(name) = carry.cursor
            && let Some(i) = app.rows.iter().position(|&r| tree.name(r) == &name[..])
        {
            app.cursor = i;
        }
        let mut marks: Vec<NodeId> = carry.marks.iter().filter_map(find).collect();
        marks.sort_unstable();
        marks.dedup();
        if !marks.is_empty() {
            app.marks.ids = marks;
            app.update_marks();
        }
        app
    }

    /// What [`App::resume`] needs to carry on in a new scan.
    pub fn carry(&self) -> Carry {
        Carry {
            dir: (self.dir != NodeId::TOP).then(|| split(self.names(self.dir))),
            sort: self.sort,
            first: self.first,
            settings: self.settings.clone(),
            cursor: self.current().map(|id| self.tree.name(id).to_vec()),
            marks: self
                .marks
                .ids
                .iter()
                .map(|&id| split(self.names(id)))
                .collect(),
        }
    }
}
