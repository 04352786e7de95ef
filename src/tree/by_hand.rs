//! Trees built by hand in the unit tests: the roll-up with du's rules and
//! nothing a scan finds (every figure exact, nothing unreachable).

use super::{Rules, Tree};
use crate::extents::Sweep;
use crate::probe::Granularity;
use crate::records::{FileRec, Link, NodeId, Nodes};

impl Tree {
    /// Rolls up the walk's records and credits shared data from the sweep.
    ///
    /// `granularity(fs)` says how the filesystem of extent space `fs` frees
    /// shared data.
    pub(crate) fn build(
        nodes: impl Into<Nodes>,
        links: Vec<Link>,
        files: &[FileRec],
        sweep: &Sweep,
        granularity: impl Fn(u32) -> Granularity,
    ) -> Tree {
        Self::build_with(
            nodes,
            links,
            files,
            sweep,
            granularity,
            Rules::default(),
            &[],
        )
    }

    /// [`Tree::build`], following du's `rules`; [`Tree::visit`] stops
    /// listing a root right after any of `stops` (du stops there when a
    /// directory was moved during its traversal).
    pub(crate) fn build_with(
        nodes: impl Into<Nodes>,
        links: Vec<Link>,
        files: &[FileRec],
        sweep: &Sweep,
        granularity: impl Fn(u32) -> Granularity,
        rules: Rules,
        stops: &[NodeId],
    ) -> Tree {
        Self::build_with_sets(nodes, links, files, sweep, granularity, rules, stops).0
    }
}
