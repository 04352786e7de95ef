//! Bounded-time fuzzing of the code that turns FIEMAP replies into figures:
//! the extent flags ([`Extent::has_physical`], [`Extent::is_shared`]), the
//! shared-extent index and its sweep ([`SharedIndex::insert`],
//! [`SharedIndex::into_units`]) and the roll-up ([`Tree::build`]).
//!
//! Inputs are what a corrupt or hostile reply could hold: arbitrary flags,
//! overlapping and nested ranges, zero lengths, ranges that end at or would
//! wrap past `u64::MAX`. Each target runs proptest cases in rounds until its
//! time budget is spent (`SDU_FUZZ_SECS`, default 4 s per target), so CI
//! time stays bounded while a longer local run (`SDU_FUZZ_SECS=600`) digs
//! deeper; a failure is shrunk as usual. The number of executions is
//! printed (`cargo test fuzz -- --nocapture`).
//!
//! Every property is checked against a model computed independently in
//! `u128`, where nothing can overflow.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestCaseError, TestRunner};
use sdu_sys::fiemap::{self, Extent, FiemapExtent};

use crate::extents::{SharedIndex, Sweep};
use crate::figures::{Kind, Stats};
use crate::probe::Granularity;
use crate::records::{FileRec, Link, NodeId, NodeRec};
use crate::tree::Tree;

/// Cases per proptest round; rounds repeat until the budget is spent.
const ROUND: u32 = 64;

/// Runs `test` on values of `strategy` for the time budget; returns the
/// number of executions. Panics with the shrunk input on failure.
fn fuzz<S: Strategy>(
    name: &str,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) -> u64
where
    S::Value: std::fmt::Debug,
{
    let secs: f64 = std::env::var("SDU_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4.0);
    let budget = Duration::from_secs_f64(secs);
    let config = Config {
        cases: ROUND,
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..Config::default()
    };
    let start = Instant::now();
    let mut execs = 0u64;
    while execs == 0 || start.elapsed() < budget {
        // A runner counts its successes for good: one per round, each
        // freshly seeded.
        let mut runner = TestRunner::new(config.clone());
        if let Err(e) = runner.run(&strategy, &test) {
            panic!("fuzz target {name} failed after {execs}+ executions: {e}");
        }
        execs += u64::from(ROUND);
    }
    eprintln!(
        "fuzz {name}: {execs} executions in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    execs
}

/// A 64-bit value biased towards the edges: zero, small block multiples,
/// just below `u64::MAX`, and anything.
fn edge_u64() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => (0u64..64).prop_map(|b| b * 4096),
        2 => 0u64..100_000,
        2 => (0u64..100_000).prop_map(|d| u64::MAX - d),
        1 => (0u64..64).prop_map(|b| u64::MAX - b * 4096),
        1 => (0u64..64).prop_map(|b| (1u64 << 63) - b * 4096),
        1 => Just(0u64),
        1 => Just(u64::MAX),
        1 => any::<u64>(),
    ]
}

/// FIEMAP flags: the meaningful bits in any combination, or anything.
fn flags() -> impl Strategy<Value = u32> {
    let bits = [
        fiemap::FIEMAP_EXTENT_LAST,
        fiemap::FIEMAP_EXTENT_UNKNOWN,
        fiemap::FIEMAP_EXTENT_DELALLOC,
        fiemap::FIEMAP_EXTENT_ENCODED,
        fiemap::FIEMAP_EXTENT_DATA_ENCRYPTED,
        fiemap::FIEMAP_EXTENT_NOT_ALIGNED,
        fiemap::FIEMAP_EXTENT_DATA_INLINE,
        fiemap::FIEMAP_EXTENT_DATA_TAIL,
        fiemap::FIEMAP_EXTENT_UNWRITTEN,
        fiemap::FIEMAP_EXTENT_MERGED,
        fiemap::FIEMAP_EXTENT_SHARED,
    ];
    prop_oneof![
        // Mostly shared, so that the sweep has work.
        3 => proptest::sample::subsequence(bits.to_vec(), 0..=bits.len())
            .prop_map(|v| v.into_iter().fold(fiemap::FIEMAP_EXTENT_SHARED, |a, b| a | b)),
        2 => proptest::sample::subsequence(bits.to_vec(), 0..=bits.len())
            .prop_map(|v| v.into_iter().fold(0, |a, b| a | b)),
        1 => any::<u32>(),
    ]
}

