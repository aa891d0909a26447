//! Row groups a condition cannot be true on, from a Parquet footer's statistics alone.
//!
//! A row group's statistics give, per column, bounds on its present values and how many are
//! missing. A condition is asked of those bounds under dpq's three-valued rule: whether some
//! row *could* make it true, and whether some row could make it false (which `NOT` needs).
//! The answer over-approximates: "could" whenever the bounds do not rule a row out, and
//! always when a column has no usable statistics. A group where the condition can be true on
//! no row adds nothing to a count or a sum, so skipping it leaves the answer exact.
//!
//! Only statistics whose order is the order dpq compares in are used: signed integers up to
//! 2^53 in magnitude (compared exactly as doubles), doubles and floats whose bounds are not
//! NaN (a NaN, like an infinity, is a missing value in dpq and lies outside any bound anyway),
//! booleans, and strings in the unsigned byte order of their UTF-8 (bounds a writer has
//! truncated are still bounds). Unsigned integers, decimals, dates and times, and the old
//! signed-order statistics of strings are never used.

use std::cmp::Ordering;

use super::predicate::{CmpOp, Predicate, Value};

/// What a row group's statistics say of one column's values.
#[derive(Debug, Clone, PartialEq)]
pub enum Bounds {
    /// Nothing usable: any value may be there.
    Unknown,
    /// Every value is missing.
    AllMissing,
    /// The present values lie in `[lo, hi]` (a boolean as 0 or 1).
    Number(f64, f64),
    /// The present values lie between these byte strings.
    Text(Vec<u8>, Vec<u8>),
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
        // Compared as dpq compares cells: -0 equals 0, and a NaN anywhere decides nothing.
        (Bounds::Number(lo, hi), Value::Number(v)) => {
            match (lo.partial_cmp(v), hi.partial_cmp(v)) {
                (Some(l), Some(h)) => (l, h),
                _ => return ANY,
            }
        }
        (Bounds::Number(lo, hi), Value::Bool(b)) => {
            let v = f64::from(u8::from(*b));
            match (lo.partial_cmp(&v), hi.partial_cmp(&v)) {
                (Some(l), Some(h)) => (l, h),
                _ => return ANY,
            }
        }
        (Bounds::Text(lo, hi), Value::Text(v)) => (
            lo.as_slice().cmp(v.as_bytes()),
            hi.as_slice().cmp(v.as_bytes()),
        ),
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
        let b = |_: usize| Bounds::Number(10.0, 20.0);
        let n = Value::Number;
        assert!(never_true(&cmp(0, CmpOp::Gt, n(20.0)), &b));
        assert!(!never_true(&cmp(0, CmpOp::Ge, n(20.0)), &b));
        assert!(never_true(&cmp(0, CmpOp::Lt, n(10.0)), &b));
        assert!(never_true(&cmp(0, CmpOp::Eq, n(9.5)), &b));
        assert!(!never_true(&cmp(0, CmpOp::Ne, n(15.0)), &b));
        let one = |_: usize| Bounds::Number(7.0, 7.0);
        assert!(never_true(&cmp(0, CmpOp::Ne, n(7.0)), &one));
        // NOT (x <= 20) is true on no row: every present x is <= 20, and a missing one is unknown.
        let not = Predicate::Not(Box::new(cmp(0, CmpOp::Le, n(20.0))));
        assert!(never_true(&not, &b));
        // A NaN literal is left to the scan.
        assert!(!never_true(&cmp(0, CmpOp::Gt, n(f64::NAN)), &b));
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
        let b = |_: usize| Bounds::Text(b"b".to_vec(), b"d".to_vec());
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
                Bounds::Number(0.0, 5.0)
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
