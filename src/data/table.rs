//! `Table`: an immutable, columnar, segmented store of one loaded CSV file, and its schema.

use std::fmt;

use super::lanes::{Ints, Lanes};

/// The inferred type of a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    /// Every value parses as a 64-bit signed integer.
    Integer,
    /// Every value parses as a finite floating-point number (and some not as an integer).
    Float,
    /// Any other values, compared by UTF-8 byte order; also a column with no values at all.
    Text,
    /// Every value is `true` or `false` (ASCII case-insensitive).
    Boolean,
}

impl fmt::Display for ColumnType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ColumnType::Integer => "integer",
            ColumnType::Float => "float",
            ColumnType::Text => "text",
            ColumnType::Boolean => "boolean",
        })
    }
}

/// The distinct values of a text column in UTF-8 byte order, kept in one string: the code
/// of a value is its rank, so comparing codes is comparing values.
#[derive(Default, Clone)]
pub(crate) struct Dictionary {
    text: String,
    /// `ends[c]` is the end of value `c` in `text`; it starts at `ends[c - 1]` (or 0).
    ends: Vec<usize>,
}

impl Dictionary {
    /// A dictionary of the values laid end to end in `bytes`, value `c` ending at `ends[c]`;
    /// `None` unless `bytes` is UTF-8 and the ends fall on character boundaries in order.
    pub(crate) fn from_parts(bytes: Vec<u8>, ends: Vec<usize>) -> Option<Self> {
        let text = String::from_utf8(bytes).ok()?;
        let mut start = 0;
        for &end in &ends {
            if end < start || !text.is_char_boundary(end) {
                return None;
            }
            start = end;
        }
        (start == text.len()).then_some(Dictionary { text, ends })
    }

    /// The number of values.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// The value with code `c`.
    pub(crate) fn get(&self, c: usize) -> &str {
        let start = if c == 0 { 0 } else { self.ends[c - 1] };
        &self.text[start..self.ends[c]]
    }

    /// The first code whose value is not less than `s` (or `len()`).
    pub(crate) fn lower_bound(&self, s: &str) -> usize {
        self.partition_point(|v| v < s)
    }

    /// The first code whose value is greater than `s` (or `len()`).
    pub(crate) fn upper_bound(&self, s: &str) -> usize {
        self.partition_point(|v| v <= s)
    }

    /// The code of `s`, when it is a value of the column.
    pub(crate) fn find(&self, s: &str) -> Option<usize> {
        let c = self.lower_bound(s);
        (c < self.len() && self.get(c) == s).then_some(c)
    }

    /// The first code for which `below` is false (`below` must be true, then false).
    fn partition_point(&self, below: impl Fn(&str) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if below(self.get(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

/// The cells of one column within one segment. What a missing cell holds is unspecified
/// (within the storage's range); its validity bit says it is missing.
pub(crate) enum ColumnData {
    /// Integer values, as offsets from the segment's least value at the narrowest width.
    Integer(Ints),
    /// Float values.
    Float(Vec<f64>),
    /// Codes into the column's sorted dictionary, at the width that holds its largest code.
    Text(Lanes),
    /// Boolean values as a bitmap.
    Boolean(Vec<u64>),
}

/// One column of one segment: values and, when any cell is missing, a validity bitmap.
pub(crate) struct SegmentColumn {
    pub(crate) data: ColumnData,
    /// Bit `i` set when row `i` has a value; `None` when every row has one.
    pub(crate) valid: Option<Vec<u64>>,
}

/// A run of consecutive rows, stored column by column.
pub(crate) struct Segment {
    pub(crate) len: usize,
    pub(crate) columns: Vec<SegmentColumn>,
}

/// A loaded CSV file: a schema, a public row count and private cells.
///
/// Immutable after [`load_csv`](super::load_csv). `Debug` shows the schema and row count only.
pub struct Table {
    pub(crate) names: Vec<String>,
    pub(crate) types: Vec<ColumnType>,
    /// Per column, the sorted distinct values of a text column (empty for other types).
    pub(crate) dictionaries: Vec<Dictionary>,
    pub(crate) segments: Vec<Segment>,
    pub(crate) n_rows: u64,
}

impl Table {
    /// Stores every integer and text column at a width decided by public facts alone, for a
    /// served dataset: an integer column at the width of its declared domain's span (64 bits
    /// without one), a text column at the width of its declared values' count (32 bits
    /// without one). Otherwise the width follows each segment's least and greatest value, and
    /// a question on a wider segment takes longer: one outlying value would show in the
    /// time every question on its column takes. Answers do not change.
    pub fn with_public_widths(mut self, declared: Option<&[super::Declared]>) -> Table {
        use super::Domain;
        let domain = |c: usize| {
            declared
                .and_then(|d| d.iter().find(|d| d.name == self.names[c]))
                .map(|d| d.domain.clone())
                .unwrap_or_default()
        };
        let widths: Vec<u64> = (0..self.names.len())
            .map(|c| match (self.types[c], domain(c)) {
                (ColumnType::Integer, Domain::Range { min, max }) => {
                    use rust_decimal::prelude::ToPrimitive;
                    (max - min).trunc().to_u64().unwrap_or(u64::MAX)
                }
                (ColumnType::Text, Domain::Values(v)) => v.len() as u64,
                (ColumnType::Text, _) => u64::from(u32::MAX),
                _ => u64::MAX,
            })
            .collect();
        for seg in &mut self.segments {
            for (c, col) in seg.columns.iter_mut().enumerate() {
                let data = std::mem::replace(&mut col.data, ColumnData::Boolean(Vec::new()));
                col.data = match data {
                    ColumnData::Integer(ints) => {
                        // Within a declared domain every offset is within its span; the
                        // greater of the two only guards a column read otherwise.
                        let max = widths[c].max(ints.max_off);
                        ColumnData::Integer(Ints {
                            lanes: ints.lanes.map(max, |x| x),
                            ..ints
                        })
                    }
                    ColumnData::Text(codes) => {
                        let top = self.dictionaries[c].len().saturating_sub(1) as u64;
                        ColumnData::Text(codes.map(widths[c].max(top), |x| x))
                    }
                    other => other,
                };
            }
        }
        self
    }

    /// The width in bits of each segment's lanes of column `c` (none for a float or boolean
    /// column): for tests of [`Table::with_public_widths`].
    #[doc(hidden)]
    pub fn lane_bits(&self, c: usize) -> Vec<u32> {
        let bits = |l: &Lanes| 64 - l.max().leading_zeros();
        self.segments
            .iter()
            .filter_map(|seg| match &seg.columns.get(c)?.data {
                ColumnData::Integer(ints) => Some(bits(&ints.lanes)),
                ColumnData::Text(codes) => Some(bits(codes)),
                _ => None,
            })
            .collect()
    }

    /// The number of data rows (the public `n`).
    pub fn n_rows(&self) -> u64 {
        self.n_rows
    }

    /// The number of columns.
    pub fn n_columns(&self) -> usize {
        self.names.len()
    }

    /// The header name of column `i`. Panics when `i >= n_columns()`.
    pub fn column_name(&self, i: usize) -> &str {
        &self.names[i]
    }

    /// The inferred type of column `i`. Panics when `i >= n_columns()`.
    pub fn column_type(&self, i: usize) -> ColumnType {
        self.types[i]
    }

    /// The index of the column called `name`: an exact match first, else the only column
    /// whose name matches ignoring ASCII case; `None` when there is none or several.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        if let Some(i) = self.names.iter().position(|n| n == name) {
            return Some(i);
        }
        let mut found = self
            .names
            .iter()
            .enumerate()
            .filter(|(_, n)| n.eq_ignore_ascii_case(name))
            .map(|(i, _)| i);
        match (found.next(), found.next()) {
            (Some(i), None) => Some(i),
            _ => None,
        }
    }

    /// The column names and types, in order.
    pub fn schema(&self) -> Vec<(String, ColumnType)> {
        self.names
            .iter()
            .cloned()
            .zip(self.types.iter().copied())
            .collect()
    }
}

impl fmt::Debug for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the cells, never the dictionaries: only public schema and n.
        f.debug_struct("Table")
            .field("n_rows", &self.n_rows)
            .field("schema", &self.schema())
            .finish_non_exhaustive()
    }
}

