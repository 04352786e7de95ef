//! The browser never acts on a name another user can change: each attack
//! on `sdu -i` run as root over a tree owned by `nobody` (through setpriv),
//! driven as a user would (tmux on a private socket). Each test fails if
//! the guard it names is removed (docs/SECURITY.md, "Deletes only what was
//! asked, where it was seen").

use std::fs;
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
