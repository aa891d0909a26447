//! Benchmark of `count` over a 10-million-row table loaded from a generated CSV file.
//!
//! The file is written to a temporary directory and loaded once at setup. Set
//! `DPQ_BENCH_ROWS` to use another row count.

mod common;

use common::{bench_rows, write_people};

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use dpq::data::{count, load_csv, CmpOp, LoadOptions, Predicate, Table, Value};

fn compare(table: &Table, column: &str, op: CmpOp, value: Value) -> Predicate {
    Predicate::Compare {
        column: table.column_index(column).expect("a benchmark column"),
        op,
        value,
    }
}

fn and(a: Predicate, b: Predicate) -> Predicate {
    Predicate::And(Box::new(a), Box::new(b))
}

fn counts(c: &mut Criterion) {
    let rows = bench_rows();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("people.csv");
    write_people(&path, rows).expect("the benchmark file is written");
    let table = load_csv(&path, &LoadOptions::default())
        .expect("the benchmark file loads")
        .table;
    let text = |s: &str| Value::Text(s.to_string());

    let age_le_30 = compare(&table, "age", CmpOp::Le, Value::Number(30.0));
    let f_and_rich = and(
        compare(&table, "sex", CmpOp::Eq, text("F")),
        compare(&table, "income", CmpOp::Gt, Value::Number(50_000.0)),
    );
    let region_in = Predicate::In {
        column: table.column_index("region").expect("region"),
        values: vec![text("North"), text("East"), text("Centre")],
    };
    let mixed = Predicate::Or(
        Box::new(Predicate::Between {
            column: table.column_index("height_cm").expect("height_cm"),
            low: Value::Number(160.0),
            high: Value::Number(175.5),
        }),
        Box::new(Predicate::Not(Box::new(compare(
            &table,
            "employed",
            CmpOp::Eq,
            Value::Bool(true),
        )))),
    );

    let mut group = c.benchmark_group("count");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    for (name, pred) in [
        ("age <= 30", &age_le_30),
        ("sex = 'F' AND income > 50000", &f_and_rich),
        ("region IN ('North', 'East', 'Centre')", &region_in),
        (
            "height_cm BETWEEN 160 AND 175.5 OR NOT employed = true",
            &mixed,
        ),
    ] {
        group.bench_function(format!("{name} ({rows} rows)"), |b| {
            b.iter(|| count(&table, pred))
        });
    }
    group.finish();
}

criterion_group!(benches, counts);
criterion_main!(benches);
