//! `SUM col CLAMP (lo, hi)` and `MEAN col CLAMP (lo, hi)`: a column's values clamped to
//! public bounds, summed exactly, released with noise.
//!
//! The bounds are the statement's, never the data's. Every value is clamped to them and put on
//! the grid of its noise (whole values as they are; floats rounded to a multiple of `2^-k`,
//! within the bounds), so the sum is an exact integer number of grid steps and the noise is
//! drawn exactly as for counts. The sum's sensitivity follows the model: a row added or
//! removed moves it by at most `max(|lo|, |hi|)`; a row replaced moves it from one value to
//! another, a row outside the condition or without a value counting 0, so by at most
//! `max(hi, 0) - min(lo, 0)`.
//!
//! Over a cube, a sum whose condition is a union of cells is a linear query over the per-cell
//! sums of the column clamped to its bounds: it is recorded with its row over the cells (its
//! measure names the column and bounds), so `ESTIMATE SUM` of any union of cells combines
//! every sum of the same column and bounds. Under `add_remove` a row added or removed moves
//! only its own cell's sum, and the sum is charged on the cells it covers, with counts (see
//! [`crate::privacy::Measure`]). Under `replace` a row's value can change within its cell,
//! which the costs of pairs of cells never see: the sum is charged on every cell and pair, as
//! is a sum whose condition splits a cell. A
//! `MEAN` spends half its epsilon on the sum and half on the count of the rows that
//! contributed (sensitivity 1), released together; its estimate is their ratio, and its
//! interval holds the true mean with probability at least 0.95 (each noisy answer within its
//! 97.5% interval, by the union bound, and the ratio over that box).

use super::count::{expose, gaussian_sigma, refused, release_rng};
use super::{ledger_error, served, Entry, Session};
use crate::error::EvalError;
use crate::output::{Output, SumResult};
use crate::plan::{Eps, SumPlan};
use crate::privacy::{Measure, Mechanism, Neighbours, PreparedMany, Request, Row};
use crate::span::Span;
use crate::stats::noise::{self, ExactEpsilon, GridGaussian, GridLaplace, Rational};
use crate::stats::{accuracy, laplace, Epsilon, Probability};
use rand_chacha::ChaCha20Rng;
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;

/// The most rows a table may have when its row count is private (as for counts).
const PUBLIC_ROWS_BOUND: u64 = 1 << 32;

/// The noise of one released number: Laplace on a grid, discrete Laplace, or the discrete
/// Gaussian on a grid.
enum Noise {
    Laplace(GridLaplace),
    Geometric(Rational),
    Gaussian(GridGaussian),
}

impl Noise {
    /// The grid exponent `k` the true value must be given in (0 for whole values).
    fn k(&self) -> u32 {
        match self {
            Noise::Laplace(l) => l.k(),
            Noise::Geometric(_) => 0,
            Noise::Gaussian(g) => g.k(),
        }
    }

    fn release(&self, rng: &mut ChaCha20Rng, steps: i128) -> f64 {
        match self {
            Noise::Laplace(l) => l.release(rng, steps).value(),
            Noise::Geometric(scale) => (steps + noise::discrete_laplace(rng, *scale)) as f64,
            // The value moves by at most S, S 2^k grid steps; the discrete Gaussian of
            // sigma2 4^k steps is S^2 / (2 sigma2) = rho-zCDP on it (see GridGaussian).
            Noise::Gaussian(g) => g.release(rng, steps).value(),
        }
    }
}

