//! Whether response time tells an analyst what a served column holds (issue 21, item 6).
//!
//! Serves `DPQ_BENCH_ROWS` (default 1,000,000) synthetic people as two datasets of one policy,
//! from CSV and from Parquet (row groups of `DPQ_BENCH_GROUP_ROWS`, default 65,536, the rows
//! sorted by `income`, where skipping row groups on their bounds matters most), and times
//! paired probes through the HTTP API, each probe a fresh release:
//!
//! | pair | first side | second side |
//! |---|---|---|
//! | `text` | `region = 'North'` (present) | `region = 'Norti'` (absent, a near miss) |
//! | `range` | `income > mid` (in range) | `income > max + 1000` (beyond the maximum) |
//! | `edge` | `income > min` (leaves the minimum out) | `income > min - 1` (every value) |
//! | `in` | `region IN` two present values | `region IN` two near misses |
//!
//! The values are taken from the generated rows, not assumed. `DPQ_BENCH_PAIRS` (default 60)
//! pairs of each kind on each dataset, all pairs in one shuffled order, the two probes of a
//! pair in random order (ChaCha20 with a fixed seed), one after the other over one kept-alive
//! connection, each timed from sending the request to reading the whole answer. Two server
//! runs: padding off (`response_ms = 0` on both datasets) and the default padding (no key).
//! A server that refuses the key (before it exists) is reported, and that run goes on without
//! the key. For each run, dataset and pair kind: the median time of each side, how many pairs
//! the first side was the slower, and the two-sided exact sign test's p-value (ties dropped),
//! as a Markdown table; then the median latency with and without padding.
//!
//! Not a criterion benchmark: the figure is a paired comparison, not a time per iteration.

mod common;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// The two served datasets: their names in the policy and their files.
const DATASETS: [(&str, &str); 2] = [("csv", "people.csv"), ("parquet", "people.parquet")];

