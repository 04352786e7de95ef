//! `reclaimable` checked against the filesystem itself, as
//! docs/figures.md ("How the figures are checked") defines it: delete the
//! directory and measure what the filesystem freed.
//!
//! Every case is one directory D of a tree with known sharing, built on a
//! fresh loopback filesystem: sdu scans the whole filesystem (from the
//! mount point, so that every reference to the data is in the scan and the
//! figure is exact, docs/figures.md "Reclaimable"), then D is deleted and the
//! used space measured before and after. Each case asserts two things:
//!
//! - `freed == want`: the filesystem freed what the tree's construction
//!   says (written down per case below). A failure here is the test's, not
//!   sdu's: the tree is not what the comments say.
//! - `reclaimable == freed`: sdu's figure of D is what deleting D freed.
//!
//! How the used space is measured, and why it is exact:
//!
//! - **XFS**: `(f_blocks − f_bfree) × f_frsize` of statvfs. XFS frees the
//!   blocks of an unlinked inode in the background (deferred inode
//!   inactivation, Linux 5.14 on), and neither statfs nor syncfs waits for
//!   it. Measured on this kernel: right after unlinking a file of 20,000
//!   extents, statvfs, then syncfs and statvfs, still counted its 20,000
//!   blocks as used; half a second later they were free. Unmounting does
//!   wait for it (and for every deferred extent free), so each measurement
//!   is an unmount and mount, then syncfs and statvfs, repeated until two
//!   readings 25 ms apart agree. A remount moves nothing by itself (the
//!   figure is the same before and after one). The mount has
//!   `allocsize=4k`, so no speculative preallocation past EOF, and the
//!   remount after the build drops what is left of copy-on-write staging
//!   extents (the CoW fork), which a deletion would free and st_blocks
//!   need not count.
//!   Two kinds of metadata could still move free space without being in any
//!   `st_blocks`, and the trees are built so that neither can:
//!   * an **inode chunk** (64 inodes, 32 KiB here) is freed when its last
//!     inode goes. Directories are spread over the allocation groups and
//!     files follow their directory, so a directory D can own a whole
//!     chunk (without the pins below, deleting `t` frees 3 × 32 KiB more
//!     than its blocks). `p0`..`p3`, one empty directory in each of the 4
//!     allocation groups, keep every chunk alive; `xfs_preconditions`
//!     checks, from the inode numbers, that each chunk holding an inode
//!     under D also holds one that stays.
//!   * a **parent directory** that loses D's entry could shrink (a block
//!     directory going back to short form); every parent here is short
//!     form (no blocks), also checked. D's own directory blocks are in
//!     st_blocks, so in sdu's `total` and `reclaimable`, and they are
//!     freed with D: they are part of `want` (the one directory with
//!     blocks, `wide`, has them on purpose).
//!
//!   The btrees a deletion updates (free space, inodes, reference counts)
//!   stay one block each in trees this small, so none grows or shrinks;
//!   that `freed` equals `want` to the byte in every case shows that
//!   nothing else moved either.
//! - **Btrfs**: the `Used` of the Data line of `btrfs filesystem usage -b`
//!   after `btrfs filesystem sync` (a transaction commit, which runs the
//!   delayed references that free extents), again after an unmount and
//!   mount, read until two readings agree. A snapshot is deleted with
//!   `btrfs subvolume delete -C` (which commits, and so wakes the cleaner)
//!   and `btrfs subvolume sync` (which waits for the cleaner to drop the
//!   whole snapshot tree). Data Used counts data
//!   extents only: directories there have no `st_blocks` (checked), and
//!   the mount has `max_inline=0`, so that no file is stored inline in
//!   metadata (which sdu counts and Data Used does not). No compression.
//!
//! On Btrfs an extent referenced in part stays whole on disk. As root (the
//! tree search, which the suite runs as) sdu reads each extent's size on
//! disk and is exact there too (`btrfs_partly_overwritten_extent_is_freed_whole`,
//! `btrfs_halves_of_one_extent`); without root FIEMAP shows only the
//! referenced ranges, and docs/limits.md says where the
//! figure differs: each Btrfs row also holds sdu's figure without
//! `CAP_SYS_ADMIN`, and those tests assert it as documented.

