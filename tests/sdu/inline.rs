//! Btrfs inline data shared by snapshots: the same inode, unchanged, in a
//! subvolume and its snapshot is one shared unit, so an unchanged snapshot
//! of small files frees about nothing; checked by deleting it and reading
//! what Btrfs freed. Unrelated subvolumes whose files have equal inode
//! numbers (created in one transaction) never count as sharing.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use crate::util::*;

/// A read-only snapshot of `vol` as `snap`, a moment after its files were
/// written: without root, sdu maps a snapshot's file once for all its
/// copies only if it changed at least 100 ms before the snapshot was made
/// (a write within the clock tick of the last change leaves the change
/// time as it was).
fn snapshot(mnt: &Path) {
    std::thread::sleep(std::time::Duration::from_millis(200));
    crate::btrfs::ro_snapshot(&mnt.join("vol"), &mnt.join("snap"));
}

fn json_of(dir: &Path, args: &[&str]) -> serde_json::Value {
    let out = run(Command::new(sdu_bin())
        .current_dir(dir)
        .arg("--json")
        .args(args));
    assert_eq!(out.code, Some(0), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn entry<'a>(doc: &'a serde_json::Value, path: &str) -> &'a serde_json::Value {
    doc["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == path)
        .unwrap_or_else(|| panic!("no {path}"))
}

/// The case: a subvolume with 5,000 files of 900 bytes (inline),
/// 300 symlinks and five 1 MiB files, a read-only snapshot, then three small files and
/// one block of a big file rewritten in the origin. The snapshot's
/// reclaimable must lie between the data and the data + metadata that
/// deleting it frees, plus 64 KiB; it used to be 20 MB.
#[test]
fn unchanged_snapshot_of_inline_files_frees_about_nothing() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    btrfs(&["subvolume", "create"], &d.join("vol"));
    std::fs::create_dir(d.join("vol/small")).unwrap();
    for i in 0..5000 {
        write_file(&d.join(format!("vol/small/f{i}")), 900);
    }
    for i in 0..5 {
        write_file(&d.join(format!("vol/big{i}")), 1 << 20);
    }
    // Symlinks keep their target inline too (4 KiB of st_blocks each).
    std::fs::create_dir(d.join("vol/links")).unwrap();
    for i in 0..300 {
        std::os::unix::fs::symlink(format!("../small/f{i}"), d.join(format!("vol/links/l{i}")))
            .unwrap();
    }
    sync_fs(d);
    snapshot(d);
    for i in 0..3 {
        std::fs::write(d.join(format!("vol/small/f{i}")), vec![b'x'; 900]).unwrap();
    }
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(d.join("vol/big0"))
        .unwrap();
    rustix::io::pwrite(&f, &[7u8; 4096], 0).unwrap();
    drop(f);
    sync_fs(d);
    let doc = json_of(d, &["-d", "1", "."]);
    let snap = entry(&doc, "./snap");
    let reclaimable = snap["reclaimable"].as_u64().unwrap();
    // Same figures whatever the thread count.
    for j in ["-j1", "-j2", "-j5"] {
        let again = json_of(d, &[j, "-d", "1", "."]);
        assert_eq!(entry(&again, "./snap"), snap, "{j}");
    }
    let (data, meta) = freed_by_deleting_subvolume(d, "snap");
    assert!(
        data <= reclaimable && reclaimable <= data + meta + 64 * 1024,
        "snap reclaimable {reclaimable}, deleting it freed data {data} + metadata {meta}"
    );
    // The shared figure covers the inline files: 5,000 of them.
    assert!(snap["shared"].as_u64().unwrap() >= 5000 * 900, "{snap}");
}

