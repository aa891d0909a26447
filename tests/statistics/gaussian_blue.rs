//! Inference from Gaussian releases (zCDP): the BLUE weighs answers by the inverse of their
//! variance whatever their law; with Gaussian answers only its error is normal, and mixed with
//! Laplace answers its law is the convolution, whose tails and distribution function are checked
//! against the normal-Laplace closed form; GLS credible intervals cover at their level over
//! seeded runs with the noise the interpreter draws (the exact discrete Gaussian on its grid).

use dpq::stats::blue::{Blue, Law, Measurement};
use dpq::stats::exact::{Method, NoiseSum, Posterior, Term};
use dpq::stats::noise::{GridGaussian, GridLaplace, Rational};
use dpq::stats::tail;
use dpq::stats::Probability;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// `P(Z > t)` for `Z = L + G`, `L ~ Laplace(c)`, `G ~ Normal(0, s^2)`: the normal-Laplace law
/// (Reed and Jorgensen 2004, with `alpha = beta = 1/c`):
/// `Q(t/s) + (1/2) [e^{s^2/(2c^2) - t/c} Q(s/c - t/s) - e^{s^2/(2c^2) + t/c} Q(s/c + t/s)]`,
/// `Q` the standard normal upper tail (`erfc(z / sqrt 2) / 2`, musl's `erfc`). Evaluated in
/// `f64`, each term to a few ulps: checked against 40-digit values (mpmath) at t = 2 and 40.
fn normal_laplace_upper(c: f64, s: f64, t: f64) -> f64 {
    let q = |z: f64| 0.5 * libm::erfc(z / std::f64::consts::SQRT_2);
    let a = s * s / (2.0 * c * c);
    q(t / s) + 0.5 * ((a - t / c).exp() * q(s / c - t / s) - (a + t / c).exp() * q(s / c + t / s))
}

fn level(p: f64) -> Probability {
    Probability::new(p).expect("a probability")
}

#[test]
fn a_mixed_tail_matches_the_normal_laplace_law() {
    // c = 2, s = 3 (g = 9): the saddle-point inversion with the normal factor against the
    // closed form, to the enclosure's own width plus 1e-12 relative for the reference's
    // rounding; and the Laplace-only and normal-only limits.
    let (c, s) = (2.0, 3.0);
    // The reference itself against mpmath at 40 digits.
    for (t, exact) in [
        (2.0, 0.303_785_027_853_798),
        (40.0, 3.174_400_058_021_84e-9),
    ] {
        let r = normal_laplace_upper(c, s, t);
        assert!(
            (r - exact).abs() <= 1e-13 * exact,
            "t {t}: {r} against {exact}"
        );
    }
    for t in [0.5, 2.0, 5.0, 10.0, 20.0, 40.0] {
        let e = tail::upper_mixed(&[c], s * s, t);
        let exact = normal_laplace_upper(c, s, t);
        assert!(
            e.lo <= exact * (1.0 + 1e-12) && exact * (1.0 - 1e-12) <= e.hi,
            "t {t}: {e:?} does not hold {exact}"
        );
        assert!(e.hi - e.lo <= 1e-9 * e.hi, "t {t}: {e:?} is not a value");
        // Symmetry: P(Z > -t) = 1 - P(Z > t).
        let neg = tail::upper_mixed(&[c], s * s, -t);
        assert!(neg.lo <= 1.0 - exact + 1e-15 && 1.0 - exact - 1e-15 <= neg.hi);
    }
    // Normal only: the normal's tail at 4 sd.
    let e = tail::upper_mixed(&[], 4.0, 8.0);
    let q = 3.167_124_183_311_992e-5; // P(Z > 4), mpmath.
    assert!(e.lo <= q && q <= e.hi && e.hi - e.lo <= 1e-12 * q, "{e:?}");
    // A far tail where the inversion cannot reach a value is still bounded, never below it.
    assert!(tail::chernoff_mixed(&[c], s * s, 40.0) >= normal_laplace_upper(c, s, 40.0));
}

