//! `--html FILE`: one self-contained page, a zoomable squarified treemap
//! of the scan. The page fetches nothing: its style, its script
//! (`treemap.js`, built into the binary) and its data are all inline.
//!
//! The layout is computed here ([`super::squarify`]); the script only
//! draws, zooms and explains. Each drawn entry's rectangle is given in its
//! parent's frame: the [`FRAME_W`] × [`FRAME_H`] rectangle the parent fills
//! when the page is zoomed into it, so that zooming shows a directory's
//! entries as squarely as the root's. Drawn inside a smaller rectangle, a
//! frame is scaled to it, which keeps every area proportional.
//!
//! Size: the largest entries (by Total) are drawn, down to [`MIN_AREA`]
//! in their parent's frame and at most [`BUDGET`] of them; what a
//! directory holds beyond its drawn entries (the smaller entries and its
//! own blocks) is one rectangle, "other", so the page stays small however
//! many entries the tree has (docs/decisions.md, "Small choices").
//!
//! The data is one JSON document in a `<script type="application/json">`
//! element: every `<`, `>` and `&` in it is written `\u003c`, `\u003e`,
//! `\u0026`, so that no name can end the element (`</script>`) or open a
//! comment; a name that is not UTF-8, or holds a control character, is
//! shown as ls quotes it (`$'\n'`). Its layout ([`write_data`]):
//!
//! ```text
//! {"sdu":1,"w":960,"h":600,"multi":false,"title":"srv","old":false,
//!  "entries":N,"drawn":M,
//!  "e":[[parent,name,kind,total,exclusive,shared,reclaimable,bound,x,y,w,h],...]}
//! ```
//!
//! `entries` is how many entries the scan reported, `drawn` how many of
//! them the page holds. `e` lists the drawn entries parents first;
//! `parent` is an index into `e` (-1 for the top: the root, or with
//! several roots, `"multi":true`, a rectangle holding them all). `kind`: 0 a directory, 1 a file, 2 a symlink, 3
//! another kind of file, 4 "other" (its `name` is then the number of
//! entries it stands for, and only its Total is known: the other figures
//! are 0). `bound`: 1 when deleting may free less than Reclaimable, 2 more,
//! 3 either. `x y w h`: the rectangle in the parent's frame, in tenths of
//! a pixel. With an earlier scan to compare with (`"old":true`), each
//! entry has a 13th field: its Total then, or `null` if it was not there;
//! the page then offers to colour by growth.

use std::io::{self, Write};

use super::options::ReportOptions;
use super::select::{NO_PARENT, Rows};
use super::squarify::{Rect, squarify};
use crate::figures::{Kind, Stats};
use crate::records::NodeId;
use crate::tree::Tree;

/// The frame's width and height, in pixels.
pub(crate) const FRAME_W: u32 = 960;
/// See [`FRAME_W`].
pub(crate) const FRAME_H: u32 = 600;
/// The most entries drawn.
const BUDGET: usize = 12_000;
/// The smallest area an entry is drawn with, in square pixels of its
/// parent's frame: smaller ones go into the parent's "other".
const MIN_AREA: f64 = 12.0;
/// Coordinates are written in tenths of a pixel.
const UNITS: f64 = 10.0;

/// The page's template, style included.
const TEMPLATE: &str = include_str!("treemap.html");
/// The page's script: draws, zooms, explains.
const SCRIPT: &str = include_str!("treemap.js");

/// The Total an earlier scan had for a node of the tree drawn (`None`: it
/// did not have the entry), for the page's growth colouring.
pub(crate) type OldTotal<'a> = &'a dyn Fn(NodeId) -> Option<u64>;

/// One rectangle of the page.
struct Tile {
    /// The row it shows (`None`: the top of several roots, or "other").
    row: Option<u32>,
    /// "other": how many entries it stands for.
    other: Option<u64>,
    total: u64,
    /// Its rectangle in its parent's frame, in [`UNITS`].
    rect: [i64; 4],
    parent: i64,
}

/// Writes the page of `tree`: the entries `opts.max_depth` reaches,
/// `title` in its heading, `old` the earlier scan to compare with.
pub(super) fn write(
    out: &mut dyn Write,
    tree: &Tree,
    opts: &ReportOptions,
    title: &[u8],
    old: Option<OldTotal<'_>>,
) -> io::Result<()> {
    let rows = Rows::collect(tree, opts.max_depth);
    let items = layout(&rows);
    let mut data = Vec::with_capacity(items.len() * 96 + 256);
    write_data(&mut data, &rows, &items, title, old, tree);
    let mut page = Vec::with_capacity(data.len() + TEMPLATE.len() + SCRIPT.len());
    let mut t = TEMPLATE;
    for (marker, what) in [
        ("@TITLE@", Part::Title),
        ("@DATA@", Part::Data),
        ("@SCRIPT@", Part::Script),
    ] {
        let at = t.find(marker).expect("the template holds every marker");
        page.extend_from_slice(&t.as_bytes()[..at]);
        match what {
            Part::Title => html_text(&display(title), &mut page),
            Part::Data => page.extend_from_slice(&data),
            Part::Script => page.extend_from_slice(SCRIPT.as_bytes()),
        }
        t = &t[at + marker.len()..];
    }
    page.extend_from_slice(t.as_bytes());
    out.write_all(&page)
}

