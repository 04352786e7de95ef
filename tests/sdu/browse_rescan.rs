//! `sdu -i` on a real terminal (tmux), where the tree is not what was
//! scanned: `r` scans again (the cursor and the marks kept), `b` opens a
//! shell in the directory shown and scans again after it, directories
//! that could not be read are marked `!` and `.` as ncdu marks them, with
//! the error in `i`, and `--compare OLD` shows what changed since a saved
//! scan.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::browse::{assert_terminal_restored, names, pressed, settled, start_for};
use crate::delete::mark;
use crate::tmux::Tmux;
use crate::util::*;

/// `root/{a,b,c}/data`, 10, 20 and 30 KiB.
fn abc(dir: &Path) -> std::path::PathBuf {
    let root = dir.join("root");
    for (d, k) in [("a", 10), ("b", 20), ("c", 30)] {
        fs::create_dir_all(root.join(d)).unwrap();
        write_file(&root.join(d).join("data"), k * 1024);
    }
    root
}

/// GNU du's Total of `dir`, in bytes.
fn du_total(dir: &Path) -> u64 {
    let o = run(std::process::Command::new("du")
        .args(["-s", "-B1"])
        .arg(dir));
    o.stdout_str()
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap()
}

/// The row whose name is `name`.
fn row<'s>(screen: &'s str, name: &str) -> &'s str {
    screen
        .lines()
        .find(|l| l.ends_with(&format!("  {name}")))
        .unwrap_or_else(|| panic!("no row {name}:\n{screen}"))
}

/// `r` after the tree changed: the new entry and the new size show, the
/// cursor is on the entry it was on, and the mark is kept.
#[test]
fn r_scans_again_keeping_the_cursor_and_the_marks() {
    let Some(tmux) = Tmux::shell("browse-rescan") else {
        return;
    };
    let t = TestDir::new();
    let root = abc(t.path());
    start_for(&tmux, t.path(), "-B1 root", "↑↓→← move");
    let s = mark(&tmux, &["b"]);
    assert_eq!(names(&s), ["a/", "b/", "c/"], "{s}");
    // The cursor was moved on to c by the mark.
    write_file(&root.join("new"), 40 * 1024);
    write_file(&root.join("c/more"), 1024 * 1024);
    let s = pressed(&tmux, "r", "new");
    assert_eq!(names(&s), ["a/", "b/", "c/", "new"], "{s}");
    let c: u64 = row(&s, "c/")[2..]
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert_eq!(c, du_total(&root.join("c")), "{s}");
    assert!(s.contains(" 1 marked "), "{s}");
    assert!(row(&s, "b/").starts_with('*'), "{s}");
    let s = pressed(&tmux, "i", "Path");
    assert!(
        s.contains("Path         'root/c'"),
        "the cursor moved:\n{s}"
    );
    tmux.keys(&["Escape"]);
    settled(&tmux);
    // b gone since: its mark goes with it.
    fs::remove_dir_all(root.join("b")).unwrap();
    let s = pressed(&tmux, "r", "·  3 entries");
    assert_eq!(names(&s), ["a/", "c/", "new"], "{s}");
    assert!(!s.contains(" marked "), "{s}");
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
}

