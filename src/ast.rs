//! The owned syntax tree of dpq statements; `Display` prints canonical dpq that parses back to the same tree.

use crate::span::Span;
use std::fmt;

/// One statement with the span of its text (without the closing `;`).
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    /// What the statement says.
    pub kind: StatementKind,
    /// Where it was written.
    pub span: Span,
}

/// `PRIVACY UNIT col [MAX ROWS k]` (the bound is required; its absence is refused by name).
#[derive(Debug, Clone, PartialEq)]
pub struct UnitClause {
    /// The column naming the unit.
    pub column: Ident,
    /// `MAX ROWS k`.
    pub max_rows: Option<Number>,
    /// The whole clause.
    pub span: Span,
}

/// `COLUMNS (age integer BETWEEN 0 AND 120, sex text IN ('F', 'M'), ...)`: a declared schema.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnsClause {
    /// The declared columns, in the order written (at least one).
    pub columns: Vec<ColumnDecl>,
    /// The whole clause.
    pub span: Span,
}

/// One declared column: `age integer [BETWEEN 0 AND 120]` or `sex text [IN ('F', 'M')]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnDecl {
    /// Its name, as the file's header writes it (`c1`, `c2`, ... with `NO HEADER`).
    pub name: Ident,
    /// Its type.
    pub ty: DeclaredType,
    /// Its public domain, if declared: values outside it are missing.
    pub domain: Option<DeclaredDomain>,
    /// The whole declaration.
    pub span: Span,
}

/// A declared column type: `integer`, `float`, `text` or `boolean`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeclaredType {
    /// `integer`
    Integer,
    /// `float`
    Float,
    /// `text`
    Text,
    /// `boolean`
    Boolean,
}

/// A declared public domain.
#[derive(Debug, Clone, PartialEq)]
pub enum DeclaredDomain {
    /// `BETWEEN lo AND hi` (numbers, both ends included).
    Between(Number, Number),
    /// `IN ('a', 'b')` (text).
    In(Vec<Text>),
}

