//! Checking: resolves a parsed statement against the session's tables and validates its parameters.

mod foregone;
mod reading;
mod sql;
pub mod statistics;

use crate::ast::{
    self, Accuracy, BinnedStat, ChooseEps, CountQuery, CountTerm, CubeDim, Expr, Histogram, Ident,
    Literal, Number, ProbEvent, Query, Statement, StatementKind, SumQuery, SumTarget,
};
use crate::cube::{self, Cube, CubeError, Dim, NotUnion};
use crate::data::{self, ColumnType, Predicate, Source, Value};
use crate::error::CheckError;
use crate::plan::{
    Bin, BinnedPlan, BinnedStatistic, ChoosePlan, CountPlan, CubeRef, Eps, Event, HistogramPlan,
    Mechanism, Plan, PlotPlan, PriorPlan, SimMetric, SimulatePlan, Spend, SumPlan,
};
use crate::privacy::{Measure, Neighbours};
use crate::span::Span;
use crate::stats::noise::ExactEpsilon;
use crate::stats::simulate;
use crate::stats::{Epsilon, Positive, Probability};
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;
use std::path::{Path, PathBuf};

/// What the checker may ask of the session: public facts only (names and schemas).
pub trait Catalog {
    /// The current table's name.
    fn current_table(&self) -> Option<&str>;
    /// A loaded table by its exact name.
    fn table(&self, name: &str) -> Option<&Source>;
    /// The names of the loaded tables, in load order.
    fn table_names(&self) -> Vec<String>;
    /// The cube declared on a table, if any.
    fn table_cube(&self, table: &str) -> Option<&Cube>;
    /// How neighbouring tables differ for a table.
    fn table_neighbours(&self, table: &str) -> Neighbours;
    /// How a table's budget composes: in epsilon, or in rho.
    fn table_accounting(&self, table: &str) -> crate::privacy::Accounting;
    /// The most rows one privacy unit has in a table: 1 without a unit (a row is the unit).
    /// Every sensitivity over the table is this many times a row's.
    fn table_unit_rows(&self, table: &str) -> Decimal;
    /// The column a table's privacy unit is, if one was declared.
    fn table_unit(&self, table: &str) -> Option<String>;
    /// The public domain declared for a column of a table (`COLUMNS`, or a served dataset's
    /// schema); every value of its type without one.
    fn column_domain(&self, table: &str, column: &str) -> data::Domain;
    /// How neighbouring tables differ for a cube (a table's, or the teaching cube).
    fn cube_neighbours(&self, cube: &CubeRef) -> Neighbours;
    /// The cube that coefficient lists such as `(1, 0, 1, 0)` speak of (the last declared,
    /// teaching or the current table's), and its number of cells.
    fn focus(&self) -> Option<(CubeRef, usize)>;
}

pub use crate::privacy::MAX_UNIT_ROWS;

/// The most counts a `COMPARE ACCOUNTING` workload may have.
const MAX_WORKLOAD: u64 = 1_000_000;

/// The most cells a teaching cube may have.
pub const MAX_CUBE_CELLS: usize = 10_000;

/// `PRIVACY UNIT col MAX ROWS k`: the bound is required, a whole number in range.
fn check_unit(
    u: &crate::ast::UnitClause,
    header: bool,
    reading: String,
) -> Result<crate::privacy::Unit, CheckError> {
    let k = u
        .max_rows
        .as_ref()
        .ok_or_else(|| CheckError::UnitUnbounded {
            column: u.column.to_string(),
            span: u.span,
        })?;
    let max_rows = k
        .text
        .parse::<u32>()
        .ok()
        .filter(|k| (1..=MAX_UNIT_ROWS).contains(k))
        .ok_or_else(|| CheckError::UnitBound {
            text: k.text.clone(),
            span: k.span,
        })?;
    Ok(crate::privacy::Unit {
        column: u.column.name.clone(),
        max_rows,
        header,
        reading,
    })
}

/// `COLUMNS (...)`: a declared schema for a CSV file. Names are distinct (with `NO HEADER`
/// they are the positional `c1`, `c2`, ...), and a domain fits its column's type: `BETWEEN`
/// on numbers (low end first), `IN` on text.
fn check_columns(
    clause: &ast::ColumnsClause,
    path: &str,
    database: Option<ast::Engine>,
    no_header: bool,
) -> Result<Vec<data::Declared>, CheckError> {
    if let Some(source_kind) = reading::source_kind(path, database) {
        return Err(CheckError::ColumnsNotCsv {
            source_kind,
            span: clause.span,
        });
    }
    let mut declared: Vec<data::Declared> = Vec::with_capacity(clause.columns.len());
    for c in &clause.columns {
        let name = &c.name.name;
        if declared.iter().any(|d| d.name == *name) {
            return Err(CheckError::DeclaredTwice {
                column: name.clone(),
                span: c.name.span,
            });
        }
        if no_header && !is_positional_name(name) {
            return Err(CheckError::DeclaredNoHeader {
                column: name.clone(),
                span: c.name.span,
            });
        }
        let ty = match c.ty {
            ast::DeclaredType::Integer => ColumnType::Integer,
            ast::DeclaredType::Float => ColumnType::Float,
            ast::DeclaredType::Text => ColumnType::Text,
            ast::DeclaredType::Boolean => ColumnType::Boolean,
        };
        let domain = match &c.domain {
            None => data::Domain::Any,
            Some(ast::DeclaredDomain::Between(lo, hi)) => {
                if !matches!(ty, ColumnType::Integer | ColumnType::Float) {
                    return Err(domain_type(c, ty, "BETWEEN", "integer and float"));
                }
                let bound = |n: &Number| {
                    exact_decimal(n).ok_or_else(|| CheckError::NumberOutOfRange {
                        text: n.text.clone(),
                        span: n.span,
                    })
                };
                let (min, max) = (bound(lo)?, bound(hi)?);
                if min > max {
                    return Err(CheckError::DomainEmpty {
                        column: name.clone(),
                        span: c.span,
                    });
                }
                data::Domain::Range { min, max }
            }
            Some(ast::DeclaredDomain::In(values)) => {
                if ty != ColumnType::Text {
                    return Err(domain_type(c, ty, "IN", "text"));
                }
                data::Domain::Values(values.iter().map(|v| v.value.clone()).collect())
            }
        };
        declared.push(data::Declared {
            name: name.clone(),
            ty,
            domain,
        });
    }
    Ok(declared)
}

fn domain_type(
    c: &ast::ColumnDecl,
    column_type: ColumnType,
    domain: &'static str,
    fits: &'static str,
) -> CheckError {
    CheckError::DomainType {
        column: c.name.name.clone(),
        column_type,
        domain,
        fits,
        span: c.span,
    }
}

/// Whether `name` is one `NO HEADER` gives a column: `c1`, `c2`, ... (no leading zero).
fn is_positional_name(name: &str) -> bool {
    name.strip_prefix('c').is_some_and(|digits| {
        !digits.is_empty() && !digits.starts_with('0') && digits.bytes().all(|b| b.is_ascii_digit())
    })
}

/// Checks `stmt` against `catalog`, giving a plan that can run without further checks.
pub fn check(stmt: &Statement, catalog: &dyn Catalog) -> Result<Plan, CheckError> {
    check_kind(&stmt.kind, stmt.span, catalog)
}

