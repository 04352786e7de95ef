//! The layouts on a real directory tree (a temporary directory), the
//! records' formats, malformed and hostile records.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use super::{Layout, MOST, Tool, describe, parse_date, parse_number, snapper, timeshift};

/// info.xml as snapper writes it for a post snapshot with userdata.
const SNAPPER_POST: &str = r#"<?xml version="1.0"?>
<snapshot>
  <type>post</type>
  <num>42</num>
  <date>2024-03-05 07:08:09</date>
  <pre_num>41</pre_num>
  <description>zypp(zypper) &amp; friends &lt;update&gt; caf&#233; &#x263A;</description>
  <cleanup>number</cleanup>
  <userdata>
    <key>important</key>
    <value>yes</value>
  </userdata>
  <userdata>
    <key>note</key>
    <value><![CDATA[a <raw> value]]></value>
  </userdata>
</snapshot>
"#;

/// info.json as timeshift writes it in Btrfs mode.
const TIMESHIFT: &str = r#"{
  "id" : "2024-03-05_07-08-09",
  "name" : "2024-03-05_07-08-09",
  "created" : "1709622489",
  "sys-uuid" : "3681350c-08e5-4037-9ccc-12a79cf920fb",
  "sys-distro" : "Linux Mint 21.3",
  "app-version" : "24.01.1",
  "tags" : "D W",
  "comments" : "before the kernel update",
  "type" : "btrfs",
  "subvolumes" : {
    "@" : "3681350c-08e5-4037-9ccc-12a79cf920fb",
    "@home" : "3681350c-08e5-4037-9ccc-12a79cf920fb"
  }
}
"#;

/// 2024-03-05 07:08:09 UTC.
const WHEN: i64 = 1_709_622_489;

/// `.snapshots/<n>/snapshot` under `root` with `info` as its info.xml.
fn snapper_tree(root: &Path, n: &str, info: Option<&str>) -> PathBuf {
    let dir = root.join(".snapshots").join(n);
    fs::create_dir_all(dir.join("snapshot")).unwrap();
    if let Some(info) = info {
        fs::write(dir.join("info.xml"), info).unwrap();
    }
    dir.join("snapshot")
}

/// `timeshift-btrfs/snapshots/<date>/@` and `@home` under `root`.
fn timeshift_tree(root: &Path, date: &str, info: Option<&str>) -> PathBuf {
    let dir = root.join("timeshift-btrfs/snapshots").join(date);
    fs::create_dir_all(dir.join("@")).unwrap();
    fs::create_dir_all(dir.join("@home")).unwrap();
    if let Some(info) = info {
        fs::write(dir.join("info.json"), info).unwrap();
    }
    dir
}

#[test]
fn both_layouts_built_by_hand_are_read() {
    let tmp = tempfile::tempdir().unwrap();
    let snap = snapper_tree(tmp.path(), "42", Some(SNAPPER_POST));
    let got = describe(&snap).unwrap();
    assert_eq!(
        got,
        Layout {
            tool: Tool::Snapper,
            number: Some(42),
            date: WHEN,
            description: "zypp(zypper) & friends <update> café ☺".into(),
            tags: vec!["post".into(), "number".into()],
            pre_number: Some(41),
            userdata: vec![
                ("important".into(), "yes".into()),
                ("note".into(), "a <raw> value".into())
            ],
            subvolume: None,
        }
    );
    assert_eq!(got.tool.name(), "snapper");

    let dir = timeshift_tree(tmp.path(), "2024-03-05_07-08-09", Some(TIMESHIFT));
    for sub in ["@", "@home"] {
        let got = describe(&dir.join(sub)).unwrap();
        assert_eq!(
            got,
            Layout {
                tool: Tool::Timeshift,
                number: None,
                date: WHEN,
                description: "before the kernel update".into(),
                tags: vec!["daily".into(), "weekly".into()],
                pre_number: None,
                userdata: Vec::new(),
                subvolume: Some(sub.into()),
            }
        );
    }
    // The directories themselves, and paths beside them, are no snapshot.
    assert_eq!(describe(&dir), None);
    assert_eq!(describe(snap.parent().unwrap()), None);
    assert_eq!(describe(&tmp.path().join(".snapshots/42/info.xml")), None);
    assert_eq!(describe(Path::new("/")), None);
    assert_eq!(describe(Path::new("snapshot")), None);
    assert_eq!(describe(Path::new("")), None);
}

#[test]
fn a_single_snapshot_without_cleanup_or_userdata() {
    let xml = "<snapshot><type>single</type><num>1</num><date>2023-12-31 23:59:59</date>\
               <description>first root filesystem</description></snapshot>";
    let got = snapper(xml.as_bytes(), 1).unwrap();
    assert_eq!(got.tags, ["single"]);
    assert_eq!(got.date, 1_704_067_199);
    assert_eq!(got.description, "first root filesystem");
    assert_eq!((got.pre_number, got.userdata.len()), (None, 0));
    // Without a description, and with an empty cleanup.
    let xml = "<snapshot><num>0</num><type>single</type><date>1970-01-01 00:00:00</date><cleanup/></snapshot>";
    let got = snapper(xml.as_bytes(), 0).unwrap();
    assert_eq!(
        (got.date, got.description.as_str(), got.tags.len()),
        (0, "", 1)
    );
}

