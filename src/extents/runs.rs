//! The mappings of the index of shared ranges as sorted runs, and the
//! ranges read from them in order.
//!
//! A mapping is a [`Rec`] (16 bytes) or, when no `Rec` can hold it, a
//! [`WideRec`]. Each extent space keeps its mappings of each kind as sorted
//! runs ([`Runs`]): vectors sorted in place, and runs of the temporary
//! file ([`super::spill`]); [`Space::ranges`] reads them merged, one range
//! at a time with the files that map it, in order of start.

use std::fs::File;
use std::io;

use super::spill::{Item, Merge, SpilledRun};
use super::sweep::Interval;

/// One mapping of a range that is a whole number of 512-byte sectors
/// (every shared extent of XFS and Btrfs): 16 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Rec {
    pub(super) physical: u64,
    pub(super) sectors: u32,
    pub(super) file: u32,
}

const _: () = assert!(size_of::<Rec>() == 16);

/// A mapping no [`Rec`] can hold (not in whole sectors, or 2 TiB or more).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct WideRec {
    pub(super) physical: u64,
    pub(super) length: u64,
    pub(super) file: u32,
}

pub(super) const SECTOR: u64 = 512;

/// `N` bytes of `b` from `at`.
fn bytes<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    b[at..at + N].try_into().expect("N bytes")
}

impl Item for Rec {
    const SIZE: usize = 16;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.physical.to_ne_bytes());
        out.extend_from_slice(&self.sectors.to_ne_bytes());
        out.extend_from_slice(&self.file.to_ne_bytes());
    }
    fn get(b: &[u8]) -> Self {
        Rec {
            physical: u64::from_ne_bytes(bytes(b, 0)),
            sectors: u32::from_ne_bytes(bytes(b, 8)),
            file: u32::from_ne_bytes(bytes(b, 12)),
        }
    }
    fn key(&self) -> (u64, u64) {
        (self.physical, u64::from(self.sectors))
    }
    fn range(&self) -> (u64, u64) {
        (
            self.physical,
            self.physical + u64::from(self.sectors) * SECTOR,
        )
    }
    fn file(&self) -> u32 {
        self.file
    }
}

impl Item for WideRec {
    const SIZE: usize = 20;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.physical.to_ne_bytes());
        out.extend_from_slice(&self.length.to_ne_bytes());
        out.extend_from_slice(&self.file.to_ne_bytes());
    }
    fn get(b: &[u8]) -> Self {
        WideRec {
            physical: u64::from_ne_bytes(bytes(b, 0)),
            length: u64::from_ne_bytes(bytes(b, 8)),
            file: u32::from_ne_bytes(bytes(b, 16)),
        }
    }
    fn key(&self) -> (u64, u64) {
        (self.physical, self.length)
    }
    fn range(&self) -> (u64, u64) {
        (self.physical, self.physical + self.length)
    }
    fn file(&self) -> u32 {
        self.file
    }
}

/// The sorted runs of one kind of mapping in one extent space: in memory,
/// and in the temporary file.
#[derive(Debug)]
pub(super) struct Runs<T> {
    pub(super) mem: Vec<Vec<T>>,
    pub(super) disk: Vec<SpilledRun<T>>,
}

impl<T> Default for Runs<T> {
    fn default() -> Self {
        Runs {
            mem: Vec::new(),
            disk: Vec::new(),
        }
    }
}

impl<T: Item> Runs<T> {
    /// The mappings of range `key`.
    pub(super) fn count(&self, file: Option<&File>, key: (u64, u64)) -> io::Result<usize> {
        let mut n = 0;
        for v in &self.mem {
            n += v.partition_point(|r| r.key() <= key) - v.partition_point(|r| r.key() < key);
        }
        if let Some(file) = file {
            for r in &self.disk {
                n += r.count(file, key)?;
            }
        }
        Ok(n)
    }

    /// Its ranges in order, each with its files.
    fn groups<'a>(&'a self, file: Option<&'a File>, buf: usize) -> Groups<'a, T> {
        Groups {
            merge: Merge::new(&self.mem, &self.disk, file, buf),
            head: None,
        }
    }
}

/// The ranges of sorted runs, in order.
pub(super) struct Groups<'a, T> {
    merge: Merge<'a, T>,
    /// The first mapping of the next range, read already.
    head: Option<T>,
}

impl<T: Item> Groups<'_, T> {
    /// The next range as `(start, end)`, its files (in order, with
    /// multiplicity) appended to `files`; `None` after the last.
    fn next(&mut self, files: &mut Vec<u32>) -> io::Result<Option<(u64, u64)>> {
        let Some(first) = self
            .head
            .take()
            .map_or_else(|| self.merge.next(), |h| Ok(Some(h)))?
        else {
            return Ok(None);
        };
        files.push(first.file());
        while let Some(x) = self.merge.next()? {
            if x.key() != first.key() {
                self.head = Some(x);
                break;
            }
            files.push(x.file());
        }
        Ok(Some(first.range()))
    }
}

