//! sdu: a disk usage tool that understands shared data.
//!
//! The library does the work; the binary only parses flags. Data flows one
//! way: [`walk`] (parallel, fd-relative statx) → [`tree`] (roll-up per
//! directory) → [`report`] (text or JSON). See DESIGN.md in the shared docs
//! for what every figure means and what it is checked against.

pub mod figures;
pub mod glob;
pub mod messages;
pub mod quote;
pub mod report;
pub mod tree;
pub mod units;
pub mod walk;

use std::io::{self, Write};

pub use messages::Messages;
pub use report::ReportOptions;
pub use walk::WalkOptions;

/// Everything a run needs, resolved from the command line.
#[derive(Clone, Debug, Default)]
pub struct Config {
    pub walk: WalkOptions,
    pub report: ReportOptions,
}

/// What a run ended with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Entries that could not be read (each was reported on the messages).
    pub errors: u64,
}

/// Walks, rolls up and reports. Per-entry failures go to `msgs` and are
/// counted in the outcome; only a failure to write the report is an `Err`.
pub fn run(cfg: &Config, out: &mut dyn Write, msgs: &Messages) -> io::Result<Outcome> {
    let walked = walk::walk(&cfg.walk, msgs);
    let tree = tree::Tree::build(walked);
    let errors = msgs.errors();
    report::write(out, &tree, &cfg.walk.roots, errors, &cfg.report)?;
    out.flush()?;
    Ok(Outcome { errors })
}
