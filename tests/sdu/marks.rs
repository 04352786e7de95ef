//! A bound says its direction wherever a Reclaimable is printed
//! (docs/figures.md, "Exact or a bound"): `≤` at most (deleting may free
//! less), `≥` at least (it may free more), `~` either way, before the
//! figure; `<=`, `>=`, `~` in a locale that is not UTF-8; one legend line
//! per mark printed. JSON says `reclaimable_bound`; `--du reclaimable`,
//! which cannot mark, says so on stderr. Each case is deleted and
//! measured: the mark's direction is what the filesystem frees.
//!
//! The bounds are made the easy way: XFS without rmapbt, a directory
//! scanned alone (at most, even as root); Btrfs without `CAP_SYS_ADMIN`
//! (at least, and both); an `ncdu -o` file (nothing known: either way).

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::Command;

use crate::json::{self, Report};
use crate::reclaim::{BTRFS_OPTS, XFS_OPTS};
use crate::tmux::Tmux;
use crate::util::*;

const M: u64 = 1 << 20;

/// The marks, UTF-8 and ASCII, and the direction each says.
const MARKS: [(&str, &str, &str); 3] = [
    ("\u{2264}", "<=", "at_most"),
    ("\u{2265}", ">=", "at_least"),
    ("~", "~", "unknown"),
];

/// sdu in `cwd` (as root, or without `CAP_SYS_ADMIN`) with `LC_ALL` set
/// to `locale`.
fn sdu_locale(cwd: &Path, root: bool, locale: &str, args: &[&str]) -> Output {
    let mut c = sdu_command(root);
    run_with_timeout(c.current_dir(cwd).env("LC_ALL", locale).args(args), 300)
}

/// A table read back: each row's Reclaimable cell by path, and the legend
/// lines. Checks that every row's cells end in the header's columns.
struct Marked {
    cells: Vec<(String, String)>,
    legend: Vec<String>,
}

impl Marked {
    fn parse(text: &str) -> Marked {
        let mut lines = text.lines();
        let header = lines.next().unwrap_or_else(|| panic!("no header: {text}"));
        let end = header.find("Reclaimable").expect("a Reclaimable column") + "Reclaimable".len();
        let col = header
            .split_whitespace()
            .position(|w| w == "Reclaimable")
            .unwrap();
        let mut m = Marked {
            cells: Vec::new(),
            legend: Vec::new(),
        };
        for l in lines {
            if MARKS
                .iter()
                .any(|(u, a, _)| l.starts_with(&format!("{u} ")) || l.starts_with(&format!("{a} ")))
            {
                m.legend.push(l.to_owned());
                continue;
            }
            let words: Vec<&str> = l.split_whitespace().collect();
            let cell = words[col];
            // Right-aligned: the cell ends where the heading does.
            let chars: Vec<char> = l.chars().collect();
            let at: String = chars[..end].iter().collect();
            assert!(
                at.ends_with(cell),
                "row not aligned with the heading:\n{text}"
            );
            let path = l.rsplit("  ").next().unwrap().to_owned();
            m.cells.push((path, cell.to_owned()));
        }
        m
    }

    fn cell(&self, path: &str) -> &str {
        &self
            .cells
            .iter()
            .find(|c| c.0 == path)
            .unwrap_or_else(|| panic!("no row {path}: {:?}", self.cells))
            .1
    }

    /// The mark before `path`'s figure ("" when exact), as the JSON word.
    fn word(&self, path: &str, ascii: bool) -> Option<&'static str> {
        let cell = self.cell(path);
        MARKS
            .iter()
            .find(|(u, a, _)| cell.starts_with(if ascii { a } else { u }))
            .map(|m| m.2)
    }

    /// Each mark printed has its one legend line, and no other line is
    /// there.
    fn assert_legend(&self, ascii: bool, text: &str) {
        let printed: BTreeSet<&str> = self
            .cells
            .iter()
            .filter_map(|(p, _)| self.word(p, ascii))
            .collect();
        let explained: Vec<&str> = self
            .legend
            .iter()
            .map(|l| {
                MARKS
                    .iter()
                    .find(|(u, a, _)| l.starts_with(&format!("{} ", if ascii { a } else { u })))
                    .unwrap_or_else(|| panic!("a legend line of another mark: {l}\n{text}"))
                    .2
            })
            .collect();
        assert_eq!(
            explained.iter().copied().collect::<BTreeSet<_>>(),
            printed,
            "{text}"
        );
        assert_eq!(
            explained.len(),
            printed.len(),
            "a legend line twice:\n{text}"
        );
        for l in &self.legend {
            assert!(l.contains(" Reclaimable "), "{text}");
        }
    }
}

