//! `sdu -i`: scan with the progress line, then browse the tree full-screen,
//! mark entries and see what deleting the marked set frees.
//!
//! [`app`] is the state (pure, unit-tested), [`view`] draws it with
//! ratatui, [`keys`] maps crossterm's key events to the state's actions,
//! and this module owns the terminal: raw mode and the alternate screen
//! on entry, and their undoing on every way out: `q`, Ctrl-C (a key in
//! raw mode), an error, a panic (a hook that restores first), SIGTERM
//! or SIGINT from elsewhere (the signal thread restores, then dies by the
//! signal) and every other signal that ends a process ([`sdu_sys::tty`]).
//! Ctrl-Z stops it with the terminal put back; `fg` brings it back, drawn
//! whole.

pub(crate) mod app;
mod cause;
pub(crate) mod keys;
mod rounds;
mod shell;
pub(crate) mod view;

use std::io::{self, IsTerminal, Stdout, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen};
use crossterm::{cursor, execute, terminal};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

use sdu::figures::{Figure, Kind};
use sdu::{
    Comparison, Config, Deleted, Diagnostic, Ident, Idents, Messages, NodeId, Scanned, Scanning,
    SortKey, Target, WalkOptions,
};
use sdu_sys::tty;

use crate::cli::progress::{self, Display};
use crate::cli::signals;
use crate::cli::status::ExitStatus;
use app::{App, KeyMode, RowKey, Sort};
use rounds::Rounds;
use view::Look;

/// Scans as `cfg` says, then browses, opening as `view` says. `cfg` must
/// keep every entry and the sets ([`config`]).
pub(crate) fn run(
    cfg: &Config,
    view: crate::cli::browse_flags::View,
    program: &'static str,
    delay: Duration,
) -> ExitStatus {
    if !io::stdout().is_terminal() {
        eprintln!("{program}: --interactive needs a terminal on standard output");
        return ExitStatus::Fatal;
    }
    let browsing = Arc::new(AtomicBool::new(false));
    let mut display = cfg.walk.progress.clone().map(|p| Display::start(p, delay));
    on_interrupt(display.as_ref(), &browsing);
    let msgs = progress::messages(display.as_ref(), program);
    if cfg.compare.as_deref() == Some(b"-") {
        eprintln!(
            "{program}: --compare -: the browser cannot read the old scan from standard input; give its file"
        );
        return ExitStatus::Fatal;
    }
    let loaded = load(cfg, &cfg.walk, &msgs);
    if let Some(d) = &mut display {
        d.finish();
    }
    let (scanned, comparison) = match loaded.and_then(|s| {
        let c = compared(cfg, &s)?;
        Ok((s, c))
    }) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{program}: {e}");
            return ExitStatus::Fatal;
        }
    };
    if scanned
        .tree
        .roots()
        .iter()
        .all(|&r| scanned.tree.is_hidden(r))
    {
        // Every PATH failed: the messages say why.
        return ExitStatus::Failure;
    }
    let (first, sort, look) = opening_view(cfg);
    let mut term = match open_terminal(program, &browsing) {
        Ok(t) => t,
        Err(status) => return status,
    };
    // Keys typed during the scan are not for the browser.
    flush_input();
    let mut rounds = Rounds::new(cfg, program, scanned, comparison);
    rounds.opening = app::Settings::opening(view);
    let result = rounds.run(&mut term, first, sort, look);
    restore();
    browsing.store(false, Ordering::SeqCst);
    rounds.later.print();
    // The deletions' outcome, in full, whatever the screen showed.
    for l in &rounds.report {
        eprintln!("{program}: {l}");
    }
    if let End::Terminal(e) = result {
        eprintln!("{program}: the terminal: {e}");
        return ExitStatus::Fatal;
    }
    if rounds.interrupted {
        return ExitStatus::Interrupted;
    }
    ExitStatus::failed_if(rounds.failed || msgs.errors() + rounds.rescan_msgs.errors() > 0)
}

