//! `--html FILE`: one self-contained page, a zoomable squarified treemap
//! of the scan. The page fetches nothing: its style, its script
//! (`treemap.js`, built into the binary) and its data are all inline.
//!
//! The layout is computed here ([`layout`], with [`super::squarify`]), once
//! for each area the page offers: Total, the space on disk (Exclusive +
//! Shared) and Reclaimable; the script only draws, zooms, switches areas
//! and explains. Each drawn entry's rectangle is given in its parent's
//! frame: the 960 × 600 rectangle the parent fills when the page is zoomed
//! into it, so that zooming shows a directory's entries as squarely as the
//! root's. Drawn inside a smaller rectangle, a frame is scaled to it,
//! which keeps every area proportional.
//!
//! Size: in each area the largest entries are drawn, down to 12 square
//! pixels of their parent's frame and at most 12,000 of them; what a
//! directory holds beyond its drawn entries (the smaller entries and its
//! own blocks) is one rectangle, its rest, so the page stays small however
//! many entries the tree has (docs/decisions.md, "Small choices"). The page
//! is streamed: sdu holds its layout, never the page.
//!
//! The data is one JSON document in a `<script type="application/json">`
//! element: every `<`, `>` and `&` in it is written `\u003c`, `\u003e`,
//! `\u0026`, so that no name can end the element (`</script>`) or open a
//! comment; a name that is not UTF-8, or holds a control character, is
//! shown as ls quotes it (`$'\n'`). Its layout ([`write_data`]):
//!
//! ```text
//! {"sdu":2,"w":960,"h":600,"multi":false,"title":"srv","old":false,
//!  "areas":["total","disk","reclaimable"],"area":1,"entries":N,"drawn":M,
//!  "e":[[parent,name,kind,total,exclusive,shared,reclaimable,bound,P0,P1,P2],...]}
//! ```
//!
//! `areas` names the three areas, `area` the one the page opens with
//! (`--html-area`). `entries` is how many entries the scan reported,
//! `drawn` how many of them the page holds. `e` lists the items parents
//! first; `parent` is an index into `e` (-1 for the top: the root, or with
//! several roots, `"multi":true`, a rectangle holding them all). `kind`: 0
//! a directory, 1 a file, 2 a symlink, 3 another kind of file, 4 a rest
//! (its `name` is `null` and its figures are 0: it is no entry). `bound`: 1
//! when deleting may free less than Reclaimable, 2 more, 3 either. `P0 P1
//! P2`: where the item is drawn in each area of `areas`, `0` when it is not
//! drawn there, `1` when drawn as in the area before, else
//! `[x,y,w,h,size]`: the rectangle in the parent's frame, in tenths of a
//! pixel, and the item's size in that area; a rest's has a sixth number,
//! how many of its directory's entries it stands for. With an
//! earlier scan to compare with (`"old":true`), each item has a 12th field:
//! its Total then, or `null` if it was not there; the page then offers to
//! colour by growth.

use std::io::{self, BufWriter, Write};

use super::options::ReportOptions;
use crate::figures::{Bound, Figure, Kind, Stats};
use crate::records::NodeId;
use crate::tree::Tree;

mod layout;

use layout::{Area, FRAME_H, FRAME_W, Layout, Place};

/// The page's template, style included.
const TEMPLATE: &str = include_str!("treemap.html");
/// The page's script: draws, zooms, explains.
const SCRIPT: &str = include_str!("treemap.js");

/// The Total an earlier scan had for a node of the tree drawn (`None`: it
/// did not have the entry), for the page's growth colouring.
pub(crate) type OldTotal<'a> = &'a dyn Fn(NodeId) -> Option<u64>;

/// The area the page opens with: `--html-area`'s figure (Total or
/// Reclaimable), else the space on disk.
fn first_area(opts: &ReportOptions) -> Area {
    match opts.html_area {
        Some(Figure::Total) => Area::Total,
        Some(Figure::Reclaimable) => Area::Reclaimable,
        _ => Area::Disk,
    }
}

/// Writes the page of `tree`: the entries `opts.max_depth` reaches,
/// `title` in its heading, `old` the earlier scan to compare with. The
/// page is streamed to `out`: what it holds is the layout, a few
/// thousand entries, however many the scan has.
pub(super) fn write(
    out: &mut dyn Write,
    tree: &Tree,
    opts: &ReportOptions,
    title: &[u8],
    old: Option<OldTotal<'_>>,
) -> io::Result<()> {
    let lay = layout::layout(tree, opts.max_depth);
    let mut out = BufWriter::with_capacity(1 << 16, out);
    let mut t = TEMPLATE;
    for marker in ["@TITLE@", "@DATA@", "@SCRIPT@"] {
        let at = t.find(marker).expect("the template holds every marker");
        out.write_all(&t.as_bytes()[..at])?;
        match marker {
            "@TITLE@" => {
                let mut v = Vec::new();
                html_text(&display(title), &mut v);
                out.write_all(&v)?;
            }
            "@DATA@" => write_data(&mut out, &lay, tree, title, first_area(opts), old)?,
            _ => out.write_all(SCRIPT.as_bytes())?,
        }
        t = &t[at + marker.len()..];
    }
    out.write_all(t.as_bytes())?;
    out.flush()
}

