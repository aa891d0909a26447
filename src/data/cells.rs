//! `count_cells`: the true number of rows in every cell of a cube, in one pass over the
//! table, for a histogram.
//!
//! A cube's cells are the product of its dimensions' coordinates, numbered row-major (the
//! last dimension varies fastest). Each dimension buckets one column: a number by the cuts it
//! is at or above (`k` cuts give the half-open intervals `0..=k`), a text or boolean value by
//! the listed value it equals, or "other"; a missing value has the last coordinate. Each row's
//! cell is built dimension by dimension, then counted.
//!
//! The work per row is the same whatever its value: a text code or a number is compared with
//! every listed value and every cut, so that how long a histogram takes never tells which
//! values a column holds, how many, or how often.

use rayon::prelude::*;

use super::bitmap;
use super::lanes::{on_lanes, Lane};
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
    let codes: Vec<Option<Vec<Option<u64>>>> =
        dims.iter().map(|(c, b)| text_codes(table, *c, b)).collect();
    table
        .segments
        .par_iter()
        .map(|seg| {
            if let ([(column, _)], [Some(listed)]) = (dims, codes.as_slice()) {
                if let Some(counts) = text_cells(seg, *column, listed) {
                    return counts;
                }
            }
            cells_by_rows(seg, dims, &codes)
        })
        .reduce(
            || vec![0u64; cells],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                a
            },
        )
}

/// The cells of the cube over segment `seg`, each row's built dimension by dimension;
/// `codes` holds each text dimension's listed codes.
fn cells_by_rows(
    seg: &Segment,
    dims: &[(usize, Buckets)],
    codes: &[Option<Vec<Option<u64>>>],
) -> Vec<u64> {
    /// Rows whose cells are found together.
    const BLOCK: usize = 4096;
    let cells: usize = dims.iter().map(|(_, b)| b.len()).product();
    let mut strides = vec![1usize; dims.len()];
    for d in (0..dims.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * dims[d + 1].1.len();
    }
    // A block of rows at a time: the cells of 8 bytes a row are never held for a whole
    // segment (tens of MB at millions of rows), and stay in the cache between the
    // dimensions' passes.
    let mut counts = vec![0u64; cells];
    let mut index = vec![0usize; BLOCK.min(seg.len)];
    for base in (0..seg.len).step_by(BLOCK) {
        let index = &mut index[..BLOCK.min(seg.len - base)];
        index.fill(0);
        for (d, (column, buckets)) in dims.iter().enumerate() {
            let codes = codes[d].as_deref();
            add_coords(seg, *column, buckets, codes, strides[d], base, index);
        }
        tally(&mut counts, index);
    }
    counts
}

/// The cells of a cube of one text dimension over segment `seg`, when its column is text:
/// per listed code, the present rows holding it; then the other present rows, then the rows
/// without a value. No row's cell is built: each listed code is compared with every row (a
/// block of rows at a time, [`count_codes`]), a listed value the dictionary does not hold
/// (`None`) too with its matches masked out, so the work is the same whatever the values.
fn text_cells(seg: &Segment, column: usize, listed: &[Option<u64>]) -> Option<Vec<u64>> {
    let col = &seg.columns[column];
    let ColumnData::Text(lanes) = &col.data else {
        return None;
    };
    let valid = col.valid.as_deref();
    let mut counts = vec![0u64; listed.len() + 2];
    on_lanes!(lanes, v => count_codes(&v[..seg.len], listed, valid, &mut counts));
    Some(counts)
}

