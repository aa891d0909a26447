//! `NOISE smooth` (`src/stats/smooth.rs`, `src/eval/statistics.rs`) against the definition of
//! differential privacy, and the intervals the statistics show against their coverage.
//!
//! 1. The median with smooth noise on neighbouring data sets (add/remove), at the mechanism
//!    level: `order_smooth_full` on the integer grid (floor one step), `smooth::scale`,
//!    `release_steps`, as `statistics::truth` and `draw` run them. The releases of `x` and
//!    `x'` are binned and every bin's estimated `|ln P(bin|x) / P(bin|x')|` must stay below
//!    eps plus a 4.5-sigma binomial margin; the exact bin and point probabilities (from the
//!    law's distribution function) must stay below eps outright. A negative control scales
//!    the same noise to the local sensitivity, which is not private, and the same test must
//!    catch it.
//! 2. The 95% intervals a statistic shows, over seeded runs of the interpreter: Laplace
//!    `MEDIAN` and `SHARE`, and the smooth share under `NEIGHBOURS replace` (public `1/n`);
//!    a smooth release under add/remove shows no interval and no scale.
//! 3. A smooth median over no row and over all-equal values: a finite release, eps spent.
//!
//! Every test is seeded, so runs are reproducible; the false-positive rates quoted are over
//! the choice of seed for a correct implementation. The file takes about 25 s of CPU in a
//! debug build (`cargo test --test statistics smooth_privacy`), most of it 240,000
//! heavy-tailed draws at about 60 us each (see `Noise`).

use dpq::driver::{run_source, Emitted};
use dpq::eval::{Randomness, Session};
use dpq::output::Format;
use dpq::stats::smooth::{self, order_local, order_smooth_full, order_value, HeavyTail, Rank};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use serde_json::Value;
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------------------------------
// 1. Privacy loss of the smooth median
// ---------------------------------------------------------------------------------------

/// The public range of every data set below: whole numbers in `[0, 10]`, so the grid is the
/// whole numbers (`k = 0`) and the values are their own steps, as `truth` puts them.
const LO: i128 = 0;
const HI: i128 = 10;

/// Draws per side. 50,000 with 16 pooled-quantile bins puts about 3,100 draws of each side
/// in a bin (at least `MIN_PER_BIN` is enforced by merging).
const DRAWS: usize = 50_000;
const BINS: usize = 16;
const MIN_PER_BIN: usize = 1_000;

/// Sigmas of the binomial bound on each bin's probability estimate.
const SIGMAS: f64 = 4.5;

/// Neighbouring pairs `(x, x')` under add/remove, each `x'` one value added to `x` or
/// removed from it, with `S*` different between the two at every (eps, gamma) below.
fn pairs() -> Vec<(&'static str, Vec<i128>, Vec<i128>)> {
    vec![
        // The brief's example: a 10 added; lower median 5 on both sides, LS 5 against 0.
        (
            "A",
            vec![0, 0, 0, 5, 5, 10, 10],
            vec![0, 0, 0, 5, 5, 10, 10, 10],
        ),
        // A 5 removed: LS 0 against 5 (the negative control's pair).
        ("B", vec![0, 5, 5, 10], vec![0, 5, 10]),
        // A 10 added moves the median itself, 2 to 3.
        ("C", vec![0, 0, 2, 3, 5, 10], vec![0, 0, 2, 3, 5, 10, 10]),
    ]
}

/// How the noise is scaled: to the smooth sensitivity (the mechanism) or to the local one
/// (the negative control: not private).
#[derive(Clone, Copy, PartialEq, Debug)]
enum Scaling {
    Smooth,
    Local,
}

/// The true median and the noise's scale in steps, as `truth` and `draw` compute them.
fn mechanism(xs: &[i128], eps: f64, gamma: f64, scaling: Scaling) -> (i128, f64) {
    let mut xs = xs.to_vec();
    xs.sort_unstable();
    let t = order_value(&xs, LO, HI, Rank::Median);
    let s = match scaling {
        Scaling::Smooth => {
            order_smooth_full(&xs, LO, HI, Rank::Median, smooth::beta(eps, gamma), 1.0)
                .expect("within reach")
        }
        Scaling::Local => order_local(&xs, LO, HI, Rank::Median).max(1.0),
    };
    (t, smooth::scale(eps, gamma, s))
}

