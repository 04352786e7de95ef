//! Btrfs: compressed extents, through FIEMAP (their logical length only,
//! said once on stderr) and as root through the tree search (their size
//! on disk, checked by deleting and measuring Data Used); extents
//! referenced in part (a VM image rewritten in place); a snapshot
//! outside the scan; sdu without CAP_SYS_ADMIN.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use crate::args;
use crate::json;
use crate::util::*;

/// A new subvolume at `path`.
pub(crate) fn subvolume(path: &Path) {
    btrfs(&["subvolume", "create"], path);
}

/// A read-only snapshot of subvolume `src` as `dst`.
pub(crate) fn ro_snapshot(src: &Path, dst: &Path) {
    run(Command::new("btrfs")
        .args(["subvolume", "snapshot", "-r"])
        .arg(src)
        .arg(dst))
    .assert_ok();
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
         uncompressed size: FIEMAP cannot tell their size on disk (as root, sdu reads it)\n"
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

/// Without CAP_SYS_ADMIN, compressed extents come from FIEMAP at their
/// logical length: sdu says so once on stderr, with their bytes, and the
/// JSON document and `--stats` carry the count.
#[test]
fn compressed_bytes_counted_uncompressed_are_reported() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    let want = compressed_tree(d);
    btrfs(&["filesystem", "sync"], d);
    assert_setpriv_drops_sys_admin();
    let out = sdu_unprivileged(&["--json", "-s"], d);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stderr, compressed_note(3, want), "{out:?}");
    let r = json::parse(&out.stdout);
    assert_eq!(r.compressed_logical, want);
    // As root with --fiemap, the same.
    let fm = run(Command::new(sdu_bin())
        .args(["--json", "-s", "--fiemap"])
        .arg(d));
    assert_eq!((fm.stdout, fm.stderr), (out.stdout, out.stderr));

    let out = sdu_unprivileged(&["-s", "--stats"], d);
    assert_eq!(out.code, Some(0), "{out:?}");
    let line = format!("3 ({want} bytes)");
    assert!(
        out.stderr.lines().any(|l| l
            .strip_prefix("  compressed, counted uncompressed ")
            .is_some_and(|v| v.trim_start() == line)),
        "{line:?} not in\n{}",
        out.stderr
    );
    assert_eq!(out.stderr.matches("bytes of compressed data").count(), 1);

    // Nothing compressed: no note, no key.
    let plain = d.join("plain");
    std::fs::create_dir(&plain).unwrap();
    write_file(&plain.join("f"), 64 << 10);
    sync_fs(d);
    let out = sdu_unprivileged(&["--json", "-s"], &plain);
    assert_eq!((out.code, out.stderr.as_str()), (Some(0), ""), "{out:?}");
    assert_eq!(json::parse(&out.stdout).compressed_logical, 0);
}

/// `sdu --json -s DIR` as root, which must say nothing (no compressed
/// bytes are counted uncompressed), and its one entry.
fn root_figures(dir: &Path) -> json::Entry {
    let out = run(Command::new(sdu_bin()).args(["--json", "-s"]).arg(dir));
    assert_eq!((out.code, out.stderr.as_str()), (Some(0), ""), "{out:?}");
    let r = json::parse(&out.stdout);
    assert_eq!(r.compressed_logical, 0);
    r.entries.last().unwrap().clone()
}

