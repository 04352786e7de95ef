//! FIEMAP scheduled by XFS allocation group.
//!
//! On XFS, FIEMAP on a reflinked file looks up every mapping in the
//! refcount btree of its allocation group, under that group's AGF buffer
//! lock. Two threads mapping reflinked files whose data lies in one group
//! take that lock in turns once per extent, sleeping and waking each
//! other: threads then make the walk slower, not faster. So no two
//! FIEMAPs whose shared data is predicted to lie in the same group run at
//! once: each group has a lock here, taken around the whole FIEMAP of a
//! file (one hand-over per file instead of one per extent).
//!
//! The prediction is per task (a directory, or a batch of its names): the
//! group where the task's previous file had its first shared extent. A file
//! with no shared data predicts nothing, so files that share nothing (most
//! files of most trees) never take a lock. A wrong prediction costs only
//! order, never a figure: the lock decides when a FIEMAP runs, not what it
//! reads.
//!
//! Geometry comes from `XFS_IOC_FSGEOMETRY`, unprivileged, once per
//! filesystem.

use std::collections::HashMap;
use std::os::fd::BorrowedFd;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::probe::ioctl::{self, XfsGeometry};

/// One XFS filesystem's allocation groups, each with its FIEMAP lock.
#[derive(Debug)]
pub(super) struct AgTable {
    geom: XfsGeometry,
    locks: Box<[Mutex<()>]>,
}

impl AgTable {
    /// The group FIEMAP's `fe_physical` lies in.
    pub(super) fn ag_of(&self, physical: u64) -> u32 {
        self.geom.ag_of_physical(physical)
    }

    fn lock(&self, ag: u32) -> &Mutex<()> {
        &self.locks[(ag as usize).min(self.locks.len() - 1)]
    }

    /// Waits for group `ag`'s turn; the FIEMAP runs while the guard lives.
    pub(super) fn turn(&self, ag: u32) -> MutexGuard<'_, ()> {
        self.lock(ag).lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Group `ag`'s turn if no other thread has it.
    pub(super) fn try_turn(&self, ag: u32) -> Option<MutexGuard<'_, ()>> {
        match self.lock(ag).try_lock() {
            Ok(g) => Some(g),
            Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }
}

/// The tables of the XFS filesystems met, by registry index (`None`: not
/// an XFS with reflink, or its geometry could not be read).
#[derive(Debug, Default)]
pub(super) struct AgSched {
    tables: Mutex<HashMap<u32, Option<Arc<AgTable>>>>,
}

impl AgSched {
    /// The table of filesystem `fs` (registry index), reading its geometry
    /// through `fd` the first time.
    pub(super) fn table(&self, fs: u32, fd: BorrowedFd<'_>) -> Option<Arc<AgTable>> {
        let mut tables = self.tables.lock().unwrap_or_else(|e| e.into_inner());
        tables
            .entry(fs)
            .or_insert_with(|| {
                let geom = ioctl::xfs_geometry(fd).ok().flatten()?;
                (geom.reflink && geom.agcount > 0 && geom.agblocks > 0).then(|| {
                    Arc::new(AgTable {
                        geom,
                        locks: (0..geom.agcount).map(|_| Mutex::new(())).collect(),
                    })
                })
            })
            .clone()
    }
}

/// A task's view: the table of the filesystem it maps on, and the group
/// its previous shared file had its data in.
#[derive(Debug, Default)]
pub(super) struct AgHint {
    /// The filesystem (registry index) last asked about, and its table
    /// (`None`: it has none, e.g. an XFS without reflink).
    table: Option<(u32, Option<Arc<AgTable>>)>,
    ag: Option<u32>,
}

impl AgHint {
    /// The table for filesystem `fs`, cached for the task.
    pub(super) fn table(
        &mut self,
        sched: &AgSched,
        fs: u32,
        fd: BorrowedFd<'_>,
    ) -> Option<Arc<AgTable>> {
        match &self.table {
            Some((f, t)) if *f == fs => t.clone(),
            _ => {
                let t = sched.table(fs, fd);
                self.table = Some((fs, t.clone()));
                self.ag = None;
                t
            }
        }
    }

    /// The predicted group of the next file on the cached table.
    pub(super) fn predicted(&self) -> Option<u32> {
        self.ag
    }

    /// What the file just mapped says about the next one: the group of its
    /// first shared extent, or nothing if it shared nothing.
    pub(super) fn learn(&mut self, first_shared: Option<u64>) {
        self.ag = match (&self.table, first_shared) {
            (Some((_, Some(t))), Some(p)) => Some(t.ag_of(p)),
            _ => None,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_of_addresses_and_inodes() {
        // mkfs.xfs -d agcount=4 on 4 GiB: 262,144 blocks of 4 KiB per group,
        // 512-byte inodes.
        let g = XfsGeometry {
            blocksize: 4096,
            agblocks: 262_144,
            agcount: 4,
            inodesize: 512,
            reflink: true,
        };
        let ag = 262_144u64 * 4096;
        assert_eq!(g.ag_of_physical(0), 0);
        assert_eq!(g.ag_of_physical(ag - 1), 0);
        assert_eq!(g.ag_of_physical(ag), 1);
        assert_eq!(g.ag_of_physical(3 * ag + 5), 3);
        // Past the end (a corrupt reply): the last group, never out of range.
        assert_eq!(g.ag_of_physical(u64::MAX), 3);
        // agblklog 18 + inopblog 3.
        assert_eq!(g.ag_of_inode(128), 0);
        assert_eq!(g.ag_of_inode(1 << 21), 1);
        assert_eq!(g.ag_of_inode((3 << 21) | 77), 3);
        assert_eq!(g.ag_of_inode(u64::MAX), 3);
    }
}
