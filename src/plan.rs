//! `--to-free`: which of the paths are candidates, and which are only the
//! context their data is shared with.
//!
//! What deleting a snapshot frees depends on every other reference to its
//! data: the live subvolume it was taken from, the other snapshots. A plan
//! among candidates scanned alone would take data they share with the
//! unscanned live subvolume for theirs. So the paths given split in two:
//! a path that lies inside another given path is a candidate, found as an
//! entry of that path's scan; the paths that lie inside no other are
//! scanned, and are candidates themselves only when no path lies inside
//! any other (`sdu --to-free 50G /snaps/*` plans among the snapshots;
//! `sdu --to-free 50G /mnt /mnt/snaps/*` plans among the same snapshots,
//! with the whole filesystem's references seen).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use rustix::io::Errno;

use crate::error::{Error, Refusal};
use crate::figures::Timestamp;
use crate::records::NodeId;
use crate::tree::Tree;

/// A candidate found in the scan.
#[derive(Clone, Debug)]
pub(crate) struct Candidate {
    /// Its node.
    pub(crate) node: NodeId,
    /// The path to print for it: as given.
    pub(crate) path: Vec<u8>,
    /// Its age, when the plan goes by age ([`by_age`]).
    pub(crate) created: Option<Age>,
}

/// When a candidate was made, as `--oldest-first` and `--newest-first`
/// order them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Age {
    /// The time.
    pub(crate) at: Timestamp,
    /// Whether it is a Btrfs subvolume's creation time (`otime`); else the
    /// entry's modification time.
    pub(crate) otime: bool,
}

/// The inode number of every Btrfs subvolume's root directory
/// (`BTRFS_FIRST_FREE_OBJECTID`).
const SUBVOLUME_ROOT_INODE: u64 = 256;

