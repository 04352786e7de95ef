//! The shared-extent index filled during the walk, and the sweep that turns
//! it into elementary segments and reclaim units.
//!
//! During the walk every thread calls [`SharedIndex::insert`] for each extent
//! that FIEMAP flags as shared. Identical physical ranges (whole-file clones,
//! snapshots: the common case) collapse into one key with the list of files
//! that map it. After the walk, [`SharedIndex::into_units`] sorts the ranges
//! and sweeps over them, which resolves partial overlaps:
//!
//! - a **segment** is a maximal physical range mapped by one fixed multiset of
//!   (file, multiplicity); `shared` bytes are sums of segments;
//! - a **unit** is what the filesystem frees as a whole (see
//!   [`Granularity`]); `reclaimable` bytes are sums of units.
//!
//! Physical addresses are only compared within one filesystem index `fs`.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};
use std::ops::Range;

use dashmap::DashMap;
use dashmap::mapref::entry::Entry;

/// How a filesystem frees shared data, which decides what a unit is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Granularity {
    /// Sharing is exact per block and a block is freed when its last mapping
    /// goes (XFS, OCFS2): a unit is one segment.
    Block,
    /// A whole on-disk extent is flagged shared, and freed only when its last
    /// reference goes, even if each file maps only part of it (Btrfs): a unit
    /// is a maximal run of *overlapping* ranges.
    ///
    /// Ranges that merely touch (one ends where the next starts) are separate
    /// units: two adjacent Btrfs extents are freed independently. FIEMAP
    /// cannot tell them from two halves of one on-disk extent referenced
    /// by different files, and in that case (a file that still holds the
    /// other half keeps the whole extent allocated) `reclaimable` can
    /// overstate what a deletion frees; joining touching ranges would
    /// instead understate it for the common case of adjacent extents.
    Extent,
}

/// The map key: one physical range of one filesystem.
///
/// `packed(4)` makes it 20 bytes instead of 24, so that a table slot (key +
/// [`Refs`]) is 32 bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(C, packed(4))]
struct Key {
    physical: u64,
    length: u64,
    fs: u32,
}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let Self {
            physical,
            length,
            fs,
        } = *self;
        state.write_u64(physical);
        state.write_u64(length);
        state.write_u32(fs);
    }
}

/// The files mapping one key, with multiplicity: two inline, the rest
/// (rare) in [`SharedIndex`]'s spill map.
#[derive(Clone, Copy)]
struct Refs {
    first: u32,
    /// Valid when `count >= 2`.
    second: u32,
    /// Total references; those past the second are in the spill map.
    count: u32,
}

const _: () = assert!(size_of::<(Key, Refs)>() == 32);

/// Builds [`KeyHash`]ers.
#[derive(Clone, Copy, Debug, Default)]
struct BuildKeyHash;

/// A small multiply-rotate hash (FxHash's step) finished by MurmurHash3's
/// 64-bit avalanche, so that both the low bits (hashbrown's bucket) and the
/// high bits (dashmap's shard, hashbrown's tag) are well mixed.
///
/// The keys are physical addresses chosen by the filesystem, not by an
/// adversary, so SipHash's DoS resistance buys nothing here.
#[derive(Default)]
struct KeyHash(u64);

impl BuildHasher for BuildKeyHash {
    type Hasher = KeyHash;
    fn build_hasher(&self) -> KeyHash {
        KeyHash(0)
    }
}

impl Hasher for KeyHash {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u32(&mut self, x: u32) {
        self.write_u64(u64::from(x));
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

/// The concurrent index of shared physical ranges, filled by the walker's
/// threads.
///
/// Keyed by `(fs, physical, length)`; each key keeps the files that map it,
/// with multiplicity (a file that maps the same range twice, an internal
/// clone, is listed twice).
///
/// # Memory
/// A key with one or two references takes one 32-byte table slot (20-byte
/// key + 12-byte value) plus hashbrown's control byte, at most 7/8 full, in
/// tables that grow by doubling: 38 to 75 bytes per key by layout.
/// References past the second go to a separate spill map (a `Vec<u32>` per
/// such key).
///
/// Measured: **43–69 bytes per stored extent** with one or two references
/// per key (43.3 at 100,000 keys, 54.3 at 10,000, 56.6 at 917,504, 66.0 at
/// 1,048,577, 69.2 at 1,000,000 and 4,000,000: dashmap's 8 shards on this
/// 2-core machine fill and double together). A key with three references
/// costs 80–120 bytes more (spill slot and `Vec` block), plus 4 bytes per
/// further reference. Method: `examples/index_mem.rs` in the scratch crate
/// (`/work/scratch-extents`): a counting `#[global_allocator]`, N distinct
/// random keys inserted from one thread, live heap bytes / N, release build.
/// A `Vec<u32>` per key instead would need 48-byte slots plus a heap block
/// per key.
pub struct SharedIndex {
    map: DashMap<Key, Refs, BuildKeyHash>,
    /// References past the second of a key. Only touched while holding the
    /// key's entry lock in `map`, so the two maps never lock in the other
    /// order.
    spill: DashMap<Key, Vec<u32>, BuildKeyHash>,
}

impl Default for SharedIndex {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for SharedIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedIndex")
            .field("ranges", &self.len())
            .finish_non_exhaustive()
    }
}

impl SharedIndex {
    /// Creates an empty index.
    pub fn new() -> Self {
        Self {
            map: DashMap::with_hasher(BuildKeyHash),
            spill: DashMap::with_hasher(BuildKeyHash),
        }
    }

