//! Whether the tree to walk is in memory: a look at its first directories
//! before the walk, timed.
//!
//! A warm walk runs on the CPU: as many threads as CPUs. A cold one waits
//! on the device for nearly every directory and inode: its threads sleep in
//! the kernel, and with as many threads as CPUs the device is left idle
//! between requests. The look lists what the walk lists first anyway (the
//! first root's directories, breadth first, up to [`DIRS`] of them and
//! [`ENTRIES`] entries in all), so it costs nothing a cold walk would not
//! pay, and a directory of a million files is not read to its end. From
//! memory a directory opens and lists in a few microseconds without the
//! thread ever sleeping; from a device it takes a hundred or more, asleep
//! in the kernel. Both are asked: the time, and the thread's voluntary
//! context switches (it slept waiting, which a busy CPU alone never makes
//! it do), so that a loaded machine, which only slows the look, does not
//! pass for a cold cache.

use std::collections::VecDeque;
use std::mem::MaybeUninit;
use std::time::{Duration, Instant};

use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{self as rfs, FileType, Mode, OFlags, RawDir};

use super::root_trees::RootTrees;
use super::roots::Roots;

/// The threads of a cold walk that reads Btrfs trees ([`super::btrfs_listing`]):
/// one search reads up to 512 inodes, where a `statx` reads one, so fewer
/// requests are needed in flight; and each thread holds what it read until
/// it walks there, so more threads only hold more.
///
/// Not where the roots hold snapshots read by difference
/// ([`holds_lineage`]): only the first member of a lineage the walk meets
/// waits on the device, the others are read from memory, and the walk
/// takes a thread per CPU. Measured in docs/decisions.md, "Threads of a
/// cold walk".
pub(super) const SEARCH_THREADS: usize = 4;

/// Whether one of `roots`, read from its Btrfs tree, holds two members of
/// a lineage of snapshots
/// ([`sdu_sys::btrfs::Subvolumes::holds_lineage`]): each
/// directory asked through the fd its PATH was resolved by.
pub(super) fn holds_lineage(roots: &Roots, trees: &RootTrees) -> bool {
    (0..roots.0.len()).any(|i| {
        roots.is_dir(i)
            && roots.get(i).is_some_and(|r| {
                r.open_dir(OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC)
                    .is_ok_and(|fd| {
                        let fd = fd.as_fd();
                        trees
                            .of(r.dev, fd)
                            .and_then(|s| s.holds_lineage(fd).ok())
                            .unwrap_or(false)
                    })
            })
    })
}

/// The threads of a cold walk on XFS. XFS reads inodes a cluster at a
/// time, under the cluster buffer's lock: a thread that stats an inode
/// whose cluster another thread is reading sleeps on that lock
/// (`xfs_buf_lock`), so threads past a few wait on each other, not on the
/// device. Btrfs without the tree search is not limited so. Measured in
/// docs/decisions.md, "Threads of a cold walk".
pub(super) const XFS_THREADS: usize = 4;

/// Whether every one of `roots` is on the filesystem of `magic`
/// (`fstatfs` of the fd each PATH was resolved by).
pub(super) fn all_on(roots: &Roots, magic: u32) -> bool {
    !roots.0.is_empty()
        && roots
            .0
            .iter()
            .all(|r| r.as_ref().is_ok_and(|r| r.magic == Some(magic)))
}

/// Directories listed at most.
const DIRS: u32 = 16;

/// Entries read at most, over all the directories listed: a directory
/// holding more is left part read.
const ENTRIES: u32 = 1024;

/// Longer than this per directory on average, and the tree is taken to be
/// on the device, not in memory.
const COLD_PER_DIR: Duration = Duration::from_micros(60);

/// When a look at the cache began, and how often the thread had blocked by
/// then: taken before the PATHs are resolved, so that reading the first
/// root's inode from the device counts as it did when the look opened it.
#[derive(Clone, Copy, Debug)]
pub(super) struct CacheLook {
    t0: Instant,
    slept0: Option<u64>,
}

impl CacheLook {
    pub(super) fn start() -> CacheLook {
        CacheLook {
            slept0: sleeps(),
            t0: Instant::now(),
        }
    }
}

