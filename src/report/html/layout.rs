//! Which entries the page draws, and where, for each of its three areas
//! ([`Area`]): read from the [`Tree`] itself, so that the page costs
//! memory in the entries it draws, not in the entries scanned.
//!
//! For each area the entries are taken largest first, a parent before its
//! children: a best-first walk from the top takes the largest entry seen so
//! far whose share of its parent's frame is at least [`MIN_AREA`] square
//! pixels, until [`BUDGET`] entries are taken. What a directory holds
//! beyond its drawn entries (its smaller entries and its own blocks) is
//! one rectangle, its rest. The page holds the union of the three choices,
//! each entry with its rectangle in each area it is drawn in.
//!
//! A directory's entries may add up to more than it: data shared between
//! them counts once in the directory's space on disk but once in each of
//! them, and a hard link likewise in Total. Its frame then holds their sum,
//! so that each stays to scale with its siblings, and it has no rest.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use crate::figures::Stats;
use crate::records::NodeId;
use crate::report::squarify::{Rect, squarify};
use crate::tree::Tree;

/// The frame's width and height, in pixels.
pub(crate) const FRAME_W: u32 = 960;
/// See [`FRAME_W`].
pub(crate) const FRAME_H: u32 = 600;
/// The most entries drawn in one area.
pub(crate) const BUDGET: usize = 12_000;
/// The smallest area an entry is drawn with, in square pixels of its
/// parent's frame: smaller ones go into the parent's rest.
const MIN_AREA: f64 = 12.0;
/// Coordinates are written in tenths of a pixel.
const UNITS: f64 = 10.0;

/// What a rectangle's area stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Area {
    /// du's Total.
    Total = 0,
    /// The space the entry's data takes on disk: Exclusive + Shared, shared
    /// data counted once.
    Disk = 1,
    /// What deleting the entry frees.
    Reclaimable = 2,
}

impl Area {
    /// The three, in the order the page lists them.
    pub(crate) const ALL: [Area; 3] = [Area::Total, Area::Disk, Area::Reclaimable];

    /// The name the page and `--html-area` use.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Area::Total => "total",
            Area::Disk => "disk",
            Area::Reclaimable => "reclaimable",
        }
    }

    /// The size of an entry with `f` in this area.
    pub(crate) fn size(self, f: &Stats) -> u64 {
        match self {
            Area::Total => f.total,
            Area::Disk => f.exclusive.saturating_add(f.shared),
            Area::Reclaimable => f.reclaimable,
        }
    }
}

/// Where an item is drawn in one area.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Place {
    /// The rectangle in the parent's frame, in [`UNITS`]: x, y, w, h.
    pub(crate) rect: [i64; 4],
    /// Its size in the area.
    pub(crate) size: u64,
    /// A rest: how many of the parent's entries it stands for.
    pub(crate) hidden: u64,
}

/// One item of the page: an entry, the top of several roots, or a rest.
#[derive(Debug)]
pub(crate) struct Item {
    /// The entry (`None`: a rest; [`NodeId::TOP`]: the top of several
    /// roots).
    pub(crate) node: Option<NodeId>,
    /// Its parent's index (`u32::MAX` for the top).
    pub(crate) parent: u32,
    /// Where it is drawn, in each area it is drawn in.
    pub(crate) place: [Option<Place>; 3],
}

/// The page's items, parents first, and how many entries the report has.
#[derive(Debug)]
pub(crate) struct Layout {
    pub(crate) items: Vec<Item>,
    /// The entries of the scan the page is of (within `-d`).
    pub(crate) entries: u64,
}

/// The entries listed under `id` (the roots under [`NodeId::TOP`]):
/// none below `max_depth`, none that du's rules hide.
fn listed(tree: &Tree, id: NodeId, max_depth: Option<u32>) -> impl Iterator<Item = NodeId> + '_ {
    let deeper = id != NodeId::TOP && max_depth.is_some_and(|d| tree.depth(id) >= d);
    let kids: &[NodeId] = if deeper { &[] } else { tree.children(id) };
    kids.iter().copied().filter(|&k| !tree.is_hidden(k))
}

/// The size of `id` in `area`; the top's is the sum of its roots'.
fn size_of(tree: &Tree, id: NodeId, area: Area, max_depth: Option<u32>) -> u64 {
    if id == NodeId::TOP {
        listed(tree, id, max_depth)
            .map(|r| area.size(&tree.figures(r)))
            .fold(0, u64::saturating_add)
    } else {
        area.size(&tree.figures(id))
    }
}

