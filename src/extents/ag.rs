//! FIEMAP scheduled by XFS allocation group.
//!
//! On XFS, FIEMAP on a reflinked file looks up every mapping in the
//! refcount btree of its allocation group, under that group's AGF buffer
//! lock. Two threads mapping reflinked files whose data lies in one group
//! take that lock in turns once per extent, sleeping and waking each
//! other: threads then make the walk slower, not faster. So no two
//! FIEMAPs whose shared data is predicted to lie in the same group run at
//! once: each group has a turn here, and one thread at a time holds it.
//!
//! A task keeps the turn it got until it ends or maps in another group.
//! Another thread whose file is predicted in a group that is busy does not
//! wait: it hands the file (a `T`: the walk hands one already opened and
//! stat-ed) to the holder, which maps it after its own next FIEMAP. So the
//! FIEMAPs of one group run one after another on one thread (with the
//! group's btree buffers in its cache), while the other threads do the
//! rest of the walk: getdents, open, statx. A holder lets the turn go only
//! once it has taken every file handed to it, under the same mutex, so
//! none is left behind; at most `cap` wait per group (each holds an fd),
//! and a thread with more to hand waits until they are taken.
//!
//! The prediction is per task (a directory, or a batch of its names): the
//! group where the task's previous file had its first shared extent, and
//! for its first file, where the walk's last shared file had it. A file
//! with no shared data predicts nothing, so files that share nothing (most
//! files of most trees) never take a turn. A wrong prediction costs only
//! order, never a figure: the turn decides when and on which thread a
//! FIEMAP runs, not what it reads.
//!
//! Geometry comes from `XFS_IOC_FSGEOMETRY`, unprivileged, once per
//! filesystem.

use std::any::Any;
use std::cell::Cell;
use std::collections::HashMap;
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use sdu_sys::xfs;

use crate::probe::{FsInfo, magic};

/// One allocation group's turn: whether a thread holds it, and the files
/// other threads handed to that thread meanwhile.
struct Group<T> {
    /// A thread holds the turn: it maps its own file, then every file
    /// handed to it, before it lets the turn go.
    busy: bool,
    /// Threads asleep until the turn is free.
    waiting: u32,
    /// Files other threads handed, to be mapped by the holder of the
    /// turn.
    handed: Vec<T>,
}

impl<T> Default for Group<T> {
    fn default() -> Self {
        Group {
            busy: false,
            waiting: 0,
            handed: Vec::new(),
        }
    }
}

/// One XFS filesystem's allocation groups, each with its FIEMAP turn.
///
/// One mutex per group guards both the turn and the files handed to its
/// holder, so a file is handed only while a holder exists, and the holder
/// lets the turn go only once it has taken every file handed to it: no
/// file is left behind. `T` is what a file is handed as.
pub(crate) struct AgTable<T> {
    geom: xfs::Geometry,
    groups: Box<[(Mutex<Group<T>>, Condvar)]>,
    /// The group of the last shared file any task mapped here
    /// ([`NO_GROUP`]: it shared nothing): a new task's first prediction.
    last: AtomicU32,
}

/// [`AgTable::last`] when the last file shared nothing.
const NO_GROUP: u32 = u32::MAX;

impl<T> std::fmt::Debug for AgTable<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgTable").field("geom", &self.geom).finish()
    }
}

/// What [`AgTable::hand`] did with a file.
pub(crate) enum Handed<T> {
    /// Given to the thread that holds the group's turn: it maps it.
    Given,
    /// Nobody held the turn: the caller holds it now and maps the file
    /// itself.
    Holder(Box<T>),
}

impl<T> AgTable<T> {
    /// The groups of a filesystem of geometry `geom`, every turn free.
    fn new(geom: xfs::Geometry) -> Self {
        AgTable {
            geom,
            groups: (0..geom.agcount)
                .map(|_| (Mutex::new(Group::default()), Condvar::new()))
                .collect(),
            last: AtomicU32::new(NO_GROUP),
        }
    }

    /// The group FIEMAP's `fe_physical` lies in.
    pub(crate) fn ag_of(&self, physical: u64) -> u32 {
        self.geom.ag_of_physical(physical)
    }

    fn group(&self, ag: u32) -> (MutexGuard<'_, Group<T>>, &Condvar) {
        let (m, cv) = &self.groups[(ag as usize).min(self.groups.len() - 1)];
        (m.lock().unwrap_or_else(|e| e.into_inner()), cv)
    }

    /// Takes group `ag`'s turn if no thread holds it.
    pub(crate) fn try_turn(&self, ag: u32) -> bool {
        let (mut g, _) = self.group(ag);
        !std::mem::replace(&mut g.busy, true)
    }

