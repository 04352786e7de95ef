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
use std::io::{self, BufWriter};
use std::path::Path;
use std::process::ExitCode;

use cli::progress::{self, ClearsProgress, Display};
use cli::resolve::{Env, Note, resolve};
use cli::status::ExitStatus;
use sdu::Messages;

fn main() -> ExitCode {
    let argv: Vec<OsString> = std::env::args_os().collect();
    let as_du = argv
        .first()
        .and_then(|a| Path::new(a).file_name())
        .is_some_and(|n| n == "du");
    let program = if as_du { "du" } else { "sdu" };
    let args = match cli::args::parse_from(argv, as_du) {
        Ok(a) => a,
        Err(stop) => return stop.report(program).into(),
    };
    let du_texts = args.du_mode();
    if let Some(kind) = args.generate {
        return cli::man::generate(kind).into();
    }
    let env = Env::of_process();
    let interactive = args.interactive;
    let resolved = match resolve(args, &env) {
        Ok(c) => c,
        Err(e) => return e.report(program, du_texts).into(),
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
