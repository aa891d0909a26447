//! The classroom as a teacher runs it, against the real binary on loopback: `dpq serve` prints
//! a line per statement (time, analyst, dataset, kind, epsilon, what is left; never an answer
//! nor the statement's text) and a summary when it stops; `dpq connect` greets with the
//! server, the analyst and their datasets' budgets (`GET /v1/account`); and
//! `dpq serve --reset-demo` clears a demo's state for the next class, refusing any other.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common;
use common::serve::{agent, answer, error, kinds, Setup};

/// A `dpq serve` whose standard output and error are kept, line by line, as it runs.
struct Teacher {
    child: Child,
    addr: SocketAddr,
    out: Arc<Mutex<Vec<String>>>,
    readers: Vec<std::thread::JoinHandle<()>>,
    err: Arc<Mutex<Vec<String>>>,
}

/// Keeps every line of `stream` in `into`.
fn keep(
    stream: impl Read + Send + 'static,
    into: Arc<Mutex<Vec<String>>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            into.lock().expect("lines").push(line);
        }
    })
}

impl Teacher {
    /// Starts `dpq serve` on `policy` with the state directory `state` and `extra` flags.
    fn start(policy: &Path, state: &Path, extra: &[&str]) -> Teacher {
        let mut child = Command::new(env!("CARGO_BIN_EXE_dpq"))
            .args(["serve", "--listen", "127.0.0.1:0", "--policy"])
            .arg(policy)
            .arg("--state-dir")
            .arg(state)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn dpq serve");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("the first line");
        let Some(addr) = line.trim().strip_prefix("dpq serve: listening on http://") else {
            let mut err = String::new();
            child.stderr.take().map(|mut e| e.read_to_string(&mut err));
            panic!("the server did not start: {line} {err}");
        };
        let addr = addr.parse().expect("an address");
        let out = Arc::new(Mutex::new(Vec::new()));
        let err = Arc::new(Mutex::new(Vec::new()));
        let readers = vec![
            keep(stdout, Arc::clone(&out)),
            keep(child.stderr.take().expect("stderr"), Arc::clone(&err)),
        ];
        Teacher {
            child,
            addr,
            out,
            readers,
            err,
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn run(&self, token: &str, source: &str) -> Value {
        let body = serde_json::json!({ "source": source }).to_string();
        let (status, body) = answer(
            agent()
                .post(format!("{}/v1/run", self.url()))
                .content_type("application/json")
                .header("Authorization", format!("Bearer {token}"))
                .send(body.as_bytes()),
        );
        assert_eq!(status, 200, "{body}");
        body
    }

    fn get(&self, token: Option<&str>, path: &str) -> (u16, Value) {
        let mut request = agent().get(format!("{}{path}", self.url()));
        if let Some(t) = token {
            request = request.header("Authorization", format!("Bearer {t}"));
        }
        answer(request.call())
    }

    /// The lines printed so far, once `count` of them match `pred` (or after 10 s).
    fn lines_when(&self, count: usize, pred: impl Fn(&str) -> bool) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let lines = self.out.lock().expect("lines").clone();
            if lines.iter().filter(|l| pred(l)).count() >= count || Instant::now() > deadline {
                return lines;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM, as the curator's Ctrl-C or a service manager stops it: its exit status and
    /// everything it printed on standard output and error.
    fn stop(mut self) -> (bool, Vec<String>, Vec<String>) {
        let killed = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(killed.success());
        let status = self.child.wait().expect("the server ends");
        for r in self.readers.drain(..) {
            r.join().expect("a reader");
        }
        let out = self.out.lock().expect("lines").clone();
        let err = self.err.lock().expect("lines").clone();
        (status.success(), out, err)
    }
}

impl Drop for Teacher {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The statement lines of the log: those starting with a time, `HH:MM:SS`.
fn statement_lines(lines: &[String]) -> Vec<Vec<String>> {
    lines
        .iter()
        .filter(|l| {
            let b = l.as_bytes();
            b.len() > 8
                && b[2] == b':'
                && b[5] == b':'
                && b[..8].iter().all(|c| c.is_ascii_digit() || *c == b':')
        })
        .map(|l| {
            // Columns are two spaces apart; a kind or an outcome holds single spaces.
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_string)
                .collect()
        })
        .collect()
}

/// Every number of a JSON value, as text in several forms (as sent, rounded to whole, and
/// its integer digits), with the statements' own text.
fn numbers(v: &Value, into: &mut Vec<String>) {
    match v {
        Value::Number(n) => {
            if let Some(f) = n.as_f64() {
                if f.abs() >= 100.0 {
                    into.push(n.to_string());
                    into.push(format!("{}", f.round() as i64));
                    into.push(format!("{}", f.trunc() as i64));
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| numbers(x, into)),
        Value::Object(o) => o.values().for_each(|x| numbers(x, into)),
        _ => {}
    }
}

/// The teacher's log has a line per statement with its fields, and no answer: no number of
/// size from any result the students were sent, nor any value they typed.
#[test]
fn each_statement_is_a_line_with_its_cost_and_never_its_answer() {
    let setup = Setup::new(2);
    let policy = setup.policy("budget = 1\nmax_eps_per_query = 0.25", &["0.5", "0.5"], "");
    let teacher = Teacher::start(&policy, &setup.state(), &[]);
    let (a0, a1) = (setup.token(0), setup.token(1));
    let asked = [
        (a0, "USE people; COUNT WHERE income > 123457 WITH EPS 0.1;"),
        (a0, "COUNT WHERE age < 41 AND sex = 'F' WITH EPS 0.2;"),
        (
            a1,
            "SUM income CLAMP (0, 987654) WITH EPS 0.1; MEAN age CLAMP (0, 120) WITH EPS 0.1;",
        ),
        (a1, "COUNT WHERE age < 20 OR income > 345678 WITH EPS 0.1;"),
        // From the record, free; refused over the cap; an error.
        (a0, "COUNT WHERE age < 41 AND sex = 'F' WITH EPS 0.2;"),
        (a0, "COUNT WHERE income > 55555 WITH EPS 0.25;"),
        (a1, "COUNT WHERE agee > 76543 WITH EPS 0.1;"),
    ];
    let mut sent = Vec::new();
    for (token, source) in asked {
        let body = teacher.run(token, source);
        numbers(&body["results"], &mut sent);
    }
    // The answers were sent: noisy values of thousands (and the row count, 10000).
    assert!(sent.len() > 10, "{sent:?}");
    sent.extend(asked.iter().map(|(_, source)| source.to_string()));
    let lines = teacher.lines_when(9, |l| l.contains("  a0  ") || l.contains("  a1  "));
    // No answer, first: the log but for its day lines (whose year could pass for a count).
    let log: Vec<&str> = lines
        .iter()
        .filter(|l| !l.starts_with("-- "))
        .map(String::as_str)
        .collect();
    let log = log.join("\n");
    for s in &sent {
        assert!(
            !log.contains(s.as_str()),
            "the log shows `{s}` of an answer or a statement:\n{log}"
        );
    }
    for typed in [
        "123457", "987654", "345678", "55555", "76543", "'F'", "WHERE", "income",
    ] {
        assert!(!log.contains(typed), "the log shows `{typed}`:\n{log}");
    }
    let rows = statement_lines(&lines);
    let expected: [(&str, &str, &str, &str); 8] = [
        ("a0", "USE", "answered", "0"),
        ("a0", "COUNT", "answered", "0.1"),
        ("a0", "COUNT", "answered", "0.2"),
        ("a1", "SUM", "answered", "0.1"),
        ("a1", "MEAN", "answered", "0.1"),
        ("a1", "COUNT", "answered", "0.1"),
        ("a0", "COUNT", "from record", "0"),
        ("a0", "COUNT", "over budget", "0"),
    ];
    assert!(rows.len() >= 9, "{lines:#?}");
    for (row, (who, kind, outcome, eps)) in rows.iter().zip(expected) {
        // time, analyst, dataset, statement, outcome, eps, left
        assert_eq!(row.len(), 7, "{row:?}");
        assert_eq!(
            (
                row[1].as_str(),
                row[2].as_str(),
                row[3].as_str(),
                row[4].as_str(),
                row[5].as_str()
            ),
            (who, "people", kind, outcome, eps),
            "{lines:#?}"
        );
    }
    assert_eq!(&rows[8][3..5], ["COUNT", "error"], "{lines:#?}");
    // What is left, as the analysts' own budgets say.
    let left: Vec<&str> = rows.iter().map(|r| r[6].as_str()).collect();
    assert_eq!(
        left,
        ["0.5", "0.4", "0.2", "0.4", "0.3", "0.2", "0.2", "0.2", "0.2"]
    );
    // Local time, human-readable: the day on a line of its own, and `HH:MM:SS`.
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("-- ") && l.contains("local time")),
        "{lines:#?}"
    );
    let (ok, _, _) = teacher.stop();
    assert!(ok);
}

/// When the server stops: per analyst and dataset, the statements run and the budget spent
/// this run (not before it), and each dataset's budget over all its analysts.
#[test]
fn the_summary_on_exit_counts_this_runs_statements_and_spending() {
    let setup = Setup::new(3);
    let policy = setup.policy("budget = 1", &["0.5", "0.5", "0.5"], "");
    // Spending of an earlier run is not this run's.
    let first = Teacher::start(&policy, &setup.state(), &[]);
    first.run(setup.token(0), "COUNT WHERE age < 30 WITH EPS 0.05;");
    let (ok, out, _) = first.stop();
    assert!(ok);
    assert!(
        out.iter().any(|l| l.contains("a0") && l.contains(" 1 ")),
        "{out:#?}"
    );
    let teacher = Teacher::start(&policy, &setup.state(), &[]);
    teacher.run(
        setup.token(0),
        "COUNT WHERE age < 31 WITH EPS 0.1; COUNT WHERE age < 32 WITH EPS 0.1;",
    );
    teacher.run(
        setup.token(1),
        "COUNT WHERE age < 33 WITH EPS 0.25; SHOW BUDGET;",
    );
    teacher.run(setup.token(1), "COUNT WHERE nothing < 1 WITH EPS 0.1;");
    let (ok, out, err) = teacher.stop();
    assert!(ok, "{err:#?}");
    let start = out
        .iter()
        .position(|l| l.contains("this run, by analyst and dataset"))
        .unwrap_or_else(|| panic!("no summary: {out:#?}"));
    let rows: Vec<Vec<&str>> = out[start + 2..]
        .iter()
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.split_whitespace().collect())
        .collect();
    // a0: 2 statements, 0.2 this run (0.25 of 0.5 spent in all); a1: 3 statements, 0.25;
    // a2 ran nothing.
    assert_eq!(
        rows,
        [
            vec!["a0", "people", "2", "0.2", "0.25"],
            vec!["a1", "people", "3", "0.25", "0.25"]
        ],
        "{out:#?}"
    );
    assert!(
        out.iter()
            .any(|l| l
                == "dpq serve: dataset `people`: 0.5 of 1 spent by all its analysts, 0.5 left"),
        "{out:#?}"
    );
    assert!(err.iter().any(|l| l == "dpq serve: stopped"), "{err:#?}");
}

/// `--quiet`: no line per statement, and the summary all the same.
#[test]
fn quiet_prints_no_line_per_statement() {
    let setup = Setup::new(1);
    let policy = setup.policy("budget = 1", &["1"], "");
    let teacher = Teacher::start(&policy, &setup.state(), &["--quiet"]);
    let body = teacher.run(setup.token(0), "COUNT WHERE age < 30 WITH EPS 0.1;");
    assert_eq!(kinds(&body), ["count"], "{body}");
    let (ok, out, _) = teacher.stop();
    assert!(ok);
    assert!(statement_lines(&out).is_empty(), "{out:#?}");
    assert!(!out.iter().any(|l| l.starts_with("time ")), "{out:#?}");
    assert!(
        out.iter()
            .any(|l| l.contains("this run, by analyst and dataset")),
        "{out:#?}"
    );
}

/// `GET /v1/account`: the token's analyst and only their datasets, with their own budget, the
/// row count where it is public, and all analysts' budget only where the policy shows it.
#[test]
fn the_account_tells_an_analyst_their_datasets_and_what_is_left() {
    let setup = Setup::new(2);
    let policy = setup.policy("budget = 1", &["0.5", "0.5"], "");
    setup.add_other_dataset(
        &policy,
        "budget = 2\nneighbours = \"add_remove\"\nshow_dataset_budget = false",
        "1",
    );
    let teacher = Teacher::start(&policy, &setup.state(), &["--quiet"]);
    assert_eq!(teacher.get(None, "/v1/account").0, 401);
    assert_eq!(teacher.get(Some("dpq_wrong"), "/v1/account").0, 401);
    // a0's current table is the last of theirs attached, `other`: they USE `people`.
    teacher.run(
        setup.token(0),
        "USE people; COUNT WHERE age < 30 WITH EPS 0.1;",
    );
    teacher.run(setup.token(1), "COUNT WHERE age < 40 WITH EPS 0.2;");
    let (status, a0) = teacher.get(Some(setup.token(0)), "/v1/account");
    assert_eq!(status, 200, "{a0}");
    assert_eq!(a0["analyst"], "a0");
    let people = &a0["datasets"][0];
    assert_eq!(people["name"], "people", "{a0}");
    assert_eq!(people["n"], 10000, "{a0}");
    assert_eq!(
        people["budget"],
        serde_json::json!({"total": 0.5, "spent": 0.1, "remaining": 0.4}),
        "{a0}"
    );
    assert_eq!(
        people["dataset"],
        serde_json::json!({"total": 1.0, "spent": 0.3, "remaining": 0.7}),
        "{a0}"
    );
    let other = &a0["datasets"][1];
    assert_eq!(other["name"], "other", "{a0}");
    // n is private under add_remove; this dataset's policy hides its all-analysts budget.
    assert_eq!(other["n"], Value::Null, "{a0}");
    assert_eq!(other["dataset"], Value::Null, "{a0}");
    assert_eq!(other["budget"]["total"], 1.0, "{a0}");
    // a1 sees their own datasets only.
    let (_, a1) = teacher.get(Some(setup.token(1)), "/v1/account");
    assert_eq!(a1["analyst"], "a1");
    assert_eq!(a1["datasets"].as_array().map(Vec::len), Some(1), "{a1}");
    assert_eq!(a1["datasets"][0]["budget"]["spent"], 0.2, "{a1}");
    // Asking changes nothing in the analyst's session: their current table is still
    // `people`, though the account looked at `other` too.
    let body = teacher.run(setup.token(0), "SHOW BUDGET;");
    assert_eq!(body["results"][0]["json"]["table"], "people", "{body}");
}

/// `dpq connect` at a terminal greets with the server, the analyst and their datasets with
/// what each has left.
#[test]
fn connect_greets_with_the_server_the_analyst_and_what_is_left() {
    let setup = Setup::new(1);
    let policy = setup.policy("budget = 1", &["0.5"], "");
    let teacher = Teacher::start(&policy, &setup.state(), &["--quiet"]);
    teacher.run(setup.token(0), "COUNT WHERE age < 30 WITH EPS 0.1;");
    let home = tempfile::tempdir().expect("a home");
    let mut c = Command::new(env!("CARGO_BIN_EXE_dpq"));
    c.args(["connect", &teacher.url()])
        .env("DPQ_TOKEN", setup.token(0))
        .env("HOME", home.path())
        .env_remove("XDG_DATA_HOME")
        .env("COLUMNS", "80");
    let mut p = rexpect::session::spawn_command(c, Some(20_000)).expect("a pty");
    p.exp_string(&format!("Connected to {} as a0.", teacher.url()))
        .expect("the server and the analyst");
    p.exp_string("people (10000 rows): yours 0.4 of 0.5 (0.1 spent); all analysts' 0.9 of 1")
        .expect("the dataset and what is left");
    p.exp_string("dpq> ").expect("the prompt");
    drop(p);
    // Piped, the prompt prints results only: no greeting.
    let out = Command::new(env!("CARGO_BIN_EXE_dpq"))
        .args(["connect", &teacher.url()])
        .env("DPQ_TOKEN", setup.token(0))
        .stdin(Stdio::null())
        .output()
        .expect("dpq connect");
    assert!(out.status.success());
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// A policy file with `demo = true` first, then the rest of `policy`.
fn as_demo(policy: &Path, demo: bool) -> PathBuf {
    let text = std::fs::read_to_string(policy).expect("read");
    let path = policy.with_file_name(if demo { "demo.toml" } else { "real.toml" });
    std::fs::write(&path, format!("demo = {demo}\n{text}")).expect("write");
    path
}

/// Every file under `dir`, with its bytes.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("read dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                let bytes = std::fs::read(&p).expect("read");
                files.push((p, bytes));
            }
        }
    }
    files.sort();
    files
}

