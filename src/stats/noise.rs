//! Floating-point-safe noise: exact Bernoulli(exp(-gamma)), discrete Laplace and geometric
//! samplers in integer arithmetic, and the Laplace mechanism released on a grid of 2^-k.
//!
//! # Why
//!
//! The textbook Laplace sampler (`sign * scale * E` with `E ~ Exp(1)` computed in `f64`, as
//! in [`super::laplace::sample`]) does not sample the Laplace law: it outputs a sparse set of
//! floats, and which floats depends on the true value. Mironov (2012, "On significance of
//! the least significant bits for differential privacy", CCS) showed that many outputs from
//! a count `c + 1` can never be produced from `c`, so one output can tell the two apart with
//! certainty (`tests/statistics/noise_privacy.rs` finds 12% of dpq's former outputs at eps = 0.1 and
//! count 1 impossible from count 0). The cure, as in OpenDP and Google's libraries, is to draw
//! noise exactly from a discrete distribution with integer arithmetic only and to release
//! values on a fixed grid, so that the set of possible outputs is the same for every input.
//!
//! # What is here
//!
//! - [`Rational`] and [`ExactEpsilon`]: exact positive fractions (an epsilon is the exact
//!   value of its decimal, `mantissa / 10^scale`).
//! - [`bernoulli_exp`]: Bernoulli(exp(-gamma)) for rational gamma >= 0, exactly (Canonne,
//!   Kamath and Steinke 2020, "The Discrete Gaussian for Differential Privacy", Algorithm 1).
//! - [`DiscreteLaplace`] / [`discrete_laplace`]: `P(z) ∝ exp(-|z|/scale)` on the integers for
//!   a rational scale, exactly (the same paper, Algorithm 2; OpenDP's
//!   `sample_discrete_laplace` implements the same algorithm on big integers).
//! - [`geometric`]: the geometric mechanism's noise for integer answers (Ghosh, Roughgarden
//!   and Sundararajan 2009): the discrete Laplace with scale exactly `1/eps`.
//! - [`DiscreteGaussian`]: `P(z) ∝ exp(-z^2 / (2 sigma2))` on the integers for a rational
//!   `sigma2`, exactly (the same paper, Algorithm 3), the noise of Gaussian releases under
//!   zero-concentrated DP.
//! - [`GridGaussian`]: the Gaussian mechanism on the grid `2^-k`, for releases under zCDP.
//! - [`GridLaplace`] / [`laplace_count`]: the Laplace mechanism on the grid `2^-k`
//!   ([`grid_exponent`]), released as a [`GridValue`]; see [`GridLaplace`] for the proof that
//!   it is eps-DP with no extra cost for counts.
//!
//! No float is touched while sampling: the random source is read as a stream of fair bits,
//! uniform integers are drawn by rejection, and Bernoulli(a/b) compares the random bits
//! lazily with the binary expansion of `a/b` (two bits on average).

use std::num::NonZeroU128;

use rand::distr::Distribution;
use rand::{Rng, RngCore};
use rust_decimal::Decimal;

use super::ParamError;

/// Uniform integers below this bound are drawn bit by bit (few random bits); above it, by
/// Lemire's multiplication (one 64-bit word, almost never rejected).
const LEMIRE_ABOVE: u64 = 1 << 12;

// ---------------------------------------------------------------------------------------
// Exact rationals
// ---------------------------------------------------------------------------------------

/// A positive rational number `num/den` in lowest terms (both > 0), e.g. a noise scale.
///
/// The fields are private so that every value is valid and reduced; build one with
/// [`Rational::new`] or [`Rational::integer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rational {
    num: u128,
    den: u128,
}

impl Rational {
    /// The number 1.
    pub const ONE: Self = Self { num: 1, den: 1 };

    /// `num/den` in lowest terms, or `None` if either is 0.
    pub fn new(num: u128, den: u128) -> Option<Self> {
        if num == 0 || den == 0 {
            return None;
        }
        let g = gcd(num, den);
        Some(Self {
            num: num / g,
            den: den / g,
        })
    }

    /// The integer `n` as a rational.
    pub fn integer(n: NonZeroU128) -> Self {
        Self {
            num: n.get(),
            den: 1,
        }
    }

    /// The numerator (in lowest terms).
    pub fn num(self) -> u128 {
        self.num
    }

    /// The denominator (in lowest terms).
    pub fn den(self) -> u128 {
        self.den
    }

    /// `1 / self`.
    pub fn recip(self) -> Self {
        Self {
            num: self.den,
            den: self.num,
        }
    }

    /// `self * 2^k` in lowest terms, or `None` if the numerator would not fit in a `u128`.
    pub fn mul_pow2(self, k: u32) -> Option<Self> {
        // Cancel the factors of two of the denominator first, so the result stays reduced:
        // once they are gone the denominator is odd and coprime to any power of two.
        let cancelled = self.den.trailing_zeros().min(k);
        let rest = k - cancelled;
        if rest >= 128 || self.num.leading_zeros() < rest {
            return None;
        }
        Some(Self {
            num: self.num << rest,
            den: self.den >> cancelled,
        })
    }

    /// An `f64` approximation (for display and accuracy formulas only; sampling never uses it).
    pub fn to_f64(self) -> f64 {
        self.num as f64 / self.den as f64
    }

    /// Whether `self * 2^k >= 2^j`, decided exactly.
    fn times_pow2_at_least_pow2(self, k: u32, j: u32) -> bool {
        // num * 2^k >= den * 2^j  <=>  num * 2^(k-j) >= den  (k >= j)
        //                         <=>  num >= den * 2^(j-k)  (k < j)
        if k >= j {
            let shift = k - j;
            shift >= 128 || self.num.leading_zeros() < shift || (self.num << shift) >= self.den
        } else {
            let shift = j - k;
            !(shift >= 128 || self.den.leading_zeros() < shift) && self.num >= (self.den << shift)
        }
    }
}

/// Greatest common divisor of two positive integers (Stein's binary algorithm).
fn gcd(mut a: u128, mut b: u128) -> u128 {
    if a == 0 {
        return b;
    }
    if b == 0 {
        return a;
    }
    let shift = (a | b).trailing_zeros();
    a >>= a.trailing_zeros();
    loop {
        b >>= b.trailing_zeros();
        if a > b {
            std::mem::swap(&mut a, &mut b);
        }
        b -= a;
        if b == 0 {
            return a << shift;
        }
    }
}

/// A privacy parameter epsilon held exactly: the positive decimal as a fraction in lowest terms.
///
/// A [`Decimal`] is `mantissa / 10^scale` with `|mantissa| < 2^96` and `scale <= 28`
/// (rust_decimal's representation), so both fit in a `u128` and nothing is rounded: the
/// geometric mechanism at `eps = 0.1` uses `a = e^(-1/10)` exactly, not `e^(-0.1000000000000000055)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ExactEpsilon(Rational);

impl ExactEpsilon {
    /// Accepts a decimal greater than 0; refuses 0 and negatives.
    pub fn new(eps: Decimal) -> Result<Self, ParamError> {
        let mantissa = u128::try_from(eps.mantissa()).map_err(|_| ParamError::InvalidEpsilon)?;
        let den = 10u128
            .checked_pow(eps.scale())
            .ok_or(ParamError::InvalidEpsilon)?;
        Rational::new(mantissa, den)
            .map(Self)
            .ok_or(ParamError::InvalidEpsilon)
    }

    /// Epsilon as an exact fraction.
    pub fn as_rational(self) -> Rational {
        self.0
    }

