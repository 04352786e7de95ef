//! The model of the property test: a scenario interpreted as a tree of
//! directories, files mapping blocks, and what the kernel would flag
//! shared ([`World`]), and the figures its definitions give each node.

use super::*;

/// A file of the model.
#[derive(Clone, Debug)]
pub(super) struct MFile {
    /// Node of each link present (model ids), possibly repeated.
    pub(super) links: Vec<u32>,
    pub(super) nlink: u32,
    /// Physical runs (start block, length in blocks), in logical order.
    pub(super) runs: Vec<(u64, u64)>,
    /// Per run, whether it is flagged shared as a whole (Btrfs); XFS flags
    /// per block.
    pub(super) run_flagged: Vec<bool>,
    /// Its figures before shared extents are taken out.
    pub(super) inode: Stats,
}

/// The interpreted scenario: tree, files and what the kernel would flag.
#[derive(Debug)]
pub(super) struct World {
    pub(super) g: Granularity,
    /// Model node ids: 0 = the top, 1..=`dirs` directories, then (`-a`) one
    /// leaf per file link. parent[0] = MODEL_NONE.
    pub(super) parent: Vec<u32>,
    pub(super) dirs: u32,
    pub(super) names: Vec<String>,
    /// The directories' own inodes (default for the top and leaves).
    pub(super) dir_inode: Vec<Stats>,
    pub(super) files: Vec<MFile>,
    /// XFS: blocks flagged shared.
    pub(super) flagged: Vec<bool>,
}

impl World {
    /// `all`: as with `-a`, every file link has a leaf node of its own.
    pub(super) fn new(s: &Scenario, g: Granularity, all: bool) -> World {
        let n = s.dirs.len() as u32;
        let mut parent = vec![MODEL_NONE, MODEL_TOP];
        for (i, &(raw, root)) in s.parents.iter().enumerate() {
            let id = i as u32 + 2;
            parent.push(if root { MODEL_TOP } else { 1 + raw % (id - 1) });
        }
        let mut dir_inode = vec![Stats::default()];
        dir_inode.extend(
            s.dirs
                .iter()
                .map(|&(size, sectors)| Stats::of_inode(Kind::Dir, size, sectors)),
        );
        // Btrfs on-disk extents: a partition of the space.
        let mut bounds: Vec<u64> = s.cuts.clone();
        bounds.extend([0, SPACE]);
        bounds.sort_unstable();
        bounds.dedup();
        let extents: Vec<(u64, u64)> = bounds.windows(2).map(|w| (w[0], w[1] - w[0])).collect();
        let mut refs = vec![0u32; extents.len()];
        let mut run_extent: Vec<Vec<usize>> = Vec::new();
        let mut files: Vec<MFile> = s
            .files
            .iter()
            .map(|f| {
                let mut runs = Vec::new();
                let mut exts = Vec::new();
                for &(a, b) in &f.runs {
                    match g {
                        Granularity::Block => {
                            let start = a % SPACE;
                            let len = 1 + b % (SPACE - start).min(8);
                            runs.push((start, len));
                        }
                        Granularity::Extent => {
                            let e = a as usize % extents.len();
                            let (es, el) = extents[e];
                            let off = b % el;
                            let len = 1 + (b / el) % (el - off);
                            runs.push((es + off, len));
                            refs[e] += 1;
                            exts.push(e);
                        }
                    }
                }
                run_extent.push(exts);
                let mapped: u64 = runs.iter().map(|r| r.1).sum();
                let sectors = mapped * (B / 512) + f.extra_sectors;
                MFile {
                    links: f.links.iter().map(|&l| 1 + l % n).collect(),
                    nlink: f.links.len() as u32 + f.outside_links,
                    runs,
                    run_flagged: Vec::new(),
                    inode: Stats::of_inode(Kind::File, f.size, sectors),
                }
            })
            .collect();
        // What the kernel flags SHARED: two or more references, counting
        // those from outside the scan.
        let mut count = vec![0u32; SPACE as usize];
        for f in &files {
            for &(s, l) in &f.runs {
                for b in s..s + l {
                    count[b as usize] += 1;
                }
            }
        }
        for &o in &s.outside {
            count[(o % SPACE) as usize] += 1;
            refs[o as usize % extents.len()] += 1;
        }
        let flagged = count.iter().map(|&c| c >= 2).collect();
        for (f, exts) in files.iter_mut().zip(&run_extent) {
            f.run_flagged = match g {
                Granularity::Block => vec![false; f.runs.len()],
                Granularity::Extent => exts.iter().map(|&e| refs[e] >= 2).collect(),
            };
        }
        let mut names: Vec<String> = (0..parent.len()).map(|d| format!("d{d}")).collect();
        if all {
            for (i, f) in files.iter_mut().enumerate() {
                for (k, l) in f.links.iter_mut().enumerate() {
                    parent.push(*l);
                    names.push(format!("f{i}.{k}"));
                    dir_inode.push(Stats::default());
                    *l = parent.len() as u32 - 1;
                }
            }
        }
        World {
            g,
            parent,
            dirs: n,
            names,
            dir_inode,
            files,
            flagged,
        }
    }

