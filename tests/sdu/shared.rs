//! The sharing figures (`exclusive`, `shared`, `reclaimable`) on trees
//! built with known sharing: an XFS tree checked to the byte against a
//! block-level model of what was written and cloned, a Btrfs tree checked
//! against `btrfs filesystem du`, filesystems that cannot share (ext4,
//! tmpfs), determinism across thread counts and runs, and the invariants
//! that hold on every entry of every tree.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::args;
use crate::json::{Entry, Kind, Report};
use crate::util::*;

/// The block size of the XFS images (mkfs.xfs's default for a 512 MiB
/// image); every offset and length in the XFS tree is a multiple of it.
const BLK: u64 = 4096;

/// `n` bytes nobody else writes: each call continues a fresh xorshift
/// stream, so no two writes of the whole test binary are alike (nothing to
/// compress or dedupe behind the model's back).
fn fresh_bytes(n: usize) -> Vec<u8> {
    static SEED: AtomicU64 = AtomicU64::new(1);
    let mut x = SEED
        .fetch_add(1, Ordering::Relaxed)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        | 1;
    let mut v = Vec::with_capacity(n + 8);
    while v.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(n);
    v
}

/// `xfs_io -f -c "reflink SRC SOFF DOFF LEN" DST` (FICLONERANGE: rustix
/// has no wrapper and `unsafe` is denied, tests included). Byte offsets.
fn clone_range(src: &Path, soff: u64, dst: &Path, doff: u64, len: u64) {
    run(Command::new("xfs_io")
        .arg("-f")
        .arg("-c")
        .arg(format!("reflink {} {soff} {doff} {len}", src.display()))
        .arg(dst))
    .assert_ok();
}

/// A whole-file clone (FICLONE) of `src` as the new file `dst`.
fn clone_file(src: &Path, dst: &Path) {
    let s = File::open(src).unwrap();
    let d = File::create_new(dst).unwrap_or_else(|e| panic!("{}: {e}", dst.display()));
    rustix::fs::ioctl_ficlone(&d, &s)
        .unwrap_or_else(|e| panic!("FICLONE {} -> {}: {e}", src.display(), dst.display()));
}

fn cp_reflink(src: &Path, dst: &Path) {
    run(Command::new("cp").arg("--reflink=always").arg(src).arg(dst)).assert_ok();
}

// ---------------------------------------------------------------------------
// Block-level model (XFS)

/// One inode of the model: its links (relative to the filesystem root) and,
/// per logical block, the id of the physical block it maps (None = hole).
#[derive(Debug)]
struct Inode {
    links: Vec<PathBuf>,
    blocks: Vec<Option<u64>>,
}

/// Every file of the filesystem as written: block ids are synthetic (a
/// fresh write takes new ids, a clone copies them, an overwrite takes new
/// ids again), which is all XFS's per-block refcounting depends on.
struct Model {
    mnt: PathBuf,
    inodes: Vec<Inode>,
    by_link: HashMap<PathBuf, usize>,
    next_id: u64,
}

/// The four sharing-related figures of one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Figs {
    total: u64,
    exclusive: u64,
    shared: u64,
    reclaimable: u64,
}

impl Model {
    fn new(mnt: &Path) -> Model {
        Model {
            mnt: mnt.to_owned(),
            inodes: Vec::new(),
            by_link: HashMap::new(),
            next_id: 0,
        }
    }

    fn abs(&self, rel: &str) -> PathBuf {
        self.mnt.join(rel)
    }

    fn ino(&self, rel: &str) -> usize {
        *self
            .by_link
            .get(Path::new(rel))
            .unwrap_or_else(|| panic!("no file {rel} in the model"))
    }

    fn fresh(&mut self, n: u64) -> Vec<Option<u64>> {
        let v = (self.next_id..self.next_id + n).map(Some).collect();
        self.next_id += n;
        v
    }

    fn add(&mut self, rel: &str, blocks: Vec<Option<u64>>) {
        if let Some(parent) = self.abs(rel).parent() {
            fs::create_dir_all(parent).unwrap();
        }
        let i = self.inodes.len();
        self.inodes.push(Inode {
            links: vec![PathBuf::from(rel)],
            blocks,
        });
        assert!(self.by_link.insert(PathBuf::from(rel), i).is_none());
    }

    /// A new file of `n` freshly written blocks.
    fn write(&mut self, rel: &str, n: u64) {
        self.add(rel, Vec::new());
        File::create_new(self.abs(rel)).unwrap();
        self.overwrite(rel, 0, n);
    }

    /// Writes `n` fresh blocks at block `off` of an existing file and
    /// fsyncs: where the blocks were shared, copy-on-write gives this file
    /// new ones and leaves the others' alone.
    fn overwrite(&mut self, rel: &str, off: u64, n: u64) {
        let f = OpenOptions::new().write(true).open(self.abs(rel)).unwrap();
        f.write_all_at(&fresh_bytes((n * BLK) as usize), off * BLK)
            .unwrap();
        f.sync_all().unwrap();
        let ids = self.fresh(n);
        let i = self.ino(rel);
        self.set(i, off, &ids);
    }

    fn set(&mut self, i: usize, off: u64, ids: &[Option<u64>]) {
        let b = &mut self.inodes[i].blocks;
        let end = off as usize + ids.len();
        if b.len() < end {
            b.resize(end, None);
        }
        b[off as usize..end].copy_from_slice(ids);
    }

    /// A sparse file of `len` blocks with fresh data at the given
    /// `(offset, count)` block ranges.
    fn sparse(&mut self, rel: &str, len: u64, data: &[(u64, u64)]) {
        self.add(rel, vec![None; len as usize]);
        File::create_new(self.abs(rel))
            .unwrap()
            .set_len(len * BLK)
            .unwrap();
        for &(off, n) in data {
            self.overwrite(rel, off, n);
        }
    }

    /// FICLONE: `dst` (new) maps exactly the blocks of `src`.
    fn clone_file(&mut self, src: &str, dst: &str) {
        let b = self.inodes[self.ino(src)].blocks.clone();
        self.add(dst, b);
        clone_file(&self.abs(src), &self.abs(dst));
    }

