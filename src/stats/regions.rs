//! The confidence regions of two queries answered at once: Laplace noise against a
//! staircase-shaped data-independent noise (Soria-Comas and Domingo-Ferrer's slides,
//! "Comparison (II), (III): multiple queries").
//!
//! Two queries of sensitivities `d1` and `d2` have the L1 sensitivity `d1 + d2`; Laplace noise
//! of scale `b = (d1 + d2) / eps` on each has density `∝ exp(-|z|_1 / b)`, whose regions of
//! highest density are L1 balls. The staircase takes its steps in the shape of the
//! sensitivity box `K = [-d1, d1] x [-d2, d2]`: density `M` on the top box `t K`, then `M q^i`
//! on `(t + i) K` minus `(t + i - 1) K`, `q = e^-eps`: a shift by any vector of `K` moves a
//! point by at most one step, so it is eps-DP. As the steps widen the ratio of the regions
//! tends to the areas' ratio, `2 (d1 + d2)^2 / (4 d1 d2)`.
//!
//! The slides' table (10663 and 5445 for Laplace, 1790 and 916 for the optimal noise at
//! levels 0.99 and 0.95) fits sensitivities (1, 10) at eps 1: Laplace's numbers are the
//! counts of integer answers in the regions (the two-sided geometric noise of integer
//! answers); the staircase's fall between its areas with no flat top and with a top of
//! `t = 0.1` (1784 and 1790 at 0.99, 909 and 917 at 0.95), and no single `t` gives both
//! printed numbers. dpq shows the staircase without a flat top and with the top that makes
//! the region least, which is what "optimal" means for this criterion.

/// The `Q` with `P(Gamma(2, 1) <= Q) = c`: `1 - e^-Q (1 + Q) = c`, by Newton's method.
fn gamma2_quantile(c: f64) -> f64 {
    let mut q = 2.0 - (1.0 - c).ln();
    for _ in 0..100 {
        let f = 1.0 - (-q).exp() * (1.0 + q) - c;
        let df = q * (-q).exp();
        let step = f / df;
        q -= step;
        if step.abs() < 1e-14 * q {
            break;
        }
    }
    q
}

/// The area of Laplace's region of level `c`: the L1 ball of radius `b Q`, `2 (b Q)^2`.
pub fn laplace_area(d: (f64, f64), eps: f64, c: f64) -> f64 {
    let b = (d.0 + d.1) / eps;
    2.0 * (b * gamma2_quantile(c)).powi(2)
}

/// The fewest integer answers whose probability under the two-sided geometric noise of
/// scale `b = (d1 + d2) / eps` (density `∝ a^|z|_1`, `a = e^(-1/b)`) reaches `c`: whole
/// L1 circles of `4n` points from the centre out, then the points needed of the next.
pub fn laplace_lattice(d: (f64, f64), eps: f64, c: f64) -> f64 {
    let a = (-eps / (d.0 + d.1)).exp();
    let z = ((1.0 + a) / (1.0 - a)).powi(2);
    let (mut cum, mut count) = (0.0_f64, 0.0_f64);
    for n in 0u64..10_000_000 {
        let points = if n == 0 { 1.0 } else { 4.0 * n as f64 };
        let p = a.powf(n as f64) / z;
        if cum + points * p >= c {
            return count + ((c - cum) / p - 1e-12).ceil();
        }
        cum += points * p;
        count += points;
    }
    f64::INFINITY
}

/// The area of the staircase's region of level `c`, with a top box of `t` times the
/// sensitivity box.
pub fn staircase_area(d: (f64, f64), eps: f64, t: f64, c: f64) -> f64 {
    let q = (-eps).exp();
    let (t1, t2) = (t * d.0, t * d.1);
    let inverse_m = 4.0
        * (t1 * t2
            + (t1 * d.1 + t2 * d.0) * q / (1.0 - q)
            + d.0 * d.1 * q * (1.0 + q) / (1.0 - q).powi(2));
    let m = 1.0 / inverse_m;
    let area = |i: i64| {
        if i < 0 {
            0.0
        } else {
            4.0 * (t1 + i as f64 * d.0) * (t2 + i as f64 * d.1)
        }
    };
    let mut p = 0.0;
    for i in 0..10_000_000i64 {
        let density = m * q.powi(i as i32);
        let mass = density * (area(i) - area(i - 1));
        if p + mass >= c {
            return area(i - 1) + (c - p) / density;
        }
        p += mass;
    }
    f64::INFINITY
}

/// The top (as a multiple of the sensitivity box, in `[0, 2]`) that makes the staircase's
/// region of level `c` least, and that area.
pub fn least_staircase(d: (f64, f64), eps: f64, c: f64) -> (f64, f64) {
    let (t, _) = super::smooth::minimise(|t| staircase_area(d, eps, t, c), 0.0, 2.0);
    // The scan's first point is above 0: compare with no top at all.
    let (at_t, at_zero) = (staircase_area(d, eps, t, c), staircase_area(d, eps, 0.0, c));
    if at_zero <= at_t {
        (0.0, at_zero)
    } else {
        (t, at_t)
    }
}
