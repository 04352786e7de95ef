//! Figures and times kept as compact as their values allow: a node's own
//! figures ([`CompactStats`]), rolled-up figures ([`StatsTable`]), and
//! times in 4 bytes and their nanoseconds ([`PackedTimes`]).
//!
//! Nothing is lost: every [`Stats`] comes back as it was put.

use crate::figures::{Stats, Timestamp};

/// Times by index, 4 bytes each once one has a time (none before).
///
/// A time is its seconds since 1970 in 32 bits (up to 2106) and, when it
/// has any, its nanoseconds: in a list by index while few times have them
/// (files unpacked from an archive or a package have none), else in a
/// column of their own. Any other time (before 1970, after 2106, or with
/// nanoseconds past a second) is kept whole in a side list.
#[derive(Clone, Debug, Default)]
pub(crate) struct PackedTimes {
    /// Empty, or one per index: the seconds, [`NO_TIME`] or [`FAR`].
    secs: Vec<u32>,
    /// (index, nanoseconds) of the times that have any, by index, while
    /// `nanos` is empty.
    sparse: Vec<(u32, u32)>,
    /// Empty, or one per index: the nanoseconds.
    nanos: Vec<u32>,
    /// (index, time) of the times kept whole, by index.
    far: Vec<(u32, Timestamp)>,
}

/// Nanoseconds kept in a list by index, set out of index order, past
/// which they go into a column ([`PackedTimes::set`]).
const OUT_OF_ORDER: usize = 4096;

/// In [`PackedTimes::secs`]: no time.
const NO_TIME: u32 = u32::MAX;
/// In [`PackedTimes::secs`]: the time is in [`PackedTimes::far`].
const FAR: u32 = u32::MAX - 1;

/// Sets index `i`'s value in a list by index (`None`: removes it).
fn set_in<T>(list: &mut Vec<(u32, T)>, i: usize, v: Option<T>) {
    let at = list.partition_point(|x| (x.0 as usize) < i);
    let had = list.get(at).is_some_and(|x| x.0 as usize == i);
    match (v, had) {
        (Some(v), true) => list[at].1 = v,
        (Some(v), false) => list.insert(at, (i as u32, v)),
        (None, true) => {
            list.remove(at);
        }
        (None, false) => {}
    }
}

/// Index `i`'s value in a list by index.
fn get_in<T: Copy>(list: &[(u32, T)], i: usize) -> Option<T> {
    let at = list.partition_point(|x| (x.0 as usize) < i);
    list.get(at).filter(|x| x.0 as usize == i).map(|x| x.1)
}

