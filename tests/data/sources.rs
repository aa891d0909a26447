//! The same rows in a CSV file, in Parquet files, in a PostgreSQL table and (built with the
//! `spark` feature) in a Spark table give the same
//! exact answers: every condition, cube and clamped sum is asked of every source through the
//! library (never through a noisy output), with missing values, mixed-case names, text
//! beyond ASCII and files split into many row groups.
//!
//! The PostgreSQL source is a real server named by `DPQ_TEST_POSTGRES` (a connection string;
//! `bash .ci/postgres.sh` starts one and prints it, and `.ci/run` does so). Without it the
//! PostgreSQL side is left out with a note, unless `DPQ_REQUIRE_POSTGRES` is set, as in CI,
//! where its absence fails the tests. The Spark source is a real Spark Connect server named by
//! `DPQ_TEST_SPARK` (`bash .ci/spark.sh`), required likewise by `DPQ_REQUIRE_SPARK`; its
//! table is the Parquet files below, registered in Spark's catalog. And a Parquet table behaves as a table at the prompt:
//! loaded by file, directory or pattern, refused when its files change under it, with
//! nothing spent.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray};
use dpq::data::{
    load_csv, open_parquet, open_postgres, Buckets, Clamp, CmpOp, ColumnType, LoadOptions,
    Predicate, Source, Value,
};
use dpq::eval::{Randomness, Session};
use dpq::privacy::Store;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

use crate::common;
use common::shards::{shard_server, SHARD_PORTS};
use common::{parquet_chunk_range, postgres_server, run_json, write};

/// Names that sort differently by byte and by any human collation, with a comma and a quote.
const NAMES: [&str; 9] = [
    "alice", "Bob", "bob", "Émile", "zoë", "Zed", "a b", "x,y", "O'Neil",
];

#[derive(Clone)]
struct Row {
    age: Option<i64>,
    score: Option<f64>,
    name: Option<&'static str>,
    flag: Option<bool>,
}

fn rows(n: usize, seed: u64) -> Vec<Row> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| Row {
            age: rng.random_bool(0.9).then(|| rng.random_range(-5..90)),
            score: rng
                .random_bool(0.85)
                .then(|| f64::from(rng.random_range(-400..400)) / 8.0),
            name: rng
                .random_bool(0.9)
                .then(|| NAMES[rng.random_range(0..NAMES.len())]),
            flag: rng.random_bool(0.8).then(|| rng.random_bool(0.4)),
        })
        .collect()
}

fn csv(rows: &[Row]) -> String {
    let mut out = String::from("Age,score,Name,flag\n");
    for r in rows {
        let name = r.name.map_or(String::new(), |n| {
            if n.contains(',') {
                format!("\"{n}\"")
            } else {
                n.to_string()
            }
        });
        out.push_str(&format!(
            "{},{},{},{}\n",
            r.age.map_or(String::new(), |a| a.to_string()),
            r.score.map_or(String::new(), |s| s.to_string()),
            name,
            r.flag.map_or(String::new(), |f| f.to_string()),
        ));
    }
    out
}

/// Writes `rows` as Parquet files in `dir`: `files` files of row groups of `group` rows.
fn parquet(rows: &[Row], dir: &Path, files: usize, group: usize) {
    let per = rows.len().div_ceil(files);
    for (i, part) in rows.chunks(per).enumerate() {
        let columns: Vec<(&str, ArrayRef)> = vec![
            (
                "Age",
                Arc::new(Int64Array::from_iter(part.iter().map(|r| r.age))),
            ),
            (
                "score",
                Arc::new(Float64Array::from_iter(part.iter().map(|r| r.score))),
            ),
            (
                "Name",
                Arc::new(StringArray::from_iter(part.iter().map(|r| r.name))),
            ),
            (
                "flag",
                Arc::new(BooleanArray::from_iter(part.iter().map(|r| r.flag))),
            ),
        ];
        let batch = RecordBatch::try_from_iter(columns).expect("a batch");
        let file = std::fs::File::create(dir.join(format!("part-{i}.parquet"))).expect("a file");
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(group))
            .build();
        let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(props)).expect("a writer");
        writer.write(&batch).expect("written");
        writer.close().expect("closed");
    }
}

