//! The index of shared physical ranges, filled during the walk.
//!
//! Every thread calls [`SharedIndex::insert`] for each extent flagged
//! shared: the mapping is appended to an arena of the thread's own (a lock
//! nobody else takes), 16 bytes a mapping. After the walk the arenas are
//! sorted together: identical physical ranges (whole-file clones,
//! snapshots: the common case) fall next to each other, one range with the
//! files that map it, and [`SharedIndex::into_units`] hands the ranges to
//! the [sweep](super::sweep), which resolves partial overlaps. Physical
//! addresses are only compared within one extent space (a filesystem, as
//! seen from one root namespace).
//!
//! A map keyed by range (the form before this one) cost 43–69 bytes per
//! range, and 80–120 more for a range mapped by more than two files (a
//! backup repository's blocks are mapped by every synthetic full): 66
//! bytes per mapping on `scripts/bench-repo`'s repository. An arena
//! appended to costs what the mappings are, and its sort, once, is cheaper
//! than the hashing and locking of every insert.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crossbeam_utils::CachePadded;

use super::sweep::{Interval, Sweep, Sweeper};
use crate::probe::Granularity;

/// One mapping of a range that is a whole number of 512-byte sectors
/// (every shared extent of XFS and Btrfs): 16 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Rec {
    physical: u64,
    sectors: u32,
    file: u32,
}

const _: () = assert!(size_of::<Rec>() == 16);

/// A mapping no [`Rec`] can hold (not in whole sectors, or 2 TiB or more).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Odd {
    physical: u64,
    length: u64,
    file: u32,
}

const SECTOR: u64 = 512;

/// One thread's mappings, by extent space.
#[derive(Debug, Default)]
struct Arena {
    /// (extent space, its mappings); a scan meets few spaces.
    recs: Vec<(u32, Vec<Rec>)>,
    odd: Vec<(u32, Vec<Odd>)>,
}

/// The mappings of one extent space, sorted: each range's files next to
/// each other, in file order.
#[derive(Debug, Default)]
struct Space {
    fs: u32,
    recs: Vec<Rec>,
    odd: Vec<Odd>,
    /// Distinct ranges.
    ranges: usize,
}

impl Space {
    /// The ranges in order: (physical, length, the mappings' files).
    fn groups(&self) -> impl Iterator<Item = (u64, u64, Vec<u32>)> + '_ {
        let recs = self
            .recs
            .chunk_by(|a, b| (a.physical, a.sectors) == (b.physical, b.sectors));
        let recs = recs.map(|g| {
            let files = g.iter().map(|r| r.file).collect();
            (g[0].physical, u64::from(g[0].sectors) * SECTOR, files)
        });
        let odd = self
            .odd
            .chunk_by(|a, b| (a.physical, a.length) == (b.physical, b.length));
        let odd = odd.map(|g| {
            (
                g[0].physical,
                g[0].length,
                g.iter().map(|r| r.file).collect(),
            )
        });
        recs.chain(odd)
    }
}

/// The index of extent space `fs` in `spaces`, added if missing.
fn space_of(spaces: &mut Vec<Space>, fs: u32) -> usize {
    match spaces.iter().position(|s| s.fs == fs) {
        Some(i) => i,
        None => {
            spaces.push(Space {
                fs,
                ..Space::default()
            });
            spaces.len() - 1
        }
    }
}

/// Moves the mappings of the arenas `shards` into `spaces`, and sorts
/// the spaces that got some.
fn merge(shards: &[CachePadded<Mutex<Arena>>], spaces: &mut Vec<Space>) {
    let taken: Vec<Arena> = shards
        .iter()
        .map(|s| std::mem::take(&mut *s.lock().unwrap_or_else(|e| e.into_inner())))
        .collect();
    let mut grown: Vec<u32> = Vec::new();
    for a in taken {
        for (fs, v) in a.recs {
            let i = space_of(spaces, fs);
            grown.push(fs);
            let dst = &mut spaces[i].recs;
            if dst.is_empty() {
                *dst = v;
            } else {
                dst.extend_from_slice(&v);
            }
        }
        for (fs, v) in a.odd {
            let i = space_of(spaces, fs);
            grown.push(fs);
            spaces[i].odd.extend_from_slice(&v);
        }
    }
    for s in spaces.iter_mut().filter(|s| grown.contains(&s.fs)) {
        s.recs.sort_unstable();
        s.odd.sort_unstable();
        s.recs.shrink_to_fit();
        s.ranges = s
            .recs
            .chunk_by(|a, b| (a.physical, a.sectors) == (b.physical, b.sectors))
            .count()
            + s.odd
                .chunk_by(|a, b| (a.physical, a.length) == (b.physical, b.length))
                .count();
    }
    spaces.sort_unstable_by_key(|s| s.fs);
}

