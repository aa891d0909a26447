//! `COMPARE NOISE COUNT | SHARE | MIN | MEDIAN | MAX | QUERIES`: the second half of
//! Soria-Comas and Domingo-Ferrer's slides, Laplace against data-dependent noise, from the
//! formulas of [`crate::stats::smooth`] and values simulated in the session.
//!
//! Each row gives Laplace's 95% half-width and variance at the global sensitivity, and the
//! data-dependent noise's at the smooth sensitivity of the stated data: its variance at the
//! `gamma` that minimises it (over `gamma > 3`, where it is finite) with the half-width at
//! that `gamma`, and the least half-width over every `gamma > 1` with its `gamma`. The
//! slides print the absolute frequency's half-width at its own best `gamma` (4.37) and the
//! relative frequency's at the variance's (their 8.34 at n = 100 is the half-width at
//! gamma 3.40, where the variance is least); both columns are here.

use super::{ninety_five, Session};
use crate::ast::StatKind;
use crate::error::EvalError;
use crate::output::{CompareSmoothResult, CompareSmoothRow, RegionRow};
use crate::plan::LabSmoothPlan;
use crate::span::Span;
use crate::stats::smooth::{self, Rank};
use crate::stats::{laplace, regions, Epsilon};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rand_distr::{Beta, Distribution};

/// The range of `gamma` searched for the least variance (finite above 3). Every best
/// `gamma` of the slides' functions lies between 2 and 5; a large `gamma` makes `beta` small
/// and the smooth sensitivity slow to compute.
const VARIANCE_GAMMAS: (f64, f64) = (3.0, 12.0);

/// The range of `gamma` searched for the least half-width.
const INTERVAL_GAMMAS: (f64, f64) = (1.0, 12.0);

/// A row from the global sensitivity and the smooth sensitivity as a function of beta.
fn row(
    eps: Epsilon,
    global: f64,
    smooth_at: impl Fn(f64) -> f64,
    n: Option<u64>,
    m: Option<u64>,
) -> CompareSmoothRow {
    let e = eps.get();
    let level = ninety_five();
    let variance = |g: f64| smooth::dependent_variance(e, g, smooth_at(smooth::beta(e, g)));
    let half = |g: f64| smooth::dependent_half_width(e, g, smooth_at(smooth::beta(e, g)), level);
    let (gamma_variance, smooth_variance) =
        smooth::minimise(variance, VARIANCE_GAMMAS.0, VARIANCE_GAMMAS.1);
    let (gamma_interval, smooth_half95) =
        smooth::minimise(half, INTERVAL_GAMMAS.0, INTERVAL_GAMMAS.1);
    CompareSmoothRow {
        n,
        m,
        eps: e,
        sensitivity: global,
        smooth_sensitivity: smooth_at(smooth::beta(e, gamma_variance)),
        laplace_half95: global * laplace::interval_half_width(eps, level),
        laplace_variance: 2.0 * (global / e).powi(2),
        gamma_variance,
        smooth_variance,
        smooth_half95_at_gamma_variance: half(gamma_variance),
        gamma_interval,
        smooth_half95,
    }
}

/// The seed of one simulated data set: a function of the session's seed and its parameters.
fn data_seed(seed: u64, n: u64, beta: Option<(f64, f64)>) -> u64 {
    let mut h = blake3::Hasher::new();
    h.update(b"dpq compare noise");
    h.update(&seed.to_le_bytes());
    h.update(&n.to_le_bytes());
    if let Some((a, b)) = beta {
        h.update(&a.to_bits().to_le_bytes());
        h.update(&b.to_bits().to_le_bytes());
    }
    let mut first = [0u8; 8];
    first.copy_from_slice(&h.finalize().as_bytes()[..8]);
    u64::from_le_bytes(first)
}

/// `n` values drawn from U[0, 1] or Beta(a, b), sorted.
fn draw_values(n: u64, beta: Option<(f64, f64)>, seed: u64) -> Vec<f64> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut xs: Vec<f64> = match beta.and_then(|(a, b)| Beta::new(a, b).ok()) {
        Some(law) => (0..n).map(|_| law.sample(&mut rng)).collect(),
        None => (0..n)
            .map(|_| (rng.next_u64() >> 11) as f64 * 2f64.powi(-53))
            .collect(),
    };
    xs.sort_unstable_by(f64::total_cmp);
    xs
}

