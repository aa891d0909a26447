//! Attacks on the two changes that ask a partitioned PostgreSQL table partition by partition
//! (`src/data/postgres.rs`: `leaf_partitions`, `over_parts`) and serve Parquet files and
//! PostgreSQL tables (`src/server/policy.rs` `DataSource`, `src/server/app.rs`
//! `read_dataset`).
//!
//! The PostgreSQL tests need the server named by `DPQ_TEST_POSTGRES` (see `tests/data/sources.rs`),
//! connected as a superuser (they make a role of their own); without it they are left out with
//! a note, unless `DPQ_REQUIRE_POSTGRES` is set. Every object they make is named `atk_..._<pid>`
//! and dropped at the end.

use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use dpq::data::{open_postgres, CmpOp, Predicate, Value};
use parquet::arrow::ArrowWriter;

use crate::common;
use common::postgres_server;
use common::serve::{token, Server};

/// Runs `sql` on the server.
fn execute(conninfo: &str, sql: &str) {
    let mut client = postgres::Client::connect(conninfo, postgres::NoTls).expect("the server");
    client.batch_execute(sql).expect("the statements run");
}

/// The test server's connection string, as the role `user` (no password: the test server
/// trusts loopback, as `.ci/postgres.sh` sets it up).
fn as_role(conninfo: &str, user: &str) -> String {
    let config: postgres::Config = conninfo.parse().expect("a connection string");
    let host = match config.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) => h.clone(),
        Some(postgres::config::Host::Unix(p)) => p.display().to_string(),
        None => "127.0.0.1".to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config.get_dbname().unwrap_or("postgres");
    format!("host={host} port={port} dbname={db} user={user}")
}

/// A role of the test's own that may log in (dropped by the test at its end).
fn role(conninfo: &str, name: &str) {
    execute(
        conninfo,
        &format!("DROP ROLE IF EXISTS {name}; CREATE ROLE {name} LOGIN;"),
    );
}

fn compare(column: usize, op: CmpOp, value: Value) -> Predicate {
    Predicate::Compare { column, op, value }
}

/// The database's own access control of a partitioned table is its parent's: a role that
/// row-level security lets see only the rows of people who consented must not be answered
/// about the others because dpq asks the partitions directly (row security policies of a
/// partitioned table do not apply to its partitions read on their own). A curator who ran
/// `GRANT SELECT ON ALL TABLES IN SCHEMA ... TO reader` gave the partitions too.
///
/// Broke (fixed since) after 0ce398e: `LOAD` shows n = 200 (every row, 150 of them hidden from the role) and
/// `COUNT WHERE consent = false` answers about 150 rows the role may not read. Asked as a
/// whole (as before the change), the table has 50 rows for this role.
#[test]
fn row_security_of_a_partitioned_table_is_not_bypassed() {
    let Some(conninfo) = postgres_server() else {
        return;
    };
    let pid = std::process::id();
    let (table, reader) = (format!("atk_rls_{pid}"), format!("atk_rls_reader_{pid}"));
    role(&conninfo, &reader);
    execute(
        &conninfo,
        &format!(
            "DROP TABLE IF EXISTS {table}; \
             CREATE TABLE {table} (id int, consent bool, age int) PARTITION BY RANGE (id); \
             CREATE TABLE {table}_1 PARTITION OF {table} FOR VALUES FROM (0) TO (100); \
             CREATE TABLE {table}_2 PARTITION OF {table} FOR VALUES FROM (100) TO (200); \
             INSERT INTO {table} SELECT i, i % 4 = 0, 20 + i % 50 FROM generate_series(0, 199) i; \
             ALTER TABLE {table} ENABLE ROW LEVEL SECURITY; \
             CREATE POLICY {table}_consent ON {table} FOR SELECT TO {reader} USING (consent); \
             GRANT SELECT ON {table}, {table}_1, {table}_2 TO {reader};"
        ),
    );
    let as_reader = as_role(&conninfo, &reader);
    // What the database lets the role read of the table.
    let mut client = postgres::Client::connect(&as_reader, postgres::NoTls).expect("the role");
    let visible: i64 = client
        .query_one(&format!("SELECT count(*) FROM {table}"), &[])
        .expect("a count")
        .get(0);
    drop(client);
    assert_eq!(visible, 50);
    let opened = open_postgres(&as_reader, &table);
    let outcome = opened.map(|o| {
        let n = o.table.shell().n_rows();
        let hidden = o.table.count(&compare(1, CmpOp::Eq, Value::Bool(false)));
        (n, hidden)
    });
    execute(
        &conninfo,
        &format!("DROP TABLE {table}; DROP ROLE {reader};"),
    );
    let (n, hidden) = outcome.expect("the table loads");
    assert_eq!(
        n, 50,
        "n counts rows row-level security hides from the role"
    );
    assert_eq!(
        hidden.expect("a count"),
        0,
        "a count about the rows row-level security hides from the role"
    );
}

