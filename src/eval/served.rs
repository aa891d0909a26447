//! Served datasets: tables a curator's policy attaches to a session, and the rules that an
//! analyst's session runs under (`dpq serve`).
//!
//! An analyst holds neither the data nor the state: their session cannot `LOAD`, `SET
//! BUDGET`, `SET SEED`, declare a cube or write a chart, and each dataset allows the statement
//! families, mechanisms and epsilon per query its policy names. The analyst's releases are
//! charged to their own view of the dataset's ledger (their cap, their history, their
//! identical queries) and to the dataset's total, which bounds all its analysts together.

use super::{tables, Entry, Session};
use crate::error::EvalError;
use crate::output::Output;
use crate::plan::{CubeRef, Plan, Spend};
use crate::privacy::{Fresh, History, Mechanism, Neighbours, OpenError};
use crate::span::Span;
use rust_decimal::Decimal;
use std::path::PathBuf;
use std::sync::Arc;

/// The families of statements a policy may allow on a dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// `COUNT WHERE ... WITH EPS e`: one count.
    Count,
    /// Linear queries: sums and differences of counts.
    Linear,
    /// `COUNT ... WITHIN w AT c`: answers from the history or at the least epsilon.
    Within,
    /// `HISTOGRAM` and `COUNT ... BY`: every cell or group of the cube at once.
    Histogram,
    /// `SUM` and `MEAN` of a clamped column.
    Sum,
    /// `SHARE`, `MIN`, `MEDIAN` and `MAX`, with Laplace or smooth noise.
    Statistic,
    /// `ESTIMATE` from the history (free).
    Estimate,
    /// `PROB` from the history (free).
    Prob,
    /// `EXPLAIN` (free; only of allowed statements).
    Explain,
    /// `SHOW HISTORY` (the analyst's own).
    History,
    /// The estimator lab and teaching cubes, which touch no data.
    Lab,
}

impl Family {
    /// Every family, as policies name them.
    pub const ALL: [(&'static str, Family); 11] = [
        ("count", Family::Count),
        ("linear", Family::Linear),
        ("within", Family::Within),
        ("histogram", Family::Histogram),
        ("sum", Family::Sum),
        ("statistic", Family::Statistic),
        ("estimate", Family::Estimate),
        ("prob", Family::Prob),
        ("explain", Family::Explain),
        ("history", Family::History),
        ("lab", Family::Lab),
    ];

    /// The family named `name` in a policy.
    pub fn from_name(name: &str) -> Option<Family> {
        Self::ALL
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, f)| *f)
    }

    /// Its name in a policy.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, f)| *f == self)
            .map_or("", |(n, _)| n)
    }
}

/// What an analyst may do with one dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct Rules {
    /// The statement families allowed.
    pub families: Vec<Family>,
    /// The mechanisms allowed.
    pub mechanisms: Vec<Mechanism>,
    /// The largest epsilon one statement may spend.
    pub max_eps: Option<Decimal>,
    /// Whether the analyst sees the dataset's budget (shared by all analysts) as well as their
    /// own.
    pub show_dataset_budget: bool,
}

/// What bounds one analyst's work and what they make the server store, whatever the
/// dataset: set by the server's policy (`[limits]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quotas {
    /// The most `SIMULATE` runs one statement may ask for, over all its points.
    pub max_simulate_runs: u64,
    /// The most releases an analyst may make on one dataset (each is a ledger line).
    pub max_releases: usize,
    /// The longest statement, in bytes.
    pub max_statement_bytes: usize,
}

impl Default for Quotas {
    fn default() -> Self {
        Quotas {
            max_simulate_runs: 1_000_000,
            max_releases: 10_000,
            max_statement_bytes: 4096,
        }
    }
}

