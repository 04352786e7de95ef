//! Btrfs: the tree search and the items read with it, the backref walk
//! (who holds a data extent), which subvolumes share data with one, what
//! the filesystem and a subvolume tell of themselves, its kinds of block
//! groups and their space, the subvolumes deleted and not yet cleaned, the subvolume ioctls that delete one, and the subvolumes
//! as the root tree holds them ([`Subvolumes`]: read once per filesystem,
//! with their snapshot families and lineages).
//!
//! Each submodule is one subject; their items are also named here, so
//! that a caller writes `btrfs::search` or `btrfs::subvol`.

pub mod backref;
pub mod deleted;
pub mod info;
pub mod items;
pub mod search;
pub mod sharing;
pub mod space;
pub mod subvolume;
pub mod subvolumes;
pub mod top_level;

#[doc(no_inline)]
pub use backref::*;
#[doc(no_inline)]
pub use deleted::{DeadData, DeadRoot, dead_data, dead_roots};
#[doc(no_inline)]
pub use info::*;
#[doc(no_inline)]
pub use items::*;
#[doc(no_inline)]
pub use search::*;
#[doc(no_inline)]
pub use sharing::*;
#[doc(no_inline)]
pub use space::{Slot, space_info, statfs_used};
#[doc(no_inline)]
pub use subvolume::*;
#[doc(no_inline)]
pub use subvolumes::*;
#[doc(no_inline)]
pub use top_level::*;
