//! Property: random snapshot histories on Btrfs, read by `sdu --snapshots`
//! and planned by `--to-free SIZE --oldest-first` / `--newest-first`, then
//! deleted and measured. Each seed draws
//!
//! - the mount: `max_inline=0`, compressed (`compress=zstd:3`, half the
//!   new files compressible text) or not;
//! - one or two origins, each with 3 to 6 snapshots (one in five
//!   writable), and between two snapshots one to four changes: a new file,
//!   a file deleted, a range rewritten in place, an append, a whole-file
//!   reflink inside the origin, a file reflinked from one of its
//!   snapshots, a file written in a writable snapshot;
//! - three cases: one snapshot alone (`frees_alone`), an oldest-first
//!   range of one origin (`frees_with_older` of its newest), and a plan of
//!   one origin's snapshots (`--to-free SIZE` with SIZE drawn up to what
//!   they all free, oldest or newest first, the whole filesystem scanned
//!   beside them). Each run's plan is measured on what it chose (without
//!   root the figures, and so the set, may differ); where the snapshots
//!   together free nothing, sdu's refusal is checked by deleting them all;
//!   and the same SIZE planned by `--snapshots --to-free` among every
//!   snapshot of the filesystem (never an origin), measured likewise.
//!   The range is also read as root with the origin alone as PATH, its
//!   snapshots reached through the top level (`<FS_TREE>/...`).
//!
//! Each case is measured on the same saved image: its subvolumes deleted,
//! the cleaner waited for, Data Used's drop. No file is inline
//! (`max_inline=0`), so Data Used drops by exactly what deleting frees. As
//! root each figure is exact and equal; without `CAP_SYS_ADMIN` equal or
//! marked in a direction that holds. A plan also takes its candidates in
//! their order of age and stops at the first that reaches SIZE.
//!
//! `SDU_SNAPSHOT_SEEDS=A-B` (or `N`: 1 to N) runs those seeds instead of
//! the default ones; a failure prints each seed's history.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use super::build::Rng;
use crate::util::*;

/// The seeds run by default, split between the two tests.
const SEEDS: u64 = 8;

const K: u64 = 1024;

/// A random history, as built.
struct History<'a> {
    t: &'a Path,
    rng: Rng,
    /// Per origin, its snapshots oldest first, and which are writable.
    origins: Vec<(String, Vec<(String, bool)>)>,
    /// The files of each origin, by name.
    files: Vec<Vec<String>>,
    log: Vec<String>,
    n: u32,
    /// Whether the mount compresses: then half the new files are text.
    compress: bool,
}

