//! Btrfs compression: what sdu says of compressed extents when it reads
//! them through FIEMAP (which gives their logical length only).

use std::path::Path;
use std::process::Command;

use crate::args;
use crate::json;
use crate::util::*;

fn btrfs(args: &[&str], path: &Path) {
    run(Command::new("btrfs").args(args).arg(path)).assert_ok();
}

/// `n` bytes of text that zstd compresses well, different for each `seed`.
pub fn text(n: usize, seed: u32) -> Vec<u8> {
    let words = [
        &b"extent "[..],
        b"shared ",
        b"snapshot ",
        b"reflink ",
        b"sdu ",
    ];
    let mut v = Vec::with_capacity(n + 16);
    let mut i = seed;
    while v.len() < n {
        i = i.wrapping_mul(1_103_515_245).wrapping_add(12345);
        v.extend_from_slice(words[(i >> 16) as usize % words.len()]);
    }
    v.truncate(n);
    v
}

/// The note sdu prints once when compressed extents were counted at
/// their logical length.
pub fn compressed_note(files: u64, bytes: u64) -> String {
    format!(
        "sdu: {bytes} bytes of compressed data in {files} file(s) are counted at their \
         uncompressed size: FIEMAP cannot tell their size on disk\n"
    )
}

/// A directory with `compression zstd`: two text files (compressed), a
/// reflink of one, and random data (which Btrfs stores uncompressed).
fn compressed_tree(d: &Path) -> u64 {
    let z = d.join("z");
    std::fs::create_dir(&z).unwrap();
    run(Command::new("btrfs")
        .args(["property", "set"])
        .arg(&z)
        .args(["compression", "zstd"]))
    .assert_ok();
    std::fs::write(z.join("a"), text(1 << 20, 1)).unwrap();
    std::fs::write(z.join("b"), text(300_000, 2)).unwrap();
    write_file(&z.join("random"), 256 << 10);
    sync_fs(d);
    run(Command::new("cp")
        .args(["--reflink=always"])
        .arg(z.join("a"))
        .arg(z.join("a2")))
    .assert_ok();
    sync_fs(d);
    // Every extent of a, a2 and b is compressed: their logical lengths are
    // their sizes rounded up to the block.
    let up = |n: u64| n.div_ceil(4096) * 4096;
    2 * up(1 << 20) + up(300_000)
}

/// Without root's tree search, compressed extents come from FIEMAP at
/// their logical length: sdu says so once on stderr, with their bytes, and
/// the JSON document and `--stats` carry the count.
#[test]
fn compressed_bytes_counted_uncompressed_are_reported() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    let want = compressed_tree(d);
    btrfs(&["filesystem", "sync"], d);
    let out = run(Command::new(sdu_bin()).args(["--json", "-s"]).arg(d));
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stderr, compressed_note(3, want), "{out:?}");
    let r = json::parse(&out.stdout);
    assert_eq!(r.compressed_logical, want);

    let out = run(Command::new(sdu_bin()).args(["-s", "--stats"]).arg(d));
    assert_eq!(out.code, Some(0), "{out:?}");
    let line = format!("  compressed, counted uncompressed       3 ({want} bytes)\n");
    assert!(
        out.stderr.contains(&line),
        "{line:?} not in\n{}",
        out.stderr
    );
    assert_eq!(out.stderr.matches("bytes of compressed data").count(), 1);

    // Nothing compressed: no note, no key.
    let plain = d.join("plain");
    std::fs::create_dir(&plain).unwrap();
    write_file(&plain.join("f"), 64 << 10);
    sync_fs(d);
    let r = sdu_json(&args!["-s", &plain]);
    assert_eq!(r.compressed_logical, 0);
}
