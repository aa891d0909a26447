//! The ledger file: every spending of a data file's budget, appended, checksummed and made
//! durable before noise is drawn, read incrementally so that no statement's cost grows with
//! its length.
//!
//! One JSON object per line, its last field `sum`: the first 32 hex digits of BLAKE3 of the
//! previous line's `sum` and of the line's own bytes up to that field, so an edited,
//! reordered, removed or foreign line is detected. The first line is a header naming the
//! ledger and the first content it saw; a ledger copied over another is refused. Beside it a
//! high-water mark records how many lines the ledger has held and the checksum of the last:
//! a ledger restored from an older copy, truncated or emptied is refused, never read as a
//! smaller spending.
//!
//! Every write happens under an exclusive lock of the file, after the lines other processes
//! appended since the last read were read (from the offset verified last: a statement reads
//! only what is new). A write that fails is cut back to the last complete line before the
//! error is reported, so a full disk spends nothing and leaves the ledger usable. A final line
//! without its line feed can only come from a write that never completed (noise is drawn only
//! after a complete spending line is durable, an answer shown only after a complete release
//! line is durable): it is dropped, with a warning. Any other damage is refused.
//!
//! Nothing in a ledger comes from the data but keyed fingerprints: statements are the
//! analyst's own text, and noisy answers were released.

use super::durable::Group;
use super::history::{Carry, CubeDecl, History, Release, Unit};
use super::measure::Measure;
use super::row::Row;
use super::{Accounting, Mechanism, Neighbours, MAX_CELLS};
use crate::sys::fs::{FileExt, MetadataExt, OpenOptionsExt};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

/// Why a ledger could not be used. Nothing was spent.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LedgerError {
    /// The state directory or a ledger file could not be created, read, written or locked.
    #[error("the ledger {path} cannot be used: {message}")]
    Io {
        /// The file.
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
    /// A line is not what dpq wrote: edited, removed, reordered or from elsewhere.
    #[error("the ledger {path} is damaged at line {line}: {reason}; dpq refuses to use it rather than reset the budget")]
    Damaged {
        /// The ledger file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// A file the state directory needs is gone.
    #[error("{path} is missing: {reason}; dpq refuses to start the budget anew")]
    Missing {
        /// The missing file.
        path: String,
        /// Why it is needed.
        reason: &'static str,
    },
    /// The data's content is recorded in one ledger and its path's history in another.
    #[error("two ledgers hold this file's history: its content was loaded before and recorded in {content}, while {path}, the ledger of its path, has releases and never saw this content; dpq cannot tell whether the file is a copy of the one or an edit of the other")]
    TwoLedgers {
        /// The ledger its content leads to.
        content: String,
        /// The ledger its path leads to.
        path: String,
    },
    /// The state directory's secret is not the one its ledgers were made with.
    #[error("the secret {path} is not the one this state directory's ledgers were made with (copied or restored from elsewhere); dpq refuses to start every budget anew")]
    WrongSecret {
        /// The secret's file.
        path: String,
    },
    /// The state directory was written by an earlier dpq whose ledgers this one does not read.
    #[error("the state directory {dir} was written by an earlier version of dpq (its ledgers hold unkeyed fingerprints of data files)")]
    OldLayout {
        /// The state directory.
        dir: String,
    },
}

/// The first line's check value.
const GENESIS: &str = "dpq-ledger-v2";

/// The format written in the header of a new ledger. Format 3 writes a spending's row as runs
/// of cells (`"runs": [[start, len, "coefficient"], ...]`) and its key with runs (`a-b:c`);
/// format 2 wrote them cell by cell, and is still read, and appended to in its own form.
const FORMAT: u32 = 3;

/// The oldest format read.
const OLDEST_FORMAT: u32 = 2;

/// The longest line a ledger holds: a statement longer than this is refused before anything
/// is spent (a ledger must stay readable).
pub const MAX_LINE: usize = 1 << 20;

/// `,"sum":"` + 32 hex digits + `"}`: how every line ends.
const SUFFIX: usize = 8 + 32 + 2;

/// The persistent record of one data file's budget and releases, as last read.
#[derive(Debug)]
pub struct Ledger {
    file: Option<OnDisk>,
    /// The format its header declares, in which its lines are written.
    format: u32,
    history: History,
    /// The keyed fingerprints of every content the ledger has seen.
    seen: HashSet<String>,
    /// The content it saw last.
    last_fingerprint: String,
    /// The keyed path it was loaded from last.
    last_path: String,
    /// Every keyed path it was loaded from.
    paths: HashSet<String>,
    /// What opening the ledger had to say (a torn line dropped, a mark remade).
    warnings: Vec<String>,
    /// For an analyst of a served dataset: their own releases, apart from everyone's.
    view: Option<View>,
}

/// One analyst's view of a served dataset's ledger: the releases made for them, as a history
/// of its own (their identical queries, their inference, their cap), while the ledger's whole
/// history (every analyst's releases, the dataset's total) bounds them all.
#[derive(Debug, Clone)]
struct View {
    analyst: String,
    own: History,
    /// The number of each of the analyst's releases in their own history, by its number in
    /// the whole.
    local: std::collections::HashMap<u64, u64>,
}

impl View {
    fn new(analyst: &str, cap: Decimal) -> Self {
        View {
            analyst: analyst.to_string(),
            own: History::new(cap, Neighbours::default()),
            local: std::collections::HashMap::new(),
        }
    }
}

/// Where a persisted ledger is, and how far it has been read and verified.
#[derive(Debug, Clone)]
struct OnDisk {
    path: PathBuf,
    /// The ledger's name, written in its header.
    name: String,
    /// Whether appends are made durable (fsync) before anything depends on them.
    sync: bool,
    /// The file (device and inode) that was read.
    id: (u64, u64),
    /// Bytes read and verified: the end of the last complete line.
    offset: u64,
    /// Lines read.
    lines: usize,
    /// The checksum of the last line read, and where that line starts.
    last_sum: String,
    last_start: u64,
    /// The checksum before the last line.
    prev_sum: String,
    /// The ledger file as last read, kept open between statements.
    handle: Option<Arc<File>>,
    /// The high-water mark's file, once opened.
    mark: Option<Arc<File>>,
    /// How the file's lines are made durable, shared with every ledger of this process open
    /// on the same file.
    group: Option<Arc<Group>>,
}

impl OnDisk {
    /// A ledger file at `path` of which nothing was read yet.
    fn unread(path: &Path, name: &str, sync: bool) -> Self {
        Self {
            path: path.to_path_buf(),
            name: name.to_string(),
            sync,
            id: (0, 0),
            offset: 0,
            lines: 0,
            last_sum: GENESIS.to_string(),
            last_start: 0,
            prev_sum: GENESIS.to_string(),
            handle: None,
            mark: None,
            group: None,
        }
    }
}

/// A line written to the ledger file, not yet known to be durable (nothing, for a ledger in
/// memory): [`Ledger::settle`] waits until it is.
#[must_use = "nothing may depend on a line until it is settled"]
#[derive(Debug)]
pub(super) struct Written(Option<Pending>);

#[derive(Debug)]
struct Pending {
    /// Where the line ends in the file.
    end: u64,
    /// The ledger's lines, and the checksum of the last, with it.
    lines: usize,
    sum: String,
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

/// A last line without its line feed.
#[derive(Debug, Clone, Copy)]
enum Tail {
    /// It reads as a complete line: only its line feed is missing.
    Complete,
    /// It is a write that never finished, starting at this offset.
    Torn { start: u64 },
}

/// The header of a new ledger.
pub(super) struct Header<'a> {
    /// The ledger's name (its file's stem).
    pub name: &'a str,
    /// The data file it was made for.
    pub data_file: &'a str,
    /// The keyed fingerprint of that file's content.
    pub fingerprint: &'a str,
    /// The keyed hash of that file's path.
    pub path: &'a str,
    /// The budget.
    pub total: Decimal,
    /// How neighbouring tables differ.
    pub neighbours: Neighbours,
    /// When.
    pub time: u64,
}

/// One entry, as written.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Entry<'a> {
    Header {
        format: u32,
        ledger: &'a str,
        data_file: &'a str,
        fingerprint: &'a str,
        path: &'a str,
        total: String,
        neighbours: String,
        time: u64,
    },
    Model {
        neighbours: String,
        time: u64,
    },
    Unit {
        column: &'a str,
        max_rows: u32,
        /// Written only when false (a table read with `NO HEADER`).
        #[serde(skip_serializing_if = "Option::is_none")]
        header: Option<bool>,
        /// Written only for a table read with `DELIMITER` or `DECIMAL` other than `,` and `.`.
        #[serde(skip_serializing_if = "Option::is_none")]
        reading: Option<&'a str>,
        time: u64,
    },
    Exposed {
        time: u64,
    },
    Budget {
        total: String,
        /// Written when the budget changes how it composes (`zcdp`, or back to `pure` before
        /// any release); a ledger without it accounts in epsilon.
        #[serde(skip_serializing_if = "Option::is_none")]
        accounting: Option<String>,
        time: u64,
    },
    Data {
        fingerprint: &'a str,
        path: &'a str,
        time: u64,
    },
    Cube {
        spec: &'a str,
        cells: usize,
        /// Written only when false (a table read with `NO HEADER`).
        #[serde(skip_serializing_if = "Option::is_none")]
        header: Option<bool>,
        /// Written only for a table read with `DELIMITER` or `DECIMAL` other than `,` and `.`.
        #[serde(skip_serializing_if = "Option::is_none")]
        reading: Option<&'a str>,
        /// A cube declared over releases made over another: that cube's declaration.
        #[serde(skip_serializing_if = "Option::is_none")]
        from: Option<&'a str>,
        /// ... when this one refines it: for each new cell, the old cell holding it.
        #[serde(skip_serializing_if = "Option::is_none")]
        parents: Option<&'a [usize]>,
        time: u64,
    },
    Spend {
        seq: u64,
        statement: &'a str,
        key: &'a str,
        /// Format 2: the row cell by cell.
        #[serde(skip_serializing_if = "Option::is_none")]
        row: Option<Vec<(usize, String)>>,
        /// Format 3: the row as runs of cells.
        #[serde(skip_serializing_if = "Option::is_none")]
        runs: Option<Vec<(usize, usize, String)>>,
        /// A vector released at once: each part's row as runs of cells.
        #[serde(skip_serializing_if = "Option::is_none")]
        parts: Option<Vec<Vec<(usize, usize, String)>>>,
        eps: String,
        sensitivity: f64,
        mechanism: String,
        /// A Gaussian release's variance parameter `S2^2 / (2 rho)`, exact (`p/q`); its `eps`
        /// field holds its rho.
        #[serde(skip_serializing_if = "Option::is_none")]
        sigma2: Option<String>,
        /// What the row measures, when not rows (a sum: `["sum", column, lo, hi]`).
        #[serde(skip_serializing_if = "Option::is_none")]
        measure: Option<Vec<String>>,
        /// The analyst it was released to, on a served dataset.
        #[serde(skip_serializing_if = "Option::is_none")]
        analyst: Option<&'a str>,
        time: u64,
    },
    Release {
        seq: u64,
        noisy: f64,
        time: u64,
    },
    /// The answers of a vector's parts, numbered from `seq`.
    Answers {
        seq: u64,
        answers: Vec<f64>,
        time: u64,
    },
}

