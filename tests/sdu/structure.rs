//! The shape of the code base, checked: every import goes down the
//! layers and no module file imports one that imports it back (`layers`,
//! which parses the code), no source file is over 700 lines (unit tests
//! aside) and no test file over 1,000, `unsafe` stays in crates/sdu-sys,
//! and nothing in the project points outside it for a definition.
//!
//! And the text around the code: every `src/…` and `tests/…` path that the
//! Markdown files (and Cargo.toml, for `src/…`) name exists; the docs and
//! the code speak of the product as it is, with no history in them (no
//! word of when or in which run of work something was measured, no "pass
//! N", no branch names: that is what `git log` is for); README.md and
//! BENCHMARKS.md stay at most 400 lines, no other Markdown page is over
//! 800, every relative link reaches its file and heading (`docs`), and no
//! test file reaches 1,000.

mod docs;
mod layers;

use std::fs;
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The code of a file for the `unsafe` check: without its `#[cfg(test)]`
/// part and comments.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn no_source_file_is_over_700_lines_unit_tests_aside() {
    let mut paths = Vec::new();
    rust_files(&src(), &mut paths);
    let long: Vec<String> = paths
        .iter()
        .filter_map(|p| {
            let text = fs::read_to_string(p).unwrap();
            // The unit tests' module, private or shared with the parent's
            // other tests (`pub(super) mod tests`).
            let at = [
                "#[cfg(test)]\nmod tests",
                "#[cfg(test)]\npub(super) mod tests",
            ]
            .iter()
            .filter_map(|m| text.find(m))
            .min();
            let before_tests = match at {
                Some(i) => &text[..i],
                None => &text,
            };
            let n = before_tests.lines().count();
            (n > 700).then(|| format!("{}: {n} lines", p.display()))
        })
        .collect();
    assert!(long.is_empty(), "{long:?}");
}

#[test]
fn no_test_file_is_over_1000_lines() {
    let mut paths = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests"),
        &mut paths,
    );
    assert!(paths.len() > 20, "read {} test files", paths.len());
    let long: Vec<String> = paths
        .iter()
        .filter_map(|p| {
            let n = fs::read_to_string(p).unwrap().lines().count();
            (n > 1000).then(|| format!("{}: {n} lines", p.display()))
        })
        .collect();
    assert!(long.is_empty(), "{long:?}");
}

#[test]
fn unsafe_only_in_the_sys_crate() {
    // The root crate: none (`#![forbid(unsafe_code)]` makes the compiler
    // refuse it; this keeps the forbid and any word of it out).
    let mut paths = Vec::new();
    rust_files(&src(), &mut paths);
    for p in &paths {
        let text = fs::read_to_string(p).unwrap();
        let rel = p.strip_prefix(src()).unwrap().to_string_lossy().to_string();
        let code = code(&text);
        let uses = ["unsafe {", "unsafe fn", "unsafe impl", "unsafe extern"]
            .iter()
            .any(|u| code.contains(u));
        assert!(!uses, "{rel} uses unsafe");
        assert!(!text.contains("allow(unsafe_code)"), "{rel} allows unsafe");
    }
    for root in ["lib.rs", "main.rs"] {
        let text = fs::read_to_string(src().join(root)).unwrap();
        assert!(text.contains("#![forbid(unsafe_code)]"), "src/{root}");
    }
    // crates/sdu-sys: every unsafe block carries its SAFETY line just
    // above it (clippy's undocumented_unsafe_blocks checks it too).
    let sys = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/sdu-sys/src");
    let mut paths = Vec::new();
    rust_files(&sys, &mut paths);
    assert!(paths.len() > 5, "read {} sdu-sys files", paths.len());
    let mut blocks = 0;
    for p in &paths {
        let text = fs::read_to_string(p).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            if l.contains("unsafe {") && !l.trim_start().starts_with("//") {
                blocks += 1;
                let above = lines[i.saturating_sub(8)..i].join("\n");
                assert!(
                    above.contains("// SAFETY:"),
                    "{}:{}: no SAFETY line",
                    p.display(),
                    i + 1
                );
            }
        }
    }
    assert!(blocks > 10, "only {blocks} unsafe blocks found in sdu-sys");
}

