//! The browser's screen on a real terminal (tmux) at 40, 50, 60 and 80
//! columns: the flags have a column of their own (never touching a
//! size), a directory whose entries are all hidden says what hides them
//! and which key shows them, the header and the footer drop whole words
//! and keep `? help`, the columns' titles keep `Name` beside short
//! names, and `--compare OLD` lists the entries gone from the
//! directory shown, counted there, which cannot be opened, marked or
//! deleted.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use crate::browse::{pressed, settled, start_for};
use crate::tmux::{Tmux, last_line};
use crate::util::*;

const WIDTHS: [u16; 4] = [40, 50, 60, 80];

/// The screen's words, one space between them, without the sides of a
/// box (a message wrapped on a narrow screen reads as one line).
fn flat(screen: &str) -> String {
    let words = screen.split_whitespace().filter(|w| *w != "│");
    words.collect::<Vec<_>>().join(" ")
}

/// The row whose name is `name`.
fn row<'s>(screen: &'s str, name: &str) -> &'s str {
    screen
        .lines()
        .find(|l| l.ends_with(&format!("  {name}")))
        .unwrap_or_else(|| panic!("no row {name}:\n{screen}"))
}

/// GNU du's Total of `dir`, in bytes.
fn du_total(dir: &Path) -> u64 {
    let o = run(Command::new("du").args(["-s", "-B1"]).arg(dir));
    o.stdout_str()
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("du: {o:?}"))
}

