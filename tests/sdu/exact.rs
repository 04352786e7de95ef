//! Reclaimable exact or a bound (docs/figures.md, "Exact or a bound"),
//! each figure checked against the filesystem itself: scan, delete, and
//! measure what the filesystem freed (`reclaim`'s module comment says how
//! and why the measurement is exact).
//!
//! Every case scans a directory that does not hold every reference to its
//! data (a snapshot, a reflink copy or an excluded entry outside it), as
//! root and without `CAP_SYS_ADMIN`, and asserts:
//!
//! - as root, where the filesystem can say who else holds each range
//!   (Btrfs `LOGICAL_INO`, XFS `GETFSMAP` with rmapbt): `reclaimable` is
//!   what deleting frees and `reclaimable_exact` is true;
//! - without root (or XFS without rmapbt): wherever the figure is not the
//!   freed bytes, `reclaimable_exact` is false; a scan of the whole
//!   filesystem of a tree without extents referenced in part is exact
//!   everywhere (no false alarm).

use std::fmt::Write as _;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

use crate::btrfs::{assert_setpriv_drops_sys_admin, ro_snapshot, subvolume};
use crate::exact_random::build::join_rel;
use crate::json::{self, Entry, Report};
use crate::reclaim::{BTRFS_OPTS, XFS_OPTS};
use crate::util::*;

pub(crate) const K: u64 = 1024;
pub(crate) const M: u64 = 1 << 20;

// ---------------------------------------------------------------------------
// Running sdu, and the figures of a case

/// The JSON report of a run that must succeed without a word on stderr.
pub(crate) fn report(cwd: &Path, root: bool, args: &[&str]) -> Report {
    let out = sdu_in(cwd, root, args);
    assert_eq!((out.code, out.stderr.as_str()), (Some(0), ""), "{out:?}");
    json::parse(&out.stdout)
}

/// The entry of `path` (as sdu prints it).
pub(crate) fn entry<'a>(r: &'a Report, path: &str) -> &'a Entry {
    r.entries
        .iter()
        .find(|e| e.path == path)
        .unwrap_or_else(|| panic!("no entry {path} in {r:?}"))
}

/// One scanned directory: sdu's Reclaimable and its mark as root and
/// without root, and what deleting it freed.
pub(crate) struct Row {
    pub(crate) what: String,
    pub(crate) root: (u64, bool),
    pub(crate) user: (u64, bool),
    /// The direction of the figure without root, when a bound.
    pub(crate) user_bound: Option<String>,
    pub(crate) freed: u64,
}

impl Row {
    pub(crate) fn new(what: &str, root: &Entry, user: &Entry, freed: u64) -> Row {
        Row {
            what: what.to_owned(),
            root: (root.reclaimable, root.reclaimable_exact),
            user: (user.reclaimable, user.reclaimable_exact),
            user_bound: user.reclaimable_bound.clone(),
            freed,
        }
    }
}

pub(crate) fn table(title: &str, rows: &[Row]) -> String {
    let w = rows.iter().map(|r| r.what.len()).max().unwrap_or(4).max(4);
    let mut t = format!(
        "{title}\n{:w$}  {:>10} {:5}  {:>10} {:5}  {:>10}\n",
        "case", "root", "exact", "no root", "exact", "freed"
    );
    for r in rows {
        let _ = writeln!(
            t,
            "{:w$}  {:>10} {:5}  {:>10} {:5}  {:>10}",
            r.what, r.root.0, r.root.1, r.user.0, r.user.1, r.freed
        );
    }
    t
}