#[test]
fn malformed_info_xml_is_none() {
    let ok = "<snapshot><type>single</type><num>7</num><date>2024-02-29 12:00:00</date></snapshot>";
    assert!(snapper(ok.as_bytes(), 7).is_some());
    for bad in [
        "",
        "not xml at all",
        "<snapshot>",
        "<snapshot><type>single</type><num>7</num><date>2024-02-29 12:00:00</date>",
        // Another snapshot's record, or a number that is no number.
        "<snapshot><type>single</type><num>8</num><date>2024-02-29 12:00:00</date></snapshot>",
        "<snapshot><type>single</type><num>07</num><date>2024-02-29 12:00:00</date></snapshot>",
        "<snapshot><type>single</type><num>-7</num><date>2024-02-29 12:00:00</date></snapshot>",
        // Missing or odd fields.
        "<snapshot><type>single</type><num>7</num></snapshot>",
        "<snapshot><type>odd</type><num>7</num><date>2024-02-29 12:00:00</date></snapshot>",
        "<snapshot><type>single</type><num>7</num><date>2023-02-29 12:00:00</date></snapshot>",
        "<snapshot><type>single</type><num>7</num><date>2024-02-29T12:00:00</date></snapshot>",
        "<other><type>single</type><num>7</num><date>2024-02-29 12:00:00</date></other>",
        // Mismatched tags, an unknown entity, a DTD, trailing content.
        "<snapshot><type>single</num><num>7</type><date>2024-02-29 12:00:00</date></snapshot>",
        "<snapshot><type>single</type><num>7</num><date>2024-02-29 12:00:00</date><description>&bomb;</description></snapshot>",
        "<!DOCTYPE snapshot [<!ENTITY a \"b\">]><snapshot><type>single</type><num>7</num><date>2024-02-29 12:00:00</date></snapshot>",
        "<snapshot><type>single</type><num>7</num><date>2024-02-29 12:00:00</date></snapshot><snapshot/>",
        "<snapshot><type>single</type><num>7</num><date>2024-02-29 12:00:00</date><userdata><value>v</value></userdata></snapshot>",
        "<snapshot><type>single</type><num>7</num><date>2024-02-29 12:00:00</date><pre_num>x</pre_num></snapshot>",
    ] {
        assert_eq!(snapper(bad.as_bytes(), 7), None, "{bad}");
    }
    // Nested past the cap: refused, not a stack overflow.
    let deep = format!("{}{}", "<a>".repeat(100_000), "</a>".repeat(100_000));
    assert_eq!(snapper(deep.as_bytes(), 7), None);
    // Bytes that are not UTF-8 do not panic.
    assert_eq!(snapper(b"<snapshot>\xff\xfe</snapshot>", 7), None);
}