/// Writes `rows` to a new table `table` (its name and columns in mixed case) of the server.
fn postgres_table(conninfo: &str, table: &str, rows: &[Row]) {
    let mut client = postgres::Client::connect(conninfo, postgres::NoTls).expect("the server");
    client
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS \"{table}\"; CREATE TABLE \"{table}\" \
             (\"Age\" int8, score float8, \"Name\" text, flag bool, stamp date)"
        ))
        .expect("the table");
    let insert =
        format!("INSERT INTO \"{table}\" (\"Age\", score, \"Name\", flag) VALUES ($1, $2, $3, $4)");
    let mut txn = client.transaction().expect("a transaction");
    let statement = txn.prepare(&insert).expect("prepared");
    for r in rows {
        txn.execute(&statement, &[&r.age, &r.score, &r.name, &r.flag])
            .expect("a row");
    }
    txn.commit().expect("committed");
}

/// Writes `rows` to a table sharded over two other servers: on the server of `conninfo` (the
/// coordinator) a table partitioned by hash of `Age`, each partition a `postgres_fdw` foreign
/// table on a server of its own, its text column in the `C` collation on both sides (as the
/// README asks of a sharded table). The rows go in through the coordinator, which routes
/// each to its shard.
fn sharded_table(conninfo: &str, table: &str, rows: &[Row]) {
    let mut coordinator = postgres::Client::connect(conninfo, postgres::NoTls).expect("the server");
    coordinator
        .batch_execute(&format!(
            "CREATE EXTENSION IF NOT EXISTS postgres_fdw; DROP TABLE IF EXISTS \"{table}\"; \
             CREATE TABLE \"{table}\" (\"Age\" int8, score float8, \"Name\" text COLLATE \"C\", \
             flag bool) PARTITION BY HASH (\"Age\")"
        ))
        .expect("the partitioned table");
    for (i, port) in SHARD_PORTS.iter().enumerate() {
        let shard = shard_server(*port);
        let part = format!("{table}_p{i}");
        // A server of this process's own: another test process may set up its shards at once.
        let server = format!("shard_{port}_{}", std::process::id());
        let mut client = postgres::Client::connect(&shard, postgres::NoTls).expect("the shard");
        client
            .batch_execute(&format!(
                "DROP TABLE IF EXISTS \"{part}\"; CREATE TABLE \"{part}\" (\"Age\" int8, \
                 score float8, \"Name\" text COLLATE \"C\", flag bool)"
            ))
            .expect("the shard's table");
        coordinator
            .batch_execute(&format!(
                "DROP SERVER IF EXISTS {server} CASCADE; \
                 CREATE SERVER {server} FOREIGN DATA WRAPPER postgres_fdw \
                 OPTIONS (host '127.0.0.1', port '{port}', dbname 'postgres', async_capable 'true'); \
                 CREATE USER MAPPING FOR CURRENT_USER SERVER {server} OPTIONS (user 'dpq'); \
                 CREATE FOREIGN TABLE \"{part}\" PARTITION OF \"{table}\" \
                 FOR VALUES WITH (MODULUS 2, REMAINDER {i}) SERVER {server} \
                 OPTIONS (table_name '{part}')"
            ))
            .expect("the foreign partition");
    }
    let insert =
        format!("INSERT INTO \"{table}\" (\"Age\", score, \"Name\", flag) VALUES ($1, $2, $3, $4)");
    let mut txn = coordinator.transaction().expect("a transaction");
    let statement = txn.prepare(&insert).expect("prepared");
    for r in rows {
        txn.execute(&statement, &[&r.age, &r.score, &r.name, &r.flag])
            .expect("a row");
    }
    txn.commit().expect("committed");
}

/// The sources: the column store, Parquet files, and with a server a PostgreSQL table and a
/// table sharded over two more servers; then the rows as Parquet sorted by each column in
/// small row groups, whose statistics let most questions skip most groups; and with a Spark
/// Connect server, a Spark table.
type Sources = (
    Source,
    Source,
    Option<Source>,
    Option<Source>,
    Vec<Source>,
    Option<Source>,
);

/// The Parquet files in `dir` as a new Spark table (its name in mixed case), opened.
#[cfg(feature = "spark")]
fn spark_table(url: &str, dir: &Path) -> Source {
    let table = format!("Rows_{}", std::process::id());
    let session = dpq::spark_connect::SparkSessionBuilder::new()
        .remote(url)
        .get_or_create()
        .expect("the Spark server");
    for statement in [
        format!("DROP TABLE IF EXISTS `{table}`"),
        format!(
            "CREATE TABLE `{table}` USING parquet LOCATION '{}'",
            dir.display()
        ),
    ] {
        let df = session.sql(&statement).expect("a statement");
        df.collect().expect("the Spark table");
    }
    let opened = dpq::data::open_spark(url, &[table]).expect("the Spark table opens");
    assert!(opened.left_out.is_empty(), "{:?}", opened.left_out);
    Source::Spark(Box::new(opened.table))
}

