//! Subvolumes deleted but not yet cleaned: the root tree's `ORPHAN_ITEM`s
//! (objectid `BTRFS_ORPHAN_OBJECTID`, offset the subvolume's id), each
//! root item with `refs` 0, whose tree the cleaner thread drops in the
//! background ([`dead_roots`]); and the data extents that dropping them
//! frees ([`dead_data`]). Both need `CAP_SYS_ADMIN` (the tree search).
//!
//! A dead root's own tree cannot be searched (`btrfs_get_fs_root` with
//! `check_ref` refuses a root with `refs` 0), so [`dead_data`] reads the
//! extent tree instead: every data extent whose references all lie in
//! dead roots is freed once they are dropped. An `EXTENT_DATA_REF` names
//! its root; a `SHARED_DATA_REF` names a leaf that several trees may
//! reach, and for those the kernel's backref walk (`LOGICAL_INO_V2`,
//! [`super::holders`]), which resolves dead roots too, names them.
//!
//! # References
//!  - `fs/btrfs/inode.c` (`btrfs_delete_subvolume`: refs set to 0,
//!    `btrfs_insert_orphan_item` in the root tree), `fs/btrfs/root-tree.c`
//!    (`btrfs_find_orphan_roots`), `fs/btrfs/extent-tree.c`
//!    (`btrfs_drop_snapshot`), `fs/btrfs/disk-io.c` (`cleaner_kthread`:
//!    idle on a read-only mount)

use std::io;
use std::os::fd::BorrowedFd;

use super::backref::holders;
use super::items::{DataRef, ExtentRefs};
use super::search::{
    EXTENT_TREE_OBJECTID, ROOT_TREE_OBJECTID, key_type, search, search_wide, u32_at, u64_at,
};

/// `BTRFS_ORPHAN_OBJECTID`: the objectid of the root tree's orphan items.
pub const ORPHAN_OBJECTID: u64 = (-5i64) as u64;
/// `BTRFS_ORPHAN_ITEM_KEY`.
pub const ORPHAN_ITEM: u32 = 48;

/// `btrfs_root_item.refs`.
const ROOT_REFS: usize = 216;
/// `btrfs_root_item.drop_progress`'s objectid: the inode the drop has
/// reached; 0 before it starts.
const ROOT_DROP_PROGRESS: usize = 220;
/// `BTRFS_EXTENT_FLAG_DATA`.
const EXTENT_FLAG_DATA: u64 = 1;

/// A deleted subvolume whose tree is not dropped yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeadRoot {
    /// Its id.
    pub id: u64,
    /// The cleaner has begun dropping it (`drop_progress` set): part of its
    /// data may be freed already.
    pub drop_started: bool,
}

/// The subvolumes deleted and not yet dropped on the Btrfs filesystem of
/// `fd`: each `ORPHAN_ITEM` of the root tree whose root item has `refs` 0,
/// by id.
///
/// # Errors
/// The tree search's: `EPERM` without `CAP_SYS_ADMIN`, `ENOTTY` off Btrfs.
pub fn dead_roots(fd: BorrowedFd<'_>) -> io::Result<Vec<DeadRoot>> {
    let mut ids = Vec::new();
    search(
        fd,
        ROOT_TREE_OBJECTID,
        (ORPHAN_OBJECTID, ORPHAN_ITEM, 0),
        (ORPHAN_OBJECTID, ORPHAN_ITEM, u64::MAX),
        256,
        |it| {
            if it.kind == ORPHAN_ITEM {
                ids.push(it.offset);
            }
            true
        },
    )?;
    let mut dead = Vec::with_capacity(ids.len());
    for id in ids {
        let mut root = None;
        search(
            fd,
            ROOT_TREE_OBJECTID,
            (id, key_type::ROOT_ITEM, 0),
            (id, key_type::ROOT_ITEM, u64::MAX),
            1,
            |it| {
                if it.data.len() >= ROOT_DROP_PROGRESS + 8 {
                    root = Some((
                        u32_at(it.data, ROOT_REFS),
                        u64_at(it.data, ROOT_DROP_PROGRESS),
                    ));
                }
                false
            },
        )?;
        if let Some((0, progress)) = root {
            dead.push(DeadRoot {
                id,
                drop_started: progress != 0,
            });
        }
    }
    Ok(dead)
}

/// The data extents dropping some dead roots frees.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeadData {
    /// Per dead root, the bytes on disk of the extents it frees, each
    /// extent counted under the lowest id of the dead roots holding it.
    pub per_root: Vec<(u64, u64)>,
    /// Their sum: each extent once.
    pub bytes: u64,
    /// Extents held through a shared leaf whose holders the backref walk
    /// could not list whole (its buffer overflowed, or it failed): not
    /// counted, so [`Self::bytes`] is at least what is freed by this
    /// many bytes' worth of doubt.
    pub unresolved: u64,
}

