//! What can go wrong: the [`Error`]s that end a run, and the
//! [`Diagnostic`]s about single entries, which are reported on
//! [`crate::Messages`] while the walk goes on.

use std::fmt;
use std::io;

use rustix::io::Errno;

use crate::quote::{quote, quotef};
use crate::units::Unit;

/// Why a run could not finish.
#[derive(Debug)]
pub enum Error {
    /// The worker threads could not be started (the system refused a
    /// thread: `ulimit -u`, memory).
    Threads(io::Error),
    /// `--to-free` was given a candidate it cannot plan with: the whole
    /// command is refused and nothing is printed on stdout, since a plan
    /// made without that candidate would read as the plan.
    Candidate {
        /// The candidate (or PATH) as given.
        path: Vec<u8>,
        /// What is wrong with it.
        why: Refusal,
    },
    /// The report could not be written. A closed pipe (`sdu | head`) shows
    /// here as [`io::ErrorKind::BrokenPipe`]; the binary treats it as
    /// success, or in du's mode dies of SIGPIPE as du does.
    Write(io::Error),
    /// A saved scan could not be read (`--import`) or written
    /// (`--export`): nothing of it is used.
    SavedScan {
        /// The file as given (`-`: standard input or output).
        file: Vec<u8>,
        /// What is wrong, and where in the file.
        what: String,
    },
    /// The old scan of `--compare OLD` could not be read: nothing is
    /// compared.
    OldScan {
        /// The file as given (`-`: standard input).
        file: Vec<u8>,
        /// What is wrong, and where in the file.
        what: String,
    },
    /// More entries than sdu numbers (node ids are 32 bits).
    TooManyEntries,
    /// The index of shared extents could not spill to its temporary file
    /// (past `--index-memory`), or read back what it spilled there.
    IndexSpill {
        /// The directory of the temporary file (`TMPDIR`, or `/tmp`).
        dir: Vec<u8>,
        /// Writing failed (else reading back).
        writing: bool,
        /// What the system said.
        err: io::Error,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Threads(e) => {
                // The C library's text, without Rust's "(os error N)".
                let text = e.to_string();
                let text = text.split(" (os error").next().unwrap_or(&text);
                write!(f, "cannot start worker threads: {text}")
            }
            Error::Write(e) => write!(f, "write error: {e}"),
            Error::SavedScan { file, what } => write!(f, "{}: {what}", quotef(file)),
            Error::OldScan { file, what } => write!(f, "--compare {}: {what}", quotef(file)),
            Error::TooManyEntries => write!(
                f,
                "more than {} entries: past what sdu can count (node ids are 32 bits)",
                crate::records::MAX_NODES - 1
            ),
            Error::IndexSpill {
                dir,
                writing: true,
                err,
            } => write!(
                f,
                "cannot spill the shared-extent index to a temporary file in {}: {} (it spills \
                 past --index-memory; TMPDIR names the directory)",
                quote(dir),
                io_text(err)
            ),
            Error::IndexSpill { dir, err, .. } => write!(
                f,
                "cannot read back the shared-extent index from its temporary file in {}: {}",
                quote(dir),
                io_text(err)
            ),
            Error::Candidate { path: given, why } => {
                let path = quote(given);
                match why {
                    Refusal::CannotAccess(errno) => {
                        write!(f, "--to-free: cannot access {path}: {}", strerror(*errno))
                    }
                    Refusal::NotScanned => write!(
                        f,
                        "--to-free: {path} is not in the scan (excluded, on another filesystem, \
                         or unreadable)"
                    ),
                    Refusal::NotInScan => {
                        write!(f, "--to-free: {path} is not an entry of the saved scan")
                    }
                    Refusal::Twice { first } if first == given => {
                        write!(f, "--to-free: {path} is given twice")
                    }
                    Refusal::Twice { first } => {
                        write!(
                            f,
                            "--to-free: {path} is given twice (also as {})",
                            quote(first)
                        )
                    }
                    Refusal::Inside => write!(
                        f,
                        "--to-free: {path} lies inside another candidate; give candidates that \
                         do not overlap"
                    ),
                    Refusal::Replaced => write!(
                        f,
                        "--to-free: {path} was replaced during the scan (the entry scanned at \
                         its place is another one)"
                    ),
                }
            }
        }
    }
}

