//! Per-entry errors (reported, counted, the walk goes on, exit 1) and a
//! closed stdout (silent success); arguments that would exhaust the memory
//! or end in a panic (a huge time style, an endless `--files0-from`, a `TZ`
//! that is no zone file).

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
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
    assert_eq!(r.error_count, 1, "errors");
    assert_eq!(
        r.errors,
        [json::ReportedError {
            path: missing.clone().into_os_string(),
            error: want_msg["sdu: ".len()..want_msg.len() - 1].to_owned(),
        }]
    );
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

/// JSON's `errors` lists each entry that could not be read, its path
/// spelt as an entry's (base64 when not UTF-8) and the message printed,
/// sorted by path; `error_count` counts them.
#[test]
fn json_lists_the_errors_with_their_paths() {
    let t = TestDir::new();
    let bad = OsStr::from_bytes(b"nope\xff").to_owned();
    let o = run(Command::new(sdu_bin())
        .env("LC_ALL", "C")
        .args([
            OsStr::new("--json"),
            OsStr::new("zz"),
            &bad,
            OsStr::new("a"),
        ])
        .current_dir(t.path()));
    assert_eq!(o.code, Some(1), "{o:?}");
    assert_eq!(
        o.stderr,
        "sdu: cannot access 'zz': No such file or directory\n\
         sdu: cannot access 'nope'$'\\377': No such file or directory\n\
         sdu: cannot access 'a': No such file or directory\n"
    );
    let text = String::from_utf8(o.stdout.clone()).unwrap();
    assert!(
        text.ends_with(
            "\n],\"errors\":[\
             {\"path\":\"a\",\"error\":\"cannot access 'a': No such file or directory\"},\
             {\"path\":{\"bytes\":\"bm9wZf8=\"},\"error\":\"cannot access 'nope'$'\\\\377': No such file or directory\"},\
             {\"path\":\"zz\",\"error\":\"cannot access 'zz': No such file or directory\"}\
             ],\"error_count\":3}\n"
        ),
        "{text}"
    );
    let r = json::parse(&o.stdout);
    assert_eq!(r.error_count, 3);
    assert_eq!(r.errors[1].path, bad);
}

