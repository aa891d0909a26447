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

use super::ledger::{sync_dir, Header, Ledger, LedgerError};
use rand::RngCore;
use rust_decimal::Decimal;
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Where a session keeps its ledgers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    dir: Option<PathBuf>,
    sync: bool,
    /// A state directory not used, which charts must still never be written into (practice).
    guard: Option<PathBuf>,
}

impl Store {
    /// Nowhere: spending lasts as long as the session (practice, library use and tests).
    pub fn memory() -> Self {
        Self {
            dir: None,
            sync: true,
            guard: None,
        }
    }

    /// In memory, beside the state directory `dir` that is left alone: nothing is read from
    /// it or written to it, charts included (practice).
    pub fn memory_beside(dir: impl Into<PathBuf>) -> Self {
        Self {
            guard: Some(dir.into()),
            ..Self::memory()
        }
    }

    /// Under the state directory `dir`.
    pub fn dir(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: Some(dir.into()),
            sync: true,
            guard: None,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

    /// Whether `path` names something inside the state directory (a chart must never be
    /// written there).
    pub fn holds(&self, path: &Path) -> bool {
        let Some(path) = resolved(path) else {
            return false;
        };
        [&self.store.dir, &self.store.guard]
            .into_iter()
            .flatten()
            .filter_map(|dir| std::fs::canonicalize(dir).ok())
            .any(|dir| path.starts_with(dir))
    }

    /// Opens the ledger of the data file `data_file` (canonical) whose content has the plain
    /// hash `content` (never stored), starting one with `total` when the data is new to the
    /// store. Records the content in the ledger when it differs from what the ledger saw last.
    pub fn open(
        &mut self,
        data_file: &Path,
        content: &[u8; 32],
        total: Decimal,
        time: u64,
    ) -> Result<Opened, LedgerError> {
        let Some(dir) = self.store.dir.clone() else {
            return self.open_in_memory(data_file, content, total, time);
        };
        let secret = self.secret(&dir)?;
        let fingerprint = fingerprint(&secret, content);
        let path_key = path_name(&secret, data_file);
        let guard = lock_file(&dir.join("index.lock"))?;
        let by_content = dir.join("content").join(&fingerprint);
        let by_path = dir.join("paths").join(&path_key);
        let (name, found_by_content) = match read_name(&by_content)? {
            Some(name) => (name, true),
            None => (
                read_name(&by_path)?.unwrap_or_else(|| path_key.clone()),
                false,
            ),
        };
        let id = match self.by_name.get(&name) {
            Some(&i) => i,
            None => {
                let ledger = self.find_or_create(
                    &dir,
                    &name,
                    found_by_content,
                    data_file,
                    &fingerprint,
                    total,
                    time,
                )?;
                self.open.push(ledger);
                self.by_name.insert(name.clone(), self.open.len() - 1);
                self.open.len() - 1
            }
        };
        // Under the ledger's lock (inside the index's): the ledger as it is now, the content
        // recorded in it before any index names it for that content.
        let changed = {
            let mut txn = self.open[id].begin()?;
            if found_by_content && !txn.ledger().has_seen(&fingerprint) {
                return Err(LedgerError::Damaged {
                    path: self.open[id]
                        .path()
                        .map(|p| p.display().to_string())
                        .unwrap_or_default(),
                    line: 1,
                    reason: "the ledger never saw the data that the content index sends to it",
                });
            }
            let changed = txn.ledger().fingerprint() != fingerprint;
            if changed {
                txn.add_content(&fingerprint, time)?;
            }
            changed
        };
        if !found_by_content {
            write_private(&by_content, name.as_bytes())?;
        }
        if read_name(&by_path)?.as_deref() != Some(name.as_str()) {
            write_private(&by_path, name.as_bytes())?;
        }
        drop(guard);
        Ok(Opened {
            ledger: LedgerId(id),
            fingerprint,
            changed,
            warnings: self.open[id].take_warnings(),
        })
    }

    /// The ledger `name` on disk: read and verified if it exists, made if the data is new.
    #[allow(clippy::too_many_arguments)]
    fn find_or_create(
        &self,
        dir: &Path,
        name: &str,
        by_content: bool,
        data_file: &Path,
        fingerprint: &str,
        total: Decimal,
        time: u64,
    ) -> Result<Ledger, LedgerError> {
        let path = dir.join("ledgers").join(format!("{name}.ledger"));
        let mark = path.with_extension("hwm");
        let has_mark = mark.exists();
        match std::fs::metadata(&path) {
            // A ledger whose creation never finished (no header, no mark): nothing was spent.
            Ok(m) if m.len() == 0 && !has_mark => {
                std::fs::remove_file(&path).map_err(|e| io_error(&path, e))?;
            }
            Ok(_) => return Ledger::open(&path, name, self.store.sync),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error(&path, e)),
        }
        if by_content {
            return Err(LedgerError::Missing {
                path: path.display().to_string(),
                reason: "it holds the spending of this data (the content index names it)",
            });
        }
        if has_mark {
            return Err(LedgerError::Missing {
                path: path.display().to_string(),
                reason: "the high-water mark beside it shows it held spending",
            });
        }
        let data_file = data_file.display().to_string();
        Ledger::create(
            &path,
            &Header {
                name,
                data_file: &data_file,
                fingerprint,
                total,
                time,
            },
            self.store.sync,
        )
    }

