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
//! Everything here is a function of public things only: the history's design and epsilons
//! (through the scales of its BLUE's error), the query's sensitivity and the requirement;
//! never of an answer or of the data, so choosing an epsilon with it reveals nothing.

use super::tail;
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

/// The scales of `Z(eps) = lambda Z_h + (1 - lambda) N` (module docs): `lambda c_i` for the
/// history's scales `c_i`, and `(1 - lambda) S / eps` for the new release.
pub fn combined_scales(history: &[f64], sensitivity: f64, eps: f64) -> Vec<f64> {
    let b = sensitivity / eps;
    let vh: f64 = 2.0 * history.iter().map(|c| c * c).sum::<f64>();
    let vn = 2.0 * b * b;
    // lambda = V_n / (V_h + V_n), 1 - lambda = V_h / (V_h + V_n), each formed without
    // cancellation.
    let (lambda, rest) = (vn / (vh + vn), vh / (vh + vn));
    let mut out: Vec<f64> = history.iter().map(|c| lambda * c).collect();
    out.push(rest * b);
    out.retain(|c| *c > 0.0);
    out
}

/// The grid allowance for an error of these scales: `2^-19 sum_i c_i`.
fn margin(scales: &[f64]) -> f64 {
    GRID_MARGIN * scales.iter().sum::<f64>()
}

/// Whether `P(|Z| > w) <= 1 - confidence` is certified for `Z` of these Laplace scales (and
/// for the grid noise actually drawn, [`GRID_MARGIN`]): `2 P(Z > w - margin) <= 1 - c` by the
/// upper end of the enclosure.
pub fn meets(scales: &[f64], half_width: f64, confidence: Probability) -> bool {
    let delta = 1.0 - confidence.get();
    let w = half_width - margin(scales);
    w > 0.0 && 2.0 * tail::upper(scales, w).hi <= delta
}

/// The least half-width `w` (to a relative `1e-12`, rounded up) at which [`meets`] holds: the
/// half-width of the central interval of mass `confidence`, certified, never too narrow.
pub fn half_width(scales: &[f64], confidence: Probability) -> f64 {
    if scales.is_empty() {
        return 0.0;
    }
    let delta = 1.0 - confidence.get();
    tail::quantile(scales, delta / 2.0) + margin(scales)
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
    history: &[f64],
    sensitivity: f64,
    half_width: f64,
    confidence: Probability,
    ceiling: f64,
) -> Option<f64> {
    let ok = |eps: f64| {
        meets(
            &combined_scales(history, sensitivity, eps),
            half_width,
            confidence,
        )
    };
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

    #[test]
    fn combined_scales_are_the_inverse_variance_combination() {
        // One count at scale 10 and a release at scale 10: lambda = 1/2, scales 5 and 5.
        let s = combined_scales(&[10.0], 1.0, 0.1);
        assert!(
            (s[0] - 5.0).abs() < 1e-12 && (s[1] - 5.0).abs() < 1e-12,
            "{s:?}"
        );
        // Variance 1 / (1/V_h + 1/V_n).
        let s = combined_scales(&[3.0, 4.0], 2.0, 0.5);
        let v: f64 = 2.0 * s.iter().map(|c| c * c).sum::<f64>();
        let (vh, vn) = (50.0, 32.0);
        assert!((v - 1.0 / (1.0 / vh + 1.0 / vn)).abs() < 1e-12 * v);
    }

    #[test]
    fn one_laplace_meets_exactly_at_theorem_5_3() {
        // Z ~ Laplace(1/eps): P(|Z| > w) = e^(-w eps) = delta at eps = ln(1/delta) / w; the
        // grid margin asks for a hair more.
        let (w, c) = (40.0, p(0.95));
        let eps = 20f64.ln() / w;
        assert!(meets(&[1.0 / (eps * (1.0 + 1e-5))], w, c));
        assert!(!meets(&[1.0 / (eps * (1.0 - 1e-5))], w, c));
        let h = half_width(&[1.0 / eps], c);
        assert!((h - w).abs() < 1e-5 * w, "{h}");
    }

    #[test]
    fn the_least_epsilon_is_least_and_meets() {
        let (w, c) = (40.0, p(0.95));
        let history = [1.0 / 0.07289];
        let ceiling = 20f64.ln() / w;
        let eps = least_eps(&history, 1.0, w, c, ceiling).expect("found");
        assert!(meets(&combined_scales(&history, 1.0, eps), w, c));
        let below = eps / (1.0 + 2.0 * SEARCH_PRECISION);
        assert!(!meets(&combined_scales(&history, 1.0, below), w, c));
        // A history that meets the requirement needs no release.
        assert_eq!(least_eps(&[1.0], 1.0, w, c, ceiling), None);
    }
}
