//! Where ledgers live and how a data file finds its own: the state directory, its secret, and
//! the index from content to ledger.
//!
//! A ledger belongs to the data's content first and to its path second: content seen before
//! leads to the ledger that saw it, wherever the file now lies (a copy, a rename, a copy
//! written over a path that had a ledger of its own); new content at a known path continues
//! that path's ledger (the file was edited: its spending still counts). The lookup and the
//! creation of a ledger happen under one lock of the state directory, so two first loads of
//! two copies at the same moment find one ledger.
//!
//! Nothing stored is an unkeyed function of the data: fingerprints and ledger names are
//! BLAKE3 in keyed mode under a random secret made once per state directory (readable by its
//! owner only, as is everything here), so a copy of the ledgers cannot confirm a guessed file.
// Without files (wasm32) a `File` holds nothing to drop; the drops that end a lock here stay.
#![cfg_attr(target_arch = "wasm32", allow(clippy::drop_non_drop))]

use super::history::{History, Unit};
use super::ledger::{sync_dir, Header, Ledger, LedgerError};
use super::Neighbours;
use crate::sys::fs::{DirBuilderExt, OpenOptionsExt};
use rand::RngCore;
use rust_decimal::Decimal;
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where a session keeps its ledgers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    dir: Option<PathBuf>,
    sync: bool,
    /// State directories not used, which charts must still never be written into (the
    /// default one when another is given, or the one practice leaves alone).
    guards: Vec<PathBuf>,
}

impl Store {
    /// Nowhere: spending lasts as long as the session (practice, library use and tests).
    pub fn memory() -> Self {
        Self {
            dir: None,
            sync: true,
            guards: Vec::new(),
        }
    }

    /// In memory, beside the state directory `dir` that is left alone: nothing is read from
    /// it or written to it, charts included (practice).
    pub fn memory_beside(dir: impl Into<PathBuf>) -> Self {
        Self::memory().guarding(dir)
    }

    /// The same store, keeping charts out of another state directory too.
    pub fn guarding(mut self, dir: impl Into<PathBuf>) -> Self {
        self.guards.push(dir.into());
        self
    }

    /// Under the state directory `dir`.
    pub fn dir(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: Some(dir.into()),
            sync: true,
            guards: Vec::new(),
        }
    }

    /// The same store without `fsync`: for benchmarks and tests that build long ledgers. A
    /// crash may then lose recorded spending; never for real budgets.
    pub fn unsynced(self) -> Self {
        Self {
            sync: false,
            ..self
        }
    }

    /// The state directory, unless ledgers are kept in memory.
    pub fn state_dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }
}

/// A ledger open in a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LedgerId(usize);

/// What opening a data file's ledger found.
#[derive(Debug)]
pub struct Opened {
    /// The ledger.
    pub ledger: LedgerId,
    /// The keyed fingerprint of the content: it names this content in the ledger.
    pub fingerprint: String,
    /// Whether the content differs from what the ledger saw last.
    pub changed: bool,
    /// What opening had to report (a torn line dropped, a mark remade).
    pub warnings: Vec<String>,
}

/// The ledgers of a session, each opened once and shared by every table loaded from its data.
pub struct Ledgers {
    store: Store,
    secret: Option<[u8; 32]>,
    open: Vec<Ledger>,
    /// Ledgers open, by name (on disk) or by fingerprint and path (in memory).
    by_name: HashMap<String, usize>,
    by_path: HashMap<PathBuf, usize>,
}

/// What a ledger for data new to the store starts with, and the model a `LOAD` asks for.
#[derive(Debug, Clone)]
pub struct Fresh {
    /// The budget of a new ledger.
    pub total: Decimal,
    /// The neighbour model asked for (`None`: the ledger's, or `replace` for a new one).
    pub neighbours: Option<Neighbours>,
    /// The privacy unit asked for (`None`: the ledger's, or none for a new one). A unit is
    /// declared under `add_remove` only: the caller asks for that model with it.
    pub unit: Option<Unit>,
    /// When.
    pub time: u64,
}

/// Why a ledger was not opened: it cannot be used, or the caller refused it as read.
#[derive(Debug)]
pub enum OpenError<E> {
    /// The ledger or the state directory cannot be used.
    Ledger(LedgerError),
    /// The caller's judgement of the ledger as read.
    Refused(E),
}

