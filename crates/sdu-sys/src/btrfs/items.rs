//! The Btrfs items sdu reads with the tree search ([`mod@super::search`]): a
//! file's extent items (`struct btrfs_file_extent_item`) and the extent
//! tree's item of one data extent with its refs (`struct
//! btrfs_extent_item`, `btrfs_extent_data_ref`, `btrfs_shared_data_ref`).
//! Parsed from the bytes the kernel copied from the leaves, little-endian,
//! by offset.
//!
//! # References
//!  - `include/uapi/linux/btrfs_tree.h`

use std::io;
use std::os::fd::BorrowedFd;

use super::search::{EXTENT_TREE_OBJECTID, bad, key_type, search, u32_at, u64_at};

/// `btrfs_file_extent_item.type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum FileExtentType {
    /// The data is in the item (no disk address).
    Inline,
    /// A data extent on disk.
    Regular,
    /// Allocated, not written (FIEMAP's `UNWRITTEN`).
    Prealloc,
}

/// One `EXTENT_DATA` item of a file (`struct btrfs_file_extent_item`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileExtent {
    /// The generation of the leaf holding the item.
    pub leaf_gen: u64,
    /// Its key's offset: where in the file it starts.
    pub file_offset: u64,
    /// Inline, regular or prealloc.
    pub kind: FileExtentType,
    /// 0: none; 1 zlib, 2 lzo, 3 zstd.
    pub compression: u8,
    /// Encryption or another encoding: the data is encoded too.
    pub encoded_other: bool,
    /// Where the extent starts on disk (logical address); 0 for a hole.
    pub disk_bytenr: u64,
    /// Its size on disk (compressed, for a compressed extent).
    pub disk_num_bytes: u64,
    /// Where in the extent's uncompressed data this item's range starts.
    /// An inline extent has no such field: there it holds the item's
    /// `generation` (the transaction that wrote its data, which a
    /// snapshot's copy of the item keeps).
    pub offset: u64,
    /// The length of this item's range in the file.
    pub num_bytes: u64,
    /// The extent's size uncompressed (`ram_bytes`), at most `u32::MAX`
    /// (a compressed extent holds at most 128 KiB, an inline one less
    /// than a sector): what a compressed extent saves is this less
    /// `disk_num_bytes`, an inline one's is the file data its item holds
    /// in the metadata. It takes the struct's padding.
    pub ram_bytes: u32,
}

const _: () = assert!(size_of::<FileExtent>() == 56);

/// The bytes of a file extent item up to its inline data.
const FILE_EXTENT_INLINE_LEN: usize = 21;
/// The bytes of a regular or prealloc file extent item.
const FILE_EXTENT_LEN: usize = 53;

impl FileExtent {
    /// Parses the item; `None` for an item too short or of an unknown type.
    pub fn parse(leaf_gen: u64, file_offset: u64, d: &[u8]) -> Option<FileExtent> {
        if d.len() < FILE_EXTENT_INLINE_LEN {
            return None;
        }
        let kind = match d[20] {
            0 => FileExtentType::Inline,
            1 => FileExtentType::Regular,
            2 => FileExtentType::Prealloc,
            _ => return None,
        };
        let compression = d[16];
        let encoded_other = d[17] != 0 || d[18] != 0 || d[19] != 0;
        let mut e = FileExtent {
            leaf_gen,
            file_offset,
            kind,
            compression,
            encoded_other,
            disk_bytenr: 0,
            disk_num_bytes: 0,
            offset: 0,
            num_bytes: 0,
            ram_bytes: u32::try_from(u64_at(d, 8)).unwrap_or(u32::MAX),
        };
        if kind == FileExtentType::Inline {
            e.offset = u64_at(d, 0);
        } else {
            if d.len() < FILE_EXTENT_LEN {
                return None;
            }
            e.disk_bytenr = u64_at(d, 21);
            e.disk_num_bytes = u64_at(d, 29);
            e.offset = u64_at(d, 37);
            e.num_bytes = u64_at(d, 45);
        }
        Some(e)
    }

    /// Whether its data is stored encoded (compressed): FIEMAP's `ENCODED`.
    pub fn encoded(&self) -> bool {
        self.compression != 0 || self.encoded_other
    }
}

/// What a search of one inode's items gave.
#[derive(Debug, Default)]
pub struct InodeItems {
    /// Its `INODE_ITEM` was found.
    pub found: bool,
    /// Its `EXTENT_DATA` items, in file order.
    pub extents: Vec<FileExtent>,
    /// The ioctl calls made.
    pub calls: u32,
}

