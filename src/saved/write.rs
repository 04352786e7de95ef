//! `--export`: the scan as ncdu's JSON export, streamed node by node, with
//! sdu's figures in `"sdu"` keys and the records behind them after the
//! tree (the module documentation of [`super`] has the layout).

use std::io::{self, Write};

use super::order::{Order, with_copies};
use super::syntax::write_string;
use super::{Export, FORMAT, time_name};
use crate::figures::Bound;
use crate::figures::{Kind, Stats};
use crate::probe::Granularity;
use crate::records::{Link, NodeId, ReadError};
use crate::tree::Tree;

/// What both writers need beside the export: the file's node numbers,
/// each node's own link, and the walk's marks by node.
pub(super) struct Prepared<'a> {
    x: &'a Export<'a>,
    /// The node ids as the file numbers them ([`export_ids`]).
    pub(super) ids: Vec<NodeId>,
    self_link: Vec<u32>,
    marks: Vec<(NodeId, Bound)>,
}

impl<'a> Prepared<'a> {
    pub(super) fn new(x: &'a Export<'a>) -> Self {
        let tree = x.tree;
        // Each node's own link (its inode, when the link table counts it).
        let mut self_link = vec![u32::MAX; tree.len()];
        for (i, l) in x.links.iter().enumerate() {
            if l.entry.is_none() && self_link[l.node.index()] == u32::MAX {
                self_link[l.node.index()] = i as u32;
            }
        }
        // The walk's marks by node; those of inodes counted through their
        // links on each of their links' nodes (the roll-up of the import
        // takes them up from there, through where the links meet).
        let mut marks = x.exact.nodes.clone();
        for l in x.links {
            if let Some(b) = x.exact.inode(l.inode()) {
                marks.push((l.node, b));
            }
        }
        crate::records::merge_bounds(&mut marks);
        Prepared {
            x,
            ids: export_ids(tree),
            self_link,
            marks,
        }
    }

    fn link_of(&self, id: NodeId) -> Option<&'a Link> {
        let i = self.self_link[id.index()];
        (i != u32::MAX).then(|| &self.x.links[i as usize])
    }

    /// ncdu's keys of node `id` at `depth` below its root.
    pub(super) fn keys(&self, id: NodeId, depth: u32) -> Keys<'a> {
        let tree = self.x.tree;
        let r = tree.record(id, depth);
        let dir = r.kind == Kind::Dir;
        // A directory's own figures hold its files' (not its
        // subdirectories').
        let mut files = Stats::default();
        if dir {
            for &c in tree.children(id) {
                if tree.kind(c) != Kind::Dir {
                    files += tree.own(c);
                }
            }
        }
        let link = self.link_of(id);
        let (asize, dsize) = match link {
            Some(l) => (l.stats.apparent, l.stats.total),
            None => (
                r.own.apparent.saturating_sub(files.apparent),
                r.own.total.saturating_sub(files.total),
            ),
        };
        let read_errors = self.x.read_errors;
        Keys {
            asize,
            dsize,
            link,
            hardlink: !dir && link.is_some_and(|l| l.nlink > 1),
            special: match r.kind {
                Kind::Symlink => Some("symlink"),
                Kind::Other => Some("other"),
                Kind::Dir | Kind::File => None,
            },
            error: read_errors
                .get(read_errors.partition_point(|e| e.node < id))
                .filter(|e| e.node == id),
            files,
        }
    }

    /// Writes the info object of node `id` at `depth`, `pos`-th among its
    /// siblings, whose ncdu keys are `k`.
    pub(super) fn info(
        &self,
        w: &mut impl Write,
        (id, depth): (NodeId, u32),
        pos: usize,
        k: &Keys<'_>,
    ) -> io::Result<()> {
        info(w, self.x.tree, (id, depth), pos, k, &self.marks)
    }
}

