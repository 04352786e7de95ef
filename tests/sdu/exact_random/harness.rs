//! The harness's own reference, checked where the property test found it
//! short: built, scanned, deleted and measured as `mod.rs` does, with the
//! bound `mod.rs` takes for what deleting frees.

use std::fs;
use std::process::Command;

use super::{BLK, Fig, inline_extent, usage, verdict};
use crate::util::*;

/// A compressed inline file grown by `fallocate` from offset 0: Btrfs
/// keeps its inline extent at offset 0 and preallocates the rest, so the
/// file is larger than a block yet holds inline data in metadata. Its
/// `st_blocks` (and sdu's figure) count that sector, which deleting frees
/// from metadata, not from Data Used: the harness's bound for what
/// deleting frees takes it as inline bytes. (Found by the property test,
/// seed 2651.)
#[test]
fn btrfs_compressed_inline_file_grown_by_fallocate() {
    let Some(fs) = Mounted::new(FsKind::Btrfs, "compress=zstd:3") else {
        return;
    };
    let mnt = fs.path().to_owned();
    fs::create_dir(mnt.join("d")).unwrap();
    let text = "a line of text\n".repeat(200);
    fs::write(mnt.join("d/f"), &text.as_bytes()[..2559]).unwrap();
    sync_fs(&mnt);
    run(Command::new("fallocate")
        .args(["-o", "0", "-l", "40960"])
        .arg(mnt.join("d/f")))
    .assert_ok();
    fs.remount();
    let f = mnt.join("d/f");
    let inline = inline_extent(&f, &fs::symlink_metadata(&f).unwrap()) as i64;
    let figs = |root: bool| {
        let out = sdu_in(&mnt, root, &["--json", "-s", "d"]);
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        Fig::of(&doc["entries"][0])
    };
    let (root, user) = (figs(true), figs(false));
    let before = usage(&fs);
    fs::remove_file(&f).unwrap();
    let data = (before.0 - usage(&fs).0) as i64;
    let t = format!(
        "d as root {root:?}, without root {user:?}; deleting d/f frees {data} of data, \
         its inline extent {inline}"
    );
    assert_eq!(data, 9 * BLK as i64, "not as built: {t}");
    let freed = (data, data + inline);
    assert_eq!(verdict(true, &root, freed), None, "as root: {t}");
    assert_eq!(verdict(false, &user, freed), None, "without root: {t}");
}
