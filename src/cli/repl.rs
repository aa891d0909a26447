//! The interactive prompt: rustyline with history, multi-line statements, completion and help.

use super::{Backend, Printer};
use dpq::data::{escape_controls, escape_name};
use dpq::driver::Emitted;
use dpq::output::Format;
use dpq::{help, syntax};
use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{Context, Editor, Helper};
use std::borrow::Cow;
use std::io::IsTerminal;
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;

const KEYWORDS: &[&str] = &[
    "LOAD",
    "AS",
    "NO",
    "HEADER",
    "USE",
    "SHOW",
    "TABLES",
    "BUDGET",
    "HISTORY",
    "DESCRIBE",
    "SET",
    "SEED",
    "COUNT",
    "HISTOGRAM",
    "SUM",
    "MEAN",
    "CLAMP",
    "WHERE",
    "WITH",
    "EPS",
    "PRIOR",
    "MECHANISM",
    "CHOOSE",
    "WITHIN",
    "AT",
    "FOR",
    "AND",
    "OR",
    "NOT",
    "IN",
    "BETWEEN",
    "TRUE",
    "FALSE",
    "laplace",
    "geometric",
    "staircase",
    "SIMULATE",
    "STD",
    "RUNS",
    "PLOT",
    "ERROR",
    "IMPROVEMENT",
    "OUT",
    "OF",
    "RANGE",
    "COMPARE",
    "NOISE",
    "SENSITIVITY",
    "EXPLAIN",
    "CUBE",
    "BY",
    "OBSERVE",
    "ESTIMATE",
    "PROB",
    "help",
];

/// Completes keywords, table names and column names.
struct DpqHelper {
    names: Vec<String>,
}

impl Completer for DpqHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let start = line[..pos]
            .char_indices()
            .rev()
            .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_'))
            .map_or(0, |(i, c)| i + c.len_utf8());
        let word = &line[start..pos];
        if word.is_empty() {
            return Ok((pos, Vec::new()));
        }
        let mut out: Vec<Pair> = KEYWORDS
            .iter()
            .map(|k| k.to_string())
            // A name holding a control or format character is never typed back to the
            // terminal: echoed, it could drive it.
            .chain(
                self.names
                    .iter()
                    .filter(|n| matches!(escape_name(n), Cow::Borrowed(_)))
                    .cloned(),
            )
            .filter(|c| {
                c.len() > word.len()
                    && c.to_ascii_lowercase()
                        .starts_with(&word.to_ascii_lowercase())
            })
            .map(|c| Pair {
                display: c.clone(),
                replacement: c,
            })
            .collect();
        out.dedup_by(|a, b| a.replacement == b.replacement);
        Ok((start, out))
    }
}

impl Hinter for DpqHelper {
    type Hint = String;
}
impl Highlighter for DpqHelper {}
impl Validator for DpqHelper {}
impl Helper for DpqHelper {}

fn history_path() -> Option<PathBuf> {
    dirs::data_dir().map(|d| d.join("dpq").join("repl_history.txt"))
}

/// Runs the prompt until Ctrl-D (or end of input). Returns false when input was not a terminal
/// and a statement failed, so piped sessions report failure.
pub fn run(session: &mut dyn Backend, format: Format) -> bool {
    let interactive = std::io::stdin().is_terminal();
    let mut editor: Editor<DpqHelper, DefaultHistory> = match Editor::new() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("dpq: cannot open the prompt: {e}");
            return false;
        }
    };
    editor.set_helper(Some(DpqHelper {
        names: flat_names(session),
    }));
    let history = history_path().filter(|_| interactive);
    if let Some(h) = &history {
        let _ = editor.load_history(h);
    }
    if interactive {
        println!("dpq {} -- differentially private queries. Type `help`, end statements with ;, Ctrl-D quits.", env!("CARGO_PKG_VERSION"));
    }
    let mut all_ok = true;
    let mut buffer = String::new();
    // Lines read so far, and the line where the buffered statement starts.
    let (mut lines_read, mut buffer_line) = (0usize, 1usize);
    loop {
        let prompt = if buffer.is_empty() { "dpq> " } else { "  -> " };
        match editor.readline(prompt) {
            Ok(line) => {
                lines_read += 1;
                if buffer.is_empty() {
                    buffer_line = lines_read;
                    let word = line.trim().trim_end_matches(';').trim();
                    if let Some(text) = help_text(word) {
                        // The topic asked for is echoed: escaped, and in JSON as JSON.
                        let text = escape_controls(&text).into_owned();
                        match format {
                            Format::Json => {
                                println!("{}", serde_json::json!({ "kind": "help", "text": text }))
                            }
                            Format::Table => println!("{text}"),
                        }
                        continue;
                    }
                    if matches!(word.to_ascii_lowercase().as_str(), "quit" | "exit") {
                        break;
                    }
                }
                buffer.push_str(&line);
                buffer.push('\n');
                if !syntax::split::is_complete(&buffer) {
                    continue;
                }
                let source = std::mem::take(&mut buffer);
                if source.trim().is_empty() {
                    continue;
                }
                let _ = editor.add_history_entry(source.trim_end());
                let mut printer = Printer::new(format);
                let mut failed = false;
                session.run("<repl>", &source, buffer_line, format, &mut |e| {
                    failed |= matches!(e, Emitted::Error(_));
                    printer.emit(e)
                });
                all_ok &= !failed;
                if let Some(h) = editor.helper_mut() {
                    h.names = flat_names(session);
                }
            }
            Err(ReadlineError::Interrupted) => {
                lines_read += 1;
                buffer.clear();
            }
            // Ctrl-D at the continuation prompt abandons the statement being typed, as Ctrl-C
            // does: running it would spend budget the user never confirmed with `;`. A second
            // Ctrl-D at the fresh prompt leaves.
            Err(ReadlineError::Eof) if interactive && !buffer.trim().is_empty() => {
                buffer.clear();
                eprintln!("(statement abandoned; Ctrl-D again or `quit` leaves)");
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                eprintln!("dpq: {e}");
                all_ok = false;
                break;
            }
        }
    }
    if !buffer.trim().is_empty() {
        // Piped input ended inside a statement: run what there is, as a script would (its
        // last statement may omit the `;`). At a terminal the statement was abandoned above.
        let mut printer = Printer::new(format);
        all_ok &= session.run("<repl>", &buffer, buffer_line, format, &mut |e| {
            printer.emit(e)
        });
    }
    if let Some(h) = &history {
        if let Some(dir) = h.parent() {
            // The history lives beside the default state directory: readable by its owner only.
            let _ = std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir);
        }
        let _ = editor.save_history(h);
    }
    interactive || all_ok
}

/// Table and column names, for completion.
fn flat_names(session: &dyn Backend) -> Vec<String> {
    session
        .names()
        .into_iter()
        .flat_map(|(t, cols)| std::iter::once(t).chain(cols))
        .collect()
}

/// The text for `help` or `help TOPIC`, if the line asks for help.
fn help_text(line: &str) -> Option<String> {
    let mut words = line.split_whitespace();
    if !words.next()?.eq_ignore_ascii_case("help") {
        return None;
    }
    let rest: Vec<&str> = words.collect();
    Some(if rest.is_empty() {
        help::overview()
    } else {
        match help::topic(&rest.join(" ")) {
            Some(t) => help::render(t),
            None => format!("No help for `{}`.\n{}", rest.join(" "), help::overview()),
        }
    })
}
