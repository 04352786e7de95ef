//! `BTRFS_IOC_TREE_SEARCH_V2` and the Btrfs items sdu reads with it: a
//! file's extent items (`EXTENT_DATA`), the extent tree's items and refs
//! of one data extent, a subvolume's root item; and the transaction
//! commit (`BTRFS_IOC_START_SYNC`, `BTRFS_IOC_WAIT_SYNC`) that makes the
//! extent tree current. The tree search needs `CAP_SYS_ADMIN`.
//!
//! One of the seven ioctl modules of the crate that may use `unsafe` (with
//! [`super::fiemap`], [`super::btrfs_backref`], [`super::fsmap`],
//! [`crate::probe::ioctl`], `crate::delete::ioctl` and
//! `crate::browse::tty_ioctl`), only to hand ioctl argument buffers to the
//! kernel; each struct passed is a `#[repr(C)]` mirror of a kernel UAPI
//! struct whose size (and the offsets that matter) is pinned at compile
//! time, each opcode by a test. Items are parsed from the bytes the kernel
//! copied, little-endian, by offset: none is cast to a struct.
//!
//! # References
//!  - `include/uapi/linux/btrfs.h`, `include/uapi/linux/btrfs_tree.h`
//!  - `fs/btrfs/ioctl.c` (`search_ioctl`, `copy_to_sk`)

#![allow(unsafe_code)]

use std::cell::RefCell;
use std::io;
use std::os::fd::BorrowedFd;

use rustix::ioctl::{Opcode, Updater, ioctl, opcode};

/// The root tree.
pub(crate) const ROOT_TREE_OBJECTID: u64 = 1;
/// The extent tree.
pub(crate) const EXTENT_TREE_OBJECTID: u64 = 2;
/// The data relocation tree (balance): its refs are not sharing.
pub(crate) const DATA_RELOC_TREE_OBJECTID: u64 = (-9i64) as u64;

/// Item types (`btrfs_tree.h`), named as there without `_KEY`.
#[allow(missing_docs)]
pub(crate) mod key_type {
    pub(crate) const INODE_ITEM: u32 = 1;
    pub(crate) const EXTENT_DATA: u32 = 108;
    pub(crate) const ROOT_ITEM: u32 = 132;
    pub(crate) const EXTENT_ITEM: u32 = 168;
    pub(crate) const METADATA_ITEM: u32 = 169;
    pub(crate) const EXTENT_OWNER_REF: u32 = 172;
    pub(crate) const TREE_BLOCK_REF: u32 = 176;
    pub(crate) const EXTENT_DATA_REF: u32 = 178;
    pub(crate) const SHARED_BLOCK_REF: u32 = 182;
    pub(crate) const SHARED_DATA_REF: u32 = 184;
}

/// `struct btrfs_ioctl_search_key`: the keys from (min objectid, type,
/// offset) to (max objectid, type, offset), compared as one key.
#[allow(missing_docs)]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SearchKey {
    /// The tree to search; 0: the subvolume of the fd.
    pub(crate) tree_id: u64,
    pub(crate) min_objectid: u64,
    pub(crate) max_objectid: u64,
    pub(crate) min_offset: u64,
    pub(crate) max_offset: u64,
    /// Only items in leaves written in this range of transactions.
    pub(crate) min_transid: u64,
    pub(crate) max_transid: u64,
    pub(crate) min_type: u32,
    pub(crate) max_type: u32,
    /// In: the most items wanted; out: the items copied.
    pub(crate) nr_items: u32,
    pub(crate) unused: u32,
    pub(crate) unused1: u64,
    pub(crate) unused2: u64,
    pub(crate) unused3: u64,
    pub(crate) unused4: u64,
}

const _: () = assert!(size_of::<SearchKey>() == 104);
const _: () = assert!(std::mem::offset_of!(SearchKey, min_type) == 56);
const _: () = assert!(std::mem::offset_of!(SearchKey, nr_items) == 64);

