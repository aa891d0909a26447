//! Cubes and inference from the history: `CUBE BY`, `CUBE n`, `OBSERVE`, `ESTIMATE`, `PROB` and
//! `SHOW CUBE` (Xiao and Xiong).

use super::{dense_rows, ledger_error, ninety_five, Entry, Session, DEFAULT_BUDGET};
use crate::ast::StatementKind;
use crate::check;
use crate::cube::Cube;
use crate::error::EvalError;
use crate::output::{Bound, CubeReport, EstimateResult, Output, PairReport, ProbResult};
use crate::plan::{CubeRef, Event};
use crate::privacy::{
    Carry, CubeDecl, History, Ledger, Measure, Mechanism, Neighbours, Prepared, Refusal,
    ReleaseError, Request, Row, Where,
};
use crate::span::Span;
use crate::stats::blue::{self, Law, Measurement};
use crate::stats::exact;
use crate::stats::joint::JointError;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;

/// Anonymous cells with no data (`CUBE n`) and the measurements entered by hand, recorded in a
/// ledger kept in memory: the same accounting as a table's, under the cube's neighbour model.
pub(super) struct TeachingCube {
    pub(super) cells: usize,
    pub(super) ledger: Ledger,
}

impl TeachingCube {
    /// The cube's declaration, as its ledger records it.
    fn spec(&self) -> String {
        format!("CUBE {}", self.cells)
    }

    /// The measurements as the BLUE reads them.
    fn history(&self) -> Vec<Measurement> {
        measurements(self.ledger.history())
    }
}

/// Every answered release of a history with a row, as a measurement: its row, epsilon, the
/// sensitivity its noise was drawn with, and its answer.
fn measurements(history: &History) -> Vec<Measurement> {
    history
        .releases()
        .iter()
        .zip(history.noise_variances())
        .filter_map(|(r, sigma2)| measurement(r, sigma2, &r.row.to_cells()))
        .collect()
}

/// An answered Laplace or Gaussian release as the BLUE reads it, with its row over the cells:
/// a Laplace release by its epsilon and the sensitivity its noise was drawn with; a Gaussian
/// one by the standard deviation the ledger gave its noise (`sigma2`, from
/// [`History::noise_variances`]: `sigma = S2 / sqrt(2 rho)`, written `alpha = sqrt(2 rho)` and
/// `S = sigma alpha`). `None` for any other release, or one without an answer.
fn measurement(
    r: &crate::privacy::Release,
    sigma2: Option<(u128, u128)>,
    row: &[(usize, Decimal)],
) -> Option<Measurement> {
    let row = row
        .iter()
        .map(|(j, c)| (*j, c.to_f64().unwrap_or(f64::NAN)))
        .collect();
    let (eps, sensitivity, law) = match r.mechanism {
        Mechanism::Laplace => (r.eps.to_f64()?, r.sensitivity, Law::Laplace),
        Mechanism::Gaussian => {
            let (p, q) = sigma2?;
            let sigma = (p as f64 / q as f64).sqrt();
            let alpha = (2.0 * r.eps.to_f64()?).sqrt();
            (alpha, sigma * alpha, Law::Normal)
        }
        _ => return None,
    };
    Some(Measurement {
        row,
        eps,
        sensitivity,
        noisy: r.noisy?,
        law,
    })
}

