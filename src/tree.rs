//! The roll-up: per-directory figures from the walk's records, and the
//! deterministic order in which they are reported.
//!
//! Every inode is counted once in every directory that holds at least one of
//! its links, which is what `du -s DIR` run on that directory alone prints.
//! Singly-linked inodes are summed bottom-up. A multiply-linked inode is
//! credited by climbing from each of its links' directories to the top,
//! stopping at a directory already credited for that inode, so that it
//! lands once on the union of its links' ancestor chains. Both are sums of
//! the same terms whatever the walk order, so the figures never depend on
//! the thread count.

use crate::figures::{Kind, Stats};
use crate::walk::{Link, NONE, NodeRec, TOP, Walk};

/// The walked tree with its rolled-up figures.
#[derive(Debug)]
pub struct Tree {
    nodes: Vec<NodeRec>,
    /// Figures of the subtree of each node.
    figures: Vec<Stats>,
    /// Children of each node, as ranges into `child_ids`.
    child_start: Vec<u32>,
    child_ids: Vec<u32>,
}

/// One entry as the reports see it.
#[derive(Debug)]
pub struct Entry<'a> {
    pub id: u32,
    /// The path as printed: the root as given, `/`, the names.
    pub path: &'a [u8],
    pub depth: u32,
    pub kind: Kind,
    pub figures: &'a Stats,
}

impl Tree {
    /// Rolls up the walk's records.
    pub fn build(walk: Walk) -> Tree {
        let Walk {
            nodes,
            mut links,
            roots: _,
        } = walk;
        let n = nodes.len();
        let mut figures: Vec<Stats> = nodes.iter().map(|r| r.own).collect();
        // A parent is always created before its children, so its id is
        // smaller: one pass from the highest id rolls everything up.
        for id in (1..n).rev() {
            let r = &nodes[id];
            if !r.leaf && r.parent != NONE {
                let f = figures[id];
                figures[r.parent as usize] += f;
            }
        }
        credit_links(&nodes, &mut figures, &mut links);
        let (child_start, child_ids) = children(&nodes);
        Tree {
            nodes,
            figures,
            child_start,
            child_ids,
        }
    }

    /// The figures of the virtual top node: all roots together, each inode
    /// counted once (the `-c` total).
    pub fn grand_total(&self) -> &Stats {
        &self.figures[TOP as usize]
    }

    /// The figures of node `id`.
    pub fn figures(&self, id: u32) -> &Stats {
        &self.figures[id as usize]
    }

    /// The root ids in the order given.
    pub fn roots(&self) -> &[u32] {
        self.children_of(TOP)
    }

    fn children_of(&self, id: u32) -> &[u32] {
        let a = self.child_start[id as usize] as usize;
        let b = self.child_start[id as usize + 1] as usize;
        &self.child_ids[a..b]
    }

