//! The subvolumes of a Btrfs filesystem as its root tree holds them: one
//! read of the tree (root's tree search) into [`Subvolumes`], and what the
//! scan asks of it: a subvolume's root item, its snapshot family
//! ([`Subvolumes::family`]), its lineage ([`Subvolumes::lineage`]), the
//! snapshot that still holds its older leaves
//! ([`Subvolumes::kept_until`]), and whether a directory holds two members
//! of one lineage ([`Subvolumes::holds_lineage`]).
//!
//! A snapshot shares every block of its origin when it is made, and keeps
//! what neither side changed since; so two subvolumes share blocks only if
//! one descends from the other, or both from a third, through snapshots.
//! A root item names the UUID of the subvolume it is a snapshot of
//! (`parent_uuid`): the *family* of a subvolume is the group those links
//! join (a snapshot with its origin, and the snapshots of one origin
//! together, alive or deleted: a deleted subvolume's root item stays until
//! the cleaner has dropped its tree). The *lineage* of a subvolume is the
//! narrower set of snapshots of one origin and the origin itself, alive.
//!
//! The root item fields are parsed here and nowhere else. The kernel
//! writes a root item either in the legacy layout (up to `generation_v2`,
//! without UUIDs) or whole; the UUIDs, transaction ids and creation time
//! are read from a whole one ([`Subvolume::v2`]).
//!
//! # References
//!  - `include/uapi/linux/btrfs_tree.h` (`struct btrfs_root_item`,
//!    `struct btrfs_root_ref`)

use std::collections::HashMap;
use std::io;
use std::os::fd::BorrowedFd;

use super::search::{ROOT_TREE_OBJECTID, bad, ino_lookup, key_type, search, u32_at, u64_at};

/// A subvolume UUID; all zero: none.
pub type Uuid = [u8; 16];

const NO_UUID: Uuid = [0; 16];

/// Offsets in `struct btrfs_root_item` (after its 160-byte inode item).
const ROOT_GENERATION: usize = 160;
const ROOT_BYTENR: usize = 176;
const ROOT_LAST_SNAPSHOT: usize = 200;
const ROOT_REFS: usize = 216;
const ROOT_GENERATION_V2: usize = 239;
const ROOT_UUID: usize = 247;
const ROOT_PARENT_UUID: usize = 263;
const ROOT_OTRANSID: usize = 303;
/// `otime`: seconds (8 bytes), then nanoseconds (4).
const ROOT_OTIME: usize = 339;
/// The bytes of a root item that holds every field read here.
const ROOT_ITEM_V2: usize = ROOT_OTIME + 12;
/// The bytes of the shortest root item read at all.
const ROOT_ITEM_MIN: usize = ROOT_REFS + 4;

/// Key type of a `ROOT_REF` item: (parent subvolume, type, child), its
/// data the directory of the parent it lies in (`dirid`), a sequence
/// number, then its name's length and the name.
const ROOT_REF: u32 = 156;
const ROOT_REF_NAME: usize = 18;

/// The subvolume ids: the top level, then `BTRFS_FIRST_FREE_OBJECTID` to
/// `BTRFS_LAST_FREE_OBJECTID`.
const FS_TREE: u64 = 5;
const FIRST_FREE: u64 = 256;
const LAST_FREE: u64 = -256i64 as u64;

/// One subvolume's root item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Subvolume {
    /// Its id (the objectid of its root item).
    pub id: u64,
    /// `refs`: 0 once it is deleted (its tree may still be being dropped).
    pub refs: u32,
    /// `bytenr`: the address of its root node.
    pub bytenr: u64,
    /// `last_snapshot`: the transaction of the last snapshot taken of it
    /// (or of which it is a snapshot); 0: none.
    pub last_snapshot: u64,
    /// `generation`: the last transaction that changed its tree.
    pub generation: u64,
    /// The fields of a whole root item; `None` for a legacy one.
    pub v2: Option<RootV2>,
}

