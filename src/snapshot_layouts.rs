//! What the snapshot tools say of their snapshots: given the path of a
//! snapshot subvolume, [`describe`] recognises snapper's and timeshift's
//! layouts and reads the record each keeps beside the snapshot.
//!
//! - snapper: `<…>/.snapshots/<N>/snapshot`, described by
//!   `<…>/.snapshots/<N>/info.xml` (number, type, date in UTC, description,
//!   cleanup algorithm, userdata);
//! - timeshift: `<…>/timeshift-btrfs/snapshots/<DATE>/@` (or `@home`, or any
//!   `@…` subvolume), described by `<…>/<DATE>/info.json` (creation time,
//!   tags, comments); `<DATE>` is `YYYY-MM-DD_HH-MM-SS`.
//!
//! Anything else is `None`. The record sits in the scanned tree, which
//! another user may have written, so it is read the way docs/SECURITY.md
//! reads the tree: the walk reads it through the fd of the snapshot's
//! parent directory it holds ([`describe_in`]); by path ([`describe`]),
//! the path above the tool's directory (`.snapshots`, `timeshift-btrfs`)
//! is resolved as given, as a root is, and from there each name is opened
//! relative to its directory with `O_NOFOLLOW`. The record is opened
//! with `O_NOFOLLOW | O_NONBLOCK`, and only a regular file of at most
//! [`MOST`] bytes is read. A symlink, a FIFO, a
//! file too large, a record that does not parse or that names another
//! snapshot is `None`, never a panic.

mod xml;

use std::ffi::OsStr;
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{self as rfs, CWD, FileType, Mode, OFlags};

/// The largest record read, in bytes; a larger one is ignored.
pub(crate) const MOST: u64 = 64 * 1024;

/// Which tool made a snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tool {
    /// snapper (`.snapshots/<N>/snapshot`, `info.xml`).
    Snapper,
    /// timeshift in Btrfs mode (`timeshift-btrfs/snapshots/<DATE>/@…`,
    /// `info.json`).
    Timeshift,
}

impl Tool {
    /// The tool's name as its users write it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Tool::Snapper => "snapper",
            Tool::Timeshift => "timeshift",
        }
    }
}

/// What a snapshot tool says of one snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    /// The tool that made it.
    pub(crate) tool: Tool,
    /// snapper's number (`N` of `.snapshots/<N>`); `None` for timeshift.
    pub(crate) number: Option<u64>,
    /// When it was taken, in seconds since the epoch (UTC). snapper's
    /// `<date>` is UTC; timeshift's `created` is seconds since the epoch,
    /// and without it the directory's name is read, as UTC (timeshift names
    /// it in local time, so that fallback may be off by the zone's offset).
    pub(crate) date: i64,
    /// snapper's description, timeshift's comments; empty when none.
    pub(crate) description: String,
    /// snapper: its type (`single`, `pre`, `post`), then its cleanup
    /// algorithm when it has one (`number`, `timeline`, ...). timeshift:
    /// its tags as words (`ondemand`, `boot`, `hourly`, `daily`, `weekly`,
    /// `monthly`), in the order info.json lists them.
    pub(crate) tags: Vec<String>,
    /// snapper's `pre_num`: the pre snapshot of a post one.
    pub(crate) pre_number: Option<u64>,
    /// snapper's userdata, `(key, value)` in the file's order; empty for
    /// timeshift.
    pub(crate) userdata: Vec<(String, String)>,
    /// timeshift's subvolume name (`@`, `@home`); `None` for snapper.
    pub(crate) subvolume: Option<String>,
}

/// What snapper's or timeshift's record says of the snapshot subvolume at
/// `snapshot`, or `None` when the path is in neither layout or its record
/// is missing, not a regular file, too large or malformed.
pub(crate) fn describe(snapshot: &Path) -> Option<Layout> {
    describe_with(snapshot, |prefix, dirs, name| {
        read_record(prefix, dirs, name)
    })
}