impl PackedTimes {
    /// Whether no index has a time (and none is kept).
    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.secs.is_empty()
    }

    /// Sets index `i`'s time, making the column (`n` long, at least) when
    /// it is the first.
    pub(crate) fn set(&mut self, i: usize, n: usize, t: Option<Timestamp>) {
        if t.is_none() && self.secs.len() <= i {
            return;
        }
        if self.secs.len() <= i {
            self.secs.resize(n.max(i + 1), NO_TIME);
            if !self.nanos.is_empty() {
                self.nanos.resize(self.secs.len(), 0);
            }
        }
        let secs = t.and_then(|t| u32::try_from(t.secs).ok().filter(|&s| s < FAR));
        let near = t.filter(|t| secs.is_some() && t.nanos < 1_000_000_000);
        self.secs[i] = match (t, near) {
            (None, _) => NO_TIME,
            (Some(t), Some(_)) => t.secs as u32,
            (Some(_), None) => FAR,
        };
        set_in(&mut self.far, i, t.filter(|_| near.is_none()));
        let nanos = near.map_or(0, |t| t.nanos);
        // Times set out of index order each move the list's tail: past a
        // few thousand in the list, that is quadratic (a browser's
        // rolled-up times of 5 million entries took minutes), so a column.
        let late = self.sparse.last().is_some_and(|x| x.0 as usize > i);
        if self.nanos.is_empty() && late && self.sparse.len() >= OUT_OF_ORDER {
            self.make_column();
        }
        if !self.nanos.is_empty() {
            self.nanos[i] = nanos;
            return;
        }
        set_in(&mut self.sparse, i, (nanos != 0).then_some(nanos));
        if self.sparse.len() > self.secs.len() / 4 {
            // Many have nanoseconds: a column is smaller than the list.
            self.make_column();
        }
    }

    /// The nanoseconds in a column of their own.
    fn make_column(&mut self) {
        self.nanos = vec![0; self.secs.len()];
        for (k, v) in std::mem::take(&mut self.sparse) {
            self.nanos[k as usize] = v;
        }
    }

    /// Index `i`'s time.
    pub(crate) fn get(&self, i: usize) -> Option<Timestamp> {
        match *self.secs.get(i)? {
            NO_TIME => None,
            FAR => get_in(&self.far, i),
            secs => Some(Timestamp {
                secs: i64::from(secs),
                nanos: match self.nanos.get(i) {
                    Some(&n) => n,
                    None => get_in(&self.sparse, i).unwrap_or(0),
                },
            }),
        }
    }

    /// Keeps the first `n` (the column stays empty if it is).
    pub(crate) fn truncate(&mut self, n: usize) {
        self.secs.truncate(n);
        self.nanos.truncate(n);
        self.sparse.retain(|x| (x.0 as usize) < n);
        self.far.retain(|x| (x.0 as usize) < n);
    }

    pub(crate) fn shrink_to_fit(&mut self) {
        self.secs.shrink_to_fit();
        self.sparse.shrink_to_fit();
        self.nanos.shrink_to_fit();
        self.far.shrink_to_fit();
    }

    /// Heap bytes held.
    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        (self.secs.capacity() + self.nanos.capacity()) * 4
            + self.sparse.capacity() * 8
            + self.far.capacity() * size_of::<(u32, Timestamp)>()
    }
}

/// The figures of many records, by index.
///
/// A record keeps its apparent size in 32 bits and a byte saying what its
/// other figures are ([`Shape`]). A file alone (exclusive = reclaimable =
/// total, nothing shared, one file) whose allocated bytes are its size
/// rounded up to 4 KiB, or none, needs nothing more: on a /usr copy every
/// regular file. Any other keeps one or two numbers more in a list by
/// index: a directory alone with its files (a directory's own figures
/// when nothing is shared) its blocks and files; a record that fits no
/// shape (shared extents, past 32 bits) its index in a side table of
/// whole figures. Times are kept apart ([`PackedTimes`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct CompactStats {
    apparent: Vec<u32>,
    shape: Vec<Shape>,
    /// (index, (a, b)) of the records whose shape needs them, by index.
    more: Vec<(u32, (u32, u32))>,
    rest: StatsTable,
    time: PackedTimes,
}

/// What a record's figures are, beside its apparent size; `(a, b)` are its
/// numbers in [`CompactStats::more`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// A file alone, its size rounded up to 4 KiB allocated.
    Round,
    /// A file alone, nothing allocated.
    Zero,
    /// A file alone, `a` blocks of 512 bytes allocated.
    File,
    /// A file whose bytes are all held with others (a copy in a
    /// snapshot): nothing of its own, its size rounded up to 4 KiB
    /// allocated.
    HeldRound,
    /// The same, `a` blocks of 512 bytes allocated.
    Held,
    /// Nothing but the apparent size.
    Empty,
    /// Nothing but the apparent size and `a` blocks allocated.
    Blocks,
    /// A directory alone with `b` files, `a` blocks allocated.
    Dir,
    /// Whole figures at index `a` of the side table.
    Rest,
}

/// A record's apparent size, shape and numbers.
type Encoded = (u32, Shape, Option<(u32, u32)>);

/// `apparent` rounded up to 4 KiB, in 512-byte blocks.
fn round_blocks(apparent: u32) -> u64 {
    u64::from(apparent).div_ceil(4096) * 8
}

impl CompactStats {
    /// Room for `n` records.
    pub(crate) fn with_capacity(n: usize) -> CompactStats {
        CompactStats {
            apparent: Vec::with_capacity(n),
            shape: Vec::with_capacity(n),
            ..CompactStats::default()
        }
    }