impl Session {
    /// `CUBE BY ...` over a table: recorded in its ledger, unless releases were made over
    /// another cube; every table of the same data gets the cube over its own columns.
    pub(super) fn cube_by(
        &mut self,
        table: String,
        cube: Cube,
        spec: String,
        span: Span,
    ) -> Result<Output, EvalError> {
        let i = self.index(&table);
        let id = self.entries[i].ledger;
        let time = (self.clock)();
        let mut txn = self
            .ledgers
            .get_mut(id)
            .begin()
            .map_err(ledger_error(span))?;
        let declared = txn.history().cube().cloned();
        // Another session changed the cube: its refinements are checked before they are used.
        let entry = &self.entries[i];
        if declared.as_ref().map(|c| &c.spec) != entry.cube.as_ref().map(Cube::declaration).as_ref()
        {
            check_refinements(txn.history(), &entry.table, &entry.name)
                .map_err(|message| EvalError::CubeUnusable { message, span })?;
        }
        let mut carried = None;
        if declared.as_ref().map(|c| &c.spec) != Some(&spec) {
            let releases = txn.history().rows_released();
            let carry = match &declared {
                Some(current) if releases > 0 => Some(carry_to(current, &self.entries[i], &cube)),
                _ => None,
            };
            carried = carry.as_ref().map(|c| carried_words(c, releases));
            let decl = CubeDecl {
                spec,
                cells: cube.cells(),
                header: self.entries[i].header,
                reading: self.entries[i].format.clauses(),
            };
            // Every table of the same data must read the cube before it is recorded: a
            // statement refused here leaves the ledger as it was.
            for entry in self.entries.iter().filter(|e| e.ledger == id) {
                restore_cube(Some(&decl), &entry.table, &entry.name, read_as(entry))
                    .map_err(|message| EvalError::CubeUnusable { message, span })?;
            }
            txn.declare_cube(&decl, carry.as_ref(), time)
                .map_err(ledger_error(span))?;
        }
        let declared = txn.history().cube().cloned();
        drop(txn);
        for entry in self.entries.iter_mut().filter(|e| e.ledger == id) {
            sync_cube(entry, declared.as_ref(), span)?;
        }
        self.teaching_focus = false;
        let mut report = self.table_cube_report(i, false);
        report.carried = carried;
        Ok(Output::Cube(report))
    }

    /// How releases over table `i`'s current cube would carry over to `cube`, in words, when
    /// declaring it would change the cube under releases with a row (for EXPLAIN).
    pub(super) fn carried_to(&self, i: usize, cube: &Cube) -> Option<String> {
        let entry = &self.entries[i];
        let history = self.ledgers.get(entry.ledger).history();
        let releases = history.rows_released();
        let current = history.cube()?;
        if releases == 0 || current.spec == cube.declaration() {
            return None;
        }
        Some(carried_words(&carry_to(current, entry, cube), releases))
    }

    /// `CUBE n`: a teaching cube, which may be declared again while it has no measurement.
    pub(super) fn teaching_cube(
        &mut self,
        cells: usize,
        neighbours: Neighbours,
        span: Span,
    ) -> Result<Output, EvalError> {
        if self
            .cube
            .as_ref()
            .is_some_and(|c| !c.ledger.history().releases().is_empty())
        {
            return Err(EvalError::CubeInUse { span });
        }
        let mut cube = TeachingCube {
            cells,
            ledger: Ledger::in_memory(DEFAULT_BUDGET, neighbours),
        };
        let decl = CubeDecl {
            spec: cube.spec(),
            cells,
            header: true,
            reading: String::new(),
        };
        let time = (self.clock)();
        cube.ledger
            .begin()
            .and_then(|mut txn| txn.declare_cube(&decl, None, time))
            .map_err(ledger_error(span))?;
        self.cube = Some(cube);
        self.teaching_focus = true;
        Ok(Output::Cube(self.cube_report()))
    }

    /// `SHOW CUBE`: the focused cube's cells, history and budgets.
    pub(super) fn show_cube(&mut self, target: CubeRef, span: Span) -> Result<Output, EvalError> {
        Ok(Output::Cube(match target {
            CubeRef::Table(table) => {
                let i = self.index(&table);
                self.refresh(i, span)?;
                self.table_cube_report(i, true)
            }
            CubeRef::Teaching => {
                let mut report = self.cube_report();
                let cube = self.cube.as_ref().expect("the checker found a cube");
                report.history = Some(dense_rows(cube.cells, &cube.history()));
                report
            }
        }))
    }

