//! `--to-free`: which of the paths are candidates, and which are only the
//! context their data is shared with.
//!
//! What deleting a snapshot frees depends on every other reference to its
//! data: the live subvolume it was taken from, the other snapshots. A plan
//! among candidates scanned alone would take data they share with the
//! unscanned live subvolume for theirs. So the paths given split in two:
//! a path that lies inside another given path is a candidate, found as an
//! entry of that path's scan; the paths that lie inside no other are
//! scanned, and are candidates themselves only when no path lies inside
//! any other (`sdu --to-free 50G /snaps/*` plans among the snapshots;
//! `sdu --to-free 50G /mnt /mnt/snaps/*` plans among the same snapshots,
//! with the whole filesystem's references seen).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use crate::error::{Diagnostic, Error};
use crate::messages::Messages;
use crate::records::NodeId;
use crate::report::plan::Candidate;
use crate::tree::Tree;

/// The paths to scan and the candidates to plan among.
#[derive(Debug)]
pub(crate) struct Split {
    /// The paths to walk.
    pub(crate) scan: Vec<Vec<u8>>,
    /// The candidates, each found in the scan of one of `scan`.
    pub(crate) candidates: Vec<Given>,
}

/// A `--to-free` candidate before the scan.
#[derive(Debug)]
pub(crate) struct Given {
    /// As given.
    pub(crate) given: Vec<u8>,
    /// The index in [`Split::scan`] of the path whose scan holds it.
    pub(crate) scan: usize,
    /// The names that lead from that path to it (empty: the path itself).
    pub(crate) names: Vec<Vec<u8>>,
}

/// Splits the paths given into what to scan and the candidates.
///
/// # Errors
/// [`Error::Overlap`] when a candidate lies inside another candidate (or is
/// given twice): its deletion cannot be planned apart from the other's.
pub(crate) fn split(paths: &[Vec<u8>], msgs: &Messages) -> Result<Split, Error> {
    let canon: Vec<Option<PathBuf>> = paths
        .iter()
        .map(|p| std::fs::canonicalize(OsStr::from_bytes(p)).ok())
        .collect();
    let inside = |i: usize, j: usize| match (&canon[i], &canon[j]) {
        (Some(a), Some(b)) => i != j && a.starts_with(b),
        _ => false,
    };
    let nested: Vec<bool> = (0..paths.len())
        .map(|i| (0..paths.len()).any(|j| inside(i, j) && canon[i] != canon[j]))
        .collect();
    if !nested.iter().any(|&n| n) {
        // Candidates are the paths themselves; two equal ones overlap.
        for (i, p) in paths.iter().enumerate() {
            if (0..i).any(|j| inside(i, j)) {
                return Err(Error::Overlap { inner: p.clone() });
            }
        }
        return Ok(Split {
            scan: paths.to_vec(),
            candidates: (0..paths.len())
                .map(|i| Given {
                    given: paths[i].clone(),
                    scan: i,
                    names: Vec::new(),
                })
                .collect(),
        });
    }
    let context: Vec<usize> = (0..paths.len()).filter(|&i| !nested[i]).collect();
    let mut candidates = Vec::new();
    for i in (0..paths.len()).filter(|&i| nested[i]) {
        // Nested in another candidate, or given twice: overlap.
        if (0..paths.len())
            .any(|j| nested[j] && j != i && inside(i, j) && (canon[i] != canon[j] || j < i))
        {
            return Err(Error::Overlap {
                inner: paths[i].clone(),
            });
        }
        let (me, c) = match context.iter().find(|&&c| inside(i, c)) {
            Some(&c) => (canon[i].as_ref().expect("canonical"), c),
            None => continue,
        };
        let base = canon[c].as_ref().expect("canonical");
        let names = me
            .strip_prefix(base)
            .expect("inside")
            .iter()
            .map(|n| n.as_bytes().to_vec())
            .collect();
        candidates.push(Given {
            given: paths[i].clone(),
            scan: context.iter().position(|&x| x == c).expect("a context"),
            names,
        });
    }
    // A path that cannot be resolved is reported here, as the walk would.
    for (i, p) in paths.iter().enumerate() {
        if canon[i].is_none() && nested[i] {
            msgs.report(Diagnostic::CannotAccess {
                path: p.clone(),
                errno: rustix::io::Errno::NOENT,
            });
        }
    }
    Ok(Split {
        scan: context.iter().map(|&c| paths[c].clone()).collect(),
        candidates,
    })
}

/// The nodes of the candidates in `tree` (scanned from `split.scan`), with
/// the paths to print for them; a candidate whose scan failed is left out
/// (the walk reported it).
pub(crate) fn nodes(tree: &Tree, split: &Split, msgs: &Messages) -> Vec<Candidate> {
    let roots = tree.roots();
    split
        .candidates
        .iter()
        .filter_map(|c| {
            // A scanned path that could not be read was reported by the walk.
            let root = *roots
                .iter()
                .find(|&&r| tree.name(r) == &split.scan[c.scan][..])?;
            match tree.find(root, &c.names) {
                Some(node) => Some(Candidate {
                    node,
                    path: c.given.clone(),
                }),
                None => {
                    // Excluded, on another filesystem under -x, or gone.
                    msgs.report(Diagnostic::NotScanned {
                        path: c.given.clone(),
                    });
                    None
                }
            }
        })
        .collect()
}

/// `--import --to-free`: the nodes of the candidates, named by their paths
/// in the saved scan: a root as it was given, then `/` and the names below
/// it (as the report prints them; empty components are ignored). A
/// candidate that is not there is reported and left out.
///
/// # Errors
/// [`Error::Overlap`] when a candidate is another, or lies inside it.
pub(crate) fn saved_nodes(
    tree: &Tree,
    candidates: &[Vec<u8>],
    msgs: &Messages,
) -> Result<Vec<Candidate>, Error> {
    let mut out: Vec<Candidate> = Vec::new();
    for c in candidates {
        let root = tree
            .roots()
            .iter()
            .filter(|&&r| {
                let r = tree.name(r);
                c.starts_with(r) && (c.len() == r.len() || r.ends_with(b"/") || c[r.len()] == b'/')
            })
            .max_by_key(|&&r| tree.name(r).len());
        let found = root.and_then(|&r| {
            let names: Vec<Vec<u8>> = c[tree.name(r).len()..]
                .split(|&b| b == b'/')
                .filter(|n| !n.is_empty())
                .map(<[u8]>::to_vec)
                .collect();
            tree.find(r, &names)
        });
        match found {
            Some(node) => out.push(Candidate {
                node,
                path: c.clone(),
            }),
            None => msgs.report(Diagnostic::NotInScan { path: c.clone() }),
        }
    }
    let within = |inner: NodeId, outer: NodeId| {
        std::iter::successors(Some(inner), |&n| tree.parent(n)).any(|n| n == outer)
    };
    for (i, a) in out.iter().enumerate() {
        for (j, b) in out.iter().enumerate() {
            if i != j && within(b.node, a.node) && (a.node != b.node || j > i) {
                return Err(Error::Overlap {
                    inner: b.path.clone(),
                });
            }
        }
    }
    Ok(out)
}
