//! The Monte Carlo comparison of the naive and Bayes estimators of a count (paper 1, section 4).
//!
//! One run draws a true count `k ~ Binomial(n, p)` and a noisy answer
//! `y = k + Laplace(1/eps)`, then scores the naive estimate `y` and the Bayes estimate
//! `E[k | y]` (Naldi and D'Acquisto 2014, eq. 11) by their absolute errors (eq. 12) and by which is closer
//! (eq. 13). [`simulate`] repeats this in parallel, reproducibly, and reports each metric
//! with a 95% interval; [`BayesTable`] makes each Bayes estimate cost O(1).
//!
//! The simulation releases nothing, so it uses the textbook float Laplace sampler
//! ([`laplace::sample`]): no privacy is at stake.

use std::fmt;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Binomial, Distribution};
use rayon::prelude::*;

use super::bayes::posterior;
use super::{laplace, Epsilon, Probability};

/// The largest database size `n` supported: 10^9.
///
/// [`BayesTable`] keeps one 32-byte row per count in a window around the prior's mode (see
/// its documentation): about `74 sqrt(n p (1-p))` rows, and never more than
/// [`MAX_TABLE_LEN`] = 2^20 (32 MiB; building it needs about 72 bytes per row, 72 MiB, for a
/// moment). The cap binds only when `n p (1-p) > 2e8` (`n` near 10^9, `p` near 1/2); the
/// window then still reaches 33 prior standard deviations from the mode (prior weights down
/// to `e^{-550}` of the mode's). Noisy answers beyond the window are frequent when
/// `eps sqrt(n p (1-p))` is small (the noise is then far wider than the prior); the table
/// answers them in O(1) too (see "Beyond the covered counts" at [`BayesTable`]), and leaves
/// to the slower exact [`posterior`] only answers that need the noise or the true count to
/// be some 30 prior standard deviations out *and* `eps sqrt(n p (1-p))` above about 18:
/// astronomically rare. Larger `n` would need a wider table, and `k + noise` would lose more
/// of the noise's low digits in `f64`.
pub const MAX_N: u64 = 1_000_000_000;

/// The largest number of runs [`simulate`] accepts: 10^8 (some ten seconds on two cores at
/// `n = 1000`). The 95% half-widths shrink as `1/sqrt(runs)`; at 10^8 runs they are already
/// about 2e-4 of the naive error `1/eps`.
pub const MAX_RUNS: u64 = 100_000_000;

/// Hard cap on the rows of a [`BayesTable`]: 2^20 rows of 32 bytes, 32 MiB.
pub const MAX_TABLE_LEN: usize = 1 << 20;

/// Runs per chunk. Chunk `c` draws from its own ChaCha8 stream `c`, so the outcome depends on
/// `(point, runs, seed)` and this constant, never on the number of threads.
pub const CHUNK_RUNS: u64 = 4096;

/// The table's window holds the counts whose prior weight `pi_k / pi_mode` is at least
/// `e^{-690}` (about 2.3e-300, still a normal `f64`).
const LN_WINDOW_THRESHOLD: f64 = -690.0;

/// A table row answers only where its own prior weight exceeds the bound on the prior mass
/// outside the window by this factor, `e^{57.5}` (about 9.4e24): see [`BayesTable`].
const LN_SAFETY: f64 = 57.5;

/// The beyond-the-table bound (see [`BayesTable`], "Beyond the covered counts") is used only
/// when the geometric ratio `s` of the left-out terms has `-ln s` at least this: then the
/// rounding of `ln s` (below 1e-13 absolute) moves `ln(1/(1-s))` by less than 1e-4.
const MIN_LN_GAP: f64 = 1e-9;

/// z for a two-sided 95% interval.
const Z95: f64 = 1.96;

/// One parameter point of the simulation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimPoint {
    /// Database size: the prior is `Binomial(n, p)`.
    pub n: u64,
    /// Predicate probability: the chance that one record is counted.
    pub p: Probability,
    /// Privacy level: the noise is `Laplace(1/eps)`.
    pub eps: Epsilon,
}

/// A Monte Carlo estimate with its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct McEstimate {
    /// The point estimate (a sample mean or a sample proportion).
    pub value: f64,
    /// Lower end of the 95% interval.
    pub lower: f64,
    /// Upper end of the 95% interval.
    pub upper: f64,
}

/// What [`simulate`] measured at one parameter point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimOutcome {
    /// The parameter point simulated.
    pub point: SimPoint,
    /// The number of runs.
    pub runs: u64,
    /// Monte Carlo mean of `|y - k|` (paper 1, eq. 12), interval `mean ± 1.96 s/sqrt(runs)`
    /// (infinite for a single run).
    pub m_naive: McEstimate,
    /// The exact naive mean absolute error, `1/eps` (paper 1, eq. 14).
    pub m_naive_exact: f64,
    /// Monte Carlo mean of `|E[k|y] - k|` (paper 1, eq. 12), interval as for `m_naive`.
    pub m_bayes: McEstimate,
    /// Proportion of runs with `|E[k|y] - k| < |y - k|` (strictly; paper 1, eq. 13), with its
    /// 95% Wilson score interval.
    pub p_bayes_better: McEstimate,
    /// Monte Carlo mean of the paired difference `|y - k| - |E[k|y] - k|`, an estimate of
    /// `M_naive - M_bayes`, interval as for `m_naive`. Both errors come from the same runs, so
    /// this interval is far narrower than the two separate ones when the gain is small (low
    /// noise): at `n = 1000, eps = 1` the gain is about 0.003 and 100,000 runs resolve it
    /// (half-width about 8e-4), while `m_naive` and `m_bayes` overlap.
    pub gain: McEstimate,
}

