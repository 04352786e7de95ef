//! `--exclude` patterns, matched the way GNU du matches them.
//!
//! du hands each pattern to gnulib's `exclude` module with `EXCLUDE_WILDCARDS`
//! and no anchoring: `fnmatch(pattern, path, 0)` is tried on the whole path as
//! printed and on every suffix that starts after a `/` not followed by
//! another `/`. Without `FNM_PATHNAME`, `*` and `?` match `/` too, and without
//! `FNM_PERIOD` a leading dot is an ordinary character. So `*.log` excludes
//! every `.log` file at any depth and `build` excludes every entry named
//! `build`.
//!
//! Trying `fnmatch` on every suffix costs the square of the path's length
//! (times the pattern's), and a walk matches every entry of a chain, so a
//! deep tree would cost the cube of its depth. Instead each pattern is
//! compiled once into a set of single-byte tokens and `*`, and a path is
//! read once, left to right, keeping the set of pattern positions reached
//! (a bitset: the pattern run as a nondeterministic automaton). A new
//! thread enters at position 0 at the path's start and after each `/` that
//! starts a suffix du would try, so the path matches when any suffix does.
//! One path costs its length times the pattern's length / 64 words.

/// A set of exclude patterns.
#[derive(Clone, Debug, Default)]
pub struct Excludes {
    patterns: Vec<Pattern>,
}

impl Excludes {
    /// Builds the set from du-style patterns.
    pub fn new<I: IntoIterator<Item = Vec<u8>>>(patterns: I) -> Self {
        Excludes {
            patterns: patterns.into_iter().map(|p| Pattern::new(&p)).collect(),
        }
    }

    /// True when there is no pattern: the walker then never builds paths.
    pub(crate) fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Does some pattern exclude `path` (the path as sdu prints it)?
    pub fn matches(&self, path: &[u8]) -> bool {
        self.patterns.iter().any(|p| p.run(path).0)
    }
}

/// One pattern, compiled: its tokens are numbered 0..`len`, and position
/// `len` (past the last token) accepts. Position sets are bitsets of
/// `words` words, bit `i` of word `i / 64` standing for position `i`.
#[derive(Clone, Debug)]
struct Pattern {
    len: usize,
    words: usize,
    /// For each byte value `c`, at `c * words..`: the positions whose token
    /// is not a `*` and takes `c`.
    takes: Vec<u64>,
    /// The positions whose token is a `*`. Runs of `*` are one token, so
    /// the position after a `*` never holds another.
    stars: Vec<u64>,
}

impl Pattern {
    /// Compiles `pattern` with `fnmatch`'s syntax: `*`, `?`, `[...]` (with
    /// `!`/`^` negation and ranges; an unterminated `[` is a literal `[`)
    /// and `\` escapes (a trailing `\` is a literal `\`).
    fn new(pattern: &[u8]) -> Self {
        // Each token: `None` for `*`, or the set of bytes it takes.
        let mut tokens: Vec<Option<[bool; 256]>> = Vec::new();
        let byte = |b: u8| {
            let mut set = [false; 256];
            set[usize::from(b)] = true;
            Some(set)
        };
        let mut i = 0;
        while i < pattern.len() {
            match pattern[i] {
                b'*' => {
                    if tokens.last().is_none_or(Option::is_some) {
                        tokens.push(None);
                    }
                    i += 1;
                }
                b'?' => {
                    tokens.push(Some([true; 256]));
                    i += 1;
                }
                b'[' => match bracket(&pattern[i..], 0) {
                    Some((_, n)) => {
                        let mut set = [false; 256];
                        for (c, slot) in (0..=u8::MAX).zip(set.iter_mut()) {
                            *slot = bracket(&pattern[i..], c).is_some_and(|(m, _)| m);
                        }
                        tokens.push(Some(set));
                        i += n;
                    }
                    None => {
                        tokens.push(byte(b'['));
                        i += 1;
                    }
                },
                b'\\' if i + 1 < pattern.len() => {
                    tokens.push(byte(pattern[i + 1]));
                    i += 2;
                }
                c => {
                    tokens.push(byte(c));
                    i += 1;
                }
            }
        }
        let len = tokens.len();
        let words = len / 64 + 1;
        let mut takes = vec![0u64; 256 * words];
        let mut stars = vec![0u64; words];
        for (pos, token) in tokens.iter().enumerate() {
            let (w, bit) = (pos / 64, 1u64 << (pos % 64));
            match token {
                None => stars[w] |= bit,
                Some(set) => {
                    for (c, _) in set.iter().enumerate().filter(|&(_, &t)| t) {
                        takes[c * words + w] |= bit;
                    }
                }
            }
        }
        Pattern {
            len,
            words,
            takes,
            stars,
        }
    }

