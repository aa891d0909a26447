//! The README and the user guide (`docs/*.md`) cannot drift from the binary: every `dpq`
//! block of a page runs, in order, in one seeded session of its own (as `dpq run --seed 2`
//! would run the page, with its own empty state directory and a terminal of 80 columns; the
//! README's tour as `dpq --seed 2 --practice`, which it advises), and a `text` block right
//! after it is what it prints. A `dpq` block with no `text` block after it must run without an
//! error. A `console` block is a shell transcript: each `$ ` line runs in `sh` with the real
//! binary first on the `PATH`, in a directory of the page's own that holds `examples/`, with a
//! home of its own (so the default state directory is fresh), and the lines after it are what
//! it prints, standard error included. A Markdown table with a column headed `dpq` holds
//! statements that run, row by row, in one seeded session; one with a column headed `prompt`
//! holds lines of the prompt, each known to `dpq --practice` reading it from a pipe.
//! `DPQ_BLESS=1 cargo test --test language guide` rewrites the `text` and `console` blocks;
//! `DPQ_GUIDE_PAGES=docs/a.md,docs/b.md` checks (and blesses) only those pages. Every link
//! between the pages, and every `#anchor`, must lead somewhere.

use crate::common;
use common::transcript::{normalise, run, session, SEED};
use dpq::eval::{Randomness, Session};
use dpq::output::Format;
use dpq::privacy::Store;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The width the guide's examples are rendered at: nothing wider.
const WIDTH: usize = 80;

/// A fenced block: its info string and the byte range of its body.
struct Block {
    lang: String,
    body: std::ops::Range<usize>,
    /// The line the block opens on (1-based), for messages.
    line: usize,
    /// Whether only blank lines separate it from the block before it.
    follows: bool,
}

fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<(String, usize, usize)> = None;
    let mut offset = 0;
    let mut last_close: Option<usize> = None;
    let mut blank_since_close = true;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let trimmed = line.trim_end();
        match &open {
            None if trimmed.starts_with("```") => {
                let follows = last_close.is_some() && blank_since_close;
                open = Some((trimmed[3..].trim().to_string(), offset + line.len(), i + 1));
                if follows {
                    blank_since_close = true;
                }
                out.push(Block {
                    lang: String::new(),
                    body: 0..0,
                    line: i + 1,
                    follows,
                });
            }
            None => {
                if !trimmed.is_empty() {
                    blank_since_close = false;
                }
            }
            Some((lang, start, _)) if trimmed == "```" => {
                let block = out.last_mut().expect("an open block");
                block.lang = lang.clone();
                block.body = *start..offset;
                open = None;
                last_close = Some(i);
                blank_since_close = true;
            }
            Some(_) => {}
        }
        offset += line.len();
    }
    out
}

