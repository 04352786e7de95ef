//! Drawing the table of the Btrfs snapshots (`p`): a title, the table's
//! column titles, its lines (`*` before a marked subvolume, the cursor in
//! reverse video) and the footer: the marks and the table's keys.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{Look, marks_line, printable};
use crate::browse::app::App;

/// The table's keys, as its footer names them (within 80 columns).
pub(crate) const KEYS: &str =
    "↑↓ move  space mark  u unmark all  Enter go to it  d delete  ? help  p Esc back";

/// Draws the table over the whole of `area`.
pub(super) fn draw(f: &mut Frame<'_>, app: &mut App<'_>, look: Look, area: Rect) {
    let marks = marks_line(app, look);
    let footer = 1 + u16::from(marks.is_some());
    let [head, titles, list, foot] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(footer),
    ])
    .areas(area);
    let reverse = Style::default().add_modifier(Modifier::REVERSED);
    let has_rows = app
        .snapshots
        .table
        .as_ref()
        .is_some_and(|t| t.titles.is_some());
    let mut title = Line::from(vec![
        Span::styled(" sdu ", reverse.add_modifier(Modifier::BOLD)),
        Span::styled(" Btrfs snapshots ", reverse),
    ]);
    if has_rows {
        title.push_span(Span::raw(
            "  Frees with older: with every older snapshot of its origin",
        ));
    }
    f.render_widget(Paragraph::new(title), head);
    let width = usize::from(area.width);
    let Some(t) = app.snapshots.table.as_mut() else {
        return;
    };
    let offset = t.scroll(usize::from(list.height));
    let cursor = t.cursor_line();
    if let Some(titles_text) = t.titles.as_deref().map(printable) {
        f.render_widget(
            Paragraph::new(Line::styled(
                format!("  {titles_text}"),
                Style::default().add_modifier(Modifier::BOLD),
            )),
            titles,
        );
    }
    let Some(t) = app.snapshots.table.as_ref() else {
        return;
    };
    let lines: Vec<(bool, String)> = t
        .lines
        .iter()
        .skip(offset)
        .take(usize::from(list.height))
        .map(|(id, l)| (id.is_some_and(|id| app.is_marked(id)), printable(l)))
        .collect();
    let rows: Vec<Line<'static>> = lines
        .into_iter()
        .enumerate()
        .map(|(i, (marked, text))| {
            let mut s = String::from(if marked { "* " } else { "  " });
            s.push_str(&text);
            if Some(offset + i) == cursor {
                let used = s.chars().count();
                if used < width {
                    s.push_str(&" ".repeat(width - used));
                }
                Line::styled(s, reverse)
            } else {
                Line::from(s)
            }
        })
        .collect();
    f.render_widget(Paragraph::new(rows), list);
    let mut v: Vec<Line<'static>> = marks.into_iter().collect();
    v.push(Line::styled(format!(" {KEYS}"), reverse));
    f.render_widget(Paragraph::new(v), foot);
}
