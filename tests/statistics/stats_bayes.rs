//! The Bayes posterior of a count (paper 1, eq. 9-11): exactness against the O(n) reference,
//! the credible interval, and the paper's claim that it beats the noisy answer.

use dpq::stats::bayes::{posterior, posterior_mean_direct, CountPosterior};
use dpq::stats::{laplace, Epsilon, Probability};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rand_distr::{Binomial, Distribution};

fn eps(x: f64) -> Epsilon {
    Epsilon::new(x).expect("test epsilon is valid")
}

fn prob(x: f64) -> Probability {
    Probability::new(x).expect("test probability is valid")
}

fn relative_error(got: f64, want: f64) -> f64 {
    if got == want {
        0.0
    } else {
        (got - want).abs() / want.abs()
    }
}

/// Noisy answers to try for a database of size n: far below 0, at and near the edges,
/// inside (integers and not), near n p, beyond n.
fn answers(n: u64, p: f64) -> Vec<f64> {
    let nf = n as f64;
    vec![
        -1e6,
        -37.25,
        -0.5,
        0.0,
        0.75,
        (nf * p).floor(),
        nf * p + 0.3,
        nf * p + 25.5,
        nf / 2.0 + 0.125,
        nf - 1.5,
        nf,
        nf + 7.5,
        1e9,
        nf * p + 3.0 * (nf * p * (1.0 - p)).sqrt(),
    ]
}

/// A few of `answers`, for the O(n) reference at large n.
fn some_answers(n: u64, p: f64) -> Vec<f64> {
    let nf = n as f64;
    vec![
        -1e6,
        nf * p + 0.3,
        nf / 2.0 + 0.125,
        nf + 7.5,
        nf * p + 3.0 * (nf * p * (1.0 - p)).sqrt(),
    ]
}

/// Max relative error of `posterior(..).mean` against `posterior_mean_direct` over a grid.
fn worst_against_reference(
    ns: &[u64],
    ps: &[f64],
    es: &[f64],
    answers: fn(u64, f64) -> Vec<f64>,
) -> (f64, String) {
    let mut worst = (0.0, String::new());
    for &n in ns {
        for &p in ps {
            for &e in es {
                for y in answers(n, p) {
                    let fast = posterior(n, prob(p), eps(e), y, prob(0.95)).mean;
                    let direct = posterior_mean_direct(n, prob(p), eps(e), y);
                    let err = relative_error(fast, direct);
                    assert!(
                        err.is_finite(),
                        "n={n} p={p} eps={e} y={y}: {fast} vs {direct}"
                    );
                    if err > worst.0 {
                        worst = (
                            err,
                            format!("n={n} p={p} eps={e} y={y}: {fast} vs {direct}"),
                        );
                    }
                }
            }
        }
    }
    worst
}

#[test]
fn posterior_mean_matches_the_direct_sum_to_1e_12() {
    // A grid over small and medium n, p from 1e-6 to 1 - 1e-6, eps from 1e-9 to 1e3, and
    // noisy answers inside, at the edges of and far outside [0, n].
    let (worst, at) = worst_against_reference(
        &[1, 2, 3, 10, 30, 100, 1000, 10_000],
        &[1e-6, 0.01, 0.3, 0.5, 0.9, 1.0 - 1e-6],
        &[1e-9, 1e-3, 0.05, 0.1, 1.0, 10.0, 1e3],
        answers,
    );
    assert!(worst <= 1e-12, "worst relative error {worst:e} at {at}");
}

#[test]
fn posterior_mean_matches_the_direct_sum_at_large_n() {
    // The reference is O(n), so fewer combinations: eps 1e-4 makes the prior dominate
    // (posterior standard deviation up to sqrt(n p (1-p)) ~ 460 at 10^6).
    let (worst, at) =
        worst_against_reference(&[100_000], &[0.3, 0.999], &[1e-4, 0.1, 2.0], answers);
    assert!(worst <= 1e-12, "worst relative error {worst:e} at {at}");
    let (worst, at) =
        worst_against_reference(&[1_000_000], &[0.3], &[1e-4, 0.1, 2.0], some_answers);
    assert!(worst <= 1e-12, "worst relative error {worst:e} at {at}");
}