fn pages() -> Vec<PathBuf> {
    let mut pages = vec![PathBuf::from("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir("docs")
        .expect("docs/ exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    // `DPQ_GUIDE_PAGES=docs/a.md,README.md`: only those pages (to check or bless one page
    // while others are being edited).
    if let Some(only) = std::env::var_os("DPQ_GUIDE_PAGES") {
        let only = only.to_string_lossy().into_owned();
        let wanted: Vec<PathBuf> = only.split(',').map(|p| PathBuf::from(p.trim())).collect();
        pages.retain(|p| wanted.contains(p));
    }
    pages
}

/// The session a page's examples run in: seeded, its state in `state`. The README's tour
/// advises `dpq --seed 2 --practice`, so it runs in practice, its ledgers in memory.
fn page_session(page: &Path, state: &Path) -> Session {
    if page == Path::new("README.md") {
        let mut session =
            Session::with_store(Randomness::Seeded(SEED), Store::memory_beside(state));
        session.set_clock(|| 0);
        session
    } else {
        session(state)
    }
}

/// Runs the `dpq` blocks of `page`; returns the failures and the page with its `text` blocks
/// as the binary prints them.
fn check_page(page: &Path) -> (Vec<String>, String) {
    let text = std::fs::read_to_string(page).expect("a page is readable");
    let found = blocks(&text);
    let state = tempfile::tempdir().expect("a state directory");
    let mut session = page_session(page, state.path());
    let mut shell: Option<Shell> = None;
    dpq::output::set_width(Some(WIDTH));
    let mut failures = Vec::new();
    let mut blessed = String::new();
    let mut copied = 0;
    for (i, block) in found.iter().enumerate() {
        if block.lang == "console" {
            let shell = shell.get_or_insert_with(Shell::new);
            let shown = &text[block.body.clone()];
            let out = shell.transcript(shown);
            if out != shown {
                failures.push(format!(
                    "{}:{}: the commands print otherwise\n--- the guide\n{shown}\n--- sh\n{out}",
                    page.display(),
                    block.line
                ));
            }
            blessed.push_str(&text[copied..block.body.start]);
            blessed.push_str(&out);
            copied = block.body.end;
            continue;
        }
        if block.lang != "dpq" {
            continue;
        }
        let source = &text[block.body.clone()];
        let origin = format!("{}:{}", page.display(), block.line);
        // Errors name the example as a script of its own: `example:LINE:COL`.
        let shown = "example";
        let (out, ok) = run(&mut session, shown, source, Format::Table);
        let out = normalise(&out, state.path());
        // Results fit the width; an error (its message, the source line it quotes and
        // its help, up to the next blank line) is prose a terminal wraps.
        let mut in_error = false;
        for line in out.lines() {
            in_error = line.starts_with("[stderr] ") || (in_error && !line.is_empty());
            if !in_error && line.chars().count() > WIDTH {
                failures.push(format!(
                    "{origin}: a line wider than {WIDTH} columns:\n{line}"
                ));
            }
        }
        match found.get(i + 1).filter(|b| b.lang == "text" && b.follows) {
            Some(expected) => {
                if text[expected.body.clone()] != out {
                    failures.push(format!(
                        "{origin}: the example prints otherwise\n--- the guide\n{}\n--- dpq\n{out}",
                        &text[expected.body.clone()]
                    ));
                }
                blessed.push_str(&text[copied..expected.body.start]);
                blessed.push_str(&out);
                copied = expected.body.end;
            }
            None if !ok => failures.push(format!("{origin}: the example fails\n{out}")),
            None => {}
        }
    }
    blessed.push_str(&text[copied..]);
    dpq::output::set_width(None);
    (failures, blessed)
}

/// A page's shell: a working directory holding `examples/` (a link to the repository's) and
/// a home of its own, so the default state directory starts empty and nothing is written into
/// the repository or the user's home.
struct Shell {
    work: tempfile::TempDir,
    home: tempfile::TempDir,
}

impl Shell {
    fn new() -> Self {
        let work = tempfile::tempdir().expect("a working directory");
        let home = tempfile::tempdir().expect("a home");
        let examples = std::fs::canonicalize("examples").expect("the examples");
        std::os::unix::fs::symlink(examples, work.path().join("examples"))
            .expect("examples/ linked");
        Shell { work, home }
    }

    /// The transcript of the `$ ` lines of `shown`, each followed by what it prints.
    fn transcript(&self, shown: &str) -> String {
        let mut out = String::new();
        for line in shown.lines() {
            let Some(command) = line.strip_prefix("$ ") else {
                continue;
            };
            out.push_str(line);
            out.push('\n');
            let printed = self.run(command);
            out.push_str(&printed);
            if !printed.is_empty() && !printed.ends_with('\n') {
                out.push('\n');
            }
        }
        out
    }

    /// What `command` prints, standard output and error interleaved, with the page's
    /// directories named as a reader's would be (`.` and `~`) and ledger names as `FILE`.
    fn run(&self, command: &str) -> String {
        let bin = Path::new(env!("CARGO_BIN_EXE_dpq"))
            .parent()
            .expect("the binary's directory");
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let output = Command::new("sh")
            .arg("-c")
            .arg(format!("exec 2>&1\n{command}"))
            .current_dir(self.work.path())
            .env("PATH", path)
            .env("HOME", self.home.path())
            .env_remove("XDG_DATA_HOME")
            .env_remove("DPQ_STATE_DIR")
            .env_remove("DPQ_TOKEN")
            .stdin(Stdio::null())
            .output()
            .expect("sh runs");
        let text = String::from_utf8_lossy(&output.stdout);
        let text = text
            .replace(&self.work.path().display().to_string(), ".")
            .replace(&self.home.path().display().to_string(), "~");
        ledger_names(&text)
    }
}

/// `text` with each ledger's file name (a keyed hash, new in every state directory) as `FILE`.
fn ledger_names(text: &str) -> String {
    let marker = "ledgers/";
    let mut named = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(marker) {
        let after = &rest[i + marker.len()..];
        let hash_len = after.bytes().take_while(u8::is_ascii_hexdigit).count();
        named.push_str(&rest[..i + marker.len()]);
        if hash_len > 0 {
            named.push_str("FILE");
        }
        rest = &after[hash_len..];
    }
    named.push_str(rest);
    named
}

/// The cells of a Markdown table row (`| a | b \| c |`), unescaped.
fn cells(row: &str) -> Vec<String> {
    let row = row.trim();
    let row = row.strip_prefix('|').unwrap_or(row);
    let row = row.strip_suffix('|').unwrap_or(row);
    let mut out = vec![String::new()];
    let mut chars = row.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                out.last_mut().expect("a cell").push('|');
                chars.next();
            }
            '|' => out.push(String::new()),
            c => out.last_mut().expect("a cell").push(c),
        }
    }
    out.iter().map(|c| c.trim().to_string()).collect()
}

