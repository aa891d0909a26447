//! Xiao and Xiong's utility-driven query answering system in the bounded setting
//! (section 6.4.2, Figure 10), on synthetic data.
//!
//! Run with `cargo run --release --example utility_driven`.
//!
//! Two systems answer the same stream of linear queries over a cube of counts, under a total
//! privacy budget of 1 (the cost of a history is `max(B)`, `B = (alpha ./ S)' |H|`,
//! Theorem 5.5):
//!
//! - **baseline with budget allocation** (the paper's "improved baseline"): a query with
//!   requirement `(w, delta)` gets a fresh Laplace release with the smallest epsilon that meets
//!   it, `eps = S ln(1/delta) / w` (Theorem 5.3), if the cell budgets stay within the total;
//!   otherwise it is refused. The answer is the noisy value, the interval `±w` around it.
//! - **with inference** (the paper's system): the query is first estimated from the history by
//!   the BLUE (section 3) and its exact posterior (section 4); if it is estimable and the
//!   central credible interval at level `1 - delta` has half-width at most `w`, it is answered
//!   from the history at no cost. Otherwise it gets a fresh release as in the baseline (or is
//!   refused), and is answered with the posterior after the release: the BLUE of the history
//!   including the new release.
//!
//! Settings (section 6.4): `n = 100` cells whose true counts are drawn once, uniform integers
//! in `[0, 1000]`; 1000 queries; each query is the vector of counts of a multinomial with
//! `n_t` trials, `n_t` uniform in `1..=10`, and cell probabilities proportional to
//! `0.9 * 10^(-floor((j - 1) / 10))` (eq. 73-74), so coefficients can exceed 1 and the
//! sensitivity is `S = max_j q_j` (Lemma 2.1); the interval width `2w` is uniform in
//! `[1, 1000]` (the paper's `2 epsilon`, its epsilon being the half-width) and `delta = 0.2`.
//!
//! Metrics (Definitions 6.1-6.3): the answering ratio `Ra` (answered / all), the relative
//! error `E` (mean over answered queries of `|theta-hat - theta| / (2w)`) and the reliability
//! `Ri` (the fraction of answered queries whose interval `theta-hat ± w` holds the true value).
//!
//! The Laplace noise here is floating-point simulation noise (`dpq::stats::laplace`), not a
//! privacy release.

use dpq::stats::accuracy::eps_for_half_width;
use dpq::stats::blue::{cell_budgets, Blue, Measurement};
use dpq::stats::exact::{NoiseSum, Posterior, Term};
use dpq::stats::{laplace, Positive, Probability};
use rand::distr::weighted::WeightedIndex;
use rand::distr::Distribution;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// The parameters of one experiment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// The number of cells `n`.
    pub cells: usize,
    /// The number of queries.
    pub queries: usize,
    /// True counts are uniform integers in `0..=max_count`.
    pub max_count: u32,
    /// The most multinomial trials of a query (`n_t` is uniform in `1..=max_trials`).
    pub max_trials: usize,
    /// The widest interval asked for: `2w` is uniform in `[1, max_width]`.
    pub max_width: f64,
    /// The requirement's `delta`: the interval must hold the true value with probability
    /// `1 - delta`.
    pub delta: f64,
    /// The total privacy budget: the largest allowed `max(B)`.
    pub total_budget: f64,
}

impl Settings {
    /// The paper's bounded setting: 100 cells, 1000 queries, `2w` in `[1, 1000]`,
    /// `delta = 0.2`, total budget 1.
    pub fn paper() -> Settings {
        Settings {
            cells: 100,
            queries: 1000,
            max_count: 1000,
            max_trials: 10,
            max_width: 1000.0,
            delta: 0.2,
            total_budget: 1.0,
        }
    }

    /// The confidence level `1 - delta`.
    pub fn level(&self) -> Probability {
        Probability::new(1.0 - self.delta).expect("delta lies in (0, 1)")
    }
}

/// One linear query with its accuracy requirement.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// Dense coefficients, one per cell.
    pub coefficients: Vec<f64>,
    /// The non-zero coefficients `(cell, q_j)`.
    pub row: Vec<(usize, f64)>,
    /// `S = max_j |q_j|` (Lemma 2.1).
    pub sensitivity: f64,
    /// The required half-width `w`.
    pub half_width: f64,
    /// The true answer `theta = q x`.
    pub truth: f64,
}

