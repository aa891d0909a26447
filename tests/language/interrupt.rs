//! Ctrl-C at the prompt and in `dpq connect`, through a pseudo-terminal as a person meets it:
//! a running statement stops and the prompt comes back, what was spent stays spent and
//! recorded, and the history keeps every statement entered even when dpq is killed.

use rexpect::session::PtySession;
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::common;
use common::serve::{Server, Setup};

/// A simulation of some 300 million runs: minutes even on a fast machine, so that it is
/// still running when Ctrl-C comes, and a Ctrl-C that did not stop it would leave the test
/// waiting far past its timeout.
const LONG_SIMULATE: &str = "SIMULATE N (1000) P (0.5) EPS (1, 2, 3) RUNS 100000000;";

/// How long a statement is given to start before Ctrl-C is sent.
const START: Duration = Duration::from_millis(1500);

/// `dpq ARGS` at a terminal of its own, with `home` as its home (where the history is kept)
/// and `state` as its state directory; it prints its process id first (`pid=N`), for a
/// test that kills it.
fn at_a_terminal(home: &Path, state: &Path, args: &[&str], env: &[(&str, &str)]) -> PtySession {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg("echo pid=$$; exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_dpq"))
        .args(args)
        .env("HOME", home)
        .env_remove("XDG_DATA_HOME")
        .env("DPQ_STATE_DIR", state);
    for (k, v) in env {
        c.env(k, v);
    }
    rexpect::session::spawn_command(c, Some(20_000)).expect("a pty")
}

/// Runs `statement` and waits for the prompt after it: what was printed before the prompt.
fn ask(p: &mut PtySession, statement: &str) -> String {
    p.send_line(statement).expect("send");
    p.exp_string("dpq> ")
        .expect("the prompt after the statement")
}

/// The JSON results of `statements` in a fresh `dpq -c` on the state directory `state`: the
/// ledger as another process reads it from its file.
fn from_the_ledger(state: &Path, statements: &str) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_dpq"))
        .env("DPQ_STATE_DIR", state)
        .args(["--format", "json", "-c", statements])
        .output()
        .expect("dpq -c");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}");
    text.lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
}

/// Ctrl-C stops a long `SIMULATE` at the prompt: the prompt comes back in the same session
/// with the interrupt said, the release made before it is still spent and recorded, the
/// ledger takes the next release, and another process reads it whole.
#[test]
fn ctrl_c_stops_a_simulation_and_the_prompt_comes_back_with_the_budget_as_it_was() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    let mut p = at_a_terminal(dir.path(), &state, &[], &[]);
    p.exp_string("dpq> ").expect("the prompt");
    ask(&mut p, "LOAD 'examples/data/people.csv' AS people;");
    let shown = ask(&mut p, "COUNT WHERE age < 30 WITH EPS 0.25;");
    assert!(shown.contains("noisy count"), "{shown}");
    p.send_line(LONG_SIMULATE).expect("send");
    std::thread::sleep(START);
    p.send_control('c').expect("Ctrl-C");
    let said = p
        .exp_string("dpq> ")
        .expect("the prompt comes back, in the same session");
    assert!(said.contains("interrupted (Ctrl-C)"), "{said}");
    assert!(said.contains("nothing was spent"), "{said}");
    // The session goes on: its table, its spending, its ledger.
    let budget = ask(&mut p, "SHOW BUDGET;");
    assert!(budget.contains("0.25"), "{budget}");
    let history = ask(&mut p, "SHOW HISTORY;");
    assert!(history.contains("age < 30"), "{history}");
    let shown = ask(&mut p, "COUNT WHERE age >= 30 WITH EPS 0.25;");
    assert!(shown.contains("noisy count"), "{shown}");
    p.send_line(".quit").expect("send");
    p.exp_eof().expect("dpq leaves");
    // Another process reads the ledger whole: both releases, nothing half-written.
    let results = from_the_ledger(
        &state,
        "LOAD 'examples/data/people.csv' AS people; SHOW BUDGET; SHOW HISTORY;",
    );
    let budget = results
        .iter()
        .find(|r| r["kind"] == "budget")
        .expect("the budget");
    assert_eq!(budget["spent"], 0.5, "{budget}");
    let history = results
        .iter()
        .find(|r| r["kind"] == "history")
        .expect("the history");
    let text = history.to_string();
    assert!(
        text.contains("age < 30") && text.contains("age >= 30"),
        "{text}"
    );
}

