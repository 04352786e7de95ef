//! Drawing the browser with ratatui: a header (the path, the figures of the
//! directory shown, the sort), the column titles, one row per entry (four
//! figures, the optional count and time columns, a bar, the name), and a
//! footer (the marks, the keys).
//!
//! The name comes first: when the screen is narrow the bar goes, then the
//! percentage, then columns ([`layout::fit`]), before the name gets less
//! than 16 cells; a name longer than its room is shortened in the middle.
//!
//! Colour only when asked ([`Look::color`]: a terminal and no `NO_COLOR`);
//! without it the cursor is reverse video and nothing else is styled.
//! Names are shown with control characters as `?`, so that a file name
//! cannot send the terminal escape sequences.

pub(crate) mod layout;
pub(crate) mod popups;
mod snapshots;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use sdu::figures::{Bound, Figure, Kind, Stats};
use sdu::units::Unit;
use sdu::{NodeId, Tree};

use super::app::{App, RowKey, items};
use layout::{BAR_CELLS, Fit, fit, left, middle, width};

/// How figures are printed and whether in colour.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Look {
    pub(crate) unit: Unit,
    pub(crate) color: bool,
    /// A bound Reclaimable is marked `<=`, `>=`, `~` rather than `≤`, `≥`,
    /// `~` (the locale is not UTF-8), as in the table.
    pub(crate) ascii: bool,
}

/// The reasons of the bound on the Reclaimable of `id`: the `-c` total's
/// for the top above several roots.
fn bound(tree: &Tree, id: NodeId) -> Bound {
    if id == NodeId::TOP {
        tree.grand_bound()
    } else {
        tree.bound(id)
    }
}

/// Reclaimable of `s`, marked as the table marks it when `b` is a bound:
/// `≤644M`.
fn reclaimable(look: Look, s: &Stats, b: Bound) -> String {
    let mut out = String::from(b.mark(look.ascii));
    look.unit.format(s.reclaimable, &mut out);
    out
}

const EIGHTHS: [&str; 8] = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"];

/// The keys, as the footer names them (within 80 columns).
pub(crate) const KEYS: &str =
    "↑↓→← move  s n sort  i info  / filter  space mark  d delete  ? help  q quit";

/// The footer's keys on a saved scan, which cannot delete (`d` says why).
pub(crate) const KEYS_SAVED: &str =
    "↑↓→← move  s n sort  i info  / filter  space mark  ? help  q quit  (saved scan)";

/// A column before the bar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Col {
    Fig(Figure),
    /// The entries under the entry.
    Count,
    /// The newest modification time under the entry.
    Time,
    /// The change of the first column's figure since the old scan.
    Change,
}

impl Col {
    fn title(self) -> &'static str {
        match self {
            Col::Fig(f) => f.header(),
            Col::Count => "Items",
            Col::Time => "Modified",
            Col::Change => "Change",
        }
    }

    fn cell(self, app: &App<'_>, id: NodeId, s: &Stats, look: Look) -> String {
        let tree = app.tree();
        let unit = look.unit;
        match self {
            Col::Change => match app.compare {
                Some(c) if c.old_of(id).is_none() => "new".into(),
                Some(c) => signed(unit, c.change(tree, id).delta(app.first)),
                None => String::new(),
            },
            Col::Fig(Figure::Reclaimable) => reclaimable(look, s, bound(tree, id)),
            Col::Fig(f) => size(unit, f.of(s)),
            Col::Count if tree.kind(id) == Kind::Dir => items(tree, id).to_string(),
            Col::Count => String::new(),
            Col::Time => s.time.map(popups::time).unwrap_or_else(|| "-".into()),
        }
    }
}

/// The columns shown, their widths and what fits.
struct Cols {
    cols: Vec<Col>,
    widths: Vec<usize>,
    fit: Fit,
}

/// The columns of `app`'s rows at `width` cells: the four figures, the
/// count and time when asked; dropped, when the name needs the room, in
/// the order Shared, Exclusive, time, count, Reclaimable, the first.
fn columns(app: &App<'_>, look: Look, width: usize) -> Cols {
    let unit = look.unit;
    let mut cols = vec![
        Col::Fig(app.first),
        Col::Fig(Figure::Exclusive),
        Col::Fig(Figure::Shared),
        Col::Fig(Figure::Reclaimable),
    ];
    let set = app.settings();
    if set.count {
        cols.push(Col::Count);
    }
    if set.time {
        cols.push(Col::Time);
    }
    if app.compare.is_some() {
        cols.push(Col::Change);
    }
    let dir = app.dir_figures();
    let tree = app.tree();
    let widths: Vec<usize> = cols
        .iter()
        .map(|&c| {
            let w = match c {
                // The directory's figure is the widest, and it is a bound
                // when any row's is.
                Col::Fig(Figure::Reclaimable) => reclaimable(look, &dir, bound(tree, app.dir()))
                    .chars()
                    .count(),
                Col::Fig(f) => unit.width(f.of(&dir)),
                Col::Count => items(tree, app.dir()).to_string().len(),
                Col::Time => 16,
                // The widest of the directory's own change and its rows'.
                Col::Change => app
                    .rows()
                    .iter()
                    .chain([&app.dir()])
                    .filter_map(|&id| {
                        let c = app.compare?;
                        Some(signed(unit, c.change(tree, id).delta(app.first)).len())
                    })
                    .max()
                    .unwrap_or(0),
            };
            c.title().len().max(w)
        })
        .collect();
    let at = |c: Col| cols.iter().position(|&x| x == c);
    let drop: Vec<usize> = [
        at(Col::Fig(Figure::Shared)),
        at(Col::Fig(Figure::Exclusive)),
        at(Col::Time),
        at(Col::Count),
        at(Col::Change),
        at(Col::Fig(Figure::Reclaimable)),
        Some(0),
    ]
    .into_iter()
    .flatten()
    .collect();
    // Only whether some name needs NAME_MIN cells matters.
    let mut longest = 0;
    for &id in app.rows() {
        longest = longest.max(layout::width(&shown_name(tree, id)));
        if longest >= layout::NAME_MIN {
            break;
        }
    }
    let mut fit = fit(width, &widths, &drop, longest);
    set.graph_fit(&mut fit);
    Cols { cols, widths, fit }
}

