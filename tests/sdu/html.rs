//! `--html FILE`: the page read back with a parser (its data, its
//! references, its rectangles against `--json`'s figures), and used in a
//! real browser (headless Chromium through selenium, tests/sdu/html_browser.py)
//! on a tree of reflink copies on XFS. With `SDU_SCREENSHOT=PATH` the
//! browser test also writes its screenshot to PATH (relative to the
//! project): that is the README's picture.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::args;
use crate::util::*;

/// The frame an entry's rectangle is given in, in tenths of a pixel.
const FW: f64 = 9600.0;
const FH: f64 = 6000.0;

/// The page's three areas, in the order of its `areas`.
const AREAS: [&str; 3] = ["total", "disk", "reclaimable"];

/// Where an item is drawn in one area.
#[derive(Debug, Clone, PartialEq)]
struct Place {
    rect: [f64; 4],
    size: u64,
    /// A rest's: how many entries it stands for.
    hidden: Option<u64>,
}

/// One item of the page's data.
#[derive(Debug, Clone)]
struct Cell {
    parent: i64,
    name: Value,
    kind: u64,
    figures: [u64; 4],
    place: [Option<Place>; 3],
}

impl Cell {
    /// Its size in area `a` by its figures: Total, Exclusive + Shared,
    /// Reclaimable.
    fn size_in(&self, a: usize) -> u64 {
        let [t, e, s, r] = self.figures;
        [t, e + s, r][a]
    }
}

/// The page's data: the JSON document in its `sdu-data` element.
fn data(page: &[u8]) -> (Value, Vec<Cell>) {
    let text = std::str::from_utf8(page).expect("the page is UTF-8");
    let open = r#"<script type="application/json" id="sdu-data">"#;
    assert_eq!(text.matches(open).count(), 1);
    let start = text.find(open).unwrap() + open.len();
    // The element ends at the first `</script`, as an HTML parser ends it:
    // the document must be whole there.
    let end = start + text[start..].find("</script").unwrap();
    let doc: Value = serde_json::from_str(&text[start..end])
        .unwrap_or_else(|e| panic!("the data does not parse: {e}"));
    let cells = doc["e"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let n = |i: usize| e[i].as_u64().unwrap();
            Cell {
                parent: e[0].as_i64().unwrap(),
                name: e[1].clone(),
                kind: n(2),
                figures: [n(3), n(4), n(5), n(6)],
                place: [8, 9, 10].map(|mut i| {
                    // 1: as in the area before.
                    while i > 8 && e[i] == 1 {
                        i -= 1;
                    }
                    let p = e[i].as_array()?;
                    Some(Place {
                        rect: [0, 1, 2, 3].map(|k| p[k].as_f64().unwrap()),
                        size: p[4].as_u64().unwrap(),
                        hidden: p.get(5).map(|h| h.as_u64().unwrap()),
                    })
                }),
            }
        })
        .collect();
    (doc, cells)
}

/// Fails if the page refers to anything outside itself.
fn assert_self_contained(page: &[u8]) {
    let text = String::from_utf8_lossy(page).to_lowercase();
    for bad in [
        "http:", "https:", "src=", "href=", "@import", "<link", "<iframe", "ftp:",
    ] {
        assert!(!text.contains(bad), "the page holds {bad:?}");
    }
    // `url(` only for the page's own patterns.
    for (i, _) in text.match_indices("url(") {
        assert!(text[i..].starts_with("url(#"), "{}", &text[i..i + 40]);
    }
    // `//` only where a script comment line starts (never `//host`).
    for line in text.lines() {
        if let Some(i) = line.find("//") {
            assert!(line[..i].trim().is_empty(), "`//` in {line:?}");
        }
    }
}

/// The path of cell `i` as sdu prints it: the root as given, then names.
fn path_of(cells: &[Cell], i: usize, multi: bool) -> Option<String> {
    let mut parts = Vec::new();
    let mut n = i as i64;
    while n >= 0 && !(multi && n == 0) {
        let c = &cells[n as usize];
        parts.push(c.name.as_str()?.to_owned());
        n = c.parent;
    }
    parts.reverse();
    Some(parts.join("/"))
}

