use super::*;
use crate::extents::SharedIndex;
use crate::records::{FileRec, NodeRec};

fn n(i: u32) -> NodeId {
    NodeId::new(i as usize)
}

fn rec(id: u32, parent: NodeId, depth: u32, name: &str, own: u64) -> NodeRec {
    NodeRec {
        order: 0,
        id: n(id),
        parent,
        depth,
        kind: Kind::Dir,
        leaf: false,
        name: name.as_bytes().into(),
        own: Stats {
            total: own,
            ..Stats::default()
        },
    }
}

fn link(ino: u64, node: u32, bytes: u64) -> Link {
    Link {
        ns: 0,
        entry: None,
        dev: 1,
        ino,
        nlink: 2,
        node: n(node),
        stats: Stats {
            total: bytes,
            exclusive: bytes,
            ..Stats::default()
        },
    }
}

/// top(0) -> r(1) -> {a(2) -> c(4), b(3)}
fn nodes() -> Vec<NodeRec> {
    vec![
        rec(0, NodeId::NONE, 0, "", 0),
        rec(1, n(0), 0, "r", 1),
        rec(2, n(1), 1, "a", 10),
        rec(3, n(1), 1, "b", 100),
        rec(4, n(2), 2, "c", 1000),
    ]
}

fn build(links: Vec<Link>) -> Tree {
    Tree::build(nodes(), links, &[], &Sweep::default(), |_| {
        Granularity::Block
    })
}

fn totals(t: &Tree) -> Vec<(String, u64)> {
    let mut v = Vec::new();
    t.visit::<()>(None, |e| {
        v.push((
            String::from_utf8_lossy(e.path).into_owned(),
            e.figures.total,
        ));
        Ok(())
    })
    .unwrap();
    v
}

/// top -> r(1) -> {z(2) -> {y(4), x(5)}, a(3)}: ids out of name order.
fn unsorted(sorted_depth: Option<u32>) -> Tree {
    let ns = vec![
        rec(0, NodeId::NONE, 0, "", 0),
        rec(1, n(0), 0, "r", 1),
        rec(2, n(1), 1, "z", 10),
        rec(3, n(1), 1, "a", 100),
        rec(4, n(2), 2, "y", 1000),
        rec(5, n(2), 2, "x", 10000),
    ];
    let rules = Rules {
        sorted_depth,
        ..Rules::default()
    };
    Tree::build_with(
        ns,
        vec![],
        &[],
        &Sweep::default(),
        |_| Granularity::Block,
        rules,
        &[],
    )
}

/// Children are sorted only as deep as asked; the figures and what the
/// report lists to that depth are the same as with every level sorted.
#[test]
fn children_sorted_to_the_depth_asked() {
    let (all, one) = (unsorted(None), unsorted(Some(1)));
    assert_eq!(all.children(n(1)), [n(3), n(2)]);
    assert_eq!(one.children(n(1)), [n(3), n(2)]);
    assert_eq!(all.children(n(2)), [n(5), n(4)]);
    // Left as the walk made them: not sorted.
    assert_eq!(one.children_of(n(2)), [n(4), n(5)]);
    for id in 1..6 {
        assert_eq!(all.figures(n(id)), one.figures(n(id)));
    }
    let listed = |t: &Tree| {
        let mut v = Vec::new();
        t.visit::<()>(Some(1), |e| {
            v.push(String::from_utf8_lossy(e.path).into_owned());
            Ok(())
        })
        .unwrap();
        v
    };
    assert_eq!(listed(&one), ["r/a", "r/z", "r"]);
    assert_eq!(listed(&all), listed(&one));
    assert_eq!(unsorted(Some(0)).roots(), [n(1)]);
}

/// Below the sorted depth, children cannot be asked for.
#[test]
#[should_panic(expected = "were not sorted")]
fn unsorted_children_are_refused() {
    let _ = unsorted(Some(1)).children(n(2));
}

/// A multiply-linked inode's exclusive is its mapped link's, below its
/// total (shared extents) or above it (root on Btrfs: an extent it
/// references in part counts whole), whichever link was mapped; its
/// other links say only their total.
#[test]
fn a_linked_inode_keeps_its_mapped_exclusive() {
    for on_disk in [3, 12] {
        let mut mapped = link(7, 4, 8);
        mapped.stats.exclusive = on_disk;
        for links in [vec![mapped, link(7, 3, 8)], vec![link(7, 3, 8), mapped]] {
            let t = build(links);
            let r = t.figures(n(1));
            assert_eq!((r.exclusive, r.reclaimable), (on_disk, on_disk));
            assert_eq!(t.figures(n(4)).exclusive, on_disk);
        }
    }
}

