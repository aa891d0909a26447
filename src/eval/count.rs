//! `COUNT`, linear queries and `WITHIN`: the utility-driven choice of epsilon, the request to
//! the release protocol, the exact noise, and what is said of the answer.

use super::cubes::table_error;
use super::{lab, ledger_error, ninety_five, Entry, Session};
use crate::error::EvalError;
use crate::output::{
    percent, short_number, AnsweredResult, ChooseEpsResult, CombinedAnswer, CountResult, Output,
};
use crate::plan::{ChoosePlan, CountPlan, Eps, Mechanism, Spend};
use crate::privacy::{History, Neighbours, Overspend, Prepared, Refusal, Request, Row, Where};
use crate::span::Span;
use crate::stats::exact::Scales;
use crate::stats::noise;
use crate::stats::{
    accuracy, bayes, blue, combine, laplace, staircase, Epsilon, Positive, Probability,
};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;

/// What a count's transaction decided.
pub(super) enum Decision {
    /// A `WITHIN` requirement met by the history: answered from it, spending nothing.
    Answered(Box<Met>),
    /// An identical earlier query: its recorded answer, at no cost.
    Reused {
        eps: Eps,
        noisy: f64,
        explain: Option<Why>,
    },
    /// Released now.
    Released {
        eps: Eps,
        noisy: f64,
        explain: Option<Why>,
    },
    /// (`EXPLAIN`) would be released, the table's spending becoming `spent_after`.
    WouldRelease {
        eps: Eps,
        explain: Option<Why>,
        spent_after: Decimal,
    },
    /// (`EXPLAIN`) would be refused: by the budget when `reason` is `None`.
    WouldRefuse {
        eps: Option<Eps>,
        explain: Option<Why>,
        reason: Option<String>,
    },
}

/// A `WITHIN` requirement the history meets.
pub(super) struct Met {
    /// The answer.
    pub(super) answer: AnsweredResult,
    /// Why, as `EXPLAIN` says it.
    pub(super) reason: String,
}

/// Why a `WITHIN` count spends what it spends.
#[derive(Debug, Clone)]
pub(super) struct Why {
    /// In words, as `why:` and `EXPLAIN` say it.
    pub(super) text: String,
    /// Theorem 5.3's epsilon: what a release alone would need.
    pub(super) eps_alone: Decimal,
    /// Set when the answer is the BLUE of the release and the history: the confidence asked.
    pub(super) combine: Option<Probability>,
}

/// What the `WITHIN` policy chose.
enum Within {
    Met(Box<Met>),
    Release { eps: Eps, why: Why },
}

/// The noise of a release, chosen before anything is spent.
enum Noise {
    Laplace(noise::GridLaplace),
    Gaussian(noise::GridGaussian),
    Geometric(noise::ExactEpsilon),
    Staircase(noise::GridStaircase),
}

impl Session {
    /// `COUNT ...`: answered from the history, from an identical earlier query, or released
    /// through the release protocol.
    pub(super) fn count(&mut self, plan: CountPlan, span: Span) -> Result<Output, EvalError> {
        if let Some(chart) = &plan.plot {
            self.chart_target(&chart.path, chart.span)?;
        }
        let i = self.index(&plan.table);
        let (eps, noisy, from_history, explain) = match self.decide(&plan, i, false, span)? {
            Decision::Answered(met) => return Ok(Output::Answered(met.answer)),
            Decision::Reused {
                eps,
                noisy,
                explain,
            } => (eps, noisy, true, explain),
            Decision::Released {
                eps,
                noisy,
                explain,
            } => (eps, noisy, false, explain),
            Decision::WouldRelease { .. } | Decision::WouldRefuse { .. } => {
                unreachable!("only a dry run stops before the release")
            }
        };
        let combine = explain.as_ref().and_then(|why| why.combine);
        let query = dense_query(&plan, &self.entries[i]);
        let mut result = self.count_result(plan, i, eps, noisy, from_history, explain);
        if let (Some(confidence), Some(query)) = (combine, query) {
            result.combined = Some(self.combined_answer(i, &query, confidence, span)?);
        }
        Ok(Output::Count(Box::new(result)))
    }

    /// The answer of a `WITHIN` release combined with the history: the BLUE of the query from
    /// every answer now recorded, this release included (Xiao and Xiong 2012, section 5: the release
    /// joins the history), with its certified central interval at the confidence asked.
    fn combined_answer(
        &self,
        i: usize,
        query: &[f64],
        confidence: Probability,
        span: Span,
    ) -> Result<CombinedAnswer, EvalError> {
        let entry = &self.entries[i];
        let history = self.ledgers.get(entry.ledger).history();
        let (estimate, scales) = table_error(entry, history, query, span)?;
        let h = combine::half_width(&scales, confidence);
        let h95 = combine::half_width(&scales, ninety_five());
        Ok(CombinedAnswer {
            estimate: estimate.value,
            variance: estimate.variance,
            confidence: confidence.get(),
            interval: (estimate.value - h, estimate.value + h),
            credible95: (estimate.value - h95, estimate.value + h95),
        })
    }

