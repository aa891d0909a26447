//! `SUM` and `MEAN` with clamps: the sensitivity under each model, the clamp (a value raised
//! above the upper bound changes nothing), and the coverage of their intervals over seeded
//! repetitions.

use dpq::eval::{Randomness, Session};

use crate::common;
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

/// The spending of a `SHOW BUDGET` result: the table's, and each cell's.
fn spent(out: &serde_json::Value) -> (f64, Vec<f64>) {
    let cells = out["cells"]
        .as_array()
        .map(|c| {
            c.iter()
                .map(|c| c["spent"].as_f64().expect("spent"))
                .collect()
        })
        .unwrap_or_default();
    (out["spent"].as_f64().expect("spent"), cells)
}

/// The error of a result, if it is one.
fn error(out: &serde_json::Value) -> Option<&str> {
    (out["kind"] == "error").then(|| out["message"].as_str().unwrap_or_default())
}

/// Under `add_remove` a sum over a union of cells is charged on those cells only: a row added
/// or removed moves its own cell's sum, by at most `max(|lo|, |hi|)`. Sums, means and counts
/// over disjoint cells compose in parallel, and on one cell they add up.
#[test]
fn sums_and_counts_over_disjoint_cells_compose_in_parallel_under_add_remove() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = table(dir.path(), "199");
    let mut session = Session::new(Randomness::Os);
    let out = run_json(
        &mut session,
        &format!(
            "LOAD '{}' AS t NEIGHBOURS add_remove; SET BUDGET 2; CUBE BY g ('a', 'b');
             SUM v CLAMP (0, 100) WHERE g = 'a' WITH EPS 1;
             COUNT WHERE g = 'b' WITH EPS 1;
             MEAN v CLAMP (0, 100) WHERE g = 'b' WITH EPS 1;
             SHOW BUDGET;",
            data.display()
        ),
    );
    assert!(out.iter().all(|o| error(o).is_none()), "{out:?}");
    // Cells a, b, other, missing: the sum on a, the count and the mean on b.
    assert_eq!(spent(&out[6]), (2.0, vec![1.0, 2.0, 0.0, 0.0]));
    // A sum over every cell would take b past its budget: refused, nothing spent.
    let refused = run_json(&mut session, "SUM v CLAMP (0, 100) WITH EPS 0.5;");
    assert!(error(&refused[0]).is_some_and(|e| e.contains("budget exceeded")));
    // Another column's sum on a fits beside the first.
    let out = run_json(
        &mut session,
        "SUM w CLAMP (0, 50) WHERE g = 'a' WITH EPS 1; SHOW BUDGET;",
    );
    assert!(error(&out[0]).is_none(), "{}", out[0]);
    assert_eq!(spent(&out[1]), (2.0, vec![2.0, 2.0, 0.0, 0.0]));
}

/// Under `replace` a row's value can change within its cell, which the costs of pairs of
/// cells do not see: a sum is charged in full on every cell and pair, wherever its condition.
#[test]
fn under_replace_a_sum_is_charged_on_every_pair() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = table(dir.path(), "199");
    let mut session = Session::new(Randomness::Os);
    let out = run_json(
        &mut session,
        &format!(
            "LOAD '{}' AS t; SET BUDGET 3; CUBE BY g ('a', 'b');
             SUM v CLAMP (0, 100) WHERE g = 'a' WITH EPS 1;
             SUM v CLAMP (0, 100) WHERE g = 'b' WITH EPS 1;
             SHOW BUDGET;",
            data.display()
        ),
    );
    assert_eq!(spent(&out[5]).0, 2.0, "{}", out[5]);
}

