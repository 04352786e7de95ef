//! The figures of files handed to other threads, kept by directory until
//! the roll-up ([`merge_partial`]).

use crate::figures::Stats;
use crate::records::NodeId;

/// Sums `partial`'s figures by directory when taking `more` would grow it
/// (then leaves room for as many again): a file handed to another thread
/// adds 88 bytes, 158,037 times on four reflinked /usr copies on XFS.
pub(super) fn merge_partial(partial: &mut Vec<(NodeId, Stats)>, more: usize) {
    if partial.len() + more > partial.capacity() {
        partial.sort_unstable_by_key(|e| e.0);
        partial.dedup_by(|b, a| {
            let same = a.0 == b.0;
            if same {
                a.1 += b.1;
            }
            same
        });
        partial.reserve(partial.len() + more);
    }
}
