//! Paths as sdu prints them: a root as given, then names joined the way
//! fts joins them. The walk, the deletion and the browser build them the
//! same way, so that a path one prints is the path another shows.

/// Appends `name` to a printed path the way fts does: one `/` between, none
/// added after a trailing `/`.
pub fn join(path: &mut Vec<u8>, name: &[u8]) {
    if !path.is_empty() && path.last() != Some(&b'/') {
        path.push(b'/');
    }
    path.extend_from_slice(name);
}

#[cfg(test)]
mod tests {
    use super::join;

    #[test]
    fn one_slash_between_none_after_a_trailing_one() {
        let mut p = Vec::new();
        join(&mut p, b"root");
        join(&mut p, b"a");
        assert_eq!(p, b"root/a");
        let mut p = b"/".to_vec();
        join(&mut p, b"usr");
        assert_eq!(p, b"/usr");
        let mut p = b"dir/".to_vec();
        join(&mut p, b"");
        assert_eq!(p, b"dir/");
        let mut p = b"dir".to_vec();
        join(&mut p, b"");
        assert_eq!(p, b"dir/");
    }
}
