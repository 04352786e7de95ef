//! `--compare OLD`: a scan's entries matched with those of an older saved
//! scan, so that every report can say what changed.
//!
//! Entries are matched by name from each root: a root pairs with the old
//! root of the same name as given (or, for an old root saved absolute as
//! ncdu saves it, the one that resolves to it); the roots left then pair
//! in the order given when as many are left on each side (so `/mnt/a`
//! compares with `/srv/a`, the same tree mounted elsewhere), and the
//! report says so on stderr ([`Comparison::by_position`]), since a
//! filesystem's root compared with one of its subvolumes would read as
//! everything changed; below a root, an entry matches the old entry of
//! the same name in the matched directory. What matches nothing is new;
//! an old entry that nothing matches is gone. The old scan is rolled up by the rules of the
//! new one (`-S`, `-a`), so that both sides count alike.
//!
//! [`compare`] builds the [`Comparison`]: for every node of the new tree,
//! the old node it matched (and so its old figures), and the gone entries.
//! The reports (`sdu --compare`), the browser and the HTML treemap read
//! it. [`Change`] holds one entry's two sides and answers the questions
//! the reports ask of them: the change in a figure, and whether sharing
//! changed.

use std::collections::HashMap;

use crate::Error;
use crate::figures::{Bound, Figure, Kind, Stats};
use crate::records::NodeId;
use crate::scan::{Scanned, Scanning};
use crate::tree::Tree;

/// A new scan compared with an old one ([`compare`]).
#[derive(Debug)]
pub struct Comparison {
    /// The old scan, rolled up.
    old: Scanned,
    /// By node index of the new tree: the old node it matched, or
    /// [`NodeId::NONE`] (new, or below the depth compared).
    matched: Vec<NodeId>,
    /// The old entries nothing matched, in the old tree's pre-order.
    gone: Vec<Gone>,
    /// Whether both scans know what is shared.
    sharing: bool,
    /// The roots paired by position, their names differing: (old, new).
    by_position: Vec<(NodeId, NodeId)>,
}

/// An entry of the old scan that the new one does not have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Gone {
    /// Its node in [`Comparison::old_tree`].
    pub(crate) old: NodeId,
    /// The entry of the new tree it was in: the nearest directory above it
    /// that is in both scans ([`NodeId::TOP`] for a root, or for an entry
    /// whose root is gone).
    pub(crate) under: NodeId,
    /// Levels below its root. Its path is built when printed
    /// ([`Comparison::gone_path`]), not kept.
    pub(crate) depth: u32,
}

/// One entry's two sides: its figures and bound in the old scan and in the
/// new (`None`: not in that scan).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Change {
    /// In the old scan.
    pub old: Option<(Stats, Bound)>,
    /// In the new scan.
    pub(crate) new: Option<(Stats, Bound)>,
}

impl Change {
    /// `figure` new minus old, a side that is missing counting 0.
    pub fn delta(&self, figure: Figure) -> i128 {
        let of = |s: &Option<(Stats, Bound)>| s.map_or(0, |(s, _)| i128::from(figure.of(&s)));
        of(&self.new) - of(&self.old)
    }

    /// Whether sharing changed: the entry is in both scans and its
    /// Exclusive moved by more or less than its Total. Data under it
    /// became shared or stopped being shared (a snapshot or reflink copy
    /// deleted or made, a shared file rewritten); where Total did not move
    /// at all, the whole change of Exclusive is such data.
    pub fn sharing_changed(&self) -> bool {
        self.old.is_some()
            && self.new.is_some()
            && self.delta(Figure::Exclusive) != self.delta(Figure::Total)
    }

    /// Whether the change of Reclaimable is exact: both sides (those
    /// present) are.
    pub(crate) fn reclaimable_exact(&self) -> bool {
        [self.old, self.new]
            .iter()
            .flatten()
            .all(|(_, b)| b.is_exact())
    }

    /// The direction of the change of Reclaimable when it is a bound: the
    /// new side's, and the old side's reversed (an old figure that may be
    /// more than the truth makes a change that may be less).
    pub(crate) fn bound(&self) -> Bound {
        let old = self.old.map_or(Bound::EXACT, |(_, b)| b.reversed());
        self.new.map_or(Bound::EXACT, |(_, b)| b).with(old)
    }
}

/// Reads the saved scan OLD (`-`: standard input) for `--compare`, rolled
/// up by `how` (its rules and `walk.all`; the roots and the walk options
/// are the file's). Its errors name it as the old scan
/// (`--compare FILE: ...`).
///
/// # Errors
/// [`Error::OldScan`] where the file cannot be read, is not a saved scan,
/// is truncated or inconsistent, or was written by a newer sdu.
pub fn read_old(file: &[u8], how: &Scanning) -> Result<Scanned, Error> {
    let bad = |what: String| Error::OldScan {
        file: file.to_vec(),
        what,
    };
    let how = Scanning {
        rules: crate::tree::Rules {
            sorted_depth: None,
            ..how.rules
        },
        sets: false,
        ..how.clone()
    };
    crate::scan::read_saved(&how, file, None, &bad)
}

