//! The staircase mechanism (Geng and Viswanath; Soria-Comas and Domingo-Ferrer's slides
//! "Optimal A. C. Data-Independent Noise"): the slides' variance table, the density's
//! normalisation, moments, distribution function and interval, the optimal gamma, the
//! epsilon-DP ratio bound, and the grid (discrete) staircase a grid sampler draws from.

use dpq::stats::staircase::{
    grid_cdf, grid_pmf, grid_variance, laplace_half_width, laplace_variance, optimal_gamma,
    Staircase,
};
use dpq::stats::{Epsilon, ParamError, Positive, Probability};

fn eps(x: f64) -> Epsilon {
    Epsilon::new(x).expect("test epsilon is valid")
}

fn prob(x: f64) -> Probability {
    Probability::new(x).expect("test probability is valid")
}

fn positive(x: f64) -> Positive {
    Positive::new(x).expect("test value is positive")
}

fn stair(e: f64, d: f64, gamma: f64) -> Staircase {
    Staircase::new(eps(e), positive(d), gamma).expect("test gamma is in [0, 1]")
}

fn optimal(e: f64, d: f64) -> Staircase {
    Staircase::optimal(eps(e), positive(d))
}

/// `value` rounds to `printed` at the printed precision: `|value - printed| <= half_unit`.
fn assert_printed(value: f64, printed: f64, half_unit: f64, what: &str) {
    assert!(
        (value - printed).abs() <= half_unit,
        "{what}: {value} does not print as {printed} (±{half_unit})"
    );
}

/// `value` truncates to `printed`: `printed <= value < printed + unit`.
fn assert_truncated(value: f64, printed: f64, unit: f64, what: &str) {
    assert!(
        printed <= value && value < printed + unit,
        "{what}: {value} does not truncate to {printed} (unit {unit})"
    );
}

/// The slides' three epsilon columns.
const TABLE_EPS: [f64; 3] = [0.1, 1.0, 10.0];

#[test]
fn slides_variance_table_all_nine_cells() {
    // Slides, "Comparison (I): Single Query": rows Δf = 0.1, 1, 10; columns eps = 0.1, 1, 10.
    // Laplace: 2 (Δf/eps)², printed exactly; relative tolerance 1e-12.
    let laplace = [[2.0, 0.02, 2e-4], [200.0, 2.0, 0.02], [20000.0, 200.0, 2.0]];
    for (row, d) in [0.1, 1.0, 10.0].into_iter().enumerate() {
        for (col, e) in TABLE_EPS.into_iter().enumerate() {
            let v = laplace_variance(eps(e), positive(d));
            let want = laplace[row][col];
            assert!(
                (v - want).abs() <= 1e-12 * want,
                "Laplace Δ {d} eps {e}: {v}"
            );
        }
    }
    // Optimal staircase, each cell within half a unit of the last printed digit, e.g. 199.9
    // to ±0.05 and 8.47e-4 to ±0.005e-4.
    let cells = [
        // (Δ, eps, printed, half unit)
        (0.1, 0.1, 1.999, 0.0005),
        (0.1, 1.0, 0.0192, 0.00005),
        (0.1, 10.0, 8.47e-6, 0.005e-6),
        (1.0, 0.1, 199.9, 0.05),
        (1.0, 1.0, 1.92, 0.005),
        (1.0, 10.0, 8.47e-4, 0.005e-4),
        (10.0, 1.0, 191.8, 0.05),
        (10.0, 10.0, 8.47e-2, 0.005e-2),
    ];
    for (d, e, printed, half) in cells {
        let v = optimal(e, d).variance();
        assert_printed(v, printed, half, &format!("optimal Δ {d} eps {e}"));
    }
    // The ninth cell, Δ 10 eps 0.1: the closed form gives 19991.668..., which rounds to
    // 19992; the slide prints 19991, i.e. it truncates (as it does for the 95% interval).
    let v = optimal(0.1, 10.0).variance();
    assert_truncated(v, 19991.0, 1.0, "optimal Δ 10 eps 0.1");
    assert!((v - 19_991.668_056_105_93).abs() < 1e-6, "{v}");
    // Variance scales with Δ²: rows 0.1 and 10 are row 1 times 0.01 and 100 (rel. 1e-12).
    for e in TABLE_EPS {
        let one = optimal(e, 1.0).variance();
        for d in [0.1, 10.0] {
            let v = optimal(e, d).variance();
            assert!((v - d * d * one).abs() <= 1e-12 * v, "eps {e} Δ {d}: {v}");
        }
    }
}