/// [`describe`], the record read in `parent`, an fd of the snapshot's
/// parent directory (snapper's `<N>`, timeshift's `<DATE>`), with
/// `O_NOFOLLOW`: no name above it is resolved again. `snapshot` is the
/// snapshot's path, whose last names say which layout it is in.
pub(crate) fn describe_in(parent: BorrowedFd<'_>, snapshot: &Path) -> Option<Layout> {
    describe_with(snapshot, |_, _, name| read_in(parent, name))
}

/// [`describe`], the record (`name`, in the directory `dirs` lead to from
/// `prefix`) read by `read`.
fn describe_with(
    snapshot: &Path,
    read: impl FnOnce(&Path, &[&OsStr], &str) -> Option<Vec<u8>>,
) -> Option<Layout> {
    let name = snapshot.file_name()?.as_bytes();
    let parent = snapshot.parent()?;
    let dir = parent.file_name()?;
    let above = parent.parent()?;
    let above_name = above.file_name()?;
    let prefix = above.parent()?;
    if name == b"snapshot" && above_name.as_bytes() == b".snapshots" {
        let number = parse_number(dir.as_bytes())?;
        let text = read(prefix, &[above_name, dir], "info.xml")?;
        return snapper(&text, number);
    }
    let tool_dir = prefix.file_name()?;
    if name.first() == Some(&b'@')
        && above_name.as_bytes() == b"snapshots"
        && tool_dir.as_bytes() == b"timeshift-btrfs"
    {
        let from_name = parse_timeshift_name(dir.as_bytes())?;
        let sub = std::str::from_utf8(name).ok()?.to_owned();
        let text = read(prefix.parent()?, &[tool_dir, above_name, dir], "info.json")?;
        return timeshift(&text, from_name, sub);
    }
    None
}

