//! Property test of the extent sweep and the tree's crediting against a
//! naive per-block model (docs/figures.md, "The figures" and "Reclaimable").
//!
//! Random small trees of directories hold random files, some of them
//! multiply linked (links in several directories, sometimes with links
//! outside the scan), each mapping random runs of blocks of a small physical
//! space (possibly the same block twice). Some blocks (XFS) or on-disk
//! extents (Btrfs) are also referenced from outside the scan. The records
//! are built as the walker builds them and fed through
//! `SharedIndex` → `Sweep` → `Tree::build`; every figure of every directory
//! (and of the top node) must equal what a brute-force model computes from
//! the definitions, and must not depend on the order of links, files,
//! inserts, file ids or directory ids.

use std::borrow::Cow;

use std::collections::BTreeMap;

use crate::extents::SharedIndex;
use crate::figures::{Kind, Stats};
use crate::probe::Granularity;
use crate::records::{CopyRec, FileRec, Link, NodeId, NodeRec, dev32};
use crate::tree::{Rules, Tree};
use proptest::prelude::*;

mod world;
use world::{MUnit, World};

/// Block size.
const B: u64 = 4096;
/// Blocks in the physical space.
const SPACE: u64 = 40;
const DEV: u64 = 7;
/// The model's own node ids are numbers: 0 is the top, as in the tree,
/// and the top's parent is none.
const MODEL_TOP: u32 = 0;
const MODEL_NONE: u32 = u32::MAX;
const FS: u32 = 0;

/// A file as generated: raw numbers, interpreted by [`World::new`].
#[derive(Clone, Debug)]
struct ModelFile {
    /// The directory of each link present in the scan (mod the dir count).
    links: Vec<u32>,
    /// Links outside the scan (`st_nlink` − links present).
    outside_links: u32,
    /// Mapped runs, raw (see [`World::new`]).
    runs: Vec<(u64, u64)>,
    /// Allocated 512-byte sectors besides the runs (never shared).
    extra_sectors: u64,
    size: u64,
}

#[derive(Clone, Debug)]
struct Scenario {
    /// For directories 2..: (raw parent, whether it is one more root).
    parents: Vec<(u32, bool)>,
    /// Per directory: (st_size, sectors) of its own inode.
    dirs: Vec<(u64, u64)>,
    files: Vec<ModelFile>,
    /// Btrfs: boundaries of the on-disk extents in the space.
    cuts: Vec<u64>,
    /// Blocks (XFS) or on-disk extents (Btrfs) also referenced outside the
    /// scan (raw).
    outside: Vec<u64>,
    /// Drives the shuffled build.
    seed: u64,
}

fn file_spec() -> impl Strategy<Value = ModelFile> {
    (
        prop::collection::vec(any::<u32>(), 1..=3),
        prop_oneof![6 => Just(0u32), 1 => 1u32..3],
        prop::collection::vec((0u64..1000, 0u64..1000), 0..=4),
        prop_oneof![Just(0u64), 0u64..24],
        0u64..200_000,
    )
        .prop_map(
            |(links, outside_links, runs, extra_sectors, size)| ModelFile {
                links,
                outside_links,
                runs,
                extra_sectors,
                size,
            },
        )
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (1usize..=12).prop_flat_map(|n| {
        (
            prop::collection::vec((any::<u32>(), prop::bool::weighted(0.08)), n - 1),
            prop::collection::vec((0u64..10_000, 0u64..16), n),
            prop::collection::vec(file_spec(), 0..=10),
            prop::collection::vec(1u64..SPACE, 0..12),
            prop::collection::vec(0u64..1000, 0..=3),
            any::<u64>(),
        )
            .prop_map(|(parents, dirs, files, cuts, outside, seed)| Scenario {
                parents,
                dirs,
                files,
                cuts,
                outside,
                seed,
            })
    })
}

/// xorshift64*, for the shuffled build.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            v.swap(i, self.below(i + 1));
        }
    }
}

/// Builds the records as the walker would and rolls them up. Without a
/// seed: canonical order (ids in model order, the first link mapped, one
/// insert per FIEMAP extent). With one: directory ids relabelled (parents
/// still before children), file ids permuted, another link mapped, links
/// and inserts shuffled, and (XFS) shared extents split at random points.
/// Returns, per model node, its figures and (for directories) its path as
/// `Tree::visit` printed it.
/// The sets of model nodes whose union's reclaimable is checked: every
/// pair, and the first three nodes together.
fn sets(n: u32) -> Vec<Vec<u32>> {
    let mut v: Vec<Vec<u32>> = Vec::new();
    for a in 1..=n {
        for b in a + 1..=n {
            v.push(vec![a, b]);
        }
    }
    if n >= 3 {
        v.push(vec![1, 2, 3]);
    }
    v
}

