//! `--snapshots`: the Btrfs subvolumes met in a scan, grouped by origin,
//! and what deleting each snapshot frees, alone and with every older
//! snapshot of the same origin ([`crate::tree::Sets::frees`]).
//!
//! A subvolume root is a directory with inode 256 on Btrfs; its identity
//! (uuid, parent uuid, creation time, read-only flag) is what the walk read
//! through the fd it opened the root by (`crate::walk::subvols`): nothing
//! here asks a name. A snapshot's origin is the subvolume it descends
//! from, followed up through the snapshots of snapshots the scan met: as
//! root, past deleted subvolumes (`crate::walk::subvols::OriginBy`);
//! without, by parent uuid alone, so that a snapshot of a deleted
//! subvolume or of one outside the scan is grouped by that uuid.

use rayon::prelude::*;

use crate::figures::{Bound, Stats, Timestamp};
use crate::records::NodeId;
use crate::tree::union::Frees;
use crate::tree::{Sets, Tree};
pub(crate) use crate::walk::subvols::OriginBy;
use crate::walk::subvols::{SubvolRoot, Subvols};

/// One subvolume root met in the scan.
#[derive(Clone, Debug)]
pub(crate) struct Subvolume {
    /// Its node.
    pub(crate) node: NodeId,
    /// Its path, from the PATH given.
    pub(crate) path: Vec<u8>,
    /// Its uuid.
    pub(crate) uuid: [u8; 16],
    /// The uuid of the subvolume it is a snapshot of (zero: none).
    pub(crate) parent: [u8; 16],
    /// Its creation time (`otime`).
    pub(crate) created: Timestamp,
    /// Whether it is read-only.
    pub(crate) read_only: bool,
    /// Its figures in the scan.
    pub(crate) figures: Stats,
    /// What deleting it alone frees.
    pub(crate) alone: Frees,
    /// What deleting it with every older snapshot of its origin frees
    /// (the origin itself: what it frees alone).
    pub(crate) with_older: Frees,
    /// What snapper or timeshift recorded of it, when it is one of theirs.
    pub(crate) layout: Option<crate::snapshot_layouts::Layout>,
    /// The subvolume it descends from, as the walk found it (zero: none):
    /// its parent, or as root the nearest alive past deleted ones.
    pub(crate) descends: [u8; 16],
    /// How that was found.
    pub(crate) origin_by: OriginBy,
}

/// The subvolumes of one origin: the origin (when in the scan), then its
/// snapshots oldest first.
#[derive(Clone, Debug)]
pub(crate) struct Group {
    /// The origin, when the scan met it.
    pub(crate) origin: Option<Subvolume>,
    /// The origin's uuid.
    pub(crate) uuid: [u8; 16],
    /// Its snapshots, oldest first.
    pub(crate) snapshots: Vec<Subvolume>,
    /// What deleting every snapshot frees.
    pub(crate) all: Frees,
}

