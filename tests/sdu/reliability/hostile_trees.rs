//! Hostile trees: symlink loops under `-L`, bind mounts, a file of
//! 100,000 extents, hostile names, /proc and /sys.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::{sdu_checked, xfs};
use crate::args;
use crate::json::{self, Kind};
use crate::util::*;

/// Symlink loops under -L (to the root, to itself, between two siblings):
/// sdu ends, reports the cycles, and never walks a directory inside itself.
#[test]
fn symlink_loops_under_dereference_end_and_never_nest_a_directory() {
    let t = TestDir::new();
    let root = t.mkdir("loops");
    for d in ["a", "b", "c"] {
        fs::create_dir(root.join(d)).unwrap();
        write_file(&root.join(d).join("f"), 3000);
    }
    symlink("..", root.join("a/up")).unwrap();
    symlink(".", root.join("a/self")).unwrap();
    symlink("../c", root.join("b/toc")).unwrap();
    symlink("../b", root.join("c/tob")).unwrap();
    let (r, stderr) = sdu_checked(&args!["-L", &root], 30);
    assert!(stderr.contains("cycle"), "cycles not reported: {stderr}");
    // Along every reported path, no directory appears twice.
    for e in r.entries.iter().filter(|e| e.kind == Kind::Dir) {
        let mut seen = std::collections::HashSet::new();
        let mut p = e.path.as_os_str().as_bytes().to_vec();
        let base = root.as_os_str().as_bytes().len();
        loop {
            let m = fs::metadata(OsStr::from_bytes(&p)).unwrap();
            assert!(
                seen.insert((m.dev(), m.ino())),
                "{} walks a directory inside itself",
                e.path.display()
            );
            if p.len() <= base {
                break;
            }
            let cut = p.iter().rposition(|&b| b == b'/').unwrap();
            p.truncate(cut);
        }
    }
    assert!(r.entries.len() < 20, "{:?}", paths(&r));
}

/// A bind mount inside the tree: entered without -x, not with -x.
#[test]
fn bind_mount_entered_without_x_and_skipped_with_x() {
    if !is_root() {
        unavailable::<()>("bind mounts need root");
        return;
    }
    let t = TestDir::new();
    let root = t.mkdir("tree");
    write_file(&root.join("here"), 10_000);
    let outside = t.mkdir("outside");
    write_file(&outside.join("big"), 1 << 20);
    let mnt = root.join("bind");
    fs::create_dir(&mnt).unwrap();
    run(Command::new("mount").arg("--bind").arg(&outside).arg(&mnt)).assert_ok();
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _u = Unmount(mnt.clone());
    let all = sdu_json(&args!["-a", &root]);
    assert!(
        all.entries.iter().any(|e| e.path == mnt.join("big")),
        "{:?}",
        paths(&all)
    );
    let x = sdu_json(&args!["-a", "-x", &root]);
    assert!(
        !x.entries
            .iter()
            .any(|e| Path::new(&e.path).starts_with(&mnt)),
        "-x entered the bind mount: {:?}",
        paths(&x)
    );
    let (ta, tx) = (all.entries.last().unwrap(), x.entries.last().unwrap());
    assert!(ta.total >= tx.total + (1 << 20), "{ta:?} {tx:?}");
}

/// Runs `xfs_io -c CMD... FILE`.
fn xfs_io(file: &Path, cmds: &[String]) {
    let mut c = Command::new("xfs_io");
    c.arg("-f");
    for cmd in cmds {
        c.arg("-c").arg(cmd);
    }
    run(c.arg(file)).assert_ok();
}

