//! std + rayon, the way diskus walks: `fs::symlink_metadata(path)` for each
//! path, `fs::read_dir` for directories, children handed to rayon
//! (`par_iter`). `--dirent` uses `DirEntry::metadata()` (fstatat relative to
//! the open directory) instead of the full-path stat.
use rayon::prelude::*;
use sdu_bench_walkers::{Stat, args};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

struct Acc {
    bytes: AtomicU64,
    entries: AtomicU64,
    errors: AtomicU64,
    seen: Mutex<HashSet<(u64, u64)>>,
    dirent: bool,
}

impl Acc {
    fn add(&self, s: &Stat) {
        self.entries.fetch_add(1, Relaxed);
        if s.multi_link() && !self.seen.lock().unwrap().insert((s.dev, s.ino)) {
            return;
        }
        self.bytes.fetch_add(s.blocks * 512, Relaxed);
    }
}

fn walk_dir(acc: &Acc, dir: PathBuf) {
    let rd = match std::fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(_) => {
            acc.errors.fetch_add(1, Relaxed);
            return;
        }
    };
    let mut subdirs = Vec::new();
    for e in rd {
        let Ok(e) = e else {
            acc.errors.fetch_add(1, Relaxed);
            continue;
        };
        let m = if acc.dirent { e.metadata() } else { std::fs::symlink_metadata(e.path()) };
        match m {
            Ok(m) => {
                let s = Stat::from_std(&m);
                acc.add(&s);
                if s.is_dir {
                    subdirs.push(e.path());
                }
            }
            Err(_) => {
                acc.errors.fetch_add(1, Relaxed);
            }
        }
    }
    subdirs.into_par_iter().for_each(|d| walk_dir(acc, d));
}

fn main() {
    let a = args();
    let acc = Acc {
        bytes: AtomicU64::new(0),
        entries: AtomicU64::new(0),
        errors: AtomicU64::new(0),
        seen: Mutex::new(HashSet::new()),
        dirent: a.flags.iter().any(|f| f == "--dirent"),
    };
    rayon::ThreadPoolBuilder::new().num_threads(a.threads).build_global().unwrap();
    match std::fs::symlink_metadata(&a.root) {
        Ok(m) => {
            let s = Stat::from_std(&m);
            acc.add(&s);
            if s.is_dir {
                walk_dir(&acc, a.root.clone());
            }
        }
        Err(e) => {
            eprintln!("walk-std: {}: {e}", a.root.display());
            std::process::exit(1)
        }
    }
    println!("{} bytes {} entries", acc.bytes.load(Relaxed), acc.entries.load(Relaxed));
    let errors = acc.errors.load(Relaxed);
    if errors > 0 {
        eprintln!("walk-std: {errors} errors");
        std::process::exit(1)
    }
}
