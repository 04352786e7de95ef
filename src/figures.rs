//! The additive figures kept for every entry, and the kinds of entries.

use std::ops::AddAssign;

use serde::{Deserialize, Serialize};

/// The figures of an entry or a subtree (`docs/figures.md`, "The figures",
/// defines each).
///
/// Sums over inodes: `apparent` is Σ `st_size`, `total` Σ allocated bytes
/// (`stx_blocks × 512`), `exclusive` is `total` less the bytes of extents
/// flagged shared, `files` the non-directory inodes and `dirs` the
/// directories (a directory counts itself). `shared` (a union of physical
/// ranges) and `reclaimable` (credited where their references are
/// contained) are not sums over inodes: the roll-up computes them.
///
/// In JSON (`crate::report::json`, saved scans' `-c` total) the seven
/// sizes and counts are keys of their own, in this order; `time` is not
/// written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Σ `st_size`.
    pub apparent: u64,
    /// Σ allocated bytes, `stx_blocks × 512`: what du prints.
    pub total: u64,
    /// `total` less the bytes of extents flagged shared.
    pub exclusive: u64,
    /// The union of the shared ranges referenced under the entry.
    pub shared: u64,
    /// What deleting the entry would free.
    pub reclaimable: u64,
    /// Non-directory inodes.
    pub files: u64,
    /// Directories (a directory counts itself).
    pub dirs: u64,
    /// The newest timestamp of any inode counted (`--time`; `None` when
    /// not asked for).
    #[serde(skip)]
    pub time: Option<Timestamp>,
}

/// A file timestamp: seconds and nanoseconds since the epoch. Ordered by
/// time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    /// Whole seconds since 1970-01-01 00:00 UTC (negative before).
    pub secs: i64,
    /// Nanoseconds within the second.
    pub nanos: u32,
}

/// Which timestamp `--time` reports, newest first (du's `--time=WORD`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeField {
    /// Last modification of the data (`mtime`, du's default).
    Modification,
    /// Last access (`atime`; du's `atime`, `access`, `use`).
    Access,
    /// Last status change (`ctime`; du's `ctime`, `status`).
    Status,
}

impl AddAssign for Stats {
    /// Adds field by field, saturating: only corrupt extent maps (a range
    /// ending at `u64::MAX`) come near the limit, and a figure pinned at
    /// the maximum is better than a wrapped one.
    #[inline(always)]
    fn add_assign(&mut self, o: Stats) {
        self.apparent = self.apparent.saturating_add(o.apparent);
        self.total = self.total.saturating_add(o.total);
        self.exclusive = self.exclusive.saturating_add(o.exclusive);
        self.shared = self.shared.saturating_add(o.shared);
        self.reclaimable = self.reclaimable.saturating_add(o.reclaimable);
        self.files = self.files.saturating_add(o.files);
        self.dirs = self.dirs.saturating_add(o.dirs);
        // A directory's time is the newest of anything under it, as du's.
        self.time = self.time.max(o.time);
    }
}

impl Stats {
    /// The figures of one inode of the given kind, with no shared extents:
    /// all of it is exclusive and freed with it.
    pub(crate) fn of_inode(kind: Kind, size: u64, blocks: u64) -> Stats {
        let dir = kind == Kind::Dir;
        let total = blocks.saturating_mul(512);
        Stats {
            apparent: size,
            total,
            exclusive: total,
            shared: 0,
            reclaimable: total,
            files: u64::from(!dir),
            dirs: u64::from(dir),
            time: None,
        }
    }

    /// Takes `shared_bytes` (Σ of the inode's extents flagged shared) out of
    /// its exclusive and reclaimable bytes.
    pub(crate) fn with_shared_extents(mut self, shared_bytes: u64) -> Stats {
        // Compressed Btrfs extents report their logical length, which can
        // exceed the allocated bytes.
        self.exclusive = self.total.saturating_sub(shared_bytes);
        self.reclaimable = self.exclusive;
        self
    }
}

impl Stats {
    /// Counts the inode's extents that are not shared at their size on
    /// disk: `logical` of its exclusive bytes are theirs, which take
    /// `on_disk` bytes on disk (root's tree search on Btrfs reads both:
    /// less for compressed extents, more for extents it references in
    /// part, which Btrfs keeps whole). `total` stays du's figure.
    pub(crate) fn with_exclusive_on_disk(mut self, (logical, on_disk): (u64, u64)) -> Stats {
        self.exclusive = self
            .exclusive
            .saturating_sub(logical)
            .saturating_add(on_disk);
        self.reclaimable = self.exclusive;
        self
    }
}

/// One of the five figures sdu reports for every entry: the one spelling
/// of them that columns, `--sort`, `--du`, `--top` and the tree's bars share.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Figure {
    /// Σ `st_size`.
    Apparent,
    /// Allocated bytes, what du prints.
    Total,
    /// Data that belongs to one file alone.
    Exclusive,
    /// Shared data that files under the entry reference, counted once.
    Shared,
    /// What deleting the entry would free.
    Reclaimable,
    /// Inodes: files and directories, each counted once (du's `--inodes`).
    Inodes,
}

