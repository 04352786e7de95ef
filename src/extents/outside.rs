//! As root: the references to the scan's shared data that lie outside the
//! scan, asked of the filesystem itself, so that Reclaimable is exact for
//! any PATH and not only for a whole filesystem (`docs/figures.md`, "Exact
//! or a bound").
//!
//! A unit whose every reference the scan saw lies under a directory is
//! credited there. That is the truth only if nothing outside the scan
//! references it too: a snapshot of the subvolume the files came from, a
//! reflink copy elsewhere, an excluded entry. The filesystem knows every
//! owner:
//!
//! - Btrfs: `BTRFS_IOC_LOGICAL_INO_V2` ([`sdu_sys::btrfs::holders`]) walks
//!   the extent's back references up to every subvolume and inode that
//!   holds it, through tree blocks that snapshots share;
//! - XFS with the reverse-mapping btree: `FS_IOC_GETFSMAP`
//!   ([`sdu_sys::fsmap`]) names the owner of every block of a range.
//!
//! Each owner that is not a file of the scan becomes one more reference to
//! the range, from a file the scan never frees (`Outside::file`): the
//! sweep then keeps the unit out of every Reclaimable, as it keeps out a
//! unit one of whose files has a link outside. A space whose every range
//! was asked is verified: its units free what they count.
//!
//! Both need `CAP_SYS_ADMIN`. Without it, without rmapbt, or when a query
//! fails, the space stays unverified and its figures are bounds.
//!
//! The back-reference walk costs an ioctl per extent, far more than the
//! refs the tree search already read (docs/decisions.md, "Btrfs: the
//! holders of an extent"), so on Btrfs those refs settle most extents
//! first ([`Families`]): an extent whose every ref names a subvolume and
//! inode of the scan, in a family of snapshots the scan holds whole, has
//! no holder outside it (a leaf shared by snapshots holds the items of the
//! same inode numbers, in subvolumes of the same family). Only the others
//! are walked.

use std::collections::{HashMap, HashSet};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rayon::prelude::*;
use sdu_sys::btrfs::{self as bs, DataRef, Subvolumes};
use sdu_sys::fsmap;

use super::Extents;
use crate::probe::{Registry, magic};
use crate::records::{Copies, FileRec, Files, NodeId, dev64};

/// Where the subvolumes of a Btrfs filesystem come from: families of
/// snapshots (linked by their `parent_uuid`), and whether the scan holds
/// each family whole.
#[derive(Debug, Default)]
pub(crate) struct Families {
    /// By subvolume id: its family, and whether the scan holds every
    /// subvolume of that family (entered at its root, nothing excluded).
    whole: HashMap<u64, bool>,
    /// The subvolumes that exist and are not deleted.
    alive: HashSet<u64>,
}

impl Families {
    /// The families of `subvolumes` ([`sdu_sys::btrfs::subvolumes`]), with
    /// `scanned` those the scan holds whole (by filesystem and id; these
    /// are of filesystem `fs`); `None` when they are not known.
    pub(crate) fn of(
        subvolumes: &Subvolumes,
        (scanned, fs): (&HashSet<(u32, u64)>, u32),
    ) -> Option<Families> {
        subvolumes.has_families().then_some(())?;
        let all = subvolumes.all();
        let family = |id: u64| subvolumes.family(id).unwrap_or(id);
        // By family: whether the scan holds every member.
        let mut families: HashMap<u64, bool> = HashMap::new();
        for s in all {
            *families.entry(family(s.id)).or_insert(true) &=
                s.alive() && scanned.contains(&(fs, s.id));
        }
        let whole = (all.iter())
            .map(|s| (s.id, families[&family(s.id)]))
            .collect();
        let alive = all.iter().filter(|s| s.alive()).map(|s| s.id).collect();
        Some(Families { whole, alive })
    }

