//! The arguments of [`super::args::Cli`] by a type, [`ArgId`], not by
//! clap's string ids: getopt hands back each option given as an `ArgId`,
//! and the flags' own `conflicts_with` name them so, so that a misspelt
//! id does not compile. The one place that spells clap's ids is the table
//! below, which a test holds to `Cli`'s arguments, one for one and in
//! order.

/// Declares [`ArgId`], its [`ArgId::ALL`] and its [`ArgId::as_str`] from one
/// table of `Variant = "clap_id"` (the id is the field's name in `Cli`).
macro_rules! arg_ids {
    ($($(#[$doc:meta])* $variant:ident = $id:literal,)*) => {
        /// An argument of [`super::args::Cli`].
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub(crate) enum ArgId {
            $($(#[$doc])* $variant,)*
        }

        impl ArgId {
            /// Every argument, in `Cli`'s order.
            pub(crate) const ALL: &[ArgId] = &[$(ArgId::$variant,)*];

            /// clap's id of the argument: its field's name in `Cli`.
            pub(crate) fn as_str(self) -> &'static str {
                match self {
                    $(ArgId::$variant => $id,)*
                }
            }
        }
    };
}

arg_ids! {
    /// PATH, the operands.
    Paths = "paths",
    /// `-s`, `--summarize`.
    Summarize = "summarize",
    /// `-d`, `--max-depth`.
    MaxDepth = "max_depth",
    /// `-a`, `--all`.
    All = "all",
    /// `-n`, `--top`.
    Top = "top",
    /// `--min-size`.
    MinSize = "min_size",
    /// `--to-free`.
    ToFree = "to_free",
    /// `--oldest-first`.
    OldestFirst = "oldest_first",
    /// `--newest-first`.
    NewestFirst = "newest_first",
    /// `--snapshots`.
    Snapshots = "snapshots",
    /// `--df`.
    Df = "df",
    /// `-t`, `--threshold`.
    Threshold = "threshold",
    /// `--files-only`.
    FilesOnly = "files_only",
    /// `--older-than`.
    OlderThan = "older_than",
    /// `-S`, `--separate-dirs`.
    SeparateDirs = "separate_dirs",
    /// `-x`, `--one-file-system`.
    OneFileSystem = "one_file_system",
    /// `-L`, `--dereference`.
    Dereference = "dereference",
    /// `-D`, `--dereference-args`.
    DereferenceArgs = "dereference_args",
    /// `-H`.
    DereferenceArgsH = "dereference_args_h",
    /// `-P`, `--no-dereference`.
    NoDereference = "no_dereference",
    /// `-l`, `--count-links`.
    CountLinks = "count_links",
    /// `--exclude`.
    Exclude = "exclude",
    /// `-X`, `--exclude-from`.
    ExcludeFrom = "exclude_from",
    /// `--exclude-caches`.
    ExcludeCaches = "exclude_caches",
    /// `--exclude-kernfs`.
    ExcludeKernfs = "exclude_kernfs",
    /// `--files0-from`.
    Files0From = "files0_from",
    /// `--inodes`.
    Inodes = "inodes",
    /// `-A`, `--apparent-size`.
    ApparentSize = "apparent_size",
    /// `-b`, `--bytes`.
    Bytes = "bytes",
    /// `-k`.
    Kibibytes = "kibibytes",
    /// `-m`.
    Mebibytes = "mebibytes",
    /// `-B`, `--block-size`.
    BlockSize = "block_size",
    /// `-h`, `--human-readable`.
    HumanReadable = "human_readable",
    /// `--si`.
    Si = "si",
    /// `--sort`.
    Sort = "sort",
    /// `--reverse`.
    Reverse = "reverse",
    /// `--tree`.
    Tree = "tree",
    /// `--du`.
    Du = "du",
    /// `--time`.
    Time = "time",
    /// `--time-style`.
    TimeStyle = "time_style",
    /// `-i`, `--interactive`.
    Interactive = "interactive",
    /// `--json`.
    Json = "json",
    /// `--html`.
    Html = "html",
    /// `--html-area`.
    HtmlArea = "html_area",
    /// `-c`, `--total`.
    Total = "total",
    /// `-0`, `--null`.
    Null = "null",
    /// `--no-header`.
    NoHeader = "no_header",
    /// `--color`.
    Color = "color",
    /// `-j`, `--threads`.
    Threads = "threads",
    /// `--no-progress`.
    NoProgress = "no_progress",
    /// `--fiemap`.
    Fiemap = "fiemap",
    /// `--map-each-copy`.
    MapEachCopy = "map_each_copy",
    /// `--index-memory`.
    IndexMemory = "index_memory",
    /// `--stats`.
    Stats = "stats",
    /// `--export`.
    Export = "export",
    /// `--export-format`.
    ExportFormat = "export_format",
    /// `--since`.
    Since = "since",
    /// `--verify`.
    Verify = "verify",
    /// `--import`.
    Import = "import",
    /// `--compare`.
    Compare = "compare",
    /// `--keys`.
    Keys = "keys",
    /// `--show-itemcount`.
    ShowItemcount = "show_itemcount",
    /// `--hide-itemcount`.
    HideItemcount = "hide_itemcount",
    /// `--show-mtime`.
    ShowMtime = "show_mtime",
    /// `--hide-mtime`.
    HideMtime = "hide_mtime",
    /// `--show-graph`.
    ShowGraph = "show_graph",
    /// `--hide-graph`.
    HideGraph = "hide_graph",
    /// `--show-percent`.
    ShowPercent = "show_percent",
    /// `--hide-percent`.
    HidePercent = "hide_percent",
    /// `--group-directories-first`.
    GroupDirectoriesFirst = "group_directories_first",
    /// `--no-group-directories-first`.
    NoGroupDirectoriesFirst = "no_group_directories_first",
    /// `--cross-file-system`.
    CrossFileSystem = "cross_file_system",
    /// `--include-caches`.
    IncludeCaches = "include_caches",
    /// `--include-kernfs`.
    IncludeKernfs = "include_kernfs",
    /// `--ignore-config`.
    IgnoreConfig = "ignore_config",
    /// `--generate`.
    Generate = "generate",
    /// `--help`.
    Help = "help",
    /// `-V`, `--version`.
    Version = "version",
}

impl ArgId {
    /// The argument clap calls `id`, if `Cli` has it.
    pub(crate) fn of(id: &clap::Id) -> Option<ArgId> {
        ArgId::ALL
            .iter()
            .copied()
            .find(|a| a.as_str() == id.as_str())
    }
}

impl From<ArgId> for clap::Id {
    fn from(a: ArgId) -> clap::Id {
        clap::Id::from(a.as_str())
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::super::args::Cli;
    use super::*;

    #[test]
    fn one_id_for_each_argument_of_cli_in_order() {
        let cmd = Cli::command();
        let clap: Vec<&str> = cmd.get_arguments().map(|a| a.get_id().as_str()).collect();
        let ours: Vec<&str> = ArgId::ALL.iter().map(|a| a.as_str()).collect();
        assert_eq!(clap, ours);
    }
}
