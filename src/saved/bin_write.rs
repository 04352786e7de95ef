//! `--export-format binary`: the scan as ncdu 2's binary export (the
//! layout is in [`super::binfmt`]), every entry with sdu's info object of
//! the JSON export in its `"sdu"` key, and the JSON's metadata and records
//! in a block of sdu's, so that `--import` reads back exactly what the
//! JSON export would give.
//!
//! Items are written children before their directory (a directory names
//! its last entry), each directory's entries last to first: following
//! `sub` then `prev` then lists them in the scan's order, the order of the
//! JSON export, whose node numbers the records use. The directories carry
//! ncdu's cumulative sizes (a hardlinked inode counted once in each
//! directory holding links to it, its size `shrasize` there when links to
//! it lie outside), which ncdu's browser shows without reading the tree.

use std::collections::HashMap;
use std::io::{self, Write};

use super::Export;
use super::binfmt::{self, BYTES, MAP, SIMPLE, etype, key};
use super::write::{Keys, Prepared, header, records};
use crate::figures::Kind;
use crate::records::NodeId;

/// Uncompressed bytes of items a data block holds (ncdu's first size); an
/// item larger than that fills a block of its own.
const BLOCK: usize = 64 << 10;

/// zstd's level, ncdu's default (`--compress-level`).
pub(super) const LEVEL: i32 = 4;

/// The data blocks as they are filled and written, and the index.
struct Blocks<'w, W: Write> {
    w: &'w mut W,
    /// The items of the block being filled.
    buf: Vec<u8>,
    /// Its number.
    num: u32,
    /// Where the next block starts in the file.
    offset: u64,
    /// Offset and length of each block written, by number.
    index: Vec<u8>,
    z: zstd::bulk::Compressor<'static>,
}

fn too_large(what: &str) -> io::Error {
    io::Error::other(format!("too large for ncdu's binary format: {what}"))
}

impl<W: Write> Blocks<'_, W> {
    /// Appends `item`; returns its reference.
    fn place(&mut self, item: &[u8]) -> io::Result<u64> {
        if !self.buf.is_empty() && self.buf.len() + item.len() > BLOCK {
            self.flush()?;
        }
        if self.buf.len() + item.len() >= 1 << 24 {
            return Err(too_large("an entry of 16 MiB"));
        }
        let r = (u64::from(self.num) << 24) | self.buf.len() as u64;
        self.buf.extend_from_slice(item);
        Ok(r)
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let body = self.z.compress(&self.buf)?;
        let len = 12 + body.len();
        if len >= 1 << 24 || self.offset >= 1 << 40 {
            return Err(too_large("a block or the file"));
        }
        let len = len as u32;
        self.w
            .write_all(&binfmt::type_len(binfmt::DATA_BLOCK, len))?;
        self.w.write_all(&self.num.to_be_bytes())?;
        self.w.write_all(&body)?;
        self.w
            .write_all(&binfmt::type_len(binfmt::DATA_BLOCK, len))?;
        self.index
            .extend_from_slice(&((self.offset << 24) | u64::from(len)).to_be_bytes());
        self.offset += u64::from(len);
        self.num = self.num.checked_add(1).ok_or_else(|| too_large("blocks"))?;
        self.buf.clear();
        Ok(())
    }
}

/// An inode with several links, as a directory's links count it.
#[derive(Clone, Copy)]
struct Inode {
    asize: u64,
    dsize: u64,
    nlink: u32,
    found: u32,
}

/// A directory open while its entries are written.
struct Open {
    /// Its node; `None` for the directory of several roots.
    id: Option<NodeId>,
    depth: u32,
    /// Its position among its siblings.
    pos: usize,
    /// Its entries not yet written: the first `left`.
    left: usize,
    /// The entry written last (the next one's `prev`).
    last: Option<u64>,
    dev: u64,
    /// Entries below it, and their sizes but those of hardlinked files.
    items: u64,
    asize: u64,
    dsize: u64,
    /// Some entry below it was not read in full.
    suberr: bool,
    /// The hardlinked inodes below it, by device and inode.
    inodes: HashMap<(u64, u64), Inode>,
}

