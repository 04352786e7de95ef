//! Running processes: sdu (plain, with a timeout, as JSON, under an fd
//! limit), any command, and what a finished one left behind; whether the
//! test runs as root, as `nobody`, or in CI (where a skip is a failure).

use std::ffi::OsString;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::json::{self, Report};

/// Builds a `Vec<OsString>` from a mix of `&str`, `&Path`, `PathBuf`, ...
#[macro_export]
macro_rules! args {
    ($($a:expr),* $(,)?) => {
        vec![$(::std::ffi::OsStr::new(&$a).to_owned()),*] as Vec<::std::ffi::OsString>
    };
}

pub fn sdu_bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_sdu"))
}

/// What a finished process left behind.
pub struct Output {
    pub stdout: Vec<u8>,
    pub stderr: String,
    /// None when killed by a signal.
    pub code: Option<i32>,
    pub cmdline: String,
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.stdout.len().min(3000);
        write!(
            f,
            "`{}`: exit {:?}\nstderr:\n{}\nstdout ({} bytes, start):\n{}",
            self.cmdline,
            self.code,
            self.stderr,
            self.stdout.len(),
            String::from_utf8_lossy(&self.stdout[..n])
        )
    }
}

impl Output {
    pub fn stdout_str(&self) -> &str {
        std::str::from_utf8(&self.stdout).expect("stdout is not UTF-8")
    }

    /// Panics with the whole story unless exit 0 and an empty stderr.
    pub fn assert_ok(&self) -> &Self {
        assert!(
            self.code == Some(0) && self.stderr.is_empty(),
            "`{}` failed: exit {:?}\nstderr:\n{}\nstdout (start):\n{}",
            self.cmdline,
            self.code,
            self.stderr,
            String::from_utf8_lossy(&self.stdout[..self.stdout.len().min(2000)])
        );
        self
    }
}

pub fn run(cmd: &mut Command) -> Output {
    let cmdline = format!("{cmd:?}");
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmdline}: {e}"));
    Output {
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code(),
        cmdline,
    }
}

/// `run`, but a process still running after `secs` is killed and the test
/// fails (for cases where a bug would hang, such as a symlink cycle).
pub fn run_with_timeout(cmd: &mut Command, secs: u64) -> Output {
    let cmdline = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmdline}: {e}"));
    // Drain the pipes in threads so that a chatty child cannot block.
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut so, &mut v).map(|_| v)
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut se, &mut v).map(|_| v)
    });
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed().as_secs() >= secs {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`{cmdline}` still running after {secs} s: killed");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Output {
        stdout: t_out.join().unwrap().unwrap(),
        stderr: String::from_utf8_lossy(&t_err.join().unwrap().unwrap()).into_owned(),
        code: status.code(),
        cmdline,
    }
}

/// Runs sdu; a run longer than 5 minutes (a hang, say on a FIFO) fails.
pub fn sdu(args: &[OsString]) -> Output {
    run_with_timeout(Command::new(sdu_bin()).args(args), 300)
}

/// `sdu ARGS`, which must succeed silently; returns stdout.
pub fn sdu_ok(args: &[OsString]) -> Vec<u8> {
    let out = sdu(args);
    out.assert_ok();
    out.stdout
}

/// `sdu --json ARGS`, which must succeed silently, parsed strictly.
pub fn sdu_json(args: &[OsString]) -> Report {
    sdu_json_raw(args).1
}

/// `sdu --json ARGS`, which must succeed silently: the bytes and the
/// strictly parsed document.
pub fn sdu_json_raw(args: &[OsString]) -> (Vec<u8>, Report) {
    let mut a = args!["--json"];
    a.extend_from_slice(args);
    let out = sdu_ok(&a);
    let r = json::parse(&out);
    check_header_fields(&r);
    assert_eq!(r.error_count, 0, "errors in a run that exited 0 silently");
    (out, r)
}

/// `sdu --json ARGS`, which must succeed with nothing on stderr but the
/// note on compressed data counted uncompressed (its bytes are the
/// document's `compressed_logical`).
pub fn sdu_json_compressed(args: &[OsString]) -> Report {
    sdu_json_raw_compressed(args).1
}