impl<E> From<LedgerError> for OpenError<E> {
    fn from(e: LedgerError) -> Self {
        OpenError::Ledger(e)
    }
}

/// What a new ledger starts with.
struct New<'a> {
    data_file: &'a Path,
    fingerprint: &'a str,
    path: &'a str,
    fresh: &'a Fresh,
}

/// The secret's file in a state directory.
const SECRET: &str = "secret";

impl Ledgers {
    /// No ledger open yet, in `store`.
    pub fn new(store: Store) -> Self {
        // In memory a secret of the session's own keys the fingerprints: nothing persists.
        let secret = store.dir.is_none().then(random_secret);
        Self {
            store,
            secret,
            open: Vec::new(),
            by_name: HashMap::new(),
            by_path: HashMap::new(),
        }
    }

    /// Where the ledgers are kept.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// An open ledger.
    pub fn get(&self, id: LedgerId) -> &Ledger {
        &self.open[id.0]
    }

    /// An open ledger, to read or spend.
    pub fn get_mut(&mut self, id: LedgerId) -> &mut Ledger {
        &mut self.open[id.0]
    }

    /// Two different open ledgers at once.
    pub fn two_mut(&mut self, a: LedgerId, b: LedgerId) -> Option<(&mut Ledger, &mut Ledger)> {
        if a.0 == b.0 || a.0 >= self.open.len() || b.0 >= self.open.len() {
            return None;
        }
        if a.0 < b.0 {
            let (lo, hi) = self.open.split_at_mut(b.0);
            Some((&mut lo[a.0], &mut hi[0]))
        } else {
            let (lo, hi) = self.open.split_at_mut(a.0);
            Some((&mut hi[0], &mut lo[b.0]))
        }
    }

    /// A ledger kept in memory, starting as a copy of ledger `id` as last read: where a
    /// seeded session records its releases, apart from the data's own ledger.
    pub fn practice_copy(&mut self, id: LedgerId) -> LedgerId {
        let copy = self.open[id.0].practice_copy();
        self.open.push(copy);
        LedgerId(self.open.len() - 1)
    }

    /// Whether `path` names something inside the state directory (a chart must never be
    /// written there).
    pub fn holds(&self, path: &Path) -> bool {
        let Some(path) = resolved(path) else {
            return false;
        };
        self.store
            .dir
            .iter()
            .chain(&self.store.guards)
            .filter_map(|dir| std::fs::canonicalize(dir).ok())
            .any(|dir| path.starts_with(dir))
    }

