//! sdu's system interface: every ioctl and raw system call sdu makes, as
//! safe, typed functions, and the kernel's structs and on-disk items they
//! read. The only `unsafe` code of sdu lives here; the `sdu` crate itself
//! is `#![forbid(unsafe_code)]`.
//!
//! Each ioctl argument is a `#[repr(C)]` mirror of its kernel UAPI struct,
//! its size and the offsets that matter pinned by `const` assertions, its
//! opcode built with rustix's `ioctl::opcode` and checked by a unit test
//! against the value the kernel headers give; each `unsafe` block says in
//! a `// SAFETY:` line why it is sound (clippy's
//! `undocumented_unsafe_blocks` denies one without). No raw pointer
//! crosses the crate's boundary.
//!
//! By subject:
//! - [`fiemap`]: a file's extent map (`FS_IOC_FIEMAP`);
//! - [`fsmap`]: the owners of XFS blocks (`FS_IOC_GETFSMAP`);
//! - [`xfs`]: an XFS filesystem's geometry;
//! - [`fs`]: any filesystem's type and UUID;
//! - [`btrfs`]: the tree search and its items, the backref walk, the
//!   filesystem's and a subvolume's facts, subvolume deletion, and the one
//!   model of a filesystem's subvolumes (`btrfs::Subvolumes`, its root tree
//!   read once: root items, snapshot families, lineages);
//! - [`tty`]: the terminal put back on a fatal signal;
//! - [`mountinfo`]: `/proc/self/mountinfo` read into typed mounts;
//! - [`mount`]: a mount copied without its submounts, paths opened beneath a directory;
//! - [`mem`]: the C library allocator's mapping threshold fixed.

pub mod btrfs;
pub mod fiemap;
pub mod fs;
pub mod fsmap;
pub mod mem;
pub mod mount;
pub mod mountinfo;
pub mod tty;
pub mod xfs;
