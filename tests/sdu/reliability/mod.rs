//! Reliability: races with a mutator, permissions, hostile trees, resource
//! limits, signals, and what sdu must never do (follow a symlink, block on
//! a FIFO, change an atime). See docs/SECURITY.md for the threat model
//! these tests hold sdu to.
//!
//! Most trees live on a reflink XFS loopback, so that FIEMAP runs on every
//! file with blocks: the races and the permission checks then reach the
//! open + FIEMAP path, not only statx.
//!
//! - `races`: a mutator changing the tree under the walk;
//! - `permissions`: unreadable entries, as `nobody`;
//! - `hostile_trees`: symlink loops, bind mounts, 100,000 extents, hostile
//!   names, /proc and /sys;
//! - `resources`: fd and address-space limits, SIGINT;
//! - `security`: FIFOs and devices swapped in, atimes, symlinks out.
//!
//! Here: the XFS loopback and the checks every run must pass.

use std::ffi::OsString;
use std::fs::File;
use std::path::Path;
use std::process::Command;

use crate::args;
use crate::json::{self, Report};
use crate::util::*;

mod depth;
mod hostile_trees;
mod permissions;
mod races;
mod reopen;
mod resources;
mod roots;
mod security;

/// A reflink XFS loopback whose mount directory (and the private temp dir
/// above it) `nobody` may traverse.
fn xfs() -> Option<LoopFs> {
    let l = LoopFs::new(FsKind::Xfs)?;
    chmod(l.path().parent().unwrap(), 0o755);
    chmod(l.path(), 0o755);
    Some(l)
}

/// `dst` as a reflinked copy of `src` (FICLONE): all its blocks shared.
fn clone_file(src: &Path, dst: &Path) -> std::io::Result<()> {
    let s = File::open(src)?;
    let d = File::create(dst)?;
    rustix::fs::ioctl_ficlone(&d, &s).map_err(std::io::Error::from)
}

/// The invariants every entry of every run must satisfy, whatever the
/// tree did meanwhile (docs/figures.md, "Invariants"): a list of violations.
fn invariant_violations(r: &Report) -> Vec<String> {
    let mut bad = Vec::new();
    for e in &r.entries {
        let p = e.path.to_string_lossy();
        if e.exclusive > e.total {
            bad.push(format!(
                "{p}: exclusive {} > total {}",
                e.exclusive, e.total
            ));
        }
        if e.shared > e.total - e.exclusive.min(e.total) {
            bad.push(format!(
                "{p}: shared {} > total {} - exclusive {}",
                e.shared, e.total, e.exclusive
            ));
        }
        if u128::from(e.reclaimable) > u128::from(e.exclusive) + u128::from(e.shared) {
            bad.push(format!(
                "{p}: reclaimable {} > exclusive {} + shared {}",
                e.reclaimable, e.exclusive, e.shared
            ));
        }
    }
    bad
}

/// Runs `sdu --json ARGS` and checks what any run must give: it ends
/// within `secs`, exits 0 or 1, prints one valid document (whose error
/// count agrees with the exit status) and every entry keeps the
/// invariants. Returns the report and stderr.
fn sdu_checked(args: &[OsString], secs: u64) -> (Report, String) {
    let mut a = args!["--json"];
    a.extend_from_slice(args);
    let out = run_with_timeout(Command::new(sdu_bin()).args(&a), secs);
    assert!(
        matches!(out.code, Some(0 | 1)),
        "sdu did not exit 0 or 1: {out:?}"
    );
    let r = json::parse(&out.stdout);
    assert_eq!(
        r.error_count > 0,
        out.code == Some(1),
        "exit status disagrees with the error count: {out:?}"
    );
    let bad = invariant_violations(&r);
    assert!(
        bad.is_empty(),
        "invariants broken:\n{}\n{out:?}",
        bad.join("\n")
    );
    (r, out.stderr)
}

fn sdu_as_nobody(args: &[OsString], secs: u64) -> Output {
    run_with_timeout(
        Command::new("setpriv")
            .args(nobody_args())
            .arg(sdu_bin())
            .args(args),
        secs,
    )
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}
