//! The block-level model of the XFS tree: every file as written, block by
//! block, checked against the filesystem itself (`filefrag`), and from it
//! the figures sdu must report for each directory.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{BLK, clone_file, clone_range, fresh_bytes, table};
use crate::json::{Kind, Report};
use crate::util::*;

/// One inode of the model: its links (relative to the filesystem root) and,
/// per logical block, the id of the physical block it maps (None = hole).
#[derive(Debug)]
pub(super) struct Inode {
    pub(super) links: Vec<PathBuf>,
    pub(super) blocks: Vec<Option<u64>>,
}

/// Every file of the filesystem as written: block ids are synthetic (a
/// fresh write takes new ids, a clone copies them, an overwrite takes new
/// ids again), which is all XFS's per-block refcounting depends on.
pub(super) struct Model {
    mnt: PathBuf,
    pub(super) inodes: Vec<Inode>,
    pub(super) by_link: HashMap<PathBuf, usize>,
    next_id: u64,
}

/// The four sharing-related figures of one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Figs {
    total: u64,
    exclusive: u64,
    shared: u64,
    pub(super) reclaimable: u64,
}

impl Model {
    pub(super) fn new(mnt: &Path) -> Model {
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
    pub(super) fn refcounts(&self, keep: impl Fn(&Inode) -> bool) -> HashMap<u64, u64> {
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
    pub(super) fn verify_against_fs(&self) {
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
    /// blocks, with Reclaimable by the bound rule (a unit is credited where
    /// every file of the scan referencing it lies: what sdu reports when it
    /// cannot ask who else holds the data, docs/figures.md, "Reclaimable":
    /// "otherwise an upper bound"); and the exact reclaimable bytes (a unit
    /// is credited only where every file referencing it lies, outside ones
    /// included: what deleting frees, and what sdu reports where it can
    /// verify, as root with the reverse-mapping btree).
    pub(super) fn expected(&self, root: &str) -> BTreeMap<PathBuf, (Figs, u64)> {
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
pub(super) fn build_xfs_tree(m: &mut Model) {
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

/// Which Reclaimable of the model sdu must report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Rule {
    /// The exact one, marked exact: sdu could ask who else holds the
    /// scan's shared data (as root, XFS with rmapbt).
    Exact,
    /// The bound one: sdu could not ask. Never below the exact one, and
    /// marked not exact wherever it differs from it.
    Bound,
}

/// Compares sdu's figures of every directory with the model's, Reclaimable
/// by `rule`; returns a readable table of the differences (empty when all
/// agree).
pub(super) fn model_mismatches(
    mnt: &Path,
    report: &Report,
    want: &BTreeMap<PathBuf, (Figs, u64)>,
    rule: Rule,
) -> String {
    let mut rows = Vec::new();
    let mut seen = HashSet::new();
    for e in report.entries.iter().filter(|e| e.kind == Kind::Dir) {
        let rel = Path::new(&e.path).strip_prefix(mnt).unwrap().to_owned();
        let Some((w, exact)) = want.get(&rel) else {
            rows.push((rel.display().to_string(), "unexpected", 0, 0));
            continue;
        };
        seen.insert(rel.clone());
        let reclaimable = match rule {
            Rule::Exact => *exact,
            Rule::Bound => w.reclaimable,
        };
        for (fig, s, m) in [
            ("total", e.total, w.total),
            ("exclusive", e.exclusive, w.exclusive),
            ("shared", e.shared, w.shared),
            ("reclaimable", e.reclaimable, reclaimable),
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
        // Marked exact where sdu verified; where it could not, a bound
        // wherever the bound differs from the truth (0: not marked exact).
        let must_be_exact = rule == Rule::Exact;
        if (must_be_exact && !e.reclaimable_exact)
            || (!must_be_exact && w.reclaimable != *exact && e.reclaimable_exact)
        {
            rows.push((
                rel.display().to_string(),
                "exact?",
                u64::from(e.reclaimable_exact),
                u64::from(must_be_exact),
            ));
        }
    }
    for p in want.keys().filter(|p| !seen.contains(*p)) {
        rows.push((p.display().to_string(), "missing", 0, 0));
    }
    table("model", &rows)
}

pub(super) fn xfs_tree() -> Option<(LoopFs, Model)> {
    let fs = LoopFs::new(FsKind::Xfs)?;
    let mut m = Model::new(fs.path());
    build_xfs_tree(&mut m);
    fs.settle();
    Some((fs, m))
}
