//! Deleting a Btrfs subvolume met as a directory: moved by name into a
//! directory of the caller's own, checked there, destroyed there by id.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{AtFlags, Mode, RenameFlags, StatxFlags};
use rustix::io::Errno;
use sdu_sys::btrfs;
use sdu_sys::fs::{self, fs_type, magic};

use super::{DIR_FLAGS, Deletion, Failure, ID_MASK, Problem, cstr, ident_of, statx_fd};
use crate::path::join;

/// A directory of the caller's own, made in a directory that others may
/// write, to hold one subvolume while it is deleted: its mode is `0700`
/// (so no ACL grants anyone else anything either: the group bits are the
/// ACL's mask) and its owner the caller, so nobody else can rename its
/// entry.
struct Aside {
    name: CString,
    fd: OwnedFd,
}

impl Aside {
    /// The name the subvolume takes in it.
    const ENTRY: &'static CStr = c"subvolume";

    /// Makes one in `parent` under a name not taken, and checks that the
    /// directory opened by that name is the caller's, empty of others'
    /// rights, and on `parent`'s device and mount.
    fn make(parent: BorrowedFd<'_>) -> io::Result<Aside> {
        let up = statx_fd(parent)?;
        let euid = rustix::process::geteuid().as_raw();
        let mut n = 0u32;
        let name = loop {
            let name = cstr(format!(".sdu-deleting.{}.{n}", std::process::id()).as_bytes())?;
            match rustix::fs::mkdirat(parent, name.as_c_str(), Mode::from_raw_mode(0o700)) {
                Ok(()) => break name,
                Err(Errno::EXIST) if n < 100 => n += 1,
                Err(e) => return Err(e.into()),
            }
        };
        let fd = rustix::fs::openat(parent, name.as_c_str(), DIR_FLAGS, Mode::empty())?;
        let st = rustix::fs::statx(
            &fd,
            c"",
            AtFlags::EMPTY_PATH,
            ID_MASK.union(StatxFlags::MODE).union(StatxFlags::UID),
        )?;
        let ours = st.stx_uid == euid
            && st.stx_mode & 0o077 == 0
            && (st.stx_dev_major, st.stx_dev_minor, st.stx_mnt_id)
                == (up.stx_dev_major, up.stx_dev_minor, up.stx_mnt_id);
        if !ours {
            // Replaced between the mkdir and the open: by someone who may
            // write `parent`. Nothing was moved into it.
            return Err(io::Error::other(format!(
                "the directory {} made to hold the subvolume while it is deleted was replaced",
                crate::quote(name.to_bytes())
            )));
        }
        Ok(Aside { name, fd })
    }

    /// Removes it from `parent`, if the name still leads to it and it is
    /// empty; an empty directory of the caller's is left where the owner
    /// of `parent` moved it otherwise.
    fn remove(self, parent: BorrowedFd<'_>) {
        let here = rustix::fs::statx(
            parent,
            self.name.as_c_str(),
            AtFlags::SYMLINK_NOFOLLOW,
            ID_MASK,
        );
        let mine = statx_fd(self.fd.as_fd());
        if let (Ok(a), Ok(b)) = (here, mine) {
            if ident_of(&a) == ident_of(&b) {
                let _ = rustix::fs::unlinkat(parent, self.name.as_c_str(), AtFlags::REMOVEDIR);
            }
        }
    }
}