    /// Runs a count's transaction on its table's ledger; `dry` (EXPLAIN) stops before the
    /// release, spending nothing, recording nothing and drawing nothing.
    pub(super) fn decide(
        &mut self,
        plan: &CountPlan,
        i: usize,
        dry: bool,
        span: Span,
    ) -> Result<Decision, EvalError> {
        self.own_unit(i, span)?;
        let max_eps = self.max_eps(&plan.table);
        let max_releases = self.max_releases();
        let entry = &self.entries[i];
        // In a seeded session the release goes to a practice copy, and the data's own ledger is
        // marked exposed first (see `expose`).
        let (practice, own) = match entry.private {
            Some(own) => match self.ledgers.two_mut(entry.ledger, own) {
                Some((practice, own)) => (practice, Some(own)),
                None => (self.ledgers.get_mut(entry.ledger), None),
            },
            None => (self.ledgers.get_mut(entry.ledger), None),
        };
        let txn = practice.begin().map_err(ledger_error(span))?;
        super::same_unit(entry, txn.history(), span)?;
        let (eps, explain) = match plan.spend {
            Spend::Eps(eps) => (eps, None),
            Spend::Within {
                half_width,
                confidence,
            } => match within(entry, txn.history(), plan, half_width, confidence, span)? {
                Within::Met(met) => return Ok(Decision::Answered(met)),
                Within::Release { eps, why } => (eps, Some(why)),
            },
        };
        super::served::permit_eps(max_eps, &plan.table, eps.exact, span)?;
        let (request, noise_key) = request(entry, plan, eps, self.seed, (self.clock)());
        let public_rows = public_rows(txn.history(), entry);
        let time = (self.clock)();
        let refuse = |r| {
            let spend = (eps.exact, plan.mechanism);
            refused(r, entry, &plan.table, txn.ledger(), spend, span)
        };
        let ticket = match txn.prepare(request) {
            Ok(Prepared::Recorded(r)) => {
                return Ok(Decision::Reused {
                    eps,
                    noisy: r.noisy,
                    explain,
                })
            }
            Ok(Prepared::Fits(ticket)) => *ticket,
            Err(Refusal::Exceeded(_)) if dry => {
                return Ok(Decision::WouldRefuse {
                    eps: Some(eps),
                    explain,
                    reason: None,
                })
            }
            Err(r) => return Err(refuse(r)),
        };
        super::served::permit_release(max_releases, txn.history(), &plan.table, span)?;
        let noise = noise_for(plan, public_rows, eps, ticket.sigma2(), span);
        if dry {
            return Ok(match noise {
                Ok(_) => Decision::WouldRelease {
                    eps,
                    explain,
                    spent_after: txn.spent_after(&ticket),
                },
                Err(error) => Decision::WouldRefuse {
                    eps: Some(eps),
                    explain,
                    reason: Some(error.to_string()),
                },
            });
        }
        let noise = noise?;
        let truth = truth(entry, plan, span)?;
        if let Some(own) = own {
            expose(own, time, span)?;
        }
        self.drawn = true;
        let mut seeded;
        let rng: &mut ChaCha20Rng = match self.seed {
            Some(seed) => {
                seeded = release_rng(seed, &noise_key);
                &mut seeded
            }
            None => &mut self.rng,
        };
        let recorded = txn
            .release(ticket, || draw(&noise, plan, truth, rng))
            .map_err(super::release_error(span))?;
        Ok(Decision::Released {
            eps,
            noisy: recorded.noisy,
            explain,
        })
    }

    /// What is said of a noisy answer: its interval, the Bayes estimate with a prior, the
    /// probability of an answer out of range, and the budget. Post-processing of public facts.
    fn count_result(
        &self,
        plan: CountPlan,
        i: usize,
        eps: Eps,
        noisy: f64,
        from_history: bool,
        explain: Option<Why>,
    ) -> CountResult {
        let entry = &self.entries[i];
        let history = self.ledgers.get(entry.ledger).history();
        // The size a prior and the out-of-range probability speak of: the row count when it is
        // public, else only a size the user gave (`PRIOR ... N`).
        let public = (history.neighbours() == Neighbours::Replace).then(|| entry.table.n_rows());
        let size = plan.prior.and_then(|p| p.n).or(public);
        let e = eps.value;
        let sensitivity = plan.sensitivity.to_f64().unwrap_or(f64::INFINITY);
        let plain = plan.single().is_some();
        let law = NoiseLaw::of(&plan, eps);
        let (half, coverage95) = law.interval95();
        let posterior = plan.prior.zip(size).map(|(p, n)| {
            let post = bayes::posterior(n, p.p, law.per, noisy, ninety_five());
            (p.p, n, post)
        });
        let out_of_range = size.filter(|n| plain && (noisy < 0.0 || noisy > *n as f64));
        let out_of_range = out_of_range.map(|n| law.out_of_range_max(n));
        let (per, stairs, sigma) = (law.per, law.stairs, law.sigma);
        let posterior_shape = posterior.and_then(|(p, n, post)| {
            lab::posterior_shape(n, p, per, noisy, (post.lower, post.upper), SHAPE_BINS)
        });
        let plot = match (&plan.plot, posterior) {
            (Some(chart), Some((p, n, post))) => {
                let svg = lab::posterior_chart(n, p, per, noisy, &post, &plan.statement);
                Some(lab::outcome_of(&chart.path, svg))
            }
            _ => None,
        };
        let posterior = posterior.map(|(_, _, post)| post);
        let spent = history.spent();
        CountResult {
            accounting: history.accounting(),
            sigma,
            equivalent: self.equivalent(history),
            warnings: warnings(&plan, size, noisy, half),
            grid: grid(plan.mechanism, eps, plan.sensitivity),
            table: plan.table,
            statement: plan.statement,
            noisy,
            eps: eps.exact,
            mechanism: plan.mechanism.to_string(),
            scale: sigma.unwrap_or(sensitivity / e.get()),
            n: public,
            size,
            neighbours: history.neighbours(),
            interval95: (noisy - half, noisy + half),
            coverage95,
            prior: plan.prior.map(|p| p.p.get()),
            bayes: posterior.map(|p| p.mean),
            credible95: posterior.map(|p| (p.lower, p.upper)),
            out_of_range,
            from_history,
            eps_spent: if from_history {
                Decimal::ZERO
            } else {
                history.price(eps.exact, plan.mechanism)
            },
            budget_spent: spent,
            budget_remaining: history.remaining(),
            sensitivity,
            plain,
            eps_alone: explain.as_ref().map(|why| why.eps_alone),
            combined: None,
            explain: explain.map(|why| why.text),
            outside_cube: plan.outside,
            gamma: stairs.map(|law| law.gamma()),
            posterior_shape,
            plot,
        }
    }
}

