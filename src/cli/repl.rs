//! The interactive prompt: rustyline with history, multi-line statements, completion and help.

use super::{Backend, Printer};
use dpq::data::{escape_controls, escape_name};
use dpq::driver::Emitted;
use dpq::output::{Format, Layout};
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

use dpq::syntax::KEYWORDS;

mod interrupt;

use interrupt::Running;

/// Completes keywords, table names and column names, by context.
struct DpqHelper {
    /// The tables and their columns.
    names: Vec<(String, Vec<String>)>,
}

impl Completer for DpqHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let (start, found) = candidates(&self.names, line, pos);
        let pairs = found
            .into_iter()
            .map(|c| Pair {
                display: c.clone(),
                replacement: c,
            })
            .collect();
        Ok((start, pairs))
    }
}

/// What a word names, by the keyword before it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Want {
    Column,
    Table,
    /// The one table `DESCRIBE` or `USE` takes: table names and nothing else.
    OnlyTable,
    /// Past the table of `DESCRIBE` or `USE`, where only `;` may follow.
    Nothing,
    Any,
}

/// The completions of the word ending at `pos` (letters, digits and `_`, or a name in
/// double quotes being typed): after `WHERE`, `AND`, `OR`, `NOT`, `BY`, `SUM`, `MEAN` or a
/// comma, column names first; after `AS`, table names first; then the keywords, in the case
/// the word is typed in (`wh` gives `where`). `DESCRIBE` and `USE` take one table's name:
/// only table names, and nothing after it. A name that is not a plain word is offered in
/// double quotes; a name holding a control or format character is never offered (echoed, it
/// could drive the terminal). Returns where the word starts.
fn candidates(names: &[(String, Vec<String>)], line: &str, pos: usize) -> (usize, Vec<String>) {
    let before = &line[..pos];
    let quoted = before
        .rfind('"')
        .filter(|&q| before[..q].matches('"').count().is_multiple_of(2));
    let start = quoted.unwrap_or_else(|| {
        before
            .char_indices()
            .rev()
            .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_'))
            .map_or(0, |(i, c)| i + c.len_utf8())
    });
    let word = &before[start..];
    if word.is_empty() {
        return (pos, Vec::new());
    }
    let want = match before[..start]
        .split(|c: char| c.is_whitespace() || c == '(')
        .rfind(|w| !w.is_empty())
        .map(str::to_ascii_uppercase)
        .as_deref()
    {
        Some("WHERE" | "AND" | "OR" | "NOT" | "BY" | "SUM" | "MEAN") => Want::Column,
        Some(w) if w.ends_with(',') => Want::Column,
        Some("AS") => Want::Table,
        _ => Want::Any,
    };
    let want = one_table(&before[..start]).unwrap_or(want);
    let shown = |n: &String| -> Option<String> {
        if !matches!(escape_name(n), Cow::Borrowed(_)) {
            return None;
        }
        let plain = n
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        Some(if plain && quoted.is_none() {
            n.clone()
        } else {
            format!("\"{}\"", n.replace('"', "\"\""))
        })
    };
    let tables: Vec<String> = names.iter().filter_map(|(t, _)| shown(t)).collect();
    let columns: Vec<String> = names
        .iter()
        .flat_map(|(_, cols)| cols.iter().filter_map(shown))
        .collect();
    let lower = word.chars().all(|c| !c.is_ascii_uppercase());
    let keywords = KEYWORDS.iter().map(|k| {
        if lower {
            k.to_ascii_lowercase()
        } else {
            k.to_ascii_uppercase()
        }
    });
    let ordered: Vec<String> = match want {
        Want::Column => columns.into_iter().chain(tables).chain(keywords).collect(),
        Want::Table => tables.into_iter().chain(columns).chain(keywords).collect(),
        Want::OnlyTable => tables,
        Want::Nothing => Vec::new(),
        Want::Any => keywords.chain(tables).chain(columns).collect(),
    };
    // A quoted name matches on what is inside its quotes, typed with its `"` or not.
    let prefix = word.trim_start_matches('"').to_ascii_lowercase();
    let mut out: Vec<String> = Vec::new();
    for c in ordered {
        let inside = c.trim_start_matches('"').to_ascii_lowercase();
        let matches = c.len() > word.len() && inside.starts_with(&prefix);
        if matches && !out.contains(&c) {
            out.push(c);
        }
    }
    (start, out)
}

