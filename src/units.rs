//! Size units: parsing `-B/--block-size` (and du's other numbers) and
//! formatting sizes the way GNU du does.
//!
//! du rounds every size *up* to the next unit (`--block-size=1K` prints 1 for
//! one byte), and its human-readable form (`-h`, `--si`) keeps one decimal
//! below 10 and rounds that up too (1500 bytes is `1.5K`, 10 MiB + 1 byte is
//! `11M`). Scripts compare sdu with du, so sdu rounds the same way.

use std::fmt::Write as _;

/// How sizes are printed in the text output (JSON always uses bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Human-readable with powers of 1024 (`-h`, the default): `4.0K`, `12M`.
    HumanIec,
    /// Human-readable with powers of 1000 (`--si`): `4.1k`, `12M`.
    HumanSi,
    /// A fixed block size; sizes are rounded up to whole blocks. `suffix` is
    /// printed after each number when the size was given as a bare unit
    /// (`-BK` prints `4K`, `-B1K` prints `4`), as du does.
    Blocks {
        /// Bytes per block.
        size: u64,
        /// Printed after each number, as du does for a bare unit.
        suffix: Option<&'static str>,
    },
}

impl Unit {
    /// Formats `bytes` in this unit.
    pub fn format(self, bytes: u64, out: &mut String) {
        match self {
            Unit::HumanIec => human(bytes, 1024, out),
            Unit::HumanSi => human(bytes, 1000, out),
            Unit::Blocks { size, suffix } => {
                let _ = write!(out, "{}", bytes.div_ceil(size));
                if let Some(s) = suffix {
                    out.push_str(s);
                }
            }
        }
    }

    /// The widest string this unit can produce for values up to `max`.
    pub fn width(self, max: u64) -> usize {
        let mut s = String::new();
        match self {
            // Human sizes are at most 4 characters plus the suffix ("1023",
            // "9.9K", "999M"), and not monotonic in width, so use the bound.
            Unit::HumanIec | Unit::HumanSi => 5,
            Unit::Blocks { .. } => {
                self.format(max, &mut s);
                s.len()
            }
        }
    }
}

/// du's `human_ceiling` format: `512`, `1.5K`, `11M`.
fn human(bytes: u64, base: u64, out: &mut String) {
    const IEC: [&str; 9] = ["", "K", "M", "G", "T", "P", "E", "Z", "Y"];
    const SI: [&str; 9] = ["", "k", "M", "G", "T", "P", "E", "Z", "Y"];
    let suffixes = if base == 1024 { IEC } else { SI };
    if bytes < base {
        let _ = write!(out, "{bytes}");
        return;
    }
    // Work in u128 so that rounding up near u64::MAX cannot overflow.
    let mut exp = 0;
    let mut scale: u128 = 1;
    let b = u128::from(bytes);
    while b / scale >= u128::from(base) && exp < 8 {
        scale *= u128::from(base);
        exp += 1;
    }
    // Tenths, rounded up.
    let tenths = (b * 10).div_ceil(scale);
    if tenths < 100 {
        let _ = write!(out, "{}.{}{}", tenths / 10, tenths % 10, suffixes[exp]);
    } else {
        let whole = b.div_ceil(scale);
        if whole >= u128::from(base) && exp < 8 {
            // 1023.5K rounds up to 1024K: du prints that as 1.0M.
            let _ = write!(out, "1.0{}", suffixes[exp + 1]);
        } else {
            let _ = write!(out, "{}{}", whole, suffixes[exp]);
        }
    }
}

/// Why a number in an option was refused: gnulib's `strtol_error`, which
/// du turns into its messages (`xstrtol_fatal`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumError {
    /// Not a number at all (`LONGINT_INVALID`), or a block size of 0.
    Invalid,
    /// A number followed by something that is not a unit
    /// (`LONGINT_INVALID_SUFFIX_CHAR`, with or without an overflow).
    Suffix,
    /// Too large for the type (`LONGINT_OVERFLOW`).
    Overflow,
}

impl NumError {
    /// du's message for `arg`, given to `option` (`-B`, `--block-size`):
    /// `invalid -B argument 'X'`, `invalid suffix in -B argument '1X'`,
    /// `-B argument 'Y' too large`.
    pub fn message(self, option: &str, arg: &str) -> String {
        match self {
            NumError::Invalid => format!("invalid {option} argument '{arg}'"),
            NumError::Suffix => format!("invalid suffix in {option} argument '{arg}'"),
            NumError::Overflow => format!("{option} argument '{arg}' too large"),
        }
    }
}

