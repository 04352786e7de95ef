//! Reading a saved scan into a rolled-up tree: `--import FILE`, and the
//! OLD scan of `--compare OLD`, which differ only in how their errors are
//! named ([`import`], [`load`]).

use std::time::Instant;

use super::Saved;
use crate::figures::TimeField;
use crate::{Counters, Diagnostic, Error, Messages, Scanned, Scanning};

/// `--import FILE`: reads the saved scan `file` (`-`: standard input) and
/// rolls it up by `how.rules` (folding its files into their directories
/// unless `how.walk.all`); says on `msgs` when sdu did not write it.
pub(crate) fn import(
    how: &Scanning,
    file: &[u8],
    time: Option<TimeField>,
    msgs: &Messages,
) -> Result<Scanned, Error> {
    let bad = |what: String| Error::SavedScan {
        file: file.to_vec(),
        what,
    };
    let s = load(how, file, time, &bad)?;
    if !s.sharing {
        msgs.report(Diagnostic::NotBySdu {
            file: file.to_vec(),
        });
    }
    Ok(s)
}

/// Reads the saved scan `file` (`-`: standard input) and rolls it up as
/// `how` says. `time`: the `--time` field the report shows, which the
/// scan must have recorded.
///
/// # Errors
/// `bad(what)` where the file cannot be read, is not a saved scan, is
/// truncated or inconsistent, lacks the time asked for, or was walked by
/// other rules than `how`'s where that matters.
pub(crate) fn load(
    how: &Scanning,
    file: &[u8],
    time: Option<TimeField>,
    bad: &dyn Fn(String) -> Error,
) -> Result<Scanned, Error> {
    let t0 = Instant::now();
    let mut s = super::read_file(file).map_err(bad)?;
    if let Some(t) = time
        && s.time != Some(t)
    {
        return Err(bad(
            "--time: the scan did not record that time (export with the same --time)".into(),
        ));
    }
    if s.overlap && s.du != how.rules.du {
        return Err(bad(format!(
            "its PATHs overlap, and were walked {} du's counting: export again {} --du",
            if s.du { "with" } else { "without" },
            if how.rules.du { "with" } else { "without" }
        )));
    }
    let sharing = s.by_sdu;
    if !how.walk.all {
        s.fold_leaves();
    }
    let roots = s.roots();
    let exact = s.exactness();
    let unreachable = crate::tree::unreachable::Found {
        own: std::mem::take(&mut s.unreachable),
        ..Default::default()
    };
    let t_read = t0.elapsed();
    let t1 = Instant::now();
    let Saved {
        nodes,
        links,
        files,
        sweep,
        spaces,
        stops,
        errors,
        read_errors,
        ..
    } = s;
    let granularity = |fs: u32| {
        spaces
            .iter()
            .find(|x| x.0 == fs)
            .map_or(crate::probe::Granularity::Block, |x| x.1)
    };
    let (n_files, n_links) = (files.len(), links.len());
    let (tree, sets) = crate::tree::Tree::roll_up(
        nodes,
        links,
        &files,
        &sweep,
        granularity,
        how.build(&stops, &exact, &unreachable, crate::records::Copies::NONE),
    );
    let sizes = crate::stats::Sizes::Read {
        file: file.to_vec(),
        nodes: tree.len().saturating_sub(1),
        links: n_links,
        files: n_files,
        segments: sweep.segment_count(),
        units: sweep.unit_count(),
        read: t_read,
        tree: t1.elapsed(),
    };
    Ok(Scanned {
        tree,
        sets,
        idents: None,
        read_errors,
        roots,
        saved_errors: errors,
        sharing,
        counters: Counters::default(),
        sizes,
    })
}
