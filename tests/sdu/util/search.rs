//! The Btrfs tree search against FIEMAP: the same figures either way
//! where they must agree, checked on every Btrfs loopback as its test
//! leaves it.

use std::ffi::OsString;
use std::path::Path;

use super::process::{Output, sdu, stat_value};
use crate::args;
use crate::json;

/// `sdu --json -a -x PATH` gives the same document, messages and exit
/// status with the Btrfs tree search (as root, the default), with
/// `--fiemap`, and with `--fiemap --map-each-copy -j1`, and the search was
/// used. The search counts extents at their size on disk, which FIEMAP
/// does not show: where some data is compressed, or some extent is
/// referenced in part by a file (a "bookend": partly overwritten, or
/// partly cloned; `--stats` counts them), the figures of the two sources
/// differ by design, and only the entries, their total, apparent size and
/// counts must agree, with the search's `exclusive` and `shared` at least
/// FIEMAP's (a whole extent holds more than the part a file references).
/// Where neither is found, everything must agree: both sources see the
/// same extents.
pub fn assert_search_matches_fiemap(path: &Path) {
    if let Err(e) = search_matches_fiemap(path) {
        panic!("{e}");
    }
}

/// [`assert_search_matches_fiemap`], as a result.
pub fn search_matches_fiemap(path: &Path) -> Result<(), String> {
    let go = |extra: &[&str]| {
        let out = sdu(&{
            let mut a = args!["--json", "-a", "-x", "--stats"];
            a.extend(extra.iter().map(OsString::from));
            a.push(path.into());
            a
        });
        let (mut msgs, mut stats) = (Vec::new(), String::new());
        let mut in_stats = false;
        for l in out.stderr.lines() {
            in_stats |= l == "sdu stats:";
            if in_stats {
                stats.push_str(l);
                stats.push('\n');
            } else {
                msgs.push(l.to_string());
            }
        }
        msgs.sort();
        (out, msgs, stats)
    };
    let (fast, fast_msgs, stats) = go(&[]);
    let (slow, slow_msgs, _) = go(&["--fiemap"]);
    // Without root, a file unchanged across snapshots is mapped once and
    // its other copies credited with its extents: the same figures as
    // mapping every copy, on one thread.
    let (each, each_msgs, _) = go(&["--fiemap", "--map-each-copy", "-j1"]);
    if !(each.stdout == slow.stdout && each.code == slow.code && each_msgs == slow_msgs) {
        return Err(format!(
            "FIEMAP once per unchanged inode and FIEMAP on every copy differ on {}:\n{slow:?}\n{each:?}",
            path.display()
        ));
    }
    // Compressed data: the tree search counts it at its size on disk, FIEMAP
    // at its logical length; extents referenced in part: the search counts
    // them whole. Only what does not depend on it must agree.
    let compressed = slow.code == Some(0) && json::parse(&slow.stdout).compressed_logical > 0;
    let partial = stat_value(&stats, "extents referenced in part, kept whole") > 0;
    if compressed || partial {
        let plain = |o: &Output| -> Vec<(OsString, u64, u64, u64, u64)> {
            json::parse(&o.stdout)
                .entries
                .into_iter()
                .map(|e| (e.path, e.apparent, e.total, e.files, e.dirs))
                .collect()
        };
        if plain(&fast) != plain(&slow) || fast.code != slow.code {
            return Err(format!(
                "tree search and FIEMAP differ on {} (compressed) in total, apparent, files or dirs:\n{fast:?}\n{slow:?}",
                path.display()
            ));
        }
        let (f, s) = (json::parse(&fast.stdout), json::parse(&slow.stdout));
        let below = f
            .entries
            .iter()
            .zip(&s.entries)
            .find(|(f, s)| !compressed && (f.exclusive < s.exclusive || f.shared < s.shared));
        if let Some((f, s)) = below {
            return Err(format!(
                "on {}, the tree search counts less than FIEMAP where extents are referenced in part:\n{f:?}\n{s:?}",
                path.display()
            ));
        }
    } else if !(fast.stdout == slow.stdout && fast.code == slow.code && fast_msgs == slow_msgs) {
        return Err(format!(
            "tree search and FIEMAP differ on {}:\n{fast:?}\n{slow:?}",
            path.display()
        ));
    }
    // As root the tree stands in for getdents and statx: every entry below
    // the root came from it, unless it is another subvolume's root.
    let listed = stat_value(&stats, "entries read from the tree (Btrfs, root)");
    let below = json::parse(&fast.stdout).entries.len().saturating_sub(1) as u64;
    if fast.code == Some(0) && below > 0 && listed == 0 {
        return Err(format!(
            "the tree did not list {} ({below} entries below it):\n{stats}",
            path.display()
        ));
    }
    let searched = stat_value(&stats, "files read by tree search (Btrfs, root)");
    let mapped = stat_value(&stats, "files mapped (FIEMAP)");
    let undecided = stat_value(&stats, "tree search undecided, mapped with FIEMAP");
    // Every file mapped went to the tree search first (FIEMAP only for
    // those it could not decide).
    if mapped != undecided {
        return Err(format!(
            "the tree search was not used on {} ({searched} files read by it):\n{stats}",
            path.display()
        ));
    }
    Ok(())
}
