//! sdu's output read back: the text table (sizes, then the path), the
//! paths of a report, and readable diffs of two path sets.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::os::unix::ffi::OsStringExt;

use crate::json::Report;

/// A parsed text table: the header's column names (size columns, then
/// `Path`) and the rows.
#[derive(Debug)]
pub struct Table {
    pub header: Option<Vec<String>>,
    pub rows: Vec<Row>,
}

#[derive(Debug)]
pub struct Row {
    pub sizes: Vec<String>,
    pub path: OsString,
    /// Byte offset where the path starts (for the alignment check).
    pub path_col: usize,
    /// ncdu's mark in the `Flag` column (`!` unread, `.` read in part), a
    /// space when unmarked or when the table has no such column.
    pub flag: char,
}

impl Table {
    /// Index of the size column that du's single figure corresponds to.
    pub fn main_column(&self) -> usize {
        let h = self.header.as_ref().expect("no header");
        ["Total", "Apparent", "Size"]
            .iter()
            .find_map(|n| h.iter().position(|c| c == n))
            .unwrap_or(0)
    }
}

/// Parses sdu's text output. `ncols` = number of size columns (from a
/// header, when `header` is false); `term` = row terminator.
pub fn parse_text(out: &[u8], header: bool, ncols: Option<usize>, term: u8) -> Table {
    let mut lines: Vec<&[u8]> = out.split(|&b| b == term).collect();
    assert_eq!(
        lines.pop(),
        Some(&b""[..]),
        "output does not end with the row terminator {term:#x}: {:?}",
        String::from_utf8_lossy(out)
    );
    // The legend under a table with marked figures: a mark, then what it
    // means (a row starts with its right-aligned sizes).
    let legend = |l: &&[u8]| {
        l.first().is_some_and(|&c| c != b' ' && !c.is_ascii_digit())
            && (l.windows(12).any(|w| w == b" Reclaimable")
                || l.starts_with(b"! could not be read")
                || l.starts_with(b". read in part"))
    };
    while lines.last().is_some_and(legend) {
        lines.pop();
    }
    let mut hdr = None;
    let mut ncols = ncols;
    let mut flags = false;
    if header {
        assert!(!lines.is_empty(), "no header line");
        let h: Vec<String> = String::from_utf8(lines.remove(0).to_vec())
            .expect("header is UTF-8")
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        assert_eq!(
            h.last().map(String::as_str),
            Some("Path"),
            "header {h:?} does not end with Path"
        );
        // The Flag column, before Path, when a directory was not read in
        // full: 4 wide.
        flags = h.len() >= 2 && h[h.len() - 2] == "Flag";
        ncols = Some(h.len() - 1 - usize::from(flags));
        hdr = Some(h);
    }
    let ncols = ncols.expect("number of size columns");
    let rows = lines
        .into_iter()
        .map(|l| parse_row(l, ncols, flags))
        .collect();
    Table { header: hdr, rows }
}

fn parse_row(l: &[u8], ncols: usize, flags: bool) -> Row {
    let bad = |why: &str| -> ! { panic!("row {:?}: {why}", String::from_utf8_lossy(l)) };
    let mut i = 0;
    let mut sizes = Vec::new();
    for c in 0..ncols {
        let start = i;
        while i < l.len() && l[i] == b' ' {
            i += 1;
        }
        if c > 0 && i - start < 2 {
            bad("size columns not separated by two spaces");
        }
        let s = i;
        while i < l.len() && l[i] != b' ' {
            i += 1;
        }
        if s == i {
            bad("missing size");
        }
        sizes.push(String::from_utf8(l[s..i].to_vec()).unwrap());
    }
    if !l[i..].starts_with(b"  ") {
        bad("sizes and path not separated by two spaces");
    }
    let mut flag = ' ';
    if flags {
        // `  ` then the mark right-aligned in 4 columns.
        match l.get(i + 2..i + 6) {
            Some([b' ', b' ', b' ', m]) if b" !.".contains(m) => flag = char::from(*m),
            _ => bad("no Flag cell"),
        }
        i += 6;
        if !l[i..].starts_with(b"  ") {
            bad("flag and path not separated by two spaces");
        }
    }
    Row {
        sizes,
        path: OsString::from_vec(l[i + 2..].to_vec()),
        path_col: i + 2,
        flag,
    }
}

/// Paths of a report, in order.
pub fn paths(r: &Report) -> Vec<OsString> {
    r.entries.iter().map(|e| e.path.clone()).collect()
}

pub fn sorted(mut v: Vec<OsString>) -> Vec<OsString> {
    v.sort();
    v
}

/// A readable diff of two sorted path sets (sdu's, du's).
pub fn set_diff(sdu: &[OsString], du: &[OsString]) -> String {
    labelled_diff(("sdu", sdu), ("du", du))
}

/// A readable diff of two sorted path sets with their names.
pub fn labelled_diff(a: (&str, &[OsString]), b: (&str, &[OsString])) -> String {
    let w = a.0.len().max(b.0.len());
    let mut t = String::new();
    for (this, that) in [(a, b), (b, a)] {
        for p in this.1.iter().filter(|p| !that.1.contains(p)) {
            let _ = writeln!(t, "  only {:w$}: {}", this.0, p.to_string_lossy());
        }
    }
    t
}
