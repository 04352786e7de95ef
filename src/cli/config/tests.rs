//! The unit tests of [`super`]: which file is read, how a line splits,
//! what the command line keeps, and the errors, on a fake [`Env`].

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;

use super::super::args::ColorWhen;
use super::super::browse_flags::Profile;
use super::*;

/// An environment with `HOME=/home/u` and the user's config file holding
/// `user` (none when `None`); `/etc/sdu.conf` holds `system`.
fn env(system: Option<&'static str>, user: Option<&'static str>) -> Env {
    let vars: HashMap<&str, OsString> = [("HOME", OsString::from("/home/u"))].into();
    Env {
        vars: Box::new(move |n| vars.get(n).cloned()),
        read: Box::new(move |path| {
            let text = match path.map(OsStr::as_bytes) {
                Some(b"/etc/sdu.conf") => system,
                Some(b"/home/u/.config/sdu/config") => user,
                _ => None,
            };
            text.map(|t| t.as_bytes().to_vec())
                .ok_or_else(|| io::Error::from_raw_os_error(2))
        }),
        open: Box::new(|_| Err(io::Error::from_raw_os_error(2))),
        stdout_terminal: false,
        stdout_columns: None,
        stderr_terminal: false,
        cpus: 4,
        now: 0,
    }
}

fn cli(env: &Env, args: &[&str]) -> Result<Cli, UsageError> {
    let c = parse_from(std::iter::once("sdu").chain(args.iter().copied()), false)
        .unwrap_or_else(|e| panic!("{args:?}: {e:?}"));
    with_config(c, env)
}

#[test]
fn the_files_are_the_systems_then_the_users() {
    let e = env(None, None);
    assert_eq!(files(&e), ["/etc/sdu.conf", "/home/u/.config/sdu/config"]);
    let vars: HashMap<&str, OsString> = [
        ("HOME", OsString::from("/home/u")),
        ("XDG_CONFIG_HOME", OsString::from("/x")),
    ]
    .into();
    let e = Env {
        vars: Box::new(move |n| vars.get(n).cloned()),
        ..env(None, None)
    };
    assert_eq!(files(&e), ["/etc/sdu.conf", "/x/sdu/config"]);
}

#[test]
fn lines_split_as_ncdus() {
    assert_eq!(words("  # a comment"), None);
    assert_eq!(words("   "), None);
    assert_eq!(words("-x"), Some((false, vec!["-x".into()])));
    assert_eq!(
        words("--exclude  .git "),
        Some((false, vec!["--exclude".into(), ".git".into()]))
    );
    assert_eq!(
        words("--color=dark"),
        Some((false, vec!["--color".into(), "dark".into()]))
    );
    assert_eq!(
        words("@--graph-style hash"),
        Some((true, vec!["--graph-style".into(), "hash".into()]))
    );
}

#[test]
fn each_option_is_a_default_the_user_file_and_the_command_line_win() {
    let system = "--keys sdu\n-j 2\n--exclude '*.o'\n--color never\n--sort name\n";
    let user = "# ncdu's keys\n--keys ncdu\n--show-itemcount\n--hide-graph\n\
                --group-directories-first\n-x\n--exclude-caches\n-X ignore\n--exclude .git\n";
    let e = env(Some(system), Some(user));
    let c = cli(&e, &[]).unwrap();
    let v = c.browse.view();
    assert_eq!(v.keys, Profile::Ncdu);
    assert!(v.count && !v.time && !v.graph && v.percent && v.dirs_first);
    assert_eq!(c.threads, Some(2));
    assert_eq!(c.color, ColorWhen::Never);
    assert!(c.one_file_system && c.exclude_caches);
    assert_eq!(c.exclude, ["'*.o'", ".git"]);
    assert_eq!(c.exclude_from, ["ignore"]);
    assert!(matches!(c.sort, Some(super::super::args::SortBy::Name)));
    // The command line wins, an opposite flag too; its patterns add.
    let c = cli(
        &e,
        &[
            "--keys=sdu",
            "-j3",
            "--hide-itemcount",
            "--show-graph",
            "--cross-file-system",
            "--include-caches",
            "--exclude",
            "tmp",
            "--color=always",
            "--no-group-directories-first",
        ],
    )
    .unwrap();
    let v = c.browse.view();
    assert_eq!(v.keys, Profile::Sdu);
    assert!(!v.count && v.graph && !v.dirs_first);
    assert_eq!(c.threads, Some(3));
    assert_eq!(c.color, ColorWhen::Always);
    assert!(!c.one_file_system && !c.exclude_caches);
    assert_eq!(c.exclude, ["'*.o'", ".git", "tmp"]);
}

