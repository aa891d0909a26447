//! Row groups a condition cannot be true on, from bounds on their values.
//!
//! A row group's bounds give, per column, the least and greatest of its present values as dpq
//! reads them, or that every value is missing. They are dpq's own, taken when it read the
//! group whole ([`Bounds::of`]), never a file's footer statistics: a writer may get those
//! wrong, or describe values that read as something else (an `INT(8)` column storing 300
//! reads as 44), and a count that skipped on them would be wrong, and by a number that one
//! row could change. A condition is asked of the bounds under dpq's three-valued rule: whether
//! some row *could* make it true, and whether some row could make it false (which `NOT`
//! needs). The answer over-approximates: "could" whenever the bounds do not rule a row out,
//! and always when a column's bounds are unknown or a literal is of another kind than the
//! column. A group where the condition can be true on no row adds nothing to a count or a
//! sum, so skipping it leaves the answer exact.

use std::cmp::Ordering;

use super::lanes::cmp_exact;
use super::predicate::{CmpOp, Predicate, Value};
use super::table::{ColumnData, Table};

/// What dpq knows of one column's values in a row group.
#[derive(Debug, Clone, PartialEq)]
pub enum Bounds {
    /// Nothing: any value may be there.
    Unknown,
    /// Every value is missing.
    AllMissing,
    /// Integers in `[lo, hi]`, compared exactly with any number.
    Int(i64, i64),
    /// Floats in `[lo, hi]` (never NaN).
    Float(f64, f64),
    /// Booleans between these (`false < true`).
    Bool(bool, bool),
    /// Text between these, in UTF-8 byte order.
    Text(String, String),
}

impl Bounds {
    /// The bounds of column `c` of a table of one segment, as the column store holds it.
    ///
    /// Integers and text take no pass over the cells: a segment's integers are stored as
    /// offsets from a base at most every value, within a span at least every offset (the
    /// base and span [`Ints::from_values`](super::lanes::Ints::from_values) found in the pass
    /// that converted them), and its text codes index a sorted dictionary that holds every
    /// value present. Both bound the values, which is all skipping needs: bounds wider than
    /// the values skip less, never wrongly.
    pub(crate) fn of(table: &Table, c: usize) -> Bounds {
        let Some(segment) = table.segments.first() else {
            return Bounds::AllMissing;
        };
        let column = &segment.columns[c];
        let present = |i: usize| {
            column
                .valid
                .as_ref()
                .is_none_or(|v| super::bitmap::get(v, i))
        };
        let any = segment.len > 0
            && column
                .valid
                .as_ref()
                .is_none_or(|v| v.iter().any(|&w| w != 0));
        if !any {
            return Bounds::AllMissing;
        }
        match &column.data {
            ColumnData::Integer(v) => {
                let hi = i128::from(v.min) + i128::from(v.max_off);
                Bounds::Int(v.min, i64::try_from(hi).unwrap_or(i64::MAX))
            }
            ColumnData::Float(v) => {
                let mut found: Option<(f64, f64)> = None;
                for (i, &x) in v.iter().enumerate().take(segment.len) {
                    if !present(i) {
                        continue;
                    }
                    if x.is_nan() {
                        return Bounds::Unknown;
                    }
                    found = Some(found.map_or((x, x), |(lo, hi)| (lo.min(x), hi.max(x))));
                }
                found.map_or(Bounds::AllMissing, |(lo, hi)| Bounds::Float(lo, hi))
            }
            ColumnData::Boolean(bits) => {
                let values = (0..segment.len)
                    .filter(|&i| present(i))
                    .map(|i| super::bitmap::get(bits, i));
                let (mut any_false, mut any_true) = (false, false);
                for b in values {
                    any_false |= !b;
                    any_true |= b;
                }
                match (any_false, any_true) {
                    (false, false) => Bounds::AllMissing,
                    (lo_false, _) => Bounds::Bool(!lo_false, any_true),
                }
            }
            ColumnData::Text(_) => {
                let dictionary = &table.dictionaries[c];
                match dictionary.len() {
                    0 => Bounds::Unknown,
                    n => Bounds::Text(
                        dictionary.get(0).to_string(),
                        dictionary.get(n - 1).to_string(),
                    ),
                }
            }
        }
    }