/// [`text_cells`] over the codes of a segment, [`CODE_BLOCK`] rows at a time: each row's
/// validity is spread to a byte (0 or 1) once, and then each listed code is compared with
/// every row of the block, a match (1) masked by the row's validity byte and the listed
/// code's own mask, and added up in 64 byte-wide tallies. The compares, masks
/// and adds are a few vector instructions per 16 one-byte codes, where building each 64
/// rows' match bits and counting them took three times as long.
fn count_codes<T: Lane>(
    codes: &[T],
    listed: &[Option<u64>],
    valid: Option<&[u64]>,
    counts: &mut [u64],
) {
    let n = listed.len();
    // Each listed code as a lane, and 1 if the column holds it (0 masks its matches out).
    let listed: Vec<(T, u8)> = listed
        .iter()
        .map(|code| match code.filter(|&c| c <= T::MAX) {
            Some(c) => (T::from_u64(c), 1),
            None => (T::from_u64(0), 0),
        })
        .collect();
    let mut present = 0u64;
    let mut ones = vec![0u8; CODE_BLOCK.min(codes.len().next_multiple_of(64))];
    for (b, block) in codes.chunks(CODE_BLOCK).enumerate() {
        let first = b * (CODE_BLOCK / 64);
        for (j, bytes) in ones.chunks_exact_mut(64).enumerate() {
            // The validity of 64 rows, with no bit past the segment's end.
            let at = first + j;
            let rows = codes.len().saturating_sub(64 * at).min(64);
            let w = valid.map_or(u64::MAX, |v| v.get(at).copied().unwrap_or(0));
            let w = if rows == 0 {
                0
            } else {
                w & (u64::MAX >> (64 - rows))
            };
            present += u64::from(w.count_ones());
            for (k, eight) in bytes.chunks_exact_mut(8).enumerate() {
                eight.copy_from_slice(&spread_bits((w >> (8 * k)) as u8).to_le_bytes());
            }
        }
        for (count, &(x, mask)) in counts.iter_mut().zip(&listed) {
            *count += matches(block, &ones, x, mask);
        }
    }
    let in_listed: u64 = counts[..n].iter().sum();
    counts[n] = present.saturating_sub(in_listed);
    counts[n + 1] = codes.len() as u64 - present;
}

/// Rows of a segment [`count_codes`] reads at a time: 64 runs of 64 rows, so a tally byte
/// adds at most 64 ones.
const CODE_BLOCK: usize = 64 * 64;

/// The rows of `block` (at most [`CODE_BLOCK`]) holding `x` whose byte in `ones` is 1, when
/// `mask` is 1 (0 when `mask` is 0).
#[inline]
fn matches<T: Lane>(block: &[T], ones: &[u8], x: T, mask: u8) -> u64 {
    let mut tally = [0u8; 64];
    let mut rows = block.chunks_exact(64);
    for (xs, bytes) in (&mut rows).zip(ones.chunks_exact(64)) {
        for ((t, &c), &one) in tally.iter_mut().zip(xs).zip(bytes) {
            *t += u8::from(c == x) & one & mask;
        }
    }
    let tail = rows.remainder();
    let tail_ones = &ones[block.len() - tail.len()..];
    for ((t, &c), &one) in tally.iter_mut().zip(tail).zip(tail_ones) {
        *t += u8::from(c == x) & one & mask;
    }
    tally.iter().map(|&t| u64::from(t)).sum()
}

/// The eight bits of `b` as eight bytes, each 0 or 1: byte `i` of the result is bit `i`.
#[inline]
fn spread_bits(b: u8) -> u64 {
    // Each byte `i` of `b` repeated keeps only its bit `i` (a value of at most 128); adding
    // 127 to each byte carries into its top bit exactly when that bit was set, and never
    // past it.
    let kept = (u64::from(b) * 0x0101_0101_0101_0101) & 0x8040_2010_0804_0201;
    ((kept + 0x7f7f_7f7f_7f7f_7f7f) >> 7) & 0x0101_0101_0101_0101
}

/// Adds one to `counts` at each of `index`. Four rows at a time into four tallies of their
/// own (when the cells are few enough for four copies to stay in cache): a run of rows in
/// one cell then adds to four counters in turn, not to one, each add waiting on the last.
fn tally(counts: &mut [u64], index: &[usize]) {
    let cells = counts.len();
    if cells > 256 {
        index.iter().for_each(|&i| counts[i] += 1);
        return;
    }
    let mut four = vec![0u64; 4 * cells];
    let (a, rest) = four.split_at_mut(cells);
    let (b, rest) = rest.split_at_mut(cells);
    let (c, d) = rest.split_at_mut(cells);
    let mut quads = index.chunks_exact(4);
    for q in &mut quads {
        a[q[0]] += 1;
        b[q[1]] += 1;
        c[q[2]] += 1;
        d[q[3]] += 1;
    }
    quads.remainder().iter().for_each(|&i| a[i] += 1);
    for (k, count) in counts.iter_mut().enumerate() {
        *count += a[k] + b[k] + c[k] + d[k];
    }
}

