//! Row predicates over column indices: the resolved form of a `WHERE` clause that `count` evaluates.

/// A literal in a predicate (from the query, never from the data).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A number, compared with integer and float columns.
    Number(f64),
    /// A string, compared with text columns by UTF-8 byte order.
    Text(String),
    /// A boolean, compared with boolean columns (`false < true`).
    Bool(bool),
}

/// A comparison operator: `=`, `!=` (or `<>`), `<`, `<=`, `>`, `>=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    /// `=`
    Eq,
    /// `!=` or `<>`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl CmpOp {
    /// Every operator: `=`, `!=`, `<`, `<=`, `>`, `>=`.
    pub const ALL: [CmpOp; 6] = [
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
    ];

    /// Applies the operator to an ordering of the cell against the literal.
    pub fn holds(self, ord: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::{Equal, Greater, Less};
        match self {
            CmpOp::Eq => ord == Equal,
            CmpOp::Ne => ord != Equal,
            CmpOp::Lt => ord == Less,
            CmpOp::Le => ord != Greater,
            CmpOp::Gt => ord == Greater,
            CmpOp::Ge => ord != Less,
        }
    }
}

/// A condition on a row, under three-valued (Kleene) logic.
///
/// A comparison, `IN` or `BETWEEN` on a missing cell is unknown; `NOT` unknown is unknown;
/// `AND` is false when either side is false, `OR` is true when either side is true, and
/// unknown otherwise when a side is unknown. `count` counts the rows where it is true, so
/// `age < 30 OR NOT age < 30` leaves out the rows where `age` is missing.
///
/// A literal whose type does not fit the column (which the checker prevents) makes the
/// comparison false on every row with a value. A column index out of range makes it false
/// on every row.
#[derive(Debug, Clone, PartialEq)]
pub enum Predicate {
    /// `column op value`, e.g. `age <= 30`.
    Compare {
        /// Column index in the table.
        column: usize,
        /// The operator.
        op: CmpOp,
        /// The literal on the right.
        value: Value,
    },
    /// `column IN (v1, v2, ...)`: true when the cell equals any of the values.
    In {
        /// Column index in the table.
        column: usize,
        /// The listed literals.
        values: Vec<Value>,
    },
    /// `column BETWEEN low AND high`, inclusive at both ends.
    Between {
        /// Column index in the table.
        column: usize,
        /// Lower bound, inclusive.
        low: Value,
        /// Upper bound, inclusive.
        high: Value,
    },
    /// `a AND b`
    And(Box<Predicate>, Box<Predicate>),
    /// `a OR b`
    Or(Box<Predicate>, Box<Predicate>),
    /// `NOT a`
    Not(Box<Predicate>),
}

impl Predicate {
    /// The columns the predicate reads, each once, in increasing order.
    pub fn columns(&self) -> Vec<usize> {
        fn walk(p: &Predicate, out: &mut Vec<usize>) {
            match p {
                Predicate::Compare { column, .. }
                | Predicate::In { column, .. }
                | Predicate::Between { column, .. } => out.push(*column),
                Predicate::And(a, b) | Predicate::Or(a, b) => {
                    walk(a, out);
                    walk(b, out);
                }
                Predicate::Not(a) => walk(a, out),
            }
        }
        let mut out = Vec::new();
        walk(self, &mut out);
        out.sort_unstable();
        out.dedup();
        out
    }
}
