//! What hides the entries of the directory shown ([`App::hidden`]), the
//! count the body gives when no row is left.

use super::*;

/// In `a` (f 100, h1): `a` hides both files; with them shown, a filter
/// that no name holds hides both; a filter one name holds hides the other.
/// Each entry is counted once, by the first rule that hides it.
#[test]
fn hidden_counts_each_entry_by_what_hides_it() {
    let (t, sets) = tree();
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    assert_eq!(app.current(), Some(A));
    app.apply(Action::Open);
    assert_eq!((app.rows().len(), app.hidden()), (2, Hidden::default()));
    app.apply(Action::ToggleFiles);
    assert!(app.rows().is_empty());
    let files = Hidden {
        files: 2,
        ..Hidden::default()
    };
    assert_eq!(app.hidden(), files);
    let filter = |app: &mut App<'_>, text: &str| {
        app.apply(Action::Filter);
        for _ in 0..8 {
            app.apply(Action::Erase);
        }
        for c in text.chars() {
            app.apply(Action::Type(c));
        }
        app.apply(Action::Enter);
    };
    // Hidden by `a` first, whatever the filter says.
    filter(&mut app, "zz");
    assert_eq!(app.hidden(), files);
    app.apply(Action::ToggleFiles);
    let by_filter = |n| Hidden {
        filtered: n,
        ..Hidden::default()
    };
    assert_eq!((app.rows().len(), app.hidden()), (0, by_filter(2)));
    filter(&mut app, "h");
    assert_eq!((app.rows(), app.hidden()), (&[H1][..], by_filter(1)));
    // No gone rows without --compare, and no gone row under the cursor.
    assert!(app.gone().is_empty() && app.current_gone().is_none());
}