/// SIGINT or SIGTERM from elsewhere: the terminal put back while
/// browsing, the progress line cleared while scanning, then death by the
/// signal. Without the handler a signal still stops sdu; only the screen
/// stays as it was.
fn on_interrupt(display: Option<&Display>, browsing: &Arc<AtomicBool>) {
    let clearer = display.map(Display::clearer);
    let browsing = Arc::clone(browsing);
    let _ = signals::on_interrupt(move || {
        if browsing.load(Ordering::SeqCst) {
            restore();
        } else if let Some(c) = clearer {
            c.clear();
        }
    });
}

/// `--compare OLD`: each scan browsed is compared with OLD, read again.
fn compared(cfg: &Config, s: &Scanned) -> Result<Option<Comparison>, sdu::Error> {
    let Some(old) = &cfg.compare else {
        return Ok(None);
    };
    let how = Scanning {
        walk: cfg.walk.clone(),
        rules: cfg.rules,
        sets: false,
    };
    let old = sdu::read_old(old, &how)?;
    Ok(Some(sdu::compare(s, old, None)))
}

/// What the browser opens with: the first column, the order of the rows
/// (by the first column unless `--sort` said), and the look of the
/// figures.
fn opening_view(cfg: &Config) -> (Figure, Sort, Look) {
    let first = cfg.report.columns.first().copied().unwrap_or(Figure::Total);
    let sort = Sort {
        key: match cfg.report.sort {
            Some(SortKey::Name) => RowKey::Name,
            Some(SortKey::Size(f)) => RowKey::Figure(f),
            None => RowKey::Figure(first),
        },
        reverse: false,
    };
    let look = Look {
        unit: cfg.report.unit,
        color: cfg.report.color,
        ascii: cfg.report.ascii_marks,
    };
    (first, sort, look)
}

/// The terminal made the browser's ([`enter`]), with every way out set
/// to put it back first: a panic, a fatal signal, and `browsing` for
/// SIGINT and SIGTERM.
fn open_terminal(program: &str, browsing: &AtomicBool) -> Result<Term, ExitStatus> {
    install_panic_hook();
    if let Err(e) = tty::install(crate::cli::signals::inherited_ignored) {
        eprintln!("{program}: the terminal: {e}");
        return Err(ExitStatus::Fatal);
    }
    browsing.store(true, Ordering::SeqCst);
    match enter() {
        Ok(t) => Ok(t),
        Err(e) => {
            restore();
            eprintln!("{program}: the terminal: {e}");
            Err(ExitStatus::Fatal)
        }
    }
}

/// Runs the deletion on a thread of its own while this one reads the keys:
/// Ctrl-C asks it to stop between two entries, every other key is dropped,
/// and so is anything typed by the time it ends.
fn deleting(term: &mut Term, targets: &[Target]) -> io::Result<Deleted> {
    let stop = AtomicBool::new(false);
    let done = std::thread::scope(|s| -> io::Result<Deleted> {
        let worker = s.spawn(|| sdu::delete(targets, &stop));
        message(term, "Deleting…  (Ctrl-C stops it between two entries)")?;
        while !worker.is_finished() {
            if !event::poll(Duration::from_millis(50))? {
                continue;
            }
            if tty::take_resumed() {
                // Continued after a stop (SIGTSTP from elsewhere).
                reenter(term)?;
                let stopping = stop.load(Ordering::SeqCst);
                message(
                    term,
                    if stopping {
                        "Stopping after the entry being removed…"
                    } else {
                        "Deleting…  (Ctrl-C stops it between two entries)"
                    },
                )?;
            }
            if let Event::Key(k) = event::read()?
                && k.kind != KeyEventKind::Release
                && k.modifiers.contains(KeyModifiers::CONTROL)
                && matches!(k.code, KeyCode::Char('c' | 'C'))
                && !stop.swap(true, Ordering::SeqCst)
            {
                message(term, "Stopping after the entry being removed…")?;
            }
        }
        Ok(worker
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p)))
    })?;
    flush_input();
    Ok(done)
}

