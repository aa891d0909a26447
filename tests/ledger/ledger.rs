//! The persistent ledger: spending survives restarts and kill -9, damage is refused, two
//! processes cannot both spend the last of a budget, and a changed data file is reported.

use dpq::driver::{run_source, Emitted};
use dpq::eval::{Randomness, Session};
use dpq::output::Format;
use dpq::privacy::Store;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Runs `source` in a fresh session on `state`; returns the JSON objects it printed.
fn run(state: &Path, source: &str) -> Vec<Value> {
    let mut session = Session::with_store(Randomness::Os, Store::dir(state.to_path_buf()));
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

/// The ledger of `data` in `state`, as `SHOW BUDGET` names it.
fn ledger_of(state: &Path, data: &Path) -> PathBuf {
    let out = run(state, &format!("{} SHOW BUDGET;", load(data)));
    PathBuf::from(out[1]["ledger"].as_str().expect("a ledger path"))
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
        &format!("{} COUNT WHERE age < 30 WITH EPS 0.2;", load(&data)),
    );
    let ledger = ledger_of(&state, &data);
    let older = std::fs::read_to_string(&ledger).expect("the ledger exists");
    run(
        &state,
        &format!("{} COUNT WHERE age < 35 WITH EPS 0.3;", load(&data)),
    );
    let good = std::fs::read_to_string(&ledger).expect("the ledger exists");
    // Another data file's ledger, whole and well chained.
    let other = dir.path().join("other.csv");
    std::fs::write(&other, "x\n1\n2\n").expect("write");
    run(
        &state,
        &format!(
            "LOAD '{}'; COUNT WHERE x < 2 WITH EPS 0.1;",
            other.display()
        ),
    );
    let foreign = std::fs::read_to_string(ledger_of(&state, &other)).expect("read");
    let damages: Vec<(&str, String, &str)> = vec![
        // Someone lowers an epsilon spent.
        (
            "edited",
            good.replacen("\"eps\":\"0.3\"", "\"eps\":\"0.1\"", 1),
            "the checksum does not match",
        ),
        // A line removed.
        (
            "a line removed",
            {
                let lines: Vec<&str> = good.lines().collect();
                lines[..2].join("\n") + "\n" + &lines[3..].join("\n") + "\n"
            },
            "the checksum does not match",
        ),
        // Emptied of its spending but keeping its header: cut at a line boundary.
        (
            "truncated at a line",
            good.lines().next().unwrap_or("").to_string() + "\n",
            "shorter than it was",
        ),
        ("emptied", String::new(), "is empty"),
        // Restored from a backup taken before the last query.
        ("an older copy", older.clone(), "shorter than it was"),
        // Another file's ledger copied over this one.
        ("another ledger", foreign, "belongs to other data"),
        ("garbage", "not a ledger\n".to_string(), "no checksum"),
    ];
    for (what, text, why) in damages {
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
        assert!(message.contains(why), "{what}: {message}");
        assert!(
            out[0]["help"]
                .as_str()
                .is_some_and(|h| h.contains("backup")),
            "{what}: {}",
            out[0]
        );
        // Refused, and left as it was found: never reset.
        assert_eq!(
            std::fs::read_to_string(&ledger).expect("read"),
            text,
            "{what}"
        );
    }
    // Put back, the ledger is good again: nothing was lost.
    std::fs::write(&ledger, &good).expect("restore");
    let out = run(&state, &format!("{} SHOW BUDGET;", load(&data)));
    assert_eq!(out[1]["spent"], 0.5, "{}", out[1]);
}

/// A last line without its line feed is a write that never finished: nothing was drawn or
/// shown after it, so it is dropped (with a warning) and the ledger goes on.
#[test]
fn a_torn_last_line_is_dropped_with_a_warning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    run(
        &state,
        &format!("{} COUNT WHERE age < 30 WITH EPS 0.2;", load(&data)),
    );
    let ledger = ledger_of(&state, &data);
    let good = std::fs::read_to_string(&ledger).expect("the ledger exists");
    // A spending line whose write never finished (the process died, or the disk filled).
    let torn = format!("{good}{{\"type\":\"spend\",\"seq\":2,\"statement\":\"COUNT WHERE");
    std::fs::write(&ledger, torn).expect("tear a last line");
    let out = run(
        &state,
        &format!(
            "{} SHOW BUDGET; COUNT WHERE age < 30 WITH EPS 0.2; COUNT WHERE age < 31 WITH EPS 0.2;",
            load(&data)
        ),
    );
    let warnings = out[0]["warnings"].as_array().expect("warnings");
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().is_some_and(|w| w.contains("incomplete"))),
        "{}",
        out[0]
    );
    assert_eq!(
        out[1]["spent"], 0.2,
        "the spending before the tear counts, the torn one not"
    );
    assert_eq!(out[2]["from_history"], true, "{}", out[2]);
    assert_eq!(out[3]["budget_spent"], 0.4, "{}", out[3]);
    assert_eq!(
        std::fs::read_to_string(&ledger)
            .map(|t| t.ends_with('\n'))
            .ok(),
        Some(true)
    );
    // And the ledger reads whole again, with nothing more to drop.
    let again = run(&state, &format!("{} SHOW BUDGET;", load(&data)));
    assert_eq!(again[0]["warnings"].as_array().map(Vec::len), Some(0));
    assert_eq!(again[1]["spent"], 0.4);
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
    let mut session = Session::with_store(Randomness::Os, Store::dir(state.clone()));
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
    // Deleted altogether: refused too, never started afresh, in this session or the next.
    std::fs::remove_file(&ledger).expect("delete");
    out.clear();
    assert!(!run_here("SHOW BUDGET;", &mut out));
    assert!(out[0].contains("is missing"), "{out:?}");
    let next = run(&state, &format!("{} SHOW BUDGET;", load(&data)));
    assert_eq!(next[0]["kind"], "error", "{}", next[0]);
    assert!(
        next[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("is missing")),
        "{}",
        next[0]
    );
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
    let long = "x".repeat(dpq::privacy::MAX_LINE + 10);
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

