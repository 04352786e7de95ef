//! The copies of files, kept by directory: what an unchanged snapshot
//! costs.
//!
//! A directory of a snapshot that nothing changed holds copies of the same
//! files as the same directory of every other snapshot of its family
//! ([`CopyRec`]). The copies one directory (one node, in one subvolume)
//! holds are a set of file ids; each set is kept once however many
//! directories hold it ([`CopySets`]), and each directory that holds one
//! costs a [`Held`] of 12 bytes, not 12 bytes a copy. The roll-up and the
//! saved scans read the copies back file by file ([`Copies::of`]), as if
//! each were a record of its own.

use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::Mutex;

use super::{CopyRec, NodeId};

/// A set of copies held by one node in one subvolume.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Held {
    /// The node the copies are credited to (their directory, or a file's
    /// own with `-a`).
    pub(crate) node: NodeId,
    /// Their `st_dev` (their subvolume), packed by [`super::dev32`].
    pub(crate) dev: u32,
    /// The set of files they copy ([`CopySets`]).
    pub(crate) set: u32,
}

const _: () = assert!(size_of::<Held>() == 12);

/// The sets of files copied, each kept once with an id: shared by the
/// walk's threads, which give the ids in the walk's order (no figure reads
/// them).
#[derive(Default)]
pub(crate) struct CopySets {
    map: Mutex<HashMap<Box<[u32]>, u32>>,
}

impl CopySets {
    /// What `copies` (any order) are, as one [`Held`] per (node, device):
    /// appended to `held`. `copies` is left sorted.
    pub(crate) fn hold(&self, copies: &mut [CopyRec], held: &mut Vec<Held>) {
        copies.sort_unstable_by_key(|c| (c.node, c.dev, c.of));
        self.hold_sorted(copies.iter().copied(), held);
    }

    /// [`CopySets::hold`] of copies sorted by node, device and file.
    pub(crate) fn hold_sorted(&self, copies: impl Iterator<Item = CopyRec>, held: &mut Vec<Held>) {
        let mut of = Vec::new();
        let mut at = None;
        for c in copies.chain(std::iter::once(CopyRec {
            of: 0,
            node: NodeId::NONE,
            dev: 0,
        })) {
            if at != Some((c.node, c.dev)) {
                if let Some((node, dev)) = at.filter(|_| !of.is_empty()) {
                    held.push(Held {
                        node,
                        dev,
                        set: self.id(&of),
                    });
                }
                of.clear();
                at = Some((c.node, c.dev));
            }
            of.push(c.of);
        }
    }

    /// The id of the set `of` (sorted), given it if new.
    fn id(&self, of: &[u32]) -> u32 {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&id) = map.get(of) {
            return id;
        }
        let id = u32::try_from(map.len()).expect("fewer than 4 billion sets of copies");
        map.insert(of.into(), id);
        id
    }
}

/// The copies of a scan: each set of files once, each directory holding
/// one by a [`Held`], and the index from a file to the sets it is in.
#[derive(Debug, Default)]
pub(crate) struct Copies {
    /// Sorted by set, then node and device.
    held: Vec<Held>,
    /// Set `s` is held by `held[held_at[s]..held_at[s + 1]]`.
    held_at: Vec<u32>,
    /// The files with copies, ascending; file `files[i]` is in the sets
    /// `in_sets[sets_at[i]..sets_at[i + 1]]`, and its copies come after
    /// `before[i]` others in [`Copies::iter`]'s order.
    files: Vec<u32>,
    sets_at: Vec<u32>,
    in_sets: Vec<u32>,
    before: Vec<u32>,
}

