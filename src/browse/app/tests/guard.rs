//! `d` refused before asking ([`crate::browse::app::Guard`]): a mount
//! point, a directory holding one, and a Btrfs subvolume this process may
//! not destroy, each said at once and by `i`, with nothing asked for.

use super::*;
use crate::browse::app::Guard;
use crate::browse::app::guard::Why;

/// What the scan saw at each entry of [`tree`], with `a` on its own mount
/// (a mount point) or its own device (`dev`: a subvolume when its inode is
/// 256), and `b` the same as `r`.
fn seen(a: Ident) -> impl Fn(NodeId) -> Option<Ident> {
    move |id| {
        let r = Ident {
            dev: 1,
            ino: id.index() as u64,
            mnt: 7,
        };
        match id {
            x if x == A => Some(a),
            x if x == F || x == H1 => Some(Ident {
                ino: x.index() as u64,
                ..a
            }),
            _ => Some(r),
        }
    }
}

fn mount() -> Ident {
    Ident {
        dev: 2,
        ino: 2,
        mnt: 8,
    }
}

fn subvolume() -> Ident {
    Ident {
        dev: 3,
        ino: 256,
        mnt: 7,
    }
}

#[test]
fn a_mount_point_is_refused_before_asking_and_i_says_why() {
    let (t, sets) = tree();
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    app.guard = Guard::by_hand(seen(mount()), true, Vec::new());
    assert_eq!(app.delete_refusal(A), Some(Why::MountPoint));
    assert_eq!(app.delete_refusal(B), None);
    // r holds a: refused too, naming a.
    assert_eq!(
        app.delete_refusal(n(1)),
        Some(Why::MountInside(b"r/a".to_vec()))
    );
    // The cursor is on a (the largest): `d` says why, and asks nothing.
    assert_eq!(app.current(), Some(A));
    app.apply(Action::Delete);
    assert_eq!(app.mode(), KeyMode::Notice);
    assert!(app.confirm.is_none());
    let notice = app.notice.clone().unwrap();
    assert_eq!(notice[0], "Not deleting it: nothing was deleted.");
    assert_eq!(
        notice[1],
        "'r/a': can't delete here: a mount point (sdu does not delete across mounts)"
    );
    app.apply(Action::Dismiss);
    // Marked with b: the set is refused, and says how to delete b.
    app.apply(Action::Mark);
    app.apply(Action::Mark);
    app.apply(Action::Delete);
    assert!(app.confirm.is_none());
    let notice = app.notice.clone().unwrap();
    assert_eq!(
        notice[0],
        "Not deleting the 2 marked entries: nothing was deleted."
    );
    assert!(
        notice
            .iter()
            .any(|l| l.starts_with("Unmark it to delete the others"))
    );
    assert_eq!(app.request, None);
    // b alone is asked for as before.
    app.apply(Action::Dismiss);
    app.apply(Action::ClearMarks);
    app.apply(Action::Down);
    app.apply(Action::Delete);
    assert_eq!(app.confirm.as_ref().map(|c| c.ids.clone()), Some(vec![B]));
}

#[test]
fn a_subvolume_needs_the_privilege_or_the_mount_option() {
    let (t, sets) = tree();
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    // Without CAP_SYS_ADMIN, and without user_subvol_rm_allowed.
    app.guard = Guard::by_hand(seen(subvolume()), false, Vec::new());
    assert_eq!(app.delete_refusal(A), Some(Why::Subvolume));
    assert_eq!(
        app.delete_refusal(n(1)),
        Some(Why::SubvolumeInside(b"r/a".to_vec()))
    );
    assert!(Why::Subvolume.text().contains("needs CAP_SYS_ADMIN"));
    app.apply(Action::Delete);
    assert!(app.confirm.is_none());
    assert!(
        app.notice.as_ref().unwrap()[1]
            .contains("a Btrfs subvolume, and deleting one needs CAP_SYS_ADMIN")
    );
    // With CAP_SYS_ADMIN, or the mount option on its mount: asked.
    for g in [
        Guard::by_hand(seen(subvolume()), true, Vec::new()),
        Guard::by_hand(seen(subvolume()), false, vec![7]),
    ] {
        app.guard = g;
        assert_eq!(app.delete_refusal(A), None);
        assert_eq!(app.delete_refusal(n(1)), None);
    }
    // Another device in the same mount that is no subvolume root: another
    // filesystem, refused.
    app.guard = Guard::by_hand(
        seen(Ident {
            dev: 3,
            ino: 5,
            mnt: 7,
        }),
        true,
        Vec::new(),
    );
    assert_eq!(app.delete_refusal(A), Some(Why::OtherFs));
}

#[test]
fn without_identities_nothing_is_refused_early() {
    let (t, sets) = tree();
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    assert_eq!(app.delete_refusal(A), None);
    app.guard = Guard::by_hand(|_| None, false, Vec::new());
    assert_eq!(app.delete_refusal(A), None);
    app.apply(Action::Delete);
    assert_eq!(app.mode(), KeyMode::Confirm);
}

#[test]
fn a_subvolume_holding_another_is_refused_even_with_the_privilege() {
    let (t, sets) = tree();
    let mut app = App::new(&t, &sets, Figure::Total, by_total());
    // a is a subvolume, and h1 in it the root of another.
    let nested = move |id: NodeId| {
        let a = subvolume();
        if id == H1 {
            Some(Ident {
                dev: 4,
                ino: 256,
                mnt: 7,
            })
        } else {
            seen(a)(id)
        }
    };
    app.guard = Guard::by_hand(nested, true, Vec::new());
    assert_eq!(
        app.delete_refusal(A),
        Some(Why::HoldsSubvolume(b"r/a/h1".to_vec()))
    );
    assert!(
        Why::HoldsSubvolume(b"r/a/h1".to_vec())
            .text()
            .contains("(delete that one first)")
    );
    // r is no subvolume: it goes with both, as subvolumes.
    assert_eq!(app.delete_refusal(n(1)), None);
    // The inner one alone: asked.
    assert_eq!(app.delete_refusal(H1), None);
}
