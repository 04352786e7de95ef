//! A PATH that is not a directory, accounted for at once, without being
//! resolved by its name again.

use std::ffi::CStr;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

use rustix::fs::{CWD, Statx};

use super::ctx::{Ctx, Local, dev_of};
use super::{account, keep_root_fd, open, roots};
use crate::figures::{Bound, Kind};
use crate::records::{NodeId, NodeRec};

/// Accounts for root `order` of namespace `ns`, node `id`: `root` as given
/// and as a C string, stat-ed as `st` on a filesystem of `statfs` type
/// `magic`, resolved by `pathfd`.
pub(super) fn account(
    ctx: &Ctx<'_>,
    (root, cpath): (&[u8], &CStr),
    (st, magic): (&Statx, Option<u32>),
    (pathfd, parent): (OwnedFd, Option<OwnedFd>),
    (ns, order, id): (u32, u32, NodeId),
    follow: bool,
) {
    let kind = Kind::from_mode(u32::from(st.stx_mode));
    let dev = dev_of(st);
    let mut local = Local::default();
    local.counters.entries += 1;
    // A regular file is opened through the fd its PATH was resolved
    // by; only where /proc is not mounted, by its name (checked).
    // It is kept, as a directory's fd is, for the stages after the walk.
    let reopened = match kind {
        Kind::File => open::reopen_file(&pathfd),
        // Nothing else is opened: no FIFO, no device.
        _ => Err(rustix::io::Errno::NOENT),
    };
    let pre = match reopened {
        Ok(fd) => {
            if let Ok(kept) = rustix::io::fcntl_dupfd_cloexec(&fd, 0) {
                keep_root_fd(ctx, order, &Arc::new(kept));
            }
            account::Pre::Open(fd)
        }
        _ => account::Pre::No,
    };
    drop(pathfd);
    // Its filesystem, probed on the file opened: as root on Btrfs the
    // tree search reads its items through that fd, as it reads a listed
    // file's through its directory's, and nothing is opened by name.
    let on = match &pre {
        account::Pre::Open(fd) => rustix::io::fcntl_dupfd_cloexec(fd, 0).ok(),
        _ => None,
    };
    // One that cannot be opened (a symlink, whose target a Btrfs
    // snapshot may share inline) is probed on its directory, checked to
    // lie on its device, and kept in its place for the stages after.
    let flags = open::dir_flags(ctx.run.euid, None, true);
    let probed = (on.is_none())
        .then(|| {
            parent
                .as_ref()
                .and_then(|p| roots::parent_on(p, flags, dev))
        })
        .flatten()
        .map(Arc::new);
    if let Some(fd) = &probed {
        keep_root_fd(ctx, order, fd);
    }
    let fs = (on.as_ref().or(probed.as_deref()))
        .map(|fd| ctx.filesystem(dev, fd.as_fd(), ns, &|| root.to_vec()));
    // Else whether a snapshot holds a Btrfs symlink's target is unknown.
    let btrfs = magic == Some(crate::probe::magic::BTRFS);
    if fs.is_none() && btrfs && kind == Kind::Symlink && st.stx_blocks > 0 {
        local.bound(id, Bound::AT_MOST);
    }
    // A file given by path: its directory was not stat-ed, so check.
    let file = account::FoundFile {
        dirfd: on.as_ref().map_or(CWD, |fd| fd.as_fd()),
        name: cpath,
        st,
        dev: dev_of(st),
        kind: Kind::from_mode(u32::from(st.stx_mode)),
        fs: fs.as_ref(),
        node: id,
        entry: None,
        ns,
        guard: ctx.run.euid == 0,
        follow: follow && on.is_none(),
        path: &|| root.to_vec(),
        dir: None,
        lazy: false,
    };
    let account::Accounted::Now(own) = account::nondir(ctx, &file, pre, &mut local) else {
        unreachable!("a root file is never handed over");
    };
    account::end_turn(ctx, &mut local);
    let r = NodeRec {
        id,
        parent: if ns == 0 { NodeId::TOP } else { NodeId::NONE },
        depth: 0,
        kind,
        leaf: false,
        order,
        name: (),
        own,
    };
    local.push_node(r, root);
    ctx.ident(&mut local, id, st);
    ctx.flush(local, None, None);
}
