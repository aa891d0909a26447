//! The persistent ledger: every spending of a data file's budget, appended, checksummed and made durable before noise is drawn.
//!
//! One ledger per data file (by canonical path), at `STATE_DIR/ledgers/<hash of the path>.ledger`,
//! one JSON object per line. Each line carries `sum`, a BLAKE3 hash of the previous line's
//! `sum` and of its own content, so an edited, reordered, truncated or torn line is detected:
//! a damaged ledger is refused, never reset.
//!
//! A release is written in two steps under an exclusive lock of the ledger file: a `spend`
//! line (made durable with fsync) before any noise is drawn, then a `release` line with the
//! noisy answer before the answer is shown. A crash between the two leaves the epsilon spent
//! and no answer: spending recorded is never below what was shown. The lock is held from the
//! budget check to the release, and the ledger is re-read under it, so two processes cannot
//! both spend the last of a budget.
//!
//! Nothing in a ledger comes from the data but its fingerprint (a hash of the whole file):
//! statements are the analyst's own text, and noisy answers were released.

use crate::eval::{History, Release};
use crate::plan::Mechanism;
use rust_decimal::Decimal;
use serde_json::{json, Map, Value};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Why a ledger could not be used. Nothing was spent.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LedgerError {
    /// The state directory or ledger file could not be created, read, written or locked.
    #[error("the ledger {path} cannot be used: {message}")]
    Io {
        /// The ledger file.
        path: String,
        /// The operating system's explanation.
        message: String,
    },
    /// A line is not what this ledger wrote: edited, truncated, torn or from elsewhere.
    #[error("the ledger {path} is damaged at line {line}: {reason}; dpq refuses to use it rather than reset the budget")]
    Damaged {
        /// The ledger file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: &'static str,
    },
}

/// Where ledgers live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Store {
    /// Nowhere: spending lasts as long as the session (library use and unit tests).
    Memory,
    /// Under this state directory.
    Dir(PathBuf),
}

/// The persistent record of one data file's budget and releases.
#[derive(Debug)]
pub struct Ledger {
    path: Option<PathBuf>,
    history: History,
    last_sum: String,
    lines: usize,
    fingerprints: Vec<String>,
}

/// An exclusive hold on a ledger file: released when dropped.
pub struct Lock {
    file: Option<File>,
}

impl Drop for Lock {
    fn drop(&mut self) {
        if let Some(f) = &self.file {
            let _ = f.unlock();
        }
    }
}

const GENESIS: &str = "dpq-ledger-v1";

impl Ledger {
    /// Opens (or starts) the ledger of the data file `data_file` in `store`, with
    /// `default_total` as the budget of a new ledger, and records `fingerprint` if the file's
    /// content is new to the ledger. Returns the ledger and whether the data changed under it.
    pub fn open(
        store: &Store,
        data_file: &Path,
        fingerprint: &str,
        default_total: Decimal,
    ) -> Result<(Self, bool), LedgerError> {
        let Store::Dir(dir) = store else {
            let mut ledger = Self::empty(None, default_total);
            ledger.fingerprints.push(fingerprint.to_string());
            return Ok((ledger, false));
        };
        let path = ledger_path(dir, data_file);
        let io = |e: std::io::Error| LedgerError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        let mut ledger = Self::empty(Some(path.clone()), default_total);
        let lock = ledger.lock()?;
        ledger.reload(&lock)?;
        if ledger.lines == 0 {
            ledger.append(
                &lock,
                json!({
                    "type": "header",
                    "data_file": data_file.display().to_string(),
                    "total": default_total.normalize().to_string(),
                    "time": now(),
                }),
            )?;
        }
        let changed = !ledger.fingerprints.is_empty()
            && ledger.fingerprints.last().map(String::as_str) != Some(fingerprint);
        if ledger.fingerprints.last().map(String::as_str) != Some(fingerprint) {
            ledger.append(
                &lock,
                json!({ "type": "data", "fingerprint": fingerprint, "time": now() }),
            )?;
        }
        drop(lock);
        Ok((ledger, changed))
    }