/// The age of the entry at `path` (its last name not followed): the
/// creation time of the Btrfs subvolume it is the root of, else its
/// modification time; `None` when it cannot be read.
pub(crate) fn age(path: &[u8]) -> Option<Age> {
    use rustix::fs::{self as rfs, Mode, OFlags};
    // Resolved by its name once: the stat and the subvolume's otime are
    // both asked through this fd.
    let at = rfs::open(
        OsStr::from_bytes(path),
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let st = rfs::fstat(&at).ok()?;
    let is_dir = rfs::FileType::from_raw_mode(st.st_mode) == rfs::FileType::Directory;
    if is_dir && st.st_ino == SUBVOLUME_ROOT_INODE {
        // The same directory, opened for the ioctl through its own fd.
        let fd = rfs::openat(
            &at,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        );
        let info = fd
            .ok()
            .and_then(|fd| sdu_sys::btrfs::subvol(rustix::fd::AsFd::as_fd(&fd)).ok());
        if let Some(info) = info {
            return Some(Age {
                at: Timestamp {
                    secs: info.created.0,
                    nanos: info.created.1,
                },
                otime: true,
            });
        }
    }
    Some(Age {
        at: Timestamp {
            secs: st.st_mtime,
            nanos: u32::try_from(st.st_mtime_nsec).unwrap_or(0),
        },
        otime: false,
    })
}

/// Orders `candidates` by age ([`age`]), the oldest first when `oldest`,
/// else the newest first; candidates of one age, and those whose age
/// cannot be read (last), keep the order given.
pub(crate) fn by_age(candidates: &mut [Candidate], oldest: bool) {
    for c in candidates.iter_mut() {
        c.created = age(&c.path);
    }
    candidates.sort_by(|a, b| match (a.created, b.created) {
        (Some(x), Some(y)) if oldest => x.at.cmp(&y.at),
        (Some(x), Some(y)) => y.at.cmp(&x.at),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
}

/// The paths to scan and the candidates to plan among.
#[derive(Debug)]
pub(crate) struct Split {
    /// The paths to walk.
    pub(crate) scan: Vec<Vec<u8>>,
    /// The candidates, each found in the scan of one of `scan`.
    pub(crate) candidates: Vec<Given>,
}

/// A `--to-free` candidate before the scan.
#[derive(Debug)]
pub(crate) struct Given {
    /// As given.
    pub(crate) given: Vec<u8>,
    /// The index in [`Split::scan`] of the path whose scan holds it.
    pub(crate) scan: usize,
    /// The names that lead from that path to it (empty: the path itself).
    pub(crate) names: Vec<Vec<u8>>,
    /// The device and inode number it was resolved to: the entry the scan
    /// finds by `names` must be this one.
    pub(crate) inode: (u64, u64),
}

/// Where `p` lies, its directories resolved but not its last name: a
/// symlink given as a candidate is the link, which is what deleting it
/// removes (its target is not). A path ending in `/`, `.` or `..` names a
/// directory through whatever leads there, as it does for `rm`. With its
/// device and inode number.
///
/// The name is resolved once, to an `O_PATH` fd (which opens nothing), and
/// where it lies is read through `/proc/self/fd`: its owner renaming a
/// directory on the way cannot make where it lies and what it is two
/// different entries. Without /proc, where it lies is worked out from the
/// names ([`by_names`]), and checked against the inode the fd holds.
fn resolve(p: &[u8]) -> std::io::Result<(PathBuf, (u64, u64))> {
    use rustix::fs::{self as rfs, Mode, OFlags};
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStringExt;
    let c = std::ffi::CString::new(p).map_err(|_| Errno::INVAL)?;
    // A trailing `/` resolves a symlink all the same, as `rm` does.
    let fd = rfs::open(
        &c,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let st = rfs::fstat(&fd)?;
    let inode = (st.st_dev, st.st_ino);
    let place = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
        .ok()
        .map(|l| l.into_os_string().into_vec())
        .filter(|l| l.starts_with(b"/"));
    match place {
        Some(l) => Ok((PathBuf::from(std::ffi::OsString::from_vec(l)), inode)),
        None => Ok((by_names(p)?, inode)),
    }
}

/// Where `p` lies, worked out from its names ([`resolve`] without /proc).
fn by_names(p: &[u8]) -> std::io::Result<PathBuf> {
    let path = std::path::Path::new(OsStr::from_bytes(p));
    let whole =
        p.ends_with(b"/") || p.ends_with(b"/.") || p.ends_with(b"/..") || p == b"." || p == b"..";
    match (whole, path.parent(), path.file_name()) {
        (false, Some(parent), Some(name)) => {
            let parent = if parent.as_os_str().is_empty() {
                std::path::Path::new(".")
            } else {
                parent
            };
            Ok(std::fs::canonicalize(parent)?.join(name))
        }
        _ => std::fs::canonicalize(path),
    }
}

/// Splits the paths given into what to scan and the candidates, refusing
/// before anything is scanned a path that cannot be accessed, given twice,
/// or a candidate inside another.
///
/// du reports a missing operand and goes on with the rest; a plan cannot.
/// A plan made without a candidate the user meant to give, or with a PATH
/// missing from the context, reads as the plan and leads a script to
/// delete the wrong set (`sdu --to-free 1M . ./nonexist` would plan among
/// `.` alone, and plan to delete everything). So the whole command is
/// refused: [`Error::Candidate`], exit status 2, nothing on stdout.
///
/// # Errors
/// [`Error::Candidate`] with [`Refusal::CannotAccess`] when a path cannot
/// be resolved, [`Refusal::Twice`] when it names the same entry as a path
/// before it, [`Refusal::Inside`] when a candidate lies inside another:
/// its deletion cannot be planned apart from the other's.
pub(crate) fn split(paths: &[Vec<u8>]) -> Result<Split, Error> {
    let mut canon: Vec<PathBuf> = Vec::with_capacity(paths.len());
    let mut inodes: Vec<(u64, u64)> = Vec::with_capacity(paths.len());
    for p in paths {
        match resolve(p) {
            Ok((c, inode)) => {
                canon.push(c);
                inodes.push(inode);
            }
            Err(e) => {
                return Err(refused(
                    p,
                    Refusal::CannotAccess(Errno::from_io_error(&e).unwrap_or(Errno::NOENT)),
                ));
            }
        }
    }
    for (i, p) in paths.iter().enumerate() {
        if let Some(j) = (0..i).find(|&j| canon[j] == canon[i]) {
            return Err(refused(
                p,
                Refusal::Twice {
                    first: paths[j].clone(),
                },
            ));
        }
    }
    // No two paths are the same entry: inside is strictly inside.
    let inside = |i: usize, j: usize| i != j && canon[i].starts_with(&canon[j]);
    let nested: Vec<bool> = (0..paths.len())
        .map(|i| (0..paths.len()).any(|j| inside(i, j)))
        .collect();
    if !nested.iter().any(|&n| n) {
        // Candidates are the paths themselves.
        return Ok(Split {
            scan: paths.to_vec(),
            candidates: (0..paths.len())
                .map(|i| Given {
                    given: paths[i].clone(),
                    scan: i,
                    names: Vec::new(),
                    inode: inodes[i],
                })
                .collect(),
        });
    }
    let context: Vec<usize> = (0..paths.len()).filter(|&i| !nested[i]).collect();
    let mut candidates = Vec::new();
    for i in (0..paths.len()).filter(|&i| nested[i]) {
        if (0..paths.len()).any(|j| nested[j] && inside(i, j)) {
            return Err(refused(&paths[i], Refusal::Inside));
        }
        // Inside a path, and in no other candidate: inside a context path.
        let c = *context
            .iter()
            .find(|&&c| inside(i, c))
            .expect("inside a context path");
        let names = canon[i]
            .strip_prefix(&canon[c])
            .expect("inside")
            .iter()
            .map(|n| n.as_bytes().to_vec())
            .collect();
        candidates.push(Given {
            given: paths[i].clone(),
            scan: context.iter().position(|&x| x == c).expect("a context"),
            names,
            inode: inodes[i],
        });
    }
    Ok(Split {
        scan: context.iter().map(|&c| paths[c].clone()).collect(),
        candidates,
    })
}

/// The refusal of the candidate (or PATH) `path`.
fn refused(path: &[u8], why: Refusal) -> Error {
    Error::Candidate {
        path: path.to_vec(),
        why,
    }
}

/// The nodes of the candidates in `tree` (scanned from `split.scan`, with
/// the entries' identities `idents`), with the paths to print for them.
///
/// # Errors
/// [`Error::Candidate`] with [`Refusal::NotScanned`] when the scan does not
/// hold a candidate (excluded, on another filesystem under `-x`, gone, in
/// a directory that could not be read): a plan without it would read as
/// the plan, as [`split`] says; with [`Refusal::Replaced`] when the entry
/// the scan holds at its place is another inode than the one it was
/// resolved to.
pub(crate) fn nodes(
    tree: &Tree,
    idents: Option<&crate::records::Idents>,
    split: &Split,
) -> Result<Vec<Candidate>, Error> {
    let roots = tree.roots();
    split
        .candidates
        .iter()
        .map(|c| {
            let node = roots
                .iter()
                .find(|&&r| tree.name(r) == &split.scan[c.scan][..])
                .and_then(|&root| tree.find(root, &c.names))
                .ok_or_else(|| refused(&c.given, Refusal::NotScanned))?;
            let found = idents.and_then(|i| i.get(node)).map(|i| (i.dev, i.ino));
            if found != Some(c.inode) {
                return Err(refused(&c.given, Refusal::Replaced));
            }
            Ok(Candidate {
                node,
                path: c.given.clone(),
                created: None,
            })
        })
        .collect()
}

/// `--import --to-free`: the nodes of the candidates, named by their paths
/// in the saved scan: a root as it was given, then `/` and the names below
/// it (as the report prints them; empty components are ignored).
///
/// # Errors
/// [`Error::Candidate`], as for a walk ([`split`], [`nodes`]): with
/// [`Refusal::NotInScan`] when a candidate is not there,
/// [`Refusal::Twice`] when it is another, [`Refusal::Inside`] when it lies
/// inside another.
pub(crate) fn saved_nodes(tree: &Tree, candidates: &[Vec<u8>]) -> Result<Vec<Candidate>, Error> {
    let mut out: Vec<Candidate> = Vec::new();
    for c in candidates {
        let root = tree
            .roots()
            .iter()
            .filter(|&&r| {
                let r = tree.name(r);
                c.starts_with(r) && (c.len() == r.len() || r.ends_with(b"/") || c[r.len()] == b'/')
            })
            .max_by_key(|&&r| tree.name(r).len());
        let found = root.and_then(|&r| {
            let names: Vec<Vec<u8>> = c[tree.name(r).len()..]
                .split(|&b| b == b'/')
                .filter(|n| !n.is_empty())
                .map(<[u8]>::to_vec)
                .collect();
            tree.find(r, &names)
        });
        match found {
            Some(node) => out.push(Candidate {
                node,
                path: c.clone(),
                created: None,
            }),
            None => return Err(refused(c, Refusal::NotInScan)),
        }
    }
    let within = |inner: NodeId, outer: NodeId| {
        std::iter::successors(Some(inner), |&n| tree.parent(n)).any(|n| n == outer)
    };
    for (i, a) in out.iter().enumerate() {
        for (j, b) in out.iter().enumerate() {
            if i == j || !within(b.node, a.node) {
                continue;
            }
            if a.node != b.node {
                return Err(refused(&b.path, Refusal::Inside));
            }
            if j > i {
                return Err(refused(
                    &b.path,
                    Refusal::Twice {
                        first: a.path.clone(),
                    },
                ));
            }
        }
    }
    Ok(out)
}
