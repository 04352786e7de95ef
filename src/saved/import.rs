//! Reading a saved scan for `--import FILE` and for the OLD scan of
//! `--compare OLD` ([`load`]): checked against the rules it is to be
//! rolled up by, its files folded into their directories unless kept.
//! The scan rolls it up (`src/scan/mod.rs`).

use std::time::{Duration, Instant};

use super::Saved;
use crate::error::Error;
use crate::figures::TimeField;
use crate::records::Exactness;
use crate::tree::unreachable::Found;

/// A saved scan read and checked, ready to be rolled up.
pub(crate) struct Loaded {
    /// The scan as read; its unreachable data moved to `unreachable`.
    pub(crate) saved: Saved,
    /// The roots as the scan names them.
    pub(crate) roots: Vec<Vec<u8>>,
    /// What the scan could verify.
    pub(crate) exact: Exactness,
    /// The data no entry of the scan reaches.
    pub(crate) unreachable: Found,
    /// Whether sdu wrote it (and so its figures know what is shared).
    pub(crate) sharing: bool,
    /// How long reading it took.
    pub(crate) t_read: Duration,
}

/// Reads the saved scan `file` (`-`: standard input), to be rolled up with
/// du's counting (`du`) or not, keeping its files as entries of their own
/// (`all`) or folding them into their directories. `time`: the `--time`
/// field the report shows, which the scan must have recorded.
///
/// # Errors
/// `bad(what)` where the file cannot be read, is not a saved scan, is
/// truncated or inconsistent, lacks the time asked for, or was walked by
/// other rules than `du` where that matters.
pub(crate) fn load(
    file: &[u8],
    time: Option<TimeField>,
    du: bool,
    all: bool,
    bad: &dyn Fn(String) -> Error,
) -> Result<Loaded, Error> {
    let t0 = Instant::now();
    // Without `all`, its files are folded into their directories as it
    // is read: the records of a scan without `-a`.
    let mut s = super::read_file(file, !all).map_err(bad)?;
    if let Some(t) = time
        && s.time != Some(t)
    {
        return Err(bad(
            "--time: the scan did not record that time (export with the same --time)".into(),
        ));
    }
    if s.overlap && s.du != du {
        return Err(bad(format!(
            "its PATHs overlap, and were walked {} du's counting: export again {} --du",
            if s.du { "with" } else { "without" },
            if du { "with" } else { "without" }
        )));
    }
    let sharing = s.by_sdu;
    let roots = s.roots();
    let exact = s.exactness();
    let unreachable = Found {
        own: std::mem::take(&mut s.unreachable),
        ..Default::default()
    };
    Ok(Loaded {
        saved: s,
        roots,
        exact,
        unreachable,
        sharing,
        t_read: t0.elapsed(),
    })
}
