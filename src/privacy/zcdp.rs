//! Zero-concentrated differential privacy (Bun and Steinke 2016): what a spending of `rho`
//! means as approximate DP, for showing beside it.
//!
//! A mechanism is `rho`-zCDP when the Rényi divergence of order `alpha` between its output
//! laws on neighbouring tables is at most `alpha rho` for every `alpha > 1`. zCDP composes by
//! adding the rhos; the Gaussian mechanism with standard deviation `sigma` on a query of L2
//! sensitivity `S2` is `S2^2 / (2 sigma^2)`-zCDP, and a pure `eps`-DP release is
//! `eps^2 / 2`-zCDP.
//!
//! A `rho`-zCDP mechanism is `(eps, delta)`-DP for every `delta` in (0, 1), with `eps` given
//! by Canonne, Kamath and Steinke (2020), "The Discrete Gaussian for Differential Privacy",
//! Corollary 13, the conversion OpenDP uses (`make_zCDP_to_approxDP`):
//!
//! `eps(delta) = inf over alpha > 1 of alpha rho + (ln(1/delta) + (alpha - 1) ln(1 - 1/alpha)
//! - ln(alpha)) / (alpha - 1)`.
//!
//! The function of `alpha` has derivative `rho - ln(1 / (alpha delta)) / (alpha - 1)^2`,
//! negative and then positive once: its minimum is found by bisection on the derivative's
//! sign. Any `alpha > 1` gives a valid `eps`, so an `alpha` a little off the minimum gives a
//! slightly larger one, never a smaller.
//!
//! The simpler bound `rho + 2 sqrt(rho ln(1/delta))` (Bun and Steinke 2016, Proposition 1.3)
//! is shown in teaching, to say what the tight one saves.

use rust_decimal::Decimal;

/// The variance parameter `sigma^2 = S2^2 / (2 rho)` of a Gaussian release of `rho` on a
/// query of squared L2 sensitivity `l2_squared`, exactly, as a fraction in lowest terms
/// `(numerator, denominator)`: the noise's law, and what the ledger records of it. `None`
/// when either is not positive or the fraction passes 128 bits.
pub fn gaussian_variance(l2_squared: Decimal, rho: Decimal) -> Option<(u128, u128)> {
    if l2_squared <= Decimal::ZERO || rho <= Decimal::ZERO {
        return None;
    }
    // (a 10^-x) / (2 m 10^-y) = a 10^y / (2 m 10^x).
    let (a, x) = (l2_squared.mantissa().unsigned_abs(), l2_squared.scale());
    let (m, y) = (rho.mantissa().unsigned_abs(), rho.scale());
    let num = a.checked_mul(10u128.checked_pow(y)?)?;
    let den = m.checked_mul(2)?.checked_mul(10u128.checked_pow(x)?)?;
    let g = gcd(num, den);
    Some((num / g, den / g))
}