/// `struct btrfs_ioctl_search_args_v2` without its flexible buffer.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SearchArgsV2Header {
    /// The search, in; where it stopped and the items found, out.
    pub(crate) key: SearchKey,
    /// In: the size of the buffer that follows; out, on `EOVERFLOW`, the
    /// size one item needs.
    pub(crate) buf_size: u64,
}

const _: () = assert!(size_of::<SearchArgsV2Header>() == 112);

/// The bytes of one `struct btrfs_ioctl_search_header`, which precede
/// every item in the buffer.
pub(crate) const SEARCH_HEADER_LEN: usize = 32;

/// `_IOWR(0x94, 17, struct btrfs_ioctl_search_args_v2)`.
pub(crate) const BTRFS_IOC_TREE_SEARCH_V2: Opcode =
    opcode::read_write::<SearchArgsV2Header>(0x94, 17);
/// `_IOR(0x94, 24, __u64)`: commit the running transaction, asynchronously.
pub(crate) const BTRFS_IOC_START_SYNC: Opcode = opcode::read::<u64>(0x94, 24);
/// `_IOW(0x94, 22, __u64)`: wait until that transaction is committed.
pub(crate) const BTRFS_IOC_WAIT_SYNC: Opcode = opcode::write::<u64>(0x94, 22);

/// The result buffer: 64 KiB holds any one item of the largest node size.
const SEARCH_BUF: usize = 64 << 10;
/// The part of it asked for first.
const SMALL_BUF: usize = 4 << 10;

/// The ioctl argument: the header, then the buffer.
#[repr(C)]
struct SearchBuf {
    header: SearchArgsV2Header,
    buf: [u8; SEARCH_BUF],
}

const _: () = assert!(size_of::<SearchBuf>() == 112 + SEARCH_BUF);

thread_local! {
    /// One search buffer per thread, allocated on first use.
    static BUF: RefCell<Option<Box<SearchBuf>>> = const { RefCell::new(None) };
}

/// One item found: its search header's fields, and its bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Item<'a> {
    /// The generation of the leaf that holds it (the last transaction that
    /// wrote the leaf).
    pub(crate) transid: u64,
    /// Its key.
    pub(crate) objectid: u64,
    /// Its key's type.
    pub(crate) kind: u32,
    /// Its key's offset.
    pub(crate) offset: u64,
    /// Its bytes.
    pub(crate) data: &'a [u8],
}

