//! The node store: the walk's [`NodeRec`]s kept in columns, names in one
//! arena and figures as compact as their values allow.
//!
//! A browser keeps every entry, files included, so the bytes per entry
//! decide its memory. A [`NodeRec`] is 120 bytes plus a boxed name; a
//! node here is about 40 plus its name's bytes:
//!
//! - parent and order: four bytes each (a `NodeId`, a `u32`); kind and
//!   leaf: one byte; the depth is not kept but counted up the parents (a
//!   root is at depth 0, a child one below its parent: the walk and saved
//!   scans record nothing else);
//! - the name: its bytes in one arena, a `u32` offset into it;
//! - its own figures ([`CompactStats`]): apparent size and allocated blocks in 32
//!   bits each, and a `u32` code. A file alone (exclusive and reclaimable
//!   equal to total, nothing shared, one file) and an empty record need
//!   nothing more; any other record (a directory, a file with shared
//!   extents, a size past 32 bits) keeps its figures in a side table;
//! - its time (`--time`, and the browser's modification time), when some
//!   record has one: 12 bytes in two columns of their own, so that a
//!   plain file with a time stays plain.
//!
//! Nothing is lost: [`Nodes::get`] gives back the [`NodeRec`] pushed.

use crate::figures::{Kind, Stats, Timestamp};

use super::{NodeId, NodeRec};

/// The figures of many records, by index.
///
/// A record that fits keeps 12 bytes: its apparent size and its allocated
/// 512-byte blocks in 32 bits each, and a code saying what the other
/// figures are (`PLAIN`, `EMPTY`). Any other record (a directory, a
/// file with shared extents, over 4 GiB of size or 2 TiB allocated) keeps
/// its whole [`Stats`] in a side table, the code its index. Times are kept
/// apart, 12 bytes a record, once one record has one.
#[derive(Clone, Debug, Default)]
pub(crate) struct CompactStats {
    apparent: Vec<u32>,
    blocks: Vec<u32>,
    /// `PLAIN`, `EMPTY`, or an index into `rest` (whose entries have no
    /// time).
    code: Vec<u32>,
    rest: StatsTable,
    /// Empty, or one per record: the time's seconds, and its nanoseconds
    /// (`NO_TIME`: none).
    secs: Vec<i64>,
    nanos: Vec<u32>,
}

/// In [`CompactStats::nanos`]: the record has no time.
const NO_TIME: u32 = u32::MAX;

/// One file alone: exclusive = reclaimable = total, nothing shared, one
/// file, no directory, no time.
const PLAIN: u32 = u32::MAX;
/// Nothing but apparent and total (all other figures 0, no time).
const EMPTY: u32 = u32::MAX - 1;

impl CompactStats {
    /// Room for `n` records.
    pub(crate) fn with_capacity(n: usize) -> CompactStats {
        CompactStats {
            apparent: Vec::with_capacity(n),
            blocks: Vec::with_capacity(n),
            code: Vec::with_capacity(n),
            ..CompactStats::default()
        }
    }

    /// Sets record `i`'s time (the columns made once a record has one).
    fn set_time(&mut self, i: usize, t: Option<Timestamp>) {
        if t.is_none() && self.nanos.is_empty() {
            return;
        }
        let n = self.code.len().max(i + 1);
        if self.nanos.len() < n {
            self.secs.resize(n, 0);
            self.nanos.resize(n, NO_TIME);
        }
        (self.secs[i], self.nanos[i]) = t.map_or((0, NO_TIME), |t| (t.secs, t.nanos));
    }

    /// Record `i`'s time.
    fn time(&self, i: usize) -> Option<Timestamp> {
        match self.nanos.get(i) {
            None | Some(&NO_TIME) => None,
            Some(&nanos) => Some(Timestamp {
                secs: self.secs[i],
                nanos,
            }),
        }
    }

