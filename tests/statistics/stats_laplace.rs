//! The Laplace mechanism: the sampler's distribution, its interval, the out-of-range
//! probability (paper 1, eq. 2-6) and the choice of epsilon (paper 2, eq. 9-10).

use dpq::stats::accuracy::{
    choose_eps_absolute, choose_eps_relative, out_of_range_max, out_of_range_min,
    out_of_range_probability,
};
use dpq::stats::laplace::{interval_half_width, sample};
use dpq::stats::{Epsilon, Positive, Probability};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn eps(x: f64) -> Epsilon {
    Epsilon::new(x).expect("test epsilon is valid")
}

fn prob(x: f64) -> Probability {
    Probability::new(x).expect("test probability is valid")
}

fn positive(x: f64) -> Positive {
    Positive::new(x).expect("test value is positive")
}

/// Two-sided standard normal critical value for a false-positive rate of 1e-6.
const Z_1E6: f64 = 4.891_638_5;

/// CDF of Laplace(0, scale).
fn laplace_cdf(x: f64, scale: f64) -> f64 {
    if x < 0.0 {
        0.5 * (x / scale).exp()
    } else {
        1.0 - 0.5 * (-x / scale).exp()
    }
}

/// Kolmogorov-Smirnov statistic D = sup |F_n - F| of sorted draws against `cdf`.
fn ks_statistic(sorted: &[f64], cdf: impl Fn(f64) -> f64) -> f64 {
    let n = sorted.len() as f64;
    sorted
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let f = cdf(x);
            (f - i as f64 / n).max((i + 1) as f64 / n - f)
        })
        .fold(0.0, f64::max)
}