impl Figure {
    /// Every figure, in the order the table prints them.
    pub const ALL: [Figure; 6] = [
        Figure::Apparent,
        Figure::Total,
        Figure::Exclusive,
        Figure::Shared,
        Figure::Reclaimable,
        Figure::Inodes,
    ];

    /// The lower-case name: the value of `--sort` and `--du`, and the key
    /// in the JSON document.
    pub fn name(self) -> &'static str {
        match self {
            Figure::Apparent => "apparent",
            Figure::Total => "total",
            Figure::Exclusive => "exclusive",
            Figure::Shared => "shared",
            Figure::Reclaimable => "reclaimable",
            Figure::Inodes => "inodes",
        }
    }

    /// The column heading.
    pub fn header(self) -> &'static str {
        match self {
            Figure::Apparent => "Apparent",
            Figure::Total => "Total",
            Figure::Exclusive => "Exclusive",
            Figure::Shared => "Shared",
            Figure::Reclaimable => "Reclaimable",
            Figure::Inodes => "Inodes",
        }
    }

    /// This figure of `s`.
    pub fn of(self, s: &Stats) -> u64 {
        match self {
            Figure::Apparent => s.apparent,
            Figure::Total => s.total,
            Figure::Exclusive => s.exclusive,
            Figure::Shared => s.shared,
            Figure::Reclaimable => s.reclaimable,
            Figure::Inodes => s.files.saturating_add(s.dirs),
        }
    }
}

/// The figures an inode seen through several links adds, once, to every
/// directory above any of them.
///
/// Only the link that was mapped knows the inode's extents; the others
/// (`Skip::SeenInode`) say `exclusive == total`, which is no measure: the
/// mapped link's exclusive is below its total where extents are shared,
/// and above it as root on Btrfs where an extent counts at its size on disk
/// beyond the part the file references. So the inode's exclusive is the
/// one link's that differs from its own total (the smallest, should two),
/// else the smallest. Its shared bytes come from the sweep and its
/// reclaimable bytes from where its links lie ([`all_links_seen`]), so
/// both start at zero.
pub(crate) fn linked_inode<'a>(links: impl Iterator<Item = &'a Stats>) -> Stats {
    let mut out: Option<Stats> = None;
    // The smallest exclusive of a link that measured it.
    let mut measured: Option<u64> = None;
    for s in links {
        if s.exclusive != s.total {
            measured = Some(measured.map_or(s.exclusive, |m| m.min(s.exclusive)));
        }
        match &mut out {
            None => out = Some(*s),
            Some(o) => o.exclusive = o.exclusive.min(s.exclusive),
        }
    }
    let mut stats = out.unwrap_or_default();
    if let Some(m) = measured {
        stats.exclusive = m;
    }
    stats.shared = 0;
    stats.reclaimable = 0;
    stats
}

/// Does an inode counted through its links (`links`: its figures through
/// each) free its exclusive bytes once all its links go? Not a directory
/// whose own figures claim nothing reclaimable: a Btrfs directory's own
/// bytes are metadata (`walk::dir`, `own_bytes_on`), counted through its
/// link under -L.
pub(crate) fn links_free<'a>(mut links: impl Iterator<Item = &'a Stats>) -> bool {
    !links.all(|s| s.dirs > 0 && s.reclaimable == 0)
}

/// Is an inode contained in the scan, so that deleting what holds its links
/// frees it? Only when every one of its `nlink` links was seen.
pub(crate) fn all_links_seen(seen: usize, nlink: u32) -> bool {
    seen as u64 >= u64::from(nlink)
}

/// Can deleting what the scan saw of a shared unit free it?
///
/// `mappings` are the unit's references seen in the scan, `ranges` the
/// stored ranges overlapping it, `files` how many files map it, and
/// `per_extent` whether its filesystem frees whole extents (Btrfs).
///
/// - A unit referenced once in the scan is flagged shared with something
///   outside it: never freed.
/// - A Btrfs unit of one file whose ranges overlap, each mapped once (the
///   file references parts of one extent, or, read by FIEMAP, one
///   compressed extent at two lengths) may be flagged shared for that
///   alone or for a reference outside the scan: not freed (and its file
///   marked at least without root, `coverage::mark_unfreed_units`).
///   Inside, some range is mapped twice. Where the Data Used proof holds,
///   each unit counts as one range (`Sweep::count_units_as_extents`):
///   one extent, which a file mapping it twice holds alone.
///
/// A unit that passes is freed where all its files are contained (the
/// roll-up decides that).
pub(crate) fn unit_freeable(mappings: u32, ranges: u32, files: usize, per_extent: bool) -> bool {
    mappings > 1 && !(per_extent && files == 1 && mappings <= ranges)
}

/// What an entry is, as reported in JSON `type`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Kind {
    /// A directory.
    #[default]
    Dir,
    /// A regular file.
    File,
    /// A symbolic link.
    Symlink,
    /// Devices, FIFOs, sockets.
    Other,
}

