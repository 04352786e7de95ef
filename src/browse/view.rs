//! Drawing the browser with ratatui: a header (the path, the figures of the
//! directory shown, the sort), the column titles, one row per entry (four
//! figures, a bar, the name), and a footer (the marks, the keys).
//!
//! Colour only when asked ([`Look::color`]: a terminal and no `NO_COLOR`);
//! without it the cursor is reverse video and nothing else is styled.
//! Names are shown with control characters as `?`, so that a file name
//! cannot send the terminal escape sequences.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use sdu::figures::{Figure, Kind, Stats};
use sdu::records::NodeId;
use sdu::units::Unit;

use super::app::{App, Confirm, SortKey};

/// How figures are printed and whether in colour.
#[derive(Clone, Copy, Debug)]
pub struct Look {
    pub unit: Unit,
    pub color: bool,
}

/// Cells of a bar (eighths of a cell resolve 1/96).
const BAR_CELLS: usize = 12;
const EIGHTHS: [&str; 8] = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"];

/// The keys, as the footer names them.
pub const KEYS: &str =
    "↑↓ move  → open  ← up  t e s r n sort  a files  space mark  d delete  ? help  q quit";

/// The help text, one key a line.
pub const HELP: &[(&str, &str)] = &[
    ("↑ ↓  k j", "move the cursor"),
    ("PgUp PgDn", "move by a screen"),
    ("Home End  g G", "first, last entry"),
    ("→ Enter l", "open the directory"),
    ("← Backspace h", "go up"),
    ("t", "sort by Total (again: reverse)"),
    ("e", "sort by Exclusive"),
    ("s", "sort by Shared"),
    ("r", "sort by Reclaimable"),
    ("n", "sort by name"),
    ("a", "show or hide files"),
    ("Space", "mark or unmark (anywhere in the tree)"),
    ("u", "unmark everything"),
    ("d", "delete the marked (or this) entry: type yes"),
    ("?", "this help (any key closes it)"),
    ("q  Ctrl-C", "quit"),
];

/// The columns, in order.
const COLUMNS: [Figure; 3] = [Figure::Exclusive, Figure::Shared, Figure::Reclaimable];

/// Draws the whole screen.
pub fn draw(f: &mut Frame<'_>, app: &mut App<'_>, look: Look) {
    let area = f.area();
    let footer = if app.marks().ids.is_empty() { 1 } else { 2 };
    let [head, titles, list, foot] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(footer),
    ])
    .areas(area);
    let figures = [app.first, COLUMNS[0], COLUMNS[1], COLUMNS[2]];
    let widths = widths(&app.dir_figures(), &figures, look.unit);
    f.render_widget(Paragraph::new(header(app, look)), head);
    f.render_widget(Paragraph::new(titles_line(&figures, &widths)), titles);
    f.render_widget(
        Paragraph::new(rows(app, look, &figures, &widths, list)),
        list,
    );
    f.render_widget(Paragraph::new(footer_lines(app, look)), foot);
    if app.help {
        help(f, area);
    }
    if let Some(c) = &app.confirm {
        confirm(f, area, app, c, look);
    } else if let Some(lines) = &app.notice {
        // Wrapped, not cut: the reason a deletion stopped is often a long
        // path.
        let room = usize::from(area.width).saturating_sub(5).max(10);
        let lines: Vec<Line<'_>> = lines
            .iter()
            .flat_map(|l| wrap(l, room))
            .map(|l| Line::from(format!(" {l}")))
            .collect();
        dialog(f, area, " sdu -i ", lines);
    }
}

/// `text` in lines of at most `width` characters, broken after a space
/// where one is near enough, else inside a word.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest: Vec<char> = text.chars().collect();
    while rest.len() > width {
        let cut = rest[..=width]
            .iter()
            .rposition(|&c| c == ' ')
            .filter(|&i| i > width / 2)
            .unwrap_or(width);
        out.push(rest[..cut].iter().collect::<String>().trim_end().to_owned());
        rest.drain(..cut);
        while rest.first() == Some(&' ') {
            rest.remove(0);
        }
    }
    out.push(rest.into_iter().collect());
    out
}

/// The width of each figure's column: its title, or the widest size.
fn widths(dir: &Stats, figures: &[Figure; 4], unit: Unit) -> [usize; 4] {
    figures.map(|fig| fig.header().len().max(unit.width(fig.of(dir))))
}

fn size(unit: Unit, bytes: u64) -> String {
    let mut s = String::new();
    unit.format(bytes, &mut s);
    s
}

