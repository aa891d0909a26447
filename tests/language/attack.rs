//! The attack lab (`examples/attack/attack.dpq`) teaches what it says: 24 random group counts
//! of 12 students' yes/no answers reconstruct every answer by least squares when the budget
//! lets them be nearly exact, and do not under a budget of 1. The truth comes from the data
//! file, which the test may read and the script never shows.

use dpq::eval::{Randomness, Session};
use dpq::privacy::Store;
use serde_json::Value;

use crate::common;
use common::run_json;

/// Each student's answer in `examples/attack/class.csv`: true for yes.
fn truth() -> Vec<bool> {
    std::fs::read_to_string("examples/attack/class.csv")
        .expect("the class")
        .lines()
        .skip(1)
        .map(|l| l.ends_with(",yes"))
        .collect()
}

/// The estimate and 95% interval half-width of every `ESTIMATE` of the script, in order.
fn estimates(seed: u64) -> Vec<(f64, f64)> {
    let script = std::fs::read_to_string("examples/attack/attack.dpq").expect("the script");
    let mut session = Session::with_store(Randomness::Seeded(seed), Store::memory());
    let out = run_json(&mut session, &script);
    assert!(
        out.iter().all(|o| o["kind"] != "error"),
        "the script runs: {out:?}"
    );
    out.iter()
        .filter(|o| o["kind"] == "estimate")
        .map(|o| {
            let number = |v: &Value| v.as_f64().expect("a number");
            let interval = &o["credible95"];
            (
                number(&o["estimate"]),
                (number(&interval[1]) - number(&interval[0])) / 2.0,
            )
        })
        .collect()
}

#[test]
fn the_budget_is_what_stops_the_reconstruction() {
    let truth = truth();
    assert_eq!(truth.len(), 12);
    for seed in [1, 2, 3] {
        let found = estimates(seed);
        assert_eq!(found.len(), 24, "twelve estimates under each budget");
        let (private, exposed) = found.split_at(12);
        // Under the budget of 1, no student's answer can be told: every interval is wider
        // than the gap between a no (0) and a yes (1).
        for (i, (_, half)) in private.iter().enumerate() {
            assert!(
                *half > 1.0,
                "seed {seed}: student {} has half-width {half}",
                i + 1
            );
        }
        // With the budget raised, every answer comes back, rounded to 0 or 1.
        for (i, ((estimate, half), yes)) in exposed.iter().zip(&truth).enumerate() {
            assert_eq!(
                estimate.round() == 1.0,
                *yes,
                "seed {seed}: student {} estimated {estimate}",
                i + 1
            );
            assert!(
                *half < 0.5,
                "seed {seed}: student {} half-width {half}",
                i + 1
            );
        }
    }
}
