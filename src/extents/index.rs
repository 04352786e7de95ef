//! The concurrent index of shared physical ranges, filled during the walk.
//!
//! Every thread calls [`SharedIndex::insert`] for each extent flagged
//! shared. Identical physical ranges (whole-file clones, snapshots: the
//! common case) collapse into one key with the list of files that map it;
//! [`SharedIndex::into_units`] hands the ranges to the [sweep](super::sweep),
//! which resolves partial overlaps. Physical addresses are only compared
//! within one extent space (a filesystem, as seen from one root namespace).

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};

use dashmap::DashMap;
use dashmap::mapref::entry::Entry;

use super::sweep::{Interval, Sweep, Sweeper};
use crate::probe::Granularity;

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
/// further reference. Method: a counting `#[global_allocator]`, N distinct random keys
/// inserted from one thread, live heap bytes / N, release build.
/// A `Vec<u32>` per key instead would need 48-byte slots plus a heap block
/// per key.
pub(crate) struct SharedIndex {
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
    pub(crate) fn new() -> Self {
        Self {
            map: DashMap::with_hasher(BuildKeyHash),
            spill: DashMap::with_hasher(BuildKeyHash),
        }
    }

    /// Records that `file` maps `length` bytes at `physical` in extent
    /// space `fs`.
    ///
    /// Call it once per mapping: the same file mapping the same range twice
    /// counts twice. A zero `length` is ignored; a range that would run past
    /// `u64::MAX` is clamped to end there (exclusive), which only a corrupt
    /// FIEMAP reply can produce. O(1) expected; locks one shard of the map.
    pub(crate) fn insert(&self, fs: u32, physical: u64, length: u64, file: u32) {
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

    /// The references recorded for `length` bytes at `physical` in extent
    /// space `fs`, with multiplicity (0: none).
    pub(crate) fn count(&self, fs: u32, physical: u64, length: u64) -> u32 {
        let key = Key {
            physical,
            length: length.min(u64::MAX - physical),
            fs,
        };
        self.map.get(&key).map_or(0, |r| r.count)
    }

    /// The distinct `(physical, length)` ranges stored in extent space
    /// `fs`, in no order.
    pub(crate) fn ranges_in(&self, fs: u32) -> Vec<(u64, u64)> {
        self.map
            .iter()
            .filter(|e| {
                let k = *e.key();
                let f = k.fs;
                f == fs
            })
            .map(|e| {
                let k = *e.key();
                (k.physical, k.length)
            })
            .collect()
    }

    /// The number of distinct `(fs, physical, length)` ranges stored.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no range is stored.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.map.is_empty()
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
        Sweeper::sweep(ranges, &pool, granularity)
    }
}
