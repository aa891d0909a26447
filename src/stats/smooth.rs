//! Data-dependent noise: the smooth sensitivity of Nissim, Raskhodnikova and Smith (2007,
//! "Smooth sensitivity and sampling in private data analysis") and the heavy-tailed noise
//! Soria-Comas and Domingo-Ferrer's slides evaluate against Laplace.
//!
//! # The mechanism
//!
//! The local sensitivity `LS(x)` of a function at a data set `x` is the most `f` moves
//! between `x` and a neighbour; it can be far below the global sensitivity `Δf`, but noise
//! scaled to it leaks `x`. The beta-smooth sensitivity
//!
//! ```text
//! S*(x) = max over data sets y of  e^(-beta d(x, y)) LS(y)
//! ```
//!
//! is the least function above `LS` that changes by at most `e^beta` between neighbours.
//! With `Z` of density proportional to `1 / (1 + |z|^gamma)` (`gamma > 1`; the slides call
//! the exponent delta), releasing `f(x) + 4 gamma S*(x) / eps * Z` with `beta = eps / gamma`
//! is eps-differentially private (NRS, Lemma 2.10 and Corollary 2.4: the law is
//! `(eps/(4 gamma), eps/gamma)`-admissible). Its variance is
//! `16 gamma^2 sin(pi/gamma) / sin(3 pi/gamma) (S*/eps)^2` for `gamma > 3`; the slides print
//! the factor as 14, but their own numbers (24045 at eps 0.1, the ratio 10.96) follow from 16,
//! the factor the mechanism's scale implies.
//!
//! # The functions
//!
//! All under the add/remove neighbourhood (the slides' Neighbourhood 1, the one they evaluate):
//!
//! - the relative frequency `m / n` of a property over a whole data set of `n` records, `m`
//!   of which have it; the empty data set's share is taken to be 1/2, which keeps the global
//!   sensitivity at the slides' 1/2 for every data set, the tiny ones included;
//! - the minimum, median (the lower one, the `ceil(n/2)`-th value) and maximum of values in
//!   a public range `[lo, hi]`; an empty data set's minimum is `hi`, its median and maximum
//!   `lo` (the order statistics of the values padded with `lo` below and `hi` above, as NRS
//!   pad them).
//!
//! Every smooth sensitivity here is computed exactly by its definition, searching the data
//! sets at distance `k = 0, 1, 2, ...` until no farther one can matter; `tests/statistics/smooth.rs`
//! checks each against brute force over every data set within distance `k` on small inputs.

use statrs::function::beta::beta_reg;
use std::f64::consts::PI;

use super::{ParamError, Probability};

/// The most data sets' distances searched before giving up (see [`TooFine`]).
const MAX_DISTANCE: u64 = 20_000;

/// The most distances a release's full search may take (see [`full_distance`]): enough for
/// `eps / gamma` down to about 0.007, and about 50 ms of work.
pub const MAX_FULL_DISTANCE: u64 = 5_000;

/// The distance a release searches the data sets out to, from public facts alone: past `K`
/// with `e^(-beta K) top <= floor` no data set can lift the smooth sensitivity above the
/// floor, whatever the data (`top` bounds every local sensitivity). `None` when that is
/// beyond [`MAX_FULL_DISTANCE`]: the release is refused, for every data set alike.
pub fn full_distance(top: f64, floor: f64, beta: f64) -> Option<u64> {
    let k = ((top / floor).ln() / beta).ceil();
    (k.is_finite() && k >= 0.0 && k <= MAX_FULL_DISTANCE as f64).then_some(k as u64)
}

/// Why a smooth sensitivity was not computed: `eps / gamma` is so small that data sets
/// farther than [`MAX_DISTANCE`] would still matter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the smooth sensitivity needs data sets farther than {MAX_DISTANCE} rows away at this EPS / GAMMA")]
pub struct TooFine;

// ---------------------------------------------------------------------------------------
// The heavy-tailed law
// ---------------------------------------------------------------------------------------

/// The law of `Z` with density proportional to `1 / (1 + |z|^gamma)`, `gamma > 1`.
///
/// With `a = 1 - 1/gamma` and `b = 1/gamma`, `P(|Z| > z) = I_y(a, b)` at
/// `y = 1 / (1 + z^gamma)` (the regularised incomplete beta function), and the density's
/// normaliser is `2 (pi/gamma) / sin(pi/gamma)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeavyTail {
    gamma: f64,
}

