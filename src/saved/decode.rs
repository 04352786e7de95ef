//! `--import`: a saved scan read back into records, streamed: the tree a
//! node at a time (no recursion, however deep), then the records after it.
//! Every index the records hold is checked against what was read, so that
//! a corrupt file is an error here and never a panic or a wrong figure
//! later; a file that ends early is an error, never a smaller tree. So
//! is a name no directory entry can have (see `name_rules`).

use std::io::Read;

use super::name_rules::{self, Siblings};
use super::rows::{numbers, record, space, stats};
use super::syntax::{ParseError, Parsed, Parser};
use super::write::implied_own;
use super::{FORMAT, Saved};
use crate::figures::{Bound, Kind, Stats, TimeField};
use crate::records::{Link, MAX_NODES, NodeId, NodeRec};

/// Reads a saved scan: sdu's export, or ncdu's (or any tool's that writes
/// ncdu's format), whose entries then share nothing. With `fold`, every
/// `-a` file is folded into its directory as it is read ([`Fold`]): the
/// records of a scan without `-a`, and no node or name kept of a file.
///
/// # Errors
/// Where the file is not a saved scan, is truncated or is inconsistent.
pub(crate) fn read(r: impl Read, fold: bool) -> Result<Saved, ParseError> {
    let mut p = Parser::new(r);
    let mut s = Saved {
        folding: fold.then(Fold::default),
        ..Saved::default()
    };
    // Nothing at all is no truncated scan: say what the file is.
    if p.peek()?.is_none() {
        let what = if p.position() == (1, 1) {
            "the file is empty, not a saved scan"
        } else {
            "the file holds only white space, not a saved scan"
        };
        return Err(ParseError {
            line: 0,
            column: 0,
            what: what.into(),
        });
    }
    p.expect(b'[', "'[' (a saved scan is a JSON array)")?;
    let major = p.uint()?;
    if major != 1 {
        return p.error(format!(
            "major format version {major}: only version 1 (ncdu's) is known"
        ));
    }
    p.expect(b',', "','")?;
    p.uint()?; // the minor version: additions only
    p.expect(b',', "','")?;
    let expected = metadata(&mut p, &mut s)?;
    p.expect(b',', "',' and the tree")?;
    tree(&mut p, &mut s)?;
    let mut records_seen = false;
    while p.next_element(false)? {
        if p.at(b'{')? {
            records_seen |= records(&mut p, &mut s)?;
        } else {
            p.skip()?;
        }
    }
    p.end()?;
    if s.by_sdu {
        if !records_seen {
            return p.error("sdu's records after the tree are missing");
        }
        if expected != Some(s.entries_read() as u64) {
            return p.error(format!(
                "the metadata announces {} nodes, the tree has {}",
                expected.unwrap_or(0),
                s.entries_read()
            ));
        }
    } else {
        ncdu_links(&mut s);
    }
    check(&mut p, &s)?;
    if let Some(f) = s.folding.take() {
        s.remap(&f.map, &f.order);
    }
    s.nodes.shrink_to_fit();
    s.files.shrink_to_fit();
    Ok(s)
}

/// The metadata object: whether sdu wrote the file, and what it says.
/// Returns the number of nodes it announces.
fn metadata(p: &mut Parser<impl Read>, s: &mut Saved) -> Parsed<Option<u64>> {
    let mut key = Vec::new();
    let mut nodes = None;
    p.expect(b'{', "the metadata object")?;
    let mut first = true;
    while p.next_key(first, &mut key)? {
        first = false;
        if key != b"sdu" {
            p.skip()?;
            continue;
        }
        s.by_sdu = true;
        p.expect(b'{', "an object")?;
        let mut f = true;
        while p.next_key(f, &mut key)? {
            f = false;
            match &key[..] {
                b"format" => {
                    let v = p.uint()?;
                    s.format = u32::try_from(v).unwrap_or(u32::MAX);
                    if v > u64::from(FORMAT) {
                        return p.error(format!(
                            "written by a newer sdu (format {v}; this one reads {FORMAT})"
                        ));
                    }
                }
                b"nodes" => nodes = Some(p.uint()?),
                b"errors" => s.errors = p.uint()?,
                b"walk" => walk(p, s)?,
                b"overlap" => s.overlap = p.bool()?,
                b"rules" => rules(p, s)?,
                _ => p.skip()?,
            }
        }
    }
    Ok(nodes)
}