    /// Records that `file` maps `length` bytes at `physical` on filesystem
    /// `fs`.
    ///
    /// Call it once per mapping: the same file mapping the same range twice
    /// counts twice. A zero `length` is ignored; a range that would run past
    /// `u64::MAX` is clamped to end there (exclusive), which only a corrupt
    /// FIEMAP reply can produce. O(1) expected; locks one shard of the map.
    pub fn insert(&self, fs: u32, physical: u64, length: u64, file: u32) {
        let length = length.min(u64::MAX - physical);
        if length == 0 {
            return;
        }
        let key = Key {
            physical,
            length,
            fs,
        };
        match self.map.entry(key) {
            Entry::Vacant(v) => {
                v.insert(Refs {
                    first: file,
                    second: 0,
                    count: 1,
                });
            }
            Entry::Occupied(mut o) => {
                let refs = o.get_mut();
                if refs.count == 1 {
                    refs.second = file;
                } else {
                    self.spill.entry(key).or_default().push(file);
                }
                refs.count += 1;
            }
        }
    }

    /// The number of distinct `(fs, physical, length)` ranges stored.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no range is stored.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Sweeps the stored ranges into segments and units; `granularity(fs)`
    /// tells how filesystem `fs` frees shared data.
    ///
    /// # Complexity
    /// With n ranges, r references in all and an output of total size s (Σ
    /// over segments and units of their file lists): O(n log n + r log r +
    /// s) time, O(n + r + s) memory (48 bytes per range, plus 4 per
    /// reference of a range mapped more than twice, beside the output).
    /// Measured at about 200 ns per range (1–4 million disjoint ranges,
    /// release build, teardown of the map included). s is at most about r when overlaps are
    /// shallow, as they are in practice; n ranges nested inside one another
    /// make it quadratic, which is the size of the answer itself.
    pub fn into_units(self, granularity: impl Fn(u32) -> Granularity) -> Sweep {
        let mut spill: HashMap<Key, Vec<u32>, BuildKeyHash> = self.spill.into_iter().collect();
        // References of the ranges mapped more than twice.
        let mut pool: Vec<u32> = Vec::new();
        let mut ranges: Vec<Interval> = Vec::with_capacity(self.map.len());
        for (key, r) in self.map {
            let refs = if r.count <= 2 {
                [r.first, r.second]
            } else {
                let off = pool.len() as u64;
                pool.extend([r.first, r.second]);
                pool.extend(spill.remove(&key).expect("spilled references"));
                [off as u32, (off >> 32) as u32]
            };
            ranges.push(Interval {
                start: key.physical,
                end: key.physical + key.length,
                fs: key.fs,
                count: r.count,
                refs,
            });
        }
        ranges.sort_unstable_by_key(|r| (r.fs, r.start));

        let mut sweeper = Sweeper::default();
        // Usually about one segment and one unit per range; reserving spares
        // the copies of growing the output arrays.
        sweeper.out.reserve(ranges.len());
        let mut rest = &ranges[..];
        while let Some(first) = rest.first() {
            let n = rest.partition_point(|r| r.fs == first.fs);
            let (group, tail) = rest.split_at(n);
            sweeper.sweep_fs(group, &pool, granularity(first.fs));
            let end = sweeper.out.unit_count();
            sweeper.out.fs_spans.push((first.fs, end));
            rest = tail;
        }
        sweeper.out
    }
}

/// One stored range during the sweep: 32 bytes, its references inline when
/// there are at most two of them, so that the sweep reads memory in order.
struct Interval {
    start: u64,
    end: u64,
    fs: u32,
    /// The number of references.
    count: u32,
    /// The files when `count <= 2`; otherwise the offset of the `count`
    /// files in the pool, low half first.
    refs: [u32; 2],
}

const _: () = assert!(size_of::<Interval>() == 32);

impl Interval {
    /// Its references, with multiplicity.
    fn refs<'a>(&'a self, pool: &'a [u32]) -> &'a [u32] {
        let n = self.count as usize;
        if n <= 2 {
            &self.refs[..n]
        } else {
            let off = (u64::from(self.refs[1]) << 32 | u64::from(self.refs[0])) as usize;
            &pool[off..off + n]
        }
    }
}

/// The sweep's working state, reused across filesystems.
#[derive(Default)]
struct Sweeper {
    out: Sweep,
    /// The multiset of files mapping the current position, as (file, count)
    /// sorted by file. A sorted `Vec` rather than a tree: it is small (the
    /// files sharing one place), merged a whole range's references at a time,
    /// and copied out as is.
    active: Vec<(u32, u32)>,
    /// `active` as of the last emitted segment.
    last_ms: Vec<(u32, u32)>,
    /// Scratch: the references of one range, sorted and counted.
    delta: Vec<(u32, u32)>,
    /// Scratch for merging.
    merged: Vec<(u32, u32)>,
    /// Files of the current run (Extent units), with repeats.
    run_files: Vec<u32>,
}

impl Sweeper {
    /// Adds (`add`) or removes the references `r` to or from `active`.
    ///
    /// O(|active| + |r| log |r|).
    fn apply(&mut self, r: &[u32], add: bool) {
        self.delta.clear();
        self.delta.extend(r.iter().map(|&f| (f, 1)));
        self.delta.sort_unstable();
        self.delta.dedup_by(|b, a| {
            let same = a.0 == b.0;
            if same {
                a.1 += b.1;
            }
            same
        });
        self.merged.clear();
        let (mut i, mut j) = (0, 0);
        while i < self.active.len() || j < self.delta.len() {
            let x = self.active.get(i).copied();
            let d = self.delta.get(j).copied();
            match (x, d) {
                (Some(x), Some(d)) if x.0 == d.0 => {
                    let c = if add { x.1 + d.1 } else { x.1 - d.1 };
                    if c > 0 {
                        self.merged.push((x.0, c));
                    }
                    i += 1;
                    j += 1;
                }
                (Some(x), Some(d)) if x.0 < d.0 => {
                    self.merged.push(x);
                    i += 1;
                }
                (Some(x), None) => {
                    self.merged.push(x);
                    i += 1;
                }
                (_, Some(d)) => {
                    assert!(add, "removing a reference that is not active");
                    self.merged.push(d);
                    j += 1;
                }
                (None, None) => unreachable!(),
            }
        }
        std::mem::swap(&mut self.active, &mut self.merged);
    }