/// Compares `new` with `old` ([`read_old`]), down to `max_depth` levels
/// below the roots (`None`: everything).
///
/// The result holds, for every node of `new.tree` down to that depth, the
/// old node matched by name ([`Comparison::old_of`], its figures through
/// [`Comparison::change`]); and every old entry down to that depth that
/// nothing matched, with the new entry it was in (those gone from a
/// directory itself: [`Comparison::gone_in`]), so that a consumer can
/// colour the new tree by growth and list what went. How entries are matched: the module's comment.
///
/// # Panics
/// When `max_depth` is deeper than what `new.tree`'s children were put
/// in order for ([`crate::tree::Rules::sorted_depth`]).
pub fn compare(new: &Scanned, old: Scanned, max_depth: Option<u32>) -> Comparison {
    let (t, o) = (&new.tree, &old.tree);
    let mut matched = vec![NodeId::NONE; t.len()];
    let mut gone = Vec::new();
    let (new_roots, old_roots) = (listed(t, NodeId::TOP), listed(o, NodeId::TOP));
    // (new node, old node, depth)
    let mut stack: Vec<(NodeId, NodeId, u32)> = Vec::new();
    let mut old_seen = vec![false; old_roots.len()];
    let mut new_seen = vec![false; new_roots.len()];
    // The old roots by name, each name's first last (`pop` takes it).
    let mut named: HashMap<&[u8], Vec<usize>> = HashMap::new();
    for (j, &x) in old_roots.iter().enumerate().rev() {
        named.entry(o.name(x)).or_default().push(j);
    }
    let absolute = old_roots.iter().any(|&x| o.name(x).starts_with(b"/"));
    for (i, &r) in new_roots.iter().enumerate() {
        let mut take = |name: &[u8]| named.get_mut(name).and_then(Vec::pop);
        let by_name = take(t.name(r)).or_else(|| {
            resolved(t.name(r))
                .filter(|_| absolute)
                .and_then(|p| take(&p))
        });
        if let Some(j) = by_name {
            (old_seen[j], new_seen[i]) = (true, true);
            stack.push((r, old_roots[j], 0));
        }
    }
    let old_left: Vec<usize> = (0..old_roots.len()).filter(|&j| !old_seen[j]).collect();
    let new_left: Vec<usize> = (0..new_roots.len()).filter(|&i| !new_seen[i]).collect();
    let mut by_position = Vec::new();
    if old_left.len() == new_left.len() {
        for (&j, &i) in old_left.iter().zip(&new_left) {
            old_seen[j] = true;
            by_position.push((old_roots[j], new_roots[i]));
            stack.push((new_roots[i], old_roots[j], 0));
        }
    }
    for (j, &x) in old_roots.iter().enumerate() {
        if !old_seen[j] {
            gone_subtree(o, x, NodeId::TOP, 0, max_depth, &mut gone);
        }
    }
    let deeper = |d: u32| max_depth.is_none_or(|m| d < m);
    while let Some((n, x, depth)) = stack.pop() {
        matched[n.index()] = x;
        if !deeper(depth) {
            continue;
        }
        let mut old_kids: Vec<(&[u8], NodeId)> =
            listed(o, x).into_iter().map(|c| (o.name(c), c)).collect();
        old_kids.sort_unstable();
        let mut taken = vec![false; old_kids.len()];
        for c in listed(t, n) {
            if let Ok(k) = old_kids.binary_search_by(|(name, _)| (*name).cmp(t.name(c))) {
                taken[k] = true;
                stack.push((c, old_kids[k].1, depth + 1));
            }
        }
        for (k, &(_, c)) in old_kids.iter().enumerate() {
            if !taken[k] {
                gone_subtree(o, c, n, depth + 1, max_depth, &mut gone);
            }
        }
    }
    Comparison {
        sharing: new.sharing && old.sharing,
        old,
        matched,
        gone,
        by_position,
    }
}

/// The absolute path, symlinks resolved, that a new root given as the
/// relative path `name` names: how ncdu saves its roots, so that an old
/// root it saved pairs by name with `sdu --compare ncdu.json DIR`. `None`
/// for a path given absolute (compared as given) or that cannot be
/// resolved.
fn resolved(name: &[u8]) -> Option<Vec<u8>> {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    if name.starts_with(b"/") {
        return None;
    }
    let p = std::fs::canonicalize(std::ffi::OsStr::from_bytes(name)).ok()?;
    Some(p.into_os_string().into_vec())
}

