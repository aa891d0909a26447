//! Which data each served dataset's id has spent on, and which id continues which one's
//! ledger: what keeps a curator from editing a dataset's identity into a fresh budget.
//!
//! A served dataset's ledger is keyed by the id its curator gives it, so a re-exported file
//! keeps its budget. The state directory's `datasets.json` records, for each id, the keyed
//! fingerprints of the content it has served, and the ids that continue another's ledger
//! (`continues` in a policy). Content recorded under one id is refused under an id of another
//! ledger: a new id over data already spent on would be a new budget for the same people.
//! A continuation, once recorded, holds for good: the new id's ledger is the old one's whether
//! or not later policies still say so.
//!
//! The file is rewritten whole, durably (a temporary file, fsync, rename), readable by its
//! owner only, under a lock of its own, and refused if damaged. Its fingerprints are keyed by
//! the state directory's secret, as the ledgers' are. A state directory without the file (one
//! written by an earlier dpq, or whose file was deleted) has it rebuilt from the fingerprints
//! its served ledgers recorded.

use super::ledger::LedgerError;
use super::store;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};

/// The record's file in a state directory.
const FILE: &str = "datasets.json";

/// Its lock, held while a server settles its datasets' identities.
const LOCK: &str = "datasets.lock";

/// The label a served dataset's ledger header names (`data_file`), before its id.
const SERVED_LABEL: &str = "dpq-dataset:";

/// The longest chain of continuations followed.
const MAX_CHAIN: usize = 1000;

/// Why a served dataset's identity is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IdentityError {
    /// The state directory or its record cannot be used.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// The content was served before under an id of another ledger.
    #[error("id {id} would serve data already served under id {other}, whose ledger holds what was spent on it")]
    SpentUnder {
        /// The id asking.
        id: String,
        /// The id that served the content.
        other: String,
    },
    /// `continues` names an id the state directory has no record of.
    #[error("id {id} continues id {old}, which has no ledger in this state directory")]
    UnknownOld {
        /// The new id.
        id: String,
        /// The id it would continue.
        old: String,
    },
    /// `continues` on an id that already has a ledger of its own.
    #[error("id {id} has served data under a ledger of its own, so it cannot continue id {old}'s")]
    OwnLedger {
        /// The id.
        id: String,
        /// The id it would continue.
        old: String,
    },
    /// `continues` naming another ledger than the one recorded.
    #[error("id {id} continues id {recorded}'s ledger (recorded in the state directory), not id {old}'s")]
    AlreadyContinues {
        /// The id.
        id: String,
        /// The id it continues, as recorded.
        recorded: String,
        /// The id named now.
        old: String,
    },
}

/// The record as stored.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    format: u32,
    datasets: BTreeMap<String, Entry>,
}

/// One id's record.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    /// The id whose ledger this one continues.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    continues: Option<String>,
    /// The keyed fingerprints of the content served under this id.
    #[serde(default)]
    contents: BTreeSet<String>,
}

/// The identities of a state directory's served datasets, read (and, for a server, locked).
pub struct Identities {
    path: PathBuf,
    secret: [u8; 32],
    record: Record,
    /// Held while the identities may be written; `None`: read only (`check-policy`).
    lock: Option<File>,
    changed: bool,
}

impl Identities {
    /// Opens the record of the state directory `dir` to settle a server's datasets: takes its
    /// lock (held until dropped), and makes the secret if the directory is new.
    pub fn open(dir: &Path) -> Result<Self, LedgerError> {
        let secret = store::state_secret(dir)?;
        let lock = store::lock_file(&dir.join(LOCK))?;
        let mut me = Self::load(dir, secret)?;
        me.lock = Some(lock);
        Ok(me)
    }

    /// Reads the record of the state directory `dir`, writing nothing (`dpq check-policy`);
    /// a directory without a secret has served nothing.
    pub fn read(dir: &Path) -> Result<Self, LedgerError> {
        let secret = match store::existing_secret(dir)? {
            Some(s) => s,
            // A directory with ledgers but no secret is refused, as `dpq serve` refuses it.
            None => {
                store::refuse_old_layout(dir)?;
                // Nothing was ever recorded: fingerprints need only agree with each other.
                store::random_secret()
            }
        };
        Self::load(dir, secret)
    }

    /// No state directory: nothing was ever recorded.
    pub fn empty() -> Self {
        Identities {
            path: PathBuf::new(),
            secret: store::random_secret(),
            record: Record {
                format: 1,
                datasets: BTreeMap::new(),
            },
            lock: None,
            changed: false,
        }
    }

    fn load(dir: &Path, secret: [u8; 32]) -> Result<Self, LedgerError> {
        let path = dir.join(FILE);
        let record = match std::fs::read(&path) {
            Ok(bytes) => parse(&path, &bytes)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => rebuilt(dir)?,
            Err(e) => return Err(store::io_error(&path, e)),
        };
        Ok(Identities {
            path,
            secret,
            record,
            lock: None,
            changed: false,
        })
    }