/// Draws the whole screen.
pub(crate) fn draw(f: &mut Frame<'_>, app: &mut App<'_>, look: Look) {
    let area = f.area();
    if app.snapshots.table.is_some() {
        snapshots::draw(f, app, look, area);
    } else {
        draw_tree(f, app, look, area);
    }
    if app.help {
        popups::help(f, area, app.can_delete, app.settings().keys);
    }
    if let Some(c) = &app.confirm {
        popups::confirm(f, area, app, c, look);
    } else if let Some(lines) = &app.notice {
        popups::notice(f, area, lines);
    } else if let Some(i) = &app.info {
        popups::info(f, area, app, i, look);
    }
}

/// The directory shown: its header, column titles, rows and footer.
fn draw_tree(f: &mut Frame<'_>, app: &mut App<'_>, look: Look, area: Rect) {
    let footer = if app.marks().ids.is_empty() { 1 } else { 2 };
    let [head, titles, list, foot] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(footer),
    ])
    .areas(area);
    let cols = columns(app, look, usize::from(area.width));
    f.render_widget(Paragraph::new(header(app, look, area.width)), head);
    f.render_widget(Paragraph::new(titles_line(&cols)), titles);
    f.render_widget(Paragraph::new(rows(app, look, &cols, list)), list);
    f.render_widget(Paragraph::new(footer_lines(app, look)), foot);
}

/// A change of `delta` bytes: `+5.0M`, `-1.0M`, `0`.
pub(crate) fn signed(unit: Unit, delta: i128) -> String {
    let mut s = String::from(match delta {
        0 => "",
        d if d > 0 => "+",
        _ => "-",
    });
    unit.format(
        u64::try_from(delta.unsigned_abs()).unwrap_or(u64::MAX),
        &mut s,
    );
    s
}

fn size(unit: Unit, bytes: u64) -> String {
    let mut s = String::new();
    unit.format(bytes, &mut s);
    s
}