#[test]
fn ignore_config_and_dus_mode_read_nothing() {
    let e = env(None, Some("--keys ncdu\n-x\n"));
    for args in [&["--ignore-config"][..], &["--du", "total"]] {
        let c = cli(&e, args).unwrap();
        assert_eq!(c.browse.view().keys, Profile::Sdu, "{args:?}");
        assert!(!c.one_file_system, "{args:?}");
    }
    // What the mode refuses is left out: the exclusions under --import,
    // the sort under --html.
    let e = env(None, Some("-x\n--exclude a\n--sort name\n"));
    let c = cli(&e, &["--import", "f"]).unwrap();
    assert!(!c.one_file_system && c.exclude.is_empty());
    let c = cli(&e, &["--html", "p.html"]).unwrap();
    assert!(c.sort.is_none());
}

#[test]
fn ncdus_colour_words_are_read() {
    for (word, want) in [
        ("off", ColorWhen::Never),
        ("dark", ColorWhen::Auto),
        ("dark-bg", ColorWhen::Auto),
    ] {
        let text: &'static str = Box::leak(format!("--color {word}\n").into_boxed_str());
        let c = cli(&env(None, Some(text)), &[]).unwrap();
        assert_eq!(c.color, want, "{word}");
    }
}

#[test]
fn a_bad_line_names_the_file_and_the_line() {
    for (text, says) in [
        ("-x\n--bogus\n", "unrecognized option '--bogus'"),
        ("\n--json\n", "--json is not read from a config file"),
        ("# c\n/srv\n", "not an option"),
        ("-x yes\n", "-x takes no value (yes)"),
        ("--keys\n", "requires an argument"),
        ("\n--keys vi\n", "invalid value 'vi'"),
        ("--ignore-config\n", "is not read from a config file"),
        ("-t 4\n", "ncdu's -t N is --threads N"),
    ] {
        let e = env(None, Some(text));
        let err = cli(&e, &[]).unwrap_err().to_string();
        let n = text.lines().count();
        assert!(
            err.starts_with(&format!("config file /home/u/.config/sdu/config:{n}: ")),
            "{text:?}: {err}"
        );
        assert!(err.contains(says), "{text:?}: {err}");
        assert!(
            err.ends_with("(--ignore-config reads no config file)"),
            "{err}"
        );
        // --ignore-config gets past it.
        assert!(cli(&e, &["--ignore-config"]).is_ok());
    }
    // @ first: a line that may fail, as in ncdu.
    let e = env(None, Some("@--graph-style hash\n-x\n"));
    assert!(cli(&e, &[]).unwrap().one_file_system);
}

#[test]
fn a_file_this_user_may_not_read_gives_nothing_and_another_error_stops() {
    for (errno, fails) in [(13, false), (2, false), (20, false), (21, true), (5, true)] {
        let e = Env {
            read: Box::new(move |_| Err(io::Error::from_raw_os_error(errno))),
            ..env(None, None)
        };
        match cli(&e, &["-x"]) {
            Ok(c) => assert!(!fails && c.one_file_system, "{errno}"),
            Err(err) => {
                assert!(fails, "{errno}: {err}");
                assert!(
                    err.to_string()
                        .starts_with("config file /etc/sdu.conf: cannot read it: "),
                    "{err}"
                );
            }
        }
    }
}