/// Why a simulation or a table was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    /// Zero runs estimate nothing.
    #[error("a simulation needs at least one run")]
    NoRuns,
    /// More runs than [`MAX_RUNS`].
    #[error("{runs} runs is more than the {max} a simulation allows")]
    TooManyRuns {
        /// The runs asked for.
        runs: u64,
        /// [`MAX_RUNS`].
        max: u64,
    },
    /// A database size above [`MAX_N`].
    #[error("n = {n} is larger than the {max} a simulation supports")]
    TooLarge {
        /// The size asked for.
        n: u64,
        /// [`MAX_N`].
        max: u64,
    },
    /// Stopped when asked (Ctrl-C at the prompt), before all its runs were done.
    #[error("interrupted before its runs were done")]
    Interrupted,
}

/// The sums of one table row `j` (paper 1, eq. 11 split at `j`; `rho_k = pi_k / pi_mode`,
/// `g = e^{-eps}`).
#[derive(Debug, Clone, Copy, Default)]
struct Row {
    /// `A_j = sum_{lo <= k <= j} k rho_k g^{j-k}`.
    a: f64,
    /// `C_j = sum_{lo <= k <= j} rho_k g^{j-k}`.
    c: f64,
    /// `B_j = sum_{j < k <= hi} k rho_k g^{k-j-1}`.
    b: f64,
    /// `D_j = sum_{j < k <= hi} rho_k g^{k-j-1}`.
    d: f64,
}

