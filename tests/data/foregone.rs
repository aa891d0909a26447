//! Conditions the schema alone judges: a condition no row can meet is refused before anything
//! is spent, and a condition every value meets is answered with a note. The judgement must be
//! sound (never refuse a condition some row could meet) and complete where it claims to be.
//!
//! The test table holds one row of every combination of an integer column `x` (every whole
//! number from -3 to 8, and missing), a text column `s` ('a', 'c', 'd', 'zz', missing) and a
//! boolean column `b` (true, false, missing). Conditions are drawn at random with constants
//! from -2 to 7 (whole and half numbers) and the text values 'a', 'c', 'd': every class of
//! values the conditions can tell apart has a row, so a condition has a true count of 0 on
//! this table exactly when no table of the schema has a row meeting it. The counts are
//! released at epsilon 10^5 (noise of scale 10^-5), so rounding recovers them exactly.

use dpq::eval::{Randomness, Session};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::fmt::Write as _;

fn table() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("a directory");
    let mut csv = String::from("x,s,b\n");
    let xs: Vec<String> = (-3..=8)
        .map(|x: i32| x.to_string())
        .chain([String::new()])
        .collect();
    for x in &xs {
        for s in ["a", "c", "d", "zz", ""] {
            for b in ["true", "false", ""] {
                let _ = writeln!(csv, "{x},{s},{b}");
            }
        }
    }
    let path = dir.path().join("t.csv");
    std::fs::write(&path, csv).expect("written");
    let path = path.to_string_lossy().into_owned();
    (dir, path)
}

use crate::common;
use common::run_json as results;

/// A random condition over `x`, `s` and `b` of at most `depth` levels.
fn condition(rng: &mut ChaCha8Rng, depth: u32) -> String {
    let number = |rng: &mut ChaCha8Rng| {
        let k = rng.random_range(-4..=14);
        if k % 2 == 0 {
            (k / 2).to_string()
        } else {
            format!("{}", f64::from(k) / 2.0)
        }
    };
    let text = |rng: &mut ChaCha8Rng| ["'a'", "'c'", "'d'"][rng.random_range(0..3)].to_string();
    let op = |rng: &mut ChaCha8Rng| ["=", "!=", "<", "<=", ">", ">="][rng.random_range(0..6)];
    if depth > 0 && rng.random_bool(0.6) {
        let a = condition(rng, depth - 1);
        let b = condition(rng, depth - 1);
        return match rng.random_range(0..3) {
            0 => format!("({a} AND {b})"),
            1 => format!("({a} OR {b})"),
            _ => format!("NOT ({a})"),
        };
    }
    match rng.random_range(0..7) {
        0 => format!("x {} {}", op(rng), number(rng)),
        1 => format!("x BETWEEN {} AND {}", number(rng), number(rng)),
        2 => format!("x IN ({}, {})", number(rng), number(rng)),
        3 => format!("s {} {}", ["=", "!="][rng.random_range(0..2)], text(rng)),
        4 => format!("s IN ({}, {})", text(rng), text(rng)),
        5 => format!("{} {} x", number(rng), op(rng)),
        _ => format!("b = {}", ["TRUE", "FALSE"][rng.random_range(0..2)]),
    }
}

