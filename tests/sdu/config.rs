//! The config files (`$XDG_CONFIG_HOME/sdu/config`, else
//! `~/.config/sdu/config`): each option they may hold changes the output
//! as the same flag on the command line does; the command line wins; a bad
//! line names the file and the line and exits 2; `--ignore-config`, and
//! du's mode, read none.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::util::*;

/// `root/zbig/data` 300 KB, `root/asmall/data` 20 KB, `root/mid.bin`
/// 100 KB, and `root/cache/` (50 KB) holding a cache directory tag.
fn tree(dir: &Path) {
    let root = dir.join("root");
    for d in ["zbig", "asmall", "cache"] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    write_file(&root.join("zbig/data"), 300_000);
    write_file(&root.join("asmall/data"), 20_000);
    write_file(&root.join("mid.bin"), 100_000);
    write_file(&root.join("cache/c"), 50_000);
    fs::write(
        root.join("cache/CACHEDIR.TAG"),
        "Signature: 8a477f597d28d172789f06886806bc55\n",
    )
    .unwrap();
}

/// sdu `args` in `dir`, with `XDG_CONFIG_HOME` at `dir/xdg`, whose
/// `sdu/config` holds `config` (no file when `None`).
fn sdu(dir: &Path, config: Option<&str>, args: &[&str]) -> Output {
    let xdg = dir.join("xdg");
    let _ = fs::remove_dir_all(&xdg);
    if let Some(text) = config {
        fs::create_dir_all(xdg.join("sdu")).unwrap();
        fs::write(xdg.join("sdu/config"), text).unwrap();
    }
    run(Command::new(sdu_bin())
        .current_dir(dir)
        .env("XDG_CONFIG_HOME", &xdg)
        .env_remove("NO_COLOR")
        .args(args))
}

/// Each option a file gives: the output is the same flag's on the command
/// line, and differs from the output without it.
#[test]
fn each_option_of_the_file_is_its_flags_default() {
    let t = TestDir::new();
    tree(t.path());
    fs::write(t.path().join("ignore"), "zb*\n").unwrap();
    for (line, flags, args) in [
        ("--sort name", &["--sort", "name"][..], &["-d1", "root"][..]),
        ("--exclude zbig", &["--exclude", "zbig"], &["-d1", "root"]),
        ("-X ignore", &["-X", "ignore"], &["-d1", "root"]),
        ("--exclude-caches", &["--exclude-caches"], &["-d1", "root"]),
        (
            "--color=always",
            &["--color", "always"],
            &["--tree", "root"],
        ),
        ("--color dark", &["--color", "auto"], &["--tree", "root"]),
        ("-j 13", &["-j", "13"], &["-s", "--stats", "root"]),
    ] {
        let plain = sdu(t.path(), None, args);
        let config = format!("# {line}: a comment first\n\n{line}\n");
        let from_file = sdu(t.path(), Some(&config), args);
        let from_flag = sdu(t.path(), None, &[flags, args].concat());
        for o in [&plain, &from_file, &from_flag] {
            assert_eq!(o.code, Some(0), "{o:?}");
        }
        assert_eq!(
            from_file.stdout_str(),
            from_flag.stdout_str(),
            "{line}: {from_file:?}"
        );
        // --stats: the threads line (the rest holds timings).
        let threads = |o: &Output| {
            o.stderr
                .lines()
                .find(|l| l.trim_start().starts_with("threads "))
                .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        };
        match line {
            // Colour only on a terminal: dark is auto's.
            "--color dark" => assert!(!from_file.stdout_str().contains('\x1b'), "{line}"),
            "-j 13" => {
                assert_eq!(
                    threads(&from_file).as_deref(),
                    Some("threads 13"),
                    "{from_file:?}"
                );
                assert_eq!(threads(&from_flag), threads(&from_file));
                assert_ne!(threads(&plain), threads(&from_file), "{plain:?}");
            }
            _ => {
                assert_eq!(from_file.stderr, "", "{line}");
                assert_ne!(from_file.stdout_str(), plain.stdout_str(), "{line}");
            }
        }
    }
}

/// The command line wins: its own value, or the opposite flag; patterns
/// add up, as in ncdu.
#[test]
fn the_command_line_wins() {
    let t = TestDir::new();
    tree(t.path());
    let config = Some("--sort name\n--exclude-caches\n--exclude zbig\n--color always\n");
    let from = |args: &[&str]| sdu(t.path(), config, args).stdout_str().to_owned();
    let plain = |args: &[&str]| sdu(t.path(), None, args).stdout_str().to_owned();
    assert_eq!(
        from(&[
            "-d1",
            "--sort",
            "total",
            "--include-caches",
            "--exclude",
            "asmall",
            "root"
        ]),
        plain(&[
            "-d1",
            "--sort",
            "total",
            "--exclude",
            "zbig",
            "--exclude",
            "asmall",
            "root"
        ])
    );
    assert_eq!(
        from(&["--tree", "--color", "never", "root"]),
        plain(&[
            "--tree",
            "--exclude-caches",
            "--exclude",
            "zbig",
            "--sort",
            "name",
            "root"
        ])
    );
}

#[test]
fn ignore_config_and_dus_mode_read_no_file() {
    let t = TestDir::new();
    tree(t.path());
    let config = Some("--exclude zbig\n--bogus\n");
    let plain = sdu(t.path(), None, &["-d1", "root"]);
    let ignored = sdu(t.path(), config, &["--ignore-config", "-d1", "root"]);
    ignored.assert_ok();
    assert_eq!(ignored.stdout_str(), plain.stdout_str());
    // --du is du: no file, as du reads none.
    let du = sdu(t.path(), config, &["--du", "total", "-d1", "root"]);
    du.assert_ok();
    assert!(du.stdout_str().contains("root/zbig"), "{du:?}");
}

#[test]
fn a_bad_line_names_the_file_and_the_line_and_exits_2() {
    let t = TestDir::new();
    tree(t.path());
    let file = t.path().join("xdg/sdu/config");
    for (text, says) in [
        (
            "-x\n# fine so far\n--graph-style hash\n",
            "3: unrecognized option '--graph-style'",
        ),
        ("--json\n", "1: --json is not read from a config file"),
        (
            "--sort size\n",
            "1: invalid value 'size' for '--sort <FIGURE>'",
        ),
        ("root\n", "1: not an option"),
    ] {
        let o = sdu(t.path(), Some(text), &["-s", "root"]);
        assert_eq!(o.code, Some(2), "{o:?}");
        assert!(o.stdout.is_empty(), "{o:?}");
        let first = o.stderr.lines().next().unwrap_or("");
        assert!(
            first.starts_with(&format!("sdu: config file {}:", file.display())),
            "{o:?}"
        );
        assert!(first.contains(says), "{says}: {o:?}");
        assert!(
            o.stderr.contains("--ignore-config reads no config file"),
            "{o:?}"
        );
    }
    // @ first: ncdu's line that may fail.
    let o = sdu(
        t.path(),
        Some("@--graph-style hash\n--sort name\n"),
        &["-d1", "root"],
    );
    o.assert_ok();
    assert!(
        o.stdout_str().lines().nth(1).unwrap().ends_with(" root"),
        "{o:?}"
    );
}