#[test]
fn slides_laplace_95_percent_intervals() {
    // Slides, "Absolute Frequency": Laplace 95% intervals at Δf = 1 are [m ± 29.9] (eps 0.1)
    // and [m ± 2.99] (eps 1). Exactly they are 10 ln 20 = 29.957... and ln 20 = 2.9957...,
    // which would round to 30.0 and 3.00: the slide truncates, so the assertion admits
    // truncation (printed <= value < printed + one unit of the last digit).
    let h = laplace_half_width(eps(0.1), positive(1.0), prob(0.95));
    assert_truncated(h, 29.9, 0.1, "eps 0.1");
    assert!((h - 10.0 * 20f64.ln()).abs() < 1e-12, "{h}");
    let h = laplace_half_width(eps(1.0), positive(1.0), prob(0.95));
    assert_truncated(h, 2.99, 0.01, "eps 1");
    assert!((h - 20f64.ln()).abs() < 1e-13, "{h}");
    // Scales with Δ (rel. 1e-14).
    let h7 = laplace_half_width(eps(1.0), positive(7.0), prob(0.95));
    assert!((h7 - 7.0 * 20f64.ln()).abs() < 1e-13, "{h7}");
    // The staircase interval at the same confidence is shorter (it has less mass far out
    // than Laplace only for large eps; at 95% it is shorter for all three columns).
    for e in TABLE_EPS {
        let s = optimal(e, 1.0).half_width(prob(0.95));
        let l = laplace_half_width(eps(e), positive(1.0), prob(0.95));
        assert!(s <= l, "eps {e}: staircase {s} > Laplace {l}");
    }
}

/// The pieces `[lo, hi)` of constant density on the positive half-line, up to `steps` steps.
fn pieces(s: &Staircase, steps: usize) -> Vec<(f64, f64)> {
    let d = s.sensitivity();
    let g = s.gamma();
    let mut out = Vec::with_capacity(2 * steps);
    for k in 0..steps {
        let k = k as f64;
        let (a, m, b) = (k * d, (k + g) * d, (k + 1.0) * d);
        if m > a {
            out.push((a, m));
        }
        if b > m {
            out.push((m, b));
        }
    }
    out
}

/// Two-point Gauss-Legendre rule of `f` on `[lo, hi]`: exact for cubics, interior nodes only.
fn gauss2(lo: f64, hi: f64, f: impl Fn(f64) -> f64) -> f64 {
    let (mid, half) = (0.5 * (lo + hi), 0.5 * (hi - lo));
    let off = half / 3f64.sqrt();
    half * (f(mid - off) + f(mid + off))
}

/// Steps needed for the one-sided tail beyond them, b^K / 2, to fall below 1e-19.
fn steps_for(e: f64) -> usize {
    (44.0 / e).ceil() as usize + 1
}