    /// Sweeps the ranges of one filesystem, sorted by start.
    fn sweep_fs(&mut self, group: &[Interval], pool: &[u32], g: Granularity) {
        // End events, sorted: (position, range).
        let mut ends: Vec<(u64, usize)> = group.iter().map(|r| r.end).zip(0..).collect();
        ends.sort_unstable();

        let mut si = 0; // next range to start
        let mut ei = 0; // next range to end, in `ends`
        let mut open = 0u32; // ranges covering the current position
        let mut mappings = 0u64; // Σ multiplicities in `active`
        let mut prev = 0u64; // the last event position
        let mut started_at_prev = 0u32; // ranges that started at `prev`
        // The current run of overlapping ranges: its first segment, bytes,
        // references and ranges.
        let mut run = RunState::default();
        // Where the last segment of this filesystem ended, if any.
        let mut last_end: Option<u64> = None;

        while let Some(&(next_end, _)) = ends.get(ei) {
            let p = match group.get(si) {
                Some(r) if r.start < next_end => r.start,
                _ => next_end,
            };
            if open > 0 && p > prev {
                let same_unit = g == Granularity::Block || self.out.seg_bytes.len() > run.first_seg;
                if last_end == Some(prev) && same_unit && self.active == self.last_ms {
                    // Same references as the adjacent segment before.
                    *self.out.seg_bytes.last_mut().expect("a segment") += p - prev;
                    if g == Granularity::Block {
                        let u = self.out.unit_bytes.len() - 1;
                        self.out.unit_bytes[u] += p - prev;
                        self.out.unit_ranges[u] += started_at_prev;
                    }
                } else {
                    self.out.push_segment(p - prev, &self.active, sat(mappings));
                    if g == Granularity::Block {
                        let s = self.out.seg_bytes.len() - 1;
                        let files = self.out.seg_files[s];
                        self.out
                            .push_unit(p - prev, files, sat(mappings), open, s + 1);
                    }
                    self.last_ms.clone_from(&self.active);
                }
                run.bytes += p - prev;
                last_end = Some(p);
            }
            while let Some(&(end, i)) = ends.get(ei) {
                if end != p {
                    break;
                }
                let r = group[i].refs(pool);
                self.apply(r, false);
                mappings -= r.len() as u64;
                open -= 1;
                ei += 1;
            }
            if open == 0 && g == Granularity::Extent && run.ranges > 0 {
                self.close_run(&run);
                run = RunState::default();
            }
            started_at_prev = 0;
            while si < group.len() && group[si].start == p {
                if open == 0 {
                    run = RunState {
                        first_seg: self.out.seg_bytes.len(),
                        ..RunState::default()
                    };
                    self.run_files.clear();
                }
                let r = group[si].refs(pool);
                self.apply(r, true);
                if g == Granularity::Extent {
                    self.run_files.extend(r);
                }
                mappings += r.len() as u64;
                run.mappings += r.len() as u64;
                run.ranges += 1;
                open += 1;
                started_at_prev += 1;
                si += 1;
            }
            prev = p;
        }
        debug_assert!(self.active.is_empty() && open == 0);
    }

