//! Shared bits for the walker binaries: argument parsing, hardlink-aware
//! accounting and the output line that scripts/bench compares with `du -s -B1`.
//!
//! Every walker prints `<bytes> bytes <entries> entries`, where bytes is
//! Σ st_blocks×512 over every entry including the root (as `du -s -B1`), an
//! inode with st_nlink > 1 (non-directory) counted once per (st_dev, st_ino).

use std::collections::HashSet;
use std::path::PathBuf;

pub struct Args {
    pub root: PathBuf,
    pub threads: usize,
    /// Walker-specific switches (anything starting with `--`).
    pub flags: Vec<String>,
}

pub fn args() -> Args {
    let mut threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut root = None;
    let mut flags = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        if a == "-j" {
            threads = it.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| usage());
        } else if let Some(n) = a.strip_prefix("-j") {
            threads = n.parse().unwrap_or_else(|_| usage());
        } else if a.starts_with("--") {
            flags.push(a);
        } else if root.is_none() {
            root = Some(PathBuf::from(a));
        } else {
            usage();
        }
    }
    Args { root: root.unwrap_or_else(|| usage()), threads: threads.max(1), flags }
}

fn usage() -> ! {
    eprintln!("usage: walk-* [-j N] [--flags] DIR");
    std::process::exit(2)
}

/// What a walker extracts from one stat of one entry.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stat {
    pub dev: u64,
    pub ino: u64,
    pub nlink: u64,
    pub blocks: u64,
    pub is_dir: bool,
}

impl Stat {
    pub fn from_std(m: &std::fs::Metadata) -> Stat {
        use std::os::unix::fs::MetadataExt;
        Stat { dev: m.dev(), ino: m.ino(), nlink: m.nlink(), blocks: m.blocks(), is_dir: m.is_dir() }
    }
    /// Whether this entry needs the hardlink set.
    pub fn multi_link(&self) -> bool {
        !self.is_dir && self.nlink > 1
    }
}

/// Single-threaded accumulator (the consumer side of an iterator-style walker).
#[derive(Default)]
pub struct Totals {
    pub bytes: u64,
    pub entries: u64,
    pub errors: u64,
    seen: HashSet<(u64, u64)>,
}

impl Totals {
    pub fn add(&mut self, s: &Stat) {
        self.entries += 1;
        if s.multi_link() && !self.seen.insert((s.dev, s.ino)) {
            return;
        }
        self.bytes += s.blocks * 512;
    }
    pub fn finish(&self, name: &str) -> ! {
        println!("{} bytes {} entries", self.bytes, self.entries);
        if self.errors > 0 {
            eprintln!("{name}: {} errors", self.errors);
            std::process::exit(1)
        }
        std::process::exit(0)
    }
}
