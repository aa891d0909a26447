//! Narrow storage for one segment's integers and text codes: unsigned lanes of 8, 16, 32 or 64 bits, the narrowest that holds them.
//!
//! An integer column keeps, per segment, its least value and each cell as its offset from it
//! ([`Ints`]); a text column keeps its dictionary codes as they are. Either way the lanes are
//! as wide as the largest offset (or code) needs: a column of ages takes one byte a row, and
//! only a segment whose values span more than 2^32 takes eight. While a file is parsed,
//! [`IntBuilder`] and [`CodeBuilder`] store each cell at the width the values so far need,
//! widening when one does not fit, so the parse never holds a full 64-bit copy of a column
//! either. No `Debug` outside tests: these are cells.

/// The unsigned types a lane can be; their values are read and written through `u64`.
pub(crate) trait Lane: Copy + Ord + Send + Sync + 'static {
    /// The largest value of the type.
    const MAX: u64;
    /// `x` as a lane; `x` must be at most `MAX`.
    fn from_u64(x: u64) -> Self;
    /// The lane's value.
    fn to_u64(self) -> u64;
    /// `self - other`, wrapping at the type's width.
    fn wrapping_sub(self, other: Self) -> Self;
}

macro_rules! lane {
    ($($t:ty),*) => {$(
        impl Lane for $t {
            const MAX: u64 = <$t>::MAX as u64;
            #[inline]
            fn from_u64(x: u64) -> Self {
                x as $t
            }
            #[inline]
            fn to_u64(self) -> u64 {
                self as u64
            }
            #[inline]
            fn wrapping_sub(self, other: Self) -> Self {
                <$t>::wrapping_sub(self, other)
            }
        }
    )*};
}
lane!(u8, u16, u32, u64);

/// Values of one segment, one unsigned lane each, at one width.
#[derive(Clone, PartialEq, Eq)]
#[cfg_attr(test, derive(Debug))]
pub(crate) enum Lanes {
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
}

/// Runs `$body` with `$v` bound to the vector inside `$lanes`, whatever its width.
macro_rules! on_lanes {
    ($lanes:expr, $v:ident => $body:expr) => {
        match $lanes {
            $crate::data::lanes::Lanes::U8($v) => $body,
            $crate::data::lanes::Lanes::U16($v) => $body,
            $crate::data::lanes::Lanes::U32($v) => $body,
            $crate::data::lanes::Lanes::U64($v) => $body,
        }
    };
}
pub(crate) use on_lanes;

/// The width that holds every value up to `max`.
#[derive(Clone, Copy)]
enum Width {
    W8,
    W16,
    W32,
    W64,
}

impl Width {
    fn of(max: u64) -> Width {
        if max <= u8::MAX.into() {
            Width::W8
        } else if max <= u16::MAX.into() {
            Width::W16
        } else if max <= u32::MAX.into() {
            Width::W32
        } else {
            Width::W64
        }
    }
}

/// `table[key]` for each of `keys` (0 outside the table, and where `valid` is clear): a loop
/// of its own at each width, with no wider copy.
#[cfg_attr(not(feature = "native"), allow(dead_code))]
fn gather<T: Lane>(table: &[T], keys: &[i32], valid: Option<&[u64]>) -> Vec<T> {
    let zero = T::from_u64(0);
    let get = |k: i32| *table.get(k as u32 as usize).unwrap_or(&zero);
    let Some(valid) = valid else {
        return keys.iter().map(|&k| get(k)).collect();
    };
    // Each row's validity bit masks its lane in the same loop as the lookup: a second loop
    // over the lanes, shifting each row's bit out of its word, took as long as the lookups.
    let mut out: Vec<T> = Vec::with_capacity(keys.len());
    for (keys, &word) in keys.chunks(64).zip(valid) {
        out.extend(keys.iter().enumerate().map(|(j, &k)| {
            let keep = ((word >> j) & 1).wrapping_neg();
            T::from_u64(get(k).to_u64() & keep)
        }));
    }
    // Keys past the bitmap's words (none, for a bitmap of the batch's rows) are missing.
    out.resize(keys.len(), zero);
    out
}

/// The lanes of `values` (each at most `max`) at the width that holds `max`.
///
/// Collected from a mapped `Vec::into_iter` into a vector of a type of the same size, the
/// lanes reuse its allocation (std's in-place collection): a conversion at the same width
/// takes no second buffer.
fn narrowest(max: u64, values: impl Iterator<Item = u64>) -> Lanes {
    match Width::of(max) {
        Width::W8 => Lanes::U8(values.map(|x| x as u8).collect()),
        Width::W16 => Lanes::U16(values.map(|x| x as u16).collect()),
        Width::W32 => Lanes::U32(values.map(|x| x as u32).collect()),
        Width::W64 => Lanes::U64(values.collect()),
    }
}

