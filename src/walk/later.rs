//! The walk's side of the XFS allocation-group turns
//! ([`crate::extents::ag`]): a file whose FIEMAP is put off while its
//! group is busy, with all that the thread holding the group's turn needs
//! to map it and credit it to its directory. The turns hand such files
//! (`ag::AgTable<Later>`).

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::sync::Arc;

use rustix::fs::Statx;

use super::fdcache::{DirFs, DirHandle};
use super::open::OpenedStat;
use crate::figures::Kind;
use crate::records::NodeId;

/// A file opened and stat-ed by one thread, handed to the thread that
/// holds its allocation group's turn to be mapped.
pub(super) struct Later {
    pub(super) fd: OwnedFd,
    pub(super) now: OpenedStat,
    pub(super) fs: DirFs,
    pub(super) who: Who,
    pub(super) st: Statx,
    /// Its directory: its figures go there, its path is printed from it.
    pub(super) dir: Arc<DirHandle>,
    /// Its own node under `-a` (id, kind).
    pub(super) leaf: Option<(NodeId, Kind)>,
    /// Its position in its directory's getdents order.
    pub(super) idx: u32,
    /// Its name in its directory.
    pub(super) name: CString,
}

/// A Btrfs file met while another thread mapped a copy of it
/// ([`crate::extents::unchanged::CopyLookup::Busy`]): the task accounts for it
/// when it ends, from that copy, and maps it on its own only if none was
/// kept. Without an fd: nearly every one finds its copy.
pub(super) struct Waiting {
    pub(super) fs: DirFs,
    pub(super) who: Who,
    pub(super) st: Statx,
    pub(super) dev: u64,
    pub(super) kind: Kind,
    /// Its directory: its figures go there, it is opened from there.
    pub(super) dir: Arc<DirHandle>,
    /// Its position in its directory's getdents order.
    pub(super) idx: u32,
    /// Its name in its directory.
    pub(super) name: CString,
    /// Open it only through the `O_PATH` check.
    pub(super) guard: bool,
}

/// Where a file's figures go.
#[derive(Clone, Copy)]
pub(super) struct Who {
    pub(super) node: NodeId,
    pub(super) entry: Option<u32>,
    pub(super) ns: u32,
    /// Credited through the link table (once per directory).
    pub(super) once: bool,
}
