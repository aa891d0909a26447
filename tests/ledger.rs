//! The persistent ledger: spending survives restarts and kill -9, damage is refused, two
//! processes cannot both spend the last of a budget, and a changed data file is reported.

use dpq::driver::{run_source, Emitted};
use dpq::eval::{Randomness, Session};
use dpq::ledger::{ledger_path, Store};
use dpq::output::Format;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Runs `source` in a fresh session on `state`; returns the JSON objects it printed.
fn run(state: &Path, source: &str) -> Vec<Value> {
    let mut session = Session::with_store(Randomness::Os, Store::Dir(state.to_path_buf()));
    let mut out = Vec::new();
    run_source(&mut session, "test", source, Format::Json, &mut |e| {
        let (Emitted::Result(s) | Emitted::Error(s)) = e;
        out.push(serde_json::from_str(&s).expect("one JSON object"));
    });
    out
}

/// A private copy of the example data, so tests can change it and its ledger is theirs.
fn data_copy(dir: &Path) -> PathBuf {
    let path = dir.join("people.csv");
    std::fs::copy("examples/data/people.csv", &path).expect("copy the example data");
    path
}

fn ledger_of(state: &Path, data: &Path) -> PathBuf {
    ledger_path(
        state,
        &std::fs::canonicalize(data).expect("the data file exists"),
    )
}

fn load(data: &Path) -> String {
    format!("LOAD '{}' AS people;", data.display())
}

#[test]
fn spending_and_answers_outlive_the_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    let first = run(
        &state,
        &format!("{} COUNT WHERE age < 30 WITH EPS 0.3;", load(&data)),
    );
    let noisy = first[1]["noisy"].as_f64().expect("a noisy answer");
    let again = run(
        &state,
        &format!(
            "{} SHOW BUDGET; COUNT WHERE age < 30 WITH EPS 0.3; COUNT WHERE age < 40 WITH EPS 0.3;",
            load(&data)
        ),
    );
    assert_eq!(
        again[0]["budget_spent"], 0.3,
        "restored at load: {}",
        again[0]
    );
    assert_eq!(again[1]["spent"], 0.3);
    assert_eq!(
        again[1]["ledger"].as_str().map(PathBuf::from),
        Some(ledger_of(&state, &data))
    );
    // Identical query after a restart: the recorded answer, exactly, at no cost.
    assert_eq!(again[2]["noisy"].as_f64(), Some(noisy));
    assert_eq!(again[2]["from_history"], true);
    assert_eq!(again[3]["budget_spent"], 0.6);
}

#[test]
fn ten_spends_of_a_tenth_across_ten_processes_fit_exactly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    for age in 20..30 {
        let out = run(
            &state,
            &format!("{} COUNT WHERE age < {age} WITH EPS 0.1;", load(&data)),
        );
        assert_eq!(out[1]["kind"], "count", "{}", out[1]);
    }
    let out = run(
        &state,
        &format!("{} COUNT WHERE age < 50 WITH EPS 0.1;", load(&data)),
    );
    assert_eq!(out[1]["kind"], "error");
    assert!(out[1]["message"]
        .as_str()
        .expect("message")
        .contains("budget exceeded"));
}

