//! The data dictionary (`docs/data.md`) says what the bundled files hold, and its PostgreSQL
//! recipe works: the dictionary's value sets, types, ranges and missing values are computed
//! here from the files and must be what the page says; `people.parquet` holds the rows of
//! `people.csv`; and the page's `sql` block, run with `psql` against a real server, makes a
//! table that dpq loads as the page shows and that gives the CSV file's exact counts.
//!
//! The server is named by `DPQ_TEST_POSTGRES` (see `tests/data/sources.rs`); without it, or
//! without `psql`, the PostgreSQL side is left out with a note, unless `DPQ_REQUIRE_POSTGRES`
//! is set, as in CI.

use crate::common;
use common::postgres_server;
use common::transcript::{normalise, run, session};
use dpq::data::{
    load_csv, open_parquet, open_postgres, CmpOp, LoadOptions, Predicate, Source, Value,
};
use dpq::output::Format;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The page this file checks.
const PAGE: &str = "docs/data.md";

/// The database the recipe is run in, made afresh by each run.
const DATABASE: &str = "dpq_data_import";

/// The page's text.
fn page() -> String {
    std::fs::read_to_string(PAGE).expect("the data dictionary")
}

/// The bodies of the fenced blocks of `text` whose info string is `lang`, each with the line
/// after it when it is a `text` block (the transcript), in order.
fn fenced(text: &str, lang: &str) -> Vec<(String, Option<String>)> {
    let mut blocks: Vec<(String, String)> = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in text.lines() {
        match &mut open {
            None if line.trim_start().starts_with("```") => {
                open = Some((
                    line.trim().trim_start_matches('`').trim().to_string(),
                    String::new(),
                ));
            }
            None => {
                if !line.trim().is_empty() {
                    // Prose between two blocks: the second is no transcript of the first.
                    blocks.push(("prose".into(), String::new()));
                }
            }
            Some(_) if line.trim() == "```" => blocks.push(open.take().expect("a block")),
            Some((_, body)) => {
                body.push_str(line);
                body.push('\n');
            }
        }
    }
    let mut out = Vec::new();
    for (i, (info, body)) in blocks.iter().enumerate() {
        if info == lang {
            let next = blocks
                .get(i + 1)
                .filter(|(l, _)| l == "text")
                .map(|(_, b)| b.clone());
            out.push((body.clone(), next));
        }
    }
    out
}

/// The section of the page (from its `## ` heading to the next) whose heading names `file`.
fn section<'a>(text: &'a str, file: &str) -> &'a str {
    let start = text
        .match_indices("\n## ")
        .map(|(i, _)| i + 1)
        .find(|&i| text[i..].lines().next().is_some_and(|h| h.contains(file)))
        .unwrap_or_else(|| panic!("no section of the page names {file}"));
    let end = text[start + 3..]
        .find("\n## ")
        .map_or(text.len(), |i| start + 3 + i);
    &text[start..end]
}

/// The cells of the rows of the tables of `text` whose first cell is `` `name` ``: the
/// dictionary's line for a column.
fn rows_for(text: &str, name: &str) -> Vec<Vec<String>> {
    let first = format!("`{name}`");
    text.lines()
        .filter(|l| l.starts_with('|'))
        .map(|l| {
            l.trim()
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect::<Vec<_>>()
        })
        .filter(|cells| cells.first() == Some(&first))
        .collect()
}

/// The code spans of a cell.
fn spans(cell: &str) -> BTreeSet<String> {
    cell.split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, s)| s.to_string())
        .collect()
}

/// A CSV file's header and the columns of its rows, as text.
fn read(path: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut reader = csv::Reader::from_path(path).expect("a bundled file");
    let header: Vec<String> = reader
        .headers()
        .expect("a header")
        .iter()
        .map(str::to_string)
        .collect();
    let mut columns = vec![Vec::new(); header.len()];
    for record in reader.records() {
        let record = record.expect("a record");
        for (i, cell) in record.iter().enumerate() {
            columns[i].push(cell.to_string());
        }
    }
    (header, columns)
}

/// The type dpq infers for a column of cells (`NA` and empty cells are missing).
fn inferred(cells: &[String]) -> &'static str {
    let present: Vec<&String> = cells
        .iter()
        .filter(|c| !c.is_empty() && *c != "NA")
        .collect();
    if present.iter().all(|c| c.parse::<i64>().is_ok()) {
        "integer"
    } else if present.iter().all(|c| c.parse::<f64>().is_ok()) {
        "float"
    } else if present
        .iter()
        .all(|c| c.eq_ignore_ascii_case("true") || c.eq_ignore_ascii_case("false"))
    {
        "boolean"
    } else {
        "text"
    }
}

