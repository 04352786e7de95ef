//! Btrfs inline data shared by snapshots.
//!
//! A small Btrfs file keeps its data inline, in the metadata leaf next to
//! its inode: it has no disk address, and FIEMAP never flags it shared. A
//! snapshot shares that leaf with its origin until either side changes the
//! inode, so counting inline data as exclusive in each makes an unchanged
//! snapshot of 5,000 small files "free" 20 MB when deleting it frees
//! nothing.
//!
//! The same inode, unchanged, seen in two or more subvolumes of one
//! filesystem is one shared unit here, credited by the same rules as every
//! other unit. "The same inode, unchanged" is what an unprivileged caller
//! can read with `statx`: the inode number, its birth and change times to
//! the nanosecond and its size, as for the copies of [`super::unchanged`] (a
//! new inode with a reused number has another birth time; any change to
//! the inode sets its change time); a symlink, whose target is always
//! inline, never matches a file; and the subvolumes must be of
//! one snapshot family (one is a snapshot of the other, or both of a third,
//! as their UUIDs say: `BTRFS_IOC_GET_SUBVOL_INFO`), because two fresh
//! subvolumes can hold files with equal inode numbers and
//! times (created in one transaction) that share nothing. Each such unit is
//! indexed as a pseudo-extent in an extent space of its own per filesystem,
//! so the sweep and the roll-up treat it like any shared extent.
//!
//! Without root it cannot see a snapshot outside the scan (the inode seen
//! once counts as exclusive, and the walk marks it "at most"), nor a family
//! link through a subvolume outside the scan (a snapshot of a snapshot
//! whose middle generation is not scanned). As root the families are the
//! root tree's, and every inode is asked whether a subvolume outside the
//! scan holds it ([`super::inline_held`]).

use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use rustix::fs::Statx;

use super::inline_held as ih;
use super::near::{Near, NearKey};
use super::unchanged::KeyCache;
use crate::figures::Kind;
use crate::records::{NodeId, dev32, dev64};

/// The namespace tag of the inline extent spaces: above every root
/// namespace (those count the roots).
const INLINE_NS: u32 = u32::MAX;

/// Whether namespace `ns` tags an inline extent space: its addresses are
/// made up, and no filesystem can say who else holds its data.
pub(crate) fn is_inline_ns(ns: u32) -> bool {
    ns > INLINE_NS / 2
}

/// The root namespace whose files extent space namespace `ns` holds: an
/// inline space's is the one it was made for.
pub(crate) fn root_ns(ns: u32) -> u32 {
    if is_inline_ns(ns) { INLINE_NS - ns } else { ns }
}

/// What identifies an inode's copies across snapshots: its filesystem,
/// its root's namespace, its inode number, symlink or not, its birth and
/// change times and its size. Packed in 48 bytes: the symlink flag is the
/// top bit of the birth time's nanoseconds (below 2^30).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    fs: u32,
    ns: u32,
    ino: u64,
    size: u64,
    btime_sec: i64,
    ctime_sec: i64,
    btime_nsec: u32,
    ctime_nsec: u32,
}

const SYMLINK: u32 = 1 << 31;

impl Key {
    /// The key of inode `ino` of root namespace `ns` on filesystem `fs`.
    pub(crate) fn new(
        (fs, ns, ino): (u32, u32, u64),
        symlink: bool,
        btime: (i64, u32),
        ctime: (i64, u32),
        size: u64,
    ) -> Key {
        Key {
            fs,
            ns,
            ino,
            size,
            btime_sec: btime.0,
            ctime_sec: ctime.0,
            btime_nsec: btime.1 & !SYMLINK | if symlink { SYMLINK } else { 0 },
            ctime_nsec: ctime.1,
        }
    }

    pub(crate) fn symlink(&self) -> bool {
        self.btime_nsec & SYMLINK != 0
    }

    pub(crate) fn btime(&self) -> (i64, u32) {
        (self.btime_sec, self.btime_nsec & !SYMLINK)
    }

    pub(crate) fn ctime(&self) -> (i64, u32) {
        (self.ctime_sec, self.ctime_nsec)
    }

    /// What [`super::inline_held`] asks the trees about.
    fn inode(&self) -> ih::InlineInode {
        ih::InlineInode {
            fs: self.fs,
            ns: self.ns,
            ino: self.ino,
            size: self.size,
            symlink: self.symlink(),
            times: (self.btime(), self.ctime()),
        }
    }
}

impl NearKey for Key {
    fn space_ino(&self) -> (u64, u64) {
        (u64::from(self.fs) << 32 | u64::from(self.ns), self.ino)
    }
}