/// The first root of `new` that is not the directory of the same path in
/// `old` (both scans' identities known): a root replaced between two scans
/// of one browsing is not browsed again.
fn replaced_roots(old: &Scanned, new: &Scanned) -> Option<Vec<u8>> {
    let (old_ids, new_ids) = (old.idents.as_ref()?, new.idents.as_ref()?);
    let (old, new) = (&old.tree, &new.tree);
    new.roots().iter().find_map(|&r| {
        let name = new.name(r);
        let before = old.roots().iter().find(|&&o| old.name(o) == name)?;
        (old_ids.get(*before) != new_ids.get(r)).then(|| name.to_vec())
    })
}

/// Discards what was typed and not read yet: pending terminal input
/// (`tcflush`) and the events crossterm has read ahead.
fn flush_input() {
    let _ = rustix::termios::tcflush(io::stdin(), rustix::termios::QueueSelector::IFlush);
    while event::poll(Duration::ZERO).unwrap_or(false) {
        let _ = event::read();
    }
}

/// How browsing ended.
enum End {
    /// `q` or Ctrl-C.
    Quit,
    /// A deletion left nothing to browse, or its new scan failed.
    Done,
    /// The terminal failed.
    Terminal(io::Error),
}

/// The scan to browse: walked (by `walk`), or read from `--import`'s
/// file, with its sets and (walked) identities. Reports the files whose
/// extents could not be read.
fn load(cfg: &Config, walk: &WalkOptions, msgs: &Messages) -> Result<Scanned, sdu::Error> {
    let how = Scanning {
        walk: walk.clone(),
        rules: cfg.rules,
        sets: true,
    };
    let scanned = sdu::scan_to_tree(cfg, &how, msgs)?;
    if scanned.counters.unverified_files > 0 {
        msgs.report(Diagnostic::Unverified {
            files: scanned.counters.unverified_files,
            bytes: scanned.counters.unverified_bytes,
        });
    }
    Ok(scanned)
}

/// Entry `id` as [`sdu::delete`] takes it, with what the scan saw at
/// each level (none for a level the scan recorded nothing of, which
/// [`sdu::delete`] refuses).
fn target(app: &App<'_>, idents: Option<&Idents>, id: NodeId) -> Target {
    let mut names = app.names(id);
    let root = names.remove(0);
    let tree = app.tree();
    let chain = chain(tree, idents, id);
    // What the scan saw below it: what deleting it meets beyond that was
    // added since, and is said apart.
    let mut inside = Vec::new();
    let mut stack = vec![id];
    while let Some(x) = stack.pop() {
        for &c in tree.children(x) {
            if let Some(i) = idents.and_then(|i| i.get(c)) {
                inside.push((i.dev, i.ino));
            }
            stack.push(c);
        }
    }
    inside.sort_unstable();
    inside.dedup();
    Target {
        root,
        names,
        dir: tree.kind(id) == Kind::Dir,
        idents: chain,
        inside,
    }
}

/// What the scan saw at each level from `id`'s root down to `id` (a
/// level it recorded nothing of left out: the chain is then short).
fn chain(tree: &sdu::Tree, idents: Option<&Idents>, id: NodeId) -> Vec<Ident> {
    let mut chain: Vec<Ident> = Vec::new();
    let mut n = Some(id);
    while let Some(x) = n.filter(|&x| x != NodeId::TOP) {
        if let Some(i) = idents.and_then(|i| i.get(x)) {
            chain.push(i);
        }
        n = tree.parent(x);
    }
    chain.reverse();
    chain
}

