//! `dpq serve` on loopback for the tests: a directory with the data and analysts' tokens, the
//! real binary started on a free port, and requests over HTTP.
#![allow(dead_code)]

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A token and the hash its policy entry holds, made by `dpq token`.
pub fn token() -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_dpq"))
        .arg("token")
        .output()
        .expect("dpq token");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let field = |key: &str| {
        text.lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split('"').nth(1))
            .expect("a quoted value")
            .to_string()
    };
    (field("token ="), field("token_hash ="))
}

/// A directory with the data, a state directory and analysts' tokens.
pub struct Setup {
    pub dir: tempfile::TempDir,
    pub tokens: Vec<(String, String)>,
}

impl Setup {
    /// The example data (10,000 rows): counted on the requesting thread.
    pub fn new(analysts: usize) -> Setup {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::copy("examples/data/people.csv", dir.path().join("people.csv"))
            .expect("copy the example data");
        Setup {
            dir,
            tokens: (0..analysts).map(|_| token()).collect(),
        }
    }

    /// A dataset of `rows` rows (`age`, `income`) under the name people.csv: above about
    /// 130,000 rows a count runs on the shared thread pool.
    pub fn with_rows(analysts: usize, rows: usize) -> Setup {
        let setup = Setup::new(analysts);
        let mut text = String::with_capacity(rows * 12);
        text.push_str("age,income\n");
        for i in 0..rows {
            text.push_str(&format!("{},{}\n", i % 90, (i * 7919) % 100_000));
        }
        std::fs::write(setup.path("people.csv"), text).expect("write the data");
        setup
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn state(&self) -> PathBuf {
        self.path("state")
    }

    /// Writes the policy: one dataset `people` (extra keys `dataset`), analysts `a0`, `a1`,
    /// ... with the caps `caps` on it, and then `tail` (a `[limits]` table, say).
    pub fn policy(&self, dataset: &str, caps: &[&str], tail: &str) -> PathBuf {
        let mut p = format!(
            "[[dataset]]\nname = \"people\"\nid = \"people-v1\"\nsource = \"people.csv\"\n{dataset}\n"
        );
        for (i, cap) in caps.iter().enumerate() {
            p.push_str(&format!(
                "\n[[analyst]]\nname = \"a{i}\"\ntoken_hash = \"{}\"\nbudgets = {{ people = {cap} }}\n",
                self.tokens[i].1
            ));
        }
        p.push_str(tail);
        let path = self.path("policy.toml");
        std::fs::write(&path, p).expect("write the policy");
        path
    }

    /// Adds to `policy` a dataset `other` over the first 4,999 rows of the people (other data:
    /// the same data under two ids would be refused), its policy lines after `id` and
    /// `source` given by `fields`, and gives analyst `a1` the budget `a1_budget` on it.
    pub fn add_other_dataset(&self, policy: &Path, fields: &str, a1_budget: &str) {
        let people = std::fs::read_to_string(self.path("people.csv")).expect("read");
        let half: Vec<&str> = people.lines().take(5000).collect();
        std::fs::write(self.path("other.csv"), half.join("\n") + "\n").expect("write");
        let text = std::fs::read_to_string(policy).expect("read");
        let text = text.replace(
            "[[analyst]]\nname = \"a0\"",
            &format!(
                "[[dataset]]\nname = \"other\"\nid = \"other-v1\"\nsource = \"other.csv\"\n{fields}\n\n[[analyst]]\nname = \"a0\""
            ),
        );
        let text = text.replace(
            "budgets = { people = 0.5 }\n\n[[analyst]]\nname = \"a1\"",
            &format!(
                "budgets = {{ people = 0.5, other = {a1_budget} }}\n\n[[analyst]]\nname = \"a1\""
            ),
        );
        std::fs::write(policy, text).expect("write");
    }

    pub fn token(&self, i: usize) -> &str {
        &self.tokens[i].0
    }
}

/// A running `dpq serve`, killed when dropped.
pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
}

impl Server {
    pub fn start(setup: &Setup, policy: &Path) -> Server {
        Server::start_limited(setup, policy, None)
    }