fn check_kind(kind: &StatementKind, span: Span, catalog: &dyn Catalog) -> Result<Plan, CheckError> {
    Ok(match kind {
        StatementKind::Load {
            path,
            database,
            alias,
            no_header,
            delimiter,
            decimal,
            neighbours,
            unit,
            columns,
        } => {
            let format = reading::check_format(
                &path.value,
                database.as_ref().map(|d| d.engine),
                delimiter.as_ref(),
                decimal.as_ref(),
            )?;
            let unit_clause = unit.as_ref();
            let unit = unit
                .as_ref()
                .map(|u| check_unit(u, !no_header, format.clauses()))
                .transpose()?;
            let columns = columns
                .as_ref()
                .map(|c| {
                    check_columns(
                        c,
                        &path.value,
                        database.as_ref().map(|d| d.engine),
                        *no_header,
                    )
                })
                .transpose()?;
            if let (Some(declared), Some(u)) = (&columns, unit_clause) {
                if !declared.iter().any(|d| d.name == u.column.name) {
                    return Err(CheckError::UnitNotDeclared {
                        column: u.column.name.clone(),
                        span: u.span,
                    });
                }
            }
            let mut asked = neighbours.as_ref().map(model).transpose()?;
            if unit.is_some() {
                // A unit is added or removed with all its rows: the only model it has.
                match (asked, neighbours) {
                    (Some(Neighbours::Replace), Some(m)) => {
                        return Err(CheckError::UnitModel { span: m.span })
                    }
                    _ => asked = Some(Neighbours::AddRemove),
                }
            }
            Plan::Load {
                path: PathBuf::from(&path.value),
                database: database.clone(),
                path_span: path.span,
                header: !no_header,
                format,
                neighbours: asked,
                unit,
                columns,
                name: match (alias, database) {
                    (Some(a), _) => a.name.clone(),
                    (None, Some(d)) => default_table_name(Path::new(
                        &d.table.last().map(|t| t.name.clone()).unwrap_or_default(),
                    )),
                    (None, None) => default_table_name(Path::new(&path.value)),
                },
            }
        }
        StatementKind::Use { table } => Plan::Use {
            table: resolve_table(Some(table), catalog, span)?,
        },
        StatementKind::ShowTables => Plan::ShowTables,
        StatementKind::ShowCube => Plan::ShowCube {
            target: catalog.focus().ok_or(CheckError::NoCube { span })?.0,
        },
        StatementKind::CubeBy { dims } => check_cube(dims, catalog, span)?,
        StatementKind::ShowBudget => Plan::ShowBudget {
            table: resolve_table(None, catalog, span)?,
        },
        StatementKind::ShowHistory => Plan::ShowHistory {
            table: resolve_table(None, catalog, span)?,
        },
        StatementKind::Describe { table } => Plan::Describe {
            table: resolve_table(table.as_ref(), catalog, span)?,
        },
        StatementKind::SetBudget { total, rho } => {
            let table = resolve_table(None, catalog, span)?;
            let total = exact_positive(total).ok_or_else(|| CheckError::NotPositive {
                what: "a budget",
                text: total.text.clone(),
                span: total.span,
            })?;
            let accounting = if *rho {
                crate::privacy::Accounting::Zcdp
            } else {
                crate::privacy::Accounting::Pure
            };
            Plan::SetBudget {
                table,
                total,
                accounting,
            }
        }
        StatementKind::SetDelta { delta } => {
            if !(delta.value > 0.0 && delta.value < 1.0) {
                return Err(CheckError::NotApplicable {
                    message: "DELTA is a probability strictly between 0 and 1, such as 1e-6",
                    span: delta.span,
                });
            }
            Plan::SetDelta { delta: delta.value }
        }
        StatementKind::SetSeed { seed } => Plan::SetSeed {
            seed: seed
                .text
                .parse::<u64>()
                .map_err(|_| CheckError::InvalidSeed {
                    text: seed.text.clone(),
                    span: seed.span,
                })?,
        },
        StatementKind::Count(q) => Plan::Count(Box::new(check_count(q, catalog, span)?)),
        StatementKind::Histogram(h) => {
            Plan::Histogram(Box::new(check_histogram(h, catalog, span)?))
        }
        StatementKind::Sum(q) => Plan::Sum(Box::new(check_sum(q, catalog, span)?)),
        StatementKind::CompareSmooth(l) => Plan::CompareSmooth(check_lab_smooth(l)?),
        StatementKind::Statistic(q) => {
            Plan::Statistic(Box::new(statistics::check_statistic(q, catalog, span)?))
        }
        StatementKind::Binned { stat, column } => {
            Plan::Binned(Box::new(check_binned(stat, column, kind, catalog, span)?))
        }
        StatementKind::ChooseEps(c) if c.rho => Plan::ChooseRho(check_choose(c, span)?),
        StatementKind::ChooseEps(c) => Plan::ChooseEps(check_choose(c, span)?),
        StatementKind::Cube { cells, neighbours } => {
            let n = cells
                .text
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=MAX_CUBE_CELLS).contains(n))
                .ok_or_else(|| CheckError::InvalidCells {
                    text: cells.text.clone(),
                    limit: MAX_CUBE_CELLS,
                    span: cells.span,
                })?;
            Plan::Cube {
                cells: n,
                // The paper's model: a teaching cube follows Xiao and Xiong unless told.
                neighbours: neighbours
                    .as_ref()
                    .map(model)
                    .transpose()?
                    .unwrap_or(Neighbours::AddRemove),
            }
        }
        StatementKind::Observe { row, value, eps } => {
            let (target, coefficients) = cube_vector(row, catalog, span)?;
            if target != CubeRef::Teaching {
                return Err(CheckError::NotApplicable {
                    message: "OBSERVE enters measurements into a teaching cube (CUBE n); a table's history holds only its released answers",
                    span,
                });
            }
            let value_f = finite(value)?;
            let invalid_eps = || CheckError::InvalidEpsilon {
                text: eps.text.clone(),
                span: eps.span,
            };
            let eps_exact = exact_positive(eps).ok_or_else(invalid_eps)?;
            Epsilon::new(eps.value).map_err(|_| invalid_eps())?;
            // The coefficients exactly, as decimals, for the budget's arithmetic.
            let mut exact = Vec::new();
            for (j, (n, c)) in row.iter().zip(&coefficients).enumerate() {
                let d = exact_decimal(n).ok_or_else(|| CheckError::NumberOutOfRange {
                    text: n.text.clone(),
                    span: n.span,
                })?;
                if *c != 0.0 && !d.is_zero() {
                    exact.push((j, d));
                }
            }
            if exact.is_empty() {
                return Err(CheckError::ZeroQuery { span });
            }
            // Lemma 2.1, under the teaching cube's neighbour model.
            let model = catalog.cube_neighbours(&target);
            let s = crate::privacy::sensitivity(model, &exact, coefficients.len());
            if s.is_zero() {
                return Err(CheckError::PublicAnswer { span });
            }
            if s == Decimal::MAX {
                return Err(CheckError::NumberOutOfRange {
                    text: "the measurement's sensitivity".into(),
                    span,
                });
            }
            Plan::Observe {
                row: exact,
                value: value_f,
                eps_exact,
                statement: format!("{};", kind),
            }
        }
        StatementKind::Estimate { query } => {
            let (target, coefficients, measure) = check_query(query, catalog, span)?;
            Plan::Estimate {
                target,
                query: coefficients,
                measure,
                text: query.to_string(),
            }
        }
        StatementKind::Prob { query, event } => {
            let (target, coefficients, measure) = check_query(query, catalog, span)?;
            Plan::Prob {
                target,
                query: coefficients,
                measure,
                text: query.to_string(),
                event: match event {
                    ProbEvent::Greater(x) => Event::Greater(finite(x)?),
                    ProbEvent::Less(x) => Event::Less(finite(x)?),
                    ProbEvent::Between(a, b) => Event::Between(finite(a)?, finite(b)?),
                },
            }
        }
        StatementKind::Simulate(sim) => Plan::Simulate(check_simulate(sim)?),
        StatementKind::OutOfRange { n, eps, at } => {
            let n_rows = whole(n, "N", 1, MAX_ROWS)?;
            Plan::OutOfRange {
                n: n_rows,
                eps: epsilon(eps)?,
                at: at.as_ref().map(|a| whole(a, "AT", 0, n_rows)).transpose()?,
            }
        }
        StatementKind::CompareNoise { eps, sensitivity } => Plan::CompareNoise {
            eps: limited(eps, "epsilons", MAX_LIST)?
                .iter()
                .map(lab_epsilon)
                .collect::<Result<_, _>>()?,
            sensitivity: match sensitivity {
                None => Positive::new(1.0).expect("1 is positive"),
                Some(d) => {
                    let positive = Positive::new(d.value).map_err(|_| CheckError::NotPositive {
                        what: "a sensitivity",
                        text: d.text.clone(),
                        span: d.span,
                    })?;
                    within(d, "a sensitivity", LAB_SENSITIVITY.0, LAB_SENSITIVITY.1)?;
                    positive
                }
            },
        },
        StatementKind::CompareAccounting {
            queries,
            requirement,
            plot,
        } => Plan::CompareAccounting {
            queries: limited(queries, "numbers of counts", MAX_LIST)?
                .iter()
                .map(|k| {
                    k.text
                        .parse::<u64>()
                        .ok()
                        .filter(|k| (1..=MAX_WORKLOAD).contains(k))
                        .ok_or(CheckError::NotApplicable {
                            message: "a number of counts is a whole number from 1 to 1000000",
                            span: k.span,
                        })
                })
                .collect::<Result<_, _>>()?,
            requirement: check_choose(requirement, span)?,
            plot: plot
                .as_ref()
                .map(|p| match p.metric {
                    Some(_) => Err(CheckError::NotApplicable {
                        message: "COMPARE ACCOUNTING plots epsilon against the number of counts: PLOT 'file.svg'",
                        span: p.path.span,
                    }),
                    None => Ok(PlotPlan {
                        path: PathBuf::from(&p.path.value),
                        span: p.path.span,
                        metric: SimMetric::Both,
                    }),
                })
                .transpose()?,
            statement: kind.to_string(),
        },
        StatementKind::Explain(inner) => Plan::Explain {
            plan: Box::new(check_kind(inner, span, catalog)?),
            statement: shown_statement(inner, catalog, span),
        },
        StatementKind::Select(select) => {
            let (table, native) = sql::translate(select, catalog, span)?;
            check_kind(&native, span, &sql::From::new(catalog, &table))?
        }
    })
}

