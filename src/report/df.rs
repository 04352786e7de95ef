//! `--df`: each filesystem's table ([`crate::df`] makes it), as text or a
//! JSON document; the browser (`sdu -i`, `F`) shows the same lines.
//!
//! ```text
//! /mnt/x on /dev/loop3 (btrfs): Size 1.0G, Used 120M; du -sx 101M
//! Row                   Bytes  How       Where
//! files                  100M  exact
//! outside_subvolumes      10M  exact     <FS_TREE>/snap 10M
//! …
//! unexplained           1.0M   at most   metadata estimate
//! ```

use std::borrow::Cow;
use std::io::{self, Write};

use serde::Serialize;

use super::json::Path;
use super::options::ReportOptions;
use crate::df::{How, Table};

/// How many items of a row the text lists.
const TEXT_ITEMS: usize = 10;

/// The `--df --json` document.
#[derive(Serialize)]
struct Document<'a> {
    filesystems: Vec<FsJson<'a>>,
}

/// One filesystem.
#[derive(Serialize)]
struct FsJson<'a> {
    mount: Path<'a>,
    source: Path<'a>,
    fs_type: Path<'a>,
    size: u64,
    used: u64,
    /// `du -sx` of the mount point.
    du_sx: u64,
    paths: Vec<Path<'a>>,
    rows: Vec<RowJson<'a>>,
}

/// One row.
#[derive(Serialize)]
struct RowJson<'a> {
    row: &'static str,
    bytes: i64,
    exact: bool,
    /// `exact`, `at most`, `at least`, `about`, `estimate`, `not seen`,
    /// `none`.
    how: &'static str,
    why: &'a str,
    items: Vec<ItemJson<'a>>,
}

/// One item of a row.
#[derive(Serialize)]
struct ItemJson<'a> {
    name: Path<'a>,
    bytes: u64,
    note: &'a str,
}

/// Writes `tables` as `opts` asks: JSON, or a table each.
pub(crate) fn write(out: &mut dyn Write, tables: &[Table], opts: &ReportOptions) -> io::Result<()> {
    if opts.format == super::Format::Json {
        let doc = Document {
            filesystems: tables.iter().map(fs_json).collect(),
        };
        serde_json::to_writer(&mut *out, &doc).map_err(io::Error::from)?;
        return out.write_all(b"\n");
    }
    let end = if opts.null { b'\0' } else { b'\n' };
    for (i, t) in tables.iter().enumerate() {
        if i > 0 {
            out.write_all(&[end])?;
        }
        for mut line in lines(t, opts) {
            line.push(end);
            out.write_all(&line)?;
        }
    }
    Ok(())
}

