//! Conditions the schema alone judges. One that no row can meet (`age BETWEEN 30 AND 20`,
//! `age = 30.5` on an integer column, `x < 3 AND x > 5`) has the answer 0 whatever the data: it
//! would spend budget on an answer known before asking, so the statement is refused before
//! anything is spent, saying why.
//!
//! One that every value the schema allows meets (`age >= 0` where `age` is declared `BETWEEN 0
//! AND 120`) is not refused: a row whose `age` is missing does not meet it, so it counts the
//! rows where `age` has a value, which is private and is the one way to ask that. A count
//! says so next to its answer, for the writer who meant every row.
//!
//! The decision reads the condition and the public schema (types and declared domains) only,
//! never the data: it is the same for every table of that schema, so refusing tells nothing.
//!
//! Method: a condition's truth for a value of a column depends only on where the value lies
//! among the constants the condition compares that column with (and the declared domain's
//! ends): each constant itself, each open interval between two consecutive ones, and the two
//! rays beyond them. One value of each such class that the schema allows (an integer column's
//! nearest whole numbers; a text column's named values and one other; a missing value) is a
//! complete set of witnesses, and the condition is evaluated, under the same three-valued
//! logic as counting, on every combination of the columns' witnesses.

use super::Catalog;
use crate::data::{CmpOp, ColumnType, Domain, Predicate, Source, Value};
use crate::error::CheckError;
use crate::span::Span;
use rust_decimal::prelude::ToPrimitive;
use std::cmp::Ordering;

/// The most combinations of witnesses evaluated; a condition over more is not judged.
const MAX_COMBINATIONS: usize = 1 << 16;

/// Refuses `p` (written `text` at `span`) over `table` if the schema decides its answer.
pub(super) fn check(
    p: &Predicate,
    text: &str,
    table: &Source,
    table_name: &str,
    catalog: &dyn Catalog,
    span: Span,
) -> Result<Option<String>, CheckError> {
    let columns = p.columns();
    let mut witnesses = Vec::with_capacity(columns.len());
    let mut combinations = 1usize;
    for &c in &columns {
        let name = table.column_name(c);
        let domain = catalog.column_domain(table_name, name);
        let Some(w) = column_witnesses(p, c, table.column_type(c), &domain) else {
            return Ok(None);
        };
        combinations = combinations.saturating_mul(w.len() + 1);
        witnesses.push(w);
    }
    if combinations > MAX_COMBINATIONS {
        return Ok(None);
    }
    let (mut some_true, mut all_present_true) = (false, true);
    let mut cells: Vec<Option<&Value>> = vec![None; columns.len()];
    // Every combination, a missing value included for each column (index w.len()).
    let mut index = vec![0usize; columns.len()];
    loop {
        let mut present = true;
        for (k, w) in witnesses.iter().enumerate() {
            cells[k] = w.get(index[k]);
            present &= cells[k].is_some();
        }
        let truth = eval(p, &columns, &cells);
        some_true |= truth == Some(true);
        if present && truth != Some(true) {
            all_present_true = false;
        }
        if !next(&mut index, &witnesses) {
            break;
        }
    }
    let named: Vec<String> = columns
        .iter()
        .map(|&c| format!("`{}`", table.column_name(c)))
        .collect();
    if !some_true {
        return Err(CheckError::Foregone {
            message: format!(
                "no row can meet `{text}`: no value the schema allows for {} satisfies it, so its answer is known before anything is spent",
                named.join(" and ")
            ),
            help: empty_help(p, table, table_name, catalog),
            span,
        });
    }
    Ok(all_present_true.then(|| {
        if let [one] = named.as_slice() {
            format!(
                "every value the schema allows for {one} meets `{text}`: this counts the rows where {one} has a value, not every row"
            )
        } else {
            format!(
                "every combination of values the schema allows for {} meets `{text}`: this counts every row where they all have values, and of the others those the condition names; not every row",
                named.join(" and ")
            )
        }
    }))
}

/// Steps `index` to the next combination (each column's witnesses and a missing value).
fn next(index: &mut [usize], witnesses: &[Vec<Value>]) -> bool {
    for (k, w) in witnesses.iter().enumerate() {
        if index[k] < w.len() {
            index[k] += 1;
            return true;
        }
        index[k] = 0;
    }
    false
}

/// One value of each class of values of column `c` that `p` tells apart, among those its type
/// and domain allow; `None` when they cannot be listed (order comparisons of an undeclared
/// text column).
fn column_witnesses(
    p: &Predicate,
    c: usize,
    ty: ColumnType,
    domain: &Domain,
) -> Option<Vec<Value>> {
    let mut constants = Vec::new();
    let mut ordered = false;
    literals(p, c, &mut constants, &mut ordered);
    match ty {
        ColumnType::Boolean => Some(vec![Value::Bool(false), Value::Bool(true)]),
        ColumnType::Text => match domain {
            Domain::Values(values) => Some(values.iter().cloned().map(Value::Text).collect()),
            _ if ordered => None,
            _ => {
                let mut w: Vec<Value> = constants.clone();
                let other = (0..)
                    .map(|k| "\u{1}".repeat(k))
                    .find(|s| !constants.iter().any(|v| *v == Value::Text(s.clone())))
                    .unwrap_or_default();
                w.push(Value::Text(other));
                Some(w)
            }
        },
        ColumnType::Integer | ColumnType::Float => {
            let mut cuts: Vec<f64> = constants
                .iter()
                .filter_map(|v| match v {
                    Value::Number(x) => Some(*x),
                    _ => None,
                })
                .collect();
            let range = match domain {
                Domain::Range { min, max } => Some((min.to_f64()?, max.to_f64()?)),
                _ => None,
            };
            if let Some((lo, hi)) = range {
                cuts.extend([lo, hi]);
            }
            cuts.sort_by(f64::total_cmp);
            cuts.dedup();
            let mut candidates: Vec<f64> = match (cuts.first(), cuts.last()) {
                (Some(first), Some(last)) => vec![first - 1.0, last + 1.0],
                _ => vec![0.0],
            };
            candidates.extend(&cuts);
            candidates.extend(cuts.windows(2).map(|w| w[0] + (w[1] - w[0]) / 2.0));
            if ty == ColumnType::Integer {
                candidates = candidates
                    .iter()
                    .flat_map(|x| [x.floor(), x.ceil()])
                    .collect();
            }
            candidates.retain(|x| range.is_none_or(|(lo, hi)| *x >= lo && *x <= hi));
            candidates.sort_by(f64::total_cmp);
            candidates.dedup();
            Some(candidates.into_iter().map(Value::Number).collect())
        }
    }
}

