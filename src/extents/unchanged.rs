//! Btrfs files unchanged across snapshots, mapped once.
//!
//! A snapshot holds the same inodes as its origin, and until either side
//! changes one, both reference the same extents. FIEMAP on Btrfs decides
//! each extent's shared flag by walking backrefs, which makes it the
//! dominant cost of scanning snapshots without root (docs/decisions.md,
//! "Btrfs: copies mapped once"): ten snapshots of a tree cost eleven
//! FIEMAPs per file, all giving the same answer.
//!
//! So the walk maps one copy of such a file and credits the others with
//! the extents it gave. A copy is "the same inode, unchanged" by what
//! `statx` says: the inode number, birth and change times to the
//! nanosecond, size and allocated blocks, in one extent space (one
//! filesystem and root). Any write, truncate, clone into the file, chmod or
//! rename sets the change time; a new inode with a reused number has
//! another birth time. The two subvolumes must also be related as
//! snapshots, by their UUIDs (`BTRFS_IOC_GET_SUBVOL_INFO`): one is a
//! snapshot of the other, or both are of one origin, or they are one
//! subvolume. Two fresh subvolumes can hold files with equal inode
//! numbers and times (created in one transaction) that share nothing. A
//! copy that relates to no copy seen before is mapped with its own FIEMAP.
//! So is a file of a snapshot that last changed less than 100 ms before
//! the snapshot was made ([`settled`]): inode times move in clock ticks,
//! and a write to its origin within the tick of the file's last change
//! leaves the change time as it was, so that the two would look alike.
//!
//! What it cannot see: a deduplication (`FIDEDUPERANGE`) that ran on one
//! copy after the snapshot was taken changes that copy's extents without
//! changing its change time, by design of the ioctl. The copies then
//! differ and are credited alike; `--map-each-copy` maps every copy. As
//! root the tree search reads every copy's own items and does not use this.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use sdu_sys::fiemap::{Extent, FIEMAP_EXTENT_DATA_INLINE};

use super::near::{Near, NearKey};
use crate::probe::Subvol;

/// What identifies one inode, unchanged, within one extent space. Kept in
/// the shard of its inode number ([`Near`]) and hashed whole there,
/// seeded ([`super::Fast`]): the keys of one inode number are many where
/// files change in every snapshot or unrelated subvolumes hold the same
/// numbers, and a hash that placed them by inode number piled them into
/// one run of buckets (docs/scale.md, "Snapshots").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct CopyKey {
    /// The extent space (filesystem and root namespace).
    pub(crate) space: u32,
    /// `st_ino`.
    pub(crate) ino: u64,
    /// `st_size`.
    pub(crate) size: u64,
    /// `st_blocks`.
    pub(crate) blocks: u64,
    /// `stx_btime`, seconds and nanoseconds.
    pub(crate) btime: (i64, u32),
    /// `stx_ctime`, seconds and nanoseconds.
    pub(crate) ctime: (i64, u32),
}

/// An inode of an extent space, as [`Indexed`] keeps it.
impl NearKey for (u32, u64) {
    fn space_ino(&self) -> (u64, u64) {
        (u64::from(self.0), self.1)
    }
}

impl NearKey for CopyKey {
    fn space_ino(&self) -> (u64, u64) {
        (u64::from(self.space), self.ino)
    }
}

/// A subvolume's UUID and the UUID of the subvolume it is a snapshot of
/// (zero when none).
pub(crate) type SubvolIds = ([u8; 16], [u8; 16]);

/// How long before its snapshot a file must have last changed, in
/// nanoseconds, for its change time to tell its copies apart: inode times
/// come from a clock that moves in ticks (at most 10 ms, at `HZ=100`) and
/// may lag the snapshot's creation time by one, and a write within the
/// tick of the file's last change before the snapshot leaves the change
/// time as it was. 100 ms is ten ticks.
pub(crate) const SETTLE_NANOS: i64 = 100_000_000;

/// Whether a file of subvolume `sv` that last changed at `ctime` can be
/// known unchanged by its change time: always in a subvolume that is no
/// snapshot (its copies elsewhere are snapshots, judged there); in a
/// snapshot, when it changed at least `SETTLE_NANOS` before the snapshot
/// was made. Otherwise its origin may have been written since, in the same
/// tick, with nothing in `statx` to show it: it is mapped on its own.
///
/// Public for `tests/sdu/inline.rs`, which asks it which of a real
/// snapshot's files sdu treats as settled.
pub fn settled(sv: &Subvol, ctime: (i64, u32)) -> bool {
    let ns = |(s, n): (i64, u32)| i128::from(s) * 1_000_000_000 + i128::from(n);
    sv.ids.1 == [0; 16] || ns(ctime) < ns(sv.created) - i128::from(SETTLE_NANOS)
}

