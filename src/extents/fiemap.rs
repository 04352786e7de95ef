//! `FS_IOC_FIEMAP`: the extent map of an open file.
//!
//! One of the seven ioctl modules of the crate that may use `unsafe` (with
//! [`super::btrfs_search`], [`super::btrfs_backref`], [`super::fsmap`],
//! [`crate::probe::ioctl`], `crate::delete::ioctl` and
//! `crate::browse::tty_ioctl`), and only to
//! hand ioctl argument buffers to the kernel through rustix's [`ioctl`]; every
//! struct passed that way is a `#[repr(C)]` mirror of a kernel UAPI struct
//! whose size is pinned at compile time, and every opcode is pinned by a test
//! against the value the kernel headers produce. The one other `unsafe`
//! call here is [`close`]: a mapped file's descriptor given up with the
//! `close` system call itself.
//!
//! # References
//!  - [`Documentation/filesystems/fiemap.rst`](https://docs.kernel.org/filesystems/fiemap.html)
//!  - `include/uapi/linux/fiemap.h`

// The ioctls below read and write caller-provided buffers; rustix can only
// offer them through its `unsafe` `ioctl` API. Fenced here so that the rest
// of the crate stays `unsafe_code = "deny"`.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{BorrowedFd, IntoRawFd, OwnedFd};

use rustix::ioctl::{Opcode, Updater, ioctl, opcode};

/// Closes a file once its extents are read, with the `close` system call
/// itself. Dropping an [`OwnedFd`] calls libc's `close`, a cancellation
/// point that updates the thread's cancellation state twice around the
/// call (two atomic operations): once per mapped file, in user time. As
/// with that drop, an error is ignored: Linux releases the descriptor
/// whatever `close` returns.
pub(crate) fn close(fd: OwnedFd) {
    // SAFETY: `into_raw_fd` gives up ownership of the descriptor, so it is
    // closed exactly once, here, and nothing else refers to it.
    unsafe { rustix::io::close(fd.into_raw_fd()) }
}

/// `struct fiemap` without its flexible array of extents: the request and
/// reply header of `FS_IOC_FIEMAP`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FiemapHeader {
    /// Logical offset (inclusive) at which to start mapping (in).
    pub(crate) fm_start: u64,
    /// Logical length of the mapping wanted (in).
    pub(crate) fm_length: u64,
    /// `FIEMAP_FLAG_*` for the request (in/out).
    pub(crate) fm_flags: u32,
    /// Number of extents that were mapped (out).
    pub(crate) fm_mapped_extents: u32,
    /// Size of the extent array that follows (in); 0 only counts.
    pub(crate) fm_extent_count: u32,
    /// Reserved, must be zero.
    pub(crate) fm_reserved: u32,
}

/// `struct fiemap_extent`: one mapped extent as the kernel reports it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FiemapExtent {
    /// Logical offset in bytes of the extent's start in the file.
    pub(crate) fe_logical: u64,
    /// Physical offset in bytes of the extent's start on the device.
    pub(crate) fe_physical: u64,
    /// Length in bytes.
    pub(crate) fe_length: u64,
    /// Reserved.
    pub(crate) fe_reserved64: [u64; 2],
    /// `FIEMAP_EXTENT_*` flags.
    pub(crate) fe_flags: u32,
    /// Reserved.
    pub(crate) fe_reserved: [u32; 3],
}

const _: () = assert!(size_of::<FiemapHeader>() == 32);
const _: () = assert!(size_of::<FiemapExtent>() == 56);

/// `FIEMAP_MAX_OFFSET`: "to the end of the file" as a request length.
pub(crate) const FIEMAP_MAX_OFFSET: u64 = u64::MAX;