/// Checks the layout in area `a`: every rectangle inside its parent's (in
/// the frame and on the page), siblings apart, every area its size's share
/// of its directory's frame within a pixel, each entry's size its figure in
/// the area, and a directory's rectangles adding up to it, or to more with
/// no rest when its entries share data with each other.
fn assert_layout(cells: &[Cell], a: usize) {
    let mut abs = vec![[0.0, 0.0, 960.0, 600.0]; cells.len()];
    let mut kids: HashMap<i64, Vec<usize>> = HashMap::new();
    let top = cells[0].place[a].as_ref().expect("the top is drawn");
    assert_eq!(top.rect, [0.0, 0.0, FW, FH]);
    for (i, c) in cells.iter().enumerate().skip(1) {
        assert!(
            c.parent >= 0 && (c.parent as usize) < i,
            "{i}: parent {}",
            c.parent
        );
        let Some(place) = &c.place[a] else {
            continue;
        };
        assert!(
            cells[c.parent as usize].place[a].is_some(),
            "{c:?} is drawn in {} but its parent is not",
            AREAS[a]
        );
        if c.kind != 4 {
            assert_eq!(place.size, c.size_in(a), "{c:?} in {}", AREAS[a]);
        }
        kids.entry(c.parent).or_default().push(i);
        let [x, y, w, h] = place.rect;
        assert!(x >= 0.0 && y >= 0.0 && w >= 0.0 && h >= 0.0, "{c:?}");
        assert!(
            x + w <= FW && y + h <= FH,
            "{c:?} leaves its parent's frame"
        );
        let p = abs[c.parent as usize];
        let r = [
            p[0] + x / FW * p[2],
            p[1] + y / FH * p[3],
            w / FW * p[2],
            h / FH * p[3],
        ];
        let eps = 1e-6;
        assert!(
            r[0] >= p[0] - eps
                && r[1] >= p[1] - eps
                && r[0] + r[2] <= p[0] + p[2] + eps
                && r[1] + r[3] <= p[1] + p[3] + eps,
            "{c:?} at {r:?} is not inside its parent at {p:?}"
        );
        abs[i] = r;
    }
    for (&p, list) in &kids {
        let parent = cells[p as usize].place[a].as_ref().unwrap().size;
        let size = |i: usize| cells[i].place[a].as_ref().unwrap().size;
        let sum: u64 = list.iter().map(|&i| size(i)).sum();
        let rests = list.iter().filter(|&&i| cells[i].kind == 4).count();
        assert!(rests <= 1, "{rests} rests in {p}");
        assert!(
            sum == parent || (sum > parent && rests == 0),
            "the rectangles of {p} add up to {sum}, not {parent} ({})",
            AREAS[a]
        );
        for &i in list {
            // In pixels of the parent's frame: each side within a pixel.
            let [_, _, w, h] = cells[i].place[a].as_ref().unwrap().rect.map(|v| v / 10.0);
            let want = size(i) as f64 / sum as f64 * 960.0 * 600.0;
            let (lo, hi) = (
                (w - 1.0).max(0.0) * (h - 1.0).max(0.0),
                (w + 1.0) * (h + 1.0),
            );
            assert!(
                lo <= want && want <= hi,
                "{:?}: {w} x {h} px for an area of {want}",
                cells[i]
            );
        }
        for (k, &x) in list.iter().enumerate() {
            for &y in &list[k + 1..] {
                let (x, y) = (
                    cells[x].place[a].as_ref().unwrap().rect,
                    cells[y].place[a].as_ref().unwrap().rect,
                );
                let ox = (x[0] + x[2]).min(y[0] + y[2]) - x[0].max(y[0]);
                let oy = (x[1] + x[3]).min(y[1] + y[3]) - x[1].max(y[1]);
                assert!(ox <= 0.0 || oy <= 0.0, "{x:?} overlaps {y:?}");
            }
        }
    }
}

/// [`assert_layout`] in each area.
fn assert_layouts(cells: &[Cell]) {
    for a in 0..3 {
        assert_layout(cells, a);
    }
}