/// Writes the saved scan of `x` to `w` in ncdu 2's binary format (buffer
/// it).
pub(crate) fn write(w: &mut impl Write, x: &Export<'_>) -> io::Result<()> {
    let tree = x.tree;
    let prep = Prepared::new(x);
    w.write_all(binfmt::SIGNATURE)?;
    let mut b = Blocks {
        w,
        buf: Vec::with_capacity(BLOCK),
        num: 0,
        offset: binfmt::SIGNATURE.len() as u64,
        index: Vec::new(),
        z: zstd::bulk::Compressor::new(LEVEL)?,
    };
    let roots = tree.roots();
    let top = roots.len() != 1 || tree.kind(roots[0]) != Kind::Dir;
    let open = |id, depth, pos, left, dev| Open {
        id,
        depth,
        pos,
        left,
        last: None,
        dev,
        items: 0,
        asize: 0,
        dsize: 0,
        suberr: false,
        inodes: HashMap::new(),
    };
    let mut stack = Vec::new();
    if top {
        stack.push(open(None, 0, 0, roots.len(), 0));
    } else {
        let k = prep.keys(roots[0], 0);
        let dev = k.link.map_or(0, |l| l.dev);
        let n = tree.children(roots[0]).len();
        stack.push(open(Some(roots[0]), 0, 0, n, dev));
    }
    let (mut item, mut json) = (Vec::new(), Vec::new());
    let root = loop {
        let f = stack.last_mut().expect("open");
        if f.left > 0 {
            f.left -= 1;
            let pos = f.left;
            let c = match f.id {
                None => roots[pos],
                Some(id) => tree.children(id)[pos],
            };
            // The depth the JSON export gives it.
            let depth = (stack.len() - usize::from(top)) as u32;
            let k = prep.keys(c, depth);
            if tree.kind(c) == Kind::Dir {
                let parent_dev = stack.last().map_or(0, |f| f.dev);
                let dev = k.link.map_or(parent_dev, |l| l.dev);
                let n = tree.children(c).len();
                stack.push(open(Some(c), depth, pos, n, dev));
                continue;
            }
            json.clear();
            prep.info(&mut json, (c, depth), pos, &k)?;
            let f = stack.last_mut().expect("open");
            file_item(&mut item, tree.record(c, depth).name, f, &k, &json);
            f.last = Some(b.place(&item)?);
            continue;
        }
        let mut f = stack.pop().expect("open");
        let parent = stack.last_mut();
        json.clear();
        let (name, k) = match f.id {
            Some(id) => {
                let k = prep.keys(id, f.depth);
                prep.info(&mut json, (id, f.depth), f.pos, &k)?;
                (tree.record(id, f.depth).name.to_vec(), Some(k))
            }
            None => {
                let name = format!("({} paths)", roots.len()).into_bytes();
                json.extend_from_slice(b"{\"name\":");
                super::syntax::write_string(&mut json, &name)?;
                json.extend_from_slice(b",\"sdu\":{\"top\":true}}");
                (name, None)
            }
        };
        dir_item(&mut item, &name, &mut f, k.as_ref(), parent, &json);
        let r = b.place(&item)?;
        match stack.last_mut() {
            Some(p) => p.last = Some(r),
            None => break r,
        }
    };
    b.flush()?;
    // sdu's block: the JSON's metadata, a newline, its records.
    let mut z = zstd::stream::write::Encoder::new(Vec::new(), LEVEL)?;
    header(&mut z, x)?;
    z.write_all(b"\n")?;
    records(&mut z, x, &prep.ids)?;
    let sdu = z.finish()?;
    let len = u32::try_from(sdu.len() + 8)
        .ok()
        .filter(|&l| l < 1 << 28)
        .ok_or_else(|| too_large("the records"))?;
    b.w.write_all(&binfmt::type_len(binfmt::SDU_BLOCK, len))?;
    b.w.write_all(&sdu)?;
    b.w.write_all(&binfmt::type_len(binfmt::SDU_BLOCK, len))?;
    // The index, last.
    b.index.extend_from_slice(&root.to_be_bytes());
    let len = u32::try_from(b.index.len() + 8)
        .ok()
        .filter(|&l| l < 1 << 28)
        .ok_or_else(|| too_large("blocks"))?;
    b.w.write_all(&binfmt::type_len(binfmt::INDEX_BLOCK, len))?;
    b.w.write_all(&b.index)?;
    b.w.write_all(&binfmt::type_len(binfmt::INDEX_BLOCK, len))?;
    b.w.flush()
}

/// Starts an item: its type, name and `prev`.
fn start(item: &mut Vec<u8>, t: i64, name: &[u8], prev: Option<u64>) {
    item.clear();
    item.push((MAP << 5) | 31);
    binfmt::head(item, 0, key::TYPE);
    binfmt::int(item, t);
    binfmt::head(item, 0, key::NAME);
    binfmt::head(item, BYTES, name.len() as u64);
    item.extend_from_slice(name);
    if let Some(p) = prev {
        binfmt::uint(item, key::PREV, p);
    }
}