/// Whether files of subvolumes `a` and `b` may be copies of one inode:
/// one subvolume, one a snapshot of the other, or two snapshots of one
/// origin.
pub(crate) fn related(a: SubvolIds, b: SubvolIds) -> bool {
    let zero = [0u8; 16];
    a.0 != zero
        && b.0 != zero
        && (a.0 == b.0 || a.0 == b.1 || b.0 == a.1 || (a.1 != zero && a.1 == b.1))
}

/// Whether a file whose FIEMAP gave `extents` may have copies: every
/// extent with a disk address is shared (copies reference the same
/// extents, so an unshared one means there is none) and there is one; or
/// its data is inline (no address, never flagged shared) and `inline_ok`:
/// the file is in a snapshot, or its key was claimed (a snapshot was met).
/// The others are not kept, so that a subvolume without snapshots costs no
/// memory.
pub(crate) fn worth_keeping(extents: &[Extent], inline_ok: bool) -> bool {
    let placed = || extents.iter().filter(|e| e.has_physical());
    let inline = extents
        .iter()
        .any(|e| e.flags & FIEMAP_EXTENT_DATA_INLINE != 0);
    if placed().next().is_some() {
        placed().all(|e| e.is_shared())
    } else {
        inline && inline_ok
    }
}

/// What one copy's FIEMAP gave that the others need.
#[derive(Debug)]
pub(crate) struct CopyMap {
    /// The subvolume it was read in.
    pub(crate) subvol: SubvolIds,
    /// Its extents (as FIEMAP gave them, every one).
    pub(crate) extents: Box<[Extent]>,
    /// Its file id, when it can stand for its copies
    /// ([`crate::records::CopyRec`]): some extent was indexed for it, it
    /// is credited to one node (not through links), and none of its data
    /// is inline.
    pub(crate) file: Option<u32>,
    /// Its inline key's id, once a copy's record has looked it up.
    pub(crate) inline_key: KeyCache,
}

/// A file's inline key id, kept with the map of its copies
/// ([`CopyMap`]): once one copy's record has looked its
/// key up, the others (the same inode, unchanged, in more snapshots of the
/// same filesystem and namespace: the same key) take the id from here
/// instead of from the shared map
/// ([`super::inline::InlineRec::of`]), where each lookup is a cache miss.
/// One word: the id, the bytes its first record counted, and the
/// filesystem and namespace it holds for (8 bits each; past them, nothing
/// is kept).
#[derive(Debug)]
pub(crate) struct KeyCache(AtomicU64);

impl Default for KeyCache {
    fn default() -> KeyCache {
        KeyCache(AtomicU64::new(u64::MAX))
    }
}

impl KeyCache {
    /// The id and bytes kept for filesystem `fs`, namespace `ns`.
    pub(crate) fn get(&self, fs: u32, ns: u32) -> Option<(u32, u16)> {
        let w = self.0.load(Ordering::Relaxed);
        (w != u64::MAX && Some(w >> 48) == Self::tag(fs, ns))
            .then_some((w as u32, (w >> 32) as u16))
    }

    /// Keeps `(id, bytes)` for filesystem `fs`, namespace `ns`.
    pub(crate) fn set(&self, fs: u32, ns: u32, (id, bytes): (u32, u16)) {
        if let Some(tag) = Self::tag(fs, ns) {
            let w = tag << 48 | u64::from(bytes) << 32 | u64::from(id);
            self.0.store(w, Ordering::Relaxed);
        }
    }

    fn tag(fs: u32, ns: u32) -> Option<u64> {
        (fs < 0xff && ns < 0xff).then(|| u64::from(fs) << 8 | u64::from(ns))
    }
}

/// The copies mapped so far, by key, and those being mapped.
#[derive(Debug, Default)]
pub(crate) struct MappedCopies {
    map: Near<CopyKey, Slot>,
    /// The entries of `map`: while there is none (a tree without
    /// snapshots, the common case), a lookup costs one atomic load.
    len: AtomicUsize,
    /// A file of a snapshot was looked up: the files of other subvolumes
    /// may have copies in the scan, and claim their keys too.
    snapshot_met: AtomicBool,
}

/// What the map holds for one key.
#[derive(Debug)]
enum Slot {
    /// A thread is mapping a copy ([`Claim`]).
    Claimed,
    /// What a copy's mapping gave.
    Mapped(Arc<CopyMap>),
}

