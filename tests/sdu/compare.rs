//! `--compare OLD`: what changed since a saved scan, each change on the
//! right entry, checked against figures sdu does not make (the bytes the
//! test wrote, du's Total, `btrfs filesystem du`'s Exclusive); a scan
//! compared with itself changes nothing; one thread or several give the
//! same bytes; a bad OLD is refused with its message and exit 2; a plain
//! ncdu export compares on Total and the apparent size.

use std::collections::BTreeSet;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::btrfs::{assert_setpriv_drops_sys_admin, ro_snapshot, subvolume};
use crate::util::*;

const M: u64 = 1 << 20;

/// The document of `sdu --json --compare ...`, each entry's keys checked.
fn document(o: &Output) -> Value {
    assert_eq!(o.code, Some(0), "{o:?}");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {o:?}"));
    let keys = |x: &Value| {
        x.as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<BTreeSet<_>>()
    };
    let set = |k: &[&str]| k.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(v["compare_schema"], 1, "{v}");
    let sharing = v["sharing"].as_bool().unwrap();
    let figures: &[&str] = if sharing {
        &crate::json::FIGURES
    } else {
        &["apparent", "total", "files", "dirs"]
    };
    let mut side = set(figures);
    if sharing {
        side.insert("reclaimable_exact".into());
    }
    for e in v["entries"].as_array().unwrap() {
        assert_eq!(
            keys(e),
            set(&[
                "path",
                "type",
                "depth",
                "status",
                "sharing_changed",
                "old",
                "new",
                "change"
            ]),
            "{e}"
        );
        assert_eq!(keys(&e["change"]), set(figures), "{e}");
        for s in [&e["old"], &e["new"]] {
            // `reclaimable_bound` beside a bound (`reclaimable_exact` false).
            let mut side = side.clone();
            if s["reclaimable_exact"] == false {
                side.insert("reclaimable_bound".into());
            }
            assert!(s.is_null() || keys(s) == side, "{e}");
        }
        let status = e["status"].as_str().unwrap();
        assert_eq!(e["old"].is_null(), status == "new", "{e}");
        assert_eq!(e["new"].is_null(), status == "gone", "{e}");
        // The change is new minus old, a missing side counting 0.
        for f in figures {
            let of = |s: &Value| s[f].as_i64().unwrap_or(0);
            assert_eq!(
                e["change"][f].as_i64().unwrap(),
                of(&e["new"]) - of(&e["old"]),
                "{e}"
            );
        }
    }
    v
}

/// The entry of `path` in a document.
fn entry<'a>(v: &'a Value, path: &str) -> &'a Value {
    v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == path)
        .unwrap_or_else(|| panic!("no entry {path} in {v}"))
}

/// `du -s -B1 PATH`, in `cwd`.
fn du_total(cwd: &Path, path: &str) -> u64 {
    Du::new(&["-B1"]).bytes(&[], cwd.join(path).as_os_str())
}

/// Writes `n` fresh bytes over the start of `path`, in place.
fn rewrite(path: &Path, n: u64) {
    let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.seek(SeekFrom::Start(0)).unwrap();
    f.write_all(&fresh_bytes(n)).unwrap();
    f.sync_all().unwrap();
}

