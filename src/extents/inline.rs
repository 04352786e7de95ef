//! Btrfs inline data shared by snapshots.
//!
//! A small Btrfs file keeps its data inline, in the metadata leaf next to
//! its inode: it has no disk address, and FIEMAP never flags it shared. A
//! snapshot shares that leaf with its origin until either side changes the
//! inode, so counting inline data as exclusive in each makes an unchanged
//! snapshot of 5,000 small files "free" 20 MB when deleting it frees
//! nothing.
//!
//! The same inode, unchanged, seen in two or more subvolumes of one
//! filesystem is one shared unit here, credited by the same rules as every
//! other unit. "The same inode, unchanged" is what an unprivileged caller
//! can read with `statx`: the inode number, its birth and change times to
//! the nanosecond and its size, as for the copies of [`super::unchanged`] (a
//! new inode with a reused number has another birth time; any change to
//! the inode sets its change time); a symlink, whose target is always
//! inline, never matches a file; and the subvolumes must be of
//! one snapshot family (one is a snapshot of the other, or both of a third,
//! as their UUIDs say: `BTRFS_IOC_GET_SUBVOL_INFO`), because two fresh
//! subvolumes can hold files with equal inode numbers and
//! times (created in one transaction) that share nothing. Each such unit is
//! indexed as a pseudo-extent in an extent space of its own per filesystem,
//! so the sweep and the roll-up treat it like any shared extent.
//!
//! Without root it cannot see a snapshot outside the scan (the inode seen
//! once counts as exclusive, and the walk marks it "at most"), nor a family
//! link through a subvolume outside the scan (a snapshot of a snapshot
//! whose middle generation is not scanned). As root the families are the
//! root tree's, and every inode is asked whether a subvolume outside the
//! scan holds it ([`super::inline_held`]).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use dashmap::DashMap;
use rayon::iter::{IntoParallelRefIterator, ParallelIterator};
use rayon::slice::ParallelSliceMut;
use rustix::fs::Statx;

use super::Fast;
use super::inline_held::{self as ih, Holders};
use super::source::Extents;
use crate::figures::Kind;
use crate::probe::{Registry, Subvol};
use crate::records::{CopyRec, CopySets, FileRec, Held, Link, NodeId, Nodes, dev32, dev64};

/// The namespace tag of the inline extent spaces: above every root
/// namespace (those count the roots).
const INLINE_NS: u32 = u32::MAX;

/// Whether namespace `ns` tags an inline extent space: its addresses are
/// made up, and no filesystem can say who else holds its data.
pub(crate) fn is_inline_ns(ns: u32) -> bool {
    ns > INLINE_NS / 2
}

/// The root namespace whose files extent space namespace `ns` holds: an
/// inline space's is the one it was made for.
pub(crate) fn root_ns(ns: u32) -> u32 {
    if is_inline_ns(ns) { INLINE_NS - ns } else { ns }
}

/// What identifies an inode's copies across snapshots: its filesystem,
/// its root's namespace, its inode number, symlink or not, its birth and
/// change times and its size. Packed in 48 bytes: the symlink flag is the
/// top bit of the birth time's nanoseconds (below 2^30).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    fs: u32,
    ns: u32,
    ino: u64,
    size: u64,
    btime_sec: i64,
    ctime_sec: i64,
    btime_nsec: u32,
    ctime_nsec: u32,
}

const SYMLINK: u32 = 1 << 31;

impl Key {
    /// The key of inode `ino` of root namespace `ns` on filesystem `fs`.
    pub(crate) fn new(
        (fs, ns, ino): (u32, u32, u64),
        symlink: bool,
        btime: (i64, u32),
        ctime: (i64, u32),
        size: u64,
    ) -> Key {
        Key {
            fs,
            ns,
            ino,
            size,
            btime_sec: btime.0,
            ctime_sec: ctime.0,
            btime_nsec: btime.1 & !SYMLINK | if symlink { SYMLINK } else { 0 },
            ctime_nsec: ctime.1,
        }
    }

    pub(crate) fn symlink(&self) -> bool {
        self.btime_nsec & SYMLINK != 0
    }

    pub(crate) fn btime(&self) -> (i64, u32) {
        (self.btime_sec, self.btime_nsec & !SYMLINK)
    }

    pub(crate) fn ctime(&self) -> (i64, u32) {
        (self.ctime_sec, self.ctime_nsec)
    }

    /// What [`super::inline_held`] asks the trees about.
    fn inode(&self) -> ih::Inode {
        ih::Inode {
            fs: self.fs,
            ino: self.ino,
            size: self.size,
            symlink: self.symlink(),
            times: (self.btime(), self.ctime()),
        }
    }
}

/// Values given dense ids (0, 1, 2...) on first sight, by the walk's
/// threads together.
struct Dense<K> {
    map: DashMap<K, u32, Fast>,
    next: AtomicU32,
}

impl<K> Default for Dense<K>
where
    K: Eq + std::hash::Hash,
{
    fn default() -> Self {
        Dense {
            map: DashMap::default(),
            next: AtomicU32::new(0),
        }
    }
}

