//! Whether a Btrfs data extent is shared, decided from the extent tree's
//! refs and the file-tree leaf generations, exactly as the kernel's FIEMAP
//! decides it (`btrfs_is_data_extent_shared`, fs/btrfs/backref.c), or not
//! at all.
//!
//! The kernel counts the extent's distinct references (an
//! `EXTENT_DATA_REF` is one per subvolume, inode and file position less
//! the item's offset, however many items it counts; a `SHARED_DATA_REF`
//! one per leaf): two or more, and it is shared. With one, the data can
//! still be shared through a leaf that snapshots share, where the ref
//! count stays 1: the kernel then walks up the tree from the leaf, which
//! the tree search cannot (it does not give the leaf's address). What it
//! can decide:
//!
//! - one `EXTENT_DATA_REF` of another subvolume `R` that is alive, for an
//!   item found in subvolume `S`: `S` reaches the item through a block it
//!   shares with `R`, and `R` reaches it by its ref: shared;
//! - one `EXTENT_DATA_REF` of `S` itself, whose items are all this file's
//!   and all in leaves written after `S`'s last snapshot
//!   (`last_snapshot`): no snapshot can share those leaves: not shared
//!   (the kernel's own shortcut, by the extent's generation, is implied);
//! - one `SHARED_DATA_REF`, the leaf `P` holding every item that refers
//!   to the extent (a leaf that snapshots shared and one of them copied):
//!   the kernel walks up from `P`, and so can sdu, since the ref gives
//!   `P`'s address: a block with two refs or more is shared; one
//!   `SHARED_BLOCK_REF` leads to its parent; one `TREE_BLOCK_REF` of this
//!   subvolume on its root node ends the walk, not shared ([`up_from`]);
//! - one `EXTENT_DATA_REF` of `S` itself, whose items are all in leaves
//!   written before a snapshot `R` of `S` was made, `R` alive and its
//!   tree unchanged since (its root item's `generation` is still its
//!   `otransid`): a block of `S` older than that transaction has been in
//!   `S` ever since (a tree never takes back a block it let go), so `R`
//!   was made with it and still holds it, and the kernel's walk up from
//!   the leaf meets a block both trees hold: shared
//!   ([`sdu_sys::btrfs::Subvolumes::kept_until`]);
//! - anything else (a leaf as old as the last snapshot with no such `R`,
//!   refs from the relocation tree, an item not understood): undecided,
//!   and the caller asks FIEMAP for that file.

use std::io;
use std::os::fd::BorrowedFd;

use sdu_sys::btrfs::{
    DATA_RELOC_TREE_OBJECTID, DataRef, EXTENT_TREE_OBJECTID, ExtentRefs, key_type, search, u64_at,
};

/// What the refs say of one data extent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// FIEMAP flags it shared.
    Shared,
    /// FIEMAP does not.
    NotShared,
    /// Only FIEMAP (the kernel's walk up the tree) can tell.
    Undecided,
    /// FIEMAP flags it shared, and the same inode of this subvolume holds
    /// it too, through a leaf the two share
    /// ([`sdu_sys::btrfs::Subvolumes::kept_until`]).
    HeldBy(u64),
}

/// One item of the file being read that references the extent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OwnItem {
    /// The item's file position less its offset into the extent: the
    /// `offset` of its `EXTENT_DATA_REF`.
    pub(crate) ref_offset: u64,
    /// The generation of the leaf holding it.
    pub(crate) leaf_gen: u64,
}

/// Where the file lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileAt {
    /// Its subvolume.
    pub(crate) root: u64,
    /// Its inode number.
    pub(crate) ino: u64,
    /// The subvolume's `last_snapshot`.
    pub(crate) last_snapshot: u64,
    /// A leaf of the subvolume older than this is shared with the
    /// snapshot `kept_by`
    /// ([`sdu_sys::btrfs::Subvolumes::kept_until`]; 0: none known).
    pub(crate) kept_until: u64,
    pub(crate) kept_by: u64,
}