/// A dataset of a curator's policy, as a session attaches it.
pub struct ServedTable {
    /// The name analysts `USE`.
    pub name: String,
    /// Its identity, as the curator assigned it: it names the ledger.
    pub id: String,
    /// The data, loaded once and shared by every analyst's session.
    pub table: Arc<crate::data::Source>,
    /// The plain hash of the bytes the data was read from (never stored or shown).
    pub content: [u8; 32],
    /// Whether the file's first row names the columns.
    pub header: bool,
    /// The delimiter and decimal mark its CSV file was read with (the default for other
    /// sources).
    pub format: crate::data::CsvFormat,
    /// How neighbouring tables differ.
    pub neighbours: Neighbours,
    /// The privacy unit its rows were bounded with (the policy's).
    pub unit: Option<crate::privacy::Unit>,
    /// The declared schema's columns (empty when types are inferred): their public domains.
    pub declared: Vec<crate::data::Declared>,
    /// The dataset's total budget, for a new ledger.
    pub total: Decimal,
    /// The analyst whose view this is, and their cap; `None` for the curator.
    pub analyst: Option<(String, Decimal)>,
    /// What the analyst may do; `None` for the curator.
    pub rules: Option<Rules>,
}

impl ServedTable {
    /// The label that names the dataset's ledger.
    pub fn label(id: &str) -> String {
        format!("dpq-dataset:{id}")
    }
}

impl Session {
    /// Attaches a served dataset: opens its ledger by the dataset's identity (as the analyst's
    /// view when one is named), checks the data against what the ledger declares, restores
    /// the cube, and makes it current. The curator's session attaches every dataset first.
    pub fn attach(&mut self, served: ServedTable) -> Result<Output, EvalError> {
        let span = Span::new(0, 0);
        let name = served.name.clone();
        if self.entries.iter().any(|e| e.name == name) {
            return Err(EvalError::TableExists { name, span });
        }
        let fresh = Fresh {
            total: served.total,
            neighbours: Some(served.neighbours),
            unit: served.unit.clone(),
            time: (self.clock)(),
        };
        let table = served.table;
        let mut cube = None;
        let view = served.analyst.as_ref().map(|(a, cap)| (a.as_str(), *cap));
        let accept = |h: &History| {
            // The policy's unit is the one the rows were bounded with: a ledger with releases
            // under another (or none) is refused, and one without a unit takes the policy's.
            if served.unit.is_none() && h.releases().is_empty() {
                if let Some(recorded) = h.unit() {
                    return Err(EvalError::UnitRecorded {
                        table: name.clone(),
                        current: crate::output::unit_clause(recorded),
                        span,
                    });
                }
            }
            if served.unit.as_ref() != h.unit() && !h.releases().is_empty() {
                return Err(EvalError::UnitFixed {
                    table: name.clone(),
                    current: crate::output::unit_text(h.unit()),
                    span,
                });
            }
            tables::accept(
                h,
                &table,
                &name,
                (served.header, served.format.clauses()),
                Some(served.neighbours),
                &mut cube,
                span,
            )
        };
        let opened = self
            .ledgers
            .open_served(
                &ServedTable::label(&served.id),
                view,
                &served.content,
                fresh,
                accept,
            )
            .map_err(|e| match e {
                OpenError::Ledger(error) => EvalError::Ledger { error, span },
                OpenError::Refused(e) => e,
            })?;
        self.entries.push(Entry {
            name,
            path: format!("dataset {}", served.id),
            data_file: PathBuf::new(),
            file_id: None,
            table,
            ledger: opened.ledger,
            private: None,
            fingerprint: opened.fingerprint,
            content: tables::hex(&served.content),
            changed: opened.changed,
            header: served.header,
            format: served.format,
            // A dataset's ledger is its own: one reading, one schema.
            schema: String::new(),
            unit: served.unit.clone(),
            declared: served.declared.clone(),
            cube,
            rules: served.rules,
            asked: Default::default(),
            values: Default::default(),
        });
        let i = self.entries.len() - 1;
        self.current = Some(i);
        let mut info = self.info(i);
        info.warnings = opened.warnings;
        Ok(Output::Loaded(info))
    }