/// `b`: a shell in the directory shown (`$SHELL` unset here: /bin/sh),
/// with `SDU_LEVEL`; what it does shows in the new scan when it exits.
#[test]
fn b_opens_a_shell_in_the_directory_and_scans_again() {
    let Some(tmux) = Tmux::shell("browse-shell") else {
        return;
    };
    let t = TestDir::new();
    let root = abc(t.path());
    start_for(&tmux, t.path(), "-B1 root", "↑↓→← move");
    pressed(&tmux, "n", "sort: name");
    tmux.keys(&["Home"]);
    pressed(&tmux, "Enter", "root/a");
    tmux.keys(&["b"]);
    tmux.wait_for("the shell", |s| {
        s.contains("sdu: a shell in 'root/a'; exit it to come back to sdu")
    });
    tmux.keys(&[
        "-l",
        "pwd > where; echo \"$SDU_LEVEL\" > level; head -c 65536 /dev/zero > made-in-shell; exit",
    ]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("the new scan", |s| {
        s.contains("made-in-shell") && s.contains(" Name") && s.contains(" sdu  root/a ")
    });
    let s = settled(&tmux);
    assert!(names(&s).contains(&"made-in-shell".to_owned()), "{s}");
    assert_eq!(
        fs::read_to_string(root.join("a/where")).unwrap().trim(),
        root.join("a").canonicalize().unwrap().to_str().unwrap()
    );
    assert_eq!(
        fs::read_to_string(root.join("a/level")).unwrap().trim(),
        "1"
    );
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
}

/// As nobody: `locked/` cannot be read (`!`), `noexec/` can be listed but
/// not its entries (`.`), `part/` holds a locked directory (`.`), and so
/// does the root; `i` gives each one's error. The messages come on
/// standard error after the browser, with du's status 1.
#[test]
fn unreadable_directories_are_marked_and_i_says_why() {
    let Some(tmux) = Tmux::shell("browse-unread") else {
        return;
    };
    let t = TestDir::new();
    fs::set_permissions(t.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let root = t.path().join("root");
    for d in ["open", "locked", "noexec", "part/sub"] {
        fs::create_dir_all(root.join(d)).unwrap();
        write_file(&root.join(d).join("f"), 8192);
    }
    for (d, mode) in [("locked", 0o700), ("noexec", 0o744), ("part/sub", 0o700)] {
        fs::set_permissions(root.join(d), fs::Permissions::from_mode(mode)).unwrap();
    }
    let sdu = sdu_bin();
    tmux.keys(&[
        &format!(
            "clear; cd '{}' && setpriv {} '{}' -i -B1 root 2>err; echo \"st\"atus=$?",
            t.path().display(),
            nobody_args().join(" "),
            sdu.display()
        ),
        "Enter",
    ]);
    tmux.wait_for("the browser", |s| s.contains(" Name"));
    let s = pressed(&tmux, "n", "sort: name");
    for (name, flag) in [
        ("locked/", '!'),
        ("noexec/", '.'),
        ("open/", ' '),
        ("part/", '.'),
    ] {
        assert_eq!(row(&s, name).chars().nth(1), Some(flag), "{name}:\n{s}");
    }
    // Down to each row, then i.
    let info = |downs: usize, want: &str| {
        tmux.keys(&["Home"]);
        for _ in 0..downs {
            tmux.keys(&["Down"]);
        }
        let s = pressed(&tmux, "i", "Path");
        assert!(s.contains(want), "no {want:?}:\n{s}");
        tmux.keys(&["Escape"]);
        settled(&tmux);
    };
    info(0, "Unread       cannot read directory: Permission denied");
    info(1, "Read in part cannot access 'f': Permission denied");
    info(3, "Read in part a directory below was not read in full");
    tmux.keys(&["q"]);
    let s = tmux.wait_for("the status", |s| s.contains("status="));
    assert!(s.contains("status=1"), "{s}");
    let err = fs::read_to_string(t.path().join("err")).unwrap();
    for p in ["root/locked", "root/noexec/f", "root/part/sub"] {
        assert!(err.contains(&format!("'{p}'")), "{p} not in:\n{err}");
    }
    // Saved as nobody, the marks and the errors are kept: ncdu's
    // read_error, and sdu's message.
    let scan = t.path().join("scan.json");
    let o = run(std::process::Command::new("setpriv")
        .args(nobody_args())
        .arg(sdu)
        .args(["--export", "-", "root"])
        .current_dir(t.path()));
    assert_eq!(o.code, Some(1), "{o:?}");
    fs::write(&scan, &o.stdout).unwrap();
    let text = o.stdout_str();
    let line = |name: &str| {
        text.lines()
            .find(|l| l.contains(&format!(r#"{{"name":"{name}","#)))
            .unwrap_or_else(|| panic!("no {name}:\n{text}"))
    };
    assert!(
        line("locked").contains(
            r#""read_error":true,"sdu":{"error":"cannot read directory: Permission denied","unread":true,"#
        ),
        "{text}"
    );
    assert!(
        line("noexec").contains(
            r#""read_error":true,"sdu":{"error":"cannot access 'f': Permission denied","bound":2,"apparent""#
        ),
        "{text}"
    );
    assert!(!line("part").contains("read_error"), "{text}");
    tmux.keys(&["clear", "Enter"]);
    start_for(&tmux, t.path(), "-B1 --import scan.json", "(saved scan)");
    let s = pressed(&tmux, "n", "sort: name");
    for (name, flag) in [("locked/", '!'), ("noexec/", '.'), ("part/", '.')] {
        assert_eq!(row(&s, name).chars().nth(1), Some(flag), "{name}:\n{s}");
    }
    tmux.keys(&["Home"]);
    let s = pressed(&tmux, "i", "Path");
    assert!(
        s.contains("Unread       cannot read directory: Permission denied"),
        "{s}"
    );
    tmux.keys(&["Escape", "q"]);
}

/// `sdu -i --compare OLD`: a Change column (du's growth of each entry),
/// `D` sorts by it, `i` gives the old and new figures, and a directory
/// shown says how many of its entries are gone.
#[test]
fn compare_adds_a_change_column_sorted_by_d_with_both_sides_in_i() {
    let Some(tmux) = Tmux::shell("browse-compare") else {
        return;
    };
    let t = TestDir::new();
    let root = abc(t.path());
    let before = [
        ("a", du_total(&root.join("a"))),
        ("b", du_total(&root.join("b"))),
    ];
    let o = run(std::process::Command::new(sdu_bin())
        .args(["--export", "old.json", "root"])
        .current_dir(t.path()));
    assert_eq!(o.code, Some(0), "{o:?}");
    // Since: a grew by 300 KiB, b lost its file, new appeared.
    write_file(&root.join("a/more"), 300 * 1024);
    fs::remove_file(root.join("b/data")).unwrap();
    write_file(&root.join("new"), 8192);
    start_for(&tmux, t.path(), "-B1 --compare old.json root", "↑↓→← move");
    let s = pressed(&tmux, "D", "sort: change, largest growth first");
    assert!(s.contains(" Change "), "{s}");
    assert_eq!(names(&s), ["a/", "new", "c/", "b/"], "{s}");
    let change = |s: &str, name: &str| -> String {
        let cells: Vec<&str> = row(s, name).split_whitespace().collect();
        // Total Exclusive Shared Reclaimable Change bar... name
        cells[cells.iter().position(|c| c.ends_with('%')).unwrap() - 2].to_owned()
    };
    let grew = du_total(&root.join("a")) - before[0].1;
    let shrank = before[1].1 - du_total(&root.join("b"));
    assert_eq!(change(&s, "a/"), format!("+{grew}"), "{s}");
    assert_eq!(change(&s, "b/"), format!("-{shrank}"), "{s}");
    assert_eq!(change(&s, "new"), "new", "{s}");
    assert_eq!(change(&s, "c/"), "0", "{s}");
    tmux.keys(&["Home"]);
    let s = pressed(&tmux, "i", "Path");
    assert!(
        s.contains(&format!("Before       Total {}", before[0].1)),
        "{s}"
    );
    assert!(s.contains(&format!("Change       Total +{grew}")), "{s}");
    tmux.keys(&["Escape"]);
    settled(&tmux);
    tmux.keys(&["End"]);
    let s = pressed(&tmux, "Enter", "root/b");
    assert!(
        s.contains("1 entry gone from here since the old scan"),
        "{s}"
    );
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
}
