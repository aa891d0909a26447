//! `dpq serve` tested as analysts meet it: the real binary on loopback, real HTTP clients,
//! racing analysts, caps, tokens, refused statements, malformed and slow clients, kill -9 and
//! restarts, policy changes, graceful shutdown, and `dpq connect` / `dpq run --server`.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::serve::{agent, error, kinds, Server, Setup};

#[test]
fn analysts_racing_for_the_last_of_a_dataset_get_exactly_what_it_allows() {
    let setup = Setup::new(5);
    let policy = setup.policy("budget = 1", &["1", "1", "1", "1", "1"], "");
    let server = Server::start(&setup, &policy);
    let answered: usize = std::thread::scope(|s| {
        let handles: Vec<_> = (0..5)
            .map(|i| {
                let server = &server;
                let token = setup.token(i).to_string();
                s.spawn(move || {
                    (0..10)
                        .filter(|k| {
                            let q = format!("COUNT WHERE age < {} WITH EPS 0.1;", 20 + 10 * i + k);
                            let (status, body) = server.run(&token, &q);
                            assert_eq!(status, 200, "{body}");
                            kinds(&body) == ["count"]
                        })
                        .count()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a client"))
            .sum()
    });
    assert_eq!(answered, 10);
    let budget = server.budget(setup.token(0));
    assert_eq!(budget["dataset"]["spent"], 1.0, "{budget}");
    assert_eq!(budget["dataset"]["remaining"], 0.0, "{budget}");
}

/// An analyst's cap holds on their own spending; another analyst goes on under the dataset's
/// total; and the dataset's total stops both.
#[test]
fn caps_hold_per_analyst_and_the_dataset_total_bounds_them_all() {
    let setup = Setup::new(2);
    let policy = setup.policy("budget = 0.5", &["0.3", "0.4"], "");
    let server = Server::start(&setup, &policy);
    let (a, b) = (setup.token(0), setup.token(1));
    for k in 0..3 {
        let (_, body) = server.run(a, &format!("COUNT WHERE age < {} WITH EPS 0.1;", 30 + k));
        assert_eq!(kinds(&body), ["count"], "{body}");
    }
    let (_, body) = server.run(a, "COUNT WHERE age < 50 WITH EPS 0.1;");
    assert!(error(&body).contains("budget exceeded"), "{body}");
    let (_, body) = server.run(b, "COUNT WHERE age < 60 WITH EPS 0.2;");
    assert_eq!(kinds(&body), ["count"], "{body}");
    // b has 0.2 of a cap left, but the dataset only 0.
    let (_, body) = server.run(b, "COUNT WHERE age < 61 WITH EPS 0.1;");
    assert!(
        error(&body).contains("too little budget left for all its analysts"),
        "{body}"
    );
    let budget = server.budget(b);
    assert_eq!(budget["spent"], 0.2, "{budget}");
    assert_eq!(budget["dataset"]["spent"], 0.5, "{budget}");
    // The analyst is not told where the server keeps its ledgers.
    assert_eq!(budget["ledger"], Value::Null, "{budget}");
}

/// A dataset whose policy accounts in zCDP (`accounting = "zcdp"`, `budget_rho`): analysts
/// ask Gaussian counts and histograms `WITH RHO`, pure counts are charged eps^2/2, the budget
/// says rho and its (epsilon, delta), and the dataset's rho bounds every analyst's.
#[test]
fn a_zcdp_dataset_is_served_in_rho() {
    let setup = Setup::new(2);
    let policy = setup.policy(
        "accounting = \"zcdp\"\nbudget_rho = 0.03\ncube = \"BY sex ('F', 'M')\"",
        &["0.02", "0.02"],
        "",
    );
    let server = Server::start(&setup, &policy);
    let (a, b) = (setup.token(0), setup.token(1));
    let (_, body) = server.run(
        a,
        "HISTOGRAM WITH RHO 0.01; COUNT WHERE age < 30 WITH EPS 0.1;",
    );
    assert_eq!(kinds(&body), ["histogram", "count"], "{body}");
    let count = &body["results"][1]["json"];
    assert_eq!(count["accounting"], "zcdp", "{body}");
    assert_eq!(count["rho_spent"], 0.005, "{body}");
    let budget = server.budget(a);
    assert_eq!(budget["accounting"], "zcdp", "{budget}");
    assert_eq!(budget["spent"], 0.015, "{budget}");
    let (eps, delta) = (
        budget["eps_delta"][0].as_f64(),
        budget["eps_delta"][1].as_f64(),
    );
    assert_eq!(delta, Some(1e-6), "{budget}");
    let want = dpq::privacy::zcdp::epsilon(0.015, 1e-6);
    assert!(eps.is_some_and(|e| (e - want).abs() < 1e-12), "{budget}");
    // b's 0.02 of a cap fits b, but not the dataset's 0.03 with a's 0.015 spent.
    let (_, body) = server.run(b, "COUNT WHERE age < 40 WITH RHO 0.02;");
    assert!(
        error(&body).contains("too little budget left for all its analysts"),
        "{body}"
    );
    let (_, body) = server.run(b, "COUNT WHERE age < 40 WITH RHO 0.01;");
    assert_eq!(kinds(&body), ["count"], "{body}");
    assert_eq!(body["results"][0]["json"]["rho"], 0.01, "{body}");
    // The accounting is the curator's: SET BUDGET is refused whatever its unit.
    let (_, body) = server.run(b, "SET BUDGET 1;");
    assert!(error(&body).contains("SET BUDGET"), "{body}");
}

/// No token, a wrong token, or another analyst's dataset: refused, and nothing changes.
#[test]
fn tokens_are_checked_and_analysts_see_only_their_datasets() {
    let setup = Setup::new(2);
    let policy = setup.policy("budget = 1", &["0.5", "0.5"], "");
    setup.add_other_dataset(&policy, "budget = 1", "0.5");
    let server = Server::start(&setup, &policy);
    let (status, body) = server.post(None, br#"{"source": "SHOW TABLES;"}"#);
    assert_eq!(status, 401, "{body}");
    let (status, _) = server.run("dpq_not-a-token", "COUNT WHERE age < 30 WITH EPS 0.1;");
    assert_eq!(status, 401);
    let (status, _) = server.get(Some("dpq_wrong"), "/v1/catalog");
    assert_eq!(status, 401);
    let (_, catalog) = server.get(Some(setup.token(1)), "/v1/catalog");
    assert_eq!(catalog["analyst"], "a1");
    assert_eq!(
        catalog["datasets"].as_array().map(Vec::len),
        Some(1),
        "{catalog}"
    );
    let (_, body) = server.run(setup.token(1), "USE other;");
    assert!(error(&body).contains("other"), "{body}");
    let (_, body) = server.run(setup.token(0), "USE other; SHOW TABLES;");
    assert_eq!(kinds(&body), ["using", "tables"], "{body}");
    // Nothing was spent by any of it.
    assert_eq!(server.budget(setup.token(1))["dataset"]["spent"], 0.0);
}

/// What an analyst may not do is refused with a clear error and changes nothing: the
/// dataset's ledger is the same byte for byte.
#[test]
fn statements_the_policy_forbids_change_nothing() {
    let setup = Setup::new(1);
    let policy = setup.policy(
        "budget = 1\nmax_eps_per_query = 0.2\nmechanisms = [\"laplace\"]\nstatements = [\"count\", \"within\"]",
        &["1"],
        "",
    );
    let server = Server::start(&setup, &policy);
    let a = setup.token(0);
    let (_, body) = server.run(a, "COUNT WHERE age < 30 WITH EPS 0.1;");
    assert_eq!(kinds(&body), ["count"], "{body}");
    let ledgers = setup.state().join("ledgers");
    let snapshot = || {
        let mut files: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&ledgers)
            .expect("ledgers")
            .map(|e| {
                let p = e.expect("entry").path();
                let bytes = std::fs::read(&p).expect("read");
                (p, bytes)
            })
            .collect();
        files.sort();
        files
    };
    let before = snapshot();
    for (statement, says) in [
        ("LOAD 'people.csv' AS mine;", "LOAD"),
        ("SET BUDGET 100;", "SET BUDGET"),
        ("SET SEED 7;", "SET SEED"),
        ("CUBE BY age (30);", "CUBE BY"),
        (
            "COUNT WHERE age < 31 WITH EPS 0.5;",
            "at most 0.2 per query",
        ),
        (
            "COUNT WHERE age < 32 WITH EPS 0.1 MECHANISM geometric;",
            "MECHANISM geometric",
        ),
        (
            "COUNT WHERE age < 33 WITH EPS 0.1 PRIOR p=0.3 PLOT 'x.svg';",
            "PLOT",
        ),
        (
            "COUNT WHERE age < 34 WITHIN 1 AT 0.95;",
            "at most 0.2 per query",
        ),
        ("SHOW HISTORY;", "history statements"),
        (
            "EXPLAIN COUNT WHERE age < 35 WITH EPS 0.1;",
            "explain statements",
        ),
        ("SIMULATE N 100 P 0.3 EPS (0.1) RUNS 100;", "lab statements"),
    ] {
        let (status, body) = server.run(a, statement);
        assert_eq!(status, 200, "{statement}: {body}");
        assert!(error(&body).contains(says), "{statement}: {body}");
        assert_eq!(snapshot(), before, "{statement} changed a ledger");
    }
    assert!(!setup.path("x.svg").exists());
    assert_eq!(server.budget(a)["spent"], 0.1);
}

/// Malformed, random and oversized bodies, and too many statements: refused with a status
/// and a reason, and the server goes on answering.
#[test]
fn malformed_and_oversized_requests_are_refused() {
    let setup = Setup::new(1);
    let mut policy = setup.policy("budget = 1", &["1"], "");
    let mut text = std::fs::read_to_string(&policy).expect("read");
    text.push_str("\n[limits]\nmax_request_bytes = 4096\nmax_statements = 5\n");
    policy = setup.path("limits.toml");
    std::fs::write(&policy, text).expect("write");
    let server = Server::start(&setup, &policy);
    let a = setup.token(0);
    // A simple, seeded generator: the same bodies every run.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..200 {
        let len = (x % 300) as usize;
        let body: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect();
        let (status, reply) = server.post(Some(a), &body);
        assert_eq!(status, 400, "{reply}");
        assert!(reply["problem"].is_string(), "{reply}");
    }
    let big = serde_json::json!({ "source": "-- x\n".repeat(2000) }).to_string();
    let (status, reply) = server.post(Some(a), big.as_bytes());
    assert_eq!(status, 413, "{reply}");
    let (status, reply) = server.run(a, &"SHOW TABLES;".repeat(6));
    assert_eq!(status, 400, "{reply}");
    assert!(reply["problem"]
        .as_str()
        .is_some_and(|p| p.contains("at most 5")));
    let (status, reply) = server.run(a, "COUNT WHERE age < 30 WITH EPS 0.1;");
    assert_eq!((status, kinds(&reply)), (200, vec!["count".to_string()]));
}

/// A client that sends half a request and then nothing does not stall anyone: others are
/// answered meanwhile, and the slow one is cut off after the body's time limit.
#[test]
fn a_slow_client_does_not_stall_the_others() {
    let setup = Setup::new(2);
    let mut text =
        std::fs::read_to_string(setup.policy("budget = 1", &["0.5", "0.5"], "")).expect("read");
    text.push_str("\n[limits]\nbody_millis = 1500\n");
    let policy = setup.path("slow.toml");
    std::fs::write(&policy, text).expect("write");
    let server = Server::start(&setup, &policy);
    let mut slow = TcpStream::connect(server.addr).expect("connect");
    write!(
        slow,
        "POST /v1/run HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"source\": \"SHOW",
        setup.token(0)
    )
    .expect("write half a request");
    let started = Instant::now();
    for k in 0..5 {
        let (status, body) = server.run(
            setup.token(1),
            &format!("COUNT WHERE age < {} WITH EPS 0.01;", 30 + k),
        );
        assert_eq!((status, kinds(&body)), (200, vec!["count".to_string()]));
    }
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "others waited for the slow client"
    );
    slow.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut reply = String::new();
    let _ = slow.read_to_string(&mut reply);
    assert!(reply.starts_with("HTTP/1.1 408"), "{reply}");
}

/// kill -9 of the server during a burst of requests, then a restart: the dataset's recorded
/// spending is never below what the clients were shown, and each analyst's own neither.
#[test]
fn kill_9_during_a_burst_loses_no_spending_that_was_shown() {
    let setup = Setup::new(3);
    let policy = setup.policy("budget = 1000", &["300", "300", "300"], "");
    let server = Server::start(&setup, &policy);
    let url = server.url();
    let shown: Vec<usize> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..3)
            .map(|i| {
                let token = setup.token(i).to_string();
                let url = url.clone();
                s.spawn(move || {
                    let mut answered = 0;
                    for k in 0..100_000 {
                        let body = serde_json::json!({
                            "source": format!("COUNT WHERE age < {k} OR income < {} WITH EPS 0.01;", i * 1_000_000 + k)
                        })
                        .to_string();
                        let r = agent()
                            .post(format!("{url}/v1/run"))
                            .header("Authorization", format!("Bearer {token}"))
                            .content_type("application/json")
                            .send(body.as_bytes());
                        let Ok(mut r) = r else { break };
                        let Ok(text) = r.body_mut().read_to_string() else { break };
                        if text.contains("\"kind\":\"count\"") {
                            answered += 1;
                        }
                    }
                    answered
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(1500));
        server.kill();
        handles
            .into_iter()
            .map(|h| h.join().expect("a client"))
            .collect()
    });
    assert!(shown.iter().sum::<usize>() > 10, "the burst ran: {shown:?}");
    let server = Server::start(&setup, &policy);
    let mut dataset_spent = 0.0;
    for (i, &n) in shown.iter().enumerate() {
        let budget = server.budget(setup.token(i));
        let own = budget["spent"].as_f64().expect("spent");
        assert!(
            own >= 0.01 * n as f64 - 1e-9,
            "analyst {i}: {own} < {n} answers: {budget}"
        );
        dataset_spent = budget["dataset"]["spent"].as_f64().expect("spent");
    }
    let total_shown = 0.01 * shown.iter().sum::<usize>() as f64;
    assert!(
        dataset_spent >= total_shown - 1e-9,
        "{dataset_spent} < {total_shown}"
    );
}

/// A new policy (another budget, other caps, the file moved and re-exported with a trailing
/// newline) never resets what was spent: the ledger is the dataset's identity's.
#[test]
fn policy_changes_never_reset_spending() {
    let setup = Setup::new(1);
    let policy = setup.policy("budget = 1", &["0.5"], "");
    let server = Server::start(&setup, &policy);
    let (_, body) = server.run(setup.token(0), "COUNT WHERE age < 30 WITH EPS 0.3;");
    assert_eq!(kinds(&body), ["count"], "{body}");
    drop(server);
    let mut data = std::fs::read(setup.path("people.csv")).expect("read");
    data.extend_from_slice(b"\n");
    std::fs::create_dir(setup.path("export")).expect("mkdir");
    std::fs::write(setup.path("export/people-2.csv"), data).expect("write");
    let text = std::fs::read_to_string(&policy)
        .expect("read")
        .replace(
            "source = \"people.csv\"",
            "source = \"export/people-2.csv\"",
        )
        .replace("budget = 1\n", "budget = 0.2\n")
        .replace("people = 0.5", "people = 0.2");
    std::fs::write(&policy, text).expect("write");
    let server = Server::start(&setup, &policy);
    let budget = server.budget(setup.token(0));
    assert_eq!(budget["spent"], 0.3, "{budget}");
    assert_eq!(budget["remaining"], 0.0, "{budget}");
    assert_eq!(budget["dataset"]["spent"], 0.3, "{budget}");
    let (_, body) = server.run(setup.token(0), "COUNT WHERE age < 40 WITH EPS 0.01;");
    assert!(error(&body).contains("budget exceeded"), "{body}");
}

/// An analyst's history, identical queries and inference are their own: another analyst's
/// answers are neither shown to them nor used in their estimates.
#[test]
fn each_analyst_sees_only_their_own_history() {
    let setup = Setup::new(2);
    let policy = setup.policy("budget = 1\ncube = \"BY age (30)\"", &["0.5", "0.5"], "");
    let server = Server::start(&setup, &policy);
    let (a, b) = (setup.token(0), setup.token(1));
    let (_, body) = server.run(a, "COUNT WHERE age < 30 WITH EPS 0.2;");
    let noisy = body["results"][0]["json"]["noisy"].as_f64().expect("noisy");
    let (_, body) = server.run(b, "SHOW HISTORY; ESTIMATE COUNT WHERE age < 30;");
    assert_eq!(kinds(&body), ["history"], "{body}");
    assert!(body["results"][0]["json"]["releases"]
        .as_array()
        .is_some_and(Vec::is_empty));
    assert!(
        error(&body).contains("not estimable") || error(&body).contains("evidence"),
        "{body}"
    );
    let (_, body) = server.run(b, "COUNT WHERE age < 30 WITH EPS 0.2;");
    let json = &body["results"][0]["json"];
    assert_eq!(json["from_history"], false, "{body}");
    assert_ne!(json["noisy"].as_f64(), Some(noisy));
    // The audit log says who asked what and what it cost, never an answer.
    let audit = std::fs::read_to_string(setup.state().join("audit.log")).expect("audit");
    assert!(audit.contains("\"analyst\":\"a0\"") && audit.contains("\"analyst\":\"a1\""));
    assert!(!audit.contains(&noisy.to_string()), "{audit}");
    assert!(!audit.contains("noisy"), "{audit}");
}

/// SIGTERM stops the server once its requests are answered, with exit status 0.
#[test]
fn sigterm_stops_the_server_gracefully() {
    let setup = Setup::new(1);
    let policy = setup.policy("budget = 1", &["1"], "");
    let mut server = Server::start(&setup, &policy);
    let (status, _) = server.get(None, "/v1/health");
    assert_eq!(status, 200);
    let pid = server.child.id();
    let killed = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let status = server.child.wait().expect("the server ends");
    assert!(status.success(), "{status:?}");
}

/// `dpq run --server` and `dpq connect`: results as local dpq prints them, errors placed in
/// the user's own file, and the token from `--token-file` or `DPQ_TOKEN`.
#[test]
fn scripts_and_the_prompt_run_on_the_server() {
    let setup = Setup::new(1);
    let policy = setup.policy("budget = 1", &["1"], "");
    let server = Server::start(&setup, &policy);
    let script = setup.path("ask.dpq");
    std::fs::write(
        &script,
        "USE people;\nCOUNT WHERE age < 30 WITH EPS 0.1;\nCOUNT WHERE agee < 30 WITH EPS 0.1;\n",
    )
    .expect("write");
    let token_file = setup.path("token");
    std::fs::write(&token_file, format!("{}\n", setup.token(0))).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_dpq"))
        .args(["run", "--server", &server.url(), "--token-file"])
        .arg(&token_file)
        .arg(&script)
        .output()
        .expect("dpq run --server");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("noisy count"), "{stdout}");
    assert!(
        stderr.starts_with(&format!("{}:3:13: unknown column", script.display())),
        "{stderr}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_dpq"))
        .args(["--format", "json", "connect", &server.url()])
        .env("DPQ_TOKEN", setup.token(0))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin
                .take()
                .expect("stdin")
                .write_all(b"SHOW BUDGET;\n")?;
            c.wait_with_output()
        })
        .expect("dpq connect");
    let line = String::from_utf8_lossy(&out.stdout);
    let budget: Value = serde_json::from_str(line.trim()).expect("one JSON object");
    assert_eq!(budget["spent"], 0.1, "{budget}");
    let out = Command::new(env!("CARGO_BIN_EXE_dpq"))
        .args(["--seed", "3", "connect", &server.url()])
        .env("DPQ_TOKEN", setup.token(0))
        .output()
        .expect("dpq connect --seed");
    assert_eq!(out.status.code(), Some(2));
}

