//! `--import` of ncdu 2's binary export (the layout is in
//! [`super::binfmt`]): the file is checked block by block and item by
//! item, and its tree is read out as the JSON export of the same tree, one
//! entry a line, which the JSON reader ([`super::decode`]) then reads as it
//! reads any saved scan. An entry with sdu's `"sdu"` key is its info
//! object as written; one without (ncdu's own file) is given ncdu's keys
//! of its JSON export. sdu's block, if there, gives the metadata and the
//! records after the tree.
//!
//! A file is read where its index says (standard input, which cannot be,
//! is held whole), and each block is decompressed when its items are
//! read, a few kept. An item reached twice (references that loop or join)
//! is an error, so the tree read is a tree and its reading ends. Once it
//! has, the blocks are given back, and sdu's records are decompressed as
//! they are read: the reader's peak is the tree read, not the file beside
//! it.

use std::cell::RefCell;
use std::io::{self, BufRead, Read};
use std::rc::Rc;

use super::Saved;
pub(super) use super::binfmt::Bytes;
use super::binfmt::{self, ARRAY, BYTES, MAP, NEG, POS, SIMPLE, TAG, TEXT, etype, key};
use super::syntax::{ParseError, write_string};

/// Blocks kept decompressed.
const CACHED: usize = 8;

/// The file and its index, checked.
struct File {
    data: Bytes,
    /// Offset and length of each data block, by number (0: none).
    index: Vec<u64>,
    root: u64,
    /// sdu's metadata, and its block (compressed: the metadata's line,
    /// then the records), if sdu wrote the file.
    sdu: Option<(Vec<u8>, Vec<u8>)>,
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes(b[..4].try_into().expect("4 bytes"))
}

fn be64(b: &[u8]) -> u64 {
    u64::from_be_bytes(b[..8].try_into().expect("8 bytes"))
}

impl File {
    /// Reads the index (and sdu's block) of `data`, which starts with the
    /// signature.
    fn open(data: Bytes) -> Result<File, String> {
        let truncated = || "the binary export is truncated (its index block is not at its end)";
        let n = data.len();
        if n < 8 + 4 {
            return Err(truncated().into());
        }
        let tl = be32(&data.get(n - 4, 4)?);
        let len = (tl & 0x0fff_ffff) as usize;
        if tl >> 28 != binfmt::INDEX_BLOCK || len < 16 || len > n - 8 || (len - 16) % 8 != 0 {
            return Err(truncated().into());
        }
        let start = n - len;
        let block = data.get(start, len)?;
        if be32(&block) != tl {
            return Err(truncated().into());
        }
        let body = &block[4..len - 4];
        let (entries, root) = body.split_at(body.len() - 8);
        let index: Vec<u64> = entries.chunks_exact(8).map(be64).collect();
        let root = be64(root);
        drop(block);
        // sdu's block, just before the index.
        let mut sdu = None;
        if start >= 8 + 8 {
            let tl = be32(&data.get(start - 4, 4)?);
            let len = (tl & 0x0fff_ffff) as usize;
            if tl >> 28 == binfmt::SDU_BLOCK && len >= 8 && len <= start - 8 {
                let b = start - len;
                if be32(&data.get(b, 4)?) != tl {
                    return Err("sdu's block is corrupt (its two lengths differ)".into());
                }
                let frame = data.get(b + 4, len - 8)?.into_owned();
                // Its first line, the metadata, decompressed here; the
                // records after it once the tree is read.
                let mut meta = Vec::new();
                zstd::stream::read::Decoder::with_buffer(&frame[..])
                    .map(io::BufReader::new)
                    .and_then(|mut d| d.read_until(b'\n', &mut meta))
                    .map_err(|e| format!("sdu's block does not decompress: {e}"))?;
                if meta.pop() != Some(b'\n') {
                    return Err("sdu's block is corrupt (no metadata)".into());
                }
                sdu = Some((meta, frame));
            }
        }
        Ok(File {
            data,
            index,
            root,
            sdu,
        })
    }