    /// The inline form of `s`: (apparent, blocks, code), pushing `s` on the
    /// side table when it does not fit.
    fn encode(&mut self, s: &Stats) -> (u32, u32, u32) {
        let s = &Stats { time: None, ..*s };
        let small = u32::try_from(s.apparent).ok().zip(
            (s.total % 512 == 0)
                .then(|| u32::try_from(s.total / 512).ok())
                .flatten(),
        );
        if let Some((apparent, blocks)) = small {
            let t = s.total;
            let plain = Stats {
                apparent: s.apparent,
                total: t,
                exclusive: t,
                reclaimable: t,
                files: 1,
                ..Stats::default()
            };
            if *s == plain {
                return (apparent, blocks, PLAIN);
            }
            let empty = Stats {
                apparent: s.apparent,
                total: t,
                ..Stats::default()
            };
            if *s == empty {
                return (apparent, blocks, EMPTY);
            }
        }
        let k = self.rest.len();
        assert!(
            k < EMPTY as usize,
            "more than 4 billion records with figures"
        );
        self.rest.push(s);
        (0, 0, k as u32)
    }

    /// Appends `s`.
    pub(crate) fn push(&mut self, s: &Stats) {
        let (a, b, c) = self.encode(s);
        self.apparent.push(a);
        self.blocks.push(b);
        self.code.push(c);
        self.set_time(self.code.len() - 1, s.time);
    }

    /// Record `i`.
    pub(crate) fn get(&self, i: usize) -> Stats {
        Stats {
            time: self.time(i),
            ..self.get_untimed(i)
        }
    }

    /// Record `i` without its time.
    fn get_untimed(&self, i: usize) -> Stats {
        let apparent = u64::from(self.apparent[i]);
        let total = u64::from(self.blocks[i]) * 512;
        match self.code[i] {
            PLAIN => Stats {
                apparent,
                total,
                exclusive: total,
                reclaimable: total,
                files: 1,
                ..Stats::default()
            },
            EMPTY => Stats {
                apparent,
                total,
                ..Stats::default()
            },
            k => self.rest.get(k as usize),
        }
    }

    /// The reclaimable bytes of record `i` (what [`CompactStats::get`] gives).
    pub(crate) fn reclaimable(&self, i: usize) -> u64 {
        match self.code[i] {
            PLAIN => u64::from(self.blocks[i]) * 512,
            EMPTY => 0,
            k => self.rest.reclaimable(k as usize),
        }
    }

    /// Replaces record `i` by `s`.
    pub(crate) fn set(&mut self, i: usize, s: &Stats) {
        let old = self.code[i];
        let (a, b, new) = self.encode(s);
        self.apparent[i] = a;
        self.blocks[i] = b;
        if old != PLAIN && old != EMPTY && new != PLAIN && new != EMPTY {
            // Reuse the old slot rather than leave it unused.
            self.rest.replace_by_last(old as usize);
            self.code[i] = old;
        } else {
            self.code[i] = new;
        }
        self.set_time(i, s.time);
    }

    fn shrink_to_fit(&mut self) {
        self.apparent.shrink_to_fit();
        self.blocks.shrink_to_fit();
        self.code.shrink_to_fit();
        self.rest.shrink_to_fit();
        self.secs.shrink_to_fit();
        self.nanos.shrink_to_fit();
    }

    /// Heap bytes held.
    #[cfg(test)]
    fn heap_bytes(&self) -> usize {
        (self.apparent.capacity()
            + self.blocks.capacity()
            + self.code.capacity()
            + self.nanos.capacity())
            * 4
            + self.secs.capacity() * 8
            + self.rest.heap_bytes()
    }
}

/// [`Stats`] by index, 56 bytes each: the time (`--time`) in a table of
/// its own, kept only once some entry has one.
#[derive(Clone, Debug, Default)]
pub(crate) struct StatsTable {
    sums: Vec<[u64; 7]>,
    /// Empty, or one per entry.
    times: Vec<Option<Timestamp>>,
}

impl StatsTable {
    /// The number of entries.
    pub(crate) fn len(&self) -> usize {
        self.sums.len()
    }

    /// Appends `s`.
    pub(crate) fn push(&mut self, s: &Stats) {
        self.sums.push([
            s.apparent,
            s.total,
            s.exclusive,
            s.shared,
            s.reclaimable,
            s.files,
            s.dirs,
        ]);
        if s.time.is_some() || !self.times.is_empty() {
            self.times.resize(self.sums.len() - 1, None);
            self.times.push(s.time);
        }
    }

    /// Entry `i`.
    pub(crate) fn get(&self, i: usize) -> Stats {
        let [apparent, total, exclusive, shared, reclaimable, files, dirs] = self.sums[i];
        Stats {
            apparent,
            total,
            exclusive,
            shared,
            reclaimable,
            files,
            dirs,
            time: self.times.get(i).copied().flatten(),
        }
    }

