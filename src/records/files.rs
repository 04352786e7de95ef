//! The file records of a scan, packed: 16 bytes a file, by id, where a
//! [`FileRec`] takes 32.
//!
//! A scan's files with shared extents are many (every file of a reflinked
//! copy) and the roll-up reads each record once, so the records are kept
//! packed from the walk's shards to the roll-up: the node, the inode
//! number, and the root's namespace and device as a key into a table of
//! the few pairs the scan met, its top bit saying whether the file is
//! counted through its links. The id is the record's place. A walk's
//! shard keeps the id beside each record (20 bytes) until the walk ends
//! and [`Files::by_id`] puts them in place.

use std::collections::HashMap;

use super::{FileRec, NodeId};

/// The bit of [`Packed::key`] that says the file is counted through its
/// links ([`FileRec::linked`]); the bits below are its `(namespace,
/// device)` key.
const LINKED: u32 = 1 << 31;

/// A [`FileRec`] without its id, its namespace and device as a key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Packed {
    node: NodeId,
    /// The inode number, low half first (4-byte alignment keeps the record
    /// at 16 bytes, and a shard's at 20).
    ino: [u32; 2],
    key: u32,
}

const _: () = assert!(size_of::<Packed>() == 16);

/// The `(namespace, device)` pairs met, each with its key (its index).
#[derive(Clone, Debug, Default)]
struct Keys {
    pairs: Vec<(u32, u64)>,
    index: HashMap<(u32, u64), u32>,
}

impl Keys {
    /// The key of `(ns, dev)`, added if new.
    fn key(&mut self, ns: u32, dev: u64) -> u32 {
        if let Some(&k) = self.index.get(&(ns, dev)) {
            return k;
        }
        let k = u32::try_from(self.pairs.len())
            .ok()
            .filter(|&k| k < LINKED)
            .expect("fewer than 2^31 devices");
        self.pairs.push((ns, dev));
        self.index.insert((ns, dev), k);
        k
    }

    fn pack(&mut self, f: &FileRec) -> Packed {
        let key = self.key(f.ns, f.dev) | if f.linked { LINKED } else { 0 };
        Packed {
            node: f.node,
            ino: [f.ino as u32, (f.ino >> 32) as u32],
            key,
        }
    }

    fn unpack(&self, id: usize, p: &Packed) -> FileRec {
        let (ns, dev) = self.pairs[(p.key & !LINKED) as usize];
        FileRec {
            id: id as u32,
            node: p.node,
            ns,
            dev,
            ino: u64::from(p.ino[1]) << 32 | u64::from(p.ino[0]),
            linked: p.key & LINKED != 0,
        }
    }
}

/// One walk thread's file records, packed, each with its id, in the order
/// its tasks ended.
#[derive(Debug, Default)]
pub(crate) struct FileShard {
    recs: Vec<(u32, Packed)>,
    keys: Keys,
}

impl FileShard {
    /// Takes a task's records (leaving its vector empty).
    pub(crate) fn append(&mut self, files: &mut Vec<FileRec>) {
        self.recs.reserve(files.len());
        for f in files.drain(..) {
            let p = self.keys.pack(&f);
            self.recs.push((f.id, p));
        }
    }
}

/// Records read from the end of their vectors, which give back their room
/// a block at a time: the vectors and what is made of them are not both
/// held whole.
const BLOCK: usize = 1 << 14;

/// Pops the last element of `v`, giving back its room past a block unused.
fn pop_shrinking<T>(v: &mut Vec<T>) -> Option<T> {
    let x = v.pop();
    if v.capacity() - v.len() >= BLOCK {
        v.shrink_to_fit();
    }
    x
}

/// The file records of a scan by id ([`FileRec::id`] is the place), 16
/// bytes each (module doc).
#[derive(Clone, Debug, Default)]
pub(crate) struct Files {
    recs: Vec<Packed>,
    keys: Keys,
}