/// The statements of dpq.
#[derive(Debug, Clone, PartialEq)]
pub enum StatementKind {
    /// `LOAD 'people.csv' [AS people] [NO HEADER] [COLUMNS (age integer, ...)]`
    Load {
        /// The file's path as written (CSV, or Parquet files), or with `database` the
        /// engine's connection string.
        path: Text,
        /// `POSTGRES 'connection' TABLE name` or `SPARK 'sc://...' TABLE name`: the table of
        /// a database engine whose rows are asked there.
        database: Option<Database>,
        /// The table's name; by default the file's stem.
        alias: Option<Ident>,
        /// `NO HEADER`: the first row is data, and the columns are named `c1`, `c2`, ...
        no_header: bool,
        /// `DELIMITER ';'`: the character between a CSV file's fields, as written (`\t`, a
        /// backslash and a `t`, is a tab).
        delimiter: Option<Text>,
        /// `DECIMAL ','`: the mark before a CSV file's decimals, as written.
        decimal: Option<Text>,
        /// `NEIGHBOURS replace|add_remove`: how neighbouring tables differ.
        neighbours: Option<Ident>,
        /// `PRIVACY UNIT col MAX ROWS k`: the rows sharing a value of `col` are one unit's.
        unit: Option<UnitClause>,
        /// `COLUMNS (name type, ...)`: declared names and types instead of inferred ones.
        columns: Option<ColumnsClause>,
    },
    /// `USE people`
    Use {
        /// The table to make current.
        table: Ident,
    },
    /// `SHOW TABLES`
    ShowTables,
    /// `SHOW BUDGET`
    ShowBudget,
    /// `SHOW HISTORY`
    ShowHistory,
    /// `SHOW CUBE`: the teaching cube's measurements (H, alpha, S, y) and per-cell budgets.
    ShowCube,
    /// `DESCRIBE [people]`
    Describe {
        /// The table; the current one when absent.
        table: Option<Ident>,
    },
    /// `SET BUDGET 2.0`, or `SET BUDGET RHO 0.5` (zCDP)
    SetBudget {
        /// The new total of the current table: epsilon, or rho.
        total: Number,
        /// Written `RHO`: the table accounts in zCDP.
        rho: bool,
    },
    /// `SET DELTA 1e-6`: the delta at which a rho is also shown as (epsilon, delta).
    SetDelta {
        /// The delta, in (0, 1).
        delta: Number,
    },
    /// `SET SEED 42`
    SetSeed {
        /// The seed; a non-negative integer.
        seed: Number,
    },
    /// `COUNT WHERE age <= 30 WITH EPS 0.1 [PRIOR p=0.3] [MECHANISM laplace]`, a linear
    /// combination `2*COUNT WHERE a - COUNT WHERE b WITH EPS 0.05`, or `... WITHIN 10 AT 0.95`.
    Count(CountQuery),
    /// `HISTOGRAM [WHERE p] WITH EPS e` or `COUNT [WHERE p] BY a, b WITH EPS e`: a vector of
    /// counts over a cube's cells (or groups of them) released at once.
    Histogram(Histogram),
    /// `SUM col CLAMP (lo, hi) [WHERE p] WITH EPS e` or `MEAN ...`: a noisy sum or mean of a
    /// numeric column, its values clamped to public bounds.
    Sum(SumQuery),
    /// `SHARE WHERE p ...`, `MIN | MEDIAN | MAX col CLAMP (lo, hi) [WHERE p] ...`, each
    /// `WITH EPS e [NOISE smooth [GAMMA g] | NOISE laplace]`: a relative frequency or an order
    /// statistic, released with data-independent or data-dependent noise.
    Statistic(StatQuery),
    /// `ESTIMATE MEDIAN col`, `ESTIMATE QUANTILE q OF col`, `ESTIMATE MEAN col CLAMP (lo, hi)`:
    /// a statistic of a numeric dimension of the cube from the history's estimates of its
    /// bins (free).
    Binned {
        /// Which statistic.
        stat: BinnedStat,
        /// The dimension's column.
        column: Ident,
    },
    /// `CHOOSE EPS WITHIN 20% AT 0.8 FOR 100` or `CHOOSE EPS WITHIN 5 AT 0.95`
    ChooseEps(ChooseEps),
    /// `CUBE 4 [NEIGHBOURS replace]`: anonymous cells with no data, for teaching inference
    /// from history.
    Cube {
        /// How many cells.
        cells: Number,
        /// How neighbouring tables differ (Xiao and Xiong's `add_remove` when absent).
        neighbours: Option<Ident>,
    },
    /// `CUBE BY age (30, 65), sex ('F', 'M')`: public cells over the current table.
    CubeBy {
        /// The dimensions, in order.
        dims: Vec<CubeDim>,
    },
    /// `OBSERVE (1,1,0,0) = 30.8 WITH EPS 0.05`: a released measurement entered by hand.
    Observe {
        /// Coefficients over the cells.
        row: Vec<Number>,
        /// The noisy answer released.
        value: Number,
        /// The epsilon it was released with.
        eps: Number,
    },
    /// `ESTIMATE (1,0,1,0)` or `ESTIMATE COUNT WHERE age < 30`: the best linear unbiased
    /// estimate from the history, free.
    Estimate {
        /// The query.
        query: Query,
    },
    /// `PROB (1,0,1,0) > 0` or `PROB COUNT WHERE age < 30 > 10`: a posterior probability, free.
    Prob {
        /// The query.
        query: Query,
        /// The event.
        event: ProbEvent,
    },
    /// `SIMULATE N 100 P 0.3 EPS (0.05, 0.1) RUNS 100000 [PLOT 'f.svg']`
    Simulate(Simulate),
    /// `OUT OF RANGE N 100 EPS 0.1 [AT 30]`
    OutOfRange {
        /// The number of rows.
        n: Number,
        /// The epsilon of the Laplace noise.
        eps: Number,
        /// The true count asked about.
        at: Option<Number>,
    },
    /// `COMPARE NOISE EPS (0.1, 1, 10) [SENSITIVITY 1]`
    CompareNoise {
        /// The epsilons compared.
        eps: Vec<Number>,
        /// The sensitivity; 1 when absent.
        sensitivity: Option<Number>,
    },
    /// `COMPARE ACCOUNTING QUERIES (1, 10, 100) WITHIN 10 AT 0.95 [PLOT 'f.svg']`: a workload
    /// of k counts of one cell at an accuracy, charged in pure epsilon and in zCDP.
    CompareAccounting {
        /// The numbers of counts.
        queries: Vec<Number>,
        /// The accuracy of each count (as `CHOOSE` states it).
        requirement: ChooseEps,
        /// `PLOT 'file.svg'`: epsilon against the number of counts.
        plot: Option<Plot>,
    },
    /// `COMPARE NOISE COUNT | SHARE | MIN | MEDIAN | MAX | QUERIES ...`: Laplace against
    /// data-dependent noise, the slides' second half.
    CompareSmooth(LabSmooth),
    /// `EXPLAIN statement`: what the statement would do, doing nothing.
    Explain(Box<StatementKind>),
    /// `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (...) COUNT(*) FROM t ...`: BigQuery's SQL
    /// form of a count, sum, mean or count per group, run as the statement it translates to.
    Select(Box<Select>),
}

/// One `name = value` of `OPTIONS (...)`.
#[derive(Debug, Clone, PartialEq)]
pub struct SqlOption {
    /// The option's name as written (`epsilon`).
    pub name: Ident,
    /// Its value: a number, a quoted string or a name, as written.
    pub value: String,
    /// Where the value is.
    pub span: Span,
}

/// The aggregate of a `SELECT`.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlAggregate {
    /// `COUNT(*)`
    Count,
    /// `SUM(col [, contribution_bounds_per_group => (lo, hi)])`, or `AVG(...)` with `avg`.
    Sum {
        /// `AVG` rather than `SUM`.
        avg: bool,
        /// The column.
        column: Ident,
        /// The public bounds each value is clamped to.
        bounds: Option<(Number, Number)>,
    },
}

/// `SELECT [WITH DIFFERENTIAL_PRIVACY OPTIONS (...)] aggregate [AS a] FROM t [WHERE p]
/// [GROUP BY c, ...]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Select {
    /// `OPTIONS (...)`; `None` for a plain SQL query, which the checker refuses.
    pub options: Option<Vec<SqlOption>>,
    /// What is computed.
    pub aggregate: SqlAggregate,
    /// Where the aggregate is written.
    pub aggregate_span: Span,
    /// `AS name` after the aggregate: a label, kept only to print the statement back.
    pub label: Option<Ident>,
    /// The table asked.
    pub table: Ident,
    /// `WHERE p`.
    pub filter: Option<Expr>,
    /// `GROUP BY a, b`.
    pub group_by: Option<Vec<Ident>>,
}