impl<K: Copy + Default + Eq + std::hash::Hash> Dense<K> {
    /// The id of `k`, given it if new.
    fn id(&self, k: K) -> u32 {
        if let Some(id) = self.map.get(&k) {
            return *id;
        }
        *self
            .map
            .entry(k)
            .or_insert_with(|| self.next.fetch_add(1, Ordering::Relaxed))
    }

    /// The values by id, the map given up for them.
    fn by_id(self) -> Vec<K> {
        let mut v = vec![K::default(); self.next.into_inner() as usize];
        for (k, id) in self.map {
            v[id as usize] = k;
        }
        v
    }
}

/// The keys the walk met, each given a dense id on first sight: a record
/// names its inode's key by id, in 4 bytes, so a copy in one more snapshot
/// costs a record, not a key. Likewise the subvolumes (devices) the
/// records are in, each given an index that a record holds in 16 bits.
/// Shared by the walk's threads; the ids and indexes depend on the walk's
/// order, which [`share`] never reads them in. Also the few records'
/// figures a 12-byte record cannot hold ([`Odd`]).
#[derive(Default)]
pub(crate) struct Keys {
    keys: Dense<Key>,
    devs: Dense<u32>,
    odd: Mutex<Vec<Odd>>,
}

/// The keys by id, the devices by index and the odd records by index, as
/// [`share`] reads them.
#[derive(Default)]
pub(crate) struct Table {
    keys: Vec<Key>,
    devs: Vec<u32>,
    odd: Vec<Odd>,
}

impl Table {
    /// The devices (subvolumes) of the records, ascending, each once.
    /// Inline data is shared only between two subvolumes: while a scan
    /// meets one, its records are dropped unread.
    pub(crate) fn devs(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.devs.iter().map(|&d| dev64(d)).collect();
        v.sort_unstable();
        v
    }
}

impl Keys {
    /// The id of `key`, given it if new.
    pub(crate) fn id(&self, key: Key) -> u32 {
        let id = self.keys.id(key);
        assert!(id < ODD, "fewer than a billion inodes with inline data");
        id
    }

    /// The index of device `dev` (packed), given it if new.
    fn dev(&self, dev: u32) -> u32 {
        self.devs.id(dev)
    }

    /// Keeps `odd`; its index.
    fn odd(&self, odd: Odd) -> u32 {
        let mut v = self.odd.lock().unwrap_or_else(|e| e.into_inner());
        v.push(odd);
        u32::try_from(v.len() - 1).expect("fewer than 4 billion odd records")
    }

    /// The bytes the map holds (its buckets' capacity).
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.keys.map.capacity() * size_of::<(Key, u32)>()
    }

    /// The keys by id and the devices by index, the maps given up for
    /// them, and the odd records.
    pub(crate) fn table(self) -> Table {
        let odd = self.odd.into_inner().unwrap_or_else(|e| e.into_inner());
        Table {
            keys: self.keys.by_id(),
            devs: self.devs.by_id(),
            odd,
        }
    }
}

/// [`InlineRec::key`]'s top bit: credited through the link table
/// (multiply-linked).
const LINKED: u32 = 1 << 31;
/// Its next bit: its figures are an [`Odd`] record's, `packed` its index.
const ODD: u32 = 1 << 30;

/// A Btrfs file whose data is inline, as seen in one subvolume: what
/// differs between its copies, and its inode's key by id ([`Keys`]), in 12
/// bytes: every inline file of every snapshot has one until they are
/// matched.
#[derive(Clone, Copy, Debug)]
pub(crate) struct InlineRec {
    /// The node it is credited to (its directory, or its own with `-a`).
    pub(crate) node: NodeId,
    /// Its inode's key's id, with [`LINKED`] and [`ODD`].
    key: u32,
    /// Its subvolume's index ([`Keys`]) in the top 16 bits, and below
    /// its allocated bytes (`st_blocks × 512`, less what was found
    /// shared), what it counted as: not a multiple of 512 for certain, so
    /// kept whole. With [`ODD`]: the index of its [`Odd`] record.
    packed: u32,
}

/// What an [`InlineRec`] cannot hold: bytes or a subvolume's index past
/// 16 bits, or a file id (some of the file's other extents were indexed).
/// Rare: inline data makes a file small, and a scan meets few subvolumes.
#[derive(Clone, Copy, Debug)]
struct Odd {
    bytes: u64,
    file: Option<u32>,
    dev: u32,
}

