//! Which names `--import` accepts: none that a directory entry cannot
//! have, since the reports join names into paths (`demo/a/../../etc`
//! would be printed as a path, and a NUL would split a `-0` line).
//!
//! Below a root, a name must not be `.` or `..`, hold a `/` or a NUL, be
//! empty, or be one its directory already listed. A root's name is the
//! path it was given as, `/` and `..` included, and roots may repeat
//! (`sdu a a` lists both): only a NUL or nothing is impossible there. The
//! error is at the name's opening quote.

use std::hash::BuildHasher;
use std::io::Read;

use hashbrown::HashTable;

use super::syntax::{Parsed, Parser};
use crate::quote::quote;

/// Rejects, at `at`, a `name` no directory entry can have but a repeated
/// one (see the module docs); `root`: the name is a path as given. The
/// empty name is rejected where the name is read.
pub(crate) fn check(p: &Parser<impl Read>, name: &[u8], at: (u64, u64), root: bool) -> Parsed<()> {
    // One pass for both bytes: a name is short, and a byte loop costs
    // less there than two memchr or one memchr2 (docs/decisions.md,
    // "Small choices").
    let (mut nul, mut slash) = (false, false);
    for &b in name {
        nul |= b == 0;
        slash |= b == b'/';
    }
    let why = if nul {
        "a NUL byte ends a name"
    } else if root {
        return Ok(());
    } else if slash {
        "a '/' separates names in a path"
    } else if name == b"." {
        "the name of a directory's link to itself"
    } else if name == b".." {
        "the name of a directory's link to its parent"
    } else {
        return Ok(());
    };
    p.error_at(at, format!("no file can be named {} ({why})", quote(name)))
}

/// The names read so far in each open directory, to reject a name listed
/// twice: one table per depth of the stack of open directories (one open
/// directory at each), emptied when its directory ends and reused by the
/// next at that depth, so that memory is allocated as a table grows, not
/// per directory or entry. A table holds node ids with their names'
/// hashes (so that growing it reads no name again); names are compared in
/// the nodes.
///
/// The hasher is foldhash, seeded at random for each read: a saved scan
/// may come from anyone, but a process that reads it once, with no one
/// watching its hashes, gives no way to aim collisions at the seed (and
/// a collision costs a comparison, never a wrong answer).
pub(crate) struct Siblings {
    /// Per directory of the stack: each name's hash and place in the
    /// names, and the names (kept here: a file folded into its directory
    /// as it is read has no node to hold its name).
    tables: Vec<Names>,
    hasher: foldhash::fast::RandomState,
}

/// One directory's names: (hash, start, length) of each, and their bytes.
type Names = (HashTable<(u64, u32, u32)>, Vec<u8>);

impl Siblings {
    pub(crate) fn new() -> Siblings {
        Siblings {
            tables: Vec::new(),
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    /// Rejects, at `at`, a `name` that the directory at `depth` of the
    /// stack already holds; else returns its hash, for [`Self::insert`].
    pub(crate) fn check(
        &self,
        p: &Parser<impl Read>,
        depth: usize,
        name: &[u8],
        at: (u64, u64),
    ) -> Parsed<u64> {
        let hash = self.hasher.hash_one(name);
        let seen = self.tables.get(depth).is_some_and(|(t, names)| {
            t.find(hash, |&(h, s, n)| {
                h == hash && names.get(s as usize..(s + n) as usize) == Some(name)
            })
            .is_some()
        });
        if seen {
            return p.error_at(
                at,
                format!("two entries named {} in one directory", quote(name)),
            );
        }
        Ok(hash)
    }

    /// Records `name` (hashed to `hash`) in the directory at `depth` of the
    /// stack.
    pub(crate) fn insert(&mut self, depth: usize, hash: u64, name: &[u8]) {
        if self.tables.len() <= depth {
            self.tables.resize_with(depth + 1, Default::default);
        }
        let (t, names) = &mut self.tables[depth];
        let (Ok(s), Ok(n)) = (u32::try_from(names.len()), u32::try_from(name.len())) else {
            return;
        };
        names.extend_from_slice(name);
        t.insert_unique(hash, (hash, s, n), |&(h, _, _)| h);
    }

    /// The directory at `depth` of the stack ended. Emptying a table
    /// writes all its control bytes: one that a large directory grew is
    /// dropped rather than emptied again for every small one after it.
    pub(crate) fn close(&mut self, depth: usize) {
        if let Some((t, names)) = self.tables.get_mut(depth) {
            if t.capacity() > 64 && t.len() < t.capacity() / 8 {
                *t = HashTable::new();
                *names = Vec::new();
            } else {
                t.clear();
                names.clear();
            }
        }
    }
}
