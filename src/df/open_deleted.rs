//! Files deleted but still open: space the filesystem still holds for
//! inodes no directory names, because a process has them open (an fd) or
//! mapped (a memory mapping with no fd left). Read from `/proc`; frees
//! when the last holder closes or exits.
//!
//! How a file is found:
//! - each process's fds (`/proc/PID/fd/N`): the link's text ends with
//!   `" (deleted)"`; `statx` through the link (it follows to the open
//!   file) says a regular file with no link left (`nlink == 0`: a file
//!   renamed or unlinked under one name but linked under another also
//!   reads `(deleted)`, and the walk counts it there);
//! - each process's mappings (`/proc/PID/maps` lines ending
//!   `" (deleted)"`), sized by `statx` of `/proc/PID/map_files/RANGE`,
//!   which the kernel lets only root (`CAP_SYS_ADMIN` or
//!   `CAP_CHECKPOINT_RESTORE`) follow. Without it a mapped file is counted
//!   when an fd of some process holds it too (matched by inode); else its
//!   process counts as unreadable.
//!
//! Which filesystem: the file's `st_dev` when it is the mount root's (every
//! filesystem but Btrfs has one `st_dev`). On Btrfs each subvolume has its
//! own `st_dev`: a file is on the filesystem when the mount it was opened
//! through (`stx_mnt_id`) has the superblock's device of the mount root's
//! (mountinfo's `major:minor`, one per Btrfs filesystem), looked up in
//! this process's mountinfo, then in the holder's (another mount
//! namespace); a mount in neither (detached) is judged by the file's
//! `fsid` (`BTRFS_IOC_FS_INFO`, which needs the file opened). memfd, shm
//! and socket inodes read `(deleted)` too but lie on the kernel's own
//! mounts, never this one.
//!
//! Without root only the processes of one's own user can be read: the
//! others count in `unreadable` (kernel threads aside: they hold no
//! files), and the row is a lower bound. `/proc` mounted with
//! `hidepid=invisible` (or `ptraceable`) hides them altogether: `hidden`.
//! An fd table a thread unshared from its process (`unshare(CLONE_FILES)`)
//! is not read; nor the processes of other pid namespaces than `/proc`'s
//! (from inside a container, the host's); nor what the kernel holds with
//! no fd of a process (a loop device's backing file, io_uring's
//! registered files): their bytes stay in the `unexplained` row. A
//! process that exits while it is read is skipped.
//!
//! This file uses std, rustix and sdu-sys only: tests/sdu/df_open.rs
//! compiles it on its own (the library's facade is at its limit of public
//! items), with the same source the library runs.

use std::collections::{HashMap, HashSet};
use std::ffi::CStr;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, Statx, StatxFlags};
use rustix::io::Errno;

/// What the kernel appends to the path of an unlinked file in a
/// `/proc/PID/fd` link and a `/proc/PID/maps` line.
const DELETED: &[u8] = b" (deleted)";

/// `PF_KTHREAD` in `/proc/PID/stat`'s flags (include/linux/sched.h).
const PF_KTHREAD: u64 = 0x0020_0000;

/// One file deleted but held open, as one of its holders holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OpenFile {
    /// The holding process.
    pub(crate) pid: u32,
    /// Its command (`/proc/PID/comm`, 15 bytes at most).
    pub(crate) comm: Vec<u8>,
    /// The fd it holds the file by; `None`: only a memory mapping holds
    /// it in that process (the fd was closed after `mmap`).
    pub(crate) fd: Option<u32>,
    /// The path the file had, without `" (deleted)"`: the link's text,
    /// from the root of the holder's mount namespace.
    pub(crate) name: Vec<u8>,
    /// Its inode number (within its subvolume on Btrfs).
    pub(crate) ino: u64,
    /// `st_blocks × 512`, as du counts.
    pub(crate) bytes: u64,
    /// The other holders: (pid, fd) pairs, and processes that map it with
    /// no fd. The space frees when all of them let go.
    pub(crate) holders: u32,
    /// `Some(true)` if FIEMAP flags part of it shared (a reflink or a
    /// snapshot's): those bytes may be counted elsewhere too and do not
    /// all free with it. `None` when the file could not be mapped (not
    /// readable through the link, or no FIEMAP).
    pub(crate) shared: Option<bool>,
}

