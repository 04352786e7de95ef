//! The reports: `--sort`, `--top`, `--min-size`, `--tree`, `--du`, the
//! generated man page and completions, and the progress line.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;

use crate::args;
use crate::json::Entry;
use crate::tmux::Tmux;
use crate::util::*;

/// A generated tree with distinct and with equal sizes (ties), files at
/// several depths, an empty directory.
///
/// ```text
/// root/  r0 (1,000)
///   big/   b0 (300,000)  b1 (1)  deep/d0 (120,000)  deep/deeper/e (64,000)
///   mid/   m0 (90,000)  m1 (9,000)
///   twin1/ t (40,000)       twin2/ t (40,000)   (the same figures: ties)
///   small/ s (10)   empty/
/// ```
fn generated_tree(root: &Path) {
    for d in ["big/deep/deeper", "mid", "twin1", "twin2", "small", "empty"] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    for (f, n) in [
        ("r0", 1_000),
        ("big/b0", 300_000),
        ("big/b1", 1),
        ("big/deep/d0", 120_000),
        ("big/deep/deeper/e", 64_000),
        ("mid/m0", 90_000),
        ("mid/m1", 9_000),
        ("twin1/t", 40_000),
        ("twin2/t", 40_000),
        ("small/s", 10),
    ] {
        write_file(&root.join(f), n);
    }
    sync_fs(root);
}

type Figure = fn(&Entry) -> u64;

const FIGURES: [(&str, Figure); 5] = [
    ("total", |e| e.total),
    ("exclusive", |e| e.exclusive),
    ("shared", |e| e.shared),
    ("reclaimable", |e| e.reclaimable),
    ("apparent", |e| e.apparent),
];

/// `entries` largest `fig` first, ties by path (the order --sort promises).
fn by_size(mut entries: Vec<Entry>, fig: Figure) -> Vec<Entry> {
    entries.sort_by(|a, b| {
        fig(b)
            .cmp(&fig(a))
            .then_with(|| a.path.as_bytes().cmp(b.path.as_bytes()))
    });
    entries
}

fn path_list(entries: &[Entry]) -> Vec<OsString> {
    entries.iter().map(|e| e.path.clone()).collect()
}

/// `sdu --json ARGS ROOT` and `sdu -B1 --no-header ARGS ROOT` list `want`
/// in that order, with the figures of the unselected run (hidden entries
/// still count in their parents).
fn assert_lists(args: &[&str], root: &Path, want: &[Entry]) {
    let mut a: Vec<OsString> = args.iter().map(OsString::from).collect();
    a.push(root.as_os_str().to_owned());
    let r = sdu_json(&a);
    assert_eq!(
        path_list(&r.entries),
        path_list(want),
        "JSON order of sdu {args:?}"
    );
    assert_eq!(r.entries, want, "JSON figures of sdu {args:?}");
    let mut t = args!["-B1", "--no-header"];
    t.extend(a);
    let table = parse_text(&sdu_ok(&t), false, Some(4), b'\n');
    let got: Vec<(OsString, String)> = table
        .rows
        .iter()
        .map(|row| (row.path.clone(), row.sizes[0].clone()))
        .collect();
    let expected: Vec<(OsString, String)> = want
        .iter()
        .map(|e| (e.path.clone(), e.total.to_string()))
        .collect();
    assert_eq!(got, expected, "text of sdu {t:?}");
}

fn cat<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<&'a str> {
    a.iter().chain(b).copied().collect()
}

