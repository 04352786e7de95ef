use super::*;

/// A whole root item of subvolume `id`, UUID `[uuid; 16]` and parent
/// `[parent; 16]` (0: none), made in transaction `otransid` and changed
/// last in `generation`, alive or not, snapshotted in `last_snapshot`.
struct RootRow {
    id: u64,
    uuid: u8,
    parent: u8,
    otransid: u64,
    generation: u64,
    alive: bool,
    last_snapshot: u64,
}

fn item(id: u64, uuid: u8, parent: u8) -> RootRow {
    RootRow {
        id,
        uuid,
        parent,
        otransid: 10,
        generation: 20,
        alive: true,
        last_snapshot: 0,
    }
}

impl RootRow {
    fn bytes(&self) -> Vec<u8> {
        let mut d = vec![0u8; 439];
        let put = |d: &mut Vec<u8>, at: usize, v: &[u8]| d[at..at + v.len()].copy_from_slice(v);
        put(&mut d, ROOT_GENERATION, &self.generation.to_le_bytes());
        put(&mut d, ROOT_BYTENR, &(self.id << 12).to_le_bytes());
        put(
            &mut d,
            ROOT_LAST_SNAPSHOT,
            &self.last_snapshot.to_le_bytes(),
        );
        put(&mut d, ROOT_REFS, &u32::from(self.alive).to_le_bytes());
        put(&mut d, ROOT_GENERATION_V2, &self.generation.to_le_bytes());
        put(&mut d, ROOT_UUID, &[self.uuid; 16]);
        put(&mut d, ROOT_PARENT_UUID, &[self.parent; 16]);
        put(&mut d, ROOT_OTRANSID, &self.otransid.to_le_bytes());
        put(&mut d, ROOT_OTIME, &(self.id as i64).to_le_bytes());
        put(&mut d, ROOT_OTIME + 8, &7u32.to_le_bytes());
        d
    }

    fn sub(&self) -> Subvolume {
        Subvolume::parse(self.id, &self.bytes()).unwrap()
    }
}

fn model(items: &[RootRow]) -> Subvolumes {
    Subvolumes::of(items.iter().map(RootRow::sub).collect(), Vec::new())
}

/// The members of `id`'s family, by id.
fn members(m: &Subvolumes, id: u64) -> Vec<u64> {
    let f = m.family(id).unwrap();
    (m.all().iter())
        .filter(|s| m.family(s.id) == Some(f))
        .map(|s| s.id)
        .collect()
}

#[test]
fn a_root_item_parses_whole_or_legacy() {
    let mut i = item(257, 2, 1);
    i.last_snapshot = 15;
    let s = i.sub();
    assert_eq!(
        (s.id, s.refs, s.bytenr, s.last_snapshot, s.generation),
        (257, 1, 257 << 12, 15, 20)
    );
    let v = s.v2.unwrap();
    assert_eq!((v.uuid, v.parent_uuid), ([2; 16], [1; 16]));
    assert_eq!((v.generation_v2, v.otransid, v.created), (20, 10, (257, 7)));
    // The legacy layout ends at `generation_v2`: no UUIDs, no families.
    let legacy = Subvolume::parse(257, &i.bytes()[..239]).unwrap();
    assert_eq!((legacy.refs, legacy.v2), (1, None));
    assert!(Subvolume::parse(257, &i.bytes()[..ROOT_REFS]).is_none());
    let m = Subvolumes::of(vec![legacy, item(256, 1, 0).sub()], Vec::new());
    assert!(!m.has_families() && m.family(256).is_none() && m.any_family());
}

#[test]
fn snapshots_join_their_origin_and_each_other() {
    // 256 -> 257, 256 -> 258, 258 -> 260 (a snapshot of a snapshot); 259
    // alone.
    let m = model(&[
        item(256, 1, 0),
        item(257, 2, 1),
        item(258, 3, 1),
        item(259, 4, 0),
        item(260, 6, 3),
    ]);
    assert_eq!(members(&m, 257), [256, 257, 258, 260]);
    assert_eq!(members(&m, 259), [259]);
    // The family is named by its smallest member, whatever the order.
    assert_eq!(m.family(260), Some(256));
    assert!(m.any_family());
    let alone = model(&[item(256, 1, 0), item(259, 4, 0)]);
    assert!(!alone.any_family());
    assert_eq!(alone.family(300), None);
}

