//! The rows of a `--df` table, each from what its source found
//! (`super::table` calls them in the table's order).

use std::os::fd::{AsFd, BorrowedFd};

use rustix::fs as rfs;

use super::deleted_subvolumes::deleted_subvolumes;
use super::open_deleted::deleted_open;
use super::space;
use super::under_mounts::Covered;
use super::{Extra, Filesystem, How, Item, Row, root_named, under_name};
use crate::figures::Bound;
use crate::records::NodeId;
use crate::scan::Scanned;

/// A row of `bytes` measured.
fn exact(row: &'static str, bytes: u64) -> Row {
    Row {
        row,
        bytes: i64::try_from(bytes).unwrap_or(i64::MAX),
        how: How::Exact,
        why: String::new(),
        items: Vec::new(),
    }
}

/// A row of something this filesystem cannot have.
fn no_such(row: &'static str, why: &str) -> Row {
    Row {
        how: How::NoSuch,
        why: why.into(),
        ..exact(row, 0)
    }
}

/// A row not seen without root: `why` says what root would add.
fn not_seen(row: &'static str, why: String) -> Row {
    Row {
        how: How::NotSeen,
        why,
        ..exact(row, 0)
    }
}

/// `files`: the mount root's Exclusive + Shared; as root on Btrfs, less
/// its unreachable bytes, plus what compression saved, less the inline
/// data.
pub(super) fn files_row(
    fs: &Filesystem,
    s: &Scanned,
    main: Option<NodeId>,
    stored: Option<&std::io::Result<super::Stored>>,
    errors: u64,
) -> Row {
    let Some(r) = main else {
        return Row {
            how: How::Bound(Bound::AT_LEAST),
            why: "the mount's root could not be read".into(),
            ..exact("files", 0)
        };
    };
    let f = s.tree.figures(r);
    let seen = f.exclusive.saturating_add(f.shared);
    let mut row = match stored {
        Some(Ok(st)) => {
            // The top level's root directory has a node's bytes of its
            // own (mkfs gives it nodesize), which no data extent holds.
            let dir = rfs::fstat(fs.root.as_fd()).map_or(0, |st| st.st_blocks as u64 * 512);
            let bytes = seen
                .saturating_sub(s.tree.unreachable(r))
                .saturating_add(st.saved)
                .saturating_sub(st.inline)
                .saturating_sub(dir);
            let mut row = exact("files", bytes);
            if st.inline > 0 {
                row.items.push(Item {
                    name: b"(inline data: in the metadata row)".to_vec(),
                    bytes: st.inline,
                    note: format!("{} inline files, not counted here", st.inline_items),
                });
            }
            row
        }
        Some(Err(_)) => Row {
            how: How::Bound(Bound::UNKNOWN),
            why: "without root on Btrfs: compressed data counted at up to its uncompressed \
                  size, extents referenced in part as referenced, inline data counted here \
                  and in metadata"
                .into(),
            ..exact("files", seen)
        },
        None => exact("files", seen),
    };
    if fs.btrfs && stored.is_some_and(Result::is_err) {
        row.how = How::Bound(Bound::UNKNOWN);
    }
    if errors > 0 {
        let b = match row.how {
            How::Bound(b) => b.with(Bound::AT_LEAST),
            _ => Bound::AT_LEAST,
        };
        row.how = How::Bound(b);
        if !row.why.is_empty() {
            row.why.push_str("; ");
        }
        row.why.push_str(&format!(
            "{errors} unreadable entries (their data not counted)"
        ));
    }
    row
}

