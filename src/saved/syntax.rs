//! The JSON of a saved scan, by hand: a pull parser that reads one token
//! at a time from a buffered reader, and the writers of names and numbers.
//!
//! Not serde: names are bytes, not text (ncdu writes a name's bytes as they
//! are, escaping only control characters, `"` and `\`, so a file holds
//! invalid UTF-8 whenever a name does); a tree is as deep as the
//! filesystem's, where serde's recursion stops at 128 levels; and an error
//! must say where it is (line and column) and never leave a half-read tree
//! looking whole. Nothing here recurses: [`Parser::skip`] keeps its own
//! stack.

use std::fmt;
use std::io::{self, Read, Write};

/// Where and why a saved scan could not be read.
#[derive(Debug)]
pub(crate) struct ParseError {
    /// 1-based line and column (in bytes) of the problem; 0 for a problem
    /// of the whole file (an empty file), said without a place.
    pub(crate) line: u64,
    /// See `line`.
    pub(crate) column: u64,
    /// What is wrong.
    pub(crate) what: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            return f.write_str(&self.what);
        }
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.what
        )
    }
}

/// The result of a parsing step.
pub(crate) type Parsed<T> = Result<T, ParseError>;

/// A pull parser over a reader, through a buffer of its own: the next
/// byte is an index into it, not a call to the reader (a third of the
/// time of reading a saved scan of millions of entries went to those).
pub(crate) struct Parser<R> {
    r: R,
    /// Bytes read ahead: those of `buf[pos..end]` are the next.
    buf: Box<[u8]>,
    pos: usize,
    end: usize,
    line: u64,
    column: u64,
    /// Where the last string began (see [`Parser::string_at`]).
    string_at: (u64, u64),
}

impl<R: Read> Parser<R> {
    /// Reads from `r`.
    pub(crate) fn new(r: R) -> Self {
        Parser {
            r,
            buf: vec![0; 1 << 16].into_boxed_slice(),
            pos: 0,
            end: 0,
            line: 1,
            column: 1,
            string_at: (0, 0),
        }
    }

    /// An error at the current position.
    pub(crate) fn error<T>(&self, what: impl Into<String>) -> Parsed<T> {
        self.error_at(self.position(), what)
    }

    /// An error at `at`, a [`Self::position`] taken before.
    pub(crate) fn error_at<T>(&self, at: (u64, u64), what: impl Into<String>) -> Parsed<T> {
        Err(ParseError {
            line: at.0,
            column: at.1,
            what: what.into(),
        })
    }

    /// The line and column of the next byte.
    pub(crate) fn position(&self) -> (u64, u64) {
        (self.line, self.column)
    }

    /// The line and column of the opening quote of the last string read.
    pub(crate) fn string_at(&self) -> (u64, u64) {
        self.string_at
    }

    fn io<T>(&self, e: &io::Error) -> Parsed<T> {
        self.error(format!("read error: {e}"))
    }

    /// The next byte, not consumed; `None` at the end of the input.
    #[inline]
    fn peek_byte(&mut self) -> Parsed<Option<u8>> {
        if self.pos < self.end {
            return Ok(Some(self.buf[self.pos]));
        }
        self.fill()?;
        Ok((self.pos < self.end).then(|| self.buf[self.pos]))
    }