/// For a text column bucketed by values: each listed value's dictionary code, or `None`
/// for a listed value the column does not hold (no row has it).
fn text_codes(table: &Table, column: usize, buckets: &Buckets) -> Option<Vec<Option<u64>>> {
    let Buckets::Values(values) = buckets else {
        return None;
    };
    let dict = &table.dictionaries[column];
    Some(
        values
            .iter()
            .map(|v| match v {
                Value::Text(t) => dict.find(t).map(|code| code as u64),
                _ => None,
            })
            .collect(),
    )
}

/// Adds `stride` times the coordinate along one dimension of each row from `base` on to
/// `index` (one entry a row).
fn add_coords(
    seg: &Segment,
    column: usize,
    buckets: &Buckets,
    codes: Option<&[Option<u64>]>,
    stride: usize,
    base: usize,
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
    let valid = col.valid.as_deref();
    match (buckets, &col.data) {
        (Buckets::Cuts(_), ColumnData::Integer(ints)) => {
            // The same thresholds on the segment's lanes: `x >= t` exactly when
            // `x - min >= t - min`, clamped to the lanes (0 below, one past the largest).
            let min = i128::from(ints.min);
            let top = i128::from(ints.max_off) + 1;
            // A cut beyond the range of an i64 acts as the range's end (every value is below
            // `2^63`, none below `-2^63`), so `t - min` stays within an i128.
            let (lo, hi) = (i128::from(i64::MIN), i128::from(i64::MAX) + 1);
            let lane_cuts: Vec<i128> = thresholds
                .iter()
                .map(|t| (t.clamp(&lo, &hi) - min).clamp(0, top))
                .collect();
            on_lanes!(&ints.lanes, v => each(index, base, stride, missing, valid, |r| {
                let x = i128::from(v[r].to_u64());
                at_or_above(&lane_cuts, &x)
            }))
        }
        (Buckets::Cuts(cuts), ColumnData::Float(v)) => {
            each(index, base, stride, missing, valid, |r| {
                at_or_above(cuts, &v[r])
            })
        }
        (Buckets::Values(_), ColumnData::Text(lanes)) => {
            let codes = codes.unwrap_or(&[]);
            on_lanes!(lanes, v => text_coords(&v[base..base + index.len()], codes, valid, base, stride, missing, index))
        }
        (Buckets::Values(values), ColumnData::Boolean(bits)) => {
            let bools: Vec<Option<bool>> = values
                .iter()
                .map(|v| match v {
                    Value::Bool(b) => Some(*b),
                    _ => None,
                })
                .collect();
            each(index, base, stride, missing, valid, |r| {
                listed(&bools, &bitmap::get(bits, r))
            })
        }
        (Buckets::Values(values), ColumnData::Integer(ints)) => {
            let numbers = numbers(values);
            each(index, base, stride, missing, valid, |r| {
                listed(&numbers, &(ints.get(r) as f64))
            })
        }
        (Buckets::Values(values), ColumnData::Float(v)) => {
            let numbers = numbers(values);
            each(index, base, stride, missing, valid, |r| {
                listed(&numbers, &v[r])
            })
        }
        // Cuts over a text or boolean column: never planned; every value is "missing".
        (Buckets::Cuts(_), _) => each(index, base, stride, missing, valid, |_| missing),
    }
}

/// The number of `cuts` at or below `x`: every cut is compared and the comparisons added,
/// without a branch on the value (a binary search's branches would run faster on values
/// alike or sorted than on values spread out, and tell which).
#[inline]
fn at_or_above<T: PartialOrd>(cuts: &[T], x: &T) -> usize {
    cuts.iter().map(|t| usize::from(t <= x)).sum()
}

