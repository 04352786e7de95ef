//! The `--json` document: its schema as serde types ([`JsonDocument`],
//! [`JsonEntry`], [`Path`], [`EntryType`]) and the writer that
//! streams it, one entry at a time, as `select::entries` chooses them.
//!
//! The document is a contract with scripts (its [`SCHEMA`] version is
//! bumped when a key changes meaning or goes away), so it is spelt once, as
//! types that both serialize and deserialize (for reading a document back
//! in), and documented on them, instead of as `write!` calls that only the
//! tests could check. The entries are not collected to be written: the
//! document's `entries` field is [`JsonEntries`], a sequence that serializes
//! itself by visiting the tree, and a `Layout` formatter keeps the
//! compact layout with one entry a line. Write errors come back as the
//! `io::Error` the writer returned, so a closed pipe stays
//! [`io::ErrorKind::BrokenPipe`].

use std::borrow::Cow;
use std::io::{self, Write};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::de::{self, Deserializer};
use serde::ser::{SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::ser::{CompactFormatter, Formatter};

use super::options::ReportOptions;
use super::select;
use crate::figures::{Bound, Kind, Stats};
use crate::tree::{self, Tree};

/// The JSON schema version; bumped when a key changes meaning or goes away.
/// 2: `errors` is the list of entries that could not be read (it was their
/// count, now `error_count`).
pub(crate) const SCHEMA: u32 = 2;

/// The whole `--json` document: one object, on one line except that each
/// entry starts a line of its own.
///
/// ```text
/// {"schema":2,"version":"0.1.0","roots":["src"],"entries":[
/// {"path":"src/a","type":"dir","depth":1,"apparent":4096,"total":4096,...},
/// {"path":"src","type":"dir","depth":0,"apparent":8192,"total":8192,...}
/// ],"total":{"apparent":8192,"total":8192,...},"errors":[],"error_count":0}
/// ```
///
/// Keys come in this order. `E` is what holds the entries: a `Vec` when a
/// document is read back, [`JsonEntries`] (the tree itself) when it is written.
/// A reader should ignore keys it does not know: adding one does not bump
/// [`SCHEMA`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct JsonDocument<'a, E = Vec<JsonEntry<'a>>> {
    /// `schema`: [`SCHEMA`], the version of this layout.
    pub(crate) schema: u32,
    /// `version`: the version of sdu that wrote the document.
    pub(crate) version: Cow<'a, str>,
    /// `roots`: the paths given on the command line, in order (`.` when
    /// none was given).
    pub(crate) roots: Vec<Path<'a>>,
    /// `entries`: the entries reported, in the order printed: du order
    /// (post-order, siblings by name, roots in the order given) unless
    /// `--sort`, `--top` or `--min-size` chose otherwise. `-d`, `-s` and
    /// `-a` decide which are present, as in the text table.
    pub(crate) entries: E,
    /// `total`: all roots together, every inode counted once, with its
    /// `reclaimable_exact`; present exactly when `-c` was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) total: Option<Total>,
    /// `errors`: the entries that could not be read, each with the message
    /// printed on stderr, sorted by path (schema 1 had their count here).
    pub(crate) errors: Vec<ReportedError<'a>>,
    /// `error_count`: how many entries could not be read; the exit status
    /// is 1 when it is not 0. Kept beside the list because it may be more
    /// than the list's length: a saved scan (`--import`) keeps only the
    /// count of the errors its scan met, not their paths.
    pub(crate) error_count: u64,
    /// `compressed_logical`: the logical bytes of compressed extents
    /// (FIEMAP's `ENCODED`) that exclusive, shared and reclaimable count at
    /// their uncompressed size, because FIEMAP cannot tell their size on
    /// disk; present exactly when not 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) compressed_logical: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One entry of `entries`: its path, what it is, how deep, and its figures.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct JsonEntry<'a> {
    /// `path`: as the text table prints it: the root as given, then `/` and
    /// the names below it.
    pub(crate) path: Path<'a>,
    /// `type`: `"dir"`, `"file"`, `"symlink"` or `"other"`.
    #[serde(rename = "type")]
    pub(crate) kind: EntryType,
    /// `depth`: levels below its root (a root is 0).
    pub(crate) depth: u32,
    /// The seven figures, as keys of the entry itself (`docs/figures.md`,
    /// "Definitions", defines each; sizes in bytes whatever the size flags
    /// say).
    #[serde(flatten)]
    pub(crate) figures: Stats,
    /// `reclaimable_exact`: whether `reclaimable` is what deleting the
    /// entry frees, verified (`true`), or a bound (`false`): some data it
    /// counts may be held outside the scan, or on Btrfs without root an
    /// extent may be referenced only in part (`docs/figures.md`, "Exact or
    /// a bound").
    pub(crate) reclaimable_exact: bool,
    /// `reclaimable_bound`: when `reclaimable` is a bound, its direction:
    /// `"at_most"` (deleting may free less), `"at_least"` (it may free
    /// more) or `"unknown"` (either); absent when exact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reclaimable_bound: Option<BoundWord>,
    /// `unreachable`: as root on Btrfs, the bytes on disk of extents under
    /// the entry that no file references (a rewrite or `btrfs filesystem
    /// defragment` gives them back; Exclusive and Reclaimable count them).
    /// Present exactly when not 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) unreachable: u64,
}