/// The subvolume roots of `tree`, grouped by origin, with their figures:
/// those the walk met and read through their fds (`subvols`), never asked
/// again by name. Whether the walk met Btrfs is the second value.
pub(crate) fn groups(tree: &Tree, sets: &Sets, subvols: &Subvols) -> (Vec<Group>, bool) {
    // In the tree's order: by root, then by name at each level.
    let mut met: Vec<(Place<'_>, &SubvolRoot)> = subvols
        .roots
        .iter()
        .filter(|r| r.node.index() < tree.len() && !tree.is_hidden(r.node))
        .filter_map(|r| Some((names(tree, r.node)?, r)))
        .collect();
    met.sort_by(|a, b| a.0.cmp(&b.0));
    // Each subvolume's figures (a pass over the scan in a debug build's
    // check): on every CPU.
    let found: Vec<Subvolume> = met
        .par_iter()
        .map(|((_, names), r)| subvolume(tree, sets, names, r))
        .collect();
    // The origin of each: up through the parents the scan met.
    let origin_of = |s: &Subvolume| {
        let mut u = s.descends;
        let mut steps = 0;
        while let Some(p) = found.iter().find(|o: &&Subvolume| o.uuid == u) {
            if p.descends == [0; 16] || steps > found.len() {
                break;
            }
            u = p.descends;
            steps += 1;
        }
        u
    };
    let mut groups: Vec<Group> = Vec::new();
    for s in &found {
        let key = if s.descends == [0; 16] {
            s.uuid
        } else {
            origin_of(s)
        };
        let i = match groups.iter().position(|g| g.uuid == key) {
            Some(i) => i,
            None => {
                groups.push(Group {
                    origin: None,
                    uuid: key,
                    snapshots: Vec::new(),
                    all: Frees {
                        bytes: 0,
                        bound: Bound::EXACT,
                    },
                });
                groups.len() - 1
            }
        };
        if s.uuid == key {
            groups[i].origin = Some(s.clone());
        } else {
            groups[i].snapshots.push(s.clone());
        }
    }
    for g in &mut groups {
        g.snapshots
            .sort_by(|a, b| (a.created, &a.path).cmp(&(b.created, &b.path)));
        let ids: Vec<NodeId> = g.snapshots.iter().map(|s| s.node).collect();
        // Each snapshot with those older than it: every prefix in one pass.
        let older = sets.frees_prefixes(tree, &ids);
        debug_assert!(
            (1..=ids.len()).all(|k| older[k - 1] == sets.frees(tree, &ids[..k])),
            "the prefixes' figures are each prefix's"
        );
        for (s, f) in g.snapshots.iter_mut().zip(older) {
            s.with_older = f;
        }
        g.all = match g.snapshots.last() {
            Some(s) => s.with_older,
            None => sets.frees(tree, &ids),
        };
    }
    (groups, subvols.btrfs)
}

/// Where a node lies: its root's position among the roots, and the names
/// from that root down to it ([`names`]).
type Place<'t> = (usize, Vec<&'t [u8]>);

/// The position of the root of node `id` among the roots of `tree`, and
/// the names from that root (its path as given) down to `id`; `None` for
/// a node under no root.
fn names(tree: &Tree, id: NodeId) -> Option<Place<'_>> {
    let mut names = Vec::new();
    let mut at = id;
    while tree.depth(at) > 0 {
        names.push(tree.name(at));
        at = tree.parent(at)?;
    }
    let order = tree.roots().iter().position(|&r| r == at)?;
    names.push(tree.name(at));
    names.reverse();
    Some((order, names))
}

/// The path `names` make ([`names`]), from the PATH given.
fn path_of(names: &[&[u8]]) -> Vec<u8> {
    let mut path = Vec::new();
    for n in names {
        if !path.is_empty() && !path.ends_with(b"/") {
            path.push(b'/');
        }
        path.extend_from_slice(n);
    }
    path
}

/// Subvolume root `r`, as the walk read it, with its figures in `tree`.
/// What deleting it alone frees is its Reclaimable, which the roll-up
/// made: a debug build checks it against the sets' own query, a pass over
/// the scan for each subvolume.
fn subvolume(tree: &Tree, sets: &Sets, names: &[&[u8]], r: &SubvolRoot) -> Subvolume {
    let figures = tree.figures(r.node);
    let alone = Frees {
        bytes: figures.reclaimable,
        bound: tree.bound(r.node),
    };
    debug_assert_eq!(
        alone,
        sets.frees(tree, &[r.node]),
        "a subvolume's Reclaimable is what deleting it alone frees"
    );
    Subvolume {
        node: r.node,
        path: path_of(names),
        uuid: r.uuid,
        parent: r.parent,
        created: Timestamp {
            secs: r.created.0,
            nanos: r.created.1,
        },
        read_only: r.read_only,
        figures,
        alone,
        with_older: alone,
        layout: r.layout.clone(),
        descends: r.origin,
        origin_by: r.origin_by,
    }
}
