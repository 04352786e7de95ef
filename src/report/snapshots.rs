//! `--snapshots`: the subvolumes of the scan by origin, as a table or a
//! JSON document ([`crate::snapshots`] finds them and their figures).
//!
//! ```text
//! Created           Total  Exclusive  Frees alone  Frees with older  RO  Path
//! 2026-12-06 12:40    30M        12M          12M               12M  -   /mnt/live
//! 2026-12-06 12:41    26M        4.0M         4.0M              4.0M  ro  /mnt/snaps/1
//! ```

use std::borrow::Cow;
use std::io::{self, Write};

use serde::Serialize;

use super::json::{BoundWord, Path};
use super::options::ReportOptions;
use crate::figures::Timestamp;
use crate::snapshot_layouts::Layout;
use crate::snapshots::{Group, OriginBy, Subvolume};
use crate::timefmt::TimeFormat;
use crate::tree::union::Frees;

/// The `--snapshots --json` document.
#[derive(Debug, Serialize)]
struct Document<'a> {
    /// Every subvolume met, origin first, then its snapshots oldest first.
    snapshots: Vec<Row<'a>>,
}

/// One subvolume.
#[derive(Debug, Serialize)]
struct Row<'a> {
    path: Path<'a>,
    /// The origin's path (absent: it is an origin, or its origin is not in
    /// the scan).
    origin: Option<Path<'a>>,
    /// Whether it is a snapshot (it has a parent uuid).
    snapshot: bool,
    uuid: String,
    parent_uuid: Option<String>,
    /// A snapshot: how its origin was found, `parent_uuid` (by its parent
    /// uuid alone), `root_tree` or `shared_data` (as root, past deleted
    /// subvolumes).
    origin_by: Option<&'static str>,
    /// Seconds since the epoch.
    created: i64,
    read_only: bool,
    total: u64,
    exclusive: u64,
    frees_alone: u64,
    frees_with_older: u64,
    /// Whether both `frees_` figures are exact.
    frees_exact: bool,
    frees_alone_bound: Option<BoundWord>,
    frees_with_older_bound: Option<BoundWord>,
    /// What snapper or timeshift recorded of it, when it is one of theirs.
    #[serde(skip_serializing_if = "Option::is_none")]
    layout: Option<LayoutJson<'a>>,
}

/// A snapshot tool's record, in `--json`.
#[derive(Debug, Serialize)]
struct LayoutJson<'a> {
    tool: &'static str,
    number: Option<u64>,
    /// When the tool says it was taken, in seconds since the epoch.
    date: i64,
    description: &'a str,
    tags: &'a [String],
    pre_number: Option<u64>,
    userdata: &'a [(String, String)],
    subvolume: Option<&'a str>,
}