/// One entry of `errors`: an entry that could not be read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ReportedError<'a> {
    /// `path`: the entry, spelt as an entry's `path` is (a string, or
    /// `{"bytes": "<base64>"}` when not UTF-8).
    pub(crate) path: Path<'a>,
    /// `error`: the message sdu printed on stderr, without `sdu: ` (the
    /// path in it quoted as du quotes it).
    pub(crate) error: Cow<'a, str>,
}

/// The `-c` total: the figures and whether its Reclaimable is exact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Total {
    /// The seven figures.
    #[serde(flatten)]
    pub(crate) figures: Stats,
    /// As [`JsonEntry::reclaimable_exact`].
    pub(crate) reclaimable_exact: bool,
    /// As [`JsonEntry::reclaimable_bound`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reclaimable_bound: Option<BoundWord>,
    /// As [`JsonEntry::unreachable`].
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) unreachable: u64,
}

/// The direction of a bound Reclaimable: `reclaimable_bound` in the
/// document, the `-c` total and the `--to-free` plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum BoundWord {
    /// Deleting may free less.
    AtMost,
    /// Deleting may free more.
    AtLeast,
    /// Deleting may free less or more.
    Unknown,
}

impl BoundWord {
    /// The word of `b`; `None` when exact.
    pub(crate) fn of(b: Bound) -> Option<BoundWord> {
        match (b.at_most(), b.at_least()) {
            (false, false) => None,
            (true, false) => Some(BoundWord::AtMost),
            (false, true) => Some(BoundWord::AtLeast),
            (true, true) => Some(BoundWord::Unknown),
        }
    }
}

/// What an entry is: `type` in the document.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum EntryType {
    /// A directory.
    Dir,
    /// A regular file.
    File,
    /// A symbolic link.
    Symlink,
    /// Devices, FIFOs, sockets.
    Other,
}

/// A path: a JSON string when it is valid UTF-8, else
/// `{"bytes": "<base64>"}` (standard alphabet, padded: RFC 4648 §4), so
/// that every name round-trips exactly. Each path has one spelling: the
/// object form of a valid UTF-8 path is rejected when read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Path<'a>(pub Cow<'a, [u8]>);

/// How a [`Path`] is spelt in JSON.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum PathRepr<'a> {
    Text(Cow<'a, str>),
    Bytes { bytes: Cow<'a, str> },
}

impl Serialize for Path<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(&self.0) {
            Ok(text) => PathRepr::Text(Cow::Borrowed(text)),
            Err(_) => PathRepr::Bytes {
                bytes: Cow::Owned(BASE64.encode(&self.0)),
            },
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Path<'_> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let bytes = match PathRepr::deserialize(d)? {
            PathRepr::Text(text) => text.into_owned().into_bytes(),
            PathRepr::Bytes { bytes: b64 } => {
                let bytes = BASE64
                    .decode(b64.as_bytes())
                    .map_err(|e| de::Error::custom(format_args!("path.bytes: {e}")))?;
                if std::str::from_utf8(&bytes).is_ok() {
                    return Err(de::Error::custom(
                        "path.bytes is valid UTF-8: the path must be a plain string",
                    ));
                }
                bytes
            }
        };
        Ok(Path(Cow::Owned(bytes)))
    }
}

