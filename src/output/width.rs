//! The width text is rendered for: a terminal's, so that nothing wraps into broken boxes, or
//! none (a pipe, a file, a transcript), where lines are as long as they are.

use std::cell::Cell;
use unicode_width::UnicodeWidthStr;

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
    /// A record per row, one `column = value` line per cell and a blank line between
    /// records, as psql's `\x` and the DuckDB shell's `.mode line` show them: the layout for
    /// a narrow terminal or for reading values one at a time.
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
/// lines indented as the line was; lines of a table's box, and a word longer than the width,
/// are left whole.
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
    fn a_word_longer_than_the_width_stays_whole() {
        let long = "x".repeat(60);
        assert_eq!(wrap(&long, 40), long);
    }
}
