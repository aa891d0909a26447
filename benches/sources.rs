//! Where the rows live: `COUNT` and a cube's cell counts over the same synthetic people in
//! memory (a loaded CSV file), in a Parquet file streamed by row group, and, with
//! `DPQ_TEST_POSTGRES` naming a server, in a PostgreSQL table, pushed down as one SQL
//! statement against pulling the column out of the database and counting in the client.
//!
//! `DPQ_BENCH_ROWS` sets the row count (default 10 million).

mod common;

use common::{bench_rows, write_people, write_people_parquet};

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
    }
    group.finish();
}

criterion_group!(benches, sources);
criterion_main!(benches);