/// The Bayes estimate `E[k | y]` (Naldi and D'Acquisto 2014, eq. 11) for one `(n, p, eps)`, precomputed so
/// that each noisy answer costs O(1): a floor, one `exp` and a division.
///
/// # Method
///
/// Write `pi_k` for the Binomial(n, p) pmf, `rho_k = pi_k / pi_m` for it relative to the
/// mode `m = floor((n+1) p)`, and `g = e^{-eps}`. By eq. 11,
/// `E[k|y] = sum_k k rho_k e^{-eps|y-k|} / sum_k rho_k e^{-eps|y-k|}`.
///
/// * **Clamping.** For `y >= n` every `|y-k| = y-k = (y-n) + (n-k)`, so the factor
///   `e^{-eps(y-n)}` is common to every term of both sums and cancels: `E[k|y] = E[k|n]`.
///   Likewise `y <= 0` gives `|y-k| = -y + k` and `E[k|y] = E[k|0]`. So `y` is clamped
///   into `[0, n]` first.
/// * **Splitting at `j`.** For `y = j + t`, `0 <= t <= 1`, the counts `k <= j` have
///   `e^{-eps|y-k|} = e^{-eps t} g^{j-k}` and the counts `k > j` have
///   `e^{-eps(1-t)} g^{k-j-1}`. So with the row sums over the window `[lo, hi]`
///   `A_j = sum_{k <= j} k rho_k g^{j-k}`, `C_j = sum_{k <= j} rho_k g^{j-k}`,
///   `B_j = sum_{k > j} k rho_k g^{k-j-1}` and `D_j = sum_{k > j} rho_k g^{k-j-1}`,
///   `E = (e^{-eps t} A_j + e^{-eps(1-t)} B_j) / (e^{-eps t} C_j + e^{-eps(1-t)} D_j)`.
///   Multiplying through by `e^{eps t}` (for `t <= 1/2`) or `e^{eps(1-t)}` (for `t > 1/2`)
///   leaves a single factor `f = e^{-eps |1 - 2t|} <= 1`:
///   `E = (A + f B)/(C + f D)` or `(f A + B)/(f C + D)`. Every term is non-negative, so
///   nothing cancels. `f` may underflow (to a subnormal or 0, an absolute error below
///   5e-324), but only when `eps > 708`; then `g < e^{-708}`, so
///   `(B + E D)/C <= 2n D/C <= 2n (rho_{j+1} + g sum rho)/rho_j < 1e36` (with
///   `rho_j >= e^{-690}`, `p/(1-p) < 1e16`) and `E` moves by less than 1e-287: harmless
///   (likewise for `f C`, `f A`). The sums follow from the recursions
///   `A_j = g A_{j-1} + j rho_j`, `C_j = g C_{j-1} + rho_j` (forward) and
///   `B_j = g B_{j+1} + (j+1) rho_{j+1}`, `D_j = g D_{j+1} + rho_{j+1}` (backward): sums of
///   non-negative terms, each step adding at most two roundings, so a row's relative error
///   is at most about `2 * 2.2e-16` per row of the window (and in practice far less).
/// * **The prior.** `rho_k` is built outward from the mode by the ratios
///   `rho_{k+1}/rho_k = (n-k)/(k+1) * p/(1-p)` (no factorials, no overflow; the relative
///   error grows by at most two roundings per step). The window `[lo, hi]` keeps the counts
///   with `rho_k >= e^{-690}` (the binomial is log-concave, so they are contiguous), and
///   at most [`MAX_TABLE_LEN`] of them; tails below that are left out (they would underflow
///   to 0 anyway, harmlessly, but cost memory). That is about
///   `2 sqrt(2 * 690) sigma = 74 sigma` rows, `sigma = sqrt(n p (1-p))`, or all of
///   `[0, n]` when `n` is small (every count of `n = 100, p = 0.3`).
///
/// # Why the truncation keeps the accuracy
///
/// The ratios `rho_{k-1}/rho_k = k(1-p)/((n-k+1) p)` shrink as `k` falls, so the mass left
/// out below the window is at most the geometric series
/// `T_lo = rho_{lo-1} / (1 - q)`, `q = rho_{lo-2}/rho_{lo-1}`; likewise above it,
/// `T_hi = rho_{hi+1} / (1 - r)`, `r = rho_{hi+2}/rho_{hi+1}`. Both are computed (in log
/// space) when the table is built. For `y` in `[j, j+1]` with `lo <= j`, every left-out
/// term below has `e^{-eps|y-k|} = e^{-eps(y-j)} g^{j-k} <= e^{-eps(y-j)}`, while the kept
/// term `k = j` has weight `rho_j e^{-eps(y-j)}`: so the left-out mass below is at most
/// `T_lo / rho_j` of the total. Above, compare with the kept term `j+1` (or `j` itself when
/// `y = j`): at most `T_hi / rho_{j+1}`. The table therefore answers only for `y` in
/// `[ya, yb]`, the counts with `rho >= e^{57.5} max(T_lo, T_hi)`, where the left-out mass is
/// a fraction `delta <= 2 e^{-57.5} < 2.2e-25` of the posterior, whatever `eps`. Leaving out
/// a fraction `delta` moves the mean by at most `delta` times the distance between two
/// means in `[0, n]`: at most `2.2e-25 n <= 2.2e-16` for `n <= MAX_N`.
///
/// # Beyond the covered counts
///
/// A noisy answer `y` in `(yb, n)` or `(0, ya)` needs the true count or the noise some 30 to
/// 37 prior standard deviations out: rare when `eps sigma` is large, but routine when it is
/// small (at `n = 10^9`, `p = 1/2`, `eps = 10^-6` the noise's scale `1/eps` is 63 prior
/// standard deviations). There the posterior hardly depends on `y`, and the table answers
/// with a constant when a bound proves it:
///
/// * **Claim.** Let `y >= yb` (and, by the clamping, `y <= n`). Split the counts into
///   `L = {k <= yb}` and `U = {k > yb}` and scale every weight by `e^{eps(y - yb)}` (which
///   changes no mean). For `k` in `L`, `|y - k| = (y - yb) + (yb - k)`, so the scaled weight
///   is `rho_k g^{yb-k}`: the same for every `y >= yb`. Call their sum `W` and their mean
///   `mu_L`. For `k` in `U`, `|y - k| >= y - k`, so the scaled weight
///   `rho_k e^{eps(y - yb - |y-k|)}` is at most `rho_k e^{eps(k - yb)}`, for every
///   `y >= yb` (at `y = yb` too). Call the sum of the actual scaled `U` weights `V(y)` and
///   their mean `mu_U(y)`. Then `E[k|y] = (W mu_L + V mu_U)/(W + V)`, so
///   `|E[k|y] - mu_L| = V |mu_U - mu_L|/(W + V) <= n V/W`, and so
///   `|E[k|y] - E[k|yb]| <= 2 n Vmax/W` with `Vmax = sum_{k > yb} rho_k e^{eps(k - yb)}`.
/// * **Bounding `Vmax`.** The prior is log-concave: `rho_{k+1}/rho_k = (n-k)/(k+1) p/(1-p)`
///   falls as `k` grows, so `rho_{yb+i} <= rho_yb x^i` with `x = rho_{yb+1}/rho_yb`, and
///   `Vmax <= rho_yb sum_{i >= 1} s^i = rho_yb s/(1-s)` with `s = x e^{eps}`, provided
///   `s < 1`: beyond `yb` the prior's log-weight falls at least at the rate `r = -ln x`
///   per step, faster than the likelihood's can rise (`eps` per step). This covers every
///   count above `yb`, the window's and the left-out ones alike.
/// * **Bounding `W` from below.** `W >= C_yb`, the row's own sum over `[lo, yb]` (it only
///   leaves out the non-negative terms below `lo`).
/// * **The rule.** When `s <= e^{-1e-9}` (`MIN_LN_GAP`) and
///   `ln rho_yb + ln s - ln(1 - s) - ln C_yb <= -57.5`, every `y` in `(yb, n)` gets the
///   table's `E[k|yb]` (its row at `t = 0`, computed once), off the exact mean by at most
///   `2 n e^{-57.5} <= 2.2e-16` beyond the table's own error at `yb`. Otherwise such `y` go
///   to [`posterior`].
/// * **Below, symmetrically.** For `y <= ya`, `L = {k >= ya}` has the common factor
///   `e^{-eps(ya - y)}` and `W = sum_{k >= ya} rho_k g^{k - ya} >= rho_ya + g D_ya`;
///   `U = {k < ya}` has `rho_{ya-i} <= rho_ya x^i`, `x = rho_{ya-1}/rho_ya =
///   ya(1-p)/((n-ya+1) p)` (these ratios fall as `k` falls), and the same rule with
///   `s = x e^{eps}` gives every `y` in `(0, ya)` the table's `E[k|ya]`.
///
/// How often does the rule hold? With `sigma = sqrt(n p (1-p))` and `yb - m` about 31 to
/// 35 `sigma`, `-ln x` is about `(yb - m)/sigma^2`, so `s < 1` while `eps sigma < 31`, and
/// the bound is about `e^{-480 + eps (yb - m) + ln(1/(1-s))}` or smaller (`ln rho_yb` is
/// -480 or below; `C_yb >= g^{yb - m}`, the mode's term). Measured (`n` from 10 to 10^9,
/// `p` from 1e-6 to 0.999), it holds on both sides for every `eps sigma` below 18 when
/// `sigma >= 30` (below 0.1 to 8 for tiny `sigma`, and for every `eps` when the rows reach
/// `0` and `n`). Where it fails, `eps (yb - m)` and `eps (m - ya)` were at least 587: `y`
/// past the rows needs the true count past them (prior mass below `e^{-480}`) or noise of
/// some 600 scales `1/eps` beyond the mode, a chance per run below about `e^{-300}`
/// (`max_k ln rho_k - eps (yb - k) <= x^2/2 - c x <= -378` for `x = eps sigma` in `[18, c]`,
/// `c = (yb - m)/sigma`). So in a simulation the exact fallback is, now genuinely,
/// astronomically rare; it remains correct, only slower (its cost grows with the
/// posterior's width). The two clamped ends `y <= 0` and `y >= n` are
/// computed once when the table is built.
///
/// Agrees with `posterior(..).mean` to about 1e-13 relative (tested at 1e-9 over a dense
/// grid of `y` for `n` up to 10^5).
pub struct BayesTable {
    n: u64,
    p: Probability,
    eps: Epsilon,
    /// The first and last count `[ya, yb]` whose row answers; `None` if no row does.
    covered: Option<(u64, u64)>,
    /// `rows[j - ya]` for `j` in `[ya, yb]`.
    rows: Vec<Row>,
    /// `E[k | y]` for every `y <= 0` and every `y >= n`.
    at_zero: f64,
    at_n: f64,
    /// `E[k | ya]` and `E[k | yb]`, the answers for `y` in `(0, ya)` and `(yb, n)`, when
    /// the bound of "Beyond the covered counts" allows them there; `None` otherwise.
    below: Option<f64>,
    above: Option<f64>,
}