    /// `OBSERVE (...) = y WITH EPS e`: a measurement entered by hand in the teaching cube,
    /// recorded through the release protocol (its "draw" is the value given), refused when it
    /// would take a cell (or under `replace` a pair of cells) past the budget.
    pub(super) fn observe(
        &mut self,
        row: Vec<(usize, Decimal)>,
        value: f64,
        eps: Decimal,
        statement: String,
        span: Span,
    ) -> Result<Output, EvalError> {
        let time = (self.clock)();
        let cube = self.cube.as_mut().expect("the checker found a cube");
        let spec = cube.spec();
        let txn = cube.ledger.begin().map_err(ledger_error(span))?;
        let history = txn.history();
        let row = Row::from_cells(&row).expect("OBSERVE gives a coefficient to each cell in order");
        let request = Request {
            statement,
            // Every measurement is its own: none is the answer of another.
            key: format!("observe {}", history.next_seq()),
            alt_key: None,
            sensitivity: history.sensitivity(&row).to_f64().unwrap_or(f64::INFINITY),
            row,
            cube: Some(spec),
            neighbours: history.neighbours(),
            eps,
            mechanism: Mechanism::Laplace,
            measure: crate::privacy::Measure::Rows,
            time,
        };
        let ticket = match txn.prepare(request) {
            Ok(Prepared::Fits(ticket)) => *ticket,
            Ok(Prepared::Recorded(_))
            | Err(Refusal::CubeChanged | Refusal::ModelChanged | Refusal::AccountingChanged) => {
                return Err(EvalError::CubeInUse { span })
            }
            // A teaching cube is never a served dataset's view: both are its own budget.
            Err(Refusal::Exceeded(over) | Refusal::DatasetExceeded(over)) => {
                let total = txn.history().total();
                return Err(match over.at {
                    Where::Pair(j, k) => EvalError::PairExceeded {
                        table: None,
                        first: teaching_name(j),
                        second: teaching_name(k),
                        after: over.after,
                        total,
                        span,
                    },
                    Where::Cell(j) => EvalError::CellBudgetExceeded {
                        cell: j + 1,
                        after: over.after,
                        total,
                        span,
                    },
                    Where::Table | Where::Exposed => EvalError::CellBudgetExceeded {
                        cell: 1,
                        after: over.after,
                        total,
                        span,
                    },
                });
            }
        };
        txn.release(ticket, || value).map_err(|e| match e {
            ReleaseError::Ledger(error) | ReleaseError::NotRecorded { error, .. } => {
                EvalError::Ledger { error, span }
            }
        })?;
        Ok(Output::Cube(self.cube_report()))
    }

    /// `ESTIMATE`: the BLUE and its exact distribution, spending nothing.
    pub(super) fn estimate(
        &mut self,
        target: CubeRef,
        query: Vec<f64>,
        measure: &Measure,
        text: String,
        span: Span,
    ) -> Result<Output, EvalError> {
        let (estimate, posterior) = self.posterior_of(&target, &query, measure, span)?;
        let credible95 = posterior.credible_interval(ninety_five());
        Ok(Output::Estimate(EstimateResult {
            text,
            query,
            estimate: estimate.value,
            variance: estimate.variance,
            credible95,
            method: match posterior.noise.method() {
                exact::Method::Fft { .. } => "fft".into(),
                exact::Method::MonteCarlo { .. } => "monte carlo".into(),
                exact::Method::Normal => "normal (Gaussian answers only: exact)".into(),
                exact::Method::Degenerate => "exact (no noise)".into(),
            },
            error_bound: posterior.error_bound(),
        }))
    }

    /// `PROB`: a posterior probability, spending nothing.
    pub(super) fn prob(
        &mut self,
        target: CubeRef,
        query: Vec<f64>,
        measure: &Measure,
        text: String,
        event: Event,
        span: Span,
    ) -> Result<Output, EvalError> {
        let (_, posterior) = self.posterior_of(&target, &query, measure, span)?;
        // Every distance into the tail: to a stated relative error, or a bound (stats::tail).
        let (reported, event) = match event {
            Event::Greater(x) => (posterior.greater(x), format!("> {x}")),
            Event::Less(x) => (posterior.less(x), format!("< {x}")),
            Event::Between(a, b) => (posterior.between(a, b), format!("between {a} and {b}")),
        };
        Ok(Output::Prob(ProbResult {
            text,
            query,
            event,
            probability: reported.value(),
            error_bound: reported.absolute_error(),
            relative_error: reported.relative_error(),
            bound: match reported {
                exact::Reported::Value { .. } => None,
                exact::Reported::Below(_) => Some(Bound::Upper),
                exact::Reported::Above(_) => Some(Bound::Lower),
            },
        }))
    }

