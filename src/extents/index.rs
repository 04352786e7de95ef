//! The index of shared physical ranges, filled during the walk.
//!
//! Every thread calls [`SharedIndex::insert`] for each extent flagged
//! shared: the mapping is appended to an arena of the thread's own (a lock
//! nobody else takes), 16 bytes a mapping. After the walk each arena is
//! sorted in place and the arenas are read merged ([`super::runs`]):
//! identical physical ranges (whole-file clones, snapshots: the common
//! case) come next to each other, one range with the files that map it,
//! and [`SharedIndex::try_into_units`] hands the ranges to the
//! [sweep](super::sweep), which resolves partial overlaps. Physical
//! addresses are only compared within one extent space (a filesystem, as
//! seen from one root namespace).
//!
//! The arenas hold at most a budget of bytes (`--index-memory`): an arena
//! that would grow past its share is sorted and written to a temporary
//! file as a run ([`super::spill`]), and starts again empty. Once one
//! has, the rest follow after the walk, and every question reads the runs
//! merged from the file.
//!
//! An arena appended to costs what the mappings are, where a map keyed by
//! range costs more for a range mapped by more than two files (a backup
//! repository's blocks are mapped by every synthetic full), and its sort,
//! once, is cheaper than the hashing and locking of every insert
//! (docs/decisions.md, "Memory").

use std::io;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crossbeam_utils::CachePadded;

use super::runs::{Rec, SECTOR, Space, WideRec, give_back, intervals_taking, space_of};
use super::spill::{self, SpillError, SpilledRun, TempFile, Tuning};
use super::sweep::{Sweep, Sweeper};
use crate::probe::Granularity;

/// One thread's mappings, by extent space.
#[derive(Debug, Default)]
struct Arena {
    /// (extent space, its mappings); a scan meets few spaces.
    recs: Vec<(u32, Vec<Rec>)>,
    odd: Vec<(u32, Vec<WideRec>)>,
}

impl Arena {
    /// The bytes its vectors hold (their capacities).
    fn bytes(&self) -> usize {
        self.recs
            .iter()
            .map(|v| v.1.capacity() * size_of::<Rec>())
            .sum::<usize>()
            + self
                .odd
                .iter()
                .map(|v| v.1.capacity() * size_of::<WideRec>())
                .sum::<usize>()
    }
}

/// The index of extent space `fs` in `v`, added if missing.
fn slot<T>(v: &mut Vec<(u32, Vec<T>)>, fs: u32) -> usize {
    match v.iter().position(|x| x.0 == fs) {
        Some(i) => i,
        None => {
            v.push((fs, Vec::new()));
            v.len() - 1
        }
    }
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
/// sectors under 2 TiB; 24 otherwise), in vectors that grow by doubling,
/// up to the budget: past it, sorted runs go to a temporary file
/// ([`super::spill`]). After the walk each vector is sorted in place. In
/// memory, the sweep then takes 32 bytes per distinct range, and 4 per
/// reference of a range mapped more than twice, one extent space at a
/// time, made from the space's mappings as they are given back
/// ([`super::runs::intervals_taking`]); spilled, it reads the runs merged,
/// a buffer of up to 64 KiB per run, and holds only the ranges open at the
/// place it has reached.
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
    tuning: Tuning,
    /// Where runs go past the budget.
    temp: TempFile,
    /// Runs written by the arenas, not yet given to their space.
    written: Mutex<Written>,
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

/// Runs written by the arenas, by extent space: of [`Rec`]s, of [`WideRec`]s.
type Written = (Vec<(u32, SpilledRun<Rec>)>, Vec<(u32, SpilledRun<WideRec>)>);

/// What the index wrote to its temporary file: runs, and their bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Spilled {
    pub(crate) runs: u64,
    pub(crate) bytes: u64,
}

impl SharedIndex {
    /// Creates an empty index that never spills.
    pub(crate) fn new() -> Self {
        Self::with_tuning(Tuning::for_budget(u64::MAX), std::env::temp_dir())
    }

