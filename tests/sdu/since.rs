//! `--since SCAN` (docs/saved-scans.md): a scan that reuses the extent
//! maps a saved scan kept of the files unchanged since, checked against a
//! full scan of the same tree and against delete-and-measure.
//!
//! Every case builds a tree on a fresh loopback filesystem: `s/` is the
//! PATH scanned, `o/` another directory of the same filesystem that is not
//! (where copies are made and deleted "outside the scan"), `p0`..`p3` the
//! pins of delete-and-measure (`reclaim`'s module comment). The tree is
//! exported (`--export`), changed, settled (`settle_keys`: so that
//! `st_blocks` holds still), then scanned in full and with `--since`. The
//! rule (issue 48, "Exact, or marked"): each entry of the `--since` scan
//! is the full scan's, or its Reclaimable is marked; and its du figures
//! (apparent size, Total, files, directories) are the full scan's always.
//!
//! The changes are of two kinds. `change_safe` changes only files whose
//! ctime moves (append, rewrite in place, delete, rename, new directories,
//! chmod, chown) or copies of new files or of extents already shared
//! (their holders' shared ranges stay): as root on XFS with rmapbt every
//! reused map is proven and the document must be the full scan's byte for
//! byte. `change_stale` moves extents without a ctime: reflink copies of
//! unchanged unshared files made inside and outside `s/`, copies of them
//! deleted inside and outside, a dedupe (FIDEDUPERANGE) of two equal files:
//! the six files of `STALE` keep their ctime, size and blocks and their
//! saved maps are wrong.
//!
//! `input` holds the SCANs `--since` refuses, `more` the other formats and
//! filesystems, other PATHs, hard links and a SCAN written by `--since`;
//! `since_random` the property over random change sets.

mod input;
mod more;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::json::{self, Entry, Report};
use crate::reclaim::XFS_OPTS;
use crate::util::*;

pub(crate) const BLK: u64 = 4096;

/// Where the saved scan is written: a directory `nobody` owns, outside
/// `s/`, so that a scan as `nobody` can write and read it.
pub(crate) const SAVED: &str = "nb/saved.json";

/// The files whose map goes stale in `change_stale` while their ctime,
/// size and blocks stay (relative to `s/`).
pub(crate) const STALE: [&str; 6] = [
    "c/src_in",
    "c/src_out",
    "c/del_in",
    "c/del_out",
    "k/k1",
    "k/k2",
];

/// Files the changes leave alone, whose maps are reused and stay true.
pub(crate) const UNTOUCHED: [&str; 6] =
    ["a/keep", "b/orig", "b/copy", "b/self", "b/part", "b/solo"];

// ---------------------------------------------------------------------------
// Running sdu

/// sdu run in `mnt` (PATHs relative to it), as root or as `nobody`.
pub(crate) fn sdu_as(mnt: &Path, root: bool, args: &[&str]) -> Output {
    let mut c = if root {
        Command::new(sdu_bin())
    } else {
        let mut c = Command::new("setpriv");
        c.args(nobody_args()).arg(nobody_bin());
        c
    };
    EACH_COPY.with(|e| {
        if e.get() {
            c.arg("--map-each-copy");
        }
    });
    run_with_timeout(c.current_dir(mnt).args(args), 300)
}

