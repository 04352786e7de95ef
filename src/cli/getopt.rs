//! The command line read as glibc's `getopt_long` reads du's, before clap
//! sees it: abbreviated long options (`--max=2`), values that start with
//! `-` (`-d -1`, `-t -0`), operands among the options, and getopt's own
//! messages for what it refuses (`du: unrecognized option '--foo'`,
//! `du: option requires an argument -- 't'`), which scripts and
//! coreutils' tests compare byte for byte.
//!
//! [`scan`] is the one pass over the command line. It takes the options
//! from clap's [`Command`], so there is one list of them, and gives back
//! what clap needs: the arguments spelled out in full (every option as
//! `--name=VALUE` or `-c`, then `--`, then the operands), or, when it
//! refused an argument, what came before it and the refused argument as
//! typed, so that `--help` before it still helps (the refusal itself is
//! worded by getopt in both modes). With them come
//! each option as it was spelled, for the messages that name it (`invalid
//! -t argument` or `invalid --threshold argument`), and getopt's own
//! messages, for du's mode.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use clap::Command;

use super::arg_id::ArgId;

/// du's long options, in du's order (`long_options` in du.c): in du mode an
/// abbreviation is resolved among these first, so that sdu's own options
/// never make a du abbreviation ambiguous, and the possibilities of an
/// ambiguous one are listed in du's order.
pub(crate) const DU_LONGS: [&str; 25] = [
    "all",
    "apparent-size",
    "block-size",
    "bytes",
    "count-links",
    "dereference",
    "dereference-args",
    "exclude",
    "exclude-from",
    "files0-from",
    "human-readable",
    "inodes",
    "si",
    "max-depth",
    "null",
    "no-dereference",
    "one-file-system",
    "separate-dirs",
    "summarize",
    "total",
    "threshold",
    "time",
    "time-style",
    "help",
    "version",
];

/// Whether an option takes a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Takes {
    No,
    Required,
    /// Only after `=` (`--time[=WORD]`).
    Optional,
}

/// One option of the command.
#[derive(Debug)]
struct Opt {
    id: ArgId,
    long: Option<String>,
    short: Option<char>,
    takes: Takes,
}

/// One option as given on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GivenOption {
    /// Which argument of the command it is.
    pub(crate) id: ArgId,
    /// As spelled in messages: `-t`, or `--threshold` (in full, even when
    /// abbreviated, as getopt does).
    pub(crate) spelled: String,
    pub(crate) value: Option<OsString>,
}

/// The command line, read.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    /// The arguments for clap, the program name first. When getopt took
    /// them all: the options in full, `--`, the operands. When it refused
    /// one: the options (in full) and operands before it, in their order,
    /// then the refused argument as typed, on which clap fails with its
    /// own words for it.
    pub(crate) args: Vec<OsString>,
    /// The options in the order given.
    pub(crate) given: Vec<GivenOption>,
    /// getopt's messages, without the program name (`unrecognized option
    /// '--foo'`); getopt goes on after each, and du then fails.
    pub(crate) errors: Vec<String>,
    /// The option that ended the command line without the value it takes
    /// (`--du` last): refused, and not in `given`.
    pub(crate) lacking: Option<ArgId>,
}

#[cfg(test)]
impl Scan {
    /// The options given with this id, in order.
    pub(crate) fn of(&self, id: ArgId) -> impl Iterator<Item = &GivenOption> {
        self.given.iter().filter(move |g| g.id == id)
    }
}

fn options(cmd: &Command) -> Vec<Opt> {
    cmd.get_arguments()
        .filter(|a| !a.is_positional())
        .map(|a| {
            let takes = if !a.get_action().takes_values() {
                Takes::No
            } else if a.is_require_equals_set() {
                Takes::Optional
            } else {
                Takes::Required
            };
            Opt {
                id: ArgId::of(a.get_id()).expect("an argument of Cli"),
                long: a.get_long().map(str::to_owned),
                short: a.get_short(),
                takes,
            }
        })
        .collect()
}

/// Where the pieces of the command line were, for what clap is handed.
#[derive(Default)]
struct Places {
    /// For each option of [`Scan::given`]: the index in the arguments of
    /// the one it came from, and whether its value was the next argument.
    options: Vec<(usize, bool)>,
    /// The operands, with their indexes.
    operands: Vec<(usize, OsString)>,
    /// The index of the first argument refused.
    refused: Option<usize>,
}

