//! Spark tables, built with the `spark` feature, against a real Spark Connect server named by
//! `DPQ_TEST_SPARK` (`bash .ci/spark.sh` starts one on loopback and prints its address; CI
//! sets `DPQ_REQUIRE_SPARK`, and then its absence fails these tests).
//!
//! The differential test over random conditions, cubes and sums is in `tests/data/sources.rs`;
//! here: `DECIMAL` and narrow integer columns read as the column store reads their text, one
//! seeded script that answers alike over CSV, Parquet, PostgreSQL and Spark, a Spark table at
//! the prompt, and a Spark table served to analysts.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use dpq::data::{
    load_csv, open_spark, Buckets, Clamp, CmpOp, LoadOptions, Predicate, Source, Value,
};
use dpq::eval::{Randomness, Session};
use dpq::privacy::Store;
use dpq::spark_connect::{SparkSession, SparkSessionBuilder};
use parquet::arrow::ArrowWriter;
use serde_json::Value as Json;

use crate::common;
use common::serve::{error, kinds, Server, Setup};
use common::{postgres_server, run_json, spark_server, write};

fn connect(url: &str) -> SparkSession {
    SparkSessionBuilder::new()
        .remote(url)
        .get_or_create()
        .expect("the Spark server")
}

/// Runs each statement of `sql` on Spark.
fn exec(session: &SparkSession, sql: &[String]) {
    for statement in sql {
        let df = session.sql(statement).expect("a statement");
        df.collect()
            .unwrap_or_else(|e| panic!("{statement}: {e:?}"));
    }
}

/// A table name of this process's own: other test processes share the server.
fn unique(stem: &str) -> String {
    format!("{stem}_{}", std::process::id())
}