thread_local! {
    /// Every run of this test's thread maps each Btrfs copy with its own
    /// FIEMAP (`--map-each-copy`): where copies are mapped once for all,
    /// `--since` keeps and reuses no map.
    pub(crate) static EACH_COPY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `--export` of `s/` to `SAVED`, silent.
pub(crate) fn export(mnt: &Path, root: bool) {
    export_to(mnt, root, SAVED, &["s"]);
}

/// `sdu --export FILE ARGS`, silent; FILE made readable to `nobody`.
pub(crate) fn export_to(mnt: &Path, root: bool, file: &str, args: &[&str]) {
    let _ = fs::remove_file(mnt.join(file));
    let mut a = vec!["--export", file];
    a.extend_from_slice(args);
    let out = sdu_as(mnt, root, &a);
    // Silent, but for the note of XFS without rmapbt.
    let noted = out
        .stderr
        .lines()
        .all(|l| l.contains("reverse-mapping btree"));
    assert!(
        out.code == Some(0) && out.stdout.is_empty() && noted,
        "{out:?}"
    );
    chmod(&mnt.join(file), 0o644);
}

/// `sdu -a --json [EXTRA] s`, which must exit 0; its stdout parsed, and
/// its stderr.
pub(crate) fn scan(mnt: &Path, root: bool, extra: &[&str]) -> (Vec<u8>, Report, String) {
    let mut a = vec!["-a", "--json"];
    a.extend_from_slice(extra);
    a.push("s");
    let out = sdu_as(mnt, root, &a);
    assert_eq!(out.code, Some(0), "{out:?}");
    let r = json::parse(&out.stdout);
    (out.stdout, r, out.stderr)
}

/// The full scan: silent.
pub(crate) fn full(mnt: &Path, root: bool) -> (Vec<u8>, Report) {
    let (b, r, err) = scan(mnt, root, &[]);
    assert_eq!(err, "", "the full scan as root={root} said something");
    (b, r)
}

/// The `--since SAVED` scan (with `extra`).
pub(crate) fn since(mnt: &Path, root: bool, extra: &[&str]) -> (Vec<u8>, Report, String) {
    let mut a = vec!["--since", SAVED];
    a.extend_from_slice(extra);
    scan(mnt, root, &a)
}

/// The entries of `r` by path.
pub(crate) fn by_path(r: &Report) -> BTreeMap<OsString, &Entry> {
    r.entries.iter().map(|e| (e.path.clone(), e)).collect()
}

/// The entry of `s/rel`.
pub(crate) fn entry<'r>(r: &'r Report, rel: &str) -> &'r Entry {
    let p = if rel.is_empty() {
        "s".to_owned()
    } else {
        format!("s/{rel}")
    };
    r.entries
        .iter()
        .find(|e| e.path == *p)
        .unwrap_or_else(|| panic!("no entry {p}"))
}