/// ```text
/// vol/ (subvolume)  keep 2M, rw 3M, grow/a 1M, solo 4M (written after s2)
/// snaps/s2          snapshot of vol before solo
/// snaps/s1          snapshot of vol with solo: the only other holder of it
/// ```
/// exported; then 5 MiB written in vol/grow, s1 deleted (solo becomes
/// vol's alone) and rw rewritten (its old data becomes s2's alone).
#[test]
fn each_change_shows_on_its_entry_in_text_and_json() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    subvolume(&d.join("vol"));
    std::fs::create_dir_all(d.join("vol/grow")).unwrap();
    std::fs::create_dir(d.join("snaps")).unwrap();
    for (f, n) in [("keep", 2 * M), ("rw", 3 * M), ("grow/a", M)] {
        std::fs::write(d.join("vol").join(f), fresh_bytes(n)).unwrap();
    }
    sync_fs(d);
    ro_snapshot(&d.join("vol"), &d.join("snaps/s2"));
    std::fs::write(d.join("vol/solo"), fresh_bytes(4 * M)).unwrap();
    sync_fs(d);
    ro_snapshot(&d.join("vol"), &d.join("snaps/s1"));
    sync_fs(d);
    let old = d.parent().unwrap().join("old.json");
    let old = old.to_str().unwrap();
    sdu_in(d, true, &["--export", old, "."]).assert_ok();
    let (du_vol, du_grow, du_s1) = (
        du_total(d, "vol"),
        du_total(d, "vol/grow"),
        du_total(d, "snaps/s1"),
    );
    let excl_vol = crate::shared::btrfs::btrfs_du(&d.join("vol")).1;

    std::fs::write(d.join("vol/grow/b"), fresh_bytes(5 * M)).unwrap();
    run(Command::new("btrfs")
        .args(["subvolume", "delete", "-c"])
        .arg(d.join("snaps/s1")))
    .assert_ok();
    // The cleaner drops the deleted snapshot's references.
    run(Command::new("btrfs").args(["subvolume", "sync"]).arg(d)).assert_ok();
    rewrite(&d.join("vol/rw"), 3 * M);
    sync_fs(d);

    let args = ["--compare", old, "--json", "-a", "."];
    let v = document(&sdu_in(d, true, &args));
    assert!(v["sharing"].as_bool().unwrap(), "{v}");
    let change = |p: &str, f: &str| entry(&v, p)["change"][f].as_i64().unwrap();
    // 5 MiB written: on vol/grow and vol, as du sees it too.
    assert_eq!(change("./vol/grow", "total"), 5 * M as i64);
    assert_eq!(
        change("./vol/grow", "total"),
        (du_total(d, "vol/grow") - du_grow) as i64
    );
    assert_eq!(change("./vol/grow", "exclusive"), 5 * M as i64);
    assert_eq!(
        change("./vol", "total"),
        (du_total(d, "vol") - du_vol) as i64
    );
    let b = entry(&v, "./vol/grow/b");
    assert_eq!(
        (b["status"].as_str(), b["new"]["total"].as_u64()),
        (Some("new"), Some(5 * M))
    );
    // The snapshot deleted: gone, with what du counted in it.
    let s1 = entry(&v, "./snaps/s1");
    assert_eq!(s1["status"], "gone", "{s1}");
    assert_eq!(s1["old"]["total"].as_u64(), Some(du_s1), "{s1}");
    assert_eq!(entry(&v, "./snaps/s1/solo")["status"], "gone");
    // What it alone shared with vol (solo, 4 MiB) is vol's alone now:
    // Exclusive grew, Total did not.
    let solo = entry(&v, "./vol/solo");
    assert_eq!(
        (
            change("./vol/solo", "total"),
            change("./vol/solo", "exclusive")
        ),
        (0, 4 * M as i64)
    );
    assert_eq!(solo["sharing_changed"], true, "{solo}");
    // The rewrite: new data in vol/rw, the old now s2's alone.
    for p in ["./vol/rw", "./snaps/s2/rw", "./snaps/s2"] {
        assert_eq!(
            (change(p, "total"), change(p, "exclusive")),
            (0, 3 * M as i64),
            "{p}"
        );
        assert_eq!(entry(&v, p)["sharing_changed"], true, "{p}");
    }
    for p in ["./vol/keep", "./vol/grow/a", "./snaps/s2/keep"] {
        assert_eq!(entry(&v, p)["change"]["exclusive"], 0, "{p}");
        assert_eq!(entry(&v, p)["sharing_changed"], false, "{p}");
    }
    // vol's Exclusive: 5 + 4 + 3 MiB, as btrfs filesystem du counts it.
    let excl_now = crate::shared::btrfs::btrfs_du(&d.join("vol")).1;
    assert_eq!(change("./vol", "exclusive"), 12 * M as i64);
    assert_eq!(
        change("./vol", "exclusive"),
        excl_now as i64 - excl_vol as i64
    );
    // A whole filesystem: exact on both sides.
    assert!(v["entries"].as_array().unwrap().iter().all(|e| {
        [&e["old"], &e["new"]]
            .iter()
            .all(|s| s.is_null() || s["reclaimable_exact"] == true)
    }));

    // The text: the same changes, and the notes.
    let t = sdu_in(d, true, &["--compare", old, "-a", "-B1", "."]);
    t.assert_ok();
    let text = t.stdout_str();
    let row = |p: &str| {
        text.lines()
            .find(|l| l.ends_with(&format!("  {p}")))
            .unwrap_or_else(|| panic!("no row {p}:\n{text}"))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    assert_eq!(
        text.lines()
            .next()
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>(),
        [
            "Total",
            "Exclusive",
            "Shared",
            "Reclaimable",
            "Note",
            "Path"
        ],
        "{text}"
    );
    assert_eq!(
        row("./vol/grow"),
        ["+5242880", "+5242880", "0", "+5242880", "./vol/grow"]
    );
    assert_eq!(row("./vol/grow/b")[4], "new", "{text}");
    assert_eq!(
        row("./vol/solo"),
        [
            "0",
            "+4194304",
            "-4194304",
            "+4194304",
            "sharing",
            "./vol/solo"
        ]
    );
    assert_eq!(row("./snaps/s1")[0], format!("-{du_s1}"));
    assert_eq!(row("./snaps/s1")[4], "gone");
    assert!(
        text.contains("\nsharing: Exclusive moved by more or less than Total"),
        "{text}"
    );
    // Largest growth of Total first; the gone snapshot last.
    assert!(text.lines().nth(1).unwrap().ends_with("  ./vol"), "{text}");
    assert!(
        text.lines().rev().nth(1).unwrap().ends_with("  ./snaps/s1"),
        "{text}"
    );

    // Without CAP_SYS_ADMIN (FIEMAP, no tree search): the same bytes, as
    // the scan covers the whole filesystem.
    assert_setpriv_drops_sys_admin();
    let user = sdu_in(d, false, &args);
    assert_eq!(user.stdout, sdu_in(d, true, &args).stdout, "{user:?}");
    // One thread or several: the same bytes.
    for a in [
        &args[..],
        &["--compare", old, "-a", "-B1", "."],
        &["--compare", old, "-d", "1", "--sort", "exclusive", "."],
    ] {
        let one = sdu_in(d, true, &[&["-j1"], a].concat());
        let many = sdu_in(d, true, &[&["-j8"], a].concat());
        one.assert_ok();
        assert_eq!(one.stdout_str(), many.stdout_str(), "{a:?}");
    }
}

