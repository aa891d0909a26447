//! The session: loaded tables, their ledgers, the random generator, and statement execution,
//! one file per family of statements.
//!
//! | file | statements |
//! |---|---|
//! | `tables.rs` | `LOAD`, `USE`, `DESCRIBE`, `SHOW TABLES` |
//! | `budget.rs` | `SET BUDGET`, `SHOW BUDGET`, `SHOW HISTORY`, `SET SEED` |
//! | `count.rs` | `COUNT` and linear queries, `WITHIN` |
//! | `histogram.rs` | `HISTOGRAM`, `COUNT ... BY` |
//! | `sums.rs` | `SUM`, `MEAN` |
//! | `cubes.rs` | `CUBE BY`, `CUBE n`, `OBSERVE`, `ESTIMATE`, `PROB`, `SHOW CUBE` |
//! | `binned.rs` | `ESTIMATE MEDIAN`, `QUANTILE`, `MEAN` of a dimension |
//! | `lab.rs` | `SIMULATE`, `OUT OF RANGE`, `COMPARE NOISE`, charts |
//! | `explain.rs` | `EXPLAIN` |
//!
//! Spending goes through the privacy layer's release protocol only ([`crate::privacy::Txn`]).

mod binned;
mod budget;
mod count;
mod cubes;
mod explain;
mod histogram;
mod lab;
mod lab_smooth;
mod served;
mod statistics;
mod sums;
mod tables;

pub use served::{Family, Quotas, Rules, ServedTable};

use crate::ast::Statement;
use crate::check::{self, Catalog};
use crate::cube::Cube;
use crate::data::LoadOptions;
use crate::error::{Error, EvalError};
use crate::output::{Output, Response};
use crate::plan::{CubeRef, Plan};
use crate::privacy::{LedgerError, LedgerId, Ledgers, Neighbours, Store};
use crate::span::Span;
use crate::stats::blue::Measurement;
use crate::stats::Probability;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rust_decimal::Decimal;
use std::collections::HashMap;
use std::path::PathBuf;
#[cfg(not(target_arch = "wasm32"))]
use std::time::{SystemTime, UNIX_EPOCH};

/// The budget a table gets when loaded.
pub const DEFAULT_BUDGET: Decimal = Decimal::ONE;

/// Where the session's randomness comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Randomness {
    /// ChaCha20 seeded from the operating system's generator: private.
    #[default]
    Os,
    /// ChaCha20 from a fixed seed: reproducible, and not private.
    Seeded(u64),
}

/// A loaded table under a name. Tables loaded from the same data share one ledger, so loading
/// it again under another name or path neither resets its budget nor buys fresh noise.
struct Entry {
    name: String,
    /// The path as written.
    path: String,
    /// The file, resolved, and its device and inode: a chart may never be written over it.
    data_file: PathBuf,
    file_id: Option<(u64, u64)>,
    /// The data: shared by the sessions of every analyst of a served dataset.
    table: std::sync::Arc<crate::data::Source>,
    /// Where its releases are recorded: the data's ledger, or in a seeded session a practice
    /// copy of it.
    ledger: LedgerId,
    /// In a seeded session, the data's own ledger, marked exposed before a seeded release.
    private: Option<LedgerId>,
    /// The keyed fingerprint of the content this table was loaded from: answers are recorded
    /// and reused for this content only.
    fingerprint: String,
    /// The plain hash of that content, kept in memory only: a seeded session's noise is a
    /// function of it, so that seeded runs are the same in every state directory.
    content: String,
    /// Whether the content differed from what the ledger saw last when it was loaded.
    changed: bool,
    /// Whether the first row of the file named the columns: a cube declared over one
    /// reading of a file is refused over the other, whose rows differ.
    header: bool,
    /// The delimiter and decimal mark the file was read with: likewise, another reading of
    /// the same bytes is another table.
    format: crate::data::CsvFormat,
    /// The declared schema's mark (`~columns:` and its hash), empty without `COLUMNS`: a
    /// declared schema numbers the file's columns its own way, so its releases' keys name it.
    schema: String,
    /// The privacy unit its rows were bounded with, as its ledger recorded it when loaded.
    unit: Option<crate::privacy::Unit>,
    /// The declared schema's columns (`COLUMNS`, a served dataset's): their public domains.
    declared: Vec<crate::data::Declared>,
    /// The ledger's cube, built over this table's own columns.
    cube: Option<Cube>,
    /// On a served dataset, what its analyst may do.
    rules: Option<Rules>,
    /// Questions asked of its rows (counts, cells, sums) by this session: the server pads a
    /// response that read a dataset to its deadline.
    asked: std::sync::atomic::AtomicU64,
    /// The hash of its values, once a seeded release needed it (rows in memory only).
    values: std::sync::OnceLock<String>,
}

