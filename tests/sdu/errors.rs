//! Per-entry errors (reported, counted, the walk goes on, exit 1) and a
//! closed stdout (silent success).

use std::ffi::OsString;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};

use crate::args;
use crate::json;
use crate::util::*;

#[test]
fn missing_path_is_reported_and_the_rest_printed() {
    let t = TestDir::new();
    let one = t.mkdir("one");
    plain_tree(&one);
    let two = t.mkdir("two");
    plain_tree(&two);
    let missing = t.path().join("missing");
    let want_msg = format!(
        "sdu: cannot access '{}': No such file or directory\n",
        missing.display()
    );

    let (_, a) = sdu_json_raw(&args![one]);
    let (_, b) = sdu_json_raw(&args![two]);
    let out = sdu(&args!["--json", one, missing, two]);
    assert_eq!(out.code, Some(1), "exit status: {out:?}");
    assert_eq!(out.stderr, want_msg);
    let r = json::parse(&out.stdout);
    check_header_fields(&r);
    assert_eq!(r.errors, 1, "errors");
    let mut want = a.entries.clone();
    want.extend(b.entries.iter().cloned());
    assert_eq!(r.entries, want, "entries of the paths that exist");

    let text = sdu(&args!["-a", one, missing, two]);
    assert_eq!(text.code, Some(1));
    assert_eq!(text.stderr, want_msg);
    // Columns are aligned over all roots, so compare rows, not bytes.
    let rows = |out: &[u8]| -> Vec<(Vec<String>, OsString)> {
        parse_text(out, true, None, b'\n')
            .rows
            .into_iter()
            .map(|r| (r.sizes, r.path))
            .collect()
    };
    let mut want_rows = rows(&sdu_ok(&args!["-a", one]));
    want_rows.extend(rows(&sdu_ok(&args!["-a", two])));
    assert!(
        rows(&text.stdout) == want_rows,
        "text output with a missing path in the middle:\n{}",
        String::from_utf8_lossy(&text.stdout)
    );
}

/// Run as `nobody` on a tree with a root-owned 0700 directory: one
/// message, exit 1, and every other figure still as du (also run as
/// nobody) gives it. Needs root for setpriv.
#[test]
fn unreadable_dir_is_reported_and_the_rest_printed() {
    if !is_root() {
        unavailable::<()>("the permission test needs root (setpriv to nobody)");
        return;
    }
    let t = TestDir::new();
    chmod(t.path(), 0o755);
    let root = t.mkdir("tree");
    standard_tree(&root);
    let locked = root.join("a/locked");
    fs::create_dir_all(locked.join("sub")).unwrap();
    write_file(&locked.join("secret"), 50_000);
    write_file(&locked.join("sub/more"), 50_000);
    run(Command::new("chmod").args(["-R", "go+rX"]).arg(&root)).assert_ok();
    chmod(&locked, 0o700);
    // The test binary may live under a directory nobody cannot enter (CI
    // clones anywhere): run a copy.
    let bin = t.path().join("sdu");
    fs::copy(sdu_bin(), &bin).unwrap();
    chmod(&bin, 0o755);
    let as_nobody = |a: &[&str]| {
        run(Command::new("setpriv")
            .args(nobody_args())
            .arg(&bin)
            .args(a)
            .arg(&root))
    };
    let want_msg = format!(
        "sdu: cannot read directory '{}': Permission denied\n",
        locked.display()
    );

    let out = as_nobody(&["--json"]);
    assert_eq!(out.code, Some(1), "exit status: {out:?}");
    assert_eq!(out.stderr, want_msg);
    let r = json::parse(&out.stdout);
    check_header_fields(&r);
    assert_eq!(r.errors, 1, "errors");
    let du = Du::default().nobody();
    let s = sorted(paths(&r));
    let d = du.paths(&[], &[root.as_os_str()]);
    assert!(s == d, "selection as nobody:\n{}", set_diff(&s, &d));
    du.assert_figures(&r, |_| true);

    let text = as_nobody(&["-a", "-b"]);
    assert_eq!(text.code, Some(1));
    assert_eq!(text.stderr, want_msg);
    let tab = parse_text(&text.stdout, true, None, b'\n');
    let rows: Vec<_> = tab.rows.iter().map(|r| r.path.clone()).collect();
    let all = as_nobody(&["--json", "-a"]);
    assert_eq!(all.code, Some(1));
    assert_eq!(rows, paths(&json::parse(&all.stdout)), "text rows vs JSON");
    assert!(!rows.contains(&locked.join("secret").into_os_string()));
}