/// Whether resolving `roots` and listing the first directories of the
/// first of them, since `look` began, took long enough that they were read
/// from the device. The first root is listed through the fd its PATH was
/// resolved by, and only if that is a directory, as the walk lists it.
pub(super) fn looks_cold(roots: &Roots, look: CacheLook) -> bool {
    let Some(first) = roots.get(0).filter(|_| roots.is_dir(0)) else {
        return false;
    };
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let CacheLook { t0, slept0 } = look;
    let Ok(fd) = first.open_dir(flags | OFlags::NOATIME) else {
        return false;
    };
    let (listed, _) = list(fd, flags);
    let slow = t0.elapsed() > COLD_PER_DIR * listed;
    // Waited on the device for a quarter of the directories at least.
    let waited = match (slept0, sleeps()) {
        (Some(a), Some(b)) => b.saturating_sub(a) >= u64::from(listed.div_ceil(4)),
        // No /proc: the time alone.
        _ => true,
    };
    slow && waited
}

/// Lists `fd`'s directory and those below it, breadth first, up to
/// [`DIRS`] directories and [`ENTRIES`] entries; returns how many of each
/// it read.
fn list(fd: OwnedFd, flags: OFlags) -> (u32, u32) {
    let mut queue: VecDeque<OwnedFd> = VecDeque::from([fd]);
    let mut buf = vec![MaybeUninit::uninit(); 16 * 1024];
    let (mut listed, mut entries) = (0u32, 0u32);
    'dirs: while let Some(dir) = queue.pop_front() {
        listed += 1;
        let mut raw = RawDir::new(&dir, &mut buf);
        while let Some(Ok(e)) = raw.next() {
            entries += 1;
            if entries >= ENTRIES {
                break 'dirs;
            }
            let name = e.file_name();
            if e.file_type() != FileType::Directory || name == c"." || name == c".." {
                continue;
            }
            if listed + queue.len() as u32 >= DIRS {
                break;
            }
            if let Ok(sub) = open(&dir, name, flags | OFlags::NOFOLLOW) {
                queue.push_back(sub);
            }
        }
        if listed >= DIRS {
            break;
        }
    }
    (listed, entries)
}

/// Opens `name` in `at` as the walk does, without touching its access time
/// where that is allowed (`O_NOATIME`: the owner, or root); elsewhere the
/// walk's own open touches it all the same.
fn open(
    at: impl rustix::fd::AsFd,
    name: &std::ffi::CStr,
    flags: OFlags,
) -> rustix::io::Result<OwnedFd> {
    match rfs::openat(&at, name, flags | OFlags::NOATIME, Mode::empty()) {
        Err(rustix::io::Errno::PERM) => rfs::openat(&at, name, flags, Mode::empty()),
        r => r,
    }
}

/// The calling thread's voluntary context switches so far (it blocked:
/// on I/O, a lock, a sleep), from `/proc/thread-self/status`.
fn sleeps() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/thread-self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory just listed is in memory: never taken for cold.
    #[test]
    fn a_directory_just_read_is_warm() {
        let t = tempfile::tempdir().unwrap();
        for d in ["a/b", "c/d", "e"] {
            std::fs::create_dir_all(t.path().join(d)).unwrap();
        }
        let root = [t.path().as_os_str().as_encoded_bytes().to_vec()];
        looks_cold(&Roots::open(&root, (&[], &[]), false), CacheLook::start());
        let warm = (0..5)
            .filter(|_| !looks_cold(&Roots::open(&root, (&[], &[]), false), CacheLook::start()))
            .count();
        // One of five may be slowed by a loaded machine.
        assert!(warm >= 4, "{warm} of 5 warm");
        assert!(!looks_cold(
            &Roots::open(&[b"/nonexistent-sdu".to_vec()], (&[], &[]), false),
            CacheLook::start()
        ));
    }

    /// A few directories of many files each: the look reads the first
    /// [`ENTRIES`] entries, not every file.
    #[test]
    fn the_look_caps_entries_not_only_directories() {
        let t = tempfile::tempdir().unwrap();
        for d in ["a", "b", "c"] {
            let d = t.path().join(d);
            std::fs::create_dir(&d).unwrap();
            for i in 0..2000 {
                std::fs::File::create(d.join(i.to_string())).unwrap();
            }
        }
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = rfs::open(t.path(), flags, Mode::empty()).unwrap();
        let (listed, entries) = list(fd, flags);
        assert!(listed >= 1, "{listed} directories listed");
        assert!(entries <= ENTRIES, "{entries} entries read");
    }
}