/// The files deleted but held open on one filesystem.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct DeletedOpen {
    /// One per inode, largest first.
    pub(crate) files: Vec<OpenFile>,
    /// Their bytes, summed.
    pub(crate) bytes: u64,
    /// Processes whose fds or mappings could not be read (another user's,
    /// without root): a file they hold is not counted.
    pub(crate) unreadable: u32,
    /// Whether `/proc` hides processes from this one (`hidepid`), or could
    /// not be read at all: their files are not counted, nor the processes
    /// in `unreadable`.
    pub(crate) hidden: bool,
}

impl DeletedOpen {
    /// Whether `bytes` may fall short: some processes were not read.
    pub(crate) fn at_least(&self) -> bool {
        self.unreadable > 0 || self.hidden
    }
}

/// The files deleted but held open on the filesystem of `fs` (an fd of
/// its mount root).
pub(crate) fn deleted_open(fs: BorrowedFd<'_>) -> DeletedOpen {
    deleted_open_in(c"/proc", fs)
}

/// [`deleted_open`], the processes read from the procfs mounted at
/// `proc` (a test mounts one with `hidepid`).
pub(crate) fn deleted_open_in(proc: &CStr, fs: BorrowedFd<'_>) -> DeletedOpen {
    let Ok(target) = Target::of(fs) else {
        return DeletedOpen {
            hidden: true,
            ..DeletedOpen::default()
        };
    };
    let Ok(proc_fd) = open_dir(rustix::fs::CWD, proc) else {
        return DeletedOpen {
            hidden: true,
            ..DeletedOpen::default()
        };
    };
    let mut scan = Scan {
        target,
        found: HashMap::new(),
        pending: Vec::new(),
        unreadable: HashSet::new(),
    };
    let hidden = proc_hides(proc_fd.as_fd());
    let Ok(dir) = Dir::read_from(&proc_fd) else {
        return DeletedOpen {
            hidden: true,
            ..DeletedOpen::default()
        };
    };
    for e in dir.flatten() {
        if let Some(pid) = number(e.file_name().to_bytes()) {
            scan.process(proc_fd.as_fd(), pid, e.file_name());
        }
    }
    scan.finish(hidden)
}

/// The filesystem the files must lie on.
struct Target {
    /// The mount root's `st_dev`.
    dev: (u32, u32),
    /// Its superblock's device (mountinfo's `major:minor`; a Btrfs mapping's
    /// device in `/proc/PID/maps`).
    sb_dev: (u32, u32),
    /// On Btrfs, its `fsid`; `None` elsewhere (`st_dev` decides).
    fsid: Option<[u8; 16]>,
    /// Mount id → superblock device, from the mountinfo files read.
    mounts: HashMap<u64, (u32, u32)>,
    /// Processes whose mountinfo was read into `mounts`.
    namespaces_read: HashSet<u32>,
}

impl Target {
    fn of(fs: BorrowedFd<'_>) -> io::Result<Target> {
        let st = statx_at(fs, c"", AtFlags::EMPTY_PATH)?;
        let dev = (st.stx_dev_major, st.stx_dev_minor);
        let mut mounts = HashMap::new();
        if let Ok(m) = sdu_sys::mountinfo::read() {
            mounts.extend(m.into_iter().map(|m| (m.id, m.dev)));
        }
        let sb_dev = mnt_id(&st)
            .and_then(|id| mounts.get(&id).copied())
            .unwrap_or(dev);
        let fsid = if sdu_sys::fs::fs_type(fs)? == sdu_sys::fs::magic::BTRFS {
            Some(sdu_sys::btrfs::fsid(fs)?)
        } else {
            None
        };
        Ok(Target {
            dev,
            sb_dev,
            fsid,
            mounts,
            namespaces_read: HashSet::new(),
        })
    }

