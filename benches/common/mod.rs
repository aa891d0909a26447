//! The synthetic people table shared by the benchmarks, as CSV or as Parquet.
#![allow(dead_code)]

use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

/// Rows in the benchmark file: `DPQ_BENCH_ROWS`, else 10 million.
pub fn bench_rows() -> usize {
    std::env::var("DPQ_BENCH_ROWS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000)
}

const REGIONS: [&str; 5] = ["North", "South", "East", "West", "Centre"];

/// One synthetic person.
pub struct Person {
    pub age: Option<i64>,
    pub sex: &'static str,
    pub income: Option<i64>,
    pub region: &'static str,
    pub height_cm: f64,
    pub employed: bool,
}

/// `rows` synthetic people (a few missing ages and incomes), the same on every run.
pub fn people(rows: usize) -> impl Iterator<Item = Person> {
    let mut rng = ChaCha20Rng::seed_from_u64(20_240_611);
    (0..rows).map(move |_| {
        let age: u32 = rng.random_range(18..=90);
        let age = (!rng.random_bool(0.01)).then_some(i64::from(age));
        let sex = if rng.random_bool(0.5) { "F" } else { "M" };
        let income: u32 = rng.random_range(0..150_000);
        let income = (!rng.random_bool(0.02)).then_some(i64::from(income));
        let region = REGIONS[rng.random_range(0..REGIONS.len())];
        let height: i32 = rng.random_range(1400..2100);
        let height_cm = f64::from(height) / 10.0;
        let employed = rng.random_bool(0.6);
        Person {
            age,
            sex,
            income,
            region,
            height_cm,
            employed,
        }
    })
}

/// Writes `rows` synthetic people (two integer, one float, two text and one boolean
/// column, with a few missing ages and incomes) to `path`.
pub fn write_people(path: &Path, rows: usize) -> std::io::Result<()> {
    let mut w = BufWriter::with_capacity(1 << 20, File::create(path)?);
    writeln!(w, "age,sex,income,region,height_cm,employed")?;
    for p in people(rows) {
        let age = p.age.map_or("NA".to_string(), |a| a.to_string());
        let income = p.income.map_or(String::new(), |i| i.to_string());
        writeln!(
            w,
            "{age},{},{income},{},{:.1},{}",
            p.sex, p.region, p.height_cm, p.employed
        )?;
    }
    w.flush()
}

/// Writes the same people as one Parquet file of row groups of a million rows.
pub fn write_people_parquet(path: &Path, rows: usize) -> std::io::Result<()> {
    write_parquet(path, people(rows))
}

/// Writes `people`, in their order, as one Parquet file of row groups of a million rows.
pub fn write_parquet(path: &Path, people: impl Iterator<Item = Person>) -> std::io::Result<()> {
    let file = File::create(path)?;
    let mut writer: Option<parquet::arrow::ArrowWriter<File>> = None;
    let mut file = Some(file);
    let mut all = people.peekable();
    while all.peek().is_some() {
        let chunk: Vec<Person> = all.by_ref().take(1 << 20).collect();
        let columns: Vec<(&str, ArrayRef)> = vec![
            (
                "age",
                Arc::new(Int64Array::from_iter(chunk.iter().map(|p| p.age))),
            ),
            (
                "sex",
                Arc::new(StringArray::from_iter_values(chunk.iter().map(|p| p.sex))),
            ),
            (
                "income",
                Arc::new(Int64Array::from_iter(chunk.iter().map(|p| p.income))),
            ),
            (
                "region",
                Arc::new(StringArray::from_iter_values(
                    chunk.iter().map(|p| p.region),
                )),
            ),
            (
                "height_cm",
                Arc::new(Float64Array::from_iter_values(
                    chunk.iter().map(|p| p.height_cm),
                )),
            ),
            (
                "employed",
                Arc::new(BooleanArray::from_iter(
                    chunk.iter().map(|p| Some(p.employed)),
                )),
            ),
        ];
        let batch = RecordBatch::try_from_iter(columns).map_err(std::io::Error::other)?;
        if writer.is_none() {
            let props = parquet::file::properties::WriterProperties::builder()
                .set_max_row_group_row_count(Some(1 << 20))
                .build();
            let f = file
                .take()
                .ok_or_else(|| std::io::Error::other("one file"))?;
            writer = Some(
                parquet::arrow::ArrowWriter::try_new(f, batch.schema(), Some(props))
                    .map_err(std::io::Error::other)?,
            );
        }
        if let Some(w) = writer.as_mut() {
            w.write(&batch).map_err(std::io::Error::other)?;
        }
    }
    if let Some(w) = writer {
        w.close().map_err(std::io::Error::other)?;
    }
    Ok(())
}

/// `people` as one Arrow batch of the table's six columns, in their order, every column
/// nullable (so that batches with and without missing values have one schema).
pub fn people_batch(people: &[Person]) -> std::io::Result<RecordBatch> {
    let columns: Vec<(&str, ArrayRef, bool)> = vec![
        (
            "age",
            Arc::new(Int64Array::from_iter(people.iter().map(|p| p.age))),
            true,
        ),
        (
            "sex",
            Arc::new(StringArray::from_iter_values(people.iter().map(|p| p.sex))),
            true,
        ),
        (
            "income",
            Arc::new(Int64Array::from_iter(people.iter().map(|p| p.income))),
            true,
        ),
        (
            "region",
            Arc::new(StringArray::from_iter_values(
                people.iter().map(|p| p.region),
            )),
            true,
        ),
        (
            "height_cm",
            Arc::new(Float64Array::from_iter_values(
                people.iter().map(|p| p.height_cm),
            )),
            true,
        ),
        (
            "employed",
            Arc::new(BooleanArray::from_iter(
                people.iter().map(|p| Some(p.employed)),
            )),
            true,
        ),
    ];
    RecordBatch::try_from_iter_with_nullable(columns).map_err(std::io::Error::other)
}

/// Writes `people`, in their order, as one Parquet file of row groups of `group_rows` rows
/// (the last may be shorter).
pub fn write_parquet_grouped(
    path: &Path,
    people: &[Person],
    group_rows: usize,
) -> std::io::Result<()> {
    let group_rows = group_rows.max(1);
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(group_rows))
        .build();
    let schema = people_batch(&[])?.schema();
    let mut writer = parquet::arrow::ArrowWriter::try_new(File::create(path)?, schema, Some(props))
        .map_err(std::io::Error::other)?;
    for chunk in people.chunks(group_rows) {
        writer
            .write(&people_batch(chunk)?)
            .map_err(std::io::Error::other)?;
        writer.flush().map_err(std::io::Error::other)?;
    }
    writer.close().map_err(std::io::Error::other)?;
    Ok(())
}
