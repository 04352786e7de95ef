//! The flags dust and ncdu users expect: `--reverse`, `--files-only`,
//! `--older-than`, `--exclude-caches` and `--exclude-kernfs`, each with
//! its exact output.

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::args;
use crate::util::*;

/// A tree for --reverse and --files-only: files of 1000, 3000 and 2000
/// bytes in a/, b/ and c/, and 500 bytes at the top.
fn three_files(t: &TestDir) -> PathBuf {
    let root = t.mkdir("r");
    for (dir, len) in [("a", 1000), ("b", 3000), ("c", 2000)] {
        fs::create_dir(root.join(dir)).unwrap();
        write_file(&root.join(dir).join("f"), len);
    }
    write_file(&root.join("top"), 500);
    root
}

/// `sdu ARGS` as text (which must succeed silently), `ROOT` spelled `r`.
fn sdu_text(root: &Path, args: &[&str]) -> String {
    let mut a: Vec<OsString> = args.iter().map(OsString::from).collect();
    a.push(root.into());
    let out = String::from_utf8(sdu_ok(&a)).unwrap();
    out.replace(root.to_str().unwrap(), "r")
}

#[test]
fn reverse_lists_in_the_opposite_order() {
    let t = TestDir::new();
    let root = three_files(&t);
    let apparent = ["-b", "--du", "total", "--files-only"];
    let with = |more: &[&str]| sdu_text(&root, &[&apparent[..], more].concat());
    assert_eq!(
        with(&["--sort", "total"]),
        "3000\tr/b/f\n2000\tr/c/f\n1000\tr/a/f\n500\tr/top\n"
    );
    assert_eq!(
        with(&["--sort", "total", "--reverse"]),
        "500\tr/top\n1000\tr/a/f\n2000\tr/c/f\n3000\tr/b/f\n"
    );
    // --top keeps the largest, then --reverse lists them smallest first.
    assert_eq!(
        with(&["--top", "2", "--reverse"]),
        "2000\tr/c/f\n3000\tr/b/f\n"
    );
    assert_eq!(
        with(&["--sort", "name", "--reverse"]),
        "500\tr/top\n2000\tr/c/f\n3000\tr/b/f\n1000\tr/a/f\n"
    );
    // Without --sort: the table's order (du's, siblings by name)
    // backwards, each directory before its contents.
    let last = |text: String| -> Vec<String> {
        text.lines()
            .map(|l| l.rsplit(' ').next().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        last(sdu_text(&root, &["--no-header", "--reverse"])),
        ["r", "r/c", "r/b", "r/a"]
    );
    // The tree view: each directory's entries from last to first.
    let tree = sdu_text(
        &root,
        &[
            "--tree",
            "--inodes",
            "--sort",
            "name",
            "--reverse",
            "--no-header",
            "--color=never",
        ],
    );
    let names: Vec<&str> = tree
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap())
        .collect();
    assert_eq!(names, ["r", "c", "b", "a"], "{tree}");
}

#[test]
fn files_only_lists_no_directory() {
    let t = TestDir::new();
    let root = three_files(&t);
    assert_eq!(
        sdu_text(
            &root,
            &["-b", "--du", "total", "--files-only", "--sort", "name"]
        ),
        "1000\tr/a/f\n3000\tr/b/f\n2000\tr/c/f\n500\tr/top\n"
    );
    assert_eq!(
        sdu_text(
            &root,
            &["-b", "--du", "total", "--files-only", "--top", "1"]
        ),
        "3000\tr/b/f\n"
    );
    assert_eq!(
        sdu_text(
            &root,
            &[
                "-b",
                "--du",
                "total",
                "--files-only",
                "--sort",
                "name",
                "--min-size",
                "1500",
                "-c"
            ]
        ),
        "3000\tr/b/f\n2000\tr/c/f\n".to_string()
            + &format!(
                "{}\ttotal\n",
                sdu_text(&root, &["-b", "--du", "total", "-s"])
                    .split('\t')
                    .next()
                    .unwrap()
            )
    );
    let e = sdu(&args!["--files-only", "--tree", root]);
    assert_eq!(e.code, Some(2), "{e:?}");
}

