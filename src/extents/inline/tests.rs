use super::share::Taken;
use super::*;
use crate::extents::source::Extents;
use crate::figures::{Kind, Stats};
use crate::probe::{Probe, magic};
use crate::probe::{Registry, Subvol};
use crate::records::NodeRec;
use crate::records::{CopySets, FileRec, Held, Link, Nodes};

fn registry(subvols: &[(u64, [u8; 16], [u8; 16])]) -> Registry {
    registry_made(subvols, (2000, 0))
}

/// [`registry`] with every subvolume made at `created`.
fn registry_made(subvols: &[(u64, [u8; 16], [u8; 16])], created: (i64, u32)) -> Registry {
    let reg = Registry::default();
    for &(dev, uuid, parent) in subvols {
        reg.insert(
            dev,
            Probe {
                magic: Ok(magic::BTRFS),
                reflink: None,
                uuid: Some(Ok([1; 16])),
                subvol: Some(Ok(Subvol {
                    id: 256,
                    ids: (uuid, parent),
                    created,
                })),
                placeholder: false,
            },
        );
    }
    reg
}

/// A record as the tests write it: its key in full.
#[derive(Clone, Copy)]
struct Full {
    node: usize,
    dev: u64,
    key: Key,
    bytes: u64,
}

/// The records of `chunks`, their keys looked up as the walk does (a mark
/// before the first of each chunk and before each of another subvolume
/// than the one before it), and the keys by id; and the bytes the key map
/// held.
fn interned(chunks: &[Vec<Full>]) -> (Vec<Vec<InlineRec>>, Table, usize) {
    let keys = Keys::default();
    let recs = chunks
        .iter()
        .map(|c| {
            let mut last = None;
            let mut out = Vec::new();
            for f in c {
                let dev = dev32(f.dev).unwrap();
                let index = keys.dev(dev);
                if last != Some(index) && index < NO_DEV {
                    out.push(InlineRec::mark(index));
                    last = Some(index);
                }
                let at = (NodeId::new(f.node), f.key, dev, index);
                out.push(InlineRec::new(at, f.bytes, false, None, &keys));
            }
            out
        })
        .collect();
    let bytes = keys.bytes();
    (recs, keys.table(), bytes)
}

/// The subvolume of each record of `stream` (not its marks), as the marks
/// and odd records of `table` say.
fn stream_devs(stream: &[InlineRec], table: &Table) -> Vec<u32> {
    let mut index = None;
    let mut devs = Vec::new();
    for r in stream {
        if r.is_mark() {
            index = Some(r.at as usize);
        } else {
            devs.push(
                r.odd(&table.odd)
                    .map_or_else(|| table.devs[index.expect("a mark first")], |o| o.dev),
            );
        }
    }
    devs
}

/// [`share`] with the devices of `recs`.
fn share_recs(
    recs: &[Full],
    registry: &Registry,
    extents: &Extents,
    nodes: &mut Nodes,
    links: &mut [Link],
    files: &mut (Vec<FileRec>, Vec<Held>, CopySets),
) -> usize {
    let mut devs: Vec<u64> = recs.iter().map(|r| r.dev).collect();
    devs.sort_unstable();
    devs.dedup();
    let (chunks, keys, _) = interned(&[recs.to_vec()]);
    share(
        (chunks, &keys),
        (&devs, None, &[]),
        registry,
        extents,
        nodes,
        links,
        (&mut files.0, (&files.2, &mut files.1)),
    )
    .units
}

/// How many copies `held` of `sets` are.
fn copies(held: Vec<Held>, sets: CopySets) -> usize {
    crate::records::Copies::new(held, sets).len()
}

fn rec(node: usize, dev: u64) -> Full {
    Full {
        node,
        dev,
        key: Key::new((0, 0, 257), false, (900, 7), (1000, 5), 900),
        bytes: 4096,
    }
}

fn nodes() -> Nodes {
    nodes_n(3)
}