#[test]
fn the_fft_of_a_mixed_error_is_its_distribution() {
    // One Laplace answer of scale 2 and one Gaussian of sd 3, weights 1: the FFT's
    // distribution function against the closed form, within its stated error; its quantile
    // from the grid or the tail, as the thin level asks.
    let terms = [
        Term {
            weight: 1.0,
            scale: 2.0,
            law: Law::Laplace,
        },
        Term {
            weight: 1.0,
            scale: 3.0,
            law: Law::Normal,
        },
    ];
    let d = NoiseSum::fft(&terms).expect("the grid fits");
    assert!(matches!(d.method(), Method::Fft { .. }));
    assert!((d.variance() - (8.0 + 9.0)).abs() < 1e-12);
    let gamma = d.error_bound();
    assert!(gamma < 1e-6, "gamma {gamma}");
    for z in [-30.0, -12.0, -5.0, -1.0, -0.2, 0.0, 0.7, 4.0, 15.0] {
        let exact = 1.0 - normal_laplace_upper(2.0, 3.0, z);
        assert!(
            (d.cdf(z) - exact).abs() <= gamma + 1e-13,
            "z {z}: {} against {exact} (gamma {gamma})",
            d.cdf(z)
        );
    }
    for p in [0.5, 0.95, 1.0 - 1e-9] {
        let w = d.central_half_width(level(p));
        let outside = 2.0 * normal_laplace_upper(2.0, 3.0, w);
        assert!(
            (outside - (1.0 - p)).abs() <= 1e-3 * (1.0 - p),
            "level {p}: half-width {w} leaves {outside}"
        );
    }
}

#[test]
fn gaussian_answers_alone_give_a_normal_error() {
    // Two Gaussian answers of sd 3 and 4 on one cell: the BLUE weighs them 16/25 and 9/25,
    // variance 1 / (1/9 + 1/16) = 5.76, and its error is normal: the 95% interval is
    // 1.959964 sd, certified, to 1e-9.
    let m = |sd: f64, y: f64| {
        let alpha = (2.0f64 * 0.01).sqrt();
        Measurement {
            row: vec![(0, 1.0)],
            eps: alpha,
            sensitivity: sd * alpha,
            noisy: y,
            law: Law::Normal,
        }
    };
    let b = Blue::new(1, &[m(3.0, 100.0), m(4.0, 110.0)]).expect("valid");
    let e = b.estimate(&[1.0]).expect("estimable");
    assert!(
        (e.weights[0] - 16.0 / 25.0).abs() < 1e-12,
        "{:?}",
        e.weights
    );
    assert!((e.variance - 5.76).abs() < 1e-12, "{}", e.variance);
    assert!((e.value - (100.0 * 16.0 + 110.0 * 9.0) / 25.0).abs() < 1e-9);
    let mut rng = ChaCha20Rng::seed_from_u64(0);
    let noise = NoiseSum::auto(&b.noise_terms(&e.weights), &mut rng).expect("normal");
    assert_eq!(noise.method(), Method::Normal);
    let w = noise.central_half_width(level(0.95));
    let expected = 1.959_963_984_540_054 * 2.4;
    assert!(
        (w - expected).abs() <= 1e-9 * expected,
        "{w} against {expected}"
    );
    // A Laplace answer of the same variance weighs the same.
    let laplace = Measurement {
        row: vec![(0, 1.0)],
        eps: std::f64::consts::SQRT_2 / 4.0,
        sensitivity: 1.0,
        noisy: 110.0,
        law: Law::Laplace,
    };
    let mixed = Blue::new(1, &[m(3.0, 100.0), laplace]).expect("valid");
    let e2 = mixed.estimate(&[1.0]).expect("estimable");
    assert!((e2.weights[0] - e.weights[0]).abs() < 1e-12);
    assert!((e2.variance - 5.76).abs() < 1e-12);
}

/// The design of Xiao and Xiong's eq. 20 over four cells.
const H: [[f64; 4]; 6] = [
    [1.0, 1.0, 0.0, 0.0],
    [0.0, 0.0, 1.0, 1.0],
    [0.0, 0.0, 0.0, 1.0],
    [0.0, 0.0, 1.0, 0.0],
    [0.0, 1.0, 0.0, 1.0],
    [1.0, 0.0, 1.0, 0.0],
];

/// The true cell counts and the query `x_1 + x_3`.
const X: [i128; 4] = [10, 20, 20, 10];
const Q: [f64; 4] = [1.0, 0.0, 1.0, 0.0];

/// A release of each row of `H`: Gaussian at variance `sigma2[i]` (the exact discrete
/// Gaussian on its grid, as `WITH RHO` draws it) where given, else Laplace at `eps 0.5` (on
/// its grid, as `WITH EPS` draws it). The rows' sensitivity is 1 (a count of disjoint cells).
fn release(rng: &mut ChaCha20Rng, sigma2: &[Option<(u128, u128)>]) -> Vec<Measurement> {
    H.iter()
        .zip(sigma2)
        .map(|(row, s2)| {
            let truth: i128 = row.iter().zip(X).map(|(h, x)| *h as i128 * x).sum();
            let cells = row
                .iter()
                .copied()
                .enumerate()
                .filter(|x| x.1 != 0.0)
                .collect();
            match s2 {
                Some((p, q)) => {
                    let g = GridGaussian::new(Rational::new(*p, *q).expect("a variance"))
                        .expect("the sampler takes it");
                    let steps = truth << g.k();
                    let sigma = (*p as f64 / *q as f64).sqrt();
                    let alpha = 1.0;
                    Measurement {
                        row: cells,
                        eps: alpha,
                        sensitivity: sigma * alpha,
                        noisy: g.release(rng, steps).value(),
                        law: Law::Normal,
                    }
                }
                None => {
                    let g = GridLaplace::new(Rational::new(2, 1).expect("the scale 1/0.5"));
                    Measurement {
                        row: cells,
                        eps: 0.5,
                        sensitivity: 1.0,
                        noisy: g.release(rng, truth << g.k()).value(),
                        law: Law::Laplace,
                    }
                }
            }
        })
        .collect()
}

