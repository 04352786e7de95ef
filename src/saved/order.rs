//! The order a saved scan writes its records in: the same for the same
//! tree, whatever order the walk's threads met it in.
//!
//! The walk gathers links and files as its threads meet them, and numbers
//! files (their ids in the extent index) in that order; of an inode's
//! links, the one its threads mapped first carries the figures its
//! extents gave, the others its `statx`'s. The saved scan is something
//! users diff and checksum, so it writes:
//!
//! - the links sorted by inode, then by where they are in the file (the
//!   node's number there, then the entry's position in its directory);
//! - each inode's figures through its links sorted, the measured ones
//!   (exclusive not total) first, and given to its links in that order:
//!   the roll-up reads them as a set ([`crate::figures::linked_inode`],
//!   [`crate::figures::links_free`]), so the figures read back are those
//!   of the scan;
//! - the files (and the copies written as files) sorted by inode, then by
//!   node, and numbered in that order; a file counted through its links
//!   at its first link's node (which is where the measured figures go);
//! - each segment's and unit's files by those numbers, sorted;
//! - the extent spaces by their first file (the smallest number of a file
//!   mapping one of their units), numbered in that order, and in each the
//!   units (each after its segments) by their first file, then as the
//!   sweep has them: by address, where the space has addresses of a
//!   disk's. A space's number is its first sight's, and the addresses of
//!   Btrfs inline data ([`crate::extents::inline`]) are made up in the
//!   order the walk met it.

use std::ops::Range;

use crate::figures::Stats;
use crate::records::{Link, NodeId, dev64};

use super::Export;

/// A file as the saved scan writes it: a file record, or a copy of one.
#[derive(Clone, Copy, Debug)]
pub(super) struct FileRow {
    /// Its node, numbered as the file numbers nodes.
    pub(super) node: NodeId,
    pub(super) ns: u32,
    pub(super) dev: u64,
    pub(super) ino: u64,
    /// Credited through the link table.
    pub(super) linked: bool,
}

/// The records of an export in the order written.
pub(super) struct Order {
    /// The indices of the links in [`Export::links`], in the order written.
    pub(super) links: Vec<u32>,
    /// By position written: the index in [`Export::links`] whose figures
    /// that link is written with.
    pub(super) stats: Vec<u32>,
    /// The files, copies included, in the order written.
    pub(super) files: Vec<FileRow>,
    /// By the file's id in the scan (a copy's: the files' count plus its
    /// position among the copies): its id in the file.
    pub(super) renumber: Vec<u32>,
    /// The sweep's units in the order written.
    pub(super) units: Vec<u32>,
    /// The extent spaces in the order written (their numbers in the file
    /// are their positions): each one's number in the scan and its units'
    /// range in [`Order::units`].
    pub(super) spaces: Vec<(u32, Range<usize>)>,
}

/// The order of figures of one inode's links: measured ones first (a
/// link that was mapped), then by every field.
fn stats_key(s: &Stats) -> impl Ord {
    (
        s.exclusive == s.total,
        (s.exclusive, s.total, s.apparent, s.shared, s.reclaimable),
        (s.files, s.dirs, s.time),
    )
}

