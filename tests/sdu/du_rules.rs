//! Where sdu follows GNU du's own rules: directory cycles (a bind mount of
//! a directory inside itself), symlink chains longer than a path
//! resolution may follow under `-L`. Checked against GNU du run on the
//! same tree.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;

use crate::util::*;

/// The lines of stdout with the size column dropped, as coreutils' tests
/// compare them.
fn names(out: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| l.split_once('\t').map_or(l, |(_, p)| p).to_string())
        .collect()
}

/// `mount --bind a a/b`: `a/b` is `a` again. du lists only `a`, enters
/// the cycle nowhere and says nothing: a mount explains it. sdu used to
/// walk into it and count `a` twice.
#[test]
fn bind_mount_of_a_directory_inside_itself_is_not_entered() {
    let t = TestDir::new();
    let a = t.path().join("a");
    fs::create_dir_all(a.join("b")).unwrap();
    fs::write(a.join("f"), vec![7u8; 50_000]).unwrap();
    let Some(_bind) = Bind::or_skip(&a, &a.join("b")) else {
        return;
    };
    let du = run(Command::new("du").current_dir(t.path()).arg("a"));
    let sdu = run(Command::new(sdu_bin())
        .current_dir(t.path())
        .args(["--du", "total", "a"]));
    assert_eq!(du.code, Some(0), "{du:?}");
    assert_eq!((sdu.code, sdu.stderr.as_str()), (Some(0), ""), "{sdu:?}");
    assert_eq!(names(&du.stdout), ["a"]);
    assert_eq!(sdu.stdout, du.stdout, "{sdu:?}\n{du:?}");
    // The table and JSON skip it too.
    let r = sdu_json(&crate::args![&a]);
    assert_eq!(paths(&r), [a.clone().into_os_string()]);
}

/// `mount --bind a a/b/c`, then `du a/b`: the cycle starts below the root
/// (`a/b/c/b` is `a/b`); du lists `a/b/c` and `a/b`.
#[test]
fn bind_mount_cycle_below_the_root() {
    let t = TestDir::new();
    let a = t.path().join("a");
    fs::create_dir_all(a.join("b/c")).unwrap();
    let Some(_bind) = Bind::or_skip(&a, &a.join("b/c")) else {
        return;
    };
    let du = run(Command::new("du").current_dir(t.path()).arg("a/b"));
    let sdu = run(Command::new(sdu_bin())
        .current_dir(t.path())
        .args(["--du", "total", "a/b"]));
    assert_eq!(names(&du.stdout), ["a/b/c", "a/b"], "{du:?}");
    assert_eq!((sdu.code, sdu.stderr.as_str()), (Some(0), ""), "{sdu:?}");
    assert_eq!(sdu.stdout, du.stdout, "{sdu:?}\n{du:?}");
}

/// coreutils' long-sloop: 400 directories, each with a symlink `s` to the
/// next. `du -L 1` resolves `1/s/s/...` by path and stops with ELOOP at
/// the 41st symlink; sdu, which opens one level at a time, used to follow
/// all 400 and exit 0.
#[test]
fn symlink_chain_longer_than_a_path_resolution_is_eloop() {
    let t = TestDir::new();
    let n = 400;
    for i in 1..=n {
        fs::create_dir(t.path().join(i.to_string())).unwrap();
    }
    for i in 1..=n {
        symlink(format!("../{}", i + 1), t.path().join(format!("{i}/s"))).unwrap();
    }
    fs::write(t.path().join((n + 1).to_string()), b"foo\n").unwrap();
    let du = run(Command::new("du").current_dir(t.path()).args(["-L", "1"]));
    let sdu = run(Command::new(sdu_bin())
        .current_dir(t.path())
        .args(["--du", "total", "-L", "1"]));
    assert_eq!(du.code, Some(1), "{du:?}");
    assert_eq!(sdu.code, Some(1), "{sdu:?}");
    let rest = |s: &str, prefix: &str| s.strip_prefix(prefix).map(str::to_owned);
    assert_eq!(
        rest(&sdu.stderr, "sdu: "),
        rest(&du.stderr, "du: "),
        "{sdu:?}\n{du:?}"
    );
    assert!(du.stderr.contains("Too many levels of symbolic links"));
    assert_eq!(sdu.stdout, du.stdout);
}

