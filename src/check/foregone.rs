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
//! rays beyond them. One value of each such class that the schema allows (for a number column
//! each constant and its nearest neighbours of the column's type, found exactly: an integer
//! column's whole numbers beyond 2^53 too, a float column's adjacent floats, and the
//! infinities a database's column can hold; a text column's named values and one other; a
//! missing value) is a complete set of witnesses, and the condition is evaluated, under the
//! same three-valued logic as counting, on every combination of the columns' witnesses. A
//! witness more than needed only makes a judgement less likely, never a wrong one.

use super::Catalog;
use crate::data::{CmpOp, ColumnType, Domain, Predicate, Source, Value};
use crate::error::CheckError;
use crate::span::Span;
use rust_decimal::prelude::ToPrimitive;
use std::cmp::Ordering;

/// The most combinations of witnesses evaluated; a condition over more is not judged.
const MAX_COMBINATIONS: usize = 1 << 16;

/// The most comparisons of witnesses with constants a judgement may make (combinations times
/// the condition's size); a condition that would take more is not judged (a list of
/// thousands of values has a witness for each).
const MAX_WORK: usize = 1 << 22;

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
        // A database's float column holds infinities; a file's and Parquet's values are finite.
        let infinite = matches!(table.kind(), "postgres" | "spark");
        let Some(w) = column_witnesses(p, c, table.column_type(c), &domain, infinite) else {
            return Ok(None);
        };
        combinations = combinations.saturating_mul(w.len() + 1);
        witnesses.push(w);
    }
    let mut size = 0usize;
    visit(p, &mut |atom| {
        size += match atom {
            Predicate::In { values, .. } => values.len(),
            _ => 2,
        }
    });
    if combinations > MAX_COMBINATIONS || combinations.saturating_mul(size) > MAX_WORK {
        return Ok(None);
    }
    let (mut some_true, mut all_present_true) = (false, true);
    let mut cells: Vec<Option<&Witness>> = vec![None; columns.len()];
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
fn next(index: &mut [usize], witnesses: &[Vec<Witness>]) -> bool {
    for (k, w) in witnesses.iter().enumerate() {
        if index[k] < w.len() {
            index[k] += 1;
            return true;
        }
        index[k] = 0;
    }
    false
}

/// A value a column may hold, standing for its class.
#[derive(Debug, Clone, PartialEq)]
enum Witness {
    /// An integer column's value, exactly.
    Int(i64),
    /// A float column's value.
    Float(f64),
    /// A text or boolean column's value.
    Value(Value),
}

