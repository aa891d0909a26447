//! `SUM` and `MEAN` with clamps: the sensitivity under each model, the clamp (a value raised
//! above the upper bound changes nothing), and the coverage of their intervals over seeded
//! repetitions.

use dpq::eval::{Randomness, Session};

mod common;
use common::run_json;

/// A table of 200 rows: `v` from 0 to 199 (every tenth missing), `w` = v / 4 as a float, `g`
/// alternating `a` and `b`.
fn table(dir: &std::path::Path, last: &str) -> std::path::PathBuf {
    let path = dir.join(format!("t{last}.csv"));
    let mut text = String::from("v,w,g\n");
    for i in 0..200 {
        let v = if i == 199 {
            last.to_string()
        } else if i % 10 == 9 {
            String::new()
        } else {
            i.to_string()
        };
        let w = if v.is_empty() {
            String::new()
        } else {
            format!("{}", i as f64 / 4.0)
        };
        text.push_str(&format!("{v},{w},{}\n", if i % 2 == 0 { "a" } else { "b" }));
    }
    std::fs::write(&path, text).expect("the table is written");
    path
}

/// The true clamped sum and count of `v` over rows with `g = 'a'` (the last row is a `b`).
fn truth(lo: f64, hi: f64) -> (f64, f64) {
    let vals: Vec<f64> = (0..199)
        .filter(|i| i % 10 != 9 && i % 2 == 0)
        .map(|i| (i as f64).clamp(lo, hi))
        .collect();
    (vals.iter().sum(), vals.len() as f64)
}

/// The sensitivity follows the bounds and the model: `max(|lo|, |hi|)` when a row is added or
/// removed, `max(hi, 0) - min(lo, 0)` when one is replaced (a row outside the condition, or
/// without a value, counts 0); whole bounds on an integer column.
#[test]
fn the_sensitivity_follows_the_bounds_and_the_model() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = table(dir.path(), "199");
    for (model, clamp, s) in [
        ("replace", "(0, 100)", 100.0),
        ("replace", "(20, 100)", 100.0),
        ("replace", "(-30, 100)", 130.0),
        ("add_remove", "(-30, 100)", 100.0),
        ("add_remove", "(-300, 100)", 300.0),
        // On an integer column the bounds that matter are whole: [1, 99].
        ("replace", "(0.5, 99.5)", 99.0),
    ] {
        let mut session = Session::new(Randomness::Seeded(1));
        let out = run_json(
            &mut session,
            &format!(
                "LOAD '{}' AS t NEIGHBOURS {model}; SUM v CLAMP {clamp} WITH EPS 1;",
                data.display()
            ),
        );
        assert_eq!(out[1]["sensitivity"], s, "{model} {clamp}: {}", out[1]);
    }
}

/// A value raised far above the upper bound leaves the clamped sum and count exactly as they
/// were: the clamp, not the data, bounds what one row can do. A seeded release is the true
/// value plus noise that depends on the seed, the query and the data's content only, so the
/// answer depends on the data through the clamped sum alone (shown here on the sum itself:
/// the noise differs between the two files because their contents differ).
#[test]
fn a_value_above_the_bound_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let load = |last: &str| {
        let data = table(dir.path(), last);
        dpq::data::load_csv(&data, &dpq::data::LoadOptions::default()).expect("load")
    };
    let (t150, tbig) = (load("150"), load("1000000000"));
    let clamp = dpq::data::Clamp::Int {
        lo: 0,
        hi: 100,
        k: 3,
    };
    let a = dpq::data::sum_clamped(&t150.table, 0, None, clamp);
    let b = dpq::data::sum_clamped(&tbig.table, 0, None, clamp);
    assert_eq!(a, b, "the clamped sums of the two tables");
    let (expected, _) = truth(0.0, 100.0);
    let odd: f64 = (0..199)
        .filter(|i| i % 10 != 9 && i % 2 == 1)
        .map(|i| (i as f64).clamp(0.0, 100.0))
        .sum::<f64>()
        + 100.0;
    assert_eq!(a.0, ((expected + odd) as i128) << 3, "in steps of 2^-3");
    let float = dpq::data::Clamp::Float {
        lo: 0.0,
        hi: 25.0,
        k: 4,
    };
    assert_eq!(
        dpq::data::sum_clamped(&t150.table, 1, None, float),
        dpq::data::sum_clamped(&tbig.table, 1, None, float)
    );
    // The same content and seed give the same answer: the release is a function of them.
    let data = table(dir.path(), "150");
    let answer = || {
        let mut session = Session::new(Randomness::Seeded(9));
        run_json(
            &mut session,
            &format!(
                "LOAD '{}' AS t; SUM v CLAMP (0, 100) WITH EPS 1;",
                data.display()
            ),
        )[1]["noisy"]
            .clone()
    };
    assert_eq!(answer(), answer());
}