/// Wilson score interval for a binomial proportion at the given z.
fn wilson(successes: usize, trials: usize, z: f64) -> (f64, f64) {
    let (k, n) = (successes as f64, trials as f64);
    let phat = k / n;
    let z2 = z * z;
    let centre = (phat + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = z / (1.0 + z2 / n) * (phat * (1.0 - phat) / n + z2 / (4.0 * n * n)).sqrt();
    (centre - half, centre + half)
}

#[test]
fn sampler_passes_kolmogorov_smirnov_against_the_laplace_cdf() {
    // 100,000 seeded draws per scale. Asymptotic Kolmogorov distribution:
    // P(sqrt(N) D > c) ~ 2 exp(-2 c^2), so c = sqrt(ln(2/alpha)/2) = 2.6934 for alpha = 1e-6,
    // i.e. reject when D > 0.008517: a false-positive rate of 1e-6 per scale.
    // Power: a 10% wrong scale shifts the CDF by up to 0.0175, so the same draws must be
    // rejected against Laplace(1.1 scale); this shows the test can fail.
    const DRAWS: usize = 100_000;
    let critical = ((2.0f64 / 1e-6).ln() / 2.0).sqrt() / (DRAWS as f64).sqrt();
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    for scale in [1.0, 10.0, 1e-3] {
        let mut draws: Vec<f64> = (0..DRAWS).map(|_| sample(&mut rng, scale)).collect();
        draws.sort_by(f64::total_cmp);
        let d = ks_statistic(&draws, |x| laplace_cdf(x, scale));
        assert!(d < critical, "scale {scale}: D = {d} >= {critical}");
        let wrong = ks_statistic(&draws, |x| laplace_cdf(x, 1.1 * scale));
        assert!(
            wrong > critical,
            "scale {scale}: KS cannot tell 1.1x the scale (D = {wrong})"
        );
    }
}

#[test]
fn interval_half_width_has_its_coverage() {
    // P(|N| <= t) = confidence for N ~ Laplace(1/eps). 100,000 seeded draws per case; the
    // Wilson interval at z = 4.8916 must contain the confidence (false-positive rate 1e-6).
    const DRAWS: usize = 100_000;
    let mut rng = ChaCha20Rng::seed_from_u64(95);
    for (e, confidence) in [(0.1, 0.95), (1.0, 0.5), (0.01, 0.8)] {
        let t = interval_half_width(eps(e), prob(confidence));
        let inside = (0..DRAWS)
            .filter(|_| sample(&mut rng, 1.0 / e).abs() <= t)
            .count();
        let (lo, hi) = wilson(inside, DRAWS, Z_1E6);
        assert!(
            lo <= confidence && confidence <= hi,
            "eps {e}: [{lo}, {hi}] misses {confidence}"
        );
    }
    // 95%: ln(20)/eps.
    assert!((interval_half_width(eps(0.1), prob(0.95)) - 29.957_322_735_539_91).abs() < 1e-9);
}

#[test]
fn choose_eps_reproduces_paper_2_example() {
    // Paper 2, section 3: true value c = 100, within ±20% with 80% probability:
    // eps = -ln(1 - 0.8)/(0.2 * 100) = ln(5)/20 = 0.0804719. The paper prints
    // "lambda = ln(1-0.8)/(0.2*100) = 0.08": its sign is dropped (ln 0.2 < 0) and the
    // value is rounded to two decimals; 0.08 itself would give a confidence of
    // 1 - e^{-0.08*20} = 0.798, not 0.8. dpq's `CHOOSE EPS WITHIN 20% AT 0.8 FOR 100`.
    let e = choose_eps_relative(positive(0.2), prob(0.8), positive(100.0));
    assert!((e - 0.080472).abs() < 1e-6, "{e}");
    assert!((e - 5f64.ln() / 20.0).abs() < 1e-15, "{e}");
    // Absolute form, `CHOOSE EPS WITHIN 5 AT 0.95`: eps = ln(20)/5 = 0.599146.
    let e = choose_eps_absolute(positive(5.0), prob(0.95));
    assert!((e - 0.599146).abs() < 1e-6, "{e}");
    // The relative form is the absolute one with h = w c.
    let rel = choose_eps_relative(positive(0.05), prob(0.95), positive(100.0));
    assert!((rel - e).abs() < 1e-15);
}

#[test]
fn chosen_eps_gives_back_its_interval() {
    // Paper 2, eq. 9 and 10 are inverses: the half-width at the chosen eps is h.
    for (h, p) in [(5.0, 0.95), (20.0, 0.8), (0.5, 0.999)] {
        let e = choose_eps_absolute(positive(h), prob(p));
        let back = interval_half_width(eps(e), prob(p));
        assert!((back - h).abs() < 1e-12 * h, "{h} {p}: {back}");
    }
}

#[test]
fn theorem_1_maximum_is_at_the_ends() {
    // Paper 1, Theorem 1 and eq. 5: the out-of-range probability peaks at a = 0 and a = n
    // at (1 + e^{-eps n})/2, and is smaller at every integer in between.
    for (n, e) in [
        (1u64, 0.5),
        (2, 0.5),
        (7, 0.5),
        (10, 1.0),
        (100, 0.1),
        (1000, 0.01),
    ] {
        let max = out_of_range_max(n, eps(e));
        let at_0 = out_of_range_probability(n, eps(e), 0.0);
        let at_n = out_of_range_probability(n, eps(e), n as f64);
        assert!(
            (max - at_0).abs() <= 1e-15 * max,
            "n={n} eps={e}: {max} vs {at_0}"
        );
        assert!(
            (max - at_n).abs() <= 1e-15 * max,
            "n={n} eps={e}: {max} vs {at_n}"
        );
        for a in 1..n {
            assert!(
                out_of_range_probability(n, eps(e), a as f64) < max,
                "n={n} eps={e} a={a}"
            );
        }
    }
    // "Even larger than 50%": at n = 100, eps = 0.1 a true count of 0 gives an answer
    // outside [0, n] with probability (1 + e^{-10})/2 = 0.5000227 (eq. 5).
    assert!((out_of_range_max(100, eps(0.1)) - 0.500_022_7).abs() < 1e-7);
}

#[test]
fn eq_6_minimum_near_the_middle() {
    // Paper 1, eq. 4: P*(a+1) > P*(a) iff a > (n-1)/2, so the integer minimum is at
    // floor(n/2) (for odd n tied with (n+1)/2). Eq. 6 evaluates eq. 2 at a = (n-1)/2:
    // exact for odd n; for even n it exceeds the minimum e^{-eps n/2} by cosh(eps/2).
    for (n, e) in [
        (7u64, 0.5),
        (8, 0.5),
        (101, 0.1),
        (100, 0.1),
        (1000, 0.01),
        (999, 0.01),
    ] {
        let values: Vec<f64> = (0..=n)
            .map(|a| out_of_range_probability(n, eps(e), a as f64))
            .collect();
        let min = values.iter().cloned().fold(f64::INFINITY, f64::min);
        let got = out_of_range_min(n, eps(e));
        assert!((got - min).abs() <= 1e-15 * min, "n={n}: {got} vs {min}");
        assert_eq!(
            values[(n / 2) as usize],
            got,
            "minimum at floor(n/2), n={n}"
        );
        let nf = n as f64;
        let eq6 = ((-e / 2.0 * (nf - 1.0)).exp() + (-e / 2.0 * (nf + 1.0)).exp()) / 2.0;
        let expected = if n % 2 == 1 {
            eq6
        } else {
            eq6 / (e / 2.0).cosh()
        };
        assert!(
            (got - expected).abs() <= 1e-14 * got,
            "n={n}: {got} vs {expected}"
        );
    }
}

#[test]
fn eq_2_matches_simulation() {
    // Simulated noisy counts y = a + Laplace(1/eps), 100,000 seeded draws per case: the
    // fraction outside [0, n] lies in its Wilson interval at z = 4.8916 (false-positive rate
    // 1e-6 per case) around eq. 2's value.
    const DRAWS: usize = 100_000;
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    for (n, e, a) in [
        (100u64, 0.1, 30.0),
        (100, 0.1, 0.0),
        (20, 0.5, 10.0),
        (10, 0.05, 3.0),
    ] {
        let nf = n as f64;
        let outside = (0..DRAWS)
            .map(|_| a + sample(&mut rng, 1.0 / e))
            .filter(|y| *y < 0.0 || *y > nf)
            .count();
        let (lo, hi) = wilson(outside, DRAWS, Z_1E6);
        let p = out_of_range_probability(n, eps(e), a);
        assert!(
            lo <= p && p <= hi,
            "n={n} eps={e} a={a}: [{lo}, {hi}] misses {p}"
        );
    }
}