/// A small tree of directories and files in `root`.
fn small_tree(root: &Path) {
    for dir in ["a", "b/c"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    write_file(&root.join("a/f"), 300_000);
    write_file(&root.join("b/g"), 50_000);
    write_file(&root.join("b/c/h"), 7_000);
    std::fs::hard_link(root.join("b/g"), root.join("a/g2")).unwrap();
}

#[test]
fn a_scan_compared_with_itself_changes_nothing() {
    let d = TestDir::new();
    small_tree(&d.mkdir("t"));
    let p = d.path();
    sdu_in(p, true, &["--export", "old.json", "t"]).assert_ok();
    for new in [&["t"][..], &["--import", "old.json"]] {
        for extra in [&["-a"][..], &["-d", "1"], &["-s", "-c"]] {
            let a = [&["--compare", "old.json", "--json"], extra, new].concat();
            let v = document(&sdu_in(p, true, &a));
            let entries = v["entries"].as_array().unwrap();
            assert!(!entries.is_empty(), "{v}");
            for e in entries.iter().chain(v.get("total")) {
                assert!(
                    e["change"].as_object().unwrap().values().all(|x| x == 0),
                    "{e}"
                );
                assert_eq!(e["sharing_changed"], false, "{e}");
                assert_eq!(e["old"], e["new"], "{e}");
                assert!(e.get("status").is_none_or(|s| s == "both"), "{e}");
            }
            // The text: zeros, no note, no legend.
            let t = sdu_in(p, true, &[&["--compare", "old.json"], extra, new].concat());
            t.assert_ok();
            let text = t.stdout_str();
            assert!(
                text.starts_with("Total  Exclusive  Shared  Reclaimable  Path\n"),
                "{text}"
            );
            for l in text.lines().skip(1) {
                let w: Vec<&str> = l.split_whitespace().collect();
                assert_eq!(w[..4], ["0", "0", "0", "0"], "{text}");
            }
        }
    }
    // One thread or several.
    let one = sdu_in(p, true, &["-j1", "--compare", "old.json", "-a", "t"]);
    let many = sdu_in(p, true, &["-j8", "--compare", "old.json", "-a", "t"]);
    assert_eq!(one.stdout_str(), many.stdout_str());
}

#[test]
fn entries_match_by_name_from_each_root() {
    // The same tree under another path (mounted elsewhere): every entry
    // matches, none is new or gone.
    let d = TestDir::new();
    std::fs::create_dir(d.path().join("mnt")).unwrap();
    small_tree(&d.mkdir("mnt/a"));
    let p = d.path();
    sdu_in(p, true, &["--export", "old.json", "mnt/a"]).assert_ok();
    std::fs::create_dir(p.join("srv")).unwrap();
    std::fs::rename(p.join("mnt/a"), p.join("srv/b")).unwrap();
    let o = sdu_in(p, true, &["--compare", "old.json", "--json", "-a", "srv/b"]);
    assert_eq!(
        o.stderr,
        "sdu: --compare: compared the old root 'mnt/a' with 'srv/b' by position: their names differ\n"
    );
    let v = document(&o);
    assert_eq!(v["old"]["roots"], serde_json::json!(["mnt/a"]), "{v}");
    assert_eq!(v["roots"], serde_json::json!(["srv/b"]), "{v}");
    let entries = v["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 8, "{v}");
    for e in entries {
        assert_eq!(e["status"], "both", "{e}");
        assert!(
            e["change"].as_object().unwrap().values().all(|x| x == 0),
            "{e}"
        );
    }
    // A file gone, one new: named by the new root.
    std::fs::remove_file(p.join("srv/b/b/c/h")).unwrap();
    write_file(&p.join("srv/b/new"), 9000);
    let v = document(&sdu_in(
        p,
        true,
        &["--compare", "old.json", "--json", "-a", "srv/b"],
    ));
    assert_eq!(entry(&v, "srv/b/b/c/h")["status"], "gone");
    assert_eq!(entry(&v, "srv/b/new")["status"], "new");
    // --top and --sort: the largest growth first; by name.
    let o = sdu_in(
        p,
        true,
        &[
            "--compare",
            "old.json",
            "--top",
            "1",
            "-a",
            "--no-header",
            "srv/b",
        ],
    );
    assert_eq!(o.code, Some(0), "{o:?}");
    assert!(o.stdout_str().ends_with("  new      srv/b/new\n"), "{o:?}");
    let o = sdu_in(
        p,
        true,
        &["--compare", "old.json", "--sort", "name", "-s", "srv/b"],
    );
    assert_eq!(o.stdout_str().lines().count(), 2, "{o:?}");
}

#[test]
fn bad_old_scans_are_refused_with_their_message() {
    let d = TestDir::new();
    small_tree(&d.mkdir("t"));
    std::fs::create_dir(d.path().join("dir.json")).unwrap();
    let p = d.path();
    sdu_in(p, true, &["--export", "good.json", "t"]).assert_ok();
    let good = std::fs::read_to_string(p.join("good.json")).unwrap();
    let json = sdu_in(p, true, &["--json", "t"]);
    let newer = good.replacen("\"format\":2", "\"format\":3", 1);
    let cases: &[(&str, Option<&str>, &str)] = &[
        (
            "empty.json",
            Some(""),
            "the file is empty, not a saved scan",
        ),
        ("dir.json", None, "is a directory, not a saved scan"),
        ("missing.json", None, "No such file or directory"),
        (
            "cut.json",
            Some(&good[..good.len() - 40]),
            "(the file is truncated)",
        ),
        (
            "newer.json",
            Some(&newer),
            "written by a newer sdu (format 3; this one reads 2)",
        ),
        (
            "report.json",
            Some(json.stdout_str()),
            "is a --json report, not a saved scan (sdu --export FILE saves one)",
        ),
        (
            "other.json",
            Some("[2,0,{}]"),
            "line 1, column 3: major format version 2: only version 1 (ncdu's) is known",
        ),
    ];
    for &(name, data, says) in cases {
        if let Some(data) = data {
            std::fs::write(p.join(name), data).unwrap();
        }
        let o = sdu_in(p, true, &["--compare", name, "t"]);
        assert_eq!(
            (o.code, o.stdout.is_empty()),
            (Some(2), true),
            "{name}: {o:?}"
        );
        assert!(
            o.stderr.starts_with(&format!("sdu: --compare {name}: "))
                && o.stderr.ends_with(&format!("{says}\n")),
            "{name}: {o:?}"
        );
        // --import's own message, named as the old scan.
        let i = sdu_in(p, true, &["--import", name]);
        assert_eq!(i.code, Some(2), "{i:?}");
        assert_eq!(
            o.stderr,
            i.stderr.replacen("sdu: ", "sdu: --compare ", 1),
            "{name}"
        );
    }
    // The whole message of a truncated file, line and column included.
    let o = sdu_in(p, true, &["--compare", "cut.json", "t"]);
    let lines = good[..good.len() - 40].lines().count();
    assert!(
        o.stderr
            .starts_with(&format!("sdu: --compare cut.json: line {lines}, column ")),
        "{o:?}"
    );
    // Standard input cannot be read twice.
    let o = sdu_in(p, true, &["--compare", "-", "--import", "-"]);
    assert_eq!(o.code, Some(2), "{o:?}");
    assert_eq!(
        o.stderr,
        "sdu: --compare - and --import - cannot both read standard input\nTry 'sdu --help' for more information.\n"
    );
}

#[test]
fn a_plain_ncdu_export_compares_on_total_and_apparent_size() {
    if run(Command::new("ncdu").arg("-v")).code != Some(0) {
        unavailable::<()>("ncdu is not installed");
        return;
    }
    let d = TestDir::new();
    small_tree(&d.mkdir("t"));
    let p = d.path();
    let o = run(Command::new("ncdu")
        .current_dir(p)
        .args(["-o", "ncdu.json", "t"]));
    assert_eq!(o.code, Some(0), "{o:?}");
    let before = du_total(p, "t/a");
    write_file(&p.join("t/a/more"), 100_000);
    let said = "sdu: --compare: ncdu.json was not written by sdu (no sdu keys), so what is shared \
                is not known: only Total and the apparent size are compared\n";
    let o = sdu_in(p, true, &["--compare", "ncdu.json", "--json", "-a", "t"]);
    // ncdu saved its root resolved (`/tmp/…/t`): it pairs with `t` by
    // name, so no pairing by position is said.
    assert_eq!(o.stderr, said, "{o:?}");
    let v = document(&o);
    assert_eq!(v["sharing"], false, "{v}");
    let a = entry(&v, "t/a");
    assert_eq!(
        a["change"]["total"].as_u64(),
        Some(du_total(p, "t/a") - before),
        "{a}"
    );
    assert_eq!(a["change"]["apparent"], 100_000, "{a}");
    assert_eq!(entry(&v, "t/a/more")["status"], "new");
    assert_eq!(entry(&v, "t/b/g")["change"]["total"], 0);
    // The text: Total and Apparent, said once on stderr.
    let o = sdu_in(p, true, &["--compare", "ncdu.json", "-d", "1", "t"]);
    assert_eq!((o.code, o.stderr.as_str()), (Some(0), said), "{o:?}");
    let text = o.stdout_str();
    assert!(text.starts_with("Total  Apparent  Path\n"), "{text}");
}

/// The JSON document of the page `sdu --html -` wrote.
fn page_data(o: &Output) -> Value {
    let text = o.stdout_str();
    let open = r#"<script type="application/json" id="sdu-data">"#;
    let start = text.find(open).unwrap() + open.len();
    let end = start + text[start..].find("</script").unwrap();
    serde_json::from_str(&text[start..end]).unwrap()
}

#[test]
fn the_page_colours_by_growth_from_the_old_scan() {
    let d = TestDir::new();
    small_tree(&d.mkdir("t"));
    let p = d.path();
    sdu_in(p, true, &["--export", "old.json", "t"]).assert_ok();
    let old_a = du_total(p, "t/a");
    write_file(&p.join("t/a/more"), 100_000);
    std::fs::create_dir(p.join("t/fresh")).unwrap();
    let o = sdu_in(p, true, &["--html", "-", "--compare", "old.json", "t"]);
    o.assert_ok();
    let doc = page_data(&o);
    assert_eq!(doc["old"], true, "{doc}");
    // Each entry's 12th field: its Total in the old scan, null if new.
    let old_of = |name: &str| {
        doc["e"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e[1] == name)
            .unwrap_or_else(|| panic!("no {name} in {doc}"))[11]
            .clone()
    };
    assert_eq!(old_of("a").as_u64(), Some(old_a), "{doc}");
    assert!(old_of("fresh").is_null(), "{doc}");
}

/// Roots that overlap as strings (`t` and `t/a`): the page asks the old
/// scan about each entry drawn, not about its path, so `t`'s `a` takes the
/// old Total of `t/a` and the root `t/a` that of the old root it paired
/// with (`u`, second in both scans), though both print as `t/a`.
#[test]
fn the_page_colours_each_entry_by_its_own_match_when_roots_overlap() {
    let d = TestDir::new();
    small_tree(&d.mkdir("t"));
    let p = d.path();
    write_file(&d.mkdir("u").join("big"), 300_000);
    sdu_in(p, true, &["--export", "old.json", "t", "u"]).assert_ok();
    let (old_a, old_u) = (du_total(p, "t/a"), du_total(p, "u"));
    assert_ne!(old_a, old_u);
    let o = sdu_in(
        p,
        true,
        &["--html", "-", "--compare", "old.json", "t", "t/a"],
    );
    assert_eq!(o.code, Some(0), "{o:?}");
    assert_eq!(
        o.stderr,
        "sdu: --compare: compared the old root 'u' with 't/a' by position: their names differ\n"
    );
    let doc = page_data(&o);
    let old_of = |name: &str| {
        doc["e"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e[1] == name)
            .unwrap_or_else(|| panic!("no {name} in {doc}"))[11]
            .as_u64()
    };
    assert_eq!(old_of("a"), Some(old_a), "{doc}");
    assert_eq!(old_of("t/a"), Some(old_u), "{doc}");
}

/// One PATH given twice (`t t`), compared with a scan of `t u`: the first
/// `t` pairs by name, the second by position (said on stderr), so it
/// takes `u`'s old Total and its entries, which `u` did not have, none;
/// the first `t` and its entries take `t`'s.
/// The page asks the old scan about each entry drawn by its node: the
/// same path, `t/a`, has an old Total under one root and none under the
/// other.
#[test]
fn the_page_colours_each_root_of_one_path_by_its_own_match() {
    let d = TestDir::new();
    small_tree(&d.mkdir("t"));
    let p = d.path();
    write_file(&d.mkdir("u").join("big"), 300_000);
    sdu_in(p, true, &["--export", "old.json", "t", "u"]).assert_ok();
    let (old_t, old_a, old_u) = (du_total(p, "t"), du_total(p, "t/a"), du_total(p, "u"));
    assert_ne!(old_t, old_u);
    let o = sdu_in(p, true, &["--html", "-", "--compare", "old.json", "t", "t"]);
    assert_eq!(o.code, Some(0), "{o:?}");
    assert_eq!(
        o.stderr,
        "sdu: --compare: compared the old root 'u' with 't' by position: their names differ\n"
    );
    let doc = page_data(&o);
    let e = doc["e"].as_array().unwrap();
    // Each entry: [parent, name, ..., its old Total (12th)].
    let roots: Vec<usize> = (0..e.len())
        .filter(|&i| e[i][0] == 0 && e[i][1] == "t")
        .collect();
    assert_eq!(roots.len(), 2, "{doc}");
    let old = |i: usize| e[i][11].as_u64();
    assert_eq!(
        (old(roots[0]), old(roots[1])),
        (Some(old_t), Some(old_u)),
        "{doc}"
    );
    let a_under = |root: usize| {
        (0..e.len())
            .find(|&i| e[i][0] == root && e[i][1] == "a")
            .unwrap_or_else(|| panic!("no a under {root} in {doc}"))
    };
    assert_eq!(
        (old(a_under(roots[0])), old(a_under(roots[1]))),
        (Some(old_a), None),
        "{doc}"
    );
}

/// The roots pair by name where names match, whatever their order, and
/// silently; the roots left pair by position, said on stderr; an old root
/// left with no pair while new roots are left too is said as well.
#[test]
fn roots_pair_by_name_else_by_position_with_a_warning() {
    let d = TestDir::new();
    let p = d.path();
    small_tree(&d.mkdir("a"));
    small_tree(&d.mkdir("b"));
    write_file(&p.join("b/more"), 20_000);
    sdu_in(p, true, &["--export", "old.json", "a", "b"]).assert_ok();
    // Given in the other order: paired by name, nothing changed.
    let o = sdu_in(
        p,
        true,
        &["--compare", "old.json", "--json", "-a", "b", "a"],
    );
    assert_eq!(o.stderr, "", "{o:?}");
    let v = document(&o);
    for e in v["entries"].as_array().unwrap() {
        assert_eq!(e["status"], "both", "{e}");
        assert!(
            e["change"].as_object().unwrap().values().all(|x| x == 0),
            "{e}"
        );
    }
    // One old root kept by name, the other paired with a new name by
    // position: the pair is said, and `c` compares with `b`.
    std::fs::rename(p.join("b"), p.join("c")).unwrap();
    let o = sdu_in(
        p,
        true,
        &["--compare", "old.json", "--json", "-s", "c", "a"],
    );
    assert_eq!(
        o.stderr,
        "sdu: --compare: compared the old root 'b' with 'c' by position: their names differ\n",
        "{o:?}"
    );
    let v = document(&o);
    assert_eq!(entry(&v, "c")["status"], "both", "{v}");
    assert_eq!(entry(&v, "c")["change"]["total"], 0, "{v}");
    assert_eq!(entry(&v, "a")["change"]["total"], 0, "{v}");
    // Roots left in different numbers: none pairs by position; the old
    // root left is said, listed as gone, the new ones as new.
    small_tree(&d.mkdir("e"));
    let o = sdu_in(
        p,
        true,
        &["--compare", "old.json", "--json", "-s", "a", "c", "e"],
    );
    assert_eq!(
        o.stderr,
        "sdu: --compare: the old root 'b' pairs with no root (none has its name, and the \
         roots left differ in number): its entries are listed as gone\n",
        "{o:?}"
    );
    let v = document(&o);
    assert_eq!(entry(&v, "b")["status"], "gone", "{v}");
    assert_eq!(entry(&v, "c")["status"], "new", "{v}");
    assert_eq!(entry(&v, "e")["status"], "new", "{v}");
    assert_eq!(
        entry(&v, "b")["old"]["total"].as_u64(),
        entry(&v, "c")["new"]["total"].as_u64(),
        "{v}"
    );
}

/// On XFS, a reflink copy of `a/f` made into `b` between the scans: `a`'s
/// Total does not move (du agrees), its Exclusive falls by the file; with
/// `--min-size` the row of `a` is shown all the same, and a directory
/// none of whose figures moved is not.
#[test]
fn min_size_weighs_exclusive_moved_by_a_reflink_copy() {
    let Some(fs) = LoopFs::new(FsKind::Xfs) else {
        return;
    };
    let d = fs.path();
    for dir in ["a", "b", "still"] {
        std::fs::create_dir(d.join(dir)).unwrap();
    }
    std::fs::write(d.join("a/f"), fresh_bytes(4 * M)).unwrap();
    std::fs::write(d.join("still/g"), fresh_bytes(2 * M)).unwrap();
    sync_fs(d);
    let old = d.parent().unwrap().join("reflink-old.json");
    let old = old.to_str().unwrap();
    sdu_in(d, true, &["--export", old, "."]).assert_ok();
    let du_a = du_total(d, "a");
    run(Command::new("cp")
        .arg("--reflink=always")
        .arg(d.join("a/f"))
        .arg(d.join("b/f")))
    .assert_ok();
    sync_fs(d);
    assert_eq!(du_total(d, "a"), du_a, "du's Total of a moved");
    let t = sdu_in(
        d,
        true,
        &["--compare", old, "--min-size", "1M", "-B1", "-d", "1", "."],
    );
    t.assert_ok();
    let text = t.stdout_str();
    let row = |p: &str| {
        text.lines()
            .find(|l| l.ends_with(&format!("  {p}")))
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
    };
    let four = format!("{}", 4 * M);
    assert_eq!(
        row("./a"),
        Some(vec![
            "0",
            &format!("-{four}"),
            &format!("+{four}"),
            &format!("-{four}"),
            "sharing",
            "./a"
        ]),
        "{text}"
    );
    // `b` grew by the copy's Total (du's), all of it shared.
    assert_eq!(
        row("./b").map(|r| r[0].to_string()),
        Some(format!("+{}", du_total(d, "b"))),
        "{text}"
    );
    assert_eq!(row("./still"), None, "{text}");
    // Above the move: hidden.
    let t = sdu_in(
        d,
        true,
        &["--compare", old, "--min-size", "5M", "-B1", "-d", "1", "."],
    );
    assert!(
        t.stdout_str().lines().all(|l| !l.ends_with("  ./a")),
        "{t:?}"
    );
}