    /// Entry `i`'s reclaimable bytes.
    pub(crate) fn reclaimable(&self, i: usize) -> u64 {
        self.sums[i][4]
    }

    /// Replaces entry `i` by the last one, which it removes.
    fn replace_by_last(&mut self, i: usize) {
        let s = self.sums.pop().expect("an entry");
        self.sums[i] = s;
        if let Some(t) = self.times.pop() {
            self.times[i] = t;
        }
    }

    /// Appends every entry of `other`, leaving it empty.
    pub(crate) fn append(&mut self, other: &mut StatsTable) {
        if !self.times.is_empty() || !other.times.is_empty() {
            self.times.resize(self.sums.len(), None);
            other.times.resize(other.sums.len(), None);
        }
        self.sums.append(&mut other.sums);
        self.times.append(&mut other.times);
    }

    /// Gives back the spare capacity.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.sums.shrink_to_fit();
        self.times.shrink_to_fit();
    }

    /// The heap bytes held.
    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        self.sums.capacity() * size_of::<[u64; 7]>()
            + self.times.capacity() * size_of::<Option<Timestamp>>()
    }
}

/// Names in one arena: name `i` is `bytes[start(i)..start(i + 1)]`.
///
/// Offsets are kept in 32 bits; past 4 GiB of names, `wraps` lists the
/// indices where the high half steps up, so that any size is exact.
#[derive(Clone, Debug)]
struct Names {
    bytes: Vec<u8>,
    /// The low 32 bits of each name's start, then of the end.
    start: Vec<u32>,
    /// Indices `i` where `start(i) >> 32` is one more than at `i - 1`.
    wraps: Vec<u32>,
}

impl Default for Names {
    fn default() -> Names {
        Names::with_capacity(0)
    }
}

impl Names {
    fn with_capacity(n: usize) -> Names {
        let mut start = Vec::with_capacity(n + 1);
        start.push(0);
        Names {
            bytes: Vec::new(),
            start,
            wraps: Vec::new(),
        }
    }

    /// Records that the next name starts at `at`.
    fn end_at(&mut self, at: u64) {
        let i = self.start.len();
        let high = self.wraps.len() as u64;
        for _ in high..at >> 32 {
            self.wraps.push(i as u32);
        }
        self.start.push(at as u32);
    }

    fn push(&mut self, name: &[u8]) {
        self.bytes.extend_from_slice(name);
        self.end_at(self.bytes.len() as u64);
    }

    fn offset(&self, i: usize) -> usize {
        let high = self.wraps.partition_point(|&w| w as usize <= i) as u64;
        ((high << 32) | u64::from(self.start[i])) as usize
    }

    fn get(&self, i: usize) -> &[u8] {
        &self.bytes[self.offset(i)..self.offset(i + 1)]
    }

    #[cfg(test)]
    fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + (self.start.capacity() + self.wraps.capacity()) * 4
    }
}

/// The name of an id no shard held: empty.
const NO_NAME: u32 = u32::MAX;

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

/// Node records in columns (see the module's documentation).
///
/// Public for the browser's unit tests (`src/browse/app/tests.rs`), which
/// build a tree by hand.
#[derive(Clone, Debug, Default)]
pub struct Nodes {
    /// The node ids, when the records are not in id order (a walk's
    /// shard); empty otherwise.
    ids: Vec<NodeId>,
    parent: Vec<NodeId>,
    order: Vec<u32>,
    flags: Vec<u8>,
    /// The names, in chunks: one for a store pushed in id order, one per
    /// shard for a gathered one (so that gathering copies no name).
    names: Vec<Names>,
    /// The first name index of each chunk.
    chunk_start: Vec<u32>,
    /// Per node: its name's index over the chunks; empty when that is the
    /// node's id.
    name_at: Vec<u32>,
    own: CompactStats,
}

impl Nodes {
    /// An empty store with room for `n` records.
    pub(crate) fn with_capacity(n: usize) -> Nodes {
        Nodes {
            ids: Vec::new(),
            parent: Vec::with_capacity(n),
            order: Vec::with_capacity(n),
            flags: Vec::with_capacity(n),
            names: vec![Names::with_capacity(n)],
            chunk_start: vec![0],
            name_at: Vec::new(),
            own: CompactStats::with_capacity(n),
        }
    }