/// The kinds of pair, in the order of the report.
const KINDS: [&str; 4] = ["text", "range", "edge", "in"];

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` runs benches once as tests: skip.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    check_sign_test();
    let rows = env("DPQ_BENCH_ROWS", 1_000_000) as usize;
    let pairs = env("DPQ_BENCH_PAIRS", 60) as usize;
    let group_rows = env("DPQ_BENCH_GROUP_ROWS", 65_536) as usize;
    let dir = tempfile::tempdir().expect("a temporary directory");

    let mut people: Vec<common::Person> = common::people(rows).collect();
    let probes = Probes::of(&people);
    common::write_people(&dir.path().join("people.csv"), rows).expect("the CSV is written");
    people.sort_by_key(|p| (p.income.is_none(), p.income));
    common::write_parquet_grouped(&dir.path().join("people.parquet"), &people, group_rows)
        .expect("the Parquet file is written");
    drop(people);

    let (token, hash) = dpq::server::token::new_token();
    println!(
        "dpq serve timing: {rows} rows, Parquet in row groups of {group_rows} sorted by income, \
         {pairs} pairs per kind per dataset"
    );
    println!(
        "income in [{}, {}]; region values {:?}; absent near misses {:?}",
        probes.min, probes.max, probes.present, probes.absent
    );
    let mut rng = ChaCha20Rng::seed_from_u64(21_06);
    let mut runs = Vec::new();
    for (label, padding) in [("off", Some(0)), ("default", None)] {
        let run = RunSetup {
            dir: dir.path(),
            label,
            padding,
            hash: &hash,
        };
        let (server, note) = run.start();
        let mut client = Client::new(&server.url, &token);
        warm_up(&mut client, &probes);
        let times = measure(&mut client, &probes, pairs, &mut rng);
        drop(server);
        runs.push((format!("{label}{note}"), times));
    }
    report(&runs);
}

/// What the probes ask, taken from the generated rows.
struct Probes {
    /// The least and greatest present income.
    min: i64,
    max: i64,
    /// Region values present: the middle one in byte order, and two others for `IN`.
    present: Vec<String>,
    /// Near misses of `present`, each absent from the column and inside its byte-order range
    /// (so no bounds on the text rule them out: only the value's absence differs).
    absent: Vec<String>,
}

impl Probes {
    fn of(people: &[common::Person]) -> Probes {
        let incomes = people.iter().filter_map(|p| p.income);
        let min = incomes.clone().min().expect("some income");
        let max = incomes.max().expect("some income");
        let regions: BTreeSet<&str> = people.iter().map(|p| p.region).collect();
        let sorted: Vec<&str> = regions.iter().copied().collect();
        assert!(sorted.len() >= 3, "at least three regions: {sorted:?}");
        let mid = sorted.len() / 2;
        let present: Vec<String> = [mid, mid - 1, mid + 1]
            .iter()
            .map(|&i| sorted[i].to_string())
            .collect();
        let absent: Vec<String> = present
            .iter()
            .map(|p| {
                let miss = near_miss(p);
                assert!(!regions.contains(miss.as_str()), "{miss} is absent");
                assert!(sorted[0] < miss.as_str() && miss.as_str() < sorted[sorted.len() - 1]);
                miss
            })
            .collect();
        Probes {
            min,
            max,
            present,
            absent,
        }
    }

    /// The two statements of a pair (first side, second side), with epsilons `eps`.
    fn pair(&self, kind: &str, eps: [String; 2]) -> [String; 2] {
        let (p, a) = (&self.present, &self.absent);
        let [e0, e1] = eps;
        match kind {
            "text" => [
                format!("COUNT WHERE region = '{}' WITH EPS {e0};", p[0]),
                format!("COUNT WHERE region = '{}' WITH EPS {e1};", a[0]),
            ],
            "range" => [
                format!(
                    "COUNT WHERE income > {} WITH EPS {e0};",
                    (self.min + self.max) / 2
                ),
                format!("COUNT WHERE income > {} WITH EPS {e1};", self.max + 1000),
            ],
            "edge" => [
                format!("COUNT WHERE income > {} WITH EPS {e0};", self.min),
                format!("COUNT WHERE income > {} WITH EPS {e1};", self.min - 1),
            ],
            "in" => [
                format!(
                    "COUNT WHERE region IN ('{}', '{}') WITH EPS {e0};",
                    p[1], p[2]
                ),
                format!(
                    "COUNT WHERE region IN ('{}', '{}') WITH EPS {e1};",
                    a[1], a[2]
                ),
            ],
            _ => unreachable!("a pair kind of KINDS"),
        }
    }
}

/// `s` with its last character replaced by the next one (`West` -> `Wesu`).
fn near_miss(s: &str) -> String {
    let mut chars: Vec<char> = s.chars().collect();
    let last = chars.pop().expect("a non-empty value");
    chars.push(char::from_u32(u32::from(last) + 1).expect("a next character"));
    chars.into_iter().collect()
}

/// One server run's set-up: where, and the padding written into the policy.
struct RunSetup<'a> {
    dir: &'a Path,
    label: &'a str,
    /// `response_ms` on both datasets, or `None` for the key absent.
    padding: Option<u64>,
    hash: &'a str,
}

impl RunSetup<'_> {
    fn policy(&self, padding: Option<u64>) -> String {
        let mut policy = String::new();
        for (name, file) in DATASETS {
            policy.push_str(&format!(
                "[[dataset]]\nname = \"{name}\"\nid = \"bench-{name}\"\nsource = \"{file}\"\n\
                 budget = 1000000\n"
            ));
            if let Some(ms) = padding {
                policy.push_str(&format!("response_ms = {ms}\n"));
            }
        }
        policy.push_str(&format!(
            "[[analyst]]\nname = \"a\"\ntoken_hash = \"{}\"\n\
             budgets = {{ csv = 1000000, parquet = 1000000 }}\n",
            self.hash
        ));
        policy
    }

    /// Starts the server; if the policy's padding key is refused, says so and starts it
    /// without the key. The note is added to the run's label.
    fn start(&self) -> (Server, String) {
        match Server::start(self.dir, self.label, &self.policy(self.padding)) {
            Ok(server) => (server, String::new()),
            Err(why) if self.padding.is_some() => {
                println!(
                    "run {}: the server refused `response_ms`, so this run has no key: {}",
                    self.label,
                    why.trim()
                );
                let server = Server::start(self.dir, self.label, &self.policy(None))
                    .unwrap_or_else(|why| panic!("dpq serve starts: {why}"));
                (server, " (key refused)".to_string())
            }
            Err(why) => panic!("dpq serve starts: {why}"),
        }
    }
}

/// A running `dpq serve`, killed when dropped (also when the bench panics).
struct Server {
    child: Child,
    url: String,
    /// Kept open so that the server never writes to a closed pipe.
    _stdout: BufReader<ChildStdout>,
}

impl Server {
    /// Starts `dpq serve` on `policy`, with a state directory of its own; the server's
    /// standard error if it does not start.
    fn start(dir: &Path, label: &str, policy: &str) -> Result<Server, String> {
        let policy_path = dir.join(format!("policy-{label}.toml"));
        std::fs::write(&policy_path, policy).expect("the policy is written");
        let stderr_path = dir.join(format!("serve-{label}.err"));
        let stderr = std::fs::File::create(&stderr_path).expect("a file for stderr");
        let state = dir.join(format!("state-{label}"));
        let _ = std::fs::remove_dir_all(&state);
        let mut child = Command::new(env!("CARGO_BIN_EXE_dpq"))
            .args(["serve", "--listen", "127.0.0.1:0", "--policy"])
            .arg(&policy_path)
            .arg("--state-dir")
            .arg(&state)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("dpq serve starts");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        let _ = stdout.read_line(&mut line);
        match line.trim().strip_prefix("dpq serve: listening on ") {
            Some(url) => Ok(Server {
                url: url.to_string(),
                child,
                _stdout: stdout,
            }),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                Err(std::fs::read_to_string(&stderr_path).unwrap_or_default())
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One analyst's kept-alive connection, and the dataset its session uses.
struct Client {
    agent: ureq::Agent,
    run_url: String,
    auth: String,
    using: Option<&'static str>,
    /// Makes every epsilon distinct, so no probe is answered from the record.
    counter: u64,
}

impl Client {
    fn new(url: &str, token: &str) -> Client {
        Client {
            agent: ureq::Agent::config_builder()
                .http_status_as_error(false)
                .build()
                .into(),
            run_url: format!("{url}/v1/run"),
            auth: format!("Bearer {token}"),
            using: None,
            counter: 0,
        }
    }

    /// An epsilon near 0.001 used by no other statement of this run.
    fn eps(&mut self) -> String {
        self.counter += 1;
        format!("0.001{:06}", self.counter)
    }

    /// Sends `source` and reads the whole answer: the time from sending to its last byte,
    /// and the answer, which must have no error.
    fn send(&mut self, source: &str) -> (Duration, String) {
        let body = serde_json::json!({ "source": source }).to_string();
        let t = Instant::now();
        let mut r = self
            .agent
            .post(&self.run_url)
            .header("Authorization", &self.auth)
            .content_type("application/json")
            .send(body.as_bytes())
            .expect("the server answers");
        let text = r.body_mut().read_to_string().expect("a body");
        let elapsed = t.elapsed();
        assert!(text.contains("\"error\":null"), "{source}: {text}");
        (elapsed, text)
    }

    /// Makes `dataset` the session's dataset, untimed, if it is not already.
    fn use_dataset(&mut self, dataset: &'static str) {
        if self.using != Some(dataset) {
            self.send(&format!("USE {dataset};"));
            self.using = Some(dataset);
        }
    }

    /// Sends a `COUNT`, checks that it was a fresh release, and times it.
    fn probe(&mut self, source: &str) -> Duration {
        let (elapsed, text) = self.send(source);
        assert!(
            text.contains("\"kind\":\"count\"") && text.contains("\"from_history\":false"),
            "{source}: {text}"
        );
        elapsed
    }
}

/// A few queries on each dataset, and each probed column read once whole, so that the
/// bounds a Parquet source keeps per row group exist before timing starts.
fn warm_up(client: &mut Client, probes: &Probes) {
    for (dataset, _) in DATASETS {
        client.use_dataset(dataset);
        for _ in 0..5 {
            let statements = [
                format!(
                    "COUNT WHERE income >= {} WITH EPS {};",
                    probes.min,
                    client.eps()
                ),
                format!(
                    "COUNT WHERE region = '{}' WITH EPS {};",
                    probes.present[0],
                    client.eps()
                ),
            ];
            for s in statements {
                client.probe(&s);
            }
        }
        for kind in KINDS {
            let eps = [client.eps(), client.eps()];
            for s in probes.pair(kind, eps) {
                client.probe(&s);
            }
        }
    }
}

/// The pairs' times, `[dataset][kind]` -> (first side, second side) per pair.
type Times = Vec<Vec<Vec<(Duration, Duration)>>>;

/// Every pair of every kind on every dataset, in one shuffled order, each pair's two probes
/// in random order.
fn measure(client: &mut Client, probes: &Probes, pairs: usize, rng: &mut ChaCha20Rng) -> Times {
    let mut schedule: Vec<(usize, usize)> = (0..DATASETS.len())
        .flat_map(|d| (0..KINDS.len()).flat_map(move |k| std::iter::repeat_n((d, k), pairs)))
        .collect();
    schedule.shuffle(rng);
    let mut times: Times = vec![vec![Vec::new(); KINDS.len()]; DATASETS.len()];
    for (d, k) in schedule {
        client.use_dataset(DATASETS[d].0);
        let eps = [client.eps(), client.eps()];
        let [first, second] = probes.pair(KINDS[k], eps);
        let pair = if rng.random_bool(0.5) {
            let a = client.probe(&first);
            (a, client.probe(&second))
        } else {
            let b = client.probe(&second);
            (client.probe(&first), b)
        };
        times[d][k].push(pair);
    }
    times
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The table, one row per run, dataset and pair kind; then padding's cost.
fn report(runs: &[(String, Times)]) {
    println!();
    println!("| padding | dataset | pair | median first (ms) | median second (ms) | first slower | sign test p |");
    println!("|---|---|---|---|---|---|---|");
    for (label, times) in runs {
        for (d, (dataset, _)) in DATASETS.iter().enumerate() {
            for (k, kind) in KINDS.iter().enumerate() {
                let pairs = &times[d][k];
                let slower = pairs.iter().filter(|(a, b)| a > b).count();
                let untied = pairs.iter().filter(|(a, b)| a != b).count();
                println!(
                    "| {label} | {dataset} | {kind} | {:.2} | {:.2} | {slower} of {untied} | {:.2e} |",
                    ms(median(pairs.iter().map(|p| p.0).collect())),
                    ms(median(pairs.iter().map(|p| p.1).collect())),
                    sign_test(slower as u64, untied as u64)
                );
            }
        }
    }
    println!();
    for (dataset_index, (dataset, _)) in DATASETS.iter().enumerate() {
        let line: Vec<String> = runs
            .iter()
            .map(|(label, times)| {
                let all: Vec<Duration> = times[dataset_index]
                    .iter()
                    .flatten()
                    .flat_map(|&(a, b)| [a, b])
                    .collect();
                let total: Duration = all.iter().sum();
                let rate = all.len() as f64 / total.as_secs_f64();
                format!(
                    "{label}: median {:.2} ms ({rate:.0} probes/s one at a time)",
                    ms(median(all))
                )
            })
            .collect();
        println!("latency on {dataset}, {}", line.join("; "));
    }
}

/// The two-sided exact sign test: the probability, under a fair coin, of a split of `n`
/// untied pairs at least as uneven as `k` against `n - k`. That is
/// `min(1, 2 * P(X >= max(k, n - k)))` for `X ~ Binomial(n, 1/2)`, summed in log space:
/// `ln C(n, i) - n ln 2`, with `ln C(n, i + 1) = ln C(n, i) + ln(n - i) - ln(i + 1)`,
/// accurate to about 1e-12 relative for the `n` used here.
fn sign_test(k: u64, n: u64) -> f64 {
    if n == 0 {
        return 1.0;
    }
    let tail_from = k.max(n - k);
    let mut log_choose = 0.0_f64; // ln C(n, 0)
    let mut logs = Vec::new();
    for i in 0..=n {
        if i >= tail_from {
            logs.push(log_choose - n as f64 * std::f64::consts::LN_2);
        }
        if i < n {
            log_choose += ((n - i) as f64).ln() - ((i + 1) as f64).ln();
        }
    }
    let top = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let tail = top + logs.iter().map(|l| (l - top).exp()).sum::<f64>().ln();
    (2.0 * tail.exp()).min(1.0)
}

/// Known values of the sign test, checked at start (a harness-less bench runs no `#[test]`).
fn check_sign_test() {
    // 37 of 40: 2 * (C(40,37) + C(40,38) + C(40,39) + C(40,40)) / 2^40 = 2 * 10701 / 2^40.
    let expected = 2.0 * 10701.0 / 2f64.powi(40);
    let got = sign_test(37, 40);
    assert!(
        (got - expected).abs() <= 1e-12 * expected,
        "{got} vs {expected}"
    );
    assert!((sign_test(3, 40) - expected).abs() <= 1e-12 * expected);
    // 39 of 40: 2 * 41 / 2^40.
    let expected = 2.0 * 41.0 / 2f64.powi(40);
    assert!((sign_test(39, 40) - expected).abs() <= 1e-12 * expected);
    assert_eq!(sign_test(20, 40), 1.0);
    assert_eq!(sign_test(0, 0), 1.0);
    // 8 of 10: 2 * (45 + 10 + 1) / 1024.
    assert!((sign_test(8, 10) - 112.0 / 1024.0).abs() < 1e-14);
}
