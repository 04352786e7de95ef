//! As root on Btrfs: how the data of some subvolumes is stored, summed
//! from the file extent items the walk reads with the tree search
//! ([`super::Extents::read_btrfs`]): what compression saves, each
//! compressed extent once (its uncompressed size less its size on disk),
//! and the file data held inline, in the metadata. `sdu --df` asks for
//! it; the items are those the walk reads for its own figures, so it
//! costs no second read of the trees.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};

use dashmap::DashMap;
use sdu_sys::btrfs::{FileExtent, FileExtentType};

use super::Fast;

/// What the file extent items of some subvolumes say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Stored {
    /// Σ over the compressed extents (each once) of their uncompressed
    /// size less their size on disk.
    pub(crate) saved: u64,
    /// How many compressed extents.
    pub(crate) compressed: u64,
    /// What `st_blocks` counts of the inline extents' data, each once:
    /// their `ram_bytes` rounded up to the sector (Btrfs gives an inline
    /// file that many bytes). The copies of one in the subvolumes of a
    /// snapshot family have the same inode number, size and data
    /// generation (the item is copied whole when a leaf is), and are
    /// counted once, as the scan counts them
    /// (`docs/filesystems.md`, "Inline extents and snapshots").
    pub(crate) inline: u64,
    /// How many inline extents.
    pub(crate) inline_items: u64,
}

/// The sums of [`Stored`] over the files the walk reads in some
/// subvolumes, gathered by the walk's threads.
#[derive(Debug, Default)]
pub(crate) struct StoredSums {
    /// The subvolumes (tree ids) whose files count, sorted.
    trees: Box<[u64]>,
    /// The filesystem's sector size.
    sector: u64,
    /// The compressed extents met, by address.
    compressed: DashMap<u64, (), Fast>,
    /// The inline extents met, by a 64-bit hash of (inode, `ram_bytes`,
    /// generation): a third of the memory of the keys themselves (a tree
    /// of 100,000 inline files holds that many). Two distinct items
    /// collide with odds of one in 2^64 per pair: for a million inline
    /// items, about one chance in 40 million that one is not counted.
    inline: DashMap<u64, (), Fast>,
    /// What hashes them.
    seed: Fast,
    saved: AtomicU64,
    compressed_n: AtomicU64,
    inline_bytes: AtomicU64,
    inline_n: AtomicU64,
}

impl StoredSums {
    /// Sums over the files of subvolumes `trees` of one filesystem whose
    /// sector is `sector` bytes.
    pub(crate) fn new(mut trees: Vec<u64>, sector: u64) -> Self {
        trees.sort_unstable();
        trees.dedup();
        StoredSums {
            trees: trees.into(),
            sector: sector.max(1),
            ..StoredSums::default()
        }
    }

    /// Adds the items of inode `ino` of subvolume `root`, if it is one of
    /// those summed.
    pub(crate) fn add(&self, root: u64, ino: u64, items: &[FileExtent]) {
        if self.trees.binary_search(&root).is_err() {
            return;
        }
        for e in items {
            let ram = u64::from(e.ram_bytes);
            match e.kind {
                // An inline item's `offset` is its generation.
                FileExtentType::Inline
                    if self
                        .inline
                        .insert(self.seed.hash_one((ino, ram, e.offset)), ())
                        .is_none() =>
                {
                    let bytes = ram.next_multiple_of(self.sector);
                    self.inline_bytes.fetch_add(bytes, Ordering::Relaxed);
                    self.inline_n.fetch_add(1, Ordering::Relaxed);
                }
                FileExtentType::Regular
                    if e.compression != 0
                        && e.disk_bytenr != 0
                        && self.compressed.insert(e.disk_bytenr, ()).is_none() =>
                {
                    let saved = ram.saturating_sub(e.disk_num_bytes);
                    self.saved.fetch_add(saved, Ordering::Relaxed);
                    self.compressed_n.fetch_add(1, Ordering::Relaxed);
                }
                _ => {}
            }
        }
    }

    /// The sums so far.
    pub(crate) fn sums(&self) -> Stored {
        Stored {
            saved: self.saved.load(Ordering::Relaxed),
            compressed: self.compressed_n.load(Ordering::Relaxed),
            inline: self.inline_bytes.load(Ordering::Relaxed),
            inline_items: self.inline_n.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(kind: FileExtentType, compression: u8, bytenr: u64, disk: u64, ram: u32) -> FileExtent {
        FileExtent {
            leaf_gen: 1,
            file_offset: 0,
            kind,
            compression,
            encoded_other: false,
            disk_bytenr: bytenr,
            disk_num_bytes: disk,
            offset: if kind == FileExtentType::Inline { 7 } else { 0 },
            num_bytes: 0,
            ram_bytes: ram,
        }
    }

    /// A compressed extent counts once however many files and subvolumes
    /// reference it; an inline item once per (inode, size, generation);
    /// uncompressed extents and subvolumes not asked for count nothing.
    #[test]
    fn stored_sums_count_each_extent_once() {
        let s = StoredSums::new(vec![257, 5], 4096);
        let z = item(FileExtentType::Regular, 3, 1 << 20, 4096, 131_072);
        let plain = item(FileExtentType::Regular, 0, 2 << 20, 8192, 8192);
        let inline = item(FileExtentType::Inline, 0, 0, 0, 100);
        s.add(5, 300, &[z, plain, inline]);
        s.add(257, 300, &[z, inline]);
        s.add(257, 301, &[z]);
        s.add(
            258,
            302,
            &[item(FileExtentType::Regular, 3, 3 << 20, 4096, 8192)],
        );
        s.add(258, 303, &[inline]);
        assert_eq!(
            s.sums(),
            Stored {
                saved: 131_072 - 4096,
                compressed: 1,
                inline: 4096,
                inline_items: 1,
            }
        );
    }
}