/// The top and `n - 1` directories below it.
fn nodes_n(n: usize) -> Nodes {
    let own = Stats {
        total: 4096,
        exclusive: 4096,
        reclaimable: 4096,
        ..Stats::default()
    };
    (0..n)
        .map(|id| NodeRec {
            id: NodeId::new(id),
            parent: if id == 0 { NodeId::NONE } else { NodeId::TOP },
            kind: Kind::Dir,
            own: if id == 0 { Stats::default() } else { own },
            ..NodeRec::default()
        })
        .collect::<Vec<_>>()
        .into()
}

/// Bytes taken from a node in one pass come to what taking each at
/// once would: past 32 bits the sum is taken at once, never wrapped,
/// and nothing is taken below zero.
#[test]
fn inline_bytes_taken_in_one_pass_are_taken_whole() {
    let big = 3_000_000_000;
    let own = |e: u64| Stats {
        total: e,
        exclusive: e,
        reclaimable: e,
        ..Stats::default()
    };
    let mut nodes: Nodes = (0..3)
        .map(|id| NodeRec {
            id: NodeId::new(id),
            parent: if id == 0 { NodeId::NONE } else { NodeId::TOP },
            kind: Kind::Dir,
            own: own(if id == 1 { 10 * big } else { 4096 }),
            ..NodeRec::default()
        })
        .collect::<Vec<_>>()
        .into();
    let mut taken = Taken(vec![0; nodes.len()]);
    let (one, two) = (NodeId::new(1), NodeId::new(2));
    for bytes in [big, big, 5, big] {
        taken.add(&mut nodes, one, bytes);
    }
    for bytes in [1000, 4000] {
        taken.add(&mut nodes, two, bytes);
    }
    taken.apply(&mut nodes);
    let left = 10 * big - 3 * big - 5;
    assert_eq!(
        nodes.own(one),
        Stats {
            total: 10 * big,
            ..own(left)
        }
    );
    assert_eq!(
        nodes.own(two),
        Stats {
            total: 4096,
            ..own(0)
        }
    );
    assert_eq!(nodes.own(NodeId::new(0)), own(4096), "untouched");
}

/// A key keeps its fields whole, the symlink flag beside the birth
/// time's nanoseconds: a symlink's key is not its file's.
#[test]
fn a_key_packs_the_symlink_flag() {
    let file = Key::new((1, 2, 257), false, (900, 999_999_999), (1000, 5), 900);
    let link = Key::new((1, 2, 257), true, (900, 999_999_999), (1000, 5), 900);
    assert_ne!(file, link);
    assert!(link.symlink() && !file.symlink());
    assert_eq!(link.btime(), (900, 999_999_999));
    assert_eq!(file.btime(), link.btime());
    assert_eq!(link.ctime(), (1000, 5));
    let keys = Keys::default();
    let ids = [keys.id(file), keys.id(link), keys.id(file)];
    assert_eq!(ids, [0, 1, 0]);
    assert_eq!(keys.table().keys, vec![file, link]);
}

