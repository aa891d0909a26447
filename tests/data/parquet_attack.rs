//! Attacks on Parquet tables.

use std::path::Path;
use std::sync::Arc;

use arrow_array::types::Int8Type;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_array::{
    Date32Array, DictionaryArray, Int64Array, StringArray, Time64MicrosecondArray,
    TimestampMicrosecondArray, TimestampMillisecondArray, UInt64Array,
};
use dpq::data::{open_parquet, CmpOp, Predicate, Source, Value};
use dpq::eval::{Randomness, Session};
use dpq::privacy::Store;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;

use crate::common;
use common::{run_json, write};

fn session(dir: &Path) -> Session {
    Session::with_store(Randomness::Os, Store::dir(dir.join("state")))
}

fn write_parquet(path: &Path, columns: Vec<(&str, ArrayRef)>, group: Option<usize>) {
    let batch = RecordBatch::try_from_iter(columns).expect("a batch");
    write_batches(path, &[batch], group);
}

fn write_batches(path: &Path, batches: &[RecordBatch], group: Option<usize>) {
    let file = std::fs::File::create(path).expect("a file");
    let mut props = WriterProperties::builder();
    if let Some(g) = group {
        props = props.set_max_row_group_row_count(Some(g));
    }
    let mut writer =
        ArrowWriter::try_new(file, batches[0].schema(), Some(props.build())).expect("a writer");
    for b in batches {
        writer.write(b).expect("written");
    }
    writer.close().expect("closed");
}

fn kinds(out: &[serde_json::Value]) -> Vec<String> {
    out.iter()
        .map(|o| o["kind"].as_str().unwrap_or("?").to_string())
        .collect()
}

fn message(o: &serde_json::Value) -> String {
    o["message"].as_str().unwrap_or_default().to_string()
}

fn compare(column: usize, op: CmpOp, value: Value) -> Predicate {
    Predicate::Compare { column, op, value }
}

fn text(s: &str) -> Value {
    Value::Text(s.to_string())
}

/// A value the column store cannot hold (an unsigned integer past `i64::MAX`, a date past
/// the calendar's range, a time of day past midnight) was an error at every question on its
/// column: the table could never be asked about it, and whether the error came told whether
/// such a value was in the file. It is a missing value, as a float that is not finite is.
#[test]
fn a_value_that_does_not_convert_is_missing_not_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("odd.parquet");
    write_parquet(
        &file,
        vec![
            ("u", Arc::new(UInt64Array::from(vec![1, u64::MAX, 5]))),
            ("day", Arc::new(Date32Array::from(vec![0, i32::MAX, 1]))),
            (
                "at",
                Arc::new(Time64MicrosecondArray::from(vec![0, 2 * 86_400_000_000, 1])),
            ),
        ],
        None,
    );
    let source = Source::Parquet(open_parquet(&file).expect("the file opens"));
    let n = Value::Number;
    assert_eq!(source.count(&compare(0, CmpOp::Gt, n(0.0))).ok(), Some(2));
    assert_eq!(source.count(&compare(0, CmpOp::Lt, n(0.0))).ok(), Some(0));
    assert_eq!(
        source.count(&compare(1, CmpOp::Ge, text("1970"))).ok(),
        Some(2)
    );
    assert_eq!(
        source
            .count(&compare(1, CmpOp::Eq, text("1970-01-02")))
            .ok(),
        Some(1)
    );
    assert_eq!(
        source.count(&compare(2, CmpOp::Ge, text("00"))).ok(),
        Some(2)
    );
    let sum = source.sum_clamped(
        0,
        None,
        dpq::data::Clamp::Int {
            lo: 0,
            hi: 10,
            k: 0,
        },
    );
    assert_eq!(sum.ok().map(|(_, rows)| rows), Some(2));
}

/// A timestamp with a named time zone (`UTC`, as pandas and Spark write it) could never be
/// read: the zone's name did not parse, and every question on the column failed. Files of
/// one table in different zones wrote the same instant as different text. Every zoned
/// timestamp is its UTC instant, `...Z`.
#[test]
fn zoned_timestamps_read_as_their_utc_instant() {
    let dir = tempfile::tempdir().expect("tempdir");
    let at = |zone: &str| -> ArrayRef {
        Arc::new(TimestampMicrosecondArray::from(vec![0, 3_600_000_000]).with_timezone(zone))
    };
    write_parquet(&dir.path().join("a.parquet"), vec![("at", at("UTC"))], None);
    write_parquet(
        &dir.path().join("b.parquet"),
        vec![("at", at("+05:00"))],
        None,
    );
    write_parquet(
        &dir.path().join("c.parquet"),
        vec![("at", at("America/New_York"))],
        None,
    );
    let source = Source::Parquet(open_parquet(dir.path()).expect("the files open"));
    let midnight = compare(0, CmpOp::Eq, text("1970-01-01T00:00:00Z"));
    assert_eq!(source.count(&midnight).ok(), Some(3));
    let later = compare(0, CmpOp::Ge, text("1970-01-01T01"));
    assert_eq!(source.count(&later).ok(), Some(3));
}

/// Column names a CSV header may not have (a control character, a right-to-left override, an
/// empty name, a name twice) were taken from a Parquet file as they were: shown on a
/// terminal, the override reorders what follows; a repeated name answers for the first
/// column only. They are refused at `LOAD`, as in a CSV header.
#[test]
fn column_names_are_held_to_a_csv_headers_rules() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = session(dir.path());
    let one = || -> ArrayRef { Arc::new(Int64Array::from(vec![1, 2])) };
    for (tag, names) in [
        ("override", ["a\u{202E}b", "c"]),
        ("control", ["a\nb", "c"]),
        ("twice", ["a", "a"]),
        ("empty", ["", "c"]),
    ] {
        let path = dir.path().join(format!("{tag}.parquet"));
        write_parquet(&path, names.iter().map(|n| (*n, one())).collect(), None);
        let out = run_json(&mut s, &format!("LOAD '{}' AS {tag};", path.display()));
        assert_eq!(kinds(&out), ["error"], "{tag}: {out:?}");
        assert!(message(&out[0]).contains("column names"), "{tag}: {out:?}");
        assert!(!message(&out[0]).contains('\u{202E}'), "{out:?}");
    }
    // A keyword is a name like any other, as in a CSV header.
    let path = dir.path().join("keywords.parquet");
    write_parquet(&path, vec![("where", one()), ("count", one())], None);
    let out = run_json(&mut s, &format!("LOAD '{}' AS k;", path.display()));
    assert_eq!(kinds(&out), ["loaded"], "{out:?}");
}

/// A CSV file whose name holds `[` (or `*`, `?`) was taken for a pattern of Parquet files
/// and could not be loaded ("no file matches the pattern"); a Parquet file so named matched
/// nothing either. A path that names a file is that file.
#[test]
fn a_file_named_like_a_pattern_is_that_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let csv = write(dir.path(), "visits[2024].csv", "a,b\n1,2\n3,4\n");
    let pq = dir.path().join("events[1].parquet");
    write_parquet(
        &pq,
        vec![("x", Arc::new(Int64Array::from(vec![1, 2, 3])))],
        None,
    );
    let mut s = session(dir.path());
    let out = run_json(
        &mut s,
        &format!(
            "LOAD '{}' AS visits; LOAD '{}' AS events;",
            csv.display(),
            pq.display()
        ),
    );
    assert_eq!(kinds(&out), ["loaded", "loaded"], "{out:?}");
    assert_eq!((&out[0]["n"], &out[1]["n"]), (&2.into(), &3.into()));
}

/// The files of one table must write their text alike: a date (`1970-01-01`) in one file and
/// a timestamp (`1970-01-01T00:00:00`) or a string in another were one `text` column, where
/// one condition meant different things in different files.
#[test]
fn files_of_one_table_agree_on_how_their_text_is_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_parquet(
        &dir.path().join("a.parquet"),
        vec![("day", Arc::new(Date32Array::from(vec![0, 1])))],
        None,
    );
    write_parquet(
        &dir.path().join("b.parquet"),
        vec![(
            "day",
            Arc::new(TimestampMillisecondArray::from(vec![0, 86_400_000])),
        )],
        None,
    );
    let err = open_parquet(dir.path()).expect_err("the files disagree");
    assert!(err.to_string().contains("other columns or types"), "{err}");
    // Strings agree with strings however they are stored: plain, dictionary-encoded.
    let other = tempfile::tempdir().expect("tempdir");
    write_parquet(
        &other.path().join("a.parquet"),
        vec![("s", Arc::new(StringArray::from(vec!["x", "y"])))],
        None,
    );
    let dict: DictionaryArray<Int8Type> = vec!["y", "z"].into_iter().collect();
    write_parquet(
        &other.path().join("b.parquet"),
        vec![("s", Arc::new(dict))],
        None,
    );
    let source = Source::Parquet(open_parquet(other.path()).expect("the files agree"));
    assert_eq!(
        source.count(&compare(0, CmpOp::Eq, text("y"))).ok(),
        Some(2)
    );
}

/// Writes the files of the measurements (run by hand, `DPQ_ATTACK_OUT=dir cargo test --release
/// --test data parquet_attack -- --ignored`): one file of 20,000 row groups of one row, and one
/// row group of 8,000,000 rows with a text column of distinct values.
#[test]
#[ignore]
fn make_measurement_files() {
    let Ok(out) = std::env::var("DPQ_ATTACK_OUT") else {
        return;
    };
    let out = Path::new(&out);
    let batch = |from: i64, n: i64| {
        RecordBatch::try_from_iter(vec![
            (
                "x",
                Arc::new(Int64Array::from_iter_values(from..from + n)) as ArrayRef,
            ),
            (
                "s",
                Arc::new(StringArray::from_iter_values(
                    (from..from + n).map(|i| format!("value number {i:012}")),
                )),
            ),
        ])
        .expect("a batch")
    };
    let small: Vec<RecordBatch> = (0..20_000).map(|i| batch(i, 1)).collect();
    write_batches(&out.join("many.parquet"), &small, Some(1));
    let big: Vec<RecordBatch> = (0..80).map(|i| batch(i * 100_000, 100_000)).collect();
    write_batches(&out.join("huge.parquet"), &big, Some(usize::MAX));
}

/// A question parsed a file's footer again for each of its row groups: a file of 20,000
/// row groups of one row (9.6 MB) took 4 minutes 13 seconds to count, quadratic in the
/// number of groups. The footer is parsed once, at `LOAD`, and the files are then held to
/// their length, modification time, inode and change time: a footer damaged since, even with
/// the modification time put back, is noticed (the change time cannot be put back) and the
/// question refused, rather than answered from a footer that no longer describes the file.
#[test]
fn a_footer_damaged_since_load_is_noticed() {
    use std::io::{Seek, SeekFrom, Write};
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("groups.parquet");
    let batches: Vec<RecordBatch> = (0..50)
        .map(|i| {
            RecordBatch::try_from_iter(vec![("x", Arc::new(Int64Array::from(vec![i])) as ArrayRef)])
                .expect("a batch")
        })
        .collect();
    write_batches(&file, &batches, Some(1));
    let source = Source::Parquet(open_parquet(&file).expect("the file opens"));
    let modified = std::fs::metadata(&file)
        .and_then(|m| m.modified())
        .expect("a time");
    let bytes = std::fs::read(&file).expect("the bytes");
    let end = bytes.len() - 8;
    let footer = u32::from_le_bytes(bytes[end..end + 4].try_into().expect("4 bytes")) as usize;
    let mut handle = std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .expect("open");
    handle
        .seek(SeekFrom::Start((end - footer) as u64))
        .expect("seek");
    handle.write_all(&vec![0xff; footer]).expect("written");
    handle.set_modified(modified).expect("the time is put back");
    drop(handle);
    let at_least = compare(0, CmpOp::Ge, Value::Number(10.0));
    let refused = source.count(&at_least).expect_err("the file changed");
    assert!(refused.to_string().contains("changed"), "{refused}");
}

/// Edge values give the same exact answers from a CSV file and from Parquet: the extremes of
/// `i64`, `-0.0` against `0`, a float literal against an integer column, a string
/// in NFC and one not; and a truncated copy is refused without quoting its bytes.
#[test]
fn edge_values_agree_with_csv() {
    use arrow_array::Float64Array;
    let dir = tempfile::tempdir().expect("tempdir");
    let csv = write(
        dir.path(),
        "edge.csv",
        "i,f,s\n-9223372036854775808,-0.0,a\n9223372036854775807,0,e\u{301}\n0,1.5,\u{e9}\n",
    );
    let file = dir.path().join("edge.parquet");
    write_parquet(
        &file,
        vec![
            ("i", Arc::new(Int64Array::from(vec![i64::MIN, i64::MAX, 0]))),
            ("f", Arc::new(Float64Array::from(vec![-0.0, 0.0, 1.5]))),
            (
                "s",
                Arc::new(StringArray::from(vec!["a", "e\u{301}", "\u{e9}"])),
            ),
        ],
        None,
    );
    let memory = Source::Memory(
        dpq::data::load_csv(&csv, &dpq::data::LoadOptions::default())
            .expect("the CSV loads")
            .table,
    );
    let streamed = Source::Parquet(open_parquet(&file).expect("the file opens"));
    let n = Value::Number;
    for pred in [
        compare(0, CmpOp::Lt, n(-9.2e18)),
        compare(0, CmpOp::Ge, n(i64::MAX as f64)),
        compare(0, CmpOp::Eq, n(0.5)),
        compare(0, CmpOp::Le, n(0.0)),
        compare(1, CmpOp::Eq, n(0.0)),
        compare(1, CmpOp::Lt, n(0.0)),
        compare(2, CmpOp::Eq, text("\u{e9}")),
        compare(2, CmpOp::Gt, text("e")),
    ] {
        assert_eq!(
            memory.count(&pred).ok(),
            streamed.count(&pred).ok(),
            "{pred:?}"
        );
    }
    // A truncated copy: refused at LOAD, in dpq's words only.
    let bytes = std::fs::read(&file).expect("bytes");
    let cut = dir.path().join("cut.parquet");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).expect("written");
    let mut s = session(dir.path());
    let out = run_json(&mut s, &format!("LOAD '{}' AS cut;", cut.display()));
    assert_eq!(kinds(&out), ["error"], "{out:?}");
    assert!(
        message(&out[0]).contains("does not read as a Parquet file"),
        "{out:?}"
    );
}

