//! Canary: no raw value, row or true count of the data ever reaches the analyst (SPEC section 1).
//!
//! A CSV file of 7,919 rows whose every cell holds a value found nowhere else (text tokens that
//! start with `qZx`, integers in `7100001..=7685933`, floats in `60000..67919`, booleans and
//! missing cells) is run through every statement of the language and every error path that can
//! be reached, by the same code path as the binary (`driver::run_source` on a `Session` with a
//! ledger in a temporary state directory) in table and JSON form, and through the real binary
//! (`-c`, `run`, a piped prompt). Broken copies of the file (ragged rows, an unclosed quote,
//! invalid UTF-8, bad headers, too many fields) carry tokens in their cells too.
//!
//! What is checked, in every output (standard output and error, every JSON object) and in every
//! file the runs leave in the state and home directories:
//!
//! - no token of the data appears, except the few tokens the test itself types in its statements
//!   (the analyst's own literals), and those only inside an echo of the statement: the header
//!   line of a count, a statement cell of `SHOW BUDGET` and `SHOW HISTORY`, the source line
//!   quoted under a diagnostic, a `statement` (or ledger `key`) field of JSON;
//! - outside those echoes, no number in the ranges the numeric columns take (so neither a value
//!   nor a minimum or maximum, even rounded);
//! - no true count of any query the test runs, as a standalone number. The queries are chosen
//!   so that their true counts are distinctive (at least 100, and unlike any public number the
//!   run prints: `n`, line numbers of the broken files, limits, literals of the statements); noisy
//!   answers are printed with decimals (full precision in JSON), so only a leak prints a true
//!   count as an integer. The one integer-valued derived output, the Bayes credible interval,
//!   is checked to be a function of the released noisy answer alone (recomputed from it), and
//!   the priors are chosen far from the true proportions so that its ends lie far from the true
//!   counts: the check is deterministic under the seed, and stays meaningful if the noise changes.