/// Why `--to-free` refuses a candidate ([`Error::Candidate`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// It cannot be accessed (it does not exist, a directory on its way
    /// cannot be searched): refused before anything is scanned.
    CannotAccess(Errno),
    /// The scan of the PATH it lies in does not hold it: excluded, on
    /// another filesystem under `-x`, gone, or in a directory that could
    /// not be read.
    NotScanned,
    /// `--import`: it is not an entry of the saved scan.
    NotInScan,
    /// It names the same entry as a path given before it.
    Twice {
        /// That path, as given.
        first: Vec<u8>,
    },
    /// It lies inside another candidate: its deletion cannot be planned
    /// apart from the other's.
    Inside,
    /// The entry the scan found at its place is not the one it was
    /// resolved to before the scan: replaced (or a directory on the way
    /// to it renamed) in between.
    Replaced,
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Threads(e) | Error::Write(e) | Error::IndexSpill { err: e, .. } => Some(e),
            Error::Candidate { .. }
            | Error::SavedScan { .. }
            | Error::OldScan { .. }
            | Error::TooManyEntries => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Write(e)
    }
}

/// A problem with one entry, met during a scan. [`crate::Messages`] prints
/// it on stderr as `sdu: ...` and the scan goes on; an error (see
/// `Diagnostic::is_error`) makes the exit status 1, a warning does not.
///
/// The texts follow GNU du's where du has the same message, so that scripts
/// and people reading either see the same thing; paths are quoted as du
/// quotes them ([`crate::quote`](fn@crate::quote)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Diagnostic {
    /// The entry could not be stat-ed (or, under `-L`, a symlink dangles).
    CannotAccess {
        /// The entry as printed.
        path: Vec<u8>,
        /// The error that stopped the stat: the `statx`'s (or the open's,
        /// for a file opened first), `ELOOP` past the symlink limit, or
        /// `ENOENT` for a dangling symlink under `-L`.
        errno: Errno,
    },
    /// A directory could not be opened or listed.
    CannotReadDir {
        /// The directory as printed.
        path: Vec<u8>,
        /// The error of the open or of `getdents64`.
        errno: Errno,
    },
    /// A directory was replaced between the statx that counted it and the
    /// open that would read it: its contents are not counted.
    ReplacedDir {
        /// The directory as printed.
        path: Vec<u8>,
    },
    /// A file's extents could not be read: it counts as exclusive.
    CannotReadExtents {
        /// The file as printed.
        path: Vec<u8>,
        /// Why, as the system said it.
        reason: String,
    },
    /// A directory that is its own ancestor with no mount explaining it:
    /// not entered, and said as du says it. An error (exit status 1).
    CircularDirectory {
        /// The directory as printed.
        path: Vec<u8>,
    },
    /// Under du's rules: a directory moved elsewhere while it was read (its
    /// `..` is no longer the directory it was found in). du's traversal
    /// cannot go on from there and stops that PATH, as sdu then does; an
    /// error (exit status 1).
    DirMoved {
        /// The directory, where it was found.
        path: Vec<u8>,
    },
    /// Under `-L`, a symlink to a directory above it: not followed.
    DirectoryCycle {
        /// The symlink as printed.
        path: Vec<u8>,
    },
    /// A filesystem turned out to have no FIEMAP: its files count as
    /// exclusive. Said once per filesystem.
    NoFiemap {
        /// The file that found out, as printed.
        path: Vec<u8>,
        /// The filesystem's short name.
        fs: &'static str,
    },
    /// Probing a filesystem failed (`crate::probe`): said once per
    /// filesystem.
    Probe {
        /// The directory or file it was probed through, as printed.
        path: Vec<u8>,
        /// What failed and what sdu does instead.
        what: String,
    },
    /// `--to-free`: the candidates together cannot free the bytes asked
    /// for. Not an entry unread: the run's own exit status (3) says it.
    CannotFree {
        /// The bytes asked for.
        target: u64,
        /// What deleting every candidate would free.
        all: u64,
        /// How many candidates there were.
        candidates: usize,
    },
    /// `--import` of a file sdu did not write (ncdu's own export): nothing
    /// is known to be shared, so Exclusive is Total. A warning, said once.
    NotBySdu {
        /// The file as given.
        file: Vec<u8>,
    },
    /// `--compare` of scans one of which sdu did not write (`file`): what
    /// is shared is not known there, so only Total and the apparent size
    /// compare. A warning, said once.
    CompareWithoutSharing {
        /// The file as given.
        file: Vec<u8>,
    },
    /// `--compare`: an old root paired with a new root of another name,
    /// by position (`new`), or with none (`None`: its entries are gone).
    /// A warning.
    RootsPaired {
        /// The old root's name, as given to the old scan.
        old: Vec<u8>,
        /// The new root's, as given.
        new: Option<Vec<u8>>,
    },
    /// At the end of a scan: files whose sharing could not be verified, and
    /// their bytes, counted as exclusive.
    Unverified {
        /// How many files.
        files: u64,
        /// Their allocated bytes.
        bytes: u64,
    },
    /// As root, an XFS filesystem the scan does not cover whole and that
    /// has no reverse-mapping btree: who else holds its shared data cannot
    /// be asked, so its Reclaimable figures are upper bounds. A warning,
    /// said once per filesystem.
    NoRmapbt {
        /// The filesystem's name, as the probe knows it.
        fs: &'static str,
    },
    /// At the end of a scan: compressed extents read through FIEMAP, which
    /// gives their logical length only, so exclusive, shared and
    /// reclaimable count them uncompressed. A warning.
    Compressed {
        /// How many files.
        files: u64,
        /// Their compressed extents' logical bytes.
        bytes: u64,
    },
    /// `--du reclaimable` printed figures that are bounds, which du's
    /// lines have no room to mark: their directions. A warning.
    DuBounds {
        /// The reasons of the bounds printed.
        bound: crate::figures::Bound,
    },
    /// `--snapshots`: subvolumes of the origins under the PATHs lie
    /// elsewhere (in the top level, not mounted, or mounted outside the
    /// PATHs) and were not reached, so their figures are not in the table.
    /// A warning.
    SnapshotsNotReached {
        /// How many, when known (as root); `None`: without
        /// `CAP_SYS_ADMIN`, the subvolumes outside the PATHs cannot be
        /// listed.
        subvolumes: Option<usize>,
    },
    /// `--since --verify`: a file unchanged since the saved scan (the same
    /// ctime, size and blocks) whose extent map is not the one saved.
    StaleMapping {
        /// The file as printed.
        path: Vec<u8>,
    },
    /// `--since SCAN`: SCAN keeps no extent maps: every file is mapped.
    NoSavedMaps {
        /// The saved scan, as given.
        scan: Vec<u8>,
    },
    /// `--since`: files credited with the extent maps the saved scan kept,
    /// which nothing proved current: what they feed is marked.
    MappingsReused {
        /// The saved scan, as given.
        scan: Vec<u8>,
        /// How many files.
        files: u64,
        /// Their allocated bytes.
        bytes: u64,
    },
}

