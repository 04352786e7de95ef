//! Records by node id in chunks of [`CHUNK`] ids, written by the walk's
//! threads as they go ([`Sink`]).
//!
//! Ids are handed out one at a time, by every thread, so the records of
//! one chunk come from all of them, in any order. Each chunk has its own
//! lock, taken once for the run of a task's records that falls in it; a
//! new chunk is made when a record first needs it. The chunks are sized
//! once, never grown by doubling, and are the store the later stages read:
//! nothing is gathered or copied after the walk.

use std::sync::{Mutex, PoisonError, RwLock};

use super::NodeId;

/// Ids per chunk, as a power of two.
pub(crate) const CHUNK_BITS: u32 = 12;
/// Ids per chunk.
pub(crate) const CHUNK: usize = 1 << CHUNK_BITS;

/// Node `id`'s chunk and its place in it.
#[inline]
pub(crate) fn at(id: NodeId) -> (usize, usize) {
    let i = id.index();
    (i >> CHUNK_BITS, i & (CHUNK - 1))
}

/// Chunks of records by id, written from many threads.
pub(crate) struct Sink<C> {
    chunks: RwLock<Vec<Mutex<C>>>,
}

impl<C> Default for Sink<C> {
    fn default() -> Sink<C> {
        Sink {
            chunks: RwLock::new(Vec::new()),
        }
    }
}

impl<C> Sink<C> {
    /// Writes `items`, each at its id (`id`), with `put(chunk, place,
    /// item)`; a chunk not made yet is made by `make`.
    pub(crate) fn write<'s, T>(
        &self,
        items: &'s [T],
        id: impl Fn(&T) -> NodeId,
        make: impl Fn() -> C,
        mut put: impl FnMut(&mut C, usize, &'s T),
    ) {
        let Some(last) = items.iter().map(|x| at(id(x)).0).max() else {
            return;
        };
        let mut dir = self.chunks.read().unwrap_or_else(PoisonError::into_inner);
        if dir.len() <= last {
            drop(dir);
            let mut w = self.chunks.write().unwrap_or_else(PoisonError::into_inner);
            while w.len() <= last {
                w.push(Mutex::new(make()));
            }
            drop(w);
            dir = self.chunks.read().unwrap_or_else(PoisonError::into_inner);
        }
        let mut rest = items;
        while let Some(first) = rest.first() {
            let k = at(id(first)).0;
            let run = rest
                .iter()
                .position(|x| at(id(x)).0 != k)
                .unwrap_or(rest.len());
            let mut c = dir[k].lock().unwrap_or_else(PoisonError::into_inner);
            for x in &rest[..run] {
                put(&mut c, at(id(x)).1, x);
            }
            drop(c);
            rest = &rest[run..];
        }
    }

    /// The chunks, in id order.
    pub(crate) fn into_chunks(self) -> Vec<C> {
        self.chunks
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
            .into_iter()
            .map(|m| m.into_inner().unwrap_or_else(PoisonError::into_inner))
            .collect()
    }
}

/// `chunks` made to hold exactly the ids `0..n`: chunks past them
/// dropped, missing ones made by `make`, the last one cut to `n` by
/// `cut(chunk, len)`.
pub(crate) fn fit<C>(
    chunks: &mut Vec<C>,
    n: usize,
    make: impl Fn() -> C,
    cut: impl Fn(&mut C, usize),
) {
    let want = n.div_ceil(CHUNK);
    chunks.truncate(want);
    while chunks.len() < want {
        chunks.push(make());
    }
    if let Some(last) = chunks.last_mut() {
        cut(last, n - (want - 1) * CHUNK);
    }
    chunks.shrink_to_fit();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_land_at_their_ids_from_any_thread() {
        let sink: Sink<Vec<u32>> = Sink::default();
        let ids: Vec<u32> = (0..3 * CHUNK as u32 + 5).collect();
        let parts: Vec<&[u32]> = ids.chunks(1000).collect();
        std::thread::scope(|s| {
            for part in parts.chunks(3) {
                let sink = &sink;
                s.spawn(move || {
                    for p in part.iter().rev() {
                        sink.write(
                            p,
                            |&i| NodeId::new(i as usize),
                            || vec![u32::MAX; CHUNK],
                            |c, at, &i| c[at] = i,
                        );
                    }
                });
            }
        });
        let mut chunks = sink.into_chunks();
        fit(&mut chunks, ids.len(), Vec::new, |c, n| c.truncate(n));
        let all: Vec<u32> = chunks.concat();
        assert_eq!(all, ids);
        fit(&mut chunks, CHUNK + 1, Vec::new, |c, n| c.truncate(n));
        assert_eq!(chunks.iter().map(Vec::len).collect::<Vec<_>>(), [CHUNK, 1]);
    }
}