    /// `n` empty records.
    pub(crate) fn filled(n: usize) -> CompactStats {
        CompactStats {
            apparent: vec![0; n],
            shape: vec![Shape::Empty; n],
            ..CompactStats::default()
        }
    }

    /// The shape of `s` (without its time), its apparent size and numbers,
    /// or `None` when it needs the side table.
    fn encode(s: &Stats) -> Option<Encoded> {
        let apparent = u32::try_from(s.apparent).ok()?;
        if s.total % 512 != 0 {
            return None;
        }
        let blocks = u32::try_from(s.total / 512).ok()?;
        let t = s.total;
        let alone = s.exclusive == t && s.reclaimable == t && s.shared == 0;
        let nothing = s.exclusive == 0 && s.reclaimable == 0 && s.shared == 0;
        let (shape, more) = match (s.files, s.dirs) {
            (1, 0) if alone && u64::from(blocks) == round_blocks(apparent) => (Shape::Round, None),
            (1, 0) if alone && blocks == 0 => (Shape::Zero, None),
            (1, 0) if alone => (Shape::File, Some((blocks, 0))),
            (f, 1) if alone => (Shape::Dir, Some((blocks, u32::try_from(f).ok()?))),
            (1, 0) if nothing && u64::from(blocks) == round_blocks(apparent) => {
                (Shape::HeldRound, None)
            }
            (1, 0) if nothing => (Shape::Held, Some((blocks, 0))),
            (0, 0) if nothing && blocks == 0 => (Shape::Empty, None),
            (0, 0) if nothing => (Shape::Blocks, Some((blocks, 0))),
            _ => return None,
        };
        Some((apparent, shape, more))
    }

    /// Appends `s`.
    pub(crate) fn push(&mut self, s: &Stats) {
        self.apparent.push(0);
        self.shape.push(Shape::Empty);
        self.set(self.shape.len() - 1, s);
    }

    /// Record `i`'s numbers.
    fn more(&self, i: usize) -> (u32, u32) {
        get_in(&self.more, i).expect("a record of this shape has its numbers")
    }

    /// Record `i`. (Not inlined, as [`StatsTable::get`].)
    #[inline(never)]
    pub(crate) fn get(&self, i: usize) -> Stats {
        let apparent = u64::from(self.apparent[i]);
        let alone = |blocks: u64, files, dirs| Stats {
            apparent,
            total: blocks * 512,
            exclusive: blocks * 512,
            reclaimable: blocks * 512,
            files,
            dirs,
            ..Stats::default()
        };
        let s = match self.shape[i] {
            Shape::Round => alone(round_blocks(self.apparent[i]), 1, 0),
            Shape::Zero => alone(0, 1, 0),
            Shape::File => alone(self.more(i).0.into(), 1, 0),
            Shape::Dir => {
                let (blocks, files) = self.more(i);
                alone(blocks.into(), files.into(), 1)
            }
            Shape::HeldRound => Stats {
                apparent,
                total: round_blocks(self.apparent[i]) * 512,
                files: 1,
                ..Stats::default()
            },
            Shape::Held => Stats {
                apparent,
                total: u64::from(self.more(i).0) * 512,
                files: 1,
                ..Stats::default()
            },
            Shape::Empty => Stats {
                apparent,
                ..Stats::default()
            },
            Shape::Blocks => Stats {
                apparent,
                total: u64::from(self.more(i).0) * 512,
                ..Stats::default()
            },
            Shape::Rest => self.rest.get(self.more(i).0 as usize),
        };
        Stats {
            time: self.time.get(i),
            ..s
        }
    }

    /// The reclaimable bytes of record `i` (what [`CompactStats::get`] gives).
    pub(crate) fn reclaimable(&self, i: usize) -> u64 {
        match self.shape[i] {
            Shape::Round => round_blocks(self.apparent[i]) * 512,
            Shape::Zero | Shape::Empty | Shape::Blocks | Shape::HeldRound | Shape::Held => 0,
            Shape::File | Shape::Dir => u64::from(self.more(i).0) * 512,
            Shape::Rest => self.rest.reclaimable(self.more(i).0 as usize),
        }
    }

