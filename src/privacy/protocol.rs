//! The release protocol: the only way to spend.
//!
//! A statement that spends opens a transaction on the data file's ledger, which takes the
//! ledger's exclusive lock and reads the lines appended since the last read. Under the lock it
//! [`Txn::prepare`]s its request: the cube it was checked against must still be the ledger's,
//! an identical earlier query is answered from its record, and the budget is checked. Only a
//! request that fits gets a [`Ticket`], and only a ticket can be [`Txn::release`]d: the
//! spending is appended durably, then the noise is drawn, then the answer is appended durably,
//! and only then returned to be shown. A statement never writes a spending any other way.
//!
//! The lock is held while a line is checked and written, not while it is flushed: a spending
//! counts against the budget from the moment its line is written, so the next transaction's
//! check sees it, and the releases that wait on the disk at the same moment share one `fsync`
//! (group commit, [`super::durable`]). Each waits for its own line before it goes on: the
//! noise is drawn only once the spending is durable, the answer shown only once it is.

use super::history::{Carry, CubeDecl, History, Overspend, Release};
use super::ledger::{Ledger, LedgerError, Lock, Written};
use super::row::Row;
use super::Mechanism;
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;

/// An open transaction on a ledger: its lock is held until the transaction is dropped.
pub struct Txn<'l> {
    ledger: &'l mut Ledger,
    lock: Lock,
}

/// What a statement asks to release.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The statement, canonical, as recorded.
    pub statement: String,
    /// What makes a later query identical to this one.
    pub key: String,
    /// Another key the same query may have been recorded under (before a cube was declared).
    pub alt_key: Option<String>,
    /// Its row over the cube's cells, sparse and exact; empty without a cube.
    pub row: Row,
    /// The cube the row is over, as declared; the ledger's must be the same.
    pub cube: Option<String>,
    /// The neighbour model its sensitivity was computed under; the ledger's must be the
    /// same (another session may have changed it while nothing was released).
    pub neighbours: super::Neighbours,
    /// The epsilon, exact.
    pub eps: Decimal,
    /// The sensitivity.
    pub sensitivity: f64,
    /// The noise.
    pub mechanism: Mechanism,
    /// What its row measures in each cell (rows, or a column's clamped values).
    pub measure: super::Measure,
    /// When, as seconds since the Unix epoch.
    pub time: u64,
}

/// What a statement asks to release as a vector at once (`HISTOGRAM`, `COUNT ... BY`): parts
/// that are indicators of disjoint cells, one noise each, one epsilon for all.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorRequest {
    /// The statement, canonical, as recorded.
    pub statement: String,
    /// What makes a later vector identical to this one.
    pub key: String,
    /// Each part's row over the cube's cells.
    pub parts: Vec<Row>,
    /// The cube the rows are over, as declared; the ledger's must be the same.
    pub cube: Option<String>,
    /// The epsilon of the whole vector, exact.
    pub eps: Decimal,
    /// The noise.
    pub mechanism: Mechanism,
    /// When, as seconds since the Unix epoch.
    pub time: u64,
}

/// A vector that fits the budget, ready to be released. Only [`Txn::prepare_vector`] makes
/// one.
#[derive(Debug)]
pub struct VectorTicket {
    first: Release,
    parts: Vec<Row>,
    sigma2: Option<(u128, u128)>,
}

impl VectorTicket {
    /// A Gaussian vector's variance parameter on every part, `S2^2 / (2 rho)`, exactly, as
    /// the ledger records and charges it.
    pub fn sigma2(&self) -> Option<(u128, u128)> {
        self.sigma2
    }

    /// The vector's sensitivity: its noise on every part has scale `sensitivity / eps`.
    pub fn sensitivity(&self) -> f64 {
        self.first.sensitivity
    }
}

/// What preparing a vector found.
#[derive(Debug)]
pub enum PreparedVector {
    /// An identical vector was answered before: its answers, at no cost.
    Recorded(Vec<f64>),
    /// The vector fits the budget.
    Fits(Box<VectorTicket>),
}

/// Requests released together that fit the budget together. Only [`Txn::prepare_together`]
/// makes one.
#[derive(Debug)]
pub struct ManyTicket {
    releases: Vec<Release>,
    sigma2: Vec<Option<(u128, u128)>>,
}