    /// Does the pattern match `path` or a suffix of it that starts after a
    /// `/` not followed by `/`? Also returns the work done, in word
    /// operations on position sets: `words` per byte of the path, plus one
    /// set for the start.
    fn run(&self, path: &[u8]) -> (bool, usize) {
        if self.words == 1 {
            return self.run_in_one_word(path);
        }
        let words = self.words;
        let mut cur = vec![0u64; words];
        let mut next = vec![0u64; words];
        cur[0] = 1;
        self.close(&mut cur);
        let mut work = words;
        for (i, &c) in path.iter().enumerate() {
            let takes = &self.takes[usize::from(c) * words..][..words];
            // A non-`*` token that takes `c` moves its thread on one
            // position; a `*` keeps its thread where it is.
            let mut carry = 0;
            for w in 0..words {
                let moved = cur[w] & takes[w];
                next[w] = (moved << 1) | carry | (cur[w] & self.stars[w]);
                carry = moved >> 63;
            }
            if c == b'/' && path.get(i + 1) != Some(&b'/') {
                next[0] |= 1;
            }
            self.close(&mut next);
            std::mem::swap(&mut cur, &mut next);
            work += words;
        }
        let accepted = cur[self.len / 64] >> (self.len % 64) & 1 == 1;
        (accepted, work)
    }

    /// [`Pattern::run`] for a pattern of fewer than 64 tokens, its
    /// position sets in one `u64`.
    fn run_in_one_word(&self, path: &[u8]) -> (bool, usize) {
        let stars = self.stars[0];
        let close = |set: u64| set | ((set & stars) << 1);
        let mut cur = close(1);
        for (i, &c) in path.iter().enumerate() {
            let mut next = ((cur & self.takes[usize::from(c)]) << 1) | (cur & stars);
            if c == b'/' && path.get(i + 1) != Some(&b'/') {
                next |= 1;
            }
            cur = close(next);
        }
        (cur >> self.len & 1 == 1, path.len() + 1)
    }

    /// A thread on a `*` is also past it, since `*` may take nothing. One
    /// step suffices: the position after a `*` never holds another.
    fn close(&self, set: &mut [u64]) {
        let mut carry = 0;
        for (w, slot) in set.iter_mut().enumerate() {
            let on_star = *slot & self.stars[w];
            *slot |= (on_star << 1) | carry;
            carry = on_star >> 63;
        }
    }
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
    use proptest::prelude::*;

    /// The matcher as it was before patterns were compiled, kept as the
    /// reference: `fnmatch` on the whole path, then on every suffix that
    /// starts after a `/` not followed by `/`. Also returns its work: the
    /// steps of every `fnmatch`, one per byte compared or skipped.
    fn reference(pattern: &[u8], path: &[u8]) -> (bool, usize) {
        let mut work = 0;
        let mut matched = fnmatch(pattern, path, &mut work);
        for (i, &c) in path.iter().enumerate() {
            if matched {
                break;
            }
            if c == b'/' && path.get(i + 1) != Some(&b'/') {
                matched = fnmatch(pattern, &path[i + 1..], &mut work);
            }
        }
        (matched, work)
    }

