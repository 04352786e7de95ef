//! The files sdu writes (`--export FILE`, `--html FILE`): whole or not at
//! all, never through a symlink another user planted, and special files (a
//! pipe, /dev/null, a FIFO) written directly, unsynced (docs/SECURITY.md,
//! "Never writes, never changes a timestamp").

use std::ffi::OsStr;
use std::fs;
use std::io::Read as _;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use rustix::fs::{CWD, Mode};

use crate::args;
use crate::util::*;

/// The two ways to ask for a file, and how its contents start.
const WRITERS: [(&str, &str, &[u8]); 2] = [
    ("--export", "out.json", b"[1,"),
    ("--html", "page.html", b"<!DOCTYPE html>"),
];

/// A world-writable sticky directory (like /tmp) `t/sticky`, a tree to
/// scan `t/tree`, and root's file `t/root/precious`, in a directory only
/// root may write to.
struct Setup {
    t: TestDir,
    tree: PathBuf,
    sticky: PathBuf,
    precious: PathBuf,
}

fn setup(files: usize) -> Setup {
    let t = TestDir::new();
    chmod(t.path(), 0o755);
    let tree = t.mkdir("tree");
    for i in 0..files {
        fs::write(
            tree.join(format!("a-file-with-a-name-long-enough-to-fill-{i:05}")),
            b"x",
        )
        .unwrap();
    }
    let sticky = t.mkdir("sticky");
    chmod(&sticky, 0o1777);
    let precious = t.mkdir("root").join("precious");
    fs::write(&precious, b"precious").unwrap();
    Setup {
        t,
        tree,
        sticky,
        precious,
    }
}

/// `link`, made by `nobody`, pointing at `target`.
fn plant(link: &Path, target: &Path) {
    run(Command::new("setpriv")
        .args(nobody_args())
        .arg("ln")
        .arg("-s")
        .arg(target)
        .arg(link))
    .assert_ok();
    assert_eq!(fs::symlink_metadata(link).unwrap().uid(), 65534);
}

fn sdu_run(args: &[&OsStr]) -> Output {
    run_with_timeout(Command::new(sdu_bin()).args(args), 120)
}

fn root_or_skip() -> bool {
    is_root() || unavailable::<()>("planting a link as nobody needs root (setpriv)").is_some()
}

/// Asserts that `file` is a regular file of root's, written whole by `flag`.
fn assert_written(file: &Path, start: &[u8]) {
    let m = fs::symlink_metadata(file).unwrap();
    assert!(
        m.file_type().is_file(),
        "{} is not a regular file: {m:?}",
        file.display()
    );
    assert_eq!(m.uid(), 0);
    let body = fs::read(file).unwrap();
    assert!(
        body.starts_with(start),
        "{}: {:?}",
        file.display(),
        &body[..body.len().min(80)]
    );
}

