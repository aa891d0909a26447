//! The README and the user guide (`docs/*.md`) cannot drift from the binary: every `dpq`
//! block of a page runs, in order, in one seeded session of its own (as `dpq run --seed 2`
//! would run the page, with its own empty state directory and a terminal of 80 columns), and
//! a `text` block right after it is what it prints. A `dpq` block with no `text` block after
//! it must run without an error. `DPQ_BLESS=1 cargo test --test guide` rewrites the `text`
//! blocks. Every link between the pages, and every `#anchor`, must lead somewhere.

mod common;
use common::transcript::{normalise, run, session};
use dpq::output::Format;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

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
    pages
}

/// Runs the `dpq` blocks of `page`; returns the failures and the page with its `text` blocks
/// as the binary prints them.
fn check_page(page: &Path) -> (Vec<String>, String) {
    let text = std::fs::read_to_string(page).expect("a page is readable");
    let found = blocks(&text);
    let state = tempfile::tempdir().expect("a state directory");
    let mut session = session(state.path());
    dpq::output::set_width(Some(WIDTH));
    let mut failures = Vec::new();
    let mut blessed = String::new();
    let mut copied = 0;
    for (i, block) in found.iter().enumerate() {
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
    assert!(examples >= 12, "the guide runs {examples} examples");
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
}
