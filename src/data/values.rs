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
//! Each row is hashed with SipHash-1-3 to 128 bits (its values in the order of the sorted
//! column names, under fixed keys that set this use apart); the rows' hashes are added up,
//! wrapping, so that a row twice counts twice; the identity is the BLAKE3 hash of the sorted
//! names, the number of rows and that sum. The hash tells tables apart that were made apart:
//! a sum of row hashes is no defence against someone who builds a table to collide with
//! another whose content they know, and needs none here, since whoever holds the rows can load
//! them as they are (a served dataset's ledger is named by its curator, not by its content).

use std::hash::Hasher;

use rayon::prelude::*;
use siphasher::sip128::{Hasher128, SipHasher13};

use super::table::{ColumnData, Dictionary, SegmentColumn, Table};

/// What the hash starts with: the form above, and its version.
const FORM: &[u8] = b"dpq table as a multiset of rows, v1\0";

/// The keys of the rows' SipHash: fixed, public, this use's own.
const KEYS: (u64, u64) = (0x6470_7120_726f_7773, 0x6d75_6c74_6973_6574);

/// Rows hashed by one task.
const CHUNK: usize = 1 << 16;

/// The hash of `table`'s names and rows.
pub fn value_hash(table: &Table) -> [u8; 32] {
    let mut order: Vec<usize> = (0..table.names.len()).collect();
    order.sort_by(|&a, &b| table.names[a].cmp(&table.names[b]));
    let tasks: Vec<(usize, usize)> = table
        .segments
        .iter()
        .enumerate()
        .flat_map(|(s, seg)| (0..seg.len).step_by(CHUNK).map(move |from| (s, from)))
        .collect();
    let sum = tasks
        .par_iter()
        .map(|&(s, from)| {
            let segment = &table.segments[s];
            let mut sum = 0u128;
            let mut row = Vec::with_capacity(64);
            for i in from..(from + CHUNK).min(segment.len) {
                row.clear();
                for &c in &order {
                    value(&mut row, &segment.columns[c], &table.dictionaries[c], i);
                }
                let mut h = SipHasher13::new_with_keys(KEYS.0, KEYS.1);
                h.write(&row);
                sum = sum.wrapping_add(h.finish128().as_u128());
            }
            sum
        })
        .reduce(|| 0, u128::wrapping_add);
    let mut hash = blake3::Hasher::new();
    hash.update(FORM);
    hash.update(&(order.len() as u64).to_le_bytes());
    for &c in &order {
        let name = table.names[c].as_bytes();
        hash.update(&(name.len() as u64).to_le_bytes());
        hash.update(name);
    }
    hash.update(&table.n_rows.to_le_bytes());
    hash.update(&sum.to_le_bytes());
    *hash.finalize().as_bytes()
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