/// The rules the figures were rolled up by: `du` tells how the walk went.
fn rules(p: &mut Parser<impl Read>, s: &mut Saved) -> Parsed<()> {
    let mut key = Vec::new();
    p.expect(b'{', "an object")?;
    let mut first = true;
    while p.next_key(first, &mut key)? {
        first = false;
        if key == b"du" {
            s.du = p.bool()?;
        } else {
            p.skip()?;
        }
    }
    Ok(())
}

/// The walk's options: only `time` matters to a reader.
fn walk(p: &mut Parser<impl Read>, s: &mut Saved) -> Parsed<()> {
    let mut key = Vec::new();
    let mut v = Vec::new();
    p.expect(b'{', "an object")?;
    let mut first = true;
    while p.next_key(first, &mut key)? {
        first = false;
        if key != b"time" || p.null()? {
            if key != b"time" {
                p.skip()?;
            }
            continue;
        }
        p.string(&mut v)?;
        s.time = Some(match &v[..] {
            b"mtime" => TimeField::Modification,
            b"atime" => TimeField::Access,
            b"ctime" => TimeField::Status,
            _ => return p.error("unknown time field"),
        });
    }
    Ok(())
}

/// One info object, as read.
#[derive(Default)]
struct InfoObject {
    name: Vec<u8>,
    /// Where the name's string starts (line, column).
    name_at: (u64, u64),
    asize: u64,
    dsize: u64,
    dev: Option<u64>,
    ino: Option<u64>,
    nlink: Option<u32>,
    hlnkc: bool,
    notreg: bool,
    excluded: bool,
    read_error: bool,
    /// sdu's message for it, and whether nothing of it was read.
    error: Option<String>,
    unread: bool,
    order: Option<u32>,
    kind: Option<Kind>,
    alone: bool,
    top: bool,
    bound: Option<Bound>,
    unreachable: u64,
    own: Option<Stats>,
}

fn info(p: &mut Parser<impl Read>, key: &mut Vec<u8>, i: &mut InfoObject) -> Parsed<()> {
    *i = InfoObject {
        name: std::mem::take(&mut i.name),
        ..InfoObject::default()
    };
    i.name.clear();
    let mut named = false;
    p.expect(b'{', "an info object")?;
    let mut first = true;
    while p.next_key(first, key)? {
        first = false;
        match &key[..] {
            b"name" => {
                p.string(&mut i.name)?;
                i.name_at = p.string_at();
                named = true;
            }
            b"asize" => i.asize = p.uint()?,
            b"dsize" => i.dsize = p.uint()?,
            b"dev" => i.dev = Some(p.uint()?),
            b"ino" => i.ino = Some(p.uint()?),
            b"nlink" => i.nlink = Some(p.u32()?),
            b"hlnkc" => i.hlnkc = p.bool()?,
            b"notreg" => i.notreg = p.bool()?,
            b"read_error" => i.read_error = p.bool()?,
            b"excluded" => {
                i.excluded = true;
                p.skip()?;
            }
            b"sdu" => sdu_keys(p, key, i)?,
            _ => p.skip()?,
        }
    }
    if !named {
        return p.error("an entry without a name");
    }
    if i.name.is_empty() {
        return p.error_at(i.name_at, "no file can be named '' (an empty name)");
    }
    Ok(())
}