use std::fmt::Write as _;
use std::fs::{self, File};
use std::path::Path;
use std::process::Command;

use crate::args;
use crate::json::{Entry, Kind};
use crate::util::*;

const K: u64 = 1024;
/// The block size of both filesystems (mkfs's default at 512 MiB).
const BLK: u64 = 4096;

// ---------------------------------------------------------------------------
// Delete and measure

enum Delete {
    /// `std::fs::remove_dir_all`.
    Tree,
    /// `btrfs subvolume delete -C` and `btrfs subvolume sync`.
    Subvolume,
}

/// A directory to delete, relative to the mount point, and the bytes the
/// tree's construction says its deletion frees (data only: on XFS the
/// directories' own blocks are added from their `st_blocks`).
struct Case {
    rel: &'static str,
    want: u64,
    delete: Delete,
}

const fn case(rel: &'static str, want: u64) -> Case {
    Case {
        rel,
        want,
        delete: Delete::Tree,
    }
}

/// One case's outcome: sdu's entry for the directory and what its deletion
/// freed.
struct Row {
    rel: &'static str,
    sdu: Entry,
    /// On Btrfs, sdu's entry without `CAP_SYS_ADMIN` (FIEMAP).
    fiemap: Option<Entry>,
    freed: u64,
    want: u64,
}

/// On a fresh filesystem of `kind` mounted with `opts`, builds the tree,
/// settles it, takes sdu's figures of `case.rel` from a scan of the whole
/// filesystem, deletes it and measures what was freed. None when the
/// filesystem cannot be made (and not in CI).
fn delete_and_measure(
    kind: FsKind,
    opts: &'static str,
    build: fn(&Tree),
    case: &Case,
) -> Option<Row> {
    let fs = Mounted::new(kind, opts)?;
    let mnt = fs.path();
    build(&Tree { root: mnt });
    // Delalloc written, speculative and copy-on-write preallocations gone,
    // so that st_blocks (sdu's figures) and the allocation agree.
    fs.remount();
    let d = mnt.join(case.rel);
    let dir_bytes = match kind {
        FsKind::Xfs => xfs_preconditions(mnt, &d),
        _ => {
            btrfs_preconditions(&d);
            0
        }
    };
    if kind == FsKind::Btrfs {
        assert_search_matches_fiemap(mnt);
    }
    let entry = |r: crate::json::Report| {
        r.entries
            .into_iter()
            .find(|e| e.kind == Kind::Dir && Path::new(&e.path) == d)
            .unwrap_or_else(|| panic!("sdu did not report {}", d.display()))
    };
    let sdu = entry(sdu_json(&args![mnt]));
    let fiemap = (kind == FsKind::Btrfs).then(|| {
        crate::btrfs::assert_setpriv_drops_sys_admin();
        let out = crate::btrfs::sdu_unprivileged(&["--json"], mnt);
        assert_eq!((out.code, out.stderr.as_str()), (Some(0), ""), "{out:?}");
        entry(crate::json::parse(&out.stdout))
    });
    let before = fs.settled_used();
    match case.delete {
        Delete::Tree => fs::remove_dir_all(&d).unwrap(),
        Delete::Subvolume => {
            // Without the commit (-C), `subvolume sync` waits for the next
            // periodic one (30 s) before the cleaner starts.
            btrfs(&["subvolume", "delete", "-C"], &d);
            btrfs(&["subvolume", "sync"], mnt);
        }
    }
    let after = fs.settled_used();
    let freed = before.checked_sub(after).unwrap_or_else(|| {
        panic!(
            "deleting {} made the used space grow: {before} -> {after}",
            case.rel
        )
    });
    Some(Row {
        rel: case.rel,
        sdu,
        fiemap,
        freed,
        want: case.want + dir_bytes,
    })
}