/// Searches tree `tree_id` (0: the subvolume of `fd`) for the items with
/// keys from `min` to `max` (objectid, type, offset; compared as one key),
/// calling `f` on each in key order until it returns false; returns the
/// ioctl calls made.
///
/// The kernel reads the rest of the leaf past the range unless it has
/// found `nr` items: a caller that knows how many it wants asks for that
/// many (each call does, while calls find items and `f` wants more).
///
/// # Errors
/// The ioctl's: `EPERM` without `CAP_SYS_ADMIN`, `ENOTTY` off Btrfs,
/// `ENOENT` for a tree that does not exist; `InvalidData` for a buffer the
/// kernel filled inconsistently.
pub(crate) fn search(
    fd: BorrowedFd<'_>,
    tree_id: u64,
    min: (u64, u32, u64),
    max: (u64, u32, u64),
    nr: u32,
    f: impl FnMut(&Item<'_>) -> bool,
) -> io::Result<u32> {
    search_wide(fd, tree_id, min, max, nr, false, 0, 0, f)
}

/// [`search`], with the whole 64 KiB buffer from the first call when
/// `wide`; `leaf`: the node size (no item is larger), or 0; `since`: only
/// leaves written since that transaction (older blocks are skipped unread).
/// A call ends when the range does, at `nr` items, or when the next item
/// would not fit: one with fewer than `nr` and room for any item ended it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn search_wide(
    fd: BorrowedFd<'_>,
    tree_id: u64,
    min: (u64, u32, u64),
    max: (u64, u32, u64),
    nr: u32,
    wide: bool,
    leaf: u32,
    since: u64,
    mut f: impl FnMut(&Item<'_>) -> bool,
) -> io::Result<u32> {
    BUF.with(|cell| {
        let mut slot = cell.borrow_mut();
        let b = slot.get_or_insert_with(|| {
            Box::new(SearchBuf {
                header: SearchArgsV2Header::default(),
                buf: [0; SEARCH_BUF],
            })
        });
        let mut from = min;
        let mut calls = 0u32;
        // The kernel faults in the whole buffer on every call: ask for a
        // small one, which holds a file's items, and for the whole one only
        // when an item does not fit (EOVERFLOW).
        let mut size = if wide { SEARCH_BUF } else { SMALL_BUF };
        loop {
            b.header = SearchArgsV2Header {
                key: SearchKey {
                    tree_id,
                    min_objectid: from.0,
                    max_objectid: max.0,
                    min_type: from.1,
                    max_type: max.1,
                    min_offset: from.2,
                    max_offset: max.2,
                    min_transid: since,
                    max_transid: u64::MAX,
                    nr_items: nr.max(1),
                    ..SearchKey::default()
                },
                buf_size: size as u64,
            };
            // SAFETY: BTRFS_IOC_TREE_SEARCH_V2 reads a `struct
            // btrfs_ioctl_search_args_v2` and writes at most `buf_size`
            // bytes after its 112-byte header; `SearchBuf` is that header
            // (repr(C), size pinned above) followed by SEARCH_BUF ≥
            // `buf_size` bytes, initialised and exclusively borrowed for
            // the call.
            let res = unsafe {
                ioctl(
                    fd,
                    Updater::<{ BTRFS_IOC_TREE_SEARCH_V2 }, SearchBuf>::new(&mut **b),
                )
            };
            calls += 1;
            match res {
                Ok(()) => {}
                Err(rustix::io::Errno::OVERFLOW) if size < SEARCH_BUF => {
                    size = SEARCH_BUF;
                    continue;
                }
                Err(e) => return Err(e.into()),
            }
            let n = b.header.key.nr_items;
            if n == 0 {
                return Ok(calls);
            }
            let mut pos = 0usize;
            let mut last = from;
            for _ in 0..n {
                let h = b
                    .buf
                    .get(pos..pos + SEARCH_HEADER_LEN)
                    .ok_or_else(|| bad("search header past the buffer"))?;
                let len = u32_at(h, 28) as usize;
                let data = b
                    .buf
                    .get(pos + SEARCH_HEADER_LEN..pos + SEARCH_HEADER_LEN + len)
                    .ok_or_else(|| bad("search item past the buffer"))?;
                let item = Item {
                    transid: u64_at(h, 0),
                    objectid: u64_at(h, 8),
                    offset: u64_at(h, 16),
                    kind: u32_at(h, 24),
                    data,
                };
                last = (item.objectid, item.kind, item.offset);
                pos += SEARCH_HEADER_LEN + len;
                if !f(&item) {
                    return Ok(calls);
                }
            }
            if leaf > 0 && n < nr.max(1) && size - pos >= SEARCH_HEADER_LEN + leaf as usize {
                return Ok(calls);
            }
            // The next key after the last one found, in (objectid, type,
            // offset) order.
            let next = match last {
                (o, t, off) if off < u64::MAX => (o, t, off + 1),
                (o, t, _) if t < u32::from(u8::MAX) => (o, t + 1, 0),
                (o, _, _) if o < u64::MAX => (o + 1, 0, 0),
                _ => return Ok(calls),
            };
            if next > max || next <= from {
                return Ok(calls);
            }
            from = next;
        }
    })
}

pub(crate) fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// The little-endian `u64` at `at` in `b` (0 past its end).
pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .map_or(0, |s| u64::from_le_bytes(s.try_into().unwrap()))
}