/// As root every figure is the freed bytes, and exact; without root a
/// figure that is not is marked, in the direction it errs.
pub(crate) fn assert_rows(title: &str, rows: &[Row]) {
    let t = table(title, rows);
    println!("{t}");
    for r in rows {
        assert_eq!(
            r.root,
            (r.freed, true),
            "{}: as root, Reclaimable is not exactly what deleting freed:\n{t}",
            r.what
        );
        assert!(
            r.user.0 == r.freed || !r.user.1,
            "{}: without root, a figure that is not the freed bytes is called exact:\n{t}",
            r.what
        );
        let direction = match r.user_bound.as_deref() {
            Some("at_least") => r.user.0 <= r.freed,
            Some("at_most") => r.user.0 >= r.freed,
            _ => true,
        };
        assert!(
            direction,
            "{}: without root, marked {:?} on the wrong side of the freed bytes:\n{t}",
            r.what, r.user_bound
        );
    }
}

/// Deletes the Btrfs subvolumes `subvols` (deepest first), and waits for
/// the cleaner.
pub(crate) fn delete_subvolumes(mnt: &Path, subvols: &[&str]) {
    for s in subvols {
        btrfs(&["subvolume", "delete", "-C"], &mnt.join(s));
    }
    btrfs(&["subvolume", "sync"], mnt);
}

/// A scan of the whole filesystem from its mount point, without root:
/// every entry exact, with root's figures. Returns what either run said on
/// stderr (the caller asserts it empty last, so that a stray warning does
/// not hide the figures).
fn assert_whole_fs_exact_without_root(mnt: &Path) -> String {
    let run = |root: bool| {
        let out = sdu_in(mnt, root, &["--json", "."]);
        assert_eq!(out.code, Some(0), "{out:?}");
        (json::parse(&out.stdout), out.stderr)
    };
    let ((root, e1), (user, e2)) = (run(true), run(false));
    let bad: Vec<String> = user
        .entries
        .iter()
        .filter(|e| !e.reclaimable_exact || entry(&root, &e.path.to_string_lossy()) != *e)
        .map(|e| format!("{e:?}"))
        .collect();
    assert!(
        bad.is_empty(),
        "whole filesystem, without root: entries marked or unlike root's:\n{}\nroot: {:?}",
        bad.join("\n"),
        root.entries
    );
    e1 + &e2
}

// ---------------------------------------------------------------------------
// Btrfs: snapshots, reflink copies and nested subvolumes outside the scan

/// `vol` (a subvolume) with a 4 MiB file, and two read-only snapshots of
/// it in `snaps/`.
fn build_two_snapshots(t: &Tree) {
    subvolume(&t.p("vol"));
    t.write("vol/f", 4 * M);
    fs::create_dir(t.p("snaps")).unwrap();
    ro_snapshot(&t.p("vol"), &t.p("snaps/s1"));
    ro_snapshot(&t.p("vol"), &t.p("snaps/s2"));
}

/// `sdu -d1 snaps`: vol still holds the file, so deleting both snapshots
/// frees nothing. As root sdu asks the filesystem and says 0, exact;
/// without root it sees two references, both in `snaps`, and says 4 MiB,
/// marked. The whole filesystem scanned without root is exact.
#[test]
fn btrfs_snapshots_held_by_their_origin() {
    let Some(fs) = Mounted::new(FsKind::Btrfs, BTRFS_OPTS) else {
        return;
    };
    let mnt = fs.path();
    build_two_snapshots(&Tree { root: mnt });
    fs.remount();
    assert_setpriv_drops_sys_admin();
    let args = ["--json", "-d1", "snaps"];
    let (root, user) = (report(mnt, true, &args), report(mnt, false, &args));
    for s in ["snaps/s1", "snaps/s2"] {
        let e = entry(&root, s);
        assert_eq!((e.reclaimable, e.reclaimable_exact), (0, true), "{e:?}");
    }
    let stderr = assert_whole_fs_exact_without_root(mnt);
    let freed = fs.freed_by(|| {
        delete_subvolumes(mnt, &["snaps/s1", "snaps/s2"]);
    });
    let rows = [Row::new(
        "snaps",
        entry(&root, "snaps"),
        entry(&user, "snaps"),
        freed,
    )];
    assert_rows("Btrfs, two snapshots of vol", &rows);
    assert_eq!(freed, 0, "the tree is not as built");
    assert_ne!(rows[0].user.0, 0, "without root the case proves nothing");
    assert_eq!(stderr, "", "the whole-filesystem scans");
}

