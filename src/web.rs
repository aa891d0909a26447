//! dpq in a browser: the bindings a page calls (wasm-bindgen).
//!
//! A [`Playground`] is a session whose ledger lives in memory (practice: nothing outlives the
//! page, and every result says so) and whose tables come from text the page hands over with
//! [`provide_file`], by the paths scripts name (`examples/data/people.csv`): nothing is
//! uploaded anywhere. Randomness comes from the browser's cryptographic generator, or from a
//! seed, as `--seed` gives it on the command line. Results come back as the command line
//! prints them, tables or JSON, and charts (`PLOT 'f.svg'`) as SVG text.

use wasm_bindgen::prelude::*;

use crate::driver::{run_source, Emitted};
use crate::eval::{Randomness, Session};
use crate::output::Format;
use crate::privacy::Store;

/// Hands `bytes` over as the file at `path`, for `LOAD` to read.
#[wasm_bindgen(js_name = provideFile)]
pub fn provide_file(path: &str, bytes: Vec<u8>) {
    crate::data::provide_file(path, bytes);
}

/// The charts drawn since the last call, as a JSON array of `[name, svg]`.
#[wasm_bindgen(js_name = takeCharts)]
pub fn take_charts() -> String {
    serde_json::to_string(&crate::output::plot::take_charts()).unwrap_or_else(|_| "[]".into())
}

/// The help of the language: `help` alone, or of one statement.
#[wasm_bindgen]
pub fn help(topic: &str) -> String {
    let topic = topic.trim();
    if topic.is_empty() {
        crate::help::overview()
    } else {
        crate::help::topic(topic).map_or_else(
            || format!("no help for {topic}: `help` lists the statements"),
            crate::help::render,
        )
    }
}

/// A session of its own, its spending in memory.
#[wasm_bindgen]
pub struct Playground {
    session: Session,
}

#[wasm_bindgen]
impl Playground {
    /// A session drawing noise from the browser's generator, or from `seed` (reproducible,
    /// and not private, as every result then says).
    #[wasm_bindgen(constructor)]
    pub fn new(seed: Option<u32>) -> Playground {
        let randomness = seed.map_or(Randomness::Os, |s| Randomness::Seeded(u64::from(s)));
        Playground {
            session: Session::with_store(randomness, Store::memory()),
        }
    }

    /// Runs the statements of `source`; returns a JSON array with an object per result or
    /// error, in order: `{"ok": true, "text": ...}` or `{"ok": false, "text": ...}`, the text
    /// as the command line prints it (tables fitted to `width` columns when given), or, with
    /// `json`, one JSON result object per line as `--format json` prints it.
    pub fn run(&mut self, source: &str, json: bool, width: Option<u32>) -> String {
        let format = if json { Format::Json } else { Format::Table };
        crate::output::set_width(width.map(|w| w as usize));
        let mut out = Vec::new();
        run_source(&mut self.session, "page", source, format, &mut |e| {
            let (ok, text) = match e {
                Emitted::Result(t) => (true, t),
                Emitted::Error(t) => (false, t),
            };
            out.push(serde_json::json!({ "ok": ok, "text": text }));
        });
        crate::output::set_width(None);
        serde_json::Value::Array(out).to_string()
    }

    /// The current table's budget as `SHOW BUDGET` gives it in JSON (spent, remaining, each
    /// cell's with a cube, the neighbour model), or `null` before any `LOAD`.
    pub fn budget(&mut self) -> String {
        if self.session.current_table_name().is_none() {
            return "null".to_string();
        }
        let mut budget = "null".to_string();
        run_source(
            &mut self.session,
            "page",
            "SHOW BUDGET;",
            Format::Json,
            &mut |e| {
                if let Emitted::Result(t) = e {
                    budget = t;
                }
            },
        );
        budget
    }
}

/// The words of the language, for the page's highlighting, as a JSON array.
#[wasm_bindgen]
pub fn keywords() -> String {
    serde_json::to_string(crate::syntax::KEYWORDS).unwrap_or_else(|_| "[]".into())
}

/// The statement of `source` at byte `offset` (the one holding it, else the last one before
/// it), as `EXPLAIN` asks it: `EXPLAIN statement;`, or the statement itself when it is an
/// `EXPLAIN` already. Empty when there is none. Split as dpq splits a script: a `;` in a
/// comment or a string ends nothing.
#[wasm_bindgen(js_name = explainAt)]
pub fn explain_at(source: &str, offset: usize) -> String {
    let (pieces, _) = crate::syntax::split::split(source);
    let Some(piece) = pieces
        .iter()
        .rev()
        .find(|p| p.span.start <= offset)
        .or(pieces.first())
    else {
        return String::new();
    };
    let text = source.get(piece.span.start..piece.span.end).unwrap_or("");
    // The statement without the comments and blank lines before it.
    let statement = text
        .lines()
        .skip_while(|l| l.trim().is_empty() || l.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n");
    let statement = statement.trim();
    if statement.is_empty() {
        String::new()
    } else if statement
        .get(..7)
        .is_some_and(|w| w.eq_ignore_ascii_case("explain"))
    {
        format!("{statement};")
    } else {
        format!("EXPLAIN {statement};")
    }
}
