//! Accuracy of the Laplace mechanism for counts: out-of-range probabilities (paper 1) and the choice of epsilon from an interval (paper 2).

use super::{Epsilon, Positive, Probability};

/// The standard normal quantile at `p` in (0, 1): the `z` with `P(Z <= z) = p`.
pub fn normal_quantile(p: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal};
    Normal::standard().inverse_cdf(p)
}

/// `P(Z > z)` for a standard normal `Z`, `erfc(z / sqrt 2) / 2` by `libm` (musl's `erfc`,
/// within about an ulp), accurate far into the tail: to a relative
/// [`normal_upper_tail_error`]. (`statrs`' normal `sf` is off by up to 1e-10 relative.)
pub fn normal_upper_tail(z: f64) -> f64 {
    0.5 * libm::erfc(z / std::f64::consts::SQRT_2)
}

/// A bound on the relative error of [`normal_upper_tail`] at `z`: a few ulps of `erfc`, and
/// the rounding of `z / sqrt 2`, which `erfc`'s slope turns into a relative `z^2 / 2` ulps.
pub fn normal_upper_tail_error(z: f64) -> f64 {
    f64::EPSILON * (z * z + 8.0)
}

/// Paper 1 eq. 2: P[noisy < 0 or noisy > n | true = a] = (e^{-eps a} + e^{eps (a-n)})/2 for 0<=a<=n.
///
/// The noise is Laplace with scale `1/eps`. For a true count outside `[0, n]` (not a count,
/// but accepted rather than refused) the exact probability of the same event is returned,
/// using the Laplace distribution function on each side; at `0 <= a <= n` it is eq. 2.
pub fn out_of_range_probability(n: u64, eps: Epsilon, a: f64) -> f64 {
    let e = eps.get();
    let n = n as f64;
    // P[N < -a] for N ~ Laplace(1/eps): e^{-eps a}/2 when a >= 0, else 1 - e^{eps a}/2.
    let below = if a >= 0.0 {
        0.5 * (-e * a).exp()
    } else {
        1.0 - 0.5 * (e * a).exp()
    };
    // P[N > n - a]: e^{eps (a - n)}/2 when a <= n, else 1 - e^{eps (n - a)}/2.
    let above = if a <= n {
        0.5 * (e * (a - n)).exp()
    } else {
        1.0 - 0.5 * (e * (n - a)).exp()
    };
    // Paper 1, eq. 2: P* = (e^{-eps a} + e^{eps (a - n)}) / 2 for 0 <= a <= n.
    below + above
}

/// Paper 1 Theorem 1: max over true counts = (1 + e^{-eps n})/2.
///
/// Reached at a true count of `0` or `n` (eq. 5).
pub fn out_of_range_max(n: u64, eps: Epsilon) -> f64 {
    // Paper 1, eq. 5: max P* = (1 + e^{-eps n}) / 2.
    0.5 * (1.0 + (-eps.get() * n as f64).exp())
}

/// The minimum over integer true counts `0..=n` of the out-of-range probability (paper 1, eq. 4 and 6).
///
/// By eq. 4 the probability falls while `a < (n-1)/2` and rises after, so the minimum over
/// integers is at `a = floor(n/2)`: `e^{-eps n/2}` for even `n`, and for odd `n` exactly eq. 6,
/// `(e^{-eps (n-1)/2} + e^{-eps (n+1)/2}) / 2`. For even `n` eq. 6 (the paper's `≃`) is larger
/// than this minimum by the factor `cosh(eps/2)`.
pub fn out_of_range_min(n: u64, eps: Epsilon) -> f64 {
    // Paper 1, eq. 4: P*(a+1) > P*(a) iff a > (n-1)/2, so the integer minimum is at floor(n/2).
    out_of_range_probability(n, eps, (n / 2) as f64)
}

/// Paper 1 eq. 6: the minimum as the paper writes it, `(e^{-eps (n-1)/2} + e^{-eps (n+1)/2}) / 2`.
///
/// Eq. 2 at `a = (n-1)/2`: exact for odd `n` (where `(n-1)/2` is a count) and equal to
/// [`out_of_range_min`] there; for even `n` it is larger than the integer minimum
/// `e^{-eps n/2}` by the factor `cosh(eps/2)`.
pub fn out_of_range_min_eq6(n: u64, eps: Epsilon) -> f64 {
    let e = eps.get();
    let n = n as f64;
    // Paper 1, eq. 6.
    0.5 * ((-e * (n - 1.0) / 2.0).exp() + (-e * (n + 1.0) / 2.0).exp())
}