impl ManyTicket {
    /// Each Gaussian release's variance parameter `S2^2 / (2 rho)`, exactly, in order, as the
    /// ledger records and charges it: the noise is drawn with it (`None` for other noise).
    pub fn sigma2(&self) -> &[Option<(u128, u128)>] {
        &self.sigma2
    }
}

/// What preparing requests released together found.
#[derive(Debug)]
pub enum PreparedMany {
    /// All were answered before: their answers, at no cost.
    Recorded(Vec<f64>),
    /// They fit the budget together.
    Fits(ManyTicket),
}

/// An answer on record.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Recorded {
    /// Its number in the history.
    pub seq: u64,
    /// The noisy answer.
    pub noisy: f64,
}

/// A request that fits the budget, ready to be released. Only [`Txn::prepare`] makes one.
#[derive(Debug)]
pub struct Ticket {
    release: Release,
    sigma2: Option<(u128, u128)>,
}

impl Ticket {
    /// A Gaussian release's variance parameter `S2^2 / (2 rho)`, exactly, as the ledger
    /// records and charges it: the noise is drawn with it.
    pub fn sigma2(&self) -> Option<(u128, u128)> {
        self.sigma2
    }
}

/// What preparing a request found.
#[derive(Debug)]
pub enum Prepared {
    /// An identical query was answered before: its answer, at no cost.
    Recorded(Recorded),
    /// The request fits the budget.
    Fits(Box<Ticket>),
}

/// Why a request is refused. Nothing was spent, recorded or drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The cube the statement was checked against is no longer the ledger's (another process
    /// declared another).
    CubeChanged,
    /// The neighbour model the statement's sensitivity was computed under is no longer the
    /// ledger's (another process loaded the data under another before anything was released).
    ModelChanged,
    /// A Gaussian release was asked of a table that no longer accounts in zCDP (another
    /// process set its budget in epsilon before anything was released).
    AccountingChanged,
    /// The release would take a cell, or the table, past the total.
    Exceeded(Overspend),
    /// On a served dataset: the release fits the analyst's cap, but would take the dataset,
    /// which all its analysts share, past its total.
    DatasetExceeded(Overspend),
}

/// Why a release failed.
#[derive(Debug, Clone, PartialEq)]
pub enum ReleaseError {
    /// The spending could not be recorded: nothing was spent or drawn.
    Ledger(LedgerError),
    /// The spending was recorded and the noise drawn, but the answer could not be recorded:
    /// the epsilon is spent and the answer is not shown.
    NotRecorded {
        /// The epsilon spent.
        eps: Decimal,
        /// Why.
        error: LedgerError,
    },
}

impl Ledger {
    /// Begins a transaction: takes the ledger's lock and reads what other processes appended.
    pub fn begin(&mut self) -> Result<Txn<'_>, LedgerError> {
        let lock = self.lock()?;
        self.refresh(&lock)?;
        Ok(Txn { ledger: self, lock })
    }

    /// Lets the lock go, then returns once a release's spending line is durable: others may
    /// check their budgets against it (it counts as spent from the moment it is written)
    /// while it is flushed, together with theirs. If it cannot be made durable, it still
    /// counts as spent, and nothing is drawn.
    fn settle_unlocked(
        &mut self,
        lock: Lock,
        spent: Written,
        eps: Decimal,
    ) -> Result<(), ReleaseError> {
        drop(lock);
        self.settle(spent)
            .map_err(|error| ReleaseError::NotRecorded { eps, error })
    }

    /// [`Ledger::settle_unlocked`] for several spending lines, the lock already let go.
    fn settle_all(&mut self, spent: Vec<Written>, eps: Decimal) -> Result<(), ReleaseError> {
        for written in spent {
            self.settle(written)
                .map_err(|error| ReleaseError::NotRecorded { eps, error })?;
        }
        Ok(())
    }

    /// Records a release's answers once its noise is drawn: takes the lock again, reads what
    /// others appended meanwhile (the new lines chain to the file's last), writes the lines
    /// `answer` makes, lets the lock go and returns once they are durable.
    fn record<W: Settle>(
        &mut self,
        eps: Decimal,
        answer: impl FnOnce(&mut Ledger, &Lock) -> Result<W, LedgerError>,
    ) -> Result<(), ReleaseError> {
        let not_recorded = |error| ReleaseError::NotRecorded { eps, error };
        let lock = self.lock().map_err(not_recorded)?;
        self.refresh(&lock).map_err(not_recorded)?;
        let written = answer(self, &lock).map_err(not_recorded)?;
        drop(lock);
        written.settle(self).map_err(not_recorded)
    }
}