/// A device (packed): the devices take shards by a hash of their number.
impl NearKey for u32 {
    fn space_ino(&self) -> (u64, u64) {
        (u64::from(*self), 0)
    }
}

/// Values given dense ids (0, 1, 2...) on first sight, by the walk's
/// threads together, each with 16 bits its first sight gave (an inline
/// inode's bytes: [`Table::bytes`]). The pair takes the room a key's
/// bucket pads to.
struct Dense<K> {
    map: Near<K, (u32, u16)>,
    next: AtomicU32,
}

impl<K> Default for Dense<K> {
    fn default() -> Self {
        Dense {
            map: Near::default(),
            next: AtomicU32::new(0),
        }
    }
}

impl<K: Copy + Default + NearKey> Dense<K> {
    /// The id of `k` and its 16 bits, given them (`first`) if new.
    fn id(&self, k: K, first: u16) -> (u32, u16) {
        self.map.with(&k, |m| {
            *m.entry(k)
                .or_insert_with(|| (self.next.fetch_add(1, Ordering::Relaxed), first))
        })
    }

    /// The values and their 16 bits by id, the map given up for them.
    fn by_id(self) -> Vec<(K, u16)> {
        let mut v = vec![(K::default(), 0); self.next.into_inner() as usize];
        for (k, (id, first)) in self.map.into_entries() {
            v[id as usize] = (k, first);
        }
        v
    }
}

/// The keys the walk met, each given a dense id on first sight: a record
/// names its inode's key by id, in 4 bytes, so a copy in one more snapshot
/// costs a record, not a key. Likewise the subvolumes (devices) the
/// records are in, each given an index that a record holds in 16 bits.
/// Shared by the walk's threads; the ids and indexes depend on the walk's
/// order, which [`share()`] never reads them in. Also the few records'
/// figures an 8-byte record cannot hold ([`Odd`]), and as root an fd on
/// each Btrfs filesystem the walk entered ([`Keys::keep_fd`]).
#[derive(Default)]
pub(crate) struct Keys {
    keys: Dense<Key>,
    devs: Dense<u32>,
    odd: Mutex<Vec<Odd>>,
    fds: Mutex<Vec<(u32, u64, OwnedFd)>>,
}

/// The keys by id, the devices by index and the odd records by index, as
/// [`share()`] reads them.
#[derive(Default)]
pub(crate) struct Table {
    keys: Vec<Key>,
    /// By key id: the bytes its records count ([`NO_BYTES`]: none of
    /// them; each has an odd record).
    bytes: Vec<u16>,
    devs: Vec<u32>,
    odd: Vec<Odd>,
    /// By filesystem (registry index), ascending: a device of it and an
    /// fd on it ([`Keys::keep_fd`]).
    fds: Vec<(u32, u64, OwnedFd)>,
}

impl Table {
    /// A device and an fd of each Btrfs filesystem the walk entered as
    /// root, whether or not a PATH lies on it: what
    /// [`super::inline_held::Holders`] asks the trees through.
    pub(crate) fn fds(&self) -> impl Iterator<Item = (u64, Option<&OwnedFd>)> {
        self.fds.iter().map(|(_, dev, fd)| (*dev, Some(fd)))
    }

    /// The devices (subvolumes) of the records, ascending, each once.
    /// Inline data is shared only between two subvolumes: while a scan
    /// meets one, its records are dropped unread.
    pub(crate) fn devs(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.devs.iter().map(|&d| dev64(d)).collect();
        v.sort_unstable();
        v
    }
}

impl Keys {
    /// The id of `key`, given it if new with `bytes`, and the bytes its
    /// first record counted ([`NO_BYTES`]: past 16 bits).
    fn id_bytes(&self, key: Key, bytes: u64) -> (u32, u16) {
        let first = u16::try_from(bytes).ok().filter(|&b| b != NO_BYTES);
        let (id, b) = self.keys.id(key, first.unwrap_or(NO_BYTES));
        assert!(id < MARK, "fewer than a billion inodes with inline data");
        (id, b)
    }

    /// The id of `key`, given it if new (with no bytes).
    #[cfg(test)]
    pub(crate) fn id(&self, key: Key) -> u32 {
        self.id_bytes(key, u64::MAX).0
    }

    /// The index of device `dev` (packed), given it if new.
    fn dev(&self, dev: u32) -> u32 {
        self.devs.id(dev, 0).0
    }