/// Reads `args` (the program name first) as getopt_long would, with the
/// options of `cmd`. `du` resolves abbreviations among [`DU_LONGS`] first.
pub(crate) fn scan(cmd: &Command, args: &[OsString], du: bool) -> Scan {
    let opts = options(cmd);
    let mut scan = Scan::default();
    let mut places = Places::default();
    let mut i = 1;
    while i < args.len() {
        let at = i;
        let arg = args[at].as_bytes();
        i += 1;
        if arg == b"--" {
            places
                .operands
                .extend((i..args.len()).map(|j| (j, args[j].clone())));
            break;
        }
        let errors = scan.errors.len();
        if let Some(rest) = arg.strip_prefix(b"--") {
            long_option(&opts, rest, du, args, &mut i, &mut scan);
        } else if arg.len() > 1 && arg[0] == b'-' {
            short_options(&opts, &arg[1..], args, &mut i, &mut scan);
        } else {
            places.operands.push((at, args[at].clone()));
        }
        // Only the last option of an argument can take the next as value.
        let new = scan.given.len() - places.options.len();
        places
            .options
            .extend((1..=new).map(|k| (at, k == new && i > at + 1)));
        if places.refused.is_none() && scan.errors.len() > errors {
            places.refused = Some(at);
        }
    }
    scan.args = for_clap(&opts, args, &scan.given, places);
    scan
}

/// What clap parses ([`Scan::args`]), from the options `given` and where
/// they and the operands were in `args`.
fn for_clap(
    opts: &[Opt],
    args: &[OsString],
    given: &[GivenOption],
    places: Places,
) -> Vec<OsString> {
    let opt = |g: &GivenOption| {
        opts.iter()
            .find(|o| o.id == g.id)
            .expect("an option of cmd")
    };
    let mut clap = vec![args.first().cloned().unwrap_or_else(|| "sdu".into())];
    let Some(r) = places.refused else {
        clap.extend(
            given
                .iter()
                .map(|g| spelled_out(opt(g), g.value.as_deref())),
        );
        clap.push("--".into());
        clap.extend(places.operands.into_iter().map(|(_, o)| o));
        return clap;
    };
    let mut before: Vec<(usize, Vec<OsString>)> = given
        .iter()
        .zip(places.options)
        .filter(|&(_, (at, _))| at < r)
        .map(|(g, (at, next))| (at, shaped_as_typed(opt(g), g.value.as_deref(), next)))
        .collect();
    before.extend(
        places
            .operands
            .into_iter()
            .filter(|&(at, _)| at < r)
            .map(|(at, o)| (at, vec![o])),
    );
    // Stable: the options of one cluster keep their order.
    before.sort_by_key(|&(at, _)| at);
    clap.extend(before.into_iter().flat_map(|(_, a)| a));
    clap.push(args[r].clone());
    clap
}

/// Option `o` with `value` for clap before a refused argument: spelled in
/// full, its value a separate argument when it was typed so (`next`) and
/// clap can read it so (it is not a `-x`, which clap takes for an option).
/// clap then reads these arguments as it reads them typed: a value typed
/// apart waits, and clap drops it unchecked on meeting the refused
/// argument, whose refusal is then what it words.
fn shaped_as_typed(o: &Opt, value: Option<&OsStr>, next: bool) -> Vec<OsString> {
    match value {
        Some(v) if next && !(v.len() > 1 && v.as_bytes()[0] == b'-') => {
            vec![spelled_out(o, None), v.to_owned()]
        }
        _ => vec![spelled_out(o, value)],
    }
}

/// Option `o` with `value` as clap reads it unambiguously: `--name=VALUE`,
/// `--name`, or `-c` for an option with no long name.
fn spelled_out(o: &Opt, value: Option<&OsStr>) -> OsString {
    let mut a = match (&o.long, o.short) {
        (Some(l), _) => format!("--{l}").into_bytes(),
        (None, Some(c)) => format!("-{c}").into_bytes(),
        (None, None) => unreachable!("an option has a long or a short name"),
    };
    if let Some(v) = value {
        if o.long.is_some() {
            a.push(b'=');
        }
        a.extend_from_slice(v.as_bytes());
    }
    OsString::from_vec(a)
}

