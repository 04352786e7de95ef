//! Btrfs extents referenced in part, deleted and measured: a file whose
//! extent was rewritten in the middle holds the whole old extent (its
//! "bookends") beside the new one, which deleting it frees, and which
//! FIEMAP (without root) does not show. Every figure is checked against
//! what deleting frees, as in `exact`: as root equal and exact; without
//! root (or with `-l`) equal, or marked, in the direction it errs.

use std::fs;
use std::io::Write as _;
use std::path::Path;

use crate::btrfs::{ro_snapshot, subvolume, text};
use crate::exact::{M, Row, assert_rows, dd, entry, report, table};
use crate::json::{self, Report};
use crate::reclaim::BTRFS_OPTS;
use crate::util::*;

/// `rel`: 8 MiB written in one extent, then 4 MiB at 2 MiB rewritten in
/// place: the old extent stays whole, so the file holds 12 MiB on disk of
/// which it references 8 (`st_blocks`).
fn bookends(t: &Tree, rel: &str) {
    t.write(rel, 8 * M);
    t.assert_one_extent(rel);
    dd(&t.p(rel), "1M", 2, 4);
}

/// The tree of [`btrfs_hardlinked_bookends`]: one such file with its
/// links in one directory, in two, and with one link outside the scanned
/// directory.
fn build_linked(t: &Tree) {
    bookends(t, "same/vm.img");
    t.link("same/vm.img", "same/link");
    bookends(t, "apart/x/vm.img");
    t.link("apart/x/vm.img", "apart/y/link");
    bookends(t, "out/vm.img");
    t.link("out/vm.img", "other/link");
}

/// What each scanned directory's deletion frees, in this order (a
/// directory deleted before its parent).
const LINKED: [(&str, u64); 4] = [
    ("apart/x", 0),
    ("apart", 12 * M),
    ("same", 12 * M),
    ("out", 0),
];

/// A file with bookends and a second hard link: as root its Reclaimable is
/// what deleting both links frees, the whole old extent included, where
/// both links lie under the directory (one directory or two), and 0 where
/// a link lies outside. With `-l` a multiply-linked file is never counted,
/// and the figure is marked (at least).
#[test]
fn btrfs_hardlinked_bookends() {
    let Some(fs) = Mounted::new(FsKind::Btrfs, BTRFS_OPTS) else {
        return;
    };
    let mnt = fs.path();
    build_linked(&Tree { root: mnt });
    fs.remount();
    let dirs: Vec<&str> = LINKED.iter().map(|c| c.0).collect();
    let scan = |root: bool, extra: &[&str]| {
        let mut args = vec!["--json"];
        args.extend(extra);
        args.extend(&dirs);
        report(mnt, root, &args)
    };
    let (root, user) = (scan(true, &[]), scan(false, &[]));
    let (root_l, user_l) = (scan(true, &["-l"]), scan(false, &["-l"]));
    let mut rows = Vec::new();
    let mut rows_l = Vec::new();
    for (d, expected) in LINKED {
        let freed = fs.freed_by(|| fs::remove_dir_all(mnt.join(d)).unwrap());
        assert_eq!(freed, expected, "{d}: the tree is not as built");
        rows.push(Row::new(d, entry(&root, d), entry(&user, d), freed));
        rows_l.push(Row::new(d, entry(&root_l, d), entry(&user_l, d), freed));
    }
    assert_rows("Btrfs, a file with bookends and two links", &rows);
    assert_floors("the same with -l", &rows_l);
}

/// Each figure, as root and without, is what deleting freed and exact, or
/// marked and at most that (a floor: `-l` does not count a multiply-linked
/// file).
fn assert_floors(title: &str, rows: &[Row]) {
    let t = table(title, rows);
    println!("{t}");
    for r in rows {
        for (figure, exact) in [r.root, r.user] {
            assert!(
                (figure, exact) == (r.freed, true) || (!exact && figure <= r.freed),
                "{}: not the freed bytes, nor marked below them:\n{t}",
                r.what
            );
        }
    }
}

/// `-l` with a hard link outside the scanned directory and a reflink copy
/// inside it: the copy and the link's file share one extent, which the
/// outside link keeps. Deleting the directory frees nothing; with `-l` the
/// shared extent is not counted as reclaimable (its file's other links are
/// not tracked).
#[test]
fn count_links_with_a_link_outside() {
    let Some(fs) = Mounted::new(FsKind::Btrfs, BTRFS_OPTS) else {
        return;
    };
    let mnt = fs.path();
    let t = Tree { root: mnt };
    t.write("a/f", 2 * M);
    t.link("a/f", "b/f");
    t.clone("a/f", "a/c");
    fs.remount();
    let args = ["--json", "-l", "a"];
    let (root, user) = (report(mnt, true, &args), report(mnt, false, &args));
    let freed = fs.freed_by(|| fs::remove_dir_all(mnt.join("a")).unwrap());
    assert_eq!(freed, 0, "the tree is not as built");
    assert_floors(
        "Btrfs, -l: a reflink copy of a file linked from outside",
        &[Row::new("a", entry(&root, "a"), entry(&user, "a"), freed)],
    );
}

