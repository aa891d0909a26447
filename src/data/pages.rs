//! A Parquet column's rows counted by dictionary key, read from its pages below Arrow's
//! record reader: for a histogram by one text column, and a count whose condition names one
//! integer column, in a local session.
//!
//! Such a question needs of each row group only how many rows hold each value. A column
//! chunk written with a dictionary (as every common writer writes columns of few distinct
//! values) holds each row's key into its dictionary page, in runs of one repeated key or of
//! bit-packed keys. Counting the keys run by run, and then mapping each of the dictionary's
//! entries to its cell (or asking the condition of it) once, skips Arrow's decoding of a
//! value a row, its placing of the values among the missing rows, and dpq's own conversion
//! of each row.
//!
//! [`key_tally`] answers only what it reads exactly: a page not written with the
//! dictionary (a writer falls back to plain pages when the dictionary grows large), a nested
//! column, a key outside the dictionary, an entry that is not UTF-8, a run cut short or pages
//! whose rows are not the row group's make it answer `None`, and the row group is then read
//! through Arrow as any other question reads it, which reports what is wrong. So this path
//! never fails a question.
//!
//! Its time depends on the runs the writer chose, a fact of the data: `dpq serve` never
//! takes it (see [`super::parquet::ParquetTable::constant_work`]).

use std::fs::File;
use std::sync::Arc;

use ahash::AHashMap;
use parquet::basic::{ConvertedType, Encoding, Type};
use parquet::column::page::Page;
use parquet::file::metadata::RowGroupMetaData;
use parquet::file::serialized_reader::SerializedPageReader;

/// A column chunk's rows counted by their dictionary key.
pub(super) struct Tally {
    /// The chunk's dictionary page: its entries as PLAIN values.
    pub dictionary: Page,
    /// The rows holding each entry's key, one count an entry.
    pub keys: Vec<u64>,
    /// The rows of the row group.
    pub rows: u64,
    /// The rows holding a value.
    pub present: u64,
}

/// The rows of leaf column `column` of row group `group` of `file` by dictionary key, for a
/// column of `physical` type. `None` when the column chunk is not read exactly this way
/// (see the module's comment), or its dictionary page holds more than `entries`, the most
/// Arrow's reader takes at the keys it reads the column with; its entries are left for the
/// caller to read.
pub(super) fn key_tally(
    file: File,
    group: &RowGroupMetaData,
    column: usize,
    physical: Type,
    entries: u64,
) -> Option<Tally> {
    let chunk = group.columns().get(column)?;
    let descr = chunk.column_descr();
    if descr.physical_type() != physical || descr.max_rep_level() != 0 || descr.max_def_level() > 1
    {
        return None;
    }
    let nullable = descr.max_def_level() == 1;
    let rows = u64::try_from(group.num_rows()).ok()?;
    let pages =
        SerializedPageReader::new(Arc::new(file), chunk, usize::try_from(rows).ok()?, None).ok()?;
    let mut dictionary: Option<Page> = None;
    let mut keys: Vec<u64> = Vec::new();
    let (mut seen, mut present) = (0u64, 0u64);
    for page in pages {
        let page = page.ok()?;
        if let Page::DictionaryPage {
            buf,
            num_values,
            encoding,
            ..
        } = &page
        {
            // Each entry takes 4 bytes at least (a length, or an INT32), 8 for INT64.
            let least = if physical == Type::INT64 { 8 } else { 4 };
            let n = usize::try_from(*num_values).ok()?;
            if dictionary.is_some()
                || !matches!(encoding, Encoding::PLAIN | Encoding::PLAIN_DICTIONARY)
                || n > buf.len() / least
                || u64::from(*num_values) > entries
            {
                return None;
            }
            keys = vec![0; n];
            dictionary = Some(page);
            continue;
        }
        let DataPage {
            levels,
            keys: values,
            rows: num_values,
            most,
        } = data_page(&page, nullable)?;
        // A data page before the dictionary page has no entries to name.
        dictionary.as_ref()?;
        let here = match levels {
            Some(levels) => count_levels(levels, u64::from(num_values))?,
            None => u64::from(num_values),
        };
        if here > u64::from(most) {
            return None;
        }
        // Arrow refuses a page of keys with no bit width (or one over 32), and reads its
        // first run, whether or not a row needs a key.
        let (&width, runs) = values.split_first()?;
        count_keys(runs, u32::from(width), here, &mut keys)?;
        seen += u64::from(num_values);
        present += here;
    }
    (seen == rows).then_some(Tally {
        dictionary: dictionary?,
        keys,
        rows,
        present,
    })
}

