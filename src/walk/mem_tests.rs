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