/// Where `insert` ends a range: `physical + length`, clamped at `u64::MAX`.
fn clamped_end(physical: u64, length: u64) -> u128 {
    (u128::from(physical) + u128::from(length)).min(u128::from(u64::MAX))
}

/// The measure of the union of `[start, end)` ranges.
/// The ranges from `ENCODED` up each ended at the next start above its
/// own, as the sweep of an `Extent` space ends them.
fn encoded_clamped(v: Vec<(u128, u128)>) -> Vec<(u128, u128)> {
    let encoded = u128::from(crate::extents::sweep::ENCODED);
    let starts: BTreeSet<u128> = v.iter().map(|r| r.0).collect();
    v.into_iter()
        .map(|(s, e)| match starts.range(s + 1..).next() {
            Some(&n) if s >= encoded => (s, e.min(n)),
            _ => (s, e),
        })
        .collect()
}

fn union_len(mut v: Vec<(u128, u128)>) -> u128 {
    v.retain(|r| r.1 > r.0);
    v.sort_unstable();
    let mut total = 0;
    let mut cur: Option<(u128, u128)> = None;
    for (s, e) in v {
        match &mut cur {
            Some(c) if s <= c.1 => c.1 = c.1.max(e),
            _ => {
                if let Some(c) = cur {
                    total += c.1 - c.0;
                }
                cur = Some((s, e));
            }
        }
    }
    if let Some(c) = cur {
        total += c.1 - c.0;
    }
    total
}

#[test]
fn fuzz_fiemap_extent_flags() {
    const NO_PHYSICAL: u32 = fiemap::FIEMAP_EXTENT_UNKNOWN
        | fiemap::FIEMAP_EXTENT_DELALLOC
        | fiemap::FIEMAP_EXTENT_DATA_INLINE
        | fiemap::FIEMAP_EXTENT_DATA_TAIL;
    fuzz(
        "extent-flags",
        (flags(), edge_u64(), edge_u64(), edge_u64()),
        |(flags, logical, physical, length)| {
            let raw = FiemapExtent {
                fe_logical: logical,
                fe_physical: physical,
                fe_length: length,
                fe_flags: flags,
                ..FiemapExtent::default()
            };
            let e = Extent::from(&raw);
            prop_assert_eq!(
                e,
                Extent {
                    logical,
                    physical,
                    length,
                    flags
                }
            );
            // Inline, delalloc, unknown and tail extents have no disk
            // address: never shared, whatever else they carry.
            prop_assert_eq!(e.has_physical(), flags & NO_PHYSICAL == 0);
            prop_assert_eq!(
                e.is_shared(),
                flags & fiemap::FIEMAP_EXTENT_SHARED != 0 && flags & NO_PHYSICAL == 0
            );
            prop_assert_eq!(e.is_last(), flags & fiemap::FIEMAP_EXTENT_LAST != 0);
            Ok(())
        },
    );
}

/// `(fs, physical, length, file)` references, as the walker inserts them.
fn refs() -> impl Strategy<Value = Vec<(u32, u64, u64, u32)>> {
    let one = (0u32..3, edge_u64(), edge_u64(), 0u32..6);
    // Copies of earlier references (whole-file clones) and ranges nested
    // in them (partial clones) are the interesting overlaps.
    proptest::collection::vec(one, 0..24).prop_flat_map(|base| {
        let n = base.len();
        let derived = proptest::collection::vec((0..n.max(1), 0u64..8, 0u64..8, 0u32..6), 0..12);
        (Just(base), derived).prop_map(|(mut base, derived)| {
            if base.is_empty() {
                return base;
            }
            for (i, skip, cut, file) in derived {
                let (fs, p, l, _) = base[i];
                let p2 = p.saturating_add(skip * 4096);
                let l2 = l.saturating_sub(cut * 4096).saturating_sub(skip * 4096);
                base.push((fs, p2, l2, file));
            }
            base
        })
    })
}