impl fmt::Display for Select {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SELECT")?;
        if let Some(options) = &self.options {
            f.write_str(" WITH DIFFERENTIAL_PRIVACY OPTIONS (")?;
            for (i, o) in options.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{} = {}", o.name, o.value)?;
            }
            f.write_str(")")?;
        }
        match &self.aggregate {
            SqlAggregate::Count => f.write_str(" COUNT(*)")?,
            SqlAggregate::Sum {
                avg,
                column,
                bounds,
            } => {
                write!(f, " {}({column}", if *avg { "AVG" } else { "SUM" })?;
                if let Some((lo, hi)) = bounds {
                    write!(f, ", contribution_bounds_per_group => ({lo}, {hi})")?;
                }
                f.write_str(")")?;
            }
        }
        if let Some(label) = &self.label {
            write!(f, " AS {label}")?;
        }
        write!(f, " FROM {}", self.table)?;
        if let Some(p) = &self.filter {
            write!(f, " WHERE {p}")?;
        }
        if let Some(by) = &self.group_by {
            f.write_str(" GROUP BY ")?;
            for (i, d) in by.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{d}")?;
            }
        }
        Ok(())
    }
}

/// The law simulated values of `COMPARE NOISE MIN | MEDIAN | MAX` are drawn from.
#[derive(Debug, Clone, PartialEq)]
pub enum LabLaw {
    /// `UNIFORM`: U[0, 1].
    Uniform,
    /// `BETA (a, b)`.
    Beta(Number, Number),
}

/// What `COMPARE NOISE` compares data-dependent noise on.
#[derive(Debug, Clone, PartialEq)]
pub enum LabFunction {
    /// `COUNT EPS (...)`: the absolute frequency.
    Count,
    /// `SHARE N (...) M (...)`: the relative frequency at `m = M n`.
    Share {
        /// Data set sizes.
        n: Vec<Number>,
        /// Fractions of `n` with the property.
        m: Vec<Number>,
    },
    /// `MIN | MEDIAN | MAX N (...) FROM law`: an order statistic of simulated values in [0, 1].
    Order {
        /// Which statistic.
        kind: StatKind,
        /// Data set sizes.
        n: Vec<Number>,
        /// The law of the values.
        law: LabLaw,
    },
    /// `QUERIES SENSITIVITY (d1, d2) EPS e AT (...)`: the confidence regions of two queries
    /// answered at once.
    Queries {
        /// Each query's sensitivity.
        sensitivity: Vec<Number>,
        /// The confidence levels.
        at: Vec<Number>,
    },
}

/// `COMPARE NOISE` of the data-dependent side.
#[derive(Debug, Clone, PartialEq)]
pub struct LabSmooth {
    /// What is compared.
    pub function: LabFunction,
    /// The epsilons.
    pub eps: Vec<Number>,
}

impl fmt::Display for LabSmooth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |xs: &[Number]| {
            let items: Vec<String> = xs.iter().map(ToString::to_string).collect();
            format!("({})", items.join(", "))
        };
        f.write_str("COMPARE NOISE ")?;
        match &self.function {
            LabFunction::Count => write!(f, "COUNT EPS {}", list(&self.eps)),
            LabFunction::Share { n, m } => write!(
                f,
                "SHARE N {} M {} EPS {}",
                list(n),
                list(m),
                list(&self.eps)
            ),
            LabFunction::Order { kind, n, law } => {
                write!(f, "{kind} N {} FROM ", list(n))?;
                match law {
                    LabLaw::Uniform => f.write_str("UNIFORM")?,
                    LabLaw::Beta(a, b) => write!(f, "BETA ({a}, {b})")?,
                }
                write!(f, " EPS {}", list(&self.eps))
            }
            LabFunction::Queries { sensitivity, at } => write!(
                f,
                "QUERIES SENSITIVITY {} EPS {} AT {}",
                list(sensitivity),
                self.eps
                    .first()
                    .map(ToString::to_string)
                    .unwrap_or_default(),
                list(at)
            ),
        }
    }
}

/// `SIMULATE`: the Monte Carlo comparison of the naive and Bayes estimators (paper 1, section 4).
#[derive(Debug, Clone, PartialEq)]
pub struct Simulate {
    /// Database sizes.
    pub n: Vec<Number>,
    /// Predicate probabilities.
    pub p: Vec<Number>,
    /// The noise is given as standard deviations (`STD`) rather than epsilons (`EPS`).
    pub std: bool,
    /// Epsilons, or noise standard deviations `sqrt(2)/eps`.
    pub noise: Vec<Number>,
    /// `RUNS r`: runs per point; 100,000 (the paper's) when absent.
    pub runs: Option<Number>,
    /// `PLOT ...`: a chart to write.
    pub plot: Option<Plot>,
}

