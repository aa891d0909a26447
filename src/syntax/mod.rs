//! Parsing: source text to owned `ast::Statement`s; pest's `Pairs` never leave this module.

mod habits;
mod names;
pub mod split;

use crate::ast::{
    Accuracy, BinnedStat, ChooseEps, CmpOp, ColumnDecl, ColumnsClause, CountQuery, CountTerm,
    CubeDim, DeclaredDomain, DeclaredType, Expr, Histogram, Ident, LabFunction, LabLaw, LabSmooth,
    Literal, Number, Plot, PlotMetric, Prior, ProbEvent, Query, Select, Simulate, SqlAggregate,
    SqlOption, StatKind, StatQuery, Statement, StatementKind, SumQuery, SumTarget, Text,
};
use crate::error::SyntaxError;
use crate::span::Span;
use pest::iterators::{Pair, Pairs};
use pest::pratt_parser::{Assoc, Op, PrattParser};
use pest::Parser as _;
use std::sync::LazyLock;

/// Most conditions, `AND`, `OR` and `NOT` in one predicate, nested ones included: keeps every
/// recursive walk of the tree shallow.
pub const MAX_TERMS: usize = 500;

/// Most literal values in one predicate (`IN` lists included).
pub const MAX_VALUES: usize = 10_000;

/// Most counts in one linear query.
pub const MAX_COUNT_TERMS: usize = 100;

pub use habits::{closest, statement_words};

#[derive(pest_derive::Parser)]
#[grammar = "../grammar/dpq.pest"]
struct DpqParser;

static PRATT: LazyLock<PrattParser<Rule>> = LazyLock::new(|| {
    PrattParser::new()
        .op(Op::infix(Rule::kw_or, Assoc::Left))
        .op(Op::infix(Rule::kw_and, Assoc::Left))
        .op(Op::prefix(Rule::kw_not))
});

/// Parses a whole script: statements in order, or the first syntax error.
///
/// The script is split at `;` first, so an error in one statement points there precisely and
/// nothing after it is parsed.
pub fn parse_script(source: &str) -> Result<Vec<Statement>, SyntaxError> {
    let (pieces, error) = split::split(source);
    let statements = pieces
        .into_iter()
        .map(|piece| parse_statement_at(source, piece.span))
        .collect::<Result<Vec<_>, _>>()?;
    match error {
        Some(e) => Err(e),
        None => Ok(statements),
    }
}

/// Parses one statement found at `span` of `source` (spans in the result are into `source`).
pub fn parse_statement_at(source: &str, span: Span) -> Result<Statement, SyntaxError> {
    let text = &source[span.start..span.end];
    let offset = span.start;
    let mut pairs = DpqParser::parse(Rule::statement, text)
        .map_err(|e| names::syntax_error(source, offset, text, &e))?;
    let statement = pairs.next().expect("the entry rule yields one pair");
    let stmt = statement
        .into_inner()
        .next()
        .expect("a statement holds one statement rule");
    let b = Builder { offset };
    // The statement's span covers its code, without surrounding blanks and comments.
    let span = b.span(&stmt);
    Ok(Statement {
        kind: b.statement(stmt)?,
        span,
    })
}

/// Builds the owned AST from pest pairs, one method per grammar rule.
struct Builder {
    offset: usize,
}

impl Builder {
    fn span(&self, pair: &Pair<'_, Rule>) -> Span {
        let s = pair.as_span();
        Span::new(s.start(), s.end()).shifted(self.offset)
    }