#[test]
fn sort_top_and_min_size_in_text_and_json() {
    let t = TestDir::new();
    let root = t.mkdir("gen");
    generated_tree(&root);
    for sel in [&[][..], &["-a"], &["-d", "1"], &["-a", "-d", "2"]] {
        let mut a: Vec<OsString> = sel.iter().map(OsString::from).collect();
        a.push(root.as_os_str().to_owned());
        let all = sdu_json(&a).entries;
        assert!(all.len() >= 3, "{sel:?}: {all:?}");
        let with = |extra: &[&'static str]| cat(sel, extra);
        for (name, fig) in FIGURES {
            let sorted = by_size(all.clone(), fig);
            assert_lists(&with(&["--sort", name]), &root, &sorted);
            assert_lists(&with(&["--sort", name, "-n", "3"]), &root, &sorted[..3]);
            assert_lists(&with(&["--sort", name, "--top", "0"]), &root, &[]);
            // --min-size goes by the --sort figure.
            let cut = fig(&sorted[sorted.len() / 2]);
            let above: Vec<Entry> = sorted.iter().filter(|e| fig(e) >= cut).cloned().collect();
            let arg = format!("--min-size={cut}");
            assert_lists(&cat(&with(&["--sort", name]), &[&arg]), &root, &above);
        }
        // Without --sort: --top sorts by Total, --min-size keeps du order.
        let by_total = by_size(all.clone(), |e| e.total);
        assert_lists(&with(&["--top", "4"]), &root, &by_total[..4]);
        let big: Vec<Entry> = all
            .iter()
            .filter(|e| e.total >= 40 << 10)
            .cloned()
            .collect();
        assert_lists(&with(&["--min-size", "40K"]), &root, &big);
        // --sort name: by path; with --top, the largest by Total.
        let mut by_name = all.clone();
        by_name.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
        assert_lists(&with(&["--sort", "name"]), &root, &by_name);
        let mut top_named = by_total[..5.min(by_total.len())].to_vec();
        top_named.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
        assert_lists(&with(&["--sort", "name", "-n", "5"]), &root, &top_named);
    }
}

/// Ties (twin1 and twin2 have the same figures) go by path, whatever the
/// thread count.
#[test]
fn sort_ties_by_path() {
    let t = TestDir::new();
    let root = t.mkdir("gen");
    generated_tree(&root);
    let (twin1, twin2) = (root.join("twin1"), root.join("twin2"));
    for j in ["1", "4"] {
        let r = sdu_json(&args!["-j", j, "--sort", "total", &root]);
        let pos = |p: &Path| r.entries.iter().position(|e| e.path == p.as_os_str());
        let (a, b) = (pos(&twin1).unwrap(), pos(&twin2).unwrap());
        assert_eq!(
            b,
            a + 1,
            "twins not adjacent in path order: {:?}",
            r.entries
        );
    }
}

/// `-c` prints the grand total whatever the selection, and the kept
/// entries keep their full figures.
#[test]
fn grand_total_survives_selection() {
    let t = TestDir::new();
    let root = t.mkdir("gen");
    generated_tree(&root);
    let full = sdu_json(&args!["-c", &root]);
    let r = sdu_json(&args!["-c", "--top", "1", "--min-size", "1E", &root]);
    assert!(r.entries.is_empty(), "{:?}", r.entries);
    assert_eq!(r.total, full.total);
    let out = sdu_ok(&args!["-c", "-B1", "--no-header", "-n", "1", &root]);
    let rows = parse_text(&out, false, Some(4), b'\n').rows;
    let paths: Vec<&OsStr> = rows.iter().map(|r| r.path.as_os_str()).collect();
    assert_eq!(paths, [root.as_os_str(), OsStr::new("total")]);
}

#[test]
fn bad_selection_flags_are_usage_errors() {
    for a in [
        args!["--min-size", "1.5G", "."],
        args!["--min-size", "x", "."],
        args!["--top", "-1", "."],
        args!["--sort", "size", "."],
        args!["--tree", "--json", "."],
        args!["--tree", "-0", "."],
    ] {
        let out = sdu(&a);
        assert_eq!(out.code, Some(2), "{out:?}");
        assert!(out.stdout.is_empty(), "{out:?}");
    }
    // With --du, a usage error is du's: exit 1.
    for a in [
        args!["--du", "total", "--json", "."],
        args!["--du", "name", "."],
    ] {
        let out = sdu(&a);
        assert_eq!(out.code, Some(1), "{out:?}");
        assert!(out.stdout.is_empty(), "{out:?}");
    }
}

// ---------------------------------------------------------------------------
// Tree view

/// A small tree whose every figure is fixed on a fresh ext4 (4 KiB blocks,
/// 4 KiB directories, nothing shared), built in `base/t`.
fn fixed_tree(base: &Path) {
    let root = base.join("t");
    for d in ["src/core", "src/util", "docs", "empty"] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    for (f, n) in [
        ("README", 3_000),
        ("src/main.c", 20_000),
        ("src/core/engine.c", 100_000),
        ("src/core/engine.h", 4_000),
        ("src/util/str.c", 12_000),
        ("docs/manual.txt", 60_000),
    ] {
        write_file(&root.join(f), n);
    }
    sync_fs(&root);
}

fn sdu_in(dir: &Path, args: &[&str]) -> String {
    let out = run_with_timeout(Command::new(sdu_bin()).current_dir(dir).args(args), 300);
    out.assert_ok();
    String::from_utf8(out.stdout).unwrap()
}

/// Compares with a golden text (written after a newline, so that its
/// first line keeps its leading spaces), showing both in full on a mismatch.
fn assert_golden(got: &str, want: &str, what: &str) {
    let want = want.strip_prefix('\n').unwrap_or(want);
    assert!(
        got == want,
        "{what}: output differs from the golden text\n--- got:\n{got}--- want:\n{want}"
    );
}

#[test]
fn tree_view_golden() {
    let Some(fs) = LoopFs::new(FsKind::Ext4) else {
        return;
    };
    let base = fs.path().join("golden");
    fs::create_dir(&base).unwrap();
    fixed_tree(&base);
    assert_golden(
        &sdu_in(&base, &["--tree", "t"]),
        "
Total  Exclusive  Shared  Reclaimable  Total % of root            Path
 224K       224K       0         224K  ████████████████████ 100%  t
 148K       148K       0         148K  █████████████▎░░░░░░  66%  ├── src
 108K       108K       0         108K  █████████▋░░░░░░░░░░  48%  │   ├── core
  16K        16K       0          16K  █▍░░░░░░░░░░░░░░░░░░   7%  │   └── util
  64K        64K       0          64K  █████▊░░░░░░░░░░░░░░  29%  ├── docs
 4.0K       4.0K       0         4.0K  ▍░░░░░░░░░░░░░░░░░░░   2%  └── empty
",
        "--tree",
    );
    assert_golden(
        &sdu_in(&base, &["--tree", "-a", "--sort", "name", "-B1", "-c", "t"]),
        "
 Total  Exclusive  Shared  Reclaimable  Total % of root            Path
229376     229376       0       229376  ████████████████████ 100%  t
  4096       4096       0         4096  ▍░░░░░░░░░░░░░░░░░░░   2%  ├── README
 65536      65536       0        65536  █████▊░░░░░░░░░░░░░░  29%  ├── docs
 61440      61440       0        61440  █████▍░░░░░░░░░░░░░░  27%  │   └── manual.txt
  4096       4096       0         4096  ▍░░░░░░░░░░░░░░░░░░░   2%  ├── empty
151552     151552       0       151552  █████████████▎░░░░░░  66%  └── src
110592     110592       0       110592  █████████▋░░░░░░░░░░  48%      ├── core
102400     102400       0       102400  ████████▉░░░░░░░░░░░  45%      │   ├── engine.c
  4096       4096       0         4096  ▍░░░░░░░░░░░░░░░░░░░   2%      │   └── engine.h
 20480      20480       0        20480  █▊░░░░░░░░░░░░░░░░░░   9%      ├── main.c
 16384      16384       0        16384  █▍░░░░░░░░░░░░░░░░░░   7%      └── util
 12288      12288       0        12288  █▏░░░░░░░░░░░░░░░░░░   5%          └── str.c
229376     229376       0       229376                             total
",
        "--tree -a --sort name -B1 -c",
    );
    // --top keeps the largest entries, which always include their parents;
    // with --apparent-size the bars go by the apparent size.
    assert_golden(
        &sdu_in(
            &base,
            &[
                "--tree",
                "-a",
                "-n",
                "4",
                "--apparent-size",
                "--no-header",
                "t",
            ],
        ),
        "
    219K       224K       0         224K  ████████████████████ 100%  t
    145K       148K       0         148K  █████████████▎░░░░░░  66%  └── src
    106K       108K       0         108K  █████████▋░░░░░░░░░░  48%      └── core
     98K       100K       0         100K  █████████░░░░░░░░░░░  45%          └── engine.c
",
        "--tree -a -n 4 --apparent-size --no-header",
    );
}

// ---------------------------------------------------------------------------
// --du

/// A tree where du and sdu count alike (no hardlink across directories):
/// files, a hardlink pair in one directory, sparse files, symlinks, an
/// empty directory.
fn du_tree(root: &Path) {
    plain_tree(root);
    write_file(&root.join("a/pair1"), 20_000);
    fs::hard_link(root.join("a/pair1"), root.join("a/pair2")).unwrap();
    write_sparse(&root.join("a/b/hole"), 3 << 20, &[(1 << 20, 8192)]);
    symlink("a/y", root.join("link")).unwrap();
    fs::create_dir(root.join("empty")).unwrap();
    sync_fs(root);
}

/// Lines split on `term`, sorted: du lists siblings in readdir order and
/// sdu by name, so only a chain of single children could be compared in
/// order (which `du_mode_order_on_a_chain` does).
fn sorted_lines(out: &[u8], term: u8) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = out.split(|&b| b == term).map(<[u8]>::to_vec).collect();
    v.sort();
    v
}

