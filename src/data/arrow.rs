//! Rows handed over as Arrow record batches (a pandas or Polars DataFrame, a pyarrow Table,
//! through the Arrow C stream interface): read into the column store as a Parquet file's
//! batches are, with an identity taken from what dpq reads.
//!
//! Columns are typed as Parquet's are (integers `integer`, floats and decimals `float`,
//! `boolean`, strings, dates and times as ISO text `text`; binary and nested columns are
//! refused). A null, a NaN and an infinity are all missing values.
//!
//! The identity of the rows ([`from_batches`]' hash) is their [`value_hash`]: the same rows as
//! a pandas, a Polars or a pyarrow table, in batches of any size, with 32- or 64-bit integers,
//! with `None` or `NaN` for a missing value, hash alike: one table, one budget, whichever
//! library held it.

use ahash::AHashMap;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::Schema;

use super::error::{escape_name, DataError};
use super::lanes::Lanes;
use super::parquet::{as_text, check_names, column_type, convert, validity};
use super::table::{ColumnData, ColumnType, Dictionary, Segment, SegmentColumn, Table};
use super::values::value_hash;

/// The table of `batches` (whose schema is `schema`), and the hash of its content. `shown`
/// names the rows in errors (`a pandas DataFrame`).
pub fn from_batches(
    schema: &Schema,
    batches: &[RecordBatch],
    shown: &str,
) -> Result<(Table, [u8; 32]), DataError> {
    let fail = |message: String| DataError::Io {
        path: shown.to_string(),
        message,
    };
    let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    check_names(&names, shown, Path::new(shown))?;
    let mut types = Vec::with_capacity(names.len());
    for (field, name) in schema.fields().iter().zip(&names) {
        let t = column_type(field.data_type()).map_err(|why| {
            fail(format!(
                "column {} is {why}: dpq reads integer, float, decimal, boolean, string, date and time columns",
                escape_name(name)
            ))
        })?;
        types.push(t);
    }
    let batches: Vec<&RecordBatch> = batches.iter().filter(|b| b.num_rows() > 0).collect();
    let n_rows: u64 = batches.iter().map(|b| b.num_rows() as u64).sum();
    let mut columns: Vec<Vec<SegmentColumn>> = Vec::with_capacity(names.len());
    let mut dictionaries = Vec::with_capacity(names.len());
    for (c, &t) in types.iter().enumerate() {
        let arrays: Vec<&ArrayRef> = batches.iter().map(|b| b.column(c)).collect();
        let why = |why: &str| fail(format!("column {}: {why}", escape_name(&names[c])));
        let (parts, dictionary) = match t {
            ColumnType::Text => text_column(&arrays).map_err(why)?,
            _ => {
                let parts = arrays
                    .iter()
                    .map(|a| convert(a, t).map(|(column, _)| column))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(why)?;
                (parts, Dictionary::default())
            }
        };
        columns.push(parts);
        dictionaries.push(dictionary);
    }
    let mut by_column: Vec<std::vec::IntoIter<SegmentColumn>> =
        columns.into_iter().map(Vec::into_iter).collect();
    let segments = batches
        .iter()
        .map(|b| Segment {
            len: b.num_rows(),
            columns: by_column.iter_mut().filter_map(Iterator::next).collect(),
        })
        .collect();
    let table = Table {
        names,
        types,
        dictionaries,
        segments,
        n_rows,
    };
    let content = value_hash(&table);
    Ok((table, content))
}

