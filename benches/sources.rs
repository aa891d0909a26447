//! Where the rows live: `COUNT` and a cube's cell counts over the same synthetic people in
//! memory (a loaded CSV file), in a Parquet file streamed by row group, and, with
//! `DPQ_TEST_POSTGRES` naming a server, in a PostgreSQL table, pushed down as one SQL
//! statement against pulling the column out of the database and counting in the client;
//! and in a table sharded over two more PostgreSQL servers on loopback (started with
//! `.ci/postgres.sh` on ports 25441 and 25442), asked partition by partition as dpq asks it,
//! against asking the partitioned table as a whole (PostgreSQL's own plan, which pulls the
//! rows' columns from the shards).
//!
//! `DPQ_BENCH_ROWS` sets the row count (default 10 million).

mod common;
#[path = "../tests/common/shards.rs"]
mod shards;

use common::{bench_rows, people, write_parquet, write_people, write_people_parquet};
use shards::{shard_server, SHARD_PORTS};

use std::io::Read;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use dpq::data::{
    load_csv, open_parquet, open_postgres, Buckets, CmpOp, LoadOptions, Predicate, Source, Value,
};

fn age_le_30(source: &Source) -> Predicate {
    Predicate::Compare {
        column: source.column_index("age").expect("age"),
        op: CmpOp::Le,
        value: Value::Number(30.0),
    }
}

fn by_region(source: &Source) -> Vec<(usize, Buckets)> {
    let regions = ["North", "South", "East", "West", "Centre"];
    vec![(
        source.column_index("region").expect("region"),
        Buckets::Values(regions.iter().map(|r| Value::Text(r.to_string())).collect()),
    )]
}

/// The same people as a PostgreSQL table, made on the server.
fn postgres_people(conninfo: &str, rows: usize) -> Source {
    let mut client = postgres::Client::connect(conninfo, postgres::NoTls).expect("the server");
    client
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS bench_people; \
             CREATE TABLE bench_people AS SELECT \
               CASE WHEN random() < 0.01 THEN NULL ELSE 18 + floor(random() * 73)::int8 END AS age, \
               (ARRAY['North','South','East','West','Centre'])[1 + floor(random() * 5)::int] AS region \
             FROM generate_series(1, {rows}); ANALYZE bench_people;"
        ))
        .expect("the table");
    Source::Postgres(Box::new(
        open_postgres(conninfo, "bench_people")
            .expect("opens")
            .table,
    ))
}

/// The same people sharded over two servers: each makes its half, and the coordinator's
/// `bench_sharded` is partitioned by list of `shard`, each partition a `postgres_fdw`
/// foreign table on its server.
fn sharded_people(conninfo: &str, rows: usize) -> Source {
    let mut coordinator = postgres::Client::connect(conninfo, postgres::NoTls).expect("the server");
    coordinator
        .batch_execute(
            "CREATE EXTENSION IF NOT EXISTS postgres_fdw; DROP TABLE IF EXISTS bench_sharded; \
             CREATE TABLE bench_sharded (shard int, age int8, region text COLLATE \"C\") \
             PARTITION BY LIST (shard)",
        )
        .expect("the partitioned table");
    for (i, port) in SHARD_PORTS.into_iter().enumerate() {
        let mut shard =
            postgres::Client::connect(&shard_server(port), postgres::NoTls).expect("the shard");
        shard
            .batch_execute(&format!(
                "DROP TABLE IF EXISTS bench_part; CREATE TABLE bench_part AS SELECT {i} AS shard, \
                   CASE WHEN random() < 0.01 THEN NULL ELSE 18 + floor(random() * 73)::int8 END AS age, \
                   (ARRAY['North','South','East','West','Centre'])[1 + floor(random() * 5)::int] \
                   COLLATE \"C\" AS region \
                 FROM generate_series(1, {}); ANALYZE bench_part;",
                rows / 2
            ))
            .expect("the shard's half");
        coordinator
            .batch_execute(&format!(
                "DROP SERVER IF EXISTS bench_shard_{i} CASCADE; \
                 CREATE SERVER bench_shard_{i} FOREIGN DATA WRAPPER postgres_fdw \
                 OPTIONS (host '127.0.0.1', port '{port}', dbname 'postgres', async_capable 'true'); \
                 CREATE USER MAPPING FOR CURRENT_USER SERVER bench_shard_{i} OPTIONS (user 'dpq'); \
                 CREATE FOREIGN TABLE bench_sharded_{i} PARTITION OF bench_sharded \
                 FOR VALUES IN ({i}) SERVER bench_shard_{i} OPTIONS (table_name 'bench_part')"
            ))
            .expect("the foreign partition");
    }
    Source::Postgres(Box::new(
        open_postgres(conninfo, "bench_sharded")
            .expect("opens")
            .table,
    ))
}