impl Session {
    /// `SUM ...` and `MEAN ...`.
    pub(super) fn sum(&mut self, plan: SumPlan, span: Span) -> Result<Output, EvalError> {
        let i = self.index(&plan.table);
        self.own_unit(i, span)?;
        let max_eps = self.max_eps(&plan.table);
        served::permit_eps(max_eps, &plan.table, plan.eps.exact, span)?;
        let max_releases = self.max_releases();
        let (seed, time) = (self.seed, (self.clock)());
        let entry = &self.entries[i];
        let parts = parts(&plan).ok_or(EvalError::UnusableEpsilon {
            eps: plan.eps.value.get() / 2.0,
            span,
        })?;
        if plan.mechanism != Mechanism::Gaussian {
            // Pure noise depends on the statement alone: checked before the ledger is read.
            noises(&plan, &parts, &[], entry, span)?;
        }
        let (own, exposed) = match entry.private {
            Some(private) => match self.ledgers.two_mut(entry.ledger, private) {
                Some((practice, private)) => (practice, Some(private)),
                None => (self.ledgers.get_mut(entry.ledger), None),
            },
            None => (self.ledgers.get_mut(entry.ledger), None),
        };
        let txn = own.begin().map_err(ledger_error(span))?;
        super::same_unit(entry, txn.history(), span)?;
        let requests: Vec<Request> = parts
            .iter()
            .map(|(eps, s, what)| request(entry, &plan, *eps, *s, what, seed, time))
            .collect();
        let noise_key = format!(
            "{}|{}|{}",
            entry.noise_prefix(seed),
            plan.query_key,
            plan.eps.exact
        );
        let ticket = match txn.prepare_together(requests) {
            Ok(PreparedMany::Recorded(noisy)) => {
                return Ok(self.sum_output(plan, i, noisy, true));
            }
            Ok(PreparedMany::Fits(t)) => t,
            Err(r) => {
                return Err(refused(
                    r,
                    entry,
                    &plan.table,
                    txn.ledger(),
                    (plan.eps.exact, plan.mechanism),
                    span,
                ))
            }
        };
        served::permit_release(max_releases, txn.history(), &plan.table, span)?;
        // A Gaussian part's variance is the ledger's, from the ticket: the noise is drawn with
        // what the ledger charges.
        let noises = noises(&plan, &parts, ticket.sigma2(), entry, span)?;
        let truth = truth(&plan, entry, noises[0].k(), span)?;
        if let Some(private) = exposed {
            expose(private, time, span)?;
        }
        self.drawn = true;
        let mut seeded;
        let rng: &mut ChaCha20Rng = match seed {
            Some(seed) => {
                seeded = release_rng(seed, &noise_key);
                &mut seeded
            }
            None => &mut self.rng,
        };
        let noisy = txn
            .release_many(ticket, || draw(&noises, truth, rng))
            .map_err(super::release_error(span))?;
        Ok(self.sum_output(plan, i, noisy, false))
    }

    /// `EXPLAIN SUM ...`: what it would spend and draw, from public facts.
    pub(super) fn explain_sum(&self, plan: &SumPlan) -> crate::output::Explanation {
        let i = self.index(&plan.table);
        let history = self.ledgers.get(self.entries[i].ledger).history();
        let spent = history.spent();
        let row = Row::from_cells(&plan.row).expect("a plan's row is by increasing cell");
        let charged = history.charged_row(&measure(plan, "sum"), &row);
        let (after, _, _) = history.after_bounds(plan.eps.exact, plan.mechanism, &charged);
        let fits = after <= history.total();
        let step = |l: &str, t: String| (l.to_string(), t);
        let mut steps = vec![
            step("table", format!("`{}`", plan.table)),
            step(
                "query",
                format!(
                    "the {} of `{}` clamped to [{}, {}] over the rows its condition selects; values never move the bounds",
                    if plan.mean { "mean" } else { "sum" },
                    plan.column_name,
                    plan.clamp.0,
                    plan.clamp.1
                ),
            ),
            step(
                "sensitivity",
                format!(
                    "{} (NEIGHBOURS {}{})",
                    plan.sensitivity,
                    plan.neighbours,
                    crate::output::unit_words(
                        u32::try_from(plan.count_sensitivity.mantissa()).unwrap_or(u32::MAX)
                    )
                ),
            ),
        ];
        let gaussian = plan.mechanism == Mechanism::Gaussian;
        let unit = if gaussian { "rho" } else { "epsilon" };
        if plan.mean {
            steps.push(step("does", format!("spends half the {unit} on the sum and half on the count of the rows that contributed, released together")));
        }
        if gaussian {
            steps.push(step("noise", gaussian_words(plan)));
        }
        let charges = if history.cube().is_none() {
            "spends epsilon {e} on the table".to_string()
        } else if !charged.is_empty() {
            format!(
                "charges epsilon {{e}} to {} its condition covers (a row added or removed moves only its own cell's sum)",
                match row.cells() {
                    1 => "the one cell".to_string(),
                    n => format!("the {n} cells"),
                }
            )
        } else if plan.row.is_empty() {
            format!(
                "charges epsilon {{e}} to every cell{} (its condition splits a cell)",
                if plan.neighbours == Neighbours::Replace {
                    " and pair"
                } else {
                    ""
                }
            )
        } else {
            "charges epsilon {e} to every cell and pair (under replace a row's value can change within a cell, which the pairs of cells do not see)".to_string()
        };
        let charges = charges.replace("epsilon {e}", &format!("{unit} {{e}}"));
        steps.push(if fits {
            super::explain::budget_step(&charges, plan.eps.exact, spent, after, history.total())
        } else {
            step(
                "refused",
                "the budget does not hold it; nothing would change".into(),
            )
        });
        if fits && history.accounting() == crate::privacy::Accounting::Zcdp {
            steps.push(super::explain::equivalent_step(after, self.delta));
        }
        crate::output::Explanation {
            statement: plan.statement.clone(),
            spends: if fits { plan.eps.exact } else { Decimal::ZERO },
            draws_noise: fits,
            budget: fits.then_some(crate::output::ExplainedBudget {
                spent_before: spent,
                spent_after: after,
                total: history.total(),
            }),
            steps,
        }
    }

