//! `--time`'s column: a timestamp in the local time zone, formatted as
//! du's `--time-style` says (`long-iso`, `full-iso`, `iso`, `+FORMAT`).
//!
//! du formats with gnulib's `fprintftime` in the zone `TZ` names (the
//! system's when unset). sdu uses jiff for both: its strftime knows the
//! conversions date's FORMAT uses (`%N` nanoseconds, `%:z` and the `-`,
//! `_`, `0`, `^` and `#` flags), and it reads the zone as glibc does, `TZ`
//! as an IANA name, a `:`-prefixed name or path, or a POSIX rule such as
//! `UTC0` or `EST5EDT,M3.2.0,M11.1.0`, else /etc/localtime. Doing either
//! by hand would mean shipping a tzfile reader and the POSIX rule grammar;
//! jiff is maintained, has no dependencies of its own beyond `jiff-core`,
//! and is the crate the Rust ecosystem settled on for this.
//!
//! What glibc does in the C locale and jiff does otherwise is mapped here:
//! `%c`, `%x`, `%X`, `%r` and `%p` are written out as the C locale's
//! formats, and a conversion jiff does not know is printed as it is, as
//! glibc does.

use std::fmt;
use std::sync::{Arc, Mutex};

use jiff::fmt::strtime;
use jiff::tz::TimeZone;

use crate::figures::Timestamp;

/// du's `full-iso` style.
pub const FULL_ISO: &str = "%Y-%m-%d %H:%M:%S.%N %z";
/// du's `long-iso` style, the default.
pub const LONG_ISO: &str = "%Y-%m-%d %H:%M";
/// du's `iso` style.
pub const ISO: &str = "%Y-%m-%d";

/// How to print a time: a strftime format and a time zone. Times that no
/// calendar date can hold are printed as seconds since the epoch, as du
/// prints them, and kept in `TimeFormat::out_of_range` for the caller
/// to report (`time '9223372036854775807' is out of range`).
#[derive(Clone)]
pub struct TimeFormat {
    format: String,
    zone: TimeZone,
    out_of_range: Arc<Mutex<Vec<i64>>>,
}

impl fmt::Debug for TimeFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimeFormat")
            .field("format", &self.format)
            .finish_non_exhaustive()
    }
}

impl PartialEq for TimeFormat {
    fn eq(&self, o: &Self) -> bool {
        self.format == o.format && self.zone == o.zone
    }
}

impl TimeFormat {
    /// `format` (strftime's, as date's `+FORMAT`) in `zone`.
    pub fn new(format: &str, zone: TimeZone) -> TimeFormat {
        TimeFormat {
            format: c_locale(format),
            zone,
            out_of_range: Arc::default(),
        }
    }

    /// The format, as given to jiff.
    pub fn format_string(&self) -> &str {
        &self.format
    }

    /// Appends `t`, formatted, to `out`.
    pub(crate) fn write(&self, t: Timestamp, out: &mut String) {
        let zoned = jiff::Timestamp::new(t.secs, t.nanos as i32)
            .ok()
            .map(|ts| ts.to_zoned(self.zone.clone()));
        let Some(z) = zoned else {
            out.push_str(&t.secs.to_string());
            self.out_of_range
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(t.secs);
            return;
        };
        match strtime::format(&self.format, &z) {
            Ok(s) => out.push_str(&s),
            // A conversion jiff does not know: write them one by one, the
            // unknown ones as they are (glibc prints those literally).
            Err(_) => piecewise(&self.format, &z, out),
        }
    }

