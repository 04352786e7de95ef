//! What a scan records: the walk writes these, the roll-up reads them.
//!
//! A record names nodes by id ([`NodeId`]): the index of the node in the
//! walk's node list. Ids are handed out as the walk creates nodes, a parent
//! before its children, so a parent's id is always smaller than its
//! children's. Node [`NodeId::TOP`] is the virtual node above all roots (it
//! carries the `-c` total); [`NodeId::NONE`] is the parent of `TOP` and of a
//! root nested inside another root (a top of its own).

mod compact;
mod copy_sets;
mod exactness;
mod files;
pub(crate) mod idents;
mod lineup;
pub(crate) mod mappings;
mod name_arena;
mod nodes;
mod sink;

pub(crate) use compact::StatsTable;
pub(crate) use copy_sets::{Copies, CopySets, Held};
pub(crate) use exactness::Exactness;
pub(crate) use exactness::Inode;
pub(crate) use files::{FileShard, Files};
pub(crate) use idents::IdentSink;
pub(crate) use idents::{Ident, Idents};
pub(crate) use nodes::{NodeSink, Nodes};

use std::fmt;

use crate::figures::{Kind, Stats};

/// A directory the walk could not read in full, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadError {
    /// The directory: the one that could not be read, or the one holding
    /// an entry that could not be.
    pub node: NodeId,
    /// Nothing of its listing was read (else: a part of it).
    pub whole: bool,
    /// What went wrong, as its message says it (the entry's name quoted
    /// when it is one inside the directory).
    pub what: String,
}

/// A node's id: its index in the walk's node list.
///
/// Four bytes, as a `u32` is: records keep [`NodeId::NONE`] for "no node"
/// rather than an `Option`, which would double them.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
#[repr(transparent)]
pub struct NodeId(u32);

impl NodeId {
    /// The virtual node above all roots.
    pub const TOP: NodeId = NodeId(0);

    /// No node: the parent of [`NodeId::TOP`] and of a nested root.
    pub const NONE: NodeId = NodeId(u32::MAX);

    /// Node `i` (an index into the node list, below `u32::MAX - 1`: the
    /// two numbers above are sentinels).
    ///
    /// Public for the browser's unit tests (`src/browse/app/tests.rs`),
    /// which build a tree by hand.
    #[inline]
    pub const fn new(i: usize) -> NodeId {
        debug_assert!(i < MAX_NODES as usize, "a node id past the last");
        NodeId(i as u32)
    }

    /// Its index into the node list.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// Whether it is [`NodeId::NONE`].
    #[inline]
    pub fn is_none(self) -> bool {
        self == NodeId::NONE
    }

    /// `None` for [`NodeId::NONE`], the id otherwise.
    #[inline]
    pub(crate) fn some(self) -> Option<NodeId> {
        (!self.is_none()).then_some(self)
    }

    /// The id as a number, as saved scans write it ([`NodeId::NONE`] is
    /// `u32::MAX`).
    pub(crate) fn as_u32(self) -> u32 {
        self.0
    }

    /// The id a saved scan wrote as `n` (`u32::MAX` is [`NodeId::NONE`]),
    /// unchecked: the reader checks that it names a node.
    pub(crate) const fn from_u32(n: u32) -> NodeId {
        NodeId(n)
    }
}