    /// Records the run that just closed as one Extent unit.
    fn close_run(&mut self, run: &RunState) {
        let segs = self.out.seg_bytes.len();
        let files = if segs - run.first_seg == 1 {
            self.out.seg_files[run.first_seg]
        } else {
            self.run_files.sort_unstable();
            self.run_files.dedup();
            let start = self.out.pool.len();
            self.out.pool.extend(&self.run_files);
            [start, self.out.pool.len()]
        };
        self.out
            .push_unit(run.bytes, files, sat(run.mappings), sat(run.ranges), segs);
    }
}

/// The run of overlapping ranges being swept.
#[derive(Default)]
struct RunState {
    first_seg: usize,
    bytes: u64,
    mappings: u64,
    ranges: u64,
}

/// Saturates a reference count into a `u32`.
fn sat(x: u64) -> u32 {
    u32::try_from(x).unwrap_or(u32::MAX)
}

/// The result of the sweep: elementary segments and units, ordered by
/// filesystem index and physical address, in flat arrays.
///
/// # Memory
/// Per segment 28 bytes (length, mapping count, file-list bounds) plus 4 per
/// file; per unit 40 bytes plus 4 per file when it spans more than one
/// segment (a one-segment unit shares its segment's list).
#[derive(Debug, Default, Clone)]
pub struct Sweep {
    /// The file lists of segments and units, back to back.
    pool: Vec<u32>,
    seg_bytes: Vec<u64>,
    seg_mappings: Vec<u32>,
    seg_files: Vec<[usize; 2]>,
    unit_bytes: Vec<u64>,
    unit_mappings: Vec<u32>,
    unit_ranges: Vec<u32>,
    unit_files: Vec<[usize; 2]>,
    /// One past the last segment of each unit; units cover the segments in
    /// order.
    unit_seg_end: Vec<usize>,
    /// Per filesystem, in index order: its index and one past its last unit.
    fs_spans: Vec<(u32, usize)>,
}

/// An elementary segment: a maximal physical range with one fixed multiset
/// of referencing files (adjacent ranges with the same multiset are merged,
/// within a unit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment<'a> {
    /// Length in bytes.
    pub bytes: u64,
    /// The files that map it, sorted, without duplicates.
    pub files: &'a [u32],
    /// The mappings of each of its blocks: Σ over `files` of how many times
    /// the file maps the block.
    pub mappings: u32,
}

/// A unit: data the filesystem frees only as a whole (see [`Granularity`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unit<'a> {
    /// Its size in bytes: the union of its segments.
    pub bytes: u64,
    /// The files that map some of it, sorted, without duplicates.
    pub files: &'a [u32],
    /// References to it seen in the scan, with multiplicity. `Block`: the
    /// mappings of each of its blocks (as [`Segment::mappings`]). `Extent`:
    /// Σ over the stored ranges of the run of the files mapping each.
    pub mappings: u32,
    /// The number of distinct stored `(physical, length)` ranges overlapping
    /// it.
    ///
    /// On Btrfs, compressed extents are reported with their logical length
    /// from their start on disk, so consecutive compressed extents of one
    /// file overlap and form one run. `mappings > ranges` (some range mapped
    /// twice in the scan) is a stricter test than `mappings > 1` that such a
    /// run is shared inside the scan rather than with a snapshot outside it.
    pub ranges: u32,
    /// Its segments, as indices for [`Sweep::segment`].
    pub segments: Range<usize>,
}