impl Entry {
    /// Asks the table's rows through `ask`, counting the question.
    fn ask<T>(
        &self,
        ask: impl FnOnce(&crate::data::Source) -> Result<T, crate::data::DataError>,
    ) -> Result<T, crate::data::DataError> {
        self.asked
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        ask(&self.table)
    }

    /// What the keys of its releases start with: the keyed fingerprint of its content, and
    /// for a table read with `NO HEADER`, another delimiter than `,` or a decimal comma a
    /// mark of that reading. The same bytes read two ways are two tables (the first line is
    /// a row of one and the names of the other, and `c1` names another column; fields are cut
    /// elsewhere, `1.234` is another number): no answer, and no evidence, about one is about
    /// the other.
    fn key_prefix(&self) -> String {
        let reading = reading(&self.fingerprint, self.header, self.format);
        format!("{reading}{}", self.schema)
    }

    /// What a seeded release's noise derives from: the plain hash of its content (for rows
    /// held in memory, of their values as read, [`crate::data::value_hash`], so that a CSV
    /// file and a DataFrame of the same table give the same seeded answers), and the reading,
    /// as in [`Entry::key_prefix`]. Only a seeded release draws its noise from it: without a
    /// `seed` it is empty, and the hash of the values is never taken.
    fn noise_prefix(&self, seed: Option<u64>) -> String {
        if seed.is_none() {
            return String::new();
        }
        let content = match self.table.in_memory() {
            Some(rows) => self
                .values
                .get_or_init(|| tables::hex(&crate::data::value_hash(rows))),
            None => &self.content,
        };
        reading(content, self.header, self.format)
    }
}

/// `data`, marked when the table was read with `NO HEADER`, and with a delimiter or decimal
/// mark other than `,` and `.` ([`crate::data::CsvFormat::key_mark`]).
fn reading(data: &str, header: bool, format: crate::data::CsvFormat) -> String {
    let header = if header { "" } else { "~no-header" };
    format!("{data}{header}{}", format.key_mark())
}

/// Progress of a long statement (`SIMULATE`), reported as work is done. The library never
/// prints: the `dpq` binary shows a progress bar on a terminal, and nothing otherwise.
pub trait Progress: Send + Sync {
    /// Work begins: `total` units (runs) of `what`.
    fn start(&self, what: &str, total: u64);
    /// `done` more units are finished (called from any thread).
    fn advance(&self, done: u64);
    /// The work is over.
    fn finish(&self);
}

