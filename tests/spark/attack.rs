//! Attacks on `LOAD SPARK`, as an analyst would try them: names and literals that would be
//! SQL if pasted into a query, a view that fails for some rows only, a table changed under its
//! ledger, errors that could quote Spark, a token in the address, one table spelled many ways,
//! and sums beyond `2^63`. The answers are compared with the column store's for the same rows.
//!
//! The server is named by `DPQ_TEST_SPARK` (`bash .ci/spark.sh` starts one and prints it);
//! without it these tests are left out with a note, unless `DPQ_REQUIRE_SPARK` is set.
//!
//! Eight holes were found by these tests and then closed (each test's notes say which, and
//! how): `${...}` substituted in names, appended rows unseen, a stopped server waited on for
//! minutes, a token echoed in an error's line, a user kept in the ledger's identity, a
//! temporary view's budget renewed by respelling it, a table's files loaded by path, and an
//! integer column turned text under its ledger summed past its clamp.

// The client's own error type is large; the tests only print it.
#![allow(clippy::result_large_err)]

use std::path::Path;

use dpq::data::{
    load_csv, open_spark, Buckets, Clamp, CmpOp, LoadOptions, Predicate, Source, Value,
};
use dpq::eval::{Randomness, Session};
use dpq::privacy::Store;
use dpq::spark_connect::row::Value as Cell;
use dpq::spark_connect::{SparkSession, SparkSessionBuilder};

use crate::common;
use common::{run_json, spark_server, write};

/// A session of the test's own on the server, which makes and drops tables. `${...}` is not
/// substituted in its statements, so that names and values holding it are made as written.
fn client(url: &str) -> SparkSession {
    let spark = SparkSessionBuilder::new()
        .remote(url)
        .get_or_create()
        .expect("the Spark Connect server answers");
    spark
        .conf()
        .set("spark.sql.variable.substitute", "false")
        .expect("a setting");
    spark
}

/// Runs `sql` on the server.
fn execute(spark: &SparkSession, sql: &str) {
    if let Err(e) = spark.sql(sql).and_then(|df| df.collect()) {
        panic!("{sql}: {e}");
    }
}

/// Drops what a test made when it ends, whether it passes or fails.
struct Cleanup<'a> {
    spark: &'a SparkSession,
    drops: Vec<String>,
}

impl<'a> Cleanup<'a> {
    fn new(spark: &'a SparkSession) -> Self {
        Cleanup {
            spark,
            drops: Vec::new(),
        }
    }

    /// `what` (`TABLE x`, `VIEW y`) is dropped at the end; any old one is dropped now.
    fn made(&mut self, what: &str) {
        let drop = match what.split_once(' ') {
            Some((kind, name)) => format!("DROP {kind} IF EXISTS {name}"),
            None => unreachable!("a kind and a name"),
        };
        let _ = self.spark.sql(&drop).and_then(|df| df.collect());
        self.drops.push(drop);
    }
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        for drop in self.drops.iter().rev() {
            let _ = self.spark.sql(drop).and_then(|df| df.collect());
        }
    }
}

/// A name unique to this process.
fn unique(stem: &str) -> String {
    format!("atk_{stem}_{}", std::process::id())
}

