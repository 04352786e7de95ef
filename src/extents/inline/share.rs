//! [`share`]: the inline files seen unchanged in two or more subvolumes of
//! one snapshot family, made shared units, in named steps: each device's
//! family ranked ([`FamilyRanks`]), the records gathered ([`gather`]) and
//! grouped by inode and family, who outside the scan holds each run
//! ([`ask_outside`]), a unit per run ([`Units::run`]), and the copies
//! recorded ([`hold_copies`]).

use std::collections::BTreeMap;

use rayon::iter::{IntoParallelRefIterator, ParallelIterator};
use rayon::slice::ParallelSliceMut;

use super::super::inline_held::{self as ih, Holders};
use super::super::source::Extents;
use super::{INLINE_NS, InlineRec, MOVED_AT_ONCE, NO_DEV, Odd, Table};
use crate::probe::{Registry, Subvol};
use crate::records::{CopyRec, CopySets, FileRec, Held, Inode, Link, NodeId, Nodes, dev32, dev64};

/// Turns the inline files seen unchanged in two or more subvolumes of one
/// snapshot family into shared units: indexes a pseudo-extent per inode,
/// for a file record of the first of its copies and of each that differs,
/// records the others as copies of the first ([`CopyRec`]), and takes the
/// bytes out of the copies' exclusive and reclaimable figures (the roll-up
/// credits them back as the unit's). The records come with their keys
/// by id ([`super::Keys::table`]), and are freed as they are used.
///
/// As root (`held`), families are the root tree's, and each inode, seen
/// in one subvolume or more, is asked whether a subvolume outside the
/// scan holds it ([`super::super::inline_held`]): a unit, then, with one
/// more reference from the file that stands for the outside of its
/// namespace (credited to its node in `tops`:
/// [`super::super::outside::outside_file`]).
pub(crate) fn share(
    (chunks, table): (Vec<Vec<InlineRec>>, &Table),
    (devs, held, tops): (&[u64], Option<&Holders>, &[(u32, NodeId)]),
    registry: &Registry,
    extents: &Extents,
    nodes: &mut Nodes,
    links: &mut [Link],
    (files, copies): (&mut Vec<FileRec>, (&CopySets, &mut Vec<Held>)),
) -> Shared {
    // A unit needs copies in two subvolumes: with one subvolume in the
    // scan (the common case) there is nothing to do. Each subvolume is
    // looked up once, not once per file.
    debug_assert!(devs.is_sorted(), "the devices sorted");
    if devs.len() < 2 && held.is_none() {
        return Shared::default();
    }
    let mut ranks = FamilyRanks::of(table, devs, held, registry);
    let (mut recs, mut unknown) = gather(chunks, &mut ranks, held.is_some(), nodes.len());
    // Within one inode's records seen in two subvolumes or more: by
    // family and subvolume.
    recs.par_sort_unstable_by_key(InlineRec::key);
    recs.par_chunk_by_mut(|a, b| a.key() == b.key())
        .filter(|group| group.iter().any(|r| ranks.dev(r) != ranks.dev(&group[0])))
        .for_each(|group| group.sort_unstable_by_key(|r| (ranks.rank(r), ranks.dev(r))));
    files.reserve_exact(new_files(&recs, &ranks));
    let mut helds = held.map_or_else(Vec::new, |h| ask_outside(&recs, &ranks, h, registry));
    let mut units = Units {
        ranks: &ranks,
        registry,
        extents,
        tops,
        count: 0,
        made: Vec::new(),
        copy: vec![0u64; recs.len().div_ceil(64)],
        odd_copies: Vec::new(),
        taken: Taken(vec![0; nodes.len()]),
        outside: BTreeMap::new(),
    };
    // From the last run back. A copy is written over its own record (its
    // key the file it copies, its packed figures its device, its bit set
    // in `copy`), so that the copies take no room of their own until the
    // records are given up.
    let mut end = recs.len();
    while end > 0 {
        let mut start = end - 1;
        while start > 0 && ranks.same(&recs[start - 1], &recs[end - 1]) {
            start -= 1;
        }
        let held = helds.pop().unwrap_or(ih::HeldBy::Nowhere);
        if held == ih::HeldBy::Unknown {
            for r in &recs[start..end] {
                unknown.add(&ranks, r);
            }
        }
        units.run(&mut recs, start..end, held, nodes, links, files);
        end = start;
    }
    let Units {
        count,
        copy,
        odd_copies,
        taken,
        ..
    } = units;
    taken.apply(nodes);
    hold_copies((recs, copy, odd_copies), &ranks, copies);
    Shared {
        units: count,
        unknown: unknown.nodes,
        unknown_inodes: unknown.inodes,
    }
}