/// A statement as a result repeats it: a PostgreSQL connection string, which can hold a
/// password, is replaced by `'(connection string)'`; a `SELECT` is shown as the dpq statement
/// it is, after the table it asks.
fn shown_statement(kind: &StatementKind, catalog: &dyn Catalog, span: Span) -> String {
    match kind {
        StatementKind::Select(select) => match sql::translate(select, catalog, span) {
            Ok((table, native)) => {
                format!("USE {}; {native};", crate::ast::Ident { name: table, span })
            }
            Err(_) => format!("{kind};"),
        },
        StatementKind::Load {
            database: Some(_), ..
        } => {
            let mut hidden = kind.clone();
            if let StatementKind::Load { path, .. } = &mut hidden {
                path.value = "(connection string)".to_string();
            }
            format!("{hidden};")
        }
        _ => format!("{kind};"),
    }
}

/// The largest `n` of `OUT OF RANGE` (any count of rows a table could hold).
const MAX_ROWS: u64 = 1 << 53;

/// The most values in one list of `SIMULATE` or `COMPARE NOISE`.
const MAX_LIST: usize = 100;

/// The most parameter points of one `SIMULATE`.
const MAX_POINTS: usize = 1_000;

/// The most runs of one `SIMULATE`, over all its points (about three minutes on two cores).
const MAX_TOTAL_RUNS: u64 = 1_000_000_000;

/// The runs per point when `RUNS` is absent: the paper's 100,000.
pub const DEFAULT_RUNS: u64 = 100_000;

fn check_simulate(sim: &ast::Simulate) -> Result<SimulatePlan, CheckError> {
    let n = limited(&sim.n, "sizes", MAX_LIST)?
        .iter()
        .map(|n| whole(n, "N", 1, simulate::MAX_N))
        .collect::<Result<Vec<_>, _>>()?;
    let p = limited(&sim.p, "probabilities", MAX_LIST)?
        .iter()
        .map(|p| probability(p, false, "the predicate probability p"))
        .collect::<Result<Vec<_>, _>>()?;
    let eps = limited(&sim.noise, "noise levels", MAX_LIST)?
        .iter()
        .map(|e| {
            if !sim.std {
                return lab_epsilon(e);
            }
            // Paper 1, section 2: the noise's standard deviation is sqrt(2)/eps.
            let bad = || CheckError::NotPositive {
                what: "a noise standard deviation",
                text: e.text.clone(),
                span: e.span,
            };
            let std = Positive::new(e.value).map_err(|_| bad())?;
            // sqrt(2)/std within the epsilons above.
            within(
                e,
                "a noise standard deviation",
                std::f64::consts::SQRT_2 / LAB_EPS.1,
                std::f64::consts::SQRT_2 / LAB_EPS.0,
            )?;
            Epsilon::new(std::f64::consts::SQRT_2 / std.get()).map_err(|_| bad())
        })
        .collect::<Result<Vec<_>, _>>()?;
    let runs = match &sim.runs {
        // Two runs at least: one has no spread, so no Monte Carlo interval.
        Some(r) => whole(r, "RUNS", 2, simulate::MAX_RUNS)?,
        None => DEFAULT_RUNS,
    };
    let points = n.len() * p.len() * eps.len();
    let first = &sim.n[0];
    if points > MAX_POINTS {
        return Err(CheckError::OutOfBounds {
            what: "the number of points (N x P x EPS)",
            bounds: format!("at most {MAX_POINTS}"),
            text: points.to_string(),
            span: first.span,
        });
    }
    if (points as u64).saturating_mul(runs) > MAX_TOTAL_RUNS {
        return Err(CheckError::OutOfBounds {
            what: "the runs over all points",
            bounds: format!("at most {MAX_TOTAL_RUNS}"),
            text: (points as u64).saturating_mul(runs).to_string(),
            span: sim.runs.as_ref().map_or(first.span, |r| r.span),
        });
    }
    let plot = sim.plot.as_ref().map(|plot| PlotPlan {
        path: PathBuf::from(&plot.path.value),
        span: plot.path.span,
        metric: match plot.metric {
            None => SimMetric::Both,
            Some(ast::PlotMetric::Error) => SimMetric::Error,
            Some(ast::PlotMetric::Improvement) => SimMetric::Improvement,
        },
    });
    Ok(SimulatePlan {
        n,
        p,
        eps,
        std: sim.std,
        runs,
        plot,
    })
}

/// A list of at most `limit` values.
fn limited<'a>(
    list: &'a [Number],
    what: &'static str,
    limit: usize,
) -> Result<&'a [Number], CheckError> {
    if list.len() > limit {
        return Err(CheckError::OutOfBounds {
            what,
            bounds: format!("at most {limit} in a list"),
            text: list.len().to_string(),
            span: list[limit].span,
        });
    }
    Ok(list)
}

/// A whole number in `lo..=hi`, written as digits (read exactly) or as `1e3` (read as an
/// `f64`, which must then be exact: below 2^53).
fn whole(n: &Number, what: &'static str, lo: u64, hi: u64) -> Result<u64, CheckError> {
    let digits = n.text.trim_start_matches('+');
    let value = if digits.bytes().all(|b| b.is_ascii_digit()) {
        digits.parse::<u64>().ok()
    } else {
        let v = n.value;
        (v.is_finite() && v.fract() == 0.0 && (0.0..=9_007_199_254_740_992.0).contains(&v))
            .then_some(v as u64)
    };
    value
        .filter(|v| (lo..=hi).contains(v))
        .ok_or_else(|| CheckError::OutOfBounds {
            what,
            bounds: format!("a whole number from {lo} to {hi}"),
            text: n.text.clone(),
            span: n.span,
        })
}

/// A number in `[lo, hi]`: the lab's formulas are meaningful and printable there.
fn within(n: &Number, what: &'static str, lo: f64, hi: f64) -> Result<f64, CheckError> {
    if n.value.is_finite() && (lo..=hi).contains(&n.value) {
        Ok(n.value)
    } else {
        Err(CheckError::OutOfBounds {
            what,
            bounds: format!(
                "a number from {} to {}",
                crate::output::short_number(lo),
                crate::output::short_number(hi)
            ),
            text: n.text.clone(),
            span: n.span,
        })
    }
}

/// Epsilons of `SIMULATE` and `COMPARE NOISE`: noise scales from 1e-3 to 1e9 (beyond, the
/// simulated errors overflow their sums of squares, and the staircase's inner width
/// underflows).
const LAB_EPS: (f64, f64) = (1e-9, 700.0);

/// Sensitivities of `COMPARE NOISE`.
const LAB_SENSITIVITY: (f64, f64) = (1e-9, 1e9);

/// The largest `N` of a simulated order statistic in `COMPARE NOISE`.
const LAB_ORDER_N: u64 = 1_000_000;

/// The least epsilon of `COMPARE NOISE SHARE | MIN | MEDIAN | MAX`, whose smooth
/// sensitivities search data sets out to distances near `gamma ln(n) / eps`.
const LAB_SMOOTH_EPS: f64 = 0.01;

/// `COMPARE NOISE COUNT | SHARE | MIN | MEDIAN | MAX | QUERIES ...`.
fn check_lab_smooth(l: &ast::LabSmooth) -> Result<crate::plan::LabSmoothPlan, CheckError> {
    use crate::plan::LabSmoothPlan;
    let eps_list = |least: f64| -> Result<Vec<Epsilon>, CheckError> {
        limited(&l.eps, "epsilons", MAX_LIST)?
            .iter()
            .map(|e| {
                within(e, "a compared epsilon", least, LAB_EPS.1)?;
                epsilon(e)
            })
            .collect()
    };
    Ok(match &l.function {
        ast::LabFunction::Count => LabSmoothPlan::Count {
            eps: eps_list(LAB_EPS.0)?,
        },
        ast::LabFunction::Share { n, m } => LabSmoothPlan::Share {
            n: limited(n, "sizes", MAX_LIST)?
                .iter()
                .map(|n| whole(n, "N", 1, 1 << 40))
                .collect::<Result<_, _>>()?,
            m: limited(m, "fractions", MAX_LIST)?
                .iter()
                .map(|m| within(m, "M, a fraction of N", 0.0, 1.0))
                .collect::<Result<_, _>>()?,
            eps: eps_list(LAB_SMOOTH_EPS)?,
        },
        ast::LabFunction::Order { kind, n, law } => LabSmoothPlan::Order {
            kind: *kind,
            n: limited(n, "sizes", MAX_LIST)?
                .iter()
                .map(|n| whole(n, "N", 1, LAB_ORDER_N))
                .collect::<Result<_, _>>()?,
            beta: match law {
                ast::LabLaw::Uniform => None,
                ast::LabLaw::Beta(a, b) => Some((
                    within(a, "a shape of the beta law", 0.01, 1000.0)?,
                    within(b, "a shape of the beta law", 0.01, 1000.0)?,
                )),
            },
            eps: eps_list(LAB_SMOOTH_EPS)?,
        },
        ast::LabFunction::Queries { sensitivity, at } => LabSmoothPlan::Queries {
            sensitivity: match sensitivity.as_slice() {
                [a, b] => (
                    within(a, "a sensitivity", LAB_SENSITIVITY.0, LAB_SENSITIVITY.1)?,
                    within(b, "a sensitivity", LAB_SENSITIVITY.0, LAB_SENSITIVITY.1)?,
                ),
                _ => {
                    return Err(CheckError::OutOfBounds {
                        what: "QUERIES SENSITIVITY",
                        bounds: "two sensitivities, one per query".into(),
                        text: sensitivity.len().to_string(),
                        span: sensitivity.first().map_or(Span::new(0, 0), |n| n.span),
                    })
                }
            },
            eps: {
                let e = l.eps.first().expect("QUERIES has an epsilon");
                within(e, "a compared epsilon", LAB_SMOOTH_EPS, LAB_EPS.1)?;
                epsilon(e)?
            },
            at: limited(at, "levels", MAX_LIST)?
                .iter()
                .map(|a| {
                    Probability::new(a.value).map_err(|_| CheckError::OutOfBounds {
                        what: "a confidence level",
                        bounds: "a number between 0 and 1".into(),
                        text: a.text.clone(),
                        span: a.span,
                    })
                })
                .collect::<Result<_, _>>()?,
        },
    })
}