/// The fields of a root item past the legacy layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RootV2 {
    /// `uuid`.
    pub uuid: Uuid,
    /// `parent_uuid`: the subvolume it is a snapshot of (zero: none).
    pub parent_uuid: Uuid,
    /// `generation_v2`: equal to `generation` when the item was written
    /// by a kernel that knows these fields.
    pub generation_v2: u64,
    /// `otransid`: the transaction that made it.
    pub otransid: u64,
    /// `otime`: when it was made.
    pub created: (i64, u32),
}

impl Subvolume {
    /// Parses root item `d` of subvolume `id`; `None` if it is too short
    /// to hold `refs`.
    pub(crate) fn parse(id: u64, d: &[u8]) -> Option<Subvolume> {
        if d.len() < ROOT_ITEM_MIN {
            return None;
        }
        let uuid = |at: usize| -> Uuid { d[at..at + 16].try_into().expect("16 bytes") };
        Some(Subvolume {
            id,
            refs: u32_at(d, ROOT_REFS),
            bytenr: u64_at(d, ROOT_BYTENR),
            last_snapshot: u64_at(d, ROOT_LAST_SNAPSHOT),
            generation: u64_at(d, ROOT_GENERATION),
            v2: (d.len() >= ROOT_ITEM_V2).then(|| RootV2 {
                uuid: uuid(ROOT_UUID),
                parent_uuid: uuid(ROOT_PARENT_UUID),
                generation_v2: u64_at(d, ROOT_GENERATION_V2),
                otransid: u64_at(d, ROOT_OTRANSID),
                created: (u64_at(d, ROOT_OTIME) as i64, u32_at(d, ROOT_OTIME + 8)),
            }),
        })
    }

    /// Not deleted.
    pub fn alive(&self) -> bool {
        self.refs > 0
    }

    /// Its tree is as it was made: nothing written to it (nor any of its
    /// blocks relocated) since the transaction that made it.
    fn unchanged(&self) -> bool {
        self.v2
            .is_some_and(|v| v.generation_v2 == self.generation && v.otransid == self.generation)
    }
}

/// A `ROOT_REF`: subvolume `child` lies in directory `dirid` of subvolume
/// `parent`, under `name`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Nested {
    pub(crate) parent: u64,
    pub(crate) child: u64,
    pub(crate) dirid: u64,
    pub(crate) name: Vec<u8>,
}

/// The subvolumes of one filesystem, read from its root tree once.
#[derive(Debug, Default)]
pub struct Subvolumes {
    /// By id.
    by_id: Vec<Subvolume>,
    /// Every `ROOT_REF`, in key order (by parent, then child).
    nested: Vec<Nested>,
    /// By index in `by_id`: the family, as the smallest id of its members;
    /// `None` when a root item is legacy (no UUIDs to link).
    families: Option<Vec<u64>>,
    /// By `parent_uuid`: the indexes in `by_id` of the subvolumes with a
    /// whole root item that are snapshots of it.
    snapshots_of: HashMap<Uuid, Vec<usize>>,
}

impl Subvolumes {
    /// Reads the root tree of the filesystem open at `fd`: one search over
    /// the subvolume ids, for their `ROOT_ITEM`s and `ROOT_REF`s.
    ///
    /// # Errors
    /// The search's (`EPERM` without `CAP_SYS_ADMIN`); `InvalidData` for a
    /// root item too short to hold `refs`.
    pub fn read(fd: BorrowedFd<'_>) -> io::Result<Subvolumes> {
        let (mut roots, mut nested) = (Vec::new(), Vec::new());
        let mut short = false;
        search(
            fd,
            ROOT_TREE_OBJECTID,
            (FS_TREE, key_type::ROOT_ITEM, 0),
            (LAST_FREE, ROOT_REF, u64::MAX),
            u32::MAX,
            |it| {
                let subvolume = it.objectid == FS_TREE || it.objectid >= FIRST_FREE;
                if it.kind == key_type::ROOT_ITEM && subvolume {
                    match Subvolume::parse(it.objectid, it.data) {
                        Some(s) => roots.push(s),
                        None => short = true,
                    }
                } else if it.kind == ROOT_REF && it.data.len() >= ROOT_REF_NAME {
                    nested.push(Nested {
                        parent: it.objectid,
                        child: it.offset,
                        dirid: u64_at(it.data, 0),
                        name: it.data[ROOT_REF_NAME..].to_vec(),
                    });
                }
                !short
            },
        )?;
        if short {
            return Err(bad("a root item too short"));
        }
        Ok(Subvolumes::of(roots, nested))
    }