impl Order {
    /// The order of `x`'s records, with `ids` the node numbers of the file
    /// (by node id).
    pub(super) fn new(x: &Export<'_>, ids: &[NodeId]) -> Order {
        let id = |n: NodeId| if n.is_none() { n } else { ids[n.index()] };
        let place = |l: &Link| (l.inode(), id(l.node), l.entry);
        let mut links: Vec<u32> = (0..x.links.len() as u32).collect();
        links.sort_unstable_by_key(|&i| place(&x.links[i as usize]));
        let mut stats = links.clone();
        let mut start = 0;
        for group in
            links.chunk_by(|&a, &b| x.links[a as usize].inode() == x.links[b as usize].inode())
        {
            let end = start + group.len();
            stats[start..end].sort_by_key(|&i| stats_key(&x.links[i as usize].stats));
            start = end;
        }
        // Each linked inode's first link written: where its file is.
        let first_link = |inode: (u32, u64, u64)| {
            let at = links.partition_point(|&i| x.links[i as usize].inode() < inode);
            links
                .get(at)
                .map(|&i| &x.links[i as usize])
                .filter(|l| l.inode() == inode)
                .map(|l| id(l.node))
        };
        let mut files: Vec<(FileRow, u32)> = x
            .files
            .iter()
            .map(|f| {
                let node = match f.linked {
                    true => first_link(f.inode()).unwrap_or_else(|| id(f.node)),
                    false => id(f.node),
                };
                FileRow {
                    node,
                    ns: f.ns,
                    dev: f.dev,
                    ino: f.ino,
                    linked: f.linked,
                }
            })
            .chain(x.copies.iter().map(|c| {
                let f = &x.files[c.of as usize];
                FileRow {
                    node: id(c.node),
                    ns: f.ns,
                    dev: dev64(c.dev),
                    ino: f.ino,
                    linked: false,
                }
            }))
            .zip(0..)
            .collect();
        files.sort_unstable_by_key(|(r, old)| (r.ns, r.dev, r.ino, r.node, r.linked, *old));
        let mut renumber = vec![0; files.len()];
        for (new, (_, old)) in files.iter().enumerate() {
            renumber[*old as usize] = new as u32;
        }
        let mut order = Order {
            links,
            stats,
            files: files.into_iter().map(|(r, _)| r).collect(),
            renumber,
            units: Vec::new(),
            spaces: Vec::new(),
        };
        order.sweep(x);
        order
    }

    /// Orders the sweep's spaces and units ([`Order::units`],
    /// [`Order::spaces`]) by their first files.
    fn sweep(&mut self, x: &Export<'_>) {
        let sweep = x.sweep;
        let mut list = Vec::new();
        // By unit: its first file (`u32::MAX`: none).
        let first: Vec<u32> = sweep
            .units()
            .map(|u| {
                with_copies(x, u.files, &mut list);
                list.iter()
                    .map(|&f| self.renumber[f as usize])
                    .min()
                    .unwrap_or(u32::MAX)
            })
            .collect();
        let mut spaces: Vec<(u32, u32, Range<usize>)> = Vec::new();
        for (fs, range) in sweep.fs_units() {
            let at = self.units.len();
            self.units.extend(range.clone().map(|u| u as u32));
            self.units[at..].sort_by_key(|&u| first[u as usize]);
            let key = range.map(|u| first[u]).min().unwrap_or(u32::MAX);
            spaces.push((key, fs, at..self.units.len()));
        }
        spaces.sort_by_key(|s| s.0);
        // The units again, space by space in that order.
        let by_space = std::mem::take(&mut self.units);
        for (_, fs, range) in spaces {
            let at = self.units.len();
            self.units.extend_from_slice(&by_space[range]);
            self.spaces.push((fs, at..self.units.len()));
        }
    }

    /// `list` (files by their ids in the scan) by their ids in the file,
    /// sorted.
    pub(super) fn renumbered(&self, list: &mut [u32]) {
        for f in list.iter_mut() {
            *f = self.renumber[*f as usize];
        }
        list.sort_unstable();
    }
}

/// `files` with the ids their copies have (a copy is written as a file
/// after the files: the files' count plus its position among the copies)
/// into `list`, in no order; and how many copies that added. A copy maps
/// what its file maps, which for the copies made
/// ([`crate::extents::inline`]) is one mapping of one pseudo-extent: one
/// more mapping each.
pub(super) fn with_copies(x: &Export<'_>, files: &[u32], list: &mut Vec<u32>) -> u32 {
    list.clear();
    list.extend_from_slice(files);
    if !x.copies.is_empty() {
        for &f in files {
            let a = x.copies.before(f) as usize;
            let b = a + x.copies.count(f) as usize;
            list.extend((a..b).map(|k| (x.files.len() + k) as u32));
        }
    }
    (list.len() - files.len()) as u32
}
