//! `--stats`: what a run counted and how long each stage took, printed on
//! the messages after the report; and the warnings that close a scan.

use std::fmt::Write as _;
use std::time::Duration;

use crate::figures::Bound;
use crate::{Counters, Diagnostic, Messages, probe};

/// How long a walk's stages took.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Times {
    pub(crate) walk: Duration,
    pub(crate) sweep: Duration,
    pub(crate) tree: Duration,
}

impl Sizes {
    /// The sizes of a walk rolled up into `tree`: `files` with shared
    /// extents and their copies.
    pub(crate) fn walked(
        tree: &crate::tree::Tree,
        files: &Shared,
        indexed: usize,
        registry: &probe::Registry,
        t: Times,
    ) -> Sizes {
        Sizes::Walked {
            dirs: tree.len().saturating_sub(1),
            files_shared: (files.files + files.copies, files.copies),
            indexed,
            segments: files.segments,
            units: files.units,
            walk: t.walk,
            sweep: t.sweep,
            tree: t.tree,
            filesystems: registry.filesystems(),
        }
    }
}

/// How many files with shared data, copies of them, segments and units a
/// walk found, counted before the roll-up takes the files and the sweep.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shared {
    pub(crate) files: usize,
    pub(crate) copies: usize,
    pub(crate) segments: usize,
    pub(crate) units: usize,
}

impl Shared {
    /// The counts of `files`, `copies` and `sweep`.
    pub(crate) fn of(
        files: &crate::records::Files,
        copies: &crate::records::Copies,
        sweep: &crate::extents::Sweep,
    ) -> Shared {
        Shared {
            files: files.len(),
            copies: copies.len(),
            segments: sweep.segment_count(),
            units: sweep.unit_count(),
        }
    }
}

/// What `--stats` prints beyond the counters.
#[derive(Clone, Debug)]
pub(crate) enum Sizes {
    /// A walk.
    Walked {
        dirs: usize,
        /// Files with shared data, and how many of them are copies.
        files_shared: (usize, usize),
        indexed: usize,
        segments: usize,
        units: usize,
        walk: Duration,
        sweep: Duration,
        tree: Duration,
        filesystems: Vec<probe::FsInfo>,
    },
    /// A saved scan read in.
    Read {
        file: Vec<u8>,
        nodes: usize,
        links: usize,
        files: usize,
        segments: usize,
        units: usize,
        read: Duration,
        tree: Duration,
    },
}

/// The warnings that close a scan: files whose sharing could not be
/// verified, and compressed data counted at its uncompressed size.
pub(crate) fn closing_notes(counters: &Counters, msgs: &Messages) {
    if counters.unverified_files > 0 {
        msgs.report(Diagnostic::Unverified {
            files: counters.unverified_files,
            bytes: counters.unverified_bytes,
        });
    }
    if counters.compressed_files > 0 {
        msgs.report(Diagnostic::Compressed {
            files: counters.compressed_files,
            bytes: counters.compressed_bytes,
        });
    }
}

/// The `--stats` text of a run: its counters, and the sizes and times of
/// its scan or of the saved scan it read.
pub(crate) fn text(counters: &Counters, sizes: &Sizes, t_report: Duration, bound: Bound) -> String {
    let mut lines = body(counters, sizes, t_report);
    let unread = [
        crate::walk::LeftOut::Unreadable,
        crate::walk::LeftOut::NotStated,
    ]
    .iter()
    .any(|w| counters.left_out[w.index()] > 0);
    lines.push(("reclaimable".into(), exactness(bound, unread)));
    aligned(&lines)
}

/// `sdu stats:`, then each line's label and value, every value in one
/// column: two spaces after the longest label.
fn aligned(lines: &[(String, String)]) -> String {
    let width = lines
        .iter()
        .map(|(l, _)| l.chars().count())
        .max()
        .unwrap_or(0);
    let mut s = String::from("sdu stats:\n");
    for (label, value) in lines {
        let pad = width - label.chars().count();
        let _ = writeln!(s, "  {label}{:pad$}  {value}", "");
    }
    s
}

/// What `--stats` says of the Reclaimable figures: exact, or bounds and
/// why, and what would make them exact (`unread`: some directory or entry
/// could not be read, which marks "at least" too).
fn exactness(bound: Bound, unread: bool) -> String {
    if bound.is_exact() {
        return "exact: every reference to the data counted was verified".into();
    }
    let mut why = Vec::new();
    if bound.at_most() {
        why.push(
            "at most where data may also be held outside the scan (scan the whole \
             filesystem, or run as root, to verify)",
        );
    }
    if bound.at_least() && unread {
        why.push(
            "at least where a directory or entry could not be read (named on \
             stderr: what it holds is not counted), or Btrfs extents may be \
             referenced only in part (root sees them)",
        );
    } else if bound.at_least() {
        why.push(
            "at least where Btrfs extents may be referenced only in part \
             (root sees them: run as root for exact figures)",
        );
    }
    format!("bounds where marked: {}", why.join("; "))
}

