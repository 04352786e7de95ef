//! The table of the Btrfs snapshots in the browser (`p`): the lines of
//! `sdu --snapshots`' table for the scan browsed ([`sdu::snapshot_table`]),
//! with a cursor over the subvolumes' rows. Its marks are the browser's:
//! marking a row marks its subvolume's node, so the footer says what
//! deleting every marked entry frees together, and the tree shows the
//! marks too. Enter goes to the subvolume in the tree.

use sdu::{NodeId, ReportOptions, Scanned};

use super::{Action, App};

/// The table, and how it is printed.
#[derive(Clone, Debug)]
pub(crate) struct Snapshots<'t> {
    /// The scan browsed, whose table it is (none: no table to read).
    pub(crate) scanned: Option<&'t Scanned>,
    /// The units, marks and time format of the table.
    pub(crate) opts: ReportOptions,
    /// The table's lines, read once per scan.
    lines: Option<Vec<(Option<NodeId>, Vec<u8>)>>,
    /// The table shown.
    pub(crate) table: Option<Table>,
}

impl Default for Snapshots<'_> {
    fn default() -> Self {
        Snapshots {
            scanned: None,
            opts: ReportOptions {
                quote_names: true,
                ..ReportOptions::default()
            },
            lines: None,
            table: None,
        }
    }
}

/// The table shown: its column titles, its lines and the cursor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Table {
    /// The column titles, when there is a row.
    pub(crate) titles: Option<Vec<u8>>,
    /// The lines below the titles: the rows, each with its subvolume's
    /// node, and each origin's footer; or the one line saying why there
    /// is no row.
    pub(crate) lines: Vec<(Option<NodeId>, Vec<u8>)>,
    /// The indices in `lines` of the rows.
    rows: Vec<usize>,
    /// The index in `rows` of the cursor.
    cursor: usize,
    /// The first line on the screen.
    offset: usize,
    /// Lines on the screen (set by the view on each draw).
    page: usize,
}

impl Table {
    /// The table of `lines`, as [`sdu::snapshot_table`] gives them.
    pub(crate) fn new(mut lines: Vec<(Option<NodeId>, Vec<u8>)>) -> Table {
        let has_rows = lines.iter().any(|(id, _)| id.is_some());
        let titles = match lines.first() {
            Some((None, _)) if has_rows => Some(lines.remove(0).1),
            _ => None,
        };
        if !has_rows && !lines.iter().any(|(_, l)| l.starts_with(b"no snapshots:")) {
            lines = vec![(None, b"(no Btrfs subvolume in the scan)".to_vec())];
        }
        let rows = (0..lines.len()).filter(|&i| lines[i].0.is_some()).collect();
        Table {
            titles,
            lines,
            rows,
            cursor: 0,
            offset: 0,
            page: 20,
        }
    }

    /// The subvolume under the cursor.
    pub(crate) fn current(&self) -> Option<NodeId> {
        self.cursor_line().and_then(|i| self.lines[i].0)
    }

    /// The index in [`Table::lines`] of the cursor's line.
    pub(crate) fn cursor_line(&self) -> Option<usize> {
        self.rows.get(self.cursor).copied()
    }

    /// The first line on the screen for `height` lines, keeping the
    /// cursor in view; remembers `height` as the page.
    pub(crate) fn scroll(&mut self, height: usize) -> usize {
        self.page = height.max(1);
        let at = self.cursor_line().unwrap_or(0);
        if at < self.offset {
            self.offset = at;
        } else if at >= self.offset + self.page {
            self.offset = at + 1 - self.page;
        }
        self.offset = self.offset.min(self.lines.len().saturating_sub(self.page));
        self.offset
    }

    /// Moves the cursor as `a` says; whether `a` is a move.
    fn moved(&mut self, a: Action) -> bool {
        let last = self.rows.len().saturating_sub(1);
        // A page of lines holds about as many rows.
        let page = self.page.max(1);
        self.cursor = match a {
            Action::Up => self.cursor.saturating_sub(1),
            Action::Down => (self.cursor + 1).min(last),
            Action::PageUp => self.cursor.saturating_sub(page),
            Action::PageDown => (self.cursor + page).min(last),
            Action::Home => 0,
            Action::End => last,
            _ => return false,
        };
        true
    }
}

impl App<'_> {
    /// `p`: the table opened, its lines read on the first opening; or
    /// closed.
    pub(super) fn toggle_snapshots(&mut self) {
        let s = &mut self.snapshots;
        if s.table.take().is_some() {
            return;
        }
        let (scanned, opts) = (s.scanned, &s.opts);
        let lines = s.lines.get_or_insert_with(|| match scanned {
            Some(scanned) => sdu::snapshot_table(scanned, opts),
            None => vec![(None, b"no snapshots: no scan to read them from".to_vec())],
        });
        s.table = Some(Table::new(lines.clone()));
    }

    /// The table opened on `lines` (the unit tests' way in, with lines
    /// made by hand).
    #[cfg(test)]
    pub(crate) fn open_snapshots_with(&mut self, lines: Vec<(Option<NodeId>, Vec<u8>)>) {
        self.snapshots.lines = Some(lines);
        self.snapshots.table = None;
        self.toggle_snapshots();
    }

    /// `a` in the table: a move, a mark (then down, as in the tree), or
    /// Enter, which goes to the subvolume in the tree. Whether it was one
    /// of those; the rest (Esc, `d`, `u`, `?`) do what they do in the
    /// tree.
    pub(super) fn apply_in_snapshots(&mut self, a: Action) -> bool {
        let Some(t) = &mut self.snapshots.table else {
            return false;
        };
        if t.moved(a) {
            return true;
        }
        match a {
            Action::Mark => {
                if let Some(id) = t.current() {
                    t.moved(Action::Down);
                    match self.marks.ids.binary_search(&id) {
                        Ok(i) => {
                            self.marks.ids.remove(i);
                        }
                        Err(i) => self.marks.ids.insert(i, id),
                    }
                    self.update_marks();
                }
            }
            Action::Open => {
                if let Some(id) = t.current() {
                    self.snapshots.table = None;
                    self.go_to(id);
                }
            }
            _ => return false,
        }
        true
    }

    /// The tree shown at `id`: its directory, the cursor on it (a root:
    /// the top).
    fn go_to(&mut self, id: NodeId) {
        self.dir = match self.tree.parent(id) {
            Some(p) if p != NodeId::TOP => p,
            _ => self.top,
        };
        self.load(Some(id));
    }
}