/// Ends an item with sdu's key: the info object `json`.
fn end(item: &mut Vec<u8>, json: &[u8]) {
    binfmt::head(item, binfmt::TEXT, 3);
    item.extend_from_slice(b"sdu");
    binfmt::head(item, BYTES, json.len() as u64);
    item.extend_from_slice(json);
    item.push((SIMPLE << 5) | 31);
}

/// The item of a file (anything but a directory) in the directory `f`,
/// which counts it.
fn file_item(item: &mut Vec<u8>, name: &[u8], f: &mut Open, k: &Keys<'_>, json: &[u8]) {
    let t = if k.hardlink {
        etype::LINK
    } else if k.error.is_some() {
        etype::ERR
    } else if k.special.is_some() {
        etype::NONREG
    } else {
        etype::REG
    };
    start(item, t, name, f.last);
    f.items += 1;
    if t != etype::ERR {
        binfmt::uint(item, key::ASIZE, k.asize);
        binfmt::uint(item, key::DSIZE, k.dsize);
    }
    match k.link.filter(|_| t == etype::LINK) {
        Some(l) => {
            binfmt::uint(item, key::INO, l.ino);
            binfmt::uint(item, key::NLINK, u64::from(l.nlink));
            let i = f.inodes.entry((l.dev, l.ino)).or_insert(Inode {
                asize: k.asize,
                dsize: k.dsize,
                nlink: l.nlink,
                found: 0,
            });
            i.found += 1;
        }
        None => {
            f.asize = f.asize.saturating_add(k.asize);
            f.dsize = f.dsize.saturating_add(k.dsize);
        }
    }
    f.suberr |= t == etype::ERR;
    end(item, json);
}

/// The item of the directory `f`, all its entries written (`k`: its keys,
/// `None` for the directory of several roots), counted into `parent`.
fn dir_item(
    item: &mut Vec<u8>,
    name: &[u8],
    f: &mut Open,
    k: Option<&Keys<'_>>,
    parent: Option<&mut Open>,
    json: &[u8],
) {
    let (asize, dsize) = k.map_or((0, 0), |k| (k.asize, k.dsize));
    // Each hardlinked inode once; shared where links lie outside.
    let (mut la, mut ld, mut sa, mut sd) = (0u64, 0u64, 0u64, 0u64);
    for i in f.inodes.values() {
        la = la.saturating_add(i.asize);
        ld = ld.saturating_add(i.dsize);
        if i.found < i.nlink {
            sa = sa.saturating_add(i.asize);
            sd = sd.saturating_add(i.dsize);
        }
    }
    let err = k.is_some_and(|k| k.error.is_some());
    start(item, etype::DIR, name, parent.as_ref().and_then(|p| p.last));
    binfmt::uint(item, key::ASIZE, asize);
    binfmt::uint(item, key::DSIZE, dsize);
    if parent.as_ref().is_none_or(|p| p.dev != f.dev) {
        binfmt::uint(item, key::DEV, f.dev);
    }
    if err || f.suberr {
        binfmt::head(item, 0, key::RDERR);
        binfmt::head(item, SIMPLE, if err { binfmt::TRUE } else { binfmt::FALSE });
    }
    let cum_a = asize.saturating_add(f.asize);
    let cum_d = dsize.saturating_add(f.dsize);
    binfmt::uint(item, key::CUMASIZE, cum_a.saturating_add(la));
    binfmt::uint(item, key::CUMDSIZE, cum_d.saturating_add(ld));
    if sa > 0 {
        binfmt::uint(item, key::SHRASIZE, sa);
    }
    if sd > 0 {
        binfmt::uint(item, key::SHRDSIZE, sd);
    }
    binfmt::uint(item, key::ITEMS, f.items);
    if let Some(s) = f.last {
        binfmt::uint(item, key::SUB, s);
    }
    end(item, json);
    if let Some(p) = parent {
        p.items += f.items + 1;
        p.asize = p.asize.saturating_add(cum_a);
        p.dsize = p.dsize.saturating_add(cum_d);
        p.suberr |= err || f.suberr;
        if p.inodes.is_empty() {
            std::mem::swap(&mut p.inodes, &mut f.inodes);
        } else {
            for (key, i) in f.inodes.drain() {
                p.inodes
                    .entry(key)
                    .and_modify(|q| q.found += i.found)
                    .or_insert(i);
            }
        }
    }
}