impl InlineRec {
    /// The record of the inode stat-ed as `st` (a file, or a symlink),
    /// credited to `node` of root namespace `ns`, with `bytes` counted as
    /// its own (`file`: its file id, if some of its extents were indexed)
    /// on filesystem `fs`, its key looked up in `keys`, and its
    /// subvolume's index too unless `last` holds it (the device and index
    /// of the caller's last record: a task's files are of one subvolume).
    /// `None` for a device number past 32 bits, which Linux does not make.
    pub(crate) fn of(
        st: &Statx,
        (node, ns): (NodeId, u32),
        bytes: u64,
        linked: bool,
        file: Option<u32>,
        (fs, keys, last): (u32, &Keys, &mut Option<(u32, u32)>),
    ) -> Option<InlineRec> {
        let dev = dev32(rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor))?;
        let index = match *last {
            Some((d, i)) if d == dev => i,
            _ => {
                let i = keys.dev(dev);
                *last = Some((dev, i));
                i
            }
        };
        let key = Key::new(
            (fs, ns, st.stx_ino),
            Kind::from_mode(u32::from(st.stx_mode)) == Kind::Symlink,
            (st.stx_btime.tv_sec, st.stx_btime.tv_nsec),
            (st.stx_ctime.tv_sec, st.stx_ctime.tv_nsec),
            st.stx_size,
        );
        Some(Self::new(
            (node, keys.id(key), dev, index),
            bytes,
            linked,
            file,
            keys,
        ))
    }

    /// The record of `node`, key id `key`, device `dev` (packed) of index
    /// `index` in `keys`.
    fn new(
        (node, key, dev, index): (NodeId, u32, u32, u32),
        bytes: u64,
        linked: bool,
        file: Option<u32>,
        keys: &Keys,
    ) -> InlineRec {
        let linked = if linked { LINKED } else { 0 };
        match (u16::try_from(bytes), u16::try_from(index), file) {
            (Ok(bytes), Ok(i), None) => InlineRec {
                node,
                key: key | linked,
                packed: u32::from(i) << 16 | u32::from(bytes),
            },
            _ => InlineRec {
                node,
                key: key | linked | ODD,
                packed: keys.odd(Odd { bytes, file, dev }),
            },
        }
    }

    /// Its inode's key's id.
    pub(crate) fn key(&self) -> u32 {
        self.key & (ODD - 1)
    }

    /// Credited through the link table (multiply-linked).
    pub(crate) fn linked(&self) -> bool {
        self.key & LINKED != 0
    }

    /// `st_dev`, its subvolume ([`dev32`]), read from `table`.
    fn dev(&self, table: &Table) -> u32 {
        self.odd(&table.odd)
            .map_or_else(|| table.devs[(self.packed >> 16) as usize], |o| o.dev)
    }

    fn odd<'a>(&self, odd: &'a [Odd]) -> Option<&'a Odd> {
        (self.key & ODD != 0).then(|| &odd[self.packed as usize])
    }

    /// Its bytes, reading its odd record (of `odd`) if it has one.
    fn bytes(&self, odd: &[Odd]) -> u64 {
        self.odd(odd)
            .map_or(u64::from(self.packed & 0xffff), |o| o.bytes)
    }

    /// Its file id, when some of its other extents were indexed.
    fn file(&self, odd: &[Odd]) -> Option<u32> {
        self.odd(odd).and_then(|o| o.file)
    }
}

/// The records [`share`] moves or frees at once: 768 KiB.
const MOVED_AT_ONCE: usize = 1 << 16;

/// The records [`share`] takes come in chunks of at most
/// `1 << CHUNK_BITS`, as the walk's shards keep them: 3 MiB, which the
/// allocator maps on its own and gives back when [`share`] frees it (in
/// chunks of 64 KiB, glibc kept them for reuse: 10 MB more at 40
/// snapshots of a /usr/share copy; pages never written are never
/// resident, so a shard's last chunk costs what it holds).
pub(crate) const CHUNK_BITS: u32 = 18;

/// The inline bytes found shared, by node, to be taken from each node's
/// own Exclusive and Reclaimable in one pass in id order: 4 bytes a node,
/// where a read and a write of a node's compact figures for each record
/// (a random access each) were most of the matching's time (3.3M records
/// of 100 snapshots: 590 ms).
struct Taken(Vec<u32>);

impl Taken {
    /// Takes `bytes` from node `n`, at once if its sum passes 32 bits.
    fn add(&mut self, nodes: &mut Nodes, n: NodeId, bytes: u64) {
        let slot = &mut self.0[n.index()];
        match u32::try_from(u64::from(*slot) + bytes) {
            Ok(sum) => *slot = sum,
            Err(_) => take_own(nodes, n, u64::from(std::mem::take(slot)) + bytes),
        }
    }

