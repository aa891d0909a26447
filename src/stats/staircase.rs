//! Staircase noise: the optimal absolutely continuous data-independent noise (Soria-Comas and Domingo-Ferrer; Geng and Viswanath).
//!
//! For a query of sensitivity `Δ` and privacy parameter `eps`, with `b = e^{-eps}` and a
//! parameter `γ ∈ [0, 1]`, the staircase density (Geng and Viswanath, "The optimal mechanism
//! in differential privacy", eq. for `f_γ`; the slides "Optimal A. C. Data-Independent Noise"
//! write the same family with `d = γΔ` and `M = a(γ)`) is
//!
//! ```text
//! f(x) = a(γ) b^k      for |x| in [kΔ, (k+γ)Δ)
//! f(x) = a(γ) b^{k+1}  for |x| in [(k+γ)Δ, (k+1)Δ),     k = 0, 1, 2, ...
//! a(γ) = (1-b) / (2Δ (γ + (1-γ) b))
//! ```
//!
//! Every closed form here is written with `1 - b = -expm1(-eps)` and powers `b^k = e^{-eps k}`,
//! and arranged as sums of positive terms, so it stays accurate from `eps = 1e-6` (`b → 1`)
//! to `eps = 700` (`b → 0`). `γ = 0` and `γ = 1` give the same law (`a(0) b^{k+1} = a(1) b^k`
//! on `[kΔ, (k+1)Δ)`); the computations use `γ = 1` for both, which keeps every denominator
//! positive even when `b` underflows to 0.
//!
//! The grid functions ([`grid_pmf`], [`grid_cdf`], [`grid_variance`]) describe the discrete
//! staircase on the integers that a grid sampler draws from.

use super::{Epsilon, ParamError, Positive, Probability};

/// The staircase distribution for epsilon `eps`, sensitivity `delta`, parameter `gamma` in [0, 1].
///
/// Adding a draw to a query of sensitivity `delta` is `eps`-differentially private for every
/// `gamma`: the density changes by at most a factor `e^eps` under a shift of at most `delta`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Staircase {
    eps: f64,
    sensitivity: f64,
    gamma: f64,
}

/// `(b, 1 - b)` for `b = e^{-eps}`, the second from `expm1` so it is exact to rounding for tiny eps.
fn b_and_m(eps: f64) -> (f64, f64) {
    ((-eps).exp(), -(-eps).exp_m1())
}

/// `b^n = e^{-eps n}` for a (possibly huge) whole number `n` held as a float.
fn pow_b(eps: f64, n: f64) -> f64 {
    (-eps * n).exp()
}

impl Staircase {
    /// The staircase law with the given `gamma`; refuses a `gamma` outside `[0, 1]` (or NaN).
    ///
    /// The refusal is [`ParamError::InvalidProbability`], the closest existing variant
    /// (`gamma` is the fraction of each step at the higher level); unlike a [`Probability`],
    /// the end points 0 and 1 are accepted here, and both give the same law.
    pub fn new(eps: Epsilon, sensitivity: Positive, gamma: f64) -> Result<Self, ParamError> {
        if (0.0..=1.0).contains(&gamma) {
            Ok(Self {
                eps: eps.get(),
                sensitivity: sensitivity.get(),
                gamma,
            })
        } else {
            Err(ParamError::InvalidProbability)
        }
    }

    /// The variance-minimising staircase: `gamma = optimal_gamma(eps)`.
    ///
    /// For `eps` above about 2200 the optimal `gamma ≈ (b/2)^{1/3}` underflows to 0, which
    /// would select the `gamma = 0` law (uniform steps) instead of the limit the optimum tends
    /// to (a point mass at 0); there the smallest positive normal float is used instead, so
    /// the variance is (rounded to) 0 as it should be, and the density on the flat top,
    /// `1/(2Δγ)`, may overflow to infinity (not a panic).
    pub fn optimal(eps: Epsilon, sensitivity: Positive) -> Self {
        Self {
            eps: eps.get(),
            sensitivity: sensitivity.get(),
            gamma: optimal_gamma(eps).max(f64::MIN_POSITIVE),
        }
    }