impl fmt::Debug for BayesTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BayesTable")
            .field("n", &self.n)
            .field("p", &self.p)
            .field("eps", &self.eps)
            .field("covered", &self.covered)
            .field("rows", &self.rows.len())
            .field("below", &self.below)
            .field("above", &self.above)
            .finish()
    }
}

/// The credible level passed to [`posterior`] when only its mean is used.
fn any_level() -> Probability {
    Probability::new(0.5).expect("0.5 lies in (0, 1)")
}

impl BayesTable {
    /// Builds the table for a `Binomial(n, p)` prior and `Laplace(1/eps)` noise: `O(window)`
    /// time and memory (see the type's documentation): about 9 us at `n = 1000`, 0.4 ms at
    /// `10^6` and 30 ms at `10^9`.
    /// Refuses `n > MAX_N`. `n = 0` gives a table whose every estimate is 0.
    pub fn new(n: u64, p: Probability, eps: Epsilon) -> Result<Self, SimError> {
        if n > MAX_N {
            return Err(SimError::TooLarge { n, max: MAX_N });
        }
        let pf = p.get();
        let e = eps.get();
        // n <= 10^9, so every count below is exact in f64.
        let nf = n as f64;
        let odds = pf / (1.0 - pf);
        let inv_odds = (1.0 - pf) / pf;
        let ln_odds = pf.ln() - (-pf).ln_1p();
        // A mode of Binomial(n, p): floor((n+1) p), in [0, n].
        let mode = (((nf + 1.0) * pf).floor() as u64).min(n);
        let threshold = LN_WINDOW_THRESHOLD.exp();
        // Each side of the mode at most this long, so the window has at most MAX_TABLE_LEN rows.
        let half_cap = (MAX_TABLE_LEN - 1) / 2;

        // Walk down from the mode: rho_{k-1} = rho_k * k(1-p)/((n-k+1) p).
        let mut below = Vec::new();
        let (mut lo, mut rho) = (mode, 1.0f64);
        while lo > 0 && below.len() < half_cap {
            let next = rho * (lo as f64 / (n - lo + 1) as f64) * inv_odds;
            if next < threshold {
                break;
            }
            below.push(next);
            rho = next;
            lo -= 1;
        }
        let rho_lo = rho;
        // Walk up: rho_{k+1} = rho_k * (n-k)/(k+1) * p/(1-p).
        let mut above = Vec::new();
        let (mut hi, mut rho) = (mode, 1.0f64);
        while hi < n && above.len() < half_cap {
            let next = rho * ((n - hi) as f64 / (hi + 1) as f64) * odds;
            if next < threshold {
                break;
            }
            above.push(next);
            rho = next;
            hi += 1;
        }
        let rho_hi = rho;

        // ln of the bounds T_lo, T_hi on the prior mass left out (see "Why the truncation
        // keeps the accuracy"). T_lo = rho_{lo-1} / (1 - q) with
        // rho_{lo-1} = rho_lo * lo(1-p)/((n-lo+1) p) and q = (lo-1)(1-p)/((n-lo+2) p).
        let ln_tail_lo = if lo == 0 {
            f64::NEG_INFINITY
        } else {
            let lof = lo as f64;
            let ln_first = rho_lo.ln() + lof.ln() - (nf - lof + 1.0).ln() - ln_odds;
            let q = (lof - 1.0) / (nf - lof + 2.0) * inv_odds;
            if q < 1.0 {
                ln_first - (-q).ln_1p()
            } else {
                f64::INFINITY
            }
        };
        // T_hi = rho_{hi+1} / (1 - r) with rho_{hi+1} = rho_hi * (n-hi)/(hi+1) * p/(1-p)
        // and r = (n-hi-1)/(hi+2) * p/(1-p).
        let ln_tail_hi = if hi == n {
            f64::NEG_INFINITY
        } else {
            let hif = hi as f64;
            let ln_first = rho_hi.ln() + (nf - hif).ln() - (hif + 1.0).ln() + ln_odds;
            let r = (nf - hif - 1.0) / (hif + 2.0) * odds;
            if r < 1.0 {
                ln_first - (-r).ln_1p()
            } else {
                f64::INFINITY
            }
        };
        let ln_cover = LN_SAFETY + ln_tail_lo.max(ln_tail_hi);

        // rho over the window [lo, hi], in order.
        let mut rhos = below;
        rhos.reverse();
        rhos.push(1.0);
        rhos.extend(above);

        // The covered rows: rho_j >= e^{ln_cover}, contiguous by log-concavity.
        let covers = |r: &f64| *r > 0.0 && r.ln() >= ln_cover;
        let first = rhos.iter().position(covers);
        let last = rhos.iter().rposition(covers);
        // Whether the rows' ends may answer beyond them ("Beyond the covered counts").
        let (mut extend_below, mut extend_above) = (false, false);
        let (covered, rows) = match (first, last) {
            (Some(first), Some(last)) => {
                let mut rows = window_rows(&rhos, lo, e);
                let (ya, yb) = (lo + first as u64, lo + last as u64);
                // Below: x = rho_{ya-1}/rho_ya = ya(1-p)/((n-ya+1) p), W >= rho_ya + g D_ya.
                extend_below = ya == 0 || {
                    let ln_x = (ya as f64 / (nf - ya as f64 + 1.0)).ln() - ln_odds;
                    let w = rhos[first] + (-e).exp() * rows[first].d;
                    beyond_is_negligible(rhos[first], ln_x, e, w)
                };
                // Above: x = rho_{yb+1}/rho_yb = (n-yb)/(yb+1) p/(1-p), W >= C_yb.
                extend_above = yb == n || {
                    let ln_x = ((nf - yb as f64) / (yb as f64 + 1.0)).ln() + ln_odds;
                    beyond_is_negligible(rhos[last], ln_x, e, rows[last].c)
                };
                rows.truncate(last + 1);
                rows.drain(..first);
                rows.shrink_to_fit();
                (Some((ya, yb)), rows)
            }
            _ => (None, Vec::new()),
        };
        let mut table = Self {
            n,
            p,
            eps,
            covered,
            rows,
            at_zero: f64::NAN,
            at_n: f64::NAN,
            below: None,
            above: None,
        };
        if let Some((ya, yb)) = covered {
            // The rows at ya and yb, at t = 0.
            table.below = table.lookup(ya as f64).filter(|_| extend_below);
            table.above = table.lookup(yb as f64).filter(|_| extend_above);
        }
        table.at_zero = table
            .lookup(0.0)
            .unwrap_or_else(|| posterior(n, p, eps, 0.0, any_level()).mean);
        table.at_n = table
            .lookup(nf)
            .unwrap_or_else(|| posterior(n, p, eps, nf, any_level()).mean);
        Ok(table)
    }

