//! The exit statuses sdu ends with, named: du's 0 and 1, sdu's own 2 for a
//! usage or fatal error, 3 for a `--to-free` SIZE the candidates cannot
//! free, and the browser's 130 after Ctrl-C stopped a deletion.

use std::process::ExitCode;

/// How a run of sdu ended, as its exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ExitStatus {
    /// 0: everything was read (or `--help`, `--version`, `--generate`).
    Success = 0,
    /// 1: some entries could not be read, each named on stderr. du's
    /// EXIT_FAILURE, which du also ends with on a usage error: so does sdu
    /// in du's mode.
    Failure = 1,
    /// 2: a usage error in sdu's own mode, or a fatal error: any
    /// [`sdu::Error`] that ends the run (more entries than sdu can count,
    /// a saved scan it cannot read, a write error other than a closed
    /// pipe), or the browser's terminal failing.
    Fatal = 2,
    /// 3: `--to-free SIZE`: the candidates together cannot free SIZE. Its
    /// own status, not 1: a script must tell "no plan reaches it" from
    /// "a plan, with some entries unread".
    Unreached = 3,
    /// 130 (128 + SIGINT): Ctrl-C stopped the browser's deletion between
    /// two entries.
    Interrupted = 130,
}

impl ExitStatus {
    /// The status of a usage error: du's 1 in du's mode, else 2.
    pub(crate) fn usage(du: bool) -> ExitStatus {
        if du {
            ExitStatus::Failure
        } else {
            ExitStatus::Fatal
        }
    }

    /// The status of a run that ended with `o`: [`ExitStatus::Unreached`]
    /// when `--to-free`'s SIZE was not reached (entries unread or not: the
    /// plan is the news), else [`ExitStatus::failed_if`] some entries
    /// could not be read.
    pub(crate) fn of(o: &sdu::Outcome) -> ExitStatus {
        if o.unreached {
            ExitStatus::Unreached
        } else {
            ExitStatus::failed_if(o.errors > 0)
        }
    }

    /// [`ExitStatus::Failure`] when something could not be read, else
    /// [`ExitStatus::Success`].
    pub(crate) fn failed_if(failed: bool) -> ExitStatus {
        if failed {
            ExitStatus::Failure
        } else {
            ExitStatus::Success
        }
    }
}

impl From<ExitStatus> for ExitCode {
    fn from(s: ExitStatus) -> ExitCode {
        ExitCode::from(s as u8)
    }
}
