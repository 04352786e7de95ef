//! The common case of a regular file, accounted for without the general
//! path's layers: a file the walk opened and then stat-ed through its fd,
//! singly linked, on its directory's filesystem, credited to its
//! directory, whose FIEMAP needs no allocation group's turn and can find no
//! copy of it mapped before. That is nearly every file of an ordinary tree
//! scanned without privileges.
//!
//! The general path ([`super::account::nondir`]) decides, file by file,
//! among the tree search, the copies mapped once, the files handed to the
//! holder of a turn and the rest; here those questions are settled once per
//! directory ([`InDir::plain`]) or by one test per file, and the file goes
//! straight from its `statx` to its FIEMAP and its credit. Both paths end
//! with the same bookkeeping ([`mapped::counted`], [`credit`],
//! [`keep_copy`]), so that their figures cannot differ; the walk's tests
//! compare them (an exclusion that matches nothing sends every file down
//! the general path).

use std::os::fd::{AsFd, OwnedFd};

use sdu_sys::fiemap;

use super::account::keep_copy;
use super::ctx::{Ctx, Local};
use super::entry::Stated;
use super::indir::InDir;
use super::later::Who;
use super::mapped::{self, ExtentsRead, Mapped, credit};
use crate::extents::ExtentSource;
use crate::figures::{Kind, Stats};
use crate::probe::{self, Skip, magic};

/// Accounts for the regular file `x`, an entry of `dir`, open as `fd`
/// (its `statx` was made on that fd), when the lean path can: it returns
/// what goes into the directory's own figures. `Err(fd)` hands the file
/// back for the general path: its FIEMAP must wait for an allocation
/// group's turn (XFS), a copy of it may have been mapped in a snapshot
/// (Btrfs), or its filesystem's FIEMAP was found missing.
pub(super) fn file(
    ctx: &Ctx<'_>,
    dir: &InDir<'_>,
    x: Stated<'_>,
    fd: OwnedFd,
    local: &mut Local,
) -> Result<Stats, OwnedFd> {
    let (st, dev, idx) = (x.st, x.dev, x.e.idx);
    let path = &|| dir.h.path(Some(x.e.name.to_bytes()));
    let fs = &dir.fs;
    let who = Who {
        node: dir.h.id,
        entry: Some(idx),
        ns: dir.h.ns,
        once: false,
    };
    let at = (st, Kind::File, dev);
    // Singly linked (the caller checks): no claim to make.
    if let Err(skip) = probe::may_share(&fs.info, Kind::File, st.stx_blocks, || true) {
        return Ok(credit(ctx, at, who, Some(Mapped::Skipped(skip)), local));
    }
    // A Btrfs subvolume that is no snapshot keeps its files' extents for
    // their copies in its snapshots; while none is kept, no copy of this
    // file can be found either (the general path's `map_file`).
    let subvol = match fs.copies {
        None => None,
        Some(sv) if sv.ids.1 == [0; 16] && ctx.map.extents.copies().is_empty() => Some(sv.ids),
        Some(_) => return Err(fd),
    };
    if local.ag.holding.is_some() || ctx.map.registry.fiemap_unsupported(fs.info.index) {
        return Err(fd);
    }
    // XFS: its FIEMAP runs at once only when no group is predicted for it;
    // what it shares predicts the next file's ([`crate::extents::ag`]).
    let table = local.ag.take_for(&ctx.map.ags, &fs.info, fd.as_fd());
    if table.is_some() && local.ag.predicted().is_some() {
        local.ag.put(table);
        return Err(fd);
    }
    let mut kept = subvol.map(|_| Vec::new());
    let got = match kept.as_mut() {
        Some(k) => ctx
            .map
            .extents
            .read_fiemap_keeping(fd.as_fd(), fs.space, Some((k, false))),
        None => ctx
            .map
            .extents
            .read(ExtentSource::for_fs(&fs.info, false), fd.as_fd(), fs.space),
    };
    local.ag.learn(table.as_deref(), got.first_shared);
    local.ag.put(table);
    let total = st.stx_blocks.saturating_mul(512);
    match mapped::counted(ctx, fs, &got, total, path, local) {
        ExtentsRead::Whole => {
            let key = super::since::key_of(st, fs.map_dev);
            mapped::keep_map(ctx, (key, fs), path, local);
        }
        ExtentsRead::Failed => kept = None,
        ExtentsRead::NoFiemap => {
            let skipped = Some(Mapped::Skipped(Skip::FsCannotShare));
            return Ok(credit(ctx, at, who, skipped, local));
        }
    }
    if got.inline && fs.info.magic == magic::BTRFS {
        // Inline data a snapshot may share: decided after the walk.
        let (bytes, at) = (total.saturating_sub(got.shared_bytes), (who.node, who.ns));
        ctx.inline_bound(local, st, at, false, fs.space);
        if ctx.run.keep_inline {
            ctx.record_inline(
                local,
                st,
                at,
                (bytes, got.file),
                false,
                (fs.info.index, None),
            );
        }
    }
    fiemap::close(fd);
    // Nothing kept (the usual case) is nothing worth keeping.
    if let (Some(ids), Some(k)) = (subvol, kept.filter(|k| !k.is_empty())) {
        keep_copy(
            ctx,
            (fs.space, st),
            ids,
            Some(k.into_boxed_slice()),
            got.file,
            None,
        );
    }
    let whole = got.inline || fs.info.magic != magic::BTRFS;
    if !whole {
        let data = total.saturating_sub(got.shared_bytes);
        local.partial_view(fs.space, data, got.encoded > 0);
    }
    let mapped = Mapped::Extents {
        view: (st.stx_size, st.stx_blocks),
        shared: got.shared_bytes,
        id: got.file.map(|id| (id, st.stx_ino)),
        on_disk: got.on_disk,
        whole,
        unreachable: got.unreachable,
        encoded: got.encoded_own > 0,
    };
    Ok(credit(ctx, at, who, Some(mapped), local))
}
