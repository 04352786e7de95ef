//! The C library's allocator, tuned for a scan: glibc's `mallopt`.
//!
//! glibc serves a request of `M_MMAP_THRESHOLD` bytes or more with a
//! mapping of its own, returned to the kernel when freed, and raises that
//! threshold each time such a mapping is freed (up to 32 MiB on 64-bit):
//! after that, the vectors a scan grows by doubling and frees (a
//! directory's listing, a batch of search results, the records gathered
//! after the walk) are carved out of the walk threads' arenas, and what
//! they leave free there stays resident. A threshold fixed at the start
//! keeps them mapped apart.

/// `M_MMAP_THRESHOLD` in glibc's `<malloc.h>`.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const M_MMAP_THRESHOLD: std::ffi::c_int = -3;

#[cfg(all(target_os = "linux", target_env = "gnu"))]
unsafe extern "C" {
    /// glibc's `int mallopt(int param, int value)`.
    fn mallopt(param: std::ffi::c_int, value: std::ffi::c_int) -> std::ffi::c_int;
    /// glibc's `int malloc_trim(size_t pad)`.
    fn malloc_trim(pad: usize) -> std::ffi::c_int;
}

/// Fixes the size from which glibc maps each allocation apart at `bytes`
/// (at most `c_int::MAX`), and stops it from moving. Whether it was set; a
/// C library other than glibc has nothing to set (false).
pub fn fix_mmap_threshold(bytes: usize) -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let Ok(value) = std::ffi::c_int::try_from(bytes) else {
            return false;
        };
        // SAFETY: mallopt takes two ints by value and touches no memory of
        // the caller's; glibc serialises it against the allocator itself.
        unsafe { mallopt(M_MMAP_THRESHOLD, value) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        let _ = bytes;
        false
    }
}

/// Gives the kernel back the free pages of every arena of glibc's
/// allocator (`malloc_trim(0)`: the whole pages inside free chunks, not
/// only an arena's free top), so that memory the threads freed in one
/// stage is no longer resident in the next. Whether any was given back;
/// a C library other than glibc gives nothing back (false).
pub fn trim() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim takes a size by value and touches no memory
        // of the caller's; glibc locks each arena while it trims it.
        unsafe { malloc_trim(0) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_threshold_is_set_on_glibc() {
        let set = super::fix_mmap_threshold(128 << 10);
        assert_eq!(set, cfg!(all(target_os = "linux", target_env = "gnu")));
    }

    #[test]
    fn freed_pages_are_given_back_on_glibc() {
        // 16 MiB in blocks of 1 KiB, far below any mmap threshold: carved
        // from this thread's arena, and free there once dropped.
        let blocks: Vec<Box<[u8; 1024]>> = (0..16 << 10).map(|_| Box::new([1u8; 1024])).collect();
        assert!(blocks.iter().all(|b| b[1023] == 1));
        drop(blocks);
        let given = super::trim();
        assert_eq!(given, cfg!(all(target_os = "linux", target_env = "gnu")));
    }
}
