//! The du-style options: selection (`-s`, `-d`, `-a`), `-x`, `-L`,
//! `--exclude`, `-c`, units, text layout, `-0`, threads, odd names, usage.

use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::Path;
use std::process::Command;

use crate::args;
use crate::json::{self, Kind, Report};
use crate::util::*;

/// `sdu --json FLAGS ROOTS` and `du FLAGS ROOTS` print the same set of paths.
fn assert_same_selection(flags: &[&str], roots: &[&Path]) -> Report {
    let mut a: Vec<OsString> = flags.iter().map(OsString::from).collect();
    a.extend(roots.iter().map(|r| r.as_os_str().to_owned()));
    let r = sdu_json(&a);
    let s = sorted(paths(&r));
    let roots_os: Vec<&OsStr> = roots.iter().map(|r| r.as_os_str()).collect();
    let d = Du::default().paths(flags, &roots_os);
    assert!(
        s == d,
        "`sdu {flags:?}` and `du {flags:?}` select different paths:\n{}",
        set_diff(&s, &d)
    );
    r
}

#[test]
fn summarize_depth_and_all_select_as_du() {
    let t = TestDir::new();
    let root = t.mkdir("plain");
    plain_tree(&root);
    let other = t.mkdir("other");
    plain_tree(&other);
    for flags in [
        &[][..],
        &["-s"],
        &["--summarize"],
        &["-d", "0"],
        &["-d", "1"],
        &["--max-depth=2"],
        &["-d", "9"],
        &["-a"],
        &["--all"],
        &["-a", "-d", "1"],
        &["-a", "-d", "2"],
    ] {
        assert_same_selection(flags, &[&root]);
        assert_same_selection(flags, &[&root, &other]);
    }
    let r = assert_same_selection(&["-s"], &[&root, &other]);
    assert!(r.entries.iter().all(|e| e.depth == 0));
}

/// With `-l` every link is an entry for du too, so the standard tree's
/// selection must match exactly.
#[test]
fn count_links_selects_as_du_on_standard_tree() {
    let t = TestDir::new();
    let root = t.mkdir("tree");
    standard_tree(&root);
    for flags in [
        &["-l"][..],
        &["-l", "-a"],
        &["-l", "-a", "-d", "1"],
        &["-l", "-s"],
    ] {
        assert_same_selection(flags, &[&root]);
    }
    for flags in [&[][..], &["-d", "1"], &["-d", "2"]] {
        assert_same_selection(flags, &[&root]);
    }
}

/// `du -a` prints a hardlinked inode only under the name its readdir
/// order meets first (and, with `-d`, not at all when that name is too
/// deep), so names of multi-link inodes cannot be compared. What can:
/// the same single-link paths, every inode du prints is printed by sdu,
/// and whatever sdu prints beyond that is a name of a multi-link inode.
#[test]
fn all_lists_the_same_inodes_as_du_with_hardlinks() {
    let t = TestDir::new();
    let root = t.mkdir("tree");
    standard_tree(&root);
    for flags in [&["-a"][..], &["-a", "-d", "1"], &["-a", "-d", "2"]] {
        let mut a = args![];
        a.extend(flags.iter().map(OsString::from));
        a.push(root.clone().into());
        let s = sorted(paths(&sdu_json(&a)));
        let d = Du::default().paths(flags, &[root.as_os_str()]);
        let md = |p: &OsString| fs::symlink_metadata(p).unwrap();
        let single = |v: &[OsString]| -> Vec<OsString> {
            v.iter()
                .filter(|p| md(p).is_dir() || md(p).nlink() == 1)
                .cloned()
                .collect()
        };
        let (ss, ds) = (single(&s), single(&d));
        assert!(
            ss == ds,
            "`{flags:?}`: single-link paths differ:\n{}",
            set_diff(&ss, &ds)
        );
        let id = |p: &OsString| (md(p).dev(), md(p).ino());
        let si: BTreeSet<_> = s.iter().map(id).collect();
        let missing: Vec<_> = d.iter().filter(|p| !si.contains(&id(p))).collect();
        assert!(
            missing.is_empty(),
            "`{flags:?}`: du lists inodes that sdu does not: {missing:?}"
        );
    }
}