/// Only missing PATHs: the message, exit 1 and no heading (du prints
/// nothing); with `-c` the heading comes with the total row. `sdu help`
/// is a PATH like any other.
#[test]
fn no_heading_without_a_row() {
    let t = TestDir::new();
    for (args, prints) in [
        (&["nope"][..], ""),
        (&["help"], ""),
        (&["--tree", "nope"], ""),
        (&["--tree", "--top", "3", "nope"], ""),
        (
            &["-c", "nope"],
            "Total  Exclusive  Shared  Reclaimable  Path\n    0          0       0            0  total\n",
        ),
    ] {
        let o = run(Command::new(sdu_bin()).args(args).current_dir(t.path()));
        assert_eq!(o.code, Some(1), "{args:?}: {o:?}");
        let name = args.last().unwrap();
        assert_eq!(
            o.stderr,
            format!("sdu: cannot access '{name}': No such file or directory\n"),
            "{args:?}"
        );
        assert_eq!(String::from_utf8_lossy(&o.stdout), prints, "{args:?}");
    }
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
    assert_eq!(r.error_count, 1, "errors");
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

/// As `nobody`: `scratch` (0700, root's) cannot be read, `part/in`
/// neither, so `part` and the root are read in part. The table and
/// `--tree` mark them as ncdu and the browser do (`!`, `.`) in a Flag
/// column before the path, with a legend line for each mark printed; a
/// tree read whole has no such column; `--du` stays GNU du's lines, byte
/// for byte.
#[test]
fn unreadable_dirs_are_flagged_in_the_table_and_the_tree() {
    if !is_root() {
        unavailable::<()>("the permission test needs root (setpriv to nobody)");
        return;
    }
    let t = TestDir::new();
    chmod(t.path(), 0o755);
    let root = t.mkdir("t");
    for d in ["scratch/x", "ok", "part/in"] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    write_file(&root.join("ok/f"), 10_000);
    write_file(&root.join("part/big"), 100_000);
    write_file(&root.join("scratch/x/hidden"), 100_000);
    run(Command::new("chmod").args(["-R", "go+rX"]).arg(&root)).assert_ok();
    chmod(&root.join("scratch"), 0o700);
    chmod(&root.join("part/in"), 0o700);
    let bin = t.path().join("sdu");
    fs::copy(sdu_bin(), &bin).unwrap();
    chmod(&bin, 0o755);
    // Another test's fork may hold the copy open for writing a moment
    // (ETXTBSY): try again.
    let as_nobody = |a: &[&str]| {
        for _ in 0..100 {
            let out = run(Command::new("setpriv")
                .args(nobody_args())
                .arg(&bin)
                .current_dir(t.path())
                .args(a)
                .arg("t"));
            if !(out.code == Some(126) && out.stderr.contains("Text file busy")) {
                return out;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("{} stays busy", bin.display());
    };
    let want = [
        ("t/ok", ' '),
        ("t/part/in", '!'),
        ("t/part", '.'),
        ("t/scratch", '!'),
        ("t", '.'),
    ];
    let legend = [
        "! could not be read: nothing in it is counted (stderr says why)",
        ". read in part: an entry in it or below it could not be read (named on stderr); \
         its figures count what was read",
    ];
    let out = as_nobody(&["-B1"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    let tab = parse_text(&out.stdout, true, None, b'\n');
    assert_eq!(
        tab.header.as_ref().unwrap()[4..],
        ["Flag", "Path"],
        "{out:?}"
    );
    let flags: Vec<(String, char)> = (tab.rows.iter())
        .map(|r| (r.path.to_string_lossy().into_owned(), r.flag))
        .collect();
    let want: Vec<(String, char)> = want.iter().map(|&(p, f)| (p.to_string(), f)).collect();
    assert_eq!(flags, want, "{out:?}");
    // `./scratch 0 0 0 0` no longer: its row says `!`, and the legend why.
    let text = out.stdout_str();
    for l in legend {
        assert!(
            text.ends_with(&format!("{l}\n")) || text.contains(&format!("\n{l}\n")),
            "{text}"
        );
    }
    // The figures are du's, as nobody.
    let du = Du::new(&["-B1"]).nobody();
    for r in &tab.rows {
        let p = t.path().join(&r.path);
        assert_eq!(
            r.sizes[0],
            du.bytes(&[], p.as_os_str()).to_string(),
            "{r:?}"
        );
    }
    // --tree: the same marks in its Flag column.
    let tree = as_nobody(&["--tree", "-B1"]);
    assert_eq!(tree.code, Some(1), "{tree:?}");
    let lines: Vec<&str> = tree.stdout_str().lines().collect();
    assert!(lines[0].ends_with("  Flag  Path"), "{lines:?}");
    let mark_of = |name: &str| {
        let l = lines
            .iter()
            .find(|l| l.ends_with(&format!(" {name}")))
            .unwrap_or_else(|| panic!("no {name}: {lines:?}"));
        // `%  `, then the mark right-aligned in 4 columns, then the drawing.
        let at = l.find("%  ").expect("a percentage");
        l[at + 3..at + 7].trim().chars().next().unwrap_or(' ')
    };
    assert_eq!(
        ["t", "part", "in", "ok", "scratch"].map(mark_of),
        ['.', '.', '!', ' ', '!'],
        "{lines:?}"
    );
    for l in legend {
        assert!(lines.contains(&l), "{lines:?}");
    }
    // --du: GNU du's lines and status, no mark.
    let (sdu_du, du_out) = (as_nobody(&["--du", "total", "-B1"]), {
        run(Command::new("setpriv")
            .args(nobody_args())
            .arg("du")
            .arg("-B1")
            .current_dir(t.path())
            .env("LC_ALL", "C")
            .arg("t"))
    });
    assert_eq!(sdu_du.stdout, du_out.stdout, "{sdu_du:?} {du_out:?}");
    assert_eq!(sdu_du.code, du_out.code);
    // Read whole (as root): no Flag column, no legend.
    let whole = run(Command::new(sdu_bin())
        .current_dir(t.path())
        .args(["-B1", "t"]));
    whole.assert_ok();
    let head: Vec<&str> = whole
        .stdout_str()
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        head,
        ["Total", "Exclusive", "Shared", "Reclaimable", "Path"],
        "{whole:?}"
    );
    assert!(!whole.stdout_str().contains("read in part"), "{whole:?}");
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
    assert!(r.error_count >= 1, "errors: {}", r.error_count);
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

// ---------------------------------------------------------------------------
// Names in messages, quoted as du quotes them

/// The locales the quoting tests run in. C.UTF-8 ships with glibc ≥ 2.35
/// (Debian: libc-bin); without it the UTF-8 half cannot run.
fn quoting_locales() -> Vec<&'static str> {
    let out = run(Command::new("locale").arg("-a"));
    if out
        .stdout_str()
        .lines()
        .any(|l| l == "C.utf8" || l == "C.UTF-8")
    {
        vec!["C", "C.UTF-8"]
    } else {
        unavailable::<()>("no C.UTF-8 locale here (`locale -a`)");
        vec!["C"]
    }
}

/// The lines of a program's stderr with its `NAME: ` prefix removed, raw
/// bytes, sorted (du and sdu need not report in the same order).
fn messages(stderr: &[u8], prog: &str) -> Vec<Vec<u8>> {
    let prefix = format!("{prog}: ");
    let mut v: Vec<Vec<u8>> = stderr
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            l.strip_prefix(prefix.as_bytes())
                .unwrap_or_else(|| panic!("{prog}: line without prefix: {:?}", show(l)))
                .to_vec()
        })
        .collect();
    v.sort();
    v
}

fn show(b: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(b))
}

/// Panics with the lines only one side printed unless `sdu` and `du` are
/// the same lists.
fn assert_same_messages(sdu: &[Vec<u8>], du: &[Vec<u8>], what: &str) {
    if sdu == du {
        return;
    }
    let only = |a: &[Vec<u8>], b: &[Vec<u8>]| -> String {
        a.iter()
            .filter(|l| !b.contains(l))
            .take(20)
            .map(|l| format!("  {}\n", show(l)))
            .collect()
    };
    panic!(
        "{what}: sdu and du quote differently ({} and {} lines)\nonly sdu:\n{}only du:\n{}",
        sdu.len(),
        du.len(),
        only(sdu, du),
        only(du, sdu)
    );
}

/// Run as `nobody` on unreadable directories with odd names, in the C
/// locale and in C.UTF-8: sdu's `cannot read directory` lines are du's,
/// byte for byte (after `sdu:`/`du:`). In particular U+0085 is escaped as
/// its two UTF-8 bytes (`$'\302\205'`), not as its code point, and `é`
/// is raw in C.UTF-8 but `$'\303\251'` in C. Needs root for setpriv.
#[test]
fn unreadable_dir_names_are_quoted_as_du_quotes_them() {
    if !is_root() {
        unavailable::<()>("the quoting test needs root (setpriv to nobody)");
        return;
    }
    let t = TestDir::new();
    chmod(t.path(), 0o755);
    let root = t.mkdir("names");
    let names: [&[u8]; 12] = [
        "x\u{85}y".as_bytes(),
        b"bad\xffbyte",
        "é".as_bytes(),
        b"new\nline",
        b"tab\tx",
        b"it's",
        b"a b",
        b"plain",
        "it's é".as_bytes(),
        "🙂\u{2028}".as_bytes(),
        b"d$x*",
        b"back\\slash",
    ];
    for n in names {
        let d = root.join(OsStr::from_bytes(n));
        fs::create_dir(&d).unwrap();
        chmod(&d, 0o000);
    }
    // The test binary may live under a directory nobody cannot enter.
    let bin = t.path().join("sdu");
    fs::copy(sdu_bin(), &bin).unwrap();
    chmod(&bin, 0o755);
    for loc in quoting_locales() {
        let as_nobody = |prog: &OsStr| {
            let out = Command::new("setpriv")
                .args(nobody_args())
                .arg(prog)
                .arg("-s")
                .arg(&root)
                .env("LC_ALL", loc)
                .stdin(Stdio::null())
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(1), "{prog:?} as nobody: {out:?}");
            out.stderr
        };
        let s = messages(&as_nobody(bin.as_os_str()), "sdu");
        let d = messages(&as_nobody(OsStr::new("du")), "du");
        assert_eq!(d.len(), names.len(), "du, LC_ALL={loc}: {d:?}");
        assert_same_messages(&s, &d, &format!("unreadable directories, LC_ALL={loc}"));
    }
}