/// A decimal number as snapper writes one: digits only, no sign, no
/// leading zero (but `0` itself), fitting a u64.
fn parse_number(s: &[u8]) -> Option<u64> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) || (s.len() > 1 && s[0] == b'0') {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

/// The record `name` below `prefix`, in the directory the names `dirs`
/// lead to: `prefix` resolved as given (as a root is), then each of `dirs`
/// opened relative to the last with `O_NOFOLLOW`, then the record
/// likewise, read whole only when a regular file of at most [`MOST`]
/// bytes.
fn read_record(prefix: &Path, dirs: &[&OsStr], name: &str) -> Option<Vec<u8>> {
    let prefix = if prefix.as_os_str().is_empty() {
        Path::new(".")
    } else {
        prefix
    };
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut dir = rfs::openat(CWD, prefix, flags, Mode::empty()).ok()?;
    for d in dirs {
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        dir = rfs::openat(&dir, *d, flags, Mode::empty()).ok()?;
    }
    read_in(dir.as_fd(), name)
}

/// The record `name` in the directory open at `dir`: opened with
/// `O_NOFOLLOW | O_NONBLOCK`, read whole only when a regular file of at
/// most [`MOST`] bytes.
fn read_in(dir: BorrowedFd<'_>, name: &str) -> Option<Vec<u8>> {
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let fd = rfs::openat(dir, OsStr::new(name), flags, Mode::empty()).ok()?;
    let st = rfs::fstat(&fd).ok()?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile || st.st_size as u64 > MOST {
        return None;
    }
    // The file may grow between the stat and the read: read one byte past
    // the cap and refuse it then.
    let mut text = Vec::new();
    std::fs::File::from(fd)
        .take(MOST + 1)
        .read_to_end(&mut text)
        .ok()?;
    (text.len() as u64 <= MOST).then_some(text)
}

/// snapper's info.xml for snapshot `number`.
fn snapper(text: &[u8], number: u64) -> Option<Layout> {
    let text = String::from_utf8_lossy(text);
    let root = xml::parse(&text)?;
    if root.name != "snapshot" {
        return None;
    }
    let field = |n: &str| root.child(n).map(|c| c.text.trim());
    if parse_number(field("num")?.as_bytes())? != number {
        return None;
    }
    let kind = field("type")?;
    if !matches!(kind, "single" | "pre" | "post") {
        return None;
    }
    let date = parse_date(field("date")?.as_bytes(), b' ', b':')?;
    let mut tags = vec![kind.to_owned()];
    if let Some(c) = field("cleanup").filter(|c| !c.is_empty()) {
        tags.push(c.to_owned());
    }
    let pre_number = match field("pre_num") {
        Some(p) => Some(parse_number(p.as_bytes())?),
        None => None,
    };
    let userdata = root
        .children
        .iter()
        .filter(|c| c.name == "userdata")
        .map(|u| {
            let key = u.child("key")?.text.trim().to_owned();
            let value = u.child("value").map_or("", |v| v.text.trim()).to_owned();
            Some((key, value))
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Layout {
        tool: Tool::Snapper,
        number: Some(number),
        date,
        description: field("description").unwrap_or("").to_owned(),
        tags,
        pre_number,
        userdata,
        subvolume: None,
    })
}

/// timeshift's info.json; `from_name` is the date its directory's name
/// gives, `sub` the subvolume's name.
fn timeshift(text: &[u8], from_name: i64, sub: String) -> Option<Layout> {
    let doc: serde_json::Value = serde_json::from_slice(text).ok()?;
    let obj = doc.as_object()?;
    // `created` is a string of seconds since the epoch (a number is taken too).
    let date = match obj.get("created") {
        Some(serde_json::Value::String(s)) => s.trim().parse().ok()?,
        Some(serde_json::Value::Number(n)) => n.as_i64()?,
        None => from_name,
        Some(_) => return None,
    };
    let tags = match obj.get("tags") {
        Some(serde_json::Value::String(s)) => s
            .split([' ', ','])
            .filter(|t| !t.is_empty())
            .map(|t| tag_word(t).map(str::to_owned))
            .collect::<Option<Vec<_>>>()?,
        None => Vec::new(),
        Some(_) => return None,
    };
    let description = match obj.get("comments") {
        Some(serde_json::Value::String(s)) => s.clone(),
        None => String::new(),
        Some(_) => return None,
    };
    Some(Layout {
        tool: Tool::Timeshift,
        number: None,
        date,
        description,
        tags,
        pre_number: None,
        userdata: Vec::new(),
        subvolume: Some(sub),
    })
}

/// A timeshift tag letter as a word.
fn tag_word(letter: &str) -> Option<&'static str> {
    Some(match letter {
        "O" => "ondemand",
        "B" => "boot",
        "H" => "hourly",
        "D" => "daily",
        "W" => "weekly",
        "M" => "monthly",
        _ => return None,
    })
}

/// timeshift's directory name, `YYYY-MM-DD_HH-MM-SS`, read as UTC.
fn parse_timeshift_name(s: &[u8]) -> Option<i64> {
    parse_date(s, b'_', b'-')
}

/// `YYYY-MM-DD<sep>HH<tsep>MM<tsep>SS` exactly, as seconds since the epoch
/// (UTC), or `None` when it is not that or not a real date and time.
fn parse_date(s: &[u8], sep: u8, tsep: u8) -> Option<i64> {
    if s.len() != 19 {
        return None;
    }
    let seps = [(4, b'-'), (7, b'-'), (10, sep), (13, tsep), (16, tsep)];
    if seps.iter().any(|&(i, c)| s[i] != c) {
        return None;
    }
    let num = |a: usize, b: usize| -> Option<i64> {
        let d = &s[a..b];
        d.iter()
            .all(u8::is_ascii_digit)
            .then(|| d.iter().fold(0, |n, &c| n * 10 + i64::from(c - b'0')))
    };
    let (y, mo, d) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (h, mi, sec) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&mo)
        || d < 1
        || d > month_days[(mo - 1) as usize]
        || h > 23
        || mi > 59
        || sec > 60
    {
        return None;
    }
    Some(days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + sec)
}

/// Days from 1970-01-01 to the given date of the proleptic Gregorian
/// calendar (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests;