/// Random rows written every way a writer may encode them (dictionary pages, plain pages, a
/// dictionary that overflows into plain pages mid-chunk, small row groups and pages), read
/// back streamed: every count and every cell count equals the column store's over the same
/// batches held in memory. Integers include negatives and both ends of an `i64`; text
/// includes missing values and literals no row holds; the file's strings come through
/// Arrow's dictionary reading (`reading_schema`), the memory table's as plain strings.
#[test]
fn streamed_counts_equal_the_column_stores_whatever_the_encoding() {
    use dpq::data::{from_batches, Buckets};
    use rand::{Rng, SeedableRng};
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(28);
    let words = ["North", "South", "East", "West", "Centre", "é", "", "zz"];
    let batches: Vec<RecordBatch> = (0..3)
        .map(|_| {
            let rows = rng.random_range(1..5000);
            let ints: Vec<Option<i64>> = (0..rows)
                .map(|_| match rng.random_range(0..20) {
                    0 => None,
                    1 => Some(i64::MIN),
                    2 => Some(i64::MAX),
                    3 => Some(rng.random()),
                    _ => Some(rng.random_range(-100..100)),
                })
                .collect();
            let texts: Vec<Option<String>> = (0..rows)
                .map(|_| match rng.random_range(0..12) {
                    0 => None,
                    1 => Some(format!("w{}", rng.random_range(0..3000))),
                    _ => Some(words[rng.random_range(0..words.len() - 1)].to_string()),
                })
                .collect();
            RecordBatch::try_from_iter(vec![
                ("x", Arc::new(Int64Array::from(ints)) as ArrayRef),
                ("s", Arc::new(StringArray::from(texts)) as ArrayRef),
            ])
            .expect("a batch")
        })
        .collect();
    let (table, _) = from_batches(&batches[0].schema(), &batches, "rows").expect("rows read");
    let memory = Source::Memory(table);
    let writers = [
        WriterProperties::builder().build(),
        WriterProperties::builder()
            .set_dictionary_enabled(false)
            .build(),
        WriterProperties::builder()
            .set_dictionary_page_size_limit(256)
            .set_data_page_row_count_limit(100)
            .set_write_batch_size(50)
            .set_max_row_group_row_count(Some(777))
            .build(),
    ];
    let n = Value::Number;
    let preds = [
        compare(0, CmpOp::Le, n(30.0)),
        compare(0, CmpOp::Gt, n(-5.5)),
        compare(0, CmpOp::Eq, n(i64::MAX as f64)),
        compare(0, CmpOp::Lt, n(-9.3e18)),
        compare(1, CmpOp::Eq, text("East")),
        compare(1, CmpOp::Eq, text("zz")),
        compare(1, CmpOp::Ne, text("absent")),
        compare(1, CmpOp::Ge, text("w1")),
        Predicate::In {
            column: 1,
            values: vec![text("North"), text("nowhere"), text("")],
        },
        Predicate::Not(Box::new(Predicate::And(
            Box::new(compare(1, CmpOp::Lt, text("S"))),
            Box::new(compare(0, CmpOp::Ge, n(0.0))),
        ))),
    ];
    let dims = vec![
        (
            1,
            Buckets::Values(vec![text("Centre"), text("é"), text("zz"), text("")]),
        ),
        (0, Buckets::Cuts(vec![-50.0, 0.0, 1e18])),
    ];
    for (i, props) in writers.into_iter().enumerate() {
        let file = dir.path().join(format!("rows{i}.parquet"));
        let f = std::fs::File::create(&file).expect("a file");
        let mut w = ArrowWriter::try_new(f, batches[0].schema(), Some(props)).expect("a writer");
        for b in &batches {
            w.write(b).expect("written");
        }
        w.close().expect("closed");
        let streamed = Source::Parquet(open_parquet(&file).expect("the file opens"));
        for _ in 0..2 {
            // Twice: the second time with the bounds the first read kept.
            for pred in &preds {
                assert_eq!(
                    memory.count(pred).ok(),
                    streamed.count(pred).ok(),
                    "writer {i}: {pred:?}"
                );
            }
            assert_eq!(
                memory.count_cells(&dims).ok(),
                streamed.count_cells(&dims).ok(),
                "writer {i}"
            );
        }
    }
}

/// `v` against `x` exactly (`x` finite and below `2^100` in size).
fn exact(v: i128, x: f64) -> std::cmp::Ordering {
    let floor = x.floor() as i128;
    match v.cmp(&floor) {
        std::cmp::Ordering::Equal if x != x.floor() => std::cmp::Ordering::Less,
        other => other,
    }
}

/// Integer columns of every Arrow width, signed and unsigned, are read at their own width:
/// counts over them equal the rows a direct comparison of the values finds, with missing
/// values, the types' extremes, and literals beyond a type's range or between integers.
#[test]
fn integer_columns_of_every_width_count_exactly() {
    use arrow_array::{Int16Array, Int32Array, Int8Array, UInt16Array, UInt32Array, UInt8Array};
    let dir = tempfile::tempdir().expect("tempdir");
    let rows = 70_000usize;
    // Row `i`'s value as an i128 of the column's type, or missing.
    let pick = |i: usize, lo: i128, hi: i128| -> Option<i128> {
        let h = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20;
        match h % 9 {
            0 => None,
            1 => Some(lo),
            2 => Some(hi),
            3 => Some(lo + i128::from(h % 7)),
            _ => Some((lo + hi) / 2 + i128::from(h % 41) - 20),
        }
    };
    let kinds: [(i128, i128); 7] = [
        (i128::from(i8::MIN), i128::from(i8::MAX)),
        (i128::from(i16::MIN), i128::from(i16::MAX)),
        (i128::from(i32::MIN), i128::from(i32::MAX)),
        (0, i128::from(u8::MAX)),
        (0, i128::from(u16::MAX)),
        (0, i128::from(u32::MAX)),
        (0, i128::from(u64::MAX)),
    ];
    let values: Vec<Vec<Option<i128>>> = kinds
        .iter()
        .map(|&(lo, hi)| (0..rows).map(|i| pick(i, lo, hi)).collect())
        .collect();
    let as_t = |c: usize| -> Vec<Option<i128>> { values[c].clone() };
    macro_rules! column {
        ($c:expr, $t:ty, $a:ty) => {
            Arc::new(<$a>::from(
                as_t($c)
                    .into_iter()
                    .map(|v| v.map(|x| x as $t))
                    .collect::<Vec<_>>(),
            )) as ArrayRef
        };
    }
    let batch = RecordBatch::try_from_iter([
        ("i8", column!(0, i8, Int8Array)),
        ("i16", column!(1, i16, Int16Array)),
        ("i32", column!(2, i32, Int32Array)),
        ("u8", column!(3, u8, UInt8Array)),
        ("u16", column!(4, u16, UInt16Array)),
        ("u32", column!(5, u32, UInt32Array)),
        ("u64", column!(6, u64, UInt64Array)),
    ])
    .expect("a batch");
    let file = dir.path().join("widths.parquet");
    write_batches(&file, &[batch], Some(50_000));
    let mut parquet = open_parquet(&file).expect("the file opens");
    parquet.constant_work();
    let streamed = Source::Parquet(parquet);
    for (c, &(lo, hi)) in kinds.iter().enumerate() {
        // An unsigned value past i64::MAX is missing, as the column store reads it.
        let present = |x: i128| x <= i128::from(i64::MAX);
        let literals = [
            lo as f64 - 1.0,
            lo as f64,
            lo as f64 + 3.5,
            ((lo + hi) / 2) as f64,
            hi as f64,
            hi as f64 + 1.0,
            -1e30,
            1e30,
        ];
        for &x in &literals {
            for op in CmpOp::ALL {
                let want = values[c]
                    .iter()
                    .flatten()
                    .filter(|&&v| present(v))
                    .filter(|&&v| op.holds(exact(v, x)))
                    .count() as u64;
                let got = streamed
                    .count(&compare(c, op, Value::Number(x)))
                    .expect("counted");
                assert_eq!(got, want, "column {c} {op:?} {x}");
            }
        }
        let listed = [lo as f64, hi as f64, lo as f64 + 3.0, 0.5, 1e30];
        let want = values[c]
            .iter()
            .flatten()
            .filter(|&&v| present(v) && listed.iter().any(|&x| exact(v, x).is_eq()))
            .count() as u64;
        let got = streamed
            .count(&Predicate::In {
                column: c,
                values: listed.iter().map(|&x| Value::Number(x)).collect(),
            })
            .expect("counted");
        assert_eq!(got, want, "column {c} IN");
    }
}

/// A row group of many batches shares one dictionary page, sorted once for the group: counts
/// and cells equal the column store's when the group's batches reuse it, when the writer
/// falls back to plain pages partway through a group (a new dictionary from then on), and
/// across groups, with missing values at batch edges.
#[test]
fn a_row_groups_dictionary_serves_all_its_batches() {
    use dpq::data::{from_batches, Buckets};
    let dir = tempfile::tempdir().expect("tempdir");
    let rows = 200_000usize;
    let texts: Vec<Option<String>> = (0..rows)
        .map(|i| {
            let h = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
            if i % 65_536 == 0 || h.is_multiple_of(23) {
                None
            } else if i > 150_000 {
                Some(format!("late{}", h % 300))
            } else {
                Some(["b", "a", "c", "b", ""][(h % 5) as usize].to_string())
            }
        })
        .collect();
    let batch = RecordBatch::try_from_iter([("s", Arc::new(StringArray::from(texts)) as ArrayRef)])
        .expect("a batch");
    let (table, _) =
        from_batches(&batch.schema(), std::slice::from_ref(&batch), "rows").expect("rows read");
    let memory = Source::Memory(table);
    let writers = [
        WriterProperties::builder()
            .set_max_row_group_row_count(Some(rows))
            .build(),
        WriterProperties::builder()
            .set_max_row_group_row_count(Some(rows))
            .set_dictionary_page_size_limit(64)
            .build(),
        WriterProperties::builder()
            .set_max_row_group_row_count(Some(90_000))
            .build(),
    ];
    let preds = [
        compare(0, CmpOp::Eq, text("b")),
        compare(0, CmpOp::Lt, text("b")),
        compare(0, CmpOp::Ge, text("late1")),
        compare(0, CmpOp::Ne, text("absent")),
        Predicate::In {
            column: 0,
            values: vec![text("a"), text("late7"), text("nowhere")],
        },
    ];
    let dims = vec![(
        0,
        Buckets::Values(vec![text("c"), text("late5"), text(""), text("b")]),
    )];
    for (i, props) in writers.into_iter().enumerate() {
        let file = dir.path().join(format!("groups{i}.parquet"));
        let f = std::fs::File::create(&file).expect("a file");
        let mut w = ArrowWriter::try_new(f, batch.schema(), Some(props)).expect("a writer");
        w.write(&batch).expect("written");
        w.close().expect("closed");
        let mut parquet = open_parquet(&file).expect("the file opens");
        parquet.constant_work();
        let streamed = Source::Parquet(parquet);
        for pred in &preds {
            assert_eq!(
                memory.count(pred).ok(),
                streamed.count(pred).ok(),
                "writer {i}: {pred:?}"
            );
        }
        assert_eq!(
            memory.count_cells(&dims).ok(),
            streamed.count_cells(&dims).ok(),
            "writer {i}"
        );
    }
}

/// A file of exactly `size` bytes: one row of a text column whose length is adjusted until
/// the file (footer included) is that long.
fn parquet_of_size(path: &Path, size: u64) {
    let mut len = size.saturating_sub(1024) as usize;
    for _ in 0..20 {
        let blob: String = (0..len)
            .map(|i| (b'a' + (i * 31 % 26) as u8) as char)
            .collect();
        let batch = RecordBatch::try_from_iter([
            ("x", Arc::new(Int64Array::from(vec![1])) as ArrayRef),
            (
                "pad",
                Arc::new(StringArray::from(vec![blob.as_str()])) as ArrayRef,
            ),
        ])
        .expect("a batch");
        let file = std::fs::File::create(path).expect("a file");
        let props = WriterProperties::builder()
            .set_statistics_enabled(parquet::file::properties::EnabledStatistics::None)
            .set_dictionary_enabled(false)
            .build();
        let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(props)).expect("a writer");
        writer.write(&batch).expect("written");
        writer.close().expect("closed");
        let got = std::fs::metadata(path).expect("a size").len();
        if got == size {
            return;
        }
        len = (len as i64 + size as i64 - got as i64) as usize;
    }
    panic!("no file of {size} bytes");
}

/// LOAD's identity of a Parquet file is the BLAKE3 hash of every byte, now hashed as subtrees
/// of at most 8 MB on all cores and merged: it must be the one-thread hash at every size
/// around a split (one byte short, exactly one and two subtrees, one byte past).
#[test]
fn the_file_hash_is_blake3_of_every_byte_at_every_chunk_boundary() {
    let dir = tempfile::tempdir().expect("tempdir");
    const MB8: u64 = 8 << 20;
    for size in [
        4096,
        MB8 - 1,
        MB8,
        MB8 + 1,
        2 * MB8,
        2 * MB8 + 1,
        3 * MB8 - 7,
    ] {
        let path = dir.path().join(format!("s{size}.parquet"));
        parquet_of_size(&path, size);
        let table = open_parquet(&path).expect("the file opens");
        let hashes = dpq::data::parquet_file_hashes(&table).expect("hashed");
        let bytes = std::fs::read(&path).expect("read");
        assert_eq!(bytes.len() as u64, size);
        assert_eq!(
            hashes,
            vec![*blake3::hash(&bytes).as_bytes()],
            "{size} bytes"
        );
        let content = dpq::data::parquet_content(&table).expect("content");
        assert_eq!(content, *blake3::hash(&bytes).as_bytes(), "{size} bytes");
        std::fs::remove_file(&path).expect("removed");
    }
}

