//! `HISTOGRAM` and `COUNT ... BY`: the counts of a cube's cells, or of groups of them,
//! released at once as one vector with one epsilon.
//!
//! Every group of the plan is released, empty or not (a group left out would say it is
//! empty). The vector's sensitivity is its L1 sensitivity under the table's neighbour model,
//! computed by the privacy layer from its parts (1 under `add_remove`, where a row is in one
//! cell; 2 under `replace`, where a row moves from one group to another); each part gets its
//! own noise of scale `S / eps`. The parts enter the history as rows of their own, so later
//! `ESTIMATE`s of unions of cells use them.

use super::count::{linear_scale, release_rng};
use super::{ledger_error, served, Entry, Session};
use crate::error::EvalError;
use crate::output::{ExplainedBudget, Explanation, HistogramPart, HistogramResult, Output};
use crate::plan::{Eps, HistogramPlan};
use crate::privacy::{Mechanism, Neighbours, PreparedVector, Refusal, Row, VectorRequest};
use crate::span::Span;
use crate::stats::noise;
use crate::stats::{accuracy, laplace, Epsilon};
use rand_chacha::ChaCha20Rng;
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;

/// What the transaction of a histogram found.
pub(super) enum HistogramDecision {
    /// Released now, or answered from the record of an identical histogram.
    Answered {
        noisy: Vec<f64>,
        sensitivity: f64,
        from_history: bool,
    },
    /// (`EXPLAIN`) It would be released with this sensitivity, the table's spending
    /// becoming `spent_after`.
    WouldRelease {
        sensitivity: f64,
        spent_after: Decimal,
    },
    /// (`EXPLAIN`) It would be refused: the budget does not hold it.
    WouldRefuse,
}

/// The most rows a table may have when its row count is private: a bound that reveals
/// nothing (as for counts).
const PUBLIC_ROWS_BOUND: u64 = 1 << 32;

impl Session {
    /// `HISTOGRAM ...` / `COUNT ... BY ...`.
    pub(super) fn histogram(
        &mut self,
        plan: HistogramPlan,
        span: Span,
    ) -> Result<Output, EvalError> {
        let i = self.index(&plan.table);
        self.refresh(i, span)?;
        if let Some(chart) = &plan.plot {
            self.chart_target(&chart.path, chart.span)?;
        }
        let (noisy, sensitivity, from_history) =
            match self.decide_histogram(&plan, i, false, span)? {
                HistogramDecision::Answered {
                    noisy,
                    sensitivity,
                    from_history,
                } => (noisy, sensitivity, from_history),
                HistogramDecision::WouldRelease { .. } | HistogramDecision::WouldRefuse => {
                    unreachable!("only a dry run stops before the release")
                }
            };
        Ok(Output::Histogram(Box::new(self.histogram_result(
            plan,
            i,
            noisy,
            sensitivity,
            from_history,
        ))))
    }

