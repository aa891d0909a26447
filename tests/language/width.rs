//! Output fitted to an 80-column terminal breaks no word and no number: prose, errors and help
//! wrap at spaces, table cells wrap between words (a path too long for its cell is shortened
//! in its middle, a table too narrow for its longest words is shown as `.mode line` records),
//! and the banner and the progress bar fit.
//!
//! Each fitted output is checked against the same output rendered for no width (as a pipe
//! gets it): no line is wider than the terminal, and every word and number of the unfitted
//! output is found whole in the fitted one, as often; a word cut in two fails on both counts.
//! The transcript at 80 columns is `tests/golden/width/at80.out`: `DPQ_BLESS=1 cargo test
//! --test language width` rewrites it.

use crate::common;

use common::serve::{Server, Setup};
use common::transcript::{normalise, session};
use dpq::driver::{run_source, Emitted};
use dpq::output::{Format, Layout};
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::process::{Command, Stdio};
use unicode_width::UnicodeWidthStr;

/// The terminal's width.
const WIDTH: usize = 80;

/// The golden transcript at [`WIDTH`] columns.
const GOLDEN: &str = "tests/golden/width/at80.out";

/// What is typed at the prompt, in order: `help`, `.mode`, statements. Each statement runs
/// whether the one before it failed or not, as at the prompt.
const INPUT: &[&str] = &[
    "help",
    "help COUNT",
    "help COMPARE",
    "LOAD 'examples/data/people.csv' AS people;",
    // A path too long for its cell at 80 columns: shortened in its middle.
    "LOAD 'examples/../examples/data/../data/people.csv' AS again;",
    "SHOW TABLES;",
    "USE people;",
    "COUNT WHERE age <= 30 WITH EPS 0.1 PRIOR p=0.3;",
    "CUBE BY age (30, 65), sex ('F', 'M');",
    "HISTOGRAM WITH EPS 0.2;",
    "SUM income CLAMP (0, 200000) WHERE age >= 30 WITH EPS 0.2;",
    "SHOW HISTORY;",
    "SHOW BUDGET;",
    "COMPARE NOISE EPS (0.5, 1);",
    "COMPARE NOISE SHARE N (100, 1000) M (0, 0.5) EPS 0.1;",
    // Errors: a refusal, an unknown column, a syntax error. Messages and help wrap.
    "COUNT WHERE age < 30 WITH EPS 0.8;",
    "COUNT WHERE agee < 30 WITH EPS 0.1;",
    "COUNT WHERE age < WITH EPS 0.1;",
    // A statement longer than the terminal: its error quotes a window of it that fits.
    "COUNT WHERE age < 30 AND sex = 'F' AND region = 'North' AND agee > 3 WITH EPS 0.1;",
    ".mode line",
    "SHOW TABLES;",
    "SHOW HISTORY;",
    ".mode table",
];

/// The text of `help` or `help TOPIC`, as the prompt shows it.
fn help(line: &str) -> Option<String> {
    let rest = line.strip_prefix("help")?.trim();
    Some(if rest.is_empty() {
        dpq::help::overview()
    } else {
        dpq::help::render(dpq::help::topic(rest).expect("a topic"))
    })
}

/// What the prompt shows for [`INPUT`] rendered for `width` (none: unfitted), the banner
/// first, each input after `dpq> ` and each error after a line `[stderr]`.
fn transcript(width: Option<usize>) -> String {
    let state = tempfile::tempdir().expect("a state directory");
    let mut session = session(state.path());
    dpq::output::set_width(width);
    dpq::output::set_layout(Layout::Boxes);
    let mut out = format!("{}\n", dpq::help::banner());
    for input in INPUT {
        out.push_str(&format!("dpq> {input}\n"));
        if let Some(mode) = input.strip_prefix(".mode ") {
            let layout = if mode == "line" {
                Layout::Lines
            } else {
                Layout::Boxes
            };
            dpq::output::set_layout(layout);
            continue;
        }
        if let Some(text) = help(input) {
            out.push_str(&dpq::output::fit(&text));
            out.push('\n');
            continue;
        }
        run_source(&mut session, "<repl>", input, Format::Table, &mut |e| {
            match e {
                Emitted::Result(text) => out.push_str(&text),
                Emitted::Error(text) => {
                    out.push_str("[stderr]\n");
                    out.push_str(&text);
                }
            }
            out.push('\n');
        });
    }
    dpq::output::set_width(None);
    dpq::output::set_layout(Layout::Boxes);
    normalise(&out, state.path())
}