/// A column annotated as UTF-8 text whose bytes are not UTF-8 (a writer that does not check),
/// in a dictionary page and in a plain page: no panic, and no byte of the value in what the
/// analyst sees.
#[test]
fn text_that_is_not_utf8_is_an_error_without_its_bytes() {
    use parquet::data_type::{ByteArray, ByteArrayType};
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = session(dir.path());
    for dictionary in [true, false] {
        let path = dir.path().join(format!("bad{dictionary}.parquet"));
        let schema = Arc::new(
            parse_message_type("message m { optional binary s (UTF8); }").expect("schema"),
        );
        let props = Arc::new(
            WriterProperties::builder()
                .set_dictionary_enabled(dictionary)
                .build(),
        );
        let file = std::fs::File::create(&path).expect("a file");
        let mut writer = SerializedFileWriter::new(file, schema, props).expect("a writer");
        let mut group = writer.next_row_group().expect("a group");
        let mut col = group.next_column().expect("ok").expect("a column");
        let values = [
            ByteArray::from(b"ok".to_vec()),
            ByteArray::from(vec![b's', b'e', b'c', 0xff, 0xfe]),
        ];
        col.typed::<ByteArrayType>()
            .write_batch(&values, Some(&[1, 1, 0]), None)
            .expect("written");
        col.close().expect("closed");
        group.close().expect("closed");
        writer.close().expect("closed");
        let out = run_json(
            &mut s,
            &format!(
                "LOAD '{}' AS t{dictionary}; COUNT WHERE s = 'ok' WITH EPS 1;",
                path.display()
            ),
        );
        let shown = format!("{out:?}");
        assert!(!shown.contains("sec"), "{dictionary}: {shown}");
        eprintln!("{dictionary}: {:?} {}", kinds(&out), message(&out[1]));
    }
}

/// Row groups whose text is all missing, written by Arrow's own writer from plain strings and
/// from a dictionary with no values (a missing row's key then indexes nothing): read as
/// dictionaries, they must count as missing, with no panic and no group skipped wrongly.
#[test]
fn all_missing_text_groups_read_as_dictionaries() {
    use arrow_array::types::Int32Type;
    let dir = tempfile::tempdir().expect("tempdir");
    let plain: ArrayRef = Arc::new(StringArray::from(vec![
        None,
        None,
        None,
        Some("b"),
        Some("a"),
        None,
        None,
        None,
    ]));
    let keyed: ArrayRef = Arc::new(
        DictionaryArray::<Int32Type>::try_new(
            arrow_array::Int32Array::from(vec![None; 8]),
            Arc::new(StringArray::from(Vec::<&str>::new())),
        )
        .expect("a dictionary"),
    );
    for (tag, column) in [("plain", plain), ("keyed", keyed)] {
        let path = dir.path().join(format!("{tag}.parquet"));
        write_parquet(&path, vec![("s", column.clone())], Some(3));
        let source = Source::Parquet(open_parquet(&path).expect("the file opens"));
        let expected = (0..column.len()).filter(|&i| column.is_valid(i)).count() as u64;
        for (op, v, want) in [
            (CmpOp::Ge, "", expected),
            (CmpOp::Eq, "a", u64::from(tag == "plain")),
            (CmpOp::Gt, "a", u64::from(tag == "plain")),
            (CmpOp::Lt, "b", u64::from(tag == "plain")),
        ] {
            assert_eq!(
                source.count(&compare(0, op, text(v))).ok(),
                Some(want),
                "{tag} {op:?} {v}"
            );
        }
    }
}

/// Histogram cells over a text dimension (listed codes compared a block at a time, missing
/// rows masked a validity word at a time, four tallies when the cube has at most 256 cells)
/// equal a brute-force count of the rows, streamed from Parquet (served, every group read)
/// and from the column store: batches whose lengths are not multiples of 64, text with and
/// without missing values in a batch, the text dimension first, last and alone, integer cuts
/// of a narrow and a 64-bit column, and cubes of fewer and more than 256 cells.
#[test]
fn histogram_cells_equal_a_brute_force_count() {
    use arrow_array::Int32Array;
    use dpq::data::{from_batches, Buckets};
    use rand::{Rng, SeedableRng};
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(56);
    let words: Vec<String> = (0..40).map(|i| format!("v{i:02}")).collect();
    type Row = (Option<String>, Option<i32>, Option<i64>);
    let mut rows: Vec<Row> = Vec::new();
    let batches: Vec<RecordBatch> = [1usize, 63, 65, 4097, 8191, 70_001, 64]
        .iter()
        .enumerate()
        .map(|(b, &len)| {
            let part: Vec<Row> = (0..len)
                .map(|_| {
                    // Batches 1 and 3 have no missing text.
                    let s = if b % 2 == 1 || rng.random_range(0..9) != 0 {
                        Some(match rng.random_range(0..10) {
                            0 => String::new(),
                            _ => words[rng.random_range(0..words.len())].clone(),
                        })
                    } else {
                        None
                    };
                    let x = match rng.random_range(0..12) {
                        0 => None,
                        1 => Some(i32::MIN),
                        2 => Some(i32::MAX),
                        _ => Some(rng.random_range(-1000..1000)),
                    };
                    let y = match rng.random_range(0..12) {
                        0 => None,
                        1 => Some(i64::MIN),
                        2 => Some(i64::MAX),
                        _ => Some(rng.random_range(-(1 << 40)..(1 << 40))),
                    };
                    (s, x, y)
                })
                .collect();
            let batch = RecordBatch::try_from_iter_with_nullable([
                (
                    "s",
                    Arc::new(StringArray::from(
                        part.iter().map(|r| r.0.clone()).collect::<Vec<_>>(),
                    )) as ArrayRef,
                    true,
                ),
                (
                    "x",
                    Arc::new(Int32Array::from(
                        part.iter().map(|r| r.1).collect::<Vec<_>>(),
                    )) as ArrayRef,
                    true,
                ),
                (
                    "y",
                    Arc::new(Int64Array::from(
                        part.iter().map(|r| r.2).collect::<Vec<_>>(),
                    )) as ArrayRef,
                    true,
                ),
            ])
            .expect("a batch");
            rows.extend(part);
            batch
        })
        .collect();
    let (table, _) = from_batches(&batches[0].schema(), &batches, "rows").expect("rows read");
    let memory = Source::Memory(table);
    let file = dir.path().join("cells.parquet");
    write_batches(&file, &batches, Some(30_001));
    let mut parquet = open_parquet(&file).expect("the file opens");
    parquet.constant_work();
    let streamed = Source::Parquet(parquet);
    // The coordinate of a row along a dimension, as the cube numbers them.
    let text_coord = |listed: &[&str], v: &Option<String>| match v {
        None => listed.len() + 1,
        Some(v) => listed.iter().position(|l| l == v).unwrap_or(listed.len()),
    };
    let cut_coord = |cuts: &[f64], v: Option<i128>| match v {
        None => cuts.len() + 1,
        Some(v) => cuts.iter().filter(|&&c| !exact(v, c).is_lt()).count(),
    };
    let few: Vec<&str> = vec!["v03", "", "absent", "v17"];
    let many: Vec<&str> = words.iter().step_by(2).map(String::as_str).collect();
    let x_cuts = vec![-2.0e9, -500.0, 0.0, 0.5, 999.0, 2.2e9];
    let y_cuts = vec![-9.2e18, -1.0, (1u64 << 40) as f64];
    enum Dim<'a> {
        S(&'a [&'a str]),
        X(&'a [f64]),
        Y(&'a [f64]),
    }
    let cubes: Vec<Vec<Dim>> = vec![
        vec![Dim::S(&few)],
        vec![Dim::S(&many)],
        vec![Dim::S(&few), Dim::X(&x_cuts)],
        vec![Dim::X(&x_cuts), Dim::S(&few)],
        vec![Dim::Y(&y_cuts), Dim::S(&many), Dim::X(&x_cuts)],
        vec![Dim::S(&many), Dim::Y(&y_cuts), Dim::S(&few)],
    ];
    for (k, cube) in cubes.iter().enumerate() {
        let dims: Vec<(usize, Buckets)> = cube
            .iter()
            .map(|d| match d {
                Dim::S(l) => (0, Buckets::Values(l.iter().map(|s| text(s)).collect())),
                Dim::X(c) => (1, Buckets::Cuts(c.to_vec())),
                Dim::Y(c) => (2, Buckets::Cuts(c.to_vec())),
            })
            .collect();
        let sizes: Vec<usize> = dims
            .iter()
            .map(|(_, b)| match b {
                Buckets::Cuts(c) => c.len() + 2,
                Buckets::Values(v) => v.len() + 2,
            })
            .collect();
        let mut want = vec![0u64; sizes.iter().product()];
        for r in &rows {
            let mut i = 0;
            for (d, size) in cube.iter().zip(&sizes) {
                let c = match d {
                    Dim::S(l) => text_coord(l, &r.0),
                    Dim::X(c) => cut_coord(c, r.1.map(i128::from)),
                    Dim::Y(c) => cut_coord(c, r.2.map(i128::from)),
                };
                i = i * size + c;
            }
            want[i] += 1;
        }
        assert_eq!(
            memory.count_cells(&dims).ok().as_ref(),
            Some(&want),
            "cube {k} memory"
        );
        assert_eq!(
            streamed.count_cells(&dims).ok().as_ref(),
            Some(&want),
            "cube {k} parquet"
        );
    }
}

/// The file's identity at sizes the boundary test does not reach: a read piece (256 KB) one
/// byte short and past, a subtree whose right half is one BLAKE3 chunk or one byte, and
/// files split three and four levels deep (a right subtree itself larger than 8 MB).
#[test]
fn the_file_hash_is_blake3_of_every_byte_at_piece_and_deep_tree_sizes() {
    let dir = tempfile::tempdir().expect("tempdir");
    const KB: u64 = 1 << 10;
    const MB: u64 = 1 << 20;
    for size in [
        256 * KB - 1,
        256 * KB + 1,
        MB + 1023,
        8 * MB + KB,
        8 * MB + KB + 1,
        16 * MB - 1,
        16 * MB + 1,
        24 * MB + 1,
        40 * MB + 3,
    ] {
        let path = dir.path().join(format!("s{size}.parquet"));
        parquet_of_size(&path, size);
        let table = open_parquet(&path).expect("the file opens");
        let hashes = dpq::data::parquet_file_hashes(&table).expect("hashed");
        let bytes = std::fs::read(&path).expect("read");
        assert_eq!(bytes.len() as u64, size);
        assert_eq!(
            hashes,
            vec![*blake3::hash(&bytes).as_bytes()],
            "{size} bytes"
        );
        std::fs::remove_file(&path).expect("removed");
    }
}

/// A file that grows, shrinks or is rewritten after LOAD opened it is not hashed into a
/// silent identity: the hash, taken at the file's length when hashing starts, is refused by
/// the check on the file's length, time and identity.
#[test]
fn a_file_changed_before_it_is_hashed_gives_no_identity() {
    use std::io::Write;
    let dir = tempfile::tempdir().expect("tempdir");
    const MB: u64 = 1 << 20;
    for (k, change) in ["grow", "shrink", "rewrite"].iter().enumerate() {
        let path = dir.path().join(format!("c{k}.parquet"));
        parquet_of_size(&path, 9 * MB + 5);
        let table = open_parquet(&path).expect("the file opens");
        std::thread::sleep(std::time::Duration::from_millis(20));
        match *change {
            "grow" => {
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .expect("open");
                f.write_all(&[7u8; 3000]).expect("appended");
            }
            "shrink" => {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .expect("open");
                f.set_len(8 * MB).expect("truncated");
            }
            _ => {
                let mut bytes = std::fs::read(&path).expect("read");
                bytes[5 * MB as usize] ^= 1;
                std::fs::write(&path, &bytes).expect("rewritten");
            }
        }
        assert!(
            dpq::data::parquet_file_hashes(&table).is_err(),
            "{change}: a hash of a changed file"
        );
        assert!(dpq::data::parquet_content(&table).is_err(), "{change}");
    }
}