/// Last extent of the file.
pub(crate) const FIEMAP_EXTENT_LAST: u32 = 0x0000_0001;
/// Data location unknown: `fe_physical` is meaningless.
pub(crate) const FIEMAP_EXTENT_UNKNOWN: u32 = 0x0000_0002;
/// Delayed allocation, location still pending; also sets `UNKNOWN`.
pub(crate) const FIEMAP_EXTENT_DELALLOC: u32 = 0x0000_0004;
/// Data is encoded (e.g. compressed on Btrfs): cannot be read with the fs
/// unmounted, and `fe_length` is the logical length, not the on-disk one.
pub(crate) const FIEMAP_EXTENT_ENCODED: u32 = 0x0000_0008;
/// Data is encrypted by the filesystem; also sets `NO_BYPASS`.
#[cfg(test)]
pub(crate) const FIEMAP_EXTENT_DATA_ENCRYPTED: u32 = 0x0000_0080;
/// Extent offsets may not be block aligned.
#[cfg(test)]
pub(crate) const FIEMAP_EXTENT_NOT_ALIGNED: u32 = 0x0000_0100;
/// Data mixed with metadata (inline extent); also sets `NOT_ALIGNED`.
pub(crate) const FIEMAP_EXTENT_DATA_INLINE: u32 = 0x0000_0200;
/// Multiple files in one block (tail packing); also sets `NOT_ALIGNED`.
pub(crate) const FIEMAP_EXTENT_DATA_TAIL: u32 = 0x0000_0400;
/// Space allocated but not written (reads as zeros).
#[cfg(test)]
pub(crate) const FIEMAP_EXTENT_UNWRITTEN: u32 = 0x0000_0800;
/// The filesystem has no native extents; the result was merged from blocks.
#[cfg(test)]
pub(crate) const FIEMAP_EXTENT_MERGED: u32 = 0x0000_1000;
/// Space shared with other files (or, on Btrfs, other references).
pub(crate) const FIEMAP_EXTENT_SHARED: u32 = 0x0000_2000;

/// Flags under which `fe_physical` is no usable disk address.
///
/// Such extents are never counted as shared, whatever else they carry.
/// `DATA_TAIL` is here too: a packed tail block is "shared" with unrelated
/// files, which is not the sharing sdu reports.
const NO_PHYSICAL: u32 = FIEMAP_EXTENT_UNKNOWN
    | FIEMAP_EXTENT_DELALLOC
    | FIEMAP_EXTENT_DATA_INLINE
    | FIEMAP_EXTENT_DATA_TAIL;

/// `ioctl(fd, FS_IOC_FIEMAP, &fiemap)`—get the extent map of a file;
/// `_IOWR('f', 11, struct fiemap)`.
pub(crate) const FS_IOC_FIEMAP: Opcode = opcode::read_write::<FiemapHeader>(b'f', 11);

/// One extent of a file, as FIEMAP reported it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Extent {
    /// Byte offset of the extent in the file.
    pub(crate) logical: u64,
    /// Byte offset of the extent on the device (meaningless unless
    /// [`has_physical`](Self::has_physical)).
    pub(crate) physical: u64,
    /// Length in bytes (on Btrfs, for an `ENCODED` extent, the logical
    /// length: compressed extents then overlap physically).
    pub(crate) length: u64,
    /// `FIEMAP_EXTENT_*` flags.
    pub(crate) flags: u32,
}

impl Extent {
    /// Whether `physical` is a usable disk address.
    ///
    /// False for unknown, delayed-allocation, inline and tail-packed extents.
    #[inline]
    pub(crate) fn has_physical(&self) -> bool {
        self.flags & NO_PHYSICAL == 0
    }

    /// Whether the kernel flags the extent as shared and it has a usable
    /// physical address.
    #[inline]
    pub(crate) fn is_shared(&self) -> bool {
        self.flags & FIEMAP_EXTENT_SHARED != 0 && self.has_physical()
    }

    /// Whether this is the file's last extent.
    #[inline]
    pub(crate) fn is_last(&self) -> bool {
        self.flags & FIEMAP_EXTENT_LAST != 0
    }
}

