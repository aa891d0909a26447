//! Utility-driven answering that uses the history when it must spend: the least epsilon whose release, combined with the history by the BLUE, meets a requirement `±w` at confidence `c` (Xiao and Xiong 2012, section 5, with Theorem 5.3's release alone as the ceiling).
//!
//! The history's BLUE of a query `q` has error `Z_h = sum_i a_i N_i` (Lemma 4.1, eq. 55): a sum
//! of Laplace variables of scales `c_i = |a_i| S_i / alpha_i`, variance `V_h = 2 sum c_i^2`
//! (eq. 52). A new release of `q` with epsilon `eps` has error `N ~ Laplace(b)`, `b = S / eps`,
//! `V_n = 2 b^2`. The BLUE from the history and the release together is
//! `lambda theta-hat_h + (1 - lambda) y` with `lambda = V_n / (V_h + V_n)`: with
//! `M = H'WH` and the new row `q` of weight `omega = (eps / S)^2`, Sherman and Morrison give
//! `q'(M + omega q q')^- = q'M^- / (1 + omega v)`, `v = q'M^- q = V_h / 2`, so the combined
//! estimate `q'(M + omega q q')^-(H'Wy + omega q y)` is `(theta-hat_h + omega v y) / (1 + omega v)`
//! and `omega v = V_h / V_n`. Its error is `Z(eps) = lambda Z_h + (1 - lambda) N`: Laplace
//! scales `lambda c_i` and `(1 - lambda) b` ([`combined_scales`]).
//!
//! The requirement holds when `P(|Z| > w) <= 1 - c`, equivalently when the central interval of
//! mass `c` has half-width at most `w` (`Z` is symmetric and unimodal); [`meets`] certifies it
//! with the upper end of [`super::tail::upper`]'s enclosure, after allowing [`GRID_MARGIN`] for
//! the grid the noise is drawn on. [`least_eps`] finds the least such epsilon by bisection
//! (the epsilons that meet it form an interval, see there).
//!
//! On a zCDP table the release is Gaussian, `N ~ Normal(0, sigma^2)` with
//! `sigma = S2 / sqrt(2 rho)` and `V_n = sigma^2`; the history's error may hold normal terms
//! too. The combination is the same (the BLUE weighs by inverse variance whatever the law), and
//! [`least_rho`] finds the least rho as [`least_eps`] finds the least epsilon.
//!
//! Everything here is a function of public things only: the history's design and epsilons
//! (through the scales of its BLUE's error), the query's sensitivity and the requirement;
//! never of an answer or of the data, so choosing an epsilon with it reveals nothing.

use super::exact::{Law, Scales};
use super::Probability;

/// The relative precision of [`least_eps`]: the epsilon returned meets the requirement and is
/// within a factor `1 + 1e-7` of the least that does.
pub const SEARCH_PRECISION: f64 = 1e-7;

/// Released noise is drawn on a grid of at most `2^-20` of its scale (`stats::noise`,
/// `GridLaplace`), and differs from Laplace noise by less than one and a half steps (the
/// discrete Laplace is a difference of two geometrics, the floors of two exponentials; a value
/// off the grid is rounded first): an estimate's error differs from `Z` by less than
/// `2^-19 sum_i c_i`. [`meets`] and [`half_width`] allow for it.
pub const GRID_MARGIN: f64 = 1.0 / (1u64 << 19) as f64;

/// Gaussian noise is the discrete Gaussian on a grid of at most `2^-10` of its standard
/// deviation (`stats::noise::GAUSSIAN_GRID_BITS`, whenever the exact sampler takes that
/// grid). Its mass on a step differs from the normal's over the step by a relative
/// `O(h^2 / sigma^2)`, about `4e-8` near the centre, far less than what a shift of the
/// normal by two steps moves its tails (a relative `2 (h / sigma) (x / sigma)` at `x`); an
/// error's normal terms of standard deviations `d_j` are allowed `2^-9 sum_j d_j`.
pub const NORMAL_GRID_MARGIN: f64 = 1.0 / (1u64 << 9) as f64;

/// The scales of `Z = lambda Z_h + (1 - lambda) N` (module docs): `lambda` times the
/// history's scales, and `(1 - lambda)` times the new release's scale `scale` (Laplace `b`
/// or normal `sigma`, as `law` says).
pub fn combined(history: &Scales, law: Law, scale: f64) -> Scales {
    let vh = history.variance();
    let vn = match law {
        Law::Laplace => 2.0 * scale * scale,
        Law::Normal => scale * scale,
    };
    // lambda = V_n / (V_h + V_n), 1 - lambda = V_h / (V_h + V_n), each formed without
    // cancellation.
    let (lambda, rest) = (vn / (vh + vn), vh / (vh + vn));
    let mut out = history.times(lambda);
    let new = rest * scale;
    if new > 0.0 {
        match law {
            Law::Laplace => out.laplace.push(new),
            Law::Normal => out.normal.push(new),
        }
    }
    out
}