/// Runs GNU du and `sdu --du total` with the same arguments in `dir`;
/// returns (du, sdu).
fn both(dir: &Path, args: &[&str]) -> (Output, Output) {
    let du = run(Command::new("du").current_dir(dir).args(args));
    let sdu = run(Command::new(sdu_bin())
        .current_dir(dir)
        .args(["--du", "total"])
        .args(args));
    (du, sdu)
}

/// sdu as du prints what du prints, byte for byte and in du's order
/// (depth first, entries in getdents order), and exits as du does.
fn assert_same(dir: &Path, args: &[&str]) {
    let (du, sdu) = both(dir, args);
    assert_eq!(
        (sdu.code, &sdu.stdout),
        (du.code, &du.stdout),
        "du {args:?}:\n--- du:\n{}\n--- sdu:\n{}\n{}",
        String::from_utf8_lossy(&du.stdout),
        String::from_utf8_lossy(&sdu.stdout),
        sdu.stderr
    );
}

/// du's counting rule: an inode counts once per run, at the first link its
/// traversal meets. Hardlinks inside one directory and across
/// directories, the root given twice, a root inside another one (either
/// order), `-a` listing only the first link, `-L` aliases, `-c`.
#[test]
fn an_inode_counts_once_per_run_as_in_du() {
    let t = TestDir::new();
    standard_tree(&t.path().join("t"));
    let d = t.path();
    for args in [
        &["t"][..],
        &["-a", "t"],
        &["t", "t"],
        &["-a", "t", "t"],
        &["t/a", "t"],
        &["t", "t/a"],
        &["-a", "t/x", "t"],
        &["-c", "t/a/b", "t/x", "t"],
        &["-a", "-L", "t"],
        &["-L", "t"],
        &["-a", "-l", "t"],
        &["-s", "t/x", "t/y", "t"],
        &["-d", "1", "t/a", "t"],
        &["-a", "t/hl_root", "t"],
        &["t/x/shared.bin", "t/hl_root"],
    ] {
        assert_same(d, args);
    }
}

/// In du's order, siblings are listed as getdents returns them, not by
/// name: on a directory of many entries the two orders differ.
#[test]
fn entries_are_listed_in_du_order() {
    let t = TestDir::new();
    let r = t.path().join("r");
    for i in 0..60 {
        fs::create_dir_all(r.join(format!("d{i:02}"))).unwrap();
        fs::write(r.join(format!("d{i:02}/f")), vec![1u8; 5000 * (i % 7 + 1)]).unwrap();
    }
    assert_same(t.path(), &["r"]);
    assert_same(t.path(), &["-a", "r"]);
}

/// coreutils' move-dir-while-traversing, made deterministic: strace holds
/// an open deep inside `a/b` while the test moves `a/b` up a level. du
/// would fail returning to `a` ("fts_read failed") and stop that PATH;
/// sdu as du checks each directory once its subtree is read, says the same
/// (exit 1), lists nothing after `a/b` in that PATH, and goes on with the
/// next PATH. sdu used to print the old tree and exit 0.
#[test]
fn directory_moved_while_its_subtree_is_read_stops_the_path_as_in_du() {
    if Command::new("strace").arg("-V").output().is_err() {
        return unavailable("strace is not installed").unwrap_or(());
    }
    let t = TestDir::new();
    fs::create_dir_all(t.path().join("T/U/3/a/b/c/1/d/e/held")).unwrap();
    fs::create_dir_all(t.path().join("T/U/3/a/b/c/2")).unwrap();
    fs::create_dir(t.path().join("d2")).unwrap();
    let trace = t.path().join("trace");
    let child = Command::new("strace")
        .current_dir(t.path())
        .args(["-f", "-qq", "-o"])
        .arg(&trace)
        .args(["-P", "held", "-e", "trace=openat"])
        .args(["-e", "inject=openat:delay_enter=1500000"])
        .arg(sdu_bin())
        .args(["--du", "total", "-j1", "T/U", "d2"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while !fs::read_to_string(&trace).is_ok_and(|s| s.contains("\"held\"")) {
        assert!(start.elapsed().as_secs() < 20, "sdu never opened held");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    fs::rename(t.path().join("T/U/3/a/b"), t.path().join("T/U/3/b")).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr,
        "sdu: fts_read failed: T/U/3/a/b: No such file or directory\n"
    );
    let listed = names(&out.stdout);
    assert_eq!(listed.last().map(String::as_str), Some("d2"), "{listed:?}");
    let at = listed
        .iter()
        .position(|p| p == "T/U/3/a/b")
        .expect("a/b listed");
    assert_eq!(at + 2, listed.len(), "nothing of T/U after a/b: {listed:?}");
}