/// Two fresh subvolumes, files written in one transaction: equal inode
/// numbers, generations and (coarse) times. Neither is a snapshot of the
/// other, so nothing is shared.
#[test]
fn unrelated_subvolumes_with_equal_inode_numbers_never_share() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    for s in ["a", "b"] {
        btrfs(&["subvolume", "create"], &d.join(s));
    }
    for s in ["a", "b"] {
        for i in 0..20 {
            std::fs::write(d.join(format!("{s}/f{i}")), vec![b'z'; 700]).unwrap();
            std::os::unix::fs::symlink(format!("f{i}"), d.join(format!("{s}/l{i}"))).unwrap();
        }
    }
    sync_fs(d);
    let ino = |p: &str| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(d.join(p)).unwrap());
    assert_eq!(
        ino("a/f3"),
        ino("b/f3"),
        "the test needs equal inode numbers"
    );
    let lino = |p: &str| {
        std::os::unix::fs::MetadataExt::ino(&std::fs::symlink_metadata(d.join(p)).unwrap())
    };
    assert_eq!(
        lino("a/l3"),
        lino("b/l3"),
        "and equal symlink inode numbers"
    );
    let doc = json_of(d, &["-d", "1", "."]);
    for s in ["./a", "./b"] {
        let e = entry(&doc, s);
        assert_eq!(e["shared"], 0, "{e}");
        assert_eq!(e["reclaimable"], e["total"], "{e}");
    }
}

/// A snapshot outside the scan: as root, its trees are read, and the
/// snapshot scanned alone shares its origin's inline files (reclaimable
/// 0, exact); without root they count as its own, a bound "at most".
#[test]
fn snapshot_outside_the_scan_is_seen_as_root() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    btrfs(&["subvolume", "create"], &d.join("vol"));
    for i in 0..10 {
        std::fs::write(d.join(format!("vol/f{i}")), vec![b'q'; 800]).unwrap();
    }
    sync_fs(d);
    snapshot(d);
    let alone = json_of(d, &["-s", "snap"]);
    let e = entry(&alone, "snap");
    assert_eq!(e["reclaimable"], 0, "{e}");
    assert_eq!(e["reclaimable_exact"], true, "{e}");
    assert!(e["shared"].as_u64().unwrap() >= 10 * 800, "{e}");
    let nobody = unprivileged(&d.join("snap"), &["--json", "-s"]);
    let doc: serde_json::Value = serde_json::from_slice(&nobody.stdout).unwrap();
    let e = &doc["entries"][0];
    assert_eq!(e["reclaimable_exact"], false, "{e}");
    let both = json_of(d, &["-d", "1", "."]);
    let e = entry(&both, "./snap");
    assert_eq!(e["reclaimable"], 0, "{e}");
    assert!(e["shared"].as_u64().unwrap() >= 10 * 800, "{e}");
}

/// As root, a snapshot the scan walked whole is not asked about an inline
/// file it did not show: the walk met every inode it holds. One it entered
/// below its root, or walked with a part excluded, is still asked: there
/// its inline files count as held outside the scan (reclaimable 0, exact).
#[test]
fn only_snapshots_walked_whole_go_unasked() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    vol_and_snapshot(d, "sub", |sub| {
        ten_inline_files(&d.join("vol"));
        for i in 0..10 {
            std::fs::write(sub.join(format!("g{i}")), vec![b'r'; 900]).unwrap();
        }
    });
    // Only the snapshot holds f9 now.
    std::fs::remove_file(d.join("vol/f9")).unwrap();
    sync_fs(d);
    let held = |doc: &serde_json::Value, path: &str| {
        let e = entry(doc, path);
        assert_eq!(e["reclaimable"], 0, "{e}");
        assert_eq!(e["reclaimable_exact"], true, "{e}");
    };
    // The snapshot entered at `snap/sub`: the files of `vol` above `sub`
    // lie in the part of it the scan did not walk.
    held(&json_of(d, &["-s", "vol", "snap/sub"]), "vol");
    // The snapshot's `sub` excluded: `vol/sub`'s files are held there.
    let doc = json_of(d, &["-d", "2", "--exclude", "*snap/sub", "."]);
    held(&doc, "./vol/sub");
    // Both walked whole: what each holds alone is its own to free.
    let doc = json_of(d, &["-d", "1", "."]);
    held(&doc, "./vol");
    let e = entry(&doc, "./snap");
    assert_eq!(e["reclaimable_exact"], true, "{e}");
    assert!(e["reclaimable"].as_u64().unwrap() >= 800, "f9: {e}");
}