/// The `"sdu"` object of an info object (the figures in it are skipped:
/// the roll-up computes them again).
fn sdu_keys(p: &mut Parser<impl Read>, key: &mut Vec<u8>, i: &mut InfoObject) -> Parsed<()> {
    let mut v = Vec::new();
    p.expect(b'{', "an object")?;
    let mut first = true;
    while p.next_key(first, key)? {
        first = false;
        match &key[..] {
            b"order" => i.order = Some(p.u32()?),
            b"alone" => i.alone = p.bool()?,
            b"top" => i.top = p.bool()?,
            b"unreachable" => i.unreachable = p.uint()?,
            b"error" => {
                p.string(&mut v)?;
                i.error = Some(String::from_utf8_lossy(&v).into_owned());
            }
            b"unread" => i.unread = p.bool()?,
            b"bound" => match Bound::from_bits(p.u32()?.try_into().unwrap_or(u8::MAX)) {
                Some(b) => i.bound = Some(b),
                None => return p.error("unknown bound"),
            },
            b"type" => {
                p.string(&mut v)?;
                i.kind = Some(match &v[..] {
                    b"symlink" => Kind::Symlink,
                    b"other" => Kind::Other,
                    _ => return p.error("unknown entry type"),
                });
            }
            b"own" => {
                let mut row = Vec::new();
                numbers(p, &mut row)?;
                i.own = Some(stats(p, &row)?);
            }
            _ => p.skip()?,
        }
    }
    Ok(())
}

/// A read that folds each `-a` file into its directory: by the entry's
/// place in the file (every entry's, as the records number them), its
/// node, a file's that of its directory, and a file's position in it
/// (`u32::MAX` for a node of its own). 8 bytes an entry while the file is
/// read, where a file's node and name took about 40.
#[derive(Debug, Default)]
pub(crate) struct Fold {
    map: Vec<NodeId>,
    order: Vec<u32>,
}

impl Saved {
    /// The entries read so far, files folded or not: the ids the records
    /// name.
    fn entries_read(&self) -> usize {
        self.folding
            .as_ref()
            .map_or(self.nodes.len(), |f| f.map.len())
    }
}

/// An open directory while its entries are read.
struct Frame {
    /// Its node ([`NodeId::TOP`] for the directory holding several roots).
    id: NodeId,
    /// Its depth below its root (counting up the parents would cost a
    /// deep chain the square of its depth).
    depth: u32,
    /// Its device, for its entries that give none (ncdu's rule).
    dev: u64,
    /// Entries read so far.
    pos: u32,
    /// Its own figures as its info gave them (`own`), else as implied by
    /// ncdu's keys, to which its files' own figures add.
    explicit: Option<Stats>,
    implied: Stats,
    files: Stats,
}

/// The tree: every node, parents first, ids in the order listed.
fn tree(p: &mut Parser<impl Read>, s: &mut Saved) -> Parsed<()> {
    s.nodes.push(&NodeRec {
        id: NodeId::TOP,
        parent: NodeId::NONE,
        kind: Kind::Dir,
        ..NodeRec::default()
    });
    if let Some(f) = &mut s.folding {
        f.map.push(NodeId::TOP);
        f.order.push(u32::MAX);
    }
    let mut key = Vec::new();
    let mut i = InfoObject::default();
    if !p.at(b'[')? {
        return p.error("the tree must be a directory (an array)");
    }
    p.expect(b'[', "'['")?;
    info(p, &mut key, &mut i)?;
    let mut siblings = Siblings::new();
    let mut stack = Vec::new();
    if i.top {
        stack.push(Frame {
            id: NodeId::TOP,
            depth: 0,
            dev: 0,
            pos: 0,
            explicit: Some(Stats::default()),
            implied: Stats::default(),
            files: Stats::default(),
        });
    } else {
        name_rules::check(p, &i.name, i.name_at, true)?;
        let f = node(p, s, None, Kind::Dir, &mut i)?;
        stack.push(f.expect("a directory"));
    }
    while !stack.is_empty() {
        if !p.next_element(false)? {
            let f = stack.pop().expect("open");
            siblings.close(stack.len());
            if f.id != NodeId::TOP {
                let own = f.explicit.unwrap_or_else(|| {
                    let mut own = f.implied;
                    own += f.files;
                    own
                });
                s.nodes.set_own(f.id, &own);
            }
            continue;
        }
        let dir = p.at(b'[')?;
        if dir {
            p.expect(b'[', "'['")?;
        }
        info(p, &mut key, &mut i)?;
        let depth = stack.len() - 1;
        let root = stack[depth].id == NodeId::TOP;
        name_rules::check(p, &i.name, i.name_at, root)?;
        if i.excluded {
            // Not counted (ncdu lists what it excluded).
            if dir {
                while p.next_element(false)? {
                    p.skip()?;
                }
            }
            continue;
        }
        let kind = match (dir, i.kind) {
            (true, None) => Kind::Dir,
            (true, Some(_)) => return p.error("a directory with a type"),
            (false, Some(k)) => k,
            (false, None) if i.notreg => Kind::Other,
            (false, None) => Kind::File,
        };
        // Roots may repeat: `sdu a a` lists them as given.
        if !root {
            let h = siblings.check(p, depth, &i.name, i.name_at)?;
            siblings.insert(depth, h, &i.name);
        }
        let f = node(p, s, stack.last_mut(), kind, &mut i)?;
        if let Some(f) = f {
            stack.push(f);
        }
    }
    Ok(())
}