    fn empty(path: Option<PathBuf>, total: Decimal) -> Self {
        Self {
            path,
            history: History::new(total),
            last_sum: GENESIS.to_string(),
            lines: 0,
            fingerprints: Vec::new(),
        }
    }

    /// The ledger file, when persisted.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The budget and releases as last read.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// The fingerprint of the data the ledger now speaks for.
    pub fn fingerprint(&self) -> &str {
        self.fingerprints.last().map_or("", String::as_str)
    }

    /// Takes the exclusive lock of the ledger file (waiting for another process to let go).
    pub fn lock(&self) -> Result<Lock, LedgerError> {
        let Some(path) = &self.path else {
            return Ok(Lock { file: None });
        };
        let io = |e: std::io::Error| LedgerError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(io)?;
        file.lock().map_err(io)?;
        Ok(Lock { file: Some(file) })
    }

    /// Re-reads the ledger under `lock`: what other processes appended becomes visible, and
    /// any damage is found before anything is spent.
    pub fn reload(&mut self, lock: &Lock) -> Result<(), LedgerError> {
        let Some(file) = &lock.file else {
            return Ok(());
        };
        let path = self.path.clone().unwrap_or_default();
        let shown = path.display().to_string();
        let io = |e: std::io::Error| LedgerError::Io {
            path: shown.clone(),
            message: e.to_string(),
        };
        let mut reader = BufReader::new(file);
        reader.seek(SeekFrom::Start(0)).map_err(io)?;
        let mut fresh = Self::empty(self.path.clone(), self.history.total());
        let mut buf = Vec::new();
        let mut line_no = 0;
        loop {
            buf.clear();
            let n = reader
                .by_ref()
                .take(1 << 24)
                .read_until(b'\n', &mut buf)
                .map_err(io)?;
            if n == 0 {
                break;
            }
            line_no += 1;
            let damaged = |reason| LedgerError::Damaged {
                path: shown.clone(),
                line: line_no,
                reason,
            };
            if buf.last() != Some(&b'\n') {
                return Err(damaged("the last line is incomplete (a torn write)"));
            }
            let text =
                std::str::from_utf8(&buf[..buf.len() - 1]).map_err(|_| damaged("not UTF-8"))?;
            let mut entry: Map<String, Value> =
                serde_json::from_str(text).map_err(|_| damaged("not a ledger entry"))?;
            let sum = match entry.remove("sum") {
                Some(Value::String(s)) => s,
                _ => return Err(damaged("no checksum")),
            };
            let content = Value::Object(entry.clone()).to_string();
            if sum != chain(&fresh.last_sum, &content) {
                return Err(damaged("the checksum does not match"));
            }
            fresh.apply(&entry, line_no == 1).map_err(damaged)?;
            fresh.last_sum = sum;
            fresh.lines = line_no;
        }
        *self = fresh;
        Ok(())
    }

