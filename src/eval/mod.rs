//! The session: loaded tables, their budgets and histories, the random generator, and statement execution.

mod history;

pub use history::{History, Release};

use crate::ast::Statement;
use crate::check::{self, Catalog};
use crate::data::{self, LoadOptions, Table};
use crate::error::{Error, EvalError};
use crate::ledger::{self, Ledger, Store};
use crate::output::{
    BudgetReport, ChooseEpsResult, CountResult, HistoryReport, Output, ReleaseRow, Response,
    SpendLine, TableInfo,
};
use crate::output::{CubeReport, EstimateResult, MeasurementRow, ProbResult};
use crate::plan::{ChoosePlan, CountPlan, Event, Mechanism, Plan};
use crate::span::Span;
use crate::stats::blue::{self, Measurement};
use crate::stats::exact;
use crate::stats::noise;
use crate::stats::{accuracy, bayes, laplace, Epsilon, Probability};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;
use std::path::PathBuf;
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

/// A loaded table under a name. Tables loaded from the same file share one history, so
/// loading a file again under another name neither resets its budget nor buys fresh noise.
struct Entry {
    name: String,
    path: String,
    table: Table,
    file: usize,
    /// The fingerprint of the content this table was loaded from: answers are recorded and
    /// reused for this content only.
    fingerprint: String,
}

/// The budget and releases of one data file (by its canonical path), kept in its ledger.
struct FileState {
    key: PathBuf,
    ledger: Ledger,
    /// Whether the file's content differs from what its ledger last saw.
    changed: bool,
}

/// An interpreter session: tables loaded so far, the current one, and the generator.
pub struct Session {
    entries: Vec<Entry>,
    files: Vec<FileState>,
    current: Option<usize>,
    /// Whether any noise has been drawn: after that the generator may not be reseeded.
    drawn: bool,
    rng: ChaCha20Rng,
    seed: Option<u64>,
    load_options: LoadOptions,
    clock: fn() -> u64,
    store: Store,
    cube: Option<TeachingCube>,
}

/// Anonymous cells with no data (`CUBE n`) and the measurements entered by hand.
struct TeachingCube {
    cells: usize,
    history: Vec<Measurement>,
    total: Decimal,
}

impl Default for Session {
    fn default() -> Self {
        Self::new(Randomness::Os)
    }
}

impl Session {
    /// A session with no tables whose spending lasts only as long as it does (library use and
    /// tests); the `dpq` binary uses [`Session::with_store`] with a state directory.
    pub fn new(randomness: Randomness) -> Self {
        Self::with_store(randomness, Store::Memory)
    }

    /// A session keeping every data file's spending in a ledger of `store`.
    pub fn with_store(randomness: Randomness, store: Store) -> Self {
        let (rng, seed) = match randomness {
            Randomness::Os => (ChaCha20Rng::from_os_rng(), None),
            Randomness::Seeded(s) => (ChaCha20Rng::seed_from_u64(s), Some(s)),
        };
        Self {
            entries: Vec::new(),
            files: Vec::new(),
            current: None,
            drawn: false,
            rng,
            seed,
            load_options: LoadOptions::default(),
            clock: now,
            store,
            cube: None,
        }
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
        let output = self.run(plan, stmt.span)?;
        Ok(Response {
            output,
            seed: self.seed,
        })
    }