/// The literals `p` compares column `c` with, and whether any comparison orders them.
fn literals(p: &Predicate, c: usize, out: &mut Vec<Value>, ordered: &mut bool) {
    match p {
        Predicate::Compare { column, op, value } if *column == c => {
            *ordered |= !matches!(op, CmpOp::Eq | CmpOp::Ne);
            out.push(value.clone());
        }
        Predicate::In { column, values } if *column == c => out.extend(values.iter().cloned()),
        Predicate::Between { column, low, high } if *column == c => {
            *ordered = true;
            out.extend([low.clone(), high.clone()]);
        }
        Predicate::And(a, b) | Predicate::Or(a, b) => {
            literals(a, c, out, ordered);
            literals(b, c, out, ordered);
        }
        Predicate::Not(a) => literals(a, c, out, ordered),
        _ => {}
    }
}

/// `p` on one row whose column `columns[k]` holds `cells[k]` (`None`: missing), under
/// three-valued logic: `None` is unknown.
fn eval(p: &Predicate, columns: &[usize], cells: &[Option<&Value>]) -> Option<bool> {
    let cell = |c: &usize| columns.iter().position(|x| x == c).and_then(|k| cells[k]);
    match p {
        Predicate::Compare { column, op, value } => Some(op.holds(order(cell(column)?, value)?)),
        Predicate::In { column, values } => {
            let v = cell(column)?;
            Some(values.iter().any(|x| order(v, x) == Some(Ordering::Equal)))
        }
        Predicate::Between { column, low, high } => {
            let v = cell(column)?;
            Some(order(v, low)? != Ordering::Less && order(v, high)? != Ordering::Greater)
        }
        Predicate::And(a, b) => match (eval(a, columns, cells), eval(b, columns, cells)) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (Some(true), Some(true)) => Some(true),
            _ => None,
        },
        Predicate::Or(a, b) => match (eval(a, columns, cells), eval(b, columns, cells)) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (Some(false), Some(false)) => Some(false),
            _ => None,
        },
        Predicate::Not(a) => eval(a, columns, cells).map(|t| !t),
    }
}

/// How a cell's value compares with a literal, as counting compares them.
fn order(cell: &Value, literal: &Value) -> Option<Ordering> {
    match (cell, literal) {
        (Value::Number(a), Value::Number(b)) => a.partial_cmp(b),
        (Value::Text(a), Value::Text(b)) => Some(a.as_bytes().cmp(b.as_bytes())),
        (Value::Bool(a), Value::Bool(b)) => Some(a.cmp(b)),
        _ => None,
    }
}

/// What most likely went wrong in a condition no row can meet.
fn empty_help(p: &Predicate, table: &Source, table_name: &str, catalog: &dyn Catalog) -> String {
    let mut hint = None;
    visit(p, &mut |atom| {
        if hint.is_some() {
            return;
        }
        match atom {
            Predicate::Between { column, low, high }
                if order(low, high) == Some(Ordering::Greater) =>
            {
                hint = Some(format!(
                    "BETWEEN takes the low end first: {} BETWEEN {} AND {}",
                    table.column_name(*column),
                    shown(high),
                    shown(low)
                ));
            }
            Predicate::Compare {
                column,
                value: Value::Number(x),
                ..
            } if table.column_type(*column) == ColumnType::Integer && x.fract() != 0.0 => {
                hint = Some(format!(
                    "`{}` is an integer column: it holds whole numbers only",
                    table.column_name(*column)
                ));
            }
            _ => {}
        }
    });
    hint.unwrap_or_else(|| {
        let declared: Vec<String> = p
            .columns()
            .into_iter()
            .filter_map(|c| {
                let name = table.column_name(c);
                match catalog.column_domain(table_name, name) {
                    Domain::Range { min, max } => {
                        Some(format!("`{name}` is declared BETWEEN {min} AND {max}"))
                    }
                    Domain::Values(v) => Some(format!(
                        "`{name}` is declared IN ({})",
                        v.iter()
                            .map(|s| format!("'{}'", s.replace('\'', "''")))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                    Domain::Any => None,
                }
            })
            .collect();
        if declared.is_empty() {
            "its conditions exclude each other; nothing was spent".into()
        } else {
            format!("{}; nothing was spent", declared.join("; "))
        }
    })
}

fn visit(p: &Predicate, f: &mut impl FnMut(&Predicate)) {
    match p {
        Predicate::And(a, b) | Predicate::Or(a, b) => {
            visit(a, f);
            visit(b, f);
        }
        Predicate::Not(a) => visit(a, f),
        atom => f(atom),
    }
}

fn shown(v: &Value) -> String {
    match v {
        Value::Number(x) => crate::output::short_number(*x),
        Value::Text(t) => format!("'{}'", t.replace('\'', "''")),
        Value::Bool(b) => if *b { "TRUE" } else { "FALSE" }.to_string(),
    }
}