/// Whether `c` draws a table's box (U+2500 to U+257F), not part of a word.
fn is_box(c: char) -> bool {
    ('\u{2500}'..='\u{257f}').contains(&c)
}

/// Whether `line` is the source line an error quotes (`12 | COUNT ...`): never wrapped, and
/// at a terminal's width a window of it, cut at both ends where `…` shows.
fn quoted(line: &str) -> bool {
    line.split_once(" | ")
        .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The words and numbers of `text`: what is between spaces and the lines of tables' boxes,
/// without the record separators and `=` of `.mode line` and the source lines errors quote.
fn words(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| !l.starts_with("-[ RECORD ") && !quoted(l))
        .flat_map(|l| l.split(|c: char| c.is_whitespace() || is_box(c)))
        .filter(|w| !w.is_empty() && *w != "=")
        .collect()
}

/// Whether `short` is the path `long` shortened in its middle (`examp…/people.csv`). Only a
/// path may be shortened: a number or a word never.
fn shortens(short: &str, long: &str) -> bool {
    match short.split_once('…') {
        Some((head, tail)) => {
            long.contains(['/', '\\'])
                && long.len() > head.len() + tail.len()
                && long.starts_with(head)
                && long.ends_with(tail)
        }
        None => false,
    }
}

/// What is wrong with `narrow`, an output fitted to `width` columns, against `wide`, the same
/// output unfitted: lines wider than `width` (each stretch of a line between carriage
/// returns, as a progress bar draws; a line typed after `dpq> ` is the user's), words of
/// `narrow` that are no word of `wide` (the halves of a broken word), and words of `wide`
/// found fewer times whole in `narrow` (a broken word whose halves happen to be words too). A
/// path shortened in its middle stands for the path.
fn breaks(narrow: &str, wide: &str, width: usize) -> Vec<String> {
    let mut failures = Vec::new();
    for line in narrow.lines().filter(|l| !l.starts_with("dpq> ")) {
        for stretch in line.split('\r') {
            if stretch.width() > width {
                failures.push(format!(
                    "a line of {} columns, wider than {width}:\n{stretch}",
                    stretch.width()
                ));
            }
        }
    }
    let count = |text| {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for w in words(text) {
            *counts.entry(w).or_default() += 1;
        }
        counts
    };
    let (fitted, whole) = (count(narrow), count(wide));
    let mut shortened = HashSet::new();
    for word in fitted.keys().filter(|w| !whole.contains_key(*w)) {
        let paths: Vec<&str> = whole
            .keys()
            .filter(|long| shortens(word, long))
            .copied()
            .collect();
        if paths.is_empty() {
            failures.push(format!(
                "`{word}` is no word of the unfitted output: part of a broken word or number?"
            ));
        }
        shortened.extend(paths);
    }
    for (word, n) in &whole {
        let found = fitted.get(word).copied().unwrap_or(0);
        if found < *n && !shortened.contains(word) {
            failures.push(format!(
                "`{word}` is whole {n} time(s) unfitted but {found} time(s) fitted: broken across lines?"
            ));
        }
    }
    failures
}

