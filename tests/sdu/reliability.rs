//! Reliability: races with a mutator, permissions, hostile trees, resource
//! limits, signals, and what sdu must never do (follow a symlink, block on
//! a FIFO, change an atime). See docs/SECURITY.md for the threat model
//! these tests hold sdu to.
//!
//! Most trees live on a reflink XFS loopback, so that FIEMAP runs on every
//! file with blocks: the races and the permission checks then reach the
//! open + FIEMAP path, not only statx.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io::{Read, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustix::fs::{CWD, FileType, Mode};

use crate::args;
use crate::json::{self, Kind, Report};
use crate::util::*;

/// A reflink XFS loopback whose mount directory (and the private temp dir
/// above it) `nobody` may traverse.
fn xfs() -> Option<LoopFs> {
    let l = LoopFs::new(FsKind::Xfs)?;
    chmod(l.path().parent().unwrap(), 0o755);
    chmod(l.path(), 0o755);
    Some(l)
}

/// `dst` as a reflinked copy of `src` (FICLONE): all its blocks shared.
fn clone_file(src: &Path, dst: &Path) -> std::io::Result<()> {
    let s = File::open(src)?;
    let d = File::create(dst)?;
    rustix::fs::ioctl_ficlone(&d, &s).map_err(std::io::Error::from)
}

/// The invariants every entry of every run must satisfy, whatever the
/// tree did meanwhile (docs/design.md, "Invariants"): a list of violations.
fn invariant_violations(r: &Report) -> Vec<String> {
    let mut bad = Vec::new();
    for e in &r.entries {
        let p = e.path.to_string_lossy();
        if e.exclusive > e.total {
            bad.push(format!(
                "{p}: exclusive {} > total {}",
                e.exclusive, e.total
            ));
        }
        if e.shared > e.total - e.exclusive.min(e.total) {
            bad.push(format!(
                "{p}: shared {} > total {} - exclusive {}",
                e.shared, e.total, e.exclusive
            ));
        }
        if u128::from(e.reclaimable) > u128::from(e.exclusive) + u128::from(e.shared) {
            bad.push(format!(
                "{p}: reclaimable {} > exclusive {} + shared {}",
                e.reclaimable, e.exclusive, e.shared
            ));
        }
    }
    bad
}