/// The law of a count's noise, for what is said of its answer.
struct NoiseLaw {
    mechanism: Mechanism,
    /// The release's epsilon.
    eps: Epsilon,
    /// A plain count's noise, interval and posterior are those of `eps / S` per whole step.
    per: Epsilon,
    /// The sensitivity.
    sensitivity: f64,
    /// Staircase noise's law.
    stairs: Option<staircase::Staircase>,
    /// Gaussian noise's standard deviation.
    sigma: Option<f64>,
}

impl NoiseLaw {
    fn of(plan: &CountPlan, eps: Eps) -> Self {
        Self {
            mechanism: plan.mechanism,
            eps: eps.value,
            per: per_step(eps, plan.sensitivity).map_or(eps.value, |p| p.value),
            sensitivity: plan.sensitivity.to_f64().unwrap_or(f64::INFINITY),
            stairs: (plan.mechanism == Mechanism::Staircase)
                .then(|| staircase_law(per_step(eps, plan.sensitivity).unwrap_or(eps))),
            sigma: (plan.mechanism == Mechanism::Gaussian)
                .then(|| gaussian_sigma(plan.sensitivity, eps.exact)),
        }
    }

    /// The half-width of the 95% noise interval, and the probability it holds the truth.
    fn interval95(&self) -> (f64, f64) {
        match (self.mechanism, self.stairs, self.sigma) {
            (Mechanism::Staircase, Some(law), _) => (law.half_width(ninety_five()), 0.95),
            (Mechanism::Gaussian, _, Some(sigma)) => {
                (sigma * accuracy::normal_quantile(0.975), 0.95)
            }
            (Mechanism::Geometric, _, _) => {
                // Whole values: the smallest whole half-width holding 95% holds more.
                let m = accuracy::geometric_half_width(self.per, ninety_five());
                (m as f64, accuracy::geometric_coverage(self.per, m))
            }
            _ => (
                self.sensitivity * laplace::interval_half_width(self.eps, ninety_five()),
                0.95,
            ),
        }
    }

    /// The largest probability of an answer outside `[0, n]` over true counts in it: at a
    /// true count of 0, `P(noise < 0) + P(noise > n)`.
    fn out_of_range_max(&self, n: u64) -> f64 {
        match (self.mechanism, self.stairs, self.sigma) {
            (Mechanism::Staircase, Some(law), _) => 0.5 + (1.0 - law.cdf(n as f64)),
            (Mechanism::Gaussian, _, Some(sigma)) => {
                0.5 + accuracy::normal_upper_tail(n as f64 / sigma)
            }
            (Mechanism::Geometric, _, _) => accuracy::geometric_out_of_range_max(n, self.per),
            _ => accuracy::out_of_range_max(n, self.per),
        }
    }
}

/// `COUNT ... WITHIN w AT c`: from the history when its certified central interval at `c` is
/// within `±w` (Xiao and Xiong 2012, section 5); else released with the least epsilon whose release,
/// combined with the history by the BLUE, meets it (`stats::combine`), never more than the
/// epsilon a release alone needs (Theorem 5.3), which is shown for comparison. On a zCDP
/// table (a Gaussian plan) the same with the least rho: alone, `sigma = w / z_{(1+c)/2}`
/// (allowing for the grid) and `rho = S^2 / (2 sigma^2)`.
///
/// The choice depends only on public things: the history's design and epsilons (through the
/// scales of its BLUE's error, never its answers), the query's sensitivity and the requirement.
/// No noisy value and no data enter it, so it reveals nothing and needs no budget.
fn within(
    entry: &Entry,
    history: &History,
    plan: &CountPlan,
    half_width: Positive,
    confidence: Probability,
    span: Span,
) -> Result<Within, EvalError> {
    let (w, c) = (half_width.get(), confidence.get());
    let percent = percent(c);
    let sensitivity = plan.sensitivity.to_f64().unwrap_or(f64::INFINITY);
    let s = Positive::new(sensitivity).map_err(|_| EvalError::UnusableEpsilon {
        eps: f64::NAN,
        span,
    })?;
    let gaussian = plan.mechanism == Mechanism::Gaussian;
    let (alone, alone_text) = if gaussian {
        alone_rho(s, half_width, confidence, span)?
    } else {
        alone_eps(s, half_width, confidence, span)?
    };
    let (why, scales) = match history_error(entry, history, plan, span)? {
        HistoryError::NoCube => (
            if plan.outside.is_some() {
                "the count is outside the cube, so earlier answers cannot be combined".to_string()
            } else {
                "no cube is declared, so earlier answers cannot be combined".to_string()
            },
            None,
        ),
        HistoryError::NotEstimable(cells) => (
            format!("the history cannot estimate it yet ({cells})"),
            None,
        ),
        HistoryError::Estimable(estimate, scales) => {
            let h = combine::half_width(&scales, confidence);
            if h <= w {
                return Ok(Within::Met(Box::new(met(
                    plan, history, &estimate, &scales, h, half_width, confidence,
                ))));
            }
            let why = format!(
                "the history's {percent}% credible interval has half-width {} > {}",
                short_number(h),
                short_number(w)
            );
            (why, Some(scales))
        }
    };
    let requirement = format!("±{} at {percent}%", short_number(w));
    let combined = match (&scales, plan.mechanism) {
        // Laplace and Gaussian releases are evidence for the BLUE.
        (Some(scales), Mechanism::Laplace | Mechanism::Gaussian) => Some(combined_eps(
            scales,
            (sensitivity, gaussian),
            w,
            confidence,
            alone,
        )),
        _ => None,
    };
    let (name, word) = if gaussian {
        ("rho", "rho")
    } else {
        ("eps", "epsilon")
    };
    let (eps, text) = match combined {
        Some(Some(eps)) => (
            eps,
            format!(
                "{why}; alone: {alone_text}; combined: {name} = {} (the least whose release, combined with the history by the BLUE, meets {requirement}, found to a relative {:e} from the exact distribution of the combined error and rounded up): released with {name} = {}",
                eps.exact.normalize(),
                combine::SEARCH_PRECISION,
                eps.exact.normalize()
            ),
        ),
        Some(None) => (
            alone,
            format!("{why}; alone: {alone_text}; combined with the history by the BLUE no {word} up to that meets {requirement} (a low confidence, where the history's noise widens the combined interval): released alone with {name} = {}", alone.exact.normalize()),
        ),
        None => (
            alone,
            format!("{why}; released with the least {word} that meets {requirement}: {alone_text}"),
        ),
    };
    Ok(Within::Release {
        eps,
        why: Why {
            text,
            eps_alone: alone.exact,
            // Answered with the BLUE of the release and the history only when that meets the
            // requirement; else the release alone does (Theorem 5.3).
            combine: combined.flatten().map(|_| confidence),
        },
    })
}