    fn run(&mut self, plan: Plan, span: Span) -> Result<Output, EvalError> {
        Ok(match plan {
            Plan::Load {
                path,
                path_span,
                name,
            } => {
                if self.entries.iter().any(|e| e.name == name) {
                    return Err(EvalError::TableExists { name, span });
                }
                let path_text = path.display().to_string();
                let table =
                    data::load_csv(&path, &self.load_options).map_err(|error| EvalError::Load {
                        path: path_text.clone(),
                        error,
                        span: path_span,
                    })?;
                let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
                let fingerprint = ledger::fingerprint(&key).map_err(|e| EvalError::Load {
                    path: path_text.clone(),
                    error: data::DataError::Io {
                        path: path_text.clone(),
                        message: e.to_string(),
                    },
                    span: path_span,
                })?;
                let (opened, changed) =
                    Ledger::open(&self.store, &key, &fingerprint, DEFAULT_BUDGET)
                        .map_err(|error| EvalError::Ledger { error, span })?;
                let file = match self.files.iter().position(|f| f.key == key) {
                    Some(i) => {
                        self.files[i].ledger = opened;
                        self.files[i].changed |= changed;
                        i
                    }
                    None => {
                        self.files.push(FileState {
                            key,
                            ledger: opened,
                            changed,
                        });
                        self.files.len() - 1
                    }
                };
                self.entries.push(Entry {
                    name,
                    path: path_text,
                    table,
                    file,
                    fingerprint,
                });
                self.current = Some(self.entries.len() - 1);
                Output::Loaded(self.info(self.entries.len() - 1))
            }
            Plan::Use { table } => {
                let i = self.index(&table);
                self.current = Some(i);
                Output::Using(self.info(i))
            }
            Plan::ShowTables => {
                Output::Tables((0..self.entries.len()).map(|i| self.info(i)).collect())
            }
            Plan::Describe { table } => Output::Described(self.info(self.index(&table))),
            Plan::ShowBudget { table } => {
                let i = self.index(&table);
                self.refresh(i, span)?;
                Output::Budget(self.budget(i))
            }
            Plan::ShowHistory { table } => {
                let i = self.index(&table);
                self.refresh(i, span)?;
                Output::History(self.history(i))
            }
            Plan::SetBudget { table, total } => {
                let i = self.index(&table);
                let ledger = &mut self.files[self.entries[i].file].ledger;
                let err = |error| EvalError::Ledger { error, span };
                let lock = ledger.lock().map_err(err)?;
                ledger.reload(&lock).map_err(err)?;
                let spent = ledger.history().spent();
                if total < spent {
                    return Err(EvalError::BudgetBelowSpent {
                        table,
                        total,
                        spent,
                        span,
                    });
                }
                ledger.set_total(&lock, total).map_err(err)?;
                drop(lock);
                Output::Budget(self.budget(i))
            }
            Plan::SetSeed { seed } => {
                // Reseeding after noise was drawn would let two queries share their noise, and
                // the difference of their answers would be the difference of their true counts.
                if self.drawn {
                    return Err(EvalError::SeedAfterNoise { span });
                }
                self.rng = ChaCha20Rng::seed_from_u64(seed);
                self.seed = Some(seed);
                Output::SeedSet { seed }
            }
            Plan::Count(plan) => Output::Count(self.count(plan, span)?),
            Plan::ChooseEps(plan) => Output::ChooseEps(choose_eps(plan, span)?),
            Plan::Cube { cells } => {
                if self.cube.as_ref().is_some_and(|c| !c.history.is_empty()) {
                    return Err(EvalError::CubeInUse { span });
                }
                self.cube = Some(TeachingCube {
                    cells,
                    history: Vec::new(),
                    total: DEFAULT_BUDGET,
                });
                Output::Cube(self.cube_report()?)
            }
            Plan::ShowCube => {
                let mut report = self.cube_report()?;
                let cube = self.cube.as_ref().expect("the checker found a cube");
                report.history = Some(
                    cube.history
                        .iter()
                        .map(|m| {
                            let mut row = vec![0.0; cube.cells];
                            for (cell, c) in &m.row {
                                row[*cell] += c;
                            }
                            MeasurementRow {
                                row,
                                eps: m.eps,
                                sensitivity: m.sensitivity,
                                noisy: m.noisy,
                            }
                        })
                        .collect(),
                );
                Output::Cube(report)
            }
            Plan::Observe {
                measurement,
                eps_exact: _,
            } => {
                let cube = self.cube.as_mut().expect("the checker found a cube");
                let mut trial = cube.history.clone();
                trial.push(measurement);
                // Section 5.4: each cell's budget B = (alpha ./ S)' |H|, checked before recording.
                let budgets = blue::cell_budgets(cube.cells, &trial).map_err(|e| {
                    EvalError::NotEstimable {
                        cells: e.to_string(),
                        span,
                    }
                })?;
                let limit = cube.total.to_f64().unwrap_or(f64::INFINITY) * (1.0 + 1e-12);
                if let Some((cell, after)) = budgets.iter().enumerate().find(|(_, b)| **b > limit) {
                    return Err(EvalError::CellBudgetExceeded {
                        cell: cell + 1,
                        after: *after,
                        total: cube.total,
                        span,
                    });
                }
                cube.history = trial;
                Output::Cube(self.cube_report()?)
            }
            Plan::Estimate { query } => {
                let (estimate, posterior) = self.posterior(&query, span)?;
                let credible95 = posterior.credible_interval(ninety_five());
                Output::Estimate(EstimateResult {
                    query,
                    estimate: estimate.value,
                    variance: estimate.variance,
                    credible95,
                    method: match posterior.noise.method() {
                        exact::Method::Fft { .. } => "fft".into(),
                        exact::Method::MonteCarlo { .. } => "monte carlo".into(),
                        exact::Method::Degenerate => "exact (no noise)".into(),
                    },
                    error_bound: posterior.error_bound(),
                })
            }
            Plan::Prob { query, event } => {
                let (_, posterior) = self.posterior(&query, span)?;
                let (probability, event) = match event {
                    Event::Greater(x) => (posterior.prob_greater(x), format!("> {x}")),
                    Event::Less(x) => (posterior.prob_less(x), format!("< {x}")),
                    Event::Between(a, b) => {
                        (posterior.prob_between(a, b), format!("between {a} and {b}"))
                    }
                };
                Output::Prob(ProbResult {
                    query,
                    event,
                    probability,
                    error_bound: posterior.error_bound(),
                })
            }
        })
    }