impl History<'_> {
    fn size(&mut self) -> u64 {
        (1 + self.rng.below(64)) * 4 * K * (1 + self.rng.below(2) * 3)
    }

    /// A new file `rel` of `n` bytes under `root`: fresh bytes, or on a
    /// compressed mount text half the time. The log's word for it.
    fn new_file(&mut self, root: &Path, rel: &str, n: u64) -> &'static str {
        if self.compress && self.rng.chance(1, 2) {
            let mut f = std::fs::File::create_new(root.join(rel)).unwrap();
            let seed = self.rng.next() as u32;
            std::io::Write::write_all(&mut f, &crate::btrfs::text(n as usize, seed)).unwrap();
            f.sync_all().unwrap();
            return "text";
        }
        Tree { root }.write(rel, n);
        "write"
    }

    fn new_name(&mut self) -> String {
        self.n += 1;
        format!("f{}", self.n)
    }

    /// One change of origin `o`.
    fn change(&mut self, o: usize) {
        let name = self.origins[o].0.clone();
        let root = self.t.join(&name);
        let t = Tree { root: &root };
        let files = self.files[o].clone();
        let snaps = self.origins[o].1.clone();
        // Weights: a new file 3, a deletion 2, a rewrite 2, the others 1.
        let op = [0, 0, 0, 1, 1, 2, 2, 3, 4, 5, 6][self.rng.below(11) as usize];
        match op {
            1 if files.len() > 1 => {
                let f = self.rng.pick_s(&files);
                std::fs::remove_file(t.p(&f)).unwrap();
                self.files[o].retain(|x| *x != f);
                self.log.push(format!("rm {name}/{f}"));
            }
            2 if !files.is_empty() => {
                let f = self.rng.pick_s(&files);
                let len = std::fs::metadata(t.p(&f)).unwrap().len() / (4 * K);
                let off = self.rng.below(len) * 4 * K;
                let n = (1 + self.rng.below(len - off / (4 * K))) * 4 * K;
                t.overwrite(&f, off, n);
                self.log.push(format!("rewrite {name}/{f} {off}+{n}"));
            }
            3 if !files.is_empty() => {
                let f = self.rng.pick_s(&files);
                let len = std::fs::metadata(t.p(&f)).unwrap().len();
                let n = self.size();
                t.overwrite(&f, len, n);
                self.log.push(format!("append {name}/{f} {n}"));
            }
            4 if !files.is_empty() => {
                let (f, g) = (self.rng.pick_s(&files), self.new_name());
                t.clone(&f, &g);
                self.files[o].push(g.clone());
                self.log.push(format!("reflink {name}/{f} {name}/{g}"));
            }
            5 if !snaps.is_empty() => {
                let s = self.rng.pick(&snaps).0.clone();
                let theirs: Vec<String> = std::fs::read_dir(self.t.join(&s))
                    .unwrap()
                    .map(|e| e.unwrap().file_name().into_string().unwrap())
                    .collect();
                if theirs.is_empty() {
                    return;
                }
                let (f, g) = (self.rng.pick_s(&theirs), self.new_name());
                let src = std::fs::File::open(self.t.join(&s).join(&f)).unwrap();
                let dst = std::fs::File::create_new(t.p(&g)).unwrap();
                rustix::fs::ioctl_ficlone(&dst, &src).unwrap();
                self.files[o].push(g.clone());
                self.log.push(format!("reflink {s}/{f} {name}/{g}"));
            }
            6 if snaps.iter().any(|s| s.1) => {
                let w: Vec<String> = snaps.iter().filter(|s| s.1).map(|s| s.0.clone()).collect();
                let s = self.rng.pick_s(&w);
                let (g, n) = (self.new_name(), self.size());
                let w = self.new_file(&self.t.join(&s), &g, n);
                self.log.push(format!("{w} {s}/{g} {n}"));
            }
            _ => {
                let (g, n) = (self.new_name(), self.size());
                let w = self.new_file(&root, &g, n);
                self.files[o].push(g.clone());
                self.log.push(format!("{w} {name}/{g} {n}"));
            }
        }
    }

    fn snapshot(&mut self, o: usize) {
        let name = self.origins[o].0.clone();
        let k = self.origins[o].1.len() + 1;
        let rel = format!("s{o}/{k}");
        let writable = self.rng.chance(1, 5);
        sync_fs(self.t);
        let mut c = Command::new("btrfs");
        c.args(["subvolume", "snapshot"]);
        if !writable {
            c.arg("-r");
        }
        run(c.arg(self.t.join(&name)).arg(self.t.join(&rel))).assert_ok();
        self.origins[o].1.push((rel.clone(), writable));
        let ro = if writable { "" } else { " -r" };
        self.log.push(format!("snapshot{ro} {name} {rel}"));
    }
}

fn build(d: &Path, seed: u64, compress: bool) -> History<'_> {
    let mut h = History {
        compress,
        t: d,
        rng: Rng::new(seed ^ 0x736e_6170),
        origins: Vec::new(),
        files: Vec::new(),
        log: Vec::new(),
        n: 0,
    };
    let n = 1 + h.rng.below(2) as usize;
    for o in 0..n {
        let name = format!("o{o}");
        btrfs(&["subvolume", "create"], &d.join(&name));
        std::fs::create_dir(d.join(format!("s{o}"))).unwrap();
        h.origins.push((name, Vec::new()));
        h.files.push(Vec::new());
        for _ in 0..2 + h.rng.below(3) {
            let (g, size) = (h.new_name(), h.size());
            let w = h.new_file(&d.join(format!("o{o}")), &g, size);
            h.log.push(format!("{w} o{o}/{g} {size}"));
            h.files[o].push(g);
        }
    }
    for o in 0..n {
        for _ in 0..3 + h.rng.below(4) {
            h.snapshot(o);
            for _ in 0..1 + h.rng.below(4) {
                h.change(o);
            }
        }
    }
    sync_fs(d);
    h
}