impl Unit<'_> {
    /// Whether the scan saw a single mapping of it: it is flagged shared, so
    /// the other reference is outside the scan, and deleting what the scan
    /// saw frees nothing.
    pub fn referenced_once(&self) -> bool {
        self.mappings <= 1
    }
}

impl Sweep {
    /// Appends a segment with the files of the multiset `ms`.
    fn push_segment(&mut self, bytes: u64, ms: &[(u32, u32)], mappings: u32) {
        let start = self.pool.len();
        self.pool.extend(ms.iter().map(|&(f, _)| f));
        self.seg_files.push([start, self.pool.len()]);
        self.seg_bytes.push(bytes);
        self.seg_mappings.push(mappings);
    }

    /// Appends a unit whose files are `pool[files[0]..files[1]]` and whose
    /// last segment is `seg_end - 1`.
    fn push_unit(
        &mut self,
        bytes: u64,
        files: [usize; 2],
        mappings: u32,
        ranges: u32,
        seg_end: usize,
    ) {
        self.unit_bytes.push(bytes);
        self.unit_files.push(files);
        self.unit_mappings.push(mappings);
        self.unit_ranges.push(ranges);
        self.unit_seg_end.push(seg_end);
    }

    /// Reserves room for `n` more segments and units.
    fn reserve(&mut self, n: usize) {
        self.pool.reserve(n);
        self.seg_bytes.reserve(n);
        self.seg_mappings.reserve(n);
        self.seg_files.reserve(n);
        self.unit_bytes.reserve(n);
        self.unit_mappings.reserve(n);
        self.unit_ranges.reserve(n);
        self.unit_files.reserve(n);
        self.unit_seg_end.reserve(n);
    }

    /// The number of segments.
    pub fn segment_count(&self) -> usize {
        self.seg_bytes.len()
    }