    /// Opens the ledger of the data file `data_file` (canonical) whose content has the plain
    /// hash `content` (never stored); a ledger for data new to the store starts as `fresh`
    /// says. `accept` judges the ledger as read before anything is written (a table that does
    /// not fit the cube its ledger declares, say): a refused `LOAD` changes nothing. Then the
    /// ledger records where and what was loaded, when that is new to it.
    ///
    /// The lookup goes content first, then path; both indexes are caches of what the ledgers
    /// record (the content and path of every load), and a miss is answered by searching the
    /// ledgers themselves, so losing an index loses nothing. The index entries are written
    /// before the ledger's line, so a crash between them is recovered by the next load.
    pub fn open<E>(
        &mut self,
        data_file: &Path,
        content: &[u8; 32],
        fresh: Fresh,
        accept: impl FnOnce(&History) -> Result<(), E>,
    ) -> Result<Opened, OpenError<E>> {
        let Some(dir) = self.store.dir.clone() else {
            return self.open_in_memory(data_file, content, fresh, accept);
        };
        let secret = self.secret(&dir)?;
        let fingerprint = fingerprint(&secret, content);
        let data_file = &held_rows(data_file, &fingerprint);
        let path_key = path_name(&secret, data_file);
        let guard = lock_file(&dir.join("index.lock"))?;
        let content_entry = dir.join("content").join(&fingerprint);
        let path_entry = dir.join("paths").join(&path_key);
        let by_content = match read_name(&content_entry)? {
            Some(name) => Some(name),
            None => self.recover(&dir, &fingerprint, |l| l.has_seen(&fingerprint))?,
        };
        let by_path = match read_name(&path_entry)? {
            Some(name) => Some(name),
            None => self.recover(&dir, &path_key, |l| l.has_path(&path_key))?,
        };
        let id = match (&by_content, &by_path) {
            (Some(c), Some(p)) if c != p => {
                // The content was loaded elsewhere, and this path's own ledger has a history:
                // the file may be a copy of that data or an edit of this path's, and dpq cannot
                // tell which people its answers would concern.
                let p_id = self.existing(&dir, p)?;
                let c_id = self.existing(&dir, c)?;
                let own = self.open[p_id].history();
                if !own.releases().is_empty() && !self.open[p_id].has_seen(&fingerprint) {
                    return Err(OpenError::Ledger(LedgerError::TwoLedgers {
                        content: self.shown(c_id),
                        path: self.shown(p_id),
                    }));
                }
                c_id
            }
            (Some(name), _) | (None, Some(name)) => self.existing(&dir, name)?,
            (None, None) => {
                let new = New {
                    data_file,
                    fingerprint: &fingerprint,
                    path: &path_key,
                    fresh: &fresh,
                };
                self.created(&dir, &path_key, &new)?
            }
        };
        let name = self.open[id]
            .path()
            .and_then(|p| p.file_stem())
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (changed, warnings) =
            self.record_load(id, &fingerprint, &path_key, &fresh, accept, |_| {
                // Index first: an entry naming a ledger that has not yet recorded this load is
                // what a crash between the two leaves, and the next load finishes the record.
                if by_content.as_deref() != Some(name.as_str()) {
                    write_private(&content_entry, name.as_bytes())?;
                }
                if by_path.as_deref() != Some(name.as_str()) {
                    write_private(&path_entry, name.as_bytes())?;
                }
                Ok(())
            })?;
        drop(guard);
        Ok(Opened {
            ledger: LedgerId(id),
            fingerprint,
            changed,
            warnings,
        })
    }

    /// Under ledger `id`'s lock, as just read: `accept`, the index writes, the neighbour model
    /// asked for, and the line recording this load when it is new to the ledger.
    fn record_load<E>(
        &mut self,
        id: usize,
        fingerprint: &str,
        path: &str,
        fresh: &Fresh,
        accept: impl FnOnce(&History) -> Result<(), E>,
        index: impl FnOnce(&Ledger) -> Result<(), LedgerError>,
    ) -> Result<(bool, Vec<String>), OpenError<E>> {
        let ledger = &mut self.open[id];
        let mut txn = ledger.begin()?;
        accept(txn.history()).map_err(OpenError::Refused)?;
        index(txn.ledger())?;
        if let Some(m) = fresh.neighbours {
            if m != txn.history().neighbours() {
                txn.set_neighbours(m, fresh.time)?;
            }
        }
        if let Some(u) = &fresh.unit {
            if Some(u) != txn.history().unit() {
                txn.set_unit(u, fresh.time)?;
            }
        }
        let changed = txn.ledger().fingerprint() != fingerprint;
        if changed || txn.ledger().last_path() != path {
            txn.add_content(fingerprint, path, fresh.time)?;
        }
        drop(txn);
        Ok((changed, ledger.take_warnings()))
    }

