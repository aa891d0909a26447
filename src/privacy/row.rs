//! A release's row of coefficients over the cells of a cube, kept as runs of consecutive cells
//! with one coefficient: a count over a range of an ordered dimension (`id < 5000` on a cube of
//! 10,000 cells) is one run, so rows cost memory, ledger space and work by their runs, not by
//! their cells.

use rust_decimal::Decimal;
use std::fmt::Write as _;

/// Consecutive cells `start .. start + len` sharing one non-zero coefficient.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// The first cell.
    pub start: usize,
    /// How many cells (at least 1).
    pub len: usize,
    /// Their coefficient, normalized (`1`, never `1.0`), never zero.
    pub coef: Decimal,
}

impl Run {
    /// One past the last cell.
    pub fn end(&self) -> usize {
        self.start.saturating_add(self.len)
    }
}

/// Sparse coefficients over cells: runs by increasing cell, disjoint, never adjacent with the
/// same coefficient (so a row has one form), with no zero coefficient. Empty: no row (a
/// release made before any cube).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Row {
    runs: Vec<Run>,
}

impl Row {
    /// The row of `(cell, coefficient)` pairs by increasing cell; zero coefficients are
    /// dropped. `None` when the cells are not strictly increasing.
    pub fn from_cells(cells: &[(usize, Decimal)]) -> Option<Self> {
        if !cells.windows(2).all(|w| w[0].0 < w[1].0) {
            return None;
        }
        let mut row = Self::default();
        for (cell, coef) in cells {
            row.push(*cell, 1, *coef);
        }
        Some(row)
    }

    /// The row of runs `(start, len, coefficient)` by increasing cell: `None` when they
    /// overlap, are out of order, are empty or would run past `usize`.
    pub fn from_runs(runs: &[(usize, usize, Decimal)]) -> Option<Self> {
        let mut row = Self::default();
        let mut next = 0;
        for (start, len, coef) in runs {
            if *len == 0 || *start < next {
                return None;
            }
            next = start.checked_add(*len)?;
            row.push(*start, *len, *coef);
        }
        Some(row)
    }

    /// Appends a run after every cell so far (the caller keeps the order), merging it with
    /// the last run when they touch and share the coefficient.
    fn push(&mut self, start: usize, len: usize, coef: Decimal) {
        if coef.is_zero() {
            return;
        }
        // Decimals compare by value (`1.0 == 1`): only a new run needs normalizing.
        if let Some(last) = self.runs.last_mut() {
            if last.end() == start && last.coef == coef {
                last.len += len;
                return;
            }
        }
        self.runs.push(Run {
            start,
            len,
            coef: coef.normalize(),
        });
    }

    /// The row with every coefficient multiplied by `w`; `None` past a decimal's range.
    pub fn scaled(&self, w: Decimal) -> Option<Self> {
        let mut row = Self::default();
        for r in &self.runs {
            row.push(r.start, r.len, r.coef.checked_mul(w)?);
        }
        Some(row)
    }

    /// The runs, by increasing cell.
    pub fn runs(&self) -> &[Run] {
        &self.runs
    }

    /// Whether the row is empty (no cube).
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// How many cells have a coefficient.
    pub fn cells(&self) -> usize {
        self.runs.iter().map(|r| r.len).sum()
    }

    /// One past the last cell with a coefficient (0 when empty).
    pub fn end(&self) -> usize {
        self.runs.last().map_or(0, Run::end)
    }