    /// `E[k | y]` (Naldi and D'Acquisto 2014, eq. 11), equal to [`posterior`]`(n, p, eps, y, _).mean` to about
    /// 1e-13 relative. O(1) wherever [`answers_from_table`](Self::answers_from_table) holds
    /// (see the type's documentation: every `y` unless `eps sqrt(n p (1-p))` is above
    /// about 18 and `y` some 30 prior standard deviations out); elsewhere, [`posterior`]'s
    /// exact mean. Infinite `y` gives the limit (the estimate at `0` or `n`); NaN gives NaN.
    /// Never panics.
    pub fn estimate(&self, y: f64) -> f64 {
        if y.is_nan() {
            return f64::NAN;
        }
        let nf = self.n as f64;
        // Clamping leaves eq. 11 unchanged (see the type's documentation).
        let y = y.clamp(0.0, nf);
        if y <= 0.0 {
            self.at_zero
        } else if y >= nf {
            self.at_n
        } else if let Some(mean) = self.lookup(y).or_else(|| self.beyond(y)) {
            mean
        } else {
            posterior(self.n, self.p, self.eps, y, any_level()).mean
        }
    }

    /// Whether [`estimate`](Self::estimate)`(y)` is answered from the table in O(1) (the
    /// clamped ends, a covered row, or the constant beyond the rows) rather than by the exact
    /// [`posterior`]. True for NaN (answered NaN at once).
    pub fn answers_from_table(&self, y: f64) -> bool {
        if y.is_nan() {
            return true;
        }
        let nf = self.n as f64;
        let y = y.clamp(0.0, nf);
        y <= 0.0 || y >= nf || self.lookup(y).or_else(|| self.beyond(y)).is_some()
    }