/// [`decide_items`] with the file's items as a slice (the tests').
#[cfg(test)]
pub(crate) fn decide(
    refs: &ExtentRefs,
    at: FileAt,
    own: &[OwnItem],
    alive: impl Fn(u64) -> Option<bool>,
    leaf: impl FnOnce(u64) -> Verdict,
) -> Verdict {
    decide_items(refs, at, own.iter().copied(), alive, leaf)
}

/// Decides whether the extent whose refs are `refs` is shared, for the
/// file `at` whose items referencing it are `own` (an iterator: the walk
/// reads them from the file's extent items, with no list made for each
/// extent); `alive(root)` tells whether a subvolume exists and is not
/// deleted (`None`: unknown), and `leaf(p)` whether the leaf at `p` is
/// shared ([`up_from`]).
pub(crate) fn decide_items<I>(
    refs: &ExtentRefs,
    at: FileAt,
    own: I,
    alive: impl Fn(u64) -> Option<bool>,
    leaf: impl FnOnce(u64) -> Verdict,
) -> Verdict
where
    I: Iterator<Item = OwnItem> + Clone,
{
    if !refs.found || refs.unknown {
        return Verdict::Undecided;
    }
    let count = |r: &DataRef| match *r {
        DataRef::Indirect { count, .. } | DataRef::Shared { count, .. } => u64::from(count),
    };
    // The counts must add up to the item's: anything else is a tree in
    // flux, or not understood.
    if refs.list.iter().map(count).sum::<u64>() != refs.refs {
        return Verdict::Undecided;
    }
    let mut live = refs.list.iter().filter(|r| count(r) > 0);
    if live
        .clone()
        .any(|r| matches!(r, DataRef::Indirect { root, .. } if *root == DATA_RELOC_TREE_OBJECTID))
    {
        return Verdict::Undecided;
    }
    let (Some(only), None) = (live.next(), live.next()) else {
        // None live, or two or more.
        return match refs.list.iter().any(|r| count(r) > 0) {
            true => Verdict::Shared,
            false => Verdict::Undecided,
        };
    };
    match *only {
        DataRef::Shared { parent, count } => {
            // Every item referring to the extent is in that leaf: they must
            // all be this file's (the kernel's walk would not tell two
            // inodes of one leaf apart).
            if own.count() as u64 == u64::from(count) {
                leaf(parent)
            } else {
                Verdict::Undecided
            }
        }
        DataRef::Indirect {
            root,
            ino,
            offset,
            count,
        } => {
            if root != at.root {
                return match alive(root) {
                    Some(true) => Verdict::Shared,
                    _ => Verdict::Undecided,
                };
            }
            let mine = own.clone().filter(|i| i.ref_offset == offset);
            let n = mine.clone().count();
            // The ref counts this file's items, and nothing else.
            let exact = ino == at.ino && n > 0 && n as u64 == u64::from(count) && n == own.count();
            if exact && mine.clone().all(|i| i.leaf_gen > at.last_snapshot) {
                Verdict::NotShared
            } else if exact && mine.clone().all(|i| i.leaf_gen < at.kept_until) {
                Verdict::HeldBy(at.kept_by)
            } else {
                Verdict::Undecided
            }
        }
    }
}

/// One reference to a tree block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BlockRef {
    /// `TREE_BLOCK_REF`: by the subvolume whose tree holds it.
    Tree(u64),
    /// `SHARED_BLOCK_REF`: by its parent node, at this address.
    Parent(u64),
}

/// The extent item of a tree block and its refs.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct BlockRefs {
    /// Its `METADATA_ITEM` (or `EXTENT_ITEM`) was found.
    pub(crate) found: bool,
    /// `btrfs_extent_item.refs`.
    pub(crate) refs: u64,
    /// The refs, inline and keyed.
    pub(crate) list: Vec<BlockRef>,
    /// Something not understood.
    pub(crate) unknown: bool,
}