    /// Directories and leaves.
    pub(super) fn nodes(&self) -> u32 {
        self.parent.len() as u32 - 1
    }

    pub(super) fn is_dir(&self, d: u32) -> bool {
        (1..=self.dirs).contains(&d)
    }

    pub(super) fn depth(&self, mut d: u32) -> u32 {
        let mut depth = 0;
        while self.parent[d as usize] != MODEL_TOP {
            d = self.parent[d as usize];
            depth += 1;
        }
        depth
    }

    pub(super) fn path(&self, mut d: u32) -> String {
        let mut names = Vec::new();
        while d != MODEL_TOP {
            names.push(self.names[d as usize].as_str());
            d = self.parent[d as usize];
        }
        names.reverse();
        names.join("/")
    }

    /// Whether node `x` lies under `d` (or is `d`).
    pub(super) fn under(&self, mut x: u32, d: u32) -> bool {
        loop {
            if x == d {
                return true;
            }
            if x == MODEL_NONE {
                return false;
            }
            x = self.parent[x as usize];
        }
    }

    /// The flagged (physical block) ranges file `f` maps, one per FIEMAP
    /// extent that carries SHARED, in logical order.
    pub(super) fn shared_extents(&self, f: &MFile) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        for (i, &(s, l)) in f.runs.iter().enumerate() {
            match self.g {
                Granularity::Extent => {
                    if f.run_flagged[i] {
                        out.push((s, l));
                    }
                }
                Granularity::Block => {
                    // FIEMAP splits a mapping where the SHARED flag changes.
                    let mut b = s;
                    while b < s + l {
                        let fl = self.flagged[b as usize];
                        let mut e = b;
                        while e < s + l && self.flagged[e as usize] == fl {
                            e += 1;
                        }
                        if fl {
                            out.push((b, e - b));
                        }
                        b = e;
                    }
                }
            }
        }
        out
    }

    pub(super) fn shared_bytes(&self, f: &MFile) -> u64 {
        self.shared_extents(f).iter().map(|e| e.1 * B).sum()
    }

    pub(super) fn file_under(&self, f: &MFile, d: u32) -> bool {
        f.links.iter().any(|&l| self.under(l, d))
    }

    pub(super) fn contained(&self, f: &MFile, d: u32) -> bool {
        f.links.len() as u32 == f.nlink && f.links.iter().all(|&l| self.under(l, d))
    }

    /// The model's figures of node `d` (the top included), from the definitions.
    pub(super) fn expect(&self, d: u32) -> Stats {
        let mut st = Stats::default();
        for x in 1..=self.dirs {
            if self.under(x, d) {
                let i = self.dir_inode[x as usize];
                st.apparent += i.apparent;
                st.total += i.total;
                st.exclusive += i.exclusive;
                st.reclaimable += i.exclusive;
                st.dirs += 1;
            }
        }
        for f in &self.files {
            if self.file_under(f, d) {
                let excl = f.inode.total - self.shared_bytes(f);
                st.apparent += f.inode.apparent;
                st.total += f.inode.total;
                st.exclusive += excl;
                st.files += 1;
                if self.contained(f, d) {
                    st.reclaimable += excl;
                }
            }
        }
        for m in &self.block_maps() {
            if m.iter().any(|&i| self.file_under(&self.files[i], d)) {
                st.shared += B;
            }
        }
        for u in self.units() {
            if u.eligible && u.files.iter().all(|&i| self.contained(&self.files[i], d)) {
                st.reclaimable += u.bytes;
            }
        }
        st
    }

    /// What deleting every node in `set` (each with its subtree) frees, from
    /// the definitions: the union's contained inodes and units.
    pub(super) fn reclaimable_of(&self, set: &[u32]) -> u64 {
        let under = |x: u32| set.iter().any(|&d| self.under(x, d));
        let contained =
            |f: &MFile| f.links.len() as u32 == f.nlink && f.links.iter().all(|&l| under(l));
        let mut r = 0;
        for x in 1..=self.dirs {
            if under(x) {
                r += self.dir_inode[x as usize].exclusive;
            }
        }
        for f in &self.files {
            if contained(f) {
                r += f.inode.total - self.shared_bytes(f);
            }
        }
        for u in self.units() {
            if u.eligible && u.files.iter().all(|&i| contained(&self.files[i])) {
                r += u.bytes;
            }
        }
        r
    }

    /// Per block: the files mapping it in flagged extents (as FIEMAP
    /// reports them), with multiplicity; empty when not flagged.
    pub(super) fn block_maps(&self) -> Vec<Vec<usize>> {
        let mut maps: Vec<Vec<usize>> = vec![Vec::new(); SPACE as usize];
        for (i, f) in self.files.iter().enumerate() {
            for (s, l) in self.shared_extents(f) {
                for b in s..s + l {
                    maps[b as usize].push(i);
                }
            }
        }
        maps
    }

    /// The reclaim units of the model: each is freed when every file in
    /// `files` is contained in the deleted directory, if `eligible`.
    pub(super) fn units(&self) -> Vec<MUnit> {
        match self.g {
            // XFS: per block, freed with its last mapping; a block mapped
            // once in the scan is shared with something outside it.
            Granularity::Block => self
                .block_maps()
                .into_iter()
                .filter(|m| !m.is_empty())
                .map(|mut files| {
                    let mappings = files.len();
                    files.sort_unstable();
                    files.dedup();
                    MUnit {
                        bytes: B,
                        files,
                        mappings,
                        ranges: 1,
                        eligible: mappings >= 2,
                    }
                })
                .collect(),
            // Btrfs: maximal runs of (strictly) overlapping stored ranges,
            // identical ranges collapsed.
            Granularity::Extent => {
                let mut stored: BTreeMap<(u64, u64), Vec<usize>> = BTreeMap::new();
                for (i, f) in self.files.iter().enumerate() {
                    for r in self.shared_extents(f) {
                        stored.entry(r).or_default().push(i);
                    }
                }
                let ranges: Vec<((u64, u64), Vec<usize>)> = stored.into_iter().collect();
                // Connected components, by a fixpoint.
                let mut comp: Vec<usize> = (0..ranges.len()).collect();
                loop {
                    let mut changed = false;
                    for i in 0..ranges.len() {
                        for j in 0..ranges.len() {
                            let ((a, al), _) = ranges[i];
                            let ((b, bl), _) = ranges[j];
                            if a < b + bl && b < a + al && comp[i] != comp[j] {
                                let m = comp[i].min(comp[j]);
                                comp[i] = m;
                                comp[j] = m;
                                changed = true;
                            }
                        }
                    }
                    if !changed {
                        break;
                    }
                }
                let mut out = Vec::new();
                for c in 0..ranges.len() {
                    let members: Vec<usize> = (0..ranges.len()).filter(|&i| comp[i] == c).collect();
                    if members.is_empty() {
                        continue;
                    }
                    let mut blocks = vec![false; SPACE as usize];
                    let mut files: Vec<usize> = Vec::new();
                    for &i in &members {
                        let ((s, l), ref fs) = ranges[i];
                        for b in s..s + l {
                            blocks[b as usize] = true;
                        }
                        files.extend(fs);
                    }
                    let mappings = files.len();
                    let nranges = members.len();
                    files.sort_unstable();
                    files.dedup();
                    // A single mapping: shared with something outside. One
                    // file whose every range is mapped once: as compressed
                    // extents look, shared outside the scan.
                    let outside = mappings <= 1 || (files.len() == 1 && mappings <= nranges);
                    out.push(MUnit {
                        bytes: B * blocks.iter().filter(|&&x| x).count() as u64,
                        files,
                        mappings,
                        ranges: nranges,
                        eligible: !outside,
                    });
                }
                out
            }
        }
    }
}

/// A reclaim unit of the model.
#[derive(Debug)]
pub(super) struct MUnit {
    pub(super) bytes: u64,
    /// Sorted, without duplicates.
    pub(super) files: Vec<usize>,
    /// References seen in the scan.
    pub(super) mappings: usize,
    /// Distinct stored ranges (Btrfs).
    pub(super) ranges: usize,
    pub(super) eligible: bool,
}
