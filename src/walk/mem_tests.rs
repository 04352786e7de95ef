//! What the walk leaves per entry for `sdu -i`, measured on a real walk:
//! every node at its id with its time, and its identity.

use super::{WalkOptions, walk};
use crate::figures::TimeField;
use crate::messages::Messages;

/// 2,000 files in 20 directories, walked as the browser walks (every
/// entry a node, its modification time, its identity): 21 bytes an entry
/// beside the names (parent 4, position 2, kind 1, apparent size 4 and
/// shape 1, name length 1.25, seconds 4, inode number 4), 4 more for
/// nanoseconds (files written now have them), 2 for the identities' index
/// (this walk's one chunk holds the top node, which has none), and a
/// directory's blocks and files. A regression of the browser's memory
/// shows here, with no timing in it.
#[test]
fn the_walks_store_stays_small_per_entry() {
    let t = tempfile::tempdir().unwrap();
    for d in 0..20 {
        let dir = t.path().join(format!("directory-{d:03}"));
        std::fs::create_dir(&dir).unwrap();
        for f in 0..100 {
            std::fs::File::create(dir.join(format!("file-{f:04}.name"))).unwrap();
        }
    }
    let opts = WalkOptions {
        roots: vec![t.path().as_os_str().as_encoded_bytes().to_vec()],
        threads: 2,
        all: true,
        time: Some(TimeField::Modification),
        identities: true,
        ..WalkOptions::default()
    };
    let (w, _) = walk(&opts, false, &Messages::new(Box::new(std::io::sink()))).unwrap();
    let n = w.nodes.len();
    assert_eq!(n, 1 + 1 + 20 + 2000);
    let names: usize = w.nodes.ids().map(|id| w.nodes.name(id).len()).sum();
    let idents = w.idents.as_ref().expect("kept");
    assert!(w.nodes.ids().skip(1).all(|id| idents.get(id).is_some()));
    let per = (w.nodes.heap_bytes() + idents.heap_bytes() - names) as f64 / n as f64;
    assert!(per < 28.0, "{per:.1} bytes an entry beside the names");
}

/// A chain of 3,000 directories: the cycle check climbs through none of
/// them (it climbed 4.5 million, each directory through all its
/// ancestors); a symlink followed (`-L`) back to the root is still found,
/// through the chain once.
#[test]
fn the_cycle_check_climbs_only_for_a_directory_alive_twice() {
    use rustix::fs::{Mode, OFlags};
    const LEVELS: u64 = 3_000;
    let t = tempfile::tempdir().unwrap();
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut fd = rustix::fs::open(t.path(), flags, Mode::empty()).unwrap();
    for _ in 0..LEVELS {
        rustix::fs::mkdirat(&fd, "d", Mode::from_raw_mode(0o755)).unwrap();
        fd = rustix::fs::openat(&fd, "d", flags, Mode::empty()).unwrap();
    }
    let root = t.path().as_os_str().as_encoded_bytes().to_vec();
    let opts = WalkOptions {
        roots: vec![root.clone()],
        threads: 2,
        ..WalkOptions::default()
    };
    let msgs = Messages::new(Box::new(std::io::sink()));
    let (w, _) = walk(&opts, false, &msgs).unwrap();
    let c = w.counters;
    assert_eq!(w.nodes.len() as u64, 1 + 1 + LEVELS);
    assert_eq!(c.ancestors_climbed, 0);
    rustix::fs::symlinkat(&*root, &fd, "up").unwrap();
    let opts = WalkOptions {
        follow_links: true,
        ..opts
    };
    let c = walk(&opts, false, &msgs).unwrap().0.counters;
    assert!(
        (1..=LEVELS + 1).contains(&c.ancestors_climbed),
        "{} climbed",
        c.ancestors_climbed
    );
}
