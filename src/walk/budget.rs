//! How many threads walk, and how the fd limit (`ulimit -n`, the soft
//! limit) is shared between them, the directory fd cache and the fds
//! held for later.

use super::root_trees::RootTrees;
use super::roots::{self, Roots};
use super::{KEPT_ROOT_FDS, WalkOptions, account, btrfs_listing, cold};

/// The fds each thread may hold: a listing fd, two transient fds of a
/// parent-chain reopen and a file fd.
const PER_THREAD: u64 = 4;
/// The fds stdio and the process need.
const FIXED: u64 = 6;
/// The fewest directory fds cached: with fewer, deep trees degrade to
/// reopening long chains, so under a tight `ulimit -n` fewer threads
/// walk rather than the cache shrinking.
const MIN_CACHED: u64 = 16;

/// The walk's threads, and its shares of the fd limit.
pub(super) struct Budget {
    pub(super) threads: usize,
    /// The tree was not in memory when the walk began.
    pub(super) cold: bool,
    /// Cold, and its snapshots are read by difference, from memory.
    pub(super) lineage: bool,
    /// The fds of files handed to the thread that holds their XFS
    /// allocation group's turn, per thread.
    pub(super) max_later: usize,
    /// The fds held, one per Btrfs subvolume, as root.
    pub(super) max_subvols: usize,
    /// The directory fds cached.
    pub(super) max_cached: usize,
}

impl Budget {
    /// The threads and fds of a walk of `roots` (resolved within `look`)
    /// under the soft fd limit `soft`.
    pub(super) fn new(
        opts: &WalkOptions,
        du_rules: bool,
        (roots, trees): (&Roots, &RootTrees),
        look: cold::CacheLook,
        soft: u64,
    ) -> Budget {
        let fit = (soft.saturating_sub(FIXED + MIN_CACHED) / PER_THREAD).max(1) as usize;
        let cold = opts.cold_threads.is_some() && cold::looks_cold(roots, look);
        let searched = cold && btrfs_listing::likely(opts, du_rules, roots);
        let lineage = searched && cold::holds_lineage(roots, trees);
        let wanted = match opts.cold_threads {
            Some(_) if lineage || (searched && opts.cold_search_per_cpu) => opts.threads,
            Some(n) if searched => n.min(cold::SEARCH_THREADS).max(opts.threads),
            Some(n) if cold && cold::all_on(roots, crate::probe::magic::XFS) => {
                n.min(cold::XFS_THREADS).max(opts.threads)
            }
            Some(n) if cold => n.max(opts.threads),
            _ => opts.threads,
        };
        let threads = wanted.clamp(1, fit);
        // Files handed to the thread that holds their XFS allocation group's
        // turn hold an fd each (at most MAX_LATER per group, and a thread holds
        // at most one turn): taken from the cache's share, only where the limit
        // leaves room.
        let max_later = if soft >= 512 { account::MAX_LATER } else { 0 };
        // As root on Btrfs, the walk holds an fd per subvolume, where the limit
        // leaves room: a quarter of it ([`btrfs_listing::SUBVOL_FDS`]).
        let max_subvols = if soft >= 1024 {
            (soft / 4).min(btrfs_listing::SUBVOL_FDS as u64) as usize
        } else {
            0
        };
        // The fds kept for the stages after the walk, and the `O_PATH` fds the
        // PATHs were resolved by (with the directory of each that is not a
        // directory), held until each is walked.
        let kept_roots = opts.roots.len().min(KEPT_ROOT_FDS) as u64;
        let held_roots = (opts.roots.len().min(roots::HELD) + roots.parents_held()) as u64;
        let max_cached = soft
            .saturating_sub(
                FIXED
                    + kept_roots
                    + held_roots
                    + max_subvols as u64
                    + (PER_THREAD + max_later as u64) * threads as u64,
            )
            .clamp(1, 4096) as usize;
        Budget {
            threads,
            cold,
            lineage,
            max_later,
            max_subvols,
            max_cached,
        }
    }
}
