//! Running source text through a session: the one code path of `dpq run`, `dpq -c`, the REPL and the golden tests.

use crate::error::Error;
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
    let pieces = match syntax::split::split(source) {
        Ok(p) => p,
        Err(e) => {
            emit(render_error(origin, source, &e.into(), format));
            return false;
        }
    };
    for piece in pieces {
        let result = syntax::parse_statement_at(source, piece.span)
            .map_err(Error::from)
            .and_then(|stmt| session.execute(&stmt));
        match result {
            Ok(response) => emit(Emitted::Result(match format {
                Format::Table => render_table(&response),
                Format::Json => render_json(&response),
            })),
            Err(e) => {
                emit(render_error(origin, source, &e, format));
                return false;
            }
        }
    }
    true
}

/// An error as the user sees it: `origin:line:col: message`, the line, a caret and help; or JSON.
pub fn render_error(origin: &str, source: &str, error: &Error, format: Format) -> Emitted {
    let d = error.diagnostic();
    Emitted::Error(match format {
        Format::Table => d.render(origin, source),
        Format::Json => {
            let (line, column) = d.line_col(source).unzip();
            error_json(&d.message, line, column, d.help.as_deref())
        }
    })
}