    /// The noise scale of a sensitivity-1 answer, `1/eps`, exactly.
    pub fn count_scale(self) -> Rational {
        self.0.recip()
    }

    /// An `f64` approximation (for display and accuracy formulas only).
    pub fn to_f64(self) -> f64 {
        self.0.to_f64()
    }

    /// `eps / k`, exactly: the epsilon of each of `k` whole steps, so that `k` steps cost
    /// `eps`; `None` for `k = 0` or a denominator past a `u128`.
    pub fn per_step(self, k: u128) -> Option<Self> {
        Rational::new(self.0.num, self.0.den.checked_mul(k)?).map(Self)
    }
}

impl TryFrom<Decimal> for ExactEpsilon {
    type Error = ParamError;

    fn try_from(eps: Decimal) -> Result<Self, ParamError> {
        Self::new(eps)
    }
}

// ---------------------------------------------------------------------------------------
// A stream of fair bits and the exact Bernoulli samplers
// ---------------------------------------------------------------------------------------

/// Fair random bits read from an RNG 64 at a time; the unused bits of the last word are
/// dropped when the stream is dropped.
struct Bits<'a, R: RngCore + ?Sized> {
    rng: &'a mut R,
    /// The unread bits, in the low `left` bits; the bits above them are zero.
    buf: u64,
    left: u32,
}

/// A mask of the `n` low bits, `n <= 64`.
#[inline]
fn low_mask(n: u32) -> u64 {
    u64::MAX.checked_shr(64u32.saturating_sub(n)).unwrap_or(0)
}

impl<'a, R: RngCore + ?Sized> Bits<'a, R> {
    fn new(rng: &'a mut R) -> Self {
        Self {
            rng,
            buf: 0,
            left: 0,
        }
    }

    /// One fair bit.
    #[inline]
    fn bit(&mut self) -> bool {
        if self.left == 0 {
            self.buf = self.rng.next_u64();
            self.left = 64;
        }
        let b = self.buf & 1 == 1;
        self.buf >>= 1;
        self.left -= 1;
        b
    }

    /// `n` fair bits as an integer in `[0, 2^n)`, `1 <= n <= 64`.
    #[inline]
    fn bits(&mut self, n: u32) -> u64 {
        if n <= self.left {
            let v = self.buf & low_mask(n);
            self.buf = self.buf.checked_shr(n).unwrap_or(0);
            self.left -= n;
            v
        } else {
            let have = self.left;
            let need = n - have;
            let fresh = self.rng.next_u64();
            let v = self.buf | ((fresh & low_mask(need)) << have);
            self.buf = fresh.checked_shr(need).unwrap_or(0);
            self.left = 64 - need;
            v
        }
    }

    /// A uniform integer in `[0, t)`, `t >= 1`, by rejection.
    ///
    /// Small `t` (at most [`LEMIRE_ABOVE`]): draw as many bits as `t - 1` has and retry when
    /// the draw is `>= t` (each try succeeds with probability > 1/2), spending few bits.
    /// Larger `t` up to `2^64`: Lemire (2019), "Fast random integer generation in an
    /// interval", Algorithm 5: `m = x t` for a uniform 64-bit `x`; accept `floor(m / 2^64)`
    /// unless `m mod 2^64 < 2^64 mod t` (probability `< t/2^64`), which leaves exactly
    /// `floor(2^64/t)` accepted `x` per result. Beyond `2^64`: bit rejection on 128 bits.
    #[inline]
    fn uniform_below(&mut self, t: u128) -> u128 {
        if t <= 1 {
            return 0;
        }
        if let Ok(t64) = u64::try_from(t) {
            if t64 > LEMIRE_ABOVE {
                let mut m = u128::from(self.rng.next_u64()) * u128::from(t64);
                let mut low = m as u64; // m mod 2^64
                if low < t64 {
                    let threshold = t64.wrapping_neg() % t64; // 2^64 mod t
                    while low < threshold {
                        m = u128::from(self.rng.next_u64()) * u128::from(t64);
                        low = m as u64;
                    }
                }
                return m >> 64;
            }
        }
        let n = 128 - (t - 1).leading_zeros();
        loop {
            let x = if n <= 64 {
                u128::from(self.bits(n))
            } else {
                (u128::from(self.bits(n - 64)) << 64) | u128::from(self.bits(64))
            };
            if x < t {
                return x;
            }
        }
    }

    /// Bernoulli(a/b) exactly, `b >= 1` (`a >= b` gives `true`).
    ///
    /// With `V` uniform on [0, 1) given by the random bits `0.v1 v2 ...`, the result is
    /// `V < a/b`: the binary digits `d_i` of `a/b` come from long division and the first
    /// position where `v_i != d_i` decides; if the expansion of `a/b` ends while all digits
    /// agreed, `V >= a/b`. Each digit decides with probability 1/2, so two bits on average.
    #[inline]
    fn bernoulli_ratio(&mut self, a: u128, b: u128) -> bool {
        if a >= b {
            return true;
        }
        if a == 0 {
            return false;
        }
        if let Ok(b64) = u64::try_from(b) {
            return self.bernoulli_ratio_u64(a as u64, b64); // a < b fits too
        }
        let mut r = a; // invariant: 0 < r < b, the remainder of the long division
        loop {
            // next digit d = [2r >= b], and r <- 2r - d*b, written so nothing overflows
            let d = r >= b - r;
            r = if d { r - (b - r) } else { r + r };
            if self.bit() != d {
                return d;
            }
            if r == 0 {
                return false;
            }
        }
    }

    /// [`Bits::bernoulli_ratio`] in 64-bit arithmetic, for `0 < a < b < 2^64`.
    #[inline]
    fn bernoulli_ratio_u64(&mut self, a: u64, b: u64) -> bool {
        let mut r = a;
        loop {
            let d = r >= b - r;
            r = if d { r - (b - r) } else { r + r };
            if self.bit() != d {
                return d;
            }
            if r == 0 {
                return false;
            }
        }
    }

    /// Bernoulli(exp(-num/den)) for `0 <= num <= den`, `den >= 1`.
    ///
    /// Canonne, Kamath and Steinke (2020), Algorithm 1, case gamma in [0, 1]: K <- 1; while
    /// Bernoulli(gamma/K) = 1, K <- K + 1; return [K odd]. Then P(K > k) = gamma^k/k!, so
    /// P(K odd) = sum_k (-gamma)^k/k! = exp(-gamma).
    #[inline]
    fn bernoulli_exp_unit(&mut self, num: u128, den: u128) -> bool {
        // K = 1: Bernoulli(gamma); tails gives K = 1, odd.
        if !self.bernoulli_ratio(num, den) {
            return true;
        }
        let mut k: u128 = 2;
        loop {
            // Bernoulli(gamma/K) = Bernoulli(num/(den K)), or, should den*K not fit,
            // the product of independent Bernoulli(num/den) and Bernoulli(1/K).
            let heads = match den.checked_mul(k) {
                Some(dk) => self.bernoulli_ratio(num, dk),
                None => self.bernoulli_ratio(num, den) && self.bernoulli_ratio(1, k),
            };
            if !heads {
                return k % 2 == 1;
            }
            k = k.saturating_add(1);
        }
    }

    /// Bernoulli(exp(-1)): Algorithm 1 with gamma = 1, whose first step (Bernoulli(1/1)) is
    /// always heads and whose second (Bernoulli(1/2)) is one bit.
    #[inline]
    fn bernoulli_exp_minus_one(&mut self) -> bool {
        if !self.bit() {
            return false; // tails at K = 2: even
        }
        let mut k: u64 = 3;
        loop {
            if !self.bernoulli_ratio_u64(1, k) {
                return k % 2 == 1;
            }
            k = k.saturating_add(1);
        }
    }

