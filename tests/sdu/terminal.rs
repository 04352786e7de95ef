//! sdu on a real terminal (tmux): Ctrl-C and SIGTERM during a scan clear
//! the progress line before sdu dies by the signal, and a SIGINT the shell
//! ignores stays ignored.

use std::fs;
use std::path::Path;

use crate::tmux::{PROMPT, Tmux, last_line};
use crate::util::*;

/// Writes `dir/scan.sh`, which execs (so that it is the shell's child)
/// sdu, progress from the first tick on, walking `roots` copies of
/// `dir/root` one thread: a scan of seconds, however fast the disk.
fn scan_script(dir: &Path, roots: usize) {
    let mut s = format!(
        "cd '{}' && SDU_PROGRESS_DELAY_MS=0 exec '{}' -s -j1 --no-header",
        dir.display(),
        sdu_bin().display()
    );
    for _ in 0..roots {
        s.push_str(" root");
    }
    fs::write(dir.join("scan.sh"), s).unwrap();
}

/// A tree of 1,000 small files in `dir/root`: small, since a tree of
/// many inodes costs much more to make and remove than walking it again.
fn scan_tree(dir: &Path) {
    let root = dir.join("root");
    fs::create_dir(&root).unwrap();
    medium_tree(&root, 20, 50);
}

/// The progress line's own words.
const PROGRESS: &str = " entries, ";

/// Runs `sh scan.sh` in the pane and waits for the progress line.
fn start_scan(tmux: &Tmux, dir: &Path) {
    tmux.keys(&[&format!("sh '{}'", dir.join("scan.sh").display()), "Enter"]);
    tmux.wait_for("progress line", |s| s.contains(PROGRESS));
}

/// After the scan died: no progress left on the screen, the prompt back
/// on the last line, and `$?` what a death by `signal` gives.
fn assert_cleared_and_status(tmux: &Tmux, status: u32) {
    let screen = tmux.wait_for("the prompt after the signal", |s| last_line(s) == PROMPT);
    assert!(
        !screen.contains(PROGRESS),
        "the progress line is still on the screen:\n{screen}"
    );
    tmux.keys(&["echo status=$?", "Enter"]);
    let want = format!("status={status}");
    let screen = tmux.wait_for("the status", |s| {
        s.lines().any(|l| l.starts_with("status="))
    });
    assert!(screen.contains(&want), "want {want}; the screen:\n{screen}");
}

/// Ctrl-C while the progress line shows: the line is gone (with the `^C`
/// the terminal echoed), the prompt is back on a clean line, and bash saw
/// a death by SIGINT (130).
#[test]
fn ctrl_c_clears_the_progress_line() {
    let Some(tmux) = Tmux::shell("int") else {
        return;
    };
    let t = TestDir::new();
    scan_tree(t.path());
    scan_script(t.path(), 3_000);
    start_scan(&tmux, t.path());
    tmux.keys(&["C-c"]);
    assert_cleared_and_status(&tmux, 130);
}

/// SIGTERM (no echo on the terminal) clears the line as well.
#[test]
fn sigterm_clears_the_progress_line() {
    let Some(tmux) = Tmux::shell("term") else {
        return;
    };
    let t = TestDir::new();
    scan_tree(t.path());
    scan_script(t.path(), 3_000);
    start_scan(&tmux, t.path());
    let pid = tmux.child_of_shell();
    let pid = rustix::process::Pid::from_raw(pid as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    assert_cleared_and_status(&tmux, 143);
}

/// With SIGINT ignored by the shell (`trap '' INT`), sdu inherits the
/// ignoring: Ctrl-C neither kills it nor stops the scan, and its report
/// follows, the progress line cleared as at any normal end.
#[test]
fn ignored_sigint_stays_ignored() {
    let Some(tmux) = Tmux::shell("ign") else {
        return;
    };
    let t = TestDir::new();
    scan_tree(t.path());
    scan_script(t.path(), 300);
    tmux.keys(&["trap '' INT", "Enter"]);
    start_scan(&tmux, t.path());
    tmux.keys(&["C-c"]);
    let screen = tmux.wait_for("the prompt after the scan", |s| last_line(s) == PROMPT);
    assert!(
        !screen.contains(PROGRESS),
        "the progress line is still on the screen:\n{screen}"
    );
    // The report's rows end in `root`.
    assert!(
        screen.lines().any(|l| l.ends_with("  root")),
        "Ctrl-C stopped the scan; the screen:\n{screen}"
    );
    tmux.keys(&["echo status=$?", "Enter"]);
    let screen = tmux.wait_for("the status", |s| {
        s.lines().any(|l| l.starts_with("status="))
    });
    assert!(screen.contains("status=0"), "{screen}");
}
