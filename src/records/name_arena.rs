//! The names of one chunk of nodes ([`Names`]): their bytes in one arena,
//! a byte of length each, and once in place order, an offset every
//! [`EVERY`] places.

/// Names by place, about 1.25 bytes each beside their bytes.
///
/// While the walk writes them, in any order, each place keeps its offset
/// in the arena; once every place is written ([`Names::pack`]) the arena is
/// rewritten in place order and an offset is kept every [`EVERY`] places,
/// a name's found from there by adding up the lengths before it.
#[derive(Clone, Debug, Default)]
pub(super) struct Names {
    bytes: Vec<u8>,
    /// The length, [`LONG`] for that many bytes or more (then in `long`).
    len: Vec<u8>,
    /// (place, length) of the names of [`LONG`] bytes or more, by place.
    long: Vec<(u32, u32)>,
    /// Out of place order: each place's offset in `bytes` (empty once in
    /// place order).
    start: Vec<u32>,
    /// In place order: the offset of every [`EVERY`]th place.
    every: Vec<u32>,
}

/// In [`Names::len`]: the length is in [`Names::long`] (a root's path; an
/// entry's name is at most 255 bytes).
const LONG: u8 = u8::MAX;

/// Places per offset kept, in place order.
const EVERY: usize = 16;

impl Names {
    /// Room for `n` names pushed in place order.
    pub(super) fn with_capacity(n: usize) -> Names {
        Names {
            len: Vec::with_capacity(n),
            every: Vec::with_capacity(n.div_ceil(EVERY)),
            ..Names::default()
        }
    }

    /// `n` empty names, to be written in any order ([`Names::put`]).
    pub(super) fn filled(n: usize) -> Names {
        Names {
            len: vec![0; n],
            start: vec![0; n],
            ..Names::default()
        }
    }

    fn ordered(&self) -> bool {
        self.start.is_empty() && !self.len.is_empty()
    }

    /// Appends `name`'s bytes to the arena, a quarter more room at a time
    /// while it is written (its spare room stays small); their offset.
    fn append(&mut self, name: &[u8]) -> u32 {
        if self.bytes.capacity() - self.bytes.len() < name.len() {
            let more = name.len().max(self.bytes.capacity() / 4).max(1024);
            self.bytes.reserve_exact(more);
        }
        let start = u32::try_from(self.bytes.len()).expect("4 GiB of names in a chunk");
        self.bytes.extend_from_slice(name);
        start
    }

    /// Sets place `i`'s length.
    fn set_len(&mut self, i: usize, n: usize) {
        let at = self.long.partition_point(|l| (l.0 as usize) < i);
        let had = self.long.get(at).is_some_and(|l| l.0 as usize == i);
        if n >= usize::from(LONG) {
            self.len[i] = LONG;
            let l = (i as u32, n as u32);
            if had {
                self.long[at] = l;
            } else {
                self.long.insert(at, l);
            }
        } else {
            self.len[i] = n as u8;
            if had {
                self.long.remove(at);
            }
        }
    }

    /// Sets place `i`'s name, in any order.
    pub(super) fn put(&mut self, i: usize, name: &[u8]) {
        if self.ordered() {
            // Written again after it was packed: offsets by place again.
            self.start = (0..self.len.len()).map(|j| self.start(j) as u32).collect();
        }
        let start = self.append(name);
        self.start[i] = start;
        self.set_len(i, name.len());
    }

    /// Appends a name, in place order.
    pub(super) fn push(&mut self, name: &[u8]) {
        assert!(self.start.is_empty(), "names out of place order are put");
        let i = self.len.len();
        if i % EVERY == 0 {
            self.every.push(self.bytes.len() as u32);
        }
        self.append(name);
        self.len.push(0);
        self.set_len(i, name.len());
    }

    fn len_of(&self, i: usize) -> usize {
        match self.len[i] {
            LONG => {
                let at = self.long.partition_point(|l| (l.0 as usize) < i);
                self.long[at].1 as usize
            }
            n => usize::from(n),
        }
    }