    /// FICLONERANGE of `n` blocks from block `soff` of `src` to block
    /// `doff` of `dst` (created when new, with a hole before `doff`).
    fn clone_range(&mut self, src: &str, soff: u64, dst: &str, doff: u64, n: u64) {
        if !self.by_link.contains_key(Path::new(dst)) {
            self.add(dst, Vec::new());
        }
        clone_range(
            &self.abs(src),
            soff * BLK,
            &self.abs(dst),
            doff * BLK,
            n * BLK,
        );
        let s = self.ino(src);
        let ids = self.inodes[s].blocks[soff as usize..(soff + n) as usize].to_vec();
        let d = self.ino(dst);
        self.set(d, doff, &ids);
    }

    fn link(&mut self, existing: &str, new: &str) {
        fs::create_dir_all(self.abs(new).parent().unwrap()).unwrap();
        fs::hard_link(self.abs(existing), self.abs(new)).unwrap();
        let i = self.ino(existing);
        self.inodes[i].links.push(PathBuf::from(new));
        self.by_link.insert(PathBuf::from(new), i);
    }

    /// Mappings of every block id: how many (inode, logical block) pairs
    /// reference it, over the inodes `keep` selects.
    fn refcounts(&self, keep: impl Fn(&Inode) -> bool) -> HashMap<u64, u64> {
        let mut rc = HashMap::new();
        for ino in self.inodes.iter().filter(|i| keep(i)) {
            for id in ino.blocks.iter().flatten() {
                *rc.entry(*id).or_insert(0) += 1;
            }
        }
        rc
    }

    /// Checks the model against the filesystem itself (so that a figure
    /// mismatch later is sdu's, not the model's): every inode's
    /// `st_blocks`, and `filefrag -v`'s map, which must match the model's
    /// ids one to one, with the SHARED flag exactly on the blocks the model
    /// says more than one mapping references.
    fn verify_against_fs(&self) {
        let rc = self.refcounts(|_| true);
        let mut id_to_phys: HashMap<u64, u64> = HashMap::new();
        let mut phys_to_id: HashMap<u64, u64> = HashMap::new();
        let mut bad = String::new();
        for ino in &self.inodes {
            let p = self.mnt.join(&ino.links[0]);
            let md = fs::symlink_metadata(&p).unwrap();
            let alloc = ino.blocks.iter().flatten().count() as u64 * BLK;
            if md.blocks() * 512 != alloc {
                let _ = writeln!(
                    bad,
                    "{}: st_blocks*512 = {}, model {alloc}",
                    p.display(),
                    md.blocks() * 512
                );
            }
            if md.nlink() != ino.links.len() as u64 {
                let _ = writeln!(bad, "{}: nlink {}", p.display(), md.nlink());
            }
            let mut phys = vec![None; ino.blocks.len()];
            for (lo, ph, len, shared) in filefrag(&p) {
                for k in 0..len {
                    let l = (lo + k) as usize;
                    if l >= phys.len() {
                        phys.resize(l + 1, None);
                    }
                    phys[l] = Some((ph + k, shared));
                }
            }
            for (l, (m, f)) in ino.blocks.iter().zip(&phys).enumerate() {
                let ok = match (m, f) {
                    (None, None) => true,
                    (Some(id), Some((ph, sh))) => {
                        *id_to_phys.entry(*id).or_insert(*ph) == *ph
                            && *phys_to_id.entry(*ph).or_insert(*id) == *id
                            && *sh == (rc[id] >= 2)
                    }
                    _ => false,
                };
                if !ok {
                    let _ = writeln!(
                        bad,
                        "{} block {l}: model {m:?} (refs {:?}), filefrag {f:?}",
                        p.display(),
                        m.map(|id| rc[&id])
                    );
                }
            }
            if phys.len() > ino.blocks.len() {
                let _ = writeln!(bad, "{}: blocks past the model's end", p.display());
            }
        }
        assert!(
            bad.is_empty(),
            "the test's block model disagrees with the filesystem (a test bug, not sdu's):\n{bad}"
        );
    }

    /// What sdu must report for each directory under `root` (relative to
    /// the mount, root included), from the model and the directories' own
    /// blocks; and the exact reclaimable bytes, which sdu, seeing only the
    /// scan, may overstate (docs/design.md, "Reclaimable": "otherwise an upper bound").
    fn expected(&self, root: &str) -> BTreeMap<PathBuf, (Figs, u64)> {
        let root = Path::new(root);
        let mut dirs = Vec::new();
        list_dirs(&self.mnt, root, &mut dirs);
        let under = |p: &Path, d: &Path| p.starts_with(d) && p != d;
        let scanned: Vec<bool> = self
            .inodes
            .iter()
            .map(|i| i.links.iter().any(|l| under(l, root)))
            .collect();
        let rc_all = self.refcounts(|_| true);
        let idx = |i: &Inode| self.by_link[&i.links[0]];
        let rc_scan = self.refcounts(|i| scanned[idx(i)]);
        let is_shared = |id: &u64| rc_all[id] >= 2;
        // Inodes referencing each shared id (whole filesystem).
        let mut users: HashMap<u64, HashSet<usize>> = HashMap::new();
        for (k, ino) in self.inodes.iter().enumerate() {
            for id in ino.blocks.iter().flatten().filter(|id| is_shared(id)) {
                users.entry(*id).or_default().insert(k);
            }
        }
        let mut out = BTreeMap::new();
        for (d, _) in &dirs {
            let own_dirs: u64 = dirs
                .iter()
                .filter(|(e, _)| e.starts_with(d))
                .map(|(_, b)| b)
                .sum();
            let has_link = |k: usize| self.inodes[k].links.iter().any(|l| under(l, d));
            let contained = |k: usize| self.inodes[k].links.iter().all(|l| under(l, d));
            let mut f = Figs {
                total: own_dirs,
                exclusive: own_dirs,
                shared: 0,
                reclaimable: own_dirs,
            };
            let mut ids = HashSet::new();
            for (k, ino) in self.inodes.iter().enumerate().filter(|(k, _)| has_link(*k)) {
                let alloc = ino.blocks.iter().flatten().count() as u64 * BLK;
                let sh = ino.blocks.iter().flatten().filter(|id| is_shared(id));
                let sh_bytes = sh.clone().count() as u64 * BLK;
                ids.extend(sh);
                f.total += alloc;
                f.exclusive += alloc - sh_bytes;
                if contained(k) {
                    f.reclaimable += alloc - sh_bytes;
                }
            }
            f.shared = ids.len() as u64 * BLK;
            let mut exact = f.reclaimable;
            for id in ids {
                let u = &users[&id];
                let all_contained = u.iter().all(|&k| !scanned[k] || contained(k));
                if rc_scan[&id] >= 2 && all_contained {
                    f.reclaimable += BLK;
                }
                if u.iter().all(|&k| contained(k)) {
                    exact += BLK;
                }
            }
            out.insert(d.clone(), (f, exact));
        }
        out
    }
}