/// Runs every case on a filesystem of its own; None when the filesystem
/// cannot be made (and not in CI).
fn measure_all(
    kind: FsKind,
    opts: &'static str,
    build: fn(&Tree),
    cases: &[Case],
) -> Option<Vec<Row>> {
    cases
        .iter()
        .map(|c| delete_and_measure(kind, opts, build, c))
        .collect()
}

/// The rows as a table (printed by every test; `--nocapture` shows it).
fn table(title: &str, rows: &[Row]) -> String {
    let w = rows.iter().map(|r| r.rel.len()).max().unwrap_or(4).max(4);
    let mut t = format!(
        "{title}\n{:w$}  {:>9}  {:>9}  {:>9}  {:>11}  {:>9}  {:>9}  {:>9}\n",
        "dir", "total", "exclusive", "shared", "reclaimable", "freed", "want", "no root"
    );
    for r in rows {
        let e = &r.sdu;
        let _ = writeln!(
            t,
            "{:w$}  {:>9}  {:>9}  {:>9}  {:>11}  {:>9}  {:>9}  {:>9}",
            r.rel,
            e.total,
            e.exclusive,
            e.shared,
            e.reclaimable,
            r.freed,
            r.want,
            r.fiemap
                .as_ref()
                .map_or("-".to_string(), |f| f.reclaimable.to_string())
        );
    }
    t
}

/// Every row: the filesystem freed what the construction says, and sdu's
/// `reclaimable` is exactly that. Also that the cases are meaningful: the
/// check would catch `reclaimable` confused with `total` or `exclusive`.
fn assert_exact(title: &str, rows: &[Row]) {
    let t = table(title, rows);
    println!("{t}");
    let tree: Vec<&str> = rows
        .iter()
        .filter(|r| r.freed != r.want)
        .map(|r| r.rel)
        .collect();
    assert!(
        tree.is_empty(),
        "the filesystem did not free what the tree's construction says for {tree:?} \
         (a test bug, not sdu's):\n{t}"
    );
    let bad: Vec<&str> = rows
        .iter()
        .filter(|r| r.sdu.reclaimable != r.freed)
        .map(|r| r.rel)
        .collect();
    assert!(
        bad.is_empty(),
        "sdu's reclaimable is not what deleting the directory freed for {bad:?}:\n{t}"
    );
    assert!(
        rows.iter().any(|r| r.freed != r.sdu.total)
            && rows.iter().any(|r| r.freed != r.sdu.exclusive)
            && rows.iter().any(|r| r.freed == 0 && r.sdu.total > 0),
        "the cases cannot tell reclaimable from total or exclusive:\n{t}"
    );
}

// ---------------------------------------------------------------------------
// XFS

pub(crate) const XFS_OPTS: &str = "allocsize=4k";

