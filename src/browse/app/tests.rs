use sdu::{Ident, Link, NodeId, NodeRec, Sets};

use super::*;

mod carry;
mod guard;
mod hidden;
mod settings;
mod snapshots;

const A: NodeId = NodeId::new(2);
const B: NodeId = NodeId::new(3);
const F: NodeId = NodeId::new(4);
const G: NodeId = NodeId::new(5);
const H1: NodeId = NodeId::new(6);
const H2: NodeId = NodeId::new(7);

fn n(i: usize) -> NodeId {
    NodeId::new(i)
}

fn rec(id: NodeId, parent: NodeId, depth: u32, name: &str, kind: Kind, own: u64) -> NodeRec {
    NodeRec {
        order: 0,
        id,
        parent,
        depth,
        kind,
        leaf: kind != Kind::Dir,
        name: name.as_bytes().into(),
        own: Stats {
            total: own,
            exclusive: own,
            reclaimable: own,
            apparent: own / 2,
            ..Stats::default()
        },
    }
}

fn link(node: NodeId) -> Link {
    Link {
        ns: 0,
        entry: None,
        dev: 1,
        ino: 9,
        nlink: 2,
        node,
        stats: Stats {
            total: 1000,
            exclusive: 1000,
            ..Stats::default()
        },
    }
}

/// r/{a/{f 100, h1}, b/{g 10, h2}}, directories of 4 bytes, h1 and h2 two
/// links of one 1000-byte inode: deleting a or b alone frees nothing of
/// it, both together free all of it.
fn tree() -> (Tree, Sets) {
    tree_with("b")
}

/// [`tree`] with `b` named `b_name`.
fn tree_with(b_name: &str) -> (Tree, Sets) {
    let nodes = vec![
        rec(n(0), NodeId::NONE, 0, "", Kind::Dir, 0),
        rec(n(1), n(0), 0, "r", Kind::Dir, 4),
        // A directory's own figures hold its files' (as the walk makes
        // them); a leaf's are its file's alone.
        rec(A, n(1), 1, "a", Kind::Dir, 4 + 100),
        rec(B, n(1), 1, b_name, Kind::Dir, 4 + 10),
        rec(F, A, 2, "f", Kind::File, 100),
        rec(G, B, 2, "g", Kind::File, 10),
        rec(H1, A, 2, "h1", Kind::File, 0),
        rec(H2, B, 2, "h2", Kind::File, 0),
    ];
    Tree::by_hand(nodes, vec![link(H1), link(H2)])
}

/// What a scan saw at each entry: the same in every scan of [`tree`].
fn same(id: NodeId) -> Option<Ident> {
    Some(Ident {
        dev: 1,
        ino: id.index() as u64,
        mnt: 7,
    })
}

fn by_total() -> Sort {
    Sort {
        key: RowKey::Figure(Figure::Total),
        reverse: false,
    }
}

fn names(app: &App<'_>) -> Vec<String> {
    app.rows()
        .iter()
        .map(|&id| String::from_utf8_lossy(app.tree().name(id)).into_owned())
        .collect()
}

#[test]
fn opens_in_the_one_root_largest_first() {
    let (t, sets) = tree();
    let app = App::new(&t, &sets, Figure::Total, by_total());
    assert_eq!(app.dir(), n(1));
    assert_eq!(names(&app), ["a", "b"]);
    assert_eq!(app.dir_figures().total, 4 + 4 + 4 + 100 + 10 + 1000);
    assert_eq!(app.current(), Some(A));
}

#[test]
fn open_and_back_keep_the_place() {
    let (t, sets) = tree();
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    app.apply(Action::Down);
    app.apply(Action::Open);
    assert_eq!(app.dir(), B);
    assert_eq!(names(&app), ["h2", "g"]);
    assert_eq!(app.path(app.dir()), b"r/b");
    // A file does not open.
    app.apply(Action::Open);
    assert_eq!(app.dir(), B);
    app.apply(Action::Back);
    assert_eq!(app.dir(), n(1));
    assert_eq!(app.current(), Some(B), "the cursor is back on b");
    // Above the one root there is nothing.
    app.apply(Action::Back);
    assert_eq!(app.dir(), n(1));
}