    /// Waits for group `ag`'s turn and takes it.
    pub(crate) fn turn(&self, ag: u32) {
        let (mut g, cv) = self.group(ag);
        while g.busy {
            // Woken by every change of the group (a batch taken, the turn
            // let go): check again.
            g.waiting += 1;
            g = cv.wait(g).unwrap_or_else(|e| e.into_inner());
            g.waiting -= 1;
        }
        g.busy = true;
    }

    /// Hands file `l`, put off for group `ag`, to the holder of its turn.
    /// When `cap` files wait for that holder already (each holds an fd),
    /// waits until it takes them or lets the turn go.
    pub(crate) fn hand(&self, ag: u32, l: Box<T>, cap: usize) -> Handed<T> {
        let (mut g, cv) = self.group(ag);
        loop {
            if !g.busy {
                g.busy = true;
                return Handed::Holder(l);
            }
            if g.handed.len() < cap {
                g.handed.push(*l);
                return Handed::Given;
            }
            g.waiting += 1;
            g = cv.wait(g).unwrap_or_else(|e| e.into_inner());
            g.waiting -= 1;
        }
    }

    /// The files handed to the holder of group `ag`'s turn (the caller),
    /// taken to be mapped; the turn stays held.
    pub(crate) fn take_handed(&self, ag: u32) -> Vec<T> {
        let (mut g, cv) = self.group(ag);
        if g.handed.is_empty() {
            return Vec::new();
        }
        if g.waiting > 0 {
            cv.notify_all();
        }
        std::mem::take(&mut g.handed)
    }

    /// Lets group `ag`'s turn go, unless files were handed to its holder:
    /// then the caller keeps the turn and gets them to map (and calls this
    /// again).
    pub(crate) fn release(&self, ag: u32) -> Vec<T> {
        let (mut g, cv) = self.group(ag);
        if g.handed.is_empty() {
            g.busy = false;
        }
        if g.waiting > 0 {
            cv.notify_all();
        }
        std::mem::take(&mut g.handed)
    }
}

/// The tables of the XFS filesystems met, by registry index (`None`: not
/// an XFS with reflink, or its geometry could not be read).
pub(crate) struct AgSched<T> {
    /// Unique in the process: what a thread's [`LAST_TABLE`] is of.
    id: u64,
    tables: Mutex<HashMap<u32, Option<Arc<AgTable<T>>>>>,
}

impl<T> Default for AgSched<T> {
    fn default() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        AgSched {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            tables: Mutex::default(),
        }
    }
}

/// A table of any scheduler's `T`, as [`LAST_TABLE`] holds it.
type AnyTable = Arc<dyn Any + Send + Sync>;

thread_local! {
    /// The table the thread's last task had, with its scheduler's id and
    /// its filesystem: the thread's next task on that filesystem takes it
    /// from here, without the scheduler's lock (whose cache line the two
    /// threads' tasks passed back and forth) and without a reference count.
    /// Held as `Any` (one static serves every `T`): a scheduler's id tells
    /// its `T`, so a table of the right scheduler is of the right type.
    static LAST_TABLE: Cell<Option<(u64, u32, AnyTable)>> = const { Cell::new(None) };
}

impl<T> AgSched<T> {
    /// The table of filesystem `fs` (registry index), reading its geometry
    /// through `fd` the first time.
    pub(crate) fn table(&self, fs: u32, fd: BorrowedFd<'_>) -> Option<Arc<AgTable<T>>> {
        let mut tables = self.tables.lock().unwrap_or_else(|e| e.into_inner());
        tables
            .entry(fs)
            .or_insert_with(|| {
                let geom = xfs::geometry(fd).ok().flatten()?;
                (geom.reflink && geom.agcount > 0 && geom.agblocks > 0)
                    .then(|| Arc::new(AgTable::new(geom)))
            })
            .clone()
    }
}

/// A task's view: the table of the filesystem it maps on, and the group
/// its previous shared file had its data in. Dropped, it leaves its table
/// to the thread's next task ([`LAST_TABLE`]).
pub(crate) struct AgHint<T: Send + 'static> {
    /// The scheduler and the filesystem (registry index) last asked about.
    sched: u64,
    fs: Option<u32>,
    /// Its table (`None`: it has none, e.g. an XFS without reflink).
    table: Option<Arc<AgTable<T>>>,
    /// The table is out ([`Self::take`]) and not yet put back.
    out: bool,
    ag: Option<u32>,
    /// The group whose turn the task holds, on the cached table: kept
    /// from its first FIEMAP in that group to its end (or to a FIEMAP in
    /// another group), so that the other threads hand their files to it.
    pub(crate) holding: Option<u32>,
}

impl<T: Send + 'static> Default for AgHint<T> {
    fn default() -> Self {
        AgHint {
            sched: 0,
            fs: None,
            table: None,
            out: false,
            ag: None,
            holding: None,
        }
    }
}