/// A table of several files, each of several row groups whose dictionaries hold different
/// values in different orders (a group's dictionary kept for its batches must never serve
/// another group's or file's), one file written without dictionaries, one group all missing:
/// every comparison, a list and the cells equal a brute-force count over the rows, served
/// (every group read) and local (groups skipped on the bounds a first read kept, asked
/// twice).
#[test]
fn dictionaries_of_many_groups_and_files_count_as_brute_force() {
    use dpq::data::Buckets;
    let dir = tempfile::tempdir().expect("tempdir");
    let folder = dir.path().join("set");
    std::fs::create_dir(&folder).expect("a folder");
    let mut all: Vec<Option<String>> = Vec::new();
    // File `f`, group `g`: a batch and a bit, of an alphabet of its own.
    let group = 65_536 + 1_003;
    for f in 0..3usize {
        let mut rows: Vec<Option<String>> = Vec::new();
        for g in 0..3usize {
            let alphabet: Vec<String> = match (f + g) % 3 {
                0 => ["m", "a", "z", "mm"]
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
                1 => ["zz", "b", "", "a", "m"]
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
                _ => (0..300).rev().map(|i| format!("k{i}")).collect(),
            };
            for i in 0..group {
                let h = ((i * 7919 + g * 104_729 + f * 31) as u64)
                    .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                    >> 33;
                let all_missing = f == 1 && g == 2;
                rows.push(
                    (!all_missing && !h.is_multiple_of(11))
                        .then(|| alphabet[(h as usize / 11) % alphabet.len()].clone()),
                );
            }
        }
        let batch = RecordBatch::try_from_iter_with_nullable([(
            "s",
            Arc::new(StringArray::from(rows.clone())) as ArrayRef,
            true,
        )])
        .expect("a batch");
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(group))
            .set_dictionary_enabled(f != 2)
            .build();
        let file = std::fs::File::create(folder.join(format!("p{f}.parquet"))).expect("a file");
        let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).expect("a writer");
        w.write(&batch).expect("written");
        w.close().expect("closed");
        all.extend(rows);
    }
    let literals = ["", "a", "k150", "k299", "mm", "n", "zz", "zzz"];
    let wants: Vec<Vec<u64>> = literals
        .iter()
        .map(|lit| {
            CmpOp::ALL
                .iter()
                .map(|op| {
                    all.iter()
                        .flatten()
                        .filter(|v| op.holds(v.as_str().cmp(lit)))
                        .count() as u64
                })
                .collect()
        })
        .collect();
    let listed = ["mm", "k7", "nowhere", "", "b"];
    let dims = vec![(0, Buckets::Values(listed.iter().map(|s| text(s)).collect()))];
    let mut cells = vec![0u64; listed.len() + 2];
    for v in &all {
        cells[match v {
            None => listed.len() + 1,
            Some(v) => listed.iter().position(|l| l == v).unwrap_or(listed.len()),
        }] += 1;
    }
    for served in [true, false] {
        let mut parquet = open_parquet(&folder).expect("the folder opens");
        assert_eq!(parquet.files(), 3);
        if served {
            parquet.constant_work();
        }
        let streamed = Source::Parquet(parquet);
        for round in 0..2 - usize::from(served) {
            for (lit, want) in literals.iter().zip(&wants) {
                for (op, &want) in CmpOp::ALL.into_iter().zip(want) {
                    let got = streamed.count(&compare(0, op, text(lit))).ok();
                    assert_eq!(
                        got,
                        Some(want),
                        "served {served} round {round}: {op:?} {lit:?}"
                    );
                }
            }
            let want = all
                .iter()
                .flatten()
                .filter(|v| listed.contains(&v.as_str()))
                .count() as u64;
            let got = streamed
                .count(&Predicate::In {
                    column: 0,
                    values: listed.iter().map(|s| text(s)).collect(),
                })
                .ok();
            assert_eq!(got, Some(want), "served {served} round {round}: IN");
            assert_eq!(
                streamed.count_cells(&dims).ok().as_ref(),
                Some(&cells),
                "served {served} round {round}: cells"
            );
        }
    }
}

/// Narrow integer row groups of one value, all missing, or an extreme and missing cells only:
/// the bounds a local table keeps from the lanes (found at the values' own width) never
/// skip a group that holds a row, and every comparison and list counts as a brute force,
/// served and local, asked twice.
#[test]
fn narrow_integer_groups_of_one_value_or_none_count_exactly() {
    use arrow_array::{Int16Array, Int8Array, UInt32Array};
    let dir = tempfile::tempdir().expect("tempdir");
    let group = 1000usize;
    // Group `g`, row `i`: an i128 in the column's range, or missing.
    let cell = |g: usize, i: usize, lo: i128, hi: i128| -> Option<i128> {
        match g {
            0 => Some(hi),
            1 => None,
            2 => i.is_multiple_of(3).then_some(lo),
            3 => Some(lo + (i as i128 * 7919) % (hi - lo + 1)),
            _ => i
                .is_multiple_of(2)
                .then_some(if i.is_multiple_of(4) { lo } else { hi }),
        }
    };
    let kinds: [(i128, i128); 3] = [
        (i128::from(i8::MIN), i128::from(i8::MAX)),
        (i128::from(i16::MIN), i128::from(i16::MAX)),
        (0, i128::from(u32::MAX)),
    ];
    let values: Vec<Vec<Option<i128>>> = kinds
        .iter()
        .map(|&(lo, hi)| {
            (0..5)
                .flat_map(|g| (0..group).map(move |i| (g, i)))
                .map(|(g, i)| cell(g, i, lo, hi))
                .collect()
        })
        .collect();
    let batch = RecordBatch::try_from_iter_with_nullable([
        (
            "a",
            Arc::new(Int8Array::from(
                values[0]
                    .iter()
                    .map(|v| v.map(|x| x as i8))
                    .collect::<Vec<_>>(),
            )) as ArrayRef,
            true,
        ),
        (
            "b",
            Arc::new(Int16Array::from(
                values[1]
                    .iter()
                    .map(|v| v.map(|x| x as i16))
                    .collect::<Vec<_>>(),
            )) as ArrayRef,
            true,
        ),
        (
            "c",
            Arc::new(UInt32Array::from(
                values[2]
                    .iter()
                    .map(|v| v.map(|x| x as u32))
                    .collect::<Vec<_>>(),
            )) as ArrayRef,
            true,
        ),
    ])
    .expect("a batch");
    let file = dir.path().join("narrow.parquet");
    write_batches(&file, &[batch], Some(group));
    for served in [true, false] {
        let mut parquet = open_parquet(&file).expect("the file opens");
        if served {
            parquet.constant_work();
        }
        let streamed = Source::Parquet(parquet);
        for round in 0..2 {
            for (c, &(lo, hi)) in kinds.iter().enumerate() {
                let mut literals = vec![-1e30, 1e30, -0.5, 0.0, 0.5];
                for e in [lo, hi] {
                    literals.extend([e as f64 - 1.0, e as f64 - 0.5, e as f64, e as f64 + 0.5]);
                    literals.push(e as f64 + 1.0);
                }
                for &x in &literals {
                    for op in CmpOp::ALL {
                        let want = values[c]
                            .iter()
                            .flatten()
                            .filter(|&&v| op.holds(exact(v, x)))
                            .count() as u64;
                        let got = streamed.count(&compare(c, op, Value::Number(x))).ok();
                        assert_eq!(
                            got,
                            Some(want),
                            "served {served} round {round} column {c} {op:?} {x}"
                        );
                    }
                }
                let listed = [lo as f64, hi as f64, 0.5];
                let want = values[c]
                    .iter()
                    .flatten()
                    .filter(|&&v| listed.iter().any(|&x| exact(v, x).is_eq()))
                    .count() as u64;
                let got = streamed
                    .count(&Predicate::In {
                        column: c,
                        values: listed.iter().map(|&x| Value::Number(x)).collect(),
                    })
                    .ok();
                assert_eq!(
                    got,
                    Some(want),
                    "served {served} round {round} column {c} IN"
                );
            }
        }
    }
}

/// A one-text-dimension histogram (counted a pass per listed value over each batch's codes)
/// equals a brute-force count over a folder of files that stress the lanes and bitmaps: a
/// group of more than 65,536 distinct values (32-bit codes) read in a full batch of 65,536
/// rows and a short one, groups of 300 values (16-bit codes) whose dictionary overflows its
/// page so the writer falls back to plain pages mid-group, one group all missing, and plain
/// strings in groups of 65,600 rows; missing rows at every word and batch edge.
#[test]
fn histogram_one_text_dimension_equals_brute_force_over_lane_widths_and_encodings() {
    use dpq::data::Buckets;
    let dir = tempfile::tempdir().expect("tempdir");
    let folder = dir.path().join("set");
    std::fs::create_dir(&folder).expect("a folder");
    let edge = |i: usize| matches!(i % 65_536, 0 | 1 | 62 | 63 | 64 | 65 | 127 | 128 | 65_535);
    let mut all: Vec<Option<String>> = Vec::new();
    let files: [(usize, usize, Option<usize>, bool); 3] = [
        // Rows, rows a group, dictionary page limit, dictionary.
        (70_001, 70_001, None, true),
        (5_000, 1_000, Some(256), true),
        (131_200, 65_600, None, false),
    ];
    for (f, &(rows, group, limit, dictionary)) in files.iter().enumerate() {
        let part: Vec<Option<String>> = (0..rows)
            .map(|i| {
                let h = (i as u64 ^ f as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
                let gone =
                    edge(i) || edge(i + 1) || h.is_multiple_of(9) || (f == 1 && i / group == 3);
                let v = match f {
                    0 => format!("u{i}"),
                    1 => format!("k{}", h % 300),
                    _ => ["a", "", "NA", "b"][(h % 4) as usize].to_string(),
                };
                (!gone).then_some(v)
            })
            .collect();
        let batch = RecordBatch::try_from_iter_with_nullable([(
            "s",
            Arc::new(StringArray::from(part.clone())) as ArrayRef,
            true,
        )])
        .expect("a batch");
        let mut props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(group))
            .set_dictionary_enabled(dictionary);
        if let Some(limit) = limit {
            props = props.set_dictionary_page_size_limit(limit);
        }
        let file = std::fs::File::create(folder.join(format!("p{f}.parquet"))).expect("a file");
        let mut w =
            ArrowWriter::try_new(file, batch.schema(), Some(props.build())).expect("a writer");
        w.write(&batch).expect("written");
        w.close().expect("closed");
        all.extend(part);
    }
    let lists: [&[&str]; 5] = [
        &[
            "u0", "u2", "u65536", "u65537", "u70000", "k0", "k299", "a", "", "NA",
        ],
        &["nowhere"],
        &[],
        &["b", "k150", "u64", "zz"],
        &["NA"],
    ];
    let mut parquet = open_parquet(&folder).expect("the folder opens");
    parquet.constant_work();
    let streamed = Source::Parquet(parquet);
    for listed in lists {
        let mut want = vec![0u64; listed.len() + 2];
        for v in &all {
            want[match v {
                None => listed.len() + 1,
                Some(v) => listed.iter().position(|l| l == v).unwrap_or(listed.len()),
            }] += 1;
        }
        let dims = vec![(0, Buckets::Values(listed.iter().map(|s| text(s)).collect()))];
        assert_eq!(
            streamed.count_cells(&dims).ok().as_ref(),
            Some(&want),
            "{listed:?}"
        );
    }
}

/// A histogram by one text column in a local session is counted on each row group's
/// dictionary keys, run by run, without reading its rows into a table. Its cells equal a
/// brute-force count and the served path's (which reads every row), over data pages of both
/// versions, required and optional columns, three codecs, keys of 0 to 17 bits in runs and
/// scattered, small pages, a group with no value, and writers that fall back to plain pages
/// or write no dictionary (whose groups are read row by row).
#[test]
fn histograms_counted_on_dictionary_keys_equal_brute_force_and_the_served_path() {
    use dpq::data::Buckets;
    use parquet::basic::{Compression, ZstdLevel};
    use parquet::file::properties::WriterVersion;
    let dir = tempfile::tempdir().expect("tempdir");
    // Distinct values, and whether the file is plain-paged past its first group.
    let entries = [1usize, 2, 3, 5, 16, 17, 40, 100, 256, 300, 4_000, 70_000];
    let codecs = [
        Compression::UNCOMPRESSED,
        Compression::SNAPPY,
        Compression::ZSTD(ZstdLevel::default()),
    ];
    let mut cases = Vec::new();
    for (k, &distinct) in entries.iter().enumerate() {
        let version = if k % 2 == 0 {
            WriterVersion::PARQUET_1_0
        } else {
            WriterVersion::PARQUET_2_0
        };
        let nullable = k % 4 < 2;
        let mut props = WriterProperties::builder()
            .set_writer_version(version)
            .set_compression(codecs[k % 3])
            .set_max_row_group_row_count(Some(if distinct > 65_536 { 80_000 } else { 7_000 }));
        if k % 3 == 1 {
            props = props
                .set_data_page_row_count_limit(1_000)
                .set_write_batch_size(300);
        }
        cases.push((distinct, nullable, props.build(), true));
    }
    // A dictionary page limit the values outgrow (plain pages follow), and no dictionary.
    let small = WriterProperties::builder()
        .set_dictionary_page_size_limit(200)
        .set_max_row_group_row_count(Some(5_000))
        .build();
    cases.push((500, true, small, false));
    let plain = WriterProperties::builder()
        .set_dictionary_enabled(false)
        .set_max_row_group_row_count(Some(5_000))
        .build();
    cases.push((30, true, plain, false));
    for (case, (distinct, nullable, props, keyed)) in cases.into_iter().enumerate() {
        let rows = 20_000.max(distinct + 10_000);
        let values: Vec<Option<String>> = (0..rows)
            .map(|i| {
                let h = (i as u64 ^ case as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 33;
                // Runs in the first half, scattered keys in the second; every value once.
                let key = if i < distinct {
                    i
                } else if i < rows / 2 {
                    (i / 37) % distinct
                } else {
                    h as usize % distinct
                };
                // In the first file, rows 7,000 to 13,999 (its second group) hold no value.
                let gone = nullable
                    && (h.is_multiple_of(7) || (case == 0 && (7_000..14_000).contains(&i)));
                (!gone).then(|| format!("v{key}"))
            })
            .collect();
        let batch = RecordBatch::try_from_iter_with_nullable([(
            "s",
            Arc::new(StringArray::from(values.clone())) as ArrayRef,
            nullable,
        )])
        .expect("a batch");
        let path = dir.path().join(format!("k{case}.parquet"));
        let file = std::fs::File::create(&path).expect("a file");
        let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).expect("a writer");
        w.write(&batch).expect("written");
        w.close().expect("closed");

        let local = open_parquet(&path).expect("opens");
        let mut served = open_parquet(&path).expect("opens");
        served.constant_work();
        let mut lists: Vec<Vec<String>> = vec![
            vec!["v0".into()],
            vec!["nowhere".into(), "".into()],
            vec![],
            (0..distinct.min(12))
                .rev()
                .map(|k| format!("v{k}"))
                .collect(),
        ];
        lists[1].push(format!("v{}", distinct - 1));
        for listed in &lists {
            let mut want = vec![0u64; listed.len() + 2];
            for v in &values {
                want[match v {
                    None => listed.len() + 1,
                    Some(v) => listed.iter().position(|l| l == v).unwrap_or(listed.len()),
                }] += 1;
            }
            let mut buckets: Vec<Value> = listed.iter().map(|s| text(s)).collect();
            buckets.push(Value::Number(0.0));
            want.insert(listed.len(), 0);
            let dims = vec![(0, Buckets::Values(buckets))];
            let (before, read) = (local.groups_by_keys(), local.groups_read());
            let got = Source::Parquet(open_parquet(&path).expect("opens")).count_cells(&dims);
            assert_eq!(got.ok().as_ref(), Some(&want), "case {case}: {listed:?}");
            let counted = local.count_cells(&dims).expect("counted");
            assert_eq!(counted, want, "case {case}: {listed:?}");
            assert_eq!(
                served.count_cells(&dims).expect("counted"),
                want,
                "case {case}, served: {listed:?}"
            );
            let groups = local.groups_read() - read;
            let by_keys = local.groups_by_keys() - before;
            if keyed {
                assert_eq!(by_keys, groups, "case {case}: every group by its keys");
            } else {
                assert!(
                    by_keys < groups,
                    "case {case}: {by_keys} of {groups} by keys"
                );
            }
            assert_eq!(served.groups_by_keys(), 0, "case {case}: served by keys");
        }
    }
}

