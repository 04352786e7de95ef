//! What every entry was when the walk stat-ed it ([`Ident`]), kept for the
//! browser's deletions: 4 bytes a node, 6 where a chunk's nodes differ
//! in more than their inode number ([`Idents`]).

use super::NodeId;
use super::sink::{self, CHUNK, Sink};

/// What an entry was when the walk stat-ed it: its device, inode number
/// and mount (`STATX_MNT_ID`). Deleting checks every level of the path it
/// walks down, and the entry itself, against these, so that nothing put in
/// an entry's place since the scan (another directory, a symlink's target,
/// a bind mount) is ever deleted instead.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ident {
    /// `st_dev`.
    pub dev: u64,
    /// `st_ino`.
    pub ino: u64,
    /// `stx_mnt_id`.
    pub mnt: u64,
}

/// The [`Ident`] of every node, by id, when the walk was asked to keep
/// them ([`crate::WalkOptions::identities`]).
///
/// In chunks of 4,096 ids (`src/records/sink.rs`): per node the low half
/// of its inode number (4 bytes) and an index (2 bytes) into its chunk's
/// few (device, mount, high half of the inode number) triples: a chunk's
/// nodes lie on one filesystem or a few, and their inode numbers mostly
/// share their high half. A chunk whose nodes all have the one triple
/// keeps no index.
#[derive(Clone, Debug, Default)]
pub struct Idents {
    chunks: Vec<IdentChunk>,
}

#[derive(Clone, Debug, Default)]
struct IdentChunk {
    lo: Vec<u32>,
    /// 0: none recorded; else 1 + an index into `keys`. Empty once every
    /// place is written with the one key (the usual chunk).
    key: Vec<u16>,
    /// (device, mount, high half of the inode number).
    keys: Vec<(u64, u64, u32)>,
    /// The place written last.
    last: u16,
    /// Places written.
    written: u32,
}

const _: () = assert!(CHUNK < u16::MAX as usize);

impl IdentChunk {
    fn filled() -> IdentChunk {
        IdentChunk {
            lo: vec![0; CHUNK],
            key: vec![0; CHUNK],
            keys: Vec::new(),
            last: 0,
            written: 0,
        }
    }

    fn put(&mut self, at: usize, i: &Ident) {
        let k = (i.dev, i.mnt, (i.ino >> 32) as u32);
        // At most one key a place: the index fits. The key of the place
        // written last is the likeliest.
        let last = self.key[self.last as usize].checked_sub(1).map(usize::from);
        let key = match last
            .filter(|&j| self.keys[j] == k)
            .or_else(|| self.keys.iter().rposition(|&x| x == k))
        {
            Some(key) => key,
            None => {
                self.keys.push(k);
                self.keys.len() - 1
            }
        };
        self.lo[at] = i.ino as u32;
        self.key[at] = key as u16 + 1;
        self.last = at as u16;
        self.written += 1;
        if self.written as usize == CHUNK {
            self.shrink();
        }
    }

    /// Drops the key column when every place has the one key.
    fn shrink(&mut self) {
        if self.keys.len() == 1 && self.key.iter().all(|&k| k == 1) {
            self.key = Vec::new();
        }
        self.keys.shrink_to_fit();
    }

    fn cut(&mut self, n: usize) {
        self.lo.truncate(n);
        self.key.truncate(n);
        self.lo.shrink_to_fit();
        self.key.shrink_to_fit();
    }
}

/// The walk's identities as its threads record them.
#[derive(Default)]
pub(crate) struct IdentSink(Sink<IdentChunk>);

impl IdentSink {
    /// Records `recs`, each at its node.
    pub(crate) fn put(&self, recs: &[(NodeId, Ident)]) {
        self.0.write(
            recs,
            |r| r.0,
            IdentChunk::filled,
            |c, at, r| c.put(at, &r.1),
        );
    }

    /// The identities of nodes `0..n`.
    pub(crate) fn into_idents(self, n: usize) -> Idents {
        let mut chunks = self.0.into_chunks();
        sink::fit(&mut chunks, n, IdentChunk::filled, IdentChunk::cut);
        for c in &mut chunks {
            c.shrink();
        }
        Idents { chunks }
    }
}

impl Idents {
    /// Node `id`'s identity, if one was recorded.
    pub fn get(&self, id: NodeId) -> Option<Ident> {
        let (k, at) = sink::at(id);
        let c = self.chunks.get(k)?;
        let key = match c.key.get(at) {
            Some(&key) => key,
            None if c.key.is_empty() && at < c.lo.len() => 1,
            None => return None,
        };
        let &(dev, mnt, hi) = c.keys.get(usize::from(key).checked_sub(1)?)?;
        Some(Ident {
            dev,
            ino: (u64::from(hi) << 32) | u64::from(c.lo[at]),
            mnt,
        })
    }

    /// The heap bytes held.
    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        self.chunks
            .iter()
            .map(|c| c.lo.capacity() * 4 + c.key.capacity() * 2 + c.keys.capacity() * 24)
            .sum::<usize>()
            + self.chunks.capacity() * size_of::<IdentChunk>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every identity comes back, whatever its inode number and place;
    /// a node with none has none; 6 bytes a node, 4 in a chunk of one
    /// (device, mount, high half).
    #[test]
    fn identities_round_trip_in_six_bytes_a_node() {
        let n = 3 * CHUNK + 17;
        let ident = |i: usize| Ident {
            dev: 7 + (i % 1000 == 0) as u64,
            ino: if i % 300 == 0 {
                (i as u64) << 33
            } else {
                i as u64
            },
            mnt: 30,
        };
        let recs: Vec<(NodeId, Ident)> = (0..n)
            .filter(|i| i % 5 != 1)
            .map(|i| (NodeId::new(i), ident(i)))
            .collect();
        let sink = IdentSink::default();
        for part in recs.chunks(333).rev() {
            sink.put(part);
        }
        let idents = sink.into_idents(n);
        for i in 0..n + 3 {
            let want = (i < n && i % 5 != 1).then(|| ident(i));
            assert_eq!(idents.get(NodeId::new(i)), want, "{i}");
        }
        let per = idents.heap_bytes() as f64 / n as f64;
        assert!(per < 6.5, "{per:.2} bytes a node");
        // Every node of a chunk on one filesystem, inode numbers below 2³².
        let all: Vec<(NodeId, Ident)> = (1..n).map(|i| (NodeId::new(i), ident(1))).collect();
        let sink = IdentSink::default();
        sink.put(&all);
        let idents = sink.into_idents(n);
        assert_eq!(
            (idents.get(NodeId::TOP), idents.get(NodeId::new(n - 1))),
            (None, Some(ident(1)))
        );
        let per = idents.heap_bytes() as f64 / n as f64;
        assert!(per < 4.8, "{per:.2} bytes a node");
    }
}