/// What one filesystem's references should sweep into: its ranges
/// (`[start, end)`, clamped), its files, and its number of references.
type FsModel = (Vec<(u128, u128)>, BTreeSet<u32>, u64);

/// Checks the sweep of `refs` against a `u128` model.
fn check_sweep(refs: &[(u32, u64, u64, u32)], g: Granularity) -> Result<Sweep, TestCaseError> {
    let idx = SharedIndex::new();
    for &(fs, p, l, f) in refs {
        idx.insert(fs, p, l, f);
    }
    let distinct: BTreeSet<(u32, u64, u128)> = refs
        .iter()
        .filter(|r| clamped_end(r.1, r.2) > u128::from(r.1))
        .map(|r| (r.0, r.1, clamped_end(r.1, r.2)))
        .collect();
    prop_assert_eq!(idx.len(), distinct.len(), "distinct ranges stored");
    let sweep = idx.into_units(|_| g);

    // Per filesystem: the union of its ranges, and its files.
    let mut by_fs: BTreeMap<u32, FsModel> = BTreeMap::new();
    for &(fs, p, l, f) in refs {
        let end = clamped_end(p, l);
        if end > u128::from(p) {
            let e = by_fs.entry(fs).or_default();
            e.0.push((u128::from(p), end));
            e.1.insert(f);
            e.2 += 1;
        }
    }
    let fs_seen: Vec<u32> = sweep.fs_units().map(|(fs, _)| fs).collect();
    prop_assert_eq!(
        &fs_seen,
        &by_fs.keys().copied().collect::<Vec<_>>(),
        "filesystems of the sweep"
    );
    let mut next_unit = 0;
    let mut next_seg = 0;
    let mut all_bytes = 0u128;
    for (fs, units) in sweep.fs_units() {
        let (ranges, files, mappings) = by_fs.remove(&fs).expect("checked above");
        prop_assert_eq!(units.start, next_unit, "units of fs {} are contiguous", fs);
        next_unit = units.end;
        let mut seg_bytes = 0u128;
        let mut unit_bytes = 0u128;
        let mut fs_files = BTreeSet::new();
        let mut max_mappings = 0u64;
        for i in units {
            let u = sweep.unit(i);
            prop_assert!(u.bytes > 0, "empty unit {:?}", u);
            prop_assert!(!u.files.is_empty(), "unit without files {:?}", u);
            prop_assert!(
                u.files.windows(2).all(|w| w[0] < w[1]),
                "unit files {:?}",
                u
            );
            prop_assert!(u.ranges >= 1, "unit without ranges {:?}", u);
            prop_assert!(u.mappings as usize >= u.files.len(), "mappings {:?}", u);
            prop_assert_eq!(
                u.segments.start,
                next_seg,
                "segments of units are contiguous"
            );
            prop_assert!(!u.segments.is_empty(), "unit without segments");
            next_seg = u.segments.end;
            let mut in_unit = 0u128;
            let mut seg_files = BTreeSet::new();
            for s in u.segments.clone() {
                let seg = sweep.segment(s);
                prop_assert!(seg.bytes > 0, "empty segment {:?}", seg);
                prop_assert!(!seg.files.is_empty(), "segment without files {:?}", seg);
                prop_assert!(seg.files.windows(2).all(|w| w[0] < w[1]), "{:?}", seg);
                prop_assert!(seg.mappings as usize >= seg.files.len(), "{:?}", seg);
                in_unit += u128::from(seg.bytes);
                seg_files.extend(seg.files.iter().copied());
                max_mappings = max_mappings.max(u64::from(seg.mappings));
            }
            prop_assert_eq!(u128::from(u.bytes), in_unit, "unit = union of its segments");
            prop_assert_eq!(
                u.files.iter().copied().collect::<BTreeSet<_>>(),
                seg_files,
                "unit files = files of its segments"
            );
            if g == Granularity::Block {
                prop_assert_eq!(u.segments.len(), 1, "a block unit is one segment");
            }
            seg_bytes += in_unit;
            unit_bytes += u128::from(u.bytes);
            fs_files.extend(u.files.iter().copied());
        }
        let want = union_len(if g == Granularity::Extent {
            encoded_clamped(ranges)
        } else {
            ranges
        });
        prop_assert_eq!(
            seg_bytes,
            want,
            "segments of fs {} = union of its ranges",
            fs
        );
        prop_assert_eq!(unit_bytes, want, "units of fs {} = union of its ranges", fs);
        prop_assert_eq!(fs_files, files, "files of fs {}", fs);
        prop_assert!(max_mappings <= mappings, "more mappings than references");
        all_bytes += want;
    }
    prop_assert_eq!(
        next_unit,
        sweep.unit_count(),
        "units belong to a filesystem"
    );
    prop_assert_eq!(next_seg, sweep.segment_count(), "segments belong to a unit");
    if all_bytes <= u128::from(u64::MAX) {
        prop_assert_eq!(u128::from(sweep.bytes()), all_bytes, "Sweep::bytes");
    }
    Ok(sweep)
}

