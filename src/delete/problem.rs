//! Why a deletion stopped, and how that reads.

use std::fmt;
use std::io;

use crate::records::Ident;

/// Why the deletion stopped.
#[derive(Debug)]
pub(crate) enum Problem {
    /// A call failed.
    Io(io::Error),
    /// The root is `.`, `..` or `/`.
    Refused,
    /// Not of the type the scan saw any more.
    Changed {
        /// What it is now ("a file", "a symbolic link"...).
        now: &'static str,
    },
    /// A level of the path (the entry itself, or a directory above it) is
    /// not the inode, or not in the mount, that the scan saw there.
    Replaced {
        /// The path of that level.
        at: Vec<u8>,
        /// What is there now.
        now: Ident,
        /// What the scan saw.
        then: Ident,
    },
    /// A mount point inside the entry, found before anything was removed
    /// (`/proc/self/mountinfo`), or the entry is a mount point itself.
    Mount {
        /// The mount point's path.
        at: Vec<u8>,
    },
    /// A directory in another mount met while emptying the entry (a mount
    /// made since the check): not entered.
    MountMet {
        /// Its path.
        at: Vec<u8>,
    },
    /// A subvolume that this caller may not delete.
    SubvolumeNotPermitted,
    /// A subvolume holding other subvolumes.
    SubvolumeNotEmpty,
    /// A subvolume, on a kernel that cannot delete one by its id.
    SubvolumeById,
    /// A subvolume moved aside to be deleted and not deleted (`why`),
    /// that could not be put back to its name (`back`): it is at `at`.
    LeftAside {
        /// Where it is now.
        at: Vec<u8>,
        /// Why it was not deleted.
        why: Box<Problem>,
        /// Why it could not be put back.
        back: io::Error,
    },
    /// The scan recorded no identity for it (nothing is deleted unchecked).
    Unidentified,
    /// Stopped on request (Ctrl-C), between two entries.
    Interrupted,
}

/// The path deletion stopped at, and why.
#[derive(Debug)]
pub struct Failure {
    /// The entry's path (its root as given, then names).
    pub(crate) path: Vec<u8>,
    /// What went wrong.
    pub(crate) problem: Problem,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        text(f, &self.path, &self.problem)
    }
}

/// Why deleting `path` stopped, in words.
fn text(f: &mut fmt::Formatter<'_>, path: &[u8], problem: &Problem) -> fmt::Result {
    {
        let p = crate::quote(path);
        match problem {
            Problem::Io(e) => write!(f, "cannot remove {p}: {}", crate::error::io_text(e)),
            Problem::Refused => write!(f, "refusing to remove {p}"),
            Problem::Changed { now } => {
                write!(
                    f,
                    "{p} changed since the scan (it is now {now}): not removed"
                )
            }
            Problem::Replaced { at, now, then } => {
                let at = crate::quote(at);
                let dev = |d: u64| format!("{}:{}", rustix::fs::major(d), rustix::fs::minor(d));
                let why = if now.mnt != then.mnt {
                    format!(
                        "it is in another mount than at the scan (mount id {}, was {}): a mount was made or removed there",
                        now.mnt, then.mnt
                    )
                } else {
                    format!(
                        "it is another inode than at the scan (device {} inode {}, was device {} inode {}): it was renamed, replaced or swapped for a symlink",
                        dev(now.dev),
                        now.ino,
                        dev(then.dev),
                        then.ino
                    )
                };
                write!(
                    f,
                    "not removing {p}: {at} is not what sdu scanned; {why}. Nothing under {at} was removed"
                )
            }
            Problem::Mount { at } if at == path => write!(
                f,
                "not removing {p}: it is a mount point; sdu does not delete across mounts"
            ),
            Problem::Mount { at } => write!(
                f,
                "not removing {p}: {} is a mount point inside it; sdu does not delete across mounts (unmount it first). Found before anything was removed",
                crate::quote(at)
            ),
            Problem::MountMet { at } => write!(
                f,
                "stopped removing {p}: {} is in another mount (mounted while deleting); sdu does not delete across mounts, and did not enter it",
                crate::quote(at)
            ),
            Problem::SubvolumeNotPermitted => write!(
                f,
                "cannot delete subvolume {p}: it needs CAP_SYS_ADMIN, or the filesystem mounted with user_subvol_rm_allowed"
            ),
            Problem::SubvolumeNotEmpty => write!(
                f,
                "cannot delete subvolume {p}: it holds other subvolumes (delete them first)"
            ),
            Problem::Unidentified => {
                write!(f, "not removing {p}: the scan recorded no identity for it")
            }
            Problem::SubvolumeById => write!(
                f,
                "cannot delete subvolume {p}: this kernel cannot delete a subvolume by its id (Linux 5.7 or later can), and sdu does not delete one by name"
            ),
            Problem::LeftAside { at, why, back } => {
                text(f, path, why)?;
                write!(
                    f,
                    ". It had been moved to {} to be deleted there, and stays there: it could not be put back ({})",
                    crate::quote(at),
                    crate::error::io_text(back)
                )
            }
            Problem::Interrupted => write!(f, "interrupted (Ctrl-C) in {p}"),
        }
    }
}