    /// Replaces record `i` by `s`.
    pub(crate) fn set(&mut self, i: usize, s: &Stats) {
        let untimed = Stats { time: None, ..*s };
        let (apparent, shape, more) = match Self::encode(&untimed) {
            Some(x) => x,
            None => {
                let k = match self.shape[i] {
                    // Reuse the old side record rather than leave it unused.
                    Shape::Rest => {
                        let k = self.more(i).0;
                        self.rest.set(k as usize, &untimed);
                        k
                    }
                    _ => {
                        let k = u32::try_from(self.rest.len()).expect("fewer than 4 billion");
                        self.rest.push(&untimed);
                        k
                    }
                };
                (0, Shape::Rest, Some((k, 0)))
            }
        };
        (self.apparent[i], self.shape[i]) = (apparent, shape);
        set_in(&mut self.more, i, more);
        self.time.set(i, self.shape.len(), s.time);
    }

    /// Keeps the first `n` records.
    pub(crate) fn truncate(&mut self, n: usize) {
        self.apparent.truncate(n);
        self.shape.truncate(n);
        self.more.retain(|x| (x.0 as usize) < n);
        self.time.truncate(n);
    }

    pub(crate) fn shrink_to_fit(&mut self) {
        self.apparent.shrink_to_fit();
        self.shape.shrink_to_fit();
        self.more.shrink_to_fit();
        self.rest.shrink_to_fit();
        self.time.shrink_to_fit();
    }

    /// Heap bytes held.
    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        self.apparent.capacity() * 4
            + self.shape.capacity()
            + self.more.capacity() * 12
            + self.rest.heap_bytes()
            + self.time.heap_bytes()
    }
}

/// [`Stats`] by index (a directory's rolled-up figures, a record that
/// does not fit [`CompactStats`]).
///
/// An entry whose exclusive and reclaimable bytes equal its total, with
/// nothing shared, or whose bytes are all shared and none reclaimable,
/// keeps 16 bytes: apparent size, allocated 512-byte blocks, files and
/// directories in 32 bits each (the top bit of the last says which). Any other keeps
/// `[WIDE, k]` there and its figures at `k` in a side table, 56 bytes.
/// Times are kept apart ([`PackedTimes`]), once one entry has one.
#[derive(Clone, Debug, Default)]
pub(crate) struct StatsTable {
    small: Vec<[u32; 4]>,
    wide: Vec<[u64; 7]>,
    times: PackedTimes,
}

/// In [`StatsTable::small`]'s first field: the figures are in `wide`.
const WIDE: u32 = u32::MAX;
/// In its last field's top bit: all its bytes are shared and none
/// reclaimable (an unchanged file of a snapshot), else all its own.
const SHARED: u32 = 1 << 31;

impl StatsTable {
    /// The number of entries.
    pub(crate) fn len(&self) -> usize {
        self.small.len()
    }

    /// The small form of `s`, if it fits.
    fn small(s: &Stats) -> Option<[u32; 4]> {
        let t = s.total;
        let shape = if s.exclusive == t && s.reclaimable == t && s.shared == 0 {
            0
        } else if s.exclusive == 0 && s.reclaimable == 0 && s.shared == t {
            SHARED
        } else {
            return None;
        };
        if t % 512 != 0 {
            return None;
        }
        let apparent = u32::try_from(s.apparent).ok().filter(|&a| a != WIDE)?;
        let fit = |x: u64| u32::try_from(x).ok();
        let dirs = fit(s.dirs).filter(|d| d & SHARED == 0)?;
        Some([apparent, fit(t / 512)?, fit(s.files)?, dirs | shape])
    }

    /// `n` empty entries, with room for `wide` whose figures do not fit
    /// 16 bytes ([`StatsTable::fits`]), made at once (not by doubling,
    /// which holds the old and the new room together).
    pub(crate) fn filled(n: usize, wide: usize) -> StatsTable {
        StatsTable {
            small: vec![[0; 4]; n],
            wide: Vec::with_capacity(wide),
            times: PackedTimes::default(),
        }
    }