/// An interpreter session: tables loaded so far, the current one, and the generator.
pub struct Session {
    entries: Vec<Entry>,
    ledgers: Ledgers,
    /// In a seeded session, the practice copy of each data's ledger.
    practice_of: HashMap<LedgerId, LedgerId>,
    current: Option<usize>,
    /// Whether any noise has been drawn: after that the generator may not be reseeded.
    drawn: bool,
    rng: ChaCha20Rng,
    seed: Option<u64>,
    load_options: LoadOptions,
    clock: fn() -> u64,
    cube: Option<cubes::TeachingCube>,
    /// Whether coefficient lists speak of the teaching cube (after `CUBE n`) rather than the
    /// current table's (after `CUBE BY`, `LOAD` or `USE`).
    teaching_focus: bool,
    /// Where the progress of long statements is reported, if anywhere.
    progress: Option<Box<dyn Progress>>,
    /// In an analyst's session of served datasets (`dpq serve`), their quotas.
    analyst: Option<Quotas>,
    /// Rows handed over in memory for the next `LOAD` of their name ([`Session::give`]).
    given: Option<tables::Given>,
    /// The delta at which a rho is also shown as (epsilon, delta) (`SET DELTA`).
    delta: f64,
}

/// The delta at which a rho is shown as (epsilon, delta) until `SET DELTA` says otherwise:
/// 1e-6, well below one over the row count of the tables dpq is used on (a delta near 1/n
/// would allow releasing a row outright).
pub const DEFAULT_DELTA: f64 = 1e-6;

impl Default for Session {
    fn default() -> Self {
        Self::new(Randomness::Os)
    }
}

impl Session {
    /// A session whose spending lasts only as long as it does (practice, library use and
    /// tests); the `dpq` binary uses [`Session::with_store`] with a state directory.
    pub fn new(randomness: Randomness) -> Self {
        Self::with_store(randomness, Store::memory())
    }

    /// A session keeping every data file's spending in a ledger of `store`.
    pub fn with_store(randomness: Randomness, store: Store) -> Self {
        let (rng, seed) = match randomness {
            Randomness::Os => (ChaCha20Rng::from_os_rng(), None),
            Randomness::Seeded(s) => (ChaCha20Rng::seed_from_u64(s), Some(s)),
        };
        Self {
            entries: Vec::new(),
            ledgers: Ledgers::new(store),
            practice_of: HashMap::new(),
            current: None,
            drawn: false,
            rng,
            seed,
            load_options: LoadOptions::default(),
            clock: now,
            cube: None,
            teaching_focus: false,
            progress: None,
            analyst: None,
            given: None,
            delta: DEFAULT_DELTA,
        }
    }

    /// Hands over rows held in memory (a DataFrame's, read by [`crate::data::from_batches`])
    /// for the next statement `LOAD 'shown' AS name ...` to load, its ledger found by
    /// `content` as a file's is by its bytes; `shown` (`<pandas DataFrame>`) stands where a
    /// file's path would. Whatever that statement does, the rows are not kept after it.
    pub fn give(&mut self, shown: &str, table: crate::data::Table, content: [u8; 32]) {
        self.given = Some(tables::Given {
            shown: shown.to_string(),
            table,
            content,
        });
    }

    /// Drops rows handed over and not loaded.
    pub fn drop_given(&mut self) {
        self.given = None;
    }

    /// Reports the progress of long statements (`SIMULATE`) to `progress`, or to nothing.
    pub fn set_progress(&mut self, progress: Option<Box<dyn Progress>>) {
        self.progress = progress;
    }

    /// Replaces the clock that stamps releases (seconds since the Unix epoch); golden tests
    /// fix it so transcripts do not change from run to run.
    pub fn set_clock(&mut self, clock: fn() -> u64) {
        self.clock = clock;
    }

    /// The seed in force, if any (then results are not private).
    pub fn seed(&self) -> Option<u64> {
        self.seed
    }

    /// The name of the current table, if any.
    pub fn current_table_name(&self) -> Option<String> {
        self.current.map(|i| self.entries[i].name.clone())
    }

    /// The current table's public facts and budget, as `DESCRIBE` shows them, from what this
    /// session holds (nothing is read).
    pub fn current_table_info(&self) -> Option<crate::output::TableInfo> {
        self.current.map(|i| self.info(i))
    }