/// The inline files whose data a subvolume outside the scan may hold:
/// their bounds.
#[derive(Default)]
struct Unknown {
    /// Of a file counted at its node: the node.
    nodes: Vec<NodeId>,
    /// Of a file counted through its links: its inode, which marks every
    /// link (its record is at whichever link the walk met first).
    inodes: Vec<Inode>,
}

impl Unknown {
    fn add(&mut self, ranks: &FamilyRanks<'_>, r: &InlineRec) {
        match r.linked() {
            true => {
                let k = &ranks.table.keys[r.key() as usize];
                (self.inodes).push((k.ns, dev64(ranks.dev(r)), k.ino));
            }
            false => self.nodes.push(ranks.node(r)),
        }
    }
}

/// Each device's family (none: a subvolume without a UUID), ranked: the
/// order the records of one inode are grouped in.
struct FamilyRanks<'a> {
    table: &'a Table,
    /// By packed device, its family's rank.
    dev_rank: Vec<(u32, u32)>,
    /// By a record's device index, its family's rank: the records' sorts
    /// ask it at each comparison.
    index_rank: Vec<Option<u32>>,
    /// By node: the device index of its records (the marks in the
    /// records' stream say it: [`gather`]); [`NO_DEV`] for none.
    node_dev: Vec<u16>,
    /// The odd records: the table's, and those [`gather`] makes.
    odd: Vec<Odd>,
    /// By packed device, its subvolume's id and creation time, as the
    /// registry gave them once: [`ask_outside`] asks for every record.
    dev_subvol: Vec<(u32, u64, (i64, u32))>,
}

