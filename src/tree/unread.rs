//! The directories above the entries a scan could not read: ncdu's `.`
//! (read in part) on every directory whose figures lack something below
//! it, in the table, the tree view and the browser alike.

use std::collections::HashSet;

use super::Tree;
use crate::records::{NodeId, ReadError};

impl Tree {
    /// Every directory with one of `errors` somewhere below it (the
    /// errors' own nodes only when another error lies below them; never
    /// [`NodeId::TOP`]).
    pub fn above_errors(&self, errors: &[ReadError]) -> HashSet<NodeId> {
        let mut above = HashSet::new();
        for e in errors {
            let mut n = self.parent(e.node);
            while let Some(x) = n.filter(|&x| x != NodeId::TOP && !x.is_none()) {
                if !above.insert(x) {
                    break;
                }
                n = self.parent(x);
            }
        }
        above
    }
}
