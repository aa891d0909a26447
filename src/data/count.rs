//! `count`: the true number of rows matching a predicate, evaluated in blocks of rows as bitmasks.
//!
//! A predicate is first compiled against the table once: every literal becomes a range or
//! set over the column's values (an integer range for integer columns, a code range or code
//! set for text, whose dictionary is sorted, so text order is code order). Each block of
//! [`BLOCK`] rows is then evaluated into two bitmasks, one word per 64 rows: `truth` (the
//! predicate is true) and `known` (it is not unknown), with `truth ⊆ known`. Leaves take
//! `known` from the column's validity bitmap; `AND`, `OR` and `NOT` combine masks by Kleene's
//! rules word by word. Blocks run in parallel on rayon's pool, unless the table is small.
//!
//! Integers and codes are stored in narrow lanes (see [`lanes`](super::lanes)). A leaf
//! translates its range into the block's segment's lanes (an integer range less the
//! segment's least value, in `i128`, clipped to the offsets the segment holds), so cells are
//! compared at their stored width.
//!
//! The work is the same whatever the data holds (SPEC section 1: time is an output too). A
//! leaf reads every cell of its column in every block, whether its literal is in the
//! dictionary or not and wherever its range falls against a segment's least and greatest
//! value: a test that is false or true on every cell still compares every lane, and a list of
//! values compares every value listed, those a segment cannot hold included. Sums visit every
//! row and the counts of a cube's cells look every cell up in tables of the same size.
//! Shortcuts taken when a literal is absent, or a range misses a segment, made an absent
//! value answer measurably faster than a present one, which told a served analyst which
//! values a column holds and where its minimum and maximum are; they sped up only questions
//! whose answer is 0 or every row.

use rayon::prelude::*;

use super::bitmap::low_mask;
use super::lanes::{code_span, on_lanes, Ints, Lane, Lanes, Span};
use super::predicate::{CmpOp, Predicate, Value};
use super::table::{ColumnData, ColumnType, Dictionary, Segment, Table};

/// Rows per block: the masks and the column slices a leaf reads stay in cache.
const BLOCK: usize = 8192;

/// The true number of rows of `table` where `pred` is true (unknown counts as not true).
///
/// Internal: this number must only ever be used to add noise to.
pub fn count(table: &Table, pred: &Predicate) -> u64 {
    count_work(table, pred).0
}

/// The count of [`count`], and the cells its leaves read: the same for any two predicates of
/// the same shape, whatever the data holds (tests and benchmarks check it).
///
/// Internal: the count must only ever be used to add noise to.
#[doc(hidden)]
pub fn count_work(table: &Table, pred: &Predicate) -> (u64, u64) {
    let node = compile(table, pred);
    let blocks = |seg: &Segment| seg.len.div_ceil(BLOCK);
    let one = |seg: &Segment, b: usize, scratch: &mut Scratch| {
        count_block(
            seg,
            &node,
            b * BLOCK,
            BLOCK.min(seg.len - b * BLOCK),
            scratch,
        )
    };
    let add = |a: (u64, u64), b: (u64, u64)| (a.0 + b.0, a.1 + b.1);
    // A small table is counted on this thread: waking the pool would cost more than the
    // count (tens of microseconds against a few per block).
    if table.segments.iter().map(blocks).sum::<usize>() <= SEQUENTIAL_BLOCKS {
        let mut scratch = Scratch::default();
        return table
            .segments
            .iter()
            .flat_map(|seg| (0..blocks(seg)).map(move |b| (seg, b)))
            .map(|(seg, b)| one(seg, b, &mut scratch))
            .fold((0, 0), add);
    }
    table
        .segments
        .par_iter()
        .map(|seg| {
            (0..blocks(seg))
                .into_par_iter()
                .map_init(Scratch::default, |scratch, b| one(seg, b, scratch))
                .reduce(|| (0, 0), add)
        })
        .reduce(|| (0, 0), add)
}

/// The rows of `table`'s first segment where `pred` is true, a bit a row (none past the
/// segment's end), on this thread.
pub(super) fn truth(table: &Table, pred: &Predicate) -> Vec<u64> {
    let Some(seg) = table.segments.first() else {
        return Vec::new();
    };
    let node = compile(table, pred);
    let mut scratch = Scratch::default();
    let mut bits = Vec::with_capacity(seg.len.div_ceil(64));
    for base in (0..seg.len).step_by(BLOCK) {
        let rows = BLOCK.min(seg.len - base);
        count_block(seg, &node, base, rows, &mut scratch);
        bits.extend_from_slice(&scratch.truth[..rows.div_ceil(64)]);
    }
    bits
}

/// The most blocks counted without the thread pool (about 130,000 rows).
const SEQUENTIAL_BLOCKS: usize = 16;

/// A compiled predicate.
#[derive(Debug, Clone, PartialEq)]
enum Node {
    /// A test of one column's cells; unknown where the cell is missing.
    Leaf {
        column: usize,
        test: Test,
    },
    /// False on every row (a column that does not exist).
    False,
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Not(Box<Node>),
}

/// What a leaf checks in a cell that has a value.
#[derive(Debug, Clone, PartialEq)]
enum Test {
    /// Never true.
    Never,
    /// Always true.
    Always,
    /// `lo <= x <= lo + span` (as wrapping arithmetic), flipped when `negate`.
    IntRange { lo: i64, span: u64, negate: bool },
    /// `x` is one of the values.
    IntSet(Vec<i64>),
    /// `lo <= x <= hi`, flipped when `negate`.
    FloatRange { lo: f64, hi: f64, negate: bool },
    /// `x` is one of the values.
    FloatSet(Vec<f64>),
    /// `lo <= code <= lo + span`, flipped when `negate`.
    CodeRange { lo: u32, span: u32, negate: bool },
    /// The code is one of the listed codes whose mask is set (each a code and a mask of all
    /// ones, or `(0, 0)` for a listed value the dictionary does not hold).
    CodeList(Vec<(u64, u64)>),
    /// The result for a false cell and for a true cell.
    Bools { when_false: bool, when_true: bool },
}