impl<'a> FamilyRanks<'a> {
    /// The ranks of the devices `devs`: as root (`held`) by the root
    /// tree's families, else by the UUIDs the subvolumes give
    /// ([`sdu_sys::btrfs::Uuids`]).
    fn of(
        table: &'a Table,
        devs: &[u64],
        held: Option<&Holders>,
        registry: &Registry,
    ) -> FamilyRanks<'a> {
        let subvols: Vec<Option<Subvol>> = devs.iter().map(|&d| registry.subvolume(d)).collect();
        let zero = [0u8; 16];
        let mut fam = sdu_sys::btrfs::Uuids::default();
        for &Subvol {
            ids: (uuid, parent),
            ..
        } in subvols.iter().flatten()
        {
            fam.union(uuid, uuid);
            if parent != zero {
                fam.union(uuid, parent);
            }
        }
        let kin = |d: u64, sv: &Subvol| held?.family(registry.fs_index(d)?, sv.id);
        let families: Vec<Option<[u8; 16]>> = (subvols.iter().zip(devs))
            .map(|(sv, &d)| sv.map(|sv| kin(d, &sv).unwrap_or_else(|| fam.find(sv.ids.0))))
            .collect();
        let mut ranks: Vec<[u8; 16]> = families.iter().flatten().copied().collect();
        ranks.sort_unstable();
        ranks.dedup();
        let mut dev_rank: Vec<(u32, u32)> = devs
            .iter()
            .zip(&families)
            .filter_map(|(&d, f)| {
                let r = ranks.binary_search(f.as_ref()?).expect("a family ranked");
                Some((dev32(d)?, r as u32))
            })
            .collect();
        dev_rank.sort_unstable();
        let mut dev_subvol: Vec<(u32, u64, (i64, u32))> = (devs.iter().zip(&subvols))
            .filter_map(|(&d, sv)| sv.and_then(|sv| Some((dev32(d)?, sv.id, sv.created))))
            .collect();
        dev_subvol.sort_unstable();
        let mut ranks = FamilyRanks {
            table,
            dev_rank,
            index_rank: Vec::new(),
            node_dev: Vec::new(),
            odd: table.odd.clone(),
            dev_subvol,
        };
        ranks.index_rank = table.devs.iter().map(|&d| ranks.rank_of(d)).collect();
        ranks
    }

    /// The id and creation time of the subvolume of packed device `d`, if
    /// the registry knows it.
    fn subvol(&self, d: u32, registry: &Registry) -> Option<(u64, (i64, u32))> {
        match self.dev_subvol.binary_search_by_key(&d, |x| x.0) {
            Ok(i) => Some((self.dev_subvol[i].1, self.dev_subvol[i].2)),
            // A device not among those ranked: the registry's word.
            Err(_) => registry.subvolume(dev64(d)).map(|s| (s.id, s.created)),
        }
    }

    fn rank_of(&self, d: u32) -> Option<u32> {
        let i = self.dev_rank.binary_search_by_key(&d, |x| x.0).ok()?;
        Some(self.dev_rank[i].1)
    }

    fn odd(&self) -> &[Odd] {
        &self.odd
    }

    /// The device index of the records of node `at` (not an odd one's).
    fn index(&self, at: u32) -> usize {
        let i = self.node_dev[at as usize];
        debug_assert!(u32::from(i) != NO_DEV, "a mark before each record");
        usize::from(i)
    }

    /// `st_dev`, `r`'s subvolume ([`crate::records::dev32`]).
    fn dev(&self, r: &InlineRec) -> u32 {
        match r.odd(self.odd()) {
            Some(o) => o.dev,
            None => self.table.devs[self.index(r.at)],
        }
    }

    fn node(&self, r: &InlineRec) -> NodeId {
        r.node(self.odd())
    }

    fn bytes(&self, r: &InlineRec) -> u64 {
        r.bytes(&self.odd, &self.table.bytes)
    }

    /// The rank of `r`'s family; `None`: of no known subvolume.
    fn rank(&self, r: &InlineRec) -> Option<u32> {
        match r.odd(self.odd()) {
            Some(o) => self.rank_of(o.dev),
            None => self.index_rank[self.index(r.at)],
        }
    }

    /// Of one run: one inode, in one subvolume or one family.
    fn same(&self, a: &InlineRec, b: &InlineRec) -> bool {
        a.key() == b.key() && (self.dev(a) == self.dev(b) || self.rank(a) == self.rank(b))
    }

    /// A unit needs copies in two subvolumes.
    fn shared(&self, run: &[InlineRec]) -> bool {
        run.iter().any(|r| self.dev(r) != self.dev(&run[0]))
    }

    /// A copy that is a file of its own only for its inline data (no
    /// other extent indexed, not counted through links) is recorded as a
    /// copy of the first such in its run ([`CopyRec`], 12 bytes), not as a
    /// file record and a mapping: the run's first stands for them all.
    fn foldable(&self, r: &InlineRec) -> bool {
        r.file(self.odd()).is_none() && !r.linked()
    }

    fn first(&self, run: &[InlineRec]) -> Option<usize> {
        run.iter().position(|r| self.foldable(r))
    }

    /// Whether the `j`th of `run` is a copy of its `first`: the same bytes
    /// mapped, as the file it stands for would map.
    fn is_copy(&self, run: &[InlineRec], first: Option<usize>, j: usize) -> bool {
        first.is_some_and(|c| {
            j > c && self.foldable(&run[j]) && self.bytes(&run[j]) == self.bytes(&run[c])
        })
    }
}