/// The one-sided Wilson upper bound of a proportion seen `k` times in `n` trials, at the
/// normal quantile `z`.
fn wilson_upper(k: u64, n: u64, z: f64) -> f64 {
    let (n, p) = (n as f64, k as f64 / n as f64);
    let centre = p + z * z / (2.0 * n);
    let spread = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    (centre + spread) / (1.0 + z * z / n)
}

/// Over 600 independently seeded releases each, the 95% interval of a sum holds its true value
/// in about 95% of them, and the interval of a mean (at least 0.95 by construction) at least
/// as often: the coverage's upper Wilson bound (z = 4.7534, alpha 1e-6) is not below 0.95.
/// Under both models, on an integer and a float column, with a condition.
#[test]
fn the_intervals_hold_the_truth_at_their_level() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = table(dir.path(), "199");
    let (sum_v, count_v) = truth(10.0, 150.0);
    let float_sum: f64 = (0..199)
        .filter(|i| i % 10 != 9 && i % 2 == 0)
        .map(|i| (i as f64 / 4.0).clamp(0.0, 30.0))
        .sum();
    let n = 600u64;
    for (model, statement, truth) in [
        (
            "replace",
            "SUM v CLAMP (10, 150) WHERE g = 'a' WITH EPS 0.05",
            sum_v,
        ),
        (
            "add_remove",
            "SUM v CLAMP (10, 150) WHERE g = 'a' WITH EPS 0.05",
            sum_v,
        ),
        (
            "replace",
            "SUM w CLAMP (0, 30) WHERE g = 'a' WITH EPS 0.05",
            float_sum,
        ),
        (
            "replace",
            "MEAN v CLAMP (10, 150) WHERE g = 'a' WITH EPS 0.2",
            sum_v / count_v,
        ),
        (
            "add_remove",
            "MEAN v CLAMP (10, 150) WHERE g = 'a' WITH EPS 0.2",
            sum_v / count_v,
        ),
    ] {
        let mut held = 0u64;
        for seed in 0..n {
            let mut session = Session::new(Randomness::Seeded(1000 + seed));
            let out = run_json(
                &mut session,
                &format!(
                    "LOAD '{}' AS t NEIGHBOURS {model}; {statement};",
                    data.display()
                ),
            );
            let r = &out[1];
            let lo = r["interval95"][0].as_f64().expect("an interval");
            let hi = r["interval95"][1].as_f64().expect("an interval");
            // The float column's values sit on the noise's grid only after rounding: allow the
            // rounding, at most half a grid step per row (the grid is finer than 2^-10 here).
            let slack = if statement.contains(" w ") {
                200.0 * 2f64.powi(-11)
            } else {
                0.0
            };
            if lo - slack <= truth && truth <= hi + slack {
                held += 1;
            }
        }
        let upper = wilson_upper(held, n, 4.7534);
        assert!(
            upper >= 0.95,
            "{model}: {statement}: held {held} of {n} (upper bound {upper:.4} < 0.95)"
        );
    }
}