fn compile(table: &Table, pred: &Predicate) -> Node {
    let leaf = |column: usize, test: Option<Test>| {
        if column >= table.n_columns() {
            Node::False
        } else {
            Node::Leaf {
                column,
                test: test.unwrap_or(Test::Never),
            }
        }
    };
    match pred {
        Predicate::Compare { column, op, value } => {
            leaf(*column, compare_test(table, *column, *op, value))
        }
        Predicate::In { column, values } => leaf(*column, in_test(table, *column, values)),
        Predicate::Between { column, low, high } => {
            leaf(*column, between_test(table, *column, low, high))
        }
        Predicate::And(a, b) => Node::And(Box::new(compile(table, a)), Box::new(compile(table, b))),
        Predicate::Or(a, b) => Node::Or(Box::new(compile(table, a)), Box::new(compile(table, b))),
        Predicate::Not(a) => Node::Not(Box::new(compile(table, a))),
    }
}

/// The literal's place against a column of this type, or `None` for a type mismatch.
enum Lit<'a> {
    Number(f64),
    Text(&'a str),
    Bool(bool),
}

fn literal<'a>(ty: ColumnType, v: &'a Value) -> Option<Lit<'a>> {
    match (ty, v) {
        (ColumnType::Integer | ColumnType::Float, Value::Number(x)) => Some(Lit::Number(*x)),
        (ColumnType::Text, Value::Text(s)) => Some(Lit::Text(s)),
        (ColumnType::Boolean, Value::Bool(b)) => Some(Lit::Bool(*b)),
        _ => None,
    }
}

/// An inclusive range `[lo, hi]` of integers (empty when `lo > hi`), flipped when `negate`.
fn int_range(lo: i128, hi: i128, negate: bool) -> Test {
    let lo = lo.max(i64::MIN as i128);
    let hi = hi.min(i64::MAX as i128);
    if lo > hi {
        return if negate { Test::Always } else { Test::Never };
    }
    Test::IntRange {
        lo: lo as i64,
        span: (hi - lo) as u64,
        negate,
    }
}

/// `f64` to `i128`, saturating (NaN is handled by the callers).
fn wide(x: f64) -> i128 {
    x as i128
}

/// The integers `x` with `x op v`, for a real `v`.
fn int_compare(op: CmpOp, v: f64) -> Test {
    if v.is_nan() {
        // As IEEE: every comparison with NaN is false except `!=`.
        return if op == CmpOp::Ne {
            Test::Always
        } else {
            Test::Never
        };
    }
    let (ceil, floor) = (wide(v.ceil()), wide(v.floor()));
    let (min, max) = (i128::MIN, i128::MAX);
    match op {
        CmpOp::Eq => int_range(ceil, floor, false),
        CmpOp::Ne => int_range(ceil, floor, true),
        // x < v  <=>  x <= ceil(v) - 1, for integer x.
        CmpOp::Lt => int_range(min, ceil.saturating_sub(1), false),
        CmpOp::Le => int_range(min, floor, false),
        // x > v  <=>  x >= floor(v) + 1, for integer x.
        CmpOp::Gt => int_range(floor.saturating_add(1), max, false),
        CmpOp::Ge => int_range(ceil, max, false),
    }
}

/// The finite floats `x` with `x op v`.
fn float_compare(op: CmpOp, v: f64) -> Test {
    if v.is_nan() {
        return if op == CmpOp::Ne {
            Test::Always
        } else {
            Test::Never
        };
    }
    let (lo, hi, negate) = match op {
        CmpOp::Eq => (v, v, false),
        CmpOp::Ne => (v, v, true),
        CmpOp::Lt => (f64::NEG_INFINITY, v.next_down(), false),
        CmpOp::Le => (f64::NEG_INFINITY, v, false),
        CmpOp::Gt => (v.next_up(), f64::INFINITY, false),
        CmpOp::Ge => (v, f64::INFINITY, false),
    };
    Test::FloatRange { lo, hi, negate }
}

/// Codes `[lo, hi)` of a sorted dictionary (empty when `lo >= hi`), flipped when `negate`.
fn code_range(lo: usize, hi: usize, negate: bool) -> Test {
    if lo >= hi {
        return if negate { Test::Always } else { Test::Never };
    }
    Test::CodeRange {
        lo: lo as u32,
        span: (hi - 1 - lo) as u32,
        negate,
    }
}

/// First code whose value is `>= s`, and first whose value is `> s`.
fn bounds(dict: &Dictionary, s: &str) -> (usize, usize) {
    (dict.lower_bound(s), dict.upper_bound(s))
}

fn text_compare(dict: &Dictionary, op: CmpOp, s: &str) -> Test {
    let (lb, ub) = bounds(dict, s);
    let n = dict.len();
    match op {
        CmpOp::Eq => code_range(lb, ub, false),
        CmpOp::Ne => code_range(lb, ub, true),
        CmpOp::Lt => code_range(0, lb, false),
        CmpOp::Le => code_range(0, ub, false),
        CmpOp::Gt => code_range(ub, n, false),
        CmpOp::Ge => code_range(lb, n, false),
    }
}

fn bools(when_false: bool, when_true: bool) -> Test {
    match (when_false, when_true) {
        (false, false) => Test::Never,
        (true, true) => Test::Always,
        _ => Test::Bools {
            when_false,
            when_true,
        },
    }
}