    /// Appends `r` as the next node (in id order: `r.id` is ignored).
    pub(crate) fn push(&mut self, r: &NodeRec) {
        self.push_named(r, &r.name);
    }

    /// Appends `r` as the next node, named `name` (`r.name` is ignored).
    fn push_named(&mut self, r: &NodeRec, name: &[u8]) {
        self.parent.push(r.parent);
        self.order.push(r.order);
        self.flags
            .push(kind_bits(r.kind) | if r.leaf { LEAF } else { 0 });
        if self.names.is_empty() {
            self.names.push(Names::default());
            self.chunk_start.push(0);
        }
        self.names.last_mut().expect("a chunk").push(name);
        self.own.push(&r.own);
        debug_assert!(
            !self.ids.is_empty() || self.depth(NodeId::new(self.len() - 1)) == r.depth,
            "node {} at depth {}: one below its parent's",
            self.len() - 1,
            r.depth
        );
    }

    /// Appends `r` named `name` (`r.name` is ignored) keeping its id (a
    /// walk's shard, in any order), for [`Nodes::gather`].
    pub(crate) fn push_with_id(&mut self, r: &NodeRec, name: &[u8]) {
        self.ids.push(r.id);
        self.push_named(r, name);
    }

    /// The records of `parts` (each pushed with [`Nodes::push_with_id`]),
    /// in id order, `0..n`. An id no part holds gets the default record.
    /// Each part's columns are freed as soon as they are copied, so that
    /// the peak is one store and one column, not two stores.
    pub(crate) fn gather(n: usize, mut parts: Vec<Nodes>) -> Nodes {
        fn column<T: Copy + Default>(
            n: usize,
            parts: &mut [Nodes],
            col: impl Fn(&mut Nodes) -> &mut Vec<T>,
        ) -> Vec<T> {
            let mut out = vec![T::default(); n];
            for p in parts.iter_mut() {
                let v = std::mem::take(col(p));
                for (&id, x) in p.ids.iter().zip(v) {
                    out[id.index()] = x;
                }
            }
            out
        }
        let parent = column(n, &mut parts, |p| &mut p.parent);
        let order = column(n, &mut parts, |p| &mut p.order);
        let flags = column(n, &mut parts, |p| &mut p.flags);
        let apparent = column(n, &mut parts, |p| &mut p.own.apparent);
        let blocks = column(n, &mut parts, |p| &mut p.own.blocks);
        // Times, where a part has one: every part's columns made whole.
        let timed = parts.iter().any(|p| !p.own.nanos.is_empty());
        let (mut secs, mut nanos) = (Vec::new(), Vec::new());
        if timed {
            secs = vec![0; n];
            nanos = vec![NO_TIME; n];
            for p in parts.iter_mut() {
                let (ps, pn) = (
                    std::mem::take(&mut p.own.secs),
                    std::mem::take(&mut p.own.nanos),
                );
                for (k, &id) in p.ids.iter().enumerate() {
                    if let Some(&t) = pn.get(k) {
                        (secs[id.index()], nanos[id.index()]) = (ps[k], t);
                    }
                }
            }
        }
        // Codes index the parts' side tables, which are laid end to end.
        let mut code = vec![EMPTY; n];
        let mut rest = StatsTable::default();
        for p in parts.iter_mut() {
            let base = rest.len() as u32;
            for (&id, &c) in p.ids.iter().zip(&p.own.code) {
                code[id.index()] = if c == PLAIN || c == EMPTY {
                    c
                } else {
                    base + c
                };
            }
            p.own.code = Vec::new();
            rest.append(&mut p.own.rest);
        }
        // Names stay where the shards put them: each id gets its index.
        let mut name_at = vec![NO_NAME; n];
        let mut names = Vec::with_capacity(parts.len());
        let mut chunk_start = Vec::with_capacity(parts.len());
        let mut base = 0u64;
        for p in parts.iter_mut() {
            let ids = std::mem::take(&mut p.ids);
            for (k, &id) in ids.iter().enumerate() {
                name_at[id.index()] = (base + k as u64) as u32;
            }
            assert!(p.names.len() <= 1, "a shard has one chunk of names");
            if let Some(chunk) = p.names.pop() {
                chunk_start.push(base as u32);
                base += ids.len() as u64;
                names.push(chunk);
            }
        }
        assert!(base < u64::from(NO_NAME), "more than 4 billion entries");
        Nodes {
            ids: Vec::new(),
            parent,
            order,
            flags,
            names,
            chunk_start,
            name_at,
            own: CompactStats {
                apparent,
                blocks,
                code,
                rest,
                secs,
                nanos,
            },
        }
    }