/// A record holds its node, its key and its flags in 8 bytes, its bytes
/// being its key's and its subvolume its mark's; bytes other than the
/// key's, bytes past 16 bits, a subvolume past the 65,535th and a file id
/// in an odd record beside it.
#[test]
fn records_keep_their_figures_in_8_bytes_or_an_odd_record() {
    let keys = Keys::default();
    let dev = dev32(10).unwrap();
    let key = rec(3, 10).key;
    let at = (NodeId::new(3), key, dev, keys.dev(dev));
    let plain = InlineRec::new(at, 4096, true, None, &keys);
    let again = InlineRec::new(at, 4096, false, None, &keys);
    let other = InlineRec::new(at, 512, false, None, &keys);
    let huge = InlineRec::new(at, 5 << 32, false, None, &keys);
    let with_file = InlineRec::new(at, 4096, true, Some(9), &keys);
    // A key first seen with bytes past 16 bits: every record of it is odd.
    let big_key = Key { ino: 300, ..key };
    let big = InlineRec::new(
        (NodeId::new(3), big_key, dev, 0),
        0x10000,
        false,
        None,
        &keys,
    );
    let most = InlineRec::new(
        (NodeId::new(3), big_key, dev, 0),
        0xffff,
        false,
        None,
        &keys,
    );
    // The 65,534 subvolumes after the first fill the 16 bits; the next
    // two are odd.
    let mut devs = Vec::new();
    for d in 11..=65_536 + 10 {
        let dev = dev32(d).unwrap();
        let at = (NodeId::new(4), key, dev, keys.dev(dev));
        devs.push((InlineRec::new(at, 4096, false, None, &keys), d));
    }
    let table = keys.table();
    let odd = &table.odd[..];
    assert_eq!(odd.len(), 7, "only the seven that do not fit");
    for (r, bytes, file, linked) in [
        (plain, 4096, None, true),
        (again, 4096, None, false),
        (other, 512, None, false),
        (huge, 5 << 32, None, false),
        (with_file, 4096, Some(9), true),
        (big, 0x10000, None, false),
        (most, 0xffff, None, false),
    ] {
        assert_eq!(
            (
                r.bytes(odd, &table.bytes),
                r.file(odd),
                r.linked(),
                r.node(odd)
            ),
            (bytes, file, linked, NodeId::new(3))
        );
    }
    assert_eq!((plain.key(), big.key()), (0, 1));
    assert_eq!([plain, again].map(|r| r.odd(odd).is_some()), [false, false]);
    for (r, d) in &devs {
        assert_eq!(
            (r.bytes(odd, &table.bytes), r.node(odd)),
            (4096, NodeId::new(4))
        );
        if let Some(o) = r.odd(odd) {
            assert_eq!(o.dev, dev32(*d).unwrap());
        }
    }
    assert_eq!((devs_odd(&table), table.devs().len()), (2, 65_537));
}

/// A task remembers its last record's subvolume index; a record of
/// another device is given its own, and a mark before it, as is the
/// first record after the task's records were handed on.
#[test]
fn a_record_of_another_device_has_its_own_index() {
    use rustix::fs::{AtFlags, CWD, StatxFlags, statx};
    let st = |p: &str| statx(CWD, p, AtFlags::empty(), StatxFlags::BASIC_STATS).unwrap();
    let (root, proc) = (st("/"), st("/proc/self/status"));
    let dev = |s: &Statx| dev32(rustix::fs::makedev(s.stx_dev_major, s.stx_dev_minor)).unwrap();
    assert_ne!(dev(&root), dev(&proc), "/proc is a filesystem of its own");
    let keys = Keys::default();
    let mut last = None;
    let mut stream = Vec::new();
    let mut marks = Vec::new();
    for (s, fresh) in [
        (&root, true),
        (&proc, false),
        (&proc, false),
        (&root, false),
        (&root, true),
    ] {
        let got = InlineRec::of(
            s,
            (NodeId::new(1), 0),
            (512, false, None),
            (0, &keys, &mut last),
            (fresh, None),
        );
        marks.push(got[0].is_some());
        stream.extend(got.into_iter().flatten());
    }
    assert_eq!(marks, [true, true, false, true, true]);
    let table = keys.table();
    assert_eq!(
        stream_devs(&stream, &table),
        [dev(&root), dev(&proc), dev(&proc), dev(&root), dev(&root)]
    );
    assert_eq!(table.devs().len(), 2);
}

