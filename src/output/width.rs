//! The width text is rendered for: a terminal's, so that nothing wraps into broken boxes and
//! no word or number is cut (prose breaks at spaces, a path too long is shortened in its
//! middle), or none (a pipe, a file, a transcript), where lines are as long as they are.

use std::cell::Cell;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

thread_local! {
    /// The width in columns results are rendered for on this thread, if any.
    static WIDTH: Cell<Option<usize>> = const { Cell::new(None) };
    /// How tables are drawn on this thread.
    static LAYOUT: Cell<Layout> = const { Cell::new(Layout::Boxes) };
}

/// How a result's tables are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// In boxes, a row per line (cells wrap within their boxes at a terminal's width).
    #[default]
    Boxes,
    /// A record per row, one `column = value` line per cell under a `-[ RECORD n ]---` line,
    /// as psql's `\x` and the DuckDB shell's `.mode line` show them: the layout for a narrow
    /// terminal or for reading values one at a time. A table drawn in boxes is drawn so too
    /// when a terminal is too narrow for its longest words.
    Lines,
}

/// Draws tables on this thread in `layout`.
pub fn set_layout(layout: Layout) {
    LAYOUT.with(|l| l.set(layout));
}

/// How tables are drawn on this thread.
pub fn layout() -> Layout {
    LAYOUT.with(Cell::get)
}

/// The narrowest width honoured: below it, tables could not show a word per cell.
pub const MIN_WIDTH: usize = 40;

/// Renders results on this thread for `width` columns (at least [`MIN_WIDTH`]), or for none.
pub fn set_width(width: Option<usize>) {
    WIDTH.with(|w| w.set(width.map(|w| w.max(MIN_WIDTH))));
}

/// The width results are rendered for on this thread, if any.
pub fn width() -> Option<usize> {
    WIDTH.with(Cell::get)
}

/// `text` fitted to this thread's width (see [`set_width`]): its long lines of prose broken
/// at spaces; as it is when no width is set.
pub fn fit(text: &str) -> String {
    match width() {
        Some(w) => wrap(text, w),
        None => text.to_string(),
    }
}

/// `text` with every line of prose longer than `width` broken at spaces, its continuation
/// lines indented as the line was and two columns more; lines of a table's box, and a word
/// longer than the width, are left whole (a word is never split: a terminal would split it
/// mid-word).
pub(super) fn wrap(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    for line in text.split('\n') {
        if !out.is_empty() {
            out.push('\n');
        }
        let boxed = line.starts_with(['┌', '│', '╞', '├', '└', '╭', '╰', '+', '|']);
        if boxed || line.width() <= width {
            out.push_str(line);
            continue;
        }
        let indent = &line[..line.len() - line.trim_start().len()];
        let mut current = indent.to_string();
        let mut has_word = false;
        for word in line.split(' ').filter(|w| !w.is_empty()) {
            if has_word && current.width() + 1 + word.width() > width {
                out.push_str(&current);
                out.push('\n');
                current = format!("{indent}  ");
                has_word = false;
            }
            if has_word {
                current.push(' ');
            }
            current.push_str(word);
            has_word = true;
        }
        out.push_str(&current);
    }
    out
}

/// `text` broken at spaces into lines of at most `width` columns (a word longer than that
/// on a line of its own), without indenting them: for a value set under a column.
pub(super) fn lines_of(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    for part in text.split('\n') {
        let mut current = String::new();
        for word in part.split(' ').filter(|w| !w.is_empty()) {
            if !current.is_empty() && current.width() + 1 + word.width() > width {
                lines.push(std::mem::take(&mut current));
            }
            if !current.is_empty() {
                current.push(' ');
            }
            current.push_str(word);
        }
        lines.push(current);
    }
    lines
}

/// Whether `word` names a file: it has a `/` or a `\\` and no space. Only a path may be shown
/// shortened (its middle left out), never a number or a word.
pub(super) fn is_path(word: &str) -> bool {
    word.contains(['/', '\\']) && !word.contains(char::is_whitespace)
}

/// The fewest columns a path is shortened to: less would keep too little of it to be told
/// from another.
pub(super) const SHORTEST_PATH: usize = 16;

/// `path` in at most `width` columns (at least [`SHORTEST_PATH`]): whole when it fits, else
/// with its middle left out and `…` in its place, keeping its end (the file's name) before its
/// start, as a file manager shortens a name.
pub(super) fn shorten_middle(path: &str, width: usize) -> String {
    let width = width.max(SHORTEST_PATH);
    if path.width() <= width {
        return path.to_string();
    }
    let chars: Vec<char> = path.chars().collect();
    let columns = |cs: &[char]| cs.iter().map(|c| c.width().unwrap_or(0)).sum::<usize>();
    // The file's name and the separator before it, when they leave room for a start.
    let name_at = path
        .rfind(['/', '\\'])
        .map_or(0, |i| path[..i].chars().count());
    let room = width - 1;
    let mut tail = chars.len() - name_at;
    if columns(&chars[chars.len() - tail..]) > room - room / 3 {
        tail = 0;
        while tail < chars.len() && columns(&chars[chars.len() - tail - 1..]) <= room - room / 3 {
            tail += 1;
        }
    }
    let tail_columns = columns(&chars[chars.len() - tail..]);
    let mut head = 0;
    while head < chars.len() - tail && columns(&chars[..=head]) + tail_columns <= room {
        head += 1;
    }
    let start: String = chars[..head].iter().collect();
    let end: String = chars[chars.len() - tail..].iter().collect();
    format!("{start}…{end}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_wraps_at_spaces_and_boxes_stay_whole() {
        let text = "The noise interval holds the true count with probability 0.95 over the noise.\n│ a ┆ b │";
        let wrapped = wrap(text, 40);
        for line in wrapped.lines().filter(|l| !l.starts_with('│')) {
            assert!(line.width() <= 40, "{line}");
        }
        assert!(wrapped.ends_with("│ a ┆ b │"));
        assert_eq!(wrapped.replace("\n  ", " "), text);
    }

    #[test]
    fn a_path_keeps_its_file_name_and_its_start() {
        let path = "examples/data/../../examples/data/../../examples/data/people.csv";
        let short = shorten_middle(path, 24);
        assert_eq!(short, "examples/dat…/people.csv");
        assert_eq!(short.width(), 24);
        assert_eq!(shorten_middle("data/people.csv", 24), "data/people.csv");
        // A file's name too long to keep whole: its end, and as much of its start.
        let short = shorten_middle(&format!("d/{}.csv", "n".repeat(40)), 20);
        assert_eq!(short.width(), 20);
        assert!(
            short.starts_with("d/nnn") && short.ends_with("nn.csv"),
            "{short}"
        );
        assert!(is_path("a/b.csv") && !is_path("0.5") && !is_path("1/eps and"));
    }

    #[test]
    fn values_break_at_spaces_into_lines() {
        assert_eq!(
            lines_of("0.1 (laplace noise, scale 10)\nsecond", 12),
            ["0.1 (laplace", "noise, scale", "10)", "second"]
        );
    }

    #[test]
    fn a_word_longer_than_the_width_stays_whole() {
        let long = "x".repeat(60);
        assert_eq!(wrap(&long, 40), long);
    }
}