/// The directories under `mnt/rel` (itself included), relative to `mnt`,
/// with their own allocated bytes.
fn list_dirs(mnt: &Path, rel: &Path, out: &mut Vec<(PathBuf, u64)>) {
    let md = fs::symlink_metadata(mnt.join(rel)).unwrap();
    out.push((rel.to_owned(), md.blocks() * 512));
    for e in fs::read_dir(mnt.join(rel)).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            list_dirs(mnt, &rel.join(e.file_name()), out);
        }
    }
}

/// `filefrag -v PATH` (e2fsprogs, FIEMAP in filesystem blocks):
/// `(logical, physical, length, shared)` per extent. Panics on an extent
/// without a real address (delalloc, inline, unknown) or unwritten: the
/// tree is settled before this runs.
fn filefrag(path: &Path) -> Vec<(u64, u64, u64, bool)> {
    let out = run(Command::new("filefrag").arg("-v").arg(path));
    out.assert_ok();
    let text = out.stdout_str();
    assert!(
        text.contains("blocks of 4096 bytes"),
        "filefrag does not count in 4096-byte blocks:\n{text}"
    );
    let mut v = Vec::new();
    for line in text.lines() {
        let parts: Vec<&str> = line.split(':').map(str::trim).collect();
        if parts.len() < 4 || parts[0].parse::<u64>().is_err() {
            continue;
        }
        let range = |s: &str| -> (u64, u64) {
            let (a, b) = s.split_once("..").unwrap();
            (a.trim().parse().unwrap(), b.trim().parse().unwrap())
        };
        let (l0, l1) = range(parts[1]);
        let (p0, _) = range(parts[2]);
        let flags = parts.last().unwrap();
        for f in ["delalloc", "inline", "unknown", "unwritten"] {
            assert!(!flags.contains(f), "{}: {f} extent: {line}", path.display());
        }
        v.push((l0, p0, l1 - l0 + 1, flags.contains("shared")));
    }
    v
}

/// The XFS tree under `mnt/tree`, with the files it shares with under
/// `mnt/outside` (never scanned). Every sharing case sdu must get right, each in its own
/// place so that a wrong figure points at it:
///
/// ```text
/// tree/
///   a/ orig (8 blocks, block 7 later overwritten)  clone1 (FICLONE, same dir)
///      part (5 blocks, 1..4 cloned from orig 2..5)
///   b/ clone2 (FICLONE, other dir)  cc (clone of clone2)
///      cow (clone of orig, blocks 0..2 overwritten)  out_clone (clone of h/out)
///   c/ big (16)  self (4 blocks, 4..6 cloned from its own 0..2)
///      pair (2), pair2 (clone of pair, wholly overwritten: nothing shared)
///      in_clone (clone of h/in)
///      d/ deep (8 blocks cloned from big 4..12, a new file)
///         sparse (64 blocks: data at 10..13, big 0..2 cloned at 40)
///         in_link (= h/in)
///   e/ ext (4, cloned to outside/ext_copy)
///      three (2)  three_a (clone; also cloned to outside/three_b)
///   h/ in (3, second link c/d/in_link)  out (3, second link outside/out_link)
///   wide/ 80 long names (a directory with blocks of its own), each empty
///   empty/
/// ```
fn build_xfs_tree(m: &mut Model) {
    m.write("tree/a/orig", 8);
    m.clone_file("tree/a/orig", "tree/a/clone1");
    m.write("tree/a/part", 5);
    m.clone_range("tree/a/orig", 2, "tree/a/part", 1, 3);
    m.clone_file("tree/a/orig", "tree/b/clone2");
    m.clone_file("tree/b/clone2", "tree/b/cc");
    m.clone_file("tree/a/orig", "tree/b/cow");
    m.overwrite("tree/b/cow", 0, 2);
    m.overwrite("tree/a/orig", 7, 1);

    m.write("tree/c/big", 16);
    m.write("tree/c/self", 4);
    m.clone_range("tree/c/self", 0, "tree/c/self", 4, 2);
    m.write("tree/c/pair", 2);
    m.clone_file("tree/c/pair", "tree/c/pair2");
    m.overwrite("tree/c/pair2", 0, 2);
    m.clone_range("tree/c/big", 4, "tree/c/d/deep", 0, 8);
    m.sparse("tree/c/d/sparse", 64, &[(10, 3)]);
    m.clone_range("tree/c/big", 0, "tree/c/d/sparse", 40, 2);

    m.write("tree/e/ext", 4);
    m.clone_file("tree/e/ext", "outside/ext_copy");
    m.write("tree/e/three", 2);
    m.clone_file("tree/e/three", "tree/e/three_a");
    m.clone_file("tree/e/three", "outside/three_b");

    m.write("tree/h/in", 3);
    m.link("tree/h/in", "tree/c/d/in_link");
    m.clone_file("tree/h/in", "tree/c/in_clone");
    m.write("tree/h/out", 3);
    m.link("tree/h/out", "outside/out_link");
    m.clone_file("tree/h/out", "tree/b/out_clone");

    let wide = m.abs("tree/wide");
    fs::create_dir(&wide).unwrap();
    for i in 0..80 {
        File::create_new(wide.join(format!("a_rather_long_name_for_an_empty_file_{i:03}")))
            .unwrap();
    }
    fs::create_dir(m.abs("tree/empty")).unwrap();
}

