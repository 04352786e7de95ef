//! A file's extent items, as root reads them on Btrfs, gathered by the
//! data extent they reference: what the file holds of each extent.
//!
//! Btrfs frees a data extent whole, once its last reference goes, even a
//! reference to a few blocks of it: an extent partly overwritten (a
//! "bookend") stays whole on disk while any part of it is referenced. Each
//! item says which extent it references (`disk_bytenr`, `disk_num_bytes`)
//! and which range of it (`offset`, `num_bytes`); FIEMAP shows only the
//! range. [`held`] gives, per extent, what the tree search indexes and
//! counts ([`super::source`]).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use dashmap::DashMap;

use sdu_sys::btrfs::{FileExtent, FileExtentType};

use super::Fast;

/// One data extent a file references.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HeldExtent<'a> {
    /// Its address on disk.
    pub(crate) bytenr: u64,
    /// Its size on disk (compressed, for a compressed extent).
    pub(crate) disk_bytes: u64,
    /// It is compressed (or otherwise encoded): the ranges below are in its
    /// uncompressed data, which is not its size on disk.
    pub(crate) encoded: bool,
    /// Σ of the lengths of the file's items in it: the bytes it adds to the
    /// file's `st_blocks`.
    pub(crate) logical: u64,
    /// The file's references to it, as its backrefs count them: one per
    /// distinct position in the file it is referenced from (the item's file
    /// offset less its offset into the extent). Items split from one (by a
    /// write in their middle) are one reference; a file that clones the
    /// extent into itself references it twice.
    pub(crate) refs: u32,
    /// The union of the ranges of it the file's items reference, relative
    /// to its start: sorted, disjoint, not touching.
    pub(crate) referenced: &'a [(u64, u64)],
}

impl HeldExtent<'_> {
    /// The bytes of the extent that no item of the file references; 0 for
    /// an encoded extent (its ranges are not bytes on disk).
    pub(crate) fn unreferenced(&self) -> u64 {
        if self.encoded {
            return 0;
        }
        let covered = self
            .referenced
            .iter()
            .fold(0u64, |a, (s, e)| a.saturating_add(e - s));
        self.disk_bytes.saturating_sub(covered)
    }
}

/// What the tree search indexes for the file of `items`, given the verdict
/// (shared or not) of each extent it references
/// ([`super::unchanged::Indexed`]), into `out`; false when that is not all
/// (some data inline, or a shared extent referenced only in part, which
/// is kept apart for the file) or nothing.
pub(crate) fn shared_held(
    items: &[FileExtent],
    verdicts: &[(u64, bool)],
    out: &mut Vec<super::unchanged::SharedRef>,
) -> bool {
    out.clear();
    if items.iter().any(|e| e.kind == FileExtentType::Inline) {
        return false;
    }
    let mut whole = true;
    held(items, |h| {
        if verdicts.contains(&(h.bytenr, true)) {
            whole &= h.unreferenced() == 0;
            out.push((h.bytenr, h.disk_bytes, h.refs));
        }
    });
    whole && !out.is_empty()
}