/// A vector's spending as read: every part's row as runs, and its first part's release.
fn parse_vector(e: Raw) -> Result<Action, &'static str> {
    let missing = "a field is missing";
    let decimal = |v: Option<Cow<str>>| {
        v.and_then(|s| Decimal::from_str(&s).ok())
            .ok_or("a number is malformed")
    };
    let parts = e
        .parts
        .unwrap_or_default()
        .into_iter()
        .map(|runs| {
            let runs = runs
                .into_iter()
                .map(|(j, n, c)| {
                    let c = Decimal::from_str(&c).ok().filter(|c| !c.is_zero())?;
                    Some((usize::try_from(j).ok()?, usize::try_from(n).ok()?, c))
                })
                .collect::<Option<Vec<_>>>()?;
            Row::from_runs(&runs)
        })
        .collect::<Option<Vec<_>>>()
        .ok_or("a row is malformed")?;
    if e.row.is_some() || e.runs.is_some() || e.measure.is_some() {
        return Err("a row is malformed");
    }
    Ok(Action::SpendVector(
        Release {
            seq: e.seq.ok_or(missing)?,
            statement: e.statement.ok_or(missing)?.into_owned(),
            key: e.key.ok_or(missing)?.into_owned(),
            row: Row::default(),
            eps: decimal(e.eps)?,
            sensitivity: e.sensitivity.ok_or(missing)?,
            mechanism: Mechanism::from_name(&e.mechanism.ok_or(missing)?)
                .ok_or("an unknown mechanism")?,
            noisy: None,
            time: e.time.ok_or(missing)?,
            part: None,
            measure: Measure::Rows,
        },
        parts,
        e.analyst.map(Cow::into_owned),
    ))
}

/// A row as runs of cells, as read: `(first cell, cells, coefficient)` each.
type RawRuns<'a> = Vec<(u64, u64, Cow<'a, str>)>;

