//! The sweep: stored shared ranges → elementary segments and reclaim units.
//!
//! - a **segment** is a maximal physical range mapped by one fixed multiset of
//!   (file, multiplicity); `shared` bytes are sums of segments;
//! - a **unit** is what the filesystem frees as a whole (see
//!   [`Granularity`]); `reclaimable` bytes are sums of units.
//!
//! Ranges are swept in order of (extent space, start); partial overlaps
//! (partial clones) are resolved here, which exact `(start, length)`
//! matching alone would double-count.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;

use crate::probe::Granularity;

/// One stored range in memory, before the sweep: 32 bytes, its references
/// inline when there are at most two of them.
pub(super) struct Interval {
    pub(super) start: u64,
    pub(super) end: u64,
    /// The number of references.
    pub(super) count: u32,
    /// The files when `count <= 2`; otherwise the offset of the `count`
    /// files in the pool, low half first.
    pub(super) refs: [u32; 2],
}

const _: () = assert!(size_of::<Interval>() == 32);

impl Interval {
    /// Its references, with multiplicity.
    pub(super) fn refs<'a>(&'a self, pool: &'a [u32]) -> &'a [u32] {
        let n = self.count as usize;
        if n <= 2 {
            &self.refs[..n]
        } else {
            let off = (u64::from(self.refs[1]) << 32 | u64::from(self.refs[0])) as usize;
            &pool[off..off + n]
        }
    }
}

/// Where encoded extents read by FIEMAP are indexed: their start address
/// plus this, a region of the extent space of their own
/// ([`clamp_encoded`]).
pub(crate) const ENCODED: u64 = 1 << 63;

/// The ranges `next` gives, those from [`ENCODED`] up each ended at the
/// next start above its own, if sooner.
///
/// FIEMAP on Btrfs gives a compressed extent as its start on disk and the
/// length of data it holds, not its size on disk, which only root can read:
/// ranges that overlap extents laid after it. Btrfs extents do not overlap
/// on disk, and every reference to a compressed extent gives its start, so
/// a range starting above another one's start lies in another extent: the
/// compressed extent ends there at the latest. Ended so, each range
/// overlaps only those of its own extent, and the sweep makes one unit of
/// each extent; left whole, one file's consecutive compressed extents, and
/// the next file's, would chain into one unit that counts every file as
/// referencing all of it.
fn clamp_encoded(
    mut next: impl FnMut(&mut Vec<u32>) -> Option<(u64, u64)>,
) -> impl FnMut(&mut Vec<u32>) -> Option<(u64, u64)> {
    // The ranges of one start, and the first of the next start.
    let mut held: std::collections::VecDeque<(u64, u64, Vec<u32>)> = Default::default();
    let mut ahead: Option<(u64, u64, Vec<u32>)> = None;
    let mut bound = u64::MAX;
    move |out: &mut Vec<u32>| {
        loop {
            if let Some((start, end, refs)) = held.pop_front() {
                out.extend_from_slice(&refs);
                return Some((start, end.min(bound)));
            }
            let (start, end, refs) = match ahead.take() {
                Some(r) => r,
                None => {
                    let mut refs = Vec::new();
                    let (s, e) = next(&mut refs)?;
                    (s, e, refs)
                }
            };
            if start < ENCODED {
                out.extend_from_slice(&refs);
                return Some((start, end));
            }
            held.push_back((start, end, refs));
            bound = loop {
                let mut refs = Vec::new();
                match next(&mut refs) {
                    None => break u64::MAX,
                    Some((s, e)) if s == start => held.push_back((s, e, refs)),
                    Some((s, e)) => {
                        ahead = Some((s, e, refs));
                        break s;
                    }
                }
            };
        }
    }
}

/// The sweep's working state, reused across filesystems.
#[derive(Default)]
pub(super) struct Sweeper {
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
    /// A sweeper whose output has room for `ranges` ranges: usually about
    /// one segment and one unit per range, and reserving spares the copies
    /// of growing the output arrays.
    pub(super) fn with_room(ranges: usize) -> Sweeper {
        let mut sweeper = Sweeper::default();
        sweeper.out.reserve(ranges);
        sweeper
    }