#[test]
fn a_damaged_or_truncated_ledger_is_refused_not_reset() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    run(
        &state,
        &format!("{} COUNT WHERE age < 30 WITH EPS 0.5;", load(&data)),
    );
    let ledger = ledger_of(&state, &data);
    let good = std::fs::read_to_string(&ledger).expect("the ledger exists");
    let damages: Vec<(&str, String)> = vec![
        // Someone lowers the epsilon spent.
        (
            "edited",
            good.replacen("\"eps\":\"0.5\"", "\"eps\":\"0.1\"", 1),
        ),
        // A line removed.
        ("a line removed", {
            let lines: Vec<&str> = good.lines().collect();
            lines[..2].join("\n") + "\n" + &lines[3..].join("\n") + "\n"
        }),
        // Cut in the middle of the last line.
        ("torn", good[..good.len() - 10].to_string()),
        // Emptied of its spending but keeping its header.
        (
            "truncated",
            good.lines().next().unwrap_or("").to_string() + "\n" + "x\n",
        ),
        ("garbage", "not a ledger\n".to_string()),
    ];
    for (what, text) in damages {
        assert_ne!(text, good, "{what}");
        std::fs::write(&ledger, &text).expect("damage the ledger");
        let out = run(
            &state,
            &format!("{} COUNT WHERE age < 40 WITH EPS 0.1;", load(&data)),
        );
        assert_eq!(out.len(), 1, "{what}: nothing after the refused LOAD runs");
        assert_eq!(out[0]["kind"], "error", "{what}");
        let message = out[0]["message"].as_str().expect("message");
        assert!(message.contains("is damaged"), "{what}: {message}");
        // Refused, and left as it was found: never reset.
        assert_eq!(
            std::fs::read_to_string(&ledger).expect("read"),
            text,
            "{what}"
        );
    }
}

#[test]
fn a_changed_data_file_is_reported_and_its_spending_still_counts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    let first = run(
        &state,
        &format!("{} COUNT WHERE age < 30 WITH EPS 0.2;", load(&data)),
    );
    assert_eq!(first[0]["data_changed"], false);
    let mut text = std::fs::read_to_string(&data).expect("read");
    text.push_str("10001,40,F,50000,North,master,true,170.0,false\n");
    std::fs::write(&data, text).expect("change the data");
    let out = run(
        &state,
        &format!("{} COUNT WHERE age < 30 WITH EPS 0.2;", load(&data)),
    );
    assert_eq!(out[0]["data_changed"], true);
    assert_eq!(out[0]["budget_spent"], 0.2);
    // The old answer was for other data: a fresh one is drawn and paid for.
    assert_eq!(out[1]["from_history"], false);
    assert_eq!(out[1]["budget_spent"], 0.4);
}

/// The `dpq` binary on `state`.
fn dpq(state: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_dpq"));
    c.env("DPQ_STATE_DIR", state);
    c
}

#[test]
fn two_processes_cannot_both_spend_the_last_of_a_budget() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    for round in 0..10u32 {
        // Exactly one more query of eps 0.5 fits: spent is 0.5 * round.
        let total = 0.5 * f64::from(round + 1);
        let out = run(&state, &format!("{} SET BUDGET {total};", load(&data)));
        assert_eq!(out[1]["kind"], "budget", "{}", out[1]);
        // Two processes race for it, with different queries.
        let children: Vec<_> = (0..2)
            .map(|i| {
                dpq(&state)
                    .args(["--format", "json", "-c"])
                    .arg(format!(
                        "{} COUNT WHERE age < {} WITH EPS 0.5;",
                        load(&data),
                        30 + 2 * round + i
                    ))
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("spawn dpq")
            })
            .collect();
        let outputs: Vec<String> = children
            .into_iter()
            .map(|c| {
                let o = c.wait_with_output().expect("dpq ends");
                String::from_utf8_lossy(&o.stdout).into_owned()
            })
            .collect();
        let answered = outputs
            .iter()
            .filter(|o| o.contains("\"kind\":\"count\""))
            .count();
        let refused = outputs
            .iter()
            .filter(|o| o.contains("budget exceeded"))
            .count();
        assert_eq!((answered, refused), (1, 1), "round {round}: {outputs:?}");
    }
}

