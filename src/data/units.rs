//! Privacy units: at most `k` rows of each unit (a person, a household: the rows sharing a
//! value of the unit column) are kept, so that one unit moves any count by at most `k`.
//!
//! Which rows of a unit are kept depends on that unit's own rows only: its rows are ordered by
//! a hash of their content (every cell, typed), ties (identical rows) by file order, and the
//! first `k` are kept. Another unit's rows, or the order of the file, never change the choice,
//! so the bounded table of two neighbouring inputs (one unit added or removed) differs by that
//! unit's kept rows alone. The number of rows dropped is data: nothing here reports it.

use super::bitmap::{get, BitBuilder};
use super::table::{ColumnData, Segment, SegmentColumn, Table};
use std::collections::HashMap;

/// The unit of a row: its value in the unit column, compared exactly. Every row without a
/// value belongs to one unit, bounded like the others.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Missing,
    Integer(i64),
    /// The bits of a float (`-0.0` is `0.0`; every NaN is one value).
    Float(u64),
    /// A text value by its dictionary code.
    Text(u32),
    Boolean(bool),
}

/// The table with at most `max_rows` rows of each value of column `unit` (`max_rows` >= 1).
/// The public facts of the table (names, types) are unchanged; its rows are a subset.
pub fn bound_units(table: &Table, unit: usize, max_rows: u32) -> Table {
    let n = usize::try_from(table.n_rows).unwrap_or(usize::MAX);
    let mut keys = Vec::with_capacity(n);
    let mut hashes = Vec::with_capacity(n);
    for seg in &table.segments {
        for i in 0..seg.len {
            keys.push(key(&seg.columns[unit], i));
            hashes.push(row_hash(table, seg, i));
        }
    }
    let mut units: HashMap<Key, Vec<usize>> = HashMap::new();
    for (row, k) in keys.iter().enumerate() {
        units.entry(*k).or_default().push(row);
    }
    let mut keep = vec![false; keys.len()];
    let max = usize::try_from(max_rows).unwrap_or(usize::MAX);
    for rows in units.values_mut() {
        if rows.len() > max {
            rows.sort_by_key(|&r| (hashes[r], r));
            rows.truncate(max);
        }
        for &r in rows.iter() {
            keep[r] = true;
        }
    }
    select(table, &keep)
}

fn valid(col: &SegmentColumn, i: usize) -> bool {
    col.valid.as_ref().is_none_or(|v| get(v, i))
}

fn key(col: &SegmentColumn, i: usize) -> Key {
    if !valid(col, i) {
        return Key::Missing;
    }
    match &col.data {
        ColumnData::Integer(v) => Key::Integer(v.get(i)),
        ColumnData::Float(v) => {
            let x = v[i];
            Key::Float(if x == 0.0 {
                0
            } else if x.is_nan() {
                f64::NAN.to_bits()
            } else {
                x.to_bits()
            })
        }
        ColumnData::Text(v) => Key::Text(v.get(i) as u32),
        ColumnData::Boolean(v) => Key::Boolean(get(v, i)),
    }
}

/// A hash of row `i` of `seg`: every cell with its type and, for text, its value.
fn row_hash(table: &Table, seg: &Segment, i: usize) -> [u8; 32] {
    let mut h = blake3::Hasher::new_derive_key("dpq privacy unit: the order of a unit's rows");
    for (c, col) in seg.columns.iter().enumerate() {
        if !valid(col, i) {
            h.update(&[0]);
            continue;
        }
        match &col.data {
            ColumnData::Integer(v) => h.update(&[1]).update(&v.get(i).to_le_bytes()),
            ColumnData::Float(v) => h.update(&[2]).update(&v[i].to_bits().to_le_bytes()),
            ColumnData::Text(v) => {
                let s = table.dictionaries[c].get(v.get(i) as usize);
                h.update(&[3])
                    .update(&(s.len() as u64).to_le_bytes())
                    .update(s.as_bytes())
            }
            ColumnData::Boolean(v) => h.update(&[4, u8::from(get(v, i))]),
        };
    }
    *h.finalize().as_bytes()
}

