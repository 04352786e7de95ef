//! The browser's state, apart from any terminal: the directory shown, its
//! rows in order, the cursor, the sort, whether files are shown, and the
//! marks with what deleting them frees.
//!
//! Everything here is a function of the keys pressed ([`Action`]) and the
//! scanned [`Tree`], so the unit tests drive it without a terminal; the
//! drawing is [`super::view`]'s. Deleting is asked for here (`d`, then
//! `yes` typed and Enter: [`App::request`]) and done by the event loop.

use std::time::{Duration, Instant};

use sdu::figures::{Figure, Kind, Stats};
use sdu::{Frees, NodeId, Sets, Tree};

mod actions;
mod carry;
mod gone;
mod guard;
mod settings;
mod snapshots;
pub(crate) use actions::{Action, KeyMode, Request, RowKey, Sort};
mod unread;
pub(crate) use carry::Carry;
pub(crate) use gone::GoneRow;
pub(crate) use guard::Guard;
use settings::contains;
pub(crate) use settings::{Info, Now, Settings, items};
pub(crate) use unread::Unread;

/// A deletion waiting for its confirmation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Confirm {
    /// The entries, none inside another.
    pub(crate) ids: Vec<NodeId>,
    /// Their first column's figure, added up.
    pub(crate) total: u64,
    /// What deleting them frees (the reclaimable of their union).
    pub(crate) frees: Frees,
    /// What was typed so far.
    pub(crate) typed: String,
}

/// The entries of a directory that the settings do not show, by what
/// hides them ([`App::hidden`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Hidden {
    /// By `a`: files.
    pub(crate) files: usize,
    /// By `e`: names starting with a dot.
    pub(crate) dotfiles: usize,
    /// By the filter: names that do not hold it.
    pub(crate) filtered: usize,
}

/// The marked entries and what they add up to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Marked {
    /// Node ids, sorted.
    pub(crate) ids: Vec<NodeId>,
    /// The first column's figure (Total, or Apparent) of the marked entries
    /// that lie inside no other marked one.
    pub(crate) total: u64,
    /// What deleting all of them frees: the reclaimable of their union.
    pub(crate) frees: Frees,
}

/// The browser's state.
pub(crate) struct App<'t> {
    tree: &'t Tree,
    /// What any set of its entries frees.
    sets: &'t Sets,
    /// The figure of the first column: Total, or Apparent under
    /// `--apparent-size`.
    pub(crate) first: Figure,
    /// The directory shown ([`NodeId::TOP`]: the list of roots).
    dir: NodeId,
    /// Highest directory one can go up to: the one root, or [`NodeId::TOP`] for
    /// several.
    top: NodeId,
    /// The entries of `dir` shown, in order.
    rows: Vec<NodeId>,
    /// `--compare`: the entries gone from `dir` since the old scan, shown
    /// after `rows`.
    gone: Vec<GoneRow>,
    /// Over `rows`, then `gone`.
    cursor: usize,
    /// The first row on the screen.
    offset: usize,
    /// Rows on the screen (set by the view on each draw).
    page: usize,
    sort: Sort,
    settings: Settings,
    marks: Marked,
    /// How long the last update of the marks' figures took.
    pub(crate) mark_time: Duration,
    pub(crate) help: bool,
    pub(crate) quit: bool,
    /// Whether this is a live scan, not a saved one: only a live scan
    /// deletes (`d`), scans again (`r`) and opens a shell (`b`).
    pub(crate) can_delete: bool,
    /// The deletion being confirmed.
    pub(crate) confirm: Option<Confirm>,
    /// What the event loop is asked to do: delete the entries confirmed,
    /// scan again, or open a shell.
    pub(crate) request: Option<Request>,
    /// A message over the screen until a key is pressed.
    pub(crate) notice: Option<Vec<String>>,
    /// The entry info shown.
    pub(crate) info: Option<Info>,
    /// The filter being typed.
    pub(crate) filter_edit: Option<String>,
    /// The directories not read in full.
    pub(crate) unread: Unread<'t>,
    /// `--compare OLD`: the scan compared with the old one.
    pub(crate) compare: Option<&'t sdu::Comparison>,
    /// The entries under a name that was another entry in the scan before
    /// this one, where the cursor or a mark was (sorted): the confirmation
    /// of their deletion says so.
    replaced: Vec<NodeId>,
    /// The table of the Btrfs snapshots (`p`).
    pub(crate) snapshots: snapshots::Snapshots<'t>,
    /// What `d` refuses before asking.
    pub(crate) guard: Guard<'t>,
}

