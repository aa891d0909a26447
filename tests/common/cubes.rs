//! Helpers of the tests of cubes over the bundled people: a fresh session on a state
//! directory, a LOAD under a neighbour model, and a cube report's budgets.

use dpq::eval::{Randomness, Session};
use dpq::privacy::Store;
use serde_json::Value;
use std::path::Path;

/// Runs `source` in a fresh session on `state`; returns the JSON objects it printed.
pub fn run(state: &Path, source: &str) -> Vec<Value> {
    let mut session = Session::with_store(Randomness::Os, Store::dir(state.to_path_buf()));
    super::run_json(&mut session, source)
}

/// The bundled people, as table `people`.
pub const LOAD: &str = "LOAD 'examples/data/people.csv' AS people";

/// [`LOAD`] under a neighbour model.
pub fn load(neighbours: &str) -> String {
    format!("{LOAD} NEIGHBOURS {neighbours};")
}

/// Fails on any error among `out`.
pub fn no_errors(out: &[Value]) {
    for v in out {
        assert_ne!(v["kind"], "error", "an error: {v}");
    }
}

/// The cube report's cell budgets and spending.
pub fn budgets(cube: &Value) -> (Vec<f64>, f64) {
    assert_eq!(cube["kind"], "cube", "{cube}");
    let cells = cube["cell_budgets"]
        .as_array()
        .expect("cell budgets")
        .iter()
        .map(|b| b.as_f64().expect("a number"))
        .collect();
    (cells, cube["spent"].as_f64().expect("spent"))
}

/// Two spendings equal but for the last bits of their binary forms.
pub fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9
}