/// Runs `sdu --json ARGS` and checks what any run must give: it ends
/// within `secs`, exits 0 or 1, prints one valid document (whose error
/// count agrees with the exit status) and every entry keeps the
/// invariants. Returns the report and stderr.
fn sdu_checked(args: &[OsString], secs: u64) -> (Report, String) {
    let mut a = args!["--json"];
    a.extend_from_slice(args);
    let out = run_with_timeout(Command::new(sdu_bin()).args(&a), secs);
    assert!(
        matches!(out.code, Some(0 | 1)),
        "sdu did not exit 0 or 1: {out:?}"
    );
    let r = json::parse(&out.stdout);
    assert_eq!(
        r.errors > 0,
        out.code == Some(1),
        "exit status disagrees with the error count: {out:?}"
    );
    let bad = invariant_violations(&r);
    assert!(
        bad.is_empty(),
        "invariants broken:\n{}\n{out:?}",
        bad.join("\n")
    );
    (r, out.stderr)
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

// ---------------------------------------------------------------------------
// 1. Races

/// A mutator that creates, deletes, renames and rewrites files and
/// directories (and swaps reflinked files in) under `root` until stopped.
fn mutate(root: &Path, dirs: usize, seed: &Path, stop: &AtomicBool, ops: &AtomicU64) {
    let d = |k: usize| root.join(format!("d{:02}", k % dirs));
    let mut created: std::collections::VecDeque<PathBuf> = Default::default();
    let mut subs: std::collections::VecDeque<PathBuf> = Default::default();
    let mut i = 0usize;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        let k = i % dirs;
        match i % 7 {
            // Create a file; delete old ones.
            0 => {
                let p = d(k).join(format!("new{i}"));
                let _ = fs::write(&p, vec![7u8; 4096 * (1 + i % 3)]);
                created.push_back(p);
                while created.len() > 40 {
                    let _ = fs::remove_file(created.pop_front().unwrap());
                }
            }
            // Move a file to the next directory and back.
            1 => {
                let name = format!("f{:03}", i % 50);
                let (a, b) = (d(k).join(&name), d(k + 1).join(format!("moved{k}")));
                if fs::rename(&a, &b).is_ok() {
                    let _ = fs::rename(&b, &a);
                }
            }
            // A subdirectory with files appears; old ones are removed.
            2 => {
                let s = d(k).join(format!("sub{i}"));
                if fs::create_dir(&s).is_ok() {
                    for j in 0..3 {
                        let _ = fs::write(s.join(format!("g{j}")), vec![1u8; 5000]);
                    }
                    subs.push_back(s);
                }
                while subs.len() > 6 {
                    let _ = fs::remove_dir_all(subs.pop_front().unwrap());
                }
            }
            // Rewrite a file in place with another size.
            3 => {
                let p = d(k).join(format!("f{:03}", (i / 7) % 50));
                if let Ok(mut f) = fs::OpenOptions::new().write(true).truncate(true).open(&p) {
                    let _ = f.write_all(&vec![3u8; 1 + (i * 7919) % 40_000]);
                }
            }
            // Replace a file by a reflinked copy (rename over it).
            4 => {
                let tmp = d(k).join(format!(".tmp{i}"));
                if clone_file(seed, &tmp).is_ok() {
                    let _ = fs::rename(&tmp, d(k).join(format!("f{:03}", (i / 7) % 50)));
                }
            }
            // Rename a directory across parents.
            5 => {
                if let Some(s) = subs.back().cloned() {
                    let to = d(k + 3).join(s.file_name().unwrap());
                    if fs::rename(&s, &to).is_ok() {
                        *subs.back_mut().unwrap() = to;
                    }
                }
            }
            // Replace a subdirectory by a file of the same name, and back.
            _ => {
                let p = d(k).join("flip");
                if fs::create_dir(&p).is_ok() {
                    let _ = fs::write(p.join("in"), b"x");
                    let _ = fs::remove_dir_all(&p);
                    let _ = fs::write(&p, b"now a file");
                } else {
                    let _ = fs::remove_file(&p);
                }
            }
        }
        ops.fetch_add(1, Ordering::Relaxed);
    }
}