impl Kind {
    /// The kind of a `st_mode`.
    pub(crate) fn from_mode(mode: u32) -> Kind {
        match mode & 0o170_000 {
            0o040_000 => Kind::Dir,
            0o100_000 => Kind::File,
            0o120_000 => Kind::Symlink,
            _ => Kind::Other,
        }
    }

    /// The name used in JSON output.
    #[cfg(test)]
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::Dir => "dir",
            Kind::File => "file",
            Kind::Symlink => "symlink",
            Kind::Other => "other",
        }
    }
}

/// Whether a Reclaimable figure is the filesystem's truth, or a bound and
/// in which direction (`docs/figures.md`, "Exact or a bound").
///
/// A figure is exact when every reference to every unit credited in it was
/// verified, and every extent it counts was seen whole. Two things can
/// leave it a bound, and both can hold at once:
///
/// - `Bound::AT_MOST`: data it counts may also be referenced from outside
///   the scan (a snapshot, a reflink copy, something excluded), which sdu
///   could not verify: deleting may free less;
/// - `Bound::AT_LEAST`: on Btrfs without root, extents referenced only in
///   part cannot be seen (FIEMAP gives the referenced part): deleting may
///   free more.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Bound(u8);

impl Bound {
    /// The figure is exact.
    pub(crate) const EXACT: Bound = Bound(0);
    /// Deleting may free less than the figure.
    pub(crate) const AT_MOST: Bound = Bound(1);
    /// Deleting may free more than the figure.
    pub(crate) const AT_LEAST: Bound = Bound(2);
    /// Deleting may free less or more: both reasons, or a figure nothing
    /// was known of (a saved scan sdu did not write).
    pub(crate) const UNKNOWN: Bound = Bound(3);

    /// Whether the figure is exact.
    pub fn is_exact(self) -> bool {
        self.0 == 0
    }

    /// Whether deleting may free less than the figure.
    pub fn at_most(self) -> bool {
        self.0 & Bound::AT_MOST.0 != 0
    }

    /// Whether deleting may free more than the figure.
    pub fn at_least(self) -> bool {
        self.0 & Bound::AT_LEAST.0 != 0
    }

    /// Both reasons, of `self` and `o`.
    #[must_use]
    pub(crate) fn with(self, o: Bound) -> Bound {
        Bound(self.0 | o.0)
    }

    /// The words before a bound figure: "frees up to 4.0M", "frees at
    /// least", "frees about" (both); nothing when exact.
    pub fn qualifier(self) -> &'static str {
        match (self.at_most(), self.at_least()) {
            (false, false) => "",
            (true, false) => "up to ",
            (false, true) => "at least ",
            (true, true) => "about ",
        }
    }

    /// The mark before a bound figure in text: `≤` at most, `≥` at least,
    /// `~` both; in a locale that is not UTF-8 (`ascii`) `<=`, `>=`, `~`.
    /// Nothing when exact. Before the figure, so that `≤644M` reads "at
    /// most 644M", the figures of a right-aligned column still end in one
    /// column, and a reader that takes a number from the start of the cell
    /// does not take a bound for a figure.
    pub fn mark(self, ascii: bool) -> &'static str {
        match (self.at_most(), self.at_least(), ascii) {
            (false, false, _) => "",
            (true, false, false) => "\u{2264}",
            (true, false, true) => "<=",
            (false, true, false) => "\u{2265}",
            (false, true, true) => ">=",
            (true, true, _) => "~",
        }
    }

    /// The direction of a figure subtracted: a change `new - old` whose
    /// old side is at most its truth is at least the change's, and the
    /// other way round.
    #[must_use]
    pub(crate) fn reversed(self) -> Bound {
        Bound(((self.0 & 1) << 1) | ((self.0 >> 1) & 1))
    }

    /// The bits, for saved scans.
    pub(crate) fn bits(self) -> u8 {
        self.0
    }

    /// From [`Bound::bits`]; `None` for bits no version of sdu writes.
    pub(crate) fn from_bits(b: u8) -> Option<Bound> {
        (b <= 3).then_some(Bound(b))
    }
}

#[cfg(test)]
mod tests {
    use super::Bound;

    #[test]
    fn marks_say_the_direction() {
        let all = [
            Bound::EXACT,
            Bound::AT_MOST,
            Bound::AT_LEAST,
            Bound::UNKNOWN,
        ];
        let utf8: Vec<&str> = all.iter().map(|b| b.mark(false)).collect();
        assert_eq!(utf8, ["", "\u{2264}", "\u{2265}", "~"]);
        let ascii: Vec<&str> = all.iter().map(|b| b.mark(true)).collect();
        assert_eq!(ascii, ["", "<=", ">=", "~"]);
        assert_eq!(Bound::AT_MOST.with(Bound::AT_LEAST), Bound::UNKNOWN);
    }

    #[test]
    fn a_subtracted_bound_turns_around() {
        assert_eq!(Bound::AT_MOST.reversed(), Bound::AT_LEAST);
        assert_eq!(Bound::AT_LEAST.reversed(), Bound::AT_MOST);
        assert_eq!(Bound::UNKNOWN.reversed(), Bound::UNKNOWN);
        assert_eq!(Bound::EXACT.reversed(), Bound::EXACT);
    }
}
