//! The SQL dpq sends to a database engine (PostgreSQL, Spark), written once: conditions, the
//! cell of a cube a row falls in, and a value clamped and put on the grid of a sum. Every
//! literal is a bound parameter; a column is named only as the engine quotes it.
//!
//! SQL's three-valued logic is dpq's: a comparison with a missing value (NULL) is unknown,
//! `NOT` of unknown is unknown, and `WHERE` and `FILTER` count the rows where the condition
//! is true.

use super::cells::Buckets;
use super::predicate::{CmpOp, Predicate, Value};
use super::table::ColumnType;

/// A bound parameter's value.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Param {
    Int(i64),
    Float(f64),
    Text(String),
    Bool(bool),
}

/// What differs between engines: how a parameter and a column are written.
pub(super) trait Dialect {
    /// The placeholder of the `n`th parameter (from 1), whose value is `p`.
    fn placeholder(&self, n: usize, p: &Param) -> String;
    /// Column `c`, quoted.
    fn column(&self, c: usize) -> &str;
    /// Column `c` as a condition reads it: text in UTF-8 byte order, a decimal as the
    /// nearest float, as the column store reads them.
    fn operand(&self, c: usize) -> String;
    /// The type dpq reads column `c` as.
    fn column_type(&self, c: usize) -> ColumnType;
    /// `x`, a float whose magnitude is below `2^63`, truncated towards zero to an integer
    /// of 64 bits, exactly.
    fn truncated(&self, x: &str) -> String;
    /// `x`, an integer of 64 bits, as an exact decimal integer wide enough for a sum.
    fn wide(&self, x: &str) -> String;
}

/// An SQL statement under construction: its text and its bound parameters.
pub(super) struct Sql<'d, D: ?Sized> {
    pub(super) text: String,
    pub(super) params: Vec<Param>,
    dialect: &'d D,
}

impl<'d, D: Dialect + ?Sized> Sql<'d, D> {
    pub(super) fn new(dialect: &'d D) -> Self {
        Sql {
            text: String::new(),
            params: Vec::new(),
            dialect,
        }
    }

    /// Binds `p` and returns its placeholder.
    pub(super) fn param(&mut self, p: Param) -> String {
        let placeholder = self.dialect.placeholder(self.params.len() + 1, &p);
        self.params.push(p);
        placeholder
    }

    pub(super) fn push(&mut self, s: &str) {
        self.text.push_str(s);
    }

    /// Binds `value` and writes its placeholder.
    fn bind(&mut self, value: &Value) {
        let p = match value {
            Value::Number(x) => Param::Float(*x),
            Value::Text(s) => Param::Text(s.clone()),
            Value::Bool(b) => Param::Bool(*b),
        };
        let placeholder = self.param(p);
        self.push(&placeholder);
    }

    /// Writes `lo <= col <= hi` (negated when `negate`) for an integer column, the bounds
    /// integers as the column store computes them: an integer cell is compared as an
    /// integer, never rounded to a float (`9007199254740993 = 9007199254740992.0` is false).
    /// A missing value is unknown either way.
    fn int_range(&mut self, column: usize, lo: i128, hi: i128, negate: bool) {
        let col = self.dialect.column(column).to_string();
        let lo = lo.max(i128::from(i64::MIN));
        let hi = hi.min(i128::from(i64::MAX));
        // `col = col` is true for every value and unknown for a missing one.
        if lo > hi {
            let (always, never) = (format!("({col} = {col})"), format!("({col} <> {col})"));
            self.push(if negate { &always } else { &never });
            return;
        }
        let (lo, hi) = (
            self.param(Param::Int(lo as i64)),
            self.param(Param::Int(hi as i64)),
        );
        let not = if negate { "NOT " } else { "" };
        self.push(&format!("({not}({col} BETWEEN {lo} AND {hi}))"));
    }

    /// Writes a comparison of an integer column with a number.
    fn int_compare(&mut self, column: usize, op: CmpOp, v: f64) {
        if v.is_nan() {
            return self.int_range(column, 1, 0, op == CmpOp::Ne);
        }
        let (ceil, floor) = (v.ceil() as i128, v.floor() as i128);
        let (min, max) = (i128::MIN, i128::MAX);
        let (lo, hi, negate) = match op {
            CmpOp::Eq => (ceil, floor, false),
            CmpOp::Ne => (ceil, floor, true),
            CmpOp::Lt => (min, ceil.saturating_sub(1), false),
            CmpOp::Le => (min, floor, false),
            CmpOp::Gt => (floor.saturating_add(1), max, false),
            CmpOp::Ge => (ceil, max, false),
        };
        self.int_range(column, lo, hi, negate);
    }