/// One entry, as read: every field any entry may have.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    format: Option<u32>,
    #[serde(borrow)]
    ledger: Option<Cow<'a, str>>,
    #[serde(borrow)]
    data_file: Option<Cow<'a, str>>,
    #[serde(borrow)]
    fingerprint: Option<Cow<'a, str>>,
    #[serde(borrow)]
    total: Option<Cow<'a, str>>,
    #[serde(borrow)]
    spec: Option<Cow<'a, str>>,
    cells: Option<u64>,
    #[serde(borrow)]
    from: Option<Cow<'a, str>>,
    parents: Option<Vec<u64>>,
    #[serde(borrow)]
    column: Option<Cow<'a, str>>,
    max_rows: Option<u32>,
    seq: Option<u64>,
    #[serde(borrow)]
    statement: Option<Cow<'a, str>>,
    #[serde(borrow)]
    key: Option<Cow<'a, str>>,
    #[serde(borrow)]
    row: Option<Vec<(u64, Cow<'a, str>)>>,
    #[serde(borrow)]
    runs: Option<Vec<(u64, u64, Cow<'a, str>)>>,
    #[serde(borrow)]
    parts: Option<Vec<RawRuns<'a>>>,
    answers: Option<Vec<f64>>,
    header: Option<bool>,
    #[serde(borrow)]
    reading: Option<Cow<'a, str>>,
    #[serde(borrow)]
    eps: Option<Cow<'a, str>>,
    sensitivity: Option<f64>,
    #[serde(borrow)]
    mechanism: Option<Cow<'a, str>>,
    #[serde(borrow)]
    sigma2: Option<Cow<'a, str>>,
    #[serde(borrow)]
    accounting: Option<Cow<'a, str>>,
    #[serde(borrow)]
    neighbours: Option<Cow<'a, str>>,
    #[serde(borrow)]
    path: Option<Cow<'a, str>>,
    noisy: Option<f64>,
    #[serde(borrow)]
    analyst: Option<Cow<'a, str>>,
    #[serde(borrow)]
    measure: Option<Vec<Cow<'a, str>>>,
    time: Option<u64>,
    #[serde(borrow)]
    sum: Cow<'a, str>,
}

/// What an entry does to the ledger.
enum Action {
    Header {
        name: String,
        format: u32,
        fingerprint: String,
        path: String,
        total: Decimal,
        neighbours: Neighbours,
    },
    /// A total, and how the budget composes when that changes.
    Budget(Decimal, Option<Accounting>),
    Model(Neighbours),
    Unit(Unit),
    Exposed,
    Data {
        fingerprint: String,
        path: String,
    },
    /// A cube, and how the releases over an earlier one carry over to it.
    Cube(CubeDecl, Option<Carry>),
    /// A spending, and the analyst it was released to on a served dataset.
    Spend(Release, Option<String>),
    /// A vector's spending: its first part's release (number, statement, key, epsilon,
    /// sensitivity) and every part's row; and the analyst.
    SpendVector(Release, Vec<Row>, Option<String>),
    /// The answers of a vector's parts, numbered from `seq`.
    Answers {
        seq: u64,
        noisy: Vec<f64>,
    },
    Answer {
        seq: u64,
        noisy: f64,
    },
}

impl Ledger {
    /// A ledger kept in memory only: its spending lasts as long as the session.
    pub(super) fn memory(total: Decimal, neighbours: Neighbours, fingerprint: &str) -> Self {
        let mut ledger = Self::blank(None, total);
        ledger.history.set_neighbours(neighbours);
        ledger.note(fingerprint, None);
        ledger
    }

    /// A ledger in memory with this one's history, contents and cube as last read.
    pub(super) fn practice_copy(&self) -> Self {
        let mut history = self.history.clone();
        // The copy is where seeded releases go: exposure is the data's own ledger's concern.
        history.unexpose();
        Self {
            file: None,
            format: self.format,
            history,
            seen: self.seen.clone(),
            last_fingerprint: self.last_fingerprint.clone(),
            last_path: self.last_path.clone(),
            paths: self.paths.clone(),
            warnings: Vec::new(),
            view: None,
        }
    }

    fn blank(file: Option<OnDisk>, total: Decimal) -> Self {
        Self {
            file,
            format: FORMAT,
            history: History::new(total, Neighbours::default()),
            seen: HashSet::new(),
            last_fingerprint: String::new(),
            last_path: String::new(),
            paths: HashSet::new(),
            warnings: Vec::new(),
            view: None,
        }
    }

    fn note(&mut self, fingerprint: &str, path: Option<&str>) {
        self.seen.insert(fingerprint.to_string());
        self.last_fingerprint = fingerprint.to_string();
        if let Some(path) = path {
            self.last_path = path.to_string();
            self.paths.insert(path.to_string());
        }
    }

    /// Creates the ledger file `path` (which must not exist) with its header, durable, and
    /// its high-water mark.
    pub(super) fn create(path: &Path, header: &Header, sync: bool) -> Result<Self, LedgerError> {
        let io = |e| io_error(path, e);
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        let disk = OnDisk {
            id: (meta.dev(), meta.ino()),
            group: Some(Group::of((meta.dev(), meta.ino()))),
            ..OnDisk::unread(path, header.name, sync)
        };
        let mut ledger = Self::blank(Some(disk), header.total);
        file.lock().map_err(io)?;
        if let Some(d) = &mut ledger.file {
            d.handle = Some(Arc::new(file.try_clone().map_err(io)?));
        }
        let lock = Lock { file: Some(file) };
        let entry = Entry::Header {
            format: FORMAT,
            ledger: header.name,
            data_file: header.data_file,
            fingerprint: header.fingerprint,
            path: header.path,
            total: header.total.normalize().to_string(),
            neighbours: header.neighbours.to_string(),
            time: header.time,
        };
        let action = Action::Header {
            name: header.name.to_string(),
            format: FORMAT,
            fingerprint: header.fingerprint.to_string(),
            path: header.path.to_string(),
            total: header.total,
            neighbours: header.neighbours,
        };
        ledger.append(&lock, &entry, action)?;
        // The new file's name is durable too, or a power cut could lose the ledger whole.
        sync_dir(path.parent()).map_err(io)?;
        Ok(ledger)
    }

    /// A ledger kept in memory only, for data that has no file (a teaching cube).
    pub fn in_memory(total: Decimal, neighbours: Neighbours) -> Self {
        let mut ledger = Self::blank(None, total);
        ledger.history.set_neighbours(neighbours);
        ledger
    }

    /// Opens the existing ledger file `path`, named `name`, reading and verifying it whole
    /// under its lock and checking it against its high-water mark. Only once every check
    /// holds is a last line without its line feed mended (see [`Ledger::mend`]): a refused
    /// ledger is left exactly as it was found.
    pub(super) fn open(path: &Path, name: &str, sync: bool) -> Result<Self, LedgerError> {
        Self::open_as(path, name, sync, None)
    }

    /// [`Ledger::open`], as the view of the analyst `view` names, with their cap.
    pub(super) fn open_as(
        path: &Path,
        name: &str,
        sync: bool,
        view: Option<(&str, Decimal)>,
    ) -> Result<Self, LedgerError> {
        let io = |e| io_error(path, e);
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(path)
            .map_err(io)?;
        file.lock().map_err(io)?;
        let lock = Lock { file: Some(file) };
        let disk = OnDisk::unread(path, name, sync);
        let mut ledger = Self::blank(Some(disk), Decimal::ONE);
        ledger.view = view.map(|(analyst, cap)| View::new(analyst, cap));
        let mark = read_mark(&mark_path(path))?;
        let want = match &mark {
            Some(Mark::Of(m)) => Some(m.lines),
            _ => None,
        };
        let (at_mark, tail) = ledger.read_new(&lock, want)?;
        if ledger.lines() == 0 {
            return Err(ledger.damaged(1, "the ledger is empty"));
        }
        match mark {
            Some(Mark::Of(m)) if m.ledger != name => {
                return Err(ledger.damaged(
                    1,
                    "the high-water mark beside it belongs to another ledger",
                ))
            }
            Some(Mark::Of(m)) if ledger.lines() < m.lines => {
                return Err(ledger.damaged(
                    ledger.lines() + 1,
                    "the ledger is shorter than it was (restored from an older copy, or truncated)",
                ))
            }
            Some(Mark::Of(m)) if at_mark.as_deref() != Some(m.sum.as_str()) => {
                return Err(ledger.damaged(
                    m.lines,
                    "the ledger is not the one recorded beside it (replaced by an older copy or another ledger)",
                ))
            }
            Some(Mark::Of(m)) if ledger.lines() == m.lines => {}
            None if ledger.lines() <= 1 => {}
            Some(Mark::Of(_)) => {}
            Some(Mark::Garbled) | None => ledger.warnings.push(format!(
                "the high-water mark beside {} was missing or unreadable; it was made again from the ledger, which cannot now be checked against an older copy of itself",
                path.display()
            )),
        }
        ledger.mend(&lock, tail)?;
        ledger.write_mark();
        drop(lock);
        Ok(ledger)
    }

    /// The ledger file, when persisted.
    pub fn path(&self) -> Option<&Path> {
        self.file.as_ref().map(|d| d.path.as_path())
    }

    /// The budget and releases as last read: for an analyst of a served dataset, their own
    /// (their cap, their releases).
    pub fn history(&self) -> &History {
        self.view.as_ref().map_or(&self.history, |v| &v.own)
    }

    /// Every release of the ledger and its total, whoever they were made for.
    pub fn whole(&self) -> &History {
        &self.history
    }

    /// Whether this is one analyst's view of a served dataset's ledger.
    pub fn is_view(&self) -> bool {
        self.view.is_some()
    }

    /// The number the next release gets in the ledger.
    pub fn next_seq(&self) -> u64 {
        self.history.next_seq()
    }

    /// Sets the cap of the analyst whose view this is (from the curator's policy: it is not
    /// recorded, and changing it never changes what was spent).
    pub fn set_cap(&mut self, cap: Decimal) {
        if let Some(v) = &mut self.view {
            v.own.set_total(cap);
        }
    }

    /// The keyed fingerprint of the content the ledger saw last.
    pub fn fingerprint(&self) -> &str {
        &self.last_fingerprint
    }

    /// Whether the ledger has seen the content of this keyed fingerprint.
    pub fn has_seen(&self, fingerprint: &str) -> bool {
        self.seen.contains(fingerprint)
    }

    /// Warnings gathered since they were last taken (a torn line dropped, a mark remade).
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    fn lines(&self) -> usize {
        self.file.as_ref().map_or(0, |d| d.lines)
    }

    fn shown(&self) -> String {
        self.path()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    }

    fn damaged(&self, line: usize, reason: &'static str) -> LedgerError {
        LedgerError::Damaged {
            path: self.shown(),
            line,
            reason,
        }
    }

    /// Takes the exclusive lock of the ledger file (waiting for another process to let go).
    /// The file kept open is locked, unless the path now names another file (then that one
    /// is, and read whole); a file renamed over the path while the lock was awaited is caught
    /// by looking again once it is held.
    pub fn lock(&self) -> Result<Lock, LedgerError> {
        let Some(disk) = &self.file else {
            return Ok(Lock { file: None });
        };
        let io = |e| io_error(&disk.path, e);
        for _ in 0..8 {
            let named = self.path_id(&disk.path)?;
            let file = match &disk.handle {
                Some(h) if named == disk.id => h.try_clone().map_err(io)?,
                _ => OpenOptions::new()
                    .read(true)
                    .append(true)
                    .open(&disk.path)
                    .map_err(io)?,
            };
            file.lock().map_err(io)?;
            let meta = file.metadata().map_err(io)?;
            if self.path_id(&disk.path)? == (meta.dev(), meta.ino()) {
                return Ok(Lock { file: Some(file) });
            }
            let _ = file.unlock();
        }
        Err(LedgerError::Io {
            path: self.shown(),
            message: "the ledger file keeps being replaced".into(),
        })
    }

    /// The device and inode the path names now.
    fn path_id(&self, path: &Path) -> Result<(u64, u64), LedgerError> {
        match std::fs::metadata(path) {
            Ok(m) => Ok((m.dev(), m.ino())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(LedgerError::Missing {
                path: self.shown(),
                reason: "the ledger was deleted while it was in use",
            }),
            Err(e) => Err(io_error(path, e)),
        }
    }

    /// Reads under `lock` what other processes appended since the last read. The file must
    /// still be the one read before, holding every line read before: a truncated, replaced or
    /// deleted ledger is refused, not reset.
    pub fn refresh(&mut self, lock: &Lock) -> Result<(), LedgerError> {
        let (Some(file), Some(disk)) = (&lock.file, &self.file) else {
            return Ok(());
        };
        let meta = file.metadata().map_err(|e| io_error(&disk.path, e))?;
        if (meta.dev(), meta.ino()) != disk.id {
            return self.reread(lock);
        }
        if meta.len() < disk.offset {
            return Err(self.damaged(disk.lines, "lines read earlier in this session are gone"));
        }
        // The last line read is still there, unchanged: what was read before cannot have
        // been rewritten under the lines appended since.
        let mut last = vec![0u8; usize::try_from(disk.offset - disk.last_start).unwrap_or(0)];
        file.read_exact_at(&mut last, disk.last_start)
            .map_err(|e| io_error(&disk.path, e))?;
        let intact = last.last() == Some(&b'\n')
            && split_line(&last[..last.len() - 1]).is_some_and(|(content, sum)| {
                sum == disk.last_sum.as_bytes() && chain(&disk.prev_sum, content) == disk.last_sum
            });
        if !intact {
            return Err(self.damaged(
                disk.lines,
                "a line read earlier in this session has changed",
            ));
        }
        if meta.len() > disk.offset {
            let (_, tail) = self.read_new(lock, None)?;
            self.mend(lock, tail)?;
        }
        Ok(())
    }

    /// The ledger file was replaced by another file: read the new one whole; it is accepted
    /// only when it holds every line read before, unchanged.
    fn reread(&mut self, lock: &Lock) -> Result<(), LedgerError> {
        let Some(disk) = &self.file else {
            return Ok(());
        };
        let unread = OnDisk {
            mark: disk.mark.clone(),
            ..OnDisk::unread(&disk.path, &disk.name, disk.sync)
        };
        let mut fresh = Self::blank(Some(unread), self.history.total());
        fresh.view = self
            .view
            .as_ref()
            .map(|v| View::new(&v.analyst, v.own.total()));
        let (at, tail) = fresh.read_new(lock, Some(disk.lines))?;
        if fresh.lines() < disk.lines || at.as_deref() != Some(disk.last_sum.as_str()) {
            return Err(self.damaged(
                disk.lines,
                "the ledger was replaced by a file without the lines read earlier in this session",
            ));
        }
        fresh.mend(lock, tail)?;
        fresh.warnings = std::mem::take(&mut self.warnings);
        *self = fresh;
        Ok(())
    }

    /// Reads, verifies and applies the lines after the verified offset, changing nothing in
    /// the file. Returns the checksum of line `want`, if that line was read, and the state of
    /// a last line without its line feed, for [`Ledger::mend`] (the lock is held: no one else
    /// is writing).
    fn read_new(
        &mut self,
        lock: &Lock,
        want: Option<usize>,
    ) -> Result<(Option<String>, Option<Tail>), LedgerError> {
        let (Some(file), Some(disk)) = (&lock.file, &self.file) else {
            return Ok((None, None));
        };
        let path = disk.path.clone();
        let io = |e| io_error(&path, e);
        let meta = file.metadata().map_err(io)?;
        let len = meta.len();
        let mut at_want = None;
        let mut buf = vec![
            0u8;
            usize::try_from(len - disk.offset)
                .unwrap_or(1 << 20)
                .clamp(1, 1 << 20)
        ];
        // Bytes of a line not yet complete, carried from one read to the next.
        let mut carry: Vec<u8> = Vec::new();
        let mut pos = disk.offset;
        let mut line_start = disk.offset;
        while pos < len {
            let want_bytes = usize::try_from(len - pos)
                .unwrap_or(usize::MAX)
                .min(buf.len());
            let n = file.read_at(&mut buf[..want_bytes], pos).map_err(io)?;
            if n == 0 {
                break;
            }
            let mut rest = &buf[..n];
            while let Some(i) = memchr::memchr(b'\n', rest) {
                let line: Cow<[u8]> = if carry.is_empty() {
                    Cow::Borrowed(&rest[..i])
                } else {
                    carry.extend_from_slice(&rest[..i]);
                    Cow::Owned(std::mem::take(&mut carry))
                };
                let end = line_start + line.len() as u64 + 1;
                self.take_line(&line, line_start, end)?;
                if want == Some(self.lines()) {
                    at_want = self.file.as_ref().map(|d| d.last_sum.clone());
                }
                line_start = end;
                rest = &rest[i + 1..];
            }
            carry.extend_from_slice(rest);
            if carry.len() > MAX_LINE + SUFFIX {
                return Err(self.damaged(self.lines() + 1, "a line is longer than any dpq writes"));
            }
            pos += n as u64;
        }
        let tail = if line_start < len {
            // A last line without its line feed: complete if it reads as a line dpq wrote
            // (its checksum holds), else a write that never finished.
            if self.take_line(&carry, line_start, len + 1).is_ok() {
                if want == Some(self.lines()) {
                    at_want = self.file.as_ref().map(|d| d.last_sum.clone());
                }
                Some(Tail::Complete)
            } else {
                Some(Tail::Torn { start: line_start })
            }
        } else {
            None
        };
        if let Some(d) = &mut self.file {
            let id = (meta.dev(), meta.ino());
            if d.handle.is_none() || d.id != id {
                d.handle = Some(Arc::new(file.try_clone().map_err(io)?));
            }
            if d.group.is_none() || d.id != id {
                d.group = Some(Group::of(id));
            }
            d.id = id;
        }
        Ok((at_want, tail))
    }

    /// Mends the last line of the file under `lock`: a complete line gets its line feed back,
    /// an unfinished one is cut away. Either way nothing drawn or shown is lost: noise is
    /// drawn only after a complete spending line is durable, an answer shown only after a
    /// complete release line is.
    fn mend(&mut self, lock: &Lock, tail: Option<Tail>) -> Result<(), LedgerError> {
        let (Some(tail), Some(file), Some(disk)) = (tail, &lock.file, &self.file) else {
            return Ok(());
        };
        let io = |e| io_error(&disk.path, e);
        let line = self.lines() + usize::from(matches!(tail, Tail::Torn { .. }));
        let warning = match tail {
            Tail::Complete => {
                let mut handle: &File = file;
                handle.write_all(b"\n").map_err(io)?;
                format!("line {line} of the ledger {} had lost its line feed; the line was complete (its checksum holds) and was kept", disk.path.display())
            }
            Tail::Torn { start } => {
                file.set_len(start).map_err(io)?;
                format!("line {line} of the ledger {} was incomplete (a write that never finished, before any noise was drawn for it or any answer shown); it was dropped", disk.path.display())
            }
        };
        file.sync_data().map_err(io)?;
        self.warnings.push(warning);
        self.write_mark();
        Ok(())
    }

    /// Verifies one complete line (without its line feed) spanning `[start, end)` of the file
    /// and applies it.
    fn take_line(&mut self, line: &[u8], start: u64, end: u64) -> Result<(), LedgerError> {
        let line_no = self.lines() + 1;
        let damaged = |reason| LedgerError::Damaged {
            path: self.shown(),
            line: line_no,
            reason,
        };
        let Some(disk) = &self.file else {
            return Ok(());
        };
        let (content, sum) = split_line(line).ok_or_else(|| damaged("no checksum"))?;
        let expected = chain(&disk.last_sum, content);
        if sum != expected.as_bytes() {
            return Err(damaged("the checksum does not match"));
        }
        let raw: Raw = serde_json::from_slice(line).map_err(|_| damaged("not a ledger entry"))?;
        if raw.sum.as_bytes() != sum {
            return Err(damaged("not a ledger entry"));
        }
        let sigma2 = raw.sigma2.clone();
        let action = self.parse(raw, line_no == 1).map_err(damaged)?;
        self.check(&action, line_no == 1).map_err(damaged)?;
        self.check_noise(&action, sigma2.as_deref())
            .map_err(damaged)?;
        self.commit(action);
        if let Some(d) = &mut self.file {
            d.prev_sum = std::mem::replace(&mut d.last_sum, expected);
            d.last_start = start;
            d.offset = end;
            d.lines = line_no;
        }
        Ok(())
    }

    /// The action of an entry as read.
    fn parse(&self, e: Raw, first: bool) -> Result<Action, &'static str> {
        let missing = "a field is missing";
        let decimal = |v: Option<Cow<str>>| {
            v.and_then(|s| Decimal::from_str(&s).ok())
                .ok_or("a number is malformed")
        };
        let model = |v: Option<Cow<str>>| {
            v.and_then(|s| Neighbours::from_name(&s))
                .ok_or("a neighbour model is unknown")
        };
        if first != (e.kind == "header") {
            return Err("the header is not the first line");
        }
        Ok(match e.kind.as_ref() {
            "header" => {
                let format = e.format.ok_or(missing)?;
                if !(OLDEST_FORMAT..=FORMAT).contains(&format) {
                    return Err("the ledger's format is not one this dpq reads");
                }
                e.data_file.ok_or(missing)?;
                Action::Header {
                    name: e.ledger.ok_or(missing)?.into_owned(),
                    format,
                    fingerprint: e.fingerprint.ok_or(missing)?.into_owned(),
                    path: e.path.ok_or(missing)?.into_owned(),
                    total: decimal(e.total)?,
                    // A format-2 header without a model was written before tables had one,
                    // while their row count was shown: bounded DP, `replace`. Its checksum
                    // shows the field was never there, rather than lost. Every later format
                    // names its model.
                    neighbours: match e.neighbours {
                        None if format == 2 => Neighbours::Replace,
                        some => model(some)?,
                    },
                }
            }
            "budget" => Action::Budget(
                decimal(e.total)?,
                match e.accounting {
                    None => None,
                    Some(a) => Some(Accounting::from_name(&a).ok_or("an unknown accounting")?),
                },
            ),
            "model" => Action::Model(model(e.neighbours)?),
            "unit" => Action::Unit(Unit {
                column: e.column.ok_or(missing)?.into_owned(),
                max_rows: e
                    .max_rows
                    .filter(|k| *k >= 1)
                    .ok_or("a unit's bound is not positive")?,
                header: e.header.unwrap_or(true),
                reading: reading(e.reading)?,
            }),
            "exposed" => Action::Exposed,
            "data" => Action::Data {
                fingerprint: e.fingerprint.ok_or(missing)?.into_owned(),
                path: e.path.ok_or(missing)?.into_owned(),
            },
            "cube" => parse_cube(e)?,
            "spend" if e.parts.is_some() => parse_vector(e)?,
            "spend" => {
                let measure = match &e.measure {
                    None => Measure::Rows,
                    Some(fields) => Measure::from_fields(fields).ok_or("a measure is malformed")?,
                };
                let (row, key) = self.spend_row(e.row, e.runs, e.key.ok_or(missing)?)?;
                Action::Spend(
                    Release {
                        seq: e.seq.ok_or(missing)?,
                        statement: e.statement.ok_or(missing)?.into_owned(),
                        key,
                        row,
                        eps: decimal(e.eps)?,
                        sensitivity: e.sensitivity.ok_or(missing)?,
                        mechanism: Mechanism::from_name(&e.mechanism.ok_or(missing)?)
                            .ok_or("an unknown mechanism")?,
                        noisy: None,
                        time: e.time.ok_or(missing)?,
                        part: None,
                        measure,
                    },
                    e.analyst.map(Cow::into_owned),
                )
            }
            "release" => Action::Answer {
                seq: e.seq.ok_or(missing)?,
                noisy: e.noisy.ok_or(missing)?,
            },
            "answers" => Action::Answers {
                seq: e.seq.ok_or(missing)?,
                noisy: e.answers.ok_or(missing)?,
            },
            _ => return Err("an unknown entry"),
        })
    }

    /// The row of a spending as read, cell by cell (format 2) or as runs (format 3), and its
    /// key. A key of format 2 names the row's cells one by one (`cells5|0:1,1:1,2:1`); it is
    /// read in the words of runs (`cells5|0-2:1`), as dpq now writes keys, so that an
    /// identical query is still found.
    #[allow(clippy::type_complexity)]
    fn spend_row(
        &self,
        cells: Option<Vec<(u64, Cow<str>)>>,
        runs: Option<Vec<(u64, u64, Cow<str>)>>,
        key: Cow<str>,
    ) -> Result<(Row, String), &'static str> {
        let malformed = "a row is malformed";
        let coef = |c: &str| Decimal::from_str(c).ok().filter(|c| !c.is_zero());
        let index = |j: u64| usize::try_from(j).ok();
        match (cells, runs) {
            (Some(cells), None) => {
                let cells = cells
                    .into_iter()
                    .map(|(j, c)| Some((index(j)?, coef(&c)?)))
                    .collect::<Option<Vec<_>>>()
                    .ok_or(malformed)?;
                let row = Row::from_cells(&cells).ok_or(malformed)?;
                let mut key = key.into_owned();
                if let Some(cube) = self.history.cube().filter(|_| !row.is_empty()) {
                    let (old, new) = (row.cells_text(), row.key_text());
                    if old != new {
                        let cells = cube.cells;
                        key = key.replacen(
                            &format!("|cells{cells}|{old}|"),
                            &format!("|cells{cells}|{new}|"),
                            1,
                        );
                    }
                }
                Ok((row, key))
            }
            (None, Some(runs)) => {
                let runs = runs
                    .into_iter()
                    .map(|(j, n, c)| Some((index(j)?, index(n)?, coef(&c)?)))
                    .collect::<Option<Vec<_>>>()
                    .ok_or(malformed)?;
                Ok((Row::from_runs(&runs).ok_or(malformed)?, key.into_owned()))
            }
            (None, None) => Err("a field is missing"),
            (Some(_), Some(_)) => Err(malformed),
        }
    }

    /// Whether a spending's recorded Gaussian variance is the one its rho and row give (and
    /// only a Gaussian spending records one): a ledger is charged by its rhos, so a variance
    /// written otherwise would say the answers had other noise than they were charged for.
    fn check_noise(&self, action: &Action, sigma2: Option<&str>) -> Result<(), &'static str> {
        let expected = match action {
            Action::Spend(r, _) => self.history.sigma2(r),
            Action::SpendVector(first, parts, _) => self.history.vector_sigma2(first, parts),
            _ => None,
        };
        let gaussian = match action {
            Action::Spend(r, _) | Action::SpendVector(r, _, _) => {
                r.mechanism == Mechanism::Gaussian
            }
            _ => false,
        };
        if gaussian && expected.is_none() {
            return Err("a Gaussian release's noise cannot be what its rho gives");
        }
        if expected.map(super::zcdp::variance_text).as_deref() != sigma2 {
            return Err("a release's noise is not what its rho gives");
        }
        Ok(())
    }

    /// Whether dpq could have written this entry here: entries that would under-count
    /// spending are refused even when their checksums agree.
    fn check(&self, action: &Action, first: bool) -> Result<(), &'static str> {
        let h = &self.history;
        match action {
            Action::Header { name, total, .. } => {
                if !first {
                    return Err("the header is not the first line");
                }
                if self.file.as_ref().is_some_and(|d| &d.name != name) {
                    return Err("the ledger belongs to other data (copied over this one)");
                }
                if *total <= Decimal::ZERO {
                    return Err("a budget is not positive or below what is spent");
                }
            }
            Action::Budget(total, accounting) => {
                let changes = accounting.is_some_and(|a| a != h.accounting());
                if changes && !h.releases().is_empty() {
                    return Err("the accounting changes after releases");
                }
                if *total <= Decimal::ZERO || (!changes && *total < h.spent()) {
                    return Err("a budget is not positive or below what is spent");
                }
            }
            Action::Data { .. } | Action::Exposed => {}
            Action::Model(m) => {
                if *m != h.neighbours() && !h.releases().is_empty() {
                    return Err("the neighbour model changes after releases");
                }
                if *m != Neighbours::AddRemove && h.unit().is_some() {
                    return Err("a privacy unit is declared under a model other than add_remove");
                }
            }
            Action::Unit(u) => {
                if h.unit() != Some(u) && !h.releases().is_empty() {
                    return Err("the privacy unit changes after releases");
                }
                if h.neighbours() != Neighbours::AddRemove {
                    return Err("a privacy unit is declared under a model other than add_remove");
                }
            }
            Action::Cube(c, carry) => check_cube(h, c, carry.as_ref())?,
            Action::Spend(r, _) => {
                if r.seq != h.next_seq() {
                    return Err("a release is out of order");
                }
                // Rows are in order, disjoint and without zeros by construction (see
                // `spend_row`); they must also lie within the cube.
                if !r.row.is_empty() && r.row.end() > h.cube().map_or(0, |c| c.cells) {
                    return Err("a row does not fit the cube");
                }
                if r.eps <= Decimal::ZERO {
                    return Err("an epsilon is not positive");
                }
                if r.mechanism == Mechanism::Gaussian && h.accounting() != Accounting::Zcdp {
                    return Err("a Gaussian release on a table that accounts in epsilon");
                }
                if !r.sensitivity.is_finite() || r.sensitivity <= 0.0 {
                    return Err("a sensitivity is not positive");
                }
                // dpq checks the budget before it writes a spending, so a ledger where the
                // spending passes the budget was not written by it.
                if h.exceeds_for_certain(r.eps, r.mechanism, &h.charged_row(&r.measure, &r.row)) {
                    return Err("a spending exceeds the budget");
                }
            }
            Action::SpendVector(first, parts, _) => check_vector(h, first, parts)?,
            Action::Answers { seq, noisy } => {
                for (i, v) in noisy.iter().enumerate() {
                    if !v.is_finite() {
                        return Err("an answer is not a number");
                    }
                    match h.get(seq + i as u64) {
                        Some(r) if r.part == Some((i, noisy.len())) && r.noisy.is_none() => {}
                        _ => return Err("answers do not match a vector's parts"),
                    }
                }
            }
            Action::Answer { seq, noisy } => {
                if !noisy.is_finite() {
                    return Err("an answer is not a number");
                }
                match h.get(*seq) {
                    None => return Err("a release names no spending"),
                    Some(r) if r.noisy.is_some() => return Err("an answer is recorded twice"),
                    Some(_) => {}
                }
            }
        }
        Ok(())
    }

    fn commit(&mut self, action: Action) {
        match action {
            Action::Header {
                format,
                fingerprint,
                path,
                total,
                neighbours,
                ..
            } => {
                self.format = format;
                self.history.set_total(total);
                self.history.set_neighbours(neighbours);
                if let Some(v) = &mut self.view {
                    v.own.set_neighbours(neighbours);
                }
                self.note(&fingerprint, Some(&path));
            }
            Action::Budget(total, accounting) => {
                if let Some(a) = accounting {
                    self.history.set_accounting(a);
                    if let Some(v) = &mut self.view {
                        v.own.set_accounting(a);
                    }
                }
                self.history.set_total(total);
            }
            Action::Model(m) => {
                self.history.set_neighbours(m);
                if let Some(v) = &mut self.view {
                    v.own.set_neighbours(m);
                }
            }
            Action::Unit(u) => {
                if let Some(v) = &mut self.view {
                    v.own.set_unit(Some(u.clone()));
                }
                self.history.set_unit(Some(u));
            }
            Action::Exposed => {
                self.history.expose();
                if let Some(v) = &mut self.view {
                    v.own.expose();
                }
            }
            Action::Data { fingerprint, path } => self.note(&fingerprint, Some(&path)),
            Action::Cube(c, carry) => {
                if let Some(v) = &mut self.view {
                    match &carry {
                        Some(carry) => v.own.recube(c.clone(), carry),
                        None => v.own.set_cube(c.clone()),
                    }
                }
                match &carry {
                    Some(carry) => self.history.recube(c, carry),
                    None => self.history.set_cube(c),
                }
            }
            Action::Spend(r, analyst) => {
                if let Some(v) = self
                    .view
                    .as_mut()
                    .filter(|v| Some(&v.analyst) == analyst.as_ref())
                {
                    let seq = v.own.next_seq();
                    v.local.insert(r.seq, seq);
                    v.own.record(Release { seq, ..r.clone() });
                }
                self.history.record(r);
            }
            Action::Answer { seq, noisy } => self.answered(seq, noisy),
            Action::SpendVector(first, parts, analyst) => {
                if let Some(v) = self
                    .view
                    .as_mut()
                    .filter(|v| Some(&v.analyst) == analyst.as_ref())
                {
                    let seq = v.own.next_seq();
                    for i in 0..parts.len() as u64 {
                        v.local.insert(first.seq + i, seq + i);
                    }
                    v.own.record_vector(
                        &Release {
                            seq,
                            ..first.clone()
                        },
                        &parts,
                    );
                }
                self.history.record_vector(&first, &parts);
            }
            Action::Answers { seq, noisy } => {
                for (i, v) in noisy.into_iter().enumerate() {
                    self.answered(seq + i as u64, v);
                }
            }
        }
    }

    /// Fills in the answer of release `seq`, in the whole and in the analyst's view.
    fn answered(&mut self, seq: u64, noisy: f64) {
        self.history.set_noisy(seq, noisy);
        if let Some(v) = &mut self.view {
            if let Some(&own) = v.local.get(&seq) {
                v.own.set_noisy(own, noisy);
            }
        }
    }

    /// Checks an entry, appends it durably under `lock` and applies it. On failure the file
    /// is cut back to its last complete line and nothing is applied.
    fn append(&mut self, lock: &Lock, entry: &Entry, action: Action) -> Result<(), LedgerError> {
        let written = self.write(lock, entry, action)?;
        self.settle(written)
    }

    /// Checks an entry, writes it under `lock` and applies it, without waiting for it to be
    /// durable: [`Ledger::settle`] does, once the lock is let go, and nothing may depend on
    /// the line until then. On failure the file is cut back to its last complete line and
    /// nothing is applied.
    fn write(
        &mut self,
        lock: &Lock,
        entry: &Entry,
        action: Action,
    ) -> Result<Written, LedgerError> {
        let first = self.file.as_ref().is_some_and(|d| d.lines == 0);
        self.check(&action, first)
            .map_err(|reason| self.damaged(self.lines() + 1, reason))?;
        let (Some(file), Some(disk)) = (&lock.file, &self.file) else {
            self.commit(action);
            return Ok(Written(None));
        };
        let content = serde_json::to_string(entry).map_err(|e| LedgerError::Io {
            path: self.shown(),
            message: e.to_string(),
        })?;
        // The JSON of the entry ends with its closing brace: the line is everything before it,
        // the checksum, and the brace again.
        let body = &content[..content.len().saturating_sub(1)];
        let sum = chain(&disk.last_sum, body.as_bytes());
        let line = format!("{body},\"sum\":\"{sum}\"}}\n");
        if line.len() > MAX_LINE {
            return Err(LedgerError::TooLong {
                path: self.shown(),
                limit: MAX_LINE,
            });
        }
        // After a failed fsync nothing written through the file can be made durable in this
        // process: a line written now would count against the budget with nothing drawn.
        if let Some(why) = disk.group.as_ref().and_then(|g| g.failure()) {
            return Err(io_error(
                &disk.path,
                std::io::Error::other(format!(
                    "an earlier fsync of the ledger failed ({why}); restart dpq once the disk is sound"
                )),
            ));
        }
        let start = disk.offset;
        let mut handle: &File = file;
        if let Err(e) = handle.write_all(line.as_bytes()) {
            // Nothing may depend on a line that was not written whole: cut it away, so the
            // ledger stays usable once the cause (a full disk) is gone.
            let _ = file.set_len(start).and_then(|()| file.sync_data());
            return Err(io_error(&disk.path, e));
        }
        let end = start + line.len() as u64;
        if let Some(g) = &disk.group {
            g.wrote(end);
        }
        let pending = Pending {
            end,
            lines: disk.lines + 1,
            sum: sum.clone(),
        };
        if let Some(d) = &mut self.file {
            d.prev_sum = std::mem::replace(&mut d.last_sum, sum);
            d.last_start = start;
            d.offset = end;
            d.lines += 1;
        }
        self.commit(action);
        Ok(Written(Some(pending)))
    }

    /// Returns once the line `written` is durable (with every line before it; see
    /// [`super::durable`]), then moves the high-water mark up to it. The lock need not be
    /// held: lines are only ever appended after it.
    pub(super) fn settle(&mut self, written: Written) -> Result<(), LedgerError> {
        let (Some(pending), Some(disk)) = (written.0, &self.file) else {
            return Ok(());
        };
        if disk.sync {
            let (Some(group), Some(handle)) = (&disk.group, &disk.handle) else {
                return Err(LedgerError::Io {
                    path: self.shown(),
                    message: "the ledger file is not open".into(),
                });
            };
            group
                .settle(handle, pending.end)
                .map_err(|e| io_error(&disk.path, e))?;
        }
        self.write_mark_at(pending.lines, &pending.sum);
        Ok(())
    }

    /// Records a new total budget, and how it composes when that changes (only before any
    /// release).
    pub(super) fn set_total(
        &mut self,
        lock: &Lock,
        total: Decimal,
        accounting: Accounting,
        time: u64,
    ) -> Result<(), LedgerError> {
        let change = (accounting != self.history.accounting()).then_some(accounting);
        let entry = Entry::Budget {
            total: total.normalize().to_string(),
            accounting: change.map(|a| a.to_string()),
            time,
        };
        self.append(lock, &entry, Action::Budget(total, change))
    }

    /// Records how neighbouring tables differ; only before any release.
    pub(super) fn set_neighbours(
        &mut self,
        lock: &Lock,
        neighbours: Neighbours,
        time: u64,
    ) -> Result<(), LedgerError> {
        let entry = Entry::Model {
            neighbours: neighbours.to_string(),
            time,
        };
        self.append(lock, &entry, Action::Model(neighbours))
    }

    /// Records the privacy unit; only before any release, under `add_remove`.
    pub(super) fn set_unit(
        &mut self,
        lock: &Lock,
        unit: &Unit,
        time: u64,
    ) -> Result<(), LedgerError> {
        let entry = Entry::Unit {
            column: &unit.column,
            max_rows: unit.max_rows,
            header: (!unit.header).then_some(false),
            reading: Some(unit.reading.as_str()).filter(|r| !r.is_empty()),
            time,
        };
        self.append(lock, &entry, Action::Unit(unit.clone()))
    }

    /// Records that a seeded release exposed the data: its budget is used up for good.
    pub(super) fn expose(&mut self, lock: &Lock, time: u64) -> Result<(), LedgerError> {
        self.append(lock, &Entry::Exposed { time }, Action::Exposed)
    }

    /// Records that the data, with the content of `fingerprint`, was loaded from the path of
    /// keyed hash `path`.
    pub(super) fn add_content(
        &mut self,
        lock: &Lock,
        fingerprint: &str,
        path: &str,
        time: u64,
    ) -> Result<(), LedgerError> {
        let entry = Entry::Data {
            fingerprint,
            path,
            time,
        };
        let action = Action::Data {
            fingerprint: fingerprint.to_string(),
            path: path.to_string(),
        };
        self.append(lock, &entry, action)
    }

    /// The keyed hash of the path the data was loaded from last.
    pub fn last_path(&self) -> &str {
        &self.last_path
    }

    /// Whether the data was ever loaded from the path of keyed hash `path`.
    pub fn has_path(&self, path: &str) -> bool {
        self.paths.contains(path)
    }

    /// Records the cube declared on the data file, and how releases over an earlier cube
    /// carry over to it.
    pub(super) fn declare_cube(
        &mut self,
        lock: &Lock,
        cube: &CubeDecl,
        carry: Option<&Carry>,
        time: u64,
    ) -> Result<(), LedgerError> {
        let (from, parents) = match carry {
            None => (None, None),
            Some(Carry::Full { from }) => (Some(from.as_str()), None),
            Some(Carry::Refine { from, parents }) => {
                (Some(from.as_str()), Some(parents.as_slice()))
            }
        };
        let entry = Entry::Cube {
            spec: &cube.spec,
            cells: cube.cells,
            header: (!cube.header).then_some(false),
            reading: Some(cube.reading.as_str()).filter(|r| !r.is_empty()),
            from,
            parents,
            time,
        };
        self.append(lock, &entry, Action::Cube(cube.clone(), carry.cloned()))
    }

    /// Writes a spending, to be settled before its noise is drawn. `release.noisy` is
    /// ignored.
    pub(super) fn spend(&mut self, lock: &Lock, release: &Release) -> Result<Written, LedgerError> {
        let analyst = self.view.as_ref().map(|v| v.analyst.clone());
        let (row, runs) = if self.format >= 3 {
            let runs = release.row.runs().iter();
            (
                None,
                Some(runs.map(|r| (r.start, r.len, r.coef.to_string())).collect()),
            )
        } else {
            let cells = release.row.iter();
            (Some(cells.map(|(j, c)| (j, c.to_string())).collect()), None)
        };
        let entry = Entry::Spend {
            seq: release.seq,
            statement: &release.statement,
            key: &release.key,
            row,
            runs,
            parts: None,
            eps: release.eps.normalize().to_string(),
            sensitivity: release.sensitivity,
            mechanism: release.mechanism.to_string(),
            sigma2: self.history.sigma2(release).map(super::zcdp::variance_text),
            measure: release.measure.to_fields(),
            analyst: analyst.as_deref(),
            time: release.time,
        };
        let mut recorded = release.clone();
        recorded.noisy = None;
        self.write(lock, &entry, Action::Spend(recorded, analyst.clone()))
    }

    /// Writes the spending of a vector released at once: its first part's release and every
    /// part's row, one line, to be settled before its noise is drawn.
    pub(super) fn spend_vector(
        &mut self,
        lock: &Lock,
        first: &Release,
        parts: &[Row],
    ) -> Result<Written, LedgerError> {
        let analyst = self.view.as_ref().map(|v| v.analyst.clone());
        let runs = |p: &Row| {
            p.runs()
                .iter()
                .map(|r| (r.start, r.len, r.coef.to_string()))
                .collect::<Vec<_>>()
        };
        let entry = Entry::Spend {
            seq: first.seq,
            statement: &first.statement,
            key: &first.key,
            row: None,
            runs: None,
            parts: Some(parts.iter().map(runs).collect()),
            eps: first.eps.normalize().to_string(),
            sensitivity: first.sensitivity,
            mechanism: first.mechanism.to_string(),
            sigma2: self
                .history
                .vector_sigma2(first, parts)
                .map(super::zcdp::variance_text),
            measure: None,
            analyst: analyst.as_deref(),
            time: first.time,
        };
        let action = Action::SpendVector(first.clone(), parts.to_vec(), analyst.clone());
        self.write(lock, &entry, action)
    }

    /// Writes the answers of a vector's parts, numbered from `seq`, to be settled before
    /// they are shown.
    pub(super) fn answers(
        &mut self,
        lock: &Lock,
        seq: u64,
        noisy: &[f64],
        time: u64,
    ) -> Result<Written, LedgerError> {
        let entry = Entry::Answers {
            seq,
            answers: noisy.to_vec(),
            time,
        };
        let action = Action::Answers {
            seq,
            noisy: noisy.to_vec(),
        };
        self.write(lock, &entry, action)
    }

    /// Writes the noisy answer of spending `seq`, to be settled before it is shown.
    pub(super) fn answer(
        &mut self,
        lock: &Lock,
        seq: u64,
        noisy: f64,
        time: u64,
    ) -> Result<Written, LedgerError> {
        let entry = Entry::Release { seq, noisy, time };
        self.write(lock, &entry, Action::Answer { seq, noisy })
    }

    /// Writes the high-water mark beside the ledger: its line count and last checksum, in
    /// place, as one record of fixed length. Not made durable: after a crash it may lag
    /// behind the ledger, which only weakens the check for that while; it is never ahead of
    /// what is durable.
    fn write_mark(&mut self) {
        let Some(disk) = &self.file else {
            return;
        };
        let (lines, sum) = (disk.lines, disk.last_sum.clone());
        self.write_mark_at(lines, &sum);
    }

    /// Writes the high-water mark at line `lines`, of checksum `sum`, which is durable.
    fn write_mark_at(&mut self, lines: usize, sum: &str) {
        let Some(disk) = &mut self.file else {
            return;
        };
        let path = mark_path(&disk.path);
        let mark = MarkRecord {
            ledger: disk.name.clone(),
            lines,
            sum: sum.to_string(),
        };
        let first = disk.mark.is_none();
        let opened = match &disk.mark {
            Some(f) => Ok(Arc::clone(f)),
            None => OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(&path)
                .map(Arc::new),
        };
        let written = opened.and_then(|file| {
            let mut record = serde_json::to_string(&mark).map_err(std::io::Error::other)?;
            record.extend(std::iter::repeat_n(
                ' ',
                MARK_LEN.saturating_sub(record.len() + 1),
            ));
            record.push('\n');
            file.write_all_at(record.as_bytes(), 0)?;
            if first {
                file.set_len(record.len() as u64)?;
            }
            disk.mark = Some(file);
            Ok(())
        });
        if let Err(e) = written {
            self.warnings.push(format!(
                "the high-water mark {} could not be written ({e}); the ledger itself is intact",
                path.display()
            ));
        }
    }
}