    /// Each table's name and the questions this session has asked of its rows so far: what
    /// grows across a statement tells which tables it read (`dpq serve` pads the response).
    pub fn questions_asked(&self) -> Vec<(String, u64)> {
        self.entries
            .iter()
            .map(|e| {
                let asked = e.asked.load(std::sync::atomic::Ordering::Relaxed);
                (e.name.clone(), asked)
            })
            .collect()
    }

    /// Whether spending is kept in memory only (practice): nothing outlives the session.
    pub fn practice(&self) -> bool {
        self.ledgers.store().state_dir().is_none()
    }

    /// Names of the loaded tables and, for each, its column names: for completion.
    pub fn names(&self) -> Vec<(String, Vec<String>)> {
        self.entries
            .iter()
            .map(|e| {
                let cols = e.table.schema().into_iter().map(|(n, _)| n).collect();
                (e.name.clone(), cols)
            })
            .collect()
    }

    /// Checks and runs one statement. On error nothing changes: no budget spent, no history
    /// row, no table.
    pub fn execute(&mut self, stmt: &Statement) -> Result<Response, Error> {
        let plan = check::check(stmt, self)?;
        self.permit(&plan, stmt.span)?;
        let output = self.run(plan, stmt.span)?;
        Ok(Response {
            output,
            seed: self.seed,
            practice: self.practice(),
        })
    }

    fn run(&mut self, plan: Plan, span: Span) -> Result<Output, EvalError> {
        Ok(match plan {
            Plan::Load {
                path,
                database,
                path_span,
                header,
                format,
                neighbours,
                unit,
                columns,
                name,
            } => self.load(
                tables::Source {
                    path,
                    database,
                    path_span,
                    header,
                    format,
                    neighbours,
                    unit,
                    columns,
                },
                name,
                span,
            )?,
            Plan::Use { table } => self.use_table(&table),
            Plan::ShowTables => {
                Output::Tables((0..self.entries.len()).map(|i| self.info(i)).collect())
            }
            Plan::Describe { table } => Output::Described(self.info(self.index(&table))),
            Plan::ShowBudget { table } => self.show_budget(&table, span)?,
            Plan::ShowHistory { table } => self.show_history(&table, span)?,
            Plan::SetBudget {
                table,
                total,
                accounting,
            } => self.set_budget(table, total, accounting, span)?,
            Plan::SetDelta { delta } => {
                self.delta = delta;
                Output::DeltaSet { delta }
            }
            Plan::SetSeed { seed } => self.set_seed(seed, span)?,
            Plan::Count(plan) => self.count(*plan, span)?,
            Plan::Histogram(plan) => self.histogram(*plan, span)?,
            Plan::Sum(plan) => self.sum(*plan, span)?,
            Plan::Statistic(plan) => self.statistic(*plan, span)?,
            Plan::CompareSmooth(plan) => {
                Output::CompareSmooth(Box::new(self.compare_smooth(plan, span)?))
            }
            Plan::Binned(plan) => self.binned(*plan, span)?,
            Plan::ChooseEps(plan) => Output::ChooseEps(count::choose_eps(plan, span)?),
            Plan::ChooseRho(plan) => Output::ChooseEps(count::choose_rho(plan, span)?),
            Plan::Simulate(plan) => Output::Simulate(self.simulate(plan, span)?),
            Plan::OutOfRange { n, eps, at } => Output::OutOfRange(lab::out_of_range(n, eps, at)),
            Plan::CompareAccounting {
                queries,
                requirement,
                plot,
                statement,
            } => Output::CompareAccounting(self.compare_accounting(
                &queries,
                requirement,
                plot.as_ref(),
                &statement,
                span,
            )?),
            Plan::CompareNoise { eps, sensitivity } => {
                Output::CompareNoise(lab::compare_noise(&eps, sensitivity))
            }
            Plan::Explain { plan, statement } => {
                Output::Explained(self.explain(*plan, statement, span)?)
            }
            Plan::CubeBy { table, cube, spec } => self.cube_by(table, cube, spec, span)?,
            Plan::Cube { cells, neighbours } => self.teaching_cube(cells, neighbours, span)?,
            Plan::ShowCube { target } => self.show_cube(target, span)?,
            Plan::Observe {
                row,
                value,
                eps_exact,
                statement,
            } => self.observe(row, value, eps_exact, statement, span)?,
            Plan::Estimate {
                target,
                query,
                measure,
                text,
            } => self.estimate(target, query, &measure, text, span)?,
            Plan::Prob {
                target,
                query,
                measure,
                text,
                event,
            } => self.prob(target, query, &measure, text, event, span)?,
        })
    }