/// The parts of a data page written with the dictionary.
struct DataPage<'a> {
    /// The definition levels (`None` for a column with no missing value).
    levels: Option<&'a [u8]>,
    /// The keys: a byte of bit width, then the runs.
    keys: &'a [u8],
    /// The page's rows (its levels, or its values when it has none).
    rows: u32,
    /// The most keys Arrow's reader reads of the page (a version 2 page's header says how
    /// many rows miss a value): fewer than the levels' present rows is an error to it.
    most: u32,
}

/// The parts of `page` when it is a data page written with the dictionary; `None` for any
/// other page.
fn data_page(page: &Page, nullable: bool) -> Option<DataPage<'_>> {
    let keyed = |e: &Encoding| matches!(e, Encoding::RLE_DICTIONARY | Encoding::PLAIN_DICTIONARY);
    match page {
        Page::DataPage {
            buf,
            num_values,
            encoding,
            def_level_encoding,
            ..
        } if keyed(encoding) => {
            if !nullable {
                return Some(DataPage {
                    levels: None,
                    keys: buf,
                    rows: *num_values,
                    most: *num_values,
                });
            }
            // Version 1: the levels' length in 4 bytes, the levels, then the keys.
            let len = u32::from_le_bytes(buf.get(..4)?.try_into().ok()?);
            let end = usize::try_from(len).ok()?.checked_add(4)?;
            if *def_level_encoding != Encoding::RLE || end > buf.len() {
                return None;
            }
            Some(DataPage {
                levels: Some(&buf[4..end]),
                keys: &buf[end..],
                rows: *num_values,
                most: *num_values,
            })
        }
        Page::DataPageV2 {
            buf,
            num_values,
            encoding,
            num_nulls,
            def_levels_byte_len,
            rep_levels_byte_len,
            ..
        } if keyed(encoding) => {
            // Version 2: the levels' length is in the page's header.
            let most = num_values.checked_sub(*num_nulls)?;
            let def = usize::try_from(*def_levels_byte_len).ok()?;
            if *rep_levels_byte_len != 0 || def > buf.len() || (!nullable && def != 0) {
                return None;
            }
            Some(DataPage {
                levels: nullable.then(|| &buf[..def]),
                keys: &buf[def..],
                rows: *num_values,
                most,
            })
        }
        _ => None,
    }
}

/// The rows of leaf column `column` of row group `group` of `file` in each cell of a cube
/// by that one text column listing `listed` (`None` for a listed value that is not text,
/// which no row equals): one count per listed value, then the rows holding another value,
/// then the rows missing one, as `cells::count_cells` counts them. `None` when the column
/// chunk is not read exactly this way (see [`key_tally`]) or is not annotated UTF8.
pub(super) fn key_cells(
    file: File,
    group: &RowGroupMetaData,
    column: usize,
    entries: u64,
    listed: &[Option<&str>],
) -> Option<Vec<u64>> {
    // Arrow's dictionary decoder hands over a column's entries as strings only when it is
    // annotated UTF8; any other (JSON, which Arrow types as text) as bytes, which the general
    // path writes otherwise (as hex).
    let descr = group.columns().get(column)?.column_descr();
    if descr.converted_type() != ConvertedType::UTF8 {
        return None;
    }
    let tally = key_tally(file, group, column, Type::BYTE_ARRAY, entries)?;
    let n = u32::try_from(tally.keys.len()).ok()?;
    let cells = entry_cells(tally.dictionary.buffer(), n, listed)?;
    let mut counts = vec![0u64; listed.len() + 2];
    for (&cell, &n) in cells.iter().zip(&tally.keys) {
        counts[cell] += n;
    }
    counts[listed.len() + 1] = tally.rows - tally.present;
    Some(counts)
}

