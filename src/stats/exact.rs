//! The exact distribution of a BLUE's error `theta-hat - theta = A N = sum_i a_i N_i` (Xiao and Xiong 2012, section 4), by FFT or Monte Carlo, and the posterior probabilities and credible intervals it gives (section 5.2).
//!
//! `N_i ~ Laplace(b_i)` independent with `b_i = S_i / alpha_i`, so `Z = A N` is a sum of
//! Laplace variables of scales `c_i = |a_i| b_i`, symmetric about 0. Under the paper's flat
//! prior the posterior is `theta = theta-hat - Z` (Lemma 4.1). A Gaussian release (zCDP) has
//! `N_j ~ Normal(0, sigma_j^2)` instead: its terms add up to one normal variable of variance
//! `g = sum_j a_j^2 sigma_j^2`. With only Gaussian releases `Z` is that normal variable and
//! every probability is the normal law's (no convolution, no grid); with both laws the
//! characteristic function gains the factor `e^{-g t^2 / 2}`, which the three bounds below
//! allow for (it is at most 1, so bounds 2 and 3 hold unchanged with the Laplace terms' `c_max`:
//! convolving with the normal density does not raise the Lipschitz constant of a density;
//! the Chernoff bound of 1 takes the normal's `e^{g s^2 / 2}`).
//!
//! [`NoiseSum::fft`] is Algorithm 2 done in the frequency domain: the convolution of all the
//! terms is the product of their characteristic functions (eq. 57,
//! `phi(t) = prod_i 1 / (1 + c_i^2 t^2)`), sampled at the `L` frequencies of a grid of step `h`
//! and inverted with one FFT (rustfft). Each grid value is the exact mass of its bin
//! `[jh - h/2, jh + h/2)` (the bin's indicator multiplies `phi` by `sinc(t h / 2)`), up to three
//! stated errors whose sum is returned as `gamma` ([`NoiseSum::error_bound`]):
//! 1. wrap-around: mass beyond the grid's half-width `T` folds back in; bounded by the Chernoff
//!    bound `P(|Z| >= T) <= 2 min_s e^{-sT} prod_i 1/(1 - c_i^2 s^2)`;
//! 2. frequency truncation: the terms `|k| >= L/2` left out of the inverse transform; bounded
//!    for any interval's probability by `sum_{|k| >= L/2} |phi(t_k) sinc_k| min(1, 1/(L |sin(pi k/L)|))`
//!    (summed to `8L` with the 8 widest terms' bound on `phi`, an integral bound beyond);
//! 3. interpolation of the CDF inside a bin: `h^2 / (16 c_max^2)` (the density of `Z` is
//!    Lipschitz with constant `1 / (2 c_max^2)`, that of its widest term);
//!
//! plus a round-off allowance of `64 log2(L) f64::EPSILON` for the FFT. Masses below 0 from
//! round-off are clamped to 0 (they are below the allowance) so that every reported
//! probability is in `[0, 1]`; tails are summed from the far end, so `P(Z <= z)` for `z < 0`
//! is accurate to `gamma` in absolute terms (not relative: a tail far below `gamma` is
//! reported as about 0).
//!
//! Probabilities far in a tail, where `gamma` is larger than the probability itself, come from
//! [`super::tail`] instead, to a stated relative error or as a bound: [`NoiseSum::upper_tail`]
//! and the [`Posterior`] probabilities ([`Posterior::greater`], ...) use it at every distance,
//! and [`NoiseSum::central_half_width`] at levels whose tail mass is not well above `gamma`.
//!
//! [`NoiseSum::monte_carlo`] is Algorithm 1 with the sample symmetrised (`|Z|` is sorted); its
//! `gamma` is the DKW bound `sqrt(ln(2 / 1e-6) / (2 n))`, which holds with probability
//! `1 - 1e-6`. [`NoiseSum::auto`] compares the two costs (section 4.4).

use rand::Rng;
use rustfft::num_complex::Complex;
use rustfft::FftPlanner;

use super::laplace;
use super::tail::{self, Enclosure};
use super::Probability;

/// Grid steps per standard deviation of `Z`.
const STEPS_PER_SD: f64 = 2048.0;
/// The target for the wrap-around mass bound.
const WRAP_TARGET: f64 = 1e-15;
/// The largest FFT length (2^22 points, 64 MiB of complex numbers).
const MAX_LEN: usize = 1 << 22;
/// The false-positive rate of the Monte Carlo DKW bound.
const MC_ALPHA: f64 = 1e-6;
/// Default Monte Carlo sample size (the paper's `m_s = 10^6`).
pub const MC_SAMPLES: usize = 1_000_000;

