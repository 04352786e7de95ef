//! What the walk counts, for `--stats` and the closing warning
//! ([`Counters`]).

use std::sync::Mutex;
use std::sync::atomic::AtomicU64;

use crate::probe::Skip;

/// How many ways the walk leaves an entry out: `LeftOut::ALL` is an array
/// of this length.
pub(crate) const WAYS_LEFT_OUT: usize = 7;

/// What the walk counted, for `--stats` and the closing warning.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// The walk's threads.
    pub(crate) threads: u64,
    /// Whether the tree looked cold (not in memory) before the walk, which
    /// then took [`super::WalkOptions::cold_threads`].
    pub(crate) cold: bool,
    /// Cold, but the roots hold snapshots read by difference: the walk
    /// took a thread per CPU (`walk::cold::SEARCH_THREADS`).
    pub(crate) cold_lineage: bool,
    /// Entries stat-ed (roots included).
    pub(crate) entries: u64,
    /// Files whose extents were read.
    pub(crate) fiemap_files: u64,
    /// The ioctl calls that took.
    pub(crate) fiemap_calls: u64,
    /// FIEMAPs put off because their XFS allocation group was busy.
    pub(crate) fiemap_put_off: u64,
    /// Regular files accounted for by the walk's lean path (its `plain`
    /// module), mapped or not.
    pub(crate) plain_files: u64,
    /// Files not mapped, by `Skip::index`.
    pub(crate) skipped: [u64; Skip::ALL.len()],
    /// Files that may share but whose sharing could not be verified (open
    /// or FIEMAP failed, or their filesystem could not be probed), counted
    /// as exclusive.
    pub unverified_files: u64,
    /// The allocated bytes of those files.
    pub unverified_bytes: u64,
    /// Files with compressed (FIEMAP `ENCODED`) extents counted at their
    /// logical length.
    pub(crate) compressed_files: u64,
    /// The logical bytes of those extents.
    pub(crate) compressed_bytes: u64,
    /// Btrfs files credited with the extents of a copy of them mapped
    /// before, in a related snapshot, instead of their own FIEMAP.
    pub(crate) copies_reused: u64,
    /// `--since`: files credited with the map the saved scan kept.
    pub(crate) mappings_reused: u64,
    /// `--since --verify`: files unchanged whose map was found the same as
    /// saved, and those whose map was not.
    pub(crate) mappings_verified: u64,
    pub(crate) mappings_stale: u64,
    /// `--since`: reused maps the filesystem proved current.
    pub(crate) mappings_proven: u64,
    /// `--since` as root: maps not checked, where the check would read
    /// more than the scan maps; their files mapped again.
    pub(crate) mappings_remapped: u64,
    /// Btrfs files met while another thread mapped a copy of them, put off
    /// to the end of their task.
    pub(crate) copies_waited: u64,
    /// Btrfs files with inline data recorded, to be matched with their
    /// copies in other subvolumes after the walk (none when the walk can
    /// meet only one subvolume).
    pub(crate) inline_recorded: u64,
    /// Files whose extents the Btrfs tree search read.
    pub(crate) search_files: u64,
    /// The tree searches that took, and as root those that asked other
    /// subvolumes about inline files after the walk (`inline_held`).
    pub(crate) search_calls: u64,
    /// Entries whose figures were read from the Btrfs tree instead of
    /// `statx` (root).
    pub(crate) tree_entries: u64,
    /// Inodes of a snapshot (or of its origin) read as another member of
    /// their lineage held them, their leaves unchanged since (`lineage`
    /// in `src/extents/btrfs_refs.rs`): not copied again.
    pub(crate) tree_unchanged: u64,
    /// Files the tree search could not decide, mapped with FIEMAP.
    pub(crate) search_undecided: u64,
    /// Files with compressed extents counted at their size on disk (the
    /// tree search).
    pub(crate) on_disk_files: u64,
    /// The bytes on disk of those extents.
    pub(crate) on_disk_bytes: u64,
    /// Extents some file references in part (the tree search; each shared
    /// one once, each other once per file): Btrfs keeps them whole.
    pub(crate) partial_extents: u64,
    /// The bytes on disk of those extents that no file in the scan
    /// references.
    pub(crate) unreachable_bytes: u64,
    /// As root, on filesystems the scan does not cover whole: the shared
    /// ranges whose owners were asked of the filesystem.
    pub(crate) outside_asked: u64,
    /// Of those, the ranges some owner outside the scan also holds.
    pub(crate) outside_found: u64,
    /// Shared ranges whose refs (read by the tree search) settled that no
    /// owner lies outside the scan, without asking.
    pub(crate) outside_settled: u64,
    /// Runs the index of shared extents wrote to its temporary file past
    /// `--index-memory` (merges of runs included).
    pub(crate) index_runs: u64,
    /// Their bytes.
    pub(crate) index_spilled: u64,
    /// Directories the cycle check climbed through, over all
    /// subdirectories: none unless a directory is met while a handle of
    /// it is alive (a cycle, or one directory reached twice at once).
    pub(crate) ancestors_climbed: u64,
    /// Entries left out of the scan, by `LeftOut::index`.
    pub(crate) left_out: [u64; WAYS_LEFT_OUT],
}

