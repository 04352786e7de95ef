//! What `sdu --df` reads of df's Used (src/df/space.rs and
//! src/df/deleted_subvolumes.rs, through crates/sdu-sys), each figure
//! against one the filesystem gives independently, on fresh loopbacks:
//!
//! - Btrfs, single and DUP metadata: `BTRFS_IOC_SPACE_INFO`'s kinds sum,
//!   as `btrfs_statfs` does, to statvfs's Used to the byte; its data to
//!   `btrfs filesystem usage -b`'s Data Used and the planted bytes; DUP
//!   metadata counted twice.
//! - Btrfs, a subvolume deleted while the cleaner cannot run (a read-only
//!   mount): its orphan item is found and the data its drop frees is the
//!   planted bytes no live subvolume shares; after a read-write mount and
//!   `btrfs subvolume sync`, Data Used drops by exactly those bytes.
//! - XFS with rmapbt: `GETFSMAP` over the whole device accounts for every
//!   byte of it (free, log, metadata owners and file data, shared data
//!   once), its file data is the planted bytes, its inode chunks are the
//!   allocated inodes `XFS_IOC_FSCOUNTS` counts; without rmapbt it names
//!   no owner.
//! - Without `CAP_SYS_ADMIN` (a thread whose effective uid is nobody's),
//!   the tree search, `GETFSMAP`'s owners and the reserve pool are refused.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;
use std::process::Command;

use sdu_sys::btrfs::{self, space};
use sdu_sys::{fsmap, xfs};

use crate::btrfs::subvolume;
use crate::util::*;

const MIB: u64 = 1 << 20;

/// statvfs's Used (`(f_blocks − f_bfree) × f_frsize`) and `f_frsize`.
fn statvfs_used(mnt: &Path) -> (u64, u64) {
    let s = rustix::fs::statvfs(mnt).unwrap();
    ((s.f_blocks - s.f_bfree) * s.f_frsize, s.f_frsize)
}

/// Runs `f` on a thread whose effective uid is nobody's, which drops
/// every effective capability; the thread's credentials end with it.
fn as_nobody<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    std::thread::scope(|s| {
        s.spawn(|| {
            let nobody = rustix::process::Uid::from_raw(65534);
            rustix::thread::set_thread_res_uid(None, nobody, None).unwrap();
            f()
        })
        .join()
        .unwrap()
    })
}

/// SPACE_INFO against statvfs and `btrfs filesystem usage`, with metadata
/// in profile `meta` (`single` or `dup`).
fn btrfs_space_adds_up(meta: &str) {
    let Some(fs) = LoopFs::with_mkfs(FsKind::Btrfs, &["-m", meta]) else {
        return;
    };
    let d = fs.path();
    let t = Tree { root: d };
    t.write("a", 8 * MIB);
    t.write("dir/b", 3 * MIB + 4096);
    // Small files: inline, in metadata.
    for i in 0..50 {
        std::fs::write(d.join(format!("dir/s{i}")), vec![b'x'; 1000]).unwrap();
    }
    let (data_tool, meta_tool) = btrfs_used(d);
    let dir = File::open(d).unwrap();
    let slots = btrfs::space_info(dir.as_fd()).unwrap();
    let (used, block) = statvfs_used(d);
    assert_eq!(slots, btrfs::space_info(dir.as_fd()).unwrap(), "settled");
    assert_eq!(
        btrfs::statfs_used(&slots, block),
        Some(used),
        "Σ disk used ÷ data copies + global reserve is statvfs's Used: {slots:?}"
    );
    let data: u64 = slots
        .iter()
        .filter(|s| s.flags & space::BLOCK_GROUP_DATA != 0)
        .map(|s| s.used)
        .sum();
    assert_eq!(data, data_tool, "data used, as btrfs filesystem usage");
    assert_eq!(data, 11 * MIB + 4096, "the planted data");
    assert_eq!(btrfs::data_used(dir.as_fd()).unwrap(), Some(data));
    let m = slots
        .iter()
        .find(|s| s.flags & space::BLOCK_GROUP_METADATA != 0)
        .unwrap();
    assert_eq!(
        m.used, meta_tool,
        "metadata used, as btrfs filesystem usage"
    );
    let copies = if meta == "dup" { 2 } else { 1 };
    assert_eq!((m.copies(), m.disk_used()), (copies, copies * m.used));
    let reserve = slots.iter().find(|s| s.is_global_reserve()).unwrap();
    assert!(reserve.total > 0, "a global reserve: {slots:?}");
    // The parts as src/df/space.rs sums them: data + metadata × copies +
    // system × copies + the reserve in whole blocks.
    let parts: u64 = slots
        .iter()
        .map(|s| {
            if s.is_global_reserve() {
                s.total / block * block
            } else {
                s.disk_used()
            }
        })
        .sum();
    assert_eq!(parts, used);
    // SPACE_INFO needs no privilege.
    let as_user = as_nobody(|| btrfs::space_info(dir.as_fd()).map_err(|e| e.kind()));
    assert_eq!(as_user, Ok(slots));
}