/// The law of a release's noise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Law {
    /// Laplace of scale `b` (pure differential privacy).
    #[default]
    Laplace,
    /// Normal of standard deviation `sigma` (a Gaussian release under zCDP).
    Normal,
}

/// One term `a_i N_i` of the sum: the BLUE weight, the scale of the noise `N_i` and its law.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Term {
    /// The weight `a_i` (from [`super::blue::Estimate::weights`]).
    pub weight: f64,
    /// The scale of `N_i`: `b_i = S_i / alpha_i` for Laplace noise, the standard deviation
    /// `sigma_i` for normal noise.
    pub scale: f64,
    /// The law of `N_i`.
    pub law: Law,
}

/// The non-zero scales of an error `Z = sum_i Laplace(c_i) + sum_j Normal(0, d_j^2)`, all
/// independent: `c_i = |a_i| b_i` and `d_j = |a_j| sigma_j`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scales {
    /// The Laplace terms' scales `c_i`.
    pub laplace: Vec<f64>,
    /// The normal terms' standard deviations `d_j`.
    pub normal: Vec<f64>,
}

impl Scales {
    /// An error of Laplace terms only.
    pub fn laplace(c: Vec<f64>) -> Scales {
        Scales {
            laplace: c,
            normal: Vec::new(),
        }
    }

    /// Whether `Z = 0`.
    pub fn is_empty(&self) -> bool {
        self.laplace.is_empty() && self.normal.is_empty()
    }

    /// The variance of the normal part, `g = sum_j d_j^2`.
    pub fn normal_variance(&self) -> f64 {
        self.normal.iter().map(|d| d * d).sum()
    }

    /// `Var(Z) = 2 sum_i c_i^2 + sum_j d_j^2`.
    pub fn variance(&self) -> f64 {
        2.0 * self.laplace.iter().map(|c| c * c).sum::<f64>() + self.normal_variance()
    }

    /// `P(Z > t)` ([`tail::upper_mixed`]).
    pub fn upper(&self, t: f64) -> Enclosure {
        tail::upper_mixed(&self.laplace, self.normal_variance(), t)
    }

    /// The least `w` at which `P(Z > w) <= target` is certified ([`tail::quantile_mixed`]).
    pub fn quantile(&self, target: f64) -> f64 {
        tail::quantile_mixed(&self.laplace, self.normal_variance(), target)
    }

    /// These scales multiplied by `k >= 0`.
    pub fn times(&self, k: f64) -> Scales {
        let keep = |v: &Vec<f64>| v.iter().map(|x| k * x).filter(|x| *x > 0.0).collect();
        Scales {
            laplace: keep(&self.laplace),
            normal: keep(&self.normal),
        }
    }
}

/// Why a distribution could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExactError {
    /// A weight is not finite, a scale is NaN or negative, or a non-zero weight meets an
    /// infinite scale.
    #[error("term {0} has a non-finite weight or a non-finite or negative scale")]
    InvalidTerm(usize),
    /// The grid would need more than 2^22 points (scales spanning too many orders of magnitude).
    #[error("the grid would need more than 2^22 points")]
    GridTooLarge,
    /// A Monte Carlo sample size of 0.
    #[error("a Monte Carlo sample needs at least one draw")]
    NoSamples,
}

/// How the distribution was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// All weights are 0: `Z = 0`.
    Degenerate,
    /// Algorithm 2 by FFT, with this many grid points.
    Fft {
        /// The FFT length `L`.
        points: usize,
    },
    /// Only Gaussian releases: the normal law, in closed form.
    Normal,
    /// Algorithm 1 with this many draws.
    MonteCarlo {
        /// The sample size `m_s`.
        samples: usize,
    },
}

#[derive(Debug, Clone)]
enum Repr {
    Degenerate,
    /// Bins of width `h` centred on `jh`, `j = -K..=K`; only the lower half is kept (symmetry).
    /// Normal of this standard deviation (Gaussian releases only).
    Normal {
        sd: f64,
    },
    Grid {
        h: f64,
        /// Cumulative mass at the edges `e_i = (i - K - 1/2) h`, `i = 0..=K` (the last is `-h/2`).
        left: Vec<f64>,
    },
    /// Sorted `|Z|` draws.
    Sample {
        abs: Vec<f64>,
    },
}

/// The distribution of `Z = sum_i a_i N_i`.
#[derive(Debug, Clone)]
pub struct NoiseSum {
    repr: Repr,
    method: Method,
    gamma: f64,
    variance: f64,
    /// The non-zero scales of the terms, for the tails of [`super::tail`].
    scales: Scales,
}

/// The non-zero scales of the terms, validated: what [`super::tail`] and [`super::combine`]
/// take.
pub fn scales_of(terms: &[Term]) -> Result<Scales, ExactError> {
    scales(terms)
}

