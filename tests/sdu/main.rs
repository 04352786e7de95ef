//! Integration tests of the `sdu` binary against GNU `du`.
//!
//! One test binary (so the harness is compiled once). The harness is
//! `util` (one module per concern: processes, test trees, loopback
//! filesystems, the Btrfs search check, du, the text table; all
//! re-exported, so `use crate::util::*` brings everything) and `json` (a
//! strict parser of the `--json` document). Every other module is one
//! concern's tests; `shared`, `reliability` and `exact_random` are
//! directories of several.
//! Where a test runs on XFS and on Btrfs, it is one helper taking the
//! `FsKind` with one `#[test]` per kind. No test file has over 1,000 lines
//! (checked by `structure`).

mod as_du;
mod big;
mod browse;
mod browse_attacks;
mod browse_delete;
mod browse_df;
mod browse_keys;
mod browse_rescan;
mod browse_screen;
mod browse_snapshots;
mod btrfs;
mod cli;
mod compare;
mod completions;
mod config;
mod delete;
mod delete_attacks;
mod df;
mod df_mounts;
mod df_open;
mod df_space;
mod df_space_rows;
mod du_match;
mod du_rules;
mod errors;
mod exact;
mod exact_random;
mod export_order;
mod flags;
mod golden;
mod hostile_output;
mod html;
mod inline;
mod json;
mod leftout;
mod marks;
mod marks_order;
mod overlap;
mod partial;
mod plan;
mod plan_by_age;
mod reclaim;
mod regressions;
mod reliability;
mod reports;
mod saved;
mod saved_ncdu2;
mod shared;
mod since;
mod since_random;
mod snapshot_alone;
mod snapshot_walk;
mod snapshots;
mod snapshots_qgroup;
mod snapshots_touching;
mod structure;
mod terminal;
mod tmux;
mod tree;
mod tree_width;
mod util;
mod written;
