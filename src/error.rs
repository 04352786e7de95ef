//! The errors that end a run. Per-entry failures are not among them: they
//! are reported on [`crate::Messages`], counted, and the walk goes on.

use std::fmt;
use std::io;

/// Why a run could not finish.
#[derive(Debug)]
pub enum Error {
    /// The worker threads could not be started (the system refused a
    /// thread: `ulimit -u`, memory).
    Threads(io::Error),
    /// The report could not be written. A closed pipe (`sdu | head`) shows
    /// here as [`io::ErrorKind::BrokenPipe`]; the binary treats it as
    /// success.
    Write(io::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Threads(e) => {
                // The C library's text, without Rust's "(os error N)".
                let text = e.to_string();
                let text = text.split(" (os error").next().unwrap_or(&text);
                write!(f, "cannot start worker threads: {text}")
            }
            Error::Write(e) => write!(f, "write error: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Threads(e) | Error::Write(e) => Some(e),
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Write(e)
    }
}