/// Theorem 5.3: the least epsilon whose Laplace release alone meets `±w` at `c`, rounded up
/// to six significant digits so that the budget adds exactly, and how it was found.
fn alone_eps(
    s: Positive,
    half_width: Positive,
    confidence: Probability,
    span: Span,
) -> Result<(Eps, String), EvalError> {
    let raw = accuracy::eps_for_half_width(s, half_width, confidence);
    let alone = round_up_eps(raw).ok_or(EvalError::UnusableEpsilon { eps: raw, span })?;
    let text = format!(
        "eps = S ln(1/delta) / w = {} ln(1/{}) / {} = {} (Xiao and Xiong 2012, Theorem 5.3)",
        short_number(s.get()),
        short_number(1.0 - confidence.get()),
        short_number(half_width.get()),
        alone.exact.normalize()
    );
    Ok((alone, text))
}

/// The least rho whose Gaussian release alone meets `±w` at `c`: `sigma` with
/// `z_{(1+c)/2} sigma` plus the grid's allowance (`combine::NORMAL_GRID_MARGIN` sigma) equal to
/// `w`, and `rho = S^2 / (2 sigma^2)` rounded up to six significant digits (and checked: a
/// unit of the sixth digit more if the certified check disagrees).
fn alone_rho(
    s: Positive,
    half_width: Positive,
    confidence: Probability,
    span: Span,
) -> Result<(Eps, String), EvalError> {
    let (sens, w) = (s.get(), half_width.get());
    let z = accuracy::normal_quantile((1.0 + confidence.get()) / 2.0);
    let sigma = w / (z + combine::NORMAL_GRID_MARGIN);
    let raw = sens * sens / (2.0 * sigma * sigma);
    let mut rho = round_up_eps(raw).ok_or(EvalError::UnusableRho { rho: raw, span })?;
    for _ in 0..4 {
        let release = combine::combined_gaussian(&Scales::default(), sens, rho.value.get());
        if combine::meets(&release, w, confidence) {
            break;
        }
        let more = rho.value.get() * (1.0 + 1e-5);
        rho = round_up_eps(more).ok_or(EvalError::UnusableRho { rho: more, span })?;
    }
    let text = format!(
        "rho = S^2 / (2 sigma^2) with sigma = w / (z + 2^-9) = {} / ({} + 2^-9) = {} (the normal quantile at {}, the grid allowed for): rho = {}",
        short_number(w),
        short_number(z),
        short_number(sigma),
        short_number((1.0 + confidence.get()) / 2.0),
        rho.exact.normalize()
    );
    Ok((rho, text))
}

/// What the history says of a `WITHIN` query.
enum HistoryError {
    /// No cube: answers cannot be combined.
    NoCube,
    /// The history cannot estimate it: which cells lack evidence.
    NotEstimable(String),
    /// Its BLUE and the scales of the BLUE's error.
    Estimable(blue::Estimate, Scales),
}

/// The history's BLUE of a `WITHIN` query and the scales of its error, if it has one.
fn history_error(
    entry: &Entry,
    history: &History,
    plan: &CountPlan,
    span: Span,
) -> Result<HistoryError, EvalError> {
    let Some(query) = dense_query(plan, entry) else {
        return Ok(HistoryError::NoCube);
    };
    match table_error(entry, history, &query, span) {
        Ok((estimate, scales)) => Ok(HistoryError::Estimable(estimate, scales)),
        Err(EvalError::NotEstimable { cells, .. }) => Ok(HistoryError::NotEstimable(cells)),
        Err(e) => Err(e),
    }
}

/// The answer from the history, which meets the requirement: certified half-width `h <= w`.
fn met(
    plan: &CountPlan,
    history: &History,
    estimate: &blue::Estimate,
    scales: &Scales,
    h: f64,
    half_width: Positive,
    confidence: Probability,
) -> Met {
    let (w, c) = (short_number(half_width.get()), confidence.get());
    let percent = percent(c);
    let hs = short_number(h);
    let h95 = combine::half_width(scales, ninety_five());
    Met {
        reason: format!("its {percent}% credible interval from the history has half-width {hs} <= {w}: answered from the history (Xiao and Xiong 2012, section 5)"),
        answer: AnsweredResult {
            table: plan.table.clone(),
            statement: plan.statement.clone(),
            estimate: estimate.value,
            variance: estimate.variance,
            confidence: c,
            interval: (estimate.value - h, estimate.value + h),
            credible95: (estimate.value - h95, estimate.value + h95),
            explain: format!("answered from the history: its {percent}% credible interval has half-width {hs} <= {w}, so nothing was spent (Xiao and Xiong 2012, section 5)"),
            budget_spent: history.spent(),
            budget_remaining: history.remaining(),
        },
    }
}

