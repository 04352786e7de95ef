//! The node store: the walk's [`NodeRec`]s kept in columns by id, in
//! chunks of 4,096 ids ([`super::sink`]), each distinct name kept once
//! for the whole store and figures as compact as their values allow.
//!
//! A browser keeps every entry, files included, so the bytes per entry
//! decide its memory. A [`NodeRec`] is 120 bytes plus a boxed name; a
//! plain file's node here is 16 bytes at most and a share of its name:
//!
//! - parent: four bytes (a `NodeId`); order: two (a position past 65,534,
//!   in a directory that large, in a side list); both kept in runs once
//!   the chunk is written, where runs take less room ([`Lineup`]: a
//!   directory's entries mostly take neighbouring ids, in the order they
//!   are listed); kind and leaf: one byte; the depth is not kept but
//!   counted up the parents (a root is at depth 0, a child one below its
//!   parent: the walk and saved scans record nothing else);
//! - the name: a 4-byte reference into the store's [`NameTable`], which
//!   keeps each distinct name once (every copy and snapshot of a tree
//!   repeats its names);
//! - its own figures ([`CompactStats`]): five bytes for a file alone (its
//!   apparent size and its shape), an empty record and a directory alone
//!   with its files; any other (a file with shared extents, a size past 32
//!   bits) keeps its figures in a side table;
//! - its time (`--time`, and the browser's modification time), when some
//!   record has one: 4 bytes in a column of its own, and its nanoseconds
//!   where it has any.
//!
//! The walk writes each record at its id as it goes ([`NodeSink`]): the
//! store it leaves is the one the roll-up and the browser read. Nothing is
//! lost: `Nodes::get` gives back the [`NodeRec`] pushed.

use super::compact::CompactStats;
use super::lineup::Lineup;
use super::name_arena::NameTable;
use super::sink::{self, CHUNK, Sink};
use super::{NodeId, NodeRec};
use crate::figures::{Kind, Stats};
use std::sync::{Mutex, PoisonError};

/// [`Kind`] in the low two bits of a flag byte, the leaf bit above.
const LEAF: u8 = 4;

fn kind_bits(k: Kind) -> u8 {
    match k {
        Kind::Dir => 0,
        Kind::File => 1,
        Kind::Symlink => 2,
        Kind::Other => 3,
    }
}

fn kind_of(bits: u8) -> Kind {
    match bits & 3 {
        0 => Kind::Dir,
        1 => Kind::File,
        2 => Kind::Symlink,
        _ => Kind::Other,
    }
}

/// The nodes of [`CHUNK`] ids (fewer in the last chunk).
#[derive(Clone, Debug, Default)]
struct Chunk {
    /// Each place's parent and order.
    lineup: Lineup,
    flags: Vec<u8>,
    /// Each place's name, a reference into the scan's [`NameTable`].
    names: Vec<u32>,
    own: CompactStats,
    /// Records the walk wrote: once every place is, the chunk gives back
    /// its spare room.
    written: u32,
}

impl Chunk {
    fn with_capacity(n: usize) -> Chunk {
        Chunk {
            lineup: Lineup::with_capacity(n),
            flags: Vec::with_capacity(n),
            names: Vec::with_capacity(n),
            own: CompactStats::with_capacity(n),
            written: 0,
        }
    }

    /// `n` default records (a record made by default, no name).
    fn filled(n: usize) -> Chunk {
        Chunk {
            lineup: Lineup::filled(n),
            flags: vec![kind_bits(Kind::default()); n],
            names: vec![NameTable::EMPTY; n],
            own: CompactStats::filled(n),
            written: 0,
        }
    }

    fn flags<N>(r: &NodeRec<N>) -> u8 {
        kind_bits(r.kind) | if r.leaf { LEAF } else { 0 }
    }

    /// Sets place `i` to `r`, named by reference `name` (`r.name` and
    /// `r.id` are ignored).
    fn put<N>(&mut self, i: usize, r: &NodeRec<N>, name: u32) {
        self.lineup.set(i, r.parent, r.order);
        self.flags[i] = Self::flags(r);
        self.names[i] = name;
        self.own.set(i, &r.own);
    }

    fn push(&mut self, r: &NodeRec, name: u32) {
        self.lineup.push(r.parent, r.order);
        self.flags.push(Self::flags(r));
        self.names.push(name);
        self.own.push(&r.own);
    }