impl Session {
    /// `COMPARE NOISE ...` of the data-dependent side. Touches no table and spends nothing.
    pub(super) fn compare_smooth(
        &mut self,
        plan: LabSmoothPlan,
        span: Span,
    ) -> Result<CompareSmoothResult, EvalError> {
        // Ctrl-C at the prompt stops it (a row over a large n can take a minute).
        let stopped = crate::sys::interrupt::requested;
        let go_on = || not_stopped(span);
        let (rule_gamma, rule_ratio) = smooth::rule_of_thumb();
        let mut result = CompareSmoothResult {
            function: String::new(),
            rows: Vec::new(),
            regions: Vec::new(),
            rule_gamma,
            rule_ratio,
            seeded: self.seed.is_some(),
        };
        match plan {
            LabSmoothPlan::Count { eps } => {
                result.function = "count".into();
                result.rows = eps
                    .iter()
                    .map(|&e| row(e, 1.0, |_| 1.0, None, None))
                    .collect();
            }
            LabSmoothPlan::Share { n, m, eps } => {
                result.function = "share".into();
                for &n in &n {
                    for &f in &m {
                        let m = (f * n as f64).round() as u64;
                        for &e in &eps {
                            // Once stopped, each smooth sensitivity is skipped, and the row
                            // (now meaningless) is dropped.
                            let at = |beta: f64| {
                                if stopped() {
                                    return f64::INFINITY;
                                }
                                smooth::share_smooth(n, m, beta).unwrap_or(f64::INFINITY)
                            };
                            let r = row(e, 0.5, at, Some(n), Some(m));
                            go_on()?;
                            result.rows.push(r);
                        }
                    }
                }
            }
            LabSmoothPlan::Order { kind, n, beta, eps } => {
                result.function = format!(
                    "{} of values from {}",
                    kind.to_string().to_ascii_lowercase(),
                    match beta {
                        None => "U[0, 1]".to_string(),
                        Some((a, b)) => format!("Beta({a}, {b})"),
                    }
                );
                let rank = match kind {
                    StatKind::Min => Rank::Min,
                    StatKind::Max => Rank::Max,
                    _ => Rank::Median,
                };
                for &n in &n {
                    let seed = match self.seed {
                        Some(s) => data_seed(s, n, beta),
                        None => self.rng.next_u64(),
                    };
                    go_on()?;
                    let xs = draw_values(n, beta, seed);
                    for &e in &eps {
                        let at = |b: f64| {
                            if stopped() {
                                return f64::INFINITY;
                            }
                            smooth::order_smooth(&xs, 0.0, 1.0, rank, b, 0.0)
                                .unwrap_or(f64::INFINITY)
                        };
                        let r = row(e, 1.0, at, Some(n), None);
                        go_on()?;
                        result.rows.push(r);
                    }
                }
            }
            LabSmoothPlan::Queries {
                sensitivity,
                eps,
                at,
            } => {
                result.function = format!(
                    "two queries of sensitivities {} and {}",
                    crate::output::short_number(sensitivity.0),
                    crate::output::short_number(sensitivity.1)
                );
                result.regions = region_rows(sensitivity, eps.get(), &at);
            }
        }
        Ok(result)
    }
}

/// Whether to go on: refused once Ctrl-C was pressed at the prompt.
fn not_stopped(span: Span) -> Result<(), EvalError> {
    if crate::sys::interrupt::requested() {
        return Err(EvalError::Interrupted {
            what: "COMPARE NOISE stopped before its rows were done".into(),
            span,
        });
    }
    Ok(())
}

/// The regions of two queries' answers at each confidence level of `at`.
fn region_rows(
    sensitivity: (f64, f64),
    e: f64,
    at: &[crate::stats::Probability],
) -> Vec<RegionRow> {
    at.iter()
        .map(|&level| {
            let c = level.get();
            let (top, staircase_least) = regions::least_staircase(sensitivity, e, c);
            RegionRow {
                level: c,
                eps: e,
                laplace_lattice: regions::laplace_lattice(sensitivity, e, c),
                laplace_area: regions::laplace_area(sensitivity, e, c),
                staircase_flat: regions::staircase_area(sensitivity, e, 0.0, c),
                staircase_least,
                top,
            }
        })
        .collect()
}