/// The records of `chunks` moved into one vector, each chunk given back
/// as it is moved, the marks left out once they have given each node its
/// subvolume (`ranks`' [`FamilyRanks::node_dev`], for the `nodes` node
/// ids), and those of no known subvolume, which as root (`root`) are
/// bounds: their copies outside the scan cannot be asked about.
///
/// Group the copies of one inode: sort by key id, and within one inode's
/// records seen in two subvolumes or more, by family and subvolume; then
/// take the runs of one inode in one family. No map and no allocation per
/// group: most inline files of a scan are seen once. The records are
/// sorted in place, on the walk's threads. The ids, and so the order the
/// units are made in, depend on the walk's order; the runs, and every
/// figure, do not.
///
/// Unlike a copy's extents (`copies::settled`), a file changed just before
/// its snapshot is keyed too: nothing else could show its inline data
/// shared, and only a write in the same clock tick after the snapshot
/// would be mistaken for none (the old inline data, a few KiB of metadata
/// at most, then counted shared).
fn gather(
    mut chunks: Vec<Vec<InlineRec>>,
    ranks: &mut FamilyRanks<'_>,
    root: bool,
    nodes: usize,
) -> (Vec<InlineRec>, Unknown) {
    // The marks first, in the stream's order: each holds for the records
    // after it.
    let mut node_dev = vec![NO_DEV as u16; nodes];
    let mut index = NO_DEV as u16;
    for r in chunks.iter_mut().flatten() {
        if r.is_mark() {
            index = u16::try_from(r.at).expect("a mark's index in 16 bits");
            continue;
        }
        if r.odd(&ranks.odd).is_some() {
            continue;
        }
        assert!(u32::from(index) != NO_DEV, "a mark before the records");
        let d = &mut node_dev[r.at as usize];
        if u32::from(*d) == NO_DEV {
            *d = index;
        } else if *d != index {
            // A node with records of two subvolumes (a file of another
            // mounted over one of its directory's entries): this one's
            // subvolume kept in an odd record.
            ranks.odd.push(Odd {
                node: NodeId::new(r.at as usize),
                bytes: u64::from(ranks.table.bytes[r.key() as usize]),
                file: None,
                dev: ranks.table.devs[usize::from(index)],
            });
            let at = u32::try_from(ranks.odd.len() - 1).expect("fewer than 4 billion odd records");
            *r = InlineRec {
                at,
                key: r.key | super::ODD,
            };
        }
    }
    ranks.node_dev = node_dev;
    let ranks = &*ranks;
    let files = chunks.iter().flatten().filter(|r| !r.is_mark()).count();
    let mut recs: Vec<InlineRec> = Vec::with_capacity(files);
    let mut unknown = Unknown::default();
    for mut chunk in chunks {
        // From its end, a slice at a time: the chunk and the records moved
        // never both hold all of it.
        while !chunk.is_empty() {
            let from = chunk.len().saturating_sub(MOVED_AT_ONCE);
            // A record of no known subvolume is matched with none.
            recs.extend(chunk.drain(from..).filter(|r| {
                if r.is_mark() {
                    return false;
                }
                let known = ranks.rank(r).is_some();
                if !known && root {
                    unknown.add(ranks, r);
                }
                known
            }));
            chunk.shrink_to_fit();
        }
    }
    (recs, unknown)
}

/// The file records the shared runs of `recs` make: made room for at once
/// (not by doubling).
fn new_files(recs: &[InlineRec], ranks: &FamilyRanks<'_>) -> usize {
    let mut new_ids = 0;
    for run in recs.chunk_by(|a, b| ranks.same(a, b)) {
        if !ranks.shared(run) {
            continue;
        }
        let f = ranks.first(run);
        new_ids += (0..run.len())
            .filter(|&j| !ranks.is_copy(run, f, j) && run[j].file(ranks.odd()).is_none())
            .count();
    }
    new_ids
}

/// As root: who outside the scan holds each run's inode, asked on the
/// walk's threads, in run order (a run's records are in subvolumes, by id
/// and creation, of one family).
fn ask_outside(
    recs: &[InlineRec],
    ranks: &FamilyRanks<'_>,
    h: &Holders,
    registry: &Registry,
) -> Vec<ih::HeldBy> {
    let keys = &ranks.table.keys[..];
    let runs: Vec<&[InlineRec]> = recs.chunk_by(|a, b| ranks.same(a, b)).collect();
    runs.par_iter()
        .map(|run| {
            let mut seen: Vec<(u64, (i64, u32))> = (run.iter())
                .filter_map(|r| ranks.subvol(ranks.dev(r), registry))
                .collect();
            seen.dedup();
            h.held(&keys[run[0].key() as usize].inode(), &seen)
        })
        .collect()
}

