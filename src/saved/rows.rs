//! The records' rows: arrays of numbers, and figures as arrays.

use std::io::BufRead;

use super::syntax::{Parsed, Parser};
use crate::figures::{Stats, Timestamp};

/// Reads an array of numbers (`null` as `None`).
pub(super) fn numbers(p: &mut Parser<impl BufRead>, out: &mut Vec<Option<i128>>) -> Parsed<()> {
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
    p: &Parser<impl BufRead>,
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
pub(super) fn stats(p: &Parser<impl BufRead>, row: &[Option<i128>]) -> Parsed<Stats> {
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