/// The non-zero scales `|a_i| b_i` and `|a_j| sigma_j`, validated.
fn scales(terms: &[Term]) -> Result<Scales, ExactError> {
    let mut out = Scales::default();
    for (i, t) in terms.iter().enumerate() {
        if !t.weight.is_finite() || t.scale.is_nan() || t.scale < 0.0 {
            return Err(ExactError::InvalidTerm(i));
        }
        if t.weight == 0.0 {
            // A zero weight drops the term whatever its scale (even an infinite one, from a
            // measurement whose weight `(alpha/S)^2` underflowed).
            continue;
        }
        let c = t.weight.abs() * t.scale;
        if !c.is_finite() {
            return Err(ExactError::InvalidTerm(i));
        }
        if c > 0.0 {
            match t.law {
                Law::Laplace => out.laplace.push(c),
                Law::Normal => out.normal.push(c),
            }
        }
    }
    Ok(out)
}

/// Chernoff bound on `P(|Z| >= x)`:
/// `2 min_s e^{-s x + g s^2 / 2} prod_i 1/(1 - c_i^2 s^2)`, `0 < s < 1/c_max`,
/// minimised over a grid of 64 values of `s` (any `s` gives a valid bound). Works in logs.
fn tail_bound(c: &[f64], g: f64, x: f64) -> f64 {
    let cmax = c.iter().fold(0.0f64, |a, &b| a.max(b));
    let mut best = f64::INFINITY;
    for k in 1..64 {
        let s = k as f64 / 64.0 / cmax;
        // ln E e^{sZ} = g s^2 / 2 - sum ln(1 - c^2 s^2) (Laplace mgf 1/(1 - c^2 s^2)).
        let lmgf: f64 =
            0.5 * g * s * s + c.iter().map(|ci| -(-(ci * s).powi(2)).ln_1p()).sum::<f64>();
        best = best.min(-s * x + lmgf);
    }
    (2.0 * best.exp()).min(1.0)
}

impl NoiseSum {
    /// Algorithm 2 (in the frequency domain, see the module docs) for the given terms.
    pub fn fft(terms: &[Term]) -> Result<NoiseSum, ExactError> {
        let scales = scales(terms)?;
        if scales.laplace.is_empty() {
            return Ok(Self::normal(scales));
        }
        let g = scales.normal_variance();
        let c = &scales.laplace;
        let (h, len) = Self::grid(c, g)?;
        let variance = scales.variance();
        let cmax = c.iter().fold(0.0f64, |a, &b| a.max(b));
        let half = len / 2;
        let t_of = |k: usize| 2.0 * std::f64::consts::PI * k as f64 / (len as f64 * h);
        // phi_g(t_k) = phi(t_k) * sinc(t_k h / 2): the characteristic function of Z plus a
        // uniform on [-h/2, h/2], whose density at jh times h is the mass of bin j.
        // phi(t) = e^{-g t^2 / 2} prod 1/(1 + c_i^2 t^2) (eq. 57 with the normal part),
        // decreasing in |t|: stop at underflow.
        let mut spec = vec![Complex::new(0.0, 0.0); len];
        for k in 0..half {
            let t = t_of(k);
            let gauss = 0.5 * g * t * t;
            let mut denom = 1.0f64;
            for ci in c {
                denom *= 1.0 + (ci * t).powi(2);
                if denom > 1e300 {
                    break;
                }
            }
            if denom > 1e300 || gauss > 690.0 {
                break;
            }
            let x = t * h / 2.0;
            let sinc = if k == 0 { 1.0 } else { x.sin() / x };
            let v = sinc * (-gauss).exp() / denom / len as f64;
            spec[k] = Complex::new(v, 0.0);
            if k > 0 {
                spec[len - k] = Complex::new(v, 0.0);
            }
        }
        // p_j = (1/L) sum_k phi_g(t_k) e^{-i t_k j h}; phi_g is real and even, so p is real and
        // symmetric and the sign of the exponent does not matter.
        FftPlanner::<f64>::new()
            .plan_fft_inverse(len)
            .process(&mut spec);
        // Bin j >= 0 is spec[j], bin -j is spec[len - j]; clamp round-off negatives (module docs).
        let kmax = half - 1;
        let mass = |j: usize| spec[j].re.max(0.0);
        let mut left = Vec::with_capacity(kmax + 1);
        let mut acc = 0.0;
        // Edge i sits below bin -(kmax - i): e_i = (i - kmax - 1/2) h; left[i] = mass of bins < -(kmax - i).
        left.push(0.0);
        for i in 1..=kmax {
            acc += mass(kmax - i + 1);
            left.push(acc);
        }
        let gamma = Self::fft_error(c, g, h, len, cmax);
        Ok(NoiseSum {
            repr: Repr::Grid { h, left },
            method: Method::Fft { points: len },
            gamma,
            variance,
            scales,
        })
    }