#[test]
fn pdf_integrates_to_one_and_its_second_moment_is_the_variance() {
    // Piecewise quadrature (two-point Gauss on every piece of constant density, the pieces
    // taken from gamma and Δ): mass and second moment to a relative 1e-12. Then a blind
    // midpoint rule whose cells (step h = Δ/4099 over ±K steps) ignore the piece boundaries,
    // which catches a density whose pieces sit in the wrong place. Its error comes from the
    // cells holding a jump J_i at x_i: at most h |J_i| for the mass and h |J_i| (|x_i| + h)²
    // for the second moment, plus h²/12 per unit mass for x² inside a cell; the tolerance is
    // that bound, summed over the jumps on both sides (about 1e-3 relative at eps = 10).
    for e in TABLE_EPS {
        for (d, gamma) in [(1.0, None), (0.1, None), (3.0, Some(0.3)), (1.0, Some(1.0))] {
            let s = match gamma {
                None => optimal(e, d),
                Some(g) => stair(e, d, g),
            };
            let k = steps_for(e);
            let ps = pieces(&s, k);
            let (mut mass, mut second) = (0.0, 0.0);
            for &(lo, hi) in &ps {
                mass += 2.0 * gauss2(lo, hi, |x| s.pdf(x));
                second += 2.0 * gauss2(lo, hi, |x| x * x * s.pdf(x));
            }
            let var = s.variance();
            assert!((mass - 1.0).abs() < 1e-12, "eps {e} Δ {d}: mass {mass}");
            assert!(
                (second - var).abs() < 1e-12 * var,
                "eps {e} Δ {d}: {second} vs {var}"
            );
            // Blind midpoint rule.
            let h = d / 4099.0;
            let (mut bound1, mut bound2) = (0.0, h * h / 12.0);
            for w in ps.windows(2) {
                let (a, b) = (w[0], w[1]);
                let jump = (s.pdf(0.5 * (a.0 + a.1)) - s.pdf(0.5 * (b.0 + b.1))).abs();
                bound1 += 2.0 * h * jump;
                bound2 += 2.0 * h * jump * (b.0 + h) * (b.0 + h);
            }
            let n = (k as f64 * d / h).ceil() as i64;
            let (mut mass, mut second) = (0.0, 0.0);
            for i in -n..n {
                let x = (i as f64 + 0.5) * h;
                let f = s.pdf(x);
                mass += f * h;
                second += x * x * f * h;
            }
            assert!(
                (mass - 1.0).abs() <= bound1,
                "eps {e} Δ {d}: blind mass {mass} (bound {bound1})"
            );
            assert!(
                (second - var).abs() <= bound2,
                "eps {e} Δ {d}: blind {second} vs {var} (bound {bound2})"
            );
        }
    }
}

#[test]
fn cdf_is_the_integral_of_the_pdf_and_symmetric() {
    // cdf(x) = 1/2 + ∫_0^x pdf at every piece boundary and piece midpoint (absolute 1e-13);
    // the lower tail cdf(-x) = ∫_x^∞ pdf, accumulated from the far end, to a relative 1e-11
    // (the tail keeps its relative accuracy, down to 1e-19); cdf(-x) = 1 - cdf(x) (abs. 1e-15).
    for e in TABLE_EPS {
        for s in [optimal(e, 1.0), stair(e, 2.5, 0.7), stair(e, 0.5, 0.0)] {
            let ps = pieces(&s, steps_for(e));
            let mut acc = 0.5;
            for &(lo, hi) in &ps {
                let mid = 0.5 * (lo + hi);
                assert!((s.cdf(lo) - acc).abs() < 1e-13, "eps {e} at {lo}");
                let part = acc + s.pdf(mid) * (mid - lo);
                assert!((s.cdf(mid) - part).abs() < 1e-13, "eps {e} at {mid}");
                acc += gauss2(lo, hi, |x| s.pdf(x));
            }
            // Tail from the far end.
            let mut tail = s.cdf(-ps[ps.len() - 1].1);
            for &(lo, hi) in ps.iter().rev() {
                tail += gauss2(lo, hi, |x| s.pdf(x));
                let c = s.cdf(-lo);
                assert!((c - tail).abs() <= 1e-11 * tail, "eps {e}: tail at {lo}");
                let mid = 0.5 * (lo + hi);
                let t_mid = tail - s.pdf(mid) * (mid - lo);
                let c = s.cdf(-mid);
                assert!((c - t_mid).abs() <= 1e-11 * t_mid, "eps {e}: tail at {mid}");
            }
            for i in 0..2000 {
                let x = i as f64 * 0.013_7 * s.sensitivity() / e.min(1.0);
                let sum = s.cdf(-x) + s.cdf(x);
                assert!((sum - 1.0).abs() < 1e-15, "eps {e} x {x}: {sum}");
                assert!(s.sf(x) == s.cdf(-x) && (s.sf(-x) - s.cdf(x)).abs() < 1e-15);
            }
        }
    }
    // Deep tail: cdf(-kΔ) = b^k / 2 exactly, where 1 - cdf(kΔ) has long been 0.
    let s = optimal(1.0, 1.0);
    let c = s.cdf(-600.0);
    let want = 0.5 * (-600f64).exp();
    assert!((c - want).abs() <= 1e-13 * want, "{c} vs {want}");
    assert_eq!(s.cdf(f64::NEG_INFINITY), 0.0);
    assert_eq!(s.cdf(f64::INFINITY), 1.0);
    assert!(s.cdf(f64::NAN).is_nan() && s.pdf(f64::NAN).is_nan());
}