/// Calls `each` with every data extent the file of `items` references
/// (holes and inline items aside), in order of address.
pub(crate) fn held(items: &[FileExtent], each: impl FnMut(&HeldExtent<'_>)) {
    // Every file read by the search comes here, most twice: the lists are
    // the thread's, kept from one file to the next (a call made inside
    // `each` would find them taken, and make its own).
    let mut s = SCRATCH.take();
    held_in(items, each, &mut s);
    SCRATCH.set(s);
}

/// [`held`]'s lists: (address, start and end in the extent, reference
/// position, item); the union of the ranges referenced; the reference
/// positions.
type Scratch = (Vec<(u64, u64, u64, u64, usize)>, Vec<(u64, u64)>, Vec<u64>);

thread_local! {
    static SCRATCH: Cell<Scratch> = const { Cell::new((Vec::new(), Vec::new(), Vec::new())) };
}

fn held_in(items: &[FileExtent], mut each: impl FnMut(&HeldExtent<'_>), s: &mut Scratch) {
    let (by, union, at) = s;
    by.clear();
    by.extend(
        items
            .iter()
            .enumerate()
            .filter(|(_, e)| e.kind != FileExtentType::Inline && e.disk_bytenr != 0)
            .map(|(i, e)| {
                let end = e.offset.saturating_add(e.num_bytes);
                let end = if e.encoded() {
                    end
                } else {
                    end.min(e.disk_num_bytes)
                };
                (
                    e.disk_bytenr,
                    e.offset.min(end),
                    end,
                    e.file_offset.wrapping_sub(e.offset),
                    i,
                )
            }),
    );
    by.sort_unstable();
    for group in by.chunk_by(|a, b| a.0 == b.0) {
        let first = &items[group[0].4];
        union.clear();
        at.clear();
        let mut logical = 0u64;
        for &(_, s, e, r, i) in group {
            logical = logical.saturating_add(items[i].num_bytes);
            at.push(r);
            match union.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ if s < e => union.push((s, e)),
                _ => {}
            }
        }
        at.sort_unstable();
        at.dedup();
        each(&HeldExtent {
            bytenr: first.disk_bytenr,
            disk_bytes: first.disk_num_bytes,
            encoded: first.encoded(),
            logical,
            refs: u32::try_from(at.len()).unwrap_or(u32::MAX),
            referenced: union,
        });
    }
}

/// The extents files reference in part, gathered during the walk (the
/// tree search's: FIEMAP shows only the referenced ranges): only those
/// need an entry.
///
/// # Memory
/// Per shared extent some file references in part, a map entry (about 90
/// bytes with the hash table's slack) and two small vectors: 16 bytes per
/// disjoint referenced range and 4 per file. Extents a file alone
/// references cost two counters in all.
#[derive(Debug, Default)]
pub(crate) struct Parts {
    /// Shared extents some file references in part, by extent space and
    /// address.
    shared: DashMap<(u32, u64), PartNote, Fast>,
    /// Extents not shared that their file references in part, and the
    /// bytes of them it does not reference.
    own: (AtomicU64, AtomicU64),
}

/// A shared extent that some file references in part, as noted so far.
#[derive(Debug)]
struct PartNote {
    /// Its size on disk.
    length: u64,
    /// The references to it of the files that reference it in part.
    refs: u32,
    /// The union of the ranges of it they reference, relative to its start.
    referenced: Vec<(u64, u64)>,
    /// Those files.
    files: Vec<u32>,
}

impl Parts {
    /// Notes an extent not shared that its file references in part,
    /// `unreferenced` bytes of it unreferenced.
    pub(crate) fn own(&self, unreferenced: u64) {
        self.own.0.fetch_add(1, Ordering::Relaxed);
        self.own.1.fetch_add(unreferenced, Ordering::Relaxed);
    }

    /// Notes that `file` references the shared extent `h`, indexed in
    /// extent space `space`, in part.
    pub(crate) fn shared(&self, space: u32, h: &HeldExtent<'_>, file: u32) {
        let mut p = self
            .shared
            .entry((space, h.bytenr))
            .or_insert_with(|| PartNote {
                length: h.disk_bytes,
                refs: 0,
                referenced: Vec::new(),
                files: Vec::new(),
            });
        p.refs = p.refs.saturating_add(h.refs);
        p.files.push(file);
        let mut all: Vec<(u64, u64)> = p.referenced.iter().chain(h.referenced).copied().collect();
        all.sort_unstable();
        p.referenced.clear();
        for (s, e) in all {
            match p.referenced.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => p.referenced.push((s, e)),
            }
        }
    }

    /// What was noted, once the walk is over; `count(space, start,
    /// length)` is the references the index holds of a whole extent, with
    /// multiplicity. A file that references all of an extent indexed it
    /// as often as it references it and noted nothing here: more
    /// references in the index than noted means one such file.
    pub(crate) fn resolve(&self, count: impl Fn(u32, u64, u64) -> u32) -> Partly {
        let mut out = Partly {
            extents: self.own.0.load(Ordering::Relaxed),
            bytes: self.own.1.load(Ordering::Relaxed),
            shared: Vec::new(),
        };
        for p in self.shared.iter() {
            let (space, start) = *p.key();
            out.extents += 1;
            if count(space, start, p.length) > p.refs {
                continue;
            }
            let covered = p
                .referenced
                .iter()
                .fold(0u64, |a, (s, e)| a.saturating_add(e - s));
            let bytes = p.length.saturating_sub(covered);
            if bytes == 0 {
                continue;
            }
            out.bytes = out.bytes.saturating_add(bytes);
            let mut files = p.files.clone();
            files.sort_unstable();
            files.dedup();
            out.shared.push(UnreachableExtent {
                space,
                start,
                length: p.length,
                bytes,
                files: files.into_boxed_slice(),
            });
        }
        out.shared.sort_unstable_by_key(|u| (u.space, u.start));
        out
    }
}

