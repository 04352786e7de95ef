//! Drawing the browser with ratatui: a header (the path, the figures of the
//! directory shown, the sort), the column titles, one row per entry (the
//! mark, a flag, four figures, the optional count and time columns, a bar,
//! the name), and a footer (the marks, the keys).
//!
//! The name comes first: when the screen is narrow the bar goes, then the
//! percentage, then columns ([`layout::fit`]), before the name gets less
//! than 16 cells; a name longer than its room is shortened in the middle.
//! The header and the footer drop whole parts ([`layout::keep`]): never a
//! word cut, and `? help` and `q quit` kept at any width.
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

use super::app::{App, GoneRow, RowKey, items};
use layout::{BAR_CELLS, Fit, fit, join, keep, left, middle, width};

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

/// The keys, as the footer names them (within 80 columns), each with its
/// rank: the highest is dropped first on a narrow screen, 0 never.
const KEYS: [(&str, u8); 8] = [
    ("↑↓→← move", 5),
    ("s n sort", 3),
    ("i info", 4),
    ("/ filter", 6),
    ("space mark", 7),
    ("d delete", 2),
    ("? help", 0),
    ("q quit", 0),
];

/// What a saved scan's footer says after the keys (`d` is left out: it
/// cannot delete, and says why).
const SAVED: (&str, u8) = ("(saved scan)", 1);

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

    /// The cell of a gone entry's row: its figures in the old scan.
    fn gone_cell(self, g: &GoneRow, look: Look) -> String {
        match self {
            Col::Change => "gone".into(),
            Col::Fig(Figure::Reclaimable) => reclaimable(look, &g.old, g.bound),
            Col::Fig(f) => size(look.unit, f.of(&g.old)),
            Col::Count if g.kind == Kind::Dir => {
                (g.old.files + g.old.dirs).saturating_sub(1).to_string()
            }
            Col::Count => String::new(),
            Col::Time => g.old.time.map(popups::time).unwrap_or_else(|| "-".into()),
        }
    }
}

