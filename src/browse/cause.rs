//! Why a deletion freed more or less than sdu predicted, when a habit of
//! the filesystem explains it (docs/guide.md, "Freed more or less than
//! predicted"): the line under "The filesystem reports" in the notice.
//!
//! - XFS keeps inodes in chunks of 64 and frees a chunk when its last
//!   inode goes. No file's `st_blocks` holds that space, so Reclaimable
//!   does not count it: deleting many entries frees up to a chunk more for
//!   each chunk they were in. Named when the surplus is at least one chunk
//!   and at most the chunks the deleted inodes were in (their inode numbers
//!   say which: a chunk is 64 inode numbers), with room for the blocks of
//!   XFS's own btrees that shrink with them.
//! - XFS gives a file being written blocks past its end (speculative
//!   preallocation), counted in `st_blocks` until it trims them: a few
//!   minutes after the last write (`speculative_prealloc_lifetime`), or
//!   when the inode leaves memory. What the scan counted of files written
//!   that shortly before it may be gone by the deletion. Named when less
//!   was freed than predicted and the newest file deleted was written
//!   within that time of the scan.

use std::time::{SystemTime, UNIX_EPOCH};

use sdu::figures::Timestamp;
use sdu::{Deleted, Frees, Target};

use super::view::{Look, signed};

/// Inodes in an XFS inode chunk.
const CHUNK_INODES: u64 = 64;

/// The blocks of XFS's own btrees (free space, inodes, reverse mapping)
/// that a deletion may free besides the inode chunks.
const BTREE_SLACK: u64 = 64 * 1024;

/// When the scan deleted from was made, and the newest modification time
/// under the entries deleted.
pub(super) struct Written {
    pub(super) newest: Option<Timestamp>,
    pub(super) scanned_at: SystemTime,
}

/// The line naming the cause of the difference between `predicted` and
/// what the filesystem reports `d` freed, when one is known; `targets` are
/// those asked for, in order.
pub(super) fn line(
    d: &Deleted,
    predicted: Frees,
    targets: &[Target],
    written: &Written,
    look: Look,
) -> Option<String> {
    let chunk = d.inode_chunk?;
    if !d.settled {
        return None;
    }
    let diff = d.reported - i128::from(predicted.bytes);
    let shown = signed(look.unit, diff);
    if diff > 0 && !predicted.bound.at_least() {
        let chunks = chunks_of(d, targets);
        let most = chunks.saturating_mul(chunk).saturating_add(BTREE_SLACK);
        if diff >= i128::from(chunk) && diff <= i128::from(most) {
            let mut each = String::new();
            look.unit.format(chunk, &mut each);
            return Some(format!(
                "{shown}: XFS freed inode chunks with the last inodes ({each} a chunk of {CHUNK_INODES} inodes, \
                 which no file counts; the entries deleted were in {chunks} of them)"
            ));
        }
    }
    if diff < 0 && !predicted.bound.at_most() {
        let lifetime = prealloc_lifetime();
        let scanned = written.scanned_at.duration_since(UNIX_EPOCH).ok()?;
        let newest = written.newest?;
        let since = i128::from(scanned.as_secs()) - i128::from(newest.secs);
        if since <= i128::from(lifetime) {
            return Some(format!(
                "{shown}: XFS speculative preallocation: files written within {} of the scan held blocks \
                 past their end, which XFS trimmed since",
                minutes(lifetime)
            ));
        }
    }
    None
}

/// The inode chunks the entries deleted were in: those of the targets done
/// and the one that stopped it, by inode number, and one for each entry
/// deleted that the scan did not see.
fn chunks_of(d: &Deleted, targets: &[Target]) -> u64 {
    let tried = targets
        .len()
        .min(d.targets + usize::from(d.failed.is_some()));
    let mut chunks: Vec<(u64, u64)> = targets[..tried]
        .iter()
        .flat_map(|t| {
            let own = t.idents.last().map(|i| (i.dev, i.ino));
            own.into_iter().chain(t.inside.iter().copied())
        })
        .map(|(dev, ino)| (dev, ino / CHUNK_INODES))
        .collect();
    chunks.sort_unstable();
    chunks.dedup();
    chunks.len() as u64 + d.unscanned
}