/// `P(a <= Z < b)` for the heavy-tailed law (either end may be infinite), from its tails so
/// that small probabilities far out keep their precision.
fn prob_between(law: &HeavyTail, a: f64, b: f64) -> f64 {
    let tail = |z: f64| {
        if z == f64::INFINITY {
            0.0
        } else {
            law.two_sided_tail(z)
        }
    };
    if a >= 0.0 {
        0.5 * (tail(a) - tail(b))
    } else if b <= 0.0 {
        0.5 * (tail(-b) - tail(-a))
    } else {
        1.0 - 0.5 * tail(-a) - 0.5 * tail(b)
    }
}

/// `P(lo <= t + round(s Z) < hi)`: the release is the continuous `t + s Z` rounded to the
/// nearest step, so it is at least `e` when `s Z >= e - t - 1/2`.
fn release_prob(law: &HeavyTail, t: i128, s: f64, lo: Option<i128>, hi: Option<i128>) -> f64 {
    let z = |e: Option<i128>, inf: f64| e.map_or(inf, |e| (e - t) as f64 - 0.5) / s;
    prob_between(law, z(lo, f64::NEG_INFINITY), z(hi, f64::INFINITY))
}

/// The bins: runs of consecutive outputs cut at quantiles of the pooled sample, merged until
/// each holds at least `MIN_PER_BIN` draws of each side. Each is `[lo, hi)`, `None` unbounded,
/// with its counts on the two sides.
type Bin = (Option<i128>, Option<i128>, usize, usize);

fn bins(a: &[i128], b: &[i128]) -> Vec<Bin> {
    let mut pooled: Vec<i128> = a.iter().chain(b).copied().collect();
    pooled.sort_unstable();
    let mut edges: Vec<i128> = (1..BINS).map(|i| pooled[i * pooled.len() / BINS]).collect();
    edges.dedup();
    let count = |xs: &[i128]| {
        let mut c = vec![0usize; edges.len() + 1];
        for v in xs {
            c[edges.partition_point(|e| e <= v)] += 1;
        }
        c
    };
    let (ca, cb) = (count(a), count(b));
    let mut out: Vec<Bin> = Vec::new();
    let (mut start, mut na, mut nb) = (None, 0, 0);
    for i in 0..=edges.len() {
        na += ca[i];
        nb += cb[i];
        let end = edges.get(i).copied();
        if na >= MIN_PER_BIN && nb >= MIN_PER_BIN {
            out.push((start, end, na, nb));
            (start, na, nb) = (end, 0, 0);
        }
    }
    // What is left joins the last bin.
    let last = out
        .last_mut()
        .expect("at least one bin holds enough of both sides");
    last.1 = None;
    last.2 += na;
    last.3 += nb;
    out
}

/// The lower confidence bound of `ln(p / q)` from counts `a` and `b` of `n` draws each: `p`
/// at least `p^ - 4.5 sd`, `q` at most `q^ + 4.5 sd` (binomial sds at the estimates).
fn log_ratio_low(a: usize, b: usize, n: usize) -> f64 {
    let n = n as f64;
    let (p, q) = (a as f64 / n, b as f64 / n);
    let sd = |p: f64| (p * (1.0 - p) / n).sqrt();
    let low = (p - SIGMAS * sd(p)).max(f64::MIN_POSITIVE);
    let high = q + SIGMAS * sd(q);
    (low / high).ln()
}

/// What one configuration showed.
struct Loss {
    /// The largest estimated `|ln P(bin|x) / P(bin|x')|`.
    estimated: f64,
    /// The margin at that bin: `estimated` less its lower confidence bound.
    margin: f64,
    /// The largest lower confidence bound of `|ln ratio|` over the bins: above eps is a
    /// violation the draws establish beyond the margin.
    established: f64,
    /// The largest exact `|ln ratio|` over the same bins, and over single outputs.
    exact_bins: f64,
    exact_points: f64,
    bins: usize,
}

/// Independent draws of the noise `Z`, one stream for each side of a pair.
///
/// Each heavy-tailed draw costs about 60 us in a debug build (it inverts the tail by
/// bisection on the incomplete beta function), so the draws of `Z` are made once and shared
/// by every configuration at this gamma (pairs and epsilons): a configuration's two sides
/// still come from independent streams, which is all each comparison needs. The releases are
/// `release_steps`'s own arithmetic on them, `t + round(s Z)`, checked against
/// `release_steps` itself on the same seeded stream for every (t, s) used.
struct Noise {
    law: HeavyTail,
    seeds: [u64; 2],
    z: [Vec<f64>; 2],
}

/// How many of a stream's releases are checked against `release_steps` draw for draw.
const CHECKED: usize = 500;