    /// Writes `IN` over an integer column: only whole numbers within range can equal a cell.
    fn int_in(&mut self, column: usize, values: &[Value]) {
        let whole: Vec<i64> = values
            .iter()
            .filter_map(|v| match v {
                Value::Number(x)
                    if x.fract() == 0.0 && (i64::MIN as f64..i64::MAX as f64).contains(x) =>
                {
                    Some(*x as i64)
                }
                _ => None,
            })
            .collect();
        if whole.is_empty() {
            return self.int_range(column, 1, 0, false);
        }
        let col = self.dialect.column(column).to_string();
        self.push(&format!("({col} IN ("));
        for (i, x) in whole.into_iter().enumerate() {
            if i > 0 {
                self.push(", ");
            }
            let p = self.param(Param::Int(x));
            self.push(&p);
        }
        self.push("))");
    }

    /// Writes `pred` as an SQL condition.
    pub(super) fn condition(&mut self, pred: &Predicate) {
        let integer = |c: usize| self.dialect.column_type(c) == ColumnType::Integer;
        match pred {
            Predicate::Compare {
                column,
                op,
                value: Value::Number(v),
            } if integer(*column) => self.int_compare(*column, *op, *v),
            Predicate::Between {
                column,
                low: Value::Number(a),
                high: Value::Number(b),
            } if integer(*column) => {
                if a.is_nan() || b.is_nan() {
                    self.int_range(*column, 1, 0, false);
                } else {
                    self.int_range(*column, a.ceil() as i128, b.floor() as i128, false);
                }
            }
            Predicate::In { column, values } if integer(*column) => self.int_in(*column, values),
            Predicate::Compare { column, op, value } => {
                let operand = self.dialect.operand(*column);
                self.push(&format!("({operand} {} ", op_text(*op)));
                self.bind(value);
                self.push(")");
            }
            Predicate::In { column, values } => {
                let operand = self.dialect.operand(*column);
                self.push(&format!("({operand} IN ("));
                for (i, v) in values.iter().enumerate() {
                    if i > 0 {
                        self.push(", ");
                    }
                    self.bind(v);
                }
                self.push("))");
            }
            Predicate::Between { column, low, high } => {
                let operand = self.dialect.operand(*column);
                self.push(&format!("({operand} BETWEEN "));
                self.bind(low);
                self.push(" AND ");
                self.bind(high);
                self.push(")");
            }
            Predicate::And(a, b) | Predicate::Or(a, b) => {
                let word = if matches!(pred, Predicate::And(..)) {
                    " AND "
                } else {
                    " OR "
                };
                self.push("(");
                self.condition(a);
                self.push(word);
                self.condition(b);
                self.push(")");
            }
            Predicate::Not(a) => {
                self.push("(NOT ");
                self.condition(a);
                self.push(")");
            }
        }
    }

    /// One dimension's coordinate of a row, as an SQL expression (numbered as the column
    /// store's `count_cells` numbers them; a missing value is the last bucket).
    fn coordinate(&mut self, column: usize, buckets: &Buckets) {
        let col = self.dialect.operand(column);
        self.push(&format!(
            "(CASE WHEN {col} IS NULL THEN {}",
            buckets.len() - 1
        ));
        match buckets {
            Buckets::Cuts(cuts) => {
                let integer = self.dialect.column_type(column) == ColumnType::Integer;
                for (i, cut) in cuts.iter().enumerate().rev() {
                    if integer {
                        // An integer is at or above a cut `c` exactly when it is at or above
                        // `ceil(c)`, compared as integers (as the column store does).
                        let c = cut.ceil() as i128;
                        if c > i128::from(i64::MAX) {
                            continue;
                        }
                        let c = self.param(Param::Int(c.max(i128::from(i64::MIN)) as i64));
                        self.push(&format!(" WHEN {col} >= {c}"));
                    } else {
                        self.push(&format!(" WHEN {col} >= "));
                        self.bind(&Value::Number(*cut));
                    }
                    self.push(&format!(" THEN {}", i + 1));
                }
                self.push(" ELSE 0 END)");
            }
            Buckets::Values(values) => {
                for (i, v) in values.iter().enumerate() {
                    self.push(&format!(" WHEN {col} = "));
                    self.bind(v);
                    self.push(&format!(" THEN {i}"));
                }
                self.push(&format!(" ELSE {} END)", values.len()));
            }
        }
    }

