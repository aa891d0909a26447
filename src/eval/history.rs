//! The record of a table's releases and its budget: composed sequentially, or per cell over a
//! declared cube (Xiao and Xiong, Theorem 5.5).

use crate::plan::Mechanism;
use rust_decimal::Decimal;

/// One released answer. Everything in it is public: it was shown.
///
/// A release is a row of the table's query history: with a declared cube its `row` holds
/// coefficients over cells (per-cell budgets); without one it is empty and the release stands
/// for its own query, charging every cell of a cube declared later.
#[derive(Debug, Clone, PartialEq)]
pub struct Release {
    /// Its number in the history, from 1.
    pub seq: u64,
    /// The statement, canonical.
    pub statement: String,
    /// What makes a later query identical to this one.
    pub key: String,
    /// Sparse coefficients over cells `(cell, coefficient)`, exact; empty without a cube.
    pub row: Vec<(usize, Decimal)>,
    /// The epsilon spent, exact.
    pub eps: Decimal,
    /// The query's sensitivity.
    pub sensitivity: f64,
    /// The noise.
    pub mechanism: Mechanism,
    /// The noisy answer; `None` when the process stopped between recording the spending
    /// and the answer (the epsilon counts, and nothing was shown).
    pub noisy: Option<f64>,
    /// When, as seconds since the Unix epoch.
    pub time: u64,
}

/// A table's budget and the releases that spent it.
#[derive(Debug, Clone, PartialEq)]
pub struct History {
    total: Decimal,
    releases: Vec<Release>,
    cube: Option<CubeDecl>,
}

/// The cube declared on a table, as its ledger records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CubeDecl {
    /// The declaration, canonical (`CUBE BY age (30, 65)`).
    pub spec: String,
    /// Its number of cells.
    pub cells: usize,
}

/// What a release charges a cell: `eps |h_j| / S` (one term of `B = (alpha ./ S)' |H|`),
/// rounded up in the last decimal place when the division is not exact, so that spending is
/// never under-counted.
pub fn charge(eps: Decimal, coefficient: Decimal, sensitivity: Decimal) -> Option<Decimal> {
    let num = eps.checked_mul(coefficient.abs())?;
    let q = num.checked_div(sensitivity)?;
    // q is at most one unit of its last place off; round up whenever it falls short.
    if q.checked_mul(sensitivity)? >= num {
        Some(q)
    } else {
        q.checked_add(Decimal::new(1, q.scale()))
    }
}

/// The sensitivity of a row: its largest absolute coefficient (Lemma 2.1); 1 for no row.
pub fn row_sensitivity(row: &[(usize, Decimal)]) -> Decimal {
    row.iter()
        .map(|(_, c)| c.abs())
        .max()
        .unwrap_or(Decimal::ONE)
}

impl History {
    /// An empty history with a total budget.
    pub fn new(total: Decimal) -> Self {
        Self {
            total,
            releases: Vec::new(),
            cube: None,
        }
    }

    /// The declared cube, if any.
    pub fn cube(&self) -> Option<&CubeDecl> {
        self.cube.as_ref()
    }

    /// Declares the cube; the caller has checked no release has a row over another cube.
    pub fn set_cube(&mut self, cube: CubeDecl) {
        self.cube = Some(cube);
    }

    /// How many releases have a row over the cube.
    pub fn rows_released(&self) -> usize {
        self.releases.iter().filter(|r| !r.row.is_empty()).count()
    }

    /// Each cell's spent budget with a cube declared, exact: `B = (alpha ./ S)' |H|` over the
    /// releases with a row, plus, on every cell, the epsilons of the releases without one
    /// (made before the cube, they may have counted rows of any cell).
    pub fn cell_spent(&self) -> Option<Vec<Decimal>> {
        let cube = self.cube.as_ref()?;
        let rowless: Decimal = self
            .releases
            .iter()
            .filter(|r| r.row.is_empty())
            .map(|r| r.eps)
            .sum();
        let mut b = vec![rowless; cube.cells];
        for r in self.releases.iter().filter(|r| !r.row.is_empty()) {
            let s = row_sensitivity(&r.row);
            for (j, c) in &r.row {
                let add = charge(r.eps, *c, s).unwrap_or(Decimal::MAX);
                if let Some(cell) = b.get_mut(*j) {
                    *cell = cell.saturating_add(add);
                }
            }
        }
        Some(b)
    }

    /// The total epsilon.
    pub fn total(&self) -> Decimal {
        self.total
    }

    /// The epsilon spent, exact: without a cube the sum of the releases' epsilons
    /// (sequential composition); with one the largest cell's spending (Theorem 5.5: releases
    /// over disjoint cells compose in parallel).
    pub fn spent(&self) -> Decimal {
        match self.cell_spent() {
            Some(b) => b.into_iter().max().unwrap_or(Decimal::ZERO),
            None => self.releases.iter().map(|r| r.eps).sum(),
        }
    }

    /// Whether a release of `eps` with `row` over the cube fits every cell's budget; if not,
    /// the first cell it would pass and that cell's spending after it.
    pub fn check_row(
        &self,
        eps: Decimal,
        row: &[(usize, Decimal)],
    ) -> Result<(), (usize, Decimal)> {
        let Some(b) = self.cells_after(eps, row) else {
            return if self.can_spend(eps) {
                Ok(())
            } else {
                Err((0, self.spent().saturating_add(eps)))
            };
        };
        match b.iter().position(|x| *x > self.total) {
            Some(j) => Err((j, b[j])),
            None => Ok(()),
        }
    }