impl Diagnostic {
    /// Whether it is an error (an entry could not be read: exit status 1)
    /// rather than a warning.
    pub(crate) fn is_error(&self) -> bool {
        matches!(
            self,
            Diagnostic::CannotAccess { .. }
                | Diagnostic::CannotReadDir { .. }
                | Diagnostic::ReplacedDir { .. }
                | Diagnostic::CannotReadExtents { .. }
                | Diagnostic::CircularDirectory { .. }
                | Diagnostic::DirMoved { .. }
        )
    }

    /// The entry it is about, if any.
    pub(crate) fn path(&self) -> Option<&[u8]> {
        match self {
            Diagnostic::CannotAccess { path, .. }
            | Diagnostic::CannotReadDir { path, .. }
            | Diagnostic::ReplacedDir { path }
            | Diagnostic::CannotReadExtents { path, .. }
            | Diagnostic::CircularDirectory { path }
            | Diagnostic::DirMoved { path }
            | Diagnostic::DirectoryCycle { path }
            | Diagnostic::NoFiemap { path, .. }
            | Diagnostic::StaleMapping { path }
            | Diagnostic::Probe { path, .. } => Some(path),
            Diagnostic::NotBySdu { .. }
            | Diagnostic::CompareWithoutSharing { .. }
            | Diagnostic::RootsPaired { .. }
            | Diagnostic::NoRmapbt { .. } => None,
            Diagnostic::Unverified { .. }
            | Diagnostic::Compressed { .. }
            | Diagnostic::DuBounds { .. }
            | Diagnostic::SnapshotsNotReached { .. }
            | Diagnostic::MappingsReused { .. }
            | Diagnostic::NoSavedMaps { .. }
            | Diagnostic::CannotFree { .. } => None,
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Diagnostic::CannotAccess { path, errno } => {
                write!(f, "cannot access {}: {}", quote(path), strerror(*errno))
            }
            Diagnostic::StaleMapping { path } => write!(
                f,
                "{}: its extent map changed since the saved scan though its ctime, size and \
                 blocks did not (a dedupe, a defragmentation): its saved map was stale",
                quote(path)
            ),
            Diagnostic::NoSavedMaps { scan } => write!(
                f,
                "--since {}: it keeps no extent maps (not written by sdu --export, or no file \
                 in it mapped on its own: nothing may share, or Btrfs read by the tree search \
                 or with its snapshots' copies mapped once): every file is mapped",
                quote(scan)
            ),
            Diagnostic::MappingsReused { scan, files, bytes } => write!(
                f,
                "{files} file(s), {bytes} bytes, unchanged since {} were credited with the \
                 extent maps it saved, which nothing here proves current (a dedupe, or a \
                 reflink copy made or deleted since, would not show; as root on XFS with \
                 rmapbt they are checked): where they count, Exclusive and Shared may be stale \
                 and Reclaimable is marked either way (--verify maps them again)",
                quote(scan)
            ),
            Diagnostic::CannotReadDir { path, errno } => write!(
                f,
                "cannot read directory {}: {}",
                quote(path),
                strerror(*errno)
            ),
            Diagnostic::ReplacedDir { path } => write!(
                f,
                "cannot read directory {}: replaced during the scan",
                quote(path)
            ),
            Diagnostic::CannotReadExtents { path, reason } => write!(
                f,
                "cannot read extents of {}: {reason} (counted as exclusive)",
                quote(path)
            ),
            Diagnostic::CircularDirectory { path } => write!(
                f,
                "WARNING: Circular directory structure.\n\
                 This almost certainly means that you have a corrupted file system.\n\
                 NOTIFY YOUR SYSTEM MANAGER.\n\
                 The following directory is part of the cycle:\n  {}\n",
                quote(path)
            ),
            Diagnostic::DirMoved { path } => write!(
                f,
                "fts_read failed: {}: No such file or directory",
                quotef(path)
            ),
            Diagnostic::DirectoryCycle { path } => write!(
                f,
                "{}: directory cycle (a symlink to an ancestor), not followed",
                quote(path)
            ),
            Diagnostic::NoFiemap { path, fs } => write!(
                f,
                "{}: the filesystem ({fs}) does not support FIEMAP; its files count as exclusive",
                quote(path)
            ),
            Diagnostic::Probe { path, what } => write!(f, "{}: {what}", quote(path)),
            Diagnostic::CannotFree {
                target,
                all,
                candidates,
            } => {
                let human = |b: u64| {
                    let mut s = String::new();
                    Unit::HumanIec.format(b, &mut s);
                    s
                };
                write!(
                    f,
                    "cannot free {} ({target} bytes): all {candidates} candidate(s) together free {} ({all} bytes)",
                    human(*target),
                    human(*all)
                )
            }
            Diagnostic::NotBySdu { file } => write!(
                f,
                "{}: not written by sdu (no sdu keys): nothing is known to be shared, Exclusive is \
                 Total, and every Reclaimable is a bound of unknown direction",
                quotef(file)
            ),
            Diagnostic::CompareWithoutSharing { file } => write!(
                f,
                "--compare: {} was not written by sdu (no sdu keys), so what is shared is not \
                 known: only Total and the apparent size are compared",
                quotef(file)
            ),
            Diagnostic::RootsPaired {
                old,
                new: Some(new),
            } => write!(
                f,
                "--compare: compared the old root {} with {} by position: their names differ",
                quote(old),
                quote(new)
            ),
            Diagnostic::RootsPaired { old, new: None } => write!(
                f,
                "--compare: the old root {} pairs with no root (none has its name, and the \
                 roots left differ in number): its entries are listed as gone",
                quote(old)
            ),
            Diagnostic::NoRmapbt { fs } => write!(
                f,
                "{fs} without the reverse-mapping btree (mkfs.xfs -m rmapbt=1): data shared with \
                 files outside the scan cannot be found, so Reclaimable there is at most what \
                 deleting frees"
            ),
            Diagnostic::Unverified { files, bytes } => write!(
                f,
                "{files} file(s), {bytes} bytes, could not be mapped and were counted as exclusive"
            ),
            Diagnostic::Compressed { files, bytes } => write!(
                f,
                "{bytes} bytes of compressed data in {files} file(s) are counted at their \
                 uncompressed size: FIEMAP cannot tell their size on disk (as root, sdu reads it)"
            ),
            Diagnostic::DuBounds { bound } => write!(
                f,
                "--du reclaimable: some figures printed are bounds, not exact ({}); \
                 the table (without --du) marks each",
                match (bound.at_most(), bound.at_least()) {
                    (true, false) => "at most: deleting may free less",
                    (false, true) => "at least: deleting may free more",
                    _ => "at most or at least: deleting may free less or more",
                }
            ),
            Diagnostic::SnapshotsNotReached {
                subvolumes: Some(n),
            } => write!(
                f,
                "--snapshots: {n} subvolume{} of these origins could not be reached; their \
                 figures are not in the table, and the marks of their origins' rows say which \
                 way those may be wrong",
                if *n == 1 { "" } else { "s" }
            ),
            Diagnostic::SnapshotsNotReached { subvolumes: None } => write!(
                f,
                "--snapshots: without CAP_SYS_ADMIN, subvolumes outside the PATHs (in the top \
                 level, not mounted) cannot be listed: snapshots kept there are not in the table, \
                 and the marks of their origins' rows say which way the figures may be wrong"
            ),
        }
    }
}

/// The text of an I/O error as the C library prints it, without Rust's
/// "(os error N)".
pub(crate) fn io_text(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// The text of an errno as the C library prints it ("Permission denied").
pub(crate) fn strerror(e: Errno) -> String {
    let s = io::Error::from_raw_os_error(e.raw_os_error()).to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}