impl From<Kind> for EntryType {
    fn from(k: Kind) -> EntryType {
        match k {
            Kind::Dir => EntryType::Dir,
            Kind::File => EntryType::File,
            Kind::Symlink => EntryType::Symlink,
            Kind::Other => EntryType::Other,
        }
    }
}

impl From<EntryType> for Kind {
    fn from(t: EntryType) -> Kind {
        match t {
            EntryType::Dir => Kind::Dir,
            EntryType::File => Kind::File,
            EntryType::Symlink => Kind::Symlink,
            EntryType::Other => Kind::Other,
        }
    }
}

impl<'a> From<&tree::ReportEntry<'a>> for JsonEntry<'a> {
    fn from(e: &tree::ReportEntry<'a>) -> JsonEntry<'a> {
        JsonEntry {
            path: Path(Cow::Borrowed(e.path)),
            kind: e.kind.into(),
            depth: e.depth,
            figures: *e.figures,
            reclaimable_exact: e.bound.is_exact(),
            reclaimable_bound: BoundWord::of(e.bound),
            unreachable: e.unreachable,
        }
    }
}

/// The entries of a report as a sequence that serializes itself by
/// visiting the tree (`select::entries`), so that none is held longer
/// than it takes to write it.
pub(crate) struct JsonEntries<'a> {
    tree: &'a Tree,
    opts: &'a ReportOptions,
}

impl Serialize for JsonEntries<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(None)?;
        select::entries(self.tree, self.opts, |e| {
            seq.serialize_element(&JsonEntry::from(e))
        })?;
        seq.end()
    }
}

/// Writes the document of `tree`: the roots given, every entry to report,
/// the `-c` total, the entries that could not be read (`errors.list`) and
/// how many (`errors.count`).
pub(super) fn write(
    out: &mut dyn Write,
    tree: &Tree,
    roots: &[Vec<u8>],
    errors: &super::Errors<'_>,
    compressed_logical: u64,
    opts: &ReportOptions,
) -> io::Result<()> {
    let doc = JsonDocument {
        schema: SCHEMA,
        version: Cow::Borrowed(env!("CARGO_PKG_VERSION")),
        roots: roots.iter().map(|r| Path(Cow::Borrowed(&r[..]))).collect(),
        entries: JsonEntries { tree, opts },
        total: opts.grand_total.then(|| Total {
            figures: *tree.grand_total(),
            reclaimable_exact: tree.grand_bound().is_exact(),
            reclaimable_bound: BoundWord::of(tree.grand_bound()),
            unreachable: tree.unreachable(crate::records::NodeId::TOP),
        }),
        errors: errors
            .list
            .iter()
            .map(|(p, e)| ReportedError {
                path: Path(Cow::Borrowed(&p[..])),
                error: Cow::Borrowed(e),
            })
            .collect(),
        error_count: errors.count,
        compressed_logical,
    };
    write_document(out, &doc)
}

/// Writes `doc` in the [`Layout`] and a newline (its `entries`, one a
/// line).
pub(super) fn write_document(out: &mut dyn Write, doc: &impl Serialize) -> io::Result<()> {
    // serde_json writes a token at a time: buffering here makes those
    // writes static calls into a buffer, where a call through `dyn Write`
    // for each token doubled the time of the report (300,000 entries).
    let mut buf = io::BufWriter::with_capacity(1 << 16, &mut *out);
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, Layout::default());
    // An I/O error comes back as the writer's own io::Error, kind and all.
    let r = doc.serialize(&mut ser).map_err(io::Error::from);
    let r = r
        .and_then(|()| buf.write_all(b"\n"))
        .and_then(|()| buf.flush());
    if r.is_err() {
        // Drop what is still buffered rather than try to write it again.
        let _ = buf.into_parts();
    }
    r
}

