//! `--since`: what the extent maps reused from a saved scan leave
//! uncertain.
//!
//! A file unchanged since the saved scan (its ctime, size and blocks) may
//! still have another map: a dedupe moves its extents without touching its
//! times, and a reflink copy made or deleted since changes what its
//! extents share, in both directions. So every unit of a filesystem where
//! some map was reused, and every node credited with one, is marked either
//! way. No count of the filesystem proves the maps: the Data Used proof
//! (every byte on disk seen, each once) holds as well when the copy that
//! shared an extent of an unchanged file was deleted since, and its saved
//! map still calls that extent shared.

use crate::error::Diagnostic;
use crate::figures::Bound;
use crate::messages::Messages;
use crate::records::Exactness;
use crate::walk::since::Since;

/// Marks in `exact` what the maps `since` reused feed; `space_fs`: each
/// extent space's filesystem.
pub(super) fn mark(
    exact: &mut Exactness,
    since: &Since,
    space_fs: &[u32],
    scan: &[u8],
    msgs: &Messages,
) {
    if since.filesystems.is_empty() {
        return;
    }
    for (space, fs) in space_fs.iter().enumerate() {
        if !since.filesystems.contains(fs) {
            continue;
        }
        if exact.spaces.len() <= space {
            exact.spaces.resize(space + 1, exact.other);
        }
        exact.spaces[space] = exact.spaces[space].with(Bound::UNKNOWN);
    }
    exact.nodes.extend_from_slice(&since.nodes);
    crate::records::merge_bounds(&mut exact.nodes);
    exact.inodes.extend_from_slice(&since.inodes);
    exact.inodes.sort_unstable_by_key(|m| m.0);
    exact.inodes.dedup_by(|b, a| {
        let same = a.0 == b.0;
        if same {
            a.1 = a.1.with(b.1);
        }
        same
    });
    msgs.report(Diagnostic::MappingsReused {
        scan: scan.to_vec(),
        files: since.reused.0,
        bytes: since.reused.1,
    });
}