    fn apply(self, nodes: &mut Nodes) {
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

/// Turns the inline files seen unchanged in two or more subvolumes of one
/// snapshot family into shared units: indexes a pseudo-extent per inode,
/// for a file record of the first of its copies and of each that differs,
/// records the others as copies of the first ([`CopyRec`]), and takes the
/// bytes out of the copies' exclusive and reclaimable figures (the roll-up
/// credits them back as the unit's). The records come with their keys
/// by id ([`Keys::table`]), and are freed as they are used.
///
/// As root (`held`), families are the root tree's, and each inode, seen
/// in one subvolume or more, is asked whether a subvolume outside the
/// scan holds it ([`super::inline_held`]): a unit, then, with one more
/// reference from the file that stands for the outside of its namespace
/// (credited to its node in `tops`: [`super::outside::outside_file`]).
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
    let (keys, odd) = (&table.keys[..], &table.odd[..]);
    let subvols: Vec<Option<Subvol>> = devs.iter().map(|&d| registry.subvolume(d)).collect();
    let zero = [0u8; 16];
    let mut fam = super::btrfs_kin::Uuids::default();
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
    // Each device's family (none: a subvolume without a UUID), ranked,
    // by packed device.
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
    let rank_of = |d: u32| {
        let i = dev_rank.binary_search_by_key(&d, |x| x.0).ok()?;
        Some(dev_rank[i].1)
    };
    // By a record's device index, its family's rank: the records' sorts
    // ask it at each comparison.
    let index_rank: Vec<Option<u32>> = table.devs.iter().map(|&d| rank_of(d)).collect();
    let dev = |r: &InlineRec| r.dev(table);
    let rank = |r: &InlineRec| match r.odd(odd) {
        Some(o) => rank_of(o.dev),
        None => index_rank[(r.packed >> 16) as usize],
    };
    // Group the copies of one inode: sort by key id, and within one
    // inode's records seen in two subvolumes or more, by family and
    // subvolume; then take the runs of one inode in one family. No map and
    // no allocation per group: most inline files of a scan are seen once.
    // The records are moved into one vector, each chunk given back as it
    // is moved, and sorted in place, on the walk's threads. The ids, and
    // so the order the units are made in, depend on the walk's order; the
    // runs, and every figure, do not.
    //
    // Unlike a copy's extents (`unchanged::settled`), a file changed just
    // before its snapshot is keyed too: nothing else could show its inline
    // data shared, and only a write in the same clock tick after the
    // snapshot would be mistaken for none (the old inline data, a few KiB
    // of metadata at most, then counted shared).
    let mut recs: Vec<InlineRec> = Vec::with_capacity(chunks.iter().map(Vec::len).sum());
    let mut unknown = Vec::new();
    for mut chunk in chunks {
        // From its end, a slice at a time: the chunk and the records moved
        // never both hold all of it.
        while !chunk.is_empty() {
            let from = chunk.len().saturating_sub(MOVED_AT_ONCE);
            // A record of no known subvolume is matched with none; as root
            // its copies outside the scan cannot be asked about: a bound.
            recs.extend(chunk.drain(from..).filter(|r| {
                let known = rank(r).is_some();
                if !known && held.is_some() {
                    unknown.push(r.node);
                }
                known
            }));
            chunk.shrink_to_fit();
        }
    }
    recs.par_sort_unstable_by_key(InlineRec::key);
    recs.par_chunk_by_mut(|a, b| a.key() == b.key())
        .filter(|group| group.iter().any(|r| dev(r) != dev(&group[0])))
        .for_each(|group| group.sort_unstable_by_key(|r| (rank(r), dev(r))));
    let same = |a: &InlineRec, b: &InlineRec| {
        a.key() == b.key() && (dev(a) == dev(b) || rank(a) == rank(b))
    };
    // A unit needs copies in two subvolumes.
    let shared = |run: &[InlineRec]| run.iter().any(|r| dev(r) != dev(&run[0]));
    // A copy that is a file of its own only for its inline data (no other
    // extent indexed, not counted through links) is recorded as a copy of
    // the first such in its run ([`CopyRec`], 12 bytes), not as a file
    // record and a mapping: the run's first stands for them all.
    let foldable = |r: &InlineRec| r.file(odd).is_none() && !r.linked();
    let first = |run: &[InlineRec]| run.iter().position(foldable);
    // Whether the `j`th of `run` is a copy of its `first`: the same bytes
    // mapped, as the file it stands for would map.
    let is_copy = |run: &[InlineRec], first: Option<usize>, j: usize| {
        first.is_some_and(|c| j > c && foldable(&run[j]) && run[j].bytes(odd) == run[c].bytes(odd))
    };
    // The file records, made room for at once (not by doubling).
    let mut new_ids = 0;
    for run in recs.chunk_by(same).filter(|run| shared(run)) {
        let f = first(run);
        new_ids += (0..run.len())
            .filter(|&j| !is_copy(run, f, j) && run[j].file(odd).is_none())
            .count();
    }
    files.reserve_exact(new_ids);
    let mut units = 0;
    // From the last run back. A copy is written over its own record (its
    // key the file it copies, its packed figures its device, its bit set
    // in `copy`), so that the copies take no room of their own until the
    // records are given up.
    let mut end = recs.len();
    let mut made = Vec::new();
    let mut copy = vec![0u64; recs.len().div_ceil(64)];
    let mut taken = Taken(vec![0; nodes.len()]);
    let mut outside = std::collections::BTreeMap::new();
    // As root: who outside the scan holds each run's inode, asked on the
    // walk's threads; taken from the last run, as the runs are (a run's
    // records are in subvolumes, by id and creation, of one family).
    let mut helds: Vec<ih::Held> = held.map_or_else(Vec::new, |h| {
        let runs: Vec<&[InlineRec]> = recs.chunk_by(same).collect();
        runs.par_iter()
            .map(|run| {
                let mut seen: Vec<(u64, (i64, u32))> = (run.iter())
                    .filter_map(|r| registry.subvolume(dev64(dev(r))).map(|s| (s.id, s.created)))
                    .collect();
                seen.dedup();
                h.held(&keys[run[0].key() as usize].inode(), &seen)
            })
            .collect()
    });
    while end > 0 {
        let mut start = end - 1;
        while start > 0 && same(&recs[start - 1], &recs[end - 1]) {
            start -= 1;
        }
        let run = &recs[start..end];
        let at = start;
        end = start;
        let k = &keys[run[0].key() as usize];
        let held = helds.pop().unwrap_or(ih::Held::Nowhere);
        if held == ih::Held::Unknown {
            unknown.extend(run.iter().map(|r| r.node));
        }
        if !shared(run) && held != ih::Held::Outside {
            continue;
        }
        let f = first(run);
        let space = registry.space(k.fs, INLINE_NS - k.ns);
        // One pseudo-extent per inode, far apart from the next.
        let physical = (units as u64) << 32;
        units += 1;
        let mut stands_for = None;
        for (j, r) in run.iter().enumerate() {
            let bytes = r.bytes(odd);
            match stands_for {
                Some(of) if is_copy(run, f, j) => made.push((at + j, of)),
                _ => {
                    let id = r.file(odd).unwrap_or_else(|| extents.new_file());
                    extents.insert(space, physical, bytes, id);
                    if files.len() <= id as usize {
                        files.resize(id as usize + 1, FileRec::default());
                    }
                    files[id as usize] = FileRec {
                        id,
                        node: r.node,
                        ns: k.ns,
                        dev: dev64(dev(r)),
                        ino: k.ino,
                        linked: r.linked(),
                    };
                    if Some(j) == f {
                        stands_for = Some(id);
                    }
                }
            }
            if held == ih::Held::Outside && j == 0 {
                let id = *outside.entry(k.ns).or_insert_with(|| extents.new_file());
                extents.insert(space, physical, bytes, id);
                files.resize(files.len().max(id as usize + 1), FileRec::default());
                files[id as usize] = super::outside::outside_file(id, k.ns, tops);
            }
            if r.linked() {
                for l in links
                    .iter_mut()
                    .filter(|l| (l.ns, l.dev, l.ino) == (k.ns, dev64(dev(r)), k.ino))
                {
                    take_shared(&mut l.stats, bytes);
                }
            } else {
                let n = r.node;
                // A -a leaf's figures are also its directory's.
                let dir = nodes.leaf(n).then(|| nodes.parent(n));
                for n in std::iter::once(n).chain(dir) {
                    taken.add(nodes, n, bytes);
                }
            }
        }
        for (i, of) in made.drain(..) {
            recs[i] = InlineRec {
                node: recs[i].node,
                key: of,
                packed: dev(&recs[i]),
            };
            copy[i / 64] |= 1 << (i % 64);
        }
    }
    taken.apply(nodes);
    // The copies, in the records' own room, by directory: sorted from the
    // last and taken from the end, their room given back as they are
    // taken, so that the sets they make take the room the records leave.
    let mut i = 0;
    recs.retain(|_| {
        i += 1;
        copy[(i - 1) / 64] & 1 << ((i - 1) % 64) != 0
    });
    drop(copy);
    recs.shrink_to_fit();
    recs.par_sort_unstable_by_key(|r| std::cmp::Reverse((r.node, r.packed, r.key)));
    let taken = std::iter::from_fn(|| {
        let r = recs.pop()?;
        if recs.capacity() - recs.len() >= MOVED_AT_ONCE {
            recs.shrink_to_fit();
        }
        Some(CopyRec {
            of: r.key,
            node: r.node,
            dev: r.packed,
        })
    });
    let (sets, held) = copies;
    sets.hold_sorted(taken, held);
    Shared { units, unknown }
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
}

// What a Btrfs file with inline data costs while the walk runs, in every
// subvolume it is seen in; its key is once per inode.
const _: () = assert!(size_of::<InlineRec>() == 12);
const _: () = assert!(size_of::<Key>() == 48);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::{Kind, Stats};
    use crate::probe::{Probe, magic};
    use crate::records::NodeRec;