fn lab_epsilon(e: &Number) -> Result<Epsilon, CheckError> {
    let eps = epsilon(e)?;
    within(e, "a simulated or compared epsilon", LAB_EPS.0, LAB_EPS.1)?;
    Ok(eps)
}

/// A positive, finite epsilon (the lab's formulas need no exact decimal).
fn epsilon(e: &Number) -> Result<Epsilon, CheckError> {
    Epsilon::new(e.value).map_err(|_| CheckError::InvalidEpsilon {
        text: e.text.clone(),
        span: e.span,
    })
}

/// `CUBE BY col (cuts or values), ...` over the current table.
fn check_cube(dims: &[CubeDim], catalog: &dyn Catalog, span: Span) -> Result<Plan, CheckError> {
    let table_name = resolve_table(None, catalog, span)?;
    let table = catalog
        .table(&table_name)
        .ok_or(CheckError::NoCurrentTable { span })?;
    let cube = build_cube(dims, table, &table_name, span)?;
    Ok(Plan::CubeBy {
        table: table_name,
        spec: cube.declaration(),
        cube,
    })
}

/// The cube a `CUBE BY` declaration makes over `table` (also used to restore the cube a
/// ledger records).
pub fn build_cube(
    dims: &[CubeDim],
    table: &Source,
    table_name: &str,
    span: Span,
) -> Result<Cube, CheckError> {
    let mut built = Vec::with_capacity(dims.len());
    for d in dims {
        let (column, ty) = resolve_column(&d.column, table, table_name)?;
        let mut numbers = Vec::new();
        let mut values = Vec::new();
        for lit in &d.points {
            match typed_value(lit, &d.column, ty)? {
                Value::Number(x) => numbers.push(x),
                v => values.push(v),
            }
        }
        built.push(Dim {
            column,
            name: d.column.name.clone(),
            kind: cube::dim_kind(ty, numbers, values),
            texts: d.points.iter().map(ToString::to_string).collect(),
        });
    }
    let bad = |message: String, span: Span| CheckError::BadCube { message, span };
    Cube::new(built).map_err(|e| match e {
        CubeError::CutsNotIncreasing(d, i) => bad(
            format!("the cuts of `{}` must increase", dims[d].column.name),
            dims[d].points[i].span(),
        ),
        CubeError::DuplicateValue(d, i) => bad(
            format!("`{}` lists this value twice", dims[d].column.name),
            dims[d].points[i].span(),
        ),
        CubeError::DuplicateColumn(d) => bad(
            format!("`{}` is a dimension twice", dims[d].column.name),
            dims[d].column.span,
        ),
        CubeError::TooManyCells => bad(
            format!(
                "this cube has more than {} cells (each dimension adds a cell for missing values, and listed values one for the others)",
                cube::MAX_CELLS
            ),
            span,
        ),
    })
}

/// A query of ESTIMATE or PROB: coefficients over the focused cube, counts over the current
/// table's cube (any real coefficients: nothing is released), or a clamped sum over a union
/// of its cells; and what it measures in each cell.
fn check_query(
    query: &Query,
    catalog: &dyn Catalog,
    span: Span,
) -> Result<(CubeRef, Vec<f64>, Measure), CheckError> {
    match query {
        Query::Vector(v) => {
            cube_vector(v, catalog, span).map(|(target, row)| (target, row, Measure::Rows))
        }
        Query::Sum(t) => check_summed(t, catalog, span),
        Query::Linear(terms) => {
            let (table_name, table, cube) =
                table_with_cube(catalog, "estimating a count from the history", span)?;
            let (_, row) = compile_terms(terms, table, &table_name, Some(cube))?;
            let mut dense = vec![0.0; cube.cells()];
            for (cell, c) in row {
                dense[cell] = c.to_f64().unwrap_or(f64::NAN);
            }
            if dense.iter().all(|c| *c == 0.0) {
                return Err(CheckError::EmptyQuery { span });
            }
            Ok((CubeRef::Table(table_name), dense, Measure::Rows))
        }
    }
}

/// The current table, its data and its cube, which `what` needs.
fn table_with_cube<'c>(
    catalog: &'c dyn Catalog,
    what: &'static str,
    span: Span,
) -> Result<(String, &'c Source, &'c Cube), CheckError> {
    let table_name = resolve_table(None, catalog, span)?;
    let table = catalog
        .table(&table_name)
        .ok_or(CheckError::NoCurrentTable { span })?;
    let cube = catalog
        .table_cube(&table_name)
        .ok_or_else(|| CheckError::NeedsCube {
            what,
            table: table_name.clone(),
            span,
        })?;
    Ok((table_name, table, cube))
}

/// `SUM col CLAMP (lo, hi) [WHERE p]` of ESTIMATE or PROB: the indicator of the cells the
/// condition covers, which must be a union of cells, over per-cell sums of the column
/// clamped to the same bounds as the releases it is estimated from.
fn check_summed(
    t: &SumTarget,
    catalog: &dyn Catalog,
    span: Span,
) -> Result<(CubeRef, Vec<f64>, Measure), CheckError> {
    let (table_name, table, cube) =
        table_with_cube(catalog, "estimating a sum from the history", span)?;
    let (column, _, lo, hi) = summed_column(table, &table_name, &t.column, &t.lo, &t.hi)?;
    let mut dense = vec![1.0; cube.cells()];
    if let Some(e) = &t.filter {
        let predicate = check_expr(e, table, &table_name)?;
        let cells = cube
            .cells_of(&predicate)
            .map_err(|n| not_union(n, e, cube, table, &table_name))?;
        for (d, inside) in dense.iter_mut().zip(cells) {
            *d = if inside { 1.0 } else { 0.0 };
        }
    }
    if dense.iter().all(|c| *c == 0.0) {
        return Err(CheckError::EmptyQuery { span });
    }
    let measure = Measure::Sum {
        column: table.column_name(column).to_string(),
        lo: lo.normalize(),
        hi: hi.normalize(),
    };
    Ok((CubeRef::Table(table_name), dense, measure))
}

/// The row over `cube`'s cells of a count statement recorded before the cube was declared,
/// when its conditions are a union of the cells (then its answer is evidence about them).
pub fn row_of(
    q: &CountQuery,
    table: &Source,
    table_name: &str,
    cube: &Cube,
) -> Option<Vec<(usize, Decimal)>> {
    compile_terms(&q.terms, table, table_name, Some(cube))
        .ok()
        .map(|(_, row)| row)
        .filter(|row| !row.is_empty())
}

/// A count's terms and row over the cube, or, for a plain count the cube cannot express (a
/// column not among its dimensions, a condition splitting a cell), its terms, no row and why,
/// in words. A linear combination must be a union of cells: its sensitivity is read from its row.
#[allow(clippy::type_complexity)]
fn count_row(
    q: &CountQuery,
    table: &Source,
    table_name: &str,
    cube: Option<&Cube>,
    plain: bool,
) -> Result<
    (
        Vec<(Decimal, Predicate)>,
        Vec<(usize, Decimal)>,
        Option<String>,
    ),
    CheckError,
> {
    match compile_terms(&q.terms, table, table_name, cube) {
        Ok((terms, row)) => Ok((terms, row, None)),
        Err(e @ (CheckError::NotDimension { .. } | CheckError::SplitsCell { .. })) if plain => {
            let (terms, row) = compile_terms(&q.terms, table, table_name, None)?;
            let why = match &e {
                CheckError::NotDimension { column, .. } => {
                    format!("`{column}` is not a dimension of the cube")
                }
                // The cell's name, from the declaration, and not the condition: its values
                // are shown only where the statement is.
                CheckError::SplitsCell { cell, .. } => {
                    format!("its condition splits the cell [{cell}]")
                }
                _ => e.to_string(),
            };
            Ok((terms, row, Some(why)))
        }
        Err(e) => Err(e),
    }
}