/// `nobody` plants FILE in a sticky directory as a symlink to root's file:
/// root's `sdu --export FILE` / `--html FILE` replaces the link by the
/// file written, and root's file is untouched. A run that fails (an
/// `--import` of a bad file) leaves the link, or a regular file, as it
/// was.
#[test]
fn a_symlink_planted_in_a_sticky_dir_is_replaced_never_followed() {
    if !root_or_skip() {
        return;
    }
    let s = setup(3);
    let bad = s.t.path().join("bad.json");
    fs::write(&bad, b"[1,2,{\"progname\":").unwrap();
    for (flag, name, start) in WRITERS {
        let file = s.sticky.join(name);
        plant(&file, &s.precious);
        let out = sdu_run(&[flag.as_ref(), file.as_ref(), s.tree.as_ref()]);
        assert_eq!(out.code, Some(0), "{out:?}");
        let kept = fs::read_to_string(&s.precious).unwrap();
        assert_eq!(
            kept, "precious",
            "{flag}: root's file written through the link"
        );
        assert_written(&file, start);
        fs::remove_file(&file).unwrap();
    }
    // The run fails: the link stays a link, root's file as it was.
    let file = s.sticky.join("failed.html");
    plant(&file, &s.precious);
    let out = sdu_run(&[
        "--html".as_ref(),
        file.as_ref(),
        "--import".as_ref(),
        bad.as_ref(),
    ]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert_eq!(
        fs::read(&s.precious).unwrap(),
        b"precious",
        "root's file written by a failed run"
    );
    assert!(
        fs::symlink_metadata(&file)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    // So does a regular file: no empty page in its place.
    let page = s.sticky.join("page.html");
    fs::write(&page, b"old page").unwrap();
    let out = sdu_run(&[
        "--html".as_ref(),
        page.as_ref(),
        "--import".as_ref(),
        bad.as_ref(),
    ]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert_eq!(fs::read_to_string(&page).unwrap(), "old page", "{out:?}");
    assert_eq!(sorted_names(&s.sticky), ["failed.html", "page.html"]);
}

/// A dangling symlink planted by `nobody`: no file is created where it
/// points; FILE becomes the regular file written.
#[test]
fn no_file_is_created_through_a_dangling_symlink() {
    if !root_or_skip() {
        return;
    }
    let s = setup(3);
    let dir = s.precious.parent().unwrap();
    for (flag, name, start) in WRITERS {
        let file = s.sticky.join(name);
        let target = dir.join(format!("made-through-a-link-{name}"));
        plant(&file, &target);
        let out = sdu_run(&[flag.as_ref(), file.as_ref(), s.tree.as_ref()]);
        assert_eq!(out.code, Some(0), "{out:?}");
        assert!(
            !target.exists(),
            "{flag}: {} created through a link",
            target.display()
        );
        assert_written(&file, start);
    }
    assert_eq!(sorted_names(dir), ["precious"]);
}

/// A FILE of one's own that is replaced keeps its permission bits; a new
/// one has what creating it would give (0666 less the umask, here 022).
#[test]
fn a_replaced_file_keeps_its_mode() {
    let s = setup(3);
    let own = s.t.path().join("own.json");
    fs::write(&own, b"old").unwrap();
    fs::set_permissions(&own, fs::Permissions::from_mode(0o600)).unwrap();
    let new = s.t.path().join("new.json");
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(r#"umask 022 && "$0" --export "$1" "$2" && "$0" --export "$3" "$2""#)
        .arg(sdu_bin())
        .args([&own, &s.tree, &new]);
    run_with_timeout(&mut c, 120).assert_ok();
    assert_eq!(fs::metadata(&own).unwrap().mode() & 0o7777, 0o600);
    assert_eq!(fs::metadata(&new).unwrap().mode() & 0o7777, 0o644);
    assert_written(&own, b"[1,");
    assert_eq!(
        sorted_names(s.t.path()),
        ["new.json", "own.json", "root", "sticky", "tree"]
    );
}

/// On a full filesystem: `--export FILE`, `--html FILE` and `--html FILE
/// --import SAVED` fail with a clear error (exit 2), and leave FILE as it
/// was (absent, or its old contents) and nothing else behind.
#[test]
fn a_full_disk_leaves_file_as_it_was() {
    if !is_root() && unavailable::<()>("mounting a tmpfs needs root").is_none() {
        return;
    }
    // Every file's node is in the export: 2,000 of them are ~200 kB.
    let s = setup(2000);
    let saved = s.t.path().join("saved.json");
    sdu_ok(&args!["--export", &saved, &s.tree]);
    let full = s.t.mkdir("full");
    run(Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "sdu-test"])
        .arg(&full))
    .assert_ok();
    let _m = Tmpfs(full.clone());
    let old = full.join("old");
    fs::write(&old, b"old contents").unwrap();
    let cases: [(&str, Vec<&OsStr>); 3] = [
        ("--export", vec![s.tree.as_ref()]),
        ("--html", vec![s.tree.as_ref()]),
        ("--html", vec!["--import".as_ref(), saved.as_ref()]),
    ];
    for (flag, rest) in &cases {
        for file in [&old, &full.join("absent")] {
            let mut a: Vec<&OsStr> = vec![flag.as_ref(), file.as_ref()];
            a.extend(rest);
            let out = sdu_run(&a);
            assert_eq!(out.code, Some(2), "{out:?}");
            let want = format!(
                "sdu: {}: write error: No space left on device",
                file.display()
            );
            assert!(out.stderr.contains(&want), "{out:?}");
            assert_eq!(sorted_names(&full), ["old"], "{out:?}");
            let kept = fs::read(&old).unwrap();
            assert!(
                kept == b"old contents",
                "FILE changed by a failed run: now {} bytes, {:?}...: {out:?}",
                kept.len(),
                String::from_utf8_lossy(&kept[..kept.len().min(40)])
            );
        }
    }
}

/// `--export /dev/stdout` into a pipe, and `/dev/null`: everything
/// written, exit 0, nothing on stderr (a pipe or a device is not synced);
/// the same for `--html`, and for a FIFO named as FILE, which stays a FIFO.
#[test]
fn special_files_are_written_directly() {
    let s = setup(3);
    for (flag, _, start) in WRITERS {
        // run_with_timeout gives sdu a pipe for stdout.
        let out = sdu_run(&[flag.as_ref(), "/dev/stdout".as_ref(), s.tree.as_ref()]);
        assert_eq!(
            (out.code, out.stderr.as_str()),
            (Some(0), ""),
            "{flag} /dev/stdout: {out:?}"
        );
        assert!(out.stdout.starts_with(start), "{out:?}");
        let out = sdu_run(&[flag.as_ref(), "/dev/null".as_ref(), s.tree.as_ref()]);
        assert_eq!(
            (out.code, out.stderr.as_str()),
            (Some(0), ""),
            "{flag} /dev/null: {out:?}"
        );
        assert!(
            fs::metadata("/dev/null")
                .unwrap()
                .file_type()
                .is_char_device()
        );
        let fifo = s.t.path().join("fifo");
        rustix::fs::mkfifoat(CWD, &fifo, Mode::from_raw_mode(0o600)).unwrap();
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                let mut v = Vec::new();
                fs::File::open(fifo).unwrap().read_to_end(&mut v).unwrap();
                v
            })
        };
        let out = sdu_run(&[flag.as_ref(), fifo.as_ref(), s.tree.as_ref()]);
        assert_eq!(
            (out.code, out.stderr.as_str()),
            (Some(0), ""),
            "{flag} FIFO: {out:?}"
        );
        assert!(reader.join().unwrap().starts_with(start));
        assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
        fs::remove_file(&fifo).unwrap();
    }
}

