//! dpq in Python: the native module `dpq._dpq` (PyO3, the stable ABI from Python 3.10), a
//! front end beside the command line, the server and the page.
//!
//! It runs statements as the prompt does ([`crate::driver::run_each`]) and hands each result
//! back in the forms the prompt and `--format json` print, with the charts its statement
//! wrote; an error raises the `dpq.Error` subclass named by [`crate::error::Error::class`],
//! whose text is the prompt's diagnostic. The package `python/dpq` builds the Python API on
//! these few calls (results, DataFrames, the notebook magic).
//!
//! Rows a DataFrame holds are read through the Arrow C stream interface into the column store
//! ([`crate::data::from_batches`]) and handed to the next `LOAD` ([`Session::give`]); nothing
//! of them is kept on the Python side, and no Python object reaches the session's rows.

use std::path::PathBuf;

use arrow_array::RecordBatchReader;
use arrow_pyarrow::FromPyArrow;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::driver::{render_diagnostic, render_error, run_each, Emitted};
use crate::error::{Diagnostic, Error};
use crate::eval::{Randomness, Session};
use crate::output::{render_json, render_table, Format};
use crate::privacy::Store;
use crate::server::api::RunResponse;
use crate::server::client::Remote;
use crate::span::Span;

/// One result as Python receives it: the JSON object's text, the prompt's text, and the
/// charts the statement wrote (`(file, svg)`).
type Outcome = (String, String, Vec<(String, String)>);

/// An error raised as the `dpq.Error` subclass `class`, carrying the prompt's diagnostic
/// (`text`), the JSON error object, and the results of the statements that ran before it.
fn raise(py: Python<'_>, class: &str, text: String, json: String, done: Vec<Outcome>) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let errors = py.import("dpq._errors")?;
        let exception = errors.call_method1("_make", (class, text, json, done))?;
        Ok(PyErr::from_value(exception))
    };
    build().unwrap_or_else(|e| e)
}

fn text_of(e: Emitted) -> String {
    match e {
        Emitted::Result(t) | Emitted::Error(t) => t,
    }
}

/// Runs `source` in `session`: every result, or the error that stopped the run raised with
/// the results before it.
fn run_in(
    py: Python<'_>,
    session: &mut Session,
    origin: &str,
    source: &str,
) -> PyResult<Vec<Outcome>> {
    // Charts left by a run that stopped half-way belong to no statement of this one.
    crate::output::plot::take_charts();
    let mut done: Vec<Outcome> = Vec::new();
    let mut failed: Option<(String, String, String)> = None;
    run_each(session, source, &mut |outcome| match outcome {
        Ok(response) => done.push((
            render_json(response),
            render_table(response),
            crate::output::plot::take_charts(),
        )),
        Err(e) => failed = Some(error_forms(origin, source, e)),
    });
    match failed {
        None => Ok(done),
        Some((class, text, json)) => Err(raise(py, &class, text, json, done)),
    }
}

fn error_forms(origin: &str, source: &str, e: &Error) -> (String, String, String) {
    (
        e.class().to_string(),
        text_of(render_error(origin, source, 1, e, Format::Table)),
        text_of(render_error(origin, source, 1, e, Format::Json)),
    )
}

