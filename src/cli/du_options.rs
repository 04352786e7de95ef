//! du's own options and texts, as coreutils' du.c and gnulib read and word
//! them: `--time[=WORD]` and `--time-style` (argmatch, with its
//! abbreviations and its "Valid arguments are:" list), `-t`, `-d`,
//! `--files0-from` and `-X` (the files they name, read through
//! [`super::resolve::Env`]), and `quotef`, the quoting of those file names.
//!
//! Everything here is pure: it returns the messages, and `resolve` decides
//! whether they stop the run.

use std::ffi::OsStr;
use std::io::{self, BufRead, Read};
use std::os::unix::ffi::OsStrExt;

use sdu::figures::TimeField;
use sdu::quote_locale;
use sdu::timefmt::{FULL_ISO, ISO, LONG_ISO};

/// gnulib's `argmatch`: the index of the argument `arg` names exactly or
/// abbreviates, when all the arguments it abbreviates mean the same.
/// `Err(true)` when it is ambiguous, `Err(false)` when it names none.
fn argmatch<T: Copy + PartialEq>(arg: &str, args: &[(&str, T)]) -> Result<T, bool> {
    if let Some(&(_, v)) = args.iter().find(|(a, _)| *a == arg) {
        return Ok(v);
    }
    let mut found = args.iter().filter(|(a, _)| a.starts_with(arg));
    match found.next() {
        None => Err(false),
        Some(&(_, v)) if found.all(|&(_, w)| w == v) => Ok(v),
        Some(_) => Err(true),
    }
}

/// argmatch_die's message for a bad `arg` of `context`, with the list of
/// valid arguments (those meaning the same on one line). `resolve` adds
/// the "Try" line.
fn argmatch_error<T: Copy + PartialEq>(
    arg: &str,
    context: &str,
    args: &[(&str, T)],
    ambiguous: bool,
) -> String {
    let what = if ambiguous { "ambiguous" } else { "invalid" };
    let mut m = format!(
        "{what} argument {} for {}\nValid arguments are:",
        quote_locale(arg.as_bytes()),
        quote_locale(context.as_bytes())
    );
    let mut last = None;
    for &(a, v) in args {
        if last == Some(v) {
            m.push_str(&format!(", {}", quote_locale(a.as_bytes())));
        } else {
            m.push_str(&format!("\n  - {}", quote_locale(a.as_bytes())));
        }
        last = Some(v);
    }
    m
}

const TIME_WORDS: [(&str, TimeField); 6] = [
    ("mtime", TimeField::Modification),
    ("atime", TimeField::Access),
    ("access", TimeField::Access),
    ("use", TimeField::Access),
    ("ctime", TimeField::Status),
    ("status", TimeField::Status),
];

/// `--time[=WORD]`: `mtime` (what `--time` alone means), or du's words.
///
/// # Errors
/// argmatch's message; du's list leaves out `mtime`, which only
/// `--time` alone asks for.
pub(crate) fn time_field(word: &str) -> Result<TimeField, String> {
    if word == "mtime" {
        return Ok(TimeField::Modification);
    }
    let words = &TIME_WORDS[1..];
    argmatch(word, words).map_err(|amb| argmatch_error(word, "--time", words, amb))
}

const STYLES: [(&str, &str); 3] = [("full-iso", FULL_ISO), ("long-iso", LONG_ISO), ("iso", ISO)];

/// The strftime format of `--time-style` `given`, else of the `TIME_STYLE`
/// variable `env`, as du picks it: `locale` or nothing is `long-iso`; from
/// the variable, a `+FORMAT` ends at its first newline and `posix-`
/// prefixes are dropped.
///
/// # Errors
/// argmatch's message, for `'time style'`.
pub(crate) fn time_format(given: Option<&str>, env: Option<&str>) -> Result<String, String> {
    let style = match (given, env) {
        (Some(s), _) => s.to_owned(),
        (None, None | Some("locale")) => "long-iso".to_owned(),
        (None, Some(s)) if s.starts_with('+') => s.split('\n').next().unwrap_or(s).to_owned(),
        (None, Some(mut s)) => {
            while let Some(rest) = s.strip_prefix("posix-") {
                s = rest;
            }
            s.to_owned()
        }
    };
    if let Some(f) = style.strip_prefix('+') {
        return Ok(f.to_owned());
    }
    argmatch(&style, &STYLES)
        .map(str::to_owned)
        .map_err(|amb| argmatch_error(&style, "time style", &STYLES, amb))
}

pub(crate) use sdu::quotef;