    fn count(&mut self, plan: CountPlan, span: Span) -> Result<CountResult, EvalError> {
        let i = self.index(&plan.table);
        let entry = &self.entries[i];
        let file = &mut self.files[entry.file];
        let n = entry.table.n_rows();
        let eps_exact = plan.eps_noise;
        let err = |error| EvalError::Ledger { error, span };
        // The lock is held from the budget check to the recorded answer: no other process
        // can spend in between, and the ledger is re-read under it.
        let lock = file.ledger.lock().map_err(err)?;
        file.ledger.reload(&lock).map_err(err)?;
        // Answers are reused only for the data they were computed on, and a seeded answer
        // (reproducible, so not private) only by a session with the same seed.
        let source = match self.seed {
            Some(seed) => format!("seed {seed}"),
            None => "private".to_string(),
        };
        let key = format!("{}|{source}|{}", entry.fingerprint, plan.key);
        let earlier = file.ledger.history().find(&key).and_then(|r| r.noisy);
        let (noisy, from_history) = match earlier {
            Some(noisy) => (noisy, true),
            None => {
                let history = file.ledger.history();
                // The budget is checked before any noise is drawn: a refused query changes nothing.
                if !history.can_spend(plan.eps_exact) {
                    return Err(EvalError::BudgetExceeded {
                        table: plan.table,
                        requested: plan.eps_exact,
                        remaining: history.remaining(),
                        total: history.total(),
                        span,
                    });
                }
                let seq = history.next_seq();
                // The spending is durable before the noise is drawn.
                file.ledger
                    .spend(
                        &lock,
                        &Release {
                            seq,
                            statement: plan.statement.clone(),
                            key: key.clone(),
                            row: Vec::new(),
                            eps: plan.eps_exact,
                            sensitivity: 1.0,
                            mechanism: plan.mechanism,
                            noisy: None,
                            time: (self.clock)(),
                        },
                    )
                    .map_err(err)?;
                self.drawn = true;
                let mut seeded;
                let rng: &mut ChaCha20Rng = match self.seed {
                    Some(seed) => {
                        seeded = release_rng(seed, &key);
                        &mut seeded
                    }
                    None => &mut self.rng,
                };
                let truth =
                    i64::try_from(data::count(&entry.table, &plan.predicate)).unwrap_or(i64::MAX);
                let noisy = match plan.mechanism {
                    // Paper 1, section 2: the Laplace mechanism, noise of scale Δf/ε with Δf = 1,
                    // drawn exactly as discrete Laplace steps of a 2^-k grid: eps-DP with no
                    // extra cost for a count (see stats::noise::GridLaplace).
                    Mechanism::Laplace => noise::laplace_count(rng, truth, eps_exact).value(),
                    // P(z) = (1-a)/(1+a) a^|z|, a = e^-eps, exactly.
                    Mechanism::Geometric => {
                        (i128::from(truth) + noise::geometric(rng, eps_exact)) as f64
                    }
                };
                // The answer is durable before it is shown.
                file.ledger.release(&lock, seq, noisy).map_err(|error| {
                    EvalError::AnswerNotRecorded {
                        eps: plan.eps_exact,
                        error,
                        span,
                    }
                })?;
                (noisy, false)
            }
        };
        drop(lock);
        let history = file.ledger.history();
        let eps = plan.eps;
        let half = match plan.mechanism {
            Mechanism::Laplace => laplace::interval_half_width(eps, ninety_five()),
            Mechanism::Geometric => accuracy::geometric_half_width(eps, ninety_five()) as f64,
        };
        let posterior = plan
            .prior
            .map(|p| bayes::posterior(n, p, eps, noisy, ninety_five()));
        let out_of_range = (noisy < 0.0 || noisy > n as f64).then(|| match plan.mechanism {
            Mechanism::Laplace => accuracy::out_of_range_max(n, eps),
            Mechanism::Geometric => accuracy::geometric_out_of_range_max(n, eps),
        });
        Ok(CountResult {
            table: plan.table,
            statement: plan.statement,
            noisy,
            eps: plan.eps_exact,
            mechanism: plan.mechanism.to_string(),
            scale: 1.0 / eps.get(),
            grid: match plan.mechanism {
                Mechanism::Laplace => noise::GridLaplace::for_count(plan.eps_noise).grid(),
                Mechanism::Geometric => 1.0,
            },
            n,
            interval95: (noisy - half, noisy + half),
            prior: plan.prior.map(Probability::get),
            bayes: posterior.map(|p| p.mean),
            credible95: posterior.map(|p| (p.lower, p.upper)),
            out_of_range,
            from_history,
            eps_spent: if from_history {
                Decimal::ZERO
            } else {
                plan.eps_exact
            },
            budget_spent: history.spent(),
            budget_remaining: history.remaining(),
        })
    }

