//! Names that would take over a terminal or forge a path, and a closed
//! pipe: on a terminal the table and the tree view show names as `ls` does
//! (no escape sequence from a name reaches it), piped the table's stay raw
//! and the tree's are quoted still; a
//! closed pipe kills du's mode by SIGPIPE, as it kills du, and ends sdu's
//! own formats quietly.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::process::Command;

use crate::args;
use crate::tmux::Tmux;
use crate::util::*;

/// Names a terminal would obey: a window title (OSC, ended by BEL), a
/// screen clear (CSI), a newline that breaks the tree, a tab, a byte that
/// is not UTF-8, a lone BEL; and names that only need quotes.
const NAMES: &[&[u8]] = &[
    b"esc\x1b]0;pwned\x07",
    b"cls\x1b[2J",
    b"nl\nx",
    b"tab\tx",
    b"ff\xffx",
    b"bel\x07",
    b"a b",
    b"it's",
    "caf\u{e9}".as_bytes(),
    b"plain",
];

/// A directory whose name turns the rest of the line red.
const SUBDIR: &[u8] = b"dir\x1b[31m red";

/// Makes every name of [`NAMES`] as a file in `root`, and [`SUBDIR`]
/// holding them all again.
fn hostile_tree(root: &Path) {
    let sub = root.join(OsStr::from_bytes(SUBDIR));
    fs::create_dir(&sub).unwrap();
    for dir in [root, &sub] {
        for n in NAMES {
            fs::write(dir.join(OsStr::from_bytes(n)), b"data").unwrap();
        }
    }
}

/// The lines a recorded script printed on the terminal (which turns `\n`
/// into `\r\n`), up to its `SDU-DONE`; `what` names it in failures.
fn terminal_lines(log: &[u8], what: &str) -> Vec<String> {
    let text = String::from_utf8(log.to_vec())
        .unwrap_or_else(|_| panic!("{what}: not UTF-8 on the terminal: {log:?}"));
    text.split("\r\n")
        .take_while(|l| *l != "SDU-DONE")
        .map(str::to_owned)
        .collect()
}

/// Fails if `log` holds an ESC byte (which only a name can have put there:
/// the runs are uncoloured, without progress).
fn assert_no_escape(log: &[u8], what: &str) {
    assert!(
        !log.contains(&0x1b),
        "{what}: an ESC reached the terminal: {:?}",
        String::from_utf8_lossy(log)
    );
}

/// The text of each row from the column where the header's `Path` starts
/// (in characters: the tree's bars are multibyte).
fn path_cells(lines: &[String], what: &str) -> Vec<String> {
    let h = lines
        .iter()
        .position(|l| l.ends_with("  Path"))
        .unwrap_or_else(|| panic!("{what}: no header in {lines:#?}"));
    let col = lines[h].chars().count() - "Path".len();
    lines[h + 1..]
        .iter()
        .map(|l| l.chars().skip(col).collect())
        .collect()
}

/// A tree view's name cell split into its depth and name.
fn tree_name(cell: &str) -> (usize, &str) {
    let mut rest = cell;
    let mut depth = 0;
    while let Some(r) = rest
        .strip_prefix("│   ")
        .or_else(|| rest.strip_prefix("    "))
    {
        rest = r;
        depth += 1;
    }
    match rest
        .strip_prefix("├── ")
        .or_else(|| rest.strip_prefix("└── "))
    {
        Some(name) => (depth + 1, name),
        None => (0, rest),
    }
}