/// As nobody, on `root/{big, locked/, part/sub/, empty/, link}`: each
/// row's flag is its second character and a space follows it, so that
/// the size stands apart: `!` for `locked` (not read), `.` for `part`
/// (a directory below not read), `e` for `empty`, `@` for the symbolic
/// link, none for the file.
#[test]
fn flags_have_a_column_of_their_own() {
    let t = TestDir::new();
    fs::set_permissions(t.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let root = t.path().join("root");
    for d in ["locked", "part/sub", "empty"] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    write_file(&root.join("big"), 1 << 20);
    write_file(&root.join("locked/f"), 8192);
    std::os::unix::fs::symlink("big", root.join("link")).unwrap();
    for d in ["locked", "part/sub"] {
        fs::set_permissions(root.join(d), fs::Permissions::from_mode(0o700)).unwrap();
    }
    for w in WIDTHS {
        let Some(tmux) = Tmux::shell_sized(&format!("screen-flags-{w}"), w, 20) else {
            return;
        };
        tmux.keys(&[
            &format!(
                "clear; cd '{}' && setpriv {} '{}' -i root 2>/dev/null",
                t.path().display(),
                nobody_args().join(" "),
                sdu_bin().display()
            ),
            "Enter",
        ]);
        tmux.wait_for("the browser", |s| s.contains(" Name"));
        let s = pressed(&tmux, "n", "sort: name");
        for (name, flag) in [
            ("big", ' '),
            ("empty/", 'e'),
            ("link@", '@'),
            ("locked/", '!'),
            ("part/", '.'),
        ] {
            let r = row(&s, name);
            let cells: Vec<char> = r.chars().collect();
            assert_eq!((cells[1], cells[2]), (flag, ' '), "{w}: {name}:\n{s}");
            // The first figure starts with a digit: no mark glued to it.
            let size = r[3..].split_whitespace().next().unwrap();
            assert!(size.starts_with(|c: char| c.is_ascii_digit()), "{w}: {r:?}");
        }
        tmux.keys(&["q"]);
        tmux.wait_for("the prompt", |s| last_line(s) == crate::tmux::PROMPT);
    }
}

/// A directory whose entries are all hidden says by what and how many,
/// and which key shows them, not "(empty directory)": 12 files and `a`,
/// 3 names starting with a dot and `e`, 2 entries and the filter; a
/// directory that is empty says so.
#[test]
fn a_directory_whose_entries_are_hidden_says_what_hides_them() {
    let t = TestDir::new();
    let root = t.path().join("root");
    for d in ["files", "dots/.d", "filtered/x1", "filtered/x2", "void"] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    for i in 0..12 {
        write_file(&root.join(format!("files/f{i}")), 4096 * (i + 1));
    }
    write_file(&root.join("dots/.a"), 4096);
    write_file(&root.join("dots/.b"), 8192);
    for w in [40, 80] {
        let Some(tmux) = Tmux::shell_sized(&format!("screen-hidden-{w}"), w, 20) else {
            return;
        };
        start_for(&tmux, t.path(), "root", "? help");
        pressed(&tmux, "n", "sort: name");
        // dots, files, filtered, void: open files, hide the files.
        tmux.keys(&["Home", "Down"]);
        pressed(&tmux, "Enter", "root/files");
        let s = flat(&pressed(&tmux, "a", "hidden:"));
        assert!(s.contains("(12 files hidden: a shows them)"), "{w}: {s}");
        assert!(!s.contains("empty directory"), "{w}: {s}");
        let s = flat(&pressed(&tmux, "a", "f11"));
        assert!(!s.contains("hidden:"), "{w}: {s}");
        pressed(&tmux, "Left", "filtered/");
        tmux.keys(&["Home"]);
        pressed(&tmux, "Enter", "root/dots");
        let s = flat(&pressed(&tmux, "e", "hidden:"));
        assert!(
            s.contains("(3 entries starting with a dot hidden: e shows them)"),
            "{w}: {s}"
        );
        pressed(&tmux, "e", ".b");
        pressed(&tmux, "Left", "filtered/");
        tmux.keys(&["Down", "Down"]);
        pressed(&tmux, "Enter", "root/filtered");
        tmux.keys(&["/", "z", "z"]);
        tmux.wait_for("the filter typed", |s| s.contains("filter: zz_"));
        let s = flat(&pressed(&tmux, "Enter", "not matching"));
        assert!(
            s.contains("(2 entries not matching the filter: / then Esc shows them)"),
            "{w}: {s}"
        );
        // The filter cleared, then the empty directory.
        // (Esc and the next key apart: together they read as Alt and it.)
        tmux.keys(&["/", "Escape"]);
        tmux.wait_for("the filter cleared", |s| !s.contains("filter:"));
        pressed(&tmux, "Left", "void/");
        tmux.keys(&["End"]);
        let s = flat(&pressed(&tmux, "Enter", "root/void"));
        assert!(s.contains("(empty directory)"), "{w}: {s}");
        tmux.keys(&["q"]);
        tmux.wait_for("the prompt", |s| last_line(s) == crate::tmux::PROMPT);
    }
}

/// The words the header, the column titles and the footer may show; at
/// any width each of their words is one of these, or a figure, or the
/// path: no word is cut ("Reclaimab").
const WORDS: &[&str] = &[
    "sdu",
    "sort:",
    "total",
    "total,",
    "largest",
    "first",
    "Total",
    "Exclusive",
    "Shared",
    "Reclaimable",
    "·",
    "entries",
    "entries,",
    "files",
    "hidden",
    "Change",
    "Name",
    "↑↓→←",
    "move",
    "s",
    "n",
    "sort",
    "i",
    "info",
    "/",
    "filter",
    "space",
    "mark",
    "d",
    "delete",
    "?",
    "help",
    "q",
    "quit",
    "marked",
    "deleting",
    "them",
    "frees",
];

/// At 40, 50, 60 and 80 columns, with a mark and the files hidden: the
/// last line has `? help` and `q quit`, the header has the entry count,
/// and every word of the header, the titles and the footer is whole; the
/// snapshots table's last line has `? help` and `p Esc back`.
#[test]
fn narrow_screens_keep_help_and_cut_no_word() {
    let t = TestDir::new();
    let root = t.path().join("a-rather-long-directory-name/below");
    for d in ["one", "two", "three"] {
        fs::create_dir_all(root.join(d)).unwrap();
        write_file(&root.join(d).join("data"), 300 << 10);
    }
    write_file(&root.join("file"), 100 << 10);
    for w in WIDTHS {
        let Some(tmux) = Tmux::shell_sized(&format!("screen-narrow-{w}"), w, 20) else {
            return;
        };
        start_for(
            &tmux,
            t.path(),
            "a-rather-long-directory-name/below",
            "? help",
        );
        tmux.keys(&["Space"]);
        tmux.wait_for("the mark", |s| s.contains(" 1 marked"));
        let s = pressed(&tmux, "a", "files hidden");
        let lines: Vec<&str> = s.lines().filter(|l| !l.is_empty()).collect();
        let foot = *lines.last().unwrap();
        assert!(
            foot.contains("? help") && foot.contains("q quit"),
            "{w}:\n{s}"
        );
        assert!(lines[1].contains("3 entries"), "{w}:\n{s}");
        let marks = lines[lines.len() - 2];
        assert!(marks.contains("1 marked"), "{w}:\n{s}");
        let path = lines[0].split("sort:").next().unwrap();
        assert!(path.contains("below"), "{w}: the path's end:\n{s}");
        let sort = lines[0].split_once("sort:").map_or("", |(_, x)| x);
        let checked = [sort, lines[1], lines[2], marks, foot];
        for word in checked.iter().flat_map(|l| l.split_whitespace()) {
            assert!(
                WORDS.contains(&word)
                    || word.starts_with(|c: char| c.is_ascii_digit() || "≤≥~".contains(c)),
                "{w}: {word:?} cut:\n{s}"
            );
        }
        assert!(lines.iter().all(|l| l.chars().count() <= usize::from(w)));
        // The snapshots table keeps them too.
        let s = pressed(&tmux, "p", "Btrfs snapshots");
        let foot = last_line(&s);
        assert!(
            foot.contains("? help") && foot.contains("p Esc back"),
            "{w}:\n{s}"
        );
        pressed(&tmux, "p", "entries");
        tmux.keys(&["q"]);
        tmux.wait_for("the prompt", |s| last_line(s) == crate::tmux::PROMPT);
    }
}

/// Short names (`y`, `zz`) at 45 and 50 columns: the columns' titles
/// keep `Name` whole (the name column is never narrower than its title;
/// a figure column goes first).
#[test]
fn short_names_keep_the_name_title_whole() {
    let t = TestDir::new();
    let root = t.path().join("s");
    fs::create_dir_all(&root).unwrap();
    write_file(&root.join("y"), 300 << 10);
    write_file(&root.join("zz"), 100 << 10);
    for w in [45, 50] {
        let Some(tmux) = Tmux::shell_sized(&format!("screen-short-{w}"), w, 20) else {
            return;
        };
        let s = start_for(&tmux, t.path(), "s", "? help");
        let titles = s
            .lines()
            .find(|l| l.trim_start().starts_with("Total") && !l.contains('·'))
            .unwrap_or_else(|| panic!("{w}: no titles:\n{s}"));
        assert_eq!(titles.split_whitespace().last(), Some("Name"), "{w}:\n{s}");
        assert!(s.lines().all(|l| l.chars().count() <= usize::from(w)));
        assert!(row(&s, "zz").contains('K'), "{w}:\n{s}");
        tmux.keys(&["q"]);
        tmux.wait_for("the prompt", |s| last_line(s) == crate::tmux::PROMPT);
    }
}

/// `--compare OLD` on a tree that lost `snaps/` (4 subdirectories, each
/// with a file) since OLD was saved: its parent's header says 1 entry
/// gone (not the 9 entries that went), the row is listed marked `x` with
/// the Total GNU du gave it before, `gone` in the Change column; Enter,
/// space and `d` on it say that it is gone.
#[test]
fn compare_lists_the_entries_gone_from_the_directory_shown() {
    let t = TestDir::new();
    let root = t.path().join("root");
    for d in ["keep", "snaps/s1", "snaps/s2", "snaps/s3", "snaps/s4"] {
        fs::create_dir_all(root.join(d)).unwrap();
        write_file(&root.join(d).join("data"), 40 << 10);
    }
    let old = du_total(&root.join("snaps"));
    let o = run(Command::new(sdu_bin())
        .args(["--export", "old.json", "root"])
        .current_dir(t.path()));
    assert_eq!(o.code, Some(0), "{o:?}");
    fs::remove_dir_all(root.join("snaps")).unwrap();
    for w in [40, 80] {
        let Some(tmux) = Tmux::shell_sized(&format!("screen-compare-{w}"), w, 20) else {
            return;
        };
        let s = start_for(&tmux, t.path(), "-B1 --compare old.json root", "? help");
        let header = s.lines().nth(1).unwrap();
        let said = if w >= 80 {
            "1 entry gone from here since the old scan"
        } else {
            "1 gone"
        };
        assert!(header.contains(said), "{w}:\n{s}");
        let r = row(&s, "snaps/");
        let cells: Vec<&str> = r.split_whitespace().collect();
        assert_eq!(cells[..2], ["x", &old.to_string()], "{w}:\n{s}");
        assert!(cells.contains(&"gone"), "{w}:\n{s}");
        // The gone row comes after the entry still there.
        assert!(
            s.find("  keep/").unwrap() < s.find("  snaps/").unwrap(),
            "{s}"
        );
        tmux.keys(&["End"]);
        settled(&tmux);
        for (key, what) in [
            ("Enter", "it cannot be opened"),
            ("Space", "it cannot be marked"),
            ("d", "it cannot be deleted"),
        ] {
            let s = flat(&pressed(&tmux, key, "gone since"));
            assert!(
                s.contains(&format!("'snaps' is gone since the old scan: {what}.")),
                "{w}: {key}: {s}"
            );
            tmux.keys(&["Escape"]);
            tmux.wait_for("the notice closed", |s| !s.contains("gone since the old"));
        }
        assert!(!tmux.screen().contains("marked"), "{w}");
        tmux.keys(&["q"]);
        tmux.wait_for("the prompt", |s| last_line(s) == crate::tmux::PROMPT);
    }
}
