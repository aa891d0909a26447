//! `SHARE`, `MIN`, `MEDIAN` and `MAX`: a relative frequency or an order statistic, with
//! Laplace noise scaled to the global sensitivity (the default) or heavy-tailed noise scaled
//! to the smooth sensitivity at the data (`NOISE smooth`; Nissim, Raskhodnikova and Smith
//! 2007, as Soria-Comas and Domingo-Ferrer's slides evaluate it).
//!
//! # What is computed, on which grid
//!
//! - A share is `m / n`, `m` the rows where the condition holds, `n` all rows (1/2 for an
//!   empty table), put on the grid `2^-32`: `round(m 2^32 / n)` steps. Rounding moves it by
//!   at most half a step, so a neighbour's rounded share is at most the sensitivity plus one
//!   step away; the noise is scaled to that.
//! - An order statistic is taken over the values of the rows its condition selects, each
//!   clamped to the public range `[lo, hi]` and put on a grid of `2^-k` with at least `2^30`
//!   steps across the range (whole values too, but over a range wider than `2^31`): rounding
//!   each value is monotone, so
//!   the statistic of the rounded values is the rounded statistic, and every gap stays within
//!   the range.
//!
//! # The noise
//!
//! - Laplace: discrete Laplace steps of scale `Δ / eps`, `Δ` the global sensitivity in steps
//!   (1/2 of a share under `add_remove`, `1/n` under `replace` where `n` is public; the
//!   range's width for an order statistic), drawn exactly ([`noise::discrete_laplace`]).
//! - Smooth: `round(4 gamma S / eps * Z)` steps with `Z` of density `∝ 1/(1 + |z|^gamma)`,
//!   `S` the `eps/gamma`-smooth sensitivity in steps ([`smooth`]); plus one step for the
//!   share's rounding, and at least one step for an order statistic (a constant floor keeps
//!   it a smooth bound). Its analysis is under additions and removals of rows; under
//!   `replace` a replaced row is a removal and an addition, so the release is made at
//!   `eps / 2` (group privacy), except for a share, whose smooth sensitivity under `replace`
//!   is the public `1/n`.
//!
//! Nothing shown depends on the smooth sensitivity at the data: no scale, no interval (its
//! width would reveal it), only the noise law, gamma and epsilon; a share under `replace`
//! shows the interval its public `1/n` gives. The ledger records the global sensitivity.

use super::count::{expose, refused, release_rng};
use super::{ledger_error, ninety_five, served, Entry, Session};
use crate::ast::StatKind;
use crate::data::Clamp;
use crate::error::EvalError;
use crate::output::{ExplainedBudget, Explanation, Output, StatisticResult};
use crate::plan::{StatColumn, StatNoise, StatPlan};
use crate::privacy::{Measure, Mechanism, Neighbours, Prepared, Request, Row};
use crate::span::Span;
use crate::stats::laplace;
use crate::stats::noise::{self, Rational};
use crate::stats::smooth::{self, HeavyTail, Rank};
use rand_chacha::ChaCha20Rng;
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;

/// The grid of a share: `2^-32`. Coarse enough that the heavy-tailed law, inverted in double
/// precision, gives each step its probability to about `1e-16` times the step's distance from
/// the truth (below `1e-6` within `2^33` steps), fine enough for any share of `2^30` rows.
const SHARE_BITS: u32 = 32;

/// The least number of grid steps across an order statistic's range: `2^30` (to `2^31`), for
/// the same reason as the share's grid; over a wider range, whole values as they are.
const RANGE_BITS: i32 = 30;

/// The true statistic, asked before anything is spent, and what the smooth noise needs.
struct Truth {
    /// The statistic in grid steps.
    steps: i128,
    /// The smooth sensitivity in grid steps (smooth noise only).
    smooth: Option<f64>,
}

/// The grid and range of a statistic, from public facts.
#[derive(Debug, Clone, Copy)]
struct Grid {
    /// The grid is `2^-k`.
    k: u32,
    /// The range's ends in steps (0 and `2^32` for a share).
    lo: i128,
    hi: i128,
    /// The range's ends as numbers.
    lo_value: f64,
    hi_value: f64,
}