    /// Reads ahead once the bytes read are used up; none at the end.
    #[cold]
    fn fill(&mut self) -> Parsed<()> {
        if self.pos < self.end {
            return Ok(());
        }
        loop {
            match self.r.read(&mut self.buf) {
                Ok(n) => {
                    (self.pos, self.end) = (0, n);
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.io(&e),
            }
        }
    }

    /// Consumes one byte (after a peek that returned it).
    #[inline]
    fn bump(&mut self, b: u8) {
        self.pos += 1;
        if b == b'\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
    }

    /// The next byte, consumed; an error at the end of the input.
    fn byte(&mut self) -> Parsed<u8> {
        match self.peek_byte()? {
            Some(b) => {
                self.bump(b);
                Ok(b)
            }
            None => self.error("unexpected end of file (the file is truncated)"),
        }
    }

    /// The next byte after whitespace, not consumed; `None` at the end.
    pub(crate) fn peek(&mut self) -> Parsed<Option<u8>> {
        loop {
            match self.peek_byte()? {
                Some(b @ (b' ' | b'\t' | b'\n' | b'\r')) => self.bump(b),
                other => return Ok(other),
            }
        }
    }

    /// Consumes `c` (after whitespace), or fails saying what was expected.
    pub(crate) fn expect(&mut self, c: u8, what: &str) -> Parsed<()> {
        match self.peek()? {
            Some(b) if b == c => {
                self.bump(b);
                Ok(())
            }
            Some(b) => self.error(format!("expected {what}, found {}", shown(b))),
            None => self.error(format!(
                "unexpected end of file, expected {what} (the file is truncated)"
            )),
        }
    }

    /// Whether the next token is `c` (not consumed).
    pub(crate) fn at(&mut self, c: u8) -> Parsed<bool> {
        Ok(self.peek()? == Some(c))
    }

    /// Steps to the next element of an array whose `[` was read: `true`
    /// when there is one (its first byte not consumed), `false` after the
    /// closing `]`. `first` says whether no element was read yet.
    pub(crate) fn next_element(&mut self, first: bool) -> Parsed<bool> {
        if self.at(b']')? {
            self.bump(b']');
            return Ok(false);
        }
        if !first {
            self.expect(b',', "',' or ']'")?;
        }
        Ok(true)
    }

    /// Steps to the next key of an object whose `{` was read: reads the key
    /// into `key` and the `:` after it, or returns `false` after the
    /// closing `}`.
    pub(crate) fn next_key(&mut self, first: bool, key: &mut Vec<u8>) -> Parsed<bool> {
        if self.at(b'}')? {
            self.bump(b'}');
            return Ok(false);
        }
        if !first {
            self.expect(b',', "',' or '}'")?;
        }
        self.string(key)?;
        self.expect(b':', "':'")?;
        Ok(true)
    }

    /// A non-negative integer.
    pub(crate) fn uint(&mut self) -> Parsed<u64> {
        match self.peek()? {
            Some(b'0'..=b'9') => {}
            Some(b) => return self.error(format!("expected a number, found {}", shown(b))),
            None => return self.byte().map(u64::from),
        }
        let mut v: u64 = 0;
        let mut digits = 0;
        while let Some(b @ b'0'..=b'9') = self.peek_byte()? {
            if digits == 1 && v == 0 {
                return self.error("a number with a leading zero");
            }
            v = match v
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(b - b'0')))
            {
                Some(v) => v,
                None => return self.error("number out of range"),
            };
            digits += 1;
            self.bump(b);
        }
        if let Some(b @ (b'.' | b'e' | b'E')) = self.peek_byte()? {
            return self.error(format!("expected an integer, found {}", shown(b)));
        }
        Ok(v)
    }

    /// An integer that fits `u32`.
    pub(crate) fn u32(&mut self) -> Parsed<u32> {
        let v = self.uint()?;
        match u32::try_from(v) {
            Ok(v) => Ok(v),
            Err(_) => self.error(format!("number {v} out of range")),
        }
    }

    /// An integer, possibly negative, as wide as any `u64` or `i64`.
    pub(crate) fn signed(&mut self) -> Parsed<i128> {
        let neg = self.at(b'-')?;
        if neg {
            self.bump(b'-');
        }
        let v = i128::from(self.uint()?);
        Ok(if neg { -v } else { v })
    }

    /// `true` or `false`.
    pub(crate) fn bool(&mut self) -> Parsed<bool> {
        match self.peek()? {
            Some(b't') => self.literal(b"true").map(|()| true),
            Some(b'f') => self.literal(b"false").map(|()| false),
            _ => self.error("expected true or false"),
        }
    }

    /// `null`, if it comes next (consumed).
    pub(crate) fn null(&mut self) -> Parsed<bool> {
        if self.at(b'n')? {
            self.literal(b"null")?;
            return Ok(true);
        }
        Ok(false)
    }

    fn literal(&mut self, lit: &[u8]) -> Parsed<()> {
        for &c in lit {
            if self.byte()? != c {
                return self.error(format!(
                    "expected {}",
                    String::from_utf8_lossy(lit).into_owned()
                ));
            }
        }
        Ok(())
    }

    /// A string, as bytes: escapes decoded (`\u` to UTF-8, surrogate pairs
    /// joined), every other byte as it is, valid UTF-8 or not.
    pub(crate) fn string(&mut self, out: &mut Vec<u8>) -> Parsed<()> {
        out.clear();
        self.expect(b'"', "a string")?;
        self.string_at = (self.line, self.column - 1);
        loop {
            // Copy the plain bytes of the buffer in one go.
            self.fill()?;
            let (n, end) = {
                let buf = &self.buf[self.pos..self.end];
                let n = buf
                    .iter()
                    .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
                    .unwrap_or(buf.len());
                out.extend_from_slice(&buf[..n]);
                (n, n < buf.len() || buf.is_empty())
            };
            self.pos += n;
            self.column += n as u64;
            if !end {
                continue;
            }
            match self.byte()? {
                b'"' => return Ok(()),
                b'\\' => self.escape(out)?,
                b => {
                    return self.error(format!(
                        "control character {} in a string (it must be escaped)",
                        shown(b)
                    ));
                }
            }
        }
    }

    fn escape(&mut self, out: &mut Vec<u8>) -> Parsed<()> {
        let c = match self.byte()? {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let mut cp = self.hex4()?;
                if (0xd800..0xdc00).contains(&cp) {
                    if self.byte()? != b'\\' || self.byte()? != b'u' {
                        return self.error("a lone surrogate in a \\u escape");
                    }
                    let low = self.hex4()?;
                    if !(0xdc00..0xe000).contains(&low) {
                        return self.error("a lone surrogate in a \\u escape");
                    }
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
                }
                match char::from_u32(cp) {
                    Some(ch) => {
                        let mut b = [0; 4];
                        out.extend_from_slice(ch.encode_utf8(&mut b).as_bytes());
                    }
                    None => return self.error("a lone surrogate in a \\u escape"),
                }
                return Ok(());
            }
            b => return self.error(format!("invalid escape \\{}", shown(b))),
        };
        out.push(c);
        Ok(())
    }

    fn hex4(&mut self) -> Parsed<u32> {
        let mut v = 0;
        for _ in 0..4 {
            let b = self.byte()?;
            let d = match (b as char).to_digit(16) {
                Some(d) => d,
                None => return self.error("invalid \\u escape"),
            };
            v = v * 16 + d;
        }
        Ok(v)
    }

    /// Skips one value of any kind, however deep, without recursion.
    pub(crate) fn skip(&mut self) -> Parsed<()> {
        // The containers open: true for an object.
        let mut stack: Vec<bool> = Vec::new();
        let mut scratch = Vec::new();
        loop {
            // One value.
            match self.peek()? {
                Some(b'[') => {
                    self.bump(b'[');
                    if self.next_element(true)? {
                        stack.push(false);
                        continue;
                    }
                }
                Some(b'{') => {
                    self.bump(b'{');
                    if self.next_key(true, &mut scratch)? {
                        stack.push(true);
                        continue;
                    }
                }
                Some(b'"') => self.string(&mut scratch)?,
                Some(b't' | b'f') => {
                    self.bool()?;
                }
                Some(b'n') => {
                    self.null()?;
                }
                Some(b'-' | b'0'..=b'9') => self.number()?,
                Some(b) => return self.error(format!("expected a value, found {}", shown(b))),
                None => return self.byte().map(drop),
            }
            // After a value: close containers, or go on to the next value.
            loop {
                match stack.last() {
                    None => return Ok(()),
                    Some(&object) => {
                        let more = if object {
                            self.next_key(false, &mut scratch)?
                        } else {
                            self.next_element(false)?
                        };
                        if more {
                            break;
                        }
                        stack.pop();
                    }
                }
            }
        }
    }

    /// Any JSON number (skipped).
    fn number(&mut self) -> Parsed<()> {
        if self.at(b'-')? {
            self.bump(b'-');
        }
        self.digits()?;
        if let Some(b'.') = self.peek_byte()? {
            self.bump(b'.');
            self.digits()?;
        }
        if let Some(b @ (b'e' | b'E')) = self.peek_byte()? {
            self.bump(b);
            if let Some(s @ (b'+' | b'-')) = self.peek_byte()? {
                self.bump(s);
            }
            self.digits()?;
        }
        Ok(())
    }

    fn digits(&mut self) -> Parsed<()> {
        let mut any = false;
        while let Some(b @ b'0'..=b'9') = self.peek_byte()? {
            self.bump(b);
            any = true;
        }
        if any {
            Ok(())
        } else {
            self.error("expected a digit")
        }
    }

    /// Checks that nothing but whitespace follows.
    pub(crate) fn end(&mut self) -> Parsed<()> {
        match self.peek()? {
            None => Ok(()),
            Some(b) => self.error(format!(
                "unexpected {} after the end of the document",
                shown(b)
            )),
        }
    }
}

