//! A Spark table through Spark Connect (issue 26, item 6): dpq's questions against PySpark's
//! own versions of them, on the same server in the same run, and dpq's memory at two sizes.
//!
//! The table is `DPQ_BENCH_ROWS` rows (default 10^8) generated inside Spark and never
//! written out: a persistent view over `range` (`dpq_bench_spark_<rows>`, made through the
//! client dpq re-exports, so that dpq's session and PySpark's both see it), with an integer
//! `cell` of 50 values, a text `category` of 50 values, an `age` from 18 to 90 and an `amount`
//! from 0 to 999. Four questions, each one aggregate query sent by dpq's library
//! (`Source::Spark`):
//!
//! | question | dpq | PySpark (`benches/peers_spark.py`) |
//! |---|---|---|
//! | `cells_by_cell` | `count_cells`, `cell` cut at 1..48: 50 cells | `groupBy("cell").count()` |
//! | `cells_by_category` | `count_cells`, 48 of the 50 `category` values: 50 cells | `groupBy("category").count()` |
//! | `count_age` | `count`, `age <= 30` | `filter(col("age") <= 30).count()` |
//! | `sum_amount` | `sum_clamped`, `amount` clamped to (100, 900) | `sum(least(greatest(amount, 100), 900))` |
//!
//! PySpark runs in a process of its own (the venv of `.ci/spark.sh`, or `DPQ_SPARK_VENV`),
//! started and connected once, then driven over stdin and stdout; it times each question
//! itself, so neither its start-up nor the pipe is counted. Each size begins with a pass of
//! the four questions on both sides, untimed (Spark compiles each plan's code on first
//! sight), which checks that both counted the same rows and, with `ss` (iproute2's socket
//! statistics), how many bytes each process received from the server for each question:
//! only the aggregates cross the wire. Then `DPQ_BENCH_ROUNDS` rounds (default 7), each
//! question asked of both sides back to back, who goes first alternating by round; the ratio
//! PySpark / dpq of each round, with its median, least and greatest.
//!
//! dpq's memory is read from `/proc/self/status`: the resident set before a size's `LOAD`
//! (`open_spark`), and the peak (`VmHWM`, reset through `/proc/self/clear_refs` then) after
//! the first pass and after every round; 10^6 rows first, then `DPQ_BENCH_ROWS`. dpq's side
//! holds only the schema and the answers, so the peak should not grow with the rows.
//!
//! `DPQ_TEST_SPARK` names the server (`export DPQ_TEST_SPARK="$(bash .ci/spark.sh)"`);
//! without it the bench prints a note and stops. The views are dropped at the end.
//!
//! Not a criterion benchmark: the figure is a paired comparison with another process, round
//! by round, and a question over 10^8 rows takes seconds.

// The Spark Connect client's own error type is large; the bench only expects success.
#![allow(clippy::result_large_err)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use dpq::data::{open_spark, Buckets, Clamp, CmpOp, Predicate, Source, Value};
use dpq::spark_connect::{SparkSession, SparkSessionBuilder};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// The smaller size, against which the memory at `DPQ_BENCH_ROWS` is compared.
const SMALL: u64 = 1_000_000;

/// The cuts of `cell` (1 to 48: 49 bins and "missing") and the listed values of `category`
/// (48 of its 50: 48 cells, "other" and "missing"): 50 cells each.
const LISTED: u32 = 48;
const CELLS: usize = LISTED as usize + 2;

/// The four questions, by the name the peer knows them by, in the order of the report.
const QUESTIONS: [&str; 4] = [
    "cells_by_cell",
    "cells_by_category",
    "count_age",
    "sum_amount",
];

/// The view of `rows` rows over `range`: nothing is stored, every question computes its rows.
fn create_view(admin: &SparkSession, view: &str, rows: u64) {
    admin
        .sql(&format!(
            "CREATE OR REPLACE VIEW {view} AS SELECT id, \
               CAST(id % 50 AS BIGINT) AS cell, \
               concat('c', CAST(id % 50 AS STRING)) AS category, \
               CAST(18 + (id * 2654435761) % 73 AS BIGINT) AS age, \
               CAST((id * 40503) % 1000 AS BIGINT) AS amount \
             FROM range({rows})"
        ))
        .and_then(|df| df.collect())
        .expect("the view is made");
}