/// A number as the page writes it: thousands separated by commas, one decimal for floats.
fn shown(x: f64, float: bool) -> String {
    if float {
        return format!("{x:.1}");
    }
    let digits = format!("{}", x as i64);
    if digits.len() <= 3 {
        return digits;
    }
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Checks the dictionary's line for each column of `files` (which share their columns):
/// its type, the value set of text and boolean columns, the least and greatest value of
/// numbers (over all files), and that a column the page says is never missing never is.
fn check_columns(text: &str, files: &[&str], failures: &mut Vec<String>) {
    let name = files[0].rsplit('/').next().expect("a file name");
    let text = section(text, &format!("`{name}`"));
    let read: Vec<_> = files.iter().map(|f| read(f)).collect();
    let header = &read[0].0;
    for (c, name) in header.iter().enumerate() {
        let rows = rows_for(text, name);
        let Some(row) = rows.iter().find(|r| r.len() >= 4) else {
            failures.push(format!("{name}: no line in the dictionary"));
            continue;
        };
        let cells: Vec<String> = read.iter().flat_map(|(_, cols)| cols[c].clone()).collect();
        let kind = inferred(&cells);
        if row[1] != kind {
            failures.push(format!(
                "{name}: the page says {}, dpq infers {kind}",
                row[1]
            ));
        }
        let present: Vec<&String> = cells
            .iter()
            .filter(|c| !c.is_empty() && *c != "NA")
            .collect();
        if matches!(kind, "text" | "boolean") {
            let values: BTreeSet<String> = present.iter().map(|s| s.to_string()).collect();
            if spans(&row[2]) != values {
                failures.push(format!(
                    "{name}: the page lists {:?}, the files hold {values:?}",
                    spans(&row[2])
                ));
            }
        } else {
            let numbers: Vec<f64> = present
                .iter()
                .map(|s| s.parse().expect("a number"))
                .collect();
            let (lo, hi) = numbers
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
                    (a.min(*x), b.max(*x))
                });
            for bound in [lo, hi] {
                let written = shown(bound, kind == "float");
                if !row[2].contains(&written) {
                    failures.push(format!(
                        "{name}: the page does not give the bound {written}: {}",
                        row[2]
                    ));
                }
            }
        }
        let missing = cells.len() - present.len();
        if (row[3] == "never") != (missing == 0) {
            failures.push(format!(
                "{name}: {missing} missing, and the page says {}",
                row[3]
            ));
        }
    }
}