/// The listed numbers (a number column's values; anything else matches nothing).
fn numbers(values: &[Value]) -> Vec<Option<f64>> {
    values
        .iter()
        .map(|v| match v {
            Value::Number(x) => Some(*x),
            _ => None,
        })
        .collect()
}

/// The index of the listed value equal to `x`, or `values.len()` ("other"). The listed
/// values are distinct, so at most one is equal: every one is compared and the index found
/// by arithmetic, so the work does not depend on which one matches, or whether any does.
#[inline]
fn listed<T: PartialEq>(values: &[Option<T>], x: &T) -> usize {
    let n = values.len();
    let mut found = n;
    for (i, v) in values.iter().enumerate() {
        let equal = usize::from(v.as_ref() == Some(x));
        found -= equal * (n - i);
    }
    found
}

/// Adds `stride` times the coordinate of each row of `codes` (a block's text codes, from row
/// `base`) to `index`: the index of the listed code it equals, `codes.len()` ("other") when
/// none, or `missing`. Every listed code is compared with every row, those the dictionary
/// does not hold (`None`) too, with their matches masked out, and the index found by
/// arithmetic (no table over the dictionary, whose size would show in the cache). One listed
/// code at a time over the whole block: the compares run at the lanes' width in vector
/// registers, where a row at a time compared each code in turn.
fn text_coords<T: Lane>(
    codes: &[T],
    listed: &[Option<u64>],
    valid: Option<&[u64]>,
    base: usize,
    stride: usize,
    missing: usize,
    index: &mut [usize],
) {
    let n = listed.len();
    let mut coord = vec![n as u32; codes.len()];
    for (i, code) in listed.iter().enumerate() {
        let held = code.filter(|&c| c <= T::MAX);
        let (code, mask) = (T::from_u64(held.unwrap_or(0)), held.map_or(0, |_| u32::MAX));
        // The listed values are distinct, so at most one matches a row: `n - (n - i)` is `i`.
        let step = (n - i) as u32 & mask;
        for (c, &x) in coord.iter_mut().zip(codes) {
            *c -= step & u32::from(x == code).wrapping_neg();
        }
    }
    // A word of the validity bitmap a 64 rows (`base` is a multiple of 64), each row's
    // coordinate or `missing` chosen by a mask.
    let missing = missing as u32;
    if let Some(valid) = valid {
        for (cs, &word) in coord.chunks_mut(64).zip(&valid[base / 64..]) {
            for (j, c) in cs.iter_mut().enumerate() {
                let keep = (((word >> j) & 1) as u32).wrapping_neg();
                *c = (*c & keep) | (missing & !keep);
            }
        }
    }
    if stride == 1 {
        index
            .iter_mut()
            .zip(&coord)
            .for_each(|(i, &c)| *i += c as usize);
    } else {
        index
            .iter_mut()
            .zip(&coord)
            .for_each(|(i, &c)| *i += c as usize * stride);
    }
}

/// Adds `stride` times each row's coordinate to `index`, whose first entry is row `base`:
/// `coord(r)` for a row with a value, `missing` for one without (a loop of its own for each
/// storage type, `coord` inlined).
#[inline]
fn each(
    index: &mut [usize],
    base: usize,
    stride: usize,
    missing: usize,
    valid: Option<&[u64]>,
    coord: impl Fn(usize) -> usize,
) {
    for (r, i) in (base..).zip(index.iter_mut()) {
        // The coordinate is found for every row, a missing one's too, and chosen by
        // arithmetic: rows with and without values cost the same.
        let present = usize::from(valid.is_none_or(|v| bitmap::get(v, r)));
        *i += (coord(r) * present + missing * (1 - present)) * stride;
    }
}

#[cfg(test)]
mod tests {
    use super::super::lanes::cmp_exact;
    use super::super::load::{parse_table, LoadOptions};
    use super::*;
    use std::cmp::Ordering;