    /// Keeps the first `n` records, and no spare room.
    fn cut(&mut self, n: usize) {
        self.lineup.truncate(n);
        self.flags.truncate(n);
        self.names.truncate(n);
        self.own.truncate(n);
        self.shrink_to_fit();
    }

    /// Gives back the spare room; a chunk mostly of `-a` leaves keeps its
    /// parents in runs where they take less room. Climbs up the tree pass
    /// through directories, each step a parent looked up: a run is found
    /// in two reads where a column takes one, and `sdu -s` keeps no
    /// leaves, so its directories stay in columns.
    fn shrink_to_fit(&mut self) {
        let leaves = self.flags.iter().filter(|&&f| f & LEAF != 0).count();
        self.lineup
            .shrink_to_fit(leaves * 4 >= self.flags.len() * 3);
        self.flags.shrink_to_fit();
        self.names.shrink_to_fit();
        self.own.shrink_to_fit();
    }

    #[cfg(test)]
    fn heap_bytes(&self) -> usize {
        self.lineup.heap_bytes()
            + self.flags.capacity()
            + self.names.capacity() * 4
            + self.own.heap_bytes()
    }
}

/// Node records in columns (see the module's documentation).
///
/// Public for the browser's unit tests (`src/browse/app/tests.rs`), which
/// build a tree by hand.
#[derive(Clone, Debug, Default)]
pub(crate) struct Nodes {
    chunks: Vec<Chunk>,
    names: NameTable,
    len: usize,
    /// The records [`Nodes::push`] is to make room for.
    room: usize,
}

impl Nodes {
    /// An empty store with room for `n` records.
    pub(crate) fn with_capacity(n: usize) -> Nodes {
        Nodes {
            chunks: Vec::with_capacity(n.div_ceil(CHUNK)),
            names: NameTable::default(),
            len: 0,
            room: n,
        }
    }

    /// Appends `r` as the next node (in id order: `r.id` is ignored).
    pub(crate) fn push(&mut self, r: &NodeRec) {
        if self.len % CHUNK == 0 {
            let n = self.room.saturating_sub(self.len).min(CHUNK);
            self.chunks.push(Chunk::with_capacity(n));
        }
        let name = self.names.intern(&r.name);
        self.chunks.last_mut().expect("a chunk").push(r, name);
        self.len += 1;
        // Checked only near the roots: climbing costs the depth, and a
        // check of every node of a deep chain would cost its square.
        debug_assert!(
            r.depth > 64 || self.depth(NodeId::new(self.len - 1)) == r.depth,
            "node {} at depth {}: one below its parent's",
            self.len - 1,
            r.depth
        );
    }

    /// The number of nodes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The ids of the nodes, `0..len()`.
    pub(crate) fn ids(
        &self,
    ) -> impl DoubleEndedIterator<Item = NodeId> + ExactSizeIterator + use<> {
        (0..self.len()).map(NodeId::new)
    }

    fn chunk(&self, id: NodeId) -> (&Chunk, usize) {
        let (k, i) = sink::at(id);
        (&self.chunks[k], i)
    }

    /// Node `id`'s parent id.
    #[inline]
    pub(crate) fn parent(&self, id: NodeId) -> NodeId {
        let (c, i) = self.chunk(id);
        c.lineup.parent(i)
    }

    /// Sets node `id`'s parent id.
    pub(crate) fn set_parent(&mut self, id: NodeId, p: NodeId) {
        let (k, i) = sink::at(id);
        self.chunks[k].lineup.set_parent(i, p);
    }

    /// Node `id`'s depth below its root.
    pub(crate) fn depth(&self, id: NodeId) -> u32 {
        let mut d = 0;
        let mut x = id;
        loop {
            let p = self.parent(x);
            // Parents have smaller ids: a larger one is a corrupt record,
            // and stopping there keeps the count finite.
            if p == NodeId::TOP || p.is_none() || p >= x {
                return d;
            }
            d += 1;
            x = p;
        }
    }

    /// Node `id`'s position among its directory's entries.
    pub(crate) fn order(&self, id: NodeId) -> u32 {
        let (c, i) = self.chunk(id);
        c.lineup.order(i)
    }

    /// What node `id` is.
    pub(crate) fn kind(&self, id: NodeId) -> Kind {
        let (c, i) = self.chunk(id);
        kind_of(c.flags[i])
    }

