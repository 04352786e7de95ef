//! Test harness, one module per concern; every item is re-exported here,
//! so a test file needs only `use crate::util::*;` (and `use crate::args;`
//! for the `args!` macro).
//!
//! - `process`: running sdu and other commands, their `Output`, timeouts,
//!   fd limits, `nobody`, and the skip-or-fail rule of `CI=true`;
//! - `trees`: the temp directory (`TestDir`), tree builders and file
//!   writers, and an independent walk of what sdu must list;
//! - `loopfs`: loopback XFS, Btrfs and ext4 filesystems, `Scratch`, tmpfs,
//!   settling and flushing;
//! - `measure`: delete and measure (filesystems mounted with options and
//!   their used space, trees of known sharing);
//! - `search`: the Btrfs tree search checked against FIEMAP (on every
//!   Btrfs loopback as it is dropped);
//! - `du`: GNU du as the reference, entry by entry;
//! - `table`: sdu's text output parsed back, and path-set diffs.

mod du;
mod loopfs;
mod measure;
mod process;
mod search;
mod snapshots;
mod table;
mod trees;

pub use du::*;
pub use loopfs::*;
pub use measure::*;
pub use process::*;
pub use search::*;
pub use snapshots::*;
pub use table::*;
pub use trees::*;