impl Grid {
    fn of(plan: &StatPlan) -> Option<Grid> {
        match &plan.column {
            None => Some(Grid {
                k: SHARE_BITS,
                lo: 0,
                hi: 1 << SHARE_BITS,
                lo_value: 0.0,
                hi_value: 1.0,
            }),
            Some(c) => {
                let (lo, hi) = (c.clamp.0.to_f64()?, c.clamp.1.to_f64()?);
                // Whole values too: on a grid finer than 1 the floor of the smooth sensitivity
                // (one step) is far below a unit, where the median of many equal ages lies.
                let k = (RANGE_BITS - (hi - lo).log2().floor() as i32).clamp(0, 100) as u32;
                let scale = 2f64.powi(k as i32);
                let (lo_s, hi_s) = ((lo * scale).ceil(), (hi * scale).floor());
                if !(lo_s.abs() < 2f64.powi(100) && hi_s.abs() < 2f64.powi(100) && lo_s < hi_s) {
                    return None;
                }
                Some(Grid {
                    k,
                    lo: lo_s as i128,
                    hi: hi_s as i128,
                    lo_value: lo_s / scale,
                    hi_value: hi_s / scale,
                })
            }
        }
    }

    /// A value in steps as a number (post-processing of the released steps).
    fn value(&self, steps: f64) -> f64 {
        steps * 2f64.powi(-(self.k as i32))
    }

    fn clamp(&self, c: &StatColumn) -> Clamp {
        if self.k == 0 && c.integer {
            Clamp::Int {
                lo: self.lo as i64,
                hi: self.hi as i64,
                k: 0,
            }
        } else {
            Clamp::Float {
                lo: self.lo_value,
                hi: self.hi_value,
                k: self.k,
            }
        }
    }
}

/// The order statistic a kind names.
fn rank(kind: StatKind) -> Rank {
    match kind {
        StatKind::Min => Rank::Min,
        StatKind::Max => Rank::Max,
        _ => Rank::Median,
    }
}

/// The epsilon the smooth analysis runs at: the statement's, or half of it under `replace`
/// for an order statistic (a replaced row is a removal and an addition).
fn smooth_eps(plan: &StatPlan) -> f64 {
    let e = plan.eps.value.get();
    if plan.neighbours == Neighbours::Replace && plan.column.is_some() {
        e / 2.0
    } else {
        e
    }
}

/// The global sensitivity as a number: 1/2 or `1/n` for a share, the range for the others.
fn global_sensitivity(plan: &StatPlan, grid: &Grid) -> f64 {
    match (&plan.column, plan.public_rows) {
        (None, Some(n)) => 1.0 / n.max(1) as f64,
        (None, None) => 0.5,
        (Some(_), _) => grid.hi_value - grid.lo_value,
    }
}

/// The Laplace noise's sensitivity in grid steps, rounding included.
fn laplace_steps(plan: &StatPlan, grid: &Grid) -> u128 {
    match (&plan.column, plan.public_rows) {
        (None, Some(n)) => (1u128 << SHARE_BITS).div_ceil(u128::from(n.max(1))) + 1,
        (None, None) => (1u128 << (SHARE_BITS - 1)) + 1,
        (Some(_), _) => (grid.hi - grid.lo) as u128,
    }
}

/// The name a statistic is recorded and shown under.
fn what(plan: &StatPlan) -> String {
    match &plan.column {
        None => "share of the rows where the condition holds".to_string(),
        Some(c) => format!(
            "{} of {} clamped to [{}, {}]",
            match plan.kind {
                StatKind::Min => "minimum",
                StatKind::Max => "maximum",
                _ => "median",
            },
            c.name,
            c.clamp.0,
            c.clamp.1
        ),
    }
}