/// `BTRFS_EXTENT_FLAG_TREE_BLOCK`.
const EXTENT_FLAG_TREE_BLOCK: u64 = 2;

impl BlockRefs {
    /// Takes in one item of the block's keys.
    pub(crate) fn add(&mut self, kind: u32, key_offset: u64, d: &[u8]) {
        // After the extent item (refs, generation, flags): a tree block
        // info (key and level) unless skinny.
        let start = match kind {
            key_type::METADATA_ITEM => 24,
            key_type::EXTENT_ITEM => 24 + 18,
            key_type::TREE_BLOCK_REF => return self.list.push(BlockRef::Tree(key_offset)),
            key_type::SHARED_BLOCK_REF => return self.list.push(BlockRef::Parent(key_offset)),
            _ => {
                self.unknown = true;
                return;
            }
        };
        if d.len() < start || u64_at(d, 16) & EXTENT_FLAG_TREE_BLOCK == 0 {
            self.unknown = true;
            return;
        }
        self.found = true;
        self.refs = u64_at(d, 0);
        let mut p = start;
        while p + 9 <= d.len() {
            let v = u64_at(d, p + 1);
            match u32::from(d[p]) {
                key_type::TREE_BLOCK_REF => self.list.push(BlockRef::Tree(v)),
                key_type::SHARED_BLOCK_REF => self.list.push(BlockRef::Parent(v)),
                key_type::EXTENT_OWNER_REF => {}
                _ => {
                    self.unknown = true;
                    return;
                }
            }
            p += 9;
        }
        if p != d.len() {
            self.unknown = true;
        }
    }
}

/// The refs of the tree block at `bytenr`. `fd`: any file of the
/// filesystem.
pub(crate) fn block_refs(fd: BorrowedFd<'_>, bytenr: u64) -> io::Result<BlockRefs> {
    let mut got = BlockRefs::default();
    search(
        fd,
        EXTENT_TREE_OBJECTID,
        (bytenr, key_type::EXTENT_ITEM, 0),
        (bytenr, key_type::SHARED_BLOCK_REF, u64::MAX),
        1,
        |it| {
            got.add(it.kind, it.offset, it.data);
            !got.unknown && (got.list.len() as u64) < got.refs
        },
    )?;
    Ok(got)
}

/// Whether the leaf at `leaf` is shared, walking up its parents as the
/// kernel does: a block with two refs or more is shared; one
/// `SHARED_BLOCK_REF` leads to the parent; one `TREE_BLOCK_REF` of the
/// file's subvolume `at.root` on its root node (at `root_node`) is not
/// shared. Anything else is undecided. `refs(b)`: the refs of block `b`.
pub(crate) fn up_from(
    leaf: u64,
    at: FileAt,
    root_node: u64,
    refs: impl Fn(u64) -> Option<BlockRefs>,
) -> Verdict {
    let mut b = leaf;
    // BTRFS_MAX_LEVEL levels at most.
    for _ in 0..8 {
        let Some(r) = refs(b) else {
            return Verdict::Undecided;
        };
        if !r.found || r.unknown || r.list.len() as u64 != r.refs {
            return Verdict::Undecided;
        }
        match r.list.as_slice() {
            [_, _, ..] => return Verdict::Shared,
            [BlockRef::Parent(p)] => b = *p,
            [BlockRef::Tree(root)] if *root == at.root && b == root_node => {
                return Verdict::NotShared;
            }
            _ => return Verdict::Undecided,
        }
    }
    Verdict::Undecided
}

/// A data extent's refs as the scan keeps them from the walk to the sweep
/// ([`crate::extents::Extents::cached_refs`]): LEB128 varints in one
/// allocation, about 6 bytes a ref where an [`ExtentRefs`] takes 32 a ref
/// and two allocations. Snapshots that differ hold extents with many
/// refs (at 40 snapshots, 7.4 an extent met shared: one per leaf a
/// snapshot copied), kept for every extent met.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PackedRefs(Box<[u8]>);

