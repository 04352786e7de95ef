//! The browser's `F`: `sdu --df`'s table of the filesystem browsed, on a
//! real terminal (tmux) and a loopback ext4, with the same figures as
//! `sdu --df --json`; any key closes it over the same scan.

use serde_json::Value;

use crate::browse::{assert_terminal_restored, pressed, start_for};
use crate::tmux::Tmux;
use crate::util::*;

#[test]
fn f_shows_the_df_table_of_the_filesystem_browsed() {
    let Some(fs) = LoopFs::new(FsKind::Ext4) else {
        return;
    };
    let Some(tmux) = Tmux::shell_sized("browse-df", 160, 40) else {
        return;
    };
    let d = fs.path();
    let t = Tree { root: d };
    t.write("dir/five", 5 << 20);
    sync_fs(d);
    let out = sdu_in(d, true, &["--df", "--json", "."]);
    out.assert_ok();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let table = &doc["filesystems"][0];
    let bytes = |name: &str| {
        (table["rows"].as_array().unwrap().iter())
            .find(|r| r["row"] == name)
            .unwrap_or_else(|| panic!("no {name}: {doc}"))["bytes"]
            .as_i64()
            .unwrap()
    };

    start_for(&tmux, &d.join("dir"), "-B1 .", "sort: total");
    let s = pressed(&tmux, "F", "unexplained");
    let line = |name: &str| {
        s.lines()
            .find(|l| l.split_whitespace().any(|w| w == name))
            .unwrap_or_else(|| panic!("no {name} row:\n{s}"))
            .to_string()
    };
    assert!(s.contains(&format!("Used {}", table["used"])), "{s}");
    let files = line("files");
    assert!(
        files
            .split_whitespace()
            .any(|w| w == bytes("files").to_string()),
        "{files} against {}:\n{s}",
        bytes("files")
    );
    assert!(line("compression").contains('\u{2014}'), "{s}");
    // Any key closes it: the tree again, the same scan.
    let s = pressed(&tmux, "x", "sort: total");
    assert!(!s.contains("unexplained"), "{s}");
    tmux.keys(&["q"]);
    assert_terminal_restored(&tmux, 0);
}
