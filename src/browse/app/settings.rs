//! How the rows are shown ([`Settings`]), the entry info ([`Info`]), and
//! the counts and name filter the rows use.

use sdu::figures::Kind;
use sdu::{NodeId, Tree};

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
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            files: true,
            dotfiles: true,
            count: false,
            time: false,
            filter: None,
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