use dpq::driver::{run_source, Emitted};
use dpq::eval::{Randomness, Session};
use dpq::output::Format;
use dpq::privacy::Store;
use dpq::stats::{bayes, Epsilon, Probability};
use serde_json::Value;
use std::collections::{BTreeSet, HashSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

// ============================================================ the canary data

/// Rows of the canary table: a prime, so that `i * a % N` permutes the rows.
const N: usize = 7919;
/// Every text token of the data starts with this (it is not a hex digit string, so no hash
/// printed by dpq can contain it).
const MARKER: &str = "qZx";
/// Integers of column `amount`: `AMOUNT_BASE + AMOUNT_STEP * k` for `k` in `0..N`.
const AMOUNT_BASE: i64 = 7_100_001;
const AMOUNT_STEP: i64 = 74;
const AMOUNT_MAX: i64 = AMOUNT_BASE + AMOUNT_STEP * (N as i64 - 1);
/// Floats of column `ratio`: `RATIO_BASE + k` plus a fraction, `k` in `0..N`.
const RATIO_BASE: usize = 60_000;
/// The seed of the library runs (`SET SEED`) and of the binary runs (`--seed`).
const SEED: u64 = 7;
/// dpq's default limit on fields per record.
const MAX_FIELDS: usize = 4096;

/// One row as the test knows it; `None` is a missing cell.
struct Row {
    code: Option<String>,
    city: Option<String>,
    amount: Option<i64>,
    ratio: Option<f64>,
    flag: Option<bool>,
    note: Option<String>,
}

fn perm(i: usize, a: usize) -> usize {
    i * a % N
}

/// An integer threshold strictly between two values of `amount`: never a value of the data.
fn mid(k: i64) -> i64 {
    AMOUNT_BASE + AMOUNT_STEP * k + AMOUNT_STEP / 2
}

const HEADER: &str = "code,city,amount,ratio,flag,note";

/// The rows and the lines of the CSV file (header first, no line breaks).
fn make_rows() -> (Vec<Row>, Vec<Vec<u8>>) {
    let mut rows = Vec::with_capacity(N);
    let mut lines = vec![HEADER.as_bytes().to_vec()];
    for i in 0..N {
        let code = (i % 97 != 13).then(|| format!("qZxC{:04X}w", perm(i, 2897)));
        let city = (i % 89 != 7).then(|| format!("qZxT{:04X}k", perm(i, 5003)));
        let amount = (i % 101 != 50).then(|| AMOUNT_BASE + AMOUNT_STEP * perm(i, 3001) as i64);
        let ratio_text =
            (i % 103 != 3).then(|| format!("{}.{:03}7", RATIO_BASE + perm(i, 4001), i * 37 % 1000));
        let flag = (i % 107 != 1).then_some(i % 3 == 0);
        let note = (i % 5 == 0).then(|| format!("qZxN{i:04X}a, \"qZxQ{i:04X}b\""));
        let flag_text = match flag {
            None => "",
            Some(true) if i % 2 == 0 => "TRUE",
            Some(true) => "true",
            Some(false) if i % 4 == 1 => "False",
            Some(false) => "false",
        };
        let line = format!(
            "{},{},{},{},{},{}",
            code.as_deref().unwrap_or(""),
            city.as_deref().unwrap_or("NA"),
            amount.map(|a| a.to_string()).unwrap_or_default(),
            ratio_text.as_deref().unwrap_or("NA"),
            flag_text,
            note.as_ref()
                .map(|n| format!("\"{}\"", n.replace('"', "\"\"")))
                .unwrap_or_default(),
        );
        lines.push(line.into_bytes());
        rows.push(Row {
            code,
            city,
            amount,
            ratio: ratio_text.map(|t| t.parse().expect("a ratio parses")),
            flag,
            note,
        });
    }
    (rows, lines)
}

fn join_lines(lines: &[Vec<u8>], sep: &[u8]) -> Vec<u8> {
    let mut out = lines.join(sep);
    out.extend_from_slice(sep);
    out
}

/// A token for a broken file, in a family of its own.
fn tok(family: char, k: usize) -> String {
    format!("{MARKER}{family}{k:04X}z")
}

/// How a step is expected to end.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// Every statement runs.
    Ok,
    /// It fails with an error whose message contains this.
    Err(&'static str),
    /// Either (statements the design names but the language may not have yet).
    Any,
}

/// A broken copy of the canary file.
struct Broken {
    name: &'static str,
    bytes: Vec<u8>,
    expect: Expect,
    /// Physical lines of the file that its error may name (public).
    lines: Vec<usize>,
}

fn broken_files(lines: &[Vec<u8>]) -> Vec<Broken> {
    let with_line = |line: usize, content: Vec<u8>| {
        let mut l = lines.to_vec();
        l[line - 1] = content;
        join_lines(&l, b"\n")
    };
    let with_header = |header: &[u8]| {
        let mut l = lines.to_vec();
        l[0] = header.to_vec();
        join_lines(&l, b"\n")
    };
    let row_of = |cells: &[Vec<u8>]| cells.join(&b","[..]);
    let toks = |family: char, from: usize, count: usize| -> Vec<Vec<u8>> {
        (from..from + count)
            .map(|k| tok(family, k).into_bytes())
            .collect()
    };
    let mut invalid_cell = tok('V', 1).into_bytes();
    invalid_cell.extend_from_slice(b"\xff\xfe");
    invalid_cell.extend_from_slice(tok('W', 1).as_bytes());
    let mut invalid_row = toks('V', 10, 6);
    invalid_row[1] = invalid_cell;
    let mut invalid_amount = toks('A', 0, 6);
    invalid_amount[2] = [b"71".as_slice(), b"\xc3\x28", tok('A', 9).as_bytes()].concat();
    let mut unclosed = toks('U', 0, 6);
    unclosed[1] = format!("\"{}", tok('U', 7)).into_bytes();
    let mut unclosed_last = toks('U', 10, 6);
    unclosed_last[5] = format!("\"{}", tok('U', 17)).into_bytes();
    let mut stray = toks('S', 0, 6);
    stray[1] = format!("{}\"{}", tok('S', 7), tok('S', 8)).into_bytes();
    let mut after_quote = toks('G', 0, 6);
    after_quote[0] = format!("\"{}\"{}", tok('G', 7), tok('G', 8)).into_bytes();
    let mut nul = toks('L', 0, 6);
    nul[1] = [tok('L', 7).as_bytes(), b"\0", tok('L', 8).as_bytes()].concat();
    let mixed = toks('M', 0, 6);
    let mut header_utf8 = HEADER.as_bytes().to_vec();
    header_utf8.splice(6..7, b"\xff".iter().copied());
    vec![
        Broken {
            name: "ragged_long",
            bytes: with_line(2345, row_of(&toks('R', 0, 7))),
            expect: Expect::Err("the number of fields on line 2345 differs from the header's 6"),
            lines: vec![2345],
        },
        Broken {
            name: "ragged_short",
            bytes: with_line(3456, row_of(&toks('R', 20, 4))),
            expect: Expect::Err("the number of fields on line 3456 differs from the header's 6"),
            lines: vec![3456],
        },
        Broken {
            // The quotes of later `note` cells close this one: the record runs on, ragged.
            name: "unclosed_quote_mid_file",
            bytes: with_line(4567, row_of(&unclosed)),
            expect: Expect::Err("on line 4567 differs"),
            lines: vec![4567],
        },
        Broken {
            name: "unclosed_quote",
            bytes: with_line(N + 1, row_of(&unclosed_last)),
            expect: Expect::Err("the quoted field opened on line 7920 is never closed"),
            lines: vec![N + 1],
        },
        Broken {
            name: "invalid_utf8",
            bytes: with_line(5678, row_of(&invalid_row)),
            expect: Expect::Err("line 5678, column city: the cell is not valid UTF-8"),
            lines: vec![5678],
        },
        Broken {
            name: "invalid_utf8_number",
            bytes: with_line(6789, row_of(&invalid_amount)),
            expect: Expect::Err("line 6789, column amount: the cell is not valid UTF-8"),
            lines: vec![6789],
        },
        Broken {
            name: "too_many_fields",
            bytes: with_line(1357, row_of(&toks('F', 0, MAX_FIELDS + 900))),
            expect: Expect::Err("line 1357 has more than 4096 fields"),
            lines: vec![1357],
        },
        Broken {
            name: "duplicate_header",
            bytes: with_header(b"code,city,amount,ratio,flag,code"),
            expect: Expect::Err("does not read as a header row"),
            lines: vec![],
        },
        Broken {
            name: "empty_header",
            bytes: with_header(b"code,city,,ratio,flag,note"),
            expect: Expect::Err("does not read as a header row"),
            lines: vec![],
        },
        Broken {
            name: "blank_header",
            bytes: with_header(b"code,city,amount,ratio,flag,  "),
            expect: Expect::Err("does not read as a header row"),
            lines: vec![],
        },
        Broken {
            name: "header_utf8",
            bytes: with_header(&header_utf8),
            expect: Expect::Err("does not read as a header row"),
            lines: vec![],
        },
        Broken {
            name: "empty",
            bytes: Vec::new(),
            expect: Expect::Err("the file is empty"),
            lines: vec![],
        },
        Broken {
            name: "bom_only",
            bytes: b"\xef\xbb\xbf".to_vec(),
            expect: Expect::Err("the file is empty"),
            lines: vec![],
        },
        Broken {
            name: "no_header",
            bytes: b"\n\n\r\n\n".to_vec(),
            expect: Expect::Err("the file has no header row"),
            lines: vec![],
        },
        // Odd but perhaps acceptable: whatever dpq makes of them, no token may show.
        Broken {
            name: "stray_quote",
            bytes: with_line(2468, row_of(&stray)),
            expect: Expect::Any,
            lines: vec![2468],
        },
        Broken {
            name: "text_after_quote",
            bytes: with_line(3579, row_of(&after_quote)),
            expect: Expect::Any,
            lines: vec![3579],
        },
        Broken {
            name: "nul_byte",
            bytes: with_line(4680, row_of(&nul)),
            expect: Expect::Any,
            lines: vec![4680],
        },
        Broken {
            name: "mixed_types",
            bytes: with_line(5791, row_of(&mixed)),
            expect: Expect::Any,
            lines: vec![5791],
        },
        Broken {
            name: "crlf",
            bytes: join_lines(lines, b"\r\n"),
            expect: Expect::Ok,
            lines: vec![],
        },
    ]
}

// ============================================================ the queries

/// A counting query the test runs, with its true count.
struct Query {
    text: String,
    truth: u64,
}

/// The canary: its files, what the test knows of them, and the queries and their true counts.
struct Canary {
    dir: tempfile::TempDir,
    csv: PathBuf,
    broken: Vec<(PathBuf, Expect)>,
    rows: Vec<Row>,
    /// Every `qZx` word of every data file.
    data_words: HashSet<String>,
    /// The numeric cells of the canary file, as written.
    data_numbers: HashSet<String>,
    /// Public numbers a run may print that a true count must not equal.
    public_numbers: BTreeSet<u64>,
    typed_code: String,
    typed_city: String,
    typed_note: String,
    typed_amount: i64,
    queries: Vec<Query>,
}

fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
}