/// A sum's charge is its epsilon on each cell whatever its bounds: ten sums of epsilon 0.1
/// with bounds below 1 (whose floating-point sensitivities miss their decimals) fill a cell's
/// budget of 1 exactly, and not a bit more.
#[test]
fn bounds_below_one_charge_their_epsilon_exactly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = table(dir.path(), "199");
    let mut session = Session::new(Randomness::Os);
    let mut script = format!(
        "LOAD '{}' AS t NEIGHBOURS add_remove; CUBE BY g ('a', 'b');",
        data.display()
    );
    for hi in [
        "0.3", "0.7", "0.1", "0.9", "0.33", "0.6", "0.15", "0.45", "0.77", "0.2",
    ] {
        script.push_str(&format!(
            "SUM w CLAMP (0, {hi}) WHERE g = 'a' WITH EPS 0.1;"
        ));
    }
    script.push_str("SHOW BUDGET;");
    let out = run_json(&mut session, &script);
    assert!(out.iter().all(|o| error(o).is_none()), "{out:?}");
    assert_eq!(spent(&out[12]).1[0], 1.0);
    let more = "SUM w CLAMP (0, 0.5) WHERE g = 'a' WITH EPS 0.001;";
    let refused = run_json(&mut session, more);
    assert!(error(&refused[0]).is_some_and(|e| e.contains("budget exceeded")));
    let other = run_json(
        &mut session,
        "SUM w CLAMP (0, 0.5) WHERE g = 'b' WITH EPS 1;",
    );
    assert!(error(&other[0]).is_none(), "{}", other[0]);
}

/// `ESTIMATE SUM` of a union of cells from sums over each: the best linear unbiased estimate
/// is the sum of the noisy sums (disjoint measurements), free, and its 95% interval (from the
/// exact distribution of the two noises' sum) holds the true sum in about 95% of 400 seeded
/// runs: the two-sided Wilson bounds of the coverage (z = 4.7534, alpha 1e-6 each side)
/// enclose 0.95.
#[test]
fn an_estimate_of_a_union_of_sums_is_their_total_and_covers_the_truth() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = table(dir.path(), "199");
    // Every row with a value, clamped to [10, 150]; the last row (199, a `b`) included.
    let truth: f64 = (0..200)
        .filter(|i| i % 10 != 9 || *i == 199)
        .map(|i| (i as f64).clamp(10.0, 150.0))
        .sum();
    let n = 400u64;
    let mut held = 0u64;
    for seed in 0..n {
        let mut session = Session::new(Randomness::Seeded(5000 + seed));
        let out = run_json(
            &mut session,
            &format!(
                "LOAD '{}' AS t NEIGHBOURS add_remove; CUBE BY g ('a', 'b');
                 SUM v CLAMP (10, 150) WHERE g = 'a' WITH EPS 0.05;
                 SUM v CLAMP (10, 150) WHERE g = 'b' WITH EPS 0.05;
                 ESTIMATE SUM v CLAMP (10, 150) WHERE g = 'a' OR g = 'b';
                 SHOW BUDGET;",
                data.display()
            ),
        );
        let noisy = |i: usize| out[i]["noisy"].as_f64().expect("a noisy sum");
        let e = &out[4];
        let estimate = e["estimate"].as_f64().expect("an estimate");
        assert!(
            (estimate - (noisy(2) + noisy(3))).abs() <= 1e-9 * estimate.abs().max(1.0),
            "{e}"
        );
        // Two Laplace noises of scale 150/0.05 each: variance 2 * 2 * 3000^2.
        let variance = e["variance"].as_f64().expect("a variance");
        assert!(
            (variance - 4.0 * 3000f64.powi(2)).abs() < 1e-6 * variance,
            "{e}"
        );
        // The estimate spent nothing: each cell holds its own sum's epsilon.
        assert_eq!(spent(&out[5]).1[..2], [0.05, 0.05]);
        let lo = e["credible95"][0].as_f64().expect("an interval");
        let hi = e["credible95"][1].as_f64().expect("an interval");
        if lo <= truth && truth <= hi {
            held += 1;
        }
    }
    let z = 4.7534;
    let upper = wilson_upper(held, n, z);
    let lower = 1.0 - wilson_upper(n - held, n, z);
    assert!(
        lower <= 0.95 && 0.95 <= upper,
        "held {held} of {n}: [{lower:.4}, {upper:.4}] does not hold 0.95"
    );
}