#[test]
fn rollup_in_du_order() {
    let t = build(vec![]);
    assert_eq!(
        totals(&t),
        [
            ("r/a/c".into(), 1000),
            ("r/a".into(), 1010),
            ("r/b".into(), 100),
            ("r".into(), 1111)
        ]
    );
}

#[test]
fn separate_dirs_leave_subdirectories_out_but_not_of_the_total() {
    let rules = Rules {
        du: false,
        separate_dirs: true,
        sorted_depth: None,
    };
    // Inode 7 linked in c and b: in each once, in r (their parent) not.
    let t = Tree::build_with(
        nodes(),
        vec![link(7, 4, 5), link(7, 3, 5)],
        &[],
        &Sweep::default(),
        |_| Granularity::Block,
        rules,
        &[],
    );
    assert_eq!(
        totals(&t),
        [
            ("r/a/c".into(), 1005),
            ("r/a".into(), 10),
            ("r/b".into(), 105),
            ("r".into(), 1)
        ]
    );
    assert_eq!(t.grand_total().total, 1116);
}

/// Regression: under -S, a hardlinked file listed with -a (its link
/// credited at its leaf) was left out of its directory's figure.
#[test]
fn separate_dirs_count_a_linked_leaf_in_its_directory() {
    let mut ns = nodes();
    let mut leaf = rec(5, n(4), 3, "f", 0);
    leaf.leaf = true;
    leaf.kind = Kind::File;
    ns.push(leaf);
    let rules = Rules {
        separate_dirs: true,
        ..Rules::default()
    };
    let t = Tree::build_with(
        ns,
        vec![link(7, 5, 5)],
        &[],
        &Sweep::default(),
        |_| Granularity::Block,
        rules,
        &[],
    );
    assert_eq!(t.figures(n(4)).total, 1005);
    assert_eq!(t.figures(n(5)).total, 5);
    assert_eq!(t.figures(n(2)).total, 10);
}

#[test]
fn hardlink_counted_once_per_directory() {
    // One inode linked in c and in b, another twice in c.
    let t = build(vec![
        link(7, 4, 5),
        link(7, 3, 5),
        link(8, 4, 3),
        link(8, 4, 3),
    ]);
    assert_eq!(
        totals(&t),
        [
            ("r/a/c".into(), 1008),
            ("r/a".into(), 1018),
            ("r/b".into(), 105),
            ("r".into(), 1119)
        ]
    );
    assert_eq!(t.grand_total().total, 1119);
}

#[test]
fn max_depth_prunes() {
    let t = build(vec![]);
    let mut v = Vec::new();
    t.visit::<()>(Some(1), |e| {
        v.push(String::from_utf8_lossy(e.path).into_owned());
        Ok(())
    })
    .unwrap();
    assert_eq!(v, ["r/a", "r/b", "r"]);
}

fn figures_of(t: &Tree) -> Vec<(String, u64, u64, u64)> {
    let mut v = Vec::new();
    t.visit::<()>(None, |e| {
        let f = e.figures;
        v.push((
            String::from_utf8_lossy(e.path).into_owned(),
            f.total,
            f.shared,
            f.reclaimable,
        ));
        Ok(())
    })
    .unwrap();
    v
}

fn file(id: u32, node: u32) -> FileRec {
    FileRec {
        id,
        node: n(node),
        ns: 0,
        dev: 1,
        ino: 100 + u64::from(id),
        linked: false,
    }
}

#[test]
fn clone_in_two_dirs_is_shared_once_and_reclaimable_at_their_ancestor() {
    // Files 0 (in c) and 1 (in b) map the same 40 bytes; file 2 (in c)
    // maps 8 bytes nobody else in the scan maps (shared outside).
    let idx = SharedIndex::new();
    idx.insert(0, 1000, 40, 0);
    idx.insert(0, 1000, 40, 1);
    idx.insert(0, 5000, 8, 2);
    let sweep = idx.into_units(|_| Granularity::Block);
    let files = [file(0, 4), file(1, 3), file(2, 4)];
    let mut ns = nodes();
    for n in &mut ns {
        n.own.reclaimable = n.own.total;
    }
    let t = Tree::build(ns, vec![], &files, &sweep, |_| Granularity::Block);
    assert_eq!(
        figures_of(&t),
        [
            ("r/a/c".into(), 1000, 48, 1000),
            ("r/a".into(), 1010, 48, 1010),
            ("r/b".into(), 100, 40, 100),
            ("r".into(), 1111, 48, 1111 + 40),
        ]
    );
}