    /// Creates an empty index whose arenas hold up to `budget` bytes of
    /// mappings, and spill past it to a temporary file in `dir`.
    pub(crate) fn with_budget(budget: u64, dir: PathBuf) -> Self {
        Self::with_tuning(Tuning::for_budget(budget), dir)
    }

    /// Creates an empty index that spills as `tuning` says.
    pub(super) fn with_tuning(tuning: Tuning, dir: PathBuf) -> Self {
        Self {
            shards: (0..SHARDS)
                .map(|_| CachePadded::new(Mutex::new(Arena::default())))
                .collect(),
            done: Mutex::new(Vec::new()),
            asked: AtomicBool::new(false),
            late: AtomicBool::new(false),
            tuning,
            temp: TempFile::new(dir),
            written: Mutex::new((Vec::new(), Vec::new())),
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
    /// between questions. Once spilling has failed ([`Self::failed`]),
    /// mappings are dropped.
    pub(crate) fn insert(&self, fs: u32, physical: u64, length: u64, file: u32) {
        if self.asked.load(Ordering::Relaxed) {
            self.late.store(true, Ordering::Relaxed);
        }
        let length = length.min(u64::MAX - physical);
        if length == 0 || self.temp.failed() {
            return;
        }
        let shard = rayon::current_thread_index().unwrap_or(0) % SHARDS;
        let mut a = self.shards[shard].lock().unwrap_or_else(|e| e.into_inner());
        let sectors = u32::try_from(length / SECTOR).ok();
        match sectors.filter(|_| length % SECTOR == 0) {
            Some(sectors) => {
                let i = slot(&mut a.recs, fs);
                if a.recs[i].1.len() == a.recs[i].1.capacity() {
                    self.spill_before_growth(&mut a, false, i);
                }
                a.recs[i].1.push(Rec {
                    physical,
                    sectors,
                    file,
                });
            }
            None => {
                let i = slot(&mut a.odd, fs);
                if a.odd[i].1.len() == a.odd[i].1.capacity() {
                    self.spill_before_growth(&mut a, true, i);
                }
                a.odd[i].1.push(WideRec {
                    physical,
                    length,
                    file,
                });
            }
        }
    }

    /// Before the full vector `i` of `a`'s [`WideRec`]s (`odd`), else of its
    /// [`Rec`]s, grows (doubles): if that would take `a` past its share of
    /// the budget, writes `a`'s mappings as runs and empties it, keeping
    /// the capacity of that vector alone. The next run then fills it
    /// without allocating: vectors freed and grown again at every run
    /// would leave the C library's heaps holding pages (the threshold
    /// past which it maps a block of its own rises with the largest one
    /// freed).
    #[cold]
    fn spill_before_growth(&self, a: &mut Arena, odd: bool, i: usize) {
        let shards = rayon::current_num_threads().min(SHARDS);
        let held = if odd {
            a.odd[i].1.capacity() * size_of::<WideRec>()
        } else {
            a.recs[i].1.capacity() * size_of::<Rec>()
        };
        if a.bytes() + held.max(64) <= self.tuning.shard_bytes(shards) {
            return;
        }
        if let Err(e) = self.write(a) {
            self.temp.fail(true, e);
        }
        for (j, v) in a.recs.iter_mut().enumerate() {
            if odd || j != i || self.temp.failed() {
                v.1 = Vec::new();
            }
        }
        for (j, v) in a.odd.iter_mut().enumerate() {
            if !odd || j != i || self.temp.failed() {
                v.1 = Vec::new();
            }
        }
    }

    /// Writes the mappings of `a`, each vector sorted, as runs of the
    /// temporary file, and empties its vectors.
    fn write(&self, a: &mut Arena) -> io::Result<()> {
        for (fs, v) in a.recs.iter_mut().filter(|v| !v.1.is_empty()) {
            v.sort_unstable();
            let run = self.temp.write_run(v, self.tuning.fence)?;
            v.clear();
            let mut w = self.written.lock().unwrap_or_else(|e| e.into_inner());
            w.0.push((*fs, run));
        }
        for (fs, v) in a.odd.iter_mut().filter(|v| !v.1.is_empty()) {
            v.sort_unstable();
            let run = self.temp.write_run(v, self.tuning.fence)?;
            v.clear();
            let mut w = self.written.lock().unwrap_or_else(|e| e.into_inner());
            w.1.push((*fs, run));
        }
        Ok(())
    }

    /// Moves the mappings of the arenas into `spaces`: sorted in place, or
    /// written as runs once anything was (then every mapping is in the
    /// file, and the memory the arenas held is free for the buffers of
    /// the merge). Counts the ranges of the spaces that got some.
    fn merge(&self, spaces: &mut Vec<Space>) -> io::Result<()> {
        let taken: Vec<Arena> = self
            .shards
            .iter()
            .map(|s| std::mem::take(&mut *s.lock().unwrap_or_else(|e| e.into_inner())))
            .collect();
        let mut grown: Vec<u32> = Vec::new();
        for mut a in taken {
            if self.temp.get().is_some() {
                self.write(&mut a)?;
                continue;
            }
            for (fs, mut v) in a.recs.into_iter().filter(|v| !v.1.is_empty()) {
                v.sort_unstable();
                v.shrink_to_fit();
                let i = space_of(spaces, fs);
                spaces[i].recs.mem.push(v);
                grown.push(fs);
            }
            for (fs, mut v) in a.odd.into_iter().filter(|v| !v.1.is_empty()) {
                v.sort_unstable();
                v.shrink_to_fit();
                let i = space_of(spaces, fs);
                spaces[i].odd.mem.push(v);
                grown.push(fs);
            }
        }
        let (recs, odd) =
            std::mem::take(&mut *self.written.lock().unwrap_or_else(|e| e.into_inner()));
        for (fs, run) in recs {
            let i = space_of(spaces, fs);
            spaces[i].recs.disk.push(run);
            grown.push(fs);
        }
        for (fs, run) in odd {
            let i = space_of(spaces, fs);
            spaces[i].odd.disk.push(run);
            grown.push(fs);
        }
        for s in spaces.iter_mut().filter(|s| grown.contains(&s.fs)) {
            spill::compact(&self.temp, &mut s.recs.disk, &self.tuning)?;
            spill::compact(&self.temp, &mut s.odd.disk, &self.tuning)?;
            let mut ranges = s.ranges(self.temp.get(), self.tuning.buf);
            let (mut files, mut n) = (Vec::new(), 0);
            while ranges.next(&mut files)?.is_some() {
                files.clear();
                n += 1;
            }
            s.ranges = n;
        }
        spaces.sort_unstable_by_key(|s| s.fs);
        Ok(())
    }

    /// `f` of the mappings by extent space, as sorted runs: the arenas are
    /// merged into them on the first question, and again after a later
    /// insert.
    fn with_spaces<R>(&self, f: impl FnOnce(&[Space]) -> R) -> R {
        let mut spaces = self.done.lock().unwrap_or_else(|e| e.into_inner());
        let first = !self.asked.swap(true, Ordering::Relaxed);
        if (first || self.late.swap(false, Ordering::Relaxed))
            && let Err(e) = self.merge(&mut spaces)
        {
            self.temp.fail(true, e);
        }
        f(&spaces)
    }

    /// The references recorded for `length` bytes at `physical` in extent
    /// space `fs`, with multiplicity (0: none).
    pub(crate) fn count(&self, fs: u32, physical: u64, length: u64) -> u32 {
        let length = length.min(u64::MAX - physical);
        let n = self.with_spaces(|spaces| {
            let s = spaces.iter().find(|s| s.fs == fs)?;
            let file = self.temp.get();
            let n = match u32::try_from(length / SECTOR)
                .ok()
                .filter(|_| length % SECTOR == 0)
            {
                Some(sectors) => s.recs.count(file, (physical, u64::from(sectors))),
                None => s.odd.count(file, (physical, length)),
            };
            n.map_err(|e| self.temp.fail(false, e)).ok()
        });
        n.map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// The distinct `(physical, length)` ranges stored in extent space
    /// `fs`, in order.
    pub(crate) fn ranges_in(&self, fs: u32) -> Vec<(u64, u64)> {
        self.with_spaces(|spaces| {
            let mut out = Vec::new();
            let mut files = Vec::new();
            for s in spaces.iter().filter(|s| s.fs == fs) {
                out.reserve_exact(s.ranges);
                let mut ranges = s.ranges(self.temp.get(), self.tuning.buf);
                loop {
                    match ranges.next(&mut files) {
                        Ok(Some((start, end))) => out.push((start, end - start)),
                        Ok(None) => break,
                        Err(e) => {
                            self.temp.fail(false, e);
                            break;
                        }
                    }
                    files.clear();
                }
            }
            out
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

    /// Whether spilling failed: the walk may stop, and
    /// [`Self::try_into_units`] fails.
    pub(crate) fn failed(&self) -> bool {
        self.temp.failed()
    }

    /// Why spilling failed, taken.
    pub(crate) fn take_error(&self) -> Option<SpillError> {
        self.temp.error()
    }

    /// The heap bytes the mappings take (the vectors' capacities).
    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        let spaces: usize = self
            .done
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|s| {
                let recs: usize = s.recs.mem.iter().map(|v| v.capacity()).sum();
                let odd: usize = s.odd.mem.iter().map(|v| v.capacity()).sum();
                recs * size_of::<Rec>() + odd * size_of::<WideRec>()
            })
            .sum();
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).bytes())
            .sum::<usize>()
            + spaces
    }

    /// What was written to the temporary file.
    pub(crate) fn spilled(&self) -> Spilled {
        let (runs, bytes) = self.temp.written();
        Spilled { runs, bytes }
    }

    /// [`Self::try_into_units`], for the tests, where nothing fails.
    #[cfg(test)]
    pub(crate) fn into_units(self, granularity: impl Fn(u32) -> Granularity) -> Sweep {
        self.try_into_units(granularity)
            .expect("the index could be read")
            .0
    }

    /// Sweeps the stored ranges into segments and units; `granularity(fs)`
    /// tells how the filesystem of extent space `fs` frees shared data.
    /// Also what was written to the temporary file.
    ///
    /// # Errors
    /// When a run could not be written or read back, now or before.
    ///
    /// # Complexity
    /// With n ranges, r references in all and an output of total size s (Σ
    /// over segments and units of their file lists): O(n log n + r log r +
    /// s) time, O(n + r + s) memory in memory (32 bytes per range of one
    /// extent space, plus 4 per reference of a range mapped more than
    /// twice, beside the output); spilled, O(s) beside the ranges open at
    /// one place and a buffer per run. s is at most about r when overlaps
    /// are shallow, as they are in practice; n ranges nested inside one
    /// another make it quadratic, which is the size of the answer itself.
    pub(crate) fn try_into_units(
        self,
        granularity: impl Fn(u32) -> Granularity,
    ) -> Result<(Sweep, Spilled), SpillError> {
        self.with_spaces(|_| ());
        let spaces = std::mem::take(&mut *self.done.lock().unwrap_or_else(|e| e.into_inner()));
        let mut sweeper = Sweeper::with_room(spaces.iter().map(|s| s.ranges).sum());
        let (file, buf) = (self.temp.get(), self.tuning.buf);
        for s in spaces {
            let g = granularity(s.fs);
            if s.in_memory() {
                // The ranges in 32 bytes each, the mappings freed as they
                // are read, before the sweep; taken from the end (the
                // first), their room given back an eighth at a time as the
                // sweep's output grows.
                let fs = s.fs;
                let (mut ranges, pool) = intervals_taking(s);
                sweeper.sweep_space(fs, g, |out| {
                    let r = ranges.pop()?;
                    give_back(&mut ranges);
                    out.extend_from_slice(r.refs(&pool));
                    Some((r.start, r.end))
                });
            } else {
                let mut ranges = s.ranges(file, buf);
                sweeper.sweep_space(s.fs, g, |out| {
                    ranges.next(out).unwrap_or_else(|e| {
                        self.temp.fail(false, e);
                        None
                    })
                });
            }
        }
        match self.temp.error() {
            Some(e) => Err(e),
            None => Ok((sweeper.finish(), self.spilled())),
        }
    }
}