/// The rows of `table` marked in `keep` (one flag per row, in order), in one segment per
/// segment of `table`.
fn select(table: &Table, keep: &[bool]) -> Table {
    let mut start = 0;
    let mut segments = Vec::with_capacity(table.segments.len());
    for seg in &table.segments {
        let rows: Vec<usize> = (0..seg.len).filter(|&i| keep[start + i]).collect();
        start += seg.len;
        let columns = seg
            .columns
            .iter()
            .map(|col| {
                let valid = col.valid.as_ref().map(|v| {
                    let mut b = BitBuilder::with_capacity(rows.len());
                    for &i in &rows {
                        b.push(get(v, i));
                    }
                    b.finish()
                });
                let data = match &col.data {
                    ColumnData::Integer(v) => ColumnData::Integer(v.select(&rows)),
                    ColumnData::Float(v) => ColumnData::Float(rows.iter().map(|&i| v[i]).collect()),
                    ColumnData::Text(v) => ColumnData::Text(v.select(&rows)),
                    ColumnData::Boolean(v) => {
                        let mut b = BitBuilder::with_capacity(rows.len());
                        for &i in &rows {
                            b.push(get(v, i));
                        }
                        ColumnData::Boolean(b.finish())
                    }
                };
                SegmentColumn { data, valid }
            })
            .collect();
        segments.push(Segment {
            len: rows.len(),
            columns,
        });
    }
    Table {
        names: table.names.clone(),
        types: table.types.clone(),
        dictionaries: table.dictionaries.clone(),
        segments,
        n_rows: keep.iter().filter(|k| **k).count() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::table::Cell;
    use crate::data::{load_csv_bytes, LoadOptions};

    fn table(text: &str) -> Table {
        load_csv_bytes(text.as_bytes(), &LoadOptions::default())
            .expect("a table")
            .table
    }

    /// Rows of the bounded table, as a sorted list of their cells.
    fn rows(t: &Table) -> Vec<String> {
        let mut out: Vec<String> = t.cells().iter().map(|r| format!("{r:?}")).collect();
        out.sort();
        out
    }

    #[test]
    fn each_unit_keeps_at_most_k_rows() {
        let mut text = String::from("pid,v\n");
        for i in 0..1000 {
            text.push_str(&format!("7,{i}\n"));
        }
        for p in 0..20 {
            text.push_str(&format!("{p},1\n{p},2\n"));
        }
        text.push_str(",5\n,6\n,7\n");
        let t = bound_units(&table(&text), 0, 3);
        let count = |p: Option<Cell>| t.cells().iter().filter(|r| r[0] == p).count();
        assert_eq!(
            count(Some(Cell::Integer(7))),
            3,
            "the unit of 1,000 rows keeps 3"
        );
        assert_eq!(
            count(Some(Cell::Integer(3))),
            2,
            "a unit of 2 rows keeps both"
        );
        assert_eq!(count(None), 3, "the rows without a unit are one unit");
        assert_eq!(t.n_rows(), 3 + 19 * 2 + 3);
    }

    /// The rows a unit keeps do not depend on other units' rows, nor on the file's order.
    #[test]
    fn the_rows_kept_depend_on_the_unit_alone() {
        let mine: Vec<String> = (0..50).map(|i| format!("ann,{i}")).collect();
        let theirs: Vec<String> = (0..30).map(|i| format!("bob,{i}")).collect();
        let alone = bound_units(&table(&format!("who,v\n{}\n", mine.join("\n"))), 0, 4);
        let mut shuffled: Vec<String> = mine.iter().chain(&theirs).cloned().collect();
        shuffled.reverse();
        shuffled.swap(3, 40);
        let mixed = bound_units(&table(&format!("who,v\n{}\n", shuffled.join("\n"))), 0, 4);
        let ann = |t: &Table| -> Vec<String> {
            rows(t)
                .into_iter()
                .filter(|r| r.contains("\"ann\""))
                .collect()
        };
        assert_eq!(ann(&alone), ann(&mixed));
        assert_eq!(ann(&alone).len(), 4);
    }

    #[test]
    fn types_and_missing_cells_survive_the_selection() {
        let t = table("id,x,b,s\n1,1.5,true,a\n1,,false,\n2,2.5,,c\n1,3.5,true,d\n");
        let b = bound_units(&t, 0, 2);
        assert_eq!(b.schema(), t.schema());
        assert_eq!(b.n_rows(), 3);
        let all = rows(&t);
        for r in rows(&b) {
            assert!(all.contains(&r), "{r} is a row of the file");
        }
    }
}
