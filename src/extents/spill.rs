//! The index of shared ranges past its memory budget: sorted runs of
//! mappings written to a temporary file, read back merged in order.
//!
//! A walk thread whose arena would grow past its share of the budget sorts
//! it and appends it to the file as one run ([`TempFile::write_run`]),
//! then starts it again empty. After the walk every question reads the
//! runs back through a k-way merge ([`Merge`]), each run through a buffer
//! of its own: in the order the sweep needs, holding a buffer per run
//! rather than the mappings. Past [`Tuning::fan_in`] runs, groups of runs
//! are merged into one first ([`compact`]).
//!
//! The file is made in the directory `TMPDIR` names (`/tmp` when unset or
//! empty) with `O_TMPFILE`, or where that is not supported created under a
//! unique name and unlinked at once: it has no name while sdu runs, and
//! goes with its descriptor, however sdu ends.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::collections::binary_heap::PeekMut;
use std::fs::File;
use std::io;
use std::marker::PhantomData;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use rustix::fs::{FallocateFlags, Mode, OFlags};
use rustix::io::Errno;

/// A mapping as a run keeps it: a fixed number of bytes in the file,
/// ordered by its range, then its file.
pub(super) trait Item: Copy + Ord {
    /// Its bytes in the file.
    const SIZE: usize;
    /// Appends its bytes to `out`.
    fn put(&self, out: &mut Vec<u8>);
    /// Reads it back from `b`, [`Self::SIZE`] bytes.
    fn get(b: &[u8]) -> Self;
    /// Its range, in an order that agrees with the item's: the mappings of
    /// one range are next to each other in a sorted run.
    fn key(&self) -> (u64, u64);
    /// The range as `(start, end)`, in bytes.
    fn range(&self) -> (u64, u64);
    /// The file that maps it.
    fn file(&self) -> u32;
}

/// How runs are made and read back, from the budget.
#[derive(Clone, Copy, Debug)]
pub(super) struct Tuning {
    /// Bytes of mappings the arenas may hold in all.
    pub(super) budget: u64,
    /// The buffer of each run being read, in bytes.
    pub(super) buf: usize,
    /// The most runs merged at once.
    pub(super) fan_in: usize,
    /// One mapping in `fence` of a run is kept in memory, to start a
    /// lookup near its range ([`SpilledRun::count`]).
    pub(super) fence: usize,
    /// The least bytes an arena holds before it spills.
    pub(super) min_shard: u64,
}

impl Tuning {
    /// For a budget of `budget` bytes: buffers of 4–64 KiB, as many runs
    /// merged at once as buffers fit in the budget (2 to 512), a fence
    /// every 256 mappings (1/16 byte a mapping), runs of at least 4 KiB.
    pub(super) fn for_budget(budget: u64) -> Tuning {
        let buf = (budget / 64).clamp(4 << 10, 64 << 10);
        Tuning {
            budget,
            buf: buf as usize,
            fan_in: (budget / buf).clamp(2, 512) as usize,
            fence: 256,
            min_shard: 4096,
        }
    }

    /// The bytes one of `shards` arenas may hold before it spills.
    pub(super) fn shard_bytes(&self, shards: usize) -> usize {
        let b = (self.budget / shards.max(1) as u64).max(self.min_shard);
        usize::try_from(b).unwrap_or(usize::MAX)
    }
}