/// The lanes of `values` mapped by `f` into the width that holds `max` (every `f(x)` must be
/// at most `max`); a vector of the same width is reused.
fn convert<S: Lane>(values: Vec<S>, max: u64, f: impl Fn(u64) -> u64) -> Lanes {
    narrowest(max, values.into_iter().map(|x| f(x.to_u64())))
}

impl Lanes {
    /// `n` zeros, one byte each.
    pub(crate) fn zeros(n: usize) -> Lanes {
        Lanes::U8(vec![0; n])
    }

    /// The lanes cut into runs of `rows` (the last may be shorter), each at this width.
    pub(crate) fn cut(&self, rows: usize) -> Vec<Lanes> {
        let max = self.max();
        on_lanes!(self, v => v
            .chunks(rows.max(1))
            .map(|c| narrowest(max, c.iter().map(|x| x.to_u64())))
            .collect())
    }

    /// The number of lanes.
    pub(crate) fn len(&self) -> usize {
        on_lanes!(self, v => v.len())
    }

    /// Lane `i`.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> u64 {
        on_lanes!(self, v => v[i].to_u64())
    }

    /// The largest value a lane of this width holds.
    pub(crate) fn max(&self) -> u64 {
        fn of<T: Lane>(_: &[T]) -> u64 {
            T::MAX
        }
        on_lanes!(self, v => of(v))
    }

    /// The lanes of `codes` (each at most `max`), at the width that holds `max`.
    #[cfg_attr(not(feature = "native"), allow(dead_code))]
    pub(crate) fn from_codes(codes: Vec<u32>, max: u64) -> Lanes {
        convert(codes, max, |c| c)
    }

    /// The lanes `table[key]` for each of `keys`, at `table`'s width: 0 for a key outside the
    /// table, and for a row whose bit is clear in `valid`.
    #[cfg_attr(not(feature = "native"), allow(dead_code))]
    pub(crate) fn gather(table: &Lanes, keys: &[i32], valid: Option<&[u64]>) -> Lanes {
        match table {
            Lanes::U8(t) => Lanes::U8(gather(t, keys, valid)),
            Lanes::U16(t) => Lanes::U16(gather(t, keys, valid)),
            Lanes::U32(t) => Lanes::U32(gather(t, keys, valid)),
            Lanes::U64(t) => Lanes::U64(gather(t, keys, valid)),
        }
    }

    /// The lanes at positions `rows`, at the same width.
    pub(crate) fn select(&self, rows: &[usize]) -> Lanes {
        match self {
            Lanes::U8(v) => Lanes::U8(rows.iter().map(|&i| v[i]).collect()),
            Lanes::U16(v) => Lanes::U16(rows.iter().map(|&i| v[i]).collect()),
            Lanes::U32(v) => Lanes::U32(rows.iter().map(|&i| v[i]).collect()),
            Lanes::U64(v) => Lanes::U64(rows.iter().map(|&i| v[i]).collect()),
        }
    }

    /// Every lane mapped by `f` (each result at most `max`), at the width that holds `max`.
    pub(crate) fn map(self, max: u64, f: impl Fn(u64) -> u64) -> Lanes {
        on_lanes!(self, v => convert(v, max, f))
    }
}

/// One segment of an integer column: cell `i` is `min + lanes[i]`, and no lane exceeds
/// `max_off` (missing cells hold some lane within it too).
#[derive(Clone, PartialEq, Eq)]
#[cfg_attr(test, derive(Debug))]
pub(crate) struct Ints {
    /// The base every offset is added to: at most every value of the segment.
    pub(crate) min: i64,
    /// At least every offset; the lanes' width holds it.
    pub(crate) max_off: u64,
    pub(crate) lanes: Lanes,
}

/// Where an inclusive range of values falls on a segment's lanes.
#[derive(Clone, Copy, PartialEq, Eq)]
#[cfg_attr(test, derive(Debug))]
pub(crate) enum Span {
    /// No lane of the segment is in the range.
    Empty,
    /// Every lane of the segment is in the range.
    Full,
    /// The lanes `lo..=lo + span`, both within the lanes' width.
    Lanes { lo: u64, span: u64 },
}

/// The lanes in `[a, b]` when every lane is in `[0, max]` (`max` within the lanes' width).
fn clip(a: i128, b: i128, max: u64) -> Span {
    let (lo, hi) = (a.max(0), b.min(i128::from(max)));
    if lo > hi {
        Span::Empty
    } else if lo == 0 && hi == i128::from(max) {
        Span::Full
    } else {
        // Both are in [0, max], so they fit a lane.
        Span::Lanes {
            lo: lo as u64,
            span: (hi - lo) as u64,
        }
    }
}