/// `PLOT [ERROR | IMPROVEMENT] 'file.svg'`: an SVG chart to write.
#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    /// Which metric to draw (SIMULATE only); both when absent.
    pub metric: Option<PlotMetric>,
    /// The file to write.
    pub path: Text,
}

/// The metric drawn by `SIMULATE ... PLOT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlotMetric {
    /// `ERROR`: the average absolute errors (paper 1, Figures 1-5).
    Error,
    /// `IMPROVEMENT`: the probability that Bayes is closer (Figures 6-8).
    Improvement,
}

/// The event of a `PROB` statement.
#[derive(Debug, Clone, PartialEq)]
pub enum ProbEvent {
    /// `> x`
    Greater(Number),
    /// `< x`
    Less(Number),
    /// `BETWEEN a AND b`
    Between(Number, Number),
}

/// A linear query asked of the history: by coefficients over the cells, or by counts.
#[derive(Debug, Clone, PartialEq)]
pub enum Query {
    /// `(1, 0, 1, 0)`
    Vector(Vec<Number>),
    /// `COUNT WHERE a - 2*COUNT WHERE b`
    Linear(Vec<CountTerm>),
    /// `SUM income CLAMP (0, 100000) WHERE region = 'north'`
    Sum(Box<SumTarget>),
}

/// A clamped sum estimated from the history: `SUM col CLAMP (lo, hi) [WHERE p]`.
#[derive(Debug, Clone, PartialEq)]
pub struct SumTarget {
    /// The column summed.
    pub column: Ident,
    /// The lower bound.
    pub lo: Number,
    /// The upper bound.
    pub hi: Number,
    /// `WHERE p`: the rows summed; every row when absent.
    pub filter: Option<Expr>,
}

impl fmt::Display for SumTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SUM {} CLAMP ({}, {})", self.column, self.lo, self.hi)?;
        if let Some(p) = &self.filter {
            write!(f, " WHERE {p}")?;
        }
        Ok(())
    }
}

/// One dimension of a cube: a column cut at numbers, or split by listed values.
#[derive(Debug, Clone, PartialEq)]
pub struct CubeDim {
    /// The column.
    pub column: Ident,
    /// Cuts (numbers) or values (strings, booleans).
    pub points: Vec<Literal>,
}

/// One term of a linear query: `[-] [c*] COUNT WHERE predicate`.
#[derive(Debug, Clone, PartialEq)]
pub struct CountTerm {
    /// Written with a minus sign before it (`- COUNT ...`, `a - 2*COUNT ...`).
    pub minus: bool,
    /// The coefficient `c` of `c*COUNT`; 1 when absent.
    pub coefficient: Option<Number>,
    /// The rows counted.
    pub predicate: Expr,
}

/// `HISTOGRAM [WHERE p] WITH EPS e [MECHANISM m] [PLOT 'f.svg']`, or with `BY` the counts
/// per group of cells: `COUNT [WHERE p] BY a, b WITH EPS e ...`.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    /// `BY a, b`: the cube's dimensions whose coordinates group the cells; every cell when
    /// absent.
    pub by: Option<Vec<Ident>>,
    /// `WHERE p`: the cells counted (a union of cells); every cell when absent.
    pub filter: Option<Expr>,
    /// The epsilon of the whole vector (its rho, with `rho`).
    pub eps: Number,
    /// Written `WITH RHO`: Gaussian noise on every part, on a zCDP table.
    pub rho: bool,
    /// `MECHANISM name`: the noise; Laplace when absent.
    pub mechanism: Option<Ident>,
    /// `PLOT 'file.svg'`: the counts as bars with their intervals.
    pub plot: Option<Plot>,
}

impl fmt::Display for Histogram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.by.is_some() {
            "COUNT"
        } else {
            "HISTOGRAM"
        })?;
        if let Some(p) = &self.filter {
            write!(f, " WHERE {p}")?;
        }
        if let Some(by) = &self.by {
            f.write_str(" BY ")?;
            for (i, d) in by.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{d}")?;
            }
        }
        write!(
            f,
            " WITH {} {}",
            if self.rho { "RHO" } else { "EPS" },
            self.eps
        )?;
        if let Some(m) = &self.mechanism {
            write!(f, " MECHANISM {m}")?;
        }
        if let Some(p) = &self.plot {
            write!(f, " {p}")?;
        }
        Ok(())
    }
}

/// A statistic of a cube's numeric dimension, from its bins.
#[derive(Debug, Clone, PartialEq)]
pub enum BinnedStat {
    /// `MEDIAN`: the bin holding the middle of the distribution.
    Median,
    /// `QUANTILE q OF`: the bin holding the `q`-quantile.
    Quantile(Number),
    /// `MEAN ... CLAMP (lo, hi)`: the bounds of the mean, the outer bins closed by the clamp.
    Mean(Number, Number),
}

/// `SUM col CLAMP (lo, hi) [WHERE p] WITH EPS e [MECHANISM m]` (or `WITH RHO r`), or
/// `MEAN ...`.
#[derive(Debug, Clone, PartialEq)]
pub struct SumQuery {
    /// `MEAN` rather than `SUM`.
    pub mean: bool,
    /// The column summed.
    pub column: Ident,
    /// The public lower bound every value is clamped to.
    pub lo: Number,
    /// The public upper bound.
    pub hi: Number,
    /// `WHERE p`: the rows summed; every row when absent.
    pub filter: Option<Expr>,
    /// The epsilon (its rho, with `rho`).
    pub eps: Number,
    /// Written `WITH RHO`: Gaussian noise, on a zCDP table.
    pub rho: bool,
    /// `MECHANISM name`: the noise; Laplace when absent.
    pub mechanism: Option<Ident>,
}