    /// The distribution of an error with no Laplace term: normal (or 0).
    fn normal(scales: Scales) -> NoiseSum {
        if scales.is_empty() {
            return Self::degenerate();
        }
        let variance = scales.variance();
        NoiseSum {
            repr: Repr::Normal {
                sd: variance.sqrt(),
            },
            method: Method::Normal,
            gamma: 0.0,
            variance,
            scales,
        }
    }

    /// The grid step `h = sd / 2048` and the power-of-two length `L` whose half-width
    /// `T = (L/2 - 1) h` has a Chernoff tail below `1e-15`.
    fn grid(c: &[f64], g: f64) -> Result<(f64, usize), ExactError> {
        let sd = (2.0 * c.iter().map(|x| x * x).sum::<f64>() + g).sqrt();
        let h = sd / STEPS_PER_SD;
        let mut len = 1024usize;
        loop {
            let t = (len / 2 - 1) as f64 * h;
            if tail_bound(c, g, t) <= WRAP_TARGET {
                return Ok((h, len));
            }
            if len >= MAX_LEN {
                return Err(ExactError::GridTooLarge);
            }
            len *= 2;
        }
    }

    /// `gamma` for the FFT method: the sum of the three bounds of the module docs plus round-off.
    fn fft_error(c: &[f64], g: f64, h: f64, len: usize, cmax: f64) -> f64 {
        let t_half = (len / 2 - 1) as f64 * h;
        // 1. Wrap-around (beyond the edge of the outermost bin).
        let wrap = tail_bound(c, g, t_half);
        // 2. Frequency truncation, with |phi| bounded by the 8 widest terms and the normal
        // part.
        let mut top: Vec<f64> = c.to_vec();
        top.sort_by(|a, b| b.total_cmp(a));
        top.truncate(8);
        let lf = len as f64;
        let phi_bound = |t: f64| {
            (-0.5 * g * t * t).exp()
                * top
                    .iter()
                    .map(|ci| 1.0 / (1.0 + (ci * t).powi(2)))
                    .product::<f64>()
        };
        let mut freq = 0.0;
        for k in len / 2..8 * len {
            let t = 2.0 * std::f64::consts::PI * k as f64 / (lf * h);
            let x = t * h / 2.0;
            let sinc = (x.sin() / x).abs();
            let fold = (std::f64::consts::PI * k as f64 / lf).sin().abs();
            let w = if fold * lf > 1.0 {
                1.0 / (fold * lf)
            } else {
                1.0
            };
            freq += 2.0 * phi_bound(t) * sinc * w;
        }
        // Beyond 8L, period by period (the normal factor, at most 1, left out): in
        // [jL, (j+1)L) (j >= 8) |phi sinc| <= 2 / (h c_max^2 t_{jL}^3)
        // with t_{jL} = 2 pi j / h, and the fold weights sum to at most 3 + ln L
        // (1/(L sin(pi k/L)) <= 1/(2k) on each half period); sum_{j >= 8} 1/j^3 <= 1/98.
        let beyond = 2.0 * h * h / (cmax * cmax * (2.0 * std::f64::consts::PI).powi(3))
            * (3.0 + lf.ln())
            / 98.0;
        // 3. Linear interpolation of the CDF within a bin: Lip(f) h^2 / 8, Lip(f) = 1/(2 c_max^2)
        // (a convolution with other densities, the normal part's included, keeps it).
        let interp = h * h / (16.0 * cmax * cmax);
        let roundoff = 64.0 * lf.log2() * f64::EPSILON;
        wrap + freq + 2.0 * beyond + interp + roundoff
    }

    /// Algorithm 1: `samples` draws of `sum_i a_i N_i` from `rng`.
    pub fn monte_carlo<R: Rng + ?Sized>(
        terms: &[Term],
        samples: usize,
        rng: &mut R,
    ) -> Result<NoiseSum, ExactError> {
        let scales = scales(terms)?;
        if scales.is_empty() {
            return Ok(Self::degenerate());
        }
        if samples == 0 {
            return Err(ExactError::NoSamples);
        }
        let variance = scales.variance();
        // Y = sum_k A_k X_k, X_k ~ Lap(S_k / alpha_k) (Algorithm 1, step 1), without rounding;
        // a Gaussian release's term is normal.
        let mut abs: Vec<f64> = (0..samples)
            .map(|_| {
                let l: f64 = scales
                    .laplace
                    .iter()
                    .map(|&ci| laplace::sample(rng, ci))
                    .sum();
                let n: f64 = scales
                    .normal
                    .iter()
                    .map(|&d| d * rng.sample::<f64, _>(rand_distr::StandardNormal))
                    .sum();
                (l + n).abs()
            })
            .collect();
        abs.sort_by(|a, b| a.total_cmp(b));
        // DKW: sup |F_n - F| <= sqrt(ln(2/alpha) / (2n)) with probability 1 - alpha.
        let gamma = ((2.0 / MC_ALPHA).ln() / (2.0 * samples as f64)).sqrt();
        Ok(NoiseSum {
            repr: Repr::Sample { abs },
            method: Method::MonteCarlo { samples },
            gamma,
            variance,
            scales,
        })
    }

