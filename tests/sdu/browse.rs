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
    assert!(s.contains("sort by Reclaimable"), "{s}");
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
    let out = run(Command::new("setpriv")
        .args(["--bounding-set", "-sys_admin", "--inh-caps", "-sys_admin"])
        .arg(sdu_bin())
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