impl fmt::Display for SumQuery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = if self.mean { "MEAN" } else { "SUM" };
        write!(f, "{what} {} CLAMP ({}, {})", self.column, self.lo, self.hi)?;
        if let Some(p) = &self.filter {
            write!(f, " WHERE {p}")?;
        }
        let with = if self.rho { "RHO" } else { "EPS" };
        write!(f, " WITH {with} {}", self.eps)?;
        if let Some(m) = &self.mechanism {
            write!(f, " MECHANISM {m}")?;
        }
        Ok(())
    }
}

/// Which data-dependent statistic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatKind {
    /// `SHARE WHERE p`: the fraction of the table's rows where `p` holds.
    Share,
    /// `MIN col CLAMP (lo, hi)`
    Min,
    /// `MEDIAN col CLAMP (lo, hi)`: the lower median.
    Median,
    /// `MAX col CLAMP (lo, hi)`
    Max,
}

impl fmt::Display for StatKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StatKind::Share => "SHARE",
            StatKind::Min => "MIN",
            StatKind::Median => "MEDIAN",
            StatKind::Max => "MAX",
        })
    }
}

/// `SHARE WHERE p WITH EPS e [NOISE n [GAMMA g]]`, or
/// `MIN | MEDIAN | MAX col CLAMP (lo, hi) [WHERE p] WITH EPS e [NOISE n [GAMMA g]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct StatQuery {
    /// Which statistic.
    pub kind: StatKind,
    /// The column of an order statistic and its public range; `None` for a share.
    pub column: Option<(Ident, Number, Number)>,
    /// `WHERE p`: the property of a share, or the rows an order statistic is over.
    pub filter: Option<Expr>,
    /// The epsilon.
    pub eps: Number,
    /// `NOISE name`: `smooth` or `laplace`; Laplace when absent.
    pub noise: Option<Ident>,
    /// `GAMMA g` after `NOISE smooth`.
    pub gamma: Option<Number>,
}

impl fmt::Display for StatQuery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.kind)?;
        if let Some((column, lo, hi)) = &self.column {
            write!(f, " {column} CLAMP ({lo}, {hi})")?;
        }
        if let Some(p) = &self.filter {
            write!(f, " WHERE {p}")?;
        }
        write!(f, " WITH EPS {}", self.eps)?;
        if let Some(n) = &self.noise {
            write!(f, " NOISE {n}")?;
        }
        if let Some(g) = &self.gamma {
            write!(f, " GAMMA {g}")?;
        }
        Ok(())
    }
}

/// How a count states what it may spend: an epsilon, or an accuracy to meet.
#[derive(Debug, Clone, PartialEq)]
pub enum Accuracy {
    /// `WITH EPS 0.1`
    Eps(Number),
    /// `WITH RHO 0.0025`: Gaussian noise, on a table that accounts in zCDP.
    Rho(Number),
    /// `WITHIN 10 AT 0.95` (or `AT 95%`): answer within ±10 with that probability.
    Within {
        /// The half-width.
        half_width: Number,
        /// The confidence level.
        at: Number,
        /// Written as a percentage.
        at_percent: bool,
    },
}

/// A noisy counting query, or a linear combination of counts.
#[derive(Debug, Clone, PartialEq)]
pub struct CountQuery {
    /// The counts and their coefficients; one term with no sign or coefficient is a plain count.
    pub terms: Vec<CountTerm>,
    /// The privacy parameter spent, or the accuracy to meet.
    pub accuracy: Accuracy,
    /// `PRIOR p=... [N size]`: the prior fraction of rows satisfying the predicate, and a
    /// public size of the table (needed when its row count is private).
    pub prior: Option<Prior>,
    /// `MECHANISM name`: the noise; Laplace when absent.
    pub mechanism: Option<Ident>,
    /// `PLOT 'file.svg'`: the posterior as a chart (with `PRIOR`).
    pub plot: Option<Plot>,
}

/// `PRIOR p=0.3 [N 28000]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Prior {
    /// The prior fraction.
    pub p: Number,
    /// The public size of the table, when its row count is private.
    pub n: Option<Number>,
}

impl fmt::Display for Prior {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PRIOR p={}", self.p)?;
        if let Some(n) = &self.n {
            write!(f, " N {n}")?;
        }
        Ok(())
    }
}

/// An accuracy requirement from which to choose epsilon.
#[derive(Debug, Clone, PartialEq)]
pub struct ChooseEps {
    /// The interval's half-width: absolute, or relative when `within_percent`.
    pub within: Number,
    /// `WITHIN 20%` rather than `WITHIN 5`.
    pub within_percent: bool,
    /// The confidence level: a probability, or a percentage when `at_percent`.
    pub at: Number,
    /// `AT 80%` rather than `AT 0.8`.
    pub at_percent: bool,
    /// `FOR c`: the assumed count, needed by a relative half-width.
    pub for_count: Option<Number>,
    /// `CHOOSE RHO`: the rho of a Gaussian count meeting the requirement.
    pub rho: bool,
}

