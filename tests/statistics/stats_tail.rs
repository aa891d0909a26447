//! Far tails of a weighted sum of Laplace noises (`PROB` beyond the FFT's absolute accuracy)
//! against high-precision references, and how `PROB` reports them: a value with a stated
//! relative error, or a bound, never digits that are not known.
//!
//! The references were computed once with Python's mpmath (1.3.0) at 60-80 significant digits
//! and are pasted below with the script's method in a comment. Each check allows the relative
//! error that dpq itself states for the value (at most `STATED`), plus `INPUT` for the rounding
//! of the inputs to doubles where they come from a computation (the BLUE's weights).

use dpq::driver::{run_source, Emitted};
use dpq::eval::{Randomness, Session};
use dpq::output::Format;
use dpq::stats::blue::{Blue, Measurement};
use dpq::stats::exact::{NoiseSum, Posterior, Reported};
use dpq::stats::tail;

/// The relative error dpq states for a tail it reports as a value, at most.
const STATED: f64 = 1e-9;
/// Allowance for the BLUE's weights rounded to doubles: a relative change `r` of a scale `c`
/// changes `P(Z > t)` by about `r t / c` relatively; here `r < 1e-14` and `t / c < 300`.
const INPUT: f64 = 3e-12;

/// The worked example's history (Xiao and Xiong, eq. 20 and 22, section 3's answers).
fn worked_example() -> Posterior {
    let h = [
        [1.0, 1.0, 0.0, 0.0],
        [0.0, 0.0, 1.0, 1.0],
        [0.0, 0.0, 0.0, 1.0],
        [0.0, 0.0, 1.0, 0.0],
        [0.0, 1.0, 0.0, 1.0],
        [2.0, 1.0, 0.0, 0.0],
        [0.0, 0.0, 2.0, -1.0],
        [0.0, -1.0, 0.0, 1.0],
    ];
    let alpha = [0.05, 0.1, 0.05, 0.1, 0.1, 0.05, 0.05, 0.1];
    let y = [30.8, 30.3, 46.9, 20.2, 30.4, 68.9, 38.9, 9.5];
    let history: Vec<Measurement> = h
        .iter()
        .zip(alpha)
        .zip(y)
        .map(|((row, eps), noisy)| Measurement {
            row: row
                .iter()
                .copied()
                .enumerate()
                .filter(|x| x.1 != 0.0)
                .collect(),
            eps,
            sensitivity: row.iter().fold(0.0f64, |a, x| a.max(x.abs())),
            noisy,
            law: Default::default(),
        })
        .collect();
    let blue = Blue::new(4, &history).expect("valid history");
    let e = blue.estimate(&[1.0, 0.0, 1.0, 0.0]).expect("estimable");
    let noise = NoiseSum::fft(&blue.noise_terms(&e.weights)).expect("grid fits");
    Posterior {
        estimate: e.value,
        noise,
    }
}

/// A value within its stated relative error (plus `extra`) of `exact`, the error at most
/// `STATED`.
fn assert_value(got: Reported, exact: f64, extra: f64, what: &str) {
    let Reported::Value {
        value,
        relative_error,
    } = got
    else {
        panic!("{what}: {got:?} is not a value");
    };
    assert!(relative_error <= STATED, "{what}: stated {relative_error}");
    let rel = (value - exact).abs() / exact;
    assert!(
        rel <= relative_error + extra,
        "{what}: {value} vs {exact}: relative error {rel} above the stated {relative_error}"
    );
}

#[test]
fn worked_example_tails_match_exact_values() {
    // mpmath, 80 digits: the BLUE's weights A = q (H'WH)^-1 H'W in rational arithmetic
    // (Python's fractions, from the paper's H, alpha and y), theta-hat = A y = 292206/6955, the
    // scales c_i = |A_i| S_i / alpha_i (all distinct), and
    // P(Z > t) = sum_i w_i e^(-t/c_i) / 2, w_i = prod_{j != i} c_i^2 / (c_i^2 - c_j^2)
    // (the partial fractions of the moment generating function prod 1/(1 - c_i^2 s^2)).
    let post = worked_example();
    assert!((post.estimate - 292_206.0 / 6955.0).abs() < 1e-11);
    let cases = [
        (post.greater(600.0), 4.383_430_816_466_921_4e-23, "> 600"),
        (post.greater(3000.0), 1.0280922248487436e-122, "> 3000"),
        (post.less(-3000.0), 3.340079705525094e-126, "< -3000"),
        (post.greater(100.0), 0.010557332000478682, "> 100"),
        (post.greater(0.0), 0.9619041161415354, "> 0"),
        (post.greater(-200.0), 0.9999999994838655, "> -200"),
        (
            post.between(20.0, 60.0),
            0.6358603236022389,
            "between 20 and 60",
        ),
        (
            post.between(600.0, 700.0),
            4.383120382637895e-23,
            "between 600 and 700",
        ),
    ];
    for (got, exact, what) in cases {
        assert_value(got, exact, INPUT, what);
    }
    // The f64 shorthands give the same values.
    let p = post.prob_greater(600.0);
    assert!((p - 4.3834308164669214e-23).abs() < 1e-9 * 4.4e-23, "{p}");
}

