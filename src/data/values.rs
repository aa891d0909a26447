//! The identity of a table by what dpq reads of it: its columns and the multiset of its rows,
//! never how they were laid out in a file or in memory.
//!
//! It is the ledger's key for rows handed over in memory (a DataFrame: see `arrow`), and the
//! source of a seeded release's noise for every table held in memory, so that the same table
//! gives the same seeded answers whether it came from a CSV file or a pandas, Polars or
//! pyarrow table. Differential privacy speaks of a table as a multiset of rows, each row a
//! value per named column: so the identity ignores the order of the rows and of the columns.
//! A number is hashed by its value: a whole-valued float (pandas turns an integer column with
//! a missing value into floats) hashes as the integer does. A missing value (an empty field,
//! `NA`, a null, a NaN, an infinity) is one thing.
//!
//! Each row is hashed with BLAKE3 (its values in the order of the sorted column names); the
//! rows' hashes are added up, 64-bit lane by lane, wrapping, so that a row twice counts twice;
//! the identity is the BLAKE3 hash of the sorted names, the number of rows and that sum.

use rayon::prelude::*;

use super::table::{ColumnData, Dictionary, SegmentColumn, Table};

/// What the hash starts with: the form above, and its version.
const FORM: &[u8] = b"dpq table as a multiset of rows, v1\0";

/// The hash of `table`'s names and rows.
pub fn value_hash(table: &Table) -> [u8; 32] {
    let mut order: Vec<usize> = (0..table.names.len()).collect();
    order.sort_by(|&a, &b| table.names[a].cmp(&table.names[b]));
    let sum = table
        .segments
        .par_iter()
        .map(|segment| {
            let mut sum = Sum::default();
            let mut row = Vec::with_capacity(64);
            for i in 0..segment.len {
                row.clear();
                for &c in &order {
                    value(&mut row, &segment.columns[c], &table.dictionaries[c], i);
                }
                sum.add(blake3::hash(&row).as_bytes());
            }
            sum
        })
        .reduce(Sum::default, Sum::merge);
    let mut hash = blake3::Hasher::new();
    hash.update(FORM);
    hash.update(&(order.len() as u64).to_le_bytes());
    for &c in &order {
        let name = table.names[c].as_bytes();
        hash.update(&(name.len() as u64).to_le_bytes());
        hash.update(name);
    }
    hash.update(&table.n_rows.to_le_bytes());
    for lane in sum.0 {
        hash.update(&lane.to_le_bytes());
    }
    *hash.finalize().as_bytes()
}

/// A sum of row hashes, four 64-bit lanes, each wrapping.
#[derive(Default)]
struct Sum([u64; 4]);

impl Sum {
    fn add(&mut self, h: &[u8; 32]) {
        for (lane, bytes) in self.0.iter_mut().zip(h.chunks_exact(8)) {
            let mut b = [0u8; 8];
            b.copy_from_slice(bytes);
            *lane = lane.wrapping_add(u64::from_le_bytes(b));
        }
    }

    fn merge(mut self, other: Sum) -> Sum {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a = a.wrapping_add(b);
        }
        self
    }
}

/// Row `i`'s value of a column, as hashed: a missing value is `0`; a number is `1` and its
/// value as a 64-bit integer when it is a whole number in range, else `2` and its bits as a
/// float; a text is `3`, its length and bytes; a boolean `4` and `0` or `1`.
fn value(out: &mut Vec<u8>, column: &SegmentColumn, dictionary: &Dictionary, i: usize) {
    let present = column
        .valid
        .as_ref()
        .is_none_or(|v| v[i / 64] >> (i % 64) & 1 == 1);
    if !present {
        out.push(0);
        return;
    }
    let integer = |out: &mut Vec<u8>, x: i64| {
        out.push(1);
        out.extend_from_slice(&x.to_le_bytes());
    };
    match &column.data {
        ColumnData::Integer(ints) => integer(out, ints.get(i)),
        ColumnData::Float(values) => {
            let x = values[i];
            // Whole numbers within i64's range convert exactly both ways; -0.0 is 0.
            if x.fract() == 0.0 && x >= -(2f64.powi(63)) && x < 2f64.powi(63) {
                integer(out, x as i64);
            } else {
                out.push(2);
                out.extend_from_slice(&x.to_bits().to_le_bytes());
            }
        }
        ColumnData::Text(codes) => {
            let text = dictionary.get(codes.get(i) as usize);
            out.push(3);
            out.extend_from_slice(&(text.len() as u64).to_le_bytes());
            out.extend_from_slice(text.as_bytes());
        }
        ColumnData::Boolean(bits) => {
            out.extend_from_slice(&[4, (bits[i / 64] >> (i % 64) & 1) as u8])
        }
    }
}
