//! Checking: resolves a parsed statement against the session's tables and validates its parameters.

use crate::ast::{
    self, ChooseEps, CountQuery, Expr, Ident, Literal, Number, ProbEvent, Statement, StatementKind,
};
use crate::data::{self, ColumnType, Predicate, Table, Value};
use crate::error::CheckError;
use crate::plan::{ChoosePlan, CountPlan, Event, Mechanism, Plan};
use crate::span::Span;
use crate::stats::blue::Measurement;
use crate::stats::noise::ExactEpsilon;
use crate::stats::{Epsilon, Positive, Probability};
use rust_decimal::Decimal;
use std::path::{Path, PathBuf};

/// What the checker may ask of the session: public facts only (names and schemas).
pub trait Catalog {
    /// The current table's name.
    fn current_table(&self) -> Option<&str>;
    /// A loaded table by its exact name.
    fn table(&self, name: &str) -> Option<&Table>;
    /// The names of the loaded tables, in load order.
    fn table_names(&self) -> Vec<String>;
    /// The number of cells of the declared teaching cube, if any.
    fn cube_cells(&self) -> Option<usize>;
}

/// The most cells a teaching cube may have.
pub const MAX_CUBE_CELLS: usize = 10_000;

/// Checks `stmt` against `catalog`, giving a plan that can run without further checks.
pub fn check(stmt: &Statement, catalog: &dyn Catalog) -> Result<Plan, CheckError> {
    let span = stmt.span;
    Ok(match &stmt.kind {
        StatementKind::Load { path, alias } => Plan::Load {
            path: PathBuf::from(&path.value),
            path_span: path.span,
            name: match alias {
                Some(a) => a.name.clone(),
                None => default_table_name(Path::new(&path.value)),
            },
        },
        StatementKind::Use { table } => Plan::Use {
            table: resolve_table(Some(table), catalog, span)?,
        },
        StatementKind::ShowTables => Plan::ShowTables,
        StatementKind::ShowCube => {
            catalog.cube_cells().ok_or(CheckError::NoCube { span })?;
            Plan::ShowCube
        }
        StatementKind::ShowBudget => Plan::ShowBudget {
            table: resolve_table(None, catalog, span)?,
        },
        StatementKind::ShowHistory => Plan::ShowHistory {
            table: resolve_table(None, catalog, span)?,
        },
        StatementKind::Describe { table } => Plan::Describe {
            table: resolve_table(table.as_ref(), catalog, span)?,
        },
        StatementKind::SetBudget { total } => {
            let table = resolve_table(None, catalog, span)?;
            let total = exact_positive(total).ok_or_else(|| CheckError::NotPositive {
                what: "a budget",
                text: total.text.clone(),
                span: total.span,
            })?;
            Plan::SetBudget { table, total }
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
        StatementKind::Count(q) => Plan::Count(check_count(q, catalog, span)?),
        StatementKind::ChooseEps(c) => Plan::ChooseEps(check_choose(c, span)?),
        StatementKind::Cube { cells } => {
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
            Plan::Cube { cells: n }
        }
        StatementKind::Observe { row, value, eps } => {
            let coefficients = cube_vector(row, catalog, span)?;
            // Lemma 2.1: the sensitivity of a linear query is its largest absolute coefficient.
            let sensitivity = coefficients.iter().fold(0.0f64, |m, c| m.max(c.abs()));
            if sensitivity == 0.0 {
                return Err(CheckError::ZeroQuery { span });
            }
            let value_f = finite(value)?;
            let invalid_eps = || CheckError::InvalidEpsilon {
                text: eps.text.clone(),
                span: eps.span,
            };
            let eps_exact = exact_positive(eps).ok_or_else(invalid_eps)?;
            let eps_value = Epsilon::new(eps.value).map_err(|_| invalid_eps())?.get();
            Plan::Observe {
                measurement: Measurement {
                    row: coefficients
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| **c != 0.0)
                        .map(|(i, c)| (i, *c))
                        .collect(),
                    eps: eps_value,
                    sensitivity,
                    noisy: value_f,
                },
                eps_exact,
            }
        }
        StatementKind::Estimate { query } => Plan::Estimate {
            query: cube_vector(query, catalog, span)?,
        },
        StatementKind::Prob { query, event } => Plan::Prob {
            query: cube_vector(query, catalog, span)?,
            event: match event {
                ProbEvent::Greater(x) => Event::Greater(finite(x)?),
                ProbEvent::Less(x) => Event::Less(finite(x)?),
                ProbEvent::Between(a, b) => Event::Between(finite(a)?, finite(b)?),
            },
        },
    })
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

/// A list of coefficients over the declared cube's cells: one finite number per cell.
fn cube_vector(
    numbers: &[Number],
    catalog: &dyn Catalog,
    span: Span,
) -> Result<Vec<f64>, CheckError> {
    let cells = catalog.cube_cells().ok_or(CheckError::NoCube { span })?;
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
    numbers.iter().map(finite).collect()
}

fn check_count(q: &CountQuery, catalog: &dyn Catalog, span: Span) -> Result<CountPlan, CheckError> {
    let table_name = resolve_table(None, catalog, span)?;
    let table = catalog
        .table(&table_name)
        .ok_or(CheckError::NoCurrentTable { span })?;
    let predicate = check_expr(&q.predicate, table, &table_name)?;
    let invalid_eps = || CheckError::InvalidEpsilon {
        text: q.eps.text.clone(),
        span: q.eps.span,
    };
    let eps_exact = exact_positive(&q.eps).ok_or_else(|| {
        if q.eps.value.is_finite() && q.eps.value > 0.0 {
            CheckError::InexactEpsilon {
                text: q.eps.text.clone(),
                span: q.eps.span,
            }
        } else {
            invalid_eps()
        }
    })?;
    let eps = Epsilon::new(q.eps.value).map_err(|_| invalid_eps())?;
    let eps_noise = ExactEpsilon::new(eps_exact).map_err(|_| invalid_eps())?;
    let prior = q
        .prior
        .as_ref()
        .map(|p| probability(p, false, "the prior p"))
        .transpose()?;
    let mechanism = match &q.mechanism {
        None => Mechanism::Laplace,
        Some(m) => mechanism(m)?,
    };
    Ok(CountPlan {
        key: format!("count|{predicate:?}|{}|{mechanism}", eps_exact.normalize()),
        statement: q.to_string(),
        table: table_name,
        predicate,
        eps,
        eps_exact,
        eps_noise,
        prior,
        mechanism,
    })
}

fn mechanism(m: &Ident) -> Result<Mechanism, CheckError> {
    if let Some(mechanism) = Mechanism::from_name(&m.name) {
        return Ok(mechanism);
    }
    match m.name.to_ascii_lowercase().as_str() {
        // TODO(#5): staircase lands with the estimator lab.
        "staircase" => Err(CheckError::MechanismUnavailable {
            name: m.name.to_ascii_lowercase(),
            span: m.span,
        }),
        _ => Err(CheckError::UnknownMechanism {
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
    let text = n.text.trim_start_matches('+');
    let d = if text.contains(['e', 'E']) {
        let d = Decimal::from_scientific(text).ok()?;
        // from_scientific may round; the value must come back to the same float.
        let same = d.to_string().parse::<f64>().ok() == Some(n.value);
        same.then_some(d)?
    } else {
        Decimal::from_str_exact(text).ok()?
    };
    (d > Decimal::ZERO).then_some(d)
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

fn check_expr(expr: &Expr, table: &Table, table_name: &str) -> Result<Predicate, CheckError> {
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

fn resolve_column(
    column: &Ident,
    table: &Table,
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

/// A table name from a file name: its stem, with characters other than letters, digits and
/// `_` replaced by `_`.
pub fn default_table_name(path: &Path) -> String {
    let stem = path
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