impl Canary {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let (rows, lines) = make_rows();
        let csv = dir.path().join("canary.csv");
        let bytes = join_lines(&lines, b"\n");
        std::fs::write(&csv, &bytes).expect("write the canary file");
        let mut data_words: HashSet<String> = words(&String::from_utf8_lossy(&bytes))
            .filter(|w| w.contains(MARKER))
            .map(str::to_string)
            .collect();
        let mut public_numbers: BTreeSet<u64> = [N as u64, MAX_FIELDS as u64].into();
        let mut broken = Vec::new();
        for b in broken_files(&lines) {
            let path = dir.path().join(format!("{}.csv", b.name));
            std::fs::write(&path, &b.bytes).expect("write a broken file");
            data_words.extend(
                words(&String::from_utf8_lossy(&b.bytes))
                    .filter(|w| w.contains(MARKER))
                    .map(str::to_string),
            );
            public_numbers.extend(b.lines.iter().map(|&l| l as u64));
            broken.push((path, b.expect));
        }
        let mut data_numbers = HashSet::new();
        for line in &lines[1..] {
            let line = String::from_utf8_lossy(line);
            let cells: Vec<&str> = line.split(',').collect();
            for c in &cells[2..4] {
                if !c.is_empty() && *c != "NA" {
                    data_numbers.insert((*c).to_string());
                }
            }
        }
        assert!(data_numbers.len() > N, "both numeric columns are collected");
        let typed_code = rows[10].code.clone().expect("row 10 has a code");
        let typed_city = rows[20].city.clone().expect("row 20 has a city");
        let typed_note = rows[0].note.clone().expect("row 0 has a note");
        let typed_amount = rows[30].amount.expect("row 30 has an amount");
        let mut c = Self {
            dir,
            csv,
            broken,
            rows,
            data_words,
            data_numbers,
            public_numbers,
            typed_code,
            typed_city,
            typed_note,
            typed_amount,
            queries: Vec::new(),
        };
        c.queries = c.make_queries();
        c
    }

    fn count(&self, f: impl Fn(&Row) -> bool) -> u64 {
        self.rows.iter().filter(|r| f(r)).count() as u64
    }

    fn q(&self, text: String, f: impl Fn(&Row) -> bool) -> Query {
        Query {
            truth: self.count(f),
            text,
        }
    }

    /// Every operator, IN, BETWEEN, NOT, AND, OR, PRIOR, MECHANISM; three-valued logic as the
    /// the guide states it (a comparison on a missing value is unknown, and counts nowhere).
    fn make_queries(&self) -> Vec<Query> {
        let (code, city, note, amount) = (
            self.typed_code.clone(),
            self.typed_city.clone(),
            self.typed_note.clone(),
            self.typed_amount,
        );
        let lt = |x: &Row, t: i64| x.amount.is_some_and(|a| a < t);
        let ratio = |x: &Row, f: &dyn Fn(f64) -> bool| x.ratio.is_some_and(f);
        vec![
            self.q(
                format!("COUNT WHERE amount < {} WITH EPS 0.1", mid(4816)),
                |x| lt(x, mid(4816)),
            ),
            self.q(
                format!("COUNT WHERE amount <= {} WITH EPS 0.1", mid(2702)),
                |x| x.amount.is_some_and(|a| a <= mid(2702)),
            ),
            self.q(
                format!("COUNT WHERE amount > {} WITH EPS 0.1", mid(1333)),
                |x| x.amount.is_some_and(|a| a > mid(1333)),
            ),
            self.q(
                format!("COUNT WHERE amount >= {} WITH EPS 0.1", mid(6000)),
                |x| x.amount.is_some_and(|a| a >= mid(6000)),
            ),
            self.q(
                format!("COUNT WHERE amount != {} WITH EPS 0.1", mid(10)),
                |x| x.amount.is_some(),
            ),
            self.q(
                format!("COUNT WHERE amount <> {} WITH EPS 0.2", mid(11)),
                |x| x.amount.is_some(),
            ),
            self.q(format!("COUNT WHERE amount = {amount} WITH EPS 0.1"), |x| {
                x.amount == Some(amount)
            }),
            self.q(
                "COUNT WHERE ratio BETWEEN 60500.5 AND 63911.25 WITH EPS 0.1".into(),
                |x| ratio(x, &|r| (60500.5..=63911.25).contains(&r)),
            ),
            self.q(
                "COUNT WHERE ratio NOT BETWEEN 60500.5 AND 63911.25 WITH EPS 0.1".into(),
                |x| ratio(x, &|r| !(60500.5..=63911.25).contains(&r)),
            ),
            self.q(
                "COUNT WHERE ratio > 61234.5 AND flag = TRUE WITH EPS 0.1".into(),
                |x| ratio(x, &|r| r > 61234.5) && x.flag == Some(true),
            ),
            self.q(
                format!("COUNT WHERE city IN ('{city}', 'qZxNOPE7') WITH EPS 0.1"),
                |x| x.city.as_deref() == Some(city.as_str()),
            ),
            self.q(
                format!("COUNT WHERE city NOT IN ('{city}', 'qZxNOPE7') WITH EPS 0.1"),
                |x| x.city.as_ref().is_some_and(|c| *c != city),
            ),
            self.q(
                format!("COUNT WHERE code = '{code}' WITH EPS 0.1 PRIOR p=0.001"),
                |x| x.code.as_deref() == Some(code.as_str()),
            ),
            self.q(
                format!("COUNT WHERE NOT code = '{code}' WITH EPS 0.1"),
                |x| x.code.as_ref().is_some_and(|c| *c != code),
            ),
            self.q("COUNT WHERE flag = TRUE WITH EPS 0.1".into(), |x| {
                x.flag == Some(true)
            }),
            self.q("COUNT WHERE flag = false WITH EPS 0.1".into(), |x| {
                x.flag == Some(false)
            }),
            self.q("COUNT WHERE flag != TRUE WITH EPS 0.3".into(), |x| {
                x.flag == Some(false)
            }),
            self.q(
                format!(
                    "COUNT WHERE (amount < {} AND flag = FALSE) OR ratio >= 67000.5 WITH EPS 0.1",
                    mid(3999)
                ),
                |x| (lt(x, mid(3999)) && x.flag == Some(false)) || ratio(x, &|r| r >= 67000.5),
            ),
            self.q(
                format!(
                    "COUNT WHERE NOT (amount >= {} OR city = '{city}') WITH EPS 0.1",
                    mid(5555)
                ),
                |x| lt(x, mid(5555)) && x.city.as_ref().is_some_and(|c| *c != city),
            ),
            self.q(
                format!(
                    "COUNT WHERE note = '{}' WITH EPS 0.1",
                    note.replace('\'', "''")
                ),
                |x| x.note.as_deref() == Some(note.as_str()),
            ),
            self.q(
                format!(
                    "COUNT WHERE note NOT IN ('{}') WITH EPS 0.1",
                    note.replace('\'', "''")
                ),
                |x| x.note.as_ref().is_some_and(|n| *n != note),
            ),
            self.q(
                format!(
                    "COUNT WHERE amount NOT IN ({amount}, {}, {}) WITH EPS 0.1",
                    mid(1),
                    mid(2)
                ),
                |x| x.amount.is_some_and(|a| a != amount),
            ),
            self.q(
                format!(
                    "COUNT WHERE amount NOT BETWEEN {} AND {} WITH EPS 0.1",
                    mid(100),
                    mid(7000)
                ),
                |x| {
                    x.amount
                        .is_some_and(|a| !(mid(100)..=mid(7000)).contains(&a))
                },
            ),
            // Priors far from the true proportions: the credible intervals lie far from the
            // true counts (see the module's comment).
            self.q(
                format!(
                    "COUNT WHERE amount BETWEEN {} AND {} WITH EPS 0.1 PRIOR p=0.99",
                    mid(2000),
                    mid(2500)
                ),
                |x| {
                    x.amount
                        .is_some_and(|a| (mid(2000)..=mid(2500)).contains(&a))
                },
            ),
            self.q(
                "COUNT WHERE ratio < 62222.5 WITH EPS 0.1 PRIOR p=0.02".into(),
                |x| ratio(x, &|r| r < 62222.5),
            ),
            self.q(
                format!(
                    "COUNT WHERE amount > {} WITH EPS 0.1 MECHANISM laplace PRIOR p=0.985",
                    mid(3333)
                ),
                |x| x.amount.is_some_and(|a| a > mid(3333)),
            ),
            self.q(
                format!(
                    "count where amount >= {} with eps 0.15 mechanism LAPLACE",
                    mid(4444)
                ),
                |x| x.amount.is_some_and(|a| a >= mid(4444)),
            ),
            self.q(
                "COUNT WHERE ratio <= 64444.5 OR NOT flag = TRUE WITH EPS 0.1".into(),
                |x| ratio(x, &|r| r <= 64444.5) || x.flag == Some(false),
            ),
            // The same query again, written otherwise: its recorded answer, from history.
            self.q(
                format!("count  where amount<{}  with eps 0.1", mid(4816)),
                |x| lt(x, mid(4816)),
            ),
            self.q(
                format!(
                    "COUNT WHERE amount < {} WITH EPS 0.1 PRIOR p=0.03",
                    mid(4816)
                ),
                |x| lt(x, mid(4816)),
            ),
        ]
    }

    /// The true counts that a leak would show unmistakably.
    fn distinctive_truths(&self) -> BTreeSet<u64> {
        self.queries
            .iter()
            .map(|q| q.truth)
            .filter(|&t| t >= 100 && !self.public_numbers.contains(&t))
            .collect()
    }

    fn path(&self, p: &Path) -> String {
        p.to_str().expect("a UTF-8 temporary path").to_string()
    }
}