/// XFS's `speculative_prealloc_lifetime`, in seconds (300 by default).
fn prealloc_lifetime() -> u64 {
    std::fs::read_to_string("/proc/sys/fs/xfs/speculative_prealloc_lifetime")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(300)
}

/// `secs` as "5 min", or "90 s" below a whole minute.
fn minutes(secs: u64) -> String {
    if secs % 60 == 0 {
        format!("{} min", secs / 60)
    } else {
        format!("{secs} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sdu::Ident;
    use sdu::figures::Bound;
    use sdu::units::Unit;

    fn look() -> Look {
        Look {
            unit: Unit::Blocks {
                size: 1,
                suffix: None,
            },
            color: false,
            ascii: false,
        }
    }

    /// A directory and `n` entries under it, with consecutive inode
    /// numbers from 128.
    fn target(n: u64) -> Target {
        Target {
            root: b"r".to_vec(),
            names: vec![b"d".to_vec()],
            dir: true,
            idents: vec![Ident::default(); 2],
            inside: (128..128 + n).map(|i| (1, i)).collect(),
        }
    }

    fn deleted(reported: i128) -> Deleted {
        Deleted {
            targets: 1,
            reported,
            settled: true,
            inode_chunk: Some(32 * 1024),
            ..Deleted::default()
        }
    }

    fn exact(bytes: u64) -> Frees {
        Frees {
            bytes,
            bound: Bound::default(),
        }
    }

    fn never() -> Written {
        Written {
            newest: None,
            scanned_at: SystemTime::now(),
        }
    }

    #[test]
    fn a_surplus_within_the_chunks_emptied_names_them() {
        // 640 inodes from 128: chunks 2 to 11, and the directory's own
        // (inode 0 of device 0): 11.
        let t = [target(640)];
        let l = line(
            &deleted(1_000_000 + 300_000),
            exact(1_000_000),
            &t,
            &never(),
            look(),
        );
        assert_eq!(
            l.as_deref(),
            Some(
                "+300000: XFS freed inode chunks with the last inodes (32768 a chunk of 64 inodes, \
                 which no file counts; the entries deleted were in 11 of them)"
            )
        );
        // More than 11 chunks and the btrees' slack: not that.
        let over = 11 * 32 * 1024 + 64 * 1024 + 1;
        assert_eq!(line(&deleted(over), exact(0), &t, &never(), look()), None);
        // Less than a chunk: not that either.
        assert_eq!(line(&deleted(8192), exact(0), &t, &never(), look()), None);
        // Off XFS, or not settled: nothing said.
        let mut d = deleted(300_000);
        d.inode_chunk = None;
        assert_eq!(line(&d, exact(0), &t, &never(), look()), None);
        let mut d = deleted(300_000);
        d.settled = false;
        assert_eq!(line(&d, exact(0), &t, &never(), look()), None);
    }

    #[test]
    fn a_shortfall_after_recent_writes_names_preallocation() {
        let t = [target(3)];
        let now = SystemTime::now();
        let secs = now.duration_since(UNIX_EPOCH).unwrap().as_secs() as i64;
        let recent = Written {
            newest: Some(Timestamp {
                secs: secs - 60,
                nanos: 0,
            }),
            scanned_at: now,
        };
        let l = line(&deleted(38_000_000), exact(47_000_000), &t, &recent, look()).unwrap();
        assert!(
            l.starts_with("-9000000: XFS speculative preallocation: files written within "),
            "{l}"
        );
        // Written long before the scan: not that.
        let old = Written {
            newest: Some(Timestamp {
                secs: secs - 86_400,
                nanos: 0,
            }),
            scanned_at: now,
        };
        assert_eq!(
            line(&deleted(38_000_000), exact(47_000_000), &t, &old, look()),
            None
        );
        assert_eq!(minutes(300), "5 min");
        assert_eq!(minutes(90), "90 s");
    }
}