/// `name` for the screen: lossy UTF-8, control characters as `?`.
pub fn printable(name: &[u8]) -> String {
    String::from_utf8_lossy(name)
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

fn header(app: &App<'_>, look: Look) -> Vec<Line<'static>> {
    let tree = app.tree();
    let path = if app.dir() == NodeId::TOP {
        format!("{} paths", tree.roots().len())
    } else {
        printable(&app.path(app.dir()))
    };
    let sort = app.sort();
    let (name, dir) = match sort.key {
        SortKey::Figure(f) => (f.name(), ["largest first", "smallest first"]),
        SortKey::Name => ("name", ["A to Z", "Z to A"]),
    };
    let sort = format!("sort: {name}, {}", dir[usize::from(sort.reverse)]);
    let title = Style::default().add_modifier(Modifier::REVERSED);
    let d = app.dir_figures();
    let u = look.unit;
    let files = if app.show_files() {
        ""
    } else {
        ", files hidden"
    };
    vec![
        Line::from(vec![
            Span::styled(" sdu ", title.add_modifier(Modifier::BOLD)),
            Span::styled(format!(" {path} "), title),
            Span::raw(format!("  {sort}")),
        ]),
        Line::from(format!(
            " {} {}  Exclusive {}  Shared {}  Reclaimable {}  ·  {} entries{files}",
            app.first.header(),
            size(u, app.first_of(&d)),
            size(u, d.exclusive),
            size(u, d.shared),
            size(u, d.reclaimable),
            app.rows().len(),
        )),
    ]
}

fn titles_line(figures: &[Figure; 4], widths: &[usize; 4]) -> Line<'static> {
    let mut s = String::from("  ");
    for (f, w) in figures.iter().zip(widths) {
        s.push_str(&format!("{:>w$}  ", f.header()));
    }
    s.push_str(&format!("{:<w$}  Name", "", w = BAR_CELLS + 5));
    Line::styled(s, Style::default().add_modifier(Modifier::BOLD))
}

/// A bar of `part` out of `whole` and its percentage: `█████▌      47%`.
fn bar(part: u64, whole: u64) -> (String, String) {
    let eighths = if whole == 0 {
        0
    } else {
        (u128::from(part.min(whole)) * (BAR_CELLS as u128 * 8) / u128::from(whole)) as usize
    };
    let mut s = "█".repeat(eighths / 8);
    s.push_str(EIGHTHS[eighths % 8]);
    let filled = eighths / 8 + usize::from(eighths % 8 > 0);
    s.push_str(&" ".repeat(BAR_CELLS - filled));
    let pct = if whole == 0 {
        0
    } else {
        u128::from(part.min(whole)) * 100 / u128::from(whole)
    };
    (s, format!("{pct:>3}%"))
}

fn rows(
    app: &mut App<'_>,
    look: Look,
    figures: &[Figure; 4],
    widths: &[usize; 4],
    area: Rect,
) -> Vec<Line<'static>> {
    let height = usize::from(area.height);
    let offset = app.scroll(height);
    let tree = app.tree();
    let rank = app.rank();
    let whole = rank.of(&app.dir_figures());
    let cursor = app.cursor();
    let width = usize::from(area.width);
    let mut lines = Vec::with_capacity(height);
    if app.rows().is_empty() {
        lines.push(Line::from("  (empty directory)"));
        return lines;
    }
    for (i, &id) in app.rows().iter().enumerate().skip(offset).take(height) {
        let s = &tree.figures(id);
        let marked = app.is_marked(id);
        let kind = tree.kind(id);
        let mut line = String::new();
        line.push(if marked { '*' } else { ' ' });
        line.push(' ');
        for (f, w) in figures.iter().zip(widths) {
            line.push_str(&format!("{:>w$}  ", size(look.unit, f.of(s))));
        }
        let (b, pct) = bar(rank.of(s), whole);
        let mut name = printable(tree.name(id));
        match kind {
            Kind::Dir => name.push('/'),
            Kind::Symlink => name.push('@'),
            _ => {}
        }
        let mut spans = vec![Span::raw(line)];
        let color = |c: Color| {
            if look.color {
                Style::default().fg(c)
            } else {
                Style::default()
            }
        };
        spans.push(Span::styled(b, color(Color::Cyan)));
        spans.push(Span::raw(format!(" {pct}  ")));
        let name_style = match (marked, kind) {
            (true, _) => color(Color::Yellow),
            (false, Kind::Dir) if look.color => Style::default()
                .fg(Color::Blue)
                .add_modifier(Modifier::BOLD),
            _ => Style::default(),
        };
        spans.push(Span::styled(name, name_style));
        let mut l = Line::from(spans);
        if i == cursor {
            // Fill the line so that the cursor bar spans the screen.
            let used = l.width();
            if used < width {
                l.push_span(Span::raw(" ".repeat(width - used)));
            }
            l = l.style(Style::default().add_modifier(Modifier::REVERSED));
        }
        lines.push(l);
    }
    lines
}

