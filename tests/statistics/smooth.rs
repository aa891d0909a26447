//! The smooth sensitivity (Nissim, Raskhodnikova and Smith 2007) and the heavy-tailed noise of
//! `dpq::stats::smooth`, against brute force and against Soria-Comas and Domingo-Ferrer's
//! slides (/work/shared/papers/soria-comas-domingo-ferrer-optimal-noise-slides.txt).
//!
//! - The relative frequency and the order statistics: local sensitivity from the definition
//!   (enumerate every neighbour), smooth sensitivity by a breadth-first search over every data
//!   set within `K` additions and removals, with `K` chosen so that nothing farther can matter.
//! - The sampler against its law (Kolmogorov-Smirnov, tail counts), the law's functions against
//!   numeric integration, and the grid release's support and likelihood ratios.
//! - The slides' tables, each to half a unit of the last digit they print.

use std::collections::HashSet;

use dpq::stats::laplace;
use dpq::stats::smooth::{
    dependent_half_width, dependent_variance, minimise, order_local, order_smooth, release_steps,
    rule_of_thumb, share_local, share_smooth, HeavyTail, Rank,
};
use dpq::stats::{Epsilon, Probability};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

const RANKS: [Rank; 3] = [Rank::Min, Rank::Median, Rank::Max];

fn prob(x: f64) -> Probability {
    Probability::new(x).expect("test probability is valid")
}

fn law(gamma: f64) -> HeavyTail {
    HeavyTail::new(gamma).expect("test gamma is in (1, 1000]")
}

/// Composite Simpson's rule with `n` (even) intervals.
fn simpson(f: impl Fn(f64) -> f64, a: f64, b: f64, n: usize) -> f64 {
    let h = (b - a) / n as f64;
    let inner: f64 = (1..n)
        .map(|i| f(a + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 })
        .sum();
    (f(a) + f(b) + inner) * h / 3.0
}

// ---------------------------------------------------------------------------------------
// 1. The relative frequency, by brute force
// ---------------------------------------------------------------------------------------

/// The share of a data set with `m` records having the property and `u` not; 1/2 if empty.
fn share_of(m: u64, u: u64) -> f64 {
    if m + u == 0 {
        0.5
    } else {
        m as f64 / (m + u) as f64
    }
}

/// The data sets one addition or removal away from `(m, u)` (removals only of records that
/// exist).
fn share_neighbours(m: u64, u: u64) -> impl Iterator<Item = (u64, u64)> {
    let removals = [(m > 0).then(|| (m - 1, u)), (u > 0).then(|| (m, u - 1))];
    [(m + 1, u), (m, u + 1)]
        .into_iter()
        .chain(removals.into_iter().flatten())
}

/// The local sensitivity from its definition: the most the share moves to a neighbour.
fn share_ls_brute(m: u64, u: u64) -> f64 {
    let f = share_of(m, u);
    share_neighbours(m, u)
        .map(|(m1, u1)| (share_of(m1, u1) - f).abs())
        .fold(0.0, f64::max)
}

/// `max e^(-beta d) LS` over the data sets `(m, u)` at distance `d` from `(m0, u0)`, by
/// breadth-first search, level by level. Every LS is at most 1/2 (the global sensitivity),
/// so once `1/2 e^(-beta (d + 1))` is at most the running max nothing farther can raise it
/// and the search stops: the result is exact, not truncated. It goes at least `n + 10`
/// levels regardless, past the empty data set, where the largest LS are. Returns the result
/// and the last level searched.
fn share_smooth_brute(m0: u64, u0: u64, beta: f64) -> (f64, u64) {
    let mut seen = HashSet::from([(m0, u0)]);
    let mut level = vec![(m0, u0)];
    let mut best = 0.0_f64;
    let mut d = 0;
    loop {
        let weight = (-beta * d as f64).exp();
        for &(m, u) in &level {
            best = best.max(weight * share_ls_brute(m, u));
        }
        if d >= m0 + u0 + 10 && 0.5 * (-beta * (d + 1) as f64).exp() <= best {
            return (best, d);
        }
        let mut next = Vec::new();
        for &(m, u) in &level {
            for y in share_neighbours(m, u) {
                if seen.insert(y) {
                    next.push(y);
                }
            }
        }
        level = next;
        d += 1;
    }
}