/// Every Unicode scalar value from U+0080 up, every ASCII byte but NUL, and
/// random byte strings, as names that do not exist: sdu's `cannot access`
/// lines are du's in C and in C.UTF-8. This checks sdu's table of printable
/// characters against the glibc du runs with (a different glibc may class
/// newer characters differently: then the table needs regenerating, see
/// `PRINTABLE` in src/quote.rs).
#[test]
fn quoting_of_every_code_point_matches_du() {
    let t = TestDir::new();
    let mut names: Vec<Vec<u8>> = Vec::new();
    // 50 characters a name: at most 201 bytes, below NAME_MAX.
    let chars: Vec<char> = (0x80..=0x10ffff).filter_map(char::from_u32).collect();
    for group in chars.chunks(50) {
        let mut n = b"u".to_vec();
        n.extend(group.iter().collect::<String>().bytes());
        names.push(n);
    }
    for b in 1..0x80u8 {
        names.push(vec![b'a', b, b'z']);
    }
    // Where a byte sits matters for a few (a leading `~` or `#`, a lone
    // brace); none of these exists in the empty working directory.
    for n in ["~it's", "#it's", "{", "}", "{}", "it's", "''", "~", "-"] {
        names.push(n.as_bytes().to_vec());
    }
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..3000 {
        let mut n = b"r".to_vec();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        for _ in 0..1 + x % 12 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Biased towards bytes >= 0x80 and UTF-8 lead bytes.
            let b = match x % 4 {
                0 => (x >> 8) as u8 & 0x7f,
                1 => 0x80 | ((x >> 8) as u8 & 0x3f),
                _ => (x >> 8) as u8 | 0x80,
            };
            n.push(if b == 0 { b'0' } else { b });
        }
        names.push(n);
    }
    for loc in quoting_locales() {
        let (mut s, mut d) = (Vec::new(), Vec::new());
        // Batches well below ARG_MAX.
        let mut batch: Vec<&OsStr> = Vec::new();
        let mut size = 0;
        let mut flush = |batch: &mut Vec<&OsStr>| {
            for (prog, out) in [(sdu_bin().as_os_str(), &mut s), (OsStr::new("du"), &mut d)] {
                let o = Command::new(prog)
                    .arg("-s")
                    .arg("--")
                    .args(batch.iter())
                    .current_dir(t.path())
                    .env("LC_ALL", loc)
                    .stdin(Stdio::null())
                    .output()
                    .unwrap();
                assert_eq!(o.status.code(), Some(1), "{prog:?}");
                out.extend(o.stderr);
            }
            batch.clear();
        };
        for n in &names {
            batch.push(OsStr::from_bytes(n));
            size += n.len() + 1;
            if size > 256 << 10 {
                flush(&mut batch);
                size = 0;
            }
        }
        flush(&mut batch);
        let s = messages(&s, "sdu");
        let d = messages(&d, "du");
        assert_eq!(d.len(), names.len(), "du, LC_ALL={loc}");
        assert_same_messages(&s, &d, &format!("names that do not exist, LC_ALL={loc}"));
    }
}

