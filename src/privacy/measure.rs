//! What a release measures in each cell of a cube: its rows (a count), the rows with a value
//! in a column (the count a mean divides by), or a column's values clamped to public bounds
//! (a sum). A release with a row over the cube is a linear query over one of these per-cell
//! vectors, so releases of one measure are evidence about each other and never about
//! another's.

use super::row::Row;
use super::Neighbours;
use rust_decimal::Decimal;
use std::fmt;

/// What a release measures in each cell.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Measure {
    /// The cell's rows: a count.
    #[default]
    Rows,
    /// The cell's rows with a value in `column`.
    Valued {
        /// The column.
        column: String,
    },
    /// The sum of `column`'s values in the cell, each clamped to `[lo, hi]`.
    Sum {
        /// The column.
        column: String,
        /// The lower bound, exact.
        lo: Decimal,
        /// The upper bound, exact.
        hi: Decimal,
    },
    /// A statistic of the table that is no linear count (a share, an order statistic): it
    /// is charged on every cell and is evidence about none.
    Statistic {
        /// What it is, e.g. `median of age clamped to [0, 120]`.
        what: String,
    },
}

impl Measure {
    /// The most one row moves the measure of its cell when it is added or removed: 1 for
    /// rows, `max(|lo|, |hi|)` for a clamped sum.
    pub fn row_weight(&self) -> Decimal {
        match self {
            Measure::Rows | Measure::Valued { .. } => Decimal::ONE,
            Measure::Sum { lo, hi, .. } => lo.abs().max(hi.abs()),
            Measure::Statistic { .. } => Decimal::ONE,
        }
    }

    /// The most one row moves the measure summed over any set of cells, under a model: its
    /// sensitivity with one row as the unit, for a release whose row is 1 on each cell it
    /// covers (or that has none). 1 for a count of rows or of rows with a value. A clamped
    /// sum moves by the row's value when a row is added or removed, `max(|lo|, |hi|)`; when one
    /// is replaced, from one value to another, where a row outside the condition or without a
    /// value counts 0: `max(hi, 0) - min(lo, 0)`, saturating at `Decimal::MAX` (the checker
    /// refuses such bounds). `None` for a statistic, which is no linear count.
    ///
    /// The checker computes a sum's noise from this and the ledger its Gaussian variance, so
    /// the two cannot differ.
    pub fn sensitivity(&self, model: Neighbours) -> Option<Decimal> {
        match (self, model) {
            (Measure::Rows | Measure::Valued { .. }, _) => Some(Decimal::ONE),
            (Measure::Sum { .. }, Neighbours::AddRemove) => Some(self.row_weight()),
            (Measure::Sum { lo, hi, .. }, Neighbours::Replace) => Some(
                hi.max(&Decimal::ZERO)
                    .saturating_sub(*lo.min(&Decimal::ZERO)),
            ),
            (Measure::Statistic { .. }, _) => None,
        }
    }

    /// Whether a row replaced by another in the same cell can move the measure: a count of
    /// rows never moves, while a value (or its absence) can change within a cell.
    pub fn moves_within_cells(&self) -> bool {
        !matches!(self, Measure::Rows)
    }

    /// The row a release of this measure with `row` over the cube charges, under a model.
    ///
    /// Under `add_remove` one row in cell `j` moves the release by `|h_j|` times the row's
    /// weight, so the row is charged with its coefficients scaled by that weight (its
    /// sensitivity scales with them, and each cell is charged `eps |h_j| w / (S w)`, as a
    /// count). Under `replace` a measure that moves within a cell is charged without a row:
    /// in full on every cell and pair, since the costs of pairs of cells (see
    /// `privacy::pairs`) only see rows that move between cells.
    pub fn charged_row(&self, row: &Row, model: Neighbours) -> Row {
        if row.is_empty() || self == &Measure::Rows {
            return row.clone();
        }
        if model == Neighbours::Replace {
            return Row::default();
        }
        row.scaled(self.row_weight()).unwrap_or_default()
    }

    /// The measure as the ledger writes it: `["sum", column, lo, hi]` or
    /// `["valued", column]`; nothing for rows.
    pub fn to_fields(&self) -> Option<Vec<String>> {
        match self {
            Measure::Rows => None,
            Measure::Valued { column } => Some(vec!["valued".into(), column.clone()]),
            Measure::Statistic { what } => Some(vec!["statistic".into(), what.clone()]),
            Measure::Sum { column, lo, hi } => Some(vec![
                "sum".into(),
                column.clone(),
                lo.normalize().to_string(),
                hi.normalize().to_string(),
            ]),
        }
    }