/// [`combine::least_eps`] or [`combine::least_rho`].
type Search = fn(&Scales, f64, f64, Probability, f64) -> Option<f64>;
/// [`combine::combined_scales`] or [`combine::combined_gaussian`].
type Combine = fn(&Scales, f64, f64) -> Scales;

/// The least epsilon (rho, for a Gaussian release), rounded up to six significant digits,
/// whose release combined with the history meets `±w` at `confidence`, if below what the
/// release `alone` needs. A function of public things only (see [`within`]).
fn combined_eps(
    scales: &Scales,
    (sensitivity, gaussian): (f64, bool),
    w: f64,
    confidence: Probability,
    alone: Eps,
) -> Option<Eps> {
    let ceiling = alone.value.get();
    let (least, with): (Search, Combine) = if gaussian {
        (combine::least_rho, combine::combined_gaussian)
    } else {
        (combine::least_eps, combine::combined_scales)
    };
    let raw = least(scales, sensitivity, w, confidence, ceiling)?;
    let mut eps = round_up_eps(raw)?;
    // Rounding up keeps the requirement met (the tail falls as eps grows); checked, and stepped
    // up by a unit of the sixth digit if the check ever disagrees.
    for _ in 0..4 {
        if eps.exact >= alone.exact {
            return None;
        }
        let scales = with(scales, sensitivity, eps.value.get());
        if combine::meets(&scales, w, confidence) {
            return Some(eps);
        }
        eps = round_up_eps(eps.value.get() * (1.0 + 1e-5))?;
    }
    None
}

/// The query's coefficients over the cells of the entry's cube, when it has one.
fn dense_query(plan: &CountPlan, entry: &Entry) -> Option<Vec<f64>> {
    let cube = entry.cube.as_ref().filter(|_| plan.outside.is_none())?;
    let mut query = vec![0.0; cube.cells()];
    for (j, coefficient) in &plan.row {
        query[*j] = coefficient.to_f64().unwrap_or(f64::NAN);
    }
    Some(query)
}

/// The request of a count released with `eps`, and the key its seeded noise derives from.
///
/// Answers are reused only for the data they were computed on (the keyed fingerprint is in
/// the key), and a seeded answer (reproducible, so not private) only by a session with the
/// same seed; a ledger holds one cube, so a row over its cells names one query there. A
/// seeded release's noise derives from the plain hash of the content instead, so that a
/// seeded script gives the same answers in every state directory, and from the cube as well
/// as the row.
fn request(
    entry: &Entry,
    plan: &CountPlan,
    eps: Eps,
    seed: Option<u64>,
    time: u64,
) -> (Request, String) {
    let source = match seed {
        Some(seed) => format!("seed {seed}"),
        None => "private".to_string(),
    };
    let tail = format!("{}|{}", eps.exact.normalize(), plan.mechanism);
    let keyed = |data: &str, query: &str| format!("{data}|{source}|{query}|{tail}");
    let request = Request {
        statement: plan.statement.clone(),
        key: keyed(&entry.key_prefix(), &plan.release_key),
        alt_key: plan
            .plain_key
            .as_ref()
            .map(|k| keyed(&entry.key_prefix(), k)),
        row: Row::from_cells(&plan.row).expect("a plan's row is by increasing cell"),
        cube: plan.cube.clone(),
        neighbours: plan.neighbours,
        eps: eps.exact,
        sensitivity: plan.sensitivity.to_f64().unwrap_or(f64::INFINITY),
        mechanism: plan.mechanism,
        measure: crate::privacy::Measure::Rows,
        time,
    };
    // A row over cells means nothing without its cube: two cubes of as many cells must not
    // give the same row the same noise (the difference of two answers would be exact).
    let noise_query = match &plan.cube {
        Some(spec) => format!("{spec}|{}", plan.query_key),
        None => plan.query_key.clone(),
    };
    (request, keyed(&entry.noise_prefix(seed), &noise_query))
}

/// The error of a refused request, in the statement's words.
/// The error of a release the ledger refused: another cube or model under it, or a budget
/// (the table's, a cell's, or a served dataset's) it would pass. `spend` is the release's
/// epsilon (rho, for a Gaussian release) and mechanism.
pub(super) fn refused(
    refusal: Refusal,
    entry: &Entry,
    table: &str,
    ledger: &crate::privacy::Ledger,
    spend: (Decimal, Mechanism),
    span: Span,
) -> EvalError {
    match refusal {
        Refusal::CubeChanged => EvalError::CubeChanged {
            table: table.to_string(),
            span,
        },
        Refusal::ModelChanged => EvalError::ModelChanged {
            table: table.to_string(),
            span,
        },
        Refusal::AccountingChanged => EvalError::AccountingChanged {
            table: table.to_string(),
            span,
        },
        // The dataset's spending is all its analysts': said only where its policy shows it.
        Refusal::DatasetExceeded(Overspend { after, .. }) => EvalError::DatasetBudgetExceeded {
            table: table.to_string(),
            shown: entry
                .rules
                .as_ref()
                .is_some_and(|r| r.show_dataset_budget)
                .then(|| (after, ledger.whole().total())),
            span,
        },
        Refusal::Exceeded(o) => {
            let history = ledger.history();
            let price = history.price(spend.0, spend.1);
            overspend_error(o, entry, table, history, price, span)
        }
    }
}