/// A count whose condition names one integer column is counted, in a local session, on
/// each row group's dictionary keys: the condition is asked of each dictionary entry once.
/// Its counts equal a brute-force count and the served path's over 32- and 64-bit columns,
/// both page versions, required and optional columns, codecs, 1 to 70,000 distinct values
/// (keys of 0 to 17 bits), runs and scattered keys, and conditions of every shape, against
/// the same rows in the column store; a writer's plain pages are read row by row.
#[test]
fn counts_on_dictionary_keys_equal_brute_force_and_the_served_path() {
    use arrow_array::Int32Array;
    use parquet::basic::{Compression, ZstdLevel};
    use parquet::file::properties::WriterVersion;
    let dir = tempfile::tempdir().expect("tempdir");
    let entries = [1usize, 2, 5, 16, 90, 300, 4_000, 70_000];
    let mut cases = Vec::new();
    for (k, &distinct) in entries.iter().enumerate() {
        let props = WriterProperties::builder()
            .set_writer_version(if k % 2 == 0 {
                WriterVersion::PARQUET_1_0
            } else {
                WriterVersion::PARQUET_2_0
            })
            .set_compression(
                [
                    Compression::UNCOMPRESSED,
                    Compression::SNAPPY,
                    Compression::ZSTD(ZstdLevel::default()),
                ][k % 3],
            )
            .set_data_page_row_count_limit(if k % 3 == 1 { 1_000 } else { 20_000 })
            .set_write_batch_size(300)
            .set_max_row_group_row_count(Some(if distinct > 65_536 { 80_000 } else { 7_000 }));
        cases.push((distinct, k % 4 < 2, k % 2 == 0, props.build(), true));
    }
    let plain = WriterProperties::builder()
        .set_dictionary_enabled(false)
        .set_max_row_group_row_count(Some(5_000))
        .build();
    cases.push((30, true, true, plain, false));
    let n = Value::Number;
    let c = |op, v| compare(0, op, n(v));
    let not = |p: Predicate| Predicate::Not(Box::new(p));
    let preds = |top: f64| {
        vec![
            c(CmpOp::Le, 3.0),
            c(CmpOp::Gt, top / 2.0),
            c(CmpOp::Eq, -7.0),
            c(CmpOp::Ne, 0.0),
            c(CmpOp::Lt, 2.5),
            c(CmpOp::Ge, -1e19),
            compare(0, CmpOp::Eq, text("3")),
            not(c(CmpOp::Le, 10.0)),
            Predicate::In {
                column: 0,
                values: vec![n(0.0), n(4.0), n(top - 1.0), n(1e30), text("x")],
            },
            Predicate::Between {
                column: 0,
                low: n(-5.0),
                high: n(top / 3.0),
            },
            Predicate::Or(
                Box::new(c(CmpOp::Lt, 2.0)),
                Box::new(not(c(CmpOp::Lt, top - 2.0))),
            ),
            Predicate::And(
                Box::new(c(CmpOp::Ge, 1.0)),
                Box::new(not(c(CmpOp::Eq, 3.0))),
            ),
        ]
    };
    for (case, (distinct, nullable, wide, props, keyed)) in cases.into_iter().enumerate() {
        let rows = 20_000.max(distinct + 10_000);
        let values: Vec<Option<i64>> = (0..rows)
            .map(|i| {
                let h = (i as u64 ^ case as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 33;
                let key = if i < distinct {
                    i
                } else if i < rows / 2 {
                    (i / 37) % distinct
                } else {
                    h as usize % distinct
                };
                // Negative values, and in 64-bit columns values past 32 bits.
                let v = key as i64 - 7 + if wide && key % 5 == 4 { 1 << 40 } else { 0 };
                (!(nullable && h.is_multiple_of(6))).then_some(v)
            })
            .collect();
        let array: ArrayRef = if wide {
            Arc::new(Int64Array::from(values.clone()))
        } else {
            Arc::new(Int32Array::from(
                values
                    .iter()
                    .map(|v| v.map(|v| v as i32))
                    .collect::<Vec<_>>(),
            ))
        };
        let batch =
            RecordBatch::try_from_iter_with_nullable([("x", array, nullable)]).expect("a batch");
        let path = dir.path().join(format!("n{case}.parquet"));
        let file = std::fs::File::create(&path).expect("a file");
        let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).expect("a writer");
        w.write(&batch).expect("written");
        w.close().expect("closed");
        let (table, _) =
            dpq::data::from_batches(&batch.schema(), std::slice::from_ref(&batch), "rows")
                .expect("rows read");
        let memory = Source::Memory(table);
        let mut served = open_parquet(&path).expect("opens");
        served.constant_work();
        for pred in preds(distinct as f64) {
            // A fresh table each time: no group skipped on bounds an earlier question kept.
            let local = open_parquet(&path).expect("opens");
            let want = memory.count(&pred).expect("counted");
            assert_eq!(
                local.count(&pred).expect("counted"),
                want,
                "case {case}: {pred:?}"
            );
            assert_eq!(
                served.count(&pred).expect("counted"),
                want,
                "case {case}: {pred:?}"
            );
            let (groups, by_keys) = (local.groups_read(), local.groups_by_keys());
            if keyed {
                assert_eq!(by_keys, groups, "case {case}: every group by its keys");
            } else {
                assert_eq!(by_keys, 0, "case {case}: no group by its keys");
            }
        }
        assert_eq!(served.groups_by_keys(), 0, "case {case}: served by keys");
    }
}

/// The bounds a count on dictionary keys keeps are the least and greatest value its rows
/// hold: over values sorted by group, a later condition that only the last group can meet
/// reads that group alone and counts the same as a full read; a group of missing values only
/// is skipped by a condition and by its negation.
#[test]
fn bounds_kept_by_a_count_on_dictionary_keys_skip_as_a_full_reads_do() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("sorted.parquet");
    // Ten groups of 1,000: group g holds 10g to 10g + 9, the fifth none.
    let values: Vec<Option<i64>> = (0..10_000)
        .map(|i| (i / 1_000 != 4).then_some(i / 100))
        .collect();
    write_parquet(
        &path,
        vec![("x", Arc::new(Int64Array::from(values.clone())) as ArrayRef)],
        Some(1_000),
    );
    let table = open_parquet(&path).expect("opens");
    let n = Value::Number;
    let count_of = |pred: &Predicate| {
        let (groups, keyed) = (table.groups_read(), table.groups_by_keys());
        let got = table.count(pred).expect("counted");
        (
            got,
            table.groups_read() - groups,
            table.groups_by_keys() - keyed,
        )
    };
    let want = |f: &dyn Fn(i64) -> bool| values.iter().flatten().filter(|&&v| f(v)).count() as u64;
    let ge95 = compare(0, CmpOp::Ge, n(95.0));
    // The first question reads every group, each by its keys; the next reads the last.
    assert_eq!(count_of(&ge95), (want(&|v| v >= 95), 10, 10));
    assert_eq!(count_of(&ge95), (want(&|v| v >= 95), 1, 1));
    let over = compare(0, CmpOp::Gt, n(89.5));
    assert_eq!(count_of(&over), (want(&|v| v > 89), 1, 1));
    // The group of missing values only is skipped by a condition and by its negation.
    let low = compare(0, CmpOp::Lt, n(25.0));
    assert_eq!(count_of(&low), (want(&|v| v < 25), 3, 3));
    let not_low = Predicate::Not(Box::new(low));
    assert_eq!(count_of(&not_low), (want(&|v| v >= 25), 7, 7));
}

/// Pages of a crafted column chunk, written as they are (uncompressed) by the parquet crate's
/// page writer, for attacks on the dictionary-key path below Arrow's record reader.
mod crafted {
    use std::path::Path;
    use std::sync::Arc;

    use parquet::basic::{Compression, Encoding};
    use parquet::column::page::{CompressedPage, Page, PageWriter};
    use parquet::column::writer::ColumnCloseResult;
    use parquet::file::metadata::ColumnChunkMetaData;
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::{SerializedFileWriter, SerializedPageWriter, TrackedWrite};
    use parquet::schema::parser::parse_message_type;
    use parquet::schema::types::SchemaDescriptor;

    /// One row group of `rows` rows of a text column `s` (optional when `nullable`) whose
    /// chunk is `pages`, in that order.
    pub fn file(path: &Path, nullable: bool, rows: u64, pages: Vec<Page>) {
        let kind = if nullable { "optional" } else { "required" };
        file_of(path, &format!("{kind} binary s (UTF8)"), rows, pages);
    }

    /// One row group of `rows` rows of the one column `column` (a schema line such as
    /// `optional int64 x`) whose chunk is `pages`, in that order.
    pub fn file_of(path: &Path, column: &str, rows: u64, pages: Vec<Page>) {
        let schema =
            Arc::new(parse_message_type(&format!("message m {{ {column}; }}")).expect("schema"));
        let descr = SchemaDescriptor::new(schema.clone()).column(0);
        let chunk_path = path.with_extension("chunk");
        let mut sink = TrackedWrite::new(std::fs::File::create(&chunk_path).expect("a file"));
        let (mut dictionary, mut first, mut values) = (None, None, 0i64);
        {
            let mut pages_out = SerializedPageWriter::new(&mut sink);
            for (i, page) in pages.into_iter().enumerate() {
                let size = page.buffer().len();
                let is_dictionary = page.is_dictionary_page();
                let n = page.num_values();
                let spec = pages_out
                    .write_page(CompressedPage::new(page, size))
                    .expect("a page");
                if i == 0 && is_dictionary {
                    dictionary = Some(spec.offset as i64);
                } else if !is_dictionary {
                    values += i64::from(n);
                    first.get_or_insert(spec.offset as i64);
                }
            }
            pages_out.close().expect("closed");
        }
        let len = sink.bytes_written() as i64;
        sink.into_inner().expect("flushed");
        let data = first.unwrap_or(len);
        let metadata = ColumnChunkMetaData::builder(descr)
            .set_compression(Compression::UNCOMPRESSED)
            .set_encodings(vec![
                Encoding::PLAIN,
                Encoding::RLE,
                Encoding::RLE_DICTIONARY,
            ])
            .set_num_values(values)
            .set_total_compressed_size(len)
            .set_total_uncompressed_size(len)
            .set_data_page_offset(data)
            .set_dictionary_page_offset(dictionary)
            .build()
            .expect("metadata");
        let close = ColumnCloseResult {
            bytes_written: len as u64,
            rows_written: rows,
            metadata,
            bloom_filter: None,
            column_index: None,
            offset_index: None,
        };
        let props = Arc::new(WriterProperties::builder().build());
        let out = std::fs::File::create(path).expect("a file");
        let mut writer = SerializedFileWriter::new(out, schema, props).expect("a writer");
        let mut group = writer.next_row_group().expect("a group");
        let chunk = std::fs::File::open(&chunk_path).expect("the chunk");
        group.append_column(&chunk, close).expect("appended");
        group.close().expect("closed");
        writer.close().expect("closed");
        std::fs::remove_file(chunk_path).expect("removed");
    }

    /// A PLAIN dictionary page of `entries`, saying it holds `n` of them.
    pub fn dictionary(entries: &[&[u8]], n: u32) -> Page {
        let mut buf = Vec::new();
        for e in entries {
            buf.extend_from_slice(&(e.len() as u32).to_le_bytes());
            buf.extend_from_slice(e);
        }
        Page::DictionaryPage {
            buf: buf.into(),
            num_values: n,
            encoding: Encoding::PLAIN,
            is_sorted: false,
        }
    }

    /// A v1 data page of `n` values: `levels` (when the column is optional) behind their
    /// 4-byte length, then `keys` (the width byte and runs).
    pub fn v1(levels: Option<&[u8]>, keys: &[u8], n: u32) -> Page {
        let mut buf = Vec::new();
        if let Some(levels) = levels {
            buf.extend_from_slice(&(levels.len() as u32).to_le_bytes());
            buf.extend_from_slice(levels);
        }
        buf.extend_from_slice(keys);
        Page::DataPage {
            buf: buf.into(),
            num_values: n,
            encoding: Encoding::RLE_DICTIONARY,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        }
    }

    /// A v2 data page of `n` values, `nulls` of them said missing, with `levels` then `keys`.
    pub fn v2(levels: &[u8], keys: &[u8], n: u32, nulls: u32) -> Page {
        let mut buf = levels.to_vec();
        buf.extend_from_slice(keys);
        Page::DataPageV2 {
            buf: buf.into(),
            num_values: n,
            encoding: Encoding::RLE_DICTIONARY,
            num_nulls: nulls,
            num_rows: n,
            def_levels_byte_len: levels.len() as u32,
            rep_levels_byte_len: 0,
            is_compressed: false,
            statistics: None,
        }
    }

    /// A PLAIN dictionary page of integer `entries`, each `width` bytes (4 or 8), saying it
    /// holds `n` of them.
    pub fn int_dictionary(entries: &[i64], width: usize, n: u32) -> Page {
        let buf: Vec<u8> = entries
            .iter()
            .flat_map(|e| e.to_le_bytes()[..width].to_vec())
            .collect();
        Page::DictionaryPage {
            buf: buf.into(),
            num_values: n,
            encoding: Encoding::PLAIN,
            is_sorted: false,
        }
    }

