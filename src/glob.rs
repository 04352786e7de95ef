//! `--exclude` patterns, matched the way GNU du matches them.
//!
//! du hands each pattern to gnulib's `exclude` module with `EXCLUDE_WILDCARDS`
//! and no anchoring: `fnmatch(pattern, path, 0)` is tried on the whole path as
//! printed and on every suffix that starts after a `/`. Without
//! `FNM_PATHNAME`, `*` and `?` match `/` too, and without `FNM_PERIOD` a
//! leading dot is an ordinary character. So `*.log` excludes every `.log`
//! file at any depth and `build` excludes every entry named `build`.

/// A set of exclude patterns.
#[derive(Clone, Debug, Default)]
pub struct Excludes {
    patterns: Vec<Vec<u8>>,
}

impl Excludes {
    /// Builds the set from du-style patterns.
    pub fn new<I: IntoIterator<Item = Vec<u8>>>(patterns: I) -> Self {
        Excludes {
            patterns: patterns.into_iter().collect(),
        }
    }

    /// True when there is no pattern: the walker then never builds paths.
    pub(crate) fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Does some pattern exclude `path` (the path as sdu prints it)?
    pub fn matches(&self, path: &[u8]) -> bool {
        self.patterns.iter().any(|p| {
            fnmatch(p, path)
                || path.iter().enumerate().any(|(i, &c)| {
                    c == b'/' && path.get(i + 1) != Some(&b'/') && fnmatch(p, &path[i + 1..])
                })
        })
    }
}

/// `fnmatch(pattern, text, 0)`: `*`, `?`, `[...]` (with `!`/`^` negation and
/// ranges) and `\` escapes; `*` and `?` match any byte, `/` included.
pub(crate) fn fnmatch(pattern: &[u8], text: &[u8]) -> bool {
    // Iterative matching with one backtrack point: the classic algorithm is
    // exact for patterns whose only variable-length token is `*`.
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    star = Some((p, t));
                    p += 1;
                    continue;
                }
                b'?' => {
                    p += 1;
                    t += 1;
                    continue;
                }
                b'[' => {
                    if let Some((matched, next)) = bracket(&pattern[p..], text[t]) {
                        if matched {
                            p += next;
                            t += 1;
                            continue;
                        }
                    } else if text[t] == b'[' {
                        // An unterminated bracket is a literal `[`.
                        p += 1;
                        t += 1;
                        continue;
                    }
                }
                b'\\' if p + 1 < pattern.len() => {
                    if pattern[p + 1] == text[t] {
                        p += 2;
                        t += 1;
                        continue;
                    }
                }
                c => {
                    if c == text[t] {
                        p += 1;
                        t += 1;
                        continue;
                    }
                }
            }
        }
        // Mismatch: let the last `*` swallow one more byte, or fail.
        match star {
            Some((sp, st)) => {
                p = sp + 1;
                t = st + 1;
                star = Some((sp, st + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// Matches one byte against the bracket expression at the start of `pat`.
/// Returns whether it matched and the length of the expression, or `None`
/// when the bracket is not terminated.
fn bracket(pat: &[u8], c: u8) -> Option<(bool, usize)> {
    let mut i = 1;
    let negate = matches!(pat.get(i), Some(b'!') | Some(b'^'));
    if negate {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    loop {
        let &b = pat.get(i)?;
        if b == b']' && !first {
            return Some((matched != negate, i + 1));
        }
        first = false;
        let lo = if b == b'\\' {
            i += 1;
            *pat.get(i)?
        } else {
            b
        };
        if pat.get(i + 1) == Some(&b'-') && pat.get(i + 2).is_some_and(|&h| h != b']') {
            let hi = pat[i + 2];
            matched |= lo <= c && c <= hi;
            i += 3;
        } else {
            matched |= lo == c;
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnmatch_basics() {
        assert!(fnmatch(b"*.log", b"a/b/c.log"));
        assert!(fnmatch(b"a?c", b"a/c"));
        assert!(fnmatch(b"*", b""));
        assert!(!fnmatch(b"?", b""));
        assert!(fnmatch(b"[a-c]x", b"bx"));
        assert!(!fnmatch(b"[!a-c]x", b"bx"));
        assert!(fnmatch(b"[]]", b"]"));
        assert!(fnmatch(b"\\*", b"*"));
        assert!(!fnmatch(b"\\*", b"a"));
        assert!(fnmatch(b"a*b*c", b"aXXbYYbZc"));
        assert!(!fnmatch(b"a*b*c", b"aXXbYYbZ"));
        assert!(fnmatch(b"[x", b"[x"));
        assert!(fnmatch(b".*", b".hidden"));
    }

    #[test]
    fn du_suffix_matching() {
        let e = Excludes::new([b"build".to_vec()]);
        assert!(e.matches(b"src/build"));
        assert!(e.matches(b"build"));
        assert!(!e.matches(b"src/build/x"));
        assert!(!e.matches(b"src/rebuild"));
        let e = Excludes::new([b"sub/*.o".to_vec()]);
        assert!(e.matches(b"./a/sub/x.o"));
        assert!(!e.matches(b"./a/xsub/x.o"));
    }
}