impl Noise {
    fn new(gamma: f64, seed: u64, draws: usize) -> Self {
        let law = HeavyTail::new(gamma).expect("a valid gamma");
        let seeds = [2 * seed, 2 * seed + 1];
        let z = seeds.map(|s| {
            let mut rng = ChaCha20Rng::seed_from_u64(s);
            (0..draws).map(|_| law.sample(&mut rng)).collect()
        });
        Noise { law, seeds, z }
    }

    fn draws(&self) -> usize {
        self.z[0].len()
    }

    /// `release_steps` of true value `t` at scale `s`, given the draw `z` of the law.
    fn release(t: i128, s: f64, z: f64) -> i128 {
        let cap = 2f64.powi(110);
        let noise = (s * z).round().clamp(-cap, cap) as i128;
        t.saturating_add(noise).clamp(-(1i128 << 100), 1i128 << 100)
    }

    /// The releases of side `side` at true value `t` and scale `s`.
    fn releases(&self, side: usize, t: i128, s: f64) -> Vec<i128> {
        let mut rng = ChaCha20Rng::seed_from_u64(self.seeds[side]);
        for (i, &z) in self.z[side][..CHECKED].iter().enumerate() {
            let want = smooth::release_steps(&mut rng, &self.law, t, s);
            assert_eq!(
                Self::release(t, s, z),
                want,
                "draw {i} of stream {}: t {t}, s {s}",
                self.seeds[side]
            );
        }
        self.z[side]
            .iter()
            .map(|&z| Self::release(t, s, z))
            .collect()
    }
}

/// Draws the releases of the median of `x` (stream 0) and of `x'` (stream 1), and measures
/// the privacy loss over the bins, estimated and exact.
fn privacy_loss(x: &[i128], y: &[i128], eps: f64, scaling: Scaling, noise: &Noise) -> Loss {
    let (law, n) = (&noise.law, noise.draws());
    let gamma = law.gamma();
    let sides = [
        mechanism(x, eps, gamma, scaling),
        mechanism(y, eps, gamma, scaling),
    ];
    let draws: Vec<Vec<i128>> = sides
        .iter()
        .enumerate()
        .map(|(i, &(t, s))| noise.releases(i, t, s))
        .collect();
    let bins = bins(&draws[0], &draws[1]);
    let mut loss = Loss {
        estimated: 0.0,
        margin: 0.0,
        established: f64::NEG_INFINITY,
        exact_bins: 0.0,
        exact_points: 0.0,
        bins: bins.len(),
    };
    for &(lo, hi, a, b) in &bins {
        let lr = (a as f64 / b as f64).ln();
        let low = log_ratio_low(a, b, n).max(log_ratio_low(b, a, n));
        if lr.abs() > loss.estimated {
            loss.estimated = lr.abs();
            loss.margin = lr.abs() - low;
        }
        loss.established = loss.established.max(low);
        let p: Vec<f64> = sides
            .iter()
            .map(|&(t, s)| release_prob(law, t, s, lo, hi))
            .collect();
        loss.exact_bins = loss.exact_bins.max((p[0] / p[1]).ln().abs());
        // The sampler follows the law: each side's count within 4.5 sd of its exact mean
        // (the sd from the exact probability; about 200 checks a gamma, so a correct sampler
        // fails one with probability about 1e-3).
        for (count, p) in [(a, p[0]), (b, p[1])] {
            let sd = (p * (1.0 - p) / n as f64).sqrt();
            let got = count as f64 / n as f64;
            assert!(
                (got - p).abs() <= SIGMAS * sd,
                "bin [{lo:?}, {hi:?}) of {x:?} / {y:?} at eps {eps} gamma {gamma}: \
                 frequency {got}, exact probability {p} (sd {sd})"
            );
        }
    }
    // Every single output within ten times the larger scale of the range, and the two tails
    // beyond.
    let far = (10.0 * sides[0].1.max(sides[1].1)).ceil() as i128;
    let (from, to) = (LO - far, HI + far);
    let ratio = |lo: Option<i128>, hi: Option<i128>| {
        let p0 = release_prob(law, sides[0].0, sides[0].1, lo, hi);
        let p1 = release_prob(law, sides[1].0, sides[1].1, lo, hi);
        (p0 / p1).ln().abs()
    };
    loss.exact_points = ratio(None, Some(from)).max(ratio(Some(to), None));
    for j in from..to {
        loss.exact_points = loss.exact_points.max(ratio(Some(j), Some(j + 1)));
    }
    loss
}