/// `--name`, `--name=value`, `--abbrev...` (`rest` is after the `--`).
fn long_option(
    opts: &[Opt],
    rest: &[u8],
    du: bool,
    args: &[OsString],
    i: &mut usize,
    scan: &mut Scan,
) {
    let shown = String::from_utf8_lossy(rest);
    let (name, value) = match rest.iter().position(|&b| b == b'=') {
        Some(p) => (&rest[..p], Some(&rest[p + 1..])),
        None => (rest, None),
    };
    fn long(o: &Opt) -> Option<&[u8]> {
        o.long.as_deref().map(str::as_bytes)
    }
    let exact = opts.iter().find(|o| long(o) == Some(name));
    let o = match exact {
        Some(o) => o,
        None => {
            let prefix = |o: &&Opt| long(o).is_some_and(|l: &[u8]| l.starts_with(name));
            let mut found: Vec<&Opt> = opts.iter().filter(prefix).collect();
            if du {
                let of_du = |o: &&Opt| DU_LONGS.contains(&o.long.as_deref().unwrap_or(""));
                if found.iter().any(of_du) {
                    found.retain(of_du);
                    found.sort_by_key(|o| {
                        DU_LONGS.iter().position(|&l| Some(l) == o.long.as_deref())
                    });
                }
            }
            match *found.as_slice() {
                [] => {
                    scan.errors.push(format!("unrecognized option '--{shown}'"));
                    return;
                }
                [o] => o,
                [first, ref rest @ ..] if rest.iter().all(|o| o.id == first.id) => first,
                ref all => {
                    let mut m = format!("option '--{shown}' is ambiguous; possibilities:");
                    for o in all {
                        m.push_str(&format!(" '--{}'", o.long.as_deref().unwrap_or("")));
                    }
                    scan.errors.push(m);
                    return;
                }
            }
        }
    };
    let full = format!("--{}", o.long.as_deref().unwrap_or(""));
    let value = match (o.takes, value) {
        (Takes::No, Some(_)) => {
            scan.errors
                .push(format!("option '{full}' doesn't allow an argument"));
            return;
        }
        (Takes::No | Takes::Optional, None) => None,
        (_, Some(v)) => Some(OsStr::from_bytes(v).to_owned()),
        (Takes::Required, None) => match args.get(*i) {
            Some(v) => {
                *i += 1;
                Some(v.clone())
            }
            None => {
                scan.errors
                    .push(format!("option '{full}' requires an argument"));
                scan.lacking = Some(o.id);
                return;
            }
        },
    };
    scan.given.push(GivenOption {
        id: o.id,
        spelled: full,
        value,
    });
}