    /// `fnmatch(pattern, text, 0)` by iterative matching with one backtrack
    /// point, exact for patterns whose only variable-length token is `*`;
    /// adds its steps to `work`.
    fn fnmatch(pattern: &[u8], text: &[u8], work: &mut usize) -> bool {
        let (mut p, mut t) = (0, 0);
        let mut star: Option<(usize, usize)> = None;
        while t < text.len() {
            *work += 1;
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

    fn new_matches(pattern: &[u8], path: &[u8]) -> bool {
        Excludes::new([pattern.to_vec()]).matches(path)
    }

    #[test]
    fn fnmatch_basics() {
        let cases: &[(&[u8], &[u8], bool)] = &[
            (b"*.log", b"a/b/c.log", true),
            (b"a?c", b"a/c", true),
            (b"*", b"", true),
            (b"?", b"", false),
            (b"[a-c]x", b"bx", true),
            (b"[!a-c]x", b"bx", false),
            (b"[^a-c]x", b"dx", true),
            (b"[]]", b"]", true),
            (b"[]-]", b"-", true),
            (b"[a-]", b"-", true),
            (b"\\*", b"*", true),
            (b"\\*", b"a", false),
            (b"\\", b"\\", true),
            (b"a*b*c", b"aXXbYYbZc", true),
            (b"a*b*c", b"aXXbYYbZ", false),
            (b"**a***", b"xay", true),
            (b"[x", b"[x", true),
            (b"[a\\]", b"[a]", true),
            (b".*", b".hidden", true),
        ];
        for &(pattern, text, want) in cases {
            let shown = (
                String::from_utf8_lossy(pattern),
                String::from_utf8_lossy(text),
            );
            assert_eq!(reference(pattern, text).0, want, "reference {shown:?}");
            assert_eq!(new_matches(pattern, text), want, "{shown:?}");
        }
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
        // A suffix never starts at a `/`: `//x` is tried whole and as `x`.
        let e = Excludes::new([b"/x".to_vec()]);
        assert!(!e.matches(b"a//x"));
        assert!(e.matches(b"/x"));
        // A path ending in `/` offers the empty suffix.
        let e = Excludes::new([b"*".to_vec()]);
        assert!(e.matches(b"a/"));
        let e = Excludes::new([b"a".to_vec(), b"b".to_vec()]);
        assert!(e.matches(b"x/b") && e.matches(b"a") && !e.matches(b"c"));
    }

    /// Checks that matching `pattern` against chains `d/d/.../d` (and the
    /// same ending in `zz`) of 1,500 and 3,000 components costs at most one
    /// unit per byte of path per byte of pattern (plus one), and doubles
    /// with the depth. Returns what broke the bound, if anything.
    fn linear_violation(run: impl Fn(&[u8], &[u8]) -> (bool, usize)) -> Option<String> {
        let patterns: [&[u8]; 5] = [b"*zz*", b"*zz", b"d/*/zz", b"*d*d*d*x", b"[a-c]*?zz"];
        for pattern in patterns {
            for tail in [&b"d"[..], b"zz"] {
                let mut work = [0; 2];
                for (slot, depth) in work.iter_mut().zip([1_500, 3_000]) {
                    let mut path = b"d/".repeat(depth - 1);
                    path.extend_from_slice(tail);
                    let (_, w) = run(pattern, &path);
                    let bound = (path.len() + 1) * (pattern.len() + 1);
                    let shown = String::from_utf8_lossy(pattern);
                    if w > bound {
                        return Some(format!(
                            "{shown:?} at depth {depth}: work {w} > bound {bound}"
                        ));
                    }
                    *slot = w;
                }
                if work[1] > 2 * work[0] + 2 * (pattern.len() + 1) {
                    let shown = String::from_utf8_lossy(pattern);
                    return Some(format!(
                        "{shown:?}: work {} at depth 1,500, {} at 3,000",
                        work[0], work[1]
                    ));
                }
            }
        }
        None
    }

    /// One path costs its length times the pattern's, whatever its depth.
    #[test]
    fn matching_work_is_linear_in_the_path() {
        let compiled = |pattern: &[u8], path: &[u8]| Pattern::new(pattern).run(path);
        assert_eq!(linear_violation(compiled), None);
    }

    /// The bound above is one the suffix-by-suffix matcher breaks, by
    /// orders of magnitude (it is quadratic in the path).
    #[test]
    fn the_reference_breaks_the_linear_bound() {
        let violation = linear_violation(reference);
        assert!(violation.is_some());
        eprintln!("reference: {}", violation.unwrap());
    }

    /// Patterns and paths over a small alphabet, so that matches are
    /// common; and over every byte that means something to a pattern.
    fn small() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
        let pattern = prop::collection::vec(prop::sample::select(&b"ab*?/"[..]), 0..8);
        let path = prop::collection::vec(prop::sample::select(&b"ab/"[..]), 0..16);
        (pattern, path)
    }

    fn wide() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
        let pattern = prop::collection::vec(prop::sample::select(&b"ab*?[]!^-\\/."[..]), 0..14);
        let path = prop::collection::vec(prop::sample::select(&b"ab[]!^-\\/.*?"[..]), 0..20);
        (pattern, path)
    }