#[test]
fn hardlink_reclaimable_only_where_all_links_lie() {
    // Inode 7 has links in c and b (nlink 2): reclaimable only at r.
    // Inode 9 has nlink 3 but two links seen: reclaimable nowhere.
    let mut l9 = link(9, 4, 2);
    l9.nlink = 3;
    let t = build(vec![link(7, 4, 5), link(7, 3, 5), l9, l9]);
    let r: Vec<(String, u64)> = figures_of(&t)
        .into_iter()
        .map(|(p, _, _, r)| (p, r))
        .collect();
    assert_eq!(
        r,
        [
            ("r/a/c".into(), 0),
            ("r/a".into(), 0),
            ("r/b".into(), 0),
            ("r".into(), 5)
        ]
    );
}

/// What `sdu -i` keeps per entry, as the walk hands it over (two
/// shards, gathered): a root, 1,000 directories of 100 files each,
/// none sharing. A regression of the browser's memory shows here, with
/// no timing in it.
#[test]
fn bytes_per_entry_stay_small() {
    let file = Stats::of_inode(Kind::File, 1000, 8);
    let mut recs = vec![
        rec(0, NodeId::NONE, 0, "", 0),
        rec(1, n(0), 0, "/some/root", 0),
    ];
    for d in 0..1000u32 {
        let dir = recs.len() as u32;
        let mut r = rec(dir, n(1), 1, &format!("directory{d:05}"), 4096);
        r.own = Stats::of_inode(Kind::Dir, 4096, 8);
        recs.push(r);
        for f in 0..100u32 {
            let id = recs.len() as u32;
            let mut r = rec(id, n(dir), 2, &format!("file-{f:04}.name"), 0);
            r.kind = Kind::File;
            r.leaf = true;
            r.order = f;
            r.own = file;
            recs.push(r);
            recs[dir as usize].own += file;
        }
    }
    let names: usize = recs.iter().map(|r| r.name.len()).sum();
    let len = recs.len();
    let (mut a, mut b) = (Nodes::default(), Nodes::default());
    for r in &recs {
        if r.id.index() % 3 == 0 {
            &mut a
        } else {
            &mut b
        }
        .push_with_id(r, &r.name);
    }
    let (t, sets) = Tree::build_with_sets(
        Nodes::gather(len, vec![a, b]),
        vec![],
        &[],
        &Sweep::default(),
        |_| Granularity::Block,
        Rules::default(),
        &[],
    );
    assert_eq!(t.figures(n(1)).total, 1000 * (4096 + 100 * 4096));
    assert_eq!(t.figures(n(5)).total, 4096);
    let per = (t.heap_bytes() + sets.heap_bytes() - names) as f64 / len as f64;
    // 17.25 bytes a file (parent, position, kind, name length, apparent
    // size and shape, place in its directory's list) and a directory
    // about 40 more (its blocks and files, its rolled-up figures, its
    // child list): 17.9 here.
    assert!(per < 19.0, "{per:.1} bytes per entry beside the names");
}

/// A leaf credited shared bytes alone keeps them in 32 bits
/// (`Acc::light`); one credited 4 GiB or more in all goes to a slot made
/// for it: the figures are the same either way.
#[test]
fn leaves_credited_shared_bytes_keep_them_whole() {
    const GIB: u64 = 1 << 30;
    // top(0) -> r(1) -> d(2) -> {f(3), g(4), h(5)}, the files -a leaves.
    let mut ns = vec![
        rec(0, NodeId::NONE, 0, "", 0),
        rec(1, n(0), 0, "r", 0),
        rec(2, n(1), 1, "d", 0),
    ];
    for (id, name) in [(3, "f"), (4, "g"), (5, "h")] {
        let mut r = rec(id, n(2), 2, name, 0);
        r.kind = Kind::File;
        r.leaf = true;
        ns.push(r);
    }
    // Every range is mapped once in the scan: shared with something
    // outside it. f: 4 KiB, then 40 bytes (inline data is not whole
    // sectors); g: 3 GiB twice (6 GiB: past 32 bits); h: 5 GiB at once.
    let idx = SharedIndex::new();
    idx.insert(0, 0, 4096, 0);
    idx.insert(0, 8192, 40, 0);
    idx.insert(0, 4 * GIB, 3 * GIB, 1);
    idx.insert(0, 8 * GIB, 3 * GIB, 1);
    idx.insert(0, 12 * GIB, 5 * GIB, 2);
    let sweep = idx.into_units(|_| Granularity::Block);
    let files = [file(0, 3), file(1, 4), file(2, 5)];
    let t = Tree::build(ns, vec![], &files, &sweep, |_| Granularity::Block);
    let shared = |id: u32| t.figures(n(id)).shared;
    assert_eq!(shared(3), 4096 + 40);
    assert_eq!(shared(4), 6 * GIB);
    assert_eq!(shared(5), 5 * GIB);
    assert_eq!(shared(2), 4096 + 40 + 11 * GIB);
    assert_eq!(shared(1), shared(2));
}
