//! `sdu -i` on a real terminal (tmux): it opens on the columns, navigates,
//! sorts, shows and hides files and quits; the terminal is sane again after
//! `q` and after Ctrl-C; colour only without `NO_COLOR`; and marking two
//! Btrfs snapshots shows the figure `sdu -s -c` gives for the two.

use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::tmux::{PROMPT, Tmux, last_line};
use crate::util::*;

/// The column titles, as the browser prints them.
const TITLES: &str = "Total  Exclusive  Shared  Reclaimable";

/// `root/zbig/data` (300 KiB), `root/asmall/data` (20 KiB),
/// `root/mid.bin` (100 KiB): the orders by size and by name differ.
fn tree(dir: &Path) {
    let root = dir.join("root");
    for d in ["zbig", "asmall"] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    write_file(&root.join("zbig/data"), 300 << 10);
    write_file(&root.join("asmall/data"), 20 << 10);
    write_file(&root.join("mid.bin"), 100 << 10);
}

/// Starts `sdu -i ARGS` in `dir` in the pane and waits for its columns.
pub(crate) fn start(tmux: &Tmux, dir: &Path, args: &str) -> String {
    tmux.keys(&[
        &format!(
            "cd '{}' && '{}' -i {args}",
            dir.display(),
            sdu_bin().display()
        ),
        "Enter",
    ]);
    tmux.wait_for("the browser's columns", |s| s.contains(TITLES))
}

/// The names in the rows, top to bottom.
pub(crate) fn names(screen: &str) -> Vec<String> {
    screen
        .lines()
        .filter(|l| l.contains('%') && !l.contains(TITLES))
        .filter_map(|l| l.split("%  ").nth(1))
        .map(str::to_owned)
        .collect()
}

/// Types `key` and waits until the screen has changed and shows `want`.
pub(crate) fn press(tmux: &Tmux, key: &str, want: &str) -> String {
    let before = tmux.screen();
    tmux.keys(&[key]);
    tmux.wait_for(want, |s| s != before && s.contains(want))
}

/// The prompt is back, the shell runs commands, and the terminal is in
/// cooked mode with echo (what raw mode turns off).
pub(crate) fn assert_terminal_restored(tmux: &Tmux, status: u32) {
    let screen = tmux.wait_for("the prompt", |s| last_line(s) == PROMPT);
    assert!(!screen.contains(TITLES), "still the browser:\n{screen}");
    // The quotes keep the words waited for out of the command line.
    tmux.keys(&[
        "st=$?; clear; echo \"st\"atus=$st; stty -a | tr -s ' ;\\n' '\\n' \
         | grep -E '^-?(icanon|echo|isig|icrnl|opost)$' | tr '\\n' ' '; echo \"E\"ND",
        "Enter",
    ]);
    let screen = tmux.wait_for("stty's settings", |s| {
        s.lines().any(|l| l.ends_with(" END"))
    });
    assert!(screen.contains(&format!("status={status}")), "{screen}");
    for flag in ["icanon", "echo", "isig", "icrnl", "opost"] {
        assert!(
            !screen.contains(&format!("-{flag}")),
            "{flag} is off after the browser:\n{screen}"
        );
    }
}

