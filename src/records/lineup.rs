//! Each place's parent and order in one chunk of nodes ([`Lineup`]): in
//! columns while the walk writes the chunk, in runs once it is whole.
//!
//! A directory's entries are mostly given neighbouring ids, in the order
//! they are listed: a run of places with one parent whose orders go up by
//! one. On four /usr copies, 531,055 nodes make 59,655 runs on two
//! threads (137,399 on one). A run costs 12 bytes (its parent, its first order,
//! its first place) and each place a quarter of a byte (a bit saying
//! whether a run starts there, and a count of the runs before every 64),
//! where the columns cost 6 bytes a place: a chunk mostly of `-a` leaves
//! (files, each a node of its own) is kept in runs where they take less
//! room.

use super::NodeId;

/// Positions in a directory's listing, 2 bytes each: those past 65,534
/// (in a directory that large) in a side list.
#[derive(Clone, Debug, Default)]
pub(super) struct Orders {
    low: Vec<u16>,
    /// (place, position) of the positions past [`FAR`], by place.
    far: Vec<(u32, u32)>,
}

/// In [`Orders::low`]: the position is in [`Orders::far`].
const FAR: u16 = u16::MAX;

impl Orders {
    pub(super) fn filled(n: usize) -> Orders {
        Orders {
            low: vec![0; n],
            far: Vec::new(),
        }
    }

    pub(super) fn set(&mut self, i: usize, o: u32) {
        let at = self.far.partition_point(|f| (f.0 as usize) < i);
        let had = self.far.get(at).is_some_and(|f| f.0 as usize == i);
        match u16::try_from(o).ok().filter(|&o| o != FAR) {
            Some(o) => {
                self.low[i] = o;
                if had {
                    self.far.remove(at);
                }
            }
            None => {
                self.low[i] = FAR;
                if had {
                    self.far[at].1 = o;
                } else {
                    self.far.insert(at, (i as u32, o));
                }
            }
        }
    }

    fn push(&mut self, o: u32) {
        self.low.push(0);
        self.set(self.low.len() - 1, o);
    }

    pub(super) fn get(&self, i: usize) -> u32 {
        match self.low[i] {
            FAR => self.far[self.far.partition_point(|f| (f.0 as usize) < i)].1,
            o => u32::from(o),
        }
    }

    fn truncate(&mut self, n: usize) {
        self.low.truncate(n);
        self.far.retain(|f| (f.0 as usize) < n);
    }

    fn shrink_to_fit(&mut self) {
        self.low.shrink_to_fit();
        self.far.shrink_to_fit();
    }

    #[cfg(test)]
    fn heap_bytes(&self) -> usize {
        self.low.capacity() * 2 + self.far.capacity() * 8
    }
}

/// The places of a chunk in runs: place `i` is in run `r` when `at[r] <=
/// i < at[r + 1]`, its parent `parent[r]` and its order `order[r] + (i -
/// at[r])`.
#[derive(Clone, Debug, Default)]
pub(super) struct Runs {
    /// For each 64 places, where runs start among them, and how many
    /// started before.
    words: Vec<Word>,
    parent: Vec<NodeId>,
    order: Vec<u32>,
    at: Vec<u32>,
}

/// 64 places of [`Runs`]: one read finds a place's run.
#[derive(Clone, Copy, Debug, Default)]
struct Word {
    /// Bit `i % 64`: a run starts at place `i`.
    starts: u64,
    /// The runs that start before the first place.
    before: u32,
}

impl Runs {
    /// The run that holds place `i`.
    #[inline]
    fn run(&self, i: usize) -> usize {
        let w = self.words[i / 64];
        let upto = w.starts & (u64::MAX >> (63 - i % 64));
        w.before as usize + upto.count_ones() as usize - 1
    }

    fn places(&self) -> usize {
        self.at.last().map_or(0, |&a| a as usize)
    }
}

/// A chunk's parents and orders, by place.
#[derive(Clone, Debug)]
pub(super) enum Lineup {
    Columns { parent: Vec<NodeId>, order: Orders },
    Runs(Runs),
}