#[test]
fn one_file_system_stops_at_mount_point() {
    let t = TestDir::new();
    let root = t.mkdir("tree");
    plain_tree(&root);
    let mnt = root.join("a/mnt");
    fs::create_dir(&mnt).unwrap();
    let Some(lfs) = LoopFs::new_at(FsKind::Xfs, &mnt) else {
        return;
    };
    fs::create_dir(mnt.join("inside")).unwrap();
    write_file(&mnt.join("inside/data"), 300_000);
    lfs.settle();
    sync_fs(&root);

    let x = assert_same_selection(&["-x"], &[&root]);
    assert!(
        !x.entries
            .iter()
            .any(|e| e.path.as_bytes().starts_with(mnt.as_os_str().as_bytes())),
        "-x reports the mount point or something under it"
    );
    assert_same_selection(&["-x", "-a"], &[&root]);
    assert_matches_du(&root, &["-x"]);

    let all = assert_same_selection(&[], &[&root]);
    assert!(all.entries.iter().any(|e| e.path == mnt.join("inside")));
    assert_matches_du(&root, &[]);
    assert!(
        all.entries.last().unwrap().total >= x.entries.last().unwrap().total + 300_000,
        "without -x the root does not include the mounted data"
    );
    drop(lfs);
}

#[test]
fn dereference_follows_symlinked_dir_and_default_does_not() {
    let t = TestDir::new();
    let root = t.mkdir("root");
    let outside = t.mkdir("outside");
    fs::create_dir_all(outside.join("sub")).unwrap();
    write_file(&outside.join("o1"), 50_000);
    write_file(&outside.join("sub/o2"), 70_000);
    fs::create_dir(root.join("real")).unwrap();
    write_file(&root.join("real/f"), 1_000);
    symlink("../outside", root.join("link")).unwrap();
    symlink("../outside/o1", root.join("flink")).unwrap();

    let plain = assert_matches_du(&root, &[]);
    let kind_of = |r: &Report, p: &Path| {
        r.entries
            .iter()
            .find(|e| e.path == p.as_os_str())
            .map(|e| e.kind)
    };
    assert_eq!(kind_of(&plain, &root.join("link")), Some(Kind::Symlink));
    assert_eq!(kind_of(&plain, &root.join("flink")), Some(Kind::Symlink));
    assert_eq!(kind_of(&plain, &root.join("link/sub")), None);

    let deref = assert_matches_du(&root, &["-L"]);
    assert_eq!(kind_of(&deref, &root.join("link")), Some(Kind::Dir));
    assert_eq!(kind_of(&deref, &root.join("link/sub")), Some(Kind::Dir));
    assert_eq!(kind_of(&deref, &root.join("link/sub/o2")), Some(Kind::File));
    assert_eq!(kind_of(&deref, &root.join("flink")), Some(Kind::File));
    let (p, d) = (plain.entries.last().unwrap(), deref.entries.last().unwrap());
    assert!(
        d.apparent >= p.apparent + 120_000,
        "-L root {d:?} does not include the linked data (without: {p:?})"
    );
    let mut long = args!["--dereference", "--json", "-a"];
    long.push(root.clone().into());
    assert_eq!(
        json::parse(&sdu_ok(&long)),
        deref,
        "--dereference is not -L"
    );
}

#[test]
fn exclude_matches_du() {
    let t = TestDir::new();
    let root = t.mkdir("tree");
    standard_tree(&root);
    for pat in ["*.log", "b", "with space", "*_1"] {
        let flag = format!("--exclude={pat}");
        assert_same_selection(&[&flag], &[&root]);
        let r = assert_matches_du(&root, &[&flag]);
        assert!(
            r.entries.len() < expected_walk(&root, true).len(),
            "{flag} excluded nothing"
        );
    }
    let r = sdu_json(&args!["-a", "--exclude", "*.log", root]);
    assert!(
        !r.entries
            .iter()
            .any(|e| e.path.as_bytes().ends_with(b".log")),
        "--exclude '*.log' left a .log entry"
    );
}