/// `sdu --json -a ARGS`, run in `dir`: each path's four figures.
fn json_figures(dir: &Path, args: &[&OsStr]) -> HashMap<String, [u64; 4]> {
    let out = run(Command::new(sdu_bin())
        .args(["--json", "-a"])
        .args(args)
        .current_dir(dir));
    assert_eq!(out.code, Some(0), "{out:?}");
    crate::json::parse(&out.stdout)
        .entries
        .iter()
        .filter_map(|e| {
            Some((
                e.path.to_str()?.to_owned(),
                [e.total, e.exclusive, e.shared, e.reclaimable],
            ))
        })
        .collect()
}

/// Writes the page of `args` to `dir/page.html`; its bytes.
fn page(dir: &Path, args: &[&OsStr]) -> Vec<u8> {
    let file = dir.join("page.html");
    let out = run(Command::new(sdu_bin())
        .arg("--html")
        .arg(&file)
        .args(args)
        .current_dir(dir));
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    fs::read(&file).unwrap()
}

/// A tree with names that could break a page: quotes, `<`, `&`, a
/// newline, bytes that are not UTF-8, and a root whose path holds
/// `</script>` (a directory `<` holding one named `script>…`); one large
/// directory of small files, which the page draws only in part.
#[test]
fn the_page_parses_refers_to_nothing_outside_and_lays_out_every_total() {
    let t = TestDir::new();
    let d = t.path();
    fs::create_dir_all(d.join("t/a/b")).unwrap();
    write_file(&d.join("t/a/big"), 300_000);
    write_file(&d.join("t/a/b/f"), 90_000);
    fs::create_dir_all(d.join("t/<")).unwrap();
    let hostile = "script><!--\"'&amp;\u{2028}";
    fs::create_dir(d.join("t/<").join(hostile)).unwrap();
    write_file(&d.join("t/<").join(hostile).join("q"), 40_000);
    write_file(&d.join("t/quote\"s and 'single' & <b>"), 30_000);
    write_file(&d.join("t/new\nline"), 20_000);
    write_file(&d.join(OsStr::from_bytes(b"t/not utf-8 \xff\xfe")), 25_000);
    fs::create_dir(d.join("t/many")).unwrap();
    for i in 0..400 {
        fs::write(d.join(format!("t/many/f{i}")), [b'x'; 100]).unwrap();
    }
    let root2 = format!("t/</{hostile}");
    let roots = [OsStr::new("t"), OsStr::new(&root2)];
    let html = page(d, &roots);
    assert_self_contained(&html);
    let text = String::from_utf8(html.clone()).unwrap();
    assert!(text.starts_with("<!DOCTYPE html>"));
    // The title is HTML text, the names inside the data escaped.
    assert!(text.contains("<title>sdu: t t/&lt;/script&gt;&lt;!--&quot;&#39;&amp;amp;"));
    let (doc, cells) = data(&html);
    assert_eq!(doc["multi"], Value::Bool(true));
    assert_eq!(doc["areas"], serde_json::json!(AREAS));
    // Space on disk unless --html-area says otherwise.
    assert_eq!(doc["area"], 1);
    assert_layouts(&cells);
    // Every drawn entry has sdu --json's figures.
    let want = json_figures(d, &roots);
    let mut seen = 0;
    for (i, c) in cells.iter().enumerate().skip(1) {
        if c.kind == 4 {
            continue;
        }
        let p = path_of(&cells, i, true).unwrap();
        if let Some(w) = want.get(&p) {
            assert_eq!(&c.figures, w, "{p}");
            seen += 1;
        }
    }
    assert!(seen >= 8, "only {seen} entries matched by path");
    let names: Vec<&str> = cells.iter().filter_map(|c| c.name.as_str()).collect();
    for n in [
        hostile,
        "quote\"s and 'single' & <b>",
        "'new'$'\\n''line'",
        "'not utf-8 '$'\\377\\376'",
    ] {
        assert!(names.contains(&n), "{n:?} not among {names:?}");
    }
    // What `many` holds beyond its drawn files (its own blocks) is one
    // rest, which is no entry.
    let many = cells.iter().position(|c| c.name == "many").unwrap();
    let others: Vec<&Cell> = cells
        .iter()
        .filter(|c| c.parent == many as i64 && c.kind == 4)
        .collect();
    assert_eq!(others.len(), 1, "{others:?}");
    assert_eq!(others[0].name, Value::Null);
}