/// The figures of every node (the top first) and paths, and what deleting each
/// of [`sets`] frees by `Tree::frees`.
type Built = (Vec<(Stats, String)>, Vec<u64>);

/// `fold`: a file of one link whose shared extents are an earlier such
/// file's is recorded as a copy of it ([`CopyRec`]), as the walk
/// records a snapshot's unchanged files: no file record and no mapping
/// of its own.
fn build(w: &World, seed: Option<u64>, fold: bool) -> Built {
    let mut rng = seed.map(|s| Rng(s | 1));
    let n = w.nodes() as usize;
    // new_id[model id] = tree id.
    let mut new_id = vec![NodeId::TOP; n + 1];
    match &mut rng {
        None => (0..=n).for_each(|d| new_id[d] = NodeId::new(d)),
        Some(rng) => {
            // A random topological order.
            let mut ready: Vec<u32> = (1..=n as u32)
                .filter(|&d| w.parent[d as usize] == MODEL_TOP)
                .collect();
            let mut next = 1;
            while !ready.is_empty() {
                let d = ready.swap_remove(rng.below(ready.len()));
                new_id[d as usize] = NodeId::new(next);
                next += 1;
                ready.extend((1..=n as u32).filter(|&c| w.parent[c as usize] == d));
            }
            assert_eq!(next, n + 1);
        }
    }
    let mut nodes = vec![NodeRec::default(); n + 1];
    nodes[0] = NodeRec {
        order: 0,
        id: NodeId::TOP,
        parent: NodeId::NONE,
        depth: 0,
        kind: Kind::Dir,
        leaf: false,
        name: Box::default(),
        own: Stats::default(),
    };
    for d in 1..=n {
        let id = new_id[d];
        nodes[id.index()] = NodeRec {
            order: 0,
            id,
            parent: new_id[w.parent[d] as usize],
            depth: w.depth(d as u32),
            kind: if w.is_dir(d as u32) {
                Kind::Dir
            } else {
                Kind::File
            },
            leaf: !w.is_dir(d as u32),
            name: w.names[d].clone().into_bytes().into(),
            own: w.dir_inode[d],
        };
    }
    // File ids go to files with shared extents, in model order or permuted.
    let sharing: Vec<usize> = (0..w.files.len())
        .filter(|&i| w.shared_bytes(&w.files[i]) > 0)
        .collect();
    // The file each copy stands for, by index in `sharing`.
    let single = |i: usize| w.files[i].nlink == 1;
    let copy_of: Vec<Option<usize>> = (0..sharing.len())
        .map(|k| {
            let f = &w.files[sharing[k]];
            (fold && single(sharing[k])).then_some(())?;
            (0..k).find(|&j| {
                single(sharing[j]) && w.shared_extents(&w.files[sharing[j]]) == w.shared_extents(f)
            })
        })
        .collect();
    let kept = copy_of.iter().filter(|c| c.is_none()).count();
    let mut ids: Vec<u32> = (0..kept as u32).collect();
    if let Some(rng) = &mut rng {
        rng.shuffle(&mut ids);
    }
    // By index in `sharing`: its file id, if it has one.
    let mut id_of = vec![None; sharing.len()];
    let mut next = 0;
    for (k, c) in copy_of.iter().enumerate() {
        if c.is_none() {
            id_of[k] = Some(ids[next]);
            next += 1;
        }
    }
    let mut links = Vec::new();
    let mut files = vec![FileRec::default(); kept];
    let mut copies = Vec::new();
    let mut inserts: Vec<(u64, u64, u32)> = Vec::new();
    for (i, f) in w.files.iter().enumerate() {
        let ino = 1000 + i as u64;
        let shared = w.shared_bytes(f);
        let mapped_stats = f.inode.with_shared_extents(shared);
        let once = f.nlink > 1;
        let mapped = rng.as_mut().map_or(0, |r| r.below(f.links.len()));
        let node = new_id[f.links[mapped] as usize];
        if once {
            for (k, &l) in f.links.iter().enumerate() {
                links.push(Link {
                    ns: 0,
                    entry: None,
                    dev: DEV,
                    ino,
                    nlink: f.nlink,
                    node: new_id[l as usize],
                    stats: if k == mapped { mapped_stats } else { f.inode },
                });
            }
        } else {
            nodes[node.index()].own += mapped_stats;
            if nodes[node.index()].leaf {
                // A leaf is not rolled up: its directory holds it too.
                let p = nodes[node.index()].parent;
                nodes[p.index()].own += mapped_stats;
            }
        }
        let Some(k) = sharing.iter().position(|&s| s == i) else {
            continue;
        };
        if let Some(j) = copy_of[k] {
            copies.push(CopyRec {
                of: id_of[j].expect("a copy of a file with an id"),
                node,
                dev: dev32(DEV).expect("a small device number"),
            });
            continue;
        }
        let id = id_of[k].expect("not a copy");
        files[id as usize] = FileRec {
            id,
            node,
            ns: 0,
            dev: DEV,
            ino,
            linked: once,
        };
        for (s, l) in w.shared_extents(f) {
            match (&mut rng, w.g) {
                (Some(rng), Granularity::Block) => {
                    // Split at random points: the same blocks.
                    let mut b = s;
                    while b < s + l {
                        let len = 1 + rng.below((s + l - b) as usize) as u64;
                        inserts.push((b * B, len * B, id));
                        b += len;
                    }
                }
                _ => inserts.push((s * B, l * B, id)),
            }
        }
    }
    CopyRec::sort(&mut copies);
    if let Some(rng) = &mut rng {
        rng.shuffle(&mut links);
        rng.shuffle(&mut inserts);
    }
    let index = SharedIndex::new();
    for &(p, l, id) in &inserts {
        index.insert(FS, p, l, id);
    }
    let g = w.g;
    let sweep = index.into_units(|_| g);
    let held = crate::records::Copies::of_records(copies.clone());
    let how = crate::tree::Build {
        rules: Rules::default(),
        stops: &[],
        sets: true,
        exact: &crate::records::Exactness::default(),
        unreachable: &crate::tree::unreachable::Found::default(),
        copies: &held,
    };
    let (tree, kept) = Tree::roll_up(
        nodes,
        links,
        Cow::Owned(crate::records::Files::from_recs(files.clone())),
        Cow::Borrowed(&sweep),
        |_| g,
        how,
    );
    let kept = kept.expect("sets asked for").with_copies(held);
    // One entry marked frees what its own figure says (two code paths: the
    // crediting and the union query).
    for (d, &id) in new_id.iter().enumerate() {
        let marked: Vec<NodeId> = if id == NodeId::TOP {
            tree.roots().to_vec()
        } else {
            vec![id]
        };
        assert_eq!(
            kept.frees(&tree, &marked).bytes,
            tree.figures(id).reclaimable,
            "frees(node {d})"
        );
    }
    let freed: Vec<u64> = sets(n as u32)
        .iter()
        .map(|set| {
            let ids: Vec<NodeId> = set.iter().map(|&d| new_id[d as usize]).collect();
            // Each prefix of the set, in one pass, as it alone frees (the
            // set taken both ways round: a later entry may hold an earlier).
            for ids in [ids.clone(), ids.iter().rev().copied().collect()] {
                let each: Vec<_> = (1..=ids.len())
                    .map(|k| kept.frees(&tree, &ids[..k]))
                    .collect();
                assert_eq!(
                    kept.frees_prefixes(&tree, &ids),
                    each,
                    "prefixes of {ids:?}"
                );
            }
            kept.frees(&tree, &ids).bytes
        })
        .collect();
    let mut out: Vec<(Stats, String)> = (0..=n)
        .map(|d| (tree.figures(new_id[d]), String::new()))
        .collect();
    let mut seen = vec![0u32; n + 1];
    tree.visit::<()>(None, |e| {
        let d = new_id.iter().position(|&x| x == e.id).expect("a directory");
        assert_eq!(*e.figures, tree.figures(e.id));
        out[d].1 = String::from_utf8_lossy(e.path).into_owned();
        seen[d] += 1;
        Ok(())
    })
    .unwrap();
    assert!(
        seen[1..].iter().all(|&c| c == 1),
        "visited once each: {seen:?}"
    );
    (out, freed)
}