    fn index(&self, name: &str) -> usize {
        self.entries
            .iter()
            .position(|e| e.name == name)
            .expect("the checker resolved the table name")
    }

    fn info(&self, i: usize) -> TableInfo {
        let e = &self.entries[i];
        TableInfo {
            name: e.name.clone(),
            path: e.path.clone(),
            n: e.table.n_rows(),
            columns: e.table.schema(),
            budget: self.budget(i),
            current: self.current == Some(i),
            data_changed: self.files[e.file].changed,
        }
    }

    fn cube_report(&self) -> Result<CubeReport, EvalError> {
        let span = Span::default();
        let cube = self
            .cube
            .as_ref()
            .expect("the checker found a cube, or CUBE made one");
        let budgets =
            blue::cell_budgets(cube.cells, &cube.history).map_err(|e| EvalError::NotEstimable {
                cells: e.to_string(),
                span,
            })?;
        Ok(CubeReport {
            cells: cube.cells,
            measurements: cube.history.len(),
            spent: budgets.iter().copied().fold(0.0, f64::max),
            budgets,
            total: cube.total,
            history: None,
        })
    }

    /// The BLUE of `query` from the cube's history and the exact distribution of its error
    /// (Xiao and Xiong, sections 3-4). Post-processing: nothing is spent. A Monte Carlo, when
    /// chosen, uses a fixed-seed generator of its own: it is computation, not privacy noise.
    fn posterior(
        &self,
        query: &[f64],
        span: Span,
    ) -> Result<(blue::Estimate, exact::Posterior), EvalError> {
        let cube = self
            .cube
            .as_ref()
            .expect("the checker found a cube, or CUBE made one");
        let fail = |message: String| EvalError::NotEstimable {
            cells: message,
            span,
        };
        let b = blue::Blue::new(cube.cells, &cube.history).map_err(|e| fail(e.to_string()))?;
        let estimate = b.estimate(query).map_err(|e| match e {
            blue::BlueError::NotEstimable(n) => fail(lacking(&n)),
            other => fail(other.to_string()),
        })?;
        let mut rng = ChaCha20Rng::seed_from_u64(0);
        let noise = exact::NoiseSum::auto(&b.noise_terms(&estimate.weights), &mut rng)
            .map_err(|e| fail(e.to_string()))?;
        let posterior = exact::Posterior {
            estimate: estimate.value,
            noise,
        };
        Ok((estimate, posterior))
    }