/// Refuses `statement` unless it is one `LOAD`: the statement `Session.load` makes of its
/// arguments, which no option may turn into two statements.
fn one_load(py: Python<'_>, statement: &str) -> PyResult<()> {
    use crate::ast::StatementKind;
    let (pieces, error) = crate::syntax::split::split(statement);
    let parsed = match (pieces.as_slice(), error) {
        ([one], None) => {
            crate::syntax::parse_statement_at(statement, one.span).map_err(Error::from)
        }
        _ => {
            let d = Diagnostic {
                message: "the arguments of load() make more than one statement: an option holds a `;`, a quote or a comment it may not".into(),
                span: None,
                help: Some("give each option as its value alone".into()),
            };
            let text = text_of(render_diagnostic("load", statement, 1, &d, Format::Table));
            let json = text_of(render_diagnostic("load", statement, 1, &d, Format::Json));
            return Err(raise(py, "InvalidQuery", text, json, Vec::new()));
        }
    };
    match parsed {
        Ok(stmt) if matches!(stmt.kind, StatementKind::Load { .. }) => Ok(()),
        Ok(_) => {
            let d = Diagnostic {
                message: "the arguments of load() make no LOAD statement".into(),
                span: None,
                help: None,
            };
            let text = text_of(render_diagnostic("load", statement, 1, &d, Format::Table));
            Err(raise(py, "InvalidQuery", text, String::new(), Vec::new()))
        }
        Err(e) => {
            let (class, text, json) = error_forms("load", statement, &e);
            Err(raise(py, &class, text, json, Vec::new()))
        }
    }
}

/// A local session: the prompt's, with its ledgers in a state directory (or in memory, for
/// practice).
#[pyclass(module = "dpq._dpq", unsendable)]
pub struct NativeSession {
    session: Session,
}

#[pymethods]
impl NativeSession {
    /// A session over `state_dir` (else `DPQ_STATE_DIR`, else the user's data directory, as
    /// the command line finds it), or in memory with `practice`; noise from the operating
    /// system's generator, or from `seed` (reproducible and not private).
    #[new]
    #[pyo3(signature = (state_dir=None, practice=false, seed=None))]
    fn new(state_dir: Option<PathBuf>, practice: bool, seed: Option<u64>) -> PyResult<Self> {
        crate::output::plot::keep_written_charts();
        let dir = crate::sys::state_dir(state_dir).map_err(PyValueError::new_err)?;
        let store = match (practice, dir) {
            (true, Some(dir)) => Store::memory_beside(dir),
            (true, None) => Store::memory(),
            (false, Some(dir)) => Store::dir(dir),
            (false, None) => {
                return Err(PyValueError::new_err(
                    "no state directory for the ledgers: give state_dir or set DPQ_STATE_DIR",
                ))
            }
        };
        let randomness = seed.map_or(Randomness::Os, Randomness::Seeded);
        Ok(NativeSession {
            session: Session::with_store(randomness, store),
        })
    }

    /// Runs the statements of `source` (named `origin` in errors).
    fn run(&mut self, py: Python<'_>, source: &str, origin: &str) -> PyResult<Vec<Outcome>> {
        run_in(py, &mut self.session, origin, source)
    }

    /// Runs `statement`, which must be one `LOAD` (the text `Session.load` made of its
    /// arguments: an option can add no statement of its own).
    fn load(&mut self, py: Python<'_>, statement: &str) -> PyResult<Vec<Outcome>> {
        one_load(py, statement)?;
        run_in(py, &mut self.session, "load", statement)
    }

    /// Reads the rows of `data` (any object with `__arrow_c_stream__`) and runs `statement`,
    /// a `LOAD 'shown' AS name ...` that loads them; the rows are dropped whatever it does.
    fn load_rows(
        &mut self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        shown: &str,
        statement: &str,
    ) -> PyResult<Vec<Outcome>> {
        one_load(py, statement)?;
        let fail = |why: String| {
            let d = Diagnostic {
                message: format!("cannot load {shown}: {why}"),
                span: Some(Span::new(0, statement.len())),
                help: None,
            };
            let text = text_of(render_diagnostic("load", statement, 1, &d, Format::Table));
            let json = text_of(render_diagnostic("load", statement, 1, &d, Format::Json));
            raise(py, "DataError", text, json, Vec::new())
        };
        let reader = arrow_array::ffi_stream::RecordBatchStreamReader::from_pyarrow_bound(data)
            .map_err(|_| fail("it does not give its rows as an Arrow stream".into()))?;
        let schema = reader.schema();
        let batches = reader
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| fail("its Arrow stream failed while it was read".into()))?;
        let (table, content) =
            crate::data::from_batches(&schema, &batches, shown).map_err(|e| fail(e.to_string()))?;
        drop(batches);
        self.session.give(shown, table, content);
        let ran = run_in(py, &mut self.session, "load", statement);
        self.session.drop_given();
        ran
    }

    /// The session's tables and their columns.
    fn names(&self) -> Vec<(String, Vec<String>)> {
        self.session.names()
    }

    fn __reduce__(&self) -> PyResult<()> {
        Err(pyo3::exceptions::PyTypeError::new_err(
            "a dpq session cannot be pickled: its budget lives in its state directory; open a new dpq.Session there",
        ))
    }
}