/// Without root, a snapshot's file counts as a copy mapped once only if it
/// changed at least 100 ms before the snapshot was made: inode times move in
/// clock ticks, and a write to its origin within the tick of its last change
/// would leave the change time as it was. `old/` and `new/` are written and
/// synced; 300 ms later `new/`'s files change (chmod: their change time,
/// without data to write) and the snapshot is taken at once. Nothing differs
/// between the copies, so copies mapped once could credit all twenty; only
/// the settled ones (by the snapshot's `otime`, read here with
/// `BTRFS_IOC_GET_SUBVOL_INFO`) are. The figures equal mapping every copy.
#[test]
fn files_changed_just_before_their_snapshot_are_mapped_on_their_own() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    crate::btrfs::assert_setpriv_drops_sys_admin();
    let d = fs.path();
    btrfs(&["subvolume", "create"], &d.join("vol"));
    for sub in ["vol/old", "vol/new"] {
        std::fs::create_dir(d.join(sub)).unwrap();
    }
    for i in 0..10 {
        write_file(&d.join(format!("vol/old/o{i}")), 64 * 1024 + i * 4096);
        write_file(&d.join(format!("vol/new/n{i}")), 64 * 1024 + i * 4096);
    }
    sync_fs(d);
    std::thread::sleep(std::time::Duration::from_millis(300));
    for i in 0..10 {
        let f = d.join(format!("vol/new/n{i}"));
        std::fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o640)).unwrap();
    }
    crate::btrfs::ro_snapshot(&d.join("vol"), &d.join("snap"));
    // Which of the snapshot's files are settled, by its creation time.
    let dir = std::fs::File::open(d.join("snap")).unwrap();
    let sv = sdu_sys::btrfs::subvol(std::os::fd::AsFd::as_fd(&dir)).unwrap();
    let settled = |rel: &str| {
        let st = rustix::fs::statx(
            rustix::fs::CWD,
            d.join("snap").join(rel).as_path(),
            rustix::fs::AtFlags::empty(),
            rustix::fs::StatxFlags::CTIME,
        )
        .unwrap();
        sdu::settled(&sv, (st.stx_ctime.tv_sec, st.stx_ctime.tv_nsec))
    };
    let old = (0..10).filter(|i| settled(&format!("old/o{i}"))).count();
    let new = (0..10).filter(|i| settled(&format!("new/n{i}"))).count();
    assert_eq!(old, 10, "old/ was written 300 ms before the snapshot");
    assert!(
        new < 10,
        "the snapshot was made more than 100 ms after new/ changed: \
         the test could not make an unsettled file"
    );
    // One thread: each settled inode's second copy is credited with the
    // first's extents; an unsettled one's copies are mapped each.
    let (once, reused, each) = once_and_each(d);
    assert_eq!(reused as usize, old + new, "{}", once.stderr);
    assert_eq!(once.stdout_str(), each.stdout_str());
}

/// `sdu ARGS D` without CAP_SYS_ADMIN, which must succeed.
fn unprivileged(d: &Path, args: &[&str]) -> Output {
    let out = crate::btrfs::sdu_unprivileged(args, d);
    assert_eq!(out.code, Some(0), "{out:?}");
    out
}

/// `sdu --json -a -j1 D` without CAP_SYS_ADMIN, copies mapped once (with
/// `--stats`: how many copies it credited with another's extents) and
/// every copy mapped (`--map-each-copy`): (once, copies reused, each).
fn once_and_each(d: &Path) -> (Output, u64, Output) {
    let once = unprivileged(d, &["--json", "-a", "--stats", "-j1"]);
    let reused = stat_value(
        &once.stderr,
        "files credited with a snapshot copy's extents",
    );
    let each = unprivileged(d, &["--json", "-a", "--map-each-copy", "-j1"]);
    (once, reused, each)
}

/// `vol` of regular files `f0..f39` and inline files `s0..s39`, snapshot
/// `snap`, `f0..f4`/`s0..s4` rewritten, snapshot `snap2`, `f5..f9`/`s5..s9`
/// rewritten; synced.
fn three_generations(d: &Path) {
    btrfs(&["subvolume", "create"], &d.join("vol"));
    let rewrite = |range: std::ops::Range<usize>| {
        for i in range {
            write_file(&d.join(format!("vol/f{i}")), 30_000 + i * 4096);
            std::fs::write(d.join(format!("vol/s{i}")), vec![b'n'; 500 + i]).unwrap();
        }
    };
    for i in 0..40 {
        write_file(&d.join(format!("vol/f{i}")), 20_000 + i * 4096);
        std::fs::write(d.join(format!("vol/s{i}")), vec![b'a'; 600 + i]).unwrap();
    }
    sync_fs(d);
    snapshot(d);
    rewrite(0..5);
    sync_fs(d);
    crate::btrfs::ro_snapshot(&d.join("vol"), &d.join("snap2"));
    rewrite(5..10);
    sync_fs(d);
}

