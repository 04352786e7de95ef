//! One entry of a directory, from its listing to its `statx`: what the
//! listing says of it ([`ListedEntry`]), the checks made before it is stat-ed
//! (the symlinks followed to it, `--exclude`), the `statx` itself (or an
//! open first, for a regular file), what a failed one reports, and the
//! check that a subdirectory is not one of its own ancestors. What the
//! entry then adds is the walk's `dir` module's business.

use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd};

use rustix::fs::{self as rfs, AtFlags, Statx};
use rustix::io::Errno;

use super::account::Pre;
use super::ctx::{Ctx, MASK};
use super::fdcache::DirHandle;
use super::indir::{InDir, Listed};
use super::left::LeftOut;
use super::open;
use crate::error::Diagnostic;
use crate::figures::Kind;

/// One entry of a directory, as its listing gives it.
#[derive(Clone, Copy)]
pub(super) struct ListedEntry<'a> {
    pub(super) name: &'a CStr,
    /// What the listing says it is.
    pub(super) listed: Listed,
    /// Its position in getdents order.
    pub(super) idx: u32,
    /// What `statx` would say of it, when the Btrfs tree said it instead
    /// ([`super::btrfs_listing`]).
    pub(super) known: Option<&'a Statx>,
}

impl<'a> ListedEntry<'a> {
    /// The entry `name`, listed as `listed` at getdents position `idx`.
    #[inline(always)]
    pub(super) fn listed(name: &'a CStr, listed: Listed, idx: u32) -> Self {
        ListedEntry {
            name,
            listed,
            idx,
            known: None,
        }
    }
}

/// An entry stat-ed: its kind and device as `st` gives them, worked out
/// once. Passed by value: where the functions it goes to are inlined, it
/// stays in registers, and it is written to memory only for a call that
/// is not (a reference would make every entry write it).
#[derive(Clone, Copy)]
pub(super) struct Stated<'a> {
    pub(super) e: ListedEntry<'a>,
    pub(super) st: &'a Statx,
    pub(super) kind: Kind,
    pub(super) dev: u64,
}

/// The most symlinks one path resolution may follow (the kernel's
/// `MAXSYMLINKS`). du resolves every entry by its path from the root, so
/// under `-L` an entry reached through more symlinks than that is an error
/// for du ("Too many levels of symbolic links"); sdu, which opens one level
/// at a time, counts them to say the same.
const MAX_SYMLINKS: u32 = 40;

/// The symlinks followed from the root to entry `e` of directory `h`
/// (`-L`); past [`MAX_SYMLINKS`] it is not stat-ed, reported as du
/// reports it.
#[inline(always)]
pub(super) fn symlinks_to(
    ctx: &Ctx<'_>,
    h: &DirHandle,
    e: ListedEntry<'_>,
) -> Result<u32, LeftOut> {
    let link = e.listed == Listed::Symlink;
    let symlinks = h.symlinks + u32::from(link && ctx.run.opts.follow_links);
    if symlinks > MAX_SYMLINKS {
        ctx.run.msgs.report(Diagnostic::CannotAccess {
            path: h.path(Some(e.name.to_bytes())),
            errno: Errno::LOOP,
        });
        return Err(LeftOut::NotStated);
    }
    Ok(symlinks)
}

/// The path of entry `name` of directory `h`, built only when `--exclude`
/// needs it: from the names up the parent chain, so that no directory
/// keeps its path (those of a chain's open directories would take memory
/// in the square of its depth).
#[inline(always)]
pub(super) fn path_kept(ctx: &Ctx<'_>, h: &DirHandle, name: &CStr) -> Option<Vec<u8>> {
    (!ctx.run.opts.excludes.is_empty()).then(|| h.path(Some(name.to_bytes())))
}

/// [`LeftOut::Pattern`] when an `--exclude` pattern matches `path` (from
/// [`path_kept`]).
#[inline(always)]
pub(super) fn excluded(ctx: &Ctx<'_>, path: Option<&[u8]>) -> Option<LeftOut> {
    path.is_some_and(|p| ctx.run.opts.excludes.matches(p))
        .then_some(LeftOut::Pattern)
}

/// `statx`'s flags for an entry that is not followed.
const NOFOLLOW: AtFlags = AtFlags::SYMLINK_NOFOLLOW.union(AtFlags::STATX_DONT_SYNC);

