//! Strict mirror of the `--json` document.
//!
//! The hand-written equivalent of `#[serde(deny_unknown_fields)]` mirror
//! types: every object must have exactly the keys listed here, with the
//! types listed here. A new or renamed field fails every JSON test until
//! this file follows, which is the point: the schema is a contract. It is
//! written by hand, not derived like the types of `src/report/json.rs`, so
//! that a wrong serde attribute there cannot be copied here too, and a
//! drift says which key (and `"total": null` is refused, not read as no
//! total); the base64 decoder is independent of the crate sdu encodes with
//! for the same reason.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use serde_json::{Map, Value};

/// The whole `--json` document.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub schema: u64,
    pub version: String,
    pub roots: Vec<OsString>,
    pub entries: Vec<Entry>,
    /// The entries that could not be read, sorted by path.
    pub errors: Vec<ReportedError>,
    /// How many entries could not be read (at least `errors.len()`).
    pub error_count: u64,
    /// Present exactly when `-c` was given.
    pub total: Option<Total>,
    /// Compressed bytes counted uncompressed; the key is present exactly
    /// when not 0 (then it must not be 0).
    pub compressed_logical: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
    Symlink,
    Other,
}

/// One reported path.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub path: OsString,
    pub kind: Kind,
    pub depth: u64,
    pub apparent: u64,
    pub total: u64,
    pub exclusive: u64,
    pub shared: u64,
    pub reclaimable: u64,
    pub files: u64,
    pub dirs: u64,
    /// Whether `reclaimable` is verified (false: a bound).
    pub reclaimable_exact: bool,
    /// The bound's direction: `at_most`, `at_least` or `unknown`; present
    /// exactly when `reclaimable_exact` is false.
    pub reclaimable_bound: Option<String>,
    /// Bytes on disk no file references (as root on Btrfs; 0 when absent).
    pub unreachable: u64,
}

/// One entry that could not be read: its path and the message printed.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportedError {
    pub path: OsString,
    pub error: String,
}

/// The `-c` grand total.
#[derive(Debug, Clone, PartialEq)]
pub struct Total {
    pub apparent: u64,
    pub total: u64,
    pub exclusive: u64,
    pub shared: u64,
    pub reclaimable: u64,
    pub files: u64,
    pub dirs: u64,
    pub reclaimable_exact: bool,
    pub reclaimable_bound: Option<String>,
    pub unreachable: u64,
}

impl Report {
    /// The document with every `reclaimable_exact` set to `true`: its
    /// figures alone, to compare two scans that must see the same figures
    /// but need not be as sure of them (root and not, the tree search and
    /// FIEMAP).
    pub fn figures_only(&self) -> Report {
        let mut r = self.clone();
        for e in &mut r.entries {
            e.reclaimable_exact = true;
            e.reclaimable_bound = None;
        }
        if let Some(t) = &mut r.total {
            t.reclaimable_exact = true;
            t.reclaimable_bound = None;
        }
        r
    }
}

/// Parses one JSON document (trailing garbage is an error) strictly.
pub fn parse(bytes: &[u8]) -> Report {
    let v: Value = serde_json::from_slice(bytes).unwrap_or_else(|e| {
        panic!(
            "sdu --json printed invalid JSON ({e}); output starts with:\n{}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(2000)])
        )
    });
    report(&v)
}

fn report(v: &Value) -> Report {
    let o = object(
        v,
        "document",
        &[
            "schema",
            "version",
            "roots",
            "entries",
            "errors",
            "error_count",
        ],
        &["total", "compressed_logical"],
    );
    let compressed_logical = o
        .get("compressed_logical")
        .map_or(0, |v| uint(v, "compressed_logical"));
    if o.contains_key("compressed_logical") {
        assert_ne!(compressed_logical, 0, "compressed_logical present as 0");
    }
    let errors: Vec<ReportedError> = array(&o["errors"], "errors")
        .iter()
        .map(reported_error)
        .collect();
    let error_count = uint(&o["error_count"], "error_count");
    assert!(
        error_count >= errors.len() as u64,
        "error_count {error_count} < {} errors listed",
        errors.len()
    );
    assert!(
        errors.windows(2).all(|w| {
            use std::os::unix::ffi::OsStrExt;
            (w[0].path.as_bytes(), &w[0].error) <= (w[1].path.as_bytes(), &w[1].error)
        }),
        "errors not sorted by path: {errors:?}"
    );
    Report {
        schema: uint(&o["schema"], "schema"),
        version: o["version"]
            .as_str()
            .unwrap_or_else(|| panic!("version is not a string: {}", o["version"]))
            .to_owned(),
        roots: array(&o["roots"], "roots").iter().map(path).collect(),
        entries: array(&o["entries"], "entries").iter().map(entry).collect(),
        errors,
        error_count,
        total: o.get("total").map(total),
        compressed_logical,
    }
}

