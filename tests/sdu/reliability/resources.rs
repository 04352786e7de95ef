//! Resources: under `ulimit -n 32`, and under `ulimit -v` at twice the
//! measured need, the output of an unlimited run; SIGINT ends a run
//! promptly, without output.

use std::fs;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{clone_file, xfs};
use crate::args;
use crate::util::*;

/// Under `ulimit -n 32`, a deep and a wide reflinked tree give exactly
/// the JSON of an unlimited run.
#[test]
fn ulimit_n_32_gives_the_same_json_on_reflink_xfs() {
    let Some(l) = xfs() else { return };
    let root = l.path().join("fds");
    fs::create_dir(&root).unwrap();
    let seed = root.join("seed");
    write_file(&seed, 32 * 1024);
    // Deep: 300 levels, a clone every 10.
    let mut p = root.join("deep");
    for i in 0..300 {
        fs::create_dir(&p).unwrap();
        if i % 10 == 0 {
            clone_file(&seed, &p.join("c")).unwrap();
        }
        p = p.join("d");
    }
    // Wide: 60 directories of 30 entries, 10 subdirectories each.
    for k in 0..60 {
        let d = root.join(format!("w{k:02}"));
        fs::create_dir(&d).unwrap();
        for f in 0..20 {
            if f % 4 == 0 {
                clone_file(&seed, &d.join(format!("c{f}"))).unwrap();
            } else {
                write_file(&d.join(format!("f{f}")), 1000 * f);
            }
        }
        for s in 0..10 {
            fs::create_dir(d.join(format!("s{s}"))).unwrap();
            write_file(&d.join(format!("s{s}/x")), 5000);
        }
    }
    sync_fs(l.path());
    let (want, _) = sdu_json_raw(&args!["-a", &root]);
    let out = sdu_with_fd_limit(32, &args!["--json", "-a", &root]);
    out.assert_ok();
    assert!(out.stdout == want, "JSON differs under ulimit -n 32");
}

/// Polls `pid`'s VmPeak (KiB) until `done` says stop.
fn vm_peak(pid: u32) -> Option<u64> {
    let s = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmPeak:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Measures the virtual memory sdu needs on a tree (VmPeak, read while the
/// finished report is blocked on a full stdout pipe), then reruns it under
/// `ulimit -v` at twice that: same output.
#[test]
fn ulimit_v_at_twice_the_measured_need_gives_the_same_output() {
    let s = Scratch::new();
    let root = s.mkdir("vm");
    medium_tree(&root, 30, 200);
    let args = args!["--json", "-a", &root];
    let mut child = Command::new(sdu_bin())
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut peak = 0;
    let start = Instant::now();
    // The report (> 64 KiB) fills the pipe: once sdu has written that
    // much, it is blocked with everything it allocated still mapped.
    loop {
        if let Some(v) = vm_peak(pid) {
            peak = peak.max(v);
        }
        let io = fs::read_to_string(format!("/proc/{pid}/io")).unwrap_or_default();
        let wchar: u64 = io
            .lines()
            .find_map(|l| l.strip_prefix("wchar: "))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        // BufWriter writes a little under its 64 KiB at a time.
        if wchar >= 32 * 1024 {
            std::thread::sleep(Duration::from_millis(100));
            peak = peak.max(vm_peak(pid).unwrap_or(0));
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "sdu never wrote");
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut want = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut want).unwrap();
    assert!(child.wait().unwrap().success());
    assert!(peak > 0, "no VmPeak read");
    let limit = 2 * peak;
    let out = run(Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {limit} && exec \"$0\" \"$@\""))
        .arg(sdu_bin())
        .args(&args));
    eprintln!("ulimit -v: VmPeak {peak} KiB, limit {limit} KiB");
    out.assert_ok();
    assert!(out.stdout == want, "output differs under ulimit -v {limit}");
}

/// sdu run with SIGINT's default action, whatever the tests inherited: a
/// background job of a shell without job control starts with SIGINT
/// ignored, and sdu rightly keeps it so (`signals::on_interrupt`).
/// `env` resets it, then runs sdu as the same process.
fn interruptible() -> Command {
    let mut c = Command::new("env");
    c.arg("--default-signal=INT").arg(sdu_bin());
    c
}

/// SIGINT during a long walk: sdu exits within 5 s (a second on an idle
/// machine; the rest is room for a loaded one: a walk that went on to
/// its end would exit 0 with its report, which fails below), by the
/// signal or with a non-zero status, and prints nothing on stdout; interrupted
/// while its report is blocked on a full pipe, it does not exit 0.
#[test]
fn sigint_exits_promptly_without_output() {
    let s = Scratch::new();
    let root = s.mkdir("int");
    medium_tree(&root, 100, 300);
    let args = args!["-a", "-j1", &root, &root, &root, &root, &root, &root];
    // During the walk.
    let mut child = interruptible()
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(150));
    let sent = Instant::now();
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(
            sent.elapsed() < Duration::from_secs(5),
            "sdu still running 5 s after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut stdout = Vec::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut stdout)
        .unwrap();
    assert!(!status.success(), "exit 0 after SIGINT: {status:?}");
    assert!(
        stdout.is_empty(),
        "output after SIGINT during the walk: {} bytes",
        stdout.len()
    );
    // While writing: the report is blocked on the pipe we do not read.
    let mut child = interruptible()
        .args(&args[..3])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let start = Instant::now();
    loop {
        let io = fs::read_to_string(format!("/proc/{pid}/io")).unwrap_or_default();
        if io
            .lines()
            .find_map(|l| l.strip_prefix("wchar: "))
            .and_then(|v| v.parse::<u64>().ok())
            .is_some_and(|w| w >= 32 * 1024)
        {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "sdu never wrote");
        std::thread::sleep(Duration::from_millis(5));
    }
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let mut partial = Vec::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut partial)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(
        !status.success(),
        "exit 0 after SIGINT while writing {} bytes of output",
        partial.len()
    );
}