/// As root, compressed extents count at their size on disk: deleting a
/// directory frees its reclaimable, to the byte (Data Used of `btrfs
/// filesystem usage -b`). z holds compressed files, a reflink of one of
/// them and random data; w a reflink of z/b. Deleting w frees nothing (z/b
/// holds the extents); then deleting z frees everything in it. Total stays
/// du's figure, larger than what z takes on disk.
#[test]
fn compressed_as_root_reclaimable_is_what_deleting_frees() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    compressed_tree(d);
    let w = d.join("w");
    std::fs::create_dir(&w).unwrap();
    run(Command::new("cp")
        .args(["--reflink=always"])
        .arg(d.join("z/b"))
        .arg(w.join("b")))
    .assert_ok();
    sync_fs(d);
    let z = d.join("z");
    let fw = root_figures(&w);
    assert_eq!(fw.reclaimable, 0, "{fw:?}");
    assert!(
        fw.shared > 0 && fw.shared < fw.total,
        "w/b at its size on disk: {fw:?}"
    );
    let freed = data_freed_by(d, || std::fs::remove_dir_all(&w).unwrap());
    assert_eq!(freed, fw.reclaimable, "deleting w");

    let fz = root_figures(&z);
    assert_eq!(
        fz.total,
        Du::new(&["-B1"]).bytes(&[], z.as_os_str()),
        "{fz:?}"
    );
    assert!(
        fz.exclusive + fz.shared < fz.total / 2,
        "compressed text takes far less than its total on disk: {fz:?}"
    );
    let freed = data_freed_by(d, || std::fs::remove_dir_all(&z).unwrap());
    println!(
        "w: total {} exclusive {} shared {} reclaimable {}, freed 0\n\
         z: total {} exclusive {} shared {} reclaimable {}, freed {freed}",
        fw.total,
        fw.exclusive,
        fw.shared,
        fw.reclaimable,
        fz.total,
        fz.exclusive,
        fz.shared,
        fz.reclaimable
    );
    assert_eq!(freed, fz.reclaimable, "deleting z: {fz:?}");
    assert_eq!(freed, fz.exclusive + fz.shared, "{fz:?}");
}

/// Runs sdu without `CAP_SYS_ADMIN` (the test runs as root): setpriv drops
/// it from the bounding and inheritable sets, so the exec'd sdu has it in
/// none of its sets.
pub(crate) fn sdu_unprivileged(args: &[&str], path: &Path) -> Output {
    run(sdu_command(false).args(args).arg(path))
}

/// The drop is real: under the same setpriv, CAP_SYS_ADMIN (bit 21) is
/// not in the effective set.
pub(crate) fn assert_setpriv_drops_sys_admin() {
    let out = run(Command::new("setpriv").args(WITHOUT_SYS_ADMIN).args([
        "grep",
        "CapEff",
        "/proc/self/status",
    ]));
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
    ro_snapshot(&d.join("vol"), &d.join("snap"));
    for i in 0..5 {
        write_file(&d.join(format!("vol/f{i}")), 50_000);
    }
    write_file(&d.join("vol/new"), 70_000);
    sync_fs(d);
}

/// A snapshot outside the scan: scanning the origin alone (or the snapshot
/// alone), the tree search says what FIEMAP says: the unchanged files
/// share with the snapshot, so they are not reclaimable; the rewritten and
/// new ones are, exactly (root asks Btrfs who else holds what is shared).
/// Without CAP_SYS_ADMIN the same figures, by FIEMAP, but Reclaimable where
/// data is held outside the scan: a bound, above root's.
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
            // As root the search sees every reference of its extents: only
            // the file holds them, and deleting it frees them.
            assert!(new.reclaimable_exact, "{new:?}");
            let f1 = file("f1");
            assert_eq!(
                f1.reclaimable, f1.total,
                "rewritten after the snapshot: {f1:?}"
            );
        }
        let out = sdu_unprivileged(&["--json", "-a", "--stats"], &p);
        assert_eq!(out.code, Some(0), "{out:?}");
        let nobody = json::parse(&out.stdout);
        // Without CAP_SYS_ADMIN (FIEMAP) the same figures, but Reclaimable
        // where data is held outside the scan: root asks Btrfs who else
        // holds it, FIEMAP cannot and counts it, a bound.
        assert_bound_above_root(&r, &nobody, "without CAP_SYS_ADMIN");
        let dir = |r: &json::Report| {
            r.entries
                .iter()
                .find(|e| e.path == p.as_os_str())
                .expect("the root entry")
                .clone()
        };
        let (root_dir, nobody_dir) = (dir(&r), dir(&nobody));
        assert!(root_dir.reclaimable_exact, "{root_dir:?}");
        // snap's f0 and f0c share one extent, which vol's f0c still holds:
        // root keeps it out of snap's Reclaimable, FIEMAP counts it. In vol,
        // f0 was rewritten: what the other side holds is shared with it
        // file by file, which FIEMAP sees too.
        let held_outside = if sub == "snap" { file("f0").total } else { 0 };
        assert_eq!(
            nobody_dir.reclaimable,
            root_dir.reclaimable + held_outside,
            "{nobody_dir:?}\n{root_dir:?}"
        );
        // FIEMAP gives the part of an extent a file references, and `p` is
        // not the whole filesystem (nothing proves no extent is referenced
        // in part): a Reclaimable it counts is a bound, at least.
        for e in nobody.entries.iter().filter(|e| e.reclaimable > 0) {
            assert!(!e.reclaimable_exact, "without CAP_SYS_ADMIN: {e:?}");
        }
        assert_eq!(
            stat_value(&out.stderr, "files read by tree search (Btrfs, root)"),
            0,
            "{out:?}"
        );
    }
}

