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
use rustix::fs::{AtFlags, FileType, Mode, OFlags};

#[derive(Debug, Default)]
struct State;
impl ClientState for State {
    type ReadDirState = ();
    type DirEntryState = Option<Stat>;
}

fn fstatat(dirfd: &rustix::fd::OwnedFd, name: &std::ffi::OsStr) -> Option<Stat> {
    let st = rustix::fs::statat(dirfd, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
    Some(Stat {
        dev: st.st_dev,
        ino: st.st_ino,
        nlink: st.st_nlink as u64,
        blocks: st.st_blocks as u64,
        is_dir: FileType::from_raw_mode(st.st_mode) == FileType::Directory,
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
            let fd = rustix::fs::open(dir, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).ok();
            for e in children.iter_mut().flatten() {
                e.client_state = fd.as_ref().and_then(|fd| fstatat(fd, e.file_name()));
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
