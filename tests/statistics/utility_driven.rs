//! The utility-driven query answering system of Xiao and Xiong (section 6.4.2, bounded
//! setting) on synthetic data: with inference it answers more queries than the baseline with
//! budget allocation, its answers hold the true value at the required level, and neither
//! system spends more than the total budget.
//!
//! The simulation is `examples/utility_driven.rs`, here at a reduced size (150 queries instead
//! of 1000, everything else as in the paper's setting, under which the budget already binds
//! for both systems on every seed) to keep the debug build's exact distributions (FFTs) few. Runs use fixed ChaCha20 seeds, so they are reproducible; statistical
//! checks state their false-positive rate.

#[path = "../../examples/utility_driven.rs"]
#[allow(dead_code)]
mod sim;

use std::sync::OnceLock;

use dpq::stats::blue::{cell_budgets, Measurement};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use sim::{Run, Settings, Source, System, Workload};

/// The seeds of the workloads.
const SEEDS: [u64; 5] = [1, 2, 3, 4, 5];

/// Noise replications per answered query in the reliability test.
const REPLICATIONS: usize = 20;

fn settings() -> Settings {
    Settings {
        queries: 150,
        ..Settings::paper()
    }
}

/// One workload and both systems' runs on it.
struct Case {
    work: Workload,
    baseline: Run,
    inference: Run,
}