/// What the tree search found of the extents files reference in part (as
/// root on Btrfs; nothing from FIEMAP, which shows only the referenced
/// ranges): Btrfs keeps such an extent whole on disk while any part of it
/// is referenced ([`super::Extents::partly_referenced`]).
#[derive(Debug, Default)]
pub(crate) struct Partly {
    /// The extents some file references in part (the `--stats` count):
    /// each shared one once, each other once per file.
    pub(crate) extents: u64,
    /// Σ of their bytes on disk that no file in the scan references: of
    /// the extents not shared, each file's
    /// [`super::FileExtents::unreachable`]; of the shared ones, `shared`'s.
    pub(crate) bytes: u64,
    /// The shared extents with bytes on disk that no file in the scan
    /// references, by extent space and address. (Those of extents a file
    /// alone references are that file's:
    /// [`super::FileExtents::unreachable`].)
    pub(crate) shared: Vec<UnreachableExtent>,
}

/// A shared extent with bytes on disk that no file in the scan references:
/// a rewrite of its files (or `btrfs filesystem defragment`) would give
/// them back. Its unit in the sweep is the extent, `[start, start +
/// length)` in extent space `space`, freed only with all of `files`. An
/// upper bound when a file outside the scan references some of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct UnreachableExtent {
    /// The extent space it is indexed in.
    pub(crate) space: u32,
    /// Its address on disk.
    pub(crate) start: u64,
    /// Its size on disk.
    pub(crate) length: u64,
    /// The bytes of it that no file in the scan references.
    pub(crate) bytes: u64,
    /// The files (ids in the index) that reference it in part, sorted,
    /// without duplicates: all the files in the scan that reference it.
    pub(crate) files: Box<[u32]>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: u64 = 1024;

    fn item(file_offset: u64, bytenr: u64, disk: u64, offset: u64, len: u64) -> FileExtent {
        FileExtent {
            leaf_gen: 1,
            file_offset,
            kind: FileExtentType::Regular,
            compression: 0,
            encoded_other: false,
            disk_bytenr: bytenr,
            disk_num_bytes: disk,
            offset,
            num_bytes: len,
            ram_bytes: 0,
        }
    }

    /// (address, disk bytes, logical, refs, referenced, unreferenced) per
    /// extent.
    type ExtentRow = (u64, u64, u64, u32, Vec<(u64, u64)>, u64);

    fn rows(items: &[FileExtent]) -> Vec<ExtentRow> {
        let mut out = Vec::new();
        held(items, |h| {
            out.push((
                h.bytenr,
                h.disk_bytes,
                h.logical,
                h.refs,
                h.referenced.to_vec(),
                h.unreferenced(),
            ));
        });
        out
    }

    #[test]
    fn a_whole_extent_has_nothing_unreferenced() {
        let r = rows(&[item(0, 1 << 20, 256 * K, 0, 256 * K)]);
        assert_eq!(r, [(1 << 20, 256 * K, 256 * K, 1, vec![(0, 256 * K)], 0)]);
    }

    /// 256 KiB in one extent E, its first 128 KiB overwritten: the file
    /// references E's second half and 128 KiB of a new extent.
    #[test]
    fn a_bookend_leaves_the_overwritten_part_unreferenced() {
        let e = 1 << 20;
        let r = rows(&[
            item(0, 8 << 20, 128 * K, 0, 128 * K),
            item(128 * K, e, 256 * K, 128 * K, 128 * K),
        ]);
        assert_eq!(
            r,
            [
                (e, 256 * K, 128 * K, 1, vec![(128 * K, 256 * K)], 128 * K),
                (8 << 20, 128 * K, 128 * K, 1, vec![(0, 128 * K)], 0),
            ]
        );
    }

    /// A write in the middle splits the item in two: still one reference,
    /// its ranges not merged across the gap.
    #[test]
    fn items_split_by_a_write_are_one_reference() {
        let e = 1 << 20;
        let r = rows(&[
            item(0, e, 8 << 20, 0, 2 << 20),
            item(2 << 20, 64 << 20, 4 << 20, 0, 4 << 20),
            item(6 << 20, e, 8 << 20, 6 << 20, 2 << 20),
        ]);
        assert_eq!(
            r[0],
            (
                e,
                8 << 20,
                4 << 20,
                1,
                vec![(0, 2 << 20), (6 << 20, 8 << 20)],
                4 << 20
            )
        );
    }

    /// The file clones its own extent: two references, one range.
    #[test]
    fn an_internal_clone_is_two_references() {
        let e = 1 << 20;
        let r = rows(&[
            item(0, e, 64 * K, 0, 64 * K),
            item(64 * K, e, 64 * K, 0, 64 * K),
        ]);
        assert_eq!(r, [(e, 64 * K, 128 * K, 2, vec![(0, 64 * K)], 0)]);
    }

    /// Ranges that touch merge; holes and inline items are no extents; an
    /// encoded extent has nothing unreferenced (its ranges are not on disk).
    #[test]
    fn touching_ranges_merge_and_holes_and_encoded_extents() {
        let e = 1 << 20;
        let mut z = item(8 * K, 2 << 20, 4 * K, 0, 128 * K);
        z.compression = 3;
        let mut inline = item(0, 0, 0, 0, 100);
        inline.kind = FileExtentType::Inline;
        let r = rows(&[
            inline,
            item(0, e, 64 * K, 0, 4 * K),
            item(4 * K, e, 64 * K, 4 * K, 4 * K),
            item(8 * K, 0, 0, 0, 4 * K),
            z,
        ]);
        assert_eq!(
            r,
            [
                (e, 64 * K, 8 * K, 1, vec![(0, 8 * K)], 56 * K),
                (2 << 20, 4 * K, 128 * K, 1, vec![(0, 128 * K)], 0),
            ]
        );
    }

    /// A corrupt item reaching past its extent is clamped to it.
    #[test]
    fn ranges_past_the_extent_are_clamped() {
        let r = rows(&[item(0, 1 << 20, 4 * K, 2 * K, 8 * K)]);
        assert_eq!(r[0].4, vec![(2 * K, 4 * K)]);
        assert_eq!(r[0].5, 2 * K);
    }

    /// What the tree search makes of files' items ([`super::super::Extents`]'s
    /// `index_items`): `files` are each (items, whether their extents are
    /// shared); returns each file's figures, what was found in part, and
    /// the sweep.
    fn scan(
        files: &[(Vec<FileExtent>, bool)],
    ) -> (Vec<super::super::FileExtents>, Partly, super::super::Sweep) {
        let x = super::super::Extents::new();
        let mut got = Vec::new();
        for (extents, shared) in files {
            let items = sdu_sys::btrfs::InodeItems {
                found: true,
                extents: extents.clone(),
                calls: 0,
            };
            let verdicts: Vec<(u64, bool)> =
                extents.iter().map(|e| (e.disk_bytenr, *shared)).collect();
            let mut f = super::super::FileExtents::default();
            x.index_items(&items, &verdicts, (0, true), &mut f);
            got.push(f);
        }
        let partly = x.partly_referenced();
        (
            got,
            partly,
            x.into_sweep(|_| crate::probe::Granularity::Extent)
                .expect("in memory")
                .0,
        )
    }

    /// Units as (bytes, files, mappings).
    fn units(s: &super::super::Sweep) -> Vec<(u64, Vec<u32>, u32)> {
        s.units()
            .map(|u| (u.bytes, u.files.to_vec(), u.mappings))
            .collect()
    }

    const E: u64 = 1 << 30;
    const NEW: u64 = 2 << 30;

    /// `build_bookend`: one file, 256 KiB in E, its first 128 KiB
    /// overwritten. Not shared: E counts whole in its exclusive, the half
    /// no item references is unreachable.
    #[test]
    fn an_unshared_bookend_counts_whole() {
        let w = vec![
            item(0, NEW, 128 * K, 0, 128 * K),
            item(128 * K, E, 256 * K, 128 * K, 128 * K),
        ];
        let (got, partly, sweep) = scan(&[(w, false)]);
        assert_eq!(got[0].on_disk, (128 * K, 256 * K));
        assert_eq!((got[0].unreachable, got[0].shared_bytes), (128 * K, 0));
        assert_eq!((partly.extents, partly.bytes), (1, 128 * K));
        assert!(partly.shared.is_empty());
        assert_eq!(sweep.unit_count(), 0);
        let st = crate::figures::Stats::of_inode(crate::figures::Kind::File, 256 * K, 512)
            .with_shared_extents(got[0].shared_bytes)
            .with_exclusive_on_disk(got[0].on_disk);
        assert_eq!(
            (st.total, st.exclusive, st.reclaimable),
            (256 * K, 384 * K, 384 * K)
        );
    }

    /// `build_halves`: full holds E's first half (its second overwritten),
    /// g1 and g2 its second half. One unit, the whole extent, held by all
    /// three; nothing unreachable (the halves cover it).
    #[test]
    fn halves_of_one_extent_are_one_unit() {
        let full = vec![
            item(0, E, 256 * K, 0, 128 * K),
            item(128 * K, NEW, 128 * K, 0, 128 * K),
        ];
        let half = vec![item(0, E, 256 * K, 128 * K, 128 * K)];
        let (got, partly, sweep) = scan(&[(full, true), (half.clone(), true), (half, true)]);
        assert_eq!(
            units(&sweep),
            [(256 * K, vec![0, 1, 2], 3), (128 * K, vec![0], 1)]
        );
        assert_eq!(got[1].shared_bytes, 128 * K);
        assert_eq!((partly.extents, partly.bytes), (1, 0));
        assert!(partly.shared.is_empty());
    }

    /// Two clones of E's first 64 KiB, the rest of E referenced by no one:
    /// 192 KiB unreachable, freed with both.
    #[test]
    fn a_shared_extent_referenced_in_part_lists_its_unreachable_bytes() {
        let a = vec![item(0, E, 256 * K, 0, 64 * K)];
        let (_, partly, sweep) = scan(&[(a.clone(), true), (a, true)]);
        assert_eq!(units(&sweep), [(256 * K, vec![0, 1], 2)]);
        assert_eq!((partly.extents, partly.bytes), (1, 192 * K));
        assert_eq!(
            partly.shared,
            [UnreachableExtent {
                space: 0,
                start: E,
                length: 256 * K,
                bytes: 192 * K,
                files: Box::new([0, 1]),
            }]
        );
    }

    /// A file that references all of E, met before or after one that
    /// references a part: nothing unreachable. A whole-file clone: the
    /// shared range is the extent, as FIEMAP's.
    #[test]
    fn a_whole_reference_leaves_nothing_unreachable() {
        let whole = vec![item(0, E, 256 * K, 0, 256 * K)];
        let part = vec![item(0, E, 256 * K, 64 * K, 64 * K)];
        for files in [
            [(whole.clone(), true), (part.clone(), true)],
            [(part.clone(), true), (whole.clone(), true)],
        ] {
            let (_, partly, sweep) = scan(&files);
            assert_eq!((partly.extents, partly.bytes), (1, 0));
            assert!(partly.shared.is_empty());
            assert_eq!(units(&sweep), [(256 * K, vec![0, 1], 2)]);
        }
        let (_, partly, sweep) = scan(&[(whole.clone(), true), (whole, true)]);
        assert_eq!((partly.extents, partly.bytes), (0, 0));
        assert_eq!(sweep.bytes(), 256 * K);
        assert_eq!(units(&sweep), [(256 * K, vec![0, 1], 2)]);
    }

    /// A file that clones part of its own extent: two references, so the
    /// unit is freed with the file alone.
    #[test]
    fn an_internal_clone_of_part_is_referenced_twice() {
        let f = vec![
            item(0, E, 256 * K, 0, 256 * K),
            item(256 * K, E, 256 * K, 0, 64 * K),
        ];
        let (got, partly, sweep) = scan(&[(f, true)]);
        assert_eq!(units(&sweep), [(256 * K, vec![0], 2)]);
        assert_eq!(got[0].shared_bytes, 320 * K);
        assert_eq!(partly.extents, 0);
    }
}
