//! Constant work: what a question reads does not depend on the values the data holds
//! (SPEC section 1, "time is an output too"). Pairs of conditions of one shape, one literal
//! present (or in range) and one absent (or out of range, or at the minimum's edge), read
//! the same cells, row groups and rows, on the column store of a CSV file and on Parquet
//! files served as `dpq serve` serves them. The rows are sorted by `age`, so that each
//! segment and row group holds a narrow range of it: where shortcuts on a segment's bounds
//! would have read nothing, and row-group skipping would have skipped.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray};
use dpq::data::{load_csv, open_parquet, CmpOp, LoadOptions, Predicate, Source, Value, Work};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;

/// Rows: enough for several segments of the column store (a chunk per MiB of CSV).
const ROWS: usize = 240_000;

/// Row `i`: `age` rising from 0 to 99 over the rows, a `region` of four (`west` only in the
/// second half), a `score` in [0, 1), a `flag`.
fn row(i: usize) -> (i64, &'static str, f64, bool) {
    let age = (i * 100 / ROWS) as i64;
    let regions = if i < ROWS / 2 {
        ["east", "north", "south", "east"]
    } else {
        ["east", "north", "south", "west"]
    };
    (
        age,
        regions[i % 4],
        (i % 1000) as f64 / 1000.0,
        i.is_multiple_of(3),
    )
}

fn write_csv(path: &Path) {
    let mut text = String::from("age,region,score,flag,note\n");
    for i in 0..ROWS {
        let (age, region, score, flag) = row(i);
        // A padding column, so that the file spans several chunks.
        text.push_str(&format!("{age},{region},{score},{flag},xxxxxxxxxxxx\n"));
    }
    std::fs::write(path, text).unwrap();
}

fn write_parquet(path: &Path) {
    let rows: Vec<_> = (0..ROWS).map(row).collect();
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            "age",
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
        ),
        (
            "region",
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.1))),
        ),
        (
            "score",
            Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.2))),
        ),
        (
            "flag",
            Arc::new(BooleanArray::from_iter(rows.iter().map(|r| Some(r.3)))),
        ),
    ];
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(20_000))
        .build();
    let file = std::fs::File::create(path).unwrap();
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

const AGE: usize = 0;
const REGION: usize = 1;
const SCORE: usize = 2;
const FLAG: usize = 3;

fn cmp(column: usize, op: CmpOp, value: Value) -> Predicate {
    Predicate::Compare { column, op, value }
}
fn num(x: f64) -> Value {
    Value::Number(x)
}
fn text(s: &str) -> Value {
    Value::Text(s.to_string())
}
fn and(a: Predicate, b: Predicate) -> Predicate {
    Predicate::And(Box::new(a), Box::new(b))
}
fn or(a: Predicate, b: Predicate) -> Predicate {
    Predicate::Or(Box::new(a), Box::new(b))
}
fn not(a: Predicate) -> Predicate {
    Predicate::Not(Box::new(a))
}

/// Pairs of conditions of one shape: the first's literal is in the data (or its range meets
/// it), the second's is not (or its range misses it, or covers every value).
fn pairs() -> Vec<(&'static str, Predicate, Predicate)> {
    use CmpOp::*;
    vec![
        (
            "a present against an absent text value",
            cmp(REGION, Eq, text("west")),
            cmp(REGION, Eq, text("wesu")),
        ),
        (
            "`!=` a present against an absent text value",
            cmp(REGION, Ne, text("west")),
            cmp(REGION, Ne, text("wesu")),
        ),
        (
            "IN with present against absent values",
            Predicate::In {
                column: REGION,
                values: vec![text("west"), text("east")],
            },
            Predicate::In {
                column: REGION,
                values: vec![text("wesu"), text("eass")],
            },
        ),
        (
            "IN with a run of codes against scattered codes",
            Predicate::In {
                column: REGION,
                values: vec![text("east"), text("north")],
            },
            Predicate::In {
                column: REGION,
                values: vec![text("east"), text("west")],
            },
        ),
        (
            "a text range below every value",
            cmp(REGION, Lt, text("south")),
            cmp(REGION, Lt, text("a")),
        ),
        (
            "an integer threshold in range against beyond the maximum",
            cmp(AGE, Gt, num(50.0)),
            cmp(AGE, Gt, num(1000.0)),
        ),
        (
            "an integer threshold at the minimum's edge",
            cmp(AGE, Gt, num(-1.0)),
            cmp(AGE, Gt, num(-2.0)),
        ),
        (
            "`=` an integer held by one segment against none",
            cmp(AGE, Eq, num(30.0)),
            cmp(AGE, Eq, num(3000.0)),
        ),
        (
            "IN integers some segments hold against none",
            Predicate::In {
                column: AGE,
                values: vec![num(5.0), num(60.0)],
            },
            Predicate::In {
                column: AGE,
                values: vec![num(500.0), num(600.0)],
            },
        ),
        (
            "BETWEEN in range against out of range",
            Predicate::Between {
                column: AGE,
                low: num(10.0),
                high: num(20.0),
            },
            Predicate::Between {
                column: AGE,
                low: num(200.0),
                high: num(300.0),
            },
        ),
        (
            "a float threshold in range against below every value",
            cmp(SCORE, Lt, num(0.5)),
            cmp(SCORE, Lt, num(-100.0)),
        ),
        (
            "a boolean true on some rows against false on all",
            cmp(FLAG, Eq, Value::Bool(true)),
            Predicate::Between {
                column: FLAG,
                low: Value::Bool(true),
                high: Value::Bool(false),
            },
        ),
        (
            "NOT, AND and OR over present and absent values",
            or(
                and(cmp(AGE, Gt, num(50.0)), cmp(REGION, Eq, text("west"))),
                not(cmp(SCORE, Ge, num(0.25))),
            ),
            or(
                and(cmp(AGE, Gt, num(5000.0)), cmp(REGION, Eq, text("wesu"))),
                not(cmp(SCORE, Ge, num(-7.0))),
            ),
        ),
    ]
}