/// As root, a compressed snapshot: a subvolume of compressed text files,
/// a read-only snapshot, then one file rewritten and one appended to in
/// the origin. The whole filesystem is scanned; deleting the snapshot
/// frees its reclaimable, to the byte, at the compressed size on disk.
#[test]
fn compressed_snapshot_as_root_reclaimable_is_what_deleting_frees() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    let vol = d.join("vol");
    btrfs(&["subvolume", "create"], &vol);
    run(Command::new("btrfs")
        .args(["property", "set"])
        .arg(&vol)
        .args(["compression", "zstd"]))
    .assert_ok();
    for (i, n) in [
        (1u32, 1usize << 20),
        (2, 300_000),
        (3, 600_000),
        (4, 50_000),
    ] {
        std::fs::write(vol.join(format!("t{i}")), text(n, i)).unwrap();
    }
    sync_fs(d);
    let snap = d.join("snap");
    ro_snapshot(&vol, &snap);
    std::fs::write(vol.join("t1"), text(1 << 20, 9)).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(vol.join("t3"))
        .unwrap();
    std::io::Write::write_all(&mut f, &text(200_000, 7)).unwrap();
    drop(f);
    sync_fs(d);
    assert_search_matches_fiemap(d);
    let out = run(Command::new(sdu_bin()).args(["--json", "--stats"]).arg(d));
    assert_eq!(out.code, Some(0), "{out:?}");
    // Files the tree search cannot decide (the snapshot's copy of t1,
    // whose one ref is the snapshot's own, in a leaf as old as the
    // snapshot) take FIEMAP's flags and still count at their size on disk.
    assert_eq!(
        out.stderr.matches("bytes of compressed data").count(),
        0,
        "{}",
        out.stderr
    );
    println!(
        "undecided: {}",
        stat_value(&out.stderr, "tree search undecided, mapped with FIEMAP")
    );
    let r = json::parse(&out.stdout);
    assert_eq!(r.compressed_logical, 0);
    let s = r
        .entries
        .iter()
        .find(|e| std::path::Path::new(&e.path) == snap)
        .unwrap()
        .clone();
    assert!(s.shared > 0 && s.reclaimable > 0, "{s:?}");
    let freed = freed_by_deleting_subvolume(d, snap.to_str().unwrap()).0;
    println!(
        "snap: total {} exclusive {} shared {} reclaimable {}, freed {freed}",
        s.total, s.exclusive, s.shared, s.reclaimable
    );
    assert_eq!(freed, s.reclaimable, "{s:?}");
}