/// A PATH as gnulib's `fts_open` keeps it, as du walks and prints it: two
/// or more trailing slashes trimmed to one (`demo//` is `demo/`, whose
/// entries are `demo/a`; `///` is `/`), a name of two bytes or fewer
/// untouched (`//` stays).
pub(crate) fn trim_slashes(mut path: Vec<u8>) -> Vec<u8> {
    let mut len = path.len();
    if len > 2 && path[len - 1] == b'/' {
        while len > 1 && path[len - 2] == b'/' {
            len -= 1;
        }
    }
    path.truncate(len);
    path
}

/// The text of an I/O error as the C library's `strerror` words it ("No
/// such file or directory"), without Rust's " (os error 2)".
pub(crate) fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_owned(),
        None => s,
    }
}

/// What `--files0-from` read: the names to measure, and du's complaints
/// about the others (each makes the run fail, as du's).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Files0 {
    pub(crate) names: Vec<Vec<u8>>,
    pub(crate) errors: Vec<String>,
}

/// Linux's PATH_MAX: the longest path a system call takes, with its NUL.
/// No name of this many bytes or more can be opened (`ENAMETOOLONG`).
pub(crate) const PATH_MAX: usize = 4096;

/// How many invalid names (zero-length, too long, `-` from standard
/// input) `--files0-from` takes before it reads no further.
pub(crate) const MAX_INVALID: usize = 100;

/// Reads the names of `--files0-from=F` from `input`, one at a time:
/// NUL-terminated, the last terminator optional. A zero-length name is an
/// error naming its record (`-:1: invalid zero-length file name`), and so
/// is `-` when the names come from standard input.
///
/// sdu reads the whole list before it scans, where du measures each name
/// as it reads it; so that an endless or runaway input cannot fill the
/// memory, or hold sdu for ever before it has measured anything, a name
/// of [`PATH_MAX`] bytes or more (which no system call would take) stops
/// the reading, and so does the [`MAX_INVALID`]th invalid name
/// (`/dev/zero` is an endless run of zero-length names). Then, and on a
/// read error, `Err` holds the errors met so far and the one that
/// stopped the reading.
pub(crate) fn files0(from: &OsStr, input: &mut dyn io::BufRead) -> Result<Files0, Vec<String>> {
    let stdin = from.as_bytes() == b"-";
    let mut out = Files0::default();
    let mut name = Vec::new();
    for record in 1.. {
        name.clear();
        let at = |what: &str| format!("{}:{record}: {what}", quotef(from.as_bytes()));
        let read = input.take(PATH_MAX as u64).read_until(0, &mut name);
        if let Err(e) = read {
            out.errors.push(format!(
                "{}: read error: {}",
                quotef(from.as_bytes()),
                strerror(&e)
            ));
            return Err(out.errors);
        }
        if name.is_empty() {
            break;
        }
        if name.last() == Some(&0) {
            name.pop();
        } else if name.len() == PATH_MAX {
            out.errors.push(at(&format!(
                "file name too long (a path has at most {} bytes); the rest of the list is not read",
                PATH_MAX - 1
            )));
            return Err(out.errors);
        }
        if name.is_empty() {
            out.errors.push(at("invalid zero-length file name"));
        } else if stdin && name == b"-" {
            out.errors.push(format!(
                "when reading file names from stdin, no file name of {} allowed",
                sdu::quote(&name)
            ));
        } else {
            out.names.push(name.clone());
            continue;
        }
        if out.errors.len() == MAX_INVALID {
            out.errors.push(at(&format!(
                "{MAX_INVALID} invalid file names; the rest of the list is not read"
            )));
            return Err(out.errors);
        }
    }
    Ok(out)
}