/// A byte as an error message shows it.
fn shown(b: u8) -> String {
    if b.is_ascii_graphic() {
        format!("'{}'", b as char)
    } else {
        format!("byte 0x{b:02x}")
    }
}

/// Writes `bytes` as a JSON string as ncdu writes names: every byte as it
/// is, except `"`, `\` and control characters, which are escaped.
pub(crate) fn write_string(w: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
    w.write_all(b"\"")?;
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..0x20 | 0x7f => b"",
            _ => continue,
        };
        w.write_all(&bytes[start..i])?;
        if esc.is_empty() {
            write!(w, "\\u{b:04x}")?;
        } else {
            w.write_all(esc)?;
        }
        start = i + 1;
    }
    w.write_all(&bytes[start..])?;
    w.write_all(b"\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parser(s: &[u8]) -> Parser<&[u8]> {
        Parser::new(s)
    }

    #[test]
    fn strings_round_trip_as_bytes() {
        for name in [
            &b"plain"[..],
            b"quote\" back\\slash",
            b"new\nline\ttab\x01\x7f",
            b"\xff\xfe not utf-8 \xc3\x28",
            "é 🦀".as_bytes(),
        ] {
            let mut v = Vec::new();
            write_string(&mut v, name).unwrap();
            let mut out = Vec::new();
            parser(&v).string(&mut out).unwrap();
            assert_eq!(out, name);
        }
        let mut out = Vec::new();
        parser(br#""\u00e9\ud83e\udd80\/""#)
            .string(&mut out)
            .unwrap();
        assert_eq!(out, "é🦀/".as_bytes());
        assert!(parser(b"\"a\nb\"").string(&mut out).is_err());
        assert!(parser(b"\"abc").string(&mut out).is_err());
        assert!(parser(br#""\ud800x""#).string(&mut out).is_err());
    }

    #[test]
    fn numbers() {
        assert_eq!(parser(b" 0").uint().unwrap(), 0);
        assert_eq!(parser(b"18446744073709551615").uint().unwrap(), u64::MAX);
        assert!(parser(b"18446744073709551616").uint().is_err());
        assert!(parser(b"01").uint().is_err());
        assert!(parser(b"1.5").uint().is_err());
        assert!(parser(b"-1").uint().is_err());
        assert_eq!(parser(b"-9").signed().unwrap(), -9);
        assert!(parser(b"4294967296").u32().is_err());
    }

    #[test]
    fn skips_anything_deep() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let mut p = parser(deep.as_bytes());
        p.skip().unwrap();
        p.end().unwrap();
        let mut p = parser(br#"{"a":[1,-2.5e3,true,null,{"b":"c"}],"d":{}} x"#);
        p.skip().unwrap();
        let e = p.end().unwrap_err();
        assert_eq!((e.line, e.column), (1, 45));
        assert!(parser(b"[1,2").skip().is_err());
        assert!(parser(b"[1 2]").skip().is_err());
        assert!(parser(b"{\"a\" 1}").skip().is_err());
    }

    #[test]
    fn errors_say_where() {
        let e = parser(b"[\n  1,\n  x]").skip().unwrap_err();
        assert_eq!((e.line, e.column), (3, 3));
    }
}