/// A deduplication after a snapshot changes one copy's extents without
/// changing its change time, so without root the copies unchanged by
/// `statx` are credited alike (the documented limit, printed here, not
/// asserted). With `--map-each-copy`, and as root (the tree search reads
/// each copy), the snapshot's reclaimable is what deleting it frees, to
/// the byte.
#[test]
fn dedupe_after_a_snapshot_is_seen_with_map_each_copy_and_as_root() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    assert_setpriv_drops_sys_admin();
    let d = fs.path();
    // `s` listed before `vol`, so that the walk tends to map vol/a first.
    std::fs::create_dir(d.join("s")).unwrap();
    btrfs(&["subvolume", "create"], &d.join("vol"));
    write_file(&d.join("vol/a"), 1 << 20);
    run(Command::new("cp")
        .arg("--reflink=never")
        .arg(d.join("vol/a"))
        .arg(d.join("vol/b")))
    .assert_ok();
    sync_fs(d);
    ro_snapshot(&d.join("vol"), &d.join("s/snap"));
    let ctime = |p: &str| {
        let m = std::fs::metadata(d.join(p)).unwrap();
        (
            std::os::unix::fs::MetadataExt::ctime(&m),
            std::os::unix::fs::MetadataExt::ctime_nsec(&m),
        )
    };
    let before = ctime("vol/a");
    // vol/a now shares vol/b's extent; snap/a alone keeps the old one.
    let src = d.join("vol/b");
    run(Command::new("xfs_io")
        .arg("-c")
        .arg(format!("dedupe {} 0 0 {}", src.display(), 1 << 20))
        .arg(d.join("vol/a")))
    .assert_ok();
    sync_fs(d);
    assert_eq!(ctime("vol/a"), before, "dedupe changed the change time");
    let snap_reclaimable = |out: Output| -> u64 {
        assert_eq!(out.code, Some(0), "{out:?}");
        // -d 2: s/snap
        json::parse(&out.stdout)
            .entries
            .iter()
            .find(|e| e.path.to_string_lossy().ends_with("/snap"))
            .unwrap_or_else(|| panic!("no snap: {out:?}"))
            .reclaimable
    };
    let each = snap_reclaimable(sdu_unprivileged(
        &["--json", "-d", "2", "--map-each-copy"],
        d,
    ));
    // Which copy is mapped first decides what the default says here.
    let mut default: Vec<u64> = ["-j1", "-j2", "-j4"]
        .iter()
        .flat_map(|j| [*j; 3])
        .map(|j| snap_reclaimable(sdu_unprivileged(&["--json", "-d", "2", j], d)))
        .collect();
    default.sort_unstable();
    default.dedup();
    let root = snap_reclaimable(run(Command::new(sdu_bin())
        .args(["--json", "-d", "2"])
        .arg(d)));
    let _ = writeln!(
        std::io::stderr(),
        "snap reclaimable: --map-each-copy {each}, root {root}, default without root {default:?}"
    );
    let freed = freed_by_deleting_subvolume(d, "s/snap").0;
    assert_eq!(freed, 1 << 20, "deleting snap frees its old copy of a");
    assert_eq!(each, freed, "--map-each-copy");
    assert_eq!(root, freed, "as root");
}

/// `compsize -b FILE`: the TOTAL line's Disk Usage and Referenced.
fn compsize(file: &Path) -> (u64, u64) {
    let out = run(Command::new("compsize").arg("-b").arg(file));
    out.assert_ok();
    let text = out.stdout_str().to_string();
    let f: Vec<&str> = text
        .lines()
        .find(|l| l.starts_with("TOTAL"))
        .unwrap_or_else(|| panic!("no TOTAL line:\n{text}"))
        .split_whitespace()
        .collect();
    let n = |i: usize| f[i].parse().unwrap_or_else(|_| panic!("{text}"));
    (n(2), n(4))
}