    /// The result: the noisy sum, or the mean of the noisy sum and count, with intervals.
    fn sum_output(&self, plan: SumPlan, i: usize, noisy: Vec<f64>, from_history: bool) -> Output {
        let history = self.ledgers.get(self.entries[i].ledger).history();
        let (lo, hi) = (
            plan.clamp.0.to_f64().unwrap_or(f64::NEG_INFINITY),
            plan.clamp.1.to_f64().unwrap_or(f64::INFINITY),
        );
        let (value, interval, coverage, scale) = if plan.mean {
            mean_interval(&plan, noisy[0], noisy[1], (lo, hi))
        } else {
            let half = half_width(&plan, plan.eps, plan.sensitivity, 0.95);
            let scale = part_scale(&plan, plan.eps, plan.sensitivity);
            (
                Some(noisy[0]),
                (noisy[0] - half, noisy[0] + half),
                0.95,
                scale,
            )
        };
        let gaussian = plan.mechanism == Mechanism::Gaussian;
        // What the parts were charged, in the table's unit: a pure release on a zCDP table
        // costs eps^2 / 2 each.
        let price = parts(&plan)
            .unwrap_or_default()
            .iter()
            .fold(Decimal::ZERO, |a, p| {
                a.saturating_add(history.price(p.0.exact, plan.mechanism))
            });
        let count_sigma = match parts(&plan).as_deref() {
            Some([_, (eps, s, _)]) if gaussian => Some(part_scale(&plan, *eps, *s)),
            _ => None,
        };
        Output::Sum(Box::new(SumResult {
            accounting: history.accounting(),
            sigma: gaussian.then_some(scale),
            count_sigma,
            equivalent: self.equivalent(history),
            table: plan.table,
            statement: plan.statement,
            mean: plan.mean,
            column: plan.column_name,
            clamp: (lo, hi),
            value,
            noisy_sum: noisy[0],
            noisy_count: noisy.get(1).copied(),
            interval95: interval,
            coverage95: coverage,
            eps: plan.eps.exact,
            eps_spent: if from_history { Decimal::ZERO } else { price },
            sensitivity: plan.sensitivity.to_f64().unwrap_or(f64::INFINITY),
            scale,
            mechanism: plan.mechanism.to_string(),
            neighbours: history.neighbours(),
            unit_rows: u32::try_from(plan.count_sensitivity.mantissa()).unwrap_or(u32::MAX),
            from_history,
            budget_spent: history.spent(),
            budget_remaining: history.remaining(),
        }))
    }
}

/// A Gaussian sum's or mean's noise in words, for `EXPLAIN`: each part's standard deviation
/// `S / sqrt(2 rho)` (a mean's parts at half the rho each) and its 95% half-width.
fn gaussian_words(plan: &SumPlan) -> String {
    let Some(parts) = parts(plan) else {
        return "Gaussian: half the rho is not a usable rho".to_string();
    };
    let words: Vec<String> = parts
        .iter()
        .map(|(eps, s, what)| {
            let sigma = part_scale(plan, *eps, *s);
            format!(
                "the {what}'s standard deviation S/sqrt(2 rho) = {}/sqrt(2 x {}) = {}, 95% within ±{}",
                s.normalize(),
                eps.exact.normalize(),
                crate::output::short_number(sigma),
                crate::output::short_number(half_width(plan, *eps, *s, 0.95))
            )
        })
        .collect();
    format!(
        "Gaussian, drawn exactly as discrete Gaussian steps of a 2^-k grid: {}",
        words.join("; ")
    )
}

/// The smallest whole half-width holding discrete Laplace noise of scale `s/e` with
/// probability `level` (the geometric mechanism at `e/s`).
fn geometric_half(e: f64, s: f64, level: f64) -> f64 {
    let per = Epsilon::new(e / s).ok();
    let p = Probability::new(level).ok();
    match (per, p) {
        (Some(per), Some(p)) => crate::stats::accuracy::geometric_half_width(per, p) as f64,
        _ => f64::INFINITY,
    }
}

