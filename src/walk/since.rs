//! `--since SCAN`: files unchanged since a saved scan reuse the extent
//! maps it saved, and are neither opened nor mapped; and `--export`: the
//! maps FIEMAP reads, kept for the next `--since`. This module holds what
//! the walk records of both; `reused` credits a file with its saved map,
//! and the walk's `mapped` module keeps what FIEMAP read.
//!
//! A file is unchanged when its device, inode, ctime, size and blocks are
//! those saved ([`MapKey`]). That proves its data was not written, but not
//! that its map is the same: a dedupe (`FIDEDUPERANGE`) moves a file's
//! extents without touching its times, and a reflink copy made or deleted
//! since changes what its extents share. So every reused map is recorded
//! here, with the node it is credited to, and the scan marks what it feeds
//! unless the filesystem proves it (`crate::scan`'s walked module).
//! `--verify` maps every file all the same and names each whose saved map
//! was stale.

use rustix::fs::Statx;

use crate::records::mappings::{MapKey, Mappings};
use crate::records::{Inode, NodeId};

/// What the walk keeps for `--since` and `--export`, per task, per shard
/// and in the end for the scan.
#[derive(Debug, Default)]
pub(crate) struct Since {
    /// The maps FIEMAP read (`--export`), and those reused.
    pub(crate) mappings: Mappings,
    /// The files credited with a reused map.
    pub(crate) files: Vec<Reused>,
}

/// A file credited with the map `--since` saved of it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reused {
    /// Its filesystem (registry index).
    pub(crate) fs: u32,
    /// Its allocated bytes.
    pub(crate) bytes: u64,
    /// Its filesystem proved the map ([`crate::records::mappings::Checked`]).
    pub(crate) proven: bool,
    /// Where a mark on its figures goes.
    pub(crate) at: MarkAt,
}

/// Where the figures of a file go, and so its mark.
#[derive(Clone, Copy, Debug)]
pub(crate) enum MarkAt {
    /// Its node (or its directory's).
    Node(NodeId),
    /// Its inode, counted once through its links.
    Inode(Inode),
}

impl Since {
    /// Moves what `other` holds into `self`.
    pub(super) fn append(&mut self, other: &mut Since) {
        if !other.mappings.is_empty() {
            self.mappings.append(&mut other.mappings);
        }
        self.files.append(&mut other.files);
    }

    /// Sorts what was gathered.
    pub(super) fn finish(&mut self) {
        self.mappings.finish();
    }
}

/// The key of the file `st` (on `dev`).
pub(super) fn key_of(st: &Statx, dev: u64) -> MapKey {
    MapKey {
        dev,
        ino: st.stx_ino,
        ctime: (st.stx_ctime.tv_sec, st.stx_ctime.tv_nsec),
        size: st.stx_size,
        blocks: st.stx_blocks,
    }
}