impl Files {
    /// The shards' records, each at its id, `n` ids in all (a gap, an id no
    /// record has, is a default record, as past the last record). Each
    /// shard is sorted, then the records are taken from the shards' ends,
    /// the highest id first, and the shards give back their room as they
    /// go: at the end of a walk of shared files this is its peak (four
    /// reflinked /usr copies: 445,776 files).
    pub(crate) fn by_id(shards: Vec<FileShard>, n: usize) -> Files {
        let mut keys = Keys::default();
        let mut shards: Vec<Vec<(u32, Packed)>> = shards
            .into_iter()
            .map(|mut s| {
                // The shard's keys as the whole's.
                let to: Vec<u32> = (s.keys.pairs.iter())
                    .map(|&(ns, dev)| keys.key(ns, dev))
                    .collect();
                for (_, p) in &mut s.recs {
                    p.key = to[(p.key & !LINKED) as usize] | (p.key & LINKED);
                }
                s.recs.sort_unstable_by_key(|r| r.0);
                s.recs
            })
            .collect();
        let have = shards.iter().map(Vec::len).sum::<usize>();
        let top = shards
            .iter()
            .filter_map(|s| s.last())
            .map(|r| r.0 as usize + 1)
            .max();
        let len = n.max(top.unwrap_or(0));
        let gap = if have < len {
            Packed {
                key: keys.key(0, 0),
                ..Packed::default()
            }
        } else {
            Packed::default()
        };
        // Highest id first, then reversed in place.
        let mut recs: Vec<Packed> = Vec::with_capacity(len);
        let mut next = len;
        loop {
            let best = (0..shards.len())
                .filter_map(|i| shards[i].last().map(|r| (r.0, i)))
                .max();
            let Some((id, i)) = best else { break };
            let id = id as usize;
            debug_assert!(id < next, "file ids are unique");
            recs.extend(std::iter::repeat_n(gap, next - id - 1));
            let (_, p) = pop_shrinking(&mut shards[i]).expect("a record");
            recs.push(p);
            next = id;
        }
        recs.extend(std::iter::repeat_n(gap, next));
        recs.reverse();
        Files { recs, keys }
    }

    /// Records given as they are, each at its place (`files[i].id` is not
    /// read): saved scans, the trees the tests build, and what the inline
    /// records' matching ([`crate::extents::inline`]) gives back. Taken
    /// from the end, the vector giving back its room as it goes.
    pub(crate) fn from_recs(mut files: Vec<FileRec>) -> Files {
        let mut keys = Keys::default();
        let mut recs = Vec::with_capacity(files.len());
        while let Some(f) = pop_shrinking(&mut files) {
            recs.push(keys.pack(&f));
        }
        recs.reverse();
        Files { recs, keys }
    }

    /// The records whole, each with its id: what a saved scan writes and
    /// the inline records' matching takes. Taken from the end, as
    /// [`Files::from_recs`].
    pub(crate) fn into_recs(self) -> Vec<FileRec> {
        let Files { mut recs, keys } = self;
        let mut out = Vec::with_capacity(recs.len());
        while let Some(p) = pop_shrinking(&mut recs) {
            out.push(keys.unpack(recs.len(), &p));
        }
        out.reverse();
        out
    }

    /// How many ids there are.
    pub(crate) fn len(&self) -> usize {
        self.recs.len()
    }

    /// The record of file `id`, if there is one.
    pub(crate) fn get(&self, id: usize) -> Option<FileRec> {
        self.recs.get(id).map(|p| self.keys.unpack(id, p))
    }

    /// The node of file `id` (its link that was mapped).
    pub(crate) fn node(&self, id: usize) -> NodeId {
        self.recs[id].node
    }