impl HeavyTail {
    /// The law with exponent `gamma`, `1 < gamma <= 1000`.
    pub fn new(gamma: f64) -> Result<Self, ParamError> {
        if gamma.is_finite() && gamma > 1.0 && gamma <= 1000.0 {
            Ok(Self { gamma })
        } else {
            Err(ParamError::NotPositive)
        }
    }

    /// The exponent.
    pub fn gamma(&self) -> f64 {
        self.gamma
    }

    /// The density at `z`.
    pub fn pdf(&self, z: f64) -> f64 {
        let g = self.gamma;
        let norm = 2.0 * (PI / g) / (PI / g).sin();
        1.0 / ((1.0 + z.abs().powf(g)) * norm)
    }

    /// `P(|Z| > z)` for `z >= 0` (1 below 0).
    pub fn two_sided_tail(&self, z: f64) -> f64 {
        if z.is_nan() || z <= 0.0 {
            return 1.0;
        }
        let g = self.gamma;
        let ln_zg = g * z.ln();
        // y = 1 / (1 + z^g), without overflow: e^(-ln(1 + e^t)).
        let y = if ln_zg > 30.0 {
            (-ln_zg).exp() / (1.0 + (-ln_zg).exp())
        } else {
            1.0 / (1.0 + ln_zg.exp())
        };
        if y <= 0.0 {
            return (self.tail_constant().ln() - (g - 1.0) * z.ln()).exp();
        }
        beta_reg(1.0 - 1.0 / g, 1.0 / g, y)
    }

    /// The constant `C` of the tail `P(|Z| > z) ~ C z^(1 - gamma)` as `z` grows:
    /// `sin(pi/gamma) / (pi (1 - 1/gamma))`.
    fn tail_constant(&self) -> f64 {
        let g = self.gamma;
        (PI / g).sin() / (PI * (1.0 - 1.0 / g))
    }

    /// `P(Z <= z)`.
    pub fn cdf(&self, z: f64) -> f64 {
        let half = 0.5 * self.two_sided_tail(z.abs());
        if z < 0.0 {
            half
        } else {
            1.0 - half
        }
    }

    /// The `z >= 0` with `P(|Z| > z) = q`, for `0 < q <= 1`: by bisection on `ln z`, and
    /// from the tail's power law where `q` is below `1e-200`.
    pub fn tail_quantile(&self, q: f64) -> f64 {
        if q >= 1.0 {
            return 0.0;
        }
        let g = self.gamma;
        if q < 1e-200 {
            return ((self.tail_constant().ln() - q.ln()) / (g - 1.0)).exp();
        }
        let (mut lo, mut hi) = (-60.0_f64, 60.0_f64);
        while self.two_sided_tail(hi.exp()) > q {
            hi *= 2.0;
        }
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if self.two_sided_tail(mid.exp()) > q {
                lo = mid;
            } else {
                hi = mid;
            }
            if hi - lo < 1e-15 {
                break;
            }
        }
        (0.5 * (lo + hi)).exp()
    }

    /// The half-width of the central interval holding `Z` with the given probability.
    pub fn half_width(&self, confidence: Probability) -> f64 {
        self.tail_quantile(1.0 - confidence.get())
    }

    /// `Var Z = sin(pi/gamma) / sin(3 pi/gamma)`; infinite for `gamma <= 3`.
    pub fn variance(&self) -> f64 {
        let g = self.gamma;
        if g <= 3.0 {
            f64::INFINITY
        } else {
            (PI / g).sin() / (3.0 * PI / g).sin()
        }
    }

    /// One draw of `|Z|`'s sign and size: `|Z|` by inverting its tail at a uniform in
    /// `(0, 1]` drawn with every exponent (so the tail is never cut off), the sign by a fair
    /// bit.
    pub fn sample<R: rand::RngCore + ?Sized>(&self, rng: &mut R) -> f64 {
        let sign = rng.next_u32() & 1 == 0;
        let z = self.tail_quantile(open_uniform(rng));
        if sign {
            z
        } else {
            -z
        }
    }
}

