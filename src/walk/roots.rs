//! The PATHs, each resolved by its name once, before the walk.
//!
//! As root, a PATH may be another user's to change: a name resolved twice
//! may lead to two inodes (docs/SECURITY.md). So each PATH is opened once,
//! with `O_PATH` (which opens nothing: no FIFO writer is released, no
//! device driver is called) and without following a symlink unless `-H` or
//! `-L` asks to, and everything the walk decides about it comes from that
//! fd: its `statx`, where it lies (`/proc/self/fd`, not `canonicalize`),
//! its filesystem (`fstatfs`), a directory's contents (reopened through
//! `/proc/self/fd`) and its Btrfs subvolumes (ioctls on that directory).
//!
//! At most [`HELD`] fds are held from here until each PATH's walk is done.
//! A PATH past them is looked at through an fd closed at once, and each
//! later open of it by name is checked against the inode first seen: a
//! different one is an error, never walked or asked about in its place.

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{self as rfs, AtFlags, CWD, Mode, OFlags, Statx};
use rustix::io::Errno;

use super::open::{self, DirError, MASK, dev_of};
use crate::records::NodeId;

/// How many PATHs keep the fd they were resolved by until their walk is
/// done.
pub(super) const HELD: usize = super::KEPT_ROOT_FDS;

/// One PATH as resolved.
pub(super) struct RootPath {
    /// The path as given.
    pub(super) path: CString,
    /// The `O_PATH` fd (`None` past the first [`HELD`] PATHs, or once the
    /// walk took it).
    fd: Option<OwnedFd>,
    /// The `O_PATH` fd of the directory it was resolved in, when it is not
    /// a directory itself (`None` past the first [`HELD`] PATHs).
    parent: Option<OwnedFd>,
    /// What `statx` said of it, through the fd.
    pub(super) st: Statx,
    /// Its device, from `st`.
    pub(super) dev: u64,
    /// Where it lies: the path `/proc/self/fd` gives for the fd; `None`
    /// without /proc.
    pub(super) place: Option<Vec<u8>>,
    /// The `statfs` type of its filesystem.
    pub(super) magic: Option<u32>,
    /// It was given as an fd ([`super::WalkOptions::root_fds`]): its fd is
    /// held until its walk is done, whatever its position, as its name
    /// leads nowhere.
    pub(super) given: bool,
}

/// A root's fd as a caller gives it ([`super::WalkOptions`]), if any.
type RootFd = Option<std::sync::Arc<OwnedFd>>;

/// The PATHs by their position on the command line: what each is, or why
/// it could not be resolved.
pub(super) struct Roots(pub(super) Vec<Result<RootPath, Errno>>);

/// Opens `path` as a PATH is resolved, once: `O_PATH`, through a symlink
/// only when `follow`. Where its last component is a name, the directory
/// holding it is opened first (`O_PATH`) and the name resolved in it, the
/// same one resolution; that directory is returned beside a PATH that is
/// not a directory, whose filesystem is probed on it when the PATH itself
/// cannot be opened (a symlink), never found again by its name.
fn resolve(path: &CStr, follow: bool) -> Result<(OwnedFd, Statx, Option<OwnedFd>), Errno> {
    let mut flags = OFlags::PATH | OFlags::CLOEXEC;
    if !follow {
        flags |= OFlags::NOFOLLOW;
    }
    let (fd, parent) = match split_last(path.to_bytes()) {
        Some((dir, name)) => {
            let dir = CString::new(dir).map_err(|_| Errno::INVAL)?;
            let name = CString::new(name).map_err(|_| Errno::INVAL)?;
            let dirflags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
            let parent = rfs::openat(CWD, &dir, dirflags, Mode::empty())?;
            (
                rfs::openat(&parent, &name, flags, Mode::empty())?,
                Some(parent),
            )
        }
        None => (rfs::openat(CWD, path, flags, Mode::empty())?, None),
    };
    let st = stat_of(&fd)?;
    let dir = u32::from(st.stx_mode) & 0o170000 == 0o040000;
    Ok((fd, st, parent.filter(|_| !dir)))
}