#[test]
fn a_condition_is_refused_exactly_when_no_row_of_any_table_can_meet_it() {
    let (_dir, path) = table();
    let mut session = Session::new(Randomness::Seeded(3));
    let loaded = results(
        &mut session,
        &format!("LOAD '{path}' AS t; SET BUDGET 100000000000;"),
    );
    assert_eq!(loaded.len(), 2, "{loaded:?}");
    let mut rng = ChaCha8Rng::seed_from_u64(25);
    let (mut refused, mut noted, mut answered) = (0, 0, 0);
    for _ in 0..400 {
        let c = condition(&mut rng, 3);
        let out = results(&mut session, &format!("COUNT WHERE {c} WITH EPS 100000;"));
        let r = &out[0];
        if r["kind"] == "error" {
            let message = r["message"].as_str().unwrap_or_default();
            assert!(message.starts_with("no row can meet"), "{c}: {message}");
            // Refused: it spent nothing, and indeed no row meets it.
            refused += 1;
            let truth = results(
                &mut session,
                &format!("COUNT WHERE ({c}) OR x = 100 WITH EPS 100000;"),
            );
            assert_eq!(truth[0]["noisy"].as_f64().map(f64::round), Some(0.0), "{c}");
            continue;
        }
        let count = r["noisy"].as_f64().expect("a count").round();
        assert!(count > 0.0, "{c}: no row meets it, yet it was not refused");
        let warnings = r["warnings"].as_array().expect("warnings");
        if !warnings.is_empty() {
            noted += 1;
            assert!(
                warnings[0]
                    .as_str()
                    .unwrap_or_default()
                    .starts_with("every "),
                "{c}: {warnings:?}"
            );
            // Every row whose named columns all have a value meets it: with one column named,
            // those rows exactly.
            let named: Vec<&str> = ["x", "s", "b"]
                .into_iter()
                .filter(|col| c.contains(col))
                .collect();
            let present = named
                .iter()
                .map(|col| match *col {
                    "x" => 12.0,
                    "s" => 4.0,
                    _ => 2.0,
                })
                .product::<f64>()
                * named
                    .iter()
                    .map(|col| match *col {
                        "x" => 1.0 / 13.0,
                        "s" => 1.0 / 5.0,
                        _ => 1.0 / 3.0,
                    })
                    .product::<f64>()
                * 195.0;
            if named.len() == 1 {
                assert_eq!(count, present.round(), "{c}");
            } else {
                assert!(count >= present.round(), "{c}: {count} < {present}");
            }
        } else {
            answered += 1;
        }
    }
    // The draw reaches every outcome.
    assert!(
        refused >= 10 && noted >= 5 && answered >= 100,
        "{refused} {noted} {answered}"
    );
    let spent = results(&mut session, "SHOW BUDGET;");
    let spent = spent[0]["spent"].as_f64().unwrap_or(-1.0);
    // Each answered or noted condition spent 10^5 once (repeats are free); refusals nothing.
    assert!(spent <= f64::from(noted + answered) * 100000.0 + 1e-6 * spent);
}

#[test]
fn a_refused_condition_changes_nothing() {
    let (_dir, path) = table();
    let state = tempfile::tempdir().expect("a state directory");
    let store = dpq::privacy::Store::dir(state.path());
    let mut session = Session::with_store(Randomness::Os, store);
    results(&mut session, &format!("LOAD '{path}' AS t;"));
    for c in [
        "x BETWEEN 5 AND 2",
        "x = 2.5",
        "x < 3 AND x > 5",
        "NOT (x < 3 OR x >= 3) AND x = 1",
        "s = 'a' AND s = 'b'",
        "b = TRUE AND NOT b = TRUE",
    ] {
        let out = results(&mut session, &format!("COUNT WHERE {c} WITH EPS 0.1;"));
        assert_eq!(out[0]["kind"], "error", "{c}");
        for sum in [
            format!("SUM x CLAMP (0, 10) WHERE {c} WITH EPS 0.1;"),
            format!("MEAN x CLAMP (0, 10) WHERE {c} WITH EPS 0.1;"),
            format!("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1) COUNT(*) FROM t WHERE {c};"),
        ] {
            let out = results(&mut session, &sum);
            assert_eq!(out[0]["kind"], "error", "{sum}");
        }
    }
    let budget = results(&mut session, "SHOW BUDGET; SHOW HISTORY;");
    assert_eq!(budget[0]["spent"].as_f64(), Some(0.0), "{budget:?}");
    assert_eq!(budget[0]["spending"].as_array().map(Vec::len), Some(0));
    // A new session over the same state directory sees nothing recorded.
    let store = dpq::privacy::Store::dir(state.path());
    let mut again = Session::with_store(Randomness::Os, store);
    let after = results(&mut again, &format!("LOAD '{path}' AS t; SHOW HISTORY;"));
    let history = after[1].to_string();
    assert!(!history.contains("COUNT"), "{history}");
}