#[test]
fn half_width_inverts_the_cdf() {
    // P(|X| <= h) = confidence to 1e-13 absolute, 2 P(X > h) = 1 - confidence to a relative
    // 1e-9 plus 2 f(h) h 1e-15 (the tail's change when h moves by a few ulps: at eps = 100
    // the flat top is 2.6e-15 Δ wide with density 1.9e14/Δ, and a tail of 1e-12 at its edge
    // is ill-conditioned by a factor of 1e12), and h is the smallest such: at h (1 - 1e-7)
    // the coverage is below the confidence (checked where that drop, 2 f(h) h 1e-7, exceeds
    // 1e-13, i.e. is visible above rounding). Small confidences fall in the flat top
    // [-γΔ, γΔ], where h = c / (2 f(0)) exactly (relative 1e-12).
    let mut confidences: Vec<f64> = (1..1000).map(|i| i as f64 / 1000.0).collect();
    confidences.extend([1e-9, 0.95, 0.999_999, 1.0 - 1e-12]);
    for e in [1e-6, 0.01, 0.1, 1.0, 10.0, 100.0] {
        for s in [optimal(e, 1.0), stair(e, 4.0, 0.8), stair(e, 1.0, 1.0)] {
            for &c in &confidences {
                let h = s.half_width(prob(c));
                assert!(h.is_finite() && h > 0.0, "eps {e} c {c}: {h}");
                let cover = s.cdf(h) - s.cdf(-h);
                assert!((cover - c).abs() < 1e-13, "eps {e} c {c}: {cover}");
                let q = 1.0 - c;
                // The tail's sensitivity to rounding h: 2 f(h) h times a few ulps.
                let cond = 2.0 * s.pdf(h) * h * 1e-15;
                let tail = 2.0 * s.sf(h);
                assert!((tail - q).abs() <= 1e-9 * q + cond, "eps {e} c {c}: {tail}");
                let below = h * (1.0 - 1e-7);
                if 2.0 * s.pdf(below) * (h - below) > 1e-13 {
                    let cover = s.cdf(below) - s.cdf(-below);
                    assert!(cover < c, "eps {e} c {c}: h {h} is not the smallest");
                }
                let flat = c / (2.0 * s.pdf(0.0));
                if flat < s.gamma() * s.sensitivity() {
                    assert!((h - flat).abs() <= 1e-12 * flat, "eps {e} c {c}: {h}");
                }
            }
        }
    }
}

/// Golden-section minimum of `f` on `[lo, hi]`: (argmin, min).
fn golden(mut lo: f64, mut hi: f64, f: impl Fn(f64) -> f64) -> (f64, f64) {
    let r = (5f64.sqrt() - 1.0) / 2.0;
    let mut x1 = hi - r * (hi - lo);
    let mut x2 = lo + r * (hi - lo);
    let (mut f1, mut f2) = (f(x1), f(x2));
    for _ in 0..200 {
        if f1 < f2 {
            hi = x2;
            x2 = x1;
            f2 = f1;
            x1 = hi - r * (hi - lo);
            f1 = f(x1);
        } else {
            lo = x1;
            x1 = x2;
            f1 = f2;
            x2 = lo + r * (hi - lo);
            f2 = f(x2);
        }
    }
    let x = 0.5 * (lo + hi);
    (x, f(x))
}