/// A seeded answer is as good as the true count to whoever knows the seed: it is never
/// recorded beside the data, and the data's private budget is used up for good.
#[test]
fn a_seeded_release_exposes_the_data_and_is_not_recorded_in_its_ledger() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    let seeded = seeded_answer(&data, &state, "7", "COUNT WHERE age < 30 WITH EPS 0.1;");
    let ledger = std::fs::read_to_string(ledger_of(&state, &data)).expect("the ledger");
    assert!(ledger.contains("\"type\":\"exposed\""), "{ledger}");
    assert!(!ledger.contains("\"type\":\"spend\""), "{ledger}");
    assert!(!ledger.contains(&seeded.to_string()), "{ledger}");
    let out = run(
        &state,
        &format!(
            "{} SHOW BUDGET; COUNT WHERE age < 30 WITH EPS 0.1;",
            load(&data)
        ),
    );
    assert_eq!(out[0]["budget_remaining"], 0.0, "{}", out[0]);
    assert_eq!(out[1]["exposed"], true, "{}", out[1]);
    assert_eq!(out[2]["kind"], "error", "{}", out[2]);
    assert!(
        out[2]["message"]
            .as_str()
            .is_some_and(|m| m.contains("exposed")),
        "{}",
        out[2]
    );
    // Loading alone exposes nothing: only a seeded release does.
    let other = dir.path().join("other.csv");
    std::fs::copy("examples/data/survey.csv", &other).expect("copy");
    let o = dpq(&state)
        .args(["--seed", "7", "--format", "json", "-c"])
        .arg(format!("LOAD '{}'; SHOW BUDGET;", other.display()))
        .output()
        .expect("dpq runs");
    assert!(o.status.success());
    let out = run(&state, &format!("LOAD '{}'; SHOW BUDGET;", other.display()));
    assert_eq!(out[1]["exposed"], false, "{}", out[1]);
}

#[test]
fn a_cube_and_its_cells_spending_outlive_the_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    // Xiao and Xiong's model, where disjoint cells compose in parallel.
    let first = run(
        &state,
        &format!(
            "LOAD '{}' AS people NEIGHBOURS add_remove; CUBE BY age (30); COUNT WHERE age < 30 WITH EPS 0.6;",
            data.display()
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
    // Past a cell's budget: refused, and the ledger is untouched.
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
    assert_eq!(std::fs::read(&ledger).expect("the ledger"), before);
    // Another cube across this one is recorded, and takes the releases in full: every cell
    // 0.6 + 0.6, and a new session reads the same.
    let changed = run(&state, &format!("{} CUBE BY age (40);", load(&data)));
    assert_eq!(changed[1]["kind"], "cube", "{}", changed[1]);
    assert_eq!(
        changed[1]["cell_budgets"],
        serde_json::json!([1.2, 1.2, 1.2])
    );
    let again = run(&state, &format!("{} SHOW BUDGET;", load(&data)));
    assert_eq!(again[1]["spent"], 1.2, "{}", again[1]);
}

/// A copy of spent data written over a path that had a ledger of its own (for other content)
/// finds the spent data's ledger: content wins over path.
#[test]
fn a_copy_written_over_a_path_with_a_ledger_finds_the_copied_datas_ledger() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spent = data_copy(dir.path());
    let state = dir.path().join("state");
    run(
        &state,
        &format!(
            "{} SET BUDGET 1; COUNT WHERE age < 30 WITH EPS 0.9;",
            load(&spent)
        ),
    );
    // Other data at another path, with a ledger of its own and nothing spent.
    let other = dir.path().join("other.csv");
    std::fs::write(&other, "x\n1\n2\n3\n").expect("write");
    let out = run(&state, &format!("{} SHOW BUDGET;", load(&other)));
    assert_eq!(out[1]["spent"], 0.0);
    // The spent file copied over it.
    std::fs::copy(&spent, &other).expect("copy over");
    let out = run(
        &state,
        &format!("{} COUNT WHERE age < 40 WITH EPS 0.5;", load(&other)),
    );
    assert_eq!(out[0]["budget_spent"], 0.9, "{}", out[0]);
    assert!(
        out[1]["message"]
            .as_str()
            .is_some_and(|m| m.contains("budget exceeded")),
        "{}",
        out[1]
    );
    assert_eq!(ledger_of(&state, &other), ledger_of(&state, &spent));
}

/// Two first loads of two copies of new data at the same moment find one ledger.
#[test]
fn two_first_loads_of_two_copies_at_once_share_one_ledger() {
    for round in 0..5 {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = data_copy(dir.path());
        let b = dir.path().join("copy.csv");
        std::fs::copy(&a, &b).expect("copy");
        let state = dir.path().join("state");
        let children: Vec<_> = [(&a, 30), (&b, 31)]
            .iter()
            .map(|(p, age)| {
                dpq(&state)
                    .args(["--format", "json", "-c"])
                    .arg(format!("{} COUNT WHERE age < {age} WITH EPS 0.6;", load(p)))
                    .stdout(Stdio::piped())
                    .spawn()
                    .expect("spawn dpq")
            })
            .collect();
        let outputs: Vec<String> = children
            .into_iter()
            .map(|c| {
                String::from_utf8_lossy(&c.wait_with_output().expect("ends").stdout).into_owned()
            })
            .collect();
        let answered = outputs
            .iter()
            .filter(|o| o.contains("\"kind\":\"count\""))
            .count();
        assert_eq!(
            answered, 1,
            "round {round}: only one 0.6 fits one budget: {outputs:?}"
        );
        assert_eq!(
            ledger_of(&state, &a),
            ledger_of(&state, &b),
            "round {round}"
        );
    }
}