    /// Bernoulli(exp(-num/den)) for any `num >= 0`, `den >= 1`.
    ///
    /// Canonne, Kamath and Steinke (2020), Algorithm 1, case gamma > 1: draw floor(gamma)
    /// Bernoulli(exp(-1)); if all are 1, return Bernoulli(exp(-(gamma - floor(gamma)))),
    /// since exp(-gamma) = exp(-1)^floor(gamma) * exp(-(gamma - floor(gamma))).
    fn bernoulli_exp(&mut self, num: u128, den: u128) -> bool {
        let whole = num / den;
        let mut i: u128 = 0;
        while i < whole {
            if !self.bernoulli_exp_minus_one() {
                return false;
            }
            i += 1;
        }
        self.bernoulli_exp_unit(num % den, den)
    }
}

/// Bernoulli(exp(-gamma)) for `gamma = gamma_num / gamma_den >= 0`, exactly.
///
/// Canonne, Kamath and Steinke (2020), "The Discrete Gaussian for Differential Privacy",
/// Algorithm 1, with every Bernoulli(a/b) decided from fair random bits (no floats). Reads at
/// least one `u64` from `rng`.
pub fn bernoulli_exp<R: RngCore + ?Sized>(
    rng: &mut R,
    gamma_num: u128,
    gamma_den: NonZeroU128,
) -> bool {
    Bits::new(rng).bernoulli_exp(gamma_num, gamma_den.get())
}

// ---------------------------------------------------------------------------------------
// Discrete Laplace and the geometric mechanism
// ---------------------------------------------------------------------------------------

/// The discrete Laplace distribution on the integers with a rational scale `t/s`:
/// `P(z) = (1 - a)/(1 + a) * a^|z|` with `a = exp(-s/t)`, sampled exactly.
///
/// Canonne, Kamath and Steinke (2020), Algorithm 2. Implements rand's [`Distribution`], so
/// `rng.sample(&dl)` and `rng.sample_iter(&dl)` work; [`DiscreteLaplace::fill`] draws many
/// values sharing one bit stream (no bits wasted between draws).
///
/// Exactness: every step is integer arithmetic. `Y = floor((U + tV)/s)` is accumulated as
/// quotient and remainder, so nothing overflows. Only a magnitude beyond `i128::MAX`
/// saturates; it needs `V >= 2^127/scale` successive Bernoulli(exp(-1)) heads, probability
/// `exp(-2^127/scale)`, below `exp(-2^27)` for every scale under `2^100` (an epsilon's
/// count scale is at most `10^28 < 2^94`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiscreteLaplace {
    scale: Rational,
    /// `t / s` and `t % s`, for adding `t` to the quotient-remainder pair of `X / s`.
    t_div_s: u128,
    t_mod_s: u128,
}

impl DiscreteLaplace {
    /// The discrete Laplace with the given scale (`P(z) ∝ exp(-|z|/scale)`).
    pub fn new(scale: Rational) -> Self {
        Self {
            scale,
            t_div_s: scale.num / scale.den,
            t_mod_s: scale.num % scale.den,
        }
    }

    /// The scale.
    pub fn scale(&self) -> Rational {
        self.scale
    }

    /// Fills `out` with independent draws.
    pub fn fill<R: RngCore + ?Sized>(&self, rng: &mut R, out: &mut [i128]) {
        let mut bits = Bits::new(rng);
        for z in out {
            *z = self.draw(&mut bits);
        }
    }

    fn draw<R: RngCore + ?Sized>(&self, bits: &mut Bits<'_, R>) -> i128 {
        loop {
            let q = self.magnitude(bits);
            // B ~ Bernoulli(1/2); if B = 1 and Y = 0, restart (else 0 would be counted twice).
            // Return (1 - 2B) Y.
            let negative = bits.bit();
            if negative && q == 0 {
                continue;
            }
            let y = i128::try_from(q).unwrap_or(i128::MAX);
            return if negative { -y } else { y };
        }
    }

    /// `Y >= 0` with `P(Y = y) = (1 - a) a^y`, `a = exp(-1/scale)`: the geometric law that is
    /// the discrete Laplace's magnitude before its sign (CKS20 Algorithm 2, steps 1-5).
    fn magnitude<R: RngCore + ?Sized>(&self, bits: &mut Bits<'_, R>) -> u128 {
        let (t, s) = (self.scale.num, self.scale.den);
        loop {
            // Algorithm 2 (CKS20), scale t/s. U uniform on {0, ..., t-1}.
            let u = bits.uniform_below(t);
            // D ~ Bernoulli(exp(-U/t)); if D = 0, restart. Now P(U = u) ∝ exp(-u/t).
            if !bits.bernoulli_exp_unit(u, t) {
                continue;
            }
            // V ~ Geometric(1 - e^-1): the number of Bernoulli(exp(-1)) heads before a tail.
            // X = U + tV has P(X = x) ∝ exp(-x/t); Y = floor(X/s) has P(Y = y) ∝ exp(-y s/t).
            // Y is kept as the quotient q and remainder r of X by s, adding t = (t/s) s + t%s
            // once per head.
            let (mut q, mut r) = if s == 1 { (u, 0) } else { (u / s, u % s) };
            while bits.bernoulli_exp_minus_one() {
                q = q.saturating_add(self.t_div_s);
                let room = s - self.t_mod_s; // r + t%s >= s  <=>  r >= s - t%s
                if r >= room {
                    r -= room;
                    q = q.saturating_add(1);
                } else {
                    r += self.t_mod_s;
                }
            }
            return q;
        }
    }
}

impl Distribution<i128> for DiscreteLaplace {
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> i128 {
        self.draw(&mut Bits::new(rng))
    }
}

/// One exact draw from the discrete Laplace with `P(z) ∝ exp(-|z|/scale)`.
///
/// See [`DiscreteLaplace`] (CKS20 Algorithm 2); no float is used.
pub fn discrete_laplace<R: RngCore + ?Sized>(rng: &mut R, scale: Rational) -> i128 {
    DiscreteLaplace::new(scale).draw(&mut Bits::new(rng))
}

/// The geometric mechanism's noise for an integer answer of sensitivity 1: `Z` with
/// `P(z) = (1 - a)/(1 + a) * a^|z|`, `a = e^(-eps)`, exactly.
///
/// Ghosh, Roughgarden and Sundararajan (2009), "Universally utility-maximizing privacy
/// mechanisms": release `count + Z`. It is the discrete Laplace with scale `1/eps`
/// ([`ExactEpsilon::count_scale`]). For neighbouring counts `c`, `c + 1` and any output `y`,
/// `P(c + Z = y) / P(c + 1 + Z = y) = a^(|y - c| - |y - c - 1|) <= a^(-1) = e^eps`.
/// Add the count in `i128` (`i128::from(count) + z`) so nothing saturates or wraps.
pub fn geometric<R: RngCore + ?Sized>(rng: &mut R, eps: ExactEpsilon) -> i128 {
    discrete_laplace(rng, eps.count_scale())
}

// ---------------------------------------------------------------------------------------
// The discrete Gaussian
// ---------------------------------------------------------------------------------------