/// A JSON report of a run that must succeed; stderr may hold the note on
/// compressed data and nothing else.
fn report_noting(cwd: &Path, root: bool, args: &[&str]) -> Report {
    let out = sdu_in(cwd, root, args);
    assert_eq!(out.code, Some(0), "{out:?}");
    let rest: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| !l.contains("bytes of compressed data in"))
        .collect();
    assert!(rest.is_empty(), "{out:?}");
    json::parse(&out.stdout)
}

/// `rel`: `n` bytes of text written at once and fsynced, compressed.
fn text_file(t: &Tree, rel: &str, n: usize, seed: u32) {
    let p = t.p(rel);
    let mut f = fs::File::create_new(&p).unwrap();
    f.write_all(&text(n, seed)).unwrap();
    f.sync_all().unwrap();
}

/// Compressed data (`compress=zstd:3`) in a subvolume `@`: `@/opt/logs`
/// holds three compressed files, all held by a read-only snapshot of `@`
/// outside the scan (and a file not compressed); `@/opt/only` two
/// compressed files, held by the snapshot too; `@/opt/new`, written after
/// the snapshot, a compressed file and its reflink copy. FIEMAP gives each compressed extent its
/// start on disk and its uncompressed length, so that without root one
/// file's extents, and the next file's, overlap. Deleting `@/opt/logs`
/// frees nothing: as root 0 exact, and without root 0 too, not the
/// uncompressed bytes of the extents that chain across two files.
#[test]
fn btrfs_compressed_held_by_a_snapshot() {
    let Some(fs) = Mounted::new(FsKind::Btrfs, "compress=zstd:3") else {
        return;
    };
    let mnt = fs.path();
    let t = Tree { root: mnt };
    subvolume(&t.p("@"));
    for i in 0..3 {
        text_file(
            &t,
            &format!("@/opt/logs/log{i}"),
            1_800_000 + 5_000 * i,
            i as u32,
        );
    }
    t.write("@/opt/logs/random", 2 * M);
    for i in 0..2 {
        text_file(&t, &format!("@/opt/only/log{i}"), 600_000, 10 + i);
    }
    t.dir("snaps");
    ro_snapshot(&t.p("@"), &t.p("snaps/1"));
    text_file(&t, "@/opt/new/log", 1_000_000, 7);
    t.clone("@/opt/new/log", "@/opt/new/copy");
    fs.remount();
    // Each scanned alone: given together, their ranges chain into one unit
    // whose files lie under both, credited to neither.
    let dirs = ["@/opt/logs", "@/opt/new", "@/opt/only"];
    let scan = |root: bool, d: &str| report_noting(mnt, root, &["--json", d]);
    let scans: Vec<_> = dirs.map(|d| (scan(true, d), scan(false, d))).into();
    let mut rows = Vec::new();
    for (d, (root, user)) in dirs.into_iter().zip(&scans) {
        let freed = fs.freed_by(|| fs::remove_dir_all(mnt.join(d)).unwrap());
        rows.push(Row::new(d, entry(root, d), entry(user, d), freed));
    }
    assert_rows("Btrfs, compressed, a snapshot outside the scan", &rows);
    assert_eq!(rows[0].freed, 0, "the tree is not as built");
    assert!(rows[1].freed > 0, "the tree is not as built");
    assert_eq!(rows[0].user.0, 0, "without root, @/opt/logs");
    // Compressed extents alone, each seen once: held outside the scan.
    assert_eq!(rows[2].user, (0, true), "without root, @/opt/only");
}

