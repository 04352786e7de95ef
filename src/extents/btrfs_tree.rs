//! As root on Btrfs: the subvolume's tree stands in for `getdents` and
//! `statx`. A directory's entries are its `DIR_INDEX` items, each entry's
//! figures its `INODE_ITEM`, each file's extents its `EXTENT_DATA` items: one
//! search of a range of inode numbers reads all three for every inode in
//! it, so a walk costs a few searches per directory instead of a syscall
//! (or two) per entry.
//!
//! The tree holds what `statx` says only once the filesystem is synced:
//! until then the inode items wait in memory (delayed items) and data not
//! yet written back has no extent items, though `st_blocks` counts it. The
//! walk therefore syncs the filesystem (`syncfs`, what `sync -f` does)
//! before it reads its tree ([`super::source::Extents`]'s readiness
//! check).
//!
//! What is read is kept in a [`TreeCache`] by (device, inode): the items of
//! a directory's children are read in runs of neighbouring inode numbers
//! (files created together have neighbouring numbers), and whatever else a
//! run covers (a subdirectory's own items and entries, its files) is kept
//! for when the walk gets there. Each inode is taken out once it is used, so
//! the cache holds what the walk has read ahead, not the whole tree.
//!
//! How much waits in it grows with the threads walking: a directory's task
//! reads its files when it meets the first of them, and with a cold cache
//! 32 tasks may be in 32 snapshots' copies of one large directory at once
//! (`/usr/share/man/man1`, 17,859 entries). A range therefore holds at
//! most [`RUN_MAX`] of the inodes asked for, and past [`READ_AHEAD`] bytes
//! the cache keeps only what was asked for (measured in docs/decisions.md,
//! "Threads of a cold walk").

use std::io;
use std::os::fd::BorrowedFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use dashmap::DashMap;
use sdu_sys::btrfs::Lineage;

use sdu_sys::btrfs::{FileExtent, key_type, search_wide, u32_at, u64_at};

/// `BTRFS_DIR_INDEX_KEY`: a directory's entries in creation order, the
/// order `getdents` lists them in.
const DIR_INDEX: u32 = 96;

/// The widest gap between two inode numbers read as one range: the inodes
/// between are read for nothing unless the walk meets them later (often it
/// does: a subdirectory's files lie between its parent's).
pub(crate) const GAP: u64 = 64;

/// The most inodes asked for that one range holds.
pub(crate) const RUN_MAX: usize = 512;

/// What the cache holds ([`TreeInode::weight`]) before it keeps only what
/// was asked for: a bound the bench trees do not reach (keeping only what
/// is asked for costs searches again and `statx` calls where the walk
/// meets what it did not keep).
pub(crate) const READ_AHEAD: usize = 32 << 20;

/// `struct btrfs_inode_item`, as the walk needs it: 88 bytes, for the
/// read-ahead cache holds thousands (its times as seconds and nanoseconds
/// apart: four `(i64, u32)` pairs would take 64 bytes, not 48).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct InodeItem {
    pub(crate) size: u64,
    /// The bytes allocated to it (`inode_get_bytes`, which `st_blocks`
    /// rounds up to the sector size).
    pub(crate) nbytes: u64,
    pub(crate) rdev: u64,
    /// The seconds of its access, change, modification and birth
    /// (`otime`) times, in that order.
    pub(crate) secs: [i64; 4],
    pub(crate) nlink: u32,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) mode: u32,
    /// Their nanoseconds.
    pub(crate) nsecs: [u32; 4],
}

const _: () = assert!(size_of::<InodeItem>() == 88);

/// `sizeof(struct btrfs_inode_item)`.
const INODE_ITEM_LEN: usize = 160;

impl InodeItem {
    /// Parses the item; `None` if it is too short.
    pub(crate) fn parse(d: &[u8]) -> Option<InodeItem> {
        if d.len() < INODE_ITEM_LEN {
            return None;
        }
        // atime, ctime, mtime, otime: 12 bytes each from 112.
        let at = [112, 124, 136, 148];
        Some(InodeItem {
            size: u64_at(d, 16),
            nbytes: u64_at(d, 24),
            nlink: u32_at(d, 40),
            uid: u32_at(d, 44),
            gid: u32_at(d, 48),
            mode: u32_at(d, 52),
            rdev: u64_at(d, 56),
            secs: at.map(|a| u64_at(d, a) as i64),
            nsecs: at.map(|a| u32_at(d, a + 8)),
        })
    }
}