    /// The uncompressed items of block `num`.
    fn block(&self, num: u64) -> Result<Vec<u8>, String> {
        let bad = |what: &str| format!("block {num}: {what}");
        let Some(&e) = self.index.get(num as usize) else {
            return Err(bad("not in the index"));
        };
        let (off, len) = ((e >> 24) as usize, (e & 0xff_ffff) as usize);
        if e == 0 {
            return Err(bad("not in the index"));
        }
        if len <= 12 || off.checked_add(len).is_none_or(|end| end > self.data.len()) {
            return Err(bad("lies outside the file (truncated?)"));
        }
        let b = self.data.get(off, len)?;
        let tl = binfmt::type_len(binfmt::DATA_BLOCK, len as u32);
        if b[..4] != tl || b[len - 4..] != tl || u64::from(be32(&b[4..])) != num {
            return Err(bad("its header does not match the index"));
        }
        let mut out = Vec::new();
        zstd::stream::read::Decoder::with_buffer(&b[8..len - 4])
            .and_then(|d| d.take(1 << 24).read_to_end(&mut out))
            .map_err(|e| bad(&format!("does not decompress: {e}")))?;
        if out.len() >= 1 << 24 {
            return Err(bad("holds 16 MiB or more"));
        }
        Ok(out)
    }
}

/// sdu's block, decompressed as it is read.
type SduBlock =
    io::BufReader<zstd::stream::read::Decoder<'static, io::BufReader<io::Cursor<Vec<u8>>>>>;

/// A reader of sdu's block `frame`, decompressed, from its start.
fn sdu_block(frame: Vec<u8>) -> io::Result<SduBlock> {
    let d = zstd::stream::read::Decoder::new(io::Cursor::new(frame))?;
    Ok(io::BufReader::with_capacity(1 << 16, d))
}

/// An item's fields, as read.
#[derive(Default)]
struct Item {
    etype: i64,
    name: Vec<u8>,
    prev: Option<u64>,
    asize: u64,
    dsize: u64,
    dev: Option<u64>,
    rderr: Option<bool>,
    sub: Option<u64>,
    ino: Option<u64>,
    nlink: Option<u64>,
    /// sdu's info object.
    sdu: Option<Vec<u8>>,
}

/// CBOR over a block's items.
struct Cbor<'a> {
    b: &'a [u8],
    at: usize,
}

/// A CBOR head: major type, argument, and whether the length is
/// indefinite.
type Head = (u8, u64, bool);