/// The smooth median on every pair at eps 0.5 and 1 and the given gamma.
///
/// Margin: a bin's estimate `p^` of `P(bin|x)` is binomial; with at least 1,000 draws in the
/// bin the normal approximation holds and `P(p^ > p + 4.5 sd) < 3.4e-6`. The test fails only
/// if `ln((p^ - 4.5 sd) / (q^ + 4.5 sd)) > eps` in some bin (either way round), which for an
/// eps-DP release needs one of the two estimates off by 4.5 sd: over 3 pairs x 2 epsilons x
/// 16 bins x 2 directions x 2 estimates (384 chances) per gamma, a correct mechanism fails
/// with probability about 1e-3. The margin this allows is about 0.16 in ln at 3,100 draws a
/// bin (`4.5 sqrt((1 - p) / (n p))` on each side).
fn smooth_median_is_private(gamma: f64, seed: u64) {
    let noise = Noise::new(gamma, seed, DRAWS);
    for (name, x, y) in pairs() {
        for eps in [0.5, 1.0] {
            let (sx, sy) = (
                mechanism(&x, eps, gamma, Scaling::Smooth).1,
                mechanism(&y, eps, gamma, Scaling::Smooth).1,
            );
            assert!(
                (sx - sy).abs() > 1e-9,
                "pair {name}: S* is the same on both sides at eps {eps} gamma {gamma}"
            );
            let loss = privacy_loss(&x, &y, eps, Scaling::Smooth, &noise);
            eprintln!(
                "pair {name} eps {eps} gamma {gamma}: scales {sx:.2} / {sy:.2} steps, {} bins, \
                 max |ln ratio| estimated {:.3} (margin {:.3}, lower bound {:.3}), \
                 exact over bins {:.3}, exact over outputs {:.3}",
                loss.bins,
                loss.estimated,
                loss.margin,
                loss.established,
                loss.exact_bins,
                loss.exact_points
            );
            assert!(
                loss.established <= eps,
                "pair {name} ({x:?} / {y:?}) eps {eps} gamma {gamma}: a bin's |ln ratio| is \
                 {:.3}, over eps by more than its margin {:.3}",
                loss.estimated,
                loss.margin
            );
            assert!(
                loss.exact_bins <= eps + 1e-9 && loss.exact_points <= eps + 1e-9,
                "pair {name} ({x:?} / {y:?}) eps {eps} gamma {gamma}: exact |ln ratio| \
                 {:.4} over bins, {:.4} over outputs, above eps",
                loss.exact_bins,
                loss.exact_points
            );
        }
    }
}

#[test]
fn smooth_median_is_private_at_gamma_4_53() {
    smooth_median_is_private(4.53, 100);
}

#[test]
fn smooth_median_is_private_at_gamma_3() {
    smooth_median_is_private(3.0, 200);
}

/// The negative control: the same noise scaled to the local sensitivity (floored at one
/// step, as the mechanism floors S*) on pair B, where the local sensitivity is 0 on one side
/// and 5 on the other: the scales differ fivefold, so near the median the density ratio is
/// about 5 (ln 5 = 1.6 > eps). The test must establish the violation beyond its margin (the
/// smooth noise passes on the same pair above).
#[test]
fn local_sensitivity_noise_is_caught() {
    let (_, x, y) = pairs().swap_remove(1);
    // The violation is large: 20,000 draws a side (about 2.5 s) establish it.
    let noise = Noise::new(4.53, 300, 20_000);
    for eps in [0.5, 1.0] {
        let loss = privacy_loss(&x, &y, eps, Scaling::Local, &noise);
        eprintln!(
            "control eps {eps}: {} bins, max |ln ratio| estimated {:.3} (margin {:.3}), \
             lower bound {:.3}, exact over bins {:.3}",
            loss.bins, loss.estimated, loss.margin, loss.established, loss.exact_bins
        );
        assert!(
            loss.established > eps,
            "eps {eps}: noise scaled to the local sensitivity was not caught: the largest \
             lower bound of |ln ratio| is {:.3} (estimate {:.3})",
            loss.established,
            loss.estimated
        );
        assert!(loss.exact_bins > eps, "eps {eps}: {:.3}", loss.exact_bins);
    }
}

// ---------------------------------------------------------------------------------------
// Interpreter helpers
// ---------------------------------------------------------------------------------------