#[test]
fn nothing_points_outside_the_project_for_a_definition() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut bad = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if name == "target" || name.starts_with('.') && name != ".ci" {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let Ok(text) = fs::read_to_string(&p) else {
                continue;
            };
            // This file names the patterns it looks for.
            if p.ends_with("tests/sdu/structure.rs") {
                continue;
            }
            for (n, line) in text.lines().enumerate() {
                if line.contains("../shared")
                    || line.contains("shared docs")
                    || line.contains("DESIGN.md")
                    || line.contains("DESIGN:")
                {
                    bad.push(format!("{}:{}: {}", p.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The project's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// The Markdown files that speak of the product: the README, the
/// benchmarks and `docs/*.md`.
fn markdown_files() -> Vec<PathBuf> {
    let mut out = vec![root().join("README.md"), root().join("BENCHMARKS.md")];
    let mut docs: Vec<PathBuf> = fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    out.extend(docs);
    out
}

/// Every file under `dir`, recursively.
fn all_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            all_files(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// The `src/…` paths a text names: `src/` where no path or word goes on
/// before it, up to the first character a path here does not hold, without
/// a closing `.`, `,` or `:`.
fn src_paths(text: &str) -> Vec<String> {
    paths_under(text, "src/")
}

/// The paths a text names that start with `dir` (`src/`, `tests/`), read
/// as [`src_paths`] reads them.
fn paths_under(text: &str, dir: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let path_char = |b: u8| b.is_ascii_alphanumeric() || b"_./-".contains(&b);
    let mut out = Vec::new();
    for (i, _) in text.match_indices(dir) {
        if i > 0 && path_char(bytes[i - 1]) {
            continue;
        }
        let end = (i..bytes.len())
            .find(|&j| !path_char(bytes[j]))
            .unwrap_or(bytes.len());
        let p = text[i..end].trim_end_matches(['.', ',', ':']);
        out.push(p.to_string());
    }
    out
}

#[test]
fn every_src_and_crates_path_the_docs_name_exists() {
    let mut files = markdown_files();
    files.push(root().join("Cargo.toml"));
    let mut bad = Vec::new();
    let mut seen = 0;
    for f in &files {
        let text = fs::read_to_string(f).unwrap();
        for p in src_paths(&text)
            .into_iter()
            .chain(paths_under(&text, "crates/"))
        {
            seen += 1;
            if !root().join(&p).exists() {
                bad.push(format!("{}: {p}", f.display()));
            }
        }
    }
    // The docs name the sources: an empty harvest means the scan broke.
    assert!(seen > 50, "only {seen} src/ paths found");
    assert!(
        bad.is_empty(),
        "paths that do not exist:\n{}",
        bad.join("\n")
    );
}

#[test]
fn every_tests_path_the_docs_name_exists() {
    let mut bad = Vec::new();
    let mut seen = 0;
    for f in markdown_files() {
        let text = fs::read_to_string(&f).unwrap();
        for p in paths_under(&text, "tests/") {
            seen += 1;
            // coreutils' own test directory, which scripts/gnu-du-tests runs.
            if p == "tests/du" {
                continue;
            }
            if !root().join(&p).exists() {
                bad.push(format!("{}: {p}", f.display()));
            }
        }
    }
    assert!(seen > 5, "only {seen} tests/ paths found");
    assert!(
        bad.is_empty(),
        "paths that do not exist:\n{}",
        bad.join("\n")
    );
}

/// The word for one sitting of work, spelt out at run time so that this
/// file does not hold it whole.
static RUN_WORD: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| format!("sess{}", "ion"));

/// Words that tell history, not the product: [`RUN_WORD`] (tmux's own
/// words aside: a tmux one, `new-` and `kill-` ones), "pass N" and "the
/// sixth pass", and the ways branches get named. What is found, as
/// `word: line`.
fn history_words(text: &str) -> Vec<String> {
    const ORDINALS: [&str; 8] = [
        "third ", "fourth ", "fifth ", "sixth ", "seventh ", "eighth ", "ninth ", "tenth ",
    ];
    const BRANCH: [&str; 10] = [
        "this branch",
        "that branch",
        "the branch",
        "'s branch",
        "branch `",
        "branch '",
        "on branch",
        "merged main",
        "final main",
        "main at commit",
    ];
    let mut out = Vec::new();
    for line in text.lines() {
        let l = line.to_lowercase();
        let b = l.as_bytes();
        for (i, _) in l.match_indices(RUN_WORD.as_str()) {
            let tmux = (i > 0 && b[i - 1] == b'-') || l[..i].ends_with("tmux ");
            if !tmux {
                out.push(format!("{}: {}", *RUN_WORD, line.trim()));
            }
        }
        for (i, _) in l.match_indices("pass") {
            if i > 0 && b[i - 1].is_ascii_alphanumeric() {
                continue;
            }
            let rest = l[i + 4..].trim_start();
            let numbered = rest
                .trim_start_matches('#')
                .starts_with(|c: char| c.is_ascii_digit());
            if numbered || ORDINALS.iter().any(|o| l[..i].ends_with(o)) {
                out.push(format!("pass N: {}", line.trim()));
            }
        }
        for w in BRANCH {
            if l.contains(w) {
                out.push(format!("branch ({w}): {}", line.trim()));
            }
        }
        // Branches named after what they worked on, `floor2`, `floor3-m`.
        for (i, _) in l.match_indices("floor") {
            if b.get(i + 5).is_some_and(u8::is_ascii_digit) {
                out.push(format!("branch (floorN): {}", line.trim()));
            }
        }
    }
    out
}

#[test]
fn the_docs_and_the_code_tell_no_history() {
    let mut files = markdown_files();
    all_files(&src(), &mut files);
    all_files(&root().join("tests"), &mut files);
    let mut bad = Vec::new();
    for f in &files {
        // This file names the words it looks for.
        if f.ends_with("tests/sdu/structure.rs") {
            continue;
        }
        let Ok(text) = fs::read_to_string(f) else {
            continue;
        };
        for w in history_words(&text) {
            bad.push(format!("{}: {w}", f.display()));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn the_history_finder_finds_history() {
    let found = |s: &str| !history_words(s).is_empty();
    // The words are put together here, so that this file holds none of
    // them whole for a plain grep to find.
    let s = "sess";
    assert!(found(&format!("measured in {s}ion 8")));
    assert!(found(&format!("S{}ion 5's binary", &s[1..])));
    assert!(found("the syscall floor, pass 3"));
    assert!(found("the sixth pass"));
    assert!(found(&format!("on the help{}s branch `floor3`", "er'")));
    assert!(found("before this branch"));
    assert!(found("in floor2-m"));
    let t = "tmux";
    assert!(!found(&format!("{t} new-{s}ion -d; {t} kill-{s}ion")));
    assert!(!found(&format!("a server with one {t} {s}ion")));
    assert!(!found("its second pass starts where the first ended"));
    assert!(!found("passes 96 of the 100 runs; bypass 2 checks"));
    assert!(!found("the directory branch of `entry_as`, the floor row"));
    assert_eq!(
        src_paths("`src/walk.rs`, (src/a/b.rs). x/src/c.rs src/tree/"),
        ["src/walk.rs", "src/a/b.rs", "src/tree/"]
    );
}

#[test]
fn the_readme_and_the_benchmarks_stay_short() {
    // BENCHMARKS.md is generated, a section per bench tree (the Btrfs
    // snapshot trees' two counts included); the README is written.
    for (name, most) in [("README.md", 400), ("BENCHMARKS.md", 480)] {
        let n = fs::read_to_string(root().join(name))
            .unwrap()
            .lines()
            .count();
        assert!(n <= most, "{name} has {n} lines (at most {most})");
    }
}

/// The packages of the first `apt-get install` in `text`, its `\`
/// continuations joined, up to the end of the line or a backquote; its
/// options (`-y`) left out.
fn apt_packages(text: &str) -> std::collections::BTreeSet<String> {
    let joined = text.replace("\\\n", " ");
    let at = joined
        .find("apt-get install")
        .expect("an apt-get install line");
    let rest = &joined[at + "apt-get install".len()..];
    let end = rest.find(['\n', '`']).unwrap_or(rest.len());
    rest[..end]
        .split_whitespace()
        .filter(|w| !w.starts_with('-'))
        .map(str::to_owned)
        .collect()
}

/// The README's Quick start installs what `.ci/run` installs (the packages
/// of its apt-get line, and selenium through pip) and asks for the Rust
/// that Cargo.toml's `rust-version` says, with rustup's command: neither
/// can drift from the other.
#[test]
fn the_readme_installs_what_ci_installs() {
    let read = |name: &str| fs::read_to_string(root().join(name)).unwrap();
    let (readme, ci, cargo) = (read("README.md"), read(".ci/run"), read("Cargo.toml"));
    let (want, have) = (apt_packages(&ci), apt_packages(&readme));
    assert!(want.len() > 10, "{want:?}");
    assert_eq!(have, want, "README.md's apt-get line and .ci/run's differ");
    assert!(ci.contains("pip install selenium") && readme.contains("pip install"));
    assert!(
        readme.contains("selenium"),
        "README.md does not install selenium"
    );
    let version = cargo
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .expect("Cargo.toml's rust-version")
        .trim_matches('"');
    assert!(
        readme.contains(&format!("Rust {version} or newer")),
        "README.md does not ask for Rust {version}"
    );
    assert!(readme.contains("https://sh.rustup.rs | sh"));
    // The finder reads both forms.
    assert_eq!(
        apt_packages("x\napt-get install -y --no-x a b \\\n    c\nd e"),
        apt_packages("`apt-get install -y a b c` and d"),
    );
}

/// Whether a source file is unit-test code only (a `tests.rs`, a file of a
/// `tests/` directory, a `*_tests.rs` and what lies under one).
fn test_only(rel: &str) -> bool {
    rel.ends_with("/tests.rs")
        || rel.contains("/tests/")
        || rel
            .split('/')
            .any(|c| c.trim_end_matches(".rs").ends_with("_tests"))
}

#[test]
fn every_source_file_has_a_line_in_the_source_map() {
    let map = fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let listed: std::collections::BTreeSet<&str> = map
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    rust_files(&root().join("crates/sdu-sys/src"), &mut files);
    let missing: Vec<String> = files
        .iter()
        .map(|f| {
            f.strip_prefix(root())
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|rel| !test_only(rel) && !listed.contains(rel.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "files without a line in docs/architecture.md's source map:\n{}",
        missing.join("\n")
    );
}

/// The items `src/` declares `pub`, counted as
/// `grep -rE '^\s*pub (fn|struct|enum|mod|const|type|trait|static|use|unsafe fn)' src`
/// counts them: the facade in src/lib.rs and what its types expose. The
/// rest of the crate is `pub(crate)` or narrower.
#[test]
fn the_public_items_stay_few() {
    const MOST: usize = 150;
    let kinds = [
        "fn",
        "struct",
        "enum",
        "mod",
        "const",
        "type",
        "trait",
        "static",
        "use",
        "unsafe fn",
    ];
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let mut public = Vec::new();
    for f in &files {
        let text = fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            let rest = line.trim_start();
            if let Some(after) = rest.strip_prefix("pub ")
                && kinds.iter().any(|k| after.starts_with(&format!("{k} ")))
            {
                public.push(format!("{}:{}", f.display(), n + 1));
            }
        }
    }
    assert!(
        public.len() <= MOST,
        "{} pub items in src/, at most {MOST} (make the new ones pub(crate), or \
         review the facade in src/lib.rs):\n{}",
        public.len(),
        public.join("\n")
    );
    // The count reads the source: an empty one means the scan broke.
    assert!(public.len() > 20, "only {} pub items found", public.len());
}