/// Nothing in the state directory is an unkeyed function of the data, and everything in it
/// is readable by its owner only.
#[test]
fn the_state_directory_holds_no_unkeyed_hash_of_the_data_and_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    run(
        &state,
        &format!(
            "{} CUBE BY age (30); COUNT WHERE age < 30 WITH EPS 0.1;",
            load(&data)
        ),
    );
    let bytes = std::fs::read(&data).expect("the data");
    let plain = blake3::hash(&bytes).to_hex().to_string();
    let mut files = 0;
    let mut stack = vec![state.clone()];
    while let Some(d) = stack.pop() {
        let mode = std::fs::metadata(&d).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", d.display());
        for e in std::fs::read_dir(&d).expect("read dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            files += 1;
            let mode = std::fs::metadata(&p).expect("meta").permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", p.display());
            let text = String::from_utf8_lossy(&std::fs::read(&p).expect("read")).into_owned();
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
            assert!(
                !text.contains(&plain[..32]),
                "{} holds the data's hash",
                p.display()
            );
            assert!(
                !name.is_some_and(|n| n.contains(&plain[..32])),
                "{}",
                p.display()
            );
        }
    }
    assert!(
        files >= 4,
        "secret, ledger, its mark, content index: {files}"
    );
}

/// A file rewritten with its columns in another order while a table of it is loaded: the old
/// table's conditions charge the cells of the columns they name, not of the columns now at
/// their positions.
#[test]
fn a_file_rewritten_under_a_loaded_table_cannot_misdirect_charges() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("t.csv");
    std::fs::write(&data, "a,b\nyes,no\nno,no\nyes,yes\n").expect("write");
    let state = dir.path().join("state");
    let mut session = Session::with_store(Randomness::Os, Store::dir(state.clone()));
    let mut out = Vec::new();
    let mut go = |source: &str| {
        run_source(&mut session, "test", source, Format::Json, &mut |e| {
            let (Emitted::Result(s) | Emitted::Error(s)) = e;
            out.push(serde_json::from_str::<Value>(&s).expect("JSON"));
        });
    };
    go(&format!(
        "LOAD '{}' AS t1; CUBE BY a ('yes'), b ('yes');",
        data.display()
    ));
    std::fs::write(&data, "b,a\nno,yes\nno,no\nyes,yes\n").expect("rewrite");
    go(&format!(
        "LOAD '{}' AS t2; USE t1; COUNT WHERE a = 'yes' WITH EPS 0.5; SHOW BUDGET;",
        data.display()
    ));
    let budget = out.last().expect("a budget");
    let charged: Vec<String> = budget["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .filter(|c| c["spent"].as_f64() == Some(0.5))
        .map(|c| c["cell"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(!charged.is_empty(), "{budget}");
    assert!(
        charged.iter().all(|c| c.starts_with("a = 'yes'")),
        "charged {charged:?}"
    );
}

/// A chart is never written over a ledger, anything else in the state directory, or a loaded
/// data file; the refusal comes before anything is spent.
#[test]
fn charts_never_destroy_a_ledger_or_a_data_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    run(
        &state,
        &format!("{} COUNT WHERE age < 30 WITH EPS 0.1;", load(&data)),
    );
    let ledger = ledger_of(&state, &data);
    let before = std::fs::read(&ledger).expect("the ledger");
    let data_before = std::fs::read(&data).expect("the data");
    for target in [
        ledger.clone(),
        ledger.with_extension("hwm"),
        state.join("secret"),
        state.join("new.svg"),
        data.clone(),
    ] {
        let out = run(
            &state,
            &format!(
                "{} COUNT WHERE age < 50 WITH EPS 0.1 PRIOR p=0.5 PLOT '{}';",
                load(&data),
                target.display()
            ),
        );
        assert_eq!(out[1]["kind"], "error", "{}: {}", target.display(), out[1]);
        assert!(
            out[1]["message"]
                .as_str()
                .is_some_and(|m| m.contains("cannot write the chart")),
            "{}",
            out[1]
        );
        let out = run(&state, &format!("{} SHOW BUDGET;", load(&data)));
        assert_eq!(out[1]["spent"], 0.1, "nothing spent: {}", out[1]);
    }
    assert_eq!(std::fs::read(&ledger).expect("the ledger"), before);
    assert_eq!(std::fs::read(&data).expect("the data"), data_before);
    assert!(!state.join("new.svg").exists());
}

/// dpq with the size of the files it writes limited to `limit` bytes (a full disk, in
/// effect: writes past it fail with EFBIG).
fn dpq_limited(state: &Path, limit: u64) -> Command {
    let mut c = Command::new("bash");
    c.env("DPQ_STATE_DIR", state).args([
        "-c",
        "trap '' XFSZ; exec prlimit --fsize=$0:$0 \"$@\"",
        &limit.to_string(),
        env!("CARGO_BIN_EXE_dpq"),
    ]);
    c
}

/// The lines of a ledger, with their line feeds.
fn ledger_lines(ledger: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(ledger).expect("read");
    text.split_inclusive('\n').map(str::to_string).collect()
}

/// A write that fails (a full disk) spends nothing, draws nothing, and leaves the ledger
/// whole: once there is room again, it goes on.
#[test]
fn a_full_disk_spends_nothing_and_leaves_the_ledger_usable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    run(
        &state,
        &format!("{} COUNT WHERE age < 30 WITH EPS 0.1;", load(&data)),
    );
    let ledger = ledger_of(&state, &data);
    let size = std::fs::metadata(&ledger).expect("meta").len();
    // Room for part of the next line only.
    let o = dpq_limited(&state, size + 20)
        .args(["--format", "json", "-c"])
        .arg(format!(
            "{} COUNT WHERE age < 40 WITH EPS 0.2;",
            load(&data)
        ))
        .output()
        .expect("dpq runs");
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(text.contains("nothing was spent"), "{text}");
    assert!(!text.contains("\"kind\":\"count\""), "{text}");
    assert_eq!(
        std::fs::metadata(&ledger).expect("meta").len(),
        size,
        "cut back"
    );
    let out = run(
        &state,
        &format!(
            "{} COUNT WHERE age < 40 WITH EPS 0.2; SHOW BUDGET;",
            load(&data)
        ),
    );
    assert_eq!(
        out[0]["warnings"].as_array().map(Vec::len),
        Some(0),
        "{}",
        out[0]
    );
    assert_eq!(out[1]["kind"], "count", "{}", out[1]);
    assert_eq!(out[2]["spent"], 0.3);
}