/// In a statement of `DESCRIBE` or `USE` (the text since the last `;`, up to the word being
/// completed, is `before`): the table's name where it goes, nothing past it.
fn one_table(before: &str) -> Option<Want> {
    let statement = before.rsplit(';').next().unwrap_or(before).trim_start();
    let keyword_end = statement
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(statement.len());
    let keyword = &statement[..keyword_end];
    if !(keyword.eq_ignore_ascii_case("DESCRIBE") || keyword.eq_ignore_ascii_case("USE")) {
        return None;
    }
    let rest = &statement[keyword_end..];
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        // `DESCRIBEX`, `user_x`: not the keyword.
        return None;
    }
    Some(if rest.trim().is_empty() {
        Want::OnlyTable
    } else {
        Want::Nothing
    })
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

/// Runs `source` with Ctrl-C asking it to stop, and says so when Ctrl-C came too late to
/// stop anything (the statements then ran to their end). Returns whether all ran.
fn run_statements(
    session: &mut dyn Backend,
    origin: &str,
    source: &str,
    first_line: usize,
    format: Format,
    emit: &mut dyn FnMut(Emitted),
) -> bool {
    let running = Running::start();
    let ok = session.run(origin, source, first_line, format, emit);
    if ok && running.interrupted() {
        eprintln!(
            "(Ctrl-C came when nothing could stop safely: everything ran to its end, as shown)"
        );
    }
    ok
}

