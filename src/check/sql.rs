//! BigQuery's SQL form of the common questions, translated one to one into dpq's statements:
//! `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = e) COUNT(*) FROM t WHERE p` is
//! `COUNT WHERE p WITH EPS e` over `t`, `... GROUP BY a` is `COUNT [WHERE p] BY a WITH EPS e`,
//! and `SUM(col, contribution_bounds_per_group => (lo, hi))` is `SUM col CLAMP (lo, hi) ...`
//! (`AVG` is `MEAN`). The translation is checked, planned, accounted and recorded exactly as
//! the statement it names: the history shows the dpq form, and repeating either form is the
//! same release.

use super::{resolve_table, Catalog};
use crate::ast::{
    Accuracy, CountQuery, CountTerm, Histogram, Ident, Number, Select, SqlAggregate, SqlOption,
    StatementKind, SumQuery,
};
use crate::cube::Cube;
use crate::data::Source;
use crate::error::CheckError;
use crate::plan::CubeRef;
use crate::privacy::Neighbours;
use crate::span::Span;
use rust_decimal::Decimal;

/// The options dpq reads in `OPTIONS (...)`.
const OPTIONS: [&str; 4] = [
    "epsilon",
    "delta",
    "privacy_unit_column",
    "max_groups_contributed",
];

/// The table a `SELECT` asks and the statement it is.
pub(super) fn translate(
    select: &Select,
    catalog: &dyn Catalog,
    span: Span,
) -> Result<(String, StatementKind), CheckError> {
    let Some(options) = &select.options else {
        return Err(plain_query(select, span));
    };
    let table = resolve_table(Some(&select.table), catalog, select.table.span)?;
    let eps = read_options(options, &table, catalog, span)?;
    let native = native(select, eps, &table, catalog, span)?;
    Ok((table, native))
}

/// The dpq statement a `SELECT` with its privacy options is.
fn native(
    select: &Select,
    eps: Number,
    table: &str,
    catalog: &dyn Catalog,
    span: Span,
) -> Result<StatementKind, CheckError> {
    let sql = |message: String, help: String, span: Span| CheckError::Sql {
        message,
        help,
        span,
    };
    Ok(
        match (&select.aggregate, &select.group_by, &select.filter) {
            (SqlAggregate::Count, Some(by), filter) => StatementKind::Histogram(Histogram {
                by: Some(by.clone()),
                filter: filter.clone(),
                eps,
                rho: false,
                mechanism: None,
                plot: None,
            }),
            (SqlAggregate::Count, None, Some(predicate)) => StatementKind::Count(CountQuery {
                terms: vec![CountTerm {
                    minus: false,
                    coefficient: None,
                    predicate: predicate.clone(),
                }],
                accuracy: Accuracy::Eps(eps),
                prior: None,
                mechanism: None,
                plot: None,
            }),
            (SqlAggregate::Count, None, None) => {
                let help = if catalog.table_neighbours(table) == Neighbours::Replace {
                    format!("the row count of `{table}` is public: DESCRIBE {table}; shows it and spends nothing; or count part of it with WHERE, or per group with GROUP BY")
                } else {
                    "add WHERE to count the rows that meet a condition, or GROUP BY a dimension of the table's cube to count every group".to_string()
                };
                return Err(sql(
                "dpq counts the rows that meet a condition: COUNT(*) of a whole table has no WHERE"
                    .into(),
                help,
                select.aggregate_span,
            ));
            }
            (SqlAggregate::Sum { avg, .. }, Some(_), _) => {
                let what = if *avg { "AVG" } else { "SUM" };
                return Err(sql(
                    format!(
                        "{what} per group has no dpq statement: dpq sums one set of rows at a time"
                    ),
                    "ask each group with WHERE, e.g. ... FROM t WHERE city = 'Rome'".into(),
                    span,
                ));
            }
            (
                SqlAggregate::Sum {
                    column,
                    bounds: None,
                    avg,
                },
                None,
                _,
            ) => {
                let what = if *avg { "AVG" } else { "SUM" };
                return Err(sql(
                format!("{what}({column}) needs public bounds: dpq clamps every value to them, and the noise is scaled to their width"),
                format!("write {what}({column}, contribution_bounds_per_group => (0, 100)) with bounds known without looking at the data"),
                select.aggregate_span,
            ));
            }
            (
                SqlAggregate::Sum {
                    avg,
                    column,
                    bounds: Some((lo, hi)),
                },
                None,
                filter,
            ) => StatementKind::Sum(SumQuery {
                mean: *avg,
                column: column.clone(),
                lo: lo.clone(),
                hi: hi.clone(),
                filter: filter.clone(),
                eps,
                rho: false,
                mechanism: None,
            }),
        },
    )
}