/// Which environments make du quote as in a UTF-8 locale: sdu resolves
/// LC_ALL, LC_<CATEGORY>, LANG and LOCPATH as du's `setlocale` does,
/// including its failure (and fallback to C) when some category names a
/// locale that is not installed. Compared on `é`, raw in UTF-8 only.
#[test]
fn locale_is_taken_from_the_environment_as_du_takes_it() {
    if quoting_locales().len() < 2 {
        return;
    }
    let t = TestDir::new();
    let locales = t.mkdir("locales");
    std::os::unix::fs::symlink("/usr/lib/locale/C.utf8", locales.join("xx_YY.UTF-8")).unwrap();
    let locpath = format!("LOCPATH={}", locales.display());
    let cases: &[&[&str]] = &[
        &[],
        &["LANG=C.UTF-8"],
        &["LANG=C.utf8"],
        &["LANG=c.utf8"],
        &["LANG=C.UTF-8@mod"],
        &["LANG=C_XX.UTF-8"],
        &["LANG=en_US.UTF-8"],
        &["LANG=zz_ZZ.UTF-8"],
        &["LANG=C.UTF-8", "LC_TIME=zz_ZZ.UTF-8"],
        &["LANG=C.UTF-8", "LC_MESSAGES=POSIX"],
        &["LANG=C", "LC_CTYPE=C.UTF-8"],
        &["LC_ALL=", "LC_CTYPE=C.UTF-8"],
        &["LC_ALL=C", "LC_CTYPE=C.UTF-8"],
        &["LC_ALL=C.UTF-8", "LC_CTYPE=C"],
        &["LANG=/usr/lib/locale/C.utf8"],
        &["LANG=C.UTF-8", "LOCPATH=/nonexistent"],
        &["LANG=xx_YY.UTF-8", &locpath],
        &["LANG=xx_YY.utf8", &locpath],
        &["LANG=xx_YY.UTF-8"],
    ];
    let mut raw = 0;
    for vars in cases {
        let quoted = |prog: &OsStr| {
            let mut c = Command::new(prog);
            for (k, _) in std::env::vars_os() {
                let k = k.to_string_lossy().into_owned();
                if k.starts_with("LC_") || k == "LANG" || k == "LANGUAGE" || k == "LOCPATH" {
                    c.env_remove(k);
                }
            }
            for v in *vars {
                let (k, val) = v.split_once('=').unwrap();
                c.env(k, val);
            }
            let o = c
                .arg("--")
                .arg("nx\u{e9}")
                .current_dir(t.path())
                .stdin(Stdio::null())
                .output()
                .unwrap();
            assert_eq!(o.status.code(), Some(1), "{prog:?} {vars:?}");
            o.stderr
        };
        let s = messages(&quoted(sdu_bin().as_os_str()), "sdu");
        let d = messages(&quoted(OsStr::new("du")), "du");
        assert_same_messages(&s, &d, &format!("{vars:?}"));
        raw += usize::from(d[0].starts_with("cannot access 'nx\u{e9}'".as_bytes()));
    }
    // Both outcomes were exercised.
    assert!(
        raw > 3 && raw < cases.len() - 3,
        "{raw} of {} raw",
        cases.len()
    );
}