/// The discrete Gaussian on the integers with a rational variance parameter `sigma2`:
/// `P(z) = exp(-z^2 / (2 sigma2)) / sum_k exp(-k^2 / (2 sigma2))`, sampled exactly.
///
/// Canonne, Kamath and Steinke (2020), Algorithm 3: with `t = floor(sigma) + 1`, draw `Y`
/// from the discrete Laplace of scale `t` and keep it with probability
/// `exp(-(|Y| - sigma2/t)^2 / (2 sigma2))`, else draw again (on average about 1.3 draws of
/// `Y` for a large `sigma`, 1.5 at `sigma2 = 4`, 2.2 as `sigma` goes to 0). With `sigma2 = p/q` the exponent is the rational
/// `(|Y| q t - p)^2 / (2 p q t^2)`, decided by [`bernoulli_exp`]: integer arithmetic only,
/// no float on the sampling path. OpenDP's `sample_discrete_gaussian` implements the same
/// algorithm on big integers.
///
/// Exactness: the denominator `2 p q t^2` is kept below `2^100` ([`DiscreteGaussian::new`]
/// refuses a larger one), so every exponent whose numerator fits in 128 bits is exact. A
/// draw whose `|Y| q t - p` reaches `2^64` has an exponent above `2^28` and is rejected
/// without its Bernoulli(exp(-gamma)) (which is heads with probability below `exp(-2^28)`);
/// no other approximation is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiscreteGaussian {
    sigma2: Rational,
    laplace: DiscreteLaplace,
    /// `q t`, with `sigma2 = p / q`.
    qt: u128,
    /// `2 p q t^2`, the denominator of every exponent.
    den: u128,
}

impl DiscreteGaussian {
    /// Denominators of the rejection's exponent stay below this.
    pub const MAX_DENOMINATOR: u128 = 1 << 100;

    /// The discrete Gaussian with variance parameter `sigma2`, or `None` if its rejection
    /// step's denominator `2 p q t^2` would reach [`Self::MAX_DENOMINATOR`] (for
    /// `sigma2 = p/q` in lowest terms, `t = floor(sqrt(sigma2)) + 1`). The denominator is
    /// about `2 sigma2^2 q^2`, so `sigma2 q` must stay below about `2^49.5`: a `sigma2` up to
    /// `2^29` with `q` up to `2^20`, or up to `2^40` with `q` up to `2^9`. A caller with a
    /// finer `sigma2` rounds it up to a coarser rational (more noise, never less).
    pub fn new(sigma2: Rational) -> Option<Self> {
        let (p, q) = (sigma2.num(), sigma2.den());
        // floor(sqrt(p/q)) = isqrt(floor(p/q)): sqrt(x) >= n <=> x >= n^2 <=> floor(x) >= n^2.
        let t = (p / q).isqrt() + 1;
        let qt = q.checked_mul(t)?;
        let den = qt
            .checked_mul(t)
            .and_then(|x| x.checked_mul(p))
            .and_then(|x| x.checked_mul(2))
            .filter(|&d| d < Self::MAX_DENOMINATOR)?;
        Some(Self {
            sigma2,
            laplace: DiscreteLaplace::new(Rational::integer(NonZeroU128::new(t)?)),
            qt,
            den,
        })
    }

    /// The variance parameter `sigma2` (the variance itself is slightly below it).
    pub fn sigma2(&self) -> Rational {
        self.sigma2
    }

    /// Fills `out` with independent draws.
    pub fn fill<R: RngCore + ?Sized>(&self, rng: &mut R, out: &mut [i128]) {
        let mut bits = Bits::new(rng);
        for z in out {
            *z = self.draw(&mut bits);
        }
    }

    fn draw<R: RngCore + ?Sized>(&self, bits: &mut Bits<'_, R>) -> i128 {
        let p = self.sigma2.num();
        loop {
            let y = self.laplace.draw(bits);
            let Some(a) = y
                .unsigned_abs()
                .checked_mul(self.qt)
                .map(|yqt| yqt.abs_diff(p))
                .filter(|&a| a < 1 << 64)
            else {
                continue; // an exponent above 2^28: see the type's notes
            };
            if bits.bernoulli_exp(a * a, self.den) {
                return y;
            }
        }
    }
}

impl Distribution<i128> for DiscreteGaussian {
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> i128 {
        self.draw(&mut Bits::new(rng))
    }
}

// ---------------------------------------------------------------------------------------
// The Laplace mechanism on a grid
// ---------------------------------------------------------------------------------------

/// The grid is at most `scale * 2^-GRID_BELOW_SCALE_BITS`: the noise has at least 2^20 grid
/// steps per unit of scale (see [`grid_exponent`]).
pub const GRID_BELOW_SCALE_BITS: u32 = 20;

/// The finest grid used, `2^-62`: a count times `2^62` still fits in an `i128`.
pub const MAX_GRID_EXPONENT: u32 = 62;

/// The grid exponent `k` (grid `2^-k`) for Laplace noise of the given scale
/// (`scale = sensitivity / eps`): the smallest `k >= 0` with `2^-k <= scale * 2^-20`, capped
/// at [`MAX_GRID_EXPONENT`].
///
/// Why `2^-20` of the scale: the discrete Laplace on the grid then has scale `>= 2^20`
/// steps, so its law is the Laplace law to within one grid step (its CDF is off by about
/// one point mass, `<= 2^-21`, at any point), far below any displayed precision; yet the
/// grid stays coarse enough that the released `count * 2^k + Z` steps are exact in an `f64`
/// for every count below about `2^32 * scale` (4e10 at eps = 0.1), and the step scale of a
/// one-decimal epsilon fits in 64 bits, where the sampler's fast paths work. Google's
/// library uses the smallest power of two at least `scale * 2^-40` (its
/// `GRANULARITY_PARAM`, `cc/algorithms/distributions.cc`) and OpenDP lets the caller choose
/// `k`; for counts every choice with `k >= 0` is equally private (see [`GridLaplace`]).
///
/// Why `k >= 0`: the grid then divides 1, so an integer answer is on the grid and needs no
/// rounding. For `eps < 2^-20` (scale above 2^20) this gives `k = 0`: the grid is the
/// integers and the mechanism is the geometric mechanism. The cap at 62 only matters for
/// `eps > 2^42`.
pub fn grid_exponent(scale: Rational) -> u32 {
    (0..=MAX_GRID_EXPONENT)
        .find(|&k| scale.times_pow2_at_least_pow2(k, GRID_BELOW_SCALE_BITS))
        .unwrap_or(MAX_GRID_EXPONENT)
}

/// `2^-k` as an `f64`, exactly (`k <= 62`).
fn grid_f64(k: u32) -> f64 {
    1.0 / (1u64 << k.min(MAX_GRID_EXPONENT)) as f64
}

/// A released value on the grid `2^-k`: `steps * 2^-k`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GridValue {
    /// The value in grid steps (the exact output of the mechanism).
    pub steps: i128,
    /// The grid exponent: the grid is `2^-k`.
    pub k: u32,
}

impl GridValue {
    /// The value as an `f64`: `steps * 2^-k`, exact whenever `|steps| <= 2^53`.
    ///
    /// Beyond `2^53` steps the conversion rounds to the nearest `f64`, which is an integer
    /// number of steps again, so the value stays on the grid; the rounding is a function of
    /// the exact output only (post-processing), so it costs no privacy.
    pub fn value(self) -> f64 {
        // i128 -> f64 rounds to nearest (Rust reference, numeric casts); * 2^-k is exact.
        self.steps as f64 * grid_f64(self.k)
    }

    /// The grid spacing `2^-k`.
    pub fn grid(self) -> f64 {
        grid_f64(self.k)
    }
}