const PACKED_FOUND: u64 = 1;
const PACKED_UNKNOWN: u64 = 2;
/// [`shared_whoever`] holds: the refs decide "shared" for any file.
const PACKED_SHARED: u64 = 4;

/// Whether refs `r` make their extent shared whichever file asks
/// ([`decide_items`]'s answer for every file: two live refs or more, and
/// nothing that makes it undecided).
pub(crate) fn shared_whoever(r: &ExtentRefs) -> bool {
    let anyone = FileAt {
        root: 0,
        ino: 0,
        last_snapshot: 0,
        kept_until: 0,
        kept_by: 0,
    };
    // With no subvolume known alive and no leaf known, only two live refs
    // or more answer "shared".
    let v = decide_items(
        r,
        anyone,
        std::iter::empty(),
        |_| None,
        |_| Verdict::Undecided,
    );
    v == Verdict::Shared
}

impl PackedRefs {
    /// `r`, packed.
    pub(crate) fn of(r: &ExtentRefs) -> PackedRefs {
        let mut v = Vec::with_capacity(4 + r.list.len() * 8);
        let flags = if r.found { PACKED_FOUND } else { 0 }
            | if r.unknown { PACKED_UNKNOWN } else { 0 }
            | if shared_whoever(r) { PACKED_SHARED } else { 0 };
        for x in [flags, r.refs, r.list.len() as u64] {
            put_varint(&mut v, x);
        }
        for d in &r.list {
            match *d {
                DataRef::Indirect {
                    root,
                    ino,
                    offset,
                    count,
                } => {
                    for x in [0, root, ino, offset, u64::from(count)] {
                        put_varint(&mut v, x);
                    }
                }
                DataRef::Shared { parent, count } => {
                    for x in [1, parent, u64::from(count)] {
                        put_varint(&mut v, x);
                    }
                }
            }
        }
        PackedRefs(v.into_boxed_slice())
    }

    /// [`shared_whoever`] of the refs packed, without unpacking them.
    pub(crate) fn shared_whoever(&self) -> bool {
        get_varint(&self.0, &mut 0) & PACKED_SHARED != 0
    }

    /// The refs packed.
    pub(crate) fn unpack(&self) -> ExtentRefs {
        let mut r = ExtentRefs::default();
        self.unpack_into(&mut r);
        r
    }

    /// The refs packed, into `r` (its list's room kept).
    pub(crate) fn unpack_into(&self, r: &mut ExtentRefs) {
        let mut at = 0;
        let mut next = || get_varint(&self.0, &mut at);
        let (flags, refs, n) = (next(), next(), next());
        let mut list = std::mem::take(&mut r.list);
        list.clear();
        list.reserve(usize::try_from(n).unwrap_or(0));
        // A count was a `u32` when packed.
        let count = |x: u64| u32::try_from(x).unwrap_or(u32::MAX);
        for _ in 0..n {
            list.push(match next() {
                0 => DataRef::Indirect {
                    root: next(),
                    ino: next(),
                    offset: next(),
                    count: count(next()),
                },
                _ => DataRef::Shared {
                    parent: next(),
                    count: count(next()),
                },
            });
        }
        *r = ExtentRefs {
            found: flags & PACKED_FOUND != 0,
            refs,
            list,
            unknown: flags & PACKED_UNKNOWN != 0,
        };
    }
}

/// Appends `x` as a LEB128 varint: 7 bits a byte, the top bit set on all
/// but the last.
fn put_varint(v: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        v.push((x as u8) | 0x80);
        x >>= 7;
    }
    v.push(x as u8);
}