// ---------------------------------------------------------------------------
// Arguments that would exhaust the memory or end in a panic

/// The address space sdu is given: ten times what these runs need, a
/// third of a second of the growth an unbounded read of /dev/zero had.
const MEMORY_CAP_KB: u32 = 512 * 1024;

/// Runs `script` (sh, with `$SDU` the binary) in `dir` with the address
/// space capped at [`MEMORY_CAP_KB`]; the script runs sdu under
/// `timeout 20`, so a run that never ends exits 124, and one the cap
/// stopped (the allocator aborts) 134.
fn capped(dir: &Path, script: &str, env: &[(&str, &OsStr)]) -> Output {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(format!("ulimit -v {MEMORY_CAP_KB} && {script}"))
        .env("SDU", sdu_bin())
        .current_dir(dir);
    for (k, v) in env {
        c.env(k, v);
    }
    run_with_timeout(&mut c, 60)
}

/// A `--time-style=+FORMAT` or `TIME_STYLE` wider than 65,535 characters
/// is printed as du prints it, in full: the time column is padded by
/// hand (a width that large is past what `{:<width$}` takes).
#[test]
fn a_time_style_of_any_width_is_printed() {
    let t = TestDir::new();
    fs::create_dir(t.path().join("d")).unwrap();
    let wide = format!("+{}", "x".repeat(70_000));
    for (how, env) in [
        (format!("--time-style='{wide}'"), vec![]),
        (String::new(), vec![("TIME_STYLE", OsStr::new(&wide))]),
    ] {
        let o = capped(
            t.path(),
            &format!("exec timeout 20 \"$SDU\" -j1 --time {how} d"),
            &env,
        );
        assert_eq!(o.code, Some(0), "{o:?}");
        let out = o.stdout_str();
        let row = out.lines().nth(1).unwrap_or_default();
        assert!(
            row.ends_with(&format!("  {}  d", &wide[1..])),
            "the time column is not the style: {}",
            &row[..row.len().min(200)]
        );
        let head = out.lines().next().unwrap_or_default();
        assert!(head.ends_with(&format!("Time{}  Path", " ".repeat(70_000 - 4))));
    }
}

