//! The `sdu` binary: flags in, a [`sdu::Config`] out, exit status back.
//!
//! Run under the name `du` (a symlink `du -> sdu`), it is du: `--du total`
//! unless told otherwise, messages that start with `du:`, du's usage
//! texts and exit status 1 for a usage error. `sdu --du FIGURE` has du's
//! usage texts and status too, with sdu's name.
//!
//! Exit status: 0 when everything was read, 1 when some entries could not
//! be read (each named on stderr), 2 on a usage or fatal error (1 in du's
//! mode, as du).
//!
//! A closed pipe on stdout (`sdu | head -1`) is no error: in sdu's own
//! formats (the table, `--tree`, `--json`, `--to-free`, `--export -`) sdu
//! stops writing and exits with the status the scan gave, quietly. In du's
//! mode (the name `du`, or `--du FIGURE`) it is killed by SIGPIPE, as GNU
//! du is (a shell reports status 141), so that scripts written for du see
//! what they would see with du.

mod browse;
mod cli;

use std::ffi::OsString;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

use cli::args::ParseError;
use cli::progress::{self, ClearsProgress, Display};
use cli::resolve::{Env, Note, UsageError, resolve};
use cli::status::ExitStatus;
use sdu::Messages;

/// Prints a usage error as `program: line`, then the pointer to --help
/// (always in sdu's own mode; in du's, where du prints it).
fn print_usage_error(program: &str, e: &UsageError, du: bool) {
    let mut s = String::new();
    for line in &e.lines {
        s.push_str(&format!("{program}: {line}\n"));
    }
    if e.try_help || !du {
        s.push_str(&format!("Try '{program} --help' for more information.\n"));
    }
    let _ = io::stderr().write_all(s.as_bytes());
}

fn main() -> ExitCode {
    let argv: Vec<OsString> = std::env::args_os().collect();
    let as_du = argv
        .first()
        .and_then(|a| Path::new(a).file_name())
        .is_some_and(|n| n == "du");
    let program = if as_du { "du" } else { "sdu" };
    // `--du FIGURE` asks for du's usage texts too.
    let du_flag = argv.iter().skip(1).any(|a| {
        let a = a.as_encoded_bytes();
        a == b"--du" || a.starts_with(b"--du=")
    });
    let du_texts = as_du || du_flag;
    let args = match cli::args::parse_from(argv.iter().cloned(), as_du) {
        Ok(a) => a,
        Err(ParseError::Getopt(lines)) if du_texts => {
            print_usage_error(
                program,
                &UsageError {
                    lines,
                    try_help: true,
                },
                true,
            );
            return ExitStatus::usage(true).into();
        }
        // sdu's own mode: clap's words for the command line as given.
        Err(ParseError::Getopt(_)) => match cli::args::clap_error(&argv) {
            Some(e) => e.exit(),
            None => return ExitStatus::usage(false).into(),
        },
        Err(ParseError::Clap(e)) if du_texts && e.use_stderr() => {
            let line = e.to_string();
            let line = line
                .lines()
                .next()
                .unwrap_or("")
                .trim_start_matches("error: ");
            print_usage_error(
                program,
                &UsageError {
                    lines: vec![line.to_owned()],
                    try_help: true,
                },
                true,
            );
            return ExitStatus::usage(true).into();
        }
        Err(ParseError::Clap(e)) => e.exit(),
    };
    if let Some(kind) = args.generate {
        return cli::man::generate(kind).into();
    }
    let env = Env::of_process();
    let interactive = args.interactive;
    let resolved = match resolve(args, &env) {
        Ok(c) => c,
        Err(e) => {
            print_usage_error(program, &e, du_texts);
            return ExitStatus::usage(du_texts).into();
        }
    };
    let cfg = resolved.config;
    let mut noted_errors = false;
    for n in &resolved.notes {
        let (Note::Warning(m) | Note::Error(m)) = n;
        noted_errors |= matches!(n, Note::Error(_));
        eprintln!("{program}: {m}");
    }
    let delay = progress::delay(env.var("SDU_PROGRESS_DELAY_MS"));
    if interactive {
        let status = browse::run(&browse::config(cfg), program, delay);
        return if noted_errors {
            ExitStatus::Failure
        } else {
            status
        }
        .into();
    }
    let display = cfg.walk.progress.clone().map(|p| Display::start(p, delay));
    if let Some(d) = &display {
        // Without the handler, Ctrl-C still stops sdu; only the line stays.
        let _ = cli::signals::clear_progress_on_interrupt(d.clearer());
    }
    let msgs = match &display {
        Some(d) => Messages::named(Box::new(d.sink()), program),
        None => Messages::named(Box::new(io::stderr()), program),
    };
    let stdout = io::stdout();
    let mut out = ClearsProgress::new(display, BufWriter::with_capacity(64 * 1024, stdout.lock()));
    let result = sdu::run(&cfg, &mut out, &msgs);
    out.finish_progress();
    if let Some(t) = &cfg.report.time {
        for secs in t.take_out_of_range() {
            eprintln!(
                "{program}: time {} is out of range",
                sdu::quote(secs.to_string().as_bytes())
            );
        }
    }
    let failed = |errors: u64| ExitStatus::failed_if(errors > 0 || noted_errors).into();
    match result {
        Ok(o) => failed(o.errors),
        // `sdu | head` closing the pipe is not an error; du dies of it.
        Err(sdu::Error::Write(e)) if e.kind() == io::ErrorKind::BrokenPipe => {
            if cfg.rules.du {
                cli::signals::die_of_sigpipe();
            }
            failed(msgs.errors())
        }
        Err(e) => {
            // Drop what is still buffered rather than try to write it again.
            let _ = out.into_inner().into_parts();
            eprintln!("{program}: {e}");
            ExitStatus::Fatal.into()
        }
    }
}
