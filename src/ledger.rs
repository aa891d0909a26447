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

use crate::eval::{CubeDecl, History, Release};
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
    /// A statement too long to record; nothing was spent.
    #[error("the statement is too long to record in the ledger {path} (more than {limit} bytes); nothing was spent")]
    TooLong {
        /// The ledger file.
        path: String,
        /// The limit in bytes.
        limit: usize,
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

/// The longest line a ledger holds: a statement longer than this is refused before anything
/// is spent (a ledger must stay readable whole).
pub const MAX_LINE: usize = 1 << 20;

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
        // A file renamed, copied or linked elsewhere keeps its ledger: content already seen
        // leads to the ledger that saw it.
        let by_path = ledger_path(dir, data_file);
        let index = dir.join("content").join(fingerprint);
        let path = match std::fs::read_to_string(&index) {
            Ok(name) if !by_path.exists() && is_ledger_name(name.trim()) => {
                dir.join("ledgers").join(name.trim())
            }
            _ => by_path,
        };
        let io = |e: std::io::Error| LedgerError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        if let Some(parent) = path.parent() {
            private_dir(parent).map_err(io)?;
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
        if !index.exists() {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            let io = |e: std::io::Error| LedgerError::Io {
                path: index.display().to_string(),
                message: e.to_string(),
            };
            if let (Some(name), Some(parent)) = (name, index.parent()) {
                private_dir(parent).map_err(io)?;
                std::fs::write(&index, name).map_err(io)?;
            }
        }
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
        let existed = path.exists();
        let mut options = OpenOptions::new();
        options.read(true).append(true).create(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(path).map_err(io)?;
        if !existed {
            // The new file's name is durable too, or a power cut could lose the ledger whole.
            sync_dir(path.parent()).map_err(io)?;
        }
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
        let mut seen_sum: Option<String> = None;
        loop {
            buf.clear();
            let n = reader
                .by_ref()
                .take(MAX_LINE as u64 + 1)
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
            if line_no == self.lines {
                seen_sum = Some(sum.clone());
            }
            fresh.last_sum = sum;
            fresh.lines = line_no;
        }
        // Within a session the ledger can only grow: lines that were read before must still be
        // there, unchanged (a truncated, replaced or deleted ledger is refused, not reset).
        if fresh.lines < self.lines {
            return Err(LedgerError::Damaged {
                path: shown,
                line: fresh.lines + 1,
                reason: "lines read earlier in this session are gone",
            });
        }
        if self.lines > 0 && seen_sum.as_deref() != Some(self.last_sum.as_str()) {
            return Err(LedgerError::Damaged {
                path: shown,
                line: self.lines,
                reason: "a line read earlier in this session has changed",
            });
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
            "header" | "budget" => {
                let total = decimal("total")?;
                if total <= Decimal::ZERO || total < self.history.spent() {
                    return Err("a budget is not positive or below what is spent");
                }
                self.history.set_total(total);
            }
            "data" => self.fingerprints.push(text("fingerprint")?),
            "cube" => {
                let spec = text("spec")?;
                let cells = usize::try_from(int("cells")?).map_err(|_| "a cube is malformed")?;
                if !(1..=crate::cube::MAX_CELLS).contains(&cells) {
                    return Err("a cube is malformed");
                }
                let same = self.history.cube().is_some_and(|c| c.spec == spec);
                if !same && self.history.rows_released() > 0 {
                    return Err("the cube changes after releases over it");
                }
                self.history.set_cube(CubeDecl { spec, cells });
            }
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
                            pair.and_then(|p| {
                                let coefficient = Decimal::from_str(p[1].as_str()?).ok()?;
                                Some((usize::try_from(p[0].as_u64()?).ok()?, coefficient))
                            })
                        })
                        .collect::<Option<Vec<_>>>()
                        .ok_or("a row is malformed")?,
                    _ => return Err("a row is malformed"),
                };
                if !row.is_empty() {
                    let cells = self.history.cube().map_or(0, |c| c.cells);
                    let sorted = row.windows(2).all(|w| w[0].0 < w[1].0);
                    if !sorted || row.iter().any(|(j, c)| *j >= cells || c.is_zero()) {
                        return Err("a row does not fit the cube");
                    }
                }
                let eps = decimal("eps")?;
                if eps <= Decimal::ZERO {
                    return Err("an epsilon is not positive");
                }
                // dpq checks the budget before it writes a spending, so a ledger where the
                // spending passes the budget was not written by it.
                if self.history.check_row(eps, &row).is_err() {
                    return Err("a spending exceeds the budget");
                }
                self.history.record(Release {
                    seq,
                    statement: text("statement")?,
                    key: text("key")?,
                    row,
                    eps,
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
                let answered = self
                    .history
                    .releases()
                    .iter()
                    .any(|r| r.seq == seq && r.noisy.is_some());
                if answered {
                    return Err("an answer is recorded twice");
                }
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
            if line.len() > MAX_LINE {
                return Err(LedgerError::TooLong {
                    path: path.display().to_string(),
                    limit: MAX_LINE,
                });
            }
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

    /// Records the cube declared on the data file.
    pub fn declare_cube(&mut self, lock: &Lock, cube: &CubeDecl) -> Result<(), LedgerError> {
        self.append(
            lock,
            json!({ "type": "cube", "spec": cube.spec, "cells": cube.cells, "time": now() }),
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
                "row": release.row.iter().map(|(c, v)| json!([c, v.normalize().to_string()])).collect::<Vec<_>>(),
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

/// Creates `dir` (and its parents) readable by its owner only: ledgers hold statements and
/// answers that other users of the machine have no business reading.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Makes the entries of `dir` durable (a no-op where directories cannot be synced).
fn sync_dir(dir: Option<&Path>) -> std::io::Result<()> {
    #[cfg(unix)]
    if let Some(dir) = dir {
        File::open(dir)?.sync_all()?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// The ledger file of a data file: named by a hash of its canonical path.
pub fn ledger_path(state_dir: &Path, data_file: &Path) -> PathBuf {
    let hash = blake3::hash(data_file.to_string_lossy().as_bytes());
    let name: String = hash.to_hex().chars().take(32).collect();
    state_dir.join("ledgers").join(format!("{name}.ledger"))
}

/// Whether `name` is a ledger file name as [`ledger_path`] makes them (and no path elsewhere).
fn is_ledger_name(name: &str) -> bool {
    name.strip_suffix(".ledger")
        .is_some_and(|h| h.len() == 32 && h.bytes().all(|b| b.is_ascii_hexdigit()))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    fn spend(seq: u64, eps: &str) -> Map<String, Value> {
        entry(json!({
            "type": "spend", "seq": seq, "statement": "s", "key": "k", "row": [],
            "eps": eps, "sensitivity": 1.0, "mechanism": "laplace", "time": 0,
        }))
    }

    /// A ledger whose chain is intact can still say nonsense (it may have been rebuilt by
    /// hand): entries that would under-count spending are refused.
    #[test]
    fn well_chained_nonsense_is_refused() {
        let mut l = Ledger::empty(None, Decimal::ONE);
        assert!(
            l.apply(&spend(1, "-1"), false).is_err(),
            "a negative epsilon"
        );
        assert!(l.apply(&spend(1, "0"), false).is_err(), "a zero epsilon");
        let budget = entry(json!({ "type": "budget", "total": "-5", "time": 0 }));
        assert!(l.apply(&budget, false).is_err(), "a negative budget");
        assert!(
            l.apply(&spend(2, "0.1"), false).is_err(),
            "a gap in the releases"
        );
        l.apply(&spend(1, "0.1"), false).expect("a proper spend");
        let release = entry(json!({ "type": "release", "seq": 1, "noisy": 3.5, "time": 0 }));
        l.apply(&release, false).expect("its answer");
        assert!(
            l.apply(&release, false).is_err(),
            "an answer recorded twice"
        );
        let huge = "79228162514264337593543950335";
        assert!(l.apply(&spend(2, huge), false).is_err(), "past the budget");
        let lower = entry(json!({ "type": "budget", "total": "0.05", "time": 0 }));
        assert!(
            l.apply(&lower, false).is_err(),
            "a budget below what is spent"
        );
        assert_eq!(l.history().spent(), Decimal::new(1, 1));
    }
}