/// One `DIR_INDEX` item: an entry of a directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct DirEntry {
    /// What it names: an inode of the same subvolume, or (`subvol`) the
    /// root of another subvolume, by its id.
    pub(crate) child: u64,
    /// It names a subvolume (its location key is a `ROOT_ITEM`).
    pub(crate) subvol: bool,
    /// `BTRFS_FT_*`, the `d_type` that `getdents` gives.
    pub(crate) file_type: u8,
    /// Where its name (with a NUL after it) starts in
    /// `TreeInode::names`, and its length with the NUL (a Btrfs name
    /// has at most 255 bytes).
    name_at: u32,
    name_len: u16,
}

const _: () = assert!(size_of::<DirEntry>() == 16);

/// The fixed part of `struct btrfs_dir_item` (location key, transid,
/// data_len, name_len, type), before the name.
const DIR_ITEM_LEN: usize = 30;

/// `BTRFS_FT_REG_FILE`, `BTRFS_FT_DIR`, `BTRFS_FT_SYMLINK`.
pub(crate) mod file_type {
    pub(crate) const REG_FILE: u8 = 1;
    pub(crate) const DIR: u8 = 2;
    pub(crate) const SYMLINK: u8 = 7;
}

/// What the tree holds of one inode: each part in one allocation of its
/// exact size, or none when empty. The read-ahead cache holds thousands:
/// a file takes 144 bytes and its extents' slice, a directory 32 more
/// for its listing.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct TreeInode {
    /// Its inode item.
    pub(crate) item: InodeItem,
    /// Its `EXTENT_DATA` items, in file order.
    pub(crate) extents: Box<[FileExtent]>,
    /// A directory's entries, when it has any.
    listing: Option<Box<Listing>>,
    /// An item did not parse: the walk asks `statx` instead.
    pub(crate) broken: bool,
}

const _: () = assert!(size_of::<TreeInode>() == 120);

/// A directory's entries, in index order, and their names, each followed
/// by a NUL.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Listing {
    entries: Box<[DirEntry]>,
    names: Box<[u8]>,
}

impl TreeInode {
    /// A directory's entries, in index order.
    pub(crate) fn entries(&self) -> &[DirEntry] {
        self.listing.as_ref().map_or(&[], |l| &l.entries)
    }

    /// The name of `e`, an entry of this directory, with its NUL.
    pub(crate) fn name(&self, e: &DirEntry) -> &[u8] {
        let names = self.listing.as_ref().map_or(&[][..], |l| &l.names);
        let at = e.name_at as usize;
        &names[at..at + usize::from(e.name_len)]
    }

    /// The bytes it takes, about: its allocations and the cache's slot.
    fn weight(&self) -> usize {
        const BASE: usize = size_of::<TreeInode>() + 64;
        BASE + self.extents.len() * size_of::<FileExtent>()
            + self.listing.as_ref().map_or(0, |l| {
                size_of::<Listing>() + l.entries.len() * size_of::<DirEntry>() + l.names.len()
            })
    }
}

/// One inode's items as a search meets them, in vectors that serve one
/// inode after another, kept as a [`TreeInode`]: a file then costs its
/// record and one slice, not a vector grown and shrunk (a third of the
/// allocator's calls as root, and fewer chunks left behind in the
/// threads' arenas).
#[derive(Default)]
struct Building {
    ino: u64,
    item: InodeItem,
    extents: Vec<FileExtent>,
    entries: Vec<DirEntry>,
    names: Vec<u8>,
    broken: bool,
}

impl Building {
    /// Starts inode `ino`, its item `item` (`None`: it did not parse).
    fn start(&mut self, ino: u64, item: Option<InodeItem>) {
        self.ino = ino;
        self.item = item.unwrap_or_default();
        self.broken = item.is_none();
        self.extents.clear();
        self.entries.clear();
        self.names.clear();
    }

