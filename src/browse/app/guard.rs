//! The deletions refused before asking ([`Guard`]): `d` on an entry that
//! is a mount point, holds one, is or holds a Btrfs subvolume this process
//! may not destroy, or is a subvolume holding another (which the kernel
//! destroys for nobody) says why at once, without the confirmation;
//! `i` says it too. What the scan saw decides (each entry's device, inode
//! and mount), with the mounts and the privileges of this process: a
//! deletion asked and confirmed keeps every check of its own
//! (`src/delete/`), the last guard for what changed since.

use std::os::unix::ffi::{OsStrExt, OsStringExt};

use sdu::figures::Kind;
use sdu::{Ident, NodeId, Tree};

use super::App;

/// The inode number of a Btrfs subvolume's root directory.
const SUBVOLUME_ROOT: u64 = 256;

/// Why `d` cannot delete an entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Why {
    /// The entry is a mount point.
    MountPoint,
    /// The entry is on another filesystem than its directory, in the same
    /// mount, and is no Btrfs subvolume.
    OtherFs,
    /// A mount point inside the entry (its path).
    MountInside(Vec<u8>),
    /// The entry is a Btrfs subvolume this process may not destroy.
    Subvolume,
    /// A Btrfs subvolume this process may not destroy inside the entry
    /// (its path).
    SubvolumeInside(Vec<u8>),
    /// The entry is a Btrfs subvolume that holds another (its path): the
    /// kernel destroys only a subvolume that holds none.
    HoldsSubvolume(Vec<u8>),
}

/// What deleting a subvolume takes.
const NEEDS: &str =
    "deleting one needs CAP_SYS_ADMIN, or the filesystem mounted with user_subvol_rm_allowed";

impl Why {
    /// The reason, in words, after "can't delete here: ".
    pub(crate) fn text(&self) -> String {
        let across = "sdu does not delete across mounts";
        match self {
            Why::MountPoint => format!("a mount point ({across})"),
            Why::OtherFs => format!("on another filesystem than its directory ({across})"),
            Why::MountInside(p) => {
                format!("{} inside it is a mount point ({across})", sdu::quote(p))
            }
            Why::Subvolume => format!("a Btrfs subvolume, and {NEEDS}"),
            Why::SubvolumeInside(p) => {
                format!(
                    "{} inside it is a Btrfs subvolume, and {NEEDS}",
                    sdu::quote(p)
                )
            }
            Why::HoldsSubvolume(p) => format!(
                "a Btrfs subvolume holding another, {} (delete that one first)",
                sdu::quote(p)
            ),
        }
    }
}

/// What decides the refusals: the scan's identities, the mounts, and
/// whether this process may destroy subvolumes. The default knows nothing
/// and refuses nothing (a saved scan, which never deletes, and the unit
/// tests).
#[derive(Default)]
pub(crate) struct Guard<'t> {
    /// What the scan saw at each entry.
    ident: Option<Box<dyn Fn(NodeId) -> Option<Ident> + 't>>,
    /// `CAP_SYS_ADMIN` in the effective set: any subvolume may be
    /// destroyed.
    admin: bool,
    /// The mounts whose filesystem lets a user destroy a subvolume of
    /// their own (`user_subvol_rm_allowed`), by mount id.
    user_rm: Vec<u64>,
    /// Every mount point, absolute (`/proc/self/mountinfo`), sorted.
    mounts: Vec<Vec<u8>>,
    /// The absolute path of each root, by its name as given.
    roots: Vec<(Vec<u8>, Vec<u8>)>,
}

impl<'t> Guard<'t> {
    /// The guard of `tree`'s deletions, from its identities and the
    /// mounts and privileges now.
    pub(crate) fn new(tree: &Tree, ident: impl Fn(NodeId) -> Option<Ident> + 't) -> Guard<'t> {
        let admin = rustix::thread::capabilities(None).is_ok_and(|c| {
            c.effective
                .contains(rustix::thread::CapabilitySet::SYS_ADMIN)
        });
        let all = sdu_sys::mountinfo::read().unwrap_or_default();
        let has = |o: &[u8]| {
            o.split(|&b| b == b',')
                .any(|w| w == b"user_subvol_rm_allowed")
        };
        let user_rm = all
            .iter()
            .filter(|m| has(&m.options) || has(&m.super_options))
            .map(|m| m.id)
            .collect();
        let mut mounts: Vec<Vec<u8>> = all.into_iter().map(|m| m.point).collect();
        mounts.sort();
        mounts.dedup();
        let roots = tree
            .roots()
            .iter()
            .filter_map(|&r| {
                let name = tree.name(r);
                let abs = std::fs::canonicalize(std::ffi::OsStr::from_bytes(name)).ok()?;
                Some((name.to_vec(), abs.into_os_string().into_vec()))
            })
            .collect();
        Guard {
            ident: Some(Box::new(ident)),
            admin,
            user_rm,
            mounts,
            roots,
        }
    }

    /// A guard from `ident` alone, with or without `CAP_SYS_ADMIN`, no
    /// mount known by path, and `user_rm` the mounts that let a user
    /// destroy their subvolumes.
    #[cfg(test)]
    pub(crate) fn by_hand(
        ident: impl Fn(NodeId) -> Option<Ident> + 't,
        admin: bool,
        user_rm: Vec<u64>,
    ) -> Guard<'t> {
        Guard {
            ident: Some(Box::new(ident)),
            admin,
            user_rm,
            ..Guard::default()
        }
    }

