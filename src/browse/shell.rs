//! `b`: a shell in the directory shown, as in ncdu. The browser leaves the
//! screen, runs `$SHELL` (`/bin/sh` when unset) in that directory and
//! waits for it; then it takes the screen again and scans anew, since the
//! shell may have changed anything.
//!
//! The directory is checked first: it must be the one the scan saw there
//! (device and inode), or no shell starts. `SDU_LEVEL` tells the shell how
//! many sdu shells it is nested in, as `NCDU_LEVEL` does for ncdu's.

use std::ffi::OsStr;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::process::Command;

use crossterm::terminal::EnterAlternateScreen;
use crossterm::{cursor, execute, terminal};
use sdu::records::Ident;

use super::{Term, flush_input, restore, tty_ioctl};

/// Runs the shell in `dir` (its path and what the scan saw there; `None`:
/// the list of roots, whose paths are relative to the working directory).
/// `Ok(Err(why))`: no shell was started, and why; `Err`: the terminal
/// failed.
pub(super) fn run(
    term: &mut Term,
    dir: Option<(Vec<u8>, Option<Ident>)>,
) -> io::Result<Result<(), String>> {
    let (path, ident) = dir.unwrap_or_else(|| (b".".to_vec(), None));
    if let Some(want) = ident {
        let now = rustix::fs::statx(
            rustix::fs::CWD,
            &path[..],
            rustix::fs::AtFlags::empty(),
            rustix::fs::StatxFlags::INO | rustix::fs::StatxFlags::MNT_ID,
        );
        match now {
            Ok(st)
                if (
                    rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor),
                    st.stx_ino,
                ) == (want.dev, want.ino) => {}
            Ok(_) => {
                return Ok(Err(format!(
                    "No shell: {} is not the directory scanned (replaced since).",
                    sdu::quote(&path)
                )));
            }
            Err(e) => {
                return Ok(Err(format!(
                    "No shell: cannot access {}: {}",
                    sdu::quote(&path),
                    io::Error::from(e)
                )));
            }
        }
    }
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
    let status = Command::new(&shell)
        .current_dir(OsStr::from_bytes(&path))
        .env("SDU_LEVEL", level.to_string())
        .status();
    terminal::enable_raw_mode()?;
    tty_ioctl::raw(true);
    execute!(io::stdout(), EnterAlternateScreen, cursor::Hide)?;
    term.clear()?;
    flush_input();
    match status {
        Ok(_) => Ok(Ok(())),
        Err(e) => Ok(Err(format!(
            "No shell: cannot run {}: {e}",
            sdu::quote(shell.as_bytes())
        ))),
    }
}
