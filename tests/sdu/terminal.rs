//! sdu on a real terminal (tmux): Ctrl-C and SIGTERM during a scan clear
//! the progress line before sdu dies by the signal, and a SIGINT the shell
//! ignores stays ignored. The browser: every signal that ends it puts the
//! terminal back first, and Ctrl-Z stops it cleanly, `fg` drawing it whole.

use std::fs;
use std::path::Path;

use crate::browse::{assert_terminal_restored, start};
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

/// The pane shows the normal screen (not the alternate one) and its
/// cursor.
fn assert_normal_screen_and_cursor(tmux: &Tmux) {
    let o = tmux.cmd(&[
        "display-message",
        "-p",
        "-t",
        "t",
        "alt=#{alternate_on} cursor=#{cursor_flag}",
    ]);
    assert_eq!(o.stdout_str().trim(), "alt=0 cursor=1", "{}", tmux.screen());
}

/// The browser, then each signal whose default action ends a process and
/// that nothing else in sdu handles (SIGINT and SIGTERM: the signal
/// thread; the faults and the others: `the_terminal_survives_an_abort`)
/// sent from elsewhere: the terminal is in cooked mode with echo, on the
/// normal screen with its cursor, and bash saw a death by that signal.
/// Guard: the handlers of crates/sdu-sys/src/tty.rs.
#[test]
fn the_browser_dies_by_any_signal_with_the_terminal_put_back() {
    let Some(tmux) = Tmux::shell("browse-signals") else {
        return;
    };
    let t = TestDir::new();
    fs::write(t.path().join("f"), b"x").unwrap();
    use rustix::process::Signal;
    for (sig, name) in [
        (Signal::USR1, "USR1"),
        (Signal::USR2, "USR2"),
        (Signal::ALARM, "ALRM"),
        (Signal::VTALARM, "VTALRM"),
        (Signal::PROF, "PROF"),
    ] {
        tmux.keys(&["clear", "Enter"]);
        start(&tmux, t.path(), "-B1 .");
        let pid = tmux.child_of_shell();
        let pid = rustix::process::Pid::from_raw(pid as i32).expect("a pid");
        rustix::process::kill_process(pid, sig).unwrap_or_else(|e| panic!("kill -{name}: {e}"));
        let status = 128 + sig.as_raw() as u32;
        eprintln!("SIG{name}: status {status} expected");
        assert_terminal_restored(&tmux, status);
        assert_normal_screen_and_cursor(&tmux);
    }
}

/// Ctrl-Z in the browser: the shell's prompt comes back on the normal
/// screen, in cooked mode with echo and the cursor shown; `fg` brings the
/// browser back drawn whole (its columns and rows), and it still takes
/// keys. The same for SIGTSTP sent from elsewhere. Guard: the SIGTSTP
/// handler of crates/sdu-sys/src/tty.rs and the redraw in src/browse/mod.rs.
#[test]
fn ctrl_z_stops_the_browser_cleanly_and_fg_draws_it_again() {
    let Some(tmux) = Tmux::shell("browse-stop") else {
        return;
    };
    let t = TestDir::new();
    for d in ["alpha", "beta"] {
        fs::create_dir(t.path().join(d)).unwrap();
        fs::write(t.path().join(d).join("f"), b"x").unwrap();
    }
    start(&tmux, t.path(), "-B1 .");
    for how in ["Ctrl-Z", "kill -TSTP"] {
        if how == "Ctrl-Z" {
            tmux.keys(&["C-z"]);
        } else {
            let pid = tmux.child_of_shell();
            let pid = rustix::process::Pid::from_raw(pid as i32).expect("a pid");
            rustix::process::kill_process(pid, rustix::process::Signal::TSTP).unwrap();
        }
        let s = wait_briefly(&tmux, |s| last_line(s) == PROMPT)
            .unwrap_or_else(|s| panic!("{how}: no prompt within 10 s; the screen:\n{s}"));
        assert!(s.contains("Stopped"), "{how}:\n{s}");
        assert_normal_screen_and_cursor(&tmux);
        tmux.keys(&[
            "clear; stty -a | tr -s ' ;\\n' '\\n' | grep -E '^-?(icanon|echo)$' \
             | tr '\\n' ' '; echo \"E\"ND",
            "Enter",
        ]);
        let s = tmux.wait_for("stty's settings", |s| {
            s.lines().any(|l| l.ends_with(" END"))
        });
        assert!(
            s.contains("icanon echo") && !s.contains("-icanon") && !s.contains("-echo"),
            "{how}: the terminal is not in cooked mode with echo:\n{s}"
        );
        tmux.keys(&["clear; fg", "Enter"]);
        let s = wait_briefly(&tmux, |s| {
            s.contains("Reclaimable") && s.contains("alpha/") && s.contains("beta/")
        })
        .unwrap_or_else(|s| panic!("{how}: fg did not draw the browser again:\n{s}"));
        assert!(s.contains(" Name"), "{s}");
        // It takes keys: sorted by name.
        crate::browse::press(&tmux, "n", "sort: name");
    }
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
    assert_normal_screen_and_cursor(&tmux);
}

