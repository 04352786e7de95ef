//! The progress line on stderr during a scan: entries stat-ed, their
//! Total so far (du's figure, as ncdu and gdu show it), entries per second
//! and a directory recently read.
//!
//! The walker only bumps counters in a [`Progress`]; a display thread
//! reads them every [`TICK`] and draws one line with indicatif. The line
//! appears only after [`DEFAULT_DELAY`], so that short scans print nothing,
//! and is cleared when the display is finished, before the report is
//! written. Messages printed meanwhile go through [`Display::sink`], which
//! lifts the line while they are written.
//!
//! Whether to show progress at all (stderr is a terminal, no
//! `--no-progress`) is [`super::resolve`]'s decision.

use std::ffi::OsString;
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{HumanCount, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use sdu::{Messages, Progress};

/// How often the line is redrawn: often enough to look alive, rarely
/// enough to cost nothing (the walker never waits for the display).
pub(crate) const TICK: Duration = Duration::from_millis(100);

/// Scans shorter than this print no progress at all.
pub(crate) const DEFAULT_DELAY: Duration = Duration::from_millis(300);

/// How long a scan runs before progress appears: [`DEFAULT_DELAY`], or
/// `SDU_PROGRESS_DELAY_MS` (milliseconds) when set, so that tests can see
/// the line on short scans.
pub(crate) fn delay(var: Option<OsString>) -> Duration {
    var.and_then(|v| v.to_str()?.parse().ok())
        .map_or(DEFAULT_DELAY, Duration::from_millis)
}

/// Room kept for the spinner and the counts before the path.
const COUNTS_WIDTH: usize = 48;

/// `bytes` as the table shows them by default (`-h`: `1.2G`).
fn size(bytes: u64) -> String {
    let mut s = String::new();
    sdu::units::Unit::HumanIec.format(bytes, &mut s);
    s
}

/// A running progress display.
pub(crate) struct Display {
    bar: ProgressBar,
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Display {
    /// Starts a display of `progress` on stderr, drawn from `delay` on.
    pub(crate) fn start(progress: Arc<Progress>, delay: Duration) -> Display {
        // The bytes drawn are those read with the entries drawn (see
        // `counts`), not those counted by the time indicatif draws.
        let counted = Arc::new(AtomicU64::new(0));
        let style = ProgressStyle::with_template(
            "{spinner} {human_pos} entries, {counted}, {rate}  {wide_msg}",
        )
        .expect("valid template")
        .with_key("rate", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{}/s", HumanCount(s.per_sec() as u64));
        })
        .with_key("counted", {
            let shown = Arc::clone(&counted);
            move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = w.write_str(&size(shown.load(Ordering::Relaxed)));
            }
        });
        // Hidden until the delay has passed.
        let bar =
            ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden()).with_style(style);
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let thread = {
            let (bar, stop) = (bar.clone(), Arc::clone(&stop));
            std::thread::Builder::new()
                .name("sdu-progress".into())
                .spawn(move || run(&bar, (&progress, &counted), &stop, delay))
                .ok()
        };
        Display { bar, stop, thread }
    }

    /// Stops the display and clears its line. Calling it again does nothing.
    pub(crate) fn finish(&mut self) {
        if let Some(t) = self.thread.take() {
            stop(&self.stop);
            let _ = t.join();
            self.bar.finish_and_clear();
        }
    }

    /// A handle that clears the line from another thread (the one that
    /// handles Ctrl-C), while the display belongs to the report's writer.
    pub(crate) fn clearer(&self) -> Clearer {
        Clearer {
            bar: self.bar.clone(),
            stop: Arc::clone(&self.stop),
        }
    }

    /// A writer to stderr that lifts the progress line while it writes
    /// (for the messages printed during the scan).
    pub(crate) fn sink(&self) -> LiftedStderr {
        LiftedStderr {
            bar: self.bar.clone(),
        }
    }
}

/// The messages of a run, after `program:`: through `display`'s
/// [`Display::sink`] when there is one, else straight to stderr.
pub(crate) fn messages(display: Option<&Display>, program: &'static str) -> Messages {
    match display {
        Some(d) => Messages::named(Box::new(d.sink()), program),
        None => Messages::named(Box::new(io::stderr()), program),
    }
}