    fn registry(subvols: &[(u64, [u8; 16], [u8; 16])]) -> Registry {
        registry_made(subvols, (2000, 0))
    }

    /// [`registry`] with every subvolume made at `created`.
    fn registry_made(subvols: &[(u64, [u8; 16], [u8; 16])], created: (i64, u32)) -> Registry {
        let reg = Registry::default();
        for &(dev, uuid, parent) in subvols {
            reg.insert(
                dev,
                Probe {
                    magic: Ok(magic::BTRFS),
                    reflink: None,
                    uuid: Some(Ok([1; 16])),
                    subvol: Some(Ok(Subvol {
                        id: 256,
                        ids: (uuid, parent),
                        created,
                    })),
                    placeholder: false,
                },
            );
        }
        reg
    }

    /// A record as the tests write it: its key in full.
    #[derive(Clone, Copy)]
    struct Full {
        node: usize,
        dev: u64,
        key: Key,
        bytes: u64,
    }

    /// The records of `chunks`, their keys looked up as the walk does, and
    /// the keys by id; and the bytes the key map held.
    fn interned(chunks: &[Vec<Full>]) -> (Vec<Vec<InlineRec>>, Table, usize) {
        let keys = Keys::default();
        let recs = chunks
            .iter()
            .map(|c| {
                c.iter()
                    .map(|f| {
                        let dev = dev32(f.dev).unwrap();
                        let at = (NodeId::new(f.node), keys.id(f.key), dev, keys.dev(dev));
                        InlineRec::new(at, f.bytes, false, None, &keys)
                    })
                    .collect()
            })
            .collect();
        let bytes = keys.bytes();
        (recs, keys.table(), bytes)
    }

