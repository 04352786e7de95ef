//! `--since` beyond the main cases: a saved scan compressed (json-zstd),
//! PATHs other than those saved, hard links, XFS without the reverse
//! mappings, ext4 (no maps at all), and a saved scan written by a
//! `--since` scan itself.

use std::fs;
use std::process::Command;

use super::*;
use crate::util::*;

/// The saved scan compressed (`--export-format json-zstd`) is read as the
/// JSON one: as root after the safe changes, the full scan's document.
#[test]
fn xfs_json_zstd_saved_scan_is_read() {
    let Some(fs) = make_fs(FsKind::Xfs) else {
        return;
    };
    let mnt = fs.path();
    let zst = "nb/saved.zst";
    prepare_with(&fs, false, |mnt| {
        export_to(mnt, true, zst, &["--export-format", "json-zstd", "s"]);
    });
    let head = fs::read(mnt.join(zst)).unwrap();
    assert!(head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]), "not zstd");
    let (want, _) = full(mnt, true);
    let out = sdu_as(mnt, true, &["-a", "--json", "--since", zst, "s"]);
    out.assert_ok();
    assert_eq!(out.stdout, want, "--since of a json-zstd scan");
}

/// Saved from the whole filesystem, scanned with other PATHs (`-c s/b
/// s/c`, then `s/k/k1` alone): the maps are found by device and inode
/// whatever the PATH; every entry and the total equal or marked. (A file
/// given as a PATH is mapped: `s/k/k1`, deduped since, is the truth.)
#[test]
fn xfs_other_paths_than_saved_equal_or_marked() {
    let Some(fs) = make_fs(FsKind::Xfs) else {
        return;
    };
    let mnt = fs.path();
    prepare_with(&fs, true, |mnt| export_to(mnt, true, SAVED, &["."]));
    for (root, paths) in [
        (true, &["-c", "s/b", "s/c"][..]),
        (false, &["-c", "s/b", "s/c"][..]),
        (true, &["s/k/k1"][..]),
    ] {
        let mut a = vec!["-a", "--json"];
        a.extend_from_slice(paths);
        let out = sdu_as(mnt, root, &a);
        assert_eq!(out.code, Some(0), "{out:?}");
        let full_r = crate::json::parse(&out.stdout);
        let mut b = vec!["--since", SAVED];
        b.extend_from_slice(&a);
        let out = sdu_as(mnt, root, &b);
        assert_eq!(out.code, Some(0), "{out:?}");
        let got = crate::json::parse(&out.stdout);
        assert_equal_or_marked(&full_r, &got, &format!("root={root} {paths:?}"));
        if let (Some(f), Some(g)) = (&full_r.total, &got.total) {
            let strip = |t: &crate::json::Total| {
                let mut t = t.clone();
                t.reclaimable_exact = true;
                t.reclaimable_bound = None;
                t
            };
            assert!(
                strip(f) == strip(g) || !g.reclaimable_exact,
                "root={root}: the -c total differs unmarked: {f:?} {g:?}"
            );
            assert_eq!((f.total, f.apparent), (g.total, g.apparent), "the -c total");
        }
    }
}

/// A hard-linked file (two links inside `s/`, one outside) and a plain
/// copy of it, deduped since the saved scan.
fn hard_links(fs: &Mounted) {
    let mnt = fs.path();
    let t = Tree { root: mnt };
    t.write("s/h/l1", 3 * BLK);
    t.link("s/h/l1", "s/h/l2");
    t.link("s/h/l1", "o/l3");
    copy_plain(&t, "s/h/l1", "s/g/eq");
    t.write("s/g/other", 2 * BLK);
    fs.remount();
    export(mnt, true);
    dedupe(&t, "s/g/eq", "s/h/l1");
    fs.remount();
}