/// The entries the report lists, counted.
fn count(tree: &Tree, max_depth: Option<u32>) -> u64 {
    let mut stack: Vec<NodeId> = listed(tree, NodeId::TOP, max_depth).collect();
    let mut n = 0;
    while let Some(id) = stack.pop() {
        n += 1;
        stack.extend(listed(tree, id, max_depth));
    }
    n
}

/// An entry that may be drawn: its size, then (reversed) its depth, the
/// order its parent was taken in and its place among its siblings.
type Candidate = (u64, Reverse<(u32, u32, u32)>, NodeId);

/// The entries drawn in `area`, from `top` (a root, or [`NodeId::TOP`]).
fn select(tree: &Tree, top: NodeId, area: Area, max_depth: Option<u32>) -> Vec<NodeId> {
    let frame = f64::from(FRAME_W) * f64::from(FRAME_H);
    // Largest first; ties by depth, then by the order their parents were
    // taken in and their place among their siblings (by name), so that the
    // choice does not depend on how the scan numbered its nodes.
    let mut heap: BinaryHeap<Candidate> = BinaryHeap::new();
    let mut taken = Vec::new();
    // `depth`: the depth of `id`'s entries, carried down rather than found
    // by climbing, which would cost the depth at each entry.
    let push = |heap: &mut BinaryHeap<_>, id: NodeId, depth: u32, seq: u32| {
        let size = size_of(tree, id, area, max_depth);
        let sizes: Vec<(NodeId, u64)> = listed(tree, id, max_depth)
            .map(|k| (k, area.size(&tree.figures(k))))
            .collect();
        let sum = sizes.iter().map(|s| s.1).fold(0, u64::saturating_add);
        let whole = size.max(sum).max(1) as f64;
        for (k, (kid, s)) in sizes.into_iter().enumerate() {
            if s > 0 && s as f64 / whole * frame >= MIN_AREA {
                heap.push((s, Reverse((depth, seq, k as u32)), kid));
            }
        }
    };
    taken.push(top);
    push(&mut heap, top, u32::from(top != NodeId::TOP), 0);
    while taken.len() < BUDGET {
        let Some((_, Reverse((depth, _, _)), id)) = heap.pop() else {
            break;
        };
        taken.push(id);
        push(&mut heap, id, depth + 1, taken.len() as u32);
        keep_best(&mut heap, BUDGET - taken.len());
    }
    taken
}

/// Drops from `heap` all but its `room` best candidates once it holds
/// twice as many: with at most `room` entries left to take, one ranked
/// below `room` others can never be taken (each taken one is the best
/// left, and candidates pushed later only rank above or below it), and
/// the candidates are totally ordered, so the entries drawn are the same.
/// The heap then holds at most `2 × BUDGET` candidates, not every entry of
/// every directory taken (on four /usr copies, some 400,000).
fn keep_best(heap: &mut BinaryHeap<Candidate>, room: usize) {
    if heap.len() > 2 * room.max(1) {
        let mut v = std::mem::take(heap).into_vec();
        if room == 0 {
            v.clear();
        } else {
            v.select_nth_unstable_by(room - 1, |a, b| b.cmp(a));
            v.truncate(room);
        }
        *heap = BinaryHeap::from(v);
    }
}

/// Lays out the page of `tree` for the three areas.
pub(crate) fn layout(tree: &Tree, max_depth: Option<u32>) -> Layout {
    let roots: Vec<NodeId> = listed(tree, NodeId::TOP, max_depth).collect();
    let top = match roots[..] {
        [one] => one,
        _ => NodeId::TOP,
    };
    // Each drawn entry, with a bit for each area it is drawn in.
    let mut drawn: HashMap<NodeId, u8> = HashMap::new();
    for area in Area::ALL {
        for id in select(tree, top, area, max_depth) {
            *drawn.entry(id).or_default() |= 1 << area as u8;
        }
    }
    let full = [
        0,
        0,
        i64::from(FRAME_W) * UNITS as i64,
        i64::from(FRAME_H) * UNITS as i64,
    ];
    let mut items = vec![Item {
        node: Some(top),
        parent: u32::MAX,
        place: Area::ALL.map(|a| {
            Some(Place {
                rect: full,
                size: size_of(tree, top, a, max_depth),
                hidden: 0,
            })
        }),
    }];
    let mut at = 0;
    while at < items.len() {
        if let Some(id) = items[at].node {
            lay_out_children(tree, id, at, max_depth, &drawn, &mut items);
        }
        at += 1;
    }
    Layout {
        items,
        entries: count(tree, max_depth),
    }
}