    /// Bounds holding the values of both.
    pub(crate) fn union(self, other: Bounds) -> Bounds {
        use Bounds as B;
        match (self, other) {
            (B::AllMissing, x) | (x, B::AllMissing) => x,
            (B::Int(a, b), B::Int(c, d)) => B::Int(a.min(c), b.max(d)),
            (B::Float(a, b), B::Float(c, d)) => B::Float(a.min(c), b.max(d)),
            (B::Bool(a, b), B::Bool(c, d)) => B::Bool(a && c, b || d),
            (B::Text(a, b), B::Text(c, d)) => B::Text(a.min(c), b.max(d)),
            _ => B::Unknown,
        }
    }
}

/// Whether some row could make a condition true, and whether some row could make it false.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Could {
    truth: bool,
    falsity: bool,
}

const ANY: Could = Could {
    truth: true,
    falsity: true,
};

/// Whether `pred` can be true on no row of a group whose columns have the bounds `bounds`
/// gives.
pub fn never_true(pred: &Predicate, bounds: &impl Fn(usize) -> Bounds) -> bool {
    !could(pred, bounds).truth
}

fn could(pred: &Predicate, bounds: &impl Fn(usize) -> Bounds) -> Could {
    match pred {
        Predicate::Compare { column, op, value } => compare(&bounds(*column), *op, value),
        Predicate::In { column, values } => {
            let b = bounds(*column);
            if b == Bounds::AllMissing {
                return Could {
                    truth: false,
                    falsity: false,
                };
            }
            Could {
                truth: values.iter().any(|v| compare(&b, CmpOp::Eq, v).truth),
                falsity: true,
            }
        }
        Predicate::Between { column, low, high } => {
            let b = bounds(*column);
            let above = compare(&b, CmpOp::Ge, low);
            let below = compare(&b, CmpOp::Le, high);
            Could {
                truth: above.truth && below.truth,
                falsity: above.falsity || below.falsity,
            }
        }
        Predicate::And(a, b) => {
            let (a, b) = (could(a, bounds), could(b, bounds));
            Could {
                truth: a.truth && b.truth,
                falsity: a.falsity || b.falsity,
            }
        }
        Predicate::Or(a, b) => {
            let (a, b) = (could(a, bounds), could(b, bounds));
            Could {
                truth: a.truth || b.truth,
                falsity: a.falsity && b.falsity,
            }
        }
        Predicate::Not(a) => {
            let a = could(a, bounds);
            Could {
                truth: a.falsity,
                falsity: a.truth,
            }
        }
    }
}

/// The operator that holds exactly where `op` fails, on a present value.
fn negated(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Eq => CmpOp::Ne,
        CmpOp::Ne => CmpOp::Eq,
        CmpOp::Lt => CmpOp::Ge,
        CmpOp::Le => CmpOp::Gt,
        CmpOp::Gt => CmpOp::Le,
        CmpOp::Ge => CmpOp::Lt,
    }
}

/// Whether some value `x` in `[lo, hi]` has `x op v`, given how `lo` and `hi` compare with `v`.
fn some_holds(op: CmpOp, lo: Ordering, hi: Ordering) -> bool {
    use Ordering::{Equal, Greater, Less};
    match op {
        CmpOp::Eq => lo != Greater && hi != Less,
        CmpOp::Ne => !(lo == Equal && hi == Equal),
        CmpOp::Lt => lo == Less,
        CmpOp::Le => lo != Greater,
        CmpOp::Gt => hi == Greater,
        CmpOp::Ge => hi != Less,
    }
}

