//! Deleting never leaves its target: each attack on `sdu -i`'s deletion,
//! driven as a user would (tmux on a private socket), between the scan and
//! the `yes` or during the deletion itself. Each test fails if the guard it
//! names is removed (docs/SECURITY.md, "Deletes only what was asked, where
//! it was seen").

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::browse::{assert_terminal_restored, press, pressed, start};
use crate::tmux::{PROMPT, Tmux, last_line};
use crate::util::*;

/// A victim directory outside the tree, with a file two levels down.
fn victim(t: &TestDir) -> PathBuf {
    let v = t.path().join("victim");
    fs::create_dir_all(v.join("data/deep")).unwrap();
    fs::write(v.join("data/deep/keep"), b"precious").unwrap();
    fs::write(v.join("keep"), b"precious").unwrap();
    v
}

fn assert_intact(v: &Path) {
    assert_eq!(fs::read(v.join("keep")).unwrap(), b"precious");
    assert_eq!(fs::read(v.join("data/deep/keep")).unwrap(), b"precious");
}

/// Sorts by name, marks the rows named `marks` and presses `d`: the
/// confirmation is on the screen.
fn ask(tmux: &Tmux, marks: &[&str]) -> String {
    crate::delete::mark(tmux, marks);
    press(tmux, "d", "Type yes")
}

