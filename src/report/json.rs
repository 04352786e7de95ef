//! The `--json` document, written entry by entry as the entries are chosen.
//!
//! Kept apart from the text printers because it is a contract (its
//! [`SCHEMA`] version is bumped when a key changes meaning or goes away)
//! rather than a layout.

use std::io::{self, Write};

use super::options::ReportOptions;
use super::select;
use crate::figures::Stats;
use crate::tree::{Entry, Tree};

/// The JSON schema version; bumped when a key changes meaning or goes away.
pub const SCHEMA: u32 = 1;

/// Writes the document: the roots given, every entry to report, the `-c`
/// total and the count of entries that could not be read.
pub(super) fn write(
    out: &mut dyn Write,
    tree: &Tree,
    roots: &[Vec<u8>],
    errors: u64,
    opts: &ReportOptions,
) -> io::Result<()> {
    write!(
        out,
        "{{\"schema\":{SCHEMA},\"version\":\"{}\",\"roots\":[",
        env!("CARGO_PKG_VERSION")
    )?;
    for (i, r) in roots.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        json_path(out, r)?;
    }
    out.write_all(b"],\"entries\":[")?;
    let mut first = true;
    select::entries(tree, opts, |e: &Entry<'_>| {
        if !first {
            out.write_all(b",\n")?;
        } else {
            out.write_all(b"\n")?;
        }
        first = false;
        out.write_all(b"{\"path\":")?;
        json_path(out, e.path)?;
        write!(
            out,
            ",\"type\":\"{}\",\"depth\":{},",
            e.kind.as_str(),
            e.depth
        )?;
        json_figures(out, e.figures)?;
        out.write_all(b"}")
    })?;
    out.write_all(b"\n]")?;
    if opts.grand_total {
        out.write_all(b",\"total\":{")?;
        json_figures(out, tree.grand_total())?;
        out.write_all(b"}")?;
    }
    writeln!(out, ",\"errors\":{errors}}}")
}

fn json_figures(out: &mut dyn Write, s: &Stats) -> io::Result<()> {
    write!(
        out,
        "\"apparent\":{},\"total\":{},\"exclusive\":{},\"shared\":{},\"reclaimable\":{},\"files\":{},\"dirs\":{}",
        s.apparent, s.total, s.exclusive, s.shared, s.reclaimable, s.files, s.dirs
    )
}

/// A path as a JSON string when it is UTF-8, else `{"bytes": "<base64>"}`,
/// so that every name round-trips exactly.
fn json_path(out: &mut dyn Write, p: &[u8]) -> io::Result<()> {
    match std::str::from_utf8(p) {
        // Keep the io::ErrorKind (BrokenPipe above all) of a failed write.
        Ok(s) => serde_json::to_writer(&mut *out, s).map_err(|e| match e.io_error_kind() {
            Some(kind) => io::Error::from(kind),
            None => io::Error::other(e),
        }),
        Err(_) => write!(out, "{{\"bytes\":\"{}\"}}", base64(p)),
    }
}

/// Standard base64 with padding (RFC 4648 §4).
pub fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                s.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::base64;

    #[test]
    fn base64_rfc4648_vectors() {
        for (i, o) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(i.as_bytes()), o);
        }
    }
}