    #[test]
    fn spread_bits_puts_bit_i_in_byte_i() {
        for b in 0..=255u8 {
            let bytes = spread_bits(b).to_le_bytes();
            for (i, &byte) in bytes.iter().enumerate() {
                assert_eq!(byte, (b >> i) & 1, "byte {i} of {b:#010b}");
            }
        }
    }

    /// A one-dimension text cube counted by passes over the codes gives the cells built row
    /// by row: values listed or not, held or not, missing cells, segments of any length.
    #[test]
    fn one_text_dimension_counts_as_rows_placed_one_by_one() {
        let mut next = super::super::rng::xorshift(0x9e37_79b9_7f4a_7c15u64);
        let words = ["a", "b", "c", "d", "", "NA", "zz"];
        for case in 0..60 {
            let rows = [1, 63, 64, 65, 130, 1000, 4097, 9000][case % 8];
            let kinds = 2 + case % 5;
            // A second column, so that a row with an empty cell is not an empty line.
            let mut text = String::from("w,i\n");
            for i in 0..rows {
                let w = words[(next() % kinds as u64) as usize];
                text.push_str(&format!("{w},{i}\n"));
            }
            let table = parse_table(
                text.as_bytes(),
                "t.csv",
                &LoadOptions::default(),
                1 + case % 3,
            )
            .expect("valid");
            let lists: [&[&str]; 4] = [&["a"], &["b", "a"], &["q", "c", "a", "zz"], &[]];
            for list in lists {
                let values = list.iter().map(|v| Value::Text(v.to_string())).collect();
                let dims = [(0, Buckets::Values(values))];
                let codes = vec![text_codes(&table, 0, &dims[0].1)];
                let listed = codes[0].clone().expect("a text column");
                for seg in &table.segments {
                    assert_eq!(
                        text_cells(seg, 0, &listed),
                        Some(cells_by_rows(seg, &dims, &codes)),
                        "{rows} rows, {list:?}"
                    );
                }
                let total: u64 = count_cells(&table, &dims).iter().sum();
                assert_eq!(total, rows as u64);
            }
        }
    }

    /// Integer cuts at and beyond the edges of segments of every width (the extremes of
    /// `i64` included) put each row where an exact comparison puts it.
    #[test]
    fn integer_cuts_are_exact_on_narrow_segments() {
        let mut text = String::from("x\n");
        let mut values = Vec::new();
        for i in 0..4000i64 {
            let v = match i % 4000 / 1000 {
                0 => Some(i % 256 - 100),
                1 => Some(i * 70 - 80_000),
                2 if i % 97 == 0 => Some(if i % 2 == 0 { i64::MAX } else { i64::MIN }),
                2 => Some(i),
                _ => (i % 5 != 0).then_some(i % 3 + (1 << 40)),
            };
            text.push_str(&v.map_or("NA".to_string(), |v| v.to_string()));
            text.push('\n');
            values.push(v);
        }
        let table =
            parse_table(text.as_bytes(), "mem.csv", &LoadOptions::default(), 4).expect("valid CSV");
        assert!(table.segments.len() >= 4);
        let cuts = vec![
            -1e19,
            -(2f64.powi(63)),
            -100.5,
            -100.0,
            0.0,
            155.0,
            155.5,
            2999.0,
            (1u64 << 40) as f64 + 1.0,
            9_223_372_036_854_774_784.0,
            2f64.powi(63),
        ];
        let counts = count_cells(&table, &[(0, Buckets::Cuts(cuts.clone()))]);
        let mut want = vec![0u64; cuts.len() + 2];
        for v in &values {
            let coord = v.map_or(cuts.len() + 1, |x| {
                cuts.iter()
                    .filter(|c| cmp_exact(x, **c) != Some(Ordering::Less))
                    .count()
            });
            want[coord] += 1;
        }
        assert_eq!(counts, want);
    }

