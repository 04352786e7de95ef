//! The boxes over the browser: the help, the entry info, the deletion's
//! confirmation and the notices.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use sdu::figures::{Figure, Kind, Timestamp};

use super::{Look, printable, size};
use crate::browse::app::{App, Confirm, Info, items};
use crate::browse::keys::Profile;

/// The help, as wide as its longest line (as the screen allows), short
/// enough for 80x24.
pub(crate) fn help(f: &mut Frame<'_>, area: Rect, can_delete: bool, keys: Profile) {
    let mut lines: Vec<Line<'_>> = crate::browse::keys::help(keys)
        .iter()
        .filter(|(k, _)| can_delete || !matches!(*k, "d" | "r  b"))
        .map(|(k, what)| Line::from(format!(" {k:<16} {what}")))
        .collect();
    lines.push(Line::from(""));
    lines.push(Line::from(
        " Marked: what deleting all of them frees, shared once",
    ));
    lines.push(Line::from(
        " Flags: ! not read  . read in part (see i)  @ not a file or directory",
    ));
    lines.push(Line::from(
        "        e empty directory  x gone since --compare's scan",
    ));
    if !can_delete {
        lines.push(Line::from(
            " A saved scan (--import) cannot delete or scan again",
        ));
    }
    let title = match keys {
        Profile::Sdu => " sdu -i: keys (any key closes this) ",
        Profile::Ncdu => " sdu -i: keys, ncdu's (any key closes this) ",
    };
    dialog(f, area, title, lines);
}