fn compare_test(table: &Table, column: usize, op: CmpOp, value: &Value) -> Option<Test> {
    let ty = *table.types.get(column)?;
    Some(match literal(ty, value)? {
        Lit::Number(v) if ty == ColumnType::Integer => int_compare(op, v),
        Lit::Number(v) => float_compare(op, v),
        Lit::Text(s) => text_compare(&table.dictionaries[column], op, s),
        Lit::Bool(b) => bools(op.holds(false.cmp(&b)), op.holds(true.cmp(&b))),
    })
}

fn between_test(table: &Table, column: usize, low: &Value, high: &Value) -> Option<Test> {
    let ty = *table.types.get(column)?;
    Some(match (literal(ty, low)?, literal(ty, high)?) {
        (Lit::Number(a), Lit::Number(b)) if a.is_nan() || b.is_nan() => Test::Never,
        (Lit::Number(a), Lit::Number(b)) if ty == ColumnType::Integer => {
            int_range(wide(a.ceil()), wide(b.floor()), false)
        }
        (Lit::Number(a), Lit::Number(b)) => Test::FloatRange {
            lo: a,
            hi: b,
            negate: false,
        },
        (Lit::Text(a), Lit::Text(b)) => {
            let dict = &table.dictionaries[column];
            code_range(bounds(dict, a).0, bounds(dict, b).1, false)
        }
        (Lit::Bool(a), Lit::Bool(b)) => {
            // `a <= cell <= b` with false < true.
            let within = |cell: bool| a.cmp(&cell).is_le() && cell.cmp(&b).is_le();
            bools(within(false), within(true))
        }
        _ => Test::Never,
    })
}

fn in_test(table: &Table, column: usize, values: &[Value]) -> Option<Test> {
    let ty = *table.types.get(column)?;
    let lits: Vec<Lit<'_>> = values.iter().filter_map(|v| literal(ty, v)).collect();
    Some(match ty {
        ColumnType::Integer => {
            let mut set: Vec<i64> = lits
                .iter()
                .filter_map(|l| match l {
                    // Only whole numbers within range can equal an integer cell.
                    Lit::Number(v) if v.fract() == 0.0 && wide(*v) == wide(*v) as i64 as i128 => {
                        Some(*v as i64)
                    }
                    _ => None,
                })
                .collect();
            set.sort_unstable();
            set.dedup();
            match set.as_slice() {
                [] => Test::Never,
                [one] => int_range(*one as i128, *one as i128, false),
                _ => Test::IntSet(set),
            }
        }
        ColumnType::Float => {
            let mut set: Vec<f64> = lits
                .iter()
                .filter_map(|l| match l {
                    Lit::Number(v) if !v.is_nan() => Some(*v),
                    _ => None,
                })
                .collect();
            set.sort_by(f64::total_cmp);
            set.dedup();
            if set.is_empty() {
                Test::Never
            } else {
                Test::FloatSet(set)
            }
        }
        ColumnType::Text => {
            let dict = &table.dictionaries[column];
            // Every listed value compared with every cell, those the dictionary does not hold
            // too (masked out): the work depends on the query, never on which values the
            // column holds, nor on how many (no table over the dictionary, whose size would
            // show in the cache).
            let list = lits
                .iter()
                .map(|l| match l {
                    Lit::Text(s) => dict.find(s).map_or((0, 0), |c| (c as u64, u64::MAX)),
                    _ => (0, 0),
                })
                .collect();
            Test::CodeList(list)
        }
        ColumnType::Boolean => {
            let has = |b: bool| lits.iter().any(|l| matches!(l, Lit::Bool(x) if *x == b));
            bools(has(false), has(true))
        }
    })
}

/// Mask buffers reused across the blocks one thread evaluates.
#[derive(Default)]
struct Scratch {
    truth: Vec<u64>,
    known: Vec<u64>,
    /// Buffers for the right-hand sides of `AND` and `OR`, one pair per depth.
    pool: Vec<(Vec<u64>, Vec<u64>)>,
    /// Cells the leaves have read.
    work: u64,
}

/// The rows of a block where `node` is true, and the cells its leaves read.
fn count_block(
    seg: &Segment,
    node: &Node,
    base: usize,
    rows: usize,
    s: &mut Scratch,
) -> (u64, u64) {
    let words = rows.div_ceil(64);
    s.truth.resize(words, 0);
    s.known.resize(words, 0);
    let rows_here = Rows { seg, base, rows };
    let before = s.work;
    eval(
        node,
        &rows_here,
        &mut s.truth,
        &mut s.known,
        &mut s.pool,
        &mut s.work,
    );
    let n = s.truth.iter().map(|w| w.count_ones() as u64).sum();
    (n, s.work - before)
}

/// A block: `rows` rows of `seg` from `base` (a multiple of 64).
struct Rows<'a> {
    seg: &'a Segment,
    base: usize,
    rows: usize,
}

/// Evaluates `node` on a block into `truth` and `known` (one word per 64 rows), adding the
/// cells its leaves read to `work`.
fn eval(
    node: &Node,
    b: &Rows<'_>,
    truth: &mut [u64],
    known: &mut [u64],
    pool: &mut Vec<(Vec<u64>, Vec<u64>)>,
    work: &mut u64,
) {
    let words = truth.len();
    match node {
        Node::Leaf { column, test } => {
            if leaf(*column, test, b, truth, known) {
                *work += b.rows as u64;
            }
        }
        Node::False => {
            truth.fill(0);
            known.fill(u64::MAX);
            known[words - 1] = low_mask(b.rows - (words - 1) * 64);
        }
        Node::Not(a) => {
            eval(a, b, truth, known, pool, work);
            for (t, k) in truth.iter_mut().zip(known.iter()) {
                *t = *k & !*t;
            }
        }
        Node::And(l, r) | Node::Or(l, r) => {
            eval(l, b, truth, known, pool, work);
            let (mut t2, mut k2) = pool.pop().unwrap_or_default();
            t2.resize(words, 0);
            k2.resize(words, 0);
            eval(r, b, &mut t2, &mut k2, pool, work);
            let is_and = matches!(node, Node::And(..));
            for (((t, k), t2), k2) in truth.iter_mut().zip(known.iter_mut()).zip(&t2).zip(&k2) {
                let f1 = *k & !*t;
                let f2 = *k2 & !*t2;
                let (tt, ff) = if is_and {
                    // Kleene AND: true when both are, false when either is.
                    (*t & *t2, f1 | f2)
                } else {
                    // Kleene OR: true when either is, false when both are.
                    (*t | *t2, f1 & f2)
                };
                *t = tt;
                *k = tt | ff;
            }
            pool.push((t2, k2));
        }
    }
}