    /// The number of nodes.
    pub(crate) fn len(&self) -> usize {
        self.parent.len()
    }

    /// The ids of the nodes, `0..len()`.
    pub(crate) fn ids(
        &self,
    ) -> impl DoubleEndedIterator<Item = NodeId> + ExactSizeIterator + use<> {
        (0..self.len()).map(NodeId::new)
    }

    /// Node `id`'s parent id.
    pub(crate) fn parent(&self, id: NodeId) -> NodeId {
        self.parent[id.index()]
    }

    /// Sets node `id`'s parent id.
    pub(crate) fn set_parent(&mut self, id: NodeId, p: NodeId) {
        self.parent[id.index()] = p;
    }

    /// Node `id`'s depth below its root.
    pub(crate) fn depth(&self, id: NodeId) -> u32 {
        let mut d = 0;
        let mut x = id;
        loop {
            let p = self.parent[x.index()];
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
        self.order[id.index()]
    }

    /// What node `id` is.
    pub(crate) fn kind(&self, id: NodeId) -> Kind {
        kind_of(self.flags[id.index()])
    }

    /// Whether node `id` is a `-a` leaf.
    pub(crate) fn leaf(&self, id: NodeId) -> bool {
        self.flags[id.index()] & LEAF != 0
    }

    /// Node `id`'s name.
    pub(crate) fn name(&self, id: NodeId) -> &[u8] {
        let i = id.index();
        let k = match self.name_at.get(i) {
            Some(&k) => k,
            None if self.name_at.is_empty() => i as u32,
            None => panic!("no node {id}"),
        };
        if k == NO_NAME {
            return &[];
        }
        let c = match &self.chunk_start[..] {
            [_] => 0,
            starts => starts.partition_point(|&b| b <= k) - 1,
        };
        self.names[c].get((k - self.chunk_start[c]) as usize)
    }

    /// Node `id`'s own figures.
    pub(crate) fn own(&self, id: NodeId) -> Stats {
        self.own.get(id.index())
    }

    /// Node `id`'s own reclaimable bytes.
    pub(crate) fn own_reclaimable(&self, id: NodeId) -> u64 {
        self.own.reclaimable(id.index())
    }

    /// Replaces node `id`'s own figures.
    pub(crate) fn set_own(&mut self, id: NodeId, s: &Stats) {
        self.own.set(id.index(), s);
    }

    /// Node `id` as the walk recorded it (for a shard, `id` is the index
    /// of the record).
    #[cfg(test)]
    pub(crate) fn get(&self, id: NodeId) -> NodeRec {
        let i = id.index();
        NodeRec {
            id: self.ids.get(i).copied().unwrap_or(id),
            parent: self.parent[i],
            depth: self.depth(id),
            kind: self.kind(id),
            leaf: self.leaf(id),
            order: self.order[i],
            name: self.name(id).into(),
            own: self.own(id),
        }
    }

    /// Gives back the spare capacity.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.ids.shrink_to_fit();
        self.parent.shrink_to_fit();
        self.order.shrink_to_fit();
        self.flags.shrink_to_fit();
        for c in &mut self.names {
            c.bytes.shrink_to_fit();
            c.start.shrink_to_fit();
            c.wraps.shrink_to_fit();
        }
        self.name_at.shrink_to_fit();
        self.own.shrink_to_fit();
    }

    /// The heap bytes the store holds.
    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        self.ids.capacity() * 4
            + self.parent.capacity() * 4
            + self.order.capacity() * 4
            + self.flags.capacity()
            + self.names.iter().map(Names::heap_bytes).sum::<usize>()
            + self.name_at.capacity() * 4
            + self.own.heap_bytes()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::Timestamp;

    fn stats(apparent: u64, total: u64, exclusive: u64, shared: u64, reclaimable: u64) -> Stats {
        Stats {
            apparent,
            total,
            exclusive,
            shared,
            reclaimable,
            files: 1,
            dirs: 0,
            time: None,
        }
    }