    /// The times met so far that no date could hold (seconds since the
    /// epoch), emptied.
    pub fn take_out_of_range(&self) -> Vec<i64> {
        std::mem::take(&mut *self.out_of_range.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// The zone `TZ` names, as glibc reads it: unset is the system's zone
/// (/etc/localtime), empty is UTC, `:NAME` or `NAME` an IANA name or a
/// file, else a POSIX rule (`UTC0`, `CET-1CEST,M3.5.0,M10.5.0/3`). What
/// none of these reads is UTC, as in glibc.
pub fn zone(tz: Option<&str>) -> TimeZone {
    let Some(tz) = tz else {
        return TimeZone::try_system().unwrap_or(TimeZone::UTC);
    };
    let name = tz.strip_prefix(':').unwrap_or(tz);
    if name.is_empty() {
        return TimeZone::UTC;
    }
    if let Ok(z) = TimeZone::get(name) {
        return z;
    }
    if let Some(data) = zone_file(name) {
        if let Ok(z) = TimeZone::tzif(name, &data) {
            return z;
        }
    }
    TimeZone::posix(tz).unwrap_or(TimeZone::UTC)
}

/// The most of a zone file read. A TZif file of the tz database is a few
/// kilobytes (the largest, the `right/` zones with leap seconds, under
/// 4 kB); glibc sets no bound, sdu takes a larger file for no zone file.
pub(crate) const MAX_ZONE_FILE: u64 = 1 << 20;

/// The contents of the zone file `path` names, when it is a regular file
/// of at most [`MAX_ZONE_FILE`] bytes. Anything else (`TZ=/dev/zero`, a
/// FIFO, a directory, a huge file) is no zone file: glibc finds no TZif
/// header in it, and the zone is UTC. It is opened without blocking, so
/// that a FIFO cannot hold sdu in `open`, and read no further than the
/// bound, so that a device cannot fill the memory.
fn zone_file(path: &str) -> Option<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut data = Vec::new();
    file.take(MAX_ZONE_FILE + 1).read_to_end(&mut data).ok()?;
    (data.len() as u64 <= MAX_ZONE_FILE).then_some(data)
}

/// Replaces what the C locale spells differently from jiff: `%c`, `%x`,
/// `%X`, `%r`, `%p`, `%P`.
fn c_locale(format: &str) -> String {
    let mut out = String::with_capacity(format.len());
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('c') => out.push_str("%a %b %e %H:%M:%S %Y"),
            Some('x') => out.push_str("%m/%d/%y"),
            Some('X') => out.push_str("%H:%M:%S"),
            Some('r') => out.push_str("%I:%M:%S %p"),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

/// Formats `format` one conversion at a time, printing those jiff refuses
/// as they are.
fn piecewise(format: &str, z: &jiff::Zoned, out: &mut String) {
    let b = format.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'%' {
            let next = format[i..].find('%').map_or(b.len(), |p| i + p);
            out.push_str(&format[i..next]);
            i = next;
            continue;
        }
        // A conversion: %, flags, width, colons, the letter.
        let mut j = i + 1;
        while j < b.len() && (b"-_0^#:".contains(&b[j]) || b[j].is_ascii_digit()) {
            j += 1;
        }
        let end = (j + 1).min(b.len());
        let end = (end..=b.len())
            .find(|&e| format.is_char_boundary(e))
            .unwrap_or(b.len());
        let conv = &format[i..end];
        match strtime::format(conv, z) {
            Ok(s) => out.push_str(&s),
            Err(_) => out.push_str(conv),
        }
        i = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64, nanos: u32, format: &str, tz: &str) -> String {
        let f = TimeFormat::new(format, zone(Some(tz)));
        let mut s = String::new();
        f.write(Timestamp { secs, nanos }, &mut s);
        s
    }

    #[test]
    fn du_styles() {
        // `TZ=UTC0 du --time --time-style=... f` on a file touched at
        // 2024-07-14 17:31:59.123456789 UTC (GNU du 9.1).
        let t = 1_720_978_319;
        assert_eq!(at(t, 123_456_789, LONG_ISO, "UTC0"), "2024-07-14 17:31");
        assert_eq!(
            at(t, 123_456_789, FULL_ISO, "UTC0"),
            "2024-07-14 17:31:59.123456789 +0000"
        );
        assert_eq!(
            at(t, 0, FULL_ISO, "UTC0"),
            "2024-07-14 17:31:59.000000000 +0000"
        );
        assert_eq!(at(t, 0, ISO, "UTC0"), "2024-07-14");
        assert_eq!(
            at(t, 5, FULL_ISO, "EST5EDT,M3.2.0,M11.1.0"),
            "2024-07-14 13:31:59.000000005 -0400"
        );
        assert_eq!(
            at(t, 0, "%c|%x|%X|%r", "UTC0"),
            "Sun Jul 14 17:31:59 2024|07/14/24|17:31:59|05:31:59 PM"
        );
        assert_eq!(
            at(t, 0, "%s %:z %% %Q", "UTC0").split(' ').next(),
            Some("1720978319")
        );
        assert_eq!(at(0, 0, "%Y %v", "UTC0"), "1970 %v");
    }

    #[test]
    fn zone_files_that_are_none() {
        let dir = std::env::temp_dir().join(format!("sdu-zone-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let big = dir.join("big");
        let mut data = std::fs::read("/usr/share/zoneinfo/Europe/Paris").unwrap_or_default();
        data.resize(MAX_ZONE_FILE as usize + 1, 0);
        std::fs::write(&big, &data).unwrap();
        let fifo = dir.join("fifo");
        let _ = rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from(0o600),
            0,
        );
        for p in [
            "/dev/zero",
            "/",
            big.to_str().unwrap(),
            fifo.to_str().unwrap(),
        ] {
            assert!(zone_file(p).is_none(), "{p}");
            assert_eq!(zone(Some(p)), TimeZone::UTC, "{p}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn out_of_range_is_seconds() {
        let f = TimeFormat::new(LONG_ISO, TimeZone::UTC);
        let mut s = String::new();
        f.write(
            Timestamp {
                secs: i64::MAX,
                nanos: 0,
            },
            &mut s,
        );
        assert_eq!(s, "9223372036854775807");
        assert_eq!(f.take_out_of_range(), [i64::MAX]);
        assert!(f.take_out_of_range().is_empty());
    }
}