    /// Section 4.4: the cheaper of Algorithm 2 (cost `L log2 L + L m / 2` for the FFT and the
    /// characteristic function) and Algorithm 1 with [`MC_SAMPLES`] draws (cost `8 m m_s`: in
    /// `benches/blue.rs` a Laplace draw takes about 15 ns and a unit of the FFT's cost under
    /// 1 ns, so 8 understates Monte Carlo's cost and leans towards it).
    /// With a grid fixed in units of the standard deviation the FFT is nearly always the
    /// cheaper; Monte Carlo is the fallback when the grid would be too large.
    /// An error with no Laplace term is normal, computed in closed form.
    pub fn auto<R: Rng + ?Sized>(terms: &[Term], rng: &mut R) -> Result<NoiseSum, ExactError> {
        let scales = scales(terms)?;
        if scales.laplace.is_empty() {
            return Ok(Self::normal(scales));
        }
        let c = &scales.laplace;
        let m = c.len() + scales.normal.len();
        let mc_cost = 8.0 * (m * MC_SAMPLES) as f64;
        match Self::grid(c, scales.normal_variance()) {
            Ok((_, len)) => {
                let lf = len as f64;
                let fft_cost = lf * lf.log2() + lf / 2.0 * c.len() as f64;
                if fft_cost <= mc_cost {
                    Self::fft(terms)
                } else {
                    Self::monte_carlo(terms, MC_SAMPLES, rng)
                }
            }
            Err(_) => Self::monte_carlo(terms, MC_SAMPLES, rng),
        }
    }

    fn degenerate() -> NoiseSum {
        NoiseSum {
            repr: Repr::Degenerate,
            method: Method::Degenerate,
            gamma: 0.0,
            variance: 0.0,
            scales: Scales::default(),
        }
    }

    /// How the distribution was computed.
    pub fn method(&self) -> Method {
        self.method
    }

    /// `gamma`: a bound on the absolute error of every probability this distribution reports
    /// (for Monte Carlo, one that holds with probability `1 - 1e-6`).
    pub fn error_bound(&self) -> f64 {
        self.gamma
    }

    /// The non-zero scales of the terms.
    pub fn scales(&self) -> &Scales {
        &self.scales
    }

    /// `Var(Z) = 2 sum_i c_i^2 + sum_j d_j^2`, exact.
    pub fn variance(&self) -> f64 {
        self.variance
    }

    /// `P(Z <= z)`, for `z <= 0` only (the lower tail, summed from the far end).
    fn lower(&self, z: f64) -> f64 {
        match &self.repr {
            Repr::Degenerate => {
                if z < 0.0 {
                    0.0
                } else {
                    1.0
                }
            }
            Repr::Normal { sd } => super::accuracy::normal_upper_tail(-z / sd),
            Repr::Grid { h, left } => {
                let kmax = left.len() - 1;
                // Position in edge units: edge i at (i - kmax - 1/2) h.
                let pos = z / h + kmax as f64 + 0.5;
                if pos <= 0.0 {
                    return 0.0;
                }
                if pos >= kmax as f64 {
                    // Between the edge -h/2 and 0, where P(Z <= 0) = 1/2 by symmetry.
                    let f = ((pos - kmax as f64) * 2.0).min(1.0);
                    return left[kmax] + f * (0.5 - left[kmax]);
                }
                let i = pos.floor() as usize;
                let f = pos - i as f64;
                left[i] + f * (left[i + 1] - left[i])
            }
            Repr::Sample { abs } => {
                // Symmetrised: P(Z <= z) = P(|Z| >= -z) / 2.
                let n = abs.len();
                let below = abs.partition_point(|&a| a < -z);
                (n - below) as f64 / (2.0 * n as f64)
            }
        }
    }

    /// `P(Z <= z)`, clamped to `[0, 1]`.
    pub fn cdf(&self, z: f64) -> f64 {
        if z.is_nan() {
            return f64::NAN;
        }
        let p = if z <= 0.0 {
            self.lower(z)
        } else {
            1.0 - self.lower(-z)
        };
        p.clamp(0.0, 1.0)
    }