    /// The report of table `i`'s cube; with its history (H, alpha, S, y) when `history`.
    pub(super) fn table_cube_report(&self, i: usize, with_history: bool) -> CubeReport {
        let entry = &self.entries[i];
        let cube = entry
            .cube
            .as_ref()
            .expect("the checker found the table's cube");
        let history = self.ledgers.get(entry.ledger).history();
        let budgets: Vec<f64> = history
            .cell_spent()
            .unwrap_or_default()
            .iter()
            .map(|b| b.to_f64().unwrap_or(f64::NAN))
            .collect();
        let measurements = evidence(entry, history, &Measure::Rows);
        CubeReport {
            table: Some(entry.name.clone()),
            declaration: Some(cube.declaration()),
            cell_names: (0..cube.cells()).map(|j| cube.cell_name(j)).collect(),
            cells: cube.cells(),
            measurements: measurements.len(),
            spent: history.spent().to_f64().unwrap_or(f64::NAN),
            budgets,
            total: history.total(),
            neighbours: history.neighbours(),
            pair: pair_report(history, &|j| cube.cell_name(j)),
            history: with_history.then(|| dense_rows(cube.cells(), &measurements)),
            carried: None,
        }
    }

    fn cube_report(&self) -> CubeReport {
        let cube = self
            .cube
            .as_ref()
            .expect("the checker found a cube, or CUBE made one");
        let history = cube.ledger.history();
        CubeReport {
            table: None,
            declaration: None,
            cell_names: (0..cube.cells).map(teaching_name).collect(),
            cells: cube.cells,
            measurements: history.releases().len(),
            budgets: history
                .cell_spent()
                .unwrap_or_default()
                .iter()
                .map(|b| b.to_f64().unwrap_or(f64::NAN))
                .collect(),
            spent: history.spent().to_f64().unwrap_or(f64::NAN),
            total: history.total(),
            neighbours: history.neighbours(),
            pair: pair_report(history, &teaching_name),
            history: None,
            carried: None,
        }
    }

    /// The BLUE of `query` from the history of the teaching cube or of a table's cube, and
    /// the exact distribution of its error.
    fn posterior_of(
        &self,
        target: &CubeRef,
        query: &[f64],
        measure: &Measure,
        span: Span,
    ) -> Result<(blue::Estimate, exact::Posterior), EvalError> {
        match target {
            CubeRef::Teaching => {
                let cube = self
                    .cube
                    .as_ref()
                    .expect("the checker found a cube, or CUBE made one");
                posterior(cube.cells, &cube.history(), query, &teaching_name, span)
            }
            CubeRef::Table(table) => {
                let entry = &self.entries[self.index(table)];
                let history = self.ledgers.get(entry.ledger).history();
                table_posterior(entry, history, query, measure, span)
            }
        }
    }
}

/// How releases with a row over the cube a ledger declares (`current`, read again over the
/// entry's table: another session may have declared it) carry over to a new cube: spread
/// over its cells when it refines `current`, else charged in full.
fn carry_to(current: &CubeDecl, entry: &Entry, cube: &Cube) -> Carry {
    let from = current.spec.clone();
    let old = restore_cube(Some(current), &entry.table, &entry.name, read_as(entry));
    match old.ok().flatten().and_then(|old| cube.refinement_of(&old)) {
        Some(parents) => Carry::Refine { from, parents },
        None => Carry::Full { from },
    }
}

/// What happens to the releases made over the cube before, in words.
fn carried_words(carry: &Carry, releases: usize) -> String {
    match carry {
        Carry::Refine { from, .. } => format!(
            "refines {from}: its {releases} release(s) with a row keep their costs and stay evidence, each spread over the new cells it covers"
        ),
        Carry::Full { from } => format!(
            "cuts across {from}: its {releases} release(s) with a row are now charged in full, their epsilon on every cell (and pair), as releases made before any cube; a cube that refines it (every cut and value kept, dimensions added) would keep their costs per cell"
        ),
    }
}