    /// Whether a subvolume in mount `mnt` may be destroyed by this
    /// process, as far as can be told before trying: with
    /// `CAP_SYS_ADMIN`, or where the filesystem lets its owner (the
    /// kernel checks the rest: write access to it and its directory).
    fn may_destroy(&self, mnt: u64) -> bool {
        self.admin || self.user_rm.contains(&mnt)
    }

    fn ident(&self, id: NodeId) -> Option<Ident> {
        self.ident.as_ref().and_then(|f| f(id))
    }
}

/// What lies between a directory and its entry, as the scan saw them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    /// The same filesystem and mount.
    Same,
    /// Another mount.
    Mount,
    /// Another device in the same mount, no subvolume's root.
    OtherFs,
    /// A Btrfs subvolume's root (another device in the same mount, inode
    /// 256).
    Subvolume,
}

fn step(up: Ident, down: Ident) -> Step {
    if down.mnt != up.mnt {
        Step::Mount
    } else if down.dev == up.dev {
        Step::Same
    } else if down.ino == SUBVOLUME_ROOT {
        Step::Subvolume
    } else {
        Step::OtherFs
    }
}

impl App<'_> {
    /// Why `d` cannot delete `id`, if it cannot.
    pub(crate) fn delete_refusal(&self, id: NodeId) -> Option<Why> {
        let g = &self.guard;
        let tree = self.tree;
        // The mounts now, by path: the entry itself, then inside it.
        if let Some(abs) = self.absolute(id) {
            if g.mounts.binary_search(&abs).is_ok() {
                return Some(Why::MountPoint);
            }
            let mut under = abs.clone();
            if under != b"/" {
                under.push(b'/');
            }
            let from = g.mounts.partition_point(|m| *m < under);
            if let Some(m) = g.mounts[from..].iter().find(|m| m.starts_with(&under)) {
                let mut shown = self.path(id);
                sdu::path::join(&mut shown, &m[under.len()..]);
                return Some(Why::MountInside(shown));
            }
        }
        // What the scan saw: the entry against its directory...
        let me = g.ident(id)?;
        let up = tree
            .parent(id)
            .filter(|&p| p != NodeId::TOP)
            .and_then(|p| g.ident(p));
        let subvolume = match up.map_or(Step::Same, |up| step(up, me)) {
            Step::Mount => return Some(Why::MountPoint),
            Step::OtherFs => return Some(Why::OtherFs),
            Step::Subvolume if !g.may_destroy(me.mnt) => return Some(Why::Subvolume),
            s => s == Step::Subvolume,
        };
        // ... and everything below it against its own directory.
        if tree.kind(id) != Kind::Dir {
            return None;
        }
        let mut stack = vec![(id, me)];
        while let Some((x, xi)) = stack.pop() {
            for &c in tree.children(x) {
                let Some(ci) = g.ident(c) else {
                    continue;
                };
                match step(xi, ci) {
                    Step::Mount | Step::OtherFs => return Some(Why::MountInside(self.path(c))),
                    // Any depth: the kernel refuses a subvolume holding
                    // another anywhere.
                    Step::Subvolume if subvolume => {
                        return Some(Why::HoldsSubvolume(self.path(c)));
                    }
                    Step::Subvolume if !g.may_destroy(ci.mnt) => {
                        return Some(Why::SubvolumeInside(self.path(c)));
                    }
                    Step::Same | Step::Subvolume => {}
                }
                if tree.kind(c) == Kind::Dir {
                    stack.push((c, ci));
                }
            }
        }
        None
    }

    /// The absolute path of `id`: its root's, then its names.
    fn absolute(&self, id: NodeId) -> Option<Vec<u8>> {
        let mut names = self.names(id).into_iter();
        let root = names.next()?;
        let (_, abs) = self.guard.roots.iter().find(|(n, _)| *n == root)?;
        let mut p = abs.clone();
        for n in names {
            sdu::path::join(&mut p, &n);
        }
        Some(p)
    }

    /// `d` on `ids`: when any of them cannot be deleted, a notice that
    /// says which and why, in place of the confirmation; true then.
    pub(super) fn refuse_before_asking(&mut self, ids: &[NodeId]) -> bool {
        let refused: Vec<(NodeId, Why)> = ids
            .iter()
            .filter_map(|&id| self.delete_refusal(id).map(|w| (id, w)))
            .collect();
        if refused.is_empty() {
            return false;
        }
        let mut lines = vec![format!(
            "Not deleting {}: nothing was deleted.",
            match ids.len() {
                1 => "it".to_owned(),
                n => format!("the {n} marked entries"),
            }
        )];
        for (id, why) in refused.iter().take(3) {
            lines.push(format!(
                "{}: can't delete here: {}",
                sdu::quote(&self.path(*id)),
                why.text()
            ));
        }
        if refused.len() > 3 {
            lines.push(format!("and {} more refused", refused.len() - 3));
        }
        if ids.len() > 1 {
            lines.push(format!(
                "Unmark {} to delete the others (u unmarks all).",
                if refused.len() == 1 { "it" } else { "them" }
            ));
        }
        lines.push("(any key closes this)".into());
        self.notice = Some(lines);
        true
    }

    /// Enter on an answer other than `yes`: the confirmation closed, and
    /// a notice that says nothing was deleted.
    pub(super) fn decline(&mut self) {
        let Some(c) = self.confirm.take() else {
            return;
        };
        let what = match &c.ids[..] {
            [one] => sdu::quote(&self.path(*one)),
            ids => format!("the {} entries", ids.len()),
        };
        self.notice = Some(vec![
            format!("Kept {what}: only yes deletes."),
            "(any key closes this)".into(),
        ]);
    }
}