/// The code spans of a cell: `a` and `b` in "`a`, or `b`".
fn code_spans(cell: &str) -> Vec<String> {
    cell.split('`')
        .enumerate()
        .filter(|(i, s)| i % 2 == 1 && !s.is_empty())
        .map(|(_, s)| s.to_string())
        .collect()
}

/// The code spans of the column headed `column` in every Markdown table of `text`, in order,
/// each with its line (1-based).
fn table_column(text: &str, column: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut in_code = false;
    let mut at: Option<usize> = None;
    for (i, line) in lines.iter().enumerate() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            at = None;
            continue;
        }
        if in_code || !line.trim_start().starts_with('|') {
            at = None;
            continue;
        }
        let separator = |l: &str| {
            l.trim().trim_matches('|').split('|').all(|c| {
                let c = c.trim();
                !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':'))
            })
        };
        match at {
            None if lines.get(i + 1).is_some_and(|next| separator(next)) => {
                at = cells(line)
                    .iter()
                    .position(|c| c == column)
                    .or(Some(usize::MAX));
            }
            Some(_) if separator(line) => {}
            Some(col) => {
                if let Some(cell) = cells(line).get(col) {
                    out.extend(code_spans(cell).into_iter().map(|s| (i + 1, s)));
                }
            }
            None => {}
        }
    }
    out
}