/// `--stats`'s files credited with a saved map, and of them proven, of a
/// `-s --since SAVED s` scan; checks its exit status.
pub(crate) fn reused(mnt: &Path, root: bool) -> (u64, u64) {
    let out = sdu_as(mnt, root, &["--stats", "--since", SAVED, "-s", "s"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let key = "files credited with a saved map (--since), proven";
    let line = (out.stderr.lines())
        .find_map(|l| l.trim_start().strip_prefix(key))
        .unwrap_or_else(|| panic!("no {key:?} in --stats:\n{}", out.stderr));
    let n: Vec<u64> = (line.split(|c: char| c == ',' || c.is_whitespace()))
        .filter(|w| !w.is_empty())
        .map(|w| w.parse().unwrap_or_else(|_| panic!("bad line {line:?}")))
        .collect();
    assert_eq!(n.len(), 2, "{line:?}");
    (n[0], n[1])
}

/// What breaks the rule "equal or marked" between the `--since` scan and
/// the full one: one line per entry.
pub(crate) fn unmarked_differences(full: &Report, since: &Report) -> Vec<String> {
    let mut bad = Vec::new();
    let (f, s) = (by_path(full), by_path(since));
    if f.keys().ne(s.keys()) {
        bad.push(format!(
            "other entries: full {:?}, --since {:?}",
            f.keys().collect::<Vec<_>>(),
            s.keys().collect::<Vec<_>>()
        ));
    }
    for (p, a) in &f {
        let Some(b) = s.get(p) else { continue };
        let du = |e: &Entry| (e.kind, e.depth, e.apparent, e.total, e.files, e.dirs);
        if du(a) != du(b) {
            bad.push(format!(
                "{p:?}: du figures differ: full {a:?}, --since {b:?}"
            ));
        } else if a != b && b.reclaimable_exact {
            bad.push(format!(
                "{p:?}: differs unmarked: full {a:?}, --since {b:?}"
            ));
        }
    }
    if (&full.errors, full.error_count, &full.roots)
        != (&since.errors, since.error_count, &since.roots)
    {
        bad.push("errors or roots differ".into());
    }
    bad
}

pub(crate) fn assert_equal_or_marked(full: &Report, since: &Report, what: &str) {
    let bad = unmarked_differences(full, since);
    assert!(bad.is_empty(), "{what}:\n{}", bad.join("\n"));
}

/// The paths `--verify` names as stale, from its stderr, relative to `s/`.
pub(crate) fn named_stale(stderr: &str) -> Vec<String> {
    let mut v: Vec<String> = stderr
        .lines()
        .filter(|l| l.contains("its extent map changed since the saved scan"))
        .filter_map(|l| l.split('\'').nth(1))
        .map(|p| p.strip_prefix("s/").unwrap_or(p).to_owned())
        .collect();
    v.sort();
    v
}

// ---------------------------------------------------------------------------
// The tree and its changes

/// A filesystem for the cases: XFS (reflink, rmapbt) mounted without
/// speculative preallocation, or Btrfs; `nb/` owned by `nobody`.
pub(crate) fn make_fs(kind: FsKind) -> Option<Mounted> {
    make_fs_with(kind, &[])
}

/// [`make_fs`] with `mkfs` options after the harness's own.
pub(crate) fn make_fs_with(kind: FsKind, mkfs: &[&str]) -> Option<Mounted> {
    let opts = match kind {
        FsKind::Xfs => XFS_OPTS,
        FsKind::Ext4 => "nodelalloc",
        FsKind::Btrfs => "space_cache=v2",
    };
    let fs = Mounted::with_mkfs(kind, mkfs, opts)?;
    let nb = fs.path().join("nb");
    fs::create_dir(&nb).unwrap();
    std::os::unix::fs::chown(&nb, Some(65534), Some(65534)).unwrap();
    Some(fs)
}

/// `cp --reflink=never SRC DST`: equal bytes in extents of their own.
pub(crate) fn copy_plain(t: &Tree, src: &str, dst: &str) {
    run(Command::new("cp")
        .arg("--reflink=never")
        .arg(t.p(src))
        .arg(t.p(dst)))
    .assert_ok();
    sync_fs(t.root);
}

/// FIDEDUPERANGE of all of `src` onto `dst` (`xfs_io -c "dedupe SRC 0 0
/// LEN" DST`), which must dedupe every byte.
pub(crate) fn dedupe(t: &Tree, src: &str, dst: &str) {
    let len = fs::metadata(t.p(src)).unwrap().len();
    let out = run(Command::new("xfs_io")
        .arg("-c")
        .arg(format!("dedupe {} 0 0 {len}", t.p(src).display()))
        .arg(t.p(dst)));
    out.assert_ok();
    assert!(
        out.stdout_str()
            .contains(&format!("deduped {len}/{len} bytes")),
        "{out:?}"
    );
}

/// Appends `len` fresh bytes to `rel`.
pub(crate) fn append(t: &Tree, rel: &str, len: u64) {
    let size = fs::metadata(t.p(rel)).unwrap().len();
    t.overwrite(rel, size, len);
}

/// The tree before the saved scan (blocks of 4 KiB):
///
/// ```text
/// p0/ p1/ p2/ p3/   pins (delete-and-measure)
/// s/a/ app (3) rw (4) gone (2) mv (2) keep (5) mode (2) own (2)
/// s/b/ orig (6)  copy (FICLONE of orig)  self (4, its 0..1 cloned at 4..5)
///      part (5, orig's 2..3 cloned at 1..2)  solo (3)
/// s/c/ src_in (4)  src_out (4)  del_in (3) + del_in_copy (FICLONE)
///      del_out (3) (+ o/del_out_copy, FICLONE)
/// s/k/ k1 (4)  k2 (cp --reflink=never of k1)
/// o/x (2)
/// ```
pub(crate) fn build(t: &Tree) {
    for p in ["p0", "p1", "p2", "p3"] {
        t.dir(p);
    }
    let b = BLK;
    for (f, n) in [
        ("s/a/app", 3),
        ("s/a/rw", 4),
        ("s/a/gone", 2),
        ("s/a/mv", 2),
        ("s/a/keep", 5),
        ("s/a/mode", 2),
        ("s/a/own", 2),
    ] {
        t.write(f, n * b);
    }
    t.write("s/b/orig", 6 * b);
    t.clone("s/b/orig", "s/b/copy");
    t.write("s/b/self", 4 * b);
    t.clone_range("s/b/self", 0, "s/b/self", 4 * b, 2 * b);
    t.write("s/b/part", 5 * b);
    t.clone_range("s/b/orig", 2 * b, "s/b/part", b, 2 * b);
    t.write("s/b/solo", 3 * b);
    t.write("s/c/src_in", 4 * b);
    t.write("s/c/src_out", 4 * b);
    t.write("s/c/del_in", 3 * b);
    t.clone("s/c/del_in", "s/c/del_in_copy");
    t.write("s/c/del_out", 3 * b);
    t.clone("s/c/del_out", "o/del_out_copy");
    t.write("s/k/k1", 4 * b);
    copy_plain(t, "s/k/k1", "s/k/k2");
    t.write("o/x", 2 * b);
}

/// Changes whose every effect a ctime shows, or that leave each holder's
/// shared ranges as they were.
pub(crate) fn change_safe(t: &Tree) {
    let b = BLK;
    append(t, "s/a/app", b);
    t.overwrite("s/a/rw", b, b);
    fs::remove_file(t.p("s/a/gone")).unwrap();
    fs::rename(t.p("s/a/mv"), t.p("s/n/m/moved")).unwrap();
    t.dir("s/n/empty");
    t.write("s/n/new", 3 * b);
    t.clone("s/n/new", "s/n/new_copy");
    t.clone("s/n/new", "o/new_copy");
    chmod(&t.p("s/a/mode"), 0o755);
    std::os::unix::fs::chown(t.p("s/a/own"), Some(65534), Some(65534)).unwrap();
    // orig's extent is shared already: a third holder inside and a fourth
    // outside change no holder's shared ranges.
    t.clone("s/b/orig", "s/n/orig3");
    t.clone("s/b/orig", "o/orig4");
}

/// Changes that make the maps of `STALE` wrong without a ctime.
pub(crate) fn change_stale(t: &Tree) {
    t.clone("s/c/src_in", "s/n/src_in_copy");
    t.clone("s/c/src_out", "o/src_out_copy");
    fs::remove_file(t.p("s/c/del_in_copy")).unwrap();
    fs::remove_file(t.p("o/del_out_copy")).unwrap();
    dedupe(t, "s/k/k1", "s/k/k2");
}

/// The case is not empty: each stale map gives other Exclusive and Shared
/// than the truth (src_in, src_out: shared now, saved unshared; del_in,
/// del_out: the other way; k1, k2: deduped).
pub(crate) fn assert_stale_differ(full: &Report, since: &Report) {
    let fig = |r: &Report, rel: &str| {
        let e = entry(r, rel);
        (e.exclusive, e.shared)
    };
    for rel in STALE {
        assert_ne!(
            fig(since, rel),
            fig(full, rel),
            "{rel}: its saved map is not stale"
        );
    }
}

/// The device, inode, ctime (s, ns), size and blocks of `s/rel`: the key
/// `--since` reuses a map by.
pub(crate) fn key(mnt: &Path, rel: &str) -> (u64, u64, i64, i64, u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let m = fs::symlink_metadata(mnt.join("s").join(rel)).unwrap();
    (
        m.dev(),
        m.ino(),
        m.ctime(),
        m.ctime_nsec(),
        m.size(),
        m.blocks(),
    )
}

/// Makes `st_blocks` hold still after changes. XFS: unmounted and
/// mounted (delayed allocation written, copy-on-write staging dropped).
/// Btrfs: a sync (every write here is fsynced, so nothing is delayed),
/// not a remount: a subvolume's `st_dev` is an anonymous device number
/// taken at mount time, and another mount on the machine may take the old
/// one meanwhile (measured: 92, 92, 92, 87, 88 over five remounts), after
/// which no key matches and nothing is reused.
pub(crate) fn settle_keys(fs: &Mounted) {
    let on_btrfs = rustix::fs::statfs(fs.path()).unwrap().f_type as u64 == 0x9123_683e;
    if on_btrfs {
        btrfs(&["filesystem", "sync"], fs.path());
    } else {
        fs.remount();
    }
}

/// Builds, settles, exports (as root or not), changes (`stale` too or
/// not) and settles again; checks that the files the changes must leave
/// alone kept their keys.
pub(crate) fn prepare(fs: &Mounted, export_as_root: bool, stale: bool) {
    prepare_with(fs, stale, |mnt| export(mnt, export_as_root));
}

/// [`prepare`], the tree saved by `export`.
pub(crate) fn prepare_with(fs: &Mounted, stale: bool, export: impl FnOnce(&Path)) {
    let mnt = fs.path();
    let t = Tree { root: mnt };
    build(&t);
    fs.remount();
    export(mnt);
    let keys = |names: &[&str]| -> Vec<_> { names.iter().map(|r| key(mnt, r)).collect() };
    let before = (keys(&UNTOUCHED), keys(&STALE));
    change_safe(&t);
    if stale {
        change_stale(&t);
    }
    settle_keys(fs);
    let after = (keys(&UNTOUCHED), keys(&STALE));
    assert_eq!(
        before, after,
        "the files {UNTOUCHED:?} and {STALE:?} must keep their device, inode, ctime, size \
         and blocks"
    );
}

/// As root, `--since SAVED` prints the full scan's document byte for byte
/// and nothing on stderr (`what`: the case, for the message); returns it.
pub(crate) fn assert_since_is_full(mnt: &Path, what: &str) -> Vec<u8> {
    let (want, _) = full(mnt, true);
    let (got, _, err) = since(mnt, true, &[]);
    assert_eq!(err, "", "{what}: --since said something");
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(&want),
        "{what}: --since is not the full scan"
    );
    want
}

/// Without a proof: every reused file is marked, and the untouched files'
/// Total, Exclusive and Shared are the full scan's.
pub(crate) fn assert_reused_marked(full_r: &Report, got: &Report, err: &str) {
    for rel in UNTOUCHED.iter().chain(&STALE) {
        let e = entry(got, rel);
        assert!(!e.reclaimable_exact, "reused {rel} unmarked: {e:?}\n{err}");
    }
    for rel in UNTOUCHED {
        let (a, b) = (entry(got, rel), entry(full_r, rel));
        assert_eq!(
            (a.total, a.exclusive, a.shared),
            (b.total, b.exclusive, b.shared),
            "{rel}"
        );
    }
}

// ---------------------------------------------------------------------------
// XFS

/// As root on XFS with rmapbt, after changes that leave every reused map
/// true: every one is proven, and the document is the full scan's byte for
/// byte, silently.
#[test]
fn xfs_as_root_unchanged_maps_proven_byte_identical() {
    let Some(fs) = make_fs(FsKind::Xfs) else {
        return;
    };
    let mnt = fs.path();
    prepare(&fs, true, false);
    assert_since_is_full(mnt, "as root with rmapbt, the safe changes");
    // And maps were reused, all proven: the files of UNTOUCHED and STALE
    // and c/del_in_copy, every file whose key the safe changes kept.
    let n = (UNTOUCHED.len() + STALE.len() + 1) as u64;
    assert_eq!(reused(mnt, true), (n, n));
}

/// As root on XFS with rmapbt, after every change: each saved map is
/// checked against the reverse mappings before the walk; the stale ones
/// (copies made and deleted inside and outside, the dedupe) are not used,
/// their files mapped again, so the document is the full scan's byte for
/// byte and nothing is said; `--stats` counts the proven and the stale;
/// `--verify` names exactly the stale files and gives the same document.
#[test]
fn xfs_as_root_stale_maps_found_and_mapped_again_verify_names_them() {
    let Some(fs) = make_fs(FsKind::Xfs) else {
        return;
    };
    let mnt = fs.path();
    prepare(&fs, true, true);
    let want = assert_since_is_full(mnt, "as root on XFS, every change");
    let n = UNTOUCHED.len() as u64;
    assert_eq!(reused(mnt, true), (n, n), "as root: the untouched, proven");
    let out = sdu_as(mnt, true, &["--stats", "--since", SAVED, "-s", "s"]);
    let key = "saved maps verified; stale, not checked (mapped again)";
    let line = (out.stderr.lines())
        .find_map(|l| l.trim_start().strip_prefix(key))
        .unwrap_or_else(|| panic!("no {key:?} in --stats:\n{}", out.stderr));
    assert_eq!(line.trim(), format!("0; {}, 0", STALE.len()), "{line:?}");
    let (bytes, _, verr) = since(mnt, true, &["--verify"]);
    let mut want_named: Vec<String> = STALE.iter().map(|s| s.to_string()).collect();
    want_named.sort();
    assert_eq!(named_stale(&verr), want_named, "--verify's stderr:\n{verr}");
    assert_eq!(
        String::from_utf8_lossy(&bytes),
        String::from_utf8_lossy(&want),
        "--verify is not the full scan"
    );
}

/// As `nobody` on XFS (no GETFSMAP): every reused file is marked; the
/// untouched files' Total, Exclusive and Shared are the full scan's; every
/// entry equal or marked.
#[test]
fn xfs_as_nobody_every_reused_file_marked() {
    let Some(fs) = make_fs(FsKind::Xfs) else {
        return;
    };
    let mnt = fs.path();
    prepare(&fs, false, true);
    let (_, full_r) = full(mnt, false);
    let (_, got, err) = since(mnt, false, &[]);
    assert_equal_or_marked(&full_r, &got, "--since as nobody after every change");
    assert_stale_differ(&full_r, &got);
    assert_reused_marked(&full_r, &got, &err);
    // The files changed were mapped again: as the full scan says.
    for rel in ["a/app", "a/rw", "a/mode", "a/own", "n/m/moved", "n/new"] {
        assert_eq!(entry(&got, rel), entry(&full_r, rel), "{rel} (mapped)");
    }
    let n = (UNTOUCHED.len() + STALE.len()) as u64;
    assert_eq!(reused(mnt, false), (n, 0), "reused as nobody, none proven");
}

// ---------------------------------------------------------------------------
// Btrfs

/// On Btrfs as `nobody`, where a file's snapshot copies are mapped once for
/// all, `--since` reuses no map: the full scan's document. With
/// `--map-each-copy` (FIEMAP each file; nothing proves a map): the export
/// keeps maps, they are reused (`--stats`), every reused file is marked
/// and every entry is equal or marked. As root the tree search runs first:
/// nothing is reused and the document is the full scan's byte for byte.
#[test]
fn btrfs_nobody_reuses_and_marks_root_reuses_nothing() {
    let Some(fs) = make_fs(FsKind::Btrfs) else {
        return;
    };
    let mnt = fs.path();
    prepare(&fs, false, true);
    let (want, _) = full(mnt, false);
    let (got, _, err) = since(mnt, false, &[]);
    assert_eq!(got, want, "copies mapped once: nothing reused");
    assert!(
        err.contains("keeps no extent maps") && err.lines().count() == 1,
        "{err}"
    );
    assert_eq!(reused(mnt, false), (0, 0));
    drop(fs);
    EACH_COPY.with(|e| e.set(true));
    let Some(fs) = make_fs(FsKind::Btrfs) else {
        return;
    };
    let mnt = fs.path();
    prepare(&fs, false, true);
    let (_, full_r) = full(mnt, false);
    let (_, got, err) = since(mnt, false, &[]);
    assert_equal_or_marked(&full_r, &got, "--since on Btrfs as nobody");
    assert_stale_differ(&full_r, &got);
    assert_reused_marked(&full_r, &got, &err);
    let n = (UNTOUCHED.len() + STALE.len()) as u64;
    assert_eq!(reused(mnt, false), (n, 0), "reused as nobody, none proven");

    assert_since_is_full(mnt, "as root on Btrfs");
    assert_eq!(reused(mnt, true), (0, 0), "reused as root on Btrfs");
}

// ---------------------------------------------------------------------------
// The dedupe, before and after; delete and measure

/// A copy of the image of `fs` to put back after a deletion.
struct Saved(PathBuf, #[allow(dead_code)] TestDir);

impl Saved {
    fn take(fs: &Mounted) -> Saved {
        let dir = TestDir::new();
        let bak = dir.path().join("bak.img");
        fs.unmounted(|img| {
            run(Command::new("cp").arg("--sparse=always").arg(img).arg(&bak)).assert_ok();
        });
        Saved(bak, dir)
    }

    fn restore(&self, fs: &Mounted) {
        fs.unmounted(|img| {
            run(Command::new("cp")
                .arg("--sparse=always")
                .arg(&self.0)
                .arg(img))
            .assert_ok();
        });
    }
}

/// Deletes `s/rel` and returns what XFS freed (statvfs, settled).
fn freed_by_deleting(fs: &Mounted, rel: &str) -> u64 {
    let mnt = fs.path();
    let d = mnt.join("s").join(rel);
    if d.is_dir() {
        xfs_preconditions(mnt, &d);
    }
    let before = fs.settled_used();
    if d.is_dir() {
        fs::remove_dir_all(&d).unwrap();
    } else {
        fs::remove_file(&d).unwrap();
    }
    let after = fs.settled_used();
    before
        .checked_sub(after)
        .unwrap_or_else(|| panic!("deleting {rel} grew the used space"))
}

/// Two equal files, saved unshared, then deduped (their ctimes stay). The
/// saved maps give a wrong figure: Exclusive 4 blocks each, `s/k` would
/// free 8 blocks, where deleting it frees 4. Without a proof that figure
/// would be shown exact. As `nobody` nothing proves the maps: the wrong
/// figures are marked either way. As root with rmapbt they are found stale
/// before the walk and the files mapped again: the truth, unmarked.
/// `--verify` names both and gives the truth, which deleting `s/k`
/// confirms.
#[test]
fn xfs_dedupe_after_the_saved_scan_is_marked_and_verify_gives_the_truth() {
    let Some(fs) = make_fs(FsKind::Xfs) else {
        return;
    };
    let mnt = fs.path();
    let t = Tree { root: mnt };
    for p in ["p0", "p1", "p2", "p3"] {
        t.dir(p);
    }
    t.write("s/k/k1", 4 * BLK);
    copy_plain(&t, "s/k/k1", "s/k/k2");
    t.write("s/k/z", BLK);
    fs.remount();
    export(mnt, true);
    // Before the dedupe the reused figures are the truth.
    let (want, _) = full(mnt, true);
    let (got, _, err) = since(mnt, true, &[]);
    assert_eq!((got, err.as_str()), (want, ""), "before the dedupe");
    let keys = [key(mnt, "k/k1"), key(mnt, "k/k2")];
    dedupe(&t, "s/k/k1", "s/k/k2");
    fs.remount();
    assert_eq!(
        keys,
        [key(mnt, "k/k1"), key(mnt, "k/k2")],
        "dedupe moved a key"
    );
    let (want, truth) = full(mnt, true);
    // As root: found stale, mapped again.
    let (got, _, err) = since(mnt, true, &[]);
    assert_eq!(
        (got, err.as_str()),
        (want.clone(), ""),
        "as root after the dedupe"
    );
    // As nobody: the saved maps, wrong and marked.
    let (_, got, err) = since(mnt, false, &[]);
    let (_, truth_nb) = full(mnt, false);
    for rel in ["k/k1", "k/k2", "k"] {
        let (g, w) = (entry(&got, rel), entry(&truth_nb, rel));
        assert_ne!(
            (g.exclusive, g.shared, g.reclaimable),
            (w.exclusive, w.shared, w.reclaimable),
            "the reused figures of {rel} are the truth: the case shows nothing"
        );
        assert!(!g.reclaimable_exact, "{rel} not marked: {g:?}\n{err}");
    }
    // What the saved maps say (nothing shared), and the truth (k1 and
    // k2 one extent of 4 blocks): from the tree's construction.
    let (g, w) = (entry(&got, "k"), entry(&truth_nb, "k"));
    assert_eq!(g.reclaimable, g.total, "reused s/k");
    assert_eq!(w.reclaimable + 4 * BLK, w.total, "the full scan's s/k");
    assert_equal_or_marked(&truth_nb, &got, "after the dedupe");
    let (bytes, _, verr) = since(mnt, true, &["--verify"]);
    assert_eq!(named_stale(&verr), ["k/k1", "k/k2"], "{verr}");
    assert_eq!(bytes, want, "--verify is not the full scan");
    let k = entry(&truth, "k").clone();
    assert!(k.reclaimable_exact, "{k:?}");
    assert_eq!(
        freed_by_deleting(&fs, "k"),
        k.reclaimable,
        "the full scan's s/k"
    );
}

/// Delete and measure every directory `--since` gives unmarked, each from
/// the same image: what XFS frees is its Reclaimable. After the safe
/// changes (everything proven), and after every change (the entries left
/// unmarked).
fn measure_unmarked(stale: bool) {
    let Some(fs) = make_fs(FsKind::Xfs) else {
        return;
    };
    let mnt = fs.path();
    prepare(&fs, true, stale);
    let (_, got, _) = since(mnt, true, &[]);
    let dirs: Vec<(String, u64)> = got
        .entries
        .iter()
        .filter(|e| e.kind == crate::json::Kind::Dir && e.reclaimable_exact)
        .map(|e| {
            let p = e.path.to_str().unwrap();
            let rel = p.strip_prefix("s/").unwrap_or("").to_owned();
            (rel, e.reclaimable)
        })
        .filter(|(rel, _)| !rel.is_empty())
        .collect();
    let names: Vec<&str> = dirs.iter().map(|d| d.0.as_str()).collect();
    // s/a holds nothing shared: it is exact in both cases; after the safe
    // changes so is s/b, whose extents are held outside too.
    assert!(names.contains(&"a"), "{names:?}");
    if !stale {
        assert!(names.contains(&"b") && names.contains(&"n"), "{names:?}");
    }
    let image = Saved::take(&fs);
    let mut bad = Vec::new();
    for (rel, reclaimable) in &dirs {
        let freed = freed_by_deleting(&fs, rel);
        if freed != *reclaimable {
            bad.push(format!(
                "s/{rel}: --since says {reclaimable}, deleting freed {freed}"
            ));
        }
        image.restore(&fs);
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn xfs_unmarked_since_figures_are_what_deleting_frees_after_safe_changes() {
    measure_unmarked(false);
}

#[test]
fn xfs_unmarked_since_figures_are_what_deleting_frees_after_every_change() {
    measure_unmarked(true);
}