    /// Whether the refs `refs` settle that nothing outside the scan holds
    /// the extent: each names a subvolume of a family the scan holds whole
    /// (every inode of it was walked, so the one the ref names too), or a
    /// leaf that only subvolumes of such families own (`owners`).
    fn settle(&self, refs: &bs::ExtentRefs, owners: impl Fn(u64) -> Option<Vec<u64>>) -> bool {
        let whole = |root: u64| self.whole.get(&root).copied() == Some(true);
        refs.found
            && !refs.unknown
            && !refs.list.is_empty()
            && refs.list.iter().all(|r| match *r {
                DataRef::Indirect { root, .. } => whole(root),
                // Every inode with items in that leaf, in every subvolume
                // owning it, lies in the scan when all of them are held
                // whole.
                DataRef::Shared { parent, .. } => {
                    owners(parent).is_some_and(|o| !o.is_empty() && o.iter().all(|&r| whole(r)))
                }
            })
    }
}

/// The subvolumes whose trees hold the tree block at `block`: up through
/// its shared (full) back references to the blocks that name their tree.
/// `None` when a ref is not understood or the walk is deeper than a tree
/// can be. Memoized in `memo`.
fn block_owners(
    fd: std::os::fd::BorrowedFd<'_>,
    block: u64,
    memo: &dashmap::DashMap<u64, Option<Vec<u64>>>,
    depth: u32,
) -> Option<Vec<u64>> {
    if let Some(o) = memo.get(&block) {
        return o.clone();
    }
    let got = (|| {
        if depth > 8 {
            return None;
        }
        let r = super::btrfs_refs::block_refs(fd, block).ok()?;
        if !r.found || r.unknown || r.list.len() as u64 != r.refs {
            return None;
        }
        let mut out = Vec::new();
        for b in &r.list {
            match *b {
                super::btrfs_refs::BlockRef::Tree(root) => out.push(root),
                super::btrfs_refs::BlockRef::Parent(p) => {
                    out.extend(block_owners(fd, p, memo, depth + 1)?);
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        Some(out)
    })();
    memo.insert(block, got.clone());
    got
}

/// A physical range: start and length.
type Range = (u64, u64);

/// What the refs the tree search read say of a range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Settled {
    /// Every holder is in the scan ([`Families::settle`]).
    Inside,
    /// An inode the scan did not see holds it: one a ref names, the same
    /// inode of a snapshot ([`Extents::held_by`]), or one of a subvolume
    /// the scan never entered whose tree holds the leaf a ref names.
    Outside,
    /// Only the back-reference walk can tell.
    Ask,
    /// Held by inodes known by name ([`named_holders`]): outside if the
    /// scan did not see one of them, else asked.
    Named,
}

/// The (subvolume, inode) pairs that hold an extent whose refs are `refs`,
/// as the refs name them: the inode an `EXTENT_DATA_REF` of a live
/// subvolume counts items of (that subvolume's tree holds them), and the
/// same inode of `snapshot`, which holds the leaf of a lone ref's items
/// ([`Extents::held_by`]).
fn named_holders(
    refs: &bs::ExtentRefs,
    snapshot: Option<u64>,
    families: Option<&Families>,
) -> Vec<(u64, u64)> {
    let mut holders: Vec<(u64, u64)> = refs
        .list
        .iter()
        .filter_map(|r| match *r {
            DataRef::Indirect {
                root, ino, count, ..
            } if count > 0 && families.is_some_and(|f| f.alive.contains(&root)) => {
                Some((root, ino))
            }
            _ => None,
        })
        .collect();
    if let ([DataRef::Indirect { ino, .. }], Some(snapshot)) = (refs.list.as_slice(), snapshot) {
        holders.push((snapshot, *ino));
    }
    holders
}

/// What verifying the spaces did.
#[derive(Debug, Default)]
pub(crate) struct Verified {
    /// Per extent space: every reference to its ranges from outside the
    /// scan was found (and indexed).
    pub(crate) spaces: Vec<bool>,
    /// Ranges asked about, and owners found outside the scan.
    pub(crate) asked: u64,
    /// Ranges the refs the tree search read settled without asking.
    pub(crate) settled: u64,
    pub(crate) outside: u64,
    /// XFS filesystems (registry index) the scan could not verify for
    /// want of the reverse-mapping btree.
    pub(crate) no_rmapbt: Vec<u32>,
}

/// The file that stands for everything outside the roots of namespace
/// `ns`: it has a link nobody saw, so nothing it maps is ever freed. It is
/// credited to the namespace's node in `tops` (`walk::namespaces`: the top
/// for namespace 0, a root counted apart for its own), as the outside
/// holder of the data of its spaces is (`walked::verify_namespace`): on
/// the top, what a root counted apart shares with the outside would count
/// in the `-c` total's Shared a second time.
pub(crate) fn outside_file(id: u32, ns: u32, tops: &[(u32, NodeId)]) -> FileRec {
    FileRec {
        id,
        node: (tops.iter().find(|t| t.0 == ns)).map_or(NodeId::TOP, |t| t.1),
        ns: u32::MAX,
        dev: u64::MAX,
        ino: u64::MAX,
        linked: true,
    }
}

/// Asks the filesystems of the spaces `want` (by extent space) who else
/// holds the ranges indexed there, and indexes what lies outside the scan
/// as references of one more file, returned with what was verified.
/// `files` are the scan's files with shared extents and their copies; `fds` an open fd on
/// each filesystem (registry index).
pub(crate) fn verify(
    extents: &Extents,
    registry: &Registry,
    files: (&Files, &Copies),
    fds: &[(u32, OwnedFd)],
    want: &[bool],
    scanned: &HashSet<(u32, u64)>,
) -> (Verified, Option<FileRec>) {
    let space_fs = registry.space_filesystems();
    let space_ns = registry.space_namespaces();
    let filesystems = registry.filesystems();
    let mut v = Verified {
        spaces: vec![false; space_fs.len()],
        ..Verified::default()
    };
    let mut outside: Option<u32> = None;
    // Per Btrfs filesystem: its families, worked out once.
    let mut by_fs: HashMap<u32, Option<Families>> = HashMap::new();
    for (space, &fs) in space_fs.iter().enumerate() {
        if !want.get(space).copied().unwrap_or(false) {
            continue;
        }
        let Some(fd) = fds.iter().find(|f| f.0 == fs).map(|f| f.1.as_fd()) else {
            continue;
        };
        let Some(info) = filesystems.get(fs as usize) else {
            continue;
        };
        // Btrfs: the filesystem's families, worked out on first need.
        let families = |map: &mut HashMap<u32, Option<Families>>| {
            map.entry(fs)
                .or_insert_with(|| Families::of(&*extents.subvolumes(fd, fs)?, (scanned, fs)))
                .is_some()
        };
        if info.magic == magic::BTRFS && super::inline::is_inline_ns(space_ns[space]) {
            // Inline data: shared only between snapshots of one family.
            // Each inode the scan saw was asked of the family's trees
            // (`inline_held`, through the same root tree); one whose
            // trees could not be read is marked where it is counted.
            if families(&mut by_fs) {
                v.spaces[space] = true;
            }
            continue;
        }
        let ranges = extents.ranges_in(space as u32);
        if ranges.is_empty() {
            // Nothing shared there: nothing to verify.
            v.spaces[space] = true;
            continue;
        }
        let mut asked = ranges.len() as u64;
        let found = match info.magic {
            magic::BTRFS => {
                families(&mut by_fs);
                let families = by_fs.get(&fs).and_then(Option::as_ref);
                let (settled, found) =
                    btrfs_found(extents, registry, files, (fd, fs), &ranges, families);
                v.settled += settled;
                asked -= settled;
                found
            }
            magic::XFS => match fsmap::has_rmapbt(fd) {
                Ok(true) => xfs_outside(fd, files, &ranges),
                _ => {
                    if !v.no_rmapbt.contains(&fs) {
                        v.no_rmapbt.push(fs);
                    }
                    None
                }
            },
            _ => None,
        };
        let Some(found) = found else { continue };
        v.asked += asked;
        v.outside += found.len() as u64;
        if !found.is_empty() {
            let id = *outside.get_or_insert_with(|| extents.new_file());
            for (physical, length) in found {
                extents.insert(space as u32, physical, length, id);
            }
        }
        v.spaces[space] = true;
    }
    (v, outside.map(|id| outside_file(id, 0, &[])))
}

/// Btrfs: the ranges of `ranges` (on filesystem `fs`, open at `fd`) that a
/// subvolume and inode the scan did not see holds, and how many of them
/// the refs the tree search read settled without the back-reference walk
/// ([`settle`]); `None` if some extent could not be asked about.
fn btrfs_found(
    extents: &Extents,
    registry: &Registry,
    files: (&Files, &Copies),
    (fd, fs): (BorrowedFd<'_>, u32),
    ranges: &[Range],
    families: Option<&Families>,
) -> (u64, Option<Vec<Range>>) {
    // The scan's files on `fs`, sorted (16 bytes a file): only if needed.
    let seen = std::sync::OnceLock::new();
    let seen = || {
        seen.get_or_init(|| btrfs_seen(registry, files, fs))
            .as_slice()
    };
    let settles = settle(extents, registry, (fd, fs), ranges, families, seen);
    let pick = |want: Settled| -> Vec<Range> {
        (ranges.iter().zip(&settles))
            .filter(|r| *r.1 == want)
            .map(|r| *r.0)
            .collect()
    };
    let (rest, mut held) = (pick(Settled::Ask), pick(Settled::Outside));
    let settled = (ranges.len() - rest.len()) as u64;
    if rest.is_empty() {
        return (settled, Some(held));
    }
    let found = btrfs_outside(fd, seen(), &rest).map(|mut found| {
        found.append(&mut held);
        found
    });
    (settled, found)
}

/// What the refs the tree search read say of each of `ranges` (on Btrfs
/// filesystem `fs`, open at `fd`): settled inside, held outside by a
/// leaf's owner or by an inode known by name, or only the back-reference
/// walk can tell. `seen`: the scan's files on `fs` ([`btrfs_seen`]).
fn settle<'a>(
    extents: &Extents,
    registry: &Registry,
    (fd, fs): (BorrowedFd<'_>, u32),
    ranges: &[Range],
    families: Option<&Families>,
    seen: impl Fn() -> &'a [(u64, u64)] + Sync,
) -> Vec<Settled> {
    // The owners of the leaves shared refs name, walked once each.
    let memo = dashmap::DashMap::new();
    // The subvolumes of `fs` the scan entered: an inode of any other is
    // outside it. Another filesystem's are not counted: it numbers its
    // subvolumes alike (256, 257...), and its 257 is not this one's.
    let met: HashSet<u64> = (registry.subvolumes().into_iter())
        .filter(|&(dev, _)| registry.fs_index(dev) == Some(fs))
        .map(|(_, s)| s.id)
        .collect();
    // A leaf a shared ref names, held by a live subvolume the scan never
    // entered: what the leaf refers to is held outside.
    let unmet_owner = |refs: &bs::ExtentRefs| {
        refs.list.iter().any(|r| match *r {
            DataRef::Shared { parent, count } if count > 0 => block_owners(fd, parent, &memo, 0)
                .is_some_and(|o| {
                    (o.iter())
                        .any(|r| !met.contains(r) && families.is_some_and(|f| f.alive.contains(r)))
                }),
            _ => false,
        })
    };
    let named = |physical: u64| {
        let refs = extents.cached_refs(fs, physical)?;
        Some(named_holders(
            &refs,
            extents.held_by(fs, physical),
            families,
        ))
    };
    let pre: Vec<Settled> = ranges
        .par_iter()
        .map(|&(physical, _)| {
            let Some(refs) = extents.cached_refs(fs, physical) else {
                return Settled::Ask;
            };
            if families.is_some_and(|f| f.settle(&refs, |p| block_owners(fd, p, &memo, 0))) {
                Settled::Inside
            } else if unmet_owner(&refs) {
                Settled::Outside
            } else if named(physical).is_some_and(|h| !h.is_empty()) {
                Settled::Named
            } else {
                Settled::Ask
            }
        })
        .collect();
    // Held by inodes known by name: outside if the scan did not see one of
    // them.
    ranges
        .par_iter()
        .zip(pre)
        .map(|(&(physical, _), p)| match p {
            Settled::Named
                if named(physical)
                    .unwrap_or_default()
                    .iter()
                    .any(|h| !met.contains(&h.0) || seen().binary_search(h).is_err()) =>
            {
                Settled::Outside
            }
            Settled::Named => Settled::Ask,
            p => p,
        })
        .collect()
}

/// The scan's files and copies, by (device, inode).
fn seen_inodes<'a>(
    (files, copies): (&'a Files, &'a Copies),
) -> impl Iterator<Item = (u64, u64)> + 'a {
    let copies = copies.iter().map(|c| {
        (
            dev64(c.dev),
            files.get(c.of as usize).expect("a copy's file").ino,
        )
    });
    files.iter().map(|f| (f.dev, f.ino)).chain(copies)
}

/// The scan's files on Btrfs filesystem `fs`, by (subvolume id, inode),
/// sorted: 16 bytes a file, a third of a hash set's (docs/decisions.md,
/// "Btrfs: the holders of an extent"). Only `fs`'s: another filesystem
/// numbers its subvolumes and inodes alike, and its file (257, 257) is
/// not the holder of that name the back-reference walk of `fs` finds.
fn btrfs_seen(registry: &Registry, files: (&Files, &Copies), fs: u32) -> Vec<(u64, u64)> {
    let ids: std::collections::HashMap<u64, u64> = registry
        .subvolumes()
        .into_iter()
        .filter(|&(dev, _)| registry.fs_index(dev) == Some(fs))
        .map(|(dev, s)| (dev, s.id))
        .collect();
    sorted(seen_inodes(files).filter_map(|(dev, ino)| Some((*ids.get(&dev)?, ino))))
}

/// `pairs` sorted and each once, in as many bytes as they need.
fn sorted(pairs: impl Iterator<Item = (u64, u64)>) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = pairs.collect();
    v.sort_unstable();
    v.dedup();
    v.shrink_to_fit();
    v
}