    /// The parameter `gamma` in `[0, 1]` as given (or as chosen by [`Staircase::optimal`]).
    pub fn gamma(&self) -> f64 {
        self.gamma
    }

    /// The privacy parameter epsilon.
    pub fn eps(&self) -> f64 {
        self.eps
    }

    /// The sensitivity `Δ`: the width of one step of the staircase.
    pub fn sensitivity(&self) -> f64 {
        self.sensitivity
    }

    /// `gamma` as used in the formulas: 0 is replaced by 1, which gives the same law.
    fn gamma_eff(&self) -> f64 {
        if self.gamma > 0.0 {
            self.gamma
        } else {
            1.0
        }
    }

    /// `D = γ + (1-γ) b`, the normalising factor of `a(γ)`; at least `γ > 0`.
    fn big_d(&self, b: f64) -> f64 {
        let g = self.gamma_eff();
        g + (1.0 - g) * b
    }

    /// The density at `x` (NaN for NaN, 0 at ±infinity).
    pub fn pdf(&self, x: f64) -> f64 {
        if x.is_nan() {
            return f64::NAN;
        }
        let u = x.abs() / self.sensitivity;
        if !u.is_finite() {
            return 0.0;
        }
        let (b, m) = b_and_m(self.eps);
        let k = u.floor();
        let r = u - k;
        // Geng and Viswanath: f(x) = a b^k on [kΔ, (k+γ)Δ), a b^{k+1} on [(k+γ)Δ, (k+1)Δ),
        // a = (1-b) / (2Δ (γ + (1-γ) b)).
        let level = if r < self.gamma_eff() { k } else { k + 1.0 };
        m * pow_b(self.eps, level) / (2.0 * self.sensitivity * self.big_d(b))
    }

    /// The survival function `P(X > x)`, accurate (to relative rounding) in the upper tail.
    ///
    /// For `x < 0` it is `1 - P(X > -x)` by symmetry. NaN gives NaN.
    pub fn sf(&self, x: f64) -> f64 {
        if x.is_nan() {
            return f64::NAN;
        }
        if x < 0.0 {
            1.0 - self.upper_tail(-x)
        } else {
            self.upper_tail(x)
        }
    }

    /// `P(X > t)` for `t >= 0`: at most 1/2, a sum of positive terms.
    fn upper_tail(&self, t: f64) -> f64 {
        let u = t / self.sensitivity;
        if !u.is_finite() {
            return 0.0;
        }
        let (b, m) = b_and_m(self.eps);
        let g = self.gamma_eff();
        let d = self.big_d(b);
        let k = u.floor();
        let r = u - k;
        // Each step [kΔ, (k+1)Δ) on one side carries mass a Δ b^k (γ + (1-γ) b) = (1-b) b^k / 2,
        // so everything from step k+1 on carries b^{k+1} / 2. Inside step k, beyond u = k + r:
        //   r < γ:  (1-b) b^k ((γ - r) + (1-γ) b) / (2D)
        //   r >= γ: (1-b) b^{k+1} (1 - r) / (2D)
        // so P(X > t) = b^k/2 [b + (1-b)((γ-r) + (1-γ)b)/D]   or   b^{k+1}/2 [1 + (1-b)(1-r)/D].
        let bk = pow_b(self.eps, k);
        if r < g {
            0.5 * bk * (b + m * ((g - r) + (1.0 - g) * b) / d)
        } else {
            0.5 * bk * b * (1.0 + m * (1.0 - r) / d)
        }
    }

    /// The distribution function `P(X <= x)`, exact closed form.
    ///
    /// For `x < 0` it is the upper tail `P(X > -x)` (symmetry), so the lower tail keeps full
    /// relative accuracy; for `x >= 0` it is `1 - P(X > x)` with `P(X > x) <= 1/2`.
    pub fn cdf(&self, x: f64) -> f64 {
        if x.is_nan() {
            return f64::NAN;
        }
        if x < 0.0 {
            self.upper_tail(-x)
        } else {
            1.0 - self.upper_tail(x)
        }
    }

