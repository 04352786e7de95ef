//! `sdu --df`: the rows that add up to df's Used, one source per file.

// Nothing calls the row sources in this module yet: the df run that
// turns them into rows lives beside them.
#[allow(dead_code)]
mod open_deleted;
