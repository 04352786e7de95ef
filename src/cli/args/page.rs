//! The flags of the `--html` page, which [`super::Cli`] flattens in
//! where they stand in `--help`.

use std::ffi::OsString;

use clap::builder::PossibleValuesParser;
use clap::{Args, ValueHint};
use sdu::figures::Figure;

use crate::cli::arg_id::ArgId;

/// `--html FILE` and `--html-area AREA`.
#[derive(Args, Debug)]
pub(crate) struct PageArgs {
    /// Write a zoomable treemap of the scan to FILE (- for standard
    /// output) instead of the report: one HTML page that needs no network
    /// and no server; every file is in it (as with -a), -d limits its depth
    #[arg(
        long,
        value_name = "FILE",
        value_hint = ValueHint::FilePath,
        conflicts_with_all = [ArgId::Json, ArgId::Du, ArgId::Tree, ArgId::Interactive, ArgId::ToFree, ArgId::Export, ArgId::Null, ArgId::Sort, ArgId::Reverse, ArgId::Top, ArgId::MinSize, ArgId::Threshold, ArgId::FilesOnly, ArgId::OlderThan, ArgId::Time, ArgId::ApparentSize, ArgId::Bytes, ArgId::Inodes],
        help_heading = "Output"
    )]
    pub(crate) html: Option<OsString>,

    /// What each rectangle's area of the --html page stands for when it
    /// opens (the page can switch): the space on disk (Exclusive + Shared,
    /// shared data counted once; the default), du's Total, or Reclaimable
    #[arg(long, value_name = "AREA", requires = ArgId::Html, help_heading = "Output",
        value_parser = PossibleValuesParser::new(["disk", "total", "reclaimable"]))]
    pub(crate) html_area: Option<String>,
}

impl PageArgs {
    /// The figure `--html-area` names (Total, Reclaimable); `None` for the
    /// space on disk, which is no one figure, and by default.
    pub(crate) fn area(&self) -> Option<Figure> {
        match self.html_area.as_deref() {
            Some("total") => Some(Figure::Total),
            Some("reclaimable") => Some(Figure::Reclaimable),
            _ => None,
        }
    }
}