#[cfg(not(feature = "spark"))]
fn spark_table(_: &str, _: &Path) -> Source {
    unreachable!("asked only when built with the `spark` feature")
}

/// The rows sorted by column `column` (missing values first), as the Parquet file `name` in
/// `dir` of row groups of 40 rows, opened.
fn sorted_parquet(rows: &[Row], column: usize, dir: &Path, name: &str) -> Source {
    let mut sorted = rows.to_vec();
    match column {
        0 => sorted.sort_by_key(|r| r.age),
        1 => sorted.sort_by(|a, b| a.score.partial_cmp(&b.score).expect("no NaN")),
        2 => sorted.sort_by_key(|r| r.name),
        _ => sorted.sort_by_key(|r| r.flag),
    }
    let at = dir.join(name);
    std::fs::create_dir(&at).expect("a directory");
    parquet(&sorted, &at, 1, 40);
    Source::Parquet(open_parquet(&at).expect("the sorted Parquet file opens"))
}

/// The same 3,000 rows as a CSV file, as three Parquet files of row groups of 250 rows, and
/// (with a server) as a PostgreSQL table and a table sharded over two more servers.
fn sources() -> &'static Sources {
    static SOURCES: std::sync::OnceLock<Sources> = std::sync::OnceLock::new();
    SOURCES.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir").keep();
        let rows = rows(3000, 7);
        let csv_path = write(&dir, "rows.csv", &csv(&rows));
        let pq = dir.join("pq");
        std::fs::create_dir(&pq).expect("a directory");
        parquet(&rows, &pq, 3, 250);
        let memory = Source::Memory(
            load_csv(&csv_path, &LoadOptions::default())
                .expect("the CSV loads")
                .table,
        );
        let streamed = Source::Parquet(open_parquet(&pq).expect("the Parquet files open"));
        let server = postgres_server();
        let database = server.as_ref().map(|conninfo| {
            let table = format!("Rows_{}", std::process::id());
            postgres_table(conninfo, &table, &rows);
            let opened = open_postgres(conninfo, &table).expect("the table opens");
            assert_eq!(opened.left_out, ["stamp"], "a date column is left out");
            assert_eq!(opened.partitions, 0);
            Source::Postgres(Box::new(opened.table))
        });
        let sharded = server.as_ref().map(|conninfo| {
            let table = format!("Sharded_{}", std::process::id());
            sharded_table(conninfo, &table, &rows);
            let opened = open_postgres(conninfo, &table).expect("the sharded table opens");
            assert_eq!(opened.partitions, 2, "asked shard by shard");
            Source::Postgres(Box::new(opened.table))
        });
        let sorted = (0..4)
            .map(|c| sorted_parquet(&rows, c, &dir, &format!("sorted-{c}")))
            .collect();
        let spark = if cfg!(feature = "spark") {
            common::spark_server().map(|url| spark_table(&url, &pq))
        } else {
            None
        };
        (memory, streamed, database, sharded, sorted, spark)
    })
}

/// Every source but the column store, which the others are compared with.
fn others() -> Vec<&'static Source> {
    let (_, streamed, database, sharded, sorted, spark) = sources();
    std::iter::once(streamed)
        .chain(database.as_ref())
        .chain(sharded.as_ref())
        .chain(sorted)
        .chain(spark.as_ref())
        .collect()
}

#[test]
fn both_sources_have_one_schema_and_one_row_count() {
    let (memory, ..) = sources();
    let schema = vec![
        ("Age".to_string(), ColumnType::Integer),
        ("score".to_string(), ColumnType::Float),
        ("Name".to_string(), ColumnType::Text),
        ("flag".to_string(), ColumnType::Boolean),
    ];
    assert_eq!(memory.schema(), schema);
    assert_eq!(memory.n_rows(), 3000);
    for other in others() {
        assert_eq!(other.schema(), schema, "{}", other.kind());
        assert_eq!(other.n_rows(), 3000, "{}", other.kind());
    }
}