impl Cbor<'_> {
    fn head(&mut self) -> Result<Head, String> {
        let short = || "an item runs past its block".to_string();
        let &first = self.b.get(self.at).ok_or_else(short)?;
        self.at += 1;
        let (major, info) = (first >> 5, first & 0x1f);
        let n = match info {
            0..=23 => return Ok((major, u64::from(info), false)),
            24 => 1,
            25 => 2,
            26 => 4,
            27 => 8,
            31 if matches!(major, BYTES | TEXT | ARRAY | MAP | SIMPLE) => {
                return Ok((major, 0, true));
            }
            _ => return Err(format!("a CBOR head that is not valid ({first:#04x})")),
        };
        let b = self.b.get(self.at..self.at + n).ok_or_else(short)?;
        self.at += n;
        Ok((
            major,
            b.iter().fold(0, |a, &x| (a << 8) | u64::from(x)),
            false,
        ))
    }

    /// The next head, tags skipped.
    fn next(&mut self) -> Result<Head, String> {
        loop {
            let h = self.head()?;
            if h.0 != TAG {
                return Ok(h);
            }
        }
    }

    fn bytes(&mut self, h: Head) -> Result<&[u8], String> {
        if !matches!(h.0, BYTES | TEXT) || h.2 {
            return Err("a name or string that is not a definite string".into());
        }
        let end = usize::try_from(h.1)
            .ok()
            .and_then(|n| self.at.checked_add(n))
            .filter(|&e| e <= self.b.len())
            .ok_or("a string runs past its block")?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }

    /// Skips the value whose head is `h` (no recursion: counts what is
    /// left of each container open).
    fn skip(&mut self, h: Head) -> Result<(), String> {
        // Values left in each container open; u64::MAX: until a break.
        let mut left: Vec<u64> = Vec::new();
        let mut h = h;
        loop {
            if h.0 == SIMPLE && h.2 {
                if left.pop() != Some(u64::MAX) {
                    return Err("a CBOR break outside an indefinite value".into());
                }
            } else {
                match h {
                    (BYTES | TEXT, _, false) => {
                        self.bytes(h)?;
                    }
                    (BYTES | TEXT | ARRAY | MAP, _, true) => {
                        left.push(u64::MAX);
                        h = self.next()?;
                        continue;
                    }
                    (ARRAY, n, false) if n > 0 => {
                        left.push(n);
                        h = self.next()?;
                        continue;
                    }
                    (MAP, n, false) if n > 0 => {
                        left.push(n.saturating_mul(2));
                        h = self.next()?;
                        continue;
                    }
                    _ => {}
                }
            }
            // A value is complete: count it in its container, and each
            // container it completes in the one holding it.
            loop {
                match left.last_mut() {
                    None => return Ok(()),
                    Some(n) if *n == u64::MAX => break,
                    Some(n) => {
                        *n -= 1;
                        if *n > 0 {
                            break;
                        }
                        left.pop();
                    }
                }
            }
            h = self.next()?;
        }
    }

    fn uint(&mut self) -> Result<u64, String> {
        match self.next()? {
            (POS, v, false) => Ok(v),
            _ => Err("a size or number that is not an unsigned integer".into()),
        }
    }

    /// A reference, absolute or back from `cur` within its block.
    fn itemref(&mut self, cur: u64) -> Result<u64, String> {
        match self.next()? {
            (POS, v, false) => Ok(v),
            (NEG, v, false) if v < cur & 0xff_ffff => Ok(cur - v - 1),
            _ => Err("a reference that is not valid".into()),
        }
    }
}

/// Parses the item at `r`, which starts at `at` in `block`.
fn item(block: &[u8], at: usize, r: u64, it: &mut Item) -> Result<(), String> {
    *it = Item {
        name: std::mem::take(&mut it.name),
        ..Item::default()
    };
    it.name.clear();
    let mut c = Cbor { b: block, at };
    let (major, len, indef) = c.next()?;
    if major != MAP {
        return Err("not a CBOR map".into());
    }
    let mut typed = false;
    let mut left = len;
    loop {
        if !indef {
            if left == 0 {
                break;
            }
            left -= 1;
        }
        let k = c.next()?;
        if indef && k.0 == SIMPLE && k.2 {
            break;
        }
        let k = match k {
            (POS, k, false) => k,
            (BYTES | TEXT, _, false) => {
                let sdu = c.bytes(k)? == b"sdu";
                let v = c.next()?;
                if sdu {
                    it.sdu = Some(c.bytes(v)?.to_vec());
                } else {
                    c.skip(v)?;
                }
                continue;
            }
            other => {
                c.skip(other)?;
                let v = c.next()?;
                c.skip(v)?;
                continue;
            }
        };
        match k {
            key::TYPE => {
                it.etype = match c.next()? {
                    (POS, v, false) => i64::try_from(v).unwrap_or(i64::MAX),
                    (NEG, v, false) => i64::try_from(v).map_or(i64::MIN, |v| -1 - v),
                    _ => return Err("a type that is not an integer".into()),
                };
                typed = true;
            }
            key::NAME => {
                let h = c.next()?;
                it.name.extend_from_slice(c.bytes(h)?);
            }
            key::PREV => it.prev = Some(c.itemref(r)?),
            key::SUB => it.sub = Some(c.itemref(r)?),
            key::ASIZE => it.asize = c.uint()?,
            key::DSIZE => it.dsize = c.uint()?,
            key::DEV => it.dev = Some(c.uint()?),
            key::INO => it.ino = Some(c.uint()?),
            key::NLINK => it.nlink = Some(c.uint()?),
            key::RDERR => {
                it.rderr = match c.next()? {
                    (SIMPLE, binfmt::TRUE, false) => Some(true),
                    (SIMPLE, binfmt::FALSE, false) => Some(false),
                    _ => return Err("a read error mark that is not a boolean".into()),
                }
            }
            _ => {
                let v = c.next()?;
                c.skip(v)?;
            }
        }
    }
    if !typed {
        return Err("an item without a type".into());
    }
    Ok(())
}