    /// Sweeps the ranges of extent space `fs` (after those of the spaces
    /// before it), which frees shared data as `g` says. `next` gives them
    /// in order of start: it fills its argument with a range's references
    /// and returns `(start, end)`, or `None` after the last.
    pub(super) fn sweep_space(
        &mut self,
        fs: u32,
        g: Granularity,
        next: impl FnMut(&mut Vec<u32>) -> Option<(u64, u64)>,
    ) {
        let encoded = match g {
            Granularity::Extent => self.sweep_fs(clamp_encoded(next), g),
            Granularity::Block => self.sweep_fs(next, g),
        };
        let end = self.out.unit_count();
        self.out.fs_spans.push((fs, end));
        self.out.encoded_from.push(encoded.unwrap_or(end));
    }

    /// The segments and units swept.
    pub(super) fn finish(self) -> Sweep {
        self.out
    }

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

    /// Sweeps the ranges of one filesystem, which `next` gives in order of
    /// start. Only the ranges open at the current position are held, each
    /// with its references, until it ends. Returns the first unit from
    /// [`ENCODED`] up, if any.
    fn sweep_fs(
        &mut self,
        mut next: impl FnMut(&mut Vec<u32>) -> Option<(u64, u64)>,
        g: Granularity,
    ) -> Option<usize> {
        let mut first_encoded = None;
        // The open ranges by end: (end, slot), their references in
        // `slots[slot]`; slots are reused, their capacity kept.
        let mut ends: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
        let mut slots: Vec<Vec<u32>> = Vec::new();
        let mut free: Vec<usize> = Vec::new();
        // The next range to start, its references in `files`.
        let mut files: Vec<u32> = Vec::new();
        let mut pending = next(&mut files);

        let mut open = 0u32; // ranges covering the current position
        let mut mappings = 0u64; // Σ multiplicities in `active`
        let mut prev = 0u64; // the last event position
        let mut started_at_prev = 0u32; // ranges that started at `prev`
        // The current run of overlapping ranges: its first segment, bytes,
        // references and ranges.
        let mut run = RunState::default();
        // Where the last segment of this filesystem ended, if any.
        let mut last_end: Option<u64> = None;

        loop {
            let next_end = ends.peek().map(|e| e.0.0);
            // A range ends after it starts: when nothing is open, the next
            // event is a start.
            let p = match (pending, next_end) {
                (Some((start, _)), Some(end)) => start.min(end),
                (Some((start, _)), None) => start,
                (None, Some(end)) => end,
                (None, None) => break,
            };
            if open > 0 && p > prev {
                let same_unit = g == Granularity::Block || self.out.seg_bytes.len() > run.first_seg;
                if last_end == Some(prev) && same_unit && self.active == self.last_ms {
                    // Same references as the adjacent segment before.
                    *self.out.seg_bytes.last_mut().expect("a segment") += p - prev;
                    if g == Granularity::Block {
                        self.out.grow_last_unit(p - prev, started_at_prev);
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
            while let Some(e) = ends.peek() {
                if e.0.0 != p {
                    break;
                }
                let slot = e.0.1;
                ends.pop();
                self.apply(&slots[slot], false);
                mappings -= slots[slot].len() as u64;
                free.push(slot);
                open -= 1;
            }
            if open == 0 && g == Granularity::Extent && run.ranges > 0 {
                self.close_run(&run);
                run = RunState::default();
            }
            started_at_prev = 0;
            while let Some((_, end)) = pending.filter(|r| r.0 == p) {
                if open == 0 && p >= ENCODED && first_encoded.is_none() {
                    first_encoded = Some(self.out.unit_count());
                }
                if open == 0 {
                    run = RunState {
                        first_seg: self.out.seg_bytes.len(),
                        ..RunState::default()
                    };
                    self.run_files.clear();
                }
                self.apply(&files, true);
                if g == Granularity::Extent {
                    self.run_files.extend(&files);
                }
                mappings += files.len() as u64;
                run.mappings += files.len() as u64;
                run.ranges += 1;
                open += 1;
                started_at_prev += 1;
                let slot = free.pop().unwrap_or_else(|| {
                    slots.push(Vec::new());
                    slots.len() - 1
                });
                std::mem::swap(&mut slots[slot], &mut files);
                ends.push(Reverse((end, slot)));
                files.clear();
                pending = next(&mut files);
                debug_assert!(pending.is_none_or(|r| r.0 >= p), "ranges out of order");
            }
            prev = p;
        }
        debug_assert!(self.active.is_empty() && open == 0);
        first_encoded
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
            [at(start), at(self.out.pool.len())]
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

/// Where a file list lies in [`Sweep`]'s pool: `start..end`.
type Span = [u32; 2];

/// A place in the pool, or a segment's index, in 32 bits: a sweep of
/// 2^32 file references would hold 16 GiB in its pool alone, past what a
/// scan can keep in memory anyway.
fn at(i: usize) -> u32 {
    u32::try_from(i).expect("a sweep of fewer than 2^32 file references and segments")
}

/// Saturates a reference count into a `u32`.
fn sat(x: u64) -> u32 {
    u32::try_from(x).unwrap_or(u32::MAX)
}

/// The result of the sweep: elementary segments and units, ordered by
/// filesystem index and physical address, in flat arrays.
///
/// # Memory
/// Per segment 20 bytes (length, mapping count, file-list bounds) plus 4 per
/// file. Per unit 8 bytes (its ranges, its segments' end) while every unit
/// is one segment with its figures, as every unit of a filesystem that
/// frees blocks is (XFS); once one is not, 28 bytes a unit, and 4 per file
/// when it spans more than one segment (a one-segment unit
/// shares its segment's list).
///
/// Public for the browser's unit tests (`src/browse/app/tests.rs`), which
/// build a tree by hand.
#[derive(Debug, Default, Clone)]
pub(crate) struct Sweep {
    /// The file lists of segments and units, back to back.
    pool: Vec<u32>,
    seg_bytes: Vec<u64>,
    seg_mappings: Vec<u32>,
    seg_files: Vec<Span>,
    /// Each unit's bytes, mappings and files, once some unit is not one
    /// segment with its figures (`whole_units`); before, all three are
    /// empty and each unit's are its segment's.
    unit_bytes: Vec<u64>,
    unit_mappings: Vec<u32>,
    unit_files: Vec<Span>,
    whole_units: bool,
    unit_ranges: Vec<u32>,
    /// One past the last segment of each unit; units cover the segments in
    /// order.
    unit_seg_end: Vec<u32>,
    /// Per filesystem, in index order: its index and one past its last unit.
    fs_spans: Vec<(u32, usize)>,
    /// Per entry of `fs_spans`: its first unit from [`ENCODED`] up (its
    /// end when none).
    encoded_from: Vec<usize>,
}

/// An elementary segment: a maximal physical range with one fixed multiset
/// of referencing files (adjacent ranges with the same multiset are merged,
/// within a unit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Segment<'a> {
    /// Length in bytes.
    pub(crate) bytes: u64,
    /// The files that map it, sorted, without duplicates.
    pub(crate) files: &'a [u32],
    /// The mappings of each of its blocks: Σ over `files` of how many times
    /// the file maps the block.
    pub(crate) mappings: u32,
}

/// A unit: data the filesystem frees only as a whole (see [`Granularity`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ReclaimUnit<'a> {
    /// Its size in bytes: the union of its segments.
    pub(crate) bytes: u64,
    /// The files that map some of it, sorted, without duplicates.
    pub(crate) files: &'a [u32],
    /// References to it seen in the scan, with multiplicity. `Block`: the
    /// mappings of each of its blocks (as [`Segment::mappings`]). `Extent`:
    /// Σ over the stored ranges of the run of the files mapping each.
    pub(crate) mappings: u32,
    /// The number of distinct stored `(physical, length)` ranges overlapping
    /// it (1 where they are known to be parts of one extent,
    /// [`Sweep::count_units_as_extents`]).
    ///
    /// On Btrfs, compressed extents are reported with their logical length
    /// from their start on disk, so consecutive compressed extents of one
    /// file overlap and form one run. `mappings > ranges` (some range mapped
    /// twice in the scan) is a stricter test than `mappings > 1` that such a
    /// run is shared inside the scan rather than with a snapshot outside it.
    pub(crate) ranges: u32,
    /// Its segments, as indices for [`Sweep::segment`].
    pub(crate) segments: Range<usize>,
}

impl ReclaimUnit<'_> {
    /// Whether the scan saw a single mapping of it: it is flagged shared, so
    /// the other reference is outside the scan, and deleting what the scan
    /// saw frees nothing.
    #[cfg(test)]
    pub(crate) fn referenced_once(&self) -> bool {
        self.mappings <= 1
    }
}

impl Sweep {
    /// Appends a segment with the files of the multiset `ms`.
    fn push_segment(&mut self, bytes: u64, ms: &[(u32, u32)], mappings: u32) {
        let start = self.pool.len();
        self.pool.extend(ms.iter().map(|&(f, _)| f));
        self.seg_files.push([at(start), at(self.pool.len())]);
        self.seg_bytes.push(bytes);
        self.seg_mappings.push(mappings);
    }

    /// Appends a unit whose files are `pool[files[0]..files[1]]` and whose
    /// last segment is `seg_end - 1`.
    fn push_unit(&mut self, bytes: u64, files: Span, mappings: u32, ranges: u32, seg_end: usize) {
        let first = self.unit_seg_end.last().map_or(0, |&e| e as usize);
        let one = seg_end == first + 1
            && (
                self.seg_bytes[first],
                self.seg_files[first],
                self.seg_mappings[first],
            ) == (bytes, files, mappings);
        if !one && !self.whole_units {
            self.write_units_whole();
        }
        if self.whole_units {
            self.unit_bytes.push(bytes);
            self.unit_files.push(files);
            self.unit_mappings.push(mappings);
        }
        self.unit_ranges.push(ranges);
        self.unit_seg_end.push(at(seg_end));
    }

    /// Every unit so far written out whole: a unit that is not one segment
    /// with its figures comes next.
    #[cold]
    fn write_units_whole(&mut self) {
        let n = self.unit_seg_end.len();
        self.unit_bytes.reserve_exact(n + 1);
        self.unit_files.reserve_exact(n + 1);
        self.unit_mappings.reserve_exact(n + 1);
        for &end in &self.unit_seg_end {
            let s = end as usize - 1;
            self.unit_bytes.push(self.seg_bytes[s]);
            self.unit_files.push(self.seg_files[s]);
            self.unit_mappings.push(self.seg_mappings[s]);
        }
        self.whole_units = true;
    }

    /// The last unit, of one segment, grown with that segment by `bytes`
    /// and `ranges` more ranges.
    fn grow_last_unit(&mut self, bytes: u64, ranges: u32) {
        let u = self.unit_ranges.len() - 1;
        if self.whole_units {
            self.unit_bytes[u] += bytes;
        }
        self.unit_ranges[u] += ranges;
    }

    /// Reserves room for `n` more segments and units.
    fn reserve(&mut self, n: usize) {
        self.pool.reserve(n);
        self.seg_bytes.reserve(n);
        self.seg_mappings.reserve(n);
        self.seg_files.reserve(n);
        self.unit_ranges.reserve(n);
        self.unit_seg_end.reserve(n);
    }

    /// Appends a segment read back from a saved scan: `bytes` long,
    /// mapped `mappings` times, by `files` (sorted, without duplicates).
    pub(crate) fn push_saved_segment(&mut self, bytes: u64, mappings: u32, files: &[u32]) {
        let start = self.pool.len();
        self.pool.extend_from_slice(files);
        self.seg_files.push([at(start), at(self.pool.len())]);
        self.seg_bytes.push(bytes);
        self.seg_mappings.push(mappings);
    }

    /// Appends a unit read back from a saved scan, ending before segment
    /// `seg_end`; `files` `None` when they are those of its one segment.
    /// The caller checks that `seg_end` grows and stays within the
    /// segments, and that a unit without files spans one segment.
    pub(crate) fn push_saved_unit(
        &mut self,
        bytes: u64,
        mappings: u32,
        ranges: u32,
        seg_end: usize,
        files: Option<&[u32]>,
    ) {
        let files = match files {
            Some(f) => {
                let start = self.pool.len();
                self.pool.extend_from_slice(f);
                [at(start), at(self.pool.len())]
            }
            None => self.seg_files[seg_end - 1],
        };
        self.push_unit(bytes, files, mappings, ranges, seg_end);
    }

    /// Ends the units of extent space `fs` before unit `end` (saved scans:
    /// in the order [`Sweep::fs_units`] gave them; the caller checks that
    /// `end` grows and stays within the units).
    pub(crate) fn end_saved_fs(&mut self, fs: u32, end: usize) {
        self.fs_spans.push((fs, end));
        self.encoded_from.push(end);
    }

    /// As [`Sweep::fs_units`], with each space's first unit of compressed
    /// extents read by FIEMAP ([`ENCODED`]): a unit of one such extent
    /// holds every reference to it the scan saw, since each gives the
    /// extent's start.
    pub(crate) fn fs_units_encoded(&self) -> impl Iterator<Item = (u32, Range<usize>, usize)> + '_ {
        self.fs_units()
            .zip(&self.encoded_from)
            .map(|((fs, r), &e)| (fs, r, e))
    }

    /// Counts each unit of extent space `space` as one stored range: what
    /// the tree search gives of a whole extent, every reference to it
    /// mapping that one range. For a space read by FIEMAP on a filesystem
    /// the Data Used proof covers (`walked.rs`): every extent is referenced
    /// whole, and no two indexed ranges touch, so each unit is one extent
    /// and its overlapping ranges are parts of it, not extents of their
    /// own. A unit of one file mapped twice is then freed with the file
    /// ([`crate::figures::unit_freeable`]).
    pub(crate) fn count_units_as_extents(&mut self, space: u32) {
        let spans: Vec<Range<usize>> = (self.fs_units())
            .filter(|(fs, _)| *fs == space)
            .map(|(_, r)| r)
            .collect();
        for r in spans {
            for n in &mut self.unit_ranges[r] {
                *n = 1;
            }
        }
    }

    /// The number of segments.
    pub(crate) fn segment_count(&self) -> usize {
        self.seg_bytes.len()
    }

    /// The units of each filesystem: its index and the range of unit
    /// indices (for [`Sweep::unit`]) swept from its ranges.
    pub(crate) fn fs_units(&self) -> impl Iterator<Item = (u32, Range<usize>)> + '_ {
        self.fs_spans.iter().enumerate().map(|(i, &(fs, end))| {
            let start = if i == 0 { 0 } else { self.fs_spans[i - 1].1 };
            (fs, start..end)
        })
    }