/// Runs `source` in `session` and parses every result and error, in order.
fn run_json(session: &mut Session, source: &str) -> Vec<Value> {
    let mut out = Vec::new();
    run_source(session, "test", source, Format::Json, &mut |e| {
        let (Emitted::Result(s) | Emitted::Error(s)) = e;
        out.push(serde_json::from_str(&s).expect("every result is one JSON object"));
    });
    out
}

/// The last result of `source` in a fresh in-memory session seeded with `seed`; no error.
fn last(seed: u64, source: &str) -> Value {
    let out = run_json(&mut Session::new(Randomness::Seeded(seed)), source);
    for v in &out {
        assert_ne!(v["kind"], "error", "{source}: {v}");
    }
    out.last().expect("a result").clone()
}

/// A one-column file `x` with the given values.
fn column(dir: &Path, name: &str, values: &[i64]) -> PathBuf {
    let mut text = String::from("x\n");
    for v in values {
        text.push_str(&format!("{v}\n"));
    }
    let path = dir.join(name);
    std::fs::write(&path, text).expect("the file is written");
    path
}

fn interval(v: &Value) -> Option<(f64, f64)> {
    let i = v["interval95"].as_array()?;
    Some((i[0].as_f64()?, i[1].as_f64()?))
}

// ---------------------------------------------------------------------------------------
// 2. Interval coverage
// ---------------------------------------------------------------------------------------

const SEEDS: u64 = 400;

/// 41 whole values from -10 to 120, some outside the clamp (0, 100).
fn coverage_values() -> Vec<i64> {
    (0..41).map(|i| (i * 37 % 131) - 10).collect()
}

/// How often the interval of `statement`'s result holds `truth`, over `SEEDS` fresh seeded
/// sessions.
fn coverage(data: &Path, load: &str, statement: &str, truth: f64) -> f64 {
    let mut held = 0;
    for seed in 1..=SEEDS {
        let v = last(
            seed,
            &format!("LOAD '{}' AS t {load}; {statement}", data.display()),
        );
        assert!(
            load.ends_with(v["neighbours"].as_str().unwrap_or("?")),
            "{load}: {v}"
        );
        let (lo, hi) = interval(&v).unwrap_or_else(|| panic!("{statement}: no interval: {v}"));
        assert!(lo <= hi, "{v}");
        if lo <= truth && truth <= hi {
            held += 1;
        }
    }
    held as f64 / SEEDS as f64
}

/// The Laplace intervals of `MEDIAN` and `SHARE` (under both neighbour models) hold the
/// truth in about 95% of runs; the smooth share's under `NEIGHBOURS replace` in at least
/// about 95% (one-sided: its half-width is taken at `1/n` plus one grid step, the very scale
/// the noise is drawn at, so it is not expected to be wide of 95% by much either way).
///
/// Margin: the count of runs covered is binomial(400, 0.95), sd `sqrt(0.95 0.05 / 400)` =
/// 0.0109; 4.5 sd is 0.049, and a correct interval leaves it with probability below 1e-5.
/// (The discrete Laplace on the grid covers a little less than the continuous one: at scale
/// 100 steps, `P(|Z| >= 300) = 0.0500`; on the share's grid of 2^-32 the difference is nil.)
#[test]
fn shown_intervals_cover_the_truth() {
    let dir = tempfile::tempdir().expect("tempdir");
    let values = coverage_values();
    let data = column(dir.path(), "x.csv", &values);
    let mut clamped: Vec<i64> = values.iter().map(|v| (*v).clamp(0, 100)).collect();
    clamped.sort_unstable();
    // The lower median: the ceil(n/2)-th value.
    let median = clamped[clamped.len().div_ceil(2) - 1] as f64;
    let share = values.iter().filter(|&&v| v < 30).count() as f64 / values.len() as f64;
    let margin = SIGMAS * (0.95 * 0.05 / SEEDS as f64).sqrt();
    let cases = [
        (
            "COLUMNS (x integer) NEIGHBOURS add_remove",
            "MEDIAN x CLAMP (0, 100) WITH EPS 1;",
            median,
            false,
        ),
        (
            "COLUMNS (x integer) NEIGHBOURS replace",
            "MEDIAN x CLAMP (0, 100) WITH EPS 0.5;",
            median,
            false,
        ),
        (
            "NEIGHBOURS add_remove",
            "SHARE WHERE x < 30 WITH EPS 1;",
            share,
            false,
        ),
        (
            "NEIGHBOURS replace",
            "SHARE WHERE x < 30 WITH EPS 0.5;",
            share,
            false,
        ),
        (
            "NEIGHBOURS replace",
            "SHARE WHERE x < 30 WITH EPS 1 NOISE smooth;",
            share,
            true,
        ),
    ];
    for (load, statement, truth, conservative) in cases {
        let got = coverage(&data, load, statement, truth);
        eprintln!("{statement} ({load}): coverage {got} of the truth {truth}");
        if conservative {
            assert!(
                got >= 0.95 - margin,
                "{statement} ({load}): coverage {got} < 0.95 - {margin:.4}"
            );
        } else {
            assert!(
                (got - 0.95).abs() <= margin,
                "{statement} ({load}): coverage {got}, outside 0.95 +- {margin:.4}"
            );
        }
    }
}