/// The snapshot rows of `sdu --snapshots --json .`, by path.
fn rows(d: &Path, root: bool) -> Result<Vec<Value>, String> {
    let out = sdu_in(d, root, &["--snapshots", "--json", "."]);
    if out.code != Some(0) {
        return Err(format!("{out:?}"));
    }
    let doc: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    Ok(doc["snapshots"].as_array().ok_or("no snapshots")?.clone())
}

/// A figure of `--snapshots`: the value of `field` in the row of `path`
/// and its bound (None when exact).
fn figure(rows: &[Value], path: &str, field: &str) -> Fig {
    // A PATH's subvolume is named from `.`, one reached through the top
    // level by its name there.
    let path = match path.starts_with("<FS_TREE>/") {
        true => path.to_owned(),
        false => format!("./{path}"),
    };
    let r = (rows.iter())
        .find(|r| r["path"] == path)
        .ok_or_else(|| format!("no row {path}"))?;
    let v = r[field]
        .as_u64()
        .ok_or_else(|| format!("no {field} in {r}"))?;
    let bound = r[format!("{field}_bound")].as_str().map(str::to_owned);
    let bound = match (bound, r["frees_exact"].as_bool()) {
        (Some(b), _) => Some(b),
        (None, Some(false)) => Some("unknown".to_owned()),
        _ => None,
    };
    Ok((v, bound))
}

/// A figure and its bound (None when exact), or what went wrong.
type Fig = Result<(u64, Option<String>), String>;

/// What is wrong with a figure against what deleting freed, if anything.
fn verdict(root: bool, (v, bound): &(u64, Option<String>), freed: u64) -> Option<String> {
    match bound.as_deref() {
        None if *v == freed => None,
        None => Some(format!("{v} unmarked, {freed} freed")),
        Some(b) if root => Some(format!("{v} marked {b} as root, {freed} freed")),
        Some("at_most") if *v < freed => Some(format!("at most {v}, {freed} freed")),
        Some("at_least") if *v > freed => Some(format!("at least {v}, {freed} freed")),
        Some(_) => None,
    }
}