/// The scales of `Z(eps)` for a Laplace release of epsilon `eps` and sensitivity
/// `sensitivity` combined with a history of error scales `history`.
pub fn combined_scales(history: &Scales, sensitivity: f64, eps: f64) -> Scales {
    combined(history, Law::Laplace, sensitivity / eps)
}

/// The scales of `Z(rho)` for a Gaussian release of rho `rho` and L2 sensitivity `l2`
/// (`sigma = l2 / sqrt(2 rho)`) combined with a history of error scales `history`.
pub fn combined_gaussian(history: &Scales, l2: f64, rho: f64) -> Scales {
    combined(history, Law::Normal, l2 / (2.0 * rho).sqrt())
}

/// The grid allowance for an error of these scales: `2^-19 sum_i c_i + 2^-9 sum_j d_j`.
fn margin(scales: &Scales) -> f64 {
    GRID_MARGIN * scales.laplace.iter().sum::<f64>()
        + NORMAL_GRID_MARGIN * scales.normal.iter().sum::<f64>()
}

/// Whether `P(|Z| > w) <= 1 - confidence` is certified for `Z` of these scales (and for the
/// grid noise actually drawn, [`GRID_MARGIN`], [`NORMAL_GRID_MARGIN`]):
/// `2 P(Z > w - margin) <= 1 - c` by the upper end of the enclosure.
pub fn meets(scales: &Scales, half_width: f64, confidence: Probability) -> bool {
    let delta = 1.0 - confidence.get();
    let w = half_width - margin(scales);
    w > 0.0 && 2.0 * scales.upper(w).hi <= delta
}

/// The least half-width `w` (to a relative `1e-12`, rounded up) at which [`meets`] holds: the
/// half-width of the central interval of mass `confidence`, certified, never too narrow.
pub fn half_width(scales: &Scales, confidence: Probability) -> f64 {
    if scales.is_empty() {
        return 0.0;
    }
    let delta = 1.0 - confidence.get();
    scales.quantile(delta / 2.0) + margin(scales)
}

/// The least epsilon, to a relative [`SEARCH_PRECISION`], whose release of a query of
/// sensitivity `sensitivity`, combined with a history whose BLUE of it has error scales
/// `history`, meets `±half_width` at `confidence`; the epsilon returned always meets it.
/// `ceiling` is the most to consider (Theorem 5.3's epsilon, which meets it alone); `None` when
/// the combination does not meet it there, or when the history meets it already.
///
/// Bisection on `ln eps` between `ceiling 1e-9` and `ceiling`, which finds the least when the
/// epsilons that meet the requirement form an interval `[least, ceiling]`. The variance of
/// `Z(eps)` falls as eps grows; its tail `P(|Z(eps)| > w)` need not fall everywhere (a little
/// noise added to the history's peak moves mass outwards when `w` is below the history's
/// scale), but it rises only while above the history's own tail, which exceeds `1 - c` when a
/// release is needed. `tests/statistics/within_combined.rs` checks the interval on a grid of epsilons
/// over histories and confidences; whatever it finds, the epsilon returned meets the
/// requirement (the invariant keeps `hi` meeting).
pub fn least_eps(
    history: &Scales,
    sensitivity: f64,
    half_width: f64,
    confidence: Probability,
    ceiling: f64,
) -> Option<f64> {
    least(
        history,
        |eps| combined_scales(history, sensitivity, eps),
        (half_width, confidence),
        ceiling,
    )
}

/// The least rho, to a relative [`SEARCH_PRECISION`], whose Gaussian release of a query of L2
/// sensitivity `l2`, combined with a history of error scales `history`, meets `±half_width`
/// at `confidence`, as [`least_eps`] (the ceiling is the rho that meets it alone).
pub fn least_rho(
    history: &Scales,
    l2: f64,
    half_width: f64,
    confidence: Probability,
    ceiling: f64,
) -> Option<f64> {
    least(
        history,
        |rho| combined_gaussian(history, l2, rho),
        (half_width, confidence),
        ceiling,
    )
}

