//! The config files, as ncdu 2 has them: `/etc/sdu.conf`, then
//! `$XDG_CONFIG_HOME/sdu/config` (else `~/.config/sdu/config`), one
//! command-line option a line, `#` comments, `@` before an option that may
//! fail quietly. A file gives defaults ([`with_config`]): a flag on the
//! command line wins over it, and the user's file over the system's.
//!
//! Only the options a user keeps as defaults are read from a file: the
//! browser's, `--sort`, the exclusions, `-x`, `-j` and `--color`. A file
//! that could change what a script reads (`--json`, `--du`, a PATH) would
//! break the script, so those are refused, naming the file and the line;
//! and in du's mode (the name `du`, or `--du`) no file is read at all,
//! since du reads none.

use std::ffi::{OsStr, OsString};
use std::io;

use super::arg_id::ArgId;
use super::args::{Cli, Stop, parse_from};
use super::resolve::Env;
use super::usage::UsageError;

/// The options a config file may give, each with the one it undoes (a
/// command line giving either leaves the file's out).
const READ: &[(ArgId, Option<ArgId>)] = &[
    (ArgId::Keys, None),
    (ArgId::ShowItemcount, Some(ArgId::HideItemcount)),
    (ArgId::HideItemcount, Some(ArgId::ShowItemcount)),
    (ArgId::ShowMtime, Some(ArgId::HideMtime)),
    (ArgId::HideMtime, Some(ArgId::ShowMtime)),
    (ArgId::ShowGraph, Some(ArgId::HideGraph)),
    (ArgId::HideGraph, Some(ArgId::ShowGraph)),
    (ArgId::ShowPercent, Some(ArgId::HidePercent)),
    (ArgId::HidePercent, Some(ArgId::ShowPercent)),
    (
        ArgId::GroupDirectoriesFirst,
        Some(ArgId::NoGroupDirectoriesFirst),
    ),
    (
        ArgId::NoGroupDirectoriesFirst,
        Some(ArgId::GroupDirectoriesFirst),
    ),
    (ArgId::OneFileSystem, Some(ArgId::CrossFileSystem)),
    (ArgId::CrossFileSystem, Some(ArgId::OneFileSystem)),
    (ArgId::ExcludeCaches, Some(ArgId::IncludeCaches)),
    (ArgId::IncludeCaches, Some(ArgId::ExcludeCaches)),
    (ArgId::ExcludeKernfs, Some(ArgId::IncludeKernfs)),
    (ArgId::IncludeKernfs, Some(ArgId::ExcludeKernfs)),
    (ArgId::Exclude, None),
    (ArgId::ExcludeFrom, None),
    (ArgId::Threads, None),
    (ArgId::Color, None),
    (ArgId::Sort, None),
];

/// What a config file may hold, for the message refusing anything else.
const READ_TEXT: &str = "a config file holds the browser's options (--keys, --show-*, --hide-*, \
--group-directories-first), --sort, --exclude, -X, --exclude-caches, --exclude-kernfs, -x, -j and --color";

/// The config files, in the order read: the system's, then the user's.
pub(crate) fn files(env: &Env) -> Vec<OsString> {
    let mut v = vec![OsString::from("/etc/sdu.conf")];
    let non_empty = |n: &str| env.var(n).filter(|v| !v.is_empty());
    if let Some(x) = non_empty("XDG_CONFIG_HOME") {
        v.push(join(&x, "sdu/config"));
    } else if let Some(h) = non_empty("HOME") {
        v.push(join(&h, ".config/sdu/config"));
    }
    v
}

fn join(dir: &OsStr, rest: &str) -> OsString {
    let mut p = std::path::PathBuf::from(dir);
    p.push(rest);
    p.into_os_string()
}

/// `cli` with the config files' options under it: those the command line
/// does not give (nor their opposite), in the files' order, the later
/// winning; `--exclude` and `-X` patterns of the files come before the
/// command line's. None in du's mode or under `--ignore-config`, and
/// none of what the mode given refuses (the exclusions and `-x` with
/// `--import`, `--sort` with `--html`).
///
/// # Errors
/// A file that exists but cannot be read, or a line that is not one
/// option sdu reads from a file, with a value that option takes: the
/// message names the file and the line.
pub(crate) fn with_config(mut cli: Cli, env: &Env) -> Result<Cli, UsageError> {
    if cli.browse.ignore_config || cli.du_mode() {
        return Ok(cli);
    }
    let given: Vec<ArgId> = cli.given.iter().map(|g| g.id).collect();
    let (mut exclude, mut exclude_from) = (Vec::new(), Vec::new());
    for file in files(env) {
        let text = match (env.read)(Some(&file)) {
            Ok(t) => t,
            // None, or one this user may not read (HOME another user's,
            // as under setpriv or sudo): no defaults from it.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound
                        | io::ErrorKind::NotADirectory
                        | io::ErrorKind::PermissionDenied
                ) =>
            {
                continue;
            }
            Err(e) => {
                return Err(bad(&file, None, format!("cannot read it: {e}")));
            }
        };
        for (n, line) in String::from_utf8_lossy(&text).lines().enumerate() {
            let Some((quiet, words)) = words(line) else {
                continue;
            };
            let line_cli = match option(&words) {
                Ok(c) => c,
                Err(_) if quiet => continue,
                Err(why) => return Err(bad(&file, Some(n + 1), why)),
            };
            let id = line_cli.given[0].id;
            let undoes = READ.iter().find(|(i, _)| *i == id).and_then(|(_, u)| *u);
            // Patterns add up; any other option the command line gives wins.
            let adds = matches!(id, ArgId::Exclude | ArgId::ExcludeFrom);
            if !adds && (given.contains(&id) || undoes.is_some_and(|u| given.contains(&u))) {
                continue;
            }
            take(&mut cli, line_cli, id, (&mut exclude, &mut exclude_from));
        }
    }
    if cli.import.is_none() {
        exclude.append(&mut cli.exclude);
        exclude_from.append(&mut cli.exclude_from);
        cli.exclude = exclude;
        cli.exclude_from = exclude_from;
    }
    Ok(cli)
}

