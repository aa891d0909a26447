//! A policy's datasets against what the state directory remembers of their identities: one
//! source under one id, content spent under one id never served under another's ledger
//! without `continues`, and each dataset's ledger found through the continuations recorded.
//! `dpq serve` records what it serves; `dpq check-policy` reports the same refusals and
//! writes nothing.

use super::policy::{DataSource, Dataset, Policy};
use crate::privacy::{Identities, IdentityError};
use std::path::{Path, PathBuf};

/// The identities of a server's datasets, settled, their record locked until dropped.
pub struct Settled {
    identities: Identities,
    /// Each dataset's name and id, as the policy writes them.
    ids: Vec<(String, String)>,
    dir: PathBuf,
}

impl Settled {
    /// Settles the datasets of `policy` in the state directory `dir` (which exists): refuses
    /// two datasets on one source and a `continues` that cannot hold, and records the
    /// continuations. Returns the policy as its ledgers key it: each dataset's `id` is the id
    /// whose ledger it uses (its own, or the one it continues).
    pub fn open(policy: &Policy, dir: &Path) -> Result<(Settled, Policy), String> {
        same_sources(&policy.datasets)?;
        let identities = Identities::open(dir).map_err(|e| format!("the state directory: {e}"))?;
        let mut settled = Settled {
            identities,
            ids: ids(policy),
            dir: dir.to_path_buf(),
        };
        settled.continuations(policy)?;
        let mut keyed = policy.clone();
        for d in &mut keyed.datasets {
            d.id = settled.identities.ledger_of(&d.id);
        }
        Ok((settled, keyed))
    }

    /// Records that dataset `name` serves the content of plain hash `content` (durably at
    /// [`Settled::commit`]);
    /// refused when an id of another ledger served it before, or another dataset of the
    /// policy serves it.
    pub fn claim(&mut self, name: &str, content: &[u8; 32]) -> Result<(), String> {
        let id = self.id(name);
        self.identities
            .claim(&id, content)
            .map_err(|e| self.refusal(name, e))
    }

    /// Writes what was settled and claimed, durably: once every dataset has been read and
    /// claimed, before any analyst is served, so a start that fails records nothing (not a
    /// continuation either).
    pub fn commit(&mut self) -> Result<(), String> {
        self.identities
            .save()
            .map_err(|e| format!("the state directory: {e}"))
    }

    fn id(&self, name: &str) -> String {
        self.ids
            .iter()
            .find(|(n, _)| n == name)
            .map_or(name, |(_, id)| id.as_str())
            .to_string()
    }

    /// Records the policy's continuations, and refuses two datasets on one ledger.
    fn continuations(&mut self, policy: &Policy) -> Result<(), String> {
        for d in &policy.datasets {
            if let Some(old) = &d.continues {
                self.identities
                    .continue_ledger(&d.id, old)
                    .map_err(|e| self.refusal(&d.name, e))?;
            }
        }
        for (i, a) in policy.datasets.iter().enumerate() {
            let ledger = self.identities.ledger_of(&a.id);
            if let Some(b) = policy.datasets[i + 1..]
                .iter()
                .find(|b| self.identities.ledger_of(&b.id) == ledger)
            {
                return Err(format!(
                    "datasets `{}` (id {}) and `{}` (id {}) would share one ledger, id {ledger}'s (the state directory records that one continues the other's): serve one of them",
                    a.name, a.id, b.name, b.id
                ));
            }
        }
        Ok(())
    }

    /// A refusal as the curator reads it: what, which ids, and the way out.
    fn refusal(&self, name: &str, e: IdentityError) -> String {
        let id = self.id(name);
        match e {
            IdentityError::SpentUnder { other, .. } => {
                match self.ids.iter().find(|(_, i)| *i == other) {
                    Some((o, _)) => format!(
                        "datasets `{o}` (id {other}) and `{name}` (id {id}) serve the same data: under two ids it would have two budgets; serve it once"
                    ),
                    None => format!(
                        "dataset `{name}` (id {id}) serves data already served under id {other}, whose ledger holds what was spent on it: a new id would start its budget anew. Keep `id = \"{other}\"`, or add `continues = \"{other}\"` to dataset `{name}` so that id {id} keeps id {other}'s ledger"
                    ),
                }
            }
            IdentityError::UnknownOld { old, .. } => format!(
                "dataset `{name}` (id {id}): `continues = \"{old}\"`, but the state directory {} records no dataset of id {old}: name an id it served, or check the state directory",
                self.dir.display()
            ),
            IdentityError::OwnLedger { old, .. } => format!(
                "dataset `{name}` (id {id}): id {id} already has a ledger of its own, so it cannot continue id {old}'s: give the dataset a new id with `continues = \"{old}\"`, or drop `continues`"
            ),
            IdentityError::AlreadyContinues { recorded, old, .. } => format!(
                "dataset `{name}` (id {id}): the state directory records that id {id} continues id {recorded}'s ledger, and that cannot change: write `continues = \"{recorded}\"` or drop it, not `continues = \"{old}\"`"
            ),
            IdentityError::Ledger(e) => format!("the state directory: {e}"),
        }
    }
}