    /// The measure the ledger wrote, or `None` if it is malformed.
    pub fn from_fields<S: AsRef<str>>(fields: &[S]) -> Option<Self> {
        let f: Vec<&str> = fields.iter().map(AsRef::as_ref).collect();
        match f.as_slice() {
            ["valued", column] => Some(Measure::Valued {
                column: (*column).to_string(),
            }),
            ["statistic", what] => Some(Measure::Statistic {
                what: (*what).to_string(),
            }),
            ["sum", column, lo, hi] => {
                let (lo, hi): (Decimal, Decimal) = (lo.parse().ok()?, hi.parse().ok()?);
                (lo < hi).then(|| Measure::Sum {
                    column: (*column).to_string(),
                    lo,
                    hi,
                })
            }
            _ => None,
        }
    }
}

impl fmt::Display for Measure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Measure::Rows => f.write_str("rows"),
            Measure::Valued { column } => write!(f, "rows with a value of {column}"),
            Measure::Statistic { what } => f.write_str(what),
            Measure::Sum { column, lo, hi } => write!(
                f,
                "sum of {column} clamped to [{}, {}]",
                lo.normalize(),
                hi.normalize()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        s.parse().expect("a decimal")
    }

    fn sum(lo: &str, hi: &str) -> Measure {
        Measure::Sum {
            column: "income".into(),
            lo: d(lo),
            hi: d(hi),
        }
    }

    #[test]
    fn a_row_weighs_its_largest_bound() {
        assert_eq!(Measure::Rows.row_weight(), Decimal::ONE);
        assert_eq!(sum("0", "100000").row_weight(), d("100000"));
        assert_eq!(sum("-250", "10").row_weight(), d("250"));
        assert_eq!(sum("0", "0.5").row_weight(), d("0.5"));
    }

    #[test]
    fn a_sum_moves_by_its_largest_bound_or_its_span_by_the_model() {
        let (add, swap) = (Neighbours::AddRemove, Neighbours::Replace);
        assert_eq!(sum("0", "100").sensitivity(add), Some(d("100")));
        assert_eq!(sum("0", "100").sensitivity(swap), Some(d("100")));
        assert_eq!(sum("-250", "10").sensitivity(add), Some(d("250")));
        assert_eq!(sum("-250", "10").sensitivity(swap), Some(d("260")));
        assert_eq!(sum("5", "10").sensitivity(swap), Some(d("10")));
        assert_eq!(sum("-10", "-5").sensitivity(swap), Some(d("10")));
        assert_eq!(Measure::Rows.sensitivity(swap), Some(Decimal::ONE));
        let valued = Measure::Valued { column: "x".into() };
        assert_eq!(valued.sensitivity(add), Some(Decimal::ONE));
        let what = Measure::Statistic {
            what: "median".into(),
        };
        assert_eq!(what.sensitivity(add), None);
        let huge = Measure::Sum {
            column: "x".into(),
            lo: Decimal::MIN,
            hi: Decimal::MAX,
        };
        assert_eq!(huge.sensitivity(swap), Some(Decimal::MAX));
    }

    #[test]
    fn sums_are_charged_scaled_under_add_remove_and_in_full_under_replace() {
        let row = Row::from_cells(&[(1, Decimal::ONE), (2, Decimal::ONE)]).expect("a row");
        let s = sum("0", "0.5");
        let scaled = s.charged_row(&row, Neighbours::AddRemove);
        assert_eq!(scaled.to_cells(), vec![(1, d("0.5")), (2, d("0.5"))]);
        assert!(s.charged_row(&row, Neighbours::Replace).is_empty());
        let valued = Measure::Valued {
            column: "income".into(),
        };
        assert_eq!(valued.charged_row(&row, Neighbours::AddRemove), row);
        assert!(valued.charged_row(&row, Neighbours::Replace).is_empty());
        assert_eq!(Measure::Rows.charged_row(&row, Neighbours::Replace), row);
    }

    #[test]
    fn the_ledger_fields_read_back() {
        for m in [
            Measure::Valued {
                column: "a b".into(),
            },
            sum("-1.5", "20"),
        ] {
            let fields = m.to_fields().expect("fields");
            assert_eq!(Measure::from_fields(&fields), Some(m));
        }
        assert_eq!(Measure::Rows.to_fields(), None);
        assert_eq!(Measure::from_fields(&["sum", "x", "3", "1"]), None);
        assert_eq!(Measure::from_fields(&["sum", "x", "1"]), None);
        assert_eq!(Measure::from_fields(&["count", "x"]), None);
    }
}
