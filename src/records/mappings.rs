//! Files' extent maps as a saved scan keeps them, for `--since`: a file
//! whose device, inode, ctime, size and blocks are those saved reuses
//! its saved map instead of being opened and mapped again.
//!
//! Only what the figures read of a map is kept: the extents flagged
//! shared, encoded (compressed) or inline. An extent with none of these
//! flags adds nothing but its blocks, which `statx` gives. A file whose
//! map has none of them is kept all the same, with no extent: it is
//! known to share nothing, as it was mapped.

/// One extent of a saved map: what FIEMAP gave, but its offset in the
/// file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct MapExtent {
    /// Its address on disk.
    pub(crate) physical: u64,
    /// Its length in bytes.
    pub(crate) length: u64,
    /// Its `FIEMAP_EXTENT_*` flags.
    pub(crate) flags: u32,
}

/// What identifies the state of a file a map was read from: a file that
/// still has them all reuses the map.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub(crate) struct MapKey {
    /// Its device, as `statx` gives it (`makedev`).
    pub(crate) dev: u64,
    /// Its inode number.
    pub(crate) ino: u64,
    /// Its ctime: seconds, nanoseconds.
    pub(crate) ctime: (i64, u32),
    /// Its size.
    pub(crate) size: u64,
    /// Its allocated 512-byte blocks.
    pub(crate) blocks: u64,
}

/// Maps as a walk keeps them for `--export`: each file's key and extents
/// encoded as the saved scan writes them (postcard's varints, about 28
/// bytes a file with one extent), one after the other as the walk's
/// threads met them; [`MapBuf::sorted`] puts them in order.
#[derive(Debug, Default)]
pub(crate) struct MapBuf {
    bytes: Vec<u8>,
}

/// One file's map as encoded: its key, then its extents.
type Record<'a> = (MapKey, std::borrow::Cow<'a, [MapExtent]>);

impl MapBuf {
    /// Adds the map of file `key`.
    pub(crate) fn push(&mut self, key: MapKey, extents: &[MapExtent]) {
        let rec: Record<'_> = (key, std::borrow::Cow::Borrowed(extents));
        if let Ok(v) = postcard::to_extend(&rec, std::mem::take(&mut self.bytes)) {
            self.bytes = v;
        }
    }

    /// Moves every map of `other` into `self`.
    pub(crate) fn append(&mut self, other: &mut MapBuf) {
        self.bytes.append(&mut other.bytes);
    }

    /// Whether it holds none.
    pub(crate) fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The records, sorted by device and inode, each inode once (its
    /// latest ctime), after their number: what a saved scan writes, the
    /// same whatever the order of the walk.
    pub(crate) fn sorted(&self) -> Vec<u8> {
        let mut at: Vec<(MapKey, usize, usize)> = Vec::new();
        let mut rest = &self.bytes[..];
        while !rest.is_empty() {
            let Ok(((key, _), after)) = postcard::take_from_bytes::<Record<'_>>(rest) else {
                break;
            };
            let start = self.bytes.len() - rest.len();
            at.push((key, start, rest.len() - after.len()));
            rest = after;
        }
        at.sort_by_key(|r| (r.0.dev, r.0.ino, std::cmp::Reverse(r.0.ctime)));
        at.dedup_by_key(|r| (r.0.dev, r.0.ino));
        let mut out = postcard::to_allocvec(&(at.len() as u64)).unwrap_or_default();
        out.reserve(self.bytes.len());
        for (_, s, l) in at {
            out.extend_from_slice(&self.bytes[s..s + l]);
        }
        out
    }
}

/// Files' maps from records as [`MapBuf::sorted`] writes them; `Err` at
/// the first that does not decode, or when they are not as many as said.
pub(crate) fn decode(bytes: &[u8]) -> Result<Mappings, String> {
    let (n, mut bytes) = postcard::take_from_bytes::<u64>(bytes).map_err(|e| e.to_string())?;
    let mut m = Mappings::default();
    // Each record takes two bytes at least: no count can ask for more.
    m.files.reserve_exact((n as usize).min(bytes.len() / 2));
    let mut seen = 0u64;
    while !bytes.is_empty() {
        let ((key, ext), rest) =
            postcard::take_from_bytes::<Record<'_>>(bytes).map_err(|e| e.to_string())?;
        m.push(key, &ext);
        bytes = rest;
        seen += 1;
    }
    if seen != n {
        return Err(format!("{seen} files' maps where {n} were written"));
    }
    m.finish();
    Ok(m)
}

/// A file's key and the range of its extents in [`Mappings::extents`].
#[derive(Clone, Copy, Debug)]
struct Entry {
    key: MapKey,
    start: u32,
    len: u32,
}

/// What the filesystem's own records say of a saved map.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Checked {
    /// Nothing: it may be stale.
    #[default]
    Unchecked,
    /// Its file has the shared extents saved: a FIEMAP would give the same.
    Proven,
    /// Its file's shared extents are not those saved: map it again.
    Stale,
    /// Not checked, where a check would cost more than mapping: map it
    /// again.
    Remap,
}

/// Files' saved maps, sorted by device and inode: read from a saved scan
/// for `--since`, or gathered by a walk for `--export`.
#[derive(Debug, Default)]
pub(crate) struct Mappings {
    files: Vec<Entry>,
    extents: Vec<MapExtent>,
    /// By file, when some were checked.
    checked: Vec<Checked>,
    /// The saved scan they were read from, as given (for messages).
    pub(crate) scan: Vec<u8>,
    /// Only the maps the filesystem proved are reused (`--compare OLD`,
    /// which asked for none: its figures are never less exact for them).
    pub(crate) proven_only: bool,
}