// ============================================================ the script

/// A piece of script and how it must end.
struct Step {
    src: String,
    expect: Expect,
}

fn step(src: impl Into<String>, expect: Expect) -> Step {
    Step {
        src: src.into(),
        expect,
    }
}

/// Every statement and every reachable error, in one session, each step run on its own (a
/// script stops at its first error).
fn script(c: &Canary) -> Vec<Step> {
    use Expect::{Any, Err, Ok};
    let csv = c.path(&c.csv);
    let dir = c.path(c.dir.path());
    let city = &c.typed_city;
    let code = &c.typed_code;
    let q0 = &c.queries[0].text;
    let mut s = vec![
        // Nothing loaded yet.
        step("SHOW TABLES;", Ok),
        step(
            format!("COUNT WHERE city = '{city}' WITH EPS 0.1;"),
            Err("no table is in use"),
        ),
        step("DESCRIBE;", Err("no table is in use")),
        step("SHOW BUDGET;", Err("no table is in use")),
        step("SHOW HISTORY;", Err("no table is in use")),
        step("SET BUDGET 3;", Err("no table is in use")),
        step("USE canary;", Err("unknown table `canary`")),
        step(
            format!("LOAD '{dir}/missing.csv' AS canary;"),
            Err("no such file"),
        ),
        step(format!("LOAD '{dir}' AS canary;"), Err("cannot load")),
    ];
    s.push(step(format!("SET SEED {SEED}; -- before any noise"), Ok));
    for (i, (path, expect)) in c.broken.iter().enumerate() {
        s.push(step(
            format!("LOAD '{}' AS broken{i};", c.path(path)),
            *expect,
        ));
        // A failed load leaves no table behind; one that loaded is dropped by another name.
        if matches!(expect, Ok | Any) {
            s.push(step("SHOW TABLES;", Ok));
            s.push(step("COUNT WHERE amount < 5 WITH EPS 0.1;", Any));
        }
    }
    s.extend([
        step(
            format!("-- a comment naming {city}\nLOAD '{csv}' AS canary; SET BUDGET 40; DESCRIBE; DESCRIBE canary; SHOW TABLES; SHOW BUDGET; SHOW HISTORY;"),
            Ok,
        ),
        step(format!("LOAD '{csv}' AS canary;"), Err("a table named `canary` is already loaded")),
        step(format!("LOAD '{csv}' AS again; USE canary; SHOW TABLES;"), Ok),
    ]);
    for q in &c.queries {
        s.push(step(format!("{};", q.text), Ok));
    }
    s.extend([
        step(
            "SHOW HISTORY; SHOW BUDGET; USE again; SHOW BUDGET; DESCRIBE; USE canary;",
            Ok,
        ),
        step(
            format!("COUNT WHERE amount > {} WITH EPS 1000;", mid(77)),
            Err("budget exceeded on table `canary`"),
        ),
        step("SET BUDGET 0.5;", Err("cannot be set to 0.5")),
        step(
            "SET BUDGET 0;",
            Err("must be a finite number greater than 0"),
        ),
        step(
            "SET SEED 9;",
            Err("SET SEED must come before the first noisy answer"),
        ),
        step("SET SEED -1;", Err("a seed must be a whole number")),
        step("SET SEED 1.5;", Err("a seed must be a whole number")),
        step("USE nosuch;", Err("unknown table `nosuch`")),
        step("DESCRIBE nosuch;", Err("unknown table `nosuch`")),
        // Checking.
        step(
            "COUNT WHERE nosuchcol = 1 WITH EPS 0.1;",
            Err("unknown column `nosuchcol` in table `canary`"),
        ),
        step(
            "COUNT WHERE code = 5 WITH EPS 0.1;",
            Err("column `code` is text"),
        ),
        step(
            format!("COUNT WHERE amount = '{code}' WITH EPS 0.1;"),
            Err("column `amount` is integer"),
        ),
        step(
            format!("COUNT WHERE ratio IN ('qZxNOPE7', '{city}') WITH EPS 0.1;"),
            Err("column `ratio` is float"),
        ),
        step(
            "COUNT WHERE flag = 1 WITH EPS 0.1;",
            Err("column `flag` is boolean"),
        ),
        step(
            format!("COUNT WHERE city BETWEEN 1 AND '{city}' WITH EPS 0.1;"),
            Err("column `city` is text"),
        ),
        step(
            format!("COUNT WHERE amount < {} WITH EPS 0;", mid(5)),
            Err("epsilon must be a finite number greater than 0"),
        ),
        step(
            format!("COUNT WHERE amount < {} WITH EPS -0.5;", mid(5)),
            Err("epsilon must be a finite number greater than 0"),
        ),
        step(
            format!("COUNT WHERE amount < {} WITH EPS 1e400;", mid(5)),
            Err("epsilon must be a finite number greater than 0"),
        ),
        step(
            format!(
                "COUNT WHERE amount < {} WITH EPS 0.1000000000000000000000000000001;",
                mid(5)
            ),
            Err("at most 28 decimal places"),
        ),
        step(
            format!("COUNT WHERE city = '{city}' WITH EPS 0.1 PRIOR p=1.5;"),
            Err("must lie strictly between 0 and 1"),
        ),
        step(
            format!("COUNT WHERE city = '{city}' WITH EPS 0.1 PRIOR p=0;"),
            Err("must lie strictly between 0 and 1"),
        ),
        step(
            format!("COUNT WHERE city = '{city}' WITH EPS 0.1 PRIOR p=0.5 PRIOR p=0.5;"),
            Err("is given twice"),
        ),
        step(
            format!("COUNT WHERE city = '{city}' WITH EPS 0.1 MECHANISM cauchy;"),
            Err("unknown mechanism `cauchy`"),
        ),
        step(
            format!("COUNT WHERE city = '{city}' WITH EPS 0.1 MECHANISM staircase;"),
            Any,
        ),
        step(
            format!("COUNT WHERE city = '{city}' WITH EPS 0.1 MECHANISM geometric;"),
            Any,
        ),
        step("CHOOSE EPS WITHIN 20% AT 0.8 FOR 100;", Ok),
        step("CHOOSE EPS WITHIN 5 AT 95%;", Ok),
        step("choose eps within 12.5% at 80% for 640;", Ok),
        step(
            "CHOOSE EPS WITHIN 20% AT 0.8;",
            Err("a relative half-width needs an assumed count"),
        ),
        step(
            "CHOOSE EPS WITHIN 5 AT 0.95 FOR 100;",
            Err("FOR applies only to a relative half-width"),
        ),
        step(
            "CHOOSE EPS WITHIN 5 AT 1.5;",
            Err("must lie strictly between 0 and 1"),
        ),
        step(
            "CHOOSE EPS WITHIN 5 AT 100%;",
            Err("must lie strictly between 0 and 1"),
        ),
        step(
            "CHOOSE EPS WITHIN 0 AT 0.5;",
            Err("must be a finite number greater than 0"),
        ),
        step(
            "CHOOSE EPS WITHIN 20% AT 0.8 FOR -3;",
            Err("must be a finite number greater than 0"),
        ),
        step(
            "CHOOSE EPS WITHIN 1e-320 AT 0.5;",
            Err("which no query can use"),
        ),
        // Cubes, linear queries and inference from history.
        step(
            "2*COUNT WHERE flag = TRUE WITH EPS 0.1;",
            Err("needs a cube on table `canary`"),
        ),
        step("CUBE BY flag (TRUE, FALSE);", Ok),
        step("COUNT WHERE flag = TRUE WITH EPS 0.1;", Ok),
        step(
            "2*COUNT WHERE flag = TRUE - COUNT WHERE flag = FALSE WITH EPS 0.1;",
            Ok,
        ),
        step("ESTIMATE COUNT WHERE flag = TRUE;", Ok),
        step("PROB COUNT WHERE flag = TRUE > 10;", Ok),
        step("COUNT WHERE flag = TRUE WITHIN 1000 AT 0.9;", Ok),
        step("COUNT WHERE flag != FALSE WITHIN 0.5 AT 0.9;", Ok),
        step(
            "ESTIMATE COUNT WHERE NOT flag = TRUE AND NOT flag = FALSE;",
            Ok,
        ),
        step("ESTIMATE (0, 0, 0, 1);", Err("lacks evidence")),
        step(
            "COUNT WHERE amount < 5 - COUNT WHERE flag = TRUE WITH EPS 0.1;",
            Err("is not a dimension of the cube"),
        ),
        step(
            "COUNT WHERE flag = TRUE WITH EPS 1000;",
            Err("budget exceeded"),
        ),
        step("SHOW BUDGET; SHOW HISTORY; SHOW CUBE;", Ok),
        // A cube across the old one: the earlier releases are charged in full.
        step("CUBE BY flag (TRUE);", Ok),
        // Syntax.
        step(format!("FROB '{city}';"), Err("expected")),
        step(
            format!("COUNT WHERE city = '{city}' WITH;"),
            Err("expected"),
        ),
        step(
            format!("COUNT WHERE city = '{city}' WITH EPS 0.1 {code};"),
            Err("expected"),
        ),
        step(
            format!("COUNT city = '{city}' WITH EPS 0.1;"),
            Err("expected"),
        ),
        step(
            format!("COUNT WHERE city = '{city} WITH EPS 0.1;"),
            Err("this string has no closing quote"),
        ),
        step(
            format!("COUNT WHERE \"city = '{city}' WITH EPS 0.1;"),
            Err("this quoted name has no closing quote"),
        ),
        step(
            format!(
                "COUNT WHERE {}amount = 1{} WITH EPS 0.1;",
                "(".repeat(201),
                ")".repeat(201)
            ),
            Err("nested more than 200 levels deep"),
        ),
        step(
            format!(
                "COUNT WHERE {} WITH EPS 0.1;",
                (0..501)
                    .map(|k| format!("city = '{city}' OR amount = {}", mid(k)))
                    .collect::<Vec<_>>()
                    .join(" OR ")
            ),
            Err("the condition has more than"),
        ),
        step(
            format!(
                "COUNT WHERE amount IN ({}) WITH EPS 0.1;",
                (0..10_001)
                    .map(|k| mid(k % 7000).to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Err("the condition has more than"),
        ),
        step(
            format!(
                "COUNT WHERE\n  city = '{city}'\n  AND amount < {}\n  WITH EPS nope;",
                mid(3)
            ),
            Err("expected"),
        ),
        // Statements the design names that the language may not have yet.
        step(
            format!("EXPLAIN COUNT WHERE city = '{city}' WITH EPS 0.1;"),
            Any,
        ),
        step(format!("ESTIMATE {q0};"), Any),
        step("CUBE 4;", Any),
        step("OBSERVE (1,1,0,0) = 30.8 WITH EPS 0.05;", Any),
        step("ESTIMATE (1,0,1,0);", Any),
        step("PROB (1,0,1,0) > 0;", Any),
        step("SIMULATE N 100 P 0.3 EPS (0.05, 0.1) RUNS 200;", Any),
        step("OUT OF RANGE N 100 EPS 0.1 AT 30;", Any),
        step("COMPARE NOISE EPS (0.1, 1) SENSITIVITY 1;", Any),
        step(
            format!("COUNT WHERE amount < {} WITHIN 10 AT 0.95;", mid(4816)),
            Any,
        ),
        // Other readings of the same bytes: one column named by the header line, with a
        // warning that names it, or refused under a cube declared over the first reading.
        step(
            format!("LOAD '{csv}' AS semicolons DELIMITER ';'; DESCRIBE;"),
            Any,
        ),
        step(
            format!("LOAD '{csv}' AS pipes DELIMITER '|' DECIMAL ','; DESCRIBE;"),
            Any,
        ),
        step(
            format!("LOAD '{csv}' AS commas DECIMAL ',';"),
            Err("needs another DELIMITER"),
        ),
        step("USE canary;", Ok),
        // After everything: what is left to see.
        step(
            "SHOW TABLES; SHOW BUDGET; SHOW HISTORY; DESCRIBE again;",
            Ok,
        ),
    ]);
    s
}

// ============================================================ scanning outputs

/// Keys of JSON objects that hold an echo of the analyst's statement.
const ECHO_KEYS: &[&str] = &["statement", "key"];

/// Numbers standing alone: maximal runs of digits and dots with no letter, digit or `_` on
/// either side (so the digits inside a hex hash or a word do not count), trailing dots dropped.
fn numbers(text: &str) -> Vec<&str> {
    let b = text.as_bytes();
    let is_num = |c: u8| c.is_ascii_digit() || c == b'.';
    let is_word = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80;
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !is_num(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && is_num(b[i]) {
            i += 1;
        }
        let before_ok = start == 0 || !is_word(b[start - 1]);
        let after_ok = i == b.len() || !is_word(b[i]);
        let run = text[start..i].trim_end_matches('.');
        if before_ok && after_ok && run.bytes().any(|c| c.is_ascii_digit()) {
            out.push(run);
        }
    }
    out
}

/// Where a piece of output came from, and how to read it.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// comfy-table text and diagnostics.
    Table,
    /// JSON lines.
    Json,
    /// A file of unknown shape: statements may be anywhere in it.
    Raw,
}

/// What the scan knows: tokens, typed literals, ranges and true counts.
struct Scanner<'a> {
    c: &'a Canary,
    /// `qZx` words the statements type (the analyst's own literals).
    typed_words: HashSet<String>,
    /// Numbers the statements type.
    typed_numbers: HashSet<String>,
    /// All the source text run, for checking quoted source lines.
    sources: String,
    truths: BTreeSet<u64>,
    /// Temporary paths, replaced by placeholders before scanning.
    paths: Vec<(String, &'static str)>,
    violations: Vec<String>,
}

impl<'a> Scanner<'a> {
    fn new(c: &'a Canary, sources: &[String], extra_paths: &[(&Path, &'static str)]) -> Self {
        let all = sources.join("\n");
        let typed_words = words(&all)
            .filter(|w| w.contains(MARKER))
            .map(str::to_string)
            .collect();
        let typed_numbers: HashSet<String> =
            numbers(&all).into_iter().map(str::to_string).collect();
        let truths = c.distinctive_truths();
        // A true count must not be a number that a run prints for another reason.
        for t in &truths {
            assert!(
                !typed_numbers.contains(&t.to_string()),
                "the test types the number {t}, which is also a true count: change the query"
            );
        }
        let mut paths = Vec::new();
        for (p, name) in [(c.dir.path(), "<DATA>")]
            .into_iter()
            .chain(extra_paths.iter().copied())
        {
            paths.push((c.path(p), name));
            if let Ok(canon) = std::fs::canonicalize(p) {
                paths.push((c.path(&canon), name));
            }
        }
        paths.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
        let mut sources = all;
        for (p, name) in &paths {
            sources = sources.replace(p.as_str(), name);
        }
        Self {
            c,
            typed_words,
            typed_numbers,
            sources,
            truths,
            paths,
            violations: Vec::new(),
        }
    }

    fn fail(&mut self, label: &str, what: String, text: &str) {
        let shown: String = text.chars().take(400).collect();
        self.violations
            .push(format!("{label}: {what}\n    in: {shown}"));
    }

    fn normalize(&self, text: &str) -> String {
        let mut t = text.to_string();
        for (p, name) in &self.paths {
            t = t.replace(p.as_str(), name);
        }
        t
    }

    /// Scans one output or file.
    fn scan(&mut self, label: &str, text: &str, kind: Kind) {
        let text = self.normalize(text);
        let (outside, echoes) = match kind {
            Kind::Table => self.split_table(&text),
            Kind::Json => self.split_json(label, &text),
            Kind::Raw => (String::new(), vec![text.clone()]),
        };
        self.scan_outside(label, &outside);
        for e in &echoes {
            self.scan_echo(label, e);
        }
        self.scan_truths(label, &text, kind != Kind::Table);
    }

    /// Text outside statement echoes: no token at all, no number in a data column's range.
    fn scan_outside(&mut self, label: &str, text: &str) {
        for line in text.lines() {
            if line.contains(MARKER) {
                self.fail(
                    label,
                    format!("a `{MARKER}` token outside a statement echo"),
                    line,
                );
            }
            for n in numbers(line) {
                // A number the analyst typed, quoted back by a message (`after `7456422``).
                if self.typed_numbers.contains(n) && !self.c.data_numbers.contains(n) {
                    continue;
                }
                let Ok(x) = n.parse::<f64>() else { continue };
                let amount = (AMOUNT_BASE as f64..=AMOUNT_MAX as f64).contains(&x);
                let ratio = (RATIO_BASE as f64..(RATIO_BASE + N) as f64).contains(&x);
                if amount || ratio || self.c.data_numbers.contains(n) {
                    self.fail(
                        label,
                        format!("the number {n} lies in a data column's range"),
                        line,
                    );
                }
            }
        }
    }

    /// An echo of the analyst's statement: only what the analyst typed.
    fn scan_echo(&mut self, label: &str, text: &str) {
        for w in words(text) {
            if !w.contains(MARKER) || self.typed_words.contains(w) {
                continue;
            }
            // A statement cut short for display ends in part of a typed word.
            let typed_prefix = self.typed_words.iter().any(|t| t.starts_with(w));
            if self.c.data_words.contains(w) || !typed_prefix {
                self.fail(
                    label,
                    format!("the data token {w} in a statement echo"),
                    text,
                );
            }
        }
        for n in numbers(text) {
            if self.c.data_numbers.contains(n) && !self.typed_numbers.contains(n) {
                self.fail(
                    label,
                    format!("the data value {n} in a statement echo"),
                    text,
                );
            }
        }
    }

    /// No true count as a standalone integer; in JSON (full precision) not as `4817.0` either.
    fn scan_truths(&mut self, label: &str, text: &str, exact_floats: bool) {
        let truths = self.truths.clone();
        for n in numbers(text) {
            let as_int = n.parse::<u64>().ok();
            let as_float = n
                .contains('.')
                .then(|| n.parse::<f64>().ok())
                .flatten()
                .filter(|_| exact_floats);
            for &t in &truths {
                if as_int == Some(t) || as_float == Some(t as f64) {
                    self.fail(label, format!("the true count {t} appears as {n}"), text);
                }
            }
        }
    }

    /// Splits comfy-table text and diagnostics into text outside echoes and the echoes.
    fn split_table(&self, text: &str) -> (String, Vec<String>) {
        let mut outside = String::new();
        let mut echoes = Vec::new();
        for line in text.lines() {
            // The header of a count: `STATEMENT -- table NAME, n = N`.
            if let (true, Some(at)) = (line.starts_with("COUNT "), line.rfind(" -- table ")) {
                echoes.push(line[..at].to_string());
                outside.push_str(&line[at..]);
                outside.push('\n');
                continue;
            }
            // The header of an explanation: the statement explained, as typed.
            if line.starts_with("EXPLAIN ") && self.sources.contains(line) {
                echoes.push(line.to_string());
                continue;
            }
            // The source line under a diagnostic: `12 | source`, maybe cut to a window (`…`).
            if let Some((gutter, rest)) = line.split_once(" | ") {
                let g = gutter.trim_start();
                let from_source = rest
                    .split('…')
                    .all(|piece| piece.is_empty() || self.sources.contains(piece));
                if !g.is_empty() && g.bytes().all(|b| b.is_ascii_digit()) && from_source {
                    echoes.push(rest.to_string());
                    continue;
                }
            }
            // A table row: the statement cells of SHOW BUDGET and SHOW HISTORY.
            if line.contains('┆') {
                for cell in line.split(['┆', '│']) {
                    if cell.trim().starts_with("COUNT ") {
                        echoes.push(cell.to_string());
                    } else {
                        outside.push_str(cell);
                        outside.push(' ');
                    }
                }
                outside.push('\n');
                continue;
            }
            outside.push_str(line);
            outside.push('\n');
        }
        (outside, echoes)
    }

    /// Splits JSON lines into the echo fields and everything else.
    fn split_json(&mut self, label: &str, text: &str) -> (String, Vec<String>) {
        let mut outside = String::new();
        let mut echoes = Vec::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            match serde_json::from_str::<Value>(line) {
                Ok(mut v) => {
                    take_echoes(&mut v, &mut echoes);
                    outside.push_str(&v.to_string());
                    outside.push('\n');
                }
                Err(_) => {
                    self.fail(label, "a line of JSON output is not JSON".into(), line);
                    outside.push_str(line);
                    outside.push('\n');
                }
            }
        }
        (outside, echoes)
    }
}

