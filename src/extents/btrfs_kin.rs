//! The snapshot families of a Btrfs filesystem, read from its root tree
//! (root's tree search): which subvolumes may share tree blocks and data.
//!
//! A snapshot shares every block of its origin when it is made, and
//! keeps what neither side changed since; so two subvolumes share blocks
//! only if one descends from the other, or both from a third, through
//! snapshots. A root item names the UUID of the subvolume it is a
//! snapshot of (`parent_uuid`), and the families are the groups those
//! links join: a snapshot with its origin, and the snapshots of one origin
//! together, alive or deleted (a deleted subvolume's root item stays until
//! the cleaner has dropped its tree).
//!
//! Once the cleaner has dropped a snapshot `N` of `R`, a snapshot `M` of
//! `N` names a UUID no root item holds, yet still shares with `R` the
//! blocks `N` had from it. Such an orphan could descend from any
//! subvolume ever snapshotted (`last_snapshot`, set on the origin and the
//! snapshot when one is made), so it is joined to all of them and to every
//! other orphan: more subvolumes are asked about, none is missed.

use std::collections::HashMap;
use std::os::fd::BorrowedFd;

use sdu_sys::btrfs::{u32_at, u64_at};

use super::btrfs_refs::{ROOT_PARENT_UUID, ROOT_REFS, ROOT_UUID, subvolume_roots};

/// `btrfs_root_item.last_snapshot`.
const ROOT_LAST_SNAPSHOT: usize = 200;
/// `btrfs_root_item.otime`: seconds (8 bytes), then nanoseconds (4).
const ROOT_OTIME: usize = 339;

/// One subvolume of the root tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Subvolume {
    pub(crate) id: u64,
    /// Not deleted (`refs` > 0).
    pub(crate) alive: bool,
    /// When it was made (`otime`).
    pub(crate) created: (i64, u32),
    /// Its family, an index shared by the family's members.
    pub(crate) family: usize,
}

/// Every subvolume of a filesystem with its family, by id.
#[derive(Debug, Default)]
pub(crate) struct Kin {
    subvols: Vec<Subvolume>,
}

/// A root item as [`Kin::of`] reads it.
struct Root {
    id: u64,
    uuid: [u8; 16],
    parent: [u8; 16],
    alive: bool,
    snapshotted: bool,
    created: (i64, u32),
}

impl Kin {
    /// The subvolumes of the filesystem open at `fd`; `None` when its root
    /// tree cannot be read, or holds a root item without UUIDs.
    pub(crate) fn read(fd: BorrowedFd<'_>) -> Option<Kin> {
        let mut roots = Vec::new();
        let mut short = false;
        subvolume_roots(fd, |id, d| {
            if d.len() < ROOT_OTIME + 12 {
                short = true;
                return;
            }
            let uuid = |at: usize| -> [u8; 16] { d[at..at + 16].try_into().expect("16 bytes") };
            roots.push(Root {
                id,
                uuid: uuid(ROOT_UUID),
                parent: uuid(ROOT_PARENT_UUID),
                alive: u32_at(d, ROOT_REFS) > 0,
                snapshotted: u64_at(d, ROOT_LAST_SNAPSHOT) > 0,
                created: (u64_at(d, ROOT_OTIME) as i64, u32_at(d, ROOT_OTIME + 8)),
            });
        })
        .ok()?;
        (!short).then(|| Kin::of(roots))
    }

    /// The families of `roots`.
    fn of(mut roots: Vec<Root>) -> Kin {
        roots.sort_unstable_by_key(|r| r.id);
        roots.dedup_by_key(|r| r.id);
        let mut up: Vec<usize> = (0..roots.len()).collect();
        fn find(up: &mut [usize], mut i: usize) -> usize {
            while up[i] != i {
                up[i] = up[up[i]];
                i = up[i];
            }
            i
        }
        let join = |up: &mut Vec<usize>, i: usize, j: usize| {
            let (a, b) = (find(up, i), find(up, j));
            up[a] = b;
        };
        let orphan = |r: &Root| r.parent != [0; 16] && !roots.iter().any(|o| o.uuid == r.parent);
        let mut first_orphan = None;
        for i in 0..roots.len() {
            let parent = roots[i].parent;
            if parent == [0; 16] {
                continue;
            }
            // Its origin, and the other snapshots of the same origin (which
            // share blocks even when the origin is gone).
            for (j, r) in roots.iter().enumerate() {
                if j != i && (r.uuid == parent || r.parent == parent) {
                    join(&mut up, i, j);
                }
            }
            if orphan(&roots[i]) {
                let o = *first_orphan.get_or_insert(i);
                join(&mut up, i, o);
                for (j, r) in roots.iter().enumerate() {
                    if r.snapshotted {
                        join(&mut up, i, j);
                    }
                }
            }
        }
        let subvols = (0..roots.len())
            .map(|i| Subvolume {
                id: roots[i].id,
                alive: roots[i].alive,
                created: roots[i].created,
                family: find(&mut up, i),
            })
            .collect();
        Kin { subvols }
    }

