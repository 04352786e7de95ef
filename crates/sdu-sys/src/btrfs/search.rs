//! `BTRFS_IOC_TREE_SEARCH_V2`, which reads the items of any tree (their
//! parsing: [`super::items`]); the path of a directory
//! in its subvolume (`BTRFS_IOC_INO_LOOKUP`); and the transaction commit
//! (`BTRFS_IOC_START_SYNC`, `BTRFS_IOC_WAIT_SYNC`) that makes the extent
//! tree current. The tree search needs `CAP_SYS_ADMIN`.
//!
//! Each ioctl argument is a `#[repr(C)]` mirror of its kernel UAPI struct,
//! size and offsets pinned at compile time, each opcode by a test. Two
//! byte orders meet in the result buffer: the kernel fills each
//! `struct btrfs_ioctl_search_header` from its own variables, in the CPU's
//! byte order ([`SearchHeader`]); the item bytes after it are copied from
//! the tree's leaves, as they lie on disk, little-endian ([`u64_at`],
//! [`u32_at`]). Items are parsed from those bytes by offset: none is cast
//! to a struct.
//!
//! # References
//!  - `include/uapi/linux/btrfs.h`, `include/uapi/linux/btrfs_tree.h`
//!  - `fs/btrfs/ioctl.c` (`search_ioctl`, `copy_to_sk`: the header is
//!    `sh.objectid = key->objectid` and so on, the item
//!    `read_extent_buffer`)

use std::cell::RefCell;
use std::io;
use std::os::fd::BorrowedFd;

use rustix::ioctl::{Opcode, Updater, ioctl, opcode};

/// The root tree.
pub const ROOT_TREE_OBJECTID: u64 = 1;
/// The extent tree.
pub const EXTENT_TREE_OBJECTID: u64 = 2;
/// The data relocation tree (balance): its refs are not sharing.
pub const DATA_RELOC_TREE_OBJECTID: u64 = (-9i64) as u64;

/// Item types (`btrfs_tree.h`), named as there without `_KEY`.
pub mod key_type {
    /// `BTRFS_INODE_ITEM_KEY`: an inode.
    pub const INODE_ITEM: u32 = 1;
    /// `BTRFS_EXTENT_DATA_KEY`: a file extent item.
    pub const EXTENT_DATA: u32 = 108;
    /// `BTRFS_ROOT_ITEM_KEY`: a tree's root item.
    pub const ROOT_ITEM: u32 = 132;
    /// `BTRFS_EXTENT_ITEM_KEY`: an extent and its inline refs.
    pub const EXTENT_ITEM: u32 = 168;
    /// `BTRFS_METADATA_ITEM_KEY`: a tree block (skinny metadata).
    pub const METADATA_ITEM: u32 = 169;
    /// `BTRFS_EXTENT_OWNER_REF_KEY`: simple quotas' owner of an extent.
    pub const EXTENT_OWNER_REF: u32 = 172;
    /// `BTRFS_TREE_BLOCK_REF_KEY`: a tree block's ref by root.
    pub const TREE_BLOCK_REF: u32 = 176;
    /// `BTRFS_EXTENT_DATA_REF_KEY`: a data extent's ref by (root, inode, offset).
    pub const EXTENT_DATA_REF: u32 = 178;
    /// `BTRFS_SHARED_BLOCK_REF_KEY`: a tree block's ref by parent block.
    pub const SHARED_BLOCK_REF: u32 = 182;
    /// `BTRFS_SHARED_DATA_REF_KEY`: a data extent's ref by parent leaf.
    pub const SHARED_DATA_REF: u32 = 184;
}

/// `struct btrfs_ioctl_search_key`: the keys from (min objectid, type,
/// offset) to (max objectid, type, offset), compared as one key.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SearchKey {
    /// The tree to search; 0: the subvolume of the fd.
    pub tree_id: u64,
    /// The first key's objectid.
    pub min_objectid: u64,
    /// The last key's objectid.
    pub max_objectid: u64,
    /// The first key's offset.
    pub min_offset: u64,
    /// The last key's offset.
    pub max_offset: u64,
    /// Only items in leaves written from this transaction on…
    pub min_transid: u64,
    /// …up to this one.
    pub max_transid: u64,
    /// The first key's type.
    pub min_type: u32,
    /// The last key's type.
    pub max_type: u32,
    /// In: the most items wanted; out: the items copied.
    pub nr_items: u32,
    /// Reserved.
    pub unused: u32,
    /// Reserved.
    pub unused1: u64,
    /// Reserved.
    pub unused2: u64,
    /// Reserved.
    pub unused3: u64,
    /// Reserved.
    pub unused4: u64,
}