    /// Opens the ledger of a served dataset, named by its curator's `label` (the dataset's
    /// identity, not its content: a re-exported file keeps its budget), for its data of plain
    /// hash `content`, as a whole (the curator) or as the `view` of one analyst with their
    /// cap. A new ledger starts as `fresh` says; `accept` judges the ledger as read before
    /// anything is written, as [`Ledgers::open`]'s does. Served ledgers are not in the content
    /// index: data loaded by path in the same state directory keeps ledgers of its own.
    pub fn open_served<E>(
        &mut self,
        label: &str,
        view: Option<(&str, Decimal)>,
        content: &[u8; 32],
        fresh: Fresh,
        accept: impl FnOnce(&History) -> Result<(), E>,
    ) -> Result<Opened, OpenError<E>> {
        let Some(dir) = self.store.dir.clone() else {
            return Err(OpenError::Ledger(LedgerError::Io {
                path: label.to_string(),
                message: "a served dataset needs a state directory".into(),
            }));
        };
        let secret = self.secret(&dir)?;
        let fingerprint = fingerprint(&secret, content);
        let name = path_name(&secret, Path::new(label));
        let key = match view {
            Some((analyst, _)) => format!("{name}/{analyst}"),
            None => name.clone(),
        };
        let guard = lock_file(&dir.join("index.lock"))?;
        let id = match self.by_name.get(&key) {
            Some(&i) => i,
            None => {
                let path = dir.join("ledgers").join(format!("{name}.ledger"));
                if std::fs::metadata(&path).is_err() {
                    let new = New {
                        data_file: Path::new(label),
                        fingerprint: &fingerprint,
                        path: &name,
                        fresh: &fresh,
                    };
                    let made = self.created(&dir, &name, &new)?;
                    // Made for its header only: read again as the view asked for.
                    self.by_name.remove(&name);
                    if made + 1 == self.open.len() {
                        self.open.pop();
                    }
                }
                let ledger = Ledger::open_as(&path, &name, self.store.sync, view)?;
                self.open.push(ledger);
                self.by_name.insert(key, self.open.len() - 1);
                self.open.len() - 1
            }
        };
        let (changed, warnings) =
            self.record_load(id, &fingerprint, &name, &fresh, accept, |_| Ok(()))?;
        drop(guard);
        Ok(Opened {
            ledger: LedgerId(id),
            fingerprint,
            changed,
            warnings,
        })
    }

    /// The ledger file's path, for messages.
    fn shown(&self, id: usize) -> String {
        self.open[id]
            .path()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    }