/// Asks every pair on `source` and returns the pairs whose two sides worked differently.
fn unequal(source: &Source) -> Vec<String> {
    let mut out = Vec::new();
    for (what, present, absent) in pairs() {
        let (n1, w1): (u64, Work) = source.count_work(&present).unwrap();
        let (n2, w2) = source.count_work(&absent).unwrap();
        eprintln!("{what}: {n1} rows, {w1:?}; {n2} rows, {w2:?}");
        if w1 != w2 {
            out.push(format!("{what}: {w1:?} against {w2:?}"));
        }
        assert!(w1.cells > 0, "{what}: no cell was read");
    }
    out
}

#[test]
fn the_column_store_reads_every_cell_whatever_the_literal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rows.csv");
    write_csv(&path);
    let table = load_csv(&path, &LoadOptions::default()).unwrap().table;
    let source = Source::Memory(table);
    let (_, work) = source.count_work(&cmp(AGE, CmpOp::Gt, num(50.0))).unwrap();
    assert!(
        work.groups >= 2,
        "the file is read into one segment only ({work:?}): the test needs several"
    );
    // Every leaf reads every row: one leaf, every cell of its column.
    assert_eq!(work.cells, ROWS as u64);
    assert_eq!(unequal(&source), Vec::<String>::new());
}

#[test]
fn served_parquet_reads_every_row_group_whatever_the_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rows.parquet");
    write_parquet(&path);
    let mut source = Source::Parquet(open_parquet(&path).unwrap());
    source.constant_work();
    // Every column read whole once: where skipping, were it on, would start.
    for c in [AGE, REGION, SCORE, FLAG] {
        source
            .count_work(&cmp(c, CmpOp::Eq, Value::Number(f64::NAN)))
            .unwrap();
    }
    let (_, work) = source.count_work(&cmp(AGE, CmpOp::Gt, num(50.0))).unwrap();
    assert_eq!(work.groups, (ROWS / 20_000) as u64);
    assert_eq!(work.rows, ROWS as u64);
    assert_eq!(unequal(&source), Vec::<String>::new());
}

/// The counter sees skipping where it happens: in a local session the same file, once its
/// columns were read whole, skips row groups that an out-of-range threshold rules out. (What
/// a served dataset must never do, and what the test above would catch.)
#[test]
fn local_parquet_skips_and_the_counter_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rows.parquet");
    write_parquet(&path);
    let source = Source::Parquet(open_parquet(&path).unwrap());
    source
        .count_work(&cmp(AGE, CmpOp::Eq, Value::Number(f64::NAN)))
        .unwrap();
    let (_, inside) = source.count_work(&cmp(AGE, CmpOp::Gt, num(50.0))).unwrap();
    let (_, beyond) = source
        .count_work(&cmp(AGE, CmpOp::Gt, num(1000.0)))
        .unwrap();
    assert!(
        beyond.groups < inside.groups,
        "{beyond:?} against {inside:?}"
    );
}

/// A served table's lanes are as wide as public facts say: one outlying value (an age of
/// 300, a text of its own) widens nothing, and every answer stays the same.
#[test]
fn served_lanes_are_as_wide_as_public_facts_say() {
    use dpq::data::{Declared, Domain};
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.csv");
    write_csv(&plain);
    let text = std::fs::read_to_string(&plain).unwrap();
    let outlier = dir.path().join("outlier.csv");
    std::fs::write(&outlier, text.replacen("\n0,", "\n300,", 1)).unwrap();
    let load = |p: &Path| load_csv(p, &LoadOptions::default()).unwrap().table;
    // Without the step below, the outlier's segment is wider: what padding alone must hide.
    assert_ne!(load(&plain).lane_bits(AGE), load(&outlier).lane_bits(AGE));
    for declared in [
        None,
        Some(vec![
            Declared {
                domain: Domain::Range {
                    min: 0.into(),
                    max: 1000.into(),
                },
                ..Declared::new("age", dpq::data::ColumnType::Integer)
            },
            Declared {
                domain: Domain::Values(vec!["east".into(), "west".into()]),
                ..Declared::new("region", dpq::data::ColumnType::Text)
            },
        ]),
    ] {
        let a = load(&plain).with_public_widths(declared.as_deref());
        let b = load(&outlier).with_public_widths(declared.as_deref());
        let expected = if declared.is_some() {
            (16, 8)
        } else {
            (64, 32)
        };
        for t in [&a, &b] {
            assert!(
                t.lane_bits(AGE).iter().all(|&w| w == expected.0),
                "{declared:?}"
            );
            assert!(
                t.lane_bits(REGION).iter().all(|&w| w == expected.1),
                "{declared:?}"
            );
        }
        let (plain_source, wide) = (Source::Memory(load(&plain)), Source::Memory(a));
        for (what, p, q) in pairs() {
            for pred in [p, q] {
                assert_eq!(
                    plain_source.count(&pred).unwrap(),
                    wide.count(&pred).unwrap(),
                    "{what}"
                );
            }
        }
    }
}