    /// The counts `[ya, yb]` where the table answers (for `y` in that range), if any.
    pub fn covered(&self) -> Option<(u64, u64)> {
        self.covered
    }

    /// The number of rows kept (each 32 bytes).
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether no row is kept (then every estimate inside `(0, n)` goes to [`posterior`]).
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The answer for a clamped `y` in `(0, ya)` or `(yb, n)` when the bound of "Beyond the
    /// covered counts" allows it, else `None`.
    fn beyond(&self, y: f64) -> Option<f64> {
        let (ya, yb) = self.covered?;
        if y > yb as f64 {
            self.above
        } else if y < ya as f64 {
            self.below
        } else {
            None
        }
    }

    /// The table's answer for a clamped `y` in `[ya, yb]`, else `None`.
    fn lookup(&self, y: f64) -> Option<f64> {
        let (ya, yb) = self.covered?;
        if !(y >= ya as f64 && y <= yb as f64) {
            return None;
        }
        let floor = y.floor();
        // floor is an integer in [ya, yb]: the cast is exact.
        let row = self.rows.get((floor as u64).checked_sub(ya)? as usize)?;
        // Exact: y and floor(y) are within 1 of each other.
        let t = y - floor;
        let e = self.eps.get();
        // E = (e^{-eps t} A + e^{-eps(1-t)} B) / (e^{-eps t} C + e^{-eps(1-t)} D), paper 1
        // eq. 11 split at j = floor(y), scaled so the one exponential is at most 1.
        let mean = if t <= 0.5 {
            // Times e^{eps t}: C >= rho_j > 0, so the denominator is positive.
            let f = (-e * (1.0 - 2.0 * t)).exp();
            (row.a + f * row.b) / (row.c + f * row.d)
        } else {
            // Times e^{eps(1-t)}: here j < yb, so D >= rho_{j+1} > 0.
            let f = (-e * (2.0 * t - 1.0)).exp();
            (f * row.a + row.b) / (f * row.c + row.d)
        };
        Some(mean.clamp(0.0, self.n as f64))
    }
}

/// Whether the counts beyond an end `j` of the covered rows (`ya` or `yb`) carry a negligible
/// share of the posterior for every `y` beyond `j` (see [`BayesTable`], "Beyond the covered
/// counts"): `rho_j = rho` (relative to the mode), `ln_x = ln(rho_{j±1}/rho_j)` one step
/// outward, and `w > 0` a lower bound on the scaled weight `W` of the counts on the inner
/// side. Checks `s = x e^{eps} <= e^{-MIN_LN_GAP}` and
/// `ln rho + ln s - ln(1 - s) - ln w <= -LN_SAFETY`.
fn beyond_is_negligible(rho: f64, ln_x: f64, eps: f64, w: f64) -> bool {
    let ln_s = ln_x + eps;
    // A NaN anywhere makes a comparison false: no claim.
    if !(ln_s <= -MIN_LN_GAP && rho > 0.0 && w > 0.0) {
        return false;
    }
    // ln(s/(1-s)) with 1 - s = -expm1(ln s), accurate for s near 1 and near 0.
    let ln_tail = rho.ln() + ln_s - (-ln_s.exp_m1()).ln();
    ln_tail - w.ln() <= -LN_SAFETY
}

/// The row sums for every count of the window `[lo, lo + rhos.len())`.
fn window_rows(rhos: &[f64], lo: u64, e: f64) -> Vec<Row> {
    let g = (-e).exp();
    let mut rows = vec![Row::default(); rhos.len()];
    // Forward: A_j = g A_{j-1} + j rho_j, C_j = g C_{j-1} + rho_j.
    let (mut a, mut c) = (0.0f64, 0.0f64);
    for (i, (row, &rho)) in rows.iter_mut().zip(rhos).enumerate() {
        let k = (lo + i as u64) as f64;
        a = g * a + k * rho;
        c = g * c + rho;
        row.a = a;
        row.c = c;
    }
    // Backward: B_j = g B_{j+1} + (j+1) rho_{j+1}, D_j = g D_{j+1} + rho_{j+1}; B, D = 0 at hi.
    let (mut b, mut d) = (0.0f64, 0.0f64);
    for i in (0..rows.len()).rev() {
        rows[i].b = b;
        rows[i].d = d;
        let k = (lo + i as u64) as f64;
        b = g * b + k * rhos[i];
        d = g * d + rhos[i];
    }
    rows
}

/// Count, mean and sum of squared deviations of some errors (Chan et al.'s merge).
#[derive(Debug, Clone, Copy, Default)]
struct Moments {
    count: f64,
    mean: f64,
    m2: f64,
}

impl Moments {
    /// Two passes over one chunk's values.
    fn of(values: &[f64]) -> Self {
        let count = values.len() as f64;
        if values.is_empty() {
            return Self::default();
        }
        let mean = values.iter().sum::<f64>() / count;
        let m2 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
        Self { count, mean, m2 }
    }

    /// Chan, Golub and LeVeque's pairwise update: exact in exact arithmetic and stable.
    fn merge(self, other: Self) -> Self {
        let count = self.count + other.count;
        if count == 0.0 {
            return Self::default();
        }
        let delta = other.mean - self.mean;
        Self {
            count,
            mean: self.mean + delta * (other.count / count),
            m2: self.m2 + other.m2 + delta * delta * (self.count * other.count / count),
        }
    }