    /// [`share`] with the devices of `recs`.
    fn share_recs(
        recs: &[Full],
        registry: &Registry,
        extents: &Extents,
        nodes: &mut Nodes,
        links: &mut [Link],
        files: &mut (Vec<FileRec>, Vec<Held>, CopySets),
    ) -> usize {
        let mut devs: Vec<u64> = recs.iter().map(|r| r.dev).collect();
        devs.sort_unstable();
        devs.dedup();
        let (chunks, keys, _) = interned(&[recs.to_vec()]);
        share(
            (chunks, &keys),
            (&devs, None, &[]),
            registry,
            extents,
            nodes,
            links,
            (&mut files.0, (&files.2, &mut files.1)),
        )
        .units
    }

    /// How many copies `held` of `sets` are.
    fn copies(held: Vec<Held>, sets: CopySets) -> usize {
        crate::records::Copies::new(held, sets).len()
    }

    fn rec(node: usize, dev: u64) -> Full {
        Full {
            node,
            dev,
            key: Key::new((0, 0, 257), false, (900, 7), (1000, 5), 900),
            bytes: 4096,
        }
    }

    fn nodes() -> Nodes {
        let own = Stats {
            total: 4096,
            exclusive: 4096,
            reclaimable: 4096,
            ..Stats::default()
        };
        (0..3)
            .map(|id| NodeRec {
                id: NodeId::new(id),
                parent: if id == 0 { NodeId::NONE } else { NodeId::TOP },
                kind: Kind::Dir,
                own: if id == 0 { Stats::default() } else { own },
                ..NodeRec::default()
            })
            .collect::<Vec<_>>()
            .into()
    }

    /// Bytes taken from a node in one pass come to what taking each at
    /// once would: past 32 bits the sum is taken at once, never wrapped,
    /// and nothing is taken below zero.
    #[test]
    fn inline_bytes_taken_in_one_pass_are_taken_whole() {
        let big = 3_000_000_000;
        let own = |e: u64| Stats {
            total: e,
            exclusive: e,
            reclaimable: e,
            ..Stats::default()
        };
        let mut nodes: Nodes = (0..3)
            .map(|id| NodeRec {
                id: NodeId::new(id),
                parent: if id == 0 { NodeId::NONE } else { NodeId::TOP },
                kind: Kind::Dir,
                own: own(if id == 1 { 10 * big } else { 4096 }),
                ..NodeRec::default()
            })
            .collect::<Vec<_>>()
            .into();
        let mut taken = Taken(vec![0; nodes.len()]);
        let (one, two) = (NodeId::new(1), NodeId::new(2));
        for bytes in [big, big, 5, big] {
            taken.add(&mut nodes, one, bytes);
        }
        for bytes in [1000, 4000] {
            taken.add(&mut nodes, two, bytes);
        }
        taken.apply(&mut nodes);
        let left = 10 * big - 3 * big - 5;
        assert_eq!(
            nodes.own(one),
            Stats {
                total: 10 * big,
                ..own(left)
            }
        );
        assert_eq!(
            nodes.own(two),
            Stats {
                total: 4096,
                ..own(0)
            }
        );
        assert_eq!(nodes.own(NodeId::new(0)), own(4096), "untouched");
    }

    /// A key keeps its fields whole, the symlink flag beside the birth
    /// time's nanoseconds: a symlink's key is not its file's.
    #[test]
    fn a_key_packs_the_symlink_flag() {
        let file = Key::new((1, 2, 257), false, (900, 999_999_999), (1000, 5), 900);
        let link = Key::new((1, 2, 257), true, (900, 999_999_999), (1000, 5), 900);
        assert_ne!(file, link);
        assert!(link.symlink() && !file.symlink());
        assert_eq!(link.btime(), (900, 999_999_999));
        assert_eq!(file.btime(), link.btime());
        assert_eq!(link.ctime(), (1000, 5));
        let keys = Keys::default();
        let ids = [keys.id(file), keys.id(link), keys.id(file)];
        assert_eq!(ids, [0, 1, 0]);
        assert_eq!(keys.table().keys, vec![file, link]);
    }

    /// A record holds its bytes, subvolume and flags in 12 bytes; bytes
    /// past 16 bits, a subvolume past the 65,536th and a file id in an odd
    /// record beside it.
    #[test]
    fn records_keep_their_figures_in_12_bytes_or_an_odd_record() {
        let keys = Keys::default();
        let dev = dev32(10).unwrap();
        let at = (NodeId::new(3), keys.id(rec(3, 10).key), dev, keys.dev(dev));
        let plain = InlineRec::new(at, 4096, true, None, &keys);
        let most = InlineRec::new(at, 0xffff, false, None, &keys);
        let big = InlineRec::new(at, 0x10000, false, None, &keys);
        let huge = InlineRec::new(at, 5 << 32, false, None, &keys);
        let with_file = InlineRec::new(at, 700, true, Some(9), &keys);
        // The 65,535 subvolumes after the first fill the 16 bits; the
        // next is odd.
        let mut devs = Vec::new();
        for d in 11..=65_536 + 10 {
            let dev = dev32(d).unwrap();
            let at = (NodeId::new(4), at.1, dev, keys.dev(dev));
            devs.push((InlineRec::new(at, 512, false, None, &keys), d));
        }
        let table = keys.table();
        let odd = &table.odd[..];
        assert_eq!(odd.len(), 4, "only the four that do not fit");
        for (r, bytes, file, linked) in [
            (plain, 4096, None, true),
            (most, 0xffff, None, false),
            (big, 0x10000, None, false),
            (huge, 5 << 32, None, false),
            (with_file, 700, Some(9), true),
        ] {
            assert_eq!(
                (r.bytes(odd), r.file(odd), r.linked()),
                (bytes, file, linked)
            );
            assert_eq!((r.key(), r.dev(&table), r.node), (0, 10, NodeId::new(3)));
        }
        for (r, d) in devs {
            assert_eq!((r.bytes(odd), r.dev(&table)), (512, dev32(d).unwrap()));
        }
        assert_eq!((devs_odd(&table), table.devs().len()), (1, 65_537));
    }