/// The `--stats` lines above its last one, as labels and values.
fn body(counters: &Counters, sizes: &Sizes, t_report: Duration) -> Vec<(String, String)> {
    match sizes {
        Sizes::Walked {
            dirs,
            files_shared,
            indexed,
            segments,
            units,
            walk,
            sweep,
            tree,
            filesystems,
        } => walked(&WalkTally {
            counters,
            filesystems,
            dirs: *dirs,
            files_shared: *files_shared,
            indexed: *indexed,
            segments: *segments,
            units: *units,
            walk: *walk,
            sweep: *sweep,
            tree: *tree,
            report: t_report,
        }),
        Sizes::Read {
            file,
            nodes,
            links,
            files,
            segments,
            units,
            read,
            tree,
        } => vec![
            (
                "saved scan".into(),
                String::from_utf8_lossy(file).into_owned(),
            ),
            ("nodes (dirs, -a files)".into(), nodes.to_string()),
            (
                "links / files with shared data".into(),
                format!("{links} / {files}"),
            ),
            ("segments / units".into(), format!("{segments} / {units}")),
            (
                "time:".into(),
                format!(
                    "read {:.3}s, roll-up {:.3}s, report {:.3}s",
                    read.as_secs_f64(),
                    tree.as_secs_f64(),
                    t_report.as_secs_f64()
                ),
            ),
        ],
    }
}

/// A walk's counters, sizes and times: what the rows of [`WALKED`] read.
struct WalkTally<'a> {
    counters: &'a Counters,
    filesystems: &'a [probe::FsInfo],
    dirs: usize,
    files_shared: (usize, usize),
    indexed: usize,
    segments: usize,
    units: usize,
    walk: Duration,
    sweep: Duration,
    tree: Duration,
    report: Duration,
}

