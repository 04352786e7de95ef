//! A file whose FIEMAP is put off while its XFS allocation group is busy
//! (see the `ag` module): all that is needed to account for it later in
//! the same task.

use std::ffi::CString;
use std::os::fd::OwnedFd;

use rustix::fs::Statx;

use super::fdcache::DirFs;
use super::open::Now;

/// A file opened and ready to map, put off until its allocation group is
/// free.
pub(super) struct Later {
    pub(super) fd: OwnedFd,
    pub(super) now: Now,
    pub(super) fs: DirFs,
    pub(super) ag: u32,
    pub(super) who: Who,
    pub(super) st: Statx,
    /// Its name in its directory, for messages.
    pub(super) name: CString,
}

/// Where a file's figures go.
#[derive(Clone, Copy)]
pub(super) struct Who {
    pub(super) node: u32,
    pub(super) entry: Option<u32>,
    pub(super) ns: u32,
    /// Credited through the link table (once per directory).
    pub(super) once: bool,
}