    /// Segments longer than a block, a block's edge inside a run of missing values, two
    /// dimensions: every row is counted once, in the cell its values give.
    #[test]
    fn cells_of_long_segments_are_counted_once() {
        let mut text = String::from("age,sex,on\n");
        let mut rows = Vec::new();
        for i in 0..20_011u64 {
            let h = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
            let age = (h % 11 != 0).then_some((h % 97) as i64);
            let sex = ["F", "M", "X", ""][(h % 4) as usize];
            let on = if (4090..4200).contains(&i) {
                ""
            } else {
                ["true", "false"][(h % 2) as usize]
            };
            text.push_str(&format!(
                "{},{sex},{on}\n",
                age.map_or(String::new(), |a| a.to_string())
            ));
            rows.push((age, sex, on));
        }
        let table =
            parse_table(text.as_bytes(), "mem.csv", &LoadOptions::default(), 2).expect("valid CSV");
        assert!(table.segments.iter().any(|s| s.len > 2 * 4096));
        let sexes = vec![Value::Text("F".into()), Value::Text("M".into())];
        let ons = vec![Value::Bool(true)];
        let dims = [
            (0, Buckets::Cuts(vec![18.0, 65.0])),
            (1, Buckets::Values(sexes)),
            (2, Buckets::Values(ons)),
        ];
        let counts = count_cells(&table, &dims);
        let mut want = vec![0u64; 4 * 4 * 3];
        for (age, sex, on) in rows {
            let a = age.map_or(3, |a| usize::from(a >= 18) + usize::from(a >= 65));
            let s = match sex {
                "F" => 0,
                "M" => 1,
                "" => 3,
                _ => 2,
            };
            let o = match on {
                "true" => 0,
                "" => 2,
                _ => 1,
            };
            want[(a * 4 + s) * 3 + o] += 1;
        }
        assert_eq!(counts, want);
    }
}

/// Attacks on the one-text-dimension fast path, on segments built by hand: every lane width,
/// lengths around 64-row words and zero, garbage in missing rows' codes and in a bitmap's
/// bits past the segment's end (and in words past it), listed codes out of the lanes' range.
#[cfg(test)]
mod text_cells_attack {
    use super::super::lanes::Lanes;
    use super::super::table::{ColumnType, Dictionary, SegmentColumn};
    use super::*;

    /// A one-column text segment of `codes` (`None` missing, holding `junk`), its bitmap's
    /// bits past the end (and `extra` words past it) set from `pad`.
    fn segment(codes: &[Option<u64>], width: u32, junk: u64, pad: u64, extra: usize) -> Segment {
        let len = codes.len();
        let raw = codes.iter().map(|c| c.unwrap_or(junk));
        let lanes = match width {
            8 => Lanes::U8(raw.map(|x| x as u8).collect()),
            16 => Lanes::U16(raw.map(|x| x as u16).collect()),
            32 => Lanes::U32(raw.map(|x| x as u32).collect()),
            _ => Lanes::U64(raw.collect()),
        };
        let mut valid = vec![0u64; len.div_ceil(64) + extra];
        for (i, c) in codes.iter().enumerate() {
            valid[i / 64] |= u64::from(c.is_some()) << (i % 64);
        }
        if !len.is_multiple_of(64) {
            valid[len / 64] |= pad & !bitmap::low_mask(len % 64);
        }
        for w in &mut valid[len.div_ceil(64)..] {
            *w = pad;
        }
        let all = codes.iter().all(Option::is_some) && pad == 0;
        Segment {
            len,
            columns: vec![SegmentColumn {
                data: ColumnData::Text(lanes),
                valid: (!all).then_some(valid),
            }],
        }
    }

    /// The cells by brute force: per listed code the present rows holding it, other, missing.
    fn brute(codes: &[Option<u64>], listed: &[Option<u64>]) -> Vec<u64> {
        let mut cells = vec![0u64; listed.len() + 2];
        for c in codes {
            let i = match c {
                None => listed.len() + 1,
                Some(c) => listed
                    .iter()
                    .position(|l| *l == Some(*c))
                    .unwrap_or(listed.len()),
            };
            cells[i] += 1;
        }
        cells
    }