/// A row of a walk's `--stats`: one line, a label and how its value is
/// written; or a line for each filesystem, reason or way, labels and
/// values both written.
enum StatsRow {
    Line(&'static str, fn(&WalkTally) -> String),
    Lines(fn(&WalkTally) -> Vec<(String, String)>),
}

/// The `--stats` lines of a walk, in the order printed.
const WALKED: &[StatsRow] = &[
    StatsRow::Line("threads", threads),
    StatsRow::Line("entries stat-ed", |w| w.counters.entries.to_string()),
    StatsRow::Line("nodes (dirs, -a files)", |w| w.dirs.to_string()),
    StatsRow::Lines(filesystems),
    StatsRow::Line("files mapped (FIEMAP)", |w| {
        w.counters.fiemap_files.to_string()
    }),
    StatsRow::Line("FIEMAP calls", |w| w.counters.fiemap_calls.to_string()),
    StatsRow::Line("files on the lean path", |w| {
        w.counters.plain_files.to_string()
    }),
    StatsRow::Line("FIEMAPs put off (allocation group busy)", |w| {
        w.counters.fiemap_put_off.to_string()
    }),
    StatsRow::Line("files credited with a snapshot copy's extents", |w| {
        w.counters.copies_reused.to_string()
    }),
    StatsRow::Line("files credited with a saved map (--since), proven", |w| {
        format!(
            "{}, {}",
            w.counters.mappings_reused, w.counters.mappings_proven
        )
    }),
    StatsRow::Line(
        "saved maps verified; stale, not checked (mapped again)",
        |w| {
            let c = &w.counters;
            format!(
                "{}; {}, {}",
                c.mappings_verified, c.mappings_stale, c.mappings_remapped
            )
        },
    ),
    StatsRow::Line("files put off while a copy was mapped", |w| {
        w.counters.copies_waited.to_string()
    }),
    StatsRow::Line("inline files recorded for snapshots", |w| {
        w.counters.inline_recorded.to_string()
    }),
    StatsRow::Line("files read by tree search (Btrfs, root)", |w| {
        w.counters.search_files.to_string()
    }),
    StatsRow::Line("tree searches", |w| w.counters.search_calls.to_string()),
    StatsRow::Line("entries read from the tree (Btrfs, root)", |w| {
        w.counters.tree_entries.to_string()
    }),
    StatsRow::Line("inodes read as their snapshots' lineage holds them", |w| {
        w.counters.tree_unchanged.to_string()
    }),
    StatsRow::Line("tree search undecided, mapped with FIEMAP", |w| {
        w.counters.search_undecided.to_string()
    }),
    StatsRow::Lines(skipped),
    StatsRow::Line("not mapped: could not be read", |w| {
        let c = w.counters;
        format!(
            "{} ({} bytes counted as exclusive)",
            c.unverified_files, c.unverified_bytes
        )
    }),
    StatsRow::Lines(left_out),
    StatsRow::Line("compressed, counted uncompressed", |w| {
        let c = w.counters;
        format!("{} ({} bytes)", c.compressed_files, c.compressed_bytes)
    }),
    StatsRow::Line("compressed, counted on disk", |w| {
        let c = w.counters;
        format!("{} ({} bytes on disk)", c.on_disk_files, c.on_disk_bytes)
    }),
    StatsRow::Line("extents referenced in part, kept whole", |w| {
        let c = w.counters;
        format!(
            "{} ({} bytes no file references)",
            c.partial_extents, c.unreachable_bytes
        )
    }),
    StatsRow::Line("shared ranges asked who else holds them", |w| {
        let c = w.counters;
        format!(
            "{} ({} held outside the scan; {} settled by their refs)",
            c.outside_asked, c.outside_found, c.outside_settled
        )
    }),
    StatsRow::Line("files with shared data", |w| {
        format!(
            "{} ({} of them copies of another, recorded as such)",
            w.files_shared.0, w.files_shared.1
        )
    }),
    StatsRow::Line("shared extents indexed", |w| w.indexed.to_string()),
    StatsRow::Line("index runs spilled to a temporary file", |w| {
        let c = w.counters;
        format!("{} ({} bytes)", c.index_runs, c.index_spilled)
    }),
    StatsRow::Line("segments / units", |w| {
        format!("{} / {}", w.segments, w.units)
    }),
    StatsRow::Line("time:", |w| {
        format!(
            "walk {:.3}s, sweep {:.3}s, roll-up {:.3}s, report {:.3}s",
            w.walk.as_secs_f64(),
            w.sweep.as_secs_f64(),
            w.tree.as_secs_f64(),
            w.report.as_secs_f64()
        )
    }),
];

/// The `--stats` lines of a walk: the rows of [`WALKED`], written.
fn walked(w: &WalkTally) -> Vec<(String, String)> {
    let mut lines = Vec::new();
    for row in WALKED {
        match row {
            StatsRow::Line(label, value) => lines.push(((*label).into(), value(w))),
            StatsRow::Lines(each) => lines.extend(each(w)),
        }
    }
    lines
}

/// How many threads walked, and why more than one per CPU.
fn threads(w: &WalkTally) -> String {
    let c = w.counters;
    if c.cold_lineage {
        format!(
            "{} (the tree was not in memory, but its snapshots are read by difference, \
             from memory: a thread per CPU)",
            c.threads
        )
    } else if c.cold {
        format!(
            "{} (the tree was not in memory: more threads keep the device busy)",
            c.threads
        )
    } else {
        c.threads.to_string()
    }
}

/// A line per filesystem: its name and whether it may share data.
fn filesystems(w: &WalkTally) -> Vec<(String, String)> {
    w.filesystems
        .iter()
        .map(|fs| {
            let what = if fs.unverified {
                "could not be probed"
            } else if fs.can_share {
                "may share"
            } else {
                "cannot share"
            };
            (
                format!("filesystem {}", fs.index),
                format!("{} ({what})", fs.name()),
            )
        })
        .collect()
}

/// A line per reason a file's extents were not mapped.
fn skipped(w: &WalkTally) -> Vec<(String, String)> {
    probe::Skip::ALL
        .iter()
        .map(|skip| {
            (
                format!("not mapped: {}", skip.describe()),
                w.counters.skipped[skip.index()].to_string(),
            )
        })
        .collect()
}

/// A line per way an entry was left out of the scan.
fn left_out(w: &WalkTally) -> Vec<(String, String)> {
    crate::walk::LeftOut::ALL
        .iter()
        .map(|way| {
            (
                format!("left out: {}", way.describe()),
                w.counters.left_out[way.index()].to_string(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where each line's value starts: the column after its label's two
    /// spaces (the label has single spaces only).
    fn value_columns(text: &str) -> Vec<usize> {
        text.lines()
            .skip(1)
            .map(|l| {
                let end = l[2..].find("  ").unwrap() + 2;
                end + l[end..].find(|c| c != ' ').unwrap()
            })
            .collect()
    }

    #[test]
    fn values_sit_in_one_column() {
        let walked = Sizes::Walked {
            dirs: 1,
            files_shared: (2, 1),
            indexed: 3,
            segments: 4,
            units: 5,
            walk: Duration::ZERO,
            sweep: Duration::ZERO,
            tree: Duration::ZERO,
            filesystems: Vec::new(),
        };
        let read = Sizes::Read {
            file: b"scan.json".to_vec(),
            nodes: 1,
            links: 2,
            files: 3,
            segments: 4,
            units: 5,
            read: Duration::ZERO,
            tree: Duration::ZERO,
        };
        for sizes in [walked, read] {
            let t = text(&Counters::default(), &sizes, Duration::ZERO, Bound::EXACT);
            assert!(t.starts_with("sdu stats:\n"), "{t}");
            let cols = value_columns(&t);
            assert!(cols.len() > 4, "{t}");
            assert!(cols.iter().all(|&c| c == cols[0]), "{t}");
            // Each label kept, followed by its value.
            assert!(
                t.lines()
                    .any(|l| l.starts_with("  segments / units ") && l.ends_with("  4 / 5")),
                "{t}"
            );
        }
    }
}
