//! What fits on a line, as pure functions: which columns a row keeps at a
//! width (the name first), which whole parts of a header or footer line
//! are kept at a width ([`keep`]), a name shortened in the middle, a path
//! from the left.

use ratatui::text::Span;

/// Cells of a bar (eighths of a cell resolve 1/96).
pub(crate) const BAR_CELLS: usize = 12;
/// The mark (`*`), the flag (`!`, `.`, `@`, `e`, `x`) and a space before
/// the first column.
pub(crate) const LEAD: usize = 3;
/// A bar, its space, the percentage and two spaces: `█████▌       47%  `.
pub(crate) const BAR_AND_PCT: usize = BAR_CELLS + 1 + PCT;
/// The percentage alone and two spaces: ` 47%  `.
pub(crate) const PCT: usize = 6;
/// The name keeps at least this many cells (less only when nothing is left
/// to drop).
pub(crate) const NAME_MIN: usize = 16;
/// The name column's title.
pub(crate) const NAME_TITLE: &str = "Name";

/// Which parts of a row are shown at a width.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fit {
    /// One per column given, in their order: shown or dropped.
    pub(crate) shown: Vec<bool>,
    pub(crate) bar: bool,
    pub(crate) pct: bool,
    /// The cells left for the name.
    pub(crate) name: usize,
}

/// The columns of a row at `width` cells: the figure columns of `widths`
/// (each followed by two spaces), the bar, the percentage, then the name.
/// While the name has less than `NAME_MIN` cells (or less than `longest`,
/// the widest name, when that is narrower, but never less than its title,
/// `Name`) the bar goes first, then the percentage, then the columns in
/// the order `drop` gives.
pub(crate) fn fit(width: usize, widths: &[usize], drop: &[usize], longest: usize) -> Fit {
    let want = longest.clamp(NAME_TITLE.len(), NAME_MIN);
    let mut f = Fit {
        shown: vec![true; widths.len()],
        bar: true,
        pct: true,
        name: 0,
    };
    let used = |f: &Fit| {
        LEAD + widths
            .iter()
            .zip(&f.shown)
            .filter(|(_, s)| **s)
            .map(|(w, _)| w + 2)
            .sum::<usize>()
            + if f.bar {
                BAR_AND_PCT
            } else if f.pct {
                PCT
            } else {
                0
            }
    };
    let mut next = drop.iter().filter(|&&i| i < widths.len());
    loop {
        f.name = width.saturating_sub(used(&f));
        if f.name >= want {
            return f;
        }
        if f.bar {
            f.bar = false;
        } else if f.pct {
            f.pct = false;
        } else if let Some(&i) = next.next() {
            f.shown[i] = false;
        } else {
            return f;
        }
    }
}

/// Which of a line's parts to keep so that it takes at most `room`
/// cells: `cells` gives the cells of the line made of the parts kept;
/// `ranks` gives each part's rank, the highest dropped first (the last of
/// equal ranks first), 0 never. Whole parts go, so that no word is cut;
/// when only parts of rank 0 are left the line may still be wider.
pub(crate) fn keep(ranks: &[u8], room: usize, cells: impl Fn(&[bool]) -> usize) -> Vec<bool> {
    let mut kept = vec![true; ranks.len()];
    while cells(&kept) > room {
        let next = (0..ranks.len())
            .filter(|&i| kept[i] && ranks[i] > 0)
            .max_by_key(|&i| (ranks[i], i));
        match next {
            Some(i) => kept[i] = false,
            None => break,
        }
    }
    kept
}

/// The parts of `parts` that `kept` keeps, joined by `sep`.
pub(crate) fn join(parts: &[String], kept: &[bool], sep: &str) -> String {
    let v: Vec<&str> = parts
        .iter()
        .zip(kept)
        .filter(|(_, k)| **k)
        .map(|(p, _)| p.as_str())
        .collect();
    v.join(sep)
}