/// The synthetic cube and the query stream, shared by both systems.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// The true counts `x`.
    pub counts: Vec<f64>,
    /// The queries, in arrival order.
    pub queries: Vec<Query>,
}

/// Eq. 73's cell probabilities, normalised. As printed, `P_j = 0.9 * 10^(-floor((j-1)/10))`
/// sums to about 10 over 100 cells (0.9 for each of the first ten, 0.09 for the next ten, and
/// so on), not 1; the multinomial needs probabilities, so they are divided by their sum (the
/// first ten cells then have 0.09 each, and 90% of the mass together).
pub fn cell_probabilities(cells: usize) -> Vec<f64> {
    let raw: Vec<f64> = (0..cells)
        .map(|j| 0.9 * 10f64.powi(-((j / 10) as i32)))
        .collect();
    let sum: f64 = raw.iter().sum();
    raw.into_iter().map(|p| p / sum).collect()
}

/// Draws the true counts and the queries from `seed`.
pub fn workload(settings: &Settings, seed: u64) -> Workload {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let counts: Vec<f64> = (0..settings.cells)
        .map(|_| f64::from(rng.random_range(0..=settings.max_count)))
        .collect();
    let cell =
        WeightedIndex::new(cell_probabilities(settings.cells)).expect("positive probabilities");
    let queries = (0..settings.queries)
        .map(|_| {
            // Eq. 74: the counts of n_t independent draws of a cell.
            let trials = rng.random_range(1..=settings.max_trials);
            let mut coefficients = vec![0.0; settings.cells];
            for _ in 0..trials {
                coefficients[cell.sample(&mut rng)] += 1.0;
            }
            let row: Vec<(usize, f64)> = coefficients
                .iter()
                .copied()
                .enumerate()
                .filter(|x| x.1 != 0.0)
                .collect();
            let sensitivity = row.iter().fold(0.0f64, |a, x| a.max(x.1.abs()));
            let width = rng.random_range(1.0..=settings.max_width);
            let truth = row.iter().map(|&(c, v)| v * counts[c]).sum();
            Query {
                coefficients,
                row,
                sensitivity,
                half_width: width / 2.0,
                truth,
            }
        })
        .collect();
    Workload { counts, queries }
}

/// The two query-answering systems.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum System {
    /// Fresh releases with Theorem 5.3's epsilon, refused once the budget would be exceeded.
    Baseline,
    /// Answers from the history when its posterior meets the requirement, fresh releases
    /// otherwise.
    Inference,
}

impl System {
    /// The name printed in the table.
    pub fn name(self) -> &'static str {
        match self {
            System::Baseline => "baseline with budget allocation",
            System::Inference => "with inference",
        }
    }
}

/// Where an answer came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The BLUE of the history, at no privacy cost.
    History,
    /// A fresh release (answered with the release alone or with the BLUE including it).
    Release,
}

/// An answered query.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// Where it came from.
    pub source: Source,
    /// `theta-hat`; the returned interval is `theta-hat ± w`.
    pub value: f64,
    /// `theta-hat = sum_k a_k y_k` over the releases `y_k` of the history (a prefix of
    /// [`Run::history`]), with `sum_k a_k h_k = q`; so its error is `sum_k a_k N_k`. The
    /// weights depend on the queries only, never on the noise (see [`run`]).
    pub weights: Vec<f64>,
}

/// The outcome of one system on one workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// Per query, its answer, or `None` if refused.
    pub answers: Vec<Option<Answer>>,
    /// The releases made, in order.
    pub history: Vec<Measurement>,
    /// Per release, the index of the query it was made for.
    pub released_for: Vec<usize>,
    /// Releases answered with the noisy value alone because the BLUE including the release,
    /// though it draws on the history, had a credible interval wider than `2w` (possible in
    /// principle: a smaller variance does not imply a narrower central interval).
    pub fallbacks: usize,
}

/// The privacy cost `max(B)` of a history (Theorem 5.5, eq. 70).
pub fn cost(cells: usize, history: &[Measurement]) -> f64 {
    cell_budgets(cells, history)
        .expect("a valid history")
        .into_iter()
        .fold(0.0, f64::max)
}

