//! ncdu 2's binary export (`ncdu -O`, <https://dev.yorhel.nl/ncdu/binfmt>),
//! the parts its reader and writer share: the signature, the blocks, the
//! item keys, and CBOR's heads.
//!
//! The file is the signature, then blocks, each `TypeLen` (4 bytes big
//! endian: the type in the high 4 bits, the block's whole length in the
//! low 28), its content, and `TypeLen` again. A data block (type 0) holds
//! its number (4 bytes) and a zstd frame of items; the index block (type
//! 1), last in the file, holds for each data block number its offset in
//! the file (high 40 bits) and length (low 24), then the root item's
//! reference. An item is a CBOR map of small integer keys; a reference to
//! one is its block number (high bits) and its offset in that block's
//! uncompressed data (low 24 bits). A directory names its last entry
//! (`sub`), each entry the one before it (`prev`).
//!
//! sdu adds, where ncdu's reader skips them: in each item the key `"sdu"`,
//! a byte string holding the entry's info object of sdu's JSON export
//! verbatim; and a block of type [`SDU_BLOCK`] before the index holding a
//! zstd frame of the JSON export's metadata, a newline, and what follows
//! its tree (the records). Readers skip blocks of a type they do not know.

/// The first 8 bytes of the file.
pub(super) const SIGNATURE: &[u8; 8] = b"\xbfncduEX1";

/// The block types.
pub(super) const DATA_BLOCK: u32 = 0;
pub(super) const INDEX_BLOCK: u32 = 1;
/// sdu's metadata and records (a type ncdu does not use).
pub(super) const SDU_BLOCK: u32 = 14;

/// The item keys sdu reads or writes (ncdu's numbers).
pub(super) mod key {
    pub(in super::super) const TYPE: u64 = 0;
    pub(in super::super) const NAME: u64 = 1;
    pub(in super::super) const PREV: u64 = 2;
    pub(in super::super) const ASIZE: u64 = 3;
    pub(in super::super) const DSIZE: u64 = 4;
    pub(in super::super) const DEV: u64 = 5;
    pub(in super::super) const RDERR: u64 = 6;
    pub(in super::super) const CUMASIZE: u64 = 7;
    pub(in super::super) const CUMDSIZE: u64 = 8;
    pub(in super::super) const SHRASIZE: u64 = 9;
    pub(in super::super) const SHRDSIZE: u64 = 10;
    pub(in super::super) const ITEMS: u64 = 11;
    pub(in super::super) const SUB: u64 = 12;
    pub(in super::super) const INO: u64 = 13;
    pub(in super::super) const NLINK: u64 = 14;
}

/// The item types (`type`).
pub(super) mod etype {
    pub(in super::super) const DIR: i64 = 0;
    pub(in super::super) const REG: i64 = 1;
    pub(in super::super) const NONREG: i64 = 2;
    /// A file with more than one link: `ino` and `nlink` given.
    pub(in super::super) const LINK: i64 = 3;
    /// An entry that could not be read.
    pub(in super::super) const ERR: i64 = -1;
    /// Excluded by a pattern, on another filesystem, a kernel filesystem.
    pub(in super::super) const PATTERN: i64 = -2;
    pub(in super::super) const OTHERFS: i64 = -3;
    pub(in super::super) const KERNFS: i64 = -4;
}

/// CBOR's major types.
pub(super) const POS: u8 = 0;
pub(super) const NEG: u8 = 1;
pub(super) const BYTES: u8 = 2;
pub(super) const TEXT: u8 = 3;
pub(super) const ARRAY: u8 = 4;
pub(super) const MAP: u8 = 5;
pub(super) const TAG: u8 = 6;
pub(super) const SIMPLE: u8 = 7;

/// `simple` values: false, true, and the break of an indefinite length.
pub(super) const FALSE: u64 = 20;
pub(super) const TRUE: u64 = 21;

/// A block's `TypeLen`.
pub(super) fn type_len(kind: u32, len: u32) -> [u8; 4] {
    ((kind << 28) | len).to_be_bytes()
}

/// Appends the CBOR head of `major` with argument `arg`, shortest form.
pub(super) fn head(out: &mut Vec<u8>, major: u8, arg: u64) {
    let m = major << 5;
    if arg < 24 {
        out.push(m | arg as u8);
    } else if let Ok(a) = u8::try_from(arg) {
        out.extend_from_slice(&[m | 24, a]);
    } else if let Ok(a) = u16::try_from(arg) {
        out.push(m | 25);
        out.extend_from_slice(&a.to_be_bytes());
    } else if let Ok(a) = u32::try_from(arg) {
        out.push(m | 26);
        out.extend_from_slice(&a.to_be_bytes());
    } else {
        out.push(m | 27);
        out.extend_from_slice(&arg.to_be_bytes());
    }
}

/// Appends key `k` with the unsigned value `v`.
pub(super) fn uint(out: &mut Vec<u8>, k: u64, v: u64) {
    head(out, POS, k);
    head(out, POS, v);
}

/// Appends a signed integer.
pub(super) fn int(out: &mut Vec<u8>, v: i64) {
    if v >= 0 {
        head(out, POS, v as u64);
    } else {
        head(out, NEG, (-1 - v) as u64);
    }
}

/// Where the export's bytes are: held (read from standard input), or in
/// a file read where asked.
pub(crate) enum Bytes {
    Held(Vec<u8>),
    File(std::fs::File, u64),
}

impl Bytes {
    pub(super) fn len(&self) -> usize {
        match self {
            Bytes::Held(v) => v.len(),
            Bytes::File(_, n) => usize::try_from(*n).unwrap_or(usize::MAX),
        }
    }

    /// The bytes `[at, at + n)`, which lie within [`Self::len`].
    pub(super) fn get(&self, at: usize, n: usize) -> Result<std::borrow::Cow<'_, [u8]>, String> {
        match self {
            Bytes::Held(v) => Ok(std::borrow::Cow::Borrowed(&v[at..at + n])),
            Bytes::File(f, _) => {
                use std::os::unix::fs::FileExt;
                let mut b = vec![0; n];
                f.read_exact_at(&mut b, at as u64)
                    .map_err(|e| crate::error::io_text(&e))?;
                Ok(std::borrow::Cow::Owned(b))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_take_the_shortest_form() {
        let enc = |major, arg| {
            let mut v = Vec::new();
            head(&mut v, major, arg);
            v
        };
        assert_eq!(enc(POS, 0), [0x00]);
        assert_eq!(enc(POS, 23), [0x17]);
        assert_eq!(enc(POS, 24), [0x18, 24]);
        assert_eq!(enc(POS, 500), [0x19, 0x01, 0xf4]);
        assert_eq!(enc(POS, 0x10000), [0x1a, 0, 1, 0, 0]);
        assert_eq!(
            enc(POS, u64::MAX),
            [0x1b, 255, 255, 255, 255, 255, 255, 255, 255]
        );
        assert_eq!(enc(BYTES, 5), [0x45]);
        let mut v = Vec::new();
        int(&mut v, -1);
        int(&mut v, -500);
        assert_eq!(v, [0x20, 0x39, 0x01, 0xf3]);
        assert_eq!(type_len(1, 24), [0x10, 0, 0, 24]);
    }
}