#[test]
fn moves_clamp_at_the_ends() {
    let (t, sets) = tree();
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    app.apply(Action::Up);
    assert_eq!(app.cursor(), 0);
    app.apply(Action::End);
    assert_eq!(app.cursor(), 1);
    app.apply(Action::Down);
    assert_eq!(app.cursor(), 1);
    app.apply(Action::Home);
    assert_eq!(app.cursor(), 0);
    app.scroll(1);
    app.apply(Action::PageDown);
    assert_eq!(app.cursor(), 1);
    app.apply(Action::PageUp);
    assert_eq!(app.cursor(), 0);
    app.apply(Action::PageDown);
    assert_eq!(app.scroll(1), 1, "the cursor stays in view");
}

#[test]
fn sort_keys_and_reverse() {
    let (t, sets) = tree();
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    app.apply(Action::Open); // a: h1 (1000), f (100)
    assert_eq!(names(&app), ["h1", "f"]);
    app.apply(Action::Sort(RowKey::Figure(Figure::Total)));
    assert!(app.sort().reverse);
    assert_eq!(names(&app), ["f", "h1"]);
    assert_eq!(app.current(), Some(H1), "the cursor stays on its entry");
    app.apply(Action::Sort(RowKey::Name));
    assert_eq!(
        app.sort(),
        Sort {
            key: RowKey::Name,
            reverse: false
        }
    );
    assert_eq!(names(&app), ["f", "h1"]);
    app.apply(Action::Sort(RowKey::Name));
    assert_eq!(names(&app), ["h1", "f"]);
    // Reclaimable: f frees its 100 bytes, h1 nothing (h2 stays).
    app.apply(Action::Sort(RowKey::Figure(Figure::Reclaimable)));
    assert_eq!(names(&app), ["f", "h1"]);
    assert_eq!(app.rank(), Figure::Reclaimable);
}

#[test]
fn files_shown_and_hidden() {
    let (t, sets) = tree();
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    app.apply(Action::Open);
    assert!(app.settings().files);
    app.apply(Action::ToggleFiles);
    assert!(app.rows().is_empty());
    assert_eq!(app.current(), None);
    // Nothing to act on: no panic, nothing changes.
    for a in [Action::Down, Action::End, Action::Open, Action::Mark] {
        app.apply(a);
    }
    assert!(app.marks().ids.is_empty());
    app.apply(Action::Back);
    assert_eq!(names(&app), ["a", "b"], "directories stay");
    app.apply(Action::ToggleFiles);
    app.apply(Action::Open);
    assert_eq!(names(&app), ["h1", "f"]);
}

#[test]
fn marks_free_their_union_and_count_nested_once() {
    let (t, sets) = tree();
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    let (ra, rb) = (t.figures(A).reclaimable, t.figures(B).reclaimable);
    assert_eq!((ra, rb), (104, 14), "the shared inode is in neither alone");
    app.apply(Action::Mark);
    assert_eq!(app.current(), Some(B), "marking moves on");
    assert_eq!(app.marks().frees.bytes, 104);
    app.apply(Action::Mark);
    let m = app.marks();
    assert_eq!(m.ids, [A, B]);
    assert_eq!(
        m.frees.bytes,
        104 + 14 + 1000,
        "together they free the inode too"
    );
    assert_eq!(m.frees, sets.frees(&t, &[A, B]));
    assert_eq!(m.total, t.figures(A).total + t.figures(B).total);
    // Marks stay while moving about; a file inside a marked directory
    // counts once.
    app.apply(Action::Open);
    assert_eq!(app.dir(), B);
    app.apply(Action::Mark);
    assert!(app.is_marked(H2));
    let m = app.marks().clone();
    assert_eq!(m.ids.len(), 3);
    assert_eq!(m.total, t.figures(A).total + t.figures(B).total);
    assert_eq!(m.frees.bytes, 104 + 14 + 1000);
    // Unmark b: a and h2 free a's bytes and the inode (both links in).
    app.apply(Action::Back);
    assert_eq!(app.current(), Some(B));
    app.apply(Action::Mark);
    let m = app.marks();
    assert_eq!(m.ids, [A, H2]);
    assert_eq!(m.frees.bytes, 104 + 1000);
    assert_eq!(m.total, t.figures(A).total + 1000);
    app.apply(Action::ClearMarks);
    assert_eq!(app.marks(), &Marked::default());
}

