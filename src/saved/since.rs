//! The extent maps a saved scan keeps for `--since`: in the metadata
//! object, `"sdu":{..,"mappings":"…"}`, where ncdu skips them, so that
//! `--since` reads the file's first line and stops.
//!
//! The value is base64 of postcard records (LEB128 varints), one a file,
//! sorted by device and inode: its key (device, inode, ctime, size,
//! blocks), then its extents (address, length, flags), counted. Only the
//! extents the figures read are kept ([`crate::records::mappings`]).

use std::io::{BufRead, Read};

use base64::Engine as _;

use super::FORMAT;
use super::syntax::{ParseError, Parser};
use crate::records::mappings::{self, MapBuf, Mappings};

/// `m` as the metadata's `"mappings"` value (base64, no quotes).
pub(super) fn encode(m: &MapBuf) -> String {
    base64::engine::general_purpose::STANDARD_NO_PAD.encode(m.sorted())
}

/// The maps of the value `s` of `"mappings"`, given back as soon as it is
/// decoded (a map is 37 bytes there, 26 decoded, 56 and its extents'
/// read: the three are never all held).
fn decode(s: Vec<u8>) -> Result<Mappings, String> {
    let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(&s)
        .map_err(|e| format!("its extent maps are not base64: {e}"))?;
    drop(s);
    mappings::decode(&bytes).map_err(|e| format!("its extent maps are corrupt: {e}"))
}

/// Reads the extent maps of the saved scan `file` (`-`: standard input;
/// sdu's JSON, or it compressed with zstd) for `--since`: only its
/// metadata object is read.
/// `Ok(None)`: the file is a saved scan that keeps none (ncdu's, or one
/// written by an sdu without them).
///
/// # Errors
/// It cannot be opened, or is no saved scan of a kind `--since` reads.
pub(crate) fn read(file: &[u8]) -> Result<Option<Mappings>, String> {
    use std::os::unix::ffi::OsStrExt;
    let f: Box<dyn Read> = if file == b"-" {
        Box::new(std::io::stdin())
    } else {
        let f = std::fs::File::open(std::ffi::OsStr::from_bytes(file))
            .map_err(|e| crate::error::io_text(&e))?;
        Box::new(f)
    };
    let mut r = std::io::BufReader::with_capacity(1 << 16, f);
    let head = r.fill_buf().map_err(|e| crate::error::io_text(&e))?;
    if head.starts_with(super::binfmt::SIGNATURE) {
        return Err("an ncdu binary export keeps no extent maps: --since reads \
                    --export-format json or json-zstd"
            .into());
    }
    let at = |e: ParseError| format!("{}:{}: {}", e.line, e.column, e.what);
    let mut m = if head.starts_with(super::ZSTD_MAGIC) {
        let z = zstd::stream::read::Decoder::new(r).map_err(|e| crate::error::io_text(&e))?;
        metadata(Parser::new(z)).map_err(at)?
    } else {
        metadata(Parser::new(r)).map_err(at)?
    };
    if let Some(m) = m.as_mut() {
        m.scan = file.to_vec();
    }
    Ok(m)
}

/// The maps in the metadata object that `p` starts at.
fn metadata(mut p: Parser<impl Read>) -> Result<Option<Mappings>, ParseError> {
    p.expect(b'[', "'[' (a saved scan is a JSON array)")?;
    if p.uint()? != 1 {
        return p.error("not a saved scan of version 1 (ncdu's)");
    }
    p.expect(b',', "','")?;
    p.uint()?;
    p.expect(b',', "','")?;
    p.expect(b'{', "the metadata object")?;
    let (mut key, mut value) = (Vec::new(), Vec::new());
    let mut first = true;
    let mut found = None;
    while p.next_key(first, &mut key)? {
        first = false;
        if key != b"sdu" {
            p.skip()?;
            continue;
        }
        p.expect(b'{', "an object")?;
        let mut f = true;
        while p.next_key(f, &mut key)? {
            f = false;
            match &key[..] {
                b"format" if p.uint()? > u64::from(FORMAT) => {
                    return p.error("written by a newer sdu");
                }
                b"format" => {}
                b"mappings" => {
                    p.string(&mut value)?;
                    found = Some(decode(std::mem::take(&mut value)).or_else(|e| p.error(e))?);
                }
                _ => p.skip()?,
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_read_back_as_written() {
        let mut m = MapBuf::default();
        let e = crate::records::mappings::MapExtent {
            physical: 1 << 40,
            length: 65536,
            flags: 0x2001,
        };
        for ino in [9u64, 3, 5] {
            let key = crate::records::mappings::MapKey {
                dev: 2049,
                ino,
                ctime: (-3, 999_999_999),
                size: ino * 100,
                blocks: 8,
            };
            m.push(key, &vec![e; ino as usize % 3]);
        }
        let text = encode(&m);
        let line = format!(
            "[1,2,{{\"progname\":\"sdu\",\"sdu\":{{\"format\":2,\"mappings\":\"{text}\"}}}},\n[{{\"name\":\"x\"}}]]"
        );
        let back = metadata(Parser::new(line.as_bytes())).unwrap().unwrap();
        let inos: Vec<u64> = back.iter().map(|(k, _)| k.ino).collect();
        assert_eq!(inos, [3, 5, 9], "sorted");
        let lens: Vec<usize> = back.iter().map(|(_, e)| e.len()).collect();
        assert_eq!(lens, [0, 2, 0]);
        assert!(back.iter().flat_map(|(_, e)| e).all(|x| *x == e));
        // Cut short, or bytes changed: said, never taken for maps.
        let cut = format!(
            "[1,2,{{\"sdu\":{{\"mappings\":\"{}\"}}}}]",
            &text[..text.len() - 4]
        );
        assert!(metadata(Parser::new(cut.as_bytes())).is_err());
        let none = "[1,2,{\"progname\":\"ncdu\"},[{\"name\":\"x\"}]]";
        assert!(metadata(Parser::new(none.as_bytes())).unwrap().is_none());
    }
}
