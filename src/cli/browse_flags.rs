//! The browser's flags ([`BrowseFlags`]: the keys, the columns, the
//! order), `--ignore-config`, the negations that let the command line undo
//! what a config file ([`super::config`]) set, and `--color`'s values.

use clap::{Args, ValueEnum};

/// The keys of the browser.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum Profile {
    /// sdu's: `t x S R` sort by the four figures, `a` shows or hides
    /// files, `g` `G` go to the first and last entry.
    #[default]
    Sdu,
    /// ncdu's: `a` apparent size, `t` directories first, `g` graph and
    /// percentage; Esc quits in neither.
    Ncdu,
}

/// When `--color` colours (ncdu's words too: `off` is never, `dark` and
/// `dark-bg` colour as `auto` does).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ColorWhen {
    #[value(alias = "dark", alias = "dark-bg")]
    Auto,
    Always,
    #[value(alias = "off")]
    Never,
}

/// The browser's flags, and `--ignore-config`; each pair's last one wins,
/// as in ncdu, so that the command line can undo what a config file set.
#[derive(Args, Debug, Default)]
#[command(next_help_heading = "Browser (-i) and config files")]
pub(crate) struct BrowseFlags {
    /// The browser's keys: ncdu (a apparent size, t directories first, g
    /// graph and percentage, f files) or sdu (the default: a files, t
    /// Total, g first entry)
    #[arg(long, value_name = "PROFILE", value_enum)]
    pub(crate) keys: Option<Profile>,

    /// Show the item count column in the browser (c shows or hides it)
    #[arg(long, overrides_with = "hide_itemcount")]
    pub(crate) show_itemcount: bool,

    /// Hide the item count column (the default)
    #[arg(long, overrides_with = "show_itemcount")]
    pub(crate) hide_itemcount: bool,

    /// Show the modification time column in the browser (m)
    #[arg(long, overrides_with = "hide_mtime")]
    pub(crate) show_mtime: bool,

    /// Hide the modification time column (the default)
    #[arg(long, overrides_with = "show_mtime")]
    pub(crate) hide_mtime: bool,

    /// Show the bar column in the browser (the default)
    #[arg(long, overrides_with = "hide_graph")]
    pub(crate) show_graph: bool,

    /// Hide the bar column (ncdu's g cycles graph, percentage, both, none)
    #[arg(long, overrides_with = "show_graph")]
    pub(crate) hide_graph: bool,

    /// Show the percentage column in the browser (the default)
    #[arg(long, overrides_with = "hide_percent")]
    pub(crate) show_percent: bool,

    /// Hide the percentage column
    #[arg(long, overrides_with = "show_percent")]
    pub(crate) hide_percent: bool,

    /// List directories before files in the browser (ncdu's t)
    #[arg(long, overrides_with = "no_group_directories_first")]
    pub(crate) group_directories_first: bool,

    /// Directories and files together, in the sort's order (the default)
    #[arg(long, overrides_with = "group_directories_first")]
    pub(crate) no_group_directories_first: bool,

    /// Cross filesystems (the default): undoes -x from a config file
    #[arg(long, overrides_with = "one_file_system")]
    pub(crate) cross_file_system: bool,

    /// Count directories with a cache tag (the default): undoes
    /// --exclude-caches
    #[arg(long, overrides_with = "exclude_caches")]
    pub(crate) include_caches: bool,

    /// Count kernel filesystems (the default): undoes --exclude-kernfs
    #[arg(long, overrides_with = "exclude_kernfs")]
    pub(crate) include_kernfs: bool,

    /// Read no config file (/etc/sdu.conf, then $XDG_CONFIG_HOME/sdu/config,
    /// else ~/.config/sdu/config: one option a line, as ncdu's)
    #[arg(long)]
    pub(crate) ignore_config: bool,
}

/// How the browser opens, from its flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct View {
    pub(crate) keys: Profile,
    pub(crate) count: bool,
    pub(crate) time: bool,
    pub(crate) graph: bool,
    pub(crate) percent: bool,
    pub(crate) dirs_first: bool,
}

impl BrowseFlags {
    /// How the browser opens.
    pub(crate) fn view(&self) -> View {
        View {
            keys: self.keys.unwrap_or_default(),
            count: self.show_itemcount,
            time: self.show_mtime,
            graph: !self.hide_graph,
            percent: !self.hide_percent,
            dirs_first: self.group_directories_first,
        }
    }
}