#[test]
fn du_mode_matches_gnu_du_byte_for_byte() {
    let t = TestDir::new();
    let root = t.mkdir("du");
    du_tree(&root);
    let other = t.mkdir("other");
    plain_tree(&other);
    let roots = [root.as_os_str(), other.as_os_str()];
    // With -a, du prints a hardlinked inode under one of its names only
    // and sdu under each (cli.rs tests that selection): -a runs on the
    // plain tree alone.
    let a = args!["--du", "total", "-B1", "-a", &other];
    let d = run(Command::new("du")
        .env("LC_ALL", "C")
        .args(["-B1", "-a"])
        .arg(&other));
    assert_eq!(
        sorted_lines(&sdu_ok(&a), b'\n'),
        sorted_lines(&d.stdout, b'\n'),
        "-a"
    );
    for (sdu_flags, du_flags) in [
        (&["--du", "total", "-B1"][..], &["-B1"][..]),
        (&["--du", "total", "-B1", "-s", "-c"], &["-B1", "-s", "-c"]),
        (&["--du", "total", "-B1", "-d", "1"], &["-B1", "-d", "1"]),
        (&["--du", "total", "-B1", "-0"], &["-B1", "-0"]),
        (&["--du", "total"], &[]),
        (&["--du", "total", "-h", "-c"], &["-h", "-c"]),
        (&["--du", "total", "-BM"], &["-BM"]),
        (&["--du", "total", "-b"], &["-b"]),
        (&["--du", "apparent", "-B1"], &["--apparent-size", "-B1"]),
        (
            &["--du", "total", "--apparent-size", "-k"],
            &["--apparent-size", "-k"],
        ),
    ] {
        for roots in [&roots[..1], &roots[..]] {
            let mut a: Vec<OsString> = sdu_flags.iter().map(OsString::from).collect();
            a.extend(roots.iter().map(|r| r.to_os_string()));
            let s = sdu_ok(&a);
            let d = run(Command::new("du")
                .env("LC_ALL", "C")
                .args(du_flags)
                .args(roots));
            d.assert_ok();
            let term = if du_flags.contains(&"-0") { 0 } else { b'\n' };
            assert!(
                sorted_lines(&s, term) == sorted_lines(&d.stdout, term),
                "sdu {sdu_flags:?} and du {du_flags:?} differ on {roots:?}:\n--- sdu:\n{}--- du:\n{}",
                String::from_utf8_lossy(&s),
                String::from_utf8_lossy(&d.stdout)
            );
        }
    }
}