fn literal(column: usize) -> BoxedStrategy<Value> {
    match column {
        0 => (-10i64..95).prop_map(|x| Value::Number(x as f64)).boxed(),
        1 => (-420i64..420)
            .prop_map(|x| Value::Number(x as f64 / 8.0))
            .boxed(),
        2 => prop_oneof![
            proptest::sample::select(NAMES.to_vec()).prop_map(|s| Value::Text(s.to_string())),
            proptest::sample::select(vec!["", "B", "a", "b", "É", "zz", "Ö"])
                .prop_map(|s| Value::Text(s.to_string())),
        ]
        .boxed(),
        _ => any::<bool>().prop_map(Value::Bool).boxed(),
    }
}

fn op() -> impl Strategy<Value = CmpOp> {
    proptest::sample::select(CmpOp::ALL.to_vec())
}

fn leaf() -> impl Strategy<Value = Predicate> {
    (0usize..4).prop_flat_map(|column| {
        prop_oneof![
            (op(), literal(column)).prop_map(move |(op, value)| Predicate::Compare {
                column,
                op,
                value
            }),
            prop::collection::vec(literal(column), 1..4)
                .prop_map(move |values| Predicate::In { column, values }),
            (literal(column), literal(column)).prop_map(move |(low, high)| Predicate::Between {
                column,
                low,
                high
            }),
        ]
    })
}

fn predicate() -> impl Strategy<Value = Predicate> {
    leaf().prop_recursive(3, 12, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone())
                .prop_map(|(a, b)| Predicate::And(Box::new(a), Box::new(b))),
            (inner.clone(), inner.clone())
                .prop_map(|(a, b)| Predicate::Or(Box::new(a), Box::new(b))),
            inner.prop_map(|a| Predicate::Not(Box::new(a))),
        ]
    })
}

fn buckets(column: usize) -> BoxedStrategy<Buckets> {
    match column {
        0 | 1 => prop::collection::btree_set(-20i64..100, 1..4)
            .prop_map(|cuts| Buckets::Cuts(cuts.into_iter().map(|c| c as f64 / 2.0).collect()))
            .boxed(),
        2 => prop::collection::btree_set(proptest::sample::select(NAMES.to_vec()), 1..4)
            .prop_map(|v| Buckets::Values(v.into_iter().map(|s| Value::Text(s.into())).collect()))
            .boxed(),
        _ => Just(Buckets::Values(vec![Value::Bool(true)])).boxed(),
    }
}

/// Random cases per property: 200; built with Spark among the sources, 64, since each Spark
/// query takes a job of its own (a tenth of a second or more), and the build without Spark
/// asks every other source the 200.
const CASES: u32 = if cfg!(feature = "spark") { 64 } else { 200 };

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, ..ProptestConfig::default() })]

    #[test]
    fn every_condition_counts_the_same(pred in predicate()) {
        let a = sources().0.count(&pred).expect("memory");
        for other in others() {
            let b = other.count(&pred).expect("a count");
            prop_assert_eq!(a, b, "{} {:?}", other.kind(), pred);
        }
    }

    #[test]
    fn every_cube_counts_the_same(
        dims in prop::collection::vec((0usize..4).prop_flat_map(|c| (Just(c), buckets(c))), 1..3)
    ) {
        let a = sources().0.count_cells(&dims).expect("memory");
        prop_assert_eq!(a.iter().sum::<u64>(), 3000);
        for other in others() {
            let b = other.count_cells(&dims).expect("cells");
            prop_assert_eq!(&a, &b, "{} {:?}", other.kind(), dims);
        }
    }

    #[test]
    fn every_clamped_sum_is_the_same(
        pred in prop::option::of(predicate()),
        lo in -60i64..0,
        width in 1i64..120,
        k in 0u32..4,
    ) {
        let memory = &sources().0;
        let int = Clamp::Int { lo, hi: lo + width, k };
        let float = Clamp::Float { lo: lo as f64, hi: (lo + width) as f64, k };
        // Bounds far beyond the values give the same sums, but an engine whose 64-bit sums
        // could overflow over such bounds sums wider (Spark: decimals rather than BIGINT).
        let far = 1i64 << 50;
        let wide = Clamp::Int { lo: lo - far, hi: lo + width + far, k };
        let wide_float = Clamp::Float { lo: (lo - far) as f64, hi: (lo + width + far) as f64, k };
        // A fine grid puts the terms beyond 2^20, where an engine may cut them in parts.
        let fine = Clamp::Float { lo: lo as f64, hi: (lo + width) as f64, k: k + 18 };
        for (column, clamp) in
            [(0, int), (1, float), (0, float), (0, wide), (1, wide_float), (1, fine)]
        {
            let a = memory.sum_clamped(column, pred.as_ref(), clamp).expect("memory");
            for other in others() {
                let b = other.sum_clamped(column, pred.as_ref(), clamp).expect("a sum");
                prop_assert_eq!(a, b, "{} column {} {:?} {:?}", other.kind(), column, clamp, pred);
            }
        }
    }
}

