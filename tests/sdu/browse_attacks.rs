//! The browser never acts on a name another user can change: each attack
//! on `sdu -i` run as root over a tree owned by `nobody` (through setpriv),
//! driven as a user would (tmux on a private socket). Each test fails if
//! the guard it names is removed (docs/SECURITY.md, "Deletes only what was
//! asked, where it was seen").

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

use crate::browse::{assert_terminal_restored, press, settled, start_for};
use crate::tmux::Tmux;
use crate::util::*;

fn root_or_skip(why: &str) -> bool {
    is_root() || unavailable::<()>(why).is_some()
}

/// Runs `script` (sh) in `dir` as nobody.
fn as_nobody(dir: &Path, script: &str) {
    run(Command::new("setpriv")
        .args(nobody_args())
        .args(["sh", "-c", script])
        .current_dir(dir))
    .assert_ok();
}

/// Root marks nobody's `proj/junk`; nobody then puts root's `rootdata`
/// under that name (`mv junk junk.old && mv rootdata junk`); root presses
/// `r`. The mark does not follow the name: it is dropped, the browser
/// says so, and nothing is marked for `d`. Guard: the identity check of
/// the marks in `App::resume` (src/browse/app/carry.rs).
#[test]
fn a_mark_does_not_follow_its_name_to_another_entry_over_r() {
    if !root_or_skip("the attack needs root running sdu and nobody owning the tree") {
        return;
    }
    let Some(tmux) = Tmux::shell("attack-mark-rename") else {
        return;
    };
    let t = TestDir::new();
    chmod(t.path(), 0o755);
    let proj = t.path().join("home/proj");
    fs::create_dir_all(proj.join("junk")).unwrap();
    fs::write(proj.join("junk/old.log"), b"junk").unwrap();
    run(Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(t.path().join("home")))
    .assert_ok();
    // Root's, inside nobody's directory.
    fs::create_dir(proj.join("rootdata")).unwrap();
    fs::write(proj.join("rootdata/precious"), b"root's").unwrap();
    start_for(&tmux, t.path(), "-B1 home/proj", "↑↓→← move");
    let s = crate::delete::mark(&tmux, &["junk"]);
    assert!(s.contains(" 1 marked "), "{s}");
    as_nobody(&proj, "mv junk junk.old && mv rootdata junk");
    press(&tmux, "r", "junk.old");
    let s = settled(&tmux);
    if s.contains(" 1 marked ") {
        // The mark followed the name: what `d` then does.
        let c = press(&tmux, "d", "Type yes");
        tmux.keys(&["-l", "yes"]);
        tmux.keys(&["Enter"]);
        tmux.wait_for("what the deletion did", |s| {
            s.contains("The filesystem reports: ")
        });
        panic!(
            "the mark followed the name 'junk' to root's directory; the confirmation:\n{c}\n\
             root's data {}",
            if proj.join("junk/precious").exists() {
                "is still there"
            } else {
                "was deleted"
            }
        );
    }
    assert!(
        s.contains("1 mark dropped: 'home/proj/junk' is no longer the entry you marked."),
        "{s}"
    );
    tmux.keys(&["Escape"]);
    let s = tmux.wait_for("the notice closed", |s| !s.contains("mark dropped"));
    assert!(!s.contains(" marked "), "{s}");
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
    assert_eq!(fs::read(proj.join("junk/precious")).unwrap(), b"root's");
    assert!(proj.join("junk.old/old.log").exists());
}