fn check(s: &Scenario, g: Granularity, all: bool) -> Result<(), TestCaseError> {
    let w = World::new(s, g, all);
    let (got, freed) = build(&w, None, false);
    // What deleting a set frees, against the model's union.
    for (set, &f) in sets(w.nodes()).iter().zip(&freed) {
        prop_assert_eq!(f, w.reclaimable_of(set), "{:?} -a {} set {:?}", g, all, set);
    }
    for d in 0..=w.nodes() {
        let (f, path) = &got[d as usize];
        let want = w.expect(d);
        prop_assert_eq!(f, &want, "{:?} -a {} node {} ({})", g, all, d, path);
        if d > 0 {
            prop_assert_eq!(path, &w.path(d));
        }
        prop_assert!(f.exclusive <= f.total, "{:?} node {}: {:?}", g, d, f);
        prop_assert!(
            f.reclaimable <= f.exclusive + f.shared,
            "{:?} node {}: {:?}",
            g,
            d,
            f
        );
        if d > 0 {
            let p = &got[w.parent[d as usize] as usize].0;
            prop_assert!(f.shared <= p.shared && f.reclaimable <= p.reclaimable);
        }
    }
    let shuffled = build(&w, Some(s.seed), false);
    let folded = build(&w, Some(s.seed), true);
    let (got, freed) = (got, freed);
    prop_assert_eq!(
        &(got.clone(), freed.clone()),
        &shuffled,
        "{:?} -a {}: order-dependent",
        g,
        all
    );
    prop_assert_eq!(
        (got, freed),
        folded,
        "{:?} -a {}: copies give other figures than files of their own",
        g,
        all
    );
    Ok(())
}