/// Half of the memory available now (`MemAvailable` in `/proc/meminfo`,
/// and what the `memory.max` of sdu's cgroup and of its ancestors leave),
/// or no limit when neither can be read.
pub(crate) fn default_budget() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let available = meminfo.as_deref().and_then(|m| {
        let line = m.lines().find(|l| l.starts_with("MemAvailable:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib.saturating_mul(1024))
    });
    match (available, cgroup_room()) {
        (None, None) => u64::MAX,
        (a, c) => a.unwrap_or(u64::MAX).min(c.unwrap_or(u64::MAX)) / 2,
    }
}

/// What the cgroup v2 limits (`memory.max`) of sdu's cgroup and its
/// ancestors leave of memory (less `memory.current`), the least of them;
/// `None` without a limit.
fn cgroup_room() -> Option<u64> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    let read = |dir: &Path, name: &str| -> Option<u64> {
        std::fs::read_to_string(dir.join(name))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let mut dir = Path::new("/sys/fs/cgroup").join(path.trim_start_matches('/'));
    let mut room: Option<u64> = None;
    loop {
        if let Some(max) = read(&dir, "memory.max") {
            let left = max.saturating_sub(read(&dir, "memory.current").unwrap_or(0));
            room = Some(room.map_or(left, |r| r.min(left)));
        }
        if dir == Path::new("/sys/fs/cgroup") || !dir.pop() {
            return room;
        }
    }
}

/// Why the index could not spill or read back what it spilled.
#[derive(Debug)]
pub(crate) struct SpillError {
    /// The directory of the temporary file.
    pub(crate) dir: PathBuf,
    /// Whether it was writing (else reading back).
    pub(crate) writing: bool,
    /// What the system said.
    pub(crate) err: io::Error,
}

impl From<SpillError> for crate::error::Error {
    fn from(e: SpillError) -> Self {
        crate::error::Error::IndexSpill {
            dir: e.dir.into_os_string().into_encoded_bytes(),
            writing: e.writing,
            err: e.err,
        }
    }
}

/// A sorted run in the file.
#[derive(Debug)]
pub(super) struct SpilledRun<T> {
    /// Where it starts, in bytes.
    offset: u64,
    /// Its mappings.
    len: u64,
    /// Its mappings `0, fence, 2 × fence, …`.
    fences: Vec<T>,
    fence: usize,
}

impl<T: Item> SpilledRun<T> {
    /// Its bytes in the file.
    fn bytes(&self) -> u64 {
        self.len * T::SIZE as u64
    }

    /// The mappings of range `key` it holds: read from the fence before the
    /// first of them, the mappings between two fences at a time.
    pub(super) fn count(&self, file: &File, key: (u64, u64)) -> io::Result<usize> {
        let f = self.fences.partition_point(|x| x.key() < key);
        let first = (f.saturating_sub(1) * self.fence) as u64;
        let mut r = Reader::<T>::new(file, self, first, self.fence * T::SIZE);
        let mut n = 0;
        while let Some(x) = r.next()? {
            match x.key().cmp(&key) {
                std::cmp::Ordering::Less => {}
                std::cmp::Ordering::Equal => n += 1,
                std::cmp::Ordering::Greater => break,
            }
        }
        Ok(n)
    }
}

/// The temporary file, made on the first run written, and what was
/// written to it.
#[derive(Debug)]
pub(super) struct TempFile {
    dir: PathBuf,
    file: OnceLock<File>,
    /// Held while the file is made.
    making: Mutex<()>,
    /// Where the next run goes.
    end: AtomicU64,
    /// Runs written, and their bytes (merges of runs included).
    runs: AtomicU64,
    bytes: AtomicU64,
    /// A write or a read failed: the index drops what it is given, and
    /// [`TempFile::error`] says why.
    failed: AtomicBool,
    error: Mutex<Option<SpillError>>,
}

impl TempFile {
    /// A file to be made in `dir` when a run is first written.
    pub(super) fn new(dir: PathBuf) -> TempFile {
        TempFile {
            dir,
            file: OnceLock::new(),
            making: Mutex::new(()),
            end: AtomicU64::new(0),
            runs: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            failed: AtomicBool::new(false),
            error: Mutex::new(None),
        }
    }

    /// The file, if a run was written.
    pub(super) fn get(&self) -> Option<&File> {
        self.file.get()
    }

    /// The runs written and their bytes, merges of runs included.
    pub(super) fn written(&self) -> (u64, u64) {
        (
            self.runs.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
        )
    }

    /// Whether a write or a read failed.
    pub(super) fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// Records that writing (`writing`) or reading back failed with `err`;
    /// the first failure is kept.
    pub(super) fn fail(&self, writing: bool, err: io::Error) {
        self.failed.store(true, Ordering::Relaxed);
        let mut e = self.error.lock().unwrap_or_else(|e| e.into_inner());
        e.get_or_insert(SpillError {
            dir: self.dir.clone(),
            writing,
            err,
        });
    }

    /// The first failure, taken.
    pub(super) fn error(&self) -> Option<SpillError> {
        self.error.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// The file, made on first use.
    fn file(&self) -> io::Result<&File> {
        if let Some(f) = self.file.get() {
            return Ok(f);
        }
        let _making = self.making.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = self.file.get() {
            return Ok(f);
        }
        let f = make_unnamed(&self.dir)?;
        Ok(self.file.get_or_init(|| f))
    }

    /// Writes the sorted `items` as a run. Threads write their runs at the
    /// same time, each to a range of the file its own.
    pub(super) fn write_run<T: Item>(
        &self,
        items: &[T],
        fence: usize,
    ) -> io::Result<SpilledRun<T>> {
        let mut it = items.iter().copied().map(Ok);
        self.write_from(items.len() as u64, fence, &mut it)
    }

    /// Writes the `len` items `it` gives, sorted, as a run.
    fn write_from<T: Item>(
        &self,
        len: u64,
        fence: usize,
        it: &mut impl Iterator<Item = io::Result<T>>,
    ) -> io::Result<SpilledRun<T>> {
        const CHUNK: usize = 256 << 10;
        let file = self.file()?;
        let bytes = len * T::SIZE as u64;
        let offset = self.end.fetch_add(bytes, Ordering::Relaxed);
        let mut run = SpilledRun {
            offset,
            len,
            fences: Vec::with_capacity((len as usize).div_ceil(fence)),
            fence,
        };
        let mut buf = Vec::with_capacity(CHUNK.min(bytes as usize));
        let mut at = offset;
        for (i, x) in (0..len).zip(it) {
            let x = x?;
            if i % fence as u64 == 0 {
                run.fences.push(x);
            }
            x.put(&mut buf);
            if buf.len() + T::SIZE > CHUNK {
                file.write_all_at(&buf, at)?;
                at += buf.len() as u64;
                buf.clear();
            }
        }
        file.write_all_at(&buf, at)?;
        at += buf.len() as u64;
        if at != offset + bytes {
            return Err(io::Error::other("a run ended early"));
        }
        self.runs.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        Ok(run)
    }
}

/// Makes a file in `dir` that has no name: `O_TMPFILE`, or a new name
/// unlinked at once where the filesystem does not support it.
fn make_unnamed(dir: &Path) -> io::Result<File> {
    let mode = Mode::from_raw_mode(0o600);
    match rustix::fs::open(dir, OFlags::RDWR | OFlags::CLOEXEC | OFlags::TMPFILE, mode) {
        Ok(fd) => Ok(File::from(fd)),
        Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL) => named_then_unlinked(dir),
        Err(e) => Err(e.into()),
    }
}

/// A new file in `dir`, unlinked as soon as it is made.
fn named_then_unlinked(dir: &Path) -> io::Result<File> {
    let dirfd = rustix::fs::open(dir, OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
    let flags = OFlags::RDWR | OFlags::CLOEXEC | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW;
    let mut n = 0u32;
    loop {
        let name = format!(".sdu-index-{}-{n}", std::process::id());
        match rustix::fs::openat(&dirfd, name.as_str(), flags, Mode::from_raw_mode(0o600)) {
            Ok(fd) => {
                rustix::fs::unlinkat(&dirfd, name.as_str(), rustix::fs::AtFlags::empty())?;
                return Ok(File::from(fd));
            }
            Err(Errno::EXIST) if n < 100 => n += 1,
            Err(e) => return Err(e.into()),
        }
    }
}

/// A run read back from a mapping on, one buffer at a time.
struct Reader<'a, T> {
    file: &'a File,
    /// The next byte to read, and one past the run's last.
    at: u64,
    end: u64,
    buf: Vec<u8>,
    pos: usize,
    /// Bytes read at a time.
    chunk: usize,
    _item: PhantomData<T>,
}

impl<'a, T: Item> Reader<'a, T> {
    /// Reads `run` of `file` from its mapping `first` on, `buf` bytes (a
    /// whole number of mappings, at least one) at a time.
    fn new(file: &'a File, run: &SpilledRun<T>, first: u64, buf: usize) -> Self {
        Reader {
            file,
            at: run.offset + first.min(run.len) * T::SIZE as u64,
            end: run.offset + run.bytes(),
            buf: Vec::new(),
            pos: 0,
            chunk: (buf / T::SIZE).max(1) * T::SIZE,
            _item: PhantomData,
        }
    }

    fn next(&mut self) -> io::Result<Option<T>> {
        if self.pos == self.buf.len() {
            let n = self.chunk.min((self.end - self.at) as usize);
            if n == 0 {
                return Ok(None);
            }
            self.buf.resize(n, 0);
            self.file.read_exact_at(&mut self.buf, self.at)?;
            self.at += n as u64;
            self.pos = 0;
        }
        let x = T::get(&self.buf[self.pos..self.pos + T::SIZE]);
        self.pos += T::SIZE;
        Ok(Some(x))
    }
}

/// One sorted input of a merge.
enum MergeInput<'a, T> {
    Mem(std::slice::Iter<'a, T>),
    Disk(Reader<'a, T>),
}

impl<T: Item> MergeInput<'_, T> {
    fn next(&mut self) -> io::Result<Option<T>> {
        match self {
            MergeInput::Mem(it) => Ok(it.next().copied()),
            MergeInput::Disk(r) => r.next(),
        }
    }
}

/// Sorted runs, in memory and in the file, read as one sorted sequence.
pub(super) struct Merge<'a, T> {
    sources: Vec<MergeInput<'a, T>>,
    /// The next mapping of each source not yet used up: (mapping, source).
    heads: BinaryHeap<Reverse<(T, usize)>>,
    started: bool,
}