/// `under_mounts` and `outside_subvolumes`, from what deleting the covered
/// directories, and those with the outside subvolumes, frees.
pub(super) fn reached_rows(fs: &Filesystem, extra: &Extra, s: &Scanned) -> (Row, Row) {
    let under_ids: Vec<NodeId> = (extra.under_names.iter())
        .filter_map(|n| root_named(s, n))
        .collect();
    let outside_ids: Vec<NodeId> = (extra.outside.roots.iter())
        .filter_map(|(n, _)| root_named(s, n))
        .collect();
    let frees = |ids: &[NodeId]| match &s.sets {
        Some(sets) if !ids.is_empty() => sets.frees(&s.tree, ids),
        _ => crate::tree::union::Frees::default(),
    };
    let under_frees = frees(&under_ids);
    let covered = &extra.under.covered;
    let under = if covered.is_empty() {
        exact("under_mounts", 0)
    } else if !extra.under.seen {
        Row {
            items: (covered.iter())
                .map(|c| Item {
                    name: c.point.clone(),
                    bytes: 0,
                    note: covered_note(c),
                })
                .collect(),
            ..not_seen(
                "under_mounts",
                format!(
                    "{} director{} covered by mounts; as root sdu looks beneath them",
                    covered.len(),
                    if covered.len() == 1 { "y" } else { "ies" }
                ),
            )
        }
    } else {
        let mut items: Vec<Item> = (covered.iter())
            .map(|c| Item {
                name: c.point.clone(),
                bytes: root_named(s, &under_name(&c.point)).map_or(0, |r| frees(&[r]).bytes),
                note: covered_note(c),
            })
            .collect();
        items.sort_by_key(|i| std::cmp::Reverse(i.bytes));
        let mut row = bounded("under_mounts", under_frees.bytes, under_frees.bound);
        row.items = items;
        let unopened = covered.iter().filter(|c| c.fd.is_none()).count();
        if unopened > 0 {
            row.how = How::Bound(under_frees.bound.with(Bound::AT_LEAST));
            row.why = format!(
                "{unopened} covered director{} could not be opened",
                if unopened == 1 { "y" } else { "ies" }
            );
        }
        row
    };
    let outside = if !fs.btrfs {
        no_such("outside_subvolumes", "no subvolumes on this filesystem")
    } else {
        match extra.outside.missed {
            None if extra.outside.roots.is_empty() => not_seen(
                "outside_subvolumes",
                "without CAP_SYS_ADMIN the subvolumes outside the mount cannot be listed; \
                 as root sdu reaches them through the top level"
                    .into(),
            ),
            missed => {
                let mut all = outside_ids.clone();
                all.extend_from_slice(&under_ids);
                let both = frees(&all);
                let bytes = both.bytes.saturating_sub(under_frees.bytes);
                let bound = both.bound.with(under_frees.bound.reversed());
                let mut row = bounded("outside_subvolumes", bytes, bound);
                let mut items: Vec<Item> = (extra.outside.roots.iter().enumerate())
                    .map(|(i, (name, _))| Item {
                        name: name.clone(),
                        bytes: root_named(s, name).map_or(0, |r| frees(&[r]).bytes),
                        note: match extra.outside.mounted_at.get(i) {
                            Some(Some(at)) => {
                                format!("mounted at {}", String::from_utf8_lossy(at))
                            }
                            _ => String::new(),
                        },
                    })
                    .collect();
                items.sort_by_key(|i| std::cmp::Reverse(i.bytes));
                row.items = items;
                let mut why = Vec::new();
                match missed {
                    None => why.push(
                        "without CAP_SYS_ADMIN only the subvolumes mounted elsewhere are reached"
                            .to_string(),
                    ),
                    Some(0) => {}
                    Some(n) => why.push(format!(
                        "{n} subvolume{} outside the mount could not be reached",
                        if n == 1 { "" } else { "s" }
                    )),
                }
                if !extra.outside.holding.is_empty() {
                    let names: Vec<String> = (extra.outside.holding.iter())
                        .map(|h| String::from_utf8_lossy(h).into_owned())
                        .collect();
                    why.push(format!(
                        "what {} hold{} outside the mount is not seen",
                        names.join(", "),
                        if names.len() == 1 { "s" } else { "" }
                    ));
                }
                if !why.is_empty() {
                    row.how = How::Bound(bound.with(Bound::AT_LEAST));
                    row.why = why.join("; ");
                }
                row
            }
        }
    };
    (under, outside)
}

/// What covers a covered directory.
fn covered_note(c: &Covered) -> String {
    let by = String::from_utf8_lossy(&c.by);
    if c.itself {
        format!("covered by {by}, a bind mount of itself: shown there, not walked here")
    } else {
        format!("covered by {by}")
    }
}

/// A row of `bytes` exact or bounded as `bound` says.
fn bounded(row: &'static str, bytes: u64, bound: Bound) -> Row {
    let mut r = exact(row, bytes);
    if !bound.is_exact() {
        r.how = How::Bound(bound);
        r.why = "what deleting them frees is a bound (docs/figures.md)".into();
    }
    r
}

