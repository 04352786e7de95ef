//! The sharing figures (`exclusive`, `shared`, `reclaimable`) on trees
//! built with known sharing:
//!
//! - `xfs`: an XFS tree checked to the byte against `model`, a block-level
//!   model of what was written and cloned, and XFS's allocation groups;
//! - `btrfs`: a Btrfs tree checked against `btrfs filesystem du`;
//! - `determinism`: the same figures at every thread count, in every run,
//!   and down the walk's lean path and its general path, on each kind;
//! - `spill`: the index of shared extents spilled past `--index-memory`;
//! - `unshared`: filesystems that cannot share (ext4, tmpfs).
//!
//! Here: writing and cloning data, and the invariants that hold on every
//! entry of every tree.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::File;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::args;
use crate::json::{Entry, Report};
use crate::util::*;

pub(crate) mod btrfs;
mod determinism;
mod model;
mod spill;
mod unshared;
mod xfs;

/// The block size of the XFS images (mkfs.xfs's default for a 512 MiB
/// image); every offset and length in the XFS tree is a multiple of it.
const BLK: u64 = 4096;

/// `n` bytes nobody else writes: each call continues a fresh xorshift
/// stream, so no two writes of the whole test binary are alike (nothing to
/// compress or dedupe behind the model's back).
fn fresh_bytes(n: usize) -> Vec<u8> {
    static SEED: AtomicU64 = AtomicU64::new(1);
    let mut x = SEED
        .fetch_add(1, Ordering::Relaxed)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        | 1;
    let mut v = Vec::with_capacity(n + 8);
    while v.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(n);
    v
}

/// `xfs_io -f -c "reflink SRC SOFF DOFF LEN" DST` (FICLONERANGE: rustix
/// has no wrapper and `unsafe` is denied, tests included). Byte offsets.
fn clone_range(src: &Path, soff: u64, dst: &Path, doff: u64, len: u64) {
    run(Command::new("xfs_io")
        .arg("-f")
        .arg("-c")
        .arg(format!("reflink {} {soff} {doff} {len}", src.display()))
        .arg(dst))
    .assert_ok();
}

/// A whole-file clone (FICLONE) of `src` as the new file `dst`.
fn clone_file(src: &Path, dst: &Path) {
    let s = File::open(src).unwrap();
    let d = File::create_new(dst).unwrap_or_else(|e| panic!("{}: {e}", dst.display()));
    rustix::fs::ioctl_ficlone(&d, &s)
        .unwrap_or_else(|e| panic!("FICLONE {} -> {}: {e}", src.display(), dst.display()));
}

fn cp_reflink(src: &Path, dst: &Path) {
    run(Command::new("cp").arg("--reflink=always").arg(src).arg(dst)).assert_ok();
}

fn table(other: &str, rows: &[(String, &str, u64, u64)]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let w = rows.iter().map(|r| r.0.len()).max().unwrap().max(4);
    let mut t = format!(
        "{} mismatches:\n{:w$}  {:>13}  {:>10}  {:>10}  {:>10}\n",
        rows.len(),
        "path",
        "figure",
        "sdu",
        other,
        "sdu-".to_owned() + other
    );
    for (p, fig, s, m) in rows {
        let _ = writeln!(
            t,
            "{p:w$}  {fig:>13}  {s:>10}  {m:>10}  {:>10}",
            *s as i128 - *m as i128
        );
    }
    t
}

/// `sdu --json --stats ARGS`: the report and the stats on stderr.
fn sdu_json_stats(args: &[std::ffi::OsString]) -> (Report, String) {
    let mut a = args!["--json", "--stats"];
    a.extend_from_slice(args);
    let out = sdu(&a);
    assert_eq!(out.code, Some(0), "{out:?}");
    let r = crate::json::parse(&out.stdout);
    assert_eq!(r.error_count, 0, "{out:?}");
    (r, out.stderr)
}

/// What holds on every entry of every tree (see docs/figures.md, "Invariants"):
/// `exclusive + shared ≤ total` (the shared union is at most the sum over
/// files of their shared bytes, which is `total − exclusive`), so also
/// `exclusive ≤ total`; nothing shared exactly when `exclusive == total`;
/// `reclaimable ≤ exclusive + shared`; and every figure of a directory is
/// at least its child's (a unit or inode contained in the child is
/// contained in the parent; the shared union only grows).
fn assert_invariants(report: &Report) {
    let mut bad = String::new();
    let by_path: HashMap<&Path, &Entry> = report
        .entries
        .iter()
        .map(|e| (Path::new(&e.path), e))
        .collect();
    for e in &report.entries {
        let p = Path::new(&e.path).display();
        if e.exclusive > e.total {
            let _ = writeln!(bad, "{p}: exclusive {} > total {}", e.exclusive, e.total);
        }
        if e.exclusive + e.shared > e.total {
            let _ = writeln!(
                bad,
                "{p}: exclusive {} + shared {} > total {}",
                e.exclusive, e.shared, e.total
            );
        }
        if (e.shared == 0) != (e.exclusive == e.total) {
            let _ = writeln!(
                bad,
                "{p}: shared {} but total - exclusive = {}",
                e.shared,
                e.total - e.exclusive.min(e.total)
            );
        }
        if e.reclaimable > e.exclusive + e.shared {
            let _ = writeln!(
                bad,
                "{p}: reclaimable {} > exclusive {} + shared {}",
                e.reclaimable, e.exclusive, e.shared
            );
        }
        if e.depth == 0 {
            continue;
        }
        let Some(parent) = Path::new(&e.path).parent().and_then(|q| by_path.get(q)) else {
            let _ = writeln!(bad, "{p}: parent not reported");
            continue;
        };
        for (fig, c, q) in [
            ("total", e.total, parent.total),
            ("exclusive", e.exclusive, parent.exclusive),
            ("shared", e.shared, parent.shared),
            ("reclaimable", e.reclaimable, parent.reclaimable),
        ] {
            if c > q {
                let _ = writeln!(bad, "{p}: {fig} {c} > its parent's {q}");
            }
        }
    }
    assert!(bad.is_empty(), "invariants broken:\n{bad}");
}

/// `sdu --json -a ROOT` gives the same bytes with 1, 2 and 8 threads, three
/// runs each; returns the report.
fn assert_deterministic(root: &Path) -> Report {
    let (first, report) = sdu_json_raw_compressed(&args!["-a", "-j1", root]);
    for j in ["-j1", "-j2", "-j8"] {
        for run in 0..3 {
            let (out, r) = sdu_json_raw_compressed(&args!["-a", j, root]);
            if out != first {
                let diff: Vec<String> = r
                    .entries
                    .iter()
                    .zip(&report.entries)
                    .filter(|(a, b)| a != b)
                    .take(10)
                    .map(|(a, b)| format!("  {j}: {a:?}\n  -j1: {b:?}"))
                    .collect();
                panic!(
                    "`sdu --json -a {j}` run {run} differs from the first -j1 run \
                     ({} vs {} entries); first differences:\n{}",
                    r.entries.len(),
                    report.entries.len(),
                    diff.join("\n")
                );
            }
        }
    }
    report
}