/// Writes `groups` as `opts` asks: JSON, or the table. `btrfs`: whether
/// any PATH is on Btrfs; if none, one line says so.
pub(crate) fn write(
    out: &mut dyn Write,
    groups: &[Group],
    btrfs: bool,
    roots: &[Vec<u8>],
    opts: &ReportOptions,
) -> io::Result<()> {
    if !btrfs {
        let mut line = b"no snapshots: ".to_vec();
        line.extend_from_slice(&roots.join(&b' '));
        line.extend_from_slice(b" is not on Btrfs\n");
        return out.write_all(&line);
    }
    if opts.format == super::Format::Json {
        let mut rows = Vec::new();
        for g in groups {
            let origin = g.origin.as_ref().map(|o| &o.path[..]);
            rows.extend(g.origin.iter().map(|o| row(o, None)));
            rows.extend(g.snapshots.iter().map(|s| row(s, origin)));
        }
        serde_json::to_writer(&mut *out, &Document { snapshots: rows }).map_err(io::Error::from)?;
        return out.write_all(b"\n");
    }
    let time = opts
        .time
        .clone()
        .unwrap_or_else(|| TimeFormat::new("%Y-%m-%d %H:%M", crate::timefmt::zone(None)));
    let size = |f: Frees| {
        let mut s = f.bound.mark(opts.ascii_marks).to_string();
        opts.unit.format(f.bytes, &mut s);
        s
    };
    let plain = |v: u64| {
        let mut s = String::new();
        opts.unit.format(v, &mut s);
        s
    };
    let mut cells: Vec<([String; 6], Vec<u8>, Option<String>)> = Vec::new();
    for g in groups {
        for s in g.origin.iter().chain(&g.snapshots) {
            let mut created = String::new();
            time.write(
                Timestamp {
                    secs: s.created.secs,
                    nanos: s.created.nanos,
                },
                &mut created,
            );
            cells.push((
                [
                    created,
                    plain(s.figures.total),
                    plain(s.figures.exclusive),
                    size(s.alone),
                    size(s.with_older),
                    if s.read_only { "ro" } else { "-" }.into(),
                ],
                s.path.clone(),
                s.layout.as_ref().map(layout_note),
            ));
        }
        if !g.snapshots.is_empty() {
            let mut what = format!("every snapshot ({}) frees ", g.snapshots.len());
            what.push_str(&size(g.all));
            if let Some(o) = &g.origin {
                what.push_str("; the origin alone frees ");
                what.push_str(&size(o.alone));
            }
            if g.snapshots
                .iter()
                .any(|s| s.origin_by == OriginBy::ParentUuid)
            {
                what.push_str(" (grouped by parent uuid only)");
            }
            let mut path = b"  ".to_vec();
            path.extend_from_slice(what.as_bytes());
            cells.push((Default::default(), path, None));
        }
    }
    let heads = [
        "Created",
        "Total",
        "Exclusive",
        "Frees alone",
        "Frees with older",
        "RO",
    ];
    let chars = |s: &str| s.chars().count();
    let mut w = heads.map(chars);
    for (c, _, _) in &cells {
        for i in 0..6 {
            w[i] = w[i].max(chars(&c[i]));
        }
    }
    if opts.header && !opts.null {
        let mut line = format!("{:<w0$}", heads[0], w0 = w[0]);
        for i in 1..5 {
            line.push_str(&format!("  {:>wi$}", heads[i], wi = w[i]));
        }
        line.push_str(&format!("  {:<w5$}  Path\n", heads[5], w5 = w[5]));
        out.write_all(line.as_bytes())?;
    }
    let end = if opts.null { b'\0' } else { b'\n' };
    for (c, path, note) in cells {
        if c[0].is_empty() {
            let mut line = path;
            line.push(end);
            out.write_all(&line)?;
            continue;
        }
        let mut line = format!("{:<w0$}", c[0], w0 = w[0]);
        for i in 1..5 {
            line.push_str(&format!("  {:>wi$}", c[i], wi = w[i]));
        }
        line.push_str(&format!("  {:<w5$}  ", c[5], w5 = w[5]));
        let mut line = line.into_bytes();
        opts.push_name(&mut line, &path);
        if let Some(note) = note {
            line.extend_from_slice(b"  [");
            line.extend_from_slice(note.as_bytes());
            line.push(b']');
        }
        line.push(end);
        out.write_all(&line)?;
    }
    Ok(())
}

/// What snapper or timeshift says of a snapshot, for the table: the tool,
/// snapper's number or timeshift's tags, and the description, its control
/// characters shown as `?`.
fn layout_note(l: &Layout) -> String {
    let mut note = l.tool.name().to_string();
    if let Some(n) = l.number {
        note.push_str(&format!(" #{n}"));
    }
    for t in &l.tags {
        note.push(' ');
        note.push_str(t);
    }
    if !l.description.is_empty() {
        note.push_str(": ");
        note.extend(
            l.description
                .chars()
                .map(|c| if c.is_control() { '?' } else { c }),
        );
    }
    note
}

/// The JSON row of `s`, whose origin is at `origin`.
fn row<'a>(s: &'a Subvolume, origin: Option<&'a [u8]>) -> Row<'a> {
    Row {
        path: Path(Cow::Borrowed(&s.path)),
        origin: origin.map(|o| Path(Cow::Borrowed(o))),
        snapshot: s.parent != [0; 16],
        uuid: uuid(&s.uuid),
        parent_uuid: (s.parent != [0; 16]).then(|| uuid(&s.parent)),
        origin_by: (s.parent != [0; 16]).then(|| s.origin_by.word()),
        created: s.created.secs,
        read_only: s.read_only,
        total: s.figures.total,
        exclusive: s.figures.exclusive,
        frees_alone: s.alone.bytes,
        frees_with_older: s.with_older.bytes,
        frees_exact: s.alone.bound.is_exact() && s.with_older.bound.is_exact(),
        frees_alone_bound: BoundWord::of(s.alone.bound),
        frees_with_older_bound: BoundWord::of(s.with_older.bound),
        layout: s.layout.as_ref().map(|l| LayoutJson {
            tool: l.tool.name(),
            number: l.number,
            date: l.date,
            description: &l.description,
            tags: &l.tags,
            pre_number: l.pre_number,
            userdata: &l.userdata,
            subvolume: l.subvolume.as_deref(),
        }),
    }
}

/// `u` spelt as `btrfs subvolume show` does.
fn uuid(u: &[u8; 16]) -> String {
    let h: String = u.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}