/// `sigma^2` as the ledger writes it: `p/q`, or `p` when whole.
pub fn variance_text((num, den): (u128, u128)) -> String {
    if den == 1 {
        num.to_string()
    } else {
        format!("{num}/{den}")
    }
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The `eps` of `(eps, delta)`-DP that `rho`-zCDP gives, by the tight conversion of
/// Canonne, Kamath and Steinke (2020), Corollary 13.
///
/// 0 for a `rho` of 0 and for a `delta` of 1 or more; never below 0 (for `rho` below about
/// `e delta^2 / 2` the formula's infimum is negative, which says no more than `eps = 0`).
/// Infinite for a `delta` of 0 or less (no finite `eps` holds with `delta = 0`); NaN for a
/// `rho` that is negative or NaN, or a NaN `delta`.
pub fn epsilon(rho: f64, delta: f64) -> f64 {
    if rho.is_nan() || rho < 0.0 || delta.is_nan() {
        return f64::NAN;
    }
    if delta <= 0.0 || rho.is_infinite() {
        return f64::INFINITY;
    }
    if rho == 0.0 || delta >= 1.0 {
        return 0.0;
    }
    // ln(1/delta) as -ln(delta): the reciprocal of a subnormal delta overflows to infinity.
    let log_inverse = -delta.ln();
    let bound = |alpha: f64| {
        alpha * rho
            + (log_inverse + (alpha - 1.0) * (-1.0 / alpha).ln_1p() - alpha.ln()) / (alpha - 1.0)
    };
    let rising = |alpha: f64| rho > (log_inverse - alpha.ln()) / (alpha - 1.0).powi(2);
    // The derivative is negative just above 1 (its second term grows without bound):
    // bracket the minimum between there and the first power of two where it is positive.
    let mut lo = 1.0 + 1e-12;
    let mut hi = 2.0;
    while !rising(hi) && hi < 1e300 {
        lo = hi;
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = lo + (hi - lo) / 2.0;
        if mid <= lo || mid >= hi {
            break;
        }
        if rising(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    bound(lo).min(bound(hi)).max(0.0)
}

/// The simpler `eps = rho + 2 sqrt(rho ln(1/delta))` (Bun and Steinke 2016, Proposition
/// 1.3): valid, and larger than [`epsilon`].
pub fn epsilon_simple(rho: f64, delta: f64) -> f64 {
    rho + 2.0 * (rho * -delta.ln()).sqrt()
}

/// The zCDP cost `eps^2 / 2` of a pure `eps`-DP release (Bun and Steinke 2016, Proposition
/// 1.4).
pub fn rho_of_pure(eps: f64) -> f64 {
    eps * eps / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// OpenDP 0.16.0's `make_zCDP_to_approxDP` applied to a measurement whose privacy map
    /// returns `rho`, read with `curve.epsilon(delta)` (Python, PyPI's `opendp`):
    /// `(rho, delta, eps)`.
    const OPENDP: [(f64, f64, f64); 8] = [
        (0.01, 1e-6, 0.6216926545596027),
        (0.01, 1e-9, 0.8101744678675343),
        (0.25, 1e-6, 3.542291300477016),
        (0.25, 1e-9, 4.436684222232657),
        (0.5, 1e-6, 5.22153444453017),
        (0.5, 1e-9, 6.474070020726487),
        (2.0, 1e-6, 11.688596249354896),
        (2.0, 1e-9, 14.150147553874598),
    ];

    #[test]
    fn the_tight_conversion_is_opendps() {
        // Both minimise the same function by bisection in floating point; OpenDP's figures
        // are the exact infimum to within 2.4e-16 relative (checked with mpmath at 50
        // digits), and this one is within 1e-12.
        for (rho, delta, expected) in OPENDP {
            let eps = epsilon(rho, delta);
            assert!(
                ((eps - expected) / expected).abs() < 1e-12,
                "rho {rho}, delta {delta}: {eps} against OpenDP's {expected}"
            );
        }
    }

    #[test]
    fn a_hundred_gaussian_counts_cost_less_than_a_hundred_laplace_counts() {
        // The workload: 100 Gaussian counts at sigma^2 = 200 (rho 0.0025 each, the
        // variance of a Laplace count at eps 0.1) are 0.25-zCDP: about 3.54 at delta 1e-6 by
        // the tight conversion, 3.97 by the simpler one, against eps 10 for 100 Laplace counts.
        let rho = 100.0 * (1.0 / (2.0 * 200.0));
        assert!((rho - 0.25f64).abs() < 1e-15);
        assert!((epsilon(rho, 1e-6) - 3.5423).abs() < 1e-4);
        assert!((epsilon_simple(rho, 1e-6) - 3.9669).abs() < 1e-4);
        assert!(epsilon(rho, 1e-6) < epsilon_simple(rho, 1e-6));
        assert!((100.0 * rho_of_pure(0.1) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn any_alpha_bounds_eps_from_above() {
        // The minimum found is no larger than the bound at a grid of alphas.
        for (rho, delta, _) in OPENDP {
            let eps = epsilon(rho, delta);
            for i in 1..2000 {
                let alpha = 1.0 + f64::from(i) * 0.05;
                let at = alpha * rho
                    + ((1.0 / delta).ln() + (alpha - 1.0) * (1.0 - 1.0 / alpha).ln() - alpha.ln())
                        / (alpha - 1.0);
                assert!(
                    eps <= at + 1e-12,
                    "rho {rho}: {eps} above {at} at alpha {alpha}"
                );
            }
        }
        assert_eq!(epsilon(0.0, 1e-6), 0.0);
    }

    #[test]
    fn eps_is_never_negative_and_every_input_gets_an_answer() {
        // Below about e delta^2 / 2 the infimum is negative: eps 0 is what holds.
        assert_eq!(epsilon(1e-6, 0.5), 0.0);
        assert_eq!(epsilon(0.25, 0.5), 0.0);
        assert_eq!(epsilon(1e-300, 1e-12), 0.0);
        assert!(epsilon(0.4, 0.5) > 0.0);
        // Inputs outside the domain return at once (they once looped for ever).
        assert_eq!(epsilon(1.0, 0.0), f64::INFINITY);
        assert_eq!(epsilon(1.0, -1e-6), f64::INFINITY);
        assert_eq!(epsilon(1.0, 1.0), 0.0);
        assert!(epsilon(1.0, f64::NAN).is_nan());
        assert!(epsilon(f64::NAN, 1e-6).is_nan());
        assert!(epsilon(-1.0, 1e-6).is_nan());
        assert_eq!(epsilon(f64::INFINITY, 1e-6), f64::INFINITY);
        // Large rho and tiny delta stay finite.
        assert!(epsilon(100.0, 1e-12).is_finite());
        assert!(epsilon(1e-6, 1e-12) > 0.0);
    }

    /// `SET DELTA` takes any delta in (0, 1), subnormal ones included: below `1 / f64::MAX`
    /// the reciprocal overflows to infinity, but `ln(1/delta)` is finite (745 at most), and
    /// so is the epsilon shown.
    #[test]
    fn a_delta_whose_reciprocal_overflows_gives_a_finite_epsilon() {
        for tiny in [1e-310, 5e-324] {
            let eps = epsilon(0.01, tiny);
            assert!(eps.is_finite(), "delta {tiny}: {eps}");
            assert!(eps >= epsilon(0.01, 1e-300), "delta {tiny}: {eps}");
            let simple = epsilon_simple(0.01, tiny);
            assert!(simple.is_finite(), "delta {tiny}: {simple}");
            assert!(eps <= simple, "delta {tiny}: {eps} above {simple}");
        }
    }
}