    /// `P(Z > z)`, clamped to `[0, 1]`; computed from the nearer tail.
    pub fn sf(&self, z: f64) -> f64 {
        if z.is_nan() {
            return f64::NAN;
        }
        self.cdf(-z)
    }

    /// `P(Z > t)` at any `t`, as an enclosure whose relative width is at most
    /// [`tail::TARGET`], or `[0, bound]` where only the Chernoff bound is reached
    /// ([`super::tail::upper`]).
    pub fn upper_tail(&self, t: f64) -> Enclosure {
        self.scales.upper(t)
    }

    /// Whether a tail mass is too thin for the grid or the sample to place its quantile: below
    /// 1000 times `gamma` (the quantile's tail would then be off by more than 0.1%).
    fn too_thin(&self, target: f64) -> bool {
        matches!(self.repr, Repr::Grid { .. } | Repr::Sample { .. }) && target < 1000.0 * self.gamma
    }

    /// The half-width `w` of the central interval: `P(|Z| <= w) = level` (the narrowest
    /// interval, since `Z` is symmetric and unimodal; Algorithm 3 done on the CDF, so `w` is not
    /// rounded to the grid). For the grid, `w` is accurate to a grid step. At a level whose tail
    /// mass `(1 - level) / 2` is below 1000 `gamma` (always for a Monte Carlo sample of 10^6),
    /// `w` is [`super::tail::quantile`]'s instead: the least `w` at which the tail is certified
    /// at most that mass, to a relative `1e-12`.
    pub fn central_half_width(&self, level: Probability) -> f64 {
        // P(|Z| <= w) = 1 - 2 P(Z <= -w) = level  <=>  P(Z <= -w) = (1 - level) / 2.
        let target = (1.0 - level.get()) / 2.0;
        if self.too_thin(target) {
            return self.scales.quantile(target);
        }
        match &self.repr {
            Repr::Degenerate => 0.0,
            // Certified, as the tails are.
            Repr::Normal { .. } => self.scales.quantile(target),
            Repr::Grid { h, left } => {
                let kmax = left.len() - 1;
                // The first edge i whose cumulative mass exceeds the target.
                let i = left.partition_point(|&v| v <= target);
                if i == 0 {
                    return (kmax as f64 + 0.5) * h;
                }
                if i > kmax {
                    // Between -h/2 and 0.
                    let f = (target - left[kmax]) / (0.5 - left[kmax]).max(f64::MIN_POSITIVE);
                    return (h / 2.0) * (1.0 - f.clamp(0.0, 1.0));
                }
                let (a, b) = (left[i - 1], left[i]);
                let f = if b > a { (target - a) / (b - a) } else { 0.0 };
                let pos = (i - 1) as f64 + f;
                ((kmax as f64 + 0.5) - pos) * h
            }
            Repr::Sample { abs } => {
                let n = abs.len();
                let idx = ((level.get() * n as f64).ceil() as usize).clamp(1, n) - 1;
                abs[idx]
            }
        }
    }
}

/// The largest relative error with which a probability is reported as a value; a wider
/// enclosure is reported as a bound.
pub const MAX_REPORTED_ERROR: f64 = 1e-3;

/// A probability as dpq reports it: a value with a bound on its relative error, or only a
/// bound, never digits that are not known.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reported {
    /// `|value - p| <= relative_error * p` (at most [`MAX_REPORTED_ERROR`]).
    Value {
        /// The probability.
        value: f64,
        /// A bound on its relative error.
        relative_error: f64,
    },
    /// `p` is below this bound (all that is known, or `p` is below [`tail::TINY`]).
    Below(f64),
    /// `p` is above this bound.
    Above(f64),
}

impl Reported {
    /// The value, or the bound.
    pub fn value(&self) -> f64 {
        match *self {
            Reported::Value { value, .. } | Reported::Below(value) | Reported::Above(value) => {
                value
            }
        }
    }

    /// A bound on `|value() - p|`.
    pub fn absolute_error(&self) -> f64 {
        match *self {
            // |v - p| <= r p and p <= v / (1 - r).
            Reported::Value {
                value,
                relative_error,
            } => relative_error * value / (1.0 - relative_error),
            Reported::Below(b) => b,
            Reported::Above(b) => 1.0 - b,
        }
    }

    /// The relative error of a value; `None` for a bound.
    pub fn relative_error(&self) -> Option<f64> {
        match *self {
            Reported::Value { relative_error, .. } => Some(relative_error),
            _ => None,
        }
    }
}