/// A node's keys in ncdu's terms.
pub(super) struct Keys<'a> {
    /// Its inode's apparent and allocated bytes.
    pub(super) asize: u64,
    pub(super) dsize: u64,
    /// Its own link (device and inode), if the walk recorded one.
    pub(super) link: Option<&'a Link>,
    /// A file with more than one link.
    pub(super) hardlink: bool,
    /// `symlink` or `other`: neither a file nor a directory.
    pub(super) special: Option<&'static str>,
    /// Why it was not read in full.
    pub(super) error: Option<&'a ReadError>,
    /// A directory's files' own figures.
    files: Stats,
}

/// Writes the saved scan of `x` to `w` (buffer it: this writes a token at
/// a time).
pub(crate) fn write(w: &mut impl Write, x: &Export<'_>) -> io::Result<()> {
    let tree = x.tree;
    let prep = Prepared::new(x);
    header(w, x)?;
    let roots = tree.roots();
    let top = roots.len() != 1 || tree.kind(roots[0]) != Kind::Dir;
    w.write_all(b",\n")?;
    if top {
        w.write_all(b"[{\"name\":")?;
        write_string(w, format!("({} paths)", roots.len()).as_bytes())?;
        w.write_all(b",\"sdu\":{\"top\":true}}")?;
    }
    // (node, next child) of the directories open.
    let mut stack: Vec<(NodeId, usize)> = Vec::new();
    let mut pending: Option<(NodeId, usize)> = None;
    let mut next_root = 0;
    loop {
        if let Some((id, pos)) = pending.take() {
            if top || id != roots[0] {
                w.write_all(b",\n")?;
            }
            let dir = tree.kind(id) == Kind::Dir;
            if dir {
                w.write_all(b"[")?;
            }
            let depth = stack.len() as u32;
            prep.info(w, (id, depth), pos, &prep.keys(id, depth))?;
            if dir {
                stack.push((id, 0));
            }
        }
        match stack.last_mut() {
            Some((id, next)) => {
                let kids = tree.children(*id);
                if *next < kids.len() {
                    pending = Some((kids[*next], *next));
                    *next += 1;
                } else {
                    w.write_all(b"]")?;
                    stack.pop();
                }
            }
            None if next_root < roots.len() => {
                pending = Some((roots[next_root], next_root));
                next_root += 1;
            }
            None => break,
        }
    }
    if top {
        w.write_all(b"]")?;
    }
    records(w, x, &prep.ids)?;
    w.write_all(b"]\n")?;
    w.flush()
}

/// Node ids as the file numbers them, by id: [`NodeId::TOP`] 0, then
/// every node in the order written (depth first, parents before children).
fn export_ids(tree: &Tree) -> Vec<NodeId> {
    let mut ids = vec![NodeId::NONE; tree.len()];
    ids[NodeId::TOP.index()] = NodeId::TOP;
    let mut next = 1;
    let mut stack: Vec<NodeId> = tree.roots().iter().rev().copied().collect();
    while let Some(id) = stack.pop() {
        ids[id.index()] = NodeId::new(next);
        next += 1;
        stack.extend(tree.children(id).iter().rev());
    }
    debug_assert!(ids.iter().all(|i| !i.is_none()), "every node written");
    ids
}

pub(super) fn header(w: &mut impl Write, x: &Export<'_>) -> io::Result<()> {
    write!(
        w,
        "[1,2,{{\"progname\":\"sdu\",\"progver\":\"{}\",\"timestamp\":{},\"sdu\":{{\"format\":{FORMAT},\"nodes\":{}",
        env!("CARGO_PKG_VERSION"),
        x.timestamp,
        x.tree.len()
    )?;
    write!(
        w,
        ",\"rules\":{{\"du\":{},\"separate_dirs\":{}}},\"overlap\":{}",
        x.rules.du, x.rules.separate_dirs, x.overlap
    )?;
    let o = x.walk;
    write!(
        w,
        ",\"walk\":{{\"follow_links\":{},\"follow_args\":{},\"one_file_system\":{},\"count_links\":{},\"excludes\":{},\"time\":",
        o.follow_links, o.follow_args, o.one_file_system, o.count_links, o.excludes
    )?;
    match o.time {
        Some(t) => write!(w, "\"{}\"", time_name(t))?,
        None => w.write_all(b"null")?,
    }
    write!(w, "}},\"errors\":{}", x.errors)?;
    if !x.mappings.is_empty() {
        write!(w, ",\"mappings\":\"{}\"", super::since::encode(x.mappings))?;
    }
    w.write_all(b"}}")
}

