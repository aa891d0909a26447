//! Checking `SHARE`, `MIN`, `MEDIAN` and `MAX`: the column and its public range, the noise.

use super::{check_eps, release_expr, resolve_table, summed_column, Catalog};
use crate::ast::StatQuery;
use crate::cube::Cube;
use crate::error::CheckError;
use crate::plan::{StatColumn, StatNoise, StatPlan};
use crate::privacy::Neighbours;
use crate::span::Span;
use rust_decimal::Decimal;

/// The exponent of the smooth noise when `GAMMA` is not given: the one of least variance at a
/// fixed smooth sensitivity (4.528, the slides' 4.52), a public constant.
pub const DEFAULT_GAMMA: f64 = 4.53;

/// The largest `GAMMA` accepted.
const MAX_GAMMA: f64 = 1000.0;

pub(super) fn check_statistic(
    q: &StatQuery,
    catalog: &dyn Catalog,
    span: Span,
) -> Result<StatPlan, CheckError> {
    let table_name = resolve_table(None, catalog, span)?;
    let neighbours = catalog.table_neighbours(&table_name);
    let table = catalog
        .table(&table_name)
        .ok_or(CheckError::NoCurrentTable { span })?;
    if catalog.table_unit_rows(&table_name) != Decimal::ONE {
        return Err(CheckError::NotApplicable {
            message: "SHARE, MIN, MEDIAN and MAX are not available on a table with a privacy unit: their sensitivity is a row's",
            span,
        });
    }
    let column = match &q.column {
        None => None,
        Some((column, lo, hi)) => {
            let (index, integer, lo, hi) = summed_column(table, &table_name, column, lo, hi)
                .map_err(|e| match e {
                    CheckError::NotApplicable {
                        span,
                        message: "SUM and MEAN take a number column",
                    } => CheckError::NotApplicable {
                        message: "MIN, MEDIAN and MAX take a number column",
                        span,
                    },
                    other => other,
                })?;
            Some(StatColumn {
                index,
                name: table.column_name(index).to_string(),
                integer,
                clamp: (lo.normalize(), hi.normalize()),
            })
        }
    };
    let filter = q
        .filter
        .as_ref()
        .map(|e| release_expr(e, table, &table_name, catalog).map(|(p, _)| p))
        .transpose()?;
    let noise = noise(q)?;
    let query_key = format!(
        "{}|{}|{:?}",
        q.kind,
        column
            .as_ref()
            .map(|c| format!("{}|{}|{}", c.name, c.clamp.0, c.clamp.1))
            .unwrap_or_default(),
        filter
    );
    let cube = catalog.table_cube(&table_name).map(Cube::declaration);
    Ok(StatPlan {
        table: table_name,
        kind: q.kind,
        column,
        filter,
        eps: check_eps(&q.eps)?,
        noise,
        neighbours,
        public_rows: (neighbours == Neighbours::Replace).then(|| table.n_rows()),
        statement: q.to_string(),
        query_key,
        cube,
    })
}

/// `NOISE smooth [GAMMA g]`, `NOISE laplace`, or Laplace when absent.
fn noise(q: &StatQuery) -> Result<StatNoise, CheckError> {
    let name = q.noise.as_ref().map(|n| n.name.to_ascii_lowercase());
    match (name.as_deref(), &q.gamma) {
        (None | Some("laplace"), None) => Ok(StatNoise::Laplace),
        (None | Some("laplace"), Some(g)) => Err(CheckError::NotApplicable {
            message: "GAMMA is the exponent of smooth noise: write NOISE smooth GAMMA g",
            span: g.span,
        }),
        (Some("smooth"), gamma) => {
            let gamma = match gamma {
                None => DEFAULT_GAMMA,
                Some(g) if g.value > 1.0 && g.value <= MAX_GAMMA => g.value,
                Some(g) => {
                    return Err(CheckError::NotApplicable {
                        message: "GAMMA must be a number above 1 and at most 1000 (4.53 gives the least variance)",
                        span: g.span,
                    })
                }
            };
            Ok(StatNoise::Smooth { gamma })
        }
        (Some(_), _) => {
            let n = q.noise.as_ref().expect("a name");
            Err(CheckError::NotApplicable {
                message: "NOISE is smooth (scaled to the data's smooth sensitivity) or laplace (the default)",
                span: n.span,
            })
        }
    }
}
