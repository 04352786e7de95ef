//! Each PATH is resolved by its name once, before the walk: what sdu
//! decides about it (whether another PATH lies inside it, the mounts inside
//! it, its filesystem, whether its tree looks cold) and what it walks are
//! the same inode, while the PATH's owner swaps it between a directory and
//! a symlink to a directory on another filesystem (docs/SECURITY.md,
//! "Needs no privilege; what root changes").

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::json::{self, Kind, Report};
use crate::util::*;

/// The attacker, as `nobody` in the directory holding `proj`: swaps `proj`
/// for `link` and back, by rename, in a loop, each state held a moment.
const SWAPPER: &str = r#"
for (;;) {
    rename("proj", "proj.d") or next;
    rename("link", "proj");
    select(undef, undef, undef, 0.0003);
    rename("proj", "link");
    rename("proj.d", "proj");
    select(undef, undef, undef, 0.0003);
}
"#;

/// The swapper, killed by its pid on drop (also when the test fails).
struct Swapper(Child);

impl Drop for Swapper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `sdu --json -c -s PROJ OTHER` as root, again and again for up to `secs`,
/// while PROJ's owner swaps PROJ between its directory and a symlink to
/// the directory that holds OTHER, root's, on another filesystem. Whatever
/// PROJ is when sdu resolves it, the document describes that one inode
/// throughout: the directory with the figures it has alone, or the symlink
/// (not followed, as du does), or an error; and OTHER, which lies inside
/// PROJ only through the symlink sdu does not follow, is in the total.
/// When the symlink was followed to decide which PATH lies inside which,
/// but the walk read the link, OTHER was left out of the total.
fn path_swapped_before_the_walk(kind: FsKind) {
    if !is_root() && unavailable::<()>("the attack needs root running sdu").is_none() {
        return;
    }
    let Some(l) = LoopFs::new(kind) else { return };
    let Some(elsewhere) = LoopFs::new(FsKind::Ext4) else {
        return;
    };
    for p in [l.path(), elsewhere.path()] {
        chmod(p.parent().unwrap(), 0o755);
        chmod(p, 0o755);
    }
    let home = l.path().join("home");
    let proj = home.join("proj");
    fs::create_dir_all(proj.join("sub")).unwrap();
    fs::write(proj.join("a"), vec![7u8; 1 << 20]).unwrap();
    fs::write(proj.join("sub/b"), vec![8u8; 64 << 10]).unwrap();
    let target = elsewhere.path().join("x");
    let other = target.join("other");
    fs::create_dir_all(&other).unwrap();
    fs::write(other.join("c"), vec![9u8; 3 << 20]).unwrap();
    symlink(&target, home.join("link")).unwrap();
    run(Command::new("chown")
        .args(["-hR", "65534:65534"])
        .arg(&home))
    .assert_ok();
    sync_fs(l.path());
    sync_fs(elsewhere.path());
    let args = |p: &Path| {
        let mut a = vec![
            "--json".into(),
            "-c".into(),
            "-s".into(),
            p.as_os_str().to_owned(),
        ];
        a.push(other.as_os_str().to_owned());
        a
    };
    // Unattacked: PROJ as a directory, then as the symlink.
    let dir = json::parse(&sdu_ok(&args(&proj)));
    let link = json::parse(&sdu_ok(&args(&home.join("link"))));
    let calm_dir = dir.entries[0].clone();
    let calm_link = link.entries[0].clone();
    let calm_other = dir.entries[1].clone();
    assert_eq!(calm_dir.kind, Kind::Dir, "{dir:?}");
    assert_eq!(calm_link.kind, Kind::Symlink, "{link:?}");
    for r in [&dir, &link] {
        consistent(r, 0);
    }

    let swapper = Swapper(
        Command::new("setpriv")
            .args(nobody_args())
            .args(["perl", "-e", SWAPPER])
            .current_dir(&home)
            .stdin(Stdio::null())
            .spawn()
            .expect("perl, as nobody"),
    );
    let secs = super::env_u64("SDU_ROOTS_SECS", 10);
    let start = Instant::now();
    let (mut runs, mut dirs, mut links, mut errors) = (0u64, 0u64, 0u64, 0u64);
    while start.elapsed() < Duration::from_secs(secs) {
        runs += 1;
        let out = sdu(&args(&proj));
        let r = json::parse(&out.stdout);
        match r.entries.as_slice() {
            [p, o] if p.path == proj.as_os_str() => {
                consistent(&r, runs);
                let (calm, n) = match p.kind {
                    Kind::Dir => (&calm_dir, &mut dirs),
                    Kind::Symlink => (&calm_link, &mut links),
                    k => panic!("run {runs}: PROJ walked as {k:?}: {r:?}"),
                };
                *n += 1;
                assert_eq!(
                    (p.apparent, p.total, p.files, p.dirs),
                    (calm.apparent, calm.total, calm.files, calm.dirs),
                    "run {runs}: PROJ as a {:?} with another's figures: {r:?}",
                    p.kind
                );
                assert_eq!(o, &calm_other, "run {runs}: {r:?}");
                assert_eq!(out.code, Some(0), "run {runs}: {out:?}");
            }
            // Caught between the renames: PROJ is reported, OTHER stands
            // alone.
            [o] => {
                errors += 1;
                assert_eq!(o, &calm_other, "run {runs}: {r:?}");
                consistent(&r, runs);
                assert_eq!(out.code, Some(1), "run {runs}: {out:?}");
            }
            _ => panic!("run {runs}: {out:?}"),
        }
    }
    drop(swapper);
    eprintln!(
        "{kind:?}: {runs} runs in {secs} s: PROJ a directory {dirs} times, the symlink {links}, gone {errors}"
    );
    assert!(
        dirs > 0 && links > 0,
        "the swap was not met both ways: {dirs} directories, {links} symlinks in {runs} runs"
    );
}

