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
//! since changes what its extents share. So a reused map that the
//! filesystem did not prove before the walk (`crate::scan`'s since
//! module) marks the node it is credited to, and its filesystem's units.
//! `--verify` maps every file all the same and names each whose saved map
//! was stale.

use rustix::fs::Statx;

use crate::records::mappings::{MapBuf, MapKey};

/// What the walk keeps for `--since` and `--export`, per task, per shard
/// and in the end for the scan. The node (or inode) of each file credited
/// with a map nothing proved is marked where the walk credits it, with the
/// walk's other marks.
#[derive(Debug, Default)]
pub(crate) struct Since {
    /// The maps FIEMAP read (`--export`), and those reused.
    pub(crate) mappings: MapBuf,
    /// The files credited with a map nothing proved, and their allocated
    /// bytes.
    pub(crate) unproven: (u64, u64),
    /// The filesystems (registry index) holding them, each once.
    pub(crate) filesystems: Vec<u32>,
    /// Those of them counted once through their links: every link's node
    /// shows the map's figures ([`crate::records::Inode`]).
    pub(crate) inodes: Vec<crate::records::Inode>,
}

impl Since {
    /// Moves what `other` holds into `self`.
    pub(super) fn append(&mut self, other: &mut Since) {
        if !other.mappings.is_empty() {
            self.mappings.append(&mut other.mappings);
        }
        self.unproven.0 += std::mem::take(&mut other.unproven.0);
        self.unproven.1 += std::mem::take(&mut other.unproven.1);
        for fs in other.filesystems.drain(..) {
            self.unproven_on(fs);
        }
        self.inodes.append(&mut other.inodes);
    }

    /// Records that a map reused on filesystem `fs` is unproven.
    pub(super) fn unproven_on(&mut self, fs: u32) {
        if !self.filesystems.contains(&fs) {
            self.filesystems.push(fs);
        }
    }

    /// Sorts what was gathered.
    pub(super) fn finish(&mut self) {
        self.filesystems.sort_unstable();
        self.inodes.sort_unstable();
        self.inodes.dedup();
    }
}

/// The device a map is kept under, for a file on `dev` in Btrfs subvolume
/// `subvol` (when known): on Btrfs a subvolume's `st_dev` is a number
/// handed out at mount and often another after a remount, so its UUID,
/// folded to 64 bits with the top bit set (no `makedev` number has it),
/// stands for it; elsewhere `dev`.
pub(super) fn map_dev(subvol: Option<&crate::probe::Subvol>, dev: u64) -> u64 {
    match subvol.map(|s| s.ids.0).filter(|u| *u != [0; 16]) {
        Some(u) => {
            let (a, b) = u.split_at(8);
            let fold = u64::from_le_bytes(a.try_into().unwrap_or_default())
                ^ u64::from_le_bytes(b.try_into().unwrap_or_default());
            fold | 1 << 63
        }
        None => dev,
    }
}

/// The key of the file `st`, kept under device `dev` ([`map_dev`]).
pub(super) fn key_of(st: &Statx, dev: u64) -> MapKey {
    MapKey {
        dev,
        ino: st.stx_ino,
        ctime: (st.stx_ctime.tv_sec, st.stx_ctime.tv_nsec),
        size: st.stx_size,
        blocks: st.stx_blocks,
    }
}