    /// Ledger `name`, open in this session or read now; it must exist.
    fn existing(&mut self, dir: &Path, name: &str) -> Result<usize, LedgerError> {
        if let Some(&i) = self.by_name.get(name) {
            return Ok(i);
        }
        let path = dir.join("ledgers").join(format!("{name}.ledger"));
        let ledger = match std::fs::metadata(&path) {
            Ok(_) => Ledger::open(&path, name, self.store.sync)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(LedgerError::Missing {
                    path: path.display().to_string(),
                    reason: "the state directory's index names it for this data",
                })
            }
            Err(e) => return Err(io_error(&path, e)),
        };
        self.open.push(ledger);
        self.by_name.insert(name.to_string(), self.open.len() - 1);
        Ok(self.open.len() - 1)
    }

    /// A new ledger for data new to the store, named by its path.
    fn created(&mut self, dir: &Path, name: &str, new: &New) -> Result<usize, LedgerError> {
        let path = dir.join("ledgers").join(format!("{name}.ledger"));
        let mark = path.with_extension("hwm");
        match std::fs::metadata(&path) {
            // A ledger whose creation never finished (no header, no mark): nothing was spent.
            Ok(m) if m.len() == 0 && !mark.exists() => {
                std::fs::remove_file(&path).map_err(|e| io_error(&path, e))?;
            }
            // Neither index knows it, yet it exists: its lines are the truth.
            Ok(_) => return self.existing(dir, name),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error(&path, e)),
        }
        if mark.exists() {
            return Err(LedgerError::Missing {
                path: path.display().to_string(),
                reason: "the high-water mark beside it shows it held spending",
            });
        }
        let data_file = new.data_file.display().to_string();
        let ledger = Ledger::create(
            &path,
            &Header {
                name,
                data_file: &data_file,
                fingerprint: new.fingerprint,
                path: new.path,
                total: new.fresh.total,
                neighbours: new.fresh.neighbours.unwrap_or_default(),
                time: new.fresh.time,
            },
            self.store.sync,
        )?;
        self.open.push(ledger);
        self.by_name.insert(name.to_string(), self.open.len() - 1);
        Ok(self.open.len() - 1)
    }

    /// After an index miss: the ledger whose lines hold `needle` (a keyed fingerprint or path)
    /// and for which `holds` is true, found by searching the ledgers' bytes; the most recently
    /// written one if several do. Reads every ledger once: it is what an index saves.
    fn recover(
        &mut self,
        dir: &Path,
        needle: &str,
        holds: impl Fn(&Ledger) -> bool,
    ) -> Result<Option<String>, LedgerError> {
        let Ok(entries) = std::fs::read_dir(dir.join("ledgers")) else {
            return Ok(None);
        };
        let finder = memchr::memmem::Finder::new(needle.as_bytes());
        let mut found: Vec<(std::time::SystemTime, String)> = Vec::new();
        for e in entries.filter_map(Result::ok) {
            let path = e.path();
            if path.extension().is_none_or(|x| x != "ledger") {
                continue;
            }
            let Some(name) = path.file_stem().map(|s| s.to_string_lossy().into_owned()) else {
                continue;
            };
            let bytes = std::fs::read(&path).map_err(|e| io_error(&path, e))?;
            if finder.find(&bytes).is_none() || !is_ledger_name(&name) {
                continue;
            }
            let id = self.existing(dir, &name)?;
            if holds(&self.open[id]) {
                let time = e
                    .metadata()
                    .and_then(|m| m.modified())
                    .map_err(|e| io_error(&path, e))?;
                found.push((time, name));
            }
        }
        Ok(found.into_iter().max().map(|(_, name)| name))
    }

    /// In memory: the same lookup, content first, then path.
    fn open_in_memory<E>(
        &mut self,
        data_file: &Path,
        content: &[u8; 32],
        fresh: Fresh,
        accept: impl FnOnce(&History) -> Result<(), E>,
    ) -> Result<Opened, OpenError<E>> {
        let secret = self.secret.unwrap_or_else(random_secret);
        let fingerprint = fingerprint(&secret, content);
        let data_file = &held_rows(data_file, &fingerprint);
        let path_key = path_name(&secret, data_file);
        let found = self
            .by_name
            .get(&fingerprint)
            .or_else(|| self.by_path.get(data_file))
            .copied();
        let id = match found {
            Some(i) => i,
            None => {
                let neighbours = fresh.neighbours.unwrap_or_default();
                self.open
                    .push(Ledger::memory(fresh.total, neighbours, &fingerprint));
                self.open.len() - 1
            }
        };
        let (changed, warnings) =
            self.record_load(id, &fingerprint, &path_key, &fresh, accept, |_| Ok(()))?;
        self.by_name.insert(fingerprint.clone(), id);
        self.by_path.insert(data_file.to_path_buf(), id);
        Ok(Opened {
            ledger: LedgerId(id),
            fingerprint,
            changed,
            warnings,
        })
    }

    /// The state directory's secret, made the first time (0600, never replaced).
    fn secret(&mut self, dir: &Path) -> Result<[u8; 32], LedgerError> {
        if let Some(s) = self.secret {
            return Ok(s);
        }
        let path = dir.join(SECRET);
        // Nothing is made in a state directory that is refused.
        let secret = match std::fs::read(&path) {
            Ok(bytes) => {
                let secret =
                    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| LedgerError::Damaged {
                        path: path.display().to_string(),
                        line: 1,
                        reason: "the secret is not 32 bytes",
                    })?;
                check_secret(dir, &secret)?;
                secret
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                refuse_old_layout(dir)?;
                private_dir(dir)?;
                make_secret(&path)?
            }
            Err(e) => return Err(io_error(&path, e)),
        };
        tighten(dir)?;
        for sub in ["ledgers", "content", "paths"] {
            private_dir(&dir.join(sub))?;
        }
        self.secret = Some(secret);
        Ok(secret)
    }
}

/// The secret of the state directory `dir`, made (with the directory) if it is new and
/// checked against its ledgers if not.
pub(super) fn state_secret(dir: &Path) -> Result<[u8; 32], LedgerError> {
    Ledgers::new(Store::dir(dir)).secret(dir)
}

