//! The Laplace mechanism's noise: a sampler for Laplace(0, scale) and the half-width of its central interval.

use rand::Rng;
use rand_distr::Exp1;

use super::{Epsilon, Probability};

/// Laplace(0, scale) noise in floating point, for simulation and tests only.
///
/// Not for releases: its outputs form a sparse set of floats that depends on the value noised,
/// so they can tell neighbouring inputs apart (Mironov 2012; `tests/statistics/noise_privacy.rs` shows
/// it). Releases use [`super::noise`], which samples exactly on a grid.
///
/// Drawn as a fair random sign times `scale * E` with `E ~ Exp(1)` (rand_distr's ziggurat):
/// if `E ~ Exp(1)` and `S = ±1` with probability 1/2 each, `S * scale * E` has density
/// `exp(-|x|/scale) / (2 scale)` (paper 1, eq. 1, with `b = scale = 1/eps` for a count).
/// `scale` is meant to be finite and positive; `0` gives `0`, and a non-finite or negative
/// scale gives a non-finite or sign-flipped draw rather than a panic.
pub fn sample<R: Rng + ?Sized>(rng: &mut R, scale: f64) -> f64 {
    let magnitude: f64 = rng.sample(Exp1);
    if rng.random::<bool>() {
        scale * magnitude
    } else {
        -scale * magnitude
    }
}

/// Half-width t with P(|N| <= t) = confidence for N ~ Laplace(1/eps): t = -ln(1-confidence)/eps (95%: ln(20)/eps).
///
/// This is the absolute form of paper 2's eq. 9 solved for the half-width: `dpq` reports the
/// noisy count as `noisy ± t`.
pub fn interval_half_width(eps: Epsilon, confidence: Probability) -> f64 {
    // Paper 2, eq. 9: p = P[-h < N < h] = 1 - e^{-eps h}, so h = -ln(1 - p) / eps.
    -(-confidence.get()).ln_1p() / eps.get()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    fn eps(x: f64) -> Epsilon {
        Epsilon::new(x).expect("test epsilon is valid")
    }

    fn prob(x: f64) -> Probability {
        Probability::new(x).expect("test probability is valid")
    }

    #[test]
    fn half_width_at_95_percent_is_ln_20_over_eps() {
        let t = interval_half_width(eps(0.1), prob(0.95));
        assert!((t - 20f64.ln() / 0.1).abs() < 1e-12, "{t}");
    }

    #[test]
    fn half_width_scales_inversely_with_eps() {
        let a = interval_half_width(eps(0.5), prob(0.8));
        let b = interval_half_width(eps(1.0), prob(0.8));
        assert!((a - 2.0 * b).abs() < 1e-12);
    }

    #[test]
    fn sample_is_reproducible_with_a_seed_and_takes_both_signs() {
        let mut a = ChaCha20Rng::seed_from_u64(7);
        let mut b = ChaCha20Rng::seed_from_u64(7);
        let xs: Vec<f64> = (0..64).map(|_| sample(&mut a, 2.0)).collect();
        let ys: Vec<f64> = (0..64).map(|_| sample(&mut b, 2.0)).collect();
        assert_eq!(xs, ys);
        assert!(xs.iter().any(|x| *x > 0.0) && xs.iter().any(|x| *x < 0.0));
        assert!(xs.iter().all(|x| x.is_finite()));
    }

    #[test]
    fn zero_scale_gives_zero() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        assert_eq!(sample(&mut rng, 0.0).abs(), 0.0);
    }
}