/// The little-endian `u32` at `at` in `b` (0 past its end).
pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map_or(0, |s| u32::from_le_bytes(s.try_into().unwrap()))
}

/// `btrfs_file_extent_item.type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) enum FileExtentType {
    /// The data is in the item (no disk address).
    Inline,
    /// A data extent on disk.
    Regular,
    /// Allocated, not written (FIEMAP's `UNWRITTEN`).
    Prealloc,
}

/// One `EXTENT_DATA` item of a file (`struct btrfs_file_extent_item`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct FileExtent {
    /// The generation of the leaf holding the item.
    pub(crate) leaf_gen: u64,
    /// Its key's offset: where in the file it starts.
    pub(crate) file_offset: u64,
    /// Inline, regular or prealloc.
    pub(crate) kind: FileExtentType,
    /// 0: none; 1 zlib, 2 lzo, 3 zstd.
    pub(crate) compression: u8,
    /// Encryption or another encoding: the data is encoded too.
    pub(crate) encoded_other: bool,
    /// Where the extent starts on disk (logical address); 0 for a hole.
    pub(crate) disk_bytenr: u64,
    /// Its size on disk (compressed, for a compressed extent).
    pub(crate) disk_num_bytes: u64,
    /// Where in the extent's uncompressed data this item's range starts.
    pub(crate) offset: u64,
    /// The length of this item's range in the file.
    pub(crate) num_bytes: u64,
}

/// The bytes of a file extent item up to its inline data.
const FILE_EXTENT_INLINE_LEN: usize = 21;
/// The bytes of a regular or prealloc file extent item.
const FILE_EXTENT_LEN: usize = 53;

impl FileExtent {
    /// Parses the item; `None` for an item too short or of an unknown type.
    pub(crate) fn parse(leaf_gen: u64, file_offset: u64, d: &[u8]) -> Option<FileExtent> {
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
        };
        if kind != FileExtentType::Inline {
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
    pub(crate) fn encoded(&self) -> bool {
        self.compression != 0 || self.encoded_other
    }
}

/// What a search of one inode's items gave.
#[derive(Debug, Default)]
pub(crate) struct InodeItems {
    /// Its `INODE_ITEM` was found.
    pub(crate) found: bool,
    /// Its `EXTENT_DATA` items, in file order.
    pub(crate) extents: Vec<FileExtent>,
    /// The ioctl calls made.
    pub(crate) calls: u32,
}

/// The extent items of inode `ino` in the subvolume of `dirfd` and, when
/// one is inline, its inode item. `allocated` is its `st_blocks × 512`: the
/// search stops once the items found account for that many bytes (every
/// item with data adds its length to the inode's byte count, which
/// `st_blocks` rounds up), so that the kernel does not read the rest of
/// the leaf; `size` and `nlink` (its `st_size` and `st_nlink`) tell how
/// many items to ask for. An item that does not parse is an `InvalidData`
/// error.
pub(crate) fn inode_items(
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
#[allow(missing_docs)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DataRef {
    /// `EXTENT_DATA_REF`: by subvolume, inode and file position less the
    /// item's offset, `count` items.
    Indirect {
        root: u64,
        ino: u64,
        offset: u64,
        count: u32,
    },
    /// `SHARED_DATA_REF`: by the leaf `parent`, `count` items in it.
    Shared { parent: u64, count: u32 },
}

/// The extent item of one data extent and its refs.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ExtentRefs {
    /// `EXTENT_ITEM` found at the extent's address.
    pub(crate) found: bool,
    /// `btrfs_extent_item.refs`: the sum of the refs' counts.
    pub(crate) refs: u64,
    /// The refs, inline and keyed.
    pub(crate) list: Vec<DataRef>,
    /// Something in the item was not understood (a tree block ref on a
    /// data extent, an unknown inline ref type).
    pub(crate) unknown: bool,
}