/// Evaluates one test on one column of a block; true when it read the block's cells of the
/// column (every test on a column that exists does, whatever its literal and the data).
fn leaf(column: usize, test: &Test, b: &Rows<'_>, truth: &mut [u64], known: &mut [u64]) -> bool {
    let words = truth.len();
    let Some(col) = b.seg.columns.get(column) else {
        truth.fill(0);
        known.fill(0);
        return false;
    };
    let first = b.base / 64;
    match &col.valid {
        Some(v) => known.copy_from_slice(&v[first..first + words]),
        None => known.fill(u64::MAX),
    }
    known[words - 1] &= low_mask(b.rows - (words - 1) * 64);
    let range = b.base..b.base + b.rows;
    match (test, &col.data) {
        // A test true or false on every value still compares every cell, as any other
        // test of its column does: an absent literal costs what a present one does.
        (Test::Never | Test::Always, ColumnData::Integer(ints)) => {
            let negate = matches!(test, Test::Never);
            lanes_in_span(&ints.lanes, Span::Full, negate, range, truth, known);
        }
        (Test::Never | Test::Always, ColumnData::Text(codes)) => {
            let negate = matches!(test, Test::Never);
            lanes_in_span(codes, Span::Full, negate, range, truth, known);
        }
        (Test::Never | Test::Always, ColumnData::Float(v)) => {
            // Every stored float is finite (others are missing): all within the range.
            let flip = if matches!(test, Test::Never) {
                u64::MAX
            } else {
                0
            };
            for ((t, k), xs) in truth.iter_mut().zip(known.iter()).zip(v[range].chunks(64)) {
                *t = (float_range_word(xs, f64::NEG_INFINITY, f64::INFINITY) ^ flip) & k;
            }
        }
        (Test::Never | Test::Always, ColumnData::Boolean(v)) => {
            let all = if matches!(test, Test::Always) {
                u64::MAX
            } else {
                0
            };
            bool_words(&v[first..first + words], all, all, truth, known);
        }
        (Test::IntRange { lo, span, negate }, ColumnData::Integer(ints)) => {
            let hi = i128::from(*lo) + i128::from(*span);
            let span = ints.span(i128::from(*lo), hi);
            lanes_in_span(&ints.lanes, span, *negate, range, truth, known);
        }
        (Test::IntSet(set), ColumnData::Integer(ints)) => {
            // Every listed value, as a lane, with whether the segment could hold it at all:
            // those it cannot are compared too, and their matches masked out.
            let lanes: Vec<(u64, u64)> = set
                .iter()
                .map(|&x| match ints.lane_of(x) {
                    Some(lane) => (lane, u64::MAX),
                    None => (0, 0),
                })
                .collect();
            on_lanes!(&ints.lanes, v => lanes_in_set(&v[range], &lanes, truth, known));
        }
        (Test::FloatRange { lo, hi, negate }, ColumnData::Float(v)) => {
            let flip = if *negate { u64::MAX } else { 0 };
            for ((t, k), xs) in truth.iter_mut().zip(known.iter()).zip(v[range].chunks(64)) {
                *t = (float_range_word(xs, *lo, *hi) ^ flip) & k;
            }
        }
        (Test::FloatSet(set), ColumnData::Float(v)) => {
            for ((t, k), xs) in truth.iter_mut().zip(known.iter()).zip(v[range].chunks(64)) {
                let mut w = 0;
                for &x in set {
                    w |= float_range_word(xs, x, x);
                }
                *t = w & k;
            }
        }
        (Test::CodeRange { lo, span, negate }, ColumnData::Text(codes)) => {
            let hi = u64::from(*lo) + u64::from(*span);
            let span = code_span(codes, u64::from(*lo), hi);
            lanes_in_span(codes, span, *negate, range, truth, known);
        }
        (Test::CodeList(list), ColumnData::Text(codes)) => {
            on_lanes!(codes, v => lanes_in_set(&v[range], list, truth, known));
        }
        (
            Test::Bools {
                when_false,
                when_true,
            },
            ColumnData::Boolean(v),
        ) => {
            let if_true = if *when_true { u64::MAX } else { 0 };
            let if_false = if *when_false { u64::MAX } else { 0 };
            bool_words(&v[first..first + words], if_true, if_false, truth, known);
        }
        // A test compiled for another storage type (a literal of another type than its
        // column, which the schema alone decides): false, as for a type mismatch.
        _ => {
            truth.fill(0);
            return false;
        }
    }
    true
}

/// `truth` word by word from a block's boolean words: `if_true` where the cell is true,
/// `if_false` where it is false, and known.
fn bool_words(bits: &[u64], if_true: u64, if_false: u64, truth: &mut [u64], known: &[u64]) {
    for ((t, k), &x) in truth.iter_mut().zip(known.iter()).zip(bits) {
        *t = ((x & if_true) | (!x & if_false)) & k;
    }
}