/// Past the budget, the page stays small: 15,000 files in one directory
/// are drawn as at most 12,000 rectangles and one rest, which stands for
/// the files not drawn.
#[test]
fn a_wide_directory_is_drawn_down_to_the_budget() {
    let t = TestDir::new();
    let d = t.mkdir("w");
    for i in 0..15_000 {
        fs::write(d.join(format!("f{i:05}")), [b'x'; 100]).unwrap();
    }
    let html = page(t.path(), &[OsStr::new("w")]);
    let (doc, cells) = data(&html);
    assert_eq!(doc["entries"].as_u64(), Some(15_001));
    assert!(cells.len() <= 12_002, "{} cells", cells.len());
    let others: Vec<&Cell> = cells.iter().filter(|c| c.kind == 4).collect();
    assert_eq!(others.len(), 1);
    for (a, area) in AREAS.iter().enumerate() {
        let drawn = cells
            .iter()
            .filter(|c| c.kind == 1 && c.place[a].is_some())
            .count() as u64;
        assert!(drawn >= 11_000, "{drawn} drawn in {area}");
        assert_eq!(
            others[0].place[a].as_ref().unwrap().hidden,
            Some(15_000 - drawn),
            "{drawn} drawn in {area}"
        );
    }
    assert_layouts(&cells);
    assert!(html.len() < 2 << 20, "{} bytes", html.len());
}