impl<'t> App<'t> {
    /// A browser of `tree`, in its one root (or in the list of roots when
    /// there are several), sorted by `sort`.
    pub(crate) fn new(tree: &'t Tree, sets: &'t Sets, first: Figure, sort: Sort) -> App<'t> {
        let roots: Vec<NodeId> = visible(tree, tree.roots()).collect();
        let top = match roots[..] {
            [one] if tree.kind(one) == Kind::Dir => one,
            _ => NodeId::TOP,
        };
        let mut app = App {
            tree,
            sets,
            first,
            dir: top,
            top,
            rows: Vec::new(),
            gone: Vec::new(),
            cursor: 0,
            offset: 0,
            page: 20,
            sort,
            settings: Settings::default(),
            marks: Marked::default(),
            mark_time: Duration::ZERO,
            help: false,
            quit: false,
            can_delete: true,
            confirm: None,
            request: None,
            notice: None,
            info: None,
            filter_edit: None,
            unread: Unread::default(),
            compare: None,
            replaced: Vec::new(),
            snapshots: snapshots::Snapshots::default(),
            guard: Guard::default(),
        };
        app.load(None);
        app
    }

    /// What the keys do now.
    pub(crate) fn mode(&self) -> KeyMode {
        if self.confirm.is_some() {
            KeyMode::Confirm
        } else if self.notice.is_some() {
            KeyMode::Notice
        } else if self.info.is_some() {
            KeyMode::Info
        } else if self.filter_edit.is_some() {
            KeyMode::Filter
        } else if self.help {
            KeyMode::Help
        } else if self.snapshots.table.is_some() {
            KeyMode::Snapshots
        } else {
            KeyMode::Browse
        }
    }

    /// The root's name (the path as given), then the names down to `id`.
    pub(crate) fn names(&self, id: NodeId) -> Vec<Vec<u8>> {
        let mut names = Vec::new();
        let mut n = Some(id);
        while let Some(x) = n.filter(|&x| x != NodeId::TOP) {
            names.push(self.tree.name(x).to_vec());
            n = self.tree.parent(x);
        }
        names.reverse();
        names
    }

    pub(crate) fn tree(&self) -> &'t Tree {
        self.tree
    }

    /// The directory shown.
    pub(crate) fn dir(&self) -> NodeId {
        self.dir
    }

    /// The rows shown, in order.
    pub(crate) fn rows(&self) -> &[NodeId] {
        &self.rows
    }

    /// The entries not shown in the directory shown, by what hides them:
    /// `a` (files), `e` (names starting with a dot), the filter (each
    /// counted once, by the first of these that hides it).
    pub(crate) fn hidden(&self) -> Hidden {
        let set = &self.settings;
        let tree = self.tree;
        let filter = set.filter.as_deref().map(str::as_bytes);
        let mut h = Hidden::default();
        for id in visible(tree, tree.children(self.dir)) {
            let name = tree.name(id);
            if !set.files && tree.kind(id) != Kind::Dir {
                h.files += 1;
            } else if !set.dotfiles && name.starts_with(b".") {
                h.dotfiles += 1;
            } else if filter.is_some_and(|f| !contains(name, f)) {
                h.filtered += 1;
            }
        }
        h
    }

    /// The index of the row under the cursor (0 when there is none).
    pub(crate) fn cursor(&self) -> usize {
        self.cursor
    }

    /// The entry under the cursor, if the directory has any row.
    pub(crate) fn current(&self) -> Option<NodeId> {
        self.rows.get(self.cursor).copied()
    }

    pub(crate) fn sort(&self) -> Sort {
        self.sort
    }

    pub(crate) fn settings(&self) -> &Settings {
        &self.settings
    }

    pub(crate) fn marks(&self) -> &Marked {
        &self.marks
    }

    pub(crate) fn is_marked(&self, id: NodeId) -> bool {
        self.marks.ids.binary_search(&id).is_ok()
    }

    /// Whether `id` is under a name that was another entry, where the
    /// cursor or a mark was, in the scan before this one.
    pub(crate) fn replaced(&self, id: NodeId) -> bool {
        self.replaced.binary_search(&id).is_ok()
    }

    /// The first row on the screen for `height` rows, keeping the cursor
    /// in view; remembers `height` as the page for PgUp and PgDn.
    pub(crate) fn scroll(&mut self, height: usize) -> usize {
        self.page = height.max(1);
        if self.cursor < self.offset {
            self.offset = self.cursor;
        } else if self.cursor >= self.offset + self.page {
            self.offset = self.cursor + 1 - self.page;
        }
        let last_start = (self.rows.len() + self.gone.len()).saturating_sub(self.page);
        self.offset = self.offset.min(last_start);
        self.offset
    }

    /// The figures of the directory shown (of all roots for [`NodeId::TOP`]).
    pub(crate) fn dir_figures(&self) -> Stats {
        self.tree.figures(self.dir)
    }

    /// The path of `id`: its root as given, then its names.
    pub(crate) fn path(&self, id: NodeId) -> Vec<u8> {
        let mut p = Vec::new();
        for name in self.names(id) {
            sdu::path::join(&mut p, &name);
        }
        p
    }

    /// The figure the rows are ranked by and the bars drawn from: the sort
    /// figure, or the first column's when sorted by name.
    pub(crate) fn rank(&self) -> Figure {
        match self.sort.key {
            RowKey::Figure(f) => f,
            _ => self.first,
        }
    }

    /// Applies one key's action.
    pub(crate) fn apply(&mut self, a: Action) {
        if self.apply_in_snapshots(a) {
            return;
        }
        let last = (self.rows.len() + self.gone.len()).saturating_sub(1);
        match a {
            Action::Open if self.refuse_gone("it cannot be opened") => {}
            Action::Info if self.refuse_gone("there is no more to show") => {}
            Action::Mark if self.refuse_gone("it cannot be marked") => {}
            Action::Delete
                if self.marks.ids.is_empty() && self.refuse_gone("it cannot be deleted") => {}
            Action::Up => self.cursor = self.cursor.saturating_sub(1),
            Action::Down => self.cursor = (self.cursor + 1).min(last),
            Action::PageUp => self.cursor = self.cursor.saturating_sub(self.page),
            Action::PageDown => self.cursor = (self.cursor + self.page).min(last),
            Action::Home => self.cursor = 0,
            Action::End => self.cursor = last,
            Action::Open => self.open(),
            Action::Back => self.back(),
            Action::SortSize => self.apply(Action::Sort(RowKey::Figure(self.first))),
            Action::Sort(key) => self.sort_by(key),
            Action::ToggleFiles => {
                self.settings.files = !self.settings.files;
                self.reload();
            }
            Action::ToggleDotfiles => {
                self.settings.dotfiles = !self.settings.dotfiles;
                self.reload();
            }
            Action::ToggleCount => self.settings.count = !self.settings.count,
            Action::ToggleTime => self.settings.time = !self.settings.time,
            Action::Apparent => self.toggle_apparent(),
            Action::DirsFirst => self.toggle_dirs_first(),
            Action::Graph => self.cycle_graph(),
            Action::Info => {
                self.info = self.current().map(|id| Info {
                    id,
                    ident: None,
                    now: None,
                });
            }
            Action::Filter => {
                self.filter_edit = Some(self.settings.filter.clone().unwrap_or_default());
            }
            Action::Mark => self.toggle_mark(last),
            Action::ClearMarks => {
                self.marks.ids.clear();
                self.update_marks();
            }
            Action::Help => self.help = !self.help,
            Action::Snapshots => self.toggle_snapshots(),
            Action::Delete => self.ask_delete(),
            Action::Rescan | Action::Shell | Action::Df if !self.can_delete => {
                self.notice = Some(vec![
                    "This is a saved scan (--import): it cannot be scanned again,".into(),
                    "and its directories may not be on this machine.".into(),
                ]);
            }
            Action::Rescan => self.request = Some(Request::Rescan),
            Action::Shell => self.request = Some(Request::Shell),
            Action::Df => self.request = Some(Request::Df),
            Action::Type(c) => self.type_char(c),
            Action::Erase => self.erase(),
            Action::Enter => self.enter(),
            Action::Cancel => self.cancel(),
            Action::Dismiss => {
                if self.notice.take().is_none() {
                    self.info = None;
                }
            }
            Action::Quit => self.quit = true,
        }
    }

    /// Into the directory under the cursor (a file: nothing).
    fn open(&mut self) {
        if let Some(id) = self.current().filter(|&id| self.tree.kind(id) == Kind::Dir) {
            self.dir = id;
            self.load(None);
        }
    }

    /// Up to the parent directory, the cursor on the one left; not above
    /// the top.
    fn back(&mut self) {
        if self.dir != self.top {
            let from = self.dir;
            self.dir = self.tree.parent(from).unwrap_or(NodeId::TOP);
            self.load(Some(from));
        }
    }

    /// Sorts by `key`, reversed when already sorted by it, and shows its
    /// column; by the change only when compared with an old scan.
    fn sort_by(&mut self, key: RowKey) {
        if key == RowKey::Change && self.compare.is_none() {
            self.notice = Some(vec![
                "D sorts by the change since an old scan: browse with --compare OLD.".into(),
            ]);
            return;
        }
        // The column of what the rows are sorted by is shown.
        match key {
            RowKey::Count => self.settings.count = true,
            RowKey::Time => self.settings.time = true,
            _ => {}
        }
        self.sort = if self.sort.key == key {
            Sort {
                key,
                reverse: !self.sort.reverse,
            }
        } else {
            Sort {
                key,
                reverse: false,
            }
        };
        let at = self.current();
        self.load(at);
    }

    /// The first column swapped between the apparent size and what it was
    /// (the total when it was the apparent size), and the sort with it.
    fn toggle_apparent(&mut self) {
        let (old, new) = match self.first {
            Figure::Apparent => (Figure::Apparent, Figure::Total),
            f => (f, Figure::Apparent),
        };
        self.first = new;
        if self.sort.key == RowKey::Figure(old) {
            self.sort.key = RowKey::Figure(new);
        }
        self.update_marks();
        self.reload();
    }

    /// Marks the entry under the cursor, or unmarks it, and moves on (as
    /// in ncdu); `last` is the last row.
    fn toggle_mark(&mut self, last: usize) {
        if let Some(id) = self.current() {
            match self.marks.ids.binary_search(&id) {
                Ok(i) => {
                    self.marks.ids.remove(i);
                }
                Err(i) => self.marks.ids.insert(i, id),
            }
            self.update_marks();
            self.cursor = (self.cursor + 1).min(last);
        }
    }

    /// A character typed: into the confirmation when one is open (16 at
    /// most), else into the filter being edited.
    fn type_char(&mut self, c: char) {
        if let Some(c0) = &mut self.confirm {
            if c0.typed.chars().count() < 16 {
                c0.typed.push(c);
            }
        } else if let Some(f) = &mut self.filter_edit {
            f.push(c);
        }
    }

    /// Backspace: in the confirmation when one is open, else in the filter
    /// being edited.
    fn erase(&mut self) {
        if let Some(c) = &mut self.confirm {
            c.typed.pop();
        } else if let Some(f) = &mut self.filter_edit {
            f.pop();
        }
    }

    /// Enter: the deletion asked for when "yes" was typed in the
    /// confirmation (else it is closed, and says so); without one, the
    /// filter being edited applied (empty: none).
    fn enter(&mut self) {
        if let Some(c) = &mut self.confirm {
            if c.typed == "yes" {
                self.request = self.confirm.take().map(|c| Request::Delete(c.ids));
            } else {
                self.decline();
            }
        } else if let Some(f) = self.filter_edit.take() {
            self.settings.filter = (!f.is_empty()).then_some(f);
            self.reload();
        }
    }

    /// Escape: the confirmation closed when one is open; else the filter
    /// being edited dropped, with the filter it replaces; else the filter
    /// applied.
    fn cancel(&mut self) {
        if self.confirm.is_some() {
            self.confirm = None;
        } else if self.filter_edit.take().is_some() {
            self.settings.filter = None;
            self.reload();
        } else {
            self.clear_filter();
        }
    }

    /// The marked entries that lie inside no other marked one.
    pub(crate) fn outermost_marks(&self) -> Vec<NodeId> {
        let ids = &self.marks.ids;
        ids.iter()
            .copied()
            .filter(|&id| !self.inside(id, ids))
            .collect()
    }

    /// Whether `id` lies inside one of `ids` (sorted).
    fn inside(&self, id: NodeId, ids: &[NodeId]) -> bool {
        let mut n = self.tree.parent(id);
        while let Some(x) = n.filter(|&x| x != NodeId::TOP) {
            if ids.binary_search(&x).is_ok() {
                return true;
            }
            n = self.tree.parent(x);
        }
        false
    }

    /// `d`: the confirmation for the marked entries, or for the entry
    /// under the cursor when none is marked.
    fn ask_delete(&mut self) {
        if !self.can_delete {
            self.notice = Some(vec![
                "This is a saved scan (--import): it cannot delete.".into(),
                "Browse a live scan to delete.".into(),
            ]);
            return;
        }
        let ids = if self.marks.ids.is_empty() {
            self.current().into_iter().collect()
        } else {
            self.outermost_marks()
        };
        if ids.is_empty() || self.refuse_before_asking(&ids) {
            return;
        }
        let total = ids
            .iter()
            .map(|&id| self.first_of(&self.tree.figures(id)))
            .fold(0u64, u64::saturating_add);
        let frees = self.sets.frees(self.tree, &ids);
        self.confirm = Some(Confirm {
            ids,
            total,
            frees,
            typed: String::new(),
        });
    }

    /// Recomputes what the marks add up to.
    fn update_marks(&mut self) {
        let t0 = Instant::now();
        let ids = &self.marks.ids;
        self.marks.total = ids
            .iter()
            .filter(|&&id| !self.inside(id, ids))
            .map(|&id| self.first_of(&self.tree.figures(id)))
            .fold(0u64, u64::saturating_add);
        self.marks.frees = if ids.is_empty() {
            Frees::default()
        } else {
            self.sets.frees(self.tree, ids)
        };
        self.mark_time = t0.elapsed();
    }

    /// The first column's figure of `s`.
    pub(crate) fn first_of(&self, s: &Stats) -> u64 {
        self.first.of(s)
    }

    /// Fills the rows again, the cursor kept on its entry if still shown.
    fn reload(&mut self) {
        let at = self.current();
        self.load(at);
    }

    /// Fills the rows of `self.dir`, sorted, with the cursor on `at` if it
    /// is among them (else on the first row).
    fn load(&mut self, at: Option<NodeId>) {
        let set = &self.settings;
        let tree = self.tree;
        let filter = set.filter.as_deref().map(str::as_bytes);
        self.rows.clear();
        self.rows.extend(
            visible(tree, tree.children(self.dir))
                .filter(|&id| set.files || tree.kind(id) == Kind::Dir)
                .filter(|&id| set.dotfiles || !tree.name(id).starts_with(b"."))
                .filter(|&id| filter.is_none_or(|f| contains(tree.name(id), f))),
        );
        let Sort { key, reverse } = self.sort;
        let by_name = |a: &NodeId, b: &NodeId| tree.name(*a).cmp(tree.name(*b));
        match key {
            RowKey::Name => self.rows.sort_by(by_name),
            RowKey::Figure(f) => self.rows.sort_by(|a, b| {
                f.of(&tree.figures(*b))
                    .cmp(&f.of(&tree.figures(*a)))
                    .then_with(|| by_name(a, b))
            }),
            RowKey::Count => self.rows.sort_by(|a, b| {
                items(tree, *b)
                    .cmp(&items(tree, *a))
                    .then_with(|| by_name(a, b))
            }),
            RowKey::Change => {
                let first = self.first;
                let delta =
                    |id: NodeId| self.compare.map_or(0, |c| c.change(tree, id).delta(first));
                self.rows
                    .sort_by(|a, b| delta(*b).cmp(&delta(*a)).then_with(|| by_name(a, b)));
            }
            RowKey::Time => self.rows.sort_by(|a, b| {
                tree.figures(*b)
                    .time
                    .cmp(&tree.figures(*a).time)
                    .then_with(|| by_name(a, b))
            }),
        }
        if reverse {
            self.rows.reverse();
        }
        if self.settings.dirs_first {
            self.rows.sort_by_key(|&id| tree.kind(id) != Kind::Dir);
        }
        self.gone = match self.compare {
            Some(c) => gone::rows(c, self.dir, &self.settings, self.sort, self.first),
            None => Vec::new(),
        };
        self.cursor = at
            .and_then(|id| self.rows.iter().position(|&r| r == id))
            .unwrap_or(0);
        self.offset = 0;
    }
}

/// The entries of `ids` that du's rules do not hide.
fn visible<'a>(tree: &'a Tree, ids: &'a [NodeId]) -> impl Iterator<Item = NodeId> + 'a {
    ids.iter().copied().filter(|&id| !tree.is_hidden(id))
}

#[cfg(test)]
mod tests;