/// The copies `--stats` says were recorded as copies of another file
/// (`files with shared data  N (M of them copies ...)`): M.
fn copies_recorded(stderr: &str) -> u64 {
    let key = "files with shared data";
    let line = stderr
        .lines()
        .find(|l| l.trim_start().starts_with(key))
        .unwrap_or_else(|| panic!("no {key:?} line in --stats:\n{stderr}"));
    line.split_once('(')
        .and_then(|(_, r)| r.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("bad --stats line {line:?}"))
}

/// `once` (copies recorded, `--json -a -j1`) gives the document of
/// `each` (every copy mapped or indexed on its own), so does `run` at 2
/// and 5 threads, and the first snapshot's reclaimable in it is what
/// deleting it frees.
fn the_same_and_what_deleting_frees(
    d: &Path,
    (once, each): (&Output, &Output),
    run: impl Fn(&[&str]) -> Output,
) {
    assert_eq!(
        once.stdout_str(),
        each.stdout_str(),
        "copies recorded and every copy on its own differ"
    );
    for j in ["-j2", "-j5"] {
        let again = run(&["--json", "-a", j]);
        assert_eq!(again.stdout_str(), each.stdout_str(), "{j}");
    }
    let doc: serde_json::Value = serde_json::from_slice(&once.stdout).unwrap();
    snap_frees_its_reclaimable(d, &doc);
}

/// The first snapshot's reclaimable in `doc` is what deleting it frees.
fn snap_frees_its_reclaimable(d: &Path, doc: &serde_json::Value) {
    let snap = entry(doc, &format!("{}/snap", d.display()));
    let reclaimable = snap["reclaimable"].as_u64().unwrap();
    let (data, meta) = freed_by_deleting_subvolume(d, "snap");
    assert!(data > 0, "the first snapshot held the old f0..f4");
    assert!(
        data <= reclaimable && reclaimable <= data + meta + 64 * 1024,
        "snap reclaimable {reclaimable}, deleting it freed data {data} + metadata {meta}"
    );
}

/// Without root, a file unchanged across snapshots is mapped once and its
/// other copies are credited with the extents it gave, and recorded as
/// copies of it. [`three_generations`]: the figures equal those of mapping
/// every copy (`--map-each-copy`, one thread), copies were reused, and the
/// first snapshot's reclaimable is what deleting it frees.
#[test]
fn unchanged_copies_are_mapped_once_without_root() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    crate::btrfs::assert_setpriv_drops_sys_admin();
    let d = fs.path();
    three_generations(d);
    let unprivileged = |args: &[&str]| unprivileged(d, args);
    // One thread: every copy after the first kept one is reused. f10..f39
    // have three copies (two reused each), f0..f9 two (one each); the
    // inline files s10..s39 at least one each (the origin's copy is kept
    // only once a snapshot was met).
    let (once, reused, each) = once_and_each(d);
    assert!(reused >= 30 * 2 + 10 + 30, "{reused} copies reused");
    // The reused copies of f5..f39 stand as copies of the first (f0..f4
    // changed just before snap2 and are mapped each), and so do the inline
    // files' copies (with --map-each-copy too: only theirs).
    let (copies, inline_copies) = (
        copies_recorded(&once.stderr),
        copies_recorded(&unprivileged(&["-s", "--stats", "--map-each-copy"]).stderr),
    );
    assert!(
        copies >= inline_copies + 30 * 2 + 5,
        "{copies} copies, {inline_copies} inline"
    );
    assert!(inline_copies >= 30, "{inline_copies} inline copies");
    assert_eq!(
        stat_value(
            &unprivileged(&["--json", "-a", "--stats", "--map-each-copy"]).stderr,
            "files credited with a snapshot copy's extents"
        ),
        0
    );
    the_same_and_what_deleting_frees(d, (&once, &each), unprivileged);
}