impl Deletion<'_> {
    /// `fd` (named `name` in `parent`, in the same mount) lies on another
    /// device than its parent: delete it as a Btrfs subvolume if it is one
    /// of the same filesystem, else stop.
    ///
    /// The kernel deletes a subvolume by a name looked up in its parent,
    /// even when given its id, and the owner of `parent` can exchange that
    /// name with another subvolume at any time. So it is first moved, by
    /// name, into a directory of the caller's own made for it in `parent`
    /// ([`Aside`]), where nobody else can rename anything; what arrived
    /// there must be the subvolume checked through `fd` (else it is put
    /// back and the deletion stops), and it is then deleted there by the
    /// id read from `fd`.
    pub(super) fn subvolume(
        &mut self,
        parent: BorrowedFd<'_>,
        fd: &OwnedFd,
        name: &CStr,
        path: &[u8],
    ) -> Result<(), Failure> {
        let fail = |problem| Failure {
            path: path.to_vec(),
            problem,
        };
        let io = |e: Errno| fail(Problem::Io(e.into()));
        let st = rustix::fs::fstat(fd).map_err(io)?;
        let is_btrfs = |f: BorrowedFd<'_>| fs_type(f).is_ok_and(|t| t == magic::BTRFS);
        let same_fs = is_btrfs(parent)
            && is_btrfs(fd.as_fd())
            && st.st_ino == btrfs::FIRST_FREE_OBJECTID
            && matches!((fs::uuid(parent), fs::uuid(fd.as_fd())), (Ok(a), Ok(b)) if a == b);
        if !same_fs {
            return Err(fail(Problem::Mount { at: path.to_vec() }));
        }
        let me = ident_of(&statx_fd(fd.as_fd()).map_err(io)?);
        let id = btrfs::subvol_id(fd.as_fd()).map_err(|e| fail(Problem::Io(e)))?;
        // A read-only subvolume cannot be moved to another directory
        // (`EROFS`): it is made writable first, through `fd`, and
        // read-only again unless it is deleted.
        let flags = btrfs::subvol_flags(fd.as_fd()).map_err(|e| fail(Problem::Io(e)))?;
        let read_only = flags & btrfs::SUBVOL_RDONLY != 0;
        let restore = || {
            if read_only {
                let _ = btrfs::set_subvol_flags(fd.as_fd(), flags);
            }
        };
        let aside = Aside::make(parent).map_err(|e| fail(Problem::Io(e)))?;
        if read_only {
            if let Err(e) = btrfs::set_subvol_flags(fd.as_fd(), flags & !btrfs::SUBVOL_RDONLY) {
                aside.remove(parent);
                return Err(fail(Problem::Io(e)));
            }
        }
        match rustix::fs::renameat_with(
            parent,
            name,
            &aside.fd,
            Aside::ENTRY,
            RenameFlags::NOREPLACE,
        ) {
            Ok(()) => {}
            Err(e) => {
                restore();
                aside.remove(parent);
                return Err(io(e));
            }
        }
        let moved = rustix::fs::statx(&aside.fd, Aside::ENTRY, AtFlags::SYMLINK_NOFOLLOW, ID_MASK)
            .map(|st| ident_of(&st));
        let problem = match moved {
            Ok(now) if now != me => Problem::Replaced {
                at: path.to_vec(),
                now,
                then: me,
            },
            Err(e) => Problem::Io(e.into()),
            Ok(_) => match btrfs::snap_destroy_by_id(aside.fd.as_fd(), id) {
                Ok(()) => {
                    aside.remove(parent);
                    self.out.subvolumes += 1;
                    self.out.entries += 1;
                    return Ok(());
                }
                Err(e) => match Errno::from_io_error(&e) {
                    Some(Errno::PERM) => Problem::SubvolumeNotPermitted,
                    Some(Errno::NOTEMPTY) => Problem::SubvolumeNotEmpty,
                    Some(Errno::NOTTY | Errno::OPNOTSUPP) => Problem::SubvolumeById,
                    _ => Problem::Io(e),
                },
            },
        };
        // Not deleted: what was moved goes back to its name, unless that
        // name was taken meanwhile (then it stays where it is, and the
        // message says where), read-only again if it was.
        let back = rustix::fs::renameat_with(
            &aside.fd,
            Aside::ENTRY,
            parent,
            name,
            RenameFlags::NOREPLACE,
        );
        restore();
        match back {
            Ok(()) | Err(Errno::NOENT) => {
                aside.remove(parent);
                Err(fail(problem))
            }
            Err(e) => {
                let mut at = path.to_vec();
                if let Some(i) = at.iter().rposition(|&c| c == b'/') {
                    at.truncate(i);
                    join(&mut at, aside.name.to_bytes());
                } else {
                    at = aside.name.to_bytes().to_vec();
                }
                join(&mut at, Aside::ENTRY.to_bytes());
                Err(fail(Problem::LeftAside {
                    at,
                    why: Box::new(problem),
                    back: e.into(),
                }))
            }
        }
    }
}