/// A uniform number in `(0, 1]` whose exponent is drawn bit by bit: `[2^-(e+1), 2^-e)` with
/// probability `2^-(e+1)` for every `e` (to 1000), a 53-bit mantissa within.
fn open_uniform<R: rand::RngCore + ?Sized>(rng: &mut R) -> f64 {
    let mut e = 0u32;
    loop {
        let w = rng.next_u64();
        if w != 0 {
            e += w.leading_zeros();
            break;
        }
        e += 64;
        if e >= 1000 {
            break;
        }
    }
    let m = (rng.next_u64() >> 11) | (1u64 << 52);
    // m in [2^52, 2^53): m 2^-53 in [1/2, 1), then scaled by 2^-e (exact).
    (m as f64) * 2f64.powi(-53) * 2f64.powi(-(e.min(1000) as i32))
}

/// The data-dependent release on a grid: `true_steps + round(scale_steps * Z)`, in grid
/// steps. The true value is on the grid, so the output is the continuous release
/// `true_steps + scale_steps * Z` rounded to the nearest step, a function of it alone
/// (post-processing): every grid point can come out of every data set, and no float rounding
/// of the true value shows in the output (Mironov 2012). The output saturates at `±2^100`
/// steps, again a function of the continuous release for any true value within `±2^64`
/// steps (the noise is held within `±2^110` first, beyond which the output saturates anyway).
pub fn release_steps<R: rand::RngCore + ?Sized>(
    rng: &mut R,
    law: &HeavyTail,
    true_steps: i128,
    scale_steps: f64,
) -> i128 {
    let cap = 2f64.powi(110);
    let noise = (scale_steps * law.sample(rng)).round().clamp(-cap, cap) as i128;
    true_steps
        .saturating_add(noise)
        .clamp(-(1i128 << 100), 1i128 << 100)
}

// ---------------------------------------------------------------------------------------
// The mechanism's constants
// ---------------------------------------------------------------------------------------

/// `beta = eps / gamma`: how fast the smooth sensitivity must decay with distance.
pub fn beta(eps: f64, gamma: f64) -> f64 {
    eps / gamma
}

/// The noise scale `4 gamma S / eps`.
pub fn scale(eps: f64, gamma: f64, s: f64) -> f64 {
    4.0 * gamma * s / eps
}

/// `16 gamma^2 sin(pi/gamma) / sin(3 pi/gamma)`: the variance of the release is this times
/// `(S/eps)^2` (infinite for `gamma <= 3`).
pub fn variance_factor(gamma: f64) -> f64 {
    match HeavyTail::new(gamma) {
        Ok(law) => 16.0 * gamma * gamma * law.variance(),
        Err(_) => f64::INFINITY,
    }
}

/// The variance of the data-dependent release at smooth sensitivity `s`.
pub fn dependent_variance(eps: f64, gamma: f64, s: f64) -> f64 {
    variance_factor(gamma) * (s / eps).powi(2)
}

/// The half-width of the data-dependent release's central interval at smooth sensitivity `s`.
pub fn dependent_half_width(eps: f64, gamma: f64, s: f64, confidence: Probability) -> f64 {
    match HeavyTail::new(gamma) {
        Ok(law) => scale(eps, gamma, s) * law.half_width(confidence),
        Err(_) => f64::INFINITY,
    }
}

/// The slides' rule of thumb: the `gamma` of least variance factor, and how many times
/// smaller than the global sensitivity the smooth sensitivity must be for data-dependent
/// noise to have the smaller variance, `sqrt(min factor / 2)` (10.96, at gamma 4.53).
pub fn rule_of_thumb() -> (f64, f64) {
    let (gamma, factor) = minimise(variance_factor, 3.0, 40.0);
    (gamma, (factor / 2.0).sqrt())
}