#[test]
fn opens_navigates_sorts_shows_files_and_quits() {
    let Some(tmux) = Tmux::shell("browse") else {
        return;
    };
    let t = TestDir::new();
    tree(t.path());
    let s = start(&tmux, t.path(), "root");
    assert!(
        s.lines()
            .any(|l| l.split_whitespace().take(3).eq(["sdu", "root", "sort:"])),
        "the path:\n{s}"
    );
    assert!(s.contains("sort: total, largest first"), "{s}");
    assert_eq!(names(&s), ["zbig/", "mid.bin", "asmall/"], "{s}");
    let s = press(&tmux, "n", "sort: name, A to Z");
    assert_eq!(names(&s), ["asmall/", "mid.bin", "zbig/"], "{s}");
    let s = press(&tmux, "n", "sort: name, Z to A");
    assert_eq!(names(&s), ["zbig/", "mid.bin", "asmall/"], "{s}");
    let s = press(&tmux, "t", "sort: total, largest first");
    assert_eq!(names(&s), ["zbig/", "mid.bin", "asmall/"], "{s}");
    let s = press(&tmux, "t", "sort: total, smallest first");
    assert_eq!(names(&s), ["asmall/", "mid.bin", "zbig/"], "{s}");
    // Files hidden, then shown again.
    let s = press(&tmux, "a", "files hidden");
    assert_eq!(names(&s), ["asmall/", "zbig/"], "{s}");
    let s = press(&tmux, "a", "3 entries");
    assert!(!s.contains("files hidden"), "{s}");
    assert_eq!(names(&s), ["asmall/", "mid.bin", "zbig/"], "{s}");
    // Down twice, open: zbig; up again with ←, and with h.
    tmux.keys(&["j", "Down"]);
    let s = press(&tmux, "Enter", "root/zbig");
    assert_eq!(names(&s), ["data"], "{s}");
    let s = press(&tmux, "Left", "mid.bin");
    assert_eq!(names(&s), ["asmall/", "mid.bin", "zbig/"], "{s}");
    // End, then Home, then l opens the first: asmall.
    tmux.keys(&["End", "Home"]);
    let s = press(&tmux, "l", "root/asmall");
    assert_eq!(names(&s), ["data"], "{s}");
    press(&tmux, "h", "zbig/");
    let s = press(&tmux, "?", "sdu -i: keys");
    assert!(
        s.contains("sort by Total, Exclusive, Shared, Reclaimable"),
        "{s}"
    );
    press(&tmux, "x", "3 entries");
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
}

#[test]
fn ctrl_c_quits_and_restores_the_terminal() {
    let Some(tmux) = Tmux::shell("browse-int") else {
        return;
    };
    let t = TestDir::new();
    tree(t.path());
    start(&tmux, t.path(), "root");
    tmux.keys(&["C-c"]);
    assert_terminal_restored(&tmux, 0);
}