/// `P(|a L_1 + b L_2| > w)` for independent standard Laplace `L_1, L_2`, `a >= b >= 0`
/// (partial fractions of the characteristic function `1 / ((1 + a^2 t^2)(1 + b^2 t^2))`).
/// `b` is first capped at `a (1 - 1e-6)`, which can only lower the result (a smaller scale
/// makes the sum more peaked), keeping the cancellation below six digits.
fn two_laplace_tail(a: f64, b: f64, w: f64) -> f64 {
    if b <= 0.0 {
        return (-w / a).exp();
    }
    let b = b.min(a * (1.0 - 1e-6));
    ((a * a * (-w / a).exp() - b * b * (-w / b).exp()) / (a * a - b * b)).clamp(0.0, 1.0)
}

/// Chernoff bound on `P(|R| > t)` for `R = sum_k c_k L_k`: `2 e^{-s t} prod_k 1/(1 - c_k^2 s^2)`
/// for `0 < s < 1 / max c_k` (the Laplace moment generating function), at 32 values of `s`.
fn chernoff_tail(c: &[f64], t: f64) -> f64 {
    let Some(&c_max) = c.first() else {
        return if t >= 0.0 { 0.0 } else { 1.0 };
    };
    (1..32)
        .map(|j| {
            let s = j as f64 / 32.0 / c_max;
            let lmgf: f64 = c.iter().map(|ck| -(-(ck * s).powi(2)).ln_1p()).sum();
            2.0 * (lmgf - s * t).exp()
        })
        .fold(1.0, f64::min)
}

/// Whether the central credible interval at `level` of a BLUE with error `Z = sum_k a_k N_k`
/// (terms `terms`, `theta-hat = estimate`) has half-width at most `w`, i.e.
/// `P(|Z| <= w) >= level`.
///
/// Write `Z = T + R` with `T = c_1 L_1 + c_2 L_2` the two widest terms (`c_k = |a_k| S_k /
/// alpha_k`, `L_k` standard Laplace) and `R` the rest. Bounds settle most cases without
/// the exact distribution and never contradict it (beyond its error bound `gamma`):
/// - too wide: by Anderson's inequality, adding the independent symmetric `R` to the symmetric
///   unimodal `T` only lowers the mass of `[-w, w]`, so `P(|Z| > w) >= P(|T| > w)`, which is
///   exact in closed form;
/// - narrow enough: `Z` is symmetric and unimodal (a sum of independent symmetric unimodal
///   variables, Wintner), so Gauss's inequality `P(|Z| >= k sd) <= 4 / (9 k^2)` for
///   `k >= 2/sqrt(3)` gives `P(|Z| > w) <= delta` once `w >= 2 sd / (3 sqrt(delta))`; or the
///   Chernoff bound on `P(|Z| > w)` is at most `delta`; or
///   `P(|Z| > w) <= P(|T| > w - t) + P(|R| > t)` is, for one of 32 values of `0 < t < w`,
///   with the first term exact and the second bounded by Chernoff.
///
/// Otherwise the exact posterior decides (FFT or Monte Carlo, [`NoiseSum::auto`]).
fn meets<R: Rng + ?Sized>(
    estimate: f64,
    terms: &[Term],
    w: f64,
    level: Probability,
    rng: &mut R,
) -> bool {
    let delta = 1.0 - level.get();
    let mut c: Vec<f64> = terms
        .iter()
        .map(|t| (t.weight * t.scale).abs())
        .filter(|&ck| ck > 0.0)
        .collect();
    if c.is_empty() {
        return true;
    }
    c.sort_by(|a, b| b.total_cmp(a));
    let (c1, c2) = (c[0], c.get(1).copied().unwrap_or(0.0));
    let rest = &c[c.len().min(2)..];
    if two_laplace_tail(c1, c2, w) > delta {
        return false;
    }
    let sd = (2.0 * c.iter().map(|ck| ck * ck).sum::<f64>()).sqrt();
    let k = 2.0 / (3.0 * delta.sqrt());
    if (k >= 2.0 / 3f64.sqrt() && k * sd <= w) || chernoff_tail(&c, w) <= delta {
        return true;
    }
    let split = (1..32)
        .map(|j| {
            let t = w * j as f64 / 32.0;
            two_laplace_tail(c1, c2, w - t) + chernoff_tail(rest, t)
        })
        .fold(1.0, f64::min);
    if split <= delta {
        return true;
    }
    let noise = NoiseSum::auto(terms, rng).expect("finite terms");
    let (lo, hi) = Posterior { estimate, noise }.credible_interval(level);
    (hi - lo) / 2.0 <= w
}

