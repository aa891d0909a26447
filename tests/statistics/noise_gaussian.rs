//! The discrete Gaussian sampler (`stats::noise::DiscreteGaussian`, Canonne, Kamath and
//! Steinke 2020, Algorithm 3) against its exact probability mass function
//! `P(z) ∝ exp(-z^2 / (2 sigma2))`: a chi-square test over a million draws at `sigma2` of 10
//! and 100, at small ones (1/4, 1, 399/100, where the far tails are seen) and at a fractional
//! one; the share of zeros and the variance against the law's; and the same chi-square test
//! failing a sampler whose variance parameter is 5% off.
//!
//! The bins are the integers whose expected count is at least 5, with the two tails beyond
//! them pooled (each also expecting at least 5); the statistic is compared with the chi-square quantile at `1 - alpha`,
//! alpha 1e-4 per test. Every test is seeded (`ChaCha20Rng`): the false-positive rate is that
//! of a correct sampler over the choice of seed.

use dpq::stats::noise::{DiscreteGaussian, Rational};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use statrs::distribution::{ChiSquared, ContinuousCDF};

const ALPHA: f64 = 1e-4;

/// The exact probability of each integer in `-m..=m` under the discrete Gaussian with
/// variance parameter `sigma2`, normalised over `|z| <= m`, `m` far in the tails.
fn pmf(sigma2: f64, m: i64) -> Vec<f64> {
    let w: Vec<f64> = (-m..=m)
        .map(|z| (-((z * z) as f64) / (2.0 * sigma2)).exp())
        .collect();
    let total: f64 = w.iter().sum();
    w.into_iter().map(|x| x / total).collect()
}

/// The chi-square statistic of `draws` against the discrete Gaussian law with `sigma2`, and
/// the critical value at `1 - ALPHA` for its degrees of freedom.
fn chi_square(draws: &[i128], sigma2: f64) -> (f64, f64) {
    let n = draws.len() as f64;
    let m = (40.0 * sigma2.sqrt()).ceil() as i64;
    let p = pmf(sigma2, m);
    // The inner bins: the integers whose expected count is at least 5 (a symmetric range),
    // narrowed until each pooled tail's is too (else a single far draw would swamp the
    // statistic, and the false-positive rate would be well above alpha).
    let tail_beyond = |inner: i64| p[..(m - inner) as usize].iter().sum::<f64>() * n;
    let mut inner = (0..=m)
        .take_while(|&z| p[(z + m) as usize] * n >= 5.0)
        .last()
        .expect("the mode is a bin");
    while inner > 0 && tail_beyond(inner) < 5.0 {
        inner -= 1;
    }
    let mut expected: Vec<f64> = (-inner..=inner).map(|z| p[(z + m) as usize] * n).collect();
    let tail = tail_beyond(inner);
    expected.push(tail);
    expected.push(tail);
    let mut observed = vec![0u64; expected.len()];
    let k = expected.len();
    for &z in draws {
        let z = i64::try_from(z).expect("a draw fits in 64 bits");
        let bin = if z < -inner {
            k - 2
        } else if z > inner {
            k - 1
        } else {
            (z + inner) as usize
        };
        observed[bin] += 1;
    }
    let statistic: f64 = observed
        .iter()
        .zip(&expected)
        .map(|(&o, &e)| (o as f64 - e).powi(2) / e)
        .sum();
    let df = (k - 1) as f64;
    let critical = ChiSquared::new(df)
        .expect("a chi-square law")
        .inverse_cdf(1.0 - ALPHA);
    (statistic, critical)
}

fn draws(sigma2: Rational, n: usize, seed: u64) -> Vec<i128> {
    let sampler = DiscreteGaussian::new(sigma2).expect("a sampler");
    let mut out = vec![0i128; n];
    sampler.fill(&mut ChaCha20Rng::seed_from_u64(seed), &mut out);
    out
}

fn rational(num: u128, den: u128) -> Rational {
    Rational::new(num, den).expect("a positive rational")
}

#[test]
fn a_million_draws_follow_the_exact_law_at_sigma2_10_and_100() {
    for (i, sigma2) in [10u128, 100].into_iter().enumerate() {
        let sample = draws(rational(sigma2, 1), 1_000_000, 31 + i as u64);
        let (statistic, critical) = chi_square(&sample, sigma2 as f64);
        assert!(
            statistic < critical,
            "sigma2 {sigma2}: chi-square {statistic:.1} above the critical {critical:.1}"
        );
    }
}

