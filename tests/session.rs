//! A refused or failed statement changes nothing: no budget, no history row, no table, and no
//! draw from the generator (the next answer is the one it would have been).

use dpq::driver::{run_source, Emitted};
use dpq::eval::{Randomness, Session};
use dpq::output::Format;

/// Runs `source` in `session`; returns its JSON lines.
fn run(session: &mut Session, source: &str) -> Vec<String> {
    let mut out = Vec::new();
    run_source(session, "test", source, Format::Json, &mut |e| {
        out.push(match e {
            Emitted::Result(s) | Emitted::Error(s) => s,
        })
    });
    out
}

fn seeded() -> Session {
    let mut s = Session::new(Randomness::Seeded(99));
    s.set_clock(|| 0);
    run(
        &mut s,
        "LOAD 'examples/data/people.csv' AS people; SET BUDGET 0.3;",
    );
    s
}

const REFUSED: &[&str] = &[
    // Over budget.
    "COUNT WHERE age > 40 WITH EPS 0.25;",
    // Check errors.
    "COUNT WHERE agee > 40 WITH EPS 0.1;",
    "COUNT WHERE sex > 40 WITH EPS 0.1;",
    "COUNT WHERE age > 40 WITH EPS 0;",
    "COUNT WHERE age > 40 WITH EPS 0.1 PRIOR p=1;",
    "COUNT WHERE age > 40 WITH EPS 0.1 MECHANISM staircase;",
    "COUNT WHERE age > 40 WITH EPS 0.10000000000000000000000000001;",
    // Syntax errors.
    "COUNT WHERE age > 40 WITH EPS;",
    "COUNT WHERE (age > 40 WITH EPS 0.1;",
    // Failed loads and settings.
    "LOAD 'examples/data/missing.csv' AS other;",
    "LOAD 'tests/golden/data/ragged.csv' AS other;",
    "LOAD 'examples/data/people.csv' AS people;",
    "SET BUDGET 0.05;",
    "SET SEED 5;",
    "USE nothing;",
];

#[test]
fn refused_statements_change_nothing_and_draw_nothing() {
    for refused in REFUSED {
        let mut a = seeded();
        let mut b = seeded();
        run(&mut a, "COUNT WHERE age < 30 WITH EPS 0.1;");
        run(&mut b, "COUNT WHERE age < 30 WITH EPS 0.1;");
        let error = run(&mut b, refused);
        assert_eq!(error.len(), 1, "{refused}: {error:?}");
        assert!(
            error[0].contains("\"kind\":\"error\""),
            "{refused}: {error:?}"
        );
        // Same budget, same history, same tables, and the same next noise.
        let after = "SHOW BUDGET; SHOW HISTORY; SHOW TABLES; COUNT WHERE age >= 30 WITH EPS 0.2;";
        assert_eq!(run(&mut a, after), run(&mut b, after), "{refused}");
    }
}

#[test]
fn ten_queries_of_a_tenth_spend_a_budget_of_one_exactly() {
    let mut s = Session::new(Randomness::Seeded(1));
    run(&mut s, "LOAD 'examples/data/people.csv';");
    for age in 20..30 {
        let out = run(&mut s, &format!("COUNT WHERE age < {age} WITH EPS 0.1;"));
        assert!(out[0].contains("\"kind\":\"count\""), "{out:?}");
    }
    let out = run(&mut s, "COUNT WHERE age < 50 WITH EPS 0.1;");
    assert!(out[0].contains("budget exceeded"), "{out:?}");
    let budget = run(&mut s, "SHOW BUDGET;");
    assert!(budget[0].contains("\"remaining\":0.0"), "{budget:?}");
    assert!(budget[0].contains("\"spent\":1.0"), "{budget:?}");
}

#[test]
fn an_identical_query_is_answered_from_history_at_no_cost() {
    let mut s = Session::new(Randomness::Os);
    run(&mut s, "LOAD 'examples/data/people.csv';");
    let first = run(&mut s, "COUNT WHERE age <= 30 WITH EPS 0.5;");
    let again = run(
        &mut s,
        "count where (AGE <= 30) with eps 5e-1 mechanism laplace prior p=0.3;",
    );
    let noisy = |line: &str| {
        serde_json::from_str::<serde_json::Value>(line).expect("JSON")["noisy"]
            .as_f64()
            .expect("noisy")
    };
    assert_eq!(noisy(&first[0]), noisy(&again[0]));
    assert!(again[0].contains("\"from_history\":true"), "{again:?}");
    assert!(again[0].contains("\"eps_spent\":0.0"), "{again:?}");
    assert!(again[0].contains("\"budget_spent\":0.5"), "{again:?}");
}
