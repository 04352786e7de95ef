//! sdu on a real terminal (tmux): Ctrl-C and SIGTERM during a scan clear
//! the progress line before sdu dies by the signal, and a SIGINT the shell
//! ignores stays ignored.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::util::*;

/// The prompt of the shell in the pane.
const PROMPT: &str = "sdu-prompt$";

/// A tmux server of its own, with one interactive bash per test, killed
/// on drop.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn new(test: &str) -> Option<Tmux> {
        if run(Command::new("tmux").arg("-V")).code != Some(0) {
            return unavailable("tmux is not installed");
        }
        if run(Command::new("bash").arg("--version")).code != Some(0) {
            return unavailable("bash is not installed");
        }
        let t = Tmux {
            socket: format!("sdu-term-{}-{test}", std::process::id()),
        };
        // A bare bash: no rc files, a prompt of our own, 150x40.
        let shell = format!(
            "env -i PATH=/usr/local/bin:/usr/bin:/bin TERM=screen PS1='{PROMPT} ' \
             bash --norc --noprofile -i"
        );
        let o = t.cmd(&[
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            "150",
            "-y",
            "40",
            &shell,
        ]);
        assert_eq!(o.code, Some(0), "{o:?}");
        t.wait_for("the first prompt", |s| last_line(s) == PROMPT);
        Some(t)
    }

    fn cmd(&self, args: &[&str]) -> Output {
        run(Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args))
    }

    /// Types `keys` (tmux key names: `Enter`, `C-c`, or literal text).
    fn keys(&self, keys: &[&str]) {
        let mut a = vec!["send-keys", "-t", "t"];
        a.extend_from_slice(keys);
        let o = self.cmd(&a);
        assert_eq!(o.code, Some(0), "{o:?}");
    }

    /// What the pane shows now, trailing blanks trimmed from each line.
    fn screen(&self) -> String {
        let o = self.cmd(&["capture-pane", "-p", "-t", "t"]);
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Polls the screen until `done` holds; fails after 60 s.
    fn wait_for(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if done(&s) {
                return s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "no {what} after 60 s; the screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The pid of the shell's one child (the running sdu).
    fn child_of_shell(&self) -> u32 {
        let o = self.cmd(&["display-message", "-p", "-t", "t", "#{pane_pid}"]);
        let bash = o.stdout_str().trim().to_owned();
        let start = Instant::now();
        loop {
            let kids = fs::read_to_string(format!("/proc/{bash}/task/{bash}/children"))
                .unwrap_or_default();
            if let Some(pid) = kids.split_whitespace().next() {
                return pid.parse().unwrap();
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "no child of bash"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}

/// The last non-empty line of a screen.
fn last_line(screen: &str) -> &str {
    screen.lines().rfind(|l| !l.is_empty()).unwrap_or("")
}

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
    let Some(tmux) = Tmux::new("int") else {
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
    let Some(tmux) = Tmux::new("term") else {
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
    let Some(tmux) = Tmux::new("ign") else {
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