/// What [`xstrtol`] read: the value it got to and what was wrong. As in
/// gnulib, a value comes with some errors (`1X` is 1 with a bad suffix,
/// an overflow is the largest value), and du sometimes uses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Strtol {
    value: Option<i128>,
    /// Where the number and its units end (bytes into the string).
    end: usize,
    error: Option<NumError>,
}

/// The units of `-B`, `--block-size` and the block-size variables.
const BLOCK_SUFFIXES: &str = "eEgGkKmMpPtTyYzZ0";
/// The units of `-t`, `--threshold` (du's `xstrtoimax` call).
const THRESHOLD_SUFFIXES: &str = "kKmMGTPEZY0";

/// gnulib's `xstrtoumax` (`signed` false) or `xstrtoimax` (true) in base 0:
/// C's `strtol` (leading white space, a sign, `0x` hexadecimal, `0`
/// octal), then, when `suffixes` allows them, one unit letter (`k`/`K`
/// 1024, `M`/`m`, `G`/`g`, `T`/`t`, `P`, `E`, `Z`, `Y`; `b` 512, `B` 1024,
/// `c` 1, `w` 2), and after it, when `suffixes` has a `0`, `B` (powers of
/// 1000) or `iB` (1024). A unit alone means one of it.
fn xstrtol(s: &str, suffixes: &str, signed: bool) -> Strtol {
    let (min, max) = if signed {
        (i128::from(i64::MIN), i128::from(i64::MAX))
    } else {
        (0, i128::from(u64::MAX))
    };
    let b = s.as_bytes();
    // C's isspace in the C locale.
    let space = |c: u8| matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r');
    let mut i = 0;
    while i < b.len() && space(b[i]) {
        i += 1;
    }
    let invalid = Strtol {
        value: None,
        end: 0,
        error: Some(NumError::Invalid),
    };
    let negative = b.get(i) == Some(&b'-');
    if negative && !signed {
        return invalid;
    }
    if matches!(b.get(i), Some(b'-' | b'+')) {
        i += 1;
    }
    let (radix, digits_at) = match (b.get(i), b.get(i + 1), b.get(i + 2)) {
        (Some(b'0'), Some(b'x' | b'X'), Some(c)) if c.is_ascii_hexdigit() => (16, i + 2),
        (Some(b'0'), _, _) => (8, i),
        _ => (10, i),
    };
    let mut j = digits_at;
    let mut n: i128 = 0;
    let mut overflow = false;
    while let Some(d) = b.get(j).and_then(|&c| (c as char).to_digit(radix)) {
        n = n * i128::from(radix) + i128::from(d);
        if n > max - min {
            overflow = true;
            n = max - min;
        }
        j += 1;
    }
    let mut value;
    if j == digits_at {
        // No number: a unit alone is one of it.
        if b.first().is_some_and(|&c| suffixes.as_bytes().contains(&c)) {
            value = 1;
            j = 0;
        } else {
            return invalid;
        }
    } else {
        value = if negative { -n } else { n };
        if value > max || value < min {
            overflow = true;
            value = value.clamp(min, max);
        }
    }
    let mut error = overflow.then_some(NumError::Overflow);
    let Some(&unit) = b.get(j) else {
        return Strtol {
            value: Some(value),
            end: j,
            error,
        };
    };
    if !suffixes.as_bytes().contains(&unit) {
        return Strtol {
            value: Some(value),
            end: j,
            error: Some(NumError::Suffix),
        };
    }
    let mut base = 1024;
    let mut len = 1;
    if b"EGgkKMmPTtYZ".contains(&unit) && suffixes.contains('0') {
        match (b.get(j + 1), b.get(j + 2)) {
            (Some(b'i'), Some(b'B')) => len += 2,
            (Some(b'B' | b'D'), _) => {
                base = 1000;
                len += 1;
            }
            _ => {}
        }
    }
    let (factor, power): (i128, u32) = match unit {
        b'b' => (512, 1),
        b'B' => (1024, 1),
        b'c' => (1, 1),
        b'w' => (2, 1),
        b'k' | b'K' => (base, 1),
        b'M' | b'm' => (base, 2),
        b'G' | b'g' => (base, 3),
        b'T' | b't' => (base, 4),
        b'P' => (base, 5),
        b'E' => (base, 6),
        b'Z' => (base, 7),
        b'Y' => (base, 8),
        // '0' and any other letter the caller allowed but gnulib knows not.
        _ => {
            return Strtol {
                value: Some(value),
                end: j,
                error: Some(NumError::Suffix),
            };
        }
    };
    for _ in 0..power {
        value *= factor;
        if value > max || value < min {
            overflow = true;
            value = value.clamp(min, max);
        }
    }
    if overflow {
        error = Some(NumError::Overflow);
    }
    j += len;
    if j < b.len() {
        error = Some(NumError::Suffix);
    }
    Strtol {
        value: Some(value),
        end: j,
        error,
    }
}