#[test]
fn fuzz_index_and_sweep() {
    fuzz(
        "index+sweep",
        (refs(), any::<bool>()),
        |(refs, per_extent)| {
            let g = if per_extent {
                Granularity::Extent
            } else {
                Granularity::Block
            };
            check_sweep(&refs, g).map(drop)
        },
    );
}

/// The union of the shared bytes of all filesystems can exceed `u64::MAX`
/// only with physical addresses no disk has; within one filesystem it never
/// does. `Sweep::bytes` must still not overflow.
#[test]
fn sweep_bytes_of_two_full_filesystems() {
    let idx = SharedIndex::new();
    for fs in 0..2 {
        idx.insert(fs, 0, u64::MAX, 1);
        idx.insert(fs, 0, u64::MAX, 2);
    }
    let sweep = idx.into_units(|_| Granularity::Block);
    let per_fs: Vec<u64> = sweep
        .fs_units()
        .map(|(_, r)| r.map(|i| sweep.unit(i).bytes).sum())
        .collect();
    assert_eq!(per_fs, [u64::MAX, u64::MAX]);
    // Saturating is the only sensible answer; a panic (debug) or a wrapped
    // sum (release) is not.
    assert_eq!(
        std::panic::catch_unwind(|| sweep.bytes()).ok(),
        Some(u64::MAX),
        "Sweep::bytes overflows"
    );
}

/// One file of a generated tree.
#[derive(Clone, Debug)]
struct FileSpec {
    /// The nodes its links lie in (several: a hardlinked inode).
    links: Vec<u32>,
    /// `st_nlink`: at least `links.len()`; more means links outside the scan.
    nlink: u32,
    blocks: u64,
    size: u64,
    fs: u32,
    /// `(physical, length, flags)` as FIEMAP returned them.
    extents: Vec<(u64, u64, u32)>,
}

#[derive(Clone, Debug)]
struct TreeSpec {
    /// Parent of node `i + 2` (node 1 is the root, 0 the virtual top).
    parents: Vec<u32>,
    files: Vec<FileSpec>,
    per_extent: bool,
}