    /// Makes this an analyst's session: nothing but served datasets, under their rules and
    /// these quotas.
    pub fn serve_analyst(&mut self, quotas: Quotas) {
        self.analyst = Some(quotas);
    }

    /// Whether this is an analyst's session of a served dataset.
    pub fn is_analyst(&self) -> bool {
        self.analyst.is_some()
    }

    /// The most releases the analyst may make on one dataset, in an analyst's session.
    pub(super) fn max_releases(&self) -> Option<usize> {
        self.analyst.map(|q| q.max_releases)
    }

    /// Refuses, before anything is done, what an analyst's session may not do.
    pub(super) fn permit(&self, plan: &Plan, span: Span) -> Result<(), EvalError> {
        let Some(quotas) = self.analyst else {
            return Ok(());
        };
        let refuse = |what: &str| {
            Err(EvalError::NotPermitted {
                what: what.to_string(),
                span,
            })
        };
        if span.end.saturating_sub(span.start) > quotas.max_statement_bytes {
            return refuse(&format!(
                "a statement of more than {} bytes",
                quotas.max_statement_bytes
            ));
        }
        match plan {
            Plan::Load { .. } => refuse("LOAD: the curator's policy names the datasets"),
            Plan::SetBudget { .. } => refuse("SET BUDGET: the curator's policy sets the budgets"),
            Plan::SetSeed { .. } => refuse("SET SEED: a seeded answer is as good as a true count"),
            Plan::CubeBy { .. } => refuse("CUBE BY: the curator's policy declares the cubes"),
            Plan::Use { .. }
            | Plan::SetDelta { .. }
            | Plan::ShowTables
            | Plan::Describe { .. }
            | Plan::ShowBudget { .. }
            | Plan::ChooseEps(_)
            | Plan::ChooseRho(_) => Ok(()),
            Plan::ShowHistory { table } => self.allowed(table, Family::History, span),
            Plan::Count(c) => {
                let family = match c.spend {
                    Spend::Within { .. } => Family::Within,
                    Spend::Eps(_) if c.single().is_some() => Family::Count,
                    Spend::Eps(_) => Family::Linear,
                };
                self.permit_release(&c.table, family, c.mechanism, c.plot.is_some(), span)
            }
            Plan::Histogram(h) => {
                let plot = h.plot.is_some();
                self.permit_release(&h.table, Family::Histogram, h.mechanism, plot, span)
            }
            Plan::Sum(q) => self.permit_release(&q.table, Family::Sum, q.mechanism, false, span),
            Plan::Statistic(q) => {
                let mechanism = match q.noise {
                    crate::plan::StatNoise::Laplace => Mechanism::Laplace,
                    crate::plan::StatNoise::Smooth { .. } => Mechanism::Smooth,
                };
                self.permit_release(&q.table, Family::Statistic, mechanism, false, span)
            }
            Plan::Explain { plan, .. } => {
                match plan_table(plan) {
                    Some(table) => self.allowed(table, Family::Explain, span)?,
                    None => self.allowed_anywhere(Family::Explain, span)?,
                }
                self.permit(plan, span)
            }
            Plan::Estimate { target, .. } => self.allowed_on(target, Family::Estimate, span),
            Plan::Binned(b) => self.allowed(&b.table, Family::Estimate, span),
            Plan::Prob { target, .. } => self.allowed_on(target, Family::Prob, span),
            Plan::ShowCube { target } => self.allowed_on(target, Family::Estimate, span),
            Plan::Simulate(p) if p.plot.is_some() => {
                refuse("PLOT: charts are not written on the server")
            }
            Plan::Simulate(p)
                if p.runs.saturating_mul(p.points().len() as u64) > quotas.max_simulate_runs =>
            {
                refuse(&format!(
                    "SIMULATE of more than {} runs in all (RUNS times the points)",
                    quotas.max_simulate_runs
                ))
            }
            Plan::Simulate(_)
            | Plan::OutOfRange { .. }
            | Plan::CompareNoise { .. }
            | Plan::CompareAccounting { .. }
            | Plan::CompareSmooth(_)
            | Plan::Cube { .. }
            | Plan::Observe { .. } => self.allowed_anywhere(Family::Lab, span),
        }
    }