    /// Every record, by id.
    pub(crate) fn iter(&self) -> impl ExactSizeIterator<Item = FileRec> + '_ {
        (self.recs.iter().enumerate()).map(|(id, p)| self.keys.unpack(id, p))
    }

    /// Appends `f` as the next id (`f.id` is not read).
    pub(crate) fn push(&mut self, f: &FileRec) {
        let p = self.keys.pack(f);
        self.recs.push(p);
    }

    /// Replaces every record's node `n` with `to(n)`.
    pub(crate) fn map_nodes(&mut self, to: impl Fn(NodeId) -> NodeId) {
        for p in &mut self.recs {
            p.node = to(p.node);
        }
    }

    /// Gives back the spare room.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.recs.shrink_to_fit();
    }

    /// Puts `f` at its id, the ids before it that have no record made
    /// default ones.
    pub(crate) fn set(&mut self, f: FileRec) {
        let id = f.id as usize;
        if id >= self.recs.len() {
            let gap = self.keys.pack(&FileRec::default());
            // One more record, not a doubling of a vector of millions.
            self.recs.reserve_exact(id + 1 - self.recs.len());
            self.recs.resize(id + 1, gap);
        }
        self.recs[id] = self.keys.pack(&f);
    }
}

impl From<Vec<FileRec>> for Files {
    fn from(files: Vec<FileRec>) -> Files {
        Files::from_recs(files)
    }
}

#[cfg(test)]
mod tests {
    use super::{FileRec, FileShard, Files, NodeId};

    fn rec(id: u32) -> FileRec {
        FileRec {
            id,
            node: NodeId::new(id as usize % 7 + 1),
            ns: id % 3,
            dev: u64::from(id % 5) << 40 | 9,
            ino: (u64::from(id) << 33) | (u64::from(id) + 100),
            linked: id % 4 == 0,
        }
    }

    fn shard(ids: impl IntoIterator<Item = u32>) -> FileShard {
        let mut s = FileShard::default();
        let mut v: Vec<FileRec> = ids.into_iter().map(rec).collect();
        s.append(&mut v);
        assert!(v.is_empty());
        s
    }

    #[test]
    fn by_id_puts_each_record_at_its_id_and_fills_the_gaps() {
        // Three shards in no order, ids 1, 4 and 7..9 missing, a shard
        // larger than a block, two more ids than records.
        let shards = vec![
            shard([5, 0, 3]),
            shard((10..40_010).rev()),
            shard([]),
            shard([2, 6]),
        ];
        let files = Files::by_id(shards, 40_012);
        assert_eq!(files.len(), 40_012);
        for (k, f) in files.iter().enumerate() {
            assert_eq!(f.id as usize, k);
            let present = !matches!(k, 1 | 4 | 7..=9 | 40_010..);
            let want = if present {
                rec(k as u32)
            } else {
                FileRec {
                    id: k as u32,
                    ..FileRec::default()
                }
            };
            assert_eq!(
                (f.node, f.ns, f.dev, f.ino, f.linked),
                (want.node, want.ns, want.dev, want.ino, want.linked),
                "at {k}"
            );
            assert_eq!(files.node(k), want.node);
        }
    }

    #[test]
    fn records_go_through_whole_and_back_unchanged() {
        let recs: Vec<FileRec> = (0..50_000).map(rec).collect();
        let files = Files::from_recs(recs.clone());
        assert_eq!(files.len(), recs.len());
        assert_eq!(files.get(49_999).map(|f| f.ino), Some(recs[49_999].ino));
        assert!(files.get(50_000).is_none());
        let back = files.into_recs();
        assert_eq!(back.len(), recs.len());
        for (a, b) in back.iter().zip(&recs) {
            assert_eq!(
                (a.id, a.node, a.ns, a.dev, a.ino, a.linked),
                (b.id, b.node, b.ns, b.dev, b.ino, b.linked)
            );
        }
    }

    #[test]
    fn set_past_the_end_fills_the_gap_with_default_records() {
        let mut files = Files::from_recs(vec![rec(0)]);
        files.set(rec(3));
        assert_eq!(files.len(), 4);
        let gap = files.get(2).expect("a gap record");
        assert_eq!(
            (gap.node, gap.ns, gap.dev, gap.ino, gap.linked),
            (NodeId::TOP, 0, 0, 0, false)
        );
        assert_eq!(files.get(3).map(|f| f.ino), Some(rec(3).ino));
        files.set(FileRec { id: 0, ..rec(6) });
        assert_eq!(files.get(0).map(|f| f.ino), Some(rec(6).ino));
    }
}