/// Paper 2 eq. 10: eps = -ln(1-p)/(w c), relative half-width w (0.2 for 20%), assumed count c.
///
/// With this epsilon the noisy count lies within `±w c` of a true count `c` with probability
/// `p`. `c` is an assumed count, never the true one (using the true count would leak it).
/// The result is positive; it can overflow to infinity or underflow to 0 for extreme inputs,
/// so callers turn it into an [`Epsilon`] with `Epsilon::new`, which refuses both.
pub fn choose_eps_relative(w: Positive, confidence: Probability, assumed_count: Positive) -> f64 {
    // Paper 2, eq. 10: eps = lambda = -ln(1 - p) / (w c).
    -(-confidence.get()).ln_1p() / w.get() / assumed_count.get()
}

/// Absolute form: eps = -ln(1-p)/h.
///
/// Paper 2, eq. 9 with the half-width `h = w c` given directly: the noisy count lies within
/// `±h` of the true count with probability `p`. Same range caveat as [`choose_eps_relative`].
pub fn choose_eps_absolute(half_width: Positive, confidence: Probability) -> f64 {
    // Paper 2, eq. 9 solved for eps: p = 1 - e^{-eps h}  =>  eps = -ln(1 - p) / h.
    -(-confidence.get()).ln_1p() / half_width.get()
}

/// The smallest epsilon whose Laplace release of a query of sensitivity `s` lies within
/// `±half_width` of the true value with probability `confidence`:
/// `eps = S ln(1/delta) / w`, `delta = 1 - confidence`.
///
/// Xiao and Xiong, Theorem 5.3: `P(|N| > w) = exp(-w eps / S)` for `N ~ Laplace(S/eps)`, so
/// the release meets `(w, delta)` exactly when `eps >= S ln(1/delta)/w`. (Their proof, eq. 69,
/// carries a stray `/2`; the theorem's statement is the one that follows from the Laplace
/// tail.) With `s = 1` this is [`choose_eps_absolute`].
pub fn eps_for_half_width(s: Positive, half_width: Positive, confidence: Probability) -> f64 {
    s.get() * choose_eps_absolute(half_width, confidence)
}

/// The half-width `m` (a whole number) of the central interval of geometric noise: the
/// smallest `m` with `P(|Z| <= m) >= confidence` for `P(z) = (1-a)/(1+a) a^|z|`, `a = e^(-eps)`.
///
/// `P(|Z| > m) = 2 a^(m+1) / (1 + a)`; in logarithms, `P(|Z| > m) <= 1 - confidence` when
/// `(m + 1) eps >= ln 2 - ln(1 + a) - ln(1 - confidence)`. Computed in log space (no power of
/// `a`, which underflows or loses its digits for tiny eps), then checked one step either way.
pub fn geometric_half_width(eps: Epsilon, confidence: Probability) -> u64 {
    let e = eps.get();
    let a = (-e).exp();
    let log_target = (-confidence.get()).ln_1p();
    let log_head = std::f64::consts::LN_2 - a.ln_1p();
    // log P(|Z| > m) = log_head - (m + 1) eps
    let covers = |m: f64| log_head - (m + 1.0) * e <= log_target;
    let mut m = ((log_head - log_target) / e - 1.0).ceil().max(0.0);
    if m > 0.0 && covers(m - 1.0) {
        m -= 1.0;
    } else if !covers(m) {
        m += 1.0;
    }
    if m >= u64::MAX as f64 {
        u64::MAX
    } else {
        m as u64
    }
}

/// `P(|Z| <= m)` for geometric noise `P(z) = (1-a)/(1+a) a^|z|`, `a = e^(-eps)`:
/// `1 - 2 a^(m+1) / (1 + a)`, with the tail formed in logarithms. For the `m` of
/// [`geometric_half_width`] it is at least the confidence asked for, and usually more: the
/// noise takes whole values, so no whole half-width holds exactly that probability.
pub fn geometric_coverage(eps: Epsilon, m: u64) -> f64 {
    let e = eps.get();
    // P(|Z| > m) = 2 sum_{z > m} (1-a)/(1+a) a^z = 2 a^(m+1) / (1 + a).
    let log_tail = std::f64::consts::LN_2 - (m as f64 + 1.0) * e - (-e).exp().ln_1p();
    // 1 - e^log_tail, without cancellation when the tail is near 1.
    -log_tail.exp_m1()
}