/// Under `replace` with a cube: the costliest pair of cells, named.
pub(super) fn pair_report(history: &History, name: &dyn Fn(usize) -> String) -> Option<PairReport> {
    let w = history.worst_pair().filter(|w| !w.cost.is_zero())?;
    Some(PairReport {
        first: name(w.cells.0),
        second: name(w.cells.1),
        cost: w.cost,
        exact: w.exact,
        lower: w.lower,
        before_cube: w.before_cube,
    })
}

/// Makes `entry`'s cube the one its ledger declares, built over the entry's own columns.
pub(super) fn sync_cube(
    entry: &mut Entry,
    declared: Option<&CubeDecl>,
    span: Span,
) -> Result<(), EvalError> {
    if declared.map(|c| &c.spec) != entry.cube.as_ref().map(Cube::declaration).as_ref() {
        entry.cube = restore_cube(declared, &entry.table, &entry.name, read_as(entry))
            .map_err(|message| EvalError::CubeUnusable { message, span })?;
    }
    Ok(())
}

/// The BLUE of `query` over a table's cube from its history.
pub(super) fn table_posterior(
    entry: &Entry,
    history: &History,
    query: &[f64],
    measure: &Measure,
    span: Span,
) -> Result<(blue::Estimate, exact::Posterior), EvalError> {
    let cube = entry
        .cube
        .as_ref()
        .expect("the checker found the table's cube");
    let name = |j: usize| format!("[{}]", cube.cell_name(j));
    let evidence = evidence(entry, history, measure);
    posterior(cube.cells(), &evidence, query, &name, span).map_err(|e| match e {
        EvalError::NotEstimable { cells, span } if measure != &Measure::Rows => {
            EvalError::NotEstimable {
                cells: format!("{cells}; only releases of the {measure} are evidence about it"),
                span,
            }
        }
        other => other,
    })
}

/// The evidence of a table's cube about one measure (its rows, or a column's clamped sum):
/// its answered Laplace and Gaussian releases of that measure about the content now loaded (answers about
/// an earlier content of the file would bias it), each with its row over the cells. A count
/// or sum released before the cube was declared is evidence too when its condition is a
/// union of the cells (its row is found again from its statement); it still charges every
/// cell, as it did when it was released.
pub(super) fn evidence(entry: &Entry, history: &History, measure: &Measure) -> Vec<Measurement> {
    let Some(cube) = &entry.cube else {
        return Vec::new();
    };
    let prefix = format!("{}|", entry.key_prefix());
    history
        .releases()
        .iter()
        .zip(history.noise_variances())
        .filter(|(r, _)| &r.measure == measure && r.key.starts_with(&prefix))
        .filter_map(|(r, sigma2)| {
            let row = if r.row.is_empty() {
                row_from_statement(entry, cube, &r.statement, measure)?
            } else {
                r.row.to_cells()
            };
            measurement(r, sigma2, &row)
        })
        .collect()
}

/// The row over `cube`'s cells of a count or sum of `measure` recorded without one (before
/// the cube was declared), found again from its statement when its condition is a union of
/// the cells. Only a count is evidence about rows, and only a sum (or a `MEAN`'s sum part,
/// recorded as the statement followed by ` (sum)`) about sums: a ledger written before
/// releases named their measure records a sum as if it measured rows.
fn row_from_statement(
    entry: &Entry,
    cube: &Cube,
    statement: &str,
    measure: &Measure,
) -> Option<Vec<(usize, Decimal)>> {
    let text = match measure {
        Measure::Rows => statement,
        Measure::Sum { .. } => statement.strip_suffix(" (sum)").unwrap_or(statement),
        Measure::Valued { .. } | Measure::Statistic { .. } => return None,
    };
    let statements = crate::syntax::parse_script(text).ok()?;
    match (&statements.first()?.kind, measure) {
        (StatementKind::Count(q), Measure::Rows) => {
            check::row_of(q, &entry.table, &entry.name, cube)
        }
        (StatementKind::Sum(q), Measure::Sum { .. }) => {
            check::sum_row_of(q, &entry.table, &entry.name, cube)
        }
        _ => None,
    }
}

