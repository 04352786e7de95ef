//! The keys, as ncdu and dua users expect them: from crossterm's key
//! events to [`Action`]s, in one of two profiles ([`Profile`], `--keys`),
//! and the help that lists the active one's.
//!
//! Both keep ncdu's keys where sdu has the same thing: `s` sorts by size
//! (the first column), `n` by name, `C` by count, `M` by time; `e` shows
//! or hides dotfiles, `c` and `m` the count and time columns, `i` is the
//! entry info, `d` deletes, `<` and `h` go up, `r` scans again, `b` opens
//! a shell, `q` quits. sdu's own figures take keys ncdu leaves free: `x`
//! Exclusive, `S` Shared, `R` Reclaimable, `A` apparent sizes, `p` the
//! Btrfs snapshots, `F` `sdu --df`'s table, `D` the change since an old
//! scan, Space and `u` the marks.
//!
//! Three keys differ. sdu's profile: `t` sorts by Total, `a` shows or
//! hides files (as in dua), `g` `G` go to the first and last entry (vi,
//! dua), `B` cycles the bar and percentage (gdu's key for its bar).
//! ncdu's: `a` apparent size, `t` directories first, `g` cycles graph,
//! percentage, both and none, as ncdu does; files then take `f`, free in
//! ncdu. In neither does Esc quit (nor does it in ncdu or gdu): it closes
//! a box, drops the filter being typed or the one applied, and does
//! nothing else, so that one stray key cannot end a scan that took
//! minutes.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use sdu::figures::Figure;

use super::app::{Action, KeyMode, RowKey};
pub(crate) use crate::cli::browse_flags::Profile;

/// The action of key `k` in `mode`, with the keys of `profile`. In the
/// help and in a notice any key but Ctrl-C closes it; in the confirmation
/// keys type (Enter confirms, Esc cancels).
pub(crate) fn action(k: KeyEvent, mode: KeyMode, profile: Profile) -> Option<Action> {
    let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
    // Raw mode: Ctrl-C is a key, not a signal.
    if ctrl && matches!(k.code, KeyCode::Char('c' | 'C')) {
        return Some(Action::Quit);
    }
    match mode {
        KeyMode::Help => return Some(Action::Help),
        KeyMode::Notice => return Some(Action::Dismiss),
        KeyMode::Info => return Some(Action::Dismiss),
        KeyMode::Confirm | KeyMode::Filter => {
            return match k.code {
                KeyCode::Enter => Some(Action::Enter),
                KeyCode::Esc => Some(Action::Cancel),
                KeyCode::Backspace => Some(Action::Erase),
                KeyCode::Char(c) if !ctrl => Some(Action::Type(c)),
                _ => None,
            };
        }
        KeyMode::Snapshots => return snapshots(k),
        KeyMode::Browse => {}
    }
    let own = match (profile, k.code) {
        (Profile::Sdu, KeyCode::Char('g')) => Some(Action::Home),
        (Profile::Sdu, KeyCode::Char('t')) => Some(Action::Sort(RowKey::Figure(Figure::Total))),
        (Profile::Sdu, KeyCode::Char('a')) => Some(Action::ToggleFiles),
        (Profile::Sdu, KeyCode::Char('B')) => Some(Action::Graph),
        (Profile::Ncdu, KeyCode::Char('g')) => Some(Action::Graph),
        (Profile::Ncdu, KeyCode::Char('t')) => Some(Action::DirsFirst),
        (Profile::Ncdu, KeyCode::Char('a')) => Some(Action::Apparent),
        (Profile::Ncdu, KeyCode::Char('f')) => Some(Action::ToggleFiles),
        _ => None,
    };
    if own.is_some() {
        return own;
    }
    Some(match k.code {
        KeyCode::Up | KeyCode::Char('k') => Action::Up,
        KeyCode::Down | KeyCode::Char('j') => Action::Down,
        KeyCode::PageUp => Action::PageUp,
        KeyCode::PageDown => Action::PageDown,
        KeyCode::Home => Action::Home,
        KeyCode::End | KeyCode::Char('G') => Action::End,
        KeyCode::Right | KeyCode::Enter | KeyCode::Char('l') => Action::Open,
        KeyCode::Left | KeyCode::Backspace | KeyCode::Char('h' | '<') => Action::Back,
        KeyCode::Char('s') => Action::SortSize,
        KeyCode::Char('x') => Action::Sort(RowKey::Figure(Figure::Exclusive)),
        KeyCode::Char('S') => Action::Sort(RowKey::Figure(Figure::Shared)),
        KeyCode::Char('R') => Action::Sort(RowKey::Figure(Figure::Reclaimable)),
        KeyCode::Char('n') => Action::Sort(RowKey::Name),
        KeyCode::Char('C') => Action::Sort(RowKey::Count),
        KeyCode::Char('M') => Action::Sort(RowKey::Time),
        KeyCode::Char('D') => Action::Sort(RowKey::Change),
        KeyCode::Char('e') => Action::ToggleDotfiles,
        KeyCode::Char('c') => Action::ToggleCount,
        KeyCode::Char('m') => Action::ToggleTime,
        KeyCode::Char('A') => Action::Apparent,
        KeyCode::Char('i') => Action::Info,
        KeyCode::Char('/') => Action::Filter,
        KeyCode::Char(' ') => Action::Mark,
        KeyCode::Char('u') => Action::ClearMarks,
        KeyCode::Char('d') => Action::Delete,
        KeyCode::Char('r') => Action::Rescan,
        KeyCode::Char('b') => Action::Shell,
        KeyCode::Char('p') => Action::Snapshots,
        KeyCode::Char('F') => Action::Df,
        KeyCode::Char('?') => Action::Help,
        KeyCode::Char('q') => Action::Quit,
        // Closes nothing here: the filter applied, if any, goes.
        KeyCode::Esc => Action::Cancel,
        _ => return None,
    })
}

