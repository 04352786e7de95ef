//! The terminal put back on a fatal signal: an abort (out of memory, a
//! failed assertion under `panic = "abort"`), a crash, a hangup, a quit,
//! a timer or user signal nobody meant for sdu; and on a stop (Ctrl-Z,
//! SIGTSTP), taken again when the process continues.
//!
//! The browser switches the terminal to raw mode and the alternate screen.
//! A process killed by a signal runs no destructor and no panic hook, so
//! without this the shell comes back to a terminal that echoes nothing and
//! shows the browser's last screen. The handlers here put back the
//! terminal settings saved before raw mode (`TCSETS`, the `tcsetattr`
//! ioctl), leave the alternate screen and show the cursor (one `write`),
//! then die by the same signal with its default action, so the exit status
//! is the signal's. Both calls are system calls with no allocation and no
//! lock: async-signal-safe. SIGINT and SIGTERM are left to the caller
//! (sdu handles them in a thread, which can take its time). A signal the
//! process inherited as ignored stays ignored: [`install`] is told which.
//!
//! SIGTSTP (Ctrl-Z is a key in raw mode: the browser sends it to itself)
//! restores the same way, then stops the process (SIGSTOP, the stop that
//! cannot be caught: SIGTSTP's default action). When it continues, the
//! handler notes it ([`take_resumed`]) and raises SIGWINCH, which wakes
//! the browser's event loop (crossterm reads it as a resize); the loop then
//! enters raw mode and the alternate screen again and draws everything.
//!
//! The `unsafe` here: registering a signal handler, and naming the
//! terminal's fd from inside one.

use std::io::{self, IsTerminal};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::termios::{OptionalActions, Termios};
use signal_hook::consts::{
    SIGABRT, SIGALRM, SIGBUS, SIGFPE, SIGHUP, SIGILL, SIGPROF, SIGQUIT, SIGSEGV, SIGSTOP, SIGSYS,
    SIGTRAP, SIGTSTP, SIGUSR1, SIGUSR2, SIGVTALRM, SIGWINCH, SIGXCPU, SIGXFSZ,
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
/// The process continued after a stop that restored the terminal: the
/// browser takes it again.
static RESUMED: AtomicBool = AtomicBool::new(false);

/// The signals whose default action ends the process that the handler
/// can die by (those `emulate_default_handler` knows), but for SIGINT and
/// SIGTERM (the caller's), SIGPIPE (ignored by Rust's runtime)
/// and the three of [`FAULTS`].
const FATAL: [i32; 13] = [
    SIGABRT, SIGALRM, SIGBUS, SIGHUP, SIGPROF, SIGQUIT, SIGSYS, SIGTRAP, SIGUSR1, SIGUSR2,
    SIGVTALRM, SIGXCPU, SIGXFSZ,
];

/// The faults, which `register` refuses (below).
const FAULTS: [i32; 3] = [SIGSEGV, SIGILL, SIGFPE];

/// Leaves the alternate screen and shows the cursor.
const LEAVE: &[u8] = b"\x1b[?1049l\x1b[?25h";

/// Saves the terminal's settings (the terminal crossterm puts in raw mode:
/// standard input, or `/dev/tty`) and installs the handlers, once. Call
/// before raw mode; then [`raw`] says when it is on. No handler is
/// installed for a signal for which `inherited_ignored` is true: one the
/// process inherited as ignored stays ignored.
pub fn install(inherited_ignored: impl Fn(i32) -> bool) -> io::Result<()> {
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
    for sig in FATAL.into_iter().filter(|&s| !inherited_ignored(s)) {
        // SAFETY: `on_fatal` makes only async-signal-safe calls: atomic
        // loads, a read of the `OnceLock` set above (set before any handler
        // exists, never changed after), `tcsetattr`, `write` and the
        // re-raise (`emulate_default_handler`, documented as
        // async-signal-safe).
        unsafe { signal_hook::low_level::register(sig, move || on_fatal(sig)) }?;
    }
    for sig in FAULTS {
        // SAFETY: as above. These three are refused by `register`: a
        // handler that returns re-runs the faulting instruction. This one
        // never returns (it dies by the default action), and the handler
        // that was there before (the standard library's stack overflow
        // report) runs first, as the registry chains it.
        unsafe { signal_hook_registry::register_unchecked(sig, move |_| on_fatal(sig)) }?;
    }
    if !inherited_ignored(SIGTSTP) {
        // SAFETY: `on_stop` makes only async-signal-safe calls: those of
        // `on_fatal` (the restoring), atomic stores and `raise`.
        unsafe { signal_hook::low_level::register(SIGTSTP, on_stop) }?;
    }
    Ok(())
}

/// Stops the process as Ctrl-Z does outside raw mode (the terminal put
/// back first, by the SIGTSTP handler); returns once it continues.
pub fn suspend() {
    let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::TSTP);
}

/// Whether the process continued after a stop that left raw mode and the
/// alternate screen (once: the flag is cleared).
pub fn take_resumed() -> bool {
    RESUMED.swap(false, Ordering::SeqCst)
}

/// Raw mode is on (`true`) or off.
pub fn raw(on: bool) {
    RAW.store(on, Ordering::SeqCst);
}

/// The handler: restore, then die by `sig`.
fn on_fatal(sig: i32) {
    put_back();
    let _ = signal_hook::low_level::emulate_default_handler(sig);
}

/// SIGTSTP's handler: restore, stop; once continued, ask for the browser
/// back (the SIGWINCH wakes its event loop).
fn on_stop() {
    let was_raw = put_back();
    let _ = signal_hook::low_level::raise(SIGSTOP);
    if was_raw {
        RESUMED.store(true, Ordering::SeqCst);
        let _ = signal_hook::low_level::raise(SIGWINCH);
    }
}

/// Puts the terminal back if raw mode is on: the saved settings, the
/// normal screen, the cursor. Whether it was on.
fn put_back() -> bool {
    if !RAW.swap(false, Ordering::SeqCst) {
        return false;
    }
    if let Some(s) = SAVED.get() {
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
    true
}
