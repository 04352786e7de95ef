//! Races: a mutator creating, deleting, renaming and rewriting under the
//! walk, and a file replaced between its statx and its FIEMAP.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::{clone_file, env_u64, sdu_checked, xfs};
use crate::args;
use crate::util::*;

/// A mutator that creates, deletes, renames and rewrites files and
/// directories (and swaps reflinked files in) under `root` until stopped.
fn mutate(root: &Path, dirs: usize, seed: &Path, stop: &AtomicBool, ops: &AtomicU64) {
    let d = |k: usize| root.join(format!("d{:02}", k % dirs));
    let mut created: std::collections::VecDeque<PathBuf> = Default::default();
    let mut subs: std::collections::VecDeque<PathBuf> = Default::default();
    let mut i = 0usize;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        let k = i % dirs;
        match i % 7 {
            // Create a file; delete old ones.
            0 => {
                let p = d(k).join(format!("new{i}"));
                let _ = fs::write(&p, vec![7u8; 4096 * (1 + i % 3)]);
                created.push_back(p);
                while created.len() > 40 {
                    let _ = fs::remove_file(created.pop_front().unwrap());
                }
            }
            // Move a file to the next directory and back.
            1 => {
                let name = format!("f{:03}", i % 50);
                let (a, b) = (d(k).join(&name), d(k + 1).join(format!("moved{k}")));
                if fs::rename(&a, &b).is_ok() {
                    let _ = fs::rename(&b, &a);
                }
            }
            // A subdirectory with files appears; old ones are removed.
            2 => {
                let s = d(k).join(format!("sub{i}"));
                if fs::create_dir(&s).is_ok() {
                    for j in 0..3 {
                        let _ = fs::write(s.join(format!("g{j}")), vec![1u8; 5000]);
                    }
                    subs.push_back(s);
                }
                while subs.len() > 6 {
                    let _ = fs::remove_dir_all(subs.pop_front().unwrap());
                }
            }
            // Rewrite a file in place with another size.
            3 => {
                let p = d(k).join(format!("f{:03}", (i / 7) % 50));
                if let Ok(mut f) = fs::OpenOptions::new().write(true).truncate(true).open(&p) {
                    let _ = f.write_all(&vec![3u8; 1 + (i * 7919) % 40_000]);
                }
            }
            // Replace a file by a reflinked copy (rename over it).
            4 => {
                let tmp = d(k).join(format!(".tmp{i}"));
                if clone_file(seed, &tmp).is_ok() {
                    let _ = fs::rename(&tmp, d(k).join(format!("f{:03}", (i / 7) % 50)));
                }
            }
            // Rename a directory across parents.
            5 => {
                if let Some(s) = subs.back().cloned() {
                    let to = d(k + 3).join(s.file_name().unwrap());
                    if fs::rename(&s, &to).is_ok() {
                        *subs.back_mut().unwrap() = to;
                    }
                }
            }
            // Replace a subdirectory by a file of the same name, and back.
            _ => {
                let p = d(k).join("flip");
                if fs::create_dir(&p).is_ok() {
                    let _ = fs::write(p.join("in"), b"x");
                    let _ = fs::remove_dir_all(&p);
                    let _ = fs::write(&p, b"now a file");
                } else {
                    let _ = fs::remove_file(&p);
                }
            }
        }
        ops.fetch_add(1, Ordering::Relaxed);
    }
}

