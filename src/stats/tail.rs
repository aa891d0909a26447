//! Tails `P(Z > t)` of a sum of independent Laplace and normal variables to a stated relative error, far beyond the FFT's absolute accuracy, with a rigorous bound where no accurate value is reached.
//!
//! `Z = sum_i N_i + G`, `N_i ~ Laplace(c_i)` (the error of a BLUE, Xiao and Xiong eq. 55-57, with
//! `c_i = |a_i| S_i / alpha_i`) and `G ~ Normal(0, g)` (the Gaussian releases' part,
//! `g = sum_j a_j^2 sigma_j^2`), has the moment generating function
//! `M(s) = e^{g s^2 / 2} prod_i 1 / (1 - c_i^2 s^2)`, `|s| < 1 / c_max`, and `K = ln M`. With no
//! Laplace term `Z` is normal and its tail is the normal's ([`upper_mixed`]); otherwise [`upper`] returns an
//! [`Enclosure`] `[lo, hi]` of `P(Z > t)`, rigorous up to the stated accuracy of the elementary
//! functions (each within a few units in the last place), by the first of three methods that
//! reaches a relative width of [`TARGET`]:
//!
//! 1. **Partial fractions** (at most [`PF_MAX`] distinct scales, no normal part): for `t >= 0`,
//!    `P(Z > t) = sum_i w_i e^{-t/c_i} / 2` with `w_i = prod_{j != i} c_i^2 / (c_i^2 - c_j^2)`,
//!    the residues of `M(w) e^{-wt} / w` at the poles `w = 1/c_i`. Every term is formed in
//!    logarithms (no underflow), and the rounding error is bounded term by term; when scales
//!    are close the terms cancel, the bound grows with `sum |terms| / |sum|`, and the next
//!    method is tried. Exact for one scale and for a few well separated ones, including the far
//!    tail dominated by one scale.
//! 2. **Saddle-point inversion**: `g(x) = e^{sx} P(Z > x)` has the Fourier transform
//!    `M(s + iu) / (s + iu)` (`0 < s < 1/c_max`), so by Poisson summation the trapezoidal sum
//!    `(h / 2 pi) sum_k M(s + ikh) e^{-(s + ikh) t} / (s + ikh)` equals
//!    `sum_j e^{s(t + jT)} P(Z > t + jT)`, `T = 2 pi / h`: `P(Z > t)` plus aliases, all
//!    positive. With `s` the saddle point (`K'(s) = t`) the integrand is smooth, positive near
//!    0 and decays fast, so a few hundred terms usually suffice at any distance into the tail.
//!    Three errors are bounded and summed: the aliases below (`P <= 1`) and above (a Chernoff
//!    bound at a larger tilt `r`), the terms left out (`|M(s+iu)/M(s)| <= prod over some i of
//!    (1 - c_i^2 s^2) / (c_i^2 u^2)`; the normal part's factor `|e^{g((s+iu)^2 - s^2)/2}| =
//!    e^{-g u^2 / 2}` is at most 1, so the bound holds with it), and the rounding of each term
//!    and of the sum.
//! 3. **The Chernoff bound** `P(Z > t) <= inf_s e^{K(s) - st}` (at the saddle point): the
//!    enclosure `[0, bound]`, when neither method reaches [`TARGET`] within [`WORK_CAP`].
//!
//! [`upper`] handles `t < 0` by symmetry (`P(Z > t) = 1 - P(Z > -t)`) and returns `1/2` at 0.

/// The relative width an enclosure must reach to be reported as a value (the relative error
/// stated is the one reached, usually far smaller).
pub const TARGET: f64 = 1e-10;

/// Partial fractions are tried with at most this many scales (their cost is quadratic).
pub const PF_MAX: usize = 64;

/// The most terms times scales the inversion may evaluate (about a second of work).
pub const WORK_CAP: usize = 1 << 26;

/// The smallest probability enclosed as a value: a tail below it is enclosed as `[0, TINY]`
/// (a double cannot hold it to its relative error much below this).
pub const TINY: f64 = 1e-300;