/// serde_json's compact layout, except that each element of the document's
/// `entries` array starts a line of its own, and so does the `]` closing
/// it: one entry a line, for `grep`, `head` and line-oriented tools.
#[derive(Debug, Default)]
struct Layout {
    /// Objects and arrays open.
    depth: usize,
    /// A key of the document object is being written.
    in_key: bool,
    /// The last key of the document object.
    key: Vec<u8>,
    /// The depth of the `entries` array while it is open.
    lines: Option<usize>,
}

impl Formatter for Layout {
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth += 1;
        CompactFormatter.begin_object(w)
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth -= 1;
        CompactFormatter.end_object(w)
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if self.depth == 1 {
            self.in_key = true;
            self.key.clear();
        }
        CompactFormatter.begin_object_key(w, first)
    }

    fn end_object_key<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.in_key = false;
        CompactFormatter.end_object_key(w)
    }

    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        if self.in_key {
            self.key.extend_from_slice(fragment.as_bytes());
        }
        CompactFormatter.write_string_fragment(w, fragment)
    }

    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth += 1;
        if self.depth == 2 && self.key == b"entries" {
            self.lines = Some(self.depth);
        }
        CompactFormatter.begin_array(w)
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        let lines = self.lines == Some(self.depth);
        self.depth -= 1;
        if lines {
            self.lines = None;
            w.write_all(b"\n")?;
        }
        CompactFormatter.end_array(w)
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if self.lines == Some(self.depth) {
            w.write_all(if first { b"\n" } else { b",\n" })
        } else {
            CompactFormatter.begin_array_value(w, first)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &[u8], kind: EntryType, depth: u32, n: u64) -> JsonEntry<'static> {
        JsonEntry {
            path: Path(Cow::Owned(path.to_vec())),
            kind,
            depth,
            figures: Stats {
                apparent: n,
                total: n + 1,
                exclusive: n + 2,
                shared: n + 3,
                reclaimable: n + 4,
                files: 5,
                dirs: 6,
                time: None,
            },
            reclaimable_exact: n != 20,
            reclaimable_bound: (n == 20).then_some(BoundWord::AtLeast),
            unreachable: 0,
        }
    }

    fn doc(entries: Vec<JsonEntry<'static>>, total: Option<Stats>) -> JsonDocument<'static> {
        JsonDocument {
            schema: SCHEMA,
            version: Cow::Borrowed("0.1.0"),
            roots: vec![Path(Cow::Borrowed(b"r")), Path(Cow::Borrowed(b"\xff"))],
            entries,
            total: total.map(|figures| Total {
                figures,
                reclaimable_exact: true,
                reclaimable_bound: None,
                unreachable: 0,
            }),
            errors: vec![ReportedError {
                path: Path(Cow::Borrowed(b"r/\xff")),
                error: Cow::Borrowed("cannot read directory 'r/'$'\\377': Permission denied"),
            }],
            error_count: 2,
            compressed_logical: 0,
        }
    }

    fn written(d: &JsonDocument<'_>) -> String {
        let mut v = Vec::new();
        write_document(&mut v, d).unwrap();
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn layout_is_compact_with_one_entry_a_line() {
        let d = doc(
            vec![
                entry(b"r/a\"\n", EntryType::File, 1, 10),
                entry(b"r", EntryType::Dir, 0, 20),
            ],
            Some(Stats::default()),
        );
        assert_eq!(
            written(&d),
            concat!(
                r#"{"schema":2,"version":"0.1.0","roots":["r",{"bytes":"/w=="}],"entries":["#,
                "\n",
                r#"{"path":"r/a\"\n","type":"file","depth":1,"apparent":10,"total":11,"#,
                r#""exclusive":12,"shared":13,"reclaimable":14,"files":5,"dirs":6,"#,
                r#""reclaimable_exact":true},"#,
                "\n",
                r#"{"path":"r","type":"dir","depth":0,"apparent":20,"total":21,"#,
                r#""exclusive":22,"shared":23,"reclaimable":24,"files":5,"dirs":6,"#,
                r#""reclaimable_exact":false,"reclaimable_bound":"at_least"}"#,
                "\n",
                r#"],"total":{"apparent":0,"total":0,"exclusive":0,"shared":0,"#,
                r#""reclaimable":0,"files":0,"dirs":0,"reclaimable_exact":true},"#,
                r#""errors":[{"path":{"bytes":"ci//"},"#,
                r#""error":"cannot read directory 'r/'$'\\377': Permission denied"}],"#,
                r#""error_count":2}"#,
                "\n"
            )
        );
        // No entries: the brackets still stand on lines of their own.
        assert_eq!(
            written(&doc(vec![], None)),
            "{\"schema\":2,\"version\":\"0.1.0\",\"roots\":[\"r\",{\"bytes\":\"/w==\"}],\
             \"entries\":[\n],\"errors\":[{\"path\":{\"bytes\":\"ci//\"},\
             \"error\":\"cannot read directory 'r/'$'\\\\377': Permission denied\"}],\
             \"error_count\":2}\n"
        );
    }

    #[test]
    fn documents_round_trip() {
        let d = doc(
            vec![
                entry(b"r/\xc3\x28", EntryType::Symlink, 1, 1),
                entry(b"r/\x80\xff\xfe", EntryType::Other, 1, 2),
                entry("r/é \u{1f980}".as_bytes(), EntryType::File, 1, 3),
                entry(b"r", EntryType::Dir, 0, 4),
            ],
            Some(Stats::default()),
        );
        let back: JsonDocument<'_> = serde_json::from_str(&written(&d)).unwrap();
        assert_eq!(back, d);
        let back: JsonDocument<'_> = serde_json::from_str(&written(&doc(vec![], None))).unwrap();
        assert_eq!(back, doc(vec![], None));
    }

    #[test]
    fn non_utf8_paths_are_standard_padded_base64() {
        let json = |p: &[u8]| serde_json::to_string(&Path(Cow::Borrowed(p))).unwrap();
        assert_eq!(json(b"\xff"), r#"{"bytes":"/w=="}"#);
        assert_eq!(json(b"\xfb\xff"), r#"{"bytes":"+/8="}"#);
        assert_eq!(json(b"a\xffb"), r#"{"bytes":"Yf9i"}"#);
        assert_eq!(json("é".as_bytes()), r#""é""#);
        let read = |s: &str| serde_json::from_str::<Path<'_>>(s).map(|p| p.0.into_owned());
        assert_eq!(read(r#"{"bytes":"+/8="}"#).unwrap(), b"\xfb\xff");
        // One spelling per path, and strict base64.
        assert!(read(r#"{"bytes":"Zm9v"}"#).is_err());
        assert!(read(r#"{"bytes":"/w"}"#).is_err());
        assert!(read(r#"{"bytes":"-_8="}"#).is_err());
    }

    #[test]
    fn entry_types_are_the_kind_names() {
        for k in [Kind::Dir, Kind::File, Kind::Symlink, Kind::Other] {
            let t = EntryType::from(k);
            assert_eq!(
                serde_json::to_string(&t).unwrap(),
                format!("\"{}\"", k.as_str())
            );
            assert_eq!(Kind::from(t), k);
        }
    }

    #[test]
    fn write_errors_keep_their_kind() {
        /// Takes `room` bytes, then fails with `kind`.
        struct Fails {
            room: usize,
            kind: io::ErrorKind,
        }
        impl Write for Fails {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                if self.room == 0 {
                    return Err(self.kind.into());
                }
                let n = b.len().min(self.room);
                self.room -= n;
                Ok(n)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let d = doc(
            vec![
                entry(b"r/\xff", EntryType::File, 1, 1),
                entry(b"r", EntryType::Dir, 0, 2),
            ],
            Some(Stats::default()),
        );
        let len = written(&d).len();
        for kind in [io::ErrorKind::BrokenPipe, io::ErrorKind::StorageFull] {
            for room in 0..len {
                let e = write_document(&mut Fails { room, kind }, &d).unwrap_err();
                assert_eq!(e.kind(), kind, "failing after {room} bytes");
            }
            write_document(&mut Fails { room: len, kind }, &d).unwrap();
        }
    }
}