/// Compares sdu's figures of every directory with the model's; returns a
/// readable table of the differences (empty when all agree). Also checks
/// that the exact reclaimable bytes never exceed sdu's.
fn model_mismatches(mnt: &Path, report: &Report, want: &BTreeMap<PathBuf, (Figs, u64)>) -> String {
    let mut rows = Vec::new();
    let mut seen = HashSet::new();
    for e in report.entries.iter().filter(|e| e.kind == Kind::Dir) {
        let rel = Path::new(&e.path).strip_prefix(mnt).unwrap().to_owned();
        let Some((w, exact)) = want.get(&rel) else {
            rows.push((rel.display().to_string(), "unexpected", 0, 0));
            continue;
        };
        seen.insert(rel.clone());
        for (fig, s, m) in [
            ("total", e.total, w.total),
            ("exclusive", e.exclusive, w.exclusive),
            ("shared", e.shared, w.shared),
            ("reclaimable", e.reclaimable, w.reclaimable),
        ] {
            if s != m {
                rows.push((rel.display().to_string(), fig, s, m));
            }
        }
        if e.reclaimable < *exact {
            rows.push((
                rel.display().to_string(),
                "reclaim<exact",
                e.reclaimable,
                *exact,
            ));
        }
    }
    for p in want.keys().filter(|p| !seen.contains(*p)) {
        rows.push((p.display().to_string(), "missing", 0, 0));
    }
    table("model", &rows)
}

fn table(other: &str, rows: &[(String, &str, u64, u64)]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let w = rows.iter().map(|r| r.0.len()).max().unwrap().max(4);
    let mut t = format!(
        "{} mismatches:\n{:w$}  {:>13}  {:>10}  {:>10}  {:>10}\n",
        rows.len(),
        "path",
        "figure",
        "sdu",
        other,
        "sdu-".to_owned() + other
    );
    for (p, fig, s, m) in rows {
        let _ = writeln!(
            t,
            "{p:w$}  {fig:>13}  {s:>10}  {m:>10}  {:>10}",
            *s as i128 - *m as i128
        );
    }
    t
}

/// `sdu --json --stats ARGS`: the report and the stats on stderr.
fn sdu_json_stats(args: &[std::ffi::OsString]) -> (Report, String) {
    let mut a = args!["--json", "--stats"];
    a.extend_from_slice(args);
    let out = sdu(&a);
    assert_eq!(out.code, Some(0), "{out:?}");
    let r = crate::json::parse(&out.stdout);
    assert_eq!(r.errors, 0, "{out:?}");
    (r, out.stderr)
}

// ---------------------------------------------------------------------------
// Invariants and determinism

/// What holds on every entry of every tree (see docs/design.md, "Invariants"):
/// `exclusive + shared ≤ total` (the shared union is at most the sum over
/// files of their shared bytes, which is `total − exclusive`), so also
/// `exclusive ≤ total`; nothing shared exactly when `exclusive == total`;
/// `reclaimable ≤ exclusive + shared`; and every figure of a directory is
/// at least its child's (a unit or inode contained in the child is
/// contained in the parent; the shared union only grows).
fn assert_invariants(report: &Report) {
    let mut bad = String::new();
    let by_path: HashMap<&Path, &Entry> = report
        .entries
        .iter()
        .map(|e| (Path::new(&e.path), e))
        .collect();
    for e in &report.entries {
        let p = Path::new(&e.path).display();
        if e.exclusive > e.total {
            let _ = writeln!(bad, "{p}: exclusive {} > total {}", e.exclusive, e.total);
        }
        if e.exclusive + e.shared > e.total {
            let _ = writeln!(
                bad,
                "{p}: exclusive {} + shared {} > total {}",
                e.exclusive, e.shared, e.total
            );
        }
        if (e.shared == 0) != (e.exclusive == e.total) {
            let _ = writeln!(
                bad,
                "{p}: shared {} but total - exclusive = {}",
                e.shared,
                e.total - e.exclusive.min(e.total)
            );
        }
        if e.reclaimable > e.exclusive + e.shared {
            let _ = writeln!(
                bad,
                "{p}: reclaimable {} > exclusive {} + shared {}",
                e.reclaimable, e.exclusive, e.shared
            );
        }
        if e.depth == 0 {
            continue;
        }
        let Some(parent) = Path::new(&e.path).parent().and_then(|q| by_path.get(q)) else {
            let _ = writeln!(bad, "{p}: parent not reported");
            continue;
        };
        for (fig, c, q) in [
            ("total", e.total, parent.total),
            ("exclusive", e.exclusive, parent.exclusive),
            ("shared", e.shared, parent.shared),
            ("reclaimable", e.reclaimable, parent.reclaimable),
        ] {
            if c > q {
                let _ = writeln!(bad, "{p}: {fig} {c} > its parent's {q}");
            }
        }
    }
    assert!(bad.is_empty(), "invariants broken:\n{bad}");
}

/// `sdu --json -a ROOT` gives the same bytes with 1, 2 and 8 threads, three
/// runs each; returns the report.
fn assert_deterministic(root: &Path) -> Report {
    let (first, report) = sdu_json_raw_compressed(&args!["-a", "-j1", root]);
    for j in ["-j1", "-j2", "-j8"] {
        for run in 0..3 {
            let (out, r) = sdu_json_raw_compressed(&args!["-a", j, root]);
            if out != first {
                let diff: Vec<String> = r
                    .entries
                    .iter()
                    .zip(&report.entries)
                    .filter(|(a, b)| a != b)
                    .take(10)
                    .map(|(a, b)| format!("  {j}: {a:?}\n  -j1: {b:?}"))
                    .collect();
                panic!(
                    "`sdu --json -a {j}` run {run} differs from the first -j1 run \
                     ({} vs {} entries); first differences:\n{}",
                    r.entries.len(),
                    report.entries.len(),
                    diff.join("\n")
                );
            }
        }
    }
    report
}