    /// The variance (closed form).
    ///
    /// With `m = 1 - b`, `E1 = γ² + b(1-γ²)`, `E2 = γ³ + b(1-γ³)`, `D = γ + (1-γ) b`:
    /// `Var = Δ² [ b(1+b)/m² + (b/m) E1/D + E2/(3D) ]`. It equals `2Δ²/eps² - Δ²/12 + O(eps²)`
    /// for small eps (at `γ*`), and `Δ² (b/2)^{2/3} (1 + o(1))` at `γ*` for large eps.
    pub fn variance(&self) -> f64 {
        let (b, m) = b_and_m(self.eps);
        let g = self.gamma_eff();
        let d = self.big_d(b);
        // E X² = 2 Σ_k a b^k [∫_k^{k+γ} x² dx + b ∫_{k+γ}^{k+1} x² dx]   (Δ = 1), with
        //   ∫_k^{k+γ} x² = k²γ + kγ² + γ³/3,  ∫_{k+γ}^{k+1} x² = k²(1-γ) + k(1-γ²) + (1-γ³)/3,
        //   Σ b^k = 1/m,  Σ k b^k = b/m²,  Σ k² b^k = b(1+b)/m³,  2a = m/D:
        // E X² = b(1+b)/m² + (b/m) E1/D + E2/(3D).
        let e1 = g * g + b * (1.0 - g * g);
        let e2 = g * g * g + b * (1.0 - g * g * g);
        let unit = b * (1.0 + b) / (m * m) + (b / m) * (e1 / d) + e2 / (3.0 * d);
        self.sensitivity * self.sensitivity * unit
    }

    /// The smallest `h` with `P(|X| <= h) >= confidence` (closed-form inverse within a step).
    ///
    /// Infinite only when `-ln(1 - confidence)/eps` overflows.
    pub fn half_width(&self, confidence: Probability) -> f64 {
        let (b, m) = b_and_m(self.eps);
        let g = self.gamma_eff();
        let d = self.big_d(b);
        // P(|X| > h) = 2 P(X > h) = q := 1 - confidence. At the start of step k the two-sided
        // tail is b^k, so with q = b^w, w = -ln(q)/eps, the answer lies in step k = floor(w),
        // at u = k + r with f = w - k in [0, 1), t = 1 - f, q / b^{k+1} = e^{eps t}.
        let big_l = -(-confidence.get()).ln_1p();
        let w = big_l / self.eps;
        if !w.is_finite() {
            return f64::INFINITY;
        }
        let k = w.floor();
        let f = w - k;
        let t = 1.0 - f;
        // Inner part (r <= γ): b^k [b + (1-b)((γ-r) + (1-γ) b)/D] = q solves to
        //   r = D (1 - e^{-eps f}) / (1 - b)   (using q/b^k - b = e^{-eps f} - b).
        let inner = d * (-(-self.eps * f).exp_m1()) / m;
        // Outer part (r > γ): b^{k+1} [1 + (1-b)(1-r)/D] = q solves to
        //   r = 1 - D (e^{eps t} - 1) / (1 - b).
        // The inner line is the steeper one, so its root exceeds γ exactly when the answer
        // lies in the outer part.
        let r = if inner <= g {
            inner
        } else {
            1.0 - d * (self.eps * t).exp_m1() / m
        };
        (k + r.clamp(0.0, 1.0)) * self.sensitivity
    }
}