/// Polls the screen until `done` holds: `Err(screen)` after 10 s.
fn wait_briefly(tmux: &Tmux, done: impl Fn(&str) -> bool) -> Result<String, String> {
    let start = std::time::Instant::now();
    loop {
        let s = tmux.screen();
        if done(&s) {
            return Ok(s);
        }
        if start.elapsed() > std::time::Duration::from_secs(10) {
            return Err(s);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The progress line shows the bytes counted so far beside the entries
/// (as ncdu and gdu show them): read twice during a scan of many copies
/// of one tree, each reading is GNU du's Total of the tree times the
/// copies walked (entries shown over the tree's entries), within the
/// copies the walking tasks hold and the rounding of `-h`; and the second is no less
/// than the first.
#[test]
fn the_progress_line_shows_the_bytes_counted() {
    let Some(tmux) = Tmux::shell("bytes") else {
        return;
    };
    let t = TestDir::new();
    scan_tree(t.path());
    scan_script(t.path(), 3_000);
    let du = Du::new(&["-B1"]).bytes(&[], t.path().join("root").as_os_str());
    // The root, 20 directories, 1,000 files.
    let per_copy = 1 + 20 + 1_000;
    start_scan(&tmux, t.path());
    // `⠁ 189,720 entries, 728M, 142,553/s  root/dir003`: the entries.
    let entries_of = |s: &str| -> Option<u64> {
        let line = s.lines().find(|l| l.contains(PROGRESS))?;
        line.split_whitespace()
            .nth(1)?
            .replace(',', "")
            .parse()
            .ok()
    };
    let reading = |after: u64| -> (u64, u64) {
        let screen = tmux.wait_for("a progress line past the first copies", |s| {
            entries_of(s).is_some_and(|e| e > after)
        });
        let line = screen.lines().find(|l| l.contains(PROGRESS)).unwrap();
        let words: Vec<&str> = line.split_whitespace().collect();
        let entries = entries_of(&screen).unwrap();
        assert_eq!(words[2], "entries,", "{line}");
        let size = words[3].strip_suffix(',').expect(line);
        let (num, unit) = size.split_at(size.len() - 1);
        let shift = match unit {
            "K" => 10,
            "M" => 20,
            "G" => 30,
            _ => panic!("no size in {line:?}"),
        };
        let bytes = (num.parse::<f64>().expect(line) * f64::from(1u32 << shift)) as u64;
        // -h rounds up to one decimal below 10, to a whole unit above.
        let step = if num.contains('.') {
            (1u64 << shift) / 10
        } else {
            1u64 << shift
        };
        let expect = entries as f64 / per_copy as f64 * du as f64;
        let (lo, hi) = (bytes.saturating_sub(step) as f64, bytes as f64);
        // Each walking task adds its entries and bytes when it ends, and
        // a directory's bytes can be counted by another task than its
        // entries: the two may be apart by what the tasks in flight hold,
        // about a copy a thread.
        let slack = 2.0 * du as f64;
        assert!(
            expect >= lo - slack && expect <= hi + slack,
            "{line}: {entries} entries are {expect} bytes of copies of du's {du}"
        );
        (entries, bytes)
    };
    let first = reading(2 * per_copy);
    let second = reading(first.0);
    assert!(
        second.0 >= first.0 && second.1 >= first.1,
        "{first:?} then {second:?}"
    );
    tmux.keys(&["C-c"]);
    assert_cleared_and_status(&tmux, 130);
}