/// Adds the node `i` describes under the directory `parent` (`None`: the
/// one root); returns its frame if it is a directory.
fn node(
    p: &mut Parser<impl Read>,
    s: &mut Saved,
    parent: Option<&mut Frame>,
    kind: Kind,
    i: &mut InfoObject,
) -> Parsed<Option<Frame>> {
    // Its id as the records name it (its place in the file).
    let id = s.entries_read();
    if id >= MAX_NODES as usize {
        return p.error("too many entries");
    }
    let id = NodeId::new(id);
    if let Some(b) = i.bound.filter(|b| !b.is_exact()) {
        s.bounds.push((id, b));
    }
    if i.unreachable > 0 {
        s.unreachable.push((id, i.unreachable));
    }
    if i.read_error || i.error.is_some() {
        s.read_errors.push(crate::records::ReadError {
            node: id,
            whole: i.unread || (!s.by_sdu && kind == Kind::Dir),
            what: i
                .error
                .take()
                .unwrap_or_else(|| "not read in full when the scan was saved (read_error)".into()),
        });
    }
    let (parent_id, depth, pos, dev) = match &parent {
        None => (NodeId::TOP, 0, 0, 0),
        Some(f) if f.id == NodeId::TOP => {
            let parent = if i.alone { NodeId::NONE } else { NodeId::TOP };
            (parent, 0, f.pos, f.dev)
        }
        Some(f) => (f.id, f.depth + 1, f.pos, f.dev),
    };
    let root = depth == 0;
    let dir = kind == Kind::Dir;
    let dev = i.dev.unwrap_or(dev);
    let hardlink = !dir && (i.hlnkc || i.nlink.is_some_and(|n| n > 1));
    if !s.by_sdu {
        s.errors += u64::from(i.read_error);
        if hardlink && let Some(ino) = i.ino {
            s.links.push(Link {
                ns: 0,
                dev,
                ino,
                nlink: i.nlink.unwrap_or(0),
                node: id,
                entry: None,
                stats: implied_own(kind, i.asize, i.dsize, false),
            });
        }
    }
    let implied = implied_own(
        kind,
        i.asize,
        i.dsize,
        hardlink && (s.by_sdu || i.ino.is_some()),
    );
    let explicit = i.own.take();
    let leaf = !dir && !root;
    let order = i.order.unwrap_or(pos);
    let new = NodeId::new(s.nodes.len());
    match &mut s.folding {
        // A file folded into its directory: no node of its own.
        Some(f) if leaf => {
            f.map.push(parent_id);
            f.order.push(order);
        }
        folding => {
            if let Some(f) = folding {
                f.map.push(new);
                f.order.push(u32::MAX);
            }
            s.nodes.push(&NodeRec {
                id: new,
                parent: parent_id,
                depth,
                kind,
                leaf,
                order,
                name: std::mem::take(&mut i.name).into_boxed_slice(),
                // A directory's own figures are known once its files are
                // read: see `tree`.
                own: if dir {
                    Stats::default()
                } else {
                    explicit.unwrap_or(implied)
                },
            });
        }
    }
    if let Some(f) = parent {
        f.pos += 1;
        if !dir && f.id != NodeId::TOP {
            f.files += explicit.unwrap_or(implied);
        }
    }
    Ok(dir.then_some(Frame {
        id: new,
        depth,
        dev,
        pos: 0,
        explicit,
        implied,
        files: Stats::default(),
    }))
}