/// A deduped hard-linked file: as root found stale and mapped again (the
/// full scan, byte for byte); as `nobody` the directories above it are
/// marked and every other entry is equal or marked; `--verify` names it
/// (by one name) and its twin, and is the full scan.
#[test]
fn xfs_hard_linked_file_deduped_marks_its_directories() {
    let Some(fs) = make_fs(FsKind::Xfs) else {
        return;
    };
    let mnt = fs.path();
    hard_links(&fs);
    let (want, _) = full(mnt, true);
    let (got, _, err) = since(mnt, true, &[]);
    assert_eq!((got, err.as_str()), (want, ""), "as root");
    let (_, full_r) = full(mnt, false);
    let (_, got, err) = since(mnt, false, &[]);
    assert_equal_or_marked(&full_r, &got, "as nobody");
    for rel in ["g/eq", "h", "g", "", "h/l1", "h/l2"] {
        let e = entry(&got, rel);
        assert!(!e.reclaimable_exact, "{rel} unmarked: {e:?}\n{err}");
    }
    assert_ne!(
        entry(&got, "h").exclusive,
        entry(&full_r, "h").exclusive,
        "s/h: the saved map of the links is not stale"
    );
    let (want, _) = full(mnt, true);
    let (bytes, _, verr) = since(mnt, true, &["--verify"]);
    assert_eq!(bytes, want, "--verify");
    let named = named_stale(&verr);
    assert!(
        named.contains(&"g/eq".to_owned())
            && named.iter().filter(|n| n.starts_with("h/")).count() == 1
            && named.len() == 2,
        "{named:?}\n{verr}"
    );
}

/// The entries of the links themselves: their Reclaimable is 0 (another
/// link stays), but as `nobody` their Exclusive and Shared are the stale
/// map's: they are marked, as every entry credited with a map nothing
/// proved.
#[test]
fn xfs_hard_linked_file_deduped_its_links_equal_or_marked() {
    let Some(fs) = make_fs(FsKind::Xfs) else {
        return;
    };
    let mnt = fs.path();
    hard_links(&fs);
    for root in [true, false] {
        let (_, full_r) = full(mnt, root);
        let (_, got, _) = since(mnt, root, &[]);
        assert_equal_or_marked(&full_r, &got, &format!("root={root}"));
    }
}

/// XFS without the reverse-mapping btree: as root nothing proves a map,
/// so every reused file is marked, as without root.
#[test]
fn xfs_without_rmapbt_as_root_marks_every_reused_file() {
    let Some(fs) = make_fs_with(FsKind::Xfs, &["-m", "rmapbt=0"]) else {
        return;
    };
    let mnt = fs.path();
    prepare(&fs, true, true);
    // Every scan as root says once that nothing outside can be found.
    let (_, full_r, ferr) = scan(mnt, true, &[]);
    let (_, got, err) = since(mnt, true, &[]);
    assert!(
        ferr.contains("reverse-mapping btree") && ferr.lines().count() == 1,
        "{ferr}"
    );
    assert_equal_or_marked(&full_r, &got, "no rmapbt");
    assert_stale_differ(&full_r, &got);
    for rel in UNTOUCHED.iter().chain(&STALE) {
        let e = entry(&got, rel);
        assert!(!e.reclaimable_exact, "reused {rel} unmarked: {e:?}\n{err}");
    }
    let n = (UNTOUCHED.len() + STALE.len()) as u64;
    assert_eq!(reused(mnt, true), (n, 0));
}

/// ext4 shares nothing: the saved scan keeps no maps, `--since` says so
/// once and gives the full scan's document.
#[test]
fn ext4_saved_scan_keeps_no_maps() {
    let Some(fs) = make_fs(FsKind::Ext4) else {
        return;
    };
    let mnt = fs.path();
    let t = Tree { root: mnt };
    t.write("s/a", 3 * BLK);
    t.write("s/d/b", 2 * BLK);
    export(mnt, true);
    t.write("s/d/c", BLK);
    let (want, _) = full(mnt, true);
    let (got, _, err) = since(mnt, true, &[]);
    assert_eq!(got, want);
    assert!(
        err.contains("keeps no extent maps") && err.lines().count() == 1,
        "{err}"
    );
}