/// A VM image or database file: 8 MiB written in one extent, then 4 MiB
/// at offset 2 MiB and 100 4 KiB blocks (at offsets from a fixed seed)
/// rewritten in place with `dd conv=notrunc`. Btrfs writes each rewrite
/// elsewhere and keeps the old extents whole while any part of them is
/// referenced. As root, `exclusive` and `reclaimable` are what deleting it
/// frees (the drop in Data Used), to the byte, and compsize's Disk Usage;
/// `total` stays du's, the bytes referenced. Without root, FIEMAP shows
/// only the referenced ranges: `reclaimable` is the referenced bytes (the
/// documented limit, docs/limits.md).
#[test]
fn vm_image_rewritten_in_place_as_root_is_what_deleting_frees() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    assert_setpriv_drops_sys_admin();
    let d = fs.path();
    let vm = d.join("vm");
    std::fs::create_dir(&vm).unwrap();
    let img = vm.join("disk.img");
    let dd = |args: &[String]| {
        run(Command::new("dd")
            .arg("if=/dev/urandom")
            .arg(format!("of={}", img.display()))
            .args(args)
            .arg("status=none"))
        .assert_ok();
    };
    let s = |v: &str| v.to_string();
    dd(&[s("bs=1M"), s("count=8"), s("conv=fsync")]);
    let frag = run(Command::new("filefrag").arg(&img));
    assert!(
        frag.stdout_str().trim_end().ends_with(": 1 extent found"),
        "not one extent: {frag:?}"
    );
    dd(&[
        s("bs=1M"),
        s("seek=2"),
        s("count=4"),
        s("conv=notrunc,fsync"),
    ]);
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..100 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let block = x % 2048;
        dd(&[
            s("bs=4096"),
            format!("seek={block}"),
            s("count=1"),
            s("conv=notrunc"),
        ]);
    }
    sync_fs(d);
    let out = run(Command::new(sdu_bin())
        .args(["--json", "-s", "--stats"])
        .arg(&vm));
    assert_eq!(out.code, Some(0), "{out:?}");
    let root = json::parse(&out.stdout).entries.last().unwrap().clone();
    let partial = stat_value(&out.stderr, "extents referenced in part, kept whole");
    let no_root = sdu_unprivileged(&["--json", "-s"], &vm);
    assert_eq!(no_root.code, Some(0), "{no_root:?}");
    let no_root = json::parse(&no_root.stdout).entries.last().unwrap().clone();
    let (disk_usage, referenced) = compsize(&img);
    let freed = data_freed_by(d, || std::fs::remove_dir_all(&vm).unwrap());
    println!(
        "VM image: as root total {} exclusive {} shared {} reclaimable {} \
         ({partial} extents referenced in part); without root reclaimable {}; \
         freed {freed}; compsize Disk Usage {disk_usage}, Referenced {referenced}",
        root.total, root.exclusive, root.shared, root.reclaimable, no_root.reclaimable
    );
    assert_eq!(referenced, 8 << 20);
    assert!(freed > 8 << 20, "nothing kept whole: {freed}");
    assert_eq!(root.reclaimable, freed, "as root: {root:?}");
    assert_eq!((root.exclusive, root.shared), (freed, 0), "{root:?}");
    assert_eq!(root.total, 8 << 20, "total is du's: {root:?}");
    assert_eq!(disk_usage, freed, "compsize's Disk Usage");
    assert!(partial >= 1, "{}", out.stderr);
    assert_eq!(
        no_root.reclaimable,
        8 << 20,
        "without root, the referenced bytes: {no_root:?}"
    );
}

/// As root, an extent whose refs do not fit in its extent item, read as a
/// run of one: `pool/src` (256 KiB) cloned into 40 directories, each also
/// holding 64 KiB of its own written later, so that a directory's two
/// extents lie more than 256 KiB apart and each is searched alone; the
/// extent has 41 refs, 8 of them keyed, and no file is left to FIEMAP.
/// The 40 directories' reclaimable is
/// their own data, which deleting them frees; then `pool`'s is its 256 KiB,
/// which deleting it frees. Each checked against Data Used.
#[test]
fn lone_extents_with_keyed_refs_as_root_reclaimable_is_what_deleting_frees() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    let (pool, spread) = (d.join("pool"), d.join("spread"));
    std::fs::create_dir(&pool).unwrap();
    std::fs::create_dir(&spread).unwrap();
    write_file(&pool.join("src"), 256 << 10);
    sync_fs(d);
    for i in 0..40 {
        let sub = spread.join(format!("d{i:02}"));
        std::fs::create_dir(&sub).unwrap();
        run(Command::new("cp")
            .args(["--reflink=always"])
            .arg(pool.join("src"))
            .arg(sub.join("c")))
        .assert_ok();
        write_file(&sub.join("own"), 64 << 10);
        sync_fs(d);
    }
    // Every file decided from the refs read, none left to FIEMAP (a
    // lone extent whose keyed refs were not read would be).
    let out = run(Command::new(sdu_bin()).args(["-s", "--stats"]).arg(&spread));
    assert_eq!(
        stat_value(&out.stderr, "tree search undecided, mapped with FIEMAP"),
        0,
        "{}",
        out.stderr
    );
    let fs_ = root_figures(&spread);
    assert_eq!(fs_.reclaimable, 40 * (64 << 10), "{fs_:?}");
    assert_eq!(fs_.shared, 256 << 10, "{fs_:?}");
    let freed = data_freed_by(d, || std::fs::remove_dir_all(&spread).unwrap());
    assert_eq!(freed, fs_.reclaimable, "deleting spread");
    let fp = root_figures(&pool);
    assert_eq!(fp.reclaimable, 256 << 10, "{fp:?}");
    let freed = data_freed_by(d, || std::fs::remove_dir_all(&pool).unwrap());
    assert_eq!(freed, fp.reclaimable, "deleting pool");
}