    /// Whether node `id` is a `-a` leaf.
    pub(crate) fn leaf(&self, id: NodeId) -> bool {
        let (c, i) = self.chunk(id);
        c.flags[i] & LEAF != 0
    }

    /// Node `id`'s name. (Not inlined: name comparisons are sorts'
    /// comparators, each sort's code made again for its comparator.)
    #[inline(never)]
    pub(crate) fn name(&self, id: NodeId) -> &[u8] {
        let (c, i) = self.chunk(id);
        self.names.get(c.names[i])
    }

    /// Node `id`'s own figures.
    pub(crate) fn own(&self, id: NodeId) -> Stats {
        let (c, i) = self.chunk(id);
        c.own.get(i)
    }

    /// Node `id`'s own reclaimable bytes.
    pub(crate) fn own_reclaimable(&self, id: NodeId) -> u64 {
        let (c, i) = self.chunk(id);
        c.own.reclaimable(i)
    }

    /// Replaces node `id`'s own figures.
    pub(crate) fn set_own(&mut self, id: NodeId, s: &Stats) {
        let (k, i) = sink::at(id);
        self.chunks[k].own.set(i, s);
    }

    /// Node `id` as the walk recorded it.
    #[cfg(test)]
    pub(crate) fn get(&self, id: NodeId) -> NodeRec {
        NodeRec {
            id,
            parent: self.parent(id),
            depth: self.depth(id),
            kind: self.kind(id),
            leaf: self.leaf(id),
            order: self.order(id),
            name: self.name(id).into(),
            own: self.own(id),
        }
    }

    /// Writes `r` at its id, named `name` (`r.name` is ignored), making
    /// default records up to it.
    #[cfg(test)]
    pub(crate) fn push_with_id(&mut self, r: &NodeRec, name: &[u8]) {
        let (k, i) = sink::at(r.id);
        while self.chunks.len() <= k {
            self.chunks.push(Chunk::filled(CHUNK));
        }
        let name = self.names.intern(name);
        self.chunks[k].put(i, r, name);
        self.len = self.len.max(r.id.index() + 1);
    }

    /// The records of `parts` (each written with [`Nodes::push_with_id`])
    /// in one store of `n`: an id no part holds gets the default record.
    #[cfg(test)]
    pub(crate) fn gather(n: usize, parts: Vec<Nodes>) -> Nodes {
        let mut out = Nodes {
            chunks: Vec::new(),
            names: NameTable::default(),
            len: n,
            room: 0,
        };
        sink::fit(&mut out.chunks, n, || Chunk::filled(CHUNK), Chunk::cut);
        for p in &parts {
            for id in p.ids().take(n) {
                let r = p.get(id);
                let blank = r.parent == NodeId::TOP
                    && (r.order, r.kind, r.leaf) == (0, Kind::Dir, false)
                    && r.name.is_empty()
                    && r.own == Stats::default();
                if !blank {
                    let (k, i) = sink::at(id);
                    let name = out.names.intern(&r.name);
                    out.chunks[k].put(i, &r, name);
                }
            }
        }
        out
    }

    /// Gives back the spare capacity.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.chunks.shrink_to_fit();
        self.names.shrink_to_fit();
        for c in &mut self.chunks {
            c.shrink_to_fit();
        }
    }

    /// The heap bytes the store holds.
    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        self.chunks.capacity() * size_of::<Chunk>()
            + self.chunks.iter().map(Chunk::heap_bytes).sum::<usize>()
            + self.names.heap_bytes()
    }
}

impl From<Vec<NodeRec>> for Nodes {
    /// `nodes` indexed by id.
    fn from(nodes: Vec<NodeRec>) -> Nodes {
        let mut out = Nodes::with_capacity(nodes.len());
        for r in &nodes {
            out.push(r);
        }
        out
    }
}

/// The walk's nodes as its threads record them: each at its id, in its
/// chunk ([`super::sink`]).
#[derive(Default)]
pub(crate) struct NodeSink {
    chunks: Sink<Chunk>,
    /// The names, one table for the walk's threads: each batch of records
    /// takes its lock once.
    names: Mutex<NameTable>,
}