fn reported_error(v: &Value) -> ReportedError {
    let o = object(v, "errors[]", &["path", "error"], &[]);
    ReportedError {
        path: path(&o["path"]),
        error: o["error"]
            .as_str()
            .unwrap_or_else(|| panic!("error is not a string: {v}"))
            .to_owned(),
    }
}

/// The size and count keys of an entry and of the `-c` total.
pub(crate) const FIGURES: [&str; 7] = [
    "apparent",
    "total",
    "exclusive",
    "shared",
    "reclaimable",
    "files",
    "dirs",
];

fn entry(v: &Value) -> Entry {
    let keys: Vec<&str> = ["path", "type", "depth"]
        .into_iter()
        .chain(FIGURES)
        .chain(["reclaimable_exact"])
        .collect();
    let o = object(v, "entry", &keys, &["unreachable", "reclaimable_bound"]);
    let kind = match o["type"].as_str() {
        Some("dir") => Kind::Dir,
        Some("file") => Kind::File,
        Some("symlink") => Kind::Symlink,
        Some("other") => Kind::Other,
        _ => panic!("entry type is not dir/file/symlink/other: {v}"),
    };
    let f = figures(o, "entry");
    Entry {
        path: path(&o["path"]),
        kind,
        depth: uint(&o["depth"], "depth"),
        apparent: f.apparent,
        total: f.total,
        exclusive: f.exclusive,
        shared: f.shared,
        reclaimable: f.reclaimable,
        files: f.files,
        dirs: f.dirs,
        reclaimable_exact: boolean(&o["reclaimable_exact"], "reclaimable_exact"),
        reclaimable_bound: bound(o, "entry"),
        unreachable: unreachable(o, "entry"),
    }
}

/// `reclaimable_bound`: one of its three words, present exactly when
/// `reclaimable_exact` is false.
pub(crate) fn bound(o: &Map<String, Value>, what: &str) -> Option<String> {
    let exact = boolean(&o["reclaimable_exact"], "reclaimable_exact");
    let b = o.get("reclaimable_bound").map(|v| {
        let w = v
            .as_str()
            .unwrap_or_else(|| panic!("{what}.reclaimable_bound is not a string: {v}"));
        assert!(
            ["at_most", "at_least", "unknown"].contains(&w),
            "{what}.reclaimable_bound is {w}"
        );
        w.to_owned()
    });
    assert_eq!(
        b.is_none(),
        exact,
        "{what}: reclaimable_bound {b:?} with reclaimable_exact {exact}"
    );
    b
}

/// `unreachable`: present exactly when not 0.
fn unreachable(o: &Map<String, Value>, what: &str) -> u64 {
    o.get("unreachable").map_or(0, |v| {
        let n = uint(v, &format!("{what}.unreachable"));
        assert_ne!(n, 0, "{what}.unreachable present as 0");
        n
    })
}

fn total(v: &Value) -> Total {
    let keys: Vec<&str> = FIGURES.into_iter().chain(["reclaimable_exact"]).collect();
    let o = object(v, "total", &keys, &["unreachable", "reclaimable_bound"]);
    Total {
        reclaimable_exact: boolean(&o["reclaimable_exact"], "total.reclaimable_exact"),
        reclaimable_bound: bound(o, "total"),
        unreachable: unreachable(o, "total"),
        ..figures(o, "total")
    }
}