/// The mappings of one extent space, as sorted runs.
#[derive(Debug, Default)]
pub(super) struct Space {
    pub(super) fs: u32,
    pub(super) recs: Runs<Rec>,
    pub(super) odd: Runs<WideRec>,
    /// Distinct ranges.
    pub(super) ranges: usize,
}

impl Space {
    /// Its ranges in order of start, read `buf` bytes of a run at a time.
    pub(super) fn ranges<'a>(&'a self, file: Option<&'a File>, buf: usize) -> SpaceRanges<'a> {
        SpaceRanges {
            recs: self.recs.groups(file, buf),
            odd: self.odd.groups(file, buf),
            next: [None, None],
            files: [Vec::new(), Vec::new()],
        }
    }

    /// Whether all its mappings are in memory.
    pub(super) fn in_memory(&self) -> bool {
        self.recs.disk.is_empty() && self.odd.disk.is_empty()
    }
}

/// The ranges of a space in order of start: those of its [`Rec`]s and
/// those of its [`WideRec`]s (never the same range) interleaved.
pub(super) struct SpaceRanges<'a> {
    recs: Groups<'a, Rec>,
    odd: Groups<'a, WideRec>,
    /// The next range of each kind, read already, and its files.
    next: [Option<(u64, u64)>; 2],
    files: [Vec<u32>; 2],
}

impl SpaceRanges<'_> {
    /// The next range as `(start, end)`, its files appended to `files`.
    pub(super) fn next(&mut self, files: &mut Vec<u32>) -> io::Result<Option<(u64, u64)>> {
        if self.next[0].is_none() {
            self.next[0] = self.recs.next(&mut self.files[0])?;
        }
        if self.next[1].is_none() {
            self.next[1] = self.odd.next(&mut self.files[1])?;
        }
        let k = match self.next {
            [None, None] => return Ok(None),
            [Some(a), Some(b)] if b < a => 1,
            [None, Some(_)] => 1,
            _ => 0,
        };
        files.append(&mut self.files[k]);
        Ok(self.next[k].take())
    }
}

