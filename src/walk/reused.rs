//! `--since`: a file unchanged since the saved scan credited with the map
//! the scan saved of it, as FIEMAP would have credited it
//! ([`super::since`] says what is recorded, and why it is marked).

use rustix::fs::Statx;

use super::ctx::{Ctx, Local};
use super::fdcache::DirFs;
use super::mapped::Mapped;
use super::since::{MarkAt, Reused, key_of};
use crate::figures::{Kind, Stats};
use crate::probe::magic;
use crate::records::mappings::Checked;

/// The map `--since` saved of the regular file `st` on `dev`, on its
/// directory's filesystem `fs` (`None`: never reused, as a file stat-ed
/// through a symlink), credited to `node` of namespace `ns`, replayed, if
/// it is unchanged and `--verify` was not given: `None` maps it.
pub(super) fn reuse(
    ctx: &Ctx<'_>,
    (st, dev, fs): (&Statx, u64, Option<&DirFs>),
    (node, ns): (crate::records::NodeId, u32),
    once: bool,
    local: &mut Local,
) -> Option<Mapped> {
    let saved = ctx.run.opts.since.as_deref()?;
    if ctx.run.opts.verify_since {
        return None;
    }
    let fs = fs?;
    let key = key_of(st, dev);
    let (extents, checked) = saved.checked(&key)?;
    if matches!(checked, Checked::Stale | Checked::Remap) {
        return None;
    }
    let got = ctx.map.extents.replay_saved(extents, fs.space);
    let view = Stats::of_inode(Kind::File, key.size, key.blocks);
    local.counters.mappings_reused += 1;
    local.counters.mappings_proven += u64::from(checked == Checked::Proven);
    let s = &mut local.since;
    s.files.push(Reused {
        fs: fs.info.index,
        bytes: view.total,
        proven: checked == Checked::Proven,
        at: if once {
            MarkAt::Inode((ns, dev, key.ino))
        } else {
            MarkAt::Node(node)
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
        let (bytes, at) = (view.total.saturating_sub(got.shared_bytes), (node, ns));
        ctx.inline_bound(local, st, at, once, fs.space);
        if ctx.run.keep_inline {
            ctx.record_inline(local, st, at, (bytes, got.file), once, fs.info.index);
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