/// [`sdu_json_compressed`], with the document's bytes.
pub fn sdu_json_raw_compressed(args: &[OsString]) -> (Vec<u8>, Report) {
    let mut a = args!["--json"];
    a.extend_from_slice(args);
    let out = sdu(&a);
    assert_eq!(out.code, Some(0), "{out:?}");
    let r = json::parse(&out.stdout);
    check_header_fields(&r);
    if r.compressed_logical == 0 {
        assert_eq!(out.stderr, "", "{out:?}");
    } else {
        let note = format!("sdu: {} bytes of compressed data in ", r.compressed_logical);
        assert!(
            out.stderr.starts_with(&note) && out.stderr.lines().count() == 1,
            "{out:?}"
        );
    }
    (out.stdout, r)
}

/// The fixed fields of every document.
pub fn check_header_fields(r: &Report) {
    assert_eq!(r.schema, 2, "schema");
    assert_eq!(r.version, env!("CARGO_PKG_VERSION"), "version");
}

/// `sdu ARGS` under `ulimit -n LIMIT`.
pub fn sdu_with_fd_limit(limit: u32, args: &[OsString]) -> Output {
    run(Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -n {limit} && exec \"$0\" \"$@\""))
        .arg(sdu_bin())
        .args(args))
}

/// setpriv arguments that drop to `nobody`.
pub fn nobody_args() -> [&'static str; 3] {
    ["--reuid=65534", "--regid=65534", "--clear-groups"]
}

/// The binary `nobody` can run: the build's own if it can, else a copy in
/// a directory of its own.
pub fn nobody_bin() -> &'static Path {
    use std::os::unix::fs::PermissionsExt;
    static BIN: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let ok = run(Command::new("setpriv")
            .args(nobody_args())
            .arg(sdu_bin())
            .arg("--version"));
        if ok.code == Some(0) {
            return sdu_bin().to_owned();
        }
        let dir = std::env::temp_dir().join(format!("sdu-nobody-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bin = dir.join("sdu");
        std::fs::copy(sdu_bin(), &bin).unwrap();
        for p in [&dir, &bin] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        bin
    })
}

/// A value of `--stats` (`  files mapped (FIEMAP)  12` → 12).
pub fn stat_value(stderr: &str, key: &str) -> u64 {
    let line = stderr
        .lines()
        .find(|l| l.trim_start().starts_with(key))
        .unwrap_or_else(|| panic!("no {key:?} line in --stats:\n{stderr}"));
    let rest = &line.trim_start()[key.len()..];
    rest.split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad --stats line {line:?}"))
}

/// Whether loud failure is wanted instead of a skip (CI sets `CI=true`).
pub fn in_ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// A test that cannot run here: fails in CI, else says so loudly and
/// returns None. Written to fd 2 directly, bypassing the test harness's
/// capture, so that a skip is seen even when the test passes.
pub fn unavailable<T>(why: &str) -> Option<T> {
    if in_ci() {
        panic!("cannot set up the test (CI=true, so this fails): {why}");
    }
    let _ = writeln!(
        std::io::stderr(),
        "\n********** SKIPPED: {why} (set CI=true to make this a failure) **********"
    );
    None
}

pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// setpriv's arguments that drop `CAP_SYS_ADMIN` from the bounding and
/// inheritable sets, so that the program it runs has it in none of its
/// sets.
pub const WITHOUT_SYS_ADMIN: [&str; 4] =
    ["--bounding-set", "-sys_admin", "--inh-caps", "-sys_admin"];

/// sdu, to run as root or (`root` false) without `CAP_SYS_ADMIN`
/// ([`WITHOUT_SYS_ADMIN`]).
pub fn sdu_command(root: bool) -> Command {
    if root {
        Command::new(sdu_bin())
    } else {
        let mut c = Command::new("setpriv");
        c.args(WITHOUT_SYS_ADMIN).arg(sdu_bin());
        c
    }
}

/// [`sdu_command`] run in `cwd`, given 5 minutes.
pub fn sdu_in(cwd: &Path, root: bool, args: &[&str]) -> Output {
    run_with_timeout(sdu_command(root).current_dir(cwd).args(args), 300)
}