/// Checks a vector's spending as read or about to be written: in order, parts that are
/// indicators of disjoint cells within the cube, the sensitivity such parts have, a positive
/// epsilon, and a spending that does not pass the budget for certain.
fn check_vector(h: &History, first: &Release, parts: &[Row]) -> Result<(), &'static str> {
    if first.seq != h.next_seq() {
        return Err("a release is out of order");
    }
    let cells = h.cube().map_or(0, |c| c.cells);
    let fits = |p: &Row| {
        !p.is_empty() && p.end() <= cells && p.runs().iter().all(|r| r.coef == Decimal::ONE)
    };
    if parts.is_empty() || !parts.iter().all(fits) || !h.disjoint(parts) {
        return Err("a vector's parts are not disjoint cells of the cube");
    }
    if first.eps <= Decimal::ZERO {
        return Err("an epsilon is not positive");
    }
    if first.mechanism == Mechanism::Gaussian && h.accounting() != Accounting::Zcdp {
        return Err("a Gaussian release on a table that accounts in epsilon");
    }
    let s = h.vector_sensitivity(parts);
    if s <= Decimal::ZERO || Decimal::try_from(first.sensitivity).ok() != Some(s) {
        return Err("a vector's sensitivity is not its parts'");
    }
    if h.vector_after_bounds(first.eps, first.mechanism, parts, s)
        .1
        > h.total()
    {
        return Err("a spending exceeds the budget");
    }
    Ok(())
}