/// Types `yes` and Enter, and waits for what the deletion did.
fn yes(tmux: &Tmux) -> String {
    tmux.keys(&["-l", "yes"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("what the deletion did", |s| {
        s.contains("The filesystem reports: ")
    })
}

/// Closes the notice, quits with `status`, and returns the screen with
/// what was printed after the browser (the deletion's report).
fn quit(tmux: &Tmux, status: u32) -> String {
    tmux.keys(&["Escape"]);
    tmux.wait_for("the new scan", |s| !s.contains("The filesystem reports"));
    tmux.keys(&["q"]);
    let s = tmux.wait_for("the prompt", |s| last_line(s) == PROMPT);
    assert_terminal_restored(tmux, status);
    tmux.keys(&["cd /", "Enter"]);
    s
}

fn root_or_skip(why: &str) -> bool {
    is_root() || unavailable::<()>(why).is_some()
}

/// `mv proj proj.old && ln -s /victim proj` by the tree's unprivileged
/// owner between the scan and `yes`: the root, opened again by its path,
/// is another directory. Guard: the root's identity check
/// (`Problem::Replaced` at level 0 in src/delete/mod.rs).
#[test]
fn the_root_swapped_for_a_symlink_by_its_owner_is_refused() {
    if !root_or_skip("the attack needs root running sdu and nobody owning the tree") {
        return;
    }
    let Some(tmux) = Tmux::shell("attack-root-swap") else {
        return;
    };
    let t = TestDir::new();
    chmod(t.path(), 0o755);
    let v = victim(&t);
    let home = t.mkdir("home");
    let proj = home.join("proj");
    fs::create_dir_all(proj.join("data")).unwrap();
    fs::write(proj.join("data/f"), b"x").unwrap();
    fs::write(proj.join("other"), b"y").unwrap();
    run(Command::new("chown").args(["-R", "65534:65534"]).arg(&home)).assert_ok();
    start(&tmux, t.path(), "-B1 home/proj");
    ask(&tmux, &["data"]);
    let mut swap = Command::new("setpriv");
    swap.args(nobody_args())
        .args(["sh", "-c", "mv proj proj.old && ln -s ../victim proj"])
        .current_dir(&home);
    run(&mut swap).assert_ok();
    // Nothing was deleted: the browser keeps the scan (no new one of
    // what is now at the root's path).
    let s = yes(&tmux).replace('\n', " ");
    assert!(s.contains("not what sdu scanned"), "{s}");
    assert!(s.contains("the figures shown are still the scan's"), "{s}");
    tmux.keys(&["Escape"]);
    tmux.wait_for("the notice closed", |s| {
        !s.contains("The filesystem reports")
    });
    // `r`: the new scan finds another directory at the root's path; the
    // browser ends, and prints what the deletion did.
    tmux.keys(&["r"]);
    let s = tmux.wait_for("the report after the browser", |s| {
        last_line(s) == PROMPT && s.contains("not browsed again")
    });
    assert!(s.contains("Deleted 0 of 1 entry."), "{s}");
    assert!(s.contains("not what sdu scanned"), "{s}");
    assert_intact(&v);
    assert!(home.join("proj.old/data/f").exists());
    assert_terminal_restored(&tmux, 1);
}

/// `root/sub/d/inner` becomes a bind mount of the victim (the same
/// filesystem: the device does not change) before the scan, or between the
/// scan and `yes`; `sub` is marked. Guards: made before the scan, `d`
/// refuses before asking (src/browse/app/guard.rs: the mount points of
/// /proc/self/mountinfo); made after, the mount points read from it again
/// before a directory is emptied (the refusal says it came before anything
/// was removed, and nothing was).
fn bind_mount_inside(test: &str, flags: &str, before_the_scan: bool) {
    if !root_or_skip("bind mounts need root") {
        return;
    }
    let Some(tmux) = Tmux::shell(test) else {
        return;
    };
    let t = TestDir::new();
    let v = victim(&t);
    let root = t.mkdir("root");
    fs::create_dir_all(root.join("sub/d/inner")).unwrap();
    fs::write(root.join("sub/d/a"), b"x").unwrap();
    let inner = root.join("sub/d/inner");
    let mut bind = before_the_scan.then(|| Bind::new(&v, &inner));
    start(&tmux, &root, &format!("-B1 {flags} ."));
    if before_the_scan {
        crate::delete::mark(&tmux, &["sub"]);
        let s = pressed(&tmux, "d", "can't delete here");
        assert!(!s.contains("Type yes"), "{s}");
        assert!(
            s.contains("'./sub/d/inner' inside it is a mount point"),
            "{s}"
        );
        assert_intact(&v);
        assert!(root.join("sub/d/a").exists(), "removed before the refusal");
        tmux.keys(&["Escape"]);
        tmux.wait_for("the notice closed", |s| !s.contains("can't delete here"));
        tmux.keys(&["q"]);
        assert_terminal_restored(&tmux, 0);
        tmux.keys(&["cd /", "Enter"]);
        drop(bind);
        return;
    }
    ask(&tmux, &["sub"]);
    if bind.is_none() {
        bind = Some(Bind::new(&v, &inner));
    }
    let s = yes(&tmux).replace('\n', " ");
    assert!(s.contains("Deleted 0 of 1 entry."), "{s}");
    assert!(s.contains("is a mount point inside it"), "{s}");
    assert!(s.contains("Found before anything was removed"), "{s}");
    assert!(s.contains("sub/d/inner"), "{s}");
    assert_intact(&v);
    assert!(root.join("sub/d/a").exists(), "removed before the refusal");
    quit(&tmux, 1);
    drop(bind);
}

#[test]
fn a_bind_mount_inside_made_before_the_scan_is_refused() {
    bind_mount_inside("attack-bind-before", "", true);
}

#[test]
fn a_bind_mount_inside_made_before_the_scan_is_refused_with_x() {
    bind_mount_inside("attack-bind-before-x", "-x", true);
}

#[test]
fn a_bind_mount_inside_made_after_the_scan_is_refused() {
    bind_mount_inside("attack-bind-after", "", false);
}

/// The victim (which has a `data/` of its own) is mounted over `a`, the
/// parent of the marked `a/data`, after the scan. Guard: each level of the
/// path is checked by its mount id.
#[test]
fn a_mount_over_an_ancestor_after_the_scan_is_refused() {
    if !root_or_skip("bind mounts need root") {
        return;
    }
    let Some(tmux) = Tmux::shell("attack-ancestor") else {
        return;
    };
    let t = TestDir::new();
    let v = victim(&t);
    let root = t.mkdir("root");
    fs::create_dir_all(root.join("a/data/deep")).unwrap();
    fs::write(root.join("a/data/deep/f"), b"x").unwrap();
    fs::write(root.join("b"), b"x").unwrap();
    start(&tmux, &root, "-B1 .");
    press(&tmux, "n", "sort: name");
    // Into a/, then mark data.
    press(&tmux, "Enter", "/a");
    ask(&tmux, &["data"]);
    let _b = Bind::new(&v, &root.join("a"));
    let s = yes(&tmux).replace('\n', " ");
    assert!(s.contains("Deleted 0 of 1 entry."), "{s}");
    assert!(s.contains("is not what sdu scanned"), "{s}");
    assert!(s.contains("a mount was made or removed there"), "{s}");
    assert_intact(&v);
    quit(&tmux, 1);
}

/// `n` files of 0 bytes in `dir`, spread over subdirectories.
fn many_files(dir: &Path, n: usize) {
    for d in 0..n.div_ceil(5000) {
        let sub = dir.join(format!("d{d}"));
        fs::create_dir_all(&sub).unwrap();
        for i in 0..5000.min(n - d * 5000) {
            fs::File::create(sub.join(format!("f{i}"))).unwrap();
        }
    }
}

/// Keys typed while a large deletion runs (`x` would close its result,
/// then `d yes Enter` delete the entry under the cursor), and keys typed
/// during the scan: all dropped. Guards: keys read and dropped during the
/// deletion, the input flushed when it ends and when a dialog is drawn.
#[test]
fn keys_typed_ahead_are_dropped() {
    let Some(tmux) = Tmux::shell("attack-typeahead") else {
        return;
    };
    let t = TestDir::new();
    let root = t.mkdir("root");
    many_files(&root.join("big"), 100_000);
    fs::write(root.join("other"), b"keep me").unwrap();
    // Typed right after the command, while sdu is still scanning: `d`
    // would open a confirmation for the entry under the cursor and `yes`
    // fill it.
    tmux.keys(&[
        &format!(
            "cd '{}' && '{}' -i -B1 .",
            root.display(),
            sdu_bin().display()
        ),
        "Enter",
    ]);
    tmux.keys(&["-l", "dyes"]);
    let s = tmux.wait_for("the browser", |s| s.contains("Reclaimable"));
    std::thread::sleep(Duration::from_millis(300));
    let s2 = tmux.screen();
    assert!(
        !s2.contains("Type yes"),
        "keys typed in the scan:\n{s}\n{s2}"
    );
    let s = ask(&tmux, &["big"]);
    assert!(
        s.contains("Esc to keep it: _"),
        "keys typed in the scan:\n{s}"
    );
    tmux.keys(&["-l", "yes"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("the deletion", |s| s.contains("Deleting…"));
    tmux.keys(&["x", "d", "y", "e", "s", "Enter"]);
    let s = tmux.wait_for("what the deletion did", |s| {
        s.contains("The filesystem reports: ")
    });
    assert!(s.contains("Deleted 1 of 1 entry."), "{s}");
    std::thread::sleep(Duration::from_millis(500));
    let s = tmux.screen();
    assert!(
        s.contains("The filesystem reports: "),
        "the result was closed:\n{s}"
    );
    assert!(!s.contains("Type yes"), "a second confirmation:\n{s}");
    assert!(root.join("other").exists(), "a second deletion");
    quit(&tmux, 0);
}

/// Ctrl-C while 100,000 files are being deleted: the deletion stops
/// between two entries, the browser shows what was removed, and sdu exits
/// with 130 and the report on standard error.
#[test]
fn ctrl_c_stops_a_deletion_and_exits_130() {
    let Some(tmux) = Tmux::shell("attack-ctrl-c") else {
        return;
    };
    let t = TestDir::new();
    let root = t.mkdir("root");
    many_files(&root.join("big"), 100_000);
    fs::write(root.join("other"), b"keep me").unwrap();
    start(&tmux, &root, "-B1 .");
    ask(&tmux, &["big"]);
    tmux.keys(&["-l", "yes"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("the deletion", |s| s.contains("Deleting…"));
    tmux.keys(&["C-c"]);
    let s = tmux.wait_for("what the deletion did", |s| {
        s.contains("The filesystem reports: ")
    });
    let flat = s.replace('\n', " ");
    assert!(s.contains("Deleted 0 of 1 entry."), "{s}");
    assert!(flat.contains("interrupted (Ctrl-C)"), "{s}");
    let left: usize = fs::read_dir(root.join("big"))
        .unwrap()
        .map(|d| fs::read_dir(d.unwrap().path()).unwrap().count())
        .sum();
    assert!(left > 0 && left < 100_000, "{left} files left");
    let after = quit(&tmux, 130);
    assert!(
        after.contains("sdu: Stopped at the first error: interrupted (Ctrl-C)"),
        "{after}"
    );
}

/// A 10,000-deep tree deleted from the browser under `ulimit -n 64`.
/// Guard: directories closed past the budget and reopened through `..`.
#[test]
fn a_ten_thousand_deep_tree_is_deleted_under_ulimit_n_64() {
    let Some(tmux) = Tmux::shell("attack-deep") else {
        return;
    };
    let t = TestDir::new();
    let root = t.mkdir("root");
    fs::create_dir(root.join("top")).unwrap();
    deep_tree(&root.join("top"), 10_000);
    fs::write(root.join("other"), b"keep me").unwrap();
    tmux.keys(&[
        &format!(
            "cd '{}' && (ulimit -n 64 && exec '{}' -i -B1 .)",
            root.display(),
            sdu_bin().display()
        ),
        "Enter",
    ]);
    tmux.wait_for("the browser", |s| s.contains("Reclaimable"));
    ask(&tmux, &["top"]);
    let s = yes(&tmux);
    assert!(s.contains("Deleted 1 of 1 entry."), "{s}");
    assert!(!root.join("top").exists());
    assert!(root.join("other").exists());
    quit(&tmux, 0);
}

/// SIGABRT (what an allocation failure ends in) while the browser is up:
/// the terminal is back in cooked mode with echo, off the alternate
/// screen, and the status is the signal's. Guard: crates/sdu-sys/src/tty.rs.
#[test]
fn the_terminal_survives_an_abort() {
    let Some(tmux) = Tmux::shell("attack-abort") else {
        return;
    };
    let t = TestDir::new();
    let root = t.mkdir("root");
    fs::write(root.join("f"), b"x").unwrap();
    start(&tmux, &root, "-B1 .");
    let pid = tmux.child_of_shell();
    let pid = rustix::process::Pid::from_raw(pid as i32).expect("a pid");
    rustix::process::kill_process(pid, rustix::process::Signal::ABORT).expect("kill -ABRT");
    assert_terminal_restored(&tmux, 134);
}

/// `nobody` exchanging `a` and `b` in `dir` (`renameat2(RENAME_EXCHANGE)`,
/// through python3's ctypes) as fast as it can, until dropped.
struct Exchanger(std::process::Child);

impl Exchanger {
    fn start(dir: &Path, a: &str, b: &str) -> Exchanger {
        use std::io::Read as _;
        const LOOP: &str = "
import ctypes, os, platform, sys
nr = {'x86_64': 316, 'aarch64': 276}[platform.machine()]
libc = ctypes.CDLL(None, use_errno=True)
a, b = sys.argv[1].encode(), sys.argv[2].encode()
sys.stdout.write('ready\\n'); sys.stdout.flush()
while True:
    libc.syscall(nr, -100, a, -100, b, 2)
";
        // At a higher priority than the rest of the machine's load: it
        // runs whenever it can, as an attacker would see to.
        let mut child = Command::new("nice")
            .args(["-n", "-10", "setpriv"])
            .args(nobody_args())
            .args(["/usr/bin/python3", "-c", LOOP, a, b])
            .current_dir(dir)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 through setpriv");
        let mut ready = [0u8; 6];
        child
            .stdout
            .take()
            .unwrap()
            .read_exact(&mut ready)
            .expect("the exchanger starts");
        assert_eq!(&ready, b"ready\n");
        Exchanger(child)
    }
}

impl Drop for Exchanger {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What a scan records at `root` and each of `names` below it now.
fn idents_now(root: &Path, names: &[&str]) -> Vec<sdu::Ident> {
    use rustix::fs::{AtFlags, CWD, StatxFlags};
    let mut p = root.to_path_buf();
    let mut out = Vec::new();
    for i in 0..=names.len() {
        if i > 0 {
            p.push(names[i - 1]);
        }
        let st = rustix::fs::statx(
            CWD,
            &p,
            AtFlags::SYMLINK_NOFOLLOW,
            StatxFlags::TYPE | StatxFlags::INO | StatxFlags::MNT_ID,
        )
        .unwrap();
        out.push(sdu::Ident {
            dev: rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor),
            ino: st.stx_ino,
            mnt: st.stx_mnt_id,
        });
    }
    out
}

/// The subvolume id of the Btrfs subvolume at `p`.
fn rootid(p: &Path) -> Option<u64> {
    let o = run(Command::new("btrfs")
        .args(["inspect-internal", "rootid"])
        .arg(p));
    (o.code == Some(0)).then(|| o.stdout_str().trim().parse().unwrap())
}

/// Root deletes nobody's subvolume `u/mine` through the library (what the
/// browser's `d` calls) while nobody, owner of `u/`, exchanges it with
/// root's subvolume `u/rootsnap` in a loop. Each run is checked by fd
/// before the destroy; the destroy must reach the subvolume checked and
/// nothing else: root's subvolume and its file survive every run. Runs
/// until 8 deletions of `mine` went through, 25 s at most. Guard: the
/// subvolume moved into a directory of root's own and destroyed there by
/// id (`Run::subvolume` in src/delete/mod.rs).
#[test]
fn a_subvolume_exchanged_with_roots_by_its_owner_never_destroys_roots() {
    if !root_or_skip("the attack needs root deleting and nobody owning the tree") {
        return;
    }
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    chmod(fs.path().parent().unwrap(), 0o755);
    chmod(fs.path(), 0o755);
    let u = fs.path().join("u");
    fs::create_dir(&u).unwrap();
    let subvolume = |name: &str| {
        run(Command::new("btrfs")
            .args(["subvolume", "create"])
            .arg(u.join(name)))
        .assert_ok();
    };
    subvolume("rootsnap");
    fs::write(u.join("rootsnap/precious"), b"root's").unwrap();
    let roots = rootid(&u.join("rootsnap")).unwrap();
    run(Command::new("chown").arg("65534:65534").arg(&u)).assert_ok();
    let t0 = std::time::Instant::now();
    let (mut runs, mut deleted) = (0, 0);
    while deleted < 30 && t0.elapsed() < Duration::from_secs(25) {
        runs += 1;
        // Root's subvolume back at its name, nobody's made again if gone.
        if rootid(&u.join("mine")) == Some(roots) {
            rustix::fs::renameat_with(
                rustix::fs::CWD,
                u.join("mine"),
                rustix::fs::CWD,
                u.join("rootsnap"),
                rustix::fs::RenameFlags::EXCHANGE,
            )
            .unwrap();
        }
        if !u.join("mine").exists() {
            subvolume("mine");
            fs::write(u.join("mine/junk"), b"nobody's").unwrap();
            run(Command::new("chown")
                .args(["-R", "65534:65534"])
                .arg(u.join("mine")))
            .assert_ok();
        }
        assert_eq!(rootid(&u.join("rootsnap")), Some(roots));
        let target = sdu::Target {
            root: fs.path().as_os_str().as_encoded_bytes().to_vec(),
            names: vec![b"u".to_vec(), b"mine".to_vec()],
            dir: true,
            idents: idents_now(fs.path(), &["u", "mine"]),
            inside: Vec::new(),
        };
        let attacker = Exchanger::start(&u, "mine", "rootsnap");
        std::thread::sleep(Duration::from_millis(20));
        let d = sdu::delete(&[target], &std::sync::atomic::AtomicBool::new(false));
        drop(attacker);
        let survives = ["rootsnap", "mine"]
            .iter()
            .any(|n| fs::read(u.join(n).join("precious")).is_ok_and(|b| b == b"root's"));
        assert!(
            survives,
            "root's subvolume destroyed in run {runs} ({deleted} deletions of nobody's before): {d:?}"
        );
        match &d.failed {
            None => {
                assert_eq!((d.targets, d.subvolumes), (1, 1), "run {runs}: {d:?}");
                deleted += 1;
            }
            Some(f) => assert!(f.to_string().contains("is not what sdu scanned"), "{f}"),
        }
    }
    eprintln!("{runs} runs, {deleted} deletions of nobody's subvolume");
    assert!(deleted > 0, "no deletion went through in {runs} runs");
    // Nothing left behind of the directories made to hold it.
    let mut left: Vec<_> = fs::read_dir(&u)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert!(
        left == ["mine", "rootsnap"] || left == ["rootsnap"],
        "{left:?}"
    );
}

/// Where [`a_thirty_thousand_deep_tree_is_deleted_in_linear_memory`]
/// tells its child process the tree to delete.
const DEEP_DELETE_ENV: &str = "SDU_TEST_DEEP_DELETE";

/// Deletes `$SDU_TEST_DEEP_DELETE/top` through the library and prints the
/// peak resident memory (`VmHWM`) of the process: the child process of
/// [`a_thirty_thousand_deep_tree_is_deleted_in_linear_memory`], alone in
/// its process so that the peak is the deletion's. Does nothing when the
/// variable is not set (a run of the whole suite).
#[test]
fn deep_delete_child() {
    let Some(root) = std::env::var_os(DEEP_DELETE_ENV) else {
        return;
    };
    let root = PathBuf::from(root);
    let target = sdu::Target {
        root: root.as_os_str().as_encoded_bytes().to_vec(),
        names: vec![b"top".to_vec()],
        dir: true,
        idents: idents_now(&root, &["top"]),
        inside: Vec::new(),
    };
    let d = sdu::delete(&[target], &std::sync::atomic::AtomicBool::new(false));
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let hwm = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .unwrap()
        .trim();
    println!(
        "\ndeleted {} of 1, {} entries; peak {hwm}",
        d.targets, d.entries
    );
}

/// A chain of 30,000 directories deleted through the library (what the
/// browser's `d` calls): the deletion's peak memory stays under 100 MB
/// (a full path kept per open level would take about 0.9 GB). Guard: the
/// directories being emptied keep their names only, and a path is built
/// when a message needs one (src/delete/empty.rs).
#[test]
fn a_thirty_thousand_deep_tree_is_deleted_in_linear_memory() {
    let scratch = Scratch::new();
    let root = scratch.mkdir("root");
    fs::create_dir(root.join("top")).unwrap();
    deep_tree(&root.join("top"), 30_000);
    let out = run(Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "delete_attacks::deep_delete_child"])
        .args(["--nocapture", "--test-threads=1"])
        .env(DEEP_DELETE_ENV, &root));
    let s = out.stdout_str();
    let line = s
        .lines()
        .find(|l| l.starts_with("deleted "))
        .unwrap_or_else(|| panic!("{out:?}"));
    assert!(line.starts_with("deleted 1 of 1, 30062 entries;"), "{line}");
    assert!(!root.join("top").exists());
    let kb: u64 = line
        .rsplit_once("peak ")
        .and_then(|(_, p)| p.strip_suffix(" kB"))
        .unwrap()
        .parse()
        .unwrap();
    eprintln!("{line}");
    assert!(kb < 100_000, "the deletion peaked at {kb} kB: {line}");
}

/// A bind mount of the victim on `inner`, in a directory deeper than
/// PATH_MAX with 20 files beside it, made before the scan; that directory
/// is deleted through the library. The refusal comes before anything is
/// removed, and names the mount point. Guard: the mount points inside are
/// found by the directory's absolute path however long
/// (`mounts_inside` in src/delete/mod.rs, which climbs `..` past what
/// `/proc/self/fd` can print).
#[test]
fn a_bind_mount_inside_a_target_deeper_than_path_max_is_refused_before_anything_goes() {
    use rustix::fs::{Mode, OFlags};
    if !root_or_skip("bind mounts need root") {
        return;
    }
    let t = TestDir::new();
    let v = victim(&t);
    let root = t.mkdir("root");
    fs::create_dir(root.join("top")).unwrap();
    const LEVELS: usize = 2_100;
    deep_tree(&root.join("top"), LEVELS);
    // Down to the deepest directory, one name at a time, noting what a
    // scan records at each level.
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let ident = |fd: &std::os::fd::OwnedFd| {
        let st = rustix::fs::statx(
            fd,
            c"",
            rustix::fs::AtFlags::EMPTY_PATH,
            rustix::fs::StatxFlags::TYPE
                | rustix::fs::StatxFlags::INO
                | rustix::fs::StatxFlags::MNT_ID,
        )
        .unwrap();
        sdu::Ident {
            dev: rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor),
            ino: st.stx_ino,
            mnt: st.stx_mnt_id,
        }
    };
    let mut fd = rustix::fs::open(&root, flags, Mode::empty()).unwrap();
    let mut idents = vec![ident(&fd)];
    let mut names = vec![b"top".to_vec()];
    names.extend(std::iter::repeat_n(b"d".to_vec(), LEVELS));
    for n in &names {
        fd = rustix::fs::openat(&fd, n.as_slice(), flags, Mode::empty()).unwrap();
        idents.push(ident(&fd));
    }
    for i in 0..20 {
        let f = rustix::fs::openat(
            &fd,
            format!("a{i:02}"),
            OFlags::WRONLY | OFlags::CREATE | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .unwrap();
        drop(f);
    }
    rustix::fs::mkdirat(&fd, "inner", Mode::from_raw_mode(0o755)).unwrap();
    let at = |name: &str| {
        use std::os::fd::AsRawFd;
        // The test's own fd, seen from mount(8) too.
        PathBuf::from(format!(
            "/proc/{}/fd/{}/{name}",
            std::process::id(),
            fd.as_raw_fd()
        ))
    };
    let bind = Bind::new(&v, &at("inner"));
    let target = sdu::Target {
        root: root.as_os_str().as_encoded_bytes().to_vec(),
        names,
        dir: true,
        idents,
        inside: Vec::new(),
    };
    let d = sdu::delete(&[target], &std::sync::atomic::AtomicBool::new(false));
    let why = d
        .failed
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default();
    drop(bind);
    // The message without the runs of `d/` (4,200 bytes each path).
    let why = why.replace(&"d/".repeat(LEVELS), "(d/ × 2,100)");
    assert_eq!((d.targets, d.entries), (0, 0), "{why}");
    assert!(why.contains("is a mount point inside it"), "{why}");
    assert!(why.contains("Found before anything was removed"), "{why}");
    assert!(why.contains("(d/ × 2,100)inner' is a mount point"), "{why}");
    assert_intact(&v);
    for i in 0..20 {
        assert!(at(&format!("a{i:02}")).exists(), "a{i:02} removed");
    }
    assert!(at("bottom").exists());
}

/// Read-only snapshots (what backup tools keep) are deleted like any
/// subvolume, as a target and inside a marked directory: a read-only
/// subvolume cannot be moved to another directory, so it is made writable
/// first, through the fd that was checked. Guard: `Run::subvolume`
/// (src/delete/subvolume.rs).
#[test]
fn read_only_snapshots_are_deleted_too() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let p = |s: &str| fs.path().join(s);
    run(Command::new("btrfs")
        .args(["subvolume", "create"])
        .arg(p("vol")))
    .assert_ok();
    fs::write(p("vol/f"), b"data").unwrap();
    fs::create_dir_all(p("snaps/dir")).unwrap();
    for at in ["snaps/ro1", "snaps/dir/ro2"] {
        run(Command::new("btrfs")
            .args(["subvolume", "snapshot", "-r"])
            .arg(p("vol"))
            .arg(p(at)))
        .assert_ok();
    }
    let target = |name: &str| sdu::Target {
        root: fs.path().as_os_str().as_encoded_bytes().to_vec(),
        names: vec![b"snaps".to_vec(), name.as_bytes().to_vec()],
        dir: true,
        idents: idents_now(fs.path(), &["snaps", name]),
        inside: Vec::new(),
    };
    let d = sdu::delete(
        &[target("ro1"), target("dir")],
        &std::sync::atomic::AtomicBool::new(false),
    );
    let why = d.failed.as_ref().map(ToString::to_string);
    assert_eq!(why, None);
    assert_eq!((d.targets, d.subvolumes), (2, 2));
    assert!(!p("snaps/ro1").exists() && !p("snaps/dir").exists());
    assert_eq!(fs::read(p("vol/f")).unwrap(), b"data");
    let left: Vec<_> = fs::read_dir(p("snaps")).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}