    #[test]
    fn fast_path_counts_as_brute_force_at_every_width_and_edge() {
        let mut next = super::super::rng::xorshift(0x0123_4567_89ab_cdefu64);
        let lens = [
            0, 1, 2, 63, 64, 65, 127, 128, 129, 191, 192, 193, 4095, 4096, 4097,
        ];
        let widths: [(u32, u64); 4] = [(8, 256), (16, 65_536), (32, 1 << 32), (64, u64::MAX)];
        for case in 0..400 {
            let len = lens[case % lens.len()];
            let (width, top) = widths[case / lens.len() % 4];
            // A few codes, at the top of the lanes' range too.
            let pool: Vec<u64> = (0..1 + case % 6)
                .map(|k| {
                    if k % 2 == 0 {
                        next() % 5
                    } else {
                        top - 1 - next() % 3
                    }
                })
                .collect();
            let missing_every = [0u64, 1, 2, 5, 64][case % 5];
            let codes: Vec<Option<u64>> = (0..len)
                .map(|_| {
                    let r = next();
                    let gone = missing_every == 1
                        || (missing_every > 1 && r.is_multiple_of(missing_every));
                    (!gone).then(|| pool[(r >> 8) as usize % pool.len()])
                })
                .collect();
            let junk = pool[case % pool.len()];
            let pad = [0, u64::MAX, next()][case % 3];
            let seg = segment(&codes, width, junk, pad, case % 2);
            let mut distinct: Vec<u64> = pool.clone();
            distinct.sort_unstable();
            distinct.dedup();
            let mut listed: Vec<Option<u64>> = distinct.into_iter().map(Some).collect();
            listed.push(None);
            listed.push(Some(7));
            if top != u64::MAX {
                listed.push(Some(top));
                listed.push(Some(top + 1));
            }
            listed.dedup();
            for n in 0..=listed.len() {
                let listed = &listed[..n];
                let want = brute(&codes, listed);
                let values = (0..n).map(|i| Value::Number(i as f64)).collect();
                let dims = [(0, Buckets::Values(values))];
                let rows = cells_by_rows(&seg, &dims, &[Some(listed.to_vec())]);
                let shown = format!("case {case}: {len} rows, {width} bits, {listed:?}, {pad:#x}");
                assert_eq!(rows, want, "by rows, {shown}");
                assert_eq!(text_cells(&seg, 0, listed), Some(want), "{shown}");
            }
        }
    }

    /// Segments up to past 65,536 rows all holding one listed code at the top of the lanes'
    /// range (every tally byte at its most, 64 a block), all present or with garbage bits
    /// past the end, and a list of thousands of values (most not held): the brute-force cells.
    #[test]
    fn long_segments_of_one_code_count_as_brute_force() {
        let lens = [
            0, 1, 63, 64, 65, 4095, 4096, 4097, 8191, 8192, 65_535, 65_536, 65_537,
        ];
        let widths: [(u32, u64); 4] = [
            (8, 255),
            (16, 65_535),
            (32, u32::MAX as u64),
            (64, u64::MAX),
        ];
        let mut many: Vec<Option<u64>> = (0..2_000).map(|i| Some(i * 7 + 1)).collect();
        many.push(None);
        for (width, top) in widths {
            for &len in &lens {
                for (pad, every) in [(0u64, 0usize), (u64::MAX, 0), (u64::MAX, 4097), (0, 3)] {
                    let codes: Vec<Option<u64>> = (0..len)
                        .map(|i| (every == 0 || i % every != 0).then_some(top))
                        .collect();
                    let seg = segment(&codes, width, top, pad, 1);
                    let mut long = many.clone();
                    long.push(Some(top));
                    let mut lists = vec![vec![Some(top)], vec![None, Some(0), Some(top)]];
                    if len <= 4097 && pad != 0 {
                        lists.push(long);
                    }
                    for listed in lists {
                        let want = brute(&codes, &listed);
                        let shown =
                            format!("{len} rows, {width} bits, pad {pad:#x}, every {every}");
                        assert_eq!(text_cells(&seg, 0, &listed), Some(want), "{shown}");
                    }
                }
            }
        }
    }