/// Says on `msgs` how the roots of `cmp` (made of the scan whose tree is
/// `new`) were paired where not by name: each pair by position, and, when
/// roots are left on both sides, each old root left (a new root left is
/// new, and the report says so).
pub(crate) fn say_pairing(cmp: &Comparison, new: &Tree, msgs: &crate::Messages) {
    let name = |t: &Tree, id: NodeId| t.name(id).to_vec();
    for &(x, n) in cmp.by_position() {
        msgs.report(crate::error::Diagnostic::RootsPaired {
            old: name(cmp.old_tree(), x),
            new: Some(name(new, n)),
        });
    }
    let new_left = listed(new, NodeId::TOP)
        .into_iter()
        .any(|r| cmp.old_of(r).is_none());
    if new_left {
        for x in cmp.old_roots_unpaired() {
            msgs.report(crate::error::Diagnostic::RootsPaired {
                old: name(cmp.old_tree(), x),
                new: None,
            });
        }
    }
}

/// The entries listed under `id` (the roots under [`NodeId::TOP`]): its
/// children that du's rules do not hide.
fn listed(t: &Tree, id: NodeId) -> Vec<NodeId> {
    t.children(id)
        .iter()
        .copied()
        .filter(|&c| !t.is_hidden(c))
        .collect()
}

/// Records `x` (`depth` levels down, in the new entry `under`) and
/// everything below it down to `max_depth` as gone.
fn gone_subtree(
    o: &Tree,
    x: NodeId,
    under: NodeId,
    depth: u32,
    max_depth: Option<u32>,
    gone: &mut Vec<Gone>,
) {
    let mut stack = vec![(x, depth)];
    while let Some((x, depth)) = stack.pop() {
        if max_depth.is_none_or(|m| depth < m) {
            for c in listed(o, x).into_iter().rev() {
                stack.push((c, depth + 1));
            }
        }
        gone.push(Gone {
            old: x,
            under,
            depth,
        });
    }
}

impl Comparison {
    /// The old scan's tree, rolled up by the new scan's rules.
    pub(crate) fn old_tree(&self) -> &Tree {
        &self.old.tree
    }

    /// The old scan's roots, as its report names them.
    pub(crate) fn old_roots(&self) -> &[Vec<u8>] {
        &self.old.roots
    }

    /// The old node that node `new` of the new tree matched; `None` when
    /// it is new (or deeper than compared).
    pub fn old_of(&self, new: NodeId) -> Option<NodeId> {
        self.matched.get(new.index()).and_then(|x| x.some())
    }

    /// Node `id` of `new` (the tree this comparison was made of) with the
    /// old side it matched.
    pub fn change(&self, new: &Tree, id: NodeId) -> Change {
        Change {
            old: self.old_of(id).map(|x| self.old_side(x)),
            new: Some((new.figures(id), new.bound(id))),
        }
    }

    /// A gone entry's change: its old side, no new one.
    pub(crate) fn gone_change(&self, g: &Gone) -> Change {
        Change {
            old: Some(self.old_side(g.old)),
            new: None,
        }
    }

    /// The `-c` totals of both scans.
    pub(crate) fn total_change(&self, new: &Tree) -> Change {
        let o = self.old_tree();
        Change {
            old: Some((*o.grand_total(), o.grand_bound())),
            new: Some((*new.grand_total(), new.grand_bound())),
        }
    }

    /// The kind of a gone entry.
    pub(crate) fn gone_kind(&self, g: &Gone) -> Kind {
        self.old_tree().kind(g.old)
    }

    /// The old entries nothing in the new scan matched, down to the depth
    /// compared: a gone directory, then what was in it.
    pub(crate) fn gone(&self) -> &[Gone] {
        &self.gone
    }