fn compare(bounds: &Bounds, op: CmpOp, value: &Value) -> Could {
    let (lo, hi) = match (bounds, value) {
        (Bounds::AllMissing, _) => {
            return Could {
                truth: false,
                falsity: false,
            }
        }
        // Compared as the column store compares cells: integers exactly with any number,
        // floats with -0 equal to 0; a NaN literal decides nothing.
        (Bounds::Int(lo, hi), Value::Number(v)) => match (cmp_exact(*lo, *v), cmp_exact(*hi, *v)) {
            (Some(l), Some(h)) => (l, h),
            _ => return ANY,
        },
        (Bounds::Float(lo, hi), Value::Number(v)) => match (lo.partial_cmp(v), hi.partial_cmp(v)) {
            (Some(l), Some(h)) => (l, h),
            _ => return ANY,
        },
        (Bounds::Bool(lo, hi), Value::Bool(v)) => (lo.cmp(v), hi.cmp(v)),
        (Bounds::Text(lo, hi), Value::Text(v)) => (
            lo.as_bytes().cmp(v.as_bytes()),
            hi.as_bytes().cmp(v.as_bytes()),
        ),
        // A literal of another kind than the column is left to the scan.
        _ => return ANY,
    };
    Could {
        truth: some_holds(op, lo, hi),
        falsity: some_holds(negated(op), lo, hi),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmp(column: usize, op: CmpOp, value: Value) -> Predicate {
        Predicate::Compare { column, op, value }
    }

    #[test]
    fn bounds_rule_out_what_no_value_in_them_meets() {
        let b = |_: usize| Bounds::Int(10, 20);
        let n = Value::Number;
        assert!(never_true(&cmp(0, CmpOp::Gt, n(20.0)), &b));
        assert!(!never_true(&cmp(0, CmpOp::Ge, n(20.0)), &b));
        assert!(never_true(&cmp(0, CmpOp::Lt, n(10.0)), &b));
        assert!(never_true(&cmp(0, CmpOp::Eq, n(9.5)), &b));
        assert!(!never_true(&cmp(0, CmpOp::Ne, n(15.0)), &b));
        let one = |_: usize| Bounds::Float(7.0, 7.0);
        assert!(never_true(&cmp(0, CmpOp::Ne, n(7.0)), &one));
        // NOT (x <= 20) is true on no row: every present x is <= 20, and a missing one is unknown.
        let not = Predicate::Not(Box::new(cmp(0, CmpOp::Le, n(20.0))));
        assert!(never_true(&not, &b));
        // A NaN literal, and a literal of another kind, are left to the scan.
        assert!(!never_true(&cmp(0, CmpOp::Gt, n(f64::NAN)), &b));
        let not_true = Predicate::Not(Box::new(cmp(0, CmpOp::Gt, Value::Bool(true))));
        assert!(!never_true(&not_true, &b));
        // Integers compare exactly with fractions and beyond 2^53.
        assert!(never_true(&cmp(0, CmpOp::Lt, n(9.5)), &b));
        assert!(!never_true(&cmp(0, CmpOp::Lt, n(10.5)), &b));
        let big = |_: usize| Bounds::Int((1 << 53) + 1, (1 << 53) + 1);
        assert!(!never_true(&cmp(0, CmpOp::Gt, n(9007199254740992.0)), &big));
    }

    #[test]
    fn a_column_of_missing_values_is_neither_true_nor_false() {
        let b = |_: usize| Bounds::AllMissing;
        let p = cmp(0, CmpOp::Gt, Value::Number(1.0));
        assert!(never_true(&p, &b));
        assert!(never_true(&Predicate::Not(Box::new(p)), &b));
    }

    #[test]
    fn unknown_bounds_never_skip() {
        let b = |_: usize| Bounds::Unknown;
        let p = cmp(0, CmpOp::Eq, Value::Text("x".into()));
        assert!(!never_true(&p, &b));
        assert!(!never_true(&Predicate::Not(Box::new(p)), &b));
    }

    #[test]
    fn text_bounds_in_byte_order() {
        let b = |_: usize| Bounds::Text("b".into(), "d".into());
        let t = |s: &str| Value::Text(s.into());
        assert!(never_true(&cmp(0, CmpOp::Eq, t("a")), &b));
        assert!(!never_true(&cmp(0, CmpOp::Eq, t("c")), &b));
        assert!(never_true(&cmp(0, CmpOp::Gt, t("d")), &b));
        // "É" (0xC3...) sorts after every ASCII letter in bytes.
        assert!(never_true(&cmp(0, CmpOp::Ge, t("É")), &b));
        let between = Predicate::Between {
            column: 0,
            low: t("e"),
            high: t("z"),
        };
        assert!(never_true(&between, &b));
        let within = Predicate::In {
            column: 0,
            values: vec![t("a"), t("e")],
        };
        assert!(never_true(&within, &b));
    }

    #[test]
    fn and_or_not_combine_under_three_valued_logic() {
        let b = |c: usize| {
            if c == 0 {
                Bounds::Int(0, 5)
            } else {
                Bounds::Unknown
            }
        };
        let out = cmp(0, CmpOp::Gt, Value::Number(9.0));
        let any = cmp(1, CmpOp::Eq, Value::Number(1.0));
        let and = Predicate::And(Box::new(out.clone()), Box::new(any.clone()));
        let or = Predicate::Or(Box::new(out.clone()), Box::new(any.clone()));
        assert!(never_true(&and, &b));
        assert!(!never_true(&or, &b));
        // NOT (out AND any): out is false on every present row, so it can be true.
        assert!(!never_true(&Predicate::Not(Box::new(and)), &b));
    }
}
