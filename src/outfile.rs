//! The files sdu writes on request (`--export FILE`, `--html FILE`): made
//! whole beside FILE, then renamed over it, as editors and package
//! managers replace a file. A run that fails, or is killed, leaves FILE as
//! it was and no partial file anywhere; no symlink another user planted is
//! followed.
//!
//! What FILE names decides how it is written ([`OutputFile::create`]):
//!
//! - nothing, a regular file, or a symlink owned by someone other than the
//!   caller and root: replaced, by a new regular file renamed over the
//!   name (a symlink there is replaced, never followed). A regular file
//!   the caller may not replace (in a directory they may not write, or
//!   another user's in a sticky directory; never so for root) is written
//!   in place; such a symlink is refused;
//! - a FIFO, a character or block device (`/dev/null`, a terminal): written
//!   directly, as a shell's `>` would, and not synced (there is nothing
//!   to sync);
//! - a symlink owned by the caller or by root (`/dev/stdout`, one's own
//!   link to a file elsewhere): followed, and what it leads to written in
//!   place, as a shell's `>` would (a regular file there is truncated,
//!   written and synced); a dangling one is replaced;
//! - a directory: refused.
//!
//! The directory part of FILE is resolved once, as given: whoever can
//! change the directories on the way to FILE chooses where it is written.
//!
//! The new file is created unnamed (`O_TMPFILE`), so that a run killed
//! midway leaves nothing, and given a name beside FILE only when complete
//! and synced; where the filesystem cannot make unnamed files, it is
//! created under a new name beside FILE (`O_EXCL`, not through a
//! symlink), removed if the run fails. Its mode is what creating FILE
//! would give a new file (0666 less the umask); a regular file of the
//! caller's that it replaces keeps its permission bits.

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use rustix::fs::{self as rfs, AtFlags, CWD, FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::error::{Error, io_text};

/// A file being written for `--export FILE` or `--html FILE`; it replaces
/// FILE only on [`OutputFile::commit`]. Dropped without it, FILE stays as
/// it was.
#[derive(Debug)]
pub struct OutputFile {
    /// FILE, as given.
    path: Vec<u8>,
    file: File,
    /// Whether `file` is a regular file (synced when complete).
    regular: bool,
    /// Where the new file goes when complete; `None` when FILE is written
    /// in place.
    replace: Option<Replace>,
}

/// A new file to be renamed over FILE.
#[derive(Debug)]
struct Replace {
    /// FILE's directory, resolved once.
    dir: OwnedFd,
    /// FILE's last component.
    name: CString,
    /// The new file's name in `dir`, once it has one.
    temp: Option<CString>,
}

impl OutputFile {
    /// Opens what FILE `path` names for writing, as the module says.
    ///
    /// # Errors
    /// [`Error::SavedScan`] ("cannot create: ...") when FILE's directory
    /// cannot be opened, FILE is a directory, or no new file can be made.
    pub fn create(path: &[u8]) -> Result<OutputFile, Error> {
        Self::open(path).map_err(|e| Error::SavedScan {
            file: path.to_vec(),
            what: format!("cannot create: {}", io_text(&io::Error::from(e))),
        })
    }

    fn open(path: &[u8]) -> Result<OutputFile, Errno> {
        let (dir, name) = split(path)?;
        let dir = rfs::open(
            dir.as_c_str(),
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let pinned = match rfs::openat(
            &dir,
            &name,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Self::replacing(path, dir, name, None),
            Err(e) => return Err(e),
        };
        let st = rfs::fstat(&pinned)?;
        let euid = rustix::process::geteuid().as_raw();
        match FileType::from_raw_mode(st.st_mode) {
            FileType::Symlink if st.st_uid == euid || st.st_uid == 0 => {
                match rfs::openat(&dir, &name, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()) {
                    Ok(target) => Self::in_place(path, &target),
                    Err(Errno::NOENT) => Self::replacing(path, dir, name, None),
                    Err(e) => Err(e),
                }
            }
            // Another user's link, which the caller may not replace (a
            // sticky directory): refused, never followed.
            FileType::Symlink if !may_replace(&dir, &st, euid)? => Err(Errno::PERM),
            FileType::Symlink => Self::replacing(path, dir, name, None),
            FileType::RegularFile => {
                // A file the caller may not replace (in a directory they
                // may not write, or another user's in a sticky one) is
                // written in place, as a shell's `>` would, if they may
                // write it. Root may always replace it: never in place.
                if !may_replace(&dir, &st, euid)? {
                    return Self::in_place(path, &pinned);
                }
                let keep = (st.st_uid == euid).then(|| Mode::from_raw_mode(st.st_mode & 0o777));
                match Self::replacing(path, dir, name, keep) {
                    Err(Errno::ACCESS | Errno::PERM) => Self::in_place(path, &pinned),
                    r => r,
                }
            }
            _ => Self::in_place(path, &pinned),
        }
    }

    /// Opens the file `pinned` (an `O_PATH` fd) is, to write it in place:
    /// a regular file truncated, anything else as it is.
    fn in_place(path: &[u8], pinned: &OwnedFd) -> Result<OutputFile, Errno> {
        let st = rfs::fstat(pinned)?;
        let kind = FileType::from_raw_mode(st.st_mode);
        if kind == FileType::Directory {
            return Err(Errno::ISDIR);
        }
        let regular = kind == FileType::RegularFile;
        let mut flags = OFlags::WRONLY | OFlags::NOCTTY | OFlags::CLOEXEC;
        if regular {
            flags |= OFlags::TRUNC;
        }
        let fd = rfs::open(proc_fd(pinned.as_fd()).as_c_str(), flags, Mode::empty())?;
        Ok(OutputFile {
            path: path.to_vec(),
            file: File::from(fd),
            regular,
            replace: None,
        })
    }

    /// A new file in `dir`, to be renamed over `name` when complete; with
    /// the permission bits `keep`, when given.
    fn replacing(
        path: &[u8],
        dir: OwnedFd,
        name: CString,
        keep: Option<Mode>,
    ) -> Result<OutputFile, Errno> {
        Self::new_file(path, (dir, name), keep, true)
    }

    /// [`Self::replacing`]: unnamed if `unnamed` and the filesystem can.
    fn new_file(
        path: &[u8],
        (dir, name): (OwnedFd, CString),
        keep: Option<Mode>,
        unnamed: bool,
    ) -> Result<OutputFile, Errno> {
        let new = Mode::from_raw_mode(0o666);
        let mut replace = Replace {
            dir,
            name,
            temp: None,
        };
        let made = if unnamed {
            rfs::openat(
                &replace.dir,
                c".",
                OFlags::TMPFILE | OFlags::WRONLY | OFlags::CLOEXEC,
                new,
            )
        } else {
            Err(Errno::OPNOTSUPP)
        };
        let fd = match made {
            Ok(fd) => fd,
            // No unnamed files here (EOPNOTSUPP; EISDIR or EINVAL from
            // kernels or filesystems without O_TMPFILE): a named one.
            Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL) => {
                let (fd, temp) = replace.unique(|temp| {
                    rfs::openat(
                        &replace.dir,
                        temp,
                        OFlags::CREATE
                            | OFlags::EXCL
                            | OFlags::NOFOLLOW
                            | OFlags::WRONLY
                            | OFlags::CLOEXEC,
                        new,
                    )
                })?;
                replace.temp = Some(temp);
                fd
            }
            Err(e) => return Err(e),
        };
        // Made before the fchmod: a failure then removes it (Drop).
        let out = OutputFile {
            path: path.to_vec(),
            file: File::from(fd),
            regular: true,
            replace: Some(replace),
        };
        if let Some(mode) = keep {
            rfs::fchmod(&out.file, mode)?;
        }
        Ok(out)
    }

    /// The error of a write to FILE `path` that failed.
    pub fn write_error(path: &[u8], e: &io::Error) -> Error {
        Error::SavedScan {
            file: path.to_vec(),
            what: format!("write error: {}", io_text(e)),
        }
    }

    /// Makes FILE what was written: synced (a regular file), then, when
    /// FILE is replaced, named beside it and renamed over it. On failure,
    /// FILE is as it was (unless written in place).
    ///
    /// # Errors
    /// [`Error::SavedScan`] ("write error: ...").
    pub fn commit(mut self) -> Result<(), Error> {
        self.finish().map_err(|e| Self::write_error(&self.path, &e))
    }

    fn finish(&mut self) -> io::Result<()> {
        self.file.flush()?;
        if self.regular {
            self.file.sync_all()?;
        }
        let Some(r) = &mut self.replace else {
            return Ok(());
        };
        if r.temp.is_none() {
            let from = proc_fd(self.file.as_fd());
            let linked = r.unique(|temp| {
                rfs::linkat(CWD, from.as_c_str(), &r.dir, temp, AtFlags::SYMLINK_FOLLOW)
            });
            let ((), temp) = match linked {
                Ok(done) => done,
                // No /proc: linked by the fd itself (CAP_DAC_READ_SEARCH).
                Err(Errno::NOENT) => r.unique(|temp| {
                    rfs::linkat(&self.file, c"", &r.dir, temp, AtFlags::EMPTY_PATH)
                })?,
                Err(e) => return Err(e.into()),
            };
            r.temp = Some(temp);
        }
        let temp = r.temp.as_deref().expect("named above");
        rfs::renameat(&r.dir, temp, &r.dir, &r.name)?;
        r.temp = None;
        // The rename made durable where the directory can be synced; FILE
        // is complete either way.
        if let Ok(d) = rfs::open(
            proc_fd(r.dir.as_fd()).as_c_str(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            let _ = rfs::fsync(&d);
        }
        Ok(())
    }
}

impl Replace {
    /// `make` given new names beside FILE until one is free (`EEXIST`
    /// tries the next); what it made, and the name.
    fn unique<T>(
        &self,
        mut make: impl FnMut(&CStr) -> Result<T, Errno>,
    ) -> Result<(T, CString), Errno> {
        let pid = std::process::id();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        // A name of at most 255 bytes: FILE's, cut, then what makes it new.
        let stem = &self.name.as_bytes()[..self.name.as_bytes().len().min(200)];
        for k in 0..1000u32 {
            let mut temp = b".".to_vec();
            temp.extend_from_slice(stem);
            temp.extend_from_slice(format!(".sdu-{pid}-{nanos:x}-{k}").as_bytes());
            let temp = CString::new(temp).map_err(|_| Errno::INVAL)?;
            match make(&temp) {
                Ok(t) => return Ok((t, temp)),
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(Errno::EXIST)
    }
}

impl Drop for OutputFile {
    /// Not committed: the new file goes (an unnamed one goes by itself).
    fn drop(&mut self) {
        if let Some(Replace {
            dir,
            temp: Some(temp),
            ..
        }) = &self.replace
        {
            let _ = rfs::unlinkat(dir, temp.as_c_str(), AtFlags::empty());
        }
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// Whether the caller may rename a file over the entry stat-ed as `st` in
/// directory `dir`: not in a sticky directory unless they own the entry or
/// the directory, or hold `CAP_FOWNER` (root).
fn may_replace(dir: &OwnedFd, st: &rfs::Stat, euid: u32) -> Result<bool, Errno> {
    let d = rfs::fstat(dir)?;
    let sticky = d.st_mode & 0o1000 != 0;
    Ok(!sticky
        || st.st_uid == euid
        || d.st_uid == euid
        || rustix::thread::capabilities(None)
            .is_ok_and(|c| c.effective.contains(rustix::thread::CapabilitySet::FOWNER)))
}

/// FILE's directory (`.` when it has none) and its last component.
/// A FILE ending in `/`, `.` or `..` names a directory: `EISDIR`.
fn split(path: &[u8]) -> Result<(CString, CString), Errno> {
    let (dir, name) = match path.iter().rposition(|&b| b == b'/') {
        Some(0) => (&b"/"[..], &path[1..]),
        Some(i) => (&path[..i], &path[i + 1..]),
        None => (&b"."[..], path),
    };
    if path.is_empty() {
        return Err(Errno::NOENT);
    }
    if name.is_empty() || name == b"." || name == b".." {
        return Err(Errno::ISDIR);
    }
    let c = |b: &[u8]| CString::new(b).map_err(|_| Errno::INVAL);
    Ok((c(dir)?, c(name)?))
}

/// The path of open file `fd` under `/proc/self/fd`.
fn proc_fd(fd: std::os::fd::BorrowedFd<'_>) -> CString {
    CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd())).expect("no NUL in a number")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_names() {
        let s = |p: &[u8]| split(p).map(|(d, n)| (d.into_bytes(), n.into_bytes()));
        assert_eq!(s(b"out"), Ok((b".".to_vec(), b"out".to_vec())));
        assert_eq!(s(b"/out"), Ok((b"/".to_vec(), b"out".to_vec())));
        assert_eq!(s(b"a/b/out"), Ok((b"a/b".to_vec(), b"out".to_vec())));
        assert_eq!(s(b"a/"), Err(Errno::ISDIR));
        assert_eq!(s(b"a/.."), Err(Errno::ISDIR));
        assert_eq!(s(b""), Err(Errno::NOENT));
    }

    /// Where the filesystem cannot make an unnamed file: the named one
    /// beside FILE goes if the file is dropped, and replaces FILE, leaving
    /// nothing else, when committed.
    #[test]
    fn a_named_new_file_replaces_file_or_goes() {
        use std::os::unix::ffi::OsStrExt;
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("out");
        std::fs::write(&file, b"old").unwrap();
        let names = || {
            let mut v: Vec<String> = std::fs::read_dir(d.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        };
        let open = || {
            let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
            let dir = rfs::open(d.path(), flags, Mode::empty()).unwrap();
            let name = CString::new("out").unwrap();
            let path = file.as_os_str().as_bytes();
            OutputFile::new_file(path, (dir, name), None, false).unwrap()
        };
        let mut o = open();
        o.write_all(b"new").unwrap();
        let during = names();
        assert_eq!(during.len(), 2, "{during:?}");
        assert!(during[0].starts_with(".out.sdu-"), "{during:?}");
        drop(o);
        assert_eq!(names(), ["out"]);
        assert_eq!(std::fs::read(&file).unwrap(), b"old");
        let mut o = open();
        o.write_all(b"new").unwrap();
        o.commit().unwrap();
        assert_eq!(names(), ["out"]);
        assert_eq!(std::fs::read(&file).unwrap(), b"new");
    }
}