impl Session {
    /// `SHARE ...`, `MIN ...`, `MEDIAN ...`, `MAX ...`.
    pub(super) fn statistic(&mut self, plan: StatPlan, span: Span) -> Result<Output, EvalError> {
        let i = self.index(&plan.table);
        self.own_unit(i, span)?;
        served::permit_eps(self.max_eps(&plan.table), &plan.table, plan.eps.exact, span)?;
        let max_releases = self.max_releases();
        let (seed, time) = (self.seed, (self.clock)());
        let (grid, laplace) = public_checks(&plan, span)?;
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
        let request = request(entry, &plan, &grid, seed, time);
        let ticket = match txn.prepare(request) {
            Ok(Prepared::Recorded(r)) => {
                let noisy = r.noisy;
                return Ok(self.statistic_output(plan, i, &grid, noisy, true));
            }
            Ok(Prepared::Fits(t)) => *t,
            Err(r) => {
                return Err(refused(
                    r,
                    entry,
                    &plan.table,
                    txn.ledger(),
                    (
                        plan.eps.exact,
                        match plan.noise {
                            crate::plan::StatNoise::Laplace => Mechanism::Laplace,
                            crate::plan::StatNoise::Smooth { .. } => Mechanism::Smooth,
                        },
                    ),
                    span,
                ))
            }
        };
        served::permit_release(max_releases, txn.history(), &plan.table, span)?;
        let truth = truth(&plan, entry, &grid, span)?;
        if let Some(private) = exposed {
            expose(private, time, span)?;
        }
        self.drawn = true;
        let noise_key = format!(
            "{}|{}|{}|{:?}",
            entry.noise_prefix(self.seed),
            plan.query_key,
            plan.eps.exact,
            plan.noise
        );
        let mut seeded;
        let rng: &mut ChaCha20Rng = match seed {
            Some(seed) => {
                seeded = release_rng(seed, &noise_key);
                &mut seeded
            }
            None => &mut self.rng,
        };
        let recorded = txn
            .release(ticket, || draw(&plan, &grid, &truth, laplace, rng))
            .map_err(super::release_error(span))?;
        Ok(self.statistic_output(plan, i, &grid, recorded.noisy, false))
    }

    /// The result: the noisy statistic, and what public facts say of it.
    fn statistic_output(
        &self,
        plan: StatPlan,
        i: usize,
        grid: &Grid,
        noisy: f64,
        from_history: bool,
    ) -> Output {
        let history = self.ledgers.get(self.entries[i].ledger).history();
        let sensitivity = global_sensitivity(&plan, grid);
        let e = plan.eps.value.get();
        let (interval95, scale, gamma, note) = match plan.noise {
            StatNoise::Laplace => {
                let half =
                    sensitivity * laplace::interval_half_width(plan.eps.value, ninety_five());
                (
                    Some((noisy - half, noisy + half)),
                    Some(sensitivity / e),
                    None,
                    "Laplace noise scaled to the global sensitivity: the interval follows from public facts.".to_string(),
                )
            }
            StatNoise::Smooth { gamma } => {
                let public = match (&plan.column, plan.public_rows) {
                    (None, Some(n)) => {
                        let s = 1.0 / n.max(1) as f64 + 2f64.powi(-(SHARE_BITS as i32));
                        Some(smooth::dependent_half_width(e, gamma, s, ninety_five()))
                    }
                    _ => None,
                };
                let note = match public {
                    Some(_) => "Noise scaled to the smooth sensitivity, which under NEIGHBOURS replace is the public 1/n: the interval follows from public facts, and is wider than Laplace's.".to_string(),
                    None => "Noise scaled to the smooth sensitivity at the data: no interval or scale is shown, since its width would reveal the data.".to_string(),
                };
                (
                    public.map(|h| (noisy - h, noisy + h)),
                    None,
                    Some(gamma),
                    note,
                )
            }
        };
        Output::Statistic(Box::new(StatisticResult {
            table: plan.table.clone(),
            statement: plan.statement.clone(),
            kind: plan.kind.to_string().to_ascii_lowercase(),
            column: plan.column.as_ref().map(|c| c.name.clone()),
            range: (grid.lo_value, grid.hi_value),
            noisy,
            within_range: noisy.clamp(grid.lo_value, grid.hi_value),
            interval95,
            eps: plan.eps.exact,
            eps_spent: if from_history {
                Decimal::ZERO
            } else {
                plan.eps.exact
            },
            noise: match plan.noise {
                StatNoise::Laplace => "laplace".to_string(),
                StatNoise::Smooth { .. } => "smooth".to_string(),
            },
            gamma,
            sensitivity,
            scale,
            neighbours: history.neighbours(),
            from_history,
            budget_spent: history.spent(),
            budget_remaining: history.remaining(),
            note,
        }))
    }