#[test]
fn the_first_column_may_be_apparent() {
    let (t, sets) = tree();
    let mut app = App::new(&t, &sets, Figure::Apparent, by_total());
    app.apply(Action::Mark);
    assert_eq!(app.marks().total, t.figures(A).apparent);
    assert_eq!(app.rank(), Figure::Total, "sorted as asked");
    app.apply(Action::Sort(RowKey::Name));
    assert_eq!(app.rank(), Figure::Apparent, "bars by the first column");
}

#[test]
fn several_roots_open_on_their_list() {
    let nodes = vec![
        rec(n(0), NodeId::NONE, 0, "", Kind::Dir, 0),
        rec(n(1), n(0), 0, "x", Kind::Dir, 4),
        rec(n(2), n(0), 0, "y/z", Kind::Dir, 8),
        rec(n(3), n(2), 1, "w", Kind::Dir, 8),
    ];
    let (t, sets) = Tree::by_hand(nodes, vec![]);
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    assert_eq!(app.dir(), NodeId::TOP);
    assert_eq!(names(&app), ["y/z", "x"]);
    app.apply(Action::Open);
    assert_eq!(names(&app), ["w"]);
    app.apply(Action::Open);
    assert_eq!(app.path(app.dir()), b"y/z/w");
    app.apply(Action::Back);
    app.apply(Action::Back);
    assert_eq!(app.dir(), NodeId::TOP);
    assert_eq!(app.current(), Some(n(2)));
    app.apply(Action::Mark);
    app.apply(Action::Mark);
    assert_eq!(app.marks().frees.bytes, 4 + 16);
}

#[test]
fn help_and_quit() {
    let (t, sets) = tree();
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    app.apply(Action::Help);
    assert!(app.help);
    app.apply(Action::Help);
    assert!(!app.help);
    app.apply(Action::Quit);
    assert!(app.quit);
}

#[test]
fn delete_asks_for_yes_and_names_the_outermost_marks() {
    let (t, sets) = tree();
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    // Nothing marked: `d` asks about the entry under the cursor.
    app.apply(Action::Delete);
    assert_eq!(app.mode(), KeyMode::Confirm);
    assert_eq!(app.confirm.as_ref().unwrap().ids, [A]);
    app.apply(Action::Cancel);
    assert_eq!((app.mode(), app.request.clone()), (KeyMode::Browse, None));
    // a, then h2 inside b, then b: h2 goes with b.
    app.apply(Action::Mark);
    app.apply(Action::Open);
    app.apply(Action::Mark);
    app.apply(Action::Back);
    app.apply(Action::Mark);
    assert_eq!(app.outermost_marks(), [A, B]);
    app.apply(Action::Delete);
    let c = app.confirm.clone().unwrap();
    assert_eq!(c.ids, [A, B]);
    assert_eq!(c.frees, sets.frees(&t, &[A, B]));
    assert_eq!(c.total, t.figures(A).total + t.figures(B).total);
    // Anything but yes closes it, says so, and asks for nothing.
    for ch in "no".chars() {
        app.apply(Action::Type(ch));
    }
    app.apply(Action::Enter);
    assert_eq!(app.mode(), KeyMode::Notice);
    assert_eq!(
        app.notice.as_ref().unwrap()[0],
        "Kept the 2 entries: only yes deletes."
    );
    assert_eq!(app.request, None);
    app.apply(Action::Dismiss);
    // Enter on nothing typed, the same.
    app.apply(Action::Delete);
    app.apply(Action::Enter);
    assert_eq!((app.mode(), app.request.clone()), (KeyMode::Notice, None));
    app.apply(Action::Dismiss);
    app.apply(Action::Delete);
    for ch in "yess".chars() {
        app.apply(Action::Type(ch));
    }
    app.apply(Action::Erase);
    app.apply(Action::Enter);
    assert_eq!(app.request, Some(Request::Delete(vec![A, B])));
    assert_eq!(app.mode(), KeyMode::Browse);
}

#[test]
fn a_saved_scan_does_not_delete() {
    let (t, sets) = tree();
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    app.can_delete = false;
    app.apply(Action::Delete);
    assert_eq!(app.mode(), KeyMode::Notice);
    assert!(app.confirm.is_none());
    app.apply(Action::Dismiss);
    assert_eq!(app.mode(), KeyMode::Browse);
}