/// `d/a` (2 MiB) with a reflink copy `d/a2` inside the scan and `out/ac`
/// outside it (`cp --reflink=always`), `d/b` (1 MiB) alone: deleting `d`
/// frees b only.
fn build_reflink_outside(t: &Tree) {
    t.write("d/a", 2 * M);
    t.write("d/b", M);
    fs::create_dir_all(t.p("out")).unwrap();
    for (src, dst) in [("d/a", "d/a2"), ("d/a", "out/ac")] {
        run(Command::new("cp")
            .arg("--reflink=always")
            .arg(t.p(src))
            .arg(t.p(dst)))
        .assert_ok();
    }
}

/// ```text
/// vol/ (subvolume)  f (1 MiB)
///      inner/ (subvolume)  g (2 MiB)  h (512 KiB)  fc (FICLONE of vol/f)
/// snaps/vs (read-only snapshot of vol: inner is an empty directory there)
/// ```
///
/// Deleting vol (inner first) frees g and h; f's extent stays (snaps/vs).
fn build_nested(t: &Tree) {
    subvolume(&t.p("vol"));
    t.write("vol/f", M);
    subvolume(&t.p("vol/inner"));
    t.write("vol/inner/g", 2 * M);
    t.write("vol/inner/h", 512 * K);
    t.clone("vol/f", "vol/inner/fc");
    fs::create_dir(t.p("snaps")).unwrap();
    ro_snapshot(&t.p("vol"), &t.p("snaps/vs"));
}

#[test]
fn btrfs_reflink_copy_and_nested_subvolumes_outside_the_scan() {
    let mut rows = Vec::new();
    for (name, build, scan, subvols, want) in [
        (
            "reflink copy outside",
            build_reflink_outside as fn(&Tree),
            "d",
            &[][..],
            M,
        ),
        (
            "nested subvolumes",
            build_nested,
            "vol",
            &["vol/inner", "vol"][..],
            2 * M + 512 * K,
        ),
    ] {
        let Some(fs) = Mounted::new(FsKind::Btrfs, BTRFS_OPTS) else {
            return;
        };
        let mnt = fs.path();
        build(&Tree { root: mnt });
        fs.remount();
        if scan == "vol" {
            let stub = fs::read_dir(mnt.join("snaps/vs/inner")).unwrap().count();
            assert_eq!(stub, 0, "a snapshot holds its nested subvolume's files");
        }
        let args = ["--json", "-d1", scan];
        let (root, user) = (report(mnt, true, &args), report(mnt, false, &args));
        let stderr = assert_whole_fs_exact_without_root(mnt);
        let freed = fs.freed_by(|| {
            if subvols.is_empty() {
                fs::remove_dir_all(mnt.join(scan)).unwrap();
            } else {
                delete_subvolumes(mnt, subvols);
            }
        });
        assert_eq!(freed, want, "{name}: the tree is not as built");
        let r = Row::new(name, entry(&root, scan), entry(&user, scan), freed);
        assert_ne!(
            r.user.0, freed,
            "{name}: without root the case proves nothing"
        );
        rows.push((r, stderr));
    }
    let (rows, stderr): (Vec<Row>, Vec<String>) = rows.into_iter().unzip();
    assert_rows("Btrfs, data held outside the scan", &rows);
    assert_eq!(stderr, ["", ""], "the whole-filesystem scans");
}

// ---------------------------------------------------------------------------
// XFS, with and without the reverse-mapping btree