/// `s` with copies of some of its files: for each `(file, dir)` of
/// `copies`, one more file of one link in directory `dir` that maps
/// what file `file` maps, as a snapshot's unchanged file does.
fn with_copies(s: &Scenario, copies: &[(usize, u32)]) -> Scenario {
    let mut s = s.clone();
    for &(f, dir) in copies {
        if let Some(spec) = s.files.get(f % s.files.len().max(1)).cloned() {
            s.files.push(ModelFile {
                links: vec![dir],
                outside_links: 0,
                ..spec
            });
        }
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn model_block_granularity(s in scenario()) {
        check(&s, Granularity::Block, false)?;
        check(&s, Granularity::Block, true)?;
    }

    #[test]
    fn model_extent_granularity(s in scenario()) {
        check(&s, Granularity::Extent, false)?;
        check(&s, Granularity::Extent, true)?;
    }

    /// Files copied into other directories (snapshots of unchanged
    /// files): the model's figures, and the same whether each copy is
    /// a file of its own or a [`CopyRec`].
    #[test]
    fn model_with_copies(
        s in scenario(),
        copies in prop::collection::vec((any::<usize>(), any::<u32>()), 1..=6),
    ) {
        let s = with_copies(&s, &copies);
        for g in [Granularity::Block, Granularity::Extent] {
            check(&s, g, false)?;
            check(&s, g, true)?;
        }
    }
}

/// The generator keeps producing the cases the model is about: counts them
/// over 256 deterministic scenarios per granularity.
#[test]
fn model_generator_covers_the_cases() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    for g in [Granularity::Block, Granularity::Extent] {
        let mut runner = TestRunner::deterministic();
        let mut seen: BTreeMap<&str, u32> = BTreeMap::new();
        for _ in 0..256 {
            let s = scenario().new_tree(&mut runner).unwrap().current();
            let w = World::new(&s, g, false);
            let mut hit = |what: &'static str, yes: bool| {
                *seen.entry(what).or_default() += u32::from(yes);
            };
            let units = w.units();
            let deep = |d: u32| d != MODEL_TOP && w.parent[d as usize] != MODEL_TOP;
            let credited_at = |u: &MUnit| {
                (1..=w.dirs).find(|&d| {
                    deep(d) && u.eligible && u.files.iter().all(|&i| w.contained(&w.files[i], d))
                })
            };
            hit(
                "unit of 2+ files reclaimable below a root",
                units
                    .iter()
                    .any(|u| u.files.len() >= 2 && credited_at(u).is_some()),
            );
            hit(
                "unit of a hardlinked file (links in 2+ dirs) reclaimable below a root",
                units.iter().any(|u| {
                    credited_at(u).is_some()
                        && u.files.iter().any(|&i| {
                            let f = &w.files[i];
                            f.nlink > 1 && f.links.iter().any(|&l| l != f.links[0])
                        })
                }),
            );
            hit(
                "eligible unit of a file with links outside the scan",
                units.iter().any(|u| {
                    u.eligible
                        && u.files
                            .iter()
                            .any(|&i| (w.files[i].links.len() as u32) < w.files[i].nlink)
                }),
            );
            hit(
                "unit mapped once in the scan (shared outside)",
                units.iter().any(|u| u.mappings == 1),
            );
            hit(
                "internal clone (one file, eligible)",
                units.iter().any(|u| u.files.len() == 1 && u.eligible),
            );
            hit(
                "unit of 2+ files, one of them not contained anywhere",
                units.iter().any(|u| {
                    u.files.len() >= 2
                        && u.files
                            .iter()
                            .any(|&i| (w.files[i].links.len() as u32) < w.files[i].nlink)
                }),
            );
            hit(
                "several roots",
                (2..=w.dirs).any(|d| w.parent[d as usize] == MODEL_TOP),
            );
            hit("depth 3 or more", (1..=w.dirs).any(|d| w.depth(d) >= 3));
            if g == Granularity::Extent {
                hit(
                    "unit of 2+ distinct ranges",
                    units.iter().any(|u| u.ranges >= 2 && u.eligible),
                );
                hit(
                    "one file, 2+ ranges each mapped once (skipped)",
                    units
                        .iter()
                        .any(|u| u.files.len() == 1 && u.mappings >= 2 && !u.eligible),
                );
            }
        }
        eprintln!("{g:?}: {seen:#?}");
        for (what, n) in &seen {
            assert!(*n >= 5, "{g:?}: only {n} of 256 scenarios have: {what}");
        }
    }
}