/// The law of the BLUE's error for `x_1 + x_3` from releases at `sigma2` (the weights, hence
/// the law and the half-width, do not depend on the answers).
fn error_law(sigma2: &[Option<(u128, u128)>], rng: &mut ChaCha20Rng) -> NoiseSum {
    let b = Blue::new(4, &release(rng, sigma2)).expect("valid");
    let e = b.estimate(&Q).expect("estimable");
    let mut mc = ChaCha20Rng::seed_from_u64(1);
    NoiseSum::auto(&b.noise_terms(&e.weights), &mut mc).expect("a law")
}

/// The share of `runs` runs of releases at `sigma2` whose 95% credible interval for
/// `x_1 + x_3`, from the error law `noise`, holds it.
fn covered(
    noise: &NoiseSum,
    sigma2: &[Option<(u128, u128)>],
    runs: usize,
    rng: &mut ChaCha20Rng,
) -> f64 {
    let theta: f64 = Q.iter().zip(X).map(|(q, x)| q * x as f64).sum();
    let mut covered = 0usize;
    for _ in 0..runs {
        let e = Blue::new(4, &release(rng, sigma2))
            .expect("valid")
            .estimate(&Q)
            .expect("estimable");
        let post = Posterior {
            estimate: e.value,
            noise: noise.clone(),
        };
        let (lo, hi) = post.credible_interval(level(0.95));
        if lo <= theta && theta <= hi {
            covered += 1;
        }
    }
    covered as f64 / runs as f64
}

/// Whether 0.95 lies in the Wilson score interval of the rate `p` over `n` runs at z = 4.89
/// (two-sided false-positive rate 1e-6): about 0.95 -/+ 0.0075 at 20,000 runs.
pub(crate) fn consistent_with_95(p: f64, n: usize) -> bool {
    let (n, z) = (n as f64, 4.89f64);
    let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z / (1.0 + z * z / n) * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    (centre - half..=centre + half).contains(&0.95)
}

#[test]
fn gaussian_gls_intervals_cover_at_their_level() {
    // Six Gaussian answers of variances 50, 200, 12.5, 50, 800 and 3.125 (rho 0.01, 0.0025,
    // 0.04, 0.01, 0.000625, 0.16 at sensitivity 1): the error is normal.
    let sigma2 = [
        Some((50, 1)),
        Some((200, 1)),
        Some((25, 2)),
        Some((50, 1)),
        Some((800, 1)),
        Some((25, 8)),
    ];
    let runs = 20_000;
    let mut rng = ChaCha20Rng::seed_from_u64(2718);
    let noise = error_law(&sigma2, &mut rng);
    assert_eq!(noise.method(), Method::Normal);
    let p = covered(&noise, &sigma2, runs, &mut rng);
    assert!(consistent_with_95(p, runs), "coverage {p} over {runs} runs");
    // Control: the interval of an error law with a third of the variance (sd / sqrt 3)
    // under-covers, and the test sees it.
    let narrow = [
        Some((50, 3)),
        Some((200, 3)),
        Some((25, 6)),
        Some((50, 3)),
        Some((800, 3)),
        Some((25, 24)),
    ];
    let small = error_law(&narrow, &mut rng);
    let control = covered(&small, &sigma2, runs, &mut rng);
    assert!(
        !consistent_with_95(control, runs),
        "the control covers {control}"
    );
}

#[test]
fn mixed_gls_intervals_cover_at_their_level() {
    // Three Gaussian answers and three Laplace answers at eps 0.5 (variance 8): the error's
    // law is the convolution, computed by FFT.
    let sigma2 = [Some((8, 1)), None, Some((2, 1)), None, Some((32, 1)), None];
    let runs = 20_000;
    let mut rng = ChaCha20Rng::seed_from_u64(1618);
    let noise = error_law(&sigma2, &mut rng);
    assert!(
        matches!(noise.method(), Method::Fft { .. }),
        "{:?}",
        noise.method()
    );
    let p = covered(&noise, &sigma2, runs, &mut rng);
    assert!(consistent_with_95(p, runs), "coverage {p} over {runs} runs");
}