/// The checker fails on what dpq printed before words were kept whole: a number over two
/// lines of its cell, a header word cut, a word of an error message cut by the terminal, a
/// cell name cut into two halves that are both words elsewhere; and passes the same text
/// wrapped between words.
#[test]
fn the_checker_finds_broken_words_and_numbers() {
    let wide = "│ x10 ┆ x1 ┆ 0 ┆ sensitivity ┆ 231336277.50 ┆ examples/data/people.csv │\n\
                budget exceeded: 0.8 remains of 1";
    let broken = [
        // SHOW HISTORY: `231336277.50` over two lines.
        "│ x10 ┆ x1 ┆ 0 ┆ sensitivity ┆ 231336277. ┆ examples/data/people.csv │\n\
         │     ┆    ┆   ┆             ┆ 50         ┆                          │\n\
         budget exceeded: 0.8 remains of 1",
        // COMPARE NOISE: `sensitivit` / `y`.
        "│ x10 ┆ x1 ┆ 0 ┆ sensitivit ┆ 231336277.50 ┆ examples/data/people.csv │\n\
         │     ┆    ┆   ┆ y          ┆              ┆                          │\n\
         budget exceeded: 0.8 remains of 1",
        // An error cut by the terminal at 80 columns: `0.8 r` / `emains`.
        "│ x10 ┆ x1 ┆ 0 ┆ sensitivity ┆ 231336277.50 ┆ examples/data/people.csv │\n\
         budget exceeded: 0.8 r\nemains of 1",
        // A path split over two lines of its cell: `examples/dat` / `a/people.csv`.
        "│ x10 ┆ x1 ┆ 0 ┆ sensitivity ┆ 231336277.50 ┆ examples/dat │\n\
         │     ┆    ┆   ┆             ┆              ┆ a/people.csv │\n\
         budget exceeded: 0.8 remains of 1",
        // A number shortened as a path would be.
        "│ x10 ┆ x1 ┆ 0 ┆ sensitivity ┆ 2313…7.50 ┆ examples/data/people.csv │\n\
         budget exceeded: 0.8 remains of 1",
        // `x10` cut into `x1` and `0`, both words elsewhere.
        "│ x1 ┆ x1 ┆ 0 ┆ sensitivity ┆ 231336277.50 ┆ examples/data/people.csv │\n\
         │ 0  ┆    ┆   ┆             ┆              ┆                          │\n\
         budget exceeded: 0.8 remains of 1",
    ];
    for narrow in broken {
        assert!(
            !breaks(narrow, wide, 80).is_empty(),
            "not found broken:\n{narrow}"
        );
    }
    // Whole words, but a line wider than the terminal.
    assert!(breaks(wide, wide, 60)[0].starts_with("a line of "));
    let whole = "│ x10 ┆ x1 ┆ 0 ┆ sensitivity ┆ 231336277.50 ┆ examples…/people.csv │\n\
                 budget exceeded: 0.8\n  remains of 1";
    assert_eq!(breaks(whole, wide, 80), Vec::<String>::new());
}

/// Help, the banner, errors, SHOW TABLES (with a path shortened), SHOW HISTORY, SHOW
/// BUDGET, COMPARE NOISE and `.mode line` at 80 columns: no word or number broken, nothing
/// wider; and the transcript as `tests/golden/width/at80.out` has it.
#[test]
fn eighty_columns_break_no_word_or_number() {
    let narrow = transcript(Some(WIDTH));
    let wide = transcript(None);
    let failures = breaks(&narrow, &wide, WIDTH);
    assert!(
        failures.is_empty(),
        "{}\n--- fitted\n{narrow}",
        failures.join("\n")
    );
    // The cases this test is for did happen: a path shortened, records apart, errors wrapped.
    assert!(narrow.contains('…'), "no path was shortened:\n{narrow}");
    assert!(narrow.contains("-[ RECORD 2 ]-"), "{narrow}");
    assert!(narrow.contains("\n  = help: "), "{narrow}");
    // COMPARE NOISE SHARE has more columns than 80 columns hold whole: records.
    let share = narrow
        .split("dpq> COMPARE NOISE SHARE")
        .nth(1)
        .and_then(|s| s.split("dpq> ").next())
        .expect("COMPARE NOISE SHARE ran");
    assert!(share.contains("-[ RECORD 4 ]-"), "{share}");
    // The long statement's error quotes a window of it that fits, cut where `…` shows.
    assert!(narrow.contains("1 | …"), "{narrow}");
    if std::env::var_os("DPQ_BLESS").is_some() {
        std::fs::create_dir_all("tests/golden/width").expect("the golden directory");
        std::fs::write(GOLDEN, &narrow).expect("write the transcript");
        return;
    }
    let expected = std::fs::read_to_string(GOLDEN).unwrap_or_else(|_| {
        panic!("no {GOLDEN} (run DPQ_BLESS=1 cargo test --test language width)")
    });
    assert!(
        expected == narrow,
        "the transcript differs from {GOLDEN}\n--- expected\n{expected}\n--- got\n{narrow}"
    );
}