/// Colour (cyan bars) on a terminal, none under NO_COLOR; the cursor is
/// reverse video either way.
#[test]
fn colour_only_without_no_color() {
    let Some(tmux) = Tmux::shell("browse-color") else {
        return;
    };
    let t = TestDir::new();
    tree(t.path());
    let escapes = |tmux: &Tmux| {
        let o = tmux.cmd(&["capture-pane", "-p", "-e", "-t", "t"]);
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    start(&tmux, t.path(), "root");
    let s = escapes(&tmux);
    assert!(coloured(&s), "no colour:\n{s:?}");
    tmux.keys(&["q"]);
    tmux.wait_for("the prompt", |s| last_line(s) == PROMPT);
    let cmd = format!("clear; NO_COLOR=1 '{}' -i root", sdu_bin().display());
    tmux.keys(&[&cmd, "Enter"]);
    tmux.wait_for("the browser's columns", |s| s.contains(TITLES));
    let s = escapes(&tmux);
    assert!(!coloured(&s), "colour under NO_COLOR:\n{s:?}");
    assert!(s.contains("\x1b[7m"), "no reverse video:\n{s:?}");
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
}

/// Whether the escapes set a foreground colour (`ESC[3Nm`, `ESC[38;...m`;
/// not `ESC[39m`, the default).
fn coloured(s: &str) -> bool {
    s.contains("\x1b[38;") || (0..8).any(|i| s.contains(&format!("\x1b[3{i}m")))
}

const K: usize = 1024;

/// Two snapshots of a subvolume whose origin is gone: `f2` (200 KiB) is
/// in both, the old `f1` (300 KiB) only in s1, the new one only in s2.
fn snapshots() -> Option<LoopFs> {
    let fs = LoopFs::new(FsKind::Btrfs)?;
    let p = |s: &str| fs.path().join(s);
    let btrfs = |args: &[&str], path: &Path| {
        run(Command::new("btrfs").args(args).arg(path)).assert_ok();
    };
    btrfs(&["subvolume", "create"], &p("vol"));
    fs::create_dir(p("snaps")).unwrap();
    let snap = |name: &str| {
        sync_fs(fs.path());
        run(Command::new("btrfs")
            .args(["subvolume", "snapshot"])
            .arg(p("vol"))
            .arg(p(&format!("snaps/{name}"))))
        .assert_ok();
    };
    write_file(&p("vol/f1"), 300 * K);
    write_file(&p("vol/f2"), 200 * K);
    snap("s1");
    write_file(&p("vol/f1"), 300 * K);
    snap("s2");
    // Until the cleaner has dropped the origin's references, FIEMAP still
    // flags the data only a snapshot holds now as shared.
    btrfs(&["subvolume", "delete", "-C"], &p("vol"));
    btrfs(&["subvolume", "sync"], fs.path());
    sync_fs(fs.path());
    Some(fs)
}

/// Marking both snapshots shows what `sdu -s -c` says deleting both frees,
/// which is more than what each frees alone, added up (the data they
/// share).
#[test]
fn marking_two_snapshots_frees_what_the_total_row_says() {
    let Some(fs) = snapshots() else {
        return;
    };
    let Some(tmux) = Tmux::shell("browse-btrfs") else {
        return;
    };
    let out = run(Command::new(sdu_bin())
        .current_dir(fs.path())
        .args(["--json", "-s", "-c", "snaps/s1", "snaps/s2"]));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("json");
    let both = doc["total"]["reclaimable"].as_u64().expect("total");
    let alone: u64 = doc["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["reclaimable"].as_u64().unwrap())
        .sum();
    assert!(
        both >= alone + 200 * K as u64,
        "both {both}, each alone {alone}"
    );
    // The two snapshots are not the whole filesystem, but as root sdu asks
    // Btrfs who else holds what they share: nobody (the origin is gone), so
    // the total is exact, and the browser says what marks free with no word
    // before it.
    assert_eq!(doc["total"]["reclaimable_exact"], true, "{doc}");
    // Without CAP_SYS_ADMIN nothing can be asked: the same figure, a bound.
    crate::btrfs::assert_setpriv_drops_sys_admin();
    let out = run(sdu_command(false)
        .current_dir(fs.path())
        .args(["--json", "-s", "-c", "snaps/s1", "snaps/s2"]));
    let nobody: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(nobody["total"]["reclaimable"], both, "{nobody}");
    assert_eq!(nobody["total"]["reclaimable_exact"], false, "{nobody}");
    start(&tmux, fs.path(), "-B1 snaps/s1 snaps/s2");
    tmux.keys(&["Space"]);
    tmux.wait_for("one mark", |s| s.contains(" 1 marked "));
    tmux.keys(&["Space"]);
    let s = tmux.wait_for("two marks", |s| s.contains(" 2 marked "));
    let frees: u64 = s
        .lines()
        .find_map(|l| l.split("deleting them frees ").nth(1))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no figure:\n{s}"));
    assert_eq!(frees, both, "{s}");
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
}

/// Starts `sdu -i ARGS` in `dir` and waits until the screen shows `want`.
pub(crate) fn start_for(tmux: &Tmux, dir: &Path, args: &str, want: &str) -> String {
    tmux.keys(&[
        &format!(
            "clear; cd '{}' && '{}' -i {args}",
            dir.display(),
            sdu_bin().display()
        ),
        "Enter",
    ]);
    tmux.wait_for(want, |s| s.contains(want) && s.contains(" Name"));
    settled(tmux)
}

/// The screen once it has stayed the same for 150 ms: a screen caught
/// while the browser draws it is not whole yet.
pub(crate) fn settled(tmux: &Tmux) -> String {
    let mut last = tmux.screen();
    loop {
        std::thread::sleep(std::time::Duration::from_millis(150));
        let now = tmux.screen();
        if now == last {
            return now;
        }
        last = now;
    }
}

/// [`press`], then the screen once settled.
pub(crate) fn pressed(tmux: &Tmux, key: &str, want: &str) -> String {
    press(tmux, key, want);
    settled(tmux)
}

/// A 255-byte name (the most most filesystems take).
const LONGEST: &str = concat!(
    "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn",
    "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn_end.bin"
);

/// The name first: at 40, 60, 80 and 200 columns every name keeps 16
/// cells or more (shortened in the middle, with its end), the bar goes
/// first, then the percentage, then Shared and Exclusive; and a deep path
/// in the header is shortened from the left, the sort still shown.
#[test]
fn names_come_first_at_every_width() {
    assert_eq!(LONGEST.len(), 255);
    let t = TestDir::new();
    tree(t.path());
    let long = "a_very_long_file_name_that_goes_on_and_on.tar.gz";
    write_file(&t.path().join("root").join(long), 8 << 10);
    write_file(&t.path().join("root").join(LONGEST), 4 << 10);
    for (width, titles, bar) in [
        (40, "  Total  Reclaimable  Name", false),
        (60, "  Total  Exclusive  Shared  Reclaimable  Name", false),
        (80, "  Total  Exclusive  Shared  Reclaimable", true),
        (200, "  Total  Exclusive  Shared  Reclaimable", true),
    ] {
        let Some(tmux) = Tmux::shell_sized(&format!("widths{width}"), width, 30) else {
            return;
        };
        let s = start_for(&tmux, t.path(), "root", "sort: total");
        assert!(s.contains(titles), "{width}:\n{s}");
        assert_eq!(s.contains('%'), bar, "{width}: the bar\n{s}");
        assert_eq!(s.contains('█'), bar, "{width}: the bar\n{s}");
        let row = |end: &str| {
            s.lines()
                .find(|l| l.trim_end().ends_with(end))
                .and_then(|l| l.split_whitespace().last())
                .unwrap_or_else(|| panic!("{width}: no row ending {end}:\n{s}"))
                .to_owned()
        };
        for (full, end) in [(LONGEST, "_end.bin"), (long, ".tar.gz")] {
            let name = row(end);
            assert!(name.chars().count() >= 16, "{width}: {name}\n{s}");
            if name != full {
                let (head, tail) = name.split_once('…').expect("the ellipsis");
                assert!(full.starts_with(head) && full.ends_with(tail), "{name}");
                assert!(!head.is_empty(), "{width}: {name}");
            }
        }
        assert_eq!(row(".tar.gz") == long, width == 200, "{width}\n{s}");
        assert!(row("_end.bin").contains('…'), "{width}\n{s}");
        if width == 80 {
            // The full name is in the info, wrapped.
            tmux.keys(&["End"]);
            let s = pressed(&tmux, "i", "(any key closes this)");
            let boxed: String = s
                .lines()
                .filter_map(|l| l.split('│').nth(1))
                .flat_map(|l| l.split_whitespace())
                .collect();
            assert!(boxed.contains(&format!("'root/{LONGEST}'")), "{s}");
            tmux.keys(&["x"]);
            tmux.wait_for("the info closed", |s| !s.contains("(any key closes"));
        }
        // Nothing past the screen's edge (tmux would wrap it).
        assert_eq!(names(&s).len(), if bar { 5 } else { 0 }, "{width}\n{s}");
        tmux.keys(&["q"]);
        assert_terminal_restored(&tmux, 0);
    }
    // A deep path: its end and the sort stay.
    let mut deep = t.path().join("root/zbig");
    for d in [
        "level_one",
        "level_two",
        "level_three",
        "level_four",
        "level_five",
    ] {
        deep.push(d);
    }
    fs::create_dir_all(&deep).unwrap();
    let Some(tmux) = Tmux::shell_sized("widths-deep", 60, 30) else {
        return;
    };
    let arg = "root/zbig/level_one/level_two/level_three/level_four/level_five";
    let s = start_for(&tmux, t.path(), arg, "sort: total, largest first");
    let head = s.lines().find(|l| l.contains("sort:")).unwrap();
    assert!(head.contains(" …/level_four/level_five "), "{s}");
    assert!(
        head.trim_end().ends_with("sort: total, largest first"),
        "{s}"
    );
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
}

/// `root/zbig/{data 300K, sub/x 1K}`, `root/asmall/data` (20K),
/// `root/mid.bin` (100K), `root/.hidden` (1K); modified in 2020 (zbig),
/// 2022 (asmall), 2010 (mid.bin), 2005 (.hidden), at noon UTC.
fn dated(dir: &Path) {
    let root = dir.join("root");
    fs::create_dir_all(root.join("zbig/sub")).unwrap();
    fs::create_dir_all(root.join("asmall")).unwrap();
    write_file(&root.join("zbig/data"), 300 << 10);
    write_file(&root.join("zbig/sub/x"), 1 << 10);
    write_file(&root.join("asmall/data"), 20 << 10);
    write_file(&root.join("mid.bin"), 100 << 10);
    write_file(&root.join(".hidden"), 1 << 10);
    let year = |y: u64| {
        // Days from 1970 to 1 June of year y, roughly: the month is what
        // the test reads, the day may move.
        let days = (y - 1970) * 365 + (y - 1969) / 4 + 151;
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(days * 86400 + 12 * 3600)
    };
    for (p, y) in [
        ("zbig/data", 2020),
        ("zbig/sub/x", 2019),
        ("zbig/sub", 2019),
        ("zbig", 2020),
        ("asmall/data", 2022),
        ("asmall", 2022),
        ("mid.bin", 2010),
        (".hidden", 2005),
    ] {
        fs::File::open(root.join(p))
            .unwrap()
            .set_modified(year(y))
            .unwrap();
    }
}

/// ncdu's keys: `e` hides dotfiles, `c` and `C` the count and its sort,
/// `m` and `M` the time and its sort, `A` apparent sizes, `<` up, `/`
/// filters, `i` the entry in full; "1 entry" and "keep it" for one.
#[test]
fn ncdu_keys_info_filter_counts_and_times() {
    let Some(tmux) = Tmux::shell("browse-ncdu") else {
        return;
    };
    let t = TestDir::new();
    dated(t.path());
    let s = start_for(&tmux, t.path(), "-B1 root", "↑↓→← move");
    assert_eq!(names(&s), ["zbig/", "mid.bin", "asmall/", ".hidden"], "{s}");
    assert!(s.contains("·  4 entries"), "{s}");
    let s = pressed(&tmux, "e", "hidden entries hidden");
    assert_eq!(names(&s), ["zbig/", "mid.bin", "asmall/"], "{s}");
    let s = pressed(&tmux, "e", "4 entries");
    assert!(!s.contains("hidden entries hidden"), "{s}");
    // The count: zbig holds data, sub and sub/x.
    let s = pressed(&tmux, "c", "Items");
    let zbig = s.lines().find(|l| l.ends_with("zbig/")).unwrap();
    assert!(zbig.contains("  3  "), "{s}");
    let s = pressed(&tmux, "C", "sort: items, most first");
    assert_eq!(names(&s), ["zbig/", "asmall/", ".hidden", "mid.bin"], "{s}");
    // The time: the newest under each.
    let s = pressed(&tmux, "m", "Modified");
    let line = |s: &str, n: &str| s.lines().find(|l| l.ends_with(n)).unwrap().to_owned();
    assert!(line(&s, "zbig/").contains("2020-"), "{s}");
    assert!(line(&s, "asmall/").contains("2022-"), "{s}");
    let s = pressed(&tmux, "M", "sort: modified, newest first");
    assert_eq!(names(&s), ["asmall/", "zbig/", "mid.bin", ".hidden"], "{s}");
    // Apparent in place of Total, and back.
    pressed(&tmux, "s", "sort: total, largest first");
    let s2 = pressed(&tmux, "A", "sort: apparent");
    assert!(s2.contains("Apparent  Exclusive"), "{s2}");
    assert!(!s2.contains("  Total  "), "{s2}");
    pressed(&tmux, "A", "sort: total");
    // < goes up as ← does; one entry is "1 entry".
    tmux.keys(&["End", "Up"]);
    let s = pressed(&tmux, "Enter", "root/asmall");
    assert!(s.contains("·  1 entry"), "{s}");
    let s = pressed(&tmux, "d", "Delete 1 entry?");
    assert!(s.contains("Esc to keep it:"), "{s}");
    tmux.keys(&["Escape"]);
    tmux.wait_for("the confirmation gone", |s| !s.contains("Delete 1 entry?"));
    let s = pressed(&tmux, "<", "mid.bin");
    assert_eq!(
        s.lines().filter(|l| l.contains("root/asmall")).count(),
        0,
        "{s}"
    );
    // The filter: typed, applied by Enter, cleared by Esc.
    tmux.keys(&["/"]);
    tmux.wait_for("the filter line", |s| s.contains("filter: _"));
    tmux.keys(&["bi"]);
    let s = pressed(&tmux, "Enter", "entries, filter: bi");
    assert_eq!(names(&s), ["zbig/", "mid.bin"], "{s}");
    tmux.keys(&["/"]);
    tmux.wait_for("the filter to edit", |s| s.contains("filter: bi_"));
    let s = pressed(&tmux, "Escape", "4 entries");
    assert_eq!(names(&s).len(), 4, "{s}");
    // The info: the path, the figures, the count, the inode, the time.
    tmux.keys(&["Home"]);
    // The last line drawn: the whole box is on the screen.
    let s = pressed(&tmux, "i", "(any key closes this)");
    for want in [
        "Path         'root/zbig'",
        "Type         directory",
        "Total        ",
        "Exclusive    ",
        "Shared       ",
        "Apparent     ",
        "Items        3 (2 files, 1 directory)",
        "Inode        ",
        "Links        3 (now)",
        "Modified     2020-",
    ] {
        assert!(s.contains(want), "{want}:\n{s}");
    }
    assert!(
        s.contains("Reclaimable is exact") || s.contains("Reclaimable is not exact"),
        "{s}"
    );
    tmux.keys(&["x"]);
    tmux.wait_for("the info closed", |s| !s.contains("Reclaimable is"));
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
}

/// At 120 columns, and at 80x24, the help shows every line whole, and
/// how to quit.
#[test]
fn the_help_is_whole_at_120_columns() {
    let Some(tmux) = Tmux::shell_sized("browse-help", 120, 40) else {
        return;
    };
    let t = TestDir::new();
    tree(t.path());
    start_for(&tmux, t.path(), "root", "↑↓→← move");
    let s = pressed(&tmux, "?", " Marked: what deleting all of them frees");
    for want in [
        "delete the marked (or this) entry: type yes",
        "filter by name: type, Enter applies, Esc clears",
        "sort by Total, Exclusive, Shared, Reclaimable",
        "q  Ctrl-C",
        "Marked: what deleting all of them frees, shared once",
    ] {
        assert!(s.contains(want), "{want}:\n{s}");
    }
    tmux.keys(&["x"]);
    tmux.wait_for("the help closed", |s| !s.contains("sdu -i: keys"));
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
    // And whole at 80x24, ncdu's size.
    let Some(tmux) = Tmux::shell_sized("browse-help-80", 80, 24) else {
        return;
    };
    start_for(&tmux, t.path(), "root", "↑↓→← move");
    let s = pressed(&tmux, "?", " Marked: what deleting all of them frees");
    for want in [
        "↑ ↓ k j PgUp PgDn",
        "q  Ctrl-C",
        "entry: type yes",
        "e empty directory  x gone",
    ] {
        assert!(s.contains(want), "{want}:\n{s}");
    }
    tmux.keys(&["x"]);
    tmux.wait_for("the help closed", |s| !s.contains("sdu -i: keys"));
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
}

/// A saved scan's footer offers what it can do: no `d delete`.
#[test]
fn a_saved_scans_footer_does_not_offer_deleting() {
    let Some(tmux) = Tmux::shell("browse-saved") else {
        return;
    };
    let t = TestDir::new();
    tree(t.path());
    let file = t.path().join("scan.json");
    run(Command::new(sdu_bin())
        .current_dir(t.path())
        .arg("--export")
        .arg(&file)
        .arg("root"))
    .assert_ok();
    let s = start_for(
        &tmux,
        t.path(),
        &format!("--import '{}'", file.display()),
        "q quit  (saved scan)",
    );
    assert!(s.contains("q quit  (saved scan)"), "{s}");
    assert!(!s.contains("d delete"), "{s}");
    let s = pressed(&tmux, "?", "A saved scan (--import) cannot delete");
    assert!(!s.contains("type yes"), "{s}");
    tmux.keys(&["x"]);
    tmux.wait_for("the help closed", |s| !s.contains("sdu -i: keys"));
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
}