#[test]
fn two_snapshots_of_a_deleted_origin_stay_one_family() {
    // 256 was deleted and cleaned: its snapshots 257 and 258 still share
    // its blocks. 259 was never snapshotted, 261 is a snapshot of 259.
    let m = model(&[
        item(257, 2, 1),
        item(258, 3, 1),
        item(259, 4, 0),
        item(261, 5, 4),
    ]);
    assert_eq!(members(&m, 257), [257, 258]);
    assert_eq!(members(&m, 259), [259, 261]);
}

#[test]
fn a_deleted_intermediate_snapshot_keeps_the_family() {
    // R (256) -> N (257) -> M (258); 259 never snapshotted.
    let mut r = item(256, 1, 0);
    r.last_snapshot = 11;
    let mut n = item(257, 2, 1);
    n.last_snapshot = 12;
    let mut mm = item(258, 3, 2);
    mm.last_snapshot = 12;
    let other = item(259, 4, 0);
    // N deleted, its root item still there: linked through it.
    n.alive = false;
    let m = model(&[r, n, mm, other]);
    assert_eq!(members(&m, 258), [256, 257, 258]);
    assert!(!m.alive(257) && m.alive(258));
    // N dropped by the cleaner: M is an orphan, in one family with every
    // subvolume ever snapshotted, and not with 259.
    let mut r = item(256, 1, 0);
    r.last_snapshot = 11;
    let mut mm = item(258, 3, 2);
    mm.last_snapshot = 12;
    let mut snapped = item(262, 7, 0);
    snapped.last_snapshot = 5;
    let m = model(&[r, mm, item(259, 4, 0), snapped, item(263, 8, 9)]);
    assert_eq!(members(&m, 258), [256, 258, 262, 263]);
    assert_eq!(members(&m, 259), [259]);
}

#[test]
fn families_of_many_subvolumes_are_linked_in_one_pass() {
    // 10,000 snapshots of one origin, and as many subvolumes alone: one
    // family of 10,001 and 10,000 of one (a pairwise build compares 10^8
    // pairs here).
    let sub = |id: u64, tag: u8, n: u64, parent: Uuid| {
        let mut r = item(id, 0, 0).sub();
        let v = r.v2.as_mut().unwrap();
        v.uuid[..8].copy_from_slice(&n.to_le_bytes());
        v.uuid[15] = tag;
        v.parent_uuid = parent;
        r
    };
    let mut roots = vec![item(256, 1, 0).sub()];
    roots.extend((0..10_000).map(|i| sub(1000 + i, 0xaa, i, [1; 16])));
    roots.extend((0..10_000).map(|i| sub(100_000 + i, 0xbb, i, NO_UUID)));
    let m = Subvolumes::of(roots, Vec::new());
    assert_eq!(members(&m, 5000).len(), 10_001);
    assert_eq!(m.family(9999), Some(256));
    assert_eq!(members(&m, 100_017), [100_017]);
}

#[test]
fn kept_until_is_the_newest_unchanged_snapshot_alive() {
    // 256's snapshots: 257 unchanged (made and last changed in 12), 258
    // changed since (made in 14, changed in 15), 259 unchanged but deleted
    // (16), 260 unchanged (13); 261 is a snapshot of 257.
    let at = |id, uuid, parent, otransid, generation, alive| RootRow {
        otransid,
        generation,
        alive,
        ..item(id, uuid, parent)
    };
    let m = model(&[
        at(256, 1, 0, 5, 30, true),
        at(257, 2, 1, 12, 12, true),
        at(258, 3, 1, 14, 15, true),
        at(259, 4, 1, 16, 16, false),
        at(260, 5, 1, 13, 13, true),
        at(261, 6, 2, 17, 17, true),
    ]);
    assert_eq!(m.kept_until(256), (13, 260));
    assert_eq!(m.kept_until(257), (17, 261));
    assert_eq!(m.kept_until(258), (0, 0));
    assert_eq!(m.kept_until(999), (0, 0));
}