/// The five cases, computed once (two at a time) and shared by the tests.
fn cases() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(|| {
        let s = settings();
        std::thread::scope(|scope| {
            let handles: Vec<_> = SEEDS
                .iter()
                .map(|&seed| {
                    scope.spawn(move || {
                        let work = sim::workload(&s, seed);
                        let baseline = sim::run(System::Baseline, &s, &work, seed);
                        let inference = sim::run(System::Inference, &s, &work, seed);
                        Case {
                            work,
                            baseline,
                            inference,
                        }
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("simulation thread"))
                .collect()
        })
    })
}

/// `ln P(X = k)` for `X ~ Binomial(n, p)`, `k = 0..=n`, by the ratio of successive terms.
fn binomial_log_pmf(n: usize, p: f64) -> Vec<f64> {
    let mut out = vec![0.0; n + 1];
    out[n] = n as f64 * p.ln();
    let odds = ((1.0 - p) / p).ln();
    for k in (1..=n).rev() {
        // P(k - 1) / P(k) = k / (n - k + 1) * (1 - p) / p.
        out[k - 1] = out[k] + (k as f64).ln() - ((n - k + 1) as f64).ln() + odds;
    }
    out
}

/// The largest `c` with `P(X < c) <= alpha` for `X ~ Binomial(n, p)`: a count below `c` is
/// rejected at false-positive rate at most `alpha`.
fn lower_critical(n: usize, p: f64, alpha: f64) -> usize {
    let pmf = binomial_log_pmf(n, p);
    let mut below = 0.0;
    for (k, lp) in pmf.iter().enumerate() {
        // below = P(X < k).
        let next = below + lp.exp();
        if next > alpha {
            return k;
        }
        below = next;
    }
    n + 1
}

/// The smallest `c` with `P(X > c) <= alpha` for `X ~ Binomial(n, p)`.
fn upper_critical(n: usize, p: f64, alpha: f64) -> usize {
    n - lower_critical(n, 1.0 - p, alpha)
}

fn max(v: &[f64]) -> f64 {
    v.iter().fold(0.0f64, |a, &b| a.max(b))
}

fn answered(run: &Run) -> usize {
    run.answers.iter().filter(|a| a.is_some()).count()
}

#[test]
fn inference_answers_more_queries_on_every_seed() {
    // Not a statistical test: every decision of either system (estimable or not, interval
    // narrow enough or not, budget left or not) depends on the queries only, never on a noisy
    // value, so each seed's outcome is fixed and the check is exact for these five workloads.
    // It is robust because the gap is structural: 90% of the query mass falls on ten cells,
    // whose budgets the baseline exhausts and then refuses nearly every query touching them,
    // while the inference system answers most later queries from the history at no cost, and
    // it widens with every further query. At 150 queries the gains in Ra over the baseline are
    // 0.07 to 0.21 (10 to 32 queries) on these seeds, where the budget already binds (max(B)
    // above 0.99 for the baseline); at the full 1000 queries Ra is about 0.2 against 0.87.
    let s = settings();
    for (seed, case) in SEEDS.iter().zip(cases()) {
        let base = sim::metrics(&s, &case.work, &case.baseline);
        let inf = sim::metrics(&s, &case.work, &case.inference);
        assert!(
            inf.ra > base.ra,
            "seed {seed}: Ra {} with inference, {} baseline",
            inf.ra,
            base.ra
        );
        assert!(inf.from_history > 0, "seed {seed}");
        assert_eq!(base.from_history, 0, "seed {seed}");
    }
}

#[test]
fn answers_are_unbiased_combinations_of_the_releases() {
    // theta-hat = sum_k a_k y_k with sum_k a_k h_k = q, so theta-hat - theta = sum_k a_k N_k:
    // the reliability test below draws exactly this error. Tolerance 1e-7 relative to the
    // size of the terms (the BLUE's own solves are accurate to far better).
    for (seed, case) in SEEDS.iter().zip(cases()) {
        for run in [&case.baseline, &case.inference] {
            for (q, a) in case.work.queries.iter().zip(&run.answers) {
                let Some(a) = a else { continue };
                assert!(a.weights.len() <= run.history.len());
                let hist = &run.history[..a.weights.len()];
                let mut ay = 0.0;
                let mut size = 0.0;
                let mut ah = vec![0.0; q.coefficients.len()];
                for (w, m) in a.weights.iter().zip(hist) {
                    ay += w * m.noisy;
                    size += (w * m.noisy).abs();
                    for &(c, h) in &m.row {
                        ah[c] += w * h;
                    }
                }
                assert!((ay - a.value).abs() <= 1e-7 * size.max(1.0), "seed {seed}");
                for (x, qc) in ah.iter().zip(&q.coefficients) {
                    assert!((x - qc).abs() <= 1e-7 * max(&q.coefficients), "seed {seed}");
                }
            }
        }
    }
}

#[test]
fn inference_answers_hold_the_true_value_at_the_required_level() {
    // Each answer's interval theta-hat -/+ w holds theta with probability
    // p_i = P(|sum_k a_k N_k| <= w_i) >= 0.8: a release alone has exactly 0.8 (Theorem 5.3),
    // and a BLUE is used only when its central credible interval at 0.8 has half-width <= w.
    // Within one run the answers share releases, so their hits are dependent and the observed
    // Ri is not a binomial count. The calibrated test therefore redraws the noise: for each
    // answered query of each seed, REPLICATIONS independent draws of its error
    // sum_k a_k N_k (N_k ~ Laplace(S_k / alpha_k), fresh each time). All draws are
    // independent with success probabilities p_i >= 0.8, so the number of hits stochastically
    // dominates Binomial(trials, 0.8), and a count below the binomial's lower critical value
    // at 1e-6 would reject "Ri >= 0.8" at false-positive rate at most 1e-6. (The exact
    // distribution's error bound, below 1e-6 in probability, is far inside this margin.)
    // Here: 13,300 draws, critical count 10,419 (replicated Ri must be at least 0.7834);
    // observed 0.906.
    let s = settings();
    let mut rng = ChaCha20Rng::seed_from_u64(6_402);
    let (mut trials, mut hits) = (0usize, 0usize);
    let (mut answered_all, mut covered_all) = (0usize, 0usize);
    for case in cases() {
        let run = &case.inference;
        for (q, a) in case.work.queries.iter().zip(&run.answers) {
            let Some(a) = a else { continue };
            let terms: Vec<_> = sim::error_terms(&run.history, a)
                .into_iter()
                .filter(|t| t.weight != 0.0)
                .collect();
            for _ in 0..REPLICATIONS {
                let err: f64 = terms
                    .iter()
                    .map(|t| t.weight * dpq::stats::laplace::sample(&mut rng, t.scale))
                    .sum();
                trials += 1;
                if err.abs() <= q.half_width {
                    hits += 1;
                }
            }
            answered_all += 1;
            if (a.value - q.truth).abs() <= q.half_width {
                covered_all += 1;
            }
        }
        let m = sim::metrics(&s, &case.work, run);
        assert_eq!(m.answered, answered(run));
    }
    let crit = lower_critical(trials, 0.8, 1e-6);
    // About 0.8 - 4.75 sqrt(0.16 / trials).
    let bound = crit as f64 / trials as f64;
    assert!(bound > 0.78 && bound < 0.8, "bound {bound} over {trials}");
    assert!(
        hits >= crit,
        "replicated Ri {} over {trials} draws, below the bound {bound}",
        hits as f64 / trials as f64
    );
    // The observed Ri of the runs themselves (606 of 665, 0.91), against the same bound for its
    // count: a sanity check only, not calibrated at 1e-6, since hits within a run are
    // dependent.
    let observed_crit = lower_critical(answered_all, 0.8, 1e-6);
    assert!(
        covered_all >= observed_crit,
        "observed Ri {covered_all} / {answered_all}"
    );
}

#[test]
fn neither_system_spends_more_than_the_total_budget() {
    // B = (alpha ./ S)' |H| only grows as releases are added, so the final history's max(B)
    // bounds every earlier one.
    let s = settings();
    for (seed, case) in SEEDS.iter().zip(cases()) {
        for run in [&case.baseline, &case.inference] {
            let b = cell_budgets(s.cells, &run.history).expect("valid history");
            assert!(
                max(&b) <= s.total_budget,
                "seed {seed}: max(B) = {}",
                max(&b)
            );
            let m = sim::metrics(&s, &case.work, run);
            assert_eq!(m.cost, max(&b));
        }
    }
}

#[test]
fn releases_use_theorem_5_3_epsilon() {
    // Every release of either system, for a query of sensitivity S and half-width w, has
    // eps = S ln(1/delta) / w (Theorem 5.3), i.e. P(|N| > w) = exp(-w eps / S) = delta for
    // N ~ Laplace(S / eps); to 1e-12 relative.
    let s = settings();
    for case in cases() {
        for run in [&case.baseline, &case.inference] {
            assert_eq!(run.released_for.len(), run.history.len());
            for (m, &i) in run.history.iter().zip(&run.released_for) {
                let q = &case.work.queries[i];
                let eps = q.sensitivity * (1.0 / s.delta).ln() / q.half_width;
                assert!((m.eps - eps).abs() <= 1e-12 * eps, "{} vs {eps}", m.eps);
                let tail = (-q.half_width * m.eps / m.sensitivity).exp();
                assert!((tail - s.delta).abs() <= 1e-12);
                assert_eq!(m.sensitivity, q.sensitivity);
                assert_eq!(m.row, q.row);
            }
        }
    }
}

#[test]
fn baseline_answers_every_query_that_fits_and_only_those() {
    // Replays the baseline: query i is answered, by its own release, exactly when the budgets
    // of the releases before it plus its own stay within the total.
    let s = settings();
    for (seed, case) in SEEDS.iter().zip(cases()) {
        let run = &case.baseline;
        let mut prefix: Vec<Measurement> = Vec::new();
        for (i, (q, a)) in case.work.queries.iter().zip(&run.answers).enumerate() {
            let eps = q.sensitivity * (1.0 / s.delta).ln() / q.half_width;
            prefix.push(Measurement {
                row: q.row.clone(),
                eps,
                sensitivity: q.sensitivity,
                noisy: 0.0,
                law: Default::default(),
            });
            let fits = max(&cell_budgets(s.cells, &prefix).expect("valid")) <= s.total_budget;
            assert_eq!(a.is_some(), fits, "seed {seed}, query {i}");
            match a {
                Some(a) => {
                    let k = prefix.len() - 1;
                    assert_eq!(run.released_for[k], i);
                    assert_eq!(a.source, Source::Release);
                    assert_eq!(a.value, run.history[k].noisy);
                }
                None => {
                    prefix.pop();
                }
            }
        }
        assert_eq!(prefix.len(), run.history.len());
    }
}

#[test]
fn baseline_reliability_is_exactly_the_confidence_level() {
    // Each baseline answer has its own independent Laplace noise and P(|N| <= w) = 0.8
    // exactly, so the hits pooled over the seeds are Binomial(answered, 0.8): two-sided test
    // at false-positive rate 1e-6 (5e-7 in each tail).
    let (mut n, mut hits) = (0usize, 0usize);
    for case in cases() {
        for (q, a) in case.work.queries.iter().zip(&case.baseline.answers) {
            let Some(a) = a else { continue };
            n += 1;
            if (a.value - q.truth).abs() <= q.half_width {
                hits += 1;
            }
        }
    }
    let (lo, hi) = (lower_critical(n, 0.8, 5e-7), upper_critical(n, 0.8, 5e-7));
    assert!(
        (lo..=hi).contains(&hits),
        "{hits} hits of {n}, outside [{lo}, {hi}]"
    );
}

#[test]
fn binomial_critical_values_match_known_tails() {
    // Binomial(10, 0.5): P(X < 2) = 11/1024 = 0.0107, P(X < 3) = 56/1024 = 0.0547.
    assert_eq!(lower_critical(10, 0.5, 0.02), 2);
    assert_eq!(lower_critical(10, 0.5, 0.06), 3);
    assert_eq!(upper_critical(10, 0.5, 0.02), 8);
    // Large n against the normal approximation 0.8 n - 4.75 sqrt(0.16 n), within 1%.
    let n = 10_000;
    let c = lower_critical(n, 0.8, 1e-6) as f64;
    let normal = 0.8 * n as f64 - 4.753 * (0.16 * n as f64).sqrt();
    assert!((c - normal).abs() < 0.01 * normal, "{c} vs {normal}");
}