/// The counts of a linear query, checked, with their exact coefficients; and, over a cube,
/// the query's row: each cell's coefficient is the sum of the coefficients of the counts
/// whose predicate holds on it.
#[allow(clippy::type_complexity)]
fn compile_terms(
    terms: &[CountTerm],
    table: &Source,
    table_name: &str,
    cube: Option<&Cube>,
) -> Result<(Vec<(Decimal, Predicate)>, Vec<(usize, Decimal)>), CheckError> {
    let mut checked = Vec::with_capacity(terms.len());
    let mut dense = cube.map(|c| vec![Decimal::ZERO; c.cells()]);
    for t in terms {
        let predicate = check_expr(&t.predicate, table, table_name)?;
        let mut c = match &t.coefficient {
            None => Decimal::ONE,
            Some(n) => exact_decimal(n).ok_or_else(|| CheckError::NumberOutOfRange {
                text: n.text.clone(),
                span: n.span,
            })?,
        };
        if t.minus {
            c = -c;
        }
        if let (Some(cube), Some(dense)) = (cube, dense.as_mut()) {
            let cells = cube
                .cells_of(&predicate)
                .map_err(|e| not_union(e, &t.predicate, cube, table, table_name))?;
            for (j, inside) in cells.into_iter().enumerate() {
                if inside {
                    dense[j] =
                        dense[j]
                            .checked_add(c)
                            .ok_or_else(|| CheckError::NumberOutOfRange {
                                text: c.to_string(),
                                span: t.predicate.first_column().span,
                            })?;
                }
            }
        }
        checked.push((c, predicate));
    }
    let row = dense
        .map(|d| {
            d.into_iter()
                .enumerate()
                .filter(|(_, c)| !c.is_zero())
                .collect()
        })
        .unwrap_or_default();
    Ok((checked, row))
}

/// The error for a predicate that is not a union of the cube's cells, pointing at the
/// condition that splits a cell.
fn not_union(
    e: NotUnion,
    expr: &Expr,
    cube: &Cube,
    table: &Source,
    table_name: &str,
) -> CheckError {
    let mut atoms = Vec::new();
    expr_atoms(expr, &mut atoms);
    match e {
        NotUnion::NotDimension { column } => {
            let ident = atoms
                .iter()
                .map(|a| a.first_column())
                .find(|c| table.column_index(&c.name) == Some(column))
                .unwrap_or_else(|| expr.first_column());
            CheckError::NotDimension {
                column: ident.name.clone(),
                table: table_name.to_string(),
                cube: cube.declaration(),
                span: ident.span,
            }
        }
        NotUnion::Splits {
            atom,
            cell,
            fix,
            declaration,
            ..
        } => {
            let a = atoms.get(atom).copied().unwrap_or(expr);
            CheckError::SplitsCell {
                condition: a.to_string(),
                cell: cube.cell_name(cell),
                fix,
                declaration,
                span: atom_span(a),
            }
        }
    }
}

/// The conditions of a predicate, left to right (as `check_expr` keeps them).
fn expr_atoms<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match e {
        Expr::And(a, b) | Expr::Or(a, b) => {
            expr_atoms(a, out);
            expr_atoms(b, out);
        }
        Expr::Not(a) => expr_atoms(a, out),
        atom => out.push(atom),
    }
}

fn atom_span(atom: &Expr) -> Span {
    let start = atom.first_column().span.start;
    let end = match atom {
        // `30 > age` reads as `age < 30`: its value is written first.
        Expr::Compare { value, .. } if value.span().start < start => {
            return Span::new(value.span().start, atom.first_column().span.end);
        }
        Expr::Compare { value, .. } => value.span().end,
        Expr::In { values, .. } => values.last().map_or(start + 1, |v| v.span().end + 1),
        Expr::Between { high, .. } => high.span().end,
        _ => start + 1,
    };
    Span::new(start, end)
}

/// A number that must be finite.
fn finite(n: &Number) -> Result<f64, CheckError> {
    if n.value.is_finite() {
        Ok(n.value)
    } else {
        Err(CheckError::NumberOutOfRange {
            text: n.text.clone(),
            span: n.span,
        })
    }
}

/// A list of coefficients over the focused cube's cells: one finite number per cell.
fn cube_vector(
    numbers: &[Number],
    catalog: &dyn Catalog,
    span: Span,
) -> Result<(CubeRef, Vec<f64>), CheckError> {
    let (target, cells) = catalog.focus().ok_or(CheckError::NoCube { span })?;
    if numbers.len() != cells {
        return Err(CheckError::VectorLength {
            expected: cells,
            found: numbers.len(),
            span: Span::new(
                numbers.first().map_or(span.start, |n| n.span.start),
                numbers.last().map_or(span.end, |n| n.span.end),
            ),
        });
    }
    Ok((
        target,
        numbers.iter().map(finite).collect::<Result<_, _>>()?,
    ))
}

/// `PRIOR p=q [N size]`: the prior fraction, and the public size the Binomial prior needs (the
/// table's row count when it is public, under `replace`; the size given, under `add_remove`).
fn check_prior(
    p: &ast::Prior,
    applies: bool,
    neighbours: Neighbours,
) -> Result<PriorPlan, CheckError> {
    if !applies {
        return Err(CheckError::NotApplicable {
            message: "PRIOR applies to a single COUNT released WITH EPS",
            span: p.p.span,
        });
    }
    let fraction = probability(&p.p, false, "the prior p")?;
    let n = match (&p.n, neighbours) {
        (None, Neighbours::Replace) => None,
        (None, Neighbours::AddRemove) => {
            return Err(CheckError::NeedsPublicSize { span: p.p.span });
        }
        (Some(n), Neighbours::Replace) => {
            return Err(CheckError::SizeIsPublic { span: n.span });
        }
        (Some(n), Neighbours::AddRemove) => Some(whole(n, "N", 1, MAX_ROWS)?),
    };
    Ok(PriorPlan { p: fraction, n })
}

/// A neighbour model named in a statement.
fn model(name: &Ident) -> Result<Neighbours, CheckError> {
    Neighbours::from_name(&name.name).ok_or_else(|| CheckError::UnknownNeighbours {
        name: name.name.clone(),
        span: name.span,
    })
}