/// A `DECIMAL` column is read as the float nearest its decimal text, and narrow integers as
/// integers, as the column store reads the same text from a CSV file: conditions and clamped
/// sums (whose terms are exact decimal integers, summed exactly) answer the same.
#[test]
fn decimal_and_narrow_integer_columns_answer_as_their_text() {
    let Some(url) = spark_server() else {
        return;
    };
    let values = [
        ("0.10", 1, 3),
        ("0.30", -2, 7),
        ("2.25", 127, -128),
        ("-3.50", 0, 0),
        ("1234567.89", -32768, 99),
        ("", 5, 5),
        ("0.05", 7, 1),
        ("-0.05", 8, 2),
        ("2.50", 9, 3),
        ("99999999.99", 10, 4),
    ];
    let table = unique("Decimals");
    let rows: Vec<String> = values
        .iter()
        .map(|(p, a, b)| {
            let p = if p.is_empty() { "NULL" } else { p };
            format!("({p}, {a}, {b})")
        })
        .collect();
    let session = connect(&url);
    exec(
        &session,
        &[
            format!("DROP TABLE IF EXISTS {table}"),
            format!("CREATE TABLE {table} (price DECIMAL(10, 2), small SMALLINT, tiny TINYINT) USING parquet"),
            format!("INSERT INTO {table} VALUES {}", rows.join(", ")),
        ],
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let mut csv = String::from("price,small,tiny\n");
    for (p, a, b) in values {
        csv.push_str(&format!("{p},{a},{b}\n"));
    }
    let path = write(dir.path(), "decimals.csv", &csv);
    let memory = Source::Memory(
        load_csv(&path, &LoadOptions::default())
            .expect("the CSV loads")
            .table,
    );
    let opened = open_spark(&url, std::slice::from_ref(&table)).expect("the table opens");
    let spark = Source::Spark(Box::new(opened.table));
    assert_eq!(spark.schema(), memory.schema());
    let cmp = |column: usize, op: CmpOp, x: f64| Predicate::Compare {
        column,
        op,
        value: Value::Number(x),
    };
    for x in [0.1, 0.3, 0.05, -0.05, 2.25, 2.5, 1234567.89, 0.0] {
        for op in [CmpOp::Eq, CmpOp::Lt, CmpOp::Le, CmpOp::Ge, CmpOp::Ne] {
            let p = cmp(0, op, x);
            assert_eq!(spark.count(&p).ok(), memory.count(&p).ok(), "{p:?}");
        }
    }
    for column in [1, 2] {
        for x in [-128.0, -2.5, 0.0, 7.0, 127.5] {
            let p = cmp(column, CmpOp::Le, x);
            assert_eq!(spark.count(&p).ok(), memory.count(&p).ok(), "{p:?}");
        }
    }
    for (lo, hi) in [(-5.0, 5.0), (0.0, 1.0e8), (-1.0e16, 1.0e16)] {
        for k in [0, 1, 3, 20] {
            let clamp = Clamp::Float { lo, hi, k };
            let filter = cmp(1, CmpOp::Ge, 0.0);
            for pred in [None, Some(&filter)] {
                assert_eq!(
                    spark.sum_clamped(0, pred, clamp).ok(),
                    memory.sum_clamped(0, pred, clamp).ok(),
                    "{clamp:?} {pred:?}"
                );
            }
        }
    }
    let dims = [(0, Buckets::Cuts(vec![0.0, 0.1, 2.5]))];
    assert_eq!(
        spark.count_cells(&dims).ok(),
        memory.count_cells(&dims).ok()
    );
    exec(&session, &[format!("DROP TABLE IF EXISTS {table}")]);
}

/// People for the seeded script: an age, a sex, an income; some missing.
fn people(n: i64) -> Vec<(Option<i64>, Option<&'static str>, i64)> {
    (0..n)
        .map(|i| {
            let age = (i % 11 != 0).then_some(18 + (i * 37) % 70);
            let sex = match i % 7 {
                0 => None,
                1 | 3 | 5 => Some("F"),
                _ => Some("M"),
            };
            (age, sex, (i * 7919) % 100_000)
        })
        .collect()
}

/// The statements of the seeded script over table `t`, loaded by `load`.
fn script(load: &str) -> String {
    format!(
        "{load} AS t; COUNT WHERE age <= 30 WITH EPS 0.3; \
         COUNT WHERE sex = 'F' AND NOT (age BETWEEN 40 AND 60) WITH EPS 0.2; \
         CUBE BY sex ('F', 'M'), age (30, 50); HISTOGRAM WITH EPS 0.2; \
         SUM income CLAMP (0, 50000) WHERE sex = 'M' WITH EPS 0.2;"
    )
}

/// What a result says, but its noise: each result but the `LOAD`'s, without the noisy values
/// and their intervals. A seeded session draws each release's noise from the seed and the
/// data's own identity (its content hash, or its server's key), so that two stores never share
/// noise and the difference of their answers says nothing exact: the same rows in two stores
/// have noise of their own. Everything else must agree.
fn answers(out: &[Json]) -> Vec<Json> {
    fn strip(v: &mut Json) {
        match v {
            Json::Object(m) => {
                m.retain(|k, _| {
                    !matches!(
                        k.as_str(),
                        "noisy" | "noisy_sum" | "noisy_count" | "interval95" | "bayes"
                    )
                });
                m.values_mut().for_each(strip);
            }
            Json::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    out.iter()
        .skip(1)
        .map(|o| {
            let mut o = o.clone();
            strip(&mut o);
            o
        })
        .collect()
}

/// One seeded script over the same people as a CSV file, Parquet files, a PostgreSQL table (with
/// `DPQ_TEST_POSTGRES`) and a Spark table: the same statements answer alike, noise aside
/// (whose draws are the data's own, see [`answers`]); two runs over one store answer
/// identically, noise included.
#[test]
fn one_seeded_script_answers_alike_on_every_source() {
    let Some(url) = spark_server() else {
        return;
    };
    let people = people(700);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut csv = String::from("age,sex,income\n");
    for (age, sex, income) in &people {
        let age = age.map(|a| a.to_string()).unwrap_or_default();
        csv.push_str(&format!("{age},{},{income}\n", sex.unwrap_or_default()));
    }
    let csv_path = write(dir.path(), "people.csv", &csv);
    let pq = dir.path().join("pq");
    std::fs::create_dir(&pq).expect("a directory");
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            "age",
            Arc::new(Int64Array::from_iter(people.iter().map(|p| p.0))),
        ),
        (
            "sex",
            Arc::new(StringArray::from_iter(people.iter().map(|p| p.1))),
        ),
        (
            "income",
            Arc::new(Int64Array::from_iter_values(people.iter().map(|p| p.2))),
        ),
    ];
    let batch = RecordBatch::try_from_iter(columns).expect("a batch");
    let file = std::fs::File::create(pq.join("part-0.parquet")).expect("a file");
    let mut writer = ArrowWriter::try_new(file, batch.schema(), None).expect("a writer");
    writer.write(&batch).expect("written");
    writer.close().expect("closed");
    let table = unique("Seeded");
    exec(
        &connect(&url),
        &[
            format!("DROP TABLE IF EXISTS {table}"),
            format!(
                "CREATE TABLE {table} USING parquet LOCATION '{}'",
                pq.display()
            ),
        ],
    );
    let mut loads = vec![
        format!("LOAD '{}'", csv_path.display()),
        format!("LOAD '{}'", pq.display()),
        format!("LOAD SPARK '{url}' TABLE {table}"),
    ];
    if let Some(conninfo) = postgres_server() {
        let pg_table = unique("seeded");
        let mut client = postgres::Client::connect(&conninfo, postgres::NoTls).expect("the server");
        client
            .batch_execute(&format!(
                "DROP TABLE IF EXISTS {pg_table}; CREATE TABLE {pg_table} (age int8, sex text, income int8)"
            ))
            .expect("the table");
        for (age, sex, income) in &people {
            client
                .execute(
                    &format!("INSERT INTO {pg_table} VALUES ($1, $2, $3)"),
                    &[age, sex, income],
                )
                .expect("a row");
        }
        loads.push(format!("LOAD POSTGRES '{conninfo}' TABLE {pg_table}"));
    }
    let mut first: Option<Vec<Json>> = None;
    for load in &loads {
        let state = tempfile::tempdir().expect("tempdir");
        let mut s = Session::with_store(Randomness::Seeded(26), Store::dir(state.path()));
        let out = run_json(&mut s, &script(load));
        let kinds: Vec<&str> = out
            .iter()
            .map(|o| o["kind"].as_str().unwrap_or("?"))
            .collect();
        assert_eq!(
            kinds,
            ["loaded", "count", "count", "cube", "histogram", "sum"],
            "{load}: {out:?}"
        );
        let mut again = Session::with_store(
            Randomness::Seeded(26),
            Store::dir(state.path().join("again")),
        );
        let twice = run_json(&mut again, &script(load));
        assert_eq!(out[1..], twice[1..], "{load}: a seeded run is reproducible");
        let answers = answers(&out);
        match &first {
            None => first = Some(answers),
            Some(expected) => assert_eq!(&answers, expected, "{load}"),
        }
    }
    exec(&connect(&url), &[format!("DROP TABLE IF EXISTS {table}")]);
}

fn session(dir: &Path) -> Session {
    Session::with_store(Randomness::Os, Store::dir(dir.join("state")))
}

fn message(out: &Json) -> &str {
    out["message"].as_str().unwrap_or_default()
}

/// At the prompt: `EXPLAIN LOAD SPARK`, the table and its questions, its ledger found again
/// however its name is qualified; rows added under it refuse the next question with nothing
/// spent; a token in the address is refused and never shown; a table that is gone, or a server
/// that is not there, is one fixed error.
#[test]
fn a_spark_table_at_the_prompt() {
    let Some(url) = spark_server() else {
        return;
    };
    let table = unique("Visits");
    let session_spark = connect(&url);
    exec(
        &session_spark,
        &[
            format!("DROP TABLE IF EXISTS {table}"),
            format!("CREATE TABLE {table} (Age BIGINT, Name STRING, seen DATE) USING parquet"),
            format!(
                "INSERT INTO {table} SELECT CAST(id % 90 AS BIGINT), \
                 CASE WHEN id % 3 = 0 THEN 'bob' ELSE 'Zoë' END, NULL FROM range(400)"
            ),
        ],
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = session(dir.path());
    let out = run_json(
        &mut s,
        &format!(
            "EXPLAIN LOAD SPARK '{url}' TABLE {table} AS v; LOAD SPARK '{url}' TABLE {table} AS v; \
             COUNT WHERE Name = 'bob' AND NOT (Age <= 30) WITH EPS 0.5; \
             SUM Age CLAMP (0, 100) WITH EPS 0.1; COUNT BY Name WITH EPS 0.1;"
        ),
    );
    let kinds: Vec<&str> = out
        .iter()
        .map(|o| o["kind"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(kinds[..4], ["explain", "loaded", "count", "sum"], "{out:?}");
    assert_eq!(out[1]["n"], 400);
    let explained = serde_json::to_string(&out[0]).expect("JSON");
    assert!(explained.contains("asks Spark"), "{explained}");
    assert_eq!(
        out[1]["warnings"].as_array().map(Vec::len),
        Some(1),
        "the date column is left out: {}",
        out[1]
    );
    let spent = run_json(&mut s, "SHOW BUDGET;")[0]["spent"].clone();

    // Loaded again, qualified by its database and catalog: the same ledger.
    for name in [
        format!("default.{table}"),
        format!("spark_catalog.default.{table}"),
    ] {
        let again = run_json(
            &mut s,
            &format!("LOAD SPARK '{url}' TABLE {name} AS w_{};", name.len()),
        );
        assert_eq!(again[0]["budget_spent"], spent, "{name}: {}", again[0]);
    }

    // A token is never written in a statement, and never shown.
    let out = run_json(
        &mut s,
        &format!("LOAD SPARK '{url}/;token=hunter2' TABLE {table} AS t2;"),
    );
    assert!(
        message(&out[0]).contains("SPARK_CONNECT_AUTHENTICATE_TOKEN"),
        "{}",
        out[0]
    );
    let history = run_json(&mut s, "USE v; SHOW HISTORY;");
    let everything = format!("{out:?} {history:?}");
    assert!(!everything.contains("hunter2"), "{everything}");

    // A row added under the table: refused, nothing spent.
    exec(
        &session_spark,
        &[format!("INSERT INTO {table} VALUES (7, 'amy', NULL)")],
    );
    let out = run_json(&mut s, "USE v; COUNT WHERE Age > 3 WITH EPS 0.1;");
    assert!(
        message(&out[1]).contains("changed") && message(&out[1]).contains("nothing was spent"),
        "{}",
        out[1]
    );
    assert_eq!(run_json(&mut s, "SHOW BUDGET;")[0]["spent"], spent);

    // The table is gone: a fixed message with Spark's SQLSTATE, none of its text.
    exec(&session_spark, &[format!("DROP TABLE {table}")]);
    let out = run_json(&mut s, "COUNT WHERE Age > 3 WITH EPS 0.1;");
    let m = message(&out[0]);
    assert!(m.contains("Spark could not answer (SQLSTATE"), "{m}");
    assert!(
        !m.to_lowercase().contains("cannot be found") && !m.contains(&table),
        "{m}"
    );
    assert_eq!(run_json(&mut s, "SHOW BUDGET;")[0]["spent"], spent);

    // Not a table, not a server, not an address.
    let out = run_json(
        &mut s,
        &format!("LOAD SPARK '{url}' TABLE no_such_table AS y;"),
    );
    assert!(
        message(&out[0]).contains("no table of that name"),
        "{}",
        out[0]
    );
    let out = run_json(&mut s, "LOAD SPARK 'sc://127.0.0.1:1' TABLE t AS z;");
    assert!(
        message(&out[0]).contains("cannot connect to the Spark Connect server"),
        "{}",
        out[0]
    );
    let out = run_json(&mut s, "LOAD SPARK 'http://127.0.0.1:1' TABLE t AS z;");
    assert!(message(&out[0]).contains("sc://host:port"), "{}", out[0]);
    let out = run_json(
        &mut s,
        &format!("LOAD SPARK '{url}' TABLE t AS z NO HEADER;"),
    );
    assert!(message(&out[0]).contains("NO HEADER"), "{}", out[0]);
}

/// A served dataset in a Spark table: checked by `dpq check-policy` and answered through the
/// HTTP API; rows added under it refuse the next question with nothing spent.
#[test]
fn a_spark_dataset_is_served() {
    let Some(url) = spark_server() else {
        return;
    };
    let table = unique("served");
    let spark = connect(&url);
    exec(
        &spark,
        &[
            format!("DROP TABLE IF EXISTS {table}"),
            format!(
                "CREATE TABLE {table} USING parquet AS \
                 SELECT id, CAST(18 + id % 70 AS BIGINT) AS age FROM range(1, 501)"
            ),
        ],
    );
    let setup = Setup::new(1);
    let policy = format!(
        "[[dataset]]\nname = \"lake\"\nid = \"people-lake\"\nspark = \"{url}\"\ntable = \"default.{table}\"\nbudget = 1\n\
         \n[[analyst]]\nname = \"a0\"\ntoken_hash = \"{}\"\nbudgets = {{ lake = 0.5 }}\n",
        setup.tokens[0].1
    );
    let path = setup.path("policy.toml");
    std::fs::write(&path, &policy).expect("write the policy");
    let check = Command::new(env!("CARGO_BIN_EXE_dpq"))
        .arg("check-policy")
        .arg(&path)
        .output()
        .expect("dpq check-policy");
    let said = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success(),
        "{said} {}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(
        said.contains(&format!("Spark table default.{table}")),
        "{said}"
    );
    let server = Server::start(&setup, &path);
    let a = setup.token(0);
    let (_, body) = server.run(
        a,
        "USE lake; COUNT WHERE age < 30 WITH EPS 0.2; SHOW BUDGET;",
    );
    assert_eq!(kinds(&body), ["using", "count", "budget"], "{body}");
    assert_eq!(body["results"][2]["json"]["spent"], 0.2, "{body}");
    exec(&spark, &[format!("INSERT INTO {table} VALUES (0, 20)")]);
    let (_, body) = server.run(a, "USE lake; COUNT WHERE age < 40 WITH EPS 0.2;");
    assert!(error(&body).contains("changed"), "{body}");
    assert_eq!(
        server.budget(a)["spent"],
        0.2,
        "nothing spent on the refusal"
    );
    exec(&spark, &[format!("DROP TABLE IF EXISTS {table}")]);
}