#[test]
fn grand_total_matches_du_c() {
    let t = TestDir::new();
    let root = t.mkdir("tree");
    standard_tree(&root);
    // a/ and x/ share the inode of x/shared.bin: the grand total counts
    // it once, as du -c does.
    let (a, x) = (root.join("a"), root.join("x"));
    let r = sdu_json(&args!["-c", a, x]);
    let tot = r.total.clone().expect("-c without a total in the JSON");
    let du = Du::default();
    let last = |extra: &[&str]| -> u64 {
        let mut f = vec!["-c", "-s"];
        f.extend_from_slice(extra);
        let (l, _) = du.lines(&f, &[a.as_os_str(), x.as_os_str()]);
        let l = l.last().unwrap();
        assert_eq!(l.path, "total");
        l.size.parse().unwrap()
    };
    assert_eq!(tot.total, last(&["-B1"]), "total.total vs du -c -B1");
    assert_eq!(
        tot.apparent,
        last(&["-B1", "--apparent-size"]),
        "total.apparent"
    );
    assert_eq!(
        tot.files + tot.dirs,
        last(&["--inodes"]),
        "total.files+dirs"
    );
    let fig = |p: &Path| {
        r.entries
            .iter()
            .find(|e| e.path == p.as_os_str())
            .unwrap()
            .total
    };
    assert!(
        tot.total < fig(&a) + fig(&x),
        "the shared inode is counted twice"
    );

    // Text: a last row named `total` with du's figure.
    let out = sdu_ok(&args!["-c", "-s", "-B1", a, x]);
    let tab = parse_text(&out, true, None, b'\n');
    let row = tab.rows.last().unwrap();
    assert_eq!(row.path, "total");
    assert_eq!(row.sizes[tab.main_column()], last(&["-B1"]).to_string());
    assert_eq!(tab.rows.len(), 3);

    // One root: the total is that root.
    let one = sdu_json(&args!["--total", a]);
    let e = one.entries.last().unwrap();
    let t1 = one.total.unwrap();
    assert_eq!(
        (t1.total, t1.apparent, t1.files, t1.dirs),
        (e.total, e.apparent, e.files, e.dirs)
    );
}