    /// As root, keeps a copy of `fd`, open on device `dev` of Btrfs
    /// filesystem `fs`, unless one of `fs` is kept: the trees of a
    /// filesystem met below a mount point are asked as those of a PATH's
    /// are, whichever thread met it first.
    pub(crate) fn keep_fd(&self, fs: u32, dev: u64, fd: BorrowedFd<'_>) {
        let mut v = self.fds.lock().unwrap_or_else(|e| e.into_inner());
        if v.iter().any(|f| f.0 == fs) {
            return;
        }
        if let Ok(fd) = rustix::io::fcntl_dupfd_cloexec(fd, 0) {
            v.push((fs, dev, fd));
        }
    }

    /// Keeps `odd`; its index.
    fn odd(&self, odd: Odd) -> u32 {
        let mut v = self.odd.lock().unwrap_or_else(|e| e.into_inner());
        v.push(odd);
        u32::try_from(v.len() - 1).expect("fewer than 4 billion odd records")
    }

    /// The bytes the map holds (its buckets' capacity).
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.keys.map.capacity_bytes()
    }

    /// The keys by id and the devices by index, the maps given up for
    /// them, and the odd records.
    pub(crate) fn table(self) -> Table {
        let odd = self.odd.into_inner().unwrap_or_else(|e| e.into_inner());
        let (keys, bytes) = self.keys.by_id().into_iter().unzip();
        let mut fds = self.fds.into_inner().unwrap_or_else(|e| e.into_inner());
        fds.sort_unstable_by_key(|f| f.0);
        Table {
            keys,
            bytes,
            devs: self.devs.by_id().into_iter().map(|d| d.0).collect(),
            odd,
            fds,
        }
    }
}

/// [`InlineRec::key`]'s top bit: credited through the link table
/// (multiply-linked).
const LINKED: u32 = 1 << 31;
/// Its next bit: its figures are an [`Odd`] record's, `at` its index.
const ODD: u32 = 1 << 30;
/// The whole of [`InlineRec::key`] in a mark: the records after it, up to
/// the next mark, are of the subvolume of index `at` ([`Keys`]).
const MARK: u32 = ODD - 1;
/// In [`Table::bytes`]: the key's records count no bytes in 16 bits.
const NO_BYTES: u16 = u16::MAX;
/// Subvolume indexes from this on are an [`Odd`] record's: the node's
/// subvolume is kept in 16 bits while the records are matched.
const NO_DEV: u32 = u16::MAX as u32;

/// A Btrfs file whose data is inline, as seen in one subvolume, in 8
/// bytes: every inline file of every snapshot has one until they are
/// matched. Its node and its inode's key by id ([`Keys`]); its bytes are
/// its key's ([`Table::bytes`]: every copy of an inode counts the same,
/// st_blocks of one inode state), and its subvolume is its node's, which
/// the records' stream says: a mark record ([`InlineRec::is_mark`]) goes
/// before the records of a task that are of another subvolume than the
/// last one (a task's files are of one subvolume), and the first of each
/// task's. The few that fit none of this have an [`Odd`] record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct InlineRec {
    /// The node it is credited to (its directory, or its own with
    /// `-a`), by id; with [`ODD`], its [`Odd`] record's index; in a mark,
    /// the subvolume's index.
    at: u32,
    /// Its inode's key's id, with [`LINKED`] and [`ODD`]; [`MARK`].
    key: u32,
}

/// What an [`InlineRec`] cannot hold: bytes other than its key's, a
/// subvolume's index past 16 bits, or a file id (some of the file's other
/// extents were indexed). Rare: inline data makes a file small, and a
/// scan meets few subvolumes.
#[derive(Clone, Copy, Debug)]
struct Odd {
    node: NodeId,
    bytes: u64,
    file: Option<u32>,
    dev: u32,
}