/// Root has the cursor on nobody's `proj/junk` (nothing marked); nobody
/// then puts root's `rootdata` under that name (`mv junk junk.old && mv
/// rootdata junk`); root presses `r`, then `d`. The cursor stays on the
/// name `junk`, but the browser says it is another entry now, and the
/// confirmation says so on the entry's line: it never reads as it did
/// before the new scan. Guard: the identity check of the cursor in
/// `App::resume` (src/browse/app/carry.rs) and the warning of the
/// confirmation (src/browse/view/popups.rs).
#[test]
fn the_cursor_does_not_follow_its_name_to_another_entry_unsaid_over_r() {
    if !root_or_skip("the attack needs root running sdu and nobody owning the tree") {
        return;
    }
    let Some(tmux) = Tmux::shell("attack-cursor-rename") else {
        return;
    };
    let t = TestDir::new();
    chmod(t.path(), 0o755);
    let proj = t.path().join("home/proj");
    fs::create_dir_all(proj.join("junk")).unwrap();
    fs::write(proj.join("junk/old.log"), b"junk").unwrap();
    run(Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(t.path().join("home")))
    .assert_ok();
    // Root's, inside nobody's directory.
    fs::create_dir(proj.join("rootdata")).unwrap();
    fs::write(proj.join("rootdata/precious"), b"root's").unwrap();
    start_for(&tmux, t.path(), "-B1 home/proj", "↑↓→← move");
    press(&tmux, "n", "sort: name");
    // By name, junk is the first row: the cursor is on it.
    tmux.keys(&["Home"]);
    let before = settled(&tmux);
    assert!(!before.contains(" marked "), "{before}");
    let c = press(&tmux, "d", "Type yes");
    assert!(c.contains("│   home/proj/junk/"), "{c}");
    tmux.keys(&["Escape"]);
    tmux.wait_for("the confirmation closed", |s| !s.contains("Type yes"));
    as_nobody(&proj, "mv junk junk.old && mv rootdata junk");
    press(&tmux, "r", "junk.old");
    let s = settled(&tmux);
    let said = "'home/proj/junk' is no longer the entry the cursor was on";
    if !s.contains(said) {
        // Nothing said: what `d` then does.
        let c = press(&tmux, "d", "Type yes");
        let warned = c.contains("not the entry under this name");
        tmux.keys(&["-l", "yes"]);
        tmux.keys(&["Enter"]);
        tmux.wait_for("what the deletion did", |s| {
            s.contains("The filesystem reports: ")
        });
        panic!(
            "the cursor followed the name 'junk' to root's directory unsaid ({}); the \
             confirmation:\n{c}\nroot's data {}",
            if warned {
                "the confirmation warned"
            } else {
                "and the confirmation read as before"
            },
            if proj.join("junk/precious").exists() {
                "is still there"
            } else {
                "was deleted"
            }
        );
    }
    tmux.keys(&["Escape"]);
    tmux.wait_for("the notice closed", |s| !s.contains(said));
    let c = press(&tmux, "d", "Type yes");
    assert!(c.contains("│   home/proj/junk/"), "{c}");
    assert!(
        c.contains("│     ! not the entry under this name before the new scan"),
        "the confirmation reads as before the new scan:\n{c}"
    );
    tmux.keys(&["Escape"]);
    tmux.wait_for("the confirmation closed", |s| !s.contains("Type yes"));
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
    assert_eq!(fs::read(proj.join("junk/precious")).unwrap(), b"root's");
    assert!(proj.join("junk.old/old.log").exists());
}

/// A loop of `renameat2(proj, link, RENAME_EXCHANGE)` in its working
/// directory, run as nobody, that holds still (`proj` the directory again)
/// while `ctl/pause` exists, and says so by `ctl/paused`.
const EXCHANGER: &str = r#"
use strict;
my ($nr) = @ARGV;
my ($n, $from, $to) = (0, "proj", "link");
sub swap { syscall($nr, -100, $from, -100, $to, 2) == 0 or die "renameat2: $!"; $n++; }
while (1) {
    if (-e "../ctl/pause") {
        swap() if $n % 2;
        if (!-e "../ctl/paused") { open(my $f, '>', "../ctl/paused") or die "paused: $!"; close $f; }
        select(undef, undef, undef, 0.002);
        next;
    }
    unlink "../ctl/paused";
    swap();
}
"#;

