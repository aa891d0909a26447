//! Load on `dpq serve`: 8 analysts' clients on loopback, each sending `COUNT`s one after
//! another to a 1-million-row dataset, for a fixed time. Prints statements per second and the
//! 50th and 99th percentile latency, for fresh releases (each one appended durably to the
//! ledger twice, spending then answer, before it is shown) and for identical queries (answered
//! from the record, no write). Beside them, in the same run, the latency of the disk's own
//! `write` + `fsync` of a ledger-sized line: a fresh release cannot be faster than two of them.
//! Twice: with padding off (`response_ms = 0`) and with the dataset's default deadline, which
//! holds each fresh release until the deadline after it began (answers from the record are
//! not held).
//!
//! `DPQ_BENCH_ROWS` (default 1,000,000), `DPQ_BENCH_SECONDS` (default 10 per phase) and
//! `DPQ_BENCH_CLIENTS` (default 8) change the set-up. Not a criterion benchmark: the figures
//! are throughput and tail latency under concurrency, which criterion does not measure.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` runs benches once as tests: skip.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let rows = env("DPQ_BENCH_ROWS", 1_000_000) as usize;
    let seconds = env("DPQ_BENCH_SECONDS", 10);
    let clients = env("DPQ_BENCH_CLIENTS", 8) as usize;
    let dir = tempfile::tempdir().expect("a temporary directory");
    common::write_people(&dir.path().join("people.csv"), rows).expect("the data is written");
    let tokens: Vec<(String, String)> = (0..clients)
        .map(|_| dpq::server::token::new_token())
        .collect();
    let mut policy = String::from(
        "[[dataset]]\nname = \"people\"\nid = \"bench\"\nsource = \"people.csv\"\nbudget = 1000000\n",
    );
    for (i, (_, hash)) in tokens.iter().enumerate() {
        policy.push_str(&format!(
            "[[analyst]]\nname = \"a{i}\"\ntoken_hash = \"{hash}\"\nbudgets = {{ people = 100000 }}\n"
        ));
    }
    println!("dpq serve, {rows} rows, {clients} clients, {seconds} s per phase");
    println!(
        "disk write+fsync of a ledger line: {}",
        fsync_latency(dir.path())
    );
    for (round, (padding, key)) in [("off", "response_ms = 0\n"), ("default", "")]
        .into_iter()
        .enumerate()
    {
        let policy_path = dir.path().join(format!("policy-{padding}.toml"));
        std::fs::write(
            &policy_path,
            policy.replacen("budget", &format!("{key}budget"), 1),
        )
        .expect("the policy is written");
        let mut server = Command::new(env!("CARGO_BIN_EXE_dpq"))
            .args(["serve", "--listen", "127.0.0.1:0", "--policy"])
            .arg(&policy_path)
            .arg("--state-dir")
            .arg(dir.path().join("state"))
            .stdout(Stdio::piped())
            .spawn()
            .expect("dpq serve starts");
        let mut line = String::new();
        BufReader::new(server.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the server says where it listens");
        let url = line
            .trim()
            .strip_prefix("dpq serve: listening on ")
            .expect("an address")
            .to_string();
        println!("padding {padding}:");
        let fresh = phase(&url, &tokens, seconds, |client, k| {
            format!(
                "COUNT WHERE income < {} WITH EPS 0.001;",
                // Each round its own statements: none is answered from the other's record.
                (round * clients + client) * 1_000_000 + k
            )
        });
        println!("  fresh releases:          {fresh}");
        let repeated = phase(&url, &tokens, seconds, |_, _| {
            "COUNT WHERE age < 30 WITH EPS 0.001;".to_string()
        });
        println!("  identical (from record): {repeated}");
        let _ = server.kill();
        let _ = server.wait();
    }
}

/// Every client sends statements one after another for `seconds`; the throughput and the
/// latency percentiles over all of them.
fn phase(
    url: &str,
    tokens: &[(String, String)],
    seconds: u64,
    statement: impl Fn(usize, usize) -> String + Sync,
) -> String {
    let until = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut latencies: Vec<Duration> = std::thread::scope(|s| {
        let handles: Vec<_> = tokens
            .iter()
            .enumerate()
            .map(|(client, (token, _))| {
                let statement = &statement;
                s.spawn(move || {
                    let agent: ureq::Agent = ureq::Agent::config_builder()
                        .http_status_as_error(false)
                        .build()
                        .into();
                    let mut out = Vec::new();
                    let mut k = 0;
                    while Instant::now() < until {
                        let body =
                            serde_json::json!({ "source": statement(client, k) }).to_string();
                        let t = Instant::now();
                        let mut r = agent
                            .post(format!("{url}/v1/run"))
                            .header("Authorization", format!("Bearer {token}"))
                            .content_type("application/json")
                            .send(body.as_bytes())
                            .expect("the server answers");
                        let text = r.body_mut().read_to_string().expect("a body");
                        out.push(t.elapsed());
                        assert!(text.contains("\"kind\":\"count\""), "{text}");
                        k += 1;
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a client"))
            .collect()
    });
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize];
    format!(
        "{:.0} statements/s, p50 {:.2} ms, p99 {:.2} ms ({} statements)",
        latencies.len() as f64 / elapsed,
        at(0.50).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3,
        latencies.len()
    )
}

/// The median latency of appending a 300-byte line to a file and `fsync`ing it, on the disk
/// the ledgers are on.
fn fsync_latency(dir: &std::path::Path) -> String {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("fsync-probe"))
        .expect("a probe file");
    let line = [b'x'; 300];
    let mut times: Vec<Duration> = (0..500)
        .map(|_| {
            let t = Instant::now();
            f.write_all(&line).expect("write");
            f.sync_data().expect("fsync");
            t.elapsed()
        })
        .collect();
    times.sort();
    format!(
        "p50 {:.3} ms, p99 {:.3} ms",
        times[250].as_secs_f64() * 1e3,
        times[495].as_secs_f64() * 1e3
    )
}