/// The command line: `--html -` writes the page on stdout, a file that
/// cannot be created fails before the scan, the report's other formats
/// conflict, and a saved scan gives the page a walk gives.
#[test]
fn html_options() {
    let t = TestDir::new();
    let d = t.mkdir("d");
    write_file(&d.join("f"), 10_000);
    let out = sdu(&args!["--html", "-", &d]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(out.stdout.starts_with(b"<!DOCTYPE html>"));
    let out = sdu(&args!["--html", t.path().join("no/such/page.html"), &d]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr
            .contains("page.html: cannot create: No such file or directory"),
        "{out:?}"
    );
    for other in [
        &["--json"][..],
        &["--tree"],
        &["--du", "total"],
        &["-i"],
        &["--sort", "total"],
    ] {
        let mut a = args!["--html", t.path().join("x.html")];
        a.extend(other.iter().map(Into::into));
        a.push(d.clone().into());
        let out = sdu(&a);
        // du's status, 1, with --du.
        let want = if other[0] == "--du" { 1 } else { 2 };
        assert_eq!(out.code, Some(want), "{other:?}: {out:?}");
        assert!(out.stderr.contains("cannot be used with"), "{out:?}");
    }
    // --html-area: the area the page opens with; only with --html.
    for (area, want) in [("total", 0), ("disk", 1), ("reclaimable", 2)] {
        let out = sdu(&args!["--html", "-", "--html-area", area, &d]);
        assert_eq!(out.code, Some(0), "{out:?}");
        assert_eq!(data(&out.stdout).0["area"], want, "{area}");
    }
    let out = sdu(&args!["--html-area", "total", &d]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stderr.contains("--html"), "{out:?}");
    let out = sdu(&args!["--html", "-", "--html-area", "apparent", &d]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stderr.contains("disk, total, reclaimable"), "{out:?}");
    let saved = t.path().join("scan.json");
    assert_eq!(sdu(&args!["--export", &saved, &d]).code, Some(0));
    let walked = sdu(&args!["--html", "-", &d]).stdout;
    let read = sdu(&args!["--html", "-", "--import", &saved]).stdout;
    assert_eq!(data(&walked).0, data(&read).0);
}

/// A tree of reflink copies on XFS, as the README's: three images (two
/// clones of the first with some blocks rewritten), two backups of them
/// (reflink copies, one rewritten in part), an image and two copies of it
/// in a directory of their own, scratch data, logs (a small file and 2,000
/// empty ones, so that `logs` has a rest), a directory named `other`. In
/// Chromium (tests/sdu/html_browser.py): the tooltip of `srv/backups`
/// shows its `--json` figures, a click zooms into it, and the tooltip of
/// its largest entry shows that one's; in each area the rectangles of
/// `srv/backups` and `srv/builds` are as large as their figures say, to one
/// another; every part drawn lies inside the outline of the entry it
/// belongs to; the rest of `srv/logs` is labelled and styled as no name
/// of the page is.
#[test]
fn the_page_in_a_browser_on_reflinked_xfs() {
    if !is_root() {
        let _: Option<()> = unavailable("loopback XFS needs root");
        return;
    }
    let Some(fs) = LoopFs::new(FsKind::Xfs) else {
        return;
    };
    let root = fs.path().join("srv");
    let t = crate::util::Tree { root: &root };
    const M: u64 = 1 << 20;
    t.write("images/base.img", 24 * M);
    t.clone("images/base.img", "images/web.img");
    t.overwrite("images/web.img", 0, 2 * M);
    t.clone("images/base.img", "images/db.img");
    t.overwrite("images/db.img", 4 * M, 4 * M);
    for img in ["base", "web", "db"] {
        t.clone(
            &format!("images/{img}.img"),
            &format!("backups/2026-11/{img}.img"),
        );
        t.clone(
            &format!("images/{img}.img"),
            &format!("backups/2026-12/{img}.img"),
        );
    }
    t.overwrite("backups/2026-12/db.img", 8 * M, M);
    // Shared only among files inside `builds`: deleting it frees them.
    t.write("builds/app.iso", 12 * M);
    t.clone("builds/app.iso", "builds/app-copy.iso");
    t.clone("builds/app.iso", "builds/app-test.iso");
    t.overwrite("builds/app-test.iso", 0, M);
    t.write("scratch/build.tar", 5 * M);
    t.write("scratch/cache.bin", 2 * M);
    // 2,000 empty files: too small to draw, and a directory's worth of
    // blocks, `logs`'s rest.
    t.write("logs/app.log", 64 << 10);
    for i in 0..2000 {
        fs::File::create(root.join(format!("logs/empty-{i:04}"))).unwrap();
    }
    t.write("other/notes.bin", 3 * M);
    sync_fs(fs.path());
    let html = page(fs.path(), &[OsStr::new("srv")]);
    assert_self_contained(&html);
    let (_, cells) = data(&html);
    assert_layouts(&cells);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html");
    fs::create_dir_all(&dir).unwrap();
    let page_file = dir.join("treemap.html");
    fs::write(&page_file, &html).unwrap();
    let want = json_figures(fs.path(), &[OsStr::new("srv")]);
    assert!(want["srv/backups"][2] > 0, "nothing shared: {want:?}");
    let expected = dir.join("expected.json");
    fs::write(&expected, serde_json::to_vec(&want).unwrap()).unwrap();
    let shot = dir.join("treemap.png");
    let _ = fs::remove_file(&shot);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdu/html_browser.py");
    let out = run(Command::new("python3")
        .arg(&script)
        .arg("check")
        .args([&page_file, &shot, &expected])
        .args([
            "srv/backups",
            "srv/backups",
            "srv/builds",
            "srv/logs",
            "srv/other",
        ]));
    match out.code {
        Some(0) => {}
        Some(77) | None | Some(127) => {
            let _: Option<()> = unavailable(&format!(
                "no browser to test the page in (Debian's chromium and chromium-driver, \
                 python3 -m pip install selenium): {}",
                out.stderr.trim()
            ));
            return;
        }
        _ => panic!("the page failed in the browser: {out:?}"),
    }
    let png = fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "no screenshot");
    if let Some(to) = std::env::var_os("SDU_SCREENSHOT") {
        let to = Path::new(env!("CARGO_MANIFEST_DIR")).join(to);
        fs::write(&to, &png).unwrap();
        eprintln!("screenshot written to {}", to.display());
    }
}