/// PATH `path` resolved as the walk resolves it ([`resolve`]), when it is
/// a directory: its `O_PATH` fd, for [`super::WalkOptions::path_fds`].
pub(crate) fn resolve_dir(path: &[u8], follow: bool) -> Option<OwnedFd> {
    let path = CString::new(path).ok()?;
    let (fd, st, _) = resolve(&path, follow).ok()?;
    (u32::from(st.stx_mode) & 0o170000 == 0o040000).then_some(fd)
}

/// What `statx` says of the file open at `fd` (an `O_PATH` fd will do).
fn stat_of(fd: &OwnedFd) -> Result<Statx, Errno> {
    rfs::statx(
        fd,
        c"",
        AtFlags::EMPTY_PATH | AtFlags::STATX_DONT_SYNC,
        MASK,
    )
}

/// A root given as `fd`, named `path`: a copy of the fd, held.
fn of_fd(path: CString, fd: &OwnedFd) -> Result<RootPath, Errno> {
    let fd = rustix::io::fcntl_dupfd_cloexec(fd, 0)?;
    let st = stat_of(&fd)?;
    Ok(RootPath {
        parent: None,
        place: None,
        magic: rfs::fstatfs(&fd).ok().map(|s| s.f_type as u32),
        dev: dev_of(&st),
        st,
        fd: Some(fd),
        path,
        given: true,
    })
}

/// `path` as the directory holding its last component and that
/// component, when the component is a name (not `.`, `..`, nor empty, as
/// after a trailing `/`): `a/b` is `(a, b)`, `b` is `(., b)`, `/b` is
/// `(/, b)`.
fn split_last(path: &[u8]) -> Option<(&[u8], &[u8])> {
    let (dir, name) = match path.iter().rposition(|&b| b == b'/') {
        Some(i) => (if i == 0 { &b"/"[..] } else { &path[..i] }, &path[i + 1..]),
        None => (&b"."[..], path),
    };
    (!name.is_empty() && name != b"." && name != b"..").then_some((dir, name))
}

/// Where the inode open at `fd` lies, as `/proc/self/fd` names it; `None`
/// without /proc, or for an inode no path of this process leads to.
fn place_of(fd: &OwnedFd) -> Option<Vec<u8>> {
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStringExt;
    let link = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok()?;
    let p = link.into_os_string().into_vec();
    p.starts_with(b"/").then_some(p)
}