    /// The model of the root items `roots` and the `ROOT_REF`s `nested`.
    pub(crate) fn of(mut roots: Vec<Subvolume>, nested: Vec<Nested>) -> Subvolumes {
        roots.sort_by_key(|r| r.id);
        roots.dedup_by_key(|r| r.id);
        let mut snapshots_of: HashMap<Uuid, Vec<usize>> = HashMap::new();
        for (i, r) in roots.iter().enumerate() {
            if let Some(v) = r.v2.filter(|v| v.parent_uuid != NO_UUID) {
                snapshots_of.entry(v.parent_uuid).or_default().push(i);
            }
        }
        let families = roots
            .iter()
            .all(|r| r.v2.is_some())
            .then(|| families(&roots, &snapshots_of));
        Subvolumes {
            by_id: roots,
            nested,
            families,
            snapshots_of,
        }
    }

    /// Subvolume `id`.
    pub fn get(&self, id: u64) -> Option<&Subvolume> {
        let i = self.index(id)?;
        Some(&self.by_id[i])
    }

    fn index(&self, id: u64) -> Option<usize> {
        self.by_id.binary_search_by_key(&id, |s| s.id).ok()
    }

    /// Every subvolume, by id.
    pub fn all(&self) -> &[Subvolume] {
        &self.by_id
    }

    /// Whether the families are known: every root item is whole.
    pub fn has_families(&self) -> bool {
        self.families.is_some()
    }

    /// The snapshot family of subvolume `id`, as the smallest id of its
    /// members; `None` for an id without a root item, or when a root item
    /// is legacy.
    ///
    /// Once the cleaner has dropped a snapshot `N` of `R`, a snapshot `M`
    /// of `N` names a UUID no root item holds, yet still shares with `R`
    /// the blocks `N` had from it. Such an orphan could descend from any
    /// subvolume ever snapshotted (`last_snapshot`, set on the origin and
    /// the snapshot when one is made), so it is in one family with all of
    /// them and with every other orphan: more subvolumes are asked about,
    /// none is missed.
    pub fn family(&self, id: u64) -> Option<u64> {
        Some(self.families.as_ref()?[self.index(id)?])
    }

    /// Whether some family has two members or more: only then can a
    /// subvolume hold what another does. Unknown families: true.
    pub fn any_family(&self) -> bool {
        let Some(f) = &self.families else {
            return true;
        };
        let mut f = f.clone();
        f.sort_unstable();
        f.windows(2).any(|w| w[0] == w[1])
    }

    /// Whether subvolume `id` exists and is not deleted.
    pub fn alive(&self, id: u64) -> bool {
        self.get(id).is_some_and(Subvolume::alive)
    }

    /// The subvolume of UUID `uuid`, alive or deleted (a deleted one's root
    /// item stays until the cleaner has dropped its tree).
    pub fn with_uuid(&self, uuid: Uuid) -> Option<&Subvolume> {
        if uuid == NO_UUID {
            return None;
        }
        (self.by_id.iter()).find(|s| s.v2.is_some_and(|v| v.uuid == uuid))
    }

