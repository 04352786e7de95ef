//! From parsed flags and the process's surroundings to a [`Config`].
//!
//! [`resolve`] is pure: whatever it would read from the process (variables,
//! terminals, the CPU count) comes in an [`Env`], so that every rule about
//! defaults and precedence can be tested here without running sdu.

use std::ffi::OsString;
use std::fmt;
use std::os::unix::ffi::OsStringExt;
use std::sync::Arc;

use sdu::figures::Figure;
use sdu::glob::Excludes;
use sdu::report::{Format, SortKey};
use sdu::units::{Unit, parse_block_size, parse_size};
use sdu::{Config, Progress, ReportOptions, WalkOptions};

use super::args::{Cli, ColorWhen, SortBy, UnitFlag};

/// Looks up an environment variable by name: `None` when it is unset.
pub type Lookup = Box<dyn Fn(&str) -> Option<OsString>>;

/// What [`resolve`] may know of the process it runs in.
pub struct Env {
    pub vars: Lookup,
    pub stdout_terminal: bool,
    pub stderr_terminal: bool,
    /// The default number of worker threads.
    pub cpus: usize,
}

impl Env {
    /// The environment of this process.
    pub fn of_process() -> Env {
        use std::io::IsTerminal;
        Env {
            vars: Box::new(|name| std::env::var_os(name)),
            stdout_terminal: std::io::stdout().is_terminal(),
            stderr_terminal: std::io::stderr().is_terminal(),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }

    /// The variable `name`, if set (even to the empty string).
    pub fn var(&self, name: &str) -> Option<OsString> {
        (self.vars)(name)
    }

    /// Whether `name` is set to something other than the empty string.
    fn non_empty(&self, name: &str) -> bool {
        self.var(name).is_some_and(|v| !v.is_empty())
    }
}

/// A command line that makes no sense; the message is printed after
/// `sdu: `, followed by a pointer to `--help`, and sdu exits 2.
#[derive(Debug, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for UsageError {
    fn from(s: String) -> Self {
        UsageError(s)
    }
}

/// The 1K block, du's default unit.
const KIB: Unit = Unit::Blocks {
    size: 1024,
    suffix: None,
};

/// Resolves the flags into a [`Config`]. When progress is to be shown,
/// `walk.progress` holds the counters for the display to read.
pub fn resolve(cli: Cli, env: &Env) -> Result<Config, UsageError> {
    if cli.summarize && cli.all {
        return Err(UsageError(
            "cannot both summarize and show all entries".into(),
        ));
    }
    if let Some(d) = cli.max_depth.filter(|&d| cli.summarize && d > 0) {
        return Err(UsageError(format!(
            "summarizing (-s) conflicts with --max-depth={d}"
        )));
    }
    let unit = unit(&cli)?;
    let apparent = cli.apparent_size || cli.bytes;
    // `total` is the apparent size under `--apparent-size`, as du's single
    // figure is.
    let figure = |f: Figure| match f {
        Figure::Total if apparent => Figure::Apparent,
        f => f,
    };
    let min_size = cli.min_size.as_deref().map(parse_size).transpose()?;
    let sort = cli.sort.map(|s| match s {
        SortBy::Name => SortKey::Name,
        SortBy::Figure(f) => SortKey::Size(figure(f)),
    });
    // The NO_COLOR convention: a flag asking for colour beats the variable.
    let color = match cli.color {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => env.stdout_terminal && !env.non_empty("NO_COLOR"),
    };
    let roots: Vec<Vec<u8>> = if cli.paths.is_empty() {
        vec![b".".to_vec()]
    } else {
        cli.paths.into_iter().map(OsStringExt::into_vec).collect()
    };
    if roots.iter().any(|r| r.is_empty()) {
        return Err(UsageError("invalid zero-length file name".into()));
    }
    let threads = cli.threads.map_or(env.cpus, |t| t as usize);
    // `--du total` (or apparent) replaces du in scripts: when no sharing
    // figure is printed or sorted on, map no extents.
    let plain = |f: Figure| matches!(f, Figure::Total | Figure::Apparent);
    let skip_extents = !cli.json
        && cli.du.is_some_and(plain)
        && cli.sort.is_none_or(|s| match s {
            SortBy::Name => true,
            SortBy::Figure(f) => plain(f),
        });
    let progress = (!cli.no_progress && env.stderr_terminal).then(|| Arc::new(Progress::default()));
    Ok(Config {
        walk: WalkOptions {
            roots,
            threads,
            follow_links: cli.dereference,
            follow_args: false,
            time: None,
            du_rules: false,
            one_file_system: cli.one_file_system,
            count_links: cli.count_links,
            all: cli.all,
            excludes: Excludes::new(cli.exclude.into_iter().map(OsStringExt::into_vec)),
            progress,
            skip_extents,
        },
        report: ReportOptions {
            format: match (cli.json, cli.du, cli.tree) {
                (true, _, _) => Format::Json,
                (false, Some(f), _) => Format::Du(figure(f)),
                (false, None, true) => Format::Tree,
                (false, None, false) => Format::Text,
            },
            max_depth: if cli.summarize {
                Some(0)
            } else {
                cli.max_depth
            },
            unit: unit
                .or_else(|| env_unit(env))
                .unwrap_or_else(|| default_unit(cli.du.is_some(), env)),
            columns: vec![
                figure(Figure::Total),
                Figure::Exclusive,
                Figure::Shared,
                Figure::Reclaimable,
            ],
            header: !cli.no_header && !cli.null,
            null: cli.null,
            grand_total: cli.total,
            sort,
            top: cli.top,
            min_size,
            color,
        },
        stats: cli.stats,
    })
}