enum Part {
    Title,
    Data,
    Script,
}

/// The rows' children, each list largest first.
fn children(rows: &Rows) -> (Vec<Vec<u32>>, Vec<u32>) {
    let mut kids: Vec<Vec<u32>> = vec![Vec::new(); rows.len()];
    let mut roots = Vec::new();
    for i in 0..rows.len() as u32 {
        match rows.row(i).parent {
            NO_PARENT => roots.push(i),
            p => kids[p as usize].push(i),
        }
    }
    let total = |i: &u32| std::cmp::Reverse(rows.row(*i).figures.total);
    for k in &mut kids {
        k.sort_by_key(total);
    }
    (kids, roots)
}

/// Which rows are drawn, and where: the items, parents first.
fn layout(rows: &Rows) -> Vec<Tile> {
    let (kids, roots) = children(rows);
    // The top: the one root, or all of them in a rectangle of their own.
    let top_total: u64 = roots
        .iter()
        .map(|&r| rows.row(r).figures.total)
        .fold(0, u64::saturating_add);
    // Largest first, parents before their children (a parent's Total is
    // at least its child's; ties go by depth): a row is drawn when its
    // parent is, its share of the parent's frame is at least MIN_AREA,
    // and the budget is not spent.
    let mut order: Vec<u32> = (0..rows.len() as u32)
        .filter(|&i| rows.row(i).figures.total > 0)
        .collect();
    order.sort_by_key(|&i| {
        let r = rows.row(i);
        (std::cmp::Reverse(r.figures.total), r.depth, i)
    });
    let mut drawn = vec![false; rows.len()];
    let frame_area = f64::from(FRAME_W) * f64::from(FRAME_H);
    let single = roots.len() == 1;
    let mut count = 0;
    for &i in &order {
        if count >= BUDGET {
            break;
        }
        let r = rows.row(i);
        let (parent_drawn, parent_total) = match r.parent {
            NO_PARENT if single => (true, r.figures.total),
            NO_PARENT => (true, top_total),
            p => (drawn[p as usize], rows.row(p).figures.total),
        };
        let area = r.figures.total as f64 / parent_total.max(1) as f64 * frame_area;
        if parent_drawn && (area >= MIN_AREA || (single && r.parent == NO_PARENT)) {
            drawn[i as usize] = true;
            count += 1;
        }
    }
    let full = [
        0,
        0,
        i64::from(FRAME_W) * UNITS as i64,
        i64::from(FRAME_H) * UNITS as i64,
    ];
    let mut items = Vec::with_capacity(count + 1);
    // (item, its rows' children to lay out) in pre-order.
    let mut stack: Vec<(usize, Vec<u32>, u64)> = Vec::new();
    if single {
        let r = roots[0];
        items.push(Tile {
            row: Some(r),
            other: None,
            total: rows.row(r).figures.total,
            rect: full,
            parent: -1,
        });
        stack.push((0, kids[r as usize].clone(), rows.row(r).figures.total));
    } else {
        items.push(Tile {
            row: None,
            other: None,
            total: top_total,
            rect: full,
            parent: -1,
        });
        let mut r = roots.clone();
        r.sort_by_key(|&i| std::cmp::Reverse(rows.row(i).figures.total));
        stack.push((0, r, top_total));
    }
    while let Some((at, list, total)) = stack.pop() {
        let shown: Vec<u32> = list
            .iter()
            .copied()
            .filter(|&c| drawn[c as usize])
            .collect();
        if shown.is_empty() {
            continue;
        }
        let sum: u64 = shown
            .iter()
            .map(|&c| rows.row(c).figures.total)
            .fold(0, u64::saturating_add);
        let rest = total.saturating_sub(sum);
        let hidden = (list.len() - shown.len()) as u64;
        // The rectangles, largest first, "other" among them by its size.
        let mut sizes: Vec<(u64, Option<u32>)> = shown
            .iter()
            .map(|&c| (rows.row(c).figures.total, Some(c)))
            .collect();
        if rest > 0 {
            sizes.push((rest, None));
        }
        sizes.sort_by_key(|s| std::cmp::Reverse(s.0));
        let totals: Vec<u64> = sizes.iter().map(|s| s.0).collect();
        let frame = Rect {
            x: 0.0,
            y: 0.0,
            w: f64::from(FRAME_W),
            h: f64::from(FRAME_H),
        };
        let rects = squarify(&totals, frame);
        let first = items.len();
        for ((size, row), r) in sizes.iter().zip(&rects) {
            items.push(Tile {
                row: *row,
                other: row.is_none().then_some(hidden),
                total: *size,
                rect: units(r),
                parent: at as i64,
            });
        }
        // Children's children next, the first child's on top of the stack.
        for k in (first..items.len()).rev() {
            if let Some(row) = items[k].row {
                stack.push((k, kids[row as usize].clone(), items[k].total));
            }
        }
    }
    items
}

