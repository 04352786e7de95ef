//! The extents stage: which physical data each file references, indexed
//! while the walk runs and swept into segments and reclaim units after it.
//!
//! - `source`: the one seam through which the walk asks "what are this
//!   file's extents?": FIEMAP everywhere, or on Btrfs as root the tree
//!   search;
//! - the ioctls, from crates/sdu-sys: `sdu_sys::fiemap` (a file's extent
//!   map), `sdu_sys::fsmap` (XFS's owners of a physical range) and
//!   `sdu_sys::btrfs` (the Btrfs tree search and its items, root's source,
//!   and every subvolume and inode holding an extent); `btrfs_batch`: a
//!   directory's files in a few searches, `btrfs_items`: a file's items by
//!   the extent they reference (what it holds of each on disk),
//!   `btrfs_refs`: whether an extent is shared, from its refs, or
//!   undecided, `btrfs_tree`: the tree as the listing (directory
//!   entries, inode items and extent items read ahead by runs of inodes);
//!   the root tree read once per filesystem (root items, snapshot families
//!   and lineages) is `sdu_sys::btrfs::Subvolumes`;
//! - `inline`: Btrfs inline data a snapshot shares, as pseudo-extents;
//! - [`unchanged`]: Btrfs files unchanged across snapshots, mapped once;
//! - `ag`: XFS FIEMAPs scheduled by allocation group, one thread at a
//!   time per group;
//! - `index`: the concurrent index of shared ranges, `runs`: its mappings
//!   as sorted runs, read back merged, and `spill`: those runs in a
//!   temporary file past its memory budget;
//! - `sweep`: segments (what `shared` sums) and units (what `reclaimable`
//!   sums).

pub(crate) mod ag;
pub(crate) mod btrfs_batch;
pub(crate) mod btrfs_items;
pub(crate) mod btrfs_refs;
pub(crate) mod btrfs_tree;
pub(crate) mod file;
pub(crate) mod index;
pub(crate) mod inline;
pub(crate) mod inline_held;
pub(crate) mod near;
pub(crate) mod outside;
pub(crate) mod runs;
pub(crate) mod source;
pub(crate) mod spill;
pub(crate) mod stored;
pub(crate) mod sweep;
#[cfg(test)]
pub(crate) mod test_files;
#[cfg(test)]
mod tests;
pub(crate) mod unchanged;

pub(crate) use file::{FileExtents, SearchFile};
#[cfg(test)]
pub(crate) use index::SharedIndex;
pub(crate) use source::{ExtentSource, Extents, Pending, Searched};
pub(crate) use sweep::Sweep;

/// The hasher of the stage's maps, whose keys are integers: addresses,
/// inode numbers, extent spaces.
type Fast = foldhash::fast::RandomState;

/// Whether this process may search Btrfs trees: `CAP_SYS_ADMIN` in its
/// effective set.
pub(crate) fn can_search_trees() -> bool {
    rustix::thread::capabilities(None).is_ok_and(|c| {
        c.effective
            .contains(rustix::thread::CapabilitySet::SYS_ADMIN)
    })
}