/// A bound as the page codes it: 1 at most, 2 at least, 3 either.
fn bound_code(b: Bound) -> u8 {
    u8::from(b.at_most()) | (u8::from(b.at_least()) << 1)
}

/// Writes the page's JSON document.
fn write_data(
    out: &mut dyn Write,
    lay: &Layout,
    tree: &Tree,
    title: &[u8],
    area: Area,
    old: Option<OldTotal<'_>>,
) -> io::Result<()> {
    let multi = lay.items[0].node == Some(NodeId::TOP);
    let mut line = Vec::with_capacity(256);
    line.extend_from_slice(
        format!("{{\"sdu\":2,\"w\":{FRAME_W},\"h\":{FRAME_H},\"multi\":{multi},\"title\":")
            .as_bytes(),
    );
    json_str(&display(title), &mut line);
    let areas = Area::ALL.map(|a| format!("\"{}\"", a.name())).join(",");
    let drawn = lay
        .items
        .iter()
        .filter(|i| i.node.is_some_and(|n| n != NodeId::TOP))
        .count();
    line.extend_from_slice(
        format!(
            ",\"old\":{},\"areas\":[{areas}],\"area\":{},\"entries\":{},\"drawn\":{drawn},\"e\":[",
            old.is_some(),
            area as u8,
            lay.entries,
        )
        .as_bytes(),
    );
    out.write_all(&line)?;
    for (n, it) in lay.items.iter().enumerate() {
        line.clear();
        if n > 0 {
            line.extend_from_slice(b",\n");
        }
        let parent = if it.parent == u32::MAX {
            -1
        } else {
            i64::from(it.parent)
        };
        line.extend_from_slice(format!("[{parent},").as_bytes());
        let (kind, figures, bound) = match it.node {
            None => {
                line.extend_from_slice(b"null");
                (4, Stats::default(), 0)
            }
            Some(NodeId::TOP) => {
                json_str("all PATHs", &mut line);
                (0, *tree.grand_total(), bound_code(tree.grand_bound()))
            }
            Some(id) => {
                json_str(&display(tree.name(id)), &mut line);
                (
                    kind_code(tree.kind(id)),
                    tree.figures(id),
                    bound_code(tree.bound(id)),
                )
            }
        };
        line.extend_from_slice(
            format!(
                ",{kind},{},{},{},{},{bound}",
                figures.total, figures.exclusive, figures.shared, figures.reclaimable
            )
            .as_bytes(),
        );
        for (a, p) in it.place.iter().enumerate() {
            match p {
                None => line.extend_from_slice(b",0"),
                Some(_) if a > 0 && it.place[a - 1] == *p => line.extend_from_slice(b",1"),
                Some(Place {
                    rect: [x, y, w, h],
                    size,
                    hidden,
                }) => {
                    line.extend_from_slice(format!(",[{x},{y},{w},{h},{size}").as_bytes());
                    if it.node.is_none() {
                        line.extend_from_slice(format!(",{hidden}").as_bytes());
                    }
                    line.push(b']');
                }
            }
        }
        if let Some(old) = old {
            match it.node.filter(|&n| n != NodeId::TOP).and_then(old) {
                Some(t) => line.extend_from_slice(format!(",{t}").as_bytes()),
                None => line.extend_from_slice(b",null"),
            }
        }
        line.push(b']');
        out.write_all(&line)?;
    }
    out.write_all(b"]}")
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
        assert!(e.iter().all(|e| e.as_array().unwrap().len() == 11), "{e:?}");
        // r, a, b, c, and the rest of r and of a (their own blocks); b
        // and c hold nothing drawn.
        assert_eq!(e.len(), 6, "{e:?}");
        // Without sharing the three areas agree: each item is drawn alike
        // in all three, written once.
        for e in e {
            assert!(e[8].is_array(), "{e:?}");
            assert_eq!((&e[9], &e[10]), (&1.into(), &1.into()), "{e:?}");
        }
        // b was not there before; the rest had half their Total.
        let old = |id: NodeId| (t.name(id) != b"b").then(|| t.figures(t.roots()[0]).total / 2);
        let mut page = Vec::new();
        write(&mut page, &t, &opts, b"r", Some(&old)).unwrap();
        let d = data(&page);
        assert_eq!(d["old"], true);
        for e in d["e"].as_array().unwrap() {
            let e = e.as_array().unwrap();
            assert_eq!(e.len(), 12, "{e:?}");
            let want = match (e[1].as_str(), e[2].as_u64()) {
                (Some("b"), _) | (_, Some(4)) => serde_json::Value::Null,
                _ => (4550656 / 2).into(),
            };
            assert_eq!(e[11], want, "{e:?}");
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
