//! How the rows are shown ([`Settings`]), the entry info ([`Info`]), and
//! the counts and name filter the rows use.

use sdu::figures::Kind;
use sdu::{NodeId, Tree};

use super::App;
use crate::browse::view::layout::{BAR_AND_PCT, BAR_CELLS, Fit, PCT};
use crate::cli::browse_flags::{Profile, View};

/// How the rows are shown, kept over a rescan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Settings {
    pub(crate) files: bool,
    /// Names starting with a dot.
    pub(crate) dotfiles: bool,
    /// The column of entry counts.
    pub(crate) count: bool,
    /// The column of modification times.
    pub(crate) time: bool,
    /// Only names holding this (bytewise).
    pub(crate) filter: Option<String>,
    /// The keys (`--keys`).
    pub(crate) keys: Profile,
    /// The bar column.
    pub(crate) graph: bool,
    /// The percentage column.
    pub(crate) percent: bool,
    /// Directories before files, whatever the sort.
    pub(crate) dirs_first: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            files: true,
            dotfiles: true,
            count: false,
            time: false,
            filter: None,
            keys: Profile::Sdu,
            graph: true,
            percent: true,
            dirs_first: false,
        }
    }
}

impl Settings {
    /// The settings the browser opens with: the flags' and the config
    /// files' ([`View`]).
    pub(crate) fn opening(v: View) -> Settings {
        Settings {
            keys: v.keys,
            count: v.count,
            time: v.time,
            graph: v.graph,
            percent: v.percent,
            dirs_first: v.dirs_first,
            ..Settings::default()
        }
    }
}

impl Settings {
    /// `f` with the bar and the percentage as these settings show them
    /// (`g`), their cells given to the name.
    pub(crate) fn graph_fit(&self, f: &mut Fit) {
        let used = |f: &Fit| match (f.bar, f.pct) {
            (true, true) => BAR_AND_PCT,
            (true, false) => BAR_CELLS + 1,
            (false, true) => PCT,
            (false, false) => 0,
        };
        let before = used(f);
        f.bar &= self.graph;
        f.pct &= self.percent;
        f.name += before - used(f);
    }
}

impl App<'_> {
    /// This browser with `s` in place of its settings.
    pub(crate) fn with_settings(mut self, s: Settings) -> Self {
        self.settings = s;
        self.reload();
        self
    }

    /// `t` in ncdu's keys: directories first, and back.
    pub(super) fn toggle_dirs_first(&mut self) {
        self.settings.dirs_first = !self.settings.dirs_first;
        self.reload();
    }

    /// `g` in ncdu's keys (`B` in sdu's): as ncdu cycles them, none, the
    /// bar alone, the percentage alone, both.
    pub(super) fn cycle_graph(&mut self) {
        let s = &mut self.settings;
        (s.graph, s.percent) = match (s.graph, s.percent) {
            (false, false) => (true, false),
            (true, false) => (false, true),
            (false, true) => (true, true),
            (true, true) => (false, false),
        };
    }

    /// Esc with no box open and no filter being typed: the filter applied
    /// goes (as in gdu), if there is one; nothing else happens (ncdu).
    pub(super) fn clear_filter(&mut self) {
        if self.settings.filter.take().is_some() {
            self.reload();
        }
    }
}

/// The entry info shown (`i`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Info {
    pub(crate) id: NodeId,
    /// What the scan recorded of its identity (a live scan).
    pub(crate) ident: Option<sdu::Ident>,
    /// A stat of it now, or why there is none (the event loop fills it).
    pub(crate) now: Option<Result<Now, String>>,
}

/// What a stat of an entry says now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Now {
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    pub(crate) nlink: u64,
    pub(crate) mtime: sdu::figures::Timestamp,
}

/// The files and directories under `id` (not itself).
pub(crate) fn items(tree: &Tree, id: NodeId) -> u64 {
    if tree.kind(id) != Kind::Dir {
        return 0;
    }
    let s = tree.figures(id);
    (s.files + s.dirs).saturating_sub(1)
}

/// Whether `name` holds `part`.
pub(super) fn contains(name: &[u8], part: &[u8]) -> bool {
    part.is_empty() || name.windows(part.len()).any(|w| w == part)
}