/// A text column over all batches: one sorted dictionary of their values, and a code per row
/// of each batch. Codes go by first appearance (one hash per row), then are renumbered by
/// rank: a column has few distinct values next to its rows.
fn text_column(arrays: &[&ArrayRef]) -> Result<(Vec<SegmentColumn>, Dictionary), &'static str> {
    let texts: Vec<ArrayRef> = arrays
        .iter()
        .map(|a| as_text(a))
        .collect::<Result<_, _>>()?;
    let strings: Vec<&arrow_array::StringArray> = texts.iter().map(|a| a.as_string()).collect();
    let mut first: AHashMap<&str, u32> = AHashMap::new();
    let mut distinct: Vec<&str> = Vec::new();
    let mut codes: Vec<Vec<u32>> = Vec::with_capacity(strings.len());
    for values in &strings {
        let mut batch = Vec::with_capacity(values.len());
        for v in values.iter() {
            batch.push(match v {
                Some(v) => *first.entry(v).or_insert_with(|| {
                    distinct.push(v);
                    (distinct.len() - 1) as u32
                }),
                None => 0,
            });
        }
        codes.push(batch);
    }
    u32::try_from(distinct.len()).map_err(|_| "too many distinct values")?;
    let mut by_rank: Vec<u32> = (0..distinct.len() as u32).collect();
    by_rank.sort_unstable_by(|&a, &b| distinct[a as usize].cmp(distinct[b as usize]));
    let mut rank = vec![0u32; distinct.len()];
    let mut bytes = Vec::new();
    let mut ends = Vec::with_capacity(distinct.len());
    for (r, &c) in by_rank.iter().enumerate() {
        rank[c as usize] = r as u32;
        bytes.extend_from_slice(distinct[c as usize].as_bytes());
        ends.push(bytes.len());
    }
    let dictionary = Dictionary::from_parts(bytes, ends).ok_or("a value is not UTF-8")?;
    let max_code = dictionary.len().saturating_sub(1) as u64;
    let parts = strings
        .iter()
        .zip(codes)
        .map(|(values, mut batch)| {
            for (i, c) in batch.iter_mut().enumerate() {
                if values.is_valid(i) {
                    *c = rank[*c as usize];
                }
            }
            SegmentColumn {
                data: ColumnData::Text(Lanes::from_codes(batch, max_code)),
                valid: validity(*values, |_| true),
            }
        })
        .collect();
    Ok((parts, dictionary))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Float64Array, Int32Array, Int64Array, StringArray};
    use arrow_schema::Field;
    use std::sync::Arc;

    fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
        let fields: Vec<Field> = columns
            .iter()
            .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
            .collect();
        RecordBatch::try_new(
            Arc::new(Schema::new(fields)),
            columns.into_iter().map(|(_, a)| a).collect(),
        )
        .expect("a batch")
    }

    fn read(batches: &[RecordBatch]) -> (Table, [u8; 32]) {
        from_batches(&batches[0].schema(), batches, "rows").expect("rows read")
    }

    #[test]
    fn the_same_values_hash_alike_however_they_are_laid_out() {
        let ints = batch(vec![
            (
                "age",
                Arc::new(Int64Array::from(vec![Some(30), None, Some(41)])),
            ),
            (
                "city",
                Arc::new(StringArray::from(vec![Some("b"), Some("a"), None])),
            ),
        ]);
        // 32-bit integers, in two batches.
        let first = batch(vec![
            ("age", Arc::new(Int32Array::from(vec![Some(30)]))),
            ("city", Arc::new(StringArray::from(vec![Some("b")]))),
        ]);
        let second = batch(vec![
            ("age", Arc::new(Int32Array::from(vec![None, Some(41)]))),
            ("city", Arc::new(StringArray::from(vec![Some("a"), None]))),
        ]);
        // Floats with NaN for the missing age, as pandas holds them.
        let floats = batch(vec![
            (
                "age",
                Arc::new(Float64Array::from(vec![30.0, f64::NAN, 41.0])),
            ),
            (
                "city",
                Arc::new(StringArray::from(vec![Some("b"), Some("a"), None])),
            ),
        ]);
        let (table, a) = read(&[ints]);
        assert_eq!(table.n_rows(), 3);
        assert_eq!(table.column_type(0), ColumnType::Integer);
        assert_eq!(read(&[first, second]).1, a);
        let (float_table, f) = read(&[floats]);
        assert_eq!(float_table.column_type(0), ColumnType::Float);
        assert_eq!(f, a);
    }

    #[test]
    fn the_order_of_rows_and_columns_is_no_part_of_the_content() {
        let of = |columns: Vec<(&str, Vec<Option<i64>>)>| {
            let columns = columns
                .into_iter()
                .map(|(n, v)| (n, Arc::new(Int64Array::from(v)) as ArrayRef))
                .collect();
            read(&[batch(columns)]).1
        };
        let base = of(vec![
            ("a", vec![Some(1), Some(2)]),
            ("b", vec![Some(3), None]),
        ]);
        let rows_swapped = of(vec![
            ("a", vec![Some(2), Some(1)]),
            ("b", vec![None, Some(3)]),
        ]);
        let columns_swapped = of(vec![
            ("b", vec![Some(3), None]),
            ("a", vec![Some(1), Some(2)]),
        ]);
        assert_eq!(rows_swapped, base);
        assert_eq!(columns_swapped, base);
        // A value moved to another row is another table.
        assert_ne!(
            of(vec![
                ("a", vec![Some(2), Some(1)]),
                ("b", vec![Some(3), None])
            ]),
            base
        );
    }

    #[test]
    fn other_values_names_or_rows_hash_otherwise() {
        let of = |name: &str, v: Vec<Option<i64>>| {
            read(&[batch(vec![(name, Arc::new(Int64Array::from(v)))])]).1
        };
        let base = of("age", vec![Some(1), Some(2)]);
        assert_ne!(of("age", vec![Some(1), None]), base);
        assert_ne!(of("years", vec![Some(1), Some(2)]), base);
        assert_ne!(of("age", vec![Some(1), Some(2), Some(2)]), base);
        assert_ne!(
            of("age", vec![Some(1), Some(1), Some(2), Some(2)]),
            of("age", vec![Some(1), Some(2)])
        );
        let text = read(&[batch(vec![(
            "age",
            Arc::new(StringArray::from(vec!["1", "2"])) as ArrayRef,
        )])])
        .1;
        assert_ne!(text, base, "the text 1 is not the number 1");
        let half = read(&[batch(vec![(
            "age",
            Arc::new(Float64Array::from(vec![1.0, 2.5])) as ArrayRef,
        )])])
        .1;
        assert_ne!(half, base);
    }

    #[test]
    fn a_binary_column_is_refused_by_name() {
        let b = batch(vec![(
            "blob",
            Arc::new(arrow_array::BinaryArray::from(vec![b"x".as_ref()])) as ArrayRef,
        )]);
        let Err(e) = from_batches(&b.schema(), &[b], "a pandas DataFrame") else {
            panic!("a binary column was read");
        };
        let text = e.to_string();
        assert!(text.contains("blob") && text.contains("binary"), "{text}");
    }
}
