//! `--export FILE` and `--export-format`, flattened into [`super::Cli`]:
//! where a scan is saved, and in which of ncdu's formats.

use std::ffi::OsString;

use clap::{Args, ValueEnum, ValueHint};

use crate::cli::arg_id::ArgId;

/// Where `--export` saves the scan, and how.
#[derive(Args, Debug)]
pub(crate) struct Saving {
    /// Write the scan to FILE (- for standard output) instead of the
    /// report, in ncdu's JSON export format (or another, --export-format)
    /// with sdu's figures added: ncdu -f FILE browses it, sdu --import
    /// FILE reports on it
    #[arg(
        long,
        value_name = "FILE",
        value_hint = ValueHint::FilePath,
        conflicts_with_all = [ArgId::Import, ArgId::ToFree],
        help_heading = "Saved scans"
    )]
    pub(crate) export: Option<OsString>,

    /// The format --export writes: json (ncdu -o), json-zstd (ncdu -c -o:
    /// the JSON compressed with zstd) or binary (ncdu 2.6's -O: sdu's
    /// figures ride along, so sdu --import reads it as the JSON). --import
    /// and --compare read all three, told by their first bytes
    #[arg(
        long,
        value_name = "FORMAT",
        value_enum,
        default_value = "json",
        requires = ArgId::Export,
        help_heading = "Saved scans"
    )]
    pub(crate) export_format: ExportFormat,

    /// Start from the saved scan SCAN (sdu's --export, JSON or json-zstd):
    /// a file whose device, inode, ctime, size and blocks are those saved
    /// reuses the extent map saved with it, without being opened or mapped.
    /// The figures are a full scan's; where nothing proves the maps
    /// current (a dedupe keeps a file's times), Reclaimable is marked
    #[arg(
        long,
        value_name = "SCAN",
        value_hint = ValueHint::FilePath,
        conflicts_with_all = [ArgId::Import],
        help_heading = "Saved scans"
    )]
    pub(crate) since: Option<OsString>,

    /// With --since: map every file all the same, and name on stderr each
    /// whose saved map was stale (its extents moved without its ctime)
    #[arg(long, requires = ArgId::Since, help_heading = "Saved scans")]
    pub(crate) verify: bool,
}

/// What `--export-format` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ExportFormat {
    Json,
    JsonZstd,
    Binary,
}
