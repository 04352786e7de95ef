//! Saved scans: `--export FILE` writes a scan, `--import FILE` reads one in
//! place of scanning, and every report, `--to-free` included, then works
//! on it as on the live scan.
//!
//! The file is ncdu's JSON export (<https://dev.yorhel.nl/ncdu/jsonfmt>),
//! so that `ncdu -f FILE` browses it:
//!
//! ```text
//! [1,2,{"progname":"sdu","progver":"0.1.0","timestamp":1700000000,
//!       "sdu":{"format":1,"nodes":4,"rules":{..},"walk":{..},"errors":0}},
//! [{"name":"work","asize":6,"dsize":4096,"sdu":{"own":[..],"apparent":..,"total":..,..}},
//! {"name":"a","asize":1048576,"dsize":1048576,"sdu":{"apparent":..,..}},
//! {"name":"b","asize":5,"dsize":4096,"dev":2049,"ino":131,"nlink":2,"hlnkc":true,"sdu":{..}}],
//! {"sdu":"records","links":[..],"files":[..],"segments":[..],"units":[..],"spaces":[..],"stops":[]}]
//! ```
//!
//! - A directory is an array, its info object first; anything else is an
//!   info object. ncdu's keys are the entry's own: `name` (its bytes as
//!   they are, valid UTF-8 or not, escaping only `"`, `\` and control
//!   characters, as ncdu writes names), `asize` and `dsize` (its inode's
//!   apparent and allocated bytes, left out when 0), `dev`, `ino`, `nlink`
//!   and `hlnkc` for a hardlinked file, `notreg` for what is neither a
//!   file nor a directory, `read_error` for a directory not read in full.
//! - Everything sdu adds is in keys and elements ncdu skips: in each info
//!   object, `"sdu"` holds the entry's figures as the scan rolled them up
//!   (`apparent`, `total`, `exclusive`, `shared`, `reclaimable`, `files`,
//!   `dirs`, the keys of `--json`), and what the walk recorded of it when
//!   a reader could not tell it from ncdu's keys: `own` (its own figures,
//!   an array as in the records below), `order` (its position in its
//!   directory's listing, when not its position in the array), `type`
//!   (`symlink` or `other`), `alone` (a root inside another root, counted
//!   apart), `error` (why a directory was not read in full, as the message
//!   said it) and `unread` (nothing of it was read). Several roots, or a root that is not a directory, sit in a
//!   directory of their own marked `"sdu":{"top":true}`.
//! - After the tree, one more element: the records that the roll-up reads
//!   (links of hardlinked inodes, files with shared extents, the swept
//!   segments and reclaim units, the granularity of each extent space), so
//!   that `--import` rolls the tree up again by the rules it is given
//!   (`-S`, du's counting), and `--to-free` has what sets of entries free.
//!   Nodes are numbered in the order the file lists them, from 1 (0 is the
//!   top above the roots).
//!
//! The export always records every file (as `-a` does); an import without
//! `-a` folds the files back into their directories, which gives the
//! records a scan without `-a` gives.

mod bin_read;
mod bin_write;
mod binfmt;
mod decode;
pub(crate) mod import;
mod name_rules;
mod order;
mod rows;
pub(crate) mod since;
mod syntax;
mod write;