fn reset(policy: &Path, state: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_dpq"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--reset-demo",
            "--policy",
        ])
        .arg(policy)
        .arg("--state-dir")
        .arg(state)
        .stdin(Stdio::null())
        .output()
        .expect("dpq serve --reset-demo")
}

/// `--reset-demo` on a policy that is not a demo: refused with a clear message, and nothing
/// changes, in the state directory or anywhere else.
#[test]
fn a_reset_is_refused_for_a_policy_that_is_not_a_demo() {
    let setup = Setup::new(1);
    let plain = setup.policy("budget = 1", &["1"], "");
    for (k, policy) in [plain.clone(), as_demo(&plain, false)].iter().enumerate() {
        let teacher = Teacher::start(policy, &setup.state(), &["--quiet"]);
        teacher.run(
            setup.token(0),
            &format!("COUNT WHERE age < {} WITH EPS 0.1;", 30 + k),
        );
        teacher.stop();
        let before = snapshot(setup.dir.path());
        let out = reset(policy, &setup.state());
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{said}");
        assert!(
            said.contains("not marked as a demo (`demo = true`)"),
            "{said}"
        );
        assert!(out.stdout.is_empty(), "refused before serving");
        assert_eq!(snapshot(setup.dir.path()), before, "{said}");
    }
    let teacher = Teacher::start(&plain, &setup.state(), &["--quiet"]);
    let body = teacher.run(setup.token(0), "SHOW BUDGET;");
    assert_eq!(body["results"][0]["json"]["spent"], 0.2, "{body}");
}