/// A file of 100,000 extents (4 KiB clones alternating between two
/// non-adjacent blocks of a source, built by doubling same-file clones):
/// sdu maps it in bounded time with its fixed buffer, its total matches
/// du, its shared data is the two source blocks, counted once.
#[test]
fn file_of_100k_extents_is_mapped_in_bounded_time() {
    let Some(l) = xfs() else { return };
    let root = l.path().join("frag");
    fs::create_dir(&root).unwrap();
    let (src, dst) = (root.join("src"), root.join("dst"));
    xfs_io(&src, &["pwrite -q 0 12288".into(), "fsync".into()]);
    const B: u64 = 4096;
    const N: u64 = 100_000;
    let s = src.display();
    let mut cmds = vec![
        format!("reflink {s} 0 0 {B}"),
        format!("reflink {s} {} {B} {B}", 2 * B),
    ];
    let mut have = 2;
    while have < N {
        let n = have.min(N - have);
        cmds.push(format!(
            "reflink {} 0 {} {}",
            dst.display(),
            have * B,
            n * B
        ));
        have += n;
    }
    xfs_io(&dst, &cmds);
    sync_fs(l.path());
    let extents = run(Command::new("xfs_io")
        .args(["-r", "-c", "fiemap"])
        .arg(&dst))
    .stdout
    .split(|&b| b == b'\n')
    .filter(|l| l.windows(2).any(|w| w == b"]:"))
    .count();
    assert!(extents as u64 >= N, "the file has only {extents} extents");

    let t0 = Instant::now();
    let (r, _) = sdu_checked(&args!["-a", &root], 60);
    let took = t0.elapsed();
    assert!(took < Duration::from_secs(20), "took {took:?}");
    let e = |p: &Path| r.entries.iter().find(|e| e.path == p).unwrap().clone();
    let (d, top) = (e(&dst), e(&root));
    let du = Du::new(&[]);
    assert_eq!(d.total, du.bytes(&["-B1"], dst.as_os_str()), "{d:?}");
    // Every data block of dst is a clone: its exclusive bytes are its
    // block-map blocks only.
    assert_eq!(d.exclusive, d.total - N * B, "{d:?}");
    assert_eq!(top.shared, 2 * B, "{top:?}");
    assert_eq!(top.reclaimable, top.exclusive + 2 * B, "{top:?}");
    // --stats: the fixed extent buffer means one call per batch.
    let out = sdu(&args!["--stats", "-s", &dst]);
    let calls: u64 = out
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("  FIEMAP calls"))
        .map(|v| v.trim().parse().unwrap())
        .unwrap_or_else(|| panic!("no FIEMAP calls in --stats: {out:?}"));
    assert!(
        (N / 256..=N / 256 + 4).contains(&calls),
        "{calls} FIEMAP calls for {N} extents"
    );
}

/// Names with a newline, invalid UTF-8, a leading dash and 255 bytes:
/// text output prints them raw as du does, -0 ends them exactly, JSON
/// round-trips them (base64 for non-UTF-8), and `sdu -- -x` works.
#[test]
fn hostile_names_print_raw_and_round_trip() {
    let t = TestDir::new();
    let root = t.mkdir("names");
    let long = "n".repeat(255);
    let names: Vec<Vec<u8>> = vec![
        b"new\nline".to_vec(),
        b"bad\xff\xfeutf8".to_vec(),
        b"-x".to_vec(),
        b"--help".to_vec(),
        long.as_bytes().to_vec(),
        b"tab\tand 'quote'".to_vec(),
    ];
    for n in &names {
        let d = root.join(OsStr::from_bytes(n));
        fs::create_dir(&d).unwrap();
        fs::write(d.join(OsStr::from_bytes(n)), b"data").unwrap();
    }
    // JSON: exactly the tree's paths, bytes for bytes.
    let r = sdu_json(&args!["-a", &root]);
    let want: Vec<OsString> = expected_walk(&root, true)
        .into_iter()
        .map(|e| e.0)
        .collect();
    assert_eq!(paths(&r), want);
    // -0: du's paths exactly.
    let z = sdu_ok(&args!["-a", "-0", &root]);
    let t0 = parse_text(&z, false, Some(4), 0);
    let got = sorted(t0.rows.into_iter().map(|r| r.path).collect());
    let du = Du::new(&[]).paths(&["-a"], &[root.as_os_str()]);
    assert_eq!(got, du, "{}", set_diff(&got, &du));
    // Text: the raw bytes, newline included, as du prints them.
    let text = sdu_ok(&args!["-a", "--no-header", &root]);
    let du_text = run(Command::new("du").arg("-a").arg(&root)).stdout;
    for n in &names {
        let mut p = root.join(OsStr::from_bytes(n)).into_os_string().into_vec();
        p.push(b'\n');
        assert!(
            du_text.windows(p.len()).any(|w| w == p),
            "du does not print {n:?} raw"
        );
        assert!(
            text.windows(p.len()).any(|w| w == p),
            "sdu does not print {:?} raw:\n{}",
            String::from_utf8_lossy(n),
            String::from_utf8_lossy(&text)
        );
    }
    // `sdu -- -x` measures the directory "-x" (and `sdu -- --help` too).
    let out = run(Command::new(sdu_bin())
        .current_dir(&root)
        .args(["--json", "--", "-x", "--help"]));
    out.assert_ok();
    let r = json::parse(&out.stdout);
    assert_eq!(r.roots, [OsString::from("-x"), OsString::from("--help")]);
}

/// /proc and /sys as roots: sdu ends, exits 0 or 1, and their allocated
/// figures stay small (they hold no disk data).
#[test]
fn proc_and_sys_end_without_absurd_figures() {
    for root in ["/proc", "/sys"] {
        let t0 = Instant::now();
        let (r, stderr) = sdu_checked(&args!["-x", "-s", root], 60);
        let e = r.entries.last().unwrap();
        assert!(
            e.total < 1 << 30 && e.shared == 0,
            "{root}: absurd figures {e:?}\n{stderr}"
        );
        eprintln!("{root}: {:?}, {:?}", t0.elapsed(), e);
    }
}