/// Reads the saved scan `file` (`-`: standard input); with `fold`, its
/// files folded into their directories as it is read ([`decode::read`]).
///
/// # Errors
/// What is wrong with it, as a message: it cannot be opened, is a
/// directory, or is no saved scan (see [`decode::read`]).
pub(crate) fn read_file(file: &[u8], fold: bool) -> Result<Saved, String> {
    use std::os::fd::AsFd;
    use std::os::unix::ffi::OsStrExt;
    // A directory reads as EISDIR at line 1, column 1: say what it is.
    let directory = |fd: std::os::fd::BorrowedFd<'_>| {
        rustix::fs::fstat(fd).is_ok_and(|st| {
            rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Directory
        })
    };
    let is_dir = || "is a directory, not a saved scan".to_string();
    if file == b"-" {
        let stdin = std::io::stdin();
        if directory(stdin.as_fd()) {
            return Err(is_dir());
        }
        not_a_report(&mut stdin.lock(), fold)
    } else {
        let f = std::fs::File::open(std::ffi::OsStr::from_bytes(file))
            .map_err(|e| crate::error::io_text(&e))?;
        if directory(f.as_fd()) {
            return Err(is_dir());
        }
        // A binary export is read where its index says, not held whole.
        let mut head = [0; binfmt::SIGNATURE.len()];
        let binary = std::os::unix::fs::FileExt::read_exact_at(&f, &mut head, 0).is_ok()
            && head == *binfmt::SIGNATURE;
        if binary {
            let len = f.metadata().map_err(|e| crate::error::io_text(&e))?.len();
            return bin_read::read(bin_read::Bytes::File(f, len), fold);
        }
        not_a_report(&mut std::io::BufReader::with_capacity(1 << 16, f), fold)
    }
}

/// zstd's frame magic: the file is compressed (`ncdu -c`).
const ZSTD_MAGIC: &[u8; 4] = b"\x28\xb5\x2f\xfd";

/// Reads a saved scan from `r`, of any format, told by its first bytes:
/// ncdu 2's binary export, zstd-compressed JSON, or JSON; a `--json`
/// report (or `--compare`'s), which is not one, is called what it is.
fn not_a_report(r: &mut dyn std::io::BufRead, fold: bool) -> Result<Saved, String> {
    use std::io::Read;
    // Enough to tell every format (and a report) by.
    let mut head = Vec::with_capacity(32);
    (&mut *r)
        .take(32)
        .read_to_end(&mut head)
        .map_err(|e| crate::error::io_text(&e))?;
    if head.starts_with(binfmt::SIGNATURE) {
        let mut data = head;
        r.read_to_end(&mut data)
            .map_err(|e| crate::error::io_text(&e))?;
        return bin_read::read(bin_read::Bytes::Held(data), fold);
    }
    if !head.is_empty() && binfmt::SIGNATURE.starts_with(&head) {
        return Err("the binary export is truncated (it ends within its signature)".into());
    }
    if !head.is_empty() && head.len() < 4 && ZSTD_MAGIC.starts_with(&head) {
        return Err(
            "the zstd-compressed file is truncated (it ends within its magic number)".into(),
        );
    }
    let zstd = head.starts_with(ZSTD_MAGIC);
    let report = head.starts_with(b"{\"schema\":") || head.starts_with(b"{\"compare_schema\":");
    let r = std::io::Cursor::new(head).chain(r);
    if zstd {
        let z = zstd::stream::read::Decoder::new(r).map_err(|e| crate::error::io_text(&e))?;
        let z = EndsEarly(z);
        return not_a_report(&mut std::io::BufReader::with_capacity(1 << 16, z), fold)
            .map_err(|e| format!("(zstd-compressed) {e}"));
    }
    if report {
        return Err("is a --json report, not a saved scan (sdu --export FILE saves one)".into());
    }
    decode::read(r, fold).map_err(|e| e.to_string())
}
pub(crate) use write::write;

/// A zstd stream whose end before its frame's is called a truncated file.
struct EndsEarly<R>(R);

impl<R: std::io::Read> std::io::Read for EndsEarly<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                std::io::Error::new(
                    e.kind(),
                    "the zstd stream ends early (the file is truncated)",
                )
            } else {
                e
            }
        })
    }
}

/// The format `--export` writes (`--export-format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// ncdu's JSON (`ncdu -o`).
    Json,
    /// ncdu's JSON compressed with zstd (`ncdu -c -o`).
    JsonZstd,
    /// ncdu 2's binary export (`ncdu -O`).
    Binary,
}

/// Writes the saved scan of `x` to `w` in `format` (buffer it).
///
/// # Errors
/// Those of `w`.
pub(crate) fn write_as(
    w: &mut impl std::io::Write,
    x: &Export<'_>,
    format: Format,
) -> std::io::Result<()> {
    match format {
        Format::Json => write(w, x),
        Format::Binary => bin_write::write(w, x),
        Format::JsonZstd => {
            let mut z = zstd::stream::write::Encoder::new(w, bin_write::LEVEL)?;
            write(&mut z, x)?;
            z.finish()?.flush()
        }
    }
}