impl Roots {
    /// Resolves each of `paths`, following a symlink only when `follow`.
    /// A root given as an fd (`given`, by position) is taken through a
    /// copy of it, its name only naming it.
    pub(super) fn open(
        paths: &[Vec<u8>],
        (given, resolved): (&[RootFd], &[RootFd]),
        follow: bool,
    ) -> Roots {
        let roots = paths
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let path = CString::new(p.as_slice()).map_err(|_| Errno::INVAL)?;
                if let Some(fd) = given.get(i).and_then(Option::as_ref) {
                    return of_fd(path, fd);
                }
                let (fd, st, parent) = match resolved.get(i).and_then(Option::as_ref) {
                    Some(fd) => {
                        let fd = rustix::io::fcntl_dupfd_cloexec(fd, 0)?;
                        let st = stat_of(&fd)?;
                        (fd, st, None)
                    }
                    None => resolve(&path, follow)?,
                };
                Ok(RootPath {
                    parent: parent.filter(|_| i < HELD),
                    place: place_of(&fd),
                    magic: rfs::fstatfs(&fd).ok().map(|s| s.f_type as u32),
                    dev: dev_of(&st),
                    st,
                    fd: (i < HELD).then_some(fd),
                    path,
                    given: false,
                })
            })
            .collect();
        Roots(roots)
    }

    /// The namespace of each root: 0 for the roots that lie inside no other
    /// root, a namespace of its own for each one that does (or repeats one).
    ///
    /// Every root's figures are what sdu would print for it alone. A root
    /// inside another is walked again, and its inodes, links and extents are
    /// kept apart (keyed by namespace) so that the two walks never meet in the
    /// crediting; its node is a top of its own, outside the `-c` total, which
    /// counts every inode once, as du's does. That holds only where the outer
    /// walk reaches it: the walk puts a root it did not reach in namespace 0
    /// ([`Reach`]). What tells its figures exact
    /// from bounds is its namespace's alone too (`crate::scan::walked`,
    /// `verify_namespace`).
    ///
    /// Where a root lies is where the fd its PATH was resolved by lies
    /// ([`Roots`]): a symlink not followed lies where the link is.
    pub(super) fn namespaces(&self) -> Vec<u32> {
        let canon: Vec<Option<&[u8]>> = (0..self.0.len())
            .map(|i| self.get(i).and_then(|r| r.place.as_deref()))
            .collect();
        let inside = |me: &[u8], o: &[u8]| {
            me.strip_prefix(o)
                .is_some_and(|r| r.is_empty() || r.starts_with(b"/") || o.ends_with(b"/"))
        };
        (0..canon.len())
            .map(|i| {
                let Some(me) = canon[i] else { return 0 };
                let nested = canon.iter().enumerate().any(|(j, other)| {
                    other.is_some_and(|o| j != i && inside(me, o) && (me != o || j < i))
                });
                if nested { i as u32 + 1 } else { 0 }
            })
            .collect()
    }

    /// The roots inside another root ([`Roots::namespaces`]: not 0), in
    /// the order they are walked, after every root of namespace 0: the
    /// outer ones first (a shorter place), then as given. Whether each is
    /// counted apart is decided when its turn comes ([`Reach`]).
    pub(super) fn inner_in_turn(&self, spaces: &[u32]) -> Vec<usize> {
        let mut inner: Vec<usize> = (0..spaces.len()).filter(|&i| spaces[i] != 0).collect();
        inner.sort_by_key(|&i| {
            self.get(i)
                .and_then(|r| r.place.as_ref())
                .map_or(0, Vec::len)
        });
        inner
    }

    /// How many `O_PATH` fds of the directories the PATHs were resolved in
    /// are held ([`RootPath::take_fd`] hands each to the walk).
    pub(super) fn parents_held(&self) -> usize {
        self.0
            .iter()
            .flatten()
            .filter(|r| r.parent.is_some())
            .count()
    }

    /// Root `i`, when it was resolved.
    pub(super) fn get(&self, i: usize) -> Option<&RootPath> {
        self.0.get(i).and_then(|r| r.as_ref().ok())
    }

    /// Whether root `i` is a directory.
    pub(super) fn is_dir(&self, i: usize) -> bool {
        self.get(i)
            .is_some_and(|r| u32::from(r.st.stx_mode) & 0o170000 == 0o040000)
    }
}

impl RootPath {
    /// The `O_PATH` fd of this PATH, for the walk to take, with that of
    /// the directory it was resolved in (a PATH that is not a directory):
    /// the ones it was resolved by, or (past the first [`HELD`]) the name
    /// resolved again and checked against the inode first seen (`ESTALE`
    /// for another).
    pub(super) fn take_fd(&mut self, follow: bool) -> Result<(OwnedFd, Option<OwnedFd>), Errno> {
        if let Some(fd) = self.fd.take() {
            return Ok((fd, self.parent.take()));
        }
        let (fd, st, parent) = resolve(&self.path, follow)?;
        if st.stx_ino != self.st.stx_ino || dev_of(&st) != self.dev {
            return Err(Errno::STALE);
        }
        Ok((fd, parent))
    }

    /// This directory, open for reading with `flags`: reopened through the
    /// fd it was resolved by ([`open::reopen_dir`]), or (past the first
    /// [`HELD`]) by its name, checked against the inode first seen.
    pub(super) fn open_dir(&self, flags: OFlags) -> Result<OwnedFd, DirError> {
        dir_at(
            self.fd.as_ref(),
            &self.path,
            flags,
            self.dev,
            self.st.stx_ino,
        )
    }
}

/// The directory a non-directory PATH was resolved in (`parent`, its
/// `O_PATH` fd), open for reading (`flags`) through that fd, when it lies
/// on device `dev`: what the filesystem of a PATH that cannot be opened
/// itself (a symlink; a file the caller cannot read) is probed on. On
/// Btrfs the device is the subvolume, so a directory of that device is
/// probed as the entry would be; any other device is not used.
pub(super) fn parent_on(parent: &OwnedFd, flags: OFlags, dev: u64) -> Option<OwnedFd> {
    let st = rfs::fstat(parent).ok()?;
    if st.st_dev != dev {
        return None;
    }
    open::reopen_dir(parent.as_fd(), flags, dev, st.st_ino).ok()
}