/// Moves the echo fields of a JSON value out into `echoes`.
fn take_echoes(v: &mut Value, echoes: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, x) in map.iter_mut() {
                if ECHO_KEYS.contains(&k.as_str()) && x.is_string() {
                    echoes.push(x.as_str().unwrap_or_default().to_string());
                    *x = Value::Null;
                } else {
                    take_echoes(x, echoes);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|x| take_echoes(x, echoes)),
        _ => {}
    }
}

/// Every file under `dir`, recursively, with its bytes.
///
/// This is where persistent state is searched: the ledgers of the state directory
/// (`--state-dir`, `DPQ_STATE_DIR`) and the user's data directory (the prompt's history).
fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else if let Ok(bytes) = std::fs::read(&p) {
            out.push((p, bytes));
        }
    }
    out
}

/// Scans every file of a state or home directory: JSON lines as JSON (statement echoes apart),
/// anything else as raw text that may hold the analyst's statements.
fn scan_dir(s: &mut Scanner, label: &str, dir: &Path) -> usize {
    let files = files_under(dir);
    for (path, bytes) in &files {
        let text = String::from_utf8_lossy(bytes);
        let name = format!("{label} file {}", path.display());
        let all_json = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .all(|l| serde_json::from_str::<Value>(l).is_ok());
        s.scan(&name, &text, if all_json { Kind::Json } else { Kind::Raw });
    }
    files.len()
}