/// A copy's kept key id serves the records of its filesystem and
/// namespace, without the map; another namespace's record looks its own
/// key up, as does one of a filesystem past 8 bits, which is not kept.
#[test]
fn a_kept_key_id_serves_its_filesystem_and_namespace_alone() {
    use rustix::fs::{AtFlags, CWD, StatxFlags, statx};
    let st = statx(CWD, "/", AtFlags::empty(), StatxFlags::BASIC_STATS).unwrap();
    let (keys, cache) = (Keys::default(), KeyCache::default());
    let id = |ns: u32, fs: u32| {
        let got = InlineRec::of(
            &st,
            (NodeId::new(1), ns),
            (512, false, None),
            (fs, &keys, &mut None),
            (true, Some(&cache)),
        );
        got[1].expect("a record").key()
    };
    let a = id(0, 0);
    assert_eq!(id(0, 0), a);
    let b = id(1, 0);
    assert_ne!(b, a, "another namespace, another key");
    assert_eq!(id(1, 0), b);
    let c = id(1, 300);
    assert!(c != a && c != b, "another filesystem, another key");
    assert_eq!(
        cache.get(0, 1),
        Some((b, 512)),
        "a filesystem past 8 bits is not kept"
    );
    assert_eq!(keys.table().keys.len(), 3);
    // Kept, the id is taken as it is: the map is not asked.
    let (keys, cache) = (Keys::default(), KeyCache::default());
    cache.set(0, 0, (77, 512));
    let got = InlineRec::of(
        &st,
        (NodeId::new(1), 0),
        (512, false, None),
        (0, &keys, &mut None),
        (true, Some(&cache)),
    );
    assert_eq!(got[1].expect("a record").key(), 77);
    assert!(keys.table().keys.is_empty());
}

/// How many records' subvolumes are odd ones'.
fn devs_odd(table: &Table) -> usize {
    table
        .odd
        .iter()
        .filter(|o| o.dev != dev32(10).unwrap())
        .count()
}

/// Equal inode number, birth and change times and size in two
/// subvolumes that are not of one snapshot family: not shared. The same
/// in a subvolume and its snapshot: one shared unit.
#[test]
fn only_a_snapshot_family_shares() {
    let (a, b) = ([0xa; 16], [0xb; 16]);
    let recs = [rec(1, 10), rec(2, 11)];
    for (parent_of_b, want) in [([0; 16], 0), (a, 1)] {
        let reg = registry(&[(10, a, [0; 16]), (11, b, parent_of_b)]);
        let ext = Extents::new();
        let mut ns = nodes();
        let mut files = (Vec::new(), Vec::new(), CopySets::default());
        let n = share_recs(&recs, &reg, &ext, &mut ns, &mut [], &mut files);
        assert_eq!(n, want);
        let excl = if want == 1 { 0 } else { 4096 };
        let excl_of = |i| ns.own(NodeId::new(i)).exclusive;
        assert_eq!((excl_of(1), excl_of(2)), (excl, excl));
        // One file stands for the inode, the other is its copy.
        let (f, held, sets) = files;
        assert_eq!((f.len(), copies(held, sets)), (want, want));
        assert_eq!(ext.ranges(), want);
    }
}

/// The records come in chunks, as the walk's shards keep them (each
/// shard's last chunk part full): copies are found across chunks, and
/// every record of every chunk is read.
#[test]
fn copies_in_other_chunks_are_one_unit() {
    let (a, b) = ([0xa; 16], [0xb; 16]);
    let reg = registry(&[(10, a, [0; 16]), (11, b, a)]);
    let ext = Extents::new();
    let mut files = (Vec::new(), Vec::new(), CopySets::default());
    let mut other = rec(1, 10);
    other.key.ino = 300;
    let mut full: Vec<Full> = (0..1 << CHUNK_BITS).map(|_| other).collect();
    full[7] = rec(1, 10);
    let mut last = other;
    last.dev = 11;
    let (chunks, keys, _) = interned(&[full, vec![other], vec![rec(2, 11), last]]);
    let n = share(
        (chunks, &keys),
        (&[10, 11], None, &[]),
        &reg,
        &ext,
        &mut nodes(),
        &mut [],
        (&mut files.0, (&files.2, &mut files.1)),
    );
    // Inode 257 in both subvolumes, and inode 300: 4,097 copies in one,
    // one in the other. Each unit has one file; its other records are
    // copies of it.
    assert_eq!(n.units, 2);
    assert_eq!(ext.ranges(), 2);
    let (f, held, sets) = files;
    assert_eq!(f.len(), 2);
    assert_eq!(copies(held, sets), 2 + (1 << CHUNK_BITS) + 1 - 2);
}