/// A probability known to lie in `[lo, hi]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Enclosure {
    /// A lower bound.
    pub lo: f64,
    /// An upper bound.
    pub hi: f64,
}

impl Enclosure {
    /// The enclosure of `e^ln_value`, known to a relative error `rel`; `[0, TINY]` below
    /// [`TINY`].
    fn relative(ln_value: f64, rel: f64) -> Enclosure {
        let value = ln_value.exp();
        if value * (1.0 + rel) < TINY {
            return Enclosure { lo: 0.0, hi: TINY };
        }
        Enclosure {
            lo: (value * (1.0 - rel)).max(0.0),
            hi: (value * (1.0 + rel)).min(1.0),
        }
    }

    /// `1 - p` for `p` in this enclosure (the rounding of `1 - x` allowed for).
    pub fn complement(self) -> Enclosure {
        Enclosure {
            lo: (1.0 - self.hi - f64::EPSILON).max(0.0),
            hi: (1.0 - self.lo + f64::EPSILON).min(1.0),
        }
    }
}

const EPS: f64 = f64::EPSILON;

/// `P(Z > t)` for `Z` the sum of independent Laplace variables of scales `c` (finite and
/// positive; an empty `c` is `Z = 0`).
pub fn upper(c: &[f64], t: f64) -> Enclosure {
    upper_mixed(c, 0.0, t)
}

/// `P(Z > t)` for `Z` the sum of independent Laplace variables of scales `c` (finite and
/// positive) and a normal variable of variance `g` (finite, at least 0); `Z = 0` when both
/// are absent.
pub fn upper_mixed(c: &[f64], g: f64, t: f64) -> Enclosure {
    if t.is_nan() {
        return Enclosure { lo: 0.0, hi: 1.0 };
    }
    if c.is_empty() && g <= 0.0 {
        let p = if t < 0.0 { 1.0 } else { 0.0 };
        return Enclosure { lo: p, hi: p };
    }
    if t == 0.0 {
        // Z is continuous and symmetric.
        return Enclosure { lo: 0.5, hi: 0.5 };
    }
    if c.is_empty() {
        // Normal: P(Z > t) = erfc(t / sqrt(2 g)) / 2, from the nearer tail.
        let z = t.abs() / g.sqrt();
        let p = super::accuracy::normal_upper_tail(z);
        // The quotient z rounds too: 2 more ulps of it, through the slope.
        let rel = super::accuracy::normal_upper_tail_error(z) * 2.0;
        let e = if p < TINY {
            Enclosure { lo: 0.0, hi: TINY }
        } else {
            Enclosure {
                lo: p * (1.0 - rel),
                hi: (p * (1.0 + rel)).min(1.0),
            }
        };
        return if t < 0.0 { e.complement() } else { e };
    }
    if t < 0.0 {
        return upper_positive(c, g, -t, WORK_CAP).complement();
    }
    upper_positive(c, g, t, WORK_CAP)
}

/// The Chernoff bound `inf_s e^{K(s) - st}` on `P(Z > t)`, `t > 0` (1 otherwise), evaluated at
/// the saddle point and rounded up.
pub fn chernoff(c: &[f64], t: f64) -> f64 {
    chernoff_mixed(c, 0.0, t)
}

/// [`chernoff`] with a normal part of variance `g`.
pub fn chernoff_mixed(c: &[f64], g: f64, t: f64) -> f64 {
    if (c.is_empty() && g <= 0.0) || t.is_nan() || t <= 0.0 {
        return 1.0;
    }
    if c.is_empty() {
        // At the saddle point s = t / g: e^{-t^2 / (2 g)}, rounded up.
        return ((-t * t / (2.0 * g)) * (1.0 - 4.0 * EPS)).exp().min(1.0);
    }
    chernoff_ln(c, g, t).exp().min(1.0)
}