/// A saved scan written by `--since` itself: without `--verify` the
/// stale maps it reused may be saved again, and a later `--since` must
/// still mark them; with `--verify` every map is fresh, and a later
/// `--since` as root proves all and is the full scan.
#[test]
fn xfs_saved_scan_written_by_since() {
    let Some(fs) = make_fs(FsKind::Xfs) else {
        return;
    };
    let mnt = fs.path();
    prepare(&fs, true, true);
    let (e2, e3) = ("nb/e2.json", "nb/e3.json");
    let out = sdu_as(mnt, true, &["--since", SAVED, "--export", e2, "s"]);
    assert_eq!((out.code, out.stdout.len()), (Some(0), 0), "{out:?}");
    let out = sdu_as(
        mnt,
        true,
        &["--since", SAVED, "--verify", "--export", e3, "s"],
    );
    assert_eq!((out.code, out.stdout.len()), (Some(0), 0), "{out:?}");
    let (want, full_r) = full(mnt, true);
    for root in [true, false] {
        let out = sdu_as(mnt, root, &["-a", "--json", "--since", e2, "s"]);
        assert_eq!(out.code, Some(0), "{out:?}");
        let got = crate::json::parse(&out.stdout);
        let full_r = if root {
            full_r.clone()
        } else {
            full(mnt, false).1
        };
        assert_equal_or_marked(&full_r, &got, &format!("--since e2, root={root}"));
    }
    let out = sdu_as(mnt, true, &["-a", "--json", "--since", e3, "s"]);
    out.assert_ok();
    assert_eq!(out.stdout, want, "--since of the --verify export");
    Command::new("true").status().unwrap();
}

/// On Btrfs `st_dev` is an anonymous device number a subvolume takes at
/// mount time: unmounted, and mounted after another filesystem took its
/// old number, every file has another device. The maps are kept under the
/// subvolume's UUID: they are reused all the same.
#[test]
fn btrfs_saved_maps_survive_a_remount() {
    let Some(fs) = make_fs(FsKind::Btrfs) else {
        return;
    };
    let Some(other) = make_fs(FsKind::Btrfs) else {
        return;
    };
    let mnt = fs.path();
    let t = Tree { root: mnt };
    build(&t);
    // Maps are kept and reused on Btrfs with each copy mapped.
    crate::since::EACH_COPY.with(|e| e.set(true));
    export(mnt, false);
    let dev = key(mnt, "a/keep").0;
    // Ours down, the other down and up (taking the lowest free number),
    // ours up; again if a mount made meanwhile by another test took the
    // number ours gave up and ours got it back.
    for _ in 0..5 {
        fs.unmounted(|_| other.remount());
        if key(mnt, "a/keep").0 != dev {
            break;
        }
    }
    assert_ne!(
        key(mnt, "a/keep").0,
        dev,
        "st_dev did not move: the case shows nothing"
    );
    let (n, _) = reused(mnt, false);
    assert!(n > 0, "nothing reused after a remount");
}

/// As root, `--to-free` and `--df` walk other roots than the PATHs given
/// (the PATHs inside no other, the mount point): with `--since` they walk
/// the same ones, and print what they print without it.
#[test]
fn xfs_to_free_and_df_walk_their_own_roots_with_since() {
    let Some(fs) = make_fs(FsKind::Xfs) else {
        return;
    };
    let mnt = fs.path();
    prepare(&fs, true, false);
    for args in [
        &["--to-free", "1", "s/b", "s"][..],
        &["--to-free", "1", "s/b", "s/c"][..],
        &["--df", "s/b"][..],
    ] {
        let plain = sdu_as(mnt, true, args);
        let mut with = vec!["--since", SAVED];
        with.extend_from_slice(args);
        let since = sdu_as(mnt, true, &with);
        assert_eq!(plain.code, Some(0), "{plain:?}");
        assert_eq!(
            (since.code, since.stdout_str(), since.stderr.as_str()),
            (plain.code, plain.stdout_str(), plain.stderr.as_str()),
            "{args:?}"
        );
    }
}