/// The varint at `*at` of `b` ([`put_varint`]'s), `*at` moved past it.
fn get_varint(b: &[u8], at: &mut usize) -> u64 {
    let mut x = 0u64;
    let mut shift = 0;
    while let Some(&byte) = b.get(*at) {
        *at += 1;
        x |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(list: Vec<DataRef>) -> ExtentRefs {
        let refs = list
            .iter()
            .map(|r| match *r {
                DataRef::Indirect { count, .. } | DataRef::Shared { count, .. } => u64::from(count),
            })
            .sum();
        ExtentRefs {
            found: true,
            refs,
            list,
            unknown: false,
        }
    }

    fn ind(root: u64, ino: u64, offset: u64, count: u32) -> DataRef {
        DataRef::Indirect {
            root,
            ino,
            offset,
            count,
        }
    }

    const AT: FileAt = FileAt {
        root: 256,
        ino: 300,
        last_snapshot: 10,
        kept_until: 0,
        kept_by: 0,
    };

    fn own(ref_offset: u64, leaf_gen: u64) -> OwnItem {
        OwnItem {
            ref_offset,
            leaf_gen,
        }
    }

    #[test]
    fn two_refs_are_shared() {
        // A reflink into another file; a clone inside the file (two ref
        // offsets); one extent in two subvolumes by refs of their own.
        for l in [
            vec![ind(256, 300, 0, 1), ind(256, 301, 0, 1)],
            vec![ind(256, 300, 0, 1), ind(256, 300, 65536, 1)],
            vec![
                ind(256, 300, 0, 1),
                DataRef::Shared {
                    parent: 1,
                    count: 1,
                },
            ],
        ] {
            assert_eq!(
                decide(
                    &refs(l),
                    AT,
                    &[own(0, 20)],
                    |_| Some(true),
                    |_| Verdict::Undecided
                ),
                Verdict::Shared
            );
        }
    }

    #[test]
    fn one_ref_of_its_own_after_the_last_snapshot_is_not_shared() {
        let r = refs(vec![ind(256, 300, 0, 2)]);
        // A bookend: two items of the file, one ref counting both.
        let both = [own(0, 20), own(0, 11)];
        assert_eq!(
            decide(&r, AT, &both, |_| None, |_| Verdict::Undecided),
            Verdict::NotShared
        );
        // One of them in a leaf a snapshot may share.
        let old = [own(0, 20), own(0, 10)];
        assert_eq!(
            decide(&r, AT, &old, |_| None, |_| Verdict::Undecided),
            Verdict::Undecided
        );
        // The ref counts an item this file does not hold.
        assert_eq!(
            decide(&r, AT, &[own(0, 20)], |_| None, |_| Verdict::Undecided),
            Verdict::Undecided
        );
    }

    #[test]
    fn one_ref_of_its_own_before_an_unchanged_snapshot_is_held_by_it() {
        // Snapshot 260 was made in transaction 12, and is as it was made.
        let at = FileAt {
            kept_until: 12,
            kept_by: 260,
            ..AT
        };
        let r = refs(vec![ind(256, 300, 0, 2)]);
        let both = [own(0, 9), own(0, 11)];
        assert_eq!(
            decide(&r, at, &both, |_| None, |_| Verdict::Undecided),
            Verdict::HeldBy(260)
        );
        // One item in a leaf written in that transaction or after it: the
        // snapshot may not hold it.
        for newer in [12, 13] {
            let mixed = [own(0, 9), own(0, newer)];
            assert_eq!(
                decide(&r, at, &mixed, |_| None, |_| Verdict::Undecided),
                Verdict::Undecided,
                "leaf of generation {newer}"
            );
        }
        // The ref counts an item this file does not hold, or names another
        // inode: not this file's extent alone.
        assert_eq!(
            decide(&r, at, &[own(0, 9)], |_| None, |_| Verdict::Undecided),
            Verdict::Undecided
        );
        let other = refs(vec![ind(256, 301, 0, 2)]);
        assert_eq!(
            decide(&other, at, &both, |_| None, |_| Verdict::Undecided),
            Verdict::Undecided
        );
        // No such snapshot.
        assert_eq!(
            decide(&r, AT, &both, |_| None, |_| Verdict::Undecided),
            Verdict::Undecided
        );
    }

    #[test]
    fn one_ref_of_another_subvolume() {
        let r = refs(vec![ind(257, 300, 0, 1)]);
        assert_eq!(
            decide(
                &r,
                AT,
                &[own(0, 3)],
                |t| Some(t == 257),
                |_| Verdict::Undecided
            ),
            Verdict::Shared
        );
        // Deleted, or unknown: the kernel may or may not find it.
        assert_eq!(
            decide(
                &r,
                AT,
                &[own(0, 3)],
                |_| Some(false),
                |_| Verdict::Undecided
            ),
            Verdict::Undecided
        );
        assert_eq!(
            decide(&r, AT, &[own(0, 3)], |_| None, |_| Verdict::Undecided),
            Verdict::Undecided
        );
    }

    #[test]
    fn one_shared_data_ref_walks_up_from_its_leaf() {
        let r = refs(vec![DataRef::Shared {
            parent: 7,
            count: 1,
        }]);
        for v in [Verdict::Shared, Verdict::NotShared, Verdict::Undecided] {
            let got = decide(
                &r,
                AT,
                &[own(0, 3)],
                |_| None,
                |p| {
                    assert_eq!(p, 7);
                    v
                },
            );
            assert_eq!(got, v);
        }
        // Another inode's item in that leaf: undecided.
        let two = refs(vec![DataRef::Shared {
            parent: 7,
            count: 2,
        }]);
        assert_eq!(
            decide(&two, AT, &[own(0, 3)], |_| None, |_| Verdict::NotShared),
            Verdict::Undecided
        );
        let b = |list: Vec<BlockRef>| BlockRefs {
            found: true,
            refs: list.len() as u64,
            list,
            unknown: false,
        };
        // Leaf 7 -> node 8 -> root node 9 of subvolume 256.
        let tree = |x: u64| match x {
            7 => Some(b(vec![BlockRef::Parent(8)])),
            8 => Some(b(vec![BlockRef::Parent(9)])),
            9 => Some(b(vec![BlockRef::Tree(256)])),
            _ => None,
        };
        assert_eq!(up_from(7, AT, 9, tree), Verdict::NotShared);
        // The node shared by two snapshots.
        let shared = |x: u64| match x {
            8 => Some(b(vec![BlockRef::Parent(9), BlockRef::Parent(10)])),
            _ => tree(x),
        };
        assert_eq!(up_from(7, AT, 9, shared), Verdict::Shared);
        // An indirect ref on a block that is not the root node.
        let indirect = |x: u64| match x {
            8 => Some(b(vec![BlockRef::Tree(256)])),
            _ => tree(x),
        };
        assert_eq!(up_from(7, AT, 9, indirect), Verdict::Undecided);
        assert_eq!(up_from(7, AT, 9, |_| None), Verdict::Undecided);
    }

    #[test]
    fn tree_block_items_parse() {
        // A skinny METADATA_ITEM: refs 2, generation, flags TREE_BLOCK,
        // then a TREE_BLOCK_REF (root 5) and a SHARED_BLOCK_REF.
        let mut d = Vec::new();
        for v in [2u64, 9, EXTENT_FLAG_TREE_BLOCK] {
            d.extend_from_slice(&v.to_le_bytes());
        }
        d.push(key_type::TREE_BLOCK_REF as u8);
        d.extend_from_slice(&5u64.to_le_bytes());
        d.push(key_type::SHARED_BLOCK_REF as u8);
        d.extend_from_slice(&(30u64 << 12).to_le_bytes());
        let mut r = BlockRefs::default();
        r.add(key_type::METADATA_ITEM, 0, &d);
        r.add(key_type::SHARED_BLOCK_REF, 31 << 12, &[]);
        assert!(r.found && !r.unknown && r.refs == 2);
        assert_eq!(
            r.list,
            vec![
                BlockRef::Tree(5),
                BlockRef::Parent(30 << 12),
                BlockRef::Parent(31 << 12)
            ]
        );
        // A data extent's item is not a tree block's.
        let mut data = BlockRefs::default();
        data.add(key_type::METADATA_ITEM, 0, &[0u8; 24]);
        assert!(data.unknown && !data.found);
    }

    #[test]
    fn what_only_the_kernel_can_tell() {
        let reloc = refs(vec![
            ind(256, 300, 0, 1),
            ind(DATA_RELOC_TREE_OBJECTID, 257, 0, 1),
        ]);
        let mut flux = refs(vec![ind(256, 300, 0, 1)]);
        flux.refs = 2;
        let mut unknown = refs(vec![ind(256, 300, 0, 1)]);
        unknown.unknown = true;
        for r in [reloc, flux, unknown, ExtentRefs::default()] {
            assert_eq!(
                decide(
                    &r,
                    AT,
                    &[own(0, 20)],
                    |_| Some(true),
                    |_| Verdict::Undecided
                ),
                Verdict::Undecided,
                "{r:?}"
            );
        }
    }

    /// A packed list gives back what was packed: each kind of ref, values
    /// at each varint width up to 64 bits, the flags, and an empty list.
    #[test]
    fn packed_refs_give_back_what_was_packed() {
        let mut r = refs(vec![
            ind(256, 300, 0, 1),
            DataRef::Shared {
                parent: 30_408_704,
                count: 3,
            },
            ind(u64::MAX, 1 << 63, (1 << 35) + 7, u32::MAX),
            DataRef::Shared {
                parent: u64::MAX,
                count: 0,
            },
            ind(5, 127, 128, 16_384),
        ]);
        assert_eq!(PackedRefs::of(&r).unpack(), r);
        let packed = PackedRefs::of(&r).0.len();
        assert!(
            packed < r.list.len() * size_of::<DataRef>() / 2,
            "{packed} bytes"
        );
        r.unknown = true;
        r.found = false;
        r.refs = 1 << 40;
        assert_eq!(PackedRefs::of(&r).unpack(), r);
        for r in [ExtentRefs::default(), refs(vec![ind(256, 300, 0, 1)])] {
            assert_eq!(PackedRefs::of(&r).unpack(), r);
        }
    }

    /// The flag packed with the refs says "shared" exactly where deciding
    /// for any file of any subvolume does; the refs still come back whole.
    #[test]
    fn refs_packed_shared_whoever_asks_only_where_every_file_finds_them_shared() {
        let two = refs(vec![ind(256, 300, 0, 1), ind(257, 300, 0, 1)]);
        let parents = refs(vec![
            DataRef::Shared {
                parent: 30_408_704,
                count: 1,
            },
            ind(256, 9, 0, 1),
        ]);
        let one = refs(vec![ind(256, 300, 0, 1)]);
        let one_live = refs(vec![ind(256, 300, 0, 1), ind(257, 300, 0, 0)]);
        let mut wrong_sum = refs(vec![ind(256, 300, 0, 1), ind(257, 300, 0, 1)]);
        wrong_sum.refs += 1;
        let mut unknown = refs(vec![ind(256, 300, 0, 1), ind(257, 300, 0, 1)]);
        unknown.unknown = true;
        let reloc = refs(vec![
            ind(256, 300, 0, 1),
            ind(DATA_RELOC_TREE_OBJECTID, 1, 0, 1),
        ]);
        for (r, want) in [
            (&two, true),
            (&parents, true),
            (&one, false),
            (&one_live, false),
            (&wrong_sum, false),
            (&unknown, false),
            (&reloc, false),
        ] {
            let p = PackedRefs::of(r);
            assert_eq!(p.shared_whoever(), want, "{r:?}");
            assert_eq!(&p.unpack(), r);
            // Whichever file asks: another subvolume's, this one's, its own
            // items or none.
            for at in [AT, FileAt { root: 300, ..AT }] {
                for own in [&[][..], &[own(0, 3)][..]] {
                    let v = decide(r, at, own, |_| Some(true), |_| Verdict::NotShared);
                    if want {
                        assert_eq!(v, Verdict::Shared, "{r:?}");
                    }
                }
            }
        }
    }
}