/// The binary export's tree read out as the JSON export, a chunk at a
/// time.
struct Json {
    file: File,
    /// Decompressed blocks: (number, items, last use).
    cache: Vec<(u64, Rc<Vec<u8>>, u64)>,
    uses: u64,
    /// The items read, their offsets sorted, by block (each item is read
    /// once): 4 bytes an item, where a bit per byte of a block took 2.
    seen: Vec<Vec<u32>>,
    /// The next entry of each directory open: `None` when none is left.
    stack: Vec<Option<u64>>,
    started: bool,
    done: bool,
    out: Vec<u8>,
    pos: usize,
    it: Item,
    /// Items read out, and the reference of the last.
    items: u64,
    current: u64,
    /// The first problem of the binary file, for the error said.
    error: Rc<RefCell<Option<String>>>,
    /// The lines read out so far, until the tree ends; then the records,
    /// as they are decompressed.
    lines: u64,
    tail: Option<Box<dyn BufRead>>,
    /// The lines of the tree, once read out.
    tree_lines: Option<u64>,
}

impl Json {
    fn load(&mut self, num: u64) -> Result<Rc<Vec<u8>>, String> {
        self.uses += 1;
        if let Some(c) = self.cache.iter_mut().find(|c| c.0 == num) {
            c.2 = self.uses;
            return Ok(c.1.clone());
        }
        let b = Rc::new(self.file.block(num)?);
        if self.cache.len() == CACHED {
            let old = (0..CACHED).min_by_key(|&i| self.cache[i].2).expect("full");
            self.cache.swap_remove(old);
        }
        self.cache.push((num, b.clone(), self.uses));
        Ok(b)
    }

    /// Reads item `r` into `self.it`.
    fn read_item(&mut self, r: u64) -> Result<(), String> {
        let (num, at) = (r >> 24, (r & 0xff_ffff) as usize);
        let b = self.load(num)?;
        if at >= b.len() {
            return Err(format!("item {r:#x}: past the end of its block"));
        }
        if self.seen.len() <= num as usize {
            self.seen.resize(num as usize + 1, Vec::new());
        }
        let seen = &mut self.seen[num as usize];
        // Items are mostly read in the order they lie: an append.
        let k = seen.partition_point(|&x| x < at as u32);
        if seen.get(k) == Some(&(at as u32)) {
            return Err(format!(
                "item {r:#x} (block {num}, offset {at}) is reached twice: the tree loops"
            ));
        }
        seen.insert(k, at as u32);
        self.current = r;
        self.items += 1;
        item(&b, at, r, &mut self.it)
            .map_err(|e| format!("item {r:#x} (block {num}, offset {at}): {e}"))
    }

    /// The JSON of the next step into `self.out`; false at the end.
    fn step(&mut self) -> Result<bool, String> {
        self.out.clear();
        self.pos = 0;
        if self.done {
            return Ok(false);
        }
        if let Some(t) = &mut self.tail {
            let b = t
                .fill_buf()
                .map_err(|e| format!("sdu's block does not decompress: {e}"))?;
            if b.is_empty() {
                self.tail = None;
                self.out.extend_from_slice(b"]\n");
                self.done = true;
            } else {
                self.out.extend_from_slice(b);
                let n = b.len();
                t.consume(n);
            }
            return Ok(true);
        }
        let more = self.tree_step()?;
        self.lines += self.out.iter().filter(|&&c| c == b'\n').count() as u64;
        Ok(more)
    }