/// Btrfs: the ranges of `ranges` (each one extent, or part of one) that a
/// subvolume and inode the scan did not see holds; `None` if some extent
/// could not be asked about.
fn btrfs_outside(
    fd: std::os::fd::BorrowedFd<'_>,
    seen: &[(u64, u64)],
    ranges: &[(u64, u64)],
) -> Option<Vec<(u64, u64)>> {
    let found: Vec<Option<bool>> = ranges
        .par_iter()
        .map(|&(physical, _)| {
            let h = bs::holders(fd, physical).ok()?;
            if h.truncated {
                return None;
            }
            Some(h.list.iter().any(|k| seen.binary_search(k).is_err()))
        })
        .collect();
    let mut out = Vec::new();
    for (r, f) in ranges.iter().zip(found) {
        if f? {
            out.push(*r);
        }
    }
    Some(out)
}

/// XFS: the parts of `ranges` whose blocks an inode the scan did not see
/// also owns; `None` if some range could not be asked about, or holds
/// something other than file data.
fn xfs_outside(
    fd: std::os::fd::BorrowedFd<'_>,
    files: (&Files, &Copies),
    ranges: &[(u64, u64)],
) -> Option<Vec<(u64, u64)>> {
    let seen = sorted(seen_inodes(files));
    let dev = rustix::fs::fstat(fd).ok()?.st_dev;
    let device = fsmap::data_device(dev);
    let found: Vec<Option<Vec<(u64, u64)>>> = ranges
        .par_iter()
        .map_init(fsmap::Fsmap::default, |map, &(start, len)| {
            let mut owners = Vec::new();
            map.owners(fd, device, start, len, &mut owners).ok()?;
            let end = start.saturating_add(len);
            let mut out = Vec::new();
            for o in &owners {
                let (a, b) = (
                    o.physical.max(start),
                    o.physical.saturating_add(o.length).min(end),
                );
                if a >= b {
                    continue;
                }
                if !o.is_file_data() {
                    return None;
                }
                if seen.binary_search(&(dev, o.owner)).is_err() {
                    out.push((a, b - a));
                }
            }
            Some(out)
        })
        .collect();
    let mut out = Vec::new();
    for f in found {
        out.extend(f?);
    }
    Some(out)
}