/// Subvolume `vol` of 300 files of 8 KiB (a few leaves), their leaves
/// written before read-only snapshot `snap` was made (and, if `empty`, a
/// snapshot `empty` made before any file), then `f299` rewritten, which
/// copies vol's last leaf: `vol`'s path.
fn origin_of_300(d: &Path, empty: bool) -> std::path::PathBuf {
    let vol = d.join("vol");
    subvolume(&vol);
    if empty {
        ro_snapshot(&vol, &d.join("empty"));
    }
    for i in 0..300 {
        write_file(&vol.join(format!("f{i:03}")), 8192);
    }
    sync_fs(d);
    ro_snapshot(&vol, &d.join("snap"));
    write_file(&vol.join("f299"), 50_000);
    sync_fs(d);
    vol
}

/// As root, the origin of a snapshot scanned alone: its files unchanged
/// since the snapshot lie in leaves the snapshot holds too, which the
/// leaves' generations tell, with no FIEMAP and no question to Btrfs about
/// who else holds their extents (300 files, a few leaves: the last one,
/// where a file was rewritten, is the origin's own, and its extents have
/// two refs). A snapshot changed since it was made, or deleted, tells
/// nothing: FIEMAP decides, with the same figures. Deleting the origin's
/// files frees its reclaimable.
#[test]
fn origin_unchanged_since_its_snapshot_decided_by_leaf_generations() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    let vol = origin_of_300(d, false);
    write_file(&vol.join("new"), 70_000);
    sync_fs(d);
    // (undecided, asked, settled) of `sdu -s --stats DIR`.
    let stats_of = |dir: &Path, what: &str| {
        let out = run(Command::new(sdu_bin()).args(["-s", "--stats"]).arg(dir));
        assert_eq!(out.code, Some(0), "{what}: {out:?}");
        let v = |k| stat_value(&out.stderr, k);
        let asked = v("shared ranges asked who else holds them");
        let settled = out
            .stderr
            .split_once("held outside the scan; ")
            .and_then(|(_, r)| r.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("{what}: {}", out.stderr));
        (
            v("tree search undecided, mapped with FIEMAP"),
            asked,
            settled,
        )
    };
    let stats = |what: &str| stats_of(&vol, what);
    let all = |what: &str| {
        assert_search_matches_fiemap(&vol);
        (stats(what), sdu_json(&args!["-a", &vol]).entries)
    };
    let ((undecided, asked, settled), entries) = all("snapshot as made");
    assert_eq!(undecided, 0, "snapshot as made");
    // Nothing asked: the last leaf's extents have a ref to the leaf snap
    // kept when vol copied it, and snap was not entered.
    assert_eq!((asked, settled), (0, 299), "snapshot as made");
    // snap alone: its extents' refs name vol's inodes, which the scan
    // does not see.
    let (_, asked, settled) = stats_of(&d.join("snap"), "snap alone");
    assert_eq!((asked, settled), (0, 299), "snap alone");
    // snap changed since it was made: its leaves say nothing of vol's.
    run(Command::new("btrfs")
        .args(["property", "set", "-ts"])
        .arg(d.join("snap"))
        .args(["ro", "false"]))
    .assert_ok();
    write_file(&d.join("snap/later"), 8192);
    sync_fs(d);
    let ((undecided, asked, settled), changed) = all("snapshot changed");
    // What snap copied when it changed has refs of its own, naming it.
    assert!(
        undecided > 100 && asked + settled == 299,
        "{undecided} {asked}"
    );
    assert_eq!(changed, entries, "snapshot changed");
    // A newer snapshot, as made, tells again; deleted, it does not.
    ro_snapshot(&vol, &d.join("snap2"));
    write_file(&vol.join("after2"), 8192);
    sync_fs(d);
    assert_eq!(stats("second snapshot").0, 0, "second snapshot");
    btrfs(&["subvolume", "delete", "--commit-after"], &d.join("snap2"));
    // Its tree dropped: the data it held with vol is vol's alone again.
    btrfs(&["subvolume", "sync"], d);
    assert!(stats("second snapshot deleted").0 > 100);
    std::fs::remove_file(vol.join("after2")).unwrap();
    let fv = root_figures(&vol);
    let freed = data_freed_by(d, || {
        for e in std::fs::read_dir(&vol).unwrap() {
            std::fs::remove_file(e.unwrap().path()).unwrap();
        }
    });
    assert_eq!(freed, fv.reclaimable, "deleting vol's files");
}