    /// What [`History::spent`] would be after releasing `row` with `eps` (not checked
    /// against the total).
    pub fn spent_after(&self, eps: Decimal, row: &[(usize, Decimal)]) -> Decimal {
        match self.cells_after(eps, row) {
            Some(b) => b.into_iter().max().unwrap_or(Decimal::ZERO),
            None => self.spent().saturating_add(eps),
        }
    }

    /// Each cell's spending after releasing `row` with `eps`; `None` without a cube.
    fn cells_after(&self, eps: Decimal, row: &[(usize, Decimal)]) -> Option<Vec<Decimal>> {
        let mut b = self.cell_spent()?;
        if row.is_empty() {
            for cell in &mut b {
                *cell = cell.saturating_add(eps);
            }
        } else {
            let s = row_sensitivity(row);
            for (j, c) in row {
                let add = charge(eps, *c, s).unwrap_or(Decimal::MAX);
                if let Some(cell) = b.get_mut(*j) {
                    *cell = cell.saturating_add(add);
                }
            }
        }
        Some(b)
    }

    /// `total - spent`.
    pub fn remaining(&self) -> Decimal {
        self.total - self.spent()
    }

    /// Whether a release of `eps` (without a row) fits the budget.
    pub fn can_spend(&self, eps: Decimal) -> bool {
        self.spent()
            .checked_add(eps)
            .is_some_and(|after| after <= self.total)
    }

    /// Sets the total; the caller has checked it is not below what is spent.
    pub fn set_total(&mut self, total: Decimal) {
        self.total = total;
    }

    /// The answered release of an identical earlier query, if any.
    pub fn find(&self, key: &str) -> Option<&Release> {
        self.releases
            .iter()
            .find(|r| r.key == key && r.noisy.is_some())
    }

    /// Fills in the noisy answer of release `seq`; false if there is no such release.
    pub fn set_noisy(&mut self, seq: u64, noisy: f64) -> bool {
        match self.releases.iter_mut().find(|r| r.seq == seq) {
            Some(r) => {
                r.noisy = Some(noisy);
                true
            }
            None => false,
        }
    }

    /// The releases, in order.
    pub fn releases(&self) -> &[Release] {
        &self.releases
    }

    /// The number the next release gets.
    pub fn next_seq(&self) -> u64 {
        self.releases.len() as u64 + 1
    }

    /// Records a release; the caller has checked the budget.
    pub fn record(&mut self, release: Release) {
        self.releases.push(release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn release(seq: u64, eps: &str) -> Release {
        Release {
            seq,
            statement: String::new(),
            key: format!("k{seq}"),
            row: Vec::new(),
            eps: Decimal::from_str(eps).expect("decimal"),
            sensitivity: 1.0,
            mechanism: Mechanism::Laplace,
            noisy: Some(0.0),
            time: 0,
        }
    }

    #[test]
    fn ten_spends_of_a_tenth_fit_a_budget_of_one_exactly() {
        let mut h = History::new(Decimal::ONE);
        let tenth = Decimal::from_str("0.1").expect("decimal");
        for seq in 1..=10 {
            assert!(h.can_spend(tenth), "spend {seq} must fit");
            h.record(release(seq, "0.1"));
        }
        assert_eq!(h.spent(), Decimal::ONE);
        assert_eq!(h.remaining(), Decimal::ZERO);
        assert!(!h.can_spend(tenth));
    }

    /// Theorem 5.5: two counts over disjoint cells compose in parallel.
    #[test]
    fn disjoint_rows_compose_in_parallel() {
        let mut h = History::new(Decimal::ONE);
        h.set_cube(CubeDecl {
            spec: "CUBE BY x (1)".into(),
            cells: 3,
        });
        let tenth = Decimal::from_str("0.1").expect("decimal");
        for (seq, cell) in [(1, 0), (2, 1)] {
            let mut r = release(seq, "0.1");
            r.row = vec![(cell, Decimal::ONE)];
            assert!(h.check_row(tenth, &r.row).is_ok());
            h.record(r);
        }
        assert_eq!(h.spent(), tenth, "0.1 + 0.1 over disjoint cells costs 0.1");
        // 2*a - b: S = 2, so cell 0 is charged 0.1 and cell 1 0.05.
        let mut r = release(3, "0.1");
        r.row = vec![(0, Decimal::TWO), (1, -Decimal::ONE)];
        h.record(r);
        let b = h.cell_spent().expect("a cube");
        assert_eq!(b, vec![dec("0.2"), dec("0.15"), Decimal::ZERO]);
        // A release without a row charges every cell.
        h.record(release(4, "0.7"));
        assert_eq!(h.spent(), dec("0.9"));
        assert_eq!(h.check_row(tenth, &[(0, Decimal::ONE)]), Ok(()));
        assert_eq!(
            h.check_row(dec("0.2"), &[(0, Decimal::ONE)]),
            Err((0, dec("1.1")))
        );
        // An inexact charge is rounded up, never down.
        let third = charge(Decimal::ONE, Decimal::ONE, Decimal::from(3)).expect("a charge");
        assert!(third * Decimal::from(3) >= Decimal::ONE);
    }

    fn dec(s: &str) -> Decimal {
        Decimal::from_str(s).expect("decimal")
    }
}