fn boolean(v: &Value, what: &str) -> bool {
    v.as_bool()
        .unwrap_or_else(|| panic!("{what} is not a boolean: {v}"))
}

/// The [`FIGURES`] of an object already checked for its keys.
fn figures(o: &Map<String, Value>, what: &str) -> Total {
    let u = |k: &str| uint(&o[k], &format!("{what}.{k}"));
    Total {
        apparent: u("apparent"),
        total: u("total"),
        exclusive: u("exclusive"),
        shared: u("shared"),
        reclaimable: u("reclaimable"),
        files: u("files"),
        dirs: u("dirs"),
        reclaimable_exact: true,
        reclaimable_bound: None,
        unreachable: 0,
    }
}

/// A path is a string when it is valid UTF-8, else `{"bytes": "<base64>"}`;
/// the object form for a valid UTF-8 path is rejected (one spelling only).
fn path(v: &Value) -> OsString {
    match v {
        Value::String(s) => OsString::from(s),
        Value::Object(_) => {
            let o = object(v, "path", &["bytes"], &[]);
            let b64 = o["bytes"]
                .as_str()
                .unwrap_or_else(|| panic!("path.bytes is not a string: {v}"));
            let bytes = base64_decode(b64)
                .unwrap_or_else(|e| panic!("path.bytes {b64:?} is not base64: {e}"));
            assert!(
                std::str::from_utf8(&bytes).is_err(),
                "path {v} is valid UTF-8 and must be printed as a plain string"
            );
            OsString::from_vec(bytes)
        }
        _ => panic!("path is neither a string nor {{\"bytes\": ...}}: {v}"),
    }
}

/// Checks the key set of an object: all of `required`, any of `optional`,
/// nothing else.
fn object<'a>(
    v: &'a Value,
    what: &str,
    required: &[&str],
    optional: &[&str],
) -> &'a Map<String, Value> {
    let o = v
        .as_object()
        .unwrap_or_else(|| panic!("{what} is not an object: {v}"));
    for k in o.keys() {
        assert!(
            required.contains(&k.as_str()) || optional.contains(&k.as_str()),
            "unknown key {k:?} in {what} (schema drift: update tests/sdu/json.rs): {v}"
        );
    }
    for k in required {
        assert!(o.contains_key(*k), "missing key {k:?} in {what}: {v}");
    }
    o
}

fn array<'a>(v: &'a Value, what: &str) -> &'a Vec<Value> {
    v.as_array()
        .unwrap_or_else(|| panic!("{what} is not an array: {v}"))
}

fn uint(v: &Value, what: &str) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("{what} is not a non-negative integer: {v}"))
}

/// Standard base64 (RFC 4648 §4: `+/` alphabet, `=` padding required).
pub fn base64_decode(s: &str) -> Result<Vec<u8>, String> {
    fn val(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }
    let s = s.as_bytes();
    if s.len() % 4 != 0 {
        return Err(format!("length {} is not a multiple of 4", s.len()));
    }
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    for (i, quad) in s.chunks(4).enumerate() {
        let last = i + 1 == s.len() / 4;
        let pad = quad.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return Err("misplaced padding".into());
        }
        let mut n = 0u32;
        for &c in &quad[..4 - pad] {
            n = (n << 6) | val(c).ok_or_else(|| format!("bad character {:?}", c as char))?;
        }
        n <<= 6 * pad as u32;
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Ok(out)
}

#[test]
fn base64_decoder_follows_rfc4648() {
    assert_eq!(base64_decode("").unwrap(), b"");
    assert_eq!(base64_decode("Zg==").unwrap(), b"f");
    assert_eq!(base64_decode("Zm8=").unwrap(), b"fo");
    assert_eq!(base64_decode("Zm9v").unwrap(), b"foo");
    assert_eq!(base64_decode("Zm9vYmFy").unwrap(), b"foobar");
    assert_eq!(base64_decode("/+8=").unwrap(), [0xff, 0xef]);
    assert!(base64_decode("Zg").is_err());
    assert!(base64_decode("Zg==Zm9v").is_err());
    assert!(base64_decode("Z-8=").is_err());
}