/// When the answer's line cannot be written after the noise was drawn, the epsilon is spent
/// and the answer is not shown; the ledger stays whole.
#[test]
fn an_answer_that_cannot_be_recorded_is_not_shown_and_its_epsilon_counts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    // The same history in two state directories: one measures the next spending line.
    let (probe, state) = (dir.path().join("probe"), dir.path().join("state"));
    for s in [&probe, &state] {
        run(
            s,
            &format!("{} COUNT WHERE age < 30 WITH EPS 0.1;", load(&data)),
        );
    }
    let query = "COUNT WHERE age < 40 WITH EPS 0.2;";
    run(&probe, &format!("{} {query}", load(&data)));
    let probe_lines = ledger_lines(&ledger_of(&probe, &data));
    let spend_line = probe_lines[probe_lines.len() - 2].len() as u64;
    let ledger = ledger_of(&state, &data);
    let size = std::fs::metadata(&ledger).expect("meta").len();
    let o = dpq_limited(&state, size + spend_line + 20)
        .args(["--format", "json", "-c"])
        .arg(format!("{} {query}", load(&data)))
        .output()
        .expect("dpq runs");
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(text.contains("not shown"), "{text}");
    assert!(!text.contains("nothing was spent"), "it was spent: {text}");
    assert!(!text.contains("\"kind\":\"count\""), "{text}");
    let lines = ledger_lines(&ledger);
    assert!(lines
        .last()
        .is_some_and(|l| l.contains("\"type\":\"spend\"") && l.ends_with('\n')));
    let out = run(
        &state,
        &format!("{} SHOW BUDGET; SHOW HISTORY;", load(&data)),
    );
    assert_eq!(
        out[0]["warnings"].as_array().map(Vec::len),
        Some(0),
        "{}",
        out[0]
    );
    assert_eq!(out[1]["spent"], 0.3, "{}", out[1]);
    assert!(out[2]["releases"][1]["noisy"].is_null(), "{}", out[2]);
}

/// A file that reached its path by content (moved or copied) and is then edited continues
/// the ledger it was found by, and says its content changed.
#[test]
fn a_moved_file_edited_afterwards_continues_its_ledger() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    run(
        &state,
        &format!("{} COUNT WHERE age < 30 WITH EPS 0.7;", load(&data)),
    );
    let moved = dir.path().join("moved.csv");
    std::fs::rename(&data, &moved).expect("move");
    let out = run(&state, &format!("{} SHOW BUDGET;", load(&moved)));
    assert_eq!(out[1]["spent"], 0.7, "{}", out[1]);
    let mut text = std::fs::read_to_string(&moved).expect("read");
    text.push_str("10001,40,F,50000,North,master,true,170.0,false\n");
    std::fs::write(&moved, text).expect("edit");
    let out = run(&state, &format!("{} SHOW BUDGET;", load(&moved)));
    assert_eq!(out[0]["data_changed"], true, "{}", out[0]);
    assert_eq!(out[1]["spent"], 0.7, "{}", out[1]);
    // Spent data copied over another file's path, then edited: the spent data's ledger.
    let other = dir.path().join("other.csv");
    std::fs::write(&other, "x\n1\n").expect("write");
    run(&state, &format!("{} SHOW BUDGET;", load(&other)));
    std::fs::copy(&moved, &other).expect("copy over");
    run(&state, &format!("{} SHOW BUDGET;", load(&other)));
    std::fs::write(&other, "x\n1\n2\n").expect("edit");
    let out = run(&state, &format!("{} SHOW BUDGET;", load(&other)));
    assert_eq!(out[1]["spent"], 0.7, "{}", out[1]);
}

/// A secret from elsewhere does not silently start every budget anew.
#[test]
fn a_replaced_secret_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    run(
        &state,
        &format!("{} COUNT WHERE age < 30 WITH EPS 0.7;", load(&data)),
    );
    std::fs::write(state.join("secret"), [7u8; 32]).expect("replace the secret");
    let out = run(&state, &format!("{} SHOW BUDGET;", load(&data)));
    assert_eq!(out[0]["kind"], "error", "{}", out[0]);
    assert!(
        out[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("secret")),
        "{}",
        out[0]
    );
}