/// The error of a release past the budget of table `table`: where, and what it would spend
/// (`requested`, in the table's unit).
pub(super) fn overspend_error(
    o: Overspend,
    entry: &Entry,
    table: &str,
    history: &History,
    requested: Decimal,
    span: Span,
) -> EvalError {
    let Overspend { at, after } = o;
    let name = |j: usize| {
        entry
            .cube
            .as_ref()
            .map_or_else(|| format!("{}", j + 1), |c| c.cell_name(j))
    };
    match at {
        Where::Cell(j) => EvalError::CellsExceeded {
            table: table.to_string(),
            cell: name(j),
            after,
            total: history.total(),
            span,
        },
        Where::Pair(j, k) => EvalError::PairExceeded {
            table: Some(table.to_string()),
            first: format!("[{}]", name(j)),
            second: format!("[{}]", name(k)),
            after,
            total: history.total(),
            span,
        },
        Where::Exposed => EvalError::Exposed {
            table: table.to_string(),
            span,
        },
        Where::Table => EvalError::BudgetExceeded {
            table: table.to_string(),
            unit: history.accounting().unit(),
            requested,
            remaining: history.remaining(),
            total: history.total(),
            span,
        },
    }
}

/// Marks the data's own ledger exposed before a seeded release is drawn: whoever knows the
/// seed can recover the true count from the answer, so its private budget is used up for
/// good. The seeded release itself is recorded in the session's practice copy only: nothing
/// stored beside the data holds an answer that a guess of the data could reproduce.
pub(super) fn expose(
    own: &mut crate::privacy::Ledger,
    time: u64,
    span: Span,
) -> Result<(), EvalError> {
    let mut txn = own.begin().map_err(ledger_error(span))?;
    if !txn.history().exposed() {
        txn.expose(time).map_err(ledger_error(span))?;
    }
    Ok(())
}

/// The most rows a table may have, whatever it holds: a bound that reveals nothing when the
/// row count is private.
const PUBLIC_ROWS_BOUND: u64 = 1 << 32;

/// The row count a release's exactness check may use: the table's when it is public, else
/// a bound that holds for any table.
fn public_rows(history: &History, entry: &Entry) -> u64 {
    match history.neighbours() {
        Neighbours::Replace => entry.table.n_rows(),
        Neighbours::AddRemove => PUBLIC_ROWS_BOUND,
    }
}

/// The noise of a release, or why it cannot be released exactly: its scale must be exact and
/// its largest possible answer (public: n and the coefficients) must fit the exact integer
/// arithmetic, so that nothing in the release can fail on the data.
///
/// A Gaussian release's variance parameter is the ledger's (`sigma2`, from the ticket): the
/// noise is drawn with what the ledger charges.
fn noise_for(
    plan: &CountPlan,
    n: u64,
    eps: Eps,
    sigma2: Option<(u128, u128)>,
    span: Span,
) -> Result<Noise, EvalError> {
    let total: Decimal = plan.terms.iter().map(|(c, _)| c.abs()).sum();
    let bound = total.to_f64().unwrap_or(f64::INFINITY) * n as f64;
    let too_large = || EvalError::TooLarge {
        bound: short_number(bound),
        span,
    };
    if plan.mechanism == Mechanism::Gaussian {
        let gaussian = gaussian_noise(sigma2.ok_or_else(too_large)?, eps.exact, span)?;
        let scaled = bound * 2f64.powi(gaussian.k() as i32);
        if !(bound < 2f64.powi(90) && scaled < 2f64.powi(120)) {
            return Err(too_large());
        }
        return Ok(Noise::Gaussian(gaussian));
    }
    let laplace =
        noise::GridLaplace::new(linear_scale(eps, plan.sensitivity).ok_or_else(too_large)?);
    if plan.single().is_none() {
        let scaled = bound * 2f64.powi(laplace.k() as i32);
        if !(bound < 2f64.powi(90) && scaled < 2f64.powi(120)) {
            return Err(too_large());
        }
    }
    let per = || per_step(eps, plan.sensitivity).ok_or_else(too_large);
    Ok(match plan.mechanism {
        Mechanism::Laplace => Noise::Laplace(laplace),
        Mechanism::Geometric => Noise::Geometric(per()?.noise),
        Mechanism::Staircase => Noise::Staircase(staircase_noise(per()?)),
        Mechanism::Smooth | Mechanism::Gaussian => {
            unreachable!("checking refuses smooth noise on a count; Gaussian noise is above")
        }
    })
}

/// The epsilon of each whole step of a plain count's answer: `eps / S`. A count of
/// sensitivity `S` (a privacy unit of `S` rows) moves by at most `S` whole steps, so
/// geometric noise at `eps / S` (the discrete Laplace of scale `S / eps`) or staircase noise
/// at `eps / S` over unit steps is `eps`-DP on it; its intervals and posterior are those of
/// that noise. `eps` itself for `S = 1`; `None` when it cannot be held exactly (the release
/// is then refused, never made with less noise).
pub(super) fn per_step(eps: Eps, sensitivity: Decimal) -> Option<Eps> {
    if sensitivity == Decimal::ONE {
        return Some(eps);
    }
    let k = sensitivity
        .to_u128()
        .filter(|k| *k >= 1 && sensitivity.fract().is_zero())?;
    Some(Eps {
        value: Epsilon::new(eps.value.get() / k as f64).ok()?,
        exact: eps.exact,
        noise: eps.noise.per_step(k)?,
    })
}

