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

/// Types `key` and waits until the screen shows `rows` in its rows and
/// `want` (a screen caught while it is drawn may have the one without the
/// other).
fn press_until(tmux: &Tmux, key: &str, want: &str, rows: &[&str]) -> String {
    tmux.keys(&[key]);
    tmux.wait_for(&format!("{want} and the rows {rows:?}"), |s| {
        s.contains(want) && names(s) == rows
    })
}

const BY_TOTAL: [&str; 4] = ["zbig/", "mid.bin", "asmall/", "sparse"];

#[test]
fn esc_clears_the_filter_applied_and_never_quits() {
    let Some(tmux) = Tmux::shell("keys-esc") else {
        return;
    };
    let t = TestDir::new();
    tree(t.path());
    for args in ["root", "--keys ncdu root"] {
        start(&tmux, t.path(), "", args, "4 entries");
        tmux.keys(&["/", "doc", "Enter"]);
        tmux.wait_for("no match", |s| s.contains("not matching the filter"));
        let s = press_until(&tmux, "Escape", "4 entries", &BY_TOTAL);
        assert!(!s.contains("filter: doc"), "{s}");
        // Nothing to clear: Esc does nothing, and sdu still takes keys.
        tmux.keys(&["Escape"]);
        press(&tmux, "n", "sort: name, A to Z");
        tmux.keys(&["q"]);
        assert_terminal_restored(&tmux, 0);
    }
}

#[test]
fn ncdus_keys_on_a_real_screen() {
    let Some(tmux) = Tmux::shell("keys-ncdu") else {
        return;
    };
    let t = TestDir::new();
    tree(t.path());
    start(&tmux, t.path(), "", "--keys ncdu root", "4 entries");
    tmux.wait_for("the rows by Total", |s| names(s) == BY_TOTAL);
    // a: apparent sizes, the sparse file's 50M first.
    let by_apparent = ["sparse", "zbig/", "mid.bin", "asmall/"];
    let s = press_until(&tmux, "a", "sort: apparent", &by_apparent);
    assert!(s.contains("Apparent  Exclusive"), "{s}");
    assert!(rows(&s)[0].trim_start().starts_with("50M "), "{s}");
    press_until(&tmux, "a", "sort: total", &BY_TOTAL);
    // t: directories first, and back.
    let dirs_first = ["zbig/", "asmall/", "mid.bin", "sparse"];
    press_until(&tmux, "t", "directories first", &dirs_first);
    let s = press_until(&tmux, "t", "sort: total, largest first", &BY_TOTAL);
    assert!(!s.contains("directories first"), "{s}");
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
        tmux.wait_for(&format!("the graph cycled to {want:?}"), |s| {
            has(s) == want && names(s) == BY_TOTAL
        });
    }
    // f hides files (ncdu has no such key); ? lists ncdu's keys.
    press_until(&tmux, "f", "files hidden", &["zbig/", "asmall/"]);
    tmux.keys(&["?"]);
    tmux.wait_for("ncdu's help", |s| {
        s.contains("sdu -i: keys, ncdu's") && s.contains("c  m  g") && s.contains("dirs first")
    });
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
    start(&tmux, t.path(), &env, "root", "4 entries");
    let s = tmux.wait_for("the rows, directories first", |s| {
        names(s) == ["zbig/", "asmall/", "mid.bin", "sparse"] && s.contains("Items")
    });
    assert!(s.contains("Reclaimable  Items"), "{s}");
    assert!(s.contains("directories first"), "{s}");
    let r = rows(&s);
    assert!(!r.iter().any(|l| l.contains('█')), "{s}");
    assert!(r.iter().all(|l| l.contains('%')), "{s}");
    press(&tmux, "a", "sort: apparent");
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
    start(
        &tmux,
        t.path(),
        &env,
        "--keys sdu --show-graph root",
        "4 entries",
    );
    tmux.wait_for("the bars", |s| rows(s).iter().any(|l| l.contains('█')));
    press_until(&tmux, "a", "files hidden", &["zbig/", "asmall/"]);
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
}