#[test]
fn the_dictionary_describes_the_bundled_files() {
    let text = page();
    let mut failures = Vec::new();
    check_columns(
        &text,
        &[
            "examples/data/people.csv",
            "examples/data/survey.csv",
            "examples/data/census.csv",
            "examples/data/incomes.csv",
        ],
        &mut failures,
    );
    check_columns(&text, &["examples/data/visits.csv"], &mut failures);
    check_columns(&text, &["examples/attack/class.csv"], &mut failures);

    // Each file's rows, and people.csv's missing values, as the page counts them.
    for (file, rows) in [
        ("people.csv", "10,000"),
        ("people.parquet", "10,000"),
        ("survey.csv", "5,000"),
        ("census.csv", "4,000"),
        ("incomes.csv", "3,000"),
        ("visits.csv", "13,266"),
    ] {
        let line = format!("| `{file}` | {rows} |");
        if !text.contains(&line) {
            failures.push(format!("no line `{line}`"));
        }
    }
    for (file, rows) in [
        ("people.csv", 10_000),
        ("survey.csv", 5_000),
        ("census.csv", 4_000),
        ("incomes.csv", 3_000),
        ("visits.csv", 13_266),
    ] {
        let (_, columns) = read(&format!("examples/data/{file}"));
        assert_eq!(columns[0].len(), rows, "{file}");
    }
    let (_, people) = read("examples/data/people.csv");
    let count = |c: usize, v: &str| people[c].iter().filter(|s| *s == v).count();
    let sentence = format!(
        "In `people.csv`, {} ages are missing ({} written `NA`, {} empty) and {} incomes (all\nempty)",
        count(1, "NA") + count(1, ""),
        count(1, "NA"),
        count(1, ""),
        count(3, "")
    );
    if !text.contains(&sentence) {
        failures.push(format!("the page does not say: {sentence}"));
    }
    assert_eq!(count(3, "NA"), 0, "incomes are missing as empty cells only");

    // The visits: patients, and the rows of the busiest.
    let (_, visits) = read("examples/data/visits.csv");
    let mut per_patient = std::collections::HashMap::new();
    for p in &visits[0] {
        *per_patient.entry(p.clone()).or_insert(0usize) += 1;
    }
    let busiest = per_patient.values().max().copied().unwrap_or(0);
    let heavy: Vec<usize> = per_patient.values().copied().filter(|&v| v > 6).collect();
    let least_heavy = heavy.iter().min().copied().unwrap_or(0);
    let said = format!(
        "{} patients: most visit one to six times, and {} of them (chronic care) between {least_heavy} and\n{busiest} times",
        shown(per_patient.len() as f64, false),
        heavy.len()
    );
    if !text.contains(&said) {
        failures.push(format!("the page does not say: {said}"));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Conditions on every column of the people files, with their negations (which leave out
/// the missing values).
fn conditions(source: &Source) -> Vec<Predicate> {
    let col = |name: &str| {
        source
            .column_index(name)
            .expect("a column of the people files")
    };
    let compare = |name: &str, op: CmpOp, value: Value| Predicate::Compare {
        column: col(name),
        op,
        value,
    };
    let base = vec![
        compare("id", CmpOp::Le, Value::Number(5000.0)),
        compare("age", CmpOp::Le, Value::Number(30.0)),
        compare("income", CmpOp::Gt, Value::Number(50000.0)),
        compare("sex", CmpOp::Eq, Value::Text("F".into())),
        Predicate::In {
            column: col("region"),
            values: vec![Value::Text("North".into()), Value::Text("Centre".into())],
        },
        compare("education", CmpOp::Eq, Value::Text("none".into())),
        compare("employed", CmpOp::Eq, Value::Bool(true)),
        compare("height_cm", CmpOp::Gt, Value::Number(170.5)),
        compare("smoker", CmpOp::Eq, Value::Bool(true)),
    ];
    base.iter()
        .cloned()
        .chain(base.iter().map(|p| Predicate::Not(Box::new(p.clone()))))
        .collect()
}

/// `other` has `csv`'s schema, row count and exact counts.
fn same_rows(csv: &Source, other: &Source) {
    assert_eq!(other.schema(), csv.schema(), "{}", other.kind());
    assert_eq!(other.n_rows(), csv.n_rows(), "{}", other.kind());
    for (a, b) in conditions(csv).iter().zip(conditions(other).iter()) {
        assert_eq!(
            other.count(b).expect("a count"),
            csv.count(a).expect("a count"),
            "{} {b:?}",
            other.kind()
        );
    }
}

fn people_csv() -> Source {
    Source::Memory(
        load_csv(
            Path::new("examples/data/people.csv"),
            &LoadOptions::default(),
        )
        .expect("people.csv loads")
        .table,
    )
}

#[test]
fn the_parquet_people_are_the_csv_people() {
    let parquet = Source::Parquet(
        open_parquet(Path::new("examples/data/people.parquet")).expect("people.parquet opens"),
    );
    same_rows(&people_csv(), &parquet);
}

/// `psql`, on the `PATH` or where the distribution's server packages put it.
fn psql() -> Option<PathBuf> {
    let on_path = Command::new("psql")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if on_path {
        return Some(PathBuf::from("psql"));
    }
    let found = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .map(|e| e.path().join("bin/psql"))
        .find(|p| p.exists());
    if found.is_none() && std::env::var_os("DPQ_REQUIRE_POSTGRES").is_some() {
        panic!("DPQ_REQUIRE_POSTGRES is set but psql is nowhere to be found");
    }
    found
}

#[test]
fn the_recipe_imports_people_into_postgresql() {
    let Some(conninfo) = postgres_server() else {
        return;
    };
    let Some(psql) = psql() else {
        eprintln!("note: psql is not installed: the import recipe is not run");
        return;
    };
    let text = page();
    let recipes = fenced(&text, "sql");
    assert_eq!(recipes.len(), 1, "the page has one recipe");
    let loads = fenced(&text, "dpq postgres");
    assert_eq!(loads.len(), 1, "the page loads the table once");

    // A database of its own, made afresh.
    let mut client = postgres::Client::connect(&conninfo, postgres::NoTls).expect("the server");
    // One statement a call: neither may run inside the transaction of a batch.
    client
        .batch_execute(&format!("DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)"))
        .expect("the last run's database dropped");
    client
        .batch_execute(&format!("CREATE DATABASE {DATABASE}"))
        .expect("a fresh database");
    let database = format!("{conninfo} dbname={DATABASE}");

    // The recipe, as the page says to run it: from the repository's root.
    let dir = tempfile::tempdir().expect("a directory");
    let script = dir.path().join("people.sql");
    std::fs::write(&script, &recipes[0].0).expect("people.sql");
    let out = Command::new(&psql)
        .arg(&database)
        .args(["-v", "ON_ERROR_STOP=1", "-f"])
        .arg(&script)
        .output()
        .expect("psql runs");
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the recipe fails: {printed}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in ["COPY 10000", "INSERT 0 10000"] {
        assert!(printed.contains(line), "psql says {printed}");
        assert!(
            text.contains(&format!("`{line}`")),
            "the page says what psql prints"
        );
    }

    // The page's LOAD, pointed at that database, prints what the page shows.
    let (statement, shown) = &loads[0];
    assert!(statement.contains("'dbname=mydb'"), "{statement}");
    let statement = statement.replace("'dbname=mydb'", &format!("'{database}'"));
    let state = tempfile::tempdir().expect("a state directory");
    let mut session = session(state.path());
    dpq::output::set_width(Some(80));
    let (printed, ok) = run(&mut session, "example", &statement, Format::Table);
    dpq::output::set_width(None);
    assert!(ok, "{printed}");
    let printed = normalise(&printed, state.path());
    assert_eq!(
        Some(&printed),
        shown.as_ref(),
        "the page shows what LOAD prints"
    );

    // The same people, missing ages and incomes included.
    let opened = open_postgres(&database, "people").expect("the table opens");
    assert!(opened.left_out.is_empty(), "{:?}", opened.left_out);
    same_rows(&people_csv(), &Source::Postgres(Box::new(opened.table)));
}