    pub fn leb(out: &mut Vec<u8>, mut v: u64) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }

    /// A run of `count` times `value` (`bytes` bytes of it).
    pub fn repeat(count: u64, value: u64, bytes: usize) -> Vec<u8> {
        let mut out = Vec::new();
        leb(&mut out, count << 1);
        out.extend_from_slice(&value.to_le_bytes()[..bytes]);
        out
    }

    /// A bit-packed run of `groups` groups of 8 values, `bytes` following.
    pub fn packed(groups: u64, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        leb(&mut out, (groups << 1) | 1);
        out.extend_from_slice(bytes);
        out
    }

    pub fn cat(parts: &[&[u8]]) -> Vec<u8> {
        parts.concat()
    }
}

/// What a question's cells come to on a table, a panic caught and told.
fn cells_of(table: &dpq::data::ParquetTable, dims: &[(usize, dpq::data::Buckets)]) -> String {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| table.count_cells(dims))) {
        Ok(Ok(cells)) => format!("{cells:?}"),
        Ok(Err(e)) => format!("error: {e}"),
        Err(_) => "PANIC".to_string(),
    }
}

/// The local table's cells (dictionary keys allowed), the served table's (`constant_work`),
/// and whether the key path answered.
fn local_and_served(path: &Path, listed: &[Value]) -> (String, String, u64) {
    use dpq::data::Buckets;
    let dims = vec![(0, Buckets::Values(listed.to_vec()))];
    let local = open_parquet(path).expect("opens");
    let mut served = open_parquet(path).expect("opens");
    served.constant_work();
    let a = cells_of(&local, &dims);
    let b = cells_of(&served, &dims);
    assert_eq!(served.groups_by_keys(), 0, "a served table counted keys");
    (a, b, local.groups_by_keys())
}

/// Crafted pages of a text column's chunk, each against what Arrow's reader (the served
/// path) makes of it: the key path answers exactly what the general path answers, or falls
/// back to it; it never answers a page the general path refuses.
#[test]
fn crafted_dictionary_pages_answer_as_the_general_path_or_fall_back() {
    use crafted::*;
    let dir = tempfile::tempdir().expect("tempdir");
    let abc: [&[u8]; 3] = [b"a", b"b", b"c"];
    let ones = repeat(10, 1, 1);
    let zeros = repeat(10, 0, 1);
    // Keys of 10 rows at width 2: 6 of "a", 4 of "c".
    let good = cat(&[&[2], &repeat(6, 0, 1), &repeat(4, 2, 1)]);
    let cases: Vec<(&str, bool, Vec<parquet::column::page::Page>)> = vec![
        (
            "control v1",
            true,
            vec![dictionary(&abc, 3), v1(Some(&ones), &good, 10)],
        ),
        (
            "control v2",
            true,
            vec![dictionary(&abc, 3), v2(&ones, &good, 10, 0)],
        ),
        (
            "control required",
            false,
            vec![dictionary(&abc, 3), v1(None, &good, 10)],
        ),
        (
            "repeated key wider than the width",
            true,
            vec![
                dictionary(&abc, 3),
                v1(Some(&ones), &cat(&[&[1], &repeat(10, 2, 1)]), 10),
            ],
        ),
        (
            "a key run header of 0 before the keys",
            true,
            vec![
                dictionary(&abc, 3),
                v1(Some(&ones), &cat(&[&[2], &[0, 0], &repeat(10, 1, 1)]), 10),
            ],
        ),
        (
            "a key run longer than i32::MAX",
            true,
            vec![
                dictionary(&abc, 3),
                v1(Some(&ones), &cat(&[&[2], &repeat(1 << 31, 1, 1)]), 10),
            ],
        ),
        (
            "a level run longer than i32::MAX",
            true,
            vec![
                dictionary(&abc, 3),
                v1(Some(&repeat(1 << 31, 1, 1)), &good, 10),
            ],
        ),
        (
            "a packed key run longer than i32::MAX",
            true,
            vec![
                dictionary(&abc, 3),
                v1(
                    Some(&ones),
                    &cat(&[&[2], &packed(1 << 28, &[0, 0, 0, 0, 0])]),
                    10,
                ),
            ],
        ),
        (
            "all missing, no width byte",
            true,
            vec![dictionary(&abc, 3), v1(Some(&zeros), &[], 10)],
        ),
        (
            "all missing, width byte 40",
            true,
            vec![dictionary(&abc, 3), v1(Some(&zeros), &[40], 10)],
        ),
        (
            "v2 with more nulls than values",
            true,
            vec![dictionary(&abc, 3), v2(&ones, &good, 10, 11)],
        ),
        (
            "v2 with nulls it does not have",
            true,
            vec![dictionary(&abc, 3), v2(&ones, &good, 10, 5)],
        ),
        (
            "v2 def_levels_byte_len past the page",
            true,
            vec![dictionary(&abc, 3), {
                let mut p = v2(&ones, &good, 10, 0);
                if let parquet::column::page::Page::DataPageV2 {
                    def_levels_byte_len,
                    ..
                } = &mut p
                {
                    *def_levels_byte_len = 200;
                }
                p
            }],
        ),
        (
            "v1 level length past the page",
            true,
            vec![dictionary(&abc, 3), {
                let mut buf = 500u32.to_le_bytes().to_vec();
                buf.extend_from_slice(&ones);
                buf.extend_from_slice(&good);
                parquet::column::page::Page::DataPage {
                    buf: buf.into(),
                    num_values: 10,
                    encoding: parquet::basic::Encoding::RLE_DICTIONARY,
                    def_level_encoding: parquet::basic::Encoding::RLE,
                    rep_level_encoding: parquet::basic::Encoding::RLE,
                    statistics: None,
                }
            }],
        ),
        (
            "page says more values",
            true,
            vec![dictionary(&abc, 3), v1(Some(&ones), &good, 12)],
        ),
        (
            "page says fewer values",
            true,
            vec![dictionary(&abc, 3), v1(Some(&ones), &good, 8)],
        ),
        (
            "dictionary says more entries",
            true,
            vec![dictionary(&abc, 4), v1(Some(&ones), &good, 10)],
        ),
        (
            "dictionary says fewer entries",
            true,
            vec![dictionary(&abc, 2), v1(Some(&ones), &good, 10)],
        ),
        (
            "data page before the dictionary",
            true,
            vec![v1(Some(&ones), &good, 10), dictionary(&abc, 3)],
        ),
        (
            "two dictionary pages",
            true,
            vec![
                dictionary(&abc, 3),
                dictionary(&[b"x", b"y", b"z"], 3),
                v1(Some(&ones), &good, 10),
            ],
        ),
        (
            "a dictionary repeating a value",
            true,
            vec![
                dictionary(&[b"a", b"b", b"a"], 3),
                v1(Some(&ones), &good, 10),
            ],
        ),
        (
            "an entry that is not UTF-8",
            true,
            vec![
                dictionary(&[b"a", b"b", b"\xff"], 3),
                v1(Some(&ones), &good, 10),
            ],
        ),
        (
            "a level byte of 2",
            true,
            vec![dictionary(&abc, 3), v1(Some(&repeat(10, 2, 1)), &good, 10)],
        ),
        (
            "packed keys cut short",
            true,
            vec![
                dictionary(&abc, 3),
                v1(Some(&ones), &cat(&[&[2], &packed(2, &[0b1001_0010])]), 10),
            ],
        ),
    ];
    let listed = [text("a"), text("c"), Value::Number(1.0)];
    let mut report = Vec::new();
    let mut broken = Vec::new();
    for (i, (name, nullable, pages)) in cases.into_iter().enumerate() {
        let path = dir.path().join(format!("c{i}.parquet"));
        crafted::file(&path, nullable, 10, pages);
        let (local, served, keyed) = local_and_served(&path, &listed);
        report.push(format!(
            "{name}: local {local} (by keys: {keyed}), served {served}"
        ));
        if local != served {
            broken.push(name);
        }
    }
    eprintln!("{}", report.join("\n"));
    assert!(
        broken.is_empty(),
        "the key path answered otherwise: {broken:?}"
    );
}

/// Two pages Arrow's own decoders panic on (a bit-packed run of definition levels longer than
/// the page, a run header of 11 bytes): the key path falls back on both (it reads neither),
/// and the general path then panics, locally and served. Not the key path's doing; a
/// question on such a file must fail, not panic.
#[test]
fn pages_arrow_panics_on_fail_the_question_without_a_panic() {
    use crafted::*;
    let dir = tempfile::tempdir().expect("tempdir");
    let abc: [&[u8]; 3] = [b"a", b"b", b"c"];
    let ones = repeat(10, 1, 1);
    let good = cat(&[&[2], &repeat(6, 0, 1), &repeat(4, 2, 1)]);
    let cases = [
        (
            "packed levels cut short",
            v1(Some(&packed(2, &[0xff])), &good, 10),
        ),
        (
            "a key header of 11 bytes",
            v1(Some(&ones), &cat(&[&[2], &[0x80; 10], &[0]]), 10),
        ),
    ];
    let mut panics = Vec::new();
    for (i, (name, page)) in cases.into_iter().enumerate() {
        let path = dir.path().join(format!("p{i}.parquet"));
        crafted::file(&path, true, 10, vec![dictionary(&abc, 3), page]);
        let (local, served, keyed) = local_and_served(&path, &[text("a")]);
        assert_eq!(keyed, 0, "{name}");
        if local == "PANIC" || served == "PANIC" {
            panics.push(format!("{name}: local {local}, served {served}"));
        }
    }
    assert!(panics.is_empty(), "{panics:#?}");
}

/// The key path reads every page of a chunk before it compares the values with the group's
/// rows, and counted a bit-packed run of 0-bit keys one key at a time: pages saying
/// `i32::MAX` values, each a packed run of 0-bit keys, cost it seconds a page (minutes for
/// 64 of them, from a file of a few kilobytes), where Arrow's reader refuses the first page
/// at once (its header says every value is missing, which the keys deny). A question must
/// end, answered or refused, in about the time the general path takes.
#[test]
fn pages_of_zero_bit_keys_arrow_refuses_are_refused_at_once() {
    use crafted::*;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("slow.parquet");
    let n = i32::MAX as u32;
    let keys = cat(&[&[0], &packed((1 << 28) - 1, &[]), &packed(1 << 20, &[])]);
    let mut pages = vec![dictionary(&[b"a"], 1)];
    pages.extend((0..64).map(|_| v2(&[], &keys, n, n)));
    crafted::file(&path, false, 10, pages);
    let mut served = open_parquet(&path).expect("opens");
    served.constant_work();
    let listed = vec![(0, dpq::data::Buckets::Values(vec![text("a")]))];
    let start = std::time::Instant::now();
    assert!(served.count_cells(&listed).is_err());
    let refused = start.elapsed();
    let (tx, rx) = std::sync::mpsc::channel();
    let local_path = path.clone();
    std::thread::spawn(move || {
        let local = open_parquet(&local_path).expect("opens");
        let dims = vec![(0, dpq::data::Buckets::Values(vec![text("a")]))];
        let _ = tx.send(local.count_cells(&dims).is_err());
    });
    let local = rx.recv_timeout(std::time::Duration::from_secs(5));
    assert_eq!(
        local,
        Ok(true),
        "the general path refused in {refused:?}; the local question did not end in 5 s"
    );
}

/// Bytes of real column chunks and footers changed at random (a bit flipped, a byte set to 0,
/// 0xff or any value, in page headers, levels, keys, dictionary entries and the chunks'
/// metadata alike), for files of v1 and v2
/// pages, optional and required: the local table (dictionary keys allowed) answers exactly
/// what the served table answers, or fails as it fails, in well under a second. 300 rounds a
/// file; `DPQ_ROUNDS=n` for more.
#[test]
fn bytes_changed_in_a_text_chunk_answer_as_the_general_path() {
    use dpq::data::Buckets;
    use parquet::basic::Compression;
    use parquet::file::properties::WriterVersion;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let listed = vec![text("v0"), text("v3"), text("v17"), text("")];
    let dims = vec![(0, Buckets::Values(listed.clone()))];
    let (mut tried, mut both_panic, mut keyed) = (0, 0, 0u64);
    let mut broken = Vec::new();
    for (k, (version, nullable)) in [
        (WriterVersion::PARQUET_1_0, true),
        (WriterVersion::PARQUET_2_0, true),
        (WriterVersion::PARQUET_1_0, false),
    ]
    .into_iter()
    .enumerate()
    {
        let values: Vec<Option<String>> = (0..400)
            .map(|i| {
                let key = if i < 150 { i / 30 } else { (i * 7919) % 20 };
                (!(nullable && i % 11 == 3)).then(|| format!("v{key}"))
            })
            .collect();
        let batch = RecordBatch::try_from_iter_with_nullable([(
            "s",
            Arc::new(StringArray::from(values)) as ArrayRef,
            nullable,
        )])
        .expect("a batch");
        let props = WriterProperties::builder()
            .set_writer_version(version)
            .set_compression(Compression::UNCOMPRESSED)
            .set_data_page_row_count_limit(100)
            .set_write_batch_size(50)
            .set_max_row_group_row_count(Some(200))
            .build();
        let base = dir.path().join(format!("base{k}.parquet"));
        let file = std::fs::File::create(&base).expect("a file");
        let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).expect("a writer");
        w.write(&batch).expect("written");
        w.close().expect("closed");
        let bytes = std::fs::read(&base).expect("read");
        let ranges = chunk_ranges(&base);
        for round in 0..rounds() {
            let (changed, at) = change_a_byte(&bytes, &ranges, round, &mut next);
            let path = dir.path().join("changed.parquet");
            std::fs::write(&path, &changed).expect("written");
            let (Ok(local), Ok(mut served)) = (open_parquet(&path), open_parquet(&path)) else {
                continue;
            };
            served.constant_work();
            tried += 1;
            let started = std::time::Instant::now();
            let a = cells_of(&local, &dims);
            let took = started.elapsed();
            let b = cells_of(&served, &dims);
            keyed += local.groups_by_keys();
            if b == "PANIC" && a == "PANIC" {
                both_panic += 1;
                continue;
            }
            if a != b || took > std::time::Duration::from_secs(1) {
                broken.push(format!(
                    "file {k}, byte {at} set to {:#04x} (was {:#04x}): local {a} in {took:?}, served {b}",
                    changed[at], bytes[at]
                ));
            }
        }
    }
    eprintln!("{tried} changed files, {keyed} groups by keys, {both_panic} panicking in Arrow on both paths");
    assert!(keyed > 0);
    assert!(broken.is_empty(), "{broken:#?}");
}

