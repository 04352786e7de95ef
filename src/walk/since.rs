//! `--since SCAN`: files unchanged since a saved scan reuse the extent
//! maps it saved, and are neither opened nor mapped; and `--export`: the
//! maps FIEMAP reads, kept for the next `--since`.
//!
//! A file is unchanged when its device, inode, ctime, size and blocks are
//! those saved ([`MapKey`]). That proves its data was not written, but not
//! that its map is the same: a dedupe (`FIDEDUPERANGE`) moves a file's
//! extents without touching its times, and a reflink copy made or deleted
//! since changes what its extents share. So every reused map is recorded
//! here, with the node it is credited to, and the scan marks what it feeds
//! unless the filesystem proves it (`crate::scan`'s walked module).
//! `--verify` maps every file all the same and names each whose saved map
//! was stale.

use super::account::FoundFile;
use super::ctx::{Ctx, Local};
use super::mapped::Mapped;
use crate::error::Diagnostic;
use crate::figures::{Kind, Stats};
use crate::probe::magic;
use crate::records::mappings::{MapExtent, MapKey, Mappings};
use crate::records::{Inode, NodeId};
use rustix::fs::Statx;

/// What the walk keeps for `--since` and `--export`, per task, per shard
/// and in the end for the scan.
#[derive(Debug, Default)]
pub(crate) struct Since {
    /// The maps FIEMAP read (`--export`), and those reused.
    pub(crate) mappings: Mappings,
    /// The files credited with a reused map.
    pub(crate) files: Vec<Reused>,
}

/// A file credited with the map `--since` saved of it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reused {
    /// Its filesystem (registry index).
    pub(crate) fs: u32,
    /// Its device and inode: its key in the saved maps.
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    /// Its allocated bytes.
    pub(crate) bytes: u64,
    /// Where a mark on its figures goes.
    pub(crate) at: MarkAt,
}

/// Where the figures of a file go, and so its mark.
#[derive(Clone, Copy, Debug)]
pub(crate) enum MarkAt {
    /// Its node (or its directory's).
    Node(NodeId),
    /// Its inode, counted once through its links.
    Inode(Inode),
}

impl Since {
    /// Moves what `other` holds into `self`.
    pub(super) fn append(&mut self, other: &mut Since) {
        if !other.mappings.is_empty() {
            self.mappings.append(&mut other.mappings);
        }
        self.files.append(&mut other.files);
    }

    /// Sorts what was gathered.
    pub(super) fn finish(&mut self) {
        self.mappings.finish();
    }
}

/// The key of the file `st` (on `dev`).
pub(super) fn key_of(st: &Statx, dev: u64) -> MapKey {
    MapKey {
        dev,
        ino: st.stx_ino,
        ctime: (st.stx_ctime.tv_sec, st.stx_ctime.tv_nsec),
        size: st.stx_size,
        blocks: st.stx_blocks,
    }
}

/// The map `--since` saved of file `f`, replayed, if it is unchanged and
/// `--verify` was not given: `None` maps it.
pub(super) fn reuse(
    ctx: &Ctx<'_>,
    f: &FoundFile<'_>,
    once: bool,
    local: &mut Local,
) -> Option<Mapped> {
    let saved = ctx.run.opts.since.as_deref()?;
    if ctx.run.opts.verify_since || f.follow || f.kind != Kind::File {
        return None;
    }
    let fs = f.fs?;
    let key = key_of(f.st, f.dev);
    let extents = saved.unchanged(&key)?;
    let got = ctx.map.extents.replay_saved(extents, fs.space);
    let view = Stats::of_inode(Kind::File, key.size, key.blocks);
    local.counters.mappings_reused += 1;
    let s = &mut local.since;
    s.files.push(Reused {
        fs: fs.info.index,
        dev: f.dev,
        ino: key.ino,
        bytes: view.total,
        at: if once {
            MarkAt::Inode((f.ns, f.dev, key.ino))
        } else {
            MarkAt::Node(f.node)
        },
    });
    if ctx.run.opts.keep_mappings {
        s.mappings.push(key, extents);
    }
    if got.encoded > 0 {
        local.counters.compressed_files += 1;
        local.counters.compressed_bytes += got.encoded;
    }
    if got.inline && fs.info.magic == magic::BTRFS {
        let (bytes, at) = (view.total.saturating_sub(got.shared_bytes), (f.node, f.ns));
        ctx.inline_bound(local, f.st, at, once, fs.space);
        if ctx.run.keep_inline {
            ctx.record_inline(local, f.st, at, (bytes, got.file), once, fs.info.index);
        }
    }
    // As FIEMAP read it: on Btrfs, as referenced.
    let whole = got.inline || fs.info.magic != magic::BTRFS;
    if !whole {
        let data = view.total.saturating_sub(got.shared_bytes);
        local.partial_view(fs.space, data, got.encoded > 0);
    }
    Some(Mapped::Extents {
        view: (key.size, key.blocks),
        shared: got.shared_bytes,
        id: got.file.map(|id| (id, key.ino)),
        on_disk: got.on_disk,
        whole,
        unreachable: got.unreachable,
        encoded: got.encoded_own > 0,
    })
}

/// After FIEMAP read the whole map of file `key` (`path`, for messages):
/// keeps it for `--export`, and with `--verify` names it if the map
/// `--since` saved of it in the same state differs.
pub(super) fn mapped(ctx: &Ctx<'_>, key: MapKey, path: &dyn Fn() -> Vec<u8>, local: &mut Local) {
    let opts = &ctx.run.opts;
    if !opts.keep_mappings && !opts.verify_since {
        return;
    }
    let extents = ctx.map.extents.take_saved();
    if opts.verify_since
        && let Some(saved) = opts.since.as_deref()
        && let Some(old) = saved.unchanged(&key)
    {
        if same_map(old, &extents) {
            local.counters.mappings_verified += 1;
        } else {
            local.counters.mappings_stale += 1;
            ctx.run
                .msgs
                .report(Diagnostic::StaleMapping { path: path() });
        }
    }
    if opts.keep_mappings {
        local.since.mappings.push(key, &extents);
    }
}

/// Whether two maps give the same figures: the same extents, in order.
fn same_map(a: &[MapExtent], b: &[MapExtent]) -> bool {
    a == b
}