/// A rectangle in [`UNITS`], its edges rounded (so that neighbours still
/// touch).
fn units(r: &Rect) -> [i64; 4] {
    let u = |v: f64| (v * UNITS).round() as i64;
    let (x0, y0, x1, y1) = (u(r.x), u(r.y), u(r.x + r.w), u(r.y + r.h));
    [x0, y0, x1 - x0, y1 - y0]
}

/// Writes the page's JSON document.
fn write_data(
    out: &mut Vec<u8>,
    rows: &Rows,
    items: &[Tile],
    title: &[u8],
    old: Option<OldTotal<'_>>,
    tree: &Tree,
) {
    let multi = items.first().is_some_and(|i| i.row.is_none());
    out.extend_from_slice(
        format!("{{\"sdu\":1,\"w\":{FRAME_W},\"h\":{FRAME_H},\"multi\":{multi},\"title\":")
            .as_bytes(),
    );
    json_str(&display(title), out);
    out.extend_from_slice(
        format!(
            ",\"old\":{},\"entries\":{},\"drawn\":{},\"e\":[",
            old.is_some(),
            rows.len(),
            items.iter().filter(|i| i.other.is_none()).count()
        )
        .as_bytes(),
    );
    for (n, it) in items.iter().enumerate() {
        if n > 0 {
            out.extend_from_slice(b",\n");
        }
        out.extend_from_slice(format!("[{},", it.parent).as_bytes());
        // `asked`: the row the earlier scan is asked about.
        let (kind, figures, bound, asked) = match (it.row, it.other) {
            (_, Some(hidden)) => {
                out.extend_from_slice(hidden.to_string().as_bytes());
                (4, Stats::default(), 0, None)
            }
            (Some(r), None) => {
                let row = rows.row(r);
                json_str(&display(rows.name(r)), out);
                let b = u8::from(row.bound.at_most()) | (u8::from(row.bound.at_least()) << 1);
                (kind_code(row.kind), row.figures, b, Some(r))
            }
            (None, None) => {
                json_str("all PATHs", out);
                let b = tree.grand_bound();
                let b = u8::from(b.at_most()) | (u8::from(b.at_least()) << 1);
                (0, *tree.grand_total(), b, None)
            }
        };
        let [x, y, w, h] = it.rect;
        out.extend_from_slice(
            format!(
                ",{kind},{},{},{},{},{bound},{x},{y},{w},{h}",
                it.total, figures.exclusive, figures.shared, figures.reclaimable
            )
            .as_bytes(),
        );
        if let Some(old) = old {
            match asked.and_then(|r| old(rows.row(r).id)) {
                Some(t) => out.extend_from_slice(format!(",{t}").as_bytes()),
                None => out.extend_from_slice(b",null"),
            }
        }
        out.push(b']');
    }
    out.extend_from_slice(b"]}");
}

/// The page's code for a kind of entry.
fn kind_code(k: Kind) -> u8 {
    match k {
        Kind::Dir => 0,
        Kind::File => 1,
        Kind::Symlink => 2,
        Kind::Other => 3,
    }
}

/// A name as the page shows it: as it is when it is UTF-8 without a
/// control character, else quoted as ls quotes it (`$'\377'`).
fn display(name: &[u8]) -> String {
    match std::str::from_utf8(name) {
        Ok(s) if !s.chars().any(char::is_control) => s.to_owned(),
        _ => {
            let mut q = Vec::new();
            crate::quote::shell_escape(name, &mut q);
            String::from_utf8_lossy(&q).into_owned()
        }
    }
}

/// `s` as a JSON string that is safe inside a `<script>` element: `<`,
/// `>` and `&` escaped, and U+2028 and U+2029, which some JavaScript
/// parsers take for line ends.
fn json_str(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' | '\0'..='\u{1f}' | '\u{7f}' => {
                out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes());
            }
            c => {
                let mut b = [0; 4];
                out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            }
        }
    }
    out.push(b'"');
}

