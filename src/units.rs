//! Size units: parsing `-B/--block-size` and formatting sizes the way GNU du does.
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

/// Parses a du block size: `1`, `512`, `4K`, `1KiB`, `1kB`, `M`, `MB`, `2MiB`.
///
/// `K M G T P E Z Y` alone or with `iB` are powers of 1024, with `B` powers of
/// 1000 (`kB` is accepted too). A size that starts with a letter makes the
/// printed numbers carry the suffix, as in du (`-BM` prints `3M`).
pub fn parse_block_size(s: &str) -> Result<Unit, String> {
    let err = || format!("invalid block size '{s}'");
    let (n, mult, suffix) = split(s).ok_or_else(err)?;
    let size = n.checked_mul(mult).filter(|&v| v > 0).ok_or_else(err)?;
    Ok(Unit::Blocks { size, suffix })
}

/// Parses a size in bytes for options like `--min-size`: a number with an
/// optional unit as in `-B` (`0`, `100`, `10M`, `1G`, `5MB`); fractions
/// such as `1.5G` are not accepted.
pub fn parse_size(s: &str) -> Result<u64, String> {
    split(s)
        .and_then(|(n, mult, _)| n.checked_mul(mult))
        .ok_or_else(|| format!("invalid size '{s}'"))
}

/// Splits `4K` into (4, 1024, the suffix to print when there is no number).
fn split(s: &str) -> Option<(u64, u64, Option<&'static str>)> {
    let digits_end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(digits_end);
    let n: u64 = if num.is_empty() { 1 } else { num.parse().ok()? };
    let (mult, suffix): (u64, &'static str) = match unit {
        "" if !num.is_empty() => (1, ""),
        "K" | "KiB" => (1 << 10, "K"),
        "k" | "kB" | "KB" => (1000, "kB"),
        "M" | "MiB" => (1 << 20, "M"),
        "MB" => (1_000_000, "MB"),
        "G" | "GiB" => (1 << 30, "G"),
        "GB" => (1_000_000_000, "GB"),
        "T" | "TiB" => (1 << 40, "T"),
        "TB" => (1_000_000_000_000, "TB"),
        "P" | "PiB" => (1 << 50, "P"),
        "PB" => (1_000_000_000_000_000, "PB"),
        "E" | "EiB" => (1 << 60, "E"),
        "EB" => (1_000_000_000_000_000_000, "EB"),
        _ => return None,
    };
    let suffix = (num.is_empty() && !suffix.is_empty()).then_some(suffix);
    Some((n, mult, suffix))
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

    #[test]
    fn blocks_round_up() {
        let k = parse_block_size("1K").unwrap();
        assert_eq!(f(k, 1), "1");
        assert_eq!(f(k, 1024), "1");
        assert_eq!(f(k, 1025), "2");
        assert_eq!(f(parse_block_size("K").unwrap(), 1500), "2K");
        assert_eq!(f(parse_block_size("KB").unwrap(), 4096), "5kB");
        assert_eq!(f(parse_block_size("M").unwrap(), 1500), "1M");
        assert_eq!(f(parse_block_size("1").unwrap(), 1500), "1500");
    }

    #[test]
    fn bad_block_sizes() {
        for s in ["0", "x", "1X", "-1", "99999999999999999999", "16E", ""] {
            assert!(parse_block_size(s).is_err(), "{s}");
        }
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
