//! `count_cells`: the true number of rows in every cell of a cube, in one pass over the
//! table, for a histogram.
//!
//! A cube's cells are the product of its dimensions' coordinates, numbered row-major (the
//! last dimension varies fastest). Each dimension buckets one column: a number by the cuts it
//! is at or above (`k` cuts give the half-open intervals `0..=k`), a text or boolean value by
//! the listed value it equals, or "other"; a missing value has the last coordinate. Each row's
//! cell is built dimension by dimension, then counted.

use rayon::prelude::*;

use super::bitmap;
use super::predicate::Value;
use super::table::{ColumnData, Segment, Table};

/// How one dimension buckets its column's values.
#[derive(Debug, Clone, PartialEq)]
pub enum Buckets {
    /// Increasing cuts on a number column: a value `x` has coordinate `#{cuts <= x}`.
    Cuts(Vec<f64>),
    /// Distinct listed values on a text or boolean column: a value has the index of the one
    /// it equals, or `values.len()` ("other").
    Values(Vec<Value>),
}

impl Buckets {
    /// The number of coordinates, the missing one included.
    pub(crate) fn len(&self) -> usize {
        match self {
            Buckets::Cuts(c) => c.len() + 2,
            Buckets::Values(v) => v.len() + 2,
        }
    }
}

/// The true number of rows of `table` in every cell of the cube whose dimensions are `dims`
/// (a column index and its buckets each).
///
/// Internal: these numbers must only ever be used to add noise to.
pub fn count_cells(table: &Table, dims: &[(usize, Buckets)]) -> Vec<u64> {
    let cells: usize = dims.iter().map(|(_, b)| b.len()).product();
    let mut strides = vec![1usize; dims.len()];
    for d in (0..dims.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * dims[d + 1].1.len();
    }
    let codes: Vec<Option<Vec<(u32, usize)>>> =
        dims.iter().map(|(c, b)| text_codes(table, *c, b)).collect();
    table
        .segments
        .par_iter()
        .map(|seg| {
            let mut index = vec![0usize; seg.len];
            for (d, (column, buckets)) in dims.iter().enumerate() {
                add_coords(
                    seg,
                    *column,
                    buckets,
                    codes[d].as_deref(),
                    strides[d],
                    &mut index,
                );
            }
            let mut counts = vec![0u64; cells];
            for i in index {
                counts[i] += 1;
            }
            counts
        })
        .reduce(
            || vec![0u64; cells],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                a
            },
        )
}

/// For a text column bucketed by values: each listed value's dictionary code and its index
/// (values not in the column have no code, and no row has them).
fn text_codes(table: &Table, column: usize, buckets: &Buckets) -> Option<Vec<(u32, usize)>> {
    let Buckets::Values(values) = buckets else {
        return None;
    };
    let dict = &table.dictionaries[column];
    Some(
        values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| match v {
                Value::Text(t) => dict.find(t).map(|code| (code as u32, i)),
                _ => None,
            })
            .collect(),
    )
}

/// Adds `stride` times each row's coordinate along one dimension to `index`.
fn add_coords(
    seg: &Segment,
    column: usize,
    buckets: &Buckets,
    codes: Option<&[(u32, usize)]>,
    stride: usize,
    index: &mut [usize],
) {
    let col = &seg.columns[column];
    let missing = buckets.len() - 1;
    // An integer `x` is at or above a cut `c` exactly when `x >= ceil(c)`: compared as
    // integers, with no rounding of `x` to a float (2^60 - 1 is below the cut 2^60).
    let thresholds: Vec<i128> = match buckets {
        Buckets::Cuts(cuts) => cuts.iter().map(|c| c.ceil() as i128).collect(),
        Buckets::Values(_) => Vec::new(),
    };
    let valid = |r: usize| col.valid.as_ref().is_none_or(|v| bitmap::get(v, r));
    let coord = |r: usize| -> usize {
        if !valid(r) {
            return missing;
        }
        match (buckets, &col.data) {
            (Buckets::Cuts(_), ColumnData::Integer(v)) => {
                let x = i128::from(v[r]);
                thresholds.partition_point(|t| *t <= x)
            }
            (Buckets::Cuts(cuts), ColumnData::Float(v)) => cuts.partition_point(|c| *c <= v[r]),
            (Buckets::Values(values), ColumnData::Text(v)) => codes
                .and_then(|cs| cs.iter().find(|(code, _)| *code == v[r]).map(|(_, i)| *i))
                .unwrap_or(values.len()),
            (Buckets::Values(values), ColumnData::Boolean(bits)) => {
                let b = bitmap::get(bits, r);
                values
                    .iter()
                    .position(|v| *v == Value::Bool(b))
                    .unwrap_or(values.len())
            }
            (Buckets::Values(values), ColumnData::Integer(v)) => values
                .iter()
                .position(|x| *x == Value::Number(v[r] as f64))
                .unwrap_or(values.len()),
            (Buckets::Values(values), ColumnData::Float(v)) => values
                .iter()
                .position(|x| *x == Value::Number(v[r]))
                .unwrap_or(values.len()),
            // Cuts over a text or boolean column: never planned; every value is "missing".
            (Buckets::Cuts(_), _) => missing,
        }
    };
    for (r, i) in index.iter_mut().enumerate() {
        *i += coord(r) * stride;
    }
}