impl Default for Lineup {
    fn default() -> Lineup {
        Lineup::with_capacity(0)
    }
}

impl Lineup {
    pub(super) fn with_capacity(n: usize) -> Lineup {
        Lineup::Columns {
            parent: Vec::with_capacity(n),
            order: Orders {
                low: Vec::with_capacity(n),
                far: Vec::new(),
            },
        }
    }

    /// `n` places, each with a default record's parent and order.
    pub(super) fn filled(n: usize) -> Lineup {
        Lineup::Columns {
            parent: vec![NodeId::default(); n],
            order: Orders::filled(n),
        }
    }

    /// The number of places.
    fn len(&self) -> usize {
        match self {
            Lineup::Columns { parent, .. } => parent.len(),
            Lineup::Runs(r) => r.places(),
        }
    }

    #[inline]
    pub(super) fn parent(&self, i: usize) -> NodeId {
        match self {
            Lineup::Columns { parent, .. } => parent[i],
            Lineup::Runs(r) => r.parent[r.run(i)],
        }
    }

    pub(super) fn order(&self, i: usize) -> u32 {
        match self {
            Lineup::Columns { order, .. } => order.get(i),
            Lineup::Runs(r) => {
                let k = r.run(i);
                r.order[k] + (i as u32 - r.at[k])
            }
        }
    }

    /// The columns, made again from the runs if need be.
    fn columns(&mut self) -> (&mut Vec<NodeId>, &mut Orders) {
        if let Lineup::Runs(r) = self {
            let n = r.places();
            let mut parent = Vec::with_capacity(n);
            let mut order = Orders::filled(n);
            for k in 0..r.at.len() - 1 {
                for i in r.at[k] as usize..r.at[k + 1] as usize {
                    parent.push(r.parent[k]);
                    order.set(i, r.order[k] + (i as u32 - r.at[k]));
                }
            }
            *self = Lineup::Columns { parent, order };
        }
        match self {
            Lineup::Columns { parent, order } => (parent, order),
            Lineup::Runs(_) => unreachable!("made columns above"),
        }
    }

    /// Sets place `i`'s parent and order.
    pub(super) fn set(&mut self, i: usize, p: NodeId, o: u32) {
        let (parent, order) = self.columns();
        parent[i] = p;
        order.set(i, o);
    }

    /// Sets place `i`'s parent.
    pub(super) fn set_parent(&mut self, i: usize, p: NodeId) {
        self.columns().0[i] = p;
    }

    pub(super) fn push(&mut self, p: NodeId, o: u32) {
        let (parent, order) = self.columns();
        parent.push(p);
        order.push(o);
    }

    /// Keeps the first `n` places.
    pub(super) fn truncate(&mut self, n: usize) {
        if n < self.len() {
            let (parent, order) = self.columns();
            parent.truncate(n);
            order.truncate(n);
        }
    }

    /// Gives back the spare room, and with `runs`, keeps the places in
    /// runs where they take less of it.
    pub(super) fn shrink_to_fit(&mut self, runs: bool) {
        let Lineup::Columns { parent, order } = self else {
            return;
        };
        parent.shrink_to_fit();
        order.shrink_to_fit();
        if !runs {
            return;
        }
        let n = parent.len();
        let starts = |i: usize| {
            i == 0
                || parent[i] != parent[i - 1]
                || order.get(i - 1).checked_add(1) != Some(order.get(i))
        };
        let runs = (0..n).filter(|&i| starts(i)).count();
        let words = n.div_ceil(64);
        if runs * 12 + words * size_of::<Word>() >= n * 6 + order.far.len() * 8 {
            return;
        }
        let mut r = Runs {
            words: Vec::with_capacity(words),
            parent: Vec::with_capacity(runs),
            order: Vec::with_capacity(runs),
            at: Vec::with_capacity(runs + 1),
        };
        for (i, &p) in parent.iter().enumerate() {
            if i % 64 == 0 {
                r.words.push(Word {
                    starts: 0,
                    before: r.at.len() as u32,
                });
            }
            if starts(i) {
                r.words[i / 64].starts |= 1 << (i % 64);
                r.parent.push(p);
                r.order.push(order.get(i));
                r.at.push(i as u32);
            }
        }
        r.at.push(n as u32);
        *self = Lineup::Runs(r);
    }