/// The secret of the state directory `dir` if it has one; nothing is made or changed.
pub(super) fn existing_secret(dir: &Path) -> Result<Option<[u8; 32]>, LedgerError> {
    let path = dir.join(SECRET);
    match std::fs::read(&path) {
        Ok(bytes) => <[u8; 32]>::try_from(bytes.as_slice())
            .map(Some)
            .map_err(|_| LedgerError::Damaged {
                path: path.display().to_string(),
                line: 1,
                reason: "the secret is not 32 bytes",
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(&path, e)),
    }
}

/// The ledger name an index entry holds, if there is one.
fn read_name(entry: &Path) -> Result<Option<String>, LedgerError> {
    match std::fs::read_to_string(entry) {
        Ok(name) if is_ledger_name(name.trim()) => Ok(Some(name.trim().to_string())),
        Ok(_) => Err(LedgerError::Damaged {
            path: entry.display().to_string(),
            line: 1,
            reason: "the index entry does not name a ledger",
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(entry, e)),
    }
}

/// Refuses a secret that is not the one the state directory's ledgers were made with (a
/// secret from elsewhere would start every budget anew): each ledger is named by the keyed
/// hash of the path its header names, so the right secret names at least one of them (the
/// first few readable ones are tried).
fn check_secret(dir: &Path, secret: &[u8; 32]) -> Result<(), LedgerError> {
    let Ok(entries) = std::fs::read_dir(dir.join("ledgers")) else {
        return Ok(());
    };
    let mut ledgers: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ledger"))
        .collect();
    ledgers.sort();
    let named: Vec<bool> = ledgers
        .iter()
        .filter_map(|ledger| {
            let data_file = header_data_file(ledger)?;
            let stem = ledger.file_stem()?.to_string_lossy().into_owned();
            Some(stem == path_name(secret, Path::new(&data_file)))
        })
        .take(16)
        .collect();
    if named.is_empty() || named.contains(&true) {
        Ok(())
    } else {
        Err(LedgerError::WrongSecret {
            path: dir.join(SECRET).display().to_string(),
        })
    }
}

/// The data file a ledger's header names, if its first line can be read.
fn header_data_file(ledger: &Path) -> Option<String> {
    use std::io::{BufRead, Read};
    let file = File::open(ledger).ok()?;
    let mut line = String::new();
    std::io::BufReader::new(file.take(1 << 20))
        .read_line(&mut line)
        .ok()?;
    let header: serde_json::Value = serde_json::from_str(line.trim_end()).ok()?;
    Some(header.get("data_file")?.as_str()?.to_string())
}

/// A state directory with ledgers but no secret: written by an earlier dpq (ledgers without
/// high-water marks) or lost its secret (without which no ledger can be found again).
pub(super) fn refuse_old_layout(dir: &Path) -> Result<(), LedgerError> {
    let Ok(entries) = std::fs::read_dir(dir.join("ledgers")) else {
        return Ok(());
    };
    let names: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    if names.is_empty() {
        return Ok(());
    }
    if names
        .iter()
        .any(|p| p.extension().is_some_and(|x| x == "hwm"))
    {
        return Err(LedgerError::Missing {
            path: dir.join(SECRET).display().to_string(),
            reason: "the ledgers of this state directory are found through it",
        });
    }
    Err(LedgerError::OldLayout {
        dir: dir.display().to_string(),
    })
}

/// Writes a new random secret at `path` unless another process just did; returns the one
/// that stands.
fn make_secret(path: &Path) -> Result<[u8; 32], LedgerError> {
    let secret = random_secret();
    let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
    write_synced(&tmp, &secret)?;
    // A hard link never replaces: if another process made the secret first, theirs stands.
    let linked = std::fs::hard_link(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => {
            sync_dir(path.parent()).map_err(|e| io_error(path, e))?;
            Ok(secret)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let bytes = std::fs::read(path).map_err(|e| io_error(path, e))?;
            <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| LedgerError::Damaged {
                path: path.display().to_string(),
                line: 1,
                reason: "the secret is not 32 bytes",
            })
        }
        Err(e) => Err(io_error(path, e)),
    }
}

pub(super) fn random_secret() -> [u8; 32] {
    let mut secret = [0u8; 32];
    rand::rng().fill_bytes(&mut secret);
    secret
}

/// The keyed fingerprint of content whose plain BLAKE3 hash is `content`.
pub(super) fn fingerprint(secret: &[u8; 32], content: &[u8; 32]) -> String {
    let key = blake3::derive_key("dpq 2026-11 content fingerprint", secret);
    blake3::keyed_hash(&key, content).to_hex().to_string()
}

/// What rows held in memory (a DataFrame's) load from in place of a file: they have no path,
/// and the store names them by their content's keyed fingerprint.
pub const HELD_ROWS: &str = "memory:";

/// `data_file`, or for rows held in memory ([`HELD_ROWS`]) a path of their keyed fingerprint:
/// their own, never another's, and nothing a ledger writes down tells their plain hash.
fn held_rows(data_file: &Path, fingerprint: &str) -> PathBuf {
    if data_file == Path::new(HELD_ROWS) {
        PathBuf::from(format!("{HELD_ROWS}{fingerprint}"))
    } else {
        data_file.to_path_buf()
    }
}

/// The name of the ledger a new content at `data_file` starts: a keyed hash of the path.
fn path_name(secret: &[u8; 32], data_file: &Path) -> String {
    let key = blake3::derive_key("dpq 2026-11 ledger name", secret);
    // The path as the ledger's header writes it, so that a secret can be checked against it.
    let shown = data_file.display().to_string();
    blake3::keyed_hash(&key, shown.as_bytes()).to_hex()[..32].to_string()
}

/// Whether `name` is a ledger name as [`path_name`] makes them (and no path elsewhere).
fn is_ledger_name(name: &str) -> bool {
    name.len() == 32 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `path` with its directory resolved (the file itself need not exist).
fn resolved(path: &Path) -> Option<PathBuf> {
    if let Ok(p) = std::fs::canonicalize(path) {
        return Some(p);
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    Some(std::fs::canonicalize(parent).ok()?.join(path.file_name()?))
}

/// Takes an exclusive lock on the file `path` (made if absent), held until dropped. A lock
/// file deleted or replaced while the lock was awaited is caught by looking again once it is
/// held, so two processes never hold locks of two files under one name.
pub(super) fn lock_file(path: &Path) -> Result<File, LedgerError> {
    use crate::sys::fs::MetadataExt;
    let io = |e| io_error(path, e);
    for _ in 0..8 {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(io)?;
        file.lock().map_err(io)?;
        let held = file.metadata().map_err(io)?;
        let named = std::fs::metadata(path).ok();
        if named.is_some_and(|m| (m.dev(), m.ino()) == (held.dev(), held.ino())) {
            return Ok(file);
        }
    }
    Err(LedgerError::Io {
        path: path.display().to_string(),
        message: "the lock file keeps being replaced".into(),
    })
}

/// Writes `bytes` to `path` through a temporary file renamed into place, durably, readable by
/// its owner only.
pub(super) fn write_private(path: &Path, bytes: &[u8]) -> Result<(), LedgerError> {
    let tmp = path.with_extension("tmp");
    write_synced(&tmp, bytes)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io_error(path, e)
    })?;
    sync_dir(path.parent()).map_err(|e| io_error(path, e))
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), LedgerError> {
    let written = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            f.sync_all()
        });
    written.map_err(|e| {
        let _ = std::fs::remove_file(path);
        io_error(path, e)
    })
}