/// The index of `fs` in `spaces`, added if missing.
pub(super) fn space_of(spaces: &mut Vec<Space>, fs: u32) -> usize {
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

/// The ranges of `s` last first (the sweep takes them from the end, in
/// order of start, giving back their room as it goes), as [`Interval`]s,
/// and the pool that holds the references of those mapped more than
/// twice, from a space whose mappings are all in memory, which it takes:
/// its runs are read from their ends, and each gives back its memory as it
/// shrinks (an eighth of its room at a time), so that the mappings (16 bytes each)
/// and the intervals (32 bytes a range) are not both held whole
/// (docs/decisions.md, "Memory").
pub(super) fn intervals_taking(s: Space) -> (Vec<Interval>, Vec<u32>) {
    debug_assert!(s.in_memory());
    let mut out = Vec::with_capacity(s.ranges);
    let mut pool: Vec<u32> = Vec::new();
    let mut files = Vec::new();
    let (mut recs, mut odd) = (Back::new(s.recs.mem), Back::new(s.odd.mem));
    let mut held: [Vec<u32>; 2] = [Vec::new(), Vec::new()];
    let mut next = [recs.group(&mut held[0]), odd.group(&mut held[1])];
    loop {
        // The range that ends last goes first (no Rec and Odd share one).
        let k = match next {
            [None, None] => break,
            [Some(a), Some(b)] if b > a => 1,
            [None, Some(_)] => 1,
            _ => 0,
        };
        let (start, end) = next[k].expect("picked");
        files.append(&mut held[k]);
        // Read from the end: the files came last first.
        files.reverse();
        out.push(interval((start, end), &files, &mut pool));
        files.clear();
        next[k] = if k == 0 {
            recs.group(&mut held[0])
        } else {
            odd.group(&mut held[1])
        };
    }
    (out, pool)
}

/// The range `start..end` mapped by `files` (at least one), those of a
/// range mapped more than twice put in `pool`.
fn interval((start, end): (u64, u64), files: &[u32], pool: &mut Vec<u32>) -> Interval {
    let refs = if files.len() <= 2 {
        [files[0], files.get(1).copied().unwrap_or(0)]
    } else {
        let off = pool.len() as u64;
        pool.extend_from_slice(files);
        [off as u32, (off >> 32) as u32]
    };
    Interval {
        start,
        end,
        count: u32::try_from(files.len()).unwrap_or(u32::MAX),
        refs,
    }
}

/// Gives back the room of `v`, a vector read from its end, once an eighth
/// of it is unused (glibc returns the pages of a mapped block that
/// shrinks, without a copy): what is read and what is made of it are never
/// both held whole, nor half again.
pub(super) fn give_back<T>(v: &mut Vec<T>) {
    let room = v.capacity();
    if room >= 1024 && v.len() <= room - room / 8 {
        v.shrink_to_fit();
    }
}

/// Sorted runs in memory read from their ends, merged: the largest first.
struct Back<T> {
    runs: Vec<Vec<T>>,
    /// The last mapping taken and not yet in a group.
    head: Option<T>,
}

impl<T: Item + Ord + Copy> Back<T> {
    fn new(runs: Vec<Vec<T>>) -> Self {
        Back { runs, head: None }
    }

    /// The largest mapping left, taken out of its run.
    fn pop(&mut self) -> Option<T> {
        let i = (0..self.runs.len())
            .filter(|&i| !self.runs[i].is_empty())
            .max_by_key(|&i| self.runs[i].last().copied())?;
        let v = &mut self.runs[i];
        let x = v.pop();
        give_back(v);
        x
    }

    /// The range read last to first, as `(start, end)`, its files (last
    /// first) appended to `files`; `None` after the first.
    fn group(&mut self, files: &mut Vec<u32>) -> Option<(u64, u64)> {
        let last = self.head.take().or_else(|| self.pop())?;
        files.push(last.file());
        while let Some(x) = self.pop() {
            if x.key() != last.key() {
                self.head = Some(x);
                break;
            }
            files.push(x.file());
        }
        Some(last.range())
    }
}

/// The ranges of `s` in order of start, as [`Interval`]s, and the pool
/// that holds the references of those mapped more than twice, read
/// forward: what [`intervals_taking`] must give, last first.
#[cfg(test)]
pub(super) fn intervals(s: &Space) -> io::Result<(Vec<Interval>, Vec<u32>)> {
    let mut pool: Vec<u32> = Vec::new();
    let mut out = Vec::with_capacity(s.ranges);
    let mut ranges = s.ranges(None, 0);
    let mut files = Vec::new();
    while let Some((start, end)) = ranges.next(&mut files)? {
        out.push(interval((start, end), &files, &mut pool));
        files.clear();
    }
    Ok((out, pool))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    type ResolvedRanges = Vec<(u64, u64, Vec<u32>)>;

    /// What [`intervals_taking`] gives, in order of start.
    fn forward_of((mut ranges, pool): (Vec<Interval>, Vec<u32>)) -> (Vec<Interval>, Vec<u32>) {
        ranges.reverse();
        (ranges, pool)
    }

    fn resolved((ranges, pool): &(Vec<Interval>, Vec<u32>)) -> ResolvedRanges {
        ranges
            .iter()
            .map(|r| (r.start, r.end, r.refs(pool).to_vec()))
            .collect()
    }

    /// A space of sorted runs in memory: (block, length, file, odd) per
    /// mapping, each run sorted as an arena is.
    fn space(runs: Vec<Vec<(u64, u32, u32, bool)>>) -> Space {
        let mut s = Space::default();
        let mut keys = std::collections::BTreeSet::new();
        for run in runs {
            let (mut recs, mut odd) = (Vec::new(), Vec::new());
            for (block, len, file, is_odd) in run {
                let physical = block * 4096;
                if is_odd {
                    // Not whole sectors: no Rec ends where it does.
                    let length = u64::from(len) * 700;
                    odd.push(WideRec {
                        physical,
                        length,
                        file,
                    });
                    keys.insert((physical, length));
                } else {
                    recs.push(Rec {
                        physical,
                        sectors: len * 8,
                        file,
                    });
                    keys.insert((physical, u64::from(len) * 4096));
                }
            }
            recs.sort_unstable();
            odd.sort_unstable();
            s.recs.mem.push(recs);
            s.odd.mem.push(odd);
        }
        s.ranges = keys.len();
        s
    }

    proptest! {
        /// Read from the ends of the runs, giving their memory back, the
        /// ranges and their files are those read forward.
        #[test]
        fn taken_from_the_ends_the_ranges_are_those_read_forward(
            runs in prop::collection::vec(
                prop::collection::vec((0u64..64, 1u32..4, 0u32..6, any::<bool>()), 0..300),
                0..5,
            )
        ) {
            let s = space(runs);
            let forward = resolved(&intervals(&s).expect("in memory"));
            prop_assert_eq!(resolved(&forward_of(intervals_taking(s))), forward);
        }
    }

    /// Runs long enough to shrink as they are read: the same ranges.
    #[test]
    fn long_runs_shrink_and_give_the_same_ranges() {
        let runs: Vec<Vec<(u64, u32, u32, bool)>> = (0..3u32)
            .map(|r| {
                (0..5000u64)
                    .map(|i| {
                        (
                            i % 1700,
                            1 + (i % 3) as u32,
                            r * 7 + (i % 5) as u32,
                            i % 97 == 0,
                        )
                    })
                    .collect()
            })
            .collect();
        let s = space(runs);
        let forward = resolved(&intervals(&s).expect("in memory"));
        assert!(
            forward.iter().any(|r| r.2.len() > 2),
            "some range mapped by more than two files"
        );
        assert_eq!(resolved(&forward_of(intervals_taking(s))), forward);
    }
}