    /// [`Self::step`] within the tree.
    fn tree_step(&mut self) -> Result<bool, String> {
        if !self.started {
            self.started = true;
            match &self.file.sdu {
                Some((meta, _)) => self.out.extend_from_slice(meta),
                None => self
                    .out
                    .extend_from_slice(b"[1,2,{\"progname\":\"ncdu\",\"binary\":true}"),
            }
            self.out.extend_from_slice(b",\n");
            self.stack.push(Some(self.file.root));
            return Ok(true);
        }
        let Some(next) = self.stack.last_mut() else {
            // The tree is read: its blocks are given back.
            self.tree_lines = Some(self.lines);
            self.file.data = Bytes::Held(Vec::new());
            self.cache = Vec::new();
            self.seen = Vec::new();
            match self.file.sdu.take() {
                Some((_, frame)) => {
                    let mut d = sdu_block(frame)
                        .map_err(|e| format!("sdu's block does not decompress: {e}"))?;
                    d.read_until(b'\n', &mut Vec::new())
                        .map_err(|e| format!("sdu's block does not decompress: {e}"))?;
                    self.tail = Some(Box::new(d));
                }
                None => {
                    self.out.extend_from_slice(b"]\n");
                    self.done = true;
                }
            }
            return Ok(true);
        };
        let Some(r) = next.take() else {
            self.stack.pop();
            if !self.stack.is_empty() {
                self.out.push(b']');
            }
            return Ok(true);
        };
        let root = self.items == 0;
        self.read_item(r)?;
        if !root {
            *self.stack.last_mut().expect("open") = self.it.prev;
            self.out.extend_from_slice(b",\n");
        }
        let dir = self.it.etype == etype::DIR;
        if dir {
            self.out.push(b'[');
        }
        self.info().map_err(|e| e.to_string())?;
        if dir {
            self.stack.push(self.it.sub);
        }
        Ok(true)
    }

    /// The info object of `self.it`: sdu's, or one of ncdu's keys.
    fn info(&mut self) -> io::Result<()> {
        let (it, o) = (&self.it, &mut self.out);
        if let Some(s) = &it.sdu {
            o.extend_from_slice(s);
            return Ok(());
        }
        o.extend_from_slice(b"{\"name\":");
        write_string(o, &it.name)?;
        let mut num = |k: &str, v: u64| o.extend_from_slice(format!(",\"{k}\":{v}").as_bytes());
        if it.asize > 0 {
            num("asize", it.asize);
        }
        if it.dsize > 0 {
            num("dsize", it.dsize);
        }
        if let Some(d) = it.dev.filter(|_| it.etype == etype::DIR) {
            num("dev", d);
        }
        if it.etype == etype::LINK {
            num("ino", it.ino.unwrap_or(0));
            num("nlink", it.nlink.unwrap_or(0));
            o.extend_from_slice(b",\"hlnkc\":true");
        }
        let flag: &[u8] = match it.etype {
            etype::DIR | etype::REG | etype::LINK => b"",
            etype::ERR => b",\"read_error\":true",
            etype::PATTERN => b",\"excluded\":\"pattern\"",
            etype::OTHERFS => b",\"excluded\":\"otherfs\"",
            etype::KERNFS => b",\"excluded\":\"kernfs\"",
            t if t < 0 => b",\"excluded\":\"pattern\"",
            _ => b",\"notreg\":true",
        };
        o.extend_from_slice(flag);
        if it.rderr == Some(true) {
            o.extend_from_slice(b",\"read_error\":true");
        }
        o.push(b'}');
        Ok(())
    }
}