/// The variance-minimising `gamma` for `eps` (independent of the sensitivity).
///
/// Geng and Viswanath give `γ* = -b/(1-b) + (b - 2b² + 2b⁴ - b⁵)^{1/3} / (2^{1/3} (1-b)²)`.
/// Since `b - 2b² + 2b⁴ - b⁵ = b (1-b)³ (1+b)` this is `γ* = (c - b)/(1-b)` with
/// `c = (b(1+b)/2)^{1/3}`, and `c³ - b³ = b (1-b)(1+2b)/2` removes the cancellation:
/// `γ* = b (1+2b) / (2 (c² + cb + b²))`. (Checked in `tests/statistics/stats_staircase.rs` against a
/// golden-section minimisation of [`Staircase::variance`]; the two agree.)
/// Limits: `γ* → 1/2 - eps/12` as `eps → 0`, `γ* ≈ (b/2)^{1/3}` as `eps → ∞`; the value is
/// always in `[0, 1/2]`, and 0 only once `e^{-eps/3}` underflows (eps above about 2200).
pub fn optimal_gamma(eps: Epsilon) -> f64 {
    let e = eps.get();
    let b = (-e).exp();
    // With ρ = b/c = b^{2/3} (2/(1+b))^{1/3} and b/c² = b^{1/3} (2/(1+b))^{2/3}:
    //   γ* = b(1+2b) / (2c² (1 + ρ + ρ²)) = b^{1/3} (2/(1+b))^{2/3} (1+2b) / (2 (1 + ρ + ρ²)),
    // written with b^{1/3} = e^{-eps/3} so nothing divides by zero when b underflows.
    let s = 2.0 / (1.0 + b);
    let b13 = (-e / 3.0).exp();
    let rho = b13 * b13 * s.cbrt();
    b13 * s.cbrt() * s.cbrt() * (1.0 + 2.0 * b) / (2.0 * (1.0 + rho + rho * rho))
}

/// The variance of Laplace noise for `eps` and `sensitivity`: `2 Δ²/eps²`.
pub fn laplace_variance(eps: Epsilon, sensitivity: Positive) -> f64 {
    // Laplace(0, s) has variance 2 s², with s = Δ/eps (slides, "V_Laplace = 2 (Δf/ε)²").
    let s = sensitivity.get() / eps.get();
    2.0 * s * s
}

/// The half-width `h` with `P(|N| <= h) = confidence` for `N ~ Laplace(Δ/eps)`: `Δ/eps ln(1/(1-c))`.
pub fn laplace_half_width(eps: Epsilon, sensitivity: Positive, confidence: Probability) -> f64 {
    // P(|N| > h) = e^{-h eps/Δ} = 1 - c  =>  h = -(Δ/eps) ln(1 - c).
    sensitivity.get() / eps.get() * -(-confidence.get()).ln_1p()
}

/// The grid staircase, with `l` grid points per sensitivity unit and `g` of them in the inner
/// part, normalised so `G >= 1`: `G = 0` gives the same law as `G = L` (all weights times `b`).
/// Returns `(G, D_g = G + (L-G) b, Z m)` with `Z = Σ_j w(j)` and `m = 1 - b`, or `None` if
/// `l == 0` or `g > l`.
fn grid_setup(eps: f64, l: u64, g: u64) -> Option<(f64, f64, f64)> {
    if l == 0 || g > l {
        return None;
    }
    let (b, m) = b_and_m(eps);
    let lf = l as f64;
    let gf = if g == 0 { lf } else { g as f64 };
    // Σ_{n>=0} w(n) = Σ_k b^k (G + (L-G) b) = D_g / m; Z = 2 D_g/m - w(0), w(0) = 1 (G >= 1).
    let dg = gf + (lf - gf) * b;
    Some((gf, dg, 2.0 * dg - m))
}

/// The probability of the grid point `j` (value `j Δ / l`) under the grid staircase.
///
/// `P(j) ∝ b^{floor(|j|/L)}` if `|j| mod L < G`, else `b^{floor(|j|/L)+1}`, over all integers
/// `j`. NaN if `l == 0` or `g > l`. See [`grid_cdf`].
pub fn grid_pmf(eps: Epsilon, l: u64, g: u64, j: i64) -> f64 {
    let e = eps.get();
    let Some((gf, _, zm)) = grid_setup(e, l, g) else {
        return f64::NAN;
    };
    let (_, m) = b_and_m(e);
    let n = j.unsigned_abs();
    let k = (n / l) as f64;
    let r = (n % l) as f64;
    // P(j) = w(j) / Z = w(j) m / (Z m), w(j) = b^k or b^{k+1}.
    let level = if r < gf { k } else { k + 1.0 };
    pow_b(e, level) * m / zm
}

