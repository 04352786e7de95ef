//! The Btrfs root trees the walk asks about before it starts, each read
//! once per device of the roots ([`sdu_sys::btrfs::Subvolumes`]): whether
//! the roots may meet files two subvolumes hold, and whether one of them
//! holds a lineage of snapshots. The extents stage reads its own after its
//! commit, so that what it learns of deleted subvolumes is the committed
//! state.

use std::cell::RefCell;
use std::os::fd::BorrowedFd;
use std::rc::Rc;

use sdu_sys::btrfs::Subvolumes;

/// The root trees read before the walk, by the device of the directory
/// each was read through (`None`: it could not be read).
#[derive(Default)]
pub(super) struct RootTrees(RefCell<Vec<(u64, Option<Rc<Subvolumes>>)>>);

impl RootTrees {
    /// The subvolumes of the filesystem of `fd`, a directory on device
    /// `dev`: read at the first ask for `dev`, then kept.
    pub(super) fn of(&self, dev: u64, fd: BorrowedFd<'_>) -> Option<Rc<Subvolumes>> {
        if let Some((_, s)) = self.0.borrow().iter().find(|(d, _)| *d == dev) {
            return s.clone();
        }
        let s = Subvolumes::read(fd).ok().map(Rc::new);
        self.0.borrow_mut().push((dev, s.clone()));
        s
    }
}