#[test]
fn a_lineage_is_an_origin_and_its_snapshots_alive() {
    // 256 -> 257 (otransid 12, unchanged), 256 -> 258 (otransid 11,
    // changed since), 256 -> 259 (otransid 9, deleted); 260 -> 261 with
    // 260 deleted; 262 alone.
    let at = |id, uuid, parent, otransid, generation, alive| RootRow {
        otransid,
        generation,
        alive,
        ..item(id, uuid, parent)
    };
    let m = model(&[
        at(256, 1, 0, 5, 30, true),
        at(257, 2, 1, 12, 12, true),
        at(258, 3, 1, 11, 20, true),
        at(259, 4, 1, 9, 9, false),
        at(260, 5, 0, 3, 3, false),
        at(261, 6, 5, 13, 13, true),
        at(262, 7, 0, 4, 4, true),
    ]);
    let line = |origin: u8, since, base| {
        Some(Lineage {
            origin: [origin; 16],
            since,
            base,
        })
    };
    // The origin and each snapshot: the oldest snapshot alive is 258, and
    // it changed since.
    assert_eq!(m.lineage(256), line(1, 11, false));
    assert_eq!(m.lineage(257), line(1, 11, false));
    assert_eq!(m.lineage(258), line(1, 11, false));
    // A snapshot of a deleted origin: its lineage is the origin's UUID,
    // and it is its oldest member, unchanged.
    assert_eq!(m.lineage(261), line(5, 13, true));
    assert_eq!(m.lineage(262), None);
    assert!(m.two_of_a_lineage(&[256, 258]));
    assert!(m.two_of_a_lineage(&[257, 258, 262]));
    // One member alive, however often named; a deleted one is none.
    assert!(!m.two_of_a_lineage(&[257, 257, 262]));
    assert!(!m.two_of_a_lineage(&[257, 259]));
    assert!(!m.two_of_a_lineage(&[256, 261, 262]));
}

#[test]
fn nested_subvolumes_are_found_at_any_depth() {
    // 5 holds 256 and 257; 256 holds 258, which holds 259.
    let r = |parent, child| Nested {
        parent,
        child,
        dirid: 256,
        name: format!("s{child}").into_bytes(),
    };
    let m = Subvolumes::of(
        vec![item(5, 9, 0).sub()],
        vec![r(5, 256), r(5, 257), r(256, 258), r(258, 259)],
    );
    let mut got = m.nested_under(5, vec![256]);
    got.sort_unstable();
    assert_eq!(got, [256, 258, 259]);
}

#[test]
fn uuids_join_as_far_as_they_are_known() {
    let mut u = Uuids::default();
    u.union([3; 16], [1; 16]);
    u.union([2; 16], [1; 16]);
    u.union([4; 16], [4; 16]);
    assert_eq!(u.find([3; 16]), u.find([2; 16]));
    assert_eq!(u.find([2; 16]), [1; 16]);
    assert_ne!(u.find([4; 16]), u.find([1; 16]));
}

/// A: 256 (uuid 1); B: 257 (2), a snapshot of A, deleted but its root item
/// still there; C: 258 (3), a snapshot of B; D: 259 (4), a snapshot of a
/// subvolume (9) whose root item is gone.
#[test]
fn the_nearest_alive_ancestor_passes_deleted_subvolumes_while_their_items_last() {
    let mut b = item(257, 2, 1);
    b.alive = false;
    let m = model(&[item(256, 1, 0), b, item(258, 3, 2), item(259, 4, 9)]);
    assert_eq!(m.alive_parent([2; 16]), Ok([1; 16]));
    assert_eq!(m.alive_parent([1; 16]), Ok([1; 16]));
    assert_eq!(m.alive_parent([0; 16]), Ok([0; 16]));
    assert_eq!(m.alive_parent([9; 16]), Err([9; 16]));
    assert_eq!(m.first_ancestor(258), Some([1; 16]));
    assert_eq!(m.first_ancestor(256), Some([1; 16]));
    assert_eq!(m.first_ancestor(259), None);
    assert_eq!(m.first_ancestor(300), None);
    assert_eq!(m.with_uuid([2; 16]).map(|s| s.id), Some(257));
    assert!(m.with_uuid([0; 16]).is_none());
}

/// `ROOT_REF`s: 256 in the top level, 257 in 256, 258 in 257; 259 linked
/// to nothing. What a subvolume holds, at any depth.
#[test]
fn nested_in_follows_root_refs_down() {
    let nested = |parent, child| Nested {
        parent,
        child,
        dirid: 256,
        name: b"x".to_vec(),
    };
    let m = Subvolumes::of(
        [256, 257, 258, 259]
            .iter()
            .map(|&id| item(id, id as u8, 0).sub())
            .collect(),
        vec![nested(5, 256), nested(256, 257), nested(257, 258)],
    );
    let mut under = m.nested_in(256);
    under.sort_unstable();
    assert_eq!(under, [256, 257, 258]);
    assert_eq!(m.nested_in(259), [259]);
}