/// `name` quoted as a Spark SQL identifier.
fn quoted(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// `s` as a Spark SQL string literal (backslash escapes, as Spark reads them by default).
fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// A CSV field: quoted, its quotes doubled; nothing for a missing value.
fn field(s: Option<&str>) -> String {
    s.map_or(String::new(), |s| format!("\"{}\"", s.replace('"', "\"\"")))
}

/// The Spark table `parts` of the server `url`, opened.
fn open(url: &str, parts: &[&str]) -> Source {
    let parts: Vec<String> = parts.iter().map(|p| p.to_string()).collect();
    match open_spark(url, &parts) {
        Ok(opened) => Source::Spark(Box::new(opened.table)),
        Err(e) => panic!("{parts:?} opens: {e}"),
    }
}

/// The CSV text `csv`, in the column store.
fn memory(dir: &Path, csv: &str) -> Source {
    let path = write(dir, "rows.csv", csv);
    Source::Memory(
        load_csv(&path, &LoadOptions::default())
            .expect("the CSV loads")
            .table,
    )
}

fn session(dir: &Path) -> Session {
    Session::with_store(Randomness::Os, Store::dir(dir.join("state")))
}

fn text(column: usize, op: CmpOp, s: &str) -> Predicate {
    Predicate::Compare {
        column,
        op,
        value: Value::Text(s.into()),
    }
}

fn number(column: usize, op: CmpOp, x: f64) -> Predicate {
    Predicate::Compare {
        column,
        op,
        value: Value::Number(x),
    }
}

fn and(a: Predicate, b: Predicate) -> Predicate {
    Predicate::And(Box::new(a), Box::new(b))
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// The message of an error result, or a note that it was none.
fn message(out: &serde_json::Value) -> String {
    out["message"]
        .as_str()
        .map_or_else(|| format!("not an error: {out}"), str::to_string)
}

/// Text values that are SQL, or something else, if pasted into a query.
const TEXTS: [&str; 14] = [
    "' OR 1=1 --",
    "\\",
    "\\'",
    ":p1",
    ":p2",
    "?",
    "${x}",
    "${spark.app.name}",
    "''",
    "é",
    "a\"b",
    "; DROP TABLE t; --",
    "`",
    "O'Neil",
];

/// Column names that are SQL if pasted into a query unquoted, or quoted naively.
const COLUMNS: [&str; 8] = ["a`b", "c -- d", "e;f", "g h", "ü名", ":p1", "'q\"", "x.y"];

/// A name, or a literal, is never SQL: a table whose columns are named with quotes, comments,
/// semicolons, spaces, non-ASCII and a parameter's marker, holding text that would be SQL, and
/// a global temporary view whose own name is such (catalog tables take only `[A-Za-z0-9_]`
/// names), answer every condition, cube and sum exactly as the column store does for the same
/// rows.
#[test]
fn names_and_literals_answer_as_the_column_store() {
    let Some(url) = spark_server() else {
        return;
    };
    let spark = client(&url);
    let mut cleanup = Cleanup::new(&spark);
    let table = unique("names");
    let view = format!("we`ird -- ;:p1 é {}", std::process::id());
    cleanup.made(&format!("TABLE {table}"));
    cleanup.made(&format!("VIEW global_temp.{}", quoted(&view)));
    let columns: Vec<String> = COLUMNS
        .iter()
        .map(|c| format!("{} BIGINT", quoted(c)))
        .collect();
    execute(
        &spark,
        &format!(
            "CREATE TABLE {table} (name STRING, {}) USING parquet",
            columns.join(", ")
        ),
    );
    // Each text once or twice, a missing name, and numbers that differ by column.
    let mut rows = Vec::new();
    for (i, t) in TEXTS.iter().chain(&["O'Neil", ":p1"]).enumerate() {
        rows.push((Some(*t), i as i64));
    }
    rows.push((None, 99));
    let values: Vec<String> = rows
        .iter()
        .map(|(t, i)| {
            let numbers: Vec<String> = (0..COLUMNS.len())
                .map(|c| ((i * (c as i64 + 3)) % 11).to_string())
                .collect();
            format!(
                "({}, {})",
                t.map_or("NULL".to_string(), literal),
                numbers.join(", ")
            )
        })
        .collect();
    execute(
        &spark,
        &format!("INSERT INTO {table} VALUES {}", values.join(", ")),
    );
    execute(
        &spark,
        &format!(
            "CREATE OR REPLACE GLOBAL TEMPORARY VIEW {} AS SELECT * FROM {table}",
            quoted(&view)
        ),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let header: Vec<String> = std::iter::once("name")
        .chain(COLUMNS)
        .map(|c| field(Some(c)))
        .collect();
    let mut csv = header.join(",") + "\n";
    for (t, i) in &rows {
        let numbers: Vec<String> = (0..COLUMNS.len())
            .map(|c| ((i * (c as i64 + 3)) % 11).to_string())
            .collect();
        csv.push_str(&format!("{},{}\n", field(*t), numbers.join(",")));
    }
    let memory = memory(dir.path(), &csv);
    for spark_source in [open(&url, &[&table]), open(&url, &["global_temp", &view])] {
        assert_eq!(spark_source.schema(), memory.schema());
        assert_eq!(spark_source.n_rows(), memory.n_rows());
        let mut preds = Vec::new();
        for t in TEXTS {
            for op in [CmpOp::Eq, CmpOp::Ne, CmpOp::Lt, CmpOp::Ge] {
                preds.push(text(0, op, t));
            }
        }
        preds.push(Predicate::In {
            column: 0,
            values: TEXTS.iter().map(|t| Value::Text(t.to_string())).collect(),
        });
        preds.push(Predicate::Between {
            column: 0,
            low: Value::Text("'".into()),
            high: Value::Text("\\".into()),
        });
        for c in 1..=COLUMNS.len() {
            preds.push(number(c, CmpOp::Gt, 4.0));
            preds.push(and(text(0, CmpOp::Eq, ":p1"), number(c, CmpOp::Ge, 1.0)));
        }
        for pred in &preds {
            assert_eq!(
                memory.count(pred).expect("memory"),
                spark_source.count(pred).expect("Spark"),
                "{pred:?}"
            );
        }
        let dims = [(
            0usize,
            Buckets::Values(TEXTS.iter().map(|t| Value::Text(t.to_string())).collect()),
        )];
        assert_eq!(
            memory.count_cells(&dims).expect("memory"),
            spark_source.count_cells(&dims).expect("Spark"),
        );
        for c in 1..=COLUMNS.len() {
            let dims = [(c, Buckets::Cuts(vec![2.0, 5.5])), (0, dims[0].1.clone())];
            assert_eq!(
                memory.count_cells(&dims).expect("memory"),
                spark_source.count_cells(&dims).expect("Spark"),
                "{}",
                COLUMNS[c - 1]
            );
            let clamp = Clamp::Int { lo: 0, hi: 7, k: 0 };
            let pred = text(0, CmpOp::Ne, "${x}");
            assert_eq!(
                memory.sum_clamped(c, Some(&pred), clamp).expect("memory"),
                spark_source
                    .sum_clamped(c, Some(&pred), clamp)
                    .expect("Spark"),
                "{}",
                COLUMNS[c - 1]
            );
        }
    }
}

/// Was a break, now fixed and held: Spark substitutes `${...}` in the text of every statement (its
/// `spark.sql.variable.substitute`, on by default), inside a quoted name too, and dpq's
/// session leaves it on: a column named `a${x}` is asked as the column `a` (`${x}`, unset,
/// becomes nothing), and a table asked for as `t${x}` is the table `t`. The column store
/// answers about `a${x}`; so must Spark. (A fix: set `spark.sql.variable.substitute` to
/// `false` on dpq's session, beside `spark.sql.ansi.enabled`.)
#[test]
fn a_name_holding_dollar_brace_is_substituted() {
    let Some(url) = spark_server() else {
        return;
    };
    let spark = client(&url);
    let mut cleanup = Cleanup::new(&spark);
    let table = unique("dollar");
    cleanup.made(&format!("TABLE {table}"));
    execute(
        &spark,
        &format!("CREATE TABLE {table} (a BIGINT, `a${{x}}` BIGINT) USING parquet"),
    );
    execute(
        &spark,
        &format!("INSERT INTO {table} VALUES (1, 10), (2, 20), (3, 30)"),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let memory = memory(dir.path(), "a,a${x}\n1,10\n2,20\n3,30\n");
    let source = open(&url, &[&table]);
    assert_eq!(source.schema(), memory.schema());
    let pred = number(1, CmpOp::Gt, 5.0);
    let (m, s) = (memory.count(&pred), source.count(&pred));
    // The name `${x}` asks for a table that is not there.
    let other = open_spark(&url, &[format!("{table}${{x}}")]).map(|o| o.table.shell().n_rows());
    assert!(
        matches!(m, Ok(3)) && matches!(s, Ok(3)) && other.is_err(),
        "column a${{x}} > 5: the column store {m:?}, Spark {s:?} (column a answered); \
         table {table}${{x}} opened as {other:?}"
    );
}

/// A base table of two people, Bob's `raw` not a number, and views over it made by a curator
/// whose session has ANSI mode on (Spark 4's default), which a view keeps whatever the session
/// that reads it says; `lax` made with ANSI mode off.
fn failing_views(
    spark: &SparkSession,
    cleanup: &mut Cleanup<'_>,
    stem: &str,
) -> (String, String, String) {
    let (table, strict, lax) = (
        unique(&format!("{stem}_base")),
        unique(&format!("{stem}_strict")),
        unique(&format!("{stem}_lax")),
    );
    cleanup.made(&format!("TABLE {table}"));
    cleanup.made(&format!("VIEW {strict}"));
    cleanup.made(&format!("VIEW {lax}"));
    execute(
        spark,
        &format!("CREATE TABLE {table} (name STRING, raw STRING, n BIGINT) USING parquet"),
    );
    execute(
        spark,
        &format!("INSERT INTO {table} VALUES ('alice', '12', 3), ('bob', 'oops', 4)"),
    );
    spark
        .conf()
        .set("spark.sql.ansi.enabled", "true")
        .expect("a setting");
    // x: an ANSI cast; d: a division by zero for Bob (`oops` has 4 characters); a: an
    // assertion; y, z: the same cast and division, never missing (`coalesce`).
    execute(
        spark,
        &format!(
            "CREATE VIEW {strict} AS SELECT name, CAST(raw AS BIGINT) AS x, \
             n DIV (length(raw) - 4) AS d, \
             CASE WHEN assert_true(raw <> 'oops') IS NULL THEN n END AS a, \
             coalesce(CAST(raw AS BIGINT), 0) AS y, \
             coalesce(n DIV (length(raw) - 4), 0) AS z FROM {table}"
        ),
    );
    spark
        .conf()
        .set("spark.sql.ansi.enabled", "false")
        .expect("a setting");
    execute(
        spark,
        &format!("CREATE VIEW {lax} AS SELECT name, CAST(raw AS BIGINT) AS x FROM {table}"),
    );
    (table, strict, lax)
}

fn name(n: &str) -> Predicate {
    text(0, CmpOp::Eq, n)
}

/// Whether a question fails cannot depend on the rows its condition picks: a view whose
/// column fails for Bob's row only (an ANSI cast, a division by zero, `assert_true`) fails
/// every count, cube and sum that reads that column, whether the condition picks Bob or
/// Alice, with a fixed message; a question that does not read it answers. What happens, as
/// found: dpq's session turns ANSI mode off, but a view keeps the mode it was made with, so
/// the cast fails rather than giving a missing value (`SQLSTATE 22018`); a view made with ANSI
/// mode off gives a missing value.
#[test]
fn a_view_that_fails_for_some_rows_fails_for_every_condition() {
    let Some(url) = spark_server() else {
        return;
    };
    let spark = client(&url);
    let mut cleanup = Cleanup::new(&spark);
    let (_, strict, lax) = failing_views(&spark, &mut cleanup, "fails");
    let view = open(&url, &[&strict]);
    let schema: Vec<String> = view.schema().into_iter().map(|(n, _)| n).collect();
    assert_eq!(schema, ["name", "x", "d", "a", "y", "z"]);
    let clamp = Clamp::Int { lo: 0, hi: 5, k: 0 };
    for (c, code) in [(1, "22018"), (2, "22012"), (3, "P0001")] {
        let and_c = |n: &str| and(name(n), number(c, CmpOp::Gt, 0.0));
        let counts = [view.count(&and_c("bob")), view.count(&and_c("alice"))];
        let sums = [
            view.sum_clamped(c, Some(&name("bob")), clamp),
            view.sum_clamped(c, Some(&name("alice")), clamp),
            view.sum_clamped(4, Some(&and_c("bob")), clamp),
            view.sum_clamped(4, Some(&and_c("alice")), clamp),
        ];
        let cells = view.count_cells(&[(c, Buckets::Cuts(vec![1.0]))]);
        let all: Vec<String> = counts
            .iter()
            .map(|r| format!("{r:?}"))
            .chain(sums.iter().map(|r| format!("{r:?}")))
            .chain([format!("{cells:?}")])
            .collect();
        for result in &all {
            assert!(
                result.starts_with("Err(") && result.contains(&format!("(SQLSTATE {code})")),
                "column {}: {all:#?}",
                schema[c]
            );
            assert!(!result.contains("oops"), "{result}");
        }
    }
    // The columns that cannot be missing, in a count and a cube: they fail for both too.
    for c in [4, 5] {
        let and_c = |n: &str| and(name(n), number(c, CmpOp::Gt, 0.0));
        let (bob, alice) = (view.count(&and_c("bob")), view.count(&and_c("alice")));
        assert!(bob.is_err() && alice.is_err(), "{bob:?} {alice:?}");
        assert!(view.count_cells(&[(c, Buckets::Cuts(vec![1.0]))]).is_err());
    }
    // A condition on the name alone reads no failing column.
    assert!(matches!(view.count(&name("bob")), Ok(1)));
    // Made with ANSI mode off, the cast gives Bob a missing value.
    let lax = open(&url, &[&lax]);
    assert!(matches!(lax.count(&number(1, CmpOp::Gt, 0.0)), Ok(1)));
    assert!(matches!(
        lax.count(&and(name("bob"), number(1, CmpOp::Gt, 0.0))),
        Ok(0)
    ));
}

/// A column that fails for Bob's row only and that Spark knows is never missing
/// (`coalesce(CAST(raw AS BIGINT), 0)`, `coalesce(n DIV (length(raw) - 4), 0)` in a view
/// made with ANSI mode on) is the hard case: Spark never computes `count(v)` of such a column
/// (it counts rows), and folds `v IS NOT NULL` to true, so the `count(c)` of every column read
/// does not by itself make every value computed. What holds today is the optimizer's choice:
/// the view's column is used more than once in dpq's query, so Spark does not inline it
/// (`CollapseProject` keeps an expression that is not cheap where it is computed, for every
/// row), and every question reading it fails, whichever rows its condition picks. (By hand,
/// `SELECT count(t) FROM (SELECT CASE WHEN name = :p AND y IS NOT NULL THEN CAST(y AS
/// DECIMAL(38,0)) END AS t, y AS v FROM view)`, where `t` is used once, fails for Bob only.)
/// A condition that no integer meets (`y = 1.5`) is folded away and answers, for Bob and
/// Alice alike: the failure depends on the literal, not the rows. Checked for counts (the
/// condition both ways round) and for integer and float sums, and at the prompt.
#[test]
fn a_failing_column_that_cannot_be_missing_fails_for_every_condition() {
    let Some(url) = spark_server() else {
        return;
    };
    let spark = client(&url);
    let mut cleanup = Cleanup::new(&spark);
    let (_, strict, _) = failing_views(&spark, &mut cleanup, "never");
    let view = open(&url, &[&strict]);
    let cases = [
        (4, number(4, CmpOp::Gt, 0.0)),
        (4, number(4, CmpOp::Eq, 1.5)),
        (
            4,
            Predicate::In {
                column: 4,
                values: vec![Value::Number(12.0)],
            },
        ),
        (4, Predicate::Not(Box::new(number(4, CmpOp::Lt, 1.0)))),
        (5, number(5, CmpOp::Gt, 0.0)),
    ];
    let int = Clamp::Int { lo: 0, hi: 5, k: 0 };
    let float = Clamp::Float {
        lo: 0.0,
        hi: 5.0,
        k: 0,
    };
    let mut found = Vec::new();
    for (c, shape) in cases {
        let ask = |n: &str| {
            let (p, q) = (and(name(n), shape.clone()), and(shape.clone(), name(n)));
            [
                view.count(&p).is_ok(),
                view.count(&q).is_ok(),
                view.sum_clamped(c, Some(&p), int).is_ok(),
                view.sum_clamped(c, Some(&p), float).is_ok(),
                view.sum_clamped(c, Some(&name(n)), int).is_ok(),
                view.sum_clamped(c, Some(&name(n)), float).is_ok(),
            ]
        };
        let (bob, alice) = (ask("bob"), ask("alice"));
        if bob != alice {
            found.push(format!(
                "column {c}, {shape:?}: bob {bob:?}, alice {alice:?}"
            ));
        }
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = session(dir.path());
    let loaded = run_json(&mut s, &format!("LOAD SPARK '{url}' TABLE {strict} AS v;"));
    assert_eq!(loaded[0]["kind"], "loaded", "{}", loaded[0]);
    let [bob, alice] = ["bob", "alice"].map(|n| {
        run_json(
            &mut s,
            &format!("SUM y CLAMP (0, 5) WHERE name = '{n}' WITH EPS 0.1;"),
        )
        .remove(0)
    });
    if bob["kind"] != alice["kind"] {
        found.push(format!("at the prompt: bob {bob}; alice {alice}"));
    }
    assert!(found.is_empty(), "{found:#?}");
    let budget = run_json(&mut s, "SHOW BUDGET;");
    assert_eq!(budget[0]["spent"], 0.0, "{}", budget[0]);
}

/// A table `people` of `n` rows (`name`, `age`, `score`), made for a test.
fn people(spark: &SparkSession, cleanup: &mut Cleanup<'_>, stem: &str, n: usize) -> String {
    let table = unique(stem);
    cleanup.made(&format!("TABLE {table}"));
    execute(
        spark,
        &format!("CREATE TABLE {table} (name STRING, age BIGINT, score DOUBLE) USING parquet"),
    );
    execute(
        spark,
        &format!("INSERT INTO {table} SELECT concat('p', id), id % 90, id / 8.0 FROM range({n})"),
    );
    table
}

/// An error from Spark is a fixed message: the table's name as dpq quotes it, `Spark could
/// not answer` and a SQLSTATE code, with none of Spark's words (its error class, the SQL,
/// a value, a stack trace).
fn assert_fixed(message: &str, code: Option<&str>) {
    let fixed = match code {
        Some(code) => format!("Spark could not answer (SQLSTATE {code})"),
        None => "Spark could not answer".to_string(),
    };
    assert!(message.contains(&fixed), "{message}");
    for word in [
        "SELECT",
        "FILTER",
        "TABLE_OR_VIEW",
        "UNRESOLVED",
        "DATATYPE",
        "cannot be found",
        "spark_catalog",
        "org.apache",
        "Exception",
        "at ",
        "oops",
        ":p1",
    ] {
        assert!(!message.contains(word), "{word:?} in {message}");
    }
}

/// Was a break, now fixed and held: rows added under the ledger between two statements must make every later question
/// refused, saying the table changed and nothing was spent, with the budget as it was. They
/// are not seen at all: dpq's Spark session keeps the table's relation, with its listing of
/// the table's files, from its first question (Spark's per-session relation cache; another
/// session's `INSERT` refreshes only its own), so every later question is answered from the
/// files as they were listed then, and the row count check, which compares against that same
/// stale listing, never fires. (Once the old files are gone, as after `INSERT OVERWRITE` or
/// `DROP TABLE`, every question fails with SQLSTATE KD001 instead: see the next tests.) A
/// fix: `REFRESH TABLE <relation>` on dpq's session before each question (or its Spark
/// Connect equivalent, `catalog.refreshTable`).
#[test]
fn rows_added_under_the_ledger_are_not_seen() {
    let Some(url) = spark_server() else {
        return;
    };
    let spark = client(&url);
    let mut cleanup = Cleanup::new(&spark);
    let table = people(&spark, &mut cleanup, "grown", 50);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = session(dir.path());
    let out = run_json(
        &mut s,
        &format!(
            "LOAD SPARK '{url}' TABLE {table} AS p; CUBE BY age (30, 50); \
             COUNT WHERE age > 10 WITH EPS 0.5;"
        ),
    );
    let kinds: Vec<&str> = out
        .iter()
        .map(|o| o["kind"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(kinds, ["loaded", "cube", "count"], "{out:?}");
    execute(
        &spark,
        &format!("INSERT INTO {table} VALUES ('new', 7, 1.0)"),
    );
    let mut answered = Vec::new();
    for statement in [
        "COUNT WHERE age > 20 WITH EPS 0.1;",
        "SUM age CLAMP (0, 100) WHERE name <> 'x' WITH EPS 0.1;",
        "HISTOGRAM WITH EPS 0.1;",
    ] {
        let out = run_json(&mut s, statement);
        let m = out[0]["message"].as_str().unwrap_or_default();
        if !(m.contains("changed") && m.contains("nothing was spent")) {
            answered.push(format!("{statement} {}", out[0]));
        }
    }
    let budget = run_json(&mut s, "SHOW BUDGET;");
    assert!(
        answered.is_empty() && budget[0]["spent"] == 0.5,
        "a row was added, yet: {answered:#?}; spent {}",
        budget[0]["spent"]
    );
}

/// What the row count cannot see: the rows replaced by as many others (`INSERT OVERWRITE`).
/// A session that had read the table fails every later question with a fixed message
/// (SQLSTATE KD001: its cached listing names files that are gone), nothing spent. A table
/// loaded afresh answers from the new rows under the old ledger, with no word that the data
/// changed (`data_changed` stays false): the ledger is keyed by where the table's files lie,
/// and the only check is the row count. No budget is lost (the new rows are charged with
/// everything the old ones were), but "a data file whose content changed under its ledger is
/// reported" does not hold for a Spark table. This test pins what happens today.
#[test]
fn rows_replaced_by_as_many_are_not_seen() {
    let Some(url) = spark_server() else {
        return;
    };
    let spark = client(&url);
    let mut cleanup = Cleanup::new(&spark);
    let table = people(&spark, &mut cleanup, "replaced", 40);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = session(dir.path());
    let out = run_json(
        &mut s,
        &format!("LOAD SPARK '{url}' TABLE {table} AS p; COUNT WHERE age < 10 WITH EPS 0.2;"),
    );
    assert_eq!(out[1]["kind"], "count", "{}", out[1]);
    execute(
        &spark,
        &format!("INSERT OVERWRITE TABLE {table} SELECT concat('q', id), 5, 0.0 FROM range(40)"),
    );
    // The files are listed again before each question: the new rows, as many as the old, are
    // answered about, as after an `UPDATE` of a PostgreSQL table (a limit the docs state).
    let out = run_json(&mut s, "COUNT WHERE age > 10 WITH EPS 0.2;");
    assert_eq!(out[0]["kind"], "count", "{}", out[0]);
    let source = open(&url, &[&table]);
    assert!(matches!(source.count(&number(1, CmpOp::Lt, 10.0)), Ok(40)));
    let out = run_json(
        &mut s,
        &format!("LOAD SPARK '{url}' TABLE {table} AS again; COUNT WHERE age > 10 WITH EPS 0.2;"),
    );
    assert_eq!(out[0]["data_changed"], false, "{}", out[0]);
    assert_eq!(out[0]["budget_spent"], 0.4, "{}", out[0]);
    assert_eq!(out[1]["kind"], "count", "{}", out[1]);
}

/// Spark's own message never reaches the analyst. A table read by a session and then
/// dropped, or dropped and made again with a column of another type (an array, text holding
/// numbers) or with a column gone, fails every question with a fixed message and its
/// SQLSTATE (today always KD001: the session's cached listing names the old files), nothing
/// spent; loaded afresh, a question that fails fails with a fixed message too, and a table not
/// there is "no table of that name". (Text holding numbers, once a session sees it, compares
/// as numbers, and is answered.)
#[test]
fn no_error_quotes_spark() {
    let Some(url) = spark_server() else {
        return;
    };
    let spark = client(&url);
    let mut cleanup = Cleanup::new(&spark);
    let table = people(&spark, &mut cleanup, "retyped", 30);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = session(dir.path());
    let out = run_json(
        &mut s,
        &format!("LOAD SPARK '{url}' TABLE {table} AS p; COUNT WHERE age > 3 WITH EPS 0.1;"),
    );
    assert_eq!(out[1]["kind"], "count", "{}", out[1]);
    let remake = |columns: &str, select: &str| {
        execute(&spark, &format!("DROP TABLE {table}"));
        execute(
            &spark,
            &format!("CREATE TABLE {table} ({columns}) USING parquet"),
        );
        execute(
            &spark,
            &format!("INSERT INTO {table} SELECT {select} FROM range(30)"),
        );
    };
    let (mut codes, mut answered) = (Vec::new(), 0u32);
    for (columns, select) in [
        (
            "name STRING, age STRING, score DOUBLE",
            "concat('oops', id), CAST(id % 90 AS STRING), id / 8.0",
        ),
        (
            "name STRING, age ARRAY<BIGINT>, score DOUBLE",
            "concat('oops', id), array(id), id / 8.0",
        ),
        ("name STRING, score DOUBLE", "concat('oops', id), id / 8.0"),
    ] {
        remake(columns, select);
        for statement in [
            "COUNT WHERE age > 5 WITH EPS 0.1;",
            "SUM age CLAMP (0, 9) WITH EPS 0.1;",
        ] {
            let out = run_json(&mut s, statement);
            if out[0]["kind"] == "error" {
                let m = message(&out[0]);
                assert_fixed(&m, None);
                codes.push(m);
            } else if out[0]["from_history"] != true {
                // Text holding numbers, once the session sees the new table, compares as
                // numbers: an answer, and a spend (a question asked before is its recorded
                // answer, free).
                answered += 1;
                codes.push(format!("answered: {statement}"));
            } else {
                codes.push(format!("answered: {statement}"));
            }
        }
        // Loaded afresh, through the library: the same question.
        if let Ok(opened) = open_spark(&url, std::slice::from_ref(&table)) {
            let source = Source::Spark(Box::new(opened.table));
            if let Some(c) = source.column_index("age") {
                if let Err(e) = source.count(&number(c, CmpOp::Gt, 5.0)) {
                    assert_fixed(&e.to_string(), None);
                }
            }
        }
    }
    execute(&spark, &format!("DROP TABLE {table}"));
    let out = run_json(&mut s, "COUNT WHERE age > 6 WITH EPS 0.1;");
    assert_fixed(&message(&out[0]), None);
    let budget = run_json(&mut s, "SHOW BUDGET;");
    let spent = budget[0]["spent"].as_f64().unwrap_or(-1.0);
    assert!(
        (spent - 0.1 * f64::from(1 + answered)).abs() < 1e-9,
        "{}",
        budget[0]
    );
    let out = run_json(&mut s, &format!("LOAD SPARK '{url}' TABLE {table} AS q;"));
    let m = message(&out[0]);
    assert!(m.contains("no table of that name"), "{m}");
    eprintln!("the messages: {codes:#?}");
}

/// The port and directory of the test's own Spark Connect server, which it stops.
const OWN_PORT: &str = "25022";
const OWN_DIR: &str = "/tmp/dpq-spark-attack";

/// Runs `.ci/spark.sh` for the test's own server (`stop` to stop it); its address.
fn own_server(stop: bool) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/spark.sh");
    let mut command = std::process::Command::new("bash");
    command.arg(&script);
    if stop {
        command.arg("stop");
    }
    let out = command
        .env("DPQ_SPARK_PORT", OWN_PORT)
        .env("DPQ_SPARK_DIR", OWN_DIR)
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Stops the test's own server when the test ends, whether it passes or fails.
struct Stopped;

impl Drop for Stopped {
    fn drop(&mut self) {
        own_server(true);
    }
}

/// A server that stops between two statements: the question is a fixed error with nothing
/// spent, and a `LOAD` from it says it cannot connect; neither quotes the client's words (the
/// transport's error, the address). The test starts a server of its own (`.ci/spark.sh` with
/// `DPQ_SPARK_PORT=25022`), since it stops it.
///
/// Was a break (availability, not privacy), fixed by a connection check before each question: the question fails only after about 10.7 minutes (639
/// s measured): the Spark Connect client's default retry policy (15 retries, backing off
/// from 1 s to 64 s) runs in full, and dpq holds the table's ledger lock while it waits (the
/// true answer is computed inside the release transaction), so every other process using that
/// ledger waits too. The test waits 60 s for the error, then fails; the rest of its checks
/// then run after the wait in a thread of their own, unseen. (A fix: a client with a short
/// retry policy, e.g. `RetryPolicy { max_retries: Some(2), .. }`, which the session builder
/// does not expose today; or a deadline on each question.)
#[test]
fn a_server_that_stopped_is_a_fixed_error_soon() {
    if spark_server().is_none() {
        return;
    }
    let url = own_server(false);
    let _stopped = Stopped;
    let table = {
        let spark = client(&url);
        let mut cleanup = Cleanup::new(&spark);
        let table = people(&spark, &mut cleanup, "stopped", 20);
        // Kept: the server stops with it.
        cleanup.drops.clear();
        table
    };
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut s = session(dir.path());
        let out = run_json(
            &mut s,
            &format!("LOAD SPARK '{url}' TABLE {table} AS p; COUNT WHERE age > 3 WITH EPS 0.25;"),
        );
        assert_eq!(out[1]["kind"], "count", "{}", out[1]);
        own_server(true);
        let port: u16 = OWN_PORT.parse().expect("a port");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            assert!(std::time::Instant::now() < deadline, "the server stops");
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        let _ = send.send(None);
        let out = run_json(&mut s, "COUNT WHERE age > 4 WITH EPS 0.25;");
        let m = message(&out[0]);
        // Found out before the client's retries: no connection within five seconds.
        assert!(
            m.contains("cannot connect to the Spark Connect server"),
            "{m}"
        );
        for word in ["refused", "transport", "tcp", "error trying", OWN_PORT] {
            assert!(!m.contains(word), "{word:?} in {m}");
        }
        let budget = run_json(&mut s, "SHOW BUDGET;");
        assert_eq!(budget[0]["spent"], 0.25, "{}", budget[0]);
        let out = run_json(&mut s, &format!("LOAD SPARK '{url}' TABLE {table} AS q;"));
        let loaded = message(&out[0]);
        assert!(
            loaded.contains("cannot connect to the Spark Connect server")
                && !loaded.contains("refused"),
            "{loaded}"
        );
        let _ = send.send(Some(m));
    });
    let stopped = receive.recv_timeout(std::time::Duration::from_secs(120));
    assert!(
        matches!(stopped, Ok(None)),
        "the server did not stop, or the session failed first"
    );
    let started = std::time::Instant::now();
    match receive.recv_timeout(std::time::Duration::from_secs(30)) {
        Ok(Some(m)) => eprintln!("a stopped server: {m}, after {:?}", started.elapsed()),
        Ok(None) => unreachable!("one stop"),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            panic!("the session's checks failed (see the thread's panic above)")
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!(
            "a question to a stopped server had no answer after {:?}: the client retries for \
             about 10.7 minutes, with the ledger locked",
            started.elapsed()
        ),
    }
}

/// Whether any output of `out` holds `secret`.
fn shows(out: &[serde_json::Value], secret: &str) -> bool {
    serde_json::to_string(out).expect("JSON").contains(secret)
}

/// A token in the address is refused, however it is written (`token=`, `Token=`, ` token =`,
/// after another parameter), and it appears in no output, no `EXPLAIN`, no `SHOW HISTORY`,
/// `SHOW BUDGET` or `SHOW TABLES`, and no file of the state directory. An address the client
/// cannot read (a token after the port with no `/`) cannot connect, with a fixed message. Other parameters, as found: `user_id=` and a `session_id=` (a v4
/// UUID: dpq's session then joins that Spark session, whoever made it) load the same table
/// with the same ledger and are kept nowhere.
#[test]
fn a_token_in_the_address_is_refused_and_never_shown() {
    let Some(url) = spark_server() else {
        return;
    };
    let spark = client(&url);
    let mut cleanup = Cleanup::new(&spark);
    let table = people(&spark, &mut cleanup, "token", 20);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = session(dir.path());
    let refused = [
        format!("{url}/;token=sekrit1"),
        format!("{url}/;use_ssl=false;token=sekrit2"),
        format!("{url}/;Token=sekrit3"),
        format!("{url}/; token =sekrit4"),
        format!("{url}/x/;token=sekrit5"),
    ];
    for address in &refused {
        let out = run_json(
            &mut s,
            &format!("LOAD SPARK '{address}' TABLE {table} AS a;"),
        );
        let m = message(&out[0]);
        assert!(
            m.contains("a token is never written in a statement")
                && m.contains("SPARK_CONNECT_AUTHENTICATE_TOKEN"),
            "{address}: {m}"
        );
        assert!(!shows(&out, "sekrit"), "{out:?}");
    }
    // A token after the port with no `/`: the client cannot read the port.
    let out = run_json(
        &mut s,
        &format!("LOAD SPARK '{url};token=sekrit6' TABLE {table} AS a;"),
    );
    let m = message(&out[0]);
    assert!(!shows(&out, "sekrit"), "{out:?}");
    assert!(m.contains("cannot connect"), "{m}");
    for statement in [
        format!("EXPLAIN LOAD SPARK '{url}/;token=sekrit12' TABLE {table} AS a;"),
        format!("LOAD SPARK '{url}/;token=sekrit9' TABLE {table} AS a NO HEADER;"),
        format!("LOAD SPARK '{url}/;token=sekrit10' TABLE {table} AS a BOGUS;"),
        format!("LOAD SPARK '{url}/;token=sekrit11' TABLE {table} AS a COLUMNS (age integer);"),
    ] {
        let out = run_json(&mut s, &statement);
        assert!(!shows(&out, "sekrit"), "{out:?}");
    }
    // Other parameters: loaded, one ledger, kept nowhere.
    let out = run_json(
        &mut s,
        &format!("LOAD SPARK '{url}' TABLE {table} AS plain; COUNT WHERE age > 3 WITH EPS 0.25;"),
    );
    assert_eq!(out[1]["kind"], "count", "{}", out[1]);
    // A fresh v4 id each run: a server keeps a closed session's id and refuses it again
    // (SQLSTATE HY000), so a fixed one failed every run after the first on one server.
    let id: u128 = rand::random();
    let session_id = format!(
        "{:08x}-{:04x}-4{:03x}-{:x}{:03x}-{:012x}",
        id >> 96,
        (id >> 80) & 0xffff,
        (id >> 68) & 0xfff,
        8 + ((id >> 66) & 3),
        (id >> 48) & 0xfff,
        id & 0xffff_ffff_ffff
    );
    let session_id = session_id.as_str();
    for (i, address) in [
        format!("{url}/;user_id=someone_else"),
        format!("{url}/;session_id={session_id}"),
        format!("{url}/;user_id=someone_else;x-custom-header=v"),
    ]
    .iter()
    .enumerate()
    {
        let out = run_json(
            &mut s,
            &format!("LOAD SPARK '{address}' TABLE {table} AS other{i};"),
        );
        assert_eq!(out[0]["kind"], "loaded", "{address}: {}", out[0]);
        assert_eq!(out[0]["budget_spent"], 0.25, "{address}: {}", out[0]);
    }
    let out = run_json(
        &mut s,
        "USE plain; SHOW HISTORY; SHOW BUDGET; SHOW TABLES; DESCRIBE plain;",
    );
    assert!(
        !shows(&out, "sekrit") && !shows(&out, "someone_else"),
        "{out:?}"
    );
    drop(s);
    for entry in walk(&dir.path().join("state")) {
        let bytes = std::fs::read(&entry).expect("a state file");
        let text = String::from_utf8_lossy(&bytes);
        for secret in ["sekrit", "someone_else", session_id, "x-custom"] {
            assert!(
                !text.contains(secret),
                "{} holds {secret}: {text}",
                entry.display()
            );
        }
    }
}

/// Was a break, now fixed and held: the error that refuses a token in the address, as the prompt and `dpq run` show it
/// (the table format, the default), quotes the statement's line under the message, token
/// and all: `1 | LOAD SPARK 'sc://127.0.0.1:25002/;token=sekrit' TABLE t AS a;`. Every error
/// of a `LOAD SPARK` or `LOAD POSTGRES` statement does (a syntax error after the address, a
/// clause refused), and so would show a PostgreSQL password; the JSON form gives only a line
/// and column. A fix: the diagnostic's source line shows the address as `EXPLAIN` does,
/// `'(connection string)'`. (The prompt's own line history, kept beside the state directory
/// by the binary, also keeps every statement as typed.)
#[test]
fn a_refused_token_is_quoted_in_the_error_text() {
    let Some(url) = spark_server() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = session(dir.path());
    let mut shown = Vec::new();
    for statement in [
        format!("LOAD SPARK '{url}/;token=sekrit' TABLE t AS a;"),
        format!("LOAD SPARK '{url}/;token=sekrit' TABLE t AS a BOGUS;"),
    ] {
        dpq::driver::run_source(
            &mut s,
            "test",
            &statement,
            dpq::output::Format::Table,
            &mut |e| {
                let (dpq::driver::Emitted::Result(t) | dpq::driver::Emitted::Error(t)) = e;
                if t.contains("sekrit") {
                    shown.push(t);
                }
            },
        );
    }
    assert!(
        shown.is_empty(),
        "the token is shown:\n{}",
        shown.join("\n")
    );
}

/// BREAK (minor): what precedes the first `/` of the address is kept verbatim as the table's
/// identity, and written into its ledger's header (`"data_file":"spark://someone@host:port/
/// table"`): a user before the host (`sc://someone@127.0.0.1:25002`, which the client accepts
/// and connects with) is kept in the state directory, against "never the connection string"
/// (`read_spark`'s notes). (`sc://user:password@...` does not connect: the client fails only
/// after its retries, about 10.7 minutes, so no ledger is made; it is not tried here.) A fix:
/// keep only the host and port as the client parses them.
#[test]
fn a_user_in_the_address_is_kept_in_the_ledger() {
    let Some(url) = spark_server() else {
        return;
    };
    let spark = client(&url);
    let mut cleanup = Cleanup::new(&spark);
    let table = people(&spark, &mut cleanup, "userinfo", 20);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = session(dir.path());
    let authority = url.trim_start_matches("sc://");
    let out = run_json(
        &mut s,
        &format!("LOAD SPARK 'sc://sekrit7@{authority}' TABLE {table} AS a;"),
    );
    assert_eq!(out[0]["kind"], "loaded", "{}", out[0]);
    assert!(!shows(&out, "sekrit"), "{out:?}");
    drop(s);
    let kept: Vec<String> = walk(&dir.path().join("state"))
        .into_iter()
        .filter(|f| {
            String::from_utf8_lossy(&std::fs::read(f).expect("a state file")).contains("sekrit")
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(kept.is_empty(), "the address's user is kept in {kept:?}");
}

/// The port of `url` when it names `127.0.0.1`, else a note and `None`.
fn loopback_port(url: &str) -> Option<&str> {
    let port = url.strip_prefix("sc://127.0.0.1:");
    if port.is_none() {
        eprintln!("note: the test server is not sc://127.0.0.1:port: spellings not tried");
    }
    port
}

/// One table however its server and name are spelled (`localhost`, `127.0.0.1`, in capitals,
/// with a `/` or a `user_id`; `t`, `default.t`, `spark_catalog.default.t`, `"T"` in capitals)
/// has one ledger and one budget: its ledger is keyed by where its files lie, as Spark says.
/// A view, which has no files, is keyed by its name as Spark resolves it (catalog, database,
/// view), and has one ledger however spelled too.
#[test]
fn one_table_however_spelled_has_one_ledger() {
    let Some(url) = spark_server() else {
        return;
    };
    let Some(port) = loopback_port(&url) else {
        return;
    };
    let spark = client(&url);
    let mut cleanup = Cleanup::new(&spark);
    let table = people(&spark, &mut cleanup, "spelled", 30);
    let view = unique("spelled_view");
    cleanup.made(&format!("VIEW {view}"));
    execute(
        &spark,
        &format!("CREATE VIEW {view} AS SELECT * FROM {table}"),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = session(dir.path());
    let out = run_json(
        &mut s,
        &format!(
            "LOAD SPARK '{url}' TABLE {table} AS a; COUNT WHERE age > 3 WITH EPS 0.5; \
             LOAD SPARK '{url}' TABLE {view} AS v; COUNT WHERE age > 3 WITH EPS 0.25;"
        ),
    );
    assert_eq!(out[1]["kind"], "count", "{}", out[1]);
    assert_eq!(out[3]["kind"], "count", "{}", out[3]);
    let (upper_table, upper_view) = (table.to_uppercase(), view.to_uppercase());
    let mut fresh = Vec::new();
    for (i, (address, name, spent)) in [
        (format!("sc://localhost:{port}"), table.clone(), 0.5),
        (
            format!("sc://127.0.0.1:{port}/"),
            format!("default.{table}"),
            0.5,
        ),
        (
            format!("sc://LOCALHOST:{port}"),
            format!("spark_catalog.default.{table}"),
            0.5,
        ),
        (
            format!("sc://127.0.0.1:{port}/;user_id=x"),
            format!("\"{upper_table}\""),
            0.5,
        ),
        (
            format!("sc://localhost:{port}"),
            format!("default.{view}"),
            0.25,
        ),
        (
            format!("sc://LOCALHOST:{port}/"),
            format!("spark_catalog.default.\"{upper_view}\""),
            0.25,
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let out = run_json(
            &mut s,
            &format!("LOAD SPARK '{address}' TABLE {name} AS b{i};"),
        );
        assert_eq!(out[0]["kind"], "loaded", "{address} {name}: {}", out[0]);
        if out[0]["budget_spent"] != spent {
            fresh.push(format!("{address} {name}: {}", out[0]["budget_spent"]));
        }
    }
    assert!(fresh.is_empty(), "a fresh budget: {fresh:#?}");
}

/// Was a break, now fixed and held: a global temporary view (shared by every session of the Spark application, and so
/// visible to dpq; the one kind of relation whose name may hold any character) is not
/// described by `DESCRIBE TABLE EXTENDED` (no location, catalog or database), so its ledger
/// is keyed by the address and name as the statement spells them: loaded through
/// `sc://localhost:port` after `sc://127.0.0.1:port`, or as `GLOBAL_TEMP."GV"` after
/// `global_temp.gv`, the same rows come with a fresh budget. A fix: key it by what Spark
/// resolves (`global_temp` is `spark.sql.globalTempDatabase`; the name lowercased as Spark
/// compares it) and by the server's identity rather than the address as spelled, or refuse
/// a relation Spark does not describe.
#[test]
fn a_global_temporary_view_however_spelled_has_one_ledger() {
    let Some(url) = spark_server() else {
        return;
    };
    let Some(port) = loopback_port(&url) else {
        return;
    };
    let spark = client(&url);
    let mut cleanup = Cleanup::new(&spark);
    let table = people(&spark, &mut cleanup, "global", 30);
    let view = unique("global_view");
    cleanup.made(&format!("VIEW global_temp.{view}"));
    execute(
        &spark,
        &format!("CREATE GLOBAL TEMPORARY VIEW {view} AS SELECT * FROM {table}"),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = session(dir.path());
    let out = run_json(
        &mut s,
        &format!(
            "LOAD SPARK '{url}' TABLE global_temp.{view} AS a; COUNT WHERE age > 3 WITH EPS 0.5;"
        ),
    );
    assert_eq!(out[1]["kind"], "count", "{}", out[1]);
    let mut fresh = Vec::new();
    for (i, (address, name)) in [
        (
            format!("sc://localhost:{port}"),
            format!("global_temp.{view}"),
        ),
        (
            url.clone(),
            format!("GLOBAL_TEMP.\"{}\"", view.to_uppercase()),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let out = run_json(
            &mut s,
            &format!("LOAD SPARK '{address}' TABLE {name} AS b{i};"),
        );
        assert_eq!(out[0]["kind"], "loaded", "{address} {name}: {}", out[0]);
        if out[0]["budget_spent"] != 0.5 {
            fresh.push(format!(
                "{address} {name}: spent {}",
                out[0]["budget_spent"]
            ));
        }
    }
    assert!(
        fresh.is_empty(),
        "the same rows with a fresh budget: {fresh:#?}"
    );
}

/// Values near `1e15` put on the grid `2^-k` (`1e15 * 2^10` is near `2^60`) sum beyond `2^63`:
/// the sum must be the column store's exactly, for a `DOUBLE` and a `DECIMAL` column, for an
/// integer column near `2^63` summed as floats, with and without a condition, and for
/// several grids; at the prompt too, the statement answers.
#[test]
fn float_sums_beyond_two_to_the_63_are_the_column_stores() {
    let Some(url) = spark_server() else {
        return;
    };
    let spark = client(&url);
    let mut cleanup = Cleanup::new(&spark);
    let table = unique("wide");
    cleanup.made(&format!("TABLE {table}"));
    execute(
        &spark,
        &format!("CREATE TABLE {table} (x DOUBLE, d DECIMAL(20, 3), i BIGINT) USING parquet"),
    );
    let rows: [(&str, &str, i64); 12] = [
        ("999999999999999.9", "999999999999999.900", i64::MAX),
        ("1000000000000000.5", "1000000000000000.500", i64::MAX - 1),
        (
            "1000000000000000.25",
            "1000000000000000.250",
            9_007_199_254_740_993,
        ),
        (
            "1500000000000000.125",
            "1500000000000000.125",
            -9_007_199_254_740_993,
        ),
        (
            "9990000000000000",
            "9990000000000000.000",
            4_611_686_018_427_387_904,
        ),
        ("10000000000000005", "99999999999999999.999", 1),
        ("-3", "-3.000", -1),
        ("0.3", "0.300", 0),
        ("123456789012345.67", "123456789012345.670", 3),
        ("4503599627370495.5", "4503599627370495.500", i64::MIN),
        ("2.5", "2.500", 5),
        ("-2.5", "-2.500", -5),
    ];
    let values: Vec<String> = rows
        .iter()
        .map(|(x, d, i)| format!("(CAST('{x}' AS DOUBLE), CAST('{d}' AS DECIMAL(20, 3)), {i})"))
        .collect();
    execute(
        &spark,
        &format!("INSERT INTO {table} VALUES {}", values.join(", ")),
    );
    let csv: String = std::iter::once("x,d,i".to_string())
        .chain(rows.iter().map(|(x, d, i)| format!("{x},{d},{i}")))
        .collect::<Vec<_>>()
        .join("\n");
    let dir = tempfile::tempdir().expect("tempdir");
    let memory = memory(dir.path(), &(csv + "\n"));
    let source = open(&url, &[&table]);
    assert_eq!(source.schema(), memory.schema());
    let big = number(0, CmpOp::Gt, 1e15);
    let mut differ = Vec::new();
    for (column, lo, hi, ks) in [
        (0usize, 0.0, 1e16, vec![0u32, 10, 20, 52]),
        (0, -1e16, 1e16, vec![10]),
        (1, 0.0, 1e16, vec![0, 10, 30]),
        (1, -1e17, 1e17, vec![10]),
        (2, 0.0, 1e19, vec![0, 4]),
        (2, -1e19, 1e19, vec![0]),
    ] {
        for k in ks {
            let clamp = Clamp::Float { lo, hi, k };
            for pred in [None, Some(&big)] {
                let (a, b) = (
                    memory.sum_clamped(column, pred, clamp),
                    source.sum_clamped(column, pred, clamp),
                );
                if format!("{a:?}") != format!("{b:?}") {
                    differ.push(format!(
                        "column {column} {clamp:?} {pred:?}: column store {a:?}, Spark {b:?}"
                    ));
                }
            }
        }
    }
    assert!(differ.is_empty(), "{differ:#?}");
    let mut s = session(dir.path());
    let out = run_json(
        &mut s,
        &format!("LOAD SPARK '{url}' TABLE {table} AS w; SUM x CLAMP (0, 1e16) WITH EPS 1;"),
    );
    assert_eq!(out[1]["kind"], "sum", "{}", out[1]);
}

/// A float column holding NaN, the infinities and a negative zero answers as the PostgreSQL
/// source does (`a_numeric_beyond_the_float_range_is_no_oracle` in
/// `tests/data/postgres_attack.rs`): NaN above every number and equal to itself, an infinity a
/// value, `-0.0 = 0.0`; a clamped NaN is the upper bound. (dpq's own readers differ: a CSV
/// cell `NaN` makes its column text, and the Parquet reader reads a value that is not finite
/// as missing; so the Spark and PostgreSQL sources answer otherwise than the Parquet source
/// for the same values. Not a leak, but the differential test's promise does not cover
/// values that are not finite.)
#[test]
fn nan_and_infinities_answer_as_postgresql_does() {
    let Some(url) = spark_server() else {
        return;
    };
    let spark = client(&url);
    let mut cleanup = Cleanup::new(&spark);
    let table = unique("nan");
    cleanup.made(&format!("TABLE {table}"));
    execute(
        &spark,
        &format!("CREATE TABLE {table} (x DOUBLE, k BIGINT) USING parquet"),
    );
    let cells = ["NaN", "Infinity", "-Infinity", "-0.0", "0.0", "1.5", ""];
    let values: Vec<String> = cells
        .iter()
        .map(|x| match *x {
            "" => "(NULL, 1)".to_string(),
            x => format!("(CAST('{x}' AS DOUBLE), 1)"),
        })
        .collect();
    execute(
        &spark,
        &format!("INSERT INTO {table} VALUES {}", values.join(", ")),
    );
    let floats: Vec<f64> = cells.iter().filter_map(|x| x.parse().ok()).collect();
    assert_eq!(floats.len(), 6);
    // SQL's order: NaN above every number.
    let order = |v: f64, x: f64| {
        if v.is_nan() {
            std::cmp::Ordering::Greater
        } else {
            v.partial_cmp(&x).expect("no NaN")
        }
    };
    let holds = |op: CmpOp, o: std::cmp::Ordering| {
        use std::cmp::Ordering::*;
        match op {
            CmpOp::Eq => o == Equal,
            CmpOp::Ne => o != Equal,
            CmpOp::Lt => o == Less,
            CmpOp::Le => o != Greater,
            CmpOp::Gt => o == Greater,
            CmpOp::Ge => o != Less,
        }
    };
    let source = open(&url, &[&table]);
    let mut differ = Vec::new();
    for x in [0.0, 1e308, f64::NEG_INFINITY] {
        for op in CmpOp::ALL {
            let n = floats.iter().filter(|v| holds(op, order(**v, x))).count() as u64;
            for (pred, expected) in [
                (number(0, op, x), n),
                (Predicate::Not(Box::new(number(0, op, x))), 6 - n),
            ] {
                let got = source.count(&pred);
                if !matches!(got, Ok(g) if g == expected) {
                    differ.push(format!("{pred:?}: {got:?}, not {expected}"));
                }
            }
        }
    }
    let dims = [(0usize, Buckets::Cuts(vec![0.0, 1.0, 1e308]))];
    // Below 0: -inf; [0, 1): -0.0, 0.0; [1, 1e308): 1.5; from 1e308: inf, NaN; missing.
    let cells_got = source.count_cells(&dims);
    if !matches!(&cells_got, Ok(c) if c == &[1, 2, 1, 2, 1]) {
        differ.push(format!("cells: {cells_got:?}"));
    }
    for (clamp, expected) in [
        // -1, 0, 0, 1.5, 2, 2 on the grid 1/8.
        (
            Clamp::Float {
                lo: -1.0,
                hi: 2.0,
                k: 3,
            },
            (36i128, 6u64),
        ),
        // 0, 0, 0, 2 (1.5 rounded half away from zero), 1e16, 1e16.
        (
            Clamp::Float {
                lo: 0.0,
                hi: 1e16,
                k: 0,
            },
            (20_000_000_000_000_002, 6),
        ),
    ] {
        let got = source.sum_clamped(0, None, clamp);
        if !matches!(got, Ok(g) if g == expected) {
            differ.push(format!("{clamp:?}: {got:?}, not {expected:?}"));
        }
    }
    assert!(differ.is_empty(), "{differ:#?}");
}

/// Was a break, now fixed and held: Spark reads files named in place of a table (`parquet.`/dir``, Spark's
/// `spark.sql.runSQLOnFiles`, on by default), and dpq lets a `LOAD` name them so:
/// `LOAD SPARK '...' TABLE parquet."file:/.../warehouse/people" AS t` reads the files of the
/// table `people`, which `DESCRIBE TABLE EXTENDED` does not describe, so the ledger is keyed
/// by the name as spelled: the same rows with a fresh budget, and another for every spelling
/// of the path (`/dir`, `file:/dir`, `/dir/`, `/dir/*.parquet`, ...). It also reads any file
/// the server can (`text."/etc/hostname"`), which no curator made a table of. A fix: set
/// `spark.sql.runSQLOnFiles` to `false` on dpq's session (it is a session setting; the name
/// is then "no table of that name"), or refuse a relation Spark does not describe.
#[test]
fn a_table_loaded_by_the_path_of_its_files_has_a_fresh_ledger() {
    let Some(url) = spark_server() else {
        return;
    };
    let spark = client(&url);
    let mut cleanup = Cleanup::new(&spark);
    let table = people(&spark, &mut cleanup, "files", 30);
    let described = spark
        .sql(&format!("DESCRIBE TABLE EXTENDED {table}"))
        .and_then(|df| df.collect())
        .expect("described");
    let location = described
        .iter()
        .find_map(|r| match r.values() {
            [Cell::String(k), Cell::String(v), ..] if k == "Location" => Some(v.clone()),
            _ => None,
        })
        .expect("a managed table has a location");
    let path = location.trim_start_matches("file:").to_string();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = session(dir.path());
    let out = run_json(
        &mut s,
        &format!("LOAD SPARK '{url}' TABLE {table} AS a; COUNT WHERE age > 3 WITH EPS 0.5;"),
    );
    assert_eq!(out[1]["kind"], "count", "{}", out[1]);
    let mut fresh = Vec::new();
    for (i, name) in [
        format!("parquet.\"{location}\""),
        format!("parquet.\"{path}\""),
        format!("parquet.\"{path}/\""),
    ]
    .iter()
    .enumerate()
    {
        let out = run_json(&mut s, &format!("LOAD SPARK '{url}' TABLE {name} AS f{i};"));
        if out[0]["kind"] == "loaded" && out[0]["budget_spent"] != 0.5 {
            fresh.push(format!(
                "{name}: n = {}, spent {}",
                out[0]["n"], out[0]["budget_spent"]
            ));
        }
    }
    assert!(
        fresh.is_empty(),
        "the table's own files, loaded by their path, with a fresh budget: {fresh:#?}"
    );
}

/// Was a break, now fixed and held: an integer column's clamped sum stays within its clamp
/// whatever the column holds when the question is asked. A view loaded with a `BIGINT`
/// column `x` is replaced, with as many rows, by one whose `x` is text (`'1e30'`, `'5'`,
/// `'x'`): the row count is the same, so the question is asked. The clamp was written on the
/// column as it is (`CASE WHEN x < lo THEN lo WHEN x > hi THEN hi ELSE x END`), and Spark
/// compares text with a `BIGINT` by casting it to one: `'1e30'` is no `BIGINT`, both
/// comparisons are missing, and the value passes unclamped. With bounds of `2^41` (the
/// decimal path) the sum was `10^30 + 5`, far beyond `n * 2^41`: one row's contribution
/// unbounded. With bounds of 9 (the `BIGINT` path) the sum is a `DOUBLE` whose text
/// (`1.0E30`) is no integer, and was answered as 0. Fixed: the clamped value is
/// `CAST(x AS BIGINT)` (exact for every integer column), so every term is in `[lo, hi]`:
/// a value that is no integer is missing, and both paths answer alike.
#[test]
fn an_integer_column_retyped_to_text_stays_within_its_clamp() {
    let Some(url) = spark_server() else {
        return;
    };
    let spark = client(&url);
    let mut cleanup = Cleanup::new(&spark);
    let view = format!("sumattack_retyped_{}", std::process::id());
    cleanup.made(&format!("VIEW {view}"));
    execute(
        &spark,
        &format!("CREATE VIEW {view} AS SELECT * FROM VALUES (1L), (2L), (3L) AS t(x)"),
    );
    let source = open(&url, &[&view]);
    assert_eq!(source.n_rows(), 3);
    execute(
        &spark,
        &format!(
            "CREATE OR REPLACE VIEW {view} AS \
             SELECT * FROM VALUES ('1e30'), ('5'), ('x') AS t(x)"
        ),
    );
    let mut wrong = Vec::new();
    for hi in [9i64, 1 << 41] {
        let clamp = Clamp::Int { lo: 0, hi, k: 0 };
        match source.sum_clamped(0, None, clamp) {
            Ok((sum, n)) if sum != 5 || n != 1 => {
                wrong.push(format!("{clamp:?}: ({sum}, {n}), not (5, 1)"))
            }
            Ok(_) => {}
            Err(e) => wrong.push(format!("{clamp:?}: {e}")),
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// Sums at the edges of the `BIGINT` path are the column store's exactly: bounds whose terms
/// reach just below `2^40` (the `BIGINT` path) and exactly `2^40` (the decimal path), on the
/// grids `2^0` to `2^2` and, for integers, `2^22` and `2^62`; halves at `2^39` rounded half
/// away from zero (`-2.5` to `-3`), `-0.0`, the largest double below `2.5` (`2.499999` as a
/// decimal, which holds six places), a missing row,
/// `BIGINT`s at `i64::MIN` and `i64::MAX`, and `DOUBLE`, `DECIMAL(20, 6)`, `FLOAT`, `BIGINT`,
/// `INT` and `SMALLINT` columns, with and without a condition.
#[test]
fn sums_at_the_edges_of_the_bigint_path_are_the_column_stores() {
    let Some(url) = spark_server() else {
        return;
    };
    let spark = client(&url);
    let mut cleanup = Cleanup::new(&spark);
    let table = format!("sumattack_edges_{}", std::process::id());
    cleanup.made(&format!("TABLE {table}"));
    execute(
        &spark,
        &format!(
            "CREATE TABLE {table} (x DOUBLE, d DECIMAL(20, 6), f FLOAT, i BIGINT, j INT, \
             s SMALLINT) USING parquet"
        ),
    );
    let rows: [[&str; 6]; 9] = [
        [
            "549755813887.5",
            "549755813887.5",
            "2.5",
            "1099511627775",
            "2147483647",
            "32767",
        ],
        [
            "-549755813887.5",
            "-549755813887.5",
            "-2.5",
            "-1099511627776",
            "-2147483648",
            "-32768",
        ],
        ["0.5", "0.5", "0.5", "9223372036854775807", "1", "1"],
        ["-0.5", "-0.5", "-0.5", "-9223372036854775808", "-1", "-1"],
        ["-0.0", "-0.0", "-0.0", "0", "0", "0"],
        [
            "1099511627775.75",
            "1099511627775.75",
            "1048575.5",
            "1099511627776",
            "7",
            "3",
        ],
        ["2.4999999999999996", "2.499999", "3.5", "5", "-7", "-3"],
        ["-2.5", "-2.5", "-1048575.5", "-1099511627775", "-2", "-2"],
        ["", "", "", "", "", ""],
    ];
    let types = [
        "DOUBLE",
        "DECIMAL(20, 6)",
        "FLOAT",
        "BIGINT",
        "INT",
        "SMALLINT",
    ];
    let values: Vec<String> = rows
        .iter()
        .map(|row| {
            let cells: Vec<String> = row
                .iter()
                .zip(types)
                .map(|(v, t)| match *v {
                    "" => format!("CAST(NULL AS {t})"),
                    v => format!("CAST('{v}' AS {t})"),
                })
                .collect();
            format!("({})", cells.join(", "))
        })
        .collect();
    execute(
        &spark,
        &format!("INSERT INTO {table} VALUES {}", values.join(", ")),
    );
    let csv: String = std::iter::once("x,d,f,i,j,s".to_string())
        .chain(rows.iter().map(|row| row.join(",")))
        .collect::<Vec<_>>()
        .join("\n");
    let dir = tempfile::tempdir().expect("tempdir");
    let memory = memory(dir.path(), &(csv + "\n"));
    let source = open(&url, &[&table]);
    assert_eq!(source.schema(), memory.schema());
    let p40 = 2f64.powi(40);
    let mut clamps = Vec::new();
    for (lo, hi, k) in [
        (-(p40 - 1.0), p40 - 1.0, 0),
        (-p40, p40, 0),
        (-p40 / 2.0, p40 / 2.0, 0),
        (0.0, p40 - 1.0, 0),
        (-(p40 / 2.0 - 0.5), p40 / 2.0 - 0.5, 1),
        (-p40 / 4.0, p40 / 4.0, 2),
        (-(p40 / 4.0 - 0.25), p40 / 4.0 - 0.25, 2),
        (-3.0, 3.0, 0),
        (-3.0, 3.0, 2),
    ] {
        clamps.push(Clamp::Float { lo, hi, k });
    }
    let m40 = (1i64 << 40) - 1;
    let ints = [
        Clamp::Int {
            lo: -m40,
            hi: m40,
            k: 0,
        },
        Clamp::Int {
            lo: -m40 - 1,
            hi: m40 + 1,
            k: 0,
        },
        Clamp::Int {
            lo: -m40,
            hi: m40,
            k: 22,
        },
        Clamp::Int {
            lo: i64::MIN,
            hi: i64::MAX,
            k: 0,
        },
        Clamp::Int {
            lo: -5,
            hi: 3,
            k: 62,
        },
    ];
    let positive = number(0, CmpOp::Gt, 0.0);
    let mut differ = Vec::new();
    for column in 0..6 {
        let mut these = clamps.clone();
        if column >= 3 {
            these.extend(ints);
        }
        for clamp in these {
            for pred in [None, Some(&positive)] {
                let (a, b) = (
                    memory.sum_clamped(column, pred, clamp),
                    source.sum_clamped(column, pred, clamp),
                );
                if format!("{a:?}") != format!("{b:?}") {
                    differ.push(format!(
                        "column {column} {clamp:?} {pred:?}: column store {a:?}, Spark {b:?}"
                    ));
                }
            }
        }
    }
    assert!(differ.is_empty(), "{differ:#?}");
}