/// The XFS tree (block counts are 4 KiB blocks):
///
/// ```text
/// p0/ p1/ p2/ p3/  empty, made first: one directory inode in each allocation group
/// t/
///   a/ orig (8)  same (FICLONE of orig: a clone inside the directory)
///      whole (4)  rng (4, then orig 6..7 cloned at 4..5: FICLONERANGE)
///      solo (3)  solo2 (FICLONE of solo)
///   b/ clone (FICLONE of a/whole: a whole-file clone in another directory)
///      part (5, then orig 2..4 cloned over 1..3: a partial clone)
///      cow (FICLONE of a/orig, blocks 0..1 overwritten)
///      self (4, then its own 0..1 cloned at 4..5)  link_h (= h/cross)
///   three/ x/s3 (5)  y/s3  z/s3 (FICLONEs of x/s3: shared three ways)
///   h/ in1 (3)  in2 (= in1)  cross (6; also b/link_h)
///   plain/ one (1 byte)  mid (10,000 bytes)  big (1 MiB + 1)  empty
///          sparse (4 MiB long: 2 blocks at 1 MiB, 1 at 3 MiB)
///          sub/ f (20,000 bytes)  deeper/ leaf (5,000 bytes)
///   wide/ e (empty) and 150 long-named hardlinks of it: a directory with
///         blocks of its own, whose inodes fit one chunk
/// ```
fn build_xfs(t: &Tree) {
    for p in ["p0", "p1", "p2", "p3"] {
        t.dir(p);
    }
    let b = BLK;
    t.write("t/a/orig", 8 * b);
    t.clone("t/a/orig", "t/a/same");
    t.write("t/a/whole", 4 * b);
    t.write("t/a/rng", 4 * b);
    t.clone_range("t/a/orig", 6 * b, "t/a/rng", 4 * b, 2 * b);
    t.write("t/a/solo", 3 * b);
    t.clone("t/a/solo", "t/a/solo2");

    t.clone("t/a/whole", "t/b/clone");
    t.write("t/b/part", 5 * b);
    t.clone_range("t/a/orig", 2 * b, "t/b/part", b, 3 * b);
    t.clone("t/a/orig", "t/b/cow");
    t.overwrite("t/b/cow", 0, 2 * b);
    t.write("t/b/self", 4 * b);
    t.clone_range("t/b/self", 0, "t/b/self", 4 * b, 2 * b);

    t.write("t/three/x/s3", 5 * b);
    t.clone("t/three/x/s3", "t/three/y/s3");
    t.clone("t/three/x/s3", "t/three/z/s3");

    t.write("t/h/in1", 3 * b);
    t.link("t/h/in1", "t/h/in2");
    t.write("t/h/cross", 6 * b);
    t.link("t/h/cross", "t/b/link_h");

    plain_dir(t);

    File::create_new(t.p("t/wide/e")).unwrap();
    for i in 0..150 {
        t.link(
            "t/wide/e",
            &format!("t/wide/a_long_name_so_that_the_directory_needs_blocks_{i:03}"),
        );
    }
}

/// `t/plain`, the same on both filesystems: 271 blocks of data, 7 of them
/// under `sub`.
fn plain_dir(t: &Tree) {
    t.write("t/plain/one", 1);
    t.write("t/plain/mid", 10_000);
    t.write("t/plain/big", (1 << 20) + 1);
    t.write("t/plain/empty", 0);
    t.sparse(
        "t/plain/sparse",
        4 << 20,
        &[(1 << 20, 2 * BLK), (3 << 20, BLK)],
    );
    t.write("t/plain/sub/f", 20_000);
    t.write("t/plain/sub/deeper/leaf", 5_000);
}

/// What deleting each directory of `build_xfs` frees (XFS frees per block,
/// with the block's last reference):
///
/// - a: orig 0..1 (only orig and same map them; b maps 2..7 through part
///   and cow), rng's own 4, solo's 3; whole stays (b/clone).
/// - b: part's own 2, cow's own 2, self's 4; clone, the cloned blocks and
///   link_h (a link of h/cross) stay.
/// - three/x: nothing (y and z); three: s3's 5 blocks.
/// - h: in1's 3; cross stays (b/link_h).
/// - plain: 1 + 3 + 257 + 0 + 3 + 5 + 2 blocks; plain/sub: 5 + 2.
/// - wide: its directory blocks only.
/// - t: every block written: 19 (a) + 8 (b) + 5 + 9 (h) + 271.
const XFS_CASES: [Case; 10] = [
    case("t/a", 9 * BLK),
    case("t/b", 8 * BLK),
    case("t/three/x", 0),
    case("t/three", 5 * BLK),
    case("t/h", 3 * BLK),
    case("t/plain", 271 * BLK),
    case("t/plain/sub", 7 * BLK),
    case("t/plain/sub/deeper", 2 * BLK),
    case("t/wide", 0),
    case("t", 312 * BLK),
];

/// On XFS (reflink, per-block reference counts) `reclaimable` is exactly
/// what deleting the directory frees, for every directory of the tree.
#[test]
fn xfs_reclaimable_is_what_deleting_frees() {
    let Some(rows) = measure_all(FsKind::Xfs, XFS_OPTS, build_xfs, &XFS_CASES) else {
        return;
    };
    assert_exact(
        "XFS: sdu's figures and what deleting each directory freed",
        &rows,
    );
    let wide = rows.iter().find(|r| r.rel == "t/wide").unwrap();
    assert!(wide.freed > 0, "t/wide has no directory blocks");
}