#[test]
fn optimal_gamma_minimises_the_variance() {
    // Variance at gamma* is at most that at gamma* ± 1e-3 and at 0, 0.5, 1, and equals a
    // golden-section minimum to a relative 1e-9. The minimum is flat (quadratic), so the
    // argmins agree only to about sqrt(1e-16): 1e-6 absolute.
    for e in [0.01, 0.1, 1.0, 5.0, 10.0, 30.0] {
        let g = optimal_gamma(eps(e));
        let var = |gamma: f64| stair(e, 1.0, gamma).variance();
        let v = var(g);
        for other in [g - 1e-3, g + 1e-3, 0.0, 0.5, 1.0] {
            if (0.0..=1.0).contains(&other) {
                assert!(
                    v <= var(other),
                    "eps {e}: {v} > var({other}) = {}",
                    var(other)
                );
            }
        }
        let (arg, min) = golden(0.0, 1.0, var);
        assert!((v - min).abs() <= 1e-9 * min, "eps {e}: {v} vs {min}");
        assert!((g - arg).abs() < 1e-6, "eps {e}: {g} vs {arg}");
        assert_eq!(optimal(e, 3.0).gamma(), g);
    }
    // Geng and Viswanath's printed formula, -b/(1-b) + (b - 2b² + 2b⁴ - b⁵)^{1/3} /
    // (2^{1/3} (1-b)²), agrees where it does not cancel (relative 1e-12); the mathematics and
    // the paper agree (the implementation is an algebraically equal rearrangement).
    for e in [0.5f64, 1.0, 2.0, 5.0, 10.0] {
        let b = (-e).exp();
        let printed = -b / (1.0 - b)
            + (b - 2.0 * b * b + 2.0 * b.powi(4) - b.powi(5)).cbrt()
                / (2f64.cbrt() * (1.0 - b) * (1.0 - b));
        let g = optimal_gamma(eps(e));
        assert!(
            (g - printed).abs() <= 1e-12 * g,
            "eps {e}: {g} vs {printed}"
        );
    }
    // Limits: gamma* = 1/2 - eps/12 + O(eps²) as eps -> 0 (no cancellation at eps = 1e-6),
    // and gamma* ~ (b/2)^{1/3} as eps -> infinity (relative O(b^{1/3}), floored at 1e-14).
    for e in [1e-6, 1e-4] {
        let g = optimal_gamma(eps(e));
        assert!((g - (0.5 - e / 12.0)).abs() < e * e, "eps {e}: {g}");
    }
    for e in [30.0, 100.0, 700.0] {
        let g = optimal_gamma(eps(e));
        let want = (0.5 * (-e).exp()).cbrt();
        let tol = (2.0 * (-e / 3.0f64).exp()).max(1e-14);
        assert!((g / want - 1.0).abs() < tol, "eps {e}: {g}");
    }
    // Beyond b's underflow: still in [0, 1/2] and never NaN.
    for e in [800.0, 2000.0, 1e6, f64::MAX] {
        let g = optimal_gamma(eps(e));
        assert!((0.0..=0.5).contains(&g), "eps {e}: {g}");
        let v = optimal(e, 1.0).variance();
        assert!((0.0..1e-200).contains(&v), "eps {e}: {v}");
    }
}