const _: () = assert!(size_of::<SearchKey>() == 104);
const _: () = assert!(std::mem::offset_of!(SearchKey, min_type) == 56);
const _: () = assert!(std::mem::offset_of!(SearchKey, nr_items) == 64);

/// `struct btrfs_ioctl_search_args_v2` without its flexible buffer.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct SearchArgsV2Header {
    /// The search, in; where it stopped and the items found, out.
    pub key: SearchKey,
    /// In: the size of the buffer that follows; out, on `EOVERFLOW`, the
    /// size one item needs.
    pub buf_size: u64,
}

const _: () = assert!(size_of::<SearchArgsV2Header>() == 112);

/// `struct btrfs_ioctl_search_header`, which precedes every item in the
/// result buffer. The kernel fills it from its own variables: its fields
/// are in the CPU's byte order, not the disk's.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SearchHeader {
    /// The generation of the leaf that holds the item.
    pub transid: u64,
    /// The item's key: objectid.
    pub objectid: u64,
    /// The item's key: offset.
    pub offset: u64,
    /// The item's key: type.
    pub kind: u32,
    /// The bytes of the item, which follow the header.
    pub len: u32,
}

const _: () = assert!(size_of::<SearchHeader>() == 32);
const _: () = assert!(std::mem::offset_of!(SearchHeader, objectid) == 8);
const _: () = assert!(std::mem::offset_of!(SearchHeader, offset) == 16);
const _: () = assert!(std::mem::offset_of!(SearchHeader, kind) == 24);
const _: () = assert!(std::mem::offset_of!(SearchHeader, len) == 28);

/// The bytes of one [`SearchHeader`].
pub const SEARCH_HEADER_LEN: usize = size_of::<SearchHeader>();

/// A byte order: a search header's is the CPU's ([`Order::NATIVE`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    Little,
    Big,
}

impl Order {
    /// The CPU's, in which the kernel writes a search header.
    const NATIVE: Order = if cfg!(target_endian = "big") {
        Order::Big
    } else {
        Order::Little
    };

    #[inline]
    fn u64(self, b: &[u8], at: usize) -> u64 {
        let a: [u8; 8] = b[at..at + 8].try_into().expect("8 bytes");
        match self {
            Order::Little => u64::from_le_bytes(a),
            Order::Big => u64::from_be_bytes(a),
        }
    }

    #[inline]
    fn u32(self, b: &[u8], at: usize) -> u32 {
        let a: [u8; 4] = b[at..at + 4].try_into().expect("4 bytes");
        match self {
            Order::Little => u32::from_le_bytes(a),
            Order::Big => u32::from_be_bytes(a),
        }
    }
}

impl SearchHeader {
    /// The header in `b`, as the kernel of this machine wrote it: in the
    /// CPU's byte order.
    pub fn from_ne_bytes(b: &[u8; SEARCH_HEADER_LEN]) -> Self {
        Self::read(b, Order::NATIVE)
    }

    /// The bytes the kernel of this machine writes for the header.
    pub fn to_ne_bytes(&self) -> [u8; SEARCH_HEADER_LEN] {
        let mut b = [0u8; SEARCH_HEADER_LEN];
        b[0..8].copy_from_slice(&self.transid.to_ne_bytes());
        b[8..16].copy_from_slice(&self.objectid.to_ne_bytes());
        b[16..24].copy_from_slice(&self.offset.to_ne_bytes());
        b[24..28].copy_from_slice(&self.kind.to_ne_bytes());
        b[28..32].copy_from_slice(&self.len.to_ne_bytes());
        b
    }

    /// The header in `b`, its fields in byte order `o`.
    #[inline]
    fn read(b: &[u8; SEARCH_HEADER_LEN], o: Order) -> Self {
        SearchHeader {
            transid: o.u64(b, 0),
            objectid: o.u64(b, 8),
            offset: o.u64(b, 16),
            kind: o.u32(b, 24),
            len: o.u32(b, 28),
        }
    }
}

/// How a walk of one call's items ended.
#[derive(Debug, PartialEq, Eq)]
enum Walked {
    /// The callback wanted no more.
    Stopped,
    /// All `n` items were passed: the bytes they took, and the last key.
    Through { pos: usize, last: (u64, u32, u64) },
}