/// A run killed while FILE is being made (here: `--html FILE --import
/// FIFO`, waiting for the FIFO's writer) leaves FILE as it was and nothing
/// beside it: the new file has no name until it is complete.
#[test]
fn a_killed_run_leaves_nothing() {
    let s = setup(1);
    let dir = s.t.mkdir("out");
    let page = dir.join("page.html");
    fs::write(&page, b"old page").unwrap();
    let fifo = s.t.path().join("saved.fifo");
    rustix::fs::mkfifoat(CWD, &fifo, Mode::from_raw_mode(0o600)).unwrap();
    let mut child = Command::new(sdu_bin())
        .arg("--html")
        .arg(&page)
        .arg("--import")
        .arg(&fifo)
        .spawn()
        .unwrap();
    // Waiting in the FIFO's open: FILE's new file is made by then.
    let t0 = std::time::Instant::now();
    while !fs::read_to_string(format!("/proc/{}/wchan", child.id()))
        .is_ok_and(|w| w.contains("fifo") || w.contains("partner"))
    {
        assert!(t0.elapsed().as_secs() < 30, "sdu never waited on the FIFO");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(fs::read_to_string(&page).unwrap(), "old page");
    assert_eq!(sorted_names(&dir), ["page.html"]);
}

/// Run by a user who may not replace FILE (`nobody`): a regular file of
/// theirs in a directory they cannot write, or of another user's in a
/// sticky directory, is written in place; another user's symlink there is
/// refused before the scan, not followed.
#[test]
fn as_a_user_who_may_not_replace_file() {
    if !root_or_skip() {
        return;
    }
    let s = setup(1);
    let as_nobody = |flag: &str, file: &Path| {
        run_with_timeout(
            Command::new("setpriv")
                .args(nobody_args())
                .arg(sdu_bin())
                .arg(flag)
                .arg(file)
                .arg(&s.tree),
            120,
        )
    };
    // Root's directory, nobody's file in it.
    let locked = s.t.mkdir("locked");
    let own = locked.join("out.json");
    fs::write(&own, b"old").unwrap();
    run(Command::new("chown").arg("65534:65534").arg(&own)).assert_ok();
    let out = as_nobody("--export", &own);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(fs::read(&own).unwrap().starts_with(b"[1,"), "{out:?}");
    assert_eq!(sorted_names(&locked), ["out.json"]);
    // Root's file, writable by all, in the sticky directory.
    let shared = s.sticky.join("shared.html");
    fs::write(&shared, b"old").unwrap();
    chmod(&shared, 0o666);
    let out = as_nobody("--html", &shared);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(fs::read(&shared).unwrap().starts_with(b"<!DOCTYPE html>"));
    assert_eq!(fs::metadata(&shared).unwrap().uid(), 0);
    // A third user's symlink in the sticky directory: refused.
    let link = s.sticky.join("link.json");
    std::os::unix::fs::symlink(&s.precious, &link).unwrap();
    run(Command::new("chown").args(["-h", "12345:12345"]).arg(&link)).assert_ok();
    let out = as_nobody("--export", &link);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr
            .contains("link.json: cannot create: Operation not permitted"),
        "{out:?}"
    );
    assert_eq!(fs::read_to_string(&s.precious).unwrap(), "precious");
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

/// The names in `dir`, sorted.
fn sorted_names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}