#[test]
fn density_satisfies_the_epsilon_dp_ratio_bound() {
    // f(x) / f(x + y) <= e^eps (1 + 1e-12) for |y| <= Δ, x on a dense grid over ±4Δ (step
    // Δ/256, so it crosses zero and lands exactly on the integer step boundaries), y on the
    // grid of [-Δ, Δ] with step Δ/128, including ±Δ. Δ is a power of two and the grids are
    // dyadic, so x, x + y and x/Δ are exact: the test checks the density, not the rounding of
    // the shift (with Δ = 0.7, say, fl(x + y) can land more than Δ away from x). The bound is
    // tight (reached) and fails for a shift of (1 + 1/128) Δ, so the check has power.
    for e in TABLE_EPS {
        let bound = e.exp() * (1.0 + 1e-12);
        for s in [
            optimal(e, 1.0),
            stair(e, 0.5, 0.0),
            stair(e, 4.0, 0.3),
            stair(e, 1.0, 0.25),
            stair(e, 1.0, 1.0),
        ] {
            let d = s.sensitivity();
            let mut worst: f64 = 0.0;
            for i in -1024..=1024 {
                let x = i as f64 * d / 256.0;
                for t in -128..=128 {
                    let y = t as f64 * d / 128.0;
                    let ratio = s.pdf(x) / s.pdf(x + y);
                    assert!(ratio <= bound, "eps {e}: f({x})/f({x}+{y}) = {ratio}");
                    worst = worst.max(ratio);
                }
            }
            assert!(
                worst > e.exp() * (1.0 - 1e-12),
                "eps {e}: max ratio {worst}"
            );
            let far = (-1024..=1024)
                .map(|i| {
                    let x = i as f64 * d / 256.0;
                    s.pdf(x) / s.pdf(x + d * (1.0 + 1.0 / 128.0))
                })
                .fold(0.0, f64::max);
            assert!(far > bound, "eps {e}: a shift of 1.008Δ gives only {far}");
        }
    }
}

#[test]
fn grid_pmf_satisfies_the_epsilon_dp_ratio_bound() {
    // P(j) / P(j + t) <= e^eps (1 + 1e-12) for integer |t| <= L, all j in [-5L, 5L]; reached.
    for e in TABLE_EPS {
        let bound = e.exp() * (1.0 + 1e-12);
        for (l, g) in [(1u64, 1u64), (1, 0), (7, 0), (7, 3), (7, 7), (64, 18)] {
            let li = l as i64;
            let mut worst: f64 = 0.0;
            for j in -5 * li..=5 * li {
                for t in -li..=li {
                    let ratio = grid_pmf(eps(e), l, g, j) / grid_pmf(eps(e), l, g, j + t);
                    assert!(ratio <= bound, "eps {e} L {l} G {g}: P({j})/P({j}+{t})");
                    worst = worst.max(ratio);
                }
            }
            assert!(
                worst > e.exp() * (1.0 - 1e-12),
                "eps {e} L {l} G {g}: {worst}"
            );
        }
    }
}

#[test]
fn staircase_variance_is_below_laplace_and_tends_to_it() {
    // Var(staircase at gamma*) <= 2Δ²/eps² for eps from 1e-6 to 700 (40 values per decade);
    // strictly below for eps >= 1e-3 (the gap, Δ²/12, is lost in rounding near 1e-6).
    for i in 0..=(40 * 9) {
        let e = 10f64.powf(-6.0 + i as f64 / 40.0).min(700.0);
        for d in [0.1, 1.0, 10.0] {
            let s = optimal(e, d).variance();
            let l = laplace_variance(eps(e), positive(d));
            assert!(s <= l * (1.0 + 1e-15), "eps {e} Δ {d}: {s} > {l}");
            if e >= 1e-3 {
                assert!(s < l, "eps {e} Δ {d}: {s} not < {l}");
            }
        }
    }
    // eps -> 0: the ratio tends to 1 and the gap to Δ²/12 (variance 2Δ²/eps² - Δ²/12 + O(eps²)).
    let ratio = optimal(1e-6, 1.0).variance() / laplace_variance(eps(1e-6), positive(1.0));
    assert!((ratio - 1.0).abs() < 1e-12, "{ratio}");
    for (e, tol) in [(1e-2, 1e-4), (1e-3, 1e-6), (1e-4, 1e-4), (1e-6, 1e-2)] {
        let gap = laplace_variance(eps(e), positive(1.0)) - optimal(e, 1.0).variance();
        assert!((gap - 1.0 / 12.0).abs() < tol, "eps {e}: gap {gap}");
    }
    // eps -> infinity: Var ~ Δ² (b/2)^{2/3} (Geng and Viswanath), relative O(b^{1/3}) (floored
    // at 1e-13 for rounding).
    for e in [30.0, 100.0, 700.0] {
        let v = optimal(e, 2.0).variance();
        let want = 4.0 * (0.5 * (-e).exp()).powf(2.0 / 3.0);
        let tol = (3.0 * (-e / 3.0f64).exp()).max(1e-13);
        assert!((v / want - 1.0).abs() < tol, "eps {e}: {v}");
    }
}

