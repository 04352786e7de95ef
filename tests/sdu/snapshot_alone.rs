//! Btrfs snapshots and subvolumes scanned without the rest of their
//! family, checked by deleting them and reading what Btrfs freed (Data
//! and Metadata Used of `btrfs filesystem usage -b` after a sync, the
//! subvolume dropped by the cleaner first). What `reclaimable` claims of
//! metadata is docs/filesystems.md's "Btrfs metadata: what "frees" means":
//! `data freed ≤ reclaimable ≤ data freed + inline bytes`, the inline
//! bytes being those of inline files deleted that no other subvolume holds
//! unchanged. As root every figure is exact; without root it is equal or
//! marked "at most" when it may be more than deleting frees.

use std::path::Path;
use std::process::Command;

use crate::util::*;

/// Reclaimable and its bound ("exact", or `reclaimable_bound`: "at_most",
/// "at_least", "unknown") of `sdu --json -s REL` run in `d` as root, or
/// without CAP_SYS_ADMIN.
fn figure(d: &Path, rel: &str, root: bool) -> (u64, String) {
    let args = ["--json", "-s"];
    let out = if root {
        run(Command::new(sdu_bin()).current_dir(d).args(args).arg(rel))
    } else {
        crate::btrfs::sdu_unprivileged(&args, &d.join(rel))
    };
    assert_eq!(out.code, Some(0), "{out:?}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let e = &doc["entries"][0];
    let r = e["reclaimable"].as_u64().unwrap_or_else(|| panic!("{doc}"));
    (
        r,
        e["reclaimable_bound"]
            .as_str()
            .unwrap_or("exact")
            .to_owned(),
    )
}

/// As root: exact and within what deleting freed (`data` and `inline`, the
/// inline bytes no other subvolume holds). Without root: the same, or
/// marked with the direction it errs in.
fn check(what: &str, (r, bound): (u64, String), root: bool, data: u64, inline: u64) {
    let within = data <= r && r <= data + inline;
    let marked = match bound.as_str() {
        "unknown" => true,
        "at_most" => r > data,
        "at_least" => r < data + inline,
        _ => false,
    };
    let ok = if root {
        bound == "exact" && within
    } else {
        within || marked
    };
    assert!(
        ok,
        "{what} {}: reclaimable {r} ({bound}); deleting freed data {data}, \
         inline bytes held nowhere else {inline}",
        if root { "as root" } else { "without root" }
    );
}

/// 200 files of 1,500 bytes (inline) in `small/`, a 20 MiB file and a
/// reflink copy of it with 2 MiB rewritten, under `vol`; and the paths
/// that lead to the same inline data: 20 symlinks (their targets inline)
/// and a second link to each of 5 inline files (`links/`).
fn issue_volume(d: &Path, vol: &str) {
    crate::btrfs::subvolume(&d.join(vol));
    let t = Tree { root: &d.join(vol) };
    for i in 0..200 {
        t.write(&format!("small/f{i}"), 1500);
    }
    t.dir("links");
    for i in 0..20 {
        std::os::unix::fs::symlink(format!("../small/f{i}"), t.p(&format!("links/l{i}"))).unwrap();
    }
    for i in 0..5 {
        t.link(&format!("small/f{i}"), &format!("links/h{i}"));
    }
    t.write("big", 20 << 20);
    t.clone("big", "big2");
    t.overwrite("big2", 4 << 20, 2 << 20);
    sync_fs(d);
}

/// A read-only snapshot scanned alone: its origin holds every inline file
/// and every extent, so deleting it frees no data, and its inline files
/// are no content of its own.
#[test]
fn snapshot_scanned_alone_claims_no_inline_file_its_origin_holds() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    crate::btrfs::assert_setpriv_drops_sys_admin();
    let d = fs.path();
    issue_volume(d, "vol");
    std::fs::create_dir(d.join("vol/.snap")).unwrap();
    crate::btrfs::ro_snapshot(&d.join("vol"), &d.join("vol/.snap/2"));
    sync_fs(d);
    let root = figure(d, "vol/.snap/2", true);
    let nobody = figure(d, "vol/.snap/2", false);
    let (data, _) = freed_by_deleting_subvolume(d, "vol/.snap/2");
    check("vol/.snap/2", root, true, data, 0);
    check("vol/.snap/2", nobody, false, data, 0);
}

