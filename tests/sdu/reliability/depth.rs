//! Depth: every output of a chain of 40,000 directories, walked or
//! imported, its `--compare` with an older scan of it, and an imported
//! chain of 1,000,000, under an address-space
//! cap (`ulimit -v`) that memory in the square of the depth exceeds many
//! times over and memory in the depth fits with room to spare. The figures
//! are checked against du, which handles deep trees.
//!
//! The runs take `-j2` and `MALLOC_ARENA_MAX=2`, so that the threads' stacks
//! and malloc's arenas do not grow the address space with the machine's
//! CPUs: the cap then measures what the tree costs.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::Command;

use crate::args;
use crate::util::*;

/// Levels of the walked chain: the paths of all its directories are
/// 1.6 GB (`d` is one byte, and `/`).
const LEVELS: usize = 40_000;
/// The cap of a run on it, in KiB: 400 MiB. Measured: each run below
/// needs under 200 MiB of address space with `-j2`, of which 30 MB is
/// resident.
const CAP_KIB: u64 = 400 * 1024;
/// Levels of the imported chain (a 41 MB file).
const IMPORTED_LEVELS: usize = 1_000_000;
/// The cap of a run on it, in KiB: 1 GiB. Reading the scan leaves about
/// 530 MB resident (the records of a million nodes).
const IMPORT_CAP_KIB: u64 = 1024 * 1024;

/// `sdu -j2 ARGS` under `ulimit -v cap_kib`, its stdout kept, or sent to
/// /dev/null (an output in the square of the depth: every path printed).
fn capped(cap_kib: u64, args: &[OsString], keep: bool) -> Output {
    let redirect = if keep { "" } else { " >/dev/null" };
    run_with_timeout(
        Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -v {cap_kib} && exec \"$0\" -j2 \"$@\"{redirect}"
            ))
            .arg(sdu_bin())
            .args(args)
            .env("MALLOC_ARENA_MAX", "2"),
        300,
    )
}

/// What `du FLAGS ROOT` prints.
fn du(flags: &[&str], root: &Path) -> Vec<u8> {
    let out = run(Command::new("du").args(flags).arg(root));
    out.assert_ok();
    out.stdout
}

/// Runs every output on `source` (a walked tree, or `--import FILE`) under
/// [`CAP_KIB`], checking the figures against du's of `root`.
fn every_output(source: &[OsString], root: &Path, dir: &Path) {
    let with = |extra: &[OsString]| {
        let mut a = extra.to_vec();
        a.extend_from_slice(source);
        a
    };
    // Streamed in du order: the walk or the reading, and the printing.
    for extra in [
        args![],
        args!["-a"],
        args!["--du", "total"],
        args!["--tree", "-d", "2"],
    ] {
        let out = capped(CAP_KIB, &with(&extra), false);
        assert!(out.code == Some(0), "{extra:?} under ulimit -v: {out:?}");
    }
    // Collected: the selections and the page.
    let du_s = du(&["-s"], root);
    let s = capped(CAP_KIB, &with(&args!["--du", "total", "-s"]), true);
    s.assert_ok();
    assert!(s.stdout == du_s, "-s: {:?}", s.stdout_str());
    let top = capped(CAP_KIB, &with(&args!["--du", "total", "-n", "1"]), true);
    top.assert_ok();
    assert!(top.stdout == du_s, "-n 1: {:?}", top.stdout_str());
    // 150 MB and more: the top 1,600 levels, 2.6 MB of paths.
    let min = capped(
        CAP_KIB,
        &with(&args!["--du", "total", "--min-size", "150M"]),
        true,
    );
    min.assert_ok();
    let want = du(&["--threshold=150M"], root);
    assert!(
        min.stdout == want,
        "--min-size 150M: {} bytes",
        min.stdout.len()
    );
    for (extra, rows) in [
        (args!["-n", "2"], 2),
        (args!["--sort", "name", "-n", "2"], 2),
        (args!["-a", "-n", "2"], 2),
        (args!["--json", "-n", "2"], 2),
        (args!["--tree", "-n", "3"], 3),
    ] {
        let out = capped(CAP_KIB, &with(&extra), true);
        out.assert_ok();
        let text = out.stdout_str();
        assert!(
            text.lines().filter(|l| l.contains("/d")).count() == rows - 1
                || extra.contains(&OsString::from("--tree")),
            "{extra:?}: {text}"
        );
    }
    let page = dir.join("page.html");
    let out = capped(CAP_KIB, &with(&args!["--html", &page]), true);
    out.assert_ok();
    let html = fs::read_to_string(&page).unwrap();
    let entries = html
        .split("\"entries\":")
        .nth(1)
        .and_then(|t| t.split(',').next());
    // Every directory, and the files (`f` every 500 levels, `bottom`).
    let all = LEVELS + 1 + LEVELS / 500 + 1;
    assert_eq!(entries, Some(&*all.to_string()), "the page's entries");
}

