//! dpq in a browser: the bindings a page calls (wasm-bindgen).
//!
//! A [`Playground`] is a session whose ledger lives in memory (practice: nothing outlives the
//! page, and every result says so) and whose tables come from text the page hands over with
//! [`provide_file`], by the paths scripts name (`examples/data/people.csv`): nothing is
//! uploaded anywhere. Randomness comes from the browser's cryptographic generator, or from a
//! seed, as `--seed` gives it on the command line. Results come back as the command line
//! prints them, tables or JSON, each with the charts its statement drew (`PLOT 'f.svg'`) as
//! SVG text; `help` and `help COUNT` answer in the page as at the prompt.

use wasm_bindgen::prelude::*;

use crate::driver::{run_source, Emitted};
use crate::eval::{Randomness, Session};
use crate::output::Format;
use crate::privacy::Store;
use crate::syntax::split::split;

/// Hands `bytes` over as the file at `path`, for `LOAD` to read.
#[wasm_bindgen(js_name = provideFile)]
pub fn provide_file(path: &str, bytes: Vec<u8>) {
    crate::data::provide_file(path, bytes);
}

/// The help of the language: `help` alone (an empty `topic`), or of one statement, as the
/// prompt gives it.
#[wasm_bindgen]
pub fn help(topic: &str) -> String {
    crate::help::answer(topic)
}

/// `text` (one statement) with its `--` comments cut off.
fn code_of(text: &str) -> String {
    text.lines()
        .map(|l| l.split("--").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The topic a statement asks help for, `""` for `help` alone; `None` when it is no `help`.
/// (`help` is no statement of the language, so no statement that starts with it is lost.)
fn help_topic(statement: &str) -> Option<String> {
    let code = code_of(statement);
    let mut words = code.split_whitespace();
    if !words.next()?.eq_ignore_ascii_case("help") {
        return None;
    }
    Some(words.collect::<Vec<_>>().join(" "))
}

/// A stretch of a script: statements to run, or a request for help.
enum Stretch {
    /// The whole script with every byte outside the stretch blanked (line breaks kept), so
    /// that an error names the line and column it has in the script.
    Statements(String),
    /// The topic of a `help` (empty for the overview).
    Help(String),
}

/// `source` with every character outside `keep` turned to spaces (as many as its bytes),
/// line breaks kept: byte offsets, lines and columns stay those of `source`.
fn blanked(source: &str, keep: std::ops::Range<usize>) -> String {
    source
        .char_indices()
        .flat_map(|(i, c)| {
            let kept = keep.contains(&i) || c == '\n';
            let (c, times) = if kept { (c, 1) } else { (' ', c.len_utf8()) };
            std::iter::repeat_n(c, times)
        })
        .collect()
}

/// `source` cut at its `help` statements, in order: the statements between two of them run
/// together, as a script, and stop at the first error as a script does.
fn stretches(source: &str) -> Vec<Stretch> {
    let (pieces, _) = split(source);
    let mut out = Vec::new();
    let mut from = 0;
    for piece in pieces {
        let text = source.get(piece.span.start..piece.span.end).unwrap_or("");
        if let Some(topic) = help_topic(text) {
            push_statements(source, &mut out, from..piece.span.start);
            out.push(Stretch::Help(topic));
            // Past the help and its `;`.
            from = (piece.span.end + usize::from(piece.terminated)).min(source.len());
        }
    }
    push_statements(source, &mut out, from..source.len());
    out
}

/// Adds the statements of `source` in `keep` to `out`, unless there is none.
fn push_statements(source: &str, out: &mut Vec<Stretch>, keep: std::ops::Range<usize>) {
    let text = blanked(source, keep);
    let (pieces, error) = split(&text);
    if !pieces.is_empty() || error.is_some() {
        out.push(Stretch::Statements(text));
    }
}

/// One result for the page: whether it is no error, its text, the charts its statement drew
/// (`[name, svg]`).
fn result(ok: bool, text: String, charts: Vec<(String, String)>) -> serde_json::Value {
    serde_json::json!({ "ok": ok, "text": text, "charts": charts })
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
    /// error, in order: `{"ok": true, "text": ..., "charts": [[name, svg], ...]}` (`ok` false
    /// for an error; `"help": true` added for help), the text as the command line prints it
    /// (tables fitted to `width` columns when given), or, with `json`, one JSON result object
    /// per line as `--format json` prints it; the charts those its statement drew. A `help`
    /// or `help STATEMENT` among the statements answers with the help the prompt gives.
    pub fn run(&mut self, source: &str, json: bool, width: Option<u32>) -> String {
        let format = if json { Format::Json } else { Format::Table };
        crate::output::set_width(width.map(|w| w as usize));
        // Charts left by a run that stopped half-way belong to no statement of this one.
        crate::output::plot::take_charts();
        let mut out = Vec::new();
        for stretch in stretches(source) {
            match stretch {
                Stretch::Help(topic) => {
                    let text = help(&topic);
                    let text = match format {
                        Format::Json => {
                            serde_json::json!({ "kind": "help", "text": text }).to_string()
                        }
                        Format::Table => text,
                    };
                    let mut help = result(true, text, Vec::new());
                    help["help"] = true.into();
                    out.push(help);
                }
                Stretch::Statements(text) => {
                    let ran = run_source(&mut self.session, "page", &text, format, &mut |e| {
                        let (ok, text) = match e {
                            Emitted::Result(t) => (true, t),
                            Emitted::Error(t) => (false, t),
                        };
                        out.push(result(ok, text, crate::output::plot::take_charts()));
                    });
                    if !ran {
                        break;
                    }
                }
            }
        }
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
/// `EXPLAIN` already or a `help`. Empty when there is none. Split as dpq splits a script: a `;` in a
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
    } else if help_topic(statement).is_some() {
        // Nothing to explain: run, it answers with the help.
        format!("{statement};")
    } else if statement
        .get(..7)
        .is_some_and(|w| w.eq_ignore_ascii_case("explain"))
    {
        format!("{statement};")
    } else {
        format!("EXPLAIN {statement};")
    }
}