// ---------------------------------------------------------------------------
// Btrfs

pub(crate) const BTRFS_OPTS: &str = "max_inline=0";

/// The Btrfs tree (sizes in KiB; every file written at once, one extent):
///
/// ```text
/// t/
///   a/ orig (256)  same (FICLONE of orig)  whole (128)
///      rng (64, then orig 192..256 cloned at 64)  solo (32)  solo2 (FICLONE of solo)
///   b/ clone (FICLONE of a/whole)  part (orig 64..128 cloned into a new file)
///      own (20,000 bytes)  link_h (= h/cross)
///   k/ keep (256)
///   l/ lhalf (FICLONE of k/keep, then 0..128 overwritten: it holds the
///      second half of keep's extent and 128 of its own)
///   three/ x/s3 (48)  y/s3  z/s3 (FICLONEs of x/s3)
///   h/ in1 (40)  in2 (= in1)  cross (60; also b/link_h)
///   plain/ as on XFS
/// ```
fn build_btrfs(t: &Tree) {
    t.write("t/a/orig", 256 * K);
    t.assert_one_extent("t/a/orig");
    t.clone("t/a/orig", "t/a/same");
    t.write("t/a/whole", 128 * K);
    t.write("t/a/rng", 64 * K);
    t.clone_range("t/a/orig", 192 * K, "t/a/rng", 64 * K, 64 * K);
    t.write("t/a/solo", 32 * K);
    t.clone("t/a/solo", "t/a/solo2");

    t.clone("t/a/whole", "t/b/clone");
    t.clone_range("t/a/orig", 64 * K, "t/b/part", 0, 64 * K);
    t.write("t/b/own", 20_000);

    t.write("t/k/keep", 256 * K);
    t.assert_one_extent("t/k/keep");
    t.clone("t/k/keep", "t/l/lhalf");
    t.overwrite("t/l/lhalf", 0, 128 * K);

    t.write("t/three/x/s3", 48 * K);
    t.clone("t/three/x/s3", "t/three/y/s3");
    t.clone("t/three/x/s3", "t/three/z/s3");

    t.write("t/h/in1", 40 * K);
    t.link("t/h/in1", "t/h/in2");
    t.write("t/h/cross", 60 * K);
    t.link("t/h/cross", "t/b/link_h");

    plain_dir(t);
}

/// What deleting each directory of `build_btrfs` frees (Btrfs frees an
/// extent whole, with its last reference, even a reference to part of it):
///
/// - a: rng's own 64 and solo's 32; orig's extent stays (b/part holds a
///   quarter of it), whole's too (b/clone).
/// - b: own (5 blocks); clone, part and link_h keep nothing alive alone.
/// - k: nothing: l/lhalf still holds half of keep's extent, so all of it
///   stays (a file keeping a partly overwritten extent alive).
/// - l: lhalf's own 128; keep's extent stays (k/keep).
/// - three/x: nothing; three: 48. h: in1's 40 (cross stays).
/// - plain: 271 blocks, plain/sub 7, plain/sub/deeper 2, as on XFS.
/// - t: everything: 480 (a) + 20,480 bytes (b) + 384 (k, l) + 48 + 100 (h)
///   + the 271 blocks of plain.
const BTRFS_CASES: [Case; 11] = [
    case("t/a", 96 * K),
    case("t/b", 5 * BLK),
    case("t/k", 0),
    case("t/l", 128 * K),
    case("t/three/x", 0),
    case("t/three", 48 * K),
    case("t/h", 40 * K),
    case("t/plain", 271 * BLK),
    case("t/plain/sub", 7 * BLK),
    case("t/plain/sub/deeper", 2 * BLK),
    case("t", (480 + 384 + 48 + 100) * K + 5 * BLK + 271 * BLK),
];