/// The true answer: `sum_t c_t count_t` (a single count for a plain `COUNT`), asked of the
/// table's rows once the budget is known to allow the release and before anything is spent,
/// so a source that fails changes nothing.
///
/// The sum is an integer (whole coefficients), at most n sum |c_t| < 2^90 in magnitude
/// (checked from public facts before), so the i128 arithmetic never overflows.
fn truth(entry: &Entry, plan: &CountPlan, span: Span) -> Result<i128, EvalError> {
    let mut total = 0i128;
    for (c, p) in &plan.terms {
        let count = entry
            .ask(|t| t.count(p))
            .map_err(|error| super::source_failed(entry, error, span))?;
        let c = c.to_i128().unwrap_or(0);
        total = total.saturating_add(c.saturating_mul(i128::from(count)));
    }
    Ok(total)
}

/// Draws a release: the true answer plus the noise.
fn draw(noise: &Noise, plan: &CountPlan, truth: i128, rng: &mut ChaCha20Rng) -> f64 {
    let count = || i64::try_from(truth).unwrap_or(if truth < 0 { i64::MIN } else { i64::MAX });
    match (noise, plan.single()) {
        (Noise::Laplace(laplace), Some(_)) => {
            // Paper 1, section 2: the Laplace mechanism, noise of scale Δf/ε with Δf = 1, drawn
            // exactly as discrete Laplace steps of a 2^-k grid: eps-DP with no extra cost for a
            // count (see stats::noise::GridLaplace).
            laplace.release_count(rng, count()).value()
        }
        (Noise::Laplace(laplace), None) => {
            // sum_t c_t count_t = sum_j h_j x_j. Neighbouring data move it by at most S
            // (max |h_j| when a row is added or removed, Lemma 2.1; max |h_j - h_k| when one
            // is replaced), i.e. S 2^k grid steps, and the noise has S/eps 2^k steps of
            // scale: eps-DP exactly (see GridLaplace).
            laplace
                .release(rng, truth.saturating_mul(1i128 << laplace.k()))
                .value()
        }
        (Noise::Gaussian(gaussian), _) => {
            // sum_j h_j x_j moves by at most S (the L2 sensitivity of one answer), S 2^k grid
            // steps; the discrete Gaussian of sigma2 4^k steps is S^2 / (2 sigma2) = rho-zCDP
            // on it (see GridGaussian).
            gaussian
                .release(rng, truth.saturating_mul(1i128 << gaussian.k()))
                .value()
        }
        (Noise::Geometric(eps), _) => {
            // P(z) = (1-a)/(1+a) a^|z|, a = e^-eps, exactly.
            (i128::from(count()) + noise::geometric(rng, *eps)) as f64
        }
        (Noise::Staircase(stairs), _) => {
            // The staircase of the variance-optimal gamma, exactly on the grid 2^-20: eps-DP
            // (see stats::noise::GridStaircase).
            stairs.release_count(rng, count()).value()
        }
    }
}

/// A Gaussian release's standard deviation `S / sqrt(2 rho)`, for display and intervals.
pub(super) fn gaussian_sigma(sensitivity: Decimal, rho: Decimal) -> f64 {
    let s = sensitivity.to_f64().unwrap_or(f64::INFINITY);
    s / (2.0 * rho.to_f64().unwrap_or(0.0)).sqrt()
}

/// The exact Gaussian sampler for the variance parameter `sigma2` the ledger gives a release
/// of `rho`, on a grid of at most `2^-10` of its standard deviation, or why there is none.
pub(super) fn gaussian_noise(
    (p, q): (u128, u128),
    rho: Decimal,
    span: Span,
) -> Result<noise::GridGaussian, EvalError> {
    noise::Rational::new(p, q)
        .and_then(noise::GridGaussian::new)
        .ok_or_else(|| EvalError::GaussianGrid {
            rho: rho.normalize(),
            sigma2: format!("{p}/{q}"),
            span,
        })
}

/// The grid a release's values lie on (`1` for whole numbers).
fn grid(mechanism: Mechanism, eps: Eps, sensitivity: Decimal) -> f64 {
    match (mechanism, linear_scale(eps, sensitivity)) {
        (Mechanism::Gaussian, _) => {
            let square = sensitivity.checked_mul(sensitivity).unwrap_or(Decimal::MAX);
            crate::privacy::zcdp::gaussian_variance(square, eps.exact)
                .and_then(|(p, q)| noise::Rational::new(p, q))
                .and_then(noise::GridGaussian::new)
                .map_or(1.0, |g| g.grid())
        }
        (Mechanism::Laplace, Some(scale)) => noise::GridLaplace::new(scale).grid(),
        (Mechanism::Staircase, _) => staircase_noise(eps).grid(),
        _ => 1.0,
    }
}

/// The noise scale `S / eps` of a release, exactly (`1/eps` for a count); `None` when it
/// cannot be held exactly (the query is then refused, never released with less noise).
pub(super) fn linear_scale(eps: Eps, sensitivity: Decimal) -> Option<noise::Rational> {
    let base = eps.noise.count_scale();
    let s = sensitivity.to_u128().filter(|s| *s >= 1)?;
    noise::Rational::new(base.num().checked_mul(s)?, base.den())
}

/// An epsilon computed from a requirement, rounded up to six significant digits: exact, and
/// never below what the requirement needs.
fn round_up_eps(raw: f64) -> Option<Eps> {
    // Far outside any useful range an epsilon is refused rather than rounded (a requirement of
    // ±1e300 would otherwise round its 1e-301 up to a whole unit of budget).
    if !(1e-12..=1e12).contains(&raw) {
        return None;
    }
    let d = Decimal::from_f64_retain(raw)?
        .round_sf_with_strategy(6, rust_decimal::RoundingStrategy::AwayFromZero)?;
    let d = if d.to_f64()? < raw {
        d.checked_add(Decimal::new(1, d.scale()))?
    } else {
        d
    }
    .normalize();
    Some(Eps {
        value: Epsilon::new(d.to_f64()?).ok()?,
        noise: noise::ExactEpsilon::new(d).ok()?,
        exact: d,
    })
}