/// The Laplace mechanism released on the grid `2^-k`: `value = true_value + Z * 2^-k` with
/// `Z` discrete Laplace of scale `scale * 2^k` steps, sampled exactly.
///
/// As in OpenDP (`make_laplace` on floats) and Google's library (secure noise on a
/// granularity grid). The released distribution is the Laplace law with the given scale, to
/// within one grid step.
///
/// # Privacy for integer answers of sensitivity 1 (counts): eps, with no extra cost
///
/// With `scale = 1/eps` and `k = grid_exponent(scale) >= 0`, a count `c` is `c * 2^k` grid
/// steps exactly (the grid divides 1, no rounding). The mechanism outputs the integer
/// `N = c 2^k + Z` with `P(Z = z) = (1 - a)/(1 + a) a^|z|`, `a = exp(-eps / 2^k)` (scale
/// `2^k/eps` steps). Neighbouring counts `c' = c ± 1` are exactly `2^k` steps apart, so for
/// every output `n`, by the triangle inequality `| |n - c 2^k| - |n - c' 2^k| | <= 2^k`:
///
/// ```text
/// P(N = n | c) / P(N = n | c') = a^(|n - c 2^k| - |n - c' 2^k|) <= a^(-2^k) = e^eps.
/// ```
///
/// Both neighbours can produce every grid point (the support is the whole grid), and the
/// ratio per `2^k` steps is exactly `e^eps`: pure eps-DP, the same as the continuous Laplace
/// mechanism. The released `f64` ([`GridValue::value`]) is a function of `N` alone
/// (post-processing), so it is eps-DP too. Sampling `Z` uses no float, so nothing leaks
/// through rounding (Mironov 2012).
///
/// # Privacy for a value that must first be rounded to the grid (linear queries)
///
/// A true value `x` that is not on the grid is first rounded to the nearest grid point
/// ([`GridLaplace::to_steps`]), moving it by at most half a step. Two neighbouring values at
/// distance at most `S` (the sensitivity) can round to points up to `S + 2^-k` apart. Noise
/// of scale `S/eps` then gives `eps * (1 + 2^-k / S)`-DP; to keep exactly eps, build the
/// mechanism with the scale `(S + 2^-k)/eps`. At the default grid
/// (`2^-k <= (S/eps) 2^-20`, below the cap) the relative extra cost is at most
/// `2^-20/eps`. Google's library charges the same: its Laplace noise has scale
/// `(S + granularity)/eps`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GridLaplace {
    k: u32,
    noise: DiscreteLaplace,
}

impl GridLaplace {
    /// Laplace noise of the given scale (`sensitivity / eps`) on the grid of [`grid_exponent`].
    ///
    /// Should `scale * 2^k` not fit in a `u128` (a scale with a denominator above ~2^100), the
    /// grid is made coarser until it does; any grid `2^-k` with `k >= 0` is equally private.
    pub fn new(scale: Rational) -> Self {
        let mut k = grid_exponent(scale);
        loop {
            if let Some(step_scale) = scale.mul_pow2(k) {
                return Self {
                    k,
                    noise: DiscreteLaplace::new(step_scale),
                };
            }
            if k == 0 {
                // mul_pow2(0) is the scale itself and always fits; kept for totality.
                return Self {
                    k: 0,
                    noise: DiscreteLaplace::new(scale),
                };
            }
            k -= 1;
        }
    }

    /// The Laplace mechanism for a count (sensitivity 1): scale `1/eps`.
    pub fn for_count(eps: ExactEpsilon) -> Self {
        Self::new(eps.count_scale())
    }

    /// The grid exponent `k`: values lie on multiples of `2^-k`.
    pub fn k(&self) -> u32 {
        self.k
    }

    /// The grid spacing `2^-k`.
    pub fn grid(&self) -> f64 {
        grid_f64(self.k)
    }

    /// The noise scale in grid steps, `scale * 2^k`, exactly.
    pub fn step_scale(&self) -> Rational {
        self.noise.scale()
    }

    /// Releases `true_steps * 2^-k` plus noise: the output is `true_steps + Z` steps.
    ///
    /// The sum saturates at `±i128::MAX` steps, a function of the exact sum (post-processing);
    /// counts (at most `2^63 * 2^62` steps) never come near it.
    pub fn release<R: RngCore + ?Sized>(&self, rng: &mut R, true_steps: i128) -> GridValue {
        let z = self.noise.draw(&mut Bits::new(rng));
        GridValue {
            steps: true_steps.saturating_add(z),
            k: self.k,
        }
    }

    /// Releases a count: `count * 2^k` steps plus noise (exactly eps-DP, see above).
    pub fn release_count<R: RngCore + ?Sized>(&self, rng: &mut R, count: i64) -> GridValue {
        // |count| <= 2^63 and k <= 62, so count * 2^k fits in an i128.
        self.release(rng, i128::from(count) << self.k)
    }

    /// A true value rounded to the nearest grid point, in steps (halves away from zero);
    /// `None` if it is not finite or beyond `2^126` steps. Costs `2^-k` of sensitivity (above).
    pub fn to_steps(&self, x: f64) -> Option<i128> {
        // x * 2^k is exact in f64 (a power-of-two scaling that cannot overflow below 2^126).
        let scaled = (x * (1u64 << self.k) as f64).round();
        if scaled.is_finite() && scaled.abs() < 2f64.powi(126) {
            Some(scaled as i128)
        } else {
            None
        }
    }
}

// ---------------------------------------------------------------------------------------
// The Gaussian mechanism on a grid
// ---------------------------------------------------------------------------------------

/// A Gaussian release's grid has at least `2^GAUSSIAN_GRID_BITS` steps per standard
/// deviation when the sampler allows it: the discrete Gaussian then follows the normal law
/// to far below any displayed precision.
pub const GAUSSIAN_GRID_BITS: u32 = 10;

/// The Gaussian mechanism released on the grid `2^-k`: `value = true_value + Z 2^-k` with `Z`
/// discrete Gaussian of variance parameter `sigma2 4^k` steps, sampled exactly
/// ([`DiscreteGaussian`]).
///
/// # Privacy for integer answers of L2 sensitivity `S` (counts, linear counts)
///
/// A whole answer `c` is `c 2^k` steps exactly (`k >= 0`: the grid divides 1). Neighbouring
/// answers are at most `S 2^k` steps apart, and the discrete Gaussian of variance parameter
/// `s2 = sigma2 4^k` on the integers is `Delta^2 / (2 s2)`-zCDP for integer shifts `Delta`
/// (Canonne, Kamath and Steinke 2020, Theorem 4): `(S 2^k)^2 / (2 sigma2 4^k) =
/// S^2 / (2 sigma2) = rho`, the same as the continuous Gaussian mechanism, whatever `k`. For a
/// vector of answers with independent noise the squared shifts add: `S2^2 / (2 sigma2)`.
/// The released `f64` is a function of the steps alone (post-processing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GridGaussian {
    k: u32,
    noise: DiscreteGaussian,
}

impl GridGaussian {
    /// Gaussian noise of variance parameter `sigma2` (in the answer's units) on the coarsest
    /// grid `2^-k` with at least `2^GAUSSIAN_GRID_BITS` steps per standard deviation; `None`
    /// if the exact sampler does not take that grid (a `sigma2` whose fraction is too fine
    /// for its 2^100 denominators, or one so small that no grid up to
    /// `2^-MAX_GRID_EXPONENT` is fine enough): the release is refused, never drawn with less
    /// noise, nor on a coarser grid, whose lattice the error laws of inference (a normal law
    /// with two steps of `2^-10 sigma` allowed, `stats::combine`) would not describe.
    pub fn new(sigma2: Rational) -> Option<Self> {
        let k = (0..=MAX_GRID_EXPONENT / 2)
            .find(|&k| sigma2.times_pow2_at_least_pow2(2 * k, 2 * GAUSSIAN_GRID_BITS))?;
        let noise = DiscreteGaussian::new(sigma2.mul_pow2(2 * k)?)?;
        Some(Self { k, noise })
    }