/// On Btrfs (uncompressed, nothing inline) `reclaimable` is exactly the
/// drop in Data Used when the directory is deleted, for every directory of
/// a tree whose extents are each referenced whole or where a partial
/// reference keeps the extent alive.
#[test]
fn btrfs_reclaimable_is_what_deleting_frees() {
    let Some(rows) = measure_all(FsKind::Btrfs, BTRFS_OPTS, build_btrfs, &BTRFS_CASES) else {
        return;
    };
    assert_exact(
        "Btrfs: sdu's figures and the drop in Data Used when each directory is deleted",
        &rows,
    );
}

/// ```text
/// vol/ (subvolume) f1 (200)  d/f2 (40)  d/f2c (FICLONE of f2)
///      big (256)  div (128)  gone (60)  pair (36)  pairc (FICLONE of pair)
/// snap/ (snapshot of vol, taken here)
/// then, in vol: div, pair and pairc wholly overwritten, big's first 64
///      overwritten, gone removed, new (32) written
/// ```
fn build_snapshot(t: &Tree) {
    btrfs(&["subvolume", "create"], &t.p("vol"));
    t.write("vol/f1", 200 * K);
    t.write("vol/d/f2", 40 * K);
    t.clone("vol/d/f2", "vol/d/f2c");
    t.write("vol/big", 256 * K);
    t.assert_one_extent("vol/big");
    t.write("vol/div", 128 * K);
    t.write("vol/gone", 60 * K);
    t.write("vol/pair", 36 * K);
    t.clone("vol/pair", "vol/pairc");
    run(Command::new("btrfs")
        .args(["subvolume", "snapshot"])
        .arg(t.p("vol"))
        .arg(t.p("snap")))
    .assert_ok();
    t.overwrite("vol/div", 0, 128 * K);
    t.overwrite("vol/pair", 0, 36 * K);
    t.overwrite("vol/pairc", 0, 36 * K);
    t.overwrite("vol/big", 0, 64 * K);
    fs::remove_file(t.p("vol/gone")).unwrap();
    t.write("vol/new", 32 * K);
}

/// A snapshot, and its origin after they diverged, each deleted as a
/// subvolume (on a filesystem of its own) with the whole mount scanned:
/// `reclaimable` is the drop in Data Used.
///
/// - snap frees div's old extent (128) and gone's (60), which only it
///   still references, and pair's old extent (36), which its pair and
///   pairc both map: shared, but within snap alone, so its reclaimable is
///   more than its exclusive. big's extent stays (vol/big holds 192 of
///   it), and f1, f2 and f2c are vol's too.
/// - vol frees what it wrote after the snapshot: div's new 128, big's new
///   64, pair's and pairc's new 36 each, new's 32; everything else is the
///   snapshot's too.
#[test]
fn btrfs_snapshot_reclaimable_is_what_deleting_frees() {
    let cases = [
        Case {
            rel: "snap",
            want: (128 + 60 + 36) * K,
            delete: Delete::Subvolume,
        },
        Case {
            rel: "vol",
            want: (128 + 64 + 36 + 36 + 32) * K,
            delete: Delete::Subvolume,
        },
    ];
    let Some(rows) = measure_all(FsKind::Btrfs, BTRFS_OPTS, build_snapshot, &cases) else {
        return;
    };
    let t = table(
        "Btrfs snapshot: sdu's figures and the drop in Data Used",
        &rows,
    );
    println!("{t}");
    // Not `assert_exact`, which wants a case that frees nothing.
    assert!(
        rows[0].sdu.reclaimable > rows[0].sdu.exclusive,
        "snap: nothing shared that it alone holds:\n{t}"
    );
    for r in &rows {
        assert!(
            r.sdu.shared > 0 && r.sdu.reclaimable < r.sdu.total,
            "{}: nothing shared between the snapshot and its origin:\n{t}",
            r.rel
        );
        assert_eq!(
            r.freed, r.want,
            "the tree is not as built (a test bug):\n{t}"
        );
        assert_eq!(
            r.sdu.reclaimable, r.freed,
            "{}: sdu's reclaimable is not the drop in Data Used:\n{t}",
            r.rel
        );
    }
}