impl Read for Json {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = {
            let b = self.fill_buf()?;
            let n = b.len().min(buf.len());
            buf[..n].copy_from_slice(&b[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Json {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.pos == self.out.len() {
            match self.step() {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    self.error.borrow_mut().get_or_insert(e.clone());
                    return Err(io::Error::other(e));
                }
            }
        }
        Ok(&self.out[self.pos..])
    }

    fn consume(&mut self, n: usize) {
        self.pos += n;
    }
}

fn json(file: File, error: Rc<RefCell<Option<String>>>) -> Json {
    Json {
        file,
        cache: Vec::new(),
        uses: 0,
        seen: Vec::new(),
        stack: Vec::new(),
        started: false,
        done: false,
        out: Vec::new(),
        pos: 0,
        it: Item::default(),
        items: 0,
        current: 0,
        error,
        lines: 0,
        tail: None,
        tree_lines: None,
    }
}

/// Reads the binary export `data` (signature included).
///
/// # Errors
/// What is wrong with the file, and where: the block or item for a
/// problem of the binary format, the item for one of the tree it holds.
pub(super) fn read(data: Bytes, fold: bool) -> Result<Saved, String> {
    let error = Rc::new(RefCell::new(None));
    let mut j = json(File::open(data)?, error.clone());
    let e = match super::decode::read(&mut j, fold) {
        Ok(s) => return Ok(s),
        Err(e) => e,
    };
    if let Some(b) = error.borrow_mut().take() {
        return Err(b);
    }
    // Past the tree, its blocks are given back: the line says where.
    if let Some(tree) = j.tree_lines.filter(|&t| e.line > t) {
        return Err(records_line(&e, tree));
    }
    Err(locate(j.file, &e))
}

/// The problem `e`, on a line of sdu's records, after the `tree` lines of
/// the tree.
fn records_line(e: &ParseError, tree: u64) -> String {
    format!(
        "sdu's records, line {}, column {}: {}",
        e.line.saturating_sub(tree),
        e.column,
        e.what
    )
}

/// Says where the problem `e` of the JSON read out of `file` lies in the
/// binary file: the JSON is read out again up to its line.
fn locate(file: File, e: &ParseError) -> String {
    if e.line == 0 {
        return e.what.clone();
    }
    if e.line == 1 && file.sdu.is_some() {
        return format!("sdu's metadata: {}", e.what);
    }
    let mut j = json(file, Rc::new(RefCell::new(None)));
    let mut line = 1;
    while let Ok(true) = j.step() {
        let item = j.out.last() == Some(&b'}') && !j.done;
        let before = line;
        line += j.out.iter().filter(|&&c| c == b'\n').count() as u64;
        if j.done || j.tree_lines.is_some() {
            return records_line(e, before - 1);
        }
        if item && line == e.line {
            let r = j.current;
            return format!(
                "item {r:#x} (block {}, offset {}, named '{}'): {}",
                r >> 24,
                r & 0xff_ffff,
                crate::quote::quote(&j.it.name),
                e.what
            );
        }
    }
    e.what.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_passes_any_value_and_nothing_more() {
        for v in [
            &b"\x00"[..],
            b"\x40",
            b"\x41a",
            b"\x5f\xff",
            b"\x5f\x41a\xff",
            b"\x80",
            b"\x81\x00",
            b"\x9f\xff",
            b"\x9f\x9f\xff\xff",
            b"\x9f\x9f\x81\x00\xff\x82\x01\xa1\x02\x03\xff",
            b"\xa0",
            b"\xa1\x00\x01",
            b"\xbf\xff",
            b"\xbf\xc0\x00\x9f\xff\xff",
            b"\x1b\x01\x02\x03\x04\x05\x06\x07\x08",
        ] {
            let data = [v, b"rest"].concat();
            let mut c = Cbor { b: &data, at: 0 };
            let h = c.next().unwrap();
            c.skip(h).unwrap();
            assert_eq!(&data[c.at..], b"rest", "{v:x?}");
        }
        for bad in [&b"\xff"[..], b"\x82\x00", b"\x9f\x00", b"\x1c", b"\x42a"] {
            let mut c = Cbor { b: bad, at: 0 };
            let r = c.next().and_then(|h| c.skip(h));
            assert!(r.is_err(), "{bad:x?}");
        }
    }

    #[test]
    fn references_absolute_or_back_within_the_block() {
        let mut c = Cbor {
            b: b"\x1a\x01\x00\x00\x10\x20\x38\x20",
            at: 0,
        };
        let me = (1 << 24) | 0x40;
        assert_eq!(c.itemref(me), Ok((1 << 24) | 0x10));
        assert_eq!(c.itemref(me), Ok(me - 1));
        // 33 bytes back from offset 0x40: offset 0x1f.
        assert_eq!(c.itemref(me), Ok((1 << 24) | 0x1f));
        // Not before the block's start.
        let mut c = Cbor {
            b: b"\x38\x40",
            at: 0,
        };
        assert!(c.itemref(me).is_err());
    }
}
