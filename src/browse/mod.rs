//! `sdu -i`: scan with the progress line, then browse the tree full-screen,
//! mark entries and see what deleting the marked set frees.
//!
//! [`app`] is the state (pure, unit-tested), [`view`] draws it with
//! ratatui, [`keys`] maps crossterm's key events to the state's actions,
//! and this module owns the terminal: raw mode and the alternate screen
//! on entry, and their undoing on every way out: `q`, Ctrl-C (a key in
//! raw mode), an error, a panic (a hook that restores first) and SIGTERM
//! or SIGINT from elsewhere (the signal thread restores, then dies by the
//! signal).

pub mod app;
pub mod keys;
pub mod view;

use std::io::{self, IsTerminal, Stdout};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crossterm::event::{self, Event, KeyEventKind};
use crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen};
use crossterm::{cursor, execute, terminal};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

use sdu::figures::Figure;
use sdu::report::SortKey as ReportSort;
use sdu::{Config, Diagnostic, Messages};

use crate::cli::progress::Display;
use crate::cli::signals;
use app::{App, Sort, SortKey};
use view::Look;

/// Scans as `cfg` says, then browses. `cfg` must keep every entry and the
/// sets ([`config`]).
pub fn run(cfg: &Config, program: &'static str, delay: Duration) -> ExitCode {
    if !io::stdout().is_terminal() {
        eprintln!("{program}: --interactive needs a terminal on standard output");
        return ExitCode::from(2);
    }
    let browsing = Arc::new(AtomicBool::new(false));
    let mut display = cfg.walk.progress.clone().map(|p| Display::start(p, delay));
    {
        let clearer = display.as_ref().map(Display::clearer);
        let browsing = Arc::clone(&browsing);
        // Without the handler a signal still stops sdu; only the screen
        // stays as it was.
        let _ = signals::on_interrupt(move || {
            if browsing.load(Ordering::SeqCst) {
                restore();
            } else if let Some(c) = clearer {
                c.clear();
            }
        });
    }
    let msgs = match &display {
        Some(d) => Messages::named(Box::new(d.sink()), program),
        None => Messages::named(Box::new(io::stderr()), program),
    };
    let scan = sdu::scan(&cfg.walk, cfg.rules, &msgs);
    if let Some(d) = &mut display {
        d.finish();
    }
    let scan = match scan {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{program}: {e}");
            return ExitCode::from(2);
        }
    };
    if scan.counters.unverified_files > 0 {
        msgs.report(Diagnostic::Unverified {
            files: scan.counters.unverified_files,
            bytes: scan.counters.unverified_bytes,
        });
    }
    if scan.tree.roots().iter().all(|&r| scan.tree.is_hidden(r)) {
        // Every PATH failed: the messages say why.
        return ExitCode::from(1);
    }
    let first = cfg.report.columns.first().copied().unwrap_or(Figure::Total);
    let sort = Sort {
        key: match cfg.report.sort {
            Some(ReportSort::Name) => SortKey::Name,
            Some(ReportSort::Size(f)) => SortKey::Figure(f),
            None => SortKey::Figure(first),
        },
        reverse: false,
    };
    let mut app = App::new(&scan.tree, first, sort);
    let look = Look {
        unit: cfg.report.unit,
        color: cfg.report.color,
    };
    install_panic_hook();
    browsing.store(true, Ordering::SeqCst);
    let result = enter().and_then(|mut t| browse(&mut t, &mut app, look));
    restore();
    browsing.store(false, Ordering::SeqCst);
    if let Err(e) = result {
        eprintln!("{program}: the terminal: {e}");
        return ExitCode::from(2);
    }
    ExitCode::from(u8::from(msgs.errors() > 0))
}

/// The flags' [`Config`] made fit for browsing: every entry kept (files
/// too) and what [`sdu::tree::Tree::frees`] needs.
pub fn config(mut cfg: Config) -> Config {
    cfg.walk.all = true;
    cfg.walk.skip_extents = false;
    cfg.rules.keep_sets = true;
    cfg
}

type Term = Terminal<CrosstermBackend<Stdout>>;

/// Raw mode, the alternate screen, no cursor.
fn enter() -> io::Result<Term> {
    terminal::enable_raw_mode()?;
    execute!(io::stdout(), EnterAlternateScreen, cursor::Hide)?;
    Terminal::new(CrosstermBackend::new(io::stdout()))
}

/// Undoes [`enter`]; harmless when it was not done, and done twice.
fn restore() {
    let _ = execute!(io::stdout(), LeaveAlternateScreen, cursor::Show);
    let _ = terminal::disable_raw_mode();
}

/// A panic restores the terminal before its message is printed (the
/// release profile aborts after the hook).
fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
}

/// The event loop: draw, read a key, apply it, until quit.
fn browse(t: &mut Term, app: &mut App<'_>, look: Look) -> io::Result<()> {
    loop {
        t.draw(|f| view::draw(f, app, look))?;
        if app.quit {
            return Ok(());
        }
        match event::read()? {
            Event::Key(k) if k.kind != KeyEventKind::Release => {
                if let Some(a) = keys::action(k, app.help) {
                    app.apply(a);
                }
            }
            // A resize redraws.
            _ => {}
        }
    }
}