    /// Whether `s` keeps 16 bytes here.
    pub(crate) fn fits(s: &Stats) -> bool {
        Self::small(s).is_some()
    }

    /// Appends `s`.
    pub(crate) fn push(&mut self, s: &Stats) {
        self.small.push([WIDE, u32::MAX, 0, 0]);
        self.set(self.small.len() - 1, s);
    }

    /// Replaces entry `i` by `s`.
    pub(crate) fn set(&mut self, i: usize, s: &Stats) {
        let old = self.small[i];
        self.small[i] = match Self::small(s) {
            Some(x) => x,
            None => {
                let sums = [
                    s.apparent,
                    s.total,
                    s.exclusive,
                    s.shared,
                    s.reclaimable,
                    s.files,
                    s.dirs,
                ];
                let k = match old {
                    [WIDE, k, ..] if (k as usize) < self.wide.len() => {
                        self.wide[k as usize] = sums;
                        k
                    }
                    _ => {
                        let k = u32::try_from(self.wide.len()).expect("fewer than 4 billion");
                        self.wide.push(sums);
                        k
                    }
                };
                [WIDE, k, 0, 0]
            }
        };
        self.times.set(i, self.small.len(), s.time);
    }

    /// Entry `i`. (Not inlined: figures are read in sorts' comparators,
    /// each sort's code made again for its comparator.)
    #[inline(never)]
    pub(crate) fn get(&self, i: usize) -> Stats {
        let s = match self.small[i] {
            [WIDE, k, ..] => {
                let [apparent, total, exclusive, shared, reclaimable, files, dirs] =
                    self.wide[k as usize];
                Stats {
                    apparent,
                    total,
                    exclusive,
                    shared,
                    reclaimable,
                    files,
                    dirs,
                    time: None,
                }
            }
            [apparent, blocks, files, dirs] => {
                let total = u64::from(blocks) * 512;
                let own = if dirs & SHARED == 0 { total } else { 0 };
                Stats {
                    apparent: u64::from(apparent),
                    total,
                    exclusive: own,
                    shared: total - own,
                    reclaimable: own,
                    files: u64::from(files),
                    dirs: u64::from(dirs & !SHARED),
                    time: None,
                }
            }
        };
        Stats {
            time: self.times.get(i),
            ..s
        }
    }

    /// Entry `i`'s reclaimable bytes.
    pub(crate) fn reclaimable(&self, i: usize) -> u64 {
        match self.small[i] {
            [WIDE, k, ..] => self.wide[k as usize][4],
            [_, _, _, dirs] if dirs & SHARED != 0 => 0,
            [_, blocks, ..] => u64::from(blocks) * 512,
        }
    }