// ============================================================ running

/// One piece of output of a library run.
struct Out {
    label: String,
    text: String,
    is_error: bool,
}

/// Runs the script through `driver::run_source` in `format`, one step at a time, in one
/// session whose ledger lives in `state`; checks that each step ends as expected.
fn run_library(steps: &[Step], format: Format, state: &Path) -> Vec<Out> {
    let mut session = Session::with_store(Randomness::Os, Store::dir(state.to_path_buf()));
    let mut outs = Vec::new();
    for (i, st) in steps.iter().enumerate() {
        let label = format!("library {format:?} step {i}");
        let mut got = Vec::new();
        let ok = run_source(&mut session, "canary.dpq", &st.src, format, &mut |e| {
            got.push(e)
        });
        let errors: Vec<String> = got
            .iter()
            .filter_map(|e| match e {
                Emitted::Error(t) => Some(t.clone()),
                Emitted::Result(_) => None,
            })
            .collect();
        let short: String = st.src.chars().take(200).collect();
        match st.expect {
            Expect::Ok => assert!(ok, "{label} should run: {short}\n{errors:?}"),
            Expect::Err(fragment) => {
                assert!(!ok, "{label} should fail: {short}");
                assert!(
                    errors.iter().any(|t| t.contains(fragment)),
                    "{label} should fail with `{fragment}`: {short}\n{errors:?}"
                );
            }
            Expect::Any => {}
        }
        outs.extend(got.into_iter().map(|e| match e {
            Emitted::Result(text) => Out {
                label: label.clone(),
                text,
                is_error: false,
            },
            Emitted::Error(text) => Out {
                label: label.clone(),
                text,
                is_error: true,
            },
        }));
    }
    outs
}