/// Arenas, one per worker thread (by rayon's index; past the last, shared).
const SHARDS: usize = 64;

/// The index of shared physical ranges, filled by the walker's threads.
///
/// Keyed by `(fs, physical, length)`; each key keeps the files that map it,
/// with multiplicity (a file that maps the same range twice, an internal
/// clone, is listed twice).
///
/// # Memory
/// 16 bytes per mapping while the walk runs (a range in whole 512-byte
/// sectors under 2 TiB; 24 otherwise), in vectors that grow by doubling.
/// After the walk, sorted in place; the sweep then takes 32 bytes per
/// distinct range, and 4 per reference of a range mapped more than twice,
/// while the mappings are still held.
pub(crate) struct SharedIndex {
    shards: Vec<CachePadded<Mutex<Arena>>>,
    /// The arenas merged and sorted, on the first question after the walk
    /// (and again after a later insert: the holders found outside the
    /// scan, [`super::outside`]).
    done: Mutex<Vec<Space>>,
    /// Some question was asked: an insert then sets `late`.
    asked: AtomicBool,
    /// Mappings were inserted since the last merge.
    late: AtomicBool,
}

impl Default for SharedIndex {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for SharedIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedIndex").finish_non_exhaustive()
    }
}

impl SharedIndex {
    /// Creates an empty index.
    pub(crate) fn new() -> Self {
        Self {
            shards: (0..SHARDS)
                .map(|_| CachePadded::new(Mutex::new(Arena::default())))
                .collect(),
            done: Mutex::new(Vec::new()),
            asked: AtomicBool::new(false),
            late: AtomicBool::new(false),
        }
    }

    /// Records that `file` maps `length` bytes at `physical` in extent
    /// space `fs`.
    ///
    /// Call it once per mapping: the same file mapping the same range twice
    /// counts twice. A zero `length` is ignored; a range that would run past
    /// `u64::MAX` is clamped to end there (exclusive), which only a corrupt
    /// FIEMAP reply can produce. O(1) amortized; locks the calling thread's
    /// own arena. Inserts and questions never run at the same time: the
    /// walk inserts, then the stages after it ask, and insert again only
    /// between questions.
    pub(crate) fn insert(&self, fs: u32, physical: u64, length: u64, file: u32) {
        if self.asked.load(Ordering::Relaxed) {
            self.late.store(true, Ordering::Relaxed);
        }
        let length = length.min(u64::MAX - physical);
        if length == 0 {
            return;
        }
        let shard = rayon::current_thread_index().unwrap_or(0) % SHARDS;
        let mut a = self.shards[shard].lock().unwrap_or_else(|e| e.into_inner());
        let sectors = u32::try_from(length / SECTOR).ok();
        match sectors.filter(|_| length % SECTOR == 0) {
            Some(sectors) => {
                let v = match a.recs.iter().position(|x| x.0 == fs) {
                    Some(i) => &mut a.recs[i].1,
                    None => {
                        a.recs.push((fs, Vec::new()));
                        &mut a.recs.last_mut().expect("pushed").1
                    }
                };
                v.push(Rec {
                    physical,
                    sectors,
                    file,
                });
            }
            None => {
                let v = match a.odd.iter().position(|x| x.0 == fs) {
                    Some(i) => &mut a.odd[i].1,
                    None => {
                        a.odd.push((fs, Vec::new()));
                        &mut a.odd.last_mut().expect("pushed").1
                    }
                };
                v.push(Odd {
                    physical,
                    length,
                    file,
                });
            }
        }
    }