/// As root the tree search reads every copy's own items, and a copy whose
/// shared extents are exactly those a snapshot's copy of the inode was
/// indexed with is recorded as a copy of it. [`three_generations`]: copies
/// recorded beyond the inline files', the figures those of indexing every
/// copy on its own (`--map-each-copy`) at any thread count, and the first
/// snapshot's reclaimable what deleting it frees.
#[test]
fn unchanged_copies_are_recorded_once_as_root() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    three_generations(d);
    let root = |args: &[&str]| {
        let mut a: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
        a.push(d.into());
        let out = sdu(&a);
        assert_eq!(out.code, Some(0), "{out:?}");
        out
    };
    let once = root(&["--json", "-a", "--stats", "-j1"]);
    let each = root(&["--json", "-a", "--stats", "--map-each-copy", "-j1"]);
    let (copies, inline_copies) = (copies_recorded(&once.stderr), copies_recorded(&each.stderr));
    // f10..f39 are alike in snap and snap2, f5..f9 too: one of each pair
    // at least is a copy of the other.
    assert!(
        copies >= inline_copies + 35,
        "{copies} copies, {inline_copies} inline"
    );
    assert!(stat_value(&once.stderr, "files read by tree search (Btrfs, root)") >= 120);
    the_same_and_what_deleting_frees(d, (&once, &each), root);
}

/// `vol` with 200 inline files of 900 bytes in `vol/small`, synced.
fn inline_volume(d: &Path) {
    btrfs(&["subvolume", "create"], &d.join("vol"));
    std::fs::create_dir(d.join("vol/small")).unwrap();
    for i in 0..200 {
        write_file(&d.join(format!("vol/small/f{i}")), 900);
    }
    sync_fs(d);
}

/// A walk that can meet one subvolume only records no inline file (none
/// could be shared), with and without CAP_SYS_ADMIN; a walk of the top
/// level, which holds the subvolume and its snapshot, records both copies,
/// finds them shared, and gives the snapshot the reclaimable that deleting
/// it frees.
#[test]
fn one_subvolume_records_no_inline_files() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    inline_volume(d);
    let recorded = |out: &Output| stat_value(&out.stderr, "inline files recorded for snapshots");
    let root = run(Command::new(sdu_bin())
        .args(["--stats", "-s"])
        .arg(d.join("vol")));
    assert_eq!(root.code, Some(0), "{root:?}");
    assert_eq!(recorded(&root), 0, "{root:?}");
    let nobody = unprivileged(&d.join("vol"), &["--stats", "-s"]);
    assert_eq!(recorded(&nobody), 0, "{nobody:?}");
    snapshot(d);
    // The snapshot lies in the top level, outside `vol`: `vol` alone still
    // meets one subvolume.
    let nobody = unprivileged(&d.join("vol"), &["--stats", "-s"]);
    assert_eq!(recorded(&nobody), 0, "{nobody:?}");
    // What the walk of the top level says the snapshot frees is what
    // deleting it frees.
    let reclaimable = records_and_shares(d, "/snap");
    let (data, meta) = freed_by_deleting_subvolume(d, "snap");
    assert!(
        data <= reclaimable && reclaimable <= data + meta + 64 * 1024,
        "snap reclaimable {reclaimable}, deleting it freed data {data} + metadata {meta}"
    );
}