/// The same with column privileges: a role granted `SELECT (id, age)` on the partitioned
/// table may not read `salary` through it (a question on it fails, whatever the rows), but
/// dpq reads it through a partition the role was granted whole.
///
/// Broke (fixed since) after 0ce398e: `COUNT WHERE salary > 50000` is answered.
#[test]
fn column_privileges_of_a_partitioned_table_are_not_bypassed() {
    let Some(conninfo) = postgres_server() else {
        return;
    };
    let pid = std::process::id();
    let (table, reader) = (format!("atk_cols_{pid}"), format!("atk_cols_reader_{pid}"));
    role(&conninfo, &reader);
    execute(
        &conninfo,
        &format!(
            "DROP TABLE IF EXISTS {table}; \
             CREATE TABLE {table} (id int, age int, salary int) PARTITION BY RANGE (id); \
             CREATE TABLE {table}_1 PARTITION OF {table} FOR VALUES FROM (0) TO (100); \
             INSERT INTO {table} SELECT i, 20 + i % 50, 1000 * i FROM generate_series(0, 99) i; \
             GRANT SELECT (id, age) ON {table} TO {reader}; \
             GRANT SELECT ON {table}_1 TO {reader};"
        ),
    );
    let as_reader = as_role(&conninfo, &reader);
    let outcome = open_postgres(&as_reader, &table).map(|o| {
        o.table
            .count(&compare(2, CmpOp::Gt, Value::Number(50000.0)))
    });
    execute(
        &conninfo,
        &format!("DROP TABLE {table}; DROP ROLE {reader};"),
    );
    let salary = outcome.expect("the table loads");
    assert!(
        salary.is_err(),
        "a column the role may not read through the table was answered about: {salary:?}"
    );
}

/// A table the role may read as a whole loads, wherever its partitions are: a partition in a
/// schema the role has no `USAGE` on is read through its parent (as before the change).
///
/// Broke (fixed since) after 0ce398e (availability, not privacy): `has_table_privilege` is true for the
/// partition, so dpq asks it directly and `LOAD` fails ("the database could not answer
/// (SQLSTATE 42501)"), though `SELECT count(*) FROM t` works for the role.
#[test]
fn a_partition_in_a_schema_the_role_cannot_use_does_not_stop_load() {
    let Some(conninfo) = postgres_server() else {
        return;
    };
    let pid = std::process::id();
    let (table, schema, reader) = (
        format!("atk_sch_{pid}"),
        format!("atk_hidden_{pid}"),
        format!("atk_sch_reader_{pid}"),
    );
    role(&conninfo, &reader);
    execute(
        &conninfo,
        &format!(
            "DROP TABLE IF EXISTS {table}; DROP SCHEMA IF EXISTS {schema} CASCADE; \
             CREATE SCHEMA {schema}; \
             CREATE TABLE {table} (id int, age int) PARTITION BY RANGE (id); \
             CREATE TABLE {schema}.{table}_1 PARTITION OF {table} FOR VALUES FROM (0) TO (100); \
             INSERT INTO {table} SELECT i, 20 + i % 50 FROM generate_series(0, 99) i; \
             GRANT SELECT ON {table}, {schema}.{table}_1 TO {reader};"
        ),
    );
    let as_reader = as_role(&conninfo, &reader);
    let n = open_postgres(&as_reader, &table).map(|o| o.table.shell().n_rows());
    execute(
        &conninfo,
        &format!("DROP TABLE {table}; DROP SCHEMA {schema} CASCADE; DROP ROLE {reader};"),
    );
    assert_eq!(n.expect("the table loads"), 100);
}

