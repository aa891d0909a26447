//! The ledger's record of Gaussian sums and means (`SUM ... WITH RHO r`): each spending line
//! carries the variance `sigma^2 = S^2 / (2 rho)` its noise was drawn with, `S` the sum's
//! sensitivity from its bounds under the table's neighbour model, and a line whose variance is
//! not the one its rho and bounds give is refused on reading, as for counts.

use dpq::eval::{Randomness, Session};
use dpq::privacy::Store;
use serde_json::Value;
use std::path::{Path, PathBuf};

use crate::common;
use common::{rewrite_ledger, run_json};

/// A CSV of one number column `x` holding 1 to 200, in `dir`.
fn numbers(dir: &Path) -> String {
    let mut text = String::from("x\n");
    for v in 1..=200 {
        text.push_str(&format!("{v}\n"));
    }
    common::write(dir, "x.csv", &text)
        .to_string_lossy()
        .into_owned()
}

/// The one ledger file under `state`.
fn ledger_file(state: &Path) -> PathBuf {
    let ledgers: Vec<_> = std::fs::read_dir(state.join("ledgers"))
        .expect("the ledgers")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "ledger"))
        .collect();
    assert_eq!(ledgers.len(), 1, "{ledgers:?}");
    ledgers[0].clone()
}

/// The `sigma2` of every spending line, in order.
fn variances(ledger: &Path) -> Vec<Value> {
    std::fs::read_to_string(ledger)
        .expect("the ledger")
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a line"))
        .filter(|v| v["type"] == "spend")
        .map(|v| v["sigma2"].clone())
        .collect()
}

/// Releases a Gaussian sum and mean under `model`, and returns the state directory, the
/// data file and the ledger.
fn released(dir: &Path, model: &str) -> (PathBuf, String, PathBuf) {
    let data = numbers(dir);
    let state = dir.join("state");
    let mut s = Session::with_store(Randomness::Os, Store::dir(state.clone()));
    let out = run_json(
        &mut s,
        &format!(
            "LOAD '{data}' AS t NEIGHBOURS {model}; SET BUDGET RHO 1;
             SUM x CLAMP (-5, 10) WITH RHO 0.1; MEAN x CLAMP (-5, 10) WITH RHO 0.2;"
        ),
    );
    assert!(out.iter().all(|r| r["kind"] != "error"), "{out:?}");
    let ledger = ledger_file(&state);
    (state, data, ledger)
}

/// What a fresh session reads of the ledger: the budget, or the error.
fn read_back(state: &Path, data: &str, model: &str) -> Value {
    let mut s = Session::with_store(Randomness::Os, Store::dir(state.to_path_buf()));
    let out = run_json(
        &mut s,
        &format!("LOAD '{data}' AS t NEIGHBOURS {model}; SHOW BUDGET;"),
    );
    out.last().expect("a result").clone()
}

/// Under each model the ledger records `S^2 / (2 rho)` with `S` the bounds' sensitivity
/// (`replace`: `max(hi, 0) - min(lo, 0)` = 15; `add_remove`: `max(|lo|, |hi|)` = 10), a
/// mean's sum and count at half the rho each (the count's `S` = 1), and a fresh session
/// reads it back with rho 0.3 spent.
#[test]
fn a_gaussian_sum_line_records_its_variance_and_reads_back() {
    for (model, s2) in [("replace", 225), ("add_remove", 100)] {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (state, data, ledger) = released(dir.path(), model);
        // S^2 / 0.2 for the sum at 0.1; S^2 / 0.2 and 1 / 0.2 for the mean's parts at 0.1.
        let want = [s2 * 5, s2 * 5, 5].map(|v| Value::from(v.to_string()));
        assert_eq!(variances(&ledger), want, "{model}");
        let budget = read_back(&state, &data, model);
        assert_eq!(budget["kind"], "budget", "{budget}");
        let spent = budget["spent"].as_f64().expect("spent");
        assert!((spent - 0.3).abs() < 1e-12, "{model}: {budget}");
    }
}

/// A spending line of a Gaussian sum whose variance was rewritten (with its chain made good
/// again), or removed, says the answer had other noise than it was charged for: the ledger is
/// refused as damaged, never read.
#[test]
fn a_gaussian_sum_line_with_another_variance_is_refused() {
    for (sigma2, what) in [(Some("1"), "a smaller variance"), (None, "no variance")] {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (state, data, ledger) = released(dir.path(), "replace");
        let mut first = true;
        rewrite_ledger(&ledger, |v| {
            if v["type"] == "spend" && first {
                first = false;
                match sigma2 {
                    Some(s) => v.insert("sigma2".into(), Value::from(s)),
                    None => v.remove("sigma2"),
                };
            }
        });
        let out = read_back(&state, &data, "replace");
        assert_eq!(out["kind"], "error", "{what}: {out}");
        let message = out["message"].as_str().unwrap_or_default();
        assert!(message.contains("noise"), "{what}: {message}");
    }
}