/// Every count result of a JSON run: its credible interval is recomputed from the released noisy
/// answer alone, so that an integer there is post-processing, never the true count.
fn check_posteriors(outs: &[Out]) -> usize {
    let mut checked = 0;
    for o in outs.iter().filter(|o| !o.is_error) {
        let v: Value = serde_json::from_str(&o.text).expect("a JSON result parses");
        if v["kind"] != "count" || v["prior"].is_null() {
            continue;
        }
        let n = v["n"].as_u64().expect("n");
        let p = Probability::new(v["prior"].as_f64().expect("prior")).expect("a valid prior");
        let eps = Epsilon::new(v["eps"].as_f64().expect("eps")).expect("a valid epsilon");
        let noisy = v["noisy"].as_f64().expect("noisy");
        let level = Probability::new(0.95).expect("0.95 is a probability");
        let post = bayes::posterior(n, p, eps, noisy, level);
        let shown = &v["credible95"];
        assert_eq!(
            (shown[0].as_u64(), shown[1].as_u64()),
            (Some(post.lower), Some(post.upper)),
            "{}: the credible interval is not the posterior's of the noisy answer: {}",
            o.label,
            o.text
        );
        let bayes = v["bayes"].as_f64().expect("bayes");
        assert!(
            (bayes - post.mean).abs() <= 1e-9 * post.mean.abs().max(1.0),
            "{}: the Bayes estimate is not the posterior mean of the noisy answer: {}",
            o.label,
            o.text
        );
        checked += 1;
    }
    checked
}

fn report(s: &Scanner) {
    assert!(
        s.violations.is_empty(),
        "{} leak(s):\n{}",
        s.violations.len(),
        s.violations.join("\n")
    );
}

#[test]
fn the_design_of_the_canary_holds() {
    let c = Canary::new();
    let truths = c.distinctive_truths();
    assert!(
        truths.len() >= 20,
        "too few distinctive true counts: {truths:?}"
    );
    // Every query whose true count is not distinctive is one the test means that way (a typed
    // token matches one row).
    for q in &c.queries {
        assert!(
            truths.contains(&q.truth) || q.truth <= 1,
            "{} has the true count {}, which is not distinctive",
            q.text,
            q.truth
        );
    }
    // The typed tokens are data tokens, and are few.
    for t in [&c.typed_code, &c.typed_city] {
        assert!(c.data_words.contains(t.as_str()));
    }
    assert!(c.data_words.len() > 2 * N);
    assert!(c.data_numbers.contains(&c.typed_amount.to_string()));
    assert!(!c.data_numbers.contains(&mid(4816).to_string()));
}

#[test]
fn no_token_or_true_count_leaks_through_the_library() {
    let c = Canary::new();
    let steps = script(&c);
    let sources: Vec<String> = steps.iter().map(|s| s.src.clone()).collect();
    for format in [Format::Table, Format::Json] {
        let state = tempfile::tempdir().expect("state dir");
        let outs = run_library(&steps, format, state.path());
        let mut s = Scanner::new(&c, &sources, &[(state.path(), "<STATE>")]);
        let kind = match format {
            Format::Table => Kind::Table,
            Format::Json => Kind::Json,
        };
        for o in &outs {
            s.scan(
                &format!("{} json={}", o.label, format == Format::Json),
                &o.text,
                kind,
            );
        }
        if format == Format::Json {
            let checked = check_posteriors(&outs);
            assert!(checked >= 5, "only {checked} count results with a prior");
        }
        // The ledger of the state directory: statements and noisy answers only.
        let files = scan_dir(&mut s, &format!("state {format:?}"), state.path());
        assert!(
            files >= 1,
            "the ledger was written under the state directory"
        );
        report(&s);
    }
}

// ============================================================ the binary

struct Bin {
    home: tempfile::TempDir,
    state: tempfile::TempDir,
}

