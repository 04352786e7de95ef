//! The table of the snapshots (`p`): its cursor, its marks (the
//! browser's), Enter to the subvolume in the tree, and back.

use super::*;
use crate::browse::app::snapshots::Table;

/// A table of `a` and `b` as [`sdu::snapshot_table`] makes one: the
/// titles, the rows, a footer.
fn lines() -> Vec<(Option<NodeId>, Vec<u8>)> {
    vec![
        (None, b"Created  Total  Path".to_vec()),
        (Some(A), b"2026-12-06  108  r/a".to_vec()),
        (Some(B), b"2026-12-06  14  r/b".to_vec()),
        (None, b"  every snapshot (2) frees 1118".to_vec()),
    ]
}

#[test]
fn marking_rows_marks_their_subvolumes_and_the_footer_gives_their_union() {
    let (t, sets) = tree();
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    app.open_snapshots_with(lines());
    assert_eq!(app.mode(), KeyMode::Snapshots);
    let table = app.snapshots.table.as_ref().unwrap();
    assert_eq!(table.titles.as_deref(), Some(&b"Created  Total  Path"[..]));
    assert_eq!(table.current(), Some(A));
    // Space marks and moves down; at the last row it stays.
    app.apply(Action::Mark);
    assert_eq!(app.snapshots.table.as_ref().unwrap().current(), Some(B));
    app.apply(Action::Mark);
    app.apply(Action::Down);
    assert_eq!(app.snapshots.table.as_ref().unwrap().current(), Some(B));
    assert!(app.is_marked(A) && app.is_marked(B));
    // Their union: the hardlinked inode of both counts once, and in full.
    assert_eq!(app.marks().frees, sets.frees(&t, &[A, B]));
    assert!(app.marks().frees.bytes > sets.frees(&t, &[A]).bytes + sets.frees(&t, &[B]).bytes);
    // Back to the tree: the marks are there.
    app.apply(Action::Snapshots);
    assert_eq!(app.mode(), KeyMode::Browse);
    assert!(app.is_marked(A) && app.is_marked(B));
    // Space on a row again unmarks it; u unmarks all.
    app.open_snapshots_with(lines());
    app.apply(Action::Mark);
    assert!(!app.is_marked(A) && app.is_marked(B));
    app.apply(Action::ClearMarks);
    assert!(app.marks().ids.is_empty());
}

#[test]
fn enter_goes_to_the_subvolume_in_the_tree() {
    let (t, sets) = tree();
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    app.apply(Action::Down);
    app.apply(Action::Open);
    app.open_snapshots_with(lines());
    app.apply(Action::End);
    app.apply(Action::Open);
    assert_eq!(app.mode(), KeyMode::Browse);
    assert_eq!(app.dir(), n(1));
    assert_eq!(app.current(), Some(B));
}

/// A table without a row (off Btrfs: the one line): nothing to mark.
#[test]
fn without_a_row_nothing_to_mark() {
    let (t, sets) = tree();
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    let off = b"no snapshots: r is not on Btrfs".to_vec();
    app.open_snapshots_with(vec![(None, off.clone())]);
    let table = app.snapshots.table.as_ref().unwrap();
    assert_eq!(table.lines, [(None, off)]);
    assert_eq!(table.titles, None);
    app.apply(Action::Mark);
    app.apply(Action::Open);
    assert!(app.marks().ids.is_empty());
    assert_eq!(app.mode(), KeyMode::Snapshots);
    app.apply(Action::Snapshots);
    assert_eq!(app.mode(), KeyMode::Browse);
    // Opened again: the lines read once.
    app.apply(Action::Snapshots);
    assert_eq!(app.snapshots.table.as_ref().unwrap().lines.len(), 1);
    // Without a scan to read (a tree made by hand), a line says so.
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    app.apply(Action::Snapshots);
    let table = app.snapshots.table.as_ref().unwrap();
    assert!(table.lines[0].1.starts_with(b"no snapshots: "), "{table:?}");
    let empty = Table::new(vec![(None, b"Created  Path".to_vec())]);
    assert_eq!(
        empty.lines,
        [(None, b"(no Btrfs subvolume in the scan)".to_vec())]
    );
}