    /// A task remembers its last record's subvolume index; a record of
    /// another device is given its own.
    #[test]
    fn a_record_of_another_device_has_its_own_index() {
        use rustix::fs::{AtFlags, CWD, StatxFlags, statx};
        let st = |p: &str| statx(CWD, p, AtFlags::empty(), StatxFlags::BASIC_STATS).unwrap();
        let (root, proc) = (st("/"), st("/proc/self/status"));
        let dev = |s: &Statx| dev32(rustix::fs::makedev(s.stx_dev_major, s.stx_dev_minor)).unwrap();
        assert_ne!(dev(&root), dev(&proc), "/proc is a filesystem of its own");
        let keys = Keys::default();
        let mut last = None;
        let recs: Vec<InlineRec> = [&root, &proc, &proc, &root]
            .into_iter()
            .map(|s| {
                let at = (NodeId::new(1), 0);
                InlineRec::of(s, at, 512, false, None, (0, &keys, &mut last)).unwrap()
            })
            .collect();
        let table = keys.table();
        let devs: Vec<u32> = recs.iter().map(|r| r.dev(&table)).collect();
        assert_eq!(devs, [dev(&root), dev(&proc), dev(&proc), dev(&root)]);
        assert_eq!(table.devs().len(), 2);
    }

    /// How many records' subvolumes are odd ones'.
    fn devs_odd(table: &Table) -> usize {
        table
            .odd
            .iter()
            .filter(|o| o.dev != dev32(10).unwrap())
            .count()
    }

    /// Equal inode number, birth and change times and size in two
    /// subvolumes that are not of one snapshot family: not shared. The same
    /// in a subvolume and its snapshot: one shared unit.
    #[test]
    fn only_a_snapshot_family_shares() {
        let (a, b) = ([0xa; 16], [0xb; 16]);
        let recs = [rec(1, 10), rec(2, 11)];
        for (parent_of_b, want) in [([0; 16], 0), (a, 1)] {
            let reg = registry(&[(10, a, [0; 16]), (11, b, parent_of_b)]);
            let ext = Extents::new();
            let mut ns = nodes();
            let mut files = (Vec::new(), Vec::new(), CopySets::default());
            let n = share_recs(&recs, &reg, &ext, &mut ns, &mut [], &mut files);
            assert_eq!(n, want);
            let excl = if want == 1 { 0 } else { 4096 };
            let excl_of = |i| ns.own(NodeId::new(i)).exclusive;
            assert_eq!((excl_of(1), excl_of(2)), (excl, excl));
            // One file stands for the inode, the other is its copy.
            let (f, held, sets) = files;
            assert_eq!((f.len(), copies(held, sets)), (want, want));
            assert_eq!(ext.ranges(), want);
        }
    }

    /// The records come in chunks, as the walk's shards keep them (each
    /// shard's last chunk part full): copies are found across chunks, and
    /// every record of every chunk is read.
    #[test]
    fn copies_in_other_chunks_are_one_unit() {
        let (a, b) = ([0xa; 16], [0xb; 16]);
        let reg = registry(&[(10, a, [0; 16]), (11, b, a)]);
        let ext = Extents::new();
        let mut files = (Vec::new(), Vec::new(), CopySets::default());
        let mut other = rec(1, 10);
        other.key.ino = 300;
        let mut full: Vec<Full> = (0..1 << CHUNK_BITS).map(|_| other).collect();
        full[7] = rec(1, 10);
        let mut last = other;
        last.dev = 11;
        let (chunks, keys, _) = interned(&[full, vec![other], vec![rec(2, 11), last]]);
        let n = share(
            (chunks, &keys),
            (&[10, 11], None, &[]),
            &reg,
            &ext,
            &mut nodes(),
            &mut [],
            (&mut files.0, (&files.2, &mut files.1)),
        );
        // Inode 257 in both subvolumes, and inode 300: 4,097 copies in one,
        // one in the other. Each unit has one file; its other records are
        // copies of it.
        assert_eq!(n.units, 2);
        assert_eq!(ext.ranges(), 2);
        let (f, held, sets) = files;
        assert_eq!(f.len(), 2);
        assert_eq!(copies(held, sets), 2 + (1 << CHUNK_BITS) + 1 - 2);
    }