/// The length of a high-water mark's record.
const MARK_LEN: usize = 128;

/// The high-water mark of a ledger.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MarkRecord {
    ledger: String,
    lines: usize,
    sum: String,
}

fn mark_path(ledger: &Path) -> PathBuf {
    ledger.with_extension("hwm")
}

/// What lies beside a ledger where its mark should be.
enum Mark {
    /// A mark.
    Of(MarkRecord),
    /// Something that does not read as one (a write torn by a crash, say).
    Garbled,
}

/// The mark beside a ledger: `None` when there is none; an error when it cannot be read.
fn read_mark(path: &Path) -> Result<Option<Mark>, LedgerError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(
            serde_json::from_slice(&bytes).map_or(Mark::Garbled, Mark::Of),
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(path, e)),
    }
}

/// A line's body (its bytes before `,"sum":"`, which with a closing `}` are the JSON of its
/// content) and its checksum, if it ends as dpq's lines do.
fn split_line(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let cut = line.len().checked_sub(SUFFIX)?;
    let (body, tail) = line.split_at(cut);
    if cut == 0 || !tail.starts_with(b",\"sum\":\"") || !tail.ends_with(b"\"}") {
        return None;
    }
    Some((body, &tail[8..40]))
}

/// The checksum of a line: BLAKE3 of the previous line's checksum and this line's content,
/// the JSON object `body` + `}`.
fn chain(previous: &str, body: &[u8]) -> String {
    let mut h = blake3::Hasher::new();
    h.update(previous.as_bytes());
    h.update(b"\n");
    h.update(body);
    h.update(b"}");
    h.finalize().to_hex()[..32].to_string()
}

