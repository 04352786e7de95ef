//! ncdu 2's formats: the binary export (`ncdu -O`, `--export-format
//! binary`) and zstd-compressed JSON (`ncdu -c`, `--export-format
//! json-zstd`). sdu's exports in them import as its JSON does, byte for
//! byte (XFS with reflinks, hardlinks and odd names); files built here by
//! hand from ncdu's published description (a writer independent of
//! sdu's) read as the JSON of the same tree; `--compare` pairs a binary
//! scan with a compressed one; cut and corrupt files are refused (exit 2,
//! where the problem is), never a panic. With ncdu 2 (`SDU_NCDU2`, or an
//! `ncdu` that is 2.x; no Debian release packages it, so CI skips those,
//! loudly): its own exports import, and it reads sdu's.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::saved::{FLAG_SETS, assert_same_reports, export, os, sdu_in, xfs_tree};
use crate::util::*;

#[test]
fn binary_and_zstd_exports_import_as_the_live_scan_on_xfs() {
    let Some(fs) = xfs_tree() else { return };
    let dir = fs.path();
    for (format, name) in [("binary", "scan.ncdu"), ("json-zstd", "scan.json.zst")] {
        let file = dir.join(name);
        export(dir, &file, &["--export-format", format], &[os("w")]);
        let head = std::fs::read(&file).unwrap();
        let magic: &[u8] = if format == "binary" {
            b"\xbfncduEX1"
        } else {
            b"\x28\xb5\x2f\xfd"
        };
        assert!(head.starts_with(magic), "{format}: {:?}", &head[..8]);
        assert_same_reports(dir, &file, &[os("w")], FLAG_SETS);
        // Several roots, one a file: a top of their own.
        let roots = [os("w/a"), os("w/c"), os("w/own")];
        let many = dir.join(format!("many-{name}"));
        export(dir, &many, &["--export-format", format], &roots);
        assert_same_reports(dir, &many, &roots, &[&["--json", "-a"], &["-s", "-c"]]);
    }
    // The formats carry the same scan: the JSON read out of each is the
    // JSON export's (but the timestamp).
    let json = dir.join("scan.json");
    export(dir, &json, &[], &[os("w")]);
    let o = sdu_in(
        dir,
        &[
            os("--import"),
            os("scan.ncdu"),
            os("--to-free"),
            os("1"),
            os("w/a"),
        ],
    );
    let p = sdu_in(
        dir,
        &[
            os("--import"),
            os("scan.json"),
            os("--to-free"),
            os("1"),
            os("w/a"),
        ],
    );
    assert_eq!((o.code, &o.stdout), (p.code, &p.stdout), "{o:?}");
    // Standard input too.
    let back = run(Command::new("sh").current_dir(dir).arg("-c").arg(format!(
        "{} --json -a --import - < scan.ncdu",
        sdu_bin().display()
    )));
    back.assert_ok();
    assert_eq!(
        back.stdout,
        sdu_in(dir, &[os("--json"), os("-a"), os("w")]).stdout
    );
}

#[test]
fn compare_pairs_a_binary_scan_with_a_compressed_one() {
    let d = TestDir::new();
    let root = d.mkdir("r");
    std::fs::create_dir(root.join("keep")).unwrap();
    std::fs::create_dir(root.join("gone")).unwrap();
    write_file(&root.join("keep/f"), 40_000);
    write_file(&root.join("gone/g"), 70_000);
    export(
        d.path(),
        &d.path().join("old.ncdu"),
        &["--export-format", "binary"],
        &[os("r")],
    );
    export(d.path(), &d.path().join("old.json"), &[], &[os("r")]);
    std::fs::remove_dir_all(root.join("gone")).unwrap();
    write_file(&root.join("keep/new"), 90_000);
    export(
        d.path(),
        &d.path().join("new.zst"),
        &["--export-format", "json-zstd"],
        &[os("r")],
    );
    export(d.path(), &d.path().join("new.json"), &[], &[os("r")]);
    let cmp = |old: &str, new: &str| {
        let o = sdu_in(
            d.path(),
            &[os("--compare"), os(old), os("--import"), os(new), os("-a")],
        );
        o.assert_ok();
        o.stdout_str().to_string()
    };
    let bin = cmp("old.ncdu", "new.zst");
    assert_eq!(bin, cmp("old.json", "new.json"));
    assert!(
        bin.contains("gone") && bin.contains("new") && bin.contains("r/keep/new"),
        "{bin}"
    );
    // And against the live tree.
    let o = sdu_in(
        d.path(),
        &[os("--compare"), os("old.ncdu"), os("-a"), os("r")],
    );
    o.assert_ok();
    assert_eq!(o.stdout_str(), bin);
}