/// Every output of a 40,000-level chain, walked and then imported from
/// its export, stays under 400 MiB of address space (the paths of the
/// rows alone were 1.59 GB), with du's figures.
#[test]
fn every_output_of_a_40000_deep_chain_fits_in_400_mib() {
    let s = Scratch::new();
    let root = s.mkdir("chain");
    deep_tree(&root, LEVELS);
    sync_fs(&root);
    every_output(&args![&root], &root, s.path());
    let saved = s.path().join("chain.json");
    let out = capped(CAP_KIB, &args!["--export", &saved, &root], true);
    out.assert_ok();
    every_output(&args!["--import", &saved], &root, s.path());
}

/// A saved scan of a chain of 1,000,000 directories (ncdu's format,
/// written here) through `--html` and `-n 1` under 1 GiB: the paths of
/// its rows would be a terabyte.
#[test]
fn an_imported_million_deep_chain_fits_in_1_gib() {
    let t = TestDir::new();
    let file = t.path().join("chain.json");
    let mut w = BufWriter::new(File::create(&file).unwrap());
    w.write_all(b"[1,0,{\"progname\":\"test\"},\n[{\"name\":\"/r\",\"dsize\":4096}")
        .unwrap();
    for _ in 0..IMPORTED_LEVELS {
        w.write_all(b",[{\"name\":\"d\",\"dsize\":4096}").unwrap();
    }
    w.write_all(&vec![b']'; IMPORTED_LEVELS]).unwrap();
    w.write_all(b"]]\n").unwrap();
    w.flush().unwrap();
    drop(w);
    // ncdu's format: a note on stderr that nothing is known to be shared.
    let top = capped(
        IMPORT_CAP_KIB,
        &args!["--import", &file, "--du", "total", "-n", "1"],
        true,
    );
    assert!(top.code == Some(0), "{top:?}");
    // 4 KiB a directory, the root included, in du's KiB.
    let want = format!("{}\t/r\n", 4 * (IMPORTED_LEVELS + 1));
    assert_eq!(top.stdout_str(), want);
    let page = t.path().join("page.html");
    let out = capped(
        IMPORT_CAP_KIB,
        &args!["--import", &file, "--html", &page],
        true,
    );
    assert!(out.code == Some(0), "{out:?}");
    let html = fs::read_to_string(&page).unwrap();
    assert!(html.contains(&format!("\"entries\":{}", IMPORTED_LEVELS + 1)));
}

/// The bottom directory of the chain at `root` (`levels` deep), opened
/// down the chain: its path is longer than the kernel takes.
fn chain_bottom(root: &Path, levels: usize) -> rustix::fd::OwnedFd {
    use rustix::fs::{CWD, Mode, OFlags, openat};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut fd = openat(CWD, root, flags, Mode::empty()).unwrap();
    for _ in 0..levels {
        fd = openat(&fd, "d", flags, Mode::empty()).unwrap();
    }
    fd
}

/// `du -s` of `root` in bytes: the Total (`-B1`) or the apparent size
/// (`-b`).
fn du_bytes(flag: &str, root: &Path) -> i64 {
    let out = du(&["-s", flag], root);
    let text = String::from_utf8(out).unwrap();
    text.split('\t').next().unwrap().parse().unwrap()
}