/// One value of each class of values of column `c` that `p` tells apart, among those its type
/// and domain allow, the infinities too when `infinite` (some more do no harm: each only
/// makes a judgement less likely); `None` when they cannot be listed (order comparisons of an
/// undeclared text column).
fn column_witnesses(
    p: &Predicate,
    c: usize,
    ty: ColumnType,
    domain: &Domain,
    infinite: bool,
) -> Option<Vec<Witness>> {
    let mut constants = Vec::new();
    let mut ordered = false;
    literals(p, c, &mut constants, &mut ordered);
    match ty {
        ColumnType::Boolean => Some(vec![
            Witness::Value(Value::Bool(false)),
            Witness::Value(Value::Bool(true)),
        ]),
        ColumnType::Text => match domain {
            Domain::Values(values) => Some(
                values
                    .iter()
                    .cloned()
                    .map(|v| Witness::Value(Value::Text(v)))
                    .collect(),
            ),
            _ if ordered => None,
            _ => {
                let mut w: Vec<Witness> = constants.iter().cloned().map(Witness::Value).collect();
                let other = (0..)
                    .map(|k| "\u{1}".repeat(k))
                    .find(|s| !constants.iter().any(|v| *v == Value::Text(s.clone())))
                    .unwrap_or_default();
                w.push(Witness::Value(Value::Text(other)));
                Some(w)
            }
        },
        ColumnType::Integer | ColumnType::Float => {
            let mut cuts: Vec<f64> = constants
                .iter()
                .filter_map(|v| match v {
                    Value::Number(x) if x.is_finite() => Some(*x),
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
            // As the loader keeps values of a declared domain (`schema::apply_domain`).
            let inside = |x: f64| range.is_none_or(|(lo, hi)| lo <= x && x <= hi);
            if ty == ColumnType::Integer {
                // Whole numbers, exactly (beyond 2^53 a float cannot name them): each integer
                // cut, the nearest whole number on either side of each cut (the first of each
                // gap and the last of each ray), and 0 when there is no cut.
                let mut w: Vec<i64> = cuts
                    .iter()
                    .flat_map(|c| {
                        let (floor, ceil) = (c.floor() as i128, c.ceil() as i128);
                        [floor, ceil - 1, floor + 1]
                    })
                    .chain(cuts.is_empty().then_some(0))
                    .filter_map(|x| i64::try_from(x).ok())
                    .filter(|&x| inside(x as f64))
                    .collect();
                w.sort_unstable();
                w.dedup();
                Some(w.into_iter().map(Witness::Int).collect())
            } else {
                // Floats: each cut and its neighbouring floats (the first of each gap and the
                // last of each ray), finite as a file's values are; a database column holds
                // the infinities too (and a NaN, which it orders above every number, as an
                // infinity is).
                let mut w: Vec<f64> = cuts
                    .iter()
                    .flat_map(|c| [c.next_down(), *c, c.next_up()])
                    .chain(cuts.is_empty().then_some(0.0))
                    .filter(|x| x.is_finite() || infinite)
                    .chain(
                        [f64::NEG_INFINITY, f64::INFINITY]
                            .into_iter()
                            .filter(|_| infinite),
                    )
                    .filter(|&x| inside(x))
                    .collect();
                w.sort_by(f64::total_cmp);
                w.dedup();
                Some(w.into_iter().map(Witness::Float).collect())
            }
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
fn eval(p: &Predicate, columns: &[usize], cells: &[Option<&Witness>]) -> Option<bool> {
    let cell = |c: &usize| columns.iter().position(|x| x == c).and_then(|k| cells[k]);
    match p {
        Predicate::Compare { column, op, value } => {
            Some(op.holds(cell_order(cell(column)?, value)?))
        }
        Predicate::In { column, values } => {
            let v = cell(column)?;
            Some(
                values
                    .iter()
                    .any(|x| cell_order(v, x) == Some(Ordering::Equal)),
            )
        }
        Predicate::Between { column, low, high } => {
            let v = cell(column)?;
            Some(cell_order(v, low)? != Ordering::Less && cell_order(v, high)? != Ordering::Greater)
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

/// How a cell's value compares with a literal, as counting compares them: an integer exactly
/// with the literal's real value (never rounded to a float).
fn cell_order(cell: &Witness, literal: &Value) -> Option<Ordering> {
    match (cell, literal) {
        (Witness::Int(a), Value::Number(b)) => int_order(*a, *b),
        (Witness::Float(a), Value::Number(b)) => a.partial_cmp(b),
        (Witness::Value(a), b) => order(a, b),
        _ => None,
    }
}

/// `a` against the real number `b`, exactly.
fn int_order(a: i64, b: f64) -> Option<Ordering> {
    // 2^63: the first float beyond every i64.
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if b.is_nan() {
        None
    } else if b >= TWO_63 {
        Some(Ordering::Less)
    } else if b < -TWO_63 {
        Some(Ordering::Greater)
    } else {
        // In [-2^63, 2^63): its floor is an i64, exactly.
        let floor = b.floor();
        Some(a.cmp(&(floor as i64)).then(if b == floor {
            Ordering::Equal
        } else {
            Ordering::Less
        }))
    }
}

/// How two literals compare (text by UTF-8 bytes, `false < true`).
fn order(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
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