/// The unit flags that ask du for something other than its 1K default.
fn du_unit_flags(sdu_flags: &[&'static str]) -> Vec<&'static str> {
    let unit = sdu_flags.iter().any(|f| {
        [
            "-b",
            "-k",
            "-m",
            "-h",
            "--si",
            "--bytes",
            "--human-readable",
        ]
        .contains(f)
            || f.starts_with("-B")
            || f.starts_with("--block-size")
    });
    let mut v = sdu_flags.to_vec();
    if !unit {
        // sdu's default is -h; du's is -k.
        v.push("-h");
    }
    v
}

#[test]
fn text_sizes_match_du_for_each_unit() {
    let t = TestDir::new();
    let root = t.mkdir("tree");
    standard_tree(&root);
    write_file(&root.join("a/b/c/nine_and_a_half_k"), 9_700);
    write_file(&root.join("x/nearly_10m"), 10_000_000);
    sync_fs(&root);
    let mut bad = String::new();
    for flags in [
        &[][..],
        &["-h"],
        &["--human-readable"],
        &["-b"],
        &["--bytes"],
        &["-k"],
        &["-m"],
        &["-B", "4K"],
        &["-BK"],
        &["-B", "1"],
        &["--block-size=1M"],
        &["--block-size=MB"],
        &["--si"],
        &["--apparent-size"],
        &["--apparent-size", "-k"],
        &["--apparent-size", "--si"],
    ] {
        let mut a = args!["-a"];
        a.extend(flags.iter().map(OsString::from));
        a.push(root.clone().into());
        let tab = parse_text(&sdu_ok(&a), true, None, b'\n');
        let col = tab.main_column();
        let du = Du::new(&du_unit_flags(flags));
        for row in &tab.rows {
            let want = du.size(&[], &row.path);
            if row.sizes[col] != want {
                bad += &format!(
                    "  {flags:?} {}: sdu {} du {want}\n",
                    row.path.to_string_lossy(),
                    row.sizes[col]
                );
            }
        }
    }
    assert!(bad.is_empty(), "text sizes differ from du's:\n{bad}");
}

/// JSON sizes are bytes whatever the unit flags say.
#[test]
fn json_ignores_unit_flags() {
    let t = TestDir::new();
    let root = t.mkdir("tree");
    standard_tree(&root);
    let (base, _) = sdu_json_raw(&args!["-a", root]);
    for flags in [
        &["-b"][..],
        &["-k"],
        &["-m"],
        &["-h"],
        &["--si"],
        &["-B", "4K"],
        &["--apparent-size"],
        &["--no-header"],
    ] {
        let mut a = args!["-a"];
        a.extend(flags.iter().map(OsString::from));
        a.push(root.clone().into());
        let (raw, _) = sdu_json_raw(&a);
        assert!(raw == base, "--json {flags:?} differs from --json alone");
    }
}

#[test]
fn text_rows_follow_json_order_and_align() {
    let t = TestDir::new();
    let root = t.mkdir("tree");
    standard_tree(&root);
    let j = sdu_json(&args!["-a", root]);
    let out = sdu_ok(&args!["-a", root]);
    let tab = parse_text(&out, true, None, b'\n');
    let h = tab.header.as_ref().unwrap();
    assert_eq!(h.first().map(String::as_str), Some("Total"), "header {h:?}");
    let text_paths: Vec<OsString> = tab.rows.iter().map(|r| r.path.clone()).collect();
    assert_eq!(text_paths, paths(&j), "text rows are not in JSON order");
    let cols: BTreeSet<usize> = tab.rows.iter().map(|r| r.path_col).collect();
    assert_eq!(cols.len(), 1, "paths start at different columns: {cols:?}");
    let header = out.split(|&b| b == b'\n').next().unwrap();
    let path_at = header.len() - b"Path".len();
    assert!(header.ends_with(b"Path"), "header does not end with Path");
    assert_eq!(
        Some(&path_at),
        cols.first(),
        "the Path heading is not above the paths:\n{}",
        String::from_utf8_lossy(&out[..out.len().min(500)])
    );

    // --no-header drops exactly the header line.
    let nh = sdu_ok(&args!["--no-header", "-a", root]);
    assert_eq!(
        &out[header.len() + 1..],
        &nh[..],
        "--no-header is not the output less its first line"
    );
}

#[test]
fn null_ends_rows_and_drops_header() {
    let t = TestDir::new();
    let root = t.mkdir("tree");
    standard_tree(&root);
    let text = sdu_ok(&args!["-a", root]);
    let ncols = parse_text(&text, true, None, b'\n').header.unwrap().len() - 1;
    for flag in ["-0", "--null"] {
        let out = sdu_ok(&args![flag, "-a", root]);
        assert!(!out.contains(&b'\n'), "{flag} output contains a newline");
        let tab = parse_text(&out, false, Some(ncols), 0);
        let want: Vec<u8> = text
            .split(|&b| b == b'\n')
            .skip(1)
            .filter(|l| !l.is_empty())
            .flat_map(|l| l.iter().copied().chain([0]))
            .collect();
        assert_eq!(out, want, "{flag}: rows differ from the text rows");
        assert_eq!(tab.rows.len(), sdu_json(&args!["-a", root]).entries.len());
    }
}

#[test]
fn json_identical_across_thread_counts() {
    let t = TestDir::new();
    let s = t.mkdir("std");
    standard_tree(&s);
    let m = t.mkdir("medium");
    medium_tree(&m, 50, 40);
    link_across(&m, 50, 10);
    for root in [&s, &m] {
        let base = sdu_ok(&args!["--json", "-a", "-j1", root]);
        for j in ["-j2", "-j8", "--threads=3"] {
            let o = sdu_ok(&args!["--json", "-a", j, root]);
            assert!(o == base, "{}: {j} JSON differs from -j1", root.display());
        }
        // Inodes shared between directories walked in parallel: every
        // directory still as du -s gives it.
        Du::default().assert_figures(&json::parse(&base), |e| e.kind == Kind::Dir);
        let t1 = sdu_ok(&args!["-a", "-j1", root]);
        let t8 = sdu_ok(&args!["-a", "-j8", root]);
        assert!(
            t1 == t8,
            "{}: text differs between -j1 and -j8",
            root.display()
        );
    }
}

#[test]
fn non_utf8_names_round_trip_as_base64() {
    let t = TestDir::new();
    let root = t.mkdir("tree");
    let d = root.join(OsStr::from_bytes(b"d\xff"));
    fs::create_dir(&d).unwrap();
    write_file(&d.join(OsStr::from_bytes(b"caf\xe9")), 5_000);
    write_file(&d.join("ok"), 100);
    write_file(&root.join("caf\u{e9}"), 10);
    let (raw, r) = sdu_json_raw(&args!["-a", root]);
    let got: Vec<_> = r
        .entries
        .iter()
        .map(|e| (e.path.clone(), e.kind, e.depth))
        .collect();
    let want: Vec<_> = expected_walk(&root, true)
        .into_iter()
        .map(|(p, k, dep, _)| (p, k, dep))
        .collect();
    assert_eq!(got, want);
    let raw = String::from_utf8(raw).expect("JSON is not UTF-8");
    assert_eq!(raw.matches("\"bytes\"").count(), 3, "three non-UTF-8 paths");
    assert!(
        raw.contains(&format!("\"{}/caf\u{e9}\"", root.display())),
        "a valid UTF-8 name is not printed as a plain string"
    );
    Du::default().assert_figures(&r, |_| true);
    // Text output writes the raw bytes.
    let out = sdu_ok(&args!["-a", "-0", root]);
    let mut needle = d.clone().into_os_string().into_vec();
    needle.extend_from_slice(b"/caf\xe9\0");
    assert!(
        out.windows(needle.len()).any(|w| w == needle),
        "-0 output lacks the raw non-UTF-8 path"
    );
}

#[test]
fn default_path_is_dot() {
    let t = TestDir::new();
    let root = t.mkdir("plain");
    plain_tree(&root);
    let out = run(Command::new(sdu_bin())
        .args(["--json", "-a"])
        .current_dir(&root));
    out.assert_ok();
    let r = json::parse(&out.stdout);
    assert_eq!(r.roots, vec![OsString::from(".")]);
    let du = run(Command::new("du").args(["-a", "-0"]).current_dir(&root));
    let mut d: Vec<OsString> = du
        .stdout
        .split(|&b| b == 0)
        .filter(|l| !l.is_empty())
        .map(|l| {
            OsStr::from_bytes(&l[l.iter().position(|&b| b == b'\t').unwrap() + 1..]).to_owned()
        })
        .collect();
    d.sort();
    let s = sorted(paths(&r));
    assert!(
        s == d,
        "paths under the default root:\n{}",
        set_diff(&s, &d)
    );
}

/// `du DIR/` prints `DIR/` for the root and `DIR/name` below it.
#[test]
fn trailing_slash_root_paths_as_du() {
    let t = TestDir::new();
    let root = t.mkdir("plain");
    plain_tree(&root);
    let mut given = root.clone().into_os_string();
    given.push("/");
    let r = sdu_json(&args!["-a", given]);
    assert_eq!(r.roots, vec![given.clone()]);
    let s = sorted(paths(&r));
    let d = Du::default().paths(&["-a"], &[&given]);
    assert!(
        s == d,
        "paths for a root given as DIR/:\n{}",
        set_diff(&s, &d)
    );
}

#[test]
fn usage_errors_exit_2() {
    for a in [
        &["--bogus"][..],
        &["-d", "x"],
        &["--max-depth=-1"],
        &["-j", "many"],
        &["-B", "XYZ"],
    ] {
        let out = sdu(&a.iter().map(OsString::from).collect::<Vec<_>>());
        assert_eq!(out.code, Some(2), "`sdu {a:?}`: {out:?}");
        assert!(out.stdout.is_empty(), "`sdu {a:?}` printed to stdout");
        assert!(!out.stderr.is_empty(), "`sdu {a:?}` said nothing on stderr");
    }
    let v = sdu(&args!["--version"]);
    v.assert_ok();
    assert!(v.stdout_str().contains(env!("CARGO_PKG_VERSION")));
}

/// `--color` decides whether the tree view is coloured; `always` beats
/// NO_COLOR, and `auto` (the default) colours only a terminal, which a
/// pipe is not (the tmux test in reports.rs covers the terminal).
#[test]
fn color_flag_and_no_color() {
    let t = TestDir::new();
    let root = t.mkdir("tree");
    plain_tree(&root);
    let colour = "\x1b[";
    for (flags, no_color, want) in [
        (&[][..], None, false),
        (&["--color=auto"], None, false),
        (&["--color=always"], None, true),
        (&["--color", "always"], Some("1"), true),
        (&["--color=always"], Some(""), true),
        (&["--color=never"], None, false),
        (&["--color=never"], Some(""), false),
    ] {
        let mut cmd = Command::new(sdu_bin());
        cmd.args(["--tree", "-d", "1"]).args(flags).arg(&root);
        cmd.env_remove("NO_COLOR");
        if let Some(v) = no_color {
            cmd.env("NO_COLOR", v);
        }
        let out = run(&mut cmd);
        out.assert_ok();
        assert_eq!(
            out.stdout_str().contains(colour),
            want,
            "{flags:?} NO_COLOR={no_color:?}:\n{}",
            out.stdout_str()
        );
    }
    let out = sdu(&args!["--color=sometimes", &root]);
    assert_eq!(out.code, Some(2), "{out:?}");
}

/// The variables sdu and du read for their unit.
const UNIT_VARS: [&str; 4] = [
    "DU_BLOCK_SIZE",
    "BLOCK_SIZE",
    "BLOCKSIZE",
    "POSIXLY_CORRECT",
];

/// `cmd` with exactly `vars` of [`UNIT_VARS`] set, in the C locale.
fn with_unit_env<'a>(cmd: &'a mut Command, vars: &[(&str, &str)]) -> &'a mut Command {
    for v in UNIT_VARS {
        cmd.env_remove(v);
    }
    cmd.env("LC_ALL", "C").envs(vars.iter().copied())
}

