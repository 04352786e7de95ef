//! `b`: a shell in the directory shown, as in ncdu. The browser leaves the
//! screen, runs `$SHELL` (`/bin/sh` when unset) in that directory and
//! waits for it; then it takes the screen again and scans anew, since the
//! shell may have changed anything.
//!
//! The directory is opened as deleting opens a level: its root by the
//! path as given (as the scan took it), then one name at a time,
//! `O_DIRECTORY | O_NOFOLLOW`, each level checked against what the scan
//! saw there (device, inode and mount). A symlink, another directory or a
//! mount put on the way since the scan: no shell starts. The shell then
//! starts in the directory open, not in one found again by its path (see
//! [`run`]). `SDU_LEVEL` tells the shell how many sdu shells it is nested
//! in, as `NCDU_LEVEL` does for ncdu's.

use std::ffi::CString;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::process::Command;

use crossterm::terminal::EnterAlternateScreen;
use crossterm::{cursor, execute, terminal};
use rustix::fs::{AtFlags, CWD, Mode, OFlags, StatxFlags};
use rustix::io::Errno;
use sdu::Ident;
use sdu_sys::tty;

use super::{Term, flush_input, restore};

/// The directory to start the shell in, as the scan saw it.
pub(super) struct Dir {
    /// Its path, for the messages.
    pub(crate) path: Vec<u8>,
    /// Its root as given on the command line.
    pub(crate) root: Vec<u8>,
    /// The names from the root down to it.
    pub(crate) names: Vec<Vec<u8>>,
    /// What the scan saw at each level, the root first.
    pub(crate) idents: Vec<Ident>,
}

/// Runs the shell in `dir` (`None`: the list of roots, whose paths are
/// relative to the working directory, where it then starts).
/// `Ok(Err(why))`: no shell was started, and why; `Err`: the terminal
/// failed.
pub(super) fn run(term: &mut Term, dir: Option<Dir>) -> io::Result<Result<(), String>> {
    let (path, fd) = match dir {
        None => (b".".to_vec(), None),
        Some(d) => match open_checked(&d) {
            Ok(fd) => (d.path, Some(fd)),
            Err(why) => return Ok(Err(why)),
        },
    };
    let shell = std::env::var_os("SHELL")
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "/bin/sh".into());
    let level = std::env::var("SDU_LEVEL")
        .ok()
        .and_then(|l| l.parse::<u32>().ok())
        .unwrap_or(0)
        + 1;
    restore();
    let mut out = io::stdout();
    writeln!(
        out,
        "sdu: a shell in {}; exit it to come back to sdu, which then scans again.",
        sdu::quote(&path)
    )?;
    out.flush()?;
    let mut cmd = Command::new(&shell);
    cmd.env("SDU_LEVEL", level.to_string());
    if let Some(fd) = &fd {
        // The child changes to `/proc/self/fd/N` before it runs the shell:
        // it has inherited the fd (close-on-exec closes it only at the
        // exec that follows), and the kernel resolves that link to the
        // very directory open there, not to whatever now has its name.
        // No name is looked up between the check and the shell: no window.
        // (`fchdir` in sdu around the spawn would change the directory of
        // every thread, and roots given relative to it are scanned again
        // after the shell.)
        cmd.current_dir(format!("/proc/self/fd/{}", fd.as_raw_fd()));
    }
    let status = cmd.status();
    drop(fd);
    terminal::enable_raw_mode()?;
    tty::raw(true);
    execute!(io::stdout(), EnterAlternateScreen, cursor::Hide)?;
    term.clear()?;
    flush_input();
    match status {
        Ok(_) => Ok(Ok(())),
        Err(e) => Ok(Err(format!(
            "No shell: cannot run {} in {}: {e}",
            sdu::quote(shell.as_bytes()),
            sdu::quote(&path)
        ))),
    }
}

/// `d` opened level by level, each level the one the scan saw; why not.
fn open_checked(d: &Dir) -> Result<OwnedFd, String> {
    let replaced = || {
        format!(
            "No shell: {} is not the directory scanned (replaced since).",
            sdu::quote(&d.path)
        )
    };
    let failed = |e: Errno| match e {
        // A symlink (O_NOFOLLOW) or no directory now at a name.
        Errno::LOOP | Errno::NOTDIR => replaced(),
        e => format!(
            "No shell: cannot open {}: {}",
            sdu::quote(&d.path),
            io::Error::from(e)
        ),
    };
    if d.idents.len() != d.names.len() + 1 {
        return Err(format!(
            "No shell: the scan recorded nothing of {}.",
            sdu::quote(&d.path)
        ));
    }
    let cstr = |b: &[u8]| CString::new(b).map_err(|_| failed(Errno::INVAL));
    let check = |fd: BorrowedFd<'_>, want: Ident| -> Result<(), String> {
        let st = rustix::fs::statx(
            fd,
            c"",
            AtFlags::EMPTY_PATH,
            StatxFlags::TYPE | StatxFlags::INO | StatxFlags::MNT_ID,
        )
        .map_err(failed)?;
        let now = Ident {
            dev: rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor),
            ino: st.stx_ino,
            // A kernel without STATX_MNT_ID leaves it 0, in the scan too.
            mnt: st.stx_mnt_id,
        };
        if now == want { Ok(()) } else { Err(replaced()) }
    };
    // The root as given: the kernel resolves it, as the scan's statx did.
    let mut fd = rustix::fs::openat(
        CWD,
        cstr(&d.root)?.as_c_str(),
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(failed)?;
    check(fd.as_fd(), d.idents[0])?;
    for (name, &want) in d.names.iter().zip(&d.idents[1..]) {
        fd = rustix::fs::openat(
            &fd,
            cstr(name)?.as_c_str(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(failed)?;
        check(fd.as_fd(), want)?;
    }
    Ok(fd)
}