    /// Whether a file stat'ed through a link of `pid` (`dir` the link's
    /// directory, `link` its name there) lies on this filesystem.
    fn holds(
        &mut self,
        st: &Statx,
        pid_dir: BorrowedFd<'_>,
        pid: u32,
        dir: BorrowedFd<'_>,
        link: &CStr,
    ) -> bool {
        if (st.stx_dev_major, st.stx_dev_minor) == self.dev {
            return true;
        }
        let Some(fsid) = self.fsid else {
            return false;
        };
        if let Some(id) = mnt_id(st) {
            if !self.mounts.contains_key(&id) && self.namespaces_read.insert(pid) {
                if let Ok(text) = read_at(pid_dir, c"mountinfo") {
                    let m = sdu_sys::mountinfo::parse(&text);
                    self.mounts.extend(m.into_iter().map(|m| (m.id, m.dev)));
                }
            }
            if let Some(&d) = self.mounts.get(&id) {
                return d == self.sb_dev;
            }
        }
        // A mount in no namespace read (a detached one): ask the file.
        open_file(dir, link).is_ok_and(|f| {
            sdu_sys::fs::fs_type(f.as_fd()).ok() == Some(sdu_sys::fs::magic::BTRFS)
                && sdu_sys::btrfs::fsid(f.as_fd()).ok() == Some(fsid)
        })
    }
}

/// A file found: its identity `(st_dev, ino)` is the key of `Scan::found`.
struct Found {
    ino: u64,
    bytes: u64,
    /// Every holder, in the order found.
    holders: Vec<Holder>,
    shared: Option<bool>,
}

/// A process holding a file: by an fd, or (`fd` `None`) a mapping alone.
struct Holder {
    pid: u32,
    fd: Option<u32>,
    comm: Vec<u8>,
    /// The path it names the file by.
    name: Vec<u8>,
}

/// A deleted mapping on the filesystem whose file could not be stat'ed
/// (`map_files` needs root): resolved by inode at the end.
struct Pending {
    pid: u32,
    comm: Vec<u8>,
    ino: u64,
}

struct Scan {
    target: Target,
    found: HashMap<(u32, u32, u64), Found>,
    pending: Vec<Pending>,
    unreadable: HashSet<u32>,
}

impl Scan {
    /// One process: its fds, then its mappings.
    fn process(&mut self, proc_fd: BorrowedFd<'_>, pid: u32, name: &CStr) {
        let Ok(pid_dir) = open_dir(proc_fd, name) else {
            return; // gone
        };
        let fd_dir = match open_dir(pid_dir.as_fd(), c"fd") {
            Ok(d) => d,
            Err(Errno::ACCESS | Errno::PERM) => {
                if !kernel_thread(pid_dir.as_fd()) {
                    self.unreadable.insert(pid);
                }
                return;
            }
            Err(_) => return, // gone, or a zombie
        };
        let mut comm = None;
        let mut held: HashSet<(u32, u32, u64)> = HashSet::new();
        if let Ok(entries) = Dir::read_from(&fd_dir) {
            for e in entries.flatten() {
                let Some(fd) = number(e.file_name().to_bytes()) else {
                    continue;
                };
                let link = e.file_name();
                let text = match rustix::fs::readlinkat(&fd_dir, link, Vec::new()) {
                    Ok(t) => t.into_bytes(),
                    Err(Errno::ACCESS | Errno::PERM) => {
                        self.unreadable.insert(pid);
                        continue;
                    }
                    Err(_) => continue, // closed meanwhile
                };
                let Some(path) = deleted_name(&text) else {
                    continue;
                };
                let Some(key) = self.file(
                    pid_dir.as_fd(),
                    pid,
                    fd_dir.as_fd(),
                    link,
                    path,
                    Some(fd),
                    &mut comm,
                ) else {
                    continue;
                };
                held.insert(key);
            }
        }
        self.mappings(pid_dir.as_fd(), pid, &held, &mut comm);
    }