/// The extent items of inode `ino` in the subvolume of `dirfd` and, when
/// one is inline, its inode item. `allocated` is its `st_blocks × 512`: the
/// search stops once the items found account for that many bytes (every
/// item with data adds its length to the inode's byte count, which
/// `st_blocks` rounds up), so that the kernel does not read the rest of
/// the leaf; `size` and `nlink` (its `st_size` and `st_nlink`) tell how
/// many items to ask for. An item that does not parse is an `InvalidData`
/// error.
pub fn inode_items(
    dirfd: BorrowedFd<'_>,
    ino: u64,
    allocated: u64,
    size: u64,
    nlink: u32,
) -> io::Result<InodeItems> {
    let mut got = InodeItems::default();
    let mut broken = false;
    let mut covered = 0u64;
    let mut inline = false;
    // A file of one block or less is likely inline, and then its inode
    // item is wanted too: from the inode item on, its items are the inode
    // item, one inode ref (one link) and the extent item, unless it has
    // xattrs (then more calls, each asking for one more item).
    let small = allocated <= 4096 && size <= 4096;
    let (from, nr) = if small {
        (key_type::INODE_ITEM, if nlink == 1 { 3 } else { 2 })
    } else {
        // One item per 128 KiB (the largest compressed extent) is a guess
        // at how many to ask for: a wrong one costs a call or a leaf,
        // never an item.
        (
            key_type::EXTENT_DATA,
            (allocated / (128 << 10)).clamp(1, 256) as u32,
        )
    };
    got.calls = search(
        dirfd,
        0,
        (ino, from, 0),
        (ino, key_type::EXTENT_DATA, u64::MAX),
        nr,
        |it| {
            match it.kind {
                key_type::INODE_ITEM => got.found = true,
                key_type::EXTENT_DATA => match FileExtent::parse(it.transid, it.offset, it.data) {
                    Some(e) => {
                        let bytes = match e.kind {
                            FileExtentType::Inline => {
                                inline = true;
                                u64_at(it.data, 8)
                            }
                            _ if e.disk_bytenr == 0 => 0,
                            _ => e.num_bytes,
                        };
                        covered = covered.saturating_add(bytes.div_ceil(4096) * 4096);
                        got.extents.push(e);
                    }
                    None => broken = true,
                },
                _ => {}
            }
            !broken && (allocated == 0 || covered < allocated)
        },
    )?;
    if broken {
        return Err(bad("a file extent item that does not parse"));
    }
    if !got.found && (inline || got.extents.is_empty()) {
        got.calls += search(
            dirfd,
            0,
            (ino, key_type::INODE_ITEM, 0),
            (ino, key_type::INODE_ITEM, u64::MAX),
            1,
            |_| {
                got.found = true;
                false
            },
        )?;
    } else if !got.extents.is_empty() {
        got.found = true;
    }
    Ok(got)
}

/// One reference to a data extent, from the extent tree (the fields as
/// `struct btrfs_extent_data_ref` and `btrfs_shared_data_ref` name them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataRef {
    /// `EXTENT_DATA_REF`: by subvolume, inode and file position less the
    /// item's offset, `count` items.
    Indirect {
        /// The subvolume (tree) id.
        root: u64,
        /// The inode number.
        ino: u64,
        /// The file position less the item's offset into the extent.
        offset: u64,
        /// The file extent items that refer so.
        count: u32,
    },
    /// `SHARED_DATA_REF`: by the leaf `parent`, `count` items in it.
    Shared {
        /// The leaf's address.
        parent: u64,
        /// The file extent items in it that refer to the extent.
        count: u32,
    },
}

/// The extent item of one data extent and its refs.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ExtentRefs {
    /// `EXTENT_ITEM` found at the extent's address.
    pub found: bool,
    /// `btrfs_extent_item.refs`: the sum of the refs' counts.
    pub refs: u64,
    /// The refs, inline and keyed.
    pub list: Vec<DataRef>,
    /// Something in the item was not understood (a tree block ref on a
    /// data extent, an unknown inline ref type).
    pub unknown: bool,
}

/// The extent item at `bytenr` in the extent tree, with its inline and
/// keyed refs. `fd`: any file of the filesystem.
pub fn extent_refs(fd: BorrowedFd<'_>, bytenr: u64) -> io::Result<ExtentRefs> {
    let mut got = ExtentRefs::default();
    // The extent item first, alone: its inline refs are usually all of
    // them; keyed refs follow it when they are not.
    search(
        fd,
        EXTENT_TREE_OBJECTID,
        (bytenr, key_type::EXTENT_ITEM, 0),
        (bytenr, key_type::SHARED_DATA_REF, u64::MAX),
        1,
        |it| {
            got.add(it.kind, it.offset, it.data);
            !got.unknown && got.counted() < got.refs
        },
    )?;
    Ok(got)
}

/// The bytes of `struct btrfs_extent_item` (refs, generation, flags).
const EXTENT_ITEM_LEN: usize = 24;
/// `BTRFS_EXTENT_FLAG_DATA`.
const EXTENT_FLAG_DATA: u64 = 1;

impl ExtentRefs {
    /// The sum of the counts of the refs read so far.
    pub fn counted(&self) -> u64 {
        self.list
            .iter()
            .map(|r| match *r {
                DataRef::Indirect { count, .. } | DataRef::Shared { count, .. } => u64::from(count),
            })
            .sum()
    }