    /// The id whose ledger `id` uses: itself, or the end of the chain it continues.
    pub fn ledger_of(&self, id: &str) -> String {
        let mut at = id;
        for _ in 0..MAX_CHAIN {
            match self
                .record
                .datasets
                .get(at)
                .and_then(|e| e.continues.as_deref())
            {
                Some(next) => at = next,
                None => break,
            }
        }
        at.to_string()
    }

    /// The id whose ledger `id` continues, as recorded.
    pub fn continued(&self, id: &str) -> Option<&str> {
        self.record
            .datasets
            .get(id)
            .and_then(|e| e.continues.as_deref())
    }

    /// Records that `id` continues `old`'s ledger. Refused when `old` is unknown here, when
    /// `id` already has a ledger of its own, or continues another's.
    pub fn continue_ledger(&mut self, id: &str, old: &str) -> Result<(), IdentityError> {
        let recorded = self.record.datasets.get(id);
        if let Some(r) = recorded.and_then(|e| e.continues.as_deref()) {
            if self.ledger_of(r) == self.ledger_of(old) {
                return Ok(());
            }
            return Err(IdentityError::AlreadyContinues {
                id: id.into(),
                recorded: r.into(),
                old: old.into(),
            });
        }
        if recorded.is_some_and(|e| !e.contents.is_empty())
            || self
                .record
                .datasets
                .values()
                .any(|e| e.continues.as_deref() == Some(id))
        {
            return Err(IdentityError::OwnLedger {
                id: id.into(),
                old: old.into(),
            });
        }
        if !self.record.datasets.contains_key(old) {
            return Err(IdentityError::UnknownOld {
                id: id.into(),
                old: old.into(),
            });
        }
        // `id` has no content and nothing continues it: no chain from `old` can reach it.
        // Recorded as continuing the end of `old`'s chain, so that chains never grow.
        let root = self.ledger_of(old);
        self.record
            .datasets
            .entry(id.to_string())
            .or_default()
            .continues = Some(root);
        self.changed = true;
        Ok(())
    }

    /// Records that `id` serves the content of plain hash `content` (never stored): refused
    /// when an id of another ledger served it before.
    pub fn claim(&mut self, id: &str, content: &[u8; 32]) -> Result<(), IdentityError> {
        let fingerprint = store::fingerprint(&self.secret, content);
        let mine = self.ledger_of(id);
        let other =
            self.record.datasets.iter().find(|(other, e)| {
                e.contents.contains(&fingerprint) && self.ledger_of(other) != mine
            });
        if let Some((other, _)) = other {
            return Err(IdentityError::SpentUnder {
                id: id.into(),
                other: other.clone(),
            });
        }
        let entry = self.record.datasets.entry(id.to_string()).or_default();
        if entry.contents.insert(fingerprint) {
            self.changed = true;
        }
        Ok(())
    }

    /// Writes what was recorded, durably, if anything was and the record is held.
    pub fn save(&mut self) -> Result<(), LedgerError> {
        if !self.changed || self.lock.is_none() {
            return Ok(());
        }
        let json = serde_json::to_vec_pretty(&self.record)
            .map_err(|e| store::io_error(&self.path, std::io::Error::other(e)))?;
        store::write_private(&self.path, &json)?;
        self.changed = false;
        Ok(())
    }
}

/// The record in `bytes`, checked: a known format, fingerprints as dpq writes them, and
/// continuations that end at a recorded id.
fn parse(path: &Path, bytes: &[u8]) -> Result<Record, LedgerError> {
    let damaged = |reason| LedgerError::Damaged {
        path: path.display().to_string(),
        line: 1,
        reason,
    };
    let record: Record =
        serde_json::from_slice(bytes).map_err(|_| damaged("it is not the record dpq writes"))?;
    if record.format != 1 {
        return Err(damaged("its format is not one this dpq reads"));
    }
    for entry in record.datasets.values() {
        if entry
            .contents
            .iter()
            .any(|f| f.len() != 64 || !f.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            return Err(damaged("a fingerprint is not one dpq writes"));
        }
        let mut at = entry;
        for step in 0.. {
            let Some(next) = &at.continues else { break };
            at = record
                .datasets
                .get(next)
                .ok_or_else(|| damaged("an id continues an id it does not record"))?;
            if step > MAX_CHAIN {
                return Err(damaged("its continuations go round in a loop"));
            }
        }
    }
    Ok(record)
}