/// Opens root directory `(dev, ino)` for reading with `flags`: reopened
/// through `at`, the `O_PATH` fd its PATH was resolved by, or without one
/// by its `name` (the path as given), checked all the same.
pub(super) fn dir_at(
    at: Option<&OwnedFd>,
    name: &CStr,
    flags: OFlags,
    dev: u64,
    ino: u64,
) -> Result<OwnedFd, DirError> {
    match at {
        Some(fd) => open::reopen_dir(fd.as_fd(), flags, dev, ino),
        None => open::open_dir(CWD, name, flags, dev, ino),
    }
}

/// Which roots inside another root the walk of namespace 0 reached: met
/// as an entry it did not leave out, or given as a root of namespace 0.
///
/// A root inside another is counted apart (a namespace of its own, outside
/// the `-c` total) only when the outer walk counted what it holds. The
/// outer walk may not reach it: a part of the outer root that holds it was
/// left out (a pattern, a cache tag, a mount not entered, a directory that
/// could not be listed: whatever [`super::left`] records). Such a root is
/// walked in namespace 0, beside the others, and the total counts it.
#[derive(Debug, Default)]
pub(super) struct Reach {
    /// The roots inside another: `(device, inode, position)`, sorted.
    inner: Vec<(u64, u64, usize)>,
    /// By position: reached.
    hit: Vec<AtomicBool>,
}

impl Reach {
    /// The roots of `roots` that `spaces` puts inside another.
    pub(super) fn new(roots: &Roots, spaces: &[u32]) -> Reach {
        let mut inner: Vec<(u64, u64, usize)> = (0..spaces.len())
            .filter(|&i| spaces[i] != 0)
            .filter_map(|i| roots.get(i).map(|r| (r.dev, r.st.stx_ino, i)))
            .collect();
        inner.sort_unstable();
        Reach {
            inner,
            hit: spaces.iter().map(|_| AtomicBool::new(false)).collect(),
        }
    }

    /// Records that namespace 0 met inode `(dev, ino)`.
    #[inline(always)]
    pub(super) fn met(&self, dev: u64, ino: u64) {
        if self.inner.is_empty() {
            return;
        }
        let from = self.inner.partition_point(|&(d, i, _)| (d, i) < (dev, ino));
        for &(_, _, pos) in self.inner[from..]
            .iter()
            .take_while(|&&(d, i, _)| (d, i) == (dev, ino))
        {
            self.hit[pos].store(true, Ordering::Relaxed);
        }
    }

    /// Whether root `i` was reached by namespace 0 (read after the walks
    /// that could reach it are over).
    pub(super) fn reached(&self, i: usize) -> bool {
        self.hit.get(i).is_some_and(|h| h.load(Ordering::Relaxed))
    }
}

/// The root namespaces of a walk, each with the node that stands for what
/// lies outside it: the top for namespace 0, else its root's own node (a
/// root counted apart is a top of its own).
pub(crate) fn namespaces(roots: &[Option<super::RootSeen>]) -> Vec<(u32, NodeId)> {
    let mut all: Vec<(u32, NodeId)> = roots
        .iter()
        .flatten()
        .map(|r| (r.ns, if r.ns == 0 { NodeId::TOP } else { r.node }))
        .collect();
    all.sort_unstable_by_key(|r| r.0);
    all.dedup_by_key(|r| r.0);
    all
}

#[cfg(test)]
mod tests {
    use super::split_last;

    #[test]
    fn split_last_names_the_directory_and_the_name_resolved_in_it() {
        let s = |p: &'static [u8]| split_last(p);
        assert_eq!(s(b"a/b"), Some((&b"a"[..], &b"b"[..])));
        assert_eq!(s(b"a//b"), Some((&b"a/"[..], &b"b"[..])));
        assert_eq!(s(b"b"), Some((&b"."[..], &b"b"[..])));
        assert_eq!(s(b"/b"), Some((&b"/"[..], &b"b"[..])));
        for whole in [&b"/"[..], b"a/", b".", b"..", b"a/.", b"a/..", b""] {
            assert_eq!(split_last(whole), None, "{whole:?}");
        }
    }
}