/// `sdu BIG | head -1`: exit 0 and nothing on stderr, whether SIGPIPE is
/// ignored (as the test harness leaves it: writes fail with EPIPE) or has
/// its default action (as in a shell).
#[test]
fn broken_pipe_is_silent_success() {
    let t = Scratch::new();
    let root = t.mkdir("big");
    // About 10,000 rows: far more than a 64 KiB pipe holds.
    medium_tree(&root, 50, 200);
    for default_sigpipe in [false, true] {
        for (flags, read) in [(&["-a"][..], None), (&["--json", "-a"], Some(100))] {
            let mut cmd = if default_sigpipe {
                let mut c = Command::new("env");
                c.arg("--default-signal=PIPE").arg(sdu_bin());
                c
            } else {
                Command::new(sdu_bin())
            };
            let mut child = cmd
                .args(flags)
                .arg(&root)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut r = BufReader::new(child.stdout.take().unwrap());
            let mut got = Vec::new();
            match read {
                None => {
                    r.read_until(b'\n', &mut got).unwrap();
                }
                Some(n) => {
                    got.resize(n, 0);
                    r.read_exact(&mut got).unwrap();
                }
            }
            drop(r);
            let out = child.wait_with_output().unwrap();
            let what = format!("sdu {flags:?} | head (default SIGPIPE: {default_sigpipe})");
            assert!(!got.is_empty(), "{what}: nothing read");
            assert_eq!(
                out.status.code(),
                Some(0),
                "{what}: {:?}, stderr: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                out.stderr.is_empty(),
                "{what}: stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// With `-L`, a dangling symlink is an error as in `du -L` (cannot access,
/// exit 1, the rest printed), and a symlink to an ancestor neither hangs
/// the walk nor changes any figure (du -L skips the cycle).
#[test]
fn dereference_reports_dangling_symlink_and_survives_cycle() {
    let t = TestDir::new();
    let root = t.mkdir("tree");
    fs::create_dir_all(root.join("a/b")).unwrap();
    write_file(&root.join("a/f"), 20_000);
    write_file(&root.join("a/b/g"), 30_000);
    std::os::unix::fs::symlink("..", root.join("a/b/up")).unwrap();
    std::os::unix::fs::symlink("nowhere", root.join("dang")).unwrap();
    let dang = root.join("dang");

    let out = run_with_timeout(
        Command::new(sdu_bin()).args(["--json", "-L"]).arg(&root),
        60,
    );
    assert_eq!(out.code, Some(1), "exit status: {out:?}");
    let want_msg = format!(
        "sdu: cannot access '{}': No such file or directory\n",
        dang.display()
    );
    assert!(
        out.stderr.contains(&want_msg),
        "stderr lacks {want_msg:?}: {}",
        out.stderr
    );
    let r = json::parse(&out.stdout);
    check_header_fields(&r);
    assert!(r.errors >= 1, "errors: {}", r.errors);
    let du = Du::new(&["-L"]);
    let s = sorted(paths(&r));
    let d = du.paths(&[], &[root.as_os_str()]);
    assert!(s == d, "selection with -L:\n{}", set_diff(&s, &d));
    // Below the root, a directory's figure under -L depends on where the
    // walk started when a symlink points back up: du -s -L a/b follows
    // `up` into a (not an ancestor when starting at a/b), sdu's walk from
    // the root sees a cycle there. They agree on the root.
    du.assert_figures(&r, |e| e.depth == 0);
}
