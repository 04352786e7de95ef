//! The browser's flags ([`BrowseFlags`]: the keys, the columns, the order)
//! and the config files, as ncdu 2 has them: `/etc/sdu.conf`, then
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

use clap::{Args, ValueEnum};

use super::arg_id::ArgId;
use super::args::{Cli, Stop, parse_from};
use super::resolve::Env;
use super::usage::UsageError;

/// The keys of the browser.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum Profile {
    /// sdu's: `t x S R` sort by the four figures, `a` shows or hides
    /// files, `g` `G` go to the first and last entry.
    #[default]
    Sdu,
    /// ncdu's: `a` apparent size, `t` directories first, `g` graph and
    /// percentage; Esc quits in neither.
    Ncdu,
}

/// When `--color` colours (ncdu's words too: `off` is never, `dark` and
/// `dark-bg` colour as `auto` does).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ColorWhen {
    #[value(alias = "dark", alias = "dark-bg")]
    Auto,
    Always,
    #[value(alias = "off")]
    Never,
}

/// The browser's flags, and `--ignore-config`; each pair's last one wins,
/// as in ncdu, so that the command line can undo what a config file set.
#[derive(Args, Debug, Default)]
#[command(next_help_heading = "Browser (-i) and config files")]
pub(crate) struct BrowseFlags {
    /// The browser's keys: ncdu (a apparent size, t directories first, g
    /// graph and percentage, f files) or sdu (the default: a files, t
    /// Total, g first entry)
    #[arg(long, value_name = "PROFILE", value_enum)]
    pub(crate) keys: Option<Profile>,

    /// Show the item count column in the browser (c shows or hides it)
    #[arg(long, overrides_with = "hide_itemcount")]
    pub(crate) show_itemcount: bool,

    /// Hide the item count column (the default)
    #[arg(long, overrides_with = "show_itemcount")]
    pub(crate) hide_itemcount: bool,

    /// Show the modification time column in the browser (m)
    #[arg(long, overrides_with = "hide_mtime")]
    pub(crate) show_mtime: bool,

    /// Hide the modification time column (the default)
    #[arg(long, overrides_with = "show_mtime")]
    pub(crate) hide_mtime: bool,

    /// Show the bar column in the browser (the default)
    #[arg(long, overrides_with = "hide_graph")]
    pub(crate) show_graph: bool,

    /// Hide the bar column (ncdu's g cycles graph, percentage, both, none)
    #[arg(long, overrides_with = "show_graph")]
    pub(crate) hide_graph: bool,

    /// Show the percentage column in the browser (the default)
    #[arg(long, overrides_with = "hide_percent")]
    pub(crate) show_percent: bool,

    /// Hide the percentage column
    #[arg(long, overrides_with = "show_percent")]
    pub(crate) hide_percent: bool,

    /// List directories before files in the browser (ncdu's t)
    #[arg(long, overrides_with = "no_group_directories_first")]
    pub(crate) group_directories_first: bool,

    /// Directories and files together, in the sort's order (the default)
    #[arg(long, overrides_with = "group_directories_first")]
    pub(crate) no_group_directories_first: bool,

    /// Cross filesystems (the default): undoes -x from a config file
    #[arg(long, overrides_with = "one_file_system")]
    pub(crate) cross_file_system: bool,

    /// Count directories with a cache tag (the default): undoes
    /// --exclude-caches
    #[arg(long, overrides_with = "exclude_caches")]
    pub(crate) include_caches: bool,

    /// Count kernel filesystems (the default): undoes --exclude-kernfs
    #[arg(long, overrides_with = "exclude_kernfs")]
    pub(crate) include_kernfs: bool,

    /// Read no config file (/etc/sdu.conf, then $XDG_CONFIG_HOME/sdu/config,
    /// else ~/.config/sdu/config: one option a line, as ncdu's)
    #[arg(long)]
    pub(crate) ignore_config: bool,
}

/// How the browser opens, from its flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct View {
    pub(crate) keys: Profile,
    pub(crate) count: bool,
    pub(crate) time: bool,
    pub(crate) graph: bool,
    pub(crate) percent: bool,
    pub(crate) dirs_first: bool,
}

impl BrowseFlags {
    /// How the browser opens.
    pub(crate) fn view(&self) -> View {
        View {
            keys: self.keys.unwrap_or_default(),
            count: self.show_itemcount,
            time: self.show_mtime,
            graph: !self.hide_graph,
            percent: !self.hide_percent,
            dirs_first: self.group_directories_first,
        }
    }
}

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
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
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
        ArgId::Sort if cli.html.is_none() => cli.sort = from.sort,
        _ => {}
    }
}

#[cfg(test)]
mod tests;