    /// Every kind of figures comes back as pushed, and a replaced record
    /// too, whatever its code was before.
    #[test]
    fn figures_round_trip() {
        let all = [
            stats(10, 4096, 4096, 0, 4096),
            Stats::default(),
            Stats {
                apparent: 3,
                total: 7,
                ..Stats::default()
            },
            stats(10, 4096, 0, 4096, 0),
            // Past 32 bits of size, of blocks, and not whole blocks.
            stats(1 << 40, 4096, 4096, 0, 4096),
            stats(7, 1 << 42, 1 << 42, 0, 1 << 42),
            stats(7, 1000, 1000, 0, 1000),
            Stats {
                apparent: u64::MAX,
                total: u64::MAX,
                ..Stats::default()
            },
            Stats {
                files: 3,
                dirs: 1,
                time: Some(Timestamp { secs: -5, nanos: 7 }),
                ..stats(1, 2, 2, 0, 2)
            },
        ];
        let mut f = CompactStats::with_capacity(0);
        for s in &all {
            f.push(s);
        }
        for (i, s) in all.iter().enumerate() {
            assert_eq!(f.get(i), *s);
            assert_eq!(f.reclaimable(i), s.reclaimable);
        }
        for i in 0..all.len() {
            for s in &all {
                let mut g = f.clone();
                g.set(i, s);
                assert_eq!(g.get(i), *s);
                for (j, t) in all.iter().enumerate() {
                    if j != i {
                        assert_eq!(g.get(j), *t, "set {i} broke {j}");
                    }
                }
            }
        }
    }

    #[test]
    fn stats_table_keeps_times_only_once_one_is_there() {
        let t = |secs| Stats {
            time: Some(Timestamp { secs, nanos: 1 }),
            ..stats(1, 2, 3, 4, 5)
        };
        let plain = stats(6, 7, 8, 9, 10);
        let mut a = StatsTable::default();
        a.push(&plain);
        assert_eq!(a.heap_bytes(), a.sums.capacity() * 56);
        let mut b = StatsTable::default();
        b.push(&t(5));
        b.push(&plain);
        a.append(&mut b);
        a.push(&t(9));
        let want = [plain, t(5), plain, t(9)];
        assert_eq!((0..4).map(|i| a.get(i)).collect::<Vec<_>>(), want);
        a.replace_by_last(1);
        assert_eq!(
            (0..3).map(|i| a.get(i)).collect::<Vec<_>>(),
            [plain, t(9), plain]
        );
        assert_eq!(a.reclaimable(1), 5);
    }

    /// A plain file with a time (the browser's modification time) keeps
    /// 24 bytes: no side record; the times come back through a set, and
    /// through gathering shards of which one has none.
    #[test]
    fn a_plain_file_with_a_time_stays_plain() {
        let t = |secs| Some(Timestamp { secs, nanos: 3 });
        let plain = |time| Stats {
            time,
            ..stats(100, 4096, 4096, 0, 4096)
        };
        let mut f = CompactStats::with_capacity(0);
        for i in 0..1000 {
            f.push(&plain(t(i)));
        }
        f.shrink_to_fit();
        assert_eq!(f.rest.len(), 0);
        assert_eq!(f.heap_bytes(), 1000 * 24);
        assert_eq!(f.get(7), plain(t(7)));
        f.set(7, &plain(None));
        assert_eq!((f.get(7), f.get(8)), (plain(None), plain(t(8))));
        let mut a = Nodes::default();
        a.push_with_id(&rec(1, 0, "a", true, plain(None)), b"a");
        let mut b = Nodes::default();
        b.push_with_id(&rec(2, 0, "b", true, plain(t(-9))), b"b");
        b.push_with_id(&rec(0, 0, "", false, plain(None)), b"");
        let g = Nodes::gather(3, vec![a, b]);
        let times: Vec<_> = (0..3).map(|i| g.own(NodeId::new(i)).time).collect();
        assert_eq!(times, [None, None, t(-9)]);
    }

    #[test]
    fn names_past_four_gib_of_offsets() {
        let mut n = Names::with_capacity(0);
        n.end_at(5);
        n.end_at((1 << 32) + 3);
        n.end_at((3 << 32) + 1);
        assert_eq!(n.offset(0), 0);
        assert_eq!(n.offset(1), 5);
        assert_eq!(n.offset(2), (1 << 32) + 3);
        assert_eq!(n.offset(3), (3 << 32) + 1);
    }

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
        // Two shards in walk order; id 8 is missing.
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
}