/// Creates `dir` (and its parents) readable by its owner only: ledgers hold statements and
/// answers that other users of the machine have no business reading.
fn private_dir(dir: &Path) -> Result<(), LedgerError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| io_error(dir, e))
}

/// Makes an existing state directory readable by its owner only (another program may have
/// made it first, with its own mode).
#[cfg(unix)]
fn tighten(dir: &Path) -> Result<(), LedgerError> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(dir).map_err(|e| io_error(dir, e))?;
    if meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| io_error(dir, e))?;
    }
    Ok(())
}

/// Without Unix there are no modes to tighten (and no state directories: the ledger stays in
/// memory).
#[cfg(not(unix))]
fn tighten(_dir: &Path) -> Result<(), LedgerError> {
    Ok(())
}

pub(super) fn io_error(path: &Path, e: std::io::Error) -> LedgerError {
    LedgerError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_depend_on_the_secret() {
        let content = *blake3::hash(b"a,b\n1,2\n").as_bytes();
        let a = fingerprint(&[1; 32], &content);
        let b = fingerprint(&[2; 32], &content);
        assert_ne!(a, b);
        assert_ne!(a, blake3::hash(b"a,b\n1,2\n").to_hex().to_string());
        assert_eq!(a, fingerprint(&[1; 32], &content));
        assert!(is_ledger_name(&path_name(&[1; 32], Path::new("/x.csv"))));
    }
}
