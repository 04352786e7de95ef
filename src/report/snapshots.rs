//! `--snapshots`: the subvolumes of the scan by origin, as a table or a
//! JSON document ([`crate::snapshots`] finds them and their figures);
//! the browser (`sdu -i`, `p`) shows the same [`lines`].
//!
//! `--sort`, `--top` and `--min-size` choose among each origin's
//! snapshots as among the entries of the other reports ([`select`]):
//! `reclaimable` is Frees alone, the figure they go by without `--sort`;
//! `total` and `exclusive` are those columns; `name` is the path. A line
//! says how many each left out, and the footer still covers every
//! snapshot of the origin.
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
use super::options::{ReportOptions, SortKey};
use crate::figures::{Figure, Timestamp};
use crate::records::NodeId;
use crate::snapshot_layouts::Layout;
use crate::snapshots::{Group, OriginBy, Subvolume};
use crate::timefmt::TimeFormat;
use crate::tree::union::Frees;

/// The `--snapshots --json` document.
#[derive(Debug, Serialize)]
struct Document<'a> {
    /// Every subvolume printed: each origin, then its snapshots, oldest
    /// first unless `--sort`, `--top` or `--reverse` say otherwise.
    snapshots: Vec<Row<'a>>,
    /// Each origin: what deleting every snapshot of it frees, and how many
    /// of its snapshots `--top` or `--min-size` left out.
    origins: Vec<OriginJson<'a>>,
}

/// An origin's footer, in `--json`.
#[derive(Debug, Serialize)]
struct OriginJson<'a> {
    /// Its path (absent: not in the scan, or deleted).
    path: Option<Path<'a>>,
    uuid: String,
    /// How many snapshots it has in the scan.
    snapshots: usize,
    /// How many of them are not in `snapshots` (`--top`, `--min-size`).
    not_shown: usize,
    /// What deleting every one of them frees.
    frees_all: u64,
    frees_all_exact: bool,
    frees_all_bound: Option<BoundWord>,
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
/// any PATH is on Btrfs; if none, one line says so ([`not_btrfs`]).
pub(crate) fn write(
    out: &mut dyn Write,
    groups: &[Group],
    btrfs: bool,
    roots: &[Vec<u8>],
    opts: &ReportOptions,
) -> io::Result<()> {
    if !btrfs {
        let mut line = not_btrfs(roots);
        line.push(b'\n');
        return out.write_all(&line);
    }
    if opts.format == super::Format::Json {
        let mut rows = Vec::new();
        let mut origins = Vec::new();
        for g in groups {
            let origin = g.origin.as_ref().map(|o| &o.path[..]);
            let shown = select(g, opts);
            rows.extend(g.origin.iter().map(|o| row(o, None)));
            rows.extend(shown.rows.iter().map(|s| row(s, origin)));
            origins.push(OriginJson {
                path: origin.map(|o| Path(Cow::Borrowed(o))),
                uuid: uuid(&g.uuid),
                snapshots: g.snapshots.len(),
                not_shown: shown.small + shown.beyond,
                frees_all: g.all.bytes,
                frees_all_exact: g.all.bound.is_exact(),
                frees_all_bound: BoundWord::of(g.all.bound),
            });
        }
        let doc = Document {
            snapshots: rows,
            origins,
        };
        serde_json::to_writer(&mut *out, &doc).map_err(io::Error::from)?;
        return out.write_all(b"\n");
    }
    let end = if opts.null { b'\0' } else { b'\n' };
    for (_, mut line) in lines(groups, opts) {
        line.push(end);
        out.write_all(&line)?;
    }
    Ok(())
}

/// The one line said when no PATH is on Btrfs: `no snapshots: PATH is not
/// on Btrfs`.
pub(crate) fn not_btrfs(roots: &[Vec<u8>]) -> Vec<u8> {
    let mut line = b"no snapshots: ".to_vec();
    line.extend_from_slice(&roots.join(&b' '));
    line.extend_from_slice(b" is not on Btrfs");
    line
}

/// One origin's snapshots as `--sort`, `--top`, `--min-size` and
/// `--reverse` choose them, and how many each left out.
struct Shown<'g> {
    /// The snapshots to print, in order.
    rows: Vec<&'g Subvolume>,
    /// Left out by `--min-size` (or `--threshold`).
    small: usize,
    /// Left out by `--top`.
    beyond: usize,
}

/// The figure `--top` and `--min-size` go by: the `--sort` figure, else
/// Frees alone (what `reclaimable` names here).
fn rank(opts: &ReportOptions) -> Figure {
    match opts.sort {
        Some(SortKey::Size(f)) => f,
        _ => Figure::Reclaimable,
    }
}