/// Sets `truth` to the known rows of `range` whose lane is in `span`, or not in it when
/// `negate`. Every lane is compared, whatever the span: one that misses or covers the whole
/// segment is compared as the lanes' whole width, and the result flipped as it says.
fn lanes_in_span(
    lanes: &Lanes,
    span: Span,
    negate: bool,
    range: std::ops::Range<usize>,
    truth: &mut [u64],
    known: &[u64],
) {
    let (lo, span, negate) = match span {
        Span::Lanes { lo, span } => (lo, span, negate),
        Span::Full => (0, lanes.max(), negate),
        Span::Empty => (0, lanes.max(), !negate),
    };
    let flip = if negate { u64::MAX } else { 0 };
    on_lanes!(lanes, v => range_words(&v[range], lo, span, flip, truth, known));
}

/// `truth` word by word: bit `i` set when `lo <= xs[i] <= lo + span`, flipped by `flip`,
/// and known. `lo` and `lo + span` are within the lane's width.
#[inline]
fn range_words<T: Lane>(xs: &[T], lo: u64, span: u64, flip: u64, truth: &mut [u64], known: &[u64]) {
    let (lo, span) = (T::from_u64(lo), T::from_u64(span));
    for ((t, k), xs) in truth.iter_mut().zip(known).zip(xs.chunks(64)) {
        *t = (range_word(xs, lo, span) ^ flip) & k;
    }
}

/// `truth` word by word: bit `i` set when `xs[i]` is the lane of one of `set` whose mask is
/// set (each a lane within the width and a mask of all ones or zeros), and known. Every
/// listed lane is compared, masked or not.
fn lanes_in_set<T: Lane>(xs: &[T], set: &[(u64, u64)], truth: &mut [u64], known: &[u64]) {
    let set: Vec<(T, u64)> = set.iter().map(|&(x, m)| (T::from_u64(x), m)).collect();
    let zero = T::from_u64(0);
    for ((t, k), xs) in truth.iter_mut().zip(known).zip(xs.chunks(64)) {
        let mut w = 0;
        for &(x, mask) in &set {
            w |= range_word(xs, x, zero) & mask;
        }
        *t = w & k;
    }
}

/// Bit `i` set when `lo <= xs[i] <= lo + span` (wrapping: one unsigned compare per cell).
/// The compares fill a byte per cell, which the compiler vectorises at the lanes' width
/// (16 one-byte lanes per SSE2 compare); the bytes are then packed into bits.
#[inline]
fn range_word<T: Lane>(xs: &[T], lo: T, span: T) -> u64 {
    let mut hits = [0u8; 64];
    for (h, &x) in hits.iter_mut().zip(xs) {
        *h = u8::from(x.wrapping_sub(lo) <= span);
    }
    pack(&hits)
}

/// The 64 bytes (each 0 or 1) as the bits of a word, byte `i` to bit `i`.
#[inline]
fn pack(bytes: &[u8; 64]) -> u64 {
    // Eight bytes of 0 or 1 as a little-endian word `x`: `x * 0x0102_0408_1020_4080` adds
    // byte `j` (bit `8j`) shifted by `7(7 - j) + 7`, to bit `56 + j`; every other product
    // bit lands elsewhere and below, with no carries (all positions differ), so the top byte
    // holds the eight bits in order.
    let mut w = 0u64;
    for (j, c) in bytes.chunks_exact(8).enumerate() {
        let mut b = [0u8; 8];
        b.copy_from_slice(c);
        let x = u64::from_le_bytes(b);
        w |= (x.wrapping_mul(0x0102_0408_1020_4080) >> 56) << (8 * j);
    }
    w
}

/// Bit `i` set when `lo <= xs[i] <= hi`.
#[inline]
fn float_range_word(xs: &[f64], lo: f64, hi: f64) -> u64 {
    let mut hits = [0u8; 64];
    for (h, &x) in hits.iter_mut().zip(xs) {
        *h = u8::from((x >= lo) & (x <= hi));
    }
    pack(&hits)
}

/// How the values of a summed column are clamped and put on the noise's grid: a value `x`
/// contributes `clamp(x, lo, hi)` in units of `2^-k`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Clamp {
    /// An integer column: whole bounds; each value contributes `clamp(x) 2^k` exactly.
    Int {
        /// The least value kept.
        lo: i64,
        /// The greatest value kept.
        hi: i64,
        /// The grid exponent.
        k: u32,
    },
    /// A float column: bounds on the grid `2^-k`; each value contributes
    /// `round(clamp(x) 2^k)`, which stays within `[lo 2^k, hi 2^k]`.
    Float {
        /// The least value kept, a multiple of `2^-k`.
        lo: f64,
        /// The greatest value kept, a multiple of `2^-k`.
        hi: f64,
        /// The grid exponent.
        k: u32,
    },
}

/// The true sum of `column`'s values clamped as `clamp` says, over the rows where `pred` is
/// true (every row without one), in units of the grid, and the number of rows that
/// contributed (a value, and the predicate true). Missing values contribute nothing.
///
/// Internal: these numbers must only ever be used to add noise to.
pub fn sum_clamped(
    table: &Table,
    column: usize,
    pred: Option<&Predicate>,
    clamp: Clamp,
) -> (i128, u64) {
    over_selected(
        table,
        pred,
        || (0i128, 0u64),
        |total, seg, base, rows| {
            let (s, n) = sum_block(seg, column, base, rows, clamp);
            *total = (total.0.saturating_add(s), total.1 + n);
        },
        |a, b| (a.0.saturating_add(b.0), a.1 + b.1),
    )
}

/// The values of `column` clamped as `clamp` says, in grid steps, over the rows where
/// `pred` is true (every row without one) and the value is present, in no particular order.
/// Every row is visited, as for sums.
///
/// Internal: these values must only ever be used to add noise to a statistic of them.
pub fn clamped_values(
    table: &Table,
    column: usize,
    pred: Option<&Predicate>,
    clamp: Clamp,
) -> Vec<i128> {
    over_selected(
        table,
        pred,
        Vec::new,
        |out, seg, base, rows| block_values(seg, column, base, rows, clamp, out),
        |mut a, b| {
            a.extend(b);
            a
        },
    )
}