    fn built(&self) -> TreeInode {
        TreeInode {
            item: self.item,
            extents: self.extents.as_slice().into(),
            listing: (!self.entries.is_empty()).then(|| {
                Box::new(Listing {
                    entries: self.entries.as_slice().into(),
                    names: self.names.as_slice().into(),
                })
            }),
            broken: self.broken,
        }
    }

    fn add_entry(&mut self, d: &[u8]) {
        let name_len = usize::from(u16::from_le_bytes([d[27], d[28]]));
        let Some(name) = d.get(DIR_ITEM_LEN..DIR_ITEM_LEN + name_len) else {
            self.broken = true;
            return;
        };
        // A name with a NUL or a slash in it (or `.`, `..`, or longer than
        // `BTRFS_NAME_LEN`) is no entry's name: the walk lists the
        // directory itself, as getdents gives it.
        if name.is_empty()
            || name.len() > 255
            || name.contains(&0)
            || name.contains(&b'/')
            || name == b"."
            || name == b".."
        {
            self.broken = true;
            return;
        }
        let start = self.names.len() as u32;
        self.names.extend_from_slice(name);
        self.names.push(0);
        self.entries.push(DirEntry {
            child: u64_at(d, 0),
            subvol: u32::from(d[8]) == key_type::ROOT_ITEM,
            file_type: d[29],
            name_at: start,
            name_len: name_len as u16 + 1,
        });
    }
}

/// How a subvolume is read by difference: the lineage (an index in
/// [`TreeCache`]'s origins), the transaction its leaves may differ since,
/// and the inodes asked for so far and those of them changed since.
#[derive(Clone, Copy, Debug)]
struct Line {
    index: u32,
    since: u64,
    /// It is the lineage's oldest snapshot, unchanged since it was made:
    /// none of its inodes differs from the image.
    base: bool,
    asked: u64,
    changed: u64,
}

impl Line {
    /// Whether reading by difference still pays: past [`LINE_TRIAL`]
    /// inodes asked for, no more than a third of them changed. A changed
    /// inode costs a search more than a plain read (the difference names
    /// it; its items are then read whole), so a subvolume that differs
    /// from its lineage nearly everywhere (ten snapshots of a tree changed
    /// throughout between each) is read plainly.
    fn pays(&self) -> bool {
        self.asked < LINE_TRIAL || self.changed * 3 <= self.asked
    }
}

/// The inodes a subvolume is read by difference for before [`Line::pays`]
/// judges.
const LINE_TRIAL: u64 = 1024;

/// The inodes read ahead, by (device, inode number).
#[derive(Debug)]
pub(crate) struct TreeCache {
    map: DashMap<(u64, u64), Arc<TreeInode>, foldhash::fast::RandomState>,
    /// The bytes `map` holds, about ([`TreeInode::weight`]).
    held: AtomicUsize,
    /// [`READ_AHEAD`], or less in the tests.
    bound: usize,
    /// Per subvolume (device): the lineage it is read in by difference
    /// ([`sdu_sys::btrfs::Subvolumes::lineage`]): its index in `origins`,
    /// and the transaction since which its leaves may differ from the
    /// others'.
    lines: DashMap<u64, Option<Line>, foldhash::fast::RandomState>,
    /// The lineages' origins: (filesystem, UUID).
    origins: std::sync::Mutex<Vec<(u32, [u8; 16])>>,
    /// Per lineage, the inodes every member holds as they are.
    image: image::Image,
    /// The inodes taken from `image`.
    unchanged: std::sync::atomic::AtomicU64,
}

impl Default for TreeCache {
    fn default() -> Self {
        TreeCache {
            map: DashMap::default(),
            held: AtomicUsize::new(0),
            bound: READ_AHEAD,
            lines: DashMap::default(),
            origins: std::sync::Mutex::default(),
            image: image::Image::default(),
            unchanged: std::sync::atomic::AtomicU64::new(0),
        }
    }
}

impl TreeCache {
    /// The inode `ino` of subvolume `dev`, left in the cache (a
    /// subdirectory, whose entries its own task takes; a file with more
    /// than one link, met again in another directory).
    pub(crate) fn get(&self, dev: u64, ino: u64) -> Option<Arc<TreeInode>> {
        self.map.get(&(dev, ino)).map(|r| Arc::clone(&r))
    }