    /// Every `(cell, coefficient)`, by increasing cell.
    pub fn iter(&self) -> impl Iterator<Item = (usize, Decimal)> + '_ {
        self.runs
            .iter()
            .flat_map(|r| (r.start..r.end()).map(move |j| (j, r.coef)))
    }

    /// The row over a finer cube whose cells `children[k]` (each by increasing cell) lie in
    /// this row's cell `k`: each new cell takes the coefficient of the cell holding it.
    pub fn spread(&self, children: &[Vec<usize>]) -> Self {
        let mut cells: Vec<(usize, Decimal)> = self
            .iter()
            .flat_map(|(k, c)| children.get(k).into_iter().flatten().map(move |&j| (j, c)))
            .collect();
        cells.sort_unstable_by_key(|(j, _)| *j);
        Self::from_cells(&cells).unwrap_or_default()
    }

    /// The row as `(cell, coefficient)` pairs.
    pub fn to_cells(&self) -> Vec<(usize, Decimal)> {
        self.iter().collect()
    }

    /// The coefficient of `cell` (zero when the row leaves it out), in `O(log runs)`.
    pub fn coef(&self, cell: usize) -> Decimal {
        let i = self.runs.partition_point(|r| r.end() <= cell);
        match self.runs.get(i) {
            Some(r) if r.start <= cell => r.coef,
            _ => Decimal::ZERO,
        }
    }

    /// The largest and the smallest coefficient over `cells` cells, counting the cells the
    /// row leaves out as 0.
    pub fn extremes(&self, cells: usize) -> (Decimal, Decimal) {
        let mut hi = self.runs.iter().map(|r| r.coef).max().unwrap_or_default();
        let mut lo = self.runs.iter().map(|r| r.coef).min().unwrap_or_default();
        if self.cells() < cells {
            hi = hi.max(Decimal::ZERO);
            lo = lo.min(Decimal::ZERO);
        }
        (hi, lo)
    }

    /// The ranges of cells `0..cells` in order, each with its coefficient: the runs and the
    /// gaps between them (coefficient 0, only the non-empty ones). Cells past `cells` are cut.
    pub fn segments(&self, cells: usize) -> impl Iterator<Item = (usize, usize, Decimal)> + '_ {
        let mut at = 0;
        let mut runs = self.runs.iter().peekable();
        std::iter::from_fn(move || {
            while at < cells {
                match runs.peek() {
                    Some(r) if r.start <= at => {
                        let r = runs.next().expect("peeked");
                        let end = r.end().min(cells);
                        if end > at {
                            let seg = (at, end, r.coef);
                            at = end;
                            return Some(seg);
                        }
                    }
                    next => {
                        let end = next.map_or(cells, |r| r.start.min(cells));
                        let seg = (at, end, Decimal::ZERO);
                        at = end;
                        return Some(seg);
                    }
                }
            }
            None
        })
    }

    /// The row in words for a key of identical queries: `j:c` for a cell, `a-b:c` for the
    /// cells `a` to `b` (inclusive) sharing a coefficient, comma-separated. A row without
    /// neighbouring cells of one coefficient reads as its cells did (`0:1,2:1`).
    pub fn key_text(&self) -> String {
        let mut out = String::new();
        for (i, r) in self.runs.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = if r.len == 1 {
                write!(out, "{}:{}", r.start, r.coef)
            } else {
                write!(out, "{}-{}:{}", r.start, r.end() - 1, r.coef)
            };
        }
        out
    }

    /// The row cell by cell in the words of [`Row::key_text`] before runs (`0:1,1:1,2:1`): how
    /// keys were written by ledgers of format 2.
    pub fn cells_text(&self) -> String {
        let mut out = String::with_capacity(self.cells() * 8);
        for run in &self.runs {
            // Each coefficient is written once per run, each cell's number by hand: a row
            // may have as many cells as the cube.
            let coef = run.coef.to_string();
            for j in run.start..run.end() {
                if !out.is_empty() {
                    out.push(',');
                }
                push_number(&mut out, j);
                out.push(':');
                out.push_str(&coef);
            }
        }
        out
    }
}

/// Appends the decimal digits of `n`.
fn push_number(out: &mut String, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend(digits[at..].iter().map(|d| char::from(*d)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(x: i64) -> Decimal {
        Decimal::from(x)
    }

    #[test]
    fn cells_become_runs_and_back() {
        let cells = vec![
            (0, d(1)),
            (1, d(1)),
            (2, d(2)),
            (4, d(2)),
            (5, Decimal::new(20, 1)),
        ];
        let row = Row::from_cells(&cells).expect("increasing");
        assert_eq!(
            row.runs(),
            &[
                Run {
                    start: 0,
                    len: 2,
                    coef: d(1)
                },
                Run {
                    start: 2,
                    len: 1,
                    coef: d(2)
                },
                Run {
                    start: 4,
                    len: 2,
                    coef: d(2)
                },
            ]
        );
        assert_eq!(row.to_cells(), cells);
        assert_eq!(row.cells(), 5);
        assert_eq!(row.key_text(), "0-1:1,2:2,4-5:2");
        assert_eq!(row.cells_text(), "0:1,1:1,2:2,4:2,5:2");
        let wide =
            Row::from_runs(&[(9, 3, Decimal::new(-25, 1)), (1234567, 1, d(1))]).expect("runs");
        assert_eq!(wide.cells_text(), "9:-2.5,10:-2.5,11:-2.5,1234567:1");
        assert_eq!(
            (row.coef(1), row.coef(3), row.coef(5), row.coef(9)),
            (d(1), d(0), d(2), d(0))
        );
        // Cell 3 is left out: it counts as 0.
        assert_eq!(row.extremes(6), (d(2), d(0)));
        let full = Row::from_cells(&[(0, d(1)), (1, d(2))]).expect("increasing");
        assert_eq!(full.extremes(2), (d(2), d(1)));
        assert_eq!(full.extremes(3), (d(2), d(0)));
        assert!(Row::from_cells(&[(1, d(1)), (1, d(1))]).is_none());
        assert!(Row::from_runs(&[(0, 2, d(1)), (1, 1, d(1))]).is_none());
        assert!(Row::from_runs(&[(0, 0, d(1))]).is_none());
        assert_eq!(
            Row::from_runs(&[(0, 2, d(1)), (2, 3, d(1))])
                .expect("runs")
                .runs()
                .len(),
            1
        );
    }

    #[test]
    fn segments_cover_every_cell_once() {
        let row = Row::from_runs(&[(2, 3, d(1)), (5, 1, d(-1)), (8, 4, d(3))]).expect("runs");
        let segs: Vec<_> = row.segments(10).collect();
        assert_eq!(
            segs,
            vec![
                (0, 2, d(0)),
                (2, 5, d(1)),
                (5, 6, d(-1)),
                (6, 8, d(0)),
                (8, 10, d(3)),
            ]
        );
        assert_eq!(
            Row::default().segments(3).collect::<Vec<_>>(),
            vec![(0, 3, d(0))]
        );
    }
}