#[test]
fn timeshift_tags_dates_and_malformed_info_json() {
    let got = timeshift(
        br#"{"created":"1709622489","tags":"O B H D W M","comments":""}"#,
        0,
        "@".into(),
    )
    .unwrap();
    assert_eq!(
        got.tags,
        ["ondemand", "boot", "hourly", "daily", "weekly", "monthly"]
    );
    assert_eq!(got.date, WHEN);
    // Without `created`, the directory's name gives the date.
    let got = timeshift(b"{}", 5, "@".into()).unwrap();
    assert_eq!(
        (got.date, got.tags.len(), got.description.as_str()),
        (5, 0, "")
    );
    for bad in [
        &b""[..],
        b"[]",
        b"{",
        br#"{"created":"yesterday"}"#,
        br#"{"created":true}"#,
        br#"{"tags":"D X"}"#,
        br#"{"tags":["D"]}"#,
        br#"{"comments":3}"#,
        b"\xff",
    ] {
        assert_eq!(
            timeshift(bad, 0, "@".into()),
            None,
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
}

#[test]
fn dates_and_numbers() {
    assert_eq!(parse_date(b"2024-03-05 07:08:09", b' ', b':'), Some(WHEN));
    assert_eq!(parse_date(b"2024-03-05_07-08-09", b'_', b'-'), Some(WHEN));
    assert_eq!(
        parse_date(b"2000-02-29 00:00:00", b' ', b':'),
        Some(951_782_400)
    );
    assert_eq!(parse_date(b"1900-02-29 00:00:00", b' ', b':'), None);
    assert_eq!(parse_date(b"2024-13-01 00:00:00", b' ', b':'), None);
    assert_eq!(parse_date(b"2024-12-01 24:00:00", b' ', b':'), None);
    assert_eq!(parse_date(b"2024-12-01 00:00:0", b' ', b':'), None);
    assert_eq!(
        parse_date("2024-12-01 00:00:0é".as_bytes(), b' ', b':'),
        None
    );
    assert_eq!(parse_number(b"18446744073709551615"), Some(u64::MAX));
    assert_eq!(parse_number(b"18446744073709551616"), None);
    assert_eq!(parse_number(b"+1"), None);
}

#[test]
fn a_symlinked_fifo_large_or_missing_record_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside.xml");
    fs::write(&outside, SNAPPER_POST).unwrap();

    // A symlink planted as info.xml is not followed.
    let snap = snapper_tree(tmp.path(), "42", None);
    symlink(&outside, snap.with_file_name("info.xml")).unwrap();
    assert_eq!(describe(&snap), None);

    // Nor is a symlink as `.snapshots/<N>` itself.
    let real = snapper_tree(&tmp.path().join("real"), "42", Some(SNAPPER_POST));
    assert!(describe(&real).is_some());
    let linked = tmp.path().join("linked/.snapshots");
    fs::create_dir_all(&linked).unwrap();
    symlink(real.parent().unwrap(), linked.join("42")).unwrap();
    assert_eq!(describe(&linked.join("42/snapshot")), None);
    // Nor one as `.snapshots` or `timeshift-btrfs`; one above them is the
    // path as given, resolved as a root is.
    let planted = tmp.path().join("planted");
    fs::create_dir(&planted).unwrap();
    symlink(
        real.parent().unwrap().parent().unwrap(),
        planted.join(".snapshots"),
    )
    .unwrap();
    assert_eq!(describe(&planted.join(".snapshots/42/snapshot")), None);
    let ts = timeshift_tree(
        &tmp.path().join("ts"),
        "2024-03-05_07-08-09",
        Some(TIMESHIFT),
    );
    assert!(describe(&ts.join("@")).is_some());
    symlink(
        tmp.path().join("ts/timeshift-btrfs"),
        planted.join("timeshift-btrfs"),
    )
    .unwrap();
    assert_eq!(
        describe(&planted.join("timeshift-btrfs/snapshots/2024-03-05_07-08-09/@")),
        None
    );
    symlink(tmp.path().join("real"), tmp.path().join("above")).unwrap();
    assert!(describe(&tmp.path().join("above/.snapshots/42/snapshot")).is_some());

    // A FIFO does not block the read.
    let snap = snapper_tree(&tmp.path().join("fifo"), "42", None);
    rustix::fs::mknodat(
        rustix::fs::CWD,
        snap.with_file_name("info.xml"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    assert_eq!(describe(&snap), None);

    // A directory as info.json, a record too large, none at all.
    let dir = timeshift_tree(&tmp.path().join("d"), "2024-03-05_07-08-09", None);
    fs::create_dir(dir.join("info.json")).unwrap();
    assert_eq!(describe(&dir.join("@")), None);
    let padded = format!("{}{}", " ".repeat(MOST as usize), TIMESHIFT);
    let dir = timeshift_tree(
        &tmp.path().join("big"),
        "2024-03-05_07-08-09",
        Some(&padded),
    );
    assert_eq!(describe(&dir.join("@")), None);
    let dir = timeshift_tree(&tmp.path().join("none"), "2024-03-05_07-08-09", None);
    assert_eq!(describe(&dir.join("@")), None);
    assert_eq!(
        describe(&snapper_tree(&tmp.path().join("none"), "1", None)),
        None
    );
}

#[test]
fn odd_names_are_no_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    for n in ["", "x", "01", "-1", "1 ", "99999999999999999999"] {
        if n.is_empty() {
            continue;
        }
        let snap = snapper_tree(tmp.path(), n, Some(SNAPPER_POST));
        assert_eq!(describe(&snap), None, "{n:?}");
    }
    for d in [
        "2024-03-05 07-08-09",
        "2024-03-05_07:08:09",
        "latest",
        "2024-03-05_07-08-09x",
    ] {
        let dir = timeshift_tree(tmp.path(), d, Some(TIMESHIFT));
        assert_eq!(describe(&dir.join("@")), None, "{d:?}");
    }
    // A subvolume not named `@…`, or under another tool's directory.
    let dir = timeshift_tree(tmp.path(), "2024-03-05_07-08-09", Some(TIMESHIFT));
    fs::create_dir(dir.join("home")).unwrap();
    assert_eq!(describe(&dir.join("home")), None);
    let other = tmp.path().join("timeshift/snapshots/2024-03-05_07-08-09");
    fs::create_dir_all(other.join("@")).unwrap();
    fs::write(other.join("info.json"), TIMESHIFT).unwrap();
    assert_eq!(describe(&other.join("@")), None);
    // A name that is not UTF-8.
    use std::os::unix::ffi::OsStrExt;
    let odd = dir.join(std::ffi::OsStr::from_bytes(b"@\xff"));
    fs::create_dir(&odd).unwrap();
    assert_eq!(describe(&odd), None);
}