fn sorted_strings(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// On a terminal (tmux), in the C locale and in a UTF-8 one: `sdu -a`,
/// `sdu --tree -a` and the `--to-free` table let no ESC from a name
/// through, and show every path or name as `ls` shows it there (`ls -d`
/// for the paths, `ls` in each directory for the tree's names).
#[test]
fn names_on_a_terminal_are_quoted_as_ls_shows_them() {
    let Some(tmux) = Tmux::server("names") else {
        return;
    };
    let t = TestDir::new();
    let h = t.mkdir("h");
    hostile_tree(&h);
    let sdu = sdu_bin().display().to_string();
    for locale in ["C", "C.UTF-8"] {
        // The lines `cmd` printed in `h`, once no ESC is found among them.
        let run = |what: &str, cmd: &str| {
            let script = format!("export LC_ALL={locale}; cd '{}' && {cmd}", h.display());
            let (log, _) = tmux.record(t.path(), &script);
            let what = format!("{what} ({locale})");
            assert_no_escape(&log, &what);
            (terminal_lines(&log, &what), what)
        };
        let (table, what) = run("sdu -a", &format!("'{sdu}' -a --no-progress ."));
        let (ls, _) = run("ls -d", "ls -1 -d -- . ./* ./*/*");
        assert_eq!(
            sorted_strings(path_cells(&table, &what)),
            sorted_strings(ls),
            "{what}: the table's paths are not ls's"
        );

        let (tree, what) = run(
            "sdu --tree -a",
            &format!("'{sdu}' --tree -a --color never --no-progress ."),
        );
        let cells = path_cells(&tree, &what);
        let at = |d: usize| -> Vec<String> {
            let names = cells.iter().map(|c| tree_name(c)).filter(|n| n.0 == d);
            sorted_strings(names.map(|n| n.1.to_owned()).collect())
        };
        assert_eq!(at(0), ["."], "{what}: {cells:#?}");
        let (top, _) = run("ls", "ls -1");
        assert_eq!(at(1), sorted_strings(top), "{what}: the tree's names");
        let (sub, _) = run("ls dir", "cd ./dir* && ls -1");
        assert_eq!(at(2), sorted_strings(sub), "{what}: the tree's names");

        let (plan, what) = run(
            "sdu --to-free",
            &format!("'{sdu}' --to-free 1 --no-progress ./dir*"),
        );
        let (dir, _) = run("ls -d dir", "ls -1 -d ./dir*");
        let mut want = dir;
        want.push("total".into());
        assert_eq!(path_cells(&plan, &what), want, "{what}");
    }
}

/// Into a pipe the tree view still shows every name as ls shows it on a
/// terminal, in the C locale and in a UTF-8 one: one line per entry (a
/// newline in a name never breaks the tree), no ESC.
#[test]
fn the_tree_quotes_names_in_a_pipe_too() {
    let t = TestDir::new();
    let h = t.mkdir("h");
    hostile_tree(&h);
    for locale in ["C", "C.UTF-8"] {
        let in_h = |cmd: &str, args: &[&str]| {
            let o = run(Command::new(cmd)
                .env("LC_ALL", locale)
                .args(args)
                .current_dir(&h));
            assert_eq!(o.code, Some(0), "{o:?}");
            assert!(!o.stdout.contains(&0x1b), "{locale}: an ESC in {o:?}");
            let text = String::from_utf8(o.stdout).unwrap();
            text.lines().map(str::to_owned).collect::<Vec<_>>()
        };
        let what = format!("sdu --tree -a ({locale})");
        let tree = in_h(sdu_bin().to_str().unwrap(), &["--tree", "-a", "."]);
        // The header, the root, the names and the directory's names.
        assert_eq!(tree.len(), 1 + 1 + 2 * NAMES.len() + 1, "{what}: {tree:#?}");
        let cells = path_cells(&tree, &what);
        let at = |d: usize| -> Vec<String> {
            let names = cells.iter().map(|c| tree_name(c)).filter(|n| n.0 == d);
            sorted_strings(names.map(|n| n.1.to_owned()).collect())
        };
        let ls = |args: &[&str]| sorted_strings(in_h("ls", args));
        assert_eq!(at(0), ["."], "{what}: {cells:#?}");
        assert_eq!(at(1), ls(&["-1", "--quoting-style=shell-escape"]), "{what}");
        let dir = OsStr::from_bytes(SUBDIR).to_str().unwrap();
        assert_eq!(
            at(2),
            ls(&["-1", "--quoting-style=shell-escape", dir]),
            "{what}"
        );
    }
}

/// Into a pipe the table and `-0` print every name raw, as du does; on a
/// terminal `--du` prints them raw too, as du does there.
#[test]
fn names_stay_raw_in_a_pipe_and_in_du_lines() {
    let t = TestDir::new();
    let h = t.mkdir("h");
    hostile_tree(&h);
    let table = sdu_ok(&args!["-a", "--no-header", &h]);
    let nul = sdu_ok(&args!["-a", "-0", &h]);
    for n in NAMES {
        let path = h.join(OsStr::from_bytes(n)).into_os_string().into_vec();
        let line = [&path[..], b"\n"].concat();
        let shown = String::from_utf8_lossy(n);
        let has = |out: &[u8], s: &[u8]| out.windows(s.len()).any(|w| w == s);
        assert!(has(&table, &line), "table: {shown:?} is not raw");
        assert!(has(&nul, &[&path[..], b"\0"].concat()), "-0: {shown:?}");
    }
    let Some(tmux) = Tmux::server("du-raw") else {
        return;
    };
    let sdu = sdu_bin().display().to_string();
    let (log, _) = tmux.record(
        t.path(),
        &format!("'{sdu}' --du total -a --no-progress '{}'", h.display()),
    );
    let esc = h
        .join(OsStr::from_bytes(NAMES[0]))
        .into_os_string()
        .into_vec();
    assert!(
        log.windows(esc.len()).any(|w| w == esc),
        "--du on a terminal: the name is not raw: {:?}",
        String::from_utf8_lossy(&log)
    );
}

/// A tree whose `du -a` listing (about 500 KB) is far more than a pipe
/// (64 KiB) and sdu's output buffer (64 KiB) hold, so that the writer is
/// still writing when `head` closes the pipe.
fn long_listing(root: &Path) {
    for i in 0..4000 {
        let name = format!("{i:04}-a-name-long-enough-that-few-lines-fill-a-pipe-buffer-quickly");
        fs::write(root.join(name), b"").unwrap();
    }
}

/// `CMD ARGS | head HEAD` in bash: CMD's exit status (128 + the signal
/// that killed it) and what it said on stderr.
fn into_head(head: &str, cmd: &Path, args: &[&OsStr]) -> Output {
    run_with_timeout(
        Command::new("bash")
            .arg("-c")
            .arg(format!(
                "\"$@\" | head {head} > /dev/null; exit ${{PIPESTATUS[0]}}"
            ))
            .arg("bash")
            .arg(cmd)
            .args(args),
        120,
    )
}

/// `du -a | head -1` is killed by SIGPIPE (141 in the shell), and so are
/// `sdu --du FIGURE` and sdu run under the name du, in the same pipeline.
#[test]
fn du_modes_die_of_sigpipe_as_du_does() {
    let t = TestDir::new();
    let root = t.mkdir("long");
    long_listing(&root);
    let du = t.path().join("du");
    std::os::unix::fs::symlink(sdu_bin(), &du).unwrap();
    let r = root.as_os_str();
    let cases: [(&Path, &[&OsStr]); 4] = [
        (Path::new("du"), &[OsStr::new("-a"), r]),
        (sdu_bin(), &[OsStr::new("--du=total"), OsStr::new("-a"), r]),
        (sdu_bin(), &[OsStr::new("--du=shared"), OsStr::new("-a"), r]),
        (&du, &[OsStr::new("-a"), r]),
    ];
    for (cmd, args) in cases {
        let o = into_head("-1", cmd, args);
        assert_eq!(
            o.code,
            Some(141),
            "{} {args:?} | head -1: {o:?}",
            cmd.display()
        );
        assert!(o.stderr.is_empty(), "{o:?}");
    }
}

/// sdu's own formats end quietly on a closed pipe: exit 0, nothing on
/// stderr (a broken pipe is no error to report).
#[test]
fn own_formats_end_quietly_on_a_closed_pipe() {
    let t = TestDir::new();
    let root = t.mkdir("long");
    long_listing(&root);
    for flags in [
        &["-a"][..],
        &["--tree", "-a"],
        &["--json", "-a"],
        &["--export", "-"],
        &["-a", "-0"],
    ] {
        let mut args: Vec<&OsStr> = flags.iter().map(OsStr::new).collect();
        args.push(root.as_os_str());
        let o = into_head("-c 1", sdu_bin(), &args);
        assert_eq!(o.code, Some(0), "sdu {flags:?} | head -c 1: {o:?}");
        assert!(o.stderr.is_empty(), "sdu {flags:?} | head -c 1: {o:?}");
    }
}

/// `--import` of a saved scan (ncdu's format) with `entries` in `demo/a`
/// on line 4, after a file `x` and a directory `d` holding another `x`.
fn scan_with(entries: &str) -> String {
    format!(
        "[1,2,{{\"progname\":\"test\"}},\n[{{\"name\":\"demo\"}},\n\
         [{{\"name\":\"a\"}},{{\"name\":\"x\"}},[{{\"name\":\"d\"}},{{\"name\":\"x\"}}],\n\
         {entries}]]]\n"
    )
}

/// `sdu --import FILE -a` of `scan`, written to `dir/scan.json`; returns
/// the run and the file's path.
fn import(dir: &Path, scan: &str) -> (Output, String) {
    let file = dir.join("scan.json");
    fs::write(&file, scan).unwrap();
    (
        sdu(&args!["--import", &file, "-a"]),
        file.display().to_string(),
    )
}

/// A name no directory entry can have (`..`, `.`, one with a `/` or a
/// NUL, an empty one, one that its directory lists twice) makes
/// `--import` fail: the message names the line and column of the name,
/// the exit status is 2 and nothing is printed. A root, whose name is the
/// path as given, may be `..` or hold a `/`; the same name in two
/// directories is no duplicate.
#[test]
fn import_rejects_names_no_filesystem_has() {
    let t = TestDir::new();
    for (entry, says) in [
        (
            r#"  {"name": ".."}"#,
            "no file can be named '..' (the name of a directory's link to its parent)",
        ),
        (
            r#"  {"name": "."}"#,
            "no file can be named '.' (the name of a directory's link to itself)",
        ),
        (
            r#"  {"name": "a/b"}"#,
            "no file can be named 'a/b' (a '/' separates names in a path)",
        ),
        (
            r#"  {"name": "a\u0000b"}"#,
            r"no file can be named 'a'$'\0''b' (a NUL byte ends a name)",
        ),
        (
            r#"  {"name": ""}"#,
            "no file can be named '' (an empty name)",
        ),
        (
            r#"  {"name": "x"}"#,
            "two entries named 'x' in one directory",
        ),
        (
            r#"  [{"name":"d"}]"#,
            "two entries named 'd' in one directory",
        ),
    ] {
        let (o, file) = import(t.path(), &scan_with(entry));
        assert_eq!(o.code, Some(2), "{entry}: {o:?}");
        assert!(o.stdout.is_empty(), "{entry}: {o:?}");
        assert_eq!(
            o.stderr,
            format!("sdu: {file}: line 4, column 12: {says}\n"),
            "{entry}"
        );
    }
    // A NUL in a root's name (a path) too.
    let (o, file) = import(
        t.path(),
        "[1,2,{\"progname\":\"test\"},\n[{\"name\":\"de\\u0000mo\"}]]\n",
    );
    assert_eq!(o.code, Some(2), "{o:?}");
    assert_eq!(
        o.stderr,
        format!(
            "sdu: {file}: line 2, column 10: \
             no file can be named 'de'$'\\0''mo' (a NUL byte ends a name)\n"
        )
    );
    // What a filesystem can have imports (with a word that it is ncdu's).
    let (o, _) = import(
        t.path(),
        &scan_with(r#"{"name":"y"},[{"name":"e"},{"name":"d"}]"#),
    );
    assert_eq!(o.code, Some(0), "{o:?}");
    let (o, _) = import(
        t.path(),
        "[1,2,{\"progname\":\"test\"},\n[{\"name\":\"../a/b\"},{\"name\":\"f\"}]]\n",
    );
    assert_eq!(o.code, Some(0), "{o:?}");
    // The rows, without the legend of their marks (nothing is known of
    // what an ncdu scan shares: every Reclaimable is marked).
    let rows: Vec<&str> = o
        .stdout_str()
        .lines()
        .skip(1)
        .filter(|l| !l.starts_with("~ "))
        .collect();
    assert!(
        rows.len() == 2 && rows[0].ends_with("  ../a/b/f") && rows[1].ends_with("  ../a/b"),
        "{o:?}"
    );
}

/// A directory whose name sets the terminal's title (OSC 2, ended by BEL).
const TITLE: &[u8] = b"A\x1b]2;PWNED-TITLE\x07";

/// The title of the pane of [`Tmux::shell`].
fn pane_title(tmux: &Tmux) -> String {
    let o = tmux.cmd(&["display-message", "-p", "-t", "t", "#{pane_title}"]);
    assert_eq!(o.code, Some(0), "{o:?}");
    o.stdout_str().trim_end().to_owned()
}

/// The progress line of `sdu -s` and of `sdu -i` (one display draws both)
/// shows the directory being read as the table shows a path on a
/// terminal: a name that would set the terminal's title is quoted, the
/// pane's title stays as it was and neither an OSC nor a BEL reaches the
/// terminal (the line's own escapes are cursor motions and line clears,
/// CSI). The scan walks many copies of a tree whose every directory but
/// two is below that name, on one thread, so that the line shows it.
#[test]
fn the_progress_line_quotes_names() {
    let t = TestDir::new();
    let root = t.mkdir("root");
    let hostile = root.join(OsStr::from_bytes(TITLE));
    fs::create_dir(&hostile).unwrap();
    for i in 0..200 {
        fs::create_dir(hostile.join(format!("d{i}"))).unwrap();
    }
    for (what, flags) in [("sdu -s", "-s --no-header"), ("sdu -i", "-i")] {
        // A terminal of its own for each, so that each run is judged alone.
        let Some(tmux) = Tmux::shell(&format!("progress-title{}", flags.len())) else {
            return;
        };
        let log = t.path().join(format!("pane{}.log", flags.len()));
        let pipe = format!("cat >> '{}'", log.display());
        let o = tmux.cmd(&["pipe-pane", "-t", "t", &pipe]);
        assert_eq!(o.code, Some(0), "{o:?}");
        let title = pane_title(&tmux);
        let script = t.path().join("scan.sh");
        let mut s = format!(
            "cd '{}' && SDU_PROGRESS_DELAY_MS=0 exec '{}' {flags} -j1",
            t.path().display(),
            sdu_bin().display()
        );
        s.push_str(&" root".repeat(3_000));
        fs::write(&script, s).unwrap();
        tmux.keys(&[&format!("sh '{}'", script.display()), "Enter"]);
        // The name on the screen, or (unquoted) in the title.
        let start = std::time::Instant::now();
        while !tmux.screen().contains("PWNED-TITLE") && !pane_title(&tmux).contains("PWNED") {
            assert!(
                start.elapsed() < std::time::Duration::from_secs(30),
                "{what}: the progress line never showed the name; the screen:\n{}",
                tmux.screen()
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        tmux.keys(&["C-c"]);
        tmux.wait_for("the prompt after Ctrl-C", |s| {
            crate::tmux::last_line(s) == crate::tmux::PROMPT
        });
        assert_eq!(pane_title(&tmux), title, "{what}: the title was set");
        let bytes = fs::read(&log).unwrap_or_default();
        for seq in [&b"\x1b]"[..], b"\x07"] {
            assert!(
                !bytes.windows(seq.len()).any(|w| w == seq),
                "{what}: {seq:?} reached the terminal: {:?}",
                String::from_utf8_lossy(&bytes)
            );
        }
    }
}