#[test]
fn gamma_zero_and_one_are_the_same_law_and_bad_gamma_is_refused() {
    for e in [0.01, 1.0, 20.0] {
        let (z, o) = (stair(e, 1.5, 0.0), stair(e, 1.5, 1.0));
        assert_eq!(z.gamma(), 0.0);
        for i in -300..300 {
            let x = i as f64 * 0.0371;
            assert_eq!(z.pdf(x), o.pdf(x));
            assert_eq!(z.cdf(x), o.cdf(x));
        }
        assert_eq!(z.variance(), o.variance());
        assert_eq!(z.half_width(prob(0.9)), o.half_width(prob(0.9)));
        for j in -50..50 {
            assert_eq!(grid_pmf(eps(e), 5, 0, j), grid_pmf(eps(e), 5, 5, j));
        }
        assert_eq!(grid_variance(eps(e), 5, 0), grid_variance(eps(e), 5, 5));
    }
    for bad in [-0.1, 1.000_001, f64::NAN, f64::INFINITY] {
        assert_eq!(
            Staircase::new(eps(1.0), positive(1.0), bad),
            Err(ParamError::InvalidProbability),
            "{bad}"
        );
    }
    let s = stair(2.0, 3.0, 0.25);
    assert_eq!((s.eps(), s.sensitivity(), s.gamma()), (2.0, 3.0, 0.25));
    // Invalid grids give NaN, not a panic.
    assert!(grid_cdf(eps(1.0), 0, 0, 3).is_nan());
    assert!(grid_pmf(eps(1.0), 4, 5, 3).is_nan());
    assert!(grid_variance(eps(1.0), 4, 5).is_nan());
}

/// Neumaier's compensated sum, so that summing thousands of pmf terms keeps 1e-15 accuracy.
#[derive(Default)]
struct Sum {
    s: f64,
    c: f64,
}

impl Sum {
    fn add(&mut self, x: f64) {
        let t = self.s + x;
        if self.s.abs() >= x.abs() {
            self.c += (self.s - t) + x;
        } else {
            self.c += (x - t) + self.s;
        }
        self.s = t;
    }

    fn get(&self) -> f64 {
        self.s + self.c
    }
}

