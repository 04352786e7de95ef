//! The command line: flags in ([`args`], named by [`arg_id`]), a [`sdu::Config`] out
//! ([`resolve`]), the progress line on a terminal ([`progress`], cleared
//! on Ctrl-C by [`signals`]), what sdu says about itself ([`help`], [`man`])
//! and the exit status it ends with ([`status`]).
//!
//! The library never sees clap: everything here is the binary's.

pub mod arg_id;
pub mod args;
pub mod du_options;
pub mod getopt;
pub mod help;
pub mod man;
pub mod progress;
pub mod resolve;
pub mod signals;
pub mod status;
pub mod usage;