impl From<&FiemapExtent> for Extent {
    fn from(e: &FiemapExtent) -> Self {
        Self {
            logical: e.fe_logical,
            physical: e.fe_physical,
            length: e.fe_length,
            flags: e.fe_flags,
        }
    }
}

/// Extents fetched per `FS_IOC_FIEMAP` call.
///
/// 256 × 56 B = 14 KiB per thread: almost every file fits in one call (the
/// common file has 1–4 extents), and a heavily fragmented one costs one call
/// per 256 extents, which the kernel's own per-extent work dwarfs.
pub(crate) const FIEMAP_BATCH: usize = 256;

/// The ioctl argument: a header followed, contiguously, by the extent array.
#[repr(C)]
struct FiemapBuf {
    header: FiemapHeader,
    extents: [FiemapExtent; FIEMAP_BATCH],
}

const _: () = assert!(size_of::<FiemapBuf>() == 32 + 56 * FIEMAP_BATCH);

/// A reusable FIEMAP request buffer: create one per thread and map many files
/// with it.
///
/// It owns a fixed [`FIEMAP_BATCH`]-extent buffer on the heap, allocated once.
pub(crate) struct Fiemap {
    buf: Box<FiemapBuf>,
}

impl Default for Fiemap {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Fiemap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fiemap")
            .field("batch", &FIEMAP_BATCH)
            .finish()
    }
}

impl Fiemap {
    /// Allocates the buffer.
    pub(crate) fn new() -> Self {
        Self {
            buf: Box::new(FiemapBuf {
                header: FiemapHeader::default(),
                extents: [FiemapExtent::default(); FIEMAP_BATCH],
            }),
        }
    }