/// Many directories whose files are clones and partial clones of each
/// other's, for the determinism tests: enough shared extents, in enough
/// directories, for threads to interleave.
fn fanout_tree(root: &Path) {
    fs::create_dir_all(root).unwrap();
    let dirs = 24;
    for d in 0..dirs {
        let p = root.join(format!("d{d:02}"));
        fs::create_dir(&p).unwrap();
        for k in 0..6 {
            fs::write(
                p.join(format!("f{k}")),
                fresh_bytes(4 * BLK as usize + k * 1000),
            )
            .unwrap();
        }
    }
    for d in 0..dirs {
        let p = root.join(format!("d{d:02}"));
        let q = root.join(format!("d{:02}", (d * 7 + 3) % dirs));
        cp_reflink(&q.join("f0"), &p.join("c0"));
        clone_range(&q.join("f1"), BLK, &p.join("c1"), 0, 2 * BLK);
        clone_range(&p.join("f2"), 0, &p.join("f3"), 2 * BLK, BLK);
        cp_reflink(&p.join("c0"), &p.join("cc0"));
    }
}

// ---------------------------------------------------------------------------
// XFS

fn xfs_tree() -> Option<(LoopFs, Model)> {
    let fs = LoopFs::new(FsKind::Xfs)?;
    let mut m = Model::new(fs.path());
    build_xfs_tree(&mut m);
    fs.settle();
    Some((fs, m))
}

/// Every directory's total, exclusive, shared and reclaimable equal the
/// block model's to the byte (and total equals du's).
#[test]
fn xfs_sharing_figures_match_block_model() {
    let Some((fs, m)) = xfs_tree() else {
        return;
    };
    m.verify_against_fs();
    let root = fs.path().join("tree");
    let (report, stats) = sdu_json_stats(&args![root]);
    let want = m.expected("tree");
    let t = model_mismatches(fs.path(), &report, &want);
    assert!(t.is_empty(), "sdu against the block model: {t}");
    Du::new(&[]).assert_figures(&report, |e| e.kind == Kind::Dir);
    assert_invariants(&report);
    // Each regular file with blocks is mapped once, hardlinks or not.
    let mapped = m
        .inodes
        .iter()
        .filter(|i| i.links.iter().any(|l| l.starts_with("tree")))
        .filter(|i| i.blocks.iter().any(Option::is_some))
        .count() as u64;
    assert_eq!(
        stat_value(&stats, "files mapped (FIEMAP)"),
        mapped,
        "{stats}"
    );
    assert!(stat_value(&stats, "shared extents indexed") > 0, "{stats}");
}