/// The unit the flags ask for, if any: as in du, the last unit flag wins.
/// A bad `-B` is an error even when a later flag overrides it.
fn unit(cli: &Cli) -> Result<Option<Unit>, UsageError> {
    let mut unit = None;
    for flag in &cli.units {
        unit = Some(match flag {
            UnitFlag::Human => Unit::HumanIec,
            UnitFlag::Si => Unit::HumanSi,
            UnitFlag::Kibibytes => KIB,
            UnitFlag::Mebibytes => Unit::Blocks {
                size: 1 << 20,
                suffix: None,
            },
            UnitFlag::Bytes => Unit::Blocks {
                size: 1,
                suffix: None,
            },
            UnitFlag::BlockSize(b) => parse_block_size(b)?,
        });
    }
    Ok(unit)
}

/// The block-size variables, in the order du reads them (gnulib's
/// `human_options`: DU_BLOCK_SIZE, then `humblock`'s fallbacks).
const BLOCK_SIZE_VARS: [&str; 3] = ["DU_BLOCK_SIZE", "BLOCK_SIZE", "BLOCKSIZE"];

/// The unit the environment asks for, as GNU du reads it: the first of
/// [`BLOCK_SIZE_VARS`] that is set counts, even when it is empty, and an
/// invalid value is ignored without a word (du calls `human_options` and
/// drops its error), leaving the default.
///
/// It is read in the table's mode as in `--du`'s, as a unit flag given
/// before all the others would be: du's rule, and the variables name the
/// user's unit for every size-printing tool, not du's format alone.
fn env_unit(env: &Env) -> Option<Unit> {
    let spec = BLOCK_SIZE_VARS.into_iter().find_map(|v| env.var(v))?;
    env_block_size(spec.to_str()?)
}

/// A block size from the environment: `-B`'s grammar, plus what gnulib's
/// `humblock` adds to it: `human-readable` and `si` or any abbreviation
/// of them (`h`, `hum`, `s`), and a leading `'`.
///
/// The `'` asks for thousands separators, which du prints only in a
/// locale that has them; sdu is not localised, so it prints none, as du
/// does in the C locale. Values that only du's number parser takes are
/// not read (see `parse_block_size`): octal and hexadecimal numbers, and
/// du's partial reading of a bad value (`1X` is 1 there, ignored here).
fn env_block_size(spec: &str) -> Option<Unit> {
    let spec = spec.strip_prefix('\'').unwrap_or(spec);
    let abbreviates = |word: &str| !spec.is_empty() && word.starts_with(spec);
    if abbreviates("human-readable") {
        Some(Unit::HumanIec)
    } else if abbreviates("si") {
        Some(Unit::HumanSi)
    } else {
        parse_block_size(spec).ok()
    }
}