/// The epsilon of `OPTIONS (...)`, every other option checked against the table.
fn read_options(
    options: &[SqlOption],
    table: &str,
    catalog: &dyn Catalog,
    span: Span,
) -> Result<Number, CheckError> {
    let refuse = |message: String, help: String, span: Span| CheckError::Sql {
        message,
        help,
        span,
    };
    let mut eps = None;
    for (i, o) in options.iter().enumerate() {
        let name = o.name.name.to_ascii_lowercase();
        if options[..i]
            .iter()
            .any(|p| p.name.name.eq_ignore_ascii_case(&name))
        {
            return Err(refuse(
                format!("the option {name} is given twice"),
                "give each option once".into(),
                o.name.span,
            ));
        }
        match name.as_str() {
            "epsilon" => eps = Some(number(o)?),
            "delta" => {
                if number(o)?.value != 0.0 {
                    return Err(refuse(
                        "dpq's releases are pure epsilon-differentially private: delta is 0".into(),
                        "write delta = 0, or leave delta out".into(),
                        o.span,
                    ));
                }
            }
            "privacy_unit_column" => unit_column(o, table, catalog)?,
            "max_groups_contributed" => {
                return Err(refuse(
                    "dpq bounds what one privacy unit contributes when the table is loaded".into(),
                    "LOAD ... PRIVACY UNIT column MAX ROWS k bounds each unit's rows; leave max_groups_contributed out".into(),
                    o.name.span,
                ))
            }
            _ => {
                let guess = crate::spelling::closest(&name, OPTIONS)
                    .map(|c| format!("did you mean {c}? "))
                    .unwrap_or_default();
                return Err(refuse(
                    format!("unknown option {}", o.name.name),
                    format!("{guess}the options are {}", OPTIONS.join(", ")),
                    o.name.span,
                ));
            }
        }
    }
    eps.ok_or_else(|| {
        refuse(
            "OPTIONS does not give epsilon: every release states what it spends".into(),
            "add epsilon, e.g. OPTIONS (epsilon = 0.1)".into(),
            span,
        )
    })
}

/// An option's value as a number.
fn number(o: &SqlOption) -> Result<Number, CheckError> {
    match o.value.parse::<f64>() {
        Ok(value)
            if o.value
                .starts_with(|c: char| c.is_ascii_digit() || "+-.".contains(c)) =>
        {
            Ok(Number {
                value,
                text: o.value.clone(),
                span: o.span,
            })
        }
        _ => Err(CheckError::Sql {
            message: format!("the option {} takes a number", o.name.name),
            help: format!("write {} = 0.1", o.name.name),
            span: o.span,
        }),
    }
}

/// `privacy_unit_column = c`: the unit the table was loaded with must be `c`.
fn unit_column(o: &SqlOption, table: &str, catalog: &dyn Catalog) -> Result<(), CheckError> {
    // A name as written (`id`), or a string (`'id'`, a quote inside doubled).
    let written = match o
        .value
        .strip_prefix('\'')
        .and_then(|v| v.strip_suffix('\''))
    {
        Some(inner) => inner.replace("''", "'"),
        None => o.value.clone(),
    };
    match catalog.table_unit(table) {
        Some(unit) if unit == written => Ok(()),
        Some(unit) => {
            let shown = if crate::ast::is_bare_name(&unit) {
                unit.clone()
            } else {
                format!("'{}'", unit.replace('\'', "''"))
            };
            Err(CheckError::Sql {
                message: format!(
                    "`{table}` was loaded with the privacy unit `{unit}`, not `{written}`"
                ),
                help: format!("write privacy_unit_column = {shown}, or leave it out: the table's unit applies to every question"),
                span: o.span,
            })
        }
        None => Err(CheckError::Sql {
            message: format!("`{table}` has no privacy unit: each row is protected on its own"),
            help: format!(
                "declare one when loading: LOAD ... PRIVACY UNIT {} MAX ROWS k; or leave privacy_unit_column out",
                crate::ast::Ident { name: written, span: o.span }
            ),
            span: o.span,
        }),
    }
}

