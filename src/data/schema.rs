//! Declared schemas: column names, types and public domains given by a curator, so that
//! nothing shown about a table depends on its data.
//!
//! With a declared schema the loader does not infer: each declared column is read as its
//! declared type, and a cell that does not parse as that type, or lies outside the column's
//! public domain, is a missing value (never an error, which would tell what the cell holds).
//! Columns of the file that are not declared are not kept.

use super::bitmap::BitBuilder;
use super::table::{ColumnData, ColumnType, Table};
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;

/// The public domain of a column: values outside it are missing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Domain {
    /// Every value of the type.
    #[default]
    Any,
    /// Numbers from `min` to `max`, both included (integer and float columns).
    Range {
        /// The least value kept.
        min: Decimal,
        /// The greatest value kept.
        max: Decimal,
    },
    /// Exactly these values (text columns).
    Values(Vec<String>),
}

/// One declared column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    /// Its name, as the file's header writes it.
    pub name: String,
    /// Its type.
    pub ty: ColumnType,
    /// Its public domain.
    pub domain: Domain,
}

impl Declared {
    /// A column of type `ty` over every value.
    pub fn new(name: impl Into<String>, ty: ColumnType) -> Self {
        Declared {
            name: name.into(),
            ty,
            domain: Domain::Any,
        }
    }
}

/// Keeps the declared columns of `table` in their declared order (`order[i]` is the file's
/// column of declared column `i`) and makes every value outside its domain missing.
pub(crate) fn conform(table: Table, declared: &[Declared], order: &[usize]) -> Table {
    let Table {
        names: _,
        types: _,
        mut dictionaries,
        mut segments,
        n_rows,
    } = table;
    let mut out_dicts = Vec::with_capacity(declared.len());
    for &c in order {
        out_dicts.push(std::mem::take(&mut dictionaries[c]));
    }
    for seg in &mut segments {
        let mut cols: Vec<_> = seg.columns.drain(..).map(Some).collect();
        seg.columns = order
            .iter()
            .map(|&c| cols[c].take().expect("each file column is declared once"))
            .collect();
    }
    let mut table = Table {
        names: declared.iter().map(|d| d.name.clone()).collect(),
        types: declared.iter().map(|d| d.ty).collect(),
        dictionaries: out_dicts,
        segments,
        n_rows,
    };
    for (c, d) in declared.iter().enumerate() {
        apply_domain(&mut table, c, &d.domain);
    }
    table
}

/// Makes the values of column `c` outside `domain` missing.
fn apply_domain(table: &mut Table, c: usize, domain: &Domain) {
    let keep_code: Option<Vec<bool>> = match domain {
        Domain::Values(values) => {
            let dict = &table.dictionaries[c];
            Some(
                (0..dict.len())
                    .map(|code| values.iter().any(|v| v == dict.get(code)))
                    .collect(),
            )
        }
        _ => None,
    };
    let range = match domain {
        Domain::Range { min, max } => Some((
            min.to_f64().unwrap_or(f64::NEG_INFINITY),
            max.to_f64().unwrap_or(f64::INFINITY),
        )),
        _ => None,
    };
    if keep_code.is_none() && range.is_none() {
        return;
    }
    let inside = |v: f64| range.is_none_or(|(lo, hi)| lo <= v && v <= hi);
    for seg in &mut table.segments {
        let len = seg.len;
        let col = &mut seg.columns[c];
        let valid_at = |i: usize| {
            col.valid
                .as_ref()
                .is_none_or(|bits| bits[i / 64] >> (i % 64) & 1 == 1)
        };
        let keep: Vec<bool> = match &col.data {
            ColumnData::Integer(v) => (0..len)
                .map(|i| valid_at(i) && inside(v.get(i) as f64))
                .collect(),
            ColumnData::Float(v) => (0..len).map(|i| valid_at(i) && inside(v[i])).collect(),
            ColumnData::Text(codes) => (0..len)
                .map(|i| {
                    valid_at(i)
                        && keep_code
                            .as_ref()
                            .is_none_or(|k| k.get(codes.get(i) as usize).copied().unwrap_or(false))
                })
                .collect(),
            ColumnData::Boolean(_) => (0..len).map(valid_at).collect(),
        };
        if keep.iter().all(|&k| k) {
            continue;
        }
        let mut bits = BitBuilder::with_capacity(len);
        for k in keep {
            bits.push(k);
        }
        col.valid = Some(bits.finish());
    }
}