fn age(op: CmpOp, x: f64) -> Predicate {
    Predicate::Compare {
        column: 0,
        op,
        value: Value::Number(x),
    }
}

/// Row groups whose statistics rule a condition out are skipped once their columns have been
/// read whole, and the answers stay those of the column store, `NOT` and missing ages
/// included.
#[test]
fn statistics_skip_row_groups_and_change_no_answer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rows = rows(3000, 7);
    let source = sorted_parquet(&rows, 0, dir.path(), "by-age");
    let Source::Parquet(table) = &source else {
        unreachable!("a Parquet source")
    };
    let memory = &sources().0;
    let groups = 3000u64.div_ceil(40);
    let read = |pred: &Predicate| {
        let before = table.groups_read();
        let n = source.count(pred).expect("a count");
        assert_eq!(n, memory.count(pred).expect("memory"), "{pred:?}");
        table.groups_read() - before
    };
    // The first question on Age reads every group; later ones only the groups the
    // statistics leave (ages run from -5 to 89, sorted, about 34 rows an age).
    assert_eq!(read(&age(CmpOp::Gt, 80.0)), groups);
    let old = read(&age(CmpOp::Gt, 80.0));
    assert!((1..=10).contains(&old), "{old} of {groups} groups read");
    let not_young = read(&Predicate::Not(Box::new(age(CmpOp::Le, 80.0))));
    assert_eq!(not_young, old, "NOT (Age <= 80) rules out the same groups");
    // Missing ages sort first: the groups holding them (and ages up to 9) are read, the
    // others skipped, and `NOT` never counts a missing age.
    let young = read(&Predicate::Not(Box::new(age(CmpOp::Ge, 10.0))));
    assert!(young < groups / 2, "{young} of {groups} groups read");
    // A condition the statistics cannot rule out reads every group but those of missing
    // ages only, on which it is unknown.
    let missing = rows.iter().filter(|r| r.age.is_none()).count() as u64;
    assert!(missing >= 80, "{missing} missing ages fill some groups");
    assert_eq!(read(&age(CmpOp::Ne, 40.0)), groups - missing / 40);
    // A sum with a condition skips alike, and answers the same.
    let clamp = Clamp::Int {
        lo: 0,
        hi: 100,
        k: 0,
    };
    let before = table.groups_read();
    let sum = source.sum_clamped(0, Some(&age(CmpOp::Gt, 80.0)), clamp);
    assert_eq!(
        sum.expect("a sum"),
        memory
            .sum_clamped(0, Some(&age(CmpOp::Gt, 80.0)), clamp)
            .expect("memory")
    );
    assert_eq!(table.groups_read() - before, old);
}

/// A row group that cannot be read fails every question on its column, whatever the
/// condition: one its statistics rule out included, and again after a question that read
/// the other groups. Were it skipped by its statistics, whether a question fails would tell
/// whether its condition meets the group's least and greatest ages.
#[test]
fn a_group_that_cannot_be_read_fails_every_question_on_its_column() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Written once to find where group 0's Age chunk lies, then damaged there: its page
    // header no longer decodes, its statistics (ages below 0) are intact.
    let sorted = rows(3000, 7);
    let at = dir.path().join("by-age");
    drop(sorted_parquet(&sorted, 0, dir.path(), "by-age"));
    let file = at.join("part-0.parquet");
    let (start, len) = parquet_chunk_range(&file, 0, 0);
    let mut bytes = std::fs::read(&file).expect("the file");
    let damaged = start as usize..(start + len.min(24)) as usize;
    bytes[damaged].fill(0xff);
    std::fs::write(&file, &bytes).expect("written");
    let source = Source::Parquet(open_parquet(&at).expect("the footer is intact"));

    let mut messages = Vec::new();
    for pred in [
        age(CmpOp::Gt, 80.0),
        age(CmpOp::Gt, 80.0),
        age(CmpOp::Lt, 0.0),
        Predicate::Not(Box::new(age(CmpOp::Le, 80.0))),
    ] {
        let error = source.count(&pred).expect_err("group 0 cannot be read");
        messages.push(error.to_string());
    }
    messages.dedup();
    assert_eq!(
        messages.len(),
        1,
        "one message whatever the condition: {messages:?}"
    );
    // The other columns of that group read.
    let name = Predicate::Compare {
        column: 2,
        op: CmpOp::Eq,
        value: Value::Text("alice".into()),
    };
    assert_eq!(
        source.count(&name).expect("the Name chunk is intact"),
        sources().0.count(&name).expect("memory")
    );
}