/// The `n` entries of an integer column's dictionary page, PLAIN INT32 or INT64 values
/// (`physical`); `None` when the page holds fewer.
pub(super) fn int_entries(buf: &[u8], n: usize, physical: Type) -> Option<Vec<i64>> {
    match physical {
        Type::INT32 => Some(
            buf.get(..n.checked_mul(4)?)?
                .chunks_exact(4)
                .map(|b| i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])))
                .collect(),
        ),
        Type::INT64 => Some(
            buf.get(..n.checked_mul(8)?)?
                .chunks_exact(8)
                .map(|b| i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
                .collect(),
        ),
        _ => None,
    }
}

/// The cell of each of a dictionary page's `n` entries (PLAIN byte arrays: a 4-byte length
/// and the bytes): the index of the listed value it equals, else `listed.len()`. `None` when
/// the page holds fewer entries or one is not UTF-8.
fn entry_cells(buf: &[u8], n: u32, listed: &[Option<&str>]) -> Option<Vec<usize>> {
    let by_value: AHashMap<&str, usize> = listed
        .iter()
        .enumerate()
        .rev()
        .filter_map(|(i, v)| v.map(|v| (v, i)))
        .collect();
    let mut rest = buf;
    let mut cells = Vec::with_capacity(usize::try_from(n).ok()?.min(buf.len() / 4));
    for _ in 0..n {
        let len = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?);
        let end = usize::try_from(len).ok()?.checked_add(4)?;
        let entry = std::str::from_utf8(rest.get(4..end)?).ok()?;
        cells.push(by_value.get(entry).copied().unwrap_or(listed.len()));
        rest = &rest[end..];
    }
    Some(cells)
}

/// One run of Parquet's hybrid of run-length encoding and bit-packing.
enum Run<'a> {
    /// `count` values, each `value`.
    Repeat { value: u64, count: u64 },
    /// `count` values (a multiple of 8) packed at the run's width, least significant bit
    /// first: at most the run's bytes, fewer when the page ends first.
    Packed { bytes: &'a [u8], count: u64 },
}

/// The runs of a page's levels or keys encoded at bit width `width`.
struct Runs<'a> {
    buf: &'a [u8],
    width: u32,
}

impl<'a> Runs<'a> {
    /// The next run, or `None` at the end of the bytes or at a header that does not read,
    /// as Arrow's reader reads it: a run of more than `i32::MAX` values is refused.
    fn next_run(&mut self) -> Option<Run<'a>> {
        let header = uleb128(&mut self.buf)?;
        let count = header >> 1;
        let values = if header & 1 == 0 {
            Some(count)
        } else {
            count.checked_mul(8)
        };
        if values? > MAX_RUN {
            return None;
        }
        if header & 1 == 0 {
            let n = usize::try_from(self.width.div_ceil(8)).ok()?;
            let bytes = self.buf.get(..n)?;
            let value = bytes
                .iter()
                .rev()
                .fold(0u64, |v, &b| (v << 8) | u64::from(b));
            self.buf = &self.buf[n..];
            Some(Run::Repeat { value, count })
        } else {
            let n = usize::try_from(count.checked_mul(u64::from(self.width))?).ok()?;
            let (bytes, rest) = self.buf.split_at(n.min(self.buf.len()));
            self.buf = rest;
            Some(Run::Packed {
                bytes,
                count: count.checked_mul(8)?,
            })
        }
    }
}

/// The most values of one run Arrow's reader reads (more is a corrupt header to it).
const MAX_RUN: u64 = i32::MAX as u64;

