//! The unit tests of [`super`]: every rule about defaults and precedence,
//! on a fake [`Env`].

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
        read: Box::new(|path| match path.map(OsStr::as_bytes) {
            None => Ok(b"a\0b\0".to_vec()),
            Some(b"excl") => Ok(b"x\ny \n\n".to_vec()),
            Some(b"zero") => Ok(b"a\0\0b\0".to_vec()),
            Some(b"dir") => Err(io::Error::from_raw_os_error(21)),
            Some(_) => Err(io::Error::from_raw_os_error(2)),
        }),
        open: Box::new(|path| -> io::Result<Box<dyn io::Read>> {
            /// A directory: it opens, then fails to read.
            struct DirStream;
            impl io::Read for DirStream {
                fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                    Err(io::Error::from_raw_os_error(21))
                }
            }
            let data: &'static [u8] = match path.map(OsStr::as_bytes) {
                None => b"a\0b\0",
                Some(b"zero") => b"a\0\0b\0",
                Some(b"dir") => return Ok(Box::new(DirStream)),
                Some(_) => return Err(io::Error::from_raw_os_error(2)),
            };
            Ok(Box::new(data))
        }),
        stdout_terminal: false,
        stdout_columns: None,
        stderr_terminal: false,
        cpus: 4,
        now: 1_720_978_319,
    }
}

fn resolved(env: &Env, du: bool, args: &[&str]) -> Result<Resolved, UsageError> {
    let name = if du { "du" } else { "sdu" };
    let cli = parse_from(std::iter::once(name).chain(args.iter().copied()), du)
        .unwrap_or_else(|e| panic!("{args:?}: {e:?}"));
    resolve(cli, env)
}

fn resolve_in(env: &Env, args: &[&str]) -> Result<Config, UsageError> {
    resolved(env, false, args).map(|r| r.config)
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
        assert!(
            e.to_string().starts_with("invalid -B argument '"),
            "{args:?}: {e}"
        );
        assert!(!e.try_help, "du's xstrtol_fatal has no Try line");
    }
}

#[test]
fn summarize_conflicts_with_all_and_depth() {
    let e = |args: &[&str]| resolve_in(&env(&[]), args).unwrap_err().to_string();
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
    let e = |args: &[&str]| resolve_in(&env(&[]), args).unwrap_err().to_string();
    assert_eq!(e(&[""]), "invalid zero-length file name");
    assert_eq!(e(&["--min-size", "1.5G"]), "invalid size '1.5G'");
}