fn tree_spec() -> impl Strategy<Value = TreeSpec> {
    (1usize..10).prop_flat_map(|dirs| {
        // Node 1 is the root; node i > 1 hangs under some node in 1..i.
        let parents = (2..=dirs as u32)
            .map(|i| (1..i).boxed())
            .collect::<Vec<_>>();
        let file = (
            proptest::collection::vec(1..=dirs as u32, 1..4),
            any::<bool>(),
            0u64..64,
            0u64..300_000,
            0u32..2,
            proptest::collection::vec((edge_u64(), edge_u64(), flags()), 0..5),
        )
            .prop_map(|(links, extra, blocks, size, fs, extents)| FileSpec {
                nlink: links.len() as u32 + u32::from(extra),
                links,
                blocks: blocks * 8,
                size,
                fs,
                extents,
            });
        (
            parents,
            proptest::collection::vec(file, 0..10),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(|(parents, mut files, per_extent, two_fs)| {
                // Addresses below 2^62, so that no figure (a sum over
                // filesystems and files) can exceed u64::MAX: ranges up to
                // u64::MAX are fuzzed in `fuzz_index_and_sweep`, and what
                // they do to the figures is `figures_saturate_at_u64_max`.
                for f in &mut files {
                    for e in &mut f.extents {
                        e.0 >>= 2;
                        e.1 >>= 2;
                    }
                    if !two_fs {
                        f.fs = 0;
                    }
                }
                TreeSpec {
                    parents,
                    files,
                    per_extent,
                }
            })
    })
}

/// Builds the walk's records for `spec` the way the walker does (one
/// mapped link per inode, the FIEMAP filter of `map_file`), rolls them up,
/// and checks every directory against a model.
fn check_tree(spec: &TreeSpec) -> Result<(), TestCaseError> {
    let id = |i: u32| NodeId::new(i as usize);
    let n = spec.parents.len() + 2;
    let mut parent = vec![NodeId::NONE, NodeId::TOP];
    parent.extend(spec.parents.iter().map(|&p| id(p)));
    let mut depth = vec![0u32; n];
    for i in 2..n {
        depth[i] = depth[parent[i].index()] + 1;
    }
    let mut nodes: Vec<NodeRec> = (0..n)
        .map(|i| NodeRec {
            order: 0,
            id: NodeId::new(i),
            parent: parent[i],
            depth: depth[i],
            kind: Kind::Dir,
            leaf: false,
            name: format!("d{i}").into_bytes().into(),
            own: if i == 0 {
                Stats::default()
            } else {
                Stats::of_inode(Kind::Dir, 4096, 8)
            },
        })
        .collect();
    let idx = SharedIndex::new();
    let mut links = Vec::new();
    let mut files = Vec::new();
    // Per file: its figures as the walker computes them, and its clamped
    // shared ranges.
    let mut model: Vec<(Stats, Vec<(u128, u128)>)> = Vec::new();
    for (k, f) in spec.files.iter().enumerate() {
        let mut shared_bytes = 0u64;
        let mut ranges = Vec::new();
        let mut file_id = None;
        for &(physical, length, flags) in &f.extents {
            let e = Extent {
                logical: 0,
                physical,
                length,
                flags,
            };
            // As `map_file` filters and counts them.
            if e.has_physical() && e.is_shared() && e.length > 0 {
                let file = *file_id.get_or_insert(files.len() as u32);
                idx.insert(f.fs, e.physical, e.length, file);
                shared_bytes = shared_bytes.saturating_add(e.length);
                ranges.push((u128::from(physical), clamped_end(physical, length)));
            }
        }
        let stats = Stats::of_inode(Kind::File, f.size, f.blocks).with_shared_extents(shared_bytes);
        let once = f.nlink > 1;
        let ino = 1000 + k as u64;
        if let Some(file_id) = file_id {
            files.push(FileRec {
                id: file_id,
                node: id(f.links[0]),
                ns: 0,
                dev: 1,
                ino,
                linked: once,
            });
        }
        if once {
            for (i, &node) in f.links.iter().enumerate() {
                // Only the mapped link knows the shared extents.
                let s = if i == 0 {
                    stats
                } else {
                    Stats::of_inode(Kind::File, f.size, f.blocks)
                };
                links.push(Link {
                    ns: 0,
                    entry: None,
                    dev: 1,
                    ino,
                    nlink: f.nlink,
                    node: id(node),
                    stats: s,
                });
            }
        } else {
            nodes[f.links[0] as usize].own += stats;
        }
        model.push((stats, ranges));
    }
    let g = if spec.per_extent {
        Granularity::Extent
    } else {
        Granularity::Block
    };
    let sweep = idx.into_units(|_| g);
    // Rolled up on one thread and on three: the same figures.
    let build = |threads| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build();
        let (nodes, links) = (nodes.clone(), links.clone());
        pool.expect("a thread pool")
            .install(|| Tree::build(nodes, links, &files, &sweep, |_| g))
    };
    let (tree, alone) = (build(3), build(1));
    for d in (0..n).map(NodeId::new) {
        prop_assert_eq!(tree.figures(d), alone.figures(d), "on 3 threads and on 1");
    }

    let under = |mut node: NodeId, top: NodeId| loop {
        if node == top {
            return true;
        }
        if node.is_none() || node == NodeId::TOP {
            return false;
        }
        node = parent[node.index()];
    };
    for d in (1..n).map(NodeId::new) {
        let got = tree.figures(d);
        let dirs_under = (1..n).map(NodeId::new).filter(|&x| under(x, d)).count() as u64;
        let mut want_total = 8 * 512 * u128::from(dirs_under);
        let mut want_excl = want_total;
        let mut want_files = 0;
        let mut contained_excl = want_total;
        let mut shared_by_fs: BTreeMap<u32, Vec<(u128, u128)>> = BTreeMap::new();
        for (f, (stats, ranges)) in spec.files.iter().zip(&model) {
            let here = if f.nlink > 1 {
                f.links.iter().any(|&l| under(id(l), d))
            } else {
                under(id(f.links[0]), d)
            };
            if !here {
                continue;
            }
            want_total += u128::from(stats.total);
            want_excl += u128::from(stats.exclusive);
            want_files += 1;
            let all_links_here =
                f.links.len() as u32 >= f.nlink.max(1) && f.links.iter().all(|&l| under(id(l), d));
            if all_links_here {
                contained_excl += u128::from(stats.exclusive);
            }
            shared_by_fs
                .entry(f.fs)
                .or_default()
                .extend(ranges.iter().copied());
        }
        let want_shared: u128 = shared_by_fs
            .into_values()
            .map(union_len)
            .sum::<u128>()
            .min(u128::from(u64::MAX));
        let ctx = || format!("node {d} of {spec:?}: {got:?}");
        prop_assert_eq!(u128::from(got.total), want_total, "total, {}", ctx());
        prop_assert_eq!(u128::from(got.exclusive), want_excl, "exclusive, {}", ctx());
        prop_assert_eq!(got.files, want_files, "files, {}", ctx());
        prop_assert_eq!(got.dirs, dirs_under, "dirs, {}", ctx());
        prop_assert_eq!(u128::from(got.shared), want_shared, "shared, {}", ctx());
        prop_assert!(got.exclusive <= got.total, "exclusive > total, {}", ctx());
        prop_assert!(
            u128::from(got.reclaimable) >= contained_excl,
            "reclaimable below the exclusive bytes of contained inodes, {}",
            ctx()
        );
        prop_assert!(
            u128::from(got.reclaimable) <= u128::from(got.exclusive) + u128::from(got.shared),
            "reclaimable > exclusive + shared, {}",
            ctx()
        );
        if d.index() > 1 {
            let p = tree.figures(parent[d.index()]);
            for (what, c, pv) in [
                ("total", got.total, p.total),
                ("exclusive", got.exclusive, p.exclusive),
                ("shared", got.shared, p.shared),
                ("reclaimable", got.reclaimable, p.reclaimable),
            ] {
                prop_assert!(c <= pv, "{} of a child above its parent's, {}", what, ctx());
            }
        }
    }
    prop_assert_eq!(
        *tree.grand_total(),
        tree.figures(id(1)),
        "top = the only root"
    );
    Ok(())
}