#[test]
fn btrfs_space_info_is_statvfs_used_single_metadata() {
    btrfs_space_adds_up("single");
}

#[test]
fn btrfs_space_info_is_statvfs_used_dup_metadata() {
    btrfs_space_adds_up("dup");
}

/// Mounts the filesystem of `fs` again with `opts`.
fn remount(fs: &LoopFs, opts: &str) {
    umount_retrying(fs.path());
    run(Command::new("mount")
        .args(["-t", "btrfs", "-o", opts, fs.device()])
        .arg(fs.path()))
    .assert_ok();
}

/// The subvolume id of `p`.
fn subvol_id(p: &Path) -> u64 {
    btrfs::subvol_id(File::open(p).unwrap().as_fd()).unwrap()
}

/// Two subvolumes deleted on a read-only mount: `alone` (8 MiB no one else
/// holds) and `kept` (4 MiB shared with a snapshot that stays, and 2 MiB of
/// its own). Their drop frees 8 + 2 MiB, which Data Used loses once the
/// cleaner has run.
#[test]
fn deleted_subvolumes_before_the_cleaner() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    let t = Tree { root: d };
    subvolume(&d.join("alone"));
    t.write("alone/f", 8 * MIB);
    subvolume(&d.join("kept"));
    t.write("kept/shared", 4 * MIB);
    crate::btrfs::ro_snapshot(&d.join("kept"), &d.join("snap"));
    t.write("kept/own", 2 * MIB);
    let ids = (subvol_id(&d.join("alone")), subvol_id(&d.join("kept")));
    // Committed with syncfs: `btrfs filesystem sync` would wake the
    // cleaner, which could drop the subvolumes before the unmount.
    sync_fs(d);
    let before = btrfs_data_used(d);
    // Delete both, then unmount at once: the cleaner has had no time, and
    // does not run on a read-only mount (cleaner_kthread sleeps while
    // btrfs_need_cleaner_sleep: SB_RDONLY).
    run(Command::new("btrfs")
        .args(["subvolume", "delete"])
        .arg(d.join("alone"))
        .arg(d.join("kept")))
    .assert_ok();
    remount(&fs, "ro");
    let dir = File::open(d).unwrap();
    let dead = btrfs::dead_roots(dir.as_fd()).unwrap();
    let mut dead_ids: Vec<u64> = dead.iter().map(|r| r.id).collect();
    dead_ids.sort_unstable();
    assert_eq!(dead_ids, [ids.0, ids.1], "{dead:?}");
    let data = btrfs::dead_data(dir.as_fd(), &dead_ids).unwrap();
    assert_eq!(
        (data.bytes, data.unresolved),
        (10 * MIB, 0),
        "8 MiB alone + 2 MiB kept's own; the 4 MiB the snapshot holds stays: {data:?}"
    );
    assert_eq!(data.per_root, [(ids.0, 8 * MIB), (ids.1, 2 * MIB)]);
    assert_eq!(btrfs_data_used(d), before, "nothing freed on the ro mount");
    // Without CAP_SYS_ADMIN the root tree cannot be read.
    let refused = as_nobody(|| btrfs::dead_roots(dir.as_fd()).map_err(|e| e.kind()));
    assert_eq!(refused, Err(std::io::ErrorKind::PermissionDenied));
    drop(dir);
    // The independent check: let the cleaner drop them.
    remount(&fs, "rw");
    // BTRFS_IOC_SYNC wakes the cleaner; then wait for it.
    btrfs(&["filesystem", "sync"], d);
    btrfs(&["subvolume", "sync"], d);
    let after = btrfs_used(d).0;
    assert_eq!(
        before - after,
        data.bytes,
        "Data Used dropped by what was found"
    );
    let dir = File::open(d).unwrap();
    assert_eq!(btrfs::dead_roots(dir.as_fd()).unwrap(), []);
}