    /// The number of units.
    pub(crate) fn unit_count(&self) -> usize {
        self.unit_ranges.len()
    }

    /// Segment `i` (panics if `i >= segment_count()`).
    pub(crate) fn segment(&self, i: usize) -> Segment<'_> {
        let [a, b] = self.seg_files[i];
        Segment {
            bytes: self.seg_bytes[i],
            files: &self.pool[a as usize..b as usize],
            mappings: self.seg_mappings[i],
        }
    }

    /// Unit `i` (panics if `i >= unit_count()`).
    pub(crate) fn unit(&self, i: usize) -> ReclaimUnit<'_> {
        let first = if i == 0 {
            0
        } else {
            self.unit_seg_end[i - 1] as usize
        };
        let end = self.unit_seg_end[i] as usize;
        let (bytes, [a, b], mappings) = if self.whole_units {
            (
                self.unit_bytes[i],
                self.unit_files[i],
                self.unit_mappings[i],
            )
        } else {
            (
                self.seg_bytes[first],
                self.seg_files[first],
                self.seg_mappings[first],
            )
        };
        ReclaimUnit {
            bytes,
            files: &self.pool[a as usize..b as usize],
            mappings,
            ranges: self.unit_ranges[i],
            segments: first..end,
        }
    }

    /// The segments, by filesystem index and physical address.
    pub(crate) fn segments(&self) -> impl ExactSizeIterator<Item = Segment<'_>> + '_ {
        (0..self.segment_count()).map(|i| self.segment(i))
    }

    /// The units, by filesystem index and physical address.
    pub(crate) fn units(&self) -> impl ExactSizeIterator<Item = ReclaimUnit<'_>> + '_ {
        (0..self.unit_count()).map(|i| self.unit(i))
    }

    /// The size of the union of all indexed ranges, in bytes.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> u64 {
        self.seg_bytes
            .iter()
            .fold(0u64, |a, &b| a.saturating_add(b))
    }
}
