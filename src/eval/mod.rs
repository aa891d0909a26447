//! The session: loaded tables, their budgets and histories, the random generator, and statement execution.

mod explain;
mod history;
mod lab;

pub use history::{charge, row_sensitivity, CubeDecl, History, Release};

use crate::ast::{Statement, StatementKind};
use crate::check::{self, Catalog};
use crate::cube::Cube;
use crate::data::{self, LoadOptions, Table};
use crate::error::{Error, EvalError};
use crate::ledger::{Ledger, Store};
use crate::output::{
    short_number, AnsweredResult, CubeReport, EstimateResult, MeasurementRow, ProbResult,
};
use crate::output::{
    BudgetReport, ChooseEpsResult, CountResult, HistoryReport, Output, ReleaseRow, Response,
    SpendLine, TableInfo,
};
use crate::plan::{ChoosePlan, CountPlan, CubeRef, Eps, Event, Mechanism, Plan, Spend};
use crate::span::Span;
use crate::stats::blue::{self, Measurement};
use crate::stats::exact;
use crate::stats::noise;
use crate::stats::{accuracy, bayes, laplace, staircase, Epsilon, Positive, Probability};
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
    /// The cube its ledger declares, built over the file's columns.
    cube: Option<Cube>,
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
    /// Whether coefficient lists speak of the teaching cube (after `CUBE n`) rather than the
    /// current table's (after `CUBE BY`, `LOAD` or `USE`).
    teaching_focus: bool,
    /// Where the progress of long statements is reported, if anywhere.
    progress: Option<Box<dyn Progress>>,
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
            teaching_focus: false,
            progress: None,
        }
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
                let loaded =
                    data::load_csv(&path, &self.load_options).map_err(|error| EvalError::Load {
                        path: path_text.clone(),
                        error,
                        span: path_span,
                    })?;
                let table = loaded.table;
                let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
                let fingerprint = blake3::Hash::from(loaded.content.bytes())
                    .to_hex()
                    .to_string();
                let (opened, changed) =
                    Ledger::open(&self.store, &key, &fingerprint, DEFAULT_BUDGET)
                        .map_err(|error| EvalError::Ledger { error, span })?;
                // The cube the ledger declares, built over the columns just loaded.
                let cube = restore_cube(opened.history().cube(), &table, &name)
                    .map_err(|message| EvalError::CubeUnusable { message, span })?;
                let file = match self.files.iter().position(|f| f.key == key) {
                    Some(i) => {
                        self.files[i].ledger = opened;
                        self.files[i].changed |= changed;
                        self.files[i].cube = cube;
                        i
                    }
                    None => {
                        self.files.push(FileState {
                            key,
                            ledger: opened,
                            changed,
                            cube,
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
                self.teaching_focus = false;
                Output::Loaded(self.info(self.entries.len() - 1))
            }
            Plan::Use { table } => {
                let i = self.index(&table);
                self.current = Some(i);
                self.teaching_focus = false;
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
            Plan::Count(plan) => self.count(plan, span, false)?,
            Plan::Simulate(plan) => Output::Simulate(self.simulate(plan, span)?),
            Plan::OutOfRange { n, eps, at } => Output::OutOfRange(lab::out_of_range(n, eps, at)),
            Plan::CompareNoise { eps, sensitivity } => {
                Output::CompareNoise(lab::compare_noise(&eps, sensitivity))
            }
            Plan::Explain { plan, statement } => {
                Output::Explained(self.explain(*plan, statement, span)?)
            }
            Plan::CubeBy { table, cube, spec } => {
                let i = self.index(&table);
                let fi = self.entries[i].file;
                let file = &mut self.files[fi];
                let err = |error| EvalError::Ledger { error, span };
                let lock = file.ledger.lock().map_err(err)?;
                file.ledger.reload(&lock).map_err(err)?;
                let history = file.ledger.history();
                let declared = history.cube().cloned();
                if declared.as_ref().map(|c| &c.spec) != Some(&spec) {
                    let releases = history.rows_released();
                    if let (Some(current), true) = (&declared, releases > 0) {
                        return Err(EvalError::CubeFixed {
                            table,
                            current: current.spec.clone(),
                            releases,
                            span,
                        });
                    }
                    file.ledger
                        .declare_cube(
                            &lock,
                            &CubeDecl {
                                spec,
                                cells: cube.cells(),
                            },
                        )
                        .map_err(err)?;
                }
                drop(lock);
                file.cube = Some(cube);
                self.teaching_focus = false;
                Output::Cube(self.table_cube_report(i, false))
            }
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
                self.teaching_focus = true;
                Output::Cube(self.cube_report()?)
            }
            Plan::ShowCube {
                target: CubeRef::Table(table),
            } => {
                let i = self.index(&table);
                self.refresh(i, span)?;
                Output::Cube(self.table_cube_report(i, true))
            }
            Plan::ShowCube {
                target: CubeRef::Teaching,
            } => {
                let mut report = self.cube_report()?;
                let cube = self.cube.as_ref().expect("the checker found a cube");
                report.history = Some(dense_rows(cube.cells, &cube.history));
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
            Plan::Estimate {
                target,
                query,
                text,
            } => {
                let (estimate, posterior) = self.posterior_of(&target, &query, span)?;
                let credible95 = posterior.credible_interval(ninety_five());
                Output::Estimate(EstimateResult {
                    text,
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
            Plan::Prob {
                target,
                query,
                text,
                event,
            } => {
                let (_, posterior) = self.posterior_of(&target, &query, span)?;
                let (probability, event) = match event {
                    Event::Greater(x) => (posterior.prob_greater(x), format!("> {x}")),
                    Event::Less(x) => (posterior.prob_less(x), format!("< {x}")),
                    Event::Between(a, b) => {
                        (posterior.prob_between(a, b), format!("between {a} and {b}"))
                    }
                };
                Output::Prob(ProbResult {
                    text,
                    query,
                    event,
                    probability,
                    error_bound: posterior.error_bound(),
                })
            }
        })
    }

    /// Runs a count; `dry` (EXPLAIN) goes as far as the budget check and returns what it
    /// would do, spending nothing, recording nothing and drawing nothing.
    fn count(&mut self, plan: CountPlan, span: Span, dry: bool) -> Result<Output, EvalError> {
        let i = self.index(&plan.table);
        let fi = self.entries[i].file;
        let n = self.entries[i].table.n_rows();
        let err = |error| EvalError::Ledger { error, span };
        // The lock is held from the budget check to the recorded answer: no other process
        // can spend in between, and the ledger is re-read under it.
        let lock = self.files[fi].ledger.lock().map_err(err)?;
        self.files[fi].ledger.reload(&lock).map_err(err)?;
        let declared = self.files[fi]
            .ledger
            .history()
            .cube()
            .map(|c| c.spec.clone());
        if declared != plan.cube {
            return Err(EvalError::CubeChanged {
                table: plan.table,
                span,
            });
        }
        let sensitivity = plan.sensitivity.to_f64().unwrap_or(f64::INFINITY);
        let (eps, explain) = match plan.spend {
            Spend::Eps(eps) => (eps, None),
            Spend::Within {
                half_width,
                confidence,
            } => {
                let w = half_width.get();
                let c = confidence.get();
                let why = match &self.files[fi].cube {
                    None => {
                        "no cube is declared, so earlier answers cannot be combined".to_string()
                    }
                    Some(cube) => {
                        let mut query = vec![0.0; cube.cells()];
                        for (j, coefficient) in &plan.row {
                            query[*j] = coefficient.to_f64().unwrap_or(f64::NAN);
                        }
                        let history = self.table_history(i);
                        let name = |j: usize| format!("[{}]", cube.cell_name(j));
                        match posterior(cube.cells(), &history, &query, &name, span) {
                            Ok((estimate, post)) => {
                                let interval = post.credible_interval(confidence);
                                let h = (interval.1 - interval.0) / 2.0;
                                if h <= w {
                                    drop(lock);
                                    if dry {
                                        return Ok(self.count_explanation(
                                            &plan,
                                            i,
                                            None,
                                            explain::Verdict::Answered(format!(
                                                "its {}% credible interval from the history has half-width {} <= {}: answered from the history (Xiao and Xiong, section 5)",
                                                short_number(c * 100.0),
                                                short_number(h),
                                                short_number(w)
                                            )),
                                        ));
                                    }
                                    let budget = self.files[fi].ledger.history();
                                    return Ok(Output::Answered(AnsweredResult {
                                        table: plan.table,
                                        statement: plan.statement,
                                        estimate: estimate.value,
                                        variance: estimate.variance,
                                        confidence: c,
                                        interval,
                                        credible95: post.credible_interval(ninety_five()),
                                        explain: format!(
                                            "answered from the history: its {}% credible interval has half-width {} <= {}, so nothing was spent (Xiao and Xiong, section 5)",
                                            short_number(c * 100.0),
                                            short_number(h),
                                            short_number(w)
                                        ),
                                        budget_spent: budget.spent(),
                                        budget_remaining: budget.remaining(),
                                    }));
                                }
                                format!(
                                    "the history's {}% credible interval has half-width {} > {}",
                                    short_number(c * 100.0),
                                    short_number(h),
                                    short_number(w)
                                )
                            }
                            Err(EvalError::NotEstimable { cells, .. }) => {
                                format!("the history cannot estimate it yet ({cells})")
                            }
                            Err(e) => return Err(e),
                        }
                    }
                };
                // Theorem 5.3: the least epsilon whose Laplace release meets (w, delta), rounded
                // up to six significant digits so that the budget adds exactly.
                let s = Positive::new(sensitivity).map_err(|_| EvalError::UnusableEpsilon {
                    eps: f64::NAN,
                    span,
                })?;
                let raw = accuracy::eps_for_half_width(s, half_width, confidence);
                let eps = round_up_eps(raw).ok_or(EvalError::UnusableEpsilon { eps: raw, span })?;
                let explain = format!(
                    "{why}; released with the least epsilon that meets ±{} at {}%: eps = S ln(1/delta) / w = {} ln(1/{}) / {} = {} (Xiao and Xiong, Theorem 5.3)",
                    short_number(w),
                    short_number(c * 100.0),
                    short_number(sensitivity),
                    short_number(1.0 - c),
                    short_number(w),
                    eps.exact.normalize()
                );
                (eps, Some(explain))
            }
        };
        let entry = &self.entries[i];
        let file = &mut self.files[fi];
        // Answers are reused only for the data they were computed on, and a seeded answer
        // (reproducible, so not private) only by a session with the same seed.
        let source = match self.seed {
            Some(seed) => format!("seed {seed}"),
            None => "private".to_string(),
        };
        let tail = format!("{}|{}", eps.exact.normalize(), plan.mechanism);
        let key = format!("{}|{source}|{}|{tail}", entry.fingerprint, plan.query_key);
        let earlier = {
            let history = file.ledger.history();
            let alt = plan
                .plain_key
                .as_ref()
                .map(|k| format!("{}|{source}|{k}|{tail}", entry.fingerprint));
            history
                .find(&key)
                .or_else(|| alt.and_then(|k| history.find(&k)))
                .and_then(|r| r.noisy)
        };
        let plain = plan.single().cloned();
        if dry {
            // The same checks, in the same order, as the release below; all on public facts.
            let unwritable = plan
                .plot
                .as_ref()
                .and_then(|chart| lab::writable(&chart.path, chart.span).err());
            let verdict = if let Some(error) = unwritable {
                explain::Verdict::Refused(explain, Some(error.to_string()))
            } else if earlier.is_some() {
                explain::Verdict::Reused
            } else if file
                .ledger
                .history()
                .check_row(eps.exact, &plan.row)
                .is_err()
            {
                explain::Verdict::Refused(explain, None)
            } else {
                match linear_noise(&plan, n, eps, span) {
                    Ok(_) => explain::Verdict::Releases(explain),
                    Err(error) => explain::Verdict::Refused(explain, Some(error.to_string())),
                }
            };
            drop(lock);
            return Ok(self.count_explanation(&plan, i, Some(eps), verdict));
        }
        if let Some(chart) = &plan.plot {
            lab::writable(&chart.path, chart.span)?;
        }
        let (noisy, grid, from_history) = match earlier {
            Some(noisy) => (
                noisy,
                match (plan.mechanism, linear_scale(eps, plan.sensitivity)) {
                    (Mechanism::Laplace, Some(scale)) => noise::GridLaplace::new(scale).grid(),
                    (Mechanism::Staircase, _) => staircase_noise(eps).grid(),
                    _ => 1.0,
                },
                true,
            ),
            None => {
                let history = file.ledger.history();
                // The budget is checked before any noise is drawn: a refused query changes nothing.
                if let Err((cell, after)) = history.check_row(eps.exact, &plan.row) {
                    return Err(match &file.cube {
                        Some(cube) => EvalError::CellsExceeded {
                            table: plan.table,
                            cell: cube.cell_name(cell),
                            after,
                            total: history.total(),
                            span,
                        },
                        None => EvalError::BudgetExceeded {
                            table: plan.table,
                            requested: eps.exact,
                            remaining: history.remaining(),
                            total: history.total(),
                            span,
                        },
                    });
                }
                let laplace = linear_noise(&plan, n, eps, span)?;
                let seq = history.next_seq();
                // The spending is durable before the noise is drawn.
                file.ledger
                    .spend(
                        &lock,
                        &Release {
                            seq,
                            statement: plan.statement.clone(),
                            key: key.clone(),
                            row: plan.row.clone(),
                            eps: eps.exact,
                            sensitivity,
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
                let (noisy, grid) = match &plain {
                    Some(predicate) => {
                        let truth =
                            i64::try_from(data::count(&entry.table, predicate)).unwrap_or(i64::MAX);
                        match plan.mechanism {
                            // Paper 1, section 2: the Laplace mechanism, noise of scale Δf/ε with
                            // Δf = 1, drawn exactly as discrete Laplace steps of a 2^-k grid:
                            // eps-DP with no extra cost for a count (see stats::noise::GridLaplace).
                            Mechanism::Laplace => {
                                let v = noise::laplace_count(rng, truth, eps.noise);
                                (v.value(), v.grid())
                            }
                            // P(z) = (1-a)/(1+a) a^|z|, a = e^-eps, exactly.
                            Mechanism::Geometric => (
                                (i128::from(truth) + noise::geometric(rng, eps.noise)) as f64,
                                1.0,
                            ),
                            // The staircase of the variance-optimal gamma, exactly on the grid
                            // 2^-20: eps-DP (see stats::noise::GridStaircase).
                            Mechanism::Staircase => {
                                let v = staircase_noise(eps).release_count(rng, truth);
                                (v.value(), v.grid())
                            }
                        }
                    }
                    None => {
                        // sum_t c_t count_t = sum_j h_j x_j: an integer (whole coefficients),
                        // at most n sum |c_t| < 2^90 in magnitude (checked above from public
                        // facts), so the i128 arithmetic below never overflows and nothing here
                        // can fail on the data. Neighbouring data move it by at most
                        // S = max |h_j| (Lemma 2.1), i.e. S 2^k grid steps, and the noise has
                        // S/eps * 2^k steps of scale: eps-DP exactly (see GridLaplace).
                        let truth = plan.terms.iter().fold(0i128, |acc, (c, p)| {
                            let c = c.to_i128().unwrap_or(0);
                            let count = i128::from(data::count(&entry.table, p));
                            acc.saturating_add(c.saturating_mul(count))
                        });
                        let v = laplace.release(rng, truth.saturating_mul(1i128 << laplace.k()));
                        (v.value(), v.grid())
                    }
                };
                // The answer is durable before it is shown.
                file.ledger.release(&lock, seq, noisy).map_err(|error| {
                    EvalError::AnswerNotRecorded {
                        eps: eps.exact,
                        error,
                        span,
                    }
                })?;
                (noisy, grid, false)
            }
        };
        drop(lock);
        let history = file.ledger.history();
        let e = eps.value;
        let stairs = (plan.mechanism == Mechanism::Staircase).then(|| staircase_law(eps));
        let half = match (plan.mechanism, stairs) {
            (Mechanism::Staircase, Some(law)) => law.half_width(ninety_five()),
            (Mechanism::Geometric, _) => accuracy::geometric_half_width(e, ninety_five()) as f64,
            _ => sensitivity * laplace::interval_half_width(e, ninety_five()),
        };
        let posterior = plan
            .prior
            .map(|p| (p, bayes::posterior(n, p, e, noisy, ninety_five())));
        let out_of_range = (plain.is_some() && (noisy < 0.0 || noisy > n as f64)).then(|| {
            match (plan.mechanism, stairs) {
                // At a true count of 0: P(noise < 0) + P(noise > n) = 1/2 + (1 - F(n)).
                (Mechanism::Staircase, Some(law)) => 0.5 + (1.0 - law.cdf(n as f64)),
                (Mechanism::Geometric, _) => accuracy::geometric_out_of_range_max(n, e),
                _ => accuracy::out_of_range_max(n, e),
            }
        });
        let posterior_shape = posterior.and_then(|(p, post)| {
            lab::posterior_shape(n, p, e, noisy, (post.lower, post.upper), SHAPE_BINS)
        });
        let plot = match (&plan.plot, posterior) {
            (Some(chart), Some((p, post))) => {
                let svg = lab::posterior_chart(n, p, e, noisy, &post, &plan.statement);
                Some(lab::outcome_of(&chart.path, svg))
            }
            _ => None,
        };
        let posterior = posterior.map(|(_, post)| post);
        Ok(Output::Count(CountResult {
            table: plan.table,
            statement: plan.statement,
            noisy,
            eps: eps.exact,
            mechanism: plan.mechanism.to_string(),
            scale: sensitivity / e.get(),
            grid,
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
                eps.exact
            },
            budget_spent: history.spent(),
            budget_remaining: history.remaining(),
            sensitivity,
            plain: plain.is_some(),
            explain,
            gamma: stairs.map(|law| law.gamma()),
            posterior_shape,
            plot,
        }))
    }

    /// The evidence of table `i`'s cube: its answered Laplace releases about the content now
    /// loaded (answers about an earlier content of the file would bias it), each with its row
    /// over the cells. A count released before the cube was declared is evidence too when its
    /// condition is a union of the cells (its row is found again from its statement); it still
    /// charges every cell, as it did when it was released.
    fn table_history(&self, i: usize) -> Vec<Measurement> {
        let entry = &self.entries[i];
        let file = &self.files[entry.file];
        let Some(cube) = &file.cube else {
            return Vec::new();
        };
        let prefix = format!("{}|", entry.fingerprint);
        file.ledger
            .history()
            .releases()
            .iter()
            .filter(|r| r.mechanism == Mechanism::Laplace && r.key.starts_with(&prefix))
            .filter_map(|r| {
                let row = if r.row.is_empty() {
                    let statements = crate::syntax::parse_script(&r.statement).ok()?;
                    let StatementKind::Count(q) = &statements.first()?.kind else {
                        return None;
                    };
                    check::row_of(q, &entry.table, &entry.name, cube)?
                } else {
                    r.row.clone()
                };
                Some(Measurement {
                    row: row
                        .iter()
                        .map(|(j, c)| (*j, c.to_f64().unwrap_or(f64::NAN)))
                        .collect(),
                    eps: r.eps.to_f64()?,
                    sensitivity: row_sensitivity(&row).to_f64()?,
                    noisy: r.noisy?,
                })
            })
            .collect()
    }

    /// The report of table `i`'s cube; with its history (H, alpha, S, y) when `history`.
    fn table_cube_report(&self, i: usize, with_history: bool) -> CubeReport {
        let entry = &self.entries[i];
        let file = &self.files[entry.file];
        let cube = file
            .cube
            .as_ref()
            .expect("the checker found the table's cube");
        let history = file.ledger.history();
        let budgets: Vec<f64> = history
            .cell_spent()
            .unwrap_or_default()
            .iter()
            .map(|b| b.to_f64().unwrap_or(f64::NAN))
            .collect();
        let measurements = self.table_history(i);
        CubeReport {
            table: Some(entry.name.clone()),
            declaration: Some(cube.declaration()),
            cell_names: (0..cube.cells()).map(|j| cube.cell_name(j)).collect(),
            cells: cube.cells(),
            measurements: measurements.len(),
            spent: history.spent().to_f64().unwrap_or(f64::NAN),
            budgets,
            total: history.total(),
            history: with_history.then(|| dense_rows(cube.cells(), &measurements)),
        }
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
            table: None,
            declaration: None,
            cell_names: (1..=cube.cells).map(|j| format!("x{j}")).collect(),
            cells: cube.cells,
            measurements: cube.history.len(),
            spent: budgets.iter().copied().fold(0.0, f64::max),
            budgets,
            total: cube.total,
            history: None,
        })
    }

    /// The BLUE of `query` from the history of the teaching cube or of a table's cube, and
    /// the exact distribution of its error.
    fn posterior_of(
        &self,
        target: &CubeRef,
        query: &[f64],
        span: Span,
    ) -> Result<(blue::Estimate, exact::Posterior), EvalError> {
        match target {
            CubeRef::Teaching => {
                let cube = self
                    .cube
                    .as_ref()
                    .expect("the checker found a cube, or CUBE made one");
                posterior(cube.cells, &cube.history, query, &teaching_name, span)
            }
            CubeRef::Table(table) => {
                let i = self.index(table);
                let cube = self.files[self.entries[i].file]
                    .cube
                    .as_ref()
                    .expect("the checker found the table's cube");
                let name = |j: usize| format!("[{}]", cube.cell_name(j));
                posterior(cube.cells(), &self.table_history(i), query, &name, span)
            }
        }
    }

    /// Re-reads a table's ledger, to show what other processes spent too, and the cube they
    /// may have declared.
    fn refresh(&mut self, i: usize, span: Span) -> Result<(), EvalError> {
        let entry = &self.entries[i];
        let file = &mut self.files[entry.file];
        let err = |error| EvalError::Ledger { error, span };
        let lock = file.ledger.lock().map_err(err)?;
        file.ledger.reload(&lock).map_err(err)?;
        let declared = file.ledger.history().cube();
        if declared.map(|c| &c.spec) != file.cube.as_ref().map(Cube::declaration).as_ref() {
            file.cube = restore_cube(declared, &entry.table, &entry.name)
                .map_err(|message| EvalError::CubeUnusable { message, span })?;
        }
        Ok(())
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
            cells: match (&self.files[e.file].cube, history.cell_spent()) {
                (Some(cube), Some(b)) => Some(
                    b.into_iter()
                        .enumerate()
                        .map(|(j, spent)| (cube.cell_name(j), spent))
                        .collect(),
                ),
                _ => None,
            },
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
                    row: history.cube().filter(|_| !r.row.is_empty()).map(|c| {
                        let mut dense = vec![0.0; c.cells];
                        for (j, v) in &r.row {
                            if let Some(x) = dense.get_mut(*j) {
                                *x = v.to_f64().unwrap_or(f64::NAN);
                            }
                        }
                        dense
                    }),
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

    fn table_cube(&self, table: &str) -> Option<&Cube> {
        let e = self.entries.iter().find(|e| e.name == table)?;
        self.files[e.file].cube.as_ref()
    }

    fn focus(&self) -> Option<(CubeRef, usize)> {
        let teaching = self.cube.as_ref().map(|c| (CubeRef::Teaching, c.cells));
        let table = self.current.and_then(|i| {
            let e = &self.entries[i];
            let cube = self.files[e.file].cube.as_ref()?;
            Some((CubeRef::Table(e.name.clone()), cube.cells()))
        });
        if self.teaching_focus {
            teaching.or(table)
        } else {
            table.or(teaching)
        }
    }
}

/// The BLUE of `query` from `history` over `cells` cells and the exact distribution of its
/// error (Xiao and Xiong, sections 3-4). Post-processing: nothing is spent. A Monte Carlo,
/// when chosen, uses a fixed-seed generator of its own: it is computation, not privacy noise.
fn posterior(
    cells: usize,
    history: &[Measurement],
    query: &[f64],
    name: &dyn Fn(usize) -> String,
    span: Span,
) -> Result<(blue::Estimate, exact::Posterior), EvalError> {
    let fail = |message: String| EvalError::NotEstimable {
        cells: message,
        span,
    };
    let b = blue::Blue::new(cells, history).map_err(|e| fail(e.to_string()))?;
    let estimate = b.estimate(query).map_err(|e| match e {
        blue::BlueError::NotEstimable(n) => fail(lacking(&n, name)),
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

/// Cells of the teaching cube are x1, x2, ...
fn teaching_name(cell: usize) -> String {
    format!("x{}", cell + 1)
}

/// The history as dense rows of `H` with `alpha`, `S` and `y`.
fn dense_rows(cells: usize, history: &[Measurement]) -> Vec<MeasurementRow> {
    history
        .iter()
        .map(|m| {
            let mut row = vec![0.0; cells];
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
        .collect()
}

/// Restores the cube a ledger declares over a table just loaded.
fn restore_cube(
    decl: Option<&CubeDecl>,
    table: &Table,
    name: &str,
) -> Result<Option<Cube>, String> {
    let Some(CubeDecl { spec, cells }) = decl else {
        return Ok(None);
    };
    let statements = crate::syntax::parse_script(spec).map_err(|e| e.to_string())?;
    match statements.first().map(|s| &s.kind) {
        Some(StatementKind::CubeBy { dims }) => {
            let cube =
                check::build_cube(dims, table, name, Span::default()).map_err(|e| e.to_string())?;
            if cube.declaration() == *spec && cube.cells() == *cells {
                Ok(Some(cube))
            } else {
                Err(format!("{spec} reads back as {}", cube.declaration()))
            }
        }
        _ => Err(format!("{spec} is not a cube declaration")),
    }
}

/// The noise scale `S / eps` of a release, exactly (`1/eps` for a count); `None` when it
/// cannot be held exactly (the query is then refused, never released with less noise).
fn linear_scale(eps: Eps, sensitivity: Decimal) -> Option<noise::Rational> {
    let base = eps.noise.count_scale();
    let s = sensitivity.to_u128().filter(|s| *s >= 1)?;
    noise::Rational::new(base.num().checked_mul(s)?, base.den())
}

/// An epsilon computed from a requirement, rounded up to six significant digits: exact, and
/// never below what the requirement needs.
fn round_up_eps(raw: f64) -> Option<Eps> {
    // Far outside any useful range an epsilon is refused rather than rounded (a requirement of
    // ±1e300 would otherwise round its 1e-301 up to a whole unit of budget).
    if !(1e-12..=1e12).contains(&raw) {
        return None;
    }
    let d = Decimal::from_f64_retain(raw)?
        .round_sf_with_strategy(6, rust_decimal::RoundingStrategy::AwayFromZero)?;
    let d = if d.to_f64()? < raw {
        d.checked_add(Decimal::new(1, d.scale()))?
    } else {
        d
    }
    .normalize();
    Some(Eps {
        value: Epsilon::new(d.to_f64()?).ok()?,
        noise: noise::ExactEpsilon::new(d).ok()?,
        exact: d,
    })
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

/// Which cells lack evidence, in the words of the statements.
fn lacking(n: &blue::NotEstimable, name: &dyn Fn(usize) -> String) -> String {
    let names = |cells: &[usize]| {
        cells
            .iter()
            .map(|c| name(*c))
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

/// The Laplace noise of a count's release on its grid, or why it cannot be released exactly.
///
/// A linear query is released on the grid of its noise: its noise scale must be exact, and its
/// largest possible answer (public: n and the coefficients) must fit the exact integer
/// arithmetic, so that nothing in the release depends on the data.
fn linear_noise(
    plan: &CountPlan,
    n: u64,
    eps: Eps,
    span: Span,
) -> Result<noise::GridLaplace, EvalError> {
    let total: Decimal = plan.terms.iter().map(|(c, _)| c.abs()).sum();
    let bound = total.to_f64().unwrap_or(f64::INFINITY) * n as f64;
    let too_large = || EvalError::TooLarge {
        bound: short_number(bound),
        span,
    };
    let laplace =
        noise::GridLaplace::new(linear_scale(eps, plan.sensitivity).ok_or_else(too_large)?);
    if plan.single().is_none() {
        let scaled = bound * 2f64.powi(laplace.k() as i32);
        if !(bound < 2f64.powi(90) && scaled < 2f64.powi(120)) {
            return Err(too_large());
        }
    }
    Ok(laplace)
}

/// Bins of the posterior sparkline shown with a count.
const SHAPE_BINS: usize = 40;

/// The staircase noise of a count at `eps`: the variance-optimal gamma on the grid.
fn staircase_noise(eps: Eps) -> noise::GridStaircase {
    noise::GridStaircase::for_count(eps.noise, staircase::optimal_gamma(eps.value))
}

/// The law of [`staircase_noise`], with the gamma actually used on the grid.
fn staircase_law(eps: Eps) -> staircase::Staircase {
    let one = Positive::new(1.0).expect("1 is positive");
    let gamma = staircase_noise(eps).gamma();
    staircase::Staircase::new(eps.value, one, gamma)
        .unwrap_or_else(|_| staircase::Staircase::optimal(eps.value, one))
}

fn ninety_five() -> Probability {
    Probability::new(0.95).expect("0.95 lies in (0, 1)")
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