/// A session that loaded a file before another process saw it change can load it again.
#[test]
fn a_second_load_after_another_process_saw_new_content_is_not_damage() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    let mut session = Session::with_store(Randomness::Os, Store::dir(state.clone()));
    let mut out = Vec::new();
    let mut go = |source: &str, out: &mut Vec<Value>| {
        run_source(&mut session, "test", source, Format::Json, &mut |e| {
            let (Emitted::Result(s) | Emitted::Error(s)) = e;
            out.push(serde_json::from_str::<Value>(&s).expect("JSON"));
        });
    };
    go(&format!("LOAD '{}' AS a;", data.display()), &mut out);
    let mut text = std::fs::read_to_string(&data).expect("read");
    text.push_str("10001,40,F,50000,North,master,true,170.0,false\n");
    std::fs::write(&data, text).expect("edit");
    run(&state, &format!("{} SHOW BUDGET;", load(&data)));
    out.clear();
    go(&format!("LOAD '{}' AS b;", data.display()), &mut out);
    assert_eq!(out[0]["kind"], "loaded", "{}", out[0]);
}

/// A final line whose line feed alone is missing, yet whose checksum holds, is a complete
/// line: it is kept (the line feed restored), never cut away.
#[test]
fn a_complete_last_line_without_its_line_feed_is_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    run(
        &state,
        &format!("{} COUNT WHERE age < 30 WITH EPS 0.3;", load(&data)),
    );
    let ledger = ledger_of(&state, &data);
    let good = std::fs::read_to_string(&ledger).expect("read");
    std::fs::write(&ledger, good.trim_end_matches('\n')).expect("drop the line feed");
    let out = run(
        &state,
        &format!("{} SHOW BUDGET; SHOW HISTORY;", load(&data)),
    );
    assert_eq!(out[1]["spent"], 0.3, "{}", out[1]);
    assert!(out[2]["releases"][0]["noisy"].is_number(), "{}", out[2]);
    assert_eq!(std::fs::read_to_string(&ledger).expect("read"), good);
}

/// A refused LOAD changes nothing, not even a torn last line.
#[test]
fn a_refused_load_leaves_the_ledger_byte_for_byte() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    run(
        &state,
        &format!("{} COUNT WHERE age < 30 WITH EPS 0.3;", load(&data)),
    );
    let ledger = ledger_of(&state, &data);
    let older = std::fs::read_to_string(&ledger).expect("read");
    run(
        &state,
        &format!("{} COUNT WHERE age < 31 WITH EPS 0.3;", load(&data)),
    );
    // An older copy, with a torn line after it: refused by its mark, and left as found.
    let damaged = format!("{older}{{\"type\":\"spe");
    std::fs::write(&ledger, &damaged).expect("restore an older copy");
    let out = run(&state, &format!("{} SHOW BUDGET;", load(&data)));
    assert_eq!(out[0]["kind"], "error", "{}", out[0]);
    assert_eq!(std::fs::read_to_string(&ledger).expect("read"), damaged);
}

/// Another ledger's high-water mark cannot come from a crash: refused.
#[test]
fn another_ledgers_mark_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    run(
        &state,
        &format!("{} COUNT WHERE age < 30 WITH EPS 0.3;", load(&data)),
    );
    let other = dir.path().join("other.csv");
    std::fs::write(&other, "x\n1\n2\n").expect("write");
    run(
        &state,
        &format!(
            "LOAD '{}'; COUNT WHERE x < 2 WITH EPS 0.1;",
            other.display()
        ),
    );
    let ledger = ledger_of(&state, &data);
    let foreign = ledger_of(&state, &other).with_extension("hwm");
    std::fs::copy(foreign, ledger.with_extension("hwm")).expect("copy a mark over");
    let out = run(&state, &format!("{} SHOW BUDGET;", load(&data)));
    assert_eq!(out[0]["kind"], "error", "{}", out[0]);
}

/// Seeded noise is a function of the whole query: over two cubes with as many cells, the
/// same row of coefficients is a different query and gets other noise.
#[test]
fn seeded_noise_differs_between_cubes_with_as_many_cells() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("ages.csv");
    let mut text = String::from("age\n");
    for age in 0..100 {
        text.push_str(&format!("{age}\n"));
    }
    std::fs::write(&data, text).expect("write");
    let answer = |cut: u32| {
        let o = dpq(&dir.path().join(format!("s{cut}")))
            .args(["--seed", "7", "--format", "json", "-c"])
            .arg(format!(
                "LOAD '{}'; CUBE BY age ({cut}); COUNT WHERE age < {cut} WITH EPS 0.1;",
                data.display()
            ))
            .output()
            .expect("dpq runs");
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        let line = text.lines().nth(2).expect("a count").to_string();
        serde_json::from_str::<Value>(&line).expect("JSON")["noisy"]
            .as_f64()
            .expect("noisy")
    };
    // True counts 30 and 60: shared noise would make the answers differ by exactly 30.
    assert_ne!(answer(60) - answer(30), 30.0);
}

/// A state directory written by an earlier dpq (ledgers without a secret or marks) is
/// refused, and left exactly as it was.
#[test]
fn an_earlier_layout_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    std::fs::create_dir_all(state.join("ledgers")).expect("mkdir");
    std::fs::write(state.join("ledgers").join("0123.ledger"), "{}\n").expect("write");
    let listing = |d: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(d)
            .expect("read")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let before = listing(&state);
    let out = run(&state, &format!("{} SHOW BUDGET;", load(&data)));
    assert_eq!(out[0]["kind"], "error", "{}", out[0]);
    assert!(
        out[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("earlier version")),
        "{}",
        out[0]
    );
    assert_eq!(listing(&state), before);
}