/// The extent item at `bytenr` in the extent tree, with its inline and
/// keyed refs. `fd`: any file of the filesystem.
pub(crate) fn extent_refs(fd: BorrowedFd<'_>, bytenr: u64) -> io::Result<ExtentRefs> {
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
    pub(crate) fn counted(&self) -> u64 {
        self.list
            .iter()
            .map(|r| match *r {
                DataRef::Indirect { count, .. } | DataRef::Shared { count, .. } => u64::from(count),
            })
            .sum()
    }

    /// Takes in one item of the extent's keys.
    pub(crate) fn add(&mut self, kind: u32, key_offset: u64, d: &[u8]) {
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

/// `struct btrfs_ioctl_ino_lookup_args`.
#[repr(C)]
struct InoLookup {
    treeid: u64,
    objectid: u64,
    name: [u8; 4080],
}

const _: () = assert!(size_of::<InoLookup>() == 4096);

/// `_IOWR(0x94, 18, struct btrfs_ioctl_ino_lookup_args)`.
pub(crate) const BTRFS_IOC_INO_LOOKUP: Opcode = opcode::read_write::<InoLookup>(0x94, 18);

/// The id of the subvolume holding `fd` (unprivileged: a lookup of the
/// subvolume's own root directory).
pub(crate) fn subvol_id(fd: BorrowedFd<'_>) -> io::Result<u64> {
    ino_lookup(fd, 0, 256).map(|(tree, _)| tree)
}

/// The subvolume `tree` (0: the one holding `fd`) and the path in it of its
/// directory `ino`, each name followed by `/` (`BTRFS_IOC_INO_LOOKUP`;
/// as root, but for the subvolume's root directory, 256, whose path is
/// empty).
pub(crate) fn ino_lookup(fd: BorrowedFd<'_>, tree: u64, ino: u64) -> io::Result<(u64, Vec<u8>)> {
    let mut args = Box::new(InoLookup {
        treeid: tree,
        objectid: ino,
        name: [0; 4080],
    });
    // SAFETY: BTRFS_IOC_INO_LOOKUP reads and writes one 4096-byte `struct
    // btrfs_ioctl_ino_lookup_args` (layout mirrored, size pinned above);
    // `args` is initialised and exclusively borrowed for the call.
    unsafe {
        ioctl(
            fd,
            Updater::<{ BTRFS_IOC_INO_LOOKUP }, InoLookup>::new(&mut args),
        )?
    };
    let len = args
        .name
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(args.name.len());
    Ok((args.treeid, args.name[..len].to_vec()))
}

/// Commits the running transaction of the filesystem of `fd`, if any, and
/// waits for the commit (what `btrfs filesystem sync` does): afterwards
/// the extent tree holds every reference made before the call.
pub(crate) fn commit(fd: BorrowedFd<'_>) -> io::Result<()> {
    let mut transid = 0u64;
    // SAFETY: BTRFS_IOC_START_SYNC writes one `__u64` (the transaction id)
    // into `transid`, exclusively borrowed for the call.
    unsafe {
        ioctl(
            fd,
            Updater::<{ BTRFS_IOC_START_SYNC }, u64>::new(&mut transid),
        )?
    };
    // SAFETY: BTRFS_IOC_WAIT_SYNC reads one `__u64`; `transid` is one,
    // borrowed for the call.
    unsafe {
        ioctl(
            fd,
            Updater::<{ BTRFS_IOC_WAIT_SYNC }, u64>::new(&mut transid),
        )?
    };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::unnecessary_cast)]
    #[test]
    fn opcodes_match_kernel_headers() {
        // <linux/btrfs.h> (linux-libc-dev).
        assert_eq!(BTRFS_IOC_TREE_SEARCH_V2 as u32, 0xc070_9411);
        assert_eq!(BTRFS_IOC_INO_LOOKUP as u32, 0xd000_9412);
        assert_eq!(BTRFS_IOC_START_SYNC as u32, 0x8008_9418);
        assert_eq!(BTRFS_IOC_WAIT_SYNC as u32, 0x4008_9416);
    }

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
