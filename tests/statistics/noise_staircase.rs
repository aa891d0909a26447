//! The staircase sampler (`stats::noise::GridStaircase`) against its exact law
//! (`stats::staircase::grid_cdf`): a Kolmogorov-Smirnov test at several epsilons, the split of
//! each block into its inner and outer parts, and the release of a count.
//!
//! Every test is seeded (`ChaCha20Rng`); the false-positive rates are those of a correct
//! sampler over the choice of seed. About 2 s in a debug build.

use std::str::FromStr;

use dpq::stats::noise::{ExactEpsilon, GridStaircase, STAIRCASE_GRID_BITS};
use dpq::stats::staircase::{grid_cdf, optimal_gamma};
use dpq::stats::Epsilon;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rust_decimal::Decimal;

fn exact(s: &str) -> ExactEpsilon {
    ExactEpsilon::new(Decimal::from_str(s).expect("a decimal")).expect("a valid epsilon")
}

fn eps(s: &str) -> Epsilon {
    Epsilon::new(s.parse().expect("a number")).expect("a valid epsilon")
}

const L: u64 = 1 << STAIRCASE_GRID_BITS;

/// The Kolmogorov-Smirnov statistic of integer draws against an integer law's CDF `F`:
/// at each distinct value `x`, the empirical CDF jumps from `i/n` to `j/n`; compare `j/n`
/// with `F(x)` and `i/n` with `F(x - 1)` (ties are exact, not broken).
fn ks_discrete(mut draws: Vec<i64>, cdf: impl Fn(i64) -> f64) -> f64 {
    draws.sort_unstable();
    let n = draws.len() as f64;
    let mut d: f64 = 0.0;
    let mut i = 0;
    while i < draws.len() {
        let x = draws[i];
        let mut j = i;
        while j < draws.len() && draws[j] == x {
            j += 1;
        }
        d = d.max((j as f64 / n - cdf(x)).abs());
        d = d.max((cdf(x - 1) - i as f64 / n).abs());
        i = j;
    }
    d
}

/// The KS critical value at false-positive rate `alpha` for `n` draws (Dvoretzky-Kiefer-
/// Wolfowitz with Massart's constant: `P(D > t) <= 2 e^(-2 n t^2)`, valid for discrete laws).
fn ks_critical(n: usize, alpha: f64) -> f64 {
    ((2.0 / alpha).ln() / (2.0 * n as f64)).sqrt()
}

#[test]
fn draws_follow_the_exact_staircase_law() {
    // alpha 1e-6 per epsilon, 20,000 draws each (D must stay below about 0.0191), but 2,000
    // at eps 25, where the inner step is the 2^-10 floor and a draw takes ~1000 tries.
    for (i, (e, draws)) in [
        ("0.1", 20_000),
        ("1", 20_000),
        ("5", 20_000),
        ("10", 20_000),
        ("25", 2_000),
    ]
    .into_iter()
    .enumerate()
    {
        let noise = GridStaircase::for_count(exact(e), optimal_gamma(eps(e)));
        let g = noise.inner_steps();
        let mut rng = ChaCha20Rng::seed_from_u64(100 + i as u64);
        let sample: Vec<i64> = (0..draws)
            .map(|_| i64::try_from(noise.draw_steps(&mut rng)).expect("a modest draw"))
            .collect();
        let d = ks_discrete(sample, |j| grid_cdf(eps(e), L, g, j));
        let critical = ks_critical(draws, 1e-6);
        assert!(
            d < critical,
            "eps {e}: KS statistic {d} >= {critical} (gamma {})",
            noise.gamma()
        );
    }
}

#[test]
fn the_inner_width_is_the_optimal_one_on_the_grid_and_never_below_two_to_the_minus_ten() {
    for e in ["0.01", "0.1", "1", "5", "10", "20"] {
        let noise = GridStaircase::for_count(exact(e), optimal_gamma(eps(e)));
        // G = round(gamma* L): within half a grid step of the optimum.
        assert!(
            (noise.gamma() - optimal_gamma(eps(e))).abs() <= 0.5 / L as f64,
            "eps {e}"
        );
    }
    // Above eps ~ 20.8 the optimum falls below 2^-10 and the floor applies.
    let noise = GridStaircase::for_count(exact("25"), optimal_gamma(eps("25")));
    assert!(optimal_gamma(eps("25")) < 1.0 / 1024.0);
    assert_eq!(noise.gamma(), 1.0 / 1024.0);
    // Extreme epsilons still sample, quickly.
    let noise = GridStaircase::for_count(exact("700"), optimal_gamma(eps("700")));
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    for _ in 0..1000 {
        assert!(noise.draw_steps(&mut rng).unsigned_abs() < u128::from(L));
    }
}

#[test]
fn blocks_split_into_inner_and_outer_parts_in_the_right_proportion() {
    // Within a block, P(inner) = G / (G + (L - G) b), b = e^-eps. 40,000 draws at eps 1;
    // the count of inner draws is binomial: a 5.3-sigma band (two-sided rate ~1e-7).
    const DRAWS: usize = 40_000;
    let e = "1";
    let noise = GridStaircase::for_count(exact(e), optimal_gamma(eps(e)));
    let (g, l) = (noise.inner_steps() as f64, L as f64);
    let b = (-1.0f64).exp();
    let p = g / (g + (l - g) * b);
    let mut rng = ChaCha20Rng::seed_from_u64(11);
    let inner = (0..DRAWS)
        .filter(|_| {
            let z = noise.draw_steps(&mut rng).unsigned_abs();
            ((z % u128::from(L)) as f64) < g
        })
        .count() as f64;
    let sd = (DRAWS as f64 * p * (1.0 - p)).sqrt();
    assert!(
        (inner - DRAWS as f64 * p).abs() < 5.3 * sd,
        "{inner} inner draws, expected {}",
        DRAWS as f64 * p
    );
}

#[test]
fn a_released_count_is_the_count_plus_the_noise_on_the_grid() {
    let noise = GridStaircase::for_count(exact("0.5"), optimal_gamma(eps("0.5")));
    let mut a = ChaCha20Rng::seed_from_u64(3);
    let mut b = ChaCha20Rng::seed_from_u64(3);
    for count in [0i64, 1, 41, 1_000_000] {
        let released = noise.release_count(&mut a, count);
        let z = noise.draw_steps(&mut b);
        assert_eq!(released.k, STAIRCASE_GRID_BITS);
        assert_eq!(
            released.steps,
            (i128::from(count) << STAIRCASE_GRID_BITS) + z
        );
        assert_eq!(released.value(), count as f64 + z as f64 / L as f64);
    }
}
