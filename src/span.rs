//! Byte-offset spans into the source text, and their conversion to line and column.

use std::fmt;

/// A half-open byte range `start..end` into the whole source (script file or REPL buffer).
///
/// Spans never take part in equality: two AST nodes that print the same dpq are equal wherever
/// they were written, so `parse(display(ast)) == ast` can be tested.
#[derive(Clone, Copy, Default, Eq)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// A span from `start` to `end`.
    pub fn new(start: usize, end: usize) -> Self {
        Self { start, end }
    }

    /// The span shifted right by `offset` bytes (statements are parsed one by one).
    pub fn shifted(self, offset: usize) -> Self {
        Self::new(self.start + offset, self.end + offset)
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Self {
        Self::new(self.start.min(other.start), self.end.max(other.end))
    }
}

impl PartialEq for Span {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

impl fmt::Debug for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

/// A 1-based line and column (columns count characters, not bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineCol {
    /// 1-based line number.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

/// Where byte `offset` of `source` lies, as line and column, with the text of that line.
pub fn locate(source: &str, offset: usize) -> (LineCol, &str) {
    let offset = floor_char_boundary(source, offset.min(source.len()));
    let line_start = source[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line_end = source[offset..]
        .find('\n')
        .map_or(source.len(), |i| offset + i);
    let line = source[..line_start].matches('\n').count() + 1;
    let column = source[line_start..offset].chars().count() + 1;
    let text = source[line_start..line_end].trim_end_matches('\r');
    (LineCol { line, column }, text)
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_lines_and_columns() {
        let src = "LOAD 'a.csv';\nCOUNT WHERE x < 1\n  WITH EPS 0;";
        let (lc, text) = locate(src, src.find("EPS").expect("present"));
        assert_eq!(lc, LineCol { line: 3, column: 8 });
        assert_eq!(text, "  WITH EPS 0;");
        assert_eq!(locate(src, 0).0, LineCol { line: 1, column: 1 });
        assert_eq!(locate(src, src.len()).0.line, 3);
    }
}