    /// `f` of the mappings merged by extent space and sorted: the arenas
    /// are merged on the first question, and again after a later insert.
    fn with_spaces<R>(&self, f: impl FnOnce(&[Space]) -> R) -> R {
        let mut spaces = self.done.lock().unwrap_or_else(|e| e.into_inner());
        let first = !self.asked.swap(true, Ordering::Relaxed);
        if first || self.late.swap(false, Ordering::Relaxed) {
            merge(&self.shards, &mut spaces);
        }
        f(&spaces)
    }

    /// The references recorded for `length` bytes at `physical` in extent
    /// space `fs`, with multiplicity (0: none).
    pub(crate) fn count(&self, fs: u32, physical: u64, length: u64) -> u32 {
        let length = length.min(u64::MAX - physical);
        self.with_spaces(|spaces| {
            let Some(s) = spaces.iter().find(|s| s.fs == fs) else {
                return 0;
            };
            let n = match u32::try_from(length / SECTOR)
                .ok()
                .filter(|_| length % SECTOR == 0)
            {
                Some(sectors) => {
                    let key = (physical, sectors);
                    let lo = s.recs.partition_point(|r| (r.physical, r.sectors) < key);
                    let hi = s.recs.partition_point(|r| (r.physical, r.sectors) <= key);
                    hi - lo
                }
                None => {
                    let key = (physical, length);
                    let lo = s.odd.partition_point(|r| (r.physical, r.length) < key);
                    let hi = s.odd.partition_point(|r| (r.physical, r.length) <= key);
                    hi - lo
                }
            };
            u32::try_from(n).unwrap_or(u32::MAX)
        })
    }

    /// The distinct `(physical, length)` ranges stored in extent space
    /// `fs`, in order.
    pub(crate) fn ranges_in(&self, fs: u32) -> Vec<(u64, u64)> {
        self.with_spaces(|spaces| {
            spaces
                .iter()
                .filter(|s| s.fs == fs)
                .flat_map(|s| s.groups().map(|(p, l, _)| (p, l)))
                .collect()
        })
    }

    /// The number of distinct `(fs, physical, length)` ranges stored.
    pub(crate) fn len(&self) -> usize {
        self.with_spaces(|spaces| spaces.iter().map(|s| s.ranges).sum())
    }

    /// Whether no range is stored.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The heap bytes the mappings take (the vectors' capacities).
    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        let arena = |a: &Arena| {
            a.recs
                .iter()
                .map(|v| v.1.capacity() * size_of::<Rec>())
                .chain(a.odd.iter().map(|v| v.1.capacity() * size_of::<Odd>()))
                .sum::<usize>()
        };
        let spaces: usize = self
            .done
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|s| s.recs.capacity() * size_of::<Rec>() + s.odd.capacity() * size_of::<Odd>())
            .sum();
        self.shards
            .iter()
            .map(|s| arena(&s.lock().unwrap_or_else(|e| e.into_inner())))
            .sum::<usize>()
            + spaces
    }

    /// Sweeps the stored ranges into segments and units; `granularity(fs)`
    /// tells how the filesystem of extent space `fs` frees shared data.
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
    pub(crate) fn into_units(self, granularity: impl Fn(u32) -> Granularity) -> Sweep {
        self.with_spaces(|_| ());
        let spaces = self.done.into_inner().unwrap_or_else(|e| e.into_inner());
        // References of the ranges mapped more than twice.
        let mut pool: Vec<u32> = Vec::new();
        let mut ranges: Vec<Interval> = Vec::with_capacity(spaces.iter().map(|s| s.ranges).sum());
        for s in spaces {
            for (physical, length, files) in s.groups() {
                let count = u32::try_from(files.len()).unwrap_or(u32::MAX);
                let refs = if files.len() <= 2 {
                    [files[0], files.get(1).copied().unwrap_or(0)]
                } else {
                    let off = pool.len() as u64;
                    pool.extend_from_slice(&files);
                    [off as u32, (off >> 32) as u32]
                };
                ranges.push(Interval {
                    start: physical,
                    end: physical + length,
                    fs: s.fs,
                    count,
                    refs,
                });
            }
            // The space's mappings go before the next one's ranges are made.
            drop(s);
        }
        Sweeper::sweep(ranges, &pool, granularity)
    }
}
