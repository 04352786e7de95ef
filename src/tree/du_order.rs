//! du's own counting rule, for `--du` mode: an inode counts once per run,
//! at the first of its links that du's traversal meets.
//!
//! du walks depth-first, each directory before its entries, the entries in
//! the order getdents returns them, the roots in the order given. The walk
//! is parallel, so it records each node's and each link's position among
//! its directory's entries ([`crate::records::NodeRec::order`], [`Link::entry`]); here the
//! position of a link in du's traversal is the sequence of those orders
//! from its root down to it, and sequences compare lexicographically (a
//! directory before its contents). Among the links of one inode, the
//! smallest counts. A node whose own inode was met earlier (a directory
//! given twice, a symlinked directory under `-L`, a `-a` file's other
//! hardlink) is hidden with everything below it: du skips it.

use crate::records::{Link, NodeId, Nodes};

/// The position of a link (or of a node, `entry` None) in du's traversal,
/// written into `out`.
fn position(nodes: &Nodes, node: NodeId, entry: Option<u32>, out: &mut Vec<u32>) {
    out.clear();
    out.extend(entry);
    let mut n = node;
    while n != NodeId::TOP && !n.is_none() {
        out.push(nodes.order(n));
        n = nodes.parent(n);
    }
    out.reverse();
}

/// Which links count, and which nodes du never shows.
pub(super) struct Counted {
    /// Per link (in the order given, sorted by inode): whether it counts.
    pub(crate) links: Vec<bool>,
    /// Per node: hidden, with everything below it.
    pub(crate) hidden: Vec<bool>,
}

/// Decides, for `links` sorted by inode, which link of each inode du
/// counts, and which nodes du skips.
pub(super) fn counted(nodes: &Nodes, links: &[Link]) -> Counted {
    let n = nodes.len();
    let mut hidden = vec![false; n];
    let mut first = vec![false; links.len()];
    let (mut best, mut cur) = (Vec::new(), Vec::new());
    // Directories first (their links are their own inode), so that the
    // files below a hidden directory are not picked.
    for pass in [true, false] {
        let mut start = 0;
        for group in links.chunk_by(|a, b| a.inode() == b.inode()) {
            let range = start..start + group.len();
            start += group.len();
            let is_dir_group = group
                .iter()
                .any(|l| l.entry.is_none() && !nodes.leaf(l.node));
            if is_dir_group != pass {
                continue;
            }
            let mut pick: Option<usize> = None;
            for (i, l) in range.clone().zip(group) {
                if under_hidden(nodes, &hidden, l) {
                    continue;
                }
                position(nodes, l.node, l.entry, &mut cur);
                if pick.is_none() || cur < best {
                    pick = Some(i);
                    std::mem::swap(&mut best, &mut cur);
                }
            }
            for (i, l) in range.zip(group) {
                if Some(i) == pick {
                    first[i] = true;
                } else if l.entry.is_none() && l.node != NodeId::TOP {
                    // The node is this inode met again: du skips it.
                    hidden[l.node.index()] = true;
                }
            }
        }
        // Hide everything below a hidden node: parents have smaller ids.
        for id in nodes.ids().skip(1) {
            let p = nodes.parent(id);
            if !p.is_none() && hidden[p.index()] {
                hidden[id.index()] = true;
            }
        }
    }
    Counted {
        links: first,
        hidden,
    }
}

/// Is the link inside a hidden node (its own node hidden, for a node's own
/// inode, counts only when the node itself was hidden by another inode)?
fn under_hidden(nodes: &Nodes, hidden: &[bool], l: &Link) -> bool {
    let start = if l.entry.is_none() {
        nodes.parent(l.node)
    } else {
        l.node
    };
    !start.is_none() && hidden[start.index()]
}
