//! The directories the scan did not read in full, as ncdu marks them: `!`
//! on a directory that could not be read (nothing of it is known), `.` on
//! one read in part (an entry in it could not be read, its listing broke
//! off, or such a directory lies below it: its figures are those of what
//! was read).

use std::collections::HashSet;

use sdu::{NodeId, ReadError, Tree};

/// The read errors of a scan, by node, and the directories above them.
#[derive(Debug, Default)]
pub(crate) struct Unread<'t> {
    /// Sorted by node.
    errors: &'t [ReadError],
    /// Every directory with an error somewhere below it.
    above: HashSet<NodeId>,
}

impl<'t> Unread<'t> {
    /// The marks of `errors` (sorted by node) in `tree`.
    pub(crate) fn new(tree: &Tree, errors: &'t [ReadError]) -> Unread<'t> {
        let above = tree.above_errors(errors);
        Unread { errors, above }
    }

    /// The errors met in directory `id` itself.
    pub(crate) fn of(&self, id: NodeId) -> &'t [ReadError] {
        let start = self.errors.partition_point(|e| e.node < id);
        let end = start + self.errors[start..].partition_point(|e| e.node == id);
        &self.errors[start..end]
    }

    /// `!`, `.` or a space: ncdu's mark of the entry's row.
    pub(crate) fn mark(&self, id: NodeId) -> char {
        match self.of(id) {
            [first, ..] if first.whole => '!',
            [_, ..] => '.',
            [] if self.above.contains(&id) => '.',
            [] => ' ',
        }
    }

    /// Whether an entry below `id` was not read in full.
    pub(crate) fn below(&self, id: NodeId) -> bool {
        self.above.contains(&id)
    }
}