/// ncdu's hardlinks: the link count, when the file does not give it, is
/// the number of links it lists.
fn ncdu_links(s: &mut Saved) {
    s.links.sort_unstable_by_key(|l| (l.inode(), l.node));
    for group in s.links.chunk_by_mut(|a, b| a.inode() == b.inode()) {
        let n = u32::try_from(group.len()).unwrap_or(u32::MAX);
        for l in group {
            if l.nlink == 0 {
                l.nlink = n;
            }
        }
    }
}

/// A trailing object: sdu's records if it is `{"sdu":"records",...}`
/// (returns whether it was), else skipped.
fn records(p: &mut Parser<impl Read>, s: &mut Saved) -> Parsed<bool> {
    let mut key = Vec::new();
    let mut v = Vec::new();
    p.expect(b'{', "an object")?;
    if !p.next_key(true, &mut key)? {
        return Ok(false);
    }
    let mut ours = false;
    if key == b"sdu" && p.at(b'"')? {
        p.string(&mut v)?;
        ours = v == b"records";
    } else {
        p.skip()?;
    }
    if !ours {
        while p.next_key(false, &mut key)? {
            p.skip()?;
        }
        return Ok(false);
    }
    let mut row = Vec::new();
    let mut seg_end = 0usize;
    while p.next_key(false, &mut key)? {
        let what = key.clone();
        p.expect(b'[', "an array")?;
        let mut first = true;
        while p.next_element(first)? {
            first = false;
            match &what[..] {
                b"spaces" => space(p, s)?,
                b"stops" => {
                    let n = p.u32()?;
                    s.stops.push(NodeId::from_u32(n));
                }
                b"links" | b"files" | b"segments" | b"units" => {
                    numbers(p, &mut row)?;
                    record(p, s, &what, &row, &mut seg_end)?;
                }
                _ => p.skip()?,
            }
        }
    }
    Ok(true)
}

/// Checks every index the records hold.
fn check(p: &mut Parser<impl Read>, s: &Saved) -> Parsed<()> {
    let n = s.entries_read();
    let node_ok = |x: NodeId| x.index() < n;
    if let Some(l) = s.links.iter().find(|l| !node_ok(l.node)) {
        return p.error(format!(
            "a link in node {}, which is not in the tree",
            l.node
        ));
    }
    if let Some(f) = s.files.iter().find(|f| !node_ok(f.node)) {
        return p.error(format!(
            "a file in node {}, which is not in the tree",
            f.node
        ));
    }
    if let Some(x) = s.stops.iter().find(|&&x| !node_ok(x)) {
        return p.error(format!("a stop at node {x}, which is not in the tree"));
    }
    let nf = s.files.len() as u32;
    let bad_file = s.sweep.segments().any(|g| g.files.iter().any(|&f| f >= nf))
        || s.sweep.units().any(|u| u.files.iter().any(|&f| f >= nf));
    if bad_file {
        return p.error("a segment or unit names a file that is not in the files");
    }
    let units: usize = s.sweep.fs_units().map(|(_, r)| r.len()).sum();
    let covered = s.sweep.units().last().map_or(0, |u| u.segments.end);
    if units != s.sweep.unit_count() || covered != s.sweep.segment_count() {
        return p.error("the units do not cover the segments, or the spaces the units");
    }
    Ok(())
}