impl Ints {
    /// `n` cells of value 0 (for a segment whose cells are all missing).
    pub(crate) fn zeros(n: usize) -> Ints {
        Ints {
            min: 0,
            max_off: 0,
            lanes: Lanes::zeros(n),
        }
    }

    /// The cells `values` (integers of any width up to 64 bits, signed or not below
    /// `2^63`), at the narrowest width. The least and greatest values are taken over the
    /// cells whose bit is set in `valid` (every cell when `None`); the others are stored as
    /// some lane within them.
    #[cfg_attr(not(feature = "native"), allow(dead_code))]
    pub(crate) fn from_values<T: Copy + Ord + Into<i64>>(
        values: &[T],
        valid: Option<&[u64]>,
    ) -> Ints {
        let (mut min, mut max) = (i64::MAX, i64::MIN);
        let mut fold = |x: T| {
            let x: i64 = x.into();
            min = min.min(x);
            max = max.max(x);
        };
        // The least and greatest of a run of present cells, found at the values' own width
        // (where the compares run in vector registers), then widened.
        let run_bounds = |run: &[T]| {
            run.first().map(|&first| {
                run.iter()
                    .fold((first, first), |(lo, hi), &x| (lo.min(x), hi.max(x)))
            })
        };
        match valid {
            None => {
                if let Some((lo, hi)) = run_bounds(values) {
                    fold(lo);
                    fold(hi);
                }
            }
            Some(bits) => {
                for (chunk, &word) in values.chunks(64).zip(bits) {
                    if word == u64::MAX {
                        if let Some((lo, hi)) = run_bounds(chunk) {
                            fold(lo);
                            fold(hi);
                        }
                    } else {
                        let mut rest = word;
                        while rest != 0 {
                            fold(chunk[rest.trailing_zeros() as usize]);
                            rest &= rest - 1;
                        }
                    }
                }
            }
        }
        if min > max {
            return Ints::zeros(values.len());
        }
        let max_off = max.wrapping_sub(min) as u64;
        // A missing cell may hold anything: one outside the values is stored at offset 0,
        // the values themselves all fall within `max_off`.
        let offset = move |x: &T| {
            let off = (*x).into().wrapping_sub(min) as u64;
            if off <= max_off {
                off
            } else {
                0
            }
        };
        // With every cell present, every offset is within `max_off`: no check a cell.
        let lanes = match valid {
            None => narrowest(
                max_off,
                values
                    .iter()
                    .map(move |&x| x.into().wrapping_sub(min) as u64),
            ),
            Some(_) => narrowest(max_off, values.iter().map(offset)),
        };
        Ints {
            min,
            max_off,
            lanes,
        }
    }

    /// Cell `i`.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> i64 {
        self.min.wrapping_add(self.lanes.get(i) as i64)
    }

    /// The cells at positions `rows`, on the same base and width.
    pub(crate) fn select(&self, rows: &[usize]) -> Ints {
        Ints {
            min: self.min,
            max_off: self.max_off,
            lanes: self.lanes.select(rows),
        }
    }

    /// Where the values `lo..=hi` fall on the lanes, exactly: the offsets are `lo - min` and
    /// `hi - min`, computed without rounding or overflow and clipped to the segment.
    pub(crate) fn span(&self, lo: i128, hi: i128) -> Span {
        let min = i128::from(self.min);
        clip(lo.saturating_sub(min), hi.saturating_sub(min), self.max_off)
    }

    /// The lane of the value `x`, when the segment could hold it.
    pub(crate) fn lane_of(&self, x: i64) -> Option<u64> {
        let off = i128::from(x) - i128::from(self.min);
        (0..=i128::from(self.max_off))
            .contains(&off)
            .then_some(off as u64)
    }
}

/// Where an inclusive range of codes falls on a segment's code lanes, which hold codes up to
/// their width's maximum.
pub(crate) fn code_span(codes: &Lanes, lo: u64, hi: u64) -> Span {
    clip(i128::from(lo), i128::from(hi), codes.max())
}

/// Signed distances from a base, at the width the values so far need: the parse-time form of
/// an integer column. `I64` holds the values themselves (distances from 0).
#[derive(Clone)]
enum Signed {
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
}

/// An integer column being parsed: each cell stored as its distance from the column's first
/// value, in the narrowest signed type that has held every distance so far.
#[derive(Clone)]
pub(crate) struct IntBuilder {
    /// The first value (0 before there is one): what distances are from, and what a
    /// missing cell is stored as.
    base: i64,
    /// True once a value (not a missing cell) has been pushed.
    seen: bool,
    lanes: Signed,
}

impl Default for IntBuilder {
    fn default() -> Self {
        IntBuilder::missing(0)
    }
}

impl IntBuilder {
    /// A column of `n` missing cells.
    pub(crate) fn missing(n: usize) -> Self {
        IntBuilder {
            base: 0,
            seen: false,
            lanes: Signed::I8(vec![0; n]),
        }
    }