// ---- Files built by hand from ncdu's description of the binary format
// (https://dev.yorhel.nl/ncdu/binfmt), sharing no code with sdu's writer.

/// Appends a CBOR head.
fn h(out: &mut Vec<u8>, major: u8, arg: u64) {
    let m = major << 5;
    match arg {
        0..=23 => out.push(m | arg as u8),
        24..=0xff => out.extend([m | 24, arg as u8]),
        0x100..=0xffff => {
            out.push(m | 25);
            out.extend((arg as u16).to_be_bytes());
        }
        _ => {
            out.push(m | 27);
            out.extend(arg.to_be_bytes());
        }
    }
}

/// A field value.
enum V<'a> {
    U(u64),
    I(i64),
    B(&'a [u8]),
    Bool(bool),
    /// A reference, written back from the item's own as a negative
    /// offset.
    Back(u64),
    /// Raw CBOR bytes.
    Raw(&'a [u8]),
}

/// An item: a CBOR map of `fields` (indefinite unless `definite`).
fn item(fields: &[(u64, V<'_>)], definite: bool, me: u64) -> Vec<u8> {
    let mut o = Vec::new();
    if definite {
        h(&mut o, 5, fields.len() as u64);
    } else {
        o.push(0xbf);
    }
    for (k, v) in fields {
        h(&mut o, 0, *k);
        match v {
            V::U(n) => h(&mut o, 0, *n),
            V::I(n) if *n < 0 => h(&mut o, 1, (-1 - n) as u64),
            V::I(n) => h(&mut o, 0, *n as u64),
            V::B(b) => {
                h(&mut o, 2, b.len() as u64);
                o.extend_from_slice(b);
            }
            V::Bool(b) => o.push(if *b { 0xf5 } else { 0xf4 }),
            V::Back(r) => h(&mut o, 1, me - r - 1),
            V::Raw(b) => o.extend_from_slice(b),
        }
    }
    if !definite {
        o.push(0xff);
    }
    o
}

/// A block: TypeLen, content, TypeLen.
fn block(kind: u32, content: &[u8]) -> Vec<u8> {
    let tl = ((kind << 28) | (content.len() as u32 + 8)).to_be_bytes();
    [&tl[..], content, &tl[..]].concat()
}

fn data_block(num: u32, items: &[u8]) -> Vec<u8> {
    let z = zstd::bulk::compress(items, 3).unwrap();
    block(0, &[&num.to_be_bytes()[..], &z].concat())
}

/// What to break in [`hand_built`].
#[derive(Clone, Copy, PartialEq, Debug)]
enum Break {
    Nothing,
    /// `x` its own `prev`.
    Loop,
    /// Block 0's index entry past the end of the file.
    IndexPastEnd,
    /// Block 1's own number written as 7.
    BlockNumber,
    /// The root in block 2, which the index leaves out.
    RootNowhere,
    /// An item with a CBOR head no value has.
    BadHead,
    /// `f1` named `h1` too: a name twice in a directory.
    TwiceNamed,
}

/// The tree, as ncdu's JSON gives it:
///
/// ```text
/// top/ (dev 7)
///   a/     f1 (5000 B, 8 KiB), h1 (hardlink, inode 99)
///   b/     (read error) h2 (the other link of inode 99)
///   n      (not a regular file), e (could not be read),
///   x      (excluded), big (1 MiB)
/// ```
const HAND_JSON: &str = r#"[1,2,{"progname":"by hand"},
[{"name":"top","asize":4096,"dsize":4096,"dev":7},
[{"name":"a","asize":4096,"dsize":4096},
{"name":"f1","asize":5000,"dsize":8192},
{"name":"h1","asize":3000,"dsize":4096,"ino":99,"nlink":2,"hlnkc":true}],
[{"name":"b","asize":4096,"dsize":4096,"read_error":true},
{"name":"h2","asize":3000,"dsize":4096,"ino":99,"nlink":2,"hlnkc":true}],
{"name":"n","asize":10,"notreg":true},
{"name":"e","read_error":true},
{"name":"x","excluded":"pattern"},
{"name":"big","asize":1048576,"dsize":1048576}]]
"#;

/// [`HAND_JSON`]'s tree as a binary export: items in two data blocks
/// (block 1 first in the file), an index entry for no block, a block of a
/// type no reader knows, references absolute and relative, a definite
/// map, a tag, and keys no reader knows; broken as `brk` says.
fn hand_built(brk: Break) -> Vec<u8> {
    const DIR: i64 = 0;
    const REG: i64 = 1;
    let r = |block: u64, off: usize| (block << 24) | off as u64;
    // Block 0: h1, f1, then a (which names b, in block 1).
    let mut b0 = Vec::new();
    let h1 = r(0, b0.len());
    b0.extend(item(
        &[
            (0, V::I(3)),
            (1, V::B(b"h1")),
            (3, V::U(3000)),
            (4, V::U(4096)),
            (13, V::U(99)),
            (14, V::U(2)),
        ],
        false,
        h1,
    ));
    let f1 = r(0, b0.len());
    let f1_name: &[u8] = if brk == Break::TwiceNamed {
        b"h1"
    } else {
        b"f1"
    };
    b0.extend(item(
        &[
            (0, V::I(REG)),
            (1, V::B(f1_name)),
            (2, V::Back(h1)),
            (3, V::U(5000)),
            (4, V::U(8192)),
        ],
        true,
        f1,
    ));
    let a = r(0, b0.len());
    // Block 1: big, x, e, n, h2, b, top.
    let mut b1 = Vec::new();
    let big = r(1, b1.len());
    // asize behind a tag (55799, "self-described CBOR").
    b1.extend(item(
        &[
            (0, V::I(REG)),
            (1, V::B(b"big")),
            (3, V::Raw(&[0xd9, 0xd9, 0xf7, 0x1a, 0, 0x10, 0, 0])),
            (4, V::U(1 << 20)),
        ],
        false,
        big,
    ));
    let x = r(1, b1.len());
    // Broken: x's prev is x itself.
    let x_prev = if brk == Break::Loop {
        V::U(x)
    } else {
        V::Back(big)
    };
    b1.extend(item(
        &[(0, V::I(-2)), (1, V::B(b"x")), (2, x_prev)],
        false,
        x,
    ));
    let e = r(1, b1.len());
    // Keys no reader knows: 18 (mtime, which sdu skips) and 40 with an
    // array inside an indefinite array.
    b1.extend(item(
        &[
            (0, V::I(-1)),
            (1, V::B(b"e")),
            (2, V::U(x)),
            (
                40,
                V::Raw(&[0x9f, 0x01, 0x82, 0x02, 0x03, 0x61, b's', 0xff]),
            ),
            (18, V::U(1_700_000_000)),
        ],
        false,
        e,
    ));
    let n = r(1, b1.len());
    let bad: &[u8] = &[0x1c];
    let n_fields = [
        (0, V::I(2)),
        (1, V::B(b"n")),
        (2, V::Back(e)),
        (3, V::U(10)),
        (
            4,
            if brk == Break::BadHead {
                V::Raw(bad)
            } else {
                V::U(0)
            },
        ),
    ];
    b1.extend(item(&n_fields, false, n));
    let h2 = r(1, b1.len());
    b1.extend(item(
        &[
            (0, V::I(3)),
            (1, V::B(b"h2")),
            (3, V::U(3000)),
            (4, V::U(4096)),
            (13, V::U(99)),
            (14, V::U(2)),
        ],
        false,
        h2,
    ));
    let b = r(1, b1.len());
    b1.extend(item(
        &[
            (0, V::I(DIR)),
            (1, V::B(b"b")),
            (2, V::Back(n)),
            (3, V::U(4096)),
            (4, V::U(4096)),
            (6, V::Bool(true)),
            (7, V::U(4096 + 3000)),
            (8, V::U(8192)),
            (9, V::U(3000)),
            (10, V::U(4096)),
            (11, V::U(1)),
            (12, V::Back(h2)),
        ],
        false,
        b,
    ));
    let top = r(if brk == Break::RootNowhere { 2 } else { 1 }, b1.len());
    b1.extend(item(
        &[
            (0, V::I(DIR)),
            (1, V::B(b"top")),
            (3, V::U(4096)),
            (4, V::U(4096)),
            (5, V::U(7)),
            (6, V::Bool(false)),
            (11, V::U(9)),
            (12, V::U(a)),
        ],
        false,
        top,
    ));
    // Now a, whose prev is b.
    b0.extend(item(
        &[
            (0, V::I(DIR)),
            (1, V::B(b"a")),
            (2, V::U(b)),
            (3, V::U(4096)),
            (4, V::U(4096)),
            (11, V::U(2)),
            (12, V::Back(f1)),
        ],
        false,
        a,
    ));
    let mut f = b"\xbfncduEX1".to_vec();
    let mut index = [0u64; 3];
    let blk1 = data_block(if brk == Break::BlockNumber { 7 } else { 1 }, &b1);
    index[1] = ((f.len() as u64) << 24) | blk1.len() as u64;
    f.extend(&blk1);
    f.extend(block(9, b"a block of a type no reader knows"));
    let blk0 = data_block(0, &b0);
    index[0] = ((f.len() as u64) << 24) | blk0.len() as u64;
    if brk == Break::IndexPastEnd {
        index[0] = ((f.len() as u64 + 100_000) << 24) | blk0.len() as u64;
    }
    f.extend(&blk0);
    let mut ix = Vec::new();
    for e in index {
        ix.extend(e.to_be_bytes());
    }
    ix.extend(top.to_be_bytes());
    f.extend(block(1, &ix));
    f
}

/// `sdu ARGS --import FILE` with `data` in FILE, in `d`.
fn import(d: &TestDir, name: &str, data: &[u8], args: &[&str]) -> Output {
    let file = d.path().join(name);
    std::fs::write(&file, data).unwrap();
    let mut a: Vec<&OsStr> = args.iter().map(|s| os(s)).collect();
    a.extend([os("--import"), file.as_os_str()]);
    sdu_in(d.path(), &a)
}

#[test]
fn hand_built_binary_and_zstd_files_read_as_their_json() {
    let d = TestDir::new();
    let bin = hand_built(Break::Nothing);
    // Two zstd frames, one after the other, as a stream may hold.
    let (one, two) = HAND_JSON.as_bytes().split_at(200);
    let zst = [
        zstd::bulk::compress(one, 3).unwrap(),
        zstd::bulk::compress(two, 19).unwrap(),
    ]
    .concat();
    for args in [
        &["--json", "-a"][..],
        &["-a", "-b"],
        &["-s", "--inodes"],
        &["--du", "total", "-a"],
    ] {
        let want = import(&d, "t.json", HAND_JSON.as_bytes(), args);
        // e and b could not be read in full: exit 1.
        assert_eq!(want.code, Some(1), "{want:?}");
        assert!(want.stderr.contains("not written by sdu"), "{want:?}");
        for (name, data) in [("t.ncdu", &bin), ("t.zst", &zst)] {
            let got = import(&d, name, data, args);
            assert_eq!(
                (
                    got.code,
                    got.stdout_str(),
                    got.stderr.replace(name, "t.json")
                ),
                (want.code, want.stdout_str(), want.stderr.clone()),
                "{name} {args:?}"
            );
        }
    }
    // The figures themselves (Total): the hardlinked inode once in top,
    // once in each of its links' directories; x, excluded, not there.
    let o = import(&d, "t.ncdu", &bin, &["--json", "-a"]);
    let r = crate::json::parse(&o.stdout);
    let got: Vec<(String, u64)> = r
        .entries
        .iter()
        .map(|e| (e.path.to_string_lossy().into_owned(), e.total))
        .collect();
    let want = [
        ("top/a/f1", 8192),
        ("top/a/h1", 4096),
        ("top/a", 4096 + 8192 + 4096),
        ("top/b/h2", 4096),
        ("top/b", 4096 + 4096),
        ("top/big", 1 << 20),
        ("top/e", 0),
        ("top/n", 0),
        ("top", 3 * 4096 + 8192 + 4096 + (1 << 20)),
    ];
    let want: Vec<(String, u64)> = want.iter().map(|(p, t)| (p.to_string(), *t)).collect();
    assert_eq!(got, want);
}

#[test]
fn broken_binary_files_are_refused_saying_where() {
    let d = TestDir::new();
    let cases = [
        (Break::Loop, "reached twice"),
        (Break::IndexPastEnd, "block 0: lies outside the file"),
        (
            Break::BlockNumber,
            "block 1: its header does not match the index",
        ),
        (Break::RootNowhere, "block 2: not in the index"),
        (Break::BadHead, "(block 1, offset"),
        (Break::TwiceNamed, "named 'h1'"),
    ];
    for (brk, says) in cases {
        let o = import(&d, "bad.ncdu", &hand_built(brk), &["--json"]);
        assert_eq!(o.code, Some(2), "{brk:?}: {o:?}");
        assert!(o.stdout.is_empty(), "{brk:?}: {o:?}");
        assert!(
            o.stderr.starts_with("sdu: ") && o.stderr.contains("bad.ncdu"),
            "{o:?}"
        );
        assert!(
            o.stderr.contains(says),
            "{brk:?}: wants {says:?}: {}",
            o.stderr
        );
    }
}

#[test]
fn cut_and_corrupt_binary_and_zstd_exports_are_refused_never_misread() {
    let d = TestDir::new();
    let root = d.mkdir("r");
    std::fs::create_dir(root.join("sub")).unwrap();
    write_file(&root.join("sub/f"), 10_000);
    write_file(&root.join("g"), 3000);
    std::fs::hard_link(root.join("g"), root.join("sub/g2")).unwrap();
    let good = sdu_in(d.path(), &[os("--json"), os("-a"), os("r")]);
    good.assert_ok();
    for (format, name) in [("binary", "good.ncdu"), ("json-zstd", "good.zst")] {
        let file = d.path().join(name);
        export(d.path(), &file, &["--export-format", format], &[os("r")]);
        let data = std::fs::read(&file).unwrap();
        // Cut anywhere: refused, saying the file is truncated.
        for n in 0..data.len() {
            let o = import(&d, "cut", &data[..n], &["--json", "-a"]);
            assert_eq!(o.code, Some(2), "{format} cut at {n}: {o:?}");
            assert!(o.stdout.is_empty(), "{o:?}");
            assert!(
                n == 0 || o.stderr.contains("truncated"),
                "{format} cut at {n}: {}",
                o.stderr
            );
        }
        // Any byte changed: refused, or read as some tree; never a panic.
        for n in (0..data.len()).step_by(3) {
            let mut bad = data.clone();
            bad[n] ^= 0x5a;
            let o = import(&d, "flip", &bad, &["--json", "-a"]);
            assert!(
                o.code == Some(2) && o.stdout.is_empty() && o.stderr.starts_with("sdu: ")
                    || o.code == Some(0),
                "{format} byte {n} changed: {o:?}"
            );
        }
    }
}

// ---- sdu's binary export read here, by ncdu's description.

/// A CBOR head at `b[*at..]`: major type, argument (indefinite: u64::MAX).
fn head_at(b: &[u8], at: &mut usize) -> (u8, u64) {
    let (major, info) = (b[*at] >> 5, b[*at] & 0x1f);
    *at += 1;
    let n = match info {
        0..=23 => return (major, u64::from(info)),
        24 => 1,
        25 => 2,
        26 => 4,
        27 => 8,
        31 => return (major, u64::MAX),
        _ => panic!("bad head {info}"),
    };
    let v = b[*at..*at + n]
        .iter()
        .fold(0, |a, &x| (a << 8) | u64::from(x));
    *at += n;
    (major, v)
}

/// The directories of a binary export, by path: cumulative apparent and
/// disk sizes, and entries below.
fn ncdu_dirs(file: &[u8]) -> Vec<(String, [u64; 3])> {
    assert!(file.starts_with(b"\xbfncduEX1"));
    let be = |b: &[u8]| b.iter().fold(0u64, |a, &x| (a << 8) | u64::from(x));
    let len = (be(&file[file.len() - 4..]) & 0x0fff_ffff) as usize;
    let index = &file[file.len() - len + 4..file.len() - 4];
    let (entries, root) = index.split_at(index.len() - 8);
    let blocks: Vec<Vec<u8>> = entries
        .chunks(8)
        .map(|e| {
            let e = be(e);
            let (off, len) = ((e >> 24) as usize, (e & 0xff_ffff) as usize);
            zstd::decode_all(&file[off + 8..off + len - 4]).unwrap()
        })
        .collect();
    // (name, type, [cumasize, cumdsize, items], sub, prev) of an item.
    let item = |r: u64| {
        let b = &blocks[(r >> 24) as usize];
        let mut at = (r & 0xff_ffff) as usize;
        assert_eq!(head_at(b, &mut at), (5, u64::MAX), "an indefinite map");
        let (mut name, mut t, mut cum, mut sub, mut prev) = (Vec::new(), 0, [0; 3], None, None);
        while b[at] != 0xff {
            let (km, k) = head_at(b, &mut at);
            if km == 2 || km == 3 {
                at += k as usize; // sdu's key
            }
            let (vm, v) = head_at(b, &mut at);
            if vm == 2 || vm == 3 {
                if km == 0 && k == 1 {
                    name = b[at..at + v as usize].to_vec();
                }
                at += v as usize;
                continue;
            }
            let back = |v: u64| r - v - 1;
            match (km, k, vm) {
                (0, 0, 0) => t = v as i64,
                (0, 0, 1) => t = -1 - v as i64,
                (0, 2, 0) => prev = Some(v),
                (0, 2, 1) => prev = Some(back(v)),
                (0, 12, 0) => sub = Some(v),
                (0, 12, 1) => sub = Some(back(v)),
                (0, 7, 0) => cum[0] = v,
                (0, 8, 0) => cum[1] = v,
                (0, 11, 0) => cum[2] = v,
                _ => {}
            }
        }
        (
            String::from_utf8_lossy(&name).into_owned(),
            t,
            cum,
            sub,
            prev,
        )
    };
    let mut out = Vec::new();
    let mut stack = vec![(String::new(), Some(be(root)))];
    while let Some((dir, next)) = stack.pop() {
        let Some(r) = next else { continue };
        let (name, t, cum, sub, prev) = item(r);
        stack.push((dir.clone(), prev));
        if t == 0 {
            let path = if dir.is_empty() {
                name
            } else {
                format!("{dir}/{name}")
            };
            out.push((path.clone(), cum));
            stack.push((path, sub));
        }
    }
    out
}

#[test]
fn the_binary_exports_directory_sizes_are_dus() {
    let Some(fs) = xfs_tree() else { return };
    let dir = fs.path();
    export(
        dir,
        &dir.join("s.ncdu"),
        &["--export-format", "binary"],
        &[os("w")],
    );
    let dirs = ncdu_dirs(&std::fs::read(dir.join("s.ncdu")).unwrap());
    assert!(dirs.len() >= 6, "{dirs:?}");
    let du = |flag: &str, path: &str| {
        let o = run(Command::new("du").current_dir(dir).args(["-s", flag, path]));
        o.assert_ok();
        o.stdout_str()
            .split('\t')
            .next()
            .unwrap()
            .parse::<u64>()
            .unwrap()
    };
    for (path, [asize, dsize, items]) in dirs {
        assert_eq!(asize, du("-b", &path), "{path}: apparent");
        assert_eq!(dsize, du("-B1", &path), "{path}: disk usage");
        let o =
            run(Command::new("find")
                .current_dir(dir)
                .args([&path, "-mindepth", "1", "-print0"]));
        let n = o.stdout.iter().filter(|&&c| c == 0).count() as u64;
        assert_eq!(items, n, "{path}: entries below");
    }
}

/// A tree whose binary export spans many blocks: 40 directories of 60
/// files with long names, hardlinks across directories.
fn many_blocks() -> TestDir {
    let d = TestDir::new();
    for i in 0..40 {
        let sub = d
            .path()
            .join(format!("m/d{i:02}/{}", "deeper".repeat(i % 3)));
        std::fs::create_dir_all(&sub).unwrap();
        for j in 0..60 {
            let f = sub.join(format!("{}-{j:03}", "a-rather-long-file-name".repeat(2)));
            write_file(&f, 100 * (j + 1));
            if j % 20 == 0 && i > 0 {
                std::fs::hard_link(&f, d.path().join(format!("m/d00/link-{i}-{j}"))).unwrap();
            }
        }
    }
    d
}

#[test]
fn a_binary_export_of_many_blocks_reads_back_and_holds_dus_sizes() {
    let d = many_blocks();
    let file = d.path().join("m.ncdu");
    export(d.path(), &file, &["--export-format", "binary"], &[os("m")]);
    let data = std::fs::read(&file).unwrap();
    let index = (u32::from_be_bytes(data[data.len() - 4..].try_into().unwrap()) & 0x0fff_ffff) - 16;
    assert!(index / 8 >= 4, "{} data blocks", index / 8);
    assert_same_reports(
        d.path(),
        &file,
        &[os("m")],
        &[&["--json", "-a"], &["-d", "1", "-c"]],
    );
    for (path, [asize, dsize, _]) in ncdu_dirs(&data) {
        let du = |flag: &str| {
            let o = run(Command::new("du")
                .current_dir(d.path())
                .args(["-s", flag, &path]));
            o.stdout_str()
                .split('\t')
                .next()
                .unwrap()
                .parse::<u64>()
                .unwrap()
        };
        assert_eq!((asize, dsize), (du("-b"), du("-B1")), "{path}");
    }
    if let Some(ncdu) = ncdu2() {
        export(d.path(), &d.path().join("m.json"), &[], &[os("m")]);
        assert_eq!(
            ncdu_json(&ncdu, d.path(), "m.ncdu"),
            ncdu_json(&ncdu, d.path(), "m.json")
        );
    }
}

// ---- ncdu 2 itself.

/// ncdu 2: `SDU_NCDU2`, else `ncdu` if it is 2.x; else a loud skip (no
/// Debian release packages ncdu 2, so CI has none).
fn ncdu2() -> Option<PathBuf> {
    let cand = std::env::var_os("SDU_NCDU2").map_or_else(|| PathBuf::from("ncdu"), PathBuf::from);
    let o = run(Command::new(&cand).arg("-v"));
    if o.code == Some(0) && o.stdout_str().starts_with("ncdu 2.") {
        let v = o.stdout_str().trim().trim_start_matches("ncdu 2.");
        let minor: u32 = v.split('.').next().unwrap_or("0").parse().unwrap_or(0);
        if minor >= 7 {
            return Some(cand);
        }
    }
    eprintln!(
        "\n********** SKIPPED: no ncdu 2.7 or later (set SDU_NCDU2 to one; no Debian release packages it) **********"
    );
    None
}

/// The JSON ncdu writes of the saved scan `file` (`ncdu -f FILE -o -`),
/// its metadata line left out.
fn ncdu_json(ncdu: &Path, dir: &Path, file: &str) -> Vec<u8> {
    let o = run(Command::new(ncdu)
        .current_dir(dir)
        .args(["-f", file, "-o", "-"]));
    assert_eq!(o.code, Some(0), "ncdu -f {file}: {o:?}");
    let nl = o.stdout.iter().position(|&c| c == b'\n').unwrap();
    o.stdout[nl + 1..].to_vec()
}

#[test]
fn ncdu2_reads_sdus_binary_and_sdu_reads_ncdu2s_formats() {
    let Some(fs) = xfs_tree() else { return };
    let Some(ncdu) = ncdu2() else { return };
    let dir = fs.path();
    // ncdu's own three: the same tree to sdu.
    for (args, name) in [
        (&["-o"][..], "n.json"),
        (&["-c", "-o"], "n.zst"),
        (&["-O"], "n.ncdu"),
    ] {
        let o = run(Command::new(&ncdu)
            .current_dir(dir)
            .args(args)
            .arg(name)
            .arg("w"));
        assert_eq!(o.code, Some(0), "ncdu {args:?}: {o:?}");
    }
    for args in [&["--json", "-a"][..], &["-a", "-B1"]] {
        let want = import_in(dir, "n.json", args);
        assert_eq!(want.code, Some(0), "{want:?}");
        for name in ["n.zst", "n.ncdu"] {
            let got = import_in(dir, name, args);
            assert_eq!(got.stdout, want.stdout, "{name} {args:?}");
        }
    }
    // sdu's binary and compressed exports: ncdu reads the tree of sdu's
    // JSON export from each, name for name and size for size.
    export(dir, &dir.join("s.json"), &[], &[os("w")]);
    export(
        dir,
        &dir.join("s.ncdu"),
        &["--export-format", "binary"],
        &[os("w")],
    );
    export(
        dir,
        &dir.join("s.zst"),
        &["--export-format", "json-zstd"],
        &[os("w")],
    );
    let want = ncdu_json(&ncdu, dir, "s.json");
    let text = String::from_utf8_lossy(&want);
    assert!(text.contains("\"name\":\"partial\""), "{text}");
    assert_eq!(ncdu_json(&ncdu, dir, "s.ncdu"), want);
    assert_eq!(ncdu_json(&ncdu, dir, "s.zst"), want);
    // ncdu converts sdu's binary export to its own: sdu reads that as
    // ncdu's JSON of the same tree.
    let o = run(Command::new(&ncdu)
        .current_dir(dir)
        .args(["-f", "s.ncdu", "-O", "back.ncdu"]));
    assert_eq!(o.code, Some(0), "{o:?}");
    let o = run(Command::new(&ncdu)
        .current_dir(dir)
        .args(["-f", "s.ncdu", "-o", "back.json"]));
    assert_eq!(o.code, Some(0), "{o:?}");
    assert_eq!(
        import_in(dir, "back.ncdu", &["--json", "-a"]).stdout,
        import_in(dir, "back.json", &["--json", "-a"]).stdout
    );
}

fn import_in(dir: &Path, file: &str, args: &[&str]) -> Output {
    let mut a: Vec<&OsStr> = args.iter().map(|s| os(s)).collect();
    a.extend([os("--import"), os(file)]);
    sdu_in(dir, &a)
}
