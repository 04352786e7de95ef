//! As root on Btrfs: a file's extents read with the tree search
//! ([`Extents::read_btrfs`]), and a directory's files and their extents'
//! refs read together beforehand ([`Extents::prefetch_btrfs`]).

use std::cell::Cell;
use std::os::fd::BorrowedFd;

use sdu_sys::btrfs::{self as bs, FileExtentType};

use super::super::btrfs_batch;
use super::super::btrfs_items;
use super::super::btrfs_refs::{self, FileAt, OwnItem, PackedRefs, Verdict};
use super::super::file::{FileExtents, SearchFile};
use super::super::unchanged::SharedRef;
use super::{Extents, Pending, Searched, Subvol};

thread_local! {
    /// [`Extents::read_btrfs`]'s verdicts on the extents of a file.
    static VERDICTS: Cell<Vec<(u64, bool)>> = const { Cell::new(Vec::new()) };
    /// [`Extents::read_btrfs`]'s refs of an extent, unpacked from the map.
    static REFS: Cell<bs::ExtentRefs> = Cell::new(bs::ExtentRefs::default());
    /// [`Extents::read_btrfs`]'s shared extents of a file, as a copy of it
    /// in another snapshot would have indexed them.
    static HELD: Cell<Vec<SharedRef>> = const { Cell::new(Vec::new()) };
}

impl Extents {
    /// Reads the extents of `file`, a regular file in the directory open
    /// at `dirfd` on Btrfs, with the tree search, and indexes its shared
    /// ones in its extent space: the shared flags FIEMAP would give, or
    /// [`Searched::Undecided`]. But it counts every extent at its size on
    /// disk, where FIEMAP shows the ranges the file references: a shared
    /// extent is indexed as its whole range on disk, and the extents not
    /// shared that are compressed or referenced in part are in
    /// [`FileExtents::on_disk`] ([`Self::index_items`]). `pre`: its items,
    /// when they were read with its directory's other files.
    pub(crate) fn read_btrfs(
        &self,
        dirfd: BorrowedFd<'_>,
        file: &SearchFile,
        pre: Option<bs::InodeItems>,
    ) -> Searched {
        let &SearchFile {
            ino,
            dev,
            allocated,
            size,
            nlink,
            fs,
            space,
            copy,
        } = file;
        if !self.search || !self.fs_ready(dirfd, fs) {
            return Searched::Unavailable;
        }
        let Some(Subvol {
            root,
            last_snapshot,
            root_node,
            kept_until,
            kept_by,
        }) = self.subvol(dirfd, fs, dev)
        else {
            return Searched::Undecided(None);
        };
        let items = match pre {
            // Read with its directory's other files ([`btrfs_batch`]).
            Some(items) => items,
            None => match bs::inode_items(dirfd, ino, allocated, size, nlink) {
                Ok(items) if items.found => items,
                _ => return Searched::Undecided(None),
            },
        };
        if let Some(st) = &self.stored {
            st.add(root, ino, &items.extents);
        }
        let at = FileAt {
            root,
            ino,
            last_snapshot,
            kept_until,
            kept_by,
        };
        let mut calls = items.calls;
        // The verdict of each data extent the file references, and the
        // refs of the one decided: the thread's lists, kept from one file
        // to the next.
        let (mut verdicts, mut unpacked) = (VERDICTS.take(), REFS.take());
        verdicts.clear();
        for e in &items.extents {
            if e.kind == FileExtentType::Inline
                || e.disk_bytenr == 0
                || verdicts.iter().any(|v| v.0 == e.disk_bytenr)
            {
                continue;
            }
            let read;
            let refs = match self.btrfs.refs.get(&(fs, e.disk_bytenr)) {
                // Shared whichever file asks: not unpacked.
                Some(r) if r.shared_whoever() => {
                    verdicts.push((e.disk_bytenr, true));
                    continue;
                }
                Some(r) => {
                    r.unpack_into(&mut unpacked);
                    &unpacked
                }
                None => match bs::extent_refs(dirfd, e.disk_bytenr) {
                    Ok(r) => {
                        calls += 1;
                        // Snapshots and reflinks meet one extent in many
                        // files: its refs are read once.
                        (self.btrfs.refs).insert((fs, e.disk_bytenr), PackedRefs::of(&r));
                        read = r;
                        &read
                    }
                    Err(_) => return Searched::Undecided(None),
                },
            };
            let own = (items.extents.iter())
                .filter(|o| o.kind != FileExtentType::Inline && o.disk_bytenr == e.disk_bytenr)
                .map(|o| OwnItem {
                    ref_offset: o.file_offset.wrapping_sub(o.offset),
                    leaf_gen: o.leaf_gen,
                });
            let shared = match btrfs_refs::decide_items(
                refs,
                at,
                own,
                |t| self.alive(dirfd, fs, t),
                |p| self.leaf(dirfd, fs, p, at, root_node),
            ) {
                Verdict::Shared => true,
                Verdict::HeldBy(snapshot) => {
                    // Who else holds it, for the sweep ([`Self::held_by`]).
                    self.btrfs.held_by.insert((fs, e.disk_bytenr), snapshot);
                    true
                }
                Verdict::NotShared => false,
                Verdict::Undecided => {
                    return Searched::Undecided(Some(Box::new(Pending { items, calls })));
                }
            };
            verdicts.push((e.disk_bytenr, shared));
            // Its refs name this file alone: no other file meets it, and
            // the scan keeps nothing of it beyond this file's figures.
            let alone = |r: &bs::DataRef| matches!(*r, bs::DataRef::Indirect { root, ino: i, .. } if root == at.root && i == at.ino);
            if !shared && refs.list.iter().all(alone) {
                self.btrfs.refs.remove(&(fs, e.disk_bytenr));
            }
        }
        let mut got = FileExtents {
            calls,
            ..FileExtents::default()
        };
        let mut held = HELD.take();
        let shared = ((copy.0 || copy.1)
            && btrfs_items::shared_held(&items.extents, &verdicts, &mut held))
        .then_some(&held[..]);
        let of = shared.filter(|_| copy.0);
        if let Some(of) = of.and_then(|s| self.indexed.find((space, ino), s)) {
            self.index_items(&items, &verdicts, (space, false), &mut got);
            got.copy_of = Some(of);
        } else {
            self.index_items(&items, &verdicts, (space, true), &mut got);
            if let (Some(shared), Some(id), true) = (shared, got.file, copy.1) {
                self.indexed.keep((space, ino), id, shared);
            }
        }
        VERDICTS.set(verdicts);
        REFS.set(unpacked);
        HELD.set(held);
        Searched::Read(got)
    }