    /// The grid exponent `k`: values lie on multiples of `2^-k`.
    pub fn k(&self) -> u32 {
        self.k
    }

    /// The grid spacing `2^-k`.
    pub fn grid(&self) -> f64 {
        grid_f64(self.k)
    }

    /// Releases `true_steps 2^-k` plus noise: `true_steps + Z` steps (saturating, as
    /// [`GridLaplace::release`]).
    pub fn release<R: RngCore + ?Sized>(&self, rng: &mut R, true_steps: i128) -> GridValue {
        let z = self.noise.draw(&mut Bits::new(rng));
        GridValue {
            steps: true_steps.saturating_add(z),
            k: self.k,
        }
    }

    /// Releases whole answers, one independent noise each: `answer 2^k` steps plus noise.
    pub fn release_all<R: RngCore + ?Sized>(&self, rng: &mut R, answers: &[i128]) -> Vec<f64> {
        let mut bits = Bits::new(rng);
        answers
            .iter()
            .map(|a| {
                let z = self.noise.draw(&mut bits);
                GridValue {
                    steps: a.saturating_mul(1i128 << self.k).saturating_add(z),
                    k: self.k,
                }
                .value()
            })
            .collect()
    }
}

// ---------------------------------------------------------------------------------------
// Staircase noise on a grid
// ---------------------------------------------------------------------------------------

/// The grid of staircase noise: `2^-STAIRCASE_GRID_BITS` of the sensitivity.
pub const STAIRCASE_GRID_BITS: u32 = 20;

/// The narrowest inner step dpq uses, as a fraction of the sensitivity: `2^-10`.
///
/// The variance-optimal inner width `gamma*` falls like `(e^-eps / 2)^(1/3)` and is below
/// `2^-10` for eps above about 20; sampling a block's inner part takes about `1/gamma` tries
/// (see [`GridStaircase`]), so a narrower step would make sampling slow (`e^(eps/3)` tries)
/// for no visible gain: at such epsilons both variances are below `10^-6`. Every
/// `gamma` in `[0, 1]` gives an eps-DP staircase, so this changes accuracy only.
pub const STAIRCASE_MIN_INNER_BITS: u32 = 10;

/// The staircase mechanism for a count (sensitivity 1) released on the grid `2^-20`, sampled
/// exactly with integer arithmetic.
///
/// The staircase law (Geng and Viswanath 2016; the optimal absolutely continuous
/// data-independent noise of the Soria-Comas and Domingo-Ferrer slides) has density `a b^k`
/// on `|x| in [k, k + gamma)` and `a b^(k+1)` on `|x| in [k + gamma, k + 1)`, `b = e^-eps`.
/// On the grid of `L = 2^20` points per unit, with `G = round(gamma L)` inner points, the
/// noise is `Z / L` with, for every integer `z`,
///
/// ```text
/// P(Z = z) ∝ b^floor(|z|/L)      if |z| mod L < G,
///            b^(floor(|z|/L)+1)  otherwise.
/// ```
///
/// # Privacy: eps-DP, exactly
///
/// The mass `w(z)` is non-increasing in `|z|` and `w(|z| + L) = b w(|z|)`. Neighbouring
/// counts are exactly `L` steps apart, so for the output `n = c L + Z` and the neighbour
/// `c' = c ± 1`: `w(n - c'L) >= w(|n - cL| + L) = b w(n - cL)` (since `|n - c'L| <= |n - cL| + L`),
/// i.e. `P(n | c) / P(n | c') <= e^eps`, for every grid point `n`; both neighbours reach every
/// grid point. Sampling uses no float, so no rounding artefact tells them apart (Mironov 2012).
///
/// # Sampling
///
/// `|Z| = K L + U`. The block `K` has `P(K = k) ∝ b^k` (each block's total mass is the same
/// `G + (L - G) b` times `b^k`): the discrete Laplace's magnitude with scale `1/eps`. Within a
/// block, `P(U = u) ∝ 1` for `u < G` and `b` for `u >= G`: draw `u` uniform on `[0, L)` and
/// accept it when `u < G`, or else with probability `b` (an exact Bernoulli(exp(-eps))),
/// retrying otherwise; a try succeeds with probability `G/L + (1 - G/L) b >= gamma`. Then the
/// sign, redrawing `-0` as the discrete Laplace does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GridStaircase {
    eps: Rational,
    blocks: DiscreteLaplace,
    /// Inner points per block, `G`, in `[L 2^-10, L]`.
    inner: u128,
}

impl GridStaircase {
    /// Points per unit of sensitivity, `L = 2^20`.
    pub const STEPS: u128 = 1 << STAIRCASE_GRID_BITS;

    /// Staircase noise for a count with inner width `gamma` (clamped to `[2^-10, 1]`; NaN
    /// gives 1/2), rounded to the grid.
    pub fn for_count(eps: ExactEpsilon, gamma: f64) -> Self {
        let l = Self::STEPS as f64;
        let g = if gamma.is_nan() { 0.5 } else { gamma };
        // Float to integer casts saturate; the clamp keeps G in [L 2^-10, L].
        let inner =
            ((g * l).round() as u128).clamp(Self::STEPS >> STAIRCASE_MIN_INNER_BITS, Self::STEPS);
        Self {
            eps: eps.as_rational(),
            blocks: DiscreteLaplace::new(eps.count_scale()),
            inner,
        }
    }

    /// The inner width used, `G / L`.
    pub fn gamma(&self) -> f64 {
        self.inner as f64 / Self::STEPS as f64
    }

    /// Inner points per block, `G`.
    pub fn inner_steps(&self) -> u64 {
        // G <= L = 2^20.
        self.inner as u64
    }

    /// The grid spacing `2^-20`.
    pub fn grid(&self) -> f64 {
        grid_f64(STAIRCASE_GRID_BITS)
    }

    /// One draw of `Z`, in grid steps.
    pub fn draw_steps<R: RngCore + ?Sized>(&self, rng: &mut R) -> i128 {
        let mut bits = Bits::new(rng);
        let (num, den) = (self.eps.num, self.eps.den);
        loop {
            let k = self.blocks.magnitude(&mut bits);
            let u = loop {
                let u = bits.uniform_below(Self::STEPS);
                if u < self.inner || bits.bernoulli_exp(num, den) {
                    break u;
                }
            };
            let m = i128::try_from(k)
                .unwrap_or(i128::MAX)
                .saturating_mul(Self::STEPS as i128)
                .saturating_add(u as i128);
            let negative = bits.bit();
            if negative && m == 0 {
                continue;
            }
            return if negative { -m } else { m };
        }
    }

    /// Releases a count: `count 2^20 + Z` steps of `2^-20` (eps-DP, see above).
    pub fn release_count<R: RngCore + ?Sized>(&self, rng: &mut R, count: i64) -> GridValue {
        let z = self.draw_steps(rng);
        GridValue {
            // |count| <= 2^63, so count 2^20 fits an i128 with room for any Z.
            steps: (i128::from(count) << STAIRCASE_GRID_BITS).saturating_add(z),
            k: STAIRCASE_GRID_BITS,
        }
    }
}