/// What a deletion did, for the notice.
fn outcome_lines(d: &Deleted, asked: usize, predicted: sdu::Frees, look: Look) -> Vec<String> {
    let size = |b: u64| {
        let mut s = String::new();
        look.unit.format(b, &mut s);
        s
    };
    let mut v = vec![format!(
        "Deleted {} of {asked} {}{}{}.",
        d.targets,
        if asked == 1 { "entry" } else { "entries" },
        match d.subvolumes {
            0 => String::new(),
            1 => ", 1 as a Btrfs subvolume".into(),
            n => format!(", {n} as Btrfs subvolumes"),
        },
        match d.gone {
            0 => String::new(),
            n => format!(
                " ({n} already gone: not where the scan saw {})",
                if n == 1 { "it" } else { "them" }
            ),
        }
    )];
    if d.unscanned > 0 {
        v.push(format!(
            "Also deleted: {}, {}, not in the scan (added since).",
            view::entries(usize::try_from(d.unscanned).unwrap_or(usize::MAX)),
            size(d.unscanned_bytes)
        ));
    }
    if let Some(f) = &d.failed {
        v.push(format!("Stopped at the first error: {f}"));
        v.push(format!(
            "Before it, {} {} removed.",
            d.entries,
            if d.entries == 1 {
                "file or directory was"
            } else {
                "files and directories were"
            }
        ));
    }
    v.push(format!(
        "sdu predicted: frees {}{}",
        predicted.bound.qualifier(),
        size(predicted.bytes)
    ));
    let reported = if d.reported < 0 {
        format!("-{}", size(u64::try_from(-d.reported).unwrap_or(u64::MAX)))
    } else {
        size(u64::try_from(d.reported).unwrap_or(u64::MAX))
    };
    v.push(format!(
        "The filesystem reports: {reported} freed (statfs before and after){}",
        match (d.settled, d.subvolumes) {
            (true, _) => "",
            (false, 0) => "; it kept changing (other writers?)",
            (false, _) => "; a deleted subvolume may still be being cleaned: it may grow",
        }
    ));
    v
}

/// Diagnostics kept while the screen is the browser's, printed after.
#[derive(Clone, Default)]
struct HeldMessages(Arc<Mutex<Vec<u8>>>);

impl HeldMessages {
    fn print(&self) {
        let text = std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()));
        let _ = io::stderr().write_all(&text);
    }
}

impl Write for HeldMessages {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A screen with one line in the middle, while sdu works.
fn message(t: &mut Term, text: &str) -> io::Result<()> {
    t.draw(|f| {
        let a = f.area();
        let r = ratatui::layout::Rect {
            y: a.y + a.height / 2,
            height: 1.min(a.height),
            ..a
        };
        f.render_widget(ratatui::widgets::Clear, a);
        f.render_widget(
            ratatui::widgets::Paragraph::new(text).alignment(ratatui::layout::Alignment::Center),
            r,
        );
    })?;
    Ok(())
}

/// A stat of `path` (not followed) now, for the entry info; given up
/// after half a second (a slow or hung filesystem: the thread is left to
/// finish alone).
/// The entry's name is looked up in its parent directory, opened by its
/// path (`O_PATH`), and never followed; a root by its path as given.
fn stat_now(parent: Option<Vec<u8>>, name: Vec<u8>) -> Result<app::Now, String> {
    use rustix::fs::{AtFlags, CWD, Mode, OFlags};
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let st = match parent {
            Some(p) => rustix::fs::open(
                &p[..],
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .and_then(|fd| rustix::fs::statat(&fd, &name[..], AtFlags::SYMLINK_NOFOLLOW)),
            None => rustix::fs::statat(CWD, &name[..], AtFlags::SYMLINK_NOFOLLOW),
        };
        let _ = tx.send(st);
    });
    match rx.recv_timeout(Duration::from_millis(500)) {
        // The widths of st_dev and st_nlink differ between architectures.
        #[allow(clippy::useless_conversion)]
        Ok(Ok(st)) => Ok(app::Now {
            dev: u64::from(st.st_dev),
            ino: st.st_ino,
            nlink: u64::from(st.st_nlink),
            mtime: sdu::figures::Timestamp {
                secs: st.st_mtime,
                nanos: u32::try_from(st.st_mtime_nsec).unwrap_or(0),
            },
        }),
        Ok(Err(e)) => Err(format!("cannot stat it now: {}", io::Error::from(e))),
        Err(_) => Err("no answer from its filesystem within 0.5 s".into()),
    }
}

