//! The browser's `d` as a user meets it, on a real terminal (tmux): an
//! answer other than `yes` closes the prompt and deletes nothing; a mount
//! point, a directory holding one and (without CAP_SYS_ADMIN) a Btrfs
//! subvolume are refused at once, without the prompt, and `i` says why; a
//! deletion refused when it runs keeps the scan and the marks; and on XFS
//! the notice names the inode chunks a large deletion frees beyond the
//! prediction, and the speculative preallocation trimmed between the scan
//! and the deletion that it frees short of it, each by the figure the
//! filesystem's statvfs gives.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::browse::{assert_terminal_restored, press, pressed, settled, start, start_for};
use crate::tmux::Tmux;
use crate::util::*;

const K: usize = 1024;

/// The text of the box over the browser: its lines' insides as one line,
/// every run of spaces one space (a long line wraps, the info aligns).
fn boxed(screen: &str) -> String {
    screen
        .lines()
        .filter_map(|l| {
            let a = l.find('│')?;
            let b = l.rfind('│')?;
            (b > a).then(|| l[a + '│'.len_utf8()..b].to_owned())
        })
        .flat_map(|l| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A tmpfs mounted at `at`, unmounted on drop.
struct TmpfsAt(PathBuf);

impl TmpfsAt {
    fn mount(at: &Path) -> TmpfsAt {
        run(Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m", "none"])
            .arg(at))
        .assert_ok();
        TmpfsAt(at.to_path_buf())
    }
}

impl Drop for TmpfsAt {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Moves the cursor to the row named `name` (sorted by name first).
fn to_row(tmux: &Tmux, name: &str) {
    press(tmux, "n", "sort: name");
    tmux.keys(&["Home"]);
    let s = settled(tmux);
    let rows = crate::browse::names(&s);
    let at = rows
        .iter()
        .position(|r| r.trim_end_matches('/') == name)
        .unwrap_or_else(|| panic!("no row {name}:\n{s}"));
    for _ in 0..at {
        tmux.keys(&["Down"]);
    }
    settled(tmux);
}

/// `no` and Enter close the prompt, say that only yes deletes, and delete
/// nothing; so does Enter on nothing typed. Guard: `App::decline`
/// (src/browse/app/guard.rs).
#[test]
fn an_answer_other_than_yes_closes_the_prompt_and_deletes_nothing() {
    let Some(tmux) = Tmux::shell("bdel-no") else {
        return;
    };
    let t = TestDir::new();
    let root = t.path().join("root");
    fs::create_dir_all(root.join("junk")).unwrap();
    write_file(&root.join("junk/f"), 8 * K);
    write_file(&root.join("keep"), 4 * K);
    start(&tmux, &root, "-B1 .");
    to_row(&tmux, "junk");
    press(&tmux, "d", "Type yes");
    tmux.keys(&["-l", "no"]);
    tmux.keys(&["Enter"]);
    let s = tmux.wait_for("the prompt closed", |s| !s.contains("Type yes"));
    assert!(
        boxed(&s).contains("Kept './junk': only yes deletes."),
        "{s}"
    );
    tmux.keys(&["Escape"]);
    tmux.wait_for("the notice closed", |s| !s.contains("only yes deletes"));
    press(&tmux, "d", "Type yes");
    tmux.keys(&["Enter"]);
    let s = tmux.wait_for("the prompt closed", |s| !s.contains("Type yes"));
    assert!(boxed(&s).contains("only yes deletes."), "{s}");
    tmux.keys(&["Escape"]);
    tmux.wait_for("the notice closed", |s| !s.contains("only yes deletes"));
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
    assert!(root.join("junk/f").exists() && root.join("keep").exists());
}

/// A tmpfs mounted on `d/inner`: `d` on `d` and on `d/inner` says at once
/// that it can't delete there and why, with no prompt, and `i` says so
/// too; nothing is deleted and nothing is scanned again. Guard:
/// `App::refuse_before_asking` (src/browse/app/guard.rs).
#[test]
fn a_mount_point_is_refused_before_asking_and_i_says_why() {
    if !is_root() && unavailable::<()>("mounting a tmpfs needs root").is_none() {
        return;
    }
    let Some(tmux) = Tmux::shell("bdel-mount") else {
        return;
    };
    let t = TestDir::new();
    let root = t.path().join("root");
    fs::create_dir_all(root.join("d/inner")).unwrap();
    write_file(&root.join("d/a"), 4 * K);
    let _m = TmpfsAt::mount(&root.join("d/inner"));
    write_file(&root.join("d/inner/kept"), 4 * K);
    start(&tmux, &root, "-B1 .");
    to_row(&tmux, "d");
    let s = pressed(&tmux, "d", "can't delete here");
    assert!(!s.contains("Type yes"), "{s}");
    let b = boxed(&s);
    assert!(b.contains("Not deleting it: nothing was deleted."), "{s}");
    assert!(
        b.contains("'./d': can't delete here: './d/inner' inside it is a mount point"),
        "{s}"
    );
    tmux.keys(&["Escape"]);
    tmux.wait_for("the notice closed", |s| !s.contains("can't delete"));
    let s = pressed(&tmux, "i", "Path");
    assert!(
        boxed(&s).contains("Delete can't delete here: './d/inner' inside it is a mount point"),
        "{s}"
    );
    tmux.keys(&["Escape"]);
    tmux.wait_for("the info closed", |s| !s.contains("Path "));
    // Into d, onto inner: the mount point itself.
    tmux.keys(&["Enter"]);
    tmux.wait_for("d's rows", |s| s.contains("inner/"));
    to_row(&tmux, "inner");
    let s = pressed(&tmux, "d", "can't delete here");
    assert!(!s.contains("Type yes"), "{s}");
    assert!(
        boxed(&s).contains("'./d/inner': can't delete here: a mount point"),
        "{s}"
    );
    tmux.keys(&["Escape"]);
    tmux.wait_for("the notice closed", |s| !s.contains("can't delete"));
    let s = pressed(&tmux, "i", "Path");
    assert!(
        boxed(&s).contains("Delete can't delete here: a mount point"),
        "{s}"
    );
    tmux.keys(&["Escape"]);
    tmux.wait_for("the info closed", |s| !s.contains("Path "));
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
    assert!(root.join("d/a").exists() && root.join("d/inner/kept").exists());
}

/// A mount made inside a marked directory after the prompt opened: `yes`
/// is refused when the deletion runs (the last guard), nothing is
/// deleted, and the browser keeps the scan (a file made since is not
/// shown) and the mark. Guard: `Rounds::run` (src/browse/rounds.rs).
#[test]
fn a_refusal_that_deleted_nothing_keeps_the_scan_and_the_marks() {
    if !is_root() && unavailable::<()>("mounting a tmpfs needs root").is_none() {
        return;
    }
    let Some(tmux) = Tmux::shell("bdel-late") else {
        return;
    };
    let t = TestDir::new();
    let root = t.path().join("root");
    fs::create_dir_all(root.join("d/inner")).unwrap();
    write_file(&root.join("d/a"), 4 * K);
    start(&tmux, &root, "-B1 .");
    let s = crate::delete::mark(&tmux, &["d"]);
    assert!(s.contains(" 1 marked "), "{s}");
    press(&tmux, "d", "Type yes");
    let _m = TmpfsAt::mount(&root.join("d/inner"));
    write_file(&root.join("new-since"), 4 * K);
    tmux.keys(&["-l", "yes"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("what the deletion did", |s| {
        s.contains("The filesystem reports: ")
    });
    let s = settled(&tmux);
    let b = boxed(&s);
    assert!(b.contains("Deleted 0 of 1 entry."), "{s}");
    assert!(b.contains("is a mount point inside it"), "{s}");
    assert!(
        b.contains("Nothing was deleted: the figures shown are still the scan's."),
        "{s}"
    );
    assert!(!b.contains("those of a new scan"), "{s}");
    tmux.keys(&["Escape"]);
    tmux.wait_for("the notice closed", |s| {
        !s.contains("The filesystem reports")
    });
    let s = settled(&tmux);
    assert!(s.contains(" 1 marked "), "the mark is kept:\n{s}");
    assert!(!s.contains("new-since"), "scanned again:\n{s}");
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 1);
    assert!(root.join("d/a").exists());
}

/// As nobody, on Btrfs mounted without `user_subvol_rm_allowed`: `d` on
/// nobody's own subvolume, and on the directory holding it, is refused at
/// once with the reason (CAP_SYS_ADMIN), and `i` says it; nothing is
/// deleted.
#[test]
fn as_nobody_a_subvolume_is_refused_before_asking() {
    if !is_root() && unavailable::<()>("the test runs sdu as nobody").is_none() {
        return;
    }
    let Some(fs) = Mounted::new(FsKind::Btrfs, crate::reclaim::BTRFS_OPTS) else {
        return;
    };
    let Some(tmux) = Tmux::shell("bdel-subvol") else {
        return;
    };
    // nobody reaches the mount, and owns what is in it.
    let mut up = fs.path().parent();
    while let Some(p) = up.filter(|p| *p != Path::new("/")) {
        chmod(p, 0o755);
        up = p.parent();
    }
    let p = |s: &str| fs.path().join(s);
    fs::create_dir(p("home")).unwrap();
    run(Command::new("btrfs")
        .args(["subvolume", "create"])
        .arg(p("home/vol")))
    .assert_ok();
    write_file(&p("home/vol/f"), 64 * K);
    write_file(&p("home/plain"), 4 * K);
    run(Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(p("home")))
    .assert_ok();
    tmux.keys(&[
        &format!(
            "clear; cd '{}' && setpriv {} '{}' -i -B1 .",
            p("home").display(),
            nobody_args().join(" "),
            sdu_bin().display()
        ),
        "Enter",
    ]);
    tmux.wait_for("the browser", |s| s.contains(" Name") && s.contains("vol/"));
    to_row(&tmux, "vol");
    let s = pressed(&tmux, "d", "can't delete here");
    assert!(!s.contains("Type yes"), "{s}");
    assert!(
        boxed(&s).contains(
            "'./vol': can't delete here: a Btrfs subvolume, and deleting one needs CAP_SYS_ADMIN"
        ),
        "{s}"
    );
    tmux.keys(&["Escape"]);
    tmux.wait_for("the notice closed", |s| !s.contains("can't delete"));
    let s = pressed(&tmux, "i", "Path");
    assert!(
        boxed(&s).contains(
            "Delete can't delete here: a Btrfs subvolume, and deleting one needs CAP_SYS_ADMIN"
        ),
        "{s}"
    );
    tmux.keys(&["Escape"]);
    tmux.wait_for("the info closed", |s| !s.contains("Path "));
    // The plain file is asked for as before.
    to_row(&tmux, "plain");
    press(&tmux, "d", "Type yes");
    tmux.keys(&["Escape"]);
    tmux.wait_for("the prompt closed", |s| !s.contains("Type yes"));
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
    assert!(p("home/vol/f").exists() && p("home/plain").exists());
    drop(tmux);
}

/// The number after `label` in `text`.
fn number_after(text: &str, label: &str) -> i128 {
    text.split(label)
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no {label:?} in:\n{text}"))
}

/// On XFS (512-byte inodes: 32 KiB chunks of 64), a directory of 5,000
/// empty files is deleted from the browser: the filesystem frees the
/// inode chunks they emptied besides what sdu predicted (the directory's
/// blocks), and the notice says so, with the figure statvfs gives, which
/// the test reads itself before and after.
#[test]
fn deleting_many_entries_on_xfs_names_the_inode_chunks() {
    let Some(fs) = Mounted::new(FsKind::Xfs, crate::reclaim::XFS_OPTS) else {
        return;
    };
    let Some(tmux) = Tmux::shell("bdel-chunks") else {
        return;
    };
    let many = fs.path().join("many");
    fs::create_dir(&many).unwrap();
    for i in 0..5000 {
        fs::File::create(many.join(format!("f{i:04}"))).unwrap();
    }
    fs::create_dir(fs.path().join("keep")).unwrap();
    fs.remount();
    let before = fs.settled_used();
    start_for(&tmux, fs.path(), "-B1 .", "many/");
    to_row(&tmux, "many");
    press(&tmux, "d", "Type yes");
    tmux.keys(&["-l", "yes"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("what the deletion did", |s| {
        s.contains("The filesystem reports: ")
    });
    let s = settled(&tmux);
    let b = boxed(&s);
    assert!(b.contains("Deleted 1 of 1 entry."), "{s}");
    let predicted = number_after(&b, "sdu predicted: frees ");
    let reported = number_after(&b, "The filesystem reports: ");
    assert!(
        b.contains(": XFS freed inode chunks with the last inodes (32768 a chunk of 64 inodes"),
        "{s}"
    );
    let named = number_after(&b, "(statfs before and after) +");
    assert_eq!(named, reported - predicted, "{s}");
    tmux.keys(&["Escape"]);
    tmux.wait_for("the new scan", |s| !s.contains("The filesystem reports"));
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
    tmux.keys(&["cd /", "Enter"]);
    drop(tmux);
    // The filesystem's own count, after a remount: the same surplus.
    let after = fs.settled_used();
    let freed = i128::from(before) - i128::from(after);
    assert_eq!(
        freed - predicted,
        named,
        "statvfs freed {freed}, predicted {predicted}"
    );
    // 5,000 inodes fill 78 chunks and part of one more; the first may
    // hold others.
    assert!(named >= 70 * 32 * K as i128, "{named}");
}

/// On XFS mounted without `allocsize` (speculative preallocation on), four
/// 8 MiB files each written through two opens keep 4 MiB of blocks past
/// their end, which the scan counts; `xfs_spaceman -c 'prealloc -s'` trims
/// them after the scan, and the directory is then deleted from the
/// browser: it frees less than predicted, and the notice names the
/// preallocation, by the figure statvfs gives (read by the test before and
/// after).
#[test]
fn a_shortfall_after_trimmed_preallocation_on_xfs_is_named() {
    let Some(fs) = Mounted::new(FsKind::Xfs, "rw") else {
        return;
    };
    if run(Command::new("xfs_spaceman").arg("-V")).code != Some(0) {
        unavailable::<()>("xfs_spaceman is not installed");
        return;
    }
    let Some(tmux) = Tmux::shell("bdel-prealloc") else {
        return;
    };
    let logs = fs.path().join("logs");
    fs::create_dir(&logs).unwrap();
    let mut past_end = 0;
    for i in 0..4 {
        let p = logs.join(format!("log{i}"));
        // The first close after writing trims what is past the end; the
        // second leaves it (XFS takes the file for one written again).
        for _ in 0..2 {
            let mut f = fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&p)
                .unwrap();
            for _ in 0..4 {
                std::io::Write::write_all(&mut f, &fresh_bytes(1 << 20)).unwrap();
            }
        }
        let m = fs::metadata(&p).unwrap();
        past_end += (m.blocks() * 512).saturating_sub(m.len());
    }
    assert!(
        past_end >= 4 << 20,
        "no speculative preallocation: {past_end}"
    );
    start_for(&tmux, fs.path(), "-B1 .", "logs/");
    to_row(&tmux, "logs");
    run(Command::new("xfs_spaceman")
        .args(["-c", "prealloc -s"])
        .arg(fs.path()))
    .assert_ok();
    let before = fs.used();
    press(&tmux, "d", "Type yes");
    tmux.keys(&["-l", "yes"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("what the deletion did", |s| {
        s.contains("The filesystem reports: ")
    });
    let s = settled(&tmux);
    let b = boxed(&s);
    let predicted = number_after(&b, "sdu predicted: frees ");
    let reported = number_after(&b, "The filesystem reports: ");
    assert!(
        b.contains(": XFS speculative preallocation: files written within "),
        "{s}"
    );
    let named = number_after(&b, "(statfs before and after) -");
    assert_eq!(named, predicted - reported, "{s}");
    assert!(
        named >= i128::from(past_end) - 64 * K as i128,
        "{named} < {past_end}"
    );
    tmux.keys(&["Escape"]);
    tmux.wait_for("the new scan", |s| !s.contains("The filesystem reports"));
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
    tmux.keys(&["cd /", "Enter"]);
    drop(tmux);
    let after = fs.settled_used();
    let freed = i128::from(before) - i128::from(after);
    assert_eq!(
        predicted - freed,
        named,
        "statvfs freed {freed}, predicted {predicted}"
    );
}

/// As root on Btrfs: a subvolume holding another can't be destroyed (the
/// kernel says ENOTEMPTY whoever asks), so `d` on it says so at once and
/// names the inner one; the inner one alone is asked for as before.
#[test]
fn a_subvolume_holding_another_is_refused_before_asking() {
    let Some(fs) = Mounted::new(FsKind::Btrfs, crate::reclaim::BTRFS_OPTS) else {
        return;
    };
    let Some(tmux) = Tmux::shell("bdel-nested") else {
        return;
    };
    let p = |s: &str| fs.path().join(s);
    for v in ["vol", "vol/inner"] {
        run(Command::new("btrfs")
            .args(["subvolume", "create"])
            .arg(p(v)))
        .assert_ok();
    }
    write_file(&p("vol/f"), 16 * K);
    write_file(&p("vol/inner/g"), 16 * K);
    start(&tmux, fs.path(), "-B1 .");
    to_row(&tmux, "vol");
    let s = pressed(&tmux, "d", "can't delete here");
    assert!(!s.contains("Type yes"), "{s}");
    assert!(
        boxed(&s).contains(
            "'./vol': can't delete here: a Btrfs subvolume holding another, './vol/inner' (delete that one first)"
        ),
        "{s}"
    );
    tmux.keys(&["Escape"]);
    tmux.wait_for("the notice closed", |s| !s.contains("can't delete"));
    tmux.keys(&["Enter"]);
    tmux.wait_for("vol's rows", |s| s.contains("inner/"));
    to_row(&tmux, "inner");
    press(&tmux, "d", "Type yes");
    tmux.keys(&["Escape"]);
    tmux.wait_for("the prompt closed", |s| !s.contains("Type yes"));
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
    tmux.keys(&["cd /", "Enter"]);
    assert!(p("vol/f").exists() && p("vol/inner/g").exists());
}