/// Inline data is keyed whenever its snapshot was made: a file changed
/// just before is shared as one changed long before (copies of extents
/// are not: see `copies::settled`).
#[test]
fn a_file_changed_just_before_its_snapshot_is_still_shared() {
    let (a, b) = ([0xa; 16], [0xb; 16]);
    let subvols = [(10, a, [0; 16]), (11, b, a)];
    for (created, want) in [((1000, 900_000_000), 1), ((1001, 5), 1), ((1001, 6), 1)] {
        let reg = registry_made(&subvols, created);
        let ext = Extents::new();
        let mut files = (Vec::new(), Vec::new(), CopySets::default());
        let recs = [rec(1, 10), rec(2, 11)];
        let n = share_recs(&recs, &reg, &ext, &mut nodes(), &mut [], &mut files);
        assert_eq!(
            n, want,
            "snapshot made at {created:?}, file changed at (1000, 5)"
        );
    }
}

/// A change since the snapshot (another change time) breaks the
/// sharing, and so does another birth time (the inode number reused by
/// a new inode); two copies in one subvolume (hard links) are not
/// sharing.
#[test]
fn a_changed_inode_or_one_subvolume_is_not_shared() {
    let (a, b) = ([0xa; 16], [0xb; 16]);
    let reg = registry(&[(10, a, [0; 16]), (11, b, a)]);
    let mut changed = rec(2, 11);
    changed.key.ctime_nsec += 1;
    let ext = Extents::new();
    let mut files = (Vec::new(), Vec::new(), CopySets::default());
    assert_eq!(
        share_recs(
            &[rec(1, 10), changed],
            &reg,
            &ext,
            &mut nodes(),
            &mut [],
            &mut files
        ),
        0
    );
    let mut reborn = rec(2, 11);
    reborn.key.btime_sec += 1;
    assert_eq!(
        share_recs(
            &[rec(1, 10), reborn],
            &reg,
            &ext,
            &mut nodes(),
            &mut [],
            &mut files
        ),
        0
    );
    assert_eq!(
        share_recs(
            &[rec(1, 10), rec(2, 10)],
            &reg,
            &ext,
            &mut nodes(),
            &mut [],
            &mut files
        ),
        0
    );
}