/// `unreachable`: the bookend bytes under the mount root, as root on
/// Btrfs, with the entries they are credited to.
pub(super) fn unreachable_row(
    fs: &Filesystem,
    s: &Scanned,
    main: Option<NodeId>,
    stored: Option<&std::io::Result<super::Stored>>,
) -> Row {
    if !fs.btrfs {
        return no_such("unreachable", "extents are freed block by block here");
    }
    let (Some(Ok(_)), Some(r)) = (stored, main) else {
        return not_seen(
            "unreachable",
            "bookends are read from the subvolume trees, as root and without --fiemap".into(),
        );
    };
    let tree = &s.tree;
    let mut items: Vec<Item> = tree
        .unreachable_credits()
        .iter()
        .filter(|&&(n, _)| root_of(s, n) == Some(r))
        .map(|&(n, bytes)| Item {
            name: path_of(s, n),
            bytes,
            note: String::new(),
        })
        .collect();
    items.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)));
    let mut row = exact("unreachable", tree.unreachable(r));
    row.items = items;
    row
}

/// The root node `id` lies under.
fn root_of(s: &Scanned, id: NodeId) -> Option<NodeId> {
    let mut at = id;
    while s.tree.depth(at) > 0 {
        at = s.tree.parent(at)?;
    }
    Some(at)
}

/// The path of node `id`, from its root's name.
fn path_of(s: &Scanned, id: NodeId) -> Vec<u8> {
    let mut names = Vec::new();
    let mut at = id;
    loop {
        names.push(s.tree.name(at));
        match s.tree.parent(at) {
            Some(p) if s.tree.depth(at) > 0 => at = p,
            _ => break,
        }
    }
    let mut path = Vec::new();
    for n in names.iter().rev() {
        if !path.is_empty() && !path.ends_with(b"/") {
            path.push(b'/');
        }
        path.extend_from_slice(n);
    }
    path
}

/// `deleted_open`: the files deleted but held open.
pub(super) fn deleted_open_row(fd: BorrowedFd<'_>) -> Row {
    let d = deleted_open(fd);
    let mut row = exact("deleted_open", d.bytes);
    row.items = (d.files.iter())
        .map(|f| Item {
            name: f.name.clone(),
            bytes: f.bytes,
            note: format!(
                "pid {} ({}) {}{}{}",
                f.pid,
                String::from_utf8_lossy(&f.comm),
                f.fd.map_or_else(|| "mapped".to_string(), |n| format!("fd {n}")),
                if f.holders > 0 {
                    format!(", {} more holders", f.holders)
                } else {
                    String::new()
                },
                if f.shared == Some(true) {
                    ", shares data (a reflink)"
                } else {
                    ""
                },
            ),
        })
        .collect();
    if d.at_least() {
        row.how = How::Bound(Bound::AT_LEAST);
        let n = d.unreadable;
        row.why = if d.hidden {
            "/proc hides processes from this one (or could not be read)".into()
        } else {
            let s = if n == 1 { "" } else { "es" };
            if rustix::process::geteuid().is_root() {
                // A supervisor outside this pid namespace's reach, or
                // one that denies ptrace to root (Yama, an LSM).
                format!("{n} process{s} could not be read, even as root")
            } else {
                format!("{n} process{s} could not be read; as root sdu reads every process")
            }
        };
    }
    row
}

/// `deleted_subvolumes`: Btrfs subvolumes deleted, not yet cleaned.
pub(super) fn deleted_subvolumes_row(fs: &Filesystem) -> Row {
    if !fs.btrfs {
        return no_such("deleted_subvolumes", "no subvolumes on this filesystem");
    }
    let d = deleted_subvolumes(fs.root.as_fd());
    if !d.seen {
        let waiting = match d.waiting {
            Some(1) => "1 deleted subvolume waits for the cleaner; ".into(),
            Some(n) => format!("{n} deleted subvolumes wait for the cleaner; "),
            None => String::new(),
        };
        return not_seen(
            "deleted_subvolumes",
            format!("{waiting}their bytes are read from the extent tree, as root"),
        );
    }
    let mut row = exact("deleted_subvolumes", d.bytes);
    if !d.exact {
        row.how = How::Bound(Bound::AT_LEAST);
        row.why = "the holders of some extents could not be listed".into();
    }
    row.items = (d.subvols.iter())
        .map(|v| Item {
            name: format!("subvolume {}", v.id).into_bytes(),
            bytes: v.bytes,
            note: String::new(),
        })
        .collect();
    row
}

