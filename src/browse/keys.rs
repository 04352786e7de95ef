//! The keys, as ncdu and dua users expect them: from crossterm's key
//! events to [`Action`]s.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use sdu::figures::Figure;

use super::app::{Action, SortKey};

/// The action of key `k`; `help`: the help is shown, and any key but
/// Ctrl-C closes it.
pub fn action(k: KeyEvent, help: bool) -> Option<Action> {
    let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
    // Raw mode: Ctrl-C is a key, not a signal.
    if ctrl && matches!(k.code, KeyCode::Char('c' | 'C')) {
        return Some(Action::Quit);
    }
    if help {
        return Some(Action::Help);
    }
    Some(match k.code {
        KeyCode::Up | KeyCode::Char('k') => Action::Up,
        KeyCode::Down | KeyCode::Char('j') => Action::Down,
        KeyCode::PageUp => Action::PageUp,
        KeyCode::PageDown => Action::PageDown,
        KeyCode::Home | KeyCode::Char('g') => Action::Home,
        KeyCode::End | KeyCode::Char('G') => Action::End,
        KeyCode::Right | KeyCode::Enter | KeyCode::Char('l') => Action::Open,
        KeyCode::Left | KeyCode::Backspace | KeyCode::Char('h') => Action::Back,
        KeyCode::Char('t') => Action::Sort(SortKey::Figure(Figure::Total)),
        KeyCode::Char('e') => Action::Sort(SortKey::Figure(Figure::Exclusive)),
        KeyCode::Char('s') => Action::Sort(SortKey::Figure(Figure::Shared)),
        KeyCode::Char('r') => Action::Sort(SortKey::Figure(Figure::Reclaimable)),
        KeyCode::Char('n') => Action::Sort(SortKey::Name),
        KeyCode::Char('a') => Action::ToggleFiles,
        KeyCode::Char(' ') => Action::Mark,
        KeyCode::Char('u') => Action::ClearMarks,
        KeyCode::Char('?') => Action::Help,
        KeyCode::Char('q') | KeyCode::Esc => Action::Quit,
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
        assert_eq!(action(k, false), Some(Action::Quit));
        assert_eq!(action(k, true), Some(Action::Quit));
        assert_eq!(action(key(KeyCode::Char('q')), true), Some(Action::Help));
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
        ] {
            assert_eq!(action(key(a), false), action(key(b), false), "{a:?}");
        }
        assert_eq!(action(key(KeyCode::Char('x')), false), None);
    }
}