impl<'a, T: Item> Merge<'a, T> {
    /// The merge of the sorted `mem` and the runs `disk` of `file`, each
    /// run read `buf` bytes at a time.
    pub(super) fn new(
        mem: &'a [Vec<T>],
        disk: &'a [SpilledRun<T>],
        file: Option<&'a File>,
        buf: usize,
    ) -> Self {
        let mut sources: Vec<MergeInput<'a, T>> =
            mem.iter().map(|v| MergeInput::Mem(v.iter())).collect();
        if let Some(file) = file {
            sources.extend(
                disk.iter()
                    .map(|r| MergeInput::Disk(Reader::new(file, r, 0, buf))),
            );
        }
        Merge {
            heads: BinaryHeap::with_capacity(sources.len()),
            sources,
            started: false,
        }
    }

    /// The next mapping in order, `None` after the last.
    pub(super) fn next(&mut self) -> io::Result<Option<T>> {
        if !self.started {
            self.started = true;
            for (i, s) in self.sources.iter_mut().enumerate() {
                if let Some(x) = s.next()? {
                    self.heads.push(Reverse((x, i)));
                }
            }
        }
        let Some(mut top) = self.heads.peek_mut() else {
            return Ok(None);
        };
        let (x, i) = top.0;
        match self.sources[i].next()? {
            Some(y) => top.0 = (y, i),
            None => {
                PeekMut::pop(top);
            }
        }
        Ok(Some(x))
    }
}