/// Folds `block` over every block of the table with the words of the rows where `pred` is
/// true (every row without one), segments in parallel.
fn over_selected<T: Send>(
    table: &Table,
    pred: Option<&Predicate>,
    identity: impl Fn() -> T + Sync + Send,
    block: impl Fn(&mut T, &Segment, usize, &[u64]) + Sync + Send,
    merge: impl Fn(T, T) -> T + Sync + Send,
) -> T {
    let node = pred.map(|p| compile(table, p));
    table
        .segments
        .par_iter()
        .map(|seg| {
            let mut scratch = Scratch::default();
            let mut total = identity();
            for b in 0..seg.len.div_ceil(BLOCK) {
                let (base, rows) = (b * BLOCK, BLOCK.min(seg.len - b * BLOCK));
                let words = rows.div_ceil(64);
                match &node {
                    Some(node) => {
                        scratch.truth.resize(words, 0);
                        scratch.known.resize(words, 0);
                        let here = Rows { seg, base, rows };
                        eval(
                            node,
                            &here,
                            &mut scratch.truth,
                            &mut scratch.known,
                            &mut scratch.pool,
                            &mut scratch.work,
                        );
                    }
                    None => {
                        scratch.truth.clear();
                        scratch.truth.resize(words, u64::MAX);
                        scratch.truth[words - 1] = low_mask(rows - (words - 1) * 64);
                    }
                }
                block(&mut total, seg, base, &scratch.truth);
            }
            total
        })
        .reduce(&identity, &merge)
}

/// The clamped sum over the rows of a block whose bit is set in `rows` and whose value is
/// present. Every row of the block is visited and its value clamped, the rows left out
/// adding zero: the work does not depend on how many rows the condition keeps.
fn sum_block(seg: &Segment, column: usize, base: usize, rows: &[u64], clamp: Clamp) -> (i128, u64) {
    let Some(col) = seg.columns.get(column) else {
        return (0, 0);
    };
    let scale = |k: u32| 2f64.powi(k as i32);
    let valid = col.valid.as_deref();
    let block = (base, rows, seg.len);
    match (&col.data, clamp) {
        (ColumnData::Integer(v), Clamp::Int { lo, hi, k }) => {
            small_sum(block, valid, v, (lo, hi, k)).unwrap_or_else(|| {
                masked_sum(block, valid, |r| i128::from(v.get(r).clamp(lo, hi)) << k)
            })
        }
        // A power of two scales exactly; the rounded value stays in the bounds. A missing
        // float cell may hold anything: a NaN rounds to 0 here, and its row is masked out.
        (ColumnData::Float(v), Clamp::Float { lo, hi, k }) => masked_sum(block, valid, |r| {
            (v[r].clamp(lo, hi) * scale(k)).round() as i128
        }),
        (ColumnData::Integer(v), Clamp::Float { lo, hi, k }) => masked_sum(block, valid, |r| {
            ((v.get(r) as f64).clamp(lo, hi) * scale(k)).round() as i128
        }),
        _ => (0, 0),
    }
}

/// Appends the clamped values, in grid steps, of the rows of a block whose bit is set in
/// `rows` and whose value is present, as [`sum_block`] reads them.
fn block_values(
    seg: &Segment,
    column: usize,
    base: usize,
    rows: &[u64],
    clamp: Clamp,
    out: &mut Vec<i128>,
) {
    let Some(col) = seg.columns.get(column) else {
        return;
    };
    let scale = |k: u32| 2f64.powi(k as i32);
    let valid = col.valid.as_deref();
    let end = seg.len.min(base + rows.len() * 64);
    let mut each = |steps: &dyn Fn(usize) -> i128| {
        for (w, &word) in rows.iter().enumerate() {
            let bits = word & valid.map_or(u64::MAX, |v| v[base / 64 + w]);
            let start = base + w * 64;
            for r in start..end.min(start + 64) {
                if (bits >> (r - start)) & 1 == 1 {
                    out.push(steps(r));
                }
            }
        }
    };
    match (&col.data, clamp) {
        (ColumnData::Integer(v), Clamp::Int { lo, hi, k }) => {
            each(&|r| i128::from(v.get(r).clamp(lo, hi)) << k)
        }
        (ColumnData::Float(v), Clamp::Float { lo, hi, k }) => {
            each(&|r| (v[r].clamp(lo, hi) * scale(k)).round() as i128)
        }
        (ColumnData::Integer(v), Clamp::Float { lo, hi, k }) => {
            each(&|r| ((v.get(r) as f64).clamp(lo, hi) * scale(k)).round() as i128)
        }
        _ => {}
    }
}

/// [`sum_block`]'s integer sum when a block's clamped values add up in an `i64`: bounds whose
/// size times the block's rows stays below `2^63`, and a grid exponent of at most 63. Then
/// the sum of the values shifted by `k` is the shifted sum, exactly, and no partial sum comes
/// near `i128`'s range, so the answer is [`masked_sum`]'s to the last unit; the lanes are
/// read at their width with no conversion to 128 bits a row. Every row is visited, a row left
/// out adding its value masked to zero. `None` when the bounds are too wide.
fn small_sum(
    (base, rows, len): (usize, &[u64], usize),
    valid: Option<&[u64]>,
    v: &Ints,
    (lo, hi, k): (i64, i64, u32),
) -> Option<(i128, u64)> {
    let size = lo.unsigned_abs().max(hi.unsigned_abs());
    let fits = size
        .checked_mul(rows.len() as u64 * 64)
        .is_some_and(|m| m < 1 << 63);
    if !fits || k > 63 {
        return None;
    }
    let end = len.min(base + rows.len() * 64);
    let mut sum = 0i64;
    let mut n = 0u64;
    on_lanes!(&v.lanes, lanes => {
        for (w, &word) in rows.iter().enumerate() {
            let bits = word & valid.map_or(u64::MAX, |v| v[base / 64 + w]);
            let start = base + w * 64;
            let stop = end.min(start + 64);
            for (i, lane) in lanes[start..stop].iter().enumerate() {
                let take = (bits >> i) & 1;
                let x = v.min.wrapping_add(lane.to_u64() as i64).clamp(lo, hi);
                sum += x & (take as i64).wrapping_neg();
                n += take;
            }
        }
    });
    Some((i128::from(sum) << k, n))
}