/// Plain evaluation of eq. 11 for small n: f64 binomial coefficients (exact for n <= 30),
/// `powi` and `exp`, no logs.
fn plain_mean(n: u64, p: f64, e: f64, y: f64) -> f64 {
    let mut binom = 1.0f64;
    let (mut num, mut den) = (0.0, 0.0);
    for k in 0..=n {
        if k > 0 {
            binom = binom * (n - k + 1) as f64 / k as f64;
        }
        let w = binom
            * p.powi(k as i32)
            * (1.0 - p).powi((n - k) as i32)
            * (-e * (y - k as f64).abs()).exp();
        num += k as f64 * w;
        den += w;
    }
    num / den
}

#[test]
fn reference_matches_plain_evaluation_for_small_n() {
    // Inputs where plain evaluation neither underflows nor overflows (eps |y-k| < 300).
    let mut worst = 0.0f64;
    for n in [1u64, 2, 5, 13, 30] {
        for p in [0.01, 0.3, 0.5, 0.77, 0.99] {
            for e in [1e-9, 0.05, 0.5, 3.0] {
                for y in [
                    -20.0,
                    -0.5,
                    0.0,
                    1.0,
                    2.7,
                    n as f64 / 2.0,
                    n as f64 + 0.1,
                    60.0,
                ] {
                    let plain = plain_mean(n, p, e, y);
                    let direct = posterior_mean_direct(n, prob(p), eps(e), y);
                    worst = worst.max(relative_error(direct, plain));
                }
            }
        }
    }
    assert!(worst <= 1e-13, "worst relative error {worst:e}");
}

/// Normalised posterior weights by accumulating log term ratios (n up to ~10^4). `y` is
/// clamped into [0, n] (which leaves the posterior unchanged, see
/// `answers_beyond_the_range_give_the_edge_posterior`) so that `e |y - k|` stays small.
fn posterior_weights(n: u64, p: f64, e: f64, y: f64) -> Vec<f64> {
    let y = y.clamp(0.0, n as f64);
    let log_odds = p.ln() - (-p).ln_1p();
    let mut logs = Vec::with_capacity(n as usize + 1);
    let mut acc = 0.0f64;
    for k in 0..=n {
        logs.push(acc - e * (y - k as f64).abs());
        acc += ((n - k) as f64 / (k + 1) as f64).ln() + log_odds;
    }
    let max = logs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let w: Vec<f64> = logs.iter().map(|l| (l - max).exp()).collect();
    let total: f64 = w.iter().sum();
    w.into_iter().map(|x| x / total).collect()
}

#[test]
fn credible_interval_contains_the_mean_and_has_the_mass() {
    for (n, p, e) in [
        (100u64, 0.3, 0.1),
        (1000, 0.3, 0.05),
        (1000, 0.02, 1.0),
        (5000, 0.6, 0.01),
    ] {
        for level in [0.5, 0.9, 0.95, 0.999] {
            for y in answers(n, p) {
                let post: CountPosterior = posterior(n, prob(p), eps(e), y, prob(level));
                assert_eq!(post.level, level);
                assert!(
                    post.lower as f64 <= post.mean && post.mean <= post.upper as f64,
                    "{post:?} n={n} p={p} eps={e} y={y}"
                );
                let w = posterior_weights(n, p, e, y);
                let mass: f64 = w[post.lower as usize..=post.upper as usize].iter().sum();
                // 1e-12 allows for the rounding of the test's own sums.
                assert!(mass >= level - 1e-12, "mass {mass} < {level}: {post:?}");
                // Equal-tailed: each end is the smallest count reaching its quantile.
                let tail = (1.0 - level) / 2.0;
                let below_lower: f64 = w[..post.lower as usize].iter().sum();
                let through_upper: f64 = w[..=post.upper as usize].iter().sum();
                let below_upper = through_upper - w[post.upper as usize];
                assert!(below_lower < tail + 1e-12, "{post:?}");
                assert!(
                    below_lower + w[post.lower as usize] >= tail - 1e-12,
                    "{post:?}"
                );
                assert!(through_upper >= 1.0 - tail - 1e-12, "{post:?}");
                assert!(below_upper < 1.0 - tail + 1e-12, "{post:?}");
            }
        }
    }
}

