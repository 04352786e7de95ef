//! `sdu --snapshots`: the subvolumes of a scan by origin, and what deleting
//! snapshots frees, checked by deleting them on a loopback Btrfs and
//! reading Data Used (`btrfs filesystem usage -b` after `btrfs subvolume
//! sync` and `btrfs filesystem sync`). Every file is large enough not to be
//! inline, so Data Used drops by exactly what deleting frees. As root every
//! figure is exact; without CAP_SYS_ADMIN it is equal or marked with the
//! direction it errs in. Each case runs on a filesystem of its own.

use std::path::Path;

use serde_json::Value;

use crate::btrfs::{ro_snapshot, subvolume};
use crate::util::*;

/// `live` with 6 read-only snapshots `snaps/1`..`snaps/6` taken as it
/// changes, and `other` with 2 (`osnaps/1`, `osnaps/2`).
fn build(d: &Path) {
    subvolume(&d.join("live"));
    std::fs::create_dir(d.join("snaps")).unwrap();
    std::fs::create_dir(d.join("osnaps")).unwrap();
    let t = Tree {
        root: &d.join("live"),
    };
    let snap = |n: u32| ro_snapshot(&d.join("live"), &d.join(format!("snaps/{n}")));
    t.write("a", 4 << 20);
    t.write("b", 2 << 20);
    t.write("c", 1 << 20);
    snap(1);
    t.overwrite("a", 1 << 20, 1 << 20);
    t.write("d", 3 << 20);
    snap(2);
    std::fs::remove_file(t.p("b")).unwrap();
    // Held by snaps/3 alone.
    t.write("f", 2 << 20);
    snap(3);
    std::fs::remove_file(t.p("f")).unwrap();
    t.overwrite("c", 0, 512 << 10);
    snap(4);
    t.write("e", 2 << 20);
    snap(5);
    std::fs::remove_file(t.p("d")).unwrap();
    t.overwrite("e", 0, 1 << 20);
    snap(6);
    subvolume(&d.join("other"));
    let o = Tree {
        root: &d.join("other"),
    };
    o.write("x", 3 << 20);
    ro_snapshot(&d.join("other"), &d.join("osnaps/1"));
    o.overwrite("x", 0, 1 << 20);
    o.write("y", 1 << 20);
    ro_snapshot(&d.join("other"), &d.join("osnaps/2"));
    std::fs::remove_file(o.p("x")).unwrap();
}

/// Without root: equal, or marked with the direction it errs in.
fn within_or_marked(r: &Value, field: &str, want: u64) {
    let got = r[field].as_u64().unwrap();
    let bound = r[format!("{field}_bound")].as_str().unwrap_or("exact");
    let ok = match bound {
        "exact" => got == want,
        "at_most" => got >= want,
        "at_least" => got <= want,
        _ => true,
    };
    assert!(
        ok && (bound == "exact" || r["frees_exact"] == false),
        "{field} {got} ({bound}) but deleting freed {want}: {r}"
    );
}

/// One case: `field` of the row `path` against what deleting `rels` frees.
fn case(path: &str, field: &str, rels: &[&str]) {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    build(d);
    let rows_root = snapshot_rows(d, true);
    let rows_nobody = snapshot_rows(d, false);
    let r = row(&rows_root, path);
    assert_eq!(r["frees_exact"], true, "{r}");
    let want = freed_by_deleting_subvolumes(d, rels);
    assert!(want > 0, "deleting {rels:?} freed nothing");
    assert_eq!(r[field].as_u64().unwrap(), want, "{field} of {r}");
    within_or_marked(row(&rows_nobody, path), field, want);
}

#[test]
fn one_snapshot_alone() {
    case("./snaps/3", "frees_alone", &["snaps/3"]);
}

#[test]
fn oldest_three() {
    case(
        "./snaps/3",
        "frees_with_older",
        &["snaps/1", "snaps/2", "snaps/3"],
    );
}

#[test]
fn every_snapshot_of_an_origin() {
    case(
        "./snaps/6",
        "frees_with_older",
        &[
            "snaps/1", "snaps/2", "snaps/3", "snaps/4", "snaps/5", "snaps/6",
        ],
    );
}