/// Block sizes as gnulib's `human_options` reads them: a leading `'`
/// (thousands separators: sdu, like du in the C locale, prints none),
/// then `human-readable` or `si` (or an abbreviation: `h`, `s`), or a
/// number with an optional unit as [`xstrtol`] reads it (`1`, `4K`,
/// `0x400`, `010`, `1kB`, `MiB`). A size given by its unit alone
/// (`K`, `KiB`, `kB`, `m`) makes the printed numbers carry that unit, as
/// du's do: `4K`, `4KiB`, `5kB`, `1M`.
///
/// The error comes with the unit du would go on with when the value came
/// from the environment, where du ignores the error: `1X` is 1-byte blocks
/// there, `Y` (an overflow) blocks of `u64::MAX` bytes, and `0`, `X` or
/// the empty string no unit (the default).
fn human_options(spec: &str) -> (Option<Unit>, Option<NumError>) {
    let spec = spec.strip_prefix('\'').unwrap_or(spec);
    let abbreviates = |word: &str| !spec.is_empty() && word.starts_with(spec);
    if abbreviates("human-readable") {
        return (Some(Unit::HumanIec), None);
    }
    if abbreviates("si") {
        return (Some(Unit::HumanSi), None);
    }
    let r = xstrtol(spec, BLOCK_SUFFIXES, false);
    let size = match r.value {
        Some(v) => u64::try_from(v).unwrap_or(u64::MAX),
        None => return (None, r.error),
    };
    if size == 0 {
        return (None, Some(NumError::Invalid));
    }
    if r.error.is_some() {
        return (Some(Unit::Blocks { size, suffix: None }), r.error);
    }
    // A size given by its unit alone prints that unit (humblock: no digit
    // before the end of what xstrtoumax read).
    let b = spec.as_bytes();
    let suffix = (!b[..r.end].iter().any(u8::is_ascii_digit)).then(|| {
        let bytes = b[r.end - 1] == b'B';
        let iec = !bytes || (r.end >= 2 && b[r.end - 2] == b'i');
        si_suffix(size, iec, bytes)
    });
    (Some(Unit::Blocks { size, suffix }), None)
}

/// The unit human_readable prints after a number in blocks of `size`
/// (a power of 1024 or 1000): `K`, `KiB`, `kB`, `MB`...
fn si_suffix(size: u64, iec: bool, bytes: bool) -> &'static str {
    const IEC: [&str; 9] = ["", "K", "M", "G", "T", "P", "E", "Z", "Y"];
    const IEC_B: [&str; 9] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"];
    const SI: [&str; 9] = ["", "k", "M", "G", "T", "P", "E", "Z", "Y"];
    const SI_B: [&str; 9] = ["B", "kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"];
    let base: u128 = if iec { 1024 } else { 1000 };
    let mut exp = 0;
    let mut power: u128 = 1;
    while power < u128::from(size) && exp < 8 {
        power *= base;
        exp += 1;
    }
    match (iec, bytes) {
        (true, false) => IEC[exp],
        (true, true) => IEC_B[exp],
        (false, false) => SI[exp],
        (false, true) => SI_B[exp],
    }
}

/// Parses `-B`/`--block-size` SIZE as du does (`human_options`).
///
/// # Errors
/// The [`NumError`] du reports for it (`-B 0` is [`NumError::Invalid`]).
pub fn parse_block_size(s: &str) -> Result<Unit, NumError> {
    match human_options(s) {
        (Some(u), None) => Ok(u),
        (_, e) => Err(e.unwrap_or(NumError::Invalid)),
    }
}

/// A block size from `DU_BLOCK_SIZE`, `BLOCK_SIZE` or `BLOCKSIZE`, as du
/// reads it: [`parse_block_size`]'s grammar, but du ignores the error and
/// keeps the number it read, if any (`1X` is 1, an overflow `u64::MAX`);
/// `None` is du's default unit.
pub fn env_block_size(s: &str) -> Option<Unit> {
    human_options(s).0
}

