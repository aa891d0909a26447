//! Attacks on `LOAD POSTGRES`: answers that must be the column store's exactly, a failure of
//! the server that must not depend on the rows, and a ledger that must be the table's however
//! its server is spelled.
//!
//! The server is named by `DPQ_TEST_POSTGRES` (see `tests/data/sources.rs`); without it these tests
//! are left out with a note, unless `DPQ_REQUIRE_POSTGRES` is set.

use std::path::Path;

use dpq::data::{
    load_csv, open_postgres, Buckets, Clamp, CmpOp, LoadOptions, Predicate, Source, Value,
};
use dpq::eval::{Randomness, Session};
use dpq::privacy::Store;

use crate::common;
use common::{postgres_server, run_json, write};

/// Runs `sql` on the server.
fn execute(conninfo: &str, sql: &str) {
    let mut client = postgres::Client::connect(conninfo, postgres::NoTls).expect("the server");
    client.batch_execute(sql).expect("the statements run");
}

fn session(dir: &Path) -> Session {
    Session::with_store(Randomness::Os, Store::dir(dir.join("state")))
}

fn compare(column: usize, op: CmpOp, x: f64) -> Predicate {
    Predicate::Compare {
        column,
        op,
        value: Value::Number(x),
    }
}

/// An `int8` cell is compared as an integer, as the column store compares it: never rounded
/// to a `float8` (where `9007199254740993 = 9007199254740992.0` would hold), at the extremes
/// of the type too, in a condition, an `IN` list, a `BETWEEN` and a histogram's cuts.
#[test]
fn integers_beyond_two_to_the_53_compare_exactly() {
    let Some(conninfo) = postgres_server() else {
        return;
    };
    let ages = [
        Some(9007199254740993i64),
        None,
        Some(9007199254740992),
        Some(9007199254740991),
        Some(i64::MIN),
        Some(i64::MAX),
        Some(i64::MAX - 1),
        Some(30),
    ];
    let table = format!("atk_ints_{}", std::process::id());
    let values: Vec<String> = ages
        .iter()
        .map(|a| format!("({})", a.map_or("NULL".to_string(), |a| a.to_string())))
        .collect();
    execute(
        &conninfo,
        &format!(
            "DROP TABLE IF EXISTS {table}; CREATE TABLE {table} (age int8); \
             INSERT INTO {table} VALUES {};",
            values.join(", ")
        ),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    // A second column, so that a row with no age is no blank line.
    let csv: String = std::iter::once("age,k".to_string())
        .chain(
            ages.iter()
                .map(|a| format!("{},1", a.map_or(String::new(), |a| a.to_string()))),
        )
        .collect::<Vec<_>>()
        .join("\n");
    let path = write(dir.path(), "ages.csv", &(csv + "\n"));
    let memory = Source::Memory(
        load_csv(&path, &LoadOptions::default())
            .expect("the CSV loads")
            .table,
    );
    let database = Source::Postgres(Box::new(
        open_postgres(&conninfo, &table)
            .expect("the table opens")
            .table,
    ));
    let two53 = 9007199254740992.0;
    let mut preds = Vec::new();
    for x in [two53, i64::MAX as f64, i64::MIN as f64, 30.5, 30.0] {
        for op in CmpOp::ALL {
            preds.push(compare(0, op, x));
            preds.push(Predicate::Not(Box::new(compare(0, op, x))));
        }
    }
    preds.push(Predicate::In {
        column: 0,
        values: vec![Value::Number(two53), Value::Number(30.5)],
    });
    preds.push(Predicate::In {
        column: 0,
        values: vec![Value::Number(30.5)],
    });
    preds.push(Predicate::Not(Box::new(Predicate::In {
        column: 0,
        values: vec![Value::Number(30.5)],
    })));
    preds.push(Predicate::Between {
        column: 0,
        low: Value::Number(two53),
        high: Value::Number(two53),
    });
    for pred in &preds {
        assert_eq!(
            memory.count(pred).expect("memory"),
            database.count(pred).expect("the database"),
            "{pred:?}"
        );
    }
    for cuts in [vec![two53], vec![30.5, two53, 9.3e18], vec![-9.3e18, 0.0]] {
        let dims = [(0usize, Buckets::Cuts(cuts))];
        assert_eq!(
            memory.count_cells(&dims).expect("memory"),
            database.count_cells(&dims).expect("the database"),
            "{dims:?}"
        );
    }
    execute(&conninfo, &format!("DROP TABLE {table}"));
}

/// A `numeric` beyond the range of a `float8` (`1e400`, `1e-400`) is compared as the nearest
/// float (an infinity, zero) with no error: PostgreSQL's cast of it fails, and a failure only
/// for the rows a condition reaches would answer about them for free (here: whether Bob's
/// `x` is huge).
#[test]
fn a_numeric_beyond_the_float_range_is_no_oracle() {
    let Some(conninfo) = postgres_server() else {
        return;
    };
    let table = format!("atk_numeric_{}", std::process::id());
    // 2^1024 - 2^970, halfway between the largest float and 2^1024: the least decimal that
    // rounds to infinity; one less rounds to the largest float.
    let over = "179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497792";
    execute(
        &conninfo,
        &format!(
            "DROP TABLE IF EXISTS {table}; CREATE TABLE {table} (name text, x numeric); \
             INSERT INTO {table} VALUES ('bob', 1e400), ('ann', -1e400), ('cy', 1e-400), \
             ('dee', 'NaN'), ('eve', 0.5), ('fay', {over}), ('gus', {over} - 1), ('hal', NULL);"
        ),
    );
    assert_eq!(over.parse::<f64>(), Ok(f64::INFINITY));
    let database = Source::Postgres(Box::new(
        open_postgres(&conninfo, &table)
            .expect("the table opens")
            .table,
    ));
    let name = |n: &str| Predicate::Compare {
        column: 0,
        op: CmpOp::Eq,
        value: Value::Text(n.into()),
    };
    let bob_and = |p: Predicate| Predicate::And(Box::new(name("bob")), Box::new(p));
    let cases = [
        (bob_and(compare(1, CmpOp::Gt, 0.0)), 1),
        (compare(1, CmpOp::Eq, f64::INFINITY), 2),
        (compare(1, CmpOp::Eq, f64::NEG_INFINITY), 1),
        (compare(1, CmpOp::Eq, f64::MAX), 1),
        (compare(1, CmpOp::Eq, 0.0), 1),
        // NaN is above every number in PostgreSQL.
        (compare(1, CmpOp::Gt, 1e308), 4),
    ];
    for (pred, expected) in cases {
        let got = database.count(&pred);
        assert!(
            matches!(got, Ok(n) if n == expected),
            "{pred:?}: {got:?}, not {expected}"
        );
    }
    let dims = [(1usize, Buckets::Cuts(vec![0.0, 1.0]))];
    let cells = database.count_cells(&dims).expect("a histogram");
    assert_eq!(
        cells,
        [1, 2, 4, 1],
        "below 0, [0, 1), from 1 (and NaN), missing"
    );
    let clamp = Clamp::Float {
        lo: 0.0,
        hi: 1.0,
        k: 0,
    };
    // Clamped to [0, 1]: bob 1, ann 0, cy 0, dee (NaN) 1, eve 0.5 -> 1, fay 1, gus 1.
    let sum = database.sum_clamped(1, Some(&bob_and(compare(1, CmpOp::Ge, 0.0))), clamp);
    assert!(matches!(sum, Ok((1, 1))), "{sum:?}");
    let sum = database.sum_clamped(1, None, clamp);
    assert!(matches!(sum, Ok((5, 7))), "{sum:?}");
    execute(&conninfo, &format!("DROP TABLE {table}"));
}

/// One table through two spellings of its server (`localhost` and `127.0.0.1`, a host list
/// whose first host does not answer, `hostaddr=` under any host name) is one table with one
/// budget: its ledger is keyed by what the server says it is, not by the connection string.
/// The password is in no file of the state directory.
#[test]
fn one_table_however_its_server_is_spelled_has_one_ledger() {
    let Some(conninfo) = postgres_server() else {
        return;
    };
    if !conninfo.contains("host=127.0.0.1") {
        eprintln!("note: the test server is not named host=127.0.0.1: spellings not tried");
        return;
    }
    let table = format!("atk_spelled_{}", std::process::id());
    execute(
        &conninfo,
        &format!(
            "DROP TABLE IF EXISTS {table}; CREATE TABLE {table} (age int8); \
             INSERT INTO {table} SELECT g FROM generate_series(1, 50) g;"
        ),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = session(dir.path());
    let out = run_json(
        &mut s,
        &format!(
            "LOAD POSTGRES '{conninfo} password=hunter2' TABLE {table} AS a; \
             COUNT WHERE age > 10 WITH EPS 0.5;"
        ),
    );
    assert_eq!(out[1]["kind"], "count", "{out:?}");
    for (i, spelled) in [
        conninfo.replace("host=127.0.0.1", "host=localhost"),
        conninfo.replace("host=127.0.0.1", "host=elsewhere.invalid,127.0.0.1"),
        conninfo.replace(
            "host=127.0.0.1",
            "host=elsewhere.invalid hostaddr=127.0.0.1",
        ),
    ]
    .iter()
    .enumerate()
    {
        let out = run_json(
            &mut s,
            &format!("LOAD POSTGRES '{spelled}' TABLE {table} AS b{i};"),
        );
        assert_eq!(out[0]["kind"], "loaded", "{spelled}: {}", out[0]);
        assert_eq!(out[0]["budget_spent"], 0.5, "{spelled}: {}", out[0]);
    }
    drop(s);
    for entry in walk(&dir.path().join("state")) {
        let bytes = std::fs::read(&entry).expect("a state file");
        assert!(
            !String::from_utf8_lossy(&bytes).contains("hunter2"),
            "{} holds the password",
            entry.display()
        );
    }
    execute(&conninfo, &format!("DROP TABLE {table}"));
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

/// A view whose column fails for some rows (a cast of text that does not read as a number)
/// fails the same for every condition over that column: a condition that reaches the failing
/// row and one that does not are not told apart by the failure.
#[test]
fn a_view_that_fails_for_some_rows_fails_for_every_condition() {
    let Some(conninfo) = postgres_server() else {
        return;
    };
    let (table, view) = (
        format!("atk_base_{}", std::process::id()),
        format!("atk_view_{}", std::process::id()),
    );
    execute(
        &conninfo,
        &format!(
            "DROP VIEW IF EXISTS {view}; DROP TABLE IF EXISTS {table}; \
             CREATE TABLE {table} (name text, raw text); \
             INSERT INTO {table} VALUES ('ann', '1'), ('bob', 'oops'); \
             CREATE VIEW {view} AS SELECT name, raw::int8 AS x FROM {table};"
        ),
    );
    let database = Source::Postgres(Box::new(
        open_postgres(&conninfo, &view)
            .expect("the view opens")
            .table,
    ));
    let name = |n: &str| Predicate::Compare {
        column: 0,
        op: CmpOp::Eq,
        value: Value::Text(n.into()),
    };
    let and_x = |n: &str| Predicate::And(Box::new(name(n)), Box::new(compare(1, CmpOp::Gt, 0.0)));
    let (ann, bob) = (database.count(&and_x("ann")), database.count(&and_x("bob")));
    assert_eq!(ann.is_ok(), bob.is_ok(), "{ann:?} {bob:?}");
    let clamp = Clamp::Int { lo: 0, hi: 5, k: 0 };
    let (ann, bob) = (
        database.sum_clamped(1, Some(&name("ann")), clamp),
        database.sum_clamped(1, Some(&name("bob")), clamp),
    );
    assert_eq!(ann.is_ok(), bob.is_ok(), "{ann:?} {bob:?}");
    // A condition on the name alone reads no failing column.
    assert_eq!(database.count(&name("bob")).ok(), Some(1));
    execute(&conninfo, &format!("DROP VIEW {view}; DROP TABLE {table}"));
}

/// Values near `1e15` put on the grid `2^-k` (`1e15 * 2^10` is near `2^60`) sum beyond `2^63`
/// (`Sql::rounded` cuts each into exact parts below `2^40`): the sum must be the column
/// store's exactly, for a `float8` and a `numeric` column, for an `int8` column near `2^63`
/// summed as floats, with and without a condition, and for several grids.
#[test]
fn float_sums_beyond_two_to_the_63_are_the_column_stores() {
    let Some(conninfo) = postgres_server() else {
        return;
    };
    let table = format!("atk_wide_{}", std::process::id());
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
        .map(|(x, d, i)| format!("('{x}'::float8, {d}, {i})"))
        .collect();
    execute(
        &conninfo,
        &format!(
            "DROP TABLE IF EXISTS {table}; \
             CREATE TABLE {table} (x float8, d numeric(20, 3), i int8); \
             INSERT INTO {table} VALUES {};",
            values.join(", ")
        ),
    );
    let csv: String = std::iter::once("x,d,i".to_string())
        .chain(rows.iter().map(|(x, d, i)| format!("{x},{d},{i}")))
        .collect::<Vec<_>>()
        .join("\n");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(dir.path(), "wide.csv", &(csv + "\n"));
    let memory = Source::Memory(
        load_csv(&path, &LoadOptions::default())
            .expect("the CSV loads")
            .table,
    );
    let database = Source::Postgres(Box::new(
        open_postgres(&conninfo, &table)
            .expect("the table opens")
            .table,
    ));
    assert_eq!(database.schema(), memory.schema());
    let big = compare(0, CmpOp::Gt, 1e15);
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
                    database.sum_clamped(column, pred, clamp),
                );
                if format!("{a:?}") != format!("{b:?}") {
                    differ.push(format!(
                        "column {column} {clamp:?} {pred:?}: column store {a:?}, PostgreSQL {b:?}"
                    ));
                }
            }
        }
    }
    execute(&conninfo, &format!("DROP TABLE {table}"));
    assert!(differ.is_empty(), "{differ:#?}");
}