/// The `gamma` in `(lo, hi)` minimising `f`, and the minimum: a scan of 200 points, then a
/// golden-section search around the best. `f` may be infinite in places.
pub fn minimise(f: impl Fn(f64) -> f64, lo: f64, hi: f64) -> (f64, f64) {
    const POINTS: usize = 200;
    let at = |i: usize| lo + (hi - lo) * (i as f64 + 0.5) / POINTS as f64;
    let best = (0..POINTS)
        .map(|i| (i, f(at(i))))
        .filter(|(_, v)| v.is_finite())
        .min_by(|a, b| a.1.total_cmp(&b.1));
    let Some((i, _)) = best else {
        return (f64::NAN, f64::INFINITY);
    };
    let step = (hi - lo) / POINTS as f64;
    let (mut a, mut b) = ((at(i) - step).max(lo), (at(i) + step).min(hi));
    let r = (5f64.sqrt() - 1.0) / 2.0;
    let (mut c, mut d) = (b - r * (b - a), a + r * (b - a));
    let (mut fc, mut fd) = (f(c), f(d));
    for _ in 0..100 {
        if fc <= fd {
            b = d;
            d = c;
            fd = fc;
            c = b - r * (b - a);
            fc = f(c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + r * (b - a);
            fd = f(d);
        }
        if b - a < 1e-10 {
            break;
        }
    }
    let g = 0.5 * (a + b);
    (g, f(g))
}

// ---------------------------------------------------------------------------------------
// The relative frequency
// ---------------------------------------------------------------------------------------

/// `m / n`, and 1/2 for the empty data set.
pub fn share(n: u64, m: u64) -> f64 {
    if n == 0 {
        0.5
    } else {
        m as f64 / n as f64
    }
}

/// The local sensitivity of the relative frequency at `m` of `n` records, exactly: the most
/// it moves when a record with or without the property is added, or one that exists removed.
pub fn share_local(n: u64, m: u64) -> f64 {
    let f = share(n, m);
    let mut ls = (f - share(n + 1, m))
        .abs()
        .max((f - share(n + 1, m + 1)).abs());
    if n > m {
        ls = ls.max((f - share(n - 1, m)).abs());
    }
    if m > 0 {
        ls = ls.max((f - share(n - 1, m - 1)).abs());
    }
    ls
}

/// The largest local sensitivity of the relative frequency over data sets of at least `n`
/// records: `1 / (n - 1)` from three on, 1/2 below.
fn share_local_bound(n: i128) -> f64 {
    if n >= 3 {
        1.0 / (n - 1) as f64
    } else {
        0.5
    }
}

/// The beta-smooth sensitivity of the relative frequency at `m` of `n` records: the most
/// `e^(-beta k) LS(m', n')` over the data sets `k` additions and removals away, which have
/// `m'` records with the property and `n' - m'` without, `|m' - m| + |(n'-m') - (n-m)| = k`.
pub fn share_smooth(n: u64, m: u64, beta: f64) -> Result<f64, TooFine> {
    let (m0, u0) = (i128::from(m), i128::from(n - m.min(n)));
    let n0 = m0 + u0;
    let mut best = share_local(n, m);
    for k in 1..=i128::from(MAX_DISTANCE as u32) {
        // Whatever lies k or more away is at most e^(-beta k') bound(n - k'): a log-convex
        // function of k' on the stretch where the bound is 1/(n - k' - 1), so its largest
        // value is at an end of that stretch.
        let kf = k as f64;
        let near = (-beta * kf).exp() * share_local_bound(n0 - k);
        let far_k = (n0 - 3).max(k) as f64;
        let far = (-beta * far_k).exp() * 0.5;
        if near.max(far) <= best {
            return Ok(best);
        }
        let weight = (-beta * kf).exp();
        for dm in -k..=k {
            let du = k - dm.abs();
            for du in [du, -du] {
                let (m1, u1) = (m0 + dm, u0 + du);
                if m1 >= 0 && u1 >= 0 {
                    let ls = share_local((m1 + u1) as u64, m1 as u64);
                    best = best.max(weight * ls);
                }
                if du == 0 {
                    break;
                }
            }
        }
    }
    Err(TooFine)
}

/// The smooth sensitivity of the relative frequency, or `floor` if larger, searching every
/// data set out to the public distance of [`full_distance`] with no early stop: the work
/// depends on `beta` and `floor` alone, never on `n` or `m`.
pub fn share_smooth_full(n: u64, m: u64, beta: f64, floor: f64) -> Result<f64, TooFine> {
    let last = full_distance(0.5, floor, beta).ok_or(TooFine)?;
    let (m0, u0) = (i128::from(m), i128::from(n - m.min(n)));
    let mut best = share_local(n, m).max(floor);
    for k in 1..=i128::from(last) {
        let weight = (-beta * k as f64).exp();
        for dm in -k..=k {
            let du = k - dm.abs();
            for du in [du, -du] {
                let (m1, u1) = (m0 + dm, u0 + du);
                // Points outside the quadrant cost the same arithmetic and count nothing.
                let (mc, uc) = (m1.max(0), u1.max(0));
                let ls = share_local((mc + uc) as u64, mc as u64);
                let inside = if m1 >= 0 && u1 >= 0 { 1.0 } else { 0.0 };
                best = best.max(inside * weight * ls);
                if du == 0 {
                    break;
                }
            }
        }
    }
    Ok(best)
}

// ---------------------------------------------------------------------------------------
// Order statistics
// ---------------------------------------------------------------------------------------

/// Which order statistic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rank {
    /// The least value.
    Min,
    /// The lower median, the `ceil(n/2)`-th value.
    Median,
    /// The greatest value.
    Max,
}

