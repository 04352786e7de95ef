//! The Btrfs tree search against FIEMAP: the same figures either way
//! where they must agree, checked on every Btrfs loopback as its test
//! leaves it.

use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
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
/// Where neither is found, every figure must agree: both sources see the
/// same extents, but for Reclaimable where some shared data is held outside
/// the scan (`--stats`): as root the search asks Btrfs who else holds it
/// and keeps it out, which `--fiemap` cannot; there FIEMAP's Reclaimable is
/// at least root's, and a bound where it differs. Otherwise only
/// `reclaimable_exact` may differ: FIEMAP gives the
/// part of an extent a file references, so on Btrfs a Reclaimable read by
/// it is at least a bound (unless the whole filesystem was proven free of
/// extents referenced in part); where a figure of FIEMAP's differs from
/// the search's, FIEMAP's must say it is a bound
/// ([`bound_where_root_differs`]).
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
        // Where the search and FIEMAP see different extents (compressed
        // data, extents referenced in part), FIEMAP's figure is marked
        // wherever it is not root's.
        bound_where_root_differs(&f, &s, &format!("FIEMAP on {}", path.display()))?;
    } else if held_outside(&stats) > 0 {
        // As root the search asked Btrfs who else holds the shared data, and
        // some is held outside the scan: root keeps it out of Reclaimable,
        // which `--fiemap` cannot know (it asks nothing), so its figure may
        // be more, a bound. Everything else must agree.
        let doc = |o: &Output| serde_json::from_slice::<serde_json::Value>(&o.stdout).is_ok();
        if !(doc(&fast) && doc(&slow) && fast.code == slow.code && fast_msgs == slow_msgs) {
            return Err(format!(
                "tree search and FIEMAP differ on {} (data held outside the scan):\n{fast:?}\n{slow:?}",
                path.display()
            ));
        }
        let (f, s) = (json::parse(&fast.stdout), json::parse(&slow.stdout));
        bound_above_root(&f, &s, &format!("FIEMAP on {}", path.display()))?;
    } else if !(same_figures(&fast.stdout, &slow.stdout)
        && fast.code == slow.code
        && fast_msgs == slow_msgs)
    {
        // A file cloned into itself maps one extent twice: FIEMAP cannot
        // tell whether anyone else holds it (unless the Data Used proof
        // covers the filesystem), the search can. Its Reclaimable may then
        // differ from root's, marked in the direction that holds.
        let doc = |o: &Output| serde_json::from_slice::<serde_json::Value>(&o.stdout).is_ok();
        let self_cloned = doc(&fast)
            && doc(&slow)
            && fast.code == slow.code
            && fast_msgs == slow_msgs
            && !cloned_into_itself(path).is_empty();
        let checked = self_cloned.then(|| {
            let (f, s) = (json::parse(&fast.stdout), json::parse(&slow.stdout));
            bound_toward_root(&f, &s, &format!("FIEMAP on {}", path.display()))
        });
        match checked {
            Some(r) => r?,
            None => {
                return Err(format!(
                    "tree search and FIEMAP differ on {}:\n{fast:?}\n{slow:?}",
                    path.display()
                ));
            }
        }
    }
    // As root the tree stands in for getdents and statx: an entry below the
    // root comes from it unless it is another subvolume's root, the empty
    // directory a snapshot shows where its origin held a subvolume, or a
    // mount point: each of those is on a device of its own, and stat-ed.
    let listed = stat_value(&stats, "entries read from the tree (Btrfs, root)");
    let below = if fast.code == Some(0) {
        in_tree_below(&json::parse(&fast.stdout))
    } else {
        0
    };
    if below > 0 && listed == 0 {
        return Err(format!(
            "the tree did not list {} ({below} entries below it on their directory's device):\n{stats}",
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

/// The entries of `report` below its root that lie on their directory's
/// device (`lstat`): those the Btrfs tree lists as root.
fn in_tree_below(report: &json::Report) -> u64 {
    let dev = |p: &Path| std::fs::symlink_metadata(p).map(|m| m.dev()).ok();
    let on_parents = |e: &&json::Entry| {
        let p = Path::new(&e.path);
        p.parent()
            .is_some_and(|d| dev(p).is_some() && dev(p) == dev(d))
    };
    report
        .entries
        .iter()
        .filter(|e| e.depth > 0)
        .filter(on_parents)
        .count() as u64
}

/// Whether two `--json` outputs hold the same document but for
/// `reclaimable_exact` (byte for byte when either is not a document).
fn same_figures(a: &[u8], b: &[u8]) -> bool {
    let doc = |o: &[u8]| serde_json::from_slice::<serde_json::Value>(o).is_ok();
    if !(doc(a) && doc(b)) {
        return a == b;
    }
    json::parse(a).figures_only() == json::parse(b).figures_only()
}

/// Every figure of `other` but Reclaimable is `root`'s.
fn same_but_reclaimable(
    root: &json::Report,
    other: &json::Report,
    what: &str,
) -> Result<(), String> {
    let plain = |r: &json::Report| {
        let mut r = r.figures_only();
        for e in &mut r.entries {
            e.reclaimable = 0;
        }
        if let Some(t) = &mut r.total {
            t.reclaimable = 0;
        }
        r
    };
    if plain(root) != plain(other) {
        return Err(format!(
            "{what}: figures other than Reclaimable differ from root's:\n{other:?}\n{root:?}"
        ));
    }
    Ok(())
}

/// The rule of a scan that cannot ask who else holds the shared data
/// (without CAP_SYS_ADMIN, or `--fiemap`) where root's found some held
/// outside the scan, and both see the same extents: every figure but
/// Reclaimable is root's; Reclaimable is at least root's (data held
/// outside counted as freed), and a bound where it differs
/// ([`bound_where_root_differs`]).
pub fn bound_above_root(
    root: &json::Report,
    other: &json::Report,
    what: &str,
) -> Result<(), String> {
    same_but_reclaimable(root, other, what)?;
    let below = root
        .entries
        .iter()
        .zip(&other.entries)
        .find(|(r, o)| o.reclaimable < r.reclaimable);
    if let Some((r, o)) = below {
        return Err(format!(
            "{what}: a Reclaimable below root's, which knows what is held outside the scan:\n{o:?}\n{r:?}"
        ));
    }
    if let (Some(r), Some(o)) = (&root.total, &other.total)
        && o.reclaimable < r.reclaimable
    {
        return Err(format!(
            "{what}: the total's Reclaimable is below root's:\n{o:?}\n{r:?}"
        ));
    }
    bound_where_root_differs(root, other, what)
}

/// [`bound_above_root`], asserted.
pub fn assert_bound_above_root(root: &json::Report, other: &json::Report, what: &str) {
    if let Err(e) = bound_above_root(root, other, what) {
        panic!("{e}");
    }
}

/// The shared ranges root's scan found held outside it (`--stats`: `shared
/// ranges asked who else holds them 16 (3 held outside the scan)` → 3).
fn held_outside(stats: &str) -> u64 {
    const KEY: &str = "shared ranges asked who else holds them";
    stats
        .lines()
        .find_map(|l| l.trim_start().strip_prefix(KEY))
        .and_then(|r| r.split('(').nth(1))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no figure held outside the scan in --stats:\n{stats}"))
}

/// The rule of a scan that sees less than root's tree search (without
/// CAP_SYS_ADMIN, or `--fiemap`): `reclaimable_exact` is false wherever
/// the root figure differs. `root` and `other` are documents of the same
/// entries; `what` names `other` in the error.
pub fn bound_where_root_differs(
    root: &json::Report,
    other: &json::Report,
    what: &str,
) -> Result<(), String> {
    if root.entries.len() != other.entries.len() {
        return Err(format!(
            "{what}: not the entries of root's scan:\n{root:?}\n{other:?}"
        ));
    }
    for (r, o) in root.entries.iter().zip(&other.entries) {
        if r.path != o.path {
            return Err(format!(
                "{what}: {:?} where root's scan has {:?}",
                o.path, r.path
            ));
        }
        if r.reclaimable != o.reclaimable && o.reclaimable_exact {
            return Err(format!(
                "{what}: a Reclaimable that is not root's ({} for {}) says it is exact:\n{o:?}\n{r:?}",
                o.reclaimable, r.reclaimable
            ));
        }
    }
    if let (Some(r), Some(o)) = (&root.total, &other.total)
        && r.reclaimable != o.reclaimable
        && o.reclaimable_exact
    {
        return Err(format!(
            "{what}: the total's Reclaimable is not root's and says it is exact:\n{o:?}\n{r:?}"
        ));
    }
    Ok(())
}

/// [`bound_where_root_differs`], asserted.
pub fn assert_bound_where_root_differs(root: &json::Report, other: &json::Report, what: &str) {
    if let Err(e) = bound_where_root_differs(root, other, what) {
        panic!("{e}");
    }
}

/// The regular files under `path` (on Btrfs, symlinks not followed) whose
/// FIEMAP maps some disk block more than once: a file cloned into itself.
pub fn cloned_into_itself(path: &Path) -> Vec<std::path::PathBuf> {
    const BTRFS_SUPER_MAGIC: i64 = 0x9123_683e;
    let on_btrfs = |p: &Path| rustix::fs::statfs(p).is_ok_and(|s| s.f_type == BTRFS_SUPER_MAGIC);
    let mut found = Vec::new();
    let mut todo = vec![path.to_owned()];
    while let Some(p) = todo.pop() {
        let Ok(md) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        if md.is_dir() {
            if on_btrfs(&p)
                && let Ok(rd) = std::fs::read_dir(&p)
            {
                todo.extend(rd.flatten().map(|e| e.path()));
            }
        } else if md.is_file() && maps_a_block_twice(&p) {
            found.push(p);
        }
    }
    found
}

/// Whether `filefrag -v` maps some physical block of `file` twice.
fn maps_a_block_twice(file: &Path) -> bool {
    let out = super::process::run(std::process::Command::new("filefrag").arg("-v").arg(file));
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for l in out.stdout_str().lines() {
        // `   1:       10..      11:       3334..      3335:      2: ...`
        let f: Vec<&str> = l.split(':').map(str::trim).collect();
        if f.len() < 4 || f[0].parse::<u64>().is_err() || l.contains("inline") {
            continue;
        }
        let Some((a, b)) = f[2].split_once("..") else {
            continue;
        };
        if let (Ok(a), Ok(b)) = (a.trim().parse::<u64>(), b.trim().parse::<u64>()) {
            ranges.push((a, b));
        }
    }
    ranges.sort();
    ranges.windows(2).any(|w| w[1].0 <= w[0].1)
}

/// The rule of a scan that cannot see whether a file cloned into itself
/// shares its extent with anyone else (`--fiemap` where the Data Used
/// proof does not hold): every figure but Reclaimable is root's;
/// Reclaimable is root's or marked in a direction that holds (`at_least`
/// below root's, `at_most` above it, `unknown` either way).
pub fn bound_toward_root(
    root: &json::Report,
    other: &json::Report,
    what: &str,
) -> Result<(), String> {
    same_but_reclaimable(root, other, what)?;
    for (r, o) in root.entries.iter().zip(&other.entries) {
        if r.reclaimable == o.reclaimable {
            continue;
        }
        let holds = match o.reclaimable_bound.as_deref() {
            Some("at_least") => o.reclaimable < r.reclaimable,
            Some("at_most") => o.reclaimable > r.reclaimable,
            Some("unknown") => true,
            _ => false,
        };
        if !holds {
            return Err(format!(
                "{what}: a Reclaimable that is not root's ({} for {}) is not marked in the direction that holds:\n{o:?}\n{r:?}",
                o.reclaimable, r.reclaimable
            ));
        }
    }
    bound_where_root_differs(root, other, what)
}