/// The bisection of [`least_eps`] over a parameter whose release's noise falls as it grows.
fn least(
    history: &Scales,
    scales_at: impl Fn(f64) -> Scales,
    (half_width, confidence): (f64, Probability),
    ceiling: f64,
) -> Option<f64> {
    let ok = |x: f64| meets(&scales_at(x), half_width, confidence);
    let usable = ceiling.is_finite() && ceiling > 0.0;
    if !usable || meets(history, half_width, confidence) || !ok(ceiling) {
        return None;
    }
    let (mut lo, mut hi) = (ceiling * 1e-9, ceiling);
    if ok(lo) {
        return Some(lo);
    }
    // Invariant: ok(hi), !ok(lo).
    while hi > lo * (1.0 + SEARCH_PRECISION) {
        let mid = (lo * hi).sqrt();
        if ok(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(x: f64) -> Probability {
        Probability::new(x).expect("valid")
    }

    fn laplace(c: &[f64]) -> Scales {
        Scales::laplace(c.to_vec())
    }

    #[test]
    fn combined_scales_are_the_inverse_variance_combination() {
        // One count at scale 10 and a release at scale 10: lambda = 1/2, scales 5 and 5.
        let s = combined_scales(&laplace(&[10.0]), 1.0, 0.1).laplace;
        assert!(
            (s[0] - 5.0).abs() < 1e-12 && (s[1] - 5.0).abs() < 1e-12,
            "{s:?}"
        );
        // Variance 1 / (1/V_h + 1/V_n).
        let v = combined_scales(&laplace(&[3.0, 4.0]), 2.0, 0.5).variance();
        let (vh, vn) = (50.0, 32.0);
        assert!((v - 1.0 / (1.0 / vh + 1.0 / vn)).abs() < 1e-12 * v);
        // A Gaussian release of sigma^2 = 1 / (2 rho) = 32 joins a Laplace history the same
        // way, as a normal term.
        let s = combined_gaussian(&laplace(&[3.0, 4.0]), 1.0, 1.0 / 64.0);
        assert_eq!((s.laplace.len(), s.normal.len()), (2, 1));
        let v = s.variance();
        assert!((v - 1.0 / (1.0 / vh + 1.0 / vn)).abs() < 1e-12 * v);
    }

    #[test]
    fn one_laplace_meets_exactly_at_theorem_5_3() {
        // Z ~ Laplace(1/eps): P(|Z| > w) = e^(-w eps) = delta at eps = ln(1/delta) / w; the
        // grid margin asks for a hair more.
        let (w, c) = (40.0, p(0.95));
        let eps = 20f64.ln() / w;
        assert!(meets(&laplace(&[1.0 / (eps * (1.0 + 1e-5))]), w, c));
        assert!(!meets(&laplace(&[1.0 / (eps * (1.0 - 1e-5))]), w, c));
        let h = half_width(&laplace(&[1.0 / eps]), c);
        assert!((h - w).abs() < 1e-5 * w, "{h}");
    }

    #[test]
    fn one_normal_meets_at_the_normal_quantile() {
        // Z ~ Normal(0, sigma^2): the 95% half-width is 1.959964 sigma, plus two grid steps of
        // 2^-10 sigma.
        let sigma = 10.0;
        let normal = |sd: f64| Scales {
            laplace: Vec::new(),
            normal: vec![sd],
        };
        let h = half_width(&normal(sigma), p(0.95));
        let z = 1.959_963_984_540_054;
        let expected = sigma * (z + NORMAL_GRID_MARGIN);
        assert!((h - expected).abs() < 1e-9 * expected, "{h} vs {expected}");
        assert!(meets(&normal(sigma), expected * (1.0 + 1e-9), p(0.95)));
        assert!(!meets(&normal(sigma), expected * (1.0 - 1e-6), p(0.95)));
    }

    #[test]
    fn the_least_epsilon_is_least_and_meets() {
        let (w, c) = (40.0, p(0.95));
        let history = laplace(&[1.0 / 0.07289]);
        let ceiling = 20f64.ln() / w;
        let eps = least_eps(&history, 1.0, w, c, ceiling).expect("found");
        assert!(meets(&combined_scales(&history, 1.0, eps), w, c));
        let below = eps / (1.0 + 2.0 * SEARCH_PRECISION);
        assert!(!meets(&combined_scales(&history, 1.0, below), w, c));
        // A history that meets the requirement needs no release.
        assert_eq!(least_eps(&laplace(&[1.0]), 1.0, w, c, ceiling), None);
    }

    #[test]
    fn the_least_rho_is_least_and_meets() {
        // A Gaussian history of sd 30 on the count; +-40 at 95% alone needs
        // sigma = 40 / (1.96 (1 + 2^-9)), rho = 1 / (2 sigma^2); combined, the new release
        // needs only the variance that brings 1 / (1/900 + 1/V_n) down to sigma^2.
        let (w, c) = (40.0, p(0.95));
        let history = Scales {
            laplace: Vec::new(),
            normal: vec![30.0],
        };
        let z = 1.959_963_984_540_054 * (1.0 + NORMAL_GRID_MARGIN);
        let target = (w / z).powi(2);
        let ceiling = 1.0 / (2.0 * target) * (1.0 + 1e-9);
        let rho = least_rho(&history, 1.0, w, c, ceiling).expect("found");
        assert!(meets(&combined_gaussian(&history, 1.0, rho), w, c));
        let below = rho / (1.0 + 2.0 * SEARCH_PRECISION);
        assert!(!meets(&combined_gaussian(&history, 1.0, below), w, c));
        // Allowing for the grid on the combined sd, z 2^-9 sd (the allowance is 2^-9 times the
        // sum of the two normal terms' sds, at most sqrt 2 sd), gives an upper bound; no
        // allowance, a lower one.
        let rho_at = |target: f64| 0.5 / (1.0 / (1.0 / target - 1.0 / 900.0));
        let (lo, hi) = (
            rho_at((w / 1.959_963_984_540_054f64).powi(2)),
            rho_at(target),
        );
        assert!(lo < rho && rho <= hi * (1.0 + 1e-6), "{lo} < {rho} <= {hi}");
        // The history saves nearly half: 416 / 774 of the rho alone.
        assert!(rho < 0.55 * ceiling);
    }
}