fn check_count(q: &CountQuery, catalog: &dyn Catalog, span: Span) -> Result<CountPlan, CheckError> {
    let table_name = resolve_table(None, catalog, span)?;
    let neighbours = catalog.table_neighbours(&table_name);
    let table = catalog
        .table(&table_name)
        .ok_or(CheckError::NoCurrentTable { span })?;
    let cube = catalog.table_cube(&table_name);
    let mut notes = Vec::new();
    for t in &q.terms {
        notes.extend(release_expr(&t.predicate, table, &table_name, catalog)?.1);
    }
    let plain = matches!(q.terms.as_slice(), [t] if !t.minus && t.coefficient.is_none());
    if !plain && cube.is_none() {
        return Err(CheckError::NeedsCube {
            what: "a linear combination of counts",
            table: table_name,
            span,
        });
    }
    let (terms, row, outside) = count_row(q, table, &table_name, cube, plain)?;
    // A plain count the cube cannot express is answered outside it: charged in full, on every
    // cell (and pair), as a count made before the cube was declared.
    let cube_row = if outside.is_some() { None } else { cube };
    let sensitivity = match cube_row {
        None => Decimal::ONE,
        Some(cube) => {
            if row.is_empty() {
                return Err(CheckError::EmptyQuery { span });
            }
            // The noise is added to an integer answer on its grid, summed exactly in integers:
            // whole coefficients only, for each count and so for each cell.
            if let Some((c, t)) = terms
                .iter()
                .zip(&q.terms)
                .map(|((c, _), t)| (c, t))
                .find(|(c, _)| !c.fract().is_zero())
            {
                return Err(CheckError::NotWhole {
                    cell: format!("COUNT WHERE {}", t.predicate),
                    coefficient: c.normalize().to_string(),
                    span,
                });
            }
            if let Some((cell, c)) = row.iter().find(|(_, c)| !c.fract().is_zero()) {
                return Err(CheckError::NotWhole {
                    cell: format!("the cell {}", cube.cell_name(*cell)),
                    coefficient: c.normalize().to_string(),
                    span,
                });
            }
            // Lemma 2.1: over disjoint cells, the sensitivity of a linear query is its largest
            // absolute coefficient when a row is added or removed; when one is replaced, a unit
            // moves between two cells, and it is the largest difference of two coefficients.
            let s = crate::privacy::sensitivity(neighbours, &row, cube.cells());
            if s.is_zero() {
                return Err(CheckError::PublicAnswer { span });
            }
            if s == Decimal::MAX {
                return Err(CheckError::NumberOutOfRange {
                    text: "the query's sensitivity".into(),
                    span,
                });
            }
            s
        }
    };
    let sensitivity = unit_scaled(sensitivity, catalog.table_unit_rows(&table_name), span)?;
    let zcdp = catalog.table_accounting(&table_name) == crate::privacy::Accounting::Zcdp;
    if matches!(q.accuracy, Accuracy::Rho(_)) && !zcdp {
        return Err(CheckError::RhoNeedsZcdp {
            table: table_name,
            span,
        });
    }
    // On a zCDP table `WITHIN` spends the least rho, with Gaussian noise, unless a MECHANISM
    // asks for another noise (charged eps^2 / 2).
    let gaussian = matches!(q.accuracy, Accuracy::Rho(_))
        || (zcdp && matches!(q.accuracy, Accuracy::Within { .. }) && q.mechanism.is_none());
    let spend = match &q.accuracy {
        Accuracy::Eps(eps) => Spend::Eps(check_eps(eps)?),
        Accuracy::Rho(rho) => Spend::Eps(check_rho(rho)?),
        Accuracy::Within {
            half_width,
            at,
            at_percent,
        } => Spend::Within {
            half_width: Positive::new(half_width.value).map_err(|_| CheckError::NotPositive {
                what: "the half-width",
                text: half_width.text.clone(),
                span: half_width.span,
            })?,
            confidence: probability(at, *at_percent, "the confidence level")?,
        },
    };
    if let (true, Some(p)) = (gaussian, &q.prior) {
        return Err(CheckError::NotApplicable {
            message: "PRIOR assumes Laplace noise (Naldi and D'Acquisto 2014, eq. 8); release WITH EPS for a Bayes estimate",
            span: p.p.span,
        });
    }
    let prior = q
        .prior
        .as_ref()
        .map(|p| check_prior(p, plain && matches!(spend, Spend::Eps(_)), neighbours))
        .transpose()?;
    let mechanism = match &q.mechanism {
        None if gaussian => Mechanism::Gaussian,
        Some(m) if gaussian => return Err(rho_with_mechanism(m.span)),
        None => Mechanism::Laplace,
        Some(m) => {
            let mech = mechanism(m)?;
            if mech == Mechanism::Smooth {
                return Err(smooth_not_for(m.span));
            }
            if mech != Mechanism::Laplace && !plain {
                return Err(CheckError::NotApplicable {
                    message: "a linear combination of counts is released with Laplace noise",
                    span: m.span,
                });
            }
            if mech == Mechanism::Staircase {
                if q.prior.is_some() {
                    return Err(CheckError::NotApplicable {
                        message: "PRIOR assumes Laplace noise (Naldi and D'Acquisto 2014, eq. 8); release with MECHANISM laplace for a Bayes estimate",
                        span: m.span,
                    });
                }
                if !matches!(spend, Spend::Eps(_)) {
                    return Err(CheckError::NotApplicable {
                        message: "WITHIN chooses epsilon for Laplace noise; give WITH EPS for MECHANISM staircase",
                        span: m.span,
                    });
                }
            }
            mech
        }
    };
    let plot = q
        .plot
        .as_ref()
        .map(|plot| {
            if plot.metric.is_some() {
                return Err(CheckError::NotApplicable {
                    message: "PLOT ERROR and PLOT IMPROVEMENT apply to SIMULATE; a count plots its posterior: PLOT 'file.svg'",
                    span: plot.path.span,
                });
            }
            if prior.is_none() {
                return Err(CheckError::NotApplicable {
                    message: "PLOT draws the posterior of the true count, which needs PRIOR p=...",
                    span: plot.path.span,
                });
            }
            Ok(PlotPlan {
                path: PathBuf::from(&plot.path.value),
                span: plot.path.span,
                metric: SimMetric::Both,
            })
        })
        .transpose()?;
    let plain_key = plain.then(|| format!("count|{:?}", terms[0].1));
    let (query_key, release_key) = match cube_row {
        None => {
            let key = plain_key.clone().unwrap_or_default();
            (key.clone(), key)
        }
        Some(cube) => {
            let runs = crate::privacy::Row::from_cells(&row).unwrap_or_default();
            let cells = cube.cells();
            (
                format!("cells{cells}|{}", runs.cells_text()),
                format!("cells{cells}|{}", runs.key_text()),
            )
        }
    };
    Ok(CountPlan {
        query_key,
        release_key,
        plain_key: if cube_row.is_some() { plain_key } else { None },
        notes,
        statement: q.to_string(),
        table: table_name,
        terms,
        row,
        // The cube a count outside it was checked against: the ledger must still declare it.
        cube: cube.map(Cube::declaration),
        outside,
        sensitivity,
        neighbours,
        spend,
        prior,
        mechanism,
        plot,
    })
}