use crate::extents::Sweep;
use crate::figures::Bound;
use crate::figures::TimeField;
use crate::probe::Granularity;
use crate::records::{Copies, Exactness, FileRec, Files, Link, NodeId, Nodes, ReadError};
use crate::tree::{Rules, Tree};

/// The version of sdu's part of the file (`"sdu":{"format":...}`).
pub(crate) const FORMAT: u32 = 2;

/// How a saved scan was walked: the walk's options it records.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WalkRecord {
    /// `-L`.
    pub(crate) follow_links: bool,
    /// `-H`.
    pub(crate) follow_args: bool,
    /// `-x`.
    pub(crate) one_file_system: bool,
    /// `-l`.
    pub(crate) count_links: bool,
    /// Some `--exclude` was given.
    pub(crate) excludes: bool,
    /// `--time`: the time recorded.
    pub(crate) time: Option<TimeField>,
}

/// What `--export` writes: a scan's tree and the records it was rolled up
/// from.
pub(crate) struct Export<'a> {
    /// The tree, rolled up by `rules`.
    pub(crate) tree: &'a Tree,
    /// The walk's links.
    pub(crate) links: &'a [Link],
    /// The files with shared extents.
    pub(crate) files: &'a [FileRec],
    /// The copies of files, sorted by the file they copy: each is written
    /// as a file of its own, mapping what its file maps.
    pub(crate) copies: &'a Copies,
    /// The swept segments and units.
    pub(crate) sweep: &'a Sweep,
    /// How each extent space frees shared data.
    pub(crate) granularity: &'a dyn Fn(u32) -> Granularity,
    /// The rules the tree's figures follow.
    pub(crate) rules: Rules,
    /// What the scan could verify.
    pub(crate) exact: &'a Exactness,
    /// How the scan walked.
    pub(crate) walk: WalkRecord,
    /// How many entries could not be read.
    pub(crate) errors: u64,
    /// The directories not read in full, sorted by node.
    pub(crate) read_errors: &'a [ReadError],
    /// Whether some root lies inside another: du's counting and sdu's
    /// then walk differently.
    pub(crate) overlap: bool,
    /// The files' extent maps, for a later `--since` (none from an import).
    pub(crate) mappings: &'a crate::records::mappings::MapBuf,
    /// When the scan was made, in seconds since the epoch ([`timestamp`]).
    pub(crate) timestamp: u64,
}

/// The time a saved scan says it was made: `SOURCE_DATE_EPOCH` when set
/// and not empty (so that a scan of an unchanged tree is the same file,
/// byte for byte), else now.
///
/// # Errors
/// `SOURCE_DATE_EPOCH` is set but not a number of seconds.
pub(crate) fn timestamp() -> Result<u64, String> {
    match std::env::var_os("SOURCE_DATE_EPOCH").filter(|v| !v.is_empty()) {
        Some(v) => v.to_str().and_then(|s| s.parse().ok()).ok_or_else(|| {
            format!(
                "SOURCE_DATE_EPOCH is {}, not a number of seconds since the epoch",
                crate::quote::quote(v.as_encoded_bytes())
            )
        }),
        None => Ok(std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())),
    }
}

