//! Unit and property tests of the index and the sweep, against a naive
//! per-block model.

use super::index::SharedIndex;
use super::spill::Tuning;
use super::sweep::Sweep;
use crate::probe::Granularity;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::ops::Range;

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
fn encoded_extents_end_at_the_next_start() {
    // The same, indexed as FIEMAP reads compressed extents: from ENCODED
    // up. Files 1 and 2 lie one after the other on disk, file 3 is a
    // reflink copy of file 2's last extent (the same start, a shorter
    // length: the part it references).
    let e = super::sweep::ENCODED;
    let mut refs: Vec<_> = (0..4).map(|i| (0, e + i * K, 32 * K, 1)).collect();
    refs.extend((4..6).map(|i| (0, e + i * K, 32 * K, 2)));
    refs.push((0, e + 5 * K, 16 * K, 3));
    let s = sweep(&refs, Granularity::Extent);
    let u: Vec<_> = units(&s).into_iter().map(|u| (u.0, u.1, u.2)).collect();
    let mut want: Vec<_> = (0..5)
        .map(|i| (K, vec![1 + u32::from(i >= 4)], 1))
        .collect();
    want.push((32 * K, vec![2, 3], 2));
    assert_eq!(u, want);
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
    // Inserted after a question (as the holders found outside the scan
    // are): merged on the next one.
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
    #[expect(
        clippy::type_complexity,
        reason = "the tuples are the rows the sweep's segments and units are checked against"
    )]
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

/// A backup repository's shape (every block mapped by several files, in no
/// order): 16 bytes a mapping once the walk is over, at most twice that
/// while it runs (vectors grow by doubling); a map keyed by range takes
/// about four times that (docs/decisions.md, "Memory").
#[test]
fn bytes_per_mapping_stay_small() {
    use rayon::prelude::*;
    let (ranges, files) = (65_536u64, 4u32);
    let idx = SharedIndex::new();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    pool.install(|| {
        (0..files).into_par_iter().for_each(|f| {
            for r in 0..ranges {
                // Block r of file f is block (r * 7919 + f) of the full.
                let block = (r * 7919 + u64::from(f)) % ranges;
                idx.insert(0, block * 4096, 4096, f);
            }
        });
    });
    let mappings = (ranges * u64::from(files)) as f64;
    let during = idx.heap_bytes() as f64 / mappings;
    assert!(
        during <= 32.0,
        "{during:.1} bytes per mapping during the walk"
    );
    assert_eq!(idx.len(), ranges as usize);
    assert_eq!(idx.count(0, 4096, 4096), files);
    let after = idx.heap_bytes() as f64 / mappings;
    assert!(after <= 16.0, "{after:.1} bytes per mapping after it");
}

/// An index that spills as `t` says, filled by three threads, `late` of
/// `refs` inserted after a first question (as the holders found outside
/// the scan are).
fn spilling(refs: &[(u32, u64, u64, u32)], t: Tuning, late: usize) -> SharedIndex {
    use rayon::prelude::*;
    let idx = SharedIndex::with_tuning(t, std::env::temp_dir());
    let split = refs.len().saturating_sub(late);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    pool.install(|| {
        refs[..split]
            .par_iter()
            .with_max_len(3)
            .for_each(|&(fs, p, l, f)| idx.insert(fs, p, l, f));
    });
    let _ = idx.len();
    for &(fs, p, l, f) in &refs[split..] {
        idx.insert(fs, p, l, f);
    }
    idx
}

/// What an index answers but its sweep: its range count, its ranges per
/// space, and the count of each range of some mappings.
type Answers = (usize, Vec<Vec<(u64, u64)>>, Vec<u32>);

/// What `idx` answers but its sweep, `refs` its counts asked.
fn answers(idx: &SharedIndex, refs: &[(u32, u64, u64, u32)]) -> Answers {
    let counts = refs
        .iter()
        .map(|&(fs, p, l, _)| idx.count(fs, p, l))
        .collect();
    (
        idx.len(),
        (0..3).map(|fs| idx.ranges_in(fs)).collect(),
        counts,
    )
}