fn footer_lines(app: &App<'_>, look: Look) -> Vec<Line<'static>> {
    let mut v = Vec::new();
    let m = app.marks();
    if !m.ids.is_empty() {
        let style = if look.color {
            Style::default()
                .fg(Color::Yellow)
                .add_modifier(Modifier::BOLD)
        } else {
            Style::default().add_modifier(Modifier::BOLD)
        };
        v.push(Line::styled(
            format!(
                " {} marked  {} {}  deleting them frees {}{}",
                m.ids.len(),
                app.first.header(),
                size(look.unit, m.total),
                m.frees.bound.qualifier(),
                size(look.unit, m.frees.bytes)
            ),
            style,
        ));
    }
    v.push(Line::styled(
        format!(" {KEYS}"),
        Style::default().add_modifier(Modifier::REVERSED),
    ));
    v
}

fn help(f: &mut Frame<'_>, area: Rect) {
    let w = 58.min(area.width);
    let h = (HELP.len() as u16 + 4).min(area.height);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    let mut lines: Vec<Line<'_>> = HELP
        .iter()
        .map(|(k, what)| Line::from(format!(" {k:<15} {what}")))
        .collect();
    lines.push(Line::from(""));
    lines.push(Line::from(
        " Marked: what deleting all of them frees, shared once",
    ));
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" sdu -i: keys "),
        ),
        r,
    );
}

/// A box in the middle of `area` holding `lines`.
fn dialog(f: &mut Frame<'_>, area: Rect, title: &str, lines: Vec<Line<'_>>) {
    let widest = lines.iter().map(Line::width).max().unwrap_or(0) + 3;
    let w = (widest.max(title.len() + 4) as u16).min(area.width);
    let h = (lines.len() as u16 + 2).min(area.height);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)),
        r,
    );
}

/// The confirmation: the entries (as many as fit), what deleting them
/// frees, and what was typed.
fn confirm(f: &mut Frame<'_>, area: Rect, app: &App<'_>, c: &Confirm, look: Look) {
    let room = usize::from(area.height).saturating_sub(9).max(1);
    let dirs = c.ids.iter().any(|&id| app.tree().kind(id) == Kind::Dir);
    let mut lines = vec![Line::from(match (c.ids.len(), dirs) {
        (1, false) => " Delete 1 entry?".to_owned(),
        (1, true) => " Delete 1 entry, with everything in it?".to_owned(),
        (n, false) => format!(" Delete {n} entries?"),
        (n, true) => format!(" Delete {n} entries, directories with everything in them?"),
    })];
    for (i, &id) in c.ids.iter().enumerate() {
        if i == room && c.ids.len() > room + 1 {
            lines.push(Line::from(format!("   … and {} more", c.ids.len() - room)));
            break;
        }
        let mut p = printable(&app.path(id));
        if app.tree().kind(id) == Kind::Dir {
            p.push('/');
        }
        lines.push(Line::from(format!("   {p}")));
    }
    lines.push(Line::from(format!(
        " {} {}, frees {}{}",
        app.first.header(),
        size(look.unit, c.total),
        c.frees.bound.qualifier(),
        size(look.unit, c.frees.bytes)
    )));
    lines.push(Line::from(""));
    if c.refused {
        lines.push(Line::from(" Only yes deletes."));
    }
    lines.push(Line::from(format!(
        " Type yes and Enter to delete, Esc to keep them: {}_",
        printable(c.typed.as_bytes())
    )));
    dialog(f, area, " sdu -i: delete ", lines);
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn long_lines_wrap_and_lose_nothing() {
        let text = "Stopped at the first error: cannot remove 'deepdel/top/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d': Permission denied";
        let lines = wrap(text, 30);
        assert!(lines.iter().all(|l| l.chars().count() <= 30), "{lines:?}");
        let joined: String = lines.concat();
        let squeeze = |s: &str| s.chars().filter(|c| *c != ' ').collect::<String>();
        assert_eq!(squeeze(&joined), squeeze(text));
        assert!(lines.last().unwrap().ends_with("Permission denied"));
        assert_eq!(wrap("short", 30), ["short"]);
    }
}