/// The flag of a row, as ncdu's column of them: `!` a directory that
/// could not be read, `.` one read in part, `@` neither a file nor a
/// directory, `e` an empty directory; a space for none. (A gone entry's
/// row has `x`.)
fn flag(app: &App<'_>, id: NodeId) -> char {
    let tree = app.tree();
    match (app.unread.mark(id), tree.kind(id)) {
        (' ', Kind::Symlink | Kind::Other) => '@',
        (' ', Kind::Dir) if items(tree, id) == 0 => 'e',
        (m, _) => m,
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
                Col::Change if !app.gone().is_empty() => 4,
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
            // The old figures of the gone entries may be wider.
            let g = app
                .gone()
                .iter()
                .map(|g| layout::width(&c.gone_cell(g, look)))
                .max()
                .unwrap_or(0);
            c.title().len().max(w).max(g)
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
    let names = app.rows().iter().map(|&id| shown_name(tree, id));
    let gone = app.gone().iter().map(gone_name);
    for name in names.chain(gone) {
        longest = longest.max(layout::width(&name));
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
    f.render_widget(Paragraph::new(footer_lines(app, look, area.width)), foot);
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

/// A gone entry's name as its row shows it in full.
fn gone_name(g: &GoneRow) -> String {
    let mut name = printable(&g.name);
    match g.kind {
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

/// The header's two lines at `cells` columns: the path and the sort (its
/// direction dropped first, then the sort), then the figures of the
/// directory shown, its entries and what hides some of them, whole parts
/// dropped to fit (Shared first, then Exclusive, then Reclaimable, then
/// what hides entries; the first figure and the count stay).
fn header(app: &App<'_>, look: Look, cells: u16) -> Vec<Line<'static>> {
    let cells = usize::from(cells);
    let tree = app.tree();
    let sort = app.sort();
    let (name, dir) = match sort.key {
        RowKey::Figure(f) => (f.name(), ["largest first", "smallest first"]),
        RowKey::Name => ("name", ["A to Z", "Z to A"]),
        RowKey::Count => ("items", ["most first", "fewest first"]),
        RowKey::Time => ("modified", ["newest first", "oldest first"]),
        RowKey::Change => ("change", ["largest growth first", "largest shrink first"]),
    };
    let mut full = format!("sort: {name}, {}", dir[usize::from(sort.reverse)]);
    if app.settings().dirs_first {
        full.push_str(", directories first");
    }
    let short = format!("sort: {name}");
    // " sdu ", the path between two spaces (8 cells at least), two
    // spaces, the sort.
    let sort = [full, short]
        .into_iter()
        .find(|s| 5 + 2 + 8 + 2 + width(s) <= cells)
        .unwrap_or_default();
    let room = cells.saturating_sub(5 + 2 + 2 + width(&sort));
    let path = if app.dir() == NodeId::TOP {
        format!("{} paths", tree.roots().len())
    } else {
        left(&printable(&app.path(app.dir())), room.max(8))
    };
    let title = Style::default().add_modifier(Modifier::REVERSED);
    let d = app.dir_figures();
    let u = look.unit;
    let set = app.settings();
    // The figures, then the entries and what hides some.
    let mut parts = vec![
        format!("{} {}", app.first.header(), size(u, app.first_of(&d))),
        format!("Exclusive {}", size(u, d.exclusive)),
        format!("Shared {}", size(u, d.shared)),
        format!(
            "Reclaimable {}",
            reclaimable(look, &d, bound(tree, app.dir()))
        ),
        entries(app.rows().len()),
    ];
    let mut ranks = vec![0, 5, 6, 4, 0];
    if !set.files {
        parts.push("files hidden".into());
    }
    if !set.dotfiles {
        parts.push("hidden entries hidden".into());
    }
    if let Some(f) = &set.filter {
        parts.push(format!("filter: {}", printable(f.as_bytes())));
    }
    ranks.resize(parts.len(), 3);
    // The entries gone from the directory shown (not those below them),
    // said in full, or shorter on a narrower screen (a shorter form
    // shown only when the longer ones are dropped).
    let gone = app.gone().len();
    let alone = parts.len();
    if gone > 0 {
        let what = if gone == 1 { "entry" } else { "entries" };
        parts.push(format!("{gone} {what} gone from here since the old scan"));
        parts.push(format!("{gone} gone from here"));
        parts.push(format!("{gone} gone"));
        ranks.extend([3, 2, 1]);
    }
    let line = |kept: &[bool]| {
        let mut kept = kept.to_vec();
        if gone > 0 {
            let shown = (alone..alone + 3).find(|&i| kept[i]);
            for (i, k) in kept.iter_mut().enumerate().skip(alone) {
                *k = Some(i) == shown;
            }
        }
        let figures = join(&parts[..4], &kept[..4], "  ");
        format!(" {figures}  ·  {}", join(&parts[4..], &kept[4..], ", "))
    };
    let kept = keep(&ranks, cells, |k| width(&line(k)));
    let mut first = vec![
        Span::styled(" sdu ", title.add_modifier(Modifier::BOLD)),
        Span::styled(format!(" {path} "), title),
    ];
    if !sort.is_empty() {
        first.push(Span::raw(format!("  {sort}")));
    }
    vec![Line::from(first), Line::from(line(&kept))]
}

fn titles_line(c: &Cols) -> Line<'static> {
    let mut s = " ".repeat(layout::LEAD);
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
    s.push_str(layout::NAME_TITLE);
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

/// What the body says when the directory shows no row: what hides its
/// entries and the key that shows them, each wrapped in `cells` columns.
fn nothing_shown(app: &App<'_>, cells: usize) -> Vec<Line<'static>> {
    let h = app.hidden();
    // "12 files hidden: a shows them"
    let n = |k: usize, one: &str, many: &str, key: &str, how: &str| {
        let (what, them) = if k == 1 { (one, "it") } else { (many, "them") };
        format!("{k} {what} {how}: {key} shows {them}")
    };
    let mut v = Vec::new();
    if app.unread.mark(app.dir()) == '!' {
        v.push("this directory could not be read: i on its row tells why".to_owned());
    }
    if h.files > 0 {
        v.push(n(h.files, "file", "files", "a", "hidden"));
    }
    if h.dotfiles > 0 {
        let (one, many) = ("entry starting with a dot", "entries starting with a dot");
        v.push(n(h.dotfiles, one, many, "e", "hidden"));
    }
    if h.filtered > 0 {
        let how = "not matching the filter";
        v.push(n(h.filtered, "entry", "entries", "/ then Esc", how));
    }
    if v.is_empty() {
        v.push("empty directory".into());
    }
    let mut lines = Vec::new();
    for text in v {
        lines.extend(
            layout::wrap(&format!("({text})"), cells.saturating_sub(3))
                .into_iter()
                .enumerate()
                .map(|(i, l)| Line::from(format!("{}{l}", if i == 0 { "  " } else { "   " }))),
        );
    }
    lines
}

fn rows(app: &mut App<'_>, look: Look, c: &Cols, area: Rect) -> Vec<Line<'static>> {
    let height = usize::from(area.height);
    let offset = app.scroll(height);
    let cursor = app.cursor();
    let width = usize::from(area.width);
    if app.rows().is_empty() && app.gone().is_empty() {
        return nothing_shown(app, width);
    }
    let all = app.rows().len() + app.gone().len();
    let mut lines = Vec::with_capacity(height);
    for i in (offset..all).take(height) {
        let mut l = match app.rows().get(i) {
            Some(&id) => entry_line(app, look, c, id),
            None => gone_line(&app.gone()[i - app.rows().len()], look, c),
        };
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

/// `c` in colour `look` asks for it.
fn fg(look: Look, c: Color) -> Style {
    if look.color {
        Style::default().fg(c)
    } else {
        Style::default()
    }
}

/// The row of entry `id`.
fn entry_line(app: &App<'_>, look: Look, c: &Cols, id: NodeId) -> Line<'static> {
    let tree = app.tree();
    let rank = app.rank();
    let whole = rank.of(&app.dir_figures());
    let s = &tree.figures(id);
    let marked = app.is_marked(id);
    let kind = tree.kind(id);
    let mut line = String::new();
    line.push(if marked { '*' } else { ' ' });
    line.push(flag(app, id));
    line.push(' ');
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
    if c.fit.bar {
        spans.push(Span::styled(b, fg(look, Color::Cyan)));
        spans.push(Span::raw(" "));
    }
    if c.fit.pct {
        spans.push(Span::raw(format!("{pct}  ")));
    }
    let name_style = match (marked, kind) {
        (true, _) => fg(look, Color::Yellow),
        (false, Kind::Dir) if look.color => Style::default()
            .fg(Color::Blue)
            .add_modifier(Modifier::BOLD),
        _ => Style::default(),
    };
    spans.push(Span::styled(name, name_style));
    Line::from(spans)
}

/// The row of a gone entry: `x`, its figures in the old scan, no bar.
fn gone_line(g: &GoneRow, look: Look, c: &Cols) -> Line<'static> {
    let mut line = String::from(" x ");
    for ((col, w), shown) in c.cols.iter().zip(&c.widths).zip(&c.fit.shown) {
        if *shown {
            line.push_str(&format!("{:>w$}  ", col.gone_cell(g, look)));
        }
    }
    if c.fit.bar {
        line.push_str(&" ".repeat(BAR_CELLS + 1));
    }
    if c.fit.pct {
        line.push_str(&" ".repeat(layout::PCT));
    }
    let name = gone_name(g);
    let suffix = usize::from(g.kind == Kind::Dir || g.kind == Kind::Symlink);
    let mut shown = middle(&printable(&g.name), c.fit.name.saturating_sub(suffix));
    shown.push_str(&name[name.len() - suffix..]);
    Line::from(vec![
        Span::raw(line),
        Span::styled(shown, fg(look, Color::DarkGray)),
    ])
}

/// The footer's line of the marks, when there are any: how many, their
/// first column's figure and what deleting all of them frees, in `cells`
/// columns (the first column's figure dropped first, then what deleting
/// them frees).
fn marks_line_in(app: &App<'_>, look: Look, cells: usize) -> Option<Line<'static>> {
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
    let parts = [
        format!(" {} marked", m.ids.len()),
        format!("{} {}", app.first.header(), size(look.unit, m.total)),
        format!(
            "deleting them frees {}{}",
            m.frees.bound.qualifier(),
            size(look.unit, m.frees.bytes)
        ),
    ];
    let kept = keep(&[0, 2, 1], cells, |k| width(&join(&parts, k, "  ")));
    Some(Line::styled(join(&parts, &kept, "  "), style))
}

/// The footer: the marks' line, then the keys (or the filter being
/// typed), whole parts dropped to fit `cells` columns; `? help` and
/// `q quit` stay.
fn footer_lines(app: &App<'_>, look: Look, cells: u16) -> Vec<Line<'static>> {
    let cells = usize::from(cells);
    let mut v: Vec<Line<'static>> = marks_line_in(app, look, cells).into_iter().collect();
    let keys = if let Some(f) = &app.filter_edit {
        let parts = [
            format!(" filter: {}_", printable(f.as_bytes())),
            "Enter applies, Esc clears".into(),
        ];
        let kept = keep(&[0, 1], cells, |k| width(&join(&parts, k, "   ")));
        join(&parts, &kept, "   ")
    } else {
        let mut keys: Vec<(&str, u8)> = KEYS
            .into_iter()
            .filter(|(k, _)| app.can_delete || *k != "d delete")
            .collect();
        if !app.can_delete {
            keys.push(SAVED);
        }
        let parts: Vec<String> = keys.iter().map(|(k, _)| (*k).to_owned()).collect();
        let ranks: Vec<u8> = keys.iter().map(|(_, r)| *r).collect();
        let kept = keep(&ranks, cells, |k| 1 + width(&join(&parts, k, "  ")));
        format!(" {}", join(&parts, &kept, "  "))
    };
    v.push(Line::styled(
        keys,
        Style::default().add_modifier(Modifier::REVERSED),
    ));
    v
}
