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
    /// The sizes of a walk rolled up into `tree`.
    pub(crate) fn walked(
        tree: &crate::tree::Tree,
        files: &[crate::records::FileRec],
        indexed: usize,
        sweep: &crate::extents::Sweep,
        registry: &probe::Registry,
        t: Times,
    ) -> Sizes {
        Sizes::Walked {
            dirs: tree.len().saturating_sub(1),
            files_shared: files.len(),
            indexed,
            segments: sweep.segment_count(),
            units: sweep.unit_count(),
            walk: t.walk,
            sweep: t.sweep,
            tree: t.tree,
            filesystems: registry.filesystems(),
        }
    }
}

/// What `--stats` prints beyond the counters.
#[derive(Clone, Debug)]
pub(crate) enum Sizes {
    /// A walk.
    Walked {
        dirs: usize,
        files_shared: usize,
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
    let mut s = body(counters, sizes, t_report);
    let _ = writeln!(s, "  reclaimable            {}", exactness(bound));
    s
}

/// What `--stats` says of the Reclaimable figures: exact, or bounds and
/// why, and what would make them exact.
fn exactness(bound: Bound) -> String {
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
    if bound.at_least() {
        why.push(
            "at least where Btrfs extents may be referenced only in part \
             (root sees them: run as root for exact figures)",
        );
    }
    format!("bounds where marked: {}", why.join("; "))
}

/// The `--stats` text above its last line.
fn body(counters: &Counters, sizes: &Sizes, t_report: Duration) -> String {
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
        } => walked(
            counters,
            filesystems,
            &Walked {
                dirs: *dirs,
                files_shared: *files_shared,
                indexed: *indexed,
                segments: *segments,
                units: *units,
                walk: *walk,
                sweep: *sweep,
                tree: *tree,
            },
            t_report,
        ),
        Sizes::Read {
            file,
            nodes,
            links,
            files,
            segments,
            units,
            read,
            tree,
        } => format!(
            "sdu stats:\n  saved scan             {}\n  nodes (dirs, -a files) {}\n  links / files with shared data {} / {}\n  segments / units       {} / {}\n  time: read {:.3}s, roll-up {:.3}s, report {:.3}s\n",
            String::from_utf8_lossy(file),
            nodes,
            links,
            files,
            segments,
            units,
            read.as_secs_f64(),
            tree.as_secs_f64(),
            t_report.as_secs_f64()
        ),
    }
}

/// The sizes and times of a walk, for [`walked`].
struct Walked {
    dirs: usize,
    files_shared: usize,
    indexed: usize,
    segments: usize,
    units: usize,
    walk: Duration,
    sweep: Duration,
    tree: Duration,
}

/// The `--stats` text of a walk.
fn walked(
    counters: &Counters,
    filesystems: &[probe::FsInfo],
    st: &Walked,
    t_report: Duration,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "sdu stats:");
    let _ = writeln!(s, "  entries stat-ed        {}", counters.entries);
    let _ = writeln!(s, "  nodes (dirs, -a files) {}", st.dirs);
    for fs in filesystems {
        let _ = writeln!(
            s,
            "  filesystem {}           {}{}",
            fs.index,
            fs.name(),
            if fs.unverified {
                " (could not be probed)"
            } else if fs.can_share {
                " (may share)"
            } else {
                " (cannot share)"
            }
        );
    }
    let _ = writeln!(s, "  files mapped (FIEMAP)  {}", counters.fiemap_files);
    let _ = writeln!(s, "  FIEMAP calls           {}", counters.fiemap_calls);
    let _ = writeln!(s, "  files on the lean path {}", counters.plain_files);
    let _ = writeln!(
        s,
        "  FIEMAPs put off (allocation group busy) {}",
        counters.fiemap_put_off
    );
    let _ = writeln!(
        s,
        "  files credited with a snapshot copy's extents {}",
        counters.copies_reused
    );
    let _ = writeln!(
        s,
        "  inline files recorded for snapshots {}",
        counters.inline_recorded
    );
    let _ = writeln!(
        s,
        "  files read by tree search (Btrfs, root) {}",
        counters.search_files
    );
    let _ = writeln!(s, "  tree searches          {}", counters.search_calls);
    let _ = writeln!(
        s,
        "  entries read from the tree (Btrfs, root) {}",
        counters.tree_entries
    );
    let _ = writeln!(
        s,
        "  tree search undecided, mapped with FIEMAP {}",
        counters.search_undecided
    );
    for skip in probe::Skip::ALL {
        let _ = writeln!(
            s,
            "  not mapped: {:<34} {}",
            skip.describe(),
            counters.skipped[skip.index()]
        );
    }
    let _ = writeln!(
        s,
        "  not mapped: could not be read          {} ({} bytes counted as exclusive)",
        counters.unverified_files, counters.unverified_bytes
    );
    let _ = writeln!(
        s,
        "  compressed, counted uncompressed       {} ({} bytes)",
        counters.compressed_files, counters.compressed_bytes
    );
    let _ = writeln!(
        s,
        "  compressed, counted on disk            {} ({} bytes on disk)",
        counters.on_disk_files, counters.on_disk_bytes
    );
    let _ = writeln!(
        s,
        "  extents referenced in part, kept whole {} ({} bytes no file references)",
        counters.partial_extents, counters.unreachable_bytes
    );
    let _ = writeln!(
        s,
        "  shared ranges asked who else holds them {} ({} held outside the scan; {} settled by their refs)",
        counters.outside_asked, counters.outside_found, counters.outside_settled
    );
    let _ = writeln!(s, "  files with shared data {}", st.files_shared);
    let _ = writeln!(s, "  shared extents indexed {}", st.indexed);
    let _ = writeln!(s, "  segments / units       {} / {}", st.segments, st.units);
    let _ = writeln!(
        s,
        "  time: walk {:.3}s, sweep {:.3}s, roll-up {:.3}s, report {:.3}s",
        st.walk.as_secs_f64(),
        st.sweep.as_secs_f64(),
        st.tree.as_secs_f64(),
        t_report.as_secs_f64()
    );
    s
}
