//! `--tree` on a real terminal (tmux, a private server): the bars take the
//! columns the terminal has, so that the longest line just fits; in a pipe
//! they keep their 20 cells.

use crate::tmux::{PROMPT, Tmux, last_line};
use crate::util::*;

/// The cells of the bar on each line of the tree (the root's is full).
fn bars(screen: &str) -> Vec<usize> {
    screen
        .lines()
        .filter(|l| l.contains('%') && !l.contains("% of root"))
        .map(|l| l.chars().filter(|c| "█▏▎▍▌▋▊▉░".contains(*c)).count())
        .collect()
}

/// Runs `sdu --tree` on `dir` in a pane `width` columns wide; the lines
/// it printed.
fn tree_at(dir: &std::path::Path, width: u16, pipe: bool) -> Vec<String> {
    let Some(t) = Tmux::shell_sized(&format!("tree-{width}-{pipe}"), width, 30) else {
        return Vec::new();
    };
    let cmd = format!(
        "cd '{}' && clear && '{}' --tree -d 2 --color never t{}",
        dir.display(),
        sdu_bin().display(),
        if pipe { " | cat" } else { "" }
    );
    t.keys(&[&cmd, "Enter"]);
    let screen = t.wait_for("the tree and the prompt", |s| {
        s.contains("% of root") && last_line(s) == PROMPT
    });
    screen
        .lines()
        .skip_while(|l| !l.contains("% of root"))
        .take_while(|l| !l.starts_with(PROMPT))
        .map(str::to_owned)
        .collect()
}

#[test]
fn tree_bars_fill_the_terminal_width() {
    let d = TestDir::new();
    let t = d.path().join("t");
    std::fs::create_dir_all(t.join("a/long-directory-name")).unwrap();
    std::fs::create_dir_all(t.join("b")).unwrap();
    write_file(&t.join("a/long-directory-name/f"), 200_000);
    write_file(&t.join("b/g"), 50_000);
    let mut cells = Vec::new();
    for width in [100u16, 160] {
        let lines = tree_at(d.path(), width, false);
        if lines.is_empty() {
            return;
        }
        let longest = lines.iter().map(|l| l.chars().count()).max().unwrap();
        // The longest line leaves the last column free, no more.
        assert_eq!(longest, usize::from(width) - 1, "{lines:#?}");
        let b = bars(&lines.join("\n"));
        assert!(b.len() == 4 && b.iter().all(|&n| n == b[0]), "{lines:#?}");
        cells.push(b[0]);
    }
    // 60 columns more, 60 cells more.
    assert_eq!(cells[1], cells[0] + 60, "{cells:?}");
    assert!(cells[0] > 20, "{cells:?}");
    // In a pipe, the width is not the terminal's: 20 cells.
    let lines = tree_at(d.path(), 160, true);
    let b = bars(&lines.join("\n"));
    assert!(!b.is_empty() && b.iter().all(|&n| n == 20), "{lines:#?}");
}
