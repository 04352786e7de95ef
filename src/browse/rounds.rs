//! The rounds of one browsing. A round browses a scan until a deletion,
//! a rescan or a shell is asked for, does it, and scans again; the next
//! browses the new scan with the marks and the cursor carried over. The
//! rounds end at `q`, or when nothing is left to browse.

use std::time::SystemTime;

use sdu::figures::Figure;
use sdu::{Comparison, Config, Frees, Messages, NodeId, Scanned, Target, WalkOptions};

use super::app::{self, App, Carry, Request, Sort};
use super::cause::Written;
use super::view::Look;
use super::{End, HeldMessages, Term, shell};

/// What one browsing keeps from one round to the next, and what it says
/// at the end.
pub(super) struct Rounds<'c> {
    cfg: &'c Config,
    scanned: Scanned,
    /// When `scanned` was done.
    scanned_at: SystemTime,
    comparison: Option<Comparison>,
    /// The roots scanned again: those not deleted whole.
    walk: WalkOptions,
    /// The marks, cursor and settings the next browse starts from.
    carry: Option<Carry>,
    /// The settings the first browse opens with.
    pub(super) opening: app::Settings,
    /// What the next browse shows first.
    notice: Option<Vec<String>>,
    /// Diagnostics of the rescans, kept while the screen is the browser's.
    pub(super) later: HeldMessages,
    pub(super) rescan_msgs: Messages,
    pub(super) failed: bool,
    pub(super) interrupted: bool,
    /// What every deletion did, printed on standard error at the end.
    pub(super) report: Vec<String>,
}

/// What the user asked for when the browse of one scan ended.
enum Asked {
    Delete {
        targets: Vec<Target>,
        predicted: Frees,
        written: Written,
    },
    Rescan,
    /// A shell, in the directory browsed (none at the top).
    Shell(Option<shell::Dir>),
    /// The `--df` table of the filesystems browsed.
    Df,
}

impl<'c> Rounds<'c> {
    pub(super) fn new(
        cfg: &'c Config,
        program: &'static str,
        scanned: Scanned,
        comparison: Option<Comparison>,
    ) -> Self {
        // Rescans after a deletion: their messages wait for the terminal.
        let later = HeldMessages::default();
        let rescan_msgs = Messages::named(Box::new(later.clone()), program);
        let mut walk = cfg.walk.clone();
        walk.progress = None;
        Rounds {
            cfg,
            scanned,
            scanned_at: SystemTime::now(),
            comparison,
            walk,
            carry: None,
            opening: app::Settings::default(),
            notice: None,
            later,
            rescan_msgs,
            failed: false,
            interrupted: false,
            report: Vec::new(),
        }
    }

    /// Browses, does what is asked and browses the new scan, until `q`,
    /// a failed terminal, or nothing left to browse.
    pub(super) fn run(&mut self, term: &mut Term, first: Figure, sort: Sort, look: Look) -> End {
        loop {
            let (asked, mut kept) = match self.browse(term, first, sort, look) {
                Ok(a) => a,
                Err(end) => return end,
            };
            let mut lines = match asked {
                Asked::Delete {
                    targets,
                    predicted,
                    written,
                } => match self.delete(term, &targets, predicted, &written, look) {
                    Ok((mut lines, false)) => {
                        // Nothing deleted: the same scan, the marks kept.
                        self.carry = Some(kept);
                        lines.push(
                            "Nothing was deleted: the figures shown are still the scan's.".into(),
                        );
                        lines.push("(any key closes this)".into());
                        self.notice = Some(lines);
                        continue;
                    }
                    Ok((lines, true)) => {
                        // What was marked is gone, or the deletion stopped:
                        // no mark is kept over it.
                        kept.marks.clear();
                        lines
                    }
                    Err(end) => return end,
                },
                Asked::Rescan => Vec::new(),
                Asked::Df => {
                    // The same scan, the table over it.
                    self.carry = Some(kept);
                    self.notice = Some(self.df_lines(term, look));
                    continue;
                }
                Asked::Shell(dir) => match shell::run(term, dir) {
                    Ok(Ok(())) => Vec::new(),
                    Ok(Err(why)) => {
                        // Not started: the same scan, and why.
                        self.carry = Some(kept);
                        self.notice = Some(vec![why, "(any key closes this)".into()]);
                        continue;
                    }
                    Err(e) => return End::Terminal(e),
                },
            };
            self.carry = Some(kept);
            if let Err(end) = self.scan_again(term) {
                return end;
            }
            if !lines.is_empty() {
                lines.push("The figures shown are those of a new scan.".into());
                lines.push("(any key closes this)".into());
                self.notice = Some(lines);
            }
        }
    }