/// A release scaled to the smooth sensitivity at the data under add/remove shows neither an
/// interval nor a scale (their width would reveal S*); nor does an order statistic's under
/// replace (its S* is still data-dependent).
#[test]
fn smooth_releases_show_no_interval_or_scale() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = column(dir.path(), "x.csv", &coverage_values());
    for (load, statement) in [
        (
            "NEIGHBOURS add_remove",
            "MEDIAN x CLAMP (0, 100) WITH EPS 1 NOISE smooth;",
        ),
        (
            "NEIGHBOURS add_remove",
            "MIN x CLAMP (0, 100) WITH EPS 1 NOISE smooth GAMMA 3;",
        ),
        (
            "NEIGHBOURS add_remove",
            "MAX x CLAMP (0, 100) WITH EPS 1 NOISE smooth;",
        ),
        (
            "NEIGHBOURS add_remove",
            "SHARE WHERE x < 30 WITH EPS 1 NOISE smooth;",
        ),
        (
            "NEIGHBOURS replace",
            "MEDIAN x CLAMP (0, 100) WITH EPS 1 NOISE smooth;",
        ),
    ] {
        let v = last(
            1,
            &format!("LOAD '{}' AS t {load}; {statement}", data.display()),
        );
        assert_eq!(v["noise"], "smooth", "{statement}: {v}");
        assert!(
            load.ends_with(v["neighbours"].as_str().unwrap_or("?")),
            "{load}: {v}"
        );
        assert!(v["noisy"].as_f64().is_some_and(f64::is_finite), "{v}");
        assert!(v["interval95"].is_null(), "{statement} ({load}): {v}");
        assert!(v["scale"].is_null(), "{statement} ({load}): {v}");
    }
}

// ---------------------------------------------------------------------------------------
// 3. Degenerate selections
// ---------------------------------------------------------------------------------------

/// A smooth order statistic over a WHERE that selects no row, and over all-equal values,
/// under both neighbour models: a finite release, and exactly eps spent.
#[test]
fn empty_and_constant_selections_release_and_spend_eps() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mixed = column(dir.path(), "mixed.csv", &coverage_values());
    let flat = column(dir.path(), "flat.csv", &[42; 25]);
    for model in ["add_remove", "replace"] {
        for (data, filter) in [
            (&mixed, "WHERE x > 1000"),
            (&flat, ""),
            (&flat, "WHERE x = 42"),
        ] {
            for (stat, noise) in [
                ("MEDIAN", "NOISE smooth"),
                ("MEDIAN", "NOISE smooth GAMMA 3"),
                ("MIN", "NOISE smooth"),
                ("MAX", "NOISE smooth"),
            ] {
                let statement = format!("{stat} x CLAMP (0, 100) {filter} WITH EPS 0.25 {noise};");
                let mut session = Session::new(Randomness::Seeded(5));
                let out = run_json(
                    &mut session,
                    &format!(
                        "LOAD '{}' AS t COLUMNS (x integer) NEIGHBOURS {model}; SET BUDGET 10;
                         SHOW BUDGET; {statement} SHOW BUDGET;",
                        data.display()
                    ),
                );
                for v in &out {
                    assert_ne!(v["kind"], "error", "{statement} ({model}): {v}");
                }
                let n = out.len();
                let (before, release, after) = (&out[n - 3], &out[n - 2], &out[n - 1]);
                let noisy = release["noisy"].as_f64();
                assert!(
                    noisy.is_some_and(f64::is_finite),
                    "{statement} ({model}, {}): {release}",
                    data.display()
                );
                assert_eq!(release["eps_spent"].as_f64(), Some(0.25), "{release}");
                let spent = |v: &Value| v["spent"].as_f64().expect("spent");
                assert_eq!(
                    spent(after) - spent(before),
                    0.25,
                    "{statement} ({model}): {before} then {after}"
                );
            }
        }
    }
}
