//! The inline bytes of the harness's bound for what deleting frees
//! (`mod.rs`: `data ≤ reclaimable ≤ data + inline`): the inline extents
//! deleted that no subvolume left holds unchanged.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::process::Command;

use super::build::Build;
use super::{Version, inline_extent, version};
use crate::util::*;

/// The `st_blocks` bytes of the inline files among `files` (the covered
/// ones) all of whose links are in `files`, and whose inode no file left
/// in `all` (every file of the filesystem) holds unchanged: the bytes the
/// figure may count beyond Data Used's drop (filesystems.md, "Btrfs metadata:
/// what "frees" means").
///
/// A file of another subvolume holds it when it is the same version
/// (number, birth and change times, size) in the same snapshot family and
/// that version was there when the later of the two subvolumes was made:
/// two files made apart after both (a copy into a snapshot and into its
/// origin, within one tick of the clock) take equal numbers and times,
/// and neither outlives the other's deletion.
pub(super) fn inline_bytes(b: &Build, files: &[String], all: &[String]) -> u64 {
    let mnt = b.t.root;
    let made = subvolumes_made(b);
    let covered: std::collections::HashSet<&String> = files.iter().collect();
    // Unrelated subvolumes can hold equal versions (inode numbers and
    // coarse times alike): a holder must be of the same family.
    // By family and version: each holder's subvolume and when it was made.
    type Holders = std::collections::HashMap<(usize, Version), Vec<(String, (i64, i64))>>;
    let mut held: Holders = Default::default();
    for f in all.iter().filter(|f| !covered.contains(f)) {
        let md = fs::symlink_metadata(mnt.join(f)).unwrap();
        let sub = b.subvolume_of(f);
        held.entry((b.family(f), version(&md)))
            .or_default()
            .push((sub.clone(), made[&sub]));
    }
    let mut links: std::collections::HashMap<(u64, u64), (u64, u64, u64)> = Default::default();
    for f in files {
        let md = fs::symlink_metadata(mnt.join(f)).unwrap();
        let sub = b.subvolume_of(f);
        let changed = (md.ctime(), md.ctime_nsec());
        let holders = held.get(&(b.family(f), version(&md)));
        if holders.is_some_and(|h| {
            h.iter()
                .any(|(s, at)| *s == sub || changed <= made[&sub].max(*at))
        }) {
            continue;
        }
        let bytes = inline_extent(&mnt.join(f), &md);
        if bytes == 0 {
            continue;
        }
        let e = links
            .entry((md.dev(), md.ino()))
            .or_insert((0, md.nlink(), bytes));
        e.0 += 1;
    }
    links
        .values()
        .filter(|(seen, nlink, _)| seen >= nlink)
        .map(|(_, _, b)| b)
        .sum()
}

/// When each live subvolume of the build was made (its root item's
/// `otime`, seconds and nanoseconds), by its path.
fn subvolumes_made(b: &Build) -> std::collections::HashMap<String, (i64, i64)> {
    let mnt = b.t.root;
    let out = run(Command::new("findmnt")
        .args(["-n", "-o", "SOURCE", "--target"])
        .arg(mnt));
    out.assert_ok();
    let dev = out.stdout_str().trim().to_owned();
    crate::util::btrfs(&["filesystem", "sync"], mnt);
    let out =
        run(Command::new("btrfs").args(["inspect-internal", "dump-tree", "-t", "root", &dev]));
    out.assert_ok();
    let mut otime: std::collections::HashMap<u64, (i64, i64)> = Default::default();
    let mut id = None;
    for line in out.stdout_str().lines() {
        let l = line.trim();
        let item = l.starts_with("item ");
        if let Some(k) = l.split_once(" key (").filter(|_| item).map(|(_, k)| k) {
            id = match k.split_once(" ROOT_ITEM ") {
                Some(("FS_TREE", _)) => Some(5),
                Some((n, _)) => n.parse().ok(),
                None => None,
            };
        } else if let (Some(i), Some(t)) = (id, l.strip_prefix("otime ")) {
            let t = t.split_whitespace().next().unwrap();
            let (s, n) = t.split_once('.').unwrap();
            otime.insert(i, (s.parse().unwrap(), n.parse().unwrap()));
            id = None;
        }
    }
    b.subvols
        .iter()
        .chain(&b.ro)
        .filter(|s| mnt.join(s).exists())
        .map(|s| {
            let out = run(Command::new("btrfs")
                .args(["inspect-internal", "rootid"])
                .arg(mnt.join(s)));
            out.assert_ok();
            let id: u64 = out.stdout_str().trim().parse().unwrap();
            (s.clone(), otime[&id])
        })
        .collect()
}