/// A full disk while the ledger records a load leaves the index naming a ledger that has not
/// seen the content yet; the next load of the content, from any path, finds that ledger.
#[test]
fn a_load_cut_short_after_the_index_is_finished_by_the_next() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    run(
        &state,
        &format!("{} COUNT WHERE age < 30 WITH EPS 0.9;", load(&data)),
    );
    let ledger = ledger_of(&state, &data);
    let mut text = std::fs::read_to_string(&data).expect("read");
    text.push_str("10001,40,F,50000,North,master,true,170.0,false\n");
    std::fs::write(&data, &text).expect("edit");
    // Room for the index entries (small files), not for the ledger's line.
    let size = std::fs::metadata(&ledger).expect("meta").len();
    let o = dpq_limited(&state, size + 10)
        .args(["--format", "json", "-c"])
        .arg(load(&data))
        .output()
        .expect("dpq runs");
    assert!(String::from_utf8_lossy(&o.stdout).contains("\"kind\":\"error\""));
    let copy = dir.path().join("copy.csv");
    std::fs::write(&copy, &text).expect("copy");
    let out = run(&state, &format!("{} SHOW BUDGET;", load(&copy)));
    assert_eq!(out[1]["spent"], 0.9, "{}", out[1]);
}

/// The indexes are caches of what the ledgers record: lost, they are found again.
#[test]
fn lost_indexes_are_found_again_from_the_ledgers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    run(
        &state,
        &format!("{} COUNT WHERE age < 30 WITH EPS 0.9;", load(&data)),
    );
    let moved = dir.path().join("moved.csv");
    std::fs::rename(&data, &moved).expect("move");
    run(&state, &format!("{} SHOW BUDGET;", load(&moved)));
    for index in ["content", "paths"] {
        for e in std::fs::read_dir(state.join(index)).expect("index") {
            std::fs::remove_file(e.expect("entry").path()).expect("delete");
        }
    }
    let out = run(&state, &format!("{} SHOW BUDGET;", load(&moved)));
    assert_eq!(out[1]["spent"], 0.9, "found by content: {}", out[1]);
    // Moved, then its index lost, then edited: found by its path.
    for e in std::fs::read_dir(state.join("paths")).expect("index") {
        std::fs::remove_file(e.expect("entry").path()).expect("delete");
    }
    let mut text = std::fs::read_to_string(&moved).expect("read");
    text.push_str("10001,40,F,50000,North,master,true,170.0,false\n");
    std::fs::write(&moved, text).expect("edit");
    for e in std::fs::read_dir(state.join("paths")).expect("index") {
        std::fs::remove_file(e.expect("entry").path()).expect("delete");
    }
    let out = run(&state, &format!("{} SHOW BUDGET;", load(&moved)));
    assert_eq!(out[1]["spent"], 0.9, "found by path: {}", out[1]);
}

/// An edited file whose new content was first loaded from another path, while its own
/// ledger has releases: which people the answers concern cannot be told, and it is refused.
#[test]
fn content_and_path_leading_to_two_ledgers_with_history_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    run(
        &state,
        &format!("{} COUNT WHERE age < 30 WITH EPS 0.9;", load(&data)),
    );
    let mut text = std::fs::read_to_string(&data).expect("read");
    text.push_str("10001,40,F,50000,North,master,true,170.0,false\n");
    std::fs::write(&data, &text).expect("edit");
    let backup = dir.path().join("backup.csv");
    std::fs::write(&backup, &text).expect("backup");
    run(&state, &format!("{} SHOW BUDGET;", load(&backup)));
    let out = run(
        &state,
        &format!("{} COUNT WHERE age < 40 WITH EPS 0.9;", load(&data)),
    );
    assert_eq!(out[0]["kind"], "error", "{}", out[0]);
    assert!(
        out[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("two ledgers")),
        "{}",
        out[0]
    );
}

/// A refused LOAD (a table that does not fit the cube its ledger declares) writes nothing.
#[test]
fn a_refused_load_writes_nothing_to_the_ledger_or_the_index() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("t.csv");
    std::fs::write(&data, "age,sex\n25,F\n40,M\n").expect("write");
    let state = dir.path().join("state");
    run(
        &state,
        &format!(
            "LOAD '{}'; CUBE BY age (30); COUNT WHERE age < 30 WITH EPS 0.1;",
            data.display()
        ),
    );
    let listing = |d: &Path| -> Vec<(String, Vec<u8>)> {
        let mut all = Vec::new();
        for sub in ["ledgers", "content", "paths"] {
            for e in std::fs::read_dir(d.join(sub)).expect("read") {
                let p = e.expect("entry").path();
                all.push((p.display().to_string(), std::fs::read(&p).expect("read")));
            }
        }
        all.sort();
        all
    };
    let before = listing(&state);
    std::fs::write(&data, "height,sex\n25,F\n40,M\n").expect("rewrite");
    let out = run(&state, &format!("LOAD '{}';", data.display()));
    assert_eq!(out[0]["kind"], "error", "{}", out[0]);
    assert_eq!(listing(&state), before);
}