/// What inline data costs per copy, with 20 snapshots of 2,000 small
/// files: its record (8 bytes, sorted in place) and the copy
/// record (12 bytes, room made once), a file record and one shared
/// range per inode; and, once per inode, its key in the map the walk looks
/// it up in, then in the table by id. A regression of the memory of
/// scanning snapshots shows here, with no timing in it.
#[test]
fn bytes_per_snapshot_copy_stay_small() {
    let zero = [0u8; 16];
    let origin = [0xa; 16];
    let mut subvols = vec![(10, origin, zero)];
    for s in 1..=20u8 {
        subvols.push((10 + u64::from(s), [s; 16], origin));
    }
    let reg = registry(&subvols);
    let mut chunks: Vec<Vec<Full>> = Vec::new();
    for (s, &(dev, _, _)) in subvols.iter().enumerate() {
        let mut chunk = Vec::new();
        for ino in 0..2000 {
            let mut r = rec(1 + 2 * s + (ino % 2) as usize, dev);
            r.key.ino = 257 + ino;
            chunk.push(r);
            if chunk.len() == 1 << CHUNK_BITS {
                chunks.push(std::mem::take(&mut chunk));
            }
        }
        chunks.push(chunk);
    }
    let (chunks, keys, map_bytes) = interned(&chunks);
    let copies = chunks.iter().flatten().filter(|r| !r.is_mark()).count();
    let devs: Vec<u64> = subvols.iter().map(|s| s.0).collect();
    let ext = Extents::new();
    let mut files = (Vec::new(), Vec::new(), CopySets::default());
    let got = share(
        (chunks, &keys),
        (&devs, None, &[]),
        &reg,
        &ext,
        &mut nodes_n(1 + 2 * subvols.len()),
        &mut [],
        (&mut files.0, (&files.2, &mut files.1)),
    );
    assert_eq!(got.units, 2000);
    assert_eq!(ext.ranges(), 2000, "one shared range per inode");
    assert_eq!(files.0.len(), 2000, "one file per inode");
    let (f, held, sets) = files;
    let held_bytes = held.capacity() * size_of::<Held>();
    let made = crate::records::Copies::new(held, sets);
    assert_eq!(f.len() + made.len(), copies);
    // The records' 8 bytes a copy (the copies made in their room), a
    // 32-byte file record per inode, and the copies by directory: here
    // 2 directories in each of 21 subvolumes, each holding half the
    // inodes: 10.5 (a copy took 12 bytes more as a record of its own,
    // and a record 12 bytes with its bytes and subvolume's index, 16
    // with its subvolume in full).
    let per_copy = (copies * size_of::<InlineRec>()
        + f.capacity() * size_of::<FileRec>()
        + held_bytes.max(made.bytes())) as f64
        / copies as f64;
    assert!(per_copy <= 11.0, "{per_copy:.1} bytes per snapshot copy");
    let per_inode = (map_bytes + keys.keys.capacity() * size_of::<Key>()) as f64 / 2000.0;
    // Its key in the map (56 bytes a bucket, the buckets at least 7/16
    // full) and then in the table (48 bytes): about 150 bytes an inode,
    // whatever the number of its copies.
    assert!(per_inode <= 200.0, "{per_inode:.1} bytes per inode");
}

/// As root, an inode whose trees could not be read is a bound. Counted
/// through its links, its record is at whichever link the walk met first:
/// the bound is the inode's, the same whichever node the record names;
/// a file counted at its node is marked there.
#[test]
fn an_unknown_linked_inode_is_marked_by_inode_not_by_the_link_met_first() {
    let (a, b) = ([0xa; 16], [0xb; 16]);
    let reg = registry(&[(10, a, [0; 16]), (11, b, a)]);
    let held = crate::extents::inline_held::Holders::none();
    let unknown = |nodes_at: [usize; 2], linked: bool| {
        let keys = Keys::default();
        let mut chunk = Vec::new();
        for (node, dev) in nodes_at.into_iter().zip([10u64, 11]) {
            let r = rec(node, dev);
            let d = dev32(dev).unwrap();
            let index = keys.dev(d);
            chunk.push(InlineRec::mark(index));
            let at = (NodeId::new(node), r.key, d, index);
            chunk.push(InlineRec::new(at, r.bytes, linked, None, &keys));
        }
        let table = keys.table();
        let ext = Extents::new();
        let mut files = (Vec::new(), Vec::new(), CopySets::default());
        let mut ns = nodes_n(4);
        let mut got = share(
            (vec![chunk], &table),
            (&[10, 11], Some(&held), &[]),
            &reg,
            &ext,
            &mut ns,
            &mut [],
            (&mut files.0, (&files.2, &mut files.1)),
        );
        got.unknown.sort_unstable();
        got.unknown_inodes.sort_unstable();
        (got.unknown, got.unknown_inodes)
    };
    let inodes = vec![(0, 10, 257), (0, 11, 257)];
    assert_eq!(unknown([1, 2], true), (vec![], inodes.clone()));
    assert_eq!(unknown([3, 1], true), (vec![], inodes));
    let at = |n: [usize; 2]| n.map(NodeId::new).to_vec();
    assert_eq!(unknown([1, 2], false), (at([1, 2]), vec![]));
    assert_eq!(unknown([3, 1], false), (at([1, 3]), vec![]));
}
