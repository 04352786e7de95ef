//! `sdu --df`: the rows that add up to df's Used.

// Each row source is its own file returning plain data.
#[cfg_attr(not(test), allow(dead_code))]
mod deleted_subvolumes;
#[cfg_attr(not(test), allow(dead_code))]
mod space;
