//! GNU du as the reference: running it (as root or `nobody`), reading its
//! lines, and comparing every entry of an sdu report with `du -s` on that
//! entry alone.

use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::os::unix::ffi::OsStringExt;
use std::path::Path;
use std::process::Command;

use super::process::{Output, nobody_args, run, sdu_json};
use crate::args;
use crate::json::{Entry, Kind, Report};

/// How du is run: extra flags common to sdu and du (`-l`, `-x`, `-L`,
/// `--exclude=...`), and optionally as the unprivileged user `nobody`.
#[derive(Clone, Default)]
pub struct Du {
    pub flags: Vec<String>,
    pub nobody: bool,
}

/// One line of du output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuLine {
    pub size: String,
    pub path: OsString,
}

impl Du {
    pub fn new(flags: &[&str]) -> Du {
        Du {
            flags: flags.iter().map(|s| s.to_string()).collect(),
            nobody: false,
        }
    }

    pub fn nobody(mut self) -> Du {
        self.nobody = true;
        self
    }

    fn command(&self) -> Command {
        let mut c = if self.nobody {
            let mut c = Command::new("setpriv");
            c.args(nobody_args()).arg("du");
            c
        } else {
            Command::new("du")
        };
        c.args(&self.flags).env("LC_ALL", "C");
        c
    }

    /// `du -0 FLAGS EXTRA PATHS`: its lines, whatever the exit status
    /// (du exits 1 when a directory is unreadable but still prints).
    pub fn lines(&self, extra: &[&str], paths: &[&OsStr]) -> (Vec<DuLine>, Output) {
        let out = run(self.command().arg("-0").args(extra).args(paths));
        assert!(
            out.code == Some(0) || (out.code == Some(1) && !out.stdout.is_empty()),
            "`{}` failed: {:?} {}",
            out.cmdline,
            out.code,
            out.stderr
        );
        let lines = out
            .stdout
            .split(|&b| b == 0)
            .filter(|l| !l.is_empty())
            .map(|l| {
                let tab = l
                    .iter()
                    .position(|&b| b == b'\t')
                    .expect("du line has a tab");
                DuLine {
                    size: String::from_utf8(l[..tab].to_vec()).unwrap(),
                    path: OsString::from_vec(l[tab + 1..].to_vec()),
                }
            })
            .collect();
        (lines, out)
    }

    /// `du -s FLAGS EXTRA PATH`, the one size it prints.
    pub fn size(&self, extra: &[&str], path: &OsStr) -> String {
        let mut a = vec!["-s"];
        a.extend_from_slice(extra);
        let (l, out) = self.lines(&a, &[path]);
        assert_eq!(l.len(), 1, "`{}` printed {l:?}", out.cmdline);
        l.into_iter().next().unwrap().size
    }

    pub fn bytes(&self, extra: &[&str], path: &OsStr) -> u64 {
        let s = self.size(extra, path);
        s.parse()
            .unwrap_or_else(|_| panic!("du printed {s:?} for {}", path.to_string_lossy()))
    }

    /// The set of paths `du FLAGS EXTRA ROOTS` prints.
    pub fn paths(&self, extra: &[&str], roots: &[&OsStr]) -> Vec<OsString> {
        let mut v: Vec<OsString> = self
            .lines(extra, roots)
            .0
            .into_iter()
            .map(|l| l.path)
            .collect();
        v.sort();
        v
    }

    /// Compares `total`, `apparent` and `files + dirs` of every entry
    /// `keep` selects with `du -s -B1 [--apparent-size | --inodes] PATH`
    /// run on that path alone. Returns a readable table of the
    /// differences (empty when all agree).
    pub fn mismatches(&self, report: &Report, keep: impl Fn(&Entry) -> bool) -> String {
        let mut rows = Vec::new();
        let mut checked = 0;
        for e in report.entries.iter().filter(|e| keep(e)) {
            checked += 1;
            let p = e.path.as_os_str();
            let du_total = self.bytes(&["-B1"], p);
            let du_apparent = self.bytes(&["-B1", "--apparent-size"], p);
            let du_inodes = self.bytes(&["--inodes"], p);
            for (fig, s, d) in [
                ("total", e.total, du_total),
                ("apparent", e.apparent, du_apparent),
                ("files+dirs", e.files + e.dirs, du_inodes),
            ] {
                if s != d {
                    rows.push((e.path.to_string_lossy().into_owned(), fig, s, d));
                }
            }
        }
        assert!(checked > 0, "no entry selected for the du comparison");
        if rows.is_empty() {
            return String::new();
        }
        let w = rows.iter().map(|r| r.0.len()).max().unwrap().max(4);
        let mut t = format!(
            "sdu disagrees with `du -s {}` on {} figures of {checked} entries{}:\n{:w$}  {:>10}  {:>12}  {:>12}  {:>12}\n",
            self.flags.join(" "),
            rows.len(),
            if self.nobody { " (as nobody)" } else { "" },
            "path",
            "figure",
            "sdu",
            "du",
            "sdu-du"
        );
        for (p, fig, s, d) in rows {
            let _ = writeln!(
                t,
                "{p:w$}  {fig:>10}  {s:>12}  {d:>12}  {:>12}",
                s as i128 - d as i128
            );
        }
        t
    }

    pub fn assert_figures(&self, report: &Report, keep: impl Fn(&Entry) -> bool) {
        let t = self.mismatches(report, keep);
        assert!(t.is_empty(), "{t}");
    }
}

/// Checks every entry of `sdu --json -a FLAGS ROOT` (files too) against
/// `du -s FLAGS` on that entry alone, and that the run without `-a` lists
/// exactly the directories (and roots) of the `-a` run with the same
/// figures. Returns the `-a` report.
pub fn assert_matches_du(root: &Path, flags: &[&str]) -> Report {
    let mut a: Vec<OsString> = args!["-a"];
    a.extend(flags.iter().map(OsString::from));
    a.push(root.into());
    let all = sdu_json(&a);
    a.remove(0);
    let dirs = sdu_json(&a);
    Du::new(flags).assert_figures(&all, |_| true);
    let want: Vec<&Entry> = all
        .entries
        .iter()
        .filter(|e| e.kind == Kind::Dir || e.depth == 0)
        .collect();
    let got: Vec<&Entry> = dirs.entries.iter().collect();
    assert_eq!(
        got, want,
        "`sdu {flags:?}` without -a is not the directories of the -a run"
    );
    all
}