impl Copies {
    /// No copies.
    pub(crate) const NONE: &'static Copies = &Copies {
        held: Vec::new(),
        held_at: Vec::new(),
        files: Vec::new(),
        sets_at: Vec::new(),
        in_sets: Vec::new(),
        before: Vec::new(),
    };

    /// The copies `held`, of the sets `sets` gave.
    pub(crate) fn new(mut held: Vec<Held>, sets: CopySets) -> Copies {
        let map = sets.map.into_inner().unwrap_or_else(|e| e.into_inner());
        if held.is_empty() {
            return Copies::default();
        }
        let at = |n: usize| u32::try_from(n).expect("fewer than 4 billion copies");
        let mut by_id: Vec<(u32, Box<[u32]>)> = map.into_iter().map(|(s, id)| (id, s)).collect();
        by_id.par_sort_unstable_by_key(|s| s.0);
        let mut members = Vec::with_capacity(by_id.iter().map(|s| s.1.len()).sum());
        let mut set_at = Vec::with_capacity(by_id.len() + 1);
        set_at.push(0);
        for (_, s) in by_id {
            members.extend_from_slice(&s);
            set_at.push(at(members.len()));
        }
        let sets = set_at.len() - 1;
        held.par_sort_unstable_by_key(|h| (h.set, h.node, h.dev));
        held.shrink_to_fit();
        let mut held_at = vec![0u32; sets + 1];
        for h in &held {
            held_at[h.set as usize + 1] += 1;
        }
        for s in 0..sets {
            held_at[s + 1] += held_at[s];
        }
        // Each file's sets, ascending: the (file, set) pairs of every
        // member of a held set, sorted by counting (the sets are met in
        // order), with no room for the pairs themselves.
        let held_sets = || (0..sets).filter(|&s| held_at[s + 1] > held_at[s]);
        let members = |s: usize| &members[set_at[s] as usize..set_at[s + 1] as usize];
        let n = held_sets()
            .flat_map(members)
            .max()
            .map_or(0, |&f| f as usize + 1);
        let mut start = vec![0u32; n + 1];
        for &f in held_sets().flat_map(members) {
            start[f as usize + 1] += 1;
        }
        let mut files = Vec::new();
        let mut sets_at = vec![0];
        for (f, &k) in start[1..].iter().enumerate().filter(|x| *x.1 > 0) {
            files.push(f as u32);
            sets_at.push(sets_at.last().copied().unwrap_or(0) + k);
        }
        for f in 0..n {
            start[f + 1] += start[f];
        }
        let mut in_sets = vec![0u32; start[n] as usize];
        for s in held_sets() {
            for &f in members(s) {
                in_sets[start[f as usize] as usize] = s as u32;
                start[f as usize] += 1;
            }
        }
        let mut before = Vec::with_capacity(files.len() + 1);
        let mut copies = 0u32;
        for w in sets_at.windows(2) {
            before.push(copies);
            for &s in &in_sets[w[0] as usize..w[1] as usize] {
                copies = copies
                    .checked_add(held_at[s as usize + 1] - held_at[s as usize])
                    .expect("fewer than 4 billion copies");
            }
        }
        before.push(copies);
        Copies {
            held,
            held_at,
            files,
            sets_at,
            in_sets,
            before,
        }
    }

    /// The copies `recs` as one vector would hold them (the tests' form).
    #[cfg(test)]
    pub(crate) fn of_records(mut recs: Vec<CopyRec>) -> Copies {
        let sets = CopySets::default();
        let mut held = Vec::new();
        sets.hold(&mut recs, &mut held);
        Copies::new(held, sets)
    }

    /// How many copies there are.
    pub(crate) fn len(&self) -> usize {
        self.before.last().map_or(0, |&n| n as usize)
    }

    /// Whether there are none.
    pub(crate) fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    fn file(&self, f: u32) -> Option<usize> {
        self.files.binary_search(&f).ok()
    }

    /// How many copies file `f` has.
    pub(crate) fn count(&self, f: u32) -> u32 {
        self.file(f)
            .map_or(0, |i| self.before[i + 1] - self.before[i])
    }

    /// How many copies of files before `f` [`Copies::iter`] gives.
    pub(crate) fn before(&self, f: u32) -> u32 {
        let i = self.files.partition_point(|&g| g < f);
        self.before.get(i).copied().unwrap_or(0)
    }

    /// The copies of file `f`: their nodes and devices.
    pub(crate) fn of(&self, f: u32) -> impl Iterator<Item = (NodeId, u32)> + Clone + '_ {
        let sets = match self.file(f) {
            Some(i) => &self.in_sets[self.sets_at[i] as usize..self.sets_at[i + 1] as usize],
            None => &[],
        };
        sets.iter().flat_map(move |&s| {
            let (a, b) = (self.held_at[s as usize], self.held_at[s as usize + 1]);
            self.held[a as usize..b as usize]
                .iter()
                .map(|h| (h.node, h.dev))
        })
    }

    /// The files with copies, ascending, each with the sets it is in.
    pub(crate) fn file_sets(&self) -> impl Iterator<Item = (u32, &[u32])> + '_ {
        (self.files.iter())
            .zip(self.sets_at.windows(2))
            .map(|(&f, w)| (f, &self.in_sets[w[0] as usize..w[1] as usize]))
    }

    /// Per set, whether every node holding it is one `inside` says yes to:
    /// the copies of a file are all inside when each of its sets is.
    pub(crate) fn sets_held_within(&self, inside: impl Fn(NodeId) -> bool) -> Vec<bool> {
        (self.held_at.windows(2))
            .map(|w| {
                self.held[w[0] as usize..w[1] as usize]
                    .iter()
                    .all(|h| inside(h.node))
            })
            .collect()
    }

    /// Per set, the largest `at` of the nodes holding it (0 for none): with
    /// `at` the first of a growing series of marked sets that holds a
    /// node, the first that holds every copy of the set.
    pub(crate) fn sets_held_from(&self, at: impl Fn(NodeId) -> u32) -> Vec<u32> {
        (self.held_at.windows(2))
            .map(|w| {
                (self.held[w[0] as usize..w[1] as usize].iter())
                    .map(|h| at(h.node))
                    .max()
                    .unwrap_or(0)
            })
            .collect()
    }

    /// The files with copies, ascending.
    #[cfg(test)]
    pub(crate) fn files(&self) -> &[u32] {
        &self.files
    }

    /// Every copy, by the file it copies.
    pub(crate) fn iter(&self) -> impl Iterator<Item = CopyRec> + '_ {
        self.files.iter().flat_map(move |&of| {
            self.of(of)
                .map(move |(node, dev)| CopyRec { of, node, dev })
        })
    }

    /// The bytes it holds (capacity), for the memory guards.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.held.capacity() * size_of::<Held>()
            + (self.held_at.capacity()
                + self.files.capacity()
                + self.sets_at.capacity()
                + self.in_sets.capacity()
                + self.before.capacity())
                * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(of: u32, node: usize, dev: u32) -> CopyRec {
        CopyRec {
            of,
            node: NodeId::new(node),
            dev,
        }
    }

    #[test]
    fn copies_read_back_as_the_records_they_stand_for() {
        // Three snapshots' directories 10, 20, 30 holding copies of files
        // 1, 2, 5; directory 40 of 2 and 7; 50 (-a leaf) of 5.
        let mut recs = Vec::new();
        for (node, dev) in [(10, 1), (20, 2), (30, 3)] {
            for of in [5, 1, 2] {
                recs.push(rec(of, node, dev));
            }
        }
        recs.extend([rec(7, 40, 2), rec(2, 40, 2), rec(5, 50, 3)]);
        let copies = Copies::of_records(recs.clone());
        assert_eq!(copies.len(), recs.len());
        assert_eq!(copies.files(), &[1, 2, 5, 7]);
        let mut got: Vec<CopyRec> = copies.iter().collect();
        assert!(got.is_sorted_by_key(|c| c.of));
        let key = |c: &CopyRec| (c.of, c.node, c.dev);
        got.sort_unstable_by_key(key);
        recs.sort_unstable_by_key(key);
        assert_eq!(got, recs);
        assert_eq!(copies.count(2), 4);
        assert_eq!(copies.count(3), 0);
        assert_eq!(copies.of(3).count(), 0);
        assert_eq!(
            (copies.before(1), copies.before(2), copies.before(5)),
            (0, 3, 7)
        );
        assert_eq!(
            (copies.before(6), copies.before(7), copies.before(99)),
            (11, 11, 12)
        );
        // The three directories with the same copies share one set.
        let held: std::collections::HashSet<u32> = copies.held.iter().map(|h| h.set).collect();
        assert_eq!(held.len(), 3);
    }

    #[test]
    fn no_copies() {
        let copies = Copies::of_records(Vec::new());
        assert!(copies.is_empty());
        assert_eq!(
            (copies.len(), copies.count(1), copies.iter().count()),
            (0, 0, 0)
        );
    }
}