/// A ledger deleted while the path index still names it is reported missing, never made
/// afresh under its old name.
#[test]
fn a_ledger_named_by_the_path_index_and_deleted_is_missing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    run(
        &state,
        &format!("{} COUNT WHERE age < 30 WITH EPS 0.9;", load(&data)),
    );
    let ledger = ledger_of(&state, &data);
    std::fs::remove_file(&ledger).expect("delete");
    std::fs::remove_file(ledger.with_extension("hwm")).expect("delete");
    let mut text = std::fs::read_to_string(&data).expect("read");
    text.push_str("10001,40,F,50000,North,master,true,170.0,false\n");
    std::fs::write(&data, text).expect("edit");
    let out = run(&state, &format!("{} SHOW BUDGET;", load(&data)));
    assert_eq!(out[0]["kind"], "error", "{}", out[0]);
    assert!(
        out[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("is missing")),
        "{}",
        out[0]
    );
}

/// A state directory made by someone else with a looser mode is made private on first use.
#[test]
fn a_state_directory_is_made_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    std::fs::create_dir_all(&state).expect("mkdir");
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    run(&state, &format!("{} SHOW BUDGET;", load(&data)));
    let mode = std::fs::metadata(&state)
        .expect("meta")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o700);
}

/// A chart replaces only a chart: any other existing file (another data file with a ledger
/// but not loaded in this session, a note, a script) is refused before anything is spent.
#[test]
fn charts_replace_only_charts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    let victim = dir.path().join("victim.csv");
    std::fs::copy(&data, &victim).expect("copy");
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "my notes\n").expect("write");
    let chart = dir.path().join("old.svg");
    std::fs::write(&chart, "<?xml version=\"1.0\"?>\n<svg></svg>\n").expect("write");
    run(&state, &format!("LOAD '{}' AS v;", victim.display()));
    for target in [&victim, &notes] {
        let before = std::fs::read(target).expect("read");
        let out = run(
            &state,
            &format!(
                "{} COUNT WHERE age < 50 WITH EPS 0.1 PRIOR p=0.5 PLOT '{}';",
                load(&data),
                target.display()
            ),
        );
        assert_eq!(out[1]["kind"], "error", "{}: {}", target.display(), out[1]);
        let message = out[1]["message"].as_str().unwrap_or_default();
        assert!(message.contains("not a chart"), "{message}");
        assert_eq!(std::fs::read(target).expect("read"), before);
        let out = run(&state, &format!("{} SHOW BUDGET;", load(&data)));
        assert_eq!(out[1]["spent"], 0.0, "nothing spent: {}", out[1]);
    }
    let out = run(
        &state,
        &format!(
            "{} COUNT WHERE age < 50 WITH EPS 0.1 PRIOR p=0.5 PLOT '{}';",
            load(&data),
            chart.display()
        ),
    );
    assert_eq!(out[1]["kind"], "count", "{}", out[1]);
    let svg = std::fs::read_to_string(&chart).expect("read");
    assert!(
        svg.len() > 100 && svg.contains("<svg"),
        "a chart replaced the chart"
    );
}

/// Rewrites every line of `ledger` through `edit` and chains the checksums again, as a dpq
/// of an earlier version would have written them, with the mark beside it to match.
fn rewrite_ledger(ledger: &Path, edit: impl Fn(&str) -> String) {
    // The chain starts from the format's genesis string (`GENESIS` in src/privacy/ledger.rs).
    let mut previous = String::from("dpq-ledger-v2");
    let mut out = String::new();
    let lines = ledger_lines(ledger);
    for line in &lines {
        // A line ends in `,"sum":"` + 32 hex digits + `"}` and its line feed: 43 bytes.
        let body = edit(&line[..line.len() - 43]);
        let mut h = blake3::Hasher::new();
        h.update(previous.as_bytes());
        h.update(b"\n");
        h.update(body.as_bytes());
        h.update(b"}");
        previous = h.finalize().to_hex()[..32].to_string();
        out.push_str(&format!("{body},\"sum\":\"{previous}\"}}\n"));
    }
    std::fs::write(ledger, out).expect("write the ledger");
    let name = ledger.file_stem().and_then(|s| s.to_str()).expect("a name");
    let mut mark =
        serde_json::json!({"ledger": name, "lines": lines.len(), "sum": previous}).to_string();
    while mark.len() < 127 {
        mark.push(' ');
    }
    mark.push('\n');
    std::fs::write(ledger.with_extension("hwm"), mark).expect("write the mark");
}

/// A format-2 ledger written before tables had a neighbour model (its header has no
/// `neighbours`) was written while n was shown: it is read as `replace`, not as damage, and
/// its spending counts.
#[test]
fn a_ledger_from_before_neighbour_models_is_read_as_replace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    run(
        &state,
        &format!("{} COUNT WHERE age < 30 WITH EPS 0.3;", load(&data)),
    );
    let ledger = ledger_of(&state, &data);
    let clean = std::fs::read(&ledger).expect("read");
    let mark = std::fs::read(ledger.with_extension("hwm")).expect("read");
    // As format 2 wrote it: rows as lists of cells, and no model in the header.
    rewrite_ledger(&ledger, |l| {
        l.replace(",\"neighbours\":\"replace\"", "")
            .replace("\"format\":3", "\"format\":2")
            .replace("\"runs\":[]", "\"row\":[]")
    });
    assert!(!std::fs::read_to_string(&ledger)
        .expect("read")
        .contains("neighbours"));
    let out = run(&state, &format!("{} SHOW BUDGET;", load(&data)));
    assert_eq!(out[1]["kind"], "budget", "{}", out[1]);
    assert_eq!(out[1]["spent"], 0.3, "{}", out[1]);
    assert_eq!(out[1]["neighbours"], "replace", "{}", out[1]);
    // A later format always names its model: one without it is damaged, not guessed.
    std::fs::write(&ledger, clean).expect("restore");
    std::fs::write(ledger.with_extension("hwm"), mark).expect("restore");
    rewrite_ledger(&ledger, |l| l.replace(",\"neighbours\":\"replace\"", ""));
    let out = run(&state, &format!("{} SHOW BUDGET;", load(&data)));
    assert_eq!(out[0]["kind"], "error", "{}", out[0]);
}