/// The record a state directory without one implies: for each served ledger, the content it
/// recorded, under its id.
fn rebuilt(dir: &Path) -> Result<Record, LedgerError> {
    let mut record = Record {
        format: 1,
        datasets: BTreeMap::new(),
    };
    let Ok(entries) = std::fs::read_dir(dir.join("ledgers")) else {
        return Ok(record);
    };
    for e in entries.filter_map(Result::ok) {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "ledger") {
            continue;
        }
        let bytes = std::fs::read(&path).map_err(|e| store::io_error(&path, e))?;
        if let Some((id, contents)) = served_contents(&path, &bytes)? {
            record
                .datasets
                .entry(id)
                .or_default()
                .contents
                .extend(contents);
        }
    }
    Ok(record)
}

/// The id and the content fingerprints a served ledger's lines record; `None` for a ledger of
/// data loaded by path. A torn last line (no newline) is left out, as the ledger drops it.
fn served_contents(
    path: &Path,
    bytes: &[u8],
) -> Result<Option<(String, Vec<String>)>, LedgerError> {
    let mut lines = bytes.split_inclusive(|&b| b == b'\n');
    let line = |n: usize, l: &[u8]| -> Result<Option<serde_json::Value>, LedgerError> {
        if !l.ends_with(b"\n") {
            return Ok(None);
        }
        serde_json::from_slice(l)
            .map(Some)
            .map_err(|_| LedgerError::Damaged {
                path: path.display().to_string(),
                line: n,
                reason: "the line is not JSON",
            })
    };
    let Some(header) = lines.next() else {
        return Ok(None);
    };
    let Some(header) = line(1, header)? else {
        return Ok(None);
    };
    let label = header.get("data_file").and_then(|v| v.as_str());
    let Some(id) = label.and_then(|l| l.strip_prefix(SERVED_LABEL)) else {
        return Ok(None);
    };
    let fingerprint = |v: &serde_json::Value| {
        let kind = v.get("type").and_then(|t| t.as_str());
        matches!(kind, Some("header" | "data"))
            .then(|| v.get("fingerprint").and_then(|f| f.as_str()))
            .flatten()
            .map(str::to_string)
    };
    let mut contents: Vec<String> = fingerprint(&header).into_iter().collect();
    for (i, l) in lines.enumerate() {
        if let Some(v) = line(i + 2, l)? {
            contents.extend(fingerprint(&v));
        }
    }
    Ok(Some((id.to_string(), contents)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh() -> (tempfile::TempDir, Identities) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let ids = Identities::open(dir.path()).expect("a new state directory");
        (dir, ids)
    }

    #[test]
    fn content_stays_with_its_ledger() {
        let (dir, mut ids) = fresh();
        let x = [1u8; 32];
        ids.claim("a", &x).expect("new content");
        ids.claim("a", &[2u8; 32])
            .expect("a re-export under the same id");
        let err = ids.claim("b", &x).expect_err("another id");
        assert!(matches!(err, IdentityError::SpentUnder { ref other, .. } if other == "a"));
        ids.continue_ledger("b", "a").expect("b continues a");
        ids.claim("b", &x).expect("the same ledger");
        assert_eq!(ids.ledger_of("b"), "a");
        ids.save().expect("saved");
        drop(ids);
        let again = Identities::read(dir.path()).expect("read back");
        assert_eq!(again.ledger_of("b"), "a", "a continuation holds for good");
        let text = std::fs::read_to_string(dir.path().join(FILE)).expect("the record");
        assert!(!text.contains(&blake3::Hash::from(x).to_hex().to_string()));
    }

    #[test]
    fn continuations_are_checked() {
        let (_dir, mut ids) = fresh();
        ids.claim("a", &[1u8; 32]).expect("a");
        ids.claim("c", &[3u8; 32]).expect("c");
        assert!(matches!(
            ids.continue_ledger("b", "z"),
            Err(IdentityError::UnknownOld { .. })
        ));
        assert!(matches!(
            ids.continue_ledger("c", "a"),
            Err(IdentityError::OwnLedger { .. })
        ));
        ids.continue_ledger("b", "a").expect("b continues a");
        assert!(matches!(
            ids.continue_ledger("a", "b"),
            Err(IdentityError::OwnLedger { .. })
        ));
        assert!(matches!(
            ids.continue_ledger("b", "c"),
            Err(IdentityError::AlreadyContinues { .. })
        ));
        ids.continue_ledger("d", "b").expect("a chain");
        assert_eq!(ids.ledger_of("d"), "a");
    }

    #[test]
    fn a_damaged_record_is_refused() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        for text in [
            "{",
            r#"{"format":2,"datasets":{}}"#,
            r#"{"format":1,"datasets":{"a":{"contents":["xy"]}}}"#,
            r#"{"format":1,"datasets":{"a":{"continues":"b"}}}"#,
            r#"{"format":1,"datasets":{"a":{"continues":"b"},"b":{"continues":"a"}}}"#,
        ] {
            std::fs::write(dir.path().join(FILE), text).expect("written");
            assert!(
                matches!(
                    Identities::read(dir.path()),
                    Err(LedgerError::Damaged { .. })
                ),
                "{text}"
            );
        }
    }
}