    /// Maps the whole file open at `fd`, calling `f` for each extent in
    /// logical order, and returns the number of ioctl calls made.
    ///
    /// Starts at offset 0 and loops, each call starting where the previous
    /// call's last extent ended, until an extent carries
    /// `FIEMAP_EXTENT_LAST` or a call maps no extent. Never sets
    /// `FIEMAP_FLAG_SYNC`: dirty data comes back as `DELALLOC`/`UNKNOWN`
    /// (see [`Extent::has_physical`]).
    ///
    /// Guards against misbehaving filesystems: an extent that ends at or
    /// before the requested start (already reported) is skipped; a call that
    /// would not advance, or an extent end past `u64::MAX`, ends the map with
    /// an `InvalidData` error (the extents already passed to `f` stand). A
    /// continuation call refused with `EFBIG` (start beyond the filesystem's
    /// maximum file size) ends the map normally.
    ///
    /// # Errors
    /// The ioctl's error: `EOPNOTSUPP`/`ENOTTY` where the filesystem has no
    /// FIEMAP (NFS, FUSE without it), `EBADF`, `EINTR`…
    pub(crate) fn for_each(
        &mut self,
        fd: BorrowedFd<'_>,
        mut f: impl FnMut(&Extent),
    ) -> io::Result<u32> {
        let mut start = 0u64;
        let mut calls = 0u32;
        loop {
            self.buf.header = FiemapHeader {
                fm_start: start,
                fm_length: FIEMAP_MAX_OFFSET - start,
                fm_flags: 0,
                fm_mapped_extents: 0,
                fm_extent_count: FIEMAP_BATCH as u32,
                fm_reserved: 0,
            };
            // SAFETY: FS_IOC_FIEMAP takes a `struct fiemap` followed by
            // `fm_extent_count` `struct fiemap_extent`s; `FiemapBuf` is
            // exactly that layout (repr(C), sizes pinned above) with
            // FIEMAP_BATCH extents, and the kernel writes at most
            // `fm_extent_count` of them. The buffer is exclusively borrowed
            // for the duration of the call.
            let res = unsafe {
                ioctl(
                    fd,
                    Updater::<{ FS_IOC_FIEMAP }, FiemapBuf>::new(&mut self.buf),
                )
            };
            match res {
                Ok(()) => {}
                Err(rustix::io::Errno::FBIG) if calls > 0 => return Ok(calls),
                Err(e) => return Err(e.into()),
            }
            calls += 1;
            let n = (self.buf.header.fm_mapped_extents as usize).min(FIEMAP_BATCH);
            if n == 0 {
                return Ok(calls);
            }
            let mut next = start;
            for raw in &self.buf.extents[..n] {
                let e = Extent::from(raw);
                let Some(end) = e.logical.checked_add(e.length) else {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "FIEMAP extent ends past u64::MAX",
                    ));
                };
                // On a continuation call, an extent ending at or before the
                // requested start was already reported.
                if calls > 1 && end <= start {
                    continue;
                }
                f(&e);
                if e.is_last() {
                    return Ok(calls);
                }
                next = next.max(end);
            }
            if next <= start {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "FIEMAP made no progress",
                ));
            }
            if next == FIEMAP_MAX_OFFSET {
                return Ok(calls);
            }
            start = next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extents::test_files::{clone_file, noise, write_synced};
    use crate::probe::ioctl::{
        BTRFS_IOC_FS_INFO, BTRFS_IOC_GET_SUBVOL_INFO, BTRFS_IOC_SPACE_INFO, FS_IOC_GETFSUUID,
        XFS_IOC_FSGEOMETRY, XFS_IOC_FSGEOMETRY_V4, btrfs_fsid, fs_uuid, vfs_uuid,
        xfs_reflink_enabled,
    };
    use std::fs::{File, OpenOptions};
    use std::io::Write;
    use std::os::fd::AsFd;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    // `Opcode` is `u32` with rustix's linux_raw backend but `c_ulong` or
    // `c_int` with its libc one: the casts are needed off x86-64 linux_raw.
    #[allow(clippy::unnecessary_cast)]
    #[test]
    fn opcodes_match_kernel_headers() {
        // Values from <linux/fs.h>, <linux/btrfs.h> (linux-libc-dev),
        // <xfs/xfs_fs.h> (xfslibs-dev) and, for GETFSUUID, Linux 6.10's fs.h.
        assert_eq!(FS_IOC_FIEMAP as u32, 0xc020_660b);
        assert_eq!(XFS_IOC_FSGEOMETRY as u32, 0x8100_587e);
        assert_eq!(XFS_IOC_FSGEOMETRY_V4 as u32, 0x8070_587c);
        assert_eq!(FS_IOC_GETFSUUID as u32, 0x8011_1500);
        assert_eq!(BTRFS_IOC_FS_INFO as u32, 0x8400_941f);
        assert_eq!(BTRFS_IOC_GET_SUBVOL_INFO as u32, 0x81f8_943c);
        assert_eq!(BTRFS_IOC_SPACE_INFO as u32, 0xc010_9414);
    }

    #[test]
    fn flags_without_physical_are_never_shared() {
        for flags in [
            FIEMAP_EXTENT_UNKNOWN,
            FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_UNKNOWN,
            FIEMAP_EXTENT_DATA_INLINE | FIEMAP_EXTENT_NOT_ALIGNED,
            FIEMAP_EXTENT_DATA_TAIL,
        ] {
            let e = Extent {
                flags: flags | FIEMAP_EXTENT_SHARED,
                ..Extent::default()
            };
            assert!(!e.has_physical() && !e.is_shared(), "{flags:#x}");
        }
        let e = Extent {
            flags: FIEMAP_EXTENT_SHARED | FIEMAP_EXTENT_ENCODED | FIEMAP_EXTENT_LAST,
            ..Extent::default()
        };
        assert!(e.has_physical() && e.is_shared() && e.is_last());
    }

    fn extents_of(path: &Path) -> (Vec<Extent>, u32) {
        let f = File::open(path).unwrap();
        let mut fm = Fiemap::new();
        let mut v = Vec::new();
        let calls = fm.for_each(f.as_fd(), |e| v.push(*e)).unwrap();
        (v, calls)
    }

    fn show(label: &str, ext: &[Extent]) {
        eprintln!("{label}:");
        for e in ext {
            eprintln!(
                "  logical {:>9} physical {:>12} length {:>9} flags {:#06x}",
                e.logical, e.physical, e.length, e.flags
            );
        }
    }

    /// Writes `len` bytes that do not compress or, with `compressible`, a
    /// repeating pattern.
    fn write_data(path: &Path, len: usize, compressible: bool) {
        let data: Vec<u8> = if compressible {
            (0..len).map(|i| (i % 7) as u8).collect()
        } else {
            noise(len, 0x9e37_79b9_7f4a_7c15)
        };
        write_synced(path, &data);
    }

    #[test]
    fn fiemap_plain_file_on_host_fs() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("plain");
        // Dirty data first: no FIEMAP_FLAG_SYNC, so it may be delalloc.
        std::fs::write(&p, vec![1u8; 64 * 1024]).unwrap();
        let (ext, _) = extents_of(&p);
        show("host fs, unsynced", &ext);
        assert!(ext.iter().all(|e| !e.is_shared()));
        assert!(
            ext.iter()
                .all(|e| e.has_physical() || e.flags & FIEMAP_EXTENT_UNKNOWN != 0)
        );
        assert!(ext.last().is_some_and(Extent::is_last));

        write_data(&p, 3 * 1024 * 1024, false);
        let (ext, calls) = extents_of(&p);
        show("host fs, synced", &ext);
        assert_eq!(calls, 1);
        assert!(!ext.is_empty() && ext.iter().all(|e| e.has_physical() && !e.is_shared()));
        assert_eq!(ext.iter().map(|e| e.length).sum::<u64>(), 3 * 1024 * 1024);
        assert!(ext.last().unwrap().is_last());

        // An empty file maps to nothing, in one call.
        let empty = dir.path().join("empty");
        File::create(&empty).unwrap();
        assert_eq!(extents_of(&empty), (vec![], 1));

        // The host filesystem either publishes a UUID or says it has none.
        let f = File::open(&p).unwrap();
        match fs_uuid(f.as_fd()) {
            Ok(u) => assert_eq!(fs_uuid(f.as_fd()).unwrap(), u),
            Err(e) => eprintln!("host fs_uuid: {e}"),
        }
        assert!(!xfs_reflink_enabled(f.as_fd()).unwrap());
    }

    #[test]
    fn fiemap_loops_over_many_extents() {
        // A sparse file with more extents than one batch holds: every other
        // 4 KiB block written, so no two extents merge.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("holes");
        let f = File::create(&p).unwrap();
        let n = FIEMAP_BATCH as u64 * 2 + 10;
        for i in 0..n {
            rustix::io::pwrite(&f, &[7u8; 4096], i * 8192).unwrap();
        }
        f.sync_all().unwrap();
        let (ext, calls) = extents_of(&p);
        assert_eq!(ext.len() as u64, n);
        assert_eq!(calls, 3);
        assert!(
            ext.windows(2)
                .all(|w| w[0].logical + w[0].length <= w[1].logical)
        );
        assert!(ext.last().unwrap().is_last());
    }

    /// Whether the loopback tests must run (CI) or may be skipped.
    fn must_run() -> bool {
        std::env::var("CI").is_ok_and(|v| v == "true")
    }

    fn skip(why: &str) {
        if must_run() {
            panic!("loopback test cannot run under CI=true: {why}");
        }
        // Straight to fd 2: libtest captures `eprintln!`, not this.
        let _ = writeln!(
            std::io::stderr(),
            "!!!!!!!! SKIPPED loopback filesystem test: {why} !!!!!!!!"
        );
    }

    fn run(cmd: &str, args: &[&str]) -> Result<(), String> {
        let out = Command::new(cmd)
            .args(args)
            .output()
            .map_err(|e| format!("{cmd}: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{cmd} {args:?}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }

    /// A loop-mounted filesystem image, unmounted (and deleted) on drop.
    struct LoopMount {
        _dir: tempfile::TempDir,
        mnt: PathBuf,
        mounted: bool,
    }

    impl LoopMount {
        /// Creates a 320 MiB sparse image, formats it with `mkfs` + `args`
        /// and loop-mounts it with `opts`.
        fn new(mkfs: &str, args: &[&str], opts: &str) -> Result<Self, String> {
            if !rustix::process::geteuid().is_root() {
                return Err("not root".into());
            }
            let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
            let img = dir.path().join("fs.img");
            let mnt = dir.path().join("mnt");
            std::fs::create_dir(&mnt).map_err(|e| e.to_string())?;
            File::create(&img)
                .and_then(|f| f.set_len(320 << 20))
                .map_err(|e| e.to_string())?;
            let img_s = img.to_str().unwrap();
            let mut all: Vec<&str> = args.to_vec();
            all.push(img_s);
            run(mkfs, &all)?;
            let mut this = Self {
                _dir: dir,
                mnt,
                mounted: false,
            };
            let o = format!("loop,{opts}");
            run("mount", &["-o", &o, img_s, this.mnt.to_str().unwrap()])?;
            this.mounted = true;
            Ok(this)
        }

        fn path(&self, name: &str) -> PathBuf {
            self.mnt.join(name)
        }
    }

    impl Drop for LoopMount {
        fn drop(&mut self) {
            if self.mounted {
                if let Err(e) = run("umount", &[self.mnt.to_str().unwrap()]) {
                    eprintln!("cleanup failed: {e}");
                }
            }
        }
    }

    fn mount_or_skip(mkfs: &str, args: &[&str], opts: &str) -> Option<LoopMount> {
        match LoopMount::new(mkfs, args, opts) {
            Ok(m) => Some(m),
            Err(e) => {
                skip(&e);
                None
            }
        }
    }

    fn uuid_of(p: &Path) -> [u8; 16] {
        fs_uuid(File::open(p).unwrap().as_fd()).unwrap()
    }

    #[test]
    fn xfs_reflink_clone_is_shared() {
        let Some(m) = mount_or_skip("mkfs.xfs", &["-q", "-f", "-m", "reflink=1"], "rw") else {
            return;
        };
        let a = m.path("a");
        let b = m.path("b");
        write_data(&a, 1 << 20, false);
        let (before, _) = extents_of(&a);
        show("xfs a before clone", &before);
        assert!(before.iter().all(|e| e.has_physical() && !e.is_shared()));

        clone_file(&a, &b);
        let (ea, _) = extents_of(&a);
        let (eb, _) = extents_of(&b);
        show("xfs a after clone", &ea);
        show("xfs b (clone)", &eb);
        assert!(ea.iter().all(Extent::is_shared) && eb.iter().all(Extent::is_shared));
        let phys = |v: &[Extent]| v.iter().map(|e| (e.physical, e.length)).collect::<Vec<_>>();
        assert_eq!(phys(&ea), phys(&eb));

        // Overwrite the first 64 KiB of b: copy-on-write unshares just that.
        let f = OpenOptions::new().write(true).open(&b).unwrap();
        rustix::io::pwrite(&f, &[9u8; 65536], 0).unwrap();
        f.sync_all().unwrap();
        let (eb, _) = extents_of(&b);
        show("xfs b after 64 KiB overwrite", &eb);
        let unshared: u64 = eb.iter().filter(|e| !e.is_shared()).map(|e| e.length).sum();
        assert_eq!(unshared, 65536);

        let fa = File::open(&a).unwrap();
        assert!(xfs_reflink_enabled(fa.as_fd()).unwrap());
        let u = uuid_of(&a);
        assert_ne!(u, [0; 16]);
        assert_eq!(uuid_of(&b), u);
        assert_eq!(uuid_of(&m.mnt), u);
        eprintln!("xfs FS_IOC_GETFSUUID: {u:02x?}");
    }

    #[test]
    fn xfs_without_reflink() {
        let Some(m) = mount_or_skip("mkfs.xfs", &["-q", "-f", "-m", "reflink=0"], "rw") else {
            return;
        };
        let a = m.path("a");
        write_data(&a, 4096, false);
        let fa = File::open(&a).unwrap();
        assert!(!xfs_reflink_enabled(fa.as_fd()).unwrap());
        assert!(rustix::fs::ioctl_ficlone(File::create(m.path("b")).unwrap(), &fa).is_err());
    }

    #[test]
    fn btrfs_clone_snapshot_and_compression() {
        let Some(m) = mount_or_skip("mkfs.btrfs", &["-q", "-f"], "compress=zstd") else {
            return;
        };
        let run_ok = |cmd: &str, args: &[&str]| run(cmd, args).unwrap();
        let sub = m.path("sub");
        run_ok(
            "btrfs",
            &["-q", "subvolume", "create", sub.to_str().unwrap()],
        );
        let a = sub.join("a");
        write_data(&a, 1 << 20, false);
        let c = sub.join("c");
        write_data(&c, 1 << 20, true);
        let (ea, _) = extents_of(&a);
        let (ec, _) = extents_of(&c);
        show("btrfs a (random data, compress=zstd)", &ea);
        show("btrfs c (compressible, compress=zstd)", &ec);
        assert!(ea.iter().all(|e| e.has_physical() && !e.is_shared()));
        assert!(
            ec.iter()
                .all(|e| e.flags & FIEMAP_EXTENT_ENCODED != 0 && !e.is_shared())
        );

        let b = sub.join("b");
        clone_file(&a, &b);
        let d = sub.join("d");
        clone_file(&c, &d);
        let (ea, _) = extents_of(&a);
        let (eb, _) = extents_of(&b);
        let (ed, _) = extents_of(&d);
        show("btrfs a after clone", &ea);
        show("btrfs b (clone of a)", &eb);
        show("btrfs d (clone of compressed c)", &ed);
        assert!(ea.iter().chain(&eb).chain(&ed).all(Extent::is_shared));

        let snap = m.path("snap");
        run_ok(
            "btrfs",
            &[
                "-q",
                "subvolume",
                "snapshot",
                sub.to_str().unwrap(),
                snap.to_str().unwrap(),
            ],
        );
        let (es, _) = extents_of(&snap.join("a"));
        show("btrfs snap/a", &es);
        assert!(es.iter().all(Extent::is_shared));

        let u = uuid_of(&m.mnt);
        assert_ne!(u, [0; 16]);
        for p in [&sub, &a, &snap, &snap.join("c")] {
            assert_eq!(uuid_of(p), u, "{}", p.display());
        }
        assert_eq!(uuid_of(&a), uuid_of(&a), "stable");
        let fa = File::open(&a).unwrap();
        eprintln!(
            "btrfs FS_IOC_GETFSUUID: {:02x?}\nbtrfs BTRFS_IOC_FS_INFO: {:02x?}",
            vfs_uuid(fa.as_fd()),
            btrfs_fsid(fa.as_fd())
        );
        assert_eq!(btrfs_fsid(fa.as_fd()).unwrap(), u);
        // The snapshot has its own st_dev: the reason for fs_uuid.
        let dev = |p: &Path| rustix::fs::stat(p).unwrap().st_dev;
        assert_ne!(dev(&a), dev(&snap.join("a")));
        assert!(!xfs_reflink_enabled(File::open(&a).unwrap().as_fd()).unwrap());
    }
}