/// What a question found: a histogram's cells, a count or a sum.
#[derive(Debug, PartialEq)]
enum Answer {
    Cells(Vec<u64>),
    Count(u64),
    Sum(i128),
}

/// dpq's answer to `question`, through its library.
fn ask_dpq(source: &Source, question: &str) -> Answer {
    let column = |name: &str| source.column_index(name).expect("the view's column");
    match question {
        "cells_by_cell" => {
            let cuts = (1..=LISTED).map(f64::from).collect();
            let dims = [(column("cell"), Buckets::Cuts(cuts))];
            Answer::Cells(source.count_cells(&dims).expect("the cells"))
        }
        "cells_by_category" => {
            let values = (0..LISTED).map(|i| Value::Text(format!("c{i}"))).collect();
            let dims = [(column("category"), Buckets::Values(values))];
            Answer::Cells(source.count_cells(&dims).expect("the cells"))
        }
        "count_age" => Answer::Count(
            source
                .count(&Predicate::Compare {
                    column: column("age"),
                    op: CmpOp::Le,
                    value: Value::Number(30.0),
                })
                .expect("a count"),
        ),
        "sum_amount" => {
            let clamp = Clamp::Int {
                lo: 100,
                hi: 900,
                k: 0,
            };
            let (sum, _) = source
                .sum_clamped(column("amount"), None, clamp)
                .expect("a sum");
            Answer::Sum(sum)
        }
        _ => unreachable!("one of QUESTIONS"),
    }
}

/// PySpark's answer as dpq's would read: a histogram's groups put in dpq's cells (a `cell` at
/// or above the last cut, or a `category` not listed, in the last bin; a missing one last).
fn as_answer(question: &str, answer: &serde_json::Value) -> Answer {
    let int = |v: &serde_json::Value| v.as_i64().expect("an integer");
    match question {
        "cells_by_cell" | "cells_by_category" => {
            let mut cells = vec![0u64; CELLS];
            for (group, n) in answer.as_object().expect("the groups") {
                let slot = match (question, group.as_str()) {
                    (_, "None") => CELLS - 1,
                    ("cells_by_cell", g) => {
                        g.parse::<i64>().expect("a cell").clamp(0, LISTED.into()) as usize
                    }
                    (_, g) => g
                        .strip_prefix('c')
                        .and_then(|i| i.parse::<u32>().ok())
                        .filter(|&i| i < LISTED)
                        .map_or(LISTED as usize, |i| i as usize),
                };
                cells[slot] += u64::try_from(int(n)).expect("a count");
            }
            Answer::Cells(cells)
        }
        "count_age" => Answer::Count(u64::try_from(int(answer)).expect("a count")),
        _ => Answer::Sum(i128::from(int(answer))),
    }
}

/// The rows a GROUP BY returns for an answer: one per non-empty cell, one for a count or a sum.
fn rows_back(answer: &Answer) -> usize {
    match answer {
        Answer::Cells(cells) => cells.iter().filter(|&&n| n > 0).count(),
        _ => 1,
    }
}

/// PySpark's side, `benches/peers_spark.py`, started once.
struct Peer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    pid: u32,
    version: String,
}

