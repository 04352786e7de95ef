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

/// Runs sdu without `CAP_SYS_ADMIN` (the test runs as root): setpriv drops
/// it from the bounding and inheritable sets, so the exec'd sdu has it in
/// none of its sets.
fn sdu_unprivileged(args: &[&str], path: &Path) -> Output {
    run(Command::new("setpriv")
        .args(["--bounding-set", "-sys_admin", "--inh-caps", "-sys_admin"])
        .arg(sdu_bin())
        .args(args)
        .arg(path))
}

/// The drop is real: under the same setpriv, CAP_SYS_ADMIN (bit 21) is
/// not in the effective set.
fn assert_setpriv_drops_sys_admin() {
    let out = run(Command::new("setpriv")
        .args(["--bounding-set", "-sys_admin", "--inh-caps", "-sys_admin"])
        .args(["grep", "CapEff", "/proc/self/status"]));
    let hex = out
        .stdout_str()
        .split_whitespace()
        .nth(1)
        .unwrap_or("")
        .to_string();
    let eff = u64::from_str_radix(&hex, 16).unwrap_or_else(|_| panic!("{out:?}"));
    assert_eq!(eff & (1 << 21), 0, "CAP_SYS_ADMIN still effective: {out:?}");
}

/// A subvolume with old files, a reflink, a read-only snapshot (outside
/// the scans below), then some files rewritten and added in the origin.
fn origin_and_snapshot(d: &Path) {
    btrfs(&["subvolume", "create"], &d.join("vol"));
    for i in 0..20 {
        write_file(&d.join(format!("vol/f{i}")), 40_000 + i * 4096);
    }
    run(Command::new("cp")
        .args(["--reflink=always"])
        .arg(d.join("vol/f0"))
        .arg(d.join("vol/f0c")))
    .assert_ok();
    sync_fs(d);
    run(Command::new("btrfs")
        .args(["subvolume", "snapshot", "-r"])
        .arg(d.join("vol"))
        .arg(d.join("snap")))
    .assert_ok();
    for i in 0..5 {
        write_file(&d.join(format!("vol/f{i}")), 50_000);
    }
    write_file(&d.join("vol/new"), 70_000);
    sync_fs(d);
}

/// A snapshot outside the scan: scanning the origin alone (or the snapshot
/// alone), the tree search says what FIEMAP says: the unchanged files
/// share with the snapshot, so they are not reclaimable; the rewritten and
/// new ones are. Without CAP_SYS_ADMIN the same figures, by FIEMAP.
#[test]
fn snapshot_outside_the_scan() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    origin_and_snapshot(d);
    assert_setpriv_drops_sys_admin();
    for sub in ["vol", "snap"] {
        let p = d.join(sub);
        assert_search_matches_fiemap(&p);
        let r = sdu_json(&args!["-a", &p]);
        let file = |n: &str| {
            let want = p.join(n);
            r.entries
                .iter()
                .find(|e| Path::new(&e.path) == want)
                .unwrap_or_else(|| panic!("no {n}"))
                .clone()
        };
        // f10 is unchanged: shared with the other side, nothing to free.
        let f10 = file("f10");
        assert_eq!((f10.shared, f10.reclaimable), (f10.total, 0), "{f10:?}");
        if sub == "vol" {
            let new = file("new");
            assert_eq!((new.shared, new.reclaimable), (0, new.total), "{new:?}");
            let f1 = file("f1");
            assert_eq!(
                f1.reclaimable, f1.total,
                "rewritten after the snapshot: {f1:?}"
            );
        }
        let out = sdu_unprivileged(&["--json", "-a", "--stats"], &p);
        assert_eq!(out.code, Some(0), "{out:?}");
        assert_eq!(
            json::parse(&out.stdout),
            r,
            "without CAP_SYS_ADMIN (FIEMAP) the figures differ"
        );
        assert_eq!(
            stat_value(&out.stderr, "files read by tree search (Btrfs, root)"),
            0,
            "{out:?}"
        );
    }
}