    fn statement(&self, pair: Pair<'_, Rule>) -> Result<StatementKind, SyntaxError> {
        let rule = pair.as_rule();
        let mut inner = pair.into_inner();
        Ok(match rule {
            Rule::load_stmt => {
                inner.next(); // LOAD
                let source = inner.next().expect("LOAD has a source");
                let engine = match source.as_rule() {
                    Rule::postgres_source => Some(crate::ast::Engine::Postgres),
                    Rule::spark_source => Some(crate::ast::Engine::Spark),
                    _ => None,
                };
                let (path, database) = match engine {
                    Some(engine) => {
                        let mut parts = source.into_inner().skip(1); // POSTGRES or SPARK
                        let path = self.text(parts.next().expect("a connection string"));
                        let table = parts
                            .filter(|p| p.as_rule() != Rule::kw_table)
                            .map(|p| self.name(p))
                            .collect();
                        (path, Some(crate::ast::Database { engine, table }))
                    }
                    None => (self.text(source), None),
                };
                let (mut alias, mut no_header, mut neighbours, mut unit, mut columns) =
                    (None, false, None, None, None);
                let (mut delimiter, mut decimal) = (None, None);
                while let Some(p) = inner.next() {
                    let span = self.span(&p);
                    match p.as_rule() {
                        Rule::kw_as => alias = inner.next().map(|n| self.name(n)),
                        Rule::no_header if no_header => return Err(duplicate("NO HEADER", span)),
                        Rule::no_header => no_header = true,
                        Rule::delimiter_clause if delimiter.is_some() => {
                            return Err(duplicate("DELIMITER", span))
                        }
                        Rule::delimiter_clause => delimiter = Some(self.clause_text(p)),
                        Rule::decimal_clause if decimal.is_some() => {
                            return Err(duplicate("DECIMAL", span))
                        }
                        Rule::decimal_clause => decimal = Some(self.clause_text(p)),
                        Rule::neighbours_clause if neighbours.is_some() => {
                            return Err(duplicate("NEIGHBOURS", span))
                        }
                        Rule::neighbours_clause => neighbours = Some(self.neighbours(p)),
                        Rule::unit_clause if unit.is_some() => {
                            return Err(duplicate("PRIVACY UNIT", span))
                        }
                        Rule::unit_clause => {
                            let mut parts = p.into_inner().skip(2); // PRIVACY UNIT
                            let column = self.name(parts.next().expect("a unit column"));
                            let max_rows = parts.nth(2).map(|n| self.number(n)); // MAX ROWS k
                            unit = Some(crate::ast::UnitClause {
                                column,
                                max_rows,
                                span,
                            });
                        }
                        Rule::columns_clause if columns.is_some() => {
                            return Err(duplicate("COLUMNS", span))
                        }
                        Rule::columns_clause => columns = Some(self.columns(p)),
                        _ => {}
                    }
                }
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
                }
            }
            Rule::use_stmt => StatementKind::Use {
                table: self.name(inner.nth(1).expect("USE has a name")),
            },
            Rule::show_stmt => match inner.nth(1).expect("SHOW has a subject").as_rule() {
                Rule::kw_tables => StatementKind::ShowTables,
                Rule::kw_budget => StatementKind::ShowBudget,
                Rule::kw_cube => StatementKind::ShowCube,
                _ => StatementKind::ShowHistory,
            },
            Rule::describe_stmt => StatementKind::Describe {
                table: inner.nth(1).map(|p| self.name(p)),
            },
            Rule::set_stmt => {
                let what = inner.nth(1).expect("SET has a subject");
                let rule = what.as_rule();
                let words: Vec<_> = what.into_inner().collect();
                let rho = words.iter().any(|p| p.as_rule() == Rule::kw_rho);
                let number = self.number(words.last().cloned().expect("SET x has a number"));
                match rule {
                    Rule::set_budget => StatementKind::SetBudget { total: number, rho },
                    Rule::set_delta => StatementKind::SetDelta { delta: number },
                    _ => StatementKind::SetSeed { seed: number },
                }
            }
            Rule::count_stmt => StatementKind::Count(self.count(inner)?),
            Rule::histogram_stmt | Rule::count_by_stmt => {
                StatementKind::Histogram(self.histogram(inner)?)
            }
            Rule::sum_stmt => StatementKind::Sum(self.sum(inner)?),
            Rule::stat_stmt => StatementKind::Statistic(self.statistic(inner)?),
            Rule::choose_stmt => StatementKind::ChooseEps(self.choose(inner)),
            Rule::cube_stmt => {
                inner.next(); // CUBE
                let first = inner.next().expect("CUBE has cells");
                if first.as_rule() == Rule::number {
                    StatementKind::Cube {
                        cells: self.number(first),
                        neighbours: inner.next().map(|p| self.neighbours(p)),
                    }
                } else {
                    let dims = inner
                        .map(|dim| {
                            let mut parts = dim.into_inner();
                            let column = self.name(parts.next().expect("a dimension has a column"));
                            CubeDim {
                                column,
                                points: parts.map(|p| self.literal(p)).collect(),
                            }
                        })
                        .collect();
                    StatementKind::CubeBy { dims }
                }
            }
            Rule::observe_stmt => {
                inner.next(); // OBSERVE
                let row = self.vector(inner.next().expect("OBSERVE has a row"));
                let value = self.number(inner.next().expect("OBSERVE has a value"));
                let eps = self.number(inner.nth(2).expect("OBSERVE has an epsilon"));
                StatementKind::Observe { row, value, eps }
            }
            Rule::estimate_stmt => {
                let what = inner.nth(1).expect("ESTIMATE has a query");
                if what.as_rule() == Rule::binned {
                    self.binned(what)
                } else {
                    StatementKind::Estimate {
                        query: self.query(what)?,
                    }
                }
            }
            Rule::prob_stmt => {
                inner.next(); // PROB
                let query = self.query(inner.next().expect("PROB has a query"))?;
                let how = inner.next().expect("PROB has an event");
                let event = if how.as_rule() == Rule::prob_cmp {
                    let x = self.number(inner.next().expect("a comparison has a number"));
                    if how.as_str() == ">" {
                        ProbEvent::Greater(x)
                    } else {
                        ProbEvent::Less(x)
                    }
                } else {
                    let a = self.number(inner.next().expect("BETWEEN has a low end"));
                    let b = self.number(inner.nth(1).expect("BETWEEN has a high end"));
                    ProbEvent::Between(a, b)
                };
                StatementKind::Prob { query, event }
            }
            Rule::simulate_stmt => {
                inner.next(); // SIMULATE
                inner.next(); // N
                let n = self.list(inner.next().expect("N has a list"));
                inner.next(); // P
                let p = self.list(inner.next().expect("P has a list"));
                let std = inner.next().expect("EPS or STD").as_rule() == Rule::kw_std;
                let noise = self.list(inner.next().expect("the noise has a list"));
                let mut runs = None;
                let mut plot = None;
                for part in inner {
                    match part.as_rule() {
                        Rule::kw_runs => {}
                        Rule::number => runs = Some(self.number(part)),
                        _ => plot = Some(self.plot(part)),
                    }
                }
                StatementKind::Simulate(Simulate {
                    n,
                    p,
                    std,
                    noise,
                    runs,
                    plot,
                })
            }
            Rule::out_of_range_stmt => {
                let mut numbers = inner.filter(|p| p.as_rule() == Rule::number);
                let n = self.number(numbers.next().expect("OUT OF RANGE has N"));
                let eps = self.number(numbers.next().expect("OUT OF RANGE has EPS"));
                let at = numbers.next().map(|p| self.number(p));
                StatementKind::OutOfRange { n, eps, at }
            }
            Rule::compare_smooth => StatementKind::CompareSmooth(self.lab_smooth(inner)),
            Rule::compare_accounting => self.compare_accounting(inner),
            Rule::compare_stmt => {
                let eps = self.list(inner.nth(3).expect("COMPARE NOISE EPS has a list"));
                let sensitivity = inner.nth(1).map(|p| self.number(p));
                StatementKind::CompareNoise { eps, sensitivity }
            }
            Rule::select_stmt => StatementKind::Select(Box::new(self.select(inner)?)),
            Rule::explain_stmt => {
                inner.next(); // EXPLAIN
                let what = inner.next().expect("EXPLAIN has a statement");
                StatementKind::Explain(Box::new(self.statement(what)?))
            }
            other => unreachable!("the grammar has no statement rule {other:?}"),
        })
    }

    fn count(&self, mut inner: Pairs<'_, Rule>) -> Result<CountQuery, SyntaxError> {
        let terms = self.linear(inner.next().expect("COUNT has terms"))?;
        let clause = inner.next().expect("COUNT has an epsilon or an accuracy");
        let accuracy = if clause.as_rule() == Rule::eps_clause {
            Accuracy::Eps(self.number(clause.into_inner().nth(2).expect("EPS has a number")))
        } else if clause.as_rule() == Rule::rho_clause {
            Accuracy::Rho(self.number(clause.into_inner().nth(2).expect("RHO has a number")))
        } else {
            let mut parts = clause.into_inner();
            let half_width = self.number(parts.nth(1).expect("WITHIN has a number"));
            let (at, at_percent) = self.amount(parts.nth(1).expect("AT has an amount"));
            Accuracy::Within {
                half_width,
                at,
                at_percent,
            }
        };
        let mut prior = None;
        let mut mechanism = None;
        let mut plot = None;
        for clause in inner {
            let span = self.span(&clause);
            let rule = clause.as_rule();
            if rule == Rule::plot_clause {
                if plot.is_some() {
                    return Err(duplicate("PLOT", span));
                }
                plot = Some(self.plot(clause));
                continue;
            }
            if rule == Rule::prior_clause {
                if prior.is_some() {
                    return Err(duplicate("PRIOR", span));
                }
                let numbers: Vec<_> = clause
                    .into_inner()
                    .filter(|p| p.as_rule() == Rule::number)
                    .map(|p| self.number(p))
                    .collect();
                let mut numbers = numbers.into_iter();
                prior = Some(Prior {
                    p: numbers.next().expect("PRIOR has p"),
                    n: numbers.next(),
                });
                continue;
            }
            let value = clause.into_inner().last().expect("a clause has a value");
            match rule {
                Rule::mechanism_clause if mechanism.is_none() => mechanism = Some(self.name(value)),
                _ => return Err(duplicate("MECHANISM", span)),
            }
        }
        Ok(CountQuery {
            terms,
            accuracy,
            prior,
            mechanism,
            plot,
        })
    }

    /// `HISTOGRAM [WHERE p] WITH EPS e ...` or `COUNT [WHERE p] BY a, b WITH EPS e ...`.
    fn histogram(&self, inner: Pairs<'_, Rule>) -> Result<Histogram, SyntaxError> {
        let mut h = Histogram {
            by: None,
            filter: None,
            eps: Number {
                value: 0.0,
                text: String::new(),
                span: Span::new(0, 0),
            },
            rho: false,
            mechanism: None,
            plot: None,
        };
        let mut after_by = false;
        for p in inner {
            let span = self.span(&p);
            match p.as_rule() {
                Rule::kw_histogram | Rule::kw_count | Rule::kw_where => {}
                Rule::kw_by => after_by = true,
                Rule::predicate => h.filter = Some(self.predicate(p)?),
                Rule::bare_name | Rule::quoted_name if after_by => {
                    h.by.get_or_insert_with(Vec::new).push(self.name(p));
                }
                Rule::eps_clause | Rule::rho_clause => {
                    h.rho = p.as_rule() == Rule::rho_clause;
                    h.eps = self.number(p.into_inner().nth(2).expect("EPS has a number"));
                }
                Rule::mechanism_clause if h.mechanism.is_none() => {
                    let value = p.into_inner().last().expect("a clause has a value");
                    h.mechanism = Some(self.name(value));
                }
                Rule::mechanism_clause => return Err(duplicate("MECHANISM", span)),
                Rule::plot_clause if h.plot.is_none() => h.plot = Some(self.plot(p)),
                Rule::plot_clause => return Err(duplicate("PLOT", span)),
                other => unreachable!("the grammar gives a histogram no {other:?}"),
            }
        }
        Ok(h)
    }

    /// `SELECT [WITH DIFFERENTIAL_PRIVACY OPTIONS (...)] aggregate [AS a] FROM t [WHERE p]
    /// [GROUP BY ...]`.
    fn select(&self, inner: Pairs<'_, Rule>) -> Result<Select, SyntaxError> {
        let mut select = Select {
            options: None,
            aggregate: SqlAggregate::Count,
            aggregate_span: Span::new(0, 0),
            label: None,
            table: Ident {
                name: String::new(),
                span: Span::new(0, 0),
            },
            filter: None,
            group_by: None,
        };
        let (mut after_as, mut after_from) = (false, false);
        for p in inner {
            match p.as_rule() {
                Rule::kw_select | Rule::kw_where => {}
                Rule::kw_as => after_as = true,
                Rule::kw_from => after_from = true,
                Rule::dp_options => {
                    let options = p
                        .into_inner()
                        .filter(|o| o.as_rule() == Rule::dp_option)
                        .map(|o| {
                            let mut parts = o.into_inner();
                            let name = self.name(parts.next().expect("an option has a name"));
                            let value = parts.next().expect("an option has a value");
                            SqlOption {
                                name,
                                value: value.as_str().to_string(),
                                span: self.span(&value),
                            }
                        })
                        .collect();
                    select.options = Some(options);
                }
                Rule::sql_aggregate => {
                    select.aggregate_span = self.span(&p);
                    let what = p.into_inner().next().expect("an aggregate");
                    if what.as_rule() == Rule::sql_sum {
                        let mut parts = what.into_inner();
                        let avg = parts.next().expect("SUM or AVG").as_rule() == Rule::kw_avg;
                        let column = self.name(parts.next().expect("a column"));
                        let bounds = parts.next().map(|b| {
                            let mut numbers = b
                                .into_inner()
                                .filter(|n| n.as_rule() == Rule::number)
                                .map(|n| self.number(n));
                            let lo = numbers.next().expect("a lower bound");
                            (lo, numbers.next().expect("an upper bound"))
                        });
                        select.aggregate = SqlAggregate::Sum {
                            avg,
                            column,
                            bounds,
                        };
                    }
                }
                Rule::bare_name | Rule::quoted_name if after_from => select.table = self.name(p),
                Rule::bare_name | Rule::quoted_name if after_as => {
                    select.label = Some(self.name(p));
                    after_as = false;
                }
                Rule::predicate => select.filter = Some(self.predicate(p)?),
                Rule::group_by => {
                    let names = p
                        .into_inner()
                        .filter(|n| matches!(n.as_rule(), Rule::bare_name | Rule::quoted_name))
                        .map(|n| self.name(n))
                        .collect();
                    select.group_by = Some(names);
                }
                other => unreachable!("the grammar gives a SELECT no {other:?}"),
            }
        }
        Ok(select)
    }

    /// `MEDIAN col`, `QUANTILE q OF col` or `MEAN col CLAMP (lo, hi)` after `ESTIMATE`.
    fn binned(&self, pair: Pair<'_, Rule>) -> StatementKind {
        let mut inner = pair.into_inner();
        let kw = inner.next().expect("a statistic");
        let (stat, column) = match kw.as_rule() {
            Rule::kw_median => (BinnedStat::Median, inner.next()),
            Rule::kw_quantile => {
                let q = self.number(inner.next().expect("a level"));
                inner.next(); // OF
                (BinnedStat::Quantile(q), inner.next())
            }
            _ => {
                let column = inner.next();
                inner.next(); // CLAMP
                let lo = self.number(inner.next().expect("a lower bound"));
                let hi = self.number(inner.next().expect("an upper bound"));
                (BinnedStat::Mean(lo, hi), column)
            }
        };
        StatementKind::Binned {
            stat,
            column: self.name(column.expect("a column")),
        }
    }

    /// `SUM|MEAN col CLAMP (lo, hi) [WHERE p] WITH EPS e [MECHANISM m]`, or `WITH RHO r`.
    fn sum(&self, mut inner: Pairs<'_, Rule>) -> Result<SumQuery, SyntaxError> {
        let mean = inner.next().expect("SUM or MEAN").as_rule() == Rule::kw_mean;
        let column = self.name(inner.next().expect("a column"));
        inner.next(); // CLAMP
        let lo = self.number(inner.next().expect("a lower bound"));
        let hi = self.number(inner.next().expect("an upper bound"));
        let mut q = SumQuery {
            mean,
            column,
            lo,
            hi,
            filter: None,
            eps: Number {
                value: 0.0,
                text: String::new(),
                span: Span::new(0, 0),
            },
            rho: false,
            mechanism: None,
        };
        for p in inner {
            match p.as_rule() {
                Rule::kw_where => {}
                Rule::predicate => q.filter = Some(self.predicate(p)?),
                Rule::eps_clause | Rule::rho_clause => {
                    q.rho = p.as_rule() == Rule::rho_clause;
                    q.eps = self.number(p.into_inner().nth(2).expect("a clause has a number"));
                }
                Rule::mechanism_clause => {
                    let value = p.into_inner().last().expect("a clause has a value");
                    q.mechanism = Some(self.name(value));
                }
                other => unreachable!("the grammar gives a sum no {other:?}"),
            }
        }
        Ok(q)
    }

    /// `SHARE WHERE p ...` or `MIN | MEDIAN | MAX col CLAMP (lo, hi) [WHERE p] ...`.
    fn statistic(&self, mut inner: Pairs<'_, Rule>) -> Result<StatQuery, SyntaxError> {
        let target = inner.next().expect("a statistic");
        let mut parts = target.into_inner();
        let kind = match parts.next().expect("a statistic's keyword").as_rule() {
            Rule::kw_share => StatKind::Share,
            Rule::kw_min => StatKind::Min,
            Rule::kw_median => StatKind::Median,
            _ => StatKind::Max,
        };
        let mut q = StatQuery {
            kind,
            column: None,
            filter: None,
            eps: Number {
                value: 0.0,
                text: String::new(),
                span: Span::new(0, 0),
            },
            noise: None,
            gamma: None,
        };
        if kind != StatKind::Share {
            let column = self.name(parts.next().expect("a column"));
            parts.next(); // CLAMP
            let lo = self.number(parts.next().expect("a lower bound"));
            let hi = self.number(parts.next().expect("an upper bound"));
            q.column = Some((column, lo, hi));
        }
        for p in parts {
            if p.as_rule() == Rule::predicate {
                q.filter = Some(self.predicate(p)?);
            }
        }
        for p in inner {
            match p.as_rule() {
                Rule::eps_clause => {
                    q.eps = self.number(p.into_inner().nth(2).expect("EPS has a number"));
                }
                Rule::noise_clause => {
                    let mut clause = p.into_inner();
                    clause.next(); // NOISE
                    q.noise = Some(self.name(clause.next().expect("NOISE has a name")));
                    q.gamma = clause.nth(1).map(|g| self.number(g));
                }
                other => unreachable!("the grammar gives a statistic no {other:?}"),
            }
        }
        Ok(q)
    }

    /// `COMPARE NOISE COUNT | SHARE | MIN | MEDIAN | MAX | QUERIES ...`.
    fn lab_smooth(&self, mut inner: Pairs<'_, Rule>) -> LabSmooth {
        let what = inner.nth(2).expect("COMPARE NOISE compares something");
        let rule = what.as_rule();
        let mut parts = what.into_inner();
        let first = parts.next().expect("a keyword").as_rule();
        let lists: Vec<Pair<'_, Rule>> = parts
            .clone()
            .filter(|p| p.as_rule() == Rule::num_list)
            .collect();
        let list = |i: usize| self.list(lists[i].clone());
        let function = match rule {
            Rule::lab_count => LabFunction::Count,
            Rule::lab_share => LabFunction::Share {
                n: list(0),
                m: list(1),
            },
            Rule::lab_order => {
                let law = parts
                    .clone()
                    .find(|p| p.as_rule() == Rule::lab_law)
                    .expect("a law");
                let numbers: Vec<Number> = law
                    .into_inner()
                    .filter(|p| p.as_rule() == Rule::number)
                    .map(|p| self.number(p))
                    .collect();
                LabFunction::Order {
                    kind: match first {
                        Rule::kw_min => StatKind::Min,
                        Rule::kw_median => StatKind::Median,
                        _ => StatKind::Max,
                    },
                    n: list(0),
                    law: match numbers.as_slice() {
                        [a, b] => LabLaw::Beta(a.clone(), b.clone()),
                        _ => LabLaw::Uniform,
                    },
                }
            }
            _ => {
                let eps = parts
                    .filter(|p| p.as_rule() == Rule::number)
                    .map(|p| self.number(p))
                    .collect();
                return LabSmooth {
                    function: LabFunction::Queries {
                        sensitivity: list(0),
                        at: list(1),
                    },
                    eps,
                };
            }
        };
        let eps = list(lists.len() - 1);
        LabSmooth { function, eps }
    }

    fn query(&self, pair: Pair<'_, Rule>) -> Result<Query, SyntaxError> {
        Ok(match pair.as_rule() {
            Rule::vector => Query::Vector(self.vector(pair)),
            Rule::summed => Query::Sum(Box::new(self.summed(pair)?)),
            _ => Query::Linear(self.linear(pair)?),
        })
    }

    /// `SUM col CLAMP (lo, hi) [WHERE predicate]`, as estimated from the history.
    fn summed(&self, pair: Pair<'_, Rule>) -> Result<SumTarget, SyntaxError> {
        let mut inner = pair.into_inner();
        inner.next(); // SUM
        let column = self.name(inner.next().expect("a column"));
        inner.next(); // CLAMP
        let lo = self.number(inner.next().expect("a lower bound"));
        let hi = self.number(inner.next().expect("an upper bound"));
        let filter = inner
            .find(|p| p.as_rule() == Rule::predicate)
            .map(|p| self.predicate(p))
            .transpose()?;
        Ok(SumTarget {
            column,
            lo,
            hi,
            filter,
        })
    }

    /// `[-] term (+|- term)*`, each term `[c*] COUNT WHERE predicate`.
    fn linear(&self, pair: Pair<'_, Rule>) -> Result<Vec<CountTerm>, SyntaxError> {
        let start = self.span(&pair).start;
        let mut terms = Vec::new();
        let mut minus = false;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::lead_minus => minus = true,
                Rule::add_op => minus = p.as_str() == "-",
                _ => {
                    let mut parts = p.into_inner().peekable();
                    let coefficient = parts
                        .next_if(|q| q.as_rule() == Rule::number)
                        .map(|q| self.number(q));
                    let predicate =
                        self.predicate(parts.nth(2).expect("a term has a predicate"))?;
                    terms.push(CountTerm {
                        minus,
                        coefficient,
                        predicate,
                    });
                    minus = false;
                }
            }
        }
        if terms.len() > MAX_COUNT_TERMS {
            return Err(SyntaxError::TooLong {
                what: "counts",
                limit: MAX_COUNT_TERMS,
                span: Span::new(start, start + 1),
            });
        }
        Ok(terms)
    }

    fn choose(&self, mut inner: Pairs<'_, Rule>) -> ChooseEps {
        inner.next(); // CHOOSE
        let rho = inner.next().is_some_and(|p| p.as_rule() == Rule::kw_rho);
        inner.next(); // WITHIN
        let (within, within_percent) = self.amount(inner.next().expect("WITHIN has an amount"));
        inner.next(); // AT
        let (at, at_percent) = self.amount(inner.next().expect("AT has an amount"));
        let for_count = inner.nth(1).map(|p| self.number(p));
        ChooseEps {
            within,
            within_percent,
            at,
            at_percent,
            for_count,
            rho,
        }
    }

    fn list(&self, pair: Pair<'_, Rule>) -> Vec<Number> {
        pair.into_inner().map(|p| self.number(p)).collect()
    }

    fn plot(&self, pair: Pair<'_, Rule>) -> Plot {
        let mut metric = None;
        let mut path = None;
        for part in pair.into_inner() {
            match part.as_rule() {
                Rule::plot_metric => {
                    let which = part.into_inner().next().expect("a metric keyword");
                    metric = Some(if which.as_rule() == Rule::kw_error {
                        PlotMetric::Error
                    } else {
                        PlotMetric::Improvement
                    });
                }
                Rule::string => path = Some(self.text(part)),
                _ => {}
            }
        }
        Plot {
            metric,
            path: path.expect("PLOT has a file name"),
        }
    }

    fn vector(&self, pair: Pair<'_, Rule>) -> Vec<Number> {
        pair.into_inner().map(|p| self.number(p)).collect()
    }

    /// `COMPARE ACCOUNTING QUERIES (k, ...) WITHIN w AT c [FOR n] [PLOT 'f.svg']`.
    fn compare_accounting(&self, inner: Pairs<'_, Rule>) -> StatementKind {
        let mut queries = Vec::new();
        let mut amounts = Vec::new();
        let mut for_count = None;
        let mut plot = None;
        let mut after_for = false;
        for p in inner {
            match p.as_rule() {
                Rule::num_list => queries = self.list(p),
                Rule::amount => amounts.push(self.amount(p)),
                Rule::kw_for => after_for = true,
                Rule::number if after_for => for_count = Some(self.number(p)),
                Rule::plot_clause => plot = Some(self.plot(p)),
                _ => {}
            }
        }
        let mut amounts = amounts.into_iter();
        let (within, within_percent) = amounts.next().expect("WITHIN has an amount");
        let (at, at_percent) = amounts.next().expect("AT has an amount");
        StatementKind::CompareAccounting {
            queries,
            requirement: ChooseEps {
                within,
                within_percent,
                at,
                at_percent,
                for_count,
                rho: false,
            },
            plot,
        }
    }

    fn amount(&self, pair: Pair<'_, Rule>) -> (Number, bool) {
        let mut inner = pair.into_inner();
        let number = self.number(inner.next().expect("an amount has a number"));
        (number, inner.next().is_some())
    }

    /// A whole predicate: its size is bounded first, so every recursive walk of the tree
    /// (Pratt climbing, checking, printing, dropping) stays shallow.
    fn predicate(&self, pair: Pair<'_, Rule>) -> Result<Expr, SyntaxError> {
        let (mut terms, mut values) = (0usize, 0usize);
        for p in pair.clone().into_inner().flatten() {
            match p.as_rule() {
                Rule::comparison
                | Rule::flipped
                | Rule::in_list
                | Rule::between
                | Rule::kw_and
                | Rule::kw_or
                | Rule::kw_not => terms += 1,
                Rule::number | Rule::string | Rule::kw_true | Rule::kw_false => values += 1,
                _ => {}
            }
        }
        let start = self.span(&pair);
        let span = Span::new(start.start, start.start + 1);
        if terms > MAX_TERMS {
            return Err(SyntaxError::TooLong {
                what: "conditions and operators",
                limit: MAX_TERMS,
                span,
            });
        }
        if values > MAX_VALUES {
            return Err(SyntaxError::TooLong {
                what: "values",
                limit: MAX_VALUES,
                span,
            });
        }
        self.nested_predicate(pair)
    }

    fn nested_predicate(&self, pair: Pair<'_, Rule>) -> Result<Expr, SyntaxError> {
        let pairs = pair.into_inner();
        PRATT
            .map_primary(|p| self.primary(p))
            .map_prefix(|_, rhs| Ok(Expr::Not(Box::new(rhs?))))
            .map_infix(|lhs, op, rhs| {
                let (l, r) = (Box::new(lhs?), Box::new(rhs?));
                Ok(if op.as_rule() == Rule::kw_and {
                    Expr::And(l, r)
                } else {
                    Expr::Or(l, r)
                })
            })
            .parse(pairs)
    }

    fn primary(&self, pair: Pair<'_, Rule>) -> Result<Expr, SyntaxError> {
        let rule = pair.as_rule();
        if rule == Rule::predicate {
            return self.nested_predicate(pair);
        }
        if rule == Rule::flipped {
            return Ok(self.flipped(pair));
        }
        let mut inner = pair.into_inner().peekable();
        let column = self.name(inner.next().expect("a condition starts with a column"));
        let negated = inner.next_if(|p| p.as_rule() == Rule::negation).is_some();
        Ok(match rule {
            Rule::comparison => {
                let op = cmp_op(inner.next().expect("a comparison has an operator").as_str());
                let value = self.literal(inner.next().expect("a comparison has a value"));
                Expr::Compare { column, op, value }
            }
            Rule::in_list => {
                inner.next(); // IN
                let values = inner.map(|p| self.literal(p)).collect();
                Expr::In {
                    column,
                    negated,
                    values,
                }
            }
            Rule::between => {
                inner.next(); // BETWEEN
                let low = self.literal(inner.next().expect("BETWEEN has a low end"));
                inner.next(); // AND
                let high = self.literal(inner.next().expect("BETWEEN has a high end"));
                Expr::Between {
                    column,
                    negated,
                    low,
                    high,
                }
            }
            other => unreachable!("the grammar has no condition rule {other:?}"),
        })
    }

    /// `30 > age`: the comparison with its sides exchanged, `age < 30`.
    fn flipped(&self, pair: Pair<'_, Rule>) -> Expr {
        let mut inner = pair.into_inner();
        let value = self.literal(inner.next().expect("a flipped comparison has a value"));
        let op = match cmp_op(inner.next().expect("an operator").as_str()) {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::Le => CmpOp::Ge,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::Ge => CmpOp::Le,
            same => same,
        };
        let column = self.name(inner.next().expect("a flipped comparison has a column"));
        Expr::Compare { column, op, value }
    }

    fn literal(&self, pair: Pair<'_, Rule>) -> Literal {
        let span = self.span(&pair);
        match pair.as_rule() {
            Rule::number => Literal::Number(self.number(pair)),
            Rule::string => Literal::Text(self.text(pair)),
            Rule::kw_true => Literal::Bool(true, span),
            _ => Literal::Bool(false, span),
        }
    }

    fn number(&self, pair: Pair<'_, Rule>) -> Number {
        let text = pair.as_str().to_string();
        // The grammar admits only decimal literals, which f64 parsing accepts; overflow gives inf.
        let value = text.parse::<f64>().unwrap_or(f64::NAN);
        Number {
            text,
            value,
            span: self.span(&pair),
        }
    }

    fn text(&self, pair: Pair<'_, Rule>) -> Text {
        let raw = pair.as_str();
        Text {
            value: raw[1..raw.len() - 1].replace("''", "'"),
            span: self.span(&pair),
        }
    }

    /// The string of a clause made of a keyword and a string (`DELIMITER ';'`).
    fn clause_text(&self, clause: Pair<'_, Rule>) -> Text {
        let string = clause
            .into_inner()
            .nth(1)
            .expect("a keyword, then a string");
        self.text(string)
    }

    /// `COLUMNS (name type [domain], ...)`.
    fn columns(&self, clause: Pair<'_, Rule>) -> ColumnsClause {
        let span = self.span(&clause);
        let columns = clause
            .into_inner()
            .filter(|p| p.as_rule() == Rule::column_decl)
            .map(|decl| self.column_decl(decl))
            .collect();
        ColumnsClause { columns, span }
    }

    /// `name type [BETWEEN lo AND hi | IN ('a', ...)]`.
    fn column_decl(&self, decl: Pair<'_, Rule>) -> ColumnDecl {
        let span = self.span(&decl);
        let mut parts = decl.into_inner();
        let name = self.name(parts.next().expect("a declared column has a name"));
        let ty = match parts
            .next()
            .and_then(|t| t.into_inner().next())
            .expect("a declared column has a type")
            .as_rule()
        {
            Rule::kw_integer => DeclaredType::Integer,
            Rule::kw_float => DeclaredType::Float,
            Rule::kw_boolean => DeclaredType::Boolean,
            _ => DeclaredType::Text,
        };
        let domain = parts.next().map(|d| {
            let rule = d.as_rule();
            let mut inner = d.into_inner();
            if rule == Rule::domain_range {
                let lo = self.number(inner.nth(1).expect("BETWEEN has a low end"));
                let hi = self.number(inner.nth(1).expect("BETWEEN has a high end"));
                DeclaredDomain::Between(lo, hi)
            } else {
                DeclaredDomain::In(
                    inner
                        .filter(|p| p.as_rule() == Rule::string)
                        .map(|p| self.text(p))
                        .collect(),
                )
            }
        });
        ColumnDecl {
            name,
            ty,
            domain,
            span,
        }
    }

    /// The model named by a `NEIGHBOURS name` clause.
    fn neighbours(&self, clause: Pair<'_, Rule>) -> Ident {
        let name = clause.into_inner().last().expect("NEIGHBOURS has a name");
        self.name(name)
    }

    fn name(&self, pair: Pair<'_, Rule>) -> Ident {
        let raw = pair.as_str();
        let name = if pair.as_rule() == Rule::quoted_name {
            raw[1..raw.len() - 1].replace("\"\"", "\"")
        } else {
            raw.to_string()
        };
        Ident {
            name,
            span: self.span(&pair),
        }
    }
}