    /// The mean with its interval `mean ± 1.96 s / sqrt(count)`.
    fn estimate(self) -> McEstimate {
        if self.count < 2.0 {
            // One run: the sample variance is undefined, the interval unbounded.
            return McEstimate {
                value: self.mean,
                lower: f64::NEG_INFINITY,
                upper: f64::INFINITY,
            };
        }
        let s = (self.m2 / (self.count - 1.0)).sqrt();
        let half = Z95 * s / self.count.sqrt();
        McEstimate {
            value: self.mean,
            lower: self.mean - half,
            upper: self.mean + half,
        }
    }
}

/// One chunk's results.
#[derive(Debug, Clone, Copy, Default)]
struct Partial {
    naive: Moments,
    bayes: Moments,
    gain: Moments,
    better: u64,
}

impl Partial {
    fn merge(self, other: Self) -> Self {
        Self {
            naive: self.naive.merge(other.naive),
            bayes: self.bayes.merge(other.bayes),
            gain: self.gain.merge(other.gain),
            better: self.better + other.better,
        }
    }
}

/// The proportion `successes / trials` with its 95% Wilson score interval:
/// `(p + z^2/(2r) ± z sqrt(p(1-p)/r + z^2/(4r^2))) / (1 + z^2/r)`.
fn wilson(successes: u64, trials: u64) -> McEstimate {
    let r = trials as f64;
    let p = successes as f64 / r;
    let z2 = Z95 * Z95;
    let denominator = 1.0 + z2 / r;
    let centre = (p + z2 / (2.0 * r)) / denominator;
    let half = Z95 * (p * (1.0 - p) / r + z2 / (4.0 * r * r)).sqrt() / denominator;
    McEstimate {
        value: p,
        lower: (centre - half).max(0.0),
        upper: (centre + half).min(1.0),
    }
}

