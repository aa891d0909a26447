//! The record of a table's releases and its budget, composed sequentially.

use crate::plan::Mechanism;
use rust_decimal::Decimal;

/// One released answer. Everything in it is public: it was shown.
///
/// A release is a row of the table's query history: with a declared cube its `row` will hold
/// coefficients over cells (per-cell budgets); without one it is empty and the release stands
/// for its own query.
#[derive(Debug, Clone, PartialEq)]
pub struct Release {
    /// Its number in the history, from 1.
    pub seq: u64,
    /// The statement, canonical.
    pub statement: String,
    /// What makes a later query identical to this one.
    pub key: String,
    /// Sparse coefficients over cells `(cell, coefficient)`; empty without a cube.
    pub row: Vec<(usize, f64)>,
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
}

impl History {
    /// An empty history with a total budget.
    pub fn new(total: Decimal) -> Self {
        Self {
            total,
            releases: Vec::new(),
        }
    }

    /// The total epsilon.
    pub fn total(&self) -> Decimal {
        self.total
    }

    /// The epsilon spent: the sum of the releases' epsilons (sequential composition), exact.
    pub fn spent(&self) -> Decimal {
        self.releases.iter().map(|r| r.eps).sum()
    }

    /// `total - spent`.
    pub fn remaining(&self) -> Decimal {
        self.total - self.spent()
    }

    /// Whether a release of `eps` fits the budget.
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
}