    #[cfg(test)]
    pub(super) fn heap_bytes(&self) -> usize {
        match self {
            Lineup::Columns { parent, order } => parent.capacity() * 4 + order.heap_bytes(),
            Lineup::Runs(r) => {
                r.words.capacity() * size_of::<Word>()
                    + (r.parent.capacity() + r.order.capacity() + r.at.capacity()) * 4
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_past_sixteen_bits_come_back() {
        let all = [0, 65_534, 65_535, 70_000, u32::MAX, 7];
        let mut o = Orders::filled(all.len());
        for (i, &x) in all.iter().enumerate().rev() {
            o.set(i, x);
        }
        assert_eq!((0..all.len()).map(|i| o.get(i)).collect::<Vec<_>>(), all);
        assert_eq!(o.far.len(), 3);
        o.set(3, 3);
        o.set(0, 80_000);
        assert_eq!((o.get(0), o.get(3), o.get(4)), (80_000, 3, u32::MAX));
        o.truncate(3);
        assert_eq!(o.far, [(0, 80_000), (2, 65_535)]);
    }

    /// Places in runs of every length (one, across a word of the bit
    /// map, orders past 16 bits and wrapping) come back as written, in
    /// runs once packed, and in columns again once one is written.
    #[test]
    fn places_in_runs_come_back_and_can_be_written_again() {
        let n = 4096;
        // (parent, order) of place i: runs of lengths 1, 2, ..., 90, then
        // orders past 65,535 and one at u32::MAX, then places alone.
        let mut want = Vec::new();
        let mut len = 1;
        while want.len() < 3000 {
            let p = NodeId::new(want.len() / 7 + 1);
            let first = if len % 5 == 0 { 70_000 } else { len as u32 * 3 };
            for k in 0..len {
                want.push((p, first + k as u32));
            }
            len += 1;
        }
        want.push((NodeId::new(9), u32::MAX));
        want.push((NodeId::new(9), 0));
        while want.len() < n {
            let i = want.len();
            want.push((NodeId::new(i % 3 + 1), (i % 2) as u32));
        }
        want.truncate(n);
        let mut l = Lineup::filled(n);
        for (i, &(p, o)) in want.iter().enumerate().rev() {
            l.set(i, p, o);
        }
        let columns = l.heap_bytes();
        l.shrink_to_fit(false);
        assert!(matches!(l, Lineup::Columns { .. }), "no runs unless asked");
        l.shrink_to_fit(true);
        let got = |l: &Lineup| {
            (0..n)
                .map(|i| (l.parent(i), l.order(i)))
                .collect::<Vec<_>>()
        };
        assert!(matches!(l, Lineup::Runs(_)), "kept in runs");
        assert!(
            l.heap_bytes() < columns / 2,
            "{} against {columns}",
            l.heap_bytes()
        );
        assert_eq!(got(&l), want);
        l.set_parent(5, NodeId::new(77));
        want[5].0 = NodeId::new(77);
        assert!(matches!(l, Lineup::Columns { .. }));
        assert_eq!(got(&l), want);
        l.shrink_to_fit(true);
        assert_eq!(got(&l), want);
        l.truncate(100);
        want.truncate(100);
        assert_eq!(
            (0..100)
                .map(|i| (l.parent(i), l.order(i)))
                .collect::<Vec<_>>(),
            want
        );
    }

    /// Places that make no runs stay in columns.
    #[test]
    fn places_without_runs_stay_in_columns() {
        let mut l = Lineup::filled(1000);
        for i in 0..1000 {
            l.set(i, NodeId::new(i % 2 + 1), 5);
        }
        l.shrink_to_fit(true);
        assert!(matches!(l, Lineup::Columns { .. }));
        assert_eq!((l.parent(7), l.order(7)), (NodeId::new(2), 5));
    }
}