/// Two halves of one on-disk extent held by different files:
///
/// ```text
/// t/f/full (256, one extent E), whose second half was first cloned into
///     t/g/g1 and t/g/g2 and then overwritten in full (128 of its own)
/// ```
///
/// FIEMAP shows full's half of E and g's half as two touching ranges, which
/// sdu without root takes for two extents (two units).
fn build_halves(t: &Tree) {
    t.write("t/f/full", 256 * K);
    t.assert_one_extent("t/f/full");
    t.clone_range("t/f/full", 128 * K, "t/g/g1", 0, 128 * K);
    t.clone_range("t/f/full", 128 * K, "t/g/g2", 0, 128 * K);
    t.overwrite("t/f/full", 128 * K, 128 * K);
}

/// As root sdu reads E's bounds: one unit, the whole extent, held by full,
/// g1 and g2, so deleting g frees nothing (full still holds E) and
/// deleting f frees full's own 128. Both exact.
///
/// Without root, the documented limit (docs/limits.md,
/// "Btrfs, halves of one extent"): sdu takes g's half of E for an extent
/// of its own, held by g1 and g2 alone, so it says deleting g frees 128
/// KiB; `reclaimable` overstates by exactly g's half. Deleting f is exact
/// there too.
#[test]
fn btrfs_halves_of_one_extent_exact_as_root_overstated_without() {
    let cases = [case("t/f", 128 * K), case("t/g", 0)];
    let Some(rows) = measure_all(FsKind::Btrfs, BTRFS_OPTS, build_halves, &cases) else {
        return;
    };
    let t = table("Btrfs, halves of one extent: sdu and Data Used", &rows);
    println!("{t}");
    let (f, g) = (&rows[0], &rows[1]);
    assert!(
        f.freed == f.want && g.freed == g.want,
        "the tree is not as built:\n{t}"
    );
    for r in &rows {
        assert_eq!(r.sdu.reclaimable, r.freed, "{} as root:\n{t}", r.rel);
    }
    let unprivileged = |r: &Row| r.fiemap.as_ref().unwrap().reclaimable;
    assert_eq!(unprivileged(f), f.freed, "t/f without root:\n{t}");
    assert_eq!(
        unprivileged(g),
        g.freed + 128 * K,
        "t/g without root: the documented overstatement is g's half of the extent, 128 KiB:\n{t}"
    );
}

/// A file holding part of an extent whose other part was overwritten:
///
/// ```text
/// t/w/whole (256, one extent E), then its first 128 overwritten
/// ```
///
/// `whole` maps 128 of its own and the second half of E, so its st_blocks
/// (du's total, and sdu's) is 256 KiB; but E stays whole on disk until its
/// last reference goes, so deleting it frees 384.
fn build_bookend(t: &Tree) {
    t.write("t/w/whole", 256 * K);
    t.assert_one_extent("t/w/whole");
    t.overwrite("t/w/whole", 0, 128 * K);
}

/// A prealloc extent of 1 MiB, 256 KiB written in place at 256 KiB (in
/// the extent: no new one), then 512..768 KiB punched out: st_blocks 768
/// KiB, the extent stays whole.
fn build_prealloc(t: &Tree) {
    run(Command::new("xfs_io")
        .args(["-f", "-c", "falloc 0 1m", "-c", "pwrite -q 256k 256k"])
        .args(["-c", "fsync", "-c", "fpunch 512k 256k", "-c", "fsync"])
        .arg(t.p("t/p/f")))
    .assert_ok();
}