/// `s` as HTML text (element content or a quoted attribute).
fn html_text(s: &str, out: &mut Vec<u8>) {
    for c in s.chars() {
        match c {
            '&' => out.extend_from_slice(b"&amp;"),
            '<' => out.extend_from_slice(b"&lt;"),
            '>' => out.extend_from_slice(b"&gt;"),
            '"' => out.extend_from_slice(b"&quot;"),
            '\'' => out.extend_from_slice(b"&#39;"),
            c => {
                let mut b = [0; 4];
                out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::extents::Sweep;
    use crate::figures::Kind;
    use crate::probe::Granularity;
    use crate::records::{NodeId, NodeRec};

    /// top -> r -> {a -> c, b}, each directory holding `own` bytes.
    fn tree() -> Tree {
        let rec = |id: usize, parent: usize, depth, name: &str, own| NodeRec {
            order: 0,
            id: NodeId::new(id),
            parent: if id == 0 {
                NodeId::NONE
            } else {
                NodeId::new(parent)
            },
            depth,
            kind: Kind::Dir,
            leaf: false,
            name: name.as_bytes().into(),
            own: Stats {
                total: own,
                exclusive: own,
                reclaimable: own,
                ..Stats::default()
            },
        };
        let nodes = vec![
            rec(0, 0, 0, "", 0),
            rec(1, 0, 0, "r", 4096),
            rec(2, 1, 1, "a", 40960),
            rec(3, 1, 1, "b", 409600),
            rec(4, 2, 2, "c", 4096000),
        ];
        Tree::build(nodes, vec![], &[], &Sweep::default(), |_| {
            Granularity::Block
        })
    }

    fn data(page: &[u8]) -> serde_json::Value {
        let text = std::str::from_utf8(page).unwrap();
        let open = r#"id="sdu-data">"#;
        let start = text.find(open).unwrap() + open.len();
        let end = start + text[start..].find("</script>").unwrap();
        serde_json::from_str(&text[start..end]).unwrap()
    }

    #[test]
    fn an_earlier_total_per_entry_when_given() {
        let t = tree();
        let opts = ReportOptions::default();
        let mut page = Vec::new();
        write(&mut page, &t, &opts, b"r", None).unwrap();
        let d = data(&page);
        assert_eq!(d["old"], false);
        let e = d["e"].as_array().unwrap();
        assert!(e.iter().all(|e| e.as_array().unwrap().len() == 12), "{e:?}");
        // r, a, b, c, and the "other" of r and of a (their own blocks);
        // b and c hold nothing drawn.
        assert_eq!(e.len(), 6, "{e:?}");
        // b was not there before; the rest had half their Total.
        let old = |id: NodeId| (t.name(id) != b"b").then(|| t.figures(t.roots()[0]).total / 2);
        let mut page = Vec::new();
        write(&mut page, &t, &opts, b"r", Some(&old)).unwrap();
        let d = data(&page);
        assert_eq!(d["old"], true);
        for e in d["e"].as_array().unwrap() {
            let e = e.as_array().unwrap();
            assert_eq!(e.len(), 13, "{e:?}");
            let want = match (e[1].as_str(), e[2].as_u64()) {
                (Some("b"), _) | (_, Some(4)) => serde_json::Value::Null,
                _ => (4550656 / 2).into(),
            };
            assert_eq!(e[12], want, "{e:?}");
        }
    }

    #[test]
    fn names_cannot_end_the_script_element() {
        let mut v = Vec::new();
        json_str("</script><!-- \"a\"\\\n\u{2028}é", &mut v);
        let s = String::from_utf8(v).unwrap();
        assert_eq!(s, r#""\u003c/script\u003e\u003c!-- \"a\"\\\u000a\u2028é""#);
        let back: String = serde_json::from_str(&s).unwrap();
        assert_eq!(back, "</script><!-- \"a\"\\\n\u{2028}é");
    }

    #[test]
    fn names_shown() {
        assert_eq!(display(b"plain name"), "plain name");
        assert_eq!(display(b"a\nb"), "'a'$'\\n''b'");
        assert_eq!(display(b"\xff"), "''$'\\377'");
        let mut v = Vec::new();
        html_text("<b>'&\"", &mut v);
        assert_eq!(v, b"&lt;b&gt;&#39;&amp;&quot;");
    }

    #[test]
    fn the_script_and_the_template_fetch_nothing() {
        for text in [SCRIPT, TEMPLATE] {
            let t = text.to_lowercase();
            for bad in [
                "http:", "https:", "//", "src=", "@import", "url(http", "fetch(",
            ] {
                let hits: Vec<&str> = t
                    .lines()
                    .filter(|l| l.contains(bad) && !l.trim_start().starts_with("//"))
                    .collect();
                assert!(hits.is_empty(), "{bad}: {hits:?}");
            }
        }
        assert!(!SCRIPT.contains("</script"), "the script ends its element");
        for m in ["@TITLE@", "@DATA@", "@SCRIPT@"] {
            assert_eq!(TEMPLATE.matches(m).count(), 1, "{m}");
            assert!(!SCRIPT.contains(m));
        }
    }
}