    /// Browses the scan until something is asked for: what, and what the
    /// next browse carries over.
    fn browse(
        &mut self,
        term: &mut Term,
        first: Figure,
        sort: Sort,
        look: Look,
    ) -> Result<(Asked, Carry), End> {
        let (tree, idents) = (&self.scanned.tree, self.scanned.idents.as_ref());
        let sets = self
            .scanned
            .sets
            .as_ref()
            .expect("a browser's scan keeps its sets");
        let mut app = match self.carry.take() {
            None => App::new(tree, sets, first, sort).with_settings(self.opening.clone()),
            Some(c) => App::resume(tree, sets, first, c, |id| idents.and_then(|i| i.get(id))),
        };
        app.can_delete = self.cfg.import.is_none();
        app.unread = app::Unread::new(tree, &self.scanned.read_errors);
        app.set_compare(self.comparison.as_ref());
        app.snapshots.scanned = Some(&self.scanned);
        app.snapshots.opts.unit = look.unit;
        app.snapshots.opts.ascii_marks = look.ascii;
        if app.can_delete {
            app.guard = app::Guard::new(tree, move |id| idents.and_then(|i| i.get(id)));
        }
        // What `resume` says (marks dropped, the cursor on another entry
        // under its name) is said after what the event loop has to say.
        if let Some(mut n) = self.notice.take() {
            if let Some(dropped) = app.notice.take() {
                n.retain(|l| !l.starts_with("(any key"));
                n.extend(dropped);
            }
            app.notice = Some(n);
        }
        if let Err(e) = super::browse(term, &mut app, look, idents) {
            return Err(End::Terminal(e));
        }
        let Some(request) = app.request.take() else {
            return Err(End::Quit);
        };
        let kept = app.carry(|id| idents.and_then(|i| i.get(id)));
        let asked = match request {
            Request::Delete(ids) => {
                let targets = ids
                    .iter()
                    .map(|&id| super::target(&app, idents, id))
                    .collect();
                let predicted = sets.frees(tree, &ids);
                let written = Written {
                    newest: ids.iter().filter_map(|&id| tree.figures(id).time).max(),
                    scanned_at: self.scanned_at,
                };
                Asked::Delete {
                    targets,
                    predicted,
                    written,
                }
            }
            Request::Rescan => Asked::Rescan,
            Request::Df => Asked::Df,
            Request::Shell => Asked::Shell((app.dir() != NodeId::TOP).then(|| {
                let d = app.dir();
                let mut names = app.names(d);
                shell::Dir {
                    path: app.path(d),
                    root: names.remove(0),
                    names,
                    idents: super::chain(app.tree(), idents, d),
                }
            })),
        };
        Ok((asked, kept))
    }

    /// Deletes `targets` and takes the roots deleted whole out of the next
    /// scan: the lines that say what it did and whether anything changed
    /// (false: nothing was deleted, found gone or moved), or the end when
    /// nothing of what was scanned is left.
    fn delete(
        &mut self,
        term: &mut Term,
        targets: &[Target],
        predicted: Frees,
        written: &Written,
        look: Look,
    ) -> Result<(Vec<String>, bool), End> {
        let done = super::deleting(term, targets).map_err(End::Terminal)?;
        self.failed |= done.failed.is_some();
        self.interrupted |= done.interrupted;
        let mut lines = super::outcome_lines(&done, targets.len(), predicted, look);
        lines.extend(super::cause::line(&done, predicted, targets, written, look));
        self.report.extend(lines.iter().cloned());
        let changed = done.targets > 0 || done.entries > 0 || done.unscanned > 0 || done.left_aside;
        // Roots deleted whole are not scanned again.
        let gone: Vec<&[u8]> = targets[..done.targets]
            .iter()
            .filter(|t| t.names.is_empty())
            .map(|t| &t.root[..])
            .collect();
        self.walk.roots.retain(|r| !gone.contains(&&r[..]));
        if self.walk.roots.is_empty() {
            self.report
                .push("Nothing of what was scanned is left.".into());
            return Err(End::Done);
        }
        Ok((lines, changed))
    }

    /// The lines of `sdu --df`'s table of the filesystems of the roots
    /// browsed, in the browser's units and marks, as a notice; its
    /// messages wait with the rescans'.
    fn df_lines(&self, term: &mut Term, look: Look) -> Vec<String> {
        let _ = super::message(term, "Scanning the filesystem…");
        let cfg = Config {
            df: true,
            walk: self.walk.clone(),
            report: sdu::ReportOptions {
                unit: look.unit,
                ascii_marks: look.ascii,
                quote_names: true,
                ..sdu::ReportOptions::default()
            },
            ..Config::default()
        };
        let mut out = Vec::new();
        let mut lines: Vec<String> = match sdu::run(&cfg, &mut out, &self.rescan_msgs) {
            Ok(_) => String::from_utf8_lossy(&out)
                .lines()
                .map(String::from)
                .collect(),
            Err(e) => vec![format!("sdu --df failed: {e}")],
        };
        lines.push("(any key closes this)".into());
        lines
    }

    /// Scans again, and compares the new scan as the first was: the end
    /// when it failed, a root was replaced since, or it cannot be compared.
    fn scan_again(&mut self, term: &mut Term) -> Result<(), End> {
        let _ = super::message(term, "Scanning again…");
        let again = match super::load(self.cfg, &self.walk, &self.rescan_msgs) {
            Ok(again) => again,
            Err(e) => {
                self.report.push(format!("The new scan failed: {e}"));
                return Err(End::Done);
            }
        };
        if let Some(changed) = super::replaced_roots(&self.scanned, &again) {
            self.report.push(format!(
                "{} is not the directory scanned before (replaced since): not browsed again.",
                sdu::quote(&changed)
            ));
            self.failed = true;
            return Err(End::Done);
        }
        match super::compared(self.cfg, &again) {
            Ok(c) => self.comparison = c,
            Err(e) => {
                self.report
                    .push(format!("The new scan cannot be compared: {e}"));
                return Err(End::Done);
            }
        }
        self.scanned = again;
        self.scanned_at = SystemTime::now();
        Ok(())
    }
}
