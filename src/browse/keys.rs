//! The keys, as ncdu and dua users expect them: from crossterm's key
//! events to [`Action`]s.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use sdu::figures::Figure;

use super::app::{Action, Mode, SortKey};

/// The action of key `k` in `mode`. In the help and in a notice any key but
/// Ctrl-C closes it; in the confirmation keys type (Enter confirms, Esc
/// cancels).
pub fn action(k: KeyEvent, mode: Mode) -> Option<Action> {
    let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
    // Raw mode: Ctrl-C is a key, not a signal.
    if ctrl && matches!(k.code, KeyCode::Char('c' | 'C')) {
        return Some(Action::Quit);
    }
    match mode {
        Mode::Help => return Some(Action::Help),
        Mode::Notice => return Some(Action::Dismiss),
        Mode::Confirm => {
            return match k.code {
                KeyCode::Enter => Some(Action::Enter),
                KeyCode::Esc => Some(Action::Cancel),
                KeyCode::Backspace => Some(Action::Erase),
                KeyCode::Char(c) if !ctrl => Some(Action::Type(c)),
                _ => None,
            };
        }
        Mode::Browse => {}
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
        KeyCode::Char('d') => Action::Delete,
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
        for mode in [Mode::Browse, Mode::Help, Mode::Confirm, Mode::Notice] {
            assert_eq!(action(k, mode), Some(Action::Quit), "{mode:?}");
        }
        assert_eq!(
            action(key(KeyCode::Char('q')), Mode::Help),
            Some(Action::Help)
        );
        assert_eq!(
            action(key(KeyCode::Char('q')), Mode::Notice),
            Some(Action::Dismiss)
        );
    }

    #[test]
    fn the_confirmation_types() {
        let c = Mode::Confirm;
        assert_eq!(action(key(KeyCode::Char('q')), c), Some(Action::Type('q')));
        assert_eq!(action(key(KeyCode::Char('y')), c), Some(Action::Type('y')));
        assert_eq!(action(key(KeyCode::Enter), c), Some(Action::Enter));
        assert_eq!(action(key(KeyCode::Esc), c), Some(Action::Cancel));
        assert_eq!(action(key(KeyCode::Backspace), c), Some(Action::Erase));
        assert_eq!(
            action(key(KeyCode::Char('d')), Mode::Browse),
            Some(Action::Delete)
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
        ] {
            assert_eq!(
                action(key(a), Mode::Browse),
                action(key(b), Mode::Browse),
                "{a:?}"
            );
        }
        assert_eq!(action(key(KeyCode::Char('x')), Mode::Browse), None);
    }
}