/// The unit when neither a flag nor the environment names one: du's 1K
/// blocks with `--du` (512-byte blocks under POSIXLY_CORRECT, as du's),
/// human-readable sizes in sdu's own table, where POSIXLY_CORRECT has no
/// say since no standard covers it.
fn default_unit(du_format: bool, env: &Env) -> Unit {
    match (du_format, env.var("POSIXLY_CORRECT").is_some()) {
        (false, _) => Unit::HumanIec,
        (true, false) => KIB,
        (true, true) => Unit::Blocks {
            size: 512,
            suffix: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::super::args::parse_from;
    use super::*;

    /// An environment with these variables, no terminal and 4 CPUs.
    fn env(vars: &[(&str, &str)]) -> Env {
        let vars: HashMap<String, OsString> = vars
            .iter()
            .map(|&(k, v)| (k.to_owned(), OsString::from(v)))
            .collect();
        Env {
            vars: Box::new(move |name| vars.get(name).cloned()),
            stdout_terminal: false,
            stderr_terminal: false,
            cpus: 4,
        }
    }

    fn resolve_in(env: &Env, args: &[&str]) -> Result<Config, UsageError> {
        let cli = parse_from(std::iter::once("sdu").chain(args.iter().copied()))
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        resolve(cli, env)
    }

    fn config(args: &[&str]) -> Config {
        resolve_in(&env(&[]), args).unwrap()
    }

    fn blocks(size: u64) -> Unit {
        Unit::Blocks { size, suffix: None }
    }

    #[test]
    fn last_unit_flag_wins() {
        for (args, want) in [
            (&[][..], Unit::HumanIec),
            (&["--du", "total"], KIB),
            (&["-k", "-h"], Unit::HumanIec),
            (&["-h", "-k"], KIB),
            (&["--si", "-m"], blocks(1 << 20)),
            (&["-m", "--si"], Unit::HumanSi),
            (&["-B", "4K", "-b"], blocks(1)),
            (&["-b", "-B", "4K"], blocks(4096)),
            (&["-hBM"], parse_block_size("M").unwrap()),
            (&["--du", "total", "-k", "--human-readable"], Unit::HumanIec),
        ] {
            assert_eq!(config(args).report.unit, want, "{args:?}");
        }
    }

    #[test]
    fn bytes_implies_apparent_whatever_comes_after() {
        let c = config(&["-b", "-k", "--du", "total"]);
        assert_eq!(c.report.unit, KIB);
        assert_eq!(c.report.format, Format::Du(Figure::Apparent));
        assert_eq!(c.report.columns[0], Figure::Apparent);
    }

    #[test]
    fn a_bad_block_size_is_an_error_even_when_overridden() {
        for args in [&["-B", "XYZ"][..], &["-B", "0", "-h"]] {
            let e = resolve_in(&env(&[]), args).unwrap_err();
            assert!(e.0.contains("invalid block size"), "{args:?}: {e}");
        }
    }

    #[test]
    fn summarize_conflicts_with_all_and_depth() {
        let e = |args: &[&str]| resolve_in(&env(&[]), args).unwrap_err().0;
        assert_eq!(
            e(&["-s", "-a"]),
            "cannot both summarize and show all entries"
        );
        assert_eq!(
            e(&["-s", "-d", "2"]),
            "summarizing (-s) conflicts with --max-depth=2"
        );
        assert_eq!(config(&["-s", "-d", "0"]).report.max_depth, Some(0));
        assert_eq!(config(&["-s"]).report.max_depth, Some(0));
        assert_eq!(config(&["-d", "3", "-a"]).report.max_depth, Some(3));
    }

    #[test]
    fn other_usage_errors() {
        let e = |args: &[&str]| resolve_in(&env(&[]), args).unwrap_err().0;
        assert_eq!(e(&[""]), "invalid zero-length file name");
        assert_eq!(e(&["--min-size", "1.5G"]), "invalid size '1.5G'");
    }

    #[test]
    fn threads_default_to_the_cpus() {
        assert_eq!(config(&[]).walk.threads, 4);
        assert_eq!(config(&["-j", "2"]).walk.threads, 2);
        let mut one = env(&[]);
        one.cpus = 1;
        assert_eq!(resolve_in(&one, &[]).unwrap().walk.threads, 1);
    }

    #[test]
    fn progress_only_on_a_terminal_without_no_progress() {
        let mut e = env(&[]);
        assert!(resolve_in(&e, &[]).unwrap().walk.progress.is_none());
        e.stderr_terminal = true;
        assert!(resolve_in(&e, &[]).unwrap().walk.progress.is_some());
        let c = resolve_in(&e, &["--no-progress"]).unwrap();
        assert!(c.walk.progress.is_none());
    }

    #[test]
    fn sort_and_du_figures() {
        let c = config(&["--sort", "total", "--apparent-size"]);
        assert_eq!(c.report.sort, Some(SortKey::Size(Figure::Apparent)));
        let c = config(&["--sort", "name"]);
        assert_eq!(c.report.sort, Some(SortKey::Name));
        for f in Figure::ALL {
            let c = config(&["--du", f.name()]);
            assert_eq!(c.report.format, Format::Du(f));
        }
        assert_eq!(config(&["--tree"]).report.format, Format::Tree);
        assert_eq!(
            config(&["--json", "--sort", "name"]).report.format,
            Format::Json
        );
    }

    #[test]
    fn extents_skipped_only_when_no_sharing_figure_is_needed() {
        let skip = |args: &[&str]| config(args).walk.skip_extents;
        assert!(skip(&["--du", "total"]));
        assert!(skip(&["--du", "apparent", "--sort", "name"]));
        assert!(skip(&["--du", "total", "--sort", "apparent"]));
        assert!(!skip(&["--du", "shared"]));
        assert!(!skip(&["--du", "total", "--sort", "reclaimable"]));
        assert!(!skip(&["--json", "--sort", "total"]));
        assert!(!skip(&[]));
    }

    #[test]
    fn roots_default_to_dot() {
        assert_eq!(config(&[]).walk.roots, [b".".to_vec()]);
        assert_eq!(
            config(&["a", "b/"]).walk.roots,
            [b"a".to_vec(), b"b/".to_vec()]
        );
    }

    #[test]
    fn colour_rules() {
        for when in ["auto", "always", "never"] {
            for terminal in [false, true] {
                for no_color in [None, Some(""), Some("1")] {
                    let mut e = env(no_color.map(|v| ("NO_COLOR", v)).as_slice());
                    e.stdout_terminal = terminal;
                    let want = match when {
                        "always" => true,
                        "never" => false,
                        _ => terminal && no_color.is_none_or(str::is_empty),
                    };
                    let got = resolve_in(&e, &["--color", when]).unwrap().report.color;
                    assert_eq!(
                        got, want,
                        "--color={when} terminal={terminal} NO_COLOR={no_color:?}"
                    );
                    if when == "auto" {
                        let default = resolve_in(&e, &[]).unwrap().report.color;
                        assert_eq!(default, want, "no --color is --color=auto");
                    }
                }
            }
        }
        let mut e = env(&[]);
        e.stdout_terminal = true;
        e.stderr_terminal = false;
        assert!(resolve_in(&e, &["--tree"]).unwrap().report.color);
        e.stdout_terminal = false;
        e.stderr_terminal = true;
        assert!(
            !resolve_in(&e, &["--tree"]).unwrap().report.color,
            "stderr is not where the tree goes"
        );
    }

    fn unit_in(vars: &[(&str, &str)], args: &[&str]) -> Unit {
        resolve_in(&env(vars), args).unwrap().report.unit
    }

    #[test]
    fn env_block_size_precedence() {
        let du = &["--du", "total"][..];
        for (vars, want) in [
            (&[][..], KIB),
            (&[("BLOCKSIZE", "512")], blocks(512)),
            (&[("BLOCK_SIZE", "1"), ("BLOCKSIZE", "512")], blocks(1)),
            (
                &[
                    ("DU_BLOCK_SIZE", "1M"),
                    ("BLOCK_SIZE", "1"),
                    ("BLOCKSIZE", "512"),
                ],
                blocks(1 << 20),
            ),
            // Set counts, even empty or invalid: no fallback to the next.
            (&[("DU_BLOCK_SIZE", ""), ("BLOCK_SIZE", "1")], KIB),
            (&[("BLOCK_SIZE", "bogus"), ("BLOCKSIZE", "1")], KIB),
            // Other variables are not read.
            (&[("LS_BLOCK_SIZE", "1"), ("DF_BLOCK_SIZE", "1")], KIB),
        ] {
            assert_eq!(unit_in(vars, du), want, "{vars:?}");
        }
    }

    #[test]
    fn env_block_size_values() {
        let du = &["--du", "total"][..];
        let suffixed = |s: &str| parse_block_size(s).unwrap();
        for (value, want) in [
            ("1", blocks(1)),
            ("4K", blocks(4096)),
            ("1kB", blocks(1000)),
            ("1MiB", blocks(1 << 20)),
            ("K", suffixed("K")),
            ("MB", suffixed("MB")),
            ("human-readable", Unit::HumanIec),
            ("human", Unit::HumanIec),
            ("h", Unit::HumanIec),
            ("si", Unit::HumanSi),
            ("s", Unit::HumanSi),
            ("'1K", KIB),
            ("'1", blocks(1)),
            ("'h", Unit::HumanIec),
            ("'K", suffixed("K")),
            // Invalid: the default, silently.
            ("", KIB),
            ("'", KIB),
            ("''1K", KIB),
            ("0", KIB),
            ("-1", KIB),
            ("X", KIB),
            ("Human", KIB),
            ("human-readablex", KIB),
            ("sii", KIB),
        ] {
            assert_eq!(unit_in(&[("DU_BLOCK_SIZE", value)], du), want, "{value:?}");
        }
        let mut e = env(&[]);
        e.vars =
            Box::new(|name| (name == "BLOCK_SIZE").then(|| OsString::from_vec(b"1\xffK".to_vec())));
        assert_eq!(resolve_in(&e, du).unwrap().report.unit, KIB, "not UTF-8");
    }

    #[test]
    fn posixly_correct_halves_du_default_only() {
        let posix = &[("POSIXLY_CORRECT", "")][..];
        assert_eq!(unit_in(posix, &["--du", "total"]), blocks(512));
        assert_eq!(
            unit_in(&[("POSIXLY_CORRECT", "1")], &["--du", "total"]),
            blocks(512)
        );
        assert_eq!(unit_in(posix, &[]), Unit::HumanIec, "the table keeps -h");
        assert_eq!(unit_in(posix, &["--tree"]), Unit::HumanIec);
        let invalid = [("POSIXLY_CORRECT", "1"), ("BLOCK_SIZE", "X")];
        assert_eq!(unit_in(&invalid, &["--du", "total"]), blocks(512));
        let valid = [("POSIXLY_CORRECT", "1"), ("BLOCK_SIZE", "1K")];
        assert_eq!(unit_in(&valid, &["--du", "total"]), KIB);
        assert_eq!(unit_in(posix, &["--du", "total", "-k"]), KIB);
    }

    #[test]
    fn env_block_size_applies_to_the_table_too() {
        assert_eq!(unit_in(&[("BLOCK_SIZE", "1K")], &[]), KIB);
        assert_eq!(unit_in(&[("BLOCKSIZE", "si")], &["--tree"]), Unit::HumanSi);
        assert_eq!(unit_in(&[("DU_BLOCK_SIZE", "X")], &[]), Unit::HumanIec);
    }

    #[test]
    fn unit_flags_beat_the_env() {
        let vars = [("DU_BLOCK_SIZE", "1M"), ("POSIXLY_CORRECT", "1")];
        for (args, want) in [
            (&["--du", "total", "-k"][..], KIB),
            (&["--du", "total", "-h"], Unit::HumanIec),
            (&["--du", "total", "--si"], Unit::HumanSi),
            (&["--du", "total", "-b"], blocks(1)),
            (&["--du", "total", "-B", "4K"], blocks(4096)),
            (&["-m"], blocks(1 << 20)),
            (&["-h"], Unit::HumanIec),
            // Not unit flags: the env's unit stays.
            (&["--du", "total", "--apparent-size"], blocks(1 << 20)),
            (&["-s"], blocks(1 << 20)),
        ] {
            assert_eq!(unit_in(&vars, args), want, "{args:?}");
        }
        // A bad -B is still an error, whatever the environment says.
        assert!(resolve_in(&env(&vars), &["-B", "XYZ"]).is_err());
    }
}
