//! The keys, as ncdu and dua users expect them: from crossterm's key
//! events to [`Action`]s.
//!
//! ncdu's keys keep their meaning where sdu has the same thing: `s` sorts
//! by size (the first column), `n` by name, `C` by count, `M` by time; `e`
//! shows or hides dotfiles, `c` and `m` the count and time columns, `i`
//! is the entry info, `d` deletes, `<` and `h` go up, `q` quits. sdu's own
//! figures take keys ncdu leaves free: `t` Total, `x` Exclusive, `S`
//! Shared, `R` Reclaimable; apparent sizes are `A` (ncdu's `a`, which
//! stays sdu's show or hide files, as in dua). `g` and `G` stay the first
//! and last entry (vi, dua), not ncdu's graph toggle. `r` scans again and
//! `b` opens a shell in the directory shown, as in ncdu. `p` opens the
//! table of the Btrfs snapshots, where the same keys move and mark; `F`
//! shows `sdu --df`'s table of the filesystem browsed.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use sdu::figures::Figure;

use super::app::{Action, KeyMode, RowKey};

/// The action of key `k` in `mode`. In the help and in a notice any key but
/// Ctrl-C closes it; in the confirmation keys type (Enter confirms, Esc
/// cancels).
pub(crate) fn action(k: KeyEvent, mode: KeyMode) -> Option<Action> {
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
    Some(match k.code {
        KeyCode::Up | KeyCode::Char('k') => Action::Up,
        KeyCode::Down | KeyCode::Char('j') => Action::Down,
        KeyCode::PageUp => Action::PageUp,
        KeyCode::PageDown => Action::PageDown,
        KeyCode::Home | KeyCode::Char('g') => Action::Home,
        KeyCode::End | KeyCode::Char('G') => Action::End,
        KeyCode::Right | KeyCode::Enter | KeyCode::Char('l') => Action::Open,
        KeyCode::Left | KeyCode::Backspace | KeyCode::Char('h' | '<') => Action::Back,
        KeyCode::Char('s') => Action::SortSize,
        KeyCode::Char('t') => Action::Sort(RowKey::Figure(Figure::Total)),
        KeyCode::Char('x') => Action::Sort(RowKey::Figure(Figure::Exclusive)),
        KeyCode::Char('S') => Action::Sort(RowKey::Figure(Figure::Shared)),
        KeyCode::Char('R') => Action::Sort(RowKey::Figure(Figure::Reclaimable)),
        KeyCode::Char('n') => Action::Sort(RowKey::Name),
        KeyCode::Char('C') => Action::Sort(RowKey::Count),
        KeyCode::Char('M') => Action::Sort(RowKey::Time),
        KeyCode::Char('D') => Action::Sort(RowKey::Change),
        KeyCode::Char('a') => Action::ToggleFiles,
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
        KeyCode::Char('q') | KeyCode::Esc => Action::Quit,
        _ => return None,
    })
}

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