    /// The inode `ino` of subvolume `dev`, taken out of the cache.
    pub(crate) fn take(&self, dev: u64, ino: u64) -> Option<Arc<TreeInode>> {
        let taken = self.map.remove(&(dev, ino)).map(|(_, v)| v);
        if let Some(t) = &taken {
            self.held.fetch_sub(t.weight(), Ordering::Relaxed);
        }
        taken
    }

    /// The inode `ino` of subvolume `dev`: taken out of the cache if
    /// `take` says so of it, else left there.
    pub(crate) fn take_if(
        &self,
        dev: u64,
        ino: u64,
        take: impl FnOnce(&TreeInode) -> bool,
    ) -> Option<Arc<TreeInode>> {
        match self.map.remove_if(&(dev, ino), |_, v| take(v)) {
            Some((_, v)) => {
                self.held.fetch_sub(v.weight(), Ordering::Relaxed);
                Some(v)
            }
            None => self.get(dev, ino),
        }
    }

    /// Whether the cache holds inode `ino` of subvolume `dev`.
    pub(crate) fn has(&self, dev: u64, ino: u64) -> bool {
        self.map.contains_key(&(dev, ino))
    }

    /// Reads the inodes `inos` (sorted, without duplicates) of the
    /// subvolume open at `fd` (device `dev`) in runs ([`runs`]), for the
    /// caller to take at once, and keeps them, and the other inodes the
    /// runs cover while the cache holds less than [`READ_AHEAD`]. Returns
    /// the data extents read (for their refs to be read together) and the
    /// calls made. `lineage`: the subvolume's lineage, asked once per
    /// subvolume ([`Self::read_range`]).
    ///
    /// # Errors
    /// The search's.
    pub(crate) fn read(
        &self,
        (fd, leaf): (BorrowedFd<'_>, u32),
        (fs, dev): (u32, u64),
        inos: &[u64],
        lineage: &dyn Fn() -> Option<Lineage>,
    ) -> io::Result<(Vec<u64>, u32)> {
        let (mut bytenrs, mut calls) = (Vec::new(), 0);
        for (lo, hi) in runs(inos) {
            let range = (lo, hi);
            let (b, c) =
                self.read_range((fd, leaf), (fs, dev), range, Want::Now(inos), None, lineage)?;
            bytenrs.extend(b);
            calls += c;
        }
        Ok((bytenrs, calls))
    }

    /// Reads the inodes `lo..=hi` of the subvolume open at `fd` (device
    /// `dev`) and keeps those `want` names, and the others while the cache
    /// holds less than [`READ_AHEAD`], as [`Self::read`]. `leaf`: the
    /// filesystem's node size, or 0 ([`search_wide`]). With `mine`, those
    /// `want` names go there, in inode order, for the caller alone to
    /// take: a directory's files pass through no map the threads share
    /// (docs/decisions.md, "Memory").
    /// A subvolume of a lineage of snapshots (on filesystem `fs`; its
    /// lineage as `lineage` gives it, asked once per subvolume:
    /// [`sdu_sys::btrfs::Subvolumes::lineage`]) is read by difference:
    /// an inode none of whose leaves changed comes from the lineage's
    /// image.
    ///
    /// # Errors
    /// The search's.
    pub(crate) fn read_range(
        &self,
        (fd, leaf): (BorrowedFd<'_>, u32),
        (fs, dev): (u32, u64),
        (lo, hi): (u64, u64),
        want: Want<'_>,
        mut mine: Option<&mut Vec<(u64, Option<TreeInode>)>>,
        lineage: &dyn Fn() -> Option<Lineage>,
    ) -> io::Result<(Vec<u64>, u32)> {
        let Some(Line {
            index: line,
            since,
            base,
            ..
        }) = self.line(fs, dev, lineage).filter(Line::pays)
        else {
            return self.read_all((fd, leaf), dev, (lo, hi), want, mine, None);
        };
        // The inodes with an item in a leaf written since: read in full.
        let mut changed: Vec<u64> = Vec::new();
        let mut calls = if base {
            0
        } else {
            search_inodes((fd, leaf), (lo, hi), since, |it| {
                if changed.last() != Some(&it.objectid) {
                    changed.push(it.objectid);
                }
                true
            })?
        };
        changed.sort_unstable();
        changed.dedup();
        let inos = want.inos();
        let inos = &inos[inos.partition_point(|&i| i < lo)..inos.partition_point(|&i| i <= hi)];
        let n_changed = inos
            .iter()
            .filter(|i| changed.binary_search(i).is_ok())
            .count();
        if let Some(mut l) = self.lines.get_mut(&dev)
            && let Some(l) = l.as_mut()
        {
            l.asked += inos.len() as u64;
            l.changed += n_changed as u64;
        }
        if n_changed * 3 > inos.len() {
            // Changed nearly throughout: the range read whole, once.
            let (b, c) = self.read_all((fd, leaf), dev, (lo, hi), want, mine, None)?;
            return Ok((b, c + calls));
        }
        let (mut need, mut bytenrs) = (Vec::new(), Vec::new());
        for &ino in inos {
            let held = changed
                .binary_search(&ino)
                .is_err()
                .then(|| self.image.get(line, ino))
                .flatten();
            let Some(t) = held else {
                need.push(ino);
                continue;
            };
            self.unchanged.fetch_add(1, Ordering::Relaxed);
            bytenrs.extend(
                t.extents
                    .iter()
                    .filter(|e| e.disk_bytenr != 0)
                    .map(|e| e.disk_bytenr),
            );
            let wanted = want.keeps(ino, &t.item);
            if wanted && let Some(mine) = mine.as_deref_mut() {
                mine.push((ino, Some(t)));
                continue;
            }
            if !wanted && self.held.load(Ordering::Relaxed) >= self.bound {
                // As a plain read past the bound: its task takes it then.
                continue;
            }
            let t = Arc::new(t);
            let w = t.weight();
            self.held.fetch_add(w, Ordering::Relaxed);
            if let Some(old) = self.map.insert((dev, ino), t) {
                self.held.fetch_sub(old.weight(), Ordering::Relaxed);
            }
        }
        for (a, b) in runs(&need) {
            let (b, c) = self.read_all(
                (fd, leaf),
                dev,
                (a, b),
                want,
                mine.as_deref_mut(),
                Some((line, &need, &changed)),
            )?;
            bytenrs.extend(b);
            calls += c;
        }
        if let Some(mine) = mine {
            mine.sort_unstable_by_key(|m| m.0);
        }
        Ok((bytenrs, calls))
    }

    /// The inodes read as another member of their lineage held them.
    pub(crate) fn unchanged(&self) -> u64 {
        self.unchanged.load(Ordering::Relaxed)
    }

    /// The lineage subvolume `dev` (on filesystem `fs`, its lineage
    /// `lineage()`) is read in by difference, and since which transaction.
    fn line(&self, fs: u32, dev: u64, lineage: &dyn Fn() -> Option<Lineage>) -> Option<Line> {
        if let Some(l) = self.lines.get(&dev) {
            return *l;
        }
        let l = lineage().map(|l| {
            let mut o = self.origins.lock().unwrap_or_else(|e| e.into_inner());
            let i = o
                .iter()
                .position(|x| *x == (fs, l.origin))
                .unwrap_or_else(|| {
                    o.push((fs, l.origin));
                    o.len() - 1
                });
            Line {
                index: i as u32,
                since: l.since,
                base: l.base,
                asked: 0,
                changed: 0,
            }
        });
        self.lines.insert(dev, l);
        l
    }

    /// [`Self::read_range`] in full: every inode of the range. With
    /// `image` (lineage, inodes to read, inodes changed since): only those
    /// inodes, and each unchanged one is kept in the lineage's image.
    fn read_all(
        &self,
        (fd, leaf): (BorrowedFd<'_>, u32),
        dev: u64,
        (lo, hi): (u64, u64),
        want: Want<'_>,
        mut mine: Option<&mut Vec<(u64, Option<TreeInode>)>>,
        image: Option<(u32, &[u64], &[u64])>,
    ) -> io::Result<(Vec<u64>, u32)> {
        let mut bytenrs = Vec::new();
        let mut keep = |b: &Building| {
            if let Some((line, only, changed)) = image {
                if changed.binary_search(&b.ino).is_err() {
                    self.image.insert(line, b.ino, &b.built());
                }
                // A file taken from the image already.
                if only.binary_search(&b.ino).is_err() && want.keeps(b.ino, &b.item) {
                    return;
                }
            }
            let wanted = want.keeps(b.ino, &b.item);
            if self.held.load(Ordering::Relaxed) >= self.bound && !wanted {
                // Read for nothing if the walk meets it: it reads it again
                // then (or asks `statx`).
                return;
            }
            bytenrs.extend(
                b.extents
                    .iter()
                    .filter(|e| e.disk_bytenr != 0)
                    .map(|e| e.disk_bytenr),
            );
            let t = b.built();
            if let Some(mine) = mine.as_deref_mut().filter(|_| wanted) {
                mine.push((b.ino, Some(t)));
                return;
            }
            let w = t.weight();
            self.held.fetch_add(w, Ordering::Relaxed);
            if let Some(old) = self.map.insert((dev, b.ino), Arc::new(t)) {
                self.held.fetch_sub(old.weight(), Ordering::Relaxed);
            }
        };
        // The inode being read, once the first inode item is met.
        let (mut b, mut open) = (Building::default(), false);
        let calls = search_inodes((fd, leaf), (lo, hi), 0, |it| {
            if it.kind == key_type::INODE_ITEM {
                if open {
                    keep(&b);
                }
                b.start(it.objectid, InodeItem::parse(it.data));
                open = true;
                return true;
            }
            if !open || b.ino != it.objectid {
                // Items of an inode whose inode item is not in the
                // range (or not in the tree): not kept.
                return true;
            }
            match it.kind {
                DIR_INDEX if it.data.len() >= DIR_ITEM_LEN => b.add_entry(it.data),
                DIR_INDEX => b.broken = true,
                key_type::EXTENT_DATA => match FileExtent::parse(it.transid, it.offset, it.data) {
                    Some(e) => b.extents.push(e),
                    None => b.broken = true,
                },
                _ => {}
            }
            true
        })?;
        if open {
            keep(&b);
        }
        Ok((bytenrs, calls))
    }
}

/// The items of inodes `lo..=hi` of the subvolume open at `fd` (node size
/// `leaf`, or 0), from their inode items to their extent items, in leaves
/// written since transaction `since` (0: all; [`search_wide`]).
fn search_inodes(
    (fd, leaf): (BorrowedFd<'_>, u32),
    (lo, hi): (u64, u64),
    since: u64,
    f: impl FnMut(&sdu_sys::btrfs::Item<'_>) -> bool,
) -> io::Result<u32> {
    search_wide(
        fd,
        0,
        (lo, key_type::INODE_ITEM, 0),
        (hi, key_type::EXTENT_DATA, u64::MAX),
        u32::MAX,
        true,
        leaf,
        since,
        f,
    )
}

/// The inodes a read is for, which the cache keeps however many it holds.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Want<'a> {
    /// These (sorted), taken at once.
    Now(&'a [u64]),
    /// Entries of the directory being walked (sorted): those its task
    /// takes as it walks them, files of one link. A subdirectory waits,
    /// with its listing, for its own task, which may run much later: past
    /// [`READ_AHEAD`] it is left for that task to read.
    Entries(&'a [u64]),
}

impl<'a> Want<'a> {
    /// The inodes named.
    fn inos(self) -> &'a [u64] {
        match self {
            Want::Now(inos) | Want::Entries(inos) => inos,
        }
    }

    fn keeps(self, ino: u64, item: &InodeItem) -> bool {
        match self {
            Want::Now(inos) => inos.binary_search(&ino).is_ok(),
            Want::Entries(inos) => {
                item.mode & 0o170000 != 0o040000
                    && item.nlink <= 1
                    && inos.binary_search(&ino).is_ok()
            }
        }
    }
}

/// The runs of `inos` (sorted, without duplicates) read as ranges: cut
/// where two lie more than [`GAP`] apart, and after [`RUN_MAX`].
pub(crate) fn runs(inos: &[u64]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    let mut n = 0;
    for &i in inos {
        match out.last_mut() {
            Some(r) if i - r.1 <= GAP && n < RUN_MAX => {
                r.1 = i;
                n += 1;
            }
            _ => {
                out.push((i, i));
                n = 1;
            }
        }
    }
    out
}

mod image;
#[cfg(test)]
mod tests;