/// `dpq check-policy`: the refusals `dpq serve` would give the datasets of `policy`, whose
/// content (plain hashes, by dataset name) was read, against the state directory `dir` if
/// given. Writes nothing. Returns what is worth telling the curator, or the first refusal.
pub fn check(
    policy: &Policy,
    dir: Option<&Path>,
    contents: &[(String, [u8; 32])],
) -> Result<Vec<String>, String> {
    same_sources(&policy.datasets)?;
    let identities = match dir {
        Some(dir) => Identities::read(dir).map_err(|e| format!("the state directory: {e}"))?,
        None => Identities::empty(),
    };
    let mut settled = Settled {
        identities,
        ids: ids(policy),
        dir: dir.map(Path::to_path_buf).unwrap_or_default(),
    };
    settled.continuations(policy)?;
    for (name, content) in contents {
        let id = settled.id(name);
        settled
            .identities
            .claim(&id, content)
            .map_err(|e| settled.refusal(name, e))?;
    }
    let mut notes = Vec::new();
    for d in &policy.datasets {
        let ledger = settled.identities.ledger_of(&d.id);
        if ledger != d.id {
            notes.push(format!(
                "dataset `{}` (id {}) keeps the ledger of id {ledger}{}",
                d.name,
                d.id,
                if d.continues.is_some() {
                    ""
                } else {
                    " (recorded in the state directory)"
                }
            ));
        }
    }
    Ok(notes)
}

fn ids(policy: &Policy) -> Vec<(String, String)> {
    policy
        .datasets
        .iter()
        .map(|d| (d.name.clone(), d.id.clone()))
        .collect()
}

/// Refuses two datasets reading one source: the same file (by its resolved path, whatever
/// relative path or link names it), the same Parquet files, or the same PostgreSQL table.
fn same_sources(datasets: &[Dataset]) -> Result<(), String> {
    // Parquet sources by the files they name, so that a directory and one of its files, or
    // two patterns that meet, are found to share them.
    let key = |d: &Dataset| match &d.source {
        DataSource::File(p) if crate::data::is_parquet_path(p) => {
            Key::Files(crate::data::parquet_files(p).unwrap_or_else(|_| vec![p.clone()]))
        }
        DataSource::File(p) => Key::File(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())),
        DataSource::Postgres { conninfo, table } => Key::Table(conninfo.clone(), table.clone()),
        DataSource::Spark { url, table } => Key::Table(url.clone(), table.join(".")),
    };
    let keys: Vec<Key> = datasets.iter().map(key).collect();
    for (i, a) in datasets.iter().enumerate() {
        if let Some(j) = (i + 1..datasets.len()).find(|&j| keys[j].meets(&keys[i])) {
            let b = &datasets[j];
            return Err(format!(
                "datasets `{}` (id {}) and `{}` (id {}) read the same source, {}: under two ids it would have two budgets; serve it once (a new id can keep an old one's ledger with `continues`)",
                a.name, a.id, b.name, b.id, b.source
            ));
        }
    }
    Ok(())
}

/// What makes two sources the same.
#[derive(PartialEq)]
enum Key {
    File(PathBuf),
    /// Parquet files, resolved.
    Files(Vec<PathBuf>),
    Table(String, String),
}

impl Key {
    /// Whether the two sources share rows: the same file or table, or a Parquet file in both.
    fn meets(&self, other: &Key) -> bool {
        match (self, other) {
            (Key::Files(a), Key::Files(b)) => a.iter().any(|f| b.contains(f)),
            (Key::Files(a), Key::File(f)) | (Key::File(f), Key::Files(a)) => a.contains(f),
            _ => self == other,
        }
    }
}