impl Default for NodeId {
    /// [`NodeId::TOP`], as a record made by default has it.
    fn default() -> NodeId {
        NodeId::TOP
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

const _: () = assert!(size_of::<NodeId>() == 4);

/// Node ids end below `NodeId::NONE - 1` (`u32::MAX` and the one below are
/// sentinels): at most 4,294,967,293 nodes, the virtual top included. The
/// walk and the saved-scan reader stop with an error past it, so every
/// later stage can take ids to fit.
pub(crate) const MAX_NODES: u32 = u32::MAX - 1;

/// One node of the walked tree: a directory, a root, or (with `-a`) a file.
/// The walk and saved scans make them with names of their own; a tree
/// hands them out with names borrowed from its store
/// (`crate::tree::Record`).
///
/// Public for the browser's unit tests (`src/browse/app/tests.rs`), which
/// build a tree by hand.
#[derive(Clone, Copy, Debug, Default)]
pub struct NodeRec<N = Box<[u8]>> {
    /// Its id (its index in the node list).
    pub id: NodeId,
    /// The parent's id, or [`NodeId::NONE`].
    pub parent: NodeId,
    /// Levels below its root (a root is at depth 0).
    pub depth: u32,
    /// Directory, regular file, symlink or other.
    pub kind: Kind,
    /// A `-a` file entry: shown, but its figures are already in its parent.
    pub leaf: bool,
    /// Its position among its directory's entries in getdents order (for a
    /// root, its position among the roots): du's traversal order, which
    /// decides which link of an inode du counts.
    pub order: u32,
    /// The entry's name; for a root, the path as given.
    pub name: N,
    /// The node's own inode plus its singly-linked non-directory entries.
    pub own: Stats,
}

/// One link of an inode that must be counted once per directory (a
/// multiply-linked inode, or any inode under `-L`).
///
/// Public for the browser's unit tests (`src/browse/app/tests.rs`), which
/// build a tree by hand.
#[derive(Clone, Copy, Debug)]
pub struct Link {
    /// The inode: its root's namespace, device and inode number.
    pub ns: u32,
    /// `st_dev` of the inode.
    pub dev: u64,
    /// `st_ino` of the inode.
    pub ino: u64,
    /// Its link count, `st_nlink`.
    pub nlink: u32,
    /// The node the link lies in (the directory, or the inode's own node
    /// for a root, a directory or a `-a` file).
    pub node: NodeId,
    /// The link's position among `node`'s entries in getdents order when it
    /// is an entry of that directory; `None` when `node` is the inode's own.
    pub entry: Option<u32>,
    /// The inode's figures as seen through this link.
    pub stats: Stats,
}

impl Link {
    /// The inode it links, as the roll-up groups links.
    pub(crate) fn inode(&self) -> (u32, u64, u64) {
        (self.ns, self.dev, self.ino)
    }
}

/// A file whose extents include shared ones: `id` is what the extent index
/// knows it by.
///
/// Public for the browser's unit tests (`src/browse/app/tests.rs`), which
/// build a tree by hand.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FileRec {
    /// Its file id in the extent index.
    pub(crate) id: u32,
    /// The node of the link that was mapped (its directory, or its own node
    /// with `-a`).
    pub(crate) node: NodeId,
    /// Its root's namespace.
    pub(crate) ns: u32,
    /// `st_dev` of the inode.
    pub(crate) dev: u64,
    /// `st_ino` of the inode.
    pub(crate) ino: u64,
    /// Credited through the link table: its links are the [`Link`]s of the
    /// same inode.
    pub(crate) linked: bool,
}

impl FileRec {
    /// The inode, as [`Link::inode`] gives it.
    pub(crate) fn inode(&self) -> (u32, u64, u64) {
        (self.ns, self.dev, self.ino)
    }
}

/// A file that is a copy of another file of the scan: the same inode,
/// unchanged, seen in another subvolume of its snapshot family, holding
/// exactly what file `of` maps in the extent index. It stands in for a
/// [`FileRec`] of its own and its mappings: 12 bytes a copy, where a file
/// record and a mapping took 48. Neither it nor `of` is counted through
/// links. The roll-up credits `of`'s units to the copy's node as to a link
/// of `of` ([`crate::tree`]), and a saved scan writes each copy out as a
/// file of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CopyRec {
    /// The file it is a copy of.
    pub(crate) of: u32,
    /// The node it is credited to (its directory, or its own with `-a`).
    pub(crate) node: NodeId,
    /// Its `st_dev` (its subvolume), packed by [`dev32`].
    pub(crate) dev: u32,
}

impl CopyRec {
    /// Sorts `copies` by the file they copy, then by node and device: an
    /// order that does not depend on the walk's, given the files'.
    #[cfg(test)]
    pub(crate) fn sort(copies: &mut [CopyRec]) {
        copies.sort_unstable_by_key(|c| (c.of, c.node, c.dev));
    }
}

/// `st_dev` in 32 bits, as the kernel keeps a device number (12 bits of
/// major, 20 of minor); `None` for one that does not fit.
pub(crate) fn dev32(dev: u64) -> Option<u32> {
    let (major, minor) = (rustix::fs::major(dev), rustix::fs::minor(dev));
    (major < 1 << 12 && minor < 1 << 20).then_some(major << 20 | minor)
}

/// The `st_dev` that [`dev32`] packed.
pub(crate) fn dev64(dev: u32) -> u64 {
    rustix::fs::makedev(dev >> 20, dev & ((1 << 20) - 1))
}

// The records' sizes, which the walk's memory is made of.
const _: () = assert!(size_of::<NodeRec>() == 120);
const _: () = assert!(size_of::<Link>() == 120);
const _: () = assert!(size_of::<FileRec>() == 32);
const _: () = assert!(size_of::<CopyRec>() == 12);

/// Sorts `bounds` by node and merges each node's into one.
pub(crate) fn merge_bounds(bounds: &mut Vec<(NodeId, crate::figures::Bound)>) {
    bounds.sort_unstable_by_key(|b| (b.0, b.1.bits()));
    bounds.dedup_by(|b, a| {
        let same = a.0 == b.0;
        if same {
            a.1 = a.1.with(b.1);
        }
        same
    });
}