/// What a reader takes a node's own figures to be when its info has no
/// `"own"`: its inode as ncdu's keys give it (nothing for a hardlinked
/// file, whose figures are its link's), and for a directory also its
/// files' own figures.
pub(super) fn implied_own(kind: Kind, asize: u64, dsize: u64, hardlink: bool) -> Stats {
    if hardlink {
        return Stats::default();
    }
    let dir = kind == Kind::Dir;
    Stats {
        apparent: asize,
        total: dsize,
        exclusive: dsize,
        shared: 0,
        reclaimable: dsize,
        files: u64::from(!dir),
        dirs: u64::from(dir),
        time: None,
    }
}

/// The info object of node `id` at `depth` below its root, `pos`-th
/// among its siblings, whose ncdu keys are `k`.
fn info(
    w: &mut impl Write,
    tree: &Tree,
    (id, depth): (NodeId, u32),
    pos: usize,
    k: &Keys<'_>,
    marks: &[(NodeId, Bound)],
) -> io::Result<()> {
    let r = tree.record(id, depth);
    let (asize, dsize, link, hardlink, special) = (k.asize, k.dsize, k.link, k.hardlink, k.special);
    w.write_all(b"{\"name\":")?;
    write_string(w, r.name)?;
    if asize > 0 {
        write!(w, ",\"asize\":{asize}")?;
    }
    if dsize > 0 {
        write!(w, ",\"dsize\":{dsize}")?;
    }
    if let Some(l) = link {
        write!(w, ",\"dev\":{},\"ino\":{}", l.dev, l.ino)?;
        if hardlink {
            write!(w, ",\"nlink\":{},\"hlnkc\":true", l.nlink)?;
        }
    }
    if special.is_some() {
        w.write_all(b",\"notreg\":true")?;
    }
    // ncdu's mark of a directory not read in full; sdu's message and
    // whether nothing of it was read.
    let error = k.error;
    if error.is_some() {
        w.write_all(b",\"read_error\":true")?;
    }
    w.write_all(b",\"sdu\":{")?;
    if let Some(e) = error {
        w.write_all(b"\"error\":")?;
        write_string(w, e.what.as_bytes())?;
        w.write_all(if e.whole { b",\"unread\":true," } else { b"," })?;
    }
    if r.order as usize != pos {
        write!(w, "\"order\":{},", r.order)?;
    }
    if let Some(t) = special {
        write!(w, "\"type\":\"{t}\",")?;
    }
    if r.parent.is_none() {
        w.write_all(b"\"alone\":true,")?;
    }
    let credits = tree.unreachable_credits();
    if let Ok(i) = credits.binary_search_by_key(&id, |u| u.0) {
        write!(w, "\"unreachable\":{},", credits[i].1)?;
    }
    if let Ok(i) = marks.binary_search_by_key(&id, |b| b.0) {
        write!(w, "\"bound\":{},", marks[i].1.bits())?;
    }
    let mut implied = implied_own(r.kind, asize, dsize, hardlink);
    implied += k.files;
    if implied != r.own {
        w.write_all(b"\"own\":")?;
        stats(w, &r.own)?;
        w.write_all(b",")?;
    }
    let f = tree.figures(id);
    write!(
        w,
        "\"apparent\":{},\"total\":{},\"exclusive\":{},\"shared\":{},\"reclaimable\":{},\"files\":{},\"dirs\":{}}}}}",
        f.apparent, f.total, f.exclusive, f.shared, f.reclaimable, f.files, f.dirs
    )
}

/// Figures as an array: apparent, total, exclusive, shared, reclaimable,
/// files, dirs, then the time's seconds and nanoseconds if it has one.
fn stats(w: &mut impl Write, s: &Stats) -> io::Result<()> {
    w.write_all(b"[")?;
    fields(w, s)?;
    w.write_all(b"]")
}