#[test]
fn r_and_b_ask_the_event_loop_on_a_live_scan_only() {
    let (t, sets) = tree();
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    app.apply(Action::Shell);
    assert_eq!(app.request, Some(Request::Shell));
    let mut saved = App::new(&t, &sets, Figure::Total, by_total());
    saved.can_delete = false;
    for a in [Action::Rescan, Action::Shell] {
        saved.apply(a);
        assert_eq!(
            (saved.mode(), saved.request.clone()),
            (KeyMode::Notice, None)
        );
        assert!(saved.notice.as_ref().unwrap()[0].contains("saved scan"));
        saved.apply(Action::Dismiss);
    }
}

/// ncdu's marks: `!` unread, `.` read in part or above one that was not
/// read in full; the errors of each directory, the whole failure first.
#[test]
fn unread_directories_are_marked_as_ncdu_marks_them() {
    use sdu::ReadError;
    let (t, _) = tree();
    let err = |node, whole, what: &str| ReadError {
        node,
        whole,
        what: what.into(),
    };
    let errors = [
        err(A, true, "cannot read directory: Permission denied"),
        err(B, false, "cannot access 'x': Permission denied"),
        err(B, false, "cannot access 'y': Permission denied"),
    ];
    let u = Unread::new(&t, &errors);
    assert_eq!(
        [n(1), A, B, F, G].map(|id| u.mark(id)),
        ['.', '!', '.', ' ', ' ']
    );
    assert_eq!(u.of(B).len(), 2);
    assert_eq!(u.of(F), []);
    assert!(u.below(n(1)) && !u.below(A));
}

/// The columns kept at every width: the name gets what is left, and no
/// less than 16 cells while something is left to drop (its widest name's
/// when narrower, never less than its title's); the bar goes
/// first, then the percentage, then the columns in the order given; and a
/// wider screen never shows less.
#[test]
fn columns_drop_in_order_before_the_name_goes_below_16() {
    use crate::browse::view::layout::{LEAD, NAME_MIN, NAME_TITLE, fit};
    let widths = [5, 9, 6, 11, 5, 16];
    let drop = [2, 1, 5, 4, 3, 0];
    for longest in [1, 5, 15, 16, 40, 255] {
        // Never narrower than the column's title.
        let want = longest.clamp(NAME_TITLE.len(), NAME_MIN);
        let mut before: Option<usize> = None;
        for width in 20..=250 {
            let f = fit(width, &widths, &drop, longest);
            let kept: usize = widths
                .iter()
                .zip(&f.shown)
                .filter(|(_, s)| **s)
                .map(|(w, _)| w + 2)
                .sum();
            let extra = if f.bar {
                19
            } else if f.pct {
                6
            } else {
                0
            };
            assert_eq!(LEAD + kept + extra + f.name, width.max(LEAD + kept + extra));
            let all_dropped = !f.bar && !f.pct && f.shown.iter().all(|s| !s);
            assert!(f.name >= want || all_dropped, "{width} {longest}: {f:?}");
            // The order: the bar before the percentage before any column.
            assert!(!f.bar || f.pct, "{width}: {f:?}");
            if f.shown.iter().any(|s| !s) {
                assert!(!f.pct, "{width}: {f:?}");
            }
            // The columns dropped are the first ones of `drop`.
            let n = f.shown.iter().filter(|s| !**s).count();
            for (k, &i) in drop.iter().enumerate() {
                assert_eq!(f.shown[i], k >= n, "{width}: {f:?}");
            }
            // Nothing was dropped that the name did not need: putting the
            // last one back leaves it less than it wants.
            let shown =
                usize::from(f.bar) + usize::from(f.pct) + f.shown.iter().filter(|s| **s).count();
            if let Some(b) = before {
                assert!(shown >= b, "{width}: fewer parts than one cell narrower");
            }
            before = Some(shown);
            let back = if f.bar {
                None
            } else if f.pct {
                Some(19 - 6)
            } else if n > 0 {
                Some(widths[drop[n - 1]] + 2)
            } else {
                Some(6)
            };
            if let Some(b) = back {
                assert!(
                    f.name < want + b,
                    "{width} {longest}: {f:?} could keep more"
                );
            }
        }
    }
}