/// The BLUE of `query` over a table's cube from its history, and the scales of its error
/// (Laplace `c_i = |a_i| S_i / alpha_i`, normal `d_j = |a_j| sigma_j`), without building the
/// distribution (for the tails of `WITHIN`).
pub(super) fn table_error(
    entry: &Entry,
    history: &History,
    query: &[f64],
    span: Span,
) -> Result<(blue::Estimate, exact::Scales), EvalError> {
    let cube = entry
        .cube
        .as_ref()
        .expect("the checker found the table's cube");
    let name = |j: usize| format!("[{}]", cube.cell_name(j));
    let evidence = evidence(entry, history, &Measure::Rows);
    let (b, estimate) = blue_of(cube.cells(), &evidence, query, &name, span)?;
    let scales = exact::scales_of(&b.noise_terms(&estimate.weights)).map_err(|e| {
        EvalError::NotEstimable {
            cells: e.to_string(),
            span,
        }
    })?;
    Ok((estimate, scales))
}

/// A BLUE: its value and variance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Estimated {
    /// The estimate.
    pub(super) value: f64,
    /// Its variance.
    pub(super) variance: f64,
}

/// The BLUEs of several unions of cells from one history, and the joint law of their errors.
pub(super) struct UnionEstimates {
    /// One per union, in order.
    pub(super) estimates: Vec<Estimated>,
    /// Their errors `A N`, ready to be drawn.
    pub(super) joint: JointError,
    /// The history's evidence they come from: the released answers, with their rows.
    pub(super) evidence: Vec<Measurement>,
}

/// The BLUE of the count of each union of cells of a table's cube, from its history (one
/// factorisation for all), and the joint law of their errors: free post-processing.
pub(super) fn blue_of_table(
    entry: &Entry,
    history: &History,
    unions: &[Vec<usize>],
    span: Span,
) -> Result<UnionEstimates, EvalError> {
    let cube = entry
        .cube
        .as_ref()
        .expect("the checker found the table's cube");
    let name = |j: usize| format!("[{}]", cube.cell_name(j));
    let evidence = evidence(entry, history, &Measure::Rows);
    let fail = |message: String| EvalError::NotEstimable {
        cells: message,
        span,
    };
    let b = blue::Blue::new(cube.cells(), &evidence).map_err(|e| fail(e.to_string()))?;
    let found: Vec<blue::Estimate> = unions
        .iter()
        .map(|cells| {
            let mut query = vec![0.0; cube.cells()];
            for &j in cells {
                query[j] = 1.0;
            }
            b.estimate(&query).map_err(|e| match e {
                blue::BlueError::NotEstimable(n) => fail(lacking(&n, &name)),
                other => fail(other.to_string()),
            })
        })
        .collect::<Result<_, _>>()?;
    // Every release's noise scale and law, as the noise terms of any estimate carry them.
    let noises: Vec<(f64, exact::Law)> = b
        .noise_terms(&vec![0.0; evidence.len()])
        .iter()
        .map(|t| (t.scale, t.law))
        .collect();
    let weights: Vec<Vec<f64>> = found.iter().map(|e| e.weights.clone()).collect();
    Ok(UnionEstimates {
        estimates: found
            .iter()
            .map(|e| Estimated {
                value: e.value,
                variance: e.variance,
            })
            .collect(),
        joint: JointError::new(&weights, &noises),
        evidence,
    })
}

/// The BLUE of `query` from `history` over `cells` cells (Xiao and Xiong 2012, section 3), or why
/// the history cannot give it.
fn blue_of(
    cells: usize,
    history: &[Measurement],
    query: &[f64],
    name: &dyn Fn(usize) -> String,
    span: Span,
) -> Result<(blue::Blue, blue::Estimate), EvalError> {
    let fail = |message: String| EvalError::NotEstimable {
        cells: message,
        span,
    };
    let b = blue::Blue::new(cells, history).map_err(|e| fail(e.to_string()))?;
    let estimate = b.estimate(query).map_err(|e| match e {
        blue::BlueError::NotEstimable(n) => fail(lacking(&n, name)),
        other => fail(other.to_string()),
    })?;
    Ok((b, estimate))
}