/// The classroom of `examples/classroom`, as the README's guide runs it: the teacher serves
/// the policy, a student runs the questions script, and the class's budget runs out for
/// everyone.
#[test]
fn the_classroom_example_runs_as_its_guide_says() {
    let state = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_dpq"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--policy",
            "examples/classroom/policy.toml",
            "--allow-public-tokens",
            "--state-dir",
        ])
        .arg(state.path())
        .stdout(Stdio::piped())
        .spawn()
        .expect("dpq serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("listening");
    let url = line
        .trim()
        .strip_prefix("dpq serve: listening on ")
        .expect("an address")
        .to_string();
    let server = Server {
        child,
        addr: url
            .trim_start_matches("http://")
            .parse()
            .expect("an address"),
    };
    let student = |name: &str, args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_dpq"))
            .args(["--format", "json", "run", "--server", &url, "--token-file"])
            .arg(format!("examples/classroom/tokens/{name}.token"))
            .args(args)
            .output()
            .expect("dpq run --server")
    };
    let out = student("alice", &["examples/classroom/questions.dpq"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let results: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(results[4]["kind"], "estimate", "{text}");
    assert_eq!(results[5]["spent"], 0.2, "{text}");
    // bob and carol ask until the class's budget is gone: 1.0 in all, 0.25 at a time.
    let token = |name: &str| {
        std::fs::read_to_string(format!("examples/classroom/tokens/{name}.token"))
            .expect("a token")
            .trim()
            .to_string()
    };
    let (bob, carol) = (token("bob"), token("carol"));
    // Under NEIGHBOURS replace answers over disjoint cells add up pairwise, so the class's
    // cost grows more slowly than the sum of the epsilons: ask until the class is refused.
    let mut refusals = Vec::new();
    for (k, q) in [
        "sex = 'F'",
        "sex = 'M'",
        "age >= 65",
        "age < 30",
        "age >= 30 AND age < 65",
        "age >= 65 AND sex = 'F'",
        "age < 30 AND sex = 'M'",
        "age >= 30",
    ]
    .iter()
    .enumerate()
    {
        let who = if k % 2 == 0 { &bob } else { &carol };
        let (_, body) = server.run(who, &format!("COUNT WHERE {q} WITH EPS 0.25;"));
        if !error(&body).is_empty() {
            refusals.push(error(&body));
        }
    }
    assert!(
        refusals
            .iter()
            .any(|e| e.contains("too little budget left for all its analysts")),
        "{refusals:?}"
    );
    let class = server.budget(&carol)["dataset"].clone();
    let spent = class["spent"].as_f64().expect("spent");
    assert!(spent > 0.75 && spent <= 1.0, "{class}");
}

/// Sums over a served dataset's cube (`add_remove`): each analyst's sums are charged on the
/// cells they cover, the dataset's total per cell bounds them all, and each analyst's
/// `ESTIMATE SUM` combines their own sums, for free.
#[test]
fn sums_over_a_served_cube_are_charged_per_cell_and_estimated_free() {
    let setup = Setup::new(2);
    let policy = setup.policy(
        "budget = 1\nneighbours = \"add_remove\"\ncube = \"BY sex ('F', 'M')\"",
        &["1", "1"],
        "",
    );
    let server = Server::start(&setup, &policy);
    let (a, b) = (setup.token(0), setup.token(1));
    let (_, body) = server.run(
        a,
        "SUM income CLAMP (0, 100000) WHERE sex = 'F' WITH EPS 0.6;
         SUM income CLAMP (0, 100000) WHERE sex = 'M' WITH EPS 0.6;
         ESTIMATE SUM income CLAMP (0, 100000) WHERE sex = 'F' OR sex = 'M';",
    );
    assert_eq!(kinds(&body), ["sum", "sum", "estimate"], "{body}");
    let noisy = |i: usize| body["results"][i]["json"]["noisy"].as_f64().expect("a sum");
    let estimate = body["results"][2]["json"]["estimate"]
        .as_f64()
        .expect("an estimate");
    assert!(
        (estimate - (noisy(0) + noisy(1))).abs() < 1e-6 * estimate,
        "{body}"
    );
    let budget = server.budget(a);
    assert_eq!(budget["spent"], 0.6, "{budget}");
    // b may not spend past what the dataset's cells hold, whatever b's own cap.
    let (_, body) = server.run(
        b,
        "MEAN income CLAMP (0, 100000) WHERE sex = 'F' WITH EPS 0.6;",
    );
    assert!(
        error(&body).contains("too little budget left for all its analysts"),
        "{body}"
    );
    let (_, body) = server.run(
        b,
        "SUM income CLAMP (0, 100000) WHERE sex = 'F' WITH EPS 0.4;",
    );
    assert_eq!(kinds(&body), ["sum"], "{body}");
    // b's own history holds no sum of M: b cannot estimate it from a's answers' record.
    let (_, body) = server.run(b, "ESTIMATE SUM income CLAMP (0, 100000) WHERE sex = 'M';");
    assert!(error(&body).contains("cannot estimate"), "{body}");
}

/// Served datasets whose rows stay where they are: Parquet files, and (with a test server) a
/// PostgreSQL table, each under the curator's id, answered through the same statements, and
/// checked by `dpq check-policy` without showing the connection string.
#[test]
fn parquet_and_postgres_datasets_are_served() {
    let setup = Setup::new(1);
    std::fs::copy("examples/data/people.parquet", setup.path("people.parquet"))
        .expect("copy the Parquet example");
    let mut policy = String::from(
        "[[dataset]]\nname = \"pq\"\nid = \"people-parquet\"\nsource = \"people.parquet\"\nbudget = 1\n",
    );
    let conninfo = common::postgres_server();
    if let Some(c) = &conninfo {
        let table = format!("served_{}", std::process::id());
        let mut client = postgres::Client::connect(c, postgres::NoTls).expect("the server");
        client
            .batch_execute(&format!(
                "DROP TABLE IF EXISTS {table}; CREATE TABLE {table} AS \
                 SELECT g AS id, 18 + g % 70 AS age FROM generate_series(1, 500) g"
            ))
            .expect("the table");
        policy.push_str(&format!(
            "\n[[dataset]]\nname = \"db\"\nid = \"people-db\"\npostgres = \"{c}\"\ntable = \"{table}\"\nbudget = 1\n"
        ));
    }
    let budgets = if conninfo.is_some() {
        "{ pq = 0.5, db = 0.5 }"
    } else {
        "{ pq = 0.5 }"
    };
    policy.push_str(&format!(
        "\n[[analyst]]\nname = \"a0\"\ntoken_hash = \"{}\"\nbudgets = {budgets}\n",
        setup.tokens[0].1
    ));
    let path = setup.path("policy.toml");
    std::fs::write(&path, &policy).expect("write the policy");
    let check = Command::new(env!("CARGO_BIN_EXE_dpq"))
        .arg("check-policy")
        .arg(&path)
        .output()
        .expect("dpq check-policy");
    let said = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success(),
        "{said} {}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(said.contains("people.parquet"), "{said}");
    if let Some(c) = &conninfo {
        assert!(said.contains("PostgreSQL table served_"), "{said}");
        assert!(
            !said.contains(c.as_str()),
            "the connection string is shown: {said}"
        );
    }
    let server = Server::start(&setup, &path);
    let a = setup.token(0);
    let (_, body) = server.run(a, "USE pq; COUNT WHERE age < 30 WITH EPS 0.1; SHOW BUDGET;");
    assert_eq!(kinds(&body), ["using", "count", "budget"], "{body}");
    assert_eq!(body["results"][2]["json"]["spent"], 0.1, "{body}");
    if conninfo.is_some() {
        let (_, body) = server.run(a, "USE db; COUNT WHERE age < 30 WITH EPS 0.2; SHOW BUDGET;");
        assert_eq!(kinds(&body), ["using", "count", "budget"], "{body}");
        assert_eq!(body["results"][2]["json"]["spent"], 0.2, "{body}");
        // The table's rows are asked at each question: one more row is a changed table.
        let mut client =
            postgres::Client::connect(conninfo.as_deref().unwrap_or_default(), postgres::NoTls)
                .expect("the server");
        client
            .batch_execute(&format!(
                "INSERT INTO served_{} VALUES (0, 20)",
                std::process::id()
            ))
            .expect("a row");
        let (_, body) = server.run(a, "USE db; COUNT WHERE age < 40 WITH EPS 0.2;");
        assert!(error(&body).contains("changed"), "{body}");
        let budget = server.budget(a);
        assert_eq!(
            budget["spent"], 0.2,
            "nothing spent on the refusal: {budget}"
        );
    }
}