/// A scan read back: the records to roll a tree up from.
#[derive(Debug, Default)]
pub(crate) struct Saved {
    /// The nodes, by id, as compact as a walk keeps them.
    pub(crate) nodes: Nodes,
    /// The links of inodes counted once per directory.
    pub(crate) links: Vec<Link>,
    /// The files with shared extents, by file id, packed as a walk keeps
    /// them.
    pub(crate) files: Files,
    /// The segments and units.
    pub(crate) sweep: Sweep,
    /// Each extent space, how it frees shared data, and whether its units
    /// free what they count (a file of format 1 does not say: a bound).
    pub(crate) spaces: Vec<(u32, Granularity, Bound)>,
    /// Nodes whose own Reclaimable is a bound (`"bound"`), by id.
    pub(crate) bounds: Vec<(NodeId, Bound)>,
    /// Bytes no file references credited to a node (`"unreachable"`).
    pub(crate) unreachable: Vec<(NodeId, u64)>,
    /// The format the file was written in.
    pub(crate) format: u32,
    /// Where du's traversal stopped (a directory moved).
    pub(crate) stops: Vec<NodeId>,
    /// Entries the scan could not read.
    pub(crate) errors: u64,
    /// The directories the scan did not read in full (`"read_error"`), by
    /// id.
    pub(crate) read_errors: Vec<ReadError>,
    /// The timestamp the scan recorded (`--time`), if any.
    pub(crate) time: Option<TimeField>,
    /// Whether the walk followed du's rules (`--du`).
    pub(crate) du: bool,
    /// Whether some root lay inside another (then du's counting needs a
    /// walk by du's rules, and sdu's one without).
    pub(crate) overlap: bool,
    /// Whether sdu wrote the file; else it is ncdu's own (or another
    /// tool's), without sharing figures.
    pub(crate) by_sdu: bool,
    /// While a read folds files into their directories: how.
    pub(crate) folding: Option<decode::Fold>,
}

impl Saved {
    /// The root names, as given to the scan, in order.
    pub(crate) fn roots(&self) -> Vec<Vec<u8>> {
        // At depth 0: under the top, or alone (counting up the parents
        // would cost a deep chain the square of its depth).
        (self.nodes.ids().skip(1))
            .filter(|&id| {
                let p = self.nodes.parent(id);
                p == NodeId::TOP || p.is_none()
            })
            .map(|id| self.nodes.name(id).to_vec())
            .collect()
    }

    /// Makes the records' node ids, which number every entry of the file,
    /// the ids of the nodes kept (`map`, by entry): a file folded into its
    /// directory has its links credited there, at its position in it
    /// (`order`, by entry; `u32::MAX` for an entry with a node of its own).
    pub(crate) fn remap(&mut self, map: &[NodeId], order: &[u32]) {
        for l in &mut self.links {
            let o = order[l.node.index()];
            if o != u32::MAX && l.entry.is_none() {
                l.entry = Some(o);
            }
            l.node = map[l.node.index()];
        }
        self.files.map_nodes(|n| map[n.index()]);
        for s in &mut self.stops {
            *s = map[s.index()];
        }
        for b in &mut self.bounds {
            b.0 = map[b.0.index()];
        }
        for u in &mut self.unreachable {
            u.0 = map[u.0.index()];
        }
        for e in &mut self.read_errors {
            e.node = map[e.node.index()];
        }
        crate::records::merge_bounds(&mut self.bounds);
    }

    /// What the roll-up needs to tell exact figures from bounds. A file of
    /// format 1, or one sdu did not write (ncdu's own, where Reclaimable
    /// is Total for want of anything known of sharing), says nothing of
    /// it: every figure there is a bound, of unknown direction.
    pub(crate) fn exactness(&self) -> Exactness {
        if !self.by_sdu || self.format < 2 {
            return Exactness {
                spaces: Vec::new(),
                other: Bound::UNKNOWN,
                nodes: (0..self.nodes.len())
                    .map(|i| (NodeId::new(i), Bound::UNKNOWN))
                    .collect(),
                ..Exactness::default()
            };
        }
        let n = self
            .spaces
            .iter()
            .map(|s| s.0 as usize + 1)
            .max()
            .unwrap_or(0);
        let mut spaces = vec![Bound::AT_MOST; n];
        for &(fs, _, b) in &self.spaces {
            spaces[fs as usize] = b;
        }
        Exactness {
            spaces,
            other: Bound::AT_MOST,
            nodes: self.bounds.clone(),
            ..Exactness::default()
        }
    }
}

/// The name of a `--time` field in the file.
fn time_name(t: TimeField) -> &'static str {
    match t {
        TimeField::Modification => "mtime",
        TimeField::Access => "atime",
        TimeField::Status => "ctime",
    }
}