/// Nobody's `home/proj` is exchanged, in a loop, with `home/link`, a
/// symlink to root's `rootdir`, while root presses `b` in `home/proj`
/// again and again. `$SHELL` is a script that notes the inode and path it
/// started in. The shell never starts anywhere but in `proj`: a refusal
/// ("not the directory scanned") when the name is the symlink at the
/// moment sdu opens it. Guard: the fd-relative opening and the checks of
/// `open_checked`, and the start in the fd's directory
/// (src/browse/shell.rs).
fn the_shell_starts_only_in_the_directory_scanned(kind: FsKind) {
    if !root_or_skip("the attack needs root running sdu and nobody owning the tree") {
        return;
    }
    let nr = match std::env::consts::ARCH {
        "x86_64" => "316",
        "aarch64" => "276",
        a => {
            return unavailable::<()>(&format!("renameat2's number on {a} is not known here"))
                .unwrap_or(());
        }
    };
    let Some(fs) = LoopFs::new(kind) else {
        return;
    };
    let Some(tmux) = Tmux::shell(&format!("attack-shell-swap-{kind:?}")) else {
        return;
    };
    let mnt = fs.path();
    chmod(mnt, 0o755);
    let home = mnt.join("home");
    let ctl = mnt.join("ctl");
    fs::create_dir_all(home.join("proj/sub")).unwrap();
    fs::write(home.join("proj/f"), b"nobody's").unwrap();
    std::os::unix::fs::symlink("../rootdir", home.join("link")).unwrap();
    fs::create_dir(&ctl).unwrap();
    fs::create_dir(mnt.join("rootdir")).unwrap();
    fs::write(mnt.join("rootdir/secret"), b"root's").unwrap();
    for p in [&home, &ctl] {
        run(Command::new("chown").args(["-hR", "65534:65534"]).arg(p)).assert_ok();
    }
    let proj_ino = fs::metadata(home.join("proj")).unwrap().ino();
    let recorder = mnt.join("recorder");
    let log = ctl.join("log");
    fs::write(
        &recorder,
        format!(
            "#!/bin/sh\necho \"$(stat -c %i .) $(pwd -P)\" >> '{log}'\n\
             touch '{c}/pause'\ni=0; while [ ! -e '{c}/paused' ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done\n",
            log = log.display(),
            c = ctl.display()
        ),
    )
    .unwrap();
    chmod(&recorder, 0o755);
    // Held still until the browser shows proj.
    fs::write(ctl.join("pause"), b"").unwrap();
    let mut exchanger = Command::new("setpriv")
        .args(nobody_args())
        .args(["perl", "-e", EXCHANGER, nr])
        .current_dir(&home)
        .spawn()
        .unwrap();
    let _kill = KillOnDrop(exchanger.id());
    tmux.keys(&[
        &format!(
            "clear; cd '{}' && SHELL='{}' '{}' -i -B1 home",
            mnt.display(),
            recorder.display(),
            sdu_bin().display()
        ),
        "Enter",
    ]);
    tmux.wait_for("the browser", |s| s.contains(" Name"));
    press(&tmux, "n", "sort: name");
    tmux.keys(&["End"]);
    let in_proj = |s: &str| s.contains(" sdu  home/proj ") && s.contains(" Name");
    press(&tmux, "Enter", " sdu  home/proj ");
    let lines = || fs::read_to_string(&log).unwrap_or_default();
    let start = std::time::Instant::now();
    let (mut started, mut refused) = (0, 0);
    let mut outside = None;
    while start.elapsed() < std::time::Duration::from_secs(20) && outside.is_none() {
        tmux.wait_for("the browser in proj", |s| {
            in_proj(s) && !s.contains("Scanning") && !s.contains("No shell")
        });
        settled(&tmux);
        let _ = fs::remove_file(ctl.join("pause"));
        while ctl.join("paused").exists() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let before = lines().lines().count();
        tmux.keys(&["b"]);
        let s = tmux.wait_for("a shell or a refusal", |s| {
            lines().lines().count() > before || s.contains("No shell")
        });
        if lines().lines().count() > before {
            started += 1;
            let l = lines().lines().last().unwrap().to_owned();
            let ino: u64 = l.split(' ').next().unwrap().parse().unwrap();
            if ino != proj_ino {
                outside = Some(l);
            }
        } else {
            assert!(s.contains("is not the directory scanned"), "{s}");
            refused += 1;
            tmux.keys(&["Escape"]);
            tmux.wait_for("the notice closed", |s| !s.contains("No shell"));
        }
    }
    fs::write(ctl.join("pause"), b"").unwrap();
    eprintln!("{kind:?}: {started} shells started, {refused} refused");
    if let Some(l) = outside {
        panic!(
            "{kind:?}: a shell started outside the scanned tree (inode and path: {l}) after \
             {started} shells and {refused} refusals"
        );
    }
    assert!(started > 0, "no shell started in 20 s ({refused} refused)");
    tmux.wait_for("the browser in proj", in_proj);
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
    let _ = exchanger.kill();
    let _ = exchanger.wait();
    assert_eq!(fs::read(mnt.join("rootdir/secret")).unwrap(), b"root's");
}

