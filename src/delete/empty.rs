//! Emptying a directory that is being deleted, depth first, within the fd
//! budget, and telling what the scan never saw in it.

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::Ordering;

use rustix::fs::{AtFlags, Dir, FileType, Mode, StatxFlags};
use rustix::io::Errno;

use super::{DIR_FLAGS, Deletion, Failure, ID_MASK, Problem, ident_of, statx_fd};
use crate::path::join;
use crate::records::Ident;

/// A directory being emptied (its name is kept apart, [`path_of`]).
struct EmptyingDir {
    /// Its open stream; `None` while closed to stay in the fd budget
    /// (reopened through its child's `..`).
    dir: Option<Dir>,
    /// Its device and inode.
    id: (u64, u64),
    /// Readings of the directory so far (a directory that is not empty
    /// after a full reading is read again, twice at most).
    passes: u32,
    /// Its allocated bytes, when the scan did not see it (added since).
    unscanned: Option<u64>,
}

/// The path of a directory being emptied: `path` (the entry deleted,
/// `names[0]`), then `names[1..]`, then `more`. Only the names of the open
/// levels are kept, so that memory is linear in depth; a path is built
/// when a message needs one.
fn path_of(path: &[u8], names: &[CString], more: &[&CStr]) -> Vec<u8> {
    let mut p = path.to_vec();
    let below = names.iter().skip(1).map(CString::as_c_str);
    for n in below.chain(more.iter().copied()) {
        join(&mut p, n.to_bytes());
    }
    p
}

impl EmptyingDir {
    /// The directory open at `fd`, to be read from its start.
    fn open(fd: OwnedFd, id: (u64, u64), passes: u32) -> rustix::io::Result<EmptyingDir> {
        Dir::new(fd).map(|dir| EmptyingDir {
            dir: Some(dir),
            id,
            passes,
            unscanned: None,
        })
    }
}

/// The directories entered while one is emptied.
struct Levels {
    /// Deepest last: the one read.
    stack: Vec<EmptyingDir>,
    /// The name of each level of `stack` in its parent.
    names: Vec<CString>,
    /// How many of `stack` are open.
    open: usize,
}

impl Levels {
    /// Enters directory `f`, named `name`, to be read next.
    fn push(&mut self, f: EmptyingDir, name: CString) {
        self.stack.push(f);
        self.names.push(name);
        self.open += 1;
    }

    /// Past `max_open` open directories: the shallowest open one but the
    /// one read is closed (reopened through its child's `..`).
    fn keep_within(&mut self, max_open: usize) {
        if self.open > max_open {
            let last = self.stack.len() - 1;
            if let Some(f) = self.stack[..last].iter_mut().find(|f| f.dir.is_some()) {
                f.dir = None;
                self.open -= 1;
            }
        }
    }
}

/// What stays the same while a directory is emptied.
struct Emptied<'p> {
    /// The directory it is removed from at the end.
    parent: BorrowedFd<'p>,
    /// Its identity: every directory entered must be in its mount.
    me: Ident,
    /// Its path, as the deletion was asked for.
    path: &'p [u8],
    /// What the scan saw below it (sorted): anything else was added since.
    inside: &'p [(u64, u64)],
}

impl Emptied<'_> {
    /// The path of the open levels named `names`, then `more`.
    fn at(&self, names: &[CString], more: &[&CStr]) -> Vec<u8> {
        path_of(self.path, names, more)
    }

    /// Directory `fd`, opened again at `at`, must still be `id` in the
    /// mount emptied: else the deletion stops, as it was replaced.
    fn same_dir(
        &self,
        fd: BorrowedFd<'_>,
        id: (u64, u64),
        at: impl Fn() -> Vec<u8>,
    ) -> Result<(), Failure> {
        let now = ident_of(&statx_fd(fd).map_err(|e| fail(e, at()))?);
        if (now.dev, now.ino) != id || now.mnt != self.me.mnt {
            return Err(Failure {
                path: self.path.to_vec(),
                problem: Problem::Replaced {
                    at: at(),
                    now,
                    then: Ident {
                        dev: id.0,
                        ino: id.1,
                        mnt: self.me.mnt,
                    },
                },
            });
        }
        Ok(())
    }

    /// The directory the deepest level is removed from: the level above
    /// (`above`; reopened through `here`'s `..` when it was closed for the
    /// budget, and checked to be the same one), or at the top `parent`.
    fn up<'a>(
        &self,
        above: Option<&'a mut EmptyingDir>,
        here: BorrowedFd<'_>,
        names: &[CString],
        open: &mut usize,
    ) -> Result<BorrowedFd<'a>, Failure>
    where
        Self: 'a,
    {
        let Some(p) = above else {
            return Ok(self.parent);
        };
        if p.dir.is_none() {
            // Closed for the budget: reopened as the parent of `here`,
            // and it must still be the one.
            let fd = rustix::fs::openat(here, c"..", DIR_FLAGS, Mode::empty())
                .map_err(|e| fail(e, self.at(names, &[])))?;
            self.same_dir(fd.as_fd(), p.id, || self.at(names, &[]))?;
            p.dir = Some(Dir::new(fd).map_err(|e| fail(e, self.at(names, &[])))?);
            *open += 1;
        }
        p.dir
            .as_ref()
            .expect("open")
            .fd()
            .map_err(|e| fail(e, self.at(names, &[])))
    }
}