/// `metadata`: the part of Used that is not file data.
pub(super) fn metadata_row(sp: Option<&space::Space>) -> Row {
    let Some(sp) = sp else {
        return not_seen("metadata", "statvfs failed".into());
    };
    let mut row = exact("metadata", sp.metadata);
    match sp.how {
        space::How::Exact => {}
        space::How::Estimate => {
            row.how = How::Estimate;
            row.why = "estimated".into();
        }
    }
    row.items = (sp.parts.iter())
        .map(|p| Item {
            name: p.name.as_bytes().to_vec(),
            bytes: p.bytes,
            note: String::new(),
        })
        .collect();
    row
}

/// `compression`: minus the bytes compression saved, as root on Btrfs.
pub(super) fn compression_row(stored: Option<&std::io::Result<super::Stored>>) -> Row {
    match stored {
        None => no_such("compression", "no compression on this filesystem"),
        Some(Err(_)) => not_seen(
            "compression",
            "the size on disk of compressed extents is read from the subvolume trees, as root and without --fiemap"
                .into(),
        ),
        Some(Ok(st)) => Row {
            bytes: -i64::try_from(st.saved).unwrap_or(i64::MAX),
            why: String::new(),
            items: if st.compressed > 0 {
                vec![Item {
                    name: b"(saved)".to_vec(),
                    bytes: st.saved,
                    note: format!("{} compressed extents", st.compressed),
                }]
            } else {
                Vec::new()
            },
            ..exact("compression", 0)
        },
    }
}

/// `unexplained`: Used less every other row, exact when they all are;
/// else which way it may be wrong, and which rows make it so.
pub(super) fn unexplained(used: u64, rows: &[Row], errors: u64) -> Row {
    let sum: i128 = rows.iter().map(|r| i128::from(r.bytes)).sum();
    let rest = i128::from(used) - sum;
    let mut bound = Bound::EXACT;
    let mut why = Vec::new();
    for r in rows {
        let b = r.how.subtracted();
        if !b.is_exact() {
            bound = bound.with(b);
            why.push(format!("{} {}", r.row, r.how.word()));
        }
    }
    if errors > 0 {
        why.push(format!("{errors} unreadable entries"));
    }
    Row {
        row: "unexplained",
        bytes: i64::try_from(rest).unwrap_or(if rest < 0 { i64::MIN } else { i64::MAX }),
        how: if bound.is_exact() {
            How::Exact
        } else {
            How::Bound(bound)
        },
        why: why.join(", "),
        items: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &'static str, bytes: i64, how: How) -> Row {
        Row {
            bytes,
            how,
            ..exact(name, 0)
        }
    }

    #[test]
    fn unexplained_is_the_rest_of_used_exact_when_every_row_is() {
        let rows = [
            row("files", 100, How::Exact),
            row("compression", -30, How::Exact),
            row("outside_subvolumes", 0, How::NoSuch),
        ];
        let u = unexplained(80, &rows, 0);
        assert_eq!((u.bytes, u.how), (10, How::Exact));
        assert!(u.why.is_empty());
    }

    #[test]
    fn unexplained_is_marked_the_other_way_from_the_rows() {
        // A row at most its figure leaves at least the rest unexplained.
        let u = unexplained(80, &[row("files", 100, How::Bound(Bound::AT_MOST))], 0);
        assert_eq!((u.bytes, u.how), (-20, How::Bound(Bound::AT_LEAST)));
        assert_eq!(u.why, "files at most");
        // A row not seen (0, its truth 0 or more) leaves at most the rest.
        let u = unexplained(80, &[row("unreachable", 0, How::NotSeen)], 0);
        assert_eq!(u.how, How::Bound(Bound::AT_MOST));
        // Both, or an estimate: either way; unreadable entries are named.
        let rows = [
            row("files", 50, How::Bound(Bound::AT_LEAST)),
            row("metadata", 5, How::Estimate),
        ];
        let u = unexplained(80, &rows, 2);
        assert_eq!((u.bytes, u.how), (25, How::Bound(Bound::UNKNOWN)));
        assert_eq!(
            u.why,
            "files at least, metadata estimate, 2 unreadable entries"
        );
    }

    #[test]
    fn the_words_of_each_kind() {
        let words: Vec<&str> = [
            How::Exact,
            How::Bound(Bound::AT_MOST),
            How::Bound(Bound::AT_LEAST),
            How::Bound(Bound::UNKNOWN),
            How::Estimate,
            How::NotSeen,
            How::NoSuch,
        ]
        .iter()
        .map(|h| h.word())
        .collect();
        assert_eq!(
            words,
            [
                "exact", "at most", "at least", "about", "estimate", "not seen", "none"
            ]
        );
        assert!(How::NoSuch.is_exact() && !How::NotSeen.is_exact());
    }
}