/// `--reset-demo` on a demo: every budget starts anew, and nothing outside its state
/// directory changes; while a server runs on it, or when it holds anything else, it is
/// refused.
#[test]
fn a_demo_is_reset_for_the_next_class_and_nothing_else_is_touched() {
    let setup = Setup::new(2);
    let policy = as_demo(&setup.policy("budget = 1", &["0.5", "0.5"], ""), true);
    let teacher = Teacher::start(&policy, &setup.state(), &["--quiet"]);
    teacher.run(setup.token(0), "COUNT WHERE age < 30 WITH EPS 0.2;");
    teacher.run(setup.token(1), "COUNT WHERE age < 40 WITH EPS 0.3;");
    // Not while a server runs on the state directory.
    let out = reset(&policy, &setup.state());
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("stop it"), "{said}");
    let (ok, _, _) = teacher.stop();
    assert!(ok);
    // A file the teacher keeps in the state directory: nothing is removed.
    std::fs::write(setup.state().join("notes.txt"), "the class of Monday").expect("write");
    let out = reset(&policy, &setup.state());
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("`notes.txt`") && said.contains("nothing was removed"),
        "{said}"
    );
    std::fs::remove_file(setup.state().join("notes.txt")).expect("remove");
    // Outside the state directory: the policy, the data, the tokens' directory.
    let outside: Vec<(PathBuf, Vec<u8>)> = snapshot(setup.dir.path())
        .into_iter()
        .filter(|(p, _)| !p.starts_with(setup.state()))
        .collect();
    let mut child = Command::new(env!("CARGO_BIN_EXE_dpq"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--reset-demo",
            "--policy",
        ])
        .arg(&policy)
        .arg("--state-dir")
        .arg(setup.state())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dpq serve --reset-demo");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("listening");
    let addr: SocketAddr = line
        .trim()
        .strip_prefix("dpq serve: listening on http://")
        .unwrap_or_else(|| panic!("not started: {line}"))
        .parse()
        .expect("an address");
    let server = common::serve::Server { child, addr };
    for i in 0..2 {
        let b = server.budget(setup.token(i));
        assert_eq!(b["spent"], 0.0, "{b}");
        assert_eq!(b["dataset"]["spent"], 0.0, "{b}");
        assert_eq!(b["spending"], serde_json::json!([]), "{b}");
    }
    // A new class spends from a whole budget; the old answers are gone with it.
    let (_, body) = server.run(setup.token(0), "COUNT WHERE age < 30 WITH EPS 0.2;");
    assert_eq!(body["results"][0]["json"]["from_history"], false, "{body}");
    assert!(error(&body).is_empty(), "{body}");
    server.kill();
    let after: Vec<(PathBuf, Vec<u8>)> = snapshot(setup.dir.path())
        .into_iter()
        .filter(|(p, _)| !p.starts_with(setup.state()))
        .collect();
    assert_eq!(after, outside);
}

/// The classroom example is marked a demo, so the guide's reset works on it.
#[test]
fn the_classroom_example_is_a_demo() {
    let out = Command::new(env!("CARGO_BIN_EXE_dpq"))
        .args(["check-policy", "examples/classroom/policy.toml"])
        .output()
        .expect("dpq check-policy");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("A demo (`demo = true`)"), "{said}");
}
