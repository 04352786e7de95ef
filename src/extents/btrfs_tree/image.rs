//! The image of a lineage of snapshots ([`super::TreeCache`]): the inodes
//! every member holds as they are, each as a few dozen bytes of
//! [`postcard`]'s varints, one after another in one arena, found by
//! (lineage, inode number).
//!
//! One arena, not an allocation per inode: at 40 snapshots that differ
//! the image holds tens of thousands of inodes of about 100 bytes, and a
//! box each cost its allocator's header and rounding and 8 bytes more in
//! the map; their room, freed in small pieces among what the walk keeps,
//! stayed resident after the walk. The arena is one mapping, given back
//! whole when the walk drops it (docs/scale.md, "Snapshots").

use std::sync::Mutex;

use dashmap::DashMap;

use super::TreeInode;

/// The inodes kept, by (lineage, inode number).
#[derive(Debug, Default)]
pub(super) struct Image {
    /// Where each inode's bytes lie in `arena`: offset and length.
    at: DashMap<(u32, u64), (u32, u32), foldhash::fast::RandomState>,
    arena: Mutex<Vec<u8>>,
}

impl Image {
    /// Keeps `t`, inode `ino` of lineage `line`. Past 4 GiB of bytes, an
    /// inode is not kept: the walk reads it from the tree.
    pub(super) fn insert(&self, line: u32, ino: u64, t: &TreeInode) {
        let Ok(v) = postcard::to_allocvec(t) else {
            return;
        };
        let mut arena = self.arena.lock().unwrap_or_else(|e| e.into_inner());
        let (Ok(off), Ok(len)) = (u32::try_from(arena.len()), u32::try_from(v.len())) else {
            return;
        };
        if off.checked_add(len).is_none() {
            return;
        }
        arena.extend_from_slice(&v);
        drop(arena);
        self.at.insert((line, ino), (off, len));
    }

    /// Inode `ino` of lineage `line`, if kept.
    pub(super) fn get(&self, line: u32, ino: u64) -> Option<TreeInode> {
        let (off, len) = *self.at.get(&(line, ino))?;
        let arena = self.arena.lock().unwrap_or_else(|e| e.into_inner());
        let bytes = arena.get(off as usize..(off as usize).checked_add(len as usize)?)?;
        postcard::from_bytes(bytes).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extents::btrfs_tree::InodeItem;

    fn inode(size: u64) -> TreeInode {
        TreeInode {
            item: InodeItem {
                size,
                nbytes: size.div_ceil(4096).saturating_mul(4096),
                secs: [1, 2, 3, 4],
                nsecs: [5, 6, 7, 999_999_999],
                mode: 0o100_644,
                nlink: 1,
                ..InodeItem::default()
            },
            broken: size == 0,
            ..TreeInode::default()
        }
    }

    /// Each inode comes back as kept, one after another in the arena, by
    /// lineage and inode number; an inode not kept is not found.
    #[test]
    fn inodes_come_back_as_kept() {
        let image = Image::default();
        let kept = [
            (0, 257, 100),
            (0, 258, 0),
            (1, 257, u64::MAX),
            (0, 1 << 40, 7),
        ];
        for &(line, ino, size) in &kept {
            image.insert(line, ino, &inode(size));
        }
        for &(line, ino, size) in &kept {
            let got = image.get(line, ino).expect("kept");
            assert_eq!(format!("{got:?}"), format!("{:?}", inode(size)));
        }
        assert!(image.get(1, 258).is_none() && image.get(2, 257).is_none());
        let bytes = image.arena.lock().unwrap().len();
        assert!(bytes < kept.len() * 64, "{bytes} bytes in the arena");
    }
}