    /// Inline data is keyed whenever its snapshot was made: a file changed
    /// just before is shared as one changed long before (copies of extents
    /// are not: see `unchanged::settled`).
    #[test]
    fn a_file_changed_just_before_its_snapshot_is_still_shared() {
        let (a, b) = ([0xa; 16], [0xb; 16]);
        let subvols = [(10, a, [0; 16]), (11, b, a)];
        for (created, want) in [((1000, 900_000_000), 1), ((1001, 5), 1), ((1001, 6), 1)] {
            let reg = registry_made(&subvols, created);
            let ext = Extents::new();
            let mut files = (Vec::new(), Vec::new(), CopySets::default());
            let recs = [rec(1, 10), rec(2, 11)];
            let n = share_recs(&recs, &reg, &ext, &mut nodes(), &mut [], &mut files);
            assert_eq!(
                n, want,
                "snapshot made at {created:?}, file changed at (1000, 5)"
            );
        }
    }

    /// A change since the snapshot (another change time) breaks the
    /// sharing, and so does another birth time (the inode number reused by
    /// a new inode); two copies in one subvolume (hard links) are not
    /// sharing.
    #[test]
    fn a_changed_inode_or_one_subvolume_is_not_shared() {
        let (a, b) = ([0xa; 16], [0xb; 16]);
        let reg = registry(&[(10, a, [0; 16]), (11, b, a)]);
        let mut changed = rec(2, 11);
        changed.key.ctime_nsec += 1;
        let ext = Extents::new();
        let mut files = (Vec::new(), Vec::new(), CopySets::default());
        assert_eq!(
            share_recs(
                &[rec(1, 10), changed],
                &reg,
                &ext,
                &mut nodes(),
                &mut [],
                &mut files
            ),
            0
        );
        let mut reborn = rec(2, 11);
        reborn.key.btime_sec += 1;
        assert_eq!(
            share_recs(
                &[rec(1, 10), reborn],
                &reg,
                &ext,
                &mut nodes(),
                &mut [],
                &mut files
            ),
            0
        );
        assert_eq!(
            share_recs(
                &[rec(1, 10), rec(2, 10)],
                &reg,
                &ext,
                &mut nodes(),
                &mut [],
                &mut files
            ),
            0
        );
    }

    /// What inline data costs per copy, with 20 snapshots of 2,000 small
    /// files: its record (12 bytes, sorted in place) and the copy
    /// record (12 bytes, room made once), a file record and one shared
    /// range per inode; and, once per inode, its key in the map the walk looks
    /// it up in, then in the table by id. A regression of the memory of
    /// scanning snapshots shows here, with no timing in it.
    #[test]
    fn bytes_per_snapshot_copy_stay_small() {
        let zero = [0u8; 16];
        let origin = [0xa; 16];
        let mut subvols = vec![(10, origin, zero)];
        for s in 1..=20u8 {
            subvols.push((10 + u64::from(s), [s; 16], origin));
        }
        let reg = registry(&subvols);
        let mut chunks: Vec<Vec<Full>> = Vec::new();
        for &(dev, _, _) in &subvols {
            let mut chunk = Vec::new();
            for ino in 0..2000 {
                let mut r = rec(1 + (ino % 2) as usize, dev);
                r.key.ino = 257 + ino;
                chunk.push(r);
                if chunk.len() == 1 << CHUNK_BITS {
                    chunks.push(std::mem::take(&mut chunk));
                }
            }
            chunks.push(chunk);
        }
        let (chunks, keys, map_bytes) = interned(&chunks);
        let copies: usize = chunks.iter().map(Vec::len).sum();
        let devs: Vec<u64> = subvols.iter().map(|s| s.0).collect();
        let ext = Extents::new();
        let mut files = (Vec::new(), Vec::new(), CopySets::default());
        let got = share(
            (chunks, &keys),
            (&devs, None, &[]),
            &reg,
            &ext,
            &mut nodes(),
            &mut [],
            (&mut files.0, (&files.2, &mut files.1)),
        );
        assert_eq!(got.units, 2000);
        assert_eq!(ext.ranges(), 2000, "one shared range per inode");
        assert_eq!(files.0.len(), 2000, "one file per inode");
        let (f, held, sets) = files;
        let held_bytes = held.capacity() * size_of::<Held>();
        let made = crate::records::Copies::new(held, sets);
        assert_eq!(f.len() + made.len(), copies);
        // The records' 12 bytes a copy (the copies made in their room), a
        // 32-byte file record per inode, and the copies by directory: here
        // 2 directories in each of 21 subvolumes, each holding half the
        // inodes: 14.5 (a copy took 12 bytes more as a record of its own,
        // and a record 16 bytes with its subvolume in full).
        let per_copy = (copies * size_of::<InlineRec>()
            + f.capacity() * size_of::<FileRec>()
            + held_bytes.max(made.bytes())) as f64
            / copies as f64;
        assert!(per_copy <= 15.0, "{per_copy:.1} bytes per snapshot copy");
        let per_inode = (map_bytes + keys.keys.capacity() * size_of::<Key>()) as f64 / 2000.0;
        // Its key in the map (56 bytes a bucket, the buckets at least 7/16
        // full) and then in the table (48 bytes): about 150 bytes an inode,
        // whatever the number of its copies.
        assert!(per_inode <= 200.0, "{per_inode:.1} bytes per inode");
    }
}