/// An unsigned LEB128 number of at most 63 bits, read off the front of `buf`.
fn uleb128(buf: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for (i, &b) in buf.iter().enumerate().take(9) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            *buf = &buf[i + 1..];
            return Some(value);
        }
    }
    None
}

/// How many of the first `n` definition levels of a column of one optional level (bit width
/// 1) are 1, a present row; `None` when the runs end first or a repeated level is not 0 or 1.
fn count_levels(buf: &[u8], n: u64) -> Option<u64> {
    let mut runs = Runs { buf, width: 1 };
    let (mut left, mut ones) = (n, 0u64);
    while left > 0 {
        match runs.next_run()? {
            Run::Repeat { value, count } => {
                let take = count.min(left);
                if take > 0 && value > 1 {
                    return None;
                }
                ones += value * take;
                left -= take;
            }
            Run::Packed { bytes, count } => {
                let take = count.min(left);
                let whole = usize::try_from(take / 8).ok()?;
                let part = (take % 8) as u32;
                let used = bytes.get(..whole + usize::from(part > 0))?;
                ones += used[..whole]
                    .iter()
                    .map(|b| u64::from(b.count_ones()))
                    .sum::<u64>();
                if part > 0 {
                    ones += u64::from((used[whole] & ((1u8 << part) - 1)).count_ones());
                }
                left -= take;
            }
        }
    }
    Some(ones)
}

/// Adds each of the first `n` keys encoded at bit width `width` in `buf` to its tally in
/// `keys`; `None` when the runs end first, the width is over 32 or a key is past `keys`, and
/// on whatever Arrow's reader refuses in the runs it reads: the first run is read even when
/// `n` is 0, a run header of 0 ends the keys, a repeated key must fit in `width` bits.
fn count_keys(buf: &[u8], width: u32, n: u64, keys: &mut [u64]) -> Option<()> {
    if width > 32 {
        return None;
    }
    let mut runs = Runs { buf, width };
    // Whole bytes of keys of 1, 2, 4 or 8 bits are tallied by the byte, in four tables that
    // take bytes in turn, and split into their keys at the end.
    let mut by_byte = [[0u64; 256]; 4];
    let mut left = n;
    let mut first = !buf.is_empty();
    while left > 0 || first {
        first = false;
        let mut header = runs.buf;
        if uleb128(&mut header) == Some(0) {
            return (left == 0).then_some(());
        }
        match runs.next_run()? {
            Run::Repeat { value, count } => {
                if value >> width != 0 {
                    return None;
                }
                let take = count.min(left);
                if take > 0 {
                    *keys.get_mut(usize::try_from(value).ok()?)? += take;
                }
                left -= take;
            }
            Run::Packed { bytes, count } => {
                let take = count.min(left);
                if width == 0 {
                    // Every 0-bit key is 0: counted at once, not one by one.
                    if take > 0 {
                        *keys.get_mut(0)? += take;
                    }
                    left -= take;
                    continue;
                }
                let bits = take.checked_mul(u64::from(width))?;
                let bytes = bytes.get(..usize::try_from(bits.div_ceil(8)).ok()?)?;
                let mut from = 0u64;
                if matches!(width, 1 | 2 | 4 | 8) {
                    let whole = &bytes[..usize::try_from(bits / 8).ok()?];
                    let mut fours = whole.chunks_exact(4);
                    for q in &mut fours {
                        by_byte[0][usize::from(q[0])] += 1;
                        by_byte[1][usize::from(q[1])] += 1;
                        by_byte[2][usize::from(q[2])] += 1;
                        by_byte[3][usize::from(q[3])] += 1;
                    }
                    for &b in fours.remainder() {
                        by_byte[0][usize::from(b)] += 1;
                    }
                    from = whole.len() as u64 * 8 / u64::from(width);
                } else if width <= 16 {
                    from = count_groups(bytes, width, take / 8, keys)?;
                }
                for i in from..take {
                    *keys.get_mut(unpack(bytes, i * u64::from(width), width))? += 1;
                }
                left -= take;
            }
        }
    }
    if matches!(width, 1 | 2 | 4 | 8) {
        let mask = (1usize << width) - 1;
        for b in 0..256usize {
            let times: u64 = by_byte.iter().map(|t| t[b]).sum();
            if times == 0 {
                continue;
            }
            for j in (0..8).step_by(width as usize) {
                *keys.get_mut((b >> j) & mask)? += times;
            }
        }
    }
    Some(())
}