impl<T: Send + 'static> Drop for AgHint<T> {
    fn drop(&mut self) {
        if let (Some(fs), Some(t)) = (self.fs, self.table.take()) {
            let t: AnyTable = t;
            LAST_TABLE.set(Some((self.sched, fs, t)));
        }
    }
}

impl<T: Send + 'static> AgHint<T> {
    /// The table for filesystem `fs`, cached for the task and moved out of
    /// the cache (no reference count touched): give it back with
    /// [`Self::put`], so that the task can borrow it while it changes its
    /// other state.
    pub(crate) fn take(
        &mut self,
        sched: &AgSched<T>,
        fs: u32,
        fd: BorrowedFd<'_>,
    ) -> Option<Arc<AgTable<T>>> {
        if self.fs != Some(fs) || self.out {
            self.table = match LAST_TABLE.take() {
                Some((id, f, t)) if (id, f) == (sched.id, fs) => {
                    t.downcast().ok().or_else(|| sched.table(fs, fd))
                }
                _ => sched.table(fs, fd),
            };
            self.sched = sched.id;
            if self.fs != Some(fs) {
                // A new task starts where the walk's last shared file was,
                // so that its first FIEMAP too waits for its group's turn.
                self.ag = self.table.as_ref().and_then(|t| {
                    let last = t.last.load(Ordering::Relaxed);
                    (last != NO_GROUP).then_some(last)
                });
            }
            self.fs = Some(fs);
        }
        self.out = true;
        self.table.take()
    }

    /// [`Self::take`] for a file of filesystem `fs`: only XFS has a table.
    #[inline]
    pub(crate) fn take_for(
        &mut self,
        sched: &AgSched<T>,
        fs: &FsInfo,
        fd: BorrowedFd<'_>,
    ) -> Option<Arc<AgTable<T>>> {
        if fs.magic != magic::XFS {
            return None;
        }
        self.take(sched, fs.index, fd)
    }

    /// The cached table, moved out as by [`Self::take`] (for a task that
    /// holds a turn on it and ends).
    pub(crate) fn take_cached(&mut self) -> Option<Arc<AgTable<T>>> {
        self.out = true;
        self.table.take()
    }

    /// Whether the task holds a turn on another filesystem than `fs`.
    pub(crate) fn holds_other_than(&self, fs: u32) -> bool {
        self.holding.is_some() && self.fs != Some(fs)
    }

    /// Gives back the table [`Self::take`] moved out.
    pub(crate) fn put(&mut self, table: Option<Arc<AgTable<T>>>) {
        self.table = table;
        self.out = false;
    }

    /// The predicted group of the next file.
    pub(crate) fn predicted(&self) -> Option<u32> {
        self.ag
    }

    /// What the file just mapped on `table` says about the next one: the
    /// group of its first shared extent, or nothing if it shared nothing.
    pub(crate) fn learn(&mut self, table: Option<&AgTable<T>>, first_shared: Option<u64>) {
        let ag = match (table, first_shared) {
            (Some(t), Some(p)) => Some(t.ag_of(p)),
            _ => None,
        };
        if let Some(t) = table.filter(|_| ag != self.ag) {
            // Written only when it changes: on a tree that shares nothing,
            // never.
            t.last.store(ag.unwrap_or(NO_GROUP), Ordering::Relaxed);
        }
        self.ag = ag;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_of_addresses_and_inodes() {
        // mkfs.xfs -d agcount=4 on 4 GiB: 262,144 blocks of 4 KiB per group,
        // 512-byte inodes.
        let g = xfs::Geometry {
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

    #[test]
    fn a_file_handed_to_a_busy_group_goes_to_its_holder_before_the_turn_is_free() {
        let geom = xfs::Geometry {
            blocksize: 4096,
            agblocks: 1024,
            agcount: 2,
            inodesize: 512,
            reflink: true,
        };
        let t: AgTable<&str> = AgTable::new(geom);
        assert!(t.try_turn(1));
        assert!(!t.try_turn(1), "one holder per group");
        assert!(t.try_turn(0), "groups are independent");
        assert!(matches!(t.hand(1, Box::new("a"), 4), Handed::Given));
        assert!(matches!(t.hand(1, Box::new("b"), 4), Handed::Given));
        assert_eq!(t.take_handed(1), ["a", "b"]);
        assert!(matches!(t.hand(1, Box::new("c"), 4), Handed::Given));
        // The holder cannot let the turn go while a file waits for it.
        assert_eq!(t.release(1), ["c"]);
        assert!(t.release(1).is_empty());
        // Free: whoever hands a file now holds the turn and maps it.
        match t.hand(1, Box::new("d"), 4) {
            Handed::Holder(l) => assert_eq!(*l, "d"),
            Handed::Given => panic!("handed to no holder"),
        }
    }
}