/// Extents referenced in part, freed whole:
///
/// - `t/w` of `build_bookend`: one unshared file, part of whose extent was
///   overwritten. Deleting it frees 384 KiB; as root sdu counts E at its
///   size on disk: `exclusive` and `reclaimable` 384, `total` du's 256.
/// - `t` of `build_halves`: deleting everything frees 384 KiB (E and
///   full's own 128); as root E is one unit held by all three files.
/// - `t/p` of `build_prealloc`: a prealloc extent with a hole punched in
///   it, the same rule: it frees 1 MiB.
///
/// Without root the figure understates, the documented limit
/// (docs/limits.md, "Btrfs, an extent partly
/// overwritten"): FIEMAP shows only the referenced ranges, so sdu says 256
/// for the first two (for `t`, full's half of E is a unit referenced once
/// in the scan, so "shared with something outside the scan"), 768 for
/// `t/p`.
#[test]
fn btrfs_partly_overwritten_extent_is_freed_whole() {
    let mut rows = Vec::new();
    let mut no_root = Vec::new();
    for (build, c, n) in [
        (build_bookend as fn(&Tree), case("t/w", 384 * K), 256 * K),
        (build_halves, case("t", 384 * K), 256 * K),
        (build_prealloc, case("t/p", 1024 * K), 768 * K),
    ] {
        let Some(r) = delete_and_measure(FsKind::Btrfs, BTRFS_OPTS, build, &c) else {
            return;
        };
        rows.push(r);
        no_root.push(n);
    }
    let t = table(
        "Btrfs, partly overwritten extents: sdu and Data Used",
        &rows,
    );
    println!("{t}");
    for (r, n) in rows.iter().zip(no_root) {
        assert_eq!(r.freed, r.want, "{}: the tree is not as built:\n{t}", r.rel);
        assert_eq!(
            r.sdu.reclaimable, r.freed,
            "{}: sdu's reclaimable as root is not the drop in Data Used:\n{t}",
            r.rel
        );
        let fiemap = r.fiemap.as_ref().unwrap();
        assert_eq!(
            fiemap.reclaimable, n,
            "{}: without root, the documented understatement (the referenced bytes):\n{t}",
            r.rel
        );
    }
    let w = &rows[0].sdu;
    assert_eq!(
        (w.total, w.exclusive, w.shared),
        (256 * K, 384 * K, 0),
        "t/w:\n{t}"
    );
}

/// Past the PATHs whose fds the walk holds (64), a PATH is resolved again
/// at its turn and no filesystem is claimed to be covered whole: the same
/// directories of `build_xfs`, scanned as the 70th PATH (the filesystem
/// itself) after 69 others, give each Reclaimable exact and equal to what
/// deleting the directory frees, or marked as a bound, never a wrong figure
/// shown as exact; and as the only PATH, exact.
#[test]
fn xfs_reclaimable_past_the_held_paths_is_exact_or_marked() {
    let Some(fs) = Mounted::new(FsKind::Xfs, XFS_OPTS) else {
        return;
    };
    let mnt = fs.path();
    build_xfs(&Tree { root: mnt });
    for i in 0..69 {
        fs::create_dir_all(mnt.join(format!("pad/{i:02}"))).unwrap();
    }
    fs.remount();
    let d = mnt.join("t/a");
    let dir_bytes = xfs_preconditions(mnt, &d);
    let mut many: Vec<std::ffi::OsString> = (0..69)
        .map(|i| mnt.join(format!("pad/{i:02}")).into_os_string())
        .collect();
    many.push(mnt.as_os_str().to_owned());
    let entry = |r: crate::json::Report| {
        r.entries
            .into_iter()
            .find(|e| e.kind == Kind::Dir && Path::new(&e.path) == d)
            .unwrap_or_else(|| panic!("sdu did not report {}", d.display()))
    };
    let past = entry(sdu_json(&many));
    let alone = entry(sdu_json(&args![mnt]));
    let before = fs.settled_used();
    fs::remove_dir_all(&d).unwrap();
    let freed = before - fs.settled_used();
    assert_eq!(freed, 9 * BLK + dir_bytes, "a test bug, not sdu's");
    assert!(
        alone.reclaimable_exact && alone.reclaimable == freed,
        "{alone:?}, freed {freed}"
    );
    assert!(
        !past.reclaimable_exact || past.reclaimable == freed,
        "shown as exact: {past:?}, freed {freed}"
    );
    assert_eq!((past.total, past.exclusive), (alone.total, alone.exclusive));
}
