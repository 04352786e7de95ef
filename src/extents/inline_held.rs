//! As root: whether a subvolume outside the scan holds a Btrfs inline
//! file's inode unchanged (`docs/filesystems.md`, "Btrfs metadata: what
//! "frees" means").
//!
//! Inline data has no disk address to ask the back-reference walk about
//! ([`super::outside`]), but root can read any subvolume's tree. A
//! subvolume holds the inline file the scan saw when its tree holds the
//! same inode unchanged: an inode item of the same number with the same
//! birth and change times to the nanosecond and the same size, symlink or
//! not (the key of [`super::inline`]), in a subvolume of the same snapshot
//! family ([`sdu_sys::btrfs::subvolumes`]: two fresh subvolumes can hold
//! equal keys that share nothing). Whether it shares the leaf or holds a
//! copy made on write, the file's content outlives the scan's copies: not
//! reclaimable.
//!
//! Only the members that can hold it are read: a subvolume made before
//! the inode took its present state, whose copies the scan saw in
//! subvolumes also made before it, cannot (the inode was in this state
//! only after the later of the two was made, and a snapshot freezes what
//! it copies). So the snapshots older than a file changed since are not
//! asked about it.

use std::collections::HashSet;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use sdu_sys::btrfs::{self as bs, Subvolumes, key_type};

use super::Extents;
use super::btrfs_tree::InodeItem;
use crate::probe::Registry;

/// An inline inode as the scan saw it: its filesystem (registry index),
/// number, size, symlink or not, and birth and change times.
#[derive(Clone, Copy, Debug)]
pub(crate) struct InlineInode {
    pub(crate) fs: u32,
    /// The root namespace whose walk saw it.
    pub(crate) ns: u32,
    pub(crate) ino: u64,
    pub(crate) size: u64,
    pub(crate) symlink: bool,
    pub(crate) times: ((i64, u32), (i64, u32)),
}

/// Who else holds an inline inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HeldBy {
    /// No subvolume outside the scan.
    Nowhere,
    /// A subvolume outside the scan holds it unchanged.
    Outside,
    /// A tree that could hold it could not be read.
    Unknown,
}

/// The filesystems the scan's inline files are on, each with an fd and
/// its subvolumes.
pub(crate) struct Holders {
    fss: Vec<(u32, OwnedFd, Option<Arc<Subvolumes>>)>,
    /// By root namespace, the subvolumes (by filesystem and id) its walk
    /// held whole (the walk's `Left::whole_subvolumes`).
    whole: Vec<(u32, HashSet<(u32, u64)>)>,
    /// The tree searches made so far.
    searches: AtomicU64,
}

impl Holders {
    /// As root, when the scan recorded inline files (on the devices
    /// `devs`): with `fds`, an fd on each filesystem (by a device of it),
    /// copied, and its subvolumes as `extents` read them.
    pub(crate) fn as_root<'a>(
        extents: &Extents,
        registry: &Registry,
        devs: &[u64],
        fds: impl Iterator<Item = (u64, Option<&'a OwnedFd>)>,
    ) -> Option<Holders> {
        if devs.is_empty() || !super::can_search_trees() {
            return None;
        }
        let mut fss: Vec<(u32, OwnedFd, Option<Arc<Subvolumes>>)> = Vec::new();
        for (dev, fd) in fds {
            let (Some(fs), Some(fd)) = (registry.fs_index(dev), fd) else {
                continue;
            };
            if fss.iter().any(|f| f.0 == fs) {
                continue;
            }
            if let Ok(fd) = rustix::io::fcntl_dupfd_cloexec(fd, 0) {
                let subvolumes = extents
                    .subvolumes(fd.as_fd(), fs)
                    .filter(|s| s.has_families());
                fss.push((fs, fd, subvolumes));
            }
        }
        Some(Holders {
            fss,
            whole: Vec::new(),
            searches: AtomicU64::new(0),
        })
    }