    /// The nearest subvolume alive that the subvolume of parent UUID
    /// `parent` descends from through snapshots, deleted ones passed
    /// through while their root items last: `Ok(uuid)`; `Err(uuid)` when the
    /// way up ends at a subvolume whose root item is gone (`uuid`, the
    /// first such); `Ok` of zero when `parent` is zero.
    pub fn alive_parent(&self, parent: Uuid) -> Result<Uuid, Uuid> {
        let mut u = parent;
        for _ in 0..=self.by_id.len() {
            match self.with_uuid(u) {
                _ if u == NO_UUID => return Ok(NO_UUID),
                Some(s) if s.alive() => return Ok(u),
                Some(s) => u = s.v2.map_or(NO_UUID, |v| v.parent_uuid),
                None => return Err(u),
            }
        }
        Err(u)
    }

    /// The first of the subvolumes alive that subvolume `id` descends
    /// from, itself included: where its snapshot links, followed up
    /// ([`Self::alive_parent`]), end at a subvolume that is a snapshot of
    /// none. `None` when a link on the way is gone, or `id` is unknown.
    pub fn first_ancestor(&self, id: u64) -> Option<Uuid> {
        let mut me = self.get(id)?.v2?;
        for _ in 0..=self.by_id.len() {
            if me.parent_uuid == NO_UUID {
                return Some(me.uuid);
            }
            let up = self.alive_parent(me.parent_uuid).ok()?;
            me = self.with_uuid(up)?.v2?;
        }
        None
    }

    /// The origin of the lineage of a subvolume of UUID `uuid` and parent
    /// UUID `parent`: itself if a subvolume alive is a snapshot of it,
    /// else the one it is a snapshot of.
    fn origin(&self, uuid: Uuid, parent: Uuid) -> Option<Uuid> {
        let snapshotted = |u: &Uuid| {
            (self.snapshots_of.get(u)).is_some_and(|s| s.iter().any(|&i| self.by_id[i].alive()))
        };
        if uuid != NO_UUID && snapshotted(&uuid) {
            Some(uuid)
        } else {
            (parent != NO_UUID).then_some(parent)
        }
    }

    /// For subvolume `tree`: the transaction that made its newest
    /// snapshot still as it was made, alive, and that snapshot's id; (0,
    /// 0) if it has none.
    ///
    /// A snapshot `R` is made in transaction `otransid` from the tree of
    /// `S` as it stands, and its root item's `generation` moves past
    /// `otransid` on the first change to its tree (a write, or the
    /// relocation of one of its blocks). A leaf of `S` written before
    /// `otransid` has been in `S` ever since (a changed leaf is written
    /// anew, and a tree never takes back a block it let go), so it was in
    /// `S` when `R` was made, and `R`, unchanged, still holds it.
    pub fn kept_until(&self, tree: u64) -> (u64, u64) {
        let Some(me) = self.get(tree).and_then(|s| s.v2).map(|v| v.uuid) else {
            return (0, 0);
        };
        if me == NO_UUID {
            return (0, 0);
        }
        (self.snapshots_of.get(&me).into_iter().flatten())
            .map(|&i| &self.by_id[i])
            .filter(|r| r.id != tree && r.alive() && r.unchanged() && r.generation > 0)
            .map(|r| (r.generation, r.id))
            .max()
            .unwrap_or((0, 0))
    }