impl InlineRec {
    /// The record of the inode stat-ed as `st` (a file, or a symlink),
    /// credited to `node` of root namespace `ns`, with `bytes` counted as
    /// its own (`file`: its file id, if some of its extents were indexed)
    /// on filesystem `fs`, its key looked up in `keys`, and its
    /// subvolume's index too unless `last` holds it (the device and index
    /// of the caller's last record: a task's files are of one subvolume);
    /// after a mark of its subvolume, when the caller's records since its
    /// last task (`fresh`: none) have none. `None` for a device number
    /// past 32 bits, which Linux does not make.
    pub(crate) fn of(
        st: &Statx,
        (node, ns): (NodeId, u32),
        (bytes, linked, file): (u64, bool, Option<u32>),
        (fs, keys, last): (u32, &Keys, &mut Option<(u32, u32)>),
        (fresh, cache): (bool, Option<&KeyCache>),
    ) -> [Option<InlineRec>; 2] {
        let Some(dev) = dev32(rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor)) else {
            return [None, None];
        };
        let (index, marked) = match *last {
            Some((d, i)) if d == dev => (i, !fresh),
            _ => {
                let i = keys.dev(dev);
                *last = Some((dev, i));
                (i, false)
            }
        };
        let key = Key::new(
            (fs, ns, st.stx_ino),
            Kind::from_mode(u32::from(st.stx_mode)) == Kind::Symlink,
            (st.stx_btime.tv_sec, st.stx_btime.tv_nsec),
            (st.stx_ctime.tv_sec, st.stx_ctime.tv_nsec),
            st.stx_size,
        );
        let kept = cache.and_then(|c| c.get(fs, ns));
        let id_bytes = kept.unwrap_or_else(|| keys.id_bytes(key, bytes));
        if let (None, Some(c)) = (kept, cache) {
            c.set(fs, ns, id_bytes);
        }
        let r = Self::with_id((node, dev, index), id_bytes, (bytes, linked, file), keys);
        let mark = (!marked && index < NO_DEV).then(|| Self::mark(index));
        [mark, Some(r)]
    }

    /// The mark of the subvolume of index `index`.
    fn mark(index: u32) -> InlineRec {
        InlineRec {
            at: index,
            key: MARK,
        }
    }

    /// Whether it is a mark, not a file's record.
    pub(crate) fn is_mark(&self) -> bool {
        self.key == MARK
    }

    /// The record of `node`, key `key`, device `dev` (packed) of index
    /// `index` in `keys`.
    #[cfg(test)]
    fn new(
        (node, key, dev, index): (NodeId, Key, u32, u32),
        bytes: u64,
        linked: bool,
        file: Option<u32>,
        keys: &Keys,
    ) -> InlineRec {
        let id_bytes = keys.id_bytes(key, bytes);
        Self::with_id((node, dev, index), id_bytes, (bytes, linked, file), keys)
    }

    /// The record of `node`, device `dev` (packed) of index `index` in
    /// `keys`, whose key has id `id` and first counted `key_bytes`.
    fn with_id(
        (node, dev, index): (NodeId, u32, u32),
        (id, key_bytes): (u32, u16),
        (bytes, linked, file): (u64, bool, Option<u32>),
        keys: &Keys,
    ) -> InlineRec {
        let linked = if linked { LINKED } else { 0 };
        if u64::from(key_bytes) == bytes
            && key_bytes != NO_BYTES
            && index < NO_DEV
            && file.is_none()
        {
            InlineRec {
                at: node.index() as u32,
                key: id | linked,
            }
        } else {
            InlineRec {
                at: keys.odd(Odd {
                    node,
                    bytes,
                    file,
                    dev,
                }),
                key: id | linked | ODD,
            }
        }
    }

    /// Its inode's key's id.
    pub(crate) fn key(&self) -> u32 {
        self.key & (ODD - 1)
    }

    /// Credited through the link table (multiply-linked).
    pub(crate) fn linked(&self) -> bool {
        self.key & LINKED != 0
    }

    fn odd<'a>(&self, odd: &'a [Odd]) -> Option<&'a Odd> {
        (self.key & ODD != 0).then(|| &odd[self.at as usize])
    }

    /// The node it is credited to, reading its odd record (of `odd`) if
    /// it has one.
    fn node(&self, odd: &[Odd]) -> NodeId {
        self.odd(odd)
            .map_or_else(|| NodeId::new(self.at as usize), |o| o.node)
    }

    /// Its bytes, reading its odd record (of `odd`) if it has one, else
    /// its key's (of `keys`: [`Table::bytes`]).
    fn bytes(&self, odd: &[Odd], keys: &[u16]) -> u64 {
        self.odd(odd)
            .map_or_else(|| u64::from(keys[self.key() as usize]), |o| o.bytes)
    }

    /// Its file id, when some of its other extents were indexed.
    fn file(&self, odd: &[Odd]) -> Option<u32> {
        self.odd(odd).and_then(|o| o.file)
    }
}

/// The records [`share()`] moves or frees at once: 512 KiB.
const MOVED_AT_ONCE: usize = 1 << 16;

/// The records [`share()`] takes come in chunks of at most
/// `1 << CHUNK_BITS`, as the walk's shards keep them: 2 MiB, which the
/// allocator maps on its own and gives back when [`share()`] frees it
/// (smaller chunks glibc kept for reuse: docs/decisions.md, "Memory");
/// pages never written are never resident, so a shard's last chunk costs
/// what it holds.
pub(crate) const CHUNK_BITS: u32 = 18;

// What a Btrfs file with inline data costs while the walk runs, in every
// subvolume it is seen in; its key is once per inode.
const _: () = assert!(size_of::<InlineRec>() == 8);
const _: () = assert!(size_of::<Key>() == 48);

mod share;
pub(crate) use share::share;

#[cfg(test)]
mod tests;