impl Drop for Display {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Clears the progress line of a [`Display`] for good, from any thread.
pub(crate) struct Clearer {
    bar: ProgressBar,
    stop: Arc<(Mutex<bool>, Condvar)>,
}

impl Clearer {
    /// Stops the display thread's drawing and clears the line. Harmless
    /// when the display has finished already.
    pub(crate) fn clear(&self) {
        stop(&self.stop);
        self.bar.finish_and_clear();
    }
}

/// Tells the display thread to stop. The thread holds the lock whenever it
/// is not waiting, so once this returns it is between two draws and will
/// not draw again.
fn stop(stop: &(Mutex<bool>, Condvar)) {
    let (lock, cv) = stop;
    *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
    cv.notify_all();
}

/// The entries and bytes counted, as one pair: the walker adds both when a
/// task ends, and a display thread put off between reading one and the
/// other (a loaded machine) would pair the entries of one moment with the
/// bytes of a later one. Read again until the entries stand still across
/// the bytes' read (a few tries; the walker never waits for this).
fn counts(progress: &Progress) -> (u64, u64) {
    let mut entries = progress.entries.load(Ordering::Acquire);
    for _ in 0..8 {
        let bytes = progress.bytes.load(Ordering::Acquire);
        let again = progress.entries.load(Ordering::Acquire);
        if again == entries {
            return (entries, bytes);
        }
        entries = again;
    }
    (entries, progress.bytes.load(Ordering::Acquire))
}

/// The display thread: redraws every [`TICK`] until told to stop.
fn run(
    bar: &ProgressBar,
    (progress, counted): (&Progress, &AtomicU64),
    stop: &(Mutex<bool>, Condvar),
    delay: Duration,
) {
    let start = Instant::now();
    let mut shown = false;
    let (lock, cv) = stop;
    let mut stopped = lock.lock().unwrap_or_else(|e| e.into_inner());
    while !*stopped {
        let (entries, bytes) = counts(progress);
        counted.store(bytes, Ordering::Relaxed);
        bar.set_position(entries);
        if start.elapsed() >= delay {
            if !shown {
                shown = true;
                bar.set_draw_target(ProgressDrawTarget::term_like_with_hz(
                    Box::new(Stderr::default()),
                    10,
                ));
            }
            // try_lock: never make the walker wait for the display.
            if let Ok(path) = progress.current.try_lock() {
                let room = usize::from(Stderr::line_width()).saturating_sub(COUNTS_WIDTH);
                bar.set_message(fit(&path, room));
            }
            bar.tick();
        }
        stopped = cv
            .wait_timeout(stopped, TICK)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

/// Stderr as indicatif's terminal, [`ECHO_ROOM`] columns narrower than it
/// is. Writes are gathered until indicatif flushes, so that each redraw
/// is one write.
#[derive(Debug, Default)]
struct Stderr {
    buf: Mutex<Vec<u8>>,
}

/// Columns left free at the end of the line.
///
/// indicatif pads its line to the width it is given and leaves the cursor
/// there; were that the last column, the `^C` the terminal echoes on
/// Ctrl-C would wrap onto a new line, and clearing the progress line would
/// clear that one instead, leaving the progress above it.
const ECHO_ROOM: u16 = 2;

impl Stderr {
    /// The terminal's size on stderr, (columns, rows): 80x24 when it
    /// cannot be read.
    fn size() -> (u16, u16) {
        rustix::termios::tcgetwinsize(io::stderr())
            .ok()
            .filter(|w| w.ws_col > 0 && w.ws_row > 0)
            .map_or((80, 24), |w| (w.ws_col, w.ws_row))
    }

    /// The width the line may take.
    fn line_width() -> u16 {
        Stderr::size().0.saturating_sub(ECHO_ROOM).max(1)
    }

    fn put(&self, s: &str) -> io::Result<()> {
        self.buf
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(s.as_bytes());
        Ok(())
    }

    /// `ESC [ n X`, the cursor motion `X` by `n`, if `n` is not 0.
    fn motion(&self, n: usize, x: char) -> io::Result<()> {
        if n == 0 {
            return Ok(());
        }
        self.put(&format!("\x1b[{n}{x}"))
    }
}

impl indicatif::TermLike for Stderr {
    fn width(&self) -> u16 {
        Stderr::line_width()
    }

    fn height(&self) -> u16 {
        Stderr::size().1
    }

    fn move_cursor_up(&self, n: usize) -> io::Result<()> {
        self.motion(n, 'A')
    }

    fn move_cursor_down(&self, n: usize) -> io::Result<()> {
        self.motion(n, 'B')
    }

    fn move_cursor_right(&self, n: usize) -> io::Result<()> {
        self.motion(n, 'C')
    }

    fn move_cursor_left(&self, n: usize) -> io::Result<()> {
        self.motion(n, 'D')
    }

    fn write_line(&self, s: &str) -> io::Result<()> {
        self.put(s)?;
        self.put("\n")
    }

    fn write_str(&self, s: &str) -> io::Result<()> {
        self.put(s)
    }

    fn clear_line(&self) -> io::Result<()> {
        self.put("\r\x1b[2K")
    }

    fn flush(&self) -> io::Result<()> {
        let mut buf = self.buf.lock().unwrap_or_else(|e| e.into_inner());
        let mut err = io::stderr().lock();
        let r = err.write_all(&buf).and_then(|()| err.flush());
        buf.clear();
        r
    }
}

/// `path` as the table shows it on a terminal (quoted as ls quotes it,
/// [`sdu::shell_escape`], so that no byte of a name reaches the terminal
/// as a control character), in at most `max` characters, keeping its end
/// (the deepest names say most): `…` followed by the end when it is too
/// long.
fn fit(path: &[u8], max: usize) -> String {
    let mut quoted = Vec::with_capacity(path.len() + 2);
    sdu::shell_escape(path, &mut quoted);
    // Quoting leaves only printable text: valid UTF-8.
    let s = String::from_utf8_lossy(&quoted);
    let n = s.chars().count();
    if n <= max {
        return s.into_owned();
    }
    if max == 0 {
        return String::new();
    }
    let mut out = String::from("…");
    out.extend(s.chars().skip(n - (max - 1)));
    out
}

/// Stderr, with the progress line lifted while writing.
pub(crate) struct LiftedStderr {
    bar: ProgressBar,
}

impl Write for LiftedStderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.bar.suspend(|| io::stderr().write(buf))
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.bar.suspend(|| io::stderr().write_all(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

/// The report's writer: the progress line is cleared before the first
/// byte of the report goes out (stdout and stderr are often one terminal).
pub(crate) struct ClearsProgress<W: Write> {
    display: Option<Display>,
    inner: W,
}

impl<W: Write> ClearsProgress<W> {
    pub(crate) fn new(display: Option<Display>, inner: W) -> Self {
        ClearsProgress { display, inner }
    }

    /// Stops the display, if it still runs, and clears its line.
    pub(crate) fn finish_progress(&mut self) {
        if let Some(mut d) = self.display.take() {
            d.finish();
        }
    }

    /// The writer, with whatever it still buffers.
    pub(crate) fn into_inner(self) -> W {
        self.inner
    }
}

impl<W: Write> Write for ClearsProgress<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.finish_progress();
        self.inner.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.finish_progress();
        self.inner.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.finish_progress();
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_keeps_the_end() {
        assert_eq!(fit(b"/usr/share", 20), "/usr/share");
        assert_eq!(fit(b"/usr/share/doc", 8), "…are/doc");
        assert_eq!(fit(b"/usr", 0), "");
        assert_eq!(fit("/é/ü".as_bytes(), 3), "…/ü");
    }

    #[test]
    fn fit_quotes_what_a_terminal_would_obey() {
        let shown = fit(b"/t/A\x1b]2;PWNED\x07/b", 80);
        assert_eq!(shown, "'/t/A'$'\\033'']2;PWNED'$'\\a''/b'");
        assert!(!fit(b"/t/\x1b[2J\x9b", 5).chars().any(char::is_control));
    }

    #[test]
    fn counted_bytes_read_as_the_table_reads_them() {
        assert_eq!(size(0), "0");
        assert_eq!(size(1536), "1.5K");
        assert_eq!(size(5 << 30), "5.0G");
    }

    #[test]
    fn delay_from_the_environment() {
        assert_eq!(delay(None), DEFAULT_DELAY);
        assert_eq!(delay(Some("0".into())), Duration::ZERO);
        assert_eq!(delay(Some("250".into())), Duration::from_millis(250));
        assert_eq!(delay(Some("soon".into())), DEFAULT_DELAY);
    }
}