/// A boolean expression over the columns of a table.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// `a AND b`
    And(Box<Expr>, Box<Expr>),
    /// `a OR b`
    Or(Box<Expr>, Box<Expr>),
    /// `NOT a`
    Not(Box<Expr>),
    /// `col <op> literal`
    Compare {
        /// The column.
        column: Ident,
        /// The comparison.
        op: CmpOp,
        /// The literal compared with.
        value: Literal,
    },
    /// `col [NOT] IN (v, ...)`
    In {
        /// The column.
        column: Ident,
        /// `NOT IN`.
        negated: bool,
        /// The listed values.
        values: Vec<Literal>,
    },
    /// `col [NOT] BETWEEN a AND b` (both ends included)
    Between {
        /// The column.
        column: Ident,
        /// `NOT BETWEEN`.
        negated: bool,
        /// The lower end.
        low: Literal,
        /// The upper end.
        high: Literal,
    },
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    /// `=`
    Eq,
    /// `!=` or `<>`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// A literal value in a predicate.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// `30`, `-2.5`, `1e3`
    Number(Number),
    /// `'F'`
    Text(Text),
    /// `TRUE` or `FALSE`
    Bool(bool, Span),
}

/// A number literal, keeping the text as written (budgets are summed exactly from it).
#[derive(Debug, Clone, PartialEq)]
pub struct Number {
    /// The literal as written, e.g. `0.1`.
    pub text: String,
    /// Its value; may be infinite for `1e400` (refused where a finite value is needed).
    pub value: f64,
    /// Where it was written.
    pub span: Span,
}

/// A quoted string literal, unescaped.
#[derive(Debug, Clone, PartialEq)]
pub struct Text {
    /// The value without quotes, `''` turned into `'`.
    pub value: String,
    /// Where it was written, quotes included.
    pub span: Span,
}

/// The engine of a table whose rows stay in a database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// PostgreSQL.
    Postgres,
    /// Apache Spark, through Spark Connect.
    Spark,
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Engine::Postgres => "POSTGRES",
            Engine::Spark => "SPARK",
        })
    }
}

/// `POSTGRES 'connection' TABLE name`, `SPARK 'sc://...' TABLE catalog.schema.name`.
#[derive(Debug, Clone, PartialEq)]
pub struct Database {
    /// The engine.
    pub engine: Engine,
    /// The table's name in parts (one for PostgreSQL; up to three for Spark).
    pub table: Vec<Ident>,
}

impl Database {
    /// The table's name as the engine is asked for it, its parts unquoted.
    pub fn parts(&self) -> Vec<String> {
        self.table.iter().map(|p| p.name.clone()).collect()
    }
}

impl fmt::Display for Database {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, part) in self.table.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            write!(f, "{part}")?;
        }
        Ok(())
    }
}

/// A name: a table, a column or a mechanism.
#[derive(Debug, Clone, PartialEq)]
pub struct Ident {
    /// The name, unquoted.
    pub name: String,
    /// Where it was written.
    pub span: Span,
}

impl Literal {
    /// Where the literal was written.
    pub fn span(&self) -> Span {
        match self {
            Literal::Number(n) => n.span,
            Literal::Text(t) => t.span,
            Literal::Bool(_, s) => *s,
        }
    }
}

impl Expr {
    /// The first column named in the expression, for error positions.
    pub fn first_column(&self) -> &Ident {
        match self {
            Expr::And(a, _) | Expr::Or(a, _) | Expr::Not(a) => a.first_column(),
            Expr::Compare { column, .. }
            | Expr::In { column, .. }
            | Expr::Between { column, .. } => column,
        }
    }
}

/// Words that cannot be bare names (they can be written as `"quoted"` names).
pub const RESERVED: &[&str] = &[
    "and", "or", "not", "in", "between", "with", "true", "false", "where",
];

impl fmt::Display for ColumnsClause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("COLUMNS (")?;
        for (i, c) in self.columns.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{} {}", c.name, c.ty)?;
            match &c.domain {
                None => {}
                Some(DeclaredDomain::Between(lo, hi)) => write!(f, " BETWEEN {lo} AND {hi}")?,
                Some(DeclaredDomain::In(values)) => {
                    f.write_str(" IN (")?;
                    for (j, v) in values.iter().enumerate() {
                        if j > 0 {
                            f.write_str(", ")?;
                        }
                        write!(f, "{v}")?;
                    }
                    f.write_str(")")?;
                }
            }
        }
        f.write_str(")")
    }
}

impl fmt::Display for DeclaredType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DeclaredType::Integer => "integer",
            DeclaredType::Float => "float",
            DeclaredType::Text => "text",
            DeclaredType::Boolean => "boolean",
        })
    }
}

impl fmt::Display for Statement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{};", self.kind)
    }
}