/// The rows: each origin first, then its snapshots oldest first, each
/// naming its origin; the table has a footer per origin.
#[test]
fn grouped_by_origin_oldest_first() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    build(d);
    let rows = snapshot_rows(d, true);
    let paths: Vec<&str> = rows.iter().map(|r| r["path"].as_str().unwrap()).collect();
    let at = |p: &str| paths.iter().position(|q| *q == p).unwrap();
    assert!(at("./live") < at("./snaps/1"), "{paths:?}");
    for n in 1..6 {
        assert_eq!(
            at(&format!("./snaps/{n}")) + 1,
            at(&format!("./snaps/{}", n + 1))
        );
    }
    assert_eq!(at("./other") + 1, at("./osnaps/1"), "{paths:?}");
    assert_eq!(at("./osnaps/1") + 1, at("./osnaps/2"), "{paths:?}");
    assert_eq!(row(&rows, "./snaps/4")["origin"], "./live");
    assert_eq!(row(&rows, "./osnaps/2")["origin"], "./other");
    assert_eq!(row(&rows, "./snaps/4")["read_only"], true);
    assert_eq!(row(&rows, "./live")["read_only"], false);
    let out = sdu_in(d, true, &["--snapshots", "."]);
    out.assert_ok();
    let text = out.stdout_str();
    assert!(text.starts_with("Created "), "{text}");
    assert!(text.contains("every snapshot (6) frees "), "{text}");
    assert!(text.contains("every snapshot (2) frees "), "{text}");
}

#[test]
fn not_on_btrfs() {
    let Some(fs) = LoopFs::new(FsKind::Xfs) else {
        return;
    };
    let out = sdu_in(fs.path(), true, &["--snapshots", "."]);
    out.assert_ok();
    assert_eq!(out.stdout_str(), "no snapshots: . is not on Btrfs\n");
    // --stats is the scan's, whatever the report.
    let out = sdu_in(fs.path(), true, &["--snapshots", "--stats", "."]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stdout_str(), "no snapshots: . is not on Btrfs\n");
    let err = &out.stderr;
    assert!(
        err.contains("sdu stats:") && err.contains("entries stat-ed"),
        "{err}"
    );
}

/// snapper's and timeshift's layouts, made by hand as the tools make them:
/// each snapshot's row carries the number, date, description and tags
/// the tool recorded, in `--json` and in the table.
#[test]
fn snapper_and_timeshift_snapshots_are_described() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    subvolume(&d.join("root"));
    Tree {
        root: &d.join("root"),
    }
    .write("a", 1 << 20);
    std::fs::create_dir_all(d.join("root/.snapshots/42")).unwrap();
    ro_snapshot(&d.join("root"), &d.join("root/.snapshots/42/snapshot"));
    std::fs::write(
        d.join("root/.snapshots/42/info.xml"),
        "<?xml version=\"1.0\"?>\n<snapshot>\n  <type>single</type>\n  <num>42</num>\n  \
         <date>2024-03-05 07:08:09</date>\n  <description>before the upgrade</description>\n  \
         <cleanup>number</cleanup>\n</snapshot>\n",
    )
    .unwrap();
    let ts = d.join("timeshift-btrfs/snapshots/2024-03-06_10-00-00");
    std::fs::create_dir_all(&ts).unwrap();
    ro_snapshot(&d.join("root"), &ts.join("@"));
    std::fs::write(
        ts.join("info.json"),
        r#"{"created":"1709719200","sys-uuid":"x","sys-distro":"Debian","app-version":"24.01.1","tags":"D W","comments":"weekly"}"#,
    )
    .unwrap();
    let rows = snapshot_rows(d, true);
    let snapper = &row(&rows, "./root/.snapshots/42/snapshot")["layout"];
    assert_eq!(snapper["tool"], "snapper", "{rows:?}");
    assert_eq!(snapper["number"], 42);
    assert_eq!(snapper["date"], 1709622489);
    assert_eq!(snapper["description"], "before the upgrade");
    assert_eq!(snapper["tags"], serde_json::json!(["single", "number"]));
    let timeshift = &row(&rows, "./timeshift-btrfs/snapshots/2024-03-06_10-00-00/@")["layout"];
    assert_eq!(timeshift["tool"], "timeshift", "{rows:?}");
    assert_eq!(timeshift["date"], 1709719200);
    assert_eq!(timeshift["tags"], serde_json::json!(["daily", "weekly"]));
    assert_eq!(timeshift["description"], "weekly");
    assert_eq!(timeshift["subvolume"], "@");
    assert!(row(&rows, "./root").get("layout").is_none(), "{rows:?}");
    let out = sdu_in(d, true, &["--snapshots", "."]);
    let table = out.stdout_str();
    assert!(
        table.contains("[snapper #42 single number: before the upgrade]")
            && table.contains("[timeshift daily weekly: weekly]"),
        "{table}"
    );
}

/// The paths and `field` of the rows of `sdu --snapshots --json ARGS .`
/// run as root in `d`, and the document's `origins`.
fn chosen(d: &Path, args: &[&str], field: &str) -> (Vec<(String, u64)>, Vec<Value>) {
    let mut all = vec!["--snapshots", "--json"];
    all.extend_from_slice(args);
    all.push(".");
    let out = sdu_in(d, true, &all);
    assert_eq!(out.code, Some(0), "{out:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = doc["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let p = r["path"].as_str().unwrap().to_owned();
            (p, r[field].as_u64().unwrap())
        })
        .collect();
    (rows, doc["origins"].as_array().unwrap().clone())
}