/// `-abc`, `-B1K`, `-B 1K` (`cluster` is after the `-`).
fn short_options(opts: &[Opt], cluster: &[u8], args: &[OsString], i: &mut usize, scan: &mut Scan) {
    let text = String::from_utf8_lossy(cluster).into_owned();
    for (at, c) in text.char_indices() {
        let Some(o) = opts.iter().find(|o| o.short == Some(c)) else {
            scan.errors.push(format!("invalid option -- '{c}'"));
            continue;
        };
        let spelled = format!("-{c}");
        if o.takes != Takes::Required {
            scan.given.push(GivenOption {
                id: o.id,
                spelled,
                value: None,
            });
            continue;
        }
        let after = &cluster[at + c.len_utf8()..];
        let value = if !after.is_empty() {
            OsStr::from_bytes(after).to_owned()
        } else if let Some(v) = args.get(*i) {
            *i += 1;
            v.clone()
        } else {
            scan.errors
                .push(format!("option requires an argument -- '{c}'"));
            scan.lacking = Some(o.id);
            return;
        };
        scan.given.push(GivenOption {
            id: o.id,
            spelled,
            value: Some(value),
        });
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, ArgAction};

    fn cmd() -> Command {
        Command::new("du")
            .arg(
                Arg::new("all")
                    .short('a')
                    .long("all")
                    .action(ArgAction::SetTrue),
            )
            .arg(Arg::new("threshold").short('t').long("threshold"))
            .arg(
                Arg::new("time")
                    .long("time")
                    .num_args(0..=1)
                    .require_equals(true),
            )
            .arg(Arg::new("time_style").long("time-style"))
            .arg(
                Arg::new("total")
                    .short('c')
                    .long("total")
                    .action(ArgAction::SetTrue),
            )
            .arg(Arg::new("top").short('n').long("top"))
            .arg(
                Arg::new("dereference")
                    .short('L')
                    .long("dereference")
                    .action(ArgAction::SetTrue),
            )
            .arg(
                Arg::new("dereference_args")
                    .short('D')
                    .long("dereference-args")
                    .action(ArgAction::SetTrue),
            )
            .arg(Arg::new("paths").num_args(0..))
    }

    fn run(args: &[&str], du: bool) -> Scan {
        let args: Vec<OsString> = std::iter::once("du")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        scan(&cmd(), &args, du)
    }

    fn spelled(s: &Scan) -> Vec<String> {
        s.args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn options_spelled_out_operands_last() {
        let s = run(
            &[
                "x",
                "-at",
                "-0",
                "--thr",
                "5",
                "y",
                "--time",
                "--time=ctime",
                "-c",
                "--",
                "-z",
            ],
            true,
        );
        assert_eq!(
            spelled(&s),
            [
                "du",
                "--all",
                "--threshold=-0",
                "--threshold=5",
                "--time",
                "--time=ctime",
                "--total",
                "--",
                "x",
                "y",
                "-z"
            ]
        );
        assert!(s.errors.is_empty(), "{:?}", s.errors);
        let t: Vec<&str> = s.of(ArgId::Threshold).map(|g| g.spelled.as_str()).collect();
        assert_eq!(t, ["-t", "--threshold"]);
        // -ct: -t lacks its value; with one, even `--` is it.
        assert_eq!(
            run(&["-ct"], true).errors,
            ["option requires an argument -- 't'"]
        );
        assert_eq!(
            spelled(&run(&["-ct", "--"], true)),
            ["du", "--total", "--threshold=--", "--"]
        );
    }

    #[test]
    fn a_refusal_hands_clap_what_came_before_and_the_refused_argument() {
        // Before it: options in full, a value typed apart kept apart,
        // operands in place; after it, nothing.
        assert_eq!(
            spelled(&run(
                &["x", "-a", "--thr", "5", "y", "--foo", "z", "-q"],
                false
            )),
            ["du", "x", "--all", "--threshold", "5", "y", "--foo"]
        );
        // The refused cluster as typed; a value clap would take for an
        // option is joined to its option.
        assert_eq!(
            spelled(&run(&["-t", "-0", "-ac", "-aqa", "-c"], false)),
            ["du", "--threshold=-0", "--all", "--total", "-aqa"]
        );
        let s = run(&["-c", "--thr"], false);
        assert_eq!(spelled(&s), ["du", "--total", "--thr"]);
        assert_eq!(s.lacking, Some(ArgId::Threshold));
    }

    #[test]
    fn getopt_messages() {
        let e = |args: &[&str]| run(args, true).errors;
        assert_eq!(e(&["--foo=1"]), ["unrecognized option '--foo=1'"]);
        assert_eq!(e(&["-q"]), ["invalid option -- 'q'"]);
        assert_eq!(e(&["-aqa"]), ["invalid option -- 'q'"]);
        assert_eq!(
            e(&["--all=3"]),
            ["option '--all' doesn't allow an argument"]
        );
        assert_eq!(e(&["--thr"]), ["option '--threshold' requires an argument"]);
        assert_eq!(e(&["-t"]), ["option requires an argument -- 't'"]);
        assert_eq!(
            e(&["--d"]),
            ["option '--d' is ambiguous; possibilities: '--dereference' '--dereference-args'"]
        );
        // --t: threshold, time, time-style and total are du's; --top is
        // not listed.
        assert_eq!(
            e(&["--t=1"]),
            [
                "option '--t=1' is ambiguous; possibilities: '--total' '--threshold' '--time' '--time-style'"
            ]
        );
        // du's abbreviations win over sdu's own options...
        assert_eq!(spelled(&run(&["--to"], true))[1], "--total");
        // ...which are ambiguous with them in sdu's own mode.
        assert_eq!(run(&["--to"], false).errors.len(), 1);
        // --time takes a value only after '='.
        assert_eq!(
            spelled(&run(&["--time", "x"], true)),
            ["du", "--time", "--", "x"]
        );
        assert_eq!(
            spelled(&run(&["--time-s", "iso"], true)),
            ["du", "--time-style=iso", "--"]
        );
    }
}