/// What `statx` says of entry `e`: what the Btrfs tree said
/// ([`ListedEntry::known`]), or a `statx` by name, or one through the fd of an
/// open made first (`open`; `pre` then gets what the open gave).
#[inline(always)]
pub(super) fn stat_entry(
    ctx: &Ctx<'_>,
    dir: &InDir<'_>,
    e: ListedEntry<'_>,
    open: bool,
    pre: &mut Pre,
) -> Result<Statx, Errno> {
    let follow = if ctx.run.opts.follow_links {
        AtFlags::STATX_DONT_SYNC
    } else {
        NOFOLLOW
    };
    if let Some(st) = e.known {
        Ok(*st)
    } else if open {
        open_then_stat(dir.fd, e.name, follow, pre)
    } else {
        rfs::statx(dir.fd, e.name, follow, MASK)
    }
}

/// Reports entry `name`, which `statx` failed on with `errno`: under `-L`
/// a dangling symlink is an error, as in du -L; otherwise an entry gone
/// (deleted since the directory was read) is skipped quietly, as du does.
/// [`LeftOut::NotStated`] unless it was gone.
pub(super) fn not_stated(
    ctx: &Ctx<'_>,
    dir: &InDir<'_>,
    name: &CStr,
    errno: Errno,
) -> Option<LeftOut> {
    if errno == Errno::NOENT
        && !(ctx.run.opts.follow_links && rfs::statx(dir.fd, name, NOFOLLOW, MASK).is_ok())
    {
        return None;
    }
    ctx.read_error(
        dir.h.id,
        false,
        format!(
            "cannot access {}: {}",
            crate::quote(name.to_bytes()),
            crate::error::strerror(errno)
        ),
    );
    ctx.run.msgs.report(Diagnostic::CannotAccess {
        path: dir.h.path(Some(name.to_bytes())),
        errno,
    });
    Some(LeftOut::NotStated)
}

/// Whether subdirectory `x` of `h` is `h` or one of its ancestors: then
/// it is never entered, and reported as du reports it (`mount_root`: it
/// is the root of a mount). `climbed` counts the directories climbed
/// through ([`super::Counters::ancestors_climbed`]).
pub(super) fn in_cycle(
    ctx: &Ctx<'_>,
    h: &DirHandle,
    x: Stated<'_>,
    mount_root: bool,
    climbed: &mut u64,
) -> bool {
    let Some(mount_in_cycle) = h.cycle_with(x.dev, x.st.stx_ino, climbed) else {
        return false;
    };
    let opts = ctx.run.opts;
    let path = h.path(Some(x.e.name.to_bytes()));
    if opts.follow_links {
        // A symlink to an ancestor: du -L passes over it silently.
        if !ctx.run.du_rules {
            ctx.run.msgs.report(Diagnostic::DirectoryCycle { path });
        }
    } else if !(mount_root || mount_in_cycle) {
        // No bind mount explains it: the filesystem is corrupt.
        ctx.run.msgs.report(Diagnostic::CircularDirectory { path });
    }
    true
}

/// Opens an entry listed as a regular file, then stats it through the fd
/// (one path lookup, and the inode stat-ed is the one open). `pre` gets the
/// fd, or the error of an open that was refused (reported later if the file
/// may share, as a refused open always was). Anything else that stops the
/// open (the name is now a symlink, a socket...; too many open files)
/// falls back to `statx` by name, and the entry is handled as if it had
/// never been opened.
fn open_then_stat(
    dirfd: BorrowedFd<'_>,
    name: &CStr,
    flags: AtFlags,
    pre: &mut Pre,
) -> Result<Statx, Errno> {
    match open::open_listed_file(dirfd, name) {
        Ok(fd) => {
            let empty = AtFlags::EMPTY_PATH | AtFlags::STATX_DONT_SYNC;
            match rfs::statx(&fd, c"", empty, MASK) {
                Ok(st) => {
                    *pre = Pre::Open(fd);
                    Ok(st)
                }
                Err(_) => rfs::statx(dirfd, name, flags, MASK),
            }
        }
        // Removed since it was listed: quiet, as a failed statx is.
        Err(Errno::NOENT) => Err(Errno::NOENT),
        Err(e @ (Errno::ACCESS | Errno::PERM)) => {
            *pre = Pre::Failed(e);
            rfs::statx(dirfd, name, flags, MASK)
        }
        Err(_) => rfs::statx(dirfd, name, flags, MASK),
    }
}