/// The mirror: the origin scanned alone, its snapshot elsewhere holding
/// every inline file but the three rewritten since, and a 1 MiB file
/// written since. Deleting the origin frees the 1 MiB of data; the three
/// rewritten files are the only inline content held nowhere else.
#[test]
fn origin_scanned_alone_claims_only_inline_files_no_snapshot_holds() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    issue_volume(d, "vol");
    std::fs::create_dir(d.join("snaps")).unwrap();
    crate::btrfs::ro_snapshot(&d.join("vol"), &d.join("snaps/1"));
    let t = Tree {
        root: &d.join("vol"),
    };
    for i in 0..3 {
        std::fs::write(d.join(format!("vol/small/f{i}")), fresh_bytes(1500)).unwrap();
    }
    t.write("new", 1 << 20);
    sync_fs(d);
    let root = figure(d, "vol", true);
    let nobody = figure(d, "vol", false);
    let (data, _) = freed_by_deleting_subvolume(d, "vol");
    assert!(data >= 1 << 20, "deleting vol freed {data}");
    check("vol", root, true, data, 3 * 4096);
    check("vol", nobody, false, data, 3 * 4096);
}

/// `r` with 600 inline files and a 1 MiB file, `n` a snapshot of it, `m`
/// a read-only snapshot of `n`; then `n` deleted and dropped by the
/// cleaner: `m` names an origin no root item holds, yet shares with `r`
/// every block `n` had from it. Each of `r` and `m`, scanned alone, is
/// deleted and measured (on a filesystem of its own).
fn deleted_intermediate(delete: &str) {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    crate::btrfs::subvolume(&d.join("r"));
    let t = Tree { root: &d.join("r") };
    for i in 0..600 {
        t.write(&format!("small/f{i}"), 1500);
    }
    // Items past the first leaf: its tree has an inner node, which keeps
    // the leaves below it (and the data refs they hold, naming `r`).
    t.write("data", 1 << 20);
    sync_fs(d);
    run(Command::new("btrfs")
        .args(["subvolume", "snapshot"])
        .arg(d.join("r"))
        .arg(d.join("n")))
    .assert_ok();
    crate::btrfs::ro_snapshot(&d.join("n"), &d.join("m"));
    run(Command::new("btrfs")
        .args(["subvolume", "delete", "-C"])
        .arg(d.join("n")))
    .assert_ok();
    btrfs(&["subvolume", "sync"], d);
    let root = figure(d, delete, true);
    let nobody = figure(d, delete, false);
    let (data, _) = freed_by_deleting_subvolume(d, delete);
    check(delete, root, true, data, 0);
    check(delete, nobody, false, data, 0);
}

#[test]
fn origin_of_a_snapshot_of_a_deleted_snapshot_frees_what_it_says() {
    deleted_intermediate("r");
}

#[test]
fn snapshot_of_a_deleted_snapshot_frees_what_it_says() {
    deleted_intermediate("m");
}

/// mkfs gives the top-level root directory 16 KiB of `nbytes`, and a
/// snapshot of subvolume 5 copies them: a directory's own bytes, which
/// deleting the snapshot does not free as data (docs/filesystems.md: a
/// directory's own bytes on Btrfs are never reclaimable).
#[test]
fn snapshot_of_the_top_level_claims_no_directory_bytes() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    std::fs::create_dir(d.join("snaps")).unwrap();
    crate::btrfs::ro_snapshot(d, &d.join("snaps/s1"));
    sync_fs(d);
    let root = figure(d, "snaps", true);
    let nobody = figure(d, "snaps", false);
    let (data, _) = freed_by_deleting_subvolume(d, "snaps/s1");
    check("snaps", root, true, data, 0);
    check("snaps", nobody, false, data, 0);
}

