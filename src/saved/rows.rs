//! The records' rows: arrays of numbers, and figures as arrays.

use std::io::Read;

use super::Saved;
use super::syntax::{Parsed, Parser};
use crate::figures::{Bound, Stats, Timestamp};
use crate::probe::Granularity;
use crate::records::{FileRec, Link, NodeId};

/// Reads an array of numbers (`null` as `None`).
pub(super) fn numbers(p: &mut Parser<impl Read>, out: &mut Vec<Option<i128>>) -> Parsed<()> {
    out.clear();
    p.expect(b'[', "an array")?;
    let mut first = true;
    while p.next_element(first)? {
        first = false;
        out.push(if p.null()? { None } else { Some(p.signed()?) });
    }
    Ok(())
}

/// `row[i]` as an unsigned integer of type `T`.
pub(super) fn field<T: TryFrom<i128>>(
    p: &Parser<impl Read>,
    row: &[Option<i128>],
    i: usize,
) -> Parsed<T> {
    match row.get(i).copied().flatten().map(T::try_from) {
        Some(Ok(v)) => Ok(v),
        _ => p.error(format!(
            "field {} of a record is missing or out of range",
            i + 1
        )),
    }
}

/// Figures from an array: apparent, total, exclusive, shared, reclaimable,
/// files, dirs, and optionally a time's seconds and nanoseconds.
pub(super) fn stats(p: &Parser<impl Read>, row: &[Option<i128>]) -> Parsed<Stats> {
    if row.len() != 7 && row.len() != 9 {
        return p.error("figures must be 7 numbers (9 with a time)");
    }
    let time = if row.len() == 9 {
        Some(Timestamp {
            secs: field(p, row, 7)?,
            nanos: field(p, row, 8)?,
        })
    } else {
        None
    };
    Ok(Stats {
        apparent: field(p, row, 0)?,
        total: field(p, row, 1)?,
        exclusive: field(p, row, 2)?,
        shared: field(p, row, 3)?,
        reclaimable: field(p, row, 4)?,
        files: field(p, row, 5)?,
        dirs: field(p, row, 6)?,
        time,
    })
}

/// One row of `links`, `files`, `segments` or `units`.
pub(super) fn record(
    p: &Parser<impl Read>,
    s: &mut Saved,
    what: &[u8],
    row: &[Option<i128>],
    seg_end: &mut usize,
) -> Parsed<()> {
    let files =
        |from: usize| -> Parsed<Vec<u32>> { (from..row.len()).map(|i| field(p, row, i)).collect() };
    match what {
        b"links" => {
            if row.len() < 6 {
                return p.error("a link record is too short");
            }
            s.links.push(Link {
                node: NodeId::from_u32(field(p, row, 0)?),
                entry: match row[1] {
                    None => None,
                    Some(_) => Some(field(p, row, 1)?),
                },
                ns: field(p, row, 2)?,
                dev: field(p, row, 3)?,
                ino: field(p, row, 4)?,
                nlink: field(p, row, 5)?,
                stats: stats(p, &row[6..])?,
            });
        }
        b"files" => {
            if row.len() != 5 {
                return p.error("a file record must be 5 numbers");
            }
            s.files.push(&FileRec {
                id: s.files.len() as u32,
                node: NodeId::from_u32(field(p, row, 0)?),
                ns: field(p, row, 1)?,
                dev: field(p, row, 2)?,
                ino: field(p, row, 3)?,
                linked: field::<u8>(p, row, 4)? != 0,
            });
        }
        b"segments" => {
            let bytes = field(p, row, 0)?;
            let mappings = field(p, row, 1)?;
            s.sweep.push_saved_segment(bytes, mappings, &files(2)?);
        }
        _ => {
            let bytes = field(p, row, 0)?;
            let mappings = field(p, row, 1)?;
            let ranges = field(p, row, 2)?;
            let n: usize = field(p, row, 3)?;
            let end = seg_end.saturating_add(n);
            if n == 0 || end > s.sweep.segment_count() {
                return p.error("a unit's segments are not among the segments before it");
            }
            let f = files(4)?;
            if f.is_empty() && n != 1 {
                return p.error("a unit of several segments without its files");
            }
            s.sweep.push_saved_unit(
                bytes,
                mappings,
                ranges,
                end,
                (!f.is_empty()).then_some(&f[..]),
            );
            *seg_end = end;
        }
    }
    Ok(())
}

/// One row of `spaces`: `[fs, "block" or "extent", units]` (after the
/// units: its units are the next ones not yet in a space).
pub(super) fn space(p: &mut Parser<impl Read>, s: &mut Saved) -> Parsed<()> {
    let mut v = Vec::new();
    p.expect(b'[', "an array")?;
    let fs = p.u32()?;
    p.expect(b',', "','")?;
    p.string(&mut v)?;
    let g = match &v[..] {
        b"block" => Granularity::Block,
        b"extent" => Granularity::Extent,
        _ => return p.error("unknown granularity"),
    };
    p.expect(b',', "','")?;
    let units = p.uint()?;
    // Format 2 on: whether its units free what they count.
    let bound = if p.at(b',')? {
        p.expect(b',', "','")?;
        match Bound::from_bits(p.u32()?.try_into().unwrap_or(u8::MAX)) {
            Some(b) => b,
            None => return p.error("unknown bound"),
        }
    } else {
        Bound::AT_MOST
    };
    p.expect(b']', "']'")?;
    if s.spaces.iter().any(|x| x.0 == fs) {
        return p.error("an extent space listed twice");
    }
    let done = s.sweep.fs_units().last().map_or(0, |(_, r)| r.end) as u64;
    let end = done.saturating_add(units);
    if end > s.sweep.unit_count() as u64 {
        return p.error("the spaces hold more units than the units before them");
    }
    s.spaces.push((fs, g, bound));
    s.sweep.end_saved_fs(fs, end as usize);
    Ok(())
}
