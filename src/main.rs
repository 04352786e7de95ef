//! The `sdu` binary: flags in, a [`sdu::Config`] out, exit status back.
//!
//! Exit status: 0 when everything was read, 1 when some entries could not
//! be read (each named on stderr), 2 on a usage or fatal error.

mod cli;

use std::io::{self, BufWriter};
use std::process::ExitCode;

use cli::progress::{self, ClearsProgress, Display};
use cli::resolve::{Env, resolve};
use sdu::Messages;

fn main() -> ExitCode {
    let args = cli::args::parse();
    if let Some(kind) = args.generate {
        return cli::man::generate(kind);
    }
    let env = Env::of_process();
    let cfg = match resolve(args, &env) {
        Ok(c) => c,
        Err(msg) => {
            eprintln!("sdu: {msg}\nTry 'sdu --help' for more information.");
            return ExitCode::from(2);
        }
    };
    let delay = progress::delay(env.var("SDU_PROGRESS_DELAY_MS"));
    let display = cfg.walk.progress.clone().map(|p| Display::start(p, delay));
    if let Some(d) = &display {
        // Without the handler, Ctrl-C still stops sdu; only the line stays.
        let _ = cli::signals::clear_progress_on_interrupt(d.clearer());
    }
    let msgs = match &display {
        Some(d) => Messages::new(Box::new(d.sink())),
        None => Messages::default(),
    };
    let stdout = io::stdout();
    let mut out = ClearsProgress::new(display, BufWriter::with_capacity(64 * 1024, stdout.lock()));
    let result = sdu::run(&cfg, &mut out, &msgs);
    out.finish_progress();
    match result {
        Ok(o) => ExitCode::from(u8::from(o.errors > 0)),
        // `sdu | head` closing the pipe is not an error.
        Err(sdu::Error::Write(e)) if e.kind() == io::ErrorKind::BrokenPipe => {
            ExitCode::from(u8::from(msgs.errors() > 0))
        }
        Err(e) => {
            // Drop what is still buffered rather than try to write it again.
            let _ = out.into_inner().into_parts();
            eprintln!("sdu: {e}");
            ExitCode::from(2)
        }
    }
}