/// `CHOOSE EPS`: paper 2, eq. 10, from the requirement's numbers alone.
pub(super) fn choose_eps(plan: ChoosePlan, span: Span) -> Result<ChooseEpsResult, EvalError> {
    let (eps, half_width) = match plan {
        ChoosePlan::Relative {
            fraction,
            confidence,
            count,
        } => (
            accuracy::choose_eps_relative(fraction, confidence, count),
            fraction.get() * count.get(),
        ),
        ChoosePlan::Absolute {
            half_width,
            confidence,
        } => (
            accuracy::choose_eps_absolute(half_width, confidence),
            half_width.get(),
        ),
    };
    if Epsilon::new(eps).is_err() || !half_width.is_finite() {
        return Err(EvalError::UnusableEpsilon { eps, span });
    }
    Ok(ChooseEpsResult {
        requirement: plan,
        eps,
        half_width,
        gaussian: None,
    })
}

/// `CHOOSE RHO`: the Gaussian counterpart of Naldi and D'Acquisto's rule. A count with
/// Gaussian noise of standard deviation `sigma` lies within `±w` of the truth with probability
/// `c` when `sigma = w / z_{(1+c)/2}`, and that noise costs `rho = 1 / (2 sigma^2)` on a count
/// (sensitivity 1). The Laplace count meeting the same requirement is shown beside it.
pub(super) fn choose_rho(plan: ChoosePlan, span: Span) -> Result<ChooseEpsResult, EvalError> {
    let mut result = choose_eps(plan, span)?;
    let confidence = match plan {
        ChoosePlan::Relative { confidence, .. } | ChoosePlan::Absolute { confidence, .. } => {
            confidence.get()
        }
    };
    let z = accuracy::normal_quantile((1.0 + confidence) / 2.0);
    let sigma = result.half_width / z;
    let raw = 1.0 / (2.0 * sigma * sigma);
    // Rounded up to six significant digits, as an epsilon is: a rho of those digits, asked
    // WITH RHO, meets the requirement (its sigma is at most the one needed).
    let rho = round_up_eps(raw).ok_or(EvalError::UnusableEpsilon { eps: raw, span })?;
    let rho = rho.exact.to_f64().unwrap_or(raw);
    result.gaussian = Some((rho, 1.0 / (2.0 * rho).sqrt()));
    Ok(result)
}

/// The generator of a release in a seeded session: a function of the seed and of the query's
/// key (the content's plain hash, the predicate, epsilon and mechanism). Runs are reproducible
/// wherever the file lies, and two different queries never share noise, in one ledger or
/// across ledgers, so the difference of their answers says nothing exact.
pub(super) fn release_rng(seed: u64, key: &str) -> ChaCha20Rng {
    let mut h = blake3::Hasher::new();
    h.update(b"dpq release noise");
    h.update(&seed.to_le_bytes());
    h.update(key.as_bytes());
    ChaCha20Rng::from_seed(*h.finalize().as_bytes())
}

/// Bins of the posterior sparkline shown with a count.
const SHAPE_BINS: usize = 40;

/// The staircase noise of a count at `eps`: the variance-optimal gamma on the grid.
fn staircase_noise(eps: Eps) -> noise::GridStaircase {
    noise::GridStaircase::for_count(eps.noise, staircase::optimal_gamma(eps.value))
}

/// The law of [`staircase_noise`], with the gamma actually used on the grid.
pub(super) fn staircase_law(eps: Eps) -> staircase::Staircase {
    let one = Positive::new(1.0).expect("1 is positive");
    let gamma = staircase_noise(eps).gamma();
    staircase::Staircase::new(eps.value, one, gamma)
        .unwrap_or_else(|_| staircase::Staircase::optimal(eps.value, one))
}

/// What a count's reader should know: the notes of its conditions, and a prior its answer
/// contradicts.
fn warnings(plan: &CountPlan, size: Option<u64>, noisy: f64, half: f64) -> Vec<String> {
    let conflict = plan
        .prior
        .zip(size)
        .filter(|_| plan.single().is_some())
        .and_then(|(p, n)| prior_conflict(n, p.p, noisy, half));
    plan.notes.iter().cloned().chain(conflict).collect()
}

/// The warning for a prior the released answer contradicts beyond what the likelihood can
/// bear: the noisy count lies outside the prior's central 99.9% (Binomial(n, p)) by more than
/// its own 95% noise half-width `half`. Then the Bayes estimate is pulled toward counts the
/// answer rules out, and its reader should know. Post-processing of the answer and the prior.
fn prior_conflict(n: u64, p: crate::stats::Probability, noisy: f64, half: f64) -> Option<String> {
    let level = crate::stats::Probability::new(0.999).ok()?;
    let (lo, hi) = crate::stats::bayes::binomial_interval(n, p, level);
    let beyond = if noisy < lo as f64 - half {
        lo as f64 - noisy
    } else if noisy > hi as f64 + half {
        noisy - hi as f64
    } else {
        return None;
    };
    Some(format!(
        "the prior and the answer disagree: PRIOR p={} expects the true count between {lo} and {hi} (99.9% of the prior over {n} rows), and the noisy count lies {} beyond that, more than its 95% noise interval reaches; the Bayes estimate is pulled toward counts the answer rules out: check p, or drop PRIOR",
        crate::output::short_number(p.get()),
        crate::output::short_number(beyond),
    ))
}