/// A result as a dpq server renders it (for no width), refitted by `dpq connect` for its
/// terminal, is what local dpq shows at that width; in `.mode line`, its records.
#[test]
fn a_servers_rendering_is_refitted_as_local_dpq_fits_it() {
    let results = |width: Option<usize>, layout: Layout| {
        let state = tempfile::tempdir().expect("a state directory");
        let mut session = session(state.path());
        dpq::output::set_width(width);
        dpq::output::set_layout(layout);
        let mut out = Vec::new();
        for input in INPUT.iter().filter(|i| i.ends_with(';')) {
            run_source(&mut session, "<repl>", input, Format::Table, &mut |e| {
                if let Emitted::Result(text) = e {
                    out.push(normalise(&text, state.path()));
                }
            });
        }
        dpq::output::set_width(None);
        dpq::output::set_layout(Layout::Boxes);
        out
    };
    let served = results(None, Layout::Boxes);
    for (width, layout) in [(Some(WIDTH), Layout::Boxes), (Some(WIDTH), Layout::Lines)] {
        let local = results(width, layout);
        assert_eq!(local.len(), served.len());
        dpq::output::set_width(width);
        dpq::output::set_layout(layout);
        for (served, local) in served.iter().zip(&local) {
            assert_eq!(&dpq::output::refit(served), local, "{layout:?}");
        }
        dpq::output::set_width(None);
        dpq::output::set_layout(Layout::Boxes);
    }
}

/// Text a terminal shows for `raw`: escape sequences dropped, `\r\n` as `\n` (a lone `\r`, as
/// a progress bar redraws, is kept).
fn screen(raw: &str) -> String {
    // The pty's bytes come a char each: decoded as UTF-8 here.
    let bytes: Vec<u8> = raw.chars().map(|c| c as u32 as u8).collect();
    let raw = String::from_utf8_lossy(&bytes);
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                // CSI: parameters up to a final byte in @..~.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC: up to BEL or ST.
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\r' if chars.peek() == Some(&'\n') => {}
            c => out.push(c),
        }
    }
    out
}

/// `dpq` (with `args`, in `dir`) at a pseudo-terminal of [`WIDTH`] columns, `input` typed
/// line by line: the screen's text, the banner first.
fn at_terminal(args: &[&str], env: &[(&str, &str)], input: &[&str]) -> String {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(format!("stty cols {WIDTH} rows 50 && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_dpq"))
        .args(args)
        .env("TERM", "xterm")
        .env_remove("XDG_DATA_HOME");
    for (k, v) in env {
        c.env(k, v);
    }
    let mut p = rexpect::session::spawn_command(c, Some(60_000)).expect("a pty");
    let mut shown = p.exp_string("dpq> ").expect("the prompt") + "dpq> ";
    for line in input {
        p.send_line(line).expect("type a line");
        shown.push_str(&p.exp_string("dpq> ").expect("the prompt again"));
        shown.push_str("dpq> ");
    }
    p.send_control('d').expect("Ctrl-D");
    p.exp_eof().expect("dpq leaves");
    screen(&shown)
}