    /// A releasing statement of `family` on `table` with `mechanism`: allowed by the table's
    /// policy, and writing no chart.
    fn permit_release(
        &self,
        table: &str,
        family: Family,
        mechanism: Mechanism,
        plot: bool,
        span: Span,
    ) -> Result<(), EvalError> {
        self.allowed(table, family, span)?;
        let refuse = |what: String| Err(EvalError::NotPermitted { what, span });
        if plot {
            return refuse("PLOT: charts are not written on the server".into());
        }
        if let Some(r) = self
            .rules(table)
            .filter(|r| !r.mechanisms.contains(&mechanism))
        {
            // WITHIN on a zCDP dataset is Gaussian unless a MECHANISM says otherwise.
            let instead = if family == Family::Within && mechanism == Mechanism::Gaussian {
                let allowed: Vec<String> = r.mechanisms.iter().map(|m| m.to_string()).collect();
                format!(
                    " (WITHIN on a zCDP dataset draws Gaussian noise; add MECHANISM {} to ask with another)",
                    allowed.join(" or MECHANISM ")
                )
            } else {
                String::new()
            };
            return refuse(format!(
                "MECHANISM {mechanism}: the policy of `{table}` does not allow it{instead}"
            ));
        }
        Ok(())
    }

    /// The largest epsilon one statement of an analyst may spend on `table`, if capped.
    pub(super) fn max_eps(&self, table: &str) -> Option<Decimal> {
        self.rules(table)
            .and_then(|r| r.max_eps)
            .filter(|_| self.analyst.is_some())
    }

    fn rules(&self, table: &str) -> Option<&Rules> {
        self.entries
            .iter()
            .find(|e| e.name == table)
            .and_then(|e| e.rules.as_ref())
    }

    fn allowed(&self, table: &str, family: Family, span: Span) -> Result<(), EvalError> {
        match self.rules(table) {
            Some(r) if !r.families.contains(&family) => Err(EvalError::NotPermitted {
                what: format!(
                    "{} statements: the policy of `{table}` does not allow them",
                    family.name()
                ),
                span,
            }),
            _ => Ok(()),
        }
    }

    fn allowed_on(&self, target: &CubeRef, family: Family, span: Span) -> Result<(), EvalError> {
        match target {
            CubeRef::Table(t) => self.allowed(t, family, span),
            CubeRef::Teaching => self.allowed_anywhere(Family::Lab, span),
        }
    }

    /// A family that touches no dataset: allowed when some dataset of the analyst allows it.
    fn allowed_anywhere(&self, family: Family, span: Span) -> Result<(), EvalError> {
        let any = self.entries.iter().any(|e| {
            e.rules
                .as_ref()
                .is_none_or(|r| r.families.contains(&family))
        });
        if any {
            Ok(())
        } else {
            Err(EvalError::NotPermitted {
                what: format!("{} statements: no policy allows them", family.name()),
                span,
            })
        }
    }

    /// The budget a served dataset's analysts share: total, spent and remaining, when the
    /// policy shows it.
    pub(super) fn dataset_budget(&self, i: usize) -> Option<crate::output::Budget> {
        let e = &self.entries[i];
        let ledger = self.ledgers.get(e.ledger);
        let shown = e.rules.as_ref().is_some_and(|r| r.show_dataset_budget);
        (ledger.is_view() && shown).then(|| {
            let whole = ledger.whole();
            crate::output::Budget {
                total: whole.total(),
                spent: whole.spent(),
                remaining: whole.remaining(),
            }
        })
    }