/// The BLUE of `query` from `history` over `cells` cells and the exact distribution of its
/// error (Xiao and Xiong 2012, sections 3-4). Post-processing: nothing is spent. A Monte Carlo,
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
    let (b, estimate) = blue_of(cells, history, query, name, span)?;
    let mut rng = ChaCha20Rng::seed_from_u64(0);
    let noise = exact::NoiseSum::auto(&b.noise_terms(&estimate.weights), &mut rng)
        .map_err(|e| fail(e.to_string()))?;
    let posterior = exact::Posterior {
        estimate: estimate.value,
        noise,
    };
    Ok((estimate, posterior))
}

/// Cells of the teaching cube are x1, x2, ... (cells counted from 0).
fn teaching_name(cell: usize) -> String {
    format!("x{}", cell + 1)
}

/// How an entry's table read its data: whether with a header row, and the clauses of its
/// delimiter and decimal mark other than the default ([`crate::data::CsvFormat::clauses`]).
pub(super) fn read_as(entry: &Entry) -> (bool, String) {
    (entry.header, entry.format.clauses())
}

/// Restores the cube a ledger declares over a table just loaded, read as `read_as` says.
pub(super) fn restore_cube(
    decl: Option<&CubeDecl>,
    table: &crate::data::Source,
    name: &str,
    (header, reading): (bool, String),
) -> Result<Option<Cube>, String> {
    let Some(CubeDecl {
        spec,
        cells,
        header: declared_header,
        reading: declared_reading,
    }) = decl
    else {
        return Ok(None);
    };
    if (*declared_header, declared_reading) != (header, &reading) {
        let read = |h: bool, r: &str| {
            let header = if h {
                "with a header row"
            } else {
                "with NO HEADER"
            };
            match r {
                "" => header.to_string(),
                r => format!("{header} and {r}"),
            }
        };
        return Err(format!(
            "{spec} was declared over this data read {}; `{name}` reads it {}, whose rows differ",
            read(*declared_header, declared_reading),
            read(header, &reading)
        ));
    }
    let cube = read_cube(spec, table, name)?;
    if cube.cells() == *cells {
        Ok(Some(cube))
    } else {
        Err(format!("{spec} reads back as {}", cube.declaration()))
    }
}

/// A cube a ledger records, built again over a table.
fn read_cube(spec: &str, table: &crate::data::Source, name: &str) -> Result<Cube, String> {
    let statements = crate::syntax::parse_script(spec).map_err(|e| e.to_string())?;
    match statements.first().map(|s| &s.kind) {
        Some(StatementKind::CubeBy { dims }) => {
            let cube =
                check::build_cube(dims, table, name, Span::default()).map_err(|e| e.to_string())?;
            if cube.declaration() == spec {
                Ok(cube)
            } else {
                Err(format!("{spec} reads back as {}", cube.declaration()))
            }
        }
        _ => Err(format!("{spec} is not a cube declaration")),
    }
}

/// Checks every refinement a ledger records against the declarations, read over a table:
/// the map of new cells to old must be the one the declarations give, or the releases
/// spread by it could be charged less than they cost.
pub(super) fn check_refinements(
    history: &History,
    table: &crate::data::Source,
    name: &str,
) -> Result<(), String> {
    for r in history.refinements() {
        let old = read_cube(&r.from, table, name)?;
        let new = read_cube(&r.to, table, name)?;
        if new.refinement_of(&old).as_deref() != Some(r.parents.as_slice()) {
            return Err(format!(
                "the ledger records {} as refining {} cell by cell, which the two declarations do not give over this table's columns (read with other types than when the cubes were declared, or a ledger dpq did not write)",
                r.to, r.from
            ));
        }
    }
    Ok(())
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