#[test]
fn fuzz_tree_build() {
    fuzz("tree", tree_spec(), |spec| check_tree(&spec));
}

/// Ranges that end at `u64::MAX` (only a corrupt FIEMAP reply has them)
/// make figures that are sums over filesystems, or of shared and exclusive
/// bytes, exceed `u64::MAX`: they must saturate, not overflow (a panic in a
/// debug build, a wrapped figure in a release build).
#[test]
fn figures_saturate_at_u64_max() {
    let full = FileSpec {
        links: vec![1],
        nlink: 1,
        blocks: 8,
        size: 4096,
        fs: 0,
        extents: vec![(0, u64::MAX, fiemap::FIEMAP_EXTENT_SHARED)],
    };
    // One filesystem: reclaimable = the unit (u64::MAX) + exclusive bytes.
    let clone = FileSpec {
        extents: vec![],
        ..full.clone()
    };
    // Two filesystems: shared = u64::MAX twice.
    let other_fs = FileSpec {
        fs: 1,
        ..full.clone()
    };
    for files in [
        vec![full.clone(), full.clone(), clone],
        vec![full.clone(), other_fs],
    ] {
        let spec = TreeSpec {
            parents: vec![],
            files,
            per_extent: false,
        };
        match std::panic::catch_unwind(|| check_tree(&spec)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => panic!("{e}"),
            Err(_) => panic!("Tree::build overflows on {spec:?}"),
        }
    }
}