    /// The deleted files `pid` maps, each once, not counting those it
    /// holds an fd of (`held`).
    fn mappings(
        &mut self,
        pid_dir: BorrowedFd<'_>,
        pid: u32,
        held: &HashSet<(u32, u32, u64)>,
        comm: &mut Option<Vec<u8>>,
    ) {
        let maps = match read_at(pid_dir, c"maps") {
            Ok(m) => m,
            Err(Errno::ACCESS | Errno::PERM) => {
                self.unreadable.insert(pid);
                return;
            }
            Err(_) => return,
        };
        // Without root the directory may open, but no link in it will.
        let map_files = open_dir(pid_dir, c"map_files").ok();
        let mut seen: HashSet<(u32, u32, u64)> = HashSet::new();
        for line in maps.split(|&b| b == b'\n') {
            let Some(m) = MapsLine::parse(line) else {
                continue;
            };
            if m.dev != self.target.sb_dev && m.dev != self.target.dev {
                continue;
            }
            if !seen.insert((m.dev.0, m.dev.1, m.ino)) {
                continue;
            }
            let Ok(range) = std::ffi::CString::new(m.range) else {
                continue;
            };
            let st = match map_files
                .as_ref()
                .map(|d| statx_at(d, &range, AtFlags::empty()))
            {
                Some(Ok(st)) => st,
                Some(Err(Errno::ACCESS | Errno::PERM)) | None => {
                    let comm = comm.get_or_insert_with(|| read_comm(pid_dir)).clone();
                    self.pending.push(Pending {
                        pid,
                        comm,
                        ino: m.ino,
                    });
                    continue;
                }
                Some(Err(_)) => continue,
            };
            let Some(map_files) = map_files.as_ref() else {
                continue;
            };
            if held.contains(&(st.stx_dev_major, st.stx_dev_minor, st.stx_ino)) {
                continue;
            }
            let text = rustix::fs::readlinkat(map_files, &range, Vec::new())
                .map(|t| t.into_bytes())
                .unwrap_or_default();
            let name = deleted_name(&text).unwrap_or(&text).to_vec();
            self.add(
                pid_dir,
                pid,
                map_files.as_fd(),
                &range,
                &st,
                name,
                None,
                comm,
            );
        }
    }

    /// A link whose text says deleted: stat'ed through it, kept if it is
    /// a regular file with no link left on the filesystem. Its key.
    #[allow(clippy::too_many_arguments)]
    fn file(
        &mut self,
        pid_dir: BorrowedFd<'_>,
        pid: u32,
        dir: BorrowedFd<'_>,
        link: &CStr,
        name: &[u8],
        fd: Option<u32>,
        comm: &mut Option<Vec<u8>>,
    ) -> Option<(u32, u32, u64)> {
        let st = statx_at(dir, link, AtFlags::empty()).ok()?;
        self.add(pid_dir, pid, dir, link, &st, name.to_vec(), fd, comm)
    }

    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        pid_dir: BorrowedFd<'_>,
        pid: u32,
        dir: BorrowedFd<'_>,
        link: &CStr,
        st: &Statx,
        name: Vec<u8>,
        fd: Option<u32>,
        comm: &mut Option<Vec<u8>>,
    ) -> Option<(u32, u32, u64)> {
        if FileType::from_raw_mode(st.stx_mode.into()) != FileType::RegularFile || st.stx_nlink != 0
        {
            return None;
        }
        if !self.target.holds(st, pid_dir, pid, dir, link) {
            return None;
        }
        let key = (st.stx_dev_major, st.stx_dev_minor, st.stx_ino);
        let holder = Holder {
            pid,
            fd,
            comm: comm.get_or_insert_with(|| read_comm(pid_dir)).clone(),
            name,
        };
        if let Some(f) = self.found.get_mut(&key) {
            f.holders.push(holder);
            return Some(key);
        }
        let shared = shared(dir, link);
        self.found.insert(
            key,
            Found {
                ino: st.stx_ino,
                bytes: st.stx_blocks * 512,
                holders: vec![holder],
                shared,
            },
        );
        Some(key)
    }

    /// The mappings that could not be stat'ed, matched by inode to the
    /// files found (one match: a holder of it; else its process counts as
    /// unreadable); then the files, largest first.
    fn finish(mut self, hidden: bool) -> DeletedOpen {
        for p in std::mem::take(&mut self.pending) {
            let mut same = self.found.values_mut().filter(|f| f.ino == p.ino);
            match (same.next(), same.next()) {
                (Some(f), None) => {
                    if !f.holders.iter().any(|h| h.pid == p.pid) {
                        f.holders.push(Holder {
                            pid: p.pid,
                            fd: None,
                            comm: p.comm,
                            name: Vec::new(),
                        });
                    }
                }
                _ => {
                    self.unreadable.insert(p.pid);
                }
            }
        }
        let mut files: Vec<OpenFile> = self
            .found
            .into_values()
            .map(|mut f| {
                let others = u32::try_from(f.holders.len() - 1).unwrap_or(u32::MAX);
                // Shown by an fd holder if there is one, the lowest pid.
                let first = (0..f.holders.len())
                    .min_by_key(|&i| {
                        let h = &f.holders[i];
                        (h.fd.is_none(), h.pid, h.fd)
                    })
                    .unwrap_or(0);
                let h = f.holders.swap_remove(first);
                OpenFile {
                    pid: h.pid,
                    comm: h.comm,
                    fd: h.fd,
                    name: h.name,
                    ino: f.ino,
                    bytes: f.bytes,
                    holders: others,
                    shared: f.shared,
                }
            })
            .collect();
        files.sort_by(|a, b| {
            b.bytes
                .cmp(&a.bytes)
                .then(a.pid.cmp(&b.pid))
                .then(a.fd.cmp(&b.fd))
                .then(a.ino.cmp(&b.ino))
        });
        DeletedOpen {
            bytes: files.iter().map(|f| f.bytes).sum(),
            files,
            unreadable: u32::try_from(self.unreadable.len()).unwrap_or(u32::MAX),
            hidden,
        }
    }
}

