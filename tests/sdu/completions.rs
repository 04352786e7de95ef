//! The generated files as their readers see them: the bash completion
//! script in a real bash (`complete -p`, the function called as
//! readline calls it, `COMPREPLY` read back), and the man page through
//! `man --warnings`.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::util::*;

/// What `_sdu` offers for the last of `words` (the word being completed),
/// run in `dir` by a bash that sourced completions/sdu.bash; one
/// candidate a line.
fn bash_completes(dir: &Path, words: &[&str]) -> Vec<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("completions/sdu.bash");
    // As readline calls it: COMP_WORDS and COMP_CWORD set, then the
    // function with the command, the word and the word before it.
    let body = r#"
        source "$0" || exit 1
        complete -p sdu || exit 1
        shift
        COMP_WORDS=("$@")
        COMP_CWORD=$(( $# - 1 ))
        _sdu "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}" 2>/dev/null
        printf '%s\n' "${COMPREPLY[@]}"
    "#;
    let out = run(Command::new("bash")
        .current_dir(dir)
        .arg("-c")
        .arg(body)
        .arg(&script)
        .arg("--")
        .args(words));
    assert_eq!(out.code, Some(0), "{out:?}");
    let text = out.stdout_str();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("complete -o bashdefault -o default -o nosort -F _sdu sdu"),
        "complete -p sdu"
    );
    lines.filter(|l| !l.is_empty()).map(String::from).collect()
}

#[test]
fn bash_completes_a_file_name_with_spaces_as_one_word() {
    let t = TestDir::new();
    fs::create_dir(t.path().join("dir with space")).unwrap();
    fs::write(t.path().join("dim  two"), b"").unwrap();
    fs::write(t.path().join("other"), b"").unwrap();
    for opt in [
        "--import",
        "--export",
        "--exclude-from",
        "-X",
        "--files0-from",
    ] {
        let mut got = bash_completes(t.path(), &["sdu", opt, "di"]);
        got.sort();
        assert_eq!(got, ["dim  two", "dir with space"], "{opt}");
    }
}

#[test]
fn bash_completes_the_time_styles() {
    let t = TestDir::new();
    fs::write(t.path().join("iso-file"), b"").unwrap();
    assert_eq!(
        bash_completes(t.path(), &["sdu", "--time-style", ""]),
        ["full-iso", "long-iso", "iso", "+FORMAT"]
    );
    assert_eq!(
        bash_completes(t.path(), &["sdu", "--time-style", "l"]),
        ["long-iso"]
    );
    assert_eq!(
        bash_completes(t.path(), &["sdu", "--sort", "rec"]),
        ["reclaimable"]
    );
}

#[test]
fn bash_completes_the_new_flags() {
    let t = TestDir::new();
    let mut got = bash_completes(t.path(), &["sdu", "--exclude-"]);
    got.sort();
    assert_eq!(
        got,
        ["--exclude-caches", "--exclude-from", "--exclude-kernfs"]
    );
    for flag in ["--reverse", "--files-only", "--older-than"] {
        assert_eq!(bash_completes(t.path(), &["sdu", flag]), [flag]);
    }
}

/// The man page as man renders it: no warning from groff or man.
#[test]
fn man_page_renders_without_warnings() {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("man/sdu.1");
    let mut cmd = Command::new("man");
    cmd.args(["--warnings", "-l"])
        .arg(&page)
        .env("MANWIDTH", "80")
        .env("LC_ALL", "C");
    let out = match cmd.output() {
        Ok(o) => o,
        Err(e) => {
            assert!(!in_ci(), "man: {e} (apt-get install man-db groff-base)");
            return;
        }
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.is_empty(),
        "man --warnings -l man/sdu.1: {stderr}"
    );
    // Words as they read, whatever the justification's spaces.
    let text = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for section in [
        "SYNOPSIS",
        "DELETING",
        "EXIT STATUS",
        "SEE ALSO",
        "[-d|--max-depth N]",
        "[--time[=WORD]]",
        "[PATH]...",
        "du(1), ncdu(1), btrfs-filesystem(8), compsize(8), xfs_io(8)",
    ] {
        assert!(text.contains(section), "no {section:?} in the man page");
    }
    assert!(!text.contains("[-H ]") && !text.contains("[-k ]"), "{text}");
}