    /// `EXPLAIN` of a statistic: the noise that would be drawn and why, from public facts.
    pub(super) fn explain_statistic(&self, plan: &StatPlan) -> Explanation {
        let i = self.index(&plan.table);
        let history = self.ledgers.get(self.entries[i].ledger).history();
        let spent = history.spent();
        let charged = history.charged_row(&measure(plan), &Row::default());
        let (after, _, _) = history.after_bounds(plan.eps.exact, Mechanism::Smooth, &charged);
        let unavailable = public_checks(plan, Span::new(0, 0)).err();
        let fits = after <= history.total() && unavailable.is_none();
        let step = |l: &str, t: String| (l.to_string(), t);
        let grid = Grid::of(plan);
        let sensitivity = grid
            .as_ref()
            .map_or(f64::NAN, |g| global_sensitivity(plan, g));
        let mut steps = vec![
            step("table", format!("`{}`", plan.table)),
            step("query", format!("the {}", what(plan))),
            step(
                "sensitivity",
                format!(
                    "{} globally (NEIGHBOURS {}): {}",
                    crate::output::short_number(sensitivity),
                    plan.neighbours,
                    match (&plan.column, plan.public_rows) {
                        (None, Some(_)) =>
                            "a replaced row moves the count by 1 of the public n rows",
                        (None, None) => "a row added or removed moves a share by at most 1/2",
                        _ => "a row's value can move the statistic across the whole range",
                    }
                ),
            ),
        ];
        let noise = noise_words(plan, sensitivity);
        steps.push(step("noise", noise));
        if plan.column.is_none() && plan.public_rows.is_some() {
            steps.push(step(
                "note",
                "under NEIGHBOURS replace the share's smooth sensitivity is its global 1/n: smooth noise never pays".into(),
            ));
        }
        let charges = if history.cube().is_some() {
            "charges epsilon {e} to every cell and pair (no linear count of the cells)"
        } else {
            "spends epsilon {e} on the table"
        };
        steps.push(if fits {
            super::explain::budget_step(charges, plan.eps.exact, spent, after, history.total())
        } else {
            step(
                "refused",
                match &unavailable {
                    Some(e) => e.to_string(),
                    None => "the budget does not hold it; nothing would change".into(),
                },
            )
        });
        Explanation {
            statement: plan.statement.clone(),
            spends: if fits { plan.eps.exact } else { Decimal::ZERO },
            draws_noise: fits,
            budget: fits.then_some(ExplainedBudget {
                spent_before: spent,
                spent_after: after,
                total: history.total(),
            }),
            steps,
        }
    }
}

/// EXPLAIN's words on the noise: Laplace's and the smooth noise's variances, from public
/// facts, and what the smooth sensitivity must be for the smooth noise to pay.
fn noise_words(plan: &StatPlan, sensitivity: f64) -> String {
    let e = plan.eps.value.get();
    let (rule_gamma, ratio) = smooth::rule_of_thumb();
    let laplace_var = 2.0 * (sensitivity / e).powi(2);
    match plan.noise {
        StatNoise::Laplace => format!(
            "Laplace of scale {} (the default), variance {}; NOISE smooth would have variance {} x (S*/eps)^2 at gamma {}, smaller only if the smooth sensitivity S* at the data is below {} ({} times below the global one; the rule of thumb of the slides)",
            crate::output::short_number(sensitivity / e),
            crate::output::short_number(laplace_var),
            crate::output::short_number(smooth::variance_factor(rule_gamma)),
            crate::output::short_number(rule_gamma),
            crate::output::short_number(sensitivity / ratio),
            crate::output::short_number(ratio)
        ),
        StatNoise::Smooth { gamma } => format!(
            "heavy-tailed noise 4 gamma S*/eps Z, density of Z ∝ 1/(1+|z|^{g}), S* the {b}-smooth sensitivity at the data (beta = eps/gamma{half}); variance {f} x (S*/eps)^2 against Laplace's {l}: it pays when S* is below {t}; S* is computed at the data and never shown",
            g = crate::output::short_number(gamma),
            b = crate::output::short_number(smooth::beta(smooth_eps(plan), gamma)),
            half = if plan.neighbours == Neighbours::Replace && plan.column.is_some() {
                ", at eps/2: a replaced row is a removal and an addition"
            } else {
                ""
            },
            f = crate::output::short_number(smooth::variance_factor(gamma)),
            l = crate::output::short_number(laplace_var),
            t = crate::output::short_number(
                sensitivity / (smooth::variance_factor(gamma) / 2.0).sqrt()
            ),
        ),
    }
}

