//! Integration tests of the `sdu` binary against GNU `du`.
//!
//! One test binary (so the harness is compiled once); the harness lives in
//! `util` (processes, temp trees, loopback filesystems, du comparison) and
//! `json` (a strict parser of the `--json` document).

mod as_du;
mod big;
mod browse;
mod btrfs;
mod cli;
mod delete;
mod delete_attacks;
mod du_match;
mod du_rules;
mod errors;
mod fuzz;
mod golden;
mod hostile_output;
mod inline;
mod json;
mod model;
mod plan;
mod reclaim;
mod regressions;
mod reliability;
mod reports;
mod saved;
mod shared;
mod structure;
mod terminal;
mod tmux;
mod tree;
mod util;
