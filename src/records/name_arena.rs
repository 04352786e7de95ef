//! The names of a scan's nodes, each distinct name kept once
//! ([`NameTable`]): a node holds a `u32` reference to its name.
//!
//! Names repeat. Every snapshot of a subvolume and every copy of a backup
//! repeats its origin's names, and within one tree `Makefile`, `index.html`
//! and `__init__.py` come back in directory after directory: a /usr copy's
//! 133,272 names are 71,737 distinct ones, 1.79 MB of 2.76. A name kept
//! once costs its bytes and 4 bytes beside them (where it ends), and each
//! node 4 bytes for its reference, where a node holding its own name's
//! bytes cost them and 1.25 bytes beside them: less memory wherever names
//! come back (a /usr copy, and more so its copies and snapshots), 6.75
//! bytes more a node in a tree where no name ever does. While names are
//! added, a hash table (5 bytes a bucket, up to twice as many buckets as
//! distinct names) finds the one already kept; it is dropped once the
//! scan's nodes are gathered, and made again if more are added.

use hashbrown::HashTable;
use std::hash::{BuildHasher, RandomState};

/// Names pushed one after another: their bytes, and where each ends.
#[derive(Clone, Debug)]
struct Names {
    bytes: Vec<u8>,
    /// Name `i` ends where name `i + 1` starts: at `ends[i + 1]`, modulo
    /// 2^32 (`ends[0]` is 0).
    ends: Vec<u32>,
    /// For each further 4 GiB of bytes, the first index of `ends` past it.
    wraps: Vec<u32>,
}

impl Default for Names {
    fn default() -> Names {
        Names {
            bytes: Vec::new(),
            ends: vec![0],
            wraps: Vec::new(),
        }
    }
}

impl Names {
    fn count(&self) -> usize {
        self.ends.len() - 1
    }

    /// Appends `name`.
    fn push(&mut self, name: &[u8]) {
        self.bytes.extend_from_slice(name);
        let end = self.bytes.len();
        while end >> 32 > self.wraps.len() {
            self.wraps.push(self.ends.len() as u32);
        }
        self.ends.push(end as u32);
    }

    /// Index `i` of `ends`, whole.
    #[inline]
    fn end(&self, i: usize) -> usize {
        let low = self.ends[i] as usize;
        if self.wraps.is_empty() {
            low
        } else {
            self.wraps.partition_point(|&w| w as usize <= i) << 32 | low
        }
    }

    /// Name `i`.
    #[inline]
    fn get(&self, i: usize) -> &[u8] {
        &self.bytes[self.end(i)..self.end(i + 1)]
    }

    fn shrink_to_fit(&mut self) {
        self.bytes.shrink_to_fit();
        self.ends.shrink_to_fit();
        self.wraps.shrink_to_fit();
    }

    #[cfg(test)]
    fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + (self.ends.capacity() + self.wraps.capacity()) * 4
    }
}

/// The distinct names of a scan, each with its reference (its index);
/// reference [`NameTable::EMPTY`] is the empty name, a default record's.
#[derive(Clone, Debug)]
pub(super) struct NameTable {
    names: Names,
    /// The references by their names' hashes; empty once dropped
    /// ([`NameTable::shrink_to_fit`]) until a name is added again.
    index: HashTable<u32>,
    /// Names come from whoever made the files: SipHash with a key of the
    /// process's own, so that no one can choose names that all collide.
    hasher: RandomState,
}

impl Default for NameTable {
    fn default() -> NameTable {
        let mut t = NameTable {
            names: Names::default(),
            index: HashTable::new(),
            hasher: RandomState::new(),
        };
        t.intern(b"");
        t
    }
}

impl NameTable {
    /// The empty name's reference.
    pub(super) const EMPTY: u32 = 0;

    /// The reference of `name`, kept if new.
    pub(super) fn intern(&mut self, name: &[u8]) -> u32 {
        let Self {
            names,
            index,
            hasher,
        } = self;
        if index.is_empty() && names.count() > 0 {
            // Dropped once the nodes were gathered: made again.
            index.reserve(names.count(), |&i| hasher.hash_one(names.get(i as usize)));
            for i in 0..names.count() {
                let h = hasher.hash_one(names.get(i));
                index.insert_unique(h, i as u32, |&j| hasher.hash_one(names.get(j as usize)));
            }
        }
        let h = hasher.hash_one(name);
        if let Some(&i) = index.find(h, |&i| names.get(i as usize) == name) {
            return i;
        }
        let i = u32::try_from(names.count()).expect("fewer than 2^32 distinct names");
        names.push(name);
        index.insert_unique(h, i, |&j| hasher.hash_one(names.get(j as usize)));
        i
    }

    /// The name of reference `r`.
    pub(super) fn get(&self, r: u32) -> &[u8] {
        self.names.get(r as usize)
    }

    /// Drops the hash table and gives back the spare room: the names stay.
    pub(super) fn shrink_to_fit(&mut self) {
        self.index = HashTable::new();
        self.names.shrink_to_fit();
    }

    #[cfg(test)]
    pub(super) fn heap_bytes(&self) -> usize {
        self.names.heap_bytes() + self.index.allocation_size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_any_length_are_kept_once_and_come_back() {
        let mut t = NameTable::default();
        let long = vec![b'x'; 300];
        let max = vec![b'y'; 255];
        let names = [b"a".to_vec(), vec![], long.clone(), max, b"a".to_vec()];
        let refs: Vec<u32> = names.iter().map(|n| t.intern(n)).collect();
        assert_eq!(refs, [1, NameTable::EMPTY, 2, 3, 1]);
        for (n, &r) in names.iter().zip(&refs) {
            assert_eq!(t.get(r), &n[..]);
        }
        // The table dropped, then made again as names are added.
        t.shrink_to_fit();
        assert_eq!(t.index.allocation_size(), 0);
        assert_eq!(t.intern(&long), 2);
        assert_eq!(t.intern(b"b"), 4);
        assert_eq!(t.get(4), b"b");
        assert_eq!(t.get(3), vec![b'y'; 255]);
    }

    /// Each distinct name costs its bytes and 4 bytes beside them,
    /// however often it comes back.
    #[test]
    fn distinct_names_cost_four_bytes_beside_their_own() {
        let name = |i: usize| format!("{}{i}", "n".repeat(i % 37)).into_bytes();
        let n = 1000;
        let mut t = NameTable::default();
        for _ in 0..3 {
            for i in 0..n {
                let r = t.intern(&name(i));
                assert_eq!(r as usize, i + 1);
            }
        }
        t.shrink_to_fit();
        assert!((0..n).all(|i| t.get(i as u32 + 1) == name(i)));
        let bytes: usize = (0..n).map(|i| name(i).len()).sum();
        let names = n + 1;
        assert_eq!(t.heap_bytes(), bytes + (names + 1) * 4);
    }

    /// Past 4 GiB of names, an end's offset carries the wraps before it.
    #[test]
    fn ends_past_four_gib_carry_their_wraps() {
        let n = Names {
            bytes: Vec::new(),
            ends: vec![0, 10, 5, 7, 3],
            wraps: vec![2, 4],
        };
        let ends: Vec<usize> = (0..5).map(|i| n.end(i)).collect();
        assert_eq!(ends, [0, 10, 1 << 32 | 5, 1 << 32 | 7, 2 << 32 | 3]);
        assert_eq!(n.count(), 4);
    }
}