/// `--compare` of a 40,000-level chain's export with a rescan of it,
/// `added` (100,000 bytes) written at the bottom and `bottom` removed, under
/// 400 MiB of address space: every row of the table (the paths of both
/// scans alone are 3.2 GB), its JSON and its page, with the changed entries' figures
/// checked against what the test wrote and du's.
#[test]
fn compare_of_a_40000_deep_chain_fits_in_400_mib() {
    let s = Scratch::new();
    let root = s.mkdir("chain");
    deep_tree(&root, LEVELS);
    sync_fs(&root);
    let old = s.path().join("old.json");
    capped(CAP_KIB, &args!["--export", &old, &root], true).assert_ok();
    let (total_before, apparent_before) = (du_bytes("-B1", &root), du_bytes("-b", &root));
    let bottom = chain_bottom(&root, LEVELS);
    rustix::fs::unlinkat(&bottom, "bottom", rustix::fs::AtFlags::empty()).unwrap();
    let added = rustix::fs::openat(
        &bottom,
        "added",
        rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CREATE | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::from_raw_mode(0o644),
    )
    .unwrap();
    File::from(added).write_all(&[7u8; 100_000]).unwrap();
    sync_fs(&root);
    let (total_after, apparent_after) = (du_bytes("-B1", &root), du_bytes("-b", &root));

    // The whole table, every path printed, through grep for the notes.
    let table = run_with_timeout(
        Command::new("bash")
            .arg("-c")
            .arg(format!(
                "set -o pipefail; ulimit -v {CAP_KIB} && \"$0\" -j2 -a -b \"$@\" | grep -a -E '  (new|gone)  '"
            ))
            .arg(sdu_bin())
            .args(args!["--compare", &old, &root])
            .env("MALLOC_ARENA_MAX", "2"),
        300,
    );
    assert!(
        table.code == Some(0),
        "the table under ulimit -v: {table:?}"
    );
    let chain = format!("{}{}", root.display(), "/d".repeat(LEVELS));
    let lines: Vec<String> = table
        .stdout_str()
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    // Apparent, Exclusive, Shared, Reclaimable, the note, the path.
    let want = |sign: char, bytes: i64, note: &str, name: &str| {
        (sign, bytes, note.to_string(), format!("{chain}/{name}"))
    };
    let got: Vec<(char, i64, String, String)> = lines
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let apparent = f[0];
            (
                apparent.chars().next().unwrap(),
                apparent[1..].parse().unwrap(),
                f[f.len() - 2].to_string(),
                f[f.len() - 1].to_string(),
            )
        })
        .collect();
    assert!(
        got == [
            want('+', 100_000, "new", "added"),
            want('-', 4_000, "gone", "bottom")
        ],
        "the new and gone rows: {} lines, first {:?}",
        got.len(),
        lines.first().map(|l| &l[..l.len().min(200)])
    );

    // JSON: the largest growth (the file added), then the root's (each
    // directory grew alike; ties by path).
    let json = capped(
        CAP_KIB,
        &args!["--json", "-a", "-n", "2", "--compare", &old, &root],
        true,
    );
    json.assert_ok();
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let e = &doc["entries"];
    assert_eq!(e[0]["path"], format!("{chain}/added"));
    assert_eq!(e[0]["status"], "new");
    assert_eq!(e[0]["depth"], LEVELS + 1);
    assert_eq!(e[0]["new"]["apparent"], 100_000);
    assert_eq!(e[1]["path"], root.display().to_string());
    assert_eq!(e[1]["status"], "both");
    assert_eq!(e[1]["change"]["total"], total_after - total_before);
    assert_eq!(e[1]["change"]["apparent"], apparent_after - apparent_before);
    assert_eq!(e[1]["change"]["files"], 0);

    // The page, coloured by growth: the old Total of every entry drawn.
    let page = s.path().join("page.html");
    let out = capped(
        CAP_KIB,
        &args!["--html", &page, "--compare", &old, &root],
        true,
    );
    out.assert_ok();
    let html = fs::read_to_string(&page).unwrap();
    assert!(html.contains("\"old\":true"), "the page's old scan");
}