/// Kills the process `0` (one this test started) if the test ends early.
struct KillOnDrop(u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(pid) = rustix::process::Pid::from_raw(self.0 as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
}

#[test]
fn the_shell_starts_only_in_the_directory_scanned_xfs() {
    the_shell_starts_only_in_the_directory_scanned(FsKind::Xfs);
}

#[test]
fn the_shell_starts_only_in_the_directory_scanned_btrfs() {
    the_shell_starts_only_in_the_directory_scanned(FsKind::Btrfs);
}

/// A mount made on `proj` since the scan, of `proj` itself (the same
/// device and inode, in another mount), then `b` in `proj`: no shell
/// starts. Guard: the mount id compared in `open_checked`
/// (src/browse/shell.rs).
#[test]
fn no_shell_in_a_directory_mounted_over_since_the_scan() {
    if !root_or_skip("the test mounts") {
        return;
    }
    let Some(tmux) = Tmux::shell("attack-shell-mount") else {
        return;
    };
    let t = TestDir::new();
    let proj = t.path().join("root/proj");
    fs::create_dir_all(proj.join("sub")).unwrap();
    fs::write(proj.join("f"), b"x").unwrap();
    let started = t.path().join("started");
    let recorder = t.path().join("recorder");
    fs::write(
        &recorder,
        format!("#!/bin/sh\npwd -P > '{}'\n", started.display()),
    )
    .unwrap();
    chmod(&recorder, 0o755);
    tmux.keys(&[
        &format!(
            "clear; cd '{}' && SHELL='{}' '{}' -i -B1 root",
            t.path().display(),
            recorder.display(),
            sdu_bin().display()
        ),
        "Enter",
    ]);
    tmux.wait_for("the browser", |s| s.contains(" Name"));
    press(&tmux, "Enter", " sdu  root/proj ");
    run(Command::new("mount").arg("--bind").arg(&proj).arg(&proj)).assert_ok();
    let _unmount = Unmount(proj.clone());
    tmux.keys(&["b"]);
    let s = tmux.wait_for("a refusal or a shell", |s| {
        s.contains("No shell") || started.exists()
    });
    assert!(
        !started.exists(),
        "a shell started in the directory mounted over, {:?}",
        fs::read_to_string(&started)
    );
    assert!(
        s.contains("No shell: 'root/proj' is not the directory scanned (replaced since)."),
        "{s}"
    );
    tmux.keys(&["Escape"]);
    tmux.wait_for("the notice closed", |s| !s.contains("No shell"));
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
}

/// Unmounts (lazily) on drop.
struct Unmount(std::path::PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}