/// What the release measures: no linear count.
fn measure(plan: &StatPlan) -> Measure {
    Measure::Statistic { what: what(plan) }
}

/// The release's request: charged on the whole table (every cell and pair of a cube).
fn request(entry: &Entry, plan: &StatPlan, grid: &Grid, seed: Option<u64>, time: u64) -> Request {
    let source = match seed {
        Some(seed) => format!("seed {seed}"),
        None => "private".to_string(),
    };
    let (mechanism, noise) = match plan.noise {
        StatNoise::Laplace => (Mechanism::Laplace, "laplace".to_string()),
        StatNoise::Smooth { gamma } => (Mechanism::Smooth, format!("smooth {gamma}")),
    };
    Request {
        statement: plan.statement.clone(),
        key: format!(
            "{}|{source}|{}|{}|{noise}",
            entry.key_prefix(),
            plan.query_key,
            plan.eps.exact.normalize()
        ),
        alt_key: None,
        row: Row::default(),
        cube: plan.cube.clone(),
        neighbours: plan.neighbours,
        eps: plan.eps.exact,
        // The global sensitivity: the smooth one at the data is never written down.
        sensitivity: global_sensitivity(plan, grid),
        mechanism,
        measure: measure(plan),
        time,
    }
}

/// The grid and the Laplace scale of a statistic, or why it cannot be released: a range too
/// wide or narrow for a grid, an epsilon of too many digits, a smooth search too far. Public
/// facts alone decide, before the ledger or the data is read.
fn public_checks(plan: &StatPlan, span: Span) -> Result<(Grid, Option<Rational>), EvalError> {
    let grid = Grid::of(plan).ok_or_else(|| EvalError::StatisticUnavailable {
        message: "CLAMP's range is too wide or too narrow to put on a grid".to_string(),
        span,
    })?;
    let laplace = laplace_scale(plan, &grid);
    if plan.noise == StatNoise::Laplace && laplace.is_none() {
        return Err(EvalError::StatisticUnavailable {
            message: format!(
                "EPS {} has too many digits to hold this noise's scale exactly; write it with fewer",
                plan.eps.exact
            ),
            span,
        });
    }
    if let (StatNoise::Smooth { gamma }, None) = (plan.noise, search_distance(plan, &grid)) {
        return Err(too_fine(plan, &grid, gamma, span));
    }
    Ok((grid, laplace))
}

/// The floor of a share's smooth sensitivity: one step of its grid.
fn share_floor() -> f64 {
    2f64.powi(-(SHARE_BITS as i32))
}

/// How far the smooth search reaches, from public facts (`None`: too far, refused).
fn search_distance(plan: &StatPlan, grid: &Grid) -> Option<u64> {
    let StatNoise::Smooth { gamma } = plan.noise else {
        return Some(0);
    };
    let beta = smooth::beta(smooth_eps(plan), gamma);
    match (&plan.column, plan.public_rows) {
        (None, Some(_)) => Some(0),
        (None, None) => smooth::full_distance(0.5, share_floor(), beta),
        (Some(_), _) => smooth::full_distance((grid.hi - grid.lo) as f64, 1.0, beta),
    }
}

/// The refusal of a smooth search that would reach too far: the least epsilon that would
/// do, from public facts.
fn too_fine(plan: &StatPlan, grid: &Grid, gamma: f64, span: Span) -> EvalError {
    let top_over_floor = match plan.column {
        None => 0.5 / share_floor(),
        Some(_) => (grid.hi - grid.lo) as f64,
    };
    let least_beta = top_over_floor.ln() / smooth::MAX_FULL_DISTANCE as f64;
    let factor = plan.eps.value.get() / smooth_eps(plan);
    EvalError::StatisticUnavailable {
        message: format!(
            "NOISE smooth at GAMMA {} needs EPS of at least {} here (its search for the smooth sensitivity reaches ln(range / grid step) / (EPS / GAMMA) rows away, at most {})",
            crate::output::short_number(gamma),
            crate::output::short_number(least_beta * gamma * factor),
            smooth::MAX_FULL_DISTANCE
        ),
        span,
    }
}

