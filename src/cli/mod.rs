//! The command line: flags in ([`args`], named by [`arg_id`]), a [`sdu::Config`] out
//! ([`resolve`]), the progress line on a terminal ([`progress`], cleared
//! on Ctrl-C by [`signals`]), what sdu says about itself ([`help`], [`man`])
//! and the exit status it ends with ([`status`]).
//!
//! The library never sees clap: everything here is the binary's.

pub(crate) mod arg_id;
pub(crate) mod args;
pub(crate) mod browse_flags;
pub(crate) mod config;
pub(crate) mod du_options;
pub(crate) mod getopt;
pub(crate) mod help;
pub(crate) mod man;
pub(crate) mod progress;
pub(crate) mod resolve;
pub(crate) mod signals;
pub(crate) mod status;
pub(crate) mod usage;