    /// Visits entries in du order: post-order, siblings by name, roots in
    /// the order given. Entries deeper than `max_depth` are skipped, and
    /// `-a` leaves only when `leaves` is set (they are only recorded with
    /// `-a` anyway).
    pub fn visit<E>(
        &self,
        max_depth: Option<u32>,
        mut f: impl FnMut(&Entry<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut path: Vec<u8> = Vec::new();
        for &root in self.roots() {
            path.clear();
            // (node, next child index, path length before this node's name)
            let mut stack: Vec<(u32, usize, usize)> = Vec::new();
            path.extend_from_slice(&self.nodes[root as usize].name);
            stack.push((root, 0, 0));
            while let Some(top) = stack.last_mut() {
                let (id, next, _) = *top;
                let kids = self.children_of(id);
                let depth = self.nodes[id as usize].depth;
                let descend = max_depth.is_none_or(|d| depth < d);
                if descend && next < kids.len() {
                    top.1 += 1;
                    let child = kids[next];
                    let before = path.len();
                    if path.last() != Some(&b'/') {
                        path.push(b'/');
                    }
                    path.extend_from_slice(&self.nodes[child as usize].name);
                    stack.push((child, 0, before));
                    continue;
                }
                let (id, _, before) = stack.pop().expect("non-empty");
                let r = &self.nodes[id as usize];
                f(&Entry {
                    id,
                    path: &path,
                    depth: r.depth,
                    kind: r.kind,
                    figures: &self.figures[id as usize],
                })?;
                path.truncate(before);
            }
        }
        Ok(())
    }
}

/// Credits each multiply-linked inode once to every directory on the union
/// of its links' ancestor chains.
fn credit_links(nodes: &[NodeRec], figures: &mut [Stats], links: &mut [Link]) {
    if links.is_empty() {
        return;
    }
    links.sort_unstable_by_key(|l| (l.dev, l.ino, l.node));
    // stamp[node] = the last inode group credited to node (0 = none).
    let mut stamp: Vec<u32> = vec![0; nodes.len()];
    let mut group = 0u32;
    let mut i = 0;
    while i < links.len() {
        let key = (links[i].dev, links[i].ino);
        group += 1;
        let stats = links[i].stats;
        while i < links.len() && (links[i].dev, links[i].ino) == key {
            let mut node = links[i].node;
            while node != NONE && stamp[node as usize] != group {
                stamp[node as usize] = group;
                figures[node as usize] += stats;
                node = nodes[node as usize].parent;
            }
            i += 1;
        }
    }
}

/// Builds the child lists: siblings sorted by name, the roots in id order
/// (which is the order they were given).
fn children(nodes: &[NodeRec]) -> (Vec<u32>, Vec<u32>) {
    let n = nodes.len();
    let mut start = vec![0u32; n + 1];
    for r in nodes.iter().skip(1) {
        if r.parent != NONE {
            start[r.parent as usize + 1] += 1;
        }
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut ids = vec![0u32; start[n] as usize];
    for (id, r) in nodes.iter().enumerate().skip(1) {
        if r.parent != NONE {
            let p = r.parent as usize;
            ids[fill[p] as usize] = id as u32;
            fill[p] += 1;
        }
    }
    for p in 1..n {
        let (a, b) = (start[p] as usize, start[p + 1] as usize);
        if b - a > 1 {
            ids[a..b]
                .sort_unstable_by(|&x, &y| nodes[x as usize].name.cmp(&nodes[y as usize].name));
        }
    }
    (start, ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: u32, parent: u32, depth: u32, name: &str, own: u64) -> NodeRec {
        NodeRec {
            id,
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
            dev: 1,
            ino,
            nlink: 2,
            node,
            stats: Stats {
                total: bytes,
                ..Stats::default()
            },
        }
    }

    /// top(0) -> r(1) -> {a(2) -> c(4), b(3)}
    fn walk(links: Vec<Link>) -> Walk {
        Walk {
            nodes: vec![
                rec(0, NONE, 0, "", 0),
                rec(1, 0, 0, "r", 1),
                rec(2, 1, 1, "a", 10),
                rec(3, 1, 1, "b", 100),
                rec(4, 2, 2, "c", 1000),
            ],
            links,
            roots: vec![1],
        }
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

    #[test]
    fn rollup_in_du_order() {
        let t = Tree::build(walk(vec![]));
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
    fn hardlink_counted_once_per_directory() {
        // One inode linked in c and in b, another twice in c.
        let t = Tree::build(walk(vec![
            link(7, 4, 5),
            link(7, 3, 5),
            link(8, 4, 3),
            link(8, 4, 3),
        ]));
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
        let t = Tree::build(walk(vec![]));
        let mut v = Vec::new();
        t.visit::<()>(Some(1), |e| {
            v.push(String::from_utf8_lossy(e.path).into_owned());
            Ok(())
        })
        .unwrap();
        assert_eq!(v, ["r/a", "r/b", "r"]);
    }
}