/// One cell read back, for tests inside the crate (the public API never shows cells).
#[cfg(test)]
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cell {
    Integer(i64),
    Float(f64),
    Text(String),
    Boolean(bool),
}

#[cfg(test)]
impl Table {
    /// The cell at `row`, `col`; `None` when missing.
    pub(crate) fn cell(&self, mut row: usize, col: usize) -> Option<Cell> {
        use super::bitmap::get;
        for seg in &self.segments {
            if row >= seg.len {
                row -= seg.len;
                continue;
            }
            let c = &seg.columns[col];
            if c.valid.as_ref().is_some_and(|v| !get(v, row)) {
                return None;
            }
            return Some(match &c.data {
                ColumnData::Integer(v) => Cell::Integer(v.get(row)),
                ColumnData::Float(v) => Cell::Float(v[row]),
                ColumnData::Text(v) => {
                    Cell::Text(self.dictionaries[col].get(v.get(row) as usize).to_string())
                }
                ColumnData::Boolean(v) => Cell::Boolean(get(v, row)),
            });
        }
        panic!("row out of range")
    }

    /// Every cell, row by row.
    pub(crate) fn cells(&self) -> Vec<Vec<Option<Cell>>> {
        (0..self.n_rows as usize)
            .map(|r| (0..self.n_columns()).map(|c| self.cell(r, c)).collect())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dictionary_bounds_follow_byte_order() {
        let words = ["", "Ann", "ann", "bob", "é"];
        let mut bytes = Vec::new();
        let mut ends = Vec::new();
        for w in words {
            bytes.extend_from_slice(w.as_bytes());
            ends.push(bytes.len());
        }
        let d = Dictionary::from_parts(bytes, ends).expect("valid parts");
        assert_eq!(d.len(), 5);
        assert_eq!(d.get(3), "bob");
        assert_eq!(d.find("ann"), Some(2));
        assert_eq!(d.find("an"), None);
        assert_eq!((d.lower_bound("b"), d.upper_bound("b")), (3, 3));
        assert_eq!((d.lower_bound("bob"), d.upper_bound("bob")), (3, 4));
        assert_eq!(d.lower_bound("z"), 4, "é sorts after z in UTF-8 byte order");
        assert_eq!(d.upper_bound(""), 1);
    }

    #[test]
    fn dictionary_parts_are_checked() {
        assert!(Dictionary::from_parts(b"\xff".to_vec(), vec![1]).is_none());
        assert!(Dictionary::from_parts("é".as_bytes().to_vec(), vec![1, 2]).is_none());
        assert!(Dictionary::from_parts(b"ab".to_vec(), vec![2, 1]).is_none());
        assert!(Dictionary::from_parts(b"ab".to_vec(), vec![1]).is_none());
        assert!(Dictionary::from_parts(Vec::new(), Vec::new()).is_some());
    }

    #[test]
    fn column_types_display_in_lower_case() {
        let shown: Vec<String> = [
            ColumnType::Integer,
            ColumnType::Float,
            ColumnType::Text,
            ColumnType::Boolean,
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(shown, ["integer", "float", "text", "boolean"]);
    }
}