/// 200 runs of sdu over a ~2,000-entry reflink XFS tree while a mutator
/// rewrites it: no crash, no hang, exit 0 or 1, valid JSON, invariants on
/// every entry, and no message about a vanished entry.
#[test]
fn races_with_a_mutator_keep_figures_consistent() {
    let Some(l) = xfs() else { return };
    let root = l.path().join("tree");
    fs::create_dir(&root).unwrap();
    let seed = l.path().join("seed");
    write_file(&seed, 64 * 1024);
    let dirs = 40;
    for k in 0..dirs {
        let d = root.join(format!("d{k:02}"));
        fs::create_dir(&d).unwrap();
        for f in 0..50 {
            let p = d.join(format!("f{f:03}"));
            if f % 5 == 0 {
                clone_file(&seed, &p).unwrap();
            } else {
                write_file(&p, 100 + (f * 977) % 20_000);
            }
        }
    }
    let iters = env_u64("SDU_RACE_ITERS", 200);
    let stop = Arc::new(AtomicBool::new(false));
    let ops = Arc::new(AtomicU64::new(0));
    let mutator = {
        let (root, seed, stop, ops) = (root.clone(), seed.clone(), stop.clone(), ops.clone());
        std::thread::spawn(move || mutate(&root, dirs, &seed, &stop, &ops))
    };
    let mut messages: BTreeMap<String, u64> = BTreeMap::new();
    let mut failures = Vec::new();
    for i in 0..iters {
        let mut a = args!["-a"];
        if i % 4 == 3 {
            a.push("-j1".into());
        }
        a.push(root.clone().into());
        let r = std::panic::catch_unwind(|| sdu_checked(&a, 60));
        match r {
            Ok((_, stderr)) => {
                for line in stderr.lines() {
                    if line.contains("No such file or directory") {
                        failures.push(format!("run {i}: a vanished entry was reported: {line}"));
                    }
                    // The message without its path, for the summary.
                    let kind = line.rsplit(": ").next().unwrap_or(line).to_owned();
                    *messages.entry(kind).or_default() += 1;
                }
            }
            Err(e) => {
                let msg = e
                    .downcast_ref::<String>()
                    .cloned()
                    .unwrap_or_else(|| "panic".into());
                failures.push(format!("run {i}: {msg}"));
            }
        }
        if failures.len() >= 3 {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    mutator.join().unwrap();
    eprintln!(
        "races: {iters} runs, {} mutations, messages: {messages:?}",
        ops.load(Ordering::Relaxed)
    );
    assert!(
        ops.load(Ordering::Relaxed) > iters,
        "the mutator hardly ran"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A name that flips between two inodes (a 256 KiB reflinked clone, all
/// shared, and an 8 KiB unshared file) by rename in a tight loop: every
/// run's figures for it come from one of the two, never a mix (statx of
/// one, FIEMAP of the other).
#[test]
fn file_replaced_between_statx_and_fiemap_gives_one_inodes_figures() {
    let Some(l) = xfs() else { return };
    let seed = l.path().join("seed");
    write_file(&seed, 256 * 1024);
    sync_fs(l.path());
    let dir = l.path().join("sw");
    fs::create_dir(&dir).unwrap();
    let x = dir.join("x");
    fs::write(&x, vec![9u8; 8192]).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flips = Arc::new(AtomicU64::new(0));
    let mutator = {
        let (dir, seed, stop, flips) = (dir.clone(), seed.clone(), stop.clone(), flips.clone());
        std::thread::spawn(move || {
            let tmp = dir.join(".tmp");
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                let made = if i % 2 == 0 {
                    clone_file(&seed, &tmp)
                } else {
                    fs::write(&tmp, vec![9u8; 8192]).and_then(|()| File::open(&tmp)?.sync_all())
                };
                if made.is_ok() && fs::rename(&tmp, dir.join("x")).is_ok() {
                    flips.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    };
    let iters = env_u64("SDU_REPLACE_ITERS", 300);
    let mut seen = BTreeMap::new();
    let mut bad = Vec::new();
    for _ in 0..iters {
        let (r, stderr) = sdu_checked(&args!["-a", &dir], 30);
        assert!(
            !stderr.contains("No such file"),
            "vanished .tmp reported: {stderr}"
        );
        let Some(e) = r.entries.iter().find(|e| e.path == x) else {
            bad.push("x missing from the report".to_owned());
            continue;
        };
        let clone = e.total == 256 * 1024 && e.shared == e.total && e.exclusive == 0;
        let plain = e.shared == 0 && e.exclusive == e.total && e.total < 64 * 1024;
        *seen
            .entry(if clone { "clone" } else { "plain" })
            .or_insert(0) += 1;
        if !clone && !plain {
            bad.push(format!("{e:?}"));
        }
    }
    stop.store(true, Ordering::Relaxed);
    mutator.join().unwrap();
    eprintln!(
        "replace: {iters} runs, {} flips, {seen:?}",
        flips.load(Ordering::Relaxed)
    );
    assert!(
        bad.is_empty(),
        "figures mixed from two inodes:\n{}",
        bad.join("\n")
    );
}

// ---------------------------------------------------------------------------
// 2. Permissions

fn sdu_as_nobody(args: &[OsString], secs: u64) -> Output {
    run_with_timeout(
        Command::new("setpriv")
            .args(nobody_args())
            .arg(sdu_bin())
            .args(args),
        secs,
    )
}

/// As `nobody`: a directory without read permission, one without execute
/// permission and a reflinked file that can be stat-ed but not opened are
/// each reported by path, the exit status is 1, and the summary counts the
/// bytes that could not be mapped.
#[test]
fn unreadable_entries_are_reported_by_path_as_nobody() {
    if !is_root() {
        unavailable::<()>("switching to nobody needs root");
        return;
    }
    let Some(l) = xfs() else { return };
    let root = l.path().join("perm");
    for d in ["noread", "noexec", "ok"] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    write_file(&root.join("noread/f"), 5000);
    write_file(&root.join("noexec/f"), 5000);
    write_file(&root.join("ok/src"), 65536);
    clone_file(&root.join("ok/src"), &root.join("ok/secret")).unwrap();
    chmod(&root.join("ok/secret"), 0o000);
    chmod(&root.join("noread"), 0o311);
    chmod(&root.join("noexec"), 0o644);
    chmod(&root, 0o755);
    sync_fs(l.path());

    let out = sdu_as_nobody(&args!["--json", &root], 60);
    assert_eq!(out.code, Some(1), "{out:?}");
    let r = json::parse(&out.stdout);
    let q = |p: &str| format!("'{}'", root.join(p).display());
    let lines: Vec<&str> = out.stderr.lines().collect();
    let has = |path: &str, what: &str| {
        lines
            .iter()
            .any(|l| l.contains(&q(path)) && l.contains(what))
    };
    assert!(has("noread", "Permission denied"), "{out:?}");
    assert!(has("noexec/f", "Permission denied"), "{out:?}");
    assert!(has("ok/secret", "Permission denied"), "{out:?}");
    assert!(
        lines.contains(
            &"sdu: 1 file(s), 65536 bytes, could not be mapped and were counted as exclusive"
        ),
        "no summary of the unmapped bytes: {out:?}"
    );
    assert_eq!(r.errors, 3, "{out:?}");
    // The readable clone is still mapped; the unreadable one counts as
    // exclusive, so the directory's shared bytes are its source's only.
    let ok = r
        .entries
        .iter()
        .find(|e| e.path == root.join("ok"))
        .unwrap();
    assert_eq!(ok.shared, 65536, "{ok:?}");
    assert!(invariant_violations(&r).is_empty(), "{r:?}");
}

// ---------------------------------------------------------------------------
// 3. Hostile trees

/// Symlink loops under -L (to the root, to itself, between two siblings):
/// sdu ends, reports the cycles, and never walks a directory inside itself.
#[test]
fn symlink_loops_under_dereference_end_and_never_nest_a_directory() {
    let t = TestDir::new();
    let root = t.mkdir("loops");
    for d in ["a", "b", "c"] {
        fs::create_dir(root.join(d)).unwrap();
        write_file(&root.join(d).join("f"), 3000);
    }
    symlink("..", root.join("a/up")).unwrap();
    symlink(".", root.join("a/self")).unwrap();
    symlink("../c", root.join("b/toc")).unwrap();
    symlink("../b", root.join("c/tob")).unwrap();
    let (r, stderr) = sdu_checked(&args!["-L", &root], 30);
    assert!(stderr.contains("cycle"), "cycles not reported: {stderr}");
    // Along every reported path, no directory appears twice.
    for e in r.entries.iter().filter(|e| e.kind == Kind::Dir) {
        let mut seen = std::collections::HashSet::new();
        let mut p = e.path.as_os_str().as_bytes().to_vec();
        let base = root.as_os_str().as_bytes().len();
        loop {
            let m = fs::metadata(OsStr::from_bytes(&p)).unwrap();
            assert!(
                seen.insert((m.dev(), m.ino())),
                "{} walks a directory inside itself",
                e.path.display()
            );
            if p.len() <= base {
                break;
            }
            let cut = p.iter().rposition(|&b| b == b'/').unwrap();
            p.truncate(cut);
        }
    }
    assert!(r.entries.len() < 20, "{:?}", paths(&r));
}

/// A bind mount inside the tree: entered without -x, not with -x.
#[test]
fn bind_mount_entered_without_x_and_skipped_with_x() {
    if !is_root() {
        unavailable::<()>("bind mounts need root");
        return;
    }
    let t = TestDir::new();
    let root = t.mkdir("tree");
    write_file(&root.join("here"), 10_000);
    let outside = t.mkdir("outside");
    write_file(&outside.join("big"), 1 << 20);
    let mnt = root.join("bind");
    fs::create_dir(&mnt).unwrap();
    run(Command::new("mount").arg("--bind").arg(&outside).arg(&mnt)).assert_ok();
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _u = Unmount(mnt.clone());
    let all = sdu_json(&args!["-a", &root]);
    assert!(
        all.entries.iter().any(|e| e.path == mnt.join("big")),
        "{:?}",
        paths(&all)
    );
    let x = sdu_json(&args!["-a", "-x", &root]);
    assert!(
        !x.entries
            .iter()
            .any(|e| Path::new(&e.path).starts_with(&mnt)),
        "-x entered the bind mount: {:?}",
        paths(&x)
    );
    let (ta, tx) = (all.entries.last().unwrap(), x.entries.last().unwrap());
    assert!(ta.total >= tx.total + (1 << 20), "{ta:?} {tx:?}");
}

/// Runs `xfs_io -c CMD... FILE`.
fn xfs_io(file: &Path, cmds: &[String]) {
    let mut c = Command::new("xfs_io");
    c.arg("-f");
    for cmd in cmds {
        c.arg("-c").arg(cmd);
    }
    run(c.arg(file)).assert_ok();
}

/// A file of 100,000 extents (4 KiB clones alternating between two
/// non-adjacent blocks of a source, built by doubling same-file clones):
/// sdu maps it in bounded time with its fixed buffer, its total matches
/// du, its shared data is the two source blocks, counted once.
#[test]
fn file_of_100k_extents_is_mapped_in_bounded_time() {
    let Some(l) = xfs() else { return };
    let root = l.path().join("frag");
    fs::create_dir(&root).unwrap();
    let (src, dst) = (root.join("src"), root.join("dst"));
    xfs_io(&src, &["pwrite -q 0 12288".into(), "fsync".into()]);
    const B: u64 = 4096;
    const N: u64 = 100_000;
    let s = src.display();
    let mut cmds = vec![
        format!("reflink {s} 0 0 {B}"),
        format!("reflink {s} {} {B} {B}", 2 * B),
    ];
    let mut have = 2;
    while have < N {
        let n = have.min(N - have);
        cmds.push(format!(
            "reflink {} 0 {} {}",
            dst.display(),
            have * B,
            n * B
        ));
        have += n;
    }
    xfs_io(&dst, &cmds);
    sync_fs(l.path());
    let extents = run(Command::new("xfs_io")
        .args(["-r", "-c", "fiemap"])
        .arg(&dst))
    .stdout
    .split(|&b| b == b'\n')
    .filter(|l| l.windows(2).any(|w| w == b"]:"))
    .count();
    assert!(extents as u64 >= N, "the file has only {extents} extents");

    let t0 = Instant::now();
    let (r, _) = sdu_checked(&args!["-a", &root], 60);
    let took = t0.elapsed();
    assert!(took < Duration::from_secs(20), "took {took:?}");
    let e = |p: &Path| r.entries.iter().find(|e| e.path == p).unwrap().clone();
    let (d, top) = (e(&dst), e(&root));
    let du = Du::new(&[]);
    assert_eq!(d.total, du.bytes(&["-B1"], dst.as_os_str()), "{d:?}");
    // Every data block of dst is a clone: its exclusive bytes are its
    // block-map blocks only.
    assert_eq!(d.exclusive, d.total - N * B, "{d:?}");
    assert_eq!(top.shared, 2 * B, "{top:?}");
    assert_eq!(top.reclaimable, top.exclusive + 2 * B, "{top:?}");
    // --stats: the fixed extent buffer means one call per batch.
    let out = sdu(&args!["--stats", "-s", &dst]);
    let calls: u64 = out
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("  FIEMAP calls"))
        .map(|v| v.trim().parse().unwrap())
        .unwrap_or_else(|| panic!("no FIEMAP calls in --stats: {out:?}"));
    assert!(
        (N / 256..=N / 256 + 4).contains(&calls),
        "{calls} FIEMAP calls for {N} extents"
    );
}

/// Names with a newline, invalid UTF-8, a leading dash and 255 bytes:
/// text output prints them raw as du does, -0 ends them exactly, JSON
/// round-trips them (base64 for non-UTF-8), and `sdu -- -x` works.
#[test]
fn hostile_names_print_raw_and_round_trip() {
    let t = TestDir::new();
    let root = t.mkdir("names");
    let long = "n".repeat(255);
    let names: Vec<Vec<u8>> = vec![
        b"new\nline".to_vec(),
        b"bad\xff\xfeutf8".to_vec(),
        b"-x".to_vec(),
        b"--help".to_vec(),
        long.as_bytes().to_vec(),
        b"tab\tand 'quote'".to_vec(),
    ];
    for n in &names {
        let d = root.join(OsStr::from_bytes(n));
        fs::create_dir(&d).unwrap();
        fs::write(d.join(OsStr::from_bytes(n)), b"data").unwrap();
    }
    // JSON: exactly the tree's paths, bytes for bytes.
    let r = sdu_json(&args!["-a", &root]);
    let want: Vec<OsString> = expected_walk(&root, true)
        .into_iter()
        .map(|e| e.0)
        .collect();
    assert_eq!(paths(&r), want);
    // -0: du's paths exactly.
    let z = sdu_ok(&args!["-a", "-0", &root]);
    let t0 = parse_text(&z, false, Some(4), 0);
    let got = sorted(t0.rows.into_iter().map(|r| r.path).collect());
    let du = Du::new(&[]).paths(&["-a"], &[root.as_os_str()]);
    assert_eq!(got, du, "{}", set_diff(&got, &du));
    // Text: the raw bytes, newline included, as du prints them.
    let text = sdu_ok(&args!["-a", "--no-header", &root]);
    let du_text = run(Command::new("du").arg("-a").arg(&root)).stdout;
    for n in &names {
        let mut p = root.join(OsStr::from_bytes(n)).into_os_string().into_vec();
        p.push(b'\n');
        assert!(
            du_text.windows(p.len()).any(|w| w == p),
            "du does not print {n:?} raw"
        );
        assert!(
            text.windows(p.len()).any(|w| w == p),
            "sdu does not print {:?} raw:\n{}",
            String::from_utf8_lossy(n),
            String::from_utf8_lossy(&text)
        );
    }
    // `sdu -- -x` measures the directory "-x" (and `sdu -- --help` too).
    let out = run(Command::new(sdu_bin())
        .current_dir(&root)
        .args(["--json", "--", "-x", "--help"]));
    out.assert_ok();
    let r = json::parse(&out.stdout);
    assert_eq!(r.roots, [OsString::from("-x"), OsString::from("--help")]);
}

/// /proc and /sys as roots: sdu ends, exits 0 or 1, and their allocated
/// figures stay small (they hold no disk data).
#[test]
fn proc_and_sys_end_without_absurd_figures() {
    for root in ["/proc", "/sys"] {
        let t0 = Instant::now();
        let (r, stderr) = sdu_checked(&args!["-x", "-s", root], 60);
        let e = r.entries.last().unwrap();
        assert!(
            e.total < 1 << 30 && e.shared == 0,
            "{root}: absurd figures {e:?}\n{stderr}"
        );
        eprintln!("{root}: {:?}, {:?}", t0.elapsed(), e);
    }
}

// ---------------------------------------------------------------------------
// 4. Resources

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

/// SIGINT during a long walk: sdu exits within a second, by the signal
/// or with a non-zero status, and prints nothing on stdout; interrupted
/// while its report is blocked on a full pipe, it does not exit 0.
#[test]
fn sigint_exits_promptly_without_output() {
    let s = Scratch::new();
    let root = s.mkdir("int");
    medium_tree(&root, 100, 300);
    let args = args!["-a", "-j1", &root, &root, &root, &root, &root, &root];
    // During the walk.
    let mut child = Command::new(sdu_bin())
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
            sent.elapsed() < Duration::from_secs(1),
            "sdu still running 1 s after SIGINT"
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
    let mut child = Command::new(sdu_bin())
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

// ---------------------------------------------------------------------------
// 5. Security

/// A FIFO and a character device swapped in, in a tight loop, for a
/// regular file with blocks (so that sdu opens the name for FIEMAP): no
/// run blocks, and each ends with a valid report.
#[test]
fn fifo_or_device_swapped_in_never_blocks() {
    let Some(l) = xfs() else { return };
    let dir = l.path().join("swap");
    fs::create_dir(&dir).unwrap();
    write_file(&dir.join("keep"), 10_000);
    rustix::fs::mkfifoat(CWD, dir.join("fifo"), Mode::from_raw_mode(0o644)).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let mutator = {
        let (dir, stop) = (dir.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                let tmp = dir.join(".tmp");
                let _ = fs::remove_file(&tmp);
                let made = match i % 3 {
                    0 => fs::write(&tmp, vec![1u8; 8192]),
                    1 => rustix::fs::mkfifoat(CWD, &tmp, Mode::from_raw_mode(0o644))
                        .map_err(Into::into),
                    // /dev/null's numbers: harmless if it were opened.
                    _ => rustix::fs::mknodat(
                        CWD,
                        &tmp,
                        FileType::CharacterDevice,
                        Mode::from_raw_mode(0o644),
                        rustix::fs::makedev(1, 3),
                    )
                    .map_err(Into::into),
                };
                if made.is_ok() {
                    let _ = fs::rename(&tmp, dir.join("x"));
                }
            }
        })
    };
    let iters = env_u64("SDU_SWAP_ITERS", 150);
    for _ in 0..iters {
        sdu_checked(&args!["-a", &dir], 10);
    }
    stop.store(true, Ordering::Relaxed);
    mutator.join().unwrap();
    // As nobody too (no O_NOATIME on root's files).
    if is_root() {
        let out = sdu_as_nobody(&args!["--json", "-a", &dir], 10);
        assert!(matches!(out.code, Some(0 | 1)), "{out:?}");
    }
}

/// Every path under `root` (itself included).
fn all_paths(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(p) = stack.pop() {
        if fs::symlink_metadata(&p).unwrap().is_dir() {
            for e in fs::read_dir(&p).unwrap() {
                stack.push(e.unwrap().path());
            }
        }
        out.push(p);
    }
    out
}

/// Access, modification and change times of `paths` (stat only: reading
/// a directory here would itself update its atime).
fn times(paths: &[PathBuf]) -> BTreeMap<PathBuf, (i64, i64, i64, i64, i64, i64)> {
    paths
        .iter()
        .map(|p| {
            let md = fs::symlink_metadata(p).unwrap();
            let t = (
                md.atime(),
                md.atime_nsec(),
                md.mtime(),
                md.mtime_nsec(),
                md.ctime(),
                md.ctime_nsec(),
            );
            (p.clone(), t)
        })
        .collect()
}

/// On a filesystem mounted `strictatime` (every read would update atime),
/// runs as root and as the owner leave every atime, mtime and ctime as
/// they were: directories and mapped files are opened O_NOATIME, and
/// nothing is written.
#[test]
fn atime_mtime_ctime_unchanged_under_strictatime() {
    if !is_root() {
        unavailable::<()>("remounting needs root");
        return;
    }
    let Some(l) = xfs() else { return };
    run(Command::new("mount")
        .args(["-o", "remount,strictatime"])
        .arg(l.path()))
    .assert_ok();
    let root = l.path().join("at");
    fs::create_dir(&root).unwrap();
    plain_tree(&root);
    clone_file(&root.join("a/b/z"), &root.join("a/clone")).unwrap();
    symlink("a", root.join("link")).unwrap();
    rustix::fs::mkfifoat(CWD, root.join("fifo"), Mode::from_raw_mode(0o644)).unwrap();
    // Owned by nobody, so that nobody may use O_NOATIME too.
    run(Command::new("chown")
        .args(["-R", "-h", "65534:65534"])
        .arg(&root))
    .assert_ok();
    sync_fs(l.path());
    // Set every atime well in the past, so that strictatime would update.
    let all = all_paths(&root);
    run(Command::new("touch")
        .args(["-h", "-a", "-d", "2001-01-01"])
        .args(&all))
    .assert_ok();
    let before = times(&all);
    let (_, stderr) = sdu_checked(&args!["-a", &root], 30);
    assert!(stderr.is_empty(), "{stderr}");
    let out = sdu_as_nobody(&args!["--json", "-a", &root], 30);
    assert_eq!(out.code, Some(0), "{out:?}");
    let after = times(&all);
    let changed: Vec<String> = before
        .iter()
        .filter(|(p, t)| after.get(*p) != Some(t))
        .map(|(p, t)| format!("{}: {t:?} -> {:?}", p.display(), after.get(p)))
        .collect();
    assert!(
        changed.is_empty(),
        "times changed by sdu:\n{}",
        changed.join("\n")
    );
    // The check can fail: here, reading a directory updates its atime.
    fs::read_dir(&root).unwrap().for_each(drop);
    assert_ne!(
        times(&all)[&root].0,
        before[&root].0,
        "strictatime not in effect"
    );
}

/// A symlink to /etc inside the tree is not followed without -L (it is a
/// symlink entry of its own size), and is with -L.
#[test]
fn symlink_to_etc_is_not_followed_without_l() {
    let t = TestDir::new();
    let root = t.mkdir("etc-link");
    write_file(&root.join("f"), 1000);
    symlink("/etc", root.join("etc")).unwrap();
    let r = sdu_json(&args!["-a", &root]);
    let link = root.join("etc");
    assert!(
        !r.entries
            .iter()
            .any(|e| Path::new(&e.path).starts_with(&link) && e.path != link),
        "followed the symlink: {:?}",
        paths(&r)
    );
    let e = r.entries.iter().find(|e| e.path == link).unwrap();
    assert_eq!(e.kind, Kind::Symlink);
    assert!(e.total <= 4096, "{e:?}");
    // With -L it is followed (so the check above can fail).
    let (rl, _) = sdu_checked(&args!["-L", &root], 60);
    assert!(
        rl.entries
            .iter()
            .any(|e| e.path == link && e.kind == Kind::Dir),
        "-L did not follow the symlink to /etc"
    );
}

/// Regular files with blocks on reflink XFS (so that sdu opens them for
/// FIEMAP) swapped, by rename in a tight loop, for a FIFO: a writer blocked
/// opening that FIFO is released only if someone opens it for reading. sdu
/// must never do so: it opens only regular files, and the kernel offers a
/// way to check before opening (`O_PATH`, `fstat`, reopen through
/// `/proc/self/fd`).
#[test]
fn fifo_swapped_in_for_a_file_is_never_opened() {
    let Some(l) = xfs() else { return };
    let dir = l.path().join("flip");
    let aux = l.path().join("aux");
    fs::create_dir(&dir).unwrap();
    fs::create_dir(&aux).unwrap();
    // The attack needs a directory someone other than root can change
    // (sdu trusts root-owned directories that only root can write to, like
    // /usr, and opens files there directly): make it world-writable and
    // sticky, like /tmp.
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o1777)).unwrap();
    const NAMES: usize = 8;
    let done = Arc::new(AtomicBool::new(false));
    let opened = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    for k in 0..NAMES {
        let fifo = aux.join(format!("fifo{k}"));
        rustix::fs::mkfifoat(CWD, &fifo, Mode::from_raw_mode(0o644)).unwrap();
        // The writer: each time its open returns, a reader opened the FIFO.
        let (done2, opened2, fifo2) = (done.clone(), opened.clone(), fifo.clone());
        threads.push(std::thread::spawn(move || {
            while !done2.load(Ordering::Relaxed) {
                if fs::OpenOptions::new().write(true).open(&fifo2).is_ok()
                    && !done2.load(Ordering::Relaxed)
                {
                    opened2.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    // One mutator (the machine has few cores): each x{k} is in turn a
    // regular file, the FIFO, a file...
    {
        let (done2, dir2, aux2) = (done.clone(), dir.clone(), aux.clone());
        threads.push(std::thread::spawn(move || {
            let mut i = 0usize;
            while !done2.load(Ordering::Relaxed) {
                i += 1;
                let k = i % NAMES;
                let (x, t) = (dir2.join(format!("x{k}")), dir2.join(".t"));
                let _ = fs::remove_file(&t);
                let made = if (i / NAMES) % 2 == 0 {
                    fs::hard_link(aux2.join(format!("fifo{k}")), &t)
                } else {
                    fs::write(&t, vec![5u8; 8192])
                };
                if made.is_ok() {
                    let _ = fs::rename(&t, &x);
                }
            }
        }));
    }
    let iters = env_u64("SDU_FIFO_ITERS", 200);
    for _ in 0..iters {
        sdu_checked(&args!["-a", &dir], 10);
    }
    done.store(true, Ordering::Relaxed);
    let n = opened.load(Ordering::Relaxed);
    // Release the writers still blocked in open.
    for k in 0..NAMES {
        let _ = rustix::fs::open(
            aux.join(format!("fifo{k}")),
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NONBLOCK,
            Mode::empty(),
        );
    }
    for t in threads {
        t.join().unwrap();
    }
    eprintln!("fifo swap: {iters} runs, the FIFO was opened {n} times");
    assert_eq!(
        n, 0,
        "sdu opened a FIFO swapped in for a regular file {n} times in {iters} runs"
    );
}
