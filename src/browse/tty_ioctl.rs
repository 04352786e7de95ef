//! The terminal put back on a fatal signal: an abort (out of memory, a
//! failed assertion under `panic = "abort"`), a crash, a hangup, a quit.
//!
//! The browser switches the terminal to raw mode and the alternate screen.
//! A process killed by a signal runs no destructor and no panic hook, so
//! without this the shell comes back to a terminal that echoes nothing and
//! shows the browser's last screen. The handlers here put back the
//! terminal settings saved before raw mode (`TCSETS`, the `tcsetattr`
//! ioctl), leave the alternate screen and show the cursor (one `write`),
//! then die by the same signal with its default action, so the exit status
//! is the signal's. Both calls are system calls with no allocation and no
//! lock: async-signal-safe. SIGINT and SIGTERM are handled by a thread
//! ([`crate::cli::signals`]), which can take its time.
//!
//! One of the modules that may use `unsafe`: registering a signal handler
//! and naming the terminal's fd from inside one.

#![allow(unsafe_code)]

use std::io::{self, IsTerminal};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::termios::{OptionalActions, Termios};
use signal_hook::consts::{
    SIGABRT, SIGBUS, SIGFPE, SIGHUP, SIGILL, SIGQUIT, SIGSEGV, SIGSYS, SIGTRAP, SIGXCPU, SIGXFSZ,
};

/// The terminal's fd and its settings before raw mode.
struct Saved {
    fd: RawFd,
    termios: Termios,
    /// `/dev/tty`, when standard input is not the terminal (kept open for
    /// the handler).
    _tty: Option<OwnedFd>,
}

static SAVED: OnceLock<Saved> = OnceLock::new();
/// Raw mode is on: a fatal signal restores.
static RAW: AtomicBool = AtomicBool::new(false);

/// Leaves the alternate screen and shows the cursor.
const LEAVE: &[u8] = b"\x1b[?1049l\x1b[?25h";

/// Saves the terminal's settings (the terminal crossterm puts in raw mode:
/// standard input, or `/dev/tty`) and installs the handlers, once. Call
/// before raw mode; then [`raw`] says when it is on.
pub fn install() -> io::Result<()> {
    if SAVED.get().is_some() {
        return Ok(());
    }
    let tty = if io::stdin().is_terminal() {
        None
    } else {
        Some(OwnedFd::from(std::fs::File::open("/dev/tty")?))
    };
    let fd = match &tty {
        Some(t) => t.as_raw_fd(),
        None => io::stdin().as_raw_fd(),
    };
    let termios = match &tty {
        Some(t) => rustix::termios::tcgetattr(t.as_fd())?,
        None => rustix::termios::tcgetattr(io::stdin())?,
    };
    let _ = SAVED.set(Saved {
        fd,
        termios,
        _tty: tty,
    });
    for sig in [
        SIGABRT, SIGBUS, SIGHUP, SIGQUIT, SIGSYS, SIGTRAP, SIGXCPU, SIGXFSZ,
    ] {
        // SAFETY: `on_fatal` makes only async-signal-safe calls: atomic
        // loads, a read of the `OnceLock` set above (set before any handler
        // exists, never changed after), `tcsetattr`, `write` and the
        // re-raise (`emulate_default_handler`, documented as
        // async-signal-safe).
        unsafe { signal_hook::low_level::register(sig, move || on_fatal(sig)) }?;
    }
    for sig in [SIGSEGV, SIGILL, SIGFPE] {
        // SAFETY: as above. These three are refused by `register`: a
        // handler that returns re-runs the faulting instruction. This one
        // never returns (it dies by the default action), and the handler
        // that was there before (the standard library's stack overflow
        // report) runs first, as the registry chains it.
        unsafe { signal_hook_registry::register_unchecked(sig, move |_| on_fatal(sig)) }?;
    }
    Ok(())
}

/// Raw mode is on (`true`) or off.
pub fn raw(on: bool) {
    RAW.store(on, Ordering::SeqCst);
}

/// The handler: restore, then die by `sig`.
fn on_fatal(sig: i32) {
    if RAW.swap(false, Ordering::SeqCst)
        && let Some(s) = SAVED.get()
    {
        // SAFETY: `s.fd` is standard input or the `/dev/tty` fd that
        // `SAVED` keeps open for the life of the process.
        let tty = unsafe { BorrowedFd::borrow_raw(s.fd) };
        let _ = rustix::termios::tcsetattr(tty, OptionalActions::Now, &s.termios);
        // SAFETY: fd 1, standard output, where the browser draws: open for
        // the life of the process (borrowed, not through `io::stdout()`,
        // which is not async-signal-safe to reach).
        let out = unsafe { BorrowedFd::borrow_raw(1) };
        let _ = rustix::io::write(out, LEAVE);
    }
    let _ = signal_hook::low_level::emulate_default_handler(sig);
}
