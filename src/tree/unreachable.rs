//! Bytes on disk that no file references (btdu's "unreachable"), per
//! entry: as root on Btrfs, the parts of extents that a rewrite left
//! unreferenced while some other part of the extent is still referenced.
//! The filesystem keeps them until the extent's last reference goes; a
//! rewrite of the files (or `btrfs filesystem defragment`) gives them back.
//!
//! An extent a file alone references credits its unreachable bytes to the
//! file's node; a shared one, to the lowest common ancestor of the links of
//! every file referencing it. Every directory above a credit holds it too.
//! Few extents have such bytes, so the figure is kept only where it is not
//! zero.

use super::Tree;
use super::acc::lca;
use crate::records::Inode;
use crate::records::{Link, NodeId, Nodes};

/// What the walk found of unreachable bytes, before the roll-up.
#[derive(Clone, Debug, Default)]
pub(crate) struct Found {
    /// Bytes credited to a node: a file's extents that it alone
    /// references.
    pub(crate) own: Vec<(NodeId, u64)>,
    /// Shared extents: the files referencing each (ids in the index) and
    /// its unreachable bytes.
    pub(crate) shared: Vec<(Box<[u32]>, u64)>,
    /// Bytes of inodes counted once through their links: credited where
    /// their links meet.
    pub(crate) inodes: Vec<(Inode, u64)>,
}

/// Unreachable bytes per node, where not zero: credited (`own`, for saved
/// scans) and rolled up (`rolled`), each sorted by node.
#[derive(Clone, Debug, Default)]
pub(crate) struct Unreachable {
    pub(crate) own: Vec<(NodeId, u64)>,
    rolled: Vec<(NodeId, u64)>,
}

impl Unreachable {
    /// Credits what was `found`; `file_nodes(f)` are the nodes of the links
    /// of file `f`.
    pub(crate) fn credit<I: Iterator<Item = NodeId>>(
        nodes: &Nodes,
        found: &Found,
        links: &[Link],
        file_nodes: impl Fn(u32) -> I,
    ) -> Unreachable {
        let mut own = found.own.clone();
        // `links` is sorted by inode.
        for &(i, bytes) in &found.inodes {
            let lo = links.partition_point(|l| l.inode() < i);
            let hi = links.partition_point(|l| l.inode() <= i);
            let lca = links[lo..hi]
                .iter()
                .map(|l| l.node)
                .reduce(|a, b| lca(nodes, a, b));
            if let Some(at) = lca {
                own.push((at, bytes));
            }
        }
        for (files, bytes) in &found.shared {
            let lca = files
                .iter()
                .flat_map(|&f| file_nodes(f))
                .reduce(|a, b| lca(nodes, a, b));
            if let Some(at) = lca {
                own.push((at, *bytes));
            }
        }
        merge(&mut own);
        let mut rolled = Vec::with_capacity(own.len() * 4);
        for &(id, bytes) in &own {
            let mut n = Some(id);
            while let Some(x) = n {
                rolled.push((x, bytes));
                n = nodes.parent(x).some();
            }
        }
        merge(&mut rolled);
        Unreachable { own, rolled }
    }

    /// The unreachable bytes under node `id`.
    pub(crate) fn of(&self, id: NodeId) -> u64 {
        self.rolled
            .binary_search_by_key(&id, |r| r.0)
            .map_or(0, |i| self.rolled[i].1)
    }
}

/// Sorts by node and adds up each node's bytes.
fn merge(v: &mut Vec<(NodeId, u64)>) {
    v.sort_unstable_by_key(|r| r.0);
    v.dedup_by(|b, a| {
        let same = a.0 == b.0;
        if same {
            a.1 = a.1.saturating_add(b.1);
        }
        same
    });
}

impl Tree {
    /// The bytes on disk under node `id` that no file references (as root
    /// on Btrfs; 0 elsewhere).
    pub fn unreachable(&self, id: NodeId) -> u64 {
        self.unreachable.of(id)
    }

    /// The unreachable bytes credited to each node (not rolled up), for
    /// saved scans.
    pub(crate) fn unreachable_credits(&self) -> &[(NodeId, u64)] {
        &self.unreachable.own
    }
}