#[test]
fn small_variance_parameters_are_sampled_exactly() {
    // At a small sigma the far tails (4 to 8 sigma) are seen in a million draws; 399/100 is
    // just below a perfect square (t = 2).
    for (i, (num, den)) in [(1u128, 4u128), (1, 1), (399, 100)].into_iter().enumerate() {
        let sample = draws(rational(num, den), 1_000_000, 51 + i as u64);
        let (statistic, critical) = chi_square(&sample, num as f64 / den as f64);
        assert!(
            statistic < critical,
            "sigma2 {num}/{den}: chi-square {statistic:.1} above the critical {critical:.1}"
        );
    }
}

#[test]
fn the_share_of_zeros_and_the_variance_are_the_laws() {
    // The exact P(0) = 1 / sum_k exp(-k^2 / (2 sigma2)) and variance
    // sum_k k^2 exp(-k^2 / (2 sigma2)) / sum_k exp(-k^2 / (2 sigma2)) (0.21501 at sigma2 1/4,
    // not 1/4), each within 4.5 standard errors (two-sided 7e-6 each).
    for (i, (num, den)) in [(1u128, 4u128), (4, 1), (10, 1)].into_iter().enumerate() {
        let sigma2 = num as f64 / den as f64;
        let n = 1_000_000;
        let sample = draws(rational(num, den), n, 71 + i as u64);
        let p = pmf(sigma2, (40.0 * sigma2.sqrt()).ceil() as i64 + 10);
        let m = (p.len() / 2) as i64;
        let p0 = p[m as usize];
        let var: f64 = (-m..=m).map(|z| (z * z) as f64 * p[(z + m) as usize]).sum();
        let fourth: f64 = (-m..=m)
            .map(|z| ((z * z) as f64).powi(2) * p[(z + m) as usize])
            .sum();
        let zeros = sample.iter().filter(|&&z| z == 0).count() as f64 / n as f64;
        let se0 = (p0 * (1.0 - p0) / n as f64).sqrt();
        assert!(
            (zeros - p0).abs() < 4.5 * se0,
            "sigma2 {sigma2}: P(0) {zeros} against {p0} (se {se0})"
        );
        let squares = sample.iter().map(|&z| (z * z) as f64).sum::<f64>() / n as f64;
        let se = ((fourth - var * var) / n as f64).sqrt();
        assert!(
            (squares - var).abs() < 4.5 * se,
            "sigma2 {sigma2}: variance {squares} against {var} (se {se})"
        );
    }
}

#[test]
fn a_fractional_variance_parameter_is_sampled_exactly() {
    // sigma2 = 200/7 (sigma about 5.35): t = 6, and every exponent has denominator 2 p q t^2.
    let sample = draws(rational(200, 7), 200_000, 7);
    let (statistic, critical) = chi_square(&sample, 200.0 / 7.0);
    assert!(
        statistic < critical,
        "chi-square {statistic:.1} above {critical:.1}"
    );
}

#[test]
fn the_test_catches_a_variance_five_percent_off() {
    // Draws at sigma2 10.5 and 105 judged as if at 10 and 100: the control that shows the
    // test above can fail.
    for (i, (drawn, claimed)) in [((21u128, 2u128), 10.0), ((105, 1), 100.0)]
        .into_iter()
        .enumerate()
    {
        let sample = draws(rational(drawn.0, drawn.1), 1_000_000, 91 + i as u64);
        let (statistic, critical) = chi_square(&sample, claimed);
        assert!(
            statistic > critical,
            "draws at {}/{} passed as sigma2 {claimed}: chi-square {statistic:.1} below {critical:.1}",
            drawn.0,
            drawn.1
        );
    }
}

#[test]
fn the_draws_are_symmetric_and_the_sampler_refuses_what_it_cannot_do_exactly() {
    let sample = draws(rational(1, 4), 100_000, 5);
    let positive = sample.iter().filter(|&&z| z > 0).count() as f64;
    let negative = sample.iter().filter(|&&z| z < 0).count() as f64;
    // P(z > 0) = P(z < 0), each about 0.107 at sigma2 1/4: within 5 standard deviations.
    let sd = (positive + negative).sqrt();
    assert!(
        (positive - negative).abs() < 5.0 * sd,
        "{positive} vs {negative}"
    );
    // 2 p q t^2 must stay below 2^100.
    assert!(DiscreteGaussian::new(rational(1 << 40, 1)).is_some());
    assert!(DiscreteGaussian::new(rational((1 << 29) + 1, 1 << 20)).is_some());
    assert!(DiscreteGaussian::new(rational((1 << 60) + 1, 1 << 20)).is_none());
    assert!(DiscreteGaussian::new(rational(1 << 80, 1)).is_none());
    assert!(DiscreteGaussian::new(rational(1, 1 << 70)).is_some());
    assert!(DiscreteGaussian::new(rational(1, 1 << 100)).is_none());
}
