//! jwalk 0.9 (parallel, rayon): `skip_hidden(false)`, `follow_links(false)`,
//! `sort(false)`. The stat happens inside `process_read_dir`, so it runs on
//! the rayon worker that read the directory, in parallel:
//!  - default: open the directory once (O_DIRECTORY) and `fstatat` every
//!    entry relative to that fd (jwalk hands out paths only, so this costs one
//!    extra open per directory); the fastest honest way we found;
//!  - `--path-stat`: `DirEntry::metadata()` (symlink_metadata on the full path),
//!    what a plain jwalk user writes.
use jwalk::{ClientState, Parallelism, WalkDirGeneric};
use sdu_bench_walkers::{Stat, Totals, args};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;

#[derive(Debug, Default)]
struct State;
impl ClientState for State {
    type ReadDirState = ();
    type DirEntryState = Option<Stat>;
}

fn fstatat(dirfd: libc::c_int, name: &std::ffi::OsStr) -> Option<Stat> {
    let c = CString::new(name.as_bytes()).ok()?;
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid fd (or AT_FDCWD), NUL-terminated name, st is writable.
    let r = unsafe { libc::fstatat(dirfd, c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    (r == 0).then(|| Stat {
        dev: st.st_dev,
        ino: st.st_ino,
        nlink: st.st_nlink,
        blocks: st.st_blocks as u64,
        is_dir: (st.st_mode & libc::S_IFMT) == libc::S_IFDIR,
    })
}

fn main() {
    let a = args();
    let path_stat = a.flags.iter().any(|f| f == "--path-stat");
    let walk = WalkDirGeneric::<State>::new(&a.root)
        .skip_hidden(false)
        .follow_links(false)
        .sort(false)
        .parallelism(if a.threads == 1 { Parallelism::Serial } else { Parallelism::RayonNewPool(a.threads) })
        .process_read_dir(move |depth, dir, _, children| {
            if path_stat || depth.is_none() {
                // depth None: the root entry itself, stat it by path.
                for e in children.iter_mut().flatten() {
                    e.client_state = e.metadata().ok().map(|m| Stat::from_std(&m));
                }
                return;
            }
            let c = CString::new(dir.as_os_str().as_bytes()).unwrap();
            // SAFETY: NUL-terminated path.
            let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) };
            for e in children.iter_mut().flatten() {
                e.client_state = if fd >= 0 { fstatat(fd, e.file_name()) } else { None };
            }
            if fd >= 0 {
                // SAFETY: fd was opened above and is closed once.
                unsafe { libc::close(fd) };
            }
        });
    let mut t = Totals::default();
    for e in walk {
        match e {
            Ok(e) => match e.client_state {
                Some(s) => t.add(&s),
                None => t.errors += 1,
            },
            Err(_) => t.errors += 1,
        }
    }
    t.finish("walk-jwalk")
}