/// The least `w > 0` (to a relative `1e-12`, rounded up) at which `P(Z > w) <= target` is
/// certified (the enclosure's upper end at most `target`), for `0 < target < 1/2`: the
/// half-width of the central interval of mass `1 - 2 target`, never too narrow.
pub fn quantile(c: &[f64], target: f64) -> f64 {
    quantile_mixed(c, 0.0, target)
}

/// [`quantile`] with a normal part of variance `g`.
pub fn quantile_mixed(c: &[f64], g: f64, target: f64) -> f64 {
    if (c.is_empty() && g <= 0.0) || target.is_nan() || target >= 0.5 {
        return 0.0;
    }
    let sd = (2.0 * c.iter().map(|x| x * x).sum::<f64>() + g).sqrt();
    let covered = |w: f64| upper_mixed(c, g, w).hi <= target;
    let mut hi = sd;
    while !covered(hi) {
        hi *= 2.0;
        if !hi.is_finite() {
            return f64::INFINITY;
        }
    }
    let mut lo = 0.0f64;
    while hi - lo > 1e-12 * hi {
        let mid = 0.5 * (lo + hi);
        if covered(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// `ln` of [`chernoff`], rounded up by a margin for its own rounding.
fn chernoff_ln(c: &[f64], g: f64, t: f64) -> f64 {
    let s = saddle(c, g, t);
    match Tilt::new(c, g, s) {
        // The bound holds at any s in (0, 1/c_max); its computed logarithm is off by at most
        // a few ulps of each of its terms.
        Some(tl) => {
            let v = tl.k - s * t;
            v + 8.0 * EPS * (tl.k_size + s * t + 1.0)
        }
        None => 0.0,
    }
}

/// `P(Z > t)` for `t > 0` and at least one Laplace term: partial fractions (no normal part),
/// else the inversion, else the Chernoff bound.
fn upper_positive(c: &[f64], g: f64, t: f64, cap: usize) -> Enclosure {
    if g == 0.0 {
        if let Some((ln_p, rel)) = partial_fractions(c, t) {
            if rel <= TARGET {
                return Enclosure::relative(ln_p, rel);
            }
        }
    }
    if let Some((ln_p, rel)) = invert(c, g, t, cap) {
        if rel <= TARGET {
            return Enclosure::relative(ln_p, rel);
        }
    }
    Enclosure {
        lo: 0.0,
        hi: chernoff_ln(c, g, t).exp().clamp(TINY, 1.0),
    }
}

/// Method 1 (module docs): `ln P(Z > t)` and a bound on its relative error, for at most
/// [`PF_MAX`] distinct scales; `None` when scales repeat or the sum is not positive.
fn partial_fractions(c: &[f64], t: f64) -> Option<(f64, f64)> {
    let m = c.len();
    if m > PF_MAX {
        return None;
    }
    let mut sorted = c.to_vec();
    sorted.sort_by(f64::total_cmp);
    if sorted.windows(2).any(|w| w[0] == w[1]) {
        return None;
    }
    // Term i: sign_i exp(l_i), l_i = ln|w_i| - t/c_i - ln 2, and a bound on the relative error
    // of exp(l_i) as computed: a few ulps of each logarithm and of the difference it takes.
    let mut terms = Vec::with_capacity(m);
    for (i, &ci) in c.iter().enumerate() {
        let mut l = -t / ci - std::f64::consts::LN_2;
        let mut size = l.abs();
        let mut positive = true;
        for (j, &cj) in c.iter().enumerate() {
            if i == j {
                continue;
            }
            // c_i^2 - c_j^2 = (c_i - c_j)(c_i + c_j): each factor to an ulp.
            let diff = (ci - cj) * (ci + cj);
            let f = 2.0 * ci.ln() - diff.abs().ln();
            l += f;
            size += 2.0 * ci.ln().abs() + diff.abs().ln().abs();
            if diff < 0.0 {
                positive = !positive;
            }
        }
        terms.push((positive, l, 4.0 * EPS * (size + 4.0 * m as f64)));
    }
    let top = terms.iter().fold(f64::NEG_INFINITY, |a, x| a.max(x.1));
    let (mut sum, mut comp, mut abs, mut err) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for &(positive, l, e) in &terms {
        let v = (l - top).exp();
        let x = if positive { v } else { -v };
        // Neumaier's compensated sum.
        let s = sum + x;
        comp += if sum.abs() >= x.abs() {
            (sum - s) + x
        } else {
            (x - s) + sum
        };
        sum = s;
        abs += v;
        err += v * (e + 2.0 * EPS);
    }
    let total = sum + comp;
    // Compensated summation: |error| <= 2 eps |sum| + 4 m eps^2 sum |x|.
    err += 2.0 * EPS * total.abs() + 4.0 * m as f64 * EPS * EPS * abs;
    if total <= 0.0 || err >= 0.5 * total {
        return None;
    }
    let ln_p = top + total.ln();
    let rel = err / (total - err) + 4.0 * EPS * (ln_p.abs() + 1.0);
    Some((ln_p, rel))
}

/// The tilted scales at `s`: `d_i = 1 - c_i s`, `alpha_i = c_i / d_i`, `beta_i = c_i / (2 - d_i)`,
/// and `K(s) = g s^2 / 2 - sum ln(d_i (2 - d_i))`, `K'(s) = g s + sum (alpha_i - beta_i)`,
/// `K''(s) = g + sum (alpha_i^2 + beta_i^2)`.
struct Tilt {
    alpha: Vec<f64>,
    beta: Vec<f64>,
    /// The normal part's variance `g`.
    g: f64,
    k: f64,
    /// `sum |ln d_i| + |ln (2 - d_i)|`: the size of the terms of `K`, for its rounding error.
    k_size: f64,
    slope: f64,
    curvature: f64,
}

impl Tilt {
    /// `None` unless `0 <= s < 1 / c_max` (every `d_i > 0`).
    fn new(c: &[f64], g: f64, s: f64) -> Option<Tilt> {
        let (mut alpha, mut beta) = (Vec::with_capacity(c.len()), Vec::with_capacity(c.len()));
        let normal = 0.5 * g * s * s;
        let (mut k, mut k_size, mut slope, mut curvature) = (normal, normal, g * s, g);
        for &ci in c {
            // 1 - c_i s rounded once (fused multiply-add): exact to half an ulp.
            let d = (-ci).mul_add(s, 1.0);
            if d.is_nan() || d <= 0.0 {
                return None;
            }
            let (a, b) = (ci / d, ci / (2.0 - d));
            let (la, lb) = (d.ln(), (2.0 - d).ln());
            k -= la + lb;
            k_size += la.abs() + lb.abs();
            slope += a - b;
            curvature += a * a + b * b;
            alpha.push(a);
            beta.push(b);
        }
        Some(Tilt {
            alpha,
            beta,
            g,
            k,
            k_size,
            slope,
            curvature,
        })
    }
}

/// The saddle point: `s` in `(0, 1/c_max)` with `K'(s) = t` (`t > 0`), found by bisection on
/// `ln d_max`, `d_max = 1 - c_max s`, down to `d_max = 1e-15` (beyond, that `s` is returned;
/// any `s` gives a valid bound, the saddle point the best).
fn saddle(c: &[f64], g: f64, t: f64) -> f64 {
    let cmax = c.iter().fold(0.0f64, |a, &b| a.max(b));
    let s_of = |ld: f64| (1.0 - ld.exp()) / cmax;
    let slope = |s: f64| Tilt::new(c, g, s).map_or(f64::INFINITY, |tl| tl.slope);
    let (mut lo, mut hi) = ((1e-15f64).ln(), 0.0f64);
    if slope(s_of(lo)) < t {
        return s_of(lo);
    }
    // K' decreases as d_max grows; 100 halvings of an interval of length 35 reach 3e-29.
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if slope(s_of(mid)) >= t {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    s_of(lo)
}

/// The bounds of the inversion's errors, in units of `M(s) / s` (module docs, method 2).
struct Errors {
    below: f64,
    above: f64,
    truncation: f64,
    rounding: f64,
}

impl Errors {
    fn total(&self) -> f64 {
        self.below + self.above + self.truncation + self.rounding
    }
}

/// Method 2 (module docs): `ln P(Z > t)` and a bound on its relative error, `t > 0`; `None`
/// when the work would exceed `cap` or the bound is not met in four tries.
fn invert(c: &[f64], g: f64, t: f64, cap: usize) -> Option<(f64, f64)> {
    let cmax = c.iter().fold(0.0f64, |a, &b| a.max(b));
    let sd = (2.0 * c.iter().map(|x| x * x).sum::<f64>() + g).sqrt();
    // Near the centre the saddle point tends to 0 and the step with it; a tilt of at least
    // 1/(2 sd) keeps the work bounded there (any tilt below 1/c_max is exact).
    let s = saddle(c, g, t).max((0.5 / sd).min(0.5 / cmax));
    let tl = Tilt::new(c, g, s)?;
    // The upper aliases are bounded with a Chernoff bound at r, halfway to the pole.
    let r = s + 0.5 * (1.0 / cmax - s);
    let tr = Tilt::new(c, g, r)?;
    // `size` estimates G = s e^{st - K(s)} P(Z > t), the normalised target; about
    // 1/(sd_s sqrt(2 pi)) at the saddle point (Lugannani and Rice), and at most s.
    let mut size = (1.0 / (tl.curvature.sqrt() * (2.0 * std::f64::consts::PI).sqrt())).min(s);
    for _ in 0..4 {
        let tol = TARGET / 8.0 * size;
        let f = step(&tl, &tr, s, r, t, tol)?;
        let n = terms_needed(&tl, s, t, f, tol)?;
        if n.saturating_mul(c.len() + 1) > cap {
            return None;
        }
        let (sum, rounding) = trapezoid(&tl, s, t, f, n);
        let errors = Errors {
            rounding,
            ..alias_and_truncation(&tl, &tr, s, r, t, f, n)
        };
        let e = errors.total();
        if sum > 0.0 && e <= 0.5 * TARGET * sum {
            // P(Z > t) = G e^{K(s) - st} / s; the logarithms add a few ulps of their sizes.
            let ln_p = sum.ln() + tl.k - s * t - s.ln();
            let ln_err = 8.0 * EPS * (tl.k_size + s * t + s.ln().abs() + sum.ln().abs() + 1.0);
            let rel = (e / (sum - e) + ln_err) * (1.0 + 4.0 * ln_err);
            return Some((ln_p, rel));
        }
        size = if sum > 0.0 { 0.5 * sum } else { size * 1e-3 };
    }
    None
}

/// The grid `f = t / T`: `T = 2 pi / h`, the aliasing period, large enough that both alias
/// bounds are below `tol`; `None` if none is.
fn step(tl: &Tilt, tr: &Tilt, s: f64, r: f64, t: f64, tol: f64) -> Option<f64> {
    // Below: s e^{st - K(s) - sT} / (1 - e^{-sT}) <= tol (with e^{-sT} <= 1/2).
    let below = (s.ln() + s * t - tl.k - tol.ln() + std::f64::consts::LN_2) / s;
    // Above: s e^{K(r) - K(s) - (r - s)(t + T)} / (1 - e^{-(r-s)T}) <= tol.
    let above = (s.ln() + tr.k - tl.k - tol.ln() + std::f64::consts::LN_2) / (r - s) - t;
    let min = (std::f64::consts::LN_2 / s).max(std::f64::consts::LN_2 / (r - s));
    let period = below.max(above).max(min) * 1.01;
    let f = t / period;
    (f.is_finite() && f > 0.0).then_some(f)
}

/// The number of terms `n` whose omitted rest, `(1/pi) int_{nh}^inf B(u) du`, is below `tol`,
/// with `B(u) = (s/u) prod_{i in A} 1 / (u^2 alpha_i beta_i) >= |M(s+iu) s / (M(s)(s+iu))|`,
/// `A` the factors below 1 at `u`: the bound is `(s/pi) prod_A x_i / (2|A|)`,
/// `x_i = 1 / (alpha_i beta_i U^2)`.
fn terms_needed(tl: &Tilt, s: f64, t: f64, f: f64, tol: f64) -> Option<usize> {
    let h = 2.0 * std::f64::consts::PI * f / t;
    let bound = |u: f64| truncation(tl, s, u);
    let mut u = h;
    while bound(u) > tol {
        u *= 2.0;
        if u / h > 1e12 {
            return None;
        }
    }
    // Halve the gap to the least sufficient U (the bound decreases in U).
    let mut lo = 0.5 * u;
    for _ in 0..30 {
        let mid = 0.5 * (lo + u);
        if bound(mid) <= tol {
            u = mid;
        } else {
            lo = mid;
        }
    }
    Some((u / h).ceil() as usize)
}

/// The bound on the omitted terms beyond `u` (see [`terms_needed`]), in logarithms. The
/// normal part multiplies the integrand by `e^{-g v^2 / 2} <= e^{-g u^2 / 2}` for `v >= u`,
/// so that factor multiplies the Laplace terms' bound; and with `B(v) <= s / v` alone,
/// `(1/pi) int_u^inf (s / v) e^{-g v^2 / 2} dv <= (s / pi) e^{-g u^2 / 2} / (g u^2)`
/// (`1/v <= v/u^2`). The smaller of the two holds.
fn truncation(tl: &Tilt, s: f64, u: f64) -> f64 {
    let lu = 2.0 * u.ln();
    let (mut ln_prod, mut count) = (0.0f64, 0usize);
    for (a, b) in tl.alpha.iter().zip(&tl.beta) {
        let lx = -(a.ln() + b.ln() + lu);
        if lx < 0.0 {
            ln_prod += lx;
            count += 1;
        }
    }
    let laplace = if count == 0 {
        f64::INFINITY
    } else {
        ln_prod.exp() / (2.0 * count as f64)
    };
    if tl.g <= 0.0 {
        return (s / std::f64::consts::PI) * laplace;
    }
    let x = 0.5 * tl.g * u * u;
    (s / std::f64::consts::PI) * laplace.min(1.0 / (2.0 * x)) * (-x).exp()
}

/// The alias and truncation bounds for the grid `f` and `n` terms.
fn alias_and_truncation(tl: &Tilt, tr: &Tilt, s: f64, r: f64, t: f64, f: f64, n: usize) -> Errors {
    let period = t / f;
    let h = 2.0 * std::f64::consts::PI / period;
    // Each bound is exact mathematics evaluated in floating point: 1% of margin covers that.
    let below = s * (s * t - tl.k - s * period).exp() / -(-s * period).exp_m1() * 1.01;
    let above =
        s * (tr.k - tl.k - (r - s) * (t + period)).exp() / -(-(r - s) * period).exp_m1() * 1.01;
    Errors {
        below,
        above,
        truncation: truncation(tl, s, n as f64 * h) * 1.01,
        rounding: 0.0,
    }
}

/// The trapezoidal sum `G = (h / 2 pi) sum_{|k| <= n} R(kh) e^{-ikht}` of the normalised
/// integrand `R(u) = M(s+iu) s / (M(s) (s+iu)) = 1 / ((1 + iu/s) prod (1 - iu alpha_i)(1 + iu beta_i))`
/// (so `R(0) = 1` and `R(-u)` is the conjugate of `R(u)`), and a bound on its rounding error.
///
/// `h = 2 pi f / t` exactly, so `ut = 2 pi k f`, reduced modulo 1 without error (a fused
/// multiply-add recovers the product's rounding); `R` is taken in modulus and argument,
/// `ln |R| = -ln|1 + iu/s| - sum (ln|1 - iu alpha_i| + ln|1 + iu beta_i|) - g u^2 / 2` and
/// `arg R = -atan(u/s) + sum (atan(u alpha_i) - atan(u beta_i)) + g s u`, so that nothing
/// overflows.
fn trapezoid(tl: &Tilt, s: f64, t: f64, f: f64, n: usize) -> (f64, f64) {
    let tau = 2.0 * std::f64::consts::PI;
    let h = tau * f / t;
    let m = tl.alpha.len() as f64;
    let (mut sum, mut comp, mut abs, mut err) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for k in 1..=n {
        let kf = k as f64;
        let u = kf * h;
        // -ln|R| and -arg R.
        let gsu = tl.g * s * u;
        let mut ln_mod = 0.5 * ((u / s) * (u / s)).ln_1p() + 0.5 * tl.g * u * u;
        let mut arg = (u / s).atan() - gsu;
        for (a, b) in tl.alpha.iter().zip(&tl.beta) {
            let (x, y) = (u * a, u * b);
            ln_mod += 0.5 * ((x * x).ln_1p() + (y * y).ln_1p());
            arg += y.atan() - x.atan();
        }
        let p = kf * f;
        let frac = (p - p.floor()) + kf.mul_add(f, -p);
        let phase = arg + tau * frac;
        let magnitude = (-ln_mod).exp();
        let x = magnitude * phase.cos();
        let next = sum + x;
        comp += if sum.abs() >= x.abs() {
            (sum - next) + x
        } else {
            (x - next) + sum
        };
        sum = next;
        abs += magnitude;
        // Relative error of the modulus: ulps of ln_mod's terms, of u (which moves ln|R| by at
        // most (2m + 1) times u's relative error), and of exp; absolute error of the phase:
        // ulps of every arctangent and of the reduced product.
        let modulus = EPS * (4.0 * ln_mod + 8.0 * m + 16.0);
        let angle = EPS * (4.0 * m + 4.0) * std::f64::consts::PI + 16.0 * EPS + 4.0 * EPS * gsu;
        err += magnitude * (modulus + angle);
    }
    let total = 1.0 + 2.0 * (sum + comp);
    let summation = 2.0 * (2.0 * EPS * (sum + comp).abs() + 4.0 * n as f64 * EPS * EPS * abs);
    let scale = f / t;
    (
        scale * total,
        scale * (2.0 * err + summation + 4.0 * EPS * total.abs()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capped_inversion_falls_back_to_the_chernoff_bound() {
        // Two equal scales (no partial fractions) and no room to work: the enclosure is
        // [0, bound], and the bound is above the exact e^-t (2 + t) / 4.
        let c = [1.0, 1.0];
        let t: f64 = 40.0;
        let exact = (-t).exp() * (2.0 + t) / 4.0;
        let e = upper_positive(&c, 0.0, t, 10);
        assert_eq!(e.lo, 0.0);
        assert!(e.hi >= exact && e.hi == chernoff(&c, t), "{e:?}");
        // With room, a value.
        let e = upper_positive(&c, 0.0, t, WORK_CAP);
        assert!(e.lo <= exact && exact <= e.hi && e.hi - e.lo <= 2.0 * TARGET * e.hi);
    }

    #[test]
    fn partial_fractions_give_up_on_close_scales() {
        // Scales 1 and 1 + 1e-12: the two terms are about +-1e12 and cancel to 13 digits.
        assert!(partial_fractions(&[1.0, 1.0 + 1e-12], 5.0).is_none_or(|(_, rel)| rel > TARGET));
        // ... and the inversion takes over: e^-t (2 + t) / 4 to its stated error.
        let e = upper(&[1.0, 1.0 + 1e-12], 5.0);
        let exact = (-5.0f64).exp() * 7.0 / 4.0;
        assert!(
            ((e.lo + e.hi) / 2.0 - exact).abs() <= 1e-10 * exact,
            "{e:?}"
        );
    }

    #[test]
    fn the_saddle_point_solves_its_equation() {
        let c = [3.0, 1.0, 0.5];
        for t in [0.1, 1.0, 10.0, 1000.0] {
            let s = saddle(&c, 0.0, t);
            let k1 = Tilt::new(&c, 0.0, s).expect("inside").slope;
            assert!((k1 - t).abs() <= 1e-9 * t, "t {t}: K'({s}) = {k1}");
        }
    }
}