/// An epsilon: finite, positive, and exact as a decimal (budgets add exactly).
/// `HISTOGRAM [WHERE p] ...` and `COUNT [WHERE p] BY a, b ...`: over the table's cube, the
/// cells `p` selects (a union of cells), grouped by the dimensions named.
fn check_histogram(
    h: &Histogram,
    catalog: &dyn Catalog,
    span: Span,
) -> Result<HistogramPlan, CheckError> {
    let table_name = resolve_table(None, catalog, span)?;
    let table = catalog
        .table(&table_name)
        .ok_or(CheckError::NoCurrentTable { span })?;
    let Some(cube) = catalog.table_cube(&table_name) else {
        return Err(CheckError::NeedsCube {
            what: if h.by.is_some() {
                "COUNT ... BY"
            } else {
                "HISTOGRAM"
            },
            table: table_name,
            span,
        });
    };
    let within = match &h.filter {
        None => vec![true; cube.cells()],
        Some(expr) => {
            let (predicate, _) = release_expr(expr, table, &table_name, catalog)?;
            cube.cells_of(&predicate)
                .map_err(|e| not_union(e, expr, cube, table, &table_name))?
        }
    };
    let mut by = Vec::new();
    for name in h.by.iter().flatten() {
        let (column, _) = resolve_column(name, table, &table_name)?;
        let dim = cube
            .dim_of_column(column)
            .ok_or_else(|| CheckError::NotDimension {
                column: name.name.clone(),
                table: table_name.clone(),
                cube: cube.declaration(),
                span: name.span,
            })?;
        if by.contains(&dim) {
            return Err(CheckError::NotApplicable {
                message: "a dimension is named twice after BY",
                span: name.span,
            });
        }
        by.push(dim);
    }
    let groups = cube.groups(&by, &within);
    if groups.is_empty() {
        return Err(CheckError::EmptyQuery { span });
    }
    if h.rho && catalog.table_accounting(&table_name) != crate::privacy::Accounting::Zcdp {
        return Err(CheckError::RhoNeedsZcdp {
            table: table_name,
            span,
        });
    }
    let mechanism = match &h.mechanism {
        None if h.rho => Mechanism::Gaussian,
        Some(m) if h.rho => return Err(rho_with_mechanism(m.span)),
        None => Mechanism::Laplace,
        Some(m) => match mechanism(m)? {
            Mechanism::Staircase => {
                return Err(CheckError::NotApplicable {
                    message: "a histogram is released with laplace or geometric noise",
                    span: m.span,
                })
            }
            Mechanism::Smooth => return Err(smooth_not_for(m.span)),
            other => other,
        },
    };
    let plot = h
        .plot
        .as_ref()
        .map(|plot| match plot.metric {
            Some(_) => Err(CheckError::NotApplicable {
                message: "a histogram plots its bars: PLOT 'file.svg'",
                span: plot.path.span,
            }),
            None if groups.len() > crate::output::plot::MAX_BARS => Err(CheckError::TooManyBars {
                parts: groups.len(),
                span: plot.path.span,
            }),
            None => Ok(PlotPlan {
                path: PathBuf::from(&plot.path.value),
                span: plot.path.span,
                metric: SimMetric::Both,
            }),
        })
        .transpose()?;
    // The groups' cells, hashed: the key of a histogram over thousands of cells would
    // otherwise be as long as its cells, and each part keeps its own copy of it.
    let listing = groups
        .iter()
        .map(|(_, cells)| {
            cells
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect::<Vec<_>>()
        .join(";");
    let query_key = format!(
        "histogram|cells{}|{}",
        cube.cells(),
        &blake3::hash(listing.as_bytes()).to_hex()[..32]
    );
    Ok(HistogramPlan {
        table: table_name,
        grouped: h.by.is_some(),
        groups,
        cube: cube.declaration(),
        eps: if h.rho {
            check_rho(&h.eps)?
        } else {
            check_eps(&h.eps)?
        },
        mechanism,
        plot,
        statement: h.to_string(),
        query_key,
    })
}

/// `ESTIMATE MEDIAN col` and its kin: a numeric dimension of the current table's cube, its
/// bins, and the statistic's parameters.
fn check_binned(
    stat: &BinnedStat,
    column: &Ident,
    kind: &StatementKind,
    catalog: &dyn Catalog,
    span: Span,
) -> Result<BinnedPlan, CheckError> {
    let table_name = resolve_table(None, catalog, span)?;
    let table = catalog
        .table(&table_name)
        .ok_or(CheckError::NoCurrentTable { span })?;
    let Some(cube) = catalog.table_cube(&table_name) else {
        return Err(CheckError::NeedsCube {
            what: "a binned statistic",
            table: table_name,
            span,
        });
    };
    let (index, _) = resolve_column(column, table, &table_name)?;
    let not_dimension = || CheckError::NotDimension {
        column: column.name.clone(),
        table: table_name.clone(),
        cube: cube.declaration(),
        span: column.span,
    };
    let dim = cube.dim_of_column(index).ok_or_else(not_dimension)?;
    let bounds = cube.bin_bounds(dim).ok_or(CheckError::NotApplicable {
        message: "a binned statistic needs a dimension cut at numbers, not split by values",
        span: column.span,
    })?;
    let groups = cube.groups(&[dim], &vec![true; cube.cells()]);
    let bins = groups
        .into_iter()
        .zip(bounds)
        .map(|((name, cells), (lo, hi))| Bin {
            name,
            lo,
            hi,
            cells,
        })
        .collect();
    let stat = match stat {
        BinnedStat::Median => BinnedStatistic::Quantile(0.5),
        BinnedStat::Quantile(q) => {
            BinnedStatistic::Quantile(probability(q, false, "the quantile's level")?.get())
        }
        BinnedStat::Mean(lo, hi) => {
            let (lo, hi) = (finite(lo)?, finite(hi)?);
            if lo >= hi {
                return Err(CheckError::NotApplicable {
                    message: "CLAMP (lo, hi) needs lo < hi",
                    span,
                });
            }
            BinnedStatistic::Mean(lo, hi)
        }
    };
    Ok(BinnedPlan {
        table: table_name,
        column: column.name.clone(),
        stat,
        bins,
        statement: kind.to_string(),
    })
}

/// `SUM col CLAMP (lo, hi) [WHERE p] ...` and `MEAN ...`: a number column, bounds written in
/// the statement (never taken from the data), and the sum's sensitivity under the model.
fn check_sum(q: &SumQuery, catalog: &dyn Catalog, span: Span) -> Result<SumPlan, CheckError> {
    let table_name = resolve_table(None, catalog, span)?;
    let neighbours = catalog.table_neighbours(&table_name);
    let table = catalog
        .table(&table_name)
        .ok_or(CheckError::NoCurrentTable { span })?;
    let (column, integer, lo, hi) = summed_column(table, &table_name, &q.column, &q.lo, &q.hi)?;
    // A row added or removed moves the sum by its clamped value; a row replaced moves it from
    // one value to another, where a row outside the condition or without a value counts 0
    // (the measure says how, and the ledger computes a Gaussian sum's variance from it too).
    // A privacy unit of k rows moves it by k rows' worth.
    let unit_rows = catalog.table_unit_rows(&table_name);
    let measure = Measure::Sum {
        column: table.column_name(column).to_string(),
        lo,
        hi,
    };
    let sensitivity = unit_scaled(
        measure
            .sensitivity(neighbours)
            .filter(|s| *s < Decimal::MAX)
            .ok_or_else(|| CheckError::NumberOutOfRange {
                text: "the sum's sensitivity, max(hi, 0) - min(lo, 0)".into(),
                span: q.lo.span,
            })?,
        unit_rows,
        span,
    )?;
    let filter = q
        .filter
        .as_ref()
        .map(|e| release_expr(e, table, &table_name, catalog).map(|(p, _)| p))
        .transpose()?;
    if q.rho && catalog.table_accounting(&table_name) != crate::privacy::Accounting::Zcdp {
        return Err(CheckError::RhoNeedsZcdp {
            table: table_name,
            span,
        });
    }
    let mechanism = match &q.mechanism {
        None if q.rho => Mechanism::Gaussian,
        Some(m) if q.rho => return Err(rho_with_mechanism(m.span)),
        None => Mechanism::Laplace,
        Some(m) => match mechanism(m)? {
            Mechanism::Geometric if integer && sensitivity.fract().is_zero() => {
                Mechanism::Geometric
            }
            Mechanism::Laplace => Mechanism::Laplace,
            _ => return Err(CheckError::NotApplicable {
                message:
                    "a sum is released with laplace noise, or geometric noise on an integer column",
                span: m.span,
            }),
        },
    };
    let cube = catalog.table_cube(&table_name);
    let row = cube
        .and_then(|c| sum_row(c, filter.as_ref()))
        .unwrap_or_default();
    let query_key = format!(
        "{}|{}|{}|{}|{:?}",
        if q.mean { "mean" } else { "sum" },
        table.column_name(column),
        lo.normalize(),
        hi.normalize(),
        filter
    );
    Ok(SumPlan {
        table: table_name,
        mean: q.mean,
        column,
        // As the table names it: `SUM Income` and `SUM income` are one query, one measure.
        column_name: table.column_name(column).to_string(),
        integer,
        clamp: (lo.normalize(), hi.normalize()),
        filter,
        eps: if q.rho {
            check_rho(&q.eps)?
        } else {
            check_eps(&q.eps)?
        },
        mechanism,
        sensitivity: sensitivity.normalize(),
        count_sensitivity: unit_rows,
        neighbours,
        statement: q.to_string(),
        query_key,
        cube: cube.filter(|_| !row.is_empty()).map(Cube::declaration),
        row,
    })
}

/// The row over `cube`'s cells of a sum statement recorded before the cube was declared,
/// when its condition is a union of the cells.
pub fn sum_row_of(
    q: &SumQuery,
    table: &Source,
    table_name: &str,
    cube: &Cube,
) -> Option<Vec<(usize, Decimal)>> {
    let filter = match &q.filter {
        None => None,
        Some(e) => Some(check_expr(e, table, table_name).ok()?),
    };
    sum_row(cube, filter.as_ref())
}

/// The row over `cube`'s cells of a sum over the rows `filter` selects: 1 on each cell it
/// holds on, when it is a union of cells (every cell without a filter); `None` when it
/// splits a cell (the sum then charges every cell, and is evidence about none).
pub fn sum_row(cube: &Cube, filter: Option<&Predicate>) -> Option<Vec<(usize, Decimal)>> {
    let cells = match filter {
        None => vec![true; cube.cells()],
        Some(p) => cube.cells_of(p).ok()?,
    };
    let row: Vec<(usize, Decimal)> = cells
        .into_iter()
        .enumerate()
        .filter(|(_, inside)| *inside)
        .map(|(j, _)| (j, Decimal::ONE))
        .collect();
    (!row.is_empty()).then_some(row)
}

/// A summed column and its clamp, checked: the column's index, whether it holds integers
/// (then the bounds that matter are the whole numbers within), and the bounds, `lo < hi`.
fn summed_column(
    table: &Source,
    table_name: &str,
    column: &Ident,
    lo: &Number,
    hi: &Number,
) -> Result<(usize, bool, Decimal, Decimal), CheckError> {
    let (index, ty) = resolve_column(column, table, table_name)?;
    let integer = match ty {
        ColumnType::Integer => true,
        ColumnType::Float => false,
        _ => {
            return Err(CheckError::NotApplicable {
                message: "SUM and MEAN take a number column",
                span: column.span,
            })
        }
    };
    let bound = |n: &Number| {
        exact_decimal(n).ok_or_else(|| CheckError::NumberOutOfRange {
            text: n.text.clone(),
            span: n.span,
        })
    };
    let (mut low, mut high) = (bound(lo)?, bound(hi)?);
    if integer {
        // Whole values: the bounds that matter are the whole numbers within.
        (low, high) = (low.ceil(), high.floor());
    }
    if low >= high {
        return Err(CheckError::NotApplicable {
            message: "CLAMP (lo, hi) needs lo < hi (whole numbers apart, on an integer column)",
            span: lo.span,
        });
    }
    Ok((index, integer, low, high))
}

/// A row's sensitivity times the most rows of a privacy unit; past a decimal's range it is
/// refused.
fn unit_scaled(s: Decimal, unit_rows: Decimal, span: Span) -> Result<Decimal, CheckError> {
    s.checked_mul(unit_rows)
        .filter(|s| *s < Decimal::MAX)
        .ok_or_else(|| CheckError::NumberOutOfRange {
            text: "the query's sensitivity".into(),
            span,
        })
}

fn check_eps(eps: &Number) -> Result<Eps, CheckError> {
    let invalid = || CheckError::InvalidEpsilon {
        text: eps.text.clone(),
        span: eps.span,
    };
    let exact = exact_positive(eps).ok_or_else(|| {
        if eps.value.is_finite() && eps.value > 0.0 {
            CheckError::InexactEpsilon {
                text: eps.text.clone(),
                span: eps.span,
            }
        } else {
            invalid()
        }
    })?;
    Ok(Eps {
        value: Epsilon::new(eps.value).map_err(|_| invalid())?,
        noise: ExactEpsilon::new(exact).map_err(|_| invalid())?,
        exact,
    })
}

/// A rho: finite, positive, and exact as a decimal (budgets add exactly).
fn check_rho(rho: &Number) -> Result<Eps, CheckError> {
    check_eps(rho).map_err(|_| CheckError::InvalidRho {
        text: rho.text.clone(),
        span: rho.span,
    })
}

/// `MECHANISM m` beside `WITH RHO`, which chooses Gaussian noise itself.
fn rho_with_mechanism(span: Span) -> CheckError {
    CheckError::NotApplicable {
        message: "WITH RHO draws Gaussian noise; MECHANISM chooses the noise of WITH EPS",
        span,
    }
}

/// `MECHANISM smooth` on a count, histogram or sum.
fn smooth_not_for(span: Span) -> CheckError {
    CheckError::NotApplicable {
        message: "smooth noise is for SHARE, MIN, MEDIAN and MAX (WITH EPS e NOISE smooth); a count's smooth sensitivity is its global one, so it never pays",
        span,
    }
}

fn mechanism(m: &Ident) -> Result<Mechanism, CheckError> {
    match Mechanism::from_name(&m.name) {
        Some(Mechanism::Gaussian) => Err(CheckError::NotApplicable {
            message: "Gaussian noise is asked WITH RHO r (on a table that accounts in zCDP), not with MECHANISM",
            span: m.span,
        }),
        Some(mech) => Ok(mech),
        None => Err(CheckError::UnknownMechanism {
            name: m.name.clone(),
            span: m.span,
        }),
    }
}

fn check_choose(c: &ChooseEps, span: Span) -> Result<ChoosePlan, CheckError> {
    let confidence = probability(&c.at, c.at_percent, "the confidence level")?;
    let positive = |n: &Number, scale: f64, what: &'static str| {
        Positive::new(n.value * scale).map_err(|_| CheckError::NotPositive {
            what,
            text: n.text.clone(),
            span: n.span,
        })
    };
    if c.within_percent {
        let fraction = positive(&c.within, 0.01, "the half-width")?;
        let count = c
            .for_count
            .as_ref()
            .ok_or(CheckError::RelativeWithoutCount { span })?;
        Ok(ChoosePlan::Relative {
            fraction,
            confidence,
            count: positive(count, 1.0, "the assumed count")?,
        })
    } else {
        if let Some(count) = &c.for_count {
            return Err(CheckError::CountWithAbsolute { span: count.span });
        }
        Ok(ChoosePlan::Absolute {
            half_width: positive(&c.within, 1.0, "the half-width")?,
            confidence,
        })
    }
}

fn probability(n: &Number, percent: bool, what: &'static str) -> Result<Probability, CheckError> {
    let value = if percent { n.value / 100.0 } else { n.value };
    Probability::new(value).map_err(|_| CheckError::InvalidProbability {
        what,
        text: if percent {
            format!("{}%", n.text)
        } else {
            n.text.clone()
        },
        span: n.span,
    })
}

/// The literal as an exact decimal, when it is finite, greater than 0, and representable
/// without rounding (budgets add exactly: at most 28 decimal places).
fn exact_positive(n: &Number) -> Option<Decimal> {
    if !(n.value.is_finite() && n.value > 0.0) {
        return None;
    }
    exact_decimal(n).filter(|d| *d > Decimal::ZERO)
}

/// The literal as an exact decimal, when it is finite and representable without rounding.
fn exact_decimal(n: &Number) -> Option<Decimal> {
    if !n.value.is_finite() {
        return None;
    }
    let text = n.text.trim_start_matches('+');
    let d = if text.contains(['e', 'E']) {
        let d = Decimal::from_scientific(text).ok()?;
        // from_scientific may round; the value must come back to the same float.
        let same = d.to_string().parse::<f64>().ok() == Some(n.value);
        same.then_some(d)?
    } else {
        Decimal::from_str_exact(text).ok()?
    };
    Some(d)
}

fn resolve_table(
    name: Option<&Ident>,
    catalog: &dyn Catalog,
    span: Span,
) -> Result<String, CheckError> {
    match name {
        None => catalog
            .current_table()
            .map(str::to_string)
            .ok_or(CheckError::NoCurrentTable { span }),
        Some(ident) => {
            let names = catalog.table_names();
            if names.contains(&ident.name) {
                return Ok(ident.name.clone());
            }
            let folded: Vec<&String> = names
                .iter()
                .filter(|n| n.eq_ignore_ascii_case(&ident.name))
                .collect();
            match folded.as_slice() {
                [one] => Ok((*one).clone()),
                _ => Err(CheckError::UnknownTable {
                    name: ident.name.clone(),
                    known: names,
                    span: ident.span,
                }),
            }
        }
    }
}

/// A condition of a release: resolved, and refused when no row can meet it ([`foregone`]),
/// before anything is spent; with a note when every value the schema allows meets it.
fn release_expr(
    expr: &Expr,
    table: &Source,
    table_name: &str,
    catalog: &dyn Catalog,
) -> Result<(Predicate, Option<String>), CheckError> {
    let predicate = check_expr(expr, table, table_name)?;
    let mut atoms = Vec::new();
    expr_atoms(expr, &mut atoms);
    let spans: Vec<Span> = atoms.iter().map(|a| atom_span(a)).collect();
    let start = spans.iter().map(|s| s.start).min().unwrap_or_default();
    let end = spans.iter().map(|s| s.end).max().unwrap_or_default();
    let span = Span::new(start, end.max(start + 1));
    let note = foregone::check(
        &predicate,
        &expr.to_string(),
        table,
        table_name,
        catalog,
        span,
    )?;
    Ok((predicate, note))
}

fn check_expr(expr: &Expr, table: &Source, table_name: &str) -> Result<Predicate, CheckError> {
    Ok(match expr {
        Expr::And(a, b) => Predicate::And(
            Box::new(check_expr(a, table, table_name)?),
            Box::new(check_expr(b, table, table_name)?),
        ),
        Expr::Or(a, b) => Predicate::Or(
            Box::new(check_expr(a, table, table_name)?),
            Box::new(check_expr(b, table, table_name)?),
        ),
        Expr::Not(a) => Predicate::Not(Box::new(check_expr(a, table, table_name)?)),
        Expr::Compare { column, op, value } => {
            let (index, ty) = resolve_column(column, table, table_name)?;
            Predicate::Compare {
                column: index,
                op: cmp_op(*op),
                value: typed_value(value, column, ty)?,
            }
        }
        Expr::In {
            column,
            negated,
            values,
        } => {
            let (index, ty) = resolve_column(column, table, table_name)?;
            let p = Predicate::In {
                column: index,
                values: values
                    .iter()
                    .map(|v| typed_value(v, column, ty))
                    .collect::<Result<_, _>>()?,
            };
            negate_if(*negated, p)
        }
        Expr::Between {
            column,
            negated,
            low,
            high,
        } => {
            let (index, ty) = resolve_column(column, table, table_name)?;
            let p = Predicate::Between {
                column: index,
                low: typed_value(low, column, ty)?,
                high: typed_value(high, column, ty)?,
            };
            negate_if(*negated, p)
        }
    })
}

fn negate_if(negated: bool, p: Predicate) -> Predicate {
    if negated {
        Predicate::Not(Box::new(p))
    } else {
        p
    }
}

/// The index and type of the column `column` names, or the error naming the table's columns.
fn resolve_column(
    column: &Ident,
    table: &Source,
    table_name: &str,
) -> Result<(usize, ColumnType), CheckError> {
    let index = table
        .column_index(&column.name)
        .ok_or_else(|| CheckError::UnknownColumn {
            column: column.name.clone(),
            table: table_name.to_string(),
            known: table.schema().into_iter().map(|(n, _)| n).collect(),
            span: column.span,
        })?;
    Ok((index, table.column_type(index)))
}

fn typed_value(lit: &Literal, column: &Ident, ty: ColumnType) -> Result<Value, CheckError> {
    let mismatch = |literal: &'static str| CheckError::TypeMismatch {
        column: column.name.clone(),
        column_type: ty,
        literal,
        span: lit.span(),
    };
    match (lit, ty) {
        (Literal::Number(n), ColumnType::Integer | ColumnType::Float) => {
            if n.value.is_finite() {
                Ok(Value::Number(n.value))
            } else {
                Err(CheckError::NumberOutOfRange {
                    text: n.text.clone(),
                    span: n.span,
                })
            }
        }
        (Literal::Text(t), ColumnType::Text) => Ok(Value::Text(t.value.clone())),
        (Literal::Bool(b, _), ColumnType::Boolean) => Ok(Value::Bool(*b)),
        (Literal::Number(_), _) => Err(mismatch("a number")),
        (Literal::Text(_), _) => Err(mismatch("a string")),
        (Literal::Bool(..), _) => Err(mismatch("a boolean")),
    }
}

fn cmp_op(op: ast::CmpOp) -> data::CmpOp {
    match op {
        ast::CmpOp::Eq => data::CmpOp::Eq,
        ast::CmpOp::Ne => data::CmpOp::Ne,
        ast::CmpOp::Lt => data::CmpOp::Lt,
        ast::CmpOp::Le => data::CmpOp::Le,
        ast::CmpOp::Gt => data::CmpOp::Gt,
        ast::CmpOp::Ge => data::CmpOp::Ge,
    }
}

/// A table name from a file name: its stem (a pattern's directory, as `events` of
/// `events/*.parquet`), with characters other than letters, digits and `_` replaced by `_`.
pub fn default_table_name(path: &Path) -> String {
    let pattern = path
        .file_name()
        .is_some_and(|f| f.to_string_lossy().contains(['*', '?', '[']));
    let named = match path.parent() {
        Some(dir) if pattern => dir,
        _ => path,
    };
    let stem = named
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut name: String = stem
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert(0, 't');
    }
    if !ast::is_bare_name(&name) {
        name.push('_');
    }
    name
}