impl Mappings {
    /// Adds the map of file `key`; [`Self::finish`] sorts them after.
    pub(crate) fn push(&mut self, key: MapKey, extents: &[MapExtent]) {
        let start = u32::try_from(self.extents.len()).unwrap_or(u32::MAX);
        let len = u32::try_from(extents.len()).unwrap_or(u32::MAX);
        if start == u32::MAX || len == u32::MAX {
            return;
        }
        self.extents.extend_from_slice(extents);
        self.files.push(Entry { key, start, len });
    }

    /// Sorts by device and inode; of one inode mapped twice (a hard link
    /// met twice, a file mapped then changed), the later state is kept.
    pub(crate) fn finish(&mut self) {
        self.files.sort_by_key(|e| (e.key.dev, e.key.ino));
        self.files.dedup_by(|b, a| {
            let same = (a.key.dev, a.key.ino) == (b.key.dev, b.key.ino);
            if same && b.key.ctime > a.key.ctime {
                *a = *b;
            }
            same
        });
    }

    /// Whether there is none.
    pub(crate) fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The saved map of inode `ino` on `dev`, with the key it was saved
    /// under (sorted first: [`Self::finish`]).
    pub(crate) fn get(&self, dev: u64, ino: u64) -> Option<(MapKey, &[MapExtent])> {
        let k = self
            .files
            .binary_search_by_key(&(dev, ino), |e| (e.key.dev, e.key.ino))
            .ok()?;
        let e = &self.files[k];
        let (s, l) = (e.start as usize, e.len as usize);
        Some((e.key, self.extents.get(s..s + l)?))
    }

    /// The saved map of the file that `key` names, if it is in that state
    /// still.
    pub(crate) fn unchanged(&self, key: &MapKey) -> Option<&[MapExtent]> {
        self.get(key.dev, key.ino)
            .filter(|(k, _)| k == key)
            .map(|(_, e)| e)
    }

    /// [`Self::unchanged`], with what was found of the map.
    pub(crate) fn checked(&self, key: &MapKey) -> Option<(&[MapExtent], Checked)> {
        let k = (self.files)
            .binary_search_by_key(&(key.dev, key.ino), |e| (e.key.dev, e.key.ino))
            .ok()?;
        let e = &self.files[k];
        let (s, l) = (e.start as usize, e.len as usize);
        let c = self.checked.get(k).copied().unwrap_or_default();
        (e.key == *key).then(|| (self.extents.get(s..s + l).unwrap_or(&[]), c))
    }

    /// The files saved on device `dev`, by index, in order of inode.
    pub(crate) fn on_device(&self, dev: u64) -> std::ops::Range<usize> {
        let from = self.files.partition_point(|e| e.key.dev < dev);
        let to = self.files.partition_point(|e| e.key.dev <= dev);
        from..to
    }

    /// Of the files `range` ([`Self::on_device`]), the index of inode `ino`.
    pub(crate) fn index_in(&self, range: &std::ops::Range<usize>, ino: u64) -> Option<usize> {
        let files = self.files.get(range.clone())?;
        files
            .binary_search_by_key(&ino, |e| e.key.ino)
            .ok()
            .map(|k| range.start + k)
    }

    /// The map of file `i`.
    pub(crate) fn extents_at(&self, i: usize) -> &[MapExtent] {
        self.files.get(i).map_or(&[], |e| {
            let (s, l) = (e.start as usize, e.len as usize);
            self.extents.get(s..s + l).unwrap_or(&[])
        })
    }

    /// Records what was found of the map of file `i` ([`Self::on_device`]).
    pub(crate) fn set_checked(&mut self, i: usize, c: Checked) {
        if self.checked.len() < self.files.len() {
            self.checked.resize(self.files.len(), Checked::Unchecked);
        }
        if let Some(slot) = self.checked.get_mut(i) {
            *slot = c;
        }
    }

    /// Every file's key and map, in order.
    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl Iterator<Item = (MapKey, &[MapExtent])> {
        self.files.iter().map(|e| {
            let (s, l) = (e.start as usize, e.len as usize);
            (e.key, self.extents.get(s..s + l).unwrap_or(&[]))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(dev: u64, ino: u64, sec: i64) -> MapKey {
        MapKey {
            dev,
            ino,
            ctime: (sec, 0),
            size: 10,
            blocks: 8,
        }
    }

    #[test]
    fn a_file_is_found_only_in_the_state_it_was_saved_in() {
        let e = MapExtent {
            physical: 4096,
            length: 4096,
            flags: 0x2000,
        };
        // As the walk's threads keep them: in any order, one inode twice.
        let mut buf = MapBuf::default();
        buf.push(key(2, 20, 5), &[e]);
        buf.push(key(1, 30, 5), &[]);
        let mut other = MapBuf::default();
        other.push(key(2, 10, 5), &[e, e]);
        other.push(key(2, 20, 4), &[]);
        buf.append(&mut other);
        let m = decode(&buf.sorted()).unwrap();
        assert_eq!(m.iter().count(), 3);
        assert_eq!(
            m.unchanged(&key(2, 20, 5)),
            Some(&[e][..]),
            "the later state"
        );
        assert_eq!(m.unchanged(&key(2, 10, 5)), Some(&[e, e][..]));
        assert_eq!(m.unchanged(&key(1, 30, 5)), Some(&[][..]));
        // Its ctime moved: not reused.
        assert_eq!(m.unchanged(&key(2, 20, 6)), None);
        assert_eq!(m.unchanged(&key(3, 20, 5)), None);
        let devs: Vec<u64> = m.iter().map(|(k, _)| k.dev).collect();
        assert_eq!(devs, [1, 2, 2]);
    }
}