/// `sdu --du total` reads DU_BLOCK_SIZE, BLOCK_SIZE, BLOCKSIZE and
/// POSIXLY_CORRECT as GNU du does: the same output byte for byte, on a
/// chain (where du's readdir order is sdu's name order) and, sorted, on
/// a wider tree; unit flags beat the variables in both.
#[test]
fn du_mode_reads_the_block_size_env_as_du() {
    let t = TestDir::new();
    let chain = t.mkdir("chain");
    fs::create_dir_all(chain.join("a/b/c")).unwrap();
    write_file(&chain.join("a/b/c/f"), 1_500_000);
    write_file(&chain.join("a/b/c/g"), 9_700);
    let plain = t.mkdir("plain");
    plain_tree(&plain);
    sync_fs(t.path());
    let envs: &[&[(&str, &str)]] = &[
        &[],
        &[("DU_BLOCK_SIZE", "1")],
        &[("DU_BLOCK_SIZE", "4K")],
        &[("DU_BLOCK_SIZE", "K")],
        &[("DU_BLOCK_SIZE", "MB")],
        &[("DU_BLOCK_SIZE", "1MiB")],
        &[("BLOCK_SIZE", "512")],
        &[("BLOCK_SIZE", "kB")],
        &[("BLOCKSIZE", "1M")],
        &[("BLOCKSIZE", "G")],
        &[("DU_BLOCK_SIZE", "human-readable")],
        &[("BLOCK_SIZE", "h")],
        &[("BLOCKSIZE", "si")],
        &[("DU_BLOCK_SIZE", "'1")],
        &[("DU_BLOCK_SIZE", "'1K")],
        &[("BLOCK_SIZE", "'h")],
        // Precedence, and a set variable counts even when empty or invalid.
        &[
            ("DU_BLOCK_SIZE", "1"),
            ("BLOCK_SIZE", "M"),
            ("BLOCKSIZE", "K"),
        ],
        &[("BLOCK_SIZE", "M"), ("BLOCKSIZE", "1")],
        &[("DU_BLOCK_SIZE", ""), ("BLOCK_SIZE", "1")],
        &[("DU_BLOCK_SIZE", "X"), ("BLOCK_SIZE", "1")],
        &[("BLOCK_SIZE", "0"), ("BLOCKSIZE", "1")],
        &[("BLOCKSIZE", "-1")],
        &[("BLOCKSIZE", "Human")],
        &[("POSIXLY_CORRECT", "1")],
        &[("POSIXLY_CORRECT", "")],
        &[("POSIXLY_CORRECT", "1"), ("BLOCK_SIZE", "bogus")],
        &[("POSIXLY_CORRECT", "1"), ("BLOCK_SIZE", "1K")],
    ];
    let flag_sets: &[&[&str]] = &[
        &[],
        &["-a", "-c"],
        &["--apparent-size", "-s"],
        &["-k"],
        &["-h", "-c"],
        &["--si"],
        &["-b"],
        &["-B", "M"],
    ];
    let mut bad = String::new();
    let mut compared = 0;
    for vars in envs {
        for flags in flag_sets {
            for (root, exact) in [(&chain, true), (&plain, false)] {
                let s = run(with_unit_env(
                    Command::new(sdu_bin())
                        .args(["--du", "total"])
                        .args(*flags)
                        .arg(root),
                    vars,
                ));
                let d = run(with_unit_env(
                    Command::new("du").args(*flags).arg(root),
                    vars,
                ));
                s.assert_ok();
                d.assert_ok();
                let same = if exact {
                    s.stdout == d.stdout
                } else {
                    let lines = |o: &[u8]| {
                        let mut v: Vec<Vec<u8>> =
                            o.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
                        v.sort();
                        v
                    };
                    lines(&s.stdout) == lines(&d.stdout)
                };
                compared += 1;
                if !same {
                    bad += &format!(
                        "{vars:?} {flags:?} on {}:\n--- sdu:\n{}--- du:\n{}",
                        root.display(),
                        s.stdout_str(),
                        d.stdout_str()
                    );
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "sdu and du differ ({compared} runs compared):\n{bad}"
    );
}

/// The block-size variables set the table's unit too, as a unit flag
/// given first would; POSIXLY_CORRECT leaves its human-readable default.
#[test]
fn table_reads_the_block_size_env_as_a_first_unit_flag() {
    let t = TestDir::new();
    let root = t.mkdir("plain");
    plain_tree(&root);
    let table = |vars: &[(&str, &str)], flags: &[&str]| {
        let out = run(with_unit_env(
            Command::new(sdu_bin()).arg("-a").args(flags).arg(&root),
            vars,
        ));
        out.assert_ok();
        out.stdout
    };
    for (vars, flags, same_as) in [
        (&[("BLOCK_SIZE", "1K")][..], &[][..], &["-B1K"][..]),
        (&[("DU_BLOCK_SIZE", "1")], &[], &["-B1"]),
        (&[("BLOCKSIZE", "si")], &["--tree"], &["--tree", "--si"]),
        (&[("BLOCK_SIZE", "'K")], &[], &["-BK"]),
        (&[("BLOCK_SIZE", "1")], &["-h"], &[]),
        (&[("BLOCK_SIZE", "1")], &["-m"], &["-m"]),
        (&[("BLOCK_SIZE", "X")], &[], &[]),
        (&[("POSIXLY_CORRECT", "1")], &[], &[]),
    ] {
        assert!(
            table(vars, flags) == table(&[], same_as),
            "{vars:?} {flags:?} is not {same_as:?}"
        );
    }
    assert!(
        table(&[("BLOCK_SIZE", "1")], &[]) != table(&[], &[]),
        "BLOCK_SIZE=1 prints what -h does"
    );
}

/// Every usage error reads in one style, du's: `sdu: MSG`, a pointer to
/// `--help`, exit 2 (sdu's status; 1 in du's mode, as du). getopt's words
/// for what it refuses, as du's, clap's for a value clap refuses (with its
/// possible values), sdu's own for the rest.
#[test]
fn usage_error_messages() {
    for (a, msg) in [
        (
            &["-s", "-a", "."][..],
            "cannot both summarize and show all entries",
        ),
        (
            &["-s", "-d", "2", "."],
            "summarizing (-s) conflicts with --max-depth=2",
        ),
        (&["-B", "XYZ", "."], "invalid -B argument 'XYZ'"),
        (&["-B", "0", "-h", "."], "invalid -B argument '0'"),
        (
            &["--block-size=1Q", "."],
            "invalid suffix in --block-size argument '1Q'",
        ),
        (&["--min-size", "1.5G", "."], "invalid size '1.5G'"),
        (&[""], "invalid zero-length file name"),
        (&["-z"], "invalid option -- 'z'"),
        (&["--foo", "."], "unrecognized option '--foo'"),
        (&["help", "--foo"], "unrecognized option '--foo'"),
        (&["-t"], "option requires an argument -- 't'"),
        (&["--all=1"], "option '--all' doesn't allow an argument"),
        (
            &["--to"],
            "option '--to' is ambiguous; possibilities: '--top' '--to-free' '--total'",
        ),
        (
            &["--color", "maybe"],
            "invalid value 'maybe' for '--color <WHEN>'\n  [possible values: auto, always, never]",
        ),
        (
            &["--json", "--tree"],
            "the argument '--json' cannot be used with '--tree'",
        ),
    ] {
        let out = run(with_unit_env(
            Command::new(sdu_bin()).args(a),
            &[("BLOCK_SIZE", "1")],
        ));
        assert_eq!(out.code, Some(2), "{out:?}");
        assert!(out.stdout.is_empty(), "{out:?}");
        assert_eq!(
            out.stderr,
            format!("sdu: {msg}\nTry 'sdu --help' for more information.\n"),
            "{a:?}"
        );
    }
}

/// With `-c`, PATHs that overlap count what they share once in the total,
/// as `du -s -c d d/a` does (du lists `d/a` not at all, since `d`
/// counted it; sdu lists it, measured alone).
#[test]
fn overlapping_paths_count_once_in_the_total() {
    let t = TestDir::new();
    let d = t.mkdir("d");
    fs::create_dir(d.join("a")).unwrap();
    write_file(&d.join("a/f"), 100_000);
    write_file(&d.join("g"), 50_000);
    sync_fs(&d);
    let a = d.join("a");
    let r = sdu_json(&args!["-s", "-c", d, a]);
    let fig = |p: &Path| {
        r.entries
            .iter()
            .find(|e| e.path == p.as_os_str())
            .unwrap()
            .total
    };
    let total = r.total.expect("-c without a total").total;
    assert_eq!(total, fig(&d), "d/a inside d counts once");
    let (l, _) = Du::default().lines(&["-s", "-c", "-B1"], &[d.as_os_str(), a.as_os_str()]);
    assert_eq!(
        l.last().unwrap().size,
        total.to_string(),
        "du -s -c -B1 d d/a"
    );
    assert_eq!(l.len(), 2, "du lists d and the total only");
}