/// As root, an origin and its snapshot scanned together while an older
/// snapshot, made before any file, is excluded: the family is not whole,
/// but every extent is held inside the scan (by the origin, and by the
/// snapshot through the leaves it kept), and Reclaimable says so: the
/// same as FIEMAP's without CAP_SYS_ADMIN, which has nothing outside to
/// leave out here.
#[test]
fn leaves_a_snapshot_kept_are_inside_when_it_is_scanned() {
    let Some(fs) = LoopFs::new(FsKind::Btrfs) else {
        return;
    };
    let d = fs.path();
    origin_of_300(d, true);
    // The filesystem, but the empty snapshot: vol and snap under one
    // directory, whose Reclaimable counts what only they hold.
    let scan = ["--json", "-a", "--exclude", "empty"];
    let out = run(Command::new(sdu_bin()).args(scan).arg("--stats").arg(d));
    assert_eq!(out.code, Some(0), "{out:?}");
    // The last leaf, which vol copied: its extents are asked about.
    let asked = stat_value(&out.stderr, "shared ranges asked who else holds them");
    assert!(asked > 0, "{}", out.stderr);
    let root = json::parse(&out.stdout);
    let nobody = sdu_unprivileged(&scan, d);
    assert_eq!(nobody.code, Some(0), "{nobody:?}");
    let nobody = json::parse(&nobody.stdout);
    let figures = |r: &json::Report| -> Vec<(String, u64, u64)> {
        r.entries
            .iter()
            .map(|e| {
                (
                    e.path.to_string_lossy().into_owned(),
                    e.shared,
                    e.reclaimable,
                )
            })
            .collect()
    };
    assert_eq!(figures(&root), figures(&nobody));
}

/// Two Btrfs filesystems made alike: on each, `vol` (256) holding `data`
/// (1 MiB, inode 257) and what `fill` adds to it, then its read-only
/// snapshot `snap` (257). `None` where loopback Btrfs cannot be made.
fn numbered_alike(fill: impl Fn(&Path)) -> Option<(LoopFs, LoopFs)> {
    let (a, b) = (LoopFs::new(FsKind::Btrfs)?, LoopFs::new(FsKind::Btrfs)?);
    for fs in [&a, &b] {
        let d = fs.path();
        subvolume(&d.join("vol"));
        write_file(&d.join("vol/data"), 1 << 20);
        fill(&d.join("vol"));
        sync_fs(d);
        ro_snapshot(&d.join("vol"), &d.join("snap"));
    }
    Some((a, b))
}