#[test]
fn names_shorten_in_the_middle_and_paths_from_the_left() {
    use crate::browse::view::layout::{left, middle, width};
    assert_eq!(middle("short", 16), "short");
    let long = "a_very_long_file_name_that_goes_on.tar.gz";
    for room in 1..=long.len() {
        let m = middle(long, room);
        assert_eq!(width(&m), room.min(long.len()), "{m}");
        if room < long.len() {
            assert!(m.contains('…'), "{m}");
            assert!(long.starts_with(m.split('…').next().unwrap()));
            assert!(long.ends_with(m.split('…').nth(1).unwrap()));
        }
    }
    assert_eq!(middle(long, 16), "a_very_…n.tar.gz");
    // Wide characters count two cells.
    let wide = middle("日本語のファイル名です", 9);
    assert!(width(&wide) <= 9 && wide.contains('…'), "{wide}");
    assert_eq!(left("a/b", 10), "a/b");
    assert_eq!(left("top/d/d/d/d/d/d/c/d", 8), "…/d/c/d");
    assert!(width(&left(&"x/".repeat(300), 40)) <= 40);
    assert!(left(&"x/".repeat(300), 40).starts_with("…/"));
}

/// r/{.x 50, y 5}: a dotfile beside a plain file.
fn dotted() -> (Tree, Sets) {
    let nodes = vec![
        rec(n(0), NodeId::NONE, 0, "", Kind::Dir, 0),
        rec(n(1), n(0), 0, "r", Kind::Dir, 4 + 55),
        rec(n(2), n(1), 1, ".x", Kind::File, 50),
        rec(n(3), n(1), 1, "y", Kind::File, 5),
    ];
    Tree::by_hand(nodes, vec![])
}

#[test]
fn dotfiles_shown_and_hidden() {
    let (t, sets) = dotted();
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    assert_eq!(names(&app), [".x", "y"]);
    app.apply(Action::ToggleDotfiles);
    assert_eq!(names(&app), ["y"]);
    assert!(!app.settings().dotfiles);
    app.apply(Action::ToggleDotfiles);
    assert_eq!(names(&app), [".x", "y"]);
}

#[test]
fn the_filter_types_applies_and_clears() {
    let (t, sets) = tree();
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    app.apply(Action::Open); // a: h1, f
    app.apply(Action::Filter);
    assert_eq!(app.mode(), KeyMode::Filter);
    for c in "h1x".chars() {
        app.apply(Action::Type(c));
    }
    app.apply(Action::Erase);
    assert_eq!(names(&app), ["h1", "f"], "applied by Enter, not before");
    app.apply(Action::Enter);
    assert_eq!(app.mode(), KeyMode::Browse);
    assert_eq!(names(&app), ["h1"]);
    assert_eq!(app.settings().filter.as_deref(), Some("h1"));
    // It holds in the directory opened next.
    app.apply(Action::Back);
    assert!(names(&app).is_empty());
    app.apply(Action::Filter);
    assert_eq!(app.filter_edit.as_deref(), Some("h1"), "the filter to edit");
    app.apply(Action::Cancel);
    assert_eq!(app.mode(), KeyMode::Browse);
    assert_eq!(app.settings().filter, None);
    assert_eq!(names(&app), ["a", "b"]);
    assert!(!app.quit, "Esc in the filter clears it, not quits");
}

#[test]
fn counts_times_apparent_and_info() {
    let (t, sets) = tree();
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    // (This tree's records count no files: the count is the tmux test's.)
    assert_eq!(items(&t, F), 0);
    app.apply(Action::ToggleCount);
    assert!(app.settings().count);
    app.apply(Action::ToggleCount);
    app.apply(Action::Sort(RowKey::Count));
    assert!(app.settings().count, "sorting by count shows the column");
    assert_eq!(app.rank(), Figure::Total);
    app.apply(Action::Sort(RowKey::Time));
    assert!(app.settings().time);
    // Apparent in place of Total, the sort by size following it.
    app.apply(Action::SortSize);
    assert_eq!(app.sort().key, RowKey::Figure(Figure::Total));
    app.apply(Action::Apparent);
    assert_eq!(app.first, Figure::Apparent);
    assert_eq!(app.sort().key, RowKey::Figure(Figure::Apparent));
    app.apply(Action::Apparent);
    assert_eq!(app.first, Figure::Total);
    // The info of the entry under the cursor; any key closes it.
    app.apply(Action::Info);
    assert_eq!(app.mode(), KeyMode::Info);
    assert_eq!(app.info.as_ref().map(|i| i.id), app.current());
    app.apply(Action::Dismiss);
    assert_eq!(app.mode(), KeyMode::Browse);
}
