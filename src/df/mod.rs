//! `sdu --df`: a table whose rows add up to what `df` calls used.

// Wired into `--df` by the core of the module; until then used by their
// unit tests only.
#[cfg_attr(
    not(test),
    expect(dead_code, reason = "the rows' sources, not yet wired")
)]
mod outside;
#[cfg_attr(
    not(test),
    expect(dead_code, reason = "the rows' sources, not yet wired")
)]
mod under_mounts;