/// A session in `dpq serve`, as `dpq connect` opens it.
#[pyclass(module = "dpq._dpq", unsendable)]
pub struct NativeRemote {
    remote: Remote,
}

#[pymethods]
impl NativeRemote {
    /// Connects to the server at `url` with the analyst's `token`.
    #[new]
    fn new(py: Python<'_>, url: &str, token: &str) -> PyResult<Self> {
        let token = token.trim();
        if token.is_empty() {
            return Err(raise(
                py,
                "ConnectionError",
                "the token is empty".into(),
                String::new(),
                Vec::new(),
            ));
        }
        Remote::connect(url, token.to_string())
            .map(|remote| NativeRemote { remote })
            .map_err(|why| raise(py, "ConnectionError", why, String::new(), Vec::new()))
    }

    /// The server, the analyst and their datasets with what is left of each budget.
    fn greeting(&self) -> String {
        self.remote.greeting()
    }

    /// Runs the statements of `source` on the server.
    fn run(&mut self, py: Python<'_>, source: &str, origin: &str) -> PyResult<Vec<Outcome>> {
        let response: RunResponse = match self.remote.post(source) {
            Ok(Some(r)) => r,
            Ok(None) => {
                return Err(raise(
                    py,
                    "Interrupted",
                    "interrupted: dpq stopped waiting for the server".into(),
                    String::new(),
                    Vec::new(),
                ))
            }
            Err(why) => return Err(raise(py, "ConnectionError", why, String::new(), Vec::new())),
        };
        let done: Vec<Outcome> = response
            .results
            .into_iter()
            .map(|r| {
                let json = crate::data::escape_json_format(&r.json.to_string()).into_owned();
                let table = crate::data::escape_controls(&r.table).into_owned();
                (json, table, Vec::new())
            })
            .collect();
        match response.error {
            None => Ok(done),
            Some(e) => {
                let d = e.diagnostic(source);
                let text = text_of(render_diagnostic(origin, source, 1, &d, Format::Table));
                let json = text_of(render_diagnostic(origin, source, 1, &d, Format::Json));
                let class = e.class.unwrap_or_else(|| "Error".into());
                Err(raise(py, &class, text, json, done))
            }
        }
    }

    /// The tables and columns of the analyst's datasets.
    fn names(&self) -> Vec<(String, Vec<String>)> {
        self.remote.names()
    }

    fn __reduce__(&self) -> PyResult<()> {
        Err(pyo3::exceptions::PyTypeError::new_err(
            "a dpq connection cannot be pickled: connect again with dpq.connect",
        ))
    }
}

/// The help of the language: `help` alone (an empty `topic`), or of one statement.
#[pyfunction]
fn help(topic: &str) -> String {
    crate::help::answer(topic)
}

/// The words of the language.
#[pyfunction]
fn keywords(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    PyList::new(py, crate::syntax::KEYWORDS.iter().copied())
}

/// The module `dpq._dpq`.
#[pymodule]
fn _dpq(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeSession>()?;
    m.add_class::<NativeRemote>()?;
    m.add_function(wrap_pyfunction!(help, m)?)?;
    m.add_function(wrap_pyfunction!(keywords, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