/// `--index-memory SIZE` is a size as `--min-size`'s; `TMPDIR` names the
/// spill's directory unless it is empty.
#[test]
fn index_memory_and_tmpdir() {
    assert_eq!(config(&[]).walk.index_memory, None);
    assert_eq!(
        config(&["--index-memory", "2G"]).walk.index_memory,
        Some(2 << 30)
    );
    assert_eq!(config(&["--index-memory", "1"]).walk.index_memory, Some(1));
    let e = resolve_in(&env(&[]), &["--index-memory", "lots"]).unwrap_err();
    assert_eq!(e.to_string(), "invalid size 'lots'");
    assert_eq!(config(&[]).walk.tmpdir, None);
    let tmp = |v: &str| resolve_in(&env(&[("TMPDIR", v)]), &[]).unwrap().walk.tmpdir;
    assert_eq!(tmp("/scratch"), Some("/scratch".into()));
    assert_eq!(tmp(""), None);
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

fn du_resolved(args: &[&str]) -> Result<Resolved, UsageError> {
    resolved(&env(&[]), true, args)
}

#[test]
fn as_du_it_is_du_total_with_dus_counting() {
    let r = du_resolved(&[]).unwrap();
    assert_eq!(r.config.report.format, Format::Du(Figure::Total));
    assert!(r.config.rules.du);
    assert_eq!(r.config.report.unit, KIB);
    let r = du_resolved(&["--inodes", "-b"]).unwrap();
    assert_eq!(r.config.report.format, Format::Du(Figure::Inodes));
    assert_eq!(
        r.notes,
        [Note::Warning(
            "warning: options --apparent-size and -b are ineffective with --inodes".into()
        )]
    );
    assert_eq!(
        du_resolved(&["--json"]).unwrap().config.report.format,
        Format::Json
    );
    assert!(!config(&[]).rules.du, "sdu's table keeps its own counting");
    assert!(config(&["--du", "shared"]).rules.du);
}

#[test]
fn du_texts_for_du_errors() {
    // du's `quote` (gnulib's locale quotes) gives ‘x’ in a UTF-8 locale:
    // compared as the C locale prints it.
    let c_quotes = |s: String| s.replace(['\u{2018}', '\u{2019}'], "'");
    let e = |args: &[&str]| {
        let mut e = du_resolved(args).unwrap_err();
        e.lines = e.lines.into_iter().map(c_quotes).collect();
        e
    };
    let one = |args: &[&str]| {
        let e = e(args);
        (e.to_string(), e.try_help)
    };
    assert_eq!(
        one(&["-d", "-1"]),
        ("invalid maximum depth '-1'".into(), true)
    );
    assert_eq!(
        e(&["-d", "x", "-d", "0x1", "-d", "y"]).lines,
        ["invalid maximum depth 'x'", "invalid maximum depth 'y'"]
    );
    assert_eq!(one(&["-tX"]), ("invalid -t argument 'X'".into(), false));
    assert_eq!(
        one(&["--thr=1Q"]),
        ("invalid suffix in --threshold argument '1Q'".into(), false)
    );
    assert_eq!(
        one(&["-t", "-0"]),
        ("invalid --threshold argument '-0'".into(), false)
    );
    assert_eq!(
        one(&["--block=0"]),
        ("invalid --block-size argument '0'".into(), false)
    );
    assert_eq!(
        one(&["-s", "-d", "1"]),
        (
            "warning: summarizing conflicts with --max-depth=1".into(),
            true
        )
    );
    assert_eq!(
        one(&["-X", "missing"]),
        ("missing: No such file or directory".into(), true)
    );
    assert_eq!(
        one(&["--files0-from=f", "x"]),
        (
            "extra operand 'x'\nfile operands cannot be combined with --files0-from".into(),
            true
        )
    );
    assert_eq!(
        one(&["--files0-from=missing"]),
        (
            "cannot open 'missing' for reading: No such file or directory".into(),
            false
        )
    );
    assert_eq!(
        one(&["--files0-from=dir"]),
        ("dir: read error: Is a directory".into(), false)
    );
    assert!(
        e(&["--time=x"])
            .to_string()
            .starts_with("invalid argument 'x' for '--time'")
    );
    let r = du_resolved(&["-s", "-d", "0", ""]).unwrap();
    assert_eq!(
        r.notes,
        [
            Note::Warning("warning: summarizing is the same as using --max-depth=0".into()),
            Note::Error("invalid zero-length file name".into())
        ]
    );
    assert!(r.config.walk.roots.is_empty());
}

#[test]
fn to_free_refuses_a_skipped_name() {
    let e = du_resolved(&["--to-free", "1", "a", ""]).unwrap_err();
    assert_eq!(e.to_string(), "--to-free: invalid zero-length file name");
    let e = resolve_in(&env(&[]), &["--to-free", "1", "--files0-from", "zero"]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "--to-free: zero:2: invalid zero-length file name"
    );
}

#[test]
fn du_options_reach_the_config() {
    let c = du_resolved(&[
        "--files0-from=-",
        "-X",
        "excl",
        "--exclude",
        "z",
        "-S",
        "-D",
        "-t",
        "-2k",
    ])
    .unwrap()
    .config;
    assert_eq!(
        c.walk.roots,
        [b"a".to_vec(), b"b".to_vec()],
        "read from stdin"
    );
    assert!(c.rules.separate_dirs);
    assert!(c.walk.follow_args && !c.walk.follow_links);
    assert_eq!(c.report.threshold, Some(-2048));
    for name in ["x", "y", "z"] {
        assert!(c.walk.excludes.matches(name.as_bytes()), "{name}");
    }
    let c = du_resolved(&["-H", "-L"]).unwrap().config;
    assert!(c.walk.follow_links && !c.walk.follow_args);
    let c = du_resolved(&["--time=use", "--time-style=+%s"])
        .unwrap()
        .config;
    assert_eq!(c.walk.time, Some(sdu::figures::TimeField::Access));
    assert_eq!(c.report.time.unwrap().format_string(), "%s");
    let mut e = env(&[("TIME_STYLE", "posix-iso")]);
    e.cpus = 1;
    let c = resolved(&e, true, &["--time"]).unwrap().config;
    assert_eq!(c.report.time.unwrap().format_string(), "%Y-%m-%d");
}

#[test]
fn du_options_in_the_table() {
    let c = config(&["--inodes", "--time"]);
    assert_eq!(c.report.format, Format::Text);
    assert_eq!(
        c.report.columns,
        [
            Figure::Total,
            Figure::Exclusive,
            Figure::Shared,
            Figure::Reclaimable,
            Figure::Inodes
        ]
    );
    assert!(c.report.time.is_some());
    assert_eq!(config(&["-t", "1M"]).report.threshold, Some(1 << 20));
    assert_eq!(config(&["-A"]).report.columns[0], Figure::Apparent);
}

#[test]
fn older_than_is_a_duration_ago_or_a_date_in_tz() {
    let at = |vars: &[(&str, &str)], when: &str| {
        resolve_in(&env(vars), &["--older-than", when]).map(|c| {
            assert_eq!(c.walk.time, Some(TimeField::Modification), "{when}");
            c.report.older_than.map(|t| t.secs)
        })
    };
    let now = 1_720_978_319;
    assert_eq!(at(&[], "90s").unwrap(), Some(now - 90));
    assert_eq!(at(&[], "2m").unwrap(), Some(now - 120));
    assert_eq!(at(&[], "1d").unwrap(), Some(now - 86_400));
    assert_eq!(at(&[], "2w").unwrap(), Some(now - 14 * 86_400));
    assert_eq!(at(&[], "1y").unwrap(), Some(now - 365 * 86_400));
    assert_eq!(
        at(&[("TZ", "UTC0")], "2024-07-14").unwrap(),
        Some(1_720_915_200)
    );
    assert_eq!(
        at(&[("TZ", "UTC0")], "2024-07-14 17:31").unwrap(),
        Some(1_720_978_260)
    );
    assert_eq!(
        at(&[("TZ", "CET-1")], "2024-07-14 17:31:59").unwrap(),
        Some(1_720_978_319 - 3600)
    );
    for bad in [
        "",
        "1",
        "d",
        "1.5d",
        "-1d",
        "1dd",
        "99999999999999999y",
        "2024-02-30",
    ] {
        let e = at(&[], bad).unwrap_err();
        assert_eq!(e.lines, [format!("invalid --older-than '{bad}'")], "{bad}");
    }
    // --time=WORD's time, and the column only with --time.
    let c = config(&["--older-than", "1d", "--time=ctime"]);
    assert_eq!(c.walk.time, Some(TimeField::Status));
    assert!(config(&["--older-than", "1d"]).report.time.is_none());
}

#[test]
fn files_only_keeps_files_in_the_walk() {
    let c = config(&["--files-only"]);
    assert!(c.walk.all && c.report.files_only);
    let c = config(&["--reverse", "--exclude-caches", "--exclude-kernfs"]);
    assert!(c.report.reverse && c.walk.exclude_caches && c.walk.exclude_kernfs);
}
