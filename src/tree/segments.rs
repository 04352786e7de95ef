//! The sweep's shared bytes credited up the tree: each segment's bytes to
//! every node above the files that map it, once a node, the segments split
//! among the threads.
//!
//! On snapshots a segment's files are one file's copy in every snapshot,
//! and no two of their ancestor chains meet below the directory holding
//! the snapshots: each segment climbs every snapshot's full depth. The
//! climbs run on slots alone (a slot's parent's slot, its stamp, its
//! credit: three arrays as long as the directories), and each thread
//! credits its share of the segments into figures of its own, summed at
//! the end. Sums do not depend on the order of their terms, so neither do
//! the figures on the threads.

use super::acc::{Acc, OWN};
use super::union::FileLinks;
use crate::extents::Sweep;
use crate::records::{NodeId, Nodes};
use rayon::prelude::*;

/// No slot: above the top.
const NO: u32 = u32::MAX;

/// Segments a thread takes in one run, before the next run goes to the
/// next thread: neighbouring segments (neighbouring data) mostly lie in
/// the same directories, whose chains stay in the cache. The unit tests'
/// trees have a few segments: one a run, so that every thread has some.
const RUN: usize = if cfg!(test) { 1 } else { 256 };

/// Credits each segment's bytes as shared to every node above its files'
/// nodes, each node once a segment: a node that is not a leaf from itself
/// up, a leaf without a slot from its parent up (its own credit is
/// [`credit_leaves`]'). `stamp` (one a slot, none above `generation`) is
/// the caller's; `generation` is moved past every stamp written.
pub(super) fn credit(
    nodes: &Nodes,
    acc: &mut Acc,
    files: &FileLinks,
    sweep: &Sweep,
    (stamp, generation): (&mut Vec<u32>, &mut u32),
) {
    let up = slot_parents(nodes, acc);
    stamp.resize(acc.slots(), 0);
    let slots = acc.slots();
    let threads = threads(files, sweep, slots);
    let (slot, mine) = acc.narrow();
    let climb = |k: usize, shared: &mut [u64], stamp: &mut [u32], mut generation: u32| {
        let n = sweep.segment_count();
        let runs = (0..n).step_by(RUN).skip(k).step_by(threads);
        for i in runs.flat_map(|r| r..(r + RUN).min(n)) {
            generation = next(generation, stamp);
            let seg = sweep.segment(i);
            for &f in seg.files {
                for node in files.nodes(f) {
                    let mut s = slot[node.index()];
                    if s == OWN {
                        // A leaf without a slot: its parent's.
                        s = match nodes.parent(node) {
                            NodeId::NONE => NO,
                            p => slot[p.index()],
                        };
                    }
                    while s != NO && stamp[s as usize] != generation {
                        stamp[s as usize] = generation;
                        let x = &mut shared[s as usize];
                        *x = x.saturating_add(seg.bytes);
                        s = up[s as usize];
                    }
                }
            }
        }
        generation
    };
    let (last, others) = rayon::join(
        || climb(0, &mut *mine, stamp, *generation),
        || {
            (1..threads)
                .into_par_iter()
                .map(|k| {
                    let mut shared = vec![0u64; slots];
                    climb(k, &mut shared, &mut vec![0; slots], 0);
                    shared
                })
                .collect::<Vec<_>>()
        },
    );
    *generation = last;
    for other in others {
        for (x, y) in mine.iter_mut().zip(other) {
            *x = x.saturating_add(y);
        }
    }
}

/// How many threads credit the segments. Each but the first takes 12
/// bytes a slot (a stamp and a credit), and is given only when the
/// climbs' starting nodes number at least 4 a slot for each thread: a
/// tree with little sharing credits on one thread, with no room added
/// (100 snapshots that differ: 17 a slot). 4 threads at most.
fn threads(files: &FileLinks, sweep: &Sweep, slots: usize) -> usize {
    let starts: usize = (sweep.segments())
        .map(|seg| {
            seg.files
                .iter()
                .map(|&f| files.node_count(f))
                .sum::<usize>()
        })
        .sum();
    let wanted = if cfg!(test) {
        usize::MAX
    } else {
        starts / (4 * slots.max(1))
    };
    wanted.clamp(1, rayon::current_num_threads().clamp(1, 4))
}

/// The generation after `g`, the stamps cleared when the count wraps.
fn next(g: u32, stamp: &mut [u32]) -> u32 {
    if g == u32::MAX - 1 {
        stamp.fill(0);
        1
    } else {
        g + 1
    }
}

/// By slot: the slot of its node's parent, [`NO`] above a top. A parent
/// without a slot (a leaf with children, which no walk or saved scan
/// makes) is given one.
fn slot_parents(nodes: &Nodes, acc: &mut Acc) -> Vec<u32> {
    for id in nodes.ids().skip(1) {
        let p = nodes.parent(id);
        if !p.is_none() && acc.slot[p.index()] == OWN {
            acc.slot_of(nodes, p);
        }
    }
    let mut up = vec![NO; acc.slots()];
    for (i, &s) in acc.slot.iter().enumerate() {
        if s != OWN {
            up[s as usize] = match nodes.parent(NodeId::new(i)) {
                NodeId::NONE => NO,
                p => acc.slot[p.index()],
            };
        }
    }
    up
}

/// Credits each segment's bytes as shared to every leaf without a slot
/// among its files' nodes, once a leaf ([`Acc::credit_light`]). Leaves are
/// `-a`'s files: without `-a` there are none, and nothing is read.
pub(super) fn credit_leaves(nodes: &Nodes, acc: &mut Acc, files: &FileLinks, sweep: &Sweep) {
    // Slots made from here on are those of leaves credited here.
    let made = acc.slots() as u32;
    if acc.slot.iter().all(|&s| s != OWN) {
        return;
    }
    let mut lit: Vec<NodeId> = Vec::new();
    for seg in sweep.segments() {
        lit.clear();
        for &f in seg.files {
            lit.extend(files.nodes(f).filter(|&node| {
                let s = acc.slot[node.index()];
                nodes.leaf(node) && (s == OWN || s >= made)
            }));
        }
        lit.sort_unstable();
        lit.dedup();
        for &leaf in &lit {
            acc.credit_light(nodes, leaf, seg.bytes);
        }
    }
}