/// `--du total` prints only du's figure, so it maps no extents (the fast
/// path that replaces du in scripts), and still prints du's total; the
/// sharing figures with `--du shared` do map them.
#[test]
fn du_total_maps_no_extents() {
    let Some((fs, _m)) = xfs_tree() else {
        return;
    };
    let root = fs.path().join("tree");
    let out = sdu(&args!["--stats", "--du", "total", "-s", "-B1", &root]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(
        stat_value(&out.stderr, "files mapped (FIEMAP)"),
        0,
        "{}",
        out.stderr
    );
    let du = run(Command::new("du").args(["-s", "-B1"]).arg(&root));
    assert_eq!(out.stdout, du.stdout, "--du total against du");
    let shared = sdu(&args!["--stats", "--du", "shared", "-s", "-B1", &root]);
    assert!(
        stat_value(&shared.stderr, "files mapped (FIEMAP)") > 0,
        "{}",
        shared.stderr
    );
}

/// With `-a`, each file's own total, exclusive and shared are the model's
/// (reclaimable too for a file with one link: its exclusive bytes plus
/// the units only it references).
#[test]
fn xfs_file_figures_match_block_model() {
    let Some((fs, m)) = xfs_tree() else {
        return;
    };
    let report = sdu_json(&args!["-a", fs.path().join("tree")]);
    let rc_all = m.refcounts(|_| true);
    let mut rows = Vec::new();
    let mut files = 0;
    for e in report.entries.iter().filter(|e| e.kind == Kind::File) {
        let rel = Path::new(&e.path).strip_prefix(fs.path()).unwrap();
        let Some(&k) = m.by_link.get(rel) else {
            // The empty files of wide/, which the model leaves out.
            assert!(rel.starts_with("tree/wide") && e.total == 0, "{e:?}");
            continue;
        };
        let ino = &m.inodes[k];
        files += 1;
        let alloc = ino.blocks.iter().flatten().count() as u64 * BLK;
        let sh: Vec<u64> = ino
            .blocks
            .iter()
            .flatten()
            .copied()
            .filter(|id| rc_all[id] >= 2)
            .collect();
        let distinct: HashSet<u64> = sh.iter().copied().collect();
        let exclusive = alloc - sh.len() as u64 * BLK;
        // Units referenced by this inode alone (a clone within the file).
        let own_units = distinct
            .iter()
            .filter(|id| sh.iter().filter(|x| x == id).count() as u64 == rc_all[id])
            .count() as u64;
        let mut checks = vec![
            ("total", e.total, alloc),
            ("exclusive", e.exclusive, exclusive),
            ("shared", e.shared, distinct.len() as u64 * BLK),
        ];
        if ino.links.len() == 1 {
            checks.push(("reclaimable", e.reclaimable, exclusive + own_units * BLK));
        }
        for (fig, s, w) in checks {
            if s != w {
                rows.push((rel.display().to_string(), fig, s, w));
            }
        }
    }
    assert!(files >= 20, "only {files} file entries");
    let t = table("model", &rows);
    assert!(t.is_empty(), "sdu -a against the block model: {t}");
    assert_invariants(&report);
}

#[test]
fn xfs_sharing_figures_deterministic() {
    let Some(fs) = LoopFs::new(FsKind::Xfs) else {
        return;
    };
    let mut m = Model::new(fs.path());
    build_xfs_tree(&mut m);
    fanout_tree(&fs.path().join("tree/fan"));
    fs.settle();
    let r = assert_deterministic(&fs.path().join("tree"));
    assert_invariants(&r);
    assert!(r.entries.last().unwrap().shared > 0);
}

/// Reflinked copies whose shared data all lies in one XFS allocation group:
/// the files whose FIEMAP sdu puts off while another thread maps that
/// group (the walk's `ag` module) give the figures of a walk that puts off
/// nothing, at every thread count, and those figures are exact: every data
/// block is shared, so `shared` is the source's data once.
#[test]
fn xfs_reflinks_in_one_allocation_group_deterministic_and_exact() {
    let Some(fs) = LoopFs::new(FsKind::Xfs) else {
        return;
    };
    let root = fs.path().join("ag");
    let src = root.join("src");
    fs::create_dir_all(&src).unwrap();
    let (files, extents) = (8u64, 16u64);
    for f in 0..files {
        // A written block, then a hole: one extent per block.
        let data: Vec<(u64, usize)> = (0..extents).map(|e| (e * 2 * BLK, BLK as usize)).collect();
        write_sparse(&src.join(format!("f{f}")), extents * 2 * BLK, &data);
    }
    sync_fs(&src);
    for c in 0..30 {
        run(Command::new("cp")
            .args(["-r", "--reflink=always"])
            .arg(&src)
            .arg(root.join(format!("c{c}"))))
        .assert_ok();
    }
    fs.settle();
    let r = assert_deterministic(&root);
    assert_invariants(&r);
    let top = r.entries.last().unwrap();
    assert_eq!(top.shared, files * extents * BLK, "{top:?}");
    // Every data block of every file is shared; what else a file holds
    // (XFS counts an extent-map block in st_blocks) is its own.
    for e in r.entries.iter().filter(|e| e.kind == Kind::File) {
        assert_eq!(e.shared, extents * BLK, "{e:?}");
        assert_eq!(e.exclusive, e.total - extents * BLK, "{e:?}");
    }
    // Nothing outside the tree references the data: deleting it frees all.
    assert_eq!(top.reclaimable, top.exclusive + top.shared, "{top:?}");
}

/// Files whose allocation group is busy are handed to the thread that holds
/// its turn, which maps them and credits them to their own directories
/// (under `-a`, to their own nodes; hardlinks through the link table):
/// the figures are those of `-j1`, which hands nothing, and the hand-over
/// did happen.
#[test]
fn xfs_files_handed_to_the_turn_holder_are_credited_to_their_directories() {
    let Some(fs) = LoopFs::new(FsKind::Xfs) else {
        return;
    };
    let root = fs.path().join("hand");
    let src = root.join("src");
    fs::create_dir_all(&src).unwrap();
    let (files, extents) = (24u64, 8u64);
    for f in 0..files {
        let data: Vec<(u64, usize)> = (0..extents).map(|e| (e * 2 * BLK, BLK as usize)).collect();
        write_sparse(&src.join(format!("f{f}")), extents * 2 * BLK, &data);
    }
    // A hardlink inside a directory, and one across two directories.
    fs::hard_link(src.join("f0"), src.join("f0-link")).unwrap();
    sync_fs(&src);
    let copies = 40;
    for c in 0..copies {
        run(Command::new("cp")
            .args(["-r", "--reflink=always"])
            .arg(&src)
            .arg(root.join(format!("c{c}"))))
        .assert_ok();
    }
    fs::hard_link(root.join("c0/f1"), root.join("c1/f1-link")).unwrap();
    fs.settle();
    let (first, _) = sdu_json_stats(&args!["-j1", &root]);
    assert_eq!(first.entries.last().unwrap().shared, files * extents * BLK);
    let mut handed = 0u64;
    for run in 0..5 {
        let (r, stats) = sdu_json_stats(&args!["-j8", &root]);
        assert_eq!(r.entries, first.entries, "-j8 run {run} differs from -j1");
        handed += stats
            .lines()
            .find_map(|l| {
                l.trim()
                    .strip_prefix("FIEMAPs put off (allocation group busy)")
            })
            .map(|n| n.trim().parse::<u64>().unwrap())
            .unwrap_or_else(|| panic!("no put-off count in {stats}"));
    }
    assert!(handed > 0, "no file was handed over in 5 runs at -j8");
    let r = assert_deterministic(&root);
    assert_invariants(&r);
    let top = r.entries.last().unwrap();
    assert_eq!(top.shared, files * extents * BLK, "{top:?}");
    assert_eq!(top.reclaimable, top.exclusive + top.shared, "{top:?}");
}

/// `sdu --json --stats ARGS` (as `nobody` if asked): the document's bytes
/// and the stats on stderr.
fn sdu_json_bytes_stats(args: &[std::ffi::OsString], nobody: bool) -> (Vec<u8>, String) {
    let mut c = if nobody {
        let mut c = Command::new("setpriv");
        c.args(nobody_args()).arg(sdu_bin());
        c
    } else {
        Command::new(sdu_bin())
    };
    c.args(["--json", "--stats"]).args(args);
    let out = run_with_timeout(&mut c, 300);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(crate::json::parse(&out.stdout).errors, 0, "{out:?}");
    (out.stdout, out.stderr)
}

/// The walk's lean path (a singly linked regular file, opened first, whose
/// FIEMAP needs no turn and can find no copy) gives what its general path
/// gives: an `--exclude` that matches nothing keeps every path and so sends
/// every file down the general path. The same document, byte for byte, and
/// the same FIEMAPs; the lean path did take files, the other run none.
fn assert_lean_path_is_the_general_path(root: &Path, flags: &[&str], nobody: bool) {
    let mut lean_args: Vec<std::ffi::OsString> = flags.iter().map(Into::into).collect();
    lean_args.push(root.into());
    let mut general_args = lean_args.clone();
    general_args.insert(0, "--exclude=no such name, anywhere".into());
    let (lean, lean_stats) = sdu_json_bytes_stats(&lean_args, nobody);
    let (general, general_stats) = sdu_json_bytes_stats(&general_args, nobody);
    assert!(
        stat_value(&lean_stats, "files on the lean path") > 0,
        "{lean_stats}"
    );
    assert_eq!(
        stat_value(&general_stats, "files on the lean path"),
        0,
        "{general_stats}"
    );
    for key in [
        "files mapped (FIEMAP)",
        "FIEMAP calls",
        "shared extents indexed",
    ] {
        assert_eq!(
            stat_value(&lean_stats, key),
            stat_value(&general_stats, key),
            "{key}:\n{lean_stats}\n{general_stats}"
        );
    }
    assert!(
        lean == general,
        "the lean path's document differs from the general path's:\n{}\n{}",
        String::from_utf8_lossy(&lean),
        String::from_utf8_lossy(&general)
    );
}

/// On the XFS tree of known sharing: the lean path's figures are the
/// general path's (and the block model's, checked above on the lean path).
#[test]
fn xfs_lean_path_figures_equal_the_general_path() {
    let Some((fs, _m)) = xfs_tree() else {
        return;
    };
    let root = fs.path().join("tree");
    fanout_tree(&root.join("fan"));
    // Readable by nobody, so that both paths map every file.
    run(Command::new("chmod").args(["-R", "a+rX"]).arg(&root)).assert_ok();
    fs.settle();
    for j in ["-j1", "-j2"] {
        assert_lean_path_is_the_general_path(&root, &[j], false);
        assert_lean_path_is_the_general_path(&root, &[j], true);
    }
}

// ---------------------------------------------------------------------------
// Btrfs

/// `btrfs filesystem du --raw -s DIR`: (Total, Exclusive, Set shared).
fn btrfs_du(dir: &Path) -> (u64, u64, u64) {
    let out = run(Command::new("btrfs")
        .args(["filesystem", "du", "--raw", "-s"])
        .arg(dir));
    out.assert_ok();
    let line = out
        .stdout_str()
        .lines()
        .last()
        .unwrap_or_else(|| panic!("{out:?}"));
    let n: Vec<u64> = line
        .split_whitespace()
        .take(3)
        .map(|s| s.parse().unwrap_or_else(|_| panic!("{out:?}")))
        .collect();
    (n[0], n[1], n[2])
}

fn btrfs(args: &[&str], path: &Path) {
    run(Command::new("btrfs").args(args).arg(path)).assert_ok();
}

fn btrfs_snapshot(from: &Path, to: &Path) {
    run(Command::new("btrfs")
        .args(["subvolume", "snapshot"])
        .arg(from)
        .arg(to))
    .assert_ok();
}

/// ```text
/// tree/
///   r/ orig (256 KiB)  copy (cp --reflink)  small (100 bytes, inline)
///   p/ part (64 KiB of orig at 64 KiB, a new file)  mixed (own data + 32 KiB of orig)
///      q/ copy2 (cp --reflink of r/copy)
///   snaps/ vol (subvolume: f1 200 KiB, d/f2 40 KiB, d/f2c clone of f2)
///          snap (snapshot of vol)
///   z/ (compression zstd) comp (300 KB compressible)  cpart (64 KiB of comp)
///      ccopy (cp --reflink of comp)
///   solo/ alone (100 KiB, nothing shared)
/// ```
fn build_btrfs_tree(root: &Path) {
    let p = |s: &str| root.join(s);
    for d in ["r", "p/q", "snaps", "z", "solo"] {
        fs::create_dir_all(p(d)).unwrap();
    }
    fs::write(p("r/orig"), fresh_bytes(256 << 10)).unwrap();
    cp_reflink(&p("r/orig"), &p("r/copy"));
    fs::write(p("r/small"), fresh_bytes(100)).unwrap();
    clone_range(&p("r/orig"), 64 << 10, &p("p/part"), 0, 64 << 10);
    fs::write(p("p/mixed"), fresh_bytes(96 << 10)).unwrap();
    clone_range(&p("r/orig"), 160 << 10, &p("p/mixed"), 32 << 10, 32 << 10);
    cp_reflink(&p("r/copy"), &p("p/q/copy2"));
    btrfs(&["subvolume", "create"], &p("snaps/vol"));
    fs::create_dir(p("snaps/vol/d")).unwrap();
    fs::write(p("snaps/vol/f1"), fresh_bytes(200 << 10)).unwrap();
    fs::write(p("snaps/vol/d/f2"), fresh_bytes(40 << 10)).unwrap();
    cp_reflink(&p("snaps/vol/d/f2"), &p("snaps/vol/d/f2c"));
    sync_fs(root);
    btrfs_snapshot(&p("snaps/vol"), &p("snaps/snap"));
    run(Command::new("btrfs")
        .args(["property", "set"])
        .arg(p("z"))
        .args(["compression", "zstd"]))
    .assert_ok();
    let text: Vec<u8> = (0..300_000u32)
        .map(|i| b"sdu shares "[(i % 11) as usize])
        .collect();
    fs::write(p("z/comp"), text).unwrap();
    sync_fs(root);
    clone_range(&p("z/comp"), 128 << 10, &p("z/cpart"), 0, 64 << 10);
    cp_reflink(&p("z/comp"), &p("z/ccopy"));
    fs::write(p("solo/alone"), fresh_bytes(100 << 10)).unwrap();
}

fn btrfs_tree() -> Option<(LoopFs, PathBuf)> {
    let fs = LoopFs::new(FsKind::Btrfs)?;
    let root = fs.path().join("tree");
    fs::create_dir(&root).unwrap();
    build_btrfs_tree(&root);
    fs.settle();
    Some((fs, root))
}

/// Every directory's `shared` equals `btrfs filesystem du`'s "Set shared",
/// its `exclusive` btrfs's "Exclusive" plus the inline data btrfs leaves
/// out (of its Total too: sdu counts it, as du does), its `total` du's;
/// the snapshot shares with its origin, counted once in their parent; and
/// `reclaimable` is what deleting the directory frees in this tree.
#[test]
fn btrfs_shared_matches_btrfs_filesystem_du() {
    let Some((_fs, root)) = btrfs_tree() else {
        return;
    };
    // FIEMAP's lengths, as btrfs fi du's (root's tree search counts the
    // compressed extents of z at their size on disk: tests/sdu/btrfs.rs).
    let report = sdu_json_compressed(&args!["--fiemap", root]);
    let rel = |e: &Entry| -> String {
        let p = Path::new(&e.path);
        p.strip_prefix(root.parent().unwrap())
            .unwrap()
            .display()
            .to_string()
    };
    // Where deleting the directory frees all its shared data too: nothing
    // outside it references that data. Elsewhere (r, p, p/q reference
    // one extent of r/orig; vol and snap each other's) it frees only its
    // exclusive bytes.
    let frees_shared = ["tree", "tree/snaps", "tree/z"];
    let mut rows = Vec::new();
    for e in report.entries.iter().filter(|e| e.kind == Kind::Dir) {
        let (b_total, b_excl, b_shared) = btrfs_du(Path::new(&e.path));
        let inline = e.total.saturating_sub(b_total);
        let reclaim = if frees_shared.contains(&rel(e).as_str()) {
            e.exclusive + e.shared
        } else {
            e.exclusive
        };
        for (fig, s, w) in [
            ("shared", e.shared, b_shared),
            ("exclusive", e.exclusive, b_excl + inline),
            ("reclaimable", e.reclaimable, reclaim),
        ] {
            if s != w {
                rows.push((rel(e), fig, s, w));
            }
        }
    }
    let t = table("want", &rows);
    assert!(
        t.is_empty(),
        "sdu against `btrfs filesystem du` (want: Set shared; Exclusive + \
         inline; exclusive [+ shared]): {t}"
    );
    Du::new(&[]).assert_figures(&report, |e| e.kind == Kind::Dir);
    assert_invariants(&report);

    let get = |rel: &str| -> &Entry {
        let p = root.join(rel);
        report
            .entries
            .iter()
            .find(|e| Path::new(&e.path) == p)
            .unwrap_or_else(|| panic!("no entry {}", p.display()))
    };
    let (vol, snap, snaps) = (get("snaps/vol"), get("snaps/snap"), get("snaps"));
    assert!(
        vol.shared > 0 && snap.shared == vol.shared && snaps.shared == vol.shared,
        "a snapshot shares all its data with its origin, counted once in the parent: \
         vol {vol:?}\nsnap {snap:?}\nsnaps {snaps:?}"
    );
    let (r, z, solo) = (get("r"), get("z"), get("solo"));
    // r/small (100 bytes) is inline: exclusive for sdu, unseen by btrfs.
    assert_eq!(r.exclusive, 4096, "r: {r:?}");
    assert!(z.shared > 0 && z.exclusive == 0, "z: {z:?}");
    assert!(
        solo.shared == 0 && solo.exclusive == solo.total && solo.reclaimable == solo.total,
        "solo: {solo:?}"
    );
}

#[test]
fn btrfs_sharing_figures_deterministic() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let root = fs.path().join("tree");
    fs::create_dir(&root).unwrap();
    build_btrfs_tree(&root);
    fanout_tree(&root.join("fan"));
    fs.settle();
    let r = assert_deterministic(&root);
    assert!(r.entries.last().unwrap().shared > 0);
    // As root the compressed extents of z count at their size on disk,
    // where these invariants of logical lengths need not hold.
    assert_invariants(&sdu_json_compressed(&args!["-a", "--fiemap", &root]));
}