/// `sdu --json --to-free SIZE ORDER . SNAPS...` in `d`.
fn plan(d: &Path, root: bool, size: u64, order: &str, snaps: &[String]) -> Result<Value, String> {
    let mut a = vec!["--json", "--to-free"];
    let size = size.to_string();
    a.extend([size.as_str(), order, "."]);
    a.extend(snaps.iter().map(String::as_str));
    let out = sdu_in(d, root, &a);
    if out.code != Some(0) {
        return Err(format!("{out:?}"));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
}

/// Whether plan `doc` took `snaps` (oldest first) in `order` and stopped
/// at the first that reaches `size`; the paths it chose.
fn plan_order(
    doc: &Value,
    snaps: &[String],
    size: u64,
    oldest: bool,
) -> Result<Vec<String>, String> {
    let chosen = doc["chosen"].as_array().ok_or("no chosen")?;
    let paths: Vec<String> = chosen
        .iter()
        .map(|s| s["path"].as_str().unwrap_or("?").to_owned())
        .collect();
    let mut want: Vec<String> = snaps.to_vec();
    if !oldest {
        want.reverse();
    }
    if paths[..] != want[..paths.len().min(want.len())] {
        return Err(format!("chose {paths:?}, not a prefix of {want:?}"));
    }
    let frees: Vec<u64> = chosen
        .iter()
        .map(|s| s["frees"].as_u64().unwrap_or(0))
        .collect();
    let reached = frees.last().is_some_and(|&f| f >= size);
    let early = frees.iter().rev().skip(1).any(|&f| f >= size);
    if early || (!reached && paths.len() < want.len()) {
        return Err(format!("stopped wrongly for {size}: {frees:?}"));
    }
    Ok(paths)
}

/// Deletes the subvolumes `rels` of `d`; Data Used's drop.
fn freed(d: &Path, rels: &[String]) -> u64 {
    let (before, _) = btrfs_used(d);
    for r in rels {
        btrfs(&["subvolume", "delete", "-C"], &d.join(r));
    }
    btrfs(&["subvolume", "sync"], d);
    before.saturating_sub(btrfs_used(d).0)
}

/// A case: its label, the subvolumes deleted, and each run's figure for
/// them (true: as root).
type Case = (String, Vec<String>, Vec<(bool, Fig)>);

/// One seed: its description, and what went wrong.
fn case(seed: u64) -> Option<(String, Vec<String>)> {
    let compress = Rng::new(seed ^ 0x7a73_7464).chance(1, 2);
    let mount = if compress {
        "max_inline=0,compress=zstd:3"
    } else {
        "max_inline=0"
    };
    let fs = Mounted::new(FsKind::Btrfs, mount)?;
    let d = fs.path().to_owned();
    let mut h = build(&d, seed, compress);
    fs.remount();
    let mut wrong = Vec::new();
    let scans: Vec<(bool, Result<Vec<Value>, String>)> = [true, false]
        .into_iter()
        .map(|r| (r, rows(&d, r)))
        .collect();
    let who = |root: bool| if root { "root" } else { "no cap" };
    // The cases: what is deleted, and each run's figure for it.
    let mut cases: Vec<Case> = Vec::new();
    let o = h.rng.below(h.origins.len() as u64) as usize;
    let snaps: Vec<String> = h.origins[o].1.iter().map(|s| s.0.clone()).collect();
    let all: Vec<String> = h
        .origins
        .iter()
        .flat_map(|o| &o.1)
        .map(|s| s.0.clone())
        .collect();
    let one = h.rng.pick_s(&all);
    let k = h.rng.below(snaps.len() as u64) as usize;
    for (field, path, dels) in [
        ("frees_alone", &one, vec![one.clone()]),
        ("frees_with_older", &snaps[k], snaps[..=k].to_vec()),
    ] {
        let figs = (scans.iter())
            .map(|(root, rows)| {
                let f = rows.as_ref().map_err(String::clone);
                (*root, f.and_then(|r| figure(r, path, field)))
            })
            .collect();
        cases.push((format!("{field} of {path}"), dels, figs));
    }
    // As root, the origin alone as PATH: its snapshots, outside it, are
    // reached through the top level (`<FS_TREE>/s{o}/k`), and the range
    // figure must be the one deleting them frees all the same.
    let top = (|| -> Result<Vec<Value>, String> {
        let out = sdu_in(&d, true, &["--snapshots", "--json", &h.origins[o].0]);
        if out.code != Some(0) {
            return Err(format!("{out:?}"));
        }
        let doc: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
        Ok(doc["snapshots"].as_array().ok_or("no snapshots")?.clone())
    })();
    let via_top = format!("<FS_TREE>/{}", snaps[k]);
    let fig = top.and_then(|r| figure(&r, &via_top, "frees_with_older"));
    if let Some(c) = cases.iter_mut().find(|c| c.1 == snaps[..=k]) {
        c.0.push_str(&format!(", and of {via_top} scanning {}", h.origins[o].0));
        c.2.push((true, fig));
    }
    // The plan, as root and without: each run's chosen set is deleted.
    let oldest = h.rng.chance(1, 2);
    let order = if oldest {
        "--oldest-first"
    } else {
        "--newest-first"
    };
    let first = plan(&d, true, 1, order, &snaps);
    let size = match &first {
        Ok(p) => 1 + h.rng.below(p["all"].as_u64().unwrap_or(0)),
        // Together they free nothing: the refusal, which deleting them
        // all checks.
        Err(e) if e.contains("together free 0 (0 bytes)") => {
            cases.push(("nothing".into(), snaps.clone(), vec![(true, Ok((0, None)))]));
            0
        }
        Err(e) => {
            wrong.push(format!("plan {order} 1 as root: {e}"));
            0
        }
    };
    for root in [true, false].into_iter().filter(|_| size > 0) {
        let p = plan(&d, root, size, order, &snaps);
        let label = format!("plan {order} {size} ({})", who(root));
        match p.and_then(|doc| Ok((plan_order(&doc, &snaps, size, oldest)?, doc))) {
            Ok((chosen, doc)) => {
                let bound = doc["reclaimable_bound"].as_str().map(str::to_owned);
                let exact = doc["reclaimable_exact"] == true;
                let bound = bound.or((!exact).then(|| "unknown".to_owned()));
                let fig = (doc["frees"].as_u64().unwrap_or(0), bound);
                if let Some(c) = cases
                    .iter_mut()
                    .find(|c| c.0.starts_with("plan") && c.1 == chosen)
                {
                    c.2.push((root, Ok(fig)));
                } else {
                    cases.push((label, chosen, vec![(root, Ok(fig))]));
                }
            }
            // Without root the plan may see less than SIZE (a bound).
            Err(e) if !root && e.contains("cannot free") => {}
            Err(e) => wrong.push(format!("{label}: {e}")),
        }
    }
    // The same SIZE planned among every snapshot the scan meets
    // (`--snapshots --to-free`): never an origin, and its figure deleted
    // and measured as the others.
    for root in [true, false].into_iter().filter(|_| size > 0) {
        let size = size.to_string();
        let args = ["--json", "--snapshots", "--to-free", &size, order, "."];
        let out = sdu_in(&d, root, &args);
        let label = format!("--snapshots plan {order} {size} ({})", who(root));
        if out.code != Some(0) {
            // Without root the plan may see less than SIZE (a bound).
            if root || !out.stderr.contains("cannot free") {
                wrong.push(format!("{label}: {out:?}"));
            }
            continue;
        }
        let doc: Value = match serde_json::from_slice(&out.stdout) {
            Ok(doc) => doc,
            Err(e) => {
                wrong.push(format!("{label}: {e}"));
                continue;
            }
        };
        let mut chosen: Vec<String> = (doc["chosen"].as_array().into_iter().flatten())
            .map(|c| {
                c["path"]
                    .as_str()
                    .unwrap_or("?")
                    .trim_start_matches("./")
                    .to_owned()
            })
            .collect();
        if let Some(c) = chosen.iter().find(|c| !all.contains(c)) {
            wrong.push(format!("{label}: chose {c}, not a snapshot"));
            continue;
        }
        chosen.sort();
        let bound = doc["reclaimable_bound"].as_str().map(str::to_owned);
        let exact = doc["reclaimable_exact"] == true;
        let bound = bound.or((!exact).then(|| "unknown".to_owned()));
        let fig = (doc["frees"].as_u64().unwrap_or(0), bound);
        match cases.iter_mut().find(|c| {
            let mut dels = c.1.clone();
            dels.sort();
            c.0.starts_with("--snapshots plan") && dels == chosen
        }) {
            Some(c) => c.2.push((root, Ok(fig))),
            None => cases.push((label, chosen, vec![(root, Ok(fig))])),
        }
    }
    let saved = d.parent().unwrap().join("saved.img");
    fs.unmounted(|img| {
        run(Command::new("cp")
            .arg("--sparse=always")
            .arg(img)
            .arg(&saved))
        .assert_ok();
    });
    let mut measured = Vec::new();
    for (i, (what, dels, figs)) in cases.iter().enumerate() {
        if i > 0 {
            fs.unmounted(|img| {
                run(Command::new("cp")
                    .arg("--sparse=always")
                    .arg(&saved)
                    .arg(img))
                .assert_ok();
            });
        }
        let got = freed(&d, dels);
        measured.push(format!("{what}: deleting {dels:?} freed {got}"));
        for (root, fig) in figs {
            let e = fig
                .as_ref()
                .map_or_else(|e| Some(e.clone()), |f| verdict(*root, f, got));
            if let Some(e) = e {
                wrong.push(format!("{what} ({}): {e}", who(*root)));
            }
        }
    }
    let _ = std::fs::remove_file(&saved);
    let text = format!(
        "seed {seed}: mount -o {mount}; {}\n  {}",
        h.log.join("; "),
        measured.join("\n  ")
    );
    Some((text, wrong))
}

fn seeds() -> Vec<u64> {
    let parse = |s: &str| s.trim().parse::<u64>().expect("a seed");
    match std::env::var("SDU_SNAPSHOT_SEEDS") {
        Ok(s) => match s.split_once('-') {
            Some((a, b)) => (parse(a)..=parse(b)).collect(),
            None => (1..=parse(&s)).collect(),
        },
        Err(_) => (1..=SEEDS).collect(),
    }
}

fn shard(k: u64) {
    let mut failed = String::new();
    for seed in seeds().into_iter().filter(|s| s % 2 == k) {
        let Some((text, wrong)) = case(seed) else {
            return;
        };
        println!("{text}");
        if !wrong.is_empty() {
            let _ = writeln!(failed, "{text}\n  wrong: {}\n", wrong.join("\n         "));
        }
    }
    assert!(failed.is_empty(), "random snapshot histories:\n{failed}");
}

#[test]
fn snapshots_random_deleted_and_measured_0() {
    shard(0);
}

#[test]
fn snapshots_random_deleted_and_measured_1() {
    shard(1);
}
