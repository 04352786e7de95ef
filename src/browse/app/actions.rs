//! What the keys ask of the browser ([`Action`]), what they do in each
//! state ([`KeyMode`]), the order of the rows ([`Sort`]) and what the
//! browser asks of the event loop ([`Request`]).

use sdu::NodeId;
use sdu::figures::Figure;

/// What the rows are ordered by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RowKey {
    /// A figure, largest first.
    Figure(Figure),
    /// The name, A to Z (bytewise).
    Name,
    /// The entries under an entry (files and directories), most first.
    Count,
    /// The newest modification time under an entry, newest first.
    Time,
    /// The change of the first column's figure since the old scan
    /// (`--compare`), largest growth first.
    Change,
}

/// The order of the rows: a key, and whether it is reversed from the key's
/// own direction (figures largest first, names A to Z).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Sort {
    pub(crate) key: RowKey,
    pub(crate) reverse: bool,
}

/// What the browser asks of the event loop, which ends the browsing of
/// this scan to do it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Request {
    /// Delete these entries (confirmed), then scan again.
    Delete(Vec<NodeId>),
    /// `r`: scan again.
    Rescan,
    /// `b`: a shell in the directory shown, then scan again.
    Shell,
    /// `F`: the `--df` table of the filesystem browsed, shown over the
    /// same scan.
    Df,
}

/// What a key asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    Up,
    Down,
    PageUp,
    PageDown,
    Home,
    End,
    /// Into the directory under the cursor.
    Open,
    /// Up to the parent directory.
    Back,
    /// Sort by this key; again, reverse.
    Sort(RowKey),
    /// Sort by the first column (Total, or Apparent); again, reverse.
    SortSize,
    /// Show or hide the files (non-directories).
    ToggleFiles,
    /// Show or hide the entries whose name starts with a dot.
    ToggleDotfiles,
    /// Show or hide the column of entry counts.
    ToggleCount,
    /// Show or hide the column of modification times.
    ToggleTime,
    /// Apparent size in place of Total, and back.
    Apparent,
    /// Directories before files, and back (ncdu's `t`).
    DirsFirst,
    /// The bar and percentage columns: both, none, bar, percentage (ncdu's `g`).
    Graph,
    /// The entry under the cursor in full (path, figures, inode).
    Info,
    /// Type a part of the names to show.
    Filter,
    /// Mark or unmark the entry under the cursor.
    Mark,
    /// Unmark everything.
    ClearMarks,
    /// Show or hide the help.
    Help,
    /// Open the table of the Btrfs snapshots (`p`), or go back from it.
    Snapshots,
    /// Ask to delete the marked entries (or the one under the cursor).
    Delete,
    /// Scan again, keeping the directory shown, the cursor and the marks.
    Rescan,
    /// A shell in the directory shown; a new scan when it exits.
    Shell,
    /// The `--df` table of the filesystem browsed.
    Df,
    /// In the confirmation: a character typed, the last one erased, Enter,
    /// Esc.
    Type(char),
    Erase,
    Enter,
    Cancel,
    /// Close the notice shown.
    Dismiss,
    Quit,
}

/// What the keys do now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeyMode {
    Browse,
    Help,
    /// A deletion waits for `yes`.
    Confirm,
    /// A message (what a deletion did) waits for any key.
    Notice,
    /// The entry info waits for any key.
    Info,
    /// A filter being typed.
    Filter,
    /// The table of the Btrfs snapshots: the cursor moves over its rows,
    /// marks mark their subvolumes.
    Snapshots,
}