/// Merges the runs of `runs` `fan_in` at a time into longer ones, until at
/// most `fan_in` are left; the space of the runs merged is given back to
/// the filesystem where it can punch holes.
pub(super) fn compact<T: Item>(
    temp: &TempFile,
    runs: &mut Vec<SpilledRun<T>>,
    t: &Tuning,
) -> io::Result<()> {
    let fan_in = t.fan_in.max(2);
    while runs.len() > fan_in {
        let group: Vec<SpilledRun<T>> = runs.drain(..fan_in).collect();
        let len = group.iter().map(|r| r.len).sum();
        let file = temp.file()?;
        let mut m = Merge::new(&[], &group, Some(file), t.buf);
        let mut it = std::iter::from_fn(|| m.next().transpose());
        runs.push(temp.write_from(len, t.fence, &mut it)?);
        for r in &group {
            let _ = rustix::fs::fallocate(
                file,
                FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE,
                r.offset,
                r.bytes(),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mapping for the tests: (range, file) in 12 bytes.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
    struct T(u64, u32);

    impl Item for T {
        const SIZE: usize = 12;
        fn put(&self, out: &mut Vec<u8>) {
            out.extend_from_slice(&self.0.to_ne_bytes());
            out.extend_from_slice(&self.1.to_ne_bytes());
        }
        fn get(b: &[u8]) -> Self {
            T(
                u64::from_ne_bytes(b[..8].try_into().unwrap()),
                u32::from_ne_bytes(b[8..12].try_into().unwrap()),
            )
        }
        fn key(&self) -> (u64, u64) {
            (self.0, 0)
        }
        fn range(&self) -> (u64, u64) {
            (self.0, self.0 + 1)
        }
        fn file(&self) -> u32 {
            self.1
        }
    }

    fn tiny() -> Tuning {
        Tuning {
            budget: 0,
            buf: 2 * T::SIZE + 5,
            fan_in: 3,
            fence: 3,
            min_shard: 0,
        }
    }

    #[test]
    fn runs_merge_back_in_order() {
        let temp = TempFile::new(std::env::temp_dir());
        let t = tiny();
        let mut all = Vec::new();
        let mut runs = Vec::new();
        for r in 0..7u64 {
            let mut v: Vec<T> = (0..(r * 5) % 11)
                .map(|i| T((i * 7 + r) % 13, r as u32))
                .collect();
            v.sort_unstable();
            all.extend_from_slice(&v);
            runs.push(temp.write_run(&v, t.fence).unwrap());
        }
        all.sort_unstable();
        compact(&temp, &mut runs, &t).unwrap();
        assert!(runs.len() <= t.fan_in);
        let mem = vec![vec![T(0, 99), T(12, 99)]];
        let mut m = Merge::new(&mem, &runs, temp.get(), t.buf);
        let mut got = Vec::new();
        while let Some(x) = m.next().unwrap() {
            got.push(x);
        }
        all.extend_from_slice(&mem[0]);
        all.sort_unstable();
        assert_eq!(got, all);
        for k in 0..14 {
            let want = all.iter().filter(|x| x.0 == k).count() - usize::from(k == 0 || k == 12);
            let n: usize = runs
                .iter()
                .map(|r| r.count(temp.get().unwrap(), (k, 0)).unwrap())
                .sum();
            assert_eq!(n, want, "key {k}");
        }
    }

    #[test]
    fn an_unwritable_directory_is_an_error() {
        let temp = TempFile::new(PathBuf::from("/proc/self"));
        let e = temp.write_run(&[T(1, 1)], 4).unwrap_err();
        assert!(e.raw_os_error().is_some(), "{e}");
    }

    #[test]
    fn a_full_disk_is_an_error() {
        let temp = TempFile::new(std::env::temp_dir());
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        temp.file.set(full).unwrap();
        let e = temp.write_run(&[T(1, 1)], 4).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc_enospc()), "{e}");
    }

    fn libc_enospc() -> i32 {
        Errno::NOSPC.raw_os_error()
    }

    #[test]
    fn the_named_file_leaves_no_name() {
        let dir = std::env::temp_dir().join(format!("sdu-spill-test-{}", std::process::id()));
        std::fs::create_dir(&dir).unwrap();
        let f = named_then_unlinked(&dir).unwrap();
        f.write_all_at(b"x", 0).unwrap();
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir(&dir).unwrap();
    }

    #[test]
    fn the_default_budget_is_some_memory() {
        let b = default_budget();
        assert!(b > 1 << 20, "{b}");
    }
}