/// `--sort`, `--top` and `--min-size` choose among each origin's
/// snapshots as elsewhere: by Frees alone without `--sort`, by the
/// `--sort` figure with it; the origin's row heads its group whatever
/// they leave out, a line says how many they left out, and the footer
/// (and `origins` in `--json`) still covers every snapshot.
#[test]
fn sort_top_and_min_size_choose_within_each_origin() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    build(d);
    let (all, origins) = chosen(d, &[], "frees_alone");
    let of = |p: &str| all.iter().find(|(q, _)| q == p).unwrap().1;
    let live: Vec<(String, u64)> = (1..=6)
        .map(|n| format!("./snaps/{n}"))
        .map(|p| (p.clone(), of(&p)))
        .collect();
    // Largest first, ties oldest first (a stable sort of the age order).
    let mut by_size = live.clone();
    by_size.sort_by_key(|b| std::cmp::Reverse(b.1));
    let frees_all = origins.iter().find(|o| o["path"] == "./live").unwrap()["frees_all"].clone();
    assert!(frees_all.as_u64().unwrap() > 0, "{origins:?}");

    // --top 2: the two that free most alone, largest first, in each origin.
    let (rows, origins) = chosen(d, &["--top", "2"], "frees_alone");
    let paths: Vec<&str> = rows.iter().map(|(p, _)| p.as_str()).collect();
    let at = paths.iter().position(|p| *p == "./live").unwrap();
    assert_eq!(paths[at + 1], by_size[0].0, "{rows:?}");
    assert_eq!(paths[at + 2], by_size[1].0, "{rows:?}");
    assert_eq!(
        paths.iter().filter(|p| p.starts_with("./snaps/")).count(),
        2
    );
    assert_eq!(
        paths.iter().filter(|p| p.starts_with("./osnaps/")).count(),
        2
    );
    let live_origin = origins.iter().find(|o| o["path"] == "./live").unwrap();
    assert_eq!(live_origin["not_shown"], 4, "{origins:?}");
    assert_eq!(live_origin["snapshots"], 6, "{origins:?}");
    assert_eq!(live_origin["frees_all"], frees_all, "{origins:?}");

    // --min-size: those under it left out, the rest oldest first.
    // snaps/3 alone holds data no other subvolume holds.
    let cut = by_size[0].1;
    assert!(cut > 0 && by_size[5].1 < cut, "{by_size:?}");
    let size = cut.to_string();
    let (rows, origins) = chosen(d, &["--min-size", &size], "frees_alone");
    let kept: Vec<&(String, u64)> = rows
        .iter()
        .filter(|(p, _)| p.starts_with("./snaps/"))
        .collect();
    let want: Vec<&(String, u64)> = live.iter().filter(|(_, v)| *v >= cut).collect();
    assert_eq!(kept, want, "{rows:?}");
    assert!(rows.iter().any(|(p, _)| p == "./live"), "{rows:?}");
    let live_origin = origins.iter().find(|o| o["path"] == "./live").unwrap();
    assert_eq!(live_origin["not_shown"], 6 - want.len(), "{origins:?}");
    assert_eq!(live_origin["frees_all"], frees_all, "{origins:?}");
    let out = sdu_in(d, true, &["--snapshots", "-B1", "--min-size", &size, "."]);
    out.assert_ok();
    let text = out.stdout_str();
    assert!(
        text.contains(&format!(
            "  {} snapshots not shown: Frees alone under {cut}\n",
            6 - want.len()
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("every snapshot (6) frees {}", frees_all)),
        "{text}"
    );

    // --sort total --reverse: smallest Total first; --sort name: by path.
    let (rows, _) = chosen(d, &["--sort", "total", "--reverse"], "total");
    let totals: Vec<u64> = rows
        .iter()
        .filter(|(p, _)| p.starts_with("./snaps/"))
        .map(|r| r.1)
        .collect();
    assert_eq!(totals.len(), 6, "{rows:?}");
    assert!(totals.windows(2).all(|w| w[0] <= w[1]), "{rows:?}");
    let (rows, _) = chosen(d, &["--sort", "name", "--reverse"], "total");
    let names: Vec<&str> = rows
        .iter()
        .filter(|(p, _)| p.starts_with("./snaps/"))
        .map(|r| r.0.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "./snaps/6",
            "./snaps/5",
            "./snaps/4",
            "./snaps/3",
            "./snaps/2",
            "./snaps/1"
        ]
    );
    // --top with the table: the line for the rest.
    let out = sdu_in(d, true, &["--snapshots", "--top", "1", "."]);
    out.assert_ok();
    let text = out.stdout_str();
    assert!(
        text.contains("  5 snapshots not shown: beyond --top 1\n"),
        "{text}"
    );
    assert!(
        text.contains("  1 snapshot not shown: beyond --top 1\n"),
        "{text}"
    );
}
