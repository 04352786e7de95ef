//! How to report: the [`Format`], the [`SortKey`] and the [`ReportOptions`]
//! that the binary resolves from its flags, and [`ReportOptions::rank`], the
//! one figure that `--top`, `--min-size` and the tree's bars go by.
//!
//! These types are read by every other part of the report (selection, the
//! table, the JSON document, the tree view) and by the binary, so they live
//! in this leaf module rather than in `mod.rs`: `mod.rs` imports the
//! printers to dispatch to them, and a printer that took its options from
//! `mod.rs` would import a module that imports it back. Nothing here
//! imports another part of the report.

use crate::figures::{Figure, Kind, Stats, Timestamp};
use crate::timefmt::TimeFormat;
use crate::units::Unit;

/// Output format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// The table: one line per entry, a header, size columns, the path.
    #[default]
    Text,
    /// One JSON document, every size in bytes.
    Json,
    /// du's own format, `SIZE<TAB>PATH`, for one figure (`--du FIGURE`):
    /// no header, no padding, du's units.
    Du(Figure),
    /// `--tree`: an indented tree with a bar per entry.
    Tree,
    /// `--html FILE`: one self-contained page, a zoomable treemap.
    Html,
}

/// What `--sort` orders by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortKey {
    /// A figure, largest first; ties by path.
    Size(Figure),
    /// The path, in byte order.
    Name,
}

/// How to report.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// How to print.
    pub format: Format,
    /// Print entries down to this depth (`-d`; `-s` is 0).
    pub max_depth: Option<u32>,
    /// How sizes are printed (text, du and tree; JSON is always bytes).
    pub unit: Unit,
    /// Size columns of the text table, in order.
    pub columns: Vec<Figure>,
    /// Print the header line (text).
    pub header: bool,
    /// End rows with NUL instead of newline (`-0`).
    pub null: bool,
    /// Add a `total` row / key for all roots together (`-c`).
    pub grand_total: bool,
    /// `--sort`: list the entries in this order instead of du's.
    pub sort: Option<SortKey>,
    /// `--top N`: keep only the N largest entries (by the ranking figure:
    /// the `--sort` figure, else the `--du` figure, else the first column).
    pub top: Option<usize>,
    /// `--min-size`: hide entries whose ranking figure is smaller.
    pub min_size: Option<u64>,
    /// du's `-t`/`--threshold`: positive, hide entries whose
    /// ranking figure is smaller; negative, those whose figure is
    /// larger than its opposite. The `total` row is never hidden.
    pub threshold: Option<i64>,
    /// `--reverse`: list in the opposite order (and the tree view's
    /// siblings).
    pub reverse: bool,
    /// `--files-only`: list no directory.
    pub files_only: bool,
    /// `--older-than`: list only the entries whose newest time
    /// ([`Stats::time`]) is before this one.
    pub older_than: Option<Timestamp>,
    /// `--time`: a column with each entry's newest time ([`Stats::time`]),
    /// formatted so (text and du; JSON writes it in seconds).
    ///
    /// [`Stats::time`]: crate::figures::Stats::time
    pub time: Option<TimeFormat>,
    /// Colour the tree view (stdout is a terminal, `NO_COLOR` unset).
    pub color: bool,
    /// The width of the terminal, in columns, when stdout is one: the tree
    /// view's bars take what its other columns leave (else 20 cells).
    pub width: Option<usize>,
    /// Show names as GNU ls shows them on a terminal, quoted when they need
    /// it (gnulib's `shell-escape` style), so that a name cannot send the
    /// terminal escape sequences: set when stdout is a terminal. The text
    /// table, the tree view and the `--to-free` table follow it; du's lines
    /// and JSON never quote.
    pub quote_names: bool,
    /// Mark a bound Reclaimable in ASCII (`<=`, `>=`, `~`) rather than
    /// `≤`, `≥`, `~` ([`crate::figures::Bound::mark`]): set when the
    /// locale is not UTF-8, as du would tell it.
    pub ascii_marks: bool,
    /// `--html-area`: what the page's rectangles first stand for, Total or
    /// Reclaimable; `None`, the space on disk (Exclusive + Shared).
    pub html_area: Option<Figure>,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            format: Format::Text,
            max_depth: None,
            unit: Unit::HumanIec,
            columns: vec![
                Figure::Total,
                Figure::Exclusive,
                Figure::Shared,
                Figure::Reclaimable,
            ],
            header: true,
            null: false,
            grand_total: false,
            sort: None,
            top: None,
            min_size: None,
            threshold: None,
            reverse: false,
            files_only: false,
            older_than: None,
            time: None,
            color: false,
            width: None,
            quote_names: false,
            ascii_marks: false,
            html_area: None,
        }
    }
}

impl ReportOptions {
    /// The figure that `--top`, `--min-size` and the tree's bars go by: the
    /// `--sort` figure, else the `--du` figure, else the first column
    /// (total, or apparent with `--apparent-size`).
    pub(crate) fn rank(&self) -> Figure {
        match (self.sort, self.format) {
            (Some(SortKey::Size(c)), _) => c,
            (_, Format::Du(c)) => c,
            _ => self.columns.first().copied().unwrap_or(Figure::Total),
        }
    }

    /// The unit `figure` is printed in: [`Self::unit`], except that an
    /// inode count is never scaled by a block size (du sets its block size
    /// to 1 under `--inodes`; `-h` and `--si` still apply).
    pub(crate) fn unit_of(&self, figure: Figure) -> Unit {
        match (figure, self.unit) {
            (Figure::Inodes, Unit::Blocks { .. }) => Unit::Blocks {
                size: 1,
                suffix: None,
            },
            (_, u) => u,
        }
    }

    /// Whether an entry whose rank figure is `v` passes `--min-size` and
    /// `--threshold`.
    pub(super) fn shown(&self, v: u64) -> bool {
        self.min_size.is_none_or(|m| v >= m)
            && self.threshold.is_none_or(|t| {
                if t < 0 {
                    v <= t.unsigned_abs()
                } else {
                    v >= t.unsigned_abs()
                }
            })
    }

    /// Whether an entry of `kind` with `figures` passes `--files-only`
    /// and `--older-than` (an entry without a time, as none was recorded,
    /// passes).
    pub(super) fn passes(&self, kind: Kind, figures: &Stats) -> bool {
        !(self.files_only && kind == Kind::Dir)
            && self
                .older_than
                .is_none_or(|t| figures.time.is_none_or(|m| m < t))
    }

    /// Appends `name` as the text table and the `--to-free` table show it:
    /// raw, or quoted as ls does ([`Self::quote_names`]).
    pub(super) fn push_name(&self, line: &mut Vec<u8>, name: &[u8]) {
        if self.quote_names {
            crate::quote::shell_escape(name, line);
        } else {
            line.extend_from_slice(name);
        }
    }

    /// Whether the entries must be collected before printing (anything but
    /// du order, all of it).
    pub(super) fn selects(&self) -> bool {
        self.sort.is_some()
            || self.top.is_some()
            || self.min_size.is_some()
            || self.threshold.is_some()
            || self.reverse
            || self.files_only
            || self.older_than.is_some()
    }
}