    /// Gives back the spare capacity.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.small.shrink_to_fit();
        self.wide.shrink_to_fit();
        self.times.shrink_to_fit();
    }

    /// The heap bytes held.
    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        self.small.capacity() * 16 + self.wide.capacity() * 56 + self.times.heap_bytes()
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A file's figures, for the store's tests (here and in `nodes`).
    pub(in crate::records) fn stats(
        apparent: u64,
        total: u64,
        exclusive: u64,
        shared: u64,
        reclaimable: u64,
    ) -> Stats {
        Stats {
            apparent,
            total,
            exclusive,
            shared,
            reclaimable,
            files: 1,
            dirs: 0,
            time: None,
        }
    }

    /// Figures of every shape: plain, empty, a directory alone, shared,
    /// past 32 bits, not whole blocks, with far times.
    fn shapes() -> Vec<Stats> {
        let t = |secs, nanos| Some(Timestamp { secs, nanos });
        vec![
            stats(10, 4096, 4096, 0, 4096),
            Stats::default(),
            Stats {
                apparent: 3,
                total: 7,
                ..Stats::default()
            },
            Stats {
                apparent: 3,
                total: 512,
                ..Stats::default()
            },
            stats(10, 4096, 0, 4096, 0),
            stats(1 << 40, 4096, 4096, 0, 4096),
            stats(7, 1 << 42, 1 << 42, 0, 1 << 42),
            stats(7, 1000, 1000, 0, 1000),
            stats(u64::from(u32::MAX), 512, 512, 0, 512),
            Stats {
                apparent: u64::MAX,
                total: u64::MAX,
                ..Stats::default()
            },
            Stats {
                files: 3,
                dirs: 1,
                time: t(-5, 7),
                ..stats(1, 1024, 1024, 0, 1024)
            },
            Stats {
                files: 0,
                dirs: 1,
                ..stats(6, 4096, 4096, 0, 4096)
            },
            Stats {
                files: u64::from(u32::MAX),
                dirs: 1,
                ..stats(6, 4096, 4096, 0, 4096)
            },
            Stats {
                files: u64::from(u32::MAX) + 1,
                dirs: 1,
                ..stats(6, 4096, 4096, 0, 4096)
            },
            stats(5000, 8192, 8192, 0, 8192),
            stats(5000, 16384, 16384, 0, 16384),
            stats(0, 0, 0, 0, 0),
            stats(0, 4096, 4096, 0, 4096),
            Stats {
                files: 5,
                dirs: 2,
                time: t(i64::MAX, 999_999_999),
                ..stats(6, 4096, 4096, 0, 4096)
            },
            Stats {
                time: t(1 << 33, 1),
                ..stats(6, 4096, 4096, 0, 4096)
            },
            Stats {
                time: t(-1, 0),
                ..stats(6, 4096, 4096, 0, 4096)
            },
            Stats {
                time: t(i64::from(FAR), 0),
                ..stats(6, 4096, 4096, 0, 4096)
            },
            Stats {
                time: t(i64::from(FAR) - 1, 999_999_999),
                ..stats(6, 4096, 4096, 0, 4096)
            },
            Stats {
                time: t(1_700_000_000, 2_000_000_000),
                ..Stats::default()
            },
            Stats {
                files: 1 << 33,
                dirs: 1 << 32,
                ..stats(6, 4096, 4096, 0, 4096)
            },
            // A copy in a snapshot: its own figures hold nothing of its own,
            // rolled up all its bytes are shared.
            Stats {
                files: 1,
                ..stats(10, 4096, 0, 0, 0)
            },
            Stats {
                files: 1,
                ..stats(10, 8192, 0, 0, 0)
            },
            Stats {
                files: 1,
                ..stats(10, 8192, 0, 8192, 0)
            },
            Stats {
                files: 40,
                dirs: 3,
                time: t(9, 9),
                ..stats(10, 1 << 20, 0, 1 << 20, 0)
            },
            Stats {
                files: 1,
                dirs: 1 << 31,
                ..stats(10, 8192, 0, 8192, 0)
            },
            Stats {
                files: 1,
                ..stats(10, 8192, 0, 4096, 0)
            },
            Stats {
                files: 1,
                ..stats(10, 8192, 0, 8192, 8192)
            },
        ]
    }

    /// Nanoseconds set out of index order (a browser rolls times up from
    /// the last node to the first) go into a column once the list holds
    /// [`OUT_OF_ORDER`], where each insertion would move the list's tail;
    /// set in order, as many stay a list. Every time comes back either way.
    #[test]
    fn times_set_out_of_order_go_into_a_column() {
        let n = 100_000;
        let t = |i: usize| Timestamp {
            secs: i as i64,
            nanos: i as u32 + 1,
        };
        let few = OUT_OF_ORDER + 100;
        for backwards in [false, true] {
            let mut times = PackedTimes::default();
            let order: Vec<usize> = match backwards {
                true => (0..few).rev().map(|k| k * 7).collect(),
                false => (0..few).map(|k| k * 7).collect(),
            };
            for &i in &order {
                times.set(i, n, Some(t(i)));
            }
            assert_eq!(!times.nanos.is_empty(), backwards, "backwards: {backwards}");
            for i in 0..few * 7 {
                let want = (i % 7 == 0).then(|| t(i));
                assert_eq!(times.get(i), want, "index {i}");
            }
        }
    }

    /// A copy in a snapshot keeps its own figures in 5 bytes (nothing of
    /// its own, its size rounded up allocated) or 17, and its rolled-up
    /// figures (all shared) in 16: with `-a`, every file of every
    /// snapshot is one.
    #[test]
    fn copies_keep_the_small_shapes() {
        let held = |total| Stats {
            files: 1,
            ..stats(10, total, 0, 0, 0)
        };
        let mut f = CompactStats::with_capacity(0);
        f.push(&held(4096));
        f.push(&held(8192));
        f.shrink_to_fit();
        assert_eq!(f.rest.len(), 0);
        assert_eq!(f.heap_bytes(), 2 * 5 + 12);
        let mut table = StatsTable::default();
        for total in [4096, 8192, 1 << 40] {
            table.push(&Stats {
                files: 1,
                ..stats(10, total, 0, total, 0)
            });
        }
        table.shrink_to_fit();
        assert_eq!(table.heap_bytes(), 3 * 16);
    }

    /// Every shape comes back as pushed, and a replaced record too,
    /// whatever it was before, in both stores.
    #[test]
    fn figures_round_trip() {
        let all = shapes();
        let mut f = CompactStats::with_capacity(0);
        let mut table = StatsTable::default();
        for s in &all {
            f.push(s);
            table.push(s);
        }
        for (i, s) in all.iter().enumerate() {
            assert_eq!(f.get(i), *s, "{i}");
            assert_eq!(f.reclaimable(i), s.reclaimable);
            assert_eq!(table.get(i), *s, "{i}");
            assert_eq!(table.reclaimable(i), s.reclaimable);
        }
        for i in 0..all.len() {
            for s in &all {
                let (mut g, mut t) = (f.clone(), table.clone());
                g.set(i, s);
                t.set(i, s);
                assert_eq!((g.get(i), t.get(i)), (*s, *s));
                for (j, u) in all.iter().enumerate() {
                    if j != i {
                        assert_eq!((g.get(j), t.get(j)), (*u, *u), "set {i} broke {j}");
                    }
                }
            }
        }
    }

    /// A file alone with its size rounded up to 4 KiB allocated and a time
    /// (the browser's modification time) keeps 9 bytes, a directory alone
    /// with its files 12 more; nanoseconds, where few times have them, 8
    /// more each; a rolled-up figure 20 with its time, 24 with nanoseconds;
    /// no time column until one has a time.
    #[test]
    fn compact_shapes_stay_small() {
        let t = |secs, nanos| Some(Timestamp { secs, nanos });
        let plain = |time| Stats {
            time,
            ..stats(100, 4096, 4096, 0, 4096)
        };
        let dir = Stats {
            files: 12,
            dirs: 1,
            ..plain(t(5, 0))
        };
        let mut f = CompactStats::with_capacity(0);
        f.push(&plain(None));
        assert!(f.time.is_empty());
        for i in 1..1000 {
            // One in ten with nanoseconds.
            f.push(&if i % 2 == 0 {
                plain(t(i, (i % 10 == 0) as u32))
            } else {
                dir
            });
        }
        f.shrink_to_fit();
        assert_eq!(f.rest.len(), 0);
        assert_eq!(f.heap_bytes(), 1000 * 9 + 500 * 12 + 99 * 8);
        assert_eq!(
            (f.get(0), f.get(7), f.get(8), f.get(10)),
            (plain(None), dir, plain(t(8, 0)), plain(t(10, 1)))
        );
        f.set(10, &plain(None));
        assert_eq!((f.get(10), f.get(20)), (plain(None), plain(t(20, 1))));
        let mut table = StatsTable::default();
        for i in 0..1000 {
            table.push(&Stats {
                files: 1000,
                dirs: 10,
                ..plain(t(1, i))
            });
        }
        table.shrink_to_fit();
        assert_eq!(table.heap_bytes(), 1000 * 24);
        assert_eq!(table.get(999).time, t(1, 999));
    }
}
