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

    /// Moves every map of `other` into `self`.
    pub(crate) fn append(&mut self, other: &mut Mappings) {
        for e in other.files.drain(..) {
            let (s, l) = (e.start as usize, e.len as usize);
            let Some(ext) = other.extents.get(s..s + l) else {
                continue;
            };
            let ext: Vec<MapExtent> = ext.to_vec();
            self.push(e.key, &ext);
        }
        other.extents.clear();
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

    /// The number of files.
    pub(crate) fn len(&self) -> usize {
        self.files.len()
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

    /// The files saved on device `dev`: each one's index, key and map.
    pub(crate) fn on_device(&self, dev: u64) -> Vec<(usize, MapKey, &[MapExtent])> {
        let from = self.files.partition_point(|e| e.key.dev < dev);
        (self.files[from..].iter().enumerate())
            .take_while(|(_, e)| e.key.dev == dev)
            .map(|(i, e)| {
                let (s, l) = (e.start as usize, e.len as usize);
                (from + i, e.key, self.extents.get(s..s + l).unwrap_or(&[]))
            })
            .collect()
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
        let mut m = Mappings::default();
        m.push(key(2, 20, 5), &[e]);
        m.push(key(1, 30, 5), &[]);
        let mut other = Mappings::default();
        other.push(key(2, 10, 5), &[e, e]);
        m.append(&mut other);
        m.finish();
        assert_eq!(m.len(), 3);
        assert_eq!(m.unchanged(&key(2, 10, 5)), Some(&[e, e][..]));
        assert_eq!(m.unchanged(&key(1, 30, 5)), Some(&[][..]));
        // Its ctime moved: not reused.
        assert_eq!(m.unchanged(&key(2, 20, 6)), None);
        assert_eq!(m.unchanged(&key(3, 20, 5)), None);
        let devs: Vec<u64> = m.iter().map(|(k, _)| k.dev).collect();
        assert_eq!(devs, [1, 2, 2]);
    }
}