    /// The number of a row's cell of the cube `dims`, as an SQL expression:
    /// `(0 + stride * coordinate ...)`.
    pub(super) fn cell(&mut self, dims: &[(usize, Buckets)]) {
        let mut stride: usize = dims.iter().map(|(_, b)| b.len()).product();
        self.push("(0");
        for (column, buckets) in dims {
            stride /= buckets.len();
            self.push(&format!(" + {stride} * "));
            self.coordinate(*column, buckets);
        }
        self.push(")");
    }

    /// `y`, a float whose magnitude is below `2^40`, rounded half away from zero to an
    /// integer exactly, as `rounded` does, as a 64-bit integer: the lowest of `rounded`'s
    /// three parts alone. Only Spark's sums use it (PostgreSQL sums integers exactly
    /// whatever their width).
    #[cfg(feature = "spark")]
    pub(super) fn rounded_narrow(&mut self, y: &str) -> String {
        let half = self.param(Param::Float(0.5));
        let d = self.dialect;
        let m = format!("abs({y})");
        let q = d.truncated(&m);
        let bump = format!("(CASE WHEN {m} - {q} >= {half} THEN 1 ELSE 0 END)");
        format!("((CASE WHEN {y} < 0 THEN -1 ELSE 1 END) * ({q} + {bump}))")
    }

    /// `y`, a float whose magnitude is below `2^120` (the bounds of a sum keep it there),
    /// rounded half away from zero to an integer, exactly, as the column store rounds it
    /// (`f64::round`): as a wide decimal integer. No cast of a float to a decimal is used
    /// (an engine may go through the float's shortest decimal form, which is not its value),
    /// and no integer of 64 bits could hold the result: the magnitude is cut into three parts
    /// below `2^40`, each exact (a division by a power of two and the difference of two
    /// floats that share their high bits are exact), and put together as decimals.
    pub(super) fn rounded(&mut self, y: &str) -> String {
        let (p40, p80) = (1u64 << 40, 1u128 << 80);
        let f40 = self.param(Param::Float(p40 as f64));
        let f80 = self.param(Param::Float(p80 as f64));
        let half = self.param(Param::Float(0.5));
        let d = self.dialect;
        let m = format!("abs({y})");
        let q2 = d.truncated(&format!("({m} / {f80})"));
        let r1 = format!("({m} - {q2} * {f80})");
        let q1 = d.truncated(&format!("({r1} / {f40})"));
        let r0 = format!("({r1} - {q1} * {f40})");
        let q0 = d.truncated(&r0);
        let bump = format!("(CASE WHEN {r0} - {q0} >= {half} THEN 1 ELSE 0 END)");
        let (w2, w1, w0) = (
            d.wide(&q2),
            d.wide(&q1),
            d.wide(&format!("({q0} + {bump})")),
        );
        let (c80, c40) = (d.wide(&p80.to_string()), d.wide(&p40.to_string()));
        format!("((CASE WHEN {y} < 0 THEN -1 ELSE 1 END) * ({w2} * {c80} + {w1} * {c40} + {w0}))")
    }
}

/// `x` clamped to `[lo, hi]`, as a `CASE` (a foreign server is sent a `CASE`, never
/// `least`/`greatest`, which `postgres_fdw` does not ship); a missing `x` stays missing, and
/// a float `NaN`, above every number in SQL's order, becomes `hi`.
pub(super) fn clamped(x: &str, lo: &str, hi: &str) -> String {
    format!("(CASE WHEN {x} < {lo} THEN {lo} WHEN {x} > {hi} THEN {hi} ELSE {x} END)")
}

pub(super) fn op_text(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Eq => "=",
        CmpOp::Ne => "<>",
        CmpOp::Lt => "<",
        CmpOp::Le => "<=",
        CmpOp::Gt => ">",
        CmpOp::Ge => ">=",
    }
}
