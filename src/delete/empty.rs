//! Emptying a directory that is being deleted, depth first, within the fd
//! budget, and telling what the scan never saw in it.

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::Ordering;

use rustix::fs::{AtFlags, Dir, FileType, Mode, StatxFlags};
use rustix::io::Errno;

use super::{DIR_FLAGS, Failure, ID_MASK, Problem, Run, ident_of, statx_fd};
use crate::path::join;
use crate::records::Ident;

/// A directory being emptied.
struct Frame {
    /// Its open stream; `None` while closed to stay in the fd budget
    /// (reopened through its child's `..`).
    dir: Option<Dir>,
    name: CString,
    path: Vec<u8>,
    /// Its device and inode.
    id: (u64, u64),
    /// Readings of the directory so far (a directory that is not empty
    /// after a full reading is read again, twice at most).
    passes: u32,
    /// Its allocated bytes, when the scan did not see it (added since).
    unscanned: Option<u64>,
}

impl Run<'_> {
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

    /// Counts an entry removed: in [`Deleted::unscanned`] too when the scan
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
        let fail = |e: Errno, p: &[u8]| Failure {
            path: p.to_vec(),
            problem: Problem::Io(e.into()),
        };
        let frame = |fd: OwnedFd, name: CString, path: Vec<u8>, id, passes| match Dir::new(fd) {
            Ok(dir) => Ok(Frame {
                dir: Some(dir),
                name,
                path,
                id,
                passes,
                unscanned: None,
            }),
            Err(e) => Err(fail(e, &path)),
        };
        let mut stack = vec![frame(
            fd,
            name.to_owned(),
            path.to_vec(),
            (me.dev, me.ino),
            0,
        )?];
        let mut open = 1;
        while let Some(top) = stack.last_mut() {
            if self.stop.load(Ordering::Relaxed) {
                return Err(Failure {
                    path: top.path.clone(),
                    problem: Problem::Interrupted,
                });
            }
            let dir = top.dir.as_mut().expect("the directory read is open");
            let Some(entry) = dir.read() else {
                // Read to the end: remove it from its parent.
                let f = stack.pop().expect("a frame");
                let here = f
                    .dir
                    .as_ref()
                    .expect("open")
                    .fd()
                    .map_err(|e| fail(e, &f.path))?;
                let up = match stack.last_mut() {
                    None => parent,
                    Some(p) => {
                        if p.dir.is_none() {
                            // Closed for the budget: reopened as the
                            // parent of `f`, and it must still be the one.
                            let fd = rustix::fs::openat(here, c"..", DIR_FLAGS, Mode::empty())
                                .map_err(|e| fail(e, &p.path))?;
                            let now =
                                ident_of(&statx_fd(fd.as_fd()).map_err(|e| fail(e, &p.path))?);
                            if (now.dev, now.ino) != p.id || now.mnt != me.mnt {
                                return Err(Failure {
                                    path: path.to_vec(),
                                    problem: Problem::Replaced {
                                        at: p.path.clone(),
                                        now,
                                        then: Ident {
                                            dev: p.id.0,
                                            ino: p.id.1,
                                            mnt: me.mnt,
                                        },
                                    },
                                });
                            }
                            p.dir = Some(Dir::new(fd).map_err(|e| fail(e, &p.path))?);
                            open += 1;
                        }
                        p.dir
                            .as_ref()
                            .expect("open")
                            .fd()
                            .map_err(|e| fail(e, &p.path))?
                    }
                };
                let (name, fpath, id, passes) = (f.name, f.path, f.id, f.passes);
                let new = f.unscanned;
                drop(f.dir);
                open -= 1;
                match rustix::fs::unlinkat(up, name.as_c_str(), AtFlags::REMOVEDIR) {
                    Ok(()) => {
                        self.removed(new);
                        #[cfg(test)]
                        (self.after)(&fpath);
                    }
                    Err(Errno::NOTEMPTY) if passes < 2 => {
                        // Entries made while it was read: read it again, if
                        // it is still the same directory.
                        let fd = rustix::fs::openat(up, name.as_c_str(), DIR_FLAGS, Mode::empty())
                            .map_err(|e| fail(e, &fpath))?;
                        let now = ident_of(&statx_fd(fd.as_fd()).map_err(|e| fail(e, &fpath))?);
                        if (now.dev, now.ino) != id || now.mnt != me.mnt {
                            return Err(Failure {
                                path: path.to_vec(),
                                problem: Problem::Replaced {
                                    at: fpath,
                                    now,
                                    then: Ident {
                                        dev: id.0,
                                        ino: id.1,
                                        mnt: me.mnt,
                                    },
                                },
                            });
                        }
                        let mut f = frame(fd, name, fpath, id, passes + 1)?;
                        f.unscanned = new;
                        stack.push(f);
                        open += 1;
                    }
                    Err(e) => return Err(fail(e, &fpath)),
                }
                continue;
            };
            let entry = entry.map_err(|e| fail(e, &top.path))?;
            let ename = entry.file_name();
            if ename == c"." || ename == c".." {
                continue;
            }
            let ename = ename.to_owned();
            let mut epath = top.path.clone();
            join(&mut epath, ename.to_bytes());
            let here = dir.fd().map_err(|e| fail(e, &top.path))?;
            let mut is_dir = matches!(entry.file_type(), FileType::Directory | FileType::Unknown);
            let listed = (me.dev, entry.ino());
            if !is_dir {
                let new = Self::unscanned(here, ename.as_c_str(), listed, inside);
                match rustix::fs::unlinkat(here, ename.as_c_str(), AtFlags::empty()) {
                    Ok(()) => {
                        self.removed(new);
                        #[cfg(test)]
                        (self.after)(&epath);
                        continue;
                    }
                    // It is a directory now.
                    Err(Errno::ISDIR) => is_dir = true,
                    Err(e) => return Err(fail(e, &epath)),
                }
            }
            debug_assert!(is_dir);
            let sub = match rustix::fs::openat(here, ename.as_c_str(), DIR_FLAGS, Mode::empty()) {
                Ok(fd) => fd,
                // Not a directory after all (DT_UNKNOWN, or replaced): unlink.
                Err(Errno::NOTDIR | Errno::LOOP) => {
                    let new = Self::unscanned(here, ename.as_c_str(), listed, inside);
                    rustix::fs::unlinkat(here, ename.as_c_str(), AtFlags::empty())
                        .map_err(|e| fail(e, &epath))?;
                    self.removed(new);
                    continue;
                }
                Err(e) => return Err(fail(e, &epath)),
            };
            let sid = ident_of(&statx_fd(sub.as_fd()).map_err(|e| fail(e, &epath))?);
            if sid.mnt != me.mnt {
                // A mount made since the check above: never entered.
                return Err(Failure {
                    path: path.to_vec(),
                    problem: Problem::MountMet { at: epath },
                });
            }
            let new = Self::unscanned(here, ename.as_c_str(), (sid.dev, sid.ino), inside);
            if sid.dev != me.dev {
                self.subvolume(here, &sub, ename.as_c_str(), &epath)?;
                // Counted there as removed; added since the scan or not.
                self.out.entries -= 1;
                self.removed(new);
                continue;
            }
            let mut f = frame(sub, ename, epath, (sid.dev, sid.ino), 0)?;
            f.unscanned = new;
            stack.push(f);
            open += 1;
            if open > self.max_open {
                // Close the shallowest open directory but the one read.
                let last = stack.len() - 1;
                if let Some(f) = stack[..last].iter_mut().find(|f| f.dir.is_some()) {
                    f.dir = None;
                    open -= 1;
                }
            }
        }
        Ok(())
    }
}
