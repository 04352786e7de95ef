//! The `testing` feature's tree: one written by hand, for the browser's
//! unit tests (`src/browse/app/tests.rs`), which see the library only
//! through its facade.

use super::{Rules, Sets, Tree};
use crate::extents::Sweep;
use crate::probe::Granularity;
use crate::records::{Link, NodeRec};

impl Tree {
    /// The tree rolled up from `nodes` and the `links` of hardlinked
    /// inodes, and what any set of its entries frees: no shared extents,
    /// sdu's own rules.
    pub fn by_hand(nodes: Vec<NodeRec>, links: Vec<Link>) -> (Tree, Sets) {
        let block = |_| Granularity::Block;
        let rules = Rules::default();
        Tree::build_with_sets(nodes, links, &[], &Sweep::default(), block, rules, &[])
    }
}