/// ```text
/// p0/ .. p3/  (pins: one directory inode per allocation group, see reclaim)
/// d/ a (1 MiB)  sub/a2 (FICLONE of a)
///    b (512 KiB)  sub/part (b's 64..192 KiB, FICLONERANGE)
///    c (256 KiB)  out/cc (FICLONE of c: outside)
///    e (128 KiB)  out/epart (e's first 64 KiB: outside)
///    g (256 KiB)  sub/g2 (FICLONE of g)  out/g3 (FICLONE of g: outside)
/// ```
///
/// Deleting d frees a, b and e's second half: 1,600 KiB.
fn build_xfs(t: &Tree) {
    for p in ["p0", "p1", "p2", "p3"] {
        t.dir(p);
    }
    t.write("d/a", M);
    t.clone("d/a", "d/sub/a2");
    t.write("d/b", 512 * K);
    t.clone_range("d/b", 64 * K, "d/sub/part", 0, 128 * K);
    t.write("d/c", 256 * K);
    t.clone("d/c", "out/cc");
    t.write("d/e", 128 * K);
    t.clone_range("d/e", 0, "out/epart", 0, 64 * K);
    t.write("d/g", 256 * K);
    t.clone("d/g", "d/sub/g2");
    t.clone("d/g", "out/g3");
}

const XFS_FREED: u64 = 1600 * K;

/// The XFS tree on a fresh filesystem made with `-m rmapbt=R`: sdu's
/// entries of `d` as root and without, the stderr of the root run, and
/// what deleting `d` freed.
fn xfs_case(rmapbt: bool) -> Option<(Entry, Entry, String, u64)> {
    let opt = if rmapbt { "rmapbt=1" } else { "rmapbt=0" };
    let fs = Mounted::with_mkfs(FsKind::Xfs, &["-m", opt], XFS_OPTS)?;
    let mnt = fs.path();
    build_xfs(&Tree { root: mnt });
    fs.remount();
    let d = mnt.join("d");
    assert_eq!(xfs_preconditions(mnt, &d), 0, "d has directory blocks");
    let args = ["--json", "-d1", "d"];
    let out = sdu_in(mnt, true, &args);
    assert_eq!(out.code, Some(0), "{out:?}");
    let root = json::parse(&out.stdout);
    let user = report(mnt, false, &args);
    // Without root, the whole filesystem: exact, with or without rmapbt.
    assert_eq!(assert_whole_fs_exact_without_root(mnt), "");
    let freed = fs.freed_by(|| fs::remove_dir_all(&d).unwrap());
    assert_eq!(freed, XFS_FREED, "the tree is not as built");
    Some((
        entry(&root, "d").clone(),
        entry(&user, "d").clone(),
        out.stderr,
        freed,
    ))
}

/// With rmapbt, as root: GETFSMAP names the owners outside `d` (c, the
/// first half of e, g), so Reclaimable is exact.
#[test]
fn xfs_rmapbt_clones_outside_the_scan() {
    let Some((root, user, stderr, freed)) = xfs_case(true) else {
        return;
    };
    assert_eq!(stderr, "");
    let rows = [Row::new("d", &root, &user, freed)];
    assert_rows("XFS with rmapbt: clones inside and outside d", &rows);
    assert_ne!(
        user.reclaimable, freed,
        "without root the case proves nothing"
    );
}

/// Without rmapbt, even as root, sdu cannot find the owners outside the
/// scan: a bound (at most), never below what deleting frees, and one
/// warning.
#[test]
fn xfs_without_rmapbt_is_a_bound_with_a_warning() {
    let Some((root, user, stderr, freed)) = xfs_case(false) else {
        return;
    };
    let t = table("XFS without rmapbt", &[Row::new("d", &root, &user, freed)]);
    println!("{t}");
    assert!(!root.reclaimable_exact, "{t}");
    assert!(root.reclaimable >= freed, "{t}");
    assert!(!user.reclaimable_exact && user.reclaimable >= freed, "{t}");
    let warning = "without the reverse-mapping btree (mkfs.xfs -m rmapbt=1)";
    assert_eq!(stderr.matches(warning).count(), 1, "{stderr:?}");
    assert_eq!(stderr.lines().count(), 1, "{stderr:?}");
}