#[test]
fn sums_of_equal_laplace_noises_match_exact_values() {
    // Equal scales (a history of repeated counts): mpmath, 60 digits, from the density of a sum
    // of n Laplace(1), f_n(z) = e^-|z| / (2^(2n-1) (n-1)!) sum_{k<n} (2n-2-k)! / (k! (n-1-k)!)
    // 2^k |z|^k, integrated term by term (int_t^inf z^k e^-z dz = k! e^-t sum_{j<=k} t^j/j!);
    // for n = 2 it is e^-t (2 + t) / 4.
    let cases: [(usize, f64, f64); 9] = [
        (2, 50.0, 2.507374802353093e-21),
        (2, 300.0, 3.8868911679210706e-129),
        (2, 680.0, 8.155990084437062e-294),
        (5, 20.0, 8.393940775629858e-07),
        (5, 200.0, 3.0913080293343706e-81),
        (20, 400.0, 6.953231421664664e-148),
        (100, 60.0, 1.5227301020078203e-05),
        (100, 300.0, 1.2723346455622881e-64),
        (100, 600.0, 1.0721796157419503e-168),
    ];
    for (n, t, exact) in cases {
        let c = vec![1.0; n];
        let e = tail::upper(&c, t);
        assert!(
            e.lo <= exact && exact <= e.hi,
            "n {n}, t {t}: [{}, {}] misses {exact}",
            e.lo,
            e.hi
        );
        assert_value(Reported::from(e), exact, 0.0, &format!("n {n}, t {t}"));
        // The Chernoff bound holds, and is not far above: by about s sd sqrt(2 pi) at the
        // saddle point, below 3 (1 + t) here.
        let b = tail::chernoff(&c, t);
        assert!(
            exact <= b && b <= 3.0 * (1.0 + t) * exact,
            "n {n}, t {t}: {b}"
        );
    }
    // Below 1e-300 a tail is enclosed in [0, 1e-300] (n = 2, t = 700: 1.730373e-302).
    let e = tail::upper(&[1.0, 1.0], 700.0);
    assert_eq!((e.lo, e.hi), (0.0, tail::TINY));
    assert_eq!(Reported::from(e), Reported::Below(1e-300));
}

#[test]
fn one_laplace_noise_matches_its_closed_form_far_out() {
    // Z ~ Laplace(c): P(Z > t) = e^(-t/c) / 2, computed here in logarithms.
    for (c, t) in [
        (2.0f64, 1000.0f64),
        (0.37, 100.0),
        (1e-3, 0.5),
        (50.0, 1e-9),
    ] {
        let exact = 0.5 * (-t / c).exp();
        assert_value(
            Reported::from(tail::upper(&[c], t)),
            exact,
            0.0,
            &format!("c {c}, t {t}"),
        );
    }
    // Symmetry: P(Z > -t) = 1 - P(Z > t), and P(Z > 0) = 1/2 exactly.
    let e = tail::upper(&[3.0, 1.0], 0.0);
    assert_eq!((e.lo, e.hi), (0.5, 0.5));
    let (up, down) = (
        tail::upper(&[3.0, 1.0], 7.0),
        tail::upper(&[3.0, 1.0], -7.0),
    );
    assert!((up.lo + down.hi - 1.0).abs() < 1e-15 && (up.hi + down.lo - 1.0).abs() < 1e-15);
}

#[test]
fn tails_agree_with_the_fft_in_the_bulk() {
    // Where the FFT is accurate in absolute terms (its gamma), the tail method agrees with it:
    // random sums of 1, 3, 20 and 100 terms over +-4 standard deviations.
    let mut state = 12_345u64;
    let mut next = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    for m in [1usize, 3, 20, 100] {
        let terms: Vec<_> = (0..m)
            .map(|_| dpq::stats::exact::Term {
                weight: 4.0 * next() - 2.0,
                scale: 0.5 + 39.5 * next(),
                law: dpq::stats::exact::Law::Laplace,
            })
            .collect();
        let fft = NoiseSum::fft(&terms).expect("grid fits");
        let sd = fft.variance().sqrt();
        for k in -40..=40 {
            let z = k as f64 * 0.1 * sd;
            let e = fft.upper_tail(z);
            assert!(
                e.hi - e.lo <= 2e-9 * e.hi,
                "m {m} z {z}: [{}, {}]",
                e.lo,
                e.hi
            );
            let f = fft.sf(z);
            assert!(
                (f - e.lo).abs() <= fft.error_bound() + (e.hi - e.lo),
                "m {m} z {z}: fft {f}, tail [{}, {}]",
                e.lo,
                e.hi
            );
        }
    }
}