/// On the Btrfs tree (a subvolume and its snapshot, reflinks, compressed
/// and inline data): the lean path's figures are the general path's, with
/// FIEMAP as root and without privileges. The origin subvolume's files go
/// down the lean path while no copy is kept; the snapshot's never do.
#[test]
fn btrfs_lean_path_figures_equal_the_general_path() {
    let Some((fs, root)) = btrfs_tree() else {
        return;
    };
    fanout_tree(&root.join("fan"));
    run(Command::new("chmod").args(["-R", "a+rX"]).arg(&root)).assert_ok();
    fs.settle();
    for j in ["-j1", "-j2"] {
        assert_lean_path_is_the_general_path(&root, &["--fiemap", j], false);
        assert_lean_path_is_the_general_path(&root, &[j], true);
    }
}

// ---------------------------------------------------------------------------
// Filesystems that cannot share

/// Everything exclusive, nothing mapped, on a filesystem without sharing.
fn assert_nothing_shared(root: &Path) {
    let (report, stats) = sdu_json_stats(&args!["-a", root]);
    let top = report.entries.last().unwrap();
    assert!(top.files > 5 && top.total > 0, "{top:?}");
    assert_eq!(stat_value(&stats, "files mapped (FIEMAP)"), 0, "{stats}");
    assert_eq!(stat_value(&stats, "FIEMAP calls"), 0, "{stats}");
    let bad: Vec<&Entry> = report
        .entries
        .iter()
        .filter(|e| e.exclusive != e.total || e.shared != 0)
        .collect();
    assert!(bad.is_empty(), "shared data where none can be: {bad:#?}");
    assert_invariants(&report);
}