/// The sum of `steps(r)` over the rows `r` of a block (`base`, its words `rows`, and the
/// segment's length) whose bit is set in `rows` and in `valid`, and their number. Every row
/// is visited: a row left out adds `0 * steps(r)`, without a branch.
#[inline]
fn masked_sum(
    (base, rows, len): (usize, &[u64], usize),
    valid: Option<&[u64]>,
    steps: impl Fn(usize) -> i128,
) -> (i128, u64) {
    let end = len.min(base + rows.len() * 64);
    let mut sum = 0i128;
    let mut n = 0u64;
    for (w, &word) in rows.iter().enumerate() {
        let bits = word & valid.map_or(u64::MAX, |v| v[base / 64 + w]);
        let start = base + w * 64;
        for r in start..end.min(start + 64) {
            let take = (bits >> (r - start)) & 1;
            sum = sum.saturating_add(steps(r) * i128::from(take));
            n += take;
        }
    }
    (sum, n)
}

#[cfg(test)]
mod tests {
    use super::super::lanes::{cmp_exact as exact, IntBuilder};
    use super::super::table::SegmentColumn;
    use super::*;
    use std::cmp::Ordering;

    /// A one-column integer table of one segment per list of cells (`None` is missing),
    /// each built as the loader builds it.
    fn table(segments: &[Vec<Option<i64>>]) -> Table {
        let segments = segments
            .iter()
            .map(|cells| {
                let mut b = IntBuilder::default();
                let mut valid = vec![0u64; cells.len().div_ceil(64)];
                for (i, c) in cells.iter().enumerate() {
                    match c {
                        Some(x) => {
                            b.push(*x);
                            valid[i / 64] |= 1 << (i % 64);
                        }
                        None => b.push_missing(),
                    }
                }
                let all = cells.iter().all(Option::is_some);
                Segment {
                    len: cells.len(),
                    columns: vec![SegmentColumn {
                        data: ColumnData::Integer(b.finish()),
                        valid: (!all).then_some(valid),
                    }],
                }
            })
            .collect::<Vec<_>>();
        Table {
            names: vec!["x".to_string()],
            types: vec![ColumnType::Integer],
            dictionaries: vec![Dictionary::default()],
            n_rows: segments.iter().map(|s| s.len as u64).sum(),
            segments,
        }
    }

    /// The rows where `holds` is true of the cell (missing cells are unknown: never counted).
    fn reference(segments: &[Vec<Option<i64>>], holds: impl Fn(i64) -> bool) -> u64 {
        segments
            .iter()
            .flatten()
            .flatten()
            .filter(|&&x| holds(x))
            .count() as u64
    }

    /// Literals at, between and beyond the edges of a segment from `lo` to `hi`, and
    /// beyond any integer.
    fn literals(lo: i64, hi: i64) -> Vec<f64> {
        let mut out = vec![
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e19,
            -1e19,
            2f64.powi(63),
            -(2f64.powi(63)),
            9_223_372_036_854_774_784.0,
            0.0,
            -0.5,
        ];
        for e in [lo, hi] {
            for d in [-257i64, -256, -1, 0, 1, 255, 256, 65_536] {
                if let Some(v) = e.checked_add(d) {
                    out.push(v as f64);
                    out.push(v as f64 + 0.5);
                    out.push(v as f64 - 0.25);
                }
            }
        }
        out
    }