/// The released parts of a plan: `(epsilon, sensitivity, what)` each. A sum is one part; a
/// mean is its sum and its count, half the epsilon each. `None` when half the epsilon is not
/// a usable epsilon.
fn parts(plan: &SumPlan) -> Option<Vec<(Eps, Decimal, &'static str)>> {
    if !plan.mean {
        return Some(vec![(plan.eps, plan.sensitivity, "sum")]);
    }
    let half = plan.eps.exact / Decimal::TWO;
    let eps = Eps {
        value: Epsilon::new(half.to_f64()?).ok()?,
        exact: half,
        noise: ExactEpsilon::new(half).ok()?,
    };
    if eps.exact.checked_add(eps.exact) != Some(plan.eps.exact) {
        return None;
    }
    Some(vec![
        (eps, plan.sensitivity, "sum"),
        (eps, plan.count_sensitivity, "count"),
    ])
}

/// The request of one part, recorded under the statement and a key of its own.
fn request(
    entry: &Entry,
    plan: &SumPlan,
    eps: Eps,
    sensitivity: Decimal,
    what: &str,
    seed: Option<u64>,
    time: u64,
) -> Request {
    let source = match seed {
        Some(seed) => format!("seed {seed}"),
        None => "private".to_string(),
    };
    Request {
        statement: if plan.mean {
            format!("{} ({what})", plan.statement)
        } else {
            plan.statement.clone()
        },
        key: format!(
            "{}|{source}|{}|{what}|{}|{}",
            entry.key_prefix(),
            plan.query_key,
            plan.eps.exact.normalize(),
            plan.mechanism
        ),
        alt_key: None,
        row: Row::from_cells(&plan.row).expect("a plan's row is by increasing cell"),
        cube: plan.cube.clone(),
        neighbours: plan.neighbours,
        eps: eps.exact,
        sensitivity: sensitivity.to_f64().unwrap_or(f64::INFINITY),
        mechanism: plan.mechanism,
        measure: measure(plan, what),
        time,
    }
}

/// What a part measures in each cell: the clamped sum, or the rows with a value.
fn measure(plan: &SumPlan, what: &str) -> Measure {
    if what == "count" {
        Measure::Valued {
            column: plan.column_name.clone(),
        }
    } else {
        Measure::Sum {
            column: plan.column_name.clone(),
            lo: plan.clamp.0,
            hi: plan.clamp.1,
        }
    }
}

/// The noise of every part, in order; a Gaussian part's with its variance parameter from
/// `sigma2` (the ticket's, in the same order).
fn noises(
    plan: &SumPlan,
    parts: &[(Eps, Decimal, &str)],
    sigma2: &[Option<(u128, u128)>],
    entry: &Entry,
    span: Span,
) -> Result<Vec<Noise>, EvalError> {
    parts
        .iter()
        .enumerate()
        .map(|(i, (eps, s, _))| {
            let sigma2 = sigma2.get(i).copied().flatten();
            noise_for(plan, *eps, *s, sigma2, entry, span)
        })
        .collect()
}

/// The noise of a part of sensitivity `s` at `eps` (or, Gaussian, of variance parameter
/// `sigma2`), checked to be exact on the data's public bound.
fn noise_for(
    plan: &SumPlan,
    eps: Eps,
    s: Decimal,
    sigma2: Option<(u128, u128)>,
    entry: &Entry,
    span: Span,
) -> Result<Noise, EvalError> {
    let rows = match plan.neighbours {
        Neighbours::Replace => entry.table.n_rows(),
        Neighbours::AddRemove => PUBLIC_ROWS_BOUND,
    };
    let big = plan.clamp.0.abs().max(plan.clamp.1.abs()).max(Decimal::ONE);
    let bound = big.to_f64().unwrap_or(f64::INFINITY) * rows as f64;
    let too_large = || EvalError::TooLarge {
        bound: crate::output::short_number(bound),
        span,
    };
    let noise = match plan.mechanism {
        Mechanism::Gaussian => Noise::Gaussian(super::count::gaussian_noise(
            sigma2.ok_or_else(too_large)?,
            eps.exact,
            span,
        )?),
        Mechanism::Geometric => Noise::Geometric(decimal_scale(eps, s).ok_or_else(too_large)?),
        _ => Noise::Laplace(GridLaplace::new(
            decimal_scale(eps, s).ok_or_else(too_large)?,
        )),
    };
    let scaled = bound * 2f64.powi(noise.k() as i32);
    if scaled.is_nan() || scaled >= 2f64.powi(120) {
        return Err(too_large());
    }
    Ok(noise)
}