// ---------------------------------------------------------------------------
// --exclude

/// `data/orig1`, `data/orig2` (20 MiB each), cloned into `data/clones/`
/// (orig1 twice, as c1 and c1b); c2's first MiB then rewritten;
/// `data/clones/own` (2 MiB). Deleting `data/clones` frees 3 MiB.
fn build_exclude(t: &Tree) {
    for p in ["p0", "p1", "p2", "p3"] {
        t.dir(p);
    }
    t.write("data/orig1", 20 * M);
    t.write("data/orig2", 20 * M);
    t.clone("data/orig1", "data/clones/c1");
    t.clone("data/orig1", "data/clones/c1b");
    t.clone("data/orig2", "data/clones/c2");
    t.overwrite("data/clones/c2", 0, M);
    t.write("data/clones/own", 2 * M);
}

/// `sdu --exclude 'orig*' -d1 data`: the originals are outside the scan.
/// As root, clones frees 3 MiB, exact. Without root sdu sees orig1's data
/// held twice, both in clones, and counts it (23 MiB): marked at most, in
/// JSON and with `≤` (`~` on Btrfs) and the legend in the table.
fn exclude(kind: FsKind) {
    let fs = match kind {
        FsKind::Xfs => Mounted::with_mkfs(kind, &["-m", "rmapbt=1"], XFS_OPTS),
        _ => Mounted::new(kind, BTRFS_OPTS),
    };
    let Some(fs) = fs else { return };
    let mnt = fs.path();
    build_exclude(&Tree { root: mnt });
    fs.remount();
    let clones = mnt.join("data/clones");
    if kind == FsKind::Xfs {
        assert_eq!(xfs_preconditions(mnt, &clones), 0);
    }
    let args = ["--exclude", "orig*", "-d1", "data"];
    let json_args = [&["--json"][..], &args].concat();
    let (root, user) = (
        report(mnt, true, &json_args),
        report(mnt, false, &json_args),
    );
    let text = sdu_in(mnt, false, &args);
    assert_eq!(text.code, Some(0), "{text:?}");
    let text = String::from_utf8(text.stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.ends_with("  data/clones"))
        .unwrap_or_else(|| panic!("{text}"));
    // At most, or either way where Btrfs data read without root may also
    // be referenced in part: each mark printed with its legend line.
    let mark = ["\u{2264}", "~"]
        .into_iter()
        .find(|m| line.split_whitespace().any(|w| w.starts_with(m)))
        .unwrap_or_else(|| panic!("no mark: {text}"));
    assert!(
        text.lines()
            .any(|l| l.starts_with(&format!("{mark} Reclaimable "))),
        "no legend: {text}"
    );
    let freed = fs.freed_by(|| fs::remove_dir_all(&clones).unwrap());
    assert_eq!(freed, 3 * M, "the tree is not as built");
    let rows = [Row::new(
        "data/clones",
        entry(&root, "data/clones"),
        entry(&user, "data/clones"),
        freed,
    )];
    assert_rows(&format!("{kind:?}, --exclude 'orig*'"), &rows);
    assert_eq!(rows[0].user, (23 * M, false), "without root");
}

#[test]
fn exclude_btrfs() {
    exclude(FsKind::Btrfs);
}

#[test]
fn exclude_xfs() {
    exclude(FsKind::Xfs);
}

// ---------------------------------------------------------------------------
// Btrfs: extents referenced in part (bookends)

/// xorshift64: a fixed-seed stream for the tests' random choices.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

pub(crate) fn dd(file: &Path, bs: &str, seek: u64, count: u64) {
    run(Command::new("dd")
        .arg("if=/dev/urandom")
        .arg(format!("of={}", file.display()))
        .arg(format!("bs={bs}"))
        .arg(format!("seek={seek}"))
        .arg(format!("count={count}"))
        .arg("conv=notrunc,fsync")
        .arg("status=none"))
    .assert_ok();
}