/// The help of `profile`: its keys, one line each (as many lines in both,
/// short enough for 80x24). `d`, `r` and `b` have lines of their own, which
/// a saved scan leaves out.
pub(crate) fn help(profile: Profile) -> &'static [(&'static str, &'static str)] {
    match profile {
        Profile::Sdu => SDU_HELP,
        Profile::Ncdu => NCDU_HELP,
    }
}

/// The lines both profiles' help has, after their own.
macro_rules! help_tail {
    ($($own:expr,)*) => {
        &[
            ("↑ ↓ k j PgUp PgDn", "move the cursor; by a screen"),
            $($own,)*
            ("/", "filter by name: type, Enter applies, Esc clears"),
            ("i", "the entry in full: path, figures, inode, time, errors"),
            ("p  F", "Btrfs snapshots, what each frees; df's Used, row by row"),
            ("Space  u", "mark or unmark (anywhere in the tree); unmark all"),
            ("d", "delete the marked (or this) entry: type yes"),
            ("r  b", "scan again (cursor, marks kept); a shell, then scan"),
            ("q  Ctrl-C", "quit (Esc closes a box, or clears the filter)"),
        ]
    };
}

const SDU_HELP: &[(&str, &str)] = help_tail![
    ("Home End  g G", "first, last entry"),
    ("→ Enter l", "open the directory"),
    ("← Backspace h <", "go up"),
    ("s", "sort by size: Total, or Apparent (again: reverse)"),
    ("t x S R", "sort by Total, Exclusive, Shared, Reclaimable"),
    (
        "n  C  M  D",
        "sort by name, items, time, change (--compare OLD)"
    ),
    ("A", "apparent size in place of Total, and back"),
    (
        "c  m  B",
        "item count, time column; B: bar, percentage, both, none"
    ),
    ("a  e", "show or hide files; hidden entries (.name)"),
];

const NCDU_HELP: &[(&str, &str)] = help_tail![
    ("Home End  G", "first, last entry"),
    ("→ Enter l", "open the directory"),
    ("← Backspace h <", "go up"),
    ("s", "sort by size: Total, or Apparent (again: reverse)"),
    (
        "x S R  t",
        "sort by Exclusive, Shared, Reclaimable; t: dirs first"
    ),
    (
        "n  C  M  D",
        "sort by name, items, time, change (--compare OLD)"
    ),
    ("a  A", "apparent size in place of Total, and back"),
    (
        "c  m  g",
        "item count, time column; g: graph, percentage, both, none"
    ),
    ("f  e", "show or hide files; hidden entries (.name)"),
];