/// The count asked of the partitioned table as a whole, with partitionwise aggregation on:
/// PostgreSQL 15 aggregates each partition on the coordinator from the rows' columns its
/// shard sends.
fn whole_table_count(conninfo: &str) -> i64 {
    let mut client = postgres::Client::connect(conninfo, postgres::NoTls).expect("the server");
    client
        .batch_execute("SET enable_partitionwise_aggregate = on")
        .expect("set");
    client
        .query_one(
            "SELECT count(*) FILTER (WHERE age <= 30) FROM bench_sharded",
            &[],
        )
        .expect("a count")
        .get(0)
}

/// Pulls the `age` column out of the database (`COPY ... TO STDOUT`) and counts in the client:
/// what a tool without push-down does.
fn pulled_count(conninfo: &str) -> u64 {
    let mut client = postgres::Client::connect(conninfo, postgres::NoTls).expect("the server");
    let mut reader = client
        .copy_out("COPY (SELECT age FROM bench_people) TO STDOUT")
        .expect("copy");
    let mut text = String::new();
    reader.read_to_string(&mut text).expect("the rows");
    text.lines()
        .filter(|l| l.parse::<i64>().is_ok_and(|a| a <= 30))
        .count() as u64
}

fn sources(c: &mut Criterion) {
    let rows = bench_rows();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let csv = dir.path().join("people.csv");
    let pq = dir.path().join("people.parquet");
    write_people(&csv, rows).expect("the CSV is written");
    write_people_parquet(&pq, rows).expect("the Parquet file is written");
    let memory = Source::Memory(
        load_csv(&csv, &LoadOptions::default())
            .expect("the CSV loads")
            .table,
    );
    let parquet = Source::Parquet(open_parquet(&pq).expect("the Parquet file opens"));
    let (p, dims) = (age_le_30(&memory), by_region(&memory));
    assert_eq!(memory.count(&p).ok(), parquet.count(&p).ok());

    let mut group = c.benchmark_group("sources");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    for (name, source) in [("memory", &memory), ("parquet", &parquet)] {
        group.bench_function(format!("{name} count age <= 30"), |b| {
            b.iter(|| source.count(&p).expect("a count"))
        });
        group.bench_function(format!("{name} cells by region"), |b| {
            b.iter(|| source.count_cells(&dims).expect("cells"))
        });
    }
    // The same people sorted by age: the row groups' statistics rule most of them out of
    // `age > 85` once each has been read whole (the first question on `age` reads them all).
    let sorted_pq = dir.path().join("sorted.parquet");
    let mut sorted: Vec<_> = people(rows).collect();
    sorted.sort_by_key(|p| p.age);
    write_parquet(&sorted_pq, sorted.into_iter()).expect("the sorted file is written");
    let sorted = Source::Parquet(open_parquet(&sorted_pq).expect("the sorted file opens"));
    let old = Predicate::Compare {
        column: memory.column_index("age").expect("age"),
        op: CmpOp::Gt,
        value: Value::Number(85.0),
    };
    assert_eq!(memory.count(&old).ok(), sorted.count(&old).ok());
    group.bench_function(
        "parquet sorted by age, count age > 85, groups skipped",
        |b| b.iter(|| sorted.count(&old).expect("a count")),
    );
    group.bench_function("parquet unsorted, count age > 85", |b| {
        b.iter(|| parquet.count(&old).expect("a count"))
    });
    if let Ok(conninfo) = std::env::var("DPQ_TEST_POSTGRES") {
        let table = postgres_people(&conninfo, rows);
        let (p, dims) = (age_le_30(&table), by_region(&table));
        assert_eq!(table.count(&p).ok(), Some(pulled_count(&conninfo)));
        group.bench_function("postgres count age <= 30, pushed down", |b| {
            b.iter(|| table.count(&p).expect("a count"))
        });
        group.bench_function("postgres cells by region, pushed down", |b| {
            b.iter(|| table.count_cells(&dims).expect("cells"))
        });
        group.bench_function("postgres count age <= 30, rows pulled", |b| {
            b.iter(|| pulled_count(&conninfo))
        });
        let sharded = sharded_people(&conninfo, rows);
        let (p, dims) = (age_le_30(&sharded), by_region(&sharded));
        assert_eq!(
            sharded.count(&p).ok().and_then(|n| i64::try_from(n).ok()),
            Some(whole_table_count(&conninfo))
        );
        group.bench_function("sharded count age <= 30, per partition", |b| {
            b.iter(|| sharded.count(&p).expect("a count"))
        });
        group.bench_function("sharded cells by region, per partition", |b| {
            b.iter(|| sharded.count_cells(&dims).expect("cells"))
        });
        group.bench_function("sharded count age <= 30, whole table", |b| {
            b.iter(|| whole_table_count(&conninfo))
        });
    }
    group.finish();
}

criterion_group!(benches, sources);
criterion_main!(benches);