/// As root, two Btrfs filesystems in one scan number their subvolumes
/// alike (256, 257...). The first is scanned whole, with a snapshot of id
/// 257; of the second only `vol` (256), whose snapshot (257 there too)
/// lies outside the scan and holds all of its data, an extent and inline
/// files. That snapshot is not the first filesystem's 257, which the walk
/// held whole: `vol` frees nothing, and says so exactly.
#[test]
fn subvolumes_of_two_filesystems_numbered_alike_are_told_apart() {
    let Some((a, b)) = numbered_alike(|vol| {
        for i in 0..10 {
            std::fs::write(vol.join(format!("f{i}")), vec![b'q'; 800]).unwrap();
        }
    }) else {
        return;
    };
    let id = |p: &Path| {
        let out = run(Command::new("btrfs")
            .args(["inspect-internal", "rootid"])
            .arg(p));
        out.assert_ok();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(
        id(&a.path().join("snap")),
        id(&b.path().join("snap")),
        "ids alike"
    );
    let out = run(Command::new(sdu_bin())
        .args(["--json", "-s"])
        .arg(a.path())
        .arg(b.path().join("vol")));
    assert_eq!(out.code, Some(0), "{out:?}");
    let doc = json::parse(&out.stdout);
    let vol = (doc.entries.iter())
        .find(|e| e.path == b.path().join("vol"))
        .expect("vol's entry");
    assert_eq!(vol.reclaimable, 0, "{vol:?}");
    assert!(vol.reclaimable_exact, "{vol:?}");
    // Its extent, deleted, frees no data (its inline files lie in
    // metadata, which Data Used leaves out).
    let freed = data_freed_by(b.path(), || {
        std::fs::remove_file(b.path().join("vol/data")).unwrap();
    });
    assert_eq!(freed, 0, "deleting vol's data");
}

/// As root, two Btrfs filesystems numbered alike, each with `vol` (256)
/// holding `data` (1 MiB, inode 257) and its reflink copy `copy` (258),
/// and a read-only snapshot `snap` (257) holding both. The first is
/// scanned whole, so its files (257, 257) and (257, 258) are seen; of the
/// second only `vol`, then `vol` and `snap/sub` (which enters its 257
/// but not the files). The second's `snap` holds vol's extent from
/// outside the scan: what the back-reference walk of the second finds
/// there is not the first's files of the same numbers, nor is its 257
/// met because the first's was. `vol` frees nothing, exactly, as when
/// scanned alone; deleting its files frees no data.
#[test]
fn holders_numbered_alike_on_another_filesystem_are_not_seen() {
    let Some((a, b)) = numbered_alike(|vol| {
        run(Command::new("cp")
            .args(["--reflink=always"])
            .arg(vol.join("data"))
            .arg(vol.join("copy")))
        .assert_ok();
        std::fs::create_dir(vol.join("sub")).unwrap();
    }) else {
        return;
    };
    let vol = b.path().join("vol");
    // B's vol as `sdu -s` reports it, scanning `roots`.
    let vol_of = |roots: &[&Path]| {
        let out = run(Command::new(sdu_bin()).args(["--json", "-s"]).args(roots));
        assert_eq!(out.code, Some(0), "{out:?}");
        let doc = json::parse(&out.stdout);
        let e = (doc.entries.iter()).find(|e| e.path == vol);
        e.unwrap_or_else(|| panic!("vol's entry: {roots:?}"))
            .clone()
    };
    let alone = vol_of(&[&vol]);
    assert_eq!((alone.shared, alone.reclaimable), (1 << 20, 0), "{alone:?}");
    assert!(alone.reclaimable_exact, "{alone:?}");
    let sub = b.path().join("snap/sub");
    for roots in [vec![a.path(), &vol], vec![a.path(), &vol, &sub]] {
        let e = vol_of(&roots);
        assert_eq!(
            (e.shared, e.reclaimable, e.reclaimable_exact),
            (alone.shared, alone.reclaimable, alone.reclaimable_exact),
            "{roots:?}: {e:?}"
        );
    }
    let freed = data_freed_by(b.path(), || {
        for f in ["data", "copy"] {
            std::fs::remove_file(vol.join(f)).unwrap();
        }
    });
    assert_eq!(freed, alone.reclaimable, "deleting vol's files");
}

/// As root, the same two filesystems numbered alike, each an origin of
/// 300 files whose snapshot (257) copied none of its leaves but the last
/// ([`origin_of_300`]). The first scanned whole, and the second's `vol`:
/// the second's extents have refs to the leaves its `snap` holds, a
/// subvolume the scan never entered there (the first's 257 is not it),
/// so they settle as held outside with no question to Btrfs, as when
/// `vol` is scanned alone.
#[test]
fn a_leaf_held_by_a_subvolume_numbered_alike_on_another_filesystem_is_outside() {
    let (Some(a), Some(b)) = (LoopFs::new(FsKind::Btrfs), LoopFs::new(FsKind::Btrfs)) else {
        return;
    };
    origin_of_300(a.path(), false);
    let vol = origin_of_300(b.path(), false);
    // (asked, held outside, settled) of `sdu -s --stats ROOTS`.
    let stats = |roots: &[&Path]| {
        let out = run(Command::new(sdu_bin()).args(["-s", "--stats"]).args(roots));
        assert_eq!(out.code, Some(0), "{out:?}");
        let key = "shared ranges asked who else holds them";
        let line = (out.stderr.lines())
            .find(|l| l.trim_start().starts_with(key))
            .unwrap_or_else(|| panic!("{roots:?}: {}", out.stderr));
        let n: Vec<u64> = (line.trim_start()[key.len()..].split(|c: char| !c.is_ascii_digit()))
            .filter_map(|n| n.parse().ok())
            .collect();
        assert_eq!(n.len(), 3, "{line}");
        (n[0], n[1], n[2])
    };
    let alone = stats(&[&vol]);
    assert_eq!(alone, (0, 299, 299), "vol alone");
    assert_eq!(stats(&[a.path(), &vol]), alone, "with the first filesystem");
}