/// Only releases of the same measure are evidence: a mean's sum is evidence about sums of its
/// column and bounds, its count of rows with a value about nothing a count estimates, and a
/// sum with other bounds about nothing.
#[test]
fn only_sums_of_the_same_column_and_bounds_are_evidence() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = table(dir.path(), "199");
    let mut session = Session::new(Randomness::Os);
    let out = run_json(
        &mut session,
        &format!(
            "LOAD '{}' AS t NEIGHBOURS add_remove; CUBE BY g ('a', 'b');
             MEAN v CLAMP (10, 150) WHERE g = 'a' WITH EPS 1;
             ESTIMATE SUM v CLAMP (10, 150) WHERE g = 'a';",
            data.display()
        ),
    );
    let noisy_sum = out[2]["noisy_sum"].as_f64().expect("a noisy sum");
    assert_eq!(out[3]["estimate"].as_f64(), Some(noisy_sum), "{}", out[3]);
    for (query, measure) in [
        ("COUNT WHERE g = 'a'", None),
        (
            "SUM v CLAMP (0, 150) WHERE g = 'a'",
            Some("sum of v clamped to [0, 150]"),
        ),
        (
            "SUM w CLAMP (10, 150) WHERE g = 'a'",
            Some("sum of w clamped to [10, 150]"),
        ),
    ] {
        let out = run_json(&mut session, &format!("ESTIMATE {query};"));
        let e = error(&out[0]).unwrap_or_else(|| panic!("not estimable: {}", out[0]));
        assert!(e.contains("cannot estimate"), "{e}");
        if let Some(m) = measure {
            assert!(e.contains(m), "{e}");
        }
    }
}

/// A sum released before the cube was declared charged every cell; once the cube is
/// declared, its condition (a union of cells) makes it evidence, found again from its
/// statement, as for counts; and the measure of a sum over the cube survives a reload of the
/// ledger, with its charges.
#[test]
fn a_sum_before_the_cube_and_after_a_reload_is_evidence() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = table(dir.path(), "199");
    let state = dir.path().join("state");
    let store = || dpq::privacy::Store::dir(state.clone());
    let mut first = Session::with_store(Randomness::Os, store());
    let out = run_json(
        &mut first,
        &format!(
            "LOAD '{}' AS t NEIGHBOURS add_remove; SET BUDGET 3;
             SUM v CLAMP (10, 150) WHERE g = 'a' WITH EPS 1;
             CUBE BY g ('a', 'b');
             ESTIMATE SUM v CLAMP (10, 150) WHERE g = 'a';
             SUM v CLAMP (10, 150) WHERE g = 'b' WITH EPS 1;
             SHOW BUDGET;",
            data.display()
        ),
    );
    let before = out[2]["noisy"].as_f64().expect("a noisy sum");
    let after = out[5]["noisy"].as_f64().expect("a noisy sum");
    assert_eq!(out[4]["estimate"].as_f64(), Some(before), "{}", out[4]);
    // The sum made before the cube charged every cell; the one after, cell b only.
    assert_eq!(spent(&out[6]), (2.0, vec![1.0, 2.0, 1.0, 1.0]));
    drop(first);
    let mut second = Session::with_store(Randomness::Os, store());
    let out = run_json(
        &mut second,
        &format!(
            "LOAD '{}' AS t; SHOW BUDGET; ESTIMATE SUM v CLAMP (10, 150) WHERE g = 'a' OR g = 'b';",
            data.display()
        ),
    );
    assert_eq!(spent(&out[1]), (2.0, vec![1.0, 2.0, 1.0, 1.0]));
    let total = out[2]["estimate"]
        .as_f64()
        .unwrap_or_else(|| panic!("{}", out[2]));
    assert!(
        (total - (before + after)).abs() < 1e-6 * total.abs(),
        "{}",
        out[2]
    );
}