/// Table `t` in `--json`'s words.
fn fs_json(t: &Table) -> FsJson<'_> {
    let p = |b: &[u8]| Path(Cow::Owned(b.to_vec()));
    FsJson {
        mount: p(&t.mount),
        source: p(&t.source),
        fs_type: p(&t.fs_type),
        size: t.size,
        used: t.used,
        du_sx: t.du,
        paths: t.paths.iter().map(|x| p(x)).collect(),
        rows: (t.rows.iter())
            .map(|r| RowJson {
                row: r.row,
                bytes: r.bytes,
                exact: r.how.is_exact(),
                how: r.how.word(),
                why: &r.why,
                items: (r.items.iter())
                    .map(|i| ItemJson {
                        name: p(&i.name),
                        bytes: i.bytes,
                        note: &i.note,
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// The mark before a row's bytes, as the other tables mark bounds: `≤`,
/// `≥`, `~`; `?` not seen; nothing exact.
fn mark(how: How, ascii: bool) -> &'static str {
    match how {
        How::Exact | How::NoSuch => "",
        How::Bound(b) => b.mark(ascii),
        How::Estimate => "~",
        How::NotSeen => "?",
    }
}

/// Table `t`'s lines, without their ends: a header line (the mount, its
/// source and type, df's Size and Used, du -sx's Total), the column heads
/// (unless `opts` says none), a line per row, and under each row its
/// largest items (at most [`TEXT_ITEMS`]) and why it is not exact.
pub(crate) fn lines(t: &Table, opts: &ReportOptions) -> Vec<Vec<u8>> {
    let size = |v: u64| {
        let mut s = String::new();
        opts.unit.format(v, &mut s);
        s
    };
    let signed = |v: i64, how: How| {
        let mut s = mark(how, opts.ascii_marks).to_string();
        if v < 0 {
            s.push('-');
        }
        opts.unit.format(v.unsigned_abs(), &mut s);
        s
    };
    let mut out = Vec::new();
    let mut head = t.mount.clone();
    head.extend_from_slice(b" on ");
    head.extend_from_slice(&t.source);
    head.extend_from_slice(
        format!(
            " ({}): Size {}, Used {}; sdu -sx Total {}",
            String::from_utf8_lossy(&t.fs_type),
            size(t.size),
            size(t.used),
            size(t.du)
        )
        .as_bytes(),
    );
    out.push(head);
    let cells: Vec<[String; 3]> = (t.rows.iter())
        .map(|r| {
            let bytes = if r.how == How::NoSuch {
                "\u{2014}".to_string()
            } else {
                signed(r.bytes, r.how)
            };
            [r.row.to_string(), bytes, r.how.word().to_string()]
        })
        .collect();
    let heads = ["Row", "Bytes", "How"];
    let chars = |s: &str| s.chars().count();
    let mut w = heads.map(chars);
    for c in &cells {
        for (k, cell) in c.iter().enumerate() {
            w[k] = w[k].max(chars(cell));
        }
    }
    let line = |c: [&str; 3], rest: &str| {
        let pad = |s: &str, n: usize| " ".repeat(n.saturating_sub(chars(s)));
        let mut l = format!(
            "{}{}  {}{}  {}{}",
            c[0],
            pad(c[0], w[0]),
            pad(c[1], w[1]),
            c[1],
            c[2],
            pad(c[2], w[2])
        );
        if !rest.is_empty() {
            l.push_str("  ");
            l.push_str(rest);
        }
        l.trim_end().as_bytes().to_vec()
    };
    if opts.header {
        out.push(line(heads, "Where"));
    }
    for (r, c) in t.rows.iter().zip(&cells) {
        out.push(line([&c[0], &c[1], &c[2]], &r.why));
        for i in r.items.iter().take(TEXT_ITEMS) {
            let mut l = format!("  {:>w$}  ", size(i.bytes), w = w[0] + w[1]).into_bytes();
            opts.push_name(&mut l, &i.name);
            if !i.note.is_empty() {
                l.extend_from_slice(format!("  ({})", i.note).as_bytes());
            }
            out.push(l);
        }
        if r.items.len() > TEXT_ITEMS {
            out.push(
                format!(
                    "  … and {} more (--json lists all)",
                    r.items.len() - TEXT_ITEMS
                )
                .into_bytes(),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::df::{Item, Row};
    use crate::figures::Bound;

    #[test]
    fn the_text_marks_each_row_and_lists_its_items() {
        let r = |row: &'static str, bytes: i64, how: How| Row {
            row,
            bytes,
            how,
            why: String::new(),
            items: Vec::new(),
        };
        let mut files = r("files", 4096, How::Exact);
        files.items = (0..12)
            .map(|i| Item {
                name: format!("f{i}").into_bytes(),
                bytes: 1024,
                note: String::new(),
            })
            .collect();
        let t = Table {
            mount: b"/mnt".to_vec(),
            source: b"/dev/x".to_vec(),
            fs_type: b"btrfs".to_vec(),
            size: 1 << 20,
            used: 8192,
            du: 4096,
            paths: vec![b"/mnt".to_vec()],
            rows: vec![
                files,
                r("compression", -2048, How::Exact),
                r("outside_subvolumes", 0, How::NoSuch),
                r("unreachable", 0, How::NotSeen),
                r("unexplained", 6144, How::Bound(Bound::AT_MOST)),
            ],
        };
        let opts = ReportOptions {
            unit: crate::units::Unit::Blocks {
                size: 1,
                suffix: None,
            },
            ..ReportOptions::default()
        };
        let text: Vec<String> = lines(&t, &opts)
            .into_iter()
            .map(|l| String::from_utf8(l).unwrap())
            .collect();
        assert_eq!(
            text[0],
            "/mnt on /dev/x (btrfs): Size 1048576, Used 8192; sdu -sx Total 4096"
        );
        let cells = |l: &str| l.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
        assert_eq!(cells(&text[2]), "files 4096 exact");
        assert_eq!(text.iter().filter(|l| l.ends_with("  f3")).count(), 1);
        assert!(text.iter().any(|l| l.contains("and 2 more")), "{text:?}");
        assert!(text.iter().any(|l| cells(l) == "compression -2048 exact"));
        assert!(
            text.iter()
                .any(|l| cells(l) == "outside_subvolumes \u{2014} none")
        );
        assert!(text.iter().any(|l| cells(l) == "unreachable ?0 not"));
        assert!(
            text.iter()
                .any(|l| cells(l) == "unexplained \u{2264}6144 at")
        );
    }
}
