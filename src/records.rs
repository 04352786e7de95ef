//! What a scan records: the walk writes these, the roll-up reads them.
//!
//! A record names nodes by id: the index of the node in the walk's node
//! list. Ids are handed out as the walk creates nodes, a parent before its
//! children, so a parent's id is always smaller than its children's. Node
//! [`TOP`] is the virtual node above all roots (it carries the `-c` total);
//! [`NO_NODE`] is the parent of `TOP` and of a root nested inside another
//! root (a top of its own).

mod nodes;

pub use nodes::{Figs, Nodes, StatsTable};

use crate::figures::{Kind, Stats};

/// The id of the virtual node above all roots.
pub const TOP: u32 = 0;

/// No node: the parent of [`TOP`] and of a nested root.
pub const NO_NODE: u32 = u32::MAX;

/// One node of the walked tree: a directory, a root, or (with `-a`) a file.
#[derive(Clone, Debug, Default)]
pub struct NodeRec {
    /// Its id (its index in the node list).
    pub id: u32,
    /// The parent's id, or [`NO_NODE`].
    pub parent: u32,
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
    pub name: Box<[u8]>,
    /// The node's own inode plus its singly-linked non-directory entries.
    pub own: Stats,
}

/// One link of an inode that must be counted once per directory (a
/// multiply-linked inode, or any inode under `-L`).
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
    pub node: u32,
    /// The link's position among `node`'s entries in getdents order when it
    /// is an entry of that directory; `None` when `node` is the inode's own.
    pub entry: Option<u32>,
    /// The inode's figures as seen through this link.
    pub stats: Stats,
}

impl Link {
    /// The inode it links, as the roll-up groups links.
    pub fn inode(&self) -> (u32, u64, u64) {
        (self.ns, self.dev, self.ino)
    }
}

/// A file whose extents include shared ones: `id` is what the extent index
/// knows it by.
#[derive(Clone, Copy, Debug, Default)]
pub struct FileRec {
    /// Its file id in the extent index.
    pub id: u32,
    /// The node of the link that was mapped (its directory, or its own node
    /// with `-a`).
    pub node: u32,
    /// Its root's namespace.
    pub ns: u32,
    /// `st_dev` of the inode.
    pub dev: u64,
    /// `st_ino` of the inode.
    pub ino: u64,
    /// Credited through the link table: its links are the [`Link`]s of the
    /// same inode.
    pub linked: bool,
}

impl FileRec {
    /// The inode, as [`Link::inode`] gives it.
    pub fn inode(&self) -> (u32, u64, u64) {
        (self.ns, self.dev, self.ino)
    }
}