/// Passes the `n` items in `buf` (a search's result, each item after its
/// header, the header's fields in byte order `o`) to `f`, until it
/// returns false. `from`: the key the call started at.
#[inline]
fn walk(
    buf: &[u8],
    n: u32,
    from: (u64, u32, u64),
    o: Order,
    f: &mut impl FnMut(&Item<'_>) -> bool,
) -> io::Result<Walked> {
    let mut pos = 0usize;
    let mut last = from;
    for _ in 0..n {
        let h: &[u8; SEARCH_HEADER_LEN] = buf
            .get(pos..pos + SEARCH_HEADER_LEN)
            .and_then(|h| h.try_into().ok())
            .ok_or_else(|| bad("search header past the buffer"))?;
        let h = SearchHeader::read(h, o);
        let len = h.len as usize;
        let data = buf
            .get(pos + SEARCH_HEADER_LEN..pos + SEARCH_HEADER_LEN + len)
            .ok_or_else(|| bad("search item past the buffer"))?;
        let item = Item {
            transid: h.transid,
            objectid: h.objectid,
            offset: h.offset,
            kind: h.kind,
            data,
        };
        last = (item.objectid, item.kind, item.offset);
        pos += SEARCH_HEADER_LEN + len;
        if !f(&item) {
            return Ok(Walked::Stopped);
        }
    }
    Ok(Walked::Through { pos, last })
}

/// `_IOWR(0x94, 17, struct btrfs_ioctl_search_args_v2)`.
pub const BTRFS_IOC_TREE_SEARCH_V2: Opcode = opcode::read_write::<SearchArgsV2Header>(0x94, 17);
/// `_IOR(0x94, 24, __u64)`: commit the running transaction, asynchronously.
pub const BTRFS_IOC_START_SYNC: Opcode = opcode::read::<u64>(0x94, 24);
/// `_IOW(0x94, 22, __u64)`: wait until that transaction is committed.
pub const BTRFS_IOC_WAIT_SYNC: Opcode = opcode::write::<u64>(0x94, 22);

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
pub struct Item<'a> {
    /// The generation of the leaf that holds it (the last transaction that
    /// wrote the leaf).
    pub transid: u64,
    /// Its key.
    pub objectid: u64,
    /// Its key's type.
    pub kind: u32,
    /// Its key's offset.
    pub offset: u64,
    /// Its bytes.
    pub data: &'a [u8],
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
pub fn search(
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
pub fn search_wide(
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
            let (pos, last) = match walk(&b.buf, n, from, Order::NATIVE, &mut f)? {
                Walked::Stopped => return Ok(calls),
                Walked::Through { pos, last } => (pos, last),
            };
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

/// An `InvalidData` error: `what` in the kernel's answer or an item does
/// not make sense.
pub fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// The little-endian `u64` at `at` in `b` (0 past its end): a field of an
/// item, as it lies on disk.
#[inline]
pub fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .map_or(0, |s| u64::from_le_bytes(s.try_into().unwrap()))
}

/// The little-endian `u32` at `at` in `b` (0 past its end): a field of an
/// item, as it lies on disk.
#[inline]
pub fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map_or(0, |s| u32::from_le_bytes(s.try_into().unwrap()))
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
pub const BTRFS_IOC_INO_LOOKUP: Opcode = opcode::read_write::<InoLookup>(0x94, 18);

/// The id of the subvolume holding `fd` (unprivileged: a lookup of the
/// subvolume's own root directory).
pub fn subvol_id(fd: BorrowedFd<'_>) -> io::Result<u64> {
    ino_lookup(fd, 0, 256).map(|(tree, _)| tree)
}

/// The subvolume `tree` (0: the one holding `fd`) and the path in it of its
/// directory `ino`, each name followed by `/` (`BTRFS_IOC_INO_LOOKUP`;
/// as root, but for the subvolume's root directory, 256, whose path is
/// empty).
pub fn ino_lookup(fd: BorrowedFd<'_>, tree: u64, ino: u64) -> io::Result<(u64, Vec<u8>)> {
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
pub fn commit(fd: BorrowedFd<'_>) -> io::Result<()> {
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

    /// Two items as a kernel whose CPU has byte order `o` lays them out:
    /// each header's fields in that order, each item's bytes as on disk.
    /// No field reads the same in both orders.
    fn result(o: Order) -> (Vec<u8>, [SearchHeader; 2], [&'static [u8]; 2]) {
        let data: [&[u8]; 2] = [&[0x11, 0x22, 0x33], &[0x01, 0x02, 0x03, 0x04, 0x05]];
        let heads = [
            SearchHeader {
                transid: 0x0102_0304_0506_0708,
                objectid: 257,
                offset: 0x0000_0000_0001_0000,
                kind: 108,
                len: data[0].len() as u32,
            },
            SearchHeader {
                transid: 7,
                objectid: 0x0000_0001_0000_0100,
                offset: 4096,
                kind: 0x0000_00b2,
                len: data[1].len() as u32,
            },
        ];
        let mut buf = Vec::new();
        for (h, d) in heads.iter().zip(data) {
            let mut b = [0u8; SEARCH_HEADER_LEN];
            let w64 = |v: u64| match o {
                Order::Little => v.to_le_bytes(),
                Order::Big => v.to_be_bytes(),
            };
            let w32 = |v: u32| match o {
                Order::Little => v.to_le_bytes(),
                Order::Big => v.to_be_bytes(),
            };
            b[0..8].copy_from_slice(&w64(h.transid));
            b[8..16].copy_from_slice(&w64(h.objectid));
            b[16..24].copy_from_slice(&w64(h.offset));
            b[24..28].copy_from_slice(&w32(h.kind));
            b[28..32].copy_from_slice(&w32(h.len));
            buf.extend_from_slice(&b);
            buf.extend_from_slice(d);
        }
        buf.resize(buf.len() + 64, 0);
        (buf, heads, data)
    }

    /// The items [`walk`] passes on from `buf`, headers read in order `o`.
    fn walked(buf: &[u8], o: Order) -> Vec<(SearchHeader, Vec<u8>)> {
        let mut got = Vec::new();
        let end = walk(buf, 2, (0, 0, 0), o, &mut |it: &Item<'_>| {
            got.push((
                SearchHeader {
                    transid: it.transid,
                    objectid: it.objectid,
                    offset: it.offset,
                    kind: it.kind,
                    len: it.data.len() as u32,
                },
                it.data.to_vec(),
            ));
            true
        })
        .unwrap();
        let Walked::Through { pos, last } = end else {
            panic!("stopped")
        };
        assert_eq!(pos, 2 * SEARCH_HEADER_LEN + 3 + 5);
        assert_eq!(last, (got[1].0.objectid, got[1].0.kind, got[1].0.offset));
        got
    }

    /// A search result as this machine's kernel writes it: the header is
    /// the `struct btrfs_ioctl_search_header` in memory, each field in the
    /// CPU's byte order; the item's bytes as on disk.
    #[test]
    fn search_headers_are_read_in_the_cpus_byte_order() {
        let h = SearchHeader {
            transid: 0x0102_0304_0506_0708,
            objectid: 0x1122_3344,
            offset: 0x0a0b_0c0d_0e0f,
            kind: 108,
            len: 53,
        };
        assert_eq!(SearchHeader::from_ne_bytes(&h.to_ne_bytes()), h);
        let (buf, heads, data) = result(Order::NATIVE);
        let got = walked(&buf, Order::NATIVE);
        assert_eq!(got.len(), 2);
        for ((g, d), (h, want)) in got.iter().zip(heads.iter().zip(data)) {
            assert_eq!(g, h);
            assert_eq!(d, want);
        }
    }

    /// The same two items on a kernel of either byte order: the walk
    /// reads each header in the order it is given, and a header read in
    /// the other order (little-endian on a big-endian machine) gives keys
    /// and lengths that are not the item's.
    #[test]
    fn search_headers_of_either_byte_order() {
        for o in [Order::Little, Order::Big] {
            let (buf, heads, _) = result(o);
            let got: Vec<SearchHeader> = walked(&buf, o).into_iter().map(|(h, _)| h).collect();
            assert_eq!(got, heads, "{o:?}");
            let other = if o == Order::Little {
                Order::Big
            } else {
                Order::Little
            };
            let first: &[u8; SEARCH_HEADER_LEN] = buf[..SEARCH_HEADER_LEN].try_into().unwrap();
            let misread = SearchHeader::read(first, other);
            assert_ne!(misread.transid, heads[0].transid);
            assert_ne!(misread.objectid, heads[0].objectid);
            assert_ne!(misread.len, heads[0].len);
            // Its length points past the buffer: an error, not an item.
            assert!(walk(&buf, 2, (0, 0, 0), other, &mut |_: &Item<'_>| true).is_err());
        }
    }

    /// Item data stays little-endian whatever the CPU's order.
    #[test]
    fn item_fields_are_little_endian() {
        let b = [0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, 0xff];
        assert_eq!(u64_at(&b, 0), 0x0102_0304_0506_0708);
        assert_eq!(u32_at(&b, 4), 0x0102_0304);
        assert_eq!(u64_at(&b, 2), 0);
    }
}