/// The largest probability, over true counts, that a count with geometric noise is released
/// outside `[0, n]`: at a true count of 0 (or n), `P(Z < 0) + P(Z > n) = (a + a^(n+1))/(1 + a)`
/// with `a = e^(-eps)` (the discrete counterpart of paper 1's Theorem 1).
pub fn geometric_out_of_range_max(n: u64, eps: Epsilon) -> f64 {
    let a = (-eps.get()).exp();
    let far = (-(eps.get()) * (n as f64 + 1.0)).exp();
    (a + far) / (1.0 + a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eps(x: f64) -> Epsilon {
        Epsilon::new(x).expect("test epsilon is valid")
    }

    #[test]
    fn formula_matches_eq_2_inside_the_range() {
        let (n, e, a) = (100u64, 0.1f64, 30.0f64);
        let expected = ((-e * a).exp() + (e * (a - 100.0)).exp()) / 2.0;
        assert!((out_of_range_probability(n, eps(e), a) - expected).abs() < 1e-15);
    }

    #[test]
    fn outside_the_range_the_probability_is_continuous_and_tends_to_one() {
        let e = eps(0.5);
        let at_zero = out_of_range_probability(10, e, 0.0);
        let just_below = out_of_range_probability(10, e, -1e-12);
        assert!((at_zero - just_below).abs() < 1e-10);
        assert!(out_of_range_probability(10, e, -100.0) > 0.999_999);
        assert!(out_of_range_probability(10, e, 110.0) > 0.999_999);
    }

    #[test]
    fn n_zero_gives_one_half_plus_one_half() {
        assert_eq!(out_of_range_max(0, eps(1.0)), 1.0);
        assert_eq!(out_of_range_min(0, eps(1.0)), 1.0);
    }

    #[test]
    fn choose_eps_forms_agree() {
        let p = Probability::new(0.9).expect("valid");
        let rel = choose_eps_relative(
            Positive::new(0.1).expect("valid"),
            p,
            Positive::new(50.0).expect("valid"),
        );
        let abs = choose_eps_absolute(Positive::new(5.0).expect("valid"), p);
        assert!((rel - abs).abs() < 1e-15);
    }

    #[test]
    fn geometric_half_width_is_the_smallest_that_covers() {
        for (e, conf) in [
            (0.1, 0.95),
            (1.0, 0.95),
            (0.01, 0.5),
            (3.0, 0.95),
            (0.5, 0.999),
        ] {
            let (eps, conf) = (
                Epsilon::new(e).expect("valid"),
                Probability::new(conf).expect("valid"),
            );
            let m = geometric_half_width(eps, conf);
            let a = (-e).exp();
            // P(|Z| <= m) = 1 - 2 a^(m+1)/(1+a), summed directly from the law.
            let covered = |m: u64| {
                (-(m as i64)..=m as i64)
                    .map(|z| (1.0 - a) / (1.0 + a) * a.powi(z.abs() as i32))
                    .sum::<f64>()
            };
            assert!(covered(m) >= conf.get() - 1e-12, "eps {e}: m = {m}");
            if m > 0 {
                assert!(
                    covered(m - 1) < conf.get(),
                    "eps {e}: m = {m} is not the smallest"
                );
            }
        }
    }

    #[test]
    fn geometric_coverage_matches_its_law() {
        for (e, m) in [(0.5f64, 6u64), (1.0, 3), (0.1, 29), (3.0, 0), (0.01, 299)] {
            let a = (-e).exp();
            let direct: f64 = (-(m as i64)..=m as i64)
                .map(|z| (1.0 - a) / (1.0 + a) * a.powi(z.abs() as i32))
                .sum();
            let got = geometric_coverage(eps(e), m);
            assert!(
                (got - direct).abs() < 1e-12,
                "eps {e}, m {m}: {got} vs {direct}"
            );
        }
        // eps 0.5: the smallest whole half-width for 95% is 6, and it holds 0.962407.
        let conf = Probability::new(0.95).expect("valid");
        let m = geometric_half_width(eps(0.5), conf);
        assert_eq!(m, 6);
        assert!((geometric_coverage(eps(0.5), m) - 0.962_407).abs() < 5e-7);
    }

    #[test]
    fn geometric_half_width_is_quick_and_finite_for_tiny_eps() {
        let conf = Probability::new(0.95).expect("valid");
        for e in [1e-6, 1e-12, 1e-14, 1e-300] {
            let m = geometric_half_width(Epsilon::new(e).expect("valid"), conf);
            // ln(20)/eps, the Laplace half-width, within a step.
            let laplace = 20f64.ln() / e;
            assert!(
                (m as f64 - laplace).abs() <= 1.0 + laplace * 1e-12 || m == u64::MAX,
                "eps {e}: {m}"
            );
        }
    }

    #[test]
    fn geometric_out_of_range_matches_its_law() {
        // eps 1, n = 3: P(Z < 0) + P(Z > 3) summed from the law.
        let (e, n) = (1.0f64, 3u64);
        let a = (-e).exp();
        let p = |z: i64| (1.0 - a) / (1.0 + a) * a.powi(z.abs() as i32);
        let direct: f64 = (-200..0).map(p).sum::<f64>() + (4..200).map(p).sum::<f64>();
        let got = geometric_out_of_range_max(n, Epsilon::new(e).expect("valid"));
        assert!((got - direct).abs() < 1e-12, "{got} vs {direct}");
        assert!((got - 0.282).abs() < 1e-3);
    }
}
