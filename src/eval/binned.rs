//! `ESTIMATE MEDIAN col`, `ESTIMATE QUANTILE q OF col` and `ESTIMATE MEAN col CLAMP (lo, hi)`:
//! statistics of a numeric dimension of a table's cube, from the history's estimates of the
//! counts of its bins, with their uncertainty under the noise of the releases.
//! Post-processing of released answers: nothing is spent.
//!
//! Each bin's count is estimated by the BLUE (its cells' union); counts estimated below 0 are
//! taken as 0. The bins bound the statistics: the quantile lies in the first bin where the
//! estimated cumulative count reaches `q` times the total (the result is that bin, not a
//! point within it), and the mean lies between the means with every value at its bin's
//! least and at its greatest value (the outer bins closed by the clamp).
//!
//! Their uncertainty: under the paper's flat prior the true counts are the estimates minus
//! their errors `A N` (Xiao and Xiong 2012, Lemma 4.1), whose joint law is drawn [`DRAWS`]
//! times by re-drawing every release's noise ([`crate::stats::joint`]). In each draw the
//! statistic is computed as above (counts below 0 taken as 0): the share of draws whose
//! quantile falls in a bin is that bin's probability of holding it, and the fewest
//! consecutive bins holding it in at least 95% of the draws are its 95% set; for a mean, the
//! 2.5% quantile of the draws' lower bounds and the 97.5% quantile of their upper bounds hold
//! it with probability at least 0.95. The generator is seeded from the statement and the
//! released answers, so the same history gives the same probabilities in every run.

use super::cubes::{blue_of_table, UnionEstimates};
use super::Session;
use crate::error::EvalError;
use crate::output::{BinnedResult, Output};
use crate::plan::{Bin, BinnedPlan, BinnedStatistic};
use crate::span::Span;
use crate::stats::blue::Measurement;

/// Monte Carlo draws of the bins' counts. Each probability is within `1.96 sqrt(p (1 - p) /
/// 20000)` of its value under the model at 95% confidence: at most ±0.007 (at p = 1/2),
/// ±0.003 at p = 0.95.
pub const DRAWS: usize = 20_000;

/// The level of the set of bins and of the mean's interval.
const LEVEL: f64 = 0.95;

/// A statistic and its uncertainty.
struct Said {
    bin: Option<String>,
    bounds: (f64, f64),
    probability: Option<f64>,
    holds: Option<Vec<f64>>,
    bins95: Option<Vec<String>>,
    interval95: (f64, f64),
    coverage95: f64,
}

impl Session {
    /// The binned statistic of `plan`.
    pub(super) fn binned(&mut self, plan: BinnedPlan, span: Span) -> Result<Output, EvalError> {
        let i = self.index(&plan.table);
        self.refresh(i, span)?;
        let queries: Vec<Vec<usize>> = plan.bins.iter().map(|b| b.cells.clone()).collect();
        let unions = self.estimate_unions(i, &queries, span)?;
        let values: Vec<f64> = unions.estimates.iter().map(|e| e.value).collect();
        let seed = seed(&plan.statement, &unions.evidence);
        let said = match plan.stat {
            BinnedStatistic::Quantile(q) => quantile(&plan.bins, &values, q, &unions, seed),
            BinnedStatistic::Mean(lo, hi) => mean(&plan.bins, &values, (lo, hi), &unions, seed),
        }
        .ok_or_else(|| EvalError::NotEstimable {
            cells: format!(
                "every bin of `{}` is estimated at 0 or below: no statistic of it can be said",
                plan.column
            ),
            span,
        })?;
        Ok(Output::Binned(Box::new(BinnedResult {
            table: plan.table,
            statement: plan.statement,
            column: plan.column,
            quantile: match plan.stat {
                BinnedStatistic::Quantile(q) => Some(q),
                BinnedStatistic::Mean(..) => None,
            },
            bin: said.bin,
            bounds: said.bounds,
            bins: plan
                .bins
                .iter()
                .zip(&unions.estimates)
                .map(|(b, e)| (b.name.clone(), e.value, e.variance))
                .collect(),
            probability: said.probability,
            holds: said.holds,
            bins95: said.bins95,
            interval95: said.interval95,
            coverage95: said.coverage95,
            draws: DRAWS,
        })))
    }