#[test]
fn kill_9_never_leaves_spending_below_what_was_shown() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    let mut script = format!("{} SET BUDGET 1000;\n", load(&data));
    for age in 0..2000 {
        script.push_str(&format!(
            "COUNT WHERE age < {age} OR income > {age} WITH EPS 0.01;\n"
        ));
    }
    let script_path = dir.path().join("many.dpq");
    std::fs::write(&script_path, script).expect("write the script");
    let mut expected_spent = 0.0;
    for (round, stop_after) in [3usize, 40, 150].into_iter().enumerate() {
        let mut child = dpq(&state)
            .args(["--format", "json", "run"])
            .arg(&script_path)
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn dpq");
        let stdout = child.stdout.take().expect("stdout");
        let mut fresh_answers = 0usize;
        for line in BufReader::new(stdout).lines() {
            let line = line.expect("a line");
            if line.contains("\"kind\":\"count\"") && line.contains("\"from_history\":false") {
                fresh_answers += 1;
                if fresh_answers == stop_after {
                    child.kill().expect("kill -9");
                    break;
                }
            }
        }
        let _ = child.wait();
        expected_spent += fresh_answers as f64 * 0.01;
        // Every answer shown was recorded first: a fresh process sees at least that much spent.
        let out = run(&state, &format!("{} SHOW BUDGET;", load(&data)));
        let spent = out[1]["spent"].as_f64().expect("spent");
        assert!(
            spent + 1e-9 >= expected_spent,
            "round {round}: {spent} spent < {expected_spent} shown"
        );
        expected_spent = spent;
    }
}

#[test]
fn lines_removed_under_a_running_session_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    let mut session = Session::with_store(Randomness::Os, Store::Dir(state.clone()));
    let mut out = Vec::new();
    let mut run_here = |source: &str, out: &mut Vec<String>| {
        run_source(&mut session, "test", source, Format::Json, &mut |e| {
            let (Emitted::Result(s) | Emitted::Error(s)) = e;
            out.push(s);
        })
    };
    assert!(run_here(
        &format!(
            "{} COUNT WHERE age < 30 WITH EPS 0.5; COUNT WHERE age < 40 WITH EPS 0.5;",
            load(&data)
        ),
        &mut out
    ));
    // The last spend and its answer disappear from the file (a restored backup, say).
    let ledger = ledger_of(&state, &data);
    let text = std::fs::read_to_string(&ledger).expect("read");
    let lines: Vec<&str> = text.lines().collect();
    std::fs::write(&ledger, lines[..lines.len() - 2].join("\n") + "\n").expect("truncate");
    out.clear();
    assert!(!run_here("COUNT WHERE age < 50 WITH EPS 0.5;", &mut out));
    assert!(
        out[0].contains("lines read earlier in this session are gone"),
        "{out:?}"
    );
    // Deleted altogether: refused too, never started afresh.
    std::fs::remove_file(&ledger).expect("delete");
    out.clear();
    assert!(!run_here("SHOW BUDGET;", &mut out));
    assert!(out[0].contains("is damaged"), "{out:?}");
}

#[test]
fn a_renamed_data_file_keeps_its_ledger() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    run(
        &state,
        &format!("{} COUNT WHERE age < 30 WITH EPS 0.7;", load(&data)),
    );
    let renamed = dir.path().join("renamed.csv");
    std::fs::rename(&data, &renamed).expect("rename");
    let out = run(
        &state,
        &format!("{} COUNT WHERE age < 40 WITH EPS 0.7;", load(&renamed)),
    );
    assert_eq!(out[0]["budget_spent"], 0.7, "{}", out[0]);
    assert!(
        out[1]["message"]
            .as_str()
            .is_some_and(|m| m.contains("budget exceeded")),
        "{}",
        out[1]
    );
}

#[test]
fn a_statement_too_long_to_record_is_refused_before_anything_is_spent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    let long = "x".repeat(dpq::ledger::MAX_LINE + 10);
    let out = run(
        &state,
        &format!(
            "{} COUNT WHERE sex = '{long}' WITH EPS 0.1; SHOW BUDGET;",
            load(&data)
        ),
    );
    assert!(
        out[1]["message"]
            .as_str()
            .is_some_and(|m| m.contains("too long to record")),
        "{}",
        out[1]
    );
    let out = run(&state, &format!("{} SHOW BUDGET;", load(&data)));
    assert_eq!(out[1]["spent"], 0.0, "{}", out[1]);
}