    /// Runs a histogram's transaction on its table's ledger; `dry` (EXPLAIN) stops before
    /// the release, spending, recording and drawing nothing.
    pub(super) fn decide_histogram(
        &mut self,
        plan: &HistogramPlan,
        i: usize,
        dry: bool,
        span: Span,
    ) -> Result<HistogramDecision, EvalError> {
        self.own_unit(i, span)?;
        let max_eps = self.max_eps(&plan.table);
        let max_releases = self.max_releases();
        served::permit_eps(max_eps, &plan.table, plan.eps.exact, span)?;
        let (seed, time) = (self.seed, (self.clock)());
        let entry = &self.entries[i];
        let (own, exposed) = match entry.private {
            Some(private) => match self.ledgers.two_mut(entry.ledger, private) {
                Some((practice, private)) => (practice, Some(private)),
                None => (self.ledgers.get_mut(entry.ledger), None),
            },
            None => (self.ledgers.get_mut(entry.ledger), None),
        };
        let txn = own.begin().map_err(ledger_error(span))?;
        super::same_unit(entry, txn.history(), span)?;
        let (request, noise_key) = vector_request(entry, plan, seed, time);
        let ticket = match txn.prepare_vector(request) {
            Ok(PreparedVector::Recorded(noisy)) => {
                let sensitivity = txn.history().vector_sensitivity(&parts(plan));
                return Ok(HistogramDecision::Answered {
                    noisy,
                    sensitivity: sensitivity.to_f64().unwrap_or(f64::INFINITY),
                    from_history: true,
                });
            }
            Ok(PreparedVector::Fits(ticket)) => *ticket,
            Err(Refusal::Exceeded(_) | Refusal::DatasetExceeded(_)) if dry => {
                return Ok(HistogramDecision::WouldRefuse)
            }
            Err(refusal) => {
                return Err(super::count::refused(
                    refusal,
                    entry,
                    &plan.table,
                    txn.ledger(),
                    (plan.eps.exact, plan.mechanism),
                    span,
                ))
            }
        };
        served::permit_release(max_releases, txn.history(), &plan.table, span)?;
        let sensitivity = ticket.sensitivity();
        let rows = public_rows(txn.history().neighbours(), entry);
        let noise = noise_for(plan, sensitivity, ticket.sigma2(), rows, span)?;
        if dry {
            return Ok(HistogramDecision::WouldRelease {
                sensitivity,
                spent_after: txn.vector_spent_after(&ticket),
            });
        }
        let cells = truths(entry, span)?;
        if let Some(private) = exposed {
            super::count::expose(private, time, span)?;
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
            .release_vector(ticket, || draw(&noise, &cells, plan, rng))
            .map_err(super::release_error(span))?;
        Ok(HistogramDecision::Answered {
            noisy,
            sensitivity,
            from_history: false,
        })
    }

    /// What is said of the released vector: each part's interval, the budget.
    fn histogram_result(
        &self,
        plan: HistogramPlan,
        i: usize,
        noisy: Vec<f64>,
        sensitivity: f64,
        from_history: bool,
    ) -> HistogramResult {
        let entry = &self.entries[i];
        let history = self.ledgers.get(entry.ledger).history();
        let sigma = gaussian_sigma(history, &plan);
        let (half, coverage95) = half_width(plan.mechanism, plan.eps, sensitivity, sigma);
        let parts: Vec<HistogramPart> = plan
            .groups
            .iter()
            .zip(&noisy)
            .map(|((name, _), &v)| HistogramPart {
                name: name.clone(),
                noisy: v,
                interval95: (v - half, v + half),
            })
            .collect();
        let plot = plan.plot.as_ref().map(|chart| {
            let svg = crate::output::plot::histogram_svg(&plan.statement, &parts);
            super::lab::outcome_of(&chart.path, svg)
        });
        HistogramResult {
            accounting: history.accounting(),
            sigma,
            equivalent: self.equivalent(history),
            grouped: plan.grouped,
            table: plan.table,
            statement: plan.statement,
            parts,
            eps: plan.eps.exact,
            eps_spent: if from_history {
                Decimal::ZERO
            } else {
                history.price(plan.eps.exact, plan.mechanism)
            },
            sensitivity,
            scale: sigma.unwrap_or(sensitivity / plan.eps.value.get()),
            mechanism: plan.mechanism.to_string(),
            coverage95,
            neighbours: history.neighbours(),
            unit_rows: history.unit().map_or(1, |u| u.max_rows),
            from_history,
            budget_spent: history.spent(),
            budget_remaining: history.remaining(),
            plot,
        }
    }
}

impl Session {
    /// `EXPLAIN HISTOGRAM ...`: its transaction run dry, under the ledger's lock.
    pub(super) fn explain_histogram(&mut self, plan: HistogramPlan, span: Span) -> Explanation {
        let i = self.index(&plan.table);
        let spent = self.ledgers.get(self.entries[i].ledger).history().spent();
        let total = self.ledgers.get(self.entries[i].ledger).history().total();
        let model = self
            .ledgers
            .get(self.entries[i].ledger)
            .history()
            .neighbours();
        let step = |l: &str, t: String| (l.to_string(), t);
        let what = if plan.groups.len() == 1 {
            "part"
        } else {
            "parts"
        };
        let mut steps = vec![
            step("table", format!("`{}`", plan.table)),
            step(
                "query",
                format!(
                    "{} {what} over the cube, every one released at once, empty ones included (leaving one out would say it is empty)",
                    plan.groups.len()
                ),
            ),
        ];
        let refused = |steps: &mut Vec<(String, String)>, why: String| {
            steps.push(step("refused", why));
            steps.push(step(
                "changes",
                "nothing: no budget spent, no history row, no noise drawn".into(),
            ));
        };
        let decided = self.decide_histogram(&plan, i, true, span);
        let (spends, budget) = match decided {
            Ok(HistogramDecision::WouldRelease {
                sensitivity,
                spent_after,
            }) => {
                let sigma =
                    gaussian_sigma(self.ledgers.get(self.entries[i].ledger).history(), &plan);
                let (half, _) = half_width(plan.mechanism, plan.eps, sensitivity, sigma);
                steps.push(step("sensitivity", format!(
                    "{}: {} (NEIGHBOURS {model})",
                    crate::output::short_number(sensitivity),
                    match (model, &self.entries[i].unit) {
                        (Neighbours::Replace, _) => "a replaced row leaves one part and enters another, moving two parts by 1 each".to_string(),
                        (Neighbours::AddRemove, None) => "an added or removed row moves one part by 1".to_string(),
                        (Neighbours::AddRemove, Some(u)) => format!("{}: a unit adds or removes up to {k} rows, moving the parts by {k} in all", crate::output::unit_clause(u), k = u.max_rows),
                    }
                )));
                steps.push(noise_step(&plan, sensitivity, sigma, half));
                let history = self.ledgers.get(self.entries[i].ledger).history();
                let price = history.price(plan.eps.exact, plan.mechanism);
                steps.push(step(
                    "budget",
                    format!(
                        "spends {} {} once for the whole vector: spent {} -> {} of {total}{}",
                        history.accounting().unit(),
                        price.normalize(),
                        spent.normalize(),
                        spent_after.normalize(),
                        self.equivalent_after(history, spent_after)
                    ),
                ));
                steps.push(history_step());
                (
                    plan.eps.exact,
                    Some(ExplainedBudget {
                        spent_before: spent,
                        spent_after,
                        total,
                    }),
                )
            }
            Ok(HistogramDecision::Answered { .. }) => {
                steps.push(step(
                    "budget",
                    "an identical histogram was answered before: its recorded answers, at no cost"
                        .into(),
                ));
                (Decimal::ZERO, None)
            }
            Ok(HistogramDecision::WouldRefuse) => {
                refused(&mut steps, "the budget does not hold it".into());
                (Decimal::ZERO, None)
            }
            Err(e) => {
                refused(&mut steps, e.to_string());
                (Decimal::ZERO, None)
            }
        };
        Explanation {
            statement: plan.statement,
            spends,
            draws_noise: !spends.is_zero(),
            budget,
            steps,
        }
    }
}

/// The parts of a plan as rows over the cube's cells: each group's indicator.
fn parts(plan: &HistogramPlan) -> Vec<Row> {
    plan.groups
        .iter()
        .map(|(_, cells)| {
            let cells: Vec<(usize, Decimal)> = cells.iter().map(|&j| (j, Decimal::ONE)).collect();
            Row::from_cells(&cells).expect("a group's cells are increasing")
        })
        .collect()
}

/// The request of a plan, and the key of its noise in a seeded session.
fn vector_request(
    entry: &Entry,
    plan: &HistogramPlan,
    seed: Option<u64>,
    time: u64,
) -> (VectorRequest, String) {
    let source = match seed {
        Some(seed) => format!("seed {seed}"),
        None => "private".to_string(),
    };
    let tail = format!("{}|{}", plan.eps.exact.normalize(), plan.mechanism);
    let keyed = |data: &str, query: &str| format!("{data}|{source}|{query}|{tail}");
    let request = VectorRequest {
        statement: plan.statement.clone(),
        key: keyed(&entry.key_prefix(), &plan.query_key),
        parts: parts(plan),
        cube: Some(plan.cube.clone()),
        eps: plan.eps.exact,
        mechanism: plan.mechanism,
        time,
    };
    let noise_query = format!("{}|{}", plan.cube, plan.query_key);
    (request, keyed(&entry.noise_prefix(seed), &noise_query))
}

/// The row count a release's exactness check may use: the table's when it is public, else a
/// bound that holds for any table.
fn public_rows(model: Neighbours, entry: &Entry) -> u64 {
    match model {
        Neighbours::Replace => entry.table.n_rows(),
        Neighbours::AddRemove => PUBLIC_ROWS_BOUND,
    }
}

/// The noise of every part.
enum Noise {
    /// Laplace of scale `S/eps` on a grid of `2^-k`.
    Laplace(noise::GridLaplace),
    /// The discrete Gaussian of variance parameter `S2^2 / (2 rho)` on a grid of `2^-k`.
    Gaussian(noise::GridGaussian),
    /// Discrete Laplace of scale `S/eps`, for whole answers.
    Geometric(noise::Rational),
}

/// The noise of a histogram's parts, or why it cannot be released exactly: its scale must be
/// exact, and the largest count (public: `n`, or a bound) must fit the exact arithmetic.
fn noise_for(
    plan: &HistogramPlan,
    sensitivity: f64,
    sigma2: Option<(u128, u128)>,
    rows: u64,
    span: Span,
) -> Result<Noise, EvalError> {
    let too_large = || EvalError::TooLarge {
        bound: rows.to_string(),
        span,
    };
    if plan.mechanism == Mechanism::Gaussian {
        // The ledger's variance, from the ticket: the noise is what the ledger charges.
        let gaussian =
            super::count::gaussian_noise(sigma2.ok_or_else(too_large)?, plan.eps.exact, span)?;
        if rows as f64 * 2f64.powi(gaussian.k() as i32) >= 2f64.powi(120) {
            return Err(too_large());
        }
        return Ok(Noise::Gaussian(gaussian));
    }
    let s = Decimal::try_from(sensitivity).map_err(|_| too_large())?;
    let scale = linear_scale(plan.eps, s).ok_or_else(too_large)?;
    Ok(match plan.mechanism {
        Mechanism::Geometric => Noise::Geometric(scale),
        _ => {
            let laplace = noise::GridLaplace::new(scale);
            let scaled = rows as f64 * 2f64.powi(laplace.k() as i32);
            if scaled >= 2f64.powi(120) {
                return Err(too_large());
            }
            Noise::Laplace(laplace)
        }
    })
}

/// `EXPLAIN`'s line on what a vector's parts become: rows of the history, which `ESTIMATE`
/// combines (Laplace and Gaussian answers alike, weighed by the inverse of their variance).
fn history_step() -> (String, String) {
    let text = "each part enters the history as a row of its own: later ESTIMATEs of unions of cells are free";
    ("history".to_string(), text.to_string())
}

/// `EXPLAIN`'s line on a vector's noise: its law and scale on every part, and its interval.
fn noise_step(
    plan: &HistogramPlan,
    sensitivity: f64,
    sigma: Option<f64>,
    half: f64,
) -> (String, String) {
    let text = match sigma {
        Some(sigma) => format!(
            "gaussian of standard deviation S2/sqrt(2 rho) = {} on every part, S2 = {} (the L2 sensitivity: the square root of the sum of the squared moves); 95% of answers lie within ±{} of the truth",
            crate::output::short_number(sigma),
            crate::output::short_number(sigma * (2.0 * plan.eps.value.get()).sqrt()),
            crate::output::short_number(half)
        ),
        None => format!(
            "{} of scale S/eps = {} on every part; 95% of answers lie within ±{} of the truth",
            plan.mechanism,
            crate::output::short_number(sensitivity / plan.eps.value.get()),
            crate::output::short_number(half)
        ),
    };
    ("noise".to_string(), text)
}

/// A Gaussian vector's standard deviation on every part, `sqrt(S2^2 / (2 rho))` with its
/// squared L2 sensitivity on the table's cube and model; `None` for other noise.
fn gaussian_sigma(history: &crate::privacy::History, plan: &HistogramPlan) -> Option<f64> {
    (plan.mechanism == Mechanism::Gaussian).then(|| {
        let l2 = history.vector_l2_squared(&parts(plan));
        let l2 = l2.to_f64().unwrap_or(f64::INFINITY);
        (l2 / (2.0 * plan.eps.exact.to_f64().unwrap_or(0.0))).sqrt()
    })
}

/// The true counts of all cells, in one pass over the table's rows, asked before anything
/// is spent.
fn truths(entry: &Entry, span: Span) -> Result<Vec<u64>, EvalError> {
    let cube = entry
        .cube
        .as_ref()
        .expect("the checker found the table's cube");
    entry
        .ask(|t| t.count_cells(&cube.buckets()))
        .map_err(|error| super::source_failed(entry, error, span))
}

/// Draws every part's noisy count: the true counts of the cells summed per group, each plus
/// its own noise.
fn draw(noise: &Noise, cells: &[u64], plan: &HistogramPlan, rng: &mut ChaCha20Rng) -> Vec<f64> {
    plan.groups
        .iter()
        .map(|(_, group)| {
            let truth: u64 = group.iter().map(|&j| cells[j]).sum();
            let truth = i128::from(truth);
            match noise {
                // Each part moves by at most its share of the L1 sensitivity S between
                // neighbours, and every part has noise of scale S/eps: the vector is eps-DP
                // (the Laplace mechanism on a vector, Dwork and Roth, Theorem 3.6), each part
                // drawn exactly on the grid (see GridLaplace).
                Noise::Laplace(laplace) => laplace
                    .release(rng, truth.saturating_mul(1i128 << laplace.k()))
                    .value(),
                // Independent discrete Gaussians of variance parameter S2^2 / (2 rho) on every
                // part: a neighbour moves the parts by a vector of squared length at most
                // S2^2, so the vector is rho-zCDP (see GridGaussian).
                Noise::Gaussian(gaussian) => gaussian
                    .release(rng, truth.saturating_mul(1i128 << gaussian.k()))
                    .value(),
                // Discrete Laplace: P(z) proportional to exp(-eps |z| / S), exactly.
                Noise::Geometric(scale) => (truth + noise::discrete_laplace(rng, *scale)) as f64,
            }
        })
        .collect()
}

/// The half-width of every part's 95% interval, and the probability it holds the true count
/// (0.95 for Laplace; at least 0.95 for whole-valued geometric noise).
pub(super) fn half_width(
    mechanism: Mechanism,
    eps: Eps,
    sensitivity: f64,
    sigma: Option<f64>,
) -> (f64, f64) {
    let ninety_five = crate::stats::Probability::new(0.95).expect("0.95 lies in (0, 1)");
    match mechanism {
        Mechanism::Gaussian => (
            sigma.unwrap_or(f64::INFINITY) * accuracy::normal_quantile(0.975),
            0.95,
        ),
        Mechanism::Geometric => {
            // Discrete Laplace of scale S/eps is the geometric mechanism at eps/S.
            let per = Epsilon::new(eps.value.get() / sensitivity).unwrap_or(eps.value);
            let m = accuracy::geometric_half_width(per, ninety_five);
            (m as f64, accuracy::geometric_coverage(per, m))
        }
        _ => (
            sensitivity * laplace::interval_half_width(eps.value, ninety_five),
            0.95,
        ),
    }
}