/// The path in a `/proc/PID/fd` link's text that says the file was
/// unlinked: the text without its one trailing `" (deleted)"`. `None` if
/// it does not end so. The text is raw (a newline in a name stays a
/// newline); a name that itself ends in `" (deleted)"` keeps it.
fn deleted_name(text: &[u8]) -> Option<&[u8]> {
    text.strip_suffix(DELETED).filter(|p| !p.is_empty())
}

/// A line of `/proc/PID/maps` that maps a deleted file.
#[derive(Debug, PartialEq, Eq)]
struct MapsLine<'a> {
    /// `start-end`, the name of its link in `/proc/PID/map_files`.
    range: &'a [u8],
    /// The device of its filesystem's superblock.
    dev: (u32, u32),
    ino: u64,
}

impl<'a> MapsLine<'a> {
    /// `start-end perms offset major:minor inode   path (deleted)`; `None`
    /// for any other line (anonymous, a file not deleted, inode 0). The
    /// path may hold spaces (and `\012` for a newline): only its end is
    /// read.
    fn parse(line: &'a [u8]) -> Option<MapsLine<'a>> {
        let mut f = line.splitn(6, |&b| b == b' ');
        let range = f.next()?;
        let _perms = f.next()?;
        let _offset = f.next()?;
        let (major, minor) = std::str::from_utf8(f.next()?).ok()?.split_once(':')?;
        let dev = (
            u32::from_str_radix(major, 16).ok()?,
            u32::from_str_radix(minor, 16).ok()?,
        );
        let ino: u64 = std::str::from_utf8(f.next()?).ok()?.parse().ok()?;
        let path = f.next()?.trim_ascii_start();
        if ino == 0 || !path.starts_with(b"/") || deleted_name(path).is_none() {
            return None;
        }
        if !range.contains(&b'-') || !range.iter().all(|b| b.is_ascii_hexdigit() || *b == b'-') {
            return None;
        }
        Some(MapsLine { range, dev, ino })
    }
}

/// Whether FIEMAP flags any extent of the file shared; the file opened
/// again through the link (read-only, never blocking: only regular files
/// get here).
fn shared(dir: BorrowedFd<'_>, link: &CStr) -> Option<bool> {
    let f = open_file(dir, link).ok()?;
    let mut any = false;
    sdu_sys::fiemap::Fiemap::new()
        .for_each(f.as_fd(), |e| any |= e.is_shared())
        .ok()?;
    Some(any)
}

/// Whether `/proc` hides from this process the processes it may not
/// trace (`hidepid=invisible` or `ptraceable`, not root, not in the
/// exempt `gid=`).
fn proc_hides(proc_fd: BorrowedFd<'_>) -> bool {
    if rustix::process::geteuid().is_root() {
        return false;
    }
    let Ok(st) = statx_at(proc_fd, c"", AtFlags::EMPTY_PATH) else {
        return true;
    };
    let Ok(mounts) = sdu_sys::mountinfo::read() else {
        return true;
    };
    let Some(m) = mnt_id(&st).and_then(|id| mounts.into_iter().find(|m| m.id == id)) else {
        return true;
    };
    hides(&m.super_options, || {
        let mut g = rustix::process::getgroups().unwrap_or_default();
        g.push(rustix::process::getegid());
        g.into_iter().map(|g| g.as_raw()).collect()
    })
}

/// Whether procfs options `opts` hide processes from a user of the
/// groups `groups` gives.
fn hides(opts: &[u8], groups: impl FnOnce() -> Vec<u32>) -> bool {
    let mut hide = false;
    let mut gid = None;
    for o in opts.split(|&b| b == b',') {
        if let Some(v) = o.strip_prefix(b"hidepid=") {
            hide = matches!(v, b"2" | b"invisible" | b"4" | b"ptraceable");
        } else if let Some(v) = o.strip_prefix(b"gid=") {
            gid = std::str::from_utf8(v)
                .ok()
                .and_then(|v| v.parse::<u32>().ok());
        }
    }
    hide && gid.is_none_or(|g| !groups().contains(&g))
}

/// Whether the process of `pid_dir` is a kernel thread (`PF_KTHREAD`).
fn kernel_thread(pid_dir: BorrowedFd<'_>) -> bool {
    read_at(pid_dir, c"stat").is_ok_and(|s| stat_flags(&s).is_some_and(|f| f & PF_KTHREAD != 0))
}

/// The flags of a `/proc/PID/stat` text: its 9th field, the 6th after
/// the command in parentheses (which may hold spaces and parentheses).
fn stat_flags(stat: &[u8]) -> Option<u64> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
    rest.split_ascii_whitespace().nth(6)?.parse().ok()
}

