//! A map shared by the walk's threads whose keys name inodes, sharded by
//! inode number: the keys of neighbouring inodes share a shard.
//!
//! The walk looks inodes up in the order a directory lists them, and the
//! files of a directory mostly have neighbouring inode numbers (they were
//! made together). In one map of every key, each lookup lands in a bucket
//! of its own, far from the last: a cache miss each time, and the largest
//! cost of the walk's own work on snapshots (docs/scale.md, "Snapshots").
//! Here the inodes of one run of [`RUN`] numbers (of one extent space)
//! take one of [`SHARDS`] small tables, so a directory's lookups find
//! their shard's buckets already in the cache. Within a shard the whole key
//! is hashed, seeded: the versions of one inode (it changes in every
//! snapshot) spread over its buckets.
//!
//! A shard is one lock around one table: a lookup takes it once, where it
//! decides and inserts alike.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use crossbeam_utils::CachePadded;

use super::Fast;

/// The inode numbers whose keys share a shard: a directory's files fall
/// in one or two runs.
const RUN: u64 = 1 << 10;

/// The shards: enough that the runs of a tree's inodes rarely share one
/// (a lineage of 100,000 inodes has 98 runs).
const SHARDS: usize = 256;

/// A key that names an inode: the extent space (filesystem and root
/// namespace) it is in and its inode number, which choose its shard.
pub(crate) trait NearKey: Eq + std::hash::Hash {
    /// Its extent space and inode number.
    fn space_ino(&self) -> (u64, u64);
}

/// One shard's table.
type Table<K, V> = HashMap<K, V, Fast>;

/// One shard: its table behind its lock, alone in its cache line.
type Shard<K, V> = CachePadded<Mutex<Table<K, V>>>;

/// The map. Each call locks one shard; shards keep to their own cache
/// lines, for the walk's two threads take neighbouring shards often.
pub(crate) struct Near<K, V> {
    shards: Box<[Shard<K, V>]>,
}

impl<K, V> Default for Near<K, V> {
    fn default() -> Self {
        Near {
            shards: (0..SHARDS)
                .map(|_| CachePadded::new(Mutex::new(HashMap::default())))
                .collect(),
        }
    }
}

impl<K, V> std::fmt::Debug for Near<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Near").finish_non_exhaustive()
    }
}

impl<K: NearKey, V> Near<K, V> {
    /// The shard of `k`, locked; `f` is given its table.
    pub(crate) fn with<R>(&self, k: &K, f: impl FnOnce(&mut Table<K, V>) -> R) -> R {
        f(&mut self.lock(shard(k)))
    }

    fn lock(&self, i: usize) -> MutexGuard<'_, Table<K, V>> {
        // A thread that panicked left a table that is whole: each call
        // changes it in one step.
        self.shards[i].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every entry, the map given up for them, in no order.
    pub(crate) fn into_entries(self) -> impl Iterator<Item = (K, V)> {
        self.shards.into_vec().into_iter().flat_map(|s| {
            CachePadded::into_inner(s)
                .into_inner()
                .unwrap_or_else(|e| e.into_inner())
        })
    }

    /// The bytes its tables hold (their buckets' capacity).
    #[cfg(test)]
    pub(crate) fn capacity_bytes(&self) -> usize {
        (0..SHARDS)
            .map(|i| self.lock(i).capacity() * size_of::<(K, V)>())
            .sum()
    }
}

/// The shard of `k`: its run of inode numbers from a first shard that
/// every bit of its extent space chooses, so that the runs of one space
/// take shards in turn and those of two spaces start apart.
fn shard<K: NearKey>(k: &K) -> usize {
    let (space, ino) = k.space_ino();
    let first = space.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56;
    ((ino / RUN).wrapping_add(first) % SHARDS as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(PartialEq, Eq, Hash, Debug, Clone, Copy)]
    struct K(u64, u64, u64);

    impl NearKey for K {
        fn space_ino(&self) -> (u64, u64) {
            (self.0, self.1)
        }
    }

    #[test]
    fn neighbouring_inodes_share_a_shard_and_runs_take_shards_in_turn() {
        assert_eq!(shard(&K(1, 2048, 0)), shard(&K(1, 2048 + 1023, 7)));
        for space in [1, 2, 7 << 32 | 3] {
            for r in 0..2 * SHARDS as u64 {
                let (a, b) = (
                    shard(&K(space, r * RUN, 0)),
                    shard(&K(space, (r + 1) * RUN, 0)),
                );
                assert_eq!(b, (a + 1) % SHARDS, "space {space}, run {r}");
            }
        }
        // Spaces apart, also where only a filesystem's bits (above 32)
        // tell them apart, as the inline keys' do.
        let firsts: std::collections::HashSet<usize> = (0..8u64)
            .flat_map(|fs| [fs << 32, fs << 32 | 1])
            .map(|space| shard(&K(space, 0, 0)))
            .collect();
        assert_eq!(firsts.len(), 16, "{firsts:?}");
    }

    #[test]
    fn entries_are_kept_by_whole_key() {
        let m: Near<K, u32> = Near::default();
        for v in 0..3000u64 {
            m.with(&K(v % 3, v / 2, v), |t| {
                t.insert(K(v % 3, v / 2, v), v as u32)
            });
        }
        assert_eq!(
            m.with(&K(1, 500, 1000), |t| t.get(&K(1, 500, 1000)).copied()),
            Some(1000)
        );
        assert_eq!(
            m.with(&K(2, 500, 1000), |t| t.get(&K(2, 500, 1000)).copied()),
            None
        );
        let mut all: Vec<u32> = m.into_entries().map(|(_, v)| v).collect();
        all.sort_unstable();
        assert_eq!(all, (0..3000).collect::<Vec<u32>>());
    }
}