/// The data device's whole GETFSMAP, summed.
fn xfs_summary(fd: BorrowedFd<'_>) -> std::io::Result<fsmap::Summary> {
    let dev = fsmap::data_device(rustix::fs::fstat(fd).unwrap().st_dev);
    fsmap::summary(fd, dev)
}

#[test]
fn xfs_fsmap_accounts_for_every_block() {
    let Some(fs) = LoopFs::with_mkfs(FsKind::Xfs, &["-m", "rmapbt=1"]) else {
        return;
    };
    let d = fs.path();
    let t = Tree { root: d };
    t.write("a", 8 * MIB);
    t.clone("a", "a2");
    t.write("dir/b", 3 * MIB + 4096);
    trim_xfs_prealloc(d);
    sync_fs(d);
    let dir = File::open(d).unwrap();
    let fd = dir.as_fd();
    let sum = xfs_summary(fd).unwrap();
    let l = xfs::layout(fd).unwrap().unwrap();
    let bs = u64::from(l.blocksize);
    // Every byte of the device once: shared data once, the log, the free
    // space and the metadata owners.
    let specials: u64 = sum.special.iter().map(|&(_, b)| b).sum();
    assert_eq!(
        specials + sum.data + sum.extent_maps + sum.xattrs,
        l.datablocks * bs,
        "{sum:?}"
    );
    assert_eq!(sum.data, 11 * MIB + 4096, "the planted data, shared once");
    assert!(l.internal_log);
    assert_eq!(
        sum.special(fsmap::XFS_FMR_OWN_LOG),
        u64::from(l.logblocks) * bs
    );
    let counts = xfs::counts(fd).unwrap().unwrap();
    assert_eq!(
        sum.special(fsmap::XFS_FMR_OWN_INODES),
        counts.allocino * u64::from(l.inodesize),
        "inode chunks: every allocated inode"
    );
    // statfs: the blocks counted used = the device less the log, less
    // the free space, plus what it holds back; so Used ≥ every owned
    // block but the log's, by the reserve pool at least.
    let (used, _) = statvfs_used(d);
    let free = sum.special(fsmap::FMR_OWN_FREE);
    let owned = l.datablocks * bs - free - sum.special(fsmap::XFS_FMR_OWN_LOG);
    let pool = xfs::resblks(fd).unwrap().unwrap();
    assert!(pool.resblks_avail > 0 && pool.resblks_avail <= pool.resblks);
    assert!(
        used >= owned + pool.resblks_avail * bs,
        "Used {used} < owned {owned} + pool {pool:?}"
    );
    // Without CAP_SYS_ADMIN: no owner named, no reserve pool.
    let refused = as_nobody(|| {
        (
            xfs_summary(fd).map(|_| ()).map_err(|e| e.kind()),
            xfs::resblks(fd).map(|_| ()).map_err(|e| e.kind()),
            xfs::counts(fd).map(|c| c.map(|c| c.allocino)).ok(),
        )
    });
    assert_eq!(
        refused,
        (
            Err(std::io::ErrorKind::PermissionDenied),
            Err(std::io::ErrorKind::PermissionDenied),
            Some(Some(counts.allocino)),
        )
    );
}

#[test]
fn xfs_without_rmapbt_names_no_owner() {
    let Some(fs) = LoopFs::with_mkfs(FsKind::Xfs, &["-m", "rmapbt=0"]) else {
        return;
    };
    let dir = File::open(fs.path()).unwrap();
    let fd = dir.as_fd();
    assert_eq!(
        xfs_summary(fd).map(|_| ()).map_err(|e| e.kind()),
        Err(std::io::ErrorKind::Unsupported)
    );
    let l = xfs::layout(fd).unwrap().unwrap();
    assert_eq!(l.flags & xfs::XFS_FSOP_GEOM_FLAGS_RMAPBT, 0);
    assert!(xfs::resblks(fd).unwrap().unwrap().resblks > 0);
}