    /// The entries gone from the new entry `dir` itself ([`NodeId::TOP`]:
    /// the roots gone), not what was below them: each one's old name,
    /// kind and change (its old side only). Goes through every gone entry.
    pub fn gone_in(&self, dir: NodeId) -> impl Iterator<Item = (&[u8], Kind, Change)> + '_ {
        self.gone
            .iter()
            .filter(move |g| g.under == dir && self.gone_parent(g) == Ok(dir))
            .map(|g| {
                (
                    self.old_tree().name(g.old),
                    self.gone_kind(g),
                    self.gone_change(g),
                )
            })
    }

    /// Sets `out` to the path of `g` as the report of `new` (the tree this
    /// comparison was made of) prints it: the path of the new entry it was
    /// in, then the old names below that entry; from the old root's name
    /// when its root is gone. Costs its depth, as printing it does.
    pub(crate) fn gone_path(&self, new: &Tree, g: &Gone, out: &mut Vec<u8>) {
        let o = self.old_tree();
        // The old node of `g.under`: where the old names stop.
        let stop = (g.under != NodeId::TOP).then(|| self.matched[g.under.index()]);
        let mut names: Vec<&[u8]> = Vec::new();
        let mut x = g.old;
        loop {
            names.push(o.name(x));
            match o.parent(x) {
                Some(p) if p != NodeId::TOP && Some(p) != stop => x = p,
                _ => break,
            }
        }
        if stop.is_some() {
            let mut n = g.under;
            loop {
                names.push(new.name(n));
                match new.parent(n) {
                    Some(p) if p != NodeId::TOP => n = p,
                    _ => break,
                }
            }
        }
        out.clear();
        for (k, name) in names.iter().rev().enumerate() {
            // No second `/` after a root that ends in one.
            if k > 0 && out.last() != Some(&b'/') {
                out.push(b'/');
            }
            out.extend_from_slice(name);
        }
    }

    /// The node `g.old`'s parent is in the comparison: the gone entry it
    /// was in (`Err`, its old node), else the new entry (`Ok`, [`NodeId::TOP`]
    /// for a root).
    pub(crate) fn gone_parent(&self, g: &Gone) -> Result<NodeId, NodeId> {
        let stop = (g.under != NodeId::TOP).then(|| self.matched[g.under.index()]);
        match self.old_tree().parent(g.old) {
            Some(p) if p != NodeId::TOP && Some(p) != stop => Err(p),
            _ => Ok(g.under),
        }
    }

    /// Whether both scans know what is shared. A saved scan that sdu did
    /// not write (`ncdu -o`) does not: then only Total and the apparent
    /// size compare.
    pub(crate) fn sharing(&self) -> bool {
        self.sharing
    }

    /// The roots paired by position because no root of the other scan
    /// has their name (as given): (old node, new node).
    pub(crate) fn by_position(&self) -> &[(NodeId, NodeId)] {
        &self.by_position
    }

    /// The old roots that paired with no root (neither by name nor by
    /// position: the roots left differ in number); their entries are gone.
    pub(crate) fn old_roots_unpaired(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.gone
            .iter()
            .filter(|g| g.depth == 0 && g.under == NodeId::TOP)
            .map(|g| g.old)
    }

    /// The errors the old scan had met when it was saved.
    pub(crate) fn old_errors(&self) -> u64 {
        self.old.saved_errors
    }

    fn old_side(&self, x: NodeId) -> (Stats, Bound) {
        let o = self.old_tree();
        (o.figures(x), o.bound(x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(total: u64, exclusive: u64, b: Bound) -> Option<(Stats, Bound)> {
        let s = Stats {
            total,
            exclusive,
            shared: total - exclusive,
            reclaimable: exclusive,
            ..Stats::default()
        };
        Some((s, b))
    }

    #[test]
    fn a_change_is_new_minus_old_and_says_when_sharing_moved() {
        // Data written: Total and Exclusive alike.
        let grew = Change {
            old: side(100, 40, Bound::EXACT),
            new: side(150, 90, Bound::EXACT),
        };
        assert_eq!(
            (grew.delta(Figure::Total), grew.delta(Figure::Shared)),
            (50, 0)
        );
        assert!(!grew.sharing_changed() && grew.reclaimable_exact());
        // A snapshot deleted: Exclusive grows, Total stays.
        let unshared = Change {
            old: side(100, 40, Bound::EXACT),
            new: side(100, 100, Bound::AT_MOST),
        };
        assert_eq!(unshared.delta(Figure::Exclusive), 60);
        assert!(unshared.sharing_changed() && !unshared.reclaimable_exact());
        assert!(unshared.bound().at_most());
        let was_bound = Change {
            old: side(100, 100, Bound::AT_MOST),
            new: side(100, 40, Bound::EXACT),
        };
        assert_eq!(was_bound.bound(), Bound::AT_LEAST);
        // New and gone: the missing side counts 0, and sharing is no news.
        let new = Change {
            old: None,
            new: side(10, 0, Bound::EXACT),
        };
        let gone = Change {
            old: side(10, 0, Bound::EXACT),
            new: None,
        };
        assert_eq!(
            (new.delta(Figure::Total), gone.delta(Figure::Total)),
            (10, -10)
        );
        assert!(!new.sharing_changed() && !gone.sharing_changed());
        // Beyond i64: still exact.
        let huge = Change {
            old: side(0, 0, Bound::EXACT),
            new: side(u64::MAX, u64::MAX, Bound::EXACT),
        };
        assert_eq!(huge.delta(Figure::Total), i128::from(u64::MAX));
    }
}