    /// The units of each filesystem: its index and the range of unit
    /// indices (for [`Sweep::unit`]) swept from its ranges.
    pub fn fs_units(&self) -> impl Iterator<Item = (u32, Range<usize>)> + '_ {
        self.fs_spans.iter().enumerate().map(|(i, &(fs, end))| {
            let start = if i == 0 { 0 } else { self.fs_spans[i - 1].1 };
            (fs, start..end)
        })
    }

    /// The number of units.
    pub fn unit_count(&self) -> usize {
        self.unit_bytes.len()
    }

    /// Segment `i` (panics if `i >= segment_count()`).
    pub fn segment(&self, i: usize) -> Segment<'_> {
        let [a, b] = self.seg_files[i];
        Segment {
            bytes: self.seg_bytes[i],
            files: &self.pool[a..b],
            mappings: self.seg_mappings[i],
        }
    }

    /// Unit `i` (panics if `i >= unit_count()`).
    pub fn unit(&self, i: usize) -> Unit<'_> {
        let [a, b] = self.unit_files[i];
        let first = if i == 0 { 0 } else { self.unit_seg_end[i - 1] };
        Unit {
            bytes: self.unit_bytes[i],
            files: &self.pool[a..b],
            mappings: self.unit_mappings[i],
            ranges: self.unit_ranges[i],
            segments: first..self.unit_seg_end[i],
        }
    }

    /// The segments, by filesystem index and physical address.
    pub fn segments(&self) -> impl ExactSizeIterator<Item = Segment<'_>> + '_ {
        (0..self.segment_count()).map(|i| self.segment(i))
    }

    /// The units, by filesystem index and physical address.
    pub fn units(&self) -> impl ExactSizeIterator<Item = Unit<'_>> + '_ {
        (0..self.unit_count()).map(|i| self.unit(i))
    }

    /// The size of the union of all indexed ranges, in bytes.
    pub fn bytes(&self) -> u64 {
        self.seg_bytes
            .iter()
            .fold(0u64, |a, &b| a.saturating_add(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    const K: u64 = 4096;

    /// Segments as plain tuples: (bytes, files, mappings).
    fn segs(s: &Sweep) -> Vec<(u64, Vec<u32>, u32)> {
        s.segments()
            .map(|g| (g.bytes, g.files.to_vec(), g.mappings))
            .collect()
    }

    /// Units as plain tuples: (bytes, files, mappings, ranges, segments).
    fn units(s: &Sweep) -> Vec<(u64, Vec<u32>, u32, u32, usize)> {
        s.units()
            .map(|u| {
                (
                    u.bytes,
                    u.files.to_vec(),
                    u.mappings,
                    u.ranges,
                    u.segments.len(),
                )
            })
            .collect()
    }

    /// Builds an index from `(fs, physical, length, file)` and sweeps it.
    fn sweep(refs: &[(u32, u64, u64, u32)], g: Granularity) -> Sweep {
        let idx = SharedIndex::new();
        for &(fs, p, l, f) in refs {
            idx.insert(fs, p, l, f);
        }
        idx.into_units(|_| g)
    }

    const BOTH: [Granularity; 2] = [Granularity::Block, Granularity::Extent];

    #[test]
    fn whole_file_clone_is_one_segment_one_unit() {
        for g in BOTH {
            let s = sweep(&[(0, 100 * K, 8 * K, 1), (0, 100 * K, 8 * K, 2)], g);
            assert_eq!(segs(&s), [(8 * K, vec![1, 2], 2)]);
            assert_eq!(units(&s), [(8 * K, vec![1, 2], 2, 1, 1)]);
            assert!(!s.unit(0).referenced_once());
        }
    }

    #[test]
    fn partial_overlap_is_not_double_counted() {
        let refs = [(0, 0, 8 * K, 1), (0, 4 * K, 8 * K, 2)];
        let want = [
            (4 * K, vec![1], 1),
            (4 * K, vec![1, 2], 2),
            (4 * K, vec![2], 1),
        ];
        let s = sweep(&refs, Granularity::Block);
        assert_eq!(segs(&s), want);
        assert_eq!(s.bytes(), 12 * K);
        assert_eq!(
            units(&s),
            [
                (4 * K, vec![1], 1, 1, 1),
                (4 * K, vec![1, 2], 2, 2, 1),
                (4 * K, vec![2], 1, 1, 1)
            ]
        );
        let s = sweep(&refs, Granularity::Extent);
        assert_eq!(segs(&s), want);
        assert_eq!(units(&s), [(12 * K, vec![1, 2], 2, 2, 3)]);
    }

    #[test]
    fn clone_of_clone() {
        // 2 = clone(1), 3 = clone(2) with its second half rewritten since.
        let refs = [(0, 0, 8 * K, 2), (0, 0, 8 * K, 1), (0, 0, 4 * K, 3)];
        let want = [(4 * K, vec![1, 2, 3], 3), (4 * K, vec![1, 2], 2)];
        let s = sweep(&refs, Granularity::Block);
        assert_eq!(segs(&s), want);
        assert_eq!(
            units(&s),
            [
                (4 * K, vec![1, 2, 3], 3, 2, 1),
                (4 * K, vec![1, 2], 2, 1, 1)
            ]
        );
        let s = sweep(&refs, Granularity::Extent);
        assert_eq!(segs(&s), want);
        assert_eq!(units(&s), [(8 * K, vec![1, 2, 3], 3, 2, 2)]);
    }

    #[test]
    fn internal_clone_keeps_multiplicity() {
        // File 7 maps the same range twice (and a third time, spilled).
        for g in BOTH {
            let s = sweep(&[(0, 0, K, 7), (0, 0, K, 7)], g);
            assert_eq!(segs(&s), [(K, vec![7], 2)]);
            assert_eq!(units(&s), [(K, vec![7], 2, 1, 1)]);
            assert!(!s.unit(0).referenced_once());
            let s = sweep(&[(0, 0, K, 7), (0, 0, K, 7), (0, 0, K, 7), (0, 0, K, 2)], g);
            assert_eq!(segs(&s), [(K, vec![2, 7], 4)]);
        }
    }

    #[test]
    fn adjacent_extents_are_separate_btrfs_units() {
        let refs = [
            (0, 0, 4 * K, 1),
            (0, 0, 4 * K, 2),
            (0, 4 * K, 4 * K, 1),
            (0, 4 * K, 4 * K, 2),
        ];
        // XFS: the same references per block, one segment, one unit.
        let s = sweep(&refs, Granularity::Block);
        assert_eq!(units(&s), [(8 * K, vec![1, 2], 2, 2, 1)]);
        // Btrfs: two extents, freed independently.
        let s = sweep(&refs, Granularity::Extent);
        assert_eq!(segs(&s), [(4 * K, vec![1, 2], 2), (4 * K, vec![1, 2], 2)]);
        assert_eq!(
            units(&s),
            [(4 * K, vec![1, 2], 2, 1, 1), (4 * K, vec![1, 2], 2, 1, 1)]
        );
    }

    #[test]
    fn single_mapping_is_shared_outside_the_scan() {
        let s = sweep(&[(0, 0, K, 1)], Granularity::Extent);
        assert!(s.unit(0).referenced_once());
    }

    #[test]
    fn btrfs_compressed_extents_overlap_into_one_run() {
        // As FIEMAP reports a 512 KiB compressed file on Btrfs: 128 KiB
        // logical extents starting 4 KiB apart on disk.
        let refs: Vec<_> = (0..4).map(|i| (0, i * K, 32 * K, 1)).collect();
        let s = sweep(&refs, Granularity::Extent);
        let u = s.unit(0);
        assert_eq!(
            (s.unit_count(), u.bytes, u.mappings, u.ranges),
            (1, 35 * K, 4, 4)
        );
        assert!(!u.referenced_once() && u.mappings == u.ranges);
    }

    #[test]
    fn filesystems_do_not_mix() {
        let s = sweep(&[(1, 0, K, 1), (0, 0, K, 2)], Granularity::Extent);
        assert_eq!(segs(&s), [(K, vec![2], 1), (K, vec![1], 1)]);
        let idx = SharedIndex::new();
        idx.insert(0, 0, K, 1);
        idx.insert(1, 0, K, 1);
        let s = idx.into_units(|fs| {
            if fs == 0 {
                Granularity::Block
            } else {
                Granularity::Extent
            }
        });
        assert_eq!(s.unit_count(), 2);
    }

    #[test]
    fn zero_length_ignored_and_wrap_clamped() {
        let idx = SharedIndex::new();
        idx.insert(0, 5, 0, 1);
        idx.insert(0, u64::MAX, 10, 1);
        assert!(idx.is_empty());
        idx.insert(0, u64::MAX - 10, 100, 1);
        idx.insert(0, u64::MAX - 10, 10, 2);
        assert_eq!(idx.len(), 1);
        let s = idx.into_units(|_| Granularity::Block);
        assert_eq!(segs(&s), [(10, vec![1, 2], 2)]);
        assert!(
            SharedIndex::new()
                .into_units(|_| Granularity::Block)
                .units()
                .next()
                .is_none()
        );
    }

    #[test]
    fn concurrent_inserts_keep_every_reference() {
        let idx = SharedIndex::new();
        std::thread::scope(|s| {
            for t in 0..4u32 {
                let idx = &idx;
                s.spawn(move || {
                    for i in 0..1000u64 {
                        idx.insert(0, i * K, K, t);
                        idx.insert(0, i * K, K, t);
                    }
                });
            }
        });
        assert_eq!(idx.len(), 1000);
        let s = idx.into_units(|_| Granularity::Block);
        // All 1000 ranges carry the same multiset: one merged segment.
        assert_eq!(segs(&s), [(1000 * K, vec![0, 1, 2, 3], 8)]);
    }

    /// The naive model: per block, the multiset of files mapping it.
    struct Naive {
        /// Per filesystem: distinct (start, end) in blocks → files with
        /// multiplicity.
        keys: BTreeMap<u32, BTreeMap<(u64, u64), Vec<u32>>>,
    }

    type Ms = BTreeMap<u32, u32>;

    impl Naive {
        fn new(refs: &[(u32, u64, u64, u32)]) -> Self {
            let mut keys: BTreeMap<u32, BTreeMap<(u64, u64), Vec<u32>>> = BTreeMap::new();
            for &(fs, p, l, f) in refs {
                if l > 0 {
                    keys.entry(fs)
                        .or_default()
                        .entry((p, p + l))
                        .or_default()
                        .push(f);
                }
            }
            Self { keys }
        }

        fn block_ms(keys: &BTreeMap<(u64, u64), Vec<u32>>, b: u64) -> Ms {
            let mut ms = Ms::new();
            for (&(s, e), files) in keys {
                if s <= b && b < e {
                    for &f in files {
                        *ms.entry(f).or_default() += 1;
                    }
                }
            }
            ms
        }

        /// Maximal runs of blocks in `blocks` with one nonempty multiset:
        /// (start, end, multiset).
        fn runs(keys: &BTreeMap<(u64, u64), Vec<u32>>, blocks: Range<u64>) -> Vec<(u64, u64, Ms)> {
            let mut out: Vec<(u64, u64, Ms)> = Vec::new();
            for b in blocks {
                let ms = Self::block_ms(keys, b);
                if ms.is_empty() {
                    continue;
                }
                match out.last_mut() {
                    Some((_, e, m)) if *e == b && *m == ms => *e += 1,
                    _ => out.push((b, b + 1, ms)),
                }
            }
            out
        }

        fn seg(s: u64, e: u64, ms: &Ms) -> (u64, Vec<u32>, u32) {
            ((e - s) * K, ms.keys().copied().collect(), ms.values().sum())
        }

        fn overlapping(keys: &BTreeMap<(u64, u64), Vec<u32>>, s: u64, e: u64) -> u32 {
            keys.keys().filter(|&&(a, b)| a < e && s < b).count() as u32
        }

        /// Expected (segments, units) for one granularity.
        #[allow(clippy::type_complexity)]
        fn expect(
            &self,
            g: Granularity,
        ) -> (
            Vec<(u64, Vec<u32>, u32)>,
            Vec<(u64, Vec<u32>, u32, u32, usize)>,
        ) {
            let (mut segs, mut units) = (Vec::new(), Vec::new());
            for keys in self.keys.values() {
                match g {
                    Granularity::Block => {
                        for (s, e, ms) in Self::runs(keys, 0..MAX_BLOCK) {
                            let seg = Self::seg(s, e, &ms);
                            units.push((
                                seg.0,
                                seg.1.clone(),
                                seg.2,
                                Self::overlapping(keys, s, e),
                                1,
                            ));
                            segs.push(seg);
                        }
                    }
                    Granularity::Extent => {
                        // Connected components under strict overlap, by a
                        // fixpoint over the spans.
                        let mut comps: Vec<(u64, u64)> = Vec::new();
                        for &(s, e) in keys.keys() {
                            let (mut s, mut e) = (s, e);
                            loop {
                                let before = comps.len();
                                comps.retain(|&(a, b)| {
                                    if a < e && s < b {
                                        s = s.min(a);
                                        e = e.max(b);
                                        false
                                    } else {
                                        true
                                    }
                                });
                                if comps.len() == before {
                                    break;
                                }
                            }
                            comps.push((s, e));
                        }
                        comps.sort();
                        for (s, e) in comps {
                            let runs = Self::runs(keys, s..e);
                            let in_comp = keys.iter().filter(|((a, b), _)| s <= *a && *b <= e);
                            let mut files: Vec<u32> =
                                in_comp.clone().flat_map(|(_, f)| f.clone()).collect();
                            let mappings = files.len() as u32;
                            files.sort_unstable();
                            files.dedup();
                            units.push((
                                (e - s) * K,
                                files,
                                mappings,
                                in_comp.count() as u32,
                                runs.len(),
                            ));
                            segs.extend(runs.iter().map(|(a, b, ms)| Self::seg(*a, *b, ms)));
                        }
                    }
                }
            }
            (segs, units)
        }

        /// Per filesystem and block, the set of files mapping it as a mask.
        fn block_masks(&self) -> Vec<u32> {
            let mut out = Vec::new();
            for keys in self.keys.values() {
                for b in 0..MAX_BLOCK {
                    out.push(Self::block_ms(keys, b).keys().fold(0, |m, f| m | 1 << f));
                }
            }
            out
        }
    }

    const MAX_BLOCK: u64 = 240;

    /// Random references: (fs 0..2, start 0..200, length 0..40 blocks, file
    /// 0..6), plus exact duplicates of some of them.
    fn refs_strategy() -> impl Strategy<Value = Vec<(u32, u64, u64, u32)>> {
        (
            prop::collection::vec((0u32..2, 0u64..200, 0u64..40, 0u32..6), 0..40),
            prop::collection::vec(any::<prop::sample::Index>(), 0..10),
        )
            .prop_map(|(mut v, dups)| {
                if !v.is_empty() {
                    for d in dups {
                        v.push(v[d.index(v.len())]);
                    }
                }
                v
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn sweep_matches_naive_model(refs in refs_strategy()) {
            let naive = Naive::new(&refs);
            let masks = naive.block_masks();
            let scaled: Vec<_> = refs.iter().map(|&(fs, p, l, f)| (fs, p * K, l * K, f)).collect();
            for g in BOTH {
                let s = sweep(&scaled, g);
                let (want_segs, want_units) = naive.expect(g);
                prop_assert_eq!(segs(&s), want_segs, "{:?}", g);
                prop_assert_eq!(units(&s), want_units, "{:?}", g);
                // Units partition the segments, in order.
                let mut next = 0;
                for u in s.units() {
                    prop_assert_eq!(u.segments.start, next);
                    prop_assert_eq!(u.bytes, s.segments().skip(next).take(u.segments.len()).map(|g| g.bytes).sum::<u64>());
                    next = u.segments.end;
                }
                prop_assert_eq!(next, s.segment_count());
                // Shared bytes of any set of files = the union of what they map.
                for mask in 0u32..64 {
                    let got: u64 = s
                        .segments()
                        .filter(|g| g.files.iter().any(|f| mask & (1 << f) != 0))
                        .map(|g| g.bytes)
                        .sum();
                    let want = masks.iter().filter(|&&m| m & mask != 0).count() as u64 * K;
                    prop_assert_eq!(got, want, "{:?} mask {:#b}", g, mask);
                }
            }
        }
    }
}