impl Counters {
    pub(super) fn add(&mut self, o: &Counters) {
        self.entries += o.entries;
        self.fiemap_files += o.fiemap_files;
        self.fiemap_calls += o.fiemap_calls;
        self.fiemap_put_off += o.fiemap_put_off;
        self.plain_files += o.plain_files;
        for (a, b) in self.skipped.iter_mut().zip(o.skipped) {
            *a += b;
        }
        self.unverified_files += o.unverified_files;
        self.unverified_bytes += o.unverified_bytes;
        self.compressed_files += o.compressed_files;
        self.compressed_bytes += o.compressed_bytes;
        self.copies_reused += o.copies_reused;
        self.mappings_reused += o.mappings_reused;
        self.mappings_verified += o.mappings_verified;
        self.mappings_stale += o.mappings_stale;
        self.mappings_proven += o.mappings_proven;
        self.mappings_remapped += o.mappings_remapped;
        self.copies_waited += o.copies_waited;
        self.inline_recorded += o.inline_recorded;
        self.search_files += o.search_files;
        self.search_calls += o.search_calls;
        self.tree_entries += o.tree_entries;
        self.search_undecided += o.search_undecided;
        self.on_disk_files += o.on_disk_files;
        self.on_disk_bytes += o.on_disk_bytes;
        self.partial_extents += o.partial_extents;
        self.unreachable_bytes += o.unreachable_bytes;
        self.outside_asked += o.outside_asked;
        self.outside_found += o.outside_found;
        self.outside_settled += o.outside_settled;
        self.ancestors_climbed += o.ancestors_climbed;
        for (a, b) in self.left_out.iter_mut().zip(o.left_out) {
            *a += b;
        }
    }
}

/// Progress of a walk, published for a display on another thread.
///
/// Updated once per directory (an atomic add) and, every
/// `PROGRESS_PATH_EVERY` directories, the path of the directory being
/// read (a `try_lock`, skipped when the display holds the lock), so that
/// publishing costs nothing measurable.
#[derive(Debug, Default)]
pub struct Progress {
    /// Entries stat-ed so far.
    pub entries: AtomicU64,
    /// Their Total so far (du's figure, bytes allocated), as ncdu and gdu
    /// show it: a hard-linked file counts at each name until the roll-up.
    pub bytes: AtomicU64,
    /// A directory recently read, as printed.
    pub current: Mutex<Vec<u8>>,
}

/// How often (in directories) the walker publishes the current path.
pub(crate) const PROGRESS_PATH_EVERY: u32 = 64;