/// `--files0-from` reads a name at a time: `/dev/zero` (an endless run of
/// zero-length names) stops at the 100th with du's message for each and
/// one saying why, exit 2 (1 as du); an endless name stops at PATH_MAX;
/// a list ending in a name that long reads no further either. All within
/// the memory cap, at once.
#[test]
fn files0_from_an_endless_input_stops_with_bounded_memory() {
    let t = TestDir::new();
    fs::create_dir(t.path().join("d")).unwrap();
    fs::write(
        t.path().join("list"),
        [&b"d\0"[..], &[b'a'; 4096], b"\0d\0"].concat(),
    )
    .unwrap();
    let too_long = "file name too long (a path has at most 4095 bytes); \
                    the rest of the list is not read";
    for (script, status, first, last) in [
        (
            "exec timeout 20 \"$SDU\" -j1 --files0-from=/dev/zero",
            2,
            "sdu: /dev/zero:1: invalid zero-length file name".to_owned(),
            "sdu: /dev/zero:100: 100 invalid file names; the rest of the list is not read"
                .to_owned(),
        ),
        (
            "ln -sf \"$SDU\" du && exec timeout 20 ./du --files0-from=/dev/zero",
            1,
            "du: /dev/zero:1: invalid zero-length file name".to_owned(),
            "du: /dev/zero:100: 100 invalid file names; the rest of the list is not read"
                .to_owned(),
        ),
        (
            "tr '\\0' a < /dev/zero | timeout 20 \"$SDU\" -j1 --files0-from=-",
            2,
            format!("sdu: -:1: {too_long}"),
            format!("sdu: -:1: {too_long}"),
        ),
        (
            "exec timeout 20 \"$SDU\" -j1 --files0-from=list",
            2,
            format!("sdu: list:2: {too_long}"),
            format!("sdu: list:2: {too_long}"),
        ),
    ] {
        let o = capped(t.path(), script, &[]);
        assert_eq!(o.code, Some(status), "{script}: {o:?}");
        assert!(o.stdout.is_empty(), "{script}: {o:?}");
        let lines: Vec<&str> = o
            .stderr
            .lines()
            .filter(|l| !l.starts_with("Try "))
            .collect();
        assert_eq!(lines.first(), Some(&&*first), "{script}: {o:?}");
        assert_eq!(lines.last(), Some(&&*last), "{script}: {o:?}");
    }
}

/// `TZ` naming something that is no zone file (`/dev/zero`, a FIFO) is
/// UTC, as glibc has it: opened without blocking, read no further than a
/// zone file can be long. The memory `TZ=/dev/zero` took is read (VmPeak)
/// while sdu waits to open its `--files0-from` FIFO, which it does after
/// it has read the zone.
#[test]
fn tz_naming_a_device_or_a_fifo_is_utc() {
    let t = TestDir::new();
    fs::create_dir(t.path().join("d")).unwrap();
    let fifo = t.path().join("fifo");
    let list = t.path().join("list");
    for f in [&fifo, &list] {
        assert_eq!(run(Command::new("mkfifo").arg(f)).code, Some(0));
    }
    let script = "exec timeout 20 \"$SDU\" -j1 --time --time-style=full-iso d";
    let utc = capped(t.path(), script, &[("TZ", OsStr::new("UTC0"))]);
    assert_eq!(utc.code, Some(0), "{utc:?}");
    let o = capped(t.path(), script, &[("TZ", fifo.as_os_str())]);
    assert_eq!(o.code, Some(0), "TZ=FIFO: {o:?}");
    assert_eq!(o.stdout_str(), utc.stdout_str(), "TZ=FIFO");

    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v {MEMORY_CAP_KB} && exec \"$SDU\" -j1 --time --time-style=full-iso \
             --files0-from=list"
        ))
        .env("SDU", sdu_bin())
        .env("TZ", "/dev/zero")
        .current_dir(t.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A FIFO opens for writing without blocking only once it has a reader.
    let start = std::time::Instant::now();
    let mut writer = loop {
        let w = fs::OpenOptions::new()
            .write(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(&list);
        if let Ok(w) = w {
            break w;
        }
        if let Ok(Some(st)) = child.try_wait() {
            panic!("sdu ended before it opened its list: {st}");
        }
        if start.elapsed() > std::time::Duration::from_secs(20) {
            let _ = child.kill();
            panic!("TZ=/dev/zero: sdu never opened its list in 20 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    let status = fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let peak: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmPeak:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    std::io::Write::write_all(&mut writer, b"d\0").unwrap();
    drop(writer);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "TZ=/dev/zero: {o:?}");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        utc.stdout_str(),
        "TZ=/dev/zero"
    );
    assert!(
        peak < u64::from(MEMORY_CAP_KB) / 4,
        "TZ=/dev/zero: VmPeak {peak} kB before the scan (cap {MEMORY_CAP_KB} kB)"
    );
    eprintln!("TZ=/dev/zero: VmPeak {peak} kB before the scan");
}