/// Filesystem magic numbers of the ones that can share (statfs f_type).
fn may_share(path: &Path) -> bool {
    let st = rustix::fs::statfs(path).unwrap();
    const XFS: i64 = 0x5846_5342;
    const BTRFS: i64 = 0x9123_683e;
    const OCFS2: i64 = 0x7461_636f;
    const BCACHEFS: i64 = 0xca45_1a4e;
    [XFS, BTRFS, OCFS2, BCACHEFS].contains(&(st.f_type as i64))
}

#[test]
fn nothing_shared_on_tmpdir_filesystem() {
    let t = TestDir::new();
    if may_share(t.path()) {
        unavailable::<()>("the temp dir's filesystem may share: not the ext4 case");
        return;
    }
    let root = t.mkdir("tree");
    standard_tree(&root);
    sync_fs(&root);
    assert_nothing_shared(&root);
}

#[test]
fn nothing_shared_on_tmpfs() {
    let t = TestDir::new();
    let mnt = t.mkdir("mnt");
    if !is_root() {
        unavailable::<()>("mounting a tmpfs needs root");
        return;
    }
    run(Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64m", "sdu-test"])
        .arg(&mnt))
    .assert_ok();
    let _m = Tmpfs(mnt.clone());
    standard_tree(&mnt);
    assert_nothing_shared(&mnt);
}
