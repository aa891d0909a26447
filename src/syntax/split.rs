//! Splits a script into statements at `;`, outside strings, quoted names and `--` comments.

use crate::error::SyntaxError;
use crate::span::Span;

/// Deepest nesting of parentheses accepted; deeper input is refused before pest sees it.
pub const MAX_DEPTH: usize = 200;

/// A piece of source holding one statement (its `;` excluded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// The statement's bytes in the whole source.
    pub span: Span,
    /// Whether a `;` closed it (the last statement of a script may omit it).
    pub terminated: bool,
}

/// Splits `source` into statements. Pieces holding only blanks and comments are dropped.
///
/// Stops at an unclosed string or quoted name, or at parentheses nested more than
/// [`MAX_DEPTH`] deep (a stack-safe guard for the recursive parser): the statements before it
/// are returned with the error, so a script runs up to the statement that is wrong.
pub fn split(source: &str) -> (Vec<Piece>, Option<SyntaxError>) {
    let bytes = source.as_bytes();
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut depth = 0usize;
    let mut i = 0;
    let mut has_code = false;
    while i < bytes.len() {
        match bytes[i] {
            q @ (b'\'' | b'"') => {
                let open = i;
                i += 1;
                loop {
                    match bytes.get(i) {
                        None => {
                            let span = Span::new(open, source.len());
                            let error = if q == b'\'' {
                                SyntaxError::UnclosedString { span }
                            } else {
                                SyntaxError::UnclosedName { span }
                            };
                            return (pieces, Some(error));
                        }
                        Some(&c) if c == q => {
                            if bytes.get(i + 1) == Some(&q) {
                                i += 2;
                            } else {
                                i += 1;
                                break;
                            }
                        }
                        Some(_) => i += 1,
                    }
                }
                has_code = true;
                continue;
            }
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'(' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    let error = SyntaxError::TooDeep {
                        limit: MAX_DEPTH,
                        span: Span::new(i, i + 1),
                    };
                    return (pieces, Some(error));
                }
                has_code = true;
            }
            b')' => {
                depth = depth.saturating_sub(1);
                has_code = true;
            }
            b';' => {
                if has_code {
                    pieces.push(Piece {
                        span: Span::new(start, i),
                        terminated: true,
                    });
                }
                start = i + 1;
                depth = 0;
                has_code = false;
            }
            c if c.is_ascii_whitespace() => {}
            _ => has_code = true,
        }
        i += 1;
    }
    if has_code {
        pieces.push(Piece {
            span: Span::new(start, source.len()),
            terminated: false,
        });
    }
    (pieces, None)
}

/// Whether `buffer` ends with a complete statement: its last code is a `;` outside strings
/// and comments. The REPL reads more lines until this holds.
pub fn is_complete(buffer: &str) -> bool {
    match split(buffer) {
        (pieces, None) => pieces.last().is_none_or(|p| p.terminated),
        (_, Some(SyntaxError::TooDeep { .. })) => true,
        (_, Some(_)) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(src: &str) -> Vec<&str> {
        let (pieces, error) = split(src);
        assert_eq!(error, None);
        pieces
            .iter()
            .map(|p| src[p.span.start..p.span.end].trim())
            .collect()
    }

    #[test]
    fn splits_outside_strings_and_comments() {
        let src =
            "LOAD 'a;b.csv'; -- a comment; here\nCOUNT WHERE \"x;y\" = 'it''s;' WITH EPS 1;\n";
        assert_eq!(
            texts(src),
            vec![
                "LOAD 'a;b.csv'",
                "-- a comment; here\nCOUNT WHERE \"x;y\" = 'it''s;' WITH EPS 1"
            ]
        );
    }

    #[test]
    fn last_statement_may_omit_semicolon() {
        let (p, _) = split("SHOW TABLES; SHOW BUDGET");
        assert_eq!(p.len(), 2);
        assert!(p[0].terminated && !p[1].terminated);
    }

    #[test]
    fn blank_and_comment_only_pieces_are_dropped() {
        assert_eq!(split("  ;; -- nothing\n ; "), (Vec::new(), None));
    }

    #[test]
    fn unclosed_string_is_an_error() {
        let (pieces, error) = split("SHOW TABLES; LOAD 'a.csv;");
        assert_eq!(pieces.len(), 1, "the statement before runs");
        assert!(matches!(error, Some(SyntaxError::UnclosedString { .. })));
    }

    #[test]
    fn deep_nesting_is_refused_quickly() {
        let src = "(".repeat(100_000);
        assert!(matches!(
            split(&src),
            (_, Some(SyntaxError::TooDeep { .. }))
        ));
    }

    #[test]
    fn completeness_for_the_repl() {
        assert!(is_complete("SHOW TABLES;"));
        assert!(is_complete("SHOW TABLES; -- done"));
        assert!(!is_complete("COUNT WHERE age < 30"));
        assert!(!is_complete("LOAD 'a;"));
        assert!(is_complete(""));
    }
}
