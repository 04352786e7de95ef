//! The end of `--help`: the figures in brief and the examples, which the
//! man page shows too. A leaf module, so that the flags (`args`) and the
//! man page (`man`) can both use it without importing each other.

/// The three examples that end `--help` (and the man page shows them too).
pub(crate) const EXAMPLES: &[(&str, &str)] = &[
    (
        "sdu -d 1 /srv",
        "Total, exclusive, shared and reclaimable space of /srv and each directory in it",
    ),
    (
        "sdu --sort reclaimable -n 20 -d 3 /srv",
        "The 20 directories (3 levels deep) whose deletion would free the most",
    ),
    (
        "sudo sdu --df /",
        "Why is the disk full: rows that add up to df's Used (docs/df.md)",
    ),
    (
        "sdu --du exclusive -s *",
        "du's own output format with one figure: a drop-in for `du -s *` in scripts",
    ),
];

/// The end of `--help`: the figures in brief, then the examples.
pub(crate) fn after_help() -> String {
    let mut s = String::from(
        "Figures (man sdu explains them):\n  \
         Total        allocated bytes, what du prints (Apparent with --apparent-size)\n  \
         Exclusive    data that belongs to one file alone\n  \
         Shared       shared data that files under the entry reference, counted once\n  \
         Reclaimable  what deleting the entry would free\n\n\
         Examples:\n",
    );
    for (cmd, what) in EXAMPLES {
        s.push_str(&format!("  {cmd}\n      {what}\n"));
    }
    s
}