/// The refusal of a SQL query without privacy options, showing both private forms of it.
fn plain_query(select: &Select, span: Span) -> CheckError {
    let eps = Number {
        value: 0.1,
        text: "0.1".into(),
        span,
    };
    let mut private = select.clone();
    private.options = Some(vec![SqlOption {
        name: Ident {
            name: "epsilon".into(),
            span,
        },
        value: "0.1".into(),
        span,
    }]);
    let dpq = match &select.aggregate {
        SqlAggregate::Count if select.filter.is_none() && select.group_by.is_none() => None,
        SqlAggregate::Sum { bounds: None, .. } => None,
        SqlAggregate::Sum { .. } if select.group_by.is_some() => None,
        _ => Some(native_text(select, eps)),
    };
    let help = match dpq {
        Some(dpq) => format!(
            "ask it with noise: {private}; or in dpq's words: USE {}; {dpq};",
            select.table
        ),
        None => format!("ask it with noise: {private};"),
    };
    CheckError::Sql {
        message: "a plain SQL query would answer with the true value: dpq answers only with noise, from a privacy budget".into(),
        help,
        span,
    }
}

/// The dpq statement of `select` at `eps`, as text (no catalog: for the help of a refusal).
fn native_text(select: &Select, eps: Number) -> String {
    match &select.aggregate {
        SqlAggregate::Count => match &select.group_by {
            Some(by) => Histogram {
                by: Some(by.clone()),
                filter: select.filter.clone(),
                eps,
                rho: false,
                mechanism: None,
                plot: None,
            }
            .to_string(),
            None => {
                let filter = select.filter.as_ref().map(ToString::to_string);
                format!("COUNT WHERE {} WITH EPS {eps}", filter.unwrap_or_default())
            }
        },
        SqlAggregate::Sum {
            avg,
            column,
            bounds,
        } => {
            let (lo, hi) = bounds
                .as_ref()
                .map(|(l, h)| (l.to_string(), h.to_string()))
                .unwrap_or_default();
            let mut text = format!(
                "{} {column} CLAMP ({lo}, {hi})",
                if *avg { "MEAN" } else { "SUM" }
            );
            if let Some(p) = &select.filter {
                text.push_str(&format!(" WHERE {p}"));
            }
            text.push_str(&format!(" WITH EPS {eps}"));
            text
        }
    }
}

/// The catalog as a `SELECT ... FROM t` sees it: `t` is the table in use, whatever the session's.
pub(super) struct From<'a> {
    inner: &'a dyn Catalog,
    table: &'a str,
}

impl<'a> From<'a> {
    pub(super) fn new(inner: &'a dyn Catalog, table: &'a str) -> Self {
        From { inner, table }
    }
}

impl Catalog for From<'_> {
    fn current_table(&self) -> Option<&str> {
        Some(self.table)
    }
    fn table(&self, name: &str) -> Option<&Source> {
        self.inner.table(name)
    }
    fn table_names(&self) -> Vec<String> {
        self.inner.table_names()
    }
    fn table_cube(&self, table: &str) -> Option<&Cube> {
        self.inner.table_cube(table)
    }
    fn table_neighbours(&self, table: &str) -> Neighbours {
        self.inner.table_neighbours(table)
    }
    fn table_accounting(&self, table: &str) -> crate::privacy::Accounting {
        self.inner.table_accounting(table)
    }
    fn table_unit_rows(&self, table: &str) -> Decimal {
        self.inner.table_unit_rows(table)
    }
    fn table_unit(&self, table: &str) -> Option<String> {
        self.inner.table_unit(table)
    }
    fn column_domain(&self, table: &str, column: &str) -> crate::data::Domain {
        self.inner.column_domain(table, column)
    }
    fn cube_neighbours(&self, cube: &CubeRef) -> Neighbours {
        self.inner.cube_neighbours(cube)
    }
    fn focus(&self) -> Option<(CubeRef, usize)> {
        let cube = self.inner.table_cube(self.table)?;
        Some((CubeRef::Table(self.table.to_string()), cube.cells()))
    }
}