/// A file rewritten in place since it was opened (same length, a dictionary entry changed)
/// fails the question, locally (where the key path would read the new pages) and served.
#[test]
fn a_file_rewritten_since_it_was_opened_fails_the_key_path_question() {
    use dpq::data::Buckets;
    use parquet::basic::Compression;
    use std::io::{Seek, SeekFrom, Write};
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("moving.parquet");
    let values: Vec<&str> = (0..1000)
        .map(|i| if i % 3 == 0 { "aa" } else { "bb" })
        .collect();
    let batch =
        RecordBatch::try_from_iter([("s", Arc::new(StringArray::from(values)) as ArrayRef)])
            .expect("a batch");
    let props = WriterProperties::builder()
        .set_compression(Compression::UNCOMPRESSED)
        .set_statistics_enabled(parquet::file::properties::EnabledStatistics::None)
        .build();
    let file = std::fs::File::create(&path).expect("a file");
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).expect("a writer");
    w.write(&batch).expect("written");
    w.close().expect("closed");
    let dims = vec![(0, Buckets::Values(vec![text("aa"), text("cc")]))];
    let local = open_parquet(&path).expect("opens");
    let mut served = open_parquet(&path).expect("opens");
    served.constant_work();
    assert_eq!(
        local.count_cells(&dims).expect("counted"),
        vec![334, 0, 666, 0]
    );
    assert_eq!(local.groups_by_keys(), 1);
    // The dictionary entry "aa" (its length, 2, then its bytes) becomes "cc", in place.
    let bytes = std::fs::read(&path).expect("read");
    let at = bytes
        .windows(6)
        .position(|w| w == [2, 0, 0, 0, b'a', b'a'])
        .expect("the entry");
    std::thread::sleep(std::time::Duration::from_millis(30));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("opens");
    f.seek(SeekFrom::Start(at as u64 + 4)).expect("seeks");
    f.write_all(b"cc").expect("written");
    drop(f);
    assert_eq!(
        std::fs::metadata(&path).expect("meta").len(),
        bytes.len() as u64
    );
    for (who, table) in [("local", &local), ("served", &served)] {
        let got = table.count_cells(&dims);
        assert!(
            matches!(got, Err(dpq::data::DataError::Changed { .. })),
            "{who}: {got:?}"
        );
    }
    assert_eq!(
        local.groups_by_keys(),
        1,
        "no group counted from the new pages"
    );
    // Opened again, the new file counts "cc".
    let again = open_parquet(&path).expect("opens");
    assert_eq!(
        again.count_cells(&dims).expect("counted"),
        vec![0, 334, 666, 0]
    );
}

/// Listed values of every odd kind over a dictionary that repeats a value and holds the empty
/// string, a value in two Unicode normal forms, and text that reads as a number and a
/// boolean: the key path (which answers) counts what the served path and brute force count.
#[test]
fn odd_listed_values_count_alike_on_keys_and_rows() {
    use crafted::*;
    let dir = tempfile::tempdir().expect("tempdir");
    let entries: [&str; 8] = ["", "\u{e9}", "e\u{301}", "1", "true", "a", "a", "b"];
    let bytes: Vec<&[u8]> = entries.iter().map(|e| e.as_bytes()).collect();
    let runs: Vec<(u64, u64)> = (0..8).map(|k| (k, k + 3)).collect();
    let rows: u64 = runs.iter().map(|r| r.1).sum();
    let mut keys = vec![3u8];
    for &(k, n) in &runs {
        keys.extend(repeat(n, k, 1));
    }
    let path = dir.path().join("odd.parquet");
    file(
        &path,
        false,
        rows,
        vec![dictionary(&bytes, 8), v1(None, &keys, rows as u32)],
    );
    let mut many: Vec<Value> = (0..3000).map(|i| text(&format!("x{i}"))).collect();
    many[1500] = text("a");
    many[2999] = text("");
    many[7] = text("e\u{301}");
    let lists: Vec<Vec<Value>> = vec![
        vec![],
        vec![text("")],
        vec![text("\u{e9}")],
        vec![text("e\u{301}")],
        vec![text("e\u{301}"), text("\u{e9}")],
        vec![Value::Number(1.0), Value::Bool(true)],
        vec![text("1"), text("true"), Value::Number(f64::NAN)],
        vec![text("a")],
        vec![text("b"), text("a"), text("")],
        many,
    ];
    for listed in lists {
        let mut want = vec![0u64; listed.len() + 2];
        for &(k, n) in &runs {
            let e = entries[k as usize];
            let cell = listed
                .iter()
                .position(|v| matches!(v, Value::Text(t) if t == e))
                .unwrap_or(listed.len());
            want[cell] += n;
        }
        let (local, served, keyed) = local_and_served(&path, &listed);
        assert_eq!(keyed, 1, "{} listed", listed.len());
        assert_eq!(local, format!("{want:?}"), "{} listed", listed.len());
        assert_eq!(served, local, "{} listed", listed.len());
    }
}
fn rounds() -> usize {
    std::env::var("DPQ_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(300)
}

/// A text column Arrow reads as strings though it is not annotated UTF8 (JSON): Arrow's
/// dictionary decoder then hands its entries over as binary, which the general path writes
/// as hex (`"x"` reads `227822`), while the key path compared the entries' own bytes with the
/// listed values: `s = '"x"'` counted 2 rows locally and 0 served. The key path must count
/// what the general path counts, whatever that reads.
#[test]
fn json_text_columns_count_alike_on_keys_and_rows() {
    use parquet::data_type::{ByteArray, ByteArrayType};
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;
    let dir = tempfile::tempdir().expect("tempdir");
    for (i, bad) in [false, true].into_iter().enumerate() {
        let path = dir.path().join(format!("json{i}.parquet"));
        let schema = Arc::new(
            parse_message_type("message m { optional binary s (JSON); }").expect("schema"),
        );
        let props = Arc::new(WriterProperties::builder().build());
        let file = std::fs::File::create(&path).expect("a file");
        let mut writer = SerializedFileWriter::new(file, schema, props).expect("a writer");
        let mut group = writer.next_row_group().expect("a group");
        let mut col = group.next_column().expect("ok").expect("a column");
        let mut values = vec![
            ByteArray::from(b"\"x\"".to_vec()),
            ByteArray::from(b"{\"a\":1}".to_vec()),
            ByteArray::from(b"\"x\"".to_vec()),
        ];
        if bad {
            values.push(ByteArray::from(vec![b'"', 0xff, b'"']));
        }
        let levels: Vec<i16> = (0..values.len() + 1).map(|j| i16::from(j != 1)).collect();
        col.typed::<ByteArrayType>()
            .write_batch(&values, Some(&levels), None)
            .expect("written");
        col.close().expect("closed");
        group.close().expect("closed");
        writer.close().expect("closed");
        let Ok(_) = open_parquet(&path) else {
            eprintln!("bad {bad}: does not open");
            continue;
        };
        let (local, served, keyed) = local_and_served(&path, &[text("\"x\"")]);
        eprintln!("bad {bad}: local {local} (by keys {keyed}), served {served}");
        assert_eq!(local, served, "bad {bad}");
    }
}

/// Text columns whose Arrow schema (stored in the file) asks for another reading than plain
/// strings: large strings, string views, and dictionaries of 8-bit keys whose row group holds
/// more entries than such keys can name (written batch by batch, each of 100 values). The
/// key path counts what the general path counts, and answers only where it answers.
#[test]
fn text_columns_of_other_arrow_types_count_alike_on_keys_and_rows() {
    use arrow_array::{LargeStringArray, StringViewArray};
    let dir = tempfile::tempdir().expect("tempdir");
    let words: Vec<String> = (0..300).map(|i| format!("w{}", i % 150)).collect();
    let strs: Vec<&str> = words.iter().map(String::as_str).collect();
    let arrays: Vec<(&str, Vec<ArrayRef>)> = vec![
        (
            "large",
            vec![Arc::new(LargeStringArray::from(strs.clone())) as ArrayRef],
        ),
        (
            "view",
            vec![Arc::new(StringViewArray::from(strs.clone())) as ArrayRef],
        ),
        (
            "int8 keys",
            (0..3)
                .map(|b| {
                    let part: Vec<String> = (0..100).map(|i| format!("w{}", b * 100 + i)).collect();
                    let part: Vec<&str> = part.iter().map(String::as_str).collect();
                    Arc::new(part.into_iter().collect::<DictionaryArray<Int8Type>>()) as ArrayRef
                })
                .collect(),
        ),
    ];
    let listed = [text("w0"), text("w149"), text("w250")];
    for (name, parts) in arrays {
        let path = dir
            .path()
            .join(format!("{}.parquet", name.replace(' ', "_")));
        let batches: Vec<RecordBatch> = parts
            .into_iter()
            .map(|a| RecordBatch::try_from_iter([("s", a)]).expect("a batch"))
            .collect();
        write_batches(&path, &batches, None);
        match open_parquet(&path) {
            Err(e) => eprintln!("{name}: does not open: {e}"),
            Ok(_) => {
                let (local, served, keyed) = local_and_served(&path, &listed);
                eprintln!("{name}: local {local} (by keys {keyed}), served {served}");
                assert_eq!(local, served, "{name}");
            }
        }
    }
}

/// The page reader below both paths (Arrow's) panics on some page headers: a version 2 header
/// whose level lengths add up past `i32::MAX` overflows its sum (a debug build panics). The
/// general path reads pages inside `decoding()`, which turns the panic into the error of a
/// file that does not read; the key path read the same pages with no such guard, so a local
/// count (or histogram) on dictionary keys panicked where the served path fails the question.
#[test]
fn a_page_header_arrows_page_reader_panics_on_fails_the_key_path_question_too() {
    use crafted::*;
    use parquet::basic::Encoding;
    use parquet::column::page::Page;
    let dir = tempfile::tempdir().expect("tempdir");
    let overflowing = |keys: Vec<u8>| Page::DataPageV2 {
        buf: keys.into(),
        num_values: 10,
        encoding: Encoding::RLE_DICTIONARY,
        num_nulls: 0,
        num_rows: 10,
        def_levels_byte_len: i32::MAX as u32,
        rep_levels_byte_len: 1,
        is_compressed: false,
        statistics: None,
    };
    let keys = cat(&[&[1], &repeat(10, 0, 1)]);
    // A text column's histogram.
    let path = dir.path().join("text.parquet");
    crafted::file(
        &path,
        true,
        10,
        vec![dictionary(&[b"a", b"b"], 2), overflowing(keys.clone())],
    );
    let (local, served, _) = local_and_served(&path, &[text("a")]);
    assert_eq!(
        (local.as_str(), served.starts_with("error")),
        (served.as_str(), true)
    );
    // An integer column's count.
    let path = dir.path().join("int.parquet");
    crafted::file_of(
        &path,
        "optional int64 x",
        10,
        vec![int_dictionary(&[5, 6], 8, 2), overflowing(keys)],
    );
    let pred = compare(0, CmpOp::Gt, Value::Number(1.0));
    let count = |served: bool| {
        let mut table = open_parquet(&path).expect("opens");
        if served {
            table.constant_work();
        }
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| table.count(&pred))) {
            Ok(Ok(n)) => format!("{n}"),
            Ok(Err(e)) => format!("error: {e}"),
            Err(_) => "PANIC".to_string(),
        }
    };
    let (local, served) = (count(false), count(true));
    assert!(served.starts_with("error"), "{served}");
    assert_eq!(local, served);
}

/// A v1 data page of an optional integer column written with the dictionary, one run a row:
/// `rows` holds each row's key, `None` for a missing row; keys at bit width 3.
fn keyed_rows(rows: &[Option<u64>]) -> parquet::column::page::Page {
    use crafted::*;
    let mut levels = Vec::new();
    let mut keys = vec![3u8];
    for r in rows {
        levels.extend(repeat(1, u64::from(r.is_some()), 1));
        if let Some(k) = r {
            keys.extend(repeat(1, *k, 1));
        }
    }
    v1(Some(&levels), &keys, rows.len() as u32)
}