    /// In memory: the same lookup, content first, then path.
    fn open_in_memory(
        &mut self,
        data_file: &Path,
        content: &[u8; 32],
        total: Decimal,
        time: u64,
    ) -> Result<Opened, LedgerError> {
        let secret = self.secret.unwrap_or_else(random_secret);
        let fingerprint = fingerprint(&secret, content);
        let id = match self
            .by_name
            .get(&fingerprint)
            .or_else(|| self.by_path.get(data_file))
        {
            Some(&i) => i,
            None => {
                self.open.push(Ledger::memory(total, &fingerprint));
                self.open.len() - 1
            }
        };
        self.by_name.insert(fingerprint.clone(), id);
        self.by_path.insert(data_file.to_path_buf(), id);
        self.note(id, &fingerprint, time)
    }

    /// Records the content in the in-memory ledger `id` when it is not what it saw last.
    fn note(&mut self, id: usize, fingerprint: &str, time: u64) -> Result<Opened, LedgerError> {
        let ledger = &mut self.open[id];
        let mut txn = ledger.begin()?;
        let changed = txn.ledger().fingerprint() != fingerprint;
        if changed {
            txn.add_content(fingerprint, time)?;
        }
        drop(txn);
        Ok(Opened {
            ledger: LedgerId(id),
            fingerprint: fingerprint.to_string(),
            changed,
            warnings: ledger.take_warnings(),
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
        for sub in ["ledgers", "content", "paths"] {
            private_dir(&dir.join(sub))?;
        }
        self.secret = Some(secret);
        Ok(secret)
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
fn refuse_old_layout(dir: &Path) -> Result<(), LedgerError> {
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

fn random_secret() -> [u8; 32] {
    let mut secret = [0u8; 32];
    rand::rng().fill_bytes(&mut secret);
    secret
}

/// The keyed fingerprint of content whose plain BLAKE3 hash is `content`.
fn fingerprint(secret: &[u8; 32], content: &[u8; 32]) -> String {
    let key = blake3::derive_key("dpq 2026-11 content fingerprint", secret);
    blake3::keyed_hash(&key, content).to_hex().to_string()
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
fn lock_file(path: &Path) -> Result<File, LedgerError> {
    use std::os::unix::fs::MetadataExt;
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
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), LedgerError> {
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

fn io_error(path: &Path, e: std::io::Error) -> LedgerError {
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