/// Each statement is in the history file as soon as it is entered, before it runs: a prompt
/// killed with SIGKILL (no clean exit) keeps them, readable by its owner only.
#[test]
fn the_history_keeps_each_statement_as_it_is_entered_even_when_dpq_is_killed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    let mut p = at_a_terminal(dir.path(), &state, &[], &[]);
    let (_, pid) = p.exp_regex("pid=[0-9]+").expect("the process id");
    let pid = pid.trim_start_matches("pid=").to_string();
    p.exp_string("dpq> ").expect("the prompt");
    ask(&mut p, "SHOW BUDGET;");
    p.send_line(LONG_SIMULATE).expect("send");
    std::thread::sleep(START);
    let killed = Command::new("kill")
        .args(["-KILL", &pid])
        .status()
        .expect("kill");
    assert!(killed.success());
    p.exp_eof().expect("dpq is gone");
    let file = dir.path().join(".local/share/dpq/repl_history.txt");
    let history = std::fs::read_to_string(&file).expect("the history");
    assert!(history.contains("SHOW BUDGET;"), "{history}");
    assert!(history.contains(LONG_SIMULATE), "{history}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&file)
        .expect("metadata")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    let dir_mode = std::fs::metadata(file.parent().expect("a directory"))
        .expect("metadata")
        .permissions()
        .mode();
    assert_eq!(dir_mode & 0o777, 0o700, "{dir_mode:o}");
}

/// Ctrl-C while `dpq connect` waits for the server: the client stops waiting, says the
/// statement may still run to its end on the server and how to see what it did, and the
/// prompt comes back; the server keeps what was spent before, as its ledger shows.
#[test]
fn ctrl_c_in_dpq_connect_stops_the_wait_and_says_how_to_see_what_the_server_did() {
    let setup = Setup::new(2);
    let policy = setup.policy(
        "budget = 1",
        &["1", "1"],
        "\n[limits]\nmax_simulate_runs = 1000000000\n",
    );
    let server = Server::start(&setup, &policy);
    let home = setup.path("home");
    std::fs::create_dir_all(&home).expect("a home");
    let mut p = at_a_terminal(
        &home,
        &setup.path("client-state"),
        &["connect", &server.url()],
        &[("DPQ_TOKEN", setup.token(0))],
    );
    p.exp_string("dpq> ").expect("the prompt");
    ask(&mut p, "USE people;");
    let shown = ask(&mut p, "COUNT WHERE age < 30 WITH EPS 0.25;");
    assert!(shown.contains("noisy count"), "{shown}");
    p.send_line(LONG_SIMULATE).expect("send");
    std::thread::sleep(START);
    p.send_control('c').expect("Ctrl-C");
    let said = p
        .exp_string("dpq> ")
        .expect("the prompt comes back while the server still runs the statement");
    assert!(
        said.contains("interrupted: dpq stopped waiting for the server"),
        "{said}"
    );
    assert!(said.contains("SHOW HISTORY and SHOW BUDGET"), "{said}");
    p.send_line(".quit").expect("send");
    p.exp_eof()
        .expect("dpq connect leaves, with the server still busy");
    // The analyst's release before the interrupt is spent on the dataset, as another
    // analyst (whose session the running statement does not hold) sees.
    let budget = server.budget(setup.token(1));
    assert_eq!(budget["dataset"]["spent"], 0.25, "{budget}");
}

/// Ctrl-C stops a long `COMPARE NOISE` of smooth noise (a row over a large n takes about a
/// minute in a debug build): the prompt comes back within seconds, with the interrupt said.
#[test]
fn ctrl_c_stops_a_comparison_of_smooth_noise_within_seconds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    let mut p = at_a_terminal(dir.path(), &state, &[], &[]);
    p.exp_string("dpq> ").expect("the prompt");
    p.send_line("COMPARE NOISE SHARE N (1000000, 2000000) M (0.5) EPS (0.01, 0.02);")
        .expect("send");
    std::thread::sleep(START);
    let asked = std::time::Instant::now();
    p.send_control('c').expect("Ctrl-C");
    let said = p
        .exp_string("dpq> ")
        .expect("the prompt comes back, in the same session");
    assert!(
        said.contains("interrupted (Ctrl-C): COMPARE NOISE stopped"),
        "{said}"
    );
    assert!(
        asked.elapsed() < Duration::from_secs(15),
        "{:?}",
        asked.elapsed()
    );
    let shown = ask(&mut p, "CHOOSE EPS WITHIN 20% AT 0.8 FOR 100;");
    assert!(shown.contains("0.08"), "{shown}");
}
