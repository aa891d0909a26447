//! Load on `dpq serve`: 8 analysts' clients on loopback, each sending `COUNT`s one after
//! another to a 1-million-row dataset, for a fixed time. Prints statements per second and the
//! 50th and 99th percentile latency, for fresh releases (each one appended durably to the
//! ledger twice, spending then answer, before it is shown) and for identical queries (answered
//! from the record, no write). Beside them, in the same run, the latency of the disk's own
//! `write` + `fsync` of a ledger-sized line: a fresh release cannot be faster than two of them.
//! Fresh releases with padding off (`response_ms = 0`) are timed against the same server with
//! its state directory on tmpfs (`/dev/shm`), where an `fsync` flushes nothing, round by round;
//! the server's summary at SIGTERM says how many `fsync`s made its ledger lines durable (group
//! commit: releases that reach the disk together share one). Then, on the disk, with padding
//! off and with the dataset's default deadline, which holds each fresh release until the
//! deadline after it began (answers from the record are not held).
//!
//! `DPQ_BENCH_ROWS` (default 1,000,000), `DPQ_BENCH_SECONDS` (default 10 per phase) and
//! `DPQ_BENCH_CLIENTS` (default 8) and `DPQ_BENCH_ROUNDS` (default 3) change the set-up. Not a criterion benchmark: the figures
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
    let rounds = env("DPQ_BENCH_ROUNDS", 3);
    let dir = tempfile::tempdir().expect("a temporary directory");
    // The same server with its state on tmpfs, where an fsync flushes nothing: the rate it
    // makes is what the work alone allows.
    let memory = tempfile::tempdir_in("/dev/shm").expect("a directory on /dev/shm (tmpfs)");
    common::write_people(&dir.path().join("people.csv"), rows).expect("the data is written");
    let tokens: Vec<(String, String)> = (0..clients)
        .map(|_| dpq::server::token::new_token())
        .collect();
    let mut policy = format!(
        "[[dataset]]\nname = \"people\"\nid = \"bench\"\nsource = \"{}\"\nbudget = 1000000\n",
        dir.path().join("people.csv").display()
    );
    for (i, (_, hash)) in tokens.iter().enumerate() {
        policy.push_str(&format!(
            "[[analyst]]\nname = \"a{i}\"\ntoken_hash = \"{hash}\"\nbudgets = {{ people = 100000 }}\n"
        ));
    }
    let policy_path = |padding: &str, key: &str| {
        let path = dir.path().join(format!("policy-{padding}.toml"));
        std::fs::write(&path, policy.replacen("budget", &format!("{key}budget"), 1))
            .expect("the policy is written");
        path
    };
    let (off, default) = (
        policy_path("off", "response_ms = 0\n"),
        policy_path("default", ""),
    );
    let (disk, tmpfs) = (dir.path().join("state"), memory.path().join("state"));
    println!("dpq serve, {rows} rows, {clients} clients, {seconds} s per phase");
    println!(
        "disk write+fsync of a ledger line: {}",
        fsync_latency(dir.path())
    );
    let mut phases = 0..;
    let fresh = |p: usize| {
        move |client: usize, k: usize| {
            // Each phase its own statements: none is answered from another's record.
            format!(
                "COUNT WHERE income < {} WITH EPS 0.001;",
                (p * clients + client) * 1_000_000 + k
            )
        }
    };
    // Fresh releases, padding off, the ledger on the disk and on tmpfs, interleaved round by
    // round (load on the machine changes from minute to minute: the ratio is taken per round).
    println!("padding off, fresh releases, {rounds} rounds:");
    let mut ratios = Vec::new();
    for round in 0..rounds {
        let mut rates = [0.0; 2];
        for (i, (name, state)) in [("disk ", &disk), ("tmpfs", &tmpfs)]
            .into_iter()
            .enumerate()
        {
            let server = Server::start(&off, state);
            let stats = phase(
                &server.url,
                &tokens,
                seconds,
                fresh(phases.next().unwrap_or(0)),
            );
            let (lines, fsyncs) = server.stop();
            rates[i] = stats.rate;
            println!(
                "  round {round} {name}: {stats}; {lines} ledger lines, {fsyncs} fsyncs ({:.3} a release)",
                fsyncs as f64 / stats.count as f64
            );
        }
        ratios.push(rates[1] / rates[0]);
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "  tmpfs rate / disk rate: median {:.2} [{:.2}, {:.2}]",
        ratios[ratios.len() / 2],
        ratios[0],
        ratios[ratios.len() - 1]
    );
    for (padding, policy) in [("off", &off), ("default", &default)] {
        let server = Server::start(policy, &disk);
        println!("padding {padding}, ledger on the disk:");
        let stats = phase(
            &server.url,
            &tokens,
            seconds,
            fresh(phases.next().unwrap_or(0)),
        );
        println!("  fresh releases:          {stats}");
        let repeated = phase(&server.url, &tokens, seconds, |_, _| {
            "COUNT WHERE age < 30 WITH EPS 0.001;".to_string()
        });
        println!("  identical (from record): {repeated}");
        server.stop();
    }
}

/// A `dpq serve` process.
struct Server {
    child: std::process::Child,
    url: String,
}

impl Server {
    fn start(policy: &std::path::Path, state: &std::path::Path) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_dpq"))
            .args(["serve", "--quiet", "--listen", "127.0.0.1:0", "--policy"])
            .arg(policy)
            .arg("--state-dir")
            .arg(state)
            .stdout(Stdio::piped())
            .spawn()
            .expect("dpq serve starts");
        let mut line = String::new();
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        out.read_line(&mut line)
            .expect("the server says where it listens");
        let url = line
            .trim()
            .strip_prefix("dpq serve: listening on ")
            .expect("an address")
            .to_string();
        child.stdout = Some(out.into_inner());
        Server { child, url }
    }

    /// Stops the server with SIGTERM; the ledger lines it wrote and the fsyncs that made
    /// them durable, from its summary.
    fn stop(mut self) -> (u64, u64) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(
            &mut self.child.stdout.take().expect("stdout"),
            &mut text,
        );
        let _ = self.child.wait();
        let line = text
            .lines()
            .find(|l| l.contains("ledger line(s) written"))
            .unwrap_or_default();
        let numbers: Vec<u64> = line.split(' ').filter_map(|w| w.parse().ok()).collect();
        match numbers[..] {
            [lines, fsyncs] => (lines, fsyncs),
            _ => (0, 0),
        }
    }
}

/// Throughput and latency of a phase.
struct Stats {
    rate: f64,
    p50: Duration,
    p99: Duration,
    count: usize,
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.0} statements/s, p50 {:.2} ms, p99 {:.2} ms ({} statements)",
            self.rate,
            self.p50.as_secs_f64() * 1e3,
            self.p99.as_secs_f64() * 1e3,
            self.count
        )
    }
}

/// Every client sends statements one after another for `seconds`; the throughput and the
/// latency percentiles over all of them.
fn phase(
    url: &str,
    tokens: &[(String, String)],
    seconds: u64,
    statement: impl Fn(usize, usize) -> String + Sync,
) -> Stats {
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
    Stats {
        rate: latencies.len() as f64 / elapsed,
        p50: at(0.50),
        p99: at(0.99),
        count: latencies.len(),
    }
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