    /// Starts the server, with at most `files` open files when given (`ulimit -n`, as a
    /// service manager sets it).
    pub fn start_limited(setup: &Setup, policy: &Path, files: Option<u32>) -> Server {
        Server::start_at(policy, &setup.state(), files)
    }

    /// Starts the server on `policy` with the state directory `state`, with at most `files`
    /// open files when given.
    pub fn start_at(policy: &Path, state: &Path, files: Option<u32>) -> Server {
        let mut command = match files {
            None => Command::new(env!("CARGO_BIN_EXE_dpq")),
            Some(n) => {
                let mut c = Command::new("sh");
                c.arg("-c")
                    .arg(format!("ulimit -n {n} && exec \"$0\" \"$@\""))
                    .arg(env!("CARGO_BIN_EXE_dpq"));
                c
            }
        };
        let mut child = command
            .args(["serve", "--listen", "127.0.0.1:0", "--policy"])
            .arg(policy)
            .arg("--state-dir")
            .arg(state)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn dpq serve");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("the server's first line");
        let Some(addr) = line.trim().strip_prefix("dpq serve: listening on http://") else {
            let mut err = String::new();
            child.stderr.take().map(|mut e| e.read_to_string(&mut err));
            panic!("the server did not start: {line} {err}");
        };
        Server {
            addr: addr.parse().expect("an address"),
            child,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Runs `source` as the analyst of `token`: the HTTP status and the body.
    pub fn run(&self, token: &str, source: &str) -> (u16, Value) {
        let body = serde_json::json!({ "source": source }).to_string();
        self.post(Some(token), body.as_bytes())
    }

    pub fn post(&self, token: Option<&str>, body: &[u8]) -> (u16, Value) {
        let mut request = agent()
            .post(format!("{}/v1/run", self.url()))
            .content_type("application/json");
        if let Some(t) = token {
            request = request.header("Authorization", format!("Bearer {t}"));
        }
        answer(request.send(body))
    }

    /// Runs `source` as the analyst of `token`, giving up after `limit`: the body, or `None`
    /// when no answer came in time.
    pub fn get(&self, token: Option<&str>, path: &str) -> (u16, Value) {
        let mut request = agent().get(format!("{}{path}", self.url()));
        if let Some(t) = token {
            request = request.header("Authorization", format!("Bearer {t}"));
        }
        answer(request.call())
    }

    /// The analyst's own budget and, as the policy shows it, the dataset's.
    pub fn budget(&self, token: &str) -> Value {
        let (status, body) = self.run(token, "SHOW BUDGET;");
        assert_eq!(status, 200, "{body}");
        body["results"][0]["json"].clone()
    }

    /// Kills the server at once (`kill -9`).
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn run_within(&self, token: &str, source: &str, limit: Duration) -> Option<Value> {
        let body = serde_json::json!({ "source": source }).to_string();
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(limit))
            .build()
            .into();
        let mut r = agent
            .post(format!("{}/v1/run", self.url()))
            .content_type("application/json")
            .header("Authorization", format!("Bearer {token}"))
            .send(body.as_bytes())
            .ok()?;
        let text = r.body_mut().read_to_string().ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Sends a whole request on a connection of its own and leaves it there: the server runs
    /// it whether or not anyone reads the answer.
    pub fn send_raw(&self, token: &str, source: &str) -> TcpStream {
        let body = serde_json::json!({ "source": source }).to_string();
        let mut s = TcpStream::connect(self.addr).expect("connect");
        write!(
            s,
            "POST /v1/run HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .expect("send a request");
        s
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(600)))
        .build()
        .into()
}

pub fn answer(r: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> (u16, Value) {
    let mut r = r.expect("the server answers");
    let status = r.status().as_u16();
    let text = r.body_mut().read_to_string().expect("a body");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// The results' kinds of a run.
pub fn kinds(body: &Value) -> Vec<String> {
    body["results"]
        .as_array()
        .map(|rs| {
            rs.iter()
                .map(|r| r["json"]["kind"].as_str().unwrap_or("?").to_string())
                .collect()
        })
        .unwrap_or_default()
}

pub fn error(body: &Value) -> String {
    body["error"]["message"].as_str().unwrap_or("").to_string()
}