/// The units made so far, and what they took.
struct Units<'a> {
    ranks: &'a FamilyRanks<'a>,
    registry: &'a Registry,
    extents: &'a Extents,
    tops: &'a [(u32, NodeId)],
    /// The units made.
    count: usize,
    /// The copies of the run being made: (record index, file it copies).
    made: Vec<(usize, u32)>,
    /// By record index: a copy.
    copy: Vec<u64>,
    /// The copies whose records are odd ones, made apart: their
    /// subvolume is not their node's in [`FamilyRanks::node_dev`].
    odd_copies: Vec<CopyRec>,
    taken: Taken,
    /// By namespace: the file that stands for its outside.
    outside: BTreeMap<u32, u32>,
}

impl Units<'_> {
    /// Makes the unit of the run `recs[at]` (one inode in one family),
    /// held outside the scan as `held` says, if it is shared: a
    /// pseudo-extent with a file record per copy that differs, the bytes
    /// taken from each copy's figures, and the other copies written over
    /// their records.
    fn run(
        &mut self,
        recs: &mut [InlineRec],
        at: std::ops::Range<usize>,
        held: ih::HeldBy,
        nodes: &mut Nodes,
        links: &mut [Link],
        files: &mut Vec<FileRec>,
    ) {
        let (ranks, start) = (self.ranks, at.start);
        let run = &recs[at];
        let k = &ranks.table.keys[run[0].key() as usize];
        if !ranks.shared(run) && held != ih::HeldBy::Outside {
            return;
        }
        let f = ranks.first(run);
        let space = self.registry.space(k.fs, INLINE_NS - k.ns);
        // One pseudo-extent per inode, far apart from the next.
        let physical = (self.count as u64) << 32;
        self.count += 1;
        let mut stands_for = None;
        for (j, r) in run.iter().enumerate() {
            let bytes = ranks.bytes(r);
            match stands_for {
                Some(of) if ranks.is_copy(run, f, j) => self.made.push((start + j, of)),
                _ => {
                    let id = r
                        .file(ranks.odd())
                        .unwrap_or_else(|| self.extents.new_file());
                    self.extents.insert(space, physical, bytes, id);
                    if files.len() <= id as usize {
                        files.resize(id as usize + 1, FileRec::default());
                    }
                    files[id as usize] = FileRec {
                        id,
                        node: ranks.node(r),
                        ns: k.ns,
                        dev: dev64(ranks.dev(r)),
                        ino: k.ino,
                        linked: r.linked(),
                    };
                    if Some(j) == f {
                        stands_for = Some(id);
                    }
                }
            }
            if held == ih::HeldBy::Outside && j == 0 {
                let extents = self.extents;
                let id = *self
                    .outside
                    .entry(k.ns)
                    .or_insert_with(|| extents.new_file());
                extents.insert(space, physical, bytes, id);
                files.resize(files.len().max(id as usize + 1), FileRec::default());
                files[id as usize] = super::super::outside::outside_file(id, k.ns, self.tops);
            }
            if r.linked() {
                let dev = dev64(ranks.dev(r));
                for l in (links.iter_mut()).filter(|l| (l.ns, l.dev, l.ino) == (k.ns, dev, k.ino)) {
                    take_shared(&mut l.stats, bytes);
                }
            } else {
                let n = ranks.node(r);
                // A -a leaf's figures are also its directory's.
                let dir = nodes.leaf(n).then(|| nodes.parent(n));
                for n in std::iter::once(n).chain(dir) {
                    self.taken.add(nodes, n, bytes);
                }
            }
        }
        for (i, of) in self.made.drain(..) {
            let r = recs[i];
            if r.odd(ranks.odd()).is_some() {
                self.odd_copies.push(CopyRec {
                    of,
                    node: ranks.node(&r),
                    dev: ranks.dev(&r),
                });
            } else {
                // Its node and the file it copies; its subvolume is its
                // node's.
                recs[i] = InlineRec { at: r.at, key: of };
                self.copy[i / 64] |= 1 << (i % 64);
            }
        }
    }
}

