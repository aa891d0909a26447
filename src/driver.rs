//! Running source text through a session: the one code path of `dpq run`, `dpq -c`, the REPL and the golden tests.

use crate::error::{Error, EvalError};
use crate::eval::Session;
use crate::output::{error_json, render_json, render_table, Format};
use crate::syntax;

/// One piece of output of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Emitted {
    /// A statement's result (standard output).
    Result(String),
    /// An error: in table form a diagnostic (standard error), in JSON form an `error` object
    /// (standard output).
    Error(String),
}

/// Runs every statement of `source` in order and hands each rendered result to `emit`.
/// Stops at the first error, which is emitted too; returns whether all statements ran.
/// `origin` names the source in diagnostics (a file name, `-c` or `<stdin>`).
pub fn run_source(
    session: &mut Session,
    origin: &str,
    source: &str,
    format: Format,
    emit: &mut dyn FnMut(Emitted),
) -> bool {
    run_source_from(session, origin, source, 1, format, emit)
}

/// As [`run_source`], for a `source` that starts at line `first_line` of its origin, so that
/// errors name the line of the whole input (the REPL runs one statement at a time).
pub fn run_source_from(
    session: &mut Session,
    origin: &str,
    source: &str,
    first_line: usize,
    format: Format,
    emit: &mut dyn FnMut(Emitted),
) -> bool {
    run_each(session, source, &mut |outcome| {
        emit(match outcome {
            Ok(response) => Emitted::Result(match format {
                Format::Table => render_table(response),
                Format::Json => render_json(response),
            }),
            Err(e) => render_error(origin, source, first_line, e, format),
        })
    })
}

/// Runs every statement of `source` in order and hands each outcome to `each`: a response,
/// or the error that stopped the run (the last outcome). Returns whether all statements ran.
/// The one loop of every front end: the command line's, the page's and Python's.
pub fn run_each(
    session: &mut Session,
    source: &str,
    each: &mut dyn FnMut(Result<&crate::output::Response, &Error>),
) -> bool {
    let (pieces, split_error) = syntax::split::split(source);
    for (i, piece) in pieces.into_iter().enumerate() {
        // Ctrl-C at the prompt stops the statements after the one it came during.
        if i > 0 && crate::sys::interrupt::requested() {
            let e = Error::Eval(EvalError::Interrupted {
                what: "this statement and those after it did not run".into(),
                span: piece.span,
            });
            each(Err(&e));
            return false;
        }
        let result = syntax::parse_statement_at(source, piece.span)
            .map_err(Error::from)
            .and_then(|stmt| session.execute(&stmt));
        match result {
            Ok(response) => each(Ok(&response)),
            Err(e) => {
                each(Err(&e));
                return false;
            }
        }
    }
    match split_error {
        Some(e) => {
            each(Err(&e.into()));
            false
        }
        None => true,
    }
}

/// An error as the user sees it: `origin:line:col: message`, the line, a caret and help; or JSON.
pub fn render_error(
    origin: &str,
    source: &str,
    first_line: usize,
    error: &Error,
    format: Format,
) -> Emitted {
    render_diagnostic(origin, source, first_line, &error.diagnostic(), format)
}

/// `source` with the connection string of every `LOAD POSTGRES '...'` and `LOAD SPARK '...'`
/// masked byte for byte (so that every span still points where it did): an error shows its
/// line, and the string can hold a password or a token.
fn mask_connections(source: &str) -> std::borrow::Cow<'_, str> {
    let lower = source.to_ascii_lowercase();
    let bytes = source.as_bytes();
    let mut masked: Option<Vec<u8>> = None;
    let mut from = 0;
    while let Some(at) = lower[from..].find("load").map(|i| i + from) {
        from = at + 4;
        let rest = lower[from..].trim_start();
        let Some(after) = ["postgres", "spark"]
            .iter()
            .find_map(|k| rest.strip_prefix(k))
        else {
            continue;
        };
        let Some(quoted) = after.trim_start().strip_prefix('\'') else {
            continue;
        };
        let start = lower.len() - quoted.len();
        // Up to the closing quote: the first `'` not doubled.
        let mut end = start;
        while end < bytes.len() {
            if bytes[end] == b'\'' && bytes.get(end + 1) != Some(&b'\'') {
                break;
            }
            end += if bytes[end] == b'\'' { 2 } else { 1 };
        }
        let end = end.min(bytes.len());
        let out = masked.get_or_insert_with(|| bytes.to_vec());
        out[start..end].iter_mut().for_each(|b| *b = b'*');
        from = end;
    }
    match masked {
        // Whole characters were replaced by ASCII: still UTF-8.
        Some(m) => std::borrow::Cow::Owned(String::from_utf8(m).unwrap_or_default()),
        None => std::borrow::Cow::Borrowed(source),
    }
}

/// A diagnostic as the user sees it (an error that happened elsewhere, such as on a server,
/// placed in the source the user wrote).
pub fn render_diagnostic(
    origin: &str,
    source: &str,
    first_line: usize,
    d: &crate::error::Diagnostic,
    format: Format,
) -> Emitted {
    Emitted::Error(match format {
        // A message may quote a name or the statement: nothing printed may drive the terminal.
        Format::Table => {
            let source = mask_connections(source);
            crate::data::escape_controls(&d.render_from(origin, &source, first_line)).into_owned()
        }
        Format::Json => {
            let (line, column) = d.line_col(source).unzip();
            let line = line.map(|l| l + first_line - 1);
            error_json(&d.message, line, column, d.help.as_deref())
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_connection_string_is_masked_where_an_error_shows_its_line() {
        let src =
            "LOAD SPARK 'sc://h:1/;token=sekrit' TABLE t; load  postgres 'pass''word=x' TABLE u;";
        let m = super::mask_connections(src);
        assert_eq!(m.len(), src.len());
        assert!(!m.contains("sekrit") && !m.contains("word=x"), "{m}");
        assert!(m.contains("TABLE t;") && m.contains("TABLE u;"), "{m}");
        assert_eq!(super::mask_connections("LOAD 'a.csv';"), "LOAD 'a.csv';");
        assert_eq!(
            super::mask_connections("LOAD SPARK 'unclosed"),
            "LOAD SPARK '********"
        );
    }
}