impl fmt::Display for StatementKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
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
                match database {
                    Some(d) => write!(f, "LOAD {} {path} TABLE {d}", d.engine)?,
                    None => write!(f, "LOAD {path}")?,
                }
                if let Some(a) = alias {
                    write!(f, " AS {a}")?;
                }
                if *no_header {
                    f.write_str(" NO HEADER")?;
                }
                if let Some(d) = delimiter {
                    write!(f, " DELIMITER {d}")?;
                }
                if let Some(d) = decimal {
                    write!(f, " DECIMAL {d}")?;
                }
                if let Some(m) = neighbours {
                    write!(f, " NEIGHBOURS {m}")?;
                }
                if let Some(u) = unit {
                    write!(f, " PRIVACY UNIT {}", u.column)?;
                    if let Some(k) = &u.max_rows {
                        write!(f, " MAX ROWS {k}")?;
                    }
                }
                if let Some(c) = columns {
                    write!(f, " {c}")?;
                }
                Ok(())
            }
            StatementKind::Use { table } => write!(f, "USE {table}"),
            StatementKind::ShowTables => f.write_str("SHOW TABLES"),
            StatementKind::ShowBudget => f.write_str("SHOW BUDGET"),
            StatementKind::ShowHistory => f.write_str("SHOW HISTORY"),
            StatementKind::ShowCube => f.write_str("SHOW CUBE"),
            StatementKind::Describe { table } => match table {
                Some(t) => write!(f, "DESCRIBE {t}"),
                None => f.write_str("DESCRIBE"),
            },
            StatementKind::SetBudget { total, rho } => {
                write!(f, "SET BUDGET {}{total}", if *rho { "RHO " } else { "" })
            }
            StatementKind::SetDelta { delta } => write!(f, "SET DELTA {delta}"),
            StatementKind::SetSeed { seed } => write!(f, "SET SEED {seed}"),
            StatementKind::Count(q) => write!(f, "{q}"),
            StatementKind::Histogram(h) => write!(f, "{h}"),
            StatementKind::Sum(q) => write!(f, "{q}"),
            StatementKind::Statistic(q) => write!(f, "{q}"),
            StatementKind::CompareSmooth(l) => write!(f, "{l}"),
            StatementKind::Binned { stat, column } => match stat {
                BinnedStat::Median => write!(f, "ESTIMATE MEDIAN {column}"),
                BinnedStat::Quantile(q) => write!(f, "ESTIMATE QUANTILE {q} OF {column}"),
                BinnedStat::Mean(lo, hi) => {
                    write!(f, "ESTIMATE MEAN {column} CLAMP ({lo}, {hi})")
                }
            },
            StatementKind::ChooseEps(c) => write!(f, "{c}"),
            StatementKind::Cube { cells, neighbours } => {
                write!(f, "CUBE {cells}")?;
                if let Some(m) = neighbours {
                    write!(f, " NEIGHBOURS {m}")?;
                }
                Ok(())
            }
            StatementKind::CubeBy { dims } => {
                f.write_str("CUBE BY ")?;
                for (i, d) in dims.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{} (", d.column)?;
                    for (j, p) in d.points.iter().enumerate() {
                        if j > 0 {
                            f.write_str(", ")?;
                        }
                        write!(f, "{p}")?;
                    }
                    f.write_str(")")?;
                }
                Ok(())
            }
            StatementKind::Observe { row, value, eps } => {
                write!(f, "OBSERVE {} = {value} WITH EPS {eps}", Vector(row))
            }
            StatementKind::Estimate { query } => write!(f, "ESTIMATE {query}"),
            StatementKind::Prob { query, event } => {
                write!(f, "PROB {query} ")?;
                match event {
                    ProbEvent::Greater(x) => write!(f, "> {x}"),
                    ProbEvent::Less(x) => write!(f, "< {x}"),
                    ProbEvent::Between(a, b) => write!(f, "BETWEEN {a} AND {b}"),
                }
            }
            StatementKind::Simulate(s) => write!(f, "{s}"),
            StatementKind::OutOfRange { n, eps, at } => {
                write!(f, "OUT OF RANGE N {n} EPS {eps}")?;
                if let Some(a) = at {
                    write!(f, " AT {a}")?;
                }
                Ok(())
            }
            StatementKind::CompareAccounting {
                queries,
                requirement: r,
                plot,
            } => {
                let pct = |b: bool| if b { "%" } else { "" };
                write!(
                    f,
                    "COMPARE ACCOUNTING QUERIES {} WITHIN {}{} AT {}{}",
                    List(queries),
                    r.within,
                    pct(r.within_percent),
                    r.at,
                    pct(r.at_percent)
                )?;
                if let Some(c) = &r.for_count {
                    write!(f, " FOR {c}")?;
                }
                if let Some(p) = plot {
                    write!(f, " {p}")?;
                }
                Ok(())
            }
            StatementKind::CompareNoise { eps, sensitivity } => {
                write!(f, "COMPARE NOISE EPS {}", List(eps))?;
                if let Some(d) = sensitivity {
                    write!(f, " SENSITIVITY {d}")?;
                }
                Ok(())
            }
            StatementKind::Explain(inner) => write!(f, "EXPLAIN {inner}"),
            StatementKind::Select(s) => write!(f, "{s}"),
        }
    }
}

/// Prints one number bare and several as `(0.05, 0.1, 1)`.
struct List<'a>(&'a [Number]);

impl fmt::Display for List<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            [one] => write!(f, "{one}"),
            many => write!(f, "{}", Vector(many)),
        }
    }
}