/// [`stats`] without the brackets.
fn fields(w: &mut impl Write, s: &Stats) -> io::Result<()> {
    write!(
        w,
        "{},{},{},{},{},{},{}",
        s.apparent, s.total, s.exclusive, s.shared, s.reclaimable, s.files, s.dirs
    )?;
    if let Some(t) = s.time {
        write!(w, ",{},{}", t.secs, t.nanos)?;
    }
    Ok(())
}

/// The trailing element: what the roll-up and the set queries need.
pub(super) fn records(w: &mut impl Write, x: &Export<'_>, ids: &[NodeId]) -> io::Result<()> {
    let id = |n: NodeId| if n.is_none() { n } else { ids[n.index()] };
    // In an order of the tree's, not of the walk's ([`Order`]).
    debug_assert!(x.files.iter().enumerate().all(|(i, f)| f.id as usize == i));
    let order = Order::new(x, ids);
    w.write_all(b",\n{\"sdu\":\"records\",\n\"links\":[")?;
    for (i, (&at, &with)) in order.links.iter().zip(&order.stats).enumerate() {
        let l = &x.links[at as usize];
        w.write_all(if i == 0 { b"\n[" } else { b",\n[" })?;
        write!(w, "{},", id(l.node))?;
        match l.entry {
            Some(e) => write!(w, "{e}")?,
            None => w.write_all(b"null")?,
        }
        write!(w, ",{},{},{},{},", l.ns, l.dev, l.ino, l.nlink)?;
        fields(w, &x.links[with as usize].stats)?;
        w.write_all(b"]")?;
    }
    // The files, then each copy as a file of its own, mapping what the
    // file it copies maps; in the order of [`Order`].
    w.write_all(b"],\n\"files\":[")?;
    for (i, f) in order.files.iter().enumerate() {
        w.write_all(if i == 0 { b"\n" } else { b",\n" })?;
        let linked = u8::from(f.linked);
        write!(w, "[{},{},{},{},{linked}]", f.node, f.ns, f.dev, f.ino)?;
    }
    let mut list = Vec::new();
    // Each unit's segments, in the order of the units.
    w.write_all(b"],\n\"segments\":[")?;
    let segments = order
        .units
        .iter()
        .flat_map(|&u| x.sweep.unit(u as usize).segments);
    for (i, s) in segments.enumerate() {
        let s = x.sweep.segment(s);
        w.write_all(if i == 0 { b"\n" } else { b",\n" })?;
        let mappings = with_copies(x, s.files, &mut list);
        order.renumbered(&mut list);
        write!(w, "[{},{}", s.bytes, s.mappings.saturating_add(mappings))?;
        for f in &list {
            write!(w, ",{f}")?;
        }
        w.write_all(b"]")?;
    }
    w.write_all(b"],\n\"units\":[")?;
    for (i, &u) in order.units.iter().enumerate() {
        let u = x.sweep.unit(u as usize);
        w.write_all(if i == 0 { b"\n" } else { b",\n" })?;
        let n = u.segments.len();
        let mappings = with_copies(x, u.files, &mut list);
        order.renumbered(&mut list);
        let m = u.mappings.saturating_add(mappings);
        write!(w, "[{},{m},{},{n}", u.bytes, u.ranges)?;
        let same = n == 1 && x.sweep.segment(u.segments.start).files == u.files;
        if !same {
            for f in &list {
                write!(w, ",{f}")?;
            }
        }
        w.write_all(b"]")?;
    }
    // Each space numbered by its position ([`Order`]).
    w.write_all(b"],\n\"spaces\":[")?;
    for (i, (fs, range)) in order.spaces.iter().enumerate() {
        w.write_all(if i == 0 { b"\n" } else { b",\n" })?;
        let g = match (x.granularity)(*fs) {
            Granularity::Block => "block",
            Granularity::Extent => "extent",
        };
        let b = x.exact.saved_space(*fs).bits();
        write!(w, "[{i},\"{g}\",{},{b}]", range.len())?;
    }
    w.write_all(b"],\n\"stops\":[")?;
    for (i, &s) in x.tree.stops().iter().enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        write!(w, "{}", id(s))?;
    }
    w.write_all(b"]}")
}
