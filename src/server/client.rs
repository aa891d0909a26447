//! A client of `dpq serve`: runs statements in the analyst's session there and reads the
//! answers, for `dpq connect`, `dpq run --server` and Python's `dpq.connect`.

use super::api::{Account, Catalog, Problem, RunRequest, RunResponse};
use std::time::Duration;

/// A dpq server and the analyst's token.
pub struct Remote {
    agent: ureq::Agent,
    base: String,
    token: String,
    names: Vec<(String, Vec<String>)>,
}

impl Remote {
    /// Connects to the server at `url` with `token`: checks the token and reads the
    /// analyst's catalog (for completion).
    pub fn connect(url: &str, token: String) -> Result<Remote, String> {
        // A connection per request: the server closes idle connections, and a statement must
        // never be sent twice on a connection found closed.
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_idle_connections(0)
            .timeout_global(Some(Duration::from_secs(600)))
            .build()
            .into();
        let mut remote = Remote {
            agent,
            base: url.trim_end_matches('/').to_string(),
            token,
            names: Vec::new(),
        };
        let catalog: Catalog = remote.get("/v1/catalog")?;
        remote.names = catalog
            .datasets
            .into_iter()
            .map(|d| (d.name, d.columns.into_iter().map(|(n, _)| n).collect()))
            .collect();
        Ok(remote)
    }

    /// The tables and their columns, for completion.
    pub fn names(&self) -> Vec<(String, Vec<String>)> {
        self.names.clone()
    }

    /// The server's address.
    pub fn base(&self) -> &str {
        &self.base
    }

    fn get<T: serde::de::DeserializeOwned>(&self, path: &str) -> Result<T, String> {
        let response = self
            .agent
            .get(format!("{}{path}", self.base))
            .header("Authorization", format!("Bearer {}", self.token))
            .call();
        read(response, &self.base)
    }

    /// Runs `source` on the server: its answer, or `None` when Ctrl-C stopped the wait. The
    /// request is sent from a thread of its own, so that Ctrl-C at the prompt can stop the
    /// wait; the server runs the statements to their end all the same (or has already), and
    /// records what they spend, and their answer is dropped when it comes.
    pub fn post(&self, source: &str) -> Result<Option<RunResponse>, String> {
        use std::sync::mpsc::{channel, RecvTimeoutError};
        let body = serde_json::to_string(&RunRequest {
            source: source.to_string(),
        })
        .map_err(|e| e.to_string())?;
        let request = self
            .agent
            .post(format!("{}/v1/run", self.base))
            .header("Authorization", format!("Bearer {}", self.token))
            .content_type("application/json");
        let (answer, answered) = channel();
        let base = self.base.clone();
        std::thread::Builder::new()
            .name("dpq-request".into())
            .spawn(move || {
                let _ = answer.send(read(request.send(body), &base));
            })
            .map_err(|e| format!("cannot send the request: {e}"))?;
        loop {
            match answered.recv_timeout(Duration::from_millis(50)) {
                Ok(answer) => return answer.map(Some),
                Err(RecvTimeoutError::Timeout) if crate::sys::interrupt::requested() => {
                    return Ok(None)
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(format!("the request to the server {} failed", self.base))
                }
            }
        }
    }
}

impl Remote {
    /// `dpq connect`'s greeting: the server, the analyst, and each of their datasets with
    /// what is left of it (their own budget and, where the policy shows it, all analysts').
    pub fn greeting(&self) -> String {
        let account: Account = match self.get("/v1/account") {
            Ok(a) => a,
            // A server older than `/v1/account`: the address alone.
            Err(_) => return format!("Connected to {}.", self.base),
        };
        let mut text = format!("Connected to {} as {}.", self.base, account.analyst);
        if account.datasets.is_empty() {
            text.push_str("\nNo dataset of this server is yours.");
            return text;
        }
        text.push_str("\nYour datasets, and what is left of each budget:");
        for d in &account.datasets {
            let rows = d.n.map(|n| format!(" ({n} rows)")).unwrap_or_default();
            let b = d.budget;
            let unit = if d.unit == "rho" { "rho " } else { "" };
            text.push_str(&format!(
                "\n  {}{rows}: yours {unit}{} of {} ({} spent)",
                d.name, b.remaining, b.total, b.spent
            ));
            if let Some(all) = d.dataset {
                text.push_str(&format!(
                    "; all analysts' {} of {}",
                    all.remaining, all.total
                ));
            }
        }
        text
    }
}

/// A server's answer: the body when it is a success, the server's problem otherwise.
fn read<T: serde::de::DeserializeOwned>(
    response: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    base: &str,
) -> Result<T, String> {
    let mut response = response.map_err(|e| format!("cannot reach the server {base}: {e}"))?;
    let status = response.status();
    let text = response
        .body_mut()
        .read_to_string()
        .map_err(|e| format!("the server {base} sent an unreadable answer: {e}"))?;
    if status.is_success() {
        serde_json::from_str(&text)
            .map_err(|_| format!("the server {base} sent an answer dpq does not read"))
    } else {
        let why = serde_json::from_str::<Problem>(&text)
            .map(|p| p.problem)
            .unwrap_or_else(|_| text.trim().to_string());
        Err(format!(
            "the server {base} refused the request ({status}): {why}"
        ))
    }
}