impl fmt::Display for Simulate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SIMULATE N {} P {} {} {}",
            List(&self.n),
            List(&self.p),
            if self.std { "STD" } else { "EPS" },
            List(&self.noise)
        )?;
        if let Some(r) = &self.runs {
            write!(f, " RUNS {r}")?;
        }
        if let Some(p) = &self.plot {
            write!(f, " {p}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Plot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PLOT ")?;
        match self.metric {
            Some(PlotMetric::Error) => f.write_str("ERROR ")?,
            Some(PlotMetric::Improvement) => f.write_str("IMPROVEMENT ")?,
            None => {}
        }
        write!(f, "{}", self.path)
    }
}

/// Prints `(1, 0, 1, 0)`.
struct Vector<'a>(&'a [Number]);

impl fmt::Display for Vector<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(")?;
        for (i, n) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{n}")?;
        }
        f.write_str(")")
    }
}

impl fmt::Display for Query {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Query::Vector(v) => write!(f, "{}", Vector(v)),
            Query::Linear(terms) => write!(f, "{}", Terms(terms)),
            Query::Sum(t) => write!(f, "{t}"),
        }
    }
}

/// Prints `2*COUNT WHERE a - COUNT WHERE b`; a leading minus is written apart (`- COUNT`) so
/// that it reads back as a sign, not as part of a coefficient.
pub struct Terms<'a>(pub &'a [CountTerm]);

impl fmt::Display for Terms<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.0.iter().enumerate() {
            match (i, t.minus) {
                (0, true) => f.write_str("- ")?,
                (0, false) => {}
                (_, true) => f.write_str(" - ")?,
                (_, false) => f.write_str(" + ")?,
            }
            if let Some(c) = &t.coefficient {
                write!(f, "{c}*")?;
            }
            write!(f, "COUNT WHERE {}", t.predicate)?;
        }
        Ok(())
    }
}

impl fmt::Display for Accuracy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Accuracy::Eps(e) => write!(f, "WITH EPS {e}"),
            Accuracy::Rho(r) => write!(f, "WITH RHO {r}"),
            Accuracy::Within {
                half_width,
                at,
                at_percent,
            } => write!(
                f,
                "WITHIN {half_width} AT {at}{}",
                if *at_percent { "%" } else { "" }
            ),
        }
    }
}

impl fmt::Display for CountQuery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", Terms(&self.terms), self.accuracy)?;
        if let Some(p) = &self.prior {
            write!(f, " {p}")?;
        }
        if let Some(m) = &self.mechanism {
            write!(f, " MECHANISM {m}")?;
        }
        if let Some(p) = &self.plot {
            write!(f, " {p}")?;
        }
        Ok(())
    }
}

impl fmt::Display for ChooseEps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pct = |b: bool| if b { "%" } else { "" };
        write!(
            f,
            "CHOOSE {} WITHIN {}{} AT {}{}",
            if self.rho { "RHO" } else { "EPS" },
            self.within,
            pct(self.within_percent),
            self.at,
            pct(self.at_percent)
        )?;
        if let Some(c) = &self.for_count {
            write!(f, " FOR {c}")?;
        }
        Ok(())
    }
}

impl Expr {
    fn precedence(&self) -> u8 {
        match self {
            Expr::Or(..) => 1,
            Expr::And(..) => 2,
            Expr::Not(..) => 3,
            _ => 4,
        }
    }

    fn fmt_operand(&self, f: &mut fmt::Formatter<'_>, min: u8) -> fmt::Result {
        if self.precedence() < min {
            write!(f, "({self})")
        } else {
            write!(f, "{self}")
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // Left-associative: the right operand of the same operator needs parentheses.
            Expr::Or(a, b) => {
                a.fmt_operand(f, 1)?;
                f.write_str(" OR ")?;
                b.fmt_operand(f, 2)
            }
            Expr::And(a, b) => {
                a.fmt_operand(f, 2)?;
                f.write_str(" AND ")?;
                b.fmt_operand(f, 3)
            }
            Expr::Not(a) => {
                f.write_str("NOT ")?;
                a.fmt_operand(f, 3)
            }
            Expr::Compare { column, op, value } => write!(f, "{column} {op} {value}"),
            Expr::In {
                column,
                negated,
                values,
            } => {
                write!(f, "{column} {}IN (", if *negated { "NOT " } else { "" })?;
                for (i, v) in values.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str(")")
            }
            Expr::Between {
                column,
                negated,
                low,
                high,
            } => write!(
                f,
                "{column} {}BETWEEN {low} AND {high}",
                if *negated { "NOT " } else { "" }
            ),
        }
    }
}

impl fmt::Display for CmpOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CmpOp::Eq => "=",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        })
    }
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Number(n) => write!(f, "{n}"),
            Literal::Text(t) => write!(f, "{t}"),
            Literal::Bool(b, _) => f.write_str(if *b { "TRUE" } else { "FALSE" }),
        }
    }
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "'{}'", self.value.replace('\'', "''"))
    }
}

impl fmt::Display for Ident {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if is_bare_name(&self.name) {
            f.write_str(&self.name)
        } else {
            write!(f, "\"{}\"", self.name.replace('"', "\"\""))
        }
    }
}

/// Whether `name` can be written without double quotes.
pub fn is_bare_name(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    first_ok
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !RESERVED.iter().any(|r| r.eq_ignore_ascii_case(name))
}