/// A missing value is unknown: `NOT (Age <= 30)` leaves out the rows with no age, in both.
#[test]
fn not_of_an_unknown_is_unknown_in_both() {
    let le = Predicate::Compare {
        column: 0,
        op: CmpOp::Le,
        value: Value::Number(30.0),
    };
    let not = Predicate::Not(Box::new(le.clone()));
    for s in std::iter::once(&sources().0).chain(others()) {
        let (yes, no) = (
            s.count(&le).expect("a count"),
            s.count(&not).expect("a count"),
        );
        assert!(yes + no < 3000, "rows with no age count on neither side");
        assert!(yes > 0 && no > 0);
    }
}

fn session(dir: &Path) -> Session {
    Session::with_store(Randomness::Os, Store::dir(dir.join("state")))
}

/// At the prompt: a Parquet file, a directory and a pattern load as tables, answer, and keep
/// a ledger by their bytes; a file changed after `LOAD` is refused, with nothing spent.
#[test]
fn a_parquet_table_at_the_prompt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pq = dir.path().join("events");
    std::fs::create_dir(&pq).expect("a directory");
    parquet(&rows(600, 3), &pq, 2, 100);
    let mut s = session(dir.path());
    let out = run_json(
        &mut s,
        &format!(
            "LOAD '{d}' AS whole; LOAD '{d}/*.parquet' AS pattern; LOAD '{d}/part-0.parquet' AS one; \
             USE whole; COUNT WHERE Age <= 30 WITH EPS 0.5; CUBE BY Name ('alice', 'Bob'); HISTOGRAM WITH EPS 0.1;",
            d = pq.display()
        ),
    );
    let kinds: Vec<&str> = out
        .iter()
        .map(|o| o["kind"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(
        kinds[..4],
        ["loaded", "loaded", "loaded", "using"],
        "{out:?}"
    );
    assert_eq!(out[0]["n"], 600);
    assert_eq!(out[2]["n"], 300);
    assert_eq!(out[4]["kind"], "count", "{out:?}");
    // The directory and the pattern are the same bytes: one ledger, one budget.
    assert_eq!(out[1]["budget_spent"], out[0]["budget_spent"]);

    // The file changes under the table: the question is refused, and nothing is spent.
    parquet(&rows(600, 4), &pq, 2, 100);
    let out = run_json(&mut s, "COUNT WHERE Name = 'alice' WITH EPS 0.25;");
    assert_eq!(out[0]["kind"], "error", "{}", out[0]);
    let message = out[0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("changed") && message.contains("nothing was spent"),
        "{message}"
    );
    let budget = run_json(&mut s, "SHOW BUDGET;");
    assert_eq!(budget[0]["spent"], 0.6, "{}", budget[0]);
}

/// What a Parquet file cannot be: read with `NO HEADER`, bounded by a privacy unit (the rows
/// are not in memory), or a file that is not Parquet; each is one clear error.
#[test]
fn what_a_parquet_table_refuses() {
    let dir = tempfile::tempdir().expect("tempdir");
    parquet(&rows(50, 5), dir.path(), 1, 50);
    let file = dir.path().join("part-0.parquet");
    let bad = write(dir.path(), "bad.parquet", "Age,score\n1,2\n");
    let mut s = session(dir.path());
    let out: Vec<serde_json::Value> = [
        format!("LOAD '{}' AS a NO HEADER;", file.display()),
        format!(
            "LOAD '{}' AS b PRIVACY UNIT Name MAX ROWS 2;",
            file.display()
        ),
        format!("LOAD '{}' AS c;", bad.display()),
    ]
    .iter()
    .flat_map(|script| run_json(&mut s, script))
    .collect();
    let messages: Vec<&str> = out
        .iter()
        .map(|o| o["message"].as_str().unwrap_or(""))
        .collect();
    assert!(
        messages[0].contains("NO HEADER is for CSV files"),
        "{messages:?}"
    );
    assert!(
        messages[1].contains("needs the rows in memory"),
        "{messages:?}"
    );
    assert!(
        messages[2].contains("does not read as a Parquet file"),
        "{messages:?}"
    );
}

/// At the prompt: a PostgreSQL table loads by `LOAD POSTGRES ... TABLE`, answers, keeps its
/// ledger by server, database and name; the connection string (which can hold a password) is
/// never shown; a table whose rows changed, or an error of the server, is refused with a fixed
/// message and nothing spent.
#[test]
fn a_postgres_table_at_the_prompt() {
    let Some(conninfo) = postgres_server() else {
        return;
    };
    let table = format!("Visits_{}", std::process::id());
    postgres_table(&conninfo, &table, &rows(400, 9));
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = session(dir.path());
    let secret = format!("{conninfo} password=hunter2 application_name=dpq_test");
    let out = run_json(
        &mut s,
        &format!(
            "EXPLAIN LOAD POSTGRES '{secret}' TABLE \"{table}\" AS v; \
             LOAD POSTGRES '{secret}' TABLE \"{table}\" AS v; \
             COUNT WHERE Name = 'bob' AND NOT (Age <= 30) WITH EPS 0.5; \
             SUM Age CLAMP (0, 100) WITH EPS 0.1;"
        ),
    );
    let text = serde_json::to_string(&out).expect("JSON");
    assert!(
        !text.contains("hunter2"),
        "the password is never shown: {text}"
    );
    let kinds: Vec<&str> = out
        .iter()
        .map(|o| o["kind"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(kinds, ["explain", "loaded", "count", "sum"], "{text}");
    assert_eq!(out[1]["n"], 400);
    assert_eq!(
        out[1]["warnings"].as_array().map(Vec::len),
        Some(1),
        "{}",
        out[1]
    );

    // Loaded again, the same table finds the same ledger.
    let again = run_json(
        &mut s,
        &format!("LOAD POSTGRES '{conninfo}' TABLE \"{table}\" AS w;"),
    );
    assert_eq!(again[0]["budget_spent"], 0.6, "{}", again[0]);

    // A row added under the table: refused, nothing spent.
    let mut client = postgres::Client::connect(&conninfo, postgres::NoTls).expect("the server");
    client
        .execute(
            &format!("INSERT INTO \"{table}\" (\"Age\") VALUES (7)"),
            &[],
        )
        .expect("a row");
    let out = run_json(&mut s, "USE v; COUNT WHERE Age > 3 WITH EPS 0.1;");
    let message = out[1]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("changed") && message.contains("nothing was spent"),
        "{message}"
    );

    // An error of the server (the table is gone): a fixed message with its SQLSTATE code.
    client
        .execute(&format!("DROP TABLE \"{table}\""), &[])
        .expect("dropped");
    let out = run_json(&mut s, "COUNT WHERE Age > 3 WITH EPS 0.1;");
    let message = out[0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("the database could not answer (SQLSTATE 42P01)")
            && !message.contains("does not exist"),
        "{message}"
    );
    let budget = run_json(&mut s, "SHOW BUDGET;");
    assert_eq!(budget[0]["spent"], 0.6, "{}", budget[0]);

    // A server that is not there, and a table that is not there.
    let out = run_json(
        &mut s,
        "LOAD POSTGRES 'host=127.0.0.1 port=1 user=dpq connect_timeout=2' TABLE t AS x;",
    );
    let message = out[0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("cannot connect to the database"),
        "{message}"
    );
    let out = run_json(
        &mut s,
        &format!("LOAD POSTGRES '{conninfo}' TABLE no_such_table AS y;"),
    );
    let message = out[0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("no table of that name"), "{message}");
}

/// Built without the `spark` feature, `LOAD SPARK` says how to build it, and nothing else.
#[cfg(not(feature = "spark"))]
#[test]
fn a_build_without_spark_says_how_to_get_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = session(dir.path());
    let out = run_json(
        &mut s,
        "LOAD SPARK 'sc://127.0.0.1:1' TABLE lake.visits AS v;",
    );
    let message = out[0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("Spark table lake.visits")
            && message.contains("cargo build --features spark"),
        "{message}"
    );
}
