//! Drawing the table of the Btrfs snapshots (`p`): a title, the table's
//! column titles, its lines (`*` before a marked subvolume, the cursor in
//! reverse video) and the footer: the marks and the table's keys.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::layout::{self, join, keep};
use super::{Look, marks_line_in, printable};
use crate::browse::app::App;

/// The table's keys, as its footer names them (within 80 columns), each
/// with its rank: the highest is dropped first on a narrow screen, 0
/// never.
const KEYS: [(&str, u8); 7] = [
    ("↑↓ move", 4),
    ("space mark", 5),
    ("u unmark all", 6),
    ("Enter go to it", 3),
    ("d delete", 2),
    ("? help", 0),
    ("p Esc back", 0),
];

/// Draws the table over the whole of `area`.
pub(super) fn draw(f: &mut Frame<'_>, app: &mut App<'_>, look: Look, area: Rect) {
    let marks = marks_line_in(app, look, usize::from(area.width));
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
    let keys = KEYS.map(|(k, _)| k.to_owned());
    let kept = keep(&KEYS.map(|(_, r)| r), width, |k| {
        1 + layout::width(&join(&keys, k, "  "))
    });
    v.push(Line::styled(
        format!(" {}", join(&keys, &kept, "  ")),
        reverse,
    ));
    f.render_widget(Paragraph::new(v), foot);
}
