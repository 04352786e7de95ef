//! After the walk, root asks about a PATH only through the fd the walk
//! opened it by: the PATH's owner swapping it, meanwhile, for a FIFO or a
//! symlink to one makes sdu neither block nor open what the name leads to
//! now (docs/SECURITY.md, "Needs no privilege; what root changes").

use std::fs;
use std::io::Read as _;
use std::os::unix::fs::symlink;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustix::fs::{CWD, Mode, OFlags};

use super::clone_file;
use crate::util::*;

/// The attacker, as `nobody` in the directory holding `proj`: swaps `proj`
/// with `fifo`, then with `link`, by rename, in a loop, each state held a
/// moment.
const SWAPPER: &str = r#"
my @alt = ("fifo", "link");
for (my $i = 0; ; $i++) {
    my $alt = $alt[$i % 2];
    rename("proj", "proj.d") or next;
    rename($alt, "proj");
    select(undef, undef, undef, 0.0004);
    rename("proj", $alt);
    rename("proj.d", "proj");
    select(undef, undef, undef, 0.0004);
}
"#;

/// Processes and threads of the attack, stopped on drop (also when the
/// test fails): the swapper killed by its pid, the writer released.
struct Attack {
    swapper: Child,
    done: Arc<AtomicBool>,
    fifo: std::path::PathBuf,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Attack {
    fn drop(&mut self) {
        let _ = self.swapper.kill();
        let _ = self.swapper.wait();
        self.done.store(true, Ordering::Relaxed);
        // A reader, so that the writer's blocked open returns.
        let _fd = rustix::fs::open(&self.fifo, OFlags::RDONLY | OFlags::NONBLOCK, Mode::empty());
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

/// `sdu -s PROJ` as root, run again and again for up to `secs` while
/// PROJ's owner swaps it for a FIFO (no writer: an open of it for reading
/// would wait forever) and for a symlink to a FIFO elsewhere, where a
/// writer waits in open (released only if someone opens it for reading).
/// PROJ holds reflinked files, so that the scan finds shared data and,
/// not holding the whole filesystem, asks it who else holds that data:
/// the stage that once opened PATH again by its name.
fn path_swapped_after_the_walk(kind: FsKind) {
    if !is_root() && unavailable::<()>("the attack needs root running sdu").is_none() {
        return;
    }
    let Some(l) = LoopFs::new(kind) else { return };
    chmod(l.path().parent().unwrap(), 0o755);
    chmod(l.path(), 0o755);
    let home = l.path().join("home");
    let proj = home.join("proj");
    fs::create_dir_all(proj.join("sub")).unwrap();
    fs::write(proj.join("a"), vec![7u8; 1 << 20]).unwrap();
    clone_file(&proj.join("a"), &proj.join("sub/b")).unwrap();
    let aux = l.path().join("aux");
    fs::create_dir(&aux).unwrap();
    let elsewhere = aux.join("fifo");
    rustix::fs::mkfifoat(CWD, home.join("fifo"), Mode::from_raw_mode(0o644)).unwrap();
    rustix::fs::mkfifoat(CWD, &elsewhere, Mode::from_raw_mode(0o600)).unwrap();
    symlink(&elsewhere, home.join("link")).unwrap();
    run(Command::new("chown")
        .args(["-hR", "65534:65534"])
        .arg(&home))
    .assert_ok();
    sync_fs(l.path());
    // Unattacked, the run reaches the stage: it asks about shared ranges.
    let calm = run_with_timeout(
        Command::new(sdu_bin()).args(["-s", "--stats"]).arg(&proj),
        30,
    );
    assert_eq!(calm.code, Some(0), "{calm:?}");
    assert!(
        stat_value(&calm.stderr, "shared ranges asked who else holds them") > 0,
        "the scan did not ask about its shared data: {calm:?}"
    );

    let done = Arc::new(AtomicBool::new(false));
    let released = Arc::new(AtomicU64::new(0));
    let writer = {
        let (done, released, fifo) = (done.clone(), released.clone(), elsewhere.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                if fs::OpenOptions::new().write(true).open(&fifo).is_ok()
                    && !done.load(Ordering::Relaxed)
                {
                    released.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    };
    let swapper = Command::new("setpriv")
        .args(nobody_args())
        .args(["perl", "-e", SWAPPER])
        .current_dir(&home)
        .stdin(Stdio::null())
        .spawn()
        .expect("perl, as nobody");
    let attack = Attack {
        swapper,
        done,
        fifo: elsewhere.clone(),
        writer: Some(writer),
    };
    let secs = super::env_u64("SDU_REOPEN_SECS", 10);
    let start = Instant::now();
    let (mut runs, mut reached) = (0u64, 0u64);
    while start.elapsed() < Duration::from_secs(secs) {
        runs += 1;
        let mut child = Command::new(sdu_bin())
            .args(["-s", "--stats"])
            .arg(&proj)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        loop {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            if t0.elapsed() > Duration::from_secs(10) {
                let wchan = wchans(child.id());
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "run {runs}: sdu blocked for 10 s (threads waiting in {wchan:?}) on a name swapped by its owner"
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        // The run reached the stage after the walk with PROJ's data.
        let mut stats = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stats)
            .unwrap();
        reached += u64::from(asked(&stats) > 0);
        let n = released.load(Ordering::Relaxed);
        assert_eq!(
            n, 0,
            "run {runs}: root opened, through a symlink PROJ's owner planted, a FIFO elsewhere"
        );
    }
    drop(attack);
    let n = released.load(Ordering::Relaxed);
    eprintln!(
        "{kind:?}: {runs} runs in {secs} s, {reached} asked about PROJ's shared data; FIFO opened {n} times"
    );
    assert_eq!(n, 0, "root opened a FIFO through a planted symlink");
    assert!(
        reached > 0,
        "no run asked about PROJ's shared data: the attack never met the stage after the walk"
    );
    assert!(home.join("proj").is_dir() || home.join("proj.d").is_dir());
}

/// The shared ranges a run asked about (`--stats`; 0 without the line).
fn asked(stats: &str) -> u64 {
    const KEY: &str = "shared ranges asked who else holds them";
    stats
        .lines()
        .find_map(|l| l.trim_start().strip_prefix(KEY))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Where each thread of process `pid` waits in the kernel.
fn wchans(pid: u32) -> Vec<String> {
    let mut w: Vec<String> = fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|t| fs::read_to_string(t.path().join("wchan")).ok())
        .collect();
    w.sort();
    w.dedup();
    w
}

#[test]
fn path_swapped_after_the_walk_xfs() {
    path_swapped_after_the_walk(FsKind::Xfs);
}

#[test]
fn path_swapped_after_the_walk_btrfs() {
    path_swapped_after_the_walk(FsKind::Btrfs);
}