/// "Every partition's rows are counted in the same query as the answer, and a total that is
/// not the `n` of `LOAD` is refused" (README). A partition attached after `LOAD` (here a
/// default partition, then a range one) holds rows of the table that the question never
/// counts: the table's total is no longer `n`, and the question must be refused, as it is for
/// a table that is not partitioned.
///
/// Broke (fixed since) after 0ce398e: the leaf partitions are fixed at `LOAD`, so the 30 new rows are neither
/// counted nor noticed, and the answer is given as if the table had not changed.
#[test]
fn a_partition_attached_after_load_is_a_changed_table() {
    let Some(conninfo) = postgres_server() else {
        return;
    };
    let table = format!("atk_grow_{}", std::process::id());
    execute(
        &conninfo,
        &format!(
            "DROP TABLE IF EXISTS {table}; \
             CREATE TABLE {table} (id int, age int) PARTITION BY RANGE (id); \
             CREATE TABLE {table}_1 PARTITION OF {table} FOR VALUES FROM (0) TO (100); \
             INSERT INTO {table} SELECT i, 20 + i % 50 FROM generate_series(0, 99) i;"
        ),
    );
    let opened = open_postgres(&conninfo, &table).expect("the table loads");
    assert_eq!(opened.table.shell().n_rows(), 100);
    let all = compare(1, CmpOp::Ge, Value::Number(0.0));
    assert_eq!(opened.table.count(&all).expect("a count"), 100);
    execute(
        &conninfo,
        &format!(
            "CREATE TABLE {table}_d PARTITION OF {table} DEFAULT; \
             INSERT INTO {table} SELECT i, 30 FROM generate_series(100, 119) i; \
             CREATE TABLE {table}_2 (id int, age int); \
             INSERT INTO {table}_2 SELECT i, 40 FROM generate_series(200, 209) i; \
             ALTER TABLE {table} ATTACH PARTITION {table}_2 FOR VALUES FROM (200) TO (300);"
        ),
    );
    let mut client = postgres::Client::connect(&conninfo, postgres::NoTls).expect("the server");
    let now: i64 = client
        .query_one(&format!("SELECT count(*) FROM {table}"), &[])
        .expect("a count")
        .get(0);
    drop(client);
    let after = opened.table.count(&all);
    execute(&conninfo, &format!("DROP TABLE {table};"));
    assert_eq!(now, 130);
    assert!(
        after.is_err(),
        "the table has {now} rows, not the n = 100 of LOAD, yet it was answered: {after:?}"
    );
}

// ---------------------------------------------------------------------------------------
// Served datasets

/// Analysts are never told where the server keeps its files (README: "not where the server
/// keeps its files"; errors "never with the server's paths"). A served Parquet file whose
/// footer reads but whose data does not (a damaged page, or a file rewritten with the same
/// length and time) fails at a question with `not_parquet`, whose message is the file's full
/// path on the server.
///
/// Broke (fixed since) after 09abca9 (Parquet files served): the analyst reads "the rows of table `pq` could
/// not be read: /srv/.../secret-dir/events.parquet does not read as a Parquet file ...".
#[test]
fn a_damaged_served_parquet_file_does_not_tell_analysts_its_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let hidden = dir.path().join("curators-private-dir");
    std::fs::create_dir(&hidden).expect("a directory");
    let file = hidden.join("events.parquet");
    let ages: ArrayRef = Arc::new(Int64Array::from_iter_values((0..1000).map(|i| i % 90)));
    let batch = RecordBatch::try_from_iter([("age", ages)]).expect("a batch");
    let mut writer = ArrowWriter::try_new(
        std::fs::File::create(&file).expect("a file"),
        batch.schema(),
        None,
    )
    .expect("a writer");
    writer.write(&batch).expect("written");
    writer.close().expect("closed");
    // Damage the first data page's header, right after the magic `PAR1`: the footer (read at
    // start) is intact, the page is not.
    let mut bytes = std::fs::read(&file).expect("the file");
    for b in &mut bytes[4..24] {
        *b = 0xff;
    }
    std::fs::write(&file, &bytes).expect("damaged");
    let (secret, hash) = token();
    let policy = dir.path().join("policy.toml");
    std::fs::write(
        &policy,
        format!(
            "[[dataset]]\nname = \"pq\"\nid = \"pq-1\"\nsource = \"curators-private-dir/events.parquet\"\nbudget = 1\n\
             \n[[analyst]]\nname = \"a0\"\ntoken_hash = \"{hash}\"\nbudgets = {{ pq = 0.5 }}\n"
        ),
    )
    .expect("the policy");
    let server = Server::start_at(&policy, &dir.path().join("state"), None);
    let (_, body) = server.run(&secret, "USE pq; COUNT WHERE age < 30 WITH EPS 0.1;");
    let text = body.to_string();
    assert!(
        !body["error"].is_null(),
        "the damaged file is refused: {body}"
    );
    assert!(
        !text.contains("curators-private-dir") && !text.contains(&*dir.path().to_string_lossy()),
        "the analyst is told the server's path: {text}"
    );
}