/// Lines written, to be settled.
trait Settle {
    fn settle(self, ledger: &mut Ledger) -> Result<(), LedgerError>;
}

impl Settle for Written {
    fn settle(self, ledger: &mut Ledger) -> Result<(), LedgerError> {
        ledger.settle(self)
    }
}

impl Settle for Vec<Written> {
    fn settle(self, ledger: &mut Ledger) -> Result<(), LedgerError> {
        self.into_iter().try_for_each(|w| ledger.settle(w))
    }
}

impl Txn<'_> {
    /// The ledger as just read.
    pub fn ledger(&self) -> &Ledger {
        self.ledger
    }

    /// The budget and releases as just read.
    pub fn history(&self) -> &History {
        self.ledger.history()
    }

    /// Checks a request under the lock: the cube, an identical earlier query, the budget.
    pub fn prepare(&self, request: Request) -> Result<Prepared, Refusal> {
        let history = self.history();
        if history.cube().map(|c| &c.spec) != request.cube.as_ref() {
            return Err(Refusal::CubeChanged);
        }
        if history.neighbours() != request.neighbours {
            return Err(Refusal::ModelChanged);
        }
        let earlier = history
            .find(&request.key)
            .or_else(|| request.alt_key.as_ref().and_then(|k| history.find(k)));
        if let Some(r) = earlier {
            if let Some(noisy) = r.noisy {
                return Ok(Prepared::Recorded(Recorded { seq: r.seq, noisy }));
            }
        }
        if request.mechanism == super::Mechanism::Gaussian
            && history.accounting() != super::Accounting::Zcdp
        {
            return Err(Refusal::AccountingChanged);
        }
        // The budget is checked before any noise is drawn: a refused request changes nothing.
        let charged = history.charged_row(&request.measure, &request.row);
        history
            .check_row(request.eps, request.mechanism, &charged)
            .map_err(Refusal::Exceeded)?;
        // An analyst's view: the dataset's total, shared by all its analysts, bounds them all.
        if self.ledger.is_view() {
            self.ledger
                .whole()
                .check_row(request.eps, request.mechanism, &charged)
                .map_err(Refusal::DatasetExceeded)?;
        }
        let release = Release {
            seq: self.ledger.next_seq(),
            statement: request.statement,
            key: request.key,
            row: request.row,
            eps: request.eps,
            sensitivity: request.sensitivity,
            mechanism: request.mechanism,
            noisy: None,
            time: request.time,
            part: None,
            measure: request.measure,
        };
        Ok(Prepared::Fits(Box::new(Ticket {
            sigma2: history.sigma2(&release),
            release,
        })))
    }

    /// Checks a vector under the lock: the cube, an identical earlier vector, the budget
    /// (an analyst's and the dataset's). Its sensitivity is computed here, from its parts and
    /// the ledger's model: the noise is drawn with what the ledger charges.
    pub fn prepare_vector(&self, request: VectorRequest) -> Result<PreparedVector, Refusal> {
        let history = self.history();
        if history.cube().map(|c| &c.spec) != request.cube.as_ref() {
            return Err(Refusal::CubeChanged);
        }
        if let Some(answers) = history.find_vector(&request.key, request.parts.len()) {
            return Ok(PreparedVector::Recorded(answers));
        }
        if request.mechanism == super::Mechanism::Gaussian
            && history.accounting() != super::Accounting::Zcdp
        {
            return Err(Refusal::AccountingChanged);
        }
        let s = history.vector_sensitivity(&request.parts);
        // The budget is checked before any noise is drawn: a refused request changes nothing.
        history
            .check_vector(request.eps, request.mechanism, &request.parts, s)
            .map_err(Refusal::Exceeded)?;
        if self.ledger.is_view() {
            self.ledger
                .whole()
                .check_vector(request.eps, request.mechanism, &request.parts, s)
                .map_err(Refusal::DatasetExceeded)?;
        }
        let first = Release {
            seq: self.ledger.next_seq(),
            statement: request.statement,
            key: request.key,
            row: Row::default(),
            eps: request.eps,
            sensitivity: s.to_f64().unwrap_or(f64::INFINITY),
            mechanism: request.mechanism,
            noisy: None,
            time: request.time,
            part: None,
            measure: super::Measure::Rows,
        };
        Ok(PreparedVector::Fits(Box::new(VectorTicket {
            sigma2: history.vector_sigma2(&first, &request.parts),
            first,
            parts: request.parts,
        })))
    }

    /// What the ledger's spent budget will be after a vector's release (`EXPLAIN`).
    pub fn vector_spent_after(&self, ticket: &VectorTicket) -> Decimal {
        let s = self.history().vector_sensitivity(&ticket.parts);
        self.history()
            .vector_after_bounds(ticket.first.eps, ticket.first.mechanism, &ticket.parts, s)
            .0
    }

    /// Releases a prepared vector: its spending is made durable, then `draw` gives one noisy
    /// answer per part (with noise of scale `sensitivity / eps` each), which are made durable
    /// before they are returned.
    pub fn release_vector(
        self,
        ticket: VectorTicket,
        draw: impl FnOnce() -> Vec<f64>,
    ) -> Result<Vec<f64>, ReleaseError> {
        let Txn { ledger, lock } = self;
        let (seq, eps, time) = (ticket.first.seq, ticket.first.eps, ticket.first.time);
        let spent = ledger
            .spend_vector(&lock, &ticket.first, &ticket.parts)
            .map_err(ReleaseError::Ledger)?;
        ledger.settle_unlocked(lock, spent, eps)?;
        let noisy = draw();
        if noisy.len() != ticket.parts.len() {
            return Err(ReleaseError::NotRecorded {
                eps,
                error: LedgerError::Io {
                    path: String::new(),
                    message: "a vector's answers do not match its parts".into(),
                },
            });
        }
        ledger.record(eps, |l, lock| l.answers(lock, seq, &noisy, time))?;
        Ok(noisy)
    }

    /// Checks several requests released together (the sum and the count of a `MEAN`): all
    /// recorded before, or all fitting the budget together. They share one row over the cube
    /// (or none) and measure columns' values, so each charges a positive multiple of it (or,
    /// under `replace`, every cell and pair): together they charge their summed epsilon on
    /// that row. Nothing is released unless all are.
    pub fn prepare_together(&self, requests: Vec<Request>) -> Result<PreparedMany, Refusal> {
        let history = self.history();
        let Some(first) = requests.first() else {
            return Ok(PreparedMany::Recorded(Vec::new()));
        };
        let row = first.row.clone();
        if requests
            .iter()
            .any(|r| r.row != row || !r.measure.moves_within_cells())
        {
            return Err(Refusal::CubeChanged);
        }
        if !row.is_empty() && history.cube().map(|c| &c.spec) != first.cube.as_ref() {
            return Err(Refusal::CubeChanged);
        }
        if requests
            .iter()
            .any(|r| r.neighbours != history.neighbours())
        {
            return Err(Refusal::ModelChanged);
        }
        let recorded: Option<Vec<f64>> = requests
            .iter()
            .map(|r| history.find(&r.key).and_then(|f| f.noisy))
            .collect();
        if let Some(answers) = recorded {
            return Ok(PreparedMany::Recorded(answers));
        }
        if requests
            .iter()
            .any(|r| r.mechanism == super::Mechanism::Gaussian)
            && history.accounting() != super::Accounting::Zcdp
        {
            return Err(Refusal::AccountingChanged);
        }
        let total = requests
            .iter()
            .fold(Decimal::ZERO, |a, r| super::decimal::add_up(a, r.eps));
        let charged = history.charged_row(&first.measure, &row);
        history
            .check_row(total, first.mechanism, &charged)
            .map_err(Refusal::Exceeded)?;
        if self.ledger.is_view() {
            self.ledger
                .whole()
                .check_row(total, first.mechanism, &charged)
                .map_err(Refusal::DatasetExceeded)?;
        }
        let first = self.ledger.next_seq();
        let releases: Vec<Release> = requests
            .into_iter()
            .enumerate()
            .map(|(i, r)| Release {
                seq: first + i as u64,
                statement: r.statement,
                key: r.key,
                row: r.row,
                eps: r.eps,
                sensitivity: r.sensitivity,
                mechanism: r.mechanism,
                noisy: None,
                time: r.time,
                part: None,
                measure: r.measure,
            })
            .collect();
        let sigma2 = releases.iter().map(|r| history.sigma2(r)).collect();
        Ok(PreparedMany::Fits(ManyTicket { releases, sigma2 }))
    }

    /// Releases requests prepared together: every spending is made durable, then `draw`
    /// gives their answers, which are made durable before they are returned.
    pub fn release_many(
        self,
        ticket: ManyTicket,
        draw: impl FnOnce() -> Vec<f64>,
    ) -> Result<Vec<f64>, ReleaseError> {
        let Txn { ledger, lock } = self;
        let eps = ticket
            .releases
            .iter()
            .fold(Decimal::ZERO, |a, r| super::decimal::add_up(a, r.eps));
        let mut spent = Vec::with_capacity(ticket.releases.len());
        for r in &ticket.releases {
            match ledger.spend(&lock, r) {
                Ok(written) => spent.push(written),
                // The spendings written before it stand (the budget counts them); nothing
                // is drawn.
                Err(error) if !spent.is_empty() => {
                    drop(lock);
                    ledger.settle_all(spent, eps)?;
                    return Err(ReleaseError::NotRecorded { eps, error });
                }
                Err(error) => return Err(ReleaseError::Ledger(error)),
            }
        }
        drop(lock);
        ledger.settle_all(spent, eps)?;
        let noisy = draw();
        ledger.record(eps, |l, lock| {
            let mut answered = Vec::with_capacity(noisy.len());
            for (r, &v) in ticket.releases.iter().zip(&noisy) {
                answered.push(l.answer(lock, r.seq, v, r.time)?);
            }
            Ok(answered)
        })?;
        Ok(noisy)
    }

    /// What the ledger's spent budget will be after the release of `ticket` (`EXPLAIN` shows
    /// it; a release itself needs only the check [`Txn::prepare`] made).
    pub fn spent_after(&self, ticket: &Ticket) -> Decimal {
        self.history().spent_after(
            ticket.release.eps,
            ticket.release.mechanism,
            &ticket.release.row,
        )
    }

    /// Releases a prepared request: the spending is made durable, then `draw` gives the noisy
    /// answer, which is made durable before it is returned.
    pub fn release(
        self,
        ticket: Ticket,
        draw: impl FnOnce() -> f64,
    ) -> Result<Recorded, ReleaseError> {
        let Txn { ledger, lock } = self;
        let seq = ticket.release.seq;
        let eps = ticket.release.eps;
        let time = ticket.release.time;
        let spent = ledger
            .spend(&lock, &ticket.release)
            .map_err(ReleaseError::Ledger)?;
        ledger.settle_unlocked(lock, spent, eps)?;
        let noisy = draw();
        ledger.record(eps, |l, lock| l.answer(lock, seq, noisy, time))?;
        Ok(Recorded { seq, noisy })
    }

    /// Records a new total budget, which may not be below what is spent, and how it
    /// composes (which may change only before any release).
    pub fn set_total(
        &mut self,
        total: Decimal,
        accounting: super::Accounting,
        time: u64,
    ) -> Result<(), LedgerError> {
        self.ledger.set_total(&self.lock, total, accounting, time)
    }

    /// Records the cube declared on the data file; `carry` says how the releases made over
    /// the cube declared before (if any has a row) carry over to it.
    pub fn declare_cube(
        &mut self,
        cube: &CubeDecl,
        carry: Option<&Carry>,
        time: u64,
    ) -> Result<(), LedgerError> {
        self.ledger.declare_cube(&self.lock, cube, carry, time)
    }

    /// Records how neighbouring tables differ; refused once anything was released.
    pub fn set_neighbours(
        &mut self,
        neighbours: super::Neighbours,
        time: u64,
    ) -> Result<(), LedgerError> {
        self.ledger.set_neighbours(&self.lock, neighbours, time)
    }

    /// Records the privacy unit; refused once anything was released, or under `replace`.
    pub fn set_unit(&mut self, unit: &super::Unit, time: u64) -> Result<(), LedgerError> {
        self.ledger.set_unit(&self.lock, unit, time)
    }

    /// Records that a seeded release exposed the data, before that release is drawn.
    pub fn expose(&mut self, time: u64) -> Result<(), LedgerError> {
        self.ledger.expose(&self.lock, time)
    }

    /// Records that the data, with the content of `fingerprint`, was loaded from the path of
    /// keyed hash `path`.
    pub(super) fn add_content(
        &mut self,
        fingerprint: &str,
        path: &str,
        time: u64,
    ) -> Result<(), LedgerError> {
        self.ledger.add_content(&self.lock, fingerprint, path, time)
    }
}
