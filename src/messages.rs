//! Messages on stderr, and the count of entries that could not be read.
//!
//! Every [`Diagnostic`] is printed as `PROGRAM: ...` on one line (`sdu:`,
//! or `du:` when sdu runs as du); errors are
//! counted, and the count decides the exit status (1 when anything could
//! not be read). They never stop the walk. The unit tests also keep the
//! diagnostics (`Messages::keeping`) to read them after the run. The
//! errors about an entry are always kept, as its path and the message
//! printed, for the JSON document's `errors` list.

use std::io::{self, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::Diagnostic;

/// Where messages go and how many errors were reported.
pub struct Messages {
    sink: Mutex<Box<dyn Write + Send>>,
    /// The program name that starts every line.
    program: &'static str,
    errors: AtomicU64,
    /// The errors about an entry: its path and the message printed.
    entry_errors: Mutex<Vec<(Vec<u8>, String)>>,
    /// The diagnostics reported, when kept.
    kept: Option<Mutex<Vec<Diagnostic>>>,
}

impl Default for Messages {
    fn default() -> Self {
        Messages::new(Box::new(io::stderr()))
    }
}

impl Messages {
    /// Messages written to `sink` (stderr in the binary, a buffer in tests).
    pub(crate) fn new(sink: Box<dyn Write + Send>) -> Self {
        Messages::named(sink, "sdu")
    }

    /// Messages whose lines start with `program:` (`du` when sdu runs under
    /// that name).
    pub fn named(sink: Box<dyn Write + Send>, program: &'static str) -> Self {
        Messages {
            sink: Mutex::new(sink),
            program,
            errors: AtomicU64::new(0),
            entry_errors: Mutex::new(Vec::new()),
            kept: None,
        }
    }

    /// Like [`Messages::new`], and every diagnostic is also kept for
    /// [`Messages::diagnostics`].
    #[cfg(test)]
    pub(crate) fn keeping(sink: Box<dyn Write + Send>) -> Self {
        Messages {
            kept: Some(Mutex::new(Vec::new())),
            ..Messages::new(sink)
        }
    }

    /// Reports a diagnostic: prints it, and counts it when it is an error.
    pub fn report(&self, d: Diagnostic) {
        if d.is_error() {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
        let text = d.to_string();
        if d.is_error()
            && let Some(path) = d.path()
        {
            self.entry_errors
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((path.to_vec(), text.clone()));
        }
        // One write per line, so that lines from several threads never mix.
        let line = format!("{}: {text}\n", self.program);
        {
            let mut sink = self.sink.lock().unwrap_or_else(|e| e.into_inner());
            let _ = sink.write_all(line.as_bytes());
            let _ = sink.flush();
        }
        if let Some(k) = &self.kept {
            k.lock().unwrap_or_else(|e| e.into_inner()).push(d);
        }
    }

    /// Writes `text` as it is (for `--stats`).
    pub(crate) fn raw(&self, text: &str) {
        let mut sink = self.sink.lock().unwrap_or_else(|e| e.into_inner());
        let _ = sink.write_all(text.as_bytes());
        let _ = sink.flush();
    }

    /// How many errors were reported so far.
    pub fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }

    /// The errors about an entry reported so far (those [`Self::errors`]
    /// counts that name one), as its path and the message printed after
    /// the program name; sorted by path, then message, so that a parallel
    /// walk lists them in one order.
    pub(crate) fn entry_errors(&self) -> Vec<(Vec<u8>, String)> {
        let mut v = self
            .entry_errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        v.sort();
        v
    }

    /// The diagnostics reported so far, in order, when kept
    /// ([`Messages::keeping`]); empty otherwise.
    #[cfg(test)]
    pub(crate) fn diagnostics(&self) -> Vec<Diagnostic> {
        self.kept.as_ref().map_or_else(Vec::new, |k| {
            k.lock().unwrap_or_else(|e| e.into_inner()).clone()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::io::Errno;
    use std::sync::Arc;

    /// A sink tests can read back.
    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);

    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn errors_are_counted_warnings_are_not_and_both_are_printed() {
        let buf = Buf::default();
        let m = Messages::keeping(Box::new(buf.clone()));
        m.report(Diagnostic::CannotAccess {
            path: b"a b".to_vec(),
            errno: Errno::ACCESS,
        });
        m.report(Diagnostic::DirectoryCycle {
            path: b"loop".to_vec(),
        });
        m.report(Diagnostic::ReplacedDir {
            path: b"d".to_vec(),
        });
        assert_eq!(m.errors(), 2);
        assert_eq!(m.diagnostics().len(), 3);
        assert_eq!(
            m.entry_errors(),
            [
                (
                    b"a b".to_vec(),
                    "cannot access 'a b': Permission denied".into()
                ),
                (
                    b"d".to_vec(),
                    "cannot read directory 'd': replaced during the scan".into()
                ),
            ]
        );
        assert_eq!(
            String::from_utf8(buf.0.lock().unwrap().clone()).unwrap(),
            "sdu: cannot access 'a b': Permission denied\n\
             sdu: 'loop': directory cycle (a symlink to an ancestor), not followed\n\
             sdu: cannot read directory 'd': replaced during the scan\n"
        );
        assert!(
            Messages::new(Box::new(buf.clone()))
                .diagnostics()
                .is_empty()
        );
        let du = Messages::named(Box::new(buf.clone()), "du");
        buf.0.lock().unwrap().clear();
        du.report(Diagnostic::ReplacedDir {
            path: b"d".to_vec(),
        });
        assert_eq!(
            String::from_utf8(buf.0.lock().unwrap().clone()).unwrap(),
            "du: cannot read directory 'd': replaced during the scan\n"
        );
    }
}