#[test]
fn answers_beyond_the_range_give_the_edge_posterior() {
    // For y >= n every |y - k| = y - k, so e^{-eps y} cancels from eq. 11: the posterior
    // is the one for y = n (and for y <= 0 the one for y = 0).
    let (n, p, e) = (1000u64, prob(0.3), eps(0.05));
    let at_n = posterior(n, p, e, 1000.0, prob(0.95));
    for y in [1000.5, 1e6, f64::INFINITY] {
        assert_eq!(posterior(n, p, e, y, prob(0.95)), at_n);
    }
    let at_0 = posterior(n, p, e, 0.0, prob(0.95));
    for y in [-0.5, -1e6, f64::NEG_INFINITY] {
        assert_eq!(posterior(n, p, e, y, prob(0.95)), at_0);
    }
}

/// One-sided z critical value for alpha = 1e-6 (standard normal upper quantile).
const Z_ONE_SIDED_1E6: f64 = 4.753_424_3;
/// Two-sided z critical value for alpha = 1e-6.
const Z_TWO_SIDED_1E6: f64 = 4.891_638_5;

#[test]
fn bayes_beats_the_noisy_answer_in_mean_absolute_error() {
    // Paper 1, section 4.2 (Figures 1-4): with k ~ Binomial(n, 0.3) and y = k + Laplace(1/eps),
    // the Bayes estimate has a lower average absolute error than the naive y, and the naive
    // one's is 1/eps (eq. 14). 20,000 seeded draws of (k, y) per (n, eps).
    //
    // Bayes better, a paired test on the same draws. The raw pair difference
    // |y - k| - |bayes - k| is too noisy where the gain is small: at n = 1000, eps = 0.5 the
    // gain is about 0.3% of the MAE (the paper's "very close" at low noise) and 20,000 raw
    // pairs give z of about 2. So each pair is conditioned on its y (Rao-Blackwell):
    // c_i = E[|y_i - k| - |bayes_i - k| | y_i], summed over the exact posterior of k (computed
    // here independently of the library). E[c] is the MAE difference, its variance is far
    // smaller. Reject "E[c] <= 0" when mean(c) / (sd(c)/sqrt(N)) > 4.7534: a one-sided
    // false-positive rate of 1e-6 (normal approximation, N = 20,000 i.i.d. bounded-tail c_i).
    //
    // Naive MAE, from the raw draws: |y - k| = |Laplace(1/eps)| ~ Exp(mean 1/eps, sd 1/eps),
    // so eps * MAE has standard error 1/sqrt(N) = 0.00707; the tolerance 4.8916/sqrt(N) =
    // 0.0346 is a two-sided false-positive rate of 1e-6.
    const RUNS: usize = 20_000;
    let mut rng = ChaCha20Rng::seed_from_u64(20_140_701);
    let p = 0.3;
    for n in [100u64, 1000] {
        let prior = Binomial::new(n, p).expect("valid binomial");
        for e in [0.05, 0.1, 0.5] {
            let (mut naive_sum, mut c_sum, mut c_sq) = (0.0, 0.0, 0.0);
            for _ in 0..RUNS {
                let k = prior.sample(&mut rng) as f64;
                let y = k + laplace::sample(&mut rng, 1.0 / e);
                let bayes = posterior(n, prob(p), eps(e), y, prob(0.95)).mean;
                naive_sum += (y - k).abs();
                let c: f64 = posterior_weights(n, p, e, y)
                    .iter()
                    .enumerate()
                    .map(|(j, w)| w * ((y - j as f64).abs() - (bayes - j as f64).abs()))
                    .sum();
                c_sum += c;
                c_sq += c * c;
            }
            let runs = RUNS as f64;
            let c_mean = c_sum / runs;
            let c_sd = ((c_sq - runs * c_mean * c_mean) / (runs - 1.0)).sqrt();
            let z = c_mean / (c_sd / runs.sqrt());
            assert!(
                z > Z_ONE_SIDED_1E6,
                "n={n} eps={e}: MAE gain {c_mean}, z = {z}"
            );
            let naive_mae = naive_sum / runs;
            assert!(
                (naive_mae * e - 1.0).abs() < Z_TWO_SIDED_1E6 / runs.sqrt(),
                "n={n} eps={e}: naive MAE {naive_mae} vs 1/eps = {}",
                1.0 / e
            );
        }
    }
}