/// `P(J >= n)` for `n >= 1` on the grid: at most 1/2, a sum of positive terms.
fn grid_upper_tail(e: f64, l: u64, gf: f64, dg: f64, zm: f64, n: u64) -> f64 {
    let (b, m) = b_and_m(e);
    let lf = l as f64;
    let k = (n / l) as f64;
    let r = (n % l) as f64;
    // Σ_{i >= n} w(i) = b^k [(G-r)^+ + (L - max(r, G)) b] + b^{k+1} D_g / m; times m / (Z m).
    let within = if r < gf {
        (gf - r) + (lf - gf) * b
    } else {
        (lf - r) * b
    };
    pow_b(e, k) * (m * within + b * dg) / zm
}

/// `P(J <= j)` for the grid staircase with `l` points per sensitivity unit, `g` inner points.
///
/// Exact closed form: for `j < 0` it is the upper tail `P(J >= -j)` (symmetry), so the lower
/// tail keeps full relative accuracy; for `j >= 0` it is `1 - P(J >= j + 1)`. NaN if `l == 0`
/// or `g > l`. As `l → ∞` with `g/l → γ`, `J Δ / l` converges in law to the continuous
/// [`Staircase`] with that `γ` (the discretisation moves each step boundary by less than one
/// grid point, so the distribution functions differ by `O(1/l)`).
pub fn grid_cdf(eps: Epsilon, l: u64, g: u64, j: i64) -> f64 {
    let e = eps.get();
    let Some((gf, dg, zm)) = grid_setup(e, l, g) else {
        return f64::NAN;
    };
    if j < 0 {
        grid_upper_tail(e, l, gf, dg, zm, j.unsigned_abs())
    } else {
        // j >= 0, so j + 1 <= 2^63 fits a u64.
        1.0 - grid_upper_tail(e, l, gf, dg, zm, j.unsigned_abs() + 1)
    }
}

/// The variance of the grid staircase `J`, in grid steps squared (multiply by `(Δ/l)²`).
///
/// NaN if `l == 0` or `g > l`. Converges, times `(Δ/l)²`, to [`Staircase::variance`] with
/// `γ = g/l` as `l → ∞`.
pub fn grid_variance(eps: Epsilon, l: u64, g: u64) -> f64 {
    let e = eps.get();
    let Some((gf, _, zm)) = grid_setup(e, l, g) else {
        return f64::NAN;
    };
    let (b, m) = b_and_m(e);
    let lf = l as f64;
    // Σ_{r=0}^{G-1} r = G(G-1)/2, Σ_{r=G}^{L-1} r = (L-G)(L+G-1)/2, Σ_{r<n} r² = (n-1)n(2n-1)/6.
    let s1_in = gf * (gf - 1.0) / 2.0;
    let s1_out = (lf - gf) * (lf + gf - 1.0) / 2.0;
    let s2 = |n: f64| (n - 1.0) * n * (2.0 * n - 1.0) / 6.0;
    let s2_in = s2(gf);
    let s2_out = s2(lf) - s2_in;
    // Σ_{n>=0} n² w(n) = Σ_k b^k [Σ_{r<G} (kL+r)² + b Σ_{r=G}^{L-1} (kL+r)²]
    //   = L² (G + b(L-G)) b(1+b)/m³ + 2L (S1_in + b S1_out) b/m² + (S2_in + b S2_out)/m,
    // and E J² = 2 Σ_{n>=1} n² w(n) / Z = 2 m Σ / (Z m).
    let sum = lf * lf * (gf + b * (lf - gf)) * b * (1.0 + b) / (m * m * m)
        + 2.0 * lf * (s1_in + b * s1_out) * b / (m * m)
        + (s2_in + b * s2_out) / m;
    2.0 * m * sum / zm
}