/// The Laplace mechanism for a count on its grid: `count + Z * 2^-k` with
/// `k = grid_exponent(1/eps)` and `Z ~ DiscreteLaplace(2^k/eps)` exactly; eps-DP with no extra
/// cost (proof on [`GridLaplace`]).
pub fn laplace_count<R: RngCore + ?Sized>(rng: &mut R, count: i64, eps: ExactEpsilon) -> GridValue {
    GridLaplace::for_count(eps).release_count(rng, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaussian_noise_is_drawn_on_a_fine_grid_or_not_at_all() {
        // sigma^2 = 50: sigma 7.07 needs 2^8 steps per unit for 2^10 steps per sd.
        let g = GridGaussian::new(Rational::new(50, 1).expect("a variance")).expect("taken");
        assert_eq!(g.k(), 8);
        // sigma^2 = 1 / (2 x 0.01234567890123): the exact sampler does not take it on that
        // grid; no coarser grid is offered instead (inference assumes 2^-10 sd at most).
        let fine = Rational::new(50_000_000_000_000, 1_234_567_890_123).expect("a variance");
        assert!(GridGaussian::new(fine).is_none());
        // Large variances are drawn on the integers.
        let g = GridGaussian::new(Rational::new(1 << 22, 1).expect("a variance")).expect("taken");
        assert_eq!(g.k(), 0);
    }
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;
    use std::str::FromStr;

    fn dec(s: &str) -> Decimal {
        Decimal::from_str(s).expect("test decimal parses")
    }

    fn eps(s: &str) -> ExactEpsilon {
        ExactEpsilon::new(dec(s)).expect("test epsilon is valid")
    }

    fn rat(num: u128, den: u128) -> Rational {
        Rational::new(num, den).expect("test rational is positive")
    }

    fn rng(seed: u64) -> ChaCha20Rng {
        ChaCha20Rng::seed_from_u64(seed)
    }

    /// Asserts a Bernoulli frequency is within 5.33 standard deviations of `p`: the
    /// two-sided normal false-positive rate is 1e-7 per call.
    fn assert_frequency(hits: u64, n: u64, p: f64, what: &str) {
        let sd = (p * (1.0 - p) / n as f64).sqrt();
        let freq = hits as f64 / n as f64;
        assert!(
            (freq - p).abs() <= 5.33 * sd + 1e-12,
            "{what}: frequency {freq} vs {p} (sd {sd})"
        );
    }

    #[test]
    fn rationals_are_reduced_and_refuse_zero() {
        assert_eq!(Rational::new(0, 1), None);
        assert_eq!(Rational::new(1, 0), None);
        let r = rat(10, 4);
        assert_eq!((r.num(), r.den()), (5, 2));
        assert_eq!(rat(u128::MAX, u128::MAX), Rational::ONE);
        assert_eq!(rat(3, 6).recip(), rat(2, 1));
        assert_eq!(gcd(0, 7), 7);
        assert_eq!(gcd(1 << 100, 3 << 90), 1 << 90);
        assert_eq!(gcd(u128::MAX, u128::MAX - 1), 1);
    }

    #[test]
    fn mul_pow2_cancels_twos_and_refuses_overflow() {
        assert_eq!(rat(1, 8).mul_pow2(2), Some(rat(1, 2)));
        assert_eq!(rat(1, 8).mul_pow2(5), Some(rat(4, 1)));
        assert_eq!(rat(3, 5).mul_pow2(0), Some(rat(3, 5)));
        assert_eq!(rat(1, 1).mul_pow2(127), Some(rat(1 << 127, 1)));
        assert_eq!(rat(1, 1).mul_pow2(128), None);
        assert_eq!(rat(3, 1).mul_pow2(127), None);
        assert_eq!(rat(3, 1 << 100).mul_pow2(200), Some(rat(3 << 100, 1)));
        assert_eq!(rat(u128::MAX, 1).mul_pow2(1), None);
    }

    #[test]
    fn epsilon_is_the_exact_decimal_fraction() {
        for bad in ["0", "-0.1", "0.0000000000000000000000000000"] {
            assert_eq!(
                ExactEpsilon::new(dec(bad)),
                Err(ParamError::InvalidEpsilon),
                "{bad}"
            );
        }
        assert_eq!(eps("0.1").as_rational(), rat(1, 10));
        assert_eq!(eps("0.10").as_rational(), rat(1, 10));
        assert_eq!(eps("1").count_scale(), Rational::ONE);
        assert_eq!(eps("0.000001").count_scale(), rat(1_000_000, 1));
        assert_eq!(eps("1000").count_scale(), rat(1, 1000));
        assert_eq!(eps("0.25").count_scale(), rat(4, 1));
        // 28 decimals: mantissa and 10^28 both fit.
        let e = eps("0.1234567890123456789012345678");
        assert_eq!(
            e.as_rational(),
            rat(1_234_567_890_123_456_789_012_345_678, 10u128.pow(28))
        );
        assert_eq!(
            eps("0.0000000000000000000000000001").count_scale(),
            rat(10u128.pow(28), 1)
        );
        let max = ExactEpsilon::new(Decimal::MAX).expect("Decimal::MAX is a valid epsilon");
        assert_eq!(max.as_rational(), rat((1u128 << 96) - 1, 1));
        assert!((eps("0.3").to_f64() - 0.3).abs() < 1e-15);
    }

    #[test]
    fn bits_are_fair_and_uniform_below_is_uniform() {
        let mut r = rng(1);
        let mut bits = Bits::new(&mut r);
        const N: u64 = 200_000;
        let ones = (0..N).filter(|_| bits.bit()).count() as u64;
        assert_frequency(ones, N, 0.5, "bit");
        // Mixed widths straddle word boundaries.
        let mut low = 0u64;
        for i in 0..N {
            let n = (i % 64) as u32 + 1;
            let v = bits.bits(n);
            assert!(n == 64 || v < (1u64 << n));
            low += v & 1;
        }
        assert_frequency(low, N, 0.5, "low bit of bits(n)");
        for t in [
            3u128,
            5,
            6,
            (1 << 12) + 1,
            1_000_003,
            u128::from(u64::MAX),
            1 << 64 | 1,
            u128::MAX,
        ] {
            let mut first_third = 0u64;
            for _ in 0..30_000 {
                let x = bits.uniform_below(t);
                assert!(x < t);
                first_third += u64::from(x < t / 3);
            }
            // P(x < floor(t/3)) = floor(t/3)/t
            let p = (t / 3) as f64 / t as f64;
            assert_frequency(first_third, 30_000, p, &format!("uniform_below({t})"));
        }
        assert_eq!(bits.uniform_below(1), 0);
    }

    #[test]
    fn bernoulli_ratio_frequencies() {
        let mut r = rng(2);
        let mut bits = Bits::new(&mut r);
        const N: u64 = 100_000;
        let half = u128::MAX / 2 + 1; // 2^127: exercises the overflow-free doubling
        let cases: [(u128, u128); 7] = [
            (1, 3),
            (2, 7),
            (1, 2),
            (7, 8),
            (half / 3, half),
            (u128::MAX / 3 * 2, u128::MAX),
            (1, 1 << 20),
        ];
        for (a, b) in cases {
            let hits = (0..N).filter(|_| bits.bernoulli_ratio(a, b)).count() as u64;
            assert_frequency(hits, N, a as f64 / b as f64, &format!("Bernoulli({a}/{b})"));
        }
        assert!((0..100).all(|_| bits.bernoulli_ratio(5, 5)));
        assert!((0..100).all(|_| !bits.bernoulli_ratio(0, 5)));
    }

    #[test]
    fn bernoulli_exp_frequencies() {
        // 100,000 draws per gamma; each compared with exp(-gamma) at 5.33 sd (1e-7).
        let mut r = rng(3);
        const N: u64 = 100_000;
        let one = NonZeroU128::MIN;
        let cases: [(u128, u128); 8] = [
            (0, 1),
            (1, 2),
            (1, 1),
            (1, 3),
            (5, 2),
            (3, 1),
            (7, 10),
            (u128::MAX / 2, u128::MAX), // gamma just below 1/2 with huge terms
        ];
        for (num, den) in cases {
            let den_nz = NonZeroU128::new(den).expect("non-zero");
            let hits = (0..N)
                .filter(|_| bernoulli_exp(&mut r, num, den_nz))
                .count() as u64;
            let p = (-(num as f64 / den as f64)).exp();
            assert_frequency(hits, N, p, &format!("Bernoulli(exp(-{num}/{den}))"));
        }
        assert!((0..100).all(|_| bernoulli_exp(&mut r, 0, one)));
        // A huge gamma is refused quickly (all of a long run of Bernoulli(exp(-1)) must be 1).
        assert!((0..100).all(|_| !bernoulli_exp(&mut r, u128::MAX, one)));
    }

    #[test]
    fn bernoulli_exp_unit_with_overflowing_den_times_k() {
        // den * K overflows for K >= 2: the product form Bernoulli(gamma) * Bernoulli(1/K)
        // is used; gamma = 1 - 2^-127... ~ 1, so P = exp(-1) up to 1e-38.
        let mut r = rng(4);
        let mut bits = Bits::new(&mut r);
        const N: u64 = 100_000;
        let hits = (0..N)
            .filter(|_| bits.bernoulli_exp_unit(u128::MAX - 1, u128::MAX))
            .count() as u64;
        assert_frequency(hits, N, (-1f64).exp(), "Bernoulli(exp(-(1-tiny)))");
    }

    #[test]
    fn discrete_laplace_mean_abs_matches() {
        // E|Z| = 2a/(1 - a^2) for P(z) = (1-a)/(1+a) a^|z|. 100,000 draws; the bound is 6
        // standard errors of the mean (Var|Z| <= E[Z^2] = 2a/(1-a)^2), two-sided rate < 2e-9.
        let mut r = rng(5);
        const N: usize = 100_000;
        for scale in [rat(1, 1), rat(10, 3), rat(1, 4), rat(10 << 17, 1)] {
            let dl = DiscreteLaplace::new(scale);
            let mut out = vec![0i128; N];
            dl.fill(&mut r, &mut out);
            let a = (-1.0 / scale.to_f64()).exp();
            let mean_abs = out.iter().map(|z| z.unsigned_abs() as f64).sum::<f64>() / N as f64;
            let expected = 2.0 * a / (1.0 - a * a);
            let se = (2.0 * a / ((1.0 - a) * (1.0 - a)) / N as f64).sqrt();
            assert!(
                (mean_abs - expected).abs() < 6.0 * se,
                "scale {scale:?}: E|Z| {mean_abs} vs {expected}"
            );
            let mean = out.iter().map(|&z| z as f64).sum::<f64>() / N as f64;
            assert!(mean.abs() < 6.0 * se, "scale {scale:?}: mean {mean}");
        }
    }

    #[test]
    fn extreme_epsilons_neither_panic_nor_overflow() {
        let mut r = rng(6);
        for e in [
            "0.000001",
            "1000",
            "0.1234567890123456789012345678",
            "0.0000000000000000000000000001",
            "79228162514264337593543950335",
            "3.1415926535897932384626433832",
        ] {
            let e = eps(e);
            for _ in 0..200 {
                let z = geometric(&mut r, e);
                let g = laplace_count(&mut r, 1_000_000, e);
                assert!(g.value().is_finite());
                assert!(g.k <= MAX_GRID_EXPONENT);
                assert!(z.unsigned_abs() < 1u128 << 120);
            }
            let lap = GridLaplace::for_count(e);
            let g = lap.release_count(&mut r, i64::MAX);
            assert!(g.value().is_finite());
            let g = lap.release_count(&mut r, i64::MIN);
            assert!(g.value().is_finite());
        }
        // Tiny eps: noise of scale 1e28 is far beyond i64 but fits in i128.
        let z = geometric(&mut r, eps("0.0000000000000000000000000001"));
        assert!(z.unsigned_abs() < 1u128 << 100);
        // Huge eps: the answer is exact almost always.
        assert_eq!(geometric(&mut r, eps("79228162514264337593543950335")), 0);
    }

    #[test]
    fn grid_exponent_is_the_smallest_power_of_two_at_most_scale_over_2_pow_20() {
        // eps = 0.1: 2^17/0.1 = 1.31e6 >= 2^20 = 1.05e6 > 2^16/0.1.
        assert_eq!(grid_exponent(eps("0.1").count_scale()), 17);
        assert_eq!(grid_exponent(eps("1").count_scale()), 20);
        assert_eq!(grid_exponent(eps("0.5").count_scale()), 19);
        assert_eq!(grid_exponent(eps("0.51").count_scale()), 20);
        assert_eq!(grid_exponent(eps("1000").count_scale()), 30);
        assert_eq!(grid_exponent(eps("0.000001").count_scale()), 1);
        assert_eq!(grid_exponent(eps("0.0000001").count_scale()), 0);
        assert_eq!(
            grid_exponent(eps("79228162514264337593543950335").count_scale()),
            62
        );
        for e in ["0.1", "0.3", "1", "2.5", "1000", "0.000001"] {
            let scale = eps(e).count_scale();
            let k = grid_exponent(scale);
            let steps = scale.to_f64() * (1u64 << k) as f64;
            assert!(
                (2f64.powi(20)..2f64.powi(21)).contains(&steps),
                "eps {e}: {steps} steps"
            );
        }
        let lap = GridLaplace::for_count(eps("0.1"));
        assert_eq!(lap.k(), 17);
        assert_eq!(lap.step_scale(), rat(10 << 17, 1));
        assert_eq!(lap.grid(), 2f64.powi(-17));
    }

    #[test]
    fn grid_values_are_on_the_grid_and_round_trip() {
        let lap = GridLaplace::for_count(eps("0.3"));
        let mut r = rng(7);
        for c in [0i64, 1, -5, 1 << 40, i64::MAX] {
            let g = lap.release_count(&mut r, c);
            let v = g.value();
            let scaled = v * (1u64 << g.k) as f64;
            assert_eq!(scaled, scaled.trunc(), "{v} is off the grid");
        }
        assert_eq!(lap.to_steps(1.0), Some(1 << lap.k()));
        assert_eq!(lap.to_steps(-0.5), Some(-(1 << (lap.k() - 1))));
        assert_eq!(lap.to_steps(f64::NAN), None);
        assert_eq!(lap.to_steps(f64::INFINITY), None);
        assert_eq!(lap.to_steps(1e300), None);
        let g = GridValue { steps: 3, k: 2 };
        assert_eq!(g.value(), 0.75);
        assert_eq!(g.grid(), 0.25);
    }

    #[test]
    fn sampling_is_reproducible_with_a_seed() {
        let e = eps("0.5");
        let a: Vec<i128> = {
            let mut r = rng(9);
            (0..50).map(|_| geometric(&mut r, e)).collect()
        };
        let b: Vec<i128> = {
            let mut r = rng(9);
            (0..50).map(|_| geometric(&mut r, e)).collect()
        };
        assert_eq!(a, b);
        assert!(a.iter().any(|&z| z > 0) && a.iter().any(|&z| z < 0));
    }
}