    /// Makes room for `additional` more cells at the present width.
    pub(crate) fn reserve(&mut self, additional: usize) {
        match &mut self.lanes {
            Signed::I8(v) => v.reserve(additional),
            Signed::I16(v) => v.reserve(additional),
            Signed::I32(v) => v.reserve(additional),
            Signed::I64(v) => v.reserve(additional),
        }
    }

    /// Adds a missing cell, stored as the base (a value of the column once there is one).
    #[inline]
    pub(crate) fn push_missing(&mut self) {
        match &mut self.lanes {
            Signed::I8(v) => v.push(0),
            Signed::I16(v) => v.push(0),
            Signed::I32(v) => v.push(0),
            Signed::I64(v) => v.push(self.base),
        }
    }

    /// Adds the value `x`.
    #[inline(always)]
    pub(crate) fn push(&mut self, x: i64) {
        if self.seen {
            let d = x.checked_sub(self.base);
            let stored = match (&mut self.lanes, d) {
                (Signed::I8(v), Some(d)) => i8::try_from(d).map(|d| v.push(d)).is_ok(),
                (Signed::I16(v), Some(d)) => i16::try_from(d).map(|d| v.push(d)).is_ok(),
                (Signed::I32(v), Some(d)) => i32::try_from(d).map(|d| v.push(d)).is_ok(),
                (Signed::I64(v), _) => {
                    v.push(x);
                    true
                }
                _ => false,
            };
            if stored {
                return;
            }
        }
        self.push_cold(x);
    }

    /// `push` for the first value, and for a value too far from the base for the width.
    #[cold]
    fn push_cold(&mut self, x: i64) {
        if !self.seen {
            // Every cell so far is missing (stored as 0, any value will do): the first
            // value becomes the base, at distance 0.
            self.base = x;
            self.seen = true;
            // After a cut the lanes may be 64-bit, where missing cells so far are stored
            // as 0: they become the base, a value of the column.
            if let Signed::I64(v) = &mut self.lanes {
                v.fill(x);
            }
            self.push_missing();
            return;
        }
        let base = self.base;
        let d = x.checked_sub(base);
        let fits16 = d.is_some_and(|d| i16::try_from(d).is_ok());
        let fits32 = d.is_some_and(|d| i32::try_from(d).is_ok());
        // Into `I64` the distances become values; missing cells there are stored as the base.
        let value = |d: i64| base + d;
        self.lanes = match std::mem::replace(&mut self.lanes, Signed::I64(Vec::new())) {
            Signed::I8(v) if fits16 => Signed::I16(grow(v, i16::from)),
            Signed::I8(v) if fits32 => Signed::I32(grow(v, i32::from)),
            Signed::I8(v) => Signed::I64(grow(v, |d| value(d.into()))),
            Signed::I16(v) if fits32 => Signed::I32(grow(v, i32::from)),
            Signed::I16(v) => Signed::I64(grow(v, |d| value(d.into()))),
            Signed::I32(v) => Signed::I64(grow(v, |d| value(d.into()))),
            Signed::I64(v) => Signed::I64(v),
        };
        self.push(x);
    }

    /// The values as floats (each the float nearest to it, as `as` gives).
    pub(crate) fn into_f64(self) -> Vec<f64> {
        let base = self.base;
        match self.lanes {
            Signed::I8(v) => v.iter().map(|&d| (base + i64::from(d)) as f64).collect(),
            Signed::I16(v) => v.iter().map(|&d| (base + i64::from(d)) as f64).collect(),
            Signed::I32(v) => v.iter().map(|&d| (base + i64::from(d)) as f64).collect(),
            Signed::I64(v) => v.into_iter().map(|x| x as f64).collect(),
        }
    }

    /// The finished segment: offsets from the least value, at the narrowest unsigned width.
    #[cfg(test)]
    pub(crate) fn finish(self) -> Ints {
        match self.lanes {
            Signed::I8(v) => rebase(&v, self.base),
            Signed::I16(v) => rebase(&v, self.base),
            Signed::I32(v) => rebase(&v, self.base),
            Signed::I64(v) => rebase(&v, 0),
        }
    }

    /// The finished cells cut into segments of `rows` cells (the last may be shorter; none
    /// when there are no cells), each from its own least value at its own narrowest width:
    /// a column that drifts, as keys and times do, takes fewer bytes a row in short segments.
    pub(crate) fn finish_cut(mut self, rows: usize) -> Vec<Ints> {
        self.take_cut(rows)
    }