/// 200 runs of sdu over a ~2,000-entry reflink XFS tree while a mutator
/// rewrites it: no crash, no hang, exit 0 or 1, valid JSON, invariants on
/// every entry, and no message about a vanished entry.
#[test]
fn races_with_a_mutator_keep_figures_consistent() {
    let Some(l) = xfs() else { return };
    let root = l.path().join("tree");
    fs::create_dir(&root).unwrap();
    let seed = l.path().join("seed");
    write_file(&seed, 64 * 1024);
    let dirs = 40;
    for k in 0..dirs {
        let d = root.join(format!("d{k:02}"));
        fs::create_dir(&d).unwrap();
        for f in 0..50 {
            let p = d.join(format!("f{f:03}"));
            if f % 5 == 0 {
                clone_file(&seed, &p).unwrap();
            } else {
                write_file(&p, 100 + (f * 977) % 20_000);
            }
        }
    }
    let iters = env_u64("SDU_RACE_ITERS", 200);
    let stop = Arc::new(AtomicBool::new(false));
    let ops = Arc::new(AtomicU64::new(0));
    let mutator = {
        let (root, seed, stop, ops) = (root.clone(), seed.clone(), stop.clone(), ops.clone());
        std::thread::spawn(move || mutate(&root, dirs, &seed, &stop, &ops))
    };
    let mut messages: BTreeMap<String, u64> = BTreeMap::new();
    let mut failures = Vec::new();
    for i in 0..iters {
        let mut a = args!["-a"];
        if i % 4 == 3 {
            a.push("-j1".into());
        }
        a.push(root.clone().into());
        let r = std::panic::catch_unwind(|| sdu_checked(&a, 60));
        match r {
            Ok((_, stderr)) => {
                for line in stderr.lines() {
                    if line.contains("No such file or directory") {
                        failures.push(format!("run {i}: a vanished entry was reported: {line}"));
                    }
                    // The message without its path, for the summary.
                    let kind = line.rsplit(": ").next().unwrap_or(line).to_owned();
                    *messages.entry(kind).or_default() += 1;
                }
            }
            Err(e) => {
                let msg = e
                    .downcast_ref::<String>()
                    .cloned()
                    .unwrap_or_else(|| "panic".into());
                failures.push(format!("run {i}: {msg}"));
            }
        }
        if failures.len() >= 3 {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    mutator.join().unwrap();
    eprintln!(
        "races: {iters} runs, {} mutations, messages: {messages:?}",
        ops.load(Ordering::Relaxed)
    );
    assert!(
        ops.load(Ordering::Relaxed) > iters,
        "the mutator hardly ran"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A name that flips between two inodes (a 256 KiB reflinked clone, all
/// shared, and an 8 KiB unshared file) by rename in a tight loop: every
/// run's figures for it come from one of the two, never a mix (statx of
/// one, FIEMAP of the other).
#[test]
fn file_replaced_between_statx_and_fiemap_gives_one_inodes_figures() {
    let Some(l) = xfs() else { return };
    let seed = l.path().join("seed");
    write_file(&seed, 256 * 1024);
    sync_fs(l.path());
    let dir = l.path().join("sw");
    fs::create_dir(&dir).unwrap();
    let x = dir.join("x");
    fs::write(&x, vec![9u8; 8192]).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flips = Arc::new(AtomicU64::new(0));
    let mutator = {
        let (dir, seed, stop, flips) = (dir.clone(), seed.clone(), stop.clone(), flips.clone());
        std::thread::spawn(move || {
            let tmp = dir.join(".tmp");
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                let made = if i % 2 == 0 {
                    clone_file(&seed, &tmp)
                } else {
                    fs::write(&tmp, vec![9u8; 8192]).and_then(|()| File::open(&tmp)?.sync_all())
                };
                if made.is_ok() && fs::rename(&tmp, dir.join("x")).is_ok() {
                    flips.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    };
    let iters = env_u64("SDU_REPLACE_ITERS", 300);
    let mut seen = BTreeMap::new();
    let mut bad = Vec::new();
    for _ in 0..iters {
        let (r, stderr) = sdu_checked(&args!["-a", &dir], 30);
        assert!(
            !stderr.contains("No such file"),
            "vanished .tmp reported: {stderr}"
        );
        let Some(e) = r.entries.iter().find(|e| e.path == x) else {
            bad.push("x missing from the report".to_owned());
            continue;
        };
        let clone = e.total == 256 * 1024 && e.shared == e.total && e.exclusive == 0;
        let plain = e.shared == 0 && e.exclusive == e.total && e.total < 64 * 1024;
        *seen
            .entry(if clone { "clone" } else { "plain" })
            .or_insert(0) += 1;
        if !clone && !plain {
            bad.push(format!("{e:?}"));
        }
    }
    stop.store(true, Ordering::Relaxed);
    mutator.join().unwrap();
    eprintln!(
        "replace: {iters} runs, {} flips, {seen:?}",
        flips.load(Ordering::Relaxed)
    );
    assert!(
        bad.is_empty(),
        "figures mixed from two inodes:\n{}",
        bad.join("\n")
    );
}
