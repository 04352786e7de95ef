//! The settings ncdu's keys and the config files reach: directories
//! first, the bar and percentage, Esc on a filter applied.

use super::*;
use crate::browse::view::layout::{BAR_AND_PCT, BAR_CELLS, Fit, PCT};

/// r/{big 500, d1/{x 10}, d2/}: a file larger than both directories.
fn mixed() -> (Tree, Sets) {
    let nodes = vec![
        rec(n(0), NodeId::NONE, 0, "", Kind::Dir, 0),
        rec(n(1), n(0), 0, "r", Kind::Dir, 4),
        rec(n(2), n(1), 1, "big", Kind::File, 500),
        rec(n(3), n(1), 1, "d1", Kind::Dir, 4 + 10),
        rec(n(4), n(1), 1, "d2", Kind::Dir, 4),
        rec(n(5), n(3), 2, "x", Kind::File, 10),
    ];
    Tree::by_hand(nodes, vec![])
}

#[test]
fn directories_first_whatever_the_order() {
    let (t, sets) = mixed();
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    assert_eq!(names(&app), ["big", "d1", "d2"]);
    app.apply(Action::DirsFirst);
    assert_eq!(names(&app), ["d1", "d2", "big"]);
    app.apply(Action::Sort(RowKey::Figure(Figure::Total)));
    assert_eq!(names(&app), ["d2", "d1", "big"], "reversed, still first");
    app.apply(Action::Sort(RowKey::Name));
    assert_eq!(names(&app), ["d1", "d2", "big"]);
    app.apply(Action::DirsFirst);
    assert_eq!(names(&app), ["big", "d1", "d2"]);
    // The flags' settings open with it.
    let s = Settings {
        dirs_first: true,
        ..Settings::default()
    };
    let app = App::new(&t, &sets, Figure::Total, by_total()).with_settings(s);
    assert_eq!(names(&app), ["d1", "d2", "big"]);
}

#[test]
fn graph_cycles_as_ncdus_and_gives_its_cells_to_the_name() {
    let (t, sets) = mixed();
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    let state = |a: &App<'_>| (a.settings().graph, a.settings().percent);
    let mut seen = vec![state(&app)];
    for _ in 0..4 {
        app.apply(Action::Graph);
        seen.push(state(&app));
    }
    assert_eq!(
        seen,
        [
            (true, true),
            (false, false),
            (true, false),
            (false, true),
            (true, true)
        ]
    );
    let full = Fit {
        shown: vec![true],
        bar: true,
        pct: true,
        name: 20,
    };
    for (graph, percent, name) in [
        (true, true, 20),
        (false, false, 20 + BAR_AND_PCT),
        (true, false, 20 + BAR_AND_PCT - BAR_CELLS - 1),
        (false, true, 20 + BAR_AND_PCT - PCT),
    ] {
        let mut f = full.clone();
        Settings {
            graph,
            percent,
            ..Settings::default()
        }
        .graph_fit(&mut f);
        assert_eq!((f.bar, f.pct, f.name), (graph, percent, name));
    }
}

#[test]
fn esc_clears_the_filter_applied_and_quits_nothing() {
    let (t, sets) = mixed();
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    app.apply(Action::Filter);
    for c in "doc".chars() {
        app.apply(Action::Type(c));
    }
    app.apply(Action::Enter);
    assert!(names(&app).is_empty(), "no name matches");
    app.apply(Action::Cancel);
    assert_eq!(app.settings().filter, None);
    assert_eq!(names(&app), ["big", "d1", "d2"]);
    app.apply(Action::Cancel);
    assert!(!app.quit, "Esc with nothing to clear does nothing");
    assert_eq!(app.mode(), KeyMode::Browse);
}