    /// [`IntBuilder::finish_cut`], leaving the builder empty with its buffer: the next
    /// cells are stored from a base of their own, at no less than the present width.
    pub(crate) fn take_cut(&mut self, rows: usize) -> Vec<Ints> {
        fn cut<S: Copy + Ord + Into<i64>>(v: &mut Vec<S>, base: i64, rows: usize) -> Vec<Ints> {
            let out = v.chunks(rows.max(1)).map(|c| rebase(c, base)).collect();
            v.clear();
            out
        }
        let out = match &mut self.lanes {
            Signed::I8(v) => cut(v, self.base, rows),
            Signed::I16(v) => cut(v, self.base, rows),
            Signed::I32(v) => cut(v, self.base, rows),
            Signed::I64(v) => cut(v, 0, rows),
        };
        self.base = 0;
        self.seen = false;
        out
    }
}

/// The segment whose cell `i` is `base + v[i]` (exactly: each is a value of the column, or
/// a missing cell stored as the base, itself a value or 0 when there is none).
fn rebase<S: Copy + Ord + Into<i64>>(v: &[S], base: i64) -> Ints {
    let lo: i64 = v.iter().copied().min().map_or(0, Into::into);
    let hi: i64 = v.iter().copied().max().map_or(0, Into::into);
    // `hi - lo` is the distance between two values of the column: it fits in a `u64`.
    let max_off = hi.wrapping_sub(lo) as u64;
    Ints {
        min: base.wrapping_add(lo),
        max_off,
        lanes: narrowest(max_off, v.iter().map(|&d| d.into().wrapping_sub(lo) as u64)),
    }
}

/// `v` mapped into a wider type, keeping its capacity (the room reserved for the chunk).
fn grow<S: Copy, T>(v: Vec<S>, f: impl Fn(S) -> T) -> Vec<T> {
    let mut out = Vec::with_capacity(v.capacity());
    out.extend(v.iter().map(|&d| f(d)));
    out
}

/// Text codes being parsed, at the width the codes so far need (codes are handed out in
/// order, so the width grows one step at a time).
#[derive(Clone)]
pub(crate) struct CodeBuilder {
    lanes: Lanes,
}

impl CodeBuilder {
    /// A column of `n` missing cells, with room for `capacity` cells.
    pub(crate) fn missing(n: usize, capacity: usize) -> Self {
        let mut v = Vec::with_capacity(capacity.max(n));
        v.resize(n, 0);
        CodeBuilder {
            lanes: Lanes::U8(v),
        }
    }

    /// Makes room for `additional` more cells at the present width.
    pub(crate) fn reserve(&mut self, additional: usize) {
        on_lanes!(&mut self.lanes, v => v.reserve(additional))
    }

    /// Adds a code (0 for a missing cell).
    #[inline(always)]
    pub(crate) fn push(&mut self, code: u32) {
        match &mut self.lanes {
            Lanes::U8(v) if code <= u8::MAX.into() => v.push(code as u8),
            Lanes::U16(v) if code <= u16::MAX.into() => v.push(code as u16),
            Lanes::U32(v) => v.push(code),
            _ => self.push_cold(code),
        }
    }

    /// `push` for a code too large for the width.
    #[cold]
    fn push_cold(&mut self, code: u32) {
        self.lanes = match std::mem::replace(&mut self.lanes, Lanes::U8(Vec::new())) {
            Lanes::U8(v) if code <= u16::MAX.into() => Lanes::U16(grow(v, u16::from)),
            Lanes::U8(v) => Lanes::U32(grow(v, u32::from)),
            Lanes::U16(v) => Lanes::U32(grow(v, u32::from)),
            other => other,
        };
        self.push(code);
    }

    /// The codes so far cut into runs of `rows` (the last may be shorter), leaving the
    /// builder empty with its buffer, at its width.
    pub(crate) fn take_cut(&mut self, rows: usize) -> Vec<Lanes> {
        let cut = self.lanes.cut(rows);
        on_lanes!(&mut self.lanes, v => v.clear());
        cut
    }

    /// The finished segment: each code mapped through `remap` (a code it lacks becomes 0),
    /// at the width that holds `max`, the largest code of the column's dictionary.
    pub(crate) fn finish(self, remap: Option<&[u32]>, max: u64) -> Lanes {
        remap_codes(self.lanes, remap, max)
    }
}

/// `codes` mapped through `remap` (a code it lacks becomes 0; none: unchanged), at the width
/// that holds `max`, the largest code of the column's dictionary.
pub(crate) fn remap_codes(codes: Lanes, remap: Option<&[u32]>, max: u64) -> Lanes {
    match remap {
        Some(map) => codes.map(max, |c| map.get(c as usize).copied().map_or(0, u64::from)),
        None => codes.map(max, |c| c),
    }
}