    fn apply(&mut self, e: &Map<String, Value>, first: bool) -> Result<(), &'static str> {
        let kind = e.get("type").and_then(Value::as_str).unwrap_or("");
        if first != (kind == "header") {
            return Err("the header is not the first line");
        }
        let decimal = |field: &str| {
            e.get(field)
                .and_then(Value::as_str)
                .and_then(|s| Decimal::from_str(s).ok())
                .ok_or("a number is malformed")
        };
        let text = |field: &str| {
            e.get(field)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or("a field is missing")
        };
        let int = |field: &str| {
            e.get(field)
                .and_then(Value::as_u64)
                .ok_or("a field is missing")
        };
        match kind {
            "header" | "budget" => self.history.set_total(decimal("total")?),
            "data" => self.fingerprints.push(text("fingerprint")?),
            "spend" => {
                let seq = int("seq")?;
                if seq != self.history.next_seq() {
                    return Err("a release is out of order");
                }
                let mechanism =
                    Mechanism::from_name(&text("mechanism")?).ok_or("an unknown mechanism")?;
                let row = match e.get("row") {
                    Some(Value::Array(cells)) => cells
                        .iter()
                        .map(|c| {
                            let pair = c.as_array().filter(|p| p.len() == 2);
                            pair.and_then(|p| Some((p[0].as_u64()? as usize, p[1].as_f64()?)))
                        })
                        .collect::<Option<Vec<_>>>()
                        .ok_or("a row is malformed")?,
                    _ => return Err("a row is malformed"),
                };
                self.history.record(Release {
                    seq,
                    statement: text("statement")?,
                    key: text("key")?,
                    row,
                    eps: decimal("eps")?,
                    sensitivity: e
                        .get("sensitivity")
                        .and_then(Value::as_f64)
                        .ok_or("a field is missing")?,
                    mechanism,
                    noisy: None,
                    time: int("time")?,
                });
            }
            "release" => {
                let seq = int("seq")?;
                let noisy = e
                    .get("noisy")
                    .and_then(Value::as_f64)
                    .ok_or("a field is missing")?;
                if !self.history.set_noisy(seq, noisy) {
                    return Err("a release names no spending");
                }
            }
            _ => return Err("an unknown entry"),
        }
        Ok(())
    }

    fn append(&mut self, lock: &Lock, entry: Value) -> Result<(), LedgerError> {
        let Value::Object(mut map) = entry else {
            return Ok(());
        };
        if let Some(mut file) = lock.file.as_ref() {
            let content = Value::Object(map.clone()).to_string();
            let sum = chain(&self.last_sum, &content);
            map.insert("sum".into(), Value::String(sum.clone()));
            let line = format!("{}\n", Value::Object(map.clone()));
            let path = self.path.clone().unwrap_or_default();
            let io = |e: std::io::Error| LedgerError::Io {
                path: path.display().to_string(),
                message: e.to_string(),
            };
            file.write_all(line.as_bytes()).map_err(io)?;
            // Durable before anything depends on it: noise, or an answer shown.
            file.sync_data().map_err(io)?;
            self.last_sum = sum;
            self.lines += 1;
        }
        let first = self.lines <= 1 && self.path.is_some();
        self.apply(&map, first)
            .map_err(|reason| LedgerError::Damaged {
                path: self
                    .path
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
                line: self.lines,
                reason,
            })
    }

    /// Records a new total budget.
    pub fn set_total(&mut self, lock: &Lock, total: Decimal) -> Result<(), LedgerError> {
        self.append(
            lock,
            json!({ "type": "budget", "total": total.normalize().to_string(), "time": now() }),
        )
    }

    /// Records a spending before its noise is drawn. `release.noisy` is ignored.
    pub fn spend(&mut self, lock: &Lock, release: &Release) -> Result<(), LedgerError> {
        self.append(
            lock,
            json!({
                "type": "spend",
                "seq": release.seq,
                "statement": release.statement,
                "key": release.key,
                "row": release.row.iter().map(|(c, v)| json!([c, v])).collect::<Vec<_>>(),
                "eps": release.eps.normalize().to_string(),
                "sensitivity": release.sensitivity,
                "mechanism": release.mechanism.to_string(),
                "time": release.time,
            }),
        )
    }

    /// Records the noisy answer of spending `seq`, before it is shown.
    pub fn release(&mut self, lock: &Lock, seq: u64, noisy: f64) -> Result<(), LedgerError> {
        self.append(
            lock,
            json!({ "type": "release", "seq": seq, "noisy": noisy, "time": now() }),
        )
    }
}

/// The ledger file of a data file: named by a hash of its canonical path.
pub fn ledger_path(state_dir: &Path, data_file: &Path) -> PathBuf {
    let hash = blake3::hash(data_file.to_string_lossy().as_bytes());
    let name: String = hash.to_hex().chars().take(32).collect();
    state_dir.join("ledgers").join(format!("{name}.ledger"))
}

/// A hash of the whole content of a data file, to notice when it changes under its ledger.
pub fn fingerprint(data_file: &Path) -> std::io::Result<String> {
    let mut hasher = blake3::Hasher::new();
    let mut file = File::open(data_file)?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher.finalize().to_hex().to_string())
}

/// The checksum of a line: BLAKE3 of the previous line's checksum and this line's content.
fn chain(previous: &str, content: &str) -> String {
    let mut h = blake3::Hasher::new();
    h.update(previous.as_bytes());
    h.update(b"\n");
    h.update(content.as_bytes());
    h.finalize().to_hex().chars().take(32).collect()
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