/// Crafted integer chunks, a file each, as one table (a directory): dictionaries holding
/// entries no row uses (`i64::MIN`, `i64::MAX`, values far outside the used ones), an entry
/// written twice, a group of missing values only (its dictionary not empty), a chunk that
/// falls back to PLAIN pages after a dictionary page (read by the general path) and an INT32
/// chunk beside INT64 ones. Every condition, asked in sequence of one table (later ones
/// skipping on the bounds earlier ones kept), of a fresh table and of a served one, counts
/// as the column store counts the same rows.
#[test]
fn crafted_integer_dictionaries_count_and_skip_as_the_column_store() {
    use crafted::*;
    use parquet::basic::Encoding;
    use parquet::column::page::Page;
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("d");
    std::fs::create_dir(&data).expect("dir");
    let mut all: Vec<Option<i64>> = Vec::new();
    let mut chunk = |name: &str,
                     column: &str,
                     entries: &[i64],
                     width: usize,
                     pages: Vec<Page>,
                     rows: Vec<Option<i64>>| {
        let mut p = vec![int_dictionary(entries, width, entries.len() as u32)];
        p.extend(pages);
        crafted::file_of(&data.join(name), column, rows.len() as u64, p);
        all.extend(rows);
    };
    let (min, max) = (i64::MIN, i64::MAX);
    let dict0 = [min, 5, 7, max, 5];
    let keys0 = [
        Some(1),
        None,
        Some(2),
        Some(4),
        Some(1),
        None,
        Some(2),
        Some(4),
    ];
    chunk(
        "a.parquet",
        "optional int64 x",
        &dict0,
        8,
        vec![keyed_rows(&keys0)],
        keys0.iter().map(|k| k.map(|k| dict0[k as usize])).collect(),
    );
    let dict1 = [100, -100, 50];
    let keys1 = [Some(2), Some(2), None];
    chunk(
        "b.parquet",
        "optional int64 x",
        &dict1,
        8,
        vec![keyed_rows(&keys1)],
        keys1.iter().map(|k| k.map(|k| dict1[k as usize])).collect(),
    );
    let keys2 = [None, None, None, None];
    chunk(
        "c.parquet",
        "optional int64 x",
        &[3, min],
        8,
        vec![keyed_rows(&keys2)],
        vec![None; 4],
    );
    // A dictionary page, a page of keys, then a PLAIN page of 20 and 21 (one row missing).
    let dict3 = [-3, 9];
    let keys3 = [Some(0), Some(1), None];
    let mut plain_levels = repeat(2, 1, 1);
    plain_levels.extend(repeat(1, 0, 1));
    let mut plain = Vec::new();
    for v in [20i64, 21] {
        plain.extend_from_slice(&v.to_le_bytes());
    }
    let plain_page = {
        let mut buf = (plain_levels.len() as u32).to_le_bytes().to_vec();
        buf.extend(&plain_levels);
        buf.extend(&plain);
        Page::DataPage {
            buf: buf.into(),
            num_values: 3,
            encoding: Encoding::PLAIN,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        }
    };
    let mut rows3: Vec<Option<i64>> = keys3.iter().map(|k| k.map(|k| dict3[k as usize])).collect();
    rows3.extend([Some(20), Some(21), None]);
    chunk(
        "d.parquet",
        "optional int64 x",
        &dict3,
        8,
        vec![keyed_rows(&keys3), plain_page],
        rows3,
    );
    let dict4 = [i64::from(i32::MIN), -1, i64::from(i32::MAX), 0];
    let keys4 = [Some(0), Some(1), Some(2), None, Some(1)];
    chunk(
        "e.parquet",
        "optional int32 x",
        &dict4,
        4,
        vec![keyed_rows(&keys4)],
        keys4.iter().map(|k| k.map(|k| dict4[k as usize])).collect(),
    );

    let batch = RecordBatch::try_from_iter([("x", Arc::new(Int64Array::from(all)) as ArrayRef)])
        .expect("a batch");
    let (table, _) = dpq::data::from_batches(&batch.schema(), std::slice::from_ref(&batch), "rows")
        .expect("rows read");
    let memory = Source::Memory(table);
    let n = Value::Number;
    let c = |op, v| compare(0, op, n(v));
    let not = |p: Predicate| Predicate::Not(Box::new(p));
    let mut preds = Vec::new();
    for v in [
        -1e19,
        -9.3e18,
        -2147483648.0,
        -100.0,
        -3.5,
        -1.0,
        0.0,
        4.5,
        5.0,
        6.0,
        7.0,
        9.0,
        20.5,
        50.0,
        99.0,
        100.0,
        2147483647.0,
        9.2e18,
        1e19,
        f64::NAN,
    ] {
        for op in [
            CmpOp::Eq,
            CmpOp::Ne,
            CmpOp::Lt,
            CmpOp::Le,
            CmpOp::Gt,
            CmpOp::Ge,
        ] {
            preds.push(c(op, v));
            preds.push(not(c(op, v)));
        }
    }
    preds.extend([
        compare(0, CmpOp::Eq, text("5")),
        not(compare(0, CmpOp::Ne, Value::Bool(true))),
        Predicate::In {
            column: 0,
            values: vec![n(5.0), n(5.0), text("7"), n(100.0), n(-100.0), n(21.0)],
        },
        not(Predicate::In {
            column: 0,
            values: vec![n(-1.0), n(1e19), Value::Bool(false)],
        }),
        Predicate::Between {
            column: 0,
            low: n(9.0),
            high: n(-3.0),
        },
        Predicate::Between {
            column: 0,
            low: n(-3.0),
            high: n(9.0),
        },
        not(Predicate::Between {
            column: 0,
            low: n(6.0),
            high: n(60.0),
        }),
        not(Predicate::Between {
            column: 0,
            low: n(f64::NAN),
            high: n(60.0),
        }),
        Predicate::Or(Box::new(c(CmpOp::Lt, 0.0)), Box::new(c(CmpOp::Gt, 50.0))),
        Predicate::And(
            Box::new(c(CmpOp::Ge, -100.0)),
            Box::new(not(c(CmpOp::Eq, 5.0))),
        ),
        Predicate::Or(
            Box::new(c(CmpOp::Eq, 101.0)),
            Box::new(not(c(CmpOp::Eq, 101.0))),
        ),
    ]);
    // Four chunks are counted on their keys, the one falling back to PLAIN pages is read.
    let first = open_parquet(&data).expect("opens");
    first.count(&preds[0]).expect("counted");
    assert_eq!((first.groups_read(), first.groups_by_keys()), (5, 4));
    let kept = open_parquet(&data).expect("opens");
    let mut served = open_parquet(&data).expect("opens");
    served.constant_work();
    let mut wrong = Vec::new();
    // Forward, backward, then forward again on the same table.
    let order: Vec<&Predicate> = preds
        .iter()
        .chain(preds.iter().rev())
        .chain(preds.iter())
        .collect();
    for pred in order {
        let want = memory.count(pred).expect("counted");
        let fresh = open_parquet(&data)
            .expect("opens")
            .count(pred)
            .expect("counted");
        let got = (
            kept.count(pred).expect("counted"),
            fresh,
            served.count(pred).expect("counted"),
        );
        if got != (want, want, want) {
            wrong.push(format!("{pred:?}: kept/fresh/served {got:?}, want {want}"));
        }
    }
    assert!(kept.groups_by_keys() > 0, "the key path answered");
    assert_eq!(served.groups_by_keys(), 0);
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// Integer columns Arrow reads as another type than Int32 or Int64 (8-, 16-bit and unsigned
/// integers, stored as INT32 or INT64 with a logical type; UInt32 past `i32::MAX` and UInt64
/// past `i64::MAX` among them) are never counted on their keys, and count as the column store
/// counts them, locally, after bounds were kept and served.
#[test]
fn integer_columns_of_other_arrow_types_are_not_counted_on_keys() {
    use arrow_array::{Int16Array, Int8Array, UInt16Array, UInt32Array, UInt8Array};
    let dir = tempfile::tempdir().expect("tempdir");
    let rows = 3_000usize;
    let pick = |i: usize| i % 7 != 3;
    let arrays: Vec<ArrayRef> = vec![
        Arc::new(Int8Array::from_iter(
            (0..rows).map(|i| pick(i).then_some((i % 5) as i8 - 2)),
        )),
        Arc::new(Int16Array::from_iter(
            (0..rows).map(|i| pick(i).then_some((i % 5) as i16 * 1000 - 2000)),
        )),
        Arc::new(UInt8Array::from_iter(
            (0..rows).map(|i| pick(i).then_some(250 + (i % 5) as u8)),
        )),
        Arc::new(UInt16Array::from_iter(
            (0..rows).map(|i| pick(i).then_some(65_531 + (i % 5) as u16)),
        )),
        Arc::new(UInt32Array::from_iter((0..rows).map(|i| {
            pick(i).then_some(u32::MAX - (i % 5) as u32 * 1_000_000_000)
        }))),
        Arc::new(UInt64Array::from_iter((0..rows).map(|i| {
            pick(i).then_some(u64::MAX - (i % 5) as u64 * (1 << 61))
        }))),
    ];
    let n = Value::Number;
    let c = |op, v| compare(0, op, n(v));
    let preds = [
        c(CmpOp::Lt, 0.0),
        c(CmpOp::Gt, 2147483647.0),
        c(CmpOp::Ge, 9.3e18),
        c(CmpOp::Le, 255.0),
        c(CmpOp::Eq, 4294967295.0),
        Predicate::Not(Box::new(c(CmpOp::Gt, 1000.0))),
    ];
    for (k, array) in arrays.into_iter().enumerate() {
        let path = dir.path().join(format!("t{k}.parquet"));
        write_parquet(&path, vec![("x", array.clone())], Some(1_000));
        let batch = RecordBatch::try_from_iter([("x", array)]).expect("a batch");
        let (table, _) =
            dpq::data::from_batches(&batch.schema(), std::slice::from_ref(&batch), "rows")
                .expect("rows read");
        let memory = Source::Memory(table);
        let kept = open_parquet(&path).expect("opens");
        let mut served = open_parquet(&path).expect("opens");
        served.constant_work();
        for pred in preds.iter().chain(preds.iter().rev()) {
            let want = memory.count(pred).expect("counted");
            let fresh = open_parquet(&path).expect("opens");
            let got = (
                kept.count(pred).expect("counted"),
                fresh.count(pred).expect("counted"),
                served.count(pred).expect("counted"),
            );
            assert_eq!(got, (want, want, want), "type {k}: {pred:?}");
            assert_eq!(fresh.groups_by_keys(), 0, "type {k}: counted on keys");
        }
        assert_eq!((kept.groups_by_keys(), served.groups_by_keys()), (0, 0));
    }
}

/// What a count comes to on a table, a panic caught and told.
fn count_of(table: &dpq::data::ParquetTable, pred: &Predicate) -> String {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| table.count(pred))) {
        Ok(Ok(n)) => format!("{n}"),
        Ok(Err(e)) => format!("error: {e}"),
        Err(_) => "PANIC".to_string(),
    }
}

/// Random byte changes in real INT32 and INT64 chunks (and one round in four the footer):
/// a local count, on dictionary keys where the pages allow, answers what the served path
/// answers (Arrow's decoder of integer keys is not its decoder of text keys, whose checks
/// the key path was made to match), then a second condition on the same table too. 25
/// rounds a file by default (`DPQ_ROUNDS` / 12): 6,000 changed files found no difference.
#[test]
fn bytes_changed_in_an_integer_chunk_answer_as_the_general_path() {
    use arrow_array::Int32Array;
    use parquet::basic::Compression;
    use parquet::file::properties::WriterVersion;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let n = Value::Number;
    let first = compare(0, CmpOp::Ge, n(5.0));
    let second = Predicate::Not(Box::new(compare(0, CmpOp::Lt, n(12.0))));
    let (mut tried, mut keyed) = (0, 0u64);
    let mut broken = Vec::new();
    for (k, (version, nullable, wide)) in [
        (WriterVersion::PARQUET_1_0, true, true),
        (WriterVersion::PARQUET_2_0, true, false),
        (WriterVersion::PARQUET_1_0, false, false),
        (WriterVersion::PARQUET_2_0, false, true),
    ]
    .into_iter()
    .enumerate()
    {
        let values: Vec<Option<i64>> = (0..400)
            .map(|i| {
                let key = if i < 150 { i / 30 } else { (i * 7919) % 20 };
                (!(nullable && i % 11 == 3)).then_some(key as i64 - 3)
            })
            .collect();
        let array: ArrayRef = if wide {
            Arc::new(Int64Array::from(values))
        } else {
            Arc::new(Int32Array::from_iter(
                values.iter().map(|v| v.map(|v| v as i32)),
            ))
        };
        let batch =
            RecordBatch::try_from_iter_with_nullable([("x", array, nullable)]).expect("a batch");
        let props = WriterProperties::builder()
            .set_writer_version(version)
            .set_compression(Compression::UNCOMPRESSED)
            .set_data_page_row_count_limit(100)
            .set_write_batch_size(50)
            .set_max_row_group_row_count(Some(200))
            .build();
        let base = dir.path().join(format!("base{k}.parquet"));
        let file = std::fs::File::create(&base).expect("a file");
        let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).expect("a writer");
        w.write(&batch).expect("written");
        w.close().expect("closed");
        let bytes = std::fs::read(&base).expect("read");
        let ranges = chunk_ranges(&base);
        for round in 0..rounds() / 12 {
            let (changed, at) = change_a_byte(&bytes, &ranges, round, &mut next);
            let path = dir.path().join("changed.parquet");
            std::fs::write(&path, &changed).expect("written");
            let (Ok(local), Ok(mut served)) = (open_parquet(&path), open_parquet(&path)) else {
                continue;
            };
            served.constant_work();
            tried += 1;
            let started = std::time::Instant::now();
            let a = (count_of(&local, &first), count_of(&local, &second));
            let took = started.elapsed();
            let started = std::time::Instant::now();
            let b = (count_of(&served, &first), count_of(&served, &second));
            let took_served = started.elapsed();
            keyed += local.groups_by_keys();
            if a != b || took > std::time::Duration::from_secs(1) {
                broken.push(format!(
                    "file {k}, round {round}, byte {at} set to {:#04x} (was {:#04x}): local {a:?} in {took:?}, served {b:?} in {took_served:?}",
                    changed[at], bytes[at]
                ));
            }
        }
    }
    eprintln!("{tried} changed files, {keyed} groups by keys");
    assert!(keyed > 0);
    assert!(broken.is_empty(), "{broken:#?}");
}

/// The byte range of the first column's chunk in each row group of the Parquet file at `path`.
fn chunk_ranges(path: &Path) -> Vec<(u64, u64)> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let reader =
        SerializedFileReader::new(std::fs::File::open(path).expect("opens")).expect("a reader");
    reader
        .metadata()
        .row_groups()
        .iter()
        .map(|g| g.column(0).byte_range())
        .collect()
}

/// `bytes` with one byte changed (a bit flipped, zeroed, all ones or random), and where: in a
/// chunk of `ranges` three rounds in four, in the footer the fourth.
fn change_a_byte(
    bytes: &[u8],
    ranges: &[(u64, u64)],
    round: usize,
    next: &mut impl FnMut() -> u64,
) -> (Vec<u8>, usize) {
    let mut changed = bytes.to_vec();
    let footer = u32::from_le_bytes(bytes[bytes.len() - 8..][..4].try_into().unwrap());
    let (start, len) = if round % 4 == 3 {
        (
            (bytes.len() - 8) as u64 - u64::from(footer),
            u64::from(footer),
        )
    } else {
        ranges[round % ranges.len()]
    };
    let at = (start + next() % len) as usize;
    let r = next();
    changed[at] = match r % 4 {
        0 => changed[at] ^ (1 << ((r >> 8) % 8)),
        1 => 0,
        2 => 0xff,
        _ => (r >> 16) as u8,
    };
    (changed, at)
}