/// The patterns of an `--exclude-from` file as gnulib's `add_exclude_fp`
/// reads them with du's newline separator: one a line, the last newline
/// optional, trailing white space dropped, blank lines skipped.
pub(crate) fn exclude_patterns(data: &[u8]) -> Vec<Vec<u8>> {
    data.split(|&b| b == b'\n')
        .map(|l| {
            let end = l
                .iter()
                .rposition(|b| !b.is_ascii_whitespace())
                .map_or(0, |p| p + 1);
            l[..end].to_vec()
        })
        .filter(|l| !l.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message with du's `quote` as the C locale prints it (‘x’ is 'x'
    /// in a UTF-8 locale).
    fn c_quotes(s: String) -> String {
        s.replace(['\u{2018}', '\u{2019}'], "'")
    }

    #[test]
    fn time_words_as_du_reads_them() {
        assert_eq!(time_field("mtime"), Ok(TimeField::Modification));
        assert_eq!(
            time_field("a"),
            Ok(TimeField::Access),
            "atime and access agree"
        );
        assert_eq!(time_field("use"), Ok(TimeField::Access));
        assert_eq!(time_field("st"), Ok(TimeField::Status));
        assert_eq!(time_field("c"), Ok(TimeField::Status));
        // GNU du 9.1, LC_ALL=C: `du --time=x`.
        assert_eq!(
            c_quotes(time_field("x").unwrap_err()),
            "invalid argument 'x' for '--time'\n\
             Valid arguments are:\n  \
             - 'atime', 'access', 'use'\n  \
             - 'ctime', 'status'"
        );
        assert!(
            c_quotes(time_field("").unwrap_err()).starts_with("ambiguous argument '' for '--time'")
        );
    }

    #[test]
    fn time_styles() {
        assert_eq!(time_format(None, None).unwrap(), LONG_ISO);
        assert_eq!(time_format(Some("full"), None).unwrap(), FULL_ISO);
        assert_eq!(time_format(Some("iso"), Some("full-iso")).unwrap(), ISO);
        assert_eq!(time_format(Some("+%s\nx"), None).unwrap(), "%s\nx");
        assert_eq!(time_format(None, Some("+%s\nx")).unwrap(), "%s");
        assert_eq!(time_format(None, Some("locale")).unwrap(), LONG_ISO);
        assert_eq!(time_format(None, Some("posix-posix-iso")).unwrap(), ISO);
        assert_eq!(
            c_quotes(time_format(Some("x"), None).unwrap_err()),
            "invalid argument 'x' for 'time style'\n\
             Valid arguments are:\n  - 'full-iso'\n  - 'long-iso'\n  - 'iso'"
        );
        assert!(
            time_format(Some("posix-iso"), None).is_err(),
            "posix- only from TIME_STYLE"
        );
    }

    #[test]
    fn files0_as_du_splits_them() {
        let f = |data: &[u8]| files0(OsStr::new("-"), &mut &data[..]).unwrap();
        assert_eq!(f(b""), Files0::default());
        assert_eq!(f(b"g").names, [b"g"]);
        assert_eq!(f(b"g\0g\0").names, [b"g", b"g"]);
        assert_eq!(f(b"\0").errors, ["-:1: invalid zero-length file name"]);
        assert_eq!(
            f(b"\0\0").errors,
            [
                "-:1: invalid zero-length file name",
                "-:2: invalid zero-length file name"
            ]
        );
        let z = f(b"\0g\0");
        assert_eq!((z.names, z.errors.len()), (vec![b"g".to_vec()], 1));
        assert_eq!(
            f(b"-").errors,
            ["when reading file names from stdin, no file name of '-' allowed"]
        );
        let list = |data: &[u8]| files0(OsStr::new("list"), &mut &data[..]);
        assert_eq!(list(b"-").unwrap().names, [b"-"]);
        assert_eq!(
            files0(OsStr::new("a b"), &mut &b"\0"[..]).unwrap().errors,
            ["'a b':1: invalid zero-length file name"]
        );
        // The longest name a path can be, and one byte more.
        let longest = vec![b'a'; PATH_MAX - 1];
        let data = [&longest[..], b"\0", &longest[..], b"a\0g\0"].concat();
        assert_eq!(
            list(&data).unwrap_err(),
            [
                "list:2: file name too long (a path has at most 4095 bytes); \
                 the rest of the list is not read"
            ]
        );
        assert_eq!(list(&longest).unwrap().names, [longest]);
    }

    #[test]
    fn files0_stops_at_too_many_invalid_names() {
        let zeros = vec![0; 10 * MAX_INVALID];
        let e = files0(OsStr::new("/dev/zero"), &mut &zeros[..]).unwrap_err();
        assert_eq!(e.len(), MAX_INVALID + 1);
        assert_eq!(e[0], "/dev/zero:1: invalid zero-length file name");
        assert_eq!(
            e[MAX_INVALID],
            "/dev/zero:100: 100 invalid file names; the rest of the list is not read"
        );
        let just = [0; MAX_INVALID - 1];
        let ok = files0(OsStr::new("f"), &mut &just[..]).unwrap();
        assert_eq!(ok.errors.len(), MAX_INVALID - 1);
    }

    #[test]
    fn trailing_slashes_as_fts_open_trims_them() {
        for (given, kept) in [
            ("demo", "demo"),
            ("demo/", "demo/"),
            ("demo//", "demo/"),
            ("demo///b//", "demo///b/"),
            ("//", "//"),
            ("///", "/"),
            ("/", "/"),
            ("a//", "a/"),
        ] {
            assert_eq!(trim_slashes(given.into()), kept.as_bytes(), "{given}");
        }
    }

    #[test]
    fn exclude_files() {
        assert_eq!(exclude_patterns(b"b\n"), [b"b"]);
        assert_eq!(exclude_patterns(b"a \n\n \nc"), [b"a", b"c"]);
        assert!(exclude_patterns(b"").is_empty());
    }
}