    /// The block sum at the lanes' width equals the 128-bit one to the last unit, wherever it
    /// is taken: segments of each width (one spanning all of `i64`), with and without missing
    /// cells, rows kept in patterns, bounds up to the largest it takes and grid exponents up
    /// to 63; and it declines bounds whose block sum could leave an `i64`.
    #[test]
    fn the_narrow_block_sum_is_the_wide_one() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let spans: [(i64, u64); 5] = [
            (-100, 200),
            (-40_000, 60_000),
            (7, 1 << 31),
            (i64::MIN, u64::MAX),
            (-5, 0),
        ];
        for (min, span) in spans {
            for missing in [false, true] {
                let cells: Vec<Option<i64>> = (0..BLOCK + 300)
                    .map(|i| {
                        let x = min.wrapping_add((next() % span.max(1)) as i64);
                        let x = if i == 3 {
                            min.wrapping_add(span as i64)
                        } else {
                            x
                        };
                        (!(missing && next() % 5 == 0)).then_some(x)
                    })
                    .collect();
                let t = table(&[cells]);
                let seg = &t.segments[0];
                let ColumnData::Integer(v) = &seg.columns[0].data else {
                    unreachable!()
                };
                let valid = seg.columns[0].valid.as_deref();
                let edge = (1i64 << (63 - 14)) - 1;
                for (lo, hi) in [
                    (0, 100),
                    (-50, 50),
                    (-edge, edge),
                    (i64::MIN / 4, i64::MAX / 4),
                    (3, 3),
                ] {
                    for k in [0, 1, 20, 63] {
                        for b in 0..seg.len.div_ceil(BLOCK) {
                            let base = b * BLOCK;
                            let rows: Vec<u64> = (0..BLOCK.min(seg.len - base).div_ceil(64))
                                .map(|w| match w % 3 {
                                    0 => u64::MAX,
                                    1 => next(),
                                    _ => 0,
                                })
                                .collect();
                            let block = (base, &rows[..], seg.len);
                            let wide = masked_sum(block, valid, |r| {
                                i128::from(v.get(r).clamp(lo, hi)) << k
                            });
                            match small_sum(block, valid, v, (lo, hi, k)) {
                                Some(narrow) => {
                                    assert_eq!(narrow, wide, "{min} {span} {lo} {hi} {k}")
                                }
                                None => assert_eq!((lo, hi), (i64::MIN / 4, i64::MAX / 4)),
                            }
                        }
                    }
                }
            }
        }
    }

    /// Every comparison, `NOT` of it, `BETWEEN` and `IN` with literals around each segment's
    /// edges give the reference count: one segment per width, at its exact edges, with
    /// missing cells, and one that spans all of `i64`.
    #[test]
    fn narrow_segments_compare_exactly_at_their_edges() {
        let mut segments = Vec::new();
        for (lo, span) in [
            (-100i64, 255u64),
            (1_000, 256),
            (-40_000, 65_535),
            (70_000, 65_536),
            (-5, u64::from(u32::MAX)),
            (i64::MIN, u64::from(u32::MAX) + 1),
            (i64::MAX - 255, 255),
        ] {
            let hi = lo + span as i64;
            let mid = lo + (span / 3) as i64;
            segments.push(vec![
                Some(lo),
                None,
                Some(hi),
                Some(mid),
                Some(hi),
                None,
                Some(lo + 1),
            ]);
        }
        segments.push(vec![
            Some(i64::MIN),
            Some(0),
            None,
            Some(i64::MAX),
            Some(-1),
        ]);
        segments.push(vec![None, None]);
        let t = table(&segments);
        let widths: Vec<u64> = t
            .segments
            .iter()
            .map(|s| match &s.columns[0].data {
                ColumnData::Integer(ints) => ints.lanes.max(),
                _ => 0,
            })
            .collect();
        let m8 = u64::from(u8::MAX);
        let (m16, m32) = (u64::from(u16::MAX), u64::from(u32::MAX));
        assert_eq!(widths, [m8, m16, m16, m32, m32, u64::MAX, m8, u64::MAX, m8]);
        let mut lits: Vec<f64> = Vec::new();
        for s in &segments {
            let values: Vec<i64> = s.iter().flatten().copied().collect();
            if let (Some(lo), Some(hi)) = (values.iter().min(), values.iter().max()) {
                lits.extend(literals(*lo, *hi));
            }
        }
        let n = Value::Number;
        for &v in &lits {
            for op in CmpOp::ALL {
                let p = Predicate::Compare {
                    column: 0,
                    op,
                    value: n(v),
                };
                let want = reference(&segments, |x| match exact(x, v) {
                    None => op == CmpOp::Ne,
                    Some(o) => op.holds(o),
                });
                assert_eq!(count(&t, &p), want, "x {op:?} {v}");
                let not_want = reference(&segments, |x| match exact(x, v) {
                    None => op != CmpOp::Ne,
                    Some(o) => !op.holds(o),
                });
                assert_eq!(
                    count(&t, &Predicate::Not(Box::new(p))),
                    not_want,
                    "NOT x {op:?} {v}"
                );
            }
        }
        for (i, &a) in lits.iter().enumerate().step_by(3) {
            for &b in lits.iter().skip(i % 7).step_by(5) {
                let p = Predicate::Between {
                    column: 0,
                    low: n(a),
                    high: n(b),
                };
                let want = reference(&segments, |x| {
                    matches!(exact(x, a), Some(Ordering::Greater | Ordering::Equal))
                        && matches!(exact(x, b), Some(Ordering::Less | Ordering::Equal))
                });
                assert_eq!(count(&t, &p), want, "x BETWEEN {a} AND {b}");
                let set = vec![n(a), n(b), n(a + 1.0)];
                let p = Predicate::In {
                    column: 0,
                    values: set.clone(),
                };
                let want = reference(&segments, |x| {
                    [a, b, a + 1.0]
                        .iter()
                        .any(|v| exact(x, *v) == Some(Ordering::Equal))
                });
                assert_eq!(count(&t, &p), want, "x IN {set:?}");
            }
        }
    }

    #[test]
    fn bytes_pack_into_bits_in_order() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..200 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut bytes = [0u8; 64];
            for (i, b) in bytes.iter_mut().enumerate() {
                *b = u8::from(x >> i & 1 == 1);
            }
            assert_eq!(pack(&bytes), x);
        }
        assert_eq!(pack(&[1; 64]), u64::MAX);
        assert_eq!(pack(&[0; 64]), 0);
    }

    /// A range that misses or covers a whole segment reads no cell, and still counts only
    /// the cells with a value.
    #[test]
    fn whole_segments_are_decided_by_their_bounds() {
        let segments = vec![
            (0..300)
                .map(|i| (i % 7 != 0).then_some(i))
                .collect::<Vec<_>>(),
            (1_000..1_100).map(Some).collect(),
        ];
        let t = table(&segments);
        let le = |v: f64| Predicate::Compare {
            column: 0,
            op: CmpOp::Le,
            value: Value::Number(v),
        };
        let with_values = 300 - 300usize.div_ceil(7) as u64;
        assert_eq!(count(&t, &le(299.0)), with_values);
        assert_eq!(count(&t, &le(999.5)), with_values);
        assert_eq!(count(&t, &le(1_099.0)), with_values + 100);
        assert_eq!(
            count(&t, &Predicate::Not(Box::new(le(-1.0)))),
            with_values + 100
        );
        assert_eq!(count(&t, &le(-1.0)), 0);
    }
}