fn tuning_strategy() -> impl Strategy<Value = Tuning> {
    (0u64..400, 2usize..5, 1usize..6, 1usize..4).prop_map(|(budget, fan_in, fence, buf)| Tuning {
        budget,
        buf: buf * 16 + 3,
        fan_in,
        fence,
        min_shard: 0,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Spilled at any budget, merged any number of runs at a time, read
    /// back through any buffer: the same answers and the same sweep as in
    /// memory, mappings in whole sectors or not.
    #[test]
    fn spilled_index_matches_in_memory(
        refs in refs_strategy(),
        odd in prop::collection::vec((0u32..2, 0u64..200, 1u64..5000, 0u32..6), 0..8),
        t in tuning_strategy(),
        late in 0usize..6,
    ) {
        let mut all: Vec<_> = refs.iter().map(|&(fs, p, l, f)| (fs, p * K, l * K, f)).collect();
        all.extend(odd.iter().map(|&(fs, p, l, f)| (fs, p * K + 100, l, f)));
        let mem = SharedIndex::new();
        for &(fs, p, l, f) in &all {
            mem.insert(fs, p, l, f);
        }
        let spilled = spilling(&all, t, late);
        prop_assert_eq!(answers(&spilled, &all), answers(&mem, &all));
        for g in BOTH {
            let a = spilling(&all, t, late).into_units(|_| g);
            let b = sweep(&all, g);
            prop_assert_eq!(segs(&a), segs(&b), "{:?}", g);
            prop_assert_eq!(units(&a), units(&b), "{:?}", g);
        }
    }
}

/// A backup repository's shape at a budget of a few KiB: many runs from
/// four threads, merged two at a time (run buffers of 4 KiB fill the
/// budget), the same sweep as in memory.
#[test]
fn many_runs_merge_to_the_same_sweep() {
    let refs: Vec<(u32, u64, u64, u32)> = (0..20_000u64)
        .map(|i| {
            let block = (i * 7919) % 5000;
            (0, block * K, K * (1 + i % 3), (i % 17) as u32)
        })
        .collect();
    let t = Tuning::for_budget(8 << 10);
    assert_eq!(t.fan_in, 2);
    let idx = spilling(&refs, t, 10);
    let want = answers(
        &{
            let m = SharedIndex::new();
            refs.iter().for_each(|&(fs, p, l, f)| m.insert(fs, p, l, f));
            m
        },
        &refs,
    );
    assert_eq!(answers(&idx, &refs), want);
    let written = idx.spilled();
    // 20,000 mappings of 16 bytes, in runs of at most 4 KiB: 80 at least,
    // and the merges of them.
    assert!(written.runs > 80, "{written:?}");
    assert!(written.bytes > 2 * 20_000 * 16, "{written:?}");
    for g in BOTH {
        let a = spilling(&refs, t, 10).into_units(|_| g);
        let b = sweep(&refs, g);
        assert_eq!(segs(&a), segs(&b));
        assert_eq!(units(&a), units(&b));
    }
}

/// Past its budget, the index holds about the budget: the rest is in the
/// file.
#[test]
fn a_spilling_index_holds_its_budget() {
    let idx = SharedIndex::with_budget(64 << 10, std::env::temp_dir());
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    pool.install(|| {
        rayon::scope(|s| {
            for f in 0..2u32 {
                let idx = &idx;
                s.spawn(move |_| {
                    for b in 0..50_000u64 {
                        idx.insert(0, b * K, K, f);
                    }
                });
            }
        });
    });
    assert!(idx.heap_bytes() <= 64 << 10, "{}", idx.heap_bytes());
    assert!(idx.spilled().runs >= 100_000 * 16 / (64 << 10));
    assert_eq!(idx.len(), 50_000);
    let s = idx.into_units(|_| Granularity::Block);
    assert_eq!(segs(&s), [(50_000 * K, vec![0, 1], 2)]);
}