impl From<Enclosure> for Reported {
    /// The midpoint of `[lo, hi]` with relative error `(hi - lo) / (2 lo)` when that is at most
    /// [`MAX_REPORTED_ERROR`]; else `hi` as an upper bound (below 1/2) or `lo` as a lower one.
    fn from(e: Enclosure) -> Reported {
        let (lo, hi) = (e.lo.max(0.0), e.hi.min(1.0));
        if hi == 0.0 {
            // Only an exact 0 (no noise, or an empty event) is enclosed in [0, 0].
            return Reported::Value {
                value: 0.0,
                relative_error: 0.0,
            };
        }
        if lo > 0.0 {
            let relative_error = (hi - lo) / (2.0 * lo);
            if relative_error <= MAX_REPORTED_ERROR {
                return Reported::Value {
                    value: 0.5 * (lo + hi),
                    relative_error,
                };
            }
        }
        if hi <= 0.5 {
            Reported::Below(hi)
        } else {
            Reported::Above(lo)
        }
    }
}

/// The posterior of `theta` under the paper's flat prior: `theta = theta-hat - Z` (Lemma 4.1).
#[derive(Debug, Clone)]
pub struct Posterior {
    /// `theta-hat = A y`.
    pub estimate: f64,
    /// The distribution of `Z = A N`.
    pub noise: NoiseSum,
}

impl Posterior {
    /// The central credible interval `[theta-hat - w, theta-hat + w]` of mass `level`
    /// (section 5.2; the narrowest, by symmetry and unimodality).
    pub fn credible_interval(&self, level: Probability) -> (f64, f64) {
        let w = self.noise.central_half_width(level);
        (self.estimate - w, self.estimate + w)
    }

    /// `P(theta > x) = P(Z < theta-hat - x) = P(Z > x - theta-hat)` (`Z` is symmetric), to a
    /// stated relative error or as a bound ([`NoiseSum::upper_tail`]).
    pub fn greater(&self, x: f64) -> Reported {
        self.noise.upper_tail(x - self.estimate).into()
    }

    /// `P(theta < x) = P(Z > theta-hat - x)`, to a stated relative error or as a bound.
    pub fn less(&self, x: f64) -> Reported {
        self.noise.upper_tail(self.estimate - x).into()
    }

    /// `P(a < theta < b)`, to a stated relative error or as a bound; 0 when `b <= a`.
    pub fn between(&self, a: f64, b: f64) -> Reported {
        if b <= a || a.is_nan() || b.is_nan() {
            return Reported::Value {
                value: 0.0,
                relative_error: 0.0,
            };
        }
        let q = |z: f64| self.noise.upper_tail(z);
        let (za, zb) = (a - self.estimate, b - self.estimate);
        // P(theta > a) - P(theta >= b) = Q(za) - Q(zb) with Q(z) = P(Z > z), taken from the
        // nearer tails so that no probability near 1 is subtracted from another.
        let difference = |p: Enclosure, q: Enclosure| Enclosure {
            lo: (p.lo - q.hi).max(0.0),
            hi: (p.hi - q.lo).max(0.0),
        };
        let e = if za >= 0.0 {
            difference(q(za), q(zb))
        } else if zb <= 0.0 {
            // P(theta < b) - P(theta <= a) = Q(-zb) - Q(-za).
            difference(q(-zb), q(-za))
        } else {
            // 1 - P(theta <= a) - P(theta >= b) = 1 - Q(-za) - Q(zb).
            let (l, u) = (q(-za), q(zb));
            Enclosure {
                lo: (1.0 - l.hi - u.hi - 2.0 * f64::EPSILON).max(0.0),
                hi: (1.0 - l.lo - u.lo + 2.0 * f64::EPSILON).min(1.0),
            }
        };
        e.into()
    }

    /// [`Posterior::greater`]'s value (for a bound, the bound).
    pub fn prob_greater(&self, x: f64) -> f64 {
        self.greater(x).value()
    }

    /// [`Posterior::less`]'s value (for a bound, the bound).
    pub fn prob_less(&self, x: f64) -> f64 {
        self.less(x).value()
    }

    /// [`Posterior::between`]'s value (for a bound, the bound).
    pub fn prob_between(&self, a: f64, b: f64) -> f64 {
        self.between(a, b).value()
    }