/// The true statistic and, for smooth noise, its smooth sensitivity: asked before anything
/// is spent, so a failure changes nothing. The smooth sensitivity is searched out to the
/// public distance of [`search_distance`] every time, so its work depends on no value.
fn truth(plan: &StatPlan, entry: &Entry, grid: &Grid, span: Span) -> Result<Truth, EvalError> {
    let failed = |error| super::source_failed(entry, error, span);
    let too_far = |_| too_fine(plan, grid, 0.0, span);
    let beta = match plan.noise {
        StatNoise::Smooth { gamma } => Some(smooth::beta(smooth_eps(plan), gamma)),
        StatNoise::Laplace => None,
    };
    match &plan.column {
        None => {
            let (n, m) = entry
                .ask(|t| {
                    let n = t.n_rows();
                    let m = match &plan.filter {
                        Some(p) => t.count(p)?.min(n),
                        None => n,
                    };
                    Ok((n, m))
                })
                .map_err(failed)?;
            let steps = if n == 0 {
                1i128 << (SHARE_BITS - 1)
            } else {
                (((u128::from(m) << SHARE_BITS) + u128::from(n) / 2) / u128::from(n)) as i128
            };
            let one = 2f64.powi(SHARE_BITS as i32);
            let smooth = match (beta, plan.public_rows) {
                (None, _) => None,
                (Some(_), Some(n)) => Some(one / n.max(1) as f64 + 1.0),
                (Some(beta), None) => Some(
                    smooth::share_smooth_full(n, m, beta, share_floor()).map_err(too_far)? * one
                        + 1.0,
                ),
            };
            Ok(Truth { steps, smooth })
        }
        Some(c) => {
            let values = entry
                .ask(|t| t.clamped_values(c.index, plan.filter.as_ref(), grid.clamp(c)))
                .map_err(failed)?
                .ok_or_else(|| EvalError::StatisticUnavailable {
                    message: "MIN, MEDIAN and MAX read every value of the column: a PostgreSQL table answers counts and sums only".to_string(),
                    span,
                })?;
            // Clamped again on the grid: a value the store could not read as a number
            // (a NaN) must not fall outside the range.
            let mut values: Vec<i128> = values
                .into_iter()
                .map(|v| v.clamp(grid.lo, grid.hi))
                .collect();
            values.sort_unstable();
            let r = rank(plan.kind);
            let steps = smooth::order_value(&values, grid.lo, grid.hi, r);
            let smooth = match beta {
                None => None,
                Some(beta) => Some(
                    smooth::order_smooth_full(&values, grid.lo, grid.hi, r, beta, 1.0)
                        .map_err(too_far)?,
                ),
            };
            Ok(Truth { steps, smooth })
        }
    }
}

/// The Laplace noise's scale in grid steps, `sensitivity steps / eps`, exactly; `None` when
/// it does not fit (an epsilon of very many digits), refused from that public fact.
fn laplace_scale(plan: &StatPlan, grid: &Grid) -> Option<Rational> {
    let eps = plan.eps.noise.as_rational();
    Rational::new(laplace_steps(plan, grid).checked_mul(eps.den())?, eps.num())
}

/// Draws the release, in grid steps, and returns it as a number.
fn draw(
    plan: &StatPlan,
    grid: &Grid,
    truth: &Truth,
    laplace: Option<Rational>,
    rng: &mut ChaCha20Rng,
) -> f64 {
    let steps = match (plan.noise, truth.smooth) {
        (StatNoise::Smooth { gamma }, Some(s)) => {
            let law = HeavyTail::new(gamma).expect("checking bounds gamma");
            let scale = smooth::scale(smooth_eps(plan), gamma, s);
            smooth::release_steps(rng, &law, truth.steps, scale)
        }
        _ => {
            let scale = laplace.expect("a Laplace release's scale is checked before it is drawn");
            truth
                .steps
                .saturating_add(noise::discrete_laplace(rng, scale))
        }
    };
    grid.value(steps as f64)
}