/// `f` of a subvolume: Reclaimable is what deleting it alone frees; the
/// others are its figures in the scan (Total and Exclusive are columns).
fn value(s: &Subvolume, f: Figure) -> u64 {
    match f {
        Figure::Reclaimable => s.alone.bytes,
        f => f.of(&s.figures),
    }
}

/// The column (or figure) `f` names in the table's words.
fn column(f: Figure) -> &'static str {
    match f {
        Figure::Reclaimable => "Frees alone",
        f => f.header(),
    }
}

/// The snapshots of `g` to print, chosen as the other reports choose
/// entries, within the origin: `--min-size` drops those whose rank figure
/// ([`rank`]) is smaller, `--top N` keeps the N largest by it; they are
/// listed by `--sort`, else largest first with `--top`, else oldest
/// first; `--reverse` turns the list round. The origin's own row is
/// always printed, as its heading.
fn select<'g>(g: &'g Group, opts: &ReportOptions) -> Shown<'g> {
    let f = rank(opts);
    let mut rows: Vec<&Subvolume> = g
        .snapshots
        .iter()
        .filter(|s| opts.shown(value(s, f)))
        .collect();
    let small = g.snapshots.len() - rows.len();
    // Largest first; ties oldest first, as the snapshots are kept.
    let by_rank = |a: &&Subvolume, b: &&Subvolume| value(b, f).cmp(&value(a, f));
    let mut beyond = 0;
    if let Some(n) = opts.top {
        rows.sort_by(by_rank);
        beyond = rows.len().saturating_sub(n);
        rows.truncate(n);
    }
    match opts.sort {
        Some(SortKey::Name) => rows.sort_by(|a, b| a.path.cmp(&b.path)),
        Some(SortKey::Size(_)) => rows.sort_by(by_rank),
        None => {}
    }
    if opts.reverse {
        rows.reverse();
    }
    Shown {
        rows,
        small,
        beyond,
    }
}

/// The table's lines, without their ends: the header (unless `opts` says
/// none), then for each origin its row, its snapshots' rows ([`select`]),
/// a line for those left out and a footer over every snapshot of it. A
/// subvolume's row comes with its node.
pub(crate) fn lines(groups: &[Group], opts: &ReportOptions) -> Vec<(Option<NodeId>, Vec<u8>)> {
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
    /// The cells of a row, or a line of its own (no cells).
    type Cells = (Option<NodeId>, [String; 6], Vec<u8>, Option<String>);
    let mut cells: Vec<Cells> = Vec::new();
    let f = rank(opts);
    for g in groups {
        let shown = select(g, opts);
        for s in g.origin.iter().chain(shown.rows.iter().copied()) {
            let mut created = String::new();
            time.write(
                Timestamp {
                    secs: s.created.secs,
                    nanos: s.created.nanos,
                },
                &mut created,
            );
            cells.push((
                Some(s.node),
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
        let snapshots = |n: usize| format!("{n} snapshot{}", if n == 1 { "" } else { "s" });
        let mut left_out = Vec::new();
        if shown.small > 0 {
            left_out.push(match opts.min_size {
                Some(m) => format!(
                    "  {} not shown: {} under {}",
                    snapshots(shown.small),
                    column(f),
                    plain(m)
                ),
                None => format!("  {} not shown: --threshold", snapshots(shown.small)),
            });
        }
        if shown.beyond > 0 {
            left_out.push(format!(
                "  {} not shown: beyond --top {}",
                snapshots(shown.beyond),
                opts.top.unwrap_or(0)
            ));
        }
        for l in left_out {
            cells.push((None, Default::default(), l.into_bytes(), None));
        }
        if !g.snapshots.is_empty() {
            let mut what = format!("  every snapshot ({}) frees ", g.snapshots.len());
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
            cells.push((None, Default::default(), what.into_bytes(), None));
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
    for (_, c, _, _) in &cells {
        for i in 0..6 {
            w[i] = w[i].max(chars(&c[i]));
        }
    }
    let mut out = Vec::new();
    if opts.header && !opts.null {
        let mut line = format!("{:<w0$}", heads[0], w0 = w[0]);
        for i in 1..5 {
            line.push_str(&format!("  {:>wi$}", heads[i], wi = w[i]));
        }
        line.push_str(&format!("  {:<w5$}  Path", heads[5], w5 = w[5]));
        out.push((None, line.into_bytes()));
    }
    for (id, c, path, note) in cells {
        if c[0].is_empty() {
            out.push((id, path));
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
        out.push((id, line));
    }
    out
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