/// What [`MappedCopies::find_or_claim`] found.
pub(crate) enum CopyLookup<'a> {
    /// A copy mapped in a related subvolume.
    Found(Arc<CopyMap>),
    /// None yet: this caller maps the file and gives what it found
    /// ([`Claim::keep`]), or drops the claim.
    Claimed(Claim<'a>),
    /// Another thread is mapping a copy now: ask again later.
    Busy,
    /// None it may use: the file is mapped on its own.
    Missed,
}

impl MappedCopies {
    /// The copy of `key` mapped in a subvolume related to `subvol`, if any.
    /// When none is known and none is being mapped, the key is claimed for
    /// the caller to map, if `subvol` is a snapshot or a snapshot was met.
    ///
    /// The walk's threads go through a subvolume and its snapshots in the
    /// same order and at one pace: without the claim each thread that met
    /// an inode at once mapped its own copy (docs/decisions.md, "Btrfs:
    /// copies mapped once").
    pub(crate) fn find_or_claim(&self, key: CopyKey, subvol: SubvolIds) -> CopyLookup<'_> {
        let claim = if subvol.1 != [0; 16] {
            if !self.snapshot_met.load(Ordering::Relaxed) {
                self.snapshot_met.store(true, Ordering::Relaxed);
            }
            true
        } else {
            self.snapshot_met.load(Ordering::Relaxed)
        };
        self.map.with(&key, |m| match m.get(&key) {
            Some(Slot::Mapped(c)) if related(c.subvol, subvol) => CopyLookup::Found(Arc::clone(c)),
            Some(Slot::Mapped(_)) => CopyLookup::Missed,
            Some(Slot::Claimed) => CopyLookup::Busy,
            None if !claim => CopyLookup::Missed,
            None => {
                m.insert(key, Slot::Claimed);
                self.len.fetch_add(1, Ordering::Relaxed);
                CopyLookup::Claimed(Claim { copies: self, key })
            }
        })
    }

    /// The copy of `key` mapped in a subvolume related to `subvol`, if any,
    /// without a claim.
    pub(crate) fn find(&self, key: &CopyKey, subvol: SubvolIds) -> Option<Arc<CopyMap>> {
        self.map.with(key, |m| match m.get(key) {
            Some(Slot::Mapped(c)) if related(c.subvol, subvol) => Some(Arc::clone(c)),
            _ => None,
        })
    }

    /// Remembers what mapping the copy `key` gave. The first copy mapped
    /// stays: a later one gave the same, or is of an unrelated subvolume.
    pub(crate) fn remember(&self, key: CopyKey, m: CopyMap) {
        self.map.with(&key, |t| {
            if let std::collections::hash_map::Entry::Vacant(v) = t.entry(key) {
                v.insert(Slot::Mapped(Arc::new(m)));
                self.len.fetch_add(1, Ordering::Relaxed);
            }
        });
    }

    /// The number of inodes remembered or being mapped.
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Whether none is.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A key claimed by the thread that maps its file. Dropped without
/// [`Claim::keep`] (the map failed, the file changed, it is not worth
/// keeping), the key is free again and a waiting thread maps its own.
pub(crate) struct Claim<'a> {
    copies: &'a MappedCopies,
    key: CopyKey,
}

impl Claim<'_> {
    /// Gives what the mapping of the claimed key gave.
    pub(crate) fn keep(self, m: CopyMap) {
        let key = self.key;
        self.copies.map.with(&key, |t| {
            if let Some(slot) = t.get_mut(&key) {
                *slot = Slot::Mapped(Arc::new(m));
            }
        });
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        let key = self.key;
        self.copies.map.with(&key, |t| {
            if matches!(t.get(&key), Some(Slot::Claimed)) {
                t.remove(&key);
                self.copies.len.fetch_sub(1, Ordering::Relaxed);
            }
        });
    }
}

/// As root (the tree search), which reads every copy's own items: the
/// shared extents each file of a snapshot was indexed with, by extent
/// space and inode. Another file of that inode whose shared extents are
/// exactly the same (an unchanged copy in another snapshot) is then
/// recorded as a copy of it ([`crate::records::CopyRec`]) rather than
/// indexed again: what is compared is what would be indexed, so a copy
/// that differs (deduplicated since, say) is indexed as itself. Kept for
/// files of snapshots only: a subvolume without snapshots keeps nothing.
#[derive(Debug, Default)]
pub(crate) struct Indexed {
    /// By (extent space, inode): the file and what it was indexed with.
    map: Near<(u32, u64), IndexedFile>,
    len: AtomicUsize,
}