/// The copies (the records whose bit is set in `copy`, and the odd ones
/// made apart), in the records' own room, by directory, held in
/// `copies`: sorted from the last and taken from the end, their room
/// given back as they are taken, so that the sets they make take the room
/// the records leave. A copy's subvolume is its node's (`ranks`).
fn hold_copies(
    (mut recs, copy, mut odd): (Vec<InlineRec>, Vec<u64>, Vec<CopyRec>),
    ranks: &FamilyRanks<'_>,
    (sets, held): (&CopySets, &mut Vec<Held>),
) {
    let mut i = 0;
    recs.retain(|_| {
        i += 1;
        copy[(i - 1) / 64] & 1 << ((i - 1) % 64) != 0
    });
    drop(copy);
    recs.shrink_to_fit();
    // By node (and so subvolume), then the file copied.
    recs.par_sort_unstable_by_key(|r| std::cmp::Reverse((r.at, r.key)));
    odd.sort_unstable_by_key(|c| std::cmp::Reverse((c.node, c.dev, c.of)));
    let order = |c: &CopyRec| (c.node, c.dev, c.of);
    let devs = &ranks.table.devs;
    let mut next = move || {
        let r = recs.pop()?;
        if recs.capacity() - recs.len() >= MOVED_AT_ONCE {
            recs.shrink_to_fit();
        }
        Some(CopyRec {
            of: r.key,
            node: NodeId::new(r.at as usize),
            dev: devs[ranks.index(r.at)],
        })
    };
    let (mut a, mut b) = (next(), odd.pop());
    let taken = std::iter::from_fn(|| match (a, b) {
        (Some(x), Some(y)) if order(&y) < order(&x) => std::mem::replace(&mut b, odd.pop()),
        (Some(_), _) => std::mem::replace(&mut a, next()),
        (None, _) => std::mem::replace(&mut b, odd.pop()),
    });
    sets.hold_sorted(taken, held);
}

/// The inline bytes found shared, by node, to be taken from each node's
/// own Exclusive and Reclaimable in one pass in id order: 4 bytes a node,
/// where a read and a write of a node's compact figures for each record
/// (a random access each) were most of the matching's time
/// (docs/decisions.md, "Memory").
pub(super) struct Taken(pub(super) Vec<u32>);

impl Taken {
    /// Takes `bytes` from node `n`, at once if its sum passes 32 bits.
    pub(super) fn add(&mut self, nodes: &mut Nodes, n: NodeId, bytes: u64) {
        let slot = &mut self.0[n.index()];
        match u32::try_from(u64::from(*slot) + bytes) {
            Ok(sum) => *slot = sum,
            Err(_) => take_own(nodes, n, u64::from(std::mem::take(slot)) + bytes),
        }
    }

    pub(super) fn apply(self, nodes: &mut Nodes) {
        for (id, bytes) in nodes.ids().zip(self.0) {
            if bytes > 0 {
                take_own(nodes, id, u64::from(bytes));
            }
        }
    }
}

/// Takes `bytes` found shared from node `n`'s own figures.
fn take_own(nodes: &mut Nodes, n: NodeId, bytes: u64) {
    let mut own = nodes.own(n);
    take_shared(&mut own, bytes);
    nodes.set_own(n, &own);
}

/// Takes `bytes` found shared from the Exclusive and Reclaimable of `s`.
fn take_shared(s: &mut crate::figures::Stats, bytes: u64) {
    s.exclusive = s.exclusive.saturating_sub(bytes);
    s.reclaimable = s.reclaimable.saturating_sub(bytes);
}

/// What [`share`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Shared {
    /// The shared units made: one per inode seen in two subvolumes or
    /// more, or held outside the scan.
    pub(crate) units: usize,
    /// The nodes of inline files a subvolume outside the scan may hold
    /// (its tree could not be read): their figures are bounds.
    pub(crate) unknown: Vec<NodeId>,
    /// Likewise, the inodes of such files counted through their links.
    pub(crate) unknown_inodes: Vec<Inode>,
}
