//! The cursor and the marks carried over a new scan (`r`, `b`).

use super::*;

#[test]
fn a_rescan_resumes_in_the_same_directory() {
    let (t, sets) = tree();
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    app.apply(Action::Down);
    app.apply(Action::Open);
    app.apply(Action::Sort(RowKey::Name));
    app.apply(Action::ToggleFiles);
    let carry = app.carry(same);
    let again = App::resume(&t, &sets, Figure::Total, carry, same);
    assert_eq!(again.dir(), B);
    assert_eq!(again.sort().key, RowKey::Name);
    assert!(!again.settings().files);
}

/// `r`: the cursor stays on its name, and the marks that still exist stay
/// marked (by their names, in the new tree), with their figures.
#[test]
fn a_rescan_keeps_the_cursor_and_the_marks_that_still_exist() {
    let (t, sets) = tree();
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    app.apply(Action::Sort(RowKey::Name));
    app.apply(Action::Open);
    app.apply(Action::Mark);
    app.apply(Action::Back);
    app.apply(Action::Down);
    app.apply(Action::Mark);
    app.apply(Action::Up);
    assert_eq!(app.marks().ids, [B, F]);
    app.apply(Action::Rescan);
    assert_eq!(app.request, Some(Request::Rescan));
    let again = App::resume(&t, &sets, Figure::Total, app.carry(same), same);
    assert_eq!((again.dir(), again.current()), (n(1), Some(A)));
    assert_eq!(again.marks(), app.marks());
    // b renamed since: its mark is gone, f's stays, and what the marks
    // free is that of f alone.
    let (t2, sets2) = tree_with("b2");
    let again = App::resume(&t2, &sets2, Figure::Total, app.carry(same), same);
    assert_eq!(again.marks().ids, [F]);
    assert_eq!(again.marks().frees, sets2.frees(&t2, &[F]));
    // The cursor's entry gone: the first row.
    let mut on_b = App::new(&t, &sets, Figure::Total, by_total());
    on_b.apply(Action::Sort(RowKey::Name));
    on_b.apply(Action::Down);
    assert_eq!(on_b.current(), Some(B));
    let again = App::resume(&t2, &sets2, Figure::Total, on_b.carry(same), same);
    assert_eq!(again.cursor(), 0);
}

/// A marked name that is another entry in the new scan (another inode,
/// another device or mount, or nothing recorded of it) is not marked
/// there, and the notice names it; a mark on the same entry stays.
#[test]
fn a_mark_stays_only_on_the_entry_marked() {
    let (t, sets) = tree();
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    app.apply(Action::Sort(RowKey::Name));
    app.apply(Action::Down);
    app.apply(Action::Mark);
    app.apply(Action::Open);
    app.apply(Action::Mark);
    app.apply(Action::Back);
    assert_eq!(app.marks().ids, [B, G]);
    let carry = app.carry(same);
    let other = |field: usize| {
        move |id: NodeId| {
            let mut i = same(id)?;
            if id == B {
                match field {
                    0 => i.ino += 100,
                    1 => i.dev += 1,
                    2 => i.mnt += 1,
                    _ => return None,
                }
            }
            Some(i)
        }
    };
    // The cursor is on b too (back from it): that is said as well.
    assert_eq!(app.current(), Some(B));
    for field in 0..4 {
        let again = App::resume(&t, &sets, Figure::Total, carry.clone(), other(field));
        assert_eq!(again.marks().ids, [G], "{field}");
        assert_eq!(again.marks().frees, sets.frees(&t, &[G]));
        assert_eq!(
            again.notice.as_deref(),
            Some(
                &[
                    "1 mark dropped: 'r/b' is no longer the entry you marked.".to_owned(),
                    "'r/b' is no longer the entry the cursor was on (same name, another entry)."
                        .to_owned(),
                    "(any key closes this)".to_owned(),
                ][..]
            ),
            "{field}"
        );
    }
    // Nothing recorded in the scan the marks were made in: none is kept.
    let again = App::resume(&t, &sets, Figure::Total, app.carry(|_| None), same);
    assert!(again.marks().ids.is_empty());
    assert_eq!(
        again.notice.as_ref().map(|n| n[0].as_str()),
        Some("2 marks dropped: their names are other entries now.")
    );
    // The same entries: every mark kept, nothing said.
    let again = App::resume(&t, &sets, Figure::Total, app.carry(same), same);
    assert_eq!(again.marks().ids, [B, G]);
    assert!(again.notice.is_none());
}

/// The cursor keeps its name over a new scan even when that name is
/// another entry now (another inode, device or mount, or nothing recorded
/// of it); the notice says so, and the entry is known as replaced, for the
/// confirmation of `d` to say so too. The same entry: nothing said.
#[test]
fn the_cursor_keeps_its_name_and_says_when_it_is_another_entry() {
    let (t, sets) = tree();
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    app.apply(Action::Sort(RowKey::Name));
    app.apply(Action::Down);
    assert_eq!(app.current(), Some(B));
    let carry = app.carry(same);
    let other = |field: usize| {
        move |id: NodeId| {
            let mut i = same(id)?;
            if id == B {
                match field {
                    0 => i.ino += 100,
                    1 => i.dev += 1,
                    2 => i.mnt += 1,
                    _ => return None,
                }
            }
            Some(i)
        }
    };
    for field in 0..4 {
        let mut again = App::resume(&t, &sets, Figure::Total, carry.clone(), other(field));
        assert_eq!(again.current(), Some(B), "{field}");
        assert!(again.replaced(B) && !again.replaced(A), "{field}");
        assert_eq!(
            again.notice.as_deref(),
            Some(
                &[
                    "'r/b' is no longer the entry the cursor was on (same name, another entry)."
                        .to_owned(),
                    "(any key closes this)".to_owned(),
                ][..]
            ),
            "{field}"
        );
        // `d` on it: the confirmation is of that entry, which the
        // confirmation's view says is another one.
        again.apply(Action::Dismiss);
        again.apply(Action::Delete);
        assert_eq!(again.confirm.as_ref().map(|c| &c.ids[..]), Some(&[B][..]));
    }
    // A mark dropped and the cursor moved, both said; both entries are
    // replaced.
    app.apply(Action::Up);
    app.apply(Action::Mark);
    assert_eq!(
        (app.marks().ids.as_slice(), app.current()),
        (&[A][..], Some(B))
    );
    let again = App::resume(&t, &sets, Figure::Total, app.carry(same), |id| {
        same(id).map(|i| Ident {
            ino: i.ino + 100,
            ..i
        })
    });
    assert_eq!(
        again.notice.as_deref(),
        Some(
            &[
                "1 mark dropped: 'r/a' is no longer the entry you marked.".to_owned(),
                "'r/b' is no longer the entry the cursor was on (same name, another entry)."
                    .to_owned(),
                "(any key closes this)".to_owned(),
            ][..]
        )
    );
    assert!(again.replaced(A) && again.replaced(B));
    // The same entries: the cursor and the mark kept, nothing said.
    let again = App::resume(&t, &sets, Figure::Total, app.carry(same), same);
    assert_eq!(
        (again.marks().ids.as_slice(), again.current()),
        (&[A][..], Some(B))
    );
    assert!(again.notice.is_none());
    assert!(!again.replaced(A) && !again.replaced(B));
}