/// A file id and what it was indexed with.
type IndexedFile = (u32, Box<[SharedRef]>);

/// One shared extent as the tree search indexes it for a file: its
/// address, its size on disk, and the file's references to it.
pub(crate) type SharedRef = (u64, u64, u32);

impl Indexed {
    /// The file of inode `ino` in extent space `space` indexed with exactly
    /// `shared`, if one was kept.
    pub(crate) fn find(&self, (space, ino): (u32, u64), shared: &[SharedRef]) -> Option<u32> {
        if self.len.load(Ordering::Relaxed) == 0 {
            return None;
        }
        self.map.with(&(space, ino), |t| {
            let e = t.get(&(space, ino))?;
            (*e.1 == *shared).then_some(e.0)
        })
    }

    /// Keeps that `file`, of inode `ino` in `space`, was indexed with
    /// `shared`. The first kept stays.
    pub(crate) fn keep(&self, (space, ino): (u32, u64), file: u32, shared: &[SharedRef]) {
        self.map.with(&(space, ino), |t| {
            if let std::collections::hash_map::Entry::Vacant(v) = t.entry((space, ino)) {
                v.insert((file, shared.into()));
                self.len.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: [u8; 16] = [1; 16];
    const B: [u8; 16] = [2; 16];
    const C: [u8; 16] = [3; 16];
    const Z: [u8; 16] = [0; 16];

    /// The keys of one inode number (its versions, or the same number in
    /// unrelated subvolumes) take buckets all over its shard's table, not
    /// one run of them: the bucket bits of their hashes differ. The map's hasher
    /// (foldhash's) takes a seed per process, and for a few seeds in a
    /// hundred these 200 versions take 80 to 149 of 1,024 buckets, not
    /// about 180; so the test gives the same hash 64 fixed seeds, to have
    /// one answer. The hash that placed keys by inode number put them all
    /// in one bucket.
    #[test]
    fn keys_of_one_inode_spread_over_the_map() {
        use std::hash::BuildHasher;
        // The map's shards hash with foldhash's `fast`, seeded per process.
        MappedCopies::default().map.with(&key(), |t| {
            let _: &foldhash::fast::RandomState = t.hasher();
        });
        let mut spread: Vec<usize> = (0..64u64)
            .map(|seed| {
                let h = foldhash::fast::FixedState::with_seed(seed);
                let buckets: std::collections::HashSet<u64> = (0..200)
                    .map(|v| {
                        let k = CopyKey {
                            ctime: (1_000 + v, 4),
                            ..key()
                        };
                        h.hash_one(k) & 0x3ff
                    })
                    .collect();
                buckets.len()
            })
            .collect();
        spread.sort_unstable();
        assert!(spread[0] > 150, "{spread:?}");
    }

    #[test]
    fn only_files_changed_100_ms_before_their_snapshot_are_settled() {
        let made = |ids, created| Subvol {
            id: 256,
            ids,
            created,
        };
        let snap = made((B, A), (1000, 50_000_000));
        assert!(settled(&snap, (998, 999_999_999)));
        assert!(settled(&snap, (999, 949_999_999)));
        assert!(
            !settled(&snap, (999, 950_000_000)),
            "100 ms before, to the nanosecond"
        );
        assert!(!settled(&snap, (1000, 0)));
        assert!(!settled(&snap, (2000, 0)), "changed after the snapshot");
        // In a subvolume that is no snapshot, any change time.
        assert!(settled(&made((A, Z), (1000, 500)), (2000, 0)));
    }

    #[test]
    fn snapshots_and_their_origin_are_related() {
        assert!(related((A, Z), (A, Z)), "one subvolume");
        assert!(related((A, Z), (B, A)), "origin and snapshot");
        assert!(related((B, A), (A, Z)), "snapshot and origin");
        assert!(related((B, A), (C, A)), "two snapshots of one origin");
    }

    #[test]
    fn unrelated_subvolumes_are_not() {
        assert!(!related((A, Z), (B, Z)), "two fresh subvolumes");
        // A snapshot of a snapshot and the first origin: not direct, so
        // mapped again (correct, only slower).
        assert!(!related((C, B), (A, Z)));
        assert!(
            related((C, B), (B, A)),
            "a snapshot of a snapshot and its origin"
        );
        assert!(!related((Z, Z), (Z, Z)), "no UUID (top level): never");
        assert!(!related((B, C), (A, Z)), "a snapshot of another origin");
    }

    fn key() -> CopyKey {
        CopyKey {
            space: 1,
            ino: 257,
            size: 10,
            blocks: 8,
            btime: (5, 6),
            ctime: (7, 8),
        }
    }

    fn mapped(subvol: SubvolIds) -> CopyMap {
        CopyMap {
            subvol,
            extents: Box::new([]),
            file: None,
            inline_key: Default::default(),
        }
    }

    #[test]
    fn a_copy_of_an_unrelated_subvolume_is_not_found() {
        let c = MappedCopies::default();
        let key = key();
        c.remember(key, mapped((B, A)));
        assert!(matches!(c.find_or_claim(key, (C, A)), CopyLookup::Found(_)));
        assert!(matches!(c.find_or_claim(key, (C, Z)), CopyLookup::Missed));
        let other = CopyKey {
            ctime: (7, 9),
            ..key
        };
        // Not known: claimed, and free again once the claim is dropped.
        assert!(matches!(
            c.find_or_claim(other, (C, A)),
            CopyLookup::Claimed(_)
        ));
        assert_eq!(c.len(), 1);
    }

    /// A key claimed is busy for every other lookup until its claim is
    /// kept (then found, by related subvolumes only) or dropped (then
    /// claimed again); `len` counts claims, so that a claim alone makes
    /// lookups of other subvolumes' files begin.
    #[test]
    fn a_claimed_key_is_busy_until_kept_or_dropped() {
        let c = MappedCopies::default();
        let key = key();
        let CopyLookup::Claimed(claim) = c.find_or_claim(key, (B, A)) else {
            panic!("an unknown key is claimed");
        };
        assert_eq!(c.len(), 1);
        assert!(!c.is_empty());
        assert!(matches!(c.find_or_claim(key, (C, A)), CopyLookup::Busy));
        assert!(matches!(c.find_or_claim(key, (B, A)), CopyLookup::Busy));
        drop(claim);
        assert!(c.is_empty(), "a dropped claim leaves nothing");
        let CopyLookup::Claimed(claim) = c.find_or_claim(key, (C, A)) else {
            panic!("a dropped claim frees the key");
        };
        // Kept: the same mapping for every related subvolume.
        claim.keep(mapped((C, A)));
        assert_eq!(c.len(), 1);
        assert!(matches!(c.find_or_claim(key, (B, A)), CopyLookup::Found(_)));
        assert!(matches!(c.find_or_claim(key, (A, Z)), CopyLookup::Found(_)));
        assert!(matches!(c.find_or_claim(key, (B, Z)), CopyLookup::Missed));
        // A mapping remembered after is not the one kept.
        c.remember(key, mapped((B, C)));
        let CopyLookup::Found(m) = c.find_or_claim(key, (A, Z)) else {
            panic!("still found");
        };
        assert_eq!(m.subvol, (C, A));
    }

    /// A file of a subvolume that is no snapshot claims nothing (and so
    /// keeps no inline data) until a snapshot's file was looked up: a
    /// subvolume scanned without its snapshots costs no memory.
    #[test]
    fn a_subvolume_claims_only_once_a_snapshot_is_met() {
        let c = MappedCopies::default();
        let (key, origin) = (key(), (A, Z));
        assert!(matches!(c.find_or_claim(key, origin), CopyLookup::Missed));
        assert!(c.is_empty());
        let other = CopyKey { ino: 258, ..key };
        assert!(matches!(
            c.find_or_claim(other, (B, A)),
            CopyLookup::Claimed(_)
        ));
        assert!(matches!(
            c.find_or_claim(key, origin),
            CopyLookup::Claimed(_)
        ));
    }

    /// Two threads after one key: exactly one claims it; the other finds
    /// it busy or, once kept, found.
    #[test]
    fn one_of_two_threads_claims_a_key() {
        for _ in 0..200 {
            let c = MappedCopies::default();
            let key = key();
            let barrier = std::sync::Barrier::new(2);
            let claimed = std::sync::atomic::AtomicUsize::new(0);
            std::thread::scope(|s| {
                for _ in 0..2 {
                    s.spawn(|| {
                        barrier.wait();
                        match c.find_or_claim(key, (B, A)) {
                            CopyLookup::Claimed(claim) => {
                                claimed.fetch_add(1, Ordering::Relaxed);
                                claim.keep(mapped((B, A)));
                            }
                            CopyLookup::Busy | CopyLookup::Found(_) => {}
                            CopyLookup::Missed => panic!("a related copy is never missed"),
                        }
                    });
                }
            });
            assert_eq!(claimed.load(Ordering::Relaxed), 1);
            assert!(matches!(c.find_or_claim(key, (C, A)), CopyLookup::Found(_)));
        }
    }
}