/// A box in the middle of `area` holding `lines`.
pub(crate) fn dialog(f: &mut Frame<'_>, area: Rect, title: &str, lines: Vec<Line<'_>>) {
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

/// A notice, wrapped (not cut: the reason a deletion stopped is often a
/// long path).
pub(crate) fn notice(f: &mut Frame<'_>, area: Rect, lines: &[String]) {
    let room = usize::from(area.width).saturating_sub(5).max(10);
    let lines: Vec<Line<'_>> = lines
        .iter()
        .flat_map(|l| wrap(l, room))
        .map(|l| Line::from(format!(" {l}")))
        .collect();
    dialog(f, area, " sdu -i ", lines);
}

/// `t` as the time column and the info show it: local time, to the minute.
pub(crate) fn time(t: Timestamp) -> String {
    jiff::Timestamp::new(t.secs, t.nanos as i32)
        .map(|ts| {
            ts.to_zoned(jiff::tz::TimeZone::system())
                .strftime("%Y-%m-%d %H:%M")
                .to_string()
        })
        .unwrap_or_else(|_| t.secs.to_string())
}

/// The lines of the entry info.
pub(crate) fn info_lines(app: &App<'_>, i: &Info, look: Look) -> Vec<String> {
    let tree = app.tree();
    let id = i.id;
    let s = tree.figures(id);
    let u = look.unit;
    let bound = tree.bound(id);
    let q = bound.qualifier();
    let kind = tree.kind(id);
    let mut v = vec![
        format!("Path         {}", sdu::quote(&app.path(id))),
        format!(
            "Type         {}",
            match kind {
                Kind::Dir => "directory",
                Kind::File => "file",
                Kind::Symlink => "symbolic link",
                Kind::Other => "other (device, FIFO or socket)",
            }
        ),
        format!("Total        {}", size(u, s.total)),
        format!("Exclusive    {}", size(u, s.exclusive)),
        format!("Shared       {}", size(u, s.shared)),
        format!("Reclaimable  {q}{}", size(u, s.reclaimable)),
        format!(
            "             {}",
            if bound.is_exact() {
                "Reclaimable is exact"
            } else if bound.at_most() && bound.at_least() {
                "Reclaimable is not exact: a bound both ways"
            } else if bound.at_most() {
                "Reclaimable is not exact: at most this"
            } else {
                "Reclaimable is not exact: at least this"
            }
        ),
        format!("Apparent     {}", size(u, Figure::Apparent.of(&s))),
    ];
    if kind == Kind::Dir {
        let (files, dirs) = (s.files, s.dirs.saturating_sub(1));
        v.push(format!(
            "Items        {} ({files} {}, {dirs} {})",
            items(tree, id),
            if files == 1 { "file" } else { "files" },
            if dirs == 1 {
                "directory"
            } else {
                "directories"
            },
        ));
    }
    if let Some(c) = app.compare {
        let ch = c.change(tree, id);
        match ch.old {
            None => v.push("Before       not in the old scan: new since".into()),
            Some((o, _)) => {
                v.push(format!(
                    "Before       Total {}  Exclusive {}  Shared {}  Reclaimable {}",
                    size(u, o.total),
                    size(u, o.exclusive),
                    size(u, o.shared),
                    size(u, o.reclaimable)
                ));
                let d = |f| super::signed(u, ch.delta(f));
                v.push(format!(
                    "Change       Total {}  Exclusive {}  Shared {}  Reclaimable {}{}",
                    d(Figure::Total),
                    d(Figure::Exclusive),
                    d(Figure::Shared),
                    d(Figure::Reclaimable),
                    if ch.sharing_changed() {
                        "  (sharing changed)"
                    } else {
                        ""
                    }
                ));
            }
        }
    }
    if app.can_delete
        && let Some(why) = app.delete_refusal(id)
    {
        v.push(format!("Delete       can't delete here: {}", why.text()));
    }
    let unreachable = tree.unreachable(id);
    if unreachable > 0 {
        v.push(format!(
            "Unreachable  {} (on disk, referenced by no file)",
            size(u, unreachable)
        ));
    }
    if let Some(t) = s.time {
        v.push(format!("Newest       {} (at the scan)", time(t)));
    }
    let errors = app.unread.of(id);
    for (n, e) in errors.iter().enumerate().take(3) {
        let label = if n > 0 {
            ""
        } else if e.whole {
            "Unread"
        } else {
            "Read in part"
        };
        v.push(format!("{label:<12} {}", e.what));
    }
    if errors.len() > 3 {
        v.push(format!("             and {} more errors", errors.len() - 3));
    }
    if app.unread.below(id) {
        v.push(
            "Read in part a directory below was not read in full (marked ! or .): the figures are what was read"
                .into(),
        );
    }
    match &i.now {
        Some(Ok(now)) => {
            let ino = i.ident.map_or(now.ino, |x| x.ino);
            v.push(format!("Inode        {ino}"));
            v.push(format!("Links        {} (now)", now.nlink));
            v.push(format!("Modified     {} (now)", time(now.mtime)));
            if let Some(x) = i.ident
                && (x.ino, x.dev) != (now.ino, now.dev)
            {
                v.push(
                    "             (replaced since the scan: the figures are the old one's)".into(),
                );
            }
        }
        Some(Err(e)) => {
            if let Some(x) = i.ident {
                v.push(format!("Inode        {}", x.ino));
            }
            v.push(format!("Now          {e}"));
        }
        None => {}
    }
    v
}

/// The entry info.
pub(crate) fn info(f: &mut Frame<'_>, area: Rect, app: &App<'_>, i: &Info, look: Look) {
    let mut lines = info_lines(app, i, look);
    lines.push(String::new());
    lines.push("(any key closes this)".into());
    notice(f, area, &lines);
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

/// The confirmation: the entries (as many as fit), what deleting them
/// frees, and what was typed.
pub(crate) fn confirm(f: &mut Frame<'_>, area: Rect, app: &App<'_>, c: &Confirm, look: Look) {
    let room = usize::from(area.height).saturating_sub(9).max(1);
    let dirs = c.ids.iter().any(|&id| app.tree().kind(id) == Kind::Dir);
    let mut lines = vec![Line::from(match (c.ids.len(), dirs) {
        (1, false) => " Delete 1 entry?".to_owned(),
        (1, true) => " Delete 1 entry, with everything in it?".to_owned(),
        (n, false) => format!(" Delete {n} entries?"),
        (n, true) => format!(" Delete {n} entries, directories with everything in them?"),
    })];
    // An entry under a name that was another entry before the new scan
    // (where the cursor or a mark was) says so under its path, and takes
    // two lines of the room.
    let mut used = 0;
    for (i, &id) in c.ids.iter().enumerate() {
        let replaced = app.replaced(id);
        let need = if replaced { 2 } else { 1 };
        // The last entry may take the line "… and 1 more" would.
        let last = i + 1 == c.ids.len();
        if used + need > room + usize::from(last) {
            let more = c.ids.len() - i;
            let replaced = c.ids[i..].iter().filter(|&&id| app.replaced(id)).count();
            lines.push(Line::from(if replaced == 0 {
                format!("   … and {more} more")
            } else {
                format!(
                    "   … and {more} more, {replaced} not the {} under {} name before the new scan",
                    if replaced == 1 { "entry" } else { "entries" },
                    if replaced == 1 { "its" } else { "their" },
                )
            }));
            break;
        }
        used += need;
        let mut p = printable(&app.path(id));
        if app.tree().kind(id) == Kind::Dir {
            p.push('/');
        }
        lines.push(Line::from(format!("   {p}")));
        if replaced {
            lines.push(Line::from(
                "     ! not the entry under this name before the new scan",
            ));
        }
    }
    lines.push(Line::from(format!(
        " {} {}, frees {}{}",
        app.first.header(),
        size(look.unit, c.total),
        c.frees.bound.qualifier(),
        size(look.unit, c.frees.bytes)
    )));
    lines.push(Line::from(""));
    lines.push(Line::from(format!(
        " Type yes and Enter to delete, Esc to keep {}: {}_",
        if c.ids.len() == 1 { "it" } else { "them" },
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