impl Bin {
    fn new() -> Self {
        Self {
            home: tempfile::tempdir().expect("home dir"),
            state: tempfile::tempdir().expect("state dir"),
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_dpq"));
        cmd.args(args)
            .env("DPQ_STATE_DIR", self.state.path())
            .env("HOME", self.home.path())
            .env("XDG_DATA_HOME", self.home.path().join("data"))
            .env_remove("DPQ_SEED");
        cmd
    }

    fn run(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut cmd = self.command(args);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("the dpq binary starts");
        {
            let mut input = child.stdin.take().expect("stdin");
            if let Some(text) = stdin {
                input.write_all(text.as_bytes()).expect("write stdin");
            }
        }
        child.wait_with_output().expect("the dpq binary runs")
    }
}

#[test]
fn no_token_or_true_count_leaks_through_the_binary() {
    let c = Canary::new();
    let bin = Bin::new();
    let csv = c.path(&c.csv);
    let (q, city, code) = (&c.queries, &c.typed_city, &c.typed_code);
    let session = format!(
        "LOAD '{csv}' AS c; SET BUDGET 3; {}; {}; {}; {}; {}; SHOW HISTORY; SHOW BUDGET; DESCRIBE; SHOW TABLES; \
         CHOOSE EPS WITHIN 10% AT 0.9 FOR 250;",
        q[0].text, q[11].text, q[24].text, q[0].text, q[27].text
    );
    let seed = SEED.to_string();
    // Seeded runs keep a state directory of their own: a seeded release exposes the data in
    // its ledger, and the unseeded runs here must find their budget intact.
    let seeded = bin.state.path().join("seeded").display().to_string();
    // (arguments, standard input, expected exit code)
    let mut runs: Vec<(Vec<String>, Option<String>, i32)> = Vec::new();
    for format in ["table", "json"] {
        let args = |rest: &[&str]| {
            let mut a = vec!["--format".to_string(), format.to_string()];
            a.extend(rest.iter().map(|s| s.to_string()));
            a
        };
        runs.push((
            args(&["--state-dir", &seeded, "--seed", &seed, "-c", &session]),
            None,
            0,
        ));
        // Unseeded: private noise.
        runs.push((
            args(&[
                "-c",
                &format!("LOAD '{csv}'; {}; {}; SHOW HISTORY;", q[7].text, q[16].text),
            ]),
            None,
            0,
        ));
        runs.push((
            args(&[
                "-c",
                &format!("LOAD '{csv}' AS c; COUNT WHERE amount = '{code}' WITH EPS 0.1;"),
            ]),
            None,
            1,
        ));
        runs.push((
            args(&[
                "-c",
                &format!(
                    "LOAD '{csv}' AS c; {}; COUNT WHERE amount > {} WITH EPS 5;",
                    q[3].text,
                    mid(77)
                ),
            ]),
            None,
            1,
        ));
        runs.push((
            args(&[
                "-c",
                &format!("LOAD '{csv}' AS c; COUNT WHERE city = '{city} WITH EPS 0.1;"),
            ]),
            None,
            1,
        ));
        for (path, expect) in &c.broken {
            let code = match expect {
                Expect::Ok => 0,
                Expect::Err(_) => 1,
                Expect::Any => -1,
            };
            runs.push((
                args(&["-c", &format!("LOAD '{}' AS b; SHOW TABLES;", c.path(path))]),
                None,
                code,
            ));
        }
        // A script file, and the prompt reading a pipe (it carries on after an error).
        let script = c.dir.path().join(format!("session-{format}.dpq"));
        std::fs::write(
            &script,
            format!("{session}\nCOUNT WHERE nosuchcol = 1 WITH EPS 0.1;\n"),
        )
        .expect("write script");
        runs.push((
            args(&[
                "--state-dir",
                &seeded,
                "--seed",
                &seed,
                "run",
                &c.path(&script),
            ]),
            None,
            1,
        ));
        let piped = format!(
            "LOAD '{csv}' AS c;\n{};\nCOUNT WHERE flag = '{city}' WITH EPS 0.1;\n{};\nSHOW HISTORY;\n",
            q[20].text, q[21].text
        );
        runs.push((
            args(&["--state-dir", &seeded, "--seed", &seed]),
            Some(piped),
            1,
        ));
    }
    let mut sources: Vec<String> = runs
        .iter()
        .flat_map(|(a, i, _)| a.iter().cloned().chain(i.clone()))
        .collect();
    sources.push(session.clone());
    let mut s = Scanner::new(
        &c,
        &sources,
        &[(bin.state.path(), "<STATE>"), (bin.home.path(), "<HOME>")],
    );
    for (i, (args, stdin, code)) in runs.iter().enumerate() {
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = bin.run(&argv, stdin.as_deref());
        let json = args[1] == "json";
        let label = format!(
            "binary run {i} ({} ...) json={json}",
            args.join(" ").chars().take(80).collect::<String>()
        );
        if *code >= 0 {
            assert_eq!(
                o.status.code(),
                Some(*code),
                "{label}\nstdout: {}\nstderr: {}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
        }
        let kind = if json { Kind::Json } else { Kind::Table };
        s.scan(
            &format!("{label} stdout"),
            &String::from_utf8_lossy(&o.stdout),
            kind,
        );
        // Standard error holds diagnostics (table form) and nothing in JSON form.
        s.scan(
            &format!("{label} stderr"),
            &String::from_utf8_lossy(&o.stderr),
            Kind::Table,
        );
    }
    let ledgers = scan_dir(&mut s, "state", bin.state.path());
    assert!(
        ledgers >= 1,
        "the binary wrote its ledgers under DPQ_STATE_DIR"
    );
    scan_dir(&mut s, "home", bin.home.path());
    report(&s);
}

#[test]
fn the_scanner_catches_every_kind_of_leak() {
    let c = Canary::new();
    let typed = "COUNT WHERE city = 'qZxNOPE7' AND amount < 7456422 WITH EPS 0.1";
    let mut s = Scanner::new(&c, &[typed.to_string()], &[]);
    let untyped = c.rows[5].code.clone().expect("row 5 has a code");
    let truth = *c.distinctive_truths().iter().next().expect("a true count");
    let amount = c.rows[7].amount.expect("row 7 has an amount");
    let leaks: Vec<(String, Kind)> = vec![
        (format!("│ noisy count ┆ {untyped} │"), Kind::Table),
        (
            format!("COUNT WHERE city = '{untyped}' -- table canary, n = 7919"),
            Kind::Table,
        ),
        (
            format!("│ 1 ┆ COUNT WHERE code = '{untyped}' ┆ 0.1 │"),
            Kind::Table,
        ),
        ("note: qZxNOPE7 outside an echo".to_string(), Kind::Table),
        (format!("the largest amount is {amount}"), Kind::Table),
        (
            "the smallest ratio is about 60001.5".to_string(),
            Kind::Table,
        ),
        (format!("-c:1:1: {amount} is not allowed"), Kind::Table),
        (format!("true count {truth}."), Kind::Table),
        (format!("│ noisy count ┆ {truth} │"), Kind::Table),
        (
            format!("{{\"kind\":\"count\",\"noisy\":{truth}.0}}"),
            Kind::Json,
        ),
        (
            format!("{{\"kind\":\"count\",\"credible95\":[{truth}, 8000]}}"),
            Kind::Json,
        ),
        (
            format!("{{\"statement\":\"COUNT WHERE code = '{untyped}'\"}}"),
            Kind::Json,
        ),
        (
            "{\"kind\":\"error\",\"message\":\"unknown qZxNOPE7\"}".to_string(),
            Kind::Json,
        ),
        ("not json".to_string(), Kind::Json),
        (format!("{{\"spend\":\"{untyped}\"}}"), Kind::Raw),
    ];
    for (i, (text, kind)) in leaks.iter().enumerate() {
        let before = s.violations.len();
        s.scan(&format!("leak {i}"), text, *kind);
        assert!(
            s.violations.len() > before,
            "leak {i} was not caught: {text}"
        );
    }
    s.violations.clear();
    let clean: Vec<(String, Kind)> = vec![
        (format!("{typed} -- table canary, n = 7919"), Kind::Table),
        (format!("│ 1 ┆ {typed} ┆ 0.1 │"), Kind::Table),
        (format!("1 | {typed}"), Kind::Table),
        (format!("│ noisy count ┆ {truth}.37 │"), Kind::Table),
        (
            "-c:1:33: expected WITH, AND or OR after `7456422`".to_string(),
            Kind::Table,
        ),
        (
            format!("{{\"statement\":\"{typed}\",\"noisy\":{truth}.372,\"time\":1795269180}}"),
            Kind::Json,
        ),
        (
            format!("{{\"sum\":\"ab{truth}cd\",\"key\":\"{typed}\"}}"),
            Kind::Json,
        ),
    ];
    for (i, (text, kind)) in clean.iter().enumerate() {
        s.scan(&format!("clean {i}"), text, *kind);
    }
    report(&s);
}
