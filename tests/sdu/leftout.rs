//! What the scan left out reaches the exactness check (docs/figures.md,
//! "Exact or a bound", "What the scan left out"): every way the walk
//! leaves an entry out, each checked against the filesystem by deleting
//! and measuring (`exact`'s and `reclaim`'s module comments say how).
//!
//! Most cases are built on XFS without the reverse-mapping btree
//! (`mkfs.xfs -m rmapbt=0,reflink=1`), where even root cannot ask who else
//! holds a range: there a figure is exact only because the scan covers
//! the filesystem, and a scan that leaves something out and still calls
//! it exact is caught. `keep/f` (1 MiB) and its reflink copy `keep/f2`
//! share their extent with `X/g`, and X is what is left out: deleting
//! `keep` frees nothing, where a scan that missed X sees the extent held
//! twice, both in `keep`, and counts 1 MiB.
//!
//! The same cases with rmapbt, as root, must be exact and what deleting
//! frees: sdu asks who else holds each range once it knows the scan does
//! not cover the filesystem.
//!
//! `every_way_of_leaving_entries_out_reaches_the_exactness_check` holds a
//! case for each way `--stats` counts ("left out: ..."): a way added to
//! the walk (`src/walk/left.rs`) without a case here fails it.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use crate::json::{self, Entry, Report};
use crate::reclaim::XFS_OPTS;
use crate::util::*;

const K: u64 = 1024;
const M: u64 = 1 << 20;

/// sdu run in `cwd` as root, or as `nobody` (`root` false).
fn sdu_as(cwd: &Path, root: bool, args: &[&str]) -> Output {
    let mut c = if root {
        Command::new(sdu_bin())
    } else {
        let mut c = Command::new("setpriv");
        c.args(nobody_args()).arg(sdu_bin());
        c
    };
    run_with_timeout(c.current_dir(cwd).args(args), 300)
}

/// The entry of `path` (as sdu prints it).
fn entry<'a>(r: &'a Report, path: &str) -> &'a Entry {
    r.entries
        .iter()
        .find(|e| e.path == OsStr::new(path))
        .unwrap_or_else(|| panic!("no entry {path} in {r:?}"))
}

/// XFS without rmapbt, with reflinks, mounted as the tests measure it.
fn xfs_no_rmapbt() -> Option<Mounted> {
    xfs(false)
}

/// XFS with reflinks, with the reverse-mapping btree or without.
fn xfs(rmapbt: bool) -> Option<Mounted> {
    let opt = if rmapbt { "rmapbt=1" } else { "rmapbt=0" };
    Mounted::with_mkfs(FsKind::Xfs, &["-m", opt], XFS_OPTS)
}

/// One inode per allocation group that stays (`xfs_preconditions`).
fn pins(t: &Tree) {
    for p in ["p0", "p1", "p2", "p3"] {
        t.dir(p);
    }
}

fn chmod(p: &Path, mode: u32) {
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
}

/// A valid `CACHEDIR.TAG` in directory `rel`.
fn cachedir_tag(t: &Tree, rel: &str) {
    fs::write(
        t.p(&format!("{rel}/CACHEDIR.TAG")),
        "Signature: 8a477f597d28d172789f06886806bc55\n# a cache\n",
    )
    .unwrap();
}

/// What a case printed beside what deleting freed.
#[derive(Debug)]
struct Seen {
    what: String,
    reclaimable: u64,
    exact: bool,
    /// `reclaimable_bound`: `at_most`, `at_least`, `unknown`; `None` exact.
    bound: Option<String>,
    freed: u64,
}

impl Seen {
    fn new(what: &str, e: &Entry, freed: u64) -> Seen {
        let s = Seen {
            what: what.to_owned(),
            reclaimable: e.reclaimable,
            exact: e.reclaimable_exact,
            bound: e.reclaimable_bound.clone(),
            freed,
        };
        println!("{s:?}");
        s
    }
}

// ---------------------------------------------------------------------------
// --exclude-caches (and --exclude, the same case by pattern)