    /// Re-reads a table's ledger, to show what other processes spent too.
    fn refresh(&mut self, i: usize, span: Span) -> Result<(), EvalError> {
        let ledger = &mut self.files[self.entries[i].file].ledger;
        let err = |error| EvalError::Ledger { error, span };
        let lock = ledger.lock().map_err(err)?;
        ledger.reload(&lock).map_err(err)
    }

    fn budget(&self, i: usize) -> BudgetReport {
        let e = &self.entries[i];
        let ledger = &self.files[e.file].ledger;
        let history = ledger.history();
        BudgetReport {
            table: e.name.clone(),
            total: history.total(),
            spent: history.spent(),
            remaining: history.remaining(),
            ledger: ledger.path().map(|p| p.display().to_string()),
            lines: history
                .releases()
                .iter()
                .map(|r| SpendLine {
                    seq: r.seq,
                    statement: r.statement.clone(),
                    eps: r.eps,
                    time: r.time,
                })
                .collect(),
        }
    }

    fn history(&self, i: usize) -> HistoryReport {
        let e = &self.entries[i];
        let history = self.files[e.file].ledger.history();
        HistoryReport {
            table: e.name.clone(),
            releases: history
                .releases()
                .iter()
                .map(|r| ReleaseRow {
                    seq: r.seq,
                    statement: r.statement.clone(),
                    eps: r.eps,
                    sensitivity: r.sensitivity,
                    mechanism: r.mechanism.to_string(),
                    noisy: r.noisy,
                    time: r.time,
                })
                .collect(),
        }
    }
}

impl Catalog for Session {
    fn current_table(&self) -> Option<&str> {
        self.current.map(|i| self.entries[i].name.as_str())
    }

    fn table(&self, name: &str) -> Option<&Table> {
        self.entries
            .iter()
            .find(|e| e.name == name)
            .map(|e| &e.table)
    }

    fn table_names(&self) -> Vec<String> {
        self.entries.iter().map(|e| e.name.clone()).collect()
    }

    fn cube_cells(&self) -> Option<usize> {
        self.cube.as_ref().map(|c| c.cells)
    }
}

fn choose_eps(plan: ChoosePlan, span: Span) -> Result<ChooseEpsResult, EvalError> {
    let (eps, half_width) = match plan {
        ChoosePlan::Relative {
            fraction,
            confidence,
            count,
        } => (
            accuracy::choose_eps_relative(fraction, confidence, count),
            fraction.get() * count.get(),
        ),
        ChoosePlan::Absolute {
            half_width,
            confidence,
        } => (
            accuracy::choose_eps_absolute(half_width, confidence),
            half_width.get(),
        ),
    };
    if Epsilon::new(eps).is_err() || !half_width.is_finite() {
        return Err(EvalError::UnusableEpsilon { eps, span });
    }
    Ok(ChooseEpsResult {
        requirement: plan,
        eps,
        half_width,
    })
}

/// The generator of a release in a seeded session: a function of the seed and of the query's
/// key (the data's fingerprint, the predicate, epsilon and mechanism). Runs are reproducible
/// wherever the file lies, and two different queries never share noise, in one ledger or
/// across ledgers, so the difference of their answers says nothing exact.
fn release_rng(seed: u64, key: &str) -> ChaCha20Rng {
    let mut h = blake3::Hasher::new();
    h.update(b"dpq release noise");
    h.update(&seed.to_le_bytes());
    h.update(key.as_bytes());
    ChaCha20Rng::from_seed(*h.finalize().as_bytes())
}

/// Which cells lack evidence, in the words of the statements (cells are x1, x2, ...).
fn lacking(n: &blue::NotEstimable) -> String {
    let names = |cells: &[usize]| {
        cells
            .iter()
            .map(|c| format!("x{}", c + 1))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = format!(
        "{} lack{} evidence",
        names(&n.cells),
        if n.cells.len() == 1 { "s" } else { "" }
    );
    if n.unmeasured.is_empty() {
        out.push_str(" (measured only in combinations that do not separate them)");
    } else {
        out.push_str(&format!(" ({} never measured)", names(&n.unmeasured)));
    }
    out
}

fn ninety_five() -> Probability {
    Probability::new(0.95).expect("0.95 lies in (0, 1)")
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