    /// The BLUE of the count of each union of cells of table `i`'s cube, from its history.
    fn estimate_unions(
        &self,
        i: usize,
        unions: &[Vec<usize>],
        span: Span,
    ) -> Result<UnionEstimates, EvalError> {
        let entry = &self.entries[i];
        let history = self.ledgers.get(entry.ledger).history();
        blue_of_table(entry, history, unions, span)
    }
}

/// The Monte Carlo seed: BLAKE3 of the statement and every released answer the estimates come
/// from (row, epsilon, sensitivity, answer). Post-processing of what is public.
fn seed(statement: &str, evidence: &[Measurement]) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(b"dpq binned statistic\n");
    h.update(statement.as_bytes());
    for m in evidence {
        h.update(&(m.row.len() as u64).to_le_bytes());
        for &(cell, coefficient) in &m.row {
            h.update(&(cell as u64).to_le_bytes());
            h.update(&coefficient.to_le_bytes());
        }
        h.update(&m.eps.to_le_bytes());
        h.update(&m.sensitivity.to_le_bytes());
        h.update(&m.noisy.to_le_bytes());
    }
    *h.finalize().as_bytes()
}

/// The bin holding the `q`-quantile of `counts` (below 0 taken as 0, in place): the first where
/// their cumulative sum reaches `q` times their total; `None` when the total is not above 0.
fn quantile_bin(counts: &mut [f64], q: f64) -> Option<usize> {
    counts.iter_mut().for_each(|c| *c = c.max(0.0));
    let total: f64 = counts.iter().sum();
    if total.is_nan() || total <= 0.0 {
        return None;
    }
    let mut cumulative = 0.0;
    let at = counts.iter().position(|c| {
        cumulative += c;
        cumulative >= q * total
    });
    Some(at.unwrap_or(counts.len() - 1))
}

/// The counts of a draw: the estimates less the draw's errors (overwritten).
fn less<'a>(values: &[f64], errors: &'a mut [f64]) -> &'a mut [f64] {
    errors.iter_mut().zip(values).for_each(|(e, v)| *e = v - *e);
    errors
}

/// The `q`-quantile's bin at the estimates, each bin's probability of holding it, and the
/// fewest consecutive bins holding it with probability at least 0.95.
fn quantile(
    bins: &[Bin],
    values: &[f64],
    q: f64,
    unions: &UnionEstimates,
    seed: [u8; 32],
) -> Option<Said> {
    let at = quantile_bin(&mut values.to_vec(), q)?;
    let drawn = unions
        .joint
        .draw(DRAWS, seed, |e| quantile_bin(less(values, e), q));
    // Draws where no bin's count is above 0 hold the quantile in no bin.
    let mut hits = vec![0usize; bins.len()];
    for b in drawn.into_iter().flatten() {
        hits[b] += 1;
    }
    let (first, last, held) = smallest_run(&hits, (LEVEL * DRAWS as f64).ceil() as usize);
    let share = |n: usize| n as f64 / DRAWS as f64;
    Some(Said {
        bin: Some(bins[at].name.clone()),
        bounds: (bins[at].lo, bins[at].hi),
        probability: Some(share(hits[at])),
        holds: Some(hits.iter().map(|&n| share(n)).collect()),
        bins95: Some(bins[first..=last].iter().map(|b| b.name.clone()).collect()),
        interval95: (bins[first].lo, bins[last].hi),
        coverage95: share(held),
    })
}