/// `sdu --stats --json -d 1 DIR`, without CAP_SYS_ADMIN and as root:
/// both copies of [`inline_volume`]'s 200 files recorded, and the entry
/// whose path ends in `suffix` (the snapshot) sharing them, with the same
/// figures both ways, exact as root; returns that entry's reclaimable.
fn records_and_shares(dir: &Path, suffix: &str) -> u64 {
    let args = ["--stats", "--json", "-d", "1"];
    let mut seen: Vec<serde_json::Value> = Vec::new();
    for out in [
        unprivileged(dir, &args),
        run(Command::new(sdu_bin()).args(args).arg(dir)),
    ] {
        assert_eq!(out.code, Some(0), "{out:?}");
        let recorded = stat_value(&out.stderr, "inline files recorded for snapshots");
        assert!(recorded >= 400, "{out:?}");
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let e = doc["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["path"].as_str().is_some_and(|p| p.ends_with(suffix)))
            .unwrap_or_else(|| panic!("no {suffix}: {doc}"));
        assert!(e["shared"].as_u64().unwrap() >= 200 * 900, "{e}");
        let mut e = e.clone();
        let bound = e.as_object_mut().unwrap().remove("reclaimable_bound");
        e["reclaimable_exact"].take();
        seen.push(bound.unwrap_or_default());
        seen.push(e);
    }
    // Without root a snapshot outside the scan may hold the inline files
    // (only root can ask): the figure may be a bound; as root it is exact.
    assert_eq!(seen[2], serde_json::Value::Null, "as root: {}", seen[3]);
    assert_eq!(seen[1], seen[3], "without CAP_SYS_ADMIN, then as root");
    seen[3]["reclaimable"].as_u64().unwrap()
}

/// Unmounts a mount point when dropped.
struct Mounted(std::path::PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// A snapshot mounted inside the subvolume scanned (`mount -o subvol=`) is
/// a second subvolume the walk meets though the subvolume holds none: its
/// inline files are recorded and found shared with the origin's, and its
/// reclaimable is what deleting it frees (between the data and the data +
/// metadata Btrfs frees, plus 64 KiB), as for an unmounted snapshot.
#[test]
fn snapshot_mounted_inside_the_scan_is_seen() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    inline_volume(d);
    snapshot(d);
    let point = d.join("vol/m");
    std::fs::create_dir(&point).unwrap();
    run(Command::new("mount")
        .args(["-o", "ro,subvol=snap", fs.device()])
        .arg(&point))
    .assert_ok();
    let mounted = Mounted(point);
    let reclaimable = records_and_shares(&d.join("vol"), "/m");
    drop(mounted);
    let (data, meta) = freed_by_deleting_subvolume(d, "snap");
    assert!(
        data <= reclaimable && reclaimable <= data + meta + 64 * 1024,
        "m reclaimable {reclaimable}, deleting snap freed data {data} + metadata {meta}"
    );
}

/// Subvolume `vol` with the directory `dir`, which `fill` is given, then
/// its snapshot `snap` ([`snapshot`]).
fn vol_and_snapshot(d: &Path, dir: &str, fill: impl Fn(&Path)) {
    btrfs(&["subvolume", "create"], &d.join("vol"));
    let dir = d.join("vol").join(dir);
    std::fs::create_dir(&dir).unwrap();
    fill(&dir);
    sync_fs(d);
    snapshot(d);
}

/// Ten files of 800 bytes (inline data) in `dir`, `f0` to `f9`.
fn ten_inline_files(dir: &Path) {
    for i in 0..10 {
        std::fs::write(dir.join(format!("f{i}")), vec![b'q'; 800]).unwrap();
    }
}

/// A tmpfs mounted over `over`, unmounted when dropped.
fn tmpfs_over(over: std::path::PathBuf) -> Mounted {
    run(Command::new("mount")
        .args(["-t", "tmpfs", "over"])
        .arg(&over))
    .assert_ok();
    Mounted(over)
}

/// As root, a mount inside the scan over a directory of a snapshot hides
/// what lies there: `snap/hid`'s files, copies of `vol/hid`'s (an extent
/// and inline files), hold their data though the walk never met them, so
/// `snap` is not a subvolume the walk held whole. `vol` frees none of it,
/// as deleting its files shows. Held whole, `snap` was not asked about the
/// inline files: 40,960 reclaimable, exact.
#[test]
fn a_mount_over_a_snapshots_directory_hides_its_holders() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    vol_and_snapshot(d, "hid", |hid| {
        write_file(&hid.join("big"), 1 << 20);
        ten_inline_files(hid);
    });
    let mounted = tmpfs_over(d.join("snap/hid"));
    let doc = json_of(d, &["-d", "1", "."]);
    drop(mounted);
    let e = entry(&doc, "./vol");
    assert_eq!(e["reclaimable"], 0, "{e}");
    let freed = data_freed_by(d, || std::fs::remove_dir_all(d.join("vol/hid")).unwrap());
    assert_eq!(freed, 0, "deleting vol's files");
}

