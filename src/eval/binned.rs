//! `ESTIMATE MEDIAN col`, `ESTIMATE QUANTILE q OF col` and `ESTIMATE MEAN col CLAMP (lo, hi)`:
//! statistics of a numeric dimension of a table's cube, from the history's estimates of the
//! counts of its bins. Post-processing of released answers: nothing is spent.
//!
//! Each bin's count is estimated by the BLUE (its cells' union); counts estimated below 0 are
//! taken as 0. The bins bound the statistics: the quantile lies in the first bin where the
//! estimated cumulative count reaches `q` times the total (the result is that bin, not a
//! point within it), and the mean lies between the means with every value at its bin's
//! least and at its greatest value (the outer bins closed by the clamp). These bounds are of
//! the estimated distribution; the uncertainty of each bin's count is ESTIMATE's.

use super::cubes::{blue_of_table, Estimated};
use super::Session;
use crate::error::EvalError;
use crate::output::{BinnedResult, Output};
use crate::plan::{BinnedPlan, BinnedStatistic};
use crate::span::Span;

impl Session {
    /// The binned statistic of `plan`.
    pub(super) fn binned(&mut self, plan: BinnedPlan, span: Span) -> Result<Output, EvalError> {
        let i = self.index(&plan.table);
        self.refresh(i, span)?;
        let queries: Vec<Vec<usize>> = plan.bins.iter().map(|b| b.cells.clone()).collect();
        let estimates: Vec<Estimated> = self.estimate_unions(i, &queries, span)?;
        let weights: Vec<f64> = estimates.iter().map(|e| e.value.max(0.0)).collect();
        let total: f64 = weights.iter().sum();
        if total <= 0.0 {
            return Err(EvalError::NotEstimable {
                cells: format!(
                    "every bin of `{}` is estimated at 0 or below: no statistic of it can be said",
                    plan.column
                ),
                span,
            });
        }
        let (bin, bounds) = match plan.stat {
            BinnedStatistic::Quantile(q) => {
                let mut cumulative = 0.0;
                let at = weights
                    .iter()
                    .position(|w| {
                        cumulative += w;
                        cumulative >= q * total
                    })
                    .unwrap_or(weights.len() - 1);
                let b = &plan.bins[at];
                (Some(b.name.clone()), (b.lo, b.hi))
            }
            BinnedStatistic::Mean(lo, hi) => {
                let low: f64 = plan
                    .bins
                    .iter()
                    .zip(&weights)
                    .map(|(b, w)| w * b.lo.max(lo).min(hi))
                    .sum();
                let high: f64 = plan
                    .bins
                    .iter()
                    .zip(&weights)
                    .map(|(b, w)| w * b.hi.min(hi).max(lo))
                    .sum();
                (None, (low / total, high / total))
            }
        };
        Ok(Output::Binned(Box::new(BinnedResult {
            table: plan.table,
            statement: plan.statement,
            column: plan.column,
            quantile: match plan.stat {
                BinnedStatistic::Quantile(q) => Some(q),
                BinnedStatistic::Mean(..) => None,
            },
            bin,
            bounds,
            bins: plan
                .bins
                .iter()
                .zip(&estimates)
                .map(|(b, e)| (b.name.clone(), e.value, e.variance))
                .collect(),
        })))
    }

    /// The BLUE of the count of each union of cells of table `i`'s cube, from its history.
    fn estimate_unions(
        &self,
        i: usize,
        unions: &[Vec<usize>],
        span: Span,
    ) -> Result<Vec<Estimated>, EvalError> {
        let entry = &self.entries[i];
        let history = self.ledgers.get(entry.ledger).history();
        blue_of_table(entry, history, unions, span)
    }
}