#[test]
fn grid_cdf_sums_the_pmf_and_grid_variance_is_its_second_moment() {
    // Summing pmf (compensated) from the far left reproduces grid_cdf at every j (absolute
    // 1e-14, and relative 1e-11 in the lower tail); Σ pmf = 1 and Σ j² pmf = grid_variance
    // (rel. 1e-12).
    for e in [0.05, 1.0, 10.0] {
        for (l, g) in [(1u64, 1u64), (7, 3), (7, 0), (100, 29)] {
            let n = (l as f64 * 45.0 / e).ceil() as i64 + 1;
            let mut acc = Sum::default();
            acc.add(grid_cdf(eps(e), l, g, -n - 1));
            let mut second = Sum::default();
            for j in -n..=n {
                let p = grid_pmf(eps(e), l, g, j);
                acc.add(p);
                second.add((j * j) as f64 * p);
                let c = grid_cdf(eps(e), l, g, j);
                let acc = acc.get();
                assert!((c - acc).abs() < 1e-14, "eps {e} L {l} G {g} j {j}");
                if j < 0 {
                    assert!((c - acc).abs() <= 1e-11 * c, "eps {e} L {l} G {g} j {j}");
                }
            }
            let (total, second) = (acc.get(), second.get());
            assert!((total - 1.0).abs() < 1e-12, "eps {e} L {l} G {g}: {total}");
            let v = grid_variance(eps(e), l, g);
            assert!(
                (second - v).abs() <= 1e-12 * v,
                "eps {e} L {l} G {g}: {second} {v}"
            );
        }
    }
    // L = G = 1 is the two-sided geometric law: P(J >= 1) = b/(1+b), Var = 2b/(1-b)².
    let b = (-0.5f64).exp();
    let tail = 1.0 - grid_cdf(eps(0.5), 1, 1, 0);
    assert!((tail - b / (1.0 + b)).abs() < 1e-15);
    let v = grid_variance(eps(0.5), 1, 1);
    assert!((v - 2.0 * b / ((1.0 - b) * (1.0 - b))).abs() < 1e-12 * v);
    // Extreme arguments: no panic, and the ends of the line.
    assert_eq!(grid_cdf(eps(1.0), 3, 1, i64::MIN), 0.0);
    assert_eq!(grid_cdf(eps(1.0), 3, 1, i64::MAX), 1.0);
}

#[test]
fn grid_staircase_converges_to_the_continuous_one() {
    // J Δ / L with L = 2^20 grid points per Δ and G = round(gamma L) inner points against the
    // continuous law with gamma = G/L. Grid point j stands for the cell of width Δ/L around
    // j Δ/L, so P(J <= j) is compared with cdf((j + 1/2) Δ/L) on 12001 points over ±6 steps
    // (not aligned with the grid) and at the step boundaries next to 0: the difference is
    // below 1e-5 (it is at most about half the atom at 0, f(0) Δ/(2L) < 8.5e-6 even at
    // eps = 10 where f(0) ≈ 17.7/Δ). It falls as L grows (2^10, 2^15, 2^20), and the grid
    // variance times (Δ/L)² tends to the continuous variance (relative 1e-5 at 2^20).
    // Measured at 2^20: 1.2e-9 (eps 0.1), 1.0e-7 (eps 1), 8.41e-6 (eps 10, gamma*: half the
    // atom at 0, the least any discrete law can differ from a continuous one); the difference
    // shrinks by about 32 for each factor 32 in L.
    for e in TABLE_EPS {
        for gamma in [optimal_gamma(eps(e)), 0.3] {
            let mut last = f64::INFINITY;
            for bits in [10, 15, 20] {
                let l: u64 = 1 << bits;
                let lf = l as f64;
                let g = (gamma * lf).round() as u64;
                let s = stair(e, 1.0, g as f64 / lf);
                let li = l as i64;
                let mut worst: f64 = 0.0;
                let mut points: Vec<i64> = (-6000..=6000)
                    .map(|i| (i as f64 * 0.001_000_7 * lf).round() as i64)
                    .collect();
                let gi = g as i64;
                points.extend([-li - 1, -li, -gi - 1, -gi, -1, 0, 1, gi - 1, gi, li - 1, li]);
                for j in points {
                    let x = (j as f64 + 0.5) / lf;
                    let diff = (grid_cdf(eps(e), l, g, j) - s.cdf(x)).abs();
                    worst = worst.max(diff);
                }
                assert!(worst < last, "eps {e} L 2^{bits}: {worst} >= {last}");
                last = worst;
                if bits == 20 {
                    assert!(worst < 1e-5, "eps {e} gamma {gamma}: {worst}");
                    let gv = grid_variance(eps(e), l, g) / (lf * lf);
                    let v = s.variance();
                    assert!((gv - v).abs() < 1e-5 * v, "eps {e}: {gv} vs {v}");
                }
            }
        }
    }
}
