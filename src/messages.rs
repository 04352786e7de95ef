//! Messages on stderr, and the count of entries that could not be read.
//!
//! Per-entry failures are printed as `sdu: ...` and counted; they never stop
//! the walk. The count decides the exit status (1 when anything failed).

use std::io::{self, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where messages go and how many errors were reported.
pub struct Messages {
    sink: Mutex<Box<dyn Write + Send>>,
    errors: AtomicU64,
}

impl Default for Messages {
    fn default() -> Self {
        Messages::new(Box::new(io::stderr()))
    }
}

impl Messages {
    /// Messages written to `sink` (stderr in the binary, a buffer in tests).
    pub fn new(sink: Box<dyn Write + Send>) -> Self {
        Messages {
            sink: Mutex::new(sink),
            errors: AtomicU64::new(0),
        }
    }

    /// Reports an entry that could not be read and counts it.
    pub fn error(&self, msg: std::fmt::Arguments<'_>) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        self.print(msg);
    }

    /// Prints a warning that does not change the exit status.
    pub fn warn(&self, msg: std::fmt::Arguments<'_>) {
        self.print(msg);
    }

    /// Writes `text` as it is (for `--stats`).
    pub fn raw(&self, text: &str) {
        let mut sink = self.sink.lock().unwrap_or_else(|e| e.into_inner());
        let _ = sink.write_all(text.as_bytes());
        let _ = sink.flush();
    }

    fn print(&self, msg: std::fmt::Arguments<'_>) {
        // One write per line, so that lines from several threads never mix.
        let line = format!("sdu: {msg}\n");
        let mut sink = self.sink.lock().unwrap_or_else(|e| e.into_inner());
        let _ = sink.write_all(line.as_bytes());
        let _ = sink.flush();
    }

    /// How many errors were reported so far.
    pub fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }
}

/// The text of an errno as the C library prints it ("Permission denied").
pub fn strerror(e: rustix::io::Errno) -> String {
    let s = io::Error::from_raw_os_error(e.raw_os_error()).to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}