    /// Place `i`'s offset in the arena.
    fn start(&self, i: usize) -> usize {
        if let Some(&s) = self.start.get(i) {
            return s as usize;
        }
        let first = i - i % EVERY;
        let before: usize = if self.long.is_empty() {
            self.len[first..i].iter().map(|&n| usize::from(n)).sum()
        } else {
            (first..i).map(|j| self.len_of(j)).sum()
        };
        self.every[i / EVERY] as usize + before
    }

    /// Place `i`'s name.
    pub(super) fn get(&self, i: usize) -> &[u8] {
        let start = self.start(i);
        &self.bytes[start..start + self.len_of(i)]
    }

    /// Rewrites the arena in place order, without spare room.
    pub(super) fn pack(&mut self) {
        if self.start.is_empty() {
            return;
        }
        let total = (0..self.len.len()).map(|i| self.len_of(i)).sum();
        let mut bytes = Vec::with_capacity(total);
        let mut every = Vec::with_capacity(self.len.len().div_ceil(EVERY));
        for i in 0..self.len.len() {
            if i % EVERY == 0 {
                every.push(u32::try_from(bytes.len()).expect("4 GiB of names in a chunk"));
            }
            bytes.extend_from_slice(self.get(i));
        }
        (self.bytes, self.every, self.start) = (bytes, every, Vec::new());
    }

    /// Keeps the first `n` names.
    pub(super) fn truncate(&mut self, n: usize) {
        if self.ordered() && n < self.len.len() {
            let end = self.start(n);
            self.bytes.truncate(end);
        }
        self.len.truncate(n);
        self.start.truncate(n);
        self.every.truncate(n.div_ceil(EVERY));
        self.long.retain(|l| (l.0 as usize) < n);
    }

    /// Packs the names and gives back the spare room.
    pub(super) fn shrink_to_fit(&mut self) {
        self.pack();
        self.bytes.shrink_to_fit();
        self.len.shrink_to_fit();
        self.long.shrink_to_fit();
        self.start.shrink_to_fit();
        self.every.shrink_to_fit();
    }

    #[cfg(test)]
    pub(super) fn heap_bytes(&self) -> usize {
        self.bytes.capacity()
            + self.len.capacity()
            + self.long.capacity() * 8
            + (self.start.capacity() + self.every.capacity()) * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_any_length_come_back_and_can_be_replaced() {
        let mut n = Names::filled(4);
        let long = vec![b'x'; 300];
        let max = vec![b'y'; 255];
        n.put(2, &long);
        n.put(0, b"a");
        n.put(3, &max);
        let all = |n: &Names| (0..4).map(|i| n.get(i).to_vec()).collect::<Vec<_>>();
        assert_eq!(all(&n), [b"a".to_vec(), vec![], long.clone(), max.clone()]);
        n.put(2, b"short");
        n.put(0, &long);
        let want = [long.clone(), vec![], b"short".to_vec(), max.clone()];
        assert_eq!(all(&n), want);
        assert_eq!(n.long, [(0, 300), (3, 255)]);
        n.shrink_to_fit();
        assert!(n.ordered());
        assert_eq!(all(&n), want);
        assert_eq!(n.bytes.capacity(), 300 + 5 + 255);
        n.truncate(3);
        assert_eq!(n.long, [(0, 300)]);
        assert_eq!(n.bytes.len(), 305);
    }

    /// Written in any order, then packed, or pushed in order: the same
    /// names, at 1.25 bytes a name beside their bytes.
    #[test]
    fn packed_names_cost_a_byte_and_a_quarter() {
        let name = |i: usize| format!("{}{i}", "n".repeat(i % 37)).into_bytes();
        let n = 1000;
        let mut a = Names::filled(n);
        for i in (0..n).rev() {
            a.put(i, &name(i));
        }
        let mut b = Names::with_capacity(n);
        for i in 0..n {
            b.push(&name(i));
        }
        a.shrink_to_fit();
        b.shrink_to_fit();
        let bytes: usize = (0..n).map(|i| name(i).len()).sum();
        for x in [&a, &b] {
            assert!((0..n).all(|i| x.get(i) == name(i)));
            assert_eq!(x.heap_bytes(), bytes + n + n / EVERY * 4 + 4);
        }
    }
}