    /// The error bound of the probabilities above (see [`NoiseSum::error_bound`]).
    pub fn error_bound(&self) -> f64 {
        self.noise.error_bound()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    fn prob(x: f64) -> Probability {
        Probability::new(x).expect("valid")
    }

    #[test]
    fn one_laplace_matches_closed_form() {
        // Z ~ Laplace(2): P(Z <= z) = e^{z/2}/2 for z <= 0; 95% half-width 2 ln 20.
        let d = NoiseSum::fft(&[Term {
            weight: 1.0,
            scale: 2.0,
            law: Law::Laplace,
        }])
        .expect("ok");
        let g = d.error_bound();
        assert!(g < 1e-6, "gamma {g}");
        for z in [-30.0, -10.0, -3.3, -0.1, 0.0, 0.7, 5.0] {
            let exact: f64 = if z <= 0.0 {
                (z / 2.0f64).exp() / 2.0
            } else {
                1.0 - (-z / 2.0f64).exp() / 2.0
            };
            assert!(
                (d.cdf(z) - exact).abs() <= g,
                "z {z}: {} vs {exact}",
                d.cdf(z)
            );
        }
        let w = d.central_half_width(prob(0.95));
        assert!((w - 2.0 * 20f64.ln()).abs() < 2e-3, "{w}");
    }

    #[test]
    fn thin_tails_take_their_quantile_from_the_tail_method() {
        // Z ~ Laplace(2): the central interval of mass 1 - 1e-9 has half-width 2 ln(1e9), where
        // the FFT's own tail (error about 1e-7) cannot place it; certified, to 1e-12, and never
        // too narrow.
        let t = Term {
            weight: 1.0,
            scale: 2.0,
            law: Law::Laplace,
        };
        let level = prob(1.0 - 1e-9);
        // P(|Z| > w) = e^(-w/2) = 1 - level, with the level as the double holds it.
        let exact = -2.0 * (1.0 - level.get()).ln();
        let fft = NoiseSum::fft(&[t]).expect("ok");
        let w = fft.central_half_width(level);
        assert!(
            w >= exact * (1.0 - 1e-12) && w <= exact * (1.0 + 1e-9),
            "{w} vs {exact}"
        );
        // A Monte Carlo sample (DKW error 2.7e-3 at 10^6 draws) takes every quantile from it.
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let mc = NoiseSum::monte_carlo(&[t], 1000, &mut rng).expect("sample");
        let w = mc.central_half_width(prob(0.95));
        let exact = 2.0 * 20f64.ln();
        assert!((w - exact).abs() <= 1e-9 * exact, "{w} vs {exact}");
    }

    #[test]
    fn two_equal_laplaces_match_closed_form() {
        // Sum of two Laplace(1): P(Z > z) = e^{-z} (2 + z) / 4 for z >= 0.
        let t = Term {
            weight: 1.0,
            scale: 1.0,
            law: Law::Laplace,
        };
        let d = NoiseSum::fft(&[t, t]).expect("ok");
        for z in [0.0f64, 0.5, 2.0, 8.0, 20.0] {
            let exact = (-z).exp() * (2.0 + z) / 4.0;
            assert!((d.sf(z) - exact).abs() <= d.error_bound(), "z {z}");
        }
        assert!((d.variance() - 4.0).abs() < 1e-12);
    }

    #[test]
    fn degenerate_and_invalid() {
        let d = NoiseSum::fft(&[Term {
            weight: 0.0,
            scale: 3.0,
            law: Law::Laplace,
        }])
        .expect("ok");
        assert_eq!(d.method(), Method::Degenerate);
        assert_eq!(d.cdf(-1e-9), 0.0);
        assert_eq!(d.cdf(0.0), 1.0);
        assert_eq!(d.central_half_width(prob(0.9)), 0.0);
        assert!(NoiseSum::fft(&[Term {
            weight: f64::NAN,
            scale: 1.0,
            law: Law::Laplace,
        }])
        .is_err());
        assert!(NoiseSum::fft(&[Term {
            weight: 1.0,
            scale: -1.0,
            law: Law::Laplace,
        }])
        .is_err());
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        assert!(NoiseSum::monte_carlo(
            &[Term {
                weight: 1.0,
                scale: 1.0,
                law: Law::Laplace,
            }],
            0,
            &mut rng
        )
        .is_err());
        assert!(NoiseSum::fft(&[]).is_ok());
        let inf = Term {
            weight: 0.0,
            scale: f64::INFINITY,
            law: Law::Laplace,
        };
        assert_eq!(
            NoiseSum::fft(&[inf]).expect("dropped").method(),
            Method::Degenerate
        );
        assert!(NoiseSum::fft(&[Term {
            weight: 1.0,
            scale: f64::INFINITY,
            law: Law::Laplace,
        }])
        .is_err());
    }

    #[test]
    fn tails_are_never_negative() {
        let terms: Vec<Term> = (1..=50)
            .map(|i| Term {
                weight: 1.0 / i as f64,
                scale: 1.0 + i as f64,
                law: Law::Laplace,
            })
            .collect();
        let d = NoiseSum::fft(&terms).expect("ok");
        let sd = d.variance().sqrt();
        let mut last = 0.0;
        for k in 0..400 {
            let z = -40.0 * sd + k as f64 * 0.1 * sd;
            let p = d.cdf(z);
            assert!((0.0..=1.0).contains(&p));
            assert!(p >= last, "CDF not monotone at {z}");
            last = p;
        }
    }
}