/// The `-c` total of a document whose PATHs lie inside no other (as they
/// are walked): the sum of the PATHs' own figures.
fn consistent(r: &Report, run: u64) {
    let total = r.total.as_ref().expect("-c");
    let tops: Vec<_> = r.entries.iter().filter(|e| e.depth == 0).collect();
    let sum = |f: fn(&json::Entry) -> u64| tops.iter().map(|e| f(e)).sum::<u64>();
    assert_eq!(
        (total.apparent, total.total, total.files, total.dirs),
        (
            sum(|e| e.apparent),
            sum(|e| e.total),
            sum(|e| e.files),
            sum(|e| e.dirs)
        ),
        "run {run}: the total leaves out a PATH that lies inside no PATH walked: {r:?}"
    );
}

/// Every PATH, as root, is resolved by its name once (strace): a
/// directory, a regular file, a symlink not followed, a symlink inside
/// another PATH, a PATH inside another, on a filesystem just remounted, so
/// that the look at whether its tree is in memory, and what follows from
/// it (its filesystem, on Btrfs its snapshots), run too. With `-x` and
/// `-H` as well. A PATH that is not a directory is resolved as its
/// directory opened and its name in that ([`by_name`]); that directory
/// is never looked up by its name again: it appears in no other syscall,
/// unless it is a PATH itself, resolved once as such.
fn path_resolved_by_name_once(kind: FsKind) {
    if !is_root() && unavailable::<()>("the check needs root running sdu").is_none() {
        return;
    }
    if Command::new("strace").arg("-V").output().is_err() {
        return unavailable("strace is not installed").unwrap_or(());
    }
    let Some(l) = LoopFs::new(kind) else { return };
    let proj = l.path().join("proj");
    fs::create_dir_all(proj.join("sub/deeper")).unwrap();
    fs::write(proj.join("a"), vec![7u8; 1 << 20]).unwrap();
    fs::write(proj.join("sub/b"), vec![8u8; 64 << 10]).unwrap();
    let file = proj.join("a");
    let sub = proj.join("sub");
    let link = l.path().join("link");
    symlink(&sub, &link).unwrap();
    let inner = proj.join("lnk");
    symlink("sub", &inner).unwrap();
    let trace = l.path().parent().unwrap().join("trace");
    let runs: [(&[&str], Vec<&Path>); 3] = [
        (&["-c", "-s"], vec![&proj, &sub, &file, &link, &inner]),
        (&["-x", "-s"], vec![&proj]),
        (&["-H", "-s"], vec![&link, &file]),
    ];
    for (opts, paths) in runs {
        l.cold();
        let out = run(Command::new("strace")
            .args(["-f", "-qq", "-e", "trace=%file", "-o"])
            .arg(&trace)
            .arg(sdu_bin())
            .args(opts)
            .args(&paths));
        assert_eq!(out.code, Some(0), "{out:?}");
        let calls = by_name(&fs::read_to_string(&trace).unwrap());
        // The PATHs, and the directories of those that are not
        // directories as walked (`-H` follows a symlink PATH).
        let walked_dir = |p: &Path| match opts.contains(&"-H") {
            true => p.is_dir(),
            false => fs::symlink_metadata(p).unwrap().is_dir(),
        };
        let dirs = paths
            .iter()
            .filter(|p| !walked_dir(p))
            .filter_map(|p| p.parent());
        for p in paths.iter().copied().chain(dirs) {
            let want = usize::from(paths.contains(&p));
            let seen: Vec<&(String, String)> = calls
                .iter()
                .filter(|(path, _)| Path::new(path) == p)
                .collect();
            assert_eq!(
                seen.len(),
                want,
                "sdu {opts:?} {paths:?}: {} resolved by name {} times:\n{}",
                p.display(),
                seen.len(),
                seen.iter()
                    .map(|c| c.1.as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
    }
}

/// The syscalls of an `strace -f -e trace=%file` log that resolve a path
/// by its name from the working directory: each as that path, with its
/// lines. `openat(AT_FDCWD, "DIR", …O_PATH|O_DIRECTORY…) = N` followed, in
/// the same thread, by `openat(N, "NAME", …)` is one resolution, of
/// `DIR/NAME`: a directory opened to resolve a name in. A call strace
/// splits (`<unfinished ...>`, `<... resumed>`) is read whole.
fn by_name(log: &str) -> Vec<(String, String)> {
    use std::collections::HashMap;
    let quoted = |s: &str| {
        s.strip_prefix('"')?
            .split_once('"')
            .map(|(q, _)| q.to_owned())
    };
    let mut split: HashMap<&str, String> = HashMap::new();
    // Per thread: a directory opened by name, `(path, fd, line)`, until
    // its next call says whether a name was resolved in it.
    let mut open_dir: HashMap<String, (String, String, String)> = HashMap::new();
    let mut calls = Vec::new();
    for line in log.lines().filter(|l| !l.contains("execve(")) {
        let (pid, rest) = match line.split_once(' ') {
            Some((p, r)) if p.bytes().all(|b| b.is_ascii_digit()) => (p, r.trim_start()),
            _ => ("", line),
        };
        let call = if let Some(head) = rest.strip_suffix("<unfinished ...>") {
            split.insert(pid, head.to_owned());
            continue;
        } else if let Some((_, tail)) = rest.split_once(" resumed>") {
            split.remove(pid).unwrap_or_default() + tail
        } else {
            rest.to_owned()
        };
        let Some((name, args)) = call.split_once('(') else {
            continue;
        };
        let fdcwd = args.strip_prefix("AT_FDCWD, ").unwrap_or(args);
        let ret = call.rsplit_once(" = ").map(|(_, r)| r.trim().to_owned());
        let pending = open_dir.remove(pid);
        if let Some((dir, fd, first)) = &pending {
            let in_it = args.strip_prefix(&format!("{fd}, ")).and_then(quoted);
            if let (Some(leaf), "openat") = (in_it, name) {
                calls.push((format!("{dir}/{leaf}"), format!("{first}\n{line}")));
                continue;
            }
        }
        if let Some((dir, _, first)) = pending {
            calls.push((dir, first));
        }
        let Some(path) = quoted(fdcwd) else { continue };
        let dir_open = name == "openat" && call.contains("O_PATH") && call.contains("O_DIRECTORY");
        match ret.filter(|r| dir_open && r.bytes().all(|b| b.is_ascii_digit())) {
            Some(fd) => {
                open_dir.insert(pid.to_owned(), (path, fd, line.to_owned()));
            }
            None => calls.push((path, line.to_owned())),
        }
    }
    calls.extend(open_dir.into_values().map(|(dir, _, line)| (dir, line)));
    calls
}

#[test]
fn path_resolved_by_name_once_xfs() {
    path_resolved_by_name_once(FsKind::Xfs);
}

#[test]
fn path_resolved_by_name_once_btrfs() {
    path_resolved_by_name_once(FsKind::Btrfs);
}

#[test]
fn path_swapped_before_the_walk_xfs() {
    path_swapped_before_the_walk(FsKind::Xfs);
}

#[test]
fn path_swapped_before_the_walk_btrfs() {
    path_swapped_before_the_walk(FsKind::Btrfs);
}

/// `sdu --json --to-free 2M HOME HOME/snaps/a` as root, again and again
/// for up to `secs`, while HOME's owner swaps `snaps` between its
/// directory, where `a` holds 1 MiB, and a symlink to a root-owned
/// directory on another filesystem, where `a` holds 3 MiB. Through the
/// directory, the candidate lies inside HOME: it alone is planned, and
/// cannot free 2M (exit status 3, "all 1 candidate(s)"). Through the
/// symlink it lies elsewhere: HOME and it are both candidates, and its
/// 3 MiB reach the target. A run may also refuse the command (exit status
/// 2), but never plans HOME and the `a` inside it both, the decision of
/// one with the scan of the other ("all 2 candidate(s)" short of 2M).
fn candidate_swapped_before_the_walk(kind: FsKind) {
    if !is_root() && unavailable::<()>("the attack needs root running sdu").is_none() {
        return;
    }
    let Some(l) = LoopFs::new(kind) else { return };
    let Some(elsewhere) = LoopFs::new(FsKind::Ext4) else {
        return;
    };
    for p in [l.path(), elsewhere.path()] {
        chmod(p.parent().unwrap(), 0o755);
        chmod(p, 0o755);
    }
    let home = l.path().join("home");
    fs::create_dir_all(home.join("snaps/a")).unwrap();
    fs::write(home.join("snaps/a/f"), vec![7u8; 1 << 20]).unwrap();
    let target = elsewhere.path().join("y");
    fs::create_dir_all(target.join("a")).unwrap();
    fs::write(target.join("a/f"), vec![9u8; 3 << 20]).unwrap();
    symlink(&target, home.join("link")).unwrap();
    run(Command::new("chown")
        .args(["-hR", "65534:65534"])
        .arg(&home))
    .assert_ok();
    sync_fs(l.path());
    sync_fs(elsewhere.path());
    let cand = home.join("snaps/a");
    let plan = || {
        sdu(&[
            "--json".into(),
            "--to-free".into(),
            "2M".into(),
            home.as_os_str().to_owned(),
            cand.as_os_str().to_owned(),
        ])
    };
    // What each outcome is: through the directory, through the symlink.
    let through_dir = |out: &Output| {
        out.code == Some(3) && out.stderr.contains("all 1 candidate(s) together free")
    };
    let through_link = |out: &Output| {
        out.code == Some(0)
            && serde_json::from_slice::<serde_json::Value>(&out.stdout).is_ok_and(|d| {
                d["chosen"].as_array().is_some_and(|c| {
                    c.len() == 1
                        && c[0]["path"].as_str() == cand.to_str()
                        && c[0]["frees"].as_u64() >= Some(3 << 20)
                })
            })
    };
    let out = plan();
    assert!(through_dir(&out), "{out:?}");
    fs::rename(home.join("snaps"), home.join("snaps.d")).unwrap();
    fs::rename(home.join("link"), home.join("snaps")).unwrap();
    let out = plan();
    assert!(through_link(&out), "{out:?}");
    fs::rename(home.join("snaps"), home.join("link")).unwrap();
    fs::rename(home.join("snaps.d"), home.join("snaps")).unwrap();

    let swapper = Swapper(
        Command::new("setpriv")
            .args(nobody_args())
            .args(["perl", "-e", &SWAPPER.replace("proj", "snaps")])
            .current_dir(&home)
            .stdin(Stdio::null())
            .spawn()
            .expect("perl, as nobody"),
    );
    let secs = super::env_u64("SDU_ROOTS_SECS", 10);
    let start = Instant::now();
    let (mut runs, mut dirs, mut links, mut refused) = (0u64, 0u64, 0u64, 0u64);
    while start.elapsed() < Duration::from_secs(secs) {
        runs += 1;
        let out = plan();
        if through_dir(&out) {
            dirs += 1;
        } else if through_link(&out) {
            links += 1;
        } else if out.code == Some(2) && !out.stderr.is_empty() {
            refused += 1;
        } else {
            panic!(
                "run {runs}: a plan of neither entry: {out:?}\n{}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
    }
    drop(swapper);
    eprintln!(
        "{kind:?}: {runs} plans in {secs} s: through the directory {dirs}, through the symlink {links}, refused {refused}"
    );
    assert!(
        dirs > 0 && links > 0,
        "the swap was not met both ways in {runs} runs ({refused} refused)"
    );
}

#[test]
fn candidate_swapped_before_the_walk_xfs() {
    candidate_swapped_before_the_walk(FsKind::Xfs);
}

#[test]
fn candidate_swapped_before_the_walk_btrfs() {
    candidate_swapped_before_the_walk(FsKind::Btrfs);
}

/// A PATH the caller may read but not search is listed, as an open by its
/// name lists it, and each entry it cannot stat is reported, as du reports
/// it: the directory is reopened through `/proc/self/fd`, which asks for
/// read permission alone (`.` relative to it would ask for search too).
#[test]
fn a_path_readable_not_searchable_is_listed_as_du_lists_it() {
    if !is_root() && unavailable::<()>("the check needs root to set up").is_none() {
        return;
    }
    let t = TestDir::new();
    chmod(t.path(), 0o755);
    let d = t.mkdir("d");
    fs::write(d.join("x"), b"x").unwrap();
    chmod(&d, 0o744);
    // The test binary may live under a directory nobody cannot enter.
    let bin = t.path().join("sdu");
    fs::copy(sdu_bin(), &bin).unwrap();
    chmod(&bin, 0o755);
    let out = run(Command::new("setpriv")
        .args(nobody_args())
        .arg(&bin)
        .args(["-s", "d"])
        .current_dir(t.path()));
    let du = run(Command::new("setpriv")
        .args(nobody_args())
        .args(["du", "-s", "d"])
        .env("LC_ALL", "C")
        .current_dir(t.path()));
    assert_eq!(du.stderr, "du: cannot access 'd/x': Permission denied\n");
    assert_eq!(out.code, Some(1), "{out:?}");
    assert_eq!(out.stderr, format!("s{}", du.stderr), "{out:?}");
}

/// Past the PATHs that keep the fd they were resolved by (64), each PATH is
/// resolved again by its name, checked, and walked alike: 70 PATHs, among
/// them a symlink and a file on either side of the 64th, each as du sizes
/// it.
#[test]
fn paths_past_the_held_fds_are_walked_alike() {
    let t = TestDir::new();
    let mut paths = Vec::new();
    for i in 0..70 {
        let p = t.path().join(format!("p{i:02}"));
        match i {
            3 | 66 => symlink(t.path(), &p).unwrap(),
            5 | 68 => fs::write(&p, vec![1u8; i * 1024]).unwrap(),
            _ => {
                fs::create_dir_all(p.join("sub")).unwrap();
                fs::write(p.join("sub/f"), vec![2u8; i * 1024]).unwrap();
            }
        }
        paths.push(p.into_os_string());
    }
    sync_fs(t.path());
    let refs: Vec<&std::ffi::OsStr> = paths.iter().map(|p| p.as_os_str()).collect();
    let (du, out) = Du::new(&["-s", "-B1"]).lines(&[], &refs);
    assert_eq!(out.code, Some(0), "{out:?}");
    let mut a: Vec<std::ffi::OsString> = vec!["-s".into()];
    a.extend(paths.iter().cloned());
    let r = sdu_json(&a);
    assert_eq!(r.entries.len(), 70, "{r:?}");
    for (e, d) in r.entries.iter().zip(&du) {
        assert_eq!(e.path, d.path);
        assert_eq!(e.total.to_string(), d.size, "{}", d.path.to_string_lossy());
    }
}