/// `dpq` (with `args`) reading `input` from a pipe and writing to pipes: unfitted, with the
/// inputs as the prompt echoes them and the banner as the prompt shows it unfitted.
fn piped(args: &[&str], env: &[(&str, &str)], input: &[&str]) -> String {
    let mut c = Command::new(env!("CARGO_BIN_EXE_dpq"));
    c.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().expect("dpq runs");
    let typed: String = input.iter().map(|l| format!("{l}\n")).collect();
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(typed.as_bytes())
        .expect("type");
    let o = child.wait_with_output().expect("dpq ends with its input");
    dpq::output::set_width(None);
    format!(
        "{}\n{}{}{}",
        dpq::help::banner(),
        input
            .iter()
            .filter(|l| !l.is_empty())
            .map(|l| format!("dpq> {l}\n"))
            .collect::<String>(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The statements typed at a real prompt: no error among those before the last, so that the
/// piped run (which stops at none) shows the same.
const TYPED: &[&str] = &[
    "help COUNT",
    "LOAD 'examples/data/people.csv' AS people;",
    // Typed lines fit the terminal, so that the prompt does not wrap them.
    "LOAD 'examples/../examples/data/../data/people.csv' AS again;",
    "SHOW TABLES;",
    "USE people;",
    "CUBE BY age (30, 65), sex ('F', 'M');",
    "HISTOGRAM WITH EPS 0.2;",
    "SUM income CLAMP (0, 200000) WHERE age >= 30 WITH EPS 0.2;",
    "SHOW HISTORY;",
    "COMPARE NOISE EPS (0.5, 1);",
    "COUNT WHERE age < 30 WITH EPS 0.8;",
    "COUNT WHERE agee < 30 WITH EPS 0.1;",
];

/// The prompt at a terminal of 80 columns (the width read from the terminal itself): the
/// banner, help, errors and tables break no word and no number.
#[test]
fn the_prompt_fits_an_80_column_terminal() {
    let state = tempfile::tempdir().expect("a state directory");
    let home = state.path().join("home");
    std::fs::create_dir_all(&home).expect("a home");
    let narrow_state = state.path().join("narrow");
    let wide_state = state.path().join("wide");
    let home = home.to_string_lossy().into_owned();
    let narrow = at_terminal(
        &[
            "--seed",
            "2",
            "--state-dir",
            &narrow_state.to_string_lossy(),
        ],
        &[("HOME", &home)],
        TYPED,
    );
    let wide = piped(
        &["--seed", "2", "--state-dir", &wide_state.to_string_lossy()],
        &[("HOME", &home)],
        TYPED,
    );
    let failures = breaks(&narrow, &wide, WIDTH);
    assert!(
        failures.is_empty(),
        "{}\n--- at the terminal\n{narrow}",
        failures.join("\n")
    );
    assert!(
        narrow.contains("differentially private queries"),
        "{narrow}"
    );
    assert!(narrow.contains("231061787.00"), "{narrow}");
}

/// SIMULATE's progress bar at a terminal of 80 columns: drawn, and never wider.
#[test]
fn the_progress_bar_fits_an_80_column_terminal() {
    let state = tempfile::tempdir().expect("a state directory");
    let home = state.path().to_string_lossy().into_owned();
    let shown = at_terminal(
        &["--state-dir", &home],
        &[("HOME", &home)],
        // 800,000 runs: past 100,000 the old bar of 40 drew 81 columns.
        &["SIMULATE N 100 P 0.3 EPS (0.1, 1) RUNS 400000;"],
    );
    assert!(
        shown.contains(" runs, "),
        "no progress bar was drawn:\n{shown}"
    );
    let too_wide: Vec<&str> = shown
        .lines()
        .flat_map(|l| l.split('\r'))
        .filter(|s| s.width() > WIDTH)
        .collect();
    assert!(too_wide.is_empty(), "wider than {WIDTH}: {too_wide:#?}");
}

/// `dpq connect` at a terminal of 80 columns renders the server's results for that width:
/// tables, errors and help break no word and no number. The unfitted rendering is the same
/// analyst's, piped, after the fitted one (only statements that spend nothing, so both see
/// the same history).
#[test]
fn dpq_connect_fits_an_80_column_terminal() {
    let setup = Setup::new(1);
    let policy = setup.policy("budget = 1", &["1"], "");
    let server = Server::start(&setup, &policy);
    let home = setup.path("home");
    std::fs::create_dir_all(&home).expect("a home");
    let home = home.to_string_lossy().into_owned();
    let env = [("HOME", home.as_str()), ("DPQ_TOKEN", setup.token(0))];
    let url = server.url();
    let spend = [
        "USE people;",
        "SUM income CLAMP (0, 200000) WHERE age >= 30 WITH EPS 0.2;",
    ];
    let read = [
        "help COUNT",
        "SHOW TABLES;",
        "SHOW HISTORY;",
        "COMPARE NOISE EPS (0.5, 1);",
        "COUNT WHERE age < 30 WITH EPS 0.9;",
    ];
    let typed: Vec<&str> = spend.iter().chain(&read).copied().collect();
    let all = at_terminal(&["connect", &url], &env, &typed);
    // Blank lines where the terminal had the spending statements: errors name the same line.
    let blank_first: Vec<&str> = spend.iter().map(|_| "").chain(read).collect();
    let wide = piped(&["connect", &url], &env, &blank_first);
    // What the reading statements showed at the terminal: from the first of them on.
    let narrow = all
        .find(&format!("{}\n", read[0]))
        .map(|i| &all[i..])
        .expect("the reading statements were typed");
    let wide = wide
        .split_once('\n')
        .map(|(_, rest)| rest)
        .expect("the banner");
    // The greeting and the banner fit too.
    let mut failures = breaks(&all[..all.len() - narrow.len()], "", WIDTH)
        .into_iter()
        .filter(|f| f.starts_with("a line of "))
        .collect::<Vec<_>>();
    failures.extend(breaks(narrow, wide, WIDTH));
    assert!(
        failures.is_empty(),
        "{}\n--- at the terminal\n{all}",
        failures.join("\n")
    );
}
