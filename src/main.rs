//! The `sdu` binary: flags in, a [`sdu::Config`] out, exit status back.
//!
//! Run under the name `du` (a symlink `du -> sdu`), it is du: `--du total`
//! unless told otherwise, messages that start with `du:`, du's usage
//! texts and exit status 1 for a usage error. `sdu --du FIGURE` has du's
//! usage texts and status too, with sdu's name.
//!
//! Exit status ([`cli::status::ExitStatus`]): 0 when everything was read,
//! 1 when some entries could not be read (each named on stderr), 2 on a
//! usage or fatal error (1 for a usage error in du's mode, as du), 3 when
//! `--to-free`'s SIZE cannot be freed, 130 when Ctrl-C stopped the
//! browser's deletion.
//!
//! A closed pipe on stdout (`sdu | head -1`) is no error: in sdu's own
//! formats (the table, `--tree`, `--json`, `--to-free`, `--export -`) sdu
//! stops writing and exits with the status the scan gave, quietly. In du's
//! mode (the name `du`, or `--du FIGURE`) it is killed by SIGPIPE, as GNU
//! du is (a shell reports status 141), so that scripts written for du see
//! what they would see with du.

#![forbid(unsafe_code)]

mod browse;
mod cli;

use std::ffi::OsString;
use std::io::{self, BufWriter};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use cli::progress::{self, ClearsProgress, Display};
use cli::resolve::{Env, Note, resolve};
use cli::status::ExitStatus;
use sdu::Config;

/// Allocations from this size up are mapped apart and given back when
/// freed, for the whole run (`sdu_sys::mem`; measured in docs/scale.md,
/// "Snapshots").
const MMAP_THRESHOLD: usize = 128 << 10;

fn main() -> ExitCode {
    sdu_sys::mem::fix_mmap_threshold(MMAP_THRESHOLD);
    let argv: Vec<OsString> = std::env::args_os().collect();
    let program = if invoked_as_du(&argv) { "du" } else { "sdu" };
    run(argv, program).into()
}

/// Whether sdu runs under the name `du`: the file name of `argv[0]`.
fn invoked_as_du(argv: &[OsString]) -> bool {
    argv.first()
        .and_then(|a| Path::new(a).file_name())
        .is_some_and(|n| n == "du")
}

/// Reads the command line `argv`, then does what it asks: print the man
/// page or a completion script, report, or browse. `program` names sdu in
/// messages (`du` under that name).
fn run(argv: Vec<OsString>, program: &'static str) -> ExitStatus {
    let cli = match cli::args::parse_from(argv, program == "du") {
        Ok(c) => c,
        Err(stop) => return stop.report(program),
    };
    if let Some(kind) = cli.generate {
        return cli::man::generate(kind);
    }
    let env = Env::of_process();
    // The config files' defaults, under the command line's flags.
    let cli = match cli::config::with_config(cli, &env) {
        Ok(c) => c,
        Err(e) => return e.report(program, false),
    };
    let view = cli.browse.view();
    let du_texts = cli.du_mode();
    let interactive = cli.interactive;
    let resolved = match resolve(cli, &env) {
        Ok(r) => r,
        Err(e) => return e.report(program, du_texts),
    };
    let noted_errors = print_notes(program, &resolved.notes);
    let delay = progress::delay(env.var("SDU_PROGRESS_DELAY_MS"));
    if interactive {
        let status = browse::run(&browse::config(resolved.config), view, program, delay);
        // A PATH skipped before the scan fails the run, however it ends.
        return if noted_errors {
            ExitStatus::Failure
        } else {
            status
        };
    }
    match report(&resolved.config, resolved.html.as_deref(), program, delay) {
        // A PATH skipped before the scan fails a run that read the rest.
        ExitStatus::Success if noted_errors => ExitStatus::Failure,
        status => status,
    }
}