    /// Patterns built with a text that matches them, token by token, after
    /// a random directory prefix; a few bytes of the text then changed.
    fn matching() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
        let pairs: [(&[u8], &[u8]); 16] = [
            (b"a", b"a"),
            (b"?", b"b"),
            (b"?", b"/"),
            (b"*", b""),
            (b"*", b"a/b"),
            (b"[a-c]", b"b"),
            (b"[!a]", b"b"),
            (b"[^a-]", b"]"),
            (b"[]a]", b"]"),
            (b"[\\]", b"\\"),
            (b"\\*", b"*"),
            (b"\\", b"\\"),
            (b"[", b"["),
            (b"/", b"/"),
            (b".", b"."),
            (b"-", b"-"),
        ];
        let tokens = prop::collection::vec(prop::sample::select(pairs.to_vec()), 0..8);
        let prefix = prop::collection::vec(prop::sample::select(&b"a/."[..]), 0..8);
        let edits =
            prop::collection::vec((any::<usize>(), prop::sample::select(&b"a/]*"[..])), 0..2);
        (tokens, prefix, edits).prop_map(|(tokens, mut path, edits)| {
            let mut pattern = Vec::new();
            for (p, t) in tokens {
                pattern.extend_from_slice(p);
                path.extend_from_slice(t);
            }
            for (at, b) in edits {
                if !path.is_empty() {
                    let at = at % path.len();
                    path[at] = b;
                }
            }
            (pattern, path)
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10_000))]

        #[test]
        fn matches_like_the_reference_matching((pattern, path) in matching()) {
            prop_assert_eq!(new_matches(&pattern, &path), reference(&pattern, &path).0);
        }

        #[test]
        fn matches_like_the_reference_small((pattern, path) in small()) {
            prop_assert_eq!(new_matches(&pattern, &path), reference(&pattern, &path).0);
        }

        #[test]
        fn matches_like_the_reference_wide((pattern, path) in wide()) {
            prop_assert_eq!(new_matches(&pattern, &path), reference(&pattern, &path).0);
        }

        /// Longer patterns than one word of positions.
        #[test]
        fn matches_like_the_reference_past_64_tokens(
            pattern in prop::collection::vec(prop::sample::select(&b"aaa*?"[..]), 60..140),
            path in prop::collection::vec(prop::sample::select(&b"aaaaaaab/"[..]), 50..200),
        ) {
            prop_assert_eq!(new_matches(&pattern, &path), reference(&pattern, &path).0);
        }
    }
}