/// `text` in lines of at most `room` cells, broken between words (a word
/// longer than `room` has a line of its own).
pub(crate) fn wrap(text: &str, room: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && width(&line) + 1 + width(word) > room {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    lines
}

/// The cells `s` takes on a terminal.
pub(crate) fn width(s: &str) -> usize {
    Span::raw(s).width()
}

/// `name` in at most `room` cells: as it is when it fits, else its start
/// and its end around an ellipsis (`very_long…name.txt`).
pub(crate) fn middle(name: &str, room: usize) -> String {
    if width(name) <= room {
        return name.to_owned();
    }
    if room == 0 {
        return String::new();
    }
    let chars: Vec<char> = name.chars().collect();
    let cw = |c: char| width(c.encode_utf8(&mut [0; 4]));
    let budget = room - 1;
    // The end gets the larger half: it holds the extension.
    let mut head_room = budget / 2;
    let mut tail = Vec::new();
    let mut tail_w = 0;
    for &c in chars.iter().rev() {
        if tail_w + cw(c) > budget - head_room {
            break;
        }
        tail_w += cw(c);
        tail.push(c);
    }
    head_room = budget - tail_w;
    let mut head = String::new();
    let mut head_w = 0;
    for &c in &chars[..chars.len() - tail.len()] {
        if head_w + cw(c) > head_room {
            break;
        }
        head_w += cw(c);
        head.push(c);
    }
    head.push('…');
    head.extend(tail.iter().rev());
    head
}

/// `path` in at most `room` cells: as it is when it fits, else its end
/// after an ellipsis, from a `/` when one is near enough (`…/c/d`).
pub(crate) fn left(path: &str, room: usize) -> String {
    if width(path) <= room {
        return path.to_owned();
    }
    if room == 0 {
        return String::new();
    }
    let mut tail = Vec::new();
    let mut w = 0;
    for c in path.chars().rev() {
        let cw = width(c.encode_utf8(&mut [0; 4]));
        if w + cw > room - 1 {
            break;
        }
        w += cw;
        tail.push(c);
    }
    tail.reverse();
    let tail: String = tail.into_iter().collect();
    let from = tail.find('/').filter(|&i| i <= tail.len() / 2).unwrap_or(0);
    format!("…{}", &tail[from..])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parts go highest rank first (the last of equal ranks first), never
    /// rank 0, and only while the line is too wide.
    #[test]
    fn keep_drops_whole_parts_by_rank() {
        let parts: Vec<String> = ["? help", "move", "sort", "mark", "q quit"]
            .map(String::from)
            .into();
        let ranks = [0, 3, 2, 3, 0];
        let line = |k: &[bool]| width(&join(&parts, k, "  "));
        assert_eq!(keep(&ranks, 80, line), [true; 5]);
        // 32 cells: everything; 31: the last of rank 3 goes.
        assert_eq!(line(&[true; 5]), 32);
        assert_eq!(keep(&ranks, 32, line), [true; 5]);
        assert_eq!(keep(&ranks, 31, line), [true, true, true, false, true]);
        assert_eq!(keep(&ranks, 20, line), [true, false, true, false, true]);
        assert_eq!(keep(&ranks, 19, line), [true, false, false, false, true]);
        // Rank 0 stays even when it does not fit.
        assert_eq!(keep(&ranks, 3, line), [true, false, false, false, true]);
    }

    /// Lines break between words, within the room when every word fits,
    /// and the words are all there in order.
    #[test]
    fn wrap_breaks_between_words() {
        let text = "(12 files hidden: a shows them)";
        assert_eq!(wrap(text, 80), [text]);
        let lines = wrap(text, 12);
        assert_eq!(lines, ["(12 files", "hidden: a", "shows them)"]);
        for room in 1..40 {
            let lines = wrap(text, room);
            assert_eq!(lines.join(" "), text, "{room}");
            let longest = text.split(' ').map(width).max().unwrap();
            assert!(
                lines.iter().all(|l| width(l) <= room.max(longest)),
                "{room}"
            );
        }
    }
}