    /// Through `count_cells`: a table of segments of different widths and lengths (one of
    /// none), a listed value absent from the dictionary, gives the brute-force cells.
    #[test]
    fn count_cells_of_mixed_segments_count_as_brute_force() {
        let mut next = super::super::rng::xorshift(0xfeed_beef_dead_f00du64);
        let words = ["a", "b", "c", "d"];
        let mut segments = Vec::new();
        let mut all: Vec<Option<u64>> = Vec::new();
        for (k, &len) in [64usize, 0, 130, 1, 4096, 65].iter().enumerate() {
            let codes: Vec<Option<u64>> = (0..len)
                .map(|_| {
                    let r = next();
                    (!r.is_multiple_of(7)).then_some((r >> 8) % 4)
                })
                .collect();
            let width = [8, 16, 32, 64][k % 4];
            segments.push(segment(&codes, width, 3, [0, u64::MAX][k % 2], k % 2));
            all.extend(codes);
        }
        let dictionary = Dictionary::from_parts(words.concat().into_bytes(), vec![1, 2, 3, 4])
            .expect("a dictionary");
        let table = Table {
            names: vec!["w".into()],
            types: vec![ColumnType::Text],
            dictionaries: vec![dictionary],
            n_rows: all.len() as u64,
            segments,
        };
        for list in [&["b"][..], &["zz", "d", "a"], &[], &["d", "c", "b", "a"]] {
            let values = list.iter().map(|v| Value::Text(v.to_string())).collect();
            let dims = [(0, Buckets::Values(values))];
            let listed: Vec<Option<u64>> = list
                .iter()
                .map(|v| words.iter().position(|w| w == v).map(|c| c as u64))
                .collect();
            assert_eq!(count_cells(&table, &dims), brute(&all, &listed), "{list:?}");
        }
    }

    /// A CSV file of more than two segments, cut into one to three chunks (segments ending
    /// at chunk ends too), missing cells (empty, `NA`) at every word and segment edge, more
    /// than 65,536 distinct values (32-bit codes), as loaded and at a served dataset's
    /// public widths: the cells equal a brute-force count.
    #[test]
    fn csv_segments_and_public_widths_count_as_brute_force() {
        use super::super::load::{parse_table, LoadOptions};
        let rows = 2 * 65_536 + 100;
        let edge = |i: usize| matches!(i % 65_536, 0 | 1 | 63 | 64 | 65 | 65_535);
        let mut text = String::from("w,i\n");
        let mut all: Vec<Option<String>> = Vec::with_capacity(rows);
        for i in 0..rows {
            let h = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
            let v = match h % 5 {
                _ if edge(i) || edge(i + 1) => None,
                0 => None,
                1 => Some(format!("k{}", h % 300)),
                _ => Some(format!("u{i}")),
            };
            let shown = v.clone().unwrap_or(["", "NA"][i % 2].to_string());
            text.push_str(&format!("{shown},{i}\n"));
            all.push(v);
        }
        let lists: [&[&str]; 4] = [&["k0", "u3", "k299", "u131171"], &["NA"], &[], &["k7"]];
        for chunks in 1..=3 {
            let table = parse_table(text.as_bytes(), "t.csv", &LoadOptions::default(), chunks)
                .expect("valid");
            let served = parse_table(text.as_bytes(), "t.csv", &LoadOptions::default(), chunks)
                .expect("valid")
                .with_public_widths(None);
            assert!(table.lane_bits(0).contains(&32), "{:?}", table.lane_bits(0));
            for list in lists {
                let mut want = vec![0u64; list.len() + 2];
                for v in &all {
                    want[match v {
                        None => list.len() + 1,
                        Some(v) => list.iter().position(|l| l == v).unwrap_or(list.len()),
                    }] += 1;
                }
                let values = list.iter().map(|v| Value::Text(v.to_string())).collect();
                let dims = [(0, Buckets::Values(values))];
                assert_eq!(
                    count_cells(&table, &dims),
                    want,
                    "{chunks} chunks, {list:?}"
                );
                assert_eq!(
                    count_cells(&served, &dims),
                    want,
                    "served, {chunks}, {list:?}"
                );
            }
        }
    }
}