/// The first bytes of a valid `CACHEDIR.TAG` (the Cache Directory Tagging
/// Specification, <https://bford.info/cachedir/>).
const CACHEDIR_SIGNATURE: &[u8; 43] = b"Signature: 8a477f597d28d172789f06886806bc55";

/// The statfs types `--exclude-kernfs` skips, ncdu's list: binfmt_misc,
/// bpf, cgroup, cgroup2, debugfs, devpts, proc, pstore, securityfs,
/// selinuxfs, sysfs, tracefs.
const KERNFS: [u64; 12] = [
    0x4249_4e4d,
    0xcafe_4a11,
    0x0027_e0eb,
    0x6367_7270,
    0x6462_6720,
    0x1cd1,
    0x9fa0,
    0x6165_676c,
    0x7363_6673,
    0xf97c_ff8c,
    0x6265_6572,
    0x7472_6163,
];

/// Whether subdirectory `name` of `dir` is left out, as `--exclude`
/// leaves an entry out: `--exclude-kernfs`, it is on another device than
/// `dir` (`other_dev`) and that is a kernel filesystem
/// ([`LeftOut::Kernfs`]), or `--exclude-caches` and it holds a valid
/// `CACHEDIR.TAG` ([`LeftOut::CacheTag`]). A directory that cannot be
/// opened is not left out here (its walk reports why, and records it).
fn excluded_dir(ctx: &Ctx<'_>, dir: &InDir<'_>, name: &CStr, other_dev: bool) -> Option<LeftOut> {
    let opts = &ctx.run.opts;
    let kernfs = opts.exclude_kernfs && other_dev;
    if !opts.exclude_caches && !kernfs {
        return None;
    }
    let mut flags = open::dir_flags(u32::MAX, None, opts.follow_links) | rfs::OFlags::NONBLOCK;
    flags.remove(rfs::OFlags::NOATIME);
    // Listed from the Btrfs tree, `dir.fd` is its subvolume's: open the
    // directory itself.
    let parent = if dir.lazy {
        match dir.h.fd(&ctx.fds.cache, flags) {
            Ok(fd) => Some(fd),
            Err(_) => return None,
        }
    } else {
        None
    };
    let pfd = parent.as_ref().map_or(dir.fd, |fd| fd.as_fd());
    let Ok(fd) = rfs::openat(pfd, name, flags, rfs::Mode::empty()) else {
        return None;
    };
    if kernfs && rfs::fstatfs(&fd).is_ok_and(|s| KERNFS.contains(&(s.f_type as u64))) {
        return Some(LeftOut::Kernfs);
    }
    (opts.exclude_caches && holds_cachedir_tag(fd.as_fd())).then_some(LeftOut::CacheTag)
}

/// Whether entry `x` of `dir`, stat-ed, is left out: `-x` and it lies on
/// another mount than its PATH ([`LeftOut::Mount`]), or a directory
/// [`excluded_dir`] leaves out.
#[inline(always)]
pub(super) fn left_beside(ctx: &Ctx<'_>, dir: &InDir<'_>, x: Stated<'_>) -> Option<LeftOut> {
    if ctx.run.opts.one_file_system && open::mount_of(x.st) != dir.h.root_mnt {
        return Some(LeftOut::Mount);
    }
    if x.kind == Kind::Dir {
        return excluded_dir(ctx, dir, x.e.name, x.dev != dir.h.dev);
    }
    None
}

/// Whether directory `dir` holds a regular file `CACHEDIR.TAG` that
/// starts with the signature. Opened as every file is when others may
/// have planted something ([`open::open_regular`] guarded: `O_PATH`,
/// `fstat`, then the regular file itself), so that no FIFO or device is
/// ever opened; read with `O_NOATIME` where permitted (its owner, or root).
fn holds_cachedir_tag(dir: BorrowedFd<'_>) -> bool {
    let flags = open::file_flags(false) | rfs::OFlags::NONBLOCK;
    let name = c"CACHEDIR.TAG";
    let tag = match open::open_regular(dir, name, flags | rfs::OFlags::NOATIME, true) {
        Err(Errno::PERM) => open::open_regular(dir, name, flags, true),
        other => other,
    };
    let Ok(Some((tag, _))) = tag else {
        return false;
    };
    let mut buf = [0u8; CACHEDIR_SIGNATURE.len()];
    let mut got = 0;
    while got < buf.len() {
        match rustix::io::read(&tag, &mut buf[got..]) {
            Ok(0) | Err(_) => return false,
            Ok(n) => got += n,
        }
    }
    &buf == CACHEDIR_SIGNATURE
}