/// The noisy answer of `query` in a fresh state directory, seeded.
fn seeded_answer(data: &Path, state: &Path, seed: &str, query: &str) -> f64 {
    let o = dpq(state)
        .args(["--seed", seed, "--format", "json", "-c"])
        .arg(format!("{} {query}", load(data)))
        .output()
        .expect("dpq runs");
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let line = text.lines().nth(1).expect("a count line");
    serde_json::from_str::<Value>(line).expect("JSON")["noisy"]
        .as_f64()
        .expect("noisy")
}

#[test]
fn seeded_runs_never_share_noise_between_different_queries() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    // Two queries whose true counts are public (id runs from 1 to 10,000), each in a fresh
    // state directory with the same seed: if they shared noise, the difference of the answers
    // would be the difference of the true counts.
    let a = seeded_answer(
        &data,
        &dir.path().join("s1"),
        "7",
        "COUNT WHERE id >= 1 WITH EPS 0.01;",
    );
    let b = seeded_answer(
        &data,
        &dir.path().join("s2"),
        "7",
        "COUNT WHERE id >= 5001 WITH EPS 0.01;",
    );
    assert_ne!(a - 10_000.0, b - 5_000.0);
    // Reproducible: the same query, seed and data give the same answer.
    let again = seeded_answer(
        &data,
        &dir.path().join("s3"),
        "7",
        "COUNT WHERE id >= 1 WITH EPS 0.01;",
    );
    assert_eq!(a, again);
}

#[test]
fn a_seeded_answer_is_never_reused_as_a_private_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    let seeded = seeded_answer(&data, &state, "7", "COUNT WHERE age < 30 WITH EPS 0.1;");
    let out = run(
        &state,
        &format!("{} COUNT WHERE age < 30 WITH EPS 0.1;", load(&data)),
    );
    assert_eq!(out[1]["from_history"], false, "{}", out[1]);
    assert_ne!(out[1]["noisy"].as_f64(), Some(seeded));
    assert_eq!(out[1]["private"], true);
}

#[test]
fn a_cube_and_its_cells_spending_outlive_the_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    let first = run(
        &state,
        &format!(
            "{} CUBE BY age (30); COUNT WHERE age < 30 WITH EPS 0.6;",
            load(&data)
        ),
    );
    assert_eq!(first[2]["budget_spent"], 0.6, "{}", first[2]);
    let ledger = ledger_of(&state, &data);
    let again = run(
        &state,
        &format!(
            "{} SHOW BUDGET; COUNT WHERE age >= 30 WITH EPS 0.6; ESTIMATE COUNT WHERE age < 30 OR age >= 30;",
            load(&data)
        ),
    );
    let cells: Vec<f64> = again[1]["cells"]
        .as_array()
        .expect("cells restored with the cube")
        .iter()
        .map(|c| c["spent"].as_f64().expect("spent"))
        .collect();
    assert_eq!(cells, vec![0.6, 0.0, 0.0]);
    // Disjoint cells compose in parallel: 0.6 + 0.6 over disjoint cells costs 0.6.
    assert_eq!(again[2]["budget_spent"], 0.6, "{}", again[2]);
    assert_eq!(again[3]["kind"], "estimate", "{}", again[3]);
    // Past a cell's budget, or another cube: refused, and the ledger is untouched.
    let before = std::fs::read(&ledger).expect("the ledger");
    let refused = run(
        &state,
        &format!(
            "{} COUNT WHERE age < 30 WITH EPS 0.5; CUBE BY age (40);",
            load(&data)
        ),
    );
    assert_eq!(refused[1]["kind"], "error", "{}", refused[1]);
    assert!(
        refused[1]["message"]
            .as_str()
            .is_some_and(|m| m.contains("age < 30")),
        "{}",
        refused[1]
    );
    let fixed = run(&state, &format!("{} CUBE BY age (40);", load(&data)));
    assert_eq!(fixed[1]["kind"], "error", "{}", fixed[1]);
    assert_eq!(std::fs::read(&ledger).expect("the ledger"), before);
}