    /// The lineage subvolume `id` belongs to, and the transaction since
    /// which its tree may differ from the lineage's other members
    /// ([`Lineage`]); `None`: it is in none.
    ///
    /// A snapshot `B` of `O` holds, unchanged since it was made, every
    /// block `O` held then; a block of `O` older than `B`'s `otransid`
    /// that `O` still holds has been in `O` ever since it was written (a
    /// tree never takes back a block it let go), so it was in `O` when `B`
    /// was made, and so it is in every snapshot of `O` made later too. So
    /// a leaf older than the oldest snapshot's `otransid`, in `O` or in any
    /// of its snapshots, holds what that snapshot held when it was made:
    /// items read from it in one member are the items every other member
    /// holds there.
    pub fn lineage(&self, id: u64) -> Option<Lineage> {
        let me = self.get(id)?.v2?;
        let origin = self.origin(me.uuid, me.parent_uuid)?;
        let oldest = (self.snapshots_of.get(&origin)?.iter())
            .map(|&i| &self.by_id[i])
            .filter(|r| r.alive() && r.v2.is_some_and(|v| v.otransid > 0))
            .min_by_key(|r| r.v2.map_or(0, |v| v.otransid))?;
        let v = oldest.v2?;
        Some(Lineage {
            origin,
            since: v.otransid,
            base: v.uuid == me.uuid && oldest.unchanged(),
        })
    }

    /// Whether `ids` (subvolumes alive or not) hold two members
    /// of one lineage, alive ([`Self::lineage`]): an origin and a snapshot
    /// of it, or two snapshots of one origin.
    pub fn two_of_a_lineage(&self, ids: &[u64]) -> bool {
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        ids.dedup();
        let mut origins: Vec<Uuid> = (ids.iter())
            .filter_map(|&id| self.get(id).filter(|s| s.alive())?.v2)
            .filter_map(|v| self.origin(v.uuid, v.parent_uuid))
            .collect();
        origins.sort_unstable();
        origins.windows(2).any(|w| w[0] == w[1])
    }

    /// `inside` and the subvolumes nested in them, at any depth, but
    /// `parent` (the subvolume `inside` lies in).
    fn nested_under(&self, parent: u64, mut inside: Vec<u64>) -> Vec<u64> {
        let mut i = 0;
        while let Some(&sub) = inside.get(i) {
            inside.extend(
                (self.nested.iter())
                    .filter(|n| n.parent == sub && n.child != parent)
                    .map(|n| n.child),
            );
            i += 1;
        }
        inside
    }

    /// Whether the directory open at `fd` holds, with the subvolumes
    /// under it at any depth, two members of one lineage
    /// ([`Self::two_of_a_lineage`]). A walk of it reads all but the first
    /// member it meets by difference, from memory.
    ///
    /// # Errors
    /// `fstat`'s and `BTRFS_IOC_INO_LOOKUP`'s.
    pub fn holds_lineage(&self, fd: BorrowedFd<'_>) -> io::Result<bool> {
        Ok(self.two_of_a_lineage(&self.under(fd)?))
    }

    /// The subvolumes a walk of the directory open at `fd` meets without
    /// crossing a mount: its own when `fd` is its root directory, and
    /// those whose root lies under `fd`, at any depth.
    ///
    /// # Errors
    /// `fstat`'s and `BTRFS_IOC_INO_LOOKUP`'s.
    pub fn under(&self, fd: BorrowedFd<'_>) -> io::Result<Vec<u64>> {
        let ino = rustix::fs::fstat(fd)?.st_ino;
        let (me, at) = ino_lookup(fd, 0, ino)?;
        let mut inside = if ino == 256 { vec![me] } else { Vec::new() };
        for n in self.nested.iter().filter(|n| n.parent == me) {
            let mut path = ino_lookup(fd, me, n.dirid)?.1;
            path.extend_from_slice(&n.name);
            path.push(b'/');
            if path.starts_with(&at) && path != at {
                inside.push(n.child);
            }
        }
        Ok(self.nested_under(me, inside))
    }

    /// Subvolume `id` and those nested in it, at any depth.
    pub fn nested_in(&self, id: u64) -> Vec<u64> {
        self.nested_under(0, vec![id])
    }

