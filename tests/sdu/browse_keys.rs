//! The browser's keys on a real terminal (tmux): Esc clears a filter
//! applied and never quits; ncdu's keys (`--keys ncdu`, or the config
//! file) do what ncdu's do: `a` apparent sizes, `t` directories first,
//! `g` graph, percentage, both, none; the config file's columns.

use std::fs;
use std::path::Path;

use crate::browse::{assert_terminal_restored, press};
use crate::tmux::Tmux;
use crate::util::*;

/// `root/zbig/data` 300 KiB, `root/asmall/data` 20 KiB, `root/mid.bin`
/// 100 KiB, and `root/sparse`: 50 MiB long, no block allocated.
fn tree(dir: &Path) {
    let root = dir.join("root");
    for d in ["zbig", "asmall"] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    write_file(&root.join("zbig/data"), 300 << 10);
    write_file(&root.join("asmall/data"), 20 << 10);
    write_file(&root.join("mid.bin"), 100 << 10);
    fs::File::create(root.join("sparse"))
        .unwrap()
        .set_len(50 << 20)
        .unwrap();
}

/// Starts `ENV sdu -i ARGS` in `dir` and waits for `want`.
fn start(tmux: &Tmux, dir: &Path, env: &str, args: &str, want: &str) -> String {
    tmux.keys(&[
        &format!(
            "cd '{}' && {env} '{}' -i {args}",
            dir.display(),
            sdu_bin().display()
        ),
        "Enter",
    ]);
    tmux.wait_for(want, |s| s.contains(want))
}

/// The rows: the lines between the column titles and the blank line.
fn rows(screen: &str) -> Vec<&str> {
    screen
        .lines()
        .skip_while(|l| !l.contains("Exclusive  Shared  Reclaimable"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .collect()
}

/// The names of the rows, top to bottom.
fn names(screen: &str) -> Vec<&str> {
    rows(screen)
        .iter()
        .filter_map(|l| l.split_whitespace().last())
        .collect()
}

#[test]
fn esc_clears_the_filter_applied_and_never_quits() {
    let Some(tmux) = Tmux::shell("keys-esc") else {
        return;
    };
    let t = TestDir::new();
    tree(t.path());
    start(&tmux, t.path(), "", "root", "4 entries");
    tmux.keys(&["/", "doc", "Enter"]);
    tmux.wait_for("no match", |s| s.contains("no name matches the filter"));
    let s = press(&tmux, "Escape", "4 entries");
    assert!(!s.contains("filter: doc"), "{s}");
    assert_eq!(names(&s), ["zbig/", "mid.bin", "asmall/", "sparse"], "{s}");
    // Nothing to clear: Esc does nothing, and sdu still takes keys.
    tmux.keys(&["Escape"]);
    press(&tmux, "n", "sort: name, A to Z");
    // In both profiles.
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
    start(&tmux, t.path(), "", "--keys ncdu root", "4 entries");
    tmux.keys(&["Escape"]);
    press(&tmux, "n", "sort: name, A to Z");
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
}

#[test]
fn ncdus_keys_on_a_real_screen() {
    let Some(tmux) = Tmux::shell("keys-ncdu") else {
        return;
    };
    let t = TestDir::new();
    tree(t.path());
    let s = start(&tmux, t.path(), "", "--keys ncdu root", "4 entries");
    assert_eq!(names(&s), ["zbig/", "mid.bin", "asmall/", "sparse"], "{s}");
    // a: apparent sizes, the sparse file's 50M first.
    let s = press(&tmux, "a", "sort: apparent");
    assert!(s.contains("Apparent  Exclusive"), "{s}");
    assert_eq!(names(&s)[0], "sparse", "{s}");
    assert!(rows(&s)[0].trim_start().starts_with("50M "), "{s}");
    let s = press(&tmux, "a", "sort: total");
    assert_eq!(names(&s), ["zbig/", "mid.bin", "asmall/", "sparse"], "{s}");
    // t: directories first, and back.
    let s = press(&tmux, "t", "directories first");
    assert_eq!(names(&s), ["zbig/", "asmall/", "mid.bin", "sparse"], "{s}");
    let s = press(&tmux, "t", "sort: total, largest first");
    assert!(!s.contains("directories first"), "{s}");
    assert_eq!(names(&s), ["zbig/", "mid.bin", "asmall/", "sparse"], "{s}");
    // g: as ncdu, from both to none, the graph, the percentage, both.
    let has = |s: &str| {
        let r = rows(s);
        (
            r.iter().any(|l| l.contains('█')),
            r.iter().any(|l| l.contains('%')),
        )
    };
    assert_eq!(has(&s), (true, true), "{s}");
    for want in [(false, false), (true, false), (false, true), (true, true)] {
        tmux.keys(&["g"]);
        let s = tmux.wait_for("the graph cycled", |s| has(s) == want);
        assert_eq!(names(&s), ["zbig/", "mid.bin", "asmall/", "sparse"], "{s}");
    }
    // f hides files (ncdu has no such key); ? lists ncdu's keys.
    let s = press(&tmux, "f", "files hidden");
    assert_eq!(names(&s), ["zbig/", "asmall/"], "{s}");
    let s = press(&tmux, "?", "sdu -i: keys, ncdu's");
    assert!(s.contains("c  m  g"), "{s}");
    assert!(
        s.contains("directories first") || s.contains("dirs first"),
        "{s}"
    );
    tmux.keys(&["x"]);
    tmux.wait_for("the help closed", |s| !s.contains("sdu -i: keys"));
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
}

/// The config file chooses the keys and the columns; `--keys sdu` on the
/// command line wins over it.
#[test]
fn the_config_file_sets_keys_and_columns() {
    let Some(tmux) = Tmux::shell("keys-config") else {
        return;
    };
    let t = TestDir::new();
    tree(t.path());
    fs::create_dir_all(t.path().join("xdg/sdu")).unwrap();
    fs::write(
        t.path().join("xdg/sdu/config"),
        "# ncdu's keys\n--keys ncdu\n--show-itemcount\n--hide-graph\n--group-directories-first\n",
    )
    .unwrap();
    let env = format!("XDG_CONFIG_HOME='{}/xdg'", t.path().display());
    let s = start(&tmux, t.path(), &env, "root", "4 entries");
    assert!(s.contains("Reclaimable  Items"), "{s}");
    assert!(s.contains("directories first"), "{s}");
    assert_eq!(names(&s), ["zbig/", "asmall/", "mid.bin", "sparse"], "{s}");
    let r = rows(&s);
    assert!(!r.iter().any(|l| l.contains('█')), "{s}");
    assert!(r.iter().all(|l| l.contains('%')), "{s}");
    press(&tmux, "a", "sort: apparent");
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
    let s = start(
        &tmux,
        t.path(),
        &env,
        "--keys sdu --show-graph root",
        "4 entries",
    );
    assert!(rows(&s).iter().any(|l| l.contains('█')), "{s}");
    let s = press(&tmux, "a", "files hidden");
    assert_eq!(names(&s), ["zbig/", "asmall/"], "{s}");
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
}