/// Appends the drawn entries of item `at` (entry `id`), and its rest, with
/// their rectangles in each area.
fn lay_out_children(
    tree: &Tree,
    id: NodeId,
    at: usize,
    max_depth: Option<u32>,
    drawn: &HashMap<NodeId, u8>,
    items: &mut Vec<Item>,
) {
    let first = items.len();
    let mut listed_count = 0u64;
    for kid in listed(tree, id, max_depth) {
        listed_count += 1;
        if drawn.contains_key(&kid) {
            items.push(Item {
                node: Some(kid),
                parent: at as u32,
                place: [None; 3],
            });
        }
    }
    let kids = first..items.len();
    if kids.is_empty() {
        return;
    }
    let figures: Vec<Stats> = items[kids.clone()]
        .iter()
        .map(|i| tree.figures(i.node.expect("an entry")))
        .collect();
    let mut rest = [None; 3];
    let mut rects: Vec<[Option<Place>; 3]> = vec![[None; 3]; kids.len()];
    for area in Area::ALL {
        let a = area as usize;
        let Some(parent) = items[at].place[a] else {
            continue;
        };
        let shown: Vec<usize> = (0..kids.len())
            .filter(|&k| drawn[&items[first + k].node.expect("an entry")] & (1 << a) != 0)
            .collect();
        if shown.is_empty() {
            continue;
        }
        // (size, index among the kids; the rest is kids.len()).
        let mut sizes: Vec<(u64, usize)> =
            shown.iter().map(|&k| (area.size(&figures[k]), k)).collect();
        let sum = sizes.iter().map(|s| s.0).fold(0, u64::saturating_add);
        let left = parent.size.saturating_sub(sum);
        if left > 0 {
            sizes.push((left, kids.len()));
        }
        sizes.sort_by_key(|&(s, k)| (Reverse(s), k));
        let frame = Rect {
            x: 0.0,
            y: 0.0,
            w: f64::from(FRAME_W),
            h: f64::from(FRAME_H),
        };
        let totals: Vec<u64> = sizes.iter().map(|s| s.0).collect();
        for (&(size, k), r) in sizes.iter().zip(squarify(&totals, frame)) {
            let place = Some(Place {
                rect: units(&r),
                size,
                hidden: listed_count - shown.len() as u64,
            });
            match rects.get_mut(k) {
                Some(p) => p[a] = place,
                None => rest[a] = place,
            }
        }
    }
    for (item, place) in items[kids].iter_mut().zip(rects) {
        item.place = place.map(|p| p.map(|p| Place { hidden: 0, ..p }));
    }
    if rest.iter().any(Option::is_some) {
        items.push(Item {
            node: None,
            parent: at as u32,
            place: rest,
        });
    }
}

/// A rectangle in [`UNITS`], its edges rounded (so that neighbours still
/// touch).
fn units(r: &Rect) -> [i64; 4] {
    let u = |v: f64| (v * UNITS).round() as i64;
    let (x0, y0, x1, y1) = (u(r.x), u(r.y), u(r.x + r.w), u(r.y + r.h));
    [x0, y0, x1 - x0, y1 - y0]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Candidates with sizes from a small range (many ties, broken by the
    /// rest of the key), pushed in batches between pops: the entries taken
    /// with the heap cut to the room left are those taken without.
    #[test]
    fn keeping_the_best_takes_the_same_entries() {
        let mut seed = 7u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as u32
        };
        let budget = 50;
        let (mut kept, mut all) = (BinaryHeap::new(), BinaryHeap::new());
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for round in 0..budget as u32 {
            for k in 0..next() % 40 {
                let c: Candidate = (
                    u64::from(next() % 16),
                    Reverse((next() % 3, round, k)),
                    NodeId::new((round * 64 + k) as usize),
                );
                kept.push(c);
                all.push(c);
            }
            a.extend(kept.pop());
            b.extend(all.pop());
            keep_best(&mut kept, budget - a.len());
        }
        assert_eq!(a, b);
        assert!(kept.len() <= 2 * budget);
    }
}