fn cmp_op(text: &str) -> CmpOp {
    match text {
        "=" => CmpOp::Eq,
        "!=" | "<>" => CmpOp::Ne,
        "<" => CmpOp::Lt,
        "<=" => CmpOp::Le,
        ">" => CmpOp::Gt,
        _ => CmpOp::Ge,
    }
}

fn duplicate(clause: &'static str, span: Span) -> SyntaxError {
    SyntaxError::DuplicateClause { clause, span }
}

#[cfg(test)]
mod tests;

/// The words of the language, upper case: for completion at the prompt and highlighting on
/// the page.
pub const KEYWORDS: &[&str] = &[
    "LOAD",
    "AS",
    "NO",
    "HEADER",
    "DELIMITER",
    "DECIMAL",
    "COLUMNS",
    "INTEGER",
    "FLOAT",
    "TEXT",
    "BOOLEAN",
    "USE",
    "SHOW",
    "TABLES",
    "BUDGET",
    "HISTORY",
    "DESCRIBE",
    "SET",
    "SEED",
    "COUNT",
    "HISTOGRAM",
    "SUM",
    "MEAN",
    "SHARE",
    "MIN",
    "MEDIAN",
    "MAX",
    "GAMMA",
    "smooth",
    "UNIFORM",
    "BETA",
    "QUERIES",
    "CLAMP",
    "WHERE",
    "WITH",
    "EPS",
    "PRIOR",
    "MECHANISM",
    "CHOOSE",
    "WITHIN",
    "AT",
    "FOR",
    "AND",
    "OR",
    "NOT",
    "IN",
    "BETWEEN",
    "TRUE",
    "FALSE",
    "laplace",
    "geometric",
    "staircase",
    "SIMULATE",
    "STD",
    "RUNS",
    "PLOT",
    "ERROR",
    "IMPROVEMENT",
    "OUT",
    "OF",
    "RANGE",
    "COMPARE",
    "NOISE",
    "SENSITIVITY",
    "EXPLAIN",
    "CUBE",
    "BY",
    "OBSERVE",
    "ESTIMATE",
    "PROB",
    "SELECT",
    "DIFFERENTIAL_PRIVACY",
    "OPTIONS",
    "AVG",
    "FROM",
    "GROUP",
    "help",
];