    /// Subvolume `id`.
    pub(crate) fn get(&self, id: u64) -> Option<&Subvolume> {
        let i = self.subvols.binary_search_by_key(&id, |s| s.id).ok()?;
        Some(&self.subvols[i])
    }

    /// Every subvolume, by id.
    pub(crate) fn all(&self) -> &[Subvolume] {
        &self.subvols
    }

    /// Whether some family has two members or more: only then can a
    /// subvolume hold what another does.
    pub(crate) fn any_family(&self) -> bool {
        let mut f: Vec<usize> = self.subvols.iter().map(|s| s.family).collect();
        f.sort_unstable();
        f.windows(2).any(|w| w[0] == w[1])
    }
}

/// Whether a walk of the directory open at `fd` may meet Btrfs files
/// that two subvolumes hold: its subvolume holds another (or that cannot
/// be told), or as root (`search`), its filesystem has snapshots, which
/// may hold its files outside the scan (or that cannot be told).
pub(crate) fn may_share(fd: BorrowedFd<'_>, search: bool) -> bool {
    sdu_sys::btrfs::has_nested_subvol(fd).unwrap_or(true)
        || (search
            && sdu_sys::fs::fs_type(fd).is_ok_and(|m| m == crate::probe::magic::BTRFS)
            && Kin::read(fd).is_none_or(|k| k.any_family()))
}

/// Union-find over subvolume UUIDs, as `BTRFS_IOC_GET_SUBVOL_INFO` gives
/// them without root: the snapshot family of each, as far as the
/// subvolumes linked are known.
#[derive(Default)]
pub(crate) struct Uuids {
    parent: HashMap<[u8; 16], [u8; 16]>,
}

impl Uuids {
    pub(crate) fn find(&mut self, mut u: [u8; 16]) -> [u8; 16] {
        while let Some(&p) = self.parent.get(&u) {
            if p == u {
                break;
            }
            u = p;
        }
        u
    }

    pub(crate) fn union(&mut self, a: [u8; 16], b: [u8; 16]) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            // Deterministic: the smaller UUID represents the family.
            let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
            self.parent.insert(hi, lo);
            self.parent.entry(lo).or_insert(lo);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(id: u64, uuid: u8, parent: u8, snapshotted: bool) -> Root {
        Root {
            id,
            uuid: [uuid; 16],
            parent: [parent; 16],
            alive: true,
            snapshotted,
            created: (0, 0),
        }
    }

    fn family(k: &Kin, id: u64) -> usize {
        k.get(id).unwrap().family
    }

    #[test]
    fn snapshots_join_their_origin_and_each_other() {
        // 256 -> 257, 256 -> 258; 259 alone.
        let k = Kin::of(vec![
            root(256, 1, 0, true),
            root(257, 2, 1, true),
            root(258, 3, 1, true),
            root(259, 4, 0, false),
        ]);
        assert_eq!(family(&k, 256), family(&k, 257));
        assert_eq!(family(&k, 256), family(&k, 258));
        assert_ne!(family(&k, 256), family(&k, 259));
        let alone = Kin::of(vec![root(256, 1, 0, false), root(259, 4, 0, false)]);
        assert!(!alone.any_family());
    }

    #[test]
    fn a_snapshot_of_a_deleted_snapshot_stays_in_the_family() {
        // 256 -> (deleted, cleaned: 2) -> 258; 259 never snapshotted.
        let k = Kin::of(vec![
            root(256, 1, 0, true),
            root(258, 3, 2, true),
            root(259, 4, 0, false),
        ]);
        assert_eq!(family(&k, 256), family(&k, 258));
        assert_ne!(family(&k, 256), family(&k, 259));
        assert!(k.any_family());
    }
}