/// `name` for the screen: lossy UTF-8, control characters as `?`.
pub(crate) fn printable(name: &[u8]) -> String {
    String::from_utf8_lossy(name)
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// The name of `id` as its row shows it in full: `/` after a directory,
/// `@` after a symbolic link.
fn shown_name(tree: &Tree, id: NodeId) -> String {
    let mut name = printable(tree.name(id));
    match tree.kind(id) {
        Kind::Dir => name.push('/'),
        Kind::Symlink => name.push('@'),
        _ => {}
    }
    name
}

/// "1 entry", "2 entries".
pub(crate) fn entries(n: usize) -> String {
    format!("{n} {}", if n == 1 { "entry" } else { "entries" })
}

fn header(app: &App<'_>, look: Look, cells: u16) -> Vec<Line<'static>> {
    let tree = app.tree();
    let sort = app.sort();
    let (name, dir) = match sort.key {
        RowKey::Figure(f) => (f.name(), ["largest first", "smallest first"]),
        RowKey::Name => ("name", ["A to Z", "Z to A"]),
        RowKey::Count => ("items", ["most first", "fewest first"]),
        RowKey::Time => ("modified", ["newest first", "oldest first"]),
        RowKey::Change => ("change", ["largest growth first", "largest shrink first"]),
    };
    let mut sort = format!("sort: {name}, {}", dir[usize::from(sort.reverse)]);
    if app.settings().dirs_first {
        sort.push_str(", directories first");
    }
    // " sdu ", the path between two spaces, two spaces, the sort.
    let room = usize::from(cells).saturating_sub(5 + 2 + 2 + width(&sort));
    let path = if app.dir() == NodeId::TOP {
        format!("{} paths", tree.roots().len())
    } else {
        left(&printable(&app.path(app.dir())), room.max(8))
    };
    let title = Style::default().add_modifier(Modifier::REVERSED);
    let d = app.dir_figures();
    let u = look.unit;
    let set = app.settings();
    let mut flags = String::new();
    if !set.files {
        flags.push_str(", files hidden");
    }
    if !set.dotfiles {
        flags.push_str(", hidden entries hidden");
    }
    if let Some(f) = &set.filter {
        flags.push_str(&format!(", filter: {}", printable(f.as_bytes())));
    }
    if let Some(c) = app.compare {
        let gone = c.gone().iter().filter(|g| g.under == app.dir()).count();
        if gone > 0 {
            flags.push_str(&format!(", {gone} gone since the old scan"));
        }
    }
    vec![
        Line::from(vec![
            Span::styled(" sdu ", title.add_modifier(Modifier::BOLD)),
            Span::styled(format!(" {path} "), title),
            Span::raw(format!("  {sort}")),
        ]),
        Line::from(format!(
            " {} {}  Exclusive {}  Shared {}  Reclaimable {}  ·  {}{flags}",
            app.first.header(),
            size(u, app.first_of(&d)),
            size(u, d.exclusive),
            size(u, d.shared),
            reclaimable(look, &d, bound(tree, app.dir())),
            entries(app.rows().len()),
        )),
    ]
}

fn titles_line(c: &Cols) -> Line<'static> {
    let mut s = String::from("  ");
    for ((col, w), shown) in c.cols.iter().zip(&c.widths).zip(&c.fit.shown) {
        if *shown {
            s.push_str(&format!("{:>w$}  ", col.title()));
        }
    }
    if c.fit.bar {
        s.push_str(&" ".repeat(BAR_CELLS + 1));
    }
    if c.fit.pct {
        s.push_str(&" ".repeat(layout::PCT));
    }
    s.push_str("Name");
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

fn rows(app: &mut App<'_>, look: Look, c: &Cols, area: Rect) -> Vec<Line<'static>> {
    let height = usize::from(area.height);
    let offset = app.scroll(height);
    let tree = app.tree();
    let rank = app.rank();
    let whole = rank.of(&app.dir_figures());
    let cursor = app.cursor();
    let width = usize::from(area.width);
    let mut lines = Vec::with_capacity(height);
    if app.rows().is_empty() {
        lines.push(Line::from(if app.settings().filter.is_some() {
            "  (no name matches the filter: / then Esc clears it)"
        } else {
            "  (empty directory)"
        }));
        return lines;
    }
    for (i, &id) in app.rows().iter().enumerate().skip(offset).take(height) {
        let s = &tree.figures(id);
        let marked = app.is_marked(id);
        let kind = tree.kind(id);
        let mut line = String::new();
        line.push(if marked { '*' } else { ' ' });
        line.push(app.unread.mark(id));
        for ((col, w), shown) in c.cols.iter().zip(&c.widths).zip(&c.fit.shown) {
            if *shown {
                line.push_str(&format!("{:>w$}  ", col.cell(app, id, s, look)));
            }
        }
        let (b, pct) = bar(rank.of(s), whole);
        let full = printable(tree.name(id));
        let suffix = match kind {
            Kind::Dir => "/",
            Kind::Symlink => "@",
            _ => "",
        };
        let mut name = middle(&full, c.fit.name.saturating_sub(suffix.len()));
        name.push_str(suffix);
        let mut spans = vec![Span::raw(line)];
        let color = |c: Color| {
            if look.color {
                Style::default().fg(c)
            } else {
                Style::default()
            }
        };
        if c.fit.bar {
            spans.push(Span::styled(b, color(Color::Cyan)));
            spans.push(Span::raw(" "));
        }
        if c.fit.pct {
            spans.push(Span::raw(format!("{pct}  ")));
        }
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

/// The footer's line of the marks, when there are any: how many, their
/// first column's figure and what deleting all of them frees.
fn marks_line(app: &App<'_>, look: Look) -> Option<Line<'static>> {
    let m = app.marks();
    if m.ids.is_empty() {
        return None;
    }
    let style = if look.color {
        Style::default()
            .fg(Color::Yellow)
            .add_modifier(Modifier::BOLD)
    } else {
        Style::default().add_modifier(Modifier::BOLD)
    };
    Some(Line::styled(
        format!(
            " {} marked  {} {}  deleting them frees {}{}",
            m.ids.len(),
            app.first.header(),
            size(look.unit, m.total),
            m.frees.bound.qualifier(),
            size(look.unit, m.frees.bytes)
        ),
        style,
    ))
}

fn footer_lines(app: &App<'_>, look: Look) -> Vec<Line<'static>> {
    let mut v: Vec<Line<'static>> = marks_line(app, look).into_iter().collect();
    let keys = if let Some(f) = &app.filter_edit {
        format!(
            " filter: {}_   Enter applies, Esc clears",
            printable(f.as_bytes())
        )
    } else if app.can_delete {
        format!(" {KEYS}")
    } else {
        format!(" {KEYS_SAVED}")
    };
    v.push(Line::styled(
        keys,
        Style::default().add_modifier(Modifier::REVERSED),
    ));
    v
}