/// `img/vm.img`: 8 MiB in one extent, then 4 MiB at 2 MiB and eight
/// distinct 4 KiB blocks rewritten in place: every extent stays whole, so
/// deleting it frees 12 MiB + 32 KiB, of which it references 8 MiB.
#[test]
fn btrfs_vm_image_bookends() {
    let Some(fs) = Mounted::new(FsKind::Btrfs, BTRFS_OPTS) else {
        return;
    };
    let mnt = fs.path();
    let t = Tree { root: mnt };
    t.write("img/vm.img", 8 * M);
    t.assert_one_extent("img/vm.img");
    let img = t.p("img/vm.img");
    dd(&img, "1M", 2, 4);
    let mut rng = Rng(0x5eed_0007);
    let mut blocks = Vec::new();
    while blocks.len() < 8 {
        let b = rng.below(2048);
        if !blocks.contains(&b) {
            blocks.push(b);
            dd(&img, "4K", b, 1);
        }
    }
    fs.remount();
    let args = ["--json", "-d1", "img"];
    let (root, user) = (report(mnt, true, &args), report(mnt, false, &args));
    // The whole filesystem without root is not proven either: its Data
    // Used is more than the bytes the files reference.
    let whole = report(mnt, false, &["--json", "."]);
    assert!(!entry(&whole, ".").reclaimable_exact, "{whole:?}");
    let freed = fs.freed_by(|| fs::remove_dir_all(mnt.join("img")).unwrap());
    let rows = [Row::new(
        "img",
        entry(&root, "img"),
        entry(&user, "img"),
        freed,
    )];
    assert_rows(&format!("Btrfs, VM image (blocks {blocks:?})"), &rows);
    assert_eq!(freed, 12 * M + 32 * K, "the tree is not as built");
    assert_eq!(rows[0].user, (8 * M, false), "without root");
}

// ---------------------------------------------------------------------------
// --to-free

/// `vol` with f (4 MiB) and keep (1 MiB), two read-only snapshots, then f
/// rewritten in vol: the snapshots alone hold the old f, vol holds keep.
fn build_diverged(t: &Tree) {
    subvolume(&t.p("vol"));
    t.write("vol/f", 4 * M);
    t.write("vol/keep", M);
    fs::create_dir(t.p("snaps")).unwrap();
    ro_snapshot(&t.p("vol"), &t.p("snaps/s1"));
    ro_snapshot(&t.p("vol"), &t.p("snaps/s2"));
    t.overwrite("vol/f", 0, 4 * M);
}