/// `s / eps` as an exact fraction, for a decimal sensitivity `s`.
fn decimal_scale(eps: Eps, s: Decimal) -> Option<Rational> {
    let base = eps.noise.count_scale();
    let m = s.mantissa().unsigned_abs();
    let den = 10u128.checked_pow(s.scale())?;
    Rational::new(base.num().checked_mul(m)?, base.den().checked_mul(den)?)
}

/// The true clamped sum on the grid of `k` and the number of rows that contributed, in one
/// pass over the table's rows, asked before anything is spent.
fn truth(plan: &SumPlan, entry: &Entry, k: u32, span: Span) -> Result<(i128, u64), EvalError> {
    let clamp = if plan.integer {
        crate::data::Clamp::Int {
            lo: plan.clamp.0.to_i64().unwrap_or(i64::MIN),
            hi: plan.clamp.1.to_i64().unwrap_or(i64::MAX),
            k,
        }
    } else {
        // The bounds on the grid 2^-k, within the written ones: every rounded value stays in
        // them, so no value moves the sum by more than the sensitivity.
        let g = 2f64.powi(k as i32);
        let lo = (plan.clamp.0.to_f64().unwrap_or(f64::MIN) * g).ceil() / g;
        let hi = (plan.clamp.1.to_f64().unwrap_or(f64::MAX) * g).floor() / g;
        crate::data::Clamp::Float { lo, hi, k }
    };
    entry
        .ask(|t| t.sum_clamped(plan.column, plan.filter.as_ref(), clamp))
        .map_err(|error| super::source_failed(entry, error, span))
}

/// Draws every part: the clamped sum (and the count), each with its noise.
fn draw(noises: &[Noise], (steps, n): (i128, u64), rng: &mut ChaCha20Rng) -> Vec<f64> {
    let mut out = vec![noises[0].release(rng, steps)];
    if let Some(count) = noises.get(1) {
        let steps = i128::from(n) << count.k();
        out.push(count.release(rng, steps));
    }
    out
}

/// A mean's estimate and interval from its noisy sum and count: the estimate their ratio
/// within the bounds; the interval the ratios over the box where both answers lie within
/// their 97.5% noise intervals (together with probability at least 0.95), within the bounds.
fn mean_interval(
    plan: &SumPlan,
    sum: f64,
    count: f64,
    (lo, hi): (f64, f64),
) -> (Option<f64>, (f64, f64), f64, f64) {
    let Some([(eps, s, _), (_, sc, _)]) = parts(plan).as_deref().map(|p| [p[0], p[1]]) else {
        return (None, (lo, hi), 0.95, f64::INFINITY);
    };
    let (hs, hc) = (
        half_width(plan, eps, s, 0.975),
        half_width(plan, eps, sc, 0.975),
    );
    let value = (count >= 1.0).then(|| (sum / count).clamp(lo, hi));
    let (c1, c2) = (count - hc, count + hc);
    let interval = if c1 > 0.0 {
        let (s1, s2) = (sum - hs, sum + hs);
        let ratios = [s1 / c1, s1 / c2, s2 / c1, s2 / c2];
        let min = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let max = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (min.clamp(lo, hi), max.clamp(lo, hi))
    } else {
        (lo, hi)
    };
    (value, interval, 0.95, part_scale(plan, eps, s))
}

/// The half-width of the central interval holding a part's noise with probability `level`
/// (at least, for whole-valued noise): `sigma z_{(1+level)/2}` for Gaussian noise of
/// `sigma = S / sqrt(2 rho)`, the Laplace quantile for Laplace noise of scale `S / eps`, the
/// smallest whole one for discrete Laplace noise.
fn half_width(plan: &SumPlan, eps: Eps, sensitivity: Decimal, level: f64) -> f64 {
    let sens = sensitivity.to_f64().unwrap_or(f64::INFINITY);
    let e = eps.value.get();
    match plan.mechanism {
        Mechanism::Gaussian => {
            part_scale(plan, eps, sensitivity) * accuracy::normal_quantile((1.0 + level) / 2.0)
        }
        Mechanism::Geometric => geometric_half(e, sens, level),
        _ => match Probability::new(level) {
            Ok(p) => sens * laplace::interval_half_width(eps.value, p),
            Err(_) => f64::INFINITY,
        },
    }
}

/// A part's noise scale: Gaussian noise's standard deviation `S / sqrt(2 rho)`, else the
/// Laplace scale `S / eps`.
fn part_scale(plan: &SumPlan, eps: Eps, sensitivity: Decimal) -> f64 {
    match plan.mechanism {
        Mechanism::Gaussian => gaussian_sigma(sensitivity, eps.exact),
        _ => sensitivity.to_f64().unwrap_or(f64::INFINITY) / eps.value.get(),
    }
}