/// Prints what the command line has sdu say before the scan; whether any
/// of it is an error (a PATH skipped), which fails the run.
fn print_notes(program: &str, notes: &[Note]) -> bool {
    for n in notes {
        let (Note::Warning(m) | Note::Error(m)) = n;
        eprintln!("{program}: {m}");
    }
    notes.iter().any(|n| matches!(n, Note::Error(_)))
}

/// Scans and writes the report `cfg` asks for on stdout (or, `--html
/// FILE`, to FILE), with the progress line from `delay` on when `cfg` has
/// progress shown; the status of the run: 1 when an entry could not be
/// read, 2 when the run failed.
fn report(
    cfg: &Config,
    html: Option<&std::ffi::OsStr>,
    program: &'static str,
    delay: Duration,
) -> ExitStatus {
    // The page's file is created before the scan: a path that cannot be
    // written fails at once, not after a scan of minutes. It replaces FILE
    // only once the page is complete ([`sdu::OutputFile`]).
    let mut page = match html {
        Some(f) if f != "-" => match sdu::OutputFile::create(f.as_encoded_bytes()) {
            Ok(file) => Some(file),
            Err(e) => {
                eprintln!("{program}: {e}");
                return ExitStatus::Fatal;
            }
        },
        _ => None,
    };
    let to_file = page.is_some();
    let sink: Box<dyn io::Write + '_> = match &mut page {
        Some(file) => Box::new(file),
        None => Box::new(io::stdout().lock()),
    };
    let display = show_progress(cfg, delay);
    let msgs = progress::messages(display.as_ref(), program);
    let mut out = ClearsProgress::new(display, BufWriter::with_capacity(64 * 1024, sink));
    let result = sdu::run(cfg, &mut out, &msgs);
    out.finish_progress();
    print_times_out_of_range(cfg, program);
    if to_file {
        // The page complete, it replaces FILE; otherwise FILE stays as it
        // was.
        let done = result.and_then(|o| {
            io::Write::flush(&mut out).map_err(sdu::Error::Write)?;
            Ok(o)
        });
        // After a failure, what is still buffered is dropped, not written.
        let _ = out.into_inner().into_parts();
        let done = done.and_then(|o| {
            page.map_or(Ok(()), sdu::OutputFile::commit)?;
            Ok(o)
        });
        return match done {
            Ok(o) => ExitStatus::of(&o),
            Err(e) => {
                let e = match (e, html) {
                    (sdu::Error::Write(e), Some(f)) => {
                        sdu::OutputFile::write_error(f.as_encoded_bytes(), &e)
                    }
                    (e, _) => e,
                };
                eprintln!("{program}: {e}");
                ExitStatus::Fatal
            }
        };
    }
    match result {
        Ok(o) => ExitStatus::of(&o),
        // `sdu | head` closing the pipe is not an error; du dies of it.
        Err(sdu::Error::Write(e)) if e.kind() == io::ErrorKind::BrokenPipe => {
            if cfg.rules.du {
                cli::signals::die_of_sigpipe();
            }
            ExitStatus::failed_if(msgs.errors() > 0)
        }
        Err(e) => {
            // Drop what is still buffered rather than try to write it again.
            let _ = out.into_inner().into_parts();
            eprintln!("{program}: {e}");
            ExitStatus::Fatal
        }
    }
}

/// The progress display, when `cfg` has progress shown, started with its
/// line cleared on Ctrl-C.
fn show_progress(cfg: &Config, delay: Duration) -> Option<Display> {
    let display = Display::start(cfg.walk.progress.clone()?, delay);
    // Without the handler, Ctrl-C still stops sdu; only the line stays.
    let _ = cli::signals::clear_progress_on_interrupt(display.clearer());
    Some(display)
}

/// du's complaint about each time `--time` could not print.
fn print_times_out_of_range(cfg: &Config, program: &str) {
    let Some(t) = &cfg.report.time else {
        return;
    };
    for secs in t.take_out_of_range() {
        eprintln!(
            "{program}: time {} is out of range",
            sdu::quote(secs.to_string().as_bytes())
        );
    }
}