/// The terms `a_k N_k` of an answer's error: weight `a_k`, Laplace scale `S_k / alpha_k`.
pub fn error_terms(history: &[Measurement], answer: &Answer) -> Vec<Term> {
    answer
        .weights
        .iter()
        .zip(history)
        .map(|(&weight, m)| Term {
            weight,
            scale: m.sensitivity / m.eps,
            law: m.law,
        })
        .collect()
}

/// Runs `system` on `workload`. The noise comes from `seed`, on a stream of its own per system.
///
/// Every decision (estimable or not, half-width within `w` or not, budget left or not) depends
/// on the queries only, never on a noisy value: the BLUE's weights and its error's distribution
/// are functions of `H`, `alpha` and `S`. So each answer's interval `theta-hat ± w` holds the
/// true value with probability `P(|sum_k a_k N_k| <= w)`, which is at least `1 - delta` (up to
/// the FFT's error bound) whenever the credible half-width is at most `w`, and exactly
/// `1 - delta` for the release alone (Theorem 5.3).
pub fn run(system: System, settings: &Settings, workload: &Workload, seed: u64) -> Run {
    let cells = settings.cells;
    let level = settings.level();
    let mut noise_rng = ChaCha20Rng::seed_from_u64(seed);
    noise_rng.set_stream(match system {
        System::Baseline => 1,
        System::Inference => 2,
    });
    // Only used if the exact distribution falls back to Monte Carlo.
    let mut mc_rng = ChaCha20Rng::seed_from_u64(seed);
    mc_rng.set_stream(3);

    let mut out = Run {
        answers: Vec::with_capacity(workload.queries.len()),
        history: Vec::new(),
        released_for: Vec::new(),
        fallbacks: 0,
    };
    // The BLUE of the current history, rebuilt after each release.
    let mut blue = Blue::new(cells, &[]).expect("the empty history is valid");

    for (i, q) in workload.queries.iter().enumerate() {
        if system == System::Inference {
            if let Ok(est) = blue.estimate(&q.coefficients) {
                let answer = Answer {
                    source: Source::History,
                    value: est.value,
                    weights: est.weights,
                };
                let terms = error_terms(&out.history, &answer);
                if meets(answer.value, &terms, q.half_width, level, &mut mc_rng) {
                    out.answers.push(Some(answer));
                    continue;
                }
            }
        }

        // A fresh release with Theorem 5.3's epsilon, if the cell budgets allow it.
        let s = Positive::new(q.sensitivity).expect("a query has a non-zero coefficient");
        let w = Positive::new(q.half_width).expect("w >= 1/2");
        let eps = eps_for_half_width(s, w, level);
        out.history.push(Measurement {
            row: q.row.clone(),
            eps,
            sensitivity: q.sensitivity,
            noisy: q.truth,
            law: dpq::stats::exact::Law::Laplace,
        });
        if cost(cells, &out.history) > settings.total_budget {
            out.history.pop();
            out.answers.push(None);
            continue;
        }
        let scale = q.sensitivity / eps;
        let noisy = q.truth + laplace::sample(&mut noise_rng, scale);
        out.history.last_mut().expect("just pushed").noisy = noisy;
        out.released_for.push(i);
        let mut one_hot = vec![0.0; out.history.len()];
        one_hot[out.history.len() - 1] = 1.0;
        let alone = Answer {
            source: Source::Release,
            value: noisy,
            weights: one_hot,
        };
        let answer = match system {
            System::Baseline => alone,
            System::Inference => {
                // The posterior after the release: the BLUE of the whole history. It is
                // estimable (the query is now a row of H). When the history holds no
                // information on the query's direction, the BLUE is the release itself (weights
                // one-hot up to round-off), whose interval is exactly `w` (Theorem 5.3): it is
                // returned as is, since the FFT would place that half-width a grid error
                // (about 5e-8 relative) above `w`. Otherwise the BLUE's interval is checked
                // against `w` like any other, and the release alone (exactly `1 - delta`) is
                // the answer if it is wider.
                blue = Blue::new(cells, &out.history).expect("a valid history");
                let est = blue
                    .estimate(&q.coefficients)
                    .expect("a released query is estimable");
                let posterior = Answer {
                    source: Source::Release,
                    value: est.value,
                    weights: est.weights,
                };
                let is_release = posterior
                    .weights
                    .iter()
                    .zip(&alone.weights)
                    .all(|(a, e)| (a - e).abs() <= 1e-9);
                let terms = error_terms(&out.history, &posterior);
                if is_release {
                    alone
                } else if meets(posterior.value, &terms, q.half_width, level, &mut mc_rng) {
                    posterior
                } else {
                    out.fallbacks += 1;
                    alone
                }
            }
        };
        out.answers.push(Some(answer));
    }
    out
}