/// On a chain (one entry per directory) du's readdir order cannot differ
/// from sdu's name order: the output is identical as it stands.
#[test]
fn du_mode_order_on_a_chain() {
    let t = TestDir::new();
    let root = t.mkdir("chain");
    fs::create_dir_all(root.join("a/b/c/d")).unwrap();
    write_file(&root.join("a/b/c/d/f"), 12_345);
    sync_fs(&root);
    for flags in [&["-B1"][..], &["-B1", "-a", "-c"], &["-h"]] {
        let mut a = args!["--du", "total"];
        a.extend(flags.iter().map(OsString::from));
        a.push(root.as_os_str().to_owned());
        let d = run(Command::new("du").env("LC_ALL", "C").args(flags).arg(&root));
        d.assert_ok();
        assert_eq!(
            String::from_utf8(sdu_ok(&a)).unwrap(),
            d.stdout_str(),
            "{flags:?}"
        );
    }
}

/// `--du FIGURE` prints that figure, with the selection flags too.
#[test]
fn du_mode_prints_the_chosen_figure() {
    let t = TestDir::new();
    let root = t.mkdir("gen");
    generated_tree(&root);
    let r = sdu_json(&args![&root]);
    for (name, fig) in FIGURES {
        let out = sdu_ok(&args![
            "--du", name, "-B1", "--sort", name, "-n", "3", &root
        ]);
        let want: String = by_size(r.entries.clone(), fig)[..3]
            .iter()
            .map(|e| format!("{}\t{}\n", fig(e), e.path.to_string_lossy()))
            .collect();
        assert_eq!(String::from_utf8(out).unwrap(), want, "--du {name}");
    }
}