/// `sdu --json --to-free 1M snaps/s1 snaps/s2` (the mount not scanned): as
/// root the plan frees the old f, 4 MiB, exact, and deleting its choice
/// frees that; without root it counts keep too, marked.
#[test]
fn to_free_plan_over_snapshots() {
    let Some(fs) = Mounted::new(FsKind::Btrfs, BTRFS_OPTS) else {
        return;
    };
    let mnt = fs.path();
    build_diverged(&Tree { root: mnt });
    fs.remount();
    let plan = |root: bool| -> serde_json::Value {
        let out = sdu_in(
            mnt,
            root,
            &["--json", "--to-free", "1M", "snaps/s1", "snaps/s2"],
        );
        assert_eq!((out.code, out.stderr.as_str()), (Some(0), ""), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let (root, user) = (plan(true), plan(false));
    let chosen: Vec<String> = root["chosen"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap().to_owned())
        .collect();
    let chosen_ref: Vec<&str> = chosen.iter().map(String::as_str).collect();
    let freed = fs.freed_by(|| delete_subvolumes(mnt, &chosen_ref));
    let row = |d: &serde_json::Value| {
        (
            d["frees"].as_u64().unwrap(),
            d["reclaimable_exact"].as_bool().unwrap(),
        )
    };
    let rows = [Row {
        what: format!("plan {chosen:?}"),
        root: row(&root),
        user: row(&user),
        user_bound: user["reclaimable_bound"].as_str().map(str::to_owned),
        freed,
    }];
    assert_rows("--to-free over two snapshots", &rows);
    assert_eq!(freed, 4 * M, "the tree is not as built: {root}");
    assert_eq!(rows[0].user, (5 * M, false), "without root: {user}");
}

// ---------------------------------------------------------------------------
// Property: random trees on Btrfs

/// A random tree under construction: its directories (relative to the
/// mount, "" the mount itself), files, subvolumes that can be snapshotted
/// and read-only snapshots.
struct RandomTree<'a> {
    t: Tree<'a>,
    rng: Rng,
    subvols: Vec<String>,
    ro: Vec<String>,
    log: Vec<String>,
}

fn under(p: &str, dir: &str) -> bool {
    dir.is_empty() || p == dir || p.strip_prefix(dir).is_some_and(|r| r.starts_with('/'))
}

impl RandomTree<'_> {
    /// Every directory and file, by a walk (a snapshot's own included);
    /// not the empty directory that stands for a nested subvolume in a
    /// snapshot (inode 2).
    fn walk(&self) -> (Vec<String>, Vec<String>) {
        crate::exact_random::build::walk_tree(self.t.root)
    }

    fn pick<'v>(&mut self, v: &'v [String]) -> &'v str {
        &v[self.rng.below(v.len() as u64) as usize]
    }

    fn writable(&self, v: Vec<String>) -> Vec<String> {
        v.into_iter()
            .filter(|p| !self.ro.iter().any(|r| under(p, r)))
            .collect()
    }

    fn write(&mut self, name: &str) {
        let dirs = self.writable(self.walk().0);
        let p = join_rel(self.pick(&dirs), name);
        let len = BLK * (1 + self.rng.below(64)) + self.rng.below(2) * self.rng.below(BLK);
        self.t.write(&p, len);
        self.log.push(format!("write {p} {len}"));
    }

    fn reflink(&mut self, name: &str) {
        let (dirs, files) = self.walk();
        let dirs = self.writable(dirs);
        let src = self.pick(&files).to_owned();
        let dst = join_rel(self.pick(&dirs), name);
        self.t.clone(&src, &dst);
        self.log.push(format!("reflink {src} {dst}"));
    }

    fn rewrite(&mut self) {
        let files = self.writable(self.walk().1);
        let f = self.pick(&files).to_owned();
        let blocks = fs::metadata(self.t.p(&f))
            .unwrap()
            .len()
            .div_ceil(BLK)
            .max(1);
        let off = BLK * self.rng.below(blocks);
        let len = BLK * (1 + self.rng.below(16));
        self.t.overwrite(&f, off, len);
        self.log.push(format!("rewrite {f} {off} {len}"));
    }

    fn snapshot(&mut self, name: &str) {
        let dirs = self.writable(self.walk().0);
        let src = self.pick(&self.subvols.clone()).to_owned();
        let dst = join_rel(self.pick(&dirs), name);
        let ro = self.rng.below(2) == 0;
        let mut c = Command::new("btrfs");
        c.args(["subvolume", "snapshot"]);
        if ro {
            c.arg("-r");
        }
        run(c.arg(self.t.p(&src)).arg(self.t.p(&dst))).assert_ok();
        if ro {
            self.ro.push(dst.clone());
        } else {
            self.subvols.push(dst.clone());
        }
        self.log.push(format!(
            "snapshot{} {src} {dst}",
            if ro { " -r" } else { "" }
        ));
    }
}

const BLK: u64 = 4096;