    fn index(&self, name: &str) -> usize {
        self.entries
            .iter()
            .position(|e| e.name == name)
            .expect("the checker resolved the table name")
    }

    /// Reads table `i`'s ledger again, to show what other processes spent too, and rebuilds
    /// its cube if the ledger now declares another.
    fn refresh(&mut self, i: usize, span: Span) -> Result<(), EvalError> {
        let entry = &mut self.entries[i];
        let txn = self
            .ledgers
            .get_mut(entry.ledger)
            .begin()
            .map_err(ledger_error(span))?;
        same_unit(entry, txn.history(), span)?;
        let declared = txn.history().cube().cloned();
        // Another session changed the cube: every refinement the ledger now records must be
        // the one the declarations give, before its costs are trusted.
        if declared.as_ref().map(|c| &c.spec) != entry.cube.as_ref().map(Cube::declaration).as_ref()
        {
            cubes::check_refinements(txn.history(), &entry.table, &entry.name)
                .map_err(|message| EvalError::CubeUnusable { message, span })?;
        }
        drop(txn);
        cubes::sync_cube(entry, declared.as_ref(), span)
    }
}

impl Session {
    /// In a seeded session, [`same_unit`] against the data's own ledger too: its practice copy
    /// was taken when the data was first loaded.
    fn own_unit(&self, i: usize, span: Span) -> Result<(), EvalError> {
        let entry = &self.entries[i];
        match entry.private {
            Some(own) => same_unit(entry, self.ledgers.get(own).history(), span),
            None => Ok(()),
        }
    }
}

/// Refuses a statement over a table whose rows were bounded with another privacy unit than
/// the one its data's ledger records now (another statement or session declared one since
/// the table was loaded): its sensitivities would not hold for its rows.
fn same_unit(
    entry: &Entry,
    history: &crate::privacy::History,
    span: Span,
) -> Result<(), EvalError> {
    if entry.unit.as_ref() == history.unit() {
        return Ok(());
    }
    Err(EvalError::UnitChanged {
        table: entry.name.clone(),
        current: crate::output::unit_text(history.unit()),
        span,
    })
}

impl Catalog for Session {
    fn current_table(&self) -> Option<&str> {
        self.current.map(|i| self.entries[i].name.as_str())
    }

    fn table(&self, name: &str) -> Option<&crate::data::Source> {
        self.entries
            .iter()
            .find(|e| e.name == name)
            .map(|e| e.table.as_ref())
    }

    fn table_names(&self) -> Vec<String> {
        self.entries.iter().map(|e| e.name.clone()).collect()
    }

    fn table_cube(&self, table: &str) -> Option<&Cube> {
        self.entries.iter().find(|e| e.name == table)?.cube.as_ref()
    }

    fn table_unit(&self, table: &str) -> Option<String> {
        let entry = self.entries.iter().find(|e| e.name == table)?;
        entry.unit.as_ref().map(|u| u.column.clone())
    }

    fn column_domain(&self, table: &str, column: &str) -> crate::data::Domain {
        self.entries
            .iter()
            .find(|e| e.name == table)
            .and_then(|e| e.declared.iter().find(|d| d.name == column))
            .map(|d| d.domain.clone())
            .unwrap_or_default()
    }