/// A value an order statistic is taken of: a number, or whole grid steps, whose gaps are
/// computed exactly before they become floats (grid steps far from 0 are not exact floats).
pub trait OrderValue: Copy + PartialOrd {
    /// `hi - lo` as a float, `hi >= lo`.
    fn gap(hi: Self, lo: Self) -> f64;
}

impl OrderValue for f64 {
    fn gap(hi: Self, lo: Self) -> f64 {
        hi - lo
    }
}

impl OrderValue for i128 {
    fn gap(hi: Self, lo: Self) -> f64 {
        hi.saturating_sub(lo) as f64
    }
}

/// The values sorted ascending, padded with `lo` at positions `<= 0` and `hi` past `n`.
struct Padded<'a, T> {
    xs: &'a [T],
    lo: T,
    hi: T,
}

impl<T: OrderValue> Padded<'_, T> {
    fn n(&self) -> i128 {
        self.xs.len() as i128
    }

    /// The value at 1-based position `i`.
    fn at(&self, i: i128) -> T {
        if i <= 0 {
            self.lo
        } else if i > self.n() {
            self.hi
        } else {
            self.xs[(i - 1) as usize]
        }
    }

    /// `x_q - x_p`.
    fn gap(&self, p: i128, q: i128) -> f64 {
        T::gap(self.at(q), self.at(p))
    }
}

/// The statistic of `xs` (sorted ascending, within `[lo, hi]`).
pub fn order_value<T: OrderValue>(xs: &[T], lo: T, hi: T, rank: Rank) -> T {
    let p = Padded { xs, lo, hi };
    let n = p.n();
    p.at(match rank {
        Rank::Min => 1,
        Rank::Median => (n + 1) / 2,
        Rank::Max => n,
    })
}

/// The pairs of positions `(p, q)`, `p < q`, whose gap `x_q - x_p` some data set exactly `k`
/// additions and removals away has as its local sensitivity, on a statistic's own terms.
///
/// A data set's local sensitivity is a gap between two of its values that are neighbours in
/// order at the statistic's place (for the median, the median and the value below it when
/// the count is odd, above it when even; for the maximum, the maximum and the value below
/// it, or the maximum and `hi`, which an added record can bring). Reaching the gap
/// `(x_p, x_q)` from `x` removes the `w = q - p - 1` values between them, and then as many
/// additions (at `lo` or `hi`) or removals as put the gap at the statistic's place: for the
/// median, `|D - 1|` or `|D|` with `D = (values above) - (values below)`, whichever is least;
/// for the maximum every value above `x_q`; for the minimum every value below `x_p`.
fn pairs_at(rank: Rank, n: i128, k: i128, mut each: impl FnMut(i128, i128)) {
    for w in 0..=k {
        let d = k - w;
        match rank {
            Rank::Median => {
                // D = (n + 1 - q) - p = n - 2p - w must be 1 + d or -d (d > 0), 0 or 1 (d = 0).
                let targets: &[i128] = if d == 0 { &[0, 1] } else { &[1 + d, -d] };
                for &big_d in targets {
                    let twice_p = n - w - big_d;
                    if twice_p >= 0 && twice_p % 2 == 0 {
                        let p = twice_p / 2;
                        if p + w < n + 1 {
                            each(p, p + w + 1);
                        }
                    }
                }
            }
            Rank::Max => {
                let qs: &[i128] = if d == 0 { &[n, n + 1] } else { &[n - d] };
                for &q in qs {
                    let p = q - w - 1;
                    if p >= 0 && q >= 1 {
                        each(p, q);
                    }
                }
            }
            Rank::Min => {
                let ps: &[i128] = if d == 0 { &[0, 1] } else { &[1 + d] };
                for &p in ps {
                    let q = p + w + 1;
                    if q <= n + 1 && p <= n {
                        each(p, q);
                    }
                }
            }
        }
    }
}