/// Runs `runs` simulation runs at `point`. Results depend only on (point, runs, seed): not on the
/// number of threads. `progress` is called (from any thread) with the number of runs just finished, in chunks.
///
/// Each run draws `k ~ Binomial(n, p)` (rand_distr's BTPE/BINV, built once) and
/// `y = k + Laplace(1/eps)` ([`laplace::sample`]), and scores the naive estimate `y` and the
/// Bayes estimate `E[k|y]` ([`BayesTable::estimate`]) by paper 1's metrics (eq. 12-13).
/// The runs are split into chunks of [`CHUNK_RUNS`]; chunk `c` uses
/// `ChaCha8Rng::seed_from_u64(seed)` on stream `c`. Chunks run in parallel on rayon's
/// current pool (use `ThreadPool::install` to choose one); their partial moments are
/// collected in chunk order and merged sequentially, so every float is bit-identical
/// whatever the number of threads. `progress` is called once per chunk, after it finishes.
///
/// Refuses `runs = 0`, `runs > MAX_RUNS` and `n > MAX_N`. `n = 0` is allowed: every true
/// count and every Bayes estimate is 0, so `m_bayes` is exactly 0 and Bayes is closer in
/// every run whose noise is not exactly 0.
pub fn simulate(
    point: SimPoint,
    runs: u64,
    seed: u64,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<SimOutcome, SimError> {
    simulate_until(point, runs, seed, progress, &|| false)
}

/// [`simulate`], stopped early when `stop` says so: it is asked before the table is built
/// and before each chunk, and once it says yes no chunk starts and [`SimError::Interrupted`]
/// is returned (after the chunks already under way end, a few milliseconds each). A
/// simulation that is not stopped gives exactly what [`simulate`] gives.
pub fn simulate_until(
    point: SimPoint,
    runs: u64,
    seed: u64,
    progress: &(dyn Fn(u64) + Sync),
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<SimOutcome, SimError> {
    if runs == 0 {
        return Err(SimError::NoRuns);
    }
    if runs > MAX_RUNS {
        return Err(SimError::TooManyRuns {
            runs,
            max: MAX_RUNS,
        });
    }
    if stop() {
        return Err(SimError::Interrupted);
    }
    let table = BayesTable::new(point.n, point.p, point.eps)?;
    let prior = Binomial::new(point.n, point.p.get())
        .expect("a Probability lies in (0, 1), which Binomial accepts");
    let scale = 1.0 / point.eps.get();
    let chunks = runs.div_ceil(CHUNK_RUNS);
    let partials: Vec<Option<Partial>> = (0..chunks)
        .into_par_iter()
        .map(|c| {
            if stop() {
                return None;
            }
            let len = CHUNK_RUNS.min(runs - c * CHUNK_RUNS);
            let partial = run_chunk(&table, &prior, scale, seed, c, len);
            progress(len);
            Some(partial)
        })
        .collect();
    // Sequential, in chunk order: the same floats whatever the threads did.
    let total = partials
        .into_iter()
        .try_fold(Partial::default(), |total, p| Some(total.merge(p?)))
        .ok_or(SimError::Interrupted)?;
    Ok(SimOutcome {
        point,
        runs,
        m_naive: total.naive.estimate(),
        // Paper 1, eq. 14: E|R| = int |z| eps/2 e^{-eps|z|} dz = 1/eps.
        m_naive_exact: scale,
        m_bayes: total.bayes.estimate(),
        p_bayes_better: wilson(total.better, runs),
        gain: total.gain.estimate(),
    })
}

/// `len` runs of chunk `c`.
fn run_chunk(
    table: &BayesTable,
    prior: &Binomial,
    scale: f64,
    seed: u64,
    c: u64,
    len: u64,
) -> Partial {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(c);
    let len = len as usize;
    let mut naive = Vec::with_capacity(len);
    let mut bayes = Vec::with_capacity(len);
    let mut gain = Vec::with_capacity(len);
    let mut better = 0u64;
    for _ in 0..len {
        let k = prior.sample(&mut rng) as f64;
        let y = k + laplace::sample(&mut rng, scale);
        // Paper 1, eq. 12: the absolute errors of the naive estimate y and of E[k|y].
        let naive_error = (y - k).abs();
        let bayes_error = (table.estimate(y) - k).abs();
        // Paper 1, eq. 13: Bayes strictly closer.
        better += u64::from(bayes_error < naive_error);
        naive.push(naive_error);
        bayes.push(bayes_error);
        gain.push(naive_error - bayes_error);
    }
    Partial {
        naive: Moments::of(&naive),
        bayes: Moments::of(&bayes),
        gain: Moments::of(&gain),
        better,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_moments_equal_the_moments_of_the_whole() {
        let values: Vec<f64> = (0..1000).map(|i| ((i * 37) % 101) as f64 / 7.0).collect();
        let whole = Moments::of(&values);
        let merged = values
            .chunks(64)
            .map(Moments::of)
            .fold(Moments::default(), Moments::merge);
        assert_eq!(merged.count, whole.count);
        assert!((merged.mean - whole.mean).abs() <= 1e-13 * whole.mean);
        assert!((merged.m2 - whole.m2).abs() <= 1e-12 * whole.m2);
        // Merging an empty side changes nothing.
        let same = whole.merge(Moments::default());
        assert_eq!(
            (same.count, same.mean, same.m2),
            (whole.count, whole.mean, whole.m2)
        );
    }

    #[test]
    fn mean_interval_is_mean_plus_minus_1_96_standard_errors() {
        // Values 0, 2: mean 1, s = sqrt(2), interval 1 ± 1.96 sqrt(2)/sqrt(2) = 1 ± 1.96.
        let est = Moments::of(&[0.0, 2.0]).estimate();
        assert_eq!(est.value, 1.0);
        assert!((est.lower - (1.0 - 1.96)).abs() < 1e-15 && (est.upper - 2.96).abs() < 1e-15);
    }

    fn point() -> SimPoint {
        SimPoint {
            n: 1000,
            p: Probability::new(0.5).expect("in (0, 1)"),
            eps: Epsilon::new(1.0).expect("positive"),
        }
    }

    #[test]
    fn a_stop_asked_for_ends_the_runs_and_one_never_asked_changes_nothing() {
        use std::sync::atomic::{AtomicU64, Ordering};
        let at = point();
        // Asked before anything: no run is made.
        let done = AtomicU64::new(0);
        let count = |n: u64| {
            done.fetch_add(n, Ordering::Relaxed);
        };
        let stopped = simulate_until(at, 50 * CHUNK_RUNS, 7, &count, &|| true);
        assert_eq!(stopped, Err(SimError::Interrupted));
        assert_eq!(done.load(Ordering::Relaxed), 0);
        // Asked once some runs are done: the rest are never made.
        let done = AtomicU64::new(0);
        let count = |n: u64| {
            done.fetch_add(n, Ordering::Relaxed);
        };
        let after_three = || done.load(Ordering::Relaxed) >= 3 * CHUNK_RUNS;
        let runs = 1000 * CHUNK_RUNS;
        let stopped = simulate_until(at, runs, 7, &count, &after_three);
        assert_eq!(stopped, Err(SimError::Interrupted));
        assert!(done.load(Ordering::Relaxed) < runs / 2, "{done:?}");
        // Never asked: the same outcome as without a stop.
        let quiet = |_: u64| {};
        assert_eq!(
            simulate_until(at, 3 * CHUNK_RUNS + 5, 7, &quiet, &|| false),
            simulate(at, 3 * CHUNK_RUNS + 5, 7, &quiet)
        );
    }

    #[test]
    fn wilson_interval_matches_known_values() {
        // 50 of 100 at z = 1.96: centre 0.5, half-width 1.96 sqrt(0.0025 + 0.00009604)/1.0384.
        let est = wilson(50, 100);
        let half = 1.96 * (0.0025f64 + 1.96 * 1.96 / 40_000.0).sqrt() / (1.0 + 1.96 * 1.96 / 100.0);
        assert_eq!(est.value, 0.5);
        assert!((est.lower - (0.5 - half)).abs() < 1e-15, "{est:?}");
        assert!((est.upper - (0.5 + half)).abs() < 1e-15, "{est:?}");
        // All or nothing: the interval stays inside [0, 1] and excludes the far end.
        let all = wilson(100, 100);
        // (Exactly 1 in exact arithmetic; rounding may leave it one ulp below.)
        assert!(all.upper >= 1.0 - 1e-15 && all.upper <= 1.0, "{all:?}");
        assert!(all.lower > 0.96 && all.lower < 1.0, "{all:?}");
        let none = wilson(0, 100);
        assert!(none.lower >= 0.0 && none.lower <= 1e-15, "{none:?}");
        assert!(none.upper > 0.0 && none.upper < 0.04, "{none:?}");
    }
}