// ---------------------------------------------------------------------------
// Generated files

/// The committed man page and completions are what the binary generates
/// now. After changing a flag, regenerate them with:
/// `for k in man bash zsh fish elvish powershell; do ...` (see the message).
#[test]
fn generated_files_match_the_binary() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut stale = Vec::new();
    for (kind, file) in GENERATED {
        let out = sdu_ok(&args!["--generate", kind]);
        let committed = fs::read(dir.join(file)).unwrap_or_default();
        if out != committed {
            stale.push(*file);
        }
    }
    let regen: String = GENERATED
        .iter()
        .map(|(k, f)| format!("target/debug/sdu --generate {k} > {f}\n"))
        .collect();
    assert!(
        stale.is_empty(),
        "{stale:?} differ from what `sdu --generate` prints now; regenerate them \
         (cargo build, then):\n{regen}"
    );
}

const GENERATED: &[(&str, &str)] = &[
    ("man", "man/sdu.1"),
    ("bash", "completions/sdu.bash"),
    ("zsh", "completions/_sdu"),
    ("fish", "completions/sdu.fish"),
    ("elvish", "completions/sdu.elv"),
    ("powershell", "completions/_sdu.ps1"),
];

#[test]
fn help_is_grouped_and_ends_with_examples() {
    let out = sdu_ok(&args!["--help"]);
    let help = String::from_utf8(out).unwrap();
    let mut at = 0;
    for heading in [
        "Which entries to print:",
        "What to count:",
        "Sizes:",
        "Output:",
        "Scan:",
        "Other:",
        "Examples:",
    ] {
        let i = help[at..]
            .find(heading)
            .unwrap_or_else(|| panic!("no {heading:?} after byte {at} in:\n{help}"));
        at += i;
    }
    let examples: Vec<&str> = help[at..]
        .lines()
        .filter(|l| l.starts_with("  sdu "))
        .collect();
    assert_eq!(examples.len(), 3, "{help}");
}

// ---------------------------------------------------------------------------
// Progress

#[test]
fn progress_absent_when_stderr_is_not_a_terminal() {
    let t = TestDir::new();
    let root = t.mkdir("gen");
    generated_tree(&root);
    let out = run_with_timeout(
        Command::new(sdu_bin())
            .env("SDU_PROGRESS_DELAY_MS", "0")
            .arg(&root),
        300,
    );
    out.assert_ok();
}

/// On a real terminal (tmux) the progress line is drawn while scanning and
/// is gone from the screen at the end; the tree view is coloured there,
/// and not under NO_COLOR.
#[test]
fn progress_and_colour_on_a_terminal() {
    let Some(tmux) = Tmux::server("reports") else {
        return;
    };
    let t = TestDir::new();
    let root = t.mkdir("many");
    // Enough entries that the scan outlasts the display thread's start.
    medium_tree(&root, 40, 500);
    let sdu = sdu_bin().display().to_string();
    let r = root.display().to_string();
    let (log, screen) = tmux.record(
        t.path(),
        &format!("SDU_PROGRESS_DELAY_MS=0 '{sdu}' -s --no-header '{r}'"),
    );
    let text = String::from_utf8_lossy(&log);
    assert!(
        text.contains(" entries, "),
        "no progress line was drawn; the terminal received:\n{text:?}"
    );
    assert!(
        !screen.contains(" entries, ") && screen.contains(&r),
        "the progress line is still on the screen (or the report is not):\n{screen}"
    );
    let (log, _) = tmux.record(
        t.path(),
        &format!("SDU_PROGRESS_DELAY_MS=0 '{sdu}' --no-progress -s '{r}'"),
    );
    assert!(
        !String::from_utf8_lossy(&log).contains(" entries, "),
        "--no-progress drew progress"
    );
    let bar = "\x1b[36m█";
    let (log, _) = tmux.record(t.path(), &format!("'{sdu}' --tree -d 0 '{r}'"));
    assert!(
        String::from_utf8_lossy(&log).contains(bar),
        "tree view not coloured on a terminal:\n{:?}",
        String::from_utf8_lossy(&log)
    );
    let (log, _) = tmux.record(
        t.path(),
        &format!("NO_COLOR=1 '{sdu}' --tree --no-progress -d 0 '{r}'"),
    );
    let text = String::from_utf8_lossy(&log);
    assert!(
        !text.contains("\x1b[36m") && text.contains("█"),
        "tree view coloured under NO_COLOR:\n{text:?}"
    );
}