/// The action of `k` in the table of the snapshots: moves, Space marks,
/// Enter goes to the subvolume in the tree, `p`, Esc, `q` and ← go back;
/// `u`, `d` and `?` as in the tree.
fn snapshots(k: KeyEvent) -> Option<Action> {
    Some(match k.code {
        KeyCode::Up | KeyCode::Char('k') => Action::Up,
        KeyCode::Down | KeyCode::Char('j') => Action::Down,
        KeyCode::PageUp => Action::PageUp,
        KeyCode::PageDown => Action::PageDown,
        KeyCode::Home | KeyCode::Char('g') => Action::Home,
        KeyCode::End | KeyCode::Char('G') => Action::End,
        KeyCode::Enter | KeyCode::Right | KeyCode::Char('l') => Action::Open,
        KeyCode::Char(' ') => Action::Mark,
        KeyCode::Char('u') => Action::ClearMarks,
        KeyCode::Char('d') => Action::Delete,
        KeyCode::Char('?') => Action::Help,
        KeyCode::Char('p' | 'q' | 'h' | '<')
        | KeyCode::Esc
        | KeyCode::Left
        | KeyCode::Backspace => Action::Snapshots,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    /// The action of `k` with sdu's keys.
    fn action(k: KeyEvent, mode: KeyMode) -> Option<Action> {
        super::action(k, mode, Profile::Sdu)
    }

    #[test]
    fn ncdus_keys_where_they_differ_and_sdus_elsewhere() {
        let b = KeyMode::Browse;
        let ncdu = |c: char| super::action(key(KeyCode::Char(c)), b, Profile::Ncdu);
        let sdu = |c: char| super::action(key(KeyCode::Char(c)), b, Profile::Sdu);
        assert_eq!(ncdu('a'), Some(Action::Apparent));
        assert_eq!(ncdu('t'), Some(Action::DirsFirst));
        assert_eq!(ncdu('g'), Some(Action::Graph));
        assert_eq!(ncdu('f'), Some(Action::ToggleFiles));
        assert_eq!(sdu('a'), Some(Action::ToggleFiles));
        assert_eq!(sdu('t'), Some(Action::Sort(RowKey::Figure(Figure::Total))));
        assert_eq!(sdu('g'), Some(Action::Home));
        assert_eq!(sdu('B'), Some(Action::Graph));
        assert_eq!(sdu('f'), None);
        // ncdu's others, the same in both.
        for (c, a) in [
            ('s', Action::SortSize),
            ('n', Action::Sort(RowKey::Name)),
            ('C', Action::Sort(RowKey::Count)),
            ('M', Action::Sort(RowKey::Time)),
            ('e', Action::ToggleDotfiles),
            ('i', Action::Info),
            ('c', Action::ToggleCount),
            ('m', Action::ToggleTime),
            ('d', Action::Delete),
            ('r', Action::Rescan),
            ('b', Action::Shell),
            ('q', Action::Quit),
            ('?', Action::Help),
            ('<', Action::Back),
        ] {
            assert_eq!(ncdu(c), Some(a), "{c}");
            assert_eq!(sdu(c), Some(a), "{c}");
        }
    }

    #[test]
    fn esc_never_quits() {
        for p in [Profile::Sdu, Profile::Ncdu] {
            let esc = key(KeyCode::Esc);
            assert_eq!(super::action(esc, KeyMode::Browse, p), Some(Action::Cancel));
            assert_eq!(super::action(esc, KeyMode::Filter, p), Some(Action::Cancel));
            assert_eq!(super::action(esc, KeyMode::Help, p), Some(Action::Help));
        }
    }

    #[test]
    fn both_helps_list_their_keys_in_as_many_lines() {
        assert_eq!(help(Profile::Sdu).len(), help(Profile::Ncdu).len());
        let keys = |p| {
            help(p)
                .iter()
                .map(|(k, _)| *k)
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert!(keys(Profile::Ncdu).contains("c  m  g"));
        assert!(keys(Profile::Sdu).contains("t x S R"));
        for p in [Profile::Sdu, Profile::Ncdu] {
            for own in ["d", "r  b"] {
                assert!(help(p).iter().any(|(k, _)| *k == own), "{p:?} {own}");
            }
        }
    }

    #[test]
    fn ctrl_c_quits_even_in_the_help() {
        let k = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        for mode in [
            KeyMode::Browse,
            KeyMode::Help,
            KeyMode::Confirm,
            KeyMode::Notice,
        ] {
            assert_eq!(action(k, mode), Some(Action::Quit), "{mode:?}");
        }
        assert_eq!(
            action(key(KeyCode::Char('q')), KeyMode::Help),
            Some(Action::Help)
        );
        assert_eq!(
            action(key(KeyCode::Char('q')), KeyMode::Notice),
            Some(Action::Dismiss)
        );
    }

    #[test]
    fn the_confirmation_types() {
        let c = KeyMode::Confirm;
        assert_eq!(action(key(KeyCode::Char('q')), c), Some(Action::Type('q')));
        assert_eq!(action(key(KeyCode::Char('y')), c), Some(Action::Type('y')));
        assert_eq!(action(key(KeyCode::Enter), c), Some(Action::Enter));
        assert_eq!(action(key(KeyCode::Esc), c), Some(Action::Cancel));
        assert_eq!(action(key(KeyCode::Backspace), c), Some(Action::Erase));
        assert_eq!(
            action(key(KeyCode::Char('d')), KeyMode::Browse),
            Some(Action::Delete)
        );
        // The filter types as the confirmation does; the info closes.
        let f = KeyMode::Filter;
        assert_eq!(action(key(KeyCode::Char('q')), f), Some(Action::Type('q')));
        assert_eq!(action(key(KeyCode::Esc), f), Some(Action::Cancel));
        assert_eq!(action(key(KeyCode::Enter), f), Some(Action::Enter));
        assert_eq!(
            action(key(KeyCode::Char('q')), KeyMode::Info),
            Some(Action::Dismiss)
        );
    }

    #[test]
    fn vi_keys_and_arrows_agree() {
        for (a, b) in [
            (KeyCode::Up, KeyCode::Char('k')),
            (KeyCode::Down, KeyCode::Char('j')),
            (KeyCode::Right, KeyCode::Char('l')),
            (KeyCode::Enter, KeyCode::Char('l')),
            (KeyCode::Left, KeyCode::Char('h')),
            (KeyCode::Backspace, KeyCode::Char('h')),
            (KeyCode::Char('<'), KeyCode::Char('h')),
        ] {
            assert_eq!(
                action(key(a), KeyMode::Browse),
                action(key(b), KeyMode::Browse),
                "{a:?}"
            );
        }
        assert_eq!(action(key(KeyCode::Char('z')), KeyMode::Browse), None);
        assert_eq!(
            action(key(KeyCode::Char('r')), KeyMode::Browse),
            Some(Action::Rescan)
        );
        assert_eq!(
            action(key(KeyCode::Char('b')), KeyMode::Browse),
            Some(Action::Shell)
        );
    }

    #[test]
    fn the_snapshots_table_moves_marks_and_goes_back() {
        let s = KeyMode::Snapshots;
        assert_eq!(
            action(key(KeyCode::Char('p')), KeyMode::Browse),
            Some(Action::Snapshots)
        );
        for c in [
            KeyCode::Char('p'),
            KeyCode::Char('q'),
            KeyCode::Esc,
            KeyCode::Left,
        ] {
            assert_eq!(action(key(c), s), Some(Action::Snapshots), "{c:?}");
        }
        assert_eq!(action(key(KeyCode::Char(' ')), s), Some(Action::Mark));
        assert_eq!(action(key(KeyCode::Enter), s), Some(Action::Open));
        assert_eq!(action(key(KeyCode::Char('j')), s), Some(Action::Down));
        assert_eq!(action(key(KeyCode::Char('d')), s), Some(Action::Delete));
        // Sorting is the tree's.
        assert_eq!(action(key(KeyCode::Char('t')), s), None);
    }
}