/// `c/big` (8 MiB) and its reflink copies `a/big`, `a/big2`; `c/` holds a
/// valid `CACHEDIR.TAG`. Deleting `a` frees nothing.
fn build_cache_case(t: &Tree) {
    pins(t);
    t.write("c/big", 8 * M);
    t.clone("c/big", "a/big");
    t.clone("c/big", "a/big2");
    cachedir_tag(t, "c");
}

/// `sdu --exclude-caches --json -d1 .` as root, on XFS without rmapbt:
/// `a` holds its extent twice and `c`, left out, once more. Unfixed, sdu
/// said 8,388,608 exact (`--exclude c` marked it); deleting `a` frees 0.
/// Marked now, as root cannot ask who else holds it. With rmapbt, root
/// asks: 0, exact (unfixed: 8,388,608 exact there too).
#[test]
fn exclude_caches_is_an_exclusion_to_the_exactness_check() {
    for rmapbt in [false, true] {
        exclude_caches(rmapbt);
    }
}

fn exclude_caches(rmapbt: bool) {
    let Some(fs) = xfs(rmapbt) else { return };
    let mnt = fs.path();
    build_cache_case(&Tree { root: mnt });
    fs.remount();
    assert_eq!(xfs_preconditions(mnt, &mnt.join("a")), 0);
    let mut seen = Vec::new();
    for args in [
        &["--exclude-caches", "--json", "-d1", "."][..],
        &["--exclude", "c", "--json", "-d1", "."][..],
    ] {
        let out = sdu_as(mnt, true, args);
        assert_eq!(out.code, Some(0), "{out:?}");
        seen.push((args, json::parse(&out.stdout)));
    }
    let freed = fs.freed_by(|| fs::remove_dir_all(mnt.join("a")).unwrap());
    assert_eq!(freed, 0, "the tree is not as built");
    for (args, r) in &seen {
        let s = Seen::new(&format!("rmapbt={rmapbt} {args:?}"), entry(r, "./a"), freed);
        if rmapbt {
            assert_eq!((s.reclaimable, s.exact), (0, true), "{s:?}");
        } else {
            assert_eq!((s.reclaimable, s.exact), (8 * M, false), "{s:?}");
            assert_eq!(s.bound.as_deref(), Some("at_most"), "{s:?}");
        }
    }
}

// ---------------------------------------------------------------------------
// A directory that cannot be read

