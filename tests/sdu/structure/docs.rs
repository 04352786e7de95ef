//! The docs stay navigable: no Markdown page is over 800 lines, and every
//! relative link (`page.md`, `page.md#heading`, `#heading`) in README.md,
//! BENCHMARKS.md and `docs/*.md` names a file that exists and, with an
//! anchor, a heading of that file, by GitHub's rules for heading anchors.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Component, Path, PathBuf};

use super::{markdown_files, root};

/// Whether a line opens or closes a fenced code block (in a list item
/// too, indented).
fn fence(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("```") || t.starts_with("~~~")
}

/// The lines of a Markdown text outside its fenced code blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut inside = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if fence(line) {
            inside = !inside;
        } else if !inside {
            out.push(line);
        }
    }
    out
}

/// A heading's anchor as GitHub makes it: a link keeps its text only, the
/// rest is lowercased, every character that is not a letter, a digit, a
/// space, `-` or `_` is dropped, and each space becomes `-`.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    while let Some(open) = rest.find('[') {
        let Some(mid) = rest[open..].find("](") else {
            break;
        };
        let Some(close) = rest[open + mid..].find(')') else {
            break;
        };
        text.push_str(&rest[..open]);
        text.push_str(&rest[open + 1..open + mid]);
        rest = &rest[open + mid + close + 1..];
    }
    text.push_str(rest);
    text.trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown text's headings; a heading met again gets
/// `-1`, `-2`, … as on GitHub.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in prose(text) {
        let hashes = line.len() - line.trim_start_matches('#').len();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(line[hashes..].trim_end_matches([' ', '#']));
        let mut anchor = base.clone();
        let mut n = 0;
        while out.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        out.insert(anchor);
    }
    out
}

/// The targets of a text's inline links, `[text](target)`, outside code
/// blocks; the link text may run over lines.
fn link_targets(text: &str) -> Vec<String> {
    let body = prose(text).join("\n");
    let mut out = Vec::new();
    for (i, _) in body.match_indices("](") {
        let rest = &body[i + 2..];
        if let Some(end) = rest.find([')', ' ', '\n']) {
            out.push(rest[..end].to_string());
        }
    }
    out
}

/// `base/rel` with `.` and `..` resolved, as a link is read.
fn resolve(base: &Path, rel: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for c in base.join(rel).components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// The broken relative links of one Markdown file: no such file, or no
/// such heading in it.
fn broken_links(file: &Path) -> Vec<String> {
    let text = fs::read_to_string(file).unwrap();
    let mut bad = Vec::new();
    for target in link_targets(&text) {
        if target.contains(':') || target.is_empty() {
            continue; // a URL (https:, mailto:), not a page of the project
        }
        let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
        let page = if path.is_empty() {
            file.to_path_buf()
        } else {
            resolve(file.parent().unwrap(), path)
        };
        if !page.exists() {
            bad.push(format!("{target}: no file {}", page.display()));
        } else if !anchor.is_empty() && page.extension().is_some_and(|x| x == "md") {
            let heads = anchors(&fs::read_to_string(&page).unwrap());
            if !heads.contains(anchor) {
                bad.push(format!("{target}: no such heading in {}", page.display()));
            }
        }
    }
    bad
}

#[test]
fn no_markdown_page_is_over_800_lines() {
    for file in markdown_files() {
        let n = fs::read_to_string(&file).unwrap().lines().count();
        assert!(n <= 800, "{} has {n} lines (at most 800)", file.display());
    }
}

#[test]
fn every_relative_markdown_link_resolves() {
    let mut bad = Vec::new();
    for file in markdown_files() {
        let rel = file.strip_prefix(root()).unwrap().display().to_string();
        bad.extend(
            broken_links(&file)
                .into_iter()
                .map(|b| format!("{rel}: {b}")),
        );
    }
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
}

#[test]
fn the_link_checker_reads_headings_as_github_does() {
    assert_eq!(
        slug("Saved scans: `--export`, `--import`"),
        "saved-scans---export---import"
    );
    assert_eq!(
        slug("Browsing and marking: `sdu -i`"),
        "browsing-and-marking-sdu--i"
    );
    assert_eq!(slug("The examples' tree"), "the-examples-tree");
    assert_eq!(slug("See [the guide](guide.md) now"), "see-the-guide-now");
    let text = "# A\n```\n# not a heading\n```\n## A\n  ```\n## B\n  ```\n";
    let got: Vec<String> = anchors(text).into_iter().collect();
    assert_eq!(got, ["a", "a-1"]);
    let links = link_targets("[x](a.md#b) and [two\nlines](#c)\n```\n[no](d.md)\n```\n");
    assert_eq!(links, ["a.md#b", "#c"]);
}