#[test]
fn older_than_lists_entries_not_modified_since() {
    let t = TestDir::new();
    let root = three_files(&t);
    let at = |p: &Path, secs: u64| {
        let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
        fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(when)
            .unwrap();
    };
    // 2001-01-01 and 2020-01-01, UTC.
    at(&root.join("a/f"), 978_307_200);
    at(&root.join("b/f"), 1_577_836_800);
    // a/ itself: its own mtime counts too.
    let a = fs::File::open(root.join("a")).unwrap();
    a.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(978_307_200))
        .unwrap();
    let with = |when: &str| {
        let out = run(Command::new(sdu_bin())
            .args(["-a", "-b", "--du", "total", "--sort", "name"])
            .args(["--older-than", when])
            .arg(&root)
            .env("TZ", "UTC0"));
        out.assert_ok();
        out.stdout_str().replace(root.to_str().unwrap(), "r")
    };
    assert_eq!(with("2010-01-01"), with_dir_a(&root) + "1000\tr/a/f\n");
    assert_eq!(with("2001-01-01 00:00:01"), with("2010-01-01"));
    assert_eq!(with("2001-01-01"), "");
    assert_eq!(with("1d"), format!("{}3000\tr/b/f\n", with("2010-01-01")));
    // A directory's time is the newest of anything in it: b/ was
    // modified when f was made in it.
    assert!(!with("1d").contains("r/b\n"));
    for bad in ["3x", "1.5d", "2024-13-01", "d", ""] {
        let out = sdu(&args!["--older-than", bad, root]);
        assert_eq!(out.code, Some(2), "{bad}: {out:?}");
        assert!(
            out.stderr
                .contains(&format!("invalid --older-than '{bad}'")),
            "{out:?}"
        );
    }
}

/// `SIZE\tr/a\n`: a/ with its file, as `--du total -b -s` measures it.
fn with_dir_a(root: &Path) -> String {
    let a = root.join("a");
    let s = String::from_utf8(sdu_ok(&args!["-b", "--du", "total", "-s", a])).unwrap();
    s.replace(root.to_str().unwrap(), "r")
}

const CACHEDIR_TAG: &[u8] = b"Signature: 8a477f597d28d172789f06886806bc55\n# a cache\n";

#[test]
fn exclude_caches_skips_directories_with_a_valid_tag() {
    let t = TestDir::new();
    let root = t.mkdir("r");
    for d in [
        "cache",
        "cache/sub",
        "short",
        "wrong",
        "link",
        "keep",
        "fifo",
    ] {
        fs::create_dir(root.join(d)).unwrap();
    }
    fs::write(root.join("cache/CACHEDIR.TAG"), CACHEDIR_TAG).unwrap();
    write_file(&root.join("cache/sub/big"), 100_000);
    // Not tags: 42 bytes of the signature, another signature, a symlink
    // to a valid one.
    fs::write(root.join("short/CACHEDIR.TAG"), &CACHEDIR_TAG[..42]).unwrap();
    fs::write(
        root.join("wrong/CACHEDIR.TAG"),
        b"Signature: 0a477f597d28d172789f06886806bc55",
    )
    .unwrap();
    symlink("../cache/CACHEDIR.TAG", root.join("link/CACHEDIR.TAG")).unwrap();
    // A FIFO is never opened (it would block a reader without O_NONBLOCK).
    let st = Command::new("mkfifo")
        .arg(root.join("fifo/CACHEDIR.TAG"))
        .status()
        .unwrap();
    assert!(st.success());
    let inodes = |more: &[&str]| {
        sdu_text(
            &root,
            &[&["--du", "inodes", "--sort", "name"][..], more].concat(),
        )
    };
    assert_eq!(
        inodes(&[]),
        "14\tr\n4\tr/cache\n2\tr/cache/sub\n2\tr/fifo\n1\tr/keep\n2\tr/link\n2\tr/short\n2\tr/wrong\n"
    );
    assert_eq!(
        inodes(&["--exclude-caches"]),
        "10\tr\n2\tr/fifo\n1\tr/keep\n2\tr/link\n2\tr/short\n2\tr/wrong\n"
    );
    // A PATH given is measured all the same.
    let cache = root.join("cache");
    assert_eq!(
        String::from_utf8(sdu_ok(&args![
            "--du",
            "inodes",
            "-s",
            "--exclude-caches",
            cache
        ]))
        .unwrap(),
        format!("4\t{}\n", cache.display())
    );
}

#[test]
fn exclude_kernfs_skips_proc_and_sysfs_not_tmpfs() {
    if !is_root() {
        return unavailable("mounts proc, sysfs and tmpfs: needs root").unwrap_or(());
    }
    let t = TestDir::new();
    let root = t.mkdir("r");
    let mut mounts = Vec::new();
    for (kind, d) in [("proc", "p"), ("sysfs", "s"), ("tmpfs", "t")] {
        let dir = root.join(d);
        fs::create_dir(&dir).unwrap();
        let st = Command::new("mount")
            .args(["-t", kind, kind])
            .arg(&dir)
            .status()
            .unwrap();
        assert!(st.success(), "mount -t {kind}");
        mounts.push(Tmpfs(dir));
    }
    fs::write(root.join("t/file"), b"x").unwrap();
    assert_eq!(
        sdu_text(
            &root,
            &[
                "--du",
                "inodes",
                "-d",
                "1",
                "--sort",
                "name",
                "--exclude-kernfs"
            ]
        ),
        "3\tr\n2\tr/t\n"
    );
    // A PATH given is measured all the same.
    let out = sdu(&args![
        "--du",
        "inodes",
        "-s",
        "--exclude-kernfs",
        root.join("s")
    ]);
    assert!(
        out.stdout_str().ends_with("/r/s\n") && out.stdout_str() != "0\n",
        "{out:?}"
    );
    drop(mounts);
}
