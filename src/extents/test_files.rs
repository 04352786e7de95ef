//! Files the unit tests of the ioctl modules write on their loopback
//! filesystems: data that does not compress, written and synced so that it
//! has addresses, and reflink copies.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

/// `n` bytes that do not compress (xorshift from `seed`).
pub(crate) fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Writes `data` to `path` and syncs it: allocated, so FIEMAP and the
/// extent tree have addresses for it.
pub(crate) fn write_synced(path: &Path, data: &[u8]) {
    let mut f = File::create(path).unwrap();
    f.write_all(data).unwrap();
    f.sync_all().unwrap();
}

/// `dst` becomes a reflink copy of `src` (FICLONE).
pub(crate) fn clone_file(src: &Path, dst: &Path) {
    let s = File::open(src).unwrap();
    let d = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(dst)
        .unwrap();
    rustix::fs::ioctl_ficlone(&d, &s).unwrap();
}