#[test]
fn every_statement_in_a_table_of_the_guide_runs() {
    let mut failures = Vec::new();
    let mut statements = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).expect("a page is readable");
        let rows = table_column(&text, "dpq");
        if rows.is_empty() {
            continue;
        }
        let state = tempfile::tempdir().expect("a state directory");
        let mut session = session(state.path());
        for (line, statement) in rows {
            statements += 1;
            let (out, ok) = run(&mut session, "example", &statement, Format::Table);
            if !ok {
                failures.push(format!(
                    "{}:{line}: `{statement}` fails\n{out}",
                    page.display()
                ));
            }
        }
    }
    if std::env::var_os("DPQ_GUIDE_PAGES").is_none() {
        assert!(
            statements >= 40,
            "the guide's tables run {statements} statements"
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_line_for_the_prompt_in_a_table_of_the_guide_is_known() {
    let mut failures = Vec::new();
    let mut lines = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).expect("a page is readable");
        for (line, typed) in table_column(&text, "prompt") {
            lines += 1;
            let home = tempfile::tempdir().expect("a home");
            let mut child = Command::new(env!("CARGO_BIN_EXE_dpq"))
                .arg("--practice")
                .env("HOME", home.path())
                .env_remove("XDG_DATA_HOME")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("dpq runs");
            {
                use std::io::Write;
                let mut stdin = child.stdin.take().expect("a pipe");
                stdin
                    .write_all(format!("{typed}\n").as_bytes())
                    .expect("the line is sent");
            }
            let out = child.wait_with_output().expect("dpq ends");
            let stderr = String::from_utf8_lossy(&out.stderr);
            if !out.status.success() || !stderr.is_empty() {
                failures.push(format!(
                    "{}:{line}: `{typed}` is not known to the prompt ({}): {stderr}",
                    page.display(),
                    out.status
                ));
            }
        }
    }
    if std::env::var_os("DPQ_GUIDE_PAGES").is_none() {
        assert!(
            lines >= 10,
            "the guide's tables give {lines} lines for the prompt"
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The lines of a page outside its fenced code blocks.
fn prose(text: &str) -> impl Iterator<Item = &str> {
    let mut in_code = false;
    text.lines().filter(move |line| {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            return false;
        }
        !in_code
    })
}

/// The anchors of a page's headings (outside code blocks), repeated ones numbered.
fn anchors(text: &str) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for line in prose(text) {
        if !line.starts_with('#') {
            continue;
        }
        let base = slug(line.trim_start_matches('#'));
        let n = seen.entry(base.clone()).or_insert(0);
        out.push(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// The targets of a page's Markdown links (outside code blocks and code spans).
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose(text) {
        // Code spans hold no links.
        let plain: String = line
            .split('`')
            .enumerate()
            .filter(|(i, _)| i % 2 == 0)
            .map(|(_, s)| s)
            .collect::<Vec<_>>()
            .join(" ");
        let mut rest = plain.as_str();
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn every_example_in_the_guide_prints_what_it_shows() {
    let bless = std::env::var_os("DPQ_BLESS").is_some();
    let mut failures = Vec::new();
    let mut examples = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).expect("a page is readable");
        examples += blocks(&text).iter().filter(|b| b.lang == "dpq").count();
        let (mut failed, blessed) = check_page(&page);
        if bless {
            std::fs::write(&page, blessed).expect("the page is rewritten");
        } else {
            failures.append(&mut failed);
        }
    }
    if std::env::var_os("DPQ_GUIDE_PAGES").is_none() {
        assert!(examples >= 12, "the guide runs {examples} examples");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_link_between_the_pages_leads_somewhere() {
    let mut failures = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).expect("a page is readable");
        let dir = page.parent().unwrap_or(Path::new(""));
        for target in links(&text) {
            if target.starts_with("http://") || target.starts_with("https://") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                page.clone()
            } else {
                dir.join(path)
            };
            if !file.exists() {
                failures.push(format!("{}: no {}", page.display(), file.display()));
                continue;
            }
            if let Some(anchor) = anchor {
                let there = std::fs::read_to_string(&file).unwrap_or_default();
                if !anchors(&there).iter().any(|a| a == anchor) {
                    failures.push(format!(
                        "{}: no heading #{anchor} in {}",
                        page.display(),
                        file.display()
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn blocks_and_anchors_are_read_as_github_reads_them() {
    let text = "# The `LOAD` statement\n\n```dpq\nCOUNT;\n```\n\n```text\nout\n```\nprose\n```text\nlone\n```\n";
    let found = blocks(text);
    assert_eq!(found.len(), 3);
    assert_eq!(found[0].lang, "dpq");
    assert_eq!(&text[found[0].body.clone()], "COUNT;\n");
    assert!(found[1].follows, "a blank line between");
    assert!(!found[2].follows, "prose between");
    assert_eq!(anchors(text), ["the-load-statement"]);
    assert_eq!(
        slug("Two neighbour models: what a budget protects"),
        "two-neighbour-models-what-a-budget-protects"
    );
    assert_eq!(links("see [a](b.md#c) and `[x](y)`"), ["b.md#c"]);
    let table = "| what | dpq |\n|---|---|\n| a | `SHOW TABLES;` |\n| b \\| c | `USE t;`, `x \\| y` |\n\nafter\n| not | a table |\n";
    assert_eq!(
        table_column(table, "dpq"),
        [
            (3, "SHOW TABLES;".to_string()),
            (4, "USE t;".to_string()),
            (4, "x | y".to_string())
        ]
    );
    assert!(table_column(table, "prompt").is_empty());
    assert_eq!(
        ledger_names("at ~/s/ledgers/0a9f.ledger: bad; ledgers/ too"),
        "at ~/s/ledgers/FILE.ledger: bad; ledgers/ too"
    );
}