/// The shortest run of consecutive bins whose hits reach `need` (of the runs as short, the one
/// with the most hits, then the first): its first and last bin and its hits. When no run
/// reaches it (draws with no count above 0 hold the quantile nowhere), every bin.
fn smallest_run(hits: &[usize], need: usize) -> (usize, usize, usize) {
    let mut best = (0, hits.len().saturating_sub(1), hits.iter().sum::<usize>());
    let mut best_len = usize::MAX;
    let (mut last, mut sum) = (0, 0);
    // Two pointers: the least last bin reaching `need` never moves back as the first advances.
    for first in 0..hits.len() {
        while sum < need && last < hits.len() {
            sum += hits[last];
            last += 1;
        }
        if sum < need {
            break;
        }
        let len = last - first;
        if len < best_len || (len == best_len && sum > best.2) {
            best = (first, last - 1, sum);
            best_len = len;
        }
        sum -= hits[first];
    }
    best
}

/// The mean's bounds at the `counts` (below 0 taken as 0): every value at its bin's least, and
/// at its greatest, within the clamp; `None` when the total is not above 0.
fn mean_bounds(bins: &[Bin], counts: &[f64], clamp: (f64, f64)) -> Option<(f64, f64)> {
    let (lo, hi) = clamp;
    let (mut total, mut low, mut high) = (0.0, 0.0, 0.0);
    for (b, c) in bins.iter().zip(counts) {
        let w = c.max(0.0);
        total += w;
        low += w * b.lo.max(lo).min(hi);
        high += w * b.hi.min(hi).max(lo);
    }
    if total.is_nan() || total <= 0.0 {
        return None;
    }
    Some((low / total, high / total))
}

/// The mean's bounds at the estimates, and an interval holding it with probability at least
/// 0.95: `P(mean < L) <= P(low < L) <= 0.025` and the same above `H`, with `L` the 2.5%
/// quantile of the draws' lower bounds and `H` the 97.5% quantile of their upper bounds. A draw
/// with no count above 0 says nothing: its bounds are the clamp's.
fn mean(
    bins: &[Bin],
    values: &[f64],
    clamp: (f64, f64),
    unions: &UnionEstimates,
    seed: [u8; 32],
) -> Option<Said> {
    let bounds = mean_bounds(bins, values, clamp)?;
    let drawn = unions.joint.draw(DRAWS, seed, |e| {
        mean_bounds(bins, less(values, e), clamp).unwrap_or(clamp)
    });
    let (mut lows, mut highs): (Vec<f64>, Vec<f64>) = drawn.into_iter().unzip();
    lows.sort_by(f64::total_cmp);
    highs.sort_by(f64::total_cmp);
    // At most 2.5% of the draws below `lows[tail]`, and at most 2.5% above `highs[DRAWS - 1 -
    // tail]`.
    let tail = ((1.0 - LEVEL) / 2.0 * DRAWS as f64).floor() as usize;
    Some(Said {
        bin: None,
        bounds,
        probability: None,
        holds: None,
        bins95: None,
        interval95: (lows[tail], highs[DRAWS - 1 - tail]),
        coverage95: LEVEL,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smallest_run_reaches_the_need_with_the_fewest_bins() {
        assert_eq!(smallest_run(&[10, 80, 10], 95), (0, 2, 100));
        assert_eq!(smallest_run(&[1, 95, 4], 95), (1, 1, 95));
        // Two runs of two bins reach it: the one with more hits.
        assert_eq!(smallest_run(&[3, 50, 46, 1], 95), (1, 2, 96));
        assert_eq!(smallest_run(&[46, 50, 3, 1], 95), (0, 1, 96));
        // Not reached (draws with no count above 0): every bin.
        assert_eq!(smallest_run(&[40, 40], 95), (0, 1, 80));
        assert_eq!(smallest_run(&[], 95), (0, 0, 0));
    }

    #[test]
    fn the_quantile_bin_is_the_first_reaching_its_share() {
        let counts = [10.0, -5.0, 30.0, 10.0];
        assert_eq!(quantile_bin(&mut counts.to_vec(), 0.5), Some(2));
        assert_eq!(quantile_bin(&mut counts.to_vec(), 0.2), Some(0));
        assert_eq!(quantile_bin(&mut counts.to_vec(), 0.99), Some(3));
        assert_eq!(quantile_bin(&mut [-1.0, -1.0], 0.5), None);
    }
}
