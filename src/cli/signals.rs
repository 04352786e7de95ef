//! Ctrl-C (SIGINT) or SIGTERM during a scan: the progress line is cleared,
//! then sdu dies by the signal, as it would have without a handler. And a
//! closed pipe in du's mode: death by SIGPIPE, as du's.
//!
//! Without this, the killed process leaves its last progress line on the
//! terminal and the shell prints its prompt after it. Dying by the signal
//! itself (not `exit(130)`) matters: a shell running a script stops the
//! script only when its child was killed by SIGINT.

use std::io;
use std::thread;
use std::time::Duration;

use signal_hook::consts::{SIGINT, SIGPIPE, SIGTERM};
use signal_hook::iterator::Signals;
use signal_hook::low_level::emulate_default_handler;

use super::progress::Clearer;

/// Clears the line with `clearer` when SIGINT or SIGTERM arrives, then
/// lets the signal kill the process.
///
/// A signal the process inherited as ignored (`nohup`, a background job
/// of a non-interactive shell) stays ignored: catching it would let it
/// kill sdu, which it must not. The handlers are installed before this
/// returns (a signal right after the progress line appears must find
/// them: installing them from the waiting thread lost that race on a
/// loaded machine); if the waiting thread cannot start, dropping the
/// handlers unregisters them, so that no signal is caught with nobody to
/// act on it.
pub(crate) fn clear_progress_on_interrupt(clearer: Clearer) -> io::Result<()> {
    on_interrupt(move || clearer.clear())
}

/// Runs `cleanup` when SIGINT or SIGTERM arrives, then lets the signal
/// kill the process (the browser restores the terminal this way), with
/// the rules of [`clear_progress_on_interrupt`].
pub(crate) fn on_interrupt(cleanup: impl FnOnce() + Send + 'static) -> io::Result<()> {
    let caught: Vec<i32> = [SIGINT, SIGTERM]
        .into_iter()
        .filter(|&s| !inherited_ignored(s))
        .collect();
    if caught.is_empty() {
        return Ok(());
    }
    let mut signals = Signals::new(&caught)?;
    thread::Builder::new()
        .name("sdu-signals".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                // Die on time even if the terminal blocks the clearing
                // (output stopped with ^S when SIGTERM comes).
                let _ = thread::Builder::new().spawn(move || {
                    thread::sleep(Duration::from_secs(1));
                    let _ = emulate_default_handler(sig);
                });
                cleanup();
                let _ = emulate_default_handler(sig);
            }
        })
        .map(drop)
}

/// Ends the process as a closed pipe ends GNU du: killed by SIGPIPE.
///
/// Rust's runtime ignores SIGPIPE before `main`, so a write to a closed
/// pipe fails with EPIPE instead of killing the process; this restores the
/// default action, unblocks the signal and raises it. Whether du's parent
/// had it ignored cannot be known once the runtime has set it (du would
/// then say `write error` and exit 1): sdu takes the usual case.
pub(crate) fn die_of_sigpipe() -> ! {
    let _ = emulate_default_handler(SIGPIPE);
    // Not reached: emulate_default_handler aborts when it cannot raise.
    std::process::abort()
}

/// Whether `sig` is ignored in this process (from `/proc/self/status`,
/// which needs no `sigaction` call): false when that cannot be read.
pub(crate) fn inherited_ignored(sig: i32) -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| (1..=64).contains(&sig) && (mask >> (sig - 1)) & 1 == 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_ignored() {
        // SIGKILL cannot be ignored, and there is no signal 0 or 65.
        assert!(!inherited_ignored(signal_hook::consts::SIGKILL));
        assert!(!inherited_ignored(0));
        assert!(!inherited_ignored(65));
    }
}