/// The flags' [`Config`] made fit for browsing: every entry kept (files
/// too), every entry's identity, for deleting, and the newest modification
/// time under each (the time column), unless `--time` asked for another;
/// a saved scan's times are what its `--export` recorded. A cold walk of
/// Btrfs trees takes a thread per CPU, to hold less (docs/decisions.md,
/// "Threads of a cold walk").
pub(crate) fn config(mut cfg: Config) -> Config {
    if cfg.import.is_none() {
        cfg.walk
            .time
            .get_or_insert(sdu::figures::TimeField::Modification);
    }
    cfg.walk.all = true;
    cfg.walk.skip_extents = false;
    cfg.walk.identities = true;
    cfg.walk.subvolumes = true;
    cfg.walk.cold_search_per_cpu = true;
    cfg
}

type Term = Terminal<CrosstermBackend<Stdout>>;

/// Raw mode, the alternate screen, no cursor.
fn enter() -> io::Result<Term> {
    terminal::enable_raw_mode()?;
    tty::raw(true);
    execute!(io::stdout(), EnterAlternateScreen, cursor::Hide)?;
    Terminal::new(CrosstermBackend::new(io::stdout()))
}

/// [`enter`] again, after a stop put the terminal back behind
/// crossterm's back (its raw mode is reset first, so that enabling it
/// sets it again), and a full redraw.
fn reenter(t: &mut Term) -> io::Result<()> {
    terminal::disable_raw_mode()?;
    terminal::enable_raw_mode()?;
    tty::raw(true);
    execute!(io::stdout(), EnterAlternateScreen, cursor::Hide)?;
    t.clear()
}

/// Undoes [`enter`]; harmless when it was not done, and done twice.
fn restore() {
    tty::raw(false);
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
fn browse(t: &mut Term, app: &mut App<'_>, look: Look, idents: Option<&Idents>) -> io::Result<()> {
    let mut shown = KeyMode::Browse;
    loop {
        // A confirmation or a notice takes only keys typed once it is on
        // the screen: what was typed before is dropped just before it is
        // drawn (after, a key typed by someone who already sees it could
        // be lost).
        let mode = app.mode();
        if mode != shown && matches!(mode, KeyMode::Confirm | KeyMode::Notice) {
            flush_input();
        }
        shown = mode;
        if tty::take_resumed() {
            // Continued after a stop: the terminal is the shell's again.
            reenter(t)?;
        }
        t.draw(|f| view::draw(f, app, look))?;
        if app.quit {
            return Ok(());
        }
        match event::read()? {
            // Raw mode: Ctrl-Z is a key, and stops the browser as it
            // stops any program in cooked mode.
            Event::Key(k)
                if k.kind != KeyEventKind::Release
                    && k.modifiers.contains(KeyModifiers::CONTROL)
                    && matches!(k.code, KeyCode::Char('z' | 'Z')) =>
            {
                tty::suspend();
            }
            Event::Key(k) if k.kind != KeyEventKind::Release => {
                if let Some(a) = keys::action(k, app.mode(), app.settings().keys) {
                    app.apply(a);
                }
                // The entry info asked for: a stat of the entry now.
                if let Some(id) = app.info.as_ref().filter(|i| i.now.is_none()).map(|i| i.id) {
                    let tree = app.tree();
                    let now = match tree.parent(id).filter(|&p| p != NodeId::TOP) {
                        Some(p) => stat_now(Some(app.path(p)), tree.name(id).to_vec()),
                        None => stat_now(None, app.path(id)),
                    };
                    if let Some(i) = &mut app.info {
                        i.ident = idents.and_then(|x| x.get(id));
                        i.now = Some(now);
                    }
                }
                if app.request.is_some() {
                    return Ok(());
                }
            }
            // A resize redraws.
            _ => {}
        }
    }
}