impl NodeSink {
    /// Records `recs`, each at its id, named `name(r)` (`r.name` is
    /// ignored).
    pub(crate) fn put<'a, N>(
        &self,
        recs: &'a [NodeRec<N>],
        name: impl Fn(&'a NodeRec<N>) -> &'a [u8],
    ) {
        let named: Vec<(u32, &NodeRec<N>)> = {
            let mut t = self.names.lock().unwrap_or_else(PoisonError::into_inner);
            recs.iter().map(|r| (t.intern(name(r)), r)).collect()
        };
        self.chunks.write(
            &named,
            |x| x.1.id,
            || Chunk::filled(CHUNK),
            |c, i, x| Self::write(c, i, x.1, x.0),
        );
    }

    /// Records `r` at its id, named `name` (`r.name` is ignored).
    pub(crate) fn put_named(&self, r: &NodeRec, name: &[u8]) {
        self.put(std::slice::from_ref(r), |_| name);
    }

    fn write<N>(c: &mut Chunk, i: usize, r: &NodeRec<N>, name: u32) {
        c.put(i, r, name);
        c.written += 1;
        if c.written as usize == CHUNK {
            c.shrink_to_fit();
        }
    }

    /// The nodes `0..n`, by id (an id no record was written at has the
    /// default record).
    pub(crate) fn into_nodes(self, n: usize) -> Nodes {
        let mut chunks = self.chunks.into_chunks();
        sink::fit(&mut chunks, n, || Chunk::filled(CHUNK), Chunk::cut);
        for c in &mut chunks {
            c.shrink_to_fit();
        }
        let mut names = self
            .names
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        names.shrink_to_fit();
        Nodes {
            chunks,
            names,
            len: n,
            room: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::Timestamp;
    use crate::records::compact::tests::stats;

    fn rec(id: u32, parent: u32, name: &str, leaf: bool, own: Stats) -> NodeRec {
        NodeRec {
            id: NodeId::new(id as usize),
            parent: NodeId::new(parent as usize),
            depth: id.saturating_sub(1),
            kind: if leaf { Kind::Symlink } else { Kind::Dir },
            leaf,
            order: id * 7,
            name: name.as_bytes().into(),
            own,
        }
    }

    /// `recs` written as the walk writes them: in parts of `n`, from
    /// threads taking every other pair of parts, each part from its end.
    fn from_threads(recs: &[NodeRec], n: usize) -> NodeSink {
        let sink = NodeSink::default();
        let parts: Vec<&[NodeRec]> = recs.chunks(n).collect();
        std::thread::scope(|s| {
            for part in parts.chunks(2) {
                let sink = &sink;
                s.spawn(move || part.iter().rev().for_each(|p| sink.put(p, |r| &r.name)));
            }
        });
        sink
    }

    /// Records written at their ids from several threads, in any order,
    /// come back as written; an id none was written at has the default
    /// record; the chunks keep no spare room.
    #[test]
    fn the_walks_records_land_at_their_ids() {
        let n = 2 * CHUNK + 100;
        let recs: Vec<NodeRec> = (1..n as u32)
            .filter(|i| i % 1000 != 7)
            .map(|i| {
                let own = match i % 3 {
                    _ if i % 97 == 0 => stats(u64::from(i), 9, 3, 4, 2),
                    0 => stats(u64::from(i), 512, 512, 0, 512),
                    1 => Stats {
                        time: Some(Timestamp {
                            secs: i.into(),
                            nanos: 1,
                        }),
                        ..stats(u64::from(i), 512, 512, 0, 512)
                    },
                    _ => Stats {
                        files: 3,
                        dirs: 1,
                        ..stats(1, 4096, 4096, 0, 4096)
                    },
                };
                rec(i, i / 2, &"n".repeat(i as usize % 40), i % 2 == 0, own)
            })
            .collect();
        let sink = from_threads(&recs, 700);
        let nodes = sink.into_nodes(n);
        assert_eq!(nodes.len(), n);
        for r in &recs {
            let got = nodes.get(r.id);
            let want = NodeRec {
                depth: got.depth,
                ..r.clone()
            };
            assert_eq!(format!("{got:?}"), format!("{want:?}"));
        }
        let gap = nodes.get(NodeId::new(1007));
        assert_eq!(
            (gap.parent, gap.name.len(), gap.own),
            (NodeId::TOP, 0, Stats::default())
        );
        // The names are 40 distinct ones, each kept once.
        let names: usize = (0..40).sum();
        let per = (nodes.heap_bytes() - names) as f64 / n as f64;
        // 16 bytes a plain node (its name a 4-byte reference), the times'
        // column and the nanoseconds of a third, a directory's two
        // numbers for a third, a side record for one in 97.
        assert!(per < 38.0, "{per:.1} bytes a node beside the names");
    }

    #[test]
    fn gather_puts_records_in_id_order_with_defaults_for_gaps() {
        let recs: Vec<NodeRec> = (0..9u32)
            .map(|i| {
                let own = if i % 2 == 0 {
                    stats(u64::from(i), 512, 512, 0, 512)
                } else {
                    Stats {
                        dirs: 1,
                        ..stats(u64::from(i), 9, 3, 4, 2)
                    }
                };
                rec(
                    i,
                    i.saturating_sub(1),
                    &"n".repeat(i as usize),
                    i % 3 == 0,
                    own,
                )
            })
            .collect();
        // Two parts in walk order; id 8 is missing.
        let mut a = Nodes::default();
        let mut b = Nodes::default();
        for i in [4usize, 1, 5, 2] {
            a.push_with_id(&recs[i], &recs[i].name);
        }
        for i in [0usize, 7, 3, 6] {
            b.push_with_id(&recs[i], &recs[i].name);
        }
        let g = Nodes::gather(9, vec![a, b]);
        assert_eq!(g.len(), 9);
        for (i, r) in recs.iter().enumerate() {
            let got = g.get(NodeId::new(i));
            if i == 8 {
                let d: NodeRec = NodeRec {
                    id: NodeId::new(8),
                    ..NodeRec::default()
                };
                assert_eq!(format!("{got:?}"), format!("{d:?}"));
            } else {
                assert_eq!(format!("{got:?}"), format!("{r:?}"));
            }
        }
        let from: Nodes = recs.clone().into();
        assert_eq!(
            format!("{:?}", from.get(NodeId::new(8))),
            format!("{:?}", recs[8])
        );
        assert_eq!(from.depth(NodeId::new(8)), 7);
    }

    /// Pushed in id order past a chunk, records come back.
    #[test]
    fn pushed_records_cross_chunks() {
        let recs: Vec<NodeRec> = (0..CHUNK as u32 + 10)
            .map(|i| NodeRec {
                depth: 0,
                ..rec(
                    i,
                    0,
                    &format!("{i}"),
                    i > 0,
                    stats(u64::from(i), 512, 512, 0, 512),
                )
            })
            .collect();
        let nodes = Nodes::from(recs.clone());
        for r in &recs {
            assert_eq!(format!("{:?}", nodes.get(r.id)), format!("{r:?}"));
        }
    }

    /// Directories of 50 entries each, their ids neighbouring and their
    /// positions in order, written from two threads in any order as the
    /// walk writes them: the store keeps their parents in runs where they
    /// are `-a` leaves, and every record comes back, before and after one
    /// is written again.
    #[test]
    fn a_directorys_entries_keep_their_parent_once() {
        for leaf in [true, false] {
            entries_in_runs(leaf);
        }
    }

    fn entries_in_runs(leaf: bool) {
        let n = 3 * CHUNK + 77;
        let recs: Vec<NodeRec> = (1..n as u32)
            .map(|i| NodeRec {
                id: NodeId::new(i as usize),
                parent: NodeId::new((i / 50) as usize),
                depth: 0,
                kind: if leaf { Kind::File } else { Kind::Dir },
                leaf,
                order: i % 50,
                name: format!("f{}", i % 50).into_bytes().into(),
                own: stats(u64::from(i), 512, 512, 0, 512),
            })
            .collect();
        let sink = from_threads(&recs, 300);
        let mut nodes = sink.into_nodes(n);
        let same = |nodes: &Nodes| {
            recs.iter().all(|r| {
                let got = nodes.get(r.id);
                (got.parent, got.order, &got.name[..]) == (r.parent, r.order, &r.name[..])
            })
        };
        assert!(same(&nodes));
        let runs = |nodes: &Nodes| {
            (nodes.chunks.iter())
                .map(|c| matches!(c.lineup, Lineup::Runs(_)))
                .collect::<Vec<_>>()
        };
        assert_eq!(runs(&nodes), [leaf; 4]);
        nodes.set_parent(NodeId::new(5), NodeId::new(1));
        assert_eq!(runs(&nodes), [false, leaf, leaf, leaf]);
        assert_eq!(nodes.parent(NodeId::new(5)), NodeId::new(1));
        nodes.set_parent(NodeId::new(5), NodeId::new(0));
        assert!(same(&nodes));
    }
}