/// A mark lost beside a ledger with releases is made again from the ledger, with a warning
/// that says what can no longer be checked; the spending still counts.
#[test]
fn a_lost_mark_is_made_again_with_a_warning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_copy(dir.path());
    let state = dir.path().join("state");
    run(
        &state,
        &format!("{} COUNT WHERE age < 30 WITH EPS 0.3;", load(&data)),
    );
    let ledger = ledger_of(&state, &data);
    std::fs::remove_file(ledger.with_extension("hwm")).expect("remove the mark");
    let out = run(&state, &format!("{} SHOW BUDGET;", load(&data)));
    let warned = out.iter().any(|o| {
        o.to_string()
            .contains("was missing or unreadable; it was made again")
    });
    assert!(warned, "{out:?}");
    assert_eq!(out.last().expect("budget")["spent"], 0.3, "{out:?}");
    assert!(ledger.with_extension("hwm").exists());
}

/// The same bytes read with another delimiter are another table: one ledger (the same
/// people, one budget), but no answer recorded for one reading is the other's. Read with `,`
/// the first column is `k;v` (never `x`: true count 0); read with `;` it is `k` (`x` twice).
/// A count's key names its column by position, so without a mark of the reading the second
/// count would be "identical" to the first and answered from the history with its noise.
#[test]
fn a_file_read_with_another_delimiter_shares_its_budget_and_no_answer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("kv.csv");
    std::fs::write(&data, "k;v,w\nx;1,2\nx;3,4\ny;5,6\n").expect("write");
    let state = dir.path().join("state");
    let path = data.display();
    let commas = format!("LOAD '{path}' AS t; COUNT WHERE \"k;v\" = 'x' WITH EPS 0.25;");
    let first = run(&state, &commas);
    assert_eq!(
        first[0]["columns"].as_array().map(Vec::len),
        Some(2),
        "{}",
        first[0]
    );
    assert_eq!(first[1]["from_history"], false, "{}", first[1]);
    // The same reading again: the recorded answer, free.
    let again = run(&state, &commas);
    assert_eq!(again[1]["from_history"], true, "{}", again[1]);
    assert_eq!(again[1]["noisy"], first[1]["noisy"]);
    let semicolons = run(
        &state,
        &format!(
            "LOAD '{path}' AS t DELIMITER ';'; COUNT WHERE k = 'x' WITH EPS 0.25; SHOW BUDGET;"
        ),
    );
    assert_eq!(
        semicolons[0]["budget_spent"], 0.25,
        "one budget: {}",
        semicolons[0]
    );
    assert_eq!(semicolons[1]["from_history"], false, "{}", semicolons[1]);
    assert_eq!(semicolons[2]["spent"], 0.5, "{}", semicolons[2]);
    // A decimal comma is a reading of its own too.
    let decimal = run(
        &state,
        &format!(
            "LOAD '{path}' AS t DELIMITER ';' DECIMAL ','; COUNT WHERE k = 'x' WITH EPS 0.25;"
        ),
    );
    assert_eq!(decimal[1]["from_history"], false, "{}", decimal[1]);
}

/// A cube and a privacy unit are declared over one reading of a file: over another (here a
/// decimal comma, which reads `1.234` as 1234, not 1.234) the same column names hold other
/// values, so the cube's cells and the unit's rows would be others. Both are refused there,
/// before anything is spent.
#[test]
fn a_cube_or_unit_declared_over_one_reading_is_refused_over_another() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("amounts.csv");
    std::fs::write(&data, "id;amount\n1.234;1.234\n1;2\n2;3\n").expect("write");
    let path = data.display();
    let state = dir.path().join("cube");
    let cube = run(
        &state,
        &format!("LOAD '{path}' AS t DELIMITER ';' DECIMAL ','; CUBE BY amount (1000);"),
    );
    assert!(cube.iter().all(|o| o["kind"] != "error"), "{cube:?}");
    // Read with `.` before decimals, `amount` is a float column, 1.234 on the first row: the
    // cube's cut at 1000 would put that row in another cell.
    let other = run(&state, &format!("LOAD '{path}' AS t DELIMITER ';';"));
    assert_eq!(other[0]["kind"], "error", "{}", other[0]);
    let message = other[0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("DELIMITER ';' DECIMAL ','"), "{message}");
    let same = run(
        &state,
        &format!("LOAD '{path}' AS t DELIMITER ';' DECIMAL ',';"),
    );
    assert_ne!(same[0]["kind"], "error", "{}", same[0]);

    let state = dir.path().join("unit");
    let unit = run(
        &state,
        &format!(
            "LOAD '{path}' AS t DELIMITER ';' DECIMAL ',' PRIVACY UNIT id MAX ROWS 1; COUNT WHERE id > 2 WITH EPS 0.25;"
        ),
    );
    assert!(unit.iter().all(|o| o["kind"] != "error"), "{unit:?}");
    let other = run(&state, &format!("LOAD '{path}' AS t DELIMITER ';';"));
    assert_eq!(other[0]["kind"], "error", "{}", other[0]);
    let message = other[0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("DELIMITER ';' DECIMAL ',' PRIVACY UNIT id MAX ROWS 1"),
        "{message}"
    );
}