/// The local sensitivity of the statistic at `xs` (sorted ascending, within `[lo, hi]`)
/// under additions and removals.
pub fn order_local<T: OrderValue>(xs: &[T], lo: T, hi: T, rank: Rank) -> f64 {
    let p = Padded { xs, lo, hi };
    let mut best = 0.0_f64;
    pairs_at(rank, p.n(), 0, |a, b| best = best.max(p.gap(a, b)));
    best
}

/// The beta-smooth sensitivity of the statistic at `xs` (sorted ascending, within
/// `[lo, hi]`) under additions and removals, or `floor` if that is larger (a constant floor
/// keeps it a smooth upper bound and the noise's scale above 0).
pub fn order_smooth<T: OrderValue>(
    xs: &[T],
    lo: T,
    hi: T,
    rank: Rank,
    beta: f64,
    floor: f64,
) -> Result<f64, TooFine> {
    let p = Padded { xs, lo, hi };
    let n = p.n();
    let width = T::gap(hi, lo);
    let mut best = floor.max(0.0);
    // Every pair costs at most 2n + 2 changes (remove all, add what is needed).
    let last = 2 * n + 2;
    for k in 0..=last {
        let weight = (-beta * k as f64).exp();
        if weight * width <= best {
            return Ok(best);
        }
        if k > i128::from(MAX_DISTANCE) {
            return Err(TooFine);
        }
        pairs_at(rank, n, k, |a, b| best = best.max(weight * p.gap(a, b)));
    }
    Ok(best)
}

/// [`order_smooth`] with a positive `floor`, searching every distance out to the public
/// one of [`full_distance`] with no early stop: the work depends on `beta`, `floor` and the
/// range alone, never on the values or how many there are.
pub fn order_smooth_full<T: OrderValue>(
    xs: &[T],
    lo: T,
    hi: T,
    rank: Rank,
    beta: f64,
    floor: f64,
) -> Result<f64, TooFine> {
    let p = Padded { xs, lo, hi };
    let last = full_distance(T::gap(hi, lo), floor, beta).ok_or(TooFine)?;
    let n = p.n();
    let mut best = floor;
    for k in 0..=i128::from(last) {
        let weight = (-beta * k as f64).exp();
        pairs_at(rank, n, k, |a, b| best = best.max(weight * p.gap(a, b)));
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_law_integrates_to_its_tails() {
        let law = HeavyTail::new(4.5).expect("4.5 is a valid exponent");
        // P(|Z| > 1) by the trapezoid rule on the density, against the beta function.
        let (steps, top) = (200_000, 1.0);
        let h = top / steps as f64;
        let inner: f64 = (0..steps)
            .map(|i| 0.5 * h * (law.pdf(i as f64 * h) + law.pdf((i + 1) as f64 * h)))
            .sum();
        assert!((1.0 - 2.0 * inner - law.two_sided_tail(1.0)).abs() < 1e-9);
        let z = law.tail_quantile(0.05);
        assert!((law.two_sided_tail(z) - 0.05).abs() < 1e-12);
    }

    #[test]
    fn the_far_tail_follows_the_power_law() {
        let law = HeavyTail::new(4.5).expect("4.5 is a valid exponent");
        let z = 1e40;
        let exact = law.two_sided_tail(z);
        let power = law.tail_constant() * z.powf(1.0 - 4.5);
        assert!((exact / power - 1.0).abs() < 1e-9, "{exact} {power}");
        let q = law.tail_quantile(1e-250);
        assert!(q.is_finite() && q > 1e60);
    }

    #[test]
    fn local_sensitivities_of_small_cases() {
        assert_eq!(share_local(0, 0), 0.5);
        assert_eq!(share_local(2, 1), 0.5);
        assert!((share_local(100, 50) - 50.0 / (100.0 * 99.0)).abs() < 1e-15);
        assert!((share_local(100, 0) - 1.0 / 101.0).abs() < 1e-15);
        let xs = [0.1, 0.5, 0.9];
        assert!((order_local(&xs, 0.0, 1.0, Rank::Median) - 0.4).abs() < 1e-15);
        assert!((order_local(&xs, 0.0, 1.0, Rank::Max) - 0.4).abs() < 1e-15);
        assert!((order_local(&[], 0.0, 1.0, Rank::Median) - 1.0).abs() < 1e-15);
    }
}