/// `d/a/f` (64 KiB) and `d/locked/g` (128 KiB), `d/locked` mode 700 (root
/// owns it). As nobody, `sdu -s d` reports an error; unfixed it said
/// 65,536 exact where `rm -rf d` frees 196,608; `sdu -s d/locked` said 0
/// exact, where deleting it frees 131,072. Both are at least now: marked
/// so, and below what deleting frees.
#[test]
fn an_unreadable_directory_marks_it_and_every_directory_above() {
    let Some(fs) = xfs_no_rmapbt() else { return };
    let mnt = fs.path();
    let t = Tree { root: mnt };
    pins(&t);
    t.write("d/a/f", 64 * K);
    t.write("d/locked/g", 128 * K);
    chmod(&t.p("d/locked"), 0o700);
    fs.remount();
    assert_eq!(xfs_preconditions(mnt, &mnt.join("d")), 0);
    let mut runs = Vec::new();
    for path in ["d", "d/locked"] {
        let out = sdu_as(mnt, false, &["--json", "-s", path]);
        assert_eq!(out.code, Some(1), "{out:?}");
        assert!(out.stderr.contains("cannot read directory"), "{out:?}");
        runs.push(json::parse(&out.stdout));
    }
    // The root's whole scan lost nothing of `d/a`.
    let out = sdu_as(mnt, false, &["--json", "-s", "d/a"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let a = json::parse(&out.stdout);
    let freed_locked = fs.freed_by(|| fs::remove_dir_all(mnt.join("d/locked")).unwrap());
    let freed_d = fs.freed_by(|| fs::remove_dir_all(mnt.join("d")).unwrap());
    let freed_d = freed_d + freed_locked;
    assert_eq!((freed_d, freed_locked), (192 * K, 128 * K), "not as built");
    let d = Seen::new("d as nobody", entry(&runs[0], "d"), freed_d);
    let locked = Seen::new(
        "d/locked as nobody",
        entry(&runs[1], "d/locked"),
        freed_locked,
    );
    for s in [&d, &locked] {
        assert!(!s.exact, "{}: called exact: {s:?}", s.what);
        assert!(s.reclaimable < s.freed, "{}: not below: {s:?}", s.what);
        assert_eq!(s.bound.as_deref(), Some("at_least"), "{s:?}");
    }
    let a = entry(&a, "d/a");
    assert_eq!((a.reclaimable, a.reclaimable_exact), (64 * K, true));
}

// ---------------------------------------------------------------------------
// A file that cannot be read

/// On Btrfs (`max_inline=0`), `d/f`: 8 MiB in one extent, its middle 4 MiB
/// rewritten (the first extent stays whole on disk), mode 600. As nobody
/// sdu can stat it, not map it: it counts its 8 MiB of blocks as its own;
/// deleting it frees 12 MiB. Unfixed, the figure was marked "at most"
/// only, below what deleting frees; it is marked both ways now
/// (`reclaimable_bound` "unknown", and `--stats` names both). On XFS (blocks freed one by one) "at most" alone stands.
#[test]
fn an_unmapped_file_on_btrfs_is_marked_both_ways() {
    let Some(fs) = Mounted::new(FsKind::Btrfs, crate::reclaim::BTRFS_OPTS) else {
        return;
    };
    let mnt = fs.path();
    let t = Tree { root: mnt };
    t.write("d/f", 8 * M);
    t.assert_one_extent("d/f");
    t.overwrite("d/f", 2 * M, 4 * M);
    chmod(&t.p("d/f"), 0o600);
    fs.remount();
    let out = sdu_as(mnt, false, &["--json", "--stats", "-s", "d"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    let r = json::parse(&out.stdout);
    let line = out
        .stderr
        .lines()
        .find(|l| l.trim_start().starts_with("reclaimable "))
        .unwrap_or_else(|| panic!("{out:?}"))
        .to_owned();
    let freed = fs.freed_by(|| fs::remove_dir_all(mnt.join("d")).unwrap());
    assert_eq!(freed, 12 * M, "not as built");
    let s = Seen::new("d/f unreadable, as nobody", entry(&r, "d"), freed);
    assert_eq!(s.reclaimable, 8 * M, "{s:?}");
    assert!(!s.exact, "{s:?}");
    assert_eq!(s.bound.as_deref(), Some("unknown"), "{s:?}");
    assert!(line.contains("at least"), "not marked at least: {line}");
}

// ---------------------------------------------------------------------------
// A missing operand

/// `sdu -d1 nonexist .` (and the same PATHs from `--files0-from`) as
/// nobody on XFS without rmapbt: `.` is the filesystem's root, so `keep`
/// (f and its copy f2, nothing else) is exact. Unfixed, the error about
/// `nonexist` made every figure a bound.
#[test]
fn a_missing_operand_does_not_touch_the_others_exactness() {
    let Some(fs) = xfs_no_rmapbt() else { return };
    let mnt = fs.path();
    let t = Tree { root: mnt };
    pins(&t);
    t.write("keep/f", M);
    t.clone("keep/f", "keep/f2");
    fs.remount();
    assert_eq!(xfs_preconditions(mnt, &mnt.join("keep")), 0);
    // Outside `keep`, read by nobody.
    let names = t.p("p0/names");
    fs::write(&names, b"nonexist\0.\0").unwrap();
    chmod(&names, 0o644);
    let names = names.to_str().unwrap().to_owned();
    let mut runs = Vec::new();
    for args in [
        vec!["--json", "-d1", "nonexist", "."],
        vec!["--json", "-d1", "--files0-from", &names],
    ] {
        let out = sdu_as(mnt, false, &args);
        assert_eq!(out.code, Some(1), "{out:?}");
        assert!(out.stderr.contains("nonexist"), "{out:?}");
        runs.push((args.join(" "), json::parse(&out.stdout)));
    }
    let freed = fs.freed_by(|| fs::remove_dir_all(mnt.join("keep")).unwrap());
    assert_eq!(freed, M, "not as built");
    for (what, r) in &runs {
        let s = Seen::new(what, entry(r, "./keep"), freed);
        assert_eq!((s.reclaimable, s.exact), (freed, true), "{s:?}");
    }
}

// ---------------------------------------------------------------------------
// Every way

/// The case for one way: the arguments besides `--json --stats -d1` (the
/// PATHs too), whether run as root, and whether the filesystem has rmapbt.
struct Case {
    way: String,
    args: Vec<String>,
    root: bool,
    rmapbt: bool,
}

impl Case {
    /// What `keep` must say: as root with rmapbt, 0 (what deleting frees),
    /// exact; else 1 MiB, marked.
    fn want(&self) -> (u64, bool) {
        if self.root && self.rmapbt {
            (0, true)
        } else {
            (M, false)
        }
    }
}

/// `keep/f` (1 MiB), `keep/f2` its copy, and `X/g` a copy too, where X is
/// left out by the case's way; as `build` leaves it. Returns the `--stats`
/// count of the way, `keep`'s entry and what deleting `keep` freed.
fn one_way(case: &Case, build: impl FnOnce(&Tree)) -> (u64, Entry, u64) {
    let fs = xfs(case.rmapbt).expect("XFS");
    let mnt = fs.path();
    let t = Tree { root: mnt };
    pins(&t);
    t.write("keep/f", M);
    t.clone("keep/f", "keep/f2");
    fs.remount();
    build(&t);
    assert_eq!(xfs_preconditions(mnt, &mnt.join("keep")), 0);
    let mut args: Vec<&str> = vec!["--json", "--stats", "-d1"];
    args.extend(case.args.iter().map(String::as_str));
    let out = sdu_as(mnt, case.root, &args);
    assert!(matches!(out.code, Some(0 | 1)), "{out:?}");
    let r = json::parse(&out.stdout);
    let count = stat_value(&out.stderr, &format!("left out: {}", case.way));
    let keep = entry(&r, "./keep").clone();
    let freed = fs.freed_by(|| fs::remove_dir_all(mnt.join("keep")).unwrap());
    (count, keep, freed)
}

/// X shares `keep/f`'s extent: `X/g`, a copy.
fn copy_into(t: &Tree, x: &str) {
    t.clone("keep/f", &format!("{x}/g"));
}

/// A second filesystem (XFS without rmapbt) `other`, holding `sub/h` and
/// its copy `sub/h2` and `out/h3` a copy too, mounted again at `X/m` in
/// the first (under a kernel filesystem's mount at `X` with `kernfs`).
/// The scan gives `.` and `other/sub`: `other` is reached as a PATH that
/// is not its root, and at its root only as a mount the walk did not
/// enter. The case's `keep` entry is `other/sub`'s then.
fn mount_not_entered(case: &Case) -> (u64, Entry, u64) {
    let kernfs = case.way == "kernel filesystem";
    let fs = xfs(case.rmapbt).expect("XFS");
    let other = xfs(case.rmapbt).expect("XFS");
    let (mnt, o) = (fs.path(), other.path());
    let (t, ot) = (Tree { root: mnt }, Tree { root: o });
    pins(&t);
    pins(&ot);
    ot.write("sub/h", M);
    ot.clone("sub/h", "sub/h2");
    ot.clone("sub/h", "out/h3");
    fs.remount();
    other.remount();
    assert_eq!(xfs_preconditions(o, &o.join("sub")), 0);
    t.dir("x");
    let x = mnt.join("x");
    let mut binds = Vec::new();
    let point = if kernfs {
        run(Command::new("mount").args(["-t", "sysfs", "sysfs"]).arg(&x)).assert_ok();
        binds.push(Bind(x.clone()));
        // A directory of sysfs, mounted over.
        x.join("kernel")
    } else {
        let d = x.join("m");
        fs::create_dir(&d).unwrap();
        d
    };
    run(Command::new("mount").arg("--bind").arg(o).arg(&point)).assert_ok();
    binds.insert(0, Bind(point));
    let sub = o.join("sub");
    let sub = sub.to_str().unwrap();
    let mut args = vec!["--json", "--stats", "-d1"];
    args.extend(case.args.iter().map(String::as_str));
    args.push(sub);
    let out = sdu_as(mnt, case.root, &args);
    assert_eq!(out.code, Some(0), "{out:?}");
    let r = json::parse(&out.stdout);
    let count = stat_value(&out.stderr, &format!("left out: {}", case.way));
    let e = entry(&r, sub).clone();
    drop(binds);
    let freed = other.freed_by(|| fs::remove_dir_all(o.join("sub")).unwrap());
    (count, e, freed)
}

/// Every way `--stats` counts as left out has a case here, and in each
/// the figure of what shares data with the entry left out is marked, or
/// (as root, with rmapbt) what deleting frees and exact. Unfixed,
/// `--exclude-caches` and `--exclude-kernfs` (a mount under the kernel
/// filesystem's) reached no check: `keep` said 1,048,576 exact, and
/// deleting it freed 0.
#[test]
fn every_way_of_leaving_entries_out_reaches_the_exactness_check() {
    let Some(probe) = xfs_no_rmapbt() else { return };
    let out = sdu_as(probe.path(), true, &["--stats", "."]);
    drop(probe);
    let ways: Vec<String> = out
        .stderr
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("left out: "))
        .map(|l| {
            l.rsplit_once(char::is_whitespace)
                .unwrap()
                .0
                .trim()
                .to_owned()
        })
        .collect();
    assert!(!ways.is_empty(), "--stats counts nothing left out: {out:?}");
    let mut done = Vec::new();
    for (way, rmapbt) in ways.iter().flat_map(|w| [(w, false), (w, true)]) {
        let case = |args: &[&str], root: bool| Case {
            way: way.clone(),
            args: args.iter().map(|s| s.to_string()).collect(),
            root,
            rmapbt,
        };
        let c;
        let (count, keep, freed) = match way.as_str() {
            "excluded by a pattern" => {
                c = case(&["--exclude", "x", "."], true);
                one_way(&c, |t| copy_into(t, "x"))
            }
            "cache directory (CACHEDIR.TAG)" => {
                c = case(&["--exclude-caches", "."], true);
                one_way(&c, |t| {
                    copy_into(t, "x");
                    cachedir_tag(t, "x");
                })
            }
            "directory not read in full" => {
                c = case(&["."], false);
                one_way(&c, |t| {
                    copy_into(t, "x");
                    chmod(&t.root.join("x"), 0o700);
                })
            }
            "entry not stat-ed" => {
                c = case(&["."], false);
                one_way(&c, |t| {
                    copy_into(t, "x");
                    // Listed, but its entries cannot be stat-ed.
                    chmod(&t.root.join("x"), 0o744);
                })
            }
            "file whose extents were not read" => {
                c = case(&["."], false);
                one_way(&c, |t| {
                    copy_into(t, "x");
                    chmod(&t.p("x/g"), 0o600);
                })
            }
            "kernel filesystem" => {
                c = case(&["--exclude-kernfs", "."], true);
                mount_not_entered(&c)
            }
            "mount not entered (-x)" => {
                c = case(&["-x", "."], true);
                mount_not_entered(&c)
            }
            other => panic!("no case for the way {other:?} of leaving entries out"),
        };
        let what = format!("{way}, rmapbt={rmapbt}, root={}", c.root);
        assert!(count > 0, "{what}: --stats counts none");
        let s = Seen::new(&what, &keep, freed);
        assert_eq!(freed, 0, "{what}: not as built");
        assert_eq!((s.reclaimable, s.exact), c.want(), "{what}: {s:?}");
        // Marked, the figure is above what deleting frees: at most.
        let bound = (!s.exact).then_some("at_most");
        assert_eq!(s.bound.as_deref(), bound, "{what}: {s:?}");
        done.push(what);
    }
    println!("ways checked: {done:?}");
}