fn read_comm(pid_dir: BorrowedFd<'_>) -> Vec<u8> {
    let mut c = read_at(pid_dir, c"comm").unwrap_or_default();
    if c.last() == Some(&b'\n') {
        c.pop();
    }
    c
}

/// A decimal name (a pid, an fd), as `/proc` writes them.
fn number(name: &[u8]) -> Option<u32> {
    if name.is_empty() || !name.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(name).ok()?.parse().ok()
}

fn mnt_id(st: &Statx) -> Option<u64> {
    (st.stx_mask & StatxFlags::MNT_ID.bits() != 0).then_some(st.stx_mnt_id)
}

fn statx_at(dir: impl AsFd, path: &CStr, flags: AtFlags) -> Result<Statx, Errno> {
    rustix::fs::statx(
        dir,
        path,
        flags,
        StatxFlags::BASIC_STATS | StatxFlags::MNT_ID,
    )
}

fn open_dir(dir: impl AsFd, path: &CStr) -> Result<OwnedFd, Errno> {
    rustix::fs::openat(
        dir,
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// A regular file opened again through a magic link: read-only, never
/// blocking, never the controlling terminal.
fn open_file(dir: BorrowedFd<'_>, link: &CStr) -> Result<OwnedFd, Errno> {
    rustix::fs::openat(
        dir,
        link,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// A whole `/proc` file.
fn read_at(dir: BorrowedFd<'_>, name: &CStr) -> Result<Vec<u8>, Errno> {
    let f = rustix::fs::openat(dir, name, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?;
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match rustix::io::read(&f, &mut buf) {
            Ok(0) => return Ok(out),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deleted_link_loses_one_suffix() {
        assert_eq!(deleted_name(b"/a/b (deleted)"), Some(&b"/a/b"[..]));
        assert_eq!(deleted_name(b"/a/b"), None);
        // The name itself ends so: one suffix is the kernel's.
        assert_eq!(
            deleted_name(b"/a/x (deleted) (deleted)"),
            Some(&b"/a/x (deleted)"[..])
        );
        // Inside a name, it is the name's.
        assert_eq!(deleted_name(b"/a (deleted)/b"), None);
        assert_eq!(
            deleted_name(b"/a (deleted)/b (deleted)"),
            Some(&b"/a (deleted)/b"[..])
        );
        // A newline is raw in a link's text.
        assert_eq!(
            deleted_name(b"/a/new\nline (deleted)"),
            Some(&b"/a/new\nline"[..])
        );
        assert_eq!(deleted_name(b"/a/new\nline (deleted)\n"), None);
        assert_eq!(deleted_name(b" (deleted)"), None);
        assert_eq!(deleted_name(b"/memfd:x (deleted)"), Some(&b"/memfd:x"[..]));
    }

    #[test]
    fn maps_lines_of_deleted_files() {
        let l = b"7f1c2a000000-7f1c2a500000 r--s 00000000 00:2b 257                        /mnt/a file (deleted)";
        assert_eq!(
            MapsLine::parse(l),
            Some(MapsLine {
                range: b"7f1c2a000000-7f1c2a500000",
                dev: (0, 0x2b),
                ino: 257
            })
        );
        let l = b"55d0c0a00000-55d0c0a01000 rw-p 00001000 103:02 131077 /x/new\\012line (deleted)";
        assert_eq!(
            MapsLine::parse(l).map(|m| (m.dev, m.ino)),
            Some(((0x103, 2), 131_077))
        );
        for not in [
            &b"7f1c2a000000-7f1c2a500000 r--s 00000000 00:2b 257 /mnt/a"[..],
            b"7ffd5e1f0000-7ffd5e211000 rw-p 00000000 00:00 0                          [stack]",
            b"7f1c2a000000-7f1c2a500000 rw-p 00000000 00:00 0 ",
            b"7f1c2a000000-7f1c2a500000 rw-s 00000000 00:01 1034 /memfd:x (deleted)",
            b"garbage",
            b"",
        ] {
            let p = MapsLine::parse(not);
            assert!(
                p.is_none() || not.ends_with(b"/memfd:x (deleted)"),
                "{:?}: {p:?}",
                String::from_utf8_lossy(not)
            );
        }
        // memfd parses (a deleted path on device 00:01); the device test
        // leaves it out.
        assert_eq!(
            MapsLine::parse(
                b"7f1c2a000000-7f1c2a500000 rw-s 00000000 00:01 1034 /memfd:x (deleted)"
            )
            .map(|m| m.dev),
            Some((0, 1))
        );
    }

    #[test]
    fn stat_flags_skip_the_command() {
        let s = b"2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0";
        assert_eq!(stat_flags(s), Some(2_129_984));
        assert!(stat_flags(s).unwrap() & PF_KTHREAD != 0);
        let s = b"77 (a) b) (c) S 1 77 77 0 -1 4194560 100 0";
        assert_eq!(stat_flags(s), Some(4_194_560));
        assert!(stat_flags(s).unwrap() & PF_KTHREAD == 0);
        assert_eq!(stat_flags(b"garbage"), None);
    }

    #[test]
    fn hidepid_hides_unless_exempt() {
        let none = Vec::new;
        assert!(!hides(b"rw,nosuid,nodev,noexec,relatime", none));
        assert!(!hides(b"rw,hidepid=1", none));
        assert!(!hides(b"rw,hidepid=noaccess", none));
        assert!(hides(b"rw,hidepid=2", none));
        assert!(hides(b"rw,hidepid=invisible", none));
        assert!(hides(b"rw,hidepid=ptraceable", none));
        assert!(hides(b"rw,gid=10,hidepid=invisible", || vec![100]));
        assert!(!hides(b"rw,gid=10,hidepid=invisible", || vec![100, 10]));
        assert!(!hides(b"rw,hidepid=0", none));
    }

    #[test]
    fn numbers_are_plain_decimal() {
        assert_eq!(number(b"123"), Some(123));
        assert_eq!(number(b"self"), None);
        assert_eq!(number(b""), None);
        assert_eq!(number(b"+1"), None);
        assert_eq!(number(b"99999999999"), None);
    }
}
