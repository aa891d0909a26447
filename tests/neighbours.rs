//! The `replace` neighbour model end to end: what SHOW BUDGET says of the costliest pair of
//! cells, the worked example of Xiao and Xiong under `replace` against a brute force over every
//! pair, and the privacy loss of two counts over disjoint cells measured on neighbouring tables
//! that differ by one replaced row.

use dpq::driver::{run_source, Emitted};
use dpq::eval::{Randomness, Session};
use dpq::output::Format;
use serde_json::Value;

/// Runs `source` in `session`; returns its JSON results (errors included).
fn run_json(session: &mut Session, source: &str) -> Vec<Value> {
    let mut out = Vec::new();
    run_source(session, "test", source, Format::Json, &mut |e| {
        let text = match e {
            Emitted::Result(s) | Emitted::Error(s) => s,
        };
        out.push(serde_json::from_str(&text).expect("every result is one JSON object"));
    });
    out
}

/// Runs `source` in `session`; returns its results as text.
fn run_text(session: &mut Session, source: &str) -> Vec<String> {
    let mut out = Vec::new();
    run_source(session, "test", source, Format::Table, &mut |e| {
        out.push(match e {
            Emitted::Result(s) | Emitted::Error(s) => s,
        })
    });
    out
}

/// The last result of kind `kind`.
fn last<'a>(results: &'a [Value], kind: &str) -> &'a Value {
    results
        .iter()
        .rev()
        .find(|r| r["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} result in {results:?}"))
}

/// A count made before the cube was declared may have counted any cells: it charges every pair
/// in full. When it is all that was spent, the pair named is still two distinct cells, and
/// what is said of it says where the cost comes from (the audit found `[smoker = TRUE] and
/// [smoker = TRUE] cost 0.5`).
#[test]
fn spending_before_the_cube_names_two_cells_and_says_where_it_comes_from() {
    let script = "LOAD 'examples/data/people.csv' AS p; COUNT WHERE sex = 'F' WITH EPS 0.5; \
                  CUBE BY smoker (true, false); SHOW BUDGET;";
    let results = run_json(&mut Session::new(Randomness::Os), script);
    let budget = last(&results, "budget");
    assert_eq!(budget["spent"], 0.5);
    let pair = &budget["pair"];
    let cells = pair["cells"].as_array().expect("two cells");
    assert_eq!(cells.len(), 2);
    assert_ne!(cells[0], cells[1], "a pair is two cells: {pair}");
    assert_eq!(pair["cost"], 0.5);
    assert_eq!(pair["exact"], true);
    assert_eq!(pair["before_cube"], 0.5, "{pair}");

    let text = run_text(&mut Session::new(Randomness::Os), script).join("\n");
    assert!(
        !text.contains("[smoker = TRUE] and [smoker = TRUE]"),
        "one cell named twice:\n{text}"
    );
    assert!(
        text.contains("answers released before the cube"),
        "the cost's origin is not said:\n{text}"
    );

    // Spending over the cube and before it: both parts are said, and add up.
    let script = "LOAD 'examples/data/people.csv' AS p; COUNT WHERE sex = 'F' WITH EPS 0.5; \
                  CUBE BY smoker (true, false); COUNT WHERE smoker = true WITH EPS 0.1; \
                  SHOW BUDGET;";
    let results = run_json(&mut Session::new(Randomness::Os), script);
    let pair = &last(&results, "budget")["pair"];
    assert_eq!(pair["cost"], 0.6);
    assert_eq!(pair["before_cube"], 0.5);
    let cells = pair["cells"].as_array().expect("two cells");
    assert!(cells.contains(&Value::from("[smoker = TRUE]")), "{pair}");
}