impl Peer {
    fn start(url: &str) -> Option<Peer> {
        let venv = std::env::var("DPQ_SPARK_VENV").unwrap_or("/tmp/dpq-spark-venv".into());
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/peers_spark.py");
        let mut child = Command::new(format!("{venv}/bin/python"))
            .args([script, url])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| println!("PySpark ({venv}) did not start: {e}; dpq alone"))
            .ok()?;
        let stdin = child.stdin.take().expect("piped");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("the peer's first line");
        let mut words = line.split_whitespace();
        if words.next() != Some("ready") {
            println!("PySpark did not connect; dpq alone");
            return None;
        }
        let pid = words.next().and_then(|p| p.parse().ok()).expect("a pid");
        let version = words.next().unwrap_or("?").to_string();
        Some(Peer {
            child,
            stdin,
            stdout,
            pid,
            version,
        })
    }

    /// PySpark's own time for `question` on `view`, in seconds, and its answer.
    fn ask(&mut self, question: &str, view: &str) -> (f64, serde_json::Value) {
        writeln!(self.stdin, "{question} {view}").expect("the peer reads");
        self.stdin.flush().expect("the peer reads");
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("the peer answers");
        let reply: serde_json::Value = serde_json::from_str(&line).expect("a line of JSON");
        let seconds = reply["seconds"].as_f64().expect("seconds");
        (seconds, reply["answer"].clone())
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Bytes received from and sent to the server at `port` by the process `pid`, over all its
/// connections, from `ss -tinp` (the kernel's `tcp_info`); `None` without `ss`.
fn wire_bytes(pid: u32, port: &str) -> Option<(u64, u64)> {
    let out = Command::new("ss")
        .args(["-tinpH", "state", "established"])
        .arg(format!("dport = :{port}"))
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let text = String::from_utf8_lossy(&out.stdout);
    let (mut ours, mut received, mut sent) = (false, 0, 0);
    let field = |line: &str, name: &str| -> u64 {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(name))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    for line in text.lines() {
        if !line.starts_with(char::is_whitespace) {
            ours = line.contains(&format!("pid={pid},"));
        } else if ours {
            received += field(line, "bytes_received:");
            sent += field(line, "bytes_sent:");
        }
    }
    Some((received, sent))
}

/// A field of `/proc/self/status` in kB (`VmRSS`, `VmHWM`).
fn status_kb(name: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':').map(str::to_string))
        })
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn mb(kb: u64) -> String {
    format!("{:.1} MB", kb as f64 / 1024.0)
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len().is_multiple_of(2) {
        (v[m - 1] + v[m]) / 2.0
    } else {
        v[m]
    }
}

