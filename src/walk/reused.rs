//! `--since`: a file unchanged since the saved scan credited with the map
//! the scan saved of it, as FIEMAP would have credited it
//! ([`super::since`] says what is recorded, and why it is marked).

use rustix::fs::Statx;

use super::ctx::{Ctx, Local};
use super::fdcache::DirFs;
use super::mapped::{Mapped, replayed};
use super::since::key_of;
use crate::figures::Bound;
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
    // On Btrfs, where a file's copies in snapshots are mapped once for
    // all, the first copy met is mapped and the others take its extents,
    // as in a full scan: a map reused there would leave them to be mapped
    // one by one ([`crate::extents::unchanged`]).
    let fs = fs.filter(|fs| fs.copies.is_none())?;
    let key = key_of(st, fs.map_dev);
    let (extents, checked) = saved.checked(&key)?;
    match checked {
        Checked::Stale => local.counters.mappings_stale += 1,
        Checked::Remap => local.counters.mappings_remapped += 1,
        Checked::Unchecked | Checked::Proven => {}
    }
    if matches!(checked, Checked::Stale | Checked::Remap)
        || (saved.proven_only && checked != Checked::Proven)
    {
        return None;
    }
    let got = ctx.map.extents.replay_saved(extents, fs.space);
    local.counters.mappings_reused += 1;
    local.counters.mappings_proven += u64::from(checked == Checked::Proven);
    if checked != Checked::Proven {
        // Either way: a stale map can make it share more or less than saved.
        // A hard link's inode too, counted where its links meet; its
        // link's node shows the map's Exclusive and Shared as well.
        if once {
            (local.inode_marks).push(((ns, dev, key.ino), Bound::UNKNOWN, false));
            local.since.inodes.push((ns, dev, key.ino));
        }
        local.bound(node, Bound::UNKNOWN);
        let s = &mut local.since;
        s.unproven.0 += 1;
        s.unproven.1 += key.blocks.saturating_mul(512);
        s.unproven_on(fs.info.index);
    }
    if ctx.run.opts.keep_mappings {
        local.since.mappings.push(key, extents);
    }
    Some(replayed(
        ctx,
        &got,
        (st, Some(fs)),
        (node, ns, once),
        (local, None),
    ))
}