fn io_error(path: &Path, e: std::io::Error) -> LedgerError {
    LedgerError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

/// Makes the entries of `dir` durable.
pub(super) fn sync_dir(dir: Option<&Path>) -> std::io::Result<()> {
    if let Some(dir) = dir {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// A cube entry's action: its declaration, and how the releases over the cube before carry
/// over to it (`from` alone: in full; `from` and `parents`: spread over the new cells).
fn parse_cube(e: Raw) -> Result<Action, &'static str> {
    let malformed = "a cube is malformed";
    let carry = match (e.from, e.parents) {
        (None, None) => None,
        (Some(from), None) => Some(Carry::Full {
            from: from.into_owned(),
        }),
        (Some(from), Some(parents)) => Some(Carry::Refine {
            from: from.into_owned(),
            parents: parents
                .into_iter()
                .map(usize::try_from)
                .collect::<Result<_, _>>()
                .map_err(|_| malformed)?,
        }),
        (None, Some(_)) => return Err(malformed),
    };
    let decl = CubeDecl {
        spec: e.spec.ok_or("a field is missing")?.into_owned(),
        cells: usize::try_from(e.cells.ok_or("a field is missing")?).map_err(|_| malformed)?,
        header: e.header.unwrap_or(true),
        reading: reading(e.reading)?,
    };
    Ok(Action::Cube(decl, carry))
}

/// The reading a cube or unit entry records: none for `,` and `.`, which is never written.
fn reading(written: Option<Cow<'_, str>>) -> Result<String, &'static str> {
    match written {
        Some(r) if r.is_empty() => Err("a reading is empty"),
        r => Ok(r.map(Cow::into_owned).unwrap_or_default()),
    }
}

/// Whether a cube entry could have been written over history `h`: a cube changes under
/// releases with a row only by carrying them over from the cube declared, and a refinement
/// maps every new cell into an old one and covers every old cell.
fn check_cube(h: &History, c: &CubeDecl, carry: Option<&Carry>) -> Result<(), &'static str> {
    if !(1..=MAX_CELLS).contains(&c.cells) {
        return Err("a cube is malformed");
    }
    let same = h
        .cube()
        .is_some_and(|d| d.spec == c.spec && d.header == c.header && d.reading == c.reading);
    match (carry, h.cube()) {
        (None, _) if !same && h.rows_released() > 0 => {
            return Err("the cube changes after releases over it");
        }
        (None, _) => {}
        (Some(_), None) => return Err("a cube carries releases over no cube"),
        (Some(Carry::Full { from }), Some(old)) => {
            if *from != old.spec || same {
                return Err("a cube carries releases over another cube");
            }
        }
        (Some(Carry::Refine { from, parents }), Some(old)) => {
            if *from != old.spec || same || old.header != c.header || old.reading != c.reading {
                return Err("a cube carries releases over another cube");
            }
            // Every new cell in an old one, and every old cell covered: only then
            // are the costs of the old cells those of the new (the map itself is
            // checked against the declarations where the table is read).
            let mut covered = vec![false; old.cells];
            for &p in parents {
                *covered.get_mut(p).ok_or("a refinement is malformed")? = true;
            }
            if parents.len() != c.cells || covered.contains(&false) {
                return Err("a refinement is malformed");
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spend(seq: u64, eps: &str) -> Action {
        Action::Spend(
            Release {
                seq,
                statement: "s".into(),
                key: "k".into(),
                row: Row::default(),
                eps: Decimal::from_str(eps).expect("decimal"),
                sensitivity: 1.0,
                mechanism: Mechanism::Laplace,
                noisy: None,
                time: 0,
                part: None,
                measure: Measure::Rows,
            },
            None,
        )
    }

    fn apply(l: &mut Ledger, a: Action) -> Result<(), &'static str> {
        l.check(&a, false)?;
        l.commit(a);
        Ok(())
    }

    /// A ledger whose chain is intact can still say nonsense (it may have been rebuilt by
    /// hand): entries that would under-count spending are refused.
    #[test]
    fn well_chained_nonsense_is_refused() {
        let mut l = Ledger::memory(Decimal::ONE, Neighbours::AddRemove, "f");
        assert!(apply(&mut l, spend(1, "-1")).is_err(), "a negative epsilon");
        assert!(apply(&mut l, spend(1, "0")).is_err(), "a zero epsilon");
        let budget = Action::Budget(Decimal::from(-5), None);
        assert!(apply(&mut l, budget).is_err(), "a negative budget");
        assert!(
            apply(&mut l, spend(2, "0.1")).is_err(),
            "a gap in the releases"
        );
        apply(&mut l, spend(1, "0.1")).expect("a proper spend");
        let answer = || Action::Answer { seq: 1, noisy: 3.5 };
        apply(&mut l, answer()).expect("its answer");
        assert!(apply(&mut l, answer()).is_err(), "an answer recorded twice");
        let huge = "79228162514264337593543950335";
        assert!(apply(&mut l, spend(2, huge)).is_err(), "past the budget");
        let lower = Action::Budget(Decimal::new(5, 2), None);
        assert!(
            apply(&mut l, lower).is_err(),
            "a budget below what is spent"
        );
        assert_eq!(l.history().spent(), Decimal::new(1, 1));
    }

    /// Writes `entries` as a ledger file, each line chained to the one before, as
    /// [`Ledger::append`] writes them.
    fn write_ledger(path: &Path, entries: &[Entry]) {
        let mut last = GENESIS.to_string();
        let mut text = String::new();
        for e in entries {
            let content = serde_json::to_string(e).expect("an entry");
            let body = &content[..content.len() - 1];
            last = chain(&last, body.as_bytes());
            text.push_str(&format!("{body},\"sum\":\"{last}\"}}\n"));
        }
        std::fs::write(path, text).expect("the ledger is written");
    }

    fn header(format: u32) -> Entry<'static> {
        Entry::Header {
            format,
            ledger: "x",
            data_file: "ids.csv",
            fingerprint: "f",
            path: "p",
            total: "1".into(),
            neighbours: "replace".into(),
            time: 0,
        }
    }

    /// A ledger of format 2 (rows and keys cell by cell) is read as dpq now keeps them (runs,
    /// keys with runs: an identical query is still found) and appended to in its own form.
    #[test]
    fn a_format_2_ledger_is_read_and_appended_to_in_its_own_form() {
        let dir = tempfile::tempdir().expect("a directory");
        let path = dir.path().join("x.ledger");
        let cube = Entry::Cube {
            spec: "CUBE BY id (2, 3)",
            cells: 3,
            header: None,
            reading: None,
            from: None,
            parents: None,
            time: 0,
        };
        let spend = Entry::Spend {
            seq: 1,
            statement: "COUNT WHERE id < 3 WITH EPS 0.1",
            key: "f|private|cells3|0:1,1:1|0.1|laplace",
            row: Some(vec![(0, "1".into()), (1, "1".into())]),
            runs: None,
            parts: None,
            eps: "0.1".into(),
            sensitivity: 1.0,
            mechanism: "laplace".into(),
            sigma2: None,
            measure: None,
            analyst: None,
            time: 0,
        };
        let answer = Entry::Release {
            seq: 1,
            noisy: 5.5,
            time: 0,
        };
        write_ledger(&path, &[header(2), cube, spend, answer]);
        let mut ledger = Ledger::open(&path, "x", false).expect("a format 2 ledger is read");
        let h = ledger.history();
        let run = Row::from_runs(&[(0, 2, Decimal::ONE)]).expect("a run");
        assert_eq!(h.releases()[0].row, run);
        let key = "f|private|cells3|0-1:1|0.1|laplace";
        assert_eq!(h.find(key).and_then(|r| r.noisy), Some(5.5));
        assert_eq!(h.spent(), Decimal::new(1, 1));
        // A spending appended to it is written cell by cell, as format 2 has it.
        let lock = ledger.lock().expect("the lock");
        let mut release = h.releases()[0].clone();
        release.seq = 2;
        release.key = "f|private|cells3|1-2:1|0.1|laplace".into();
        release.row = Row::from_runs(&[(1, 2, Decimal::ONE)]).expect("a run");
        let written = ledger.spend(&lock, &release).expect("a spending fits");
        ledger.settle(written).expect("settled");
        drop(lock);
        let text = std::fs::read_to_string(&path).expect("the ledger");
        let last = text.lines().last().expect("a line");
        assert!(last.contains(r#""row":[[1,"1"],[2,"1"]]"#), "{last}");
        assert!(!last.contains("runs"));
        let again = Ledger::open(&path, "x", false).expect("read again");
        assert_eq!(again.history().spent(), Decimal::new(2, 1));

        // A new ledger is of format 3 and writes runs.
        let path = dir.path().join("y.ledger");
        let (mut ledger, lock) = new_with_cube(&path, "y", false);
        release.seq = 1;
        let written = ledger.spend(&lock, &release).expect("a spending fits");
        ledger.settle(written).expect("settled");
        drop(lock);
        let text = std::fs::read_to_string(&path).expect("the ledger");
        assert!(
            text.starts_with(r#"{"type":"header","format":3,"#),
            "{text}"
        );
        let last = text.lines().last().expect("a line");
        assert!(last.contains(r#""runs":[[1,2,"1"]]"#), "{last}");
        let again = Ledger::open(&path, "y", false).expect("read again");
        assert_eq!(again.history().releases()[0].row, release.row);
    }

    /// A new ledger `name` at `path` with a cube of 3 cells declared, and its lock.
    fn new_with_cube(path: &Path, name: &str, sync: bool) -> (Ledger, Lock) {
        let head = Header {
            name,
            data_file: "ids.csv",
            fingerprint: "f",
            path: "p",
            total: Decimal::ONE,
            neighbours: Neighbours::Replace,
            time: 0,
        };
        let mut ledger = Ledger::create(path, &head, sync).expect("a new ledger");
        let lock = ledger.lock().expect("the lock");
        ledger
            .declare_cube(
                &lock,
                &CubeDecl {
                    spec: "CUBE BY id (2, 3)".into(),
                    cells: 3,
                    header: true,
                    reading: String::new(),
                },
                None,
                0,
            )
            .expect("a cube");
        (ledger, lock)
    }

    /// After an fsync of the ledger failed in this process, a release writes no spending:
    /// it could never be made durable, so nothing would be drawn for it, and a spending
    /// written anyway would burn budget at every retry until dpq is restarted.
    #[test]
    fn after_a_failed_fsync_a_release_spends_nothing() {
        let dir = tempfile::tempdir().expect("a directory");
        let path = dir.path().join("z.ledger");
        let (mut ledger, lock) = new_with_cube(&path, "z", true);
        let release = Release {
            seq: 1,
            statement: "s".into(),
            key: "f|private|cells3|1-2:1|0.1|laplace".into(),
            row: Row::from_runs(&[(1, 2, Decimal::ONE)]).expect("a run"),
            eps: Decimal::new(1, 1),
            sensitivity: 1.0,
            mechanism: Mechanism::Laplace,
            noisy: None,
            time: 0,
            part: None,
            measure: Measure::Rows,
        };
        ledger
            .file
            .as_ref()
            .and_then(|d| d.group.as_ref())
            .expect("a group")
            .fail("injected");
        let before = std::fs::read_to_string(&path).expect("the ledger");
        assert!(
            ledger.spend(&lock, &release).is_err(),
            "a spending after a failed fsync"
        );
        drop(lock);
        assert_eq!(ledger.history().spent(), Decimal::ZERO);
        let after = std::fs::read_to_string(&path).expect("the ledger");
        assert_eq!(before, after, "no spending line is written");
    }

    /// A cube declared over a file read with `NO HEADER` says so in the ledger, and reads
    /// back so: the same file read with its header has other rows.
    #[test]
    fn a_cube_keeps_the_header_mode_it_was_declared_over() {
        let dir = tempfile::tempdir().expect("a directory");
        let path = dir.path().join("h.ledger");
        let head = Header {
            name: "h",
            data_file: "ids.csv",
            fingerprint: "f",
            path: "p",
            total: Decimal::ONE,
            neighbours: Neighbours::Replace,
            time: 0,
        };
        let mut ledger = Ledger::create(&path, &head, false).expect("a new ledger");
        let lock = ledger.lock().expect("the lock");
        let decl = CubeDecl {
            spec: "CUBE BY c1 (2)".into(),
            cells: 2,
            header: false,
            reading: String::new(),
        };
        ledger.declare_cube(&lock, &decl, None, 0).expect("a cube");
        drop(lock);
        let text = std::fs::read_to_string(&path).expect("the ledger");
        assert!(text.contains(r#""header":false"#), "{text}");
        let again = Ledger::open(&path, "h", false).expect("read again");
        assert_eq!(again.history().cube(), Some(&decl));
    }

    /// A cube and a unit declared over a file read with another delimiter or a decimal
    /// comma say so in the ledger, and read back so; the default reading writes nothing new.
    #[test]
    fn a_cube_and_a_unit_keep_the_reading_they_were_declared_over() {
        let dir = tempfile::tempdir().expect("a directory");
        let path = dir.path().join("r.ledger");
        let head = Header {
            name: "r",
            data_file: "ids.csv",
            fingerprint: "f",
            path: "p",
            total: Decimal::ONE,
            neighbours: Neighbours::AddRemove,
            time: 0,
        };
        let mut ledger = Ledger::create(&path, &head, false).expect("a new ledger");
        let lock = ledger.lock().expect("the lock");
        let unit = Unit {
            column: "id".into(),
            max_rows: 2,
            header: true,
            reading: "DELIMITER ';' DECIMAL ','".into(),
        };
        ledger.set_unit(&lock, &unit, 0).expect("a unit");
        let decl = CubeDecl {
            spec: "CUBE BY id (2)".into(),
            cells: 2,
            header: true,
            reading: "DELIMITER ';' DECIMAL ','".into(),
        };
        ledger.declare_cube(&lock, &decl, None, 0).expect("a cube");
        drop(lock);
        let text = std::fs::read_to_string(&path).expect("the ledger");
        assert_eq!(
            text.matches(r#""reading":"DELIMITER ';' DECIMAL ','""#)
                .count(),
            2,
            "{text}"
        );
        let again = Ledger::open(&path, "r", false).expect("read again");
        assert_eq!(again.history().cube(), Some(&decl));
        assert_eq!(again.history().unit(), Some(&unit));

        let path = dir.path().join("d.ledger");
        let mut ledger = Ledger::create(&path, &head, false).expect("a new ledger");
        let lock = ledger.lock().expect("the lock");
        let plain = CubeDecl {
            reading: String::new(),
            ..decl
        };
        ledger.declare_cube(&lock, &plain, None, 0).expect("a cube");
        drop(lock);
        let text = std::fs::read_to_string(&path).expect("the ledger");
        assert!(!text.contains("reading"), "{text}");
    }

    /// Rows that dpq never writes are refused: overlapping or unordered runs, zero
    /// coefficients, cells outside the cube, and both forms at once.
    #[test]
    fn malformed_rows_are_refused() {
        let dir = tempfile::tempdir().expect("a directory");
        let cube = || Entry::Cube {
            spec: "CUBE BY id (2, 3)",
            cells: 3,
            header: None,
            reading: None,
            from: None,
            parents: None,
            time: 0,
        };
        let spend = |row: Option<Vec<(usize, String)>>,
                     runs: Option<Vec<(usize, usize, String)>>| {
            Entry::Spend {
                seq: 1,
                statement: "s",
                key: "k",
                row,
                runs,
                parts: None,
                eps: "0.1".into(),
                sensitivity: 1.0,
                mechanism: "laplace".into(),
                sigma2: None,
                measure: None,
                analyst: None,
                time: 0,
            }
        };
        let bad = [
            (
                None,
                Some(vec![(0, 2, "1".into()), (1, 1, "1".into())]),
                "a row is malformed",
            ),
            (
                None,
                Some(vec![(1, 1, "1".into()), (0, 1, "1".into())]),
                "a row is malformed",
            ),
            (None, Some(vec![(0, 0, "1".into())]), "a row is malformed"),
            (None, Some(vec![(0, 1, "0".into())]), "a row is malformed"),
            (
                None,
                Some(vec![(2, 2, "1".into())]),
                "a row does not fit the cube",
            ),
            (
                Some(vec![(1, "1".into()), (0, "1".into())]),
                None,
                "a row is malformed",
            ),
            (
                Some(vec![(3, "1".into())]),
                None,
                "a row does not fit the cube",
            ),
            (
                Some(vec![(0, "1".into())]),
                Some(vec![(0, 1, "1".into())]),
                "a row is malformed",
            ),
            (None, None, "a field is missing"),
        ];
        for (i, (row, runs, reason)) in bad.into_iter().enumerate() {
            let path = dir.path().join(format!("{i}.ledger"));
            write_ledger(&path, &[header(3), cube(), spend(row, runs)]);
            match Ledger::open(&path, "x", false) {
                Err(LedgerError::Damaged {
                    line, reason: r, ..
                }) => {
                    assert_eq!((line, r), (3, reason), "case {i}");
                }
                other => panic!("case {i}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_line_is_its_content_and_a_checksum_of_it() {
        let body = br#"{"type":"data","fingerprint":"f","time":0"#;
        let sum = chain(GENESIS, body);
        let line = format!(
            "{},\"sum\":\"{sum}\"}}",
            std::str::from_utf8(body).expect("utf-8")
        );
        let (found_body, found) = split_line(line.as_bytes()).expect("a line");
        assert_eq!(found_body, body);
        assert_eq!(found, sum.as_bytes());
        assert!(split_line(b"{}").is_none());
        assert!(split_line(&line.as_bytes()[..line.len() - 1]).is_none());
    }
}