/// What dropping the trees of `dead` (subvolume ids) frees of data on the
/// Btrfs filesystem of `fd`: every data extent each of whose references
/// lies in one of them, its bytes on disk (compressed, for a compressed
/// extent). Reads the whole extent tree (one pass; nothing without dead
/// roots: the caller asks only when [`dead_roots`] found some).
///
/// Exact for extents referenced by root (`EXTENT_DATA_REF`); for one
/// referenced through a shared leaf, exact when the backref walk lists its
/// holders, else counted in [`DeadData::unresolved`]. Extents written since
/// the last commit are not in the extent tree yet; none of them is a dead
/// root's.
///
/// # Errors
/// The tree search's: `EPERM` without `CAP_SYS_ADMIN`.
pub fn dead_data(fd: BorrowedFd<'_>, dead: &[u64]) -> io::Result<DeadData> {
    let mut got = DeadData::default();
    if dead.is_empty() {
        return Ok(got);
    }
    // The current data extent (its address, bytes and refs), and the
    // extents judged so far that no live root's ref rules out.
    let mut cur: Option<(u64, u64, ExtentRefs)> = None;
    let mut pending: Vec<(u64, u64, ExtentRefs)> = Vec::new();
    let keep = |c: Option<(u64, u64, ExtentRefs)>, pending: &mut Vec<_>| {
        if let Some(c) = c
            && dead_only(&c.2, dead) != Some(false)
        {
            pending.push(c);
        }
    };
    search_wide(
        fd,
        EXTENT_TREE_OBJECTID,
        (0, key_type::EXTENT_ITEM, 0),
        (u64::MAX, key_type::SHARED_DATA_REF, u64::MAX),
        4096,
        true,
        0,
        0,
        |it| {
            match it.kind {
                key_type::EXTENT_ITEM => {
                    keep(cur.take(), &mut pending);
                    if it.data.len() >= 24 && u64_at(it.data, 16) & EXTENT_FLAG_DATA != 0 {
                        let mut refs = ExtentRefs::default();
                        refs.add(it.kind, it.offset, it.data);
                        cur = Some((it.objectid, it.offset, refs));
                    }
                }
                key_type::EXTENT_DATA_REF | key_type::SHARED_DATA_REF => {
                    if let Some((bytenr, _, refs)) = cur.as_mut()
                        && *bytenr == it.objectid
                    {
                        refs.add(it.kind, it.offset, it.data);
                    }
                }
                _ => {}
            }
            true
        },
    )?;
    keep(cur.take(), &mut pending);
    for (bytenr, bytes, refs) in pending {
        let owner = match dead_only(&refs, dead) {
            Some(true) => refs
                .list
                .iter()
                .filter_map(|r| match *r {
                    DataRef::Indirect { root, .. } => Some(root),
                    DataRef::Shared { .. } => None,
                })
                .min(),
            Some(false) => continue,
            // Through a shared leaf: who reaches it?
            None => match holders(fd, bytenr) {
                Ok(h) if !h.truncated => {
                    let roots: Vec<u64> = h.list.iter().map(|&(r, _)| r).collect();
                    if roots.is_empty() || !roots.iter().all(|r| dead.contains(r)) {
                        continue;
                    }
                    roots.into_iter().min()
                }
                _ => {
                    got.unresolved += bytes;
                    continue;
                }
            },
        };
        let Some(owner) = owner else { continue };
        got.bytes += bytes;
        match got.per_root.iter_mut().find(|(r, _)| *r == owner) {
            Some((_, b)) => *b += bytes,
            None => got.per_root.push((owner, bytes)),
        }
    }
    got.per_root.sort_unstable();
    Ok(got)
}

/// Whether every reference of an extent lies in a dead root: `Some(true)`
/// when each is an `EXTENT_DATA_REF` of one, `Some(false)` when one is a
/// live root's (or the item was not understood), `None` when the answer
/// hangs on shared leaves' holders.
fn dead_only(refs: &ExtentRefs, dead: &[u64]) -> Option<bool> {
    if refs.unknown || !refs.found || refs.list.is_empty() {
        return Some(false);
    }
    let mut shared = false;
    for r in &refs.list {
        match *r {
            DataRef::Indirect { root, .. } if !dead.contains(&root) => return Some(false),
            DataRef::Indirect { .. } => {}
            DataRef::Shared { .. } => shared = true,
        }
    }
    if shared { None } else { Some(true) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(list: Vec<DataRef>) -> ExtentRefs {
        ExtentRefs {
            found: true,
            refs: list.len() as u64,
            list,
            unknown: false,
        }
    }

    #[test]
    fn an_extent_is_freed_when_each_ref_is_a_dead_roots() {
        let ind = |root| DataRef::Indirect {
            root,
            ino: 257,
            offset: 0,
            count: 1,
        };
        let dead = [258, 260];
        assert_eq!(dead_only(&refs(vec![ind(258)]), &dead), Some(true));
        assert_eq!(
            dead_only(&refs(vec![ind(258), ind(260)]), &dead),
            Some(true)
        );
        assert_eq!(dead_only(&refs(vec![ind(258), ind(5)]), &dead), Some(false));
        let shared = DataRef::Shared {
            parent: 1 << 20,
            count: 1,
        };
        assert_eq!(dead_only(&refs(vec![ind(258), shared]), &dead), None);
        assert_eq!(dead_only(&refs(vec![ind(5), shared]), &dead), Some(false));
        assert_eq!(dead_only(&refs(vec![]), &dead), Some(false));
        let mut odd = refs(vec![ind(258)]);
        odd.unknown = true;
        assert_eq!(dead_only(&odd, &dead), Some(false));
    }
}