    /// With `whole`, by root namespace, the subvolumes its walk held whole:
    /// one of them that did not show an inode to the walk does not hold
    /// it, and is not asked.
    pub(crate) fn with_whole(self, whole: Vec<(u32, HashSet<(u32, u64)>)>) -> Holders {
        Holders { whole, ..self }
    }

    /// The tree searches the questions took (`--stats`' "tree searches").
    pub(crate) fn searches(&self) -> u64 {
        self.searches.load(Ordering::Relaxed)
    }

    /// Holders of no filesystem: every tree unreadable.
    #[cfg(test)]
    pub(crate) fn none() -> Holders {
        Holders {
            fss: Vec::new(),
            whole: Vec::new(),
            searches: AtomicU64::new(0),
        }
    }

    fn of(&self, fs: u32) -> Option<(BorrowedFd<'_>, &Subvolumes)> {
        let f = self.fss.iter().find(|f| f.0 == fs)?;
        Some((f.1.as_fd(), f.2.as_ref()?))
    }

    /// The family of subvolume `id` of filesystem `fs`, as a tag no
    /// subvolume UUID takes.
    pub(crate) fn family(&self, fs: u32, id: u64) -> Option<[u8; 16]> {
        let family = self.of(fs)?.1.family(id)?;
        let mut tag = [0xff; 16];
        tag[4..8].copy_from_slice(&fs.to_le_bytes());
        tag[8..].copy_from_slice(&family.to_le_bytes());
        Some(tag)
    }

    /// Whether a live subvolume other than those of `seen` (the scan saw
    /// the inode `key` unchanged in each: its id and creation time) holds
    /// it unchanged.
    pub(crate) fn held(&self, key: &InlineInode, seen: &[(u64, (i64, u32))]) -> HeldBy {
        let Some((fd, subvolumes)) = self.of(key.fs) else {
            return HeldBy::Unknown;
        };
        let mut families = Vec::new();
        for s in seen {
            match subvolumes.family(s.0) {
                Some(f) => families.push(f),
                None => return HeldBy::Unknown,
            }
        }
        let latest = seen.iter().map(|s| s.1).max().unwrap_or_default();
        // A subvolume the walk held whole showed it every inode it holds.
        let whole = (self.whole.iter().find(|w| w.0 == key.ns)).map(|w| &w.1);
        let mut verdict = HeldBy::Nowhere;
        for t in subvolumes.all().iter().filter(|t| {
            t.alive()
                && subvolumes
                    .family(t.id)
                    .is_some_and(|f| families.contains(&f))
                && !seen.iter().any(|s| s.0 == t.id)
                && !whole.is_some_and(|w| w.contains(&(key.fs, t.id)))
        }) {
            let created = t.v2.map(|v| v.created).unwrap_or_default();
            if key.times.1 > latest.max(created) {
                continue;
            }
            match same_inode(fd, t.id, key, &self.searches) {
                Ok(true) => return HeldBy::Outside,
                Ok(false) => {}
                Err(_) => verdict = HeldBy::Unknown,
            }
        }
        verdict
    }
}

/// Whether subvolume `tree`'s inode of `key`'s number is `key`'s inode
/// unchanged; the searches it makes are added to `searches`.
fn same_inode(
    fd: BorrowedFd<'_>,
    tree: u64,
    key: &InlineInode,
    searches: &AtomicU64,
) -> io::Result<bool> {
    let ino = key.ino;
    let mut item = None;
    let calls = bs::search(
        fd,
        tree,
        (ino, key_type::INODE_ITEM, 0),
        (ino, key_type::INODE_ITEM, u64::MAX),
        1,
        |it| {
            if (it.objectid, it.kind) == (ino, key_type::INODE_ITEM) {
                item = InodeItem::parse(it.data);
            }
            false
        },
    )?;
    searches.fetch_add(u64::from(calls), Ordering::Relaxed);
    let symlink = |mode: u32| mode & 0o170_000 == 0o120_000;
    Ok(item.is_some_and(|i| {
        i.size == key.size
            && ((i.secs[3], i.nsecs[3]), (i.secs[1], i.nsecs[1])) == key.times
            && symlink(i.mode) == key.symlink
    }))
}