    /// The path of subvolume `id`'s root in the top level (subvolume 5),
    /// from its `ROOT_REF`s up: `a/b/snap` (no leading `/`); empty for the
    /// top level itself. `fd`: any file of the filesystem.
    ///
    /// # Errors
    /// `BTRFS_IOC_INO_LOOKUP`'s; `NotFound` for a subvolume no `ROOT_REF`
    /// links to the top level (deleted, or being made).
    pub fn path_in_top_level(&self, fd: BorrowedFd<'_>, id: u64) -> io::Result<Vec<u8>> {
        let mut parts: Vec<Vec<u8>> = Vec::new();
        let mut at = id;
        while at != FS_TREE {
            if parts.len() > self.by_id.len() {
                return Err(bad("a loop of ROOT_REFs"));
            }
            let n = (self.nested.iter())
                .find(|n| n.child == at)
                .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
            let mut part = ino_lookup(fd, n.parent, n.dirid)?.1;
            part.extend_from_slice(&n.name);
            parts.push(part);
            at = n.parent;
        }
        parts.reverse();
        let mut path = Vec::new();
        for p in parts {
            if !path.is_empty() && !path.ends_with(b"/") {
                path.push(b'/');
            }
            path.extend_from_slice(&p);
        }
        Ok(path)
    }
}

/// The families of `roots` (every one a whole root item), by index: the
/// smallest id of each. Union-find, each link made once.
fn families(roots: &[Subvolume], snapshots_of: &HashMap<Uuid, Vec<usize>>) -> Vec<u64> {
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
    let mut by_uuid: HashMap<Uuid, Vec<usize>> = HashMap::new();
    for (i, r) in roots.iter().enumerate() {
        if let Some(v) = r.v2.filter(|v| v.uuid != NO_UUID) {
            by_uuid.entry(v.uuid).or_default().push(i);
        }
    }
    let mut first_orphan = None;
    for (parent, snapshots) in snapshots_of {
        // The snapshots of one origin, together (they share blocks even
        // when the origin is gone), and with their origin.
        for &i in snapshots {
            join(&mut up, i, snapshots[0]);
        }
        match by_uuid.get(parent) {
            Some(origins) => origins.iter().for_each(|&o| join(&mut up, snapshots[0], o)),
            None => {
                let o = *first_orphan.get_or_insert(snapshots[0]);
                join(&mut up, snapshots[0], o);
            }
        }
    }
    if let Some(o) = first_orphan {
        for (j, r) in roots.iter().enumerate() {
            if r.last_snapshot > 0 {
                join(&mut up, o, j);
            }
        }
    }
    let mut smallest: Vec<u64> = vec![u64::MAX; roots.len()];
    for (i, r) in roots.iter().enumerate() {
        let f = find(&mut up, i);
        smallest[f] = smallest[f].min(r.id);
    }
    (0..roots.len())
        .map(|i| smallest[find(&mut up, i)])
        .collect()
}

/// The lineage a subvolume belongs to ([`Subvolumes::lineage`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lineage {
    /// The UUID of the subvolume whose snapshots its members are (the
    /// subvolume itself when it has snapshots, else the one it is a
    /// snapshot of).
    pub origin: Uuid,
    /// The `otransid` of the oldest of those snapshots.
    pub since: u64,
    /// The subvolume is that snapshot, unchanged since it was made: every
    /// leaf of it holds what the lineage's image takes.
    pub base: bool,
}

/// Union-find over subvolume UUIDs, as `BTRFS_IOC_GET_SUBVOL_INFO` gives
/// them without root: the snapshot family of each, as far as the
/// subvolumes linked are known (no orphans: a family linked through a
/// subvolume outside those given is two families here).
#[derive(Default)]
pub struct Uuids {
    parent: HashMap<Uuid, Uuid>,
}

impl Uuids {
    /// The representative of `u`'s family.
    pub fn find(&self, mut u: Uuid) -> Uuid {
        while let Some(&p) = self.parent.get(&u) {
            if p == u {
                break;
            }
            u = p;
        }
        u
    }

    /// Joins the families of `a` and `b`.
    pub fn union(&mut self, a: Uuid, b: Uuid) {
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
mod tests;
