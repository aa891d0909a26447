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
            crate::data::escape_controls(&d.render_from(origin, source, first_line)).into_owned()
        }
        Format::Json => {
            let (line, column) = d.line_col(source).unzip();
            let line = line.map(|l| l + first_line - 1);
            error_json(&d.message, line, column, d.help.as_deref())
        }
    })
}