/// A subvolume of one leaf, its snapshot, then a file added to the
/// subvolume and one of its inline files rewritten: the subvolume's leaf
/// is copied on write, and the snapshot holds the old one alone, with its
/// own copy of the inline items. Deleting the snapshot frees that leaf
/// (metadata) and no data. sdu does not attribute leaves: the two inline
/// files the subvolume still holds unchanged are not the snapshot's to
/// free; the one rewritten is (its old content is held nowhere else).
#[test]
fn snapshot_holding_its_own_leaf_claims_only_inline_files_held_nowhere_else() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    crate::btrfs::subvolume(&d.join("vol"));
    let t = Tree {
        root: &d.join("vol"),
    };
    for i in 0..3 {
        t.write(&format!("f{i}"), 1000);
    }
    sync_fs(d);
    crate::btrfs::ro_snapshot(&d.join("vol"), &d.join("s"));
    t.write("new", 1000);
    std::fs::write(d.join("vol/f0"), fresh_bytes(1000)).unwrap();
    sync_fs(d);
    let root = figure(d, "s", true);
    let nobody = figure(d, "s", false);
    let whole = run(Command::new(sdu_bin())
        .current_dir(d)
        .args(["--json", "-d", "1", "."]));
    let doc: serde_json::Value = serde_json::from_slice(&whole.stdout).unwrap();
    let s = doc["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == "./s")
        .unwrap()
        .clone();
    let (data, meta) = freed_by_deleting_subvolume(d, "s");
    assert!(
        meta > 0,
        "the snapshot's own leaf is freed: metadata {meta}"
    );
    assert_eq!(root.0, 4096, "the rewritten file's old content");
    check("s", root, true, data, 4096);
    check("s", nobody, false, data, 4096);
    let bound = s["reclaimable_bound"]
        .as_str()
        .unwrap_or("exact")
        .to_owned();
    let whole = (s["reclaimable"].as_u64().unwrap(), bound);
    check("./s, the whole filesystem scanned", whole, true, data, 4096);
}

/// A subvolume holding its own snapshot, on a filesystem where another
/// family (the top level and a snapshot of it) lies outside the scan: as
/// root every inline file was asked about, so the figure is exact, and it
/// is what deleting both frees (the inline files, held nowhere else, in
/// metadata).
#[test]
fn subvolume_with_its_snapshot_inside_is_exact_beside_another_family() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    issue_volume(d, "vol");
    std::fs::create_dir(d.join("vol/.snap")).unwrap();
    crate::btrfs::ro_snapshot(&d.join("vol"), &d.join("vol/.snap/2"));
    std::fs::create_dir(d.join("snaps")).unwrap();
    crate::btrfs::ro_snapshot(d, &d.join("snaps/s1"));
    sync_fs(d);
    let root = figure(d, "vol", true);
    let nobody = figure(d, "vol", false);
    let (data0, _) = btrfs_used(d);
    let (snap, _) = freed_by_deleting_subvolume(d, "vol/.snap/2");
    let (data, _) = freed_by_deleting_subvolume(d, "vol");
    assert_eq!(data0 - btrfs_used(d).0, snap + data);
    check("vol", root, true, snap + data, 220 * 4096);
    check("vol", nobody, false, snap + data, 220 * 4096);
}

/// A top level holding nothing but subvolumes: first one empty subvolume
/// `v`; then, with a 64 KiB file in `v`, a snapshot `s` of the top level
/// and `v` deleted, so that the top level holds `s` alone and `s` the
/// empty directory a snapshot shows where its origin held a subvolume.
/// No entry below the top level comes from the tree as root (each is
/// stat-ed, on a device of its own), and the tree search still gives what
/// FIEMAP gives. Deleting `s` frees no data: it holds only directories.
/// (Found by the property test, seed 685.)
#[test]
fn top_level_holding_only_subvolumes_and_a_snapshot_of_a_deleted_one() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    crate::btrfs::subvolume(&d.join("v"));
    sync_fs(d);
    if let Err(e) = search_matches_fiemap(d) {
        panic!("the top level holding one empty subvolume: {e}");
    }
    Tree { root: &d.join("v") }.write("f", 64 << 10);
    run(Command::new("btrfs")
        .args(["subvolume", "snapshot"])
        .arg(d)
        .arg(d.join("s")))
    .assert_ok();
    let (data, _) = freed_by_deleting_subvolume(d, "v");
    assert!(data >= 64 << 10, "deleting v freed {data}");
    if let Err(e) = search_matches_fiemap(d) {
        panic!("the top level holding a snapshot of a deleted subvolume: {e}");
    }
    let root = figure(d, "s", true);
    let nobody = figure(d, "s", false);
    let (data, _) = freed_by_deleting_subvolume(d, "s");
    check("s", root, true, data, 0);
    check("s", nobody, false, data, 0);
}