    /// Takes in one item of the extent's keys.
    pub fn add(&mut self, kind: u32, key_offset: u64, d: &[u8]) {
        match kind {
            key_type::EXTENT_ITEM => {
                if d.len() < EXTENT_ITEM_LEN || u64_at(d, 16) & EXTENT_FLAG_DATA == 0 {
                    self.unknown = true;
                    return;
                }
                self.found = true;
                self.refs = u64_at(d, 0);
                let mut p = EXTENT_ITEM_LEN;
                while p < d.len() {
                    let t = u32::from(d[p]);
                    let body = &d[p + 1..];
                    match t {
                        key_type::EXTENT_DATA_REF if body.len() >= 28 => {
                            self.list.push(DataRef::Indirect {
                                root: u64_at(body, 0),
                                ino: u64_at(body, 8),
                                offset: u64_at(body, 16),
                                count: u32_at(body, 24),
                            });
                            p += 1 + 28;
                        }
                        key_type::SHARED_DATA_REF if body.len() >= 12 => {
                            self.list.push(DataRef::Shared {
                                parent: u64_at(body, 0),
                                count: u32_at(body, 8),
                            });
                            p += 1 + 12;
                        }
                        // Simple quotas' owner: not a reference.
                        key_type::EXTENT_OWNER_REF if body.len() >= 8 => p += 1 + 8,
                        _ => {
                            self.unknown = true;
                            return;
                        }
                    }
                }
            }
            key_type::EXTENT_DATA_REF if d.len() >= 28 => self.list.push(DataRef::Indirect {
                root: u64_at(d, 0),
                ino: u64_at(d, 8),
                offset: u64_at(d, 16),
                count: u32_at(d, 24),
            }),
            key_type::SHARED_DATA_REF if d.len() >= 4 => self.list.push(DataRef::Shared {
                parent: key_offset,
                count: u32_at(d, 0),
            }),
            _ => self.unknown = true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_extent_items_parse() {
        let mut d = vec![0u8; 53];
        d[0..8].copy_from_slice(&7u64.to_le_bytes());
        d[16] = 3;
        d[20] = 1;
        d[21..29].copy_from_slice(&(1u64 << 30).to_le_bytes());
        d[29..37].copy_from_slice(&4096u64.to_le_bytes());
        d[37..45].copy_from_slice(&8192u64.to_le_bytes());
        d[45..53].copy_from_slice(&131_072u64.to_le_bytes());
        let e = FileExtent::parse(9, 65536, &d).unwrap();
        assert_eq!(
            (
                e.kind,
                e.disk_bytenr,
                e.disk_num_bytes,
                e.offset,
                e.num_bytes
            ),
            (FileExtentType::Regular, 1 << 30, 4096, 8192, 131_072)
        );
        assert!(e.encoded() && e.leaf_gen == 9 && e.file_offset == 65536);
        // Inline: 21 bytes and its data.
        let mut i = vec![0u8; 30];
        i[20] = 0;
        let e = FileExtent::parse(1, 0, &i).unwrap();
        assert_eq!((e.kind, e.disk_bytenr), (FileExtentType::Inline, 0));
        assert!(!e.encoded());
        assert!(FileExtent::parse(1, 0, &d[..40]).is_none());
        d[20] = 9;
        assert!(FileExtent::parse(1, 0, &d).is_none());
    }

    #[test]
    fn extent_items_and_refs_parse() {
        let mut d = Vec::new();
        d.extend_from_slice(&3u64.to_le_bytes());
        d.extend_from_slice(&5u64.to_le_bytes());
        d.extend_from_slice(&EXTENT_FLAG_DATA.to_le_bytes());
        d.push(key_type::EXTENT_DATA_REF as u8);
        for v in [5u64, 257, 0] {
            d.extend_from_slice(&v.to_le_bytes());
        }
        d.extend_from_slice(&2u32.to_le_bytes());
        d.push(key_type::SHARED_DATA_REF as u8);
        d.extend_from_slice(&(77u64 << 12).to_le_bytes());
        d.extend_from_slice(&1u32.to_le_bytes());
        let mut r = ExtentRefs::default();
        r.add(key_type::EXTENT_ITEM, 4096, &d);
        r.add(key_type::SHARED_DATA_REF, 99 << 12, &1u32.to_le_bytes());
        assert!(r.found && !r.unknown && r.refs == 3);
        assert_eq!(
            r.list,
            vec![
                DataRef::Indirect {
                    root: 5,
                    ino: 257,
                    offset: 0,
                    count: 2
                },
                DataRef::Shared {
                    parent: 77 << 12,
                    count: 1
                },
                DataRef::Shared {
                    parent: 99 << 12,
                    count: 1
                },
            ]
        );
        // A tree block's item is not a data extent.
        let mut t = ExtentRefs::default();
        t.add(key_type::EXTENT_ITEM, 16384, &[0u8; 24]);
        assert!(t.unknown && !t.found);
    }
}