/// As root, a mount over an empty directory of a snapshot hides nothing:
/// the tree shows the directory empty (an inode item of size 0), so the
/// snapshot is still held whole, and the inline files only it holds (five,
/// deleted from `vol`) are not asked about in `vol`'s tree: the scan makes
/// as many tree searches as without the mount (one thread: no read ahead
/// raced), and gives the same figures. Counting every mount point as
/// hiding something asked five times more.
#[test]
fn a_mount_over_an_empty_directory_hides_nothing() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    vol_and_snapshot(d, "empty", |_| ten_inline_files(&d.join("vol")));
    for i in 5..10 {
        std::fs::remove_file(d.join(format!("vol/f{i}"))).unwrap();
    }
    sync_fs(d);
    // The figures, and the tree searches, of a scan of the filesystem.
    let scan = || {
        let out = run(Command::new(sdu_bin())
            .args(["--json", "-d", "1", "--stats", "-j1", "."])
            .current_dir(d));
        assert_eq!(out.code, Some(0), "{out:?}");
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        // The tmpfs's own directory has an apparent size: not compared.
        let figures: Vec<_> = (doc["entries"].as_array().unwrap().iter())
            .map(|e| {
                let f = [
                    "path",
                    "exclusive",
                    "shared",
                    "reclaimable",
                    "reclaimable_exact",
                ];
                f.map(|k| e[k].clone())
            })
            .collect();
        (figures, stat_value(&out.stderr, "tree searches"))
    };
    let without = scan();
    let mounted = tmpfs_over(d.join("snap/empty"));
    let with = scan();
    drop(mounted);
    assert_eq!(with, without);
}

/// Two threads meet a subvolume's files and their copies in its snapshot
/// at once, in the same order: each inode is still mapped once (the first
/// thread to meet it claims it; the other puts its copy off to the end of
/// its task), the figures are those of one thread, and the snapshot's
/// reclaimable is what deleting it frees. Without the claim, most copies
/// met at once were mapped by both threads.
#[test]
fn copies_met_at_once_by_two_threads_are_mapped_once() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    crate::btrfs::assert_setpriv_drops_sys_admin();
    let d = fs.path();
    btrfs(&["subvolume", "create"], &d.join("vol"));
    let (dirs, files) = (8, 200);
    for k in 0..dirs {
        let sub = d.join(format!("vol/d{k}"));
        std::fs::create_dir(&sub).unwrap();
        for i in 0..files {
            // Regular extents and inline data, alternately.
            let len = if i % 2 == 0 { 8192 } else { 300 + i };
            std::fs::write(sub.join(format!("f{i}")), vec![b'a' + k as u8; len]).unwrap();
        }
    }
    sync_fs(d);
    snapshot(d);
    // Ten files rewritten: the snapshot alone holds their old data, which
    // deleting it frees.
    let rewritten = 10;
    for i in 0..rewritten {
        std::fs::write(d.join(format!("vol/d0/f{}", 2 * i)), vec![b'z'; 8192]).unwrap();
    }
    sync_fs(d);
    // Each key once: the unchanged inodes, and both versions of the others.
    let inodes = (dirs * files + rewritten) as u64;
    let vol = d.join("vol");
    // The two subvolumes as two roots: a thread starts in each.
    let scan = |j: &str| {
        let args = ["--json", "-a", "--stats", j, vol.to_str().unwrap()];
        let out = crate::btrfs::sdu_unprivileged(&args, &d.join("snap"));
        assert_eq!(out.code, Some(0), "{out:?}");
        out
    };
    let one = scan("-j1");
    assert_eq!(stat_value(&one.stderr, "FIEMAP calls"), inodes);
    let mut put_off = 0;
    let mut calls = Vec::new();
    for _ in 0..3 {
        let two = scan("-j2");
        assert_eq!(two.stdout_str(), one.stdout_str(), "-j2 and -j1 differ");
        calls.push(stat_value(&two.stderr, "FIEMAP calls"));
        put_off += stat_value(&two.stderr, "files put off while a copy was mapped");
    }
    // The first files, met by both threads before either knows of a copy,
    // may still be mapped twice: nearly always a few, now and then over a
    // hundred (about 1 run in 20, as both threads start together). Two runs
    // of three within 5% of one map per key, and none past 20%.
    let close = calls.iter().filter(|&&c| c <= inodes + inodes / 20).count();
    assert!(
        close >= 2 && calls.iter().all(|&c| c <= inodes + inodes / 5),
        "{calls:?} FIEMAPs for {inodes} inodes"
    );
    let _ = writeln!(std::io::stderr(), "{put_off} copies put off in 3 runs");
    // What the threads' scan says deleting the snapshot frees, it frees.
    let doc: serde_json::Value = serde_json::from_slice(&scan("-j2").stdout).unwrap();
    snap_frees_its_reclaimable(d, &doc);
}