/// Runs `source` in a fresh session; returns its JSON lines.
fn json(source: &str) -> Vec<serde_json::Value> {
    let mut session = Session::new(Randomness::Seeded(1));
    let mut out = Vec::new();
    run_source(&mut session, "test", source, Format::Json, &mut |e| {
        out.push(match e {
            Emitted::Result(s) | Emitted::Error(s) => s,
        })
    });
    out.iter()
        .map(|s| serde_json::from_str(s).expect("JSON"))
        .collect()
}

fn text(source: &str) -> String {
    let mut session = Session::new(Randomness::Os);
    let mut out = String::new();
    run_source(&mut session, "test", source, Format::Table, &mut |e| {
        out.push_str(&match e {
            Emitted::Result(s) | Emitted::Error(s) => s,
        });
        out.push('\n');
    });
    out
}

const EXAMPLE: &str = "CUBE 4; \
    OBSERVE (1, 1, 0, 0) = 30.8 WITH EPS 0.05; OBSERVE (0, 0, 1, 1) = 30.3 WITH EPS 0.1; \
    OBSERVE (0, 0, 0, 1) = 46.9 WITH EPS 0.05; OBSERVE (0, 0, 1, 0) = 20.2 WITH EPS 0.1; \
    OBSERVE (0, 1, 0, 1) = 30.4 WITH EPS 0.1; OBSERVE (2, 1, 0, 0) = 68.9 WITH EPS 0.05; \
    OBSERVE (0, 0, 2, -1) = 38.9 WITH EPS 0.05; OBSERVE (0, -1, 0, 1) = 9.5 WITH EPS 0.1;";

#[test]
fn prob_reports_far_tails_with_their_relative_error() {
    let out = json(&format!(
        "{EXAMPLE} PROB (1,0,1,0) > 600; PROB (1,0,1,0) > 3000; PROB (1,0,1,0) > 0;"
    ));
    let probs: Vec<_> = out.iter().filter(|v| v["kind"] == "prob").collect();
    assert_eq!(probs.len(), 3);
    for (v, exact) in probs.iter().zip([
        4.3834308164669214e-23,
        1.0280922248487436e-122,
        0.9619041161415354,
    ]) {
        let p = v["probability"].as_f64().expect("a number");
        let rel = v["relative_error"].as_f64().expect("a relative error");
        assert!(v["bound"].is_null(), "{v}");
        assert!(rel <= STATED, "{v}");
        assert!((p - exact).abs() <= (rel + INPUT) * exact, "{p} vs {exact}");
        let abs = v["error_bound"].as_f64().expect("an absolute error");
        assert!(abs <= rel * p * (1.0 + 1e-12), "{v}");
    }
    let shown = text(&format!("{EXAMPLE} PROB (1,0,1,0) > 600;"));
    assert!(
        shown.contains("P(x1 + x3 > 600) = 4.38343e-23 (relative error at most"),
        "{shown}"
    );
}

#[test]
fn prob_below_what_a_double_holds_is_printed_as_a_bound() {
    // P(theta > 20000) is about e^(-19958/10.46) / 2, near 1e-829: no double holds it, so dpq
    // says it is below 1e-300 rather than print 0.
    let out = json(&format!(
        "{EXAMPLE} PROB (1,0,1,0) > 20000; PROB (1,0,1,0) < 20000;"
    ));
    let probs: Vec<_> = out.iter().filter(|v| v["kind"] == "prob").collect();
    assert_eq!(probs[0]["bound"], "upper", "{}", probs[0]);
    assert_eq!(probs[0]["probability"].as_f64(), Some(1e-300));
    assert!(probs[0]["relative_error"].is_null());
    // Its complement is 1 to within 1e-300: a value, known to the precision of a double.
    assert!(probs[1]["bound"].is_null());
    let p = probs[1]["probability"].as_f64().expect("a number");
    assert!((1.0 - 1e-15..=1.0).contains(&p), "{p}");
    assert!(probs[1]["relative_error"].as_f64().expect("a number") <= 1e-15);
    let shown = text(&format!("{EXAMPLE} PROB (1,0,1,0) > 20000;"));
    assert!(
        shown.contains("P(x1 + x3 > 20000) < 1e-300 (an upper bound"),
        "{shown}"
    );
}