/// The JSON word of each entry's bound, by path.
fn words(r: &Report) -> Vec<(String, Option<String>)> {
    r.entries
        .iter()
        .map(|e| {
            (
                e.path.to_string_lossy().into_owned(),
                e.reclaimable_bound.clone(),
            )
        })
        .collect()
}

fn entry<'a>(r: &'a Report, path: &str) -> &'a json::Entry {
    r.entries
        .iter()
        .find(|e| e.path == path)
        .unwrap_or_else(|| panic!("no entry {path}: {r:?}"))
}

/// XFS without rmapbt, as root: `out/orig` (8 MiB) cloned twice into `d`
/// (`d/x`, `d/y`), and `d/own` (1 MiB). sdu sees orig's extent held twice
/// inside `d` and cannot ask who else holds it: 9 MiB, at most. Deleting
/// `d` frees 1 MiB. Every output marks it `≤`, and `p0` (empty) not.
#[test]
fn xfs_at_most_marked_in_every_output() {
    let Some(fs) = Mounted::with_mkfs(FsKind::Xfs, &["-m", "rmapbt=0"], XFS_OPTS) else {
        return;
    };
    let mnt = fs.path();
    let t = Tree { root: mnt };
    for p in ["p0", "p1", "p2", "p3"] {
        t.dir(p);
    }
    t.write("out/orig", 8 * M);
    t.clone("out/orig", "d/x");
    t.clone("out/orig", "d/y");
    t.write("d/own", M);
    fs.remount();
    let d = mnt.join("d");
    assert_eq!(xfs_preconditions(mnt, &d), 0);

    // The table, in UTF-8 and in the C locale.
    for (locale, ascii) in [("C.UTF-8", false), ("C", true)] {
        let out = sdu_locale(mnt, true, locale, &["-B1", "-c", "d", "p0"]);
        assert_eq!(out.code, Some(0), "{out:?}");
        let text = out.stdout_str();
        let m = Marked::parse(text);
        let mark = if ascii { "<=" } else { "\u{2264}" };
        assert_eq!(m.cell("d"), format!("{mark}{}", 9 * M), "{text}");
        assert_eq!(m.cell("p0"), "0", "{text}");
        assert_eq!(m.cell("total"), format!("{mark}{}", 9 * M), "{text}");
        m.assert_legend(ascii, text);
        assert_eq!(m.legend.len(), 1, "{text}");
        assert!(
            m.legend[0].starts_with(&format!("{mark} Reclaimable at most: ")),
            "{text}"
        );
    }
    // No legend without the heading, nor with -0.
    for flag in ["--no-header", "-0"] {
        let out = sdu_locale(mnt, true, "C.UTF-8", &["-B1", flag, "d", "p0"]);
        assert_eq!(out.code, Some(0), "{out:?}");
        assert!(!out.stdout_str().contains("Reclaimable"), "{out:?}");
        assert!(
            out.stdout_str().contains(&format!("\u{2264}{}", 9 * M)),
            "{out:?}"
        );
    }
    // The tree view.
    let out = sdu_locale(mnt, true, "C.UTF-8", &["-B1", "--tree", "d"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let text = out.stdout_str();
    let row = text.lines().find(|l| l.ends_with("  d")).expect(text);
    assert!(row.contains(&format!(" \u{2264}{} ", 9 * M)), "{text}");
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("\u{2264} Reclaimable at most: "))
            .count(),
        1,
        "{text}"
    );
    // JSON: the entry and the -c total.
    let out = sdu_locale(mnt, true, "C.UTF-8", &["--json", "-c", "d", "p0"]);
    let r = json::parse(&out.stdout);
    assert_eq!(entry(&r, "d").reclaimable_bound.as_deref(), Some("at_most"));
    assert_eq!(entry(&r, "p0").reclaimable_bound, None);
    let total = r.total.as_ref().unwrap();
    assert_eq!(total.reclaimable_bound.as_deref(), Some("at_most"));
    // --to-free: the plan's total, in JSON and in text.
    let out = sdu_locale(
        mnt,
        true,
        "C.UTF-8",
        &["--json", "--to-free", "1", "d", "p0"],
    );
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a plan");
    assert_eq!(plan["reclaimable_exact"], false, "{plan}");
    assert_eq!(plan["reclaimable_bound"], "at_most", "{plan}");
    let out = sdu_locale(mnt, true, "C.UTF-8", &["-B1", "--to-free", "1", "d", "p0"]);
    let text = out.stdout_str();
    let total = text.lines().find(|l| l.ends_with("  total")).expect(text);
    assert!(total.contains(&format!("  \u{2264}{}  ", 9 * M)), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("\u{2264} the plan frees up to ")),
        "{text}"
    );
    // --du reclaimable: du's lines as they are, and one line on stderr.
    let out = sdu_locale(
        mnt,
        true,
        "C.UTF-8",
        &["--du", "reclaimable", "-B1", "d", "p0"],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stdout_str(), format!("{}\td\n0\tp0\n", 9 * M));
    let said: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("--du reclaimable"))
        .collect();
    assert_eq!(said.len(), 1, "{out:?}");
    assert!(said[0].contains("at most"), "{out:?}");
    let out = sdu_locale(mnt, true, "C.UTF-8", &["--du", "reclaimable", "p0"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(!out.stderr.contains("--du"), "{out:?}");
    let out = sdu_locale(mnt, true, "C.UTF-8", &["--du", "total", "d"]);
    assert!(!out.stderr.contains("--du"), "{out:?}");

    // A saved scan keeps the direction; --compare marks the change by the
    // new side's and the old side's reversed: both here.
    let saved = Path::new(env!("CARGO_TARGET_TMPDIR")).join("marks-xfs.json");
    let saved = saved.to_str().unwrap();
    let out = sdu_locale(mnt, true, "C.UTF-8", &["--export", saved, "d", "p0"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let out = sdu_locale(mnt, true, "C.UTF-8", &["-B1", "--import", saved]);
    let m = Marked::parse(out.stdout_str());
    assert_eq!(m.cell("d"), format!("\u{2264}{}", 9 * M), "{out:?}");
    let out = sdu_locale(
        mnt,
        true,
        "C.UTF-8",
        &["-B1", "--compare", saved, "d", "p0"],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let text = out.stdout_str();
    let row = text.lines().find(|l| l.ends_with("  d")).expect(text);
    assert!(row.contains(" ~0  "), "{text}");
    let legend: Vec<&str> = text.lines().filter(|l| l.starts_with("~ ")).collect();
    assert_eq!(legend.len(), 1, "{text}");
    assert!(!text.contains("\u{2264} the change"), "{text}");
    let out = sdu_locale(
        mnt,
        true,
        "C.UTF-8",
        &["--json", "--compare", saved, "d", "p0"],
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let d_entry = doc["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == "d")
        .expect("d");
    for side in ["old", "new"] {
        assert_eq!(d_entry[side]["reclaimable_bound"], "at_most", "{d_entry}");
    }

    // The browser: the list and the header.
    browse_marks(mnt, "d p0", ("d", "\u{2264}9.0M"), "\u{2264}", "C.UTF-8");
    browse_marks(mnt, "d p0", ("d", "<=9.0M"), "<=", "C");
    // The page.
    html_marks(mnt, &["d", "p0"], "\u{2264}");

    // The filesystem: deleting d frees less than the figure.
    let freed = fs.freed_by(|| fs::remove_dir_all(&d).unwrap());
    assert_eq!(freed, M, "the tree is not as built");
    assert!(freed < 9 * M);
}

/// `sdu -i ARGS` in `dir` (with `LC_ALL=locale`; `ARGS` may start with a
/// command to run sdu under): the row of `row` shows Reclaimable as
/// `cell`, and the header the directory's with `mark`.
fn browse_marks(dir: &Path, args: &str, (row, cell): (&str, &str), mark: &str, locale: &str) {
    let (under, args) = args.split_once("SDU ").unwrap_or(("", args));
    // One server per call: the tests run in parallel in one process.
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let Some(tmux) = Tmux::shell(&format!("marks{n}")) else {
        return;
    };
    tmux.keys(&[
        &format!(
            "cd '{}' && LC_ALL={locale} {under}'{}' -i {args}",
            dir.display(),
            sdu_bin().display()
        ),
        "Enter",
    ]);
    let s = tmux.wait_for("the browser's rows", |s| {
        s.lines()
            .any(|l| l.trim_end().ends_with(&format!("{row}/")))
    });
    let line = s
        .lines()
        .find(|l| l.trim_end().ends_with(&format!("{row}/")))
        .unwrap();
    assert!(line.contains(&format!(" {cell}  ")), "{s}");
    assert!(s.contains(&format!("Reclaimable {mark}")), "{s}");
    // The first row is a bound in every case here: the footer and `i` say
    // so in words.
    tmux.keys(&["Space"]);
    let s = tmux.wait_for("the mark", |s| s.contains(" 1 marked "));
    let footer = s.lines().find(|l| l.contains(" 1 marked ")).unwrap();
    assert!(
        ["up to ", "at least ", "about "]
            .iter()
            .any(|q| footer.contains(&format!("deleting them frees {q}"))),
        "{s}"
    );
    tmux.keys(&["Up", "i"]);
    tmux.wait_for("the entry's info", |s| {
        s.contains("Reclaimable is not exact")
    });
    tmux.keys(&["Escape", "q"]);
}

/// Btrfs without `CAP_SYS_ADMIN`: `vol/a/f` (8 MiB, its middle 4 MiB
/// rewritten: the old extent stays whole, 12 MiB) is at least its 8 MiB;
/// `vol/b/x`, `vol/b/y` (clones of `out/orig`, 8 MiB) are counted as
/// freed, at most (or either way); `vol` holds both: either way.
/// Deleting a frees 12 MiB, b nothing.
#[test]
fn btrfs_without_root_at_least_and_either_way() {
    let Some(fs) = Mounted::new(FsKind::Btrfs, BTRFS_OPTS) else {
        return;
    };
    crate::btrfs::assert_setpriv_drops_sys_admin();
    let mnt = fs.path();
    let t = Tree { root: mnt };
    t.write("vol/a/f", 8 * M);
    t.overwrite("vol/a/f", 2 * M, 4 * M);
    t.write("out/orig", 8 * M);
    t.clone("out/orig", "vol/b/x");
    t.clone("out/orig", "vol/b/y");
    fs.remount();
    btrfs_preconditions(&mnt.join("vol"));
    let out = sdu_locale(mnt, false, "C.UTF-8", &["-B1", "-d1", "vol"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let text = out.stdout_str().to_owned();
    let m = Marked::parse(&text);
    m.assert_legend(false, &text);
    assert_eq!(m.cell("vol/a"), format!("\u{2265}{}", 8 * M), "{text}");
    let b = m.word("vol/b", false);
    assert!(matches!(b, Some("at_most" | "unknown")), "{text}");
    assert_eq!(m.word("vol", false), Some("unknown"), "{text}");
    let r = json::parse(&sdu_locale(mnt, false, "C.UTF-8", &["--json", "-d1", "vol"]).stdout);
    let table: Vec<(String, Option<String>)> = m
        .cells
        .iter()
        .map(|(p, _)| (p.clone(), m.word(p, false).map(str::to_owned)))
        .collect();
    assert_eq!(words(&r), table, "JSON and the table disagree");
    // The browser marks the rows and the header as the table does.
    let without = "setpriv --bounding-set -sys_admin --inh-caps -sys_admin SDU vol";
    browse_marks(mnt, without, ("a", "\u{2265}8.0M"), "~", "C.UTF-8");
    // Delete and measure: at least, at most.
    let a = fs.freed_by(|| fs::remove_dir_all(mnt.join("vol/a")).unwrap());
    assert_eq!(a, 12 * M, "the tree is not as built");
    assert!(a > entry(&r, "vol/a").reclaimable, "at least: frees more");
    let b = fs.freed_by(|| fs::remove_dir_all(mnt.join("vol/b")).unwrap());
    assert_eq!(b, 0, "the tree is not as built");
    assert!(b < entry(&r, "vol/b").reclaimable, "at most: frees less");
    // vol: 16 MiB either way, where deleting it all freed 12 MiB.
    assert_eq!(entry(&r, "vol").reclaimable, 16 * M);
}

/// `ncdu -o` of `d`, whose file is a reflink copy of `orig` outside it:
/// ncdu knows nothing of sharing, so sdu's Reclaimable of `d` is its
/// Total, 4 MiB, and deleting `d` frees nothing. Every Reclaimable of the
/// import is marked either way: table, JSON, browser, HTML.
#[test]
fn ncdu_import_marks_every_reclaimable() {
    let Some(fs) = Mounted::new(FsKind::Btrfs, BTRFS_OPTS) else {
        return;
    };
    let mnt = fs.path();
    let t = Tree { root: mnt };
    t.write("orig", 4 * M);
    t.clone("orig", "d/copy");
    t.dir("d/sub");
    fs.remount();
    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join("marks-ncdu.json");
    let out = run(Command::new("ncdu")
        .current_dir(mnt)
        .args(["-0", "-o"])
        .arg(&file)
        .arg("d"));
    if out.code != Some(0) {
        let _: Option<()> = unavailable(&format!("ncdu -o failed: {out:?}"));
        return;
    }
    let f = file.to_str().unwrap();
    let out = sdu_locale(mnt, true, "C.UTF-8", &["-B1", "--import", f, "-d1"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let text = out.stdout_str().to_owned();
    let m = Marked::parse(&text);
    m.assert_legend(false, &text);
    for (p, _) in &m.cells {
        assert_eq!(m.word(p, false), Some("unknown"), "{p}: {text}");
    }
    assert_eq!(m.legend.len(), 1, "{text}");
    assert!(out.stderr.contains("not written by sdu"), "{out:?}");
    let r = json::parse(
        &sdu_locale(
            mnt,
            true,
            "C.UTF-8",
            &["--json", "--import", f, "-d1", "-c"],
        )
        .stdout,
    );
    assert!(
        words(&r)
            .iter()
            .all(|(_, w)| w.as_deref() == Some("unknown")),
        "{r:?}"
    );
    let total = r.total.as_ref().unwrap();
    assert_eq!(total.reclaimable_bound.as_deref(), Some("unknown"));
    let d = r.entries.iter().find(|e| e.depth == 0).expect("the root");
    assert_eq!(d.reclaimable, d.total);
    browse_marks(mnt, &format!("--import {f}"), ("sub", "~0"), "~", "C.UTF-8");
    html_marks(mnt, &["--import", f], "~");
    let freed = fs.freed_by(|| fs::remove_dir_all(mnt.join("d")).unwrap());
    assert_eq!(freed, 0, "the tree is not as built");
    assert!(d.reclaimable > freed);
}

/// `sdu --html PAGE ARGS` in a browser: the table of the largest entries
/// marks every bound Reclaimable with the mark its bound bits give, and
/// the legend explains each mark shown, `want` among them.
fn html_marks(dir: &Path, args: &[&str], want: &str) {
    // One page per call: the tests run in parallel in one process.
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let page = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("marks-{}-{n}.html", std::process::id()));
    let out = sdu_locale(
        dir,
        true,
        "C.UTF-8",
        &[&["--html", page.to_str().unwrap()][..], args].concat(),
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdu/html_browser.py");
    let out = run(Command::new("python3")
        .arg(&script)
        .arg("marks")
        .arg(&page)
        .arg(want));
    match out.code {
        Some(0) => {}
        Some(77) | None | Some(127) => {
            let _: Option<()> = unavailable(&format!("no browser: {}", out.stderr.trim()));
        }
        _ => panic!("the page's marks: {out:?}"),
    }
}