/// An integer against a real, exactly (neither is rounded to the other's type); `None`
/// for NaN. The reference that tests of narrow comparisons check against, and how row-group
/// bounds are compared with a literal.
#[cfg_attr(not(feature = "native"), allow(dead_code))]
pub(crate) fn cmp_exact(i: i64, x: f64) -> Option<std::cmp::Ordering> {
    use std::cmp::Ordering;
    if x.is_nan() {
        return None;
    }
    let f = x.floor();
    // Beyond ±2^64 the saturated floor is still beyond every i64.
    match i128::from(i).cmp(&(f as i128)) {
        Ordering::Equal if f != x => Some(Ordering::Less),
        o => Some(o),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The width of the lanes, in bits.
    fn bits(lanes: &Lanes) -> u32 {
        match lanes {
            Lanes::U8(_) => 8,
            Lanes::U16(_) => 16,
            Lanes::U32(_) => 32,
            Lanes::U64(_) => 64,
        }
    }

    proptest! {
        /// Each key's lane is the table's entry, 0 for a key outside the table (negative
        /// too) and for a row whose validity bit is clear, at every width and any length.
        #[test]
        fn gathered_lanes_are_the_entries_of_present_keys(
            table in prop::collection::vec(any::<u64>(), 0..300),
            keys in prop::collection::vec(-3i32..320, 0..300),
            bits_seed in any::<u64>(),
            top in 0u32..64,
            with_validity in any::<bool>(),
        ) {
            let top = if top == 0 { u64::MAX } else { (1u64 << top) - 1 };
            let entries: Vec<u64> = table.iter().map(|&x| x & top).collect();
            let table = narrowest(top, entries.iter().copied());
            let mut next = super::super::rng::xorshift(bits_seed | 1);
            let valid: Vec<u64> = (0..keys.len().div_ceil(64)).map(|_| next()).collect();
            let valid = with_validity.then_some(valid);
            let got = Lanes::gather(&table, &keys, valid.as_deref());
            prop_assert_eq!(bits(&got), bits(&table));
            for (i, &k) in keys.iter().enumerate() {
                let present = valid.as_ref().is_none_or(|v| v[i / 64] >> (i % 64) & 1 == 1);
                let want = match usize::try_from(k).ok().and_then(|k| entries.get(k)) {
                    Some(&x) if present => x,
                    _ => 0,
                };
                prop_assert_eq!(got.get(i), want, "row {}", i);
            }
            prop_assert_eq!(got.len(), keys.len());
        }
    }

    /// Builds a segment cell by cell, as the loader does (`None` is a missing cell).
    fn built(cells: &[Option<i64>]) -> Ints {
        let mut b = IntBuilder::default();
        for c in cells {
            match c {
                Some(x) => b.push(*x),
                None => b.push_missing(),
            }
        }
        b.finish()
    }

    /// Every value reads back, the base is the least value and the width is the narrowest
    /// that holds the greatest offset.
    fn check(ints: &Ints, cells: &[Option<i64>]) {
        let values: Vec<i64> = cells.iter().flatten().copied().collect();
        for (i, c) in cells.iter().enumerate() {
            if let Some(x) = c {
                assert_eq!(ints.get(i), *x, "cell {i}");
            }
            assert!(ints.lanes.get(i) <= ints.max_off, "cell {i} within max_off");
        }
        if let (Some(&lo), Some(&hi)) = (values.iter().min(), values.iter().max()) {
            assert_eq!(ints.min, lo);
            assert_eq!(ints.max_off, hi.wrapping_sub(lo) as u64);
        }
        let want = match ints.max_off {
            0..=0xff => 8,
            0x100..=0xffff => 16,
            0x1_0000..=0xffff_ffff => 32,
            _ => 64,
        };
        assert_eq!(bits(&ints.lanes), want, "max_off {}", ints.max_off);
    }

    #[test]
    fn each_width_holds_its_edges_and_not_one_more() {
        for (span, width) in [
            (0u64, 8),
            (255, 8),
            (256, 16),
            (65_535, 16),
            (65_536, 32),
            (u64::from(u32::MAX), 32),
            (u64::from(u32::MAX) + 1, 64),
        ] {
            for min in [i64::MIN, -1_000_000, -1, 0, 7, i64::MAX - span as i64] {
                let max = min + span as i64;
                // The edges in both orders, a value between, and missing cells around them.
                let cells = [
                    None,
                    Some(max),
                    Some(min),
                    None,
                    Some(min + span as i64 / 2),
                ];
                let values: Vec<i64> = cells.iter().map(|c| c.unwrap_or(12345)).collect();
                let from = Ints::from_values(&values, Some(&[0b10110]));
                for ints in [built(&cells), from] {
                    check(&ints, &cells);
                    assert_eq!(bits(&ints.lanes), width, "span {span} from {min}");
                    assert_eq!((ints.get(1), ints.get(2)), (max, min));
                }
                let reversed = [Some(min), None, Some(max)];
                check(&built(&reversed), &reversed);
            }
        }
    }

    #[test]
    fn the_extremes_of_i64_take_the_wide_path() {
        let cells = [
            Some(0),
            Some(i64::MAX),
            None,
            Some(i64::MIN),
            Some(-1),
            Some(i64::MIN + 1),
        ];
        let ints = built(&cells);
        check(&ints, &cells);
        assert_eq!(ints.min, i64::MIN);
        assert_eq!(ints.max_off, u64::MAX);
        // A first value at one extreme, then the other: no distance overflows on the way.
        for cells in [
            [Some(i64::MIN), Some(i64::MAX)],
            [Some(i64::MAX), Some(i64::MIN)],
        ] {
            let ints = built(&cells);
            check(&ints, &cells);
            let from = Ints::from_values(&[cells[0].unwrap_or(0), cells[1].unwrap_or(0)], None);
            assert_eq!(from, ints);
        }
        // Within 8 bits of one extreme stays narrow.
        let high = [Some(i64::MAX), Some(i64::MAX - 255)];
        check(&built(&high), &high);
        assert_eq!(bits(&built(&high).lanes), 8);
    }

    #[test]
    fn a_segment_without_values_is_one_byte_of_zeros() {
        for ints in [
            built(&[None, None, None]),
            Ints::from_values(&[5i64, -9, 1 << 40], Some(&[0])),
            Ints::zeros(3),
        ] {
            assert_eq!(ints.lanes, Lanes::U8(vec![0; 3]));
            assert_eq!(ints.max_off, 0);
        }
        assert_eq!(built(&[]).lanes, Lanes::U8(Vec::new()));
    }

    #[test]
    fn floats_from_a_builder_are_the_nearest() {
        let mut b = IntBuilder::default();
        b.push_missing();
        for x in [3, -70_000, (1 << 53) + 1, i64::MIN] {
            b.push(x);
        }
        let f = b.into_f64();
        assert_eq!(
            f[1..],
            [3.0, -70_000.0, (1u64 << 53) as f64, -(2f64.powi(63))]
        );
    }

    #[test]
    fn spans_are_exact_and_clipped_to_the_segment() {
        let ints = built(&[Some(-100), Some(155)]);
        assert_eq!(bits(&ints.lanes), 8);
        assert_eq!(ints.span(-100, 155), Span::Full);
        assert_eq!(ints.span(i128::MIN, i128::MAX), Span::Full);
        assert_eq!(ints.span(-101, 155), Span::Full);
        assert_eq!(ints.span(-99, 155), Span::Lanes { lo: 1, span: 254 });
        assert_eq!(ints.span(-100, 154), Span::Lanes { lo: 0, span: 254 });
        assert_eq!(ints.span(155, 1 << 70), Span::Lanes { lo: 255, span: 0 });
        assert_eq!(ints.span(156, 1 << 70), Span::Empty);
        assert_eq!(ints.span(-(1 << 70), -101), Span::Empty);
        assert_eq!(ints.span(10, 9), Span::Empty);
        assert_eq!(ints.lane_of(-100), Some(0));
        assert_eq!(ints.lane_of(155), Some(255));
        assert_eq!(ints.lane_of(156), None);
        assert_eq!(ints.lane_of(-101), None);
        let wide = built(&[Some(i64::MIN), Some(i64::MAX)]);
        assert_eq!(wide.lane_of(i64::MAX), Some(u64::MAX));
        assert_eq!(
            wide.span(0, i128::from(i64::MAX)),
            Span::Lanes {
                lo: 1 << 63,
                span: (1 << 63) - 1
            }
        );
        let codes = Lanes::from_codes(vec![0, 3, 255], 255);
        assert_eq!(code_span(&codes, 0, 255), Span::Full);
        assert_eq!(code_span(&codes, 3, 300), Span::Lanes { lo: 3, span: 252 });
        assert_eq!(code_span(&codes, 256, 300), Span::Empty);
    }

    #[test]
    fn codes_widen_as_the_dictionary_grows() {
        for (n, width) in [(256u32, 8), (257, 16), (65_536, 16), (65_537, 32)] {
            let mut b = CodeBuilder::missing(2, 0);
            for c in 0..n {
                b.push(c);
            }
            b.push(0);
            // Without a remap, at the width of the column's largest code.
            let lanes = b.clone().finish(None, u64::from(n - 1));
            assert_eq!(bits(&lanes), width, "{n} codes");
            assert_eq!(lanes.get(2 + n as usize - 1), u64::from(n - 1));
            // Through a remap into a larger dictionary: codes it lacks become 0.
            let map: Vec<u32> = (0..n - 1).map(|c| c * 2).collect();
            let lanes = b.finish(Some(&map), u64::from(2 * n));
            assert_eq!(lanes.get(3), 2);
            assert_eq!(lanes.get(2 + n as usize - 1), 0);
            assert_eq!(lanes.get(2 + n as usize - 2), u64::from(2 * (n - 2)));
        }
    }

    /// Values around a few bases, some at the extremes of `i64`: every width is reached.
    fn cells() -> impl Strategy<Value = Vec<Option<i64>>> {
        let base = prop_oneof![Just(0i64), Just(i64::MIN), Just(i64::MAX), any::<i64>()];
        let spread = prop_oneof![
            Just(0u32),
            Just(7),
            Just(8),
            Just(16),
            Just(31),
            Just(32),
            Just(63)
        ];
        (base, spread).prop_flat_map(|(base, bits)| {
            let cell = (any::<u64>(), any::<bool>()).prop_map(move |(r, neg)| {
                let d = if bits == 0 {
                    0
                } else {
                    (r >> (64 - bits)) as i64
                };
                if neg {
                    base.saturating_sub(d)
                } else {
                    base.saturating_add(d)
                }
            });
            proptest::collection::vec(
                prop_oneof![1 => Just(None), 5 => cell.prop_map(Some)],
                0..80,
            )
        })
    }

    proptest! {
        /// Built cell by cell or from a slice, a segment reads back its values, at the
        /// narrowest width, and both ways agree.
        #[test]
        fn segments_read_back_at_the_narrowest_width(cells in cells()) {
            let ints = built(&cells);
            check(&ints, &cells);
            let values: Vec<i64> = cells.iter().map(|c| c.unwrap_or(0)).collect();
            let mut valid = vec![0u64; cells.len().div_ceil(64)];
            for (i, c) in cells.iter().enumerate() {
                if c.is_some() {
                    valid[i / 64] |= 1 << (i % 64);
                }
            }
            let from = Ints::from_values(&values, Some(&valid));
            check(&from, &cells);
            prop_assert_eq!((from.min, from.max_off), (ints.min, ints.max_off));
        }
    }

    /// `from_values` at every narrow width (the bounds folded at the values' own width, the
    /// offsets unchecked when no cell is missing): segments of lengths around a validity
    /// word, of one value, all missing, fully present words next to partial ones, and the
    /// types' extremes, each read back as the loader's cell-by-cell segment reads it.
    #[test]
    fn narrow_values_build_the_loaders_segment_at_every_width() {
        fn case<T: Copy + Ord + Into<i64>>(values: &[T], valid: Option<&[u64]>) {
            let cells: Vec<Option<i64>> = values
                .iter()
                .enumerate()
                .map(|(i, &x)| {
                    valid
                        .is_none_or(|v| (v[i / 64] >> (i % 64)) & 1 == 1)
                        .then(|| x.into())
                })
                .collect();
            let from = Ints::from_values(values, valid);
            check(&from, &cells);
            let loaded = built(&cells);
            assert_eq!(
                (from.min, from.max_off),
                (loaded.min, loaded.max_off),
                "{cells:?}"
            );
        }
        fn all<T: Copy + Ord + Into<i64>>(lo: T, hi: T, mid: T) {
            for len in [0usize, 1, 63, 64, 65, 127, 128, 129, 200] {
                let pattern = |i: usize| match (i * 7 + len) % 5 {
                    0 => lo,
                    1 => hi,
                    _ => mid,
                };
                let values: Vec<T> = (0..len).map(pattern).collect();
                let words = len.div_ceil(64).max(1);
                let ones: Vec<u64> = (0..words)
                    .map(|w| {
                        let rest = len.saturating_sub(w * 64);
                        if rest >= 64 {
                            u64::MAX
                        } else {
                            (1u64 << rest) - 1
                        }
                    })
                    .collect();
                let none = vec![0u64; words];
                // Whole words present, then one missing cell in the last word.
                let mut holed = ones.clone();
                if len > 0 {
                    holed[(len - 1) / 64] &= !(1 << ((len - 1) % 64));
                }
                // Only the extremes missing: the bounds come from `mid` alone.
                let inner: Vec<u64> = (0..words)
                    .map(|w| {
                        (0..64)
                            .filter(|&j| w * 64 + j < len && (w * 64 + j + len) * 7 % 5 >= 2)
                            .fold(0u64, |a, j| a | 1 << j)
                    })
                    .collect();
                case(&values, None);
                for valid in [&ones, &none, &holed, &inner] {
                    case(&values, Some(valid));
                }
                // A segment of one value, and one of an extreme alone.
                case(&vec![mid; len], None);
                case(&vec![hi; len], Some(&holed));
            }
        }
        all(i8::MIN, i8::MAX, -1i8);
        all(i16::MIN, i16::MAX, 0i16);
        all(i32::MIN, i32::MAX, 7i32);
        all(0u8, u8::MAX, 128u8);
        all(0u16, u16::MAX, 1u16);
        all(0u32, u32::MAX, u32::MAX / 2);
        all(i64::MIN, i64::MAX, 0i64);
        all(i64::MIN, i64::MIN + 255, i64::MIN + 1);
    }
}