/// Builds case `seed`'s tree, scans a random directory (with a random name
/// excluded, half the time) as root and without, then deletes every file
/// the scan counted and measures.
pub(crate) fn random_case(seed: u64) -> Option<Row> {
    let fs = Mounted::new(FsKind::Btrfs, BTRFS_OPTS)?;
    let mnt = fs.path();
    let mut r = RandomTree {
        t: Tree { root: mnt },
        rng: Rng(0x9e37_79b9_7f4a_7c15 ^ seed.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1),
        subvols: vec!["v0".into()],
        ro: Vec::new(),
        log: Vec::new(),
    };
    subvolume(&mnt.join("v0"));
    if r.rng.below(2) == 0 {
        subvolume(&mnt.join("v0/v1"));
        r.subvols.push("v0/v1".into());
    }
    for i in 0..4 {
        let dirs = r.writable(r.walk().0);
        let d = join_rel(r.pick(&dirs), &format!("d{i}"));
        r.t.dir(&d);
    }
    for i in 0..5 {
        r.write(&format!("f{i}"));
    }
    for i in 0..3 {
        r.reflink(&format!("r{i}"));
    }
    for i in 0..1 + r.rng.below(2) {
        r.snapshot(&format!("s{i}"));
    }
    for _ in 0..3 {
        r.rewrite();
    }
    for i in 3..5 {
        r.reflink(&format!("r{i}"));
    }
    for i in 5..7 {
        r.write(&format!("f{i}"));
    }
    fs.remount();
    let (dirs, files) = r.walk();
    let scan = r.pick(&dirs).to_owned();
    let in_scan: Vec<String> = files.into_iter().filter(|f| under(f, &scan)).collect();
    let exclude = (r.rng.below(2) == 0 && !in_scan.is_empty()).then(|| {
        let f = r.pick(&in_scan);
        f.rsplit('/').next().unwrap().to_owned()
    });
    let arg = if scan.is_empty() { "." } else { scan.as_str() };
    let mut args = vec!["--json", "-s", arg];
    if let Some(x) = &exclude {
        args.extend(["--exclude", x.as_str()]);
    }
    let scan_as = |root: bool| {
        let out = sdu_in(mnt, root, &args);
        assert_eq!(out.code, Some(0), "{out:?}");
        entry(&json::parse(&out.stdout), arg).clone()
    };
    let (root, user) = (scan_as(true), scan_as(false));
    // Directories' own blocks, which sdu counts in Total as du does and
    // never in Reclaimable on Btrfs (metadata, which no deletion of files
    // frees as data): only the top-level root directory has any (16 KiB,
    // from mkfs.btrfs), so this is 0 unless the scan is the mount.
    let dir_bytes: u64 = dirs
        .iter()
        .filter(|d| under(d, &scan))
        .map(|d| fs::symlink_metadata(mnt.join(d)).unwrap().blocks() * 512)
        .sum();
    assert_eq!(dir_bytes, if scan.is_empty() { 16 * K } else { 0 });
    let freed = fs.freed_by(|| {
        for s in &r.ro {
            if under(s, &scan) || under(&scan, s) {
                run(Command::new("btrfs")
                    .args(["property", "set", "-ts"])
                    .arg(mnt.join(s))
                    .args(["ro", "false"]))
                .assert_ok();
            }
        }
        for f in &in_scan {
            if exclude.as_deref() != f.rsplit('/').next() {
                fs::remove_file(mnt.join(f)).unwrap();
            }
        }
    });
    let what = format!(
        "#{seed} {arg}{}{}  [{}]",
        exclude.map_or(String::new(), |x| format!(" --exclude {x}")),
        if dir_bytes > 0 {
            format!(" ({dir_bytes} of the root directory not reclaimable)")
        } else {
            String::new()
        },
        r.log.join("; ")
    );
    Some(Row::new(&what, &root, &user, freed))
}

/// Random trees (files, reflink copies between directories, a snapshot or
/// two, in-place rewrites), a random scan root and exclusion: as root
/// Reclaimable is what deleting the scanned files frees, exact; without
/// root it is that, or marked.
#[test]
fn btrfs_random_trees_deleted_and_measured() {
    let mut rows = Vec::new();
    for seed in 1..=8 {
        let Some(row) = random_case(seed) else {
            return;
        };
        rows.push(row);
    }
    assert_rows("Btrfs, random trees (case, scan, tree)", &rows);
}
