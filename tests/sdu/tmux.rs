//! A tmux server for tests that need a real terminal: a bare bash to type
//! into ([`Tmux::shell`]), or a script whose every output byte is recorded
//! ([`Tmux::record`]).

use std::fs;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::util::*;

/// The prompt of the shell in the pane.
pub const PROMPT: &str = "sdu-prompt$";

/// A tmux server of its own (one per test), killed on drop.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// A server with no tmux session yet, for [`Tmux::record`].
    pub fn server(test: &str) -> Option<Tmux> {
        if run(Command::new("tmux").arg("-V")).code != Some(0) {
            return unavailable("tmux is not installed");
        }
        Some(Tmux {
            socket: format!("sdu-test-{}-{test}", std::process::id()),
        })
    }

    /// A server with one tmux session, `t`, running an interactive bash at its
    /// prompt, for [`Tmux::keys`] and [`Tmux::screen`].
    pub fn shell(test: &str) -> Option<Tmux> {
        Tmux::shell_sized(test, 150, 40)
    }

    /// [`Tmux::shell`] in a pane of `width` columns and `height` lines.
    pub fn shell_sized(test: &str, width: u16, height: u16) -> Option<Tmux> {
        if run(Command::new("bash").arg("--version")).code != Some(0) {
            return unavailable("bash is not installed");
        }
        let t = Tmux::server(test)?;
        // A bare bash: no rc files, a prompt of our own.
        let shell = format!(
            "env -i PATH=/usr/local/bin:/usr/bin:/bin TERM=screen PS1='{PROMPT} ' \
             bash --norc --noprofile -i"
        );
        let (w, h) = (width.to_string(), height.to_string());
        let o = t.cmd(&["new-session", "-d", "-s", "t", "-x", &w, "-y", &h, &shell]);
        assert_eq!(o.code, Some(0), "{o:?}");
        t.wait_for("the first prompt", |s| last_line(s) == PROMPT);
        Some(t)
    }

    pub fn cmd(&self, args: &[&str]) -> Output {
        run(Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args))
    }

    /// Types `keys` (tmux key names: `Enter`, `C-c`, or literal text).
    pub fn keys(&self, keys: &[&str]) {
        let mut a = vec!["send-keys", "-t", "t"];
        a.extend_from_slice(keys);
        let o = self.cmd(&a);
        assert_eq!(o.code, Some(0), "{o:?}");
    }

    /// What the pane shows now, trailing blanks trimmed from each line.
    pub fn screen(&self) -> String {
        let o = self.cmd(&["capture-pane", "-p", "-t", "t"]);
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Polls the screen until `done` holds; fails after 60 s.
    pub fn wait_for(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
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
    pub fn child_of_shell(&self) -> u32 {
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

    /// Runs `script` (sh) in a new 150x40 window whose every byte of output
    /// is recorded; returns (recorded bytes, final screen) once the script
    /// has printed `SDU-DONE`.
    pub fn record(&self, dir: &Path, script: &str) -> (Vec<u8>, String) {
        static N: AtomicUsize = AtomicUsize::new(0);
        let name = format!("s{}", N.fetch_add(1, Ordering::Relaxed));
        let log = dir.join(format!("{name}.log"));
        let go = dir.join(format!("{name}.go"));
        let full = format!(
            "while [ ! -e '{}' ]; do sleep 0.05; done; {script}; echo SDU-DONE; sleep 600",
            go.display()
        );
        let o = self.cmd(&[
            "new-session",
            "-d",
            "-s",
            &name,
            "-x",
            "150",
            "-y",
            "40",
            &full,
        ]);
        assert_eq!(o.code, Some(0), "{o:?}");
        let pipe = format!("cat >> '{}'", log.display());
        let o = self.cmd(&["pipe-pane", "-t", &name, &pipe]);
        assert_eq!(o.code, Some(0), "{o:?}");
        fs::write(&go, b"").unwrap();
        let start = Instant::now();
        let screen = loop {
            let o = self.cmd(&["capture-pane", "-p", "-t", &name]);
            let s = String::from_utf8_lossy(&o.stdout).into_owned();
            if s.contains("SDU-DONE") {
                break s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "no SDU-DONE after 120 s; screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        // Let pipe-pane's cat write out what it has.
        std::thread::sleep(Duration::from_millis(300));
        (fs::read(&log).unwrap_or_default(), screen)
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}

/// The last non-empty line of a screen.
pub fn last_line(screen: &str) -> &str {
    screen.lines().rfind(|l| !l.is_empty()).unwrap_or("")
}
