//! `--to-free SIZE`: the plan of what to delete, as a table or a JSON
//! document. The plan itself is the tree's ([`crate::tree::Sets::plan`]);
//! this prints it, and never deletes anything.
//!
//! ```text
//!  Adds  Frees  Path
//!   31G    31G  snaps/2024-01
//!   21G    52G  snaps/2024-02
//!   52G    52G  total
//! ```

use std::borrow::Cow;
use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use super::json::{Path, SCHEMA};
use super::options::ReportOptions;
use crate::plan::Candidate;
use crate::records::NodeId;
use crate::timefmt::{LONG_ISO, TimeFormat, zone};
use crate::tree::Plan;

/// The `--to-free --json` document.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct PlanDocument<'a> {
    /// [`SCHEMA`].
    pub(crate) schema: u32,
    /// The sdu version that wrote it.
    pub(crate) version: Cow<'a, str>,
    /// The bytes asked for.
    pub(crate) target: u64,
    /// Whether the chosen entries reach it.
    pub(crate) reached: bool,
    /// What deleting the chosen entries frees, counted once.
    pub(crate) frees: u64,
    /// Whether `frees` is exact (false: a bound, `docs/figures.md`, "Exact
    /// or a bound").
    pub(crate) reclaimable_exact: bool,
    /// When `frees` is a bound, its direction: `at_most`, `at_least` or
    /// `unknown` (either way); absent when exact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reclaimable_bound: Option<super::json::BoundWord>,
    /// What deleting every candidate would free.
    pub(crate) all: u64,
    /// The order the candidates were taken in: `largest` (the most each
    /// adds first), `oldest_first` or `newest_first`.
    pub(crate) order: Cow<'a, str>,
    /// The chosen entries, in the order chosen.
    pub(crate) chosen: Vec<Step<'a>>,
}

/// One chosen entry.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Step<'a> {
    /// The candidate, as given.
    pub(crate) path: Path<'a>,
    /// What it adds to the entries chosen before it.
    pub(crate) adds: u64,
    /// What it and those before it free together.
    pub(crate) frees: u64,
    /// When the plan goes by age: its age, seconds since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) created: Option<i64>,
    /// What `created` is: `otime` (the creation time of the Btrfs
    /// subvolume it is the root of) or `mtime` (its modification time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) created_from: Option<Cow<'a, str>>,
}

/// Writes `plan` (of `target` bytes, among `candidates`, taken oldest
/// first when `by_age` is `Some(true)`, newest first when `Some(false)`)
/// in the format `opts` asks for: JSON, or the table (with a Created
/// column when by age).
pub(crate) fn write(
    out: &mut dyn Write,
    plan: &Plan,
    (target, by_age): (u64, Option<bool>),
    candidates: &[Candidate],
    opts: &ReportOptions,
) -> io::Result<()> {
    let candidate = |id: NodeId| candidates.iter().find(|c| c.node == id);
    let name = |id: NodeId| -> &[u8] { candidate(id).map_or(&b"?"[..], |c| &c.path[..]) };
    let age = |id: NodeId| candidate(id).and_then(|c| c.created);
    let mut so_far = 0u64;
    let steps: Vec<Step<'_>> = plan
        .steps
        .iter()
        .map(|&(id, adds)| {
            so_far = so_far.saturating_add(adds);
            Step {
                path: Path(Cow::Borrowed(name(id))),
                adds,
                frees: so_far,
                created: age(id).map(|a| a.at.secs),
                created_from: age(id)
                    .map(|a| Cow::Borrowed(if a.otime { "otime" } else { "mtime" })),
            }
        })
        .collect();
    if opts.format == super::Format::Json {
        let doc = PlanDocument {
            schema: SCHEMA,
            version: Cow::Borrowed(env!("CARGO_PKG_VERSION")),
            target,
            reached: plan.reached,
            frees: plan.frees,
            reclaimable_exact: plan.bound.is_exact(),
            reclaimable_bound: super::json::BoundWord::of(plan.bound),
            all: plan.all.bytes,
            order: Cow::Borrowed(match by_age {
                None => "largest",
                Some(true) => "oldest_first",
                Some(false) => "newest_first",
            }),
            chosen: steps,
        };
        serde_json::to_writer(&mut *out, &doc).map_err(io::Error::from)?;
        return out.write_all(b"\n");
    }
    let cell = |v: u64| {
        let mut s = String::new();
        opts.unit.format(v, &mut s);
        s
    };
    let when = opts
        .time
        .clone()
        .unwrap_or_else(|| TimeFormat::new(LONG_ISO, zone(std::env::var("TZ").ok().as_deref())));
    let created = |id: NodeId| {
        let mut s = String::new();
        match age(id) {
            Some(a) => when.write(a.at, &mut s),
            None => s.push('?'),
        }
        s
    };
    let rows: Vec<(String, String, String, &[u8])> = plan
        .steps
        .iter()
        .zip(&steps)
        .map(|(&(id, _), s)| (cell(s.adds), cell(s.frees), created(id), &s.path.0[..]))
        .chain(std::iter::once((
            cell(plan.frees),
            // A bound is marked, as in the table of figures.
            format!("{}{}", plan.bound.mark(opts.ascii_marks), cell(plan.frees)),
            String::new(),
            &b"total"[..],
        )))
        .collect();
    let chars = |c: &String| c.chars().count();
    let w0 = rows.iter().map(|r| chars(&r.0)).max().unwrap_or(0).max(4);
    let w1 = rows.iter().map(|r| chars(&r.1)).max().unwrap_or(0).max(5);
    // By age, the Created column shows the order the plan follows.
    let w2 = match by_age {
        Some(_) => rows.iter().map(|r| chars(&r.2)).max().unwrap_or(0).max(7),
        None => 0,
    };
    let end = if opts.null { b'\0' } else { b'\n' };
    if opts.header && !opts.null {
        match by_age {
            Some(_) => writeln!(
                out,
                "{:>w0$}  {:>w1$}  {:<w2$}  Path",
                "Adds", "Frees", "Created"
            )?,
            None => writeln!(out, "{:>w0$}  {:>w1$}  Path", "Adds", "Frees")?,
        }
    }
    for (adds, frees, created, path) in rows {
        let mut line = match by_age {
            Some(_) => format!("{adds:>w0$}  {frees:>w1$}  {created:<w2$}  "),
            None => format!("{adds:>w0$}  {frees:>w1$}  "),
        }
        .into_bytes();
        opts.push_name(&mut line, path);
        line.push(end);
        out.write_all(&line)?;
    }
    if !plan.bound.is_exact() && opts.header && !opts.null {
        let mark = plan.bound.mark(opts.ascii_marks);
        writeln!(
            out,
            "{mark} the plan frees {}what it says: {}",
            plan.bound.qualifier(),
            match (plan.bound.at_most(), plan.bound.at_least()) {
                (true, false) =>
                    "some data may also be held outside the scan (scan the whole \
                                  filesystem, or run as root, to verify)",
                (false, _) =>
                    "an entry could not be read, or Btrfs extents referenced only in \
                     part are seen only as root",
                (true, true) =>
                    "less or more: some data may also be held outside the scan, an \
                     entry could not be read, Btrfs extents referenced only in part are \
                     seen only as root, or a saved scan sdu did not write says nothing \
                     of sharing",
            }
        )?;
    }
    Ok(())
}