/// Definitions 6.1-6.3 and the cost of one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Metrics {
    /// All queries.
    pub queries: usize,
    /// Answered queries.
    pub answered: usize,
    /// Answered from the history, at no cost.
    pub from_history: usize,
    /// `Ra`: answered / all (Definition 6.1).
    pub ra: f64,
    /// `E`: mean over answered queries of `|theta-hat - theta| / (2w)` (Definition 6.3).
    pub e: f64,
    /// `Ri`: the fraction of answered queries whose interval `theta-hat ± w` holds `theta`
    /// (Definition 6.2).
    pub ri: f64,
    /// The budget spent, `max(B)` (Theorem 5.5).
    pub cost: f64,
}

/// Scores `run` against the true answers.
pub fn metrics(settings: &Settings, workload: &Workload, run: &Run) -> Metrics {
    let (mut answered, mut from_history, mut covered, mut err) = (0usize, 0usize, 0usize, 0.0);
    for (q, a) in workload.queries.iter().zip(&run.answers) {
        let Some(a) = a else { continue };
        answered += 1;
        if a.source == Source::History {
            from_history += 1;
        }
        let miss = (a.value - q.truth).abs();
        err += miss / (2.0 * q.half_width);
        if miss <= q.half_width {
            covered += 1;
        }
    }
    let n = answered.max(1) as f64;
    Metrics {
        queries: workload.queries.len(),
        answered,
        from_history,
        ra: answered as f64 / workload.queries.len() as f64,
        e: err / n,
        ri: covered as f64 / n,
        cost: cost(settings.cells, &run.history),
    }
}

/// Runs both systems on the workload of `seed`.
pub fn experiment(settings: &Settings, seed: u64) -> Vec<(System, Run, Metrics)> {
    let work = workload(settings, seed);
    [System::Baseline, System::Inference]
        .into_iter()
        .map(|system| {
            let r = run(system, settings, &work, seed);
            let m = metrics(settings, &work, &r);
            (system, r, m)
        })
        .collect()
}

fn main() {
    let settings = Settings::paper();
    let seeds: Vec<u64> = (1..=5).collect();
    println!(
        "{} cells, {} queries, 2w uniform in [1, {}], delta = {}, total budget {}\n",
        settings.cells, settings.queries, settings.max_width, settings.delta, settings.total_budget
    );
    let mut sums = [[0.0f64; 6]; 2];
    for &seed in &seeds {
        let results = experiment(&settings, seed);
        if seed == seeds[0] {
            println!("seed {seed}:\n");
            println!("| system | Ra | E | Ri | answered from history | budget spent |");
            println!("|---|---|---|---|---|---|");
        }
        for (k, (system, run, m)) in results.iter().enumerate() {
            if seed == seeds[0] {
                println!(
                    "| {} | {:.3} | {:.3} | {:.3} | {} of {} | {:.4} |",
                    system.name(),
                    m.ra,
                    m.e,
                    m.ri,
                    m.from_history,
                    m.answered,
                    m.cost
                );
            }
            let row = [
                m.ra,
                m.e,
                m.ri,
                m.from_history as f64,
                m.answered as f64,
                m.cost,
            ];
            for (s, v) in sums[k].iter_mut().zip(row) {
                *s += v;
            }
            if run.fallbacks > 0 {
                println!(
                    "(seed {seed}, {}: {} releases answered alone)",
                    system.name(),
                    run.fallbacks
                );
            }
        }
    }
    let n = seeds.len() as f64;
    println!("\nmean over seeds {seeds:?}:\n");
    println!("| system | Ra | E | Ri | answered from history | answered | budget spent |");
    println!("|---|---|---|---|---|---|---|");
    for (system, s) in [System::Baseline, System::Inference].iter().zip(sums) {
        println!(
            "| {} | {:.3} | {:.3} | {:.3} | {:.1} | {:.1} | {:.4} |",
            system.name(),
            s[0] / n,
            s[1] / n,
            s[2] / n,
            s[3] / n,
            s[4] / n,
            s[5] / n
        );
    }
}