#[test]
fn share_smooth_matches_brute_force() {
    let mut deepest = 0;
    for n in 0..=8u64 {
        for m in 0..=n {
            let u = n - m;
            // LS to 1e-15 absolute: both are one or two float divisions of the same numbers.
            let ls = share_ls_brute(m, u);
            let got = share_local(n, m);
            assert!(
                (got - ls).abs() < 1e-15,
                "share_local({n}, {m}) = {got}, brute {ls}"
            );
            for beta in [0.05, 0.3, 1.0] {
                let (want, depth) = share_smooth_brute(m, u, beta);
                deepest = deepest.max(depth);
                let got = share_smooth(n, m, beta).expect("small beta is within reach");
                // 1e-12 relative.
                assert!(
                    (got - want).abs() <= 1e-12 * want,
                    "share_smooth({n}, {m}, {beta}) = {got}, brute force {want}"
                );
            }
        }
    }
    assert!(deepest >= 18);
}

/// Beyond the brief's n <= 8: from about n = 20 on, the bound on nearby data sets can dip
/// below the local sensitivity while the far end (the empty data set) still matters, e.g.
/// n = 30, beta = 0.1, where the nearby bound's least value e^(-1.9)/10 = 0.015 is below
/// LS(30, 15) = 0.0172 but 1/2 e^(-2.7) = 0.034 is above it.
#[test]
fn share_smooth_matches_brute_force_on_larger_sets() {
    for (n, step) in [(20u64, 1), (30, 1), (50, 5)] {
        for m in (0..=n).step_by(step) {
            for beta in [0.05, 0.1, 0.3] {
                let (want, _) = share_smooth_brute(m, n - m, beta);
                let got = share_smooth(n, m, beta).expect("within reach");
                // 1e-12 relative.
                assert!(
                    (got - want).abs() <= 1e-12 * want,
                    "share_smooth({n}, {m}, {beta}) = {got}, brute force {want}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// 2. Order statistics, by brute force
// ---------------------------------------------------------------------------------------

/// The statistic of sorted `xs` from its definition: min is the first (hi if empty), max the
/// last (lo if empty), median the ceil(n/2)-th smallest, 1-based (lo if empty).
fn stat_brute(xs: &[u8], lo: u8, hi: u8, rank: Rank) -> f64 {
    let v = match (rank, xs.len()) {
        (Rank::Min, 0) => hi,
        (Rank::Median | Rank::Max, 0) => lo,
        (Rank::Min, _) => xs[0],
        (Rank::Max, n) => xs[n - 1],
        (Rank::Median, n) => xs[n.div_ceil(2) - 1],
    };
    f64::from(v)
}

/// The local sensitivity from its definition: every neighbour made by adding a grid value
/// `lo..=hi` or removing one element. Adding values off the grid cannot do better: the
/// statistic after adding `v` is monotone in `v` and is either a data value or `v` itself,
/// so it is most extreme at `v = lo` or `v = hi`, which are grid points.
fn order_ls_brute(xs: &[u8], lo: u8, hi: u8, rank: Rank) -> f64 {
    let f = stat_brute(xs, lo, hi, rank);
    let mut best = 0.0_f64;
    let mut buf = Vec::with_capacity(xs.len() + 1);
    for v in lo..=hi {
        buf.clear();
        buf.extend_from_slice(xs);
        let at = buf.partition_point(|&x| x < v);
        buf.insert(at, v);
        best = best.max((stat_brute(&buf, lo, hi, rank) - f).abs());
    }
    for i in 0..xs.len() {
        buf.clear();
        buf.extend_from_slice(xs);
        buf.remove(i);
        best = best.max((stat_brute(&buf, lo, hi, rank) - f).abs());
    }
    best
}

/// Every multiset (sorted) over `lo..=hi` within `k_max` additions and removals of `xs`, with
/// its distance, by breadth-first search.
fn ball(xs: &[u8], lo: u8, hi: u8, k_max: u32) -> Vec<(Vec<u8>, u32)> {
    let mut seen = HashSet::from([xs.to_vec()]);
    let mut out = vec![(xs.to_vec(), 0)];
    let mut next = 0;
    while next < out.len() {
        let (y, d) = out[next].clone();
        next += 1;
        if d == k_max {
            continue;
        }
        let mut push = |z: Vec<u8>| {
            if seen.insert(z.clone()) {
                out.push((z, d + 1));
            }
        };
        for v in lo..=hi {
            let mut z = y.clone();
            z.insert(z.partition_point(|&x| x < v), v);
            push(z);
        }
        for i in 0..y.len() {
            if i == 0 || y[i] != y[i - 1] {
                let mut z = y.clone();
                z.remove(i);
                push(z);
            }
        }
    }
    out
}

fn as_f64(xs: &[u8]) -> Vec<f64> {
    xs.iter().map(|&x| f64::from(x)).collect()
}

/// Every multiset over `lo..=hi` of size `0..=max_len`, sorted.
fn multisets(lo: u8, hi: u8, max_len: usize) -> Vec<Vec<u8>> {
    let mut out = vec![vec![]];
    let mut layer = vec![vec![]];
    for _ in 0..max_len {
        let mut grown = Vec::new();
        for xs in &layer {
            let from = xs.last().copied().unwrap_or(lo);
            for v in from..=hi {
                let mut ys: Vec<u8> = xs.clone();
                ys.push(v);
                grown.push(ys);
            }
        }
        out.extend(grown.iter().cloned());
        layer = grown;
    }
    out
}

#[test]
fn order_smooth_matches_brute_force_on_a_small_grid() {
    const K: u32 = 6;
    let (lo, hi) = (0u8, 4u8);
    let all = multisets(lo, hi, 5);
    assert_eq!(all.len(), 252); // C(5 + 5, 5)
    for xs in &all {
        let ball = ball(xs, lo, hi, K);
        let ls: Vec<[f64; 3]> = ball
            .iter()
            .map(|(y, _)| RANKS.map(|r| order_ls_brute(y, lo, hi, r)))
            .collect();
        let xf = as_f64(xs);
        for (ri, &rank) in RANKS.iter().enumerate() {
            let got = order_local(&xf, 0.0, 4.0, rank);
            assert!(
                (got - ls[0][ri]).abs() < 1e-12,
                "order_local({xs:?}, {rank:?}) = {got}, brute {}",
                ls[0][ri]
            );
            for beta in [0.1, 0.5, 2.0] {
                let want = ball
                    .iter()
                    .zip(&ls)
                    .map(|((_, d), l)| (-beta * f64::from(*d)).exp() * l[ri])
                    .fold(0.0, f64::max);
                // Nothing beyond K matters: every LS is at most hi - lo = 4, and the empty set
                // (n <= 5 < K away) has LS 4 for each statistic (one added value moves the
                // padded statistic from one end to the other), so the running max is at least
                // 4 e^(-beta n) >= 4 e^(-beta (K + 1)), all that a farther data set can give.
                assert!(4.0 * (-beta * f64::from(K + 1)).exp() <= want);
                let got = order_smooth(&xf, 0.0, 4.0, rank, beta, 0.0).expect("within reach");
                // 1e-12 absolute (values are at most 4).
                assert!(
                    (got - want).abs() < 1e-12,
                    "order_smooth({xs:?}, {rank:?}, beta {beta}) = {got}, brute force {want}"
                );
            }
        }
    }
}

/// On a finer grid the full search is too slow; the search to distance 2 gives
/// `T = max_{k <= 2} e^(-beta k) A^(k)` (`A^(k)` the most LS within k), and
/// `T <= S* <= max(T, 20 e^(-3 beta))` since every LS is at most hi - lo = 20. Where
/// `T >= 20 e^(-3 beta)` that pins S* exactly.
#[test]
fn order_smooth_is_pinned_by_the_near_ball_on_a_finer_grid() {
    use rand::Rng;
    const K: u32 = 2;
    let (lo, hi) = (0u8, 20u8);
    let mut rng = ChaCha20Rng::seed_from_u64(20070611);
    let mut pinned = 0;
    for case in 0..200 {
        let len = rng.random_range(0..=7usize);
        let mut xs: Vec<u8> = (0..len).map(|_| rng.random_range(lo..=hi)).collect();
        // A quarter of the cases with many repeats, where local sensitivities are often 0.
        if case % 4 == 0 {
            xs.iter_mut().for_each(|x| *x = 10 + *x % 2);
        }
        xs.sort_unstable();
        let ball = ball(&xs, lo, hi, K);
        let xf = as_f64(&xs);
        for rank in RANKS {
            let ls: Vec<f64> = ball
                .iter()
                .map(|(y, _)| order_ls_brute(y, lo, hi, rank))
                .collect();
            let got = order_local(&xf, 0.0, 20.0, rank);
            assert!(
                (got - ls[0]).abs() < 1e-12,
                "order_local({xs:?}, {rank:?}) = {got}, brute {}",
                ls[0]
            );
            for beta in [1.0, 2.0, 3.0] {
                let t = ball
                    .iter()
                    .zip(&ls)
                    .map(|((_, d), l)| (-beta * f64::from(*d)).exp() * l)
                    .fold(0.0, f64::max);
                let tail = 20.0 * (-beta * f64::from(K + 1)).exp();
                let got = order_smooth(&xf, 0.0, 20.0, rank, beta, 0.0).expect("within reach");
                // 1e-12 absolute (values are at most 20).
                let ctx =
                    format!("order_smooth({xs:?}, {rank:?}, beta {beta}) = {got}, near ball {t}");
                assert!(got >= t - 1e-12, "{ctx}: below the near ball");
                assert!(got <= t.max(tail) + 1e-12, "{ctx}: above the bound {tail}");
                if t >= tail {
                    pinned += 1;
                    assert!((got - t).abs() < 1e-12, "{ctx}");
                }
            }
        }
    }
    // Enough cases are checked exactly for the test to mean something.
    assert!(pinned > 600, "only {pinned} exact cases");
}

// ---------------------------------------------------------------------------------------
// 3. The heavy-tailed law and its sampler
// ---------------------------------------------------------------------------------------

#[test]
fn the_sampler_follows_the_law() {
    const N: usize = 20_000;
    for (seed, gamma) in [(1u64, 2.0), (2, 4.37), (3, 6.0)] {
        let law = law(gamma);
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let mut zs: Vec<f64> = (0..N).map(|_| law.sample(&mut rng)).collect();
        zs.sort_by(f64::total_cmp);
        // One-sample Kolmogorov-Smirnov; alpha = 0.001: D < 1.95 / sqrt(N).
        let d = zs
            .iter()
            .enumerate()
            .map(|(i, &z)| {
                let f = law.cdf(z);
                (f - i as f64 / N as f64).max((i + 1) as f64 / N as f64 - f)
            })
            .fold(0.0, f64::max);
        let crit = 1.95 / (N as f64).sqrt();
        assert!(d < crit, "gamma {gamma}: KS D = {d} >= {crit}");
        // The tails: counts of |Z| beyond the two-sided quantiles, within 4.5 binomial sigmas.
        for q in [0.1, 0.01, 0.001] {
            let z = law.tail_quantile(q);
            let seen = zs.iter().filter(|x| x.abs() > z).count() as f64;
            let mean = N as f64 * q;
            let sigma = (N as f64 * q * (1.0 - q)).sqrt();
            assert!(
                (seen - mean).abs() < 4.5 * sigma,
                "gamma {gamma}: {seen} beyond the {q} quantile {z}, expected {mean}"
            );
        }
        // Both signs, about equally: within 4.5 sigmas of N/2.
        let neg = zs.iter().filter(|x| **x < 0.0).count() as f64;
        assert!((neg - N as f64 / 2.0).abs() < 4.5 * (N as f64 / 4.0).sqrt());
    }
}

#[test]
fn the_distribution_function_integrates_the_density() {
    for gamma in [2.0, 4.37, 6.0] {
        let law = law(gamma);
        assert!((law.cdf(0.0) - 0.5).abs() < 1e-15);
        // The whole mass, 1 to 1e-7: [0, 1] directly, [1, inf) through z = 1/t, where
        // dz / (1 + z^g) = t^(g-2) / (1 + t^g) dt is smooth on [0, 1].
        let near = simpson(|z| law.pdf(z), 0.0, 1.0, 4000);
        let far = simpson(
            |t| {
                // pdf(1/t) / t^2 = t^(g-2) / (1 + t^g) * pdf(0), finite at t = 0.
                t.powf(gamma - 2.0) / (1.0 + t.powf(gamma)) * law.pdf(0.0)
            },
            0.0,
            1.0,
            4000,
        );
        assert!(
            (2.0 * (near + far) - 1.0).abs() < 1e-7,
            "gamma {gamma}: mass {}",
            2.0 * (near + far)
        );
        // P(a < Z <= b) against the integral of the density, 1e-7.
        for (a, b) in [
            (-0.7, 0.3),
            (0.0, 1.0),
            (1.0, 2.5),
            (-7.0, -2.0),
            (2.5, 7.0),
        ] {
            let mass = simpson(|z| law.pdf(z), a, b, 4000);
            let diff = law.cdf(b) - law.cdf(a);
            assert!(
                (mass - diff).abs() < 1e-7,
                "gamma {gamma}: ({a}, {b}] {mass} vs {diff}"
            );
        }
    }
}

#[test]
fn the_variance_matches_numeric_integration() {
    let gamma: f64 = 4.52;
    let law = law(gamma);
    // Var Z = I2 / I0 with Ij = integral over [0, inf) of z^j / (1 + z^g). On [1, inf) put
    // z = 1/t and then t = s^k: for I2, t^(g-4) / (1 + t^g) dt becomes k / (1 + s^(k g)) ds
    // with k = 1 / (g - 3), smooth on [0, 1]; for I0, t^(g-2) / (1 + t^g) dt is smooth.
    let k = 1.0 / (gamma - 3.0);
    let i2 = simpson(|z| z * z / (1.0 + z.powf(gamma)), 0.0, 1.0, 20_000)
        + simpson(|s| k / (1.0 + s.powf(k * gamma)), 0.0, 1.0, 20_000);
    let i0 = simpson(|z| 1.0 / (1.0 + z.powf(gamma)), 0.0, 1.0, 20_000)
        + simpson(
            |t| t.powf(gamma - 2.0) / (1.0 + t.powf(gamma)),
            0.0,
            1.0,
            20_000,
        );
    let numeric = i2 / i0;
    let got = law.variance();
    // 1e-4 relative.
    assert!(
        (got / numeric - 1.0).abs() < 1e-4,
        "variance {got}, numeric {numeric}"
    );
    // And the normaliser the density uses is 2 I0.
    assert!((1.0 / law.pdf(0.0) / (2.0 * i0) - 1.0).abs() < 1e-9);
}

// ---------------------------------------------------------------------------------------
// 4. The grid release
// ---------------------------------------------------------------------------------------

#[test]
fn the_grid_release_has_no_holes_and_bounded_ratios() {
    // 200_000 draws per data set would take over a minute in a debug build (each draw inverts
    // the tail by bisection on the incomplete beta function); 30_000 keep at least 2000 draws
    // in each pooled bin below.
    const DRAWS: usize = 30_000;
    const SCALE: f64 = 50.0;
    let law = law(4.37);
    // The output is the true value plus noise drawn from the generator alone: the same
    // stream gives outputs shifted by exactly the difference of the true values.
    for far in [1i128, 1 << 60, -(1 << 60)] {
        let (mut r0, mut r1) = (ChaCha20Rng::seed_from_u64(7), ChaCha20Rng::seed_from_u64(7));
        for _ in 0..200 {
            let a = release_steps(&mut r0, &law, 0, SCALE);
            assert_eq!(release_steps(&mut r1, &law, far, SCALE), a + far);
        }
    }
    let mut counts = [vec![0usize; 201], vec![0usize; 201]];
    for (t, (seed, c)) in [11u64, 12].into_iter().zip(counts.iter_mut()).enumerate() {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        for _ in 0..DRAWS {
            let out = release_steps(&mut rng, &law, t as i128, SCALE);
            if (-100..=100).contains(&out) {
                c[(out + 100) as usize] += 1;
            }
        }
    }
    // No hole: each of -3..=3 comes out of both data sets (about 275 times expected each;
    // the bound is over 8 sd below).
    for j in -3..=3i128 {
        for (t, c) in counts.iter().enumerate() {
            let seen = c[(j + 100) as usize];
            assert!(seen > 100, "true {t}: output {j} seen {seen} times");
        }
    }
    // Likelihood ratios over outputs in -100..=100, pooled into runs of consecutive outputs
    // holding at least 2000 draws in each data set. For a shift of one step at scale 50 the
    // continuous law's log-ratio is at most max |d/dz ln h| / 50 < 0.04; with 2000 draws per
    // bin the sampling sd of a log-ratio is about 0.032, so 0.2 is 5 sd above the bound.
    let (mut a, mut b, mut bins, mut worst) = (0usize, 0usize, 0, 0.0_f64);
    for (x, y) in counts[0].iter().zip(&counts[1]).take(201) {
        a += x;
        b += y;
        if a >= 2000 && b >= 2000 {
            worst = worst.max((a as f64 / b as f64).ln().abs());
            bins += 1;
            a = 0;
            b = 0;
        }
    }
    assert!(bins >= 10, "only {bins} bins");
    assert!(worst < 0.2, "log-ratio {worst} over {bins} bins");
}

// ---------------------------------------------------------------------------------------
// 5. The slides' numbers
// ---------------------------------------------------------------------------------------

fn close(got: f64, want: f64, tol: f64, what: &str) {
    assert!(
        (got - want).abs() <= tol,
        "{what}: got {got}, slides {want} (tolerance {tol})"
    );
}

#[test]
fn the_slides_absolute_frequency() {
    // A count moves by exactly 1 between any neighbours, so its global, local and smooth
    // sensitivities are all 1 (max over y of e^(-beta d) * 1 is attained at y = x).
    let c95 = prob(0.95);
    let (g, _) = minimise(|g| dependent_half_width(1.0, g, 1.0, c95), 1.0, 40.0);
    close(g, 4.37, 0.01, "gamma minimising the 95% half-width");
    close(
        dependent_half_width(0.1, g, 1.0, c95),
        285.0,
        0.5,
        "half-width at eps 0.1",
    );
    close(
        dependent_half_width(1.0, g, 1.0, c95),
        28.5,
        0.05,
        "half-width at eps 1",
    );
    let (g, _) = minimise(|g| dependent_variance(1.0, g, 1.0), 3.0, 40.0);
    // The minimiser is 4.528; the slides print 4.52, truncating.
    assert!(
        (4.52..4.53).contains(&g),
        "gamma minimising the variance: {g}"
    );
    close(
        dependent_variance(0.1, g, 1.0),
        24045.0,
        1.0,
        "variance at eps 0.1",
    );
    close(
        dependent_variance(1.0, g, 1.0),
        240.0,
        0.5,
        "variance at eps 1",
    );
    // Laplace: ln(20)/eps = 29.96 and 2.996; the slides print 29.9 and 2.99, truncating.
    // (eps, printed half-width, a unit of its last digit, variance 2 / eps^2)
    for (e, printed, unit, variance) in [(0.1, 29.9, 0.1, 200.0), (1.0, 2.99, 0.01, 2.0)] {
        let h = laplace::interval_half_width(Epsilon::new(e).expect("valid"), c95);
        assert!(
            h >= printed && h < printed + unit,
            "Laplace half-width at eps {e}: {h}, printed (truncated) {printed}"
        );
        close(h, 20f64.ln() / e, 1e-12, "Laplace half-width, closed form");
        close(2.0 / (e * e), variance, 1e-9, "Laplace variance");
    }
    let (_, ratio) = rule_of_thumb();
    close(ratio, 10.96, 0.005, "rule of thumb");
}

#[test]
fn the_slides_relative_frequency() {
    let eps = 0.1;
    let c95 = prob(0.95);
    // (n, m, printed half-width, its tolerance, printed variance, its tolerance): half a unit
    // of the last printed digit.
    let table = [
        (100, 0, 8.34, 0.005, 30.2, 0.05),
        (100, 50, 8.60, 0.005, 32.0, 0.05),
        (1000, 0, 0.285, 0.0005, 0.024, 0.0005),
        (1000, 500, 0.143, 0.0005, 0.006, 0.0005),
        (10000, 0, 0.0285, 0.00005, 0.00024, 0.000005),
        (10000, 5000, 0.0143, 0.00005, 0.00006, 0.000005),
    ];
    for (n, m, width, wtol, var, vtol) in table {
        let s = |g: f64| share_smooth(n, m, eps / g).expect("within reach");
        let variance = |g: f64| dependent_variance(eps, g, s(g));
        // Far from the optimum the smooth sensitivity searches thousands of rows away (a
        // minute in a debug build), so it is skipped where it cannot matter: S* >= LS, so
        // the variance is at least `low(g)`, and where `low(g)` is above twice `cap` (a value
        // the variance takes) the point is not a minimiser; there `low(g)` stands in for it,
        // which leaves it above the minimum (checked below: the result is at most `cap`).
        let low = |g: f64| dependent_variance(eps, g, share_local(n, m));
        let cap = variance(4.5);
        let (g, v) = minimise(
            |g| {
                if low(g) > 2.0 * cap {
                    low(g)
                } else {
                    variance(g)
                }
            },
            3.0,
            40.0,
        );
        assert!(
            v <= cap && v == variance(g),
            "n {n} m {m}: gamma {g}, variance {v}"
        );
        let w = dependent_half_width(eps, g, s(g), c95);
        close(
            w,
            width,
            wtol,
            &format!("half-width n {n} m {m} (gamma {g})"),
        );
        close(v, var, vtol, &format!("variance n {n} m {m} (gamma {g})"));
    }
    // Laplace at sensitivity 1/2: ln(20)/2/eps = 14.98, printed 15; variance 2 (1/2 / eps)^2.
    let h = laplace::interval_half_width(Epsilon::new(eps).expect("valid"), c95) * 0.5;
    close(h, 15.0, 0.05, "Laplace half-width for the share");
    close(
        2.0 * (0.5 / eps).powi(2),
        50.0,
        1e-9,
        "Laplace variance for the share",
    );
}

/// The releases' searches (`share_smooth_full`, `order_smooth_full`: every distance out to a
/// public one, no early stop) give what the early-stopping searches give, floored.
#[test]
fn the_full_searches_agree_with_the_early_stopping_ones() {
    for n in [0u64, 1, 2, 5, 20, 100] {
        for m in [0, n / 3, n / 2, n] {
            for beta in [0.05, 0.3, 1.0] {
                let floor = 2f64.powi(-20);
                let full = dpq::stats::smooth::share_smooth_full(n, m, beta, floor).unwrap();
                let early = share_smooth(n, m, beta).unwrap().max(floor);
                assert!(
                    (full - early).abs() <= 1e-12 * early,
                    "{n} {m} {beta}: {full} {early}"
                );
            }
        }
    }
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    for _ in 0..200 {
        let len = (rand::RngCore::next_u32(&mut rng) % 12) as usize;
        let mut xs: Vec<i128> = (0..len)
            .map(|_| i128::from(rand::RngCore::next_u32(&mut rng) % 1000))
            .collect();
        xs.sort_unstable();
        for rank in [Rank::Min, Rank::Median, Rank::Max] {
            for beta in [0.1, 0.5, 2.0] {
                let full =
                    dpq::stats::smooth::order_smooth_full(&xs, 0, 1000, rank, beta, 1.0).unwrap();
                let early = order_smooth(&xs, 0, 1000, rank, beta, 1.0).unwrap();
                assert!(
                    (full - early).abs() <= 1e-12 * early,
                    "{xs:?} {rank:?} {beta}"
                );
            }
        }
    }
    // Past the public distance nothing is searched: a refusal, for every data set alike.
    assert!(dpq::stats::smooth::share_smooth_full(10, 5, 1e-6, 1e-12).is_err());
    assert!(
        dpq::stats::smooth::order_smooth_full(&[1i128], 0, 1 << 40, Rank::Max, 1e-6, 1.0).is_err()
    );
}