/// The error of `file` (at line `n`): what is wrong, and the way past it.
fn bad(file: &OsStr, n: Option<usize>, why: String) -> UsageError {
    let at = match n {
        Some(n) => format!("{}:{n}", file.to_string_lossy()),
        None => file.to_string_lossy().into_owned(),
    };
    UsageError::fatal(format!(
        "config file {at}: {why}\n(--ignore-config reads no config file)"
    ))
}

/// A line's option and value, as ncdu splits them: blanks around, `@`
/// first for a line whose failure is ignored, the option up to the first
/// blank or `=`, the value after it; none for a blank line or a comment.
fn words(line: &str) -> Option<(bool, Vec<String>)> {
    let mut l = line.trim();
    let quiet = l.starts_with('@');
    if quiet {
        l = &l[1..];
    }
    if l.is_empty() || l.starts_with('#') {
        return None;
    }
    Some(match l.find([' ', '\t', '=']) {
        Some(i) => (
            quiet,
            vec![l[..i].to_owned(), l[i + 1..].trim_start().to_owned()],
        ),
        None => (quiet, vec![l.to_owned()]),
    })
}

/// The one option of a line, parsed as on the command line.
fn option(words: &[String]) -> Result<Cli, String> {
    let args = std::iter::once("sdu").chain(words.iter().map(String::as_str));
    let cli = match parse_from(args, false) {
        Ok(c) => c,
        Err(Stop::Usage { error, .. }) => return Err(error.lines.join("; ")),
        Err(Stop::Clap(_)) => return Err(format!("{} is not read from a config file", words[0])),
    };
    let [g] = &cli.given[..] else {
        return Err(format!("not an option: {READ_TEXT}"));
    };
    if g.id == ArgId::Threshold {
        return Err(format!(
            "{} is du's --threshold, not read from a config file (ncdu's -t N is --threads N)",
            g.spelled
        ));
    }
    if !READ.iter().any(|(i, _)| *i == g.id) {
        return Err(format!(
            "{} is not read from a config file: {READ_TEXT}",
            g.spelled
        ));
    }
    if let Some(p) = cli.paths.first() {
        return Err(format!(
            "{} takes no value ({})",
            g.spelled,
            p.to_string_lossy()
        ));
    }
    Ok(cli)
}

/// Option `id` of a config file's line (`from`) into `cli`; the patterns
/// into `excludes` (`--exclude`, `-X`), which go before the command line's.
fn take(cli: &mut Cli, from: Cli, id: ArgId, excludes: (&mut Vec<OsString>, &mut Vec<OsString>)) {
    let (b, f) = (&mut cli.browse, from.browse);
    // What a saved scan or the page refuses is no default of theirs.
    let import = cli.import.is_some();
    match id {
        ArgId::Keys => b.keys = f.keys,
        ArgId::ShowItemcount | ArgId::HideItemcount => {
            (b.show_itemcount, b.hide_itemcount) = (f.show_itemcount, f.hide_itemcount);
        }
        ArgId::ShowMtime | ArgId::HideMtime => {
            (b.show_mtime, b.hide_mtime) = (f.show_mtime, f.hide_mtime);
        }
        ArgId::ShowGraph | ArgId::HideGraph => {
            (b.show_graph, b.hide_graph) = (f.show_graph, f.hide_graph);
        }
        ArgId::ShowPercent | ArgId::HidePercent => {
            (b.show_percent, b.hide_percent) = (f.show_percent, f.hide_percent);
        }
        ArgId::GroupDirectoriesFirst | ArgId::NoGroupDirectoriesFirst => {
            b.group_directories_first = f.group_directories_first;
            b.no_group_directories_first = f.no_group_directories_first;
        }
        ArgId::OneFileSystem | ArgId::CrossFileSystem if !import => {
            cli.one_file_system = from.one_file_system;
        }
        ArgId::ExcludeCaches | ArgId::IncludeCaches if !import => {
            cli.exclude_caches = from.exclude_caches;
        }
        ArgId::ExcludeKernfs | ArgId::IncludeKernfs if !import => {
            cli.exclude_kernfs = from.exclude_kernfs;
        }
        ArgId::Exclude => excludes.0.extend(from.exclude),
        ArgId::ExcludeFrom => excludes.1.extend(from.exclude_from),
        ArgId::Threads => cli.threads = from.threads,
        ArgId::Color => cli.color = from.color,
        ArgId::Sort if cli.page.html.is_none() => cli.sort = from.sort,
        _ => {}
    }
}

#[cfg(test)]
mod tests;