/// An I/O error met at `path`.
fn fail(e: Errno, path: Vec<u8>) -> Failure {
    Failure {
        path,
        problem: Problem::Io(e.into()),
    }
}

impl Deletion<'_> {
    /// Entry `name` of `dir` (device `dev`, inode `ino` as listed) when
    /// the scan did not see it below the target (`inside`): its allocated
    /// bytes, asked of `statx` (which also settles the identity).
    fn unscanned(
        dir: BorrowedFd<'_>,
        name: &CStr,
        (dev, ino): (u64, u64),
        inside: &[(u64, u64)],
    ) -> Option<u64> {
        if inside.binary_search(&(dev, ino)).is_ok() {
            return None;
        }
        let st = rustix::fs::statx(
            dir,
            name,
            AtFlags::SYMLINK_NOFOLLOW,
            ID_MASK.union(StatxFlags::BLOCKS),
        )
        .ok()?;
        let id = ident_of(&st);
        inside
            .binary_search(&(id.dev, id.ino))
            .is_err()
            .then(|| st.stx_blocks.saturating_mul(512))
    }

    /// Counts an entry removed: in `Deleted::unscanned` too when the scan
    /// had not seen it (`unscanned`: its bytes).
    fn removed(&mut self, unscanned: Option<u64>) {
        self.out.entries += 1;
        if let Some(b) = unscanned {
            self.out.unscanned += 1;
            self.out.unscanned_bytes = self.out.unscanned_bytes.saturating_add(b);
        }
    }

    /// Empties the directory open at `fd` (identified as `me`, named `name`
    /// in `parent`) depth first, then removes it. Every directory entered
    /// must be in `me`'s mount; at most `max_open` are held open at once.
    pub(super) fn empty_and_remove(
        &mut self,
        parent: BorrowedFd<'_>,
        fd: OwnedFd,
        me: Ident,
        name: &CStr,
        path: &[u8],
        inside: &[(u64, u64)],
    ) -> Result<(), Failure> {
        let job = Emptied {
            parent,
            me,
            path,
            inside,
        };
        let first =
            EmptyingDir::open(fd, (me.dev, me.ino), 0).map_err(|e| fail(e, path.to_vec()))?;
        let mut lv = Levels {
            stack: vec![first],
            names: vec![name.to_owned()],
            open: 1,
        };
        while let Some(top) = lv.stack.last_mut() {
            if self.stop.load(Ordering::Relaxed) {
                return Err(Failure {
                    path: job.at(&lv.names, &[]),
                    problem: Problem::Interrupted,
                });
            }
            let dir = top.dir.as_mut().expect("the directory read is open");
            match dir.read() {
                // Read to the end: remove it from its parent.
                None => self.remove_emptied(&job, &mut lv)?,
                Some(entry) => {
                    let entry = entry.map_err(|e| fail(e, job.at(&lv.names, &[])))?;
                    self.remove_entry(&job, &mut lv, &entry)?;
                }
            }
        }
        Ok(())
    }

    /// The deepest directory, read to the end: removed from its parent;
    /// or, when entries were made in it while it was read, read again
    /// (twice at most) if it is still the same directory.
    fn remove_emptied(&mut self, job: &Emptied<'_>, lv: &mut Levels) -> Result<(), Failure> {
        let f = lv.stack.pop().expect("a frame");
        let name = lv.names.pop().expect("a name");
        let fpath = |names: &[CString]| job.at(names, &[name.as_c_str()]);
        let here = f
            .dir
            .as_ref()
            .expect("open")
            .fd()
            .map_err(|e| fail(e, fpath(&lv.names)))?;
        let up = job.up(lv.stack.last_mut(), here, &lv.names, &mut lv.open)?;
        let (id, passes, new) = (f.id, f.passes, f.unscanned);
        drop(f.dir);
        lv.open -= 1;
        match rustix::fs::unlinkat(up, name.as_c_str(), AtFlags::REMOVEDIR) {
            Ok(()) => {
                self.removed(new);
                #[cfg(test)]
                (self.after)(&fpath(&lv.names));
            }
            Err(Errno::NOTEMPTY) if passes < 2 => {
                // Entries made while it was read: read it again, if it is
                // still the same directory.
                let fd = rustix::fs::openat(up, name.as_c_str(), DIR_FLAGS, Mode::empty())
                    .map_err(|e| fail(e, fpath(&lv.names)))?;
                job.same_dir(fd.as_fd(), id, || fpath(&lv.names))?;
                let mut f =
                    EmptyingDir::open(fd, id, passes + 1).map_err(|e| fail(e, fpath(&lv.names)))?;
                f.unscanned = new;
                lv.push(f, name);
            }
            Err(e) => return Err(fail(e, fpath(&lv.names))),
        }
        Ok(())
    }

    /// Entry `entry` of the deepest directory: a file unlinked; a
    /// directory entered, to be emptied next; a subvolume deleted whole;
    /// a mount never entered (the deletion stops).
    fn remove_entry(
        &mut self,
        job: &Emptied<'_>,
        lv: &mut Levels,
        entry: &rustix::fs::DirEntry,
    ) -> Result<(), Failure> {
        let ename = entry.file_name();
        if ename == c"." || ename == c".." {
            return Ok(());
        }
        let ename = ename.to_owned();
        let epath = |names: &[CString]| job.at(names, &[ename.as_c_str()]);
        let top = lv.stack.last().expect("a frame");
        let here = top
            .dir
            .as_ref()
            .expect("the directory read is open")
            .fd()
            .map_err(|e| fail(e, job.at(&lv.names, &[])))?;
        let mut is_dir = matches!(entry.file_type(), FileType::Directory | FileType::Unknown);
        let listed = (job.me.dev, entry.ino());
        if !is_dir {
            let new = Self::unscanned(here, ename.as_c_str(), listed, job.inside);
            match rustix::fs::unlinkat(here, ename.as_c_str(), AtFlags::empty()) {
                Ok(()) => {
                    self.removed(new);
                    #[cfg(test)]
                    (self.after)(&epath(&lv.names));
                    return Ok(());
                }
                // It is a directory now.
                Err(Errno::ISDIR) => is_dir = true,
                Err(e) => return Err(fail(e, epath(&lv.names))),
            }
        }
        debug_assert!(is_dir);
        let sub = match rustix::fs::openat(here, ename.as_c_str(), DIR_FLAGS, Mode::empty()) {
            Ok(fd) => fd,
            // Not a directory after all (DT_UNKNOWN, or replaced): unlink.
            Err(Errno::NOTDIR | Errno::LOOP) => {
                let new = Self::unscanned(here, ename.as_c_str(), listed, job.inside);
                rustix::fs::unlinkat(here, ename.as_c_str(), AtFlags::empty())
                    .map_err(|e| fail(e, epath(&lv.names)))?;
                self.removed(new);
                return Ok(());
            }
            Err(e) => return Err(fail(e, epath(&lv.names))),
        };
        let sid = ident_of(&statx_fd(sub.as_fd()).map_err(|e| fail(e, epath(&lv.names)))?);
        if sid.mnt != job.me.mnt {
            // A mount made since the check above: never entered.
            return Err(Failure {
                path: job.path.to_vec(),
                problem: Problem::MountMet {
                    at: epath(&lv.names),
                },
            });
        }
        let new = Self::unscanned(here, ename.as_c_str(), (sid.dev, sid.ino), job.inside);
        if sid.dev != job.me.dev {
            self.subvolume(here, &sub, ename.as_c_str(), &epath(&lv.names))?;
            // Counted there as removed; added since the scan or not.
            self.out.entries -= 1;
            self.removed(new);
            return Ok(());
        }
        let mut f =
            EmptyingDir::open(sub, (sid.dev, sid.ino), 0).map_err(|e| fail(e, epath(&lv.names)))?;
        f.unscanned = new;
        lv.push(f, ename);
        lv.keep_within(self.max_open);
        Ok(())
    }
}