    /// As root on Btrfs filesystem `fs`: the items of the regular files
    /// `inos` (sorted, without duplicates) of the directory open at
    /// `dirfd`, whose subdirectories are `avoid` (sorted), read in a few
    /// searches ([`btrfs_batch`]) for [`Self::read_btrfs`]; `None` when the
    /// tree search is not used there. Also the calls made.
    pub(crate) fn prefetch_btrfs(
        &self,
        dirfd: BorrowedFd<'_>,
        fs: u32,
        inos: &[u64],
        avoid: &[u64],
    ) -> Option<(Vec<(u64, bs::InodeItems)>, u32)> {
        if !self.search || inos.is_empty() || !self.fs_ready(dirfd, fs) {
            return None;
        }
        let (items, mut calls) =
            btrfs_batch::inodes_items(dirfd, inos, avoid, self.node_size(fs)).ok()?;
        let want = items
            .iter()
            .flat_map(|(_, it)| &it.extents)
            .filter(|e| e.kind != FileExtentType::Inline)
            .map(|e| e.disk_bytenr);
        calls += self.prefetch_refs(dirfd, fs, want.collect());
        Some((items, calls))
    }

    /// As root on Btrfs filesystem `fs` (open at `fd`): reads the refs of
    /// the data extents at `bytenrs` not read yet, together
    /// ([`btrfs_batch::extents_refs`]), for [`Self::read_btrfs`]. Returns
    /// the calls made.
    pub(crate) fn prefetch_refs(&self, fd: BorrowedFd<'_>, fs: u32, mut bytenrs: Vec<u64>) -> u32 {
        bytenrs.retain(|&b| b != 0 && !self.btrfs.refs.contains_key(&(fs, b)));
        bytenrs.sort_unstable();
        bytenrs.dedup();
        if bytenrs.is_empty() {
            return 0;
        }
        let Ok((refs, calls)) = btrfs_batch::extents_refs(fd, &bytenrs, self.node_size(fs)) else {
            return 0;
        };
        for (b, r) in refs {
            self.btrfs
                .refs
                .entry((fs, b))
                .or_insert_with(|| PackedRefs::of(&r));
        }
        calls
    }
}
