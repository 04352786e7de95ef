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

/// A directory being emptied (its name is kept apart, [`path_of`]).
struct Frame {
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
        let fail = |e: Errno, p: Vec<u8>| Failure {
            path: p,
            problem: Problem::Io(e.into()),
        };
        let at = |names: &[CString], more: &[&CStr]| path_of(path, names, more);
        let frame = |fd: OwnedFd, id, passes| {
            Dir::new(fd).map(|dir| Frame {
                dir: Some(dir),
                id,
                passes,
                unscanned: None,
            })
        };
        let mut stack = vec![frame(fd, (me.dev, me.ino), 0).map_err(|e| fail(e, path.to_vec()))?];
        // The name of each level of `stack` in its parent.
        let mut names = vec![name.to_owned()];
        let mut open = 1;
        while let Some(top) = stack.last_mut() {
            if self.stop.load(Ordering::Relaxed) {
                return Err(Failure {
                    path: at(&names, &[]),
                    problem: Problem::Interrupted,
                });
            }
            let dir = top.dir.as_mut().expect("the directory read is open");
            let Some(entry) = dir.read() else {
                // Read to the end: remove it from its parent.
                let f = stack.pop().expect("a frame");
                let name = names.pop().expect("a name");
                let fpath = |names: &[CString]| at(names, &[name.as_c_str()]);
                let here = f
                    .dir
                    .as_ref()
                    .expect("open")
                    .fd()
                    .map_err(|e| fail(e, fpath(&names)))?;
                let up = match stack.last_mut() {
                    None => parent,
                    Some(p) => {
                        if p.dir.is_none() {
                            // Closed for the budget: reopened as the
                            // parent of `f`, and it must still be the one.
                            let fd = rustix::fs::openat(here, c"..", DIR_FLAGS, Mode::empty())
                                .map_err(|e| fail(e, at(&names, &[])))?;
                            let now = ident_of(
                                &statx_fd(fd.as_fd()).map_err(|e| fail(e, at(&names, &[])))?,
                            );
                            if (now.dev, now.ino) != p.id || now.mnt != me.mnt {
                                return Err(Failure {
                                    path: path.to_vec(),
                                    problem: Problem::Replaced {
                                        at: at(&names, &[]),
                                        now,
                                        then: Ident {
                                            dev: p.id.0,
                                            ino: p.id.1,
                                            mnt: me.mnt,
                                        },
                                    },
                                });
                            }
                            p.dir = Some(Dir::new(fd).map_err(|e| fail(e, at(&names, &[])))?);
                            open += 1;
                        }
                        p.dir
                            .as_ref()
                            .expect("open")
                            .fd()
                            .map_err(|e| fail(e, at(&names, &[])))?
                    }
                };
                let (id, passes, new) = (f.id, f.passes, f.unscanned);
                drop(f.dir);
                open -= 1;
                match rustix::fs::unlinkat(up, name.as_c_str(), AtFlags::REMOVEDIR) {
                    Ok(()) => {
                        self.removed(new);
                        #[cfg(test)]
                        (self.after)(&fpath(&names));
                    }
                    Err(Errno::NOTEMPTY) if passes < 2 => {
                        // Entries made while it was read: read it again, if
                        // it is still the same directory.
                        let fd = rustix::fs::openat(up, name.as_c_str(), DIR_FLAGS, Mode::empty())
                            .map_err(|e| fail(e, fpath(&names)))?;
                        let now =
                            ident_of(&statx_fd(fd.as_fd()).map_err(|e| fail(e, fpath(&names)))?);
                        if (now.dev, now.ino) != id || now.mnt != me.mnt {
                            return Err(Failure {
                                path: path.to_vec(),
                                problem: Problem::Replaced {
                                    at: fpath(&names),
                                    now,
                                    then: Ident {
                                        dev: id.0,
                                        ino: id.1,
                                        mnt: me.mnt,
                                    },
                                },
                            });
                        }
                        let mut f =
                            frame(fd, id, passes + 1).map_err(|e| fail(e, fpath(&names)))?;
                        f.unscanned = new;
                        stack.push(f);
                        names.push(name);
                        open += 1;
                    }
                    Err(e) => return Err(fail(e, fpath(&names))),
                }
                continue;
            };
            let entry = entry.map_err(|e| fail(e, at(&names, &[])))?;
            let ename = entry.file_name();
            if ename == c"." || ename == c".." {
                continue;
            }
            let ename = ename.to_owned();
            let epath = |names: &[CString]| at(names, &[ename.as_c_str()]);
            let here = dir.fd().map_err(|e| fail(e, at(&names, &[])))?;
            let mut is_dir = matches!(entry.file_type(), FileType::Directory | FileType::Unknown);
            let listed = (me.dev, entry.ino());
            if !is_dir {
                let new = Self::unscanned(here, ename.as_c_str(), listed, inside);
                match rustix::fs::unlinkat(here, ename.as_c_str(), AtFlags::empty()) {
                    Ok(()) => {
                        self.removed(new);
                        #[cfg(test)]
                        (self.after)(&epath(&names));
                        continue;
                    }
                    // It is a directory now.
                    Err(Errno::ISDIR) => is_dir = true,
                    Err(e) => return Err(fail(e, epath(&names))),
                }
            }
            debug_assert!(is_dir);
            let sub = match rustix::fs::openat(here, ename.as_c_str(), DIR_FLAGS, Mode::empty()) {
                Ok(fd) => fd,
                // Not a directory after all (DT_UNKNOWN, or replaced): unlink.
                Err(Errno::NOTDIR | Errno::LOOP) => {
                    let new = Self::unscanned(here, ename.as_c_str(), listed, inside);
                    rustix::fs::unlinkat(here, ename.as_c_str(), AtFlags::empty())
                        .map_err(|e| fail(e, epath(&names)))?;
                    self.removed(new);
                    continue;
                }
                Err(e) => return Err(fail(e, epath(&names))),
            };
            let sid = ident_of(&statx_fd(sub.as_fd()).map_err(|e| fail(e, epath(&names)))?);
            if sid.mnt != me.mnt {
                // A mount made since the check above: never entered.
                return Err(Failure {
                    path: path.to_vec(),
                    problem: Problem::MountMet { at: epath(&names) },
                });
            }
            let new = Self::unscanned(here, ename.as_c_str(), (sid.dev, sid.ino), inside);
            if sid.dev != me.dev {
                self.subvolume(here, &sub, ename.as_c_str(), &epath(&names))?;
                // Counted there as removed; added since the scan or not.
                self.out.entries -= 1;
                self.removed(new);
                continue;
            }
            let mut f = frame(sub, (sid.dev, sid.ino), 0).map_err(|e| fail(e, epath(&names)))?;
            f.unscanned = new;
            stack.push(f);
            names.push(ename);
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