/// A whole compressed filesystem (`compress=zlib:3`), without root: `b`,
/// 100 KiB in one extent with 56 KiB at 24 KiB rewritten in place, holds
/// 56 KiB nobody references, which FIEMAP does not show; `c`, 60 KiB of
/// zeros in one extent compressed to 4 KiB, is shown at its logical 60
/// KiB, 56 KiB above its size on disk. What the scan saw then adds up to
/// Data Used though an extent is referenced in part: the Data Used proof
/// (`Coverage::proves_whole_extents`) is not taken where a file read has
/// compressed data, and both figures stay marked. (The property test,
/// seeds 551 and 650.)
#[test]
fn btrfs_bookends_beside_compressed_data_whole_filesystem() {
    let Some(fs) = Mounted::new(FsKind::Btrfs, "compress=zlib:3,max_inline=0") else {
        return;
    };
    let mnt = fs.path();
    let t = Tree { root: mnt };
    t.write("b", 100 << 10);
    t.assert_one_extent("b");
    dd(&t.p("b"), "4K", 6, 14);
    let mut c = fs::File::create_new(t.p("c")).unwrap();
    c.write_all(&[0; 60 << 10]).unwrap();
    c.sync_all().unwrap();
    drop(c);
    fs.remount();
    let args = ["--json", "-a", "."];
    let (root, user) = (
        report_noting(mnt, true, &args),
        report_noting(mnt, false, &args),
    );
    let mut rows = Vec::new();
    for f in ["b", "c"] {
        let freed = fs.freed_by(|| fs::remove_file(mnt.join(f)).unwrap());
        let p = format!("./{f}");
        rows.push(Row::new(f, entry(&root, &p), entry(&user, &p), freed));
    }
    assert_eq!(
        rows.iter().map(|r| r.freed).collect::<Vec<_>>(),
        [156 << 10, 4 << 10],
        "the tree is not as built"
    );
    assert_rows("Btrfs, compressed, bookends beside compressed data", &rows);
}

/// A file cloned into itself (FICLONERANGE within one file, held by
/// nothing else), given as PATH with the directory that holds it inside
/// `.`, without root: the scan of `.` proves every extent referenced whole
/// (the Data Used proof), so a unit one file maps twice is its one extent,
/// freed with the file. `d/f` and `d`, in namespaces of their own that
/// do not cover the filesystem, are at most that (an outside reference
/// they cannot see), never an unmarked figure below it.
#[test]
fn btrfs_file_cloned_into_itself_inside_another_path() {
    let Some(fs) = Mounted::new(FsKind::Btrfs, BTRFS_OPTS) else {
        return;
    };
    let mnt = fs.path();
    let t = Tree { root: mnt };
    t.write("d/f", 37 << 12);
    t.write("d/g", 16 << 12);
    t.clone_range("d/f", 6 << 12, "d/f", 37 << 12, 7 << 12);
    fs.remount();
    let args = ["--json", "-c", "-s", "d/f", "d", "."];
    let (root, user) = (report(mnt, true, &args), report(mnt, false, &args));
    let f = fs.freed_by(|| fs::remove_file(mnt.join("d/f")).unwrap());
    let d = f + fs.freed_by(|| fs::remove_dir_all(mnt.join("d")).unwrap());
    assert_eq!((f, d), (37 << 12, 53 << 12), "the tree is not as built");
    let rows: Vec<Row> = [("d/f", f), ("d", d)]
        .map(|(p, freed)| Row::new(p, entry(&root, p), entry(&user, p), freed))
        .into();
    assert_rows(
        "Btrfs, a file cloned into itself, inside another PATH",
        &rows,
    );
}

/// The random trees of `exact` over the seeds of `SDU_SEEDS` (`A..B`, B
/// excluded; 1..41 unless set), asserted as there, with how many figures
/// without root are marked and how many of those were in fact what
/// deleting freed (`docs/guide.md`, how often a user sees a mark). A bench:
/// `SDU_SEEDS=1..201 cargo test --test sdu -- --ignored random_trees_marks
/// --nocapture`.
#[test]
#[ignore = "a bench: minutes"]
fn btrfs_random_trees_marks() {
    let seeds = std::env::var("SDU_SEEDS").unwrap_or_else(|_| "1..41".into());
    let (a, b) = seeds.split_once("..").expect("SDU_SEEDS: A..B");
    let (a, b): (u64, u64) = (a.parse().unwrap(), b.parse().unwrap());
    let mut rows = Vec::new();
    for seed in a..b {
        let Some(row) = crate::exact::random_case(seed) else {
            return;
        };
        rows.push(row);
    }
    let marked = rows.iter().filter(|r| !r.user.1).count();
    let needless = rows
        .iter()
        .filter(|r| !r.user.1 && r.user.0 == r.freed)
        .count();
    println!(
        "{} trees: {marked} marked without root, {needless} of them in fact exact",
        rows.len()
    );
    // By direction: how many marks, and how many of them below, equal to
    // and above what deleting freed.
    let mut by: std::collections::BTreeMap<&str, [usize; 3]> = Default::default();
    for r in rows.iter().filter(|r| !r.user.1) {
        let side = match r.user.0.cmp(&r.freed) {
            std::cmp::Ordering::Less => 0,
            std::cmp::Ordering::Equal => 1,
            std::cmp::Ordering::Greater => 2,
        };
        by.entry(r.user_bound.as_deref().unwrap_or("?"))
            .or_default()[side] += 1;
    }
    for (b, [below, equal, above]) in by {
        println!("  {b}: {below} below, {equal} equal, {above} above what deleting freed");
    }
    assert_rows("Btrfs, random trees (case, scan, tree)", &rows);
}
