//! A command line that makes no sense, as sdu and du word it: the
//! messages, then the pointer to `--help`, and the exit status that goes
//! with them.

use std::fmt;
use std::io::{self, Write};

use super::status::ExitStatus;

/// A command line that makes no sense: each line is printed after the
/// program name (`sdu: `, `du: `; a line may hold a newline, after which
/// the text goes on unprefixed, as du's do), then, when `try_help`, the
/// pointer to `--help`. sdu exits 2, du 1.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct UsageError {
    /// The messages, without the program name.
    pub(crate) lines: Vec<String>,
    /// Whether du points to `--help` after them (sdu always does).
    pub(crate) try_help: bool,
}

impl UsageError {
    /// One line, and the pointer to `--help`.
    pub(crate) fn usage(line: impl Into<String>) -> UsageError {
        UsageError {
            lines: vec![line.into()],
            try_help: true,
        }
    }

    /// One line, without the pointer (du's `die` and `xstrtol_fatal`).
    pub(crate) fn fatal(line: impl Into<String>) -> UsageError {
        UsageError {
            lines: vec![line.into()],
            try_help: false,
        }
    }

    /// Prints the error on stderr as `program: line`, then the pointer to
    /// `--help` (always in sdu's own mode; in du's, where du prints it),
    /// and gives the status to end with: du's 1 when `du`, else 2.
    pub(crate) fn report(&self, program: &str, du: bool) -> ExitStatus {
        let mut s = String::new();
        for line in &self.lines {
            s.push_str(&format!("{program}: {line}\n"));
        }
        if self.try_help || !du {
            s.push_str(&format!("Try '{program} --help' for more information.\n"));
        }
        let _ = io::stderr().write_all(s.as_bytes());
        ExitStatus::usage(du)
    }
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.lines.join("\n"))
    }
}

impl From<String> for UsageError {
    fn from(s: String) -> Self {
        UsageError::usage(s)
    }
}