    fn cube_neighbours(&self, cube: &CubeRef) -> Neighbours {
        match cube {
            CubeRef::Teaching => self
                .cube
                .as_ref()
                .map_or(Neighbours::AddRemove, |c| c.ledger.history().neighbours()),
            CubeRef::Table(t) => self.table_neighbours(t),
        }
    }

    fn table_neighbours(&self, table: &str) -> Neighbours {
        self.entries
            .iter()
            .find(|e| e.name == table)
            .map(|e| self.ledgers.get(e.ledger).history().neighbours())
            .unwrap_or_default()
    }

    fn table_accounting(&self, table: &str) -> crate::privacy::Accounting {
        self.entries
            .iter()
            .find(|e| e.name == table)
            .map(|e| self.ledgers.get(e.ledger).history().accounting())
            .unwrap_or_default()
    }

    fn table_unit_rows(&self, table: &str) -> Decimal {
        let rows = self
            .entries
            .iter()
            .find(|e| e.name == table)
            .and_then(|e| e.unit.as_ref())
            .map_or(1, |u| u.max_rows);
        Decimal::from(rows)
    }

    fn focus(&self) -> Option<(CubeRef, usize)> {
        let teaching = self.cube.as_ref().map(|c| (CubeRef::Teaching, c.cells));
        let table = self.current.and_then(|i| {
            let e = &self.entries[i];
            let cube = e.cube.as_ref()?;
            Some((CubeRef::Table(e.name.clone()), cube.cells()))
        });
        if self.teaching_focus {
            teaching.or(table)
        } else {
            table.or(teaching)
        }
    }
}

/// Maps a ledger error to the statement's.
fn ledger_error(span: Span) -> impl Fn(LedgerError) -> EvalError {
    move |error| EvalError::Ledger { error, span }
}

/// The error of a release whose spending or answer could not be written.
fn release_error(span: Span) -> impl Fn(crate::privacy::ReleaseError) -> EvalError {
    move |e| match e {
        crate::privacy::ReleaseError::Ledger(error) => EvalError::Ledger { error, span },
        crate::privacy::ReleaseError::NotRecorded { eps, error } => {
            EvalError::AnswerNotRecorded { eps, error, span }
        }
    }
}

/// The history as dense rows of `H` with `alpha`, `S` and `y`.
fn dense_rows(cells: usize, history: &[Measurement]) -> Vec<crate::output::MeasurementRow> {
    history
        .iter()
        .map(|m| {
            let mut row = vec![0.0; cells];
            for (cell, c) in &m.row {
                row[*cell] += c;
            }
            crate::output::MeasurementRow {
                row,
                eps: m.eps,
                sensitivity: m.sensitivity,
                noisy: m.noisy,
            }
        })
        .collect()
}

fn ninety_five() -> Probability {
    Probability::new(0.95).expect("0.95 lies in (0, 1)")
}

#[cfg(not(target_arch = "wasm32"))]
fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// In a browser, whose clock the system's is not: the page's.
#[cfg(target_arch = "wasm32")]
fn now() -> u64 {
    (js_sys::Date::now() / 1000.0) as u64
}

/// The error for a table whose rows could not be read at a question.
fn source_failed(entry: &Entry, error: crate::data::DataError, span: Span) -> EvalError {
    use crate::data::DataError;
    // An analyst of a served dataset is told that its rows changed or could not be read, and
    // nothing of where they are: a reader's message names the curator's file.
    let error = match (&entry.rules, error) {
        (None, error) => error,
        (Some(_), DataError::Changed { .. }) => DataError::Changed {
            path: entry.name.clone(),
        },
        (Some(_), _) => DataError::Io {
            path: entry.name.clone(),
            message: "the curator's data does not read".to_string(),
        },
    };
    EvalError::SourceFailed {
        table: entry.name.clone(),
        error,
        span,
    }
}