    /// Sets a served dataset's total and accounting as its policy says, the total never below
    /// what is spent and the accounting changed only while nothing is released (the curator's
    /// session, at start). Returns the total in force.
    pub fn set_dataset_total(
        &mut self,
        name: &str,
        total: Decimal,
        accounting: crate::privacy::Accounting,
    ) -> Result<Decimal, EvalError> {
        let span = Span::new(0, 0);
        let Some(i) = self.entries.iter().position(|e| e.name == name) else {
            return Err(EvalError::NotPermitted {
                what: format!("no dataset `{name}`"),
                span,
            });
        };
        let time = (self.clock)();
        let mut txn = self
            .ledgers
            .get_mut(self.entries[i].ledger)
            .begin()
            .map_err(super::ledger_error(span))?;
        let history = txn.history();
        if accounting != history.accounting() && !history.releases().is_empty() {
            return Err(EvalError::AccountingFixed {
                table: name.to_string(),
                accounting: history.accounting().unit(),
                span,
            });
        }
        let total = if accounting == history.accounting() {
            total.max(history.spent())
        } else {
            total
        };
        if history.total() != total || accounting != history.accounting() {
            txn.set_total(total, accounting, time)
                .map_err(super::ledger_error(span))?;
        }
        Ok(total)
    }

    /// Declares a served dataset's cube as its policy says (`BY age (30, 65)`), through the
    /// same statement as at the prompt; nothing when the ledger already declares it.
    pub fn declare_dataset_cube(
        &mut self,
        name: &str,
        spec: &str,
    ) -> Result<(), crate::error::Error> {
        let i = self.index(name);
        self.current = Some(i);
        let source = format!("CUBE {spec}");
        let stmt = crate::syntax::parse_statement_at(&source, Span::new(0, source.len()))?;
        self.execute(&stmt).map(|_| ())
    }
}

/// Refuses an epsilon above a dataset's cap per statement (checked once the epsilon is
/// known, `WITHIN` included, before anything is spent).
pub(super) fn permit_eps(
    max: Option<Decimal>,
    table: &str,
    eps: Decimal,
    span: Span,
) -> Result<(), EvalError> {
    match max {
        Some(max) if eps > max => Err(EvalError::NotPermitted {
            what: format!(
                "epsilon {} in one statement: the policy of `{table}` allows at most {} per query",
                eps.normalize(),
                max.normalize()
            ),
            span,
        }),
        _ => Ok(()),
    }
}

/// Refuses a new release once an analyst has made `max` on the dataset: each is a ledger line
/// the server keeps. Repeated queries and estimates stay free.
pub(super) fn permit_release(
    max: Option<usize>,
    history: &History,
    table: &str,
    span: Span,
) -> Result<(), EvalError> {
    // A vector (a histogram, a count by groups) is one release however many parts it has.
    let releases = || {
        history
            .releases()
            .iter()
            .filter(|r| r.part.is_none_or(|(i, _)| i == 0))
            .count()
    };
    match max {
        Some(max) if releases() >= max => Err(EvalError::NotPermitted {
            what: format!(
                "more than {max} releases on `{table}` for one analyst (the server's quota); repeated queries and ESTIMATE stay free"
            ),
            span,
        }),
        _ => Ok(()),
    }
}

/// The table a plan speaks of, if it speaks of one.
fn plan_table(plan: &Plan) -> Option<&str> {
    match plan {
        Plan::Count(c) => Some(&c.table),
        Plan::Histogram(h) => Some(&h.table),
        Plan::Sum(q) => Some(&q.table),
        Plan::Statistic(q) => Some(&q.table),
        Plan::Estimate {
            target: CubeRef::Table(t),
            ..
        }
        | Plan::Prob {
            target: CubeRef::Table(t),
            ..
        } => Some(t),
        _ => None,
    }
}