/// Adds the keys of the first `groups` groups of 8 bit-packed keys of `width` bits (at most
/// 16: a group's `width` bytes are read as one 128-bit word) to `keys`; the keys counted, or
/// `None` for a key past `keys`.
fn count_groups(bytes: &[u8], width: u32, groups: u64, keys: &mut [u64]) -> Option<u64> {
    let w = width as usize;
    let mask = (1u128 << width) - 1;
    for g in 0..usize::try_from(groups).ok()? {
        let start = g * w;
        let word = match bytes.get(start..start + 16) {
            Some(sixteen) => u128::from_le_bytes(sixteen.try_into().ok()?),
            None => {
                let mut last = [0u8; 16];
                last[..w].copy_from_slice(bytes.get(start..start + w)?);
                u128::from_le_bytes(last)
            }
        };
        for i in 0..8 {
            *keys.get_mut(((word >> (i * width)) & mask) as usize)? += 1;
        }
    }
    groups.checked_mul(8)
}

/// The `width`-bit value at bit `at` of `bytes` (least significant bit first), with bytes
/// past the end read as 0.
fn unpack(bytes: &[u8], at: u64, width: u32) -> usize {
    let first = (at / 8) as usize;
    let word = match bytes.get(first..first + 8) {
        Some(eight) => u64::from_le_bytes(eight.try_into().unwrap_or([0; 8])),
        None => {
            let mut word = [0u8; 8];
            let have = bytes.get(first..).unwrap_or(&[]);
            word[..have.len()].copy_from_slice(have);
            u64::from_le_bytes(word)
        }
    };
    let mask = (1u64 << width) - 1;
    ((word >> (at % 8)) & mask) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `values` at bit width `width` in Parquet's hybrid encoding: a run of one value where
    /// `runs` says so and it repeats, else groups of 8 bit-packed (the last padded with
    /// `pad`), as writers choose.
    fn encode(values: &[u64], width: u32, runs: &[bool], pad: u64) -> Vec<u8> {
        let mut out = Vec::new();
        let leb = |out: &mut Vec<u8>, mut v: u64| loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                break;
            }
            out.push(b | 0x80);
        };
        let mut i = 0;
        let mut choice = runs.iter().cycle();
        while i < values.len() {
            let same = values[i..].iter().take_while(|&&v| v == values[i]).count();
            if *choice.next().unwrap_or(&false) && same > 1 {
                leb(&mut out, (same as u64) << 1);
                let bytes = values[i].to_le_bytes();
                out.extend_from_slice(&bytes[..width.div_ceil(8) as usize]);
                i += same;
                continue;
            }
            let groups = (values.len() - i).min(16).div_ceil(8);
            leb(&mut out, ((groups as u64) << 1) | 1);
            let group: Vec<u64> = (0..groups * 8)
                .map(|j| values.get(i + j).copied().unwrap_or(pad))
                .collect();
            out.extend_from_slice(&pack(&group, width));
            i += (groups * 8).min(values.len() - i);
        }
        out
    }

    /// `values` (a multiple of 8 of them) bit-packed at `width`, least significant bit first.
    fn pack(values: &[u64], width: u32) -> Vec<u8> {
        let mut bits = vec![0u8; values.len() * width as usize / 8];
        for (j, &v) in values.iter().enumerate() {
            for b in 0..width as usize {
                if v >> b & 1 == 1 {
                    let at = j * width as usize + b;
                    bits[at / 8] |= 1 << (at % 8);
                }
            }
        }
        bits
    }

    fn tallies(values: &[u64], entries: usize) -> Vec<u64> {
        let mut t = vec![0u64; entries];
        values.iter().for_each(|&v| t[v as usize] += 1);
        t
    }

    fn keys_at(width: u32) -> impl Strategy<Value = (u32, Vec<u64>, Vec<bool>, u64)> {
        let top = if width == 0 { 1 } else { 1u64 << width.min(12) };
        (
            Just(width),
            proptest::collection::vec(prop_oneof![0..top, Just(0u64), Just(top - 1)], 0..300),
            proptest::collection::vec(any::<bool>(), 1..6),
            0..top,
        )
    }

    proptest! {
        #[test]
        fn keys_are_counted_as_written_at_every_width(
            (width, values, runs, pad) in (0u32..=32).prop_flat_map(keys_at),
        ) {
            let entries = values.iter().max().map_or(1, |m| *m as usize + 1);
            let buf = encode(&values, width, &runs, pad);
            let mut keys = vec![0u64; entries];
            prop_assert_eq!(count_keys(&buf, width, values.len() as u64, &mut keys), Some(()));
            prop_assert_eq!(&keys, &tallies(&values, entries));
            // Cut short anywhere, the page counts exactly or not at all.
            for cut in 0..buf.len() {
                let mut keys = vec![0u64; entries];
                if count_keys(&buf[..cut], width, values.len() as u64, &mut keys).is_some() {
                    prop_assert_eq!(&keys, &tallies(&values, entries));
                }
            }
            // A dictionary one entry short of the greatest key is not counted.
            if let Some(&top) = values.iter().max() {
                let mut keys = vec![0u64; top as usize];
                prop_assert_eq!(count_keys(&buf, width, values.len() as u64, &mut keys), None);
            }
        }

        #[test]
        fn levels_count_the_present_rows(
            levels in proptest::collection::vec(0u64..2, 0..400),
            runs in proptest::collection::vec(any::<bool>(), 1..6),
            pad in 0u64..2,
        ) {
            let buf = encode(&levels, 1, &runs, pad);
            let ones = levels.iter().sum::<u64>();
            prop_assert_eq!(count_levels(&buf, levels.len() as u64), Some(ones));
            for cut in 0..buf.len() {
                if let Some(n) = count_levels(&buf[..cut], levels.len() as u64) {
                    prop_assert_eq!(n, ones);
                }
            }
        }

        #[test]
        fn bytes_of_any_kind_never_panic(
            buf in proptest::collection::vec(any::<u8>(), 0..200),
            width in 0u32..40,
            n in 0u64..5_000,
            entries in 0usize..300,
        ) {
            let mut keys = vec![0u64; entries];
            let counted = count_keys(&buf, width, n, &mut keys);
            if counted.is_some() {
                prop_assert_eq!(keys.iter().sum::<u64>(), n);
            }
            if let Some(ones) = count_levels(&buf, n) {
                prop_assert!(ones <= n);
            }
            let _ = entry_cells(&buf, n as u32, &[Some("a"), None, Some("")]);
        }
    }

    proptest! {
        #[test]
        fn unpacking_reads_each_value_at_every_width(
            width in 0u32..=32,
            raw in proptest::collection::vec(any::<u64>(), 1..40),
        ) {
            let mask = if width == 0 { 0 } else { u64::MAX >> (64 - width) };
            let values: Vec<u64> = raw.iter().map(|v| v & mask).collect();
            let groups = values.len().div_ceil(8);
            let padded: Vec<u64> = (0..groups * 8).map(|i| values.get(i).copied().unwrap_or(0)).collect();
            let bytes = pack(&padded, width);
            for (i, &v) in values.iter().enumerate() {
                prop_assert_eq!(unpack(&bytes, i as u64 * u64::from(width), width) as u64, v);
            }
        }
    }

    #[test]
    fn a_repeated_level_other_than_0_or_1_is_not_counted() {
        // A run of 5 levels of 2, then of 3 levels of 1.
        assert_eq!(count_levels(&[10, 2, 6, 1], 8), None);
        assert_eq!(count_levels(&[10, 1, 6, 0], 8), Some(5));
        // A run no row reaches may hold anything.
        assert_eq!(count_levels(&[10, 1, 6, 9], 5), Some(5));
    }

    /// The checks Arrow's reader makes of the runs it reads, which the key path makes too, so
    /// that it never counts a page the general path refuses.
    #[test]
    fn runs_arrow_refuses_are_not_counted() {
        let leb = |v: u64| {
            let mut out = Vec::new();
            let mut v = v;
            loop {
                let b = (v & 0x7f) as u8;
                v >>= 7;
                if v == 0 {
                    out.push(b);
                    return out;
                }
                out.push(b | 0x80);
            }
        };
        let mut keys = vec![0u64; 3];
        // A repeated key of 2 at width 1.
        assert_eq!(count_keys(&[20, 2], 1, 10, &mut keys), None);
        // A run header of 0 before the keys ends them (a non-minimal 0 too).
        assert_eq!(count_keys(&[0, 20, 1], 2, 10, &mut keys), None);
        assert_eq!(count_keys(&[0x80, 0, 20, 1], 2, 10, &mut keys), None);
        // After them it is never read.
        let mut k = vec![0u64; 3];
        assert_eq!(count_keys(&[20, 1, 0], 2, 10, &mut k), Some(()));
        assert_eq!(k, [0, 10, 0]);
        // Runs of more than i32::MAX values, repeated or bit-packed, keys or levels.
        let mut long = leb((1u64 << 31) << 1);
        long.push(1);
        assert_eq!(count_keys(&long, 2, 10, &mut keys), None);
        assert_eq!(count_levels(&long, 10), None);
        let mut packed = leb(((1u64 << 28) << 1) | 1);
        packed.extend_from_slice(&[0; 8]);
        assert_eq!(count_keys(&packed, 1, 10, &mut keys), None);
        assert_eq!(count_levels(&packed, 10), None);
        // The first run is read though no key is needed; no run at all is none refused.
        assert_eq!(count_keys(&[20, 2], 1, 0, &mut keys), None);
        assert_eq!(count_keys(&[], 1, 0, &mut keys), Some(()));
        assert_eq!(keys, [0, 0, 0]);
        // 0-bit keys of the longest packed runs are counted at once.
        let mut zero = leb((((1u64 << 28) - 1) << 1) | 1);
        zero.extend(zero.clone());
        let n = 2 * ((1u64 << 31) - 8);
        let mut one = vec![0u64; 1];
        let start = std::time::Instant::now();
        assert_eq!(count_keys(&zero, 0, n, &mut one), Some(()));
        assert_eq!(one, [n]);
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn dictionary_entries_map_to_their_listed_cell() {
        let mut page = Vec::new();
        for entry in ["b", "", "a", "zz", "a"] {
            page.extend_from_slice(&(entry.len() as u32).to_le_bytes());
            page.extend_from_slice(entry.as_bytes());
        }
        let listed = [Some("a"), None, Some(""), Some("c")];
        assert_eq!(entry_cells(&page, 5, &listed), Some(vec![4, 2, 0, 4, 0]));
        assert_eq!(entry_cells(&page, 4, &listed), Some(vec![4, 2, 0, 4]));
        assert_eq!(entry_cells(&page, 6, &listed), None);
        assert_eq!(entry_cells(&page[..page.len() - 1], 5, &listed), None);
        let mut bad = page.clone();
        bad[4] = 0xff;
        assert_eq!(entry_cells(&bad, 5, &listed), None);
        assert_eq!(entry_cells(&[], 0, &listed), Some(vec![]));
        let huge = [0xff, 0xff, 0xff, 0xff, b'a'];
        assert_eq!(entry_cells(&huge, 1, &listed), None);
    }
}