fn seconds(s: f64) -> String {
    if s < 1.0 {
        format!("{:.0} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

fn bytes(b: Option<(u64, u64)>) -> String {
    b.map_or("?".into(), |(r, s)| format!("{r} / {s}"))
}

/// dpq's memory at one size: the resident set before `LOAD`, the peak after the first pass
/// and after every round.
struct Memory {
    rows: u64,
    before: u64,
    first_pass: u64,
    all: u64,
}

/// One size: the view, the checked first pass, the rounds and their table.
fn bench_size(
    admin: &SparkSession,
    url: &str,
    port: &str,
    peer: &mut Option<Peer>,
    rows: u64,
    rounds: usize,
) -> Memory {
    let view = format!("dpq_bench_spark_{rows}");
    create_view(admin, &view, rows);
    let peak_reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let before = status_kb("VmRSS");
    let opened = open_spark(url, std::slice::from_ref(&view)).expect("dpq opens the view");
    let source = Source::Spark(Box::new(opened.table));
    assert_eq!(source.n_rows(), rows);
    println!("\n{view}: {rows} rows, {rounds} rounds");
    println!(
        "| question | rows back dpq / PySpark | bytes received / sent, dpq | the same, PySpark |"
    );
    println!("|---|---|---|---|");
    for question in QUESTIONS {
        let wire = |pid| wire_bytes(pid, port);
        let start = wire(std::process::id());
        let answer = ask_dpq(&source, question);
        let end = wire(std::process::id());
        let dpq_wire = start.zip(end).map(|(a, b)| (b.0 - a.0, b.1 - a.1));
        if let Answer::Cells(cells) = &answer {
            assert_eq!(cells.len(), CELLS);
        }
        let (peer_rows, peer_wire) = match peer.as_mut() {
            Some(p) => {
                let start = wire(p.pid);
                let (_, theirs) = p.ask(question, &view);
                let end = wire(p.pid);
                // One row per group of a histogram, one for a count or a sum.
                let rows = theirs.as_object().map_or(1, |groups| groups.len());
                let theirs = as_answer(question, &theirs);
                assert_eq!(answer, theirs, "dpq and PySpark differ on {question}");
                (
                    rows.to_string(),
                    start.zip(end).map(|(a, b)| (b.0 - a.0, b.1 - a.1)),
                )
            }
            None => ("-".into(), None),
        };
        assert!(rows_back(&answer) <= CELLS);
        println!(
            "| {question} | {} / {peer_rows} | {} | {} |",
            rows_back(&answer),
            bytes(dpq_wire),
            bytes(peer_wire)
        );
    }
    let first_pass = status_kb("VmHWM");

    let mut dpq_times = vec![Vec::new(); QUESTIONS.len()];
    let mut peer_times = vec![Vec::new(); QUESTIONS.len()];
    for round in 0..rounds {
        for (q, question) in QUESTIONS.iter().enumerate() {
            let time_dpq = || {
                let t = Instant::now();
                std::hint::black_box(ask_dpq(&source, question));
                t.elapsed().as_secs_f64()
            };
            match peer.as_mut() {
                Some(p) if round % 2 == 1 => {
                    peer_times[q].push(p.ask(question, &view).0);
                    dpq_times[q].push(time_dpq());
                }
                Some(p) => {
                    dpq_times[q].push(time_dpq());
                    peer_times[q].push(p.ask(question, &view).0);
                }
                None => dpq_times[q].push(time_dpq()),
            }
        }
    }
    let all = status_kb("VmHWM");

    println!();
    println!(
        "| question | dpq, median | PySpark, median | PySpark / dpq: median [least, greatest] |"
    );
    println!("|---|---|---|---|");
    for (q, question) in QUESTIONS.iter().enumerate() {
        let ratios: Vec<f64> = peer_times[q]
            .iter()
            .zip(&dpq_times[q])
            .map(|(p, d)| p / d)
            .collect();
        let (peer_median, ratio) = if ratios.is_empty() {
            ("-".to_string(), "-".to_string())
        } else {
            let least = ratios.iter().copied().fold(f64::INFINITY, f64::min);
            let greatest = ratios.iter().copied().fold(0.0, f64::max);
            (
                seconds(median(&peer_times[q])),
                format!("{:.2} [{least:.2}, {greatest:.2}]", median(&ratios)),
            )
        };
        println!(
            "| {question} | {} | {peer_median} | {ratio} |",
            seconds(median(&dpq_times[q]))
        );
    }
    println!(
        "dpq's memory: resident {} before LOAD, peak {} after the first pass, {} after \
         every round{}",
        mb(before),
        mb(first_pass),
        mb(all),
        if peak_reset {
            ""
        } else {
            " (the peak could not be reset: it is the process's)"
        }
    );
    Memory {
        rows,
        before,
        first_pass,
        all,
    }
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` runs benches once as tests: skip.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let Ok(url) = std::env::var("DPQ_TEST_SPARK") else {
        println!(
            "DPQ_TEST_SPARK is not set: no Spark Connect server to ask, nothing measured \
             (export DPQ_TEST_SPARK=\"$(bash .ci/spark.sh)\")"
        );
        return;
    };
    let port = url
        .trim_start_matches("sc://")
        .split(['/', ';'])
        .next()
        .and_then(|host| host.rsplit_once(':'))
        .map_or("15002".to_string(), |(_, p)| p.to_string());
    let rows = env("DPQ_BENCH_ROWS", 100_000_000);
    let rounds = env("DPQ_BENCH_ROUNDS", 7) as usize;
    let admin = SparkSessionBuilder::new()
        .remote(&url)
        .get_or_create()
        .expect("the Spark Connect server answers");
    let mut peer = Peer::start(&url);
    println!(
        "Spark Connect at {url}, Spark {}; PySpark {}",
        admin.version().unwrap_or_default(),
        peer.as_ref().map_or("not running", |p| p.version.as_str())
    );
    let sizes = if rows > SMALL {
        vec![SMALL, rows]
    } else {
        vec![rows]
    };
    let memory: Vec<Memory> = sizes
        .iter()
        .map(|&n| bench_size(&admin, &url, &port, &mut peer, n, rounds))
        .collect();
    println!();
    for m in &memory {
        println!(
            "dpq at {} rows: resident {} before LOAD, peak {} / {} (first pass / every round)",
            m.rows,
            mb(m.before),
            mb(m.first_pass),
            mb(m.all)
        );
    }
    for n in sizes {
        let _ = admin
            .sql(&format!("DROP VIEW IF EXISTS dpq_bench_spark_{n}"))
            .and_then(|df| df.collect());
    }
}