/// Parses a size in bytes for options like `--min-size`: a number with an
/// optional unit as in `-B` (`0`, `100`, `10M`, `1G`, `5MB`, `0x100`);
/// fractions such as `1.5G` are not accepted.
///
/// # Errors
/// `invalid size 'S'`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let r = xstrtol(s, BLOCK_SUFFIXES, false);
    match (r.value, r.error) {
        (Some(v), None) => Ok(u64::try_from(v).unwrap_or(u64::MAX)),
        _ => Err(format!("invalid size '{s}'")),
    }
}

/// Parses du's `-t`/`--threshold` SIZE: a signed number with an optional
/// unit (`xstrtoimax` with du's units, `k` and `K` both 1024). `-0` is
/// accepted here; du refuses it after (`invalid --threshold argument '-0'`).
///
/// # Errors
/// The [`NumError`] du reports.
pub fn parse_threshold(s: &str) -> Result<i64, NumError> {
    let r = xstrtol(s, THRESHOLD_SUFFIXES, true);
    match (r.value, r.error) {
        (Some(v), None) => Ok(i64::try_from(v).expect("clamped to i64")),
        (_, e) => Err(e.unwrap_or(NumError::Invalid)),
    }
}

/// Parses a plain unsigned number as du's `xstrtoumax(s, NULL, 0, .., "")`
/// does (`--max-depth`): base 0, no unit.
///
/// # Errors
/// The [`NumError`] (du reports them all as `invalid maximum depth`).
pub fn parse_count(s: &str) -> Result<u64, NumError> {
    let r = xstrtol(s, "", false);
    match (r.value, r.error) {
        (Some(v), None) => Ok(u64::try_from(v).expect("clamped to u64")),
        (_, e) => Err(e.unwrap_or(NumError::Invalid)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(u: Unit, b: u64) -> String {
        let mut s = String::new();
        u.format(b, &mut s);
        s
    }

    #[test]
    fn human_matches_du() {
        // Figures from GNU du 9.1 on this machine (`du -h --apparent-size`).
        assert_eq!(f(Unit::HumanIec, 0), "0");
        assert_eq!(f(Unit::HumanIec, 1023), "1023");
        assert_eq!(f(Unit::HumanIec, 1024), "1.0K");
        assert_eq!(f(Unit::HumanIec, 1500), "1.5K");
        assert_eq!(f(Unit::HumanIec, 4096), "4.0K");
        assert_eq!(f(Unit::HumanIec, 10_752_000), "11M");
        assert_eq!(f(Unit::HumanIec, 10 * 1024 - 1), "10K");
        assert_eq!(f(Unit::HumanIec, 1024 * 1024 - 1), "1.0M");
        assert_eq!(f(Unit::HumanSi, 1500), "1.5k");
        assert_eq!(f(Unit::HumanSi, 4096), "4.1k");
        assert_eq!(f(Unit::HumanSi, 10_752_000), "11M");
        assert_eq!(f(Unit::HumanIec, u64::MAX), "16E");
    }

    /// `-B SPEC` as a unit, panicking on an error.
    fn b(spec: &str) -> Unit {
        parse_block_size(spec).unwrap_or_else(|e| panic!("{spec}: {e:?}"))
    }

    #[test]
    fn blocks_round_up() {
        let k = b("1K");
        assert_eq!(f(k, 1), "1");
        assert_eq!(f(k, 1024), "1");
        assert_eq!(f(k, 1025), "2");
        assert_eq!(f(b("K"), 1500), "2K");
        assert_eq!(f(b("KB"), 4096), "5kB");
        assert_eq!(f(b("M"), 1500), "1M");
        assert_eq!(f(b("1"), 1500), "1500");
    }

    #[test]
    fn block_sizes_as_gnu_du_reads_them() {
        // Each line: `du -B SPEC d` (GNU du 9.1) on a directory of 4096
        // bytes, and what it printed.
        for (spec, want) in [
            ("1", "4096"),
            ("K", "4K"),
            ("k", "4K"),
            ("KiB", "4KiB"),
            ("KB", "5kB"),
            ("kB", "5kB"),
            ("m", "1M"),
            ("mB", "1MB"),
            ("MiB", "1MiB"),
            ("1K", "4"),
            ("1k", "4"),
            ("2KiB", "2"),
            ("1kB", "5"),
            ("0x10", "256"),
            ("010", "512"),
            (" 4", "1024"),
            ("+4", "1024"),
            ("'1K", "4"),
            ("'K", "4K"),
            ("h", "4.0K"),
            ("hu", "4.0K"),
            ("human-readable", "4.0K"),
            ("s", "4.1k"),
            ("si", "4.1k"),
            ("'si", "4.1k"),
        ] {
            assert_eq!(f(b(spec), 4096), want, "-B {spec:?}");
        }
        assert_eq!(
            b("1kB"),
            Unit::Blocks {
                size: 1000,
                suffix: None
            }
        );
        assert_eq!(
            b("k"),
            Unit::Blocks {
                size: 1024,
                suffix: Some("K")
            }
        );
        assert_eq!(b("E").width(u64::MAX), "16E".len());
    }

    #[test]
    fn bad_block_sizes() {
        use NumError::*;
        // GNU du 9.1: `du -B SPEC` says invalid, invalid suffix, too large.
        for (spec, want) in [
            ("0", Invalid),
            ("x", Invalid),
            ("", Invalid),
            ("'", Invalid),
            ("-1", Invalid),
            (" -1", Invalid),
            ("Human", Invalid),
            ("sii", Invalid),
            ("1X", Suffix),
            ("2KX", Suffix),
            ("1.5K", Suffix),
            ("1b", Suffix),
            ("1e", Suffix),
            ("99999999999999999999", Overflow),
            ("16E", Overflow),
            ("Y", Overflow),
            ("Z", Overflow),
        ] {
            assert_eq!(parse_block_size(spec), Err(want), "-B {spec:?}");
        }
        assert_eq!(Invalid.message("-B", "x"), "invalid -B argument 'x'");
        assert_eq!(
            Suffix.message("--block-size", "1Q"),
            "invalid suffix in --block-size argument '1Q'"
        );
        assert_eq!(Overflow.message("-B", "Y"), "-B argument 'Y' too large");
    }

    #[test]
    fn env_block_sizes_keep_what_du_read() {
        // `DU_BLOCK_SIZE=SPEC du d` (GNU du 9.1): du ignores the error but
        // keeps the number it got to.
        let blocks = |size| Some(Unit::Blocks { size, suffix: None });
        assert_eq!(env_block_size("1X"), blocks(1));
        assert_eq!(env_block_size("2KX"), blocks(2048));
        assert_eq!(env_block_size("Y"), blocks(u64::MAX));
        assert_eq!(env_block_size("99999999999999999999"), blocks(u64::MAX));
        for spec in ["", "0", "X", "-1", "'"] {
            assert_eq!(env_block_size(spec), None, "{spec:?}");
        }
        assert_eq!(env_block_size("KiB"), Some(b("KiB")));
    }

    #[test]
    fn thresholds_as_du_reads_them() {
        use NumError::*;
        for (spec, want) in [
            ("0", Ok(0)),
            ("-0", Ok(0)),
            ("1", Ok(1)),
            ("-1", Ok(-1)),
            ("2k", Ok(2048)),
            ("2K", Ok(2048)),
            ("2KB", Ok(2000)),
            ("-2KiB", Ok(-2048)),
            ("M", Ok(1 << 20)),
            ("0x10", Ok(16)),
            ("8E", Err(Overflow)),
            ("-8E", Ok(i64::MIN)),
            ("SIZE", Err(Invalid)),
            ("", Err(Invalid)),
            ("1Q", Err(Suffix)),
            ("1m", Ok(1 << 20)),
            ("1g", Err(Suffix)),
        ] {
            assert_eq!(parse_threshold(spec), want, "-t {spec:?}");
        }
    }

    #[test]
    fn counts() {
        assert_eq!(parse_count("12"), Ok(12));
        assert_eq!(parse_count("010"), Ok(8));
        assert_eq!(parse_count("0x10"), Ok(16));
        assert_eq!(parse_count("-1"), Err(NumError::Invalid));
        assert_eq!(parse_count("1K"), Err(NumError::Suffix));
        assert_eq!(parse_count("x"), Err(NumError::Invalid));
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("0K"), Ok(0));
        assert_eq!(parse_size("100"), Ok(100));
        assert_eq!(parse_size("10M"), Ok(10 << 20));
        assert_eq!(parse_size("M"), Ok(1 << 20));
        assert_eq!(parse_size("5MB"), Ok(5_000_000));
        for s in ["", "1.5G", "-1", "16E", "1X"] {
            assert!(parse_size(s).is_err(), "{s}");
        }
    }
}