/// Runs the prompt until Ctrl-D (or end of input). Returns false when input was not a terminal
/// and a statement failed, so piped sessions report failure.
pub fn run(session: &mut dyn Backend, format: Format) -> bool {
    let mut format = format;
    let mut timer = false;
    let interactive = std::io::stdin().is_terminal();
    // A first Tab completes what all candidates share; a second lists them.
    let config = rustyline::Config::builder()
        .completion_type(rustyline::CompletionType::List)
        .build();
    let mut editor: Editor<DpqHelper, DefaultHistory> = match Editor::with_config(config) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("dpq: cannot open the prompt: {e}");
            return false;
        }
    };
    editor.set_helper(Some(DpqHelper {
        names: session.names(),
    }));
    let history = history_path().filter(|_| interactive);
    if let Some(h) = &history {
        if let Some(dir) = h.parent() {
            // The history lives beside the default state directory: readable by its owner only
            // (rustyline writes the file itself with mode 0600).
            let _ = std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir);
        }
        let _ = editor.load_history(h);
    }
    if interactive {
        // Ctrl-C then stops a running statement instead of ending dpq.
        interrupt::listen();
        println!("{}", help::banner());
        run_rc(session, format);
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
                        show_help(&text, format);
                        continue;
                    }
                    if matches!(word.to_ascii_lowercase().as_str(), "quit" | "exit") {
                        break;
                    }
                    if let Some(command) = Command::read(line.trim()) {
                        match command {
                            Command::Quit => break,
                            Command::Help => show_help(&commands_help(), format),
                            Command::Tables => {
                                let mut printer = Printer::new(format);
                                all_ok &= run_statements(
                                    session,
                                    "<repl>",
                                    "SHOW TABLES;",
                                    buffer_line,
                                    format,
                                    &mut |e| printer.emit(e),
                                );
                            }
                            Command::Mode(f, layout) => {
                                format = f;
                                dpq::output::set_layout(layout);
                            }
                            Command::Timer(on) => timer = on,
                            Command::Unknown(message) => {
                                eprintln!("{message}");
                                all_ok = false;
                            }
                        }
                        continue;
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
                // Appended as it is entered, before it runs: a session killed or cut off
                // keeps every statement it was given. Two prompts open at once both keep
                // their lines.
                if let Some(h) = &history {
                    let _ = editor.append_history(h);
                }
                super::fit_terminal();
                let mut printer = Printer::new(format);
                let mut failed = false;
                let started = std::time::Instant::now();
                let emit = &mut |e: Emitted| {
                    failed |= matches!(e, Emitted::Error(_));
                    printer.emit(e)
                };
                run_statements(session, "<repl>", &source, buffer_line, format, emit);
                if timer {
                    eprintln!("Run Time: {:.3} s", started.elapsed().as_secs_f64());
                }
                all_ok &= !failed;
                if let Some(h) = editor.helper_mut() {
                    h.names = session.names();
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
    interactive || all_ok
}

/// The text for `help` or `help TOPIC`, if the line asks for help.
fn help_text(line: &str) -> Option<String> {
    let mut words = line.split_whitespace();
    if !words.next()?.eq_ignore_ascii_case("help") {
        return None;
    }
    Some(help::answer(&words.collect::<Vec<_>>().join(" ")))
}

/// A command of the prompt itself, on a line of its own at the `dpq>` prompt: the habits of
/// psql (`\q`, `\?`, `\dt`) and of the DuckDB and SQLite shells (`.quit`, `.help`,
/// `.tables`, `.mode`, `.timer`).
#[derive(Debug, PartialEq)]
enum Command {
    Quit,
    Help,
    Tables,
    /// `.mode table|json|line`: the format, and for tables how they are drawn.
    Mode(Format, Layout),
    Timer(bool),
    /// A line that looks like a command and is none: its message.
    Unknown(String),
}

impl Command {
    /// The command `line` is, if it starts with `.` or `\` (a statement never does).
    fn read(line: &str) -> Option<Command> {
        if !line.starts_with(['.', '\\']) {
            return None;
        }
        let mut words = line.split_whitespace();
        let name = words.next()?.to_ascii_lowercase();
        let arg = words.next().map(str::to_ascii_lowercase);
        let extra = words.next().is_some();
        Some(match (name.as_str(), arg.as_deref(), extra) {
            (".quit" | ".exit" | "\\q", None, false) => Command::Quit,
            (".help" | "\\?" | "\\h", _, _) => Command::Help,
            (".tables" | "\\dt" | "\\d", None, false) => Command::Tables,
            (".mode", Some("table" | "box"), false) => Command::Mode(Format::Table, Layout::Boxes),
            (".mode", Some("line" | "lines"), false) => Command::Mode(Format::Table, Layout::Lines),
            (".mode", Some("json"), false) => Command::Mode(Format::Json, Layout::Boxes),
            (".mode", _, _) => Command::Unknown(
                "`.mode table`, `.mode line` or `.mode json`: how results are shown".to_string(),
            ),
            (".timer", Some("on"), false) => Command::Timer(true),
            (".timer", Some("off"), false) => Command::Timer(false),
            (".timer", _, _) => Command::Unknown(
                "`.timer on` or `.timer off`: whether each statement's time is shown".to_string(),
            ),
            _ => Command::Unknown(format!(
                "unknown command `{}`: `.help` lists the prompt's commands; statements end with ;",
                escape_controls(&name)
            )),
        })
    }
}

/// Shows help text: escaped (a topic asked for is echoed), and in JSON as JSON.
fn show_help(text: &str, format: Format) {
    let text = escape_controls(text).into_owned();
    match format {
        Format::Json => println!("{}", serde_json::json!({ "kind": "help", "text": text })),
        Format::Table => println!("{}", dpq::output::fit(&text)),
    }
}

/// The prompt's commands as `.help` lists them: each with its other spellings, and what it
/// does.
const COMMANDS: [(&str, &str); 5] = [
    (".help, \\?", "this list"),
    (".tables, \\dt", "the tables loaded (SHOW TABLES)"),
    (
        ".mode table|line|json",
        "results as boxes, `column = value` lines, or JSON",
    ),
    (".timer on|off", "show each statement's time"),
    (".quit, \\q", "leave (as Ctrl-D or `quit`)"),
];

/// What `.help` shows: the prompt's own commands in two aligned columns, then where to find
/// the statements.
fn commands_help() -> String {
    let width = COMMANDS.iter().map(|(c, _)| c.len()).max().unwrap_or(0);
    let mut out = String::from("The prompt's commands, each on a line of its own:\n");
    for (command, what) in COMMANDS {
        out.push_str(&format!("  {command:<width$}  {what}\n"));
    }
    out.push_str(
        "`help` lists the statements, and `help COUNT` explains one.\n\
         Ctrl-C stops a running statement at a safe point: what was spent stays spent.\n\
         At start the prompt runs the statements of ~/.dpqrc, if there is one.",
    );
    out
}

/// Runs `~/.dpqrc` (statements, as a script) at the start of an interactive prompt, reporting
/// its errors with its name; a missing file is nothing.
fn run_rc(session: &mut dyn Backend, format: Format) {
    let Some(path) = dirs::home_dir().map(|h| h.join(".dpqrc")) else {
        return;
    };
    let Ok(source) = std::fs::read_to_string(&path) else {
        return;
    };
    let mut printer = Printer::new(format);
    let origin = path.display().to_string();
    run_statements(session, &origin, &source, 1, format, &mut |e| {
        printer.emit(e)
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_read_as_psql_and_duckdb_users_type_them() {
        assert_eq!(Command::read("\\q"), Some(Command::Quit));
        assert_eq!(Command::read(".QUIT"), Some(Command::Quit));
        assert_eq!(Command::read("\\?"), Some(Command::Help));
        assert_eq!(Command::read(".tables"), Some(Command::Tables));
        assert_eq!(
            Command::read(".mode json"),
            Some(Command::Mode(Format::Json, Layout::Boxes))
        );
        assert_eq!(
            Command::read(".mode line"),
            Some(Command::Mode(Format::Table, Layout::Lines))
        );
        assert_eq!(Command::read(".timer on"), Some(Command::Timer(true)));
        assert!(matches!(
            Command::read(".mode csv"),
            Some(Command::Unknown(_))
        ));
        assert!(matches!(
            Command::read(".frobnicate"),
            Some(Command::Unknown(_))
        ));
        assert_eq!(Command::read("SHOW TABLES;"), None);
        assert_eq!(Command::read("COUNT WHERE x = '.q' WITH EPS 1;"), None);
    }

    fn names() -> Vec<(String, Vec<String>)> {
        vec![(
            "where_data".to_string(),
            vec![
                "wage".to_string(),
                "weight kg".to_string(),
                "bad\u{1b}[2J".to_string(),
            ],
        )]
    }

    #[test]
    fn after_where_columns_come_first_and_odd_names_are_quoted() {
        let line = "COUNT WHERE w";
        let (start, found) = candidates(&names(), line, line.len());
        assert_eq!(start, line.len() - 1);
        assert_eq!(found[..2], ["wage", "\"weight kg\""]);
        assert!(found.contains(&"with".to_string()), "{found:?}");
        assert!(found.iter().all(|c| !c.contains('\u{1b}')), "{found:?}");
        let line = "COUNT WHERE wage > 3 AND \"we";
        let (start, found) = candidates(&names(), line, line.len());
        assert_eq!(&line[start..], "\"we");
        assert_eq!(found, ["\"weight kg\""]);
    }

    #[test]
    fn keywords_come_in_the_case_typed_and_tables_after_use() {
        let (_, found) = candidates(&names(), "count wh", 8);
        assert_eq!(found.first().map(String::as_str), Some("where"));
        let (_, found) = candidates(&names(), "COUNT WH", 8);
        assert_eq!(found.first().map(String::as_str), Some("WHERE"));
        let (_, found) = candidates(&names(), "USE wh", 6);
        assert_eq!(found.first().map(String::as_str), Some("where_data"));
    }

    #[test]
    fn describe_and_use_offer_table_names_only_and_nothing_after_them() {
        let names = vec![
            ("people".to_string(), vec!["pay".to_string()]),
            ("places".to_string(), vec!["postcode".to_string()]),
        ];
        for line in [
            "DESCRIBE p",
            "describe  p",
            "SHOW TABLES; DESCRIBE p",
            "USE p",
        ] {
            let (start, found) = candidates(&names, line, line.len());
            assert_eq!(start, line.len() - 1, "{line}");
            // Not the keywords `prior`, `plot`, `prob`, nor the columns `pay`, `postcode`.
            assert_eq!(found, ["people", "places"], "{line}");
        }
        let (_, found) = candidates(&names, "DESCRIBE \"pe", 12);
        assert_eq!(found, ["\"people\""]);
        for line in ["DESCRIBE people p", "DESCRIBE \"people\" p", "use places w"] {
            let (_, found) = candidates(&names, line, line.len());
            assert!(found.is_empty(), "{line}: {found:?}");
        }
        // A word that only starts like the keyword is not it.
        let (_, found) = candidates(&names, "DESCRIBED p", 11);
        assert!(found.contains(&"prior".to_string()), "{found:?}");
        let (_, found) = candidates(&names, "COUNT WHERE p", 13);
        assert_eq!(found.first().map(String::as_str), Some("pay"));
    }

    #[test]
    fn the_commands_of_dot_help_line_up() {
        let help = commands_help();
        let rows: Vec<&str> = help.lines().filter(|l| l.starts_with("  .")).collect();
        assert_eq!(rows.len(), COMMANDS.len(), "{help}");
        // Each description starts in the same column, after at least two spaces.
        let column = |row: &str| {
            let command = COMMANDS
                .iter()
                .find(|(c, _)| row[2..].starts_with(c))
                .map(|(c, _)| c.len() + 2)
                .unwrap_or_else(|| panic!("an unknown command: {row}"));
            let gap = row[command..].len() - row[command..].trim_start().len();
            assert!(gap >= 2, "{row}");
            command + gap
        };
        let first = column(rows[0]);
        for row in &rows {
            assert_eq!(column(row), first, "{help}");
        }
        assert!(help.lines().all(|l| l.chars().count() <= 80), "{help}");
    }
}
